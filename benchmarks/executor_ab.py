"""Two ``jaxdyn.executor`` overrides against each other on ``benchmarks/sim_step.py``'s contact
step, in one process: the scene's ``sim.rollout`` (zero torque, float32, one XLA device) under
``jax.jit(jax.vmap(...))`` compiled once under each override, the two programs alternated,
process CPU time per env-step (best and median of the rounds), compile times, and the largest
difference of the final configurations.

    python benchmarks/executor_ab.py --scene go1_full --batch 64 --a skip=select --b skip=branch
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time


def _override(text: str) -> dict:
    """``"skip=select,dense=library"`` -> keyword arguments of ``jaxdyn.executor``."""
    return dict(kv.split("=", 1) for kv in text.split(",") if kv)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--scene", default="go1_full")
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--a", default="", help="the first override, e.g. skip=select ('' for none)")
    p.add_argument("--b", default="", help="the second override")
    args = p.parse_args(argv)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import jax
    import jax.numpy as jnp
    import numpy as np
    import sim_step

    import jaxdyn
    from jaxdyn import sim

    model, con, qpos, dt = sim_step.timing_scene(args.scene)
    B, T = args.batch, args.steps
    q0 = jnp.tile(qpos, (B, 1))

    def run(q):
        tau = jnp.zeros((T, model.nv), jnp.float32)
        return sim.rollout(model, q, jnp.zeros(model.nv, jnp.float32), tau, dt, contact=con).q[-1]

    programs, finals = {}, {}
    for name in (args.a, args.b):
        with jaxdyn.executor(**_override(name)):
            t = time.perf_counter()
            programs[name] = jax.jit(jax.vmap(run)).lower(q0).compile()
            compile_s = time.perf_counter() - t
        finals[name] = np.asarray(jax.block_until_ready(programs[name](q0)))
        print(f"{name or 'planner'}: compile {compile_s:.0f} s", flush=True)
    times: dict[str, list[float]] = {n: [] for n in programs}
    for r in range(args.rounds):
        for name in programs if r % 2 == 0 else reversed(list(programs)):
            c = time.process_time()
            jax.block_until_ready(programs[name](q0))
            times[name].append((time.process_time() - c) / (B * T) * 1e6)
    print(f"jax {jax.__version__}, {args.scene}, {B} envs x {T} steps, float32, one device; us CPU per env-step")
    for name, ts in times.items():
        print(f"{name or 'planner':24s} best {min(ts):7.1f}  median {statistics.median(ts):7.1f}")
    diff = float(np.abs(finals[args.a] - finals[args.b]).max())
    print(f"largest difference of the final configurations: {diff:.2e}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
