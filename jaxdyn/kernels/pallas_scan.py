"""Fused Pallas kernels that *loop* over links: ABA, RNEA and CRBA for robots too large to unroll.

The unrolled fused kernels (:mod:`jaxdyn.kernels.pallas`, ``traversal="unroll"``) trace the
whole recursion into one straight-line Triton program, and Triton's compile time grows steeply
with it (deviceless H100 compile of the ABA: 12 links 40 s, talos's 32 links > 240 s). Here each
sweep is a ``lax.fori_loop`` over the scanned links inside the kernel, so the program holds one
link step per sweep and compiles in a time flat in the number of links, like the ``"scan"``
traversal of :mod:`jaxdyn.kernels.soa` (:mod:`jaxdyn.kernels.soa_scanned`). The link steps are the same functions (the ABA in
aligned frames, :func:`~jaxdyn.kernels.soa_scanned.aba_kin_step`, ``aba_aligned_filter_step``,
``aba_aligned_smooth_step``; ``rnea_fwd_step``, ``rnea_back_step``, ``crba_pose_step``), so
the equations and their seed
references are those of :mod:`jaxdyn.kernels.soa`: ABA Rodriguez86 Result 8.1, (8.3)-(8.13); RNEA
Rodriguez86 (5.1)-(5.6); CRBA Rodriguez86 (7.7)-(7.11) / Featherstone table 6.2, in the common frame.

Per program (a block of ``block`` samples) the loop reads its link's data with dynamic indices:

* the model numbers of the type-agnostic link step (:func:`~jaxdyn.kernels.soa_scanned.link_numbers`:
  ``R = A0 + cos q A1 + sin q A2``, ``p = p0 + q d``, ``S = [sa; sl]``) and the link's topology
  (rows of ``q``/``qd``, branch slots, ancestor ranges) as scalars from small tables;
* the per-sample values a later sweep needs (ABA: what the kinematics sweep stores per link
  and ``U, D^-1, e`` of the filter; RNEA: the link forces; CRBA: motion subspaces and composite inertias in the
  common frame) as rows of a scratch buffer in device memory, one ``(block,)`` row per scalar;
* the parent's value from the loop carry when the parent is the previous link, else from a slot
  of a small buffer of branch-point values (the tables of :func:`jaxdyn.tree.branch_slots` and
  :func:`jaxdyn.tree.gather_slots`), with masked loads and stores so that links fed by the
  carry move nothing.

A sample's rows are written and later read by the same program with the same 1-D layout, so each
element goes through the same GPU thread in program order.

Status: checked in Pallas interpret mode on CPU against the generic algorithms (float64, 1e-10;
tests/test_pallas_scan.py) and lowered for CUDA; deviceless H100 compile: ABA 8-12 s, RNEA
1-2 s, CRBA 1.5-2.2 s from 9 to 1024 links (``benchmarks/results/gpu-aot-h100-pallas-scan.md``).
On an H100 the looped ABA and RNEA ran on talos, bitwise equal to the SoA kernels and 5-9.5x
faster (``benchmarks/results/h100-2026-11-27.md``); the looped CRBA is not yet timed on a GPU.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .. import tree
from ..algorithms import crba as crba_steps
from ..model import Model, layout
from ._checks import check_args
from .soa_algebra import IDENTITY_X, UNIT_MOTIONS, ZERO3, SoAAlgebra
from .soa_common import ART, MOTION, Constants, check_joints, model_numbers
from .soa_scanned import (
    I3,
    aba_aligned_filter_step,
    aba_aligned_smooth_step,
    aba_kin_step,
    crba_pose_step,
    link_numbers,
    rnea_back_step,
    rnea_fwd_step,
)

tmap = jax.tree_util.tree_map

# The kernel bodies' algebra: Triton compiles each program as written, so no value is routed through
# a runtime 1 (that is for XLA CPU's fusion, soa_algebra's module comment).
ALG = SoAAlgebra()

# Columns of the per-link integer table.
_QROW, _VROW, _FROM_CARRY, _READ, _WRITE, _RECV_CARRY, _OWN, _ADD, _ANC0, _ANC1, _ROOT_SLOT = range(11)


class _Tables:
    """Static per-model data of the looped kernels: the link numbers as a float table (one row
    per scanned link, ``cols`` maps each key to its column range), the integer topology table,
    the branch-slot tables and the free root's numbers (Python floats)."""

    def __init__(self, model: Model):
        m = model
        lay = self.lay = layout(model.topology, "scan")
        self.n = len(lay.link_bodies)
        nums = model_numbers(m)
        lx = {k: np.asarray(v, np.float64).reshape(self.n, -1) for k, v in link_numbers(m, nums).items()}
        self.cols, blocks, c0 = {}, [], 0
        for k, v in lx.items():
            self.cols[k] = (c0, v.shape[1], v.shape[1] == 1 and k in ("m", "arm"))
            blocks.append(v)
            c0 += v.shape[1]
        self.ftab = np.concatenate(blocks, 1) if self.n else np.zeros((1, 1))
        self.sc = tree.branch_slots(lay)  # from_carry, read_slot, write_slot, slot_of, K
        self.gc = tree.gather_slots(lay)  # recv_carry, own_slot, add_slot, slot_of, K
        it = np.zeros((max(self.n, 1), 11), np.int32)
        anc: list[int] = []  # per link: the scan indices of its scanned ancestors (the CRBA's rows above it)
        if self.n:
            it[:, _QROW], it[:, _VROW] = lay.link_q[:, 0], lay.link_v[:, 0]
            it[:, _FROM_CARRY], it[:, _READ], it[:, _WRITE] = self.sc[0], self.sc[1], self.sc[2]
            it[:, _RECV_CARRY], it[:, _OWN], it[:, _ADD] = self.gc[0], self.gc[1], self.gc[2]
            pos = {int(b): j for j, b in enumerate(lay.link_bodies)}
            for j, b in enumerate(lay.link_bodies):
                it[j, _ANC0] = len(anc)
                p = m.parents[int(b)]
                while p in pos:
                    anc.append(pos[p])
                    p = m.parents[p]
                it[j, _ANC1] = len(anc)
        it[0, _ROOT_SLOT] = self.gc[3].get(0, 0)  # the free root's gather slot (read after the loop)
        self.itab = it
        self.atab = np.asarray(anc or [0], np.int32)[:, None]
        self.nv = m.nv
        self.consts = Constants(model)
        self.floating = lay.floating


