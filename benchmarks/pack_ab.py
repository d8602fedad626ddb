"""Scanned SoA kernels: per-leaf scan outputs against packed ones (``jaxdyn.tree.Packed``), same
process, alternating.

The scanned traversals stack each link step's outputs into one array on a GPU backend and not
on CPU (``pack_outputs`` in jaxdyn/kernels/soa.py); here the kernels' private ``_pack`` argument
forces each form. The reason is XLA GPU's kernel count per link step: deviceless H100
compile of talos (floating) at batch 131,072, summed over the sweeps' while-loop bodies:

- ABA 56 -> 20 kernels per link step;
- RNEA 18 -> 13;
- CRBA 30 -> 16 (11 with the subtree sum on one array, which every backend now does);

with XLA's temporaries unchanged or smaller (``benchmarks/gpu_aot.py``, ``--no-pack``). This
script times both forms in one process on the machine it runs on, counts the kernels per loop
body of each compiled program, and checks each against the generic ``vmap`` path (relative
error in float32).

    python benchmarks/pack_ab.py [--robots talos:fixed talos] [--algos aba,rnea,crba] [--batch 131072] [--out FILE.md]
"""

from __future__ import annotations

import argparse
import datetime
import functools
import platform

import jax
import jax.numpy as jnp
from gpu_aot import loop_kernels
from harness import _model, best_of_rounds

import jaxdyn
from jaxdyn import kernels

# the one-sample algorithms, which have no batching rule: ``vmap`` of ``jaxdyn.aba`` would run the
# batch kernel itself and the reference would not be independent
from jaxdyn.algorithms.aba import aba as aba_one
from jaxdyn.algorithms.crba import crba as crba_one
from jaxdyn.algorithms.rnea import rnea as rnea_one


def cases(m, algo, B, traversal):
    """(kernel, args, generic reference function) of one algorithm."""
    q = jax.vmap(lambda k: jaxdyn.random_configuration(m, k))(jax.random.split(jax.random.PRNGKey(0), B))
    qd = jax.random.normal(jax.random.PRNGKey(1), (B, m.nv), m.dtype)
    x = jax.random.normal(jax.random.PRNGKey(2), (B, m.nv), m.dtype)
    if algo == "crba":
        return (
            functools.partial(kernels.crba_batch, traversal=traversal),
            (m, q),
            jax.vmap(crba_one, in_axes=(None, 0)),
        )
    kernel = {"aba": kernels.aba_batch, "rnea": kernels.rnea_batch}[algo]
    generic = {"aba": aba_one, "rnea": rnea_one}[algo]
    return (functools.partial(kernel, traversal=traversal), (m, q, qd, x), jax.vmap(generic, in_axes=(None, 0, 0, 0)))


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--robots", nargs="+", default=["talos:fixed", "talos"])
    ap.add_argument("--algos", default="aba,rnea,crba")
    ap.add_argument("--batch", type=int, default=4096)
    ap.add_argument("--traversal", default="scan")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    dev = jax.devices()[0]
    lines = [
        f"# Scanned SoA kernels: per-leaf against packed scan outputs ({datetime.date.today()})",
        "",
        f"device: {dev.platform}:{dev.device_kind}, cpu: {platform.machine()}, jax {jax.__version__}, "
        f"float32, batch {a.batch}, traversal {a.traversal}; ms per batch, median of 11 calls, best of "
        f"{a.rounds} alternating rounds; kernels: XLA instructions per while-loop body (one link step "
        "of each sweep); rel. err: ||out - generic|| / ||generic|| over the batch",
        "",
        "| robot | algo | per-leaf ms | packed ms | speed-up | kernels per-leaf / packed | "
        "rel. err per-leaf | rel. err packed |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name in a.robots:
        m = _model(name, jnp.float32)  # the harness's robot names: robot[:fixed|floating], chainN
        for algo in a.algos.split(","):
            f, args, generic = cases(m, algo, a.batch, a.traversal)
            ref = jax.jit(generic)(*args)
            cs, err, kern = {}, {}, {}
            for pack in (False, True):
                cs[pack] = jax.jit(functools.partial(f, _pack=pack)).lower(*args).compile()
                kern[pack] = sum(loop_kernels(cs[pack].as_text()))
                out = cs[pack](*args)
                err[pack] = float(jnp.linalg.norm(out - ref) / jnp.linalg.norm(ref))
            best = best_of_rounds(cs, args, a.rounds)
            row = (
                f"| {name} | {algo} | {best[False] * 1e3:.2f} | {best[True] * 1e3:.2f} | "
                f"{best[False] / best[True]:.2f} | {kern[False]} / {kern[True]} | "
                f"{err[False]:.1e} | {err[True]:.1e} |"
            )
            print(row, flush=True)
            lines.append(row)
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        with open(a.out, "w") as fh:
            fh.write(text)


if __name__ == "__main__":
    main()
