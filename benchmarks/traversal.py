"""Compare the traversal strategies ("scan", "unroll") per robot: jit compile time,
batch-1 latency and batched throughput of aba (and rnea), float32, on the default device.

    python benchmarks/traversal.py [--robots panda talos chain32] [--batch 4096] [--out FILE.md]

Used to pick ``UNROLL_MAX_LINKS`` (jaxdyn/model.py): the "auto" default per model.
"""

from __future__ import annotations

import argparse
import datetime
import time

import jax
import jax.numpy as jnp
from harness import median_time

import jaxdyn
from jaxdyn import builders


def get_model(name, floating=None):
    if name.startswith("chain"):
        return builders.chain(int(name[5:]), dtype=jnp.float32)
    return jaxdyn.load_robot(name, floating_base=floating, dtype=jnp.float32)


def timeit(f, *args, repeats=20):
    return median_time(f, args, repeats)


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--robots", nargs="+", default=["ur5", "panda", "solo12", "talos", "chain32"])
    ap.add_argument("--algos", nargs="+", default=["aba", "rnea"])
    ap.add_argument("--batch", type=int, default=4096)
    ap.add_argument("--strategies", nargs="+", default=["scan", "unroll"])
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    dev = jax.devices()[0]
    lines = [
        f"# traversal strategies: {dev.platform} ({dev.device_kind}), jax {jax.__version__}, "
        f"{datetime.date.today()}, float32, batch {args.batch}",
        "",
        "| robot | algo | strategy | compile [s] | batch-1 [us] | per sample at batch [us] |",
        "|---|---|---|---:|---:|---:|",
    ]
    print("\n".join(lines))
    for name in args.robots:
        base = get_model(name)
        key = jax.random.PRNGKey(0)
        B = args.batch
        q = jax.vmap(lambda k: jaxdyn.random_configuration(base, k))(jax.random.split(key, B))
        qd = jax.random.normal(key, (B, base.nv), jnp.float32)
        u = jax.random.normal(jax.random.PRNGKey(1), (B, base.nv), jnp.float32)
        for algo in args.algos:
            fn = getattr(jaxdyn, algo)
            for strat in args.strategies:
                m = base
                with jaxdyn.executor(traversal=strat):  # part of jit's key: compiled and timed inside
                    one = jax.jit(fn)
                    t = time.perf_counter()
                    one.lower(m, q[0], qd[0], u[0]).compile()
                    comp = time.perf_counter() - t
                    lat = timeit(one, m, q[0], qd[0], u[0], repeats=200)
                    bat = jax.jit(jax.vmap(fn, in_axes=(None, 0, 0, 0)))
                    per = timeit(bat, m, q, qd, u, repeats=10) / B
                line = f"| {name} | {algo} | {strat} | {comp:.2f} | {lat * 1e6:.1f} | {per * 1e6:.2f} |"
                print(line, flush=True)
                lines.append(line)
    if args.out:
        with open(args.out, "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
