"""Same-process A/B of the two batch programs the batching rule chooses between.

For each robot and algorithm: the struct-of-arrays kernel (``jaxdyn.kernels.<algo>_batch`` with the
model's own traversal, what ``jit(vmap(jaxdyn.<algo>))`` runs when the rule picks the kernel) and
``vmap`` of the one-sample algorithm (``jaxdyn.algorithms.<algo>``, what it runs otherwise), timed in
alternating rounds (``harness.best_of_rounds``: this VM's timings drift between processes and
within a run, so only an alternating comparison in one process is read as a ratio). The table
says which one the planner picks today (``jaxdyn.planner.batch_kernel`` at the batch size run).

Usage: ``python benchmarks/rule_ab.py --robots panda,solo12,talos:floating,benchmarks/models/ragdoll_ball.xml``
(harness names, or MJCF files).
"""

from __future__ import annotations

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--robots", default="panda,solo12,talos:floating")
    p.add_argument("--algos", default="aba,rnea,crba")
    p.add_argument("--batch", type=int, default=4096)
    p.add_argument("--dtype", default="float32", choices=("float32", "float64"))
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--out", default=None, help="markdown file for the table")
    args = p.parse_args(argv)

    import jax
    from harness import _inputs, _model, best_of_rounds, emit

    import jaxdyn
    from jaxdyn import algorithms, kernels, planner
    from jaxdyn._x64 import x64_context

    lines = [
        "| robot | nv | algo | kernel samples/s | vmap(one-sample) samples/s | kernel / vmap | rule picks |",
        "|---|---|---|---|---|---|---|",
    ]
    with x64_context(args.dtype == "float64"):
        dtype = getattr(jax.numpy, args.dtype)
        for robot in args.robots.split(","):
            if robot.endswith(".xml"):
                model, name = jaxdyn.load_mjcf(robot, dtype=dtype), os.path.basename(robot)[:-4]
            else:
                model, name = _model(robot, dtype), robot
            q, qd, x = _inputs(model, args.batch)
            for algo in args.algos.split(","):
                axes = (None, 0) if algo == "crba" else (None, 0, 0, 0)
                ins = (model, q) if algo == "crba" else (model, q, qd, x)
                progs = {
                    "kernel": jax.jit(getattr(kernels, f"{algo}_batch")),
                    "vmap": jax.jit(jax.vmap(getattr(algorithms, algo).__dict__[algo], in_axes=axes)),
                }
                best = best_of_rounds(progs, ins, args.rounds, args.repeats)
                picks = "kernel" if planner.batch_kernel(model, f"{algo}_batch", args.batch) else "vmap"
                k, v = args.batch / best["kernel"], args.batch / best["vmap"]
                lines.append(f"| {name} | {model.nv} | {algo} | {k:.3g} | {v:.3g} | {k / v:.2f} | {picks} |")
                print(lines[-1], flush=True)
    timing = f"best of {args.rounds} alternating rounds of {args.repeats} calls"
    emit(lines, args.out, dtype=args.dtype, batch=args.batch, timing=timing)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