class _Kernel:
    """What one program of a looped kernel works with: the table refs, the scratch ref (rows of
    ``(block,)`` values) and helpers to load/store pytrees of rows, masked where asked."""

    def __init__(self, tabs, ftab, itab, atab, scratch, block, dtype, interpret, sc_slots, g_slots):
        self.t, self.ftab, self.itab, self.atab, self.scr = tabs, ftab, itab, atab, scratch
        self.block, self.dtype, self.interpret = block, dtype, interpret
        self.sc_slots, self.g_slots = sc_slots, g_slots  # first rows of the slot regions (_scratch_layout)

    def row(self, v):
        return jnp.broadcast_to(jnp.asarray(v, self.dtype), (self.block,))

    def load(self, r, mask=None):
        if mask is None:
            return self.scr[0, r, :]
        if self.interpret:
            return jnp.where(mask, self.scr[0, r, :], jnp.zeros((self.block,), self.dtype))
        from jax.experimental.pallas import triton as plt

        return plt.load(self.scr.at[0, r, :], mask=jnp.broadcast_to(mask, (self.block,)), other=0.0)

    def store(self, r, v, mask=None):
        v = self.row(v)
        if mask is None:
            self.scr[0, r, :] = v
        elif self.interpret:
            self.scr[0, r, :] = jnp.where(mask, v, self.scr[0, r, :])
        else:
            from jax.experimental.pallas import triton as plt

            plt.store(self.scr.at[0, r, :], v, mask=jnp.broadcast_to(mask, (self.block,)))

    def put(self, base, val, mask=None):
        for k, leaf in enumerate(jax.tree_util.tree_leaves(val)):
            self.store(base + k, leaf, mask)

    def get(self, base, like, mask=None):
        leaves, td = jax.tree_util.tree_flatten(like)
        return jax.tree_util.tree_unflatten(td, [self.load(base + k, mask) for k in range(len(leaves))])

    def link_x(self, j, per_dof, stored):
        """The step input of scanned link ``j`` (traced index): model numbers as scalars, its
        per-dof rows of ``per_dof`` (``{name: (ref, table column)}``) and its stored values
        (``{name: (base row, width, like)}``, rows ``base + j * width``)."""
        x = {}
        for k, (c0, w, scalar) in self.t.cols.items():
            vals = tuple(self.ftab[j, c0 + c] for c in range(w))
            x[k] = vals[0] if scalar else vals
        for k, (ref, col) in per_dof.items():
            x[k] = ref[self.itab[j, col], :]
        for k, (base, w, like) in stored.items():
            x[k] = self.get(base + j * w, like)
        return x

    def like(self, template, val):
        return tmap(lambda _, v: self.row(v), template, val)

    def scatter(self, step, world, root_val, slot_base, emit):
        """Base-to-tips loop ``val = step(val_parent, x_j)`` (as :func:`jaxdyn.tree.scatter`,
        scanned), ``emit(j, val, out)`` per link; the root's value ``root_val`` and the world's
        fill their branch slots first."""
        t = self.t
        _, _, _, slot_of, K = t.sc
        width = len(jax.tree_util.tree_leaves(world))
        for p, k in slot_of.items():  # scanned parents fill their slots in the loop
            if p == t.lay.nb or (t.floating and p == 0):
                self.put(slot_base + k * width, world if p == t.lay.nb else root_val)
        carry0 = self.like(world, world)

        def body(j, carry):
            flag = self.itab[j, _FROM_CARRY] != 0
            slot = self.get(slot_base + self.itab[j, _READ] * width, carry, mask=jnp.logical_not(flag))
            pv = tmap(lambda c, s: jnp.where(flag, c, s), carry, slot)
            val, out = step(pv, j)
            val = self.like(carry, val)
            w = self.itab[j, _WRITE]
            self.put(slot_base + w * width, val, mask=w != K)
            emit(j, val, out)
            return val

        jax.lax.fori_loop(0, t.n, body, carry0)

    def gather(self, step, zero, slot_base, emit):
        """Tips-to-base loop (as :func:`jaxdyn.tree.gather`, scanned, zero initial
        accumulators): ``(contrib, out) = step(acc_j, j)``, ``emit(j, out)``; returns the sum of
        the contributions to the free root (or None)."""
        t = self.t
        _, _, _, slot_of, K = t.gc
        width = len(jax.tree_util.tree_leaves(zero))
        for k in range(K + 1):  # K: the always-zero slot of links without slotted children
            self.put(slot_base + k * width, zero)
        carry0 = self.like(zero, zero)

        def body(jj, carry):
            j = t.n - 1 - jj
            own = self.itab[j, _OWN]
            acc = self.get(slot_base + own * width, carry, mask=own != K)
            recv = self.itab[j, _RECV_CARRY] != 0
            acc = tmap(lambda a, c: a + jnp.where(recv, c, jnp.zeros_like(c)), acc, carry)
            contrib, out = step(acc, j)
            contrib = self.like(carry, contrib)
            add = self.itab[j, _ADD]
            slotted = add != K + 1
            old = self.get(slot_base + add * width, carry, mask=slotted)
            self.put(slot_base + add * width, tmap(jnp.add, old, contrib), mask=slotted)
            emit(j, out)
            return contrib

        jax.lax.fori_loop(0, t.n, body, carry0)
        if t.floating:
            if 0 not in slot_of:
                return carry0
            # The slot's row comes from the table, loaded after the loop: with a constant row the
            # compiler computed the 27 addresses before the loop and kept them live through it
            # (talos: 218 registers against 166, ptxas for sm_90a).
            return self.get(slot_base + self.itab[0, _ROOT_SLOT] * width, zero)
        return None


