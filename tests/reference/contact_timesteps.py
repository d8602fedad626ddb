"""Which integrators hold the Solo-12 quadruped (tests/data/mujoco/contact/solo12.xml) on the
ground at the time steps RL users run: prints the table of docs/contact.md ("Time steps").

    python tests/reference/contact_timesteps.py            # jaxdyn only
    python tests/reference/contact_timesteps.py --mujoco   # also MuJoCo's Euler on the same model

Scenarios, each 2 s of simulated time with the PD controller of
tests/reference/generate_mujoco_contact.py evaluated at every step: ``stand`` (base 1 cm above
standing height, as in tests/test_contact_mujoco.py) and ``drop`` (0.1 m above). Columns: the
run stayed finite; it stands (final base height within 2 cm of the 1 ms ``"implicit_euler"``
run); final base height; deepest foot penetration; largest total normal force over the weight.
"""

from __future__ import annotations

import os
import sys

import jax
import jax.numpy as jnp
import numpy as np

import jaxdyn
from jaxdyn import contact as C
from jaxdyn import sim

jax.config.update("jax_enable_x64", True)

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "mujoco", "contact")
SECONDS = 2.0
STEPS = (1e-3, 2e-3, 5e-3)
INTEGRATORS = ("implicit_euler", "semi_implicit_euler", "euler", "rk4")


def main():
    ref = np.load(os.path.join(HERE, "reference.npz"))
    model = jaxdyn.load_mjcf(os.path.join(HERE, "solo12.xml"))
    kp, kd, q_ref = float(ref["kp"]), float(ref["kd"]), jnp.asarray(ref["q_stand"])
    weight = float(ref["solo12_weight"])
    q_stand = jnp.asarray(ref["solo12_qpos0"])
    starts = {"stand": q_stand, "drop": q_stand.at[2].add(0.09)}

    def pd(q, qd, t):
        return jnp.concatenate([jnp.zeros(6), kp * (q_ref - q[7:]) - kd * qd[6:]])

    def measure(integrator, dt, q0, eps):
        ct = C.Contact(C.Ground.from_model(model), C.ContactParams(friction_velocity=eps))
        steps = int(round(SECONDS / dt))

        @jax.jit
        def run(q0):
            tr = sim.rollout(model, q0, jnp.zeros(model.nv), pd, dt, steps=steps, integrator=integrator, contact=ct)
            f = jax.vmap(lambda q, qd: C.total_force(model, q, qd, ct)[2])(tr.q, tr.qd)
            d = jax.vmap(lambda q: jnp.max(C.contact_points(model, q, jnp.zeros(model.nv), ct.ground).depth))(tr.q)
            return tr.q[-1, 2], jnp.max(d), jnp.max(f), tr.nonfinite_step

        return [float(x) for x in run(q0)]

    rows = []
    for scen, q0 in starts.items():
        z_ref = measure("implicit_euler", 1e-3, q0, 0.02)[0]
        for dt in STEPS:
            for integrator in INTEGRATORS:
                for eps in (0.02,) + ((0.1,) if dt == 5e-3 else ()):
                    z, d, f, bad = measure(integrator, dt, q0, eps)
                    finite = bad < 0
                    stands = finite and abs(z - z_ref) < 0.02
                    rows.append(
                        f"| {scen} | {dt * 1e3:g} | {integrator} | {eps:g} | {'yes' if finite else 'no'} | "
                        f"{'yes' if stands else 'no'} | "
                        + (f"{z * 1e3:.1f} | {d * 1e3:.2f} | {f / weight:.1f} |" if finite else "- | - | - |")
                    )
                    print(rows[-1], flush=True)
    if "--mujoco" in sys.argv:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import generate_mujoco_contact as g

        xml = open(os.path.join(HERE, "solo12.xml")).read()
        for scen, q0 in starts.items():
            for dt in STEPS:
                g.DT = dt  # the step of generate_mujoco_contact.simulate
                _, _, qs, fz, pen = g.simulate(
                    xml.replace('timestep="0.001"', f'timestep="{dt}"'), np.asarray(q0), SECONDS, g.pd
                )
                finite = np.all(np.isfinite(qs))
                print(
                    f"| {scen} | {dt * 1e3:g} | MuJoCo Euler | - | {'yes' if finite else 'no'} | - | "
                    f"{qs[-1, 2] * 1e3:.1f} | {pen.max() * 1e3:.2f} | {fz.max() / weight:.1f} |"
                )


if __name__ == "__main__":
    main()
