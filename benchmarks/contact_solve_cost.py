"""What the implicit contact step's iterations cost: ``jit(vmap(sim.step))`` on Playground's
feet-only Go1 standing at its home pose (``benchmarks/sim_step.py``'s scene, zero torque, float32,
one XLA device) with ``SimOptions(contact_polish=...)`` and ``contact_iterations=...`` varied,
process CPU time per env-step, best of 5:

    python benchmarks/contact_solve_cost.py [--batch 256]
"""

import argparse
import os
import sys


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--scene", default="go1_feet")
    args = p.parse_args(argv)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import jax
    import jax.numpy as jnp
    import sim_step

    from jaxdyn import sim

    model, con, qpos, dt = sim_step.timing_scene(args.scene)
    B = args.batch
    q0 = jnp.tile(qpos, (B, 1))
    qd0 = jnp.zeros((B, model.nv), jnp.float32)
    print(f"jax {jax.__version__}, {args.scene}, {B} envs, float32; us CPU per env-step")
    for polish, iterations in ((1, 1), (0, 1), (1, 0), (0, 0)):
        opts = sim.SimOptions(contact_polish=polish, contact_iterations=iterations)
        tau = jnp.zeros(model.nv, jnp.float32)
        f = jax.jit(jax.vmap(lambda q, qd, o=opts: sim.step(model, q, qd, tau, dt, contact=con, options=o)))
        best = sim_step.cpu_time_per_call(f, (q0, qd0), calls=20)
        print(f"contact_polish={polish} contact_iterations={iterations}: {best / B * 1e6:.1f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
