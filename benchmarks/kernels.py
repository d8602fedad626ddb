"""SoA batched ABA (jaxdyn.kernels.aba_batch, per traversal) vs generic jax.vmap(jaxdyn.aba) vs Pinocchio, CPU.

For each robot: compile time, batch-1 latency and per-sample time at large batches (medians of
repeated timings; the machine may be shared, so read ratios more than absolute values).
Pinocchio's time per call (pin.aba from a Python loop) comes from ``--pin-python`` (default: this interpreter) or
``--pin-python`` when that interpreter has ``pinocchio``. Writes a markdown table to
benchmarks/results/kernels-cpu.md (``--out``).

    python benchmarks/kernels.py --robots ur5,panda,solo12 --batches 1,4096,65536
"""

from __future__ import annotations

import argparse
import datetime
import functools
import json
import os
import subprocess
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
from harness import _inputs, _model

import jaxdyn
from jaxdyn import kernels


def _time(c, args, repeats):
    jax.block_until_ready(c(*args))
    ts = []
    for _ in range(repeats):
        t = time.perf_counter()
        jax.block_until_ready(c(*args))
        ts.append(time.perf_counter() - t)
    return float(np.median(ts))


def _pin_times(robots, python):
    if not python or not os.path.exists(python):
        return {}
    code = (
        "import json,sys; from harness import time_pinocchio; "
        "print(json.dumps({r: time_pinocchio(r, 'aba') for r in sys.argv[1:]}))"
    )
    try:
        out = subprocess.run(
            [python, "-c", code, *robots],
            capture_output=True,
            text=True,
            timeout=600,
            cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
        )
        return json.loads(out.stdout.strip().splitlines()[-1])
    except Exception as exc:  # noqa: BLE001 - Pinocchio is optional
        print(f"Pinocchio timing skipped: {exc}", file=sys.stderr)
        return {}


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--robots", default="ur5,panda,solo12")
    p.add_argument("--batches", default="1,4096,65536")
    p.add_argument(
        "--variants",
        default="generic,soa",
        help="generic (jit(vmap(aba))), soa (kernels.aba_batch, its 'auto' traversal) or soa-unroll / soa-scan",
    )
    p.add_argument("--repeats", type=int, default=15)
    p.add_argument("--pin-python", default=sys.executable)
    p.add_argument("--out", default=os.path.join("benchmarks", "results", "kernels-cpu.md"))
    args = p.parse_args(argv)
    robots = args.robots.split(",")
    pin = _pin_times(robots, args.pin_python)
    rows = []
    print("| robot | nv | variant | batch | compile s | us/batch | us/sample | Pinocchio us/call |")
    print("|---|---|---|---|---|---|---|---|")
    for robot in robots:
        model = _model(robot, jnp.float32)
        for variant in args.variants.split(","):
            for B in map(int, args.batches.split(",")):
                q, qd, tau = _inputs(model, B)
                if variant == "generic":
                    f = jax.jit(jax.vmap(jaxdyn.aba, in_axes=(None, 0, 0, 0)))
                else:
                    trav = variant.partition("-")[2] or None
                    f = jax.jit(functools.partial(kernels.aba_batch, traversal=trav))
                t0 = time.perf_counter()
                c = f.lower(model, q, qd, tau).compile()
                comp = time.perf_counter() - t0
                reps = args.repeats if B < 65536 else max(3, args.repeats // 3)
                t = _time(c, (model, q, qd, tau), reps)
                ps = pin.get(robot)
                row = {
                    "robot": robot,
                    "nv": model.nv,
                    "variant": variant,
                    "batch": B,
                    "compile_s": comp,
                    "batch_s": t,
                    "sample_s": t / B,
                    "pin_s": ps,
                }
                rows.append(row)
                print(
                    f"| {robot} | {model.nv} | {variant} | {B} | {comp:.1f} | {t * 1e6:.1f} | {t / B * 1e6:.2f} | "
                    f"{ps * 1e6:.2f} |"
                    if ps
                    else f"| {robot} | {model.nv} | {variant} | {B} | {comp:.1f} | "
                    f"{t * 1e6:.1f} | {t / B * 1e6:.2f} | n/a |",
                    flush=True,
                )
    if args.out:
        os.makedirs(os.path.dirname(args.out), exist_ok=True)
        with open(args.out, "w") as fh:
            fh.write(f"# SoA batched ABA vs generic vmap(aba) vs Pinocchio, CPU, float32, {datetime.date.today()}\n\n")
            fh.write(
                f"jax {jax.__version__}, {os.cpu_count()} CPU cores shared with other jobs (medians of "
                f"{args.repeats} timings; read ratios). `soa` = `jax.jit(jaxdyn.kernels.aba_batch)`; "
                "`generic` = `jax.jit(jax.vmap(jaxdyn.aba))`; "
                "Pinocchio 4.1.0 `pin.aba` per call from a Python loop (`harness.time_pinocchio`).\n\n"
            )
            fh.write(
                "| robot | nv | variant | batch | compile s | us/batch | us/sample | Pinocchio us/call |\n|---|---|---|---|---|---|---|---|\n"
            )
            for r in rows:
                ps = f"{r['pin_s'] * 1e6:.2f}" if r["pin_s"] else "n/a"
                fh.write(
                    f"| {r['robot']} | {r['nv']} | {r['variant']} | {r['batch']} | {r['compile_s']:.1f} | "
                    f"{r['batch_s'] * 1e6:.1f} | {r['sample_s'] * 1e6:.2f} | {ps} |\n"
                )
            fh.write("\nReproduce: `python benchmarks/kernels.py " + " ".join(argv or sys.argv[1:]) + "`\n")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