def _root_x(tabs, **per_dof):
    """The free root's step input: its numbers (Python floats) and its per-dof rows."""
    c = tabs.consts
    b0 = {k: v[0] for k, v in c.bodies.items()}
    x = {"root": True, "m": b0["m"], "h": b0["h"], "Ib": b0["Ib"], "arm": tuple(c.armature[0:6])}
    x.update(per_dof)
    return x


def _aligned_like(tabs):
    """The structure of what the aligned-frame kinematics sweep stores per link
    (:func:`jaxdyn.kernels.soa_scanned.aba_kin_step`): ``d``, ``S`` (``Sa``, plus ``Sl`` if the model
    has prismatic joints), ``c``, the rigid inertia ``(R h, R Ibar R^T)`` and the bias force."""
    S = (ZERO3, ZERO3) if "d" in tabs.cols else (ZERO3,)
    return (ZERO3, S, MOTION, (ZERO3, (0.0,) * 6), MOTION)


def _aligned_rows(tabs):
    return len(jax.tree_util.tree_leaves(_aligned_like(tabs)))


def _aba_body(tabs, K, qT, qdT, tauT, out):
    """ABA (Rodriguez86 Result 8.1) in aligned frames: the three sweeps of
    :func:`jaxdyn.kernels.soa_scanned.aba_tree` (the parent-to-child transforms are translations, the
    rotations are in the kinematics sweep)."""
    floating = tabs.floating
    like = _aligned_like(tabs)
    W = _aligned_rows(tabs)
    base_k, base_f = 0, W * tabs.n  # scratch rows: per link the kinematics' values (W) | U, D^-1, e (8) | slots
    sc_slots, g_slots = K.sc_slots, K.g_slots
    per = {"q": (qT, _QROW), "qd": (qdT, _VROW), "tau": (tauT, _VROW)}
    kin_world = (I3, ZERO3, ZERO3)

    def root_x():
        # The free root's rows are loaded where they are used, before the first loop and again
        # after the gather, so that none of them stays live across the loops (fewer registers per
        # kernel; registers are allocated per kernel, so they set the occupancy of the loops).
        return _root_x(
            tabs,
            q=tuple(qT[k, :] for k in range(7)),
            qd=tuple(qdT[k, :] for k in range(6)),
            tau=tuple(tauT[k, :] for k in range(6)),
        )

    root_val = aba_kin_step(ALG, None, root_x())[0] if floating else kin_world
    K.scatter(
        lambda pv, j: aba_kin_step(ALG, pv, K.link_x(j, per, {})),
        kin_world,
        root_val,
        sc_slots,
        lambda j, val, o: K.put(base_k + W * j, o),
    )

    def link_x(j, with_f):
        stored = {"k": (base_k, W, like)}
        if with_f:
            stored = {"k": (base_k, W, like[:3]), "f": (base_f, 8, (MOTION, 0.0, 0.0))}
        x = K.link_x(j, per, stored)
        k = x.pop("k")
        x["d"], x["S"], x["c"] = k[:3]
        if with_f:
            x["U"], x["di"], x["e"] = x.pop("f")
        else:
            x["I"], x["pA"] = k[3:]
        return x

    art_zero = K.like((ART, MOTION), (ART, MOTION))
    root_acc = K.gather(
        lambda acc, j: aba_aligned_filter_step(ALG, acc, link_x(j, False)),
        art_zero,
        g_slots,
        lambda j, o: K.put(base_f + 8 * j, o),
    )
    world = tabs.consts.world
    root_PZ, root_a = None, K.like(MOTION, MOTION)
    if floating:
        rx = root_x()
        rx["pA"] = aba_kin_step(ALG, None, rx)[1]
        _, root_PZ = aba_aligned_filter_step(ALG, root_acc, rx)
        root_a, qdd_r = aba_aligned_smooth_step(ALG, root_PZ, world, None, rx)
        for k in range(6):
            out[k, :] = K.row(qdd_r[k])

    def emit(j, val, qdd):
        out[K.itab[j, _VROW], :] = K.row(qdd)

    K.scatter(
        lambda pa, j: aba_aligned_smooth_step(ALG, root_PZ, world, pa, link_x(j, True)),
        K.like(world, world),
        root_a,
        sc_slots,
        emit,
    )


