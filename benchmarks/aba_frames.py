"""Scanned SoA ABA: body frames against aligned frames, same process, alternating.

``jaxdyn.kernels.aba_batch`` with the "scan" / "level" traversals works in aligned frames (each
body's quantities at its origin, with the root's or the world's axes; see the comment above
``soa._aba_tree``). The body-frame form it replaced is rebuilt here from the step functions the
looped Pallas kernel still uses (``soa._aba_vel_step``, ``_aba_filter_step``,
``_aba_smooth_step``), so both can be timed in one process (this machine's timings drift up to
2x between processes) and checked against the generic ``vmap(jaxdyn.aba)`` (relative error in
float32; float64 agreement is a test, tests/test_kernels.py).

    python benchmarks/aba_frames.py [--robots talos talos:fixed chain32] [--batch 4096] [--out FILE.md]
"""

from __future__ import annotations

import argparse
import datetime
import functools
import platform

import jax
import jax.numpy as jnp
import numpy as np
from harness import _model, best_of_rounds

import jaxdyn
from jaxdyn import kernels, tree
from jaxdyn.kernels import soa


def _body_frame_tree(model, lay, nums, qT, qdT, tauT, feT, pack=None):
    """The body-frame scanned ABA (jaxdyn before 2026-11-23), from soa's body-frame steps."""
    B, dt = qT.shape[-1], model.dtype
    lx, rx = soa._tree_inputs(model, nums, feT, q=qT, qd=qdT, tau=tauT)
    V, _, _ = tree.scatter(lay, soa._aba_vel_step, lx, soa._soa_zeros(soa._MOTION, B, dt), rx)
    lx["v"] = jax.tree_util.tree_map(lambda a: a[np.asarray(lay.link_bodies)], V)
    if rx is not None:
        rx["v"] = jax.tree_util.tree_map(lambda a: a[0], V)
    init = soa._soa_zeros(soa._ART, B, dt, model.nb), soa._soa_zeros(soa._MOTION, B, dt, model.nb)
    _, filt, root_PZ = tree.gather(lay, soa._aba_filter_step, init, lx, rx)
    if filt is not None:
        lx["U"], lx["di"], lx["e"] = filt
    world = soa._no_fold(soa._world_acc(model, B))
    _, qdd_l, qdd_r = tree.scatter(lay, functools.partial(soa._aba_smooth_step, root_PZ, world), lx, world, rx)
    return soa._assemble(model, qdd_l, qdd_r)


def aba_body_frames(model, q, qd, tau, traversal="scan"):
    return soa._run(
        model, "aba_batch", soa._aba_unroll, _body_frame_tree, traversal, "auto", None, q=q, qd=qd, tau=tau, f_ext=None
    )


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--robots", nargs="+", default=["talos", "talos:fixed", "chain32"])
    ap.add_argument("--batch", type=int, default=4096)
    ap.add_argument("--traversal", default="scan")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    lines = [
        f"# Scanned SoA ABA: body frames vs aligned frames ({datetime.date.today()})",
        "",
        f"device: {jax.devices()[0].platform}:{jax.devices()[0].device_kind}, cpu: {platform.machine()}, "
        f"jax {jax.__version__}, float32, batch {a.batch}, traversal {a.traversal}; "
        f"ms per batch, median of 11 calls, best of {a.rounds} alternating rounds; rel. err: "
        "||out - generic|| / ||generic|| over the batch",
        "",
        "| robot | links | body frames ms | aligned ms | speed-up | XLA ops body / aligned | rel. err body | "
        "rel. err aligned |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name in a.robots:
        m = _model(name, jnp.float32)
        B = a.batch
        q = jax.vmap(lambda k: jaxdyn.random_configuration(m, k))(jax.random.split(jax.random.PRNGKey(0), B))
        qd = jax.random.normal(jax.random.PRNGKey(1), (B, m.nv), m.dtype)
        tau = jax.random.normal(jax.random.PRNGKey(2), (B, m.nv), m.dtype)
        args = (m, q, qd, tau)
        ref = jax.jit(jax.vmap(jaxdyn.aba, in_axes=(None, 0, 0, 0)))(*args)
        fs = {
            "body": functools.partial(aba_body_frames, traversal=a.traversal),
            "aligned": functools.partial(kernels.aba_batch, traversal=a.traversal),
        }
        cs, err, ops = {}, {}, {}
        for k, f in fs.items():
            cs[k] = jax.jit(f).lower(*args).compile()
            ops[k] = cs[k].as_text().count(" fusion(")
            out = cs[k](*args)
            err[k] = float(jnp.linalg.norm(out - ref) / jnp.linalg.norm(ref))
        best = best_of_rounds(cs, args, a.rounds)
        row = (
            f"| {name} | {len(m.with_traversal('scan').layout.link_bodies)} | {best['body'] * 1e3:.2f} | "
            f"{best['aligned'] * 1e3:.2f} | {best['body'] / best['aligned']:.2f} | "
            f"{ops['body']} / {ops['aligned']} | "
            f"{err['body']:.1e} | {err['aligned']:.1e} |"
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
