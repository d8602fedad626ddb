"""The unrolled fused (Pallas) CRBA in its two frames, same process, alternating.

``jaxdyn.kernels.pallas.crba_pallas`` (traversal ``"unroll"``) runs the body-frame recursion
(composite inertias and forces moved up the tree, Featherstone08 table 6.2), where the model's
numbers are compile-time constants: a joint's motion subspace is a literal unit axis and its
placement mostly literal, so the structural zeros cost nothing. Every other CRBA executor runs the
common-frame step ``jaxdyn.algorithms.crba.world_step`` (Rodriguez86 (7.8)-(7.11)). This script
builds the same unrolled kernel from that common-frame step (:func:`crba_common_unroll`, kept
here and not in the library) and times both, with the generic ``vmap`` of the one-sample CRBA as
the correctness reference. A deviceless H100 compile gave the common-frame form 1.6-2.8x the
floating-point instructions and up to 128 registers (``results/gpu-aot-h100-crba-frames.md``);
whether that costs time on a GPU is what this measures.

    python benchmarks/crba_frames_ab.py [--robots ur5 panda solo12] [--batch 131072] [--out FILE.md]
    python benchmarks/crba_frames_ab.py --interpret --batch 16 --rounds 0   # correctness only, any CPU
"""

from __future__ import annotations

import argparse
import datetime
import platform

import jax
import jax.numpy as jnp
from harness import _model, best_of_rounds

import jaxdyn
from jaxdyn.algorithms import crba as crba_steps
from jaxdyn.algorithms.crba import crba as crba_one
from jaxdyn.kernels import pallas
from jaxdyn.kernels.soa_algebra import _ZERO3, SoAAlgebra, _add, _dot, _inertia_apply, _keep, _v_add
from jaxdyn.kernels.soa_common import Constants
from jaxdyn.kernels.soa_unrolled import _kinematics_unroll


def crba_common_unroll(model, nums, qT):
    """``M(q) + diag(armature)`` as ``nv * nv`` row-major scalars, unrolled over the tree in the
    common frame (the world, or the free root's body frame): the outward step
    :func:`jaxdyn.algorithms.crba.world_step` per link, composite inertias as subtree sums,
    ``M_ji = M_ij = S_j^T Ic_i S_i`` for the dofs ``j`` of body ``i``'s ancestors."""
    lay, parents = model.layout, model.parents
    arm = nums.armature if isinstance(nums, Constants) else model.armature.astype(model.dtype)
    kin = _kinematics_unroll(model, nums, qT)
    nb, nv = model.nb, model.nv
    e = [tuple(float(k == j) for j in range(3)) for k in range(3)]
    ident = (sum(e, ()), _ZERO3)  # literals: the root's placement folds away
    unit = [(e[k], _ZERO3) for k in range(3)] + [(_ZERO3, e[k]) for k in range(3)]  # a free root's S = 1_6
    Xw, Sw, Ic = [None] * nb, [None] * nb, [None] * nb
    for i, (bn, X, S) in enumerate(kin):
        inertia = (bn["m"], bn["h"], bn["Ib"])
        if S is None:  # the free root: its body frame is the common frame
            Xw[i], Sw[i], Ic[i] = ident, unit, inertia
            continue
        Xp = ident if parents[i] < 0 else Xw[parents[i]]
        Xw[i], (Sw[i], Ic[i]) = crba_steps.world_step(SoAAlgebra, Xp, X, S, inertia)
        Sw[i] = Sw[i] if isinstance(Sw[i], list) else [Sw[i]]
    for i in reversed(range(nb)):
        Ic[i] = _keep(Ic[i])
        pa = parents[i]
        if pa >= 0:
            Ic[pa] = (_add(Ic[pa][0], Ic[i][0]), _v_add(Ic[pa][1], Ic[i][1]), _v_add(Ic[pa][2], Ic[i][2]))
    M = [[0.0] * nv for _ in range(nv)]
    for i in range(nb):
        vs = int(lay.v_start[i])
        for c, Sc in enumerate(Sw[i]):
            col = vs + c
            F = _inertia_apply(*Ic[i], *Sc)
            for r, Sr in enumerate(Sw[i]):
                M[vs + r][col] = _add(_dot(Sr[0], F[0]), _dot(Sr[1], F[1]))
            M[col][col] = _add(M[col][col], arm[col])
            j = i
            while parents[j] >= 0:
                j = parents[j]
                vj = int(lay.v_start[j])
                for r, Sr in enumerate(Sw[j]):
                    M[vj + r][col] = M[col][vj + r] = _add(_dot(Sr[0], F[0]), _dot(Sr[1], F[1]))
    return [x for row in M for x in row]


def common_frame_kernel(model, block=128, interpret=None, num_warps=None):
    """``f(q (B, nq)) -> M (B, nv, nv)``: :func:`crba_common_unroll` as one Pallas kernel, built
    as :func:`jaxdyn.kernels.pallas.crba_pallas` builds the body-frame one."""
    return pallas._mass_matrix_kernel(model, crba_common_unroll, block, interpret, num_warps)


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