def _rnea_body(tabs, K, qT, qdT, qddT, out):
    """RNEA (Rodriguez86 (5.1)-(5.6); the sweeps of :func:`jaxdyn.kernels.soa_scanned.rnea_tree`)."""
    floating = tabs.floating
    world = tabs.consts.world
    base_f = 0  # scratch rows: per link f (6) | slots (_scratch_layout)
    sc_slots, g_slots = K.sc_slots, K.g_slots
    per = {"q": (qT, _QROW), "qd": (qdT, _VROW), "qdd": (qddT, _VROW)}
    fwd = functools.partial(rnea_fwd_step, ALG, world)
    rx, root_val = None, (MOTION, world)
    if floating:
        rx = _root_x(
            tabs,
            q=tuple(qT[k, :] for k in range(7)),
            qd=tuple(qdT[k, :] for k in range(6)),
            qdd=tuple(qddT[k, :] for k in range(6)),
        )
        root_val, rx["f"] = fwd(None, rx)
    K.scatter(
        lambda pv, j: fwd(pv, K.link_x(j, per, {})),
        (MOTION, world),
        root_val,
        sc_slots,
        lambda j, val, f: K.put(base_f + 6 * j, f),
    )

    def back(acc, j):
        return rnea_back_step(ALG, acc, K.link_x(j, per, {"f": (base_f, 6, MOTION)}))

    def emit(j, tau):
        out[K.itab[j, _VROW], :] = K.row(tau)

    root_acc = K.gather(back, K.like(MOTION, MOTION), g_slots, emit)
    if floating:
        _, tau_r = rnea_back_step(ALG, root_acc, rx)
        for k in range(6):
            out[k, :] = K.row(tau_r[k])


