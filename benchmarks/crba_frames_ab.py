"""The unrolled fused (Pallas) CRBA in its two frames, same process, alternating.

The unrolled CRBA (:func:`jaxdyn.kernels.soa_unrolled.crba_unroll`) runs the link steps of
``jaxdyn.algorithms.crba`` (Rodriguez86 (7.7)-(7.10)) with either of two sets of inputs.
``jaxdyn.kernels.pallas.crba_pallas`` (traversal ``"unroll"``) gives them in body frames
(composite inertias and forces moved up the tree, Featherstone08 table 6.2), where the model's
numbers are compile-time constants: a joint's motion subspace is a literal unit axis and its
placement mostly literal, so the structural zeros cost nothing. Every other CRBA executor works
in a common frame (``crba.world_step``); this script builds the same unrolled kernel with
common-frame inputs and times both, with the generic ``vmap`` of the one-sample CRBA as the
correctness reference. A deviceless H100 compile gave the common-frame form 1.6-2.8x the
floating-point instructions and up to 128 registers (``results/gpu-aot-h100-crba-frames.md``);
whether that costs time on a GPU is what this measures.

    python benchmarks/crba_frames_ab.py [--robots ur5 panda solo12] [--batch 131072] [--out FILE.md]
    python benchmarks/crba_frames_ab.py --interpret --batch 16 --rounds 0   # correctness only, any CPU
"""

from __future__ import annotations

import argparse
import datetime
import functools
import platform

import jax
import jax.numpy as jnp
from harness import _model, best_of_rounds

import jaxdyn
from jaxdyn.algorithms.crba import crba as crba_one
from jaxdyn.kernels import pallas, soa_unrolled


def common_frame_kernel(model, block=128, interpret=None, num_warps=None):
    """``f(q (B, nq)) -> M (B, nv, nv)``: the unrolled CRBA with common-frame inputs
    (:func:`jaxdyn.kernels.soa_unrolled.crba_unroll`, ``frames="common"``) as one Pallas kernel,
    built as :func:`jaxdyn.kernels.pallas.crba_pallas` builds the body-frame one."""
    rows = functools.partial(soa_unrolled.crba_unroll, frames="common")
    return pallas.mass_matrix_kernel(model, rows, block, interpret, num_warps)


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--robots", nargs="+", default=["ur5", "panda", "solo12"])
    ap.add_argument("--batch", type=int, default=131072)
    ap.add_argument("--block", type=int, default=128)
    ap.add_argument("--rounds", type=int, default=3, help="timing rounds (0: correctness only)")
    ap.add_argument("--interpret", action="store_true", help="Pallas interpret mode (any backend)")
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    dev = jax.devices()[0]
    interpret = True if a.interpret else None
    lines = [
        f"# The unrolled fused CRBA: body frame against common frame ({datetime.date.today()})",
        "",
        f"device: {dev.platform}:{dev.device_kind}, cpu: {platform.machine()}, jax {jax.__version__}, "
        f"float32, batch {a.batch}, block {a.block}{', interpret mode' if a.interpret else ''}; ms per batch, "
        f"median of 11 calls, best of {a.rounds} alternating rounds; rel. err: ||M - M_generic|| / "
        "||M_generic|| over the batch",
        "",
        "| robot | body-frame ms | common-frame ms | common / body | compile s body / common | "
        "rel. err body | rel. err common |",
        "|---|---|---|---|---|---|---|",
    ]
    rows = []
    for name in a.robots:
        m = _model(name, jnp.float32)
        q = jax.vmap(lambda k, m=m: jaxdyn.random_configuration(m, k))(jax.random.split(jax.random.PRNGKey(0), a.batch))
        ref = jax.jit(jax.vmap(crba_one, in_axes=(None, 0)))(m, q)
        builds = {
            "body": pallas.crba_pallas(m, block=a.block, interpret=interpret, traversal="unroll"),
            "common": common_frame_kernel(m, block=a.block, interpret=interpret),
        }
        cs, err, comp = {}, {}, {}
        for k, f in builds.items():
            t0 = datetime.datetime.now()
            cs[k] = jax.jit(f).lower(q).compile()
            comp[k] = (datetime.datetime.now() - t0).total_seconds()
            err[k] = float(jnp.linalg.norm(cs[k](q) - ref) / jnp.linalg.norm(ref))
        best = best_of_rounds(cs, (q,), a.rounds) if a.rounds else {}
        timing = (
            f"{best['body'] * 1e3:.3f} | {best['common'] * 1e3:.3f} | {best['common'] / best['body']:.2f}"
            if best
            else "- | - | -"
        )
        row = (
            f"| {name} | {timing} | {comp['body']:.1f} / {comp['common']:.1f} | {err['body']:.1e} | "
            f"{err['common']:.1e} |"
        )
        print(row, flush=True)
        lines.append(row)
        rows.append((name, best, err))
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        with open(a.out, "w") as fh:
            fh.write(text)
    return rows


if __name__ == "__main__":
    main()
