"""What friction that holds costs per step (docs/contact.md, "Friction that holds").

Times ``jit(vmap(rollout))`` of the default ``"implicit_euler"`` step, in the same process:

* ``arm``: the Panda arm (``jaxdyn.load_robot("panda")``) holding a pose under gravity with no
  command, with the joints' Coulomb friction (``--frictionloss`` N m on every joint, solved
  implicitly in velocity), against the same model with zero friction and with
  ``SimOptions(implicit_friction=False)`` (the former explicit ``tanh``);
* ``go1``: Playground's feet-only Go1 (``benchmarks/sim_step.py``'s scene and servos) with the
  default ``Contact()`` (``friction_velocity`` 1e-3 m/s) and 1e-4 m/s against ``friction_velocity=2e-2``, the
  former default: the same operations, so the difference is noise unless the solve changes.

    python benchmarks/friction_cost.py [--envs 256] [--steps 100] [--repeats 5] [--float64]

Prints microseconds per env-step (best of ``--repeats``), the compile time and the ratio.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np


def _time(run, args, repeats):
    t = time.perf_counter()
    jax.block_until_ready(run(*args))
    compile_s = time.perf_counter() - t
    best = np.inf
    for _ in range(repeats):
        t = time.perf_counter()
        jax.block_until_ready(run(*args))
        best = min(best, time.perf_counter() - t)
    return best, compile_s


def arm_rows(a):
    import jaxdyn
    from jaxdyn import sim

    base = jaxdyn.load_robot("panda", dtype=a.dtype)
    q0 = 0.1 * jax.random.normal(jax.random.PRNGKey(0), (a.envs, base.nq), a.dtype)
    rows = []
    fl = f"frictionloss {a.frictionloss:g} N m"
    cases = (
        ("no friction", 0.0, sim.SimOptions()),
        (f"{fl}, implicit (default)", a.frictionloss, sim.SimOptions()),
        (f"{fl}, explicit (implicit_friction=False)", a.frictionloss, sim.SimOptions(implicit_friction=False)),
    )
    for label, F, options in cases:
        model = base.replace(friction=jnp.full(base.nv, F, a.dtype))

        @jax.jit
        def run(q0, model=model, options=options):
            z = jnp.zeros((a.steps, model.nv), a.dtype)
            return jax.vmap(
                lambda q: sim.rollout(model, q, jnp.zeros(model.nv, a.dtype), z, 2e-3, options=options).q[-1]
            )(q0)

        best, c = _time(run, (q0,), a.repeats)
        rows.append((f"panda, {label}", best / (a.envs * a.steps) * 1e6, c))
    return rows


def go1_rows(a):
    import tempfile

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import sim_step

    import jaxdyn
    from jaxdyn import contact as C
    from jaxdyn import sim

    path, mm, qpos, ctrl, _ = sim_step._setup("go1_feet", tempfile.mkdtemp())
    model = jaxdyn.load_mjcf(path).astype(a.dtype)
    dt, n = float(mm.opt.timestep), model.nv - 6
    lim = jnp.asarray(np.abs(mm.actuator_forcerange[:, 1]), a.dtype)
    target = jnp.asarray(ctrl, a.dtype)

    def policy(q, qd, t):  # sim_step.py's servos: kp 35 towards the home pose
        u = jnp.clip(35.0 * (target - q[7 : 7 + n]), -lim, lim)
        return jnp.concatenate([jnp.zeros(6, a.dtype), u])

    q0 = jnp.tile(jnp.asarray(qpos, a.dtype), (a.envs, 1))
    rows = []
    for eps in (1e-3, 1e-4, 2e-2):
        con = C.Contact(C.Ground.from_model(model), C.ContactParams(friction_velocity=eps))

        @jax.jit
        def run(q0, con=con):
            return jax.vmap(
                lambda q: sim.rollout(model, q, jnp.zeros(model.nv, a.dtype), policy, dt, steps=a.steps, contact=con).q[
                    -1
                ]
            )(q0)

        best, c = _time(run, (q0,), a.repeats)
        rows.append((f"go1 feet, friction_velocity {eps:g} m/s", best / (a.envs * a.steps) * 1e6, c))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--envs", type=int, default=256)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--frictionloss", type=float, default=0.5)
    ap.add_argument("--float64", action="store_true")
    ap.add_argument("--scenes", default="arm,go1")
    a = ap.parse_args()
    if a.float64:
        jax.config.update("jax_enable_x64", True)
    a.dtype = jnp.float64 if a.float64 else jnp.float32
    rows = []
    if "arm" in a.scenes:
        rows += arm_rows(a)
    if "go1" in a.scenes:
        rows += go1_rows(a)
    print(f"jax {jax.__version__}, {jax.devices()[0].device_kind}, {os.cpu_count()} cores, {np.dtype(a.dtype).name}")
    print("| scene | us per env-step | compile s |\n|---|---|---|")
    for name, us, c in rows:
        print(f"| {name} | {us:.2f} | {c:.1f} |")


if __name__ == "__main__":
    main()