def _crba_body(tabs, K, qT, out):
    """Mass matrix ``M(q) + diag(armature)`` in the common frame (the world, or the free root's
    body frame; the form of :func:`jaxdyn.kernels.soa_scanned.crba_tree`, Featherstone (6.2), Rodriguez86
    (7.7)-(7.11), the link steps of :mod:`jaxdyn.algorithms.crba`): a scatter of poses gives each
    link's motion subspace ``S`` and rigid inertia in that frame (``crba.world_step``), a gather
    sums composite inertias ``Ic`` (no transforms: one frame), then per link the column force
    ``F = Ic S`` (``crba.column_force``), ``M_ii = S^T F + armature`` and ``M_ji = M_ij = S_j^T F``
    for its ancestors ``j`` (``crba.entry``; a loop over the link's row range of the ancestor
    table); the free root's ``S`` is ``1_6``. Entries of links on different branches are zeros."""
    n, floating, nv = tabs.n, tabs.floating, tabs.nv
    zero3 = (0.0, 0.0, 0.0)
    ident = ((1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0), zero3)
    rigid = (0.0, zero3, (0.0,) * 6)
    # scratch rows: per link S (6) and its rigid, then composite, inertia (10) | slots (_scratch_layout)
    sc_slots, g_slots = K.sc_slots, K.g_slots
    per = {"q": (qT, _QROW)}

    def clear(r, c):
        out[r, :] = K.row(0.0)
        return c

    jax.lax.fori_loop(0, nv * nv, clear, 0)
    if n:
        K.scatter(
            lambda pv, j: crba_pose_step(ALG, ident, pv, K.link_x(j, per, {})),
            ident,
            ident,
            sc_slots,
            lambda j, val, o: K.put(16 * j, o),
        )

    def composite(acc, j):  # Rodriguez86 (7.9) in the common frame: phi = 1, literals that fold away
        Ic = crba_steps.composite_step(ALG, IDENTITY_X, acc, K.get(16 * j + 6, rigid))
        return Ic, Ic

    root_acc = K.gather(composite, K.like(rigid, rigid), g_slots, lambda j, Ic: K.put(16 * j + 6, Ic)) if n else None
    if floating:
        b0, arm = {k: v[0] for k, v in tabs.consts.bodies.items()}, tabs.consts.armature
        Ic0 = (b0["m"], b0["h"], b0["Ib"])
        if root_acc is not None:
            Ic0 = tmap(lambda a, b: a + b, Ic0, root_acc)
        for c in range(6):  # the root's S = 1_6: its six unit motions
            F = crba_steps.column_force(ALG, Ic0, UNIT_MOTIONS[c])
            for r in range(6):
                out[r * nv + c, :] = K.row(crba_steps.entry(ALG, UNIT_MOTIONS[r], F) + (arm[r] if r == c else 0.0))
    if not n:
        return
    arm_col = tabs.cols["arm"][0]

    def column(j, c):
        s = K.get(16 * j, MOTION)
        F = crba_steps.column_force(ALG, K.get(16 * j + 6, rigid), s)
        vc = K.itab[j, _VROW]
        out[vc * nv + vc, :] = K.row(crba_steps.entry(ALG, s, F) + K.ftab[j, arm_col])

        def ancestor(t, c):  # one frame: the column's force is the same at every ancestor
            a = K.atab[t, 0]
            va = K.itab[a, _VROW]
            x = K.row(crba_steps.entry(ALG, K.get(16 * a, MOTION), F))
            out[va * nv + vc, :] = x
            out[vc * nv + va, :] = x
            return c

        jax.lax.fori_loop(K.itab[j, _ANC0], K.itab[j, _ANC1], ancestor, 0)
        if floating:  # the root is every link's ancestor, with S = 1_6
            for k, x in enumerate(F[0] + F[1]):
                out[k * nv + vc, :] = K.row(x)
                out[vc * nv + k, :] = K.row(x)
        return c

    jax.lax.fori_loop(0, n, column, 0)


