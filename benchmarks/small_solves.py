"""The small dense solves of one sample under ``jit(vmap(...))``: ``jaxdyn.linalg`` (XLA loops)
against jaxlib's LAPACK kernels (``jax.scipy.linalg.cho_factor``/``cho_solve``,
``jnp.linalg.solve``), per batch size, for the ``n x n`` systems of the implicit contact step.

    python benchmarks/small_solves.py --n 18 --batches 64,128

Each entry is one jitted ``fori_loop`` of ``--steps`` solves whose matrix changes every step (so
no factorisation is hoisted out of the loop); the best CPU time (``time.process_time``) of
``--repeats`` runs per sample and solve is printed. float32. jaxlib's batched LAPACK kernels
split the batch over XLA's thread pool and block their thread, and two of them at once can
deadlock it (jaxdyn/linalg.py): the LAPACK rows run one kernel per program and stop at batch
256 unless ``--lapack-max`` says otherwise.
"""

from __future__ import annotations

import argparse
import os
import time


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=18)
    p.add_argument("--batches", default="64,128,1024")
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--lapack-max", type=int, default=256)
    args = p.parse_args(argv)
    os.environ["XLA_FLAGS"] = " ".join([os.environ.get("XLA_FLAGS", ""), "--xla_cpu_multi_thread_eigen=false"])
    import jax
    import jax.numpy as jnp
    import numpy as np

    jax.config.update("jax_cpu_enable_async_dispatch", False)
    from jaxdyn import linalg

    n, T = args.n, args.steps
    solvers = {
        "jaxdyn.linalg.spd_solve": (False, lambda A, b: linalg.spd_solve(A, b)),
        "LAPACK cho_factor + cho_solve": (
            True,
            lambda A, b: jax.scipy.linalg.cho_solve(jax.scipy.linalg.cho_factor(A), b),
        ),
        "jaxdyn.linalg.solve": (False, lambda A, b: linalg.solve(A, b)),
        "jaxdyn.linalg.solve(pivot=False)": (False, lambda A, b: linalg.solve(A, b, pivot=False)),
        "LAPACK jnp.linalg.solve": (True, lambda A, b: jnp.linalg.solve(A, b)),
    }
    print(f"jax {jax.__version__}, {jax.devices()[0].platform}, n = {n}, float32; us CPU per sample and solve")
    for B in map(int, args.batches.split(",")):
        rng = np.random.default_rng(0)
        X = rng.standard_normal((B, n, n)).astype(np.float32)
        A = jnp.asarray(X @ X.transpose(0, 2, 1) + n * np.eye(n, dtype=np.float32))
        b = jnp.asarray(rng.standard_normal((B, n)).astype(np.float32))
        for name, (lapack, f) in solvers.items():
            if lapack and B > args.lapack_max:
                print(f"B={B:5d}  {name:34s}      -  (skipped: above --lapack-max)")
                continue
            g = jax.vmap(f)

            def run(A, b, g=g):
                return jax.lax.fori_loop(0, T, lambda i, x: g(A + i * jnp.eye(n, dtype=A.dtype), x), b)

            c = jax.jit(run).lower(A, b).compile()
            jax.block_until_ready(c(A, b))
            best = float("inf")
            for _ in range(args.repeats):
                t0 = time.process_time()
                jax.block_until_ready(c(A, b))
                best = min(best, time.process_time() - t0)
            print(f"B={B:5d}  {name:34s} {best / (B * T) * 1e6:6.2f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
