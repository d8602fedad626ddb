"""SoA batch kernels under a plain ``jax.jit`` against the same program with XLA CPU instruction
fusion switched off (``compiler_options={"xla_disable_hlo_passes": "fusion"}``), in one process.

For each robot and kernel both programs are compiled on the same inputs (compile time is
``lower(...).compile()``), then called alternately, the order swapped every repeat (A B, B A,
...) so that a drift of the shared machine's speed falls on both; each time is the median of
``--repeats`` calls. Outputs are compared (relative difference over the batch).

    python benchmarks/fusion_ab.py [--robots panda solo12 talos:floating] [--algos aba,rnea,crba,aba_jacobian]
        [--batch 4096] [--repeats 15] [--traversal T] [--plain-traversal T] [--out FILE.md]
"""

from __future__ import annotations

import argparse
import datetime
import functools
import platform
import statistics
import time

import jax
import jax.numpy as jnp
from harness import _inputs, _model

from jaxdyn import kernels

FUSION_OFF = {"xla_disable_hlo_passes": "fusion"}


def _args(algo, m, q, qd, x):
    return (m, q) if algo == "crba" else (m, q, qd, x)


def _compile(fn, args, **jit_kwargs):
    t0 = time.perf_counter()
    c = jax.jit(fn, **jit_kwargs).lower(*args).compile()
    return c, time.perf_counter() - t0


def _call(c, args):
    t0 = time.perf_counter()
    jax.block_until_ready(c(*args))
    return time.perf_counter() - t0


def _rel(a, b):
    a, b = jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)
    num = sum(float(jnp.sum((x - y) ** 2)) for x, y in zip(a, b))
    den = sum(float(jnp.sum(y**2)) for y in b)
    return (num / den) ** 0.5


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--robots", nargs="+", default=["panda", "solo12", "talos:floating"])
    ap.add_argument("--algos", default="aba,rnea,crba,aba_jacobian")
    ap.add_argument("--batch", type=int, default=4096)
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--traversal", default=None, help="traversal of both programs (default: the kernels' 'auto')")
    ap.add_argument("--plain-traversal", default=None, help="traversal of the plain-jit program only")
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    dev = jax.devices()[0]
    lines = [
        f"# SoA kernels: plain jax.jit against XLA CPU fusion off ({datetime.date.today()})",
        "",
        f"device: {dev.platform}:{dev.device_kind}, cpu: {platform.machine()}, jax {jax.__version__}, "
        f"float32, batch {a.batch}; ms per batch, median of {a.repeats} calls each, the two programs "
        "called alternately (order swapped every repeat) in one process; compile s: lower + compile; "
        "speed-up: fusion-off ms / plain ms (> 1: plain jit faster); rel. diff: "
        "||plain - fusion off|| / ||fusion off|| over the batch",
        "",
        "| robot | kernel | plain ms | fusion off ms | speed-up | plain compile s | fusion off compile s | rel. diff |",
        "|---|---|---|---|---|---|---|---|",
    ]
    print("\n".join(lines), flush=True)
    for name in a.robots:
        m = _model(name, jnp.float32)
        q, qd, x = _inputs(m, a.batch)
        for algo in a.algos.split(","):
            kernel = getattr(kernels, f"{algo}_batch")
            fn = functools.partial(kernel, traversal=a.traversal)
            fa = functools.partial(kernel, traversal=a.plain_traversal or a.traversal)
            args = _args(algo, m, q, qd, x)
            cb, sb = _compile(fn, args, compiler_options=FUSION_OFF)
            print(f"{name} {algo}_batch: fusion off compiled in {sb:.1f} s", flush=True)
            ca, sa = _compile(fa, args)
            rel = _rel(ca(*args), cb(*args))
            ta, tb = [], []
            for r in range(a.repeats):
                if r % 2:
                    tb.append(_call(cb, args))
                    ta.append(_call(ca, args))
                else:
                    ta.append(_call(ca, args))
                    tb.append(_call(cb, args))
            ma, mb = statistics.median(ta), statistics.median(tb)
            label = f"{algo}_batch" + (f" ({a.plain_traversal} / {a.traversal or 'auto'})" if a.plain_traversal else "")
            row = (
                f"| {name} | {label} | {1e3 * ma:.2f} | {1e3 * mb:.2f} | {mb / ma:.2f} | "
                f"{sa:.1f} | {sb:.1f} | {rel:.1e} |"
            )
            lines.append(row)
            print(row, flush=True)
    if a.out:
        with open(a.out, "w") as fh:
            fh.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