class _Algo(NamedTuple):
    body: Callable[..., Any]
    # scratch rows of each link's stored values (an int, or a function of the _Tables)
    per_link: int | Callable[[Any], int]
    sc_width: int  # rows of a scatter branch slot (the scattered value's leaves)
    g_width: int  # rows of a gather branch slot (the accumulator's leaves)
    args: tuple  # argument names, the first is q (B, nq), the others (B, nv)
    out: Callable[[int], int]  # output rows from nv


_ALGOS = {
    "aba": _Algo(_aba_body, lambda t: _aligned_rows(t) + 8, 15, 27, ("q", "qd", "tau"), lambda nv: nv),
    "rnea": _Algo(_rnea_body, 6, 12, 6, ("q", "qd", "qdd"), lambda nv: nv),
    "crba": _Algo(_crba_body, 16, 12, 10, ("q",), lambda nv: nv * nv),
}


def _scratch_layout(tabs, spec):
    """``(scatter slots' first row, gather slots' first row, rows)`` of the scratch buffer: the
    links' stored values, then ``K + 1`` scatter slots (the last write-only), then ``K + 2``
    gather slots (the always-zero one and the write-only one), ``K`` from the slot tables."""
    sc = (spec.per_link(tabs) if callable(spec.per_link) else spec.per_link) * tabs.n
    g = sc + (tabs.sc[4] + 1) * spec.sc_width
    return sc, g, g + (tabs.gc[4] + 2) * spec.g_width


