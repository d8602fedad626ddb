"""CPU time per env-step of ``benchmarks/sim_step.py``'s jaxdyn row (``jit(vmap(sim.rollout))``,
every default, zero torque, float32, one XLA device), for comparing two source trees on a shared machine:
``python benchmarks/step_cpu_time.py --root <tree> --scene go1_full``, run alternately for the
trees. Process CPU time, unlike wall time, is barely moved by other jobs on the cores; the
final base height is printed to check that the trees step alike."""

import argparse
import os
import sys
import time


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    p.add_argument("--scene", default="go1_full")
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--steps", type=int, default=50)
    args = p.parse_args(argv)
    sys.path.insert(0, os.path.abspath(args.root))
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import jax
    import jax.numpy as jnp
    import sim_step

    import jaxdyn
    from jaxdyn import sim

    model, con, qpos, dt = sim_step.timing_scene(args.scene)
    B, T = args.batch, args.steps

    def run(q0):
        tau = jnp.zeros((T, model.nv), jnp.float32)
        return sim.rollout(model, q0, jnp.zeros(model.nv, jnp.float32), tau, dt, contact=con).q[-1]

    q0 = jnp.tile(qpos, (B, 1))
    t = time.perf_counter()
    f = jax.jit(jax.vmap(run)).lower(q0).compile()
    compile_s = time.perf_counter() - t
    out = jax.block_until_ready(f(q0))
    best = float("inf")
    for _ in range(3):
        c = time.process_time()
        jax.block_until_ready(f(q0))
        best = min(best, time.process_time() - c)
    print(
        f"{jaxdyn.__file__}: {args.scene}, {B} envs: {best / (B * T) * 1e6:.1f} us CPU per env-step, "
        f"compile {compile_s:.0f} s, base z {float(out[0, 2]):.4f}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
