"""Where the implicit contact step's time goes: each part of ``jit(vmap(sim.step))`` compiled
and timed alone under ``jit(vmap(...))`` at the scene's start configuration (zero velocity,
zero torque, float32, one XLA device), process CPU time per env, best of 5:

    python benchmarks/step_parts.py --scene go1_full --batch 64

Parts: forward kinematics; the contacts in joint space (broad and narrow phase, the budget's
rows, their Jacobians); the mass matrix of the damped model; the free torque (one RNEA); one
Newton matrix (``M_d - h D_bar``); one SPD solve of it; one contact-space slope (the line
search's trial); the polish step's velocity derivative; and the whole step. A part alone costs
more than inside the fused step, so the figures bound the parts and do not add up to the step.
"""

import argparse
import os
import sys
import time


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--scene", default="go1_full")
    p.add_argument("--batch", type=int, default=64)
    args = p.parse_args(argv)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import jax
    import jax.numpy as jnp
    import sim_step

    from jaxdyn import linalg, sim
    from jaxdyn.algorithms.kinematics import kinematics
    from jaxdyn.sim import implicit
    from jaxdyn.sim.dynamics import mass_matrix
    from jaxdyn.sim.integrators import implicit_damping_model

    model, con, qpos, dt = sim_step.timing_scene(args.scene)
    B = args.batch
    opts = sim.SimOptions()
    md = implicit_damping_model(model, dt, opts, None)
    q0 = jnp.tile(qpos, (B, 1))
    qd0 = jnp.zeros((B, model.nv), jnp.float32)
    tau = jnp.zeros(model.nv, jnp.float32)

    def js_of(q, qd):
        kin = kinematics(model, q)
        return con.joint_space(model, q, None, 0.0, dt, qd=qd, step=dt, kinematics=kin)

    def newton_matrix(q, qd):
        js = js_of(q, qd)
        return mass_matrix(md, q, opts) - dt * js.newton_matrix(qd, js.elastic_normal_forces())

    def solve(q, qd):
        N = newton_matrix(q, qd)
        return linalg.spd_solve(N, qd)

    def slope(q, qd):
        js = js_of(q, qd)
        x, dx = js.contact_velocities(qd), js.contact_velocities(qd + 1.0)
        fb = js.elastic_normal_forces()
        return jax.vmap(lambda t: js.power(jax.tree_util.tree_map(lambda a, b: a + t * b, x, dx), dx, fb))(
            jnp.linspace(0.0, 1.0, 8, dtype=qd.dtype)
        )

    def velocity_derivative(q, qd):
        return js_of(q, qd).velocity_derivative(qd)

    parts = {
        "kinematics": lambda q, qd: kinematics(model, q),
        "contacts in joint space": lambda q, qd: js_of(q, qd).G,
        "mass matrix (damped)": lambda q, qd: mass_matrix(md, q, opts),
        "free torque (RNEA)": lambda q, qd: implicit._free_torque(md, q, qd, tau, None, opts),
        "contacts + Newton matrix": newton_matrix,
        "contacts + Newton matrix + SPD solve": solve,
        "contacts + 8 slope trials": slope,
        "contacts + velocity derivative": velocity_derivative,
        "whole step": lambda q, qd: sim.step(model, q, qd, tau, dt, contact=con)[1],
        "whole step, no polish": lambda q, qd: sim.step(
            model, q, qd, tau, dt, contact=con, options=sim.SimOptions(contact_polish=0)
        )[1],
        "step without contact": lambda q, qd: sim.step(model, q, qd, tau, dt)[1],
    }
    print(f"jax {jax.__version__}, {args.scene} (nv {model.nv}), {B} envs, float32; us CPU per env")
    for name, fn in parts.items():
        f = jax.jit(jax.vmap(fn))
        t = time.perf_counter()
        jax.block_until_ready(f(q0, qd0))
        c_s = time.perf_counter() - t
        best = sim_step.cpu_time_per_call(f, (q0, qd0))
        print(f"{name:40s} {best / B * 1e6:8.1f}   (compile {c_s:.0f} s)", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