def looped(model: Model, algo: str, *, block: int = 128, interpret: bool | None = None, num_warps: int | None = None):
    """Build the fused kernel of ``algo`` that loops over the links (module docstring), the
    model's numbers baked in (not differentiable w.r.t. the model):

    * ``"aba"``: ``f(q (B, nq), qd (B, nv), tau (B, nv)) -> qdd (B, nv)``, in aligned frames
      (:func:`jaxdyn.kernels.soa_scanned.aba_tree`);
    * ``"rnea"``: ``f(q, qd, qdd) -> tau (B, nv)``;
    * ``"crba"``: ``f(q) -> M (B, nv, nv)`` (armature included)."""
    name = f"{algo.split('_')[0]}_pallas"
    check_joints(model, name)
    if block < 1 or block & (block - 1):
        raise ValueError(f"{name}: block must be a power of two, got {block}")
    if interpret is None:
        interpret = jax.default_backend() != "gpu"
    tabs = _Tables(model)
    spec = _ALGOS[algo]
    sc_slots, g_slots, rows = _scratch_layout(tabs, spec)
    nq, nv, dt = model.nq, model.nv, model.dtype
    nout = spec.out(nv)
    tables = (jnp.asarray(tabs.ftab, dt), jnp.asarray(tabs.itab), jnp.asarray(tabs.atab))
    nargs = len(spec.args)

    def kernel(*refs):
        K = _Kernel(tabs, *refs[:3], refs[-1], block, dt, interpret, sc_slots, g_slots)
        spec.body(tabs, K, *refs[3 : 3 + nargs], refs[3 + nargs])

    def f(*xs):
        if len(xs) != nargs:
            raise TypeError(f"{name} takes {nargs} arguments ({', '.join(spec.args)}), got {len(xs)}")
        xs = [jnp.asarray(a, dt) for a in xs]
        B = check_args(name, model, spec.args, xs, (nq,) + (nv,) * (nargs - 1))
        # One call per chunk of samples whose scratch fits in SCRATCH_BYTES (chain1024's ABA needs
        # 57 KiB of scratch per float32 sample).
        per_sample = rows * jnp.dtype(dt).itemsize
        chunk = max(block, SCRATCH_BYTES // per_sample // block * block)
        chunk = min(chunk, -(-B // block) * block)
        nc = -(-B // chunk)
        Bp = nc * chunk
        xT = [jnp.pad(a, ((0, Bp - B), (0, 0))).T for a in xs]
        if model.floating_base:  # padded samples need a unit quaternion
            xT[0] = xT[0].at[3, B:].set(1.0)
        call = functools.partial(_call, kernel, tables, chunk, rows, nout, block, dt, interpret, num_warps)
        if nc == 1:
            out = call(*xT)
        else:
            split = lambda a: jnp.moveaxis(a.reshape(a.shape[0], nc, chunk), 1, 0)  # noqa: E731
            out = jax.lax.map(lambda a: call(*a), tuple(split(a) for a in xT))
            out = jnp.moveaxis(out, 0, 1).reshape(nout, Bp)
        out = out[:, :B].T
        return out.reshape(B, nv, nv) if algo == "crba" else out

    return f


# Largest scratch buffer of one looped kernel call; bigger batches go through in chunks.
SCRATCH_BYTES = 2**31


def _call(kernel, tables, chunk, rows, nout, block, dt, interpret, num_warps, *xT):
    from jax.experimental import pallas as pl

    G = chunk // block
    full = lambda a: pl.BlockSpec(a.shape, lambda i: (0, 0))  # noqa: E731
    cols = lambda w: pl.BlockSpec((w, block), lambda i: (0, i))  # noqa: E731
    params = None
    if not interpret:
        from jax.experimental.pallas import triton as plt

        params = plt.CompilerParams(num_warps=num_warps, num_stages=1)
    out, _ = pl.pallas_call(
        kernel,
        grid=(G,),
        out_shape=[jax.ShapeDtypeStruct((nout, chunk), dt), jax.ShapeDtypeStruct((G, rows, block), dt)],
        in_specs=[full(t) for t in tables] + [cols(a.shape[0]) for a in xT],
        out_specs=[cols(nout), pl.BlockSpec((1, rows, block), lambda i: (i, 0, 0))],
        interpret=interpret,
        compiler_params=params,
    )(*tables, *xT)
    return out
