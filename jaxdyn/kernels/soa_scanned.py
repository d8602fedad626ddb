"""The scanned traversal of the struct-of-arrays kernels (:mod:`jaxdyn.kernels.soa`): the same
link steps through :func:`jaxdyn.tree.scatter` / :func:`~jaxdyn.tree.gather` (``lax.scan`` over
links; compile time flat in the number of links; the joint data are arrays, with a type-agnostic
revolute/prismatic transform), the ABA in aligned frames; and the CRBA's tree walk, which every
traversal uses. The looped Pallas kernels (:mod:`jaxdyn.kernels.pallas_scan`) run these steps."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from .. import joints, spatial, tree
from .. import spatial_formulas as formulas
from ..algorithms import aba as aba_steps
from ..algorithms import crba as crba_steps
from ..algorithms import rnea as rnea_steps
from .soa_algebra import (
    ZERO3,
    _cols,
    kept,
    kept_step,
    v_add,
)
from .soa_common import (
    ART,
    MOTION,
    bias_force,
    free_root_solve,
    free_X,
    pack_outputs,
    riccati,
    split,
    world_acc,
    wrench,
)

# --- scanned traversal (jaxdyn.tree scatter/gather over links or depth levels) --------------------


def link_numbers(model, nums):
    """Per scanned link (leading axis n, in ``layout.link_bodies`` order): the joint numbers of
    (J1) (:func:`jaxdyn.joints.one_dof_numbers`; when no joint translates ``d`` and the linear
    half of ``S`` are left out, structural zeros), the inertia and the armature. With a
    spherical joint in the model (three dof slots per link): ``S3``, the three columns of each
    link's ``S`` (:func:`jaxdyn.joints.link_subspaces`), ``(n, 3, 6)``, and the armature of the
    empty slots 1."""
    lay = model.layout
    idx = np.asarray(lay.link_bodies)
    x = {k: v[idx] for k, v in nums.items()}
    arm = jnp.concatenate([model.armature.astype(model.dtype), jnp.zeros((1,), model.dtype)])
    if lay.k == 1:
        x["arm"] = arm[lay.link_v[:, 0]]
        return x
    x["arm"] = jnp.where(jnp.asarray(lay.dof_mask), arm[lay.link_v], 1.0)
    _, lead = joints.model_screw(model, idx)
    x["S3"] = jnp.swapaxes(joints.link_subspaces(lay, model.axis.astype(model.dtype)[idx], lead), -1, -2)
    for k in ("sa", "sl"):  # in S3
        x.pop(k, None)
    return x


@kept
def _link_X_S(alg, x, q):
    """Placement and motion subspace, (J1), of a scanned link from :func:`link_numbers`; with
    three dof slots (:func:`_tree_inputs`: ``q = [angle, w, x, y, z]``, the angle 0 on a
    spherical link and the quaternion ``[1, 0, 0, 0]`` on the others) ``R = R(J1)(angle)
    R(quat)`` and ``S`` the list of the three columns."""
    d = split(x["d"]) if "d" in x else None
    angle = q[0] if "S3" in x else q
    R, p = joints.one_dof_motion(split(x["A0"]), split(x["A1"]), split(x["A2"]), split(x["p0"]), d, angle)
    if "S3" in x:
        S3 = x["S3"]
        cols = [(tuple(S3[c, r] for r in range(3)), tuple(S3[c, 3 + r] for r in range(3))) for c in range(3)]
        return (alg.o.mm(R, spatial.quaternion_matrix(*[q[k] for k in range(1, 5)])), p), cols
    sl = split(x["sl"]) if "sl" in x else None
    return (R, p), joints.one_dof_subspace(split(x["sa"]), sl)


def _link_slots(x, name):
    """A scanned link's per-dof value ``name``: a scalar, or the list of its three slots."""
    return list(split(x[name])) if "S3" in x else x[name]


def _inertia_x(x):
    return x["m"], split(x["h"]), split(x["Ib"])


def _tree_inputs(model, nums, feT, **per_dof):
    """``(link_x, root_x)`` for :mod:`jaxdyn.tree`: the model numbers of each scanned link plus
    its per-sample ``(n, B)`` slots of ``per_dof`` (``q`` and the ``(nv, B)`` arrays), and the
    free root's numbers and slots (or None)."""
    lay = model.layout
    lx = link_numbers(model, nums)
    for k, a in per_dof.items():
        if lay.k == 1:
            lx[k] = a[lay.link_q[:, 0] if k == "q" else lay.link_v[:, 0]]
            continue
        a = jnp.concatenate([a, jnp.zeros_like(a[:1])])  # the padding slot reads a zero
        if k != "q":
            lx[k] = a[lay.link_v]  # (n, 3, B)
            continue
        sph = jnp.asarray(joints.link_flags(lay.link_types).quaternion)[:, None]
        q4 = a[lay.link_q]  # (n, 4, B)
        unit = jnp.asarray([1.0, 0.0, 0.0, 0.0], a.dtype)[:, None]
        quat = jnp.where(sph[:, :, None], q4, unit)
        lx[k] = jnp.concatenate([jnp.where(sph, 0.0, q4[:, 0])[:, None], quat], 1)  # (n, 5, B)
    if feT is not None:
        lx["fe"] = feT[np.asarray(lay.link_bodies)]
    rx = None
    if lay.floating:
        rx = {k: v[0] for k, v in nums.items() if k in ("m", "h", "Ib")}
        rx["root"] = True  # static marker: the step functions branch on it at trace time
        rx["arm"] = model.armature.astype(model.dtype)[0:6]
        rx.update({k: a[0:7] if k == "q" else a[0:6] for k, a in per_dof.items()})
        if feT is not None:
            rx["fe"] = feT[0]
    return lx, rx


def _assemble(model, link_rows, root_rows):
    """``(nv, B)`` from per-link ``(n, B)`` rows and the root's 6 rows."""
    lay = model.layout
    parts = []
    if lay.floating:
        parts.append(jnp.stack(list(root_rows)))
    if len(lay.link_bodies):
        if isinstance(link_rows, list):  # three dof slots per link: (n, B) each -> (3 n, B)
            link_rows = jnp.stack(link_rows, 1).reshape((-1,) + link_rows[0].shape[1:])
        parts.append(link_rows)
    return jnp.concatenate(parts)[jnp.asarray(lay.v_gather)]


def _fe_x(x):
    return split(x["fe"]) if "fe" in x else None


def _soa_zeros(structure, B, dtype, nb=None):
    shape = (B,) if nb is None else (nb, B)
    return _no_fold(jax.tree_util.tree_map(lambda _: jnp.zeros(shape, dtype), structure))


def _no_fold(x):
    """``x`` behind an optimisation barrier, for the constant seeds (zeros, gravity, identity)
    of the scanned :mod:`jaxdyn.tree` sweeps over ``(B,)`` values: their per-body buffers are
    padded and updated from these, and XLA would constant-fold every such buffer into a literal
    of the batch's size (talos at ``B = 2^20``: ``(34, B)`` literals, seconds of compile time on
    the H100 and large constants in the executable; guarded by tests/test_no_batch_constants.py).
    Only here: in the generic ``vmap`` path the seeds are per-sample and small (nothing of the
    batch's size to fold), so that path is left as it was. A same-process A/B on CPU (talos SoA
    ABA, batch 4096) showed no speed change from the barriers."""
    return jax.lax.optimization_barrier(x)


# The scanned ABA expresses body i's spatial quantities at its
# own origin with the axes of a common frame: the free root's body frame, or the world for a fixed
# base (Pinocchio calls this frame LOCAL_WORLD_ALIGNED). The transform from a parent to a child is
# then a pure translation by ``d = R_p p`` (Featherstone, RBDA (2.24) with ``E = 1``), so the
# inward sweep moves ``P+`` and ``z+`` to the parent without rotating them: the rotations go to the
# outward kinematics sweep instead (the pose chain ``R = R_p R_J``, ``S = R s``, the rigid inertia
# ``R Ibar R^T``), a few hundred fewer ops per link step. Scanned links have no static structure
# left to exploit (their axes are arrays), so this measured 1.15-1.3x on talos (32 scanned links)
# on the 2-core CPU against the body-frame form (benchmarks/results/cpu-2026-11-23-aba-aligned.md);
# unrolled links keep the body frames (their structural zeros make those as cheap). The looped
# Pallas ABA (kernels/pallas_scan.py) runs these same steps. Lever arms stay the links' own
# offsets, so float32 stays close to the body-frame form (talos: 5.5e-7 against 1.9e-7 relative
# to the generic path), unlike world-frame quantities (1.5e-5: Riccati terms about a distant
# origin cancel).

I3 = (1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0)

# The scanned ABA's sweep outputs that later sweeps read, under the names its steps use (the
# kinematics sweep's offset ``d`` replaces the prismatic axis input of the same name).
_SWEEP_OUTPUTS = {"kin": ("d", "S", "c", "I", "pA"), "filt": ("U", "di", "e")}


def _fields(x):
    """A step's inputs with the earlier sweeps' outputs (stacked, or a :class:`jaxdyn.tree.Packed`)
    unpacked under their names."""
    out = {k: v for k, v in x.items() if k not in _SWEEP_OUTPUTS}
    for key, names in _SWEEP_OUTPUTS.items():
        if key in x:
            out.update(zip(names, tree.unpack(x[key])))
    return out


def _aligned_S(x):
    """``(Sa, Sl)`` of a link stored by :func:`aba_kin_step` (a revolute-only model stores
    ``Sa`` only: its ``Sl`` stays a literal zero)."""
    S = x["S"]
    return S if isinstance(S, list) or len(S) == 2 else (S[0], ZERO3)


@kept_step
def aba_kin_step(alg, parent, x):
    """Outward ABA sweep 1 in aligned frames (a scatter step). The link's placement in the common
    axes at its parent's origin is ``(R, d) = (R_p, 0) X_J`` (``alg.compose``; the composition of
    :func:`jaxdyn.algorithms.crba.world_step` without the parent's translation: each link keeps
    its own origin); its motion subspace ``S = R s`` (the axis passes through the link's origin),
    rigid inertia ``(m, R h, R Ibar R^T)`` and external force are its own moved to the common axes
    by ``(R, 0)`` (``alg.subspace_to_parent``, :func:`jaxdyn.spatial_formulas.rigid_to_parent`,
    :func:`~jaxdyn.spatial_formulas.force_to_parent`); its velocity ``v = X(d) v_p + S qd``
    (Rodriguez86 (5.1)) and bias acceleration ``c = v x S qd`` (Rodriguez86 (8.3)) are
    :func:`jaxdyn.algorithms.aba.velocity_step` across ``X = (1, d)``, and its bias force
    ``v x* I v - f_ext`` (Rodriguez86 (8.24)) :func:`~jaxdyn.algorithms.aba.bias_force`; carries
    ``(R, w, v)``."""
    m, h, Ib = _inertia_x(x)
    if "root" in x:  # the root's frame is the common one: R = 1
        w, v = split(x["qd"][0:3]), split(x["qd"][3:6])
        return (I3, w, v), bias_force(alg, m, h, Ib, w, v, _fe_x(x))
    Rp, wp, vp = parent
    X_J, S_J = _link_X_S(alg, x, x["q"])
    R, d = alg.compose((Rp, ZERO3), X_J)
    S = alg.subspace_to_parent((R, ZERO3), S_J)
    (w, v), c = aba_steps.velocity_step(alg, (I3, d), S, _link_slots(x, "qd"), (wp, vp))
    # the formula rather than alg.inertia_to_parent, whose outputs are computed once: the step's
    # outputs already are, and dividing them by the runtime 1 twice would cost more divisions
    _, hR, IbR = formulas.rigid_to_parent(alg.o, R, ZERO3, m, h, Ib)
    fe = _fe_x(x)
    if fe is not None:
        fe = sum(formulas.force_to_parent(alg.o, R, ZERO3, fe[0:3], fe[3:6]), ())
    if not isinstance(S, list) and "d" not in x:  # revolute only: the linear half is zero
        S = (S[0],)
    return (R, w, v), (d, S, c, (hR, IbR), bias_force(alg, m, hR, IbR, w, v, fe))


@kept_step
def aba_aligned_filter_step(alg, acc, x):
    """Inward ABA sweep in aligned frames (a gather step): ``P = I + sum P+_children``, the Riccati
    filter (Rodriguez86 (8.5)-(8.9)) and the translation of ``(P+, z+)`` to the parent; outputs
    ``(U, D^-1, e)`` (the root returns its ``(P, z)``)."""
    x = _fields(x)
    m, h, Ib = (x["m"], *x["I"]) if "I" in x else _inertia_x(x)  # links: rotated in the kinematics sweep
    P = tuple(v_add(a, b) for a, b in zip(alg.art_of((m, h, Ib)), acc[0]))
    Z = tuple(v_add(a, b) for a, b in zip(x["pA"], acc[1]))
    if "root" in x:
        return None, (P, Z)
    U, di, e, Pa, za = riccati(alg, P, Z, _aligned_S(x), _link_slots(x, "arm"), _link_slots(x, "tau"), x["c"])
    return aba_steps.to_parent(alg, (I3, x["d"]), Pa, za), (U, di, e)


@kept_step
def aba_aligned_smooth_step(alg, root_PZ, world, parent_a, x):
    """Outward ABA sweep 2 in aligned frames (a scatter step, with the root's ``(P, z)`` and the
    world's acceleration bound first): ``a' = X(d) a_p + c``, ``qdd = D^-1 (e - U^T a')``,
    ``a = a' + S qdd`` (Rodriguez86 (8.11)-(8.13)); the free root solves its 6x6 system
    (:func:`free_root_solve`)."""
    if "root" in x:
        R, p = free_X(alg, split(x["q"]))
        return free_root_solve(alg, R, p, *root_PZ, split(x["tau"]), split(x["arm"]), world)
    x = _fields(x)
    return aba_steps.smooth_step(alg, (I3, x["d"]), _aligned_S(x), x["c"], x["U"], x["di"], x["e"], parent_a)


def aba_tree(alg, model, lay, nums, qT, qdT, tauT, feT, pack=None):
    """ABA as three :mod:`jaxdyn.tree` sweeps over SoA values in aligned frames (see above; same
    equations as the unrolled form, the free root is the tree's root step)."""
    B, dt = qT.shape[-1], model.dtype
    lx, rx = _tree_inputs(model, nums, feT, q=qT, qd=qdT, tau=tauT)
    zo = _no_fold((jnp.zeros((B,), dt), jnp.ones((B,), dt)))  # the world: R = 1, v = 0
    world = (tuple(zo[int(a)] for a in I3), (zo[0],) * 3, (zo[0],) * 3)
    pack = pack_outputs(pack, "aba")
    _, kin, root_pA = tree.scatter(lay, functools.partial(aba_kin_step, alg), lx, world, rx, pack=pack)
    if kin is not None:
        lx["kin"] = kin
    if rx is not None:
        rx["pA"] = root_pA
    zeros = tree.Zeros(_soa_zeros((ART, MOTION), B, dt))
    _, filt, root_PZ = tree.gather(lay, functools.partial(aba_aligned_filter_step, alg), zeros, lx, rx, pack=pack)
    if filt is not None:
        lx["filt"] = filt
    world = _no_fold(world_acc(model, B))
    _, qdd_l, qdd_r = tree.scatter(lay, functools.partial(aba_aligned_smooth_step, alg, root_PZ, world), lx, world, rx)
    return _assemble(model, qdd_l, qdd_r)


@kept_step
def rnea_fwd_step(alg, world, parent, x):
    """Outward RNEA sweep (a scatter step, the world's acceleration bound first):
    :func:`jaxdyn.algorithms.rnea.forward_step` on the link's numbers; outputs the link's force."""
    I = _inertia_x(x)
    if "root" in x:
        X, S, parent = free_X(alg, split(x["q"])), None, (MOTION, world)
        qd, qdd = split(x["qd"]), split(x["qdd"])
    else:
        X, S = _link_X_S(alg, x, x["q"])
        qd, qdd = _link_slots(x, "qd"), _link_slots(x, "qdd")
    return rnea_steps.forward_step(alg, X, S, qd, qdd, I, wrench(_fe_x(x)), parent)


@kept_step
def rnea_back_step(alg, acc, x):
    """Inward RNEA sweep (a gather step): :func:`jaxdyn.algorithms.rnea.backward_step` on the
    link's force plus its children's."""
    f = alg.add(tree.unpack(x["f"]), acc)
    if "root" in x:
        X = free_X(alg, split(x["q"]))  # the root's contribution to the world is dropped
        _, tau = rnea_steps.backward_step(alg, X, None, split(x["arm"]), split(x["qdd"]), f)
        return None, tau
    X, S = _link_X_S(alg, x, x["q"])
    return rnea_steps.backward_step(alg, X, S, _link_slots(x, "arm"), _link_slots(x, "qdd"), f)


def rnea_tree(alg, model, lay, nums, qT, qdT, qddT, feT, pack=None):
    """RNEA as a :mod:`jaxdyn.tree` scatter (v, a, f) and gather (f, tau) over SoA values."""
    B, dt = qT.shape[-1], model.dtype
    lx, rx = _tree_inputs(model, nums, feT, q=qT, qd=qdT, qdd=qddT)
    world = _no_fold(world_acc(model, B))
    _, lx["f"], f_root = tree.scatter(
        lay,
        functools.partial(rnea_fwd_step, alg, world),
        lx,
        (_soa_zeros(MOTION, B, dt), world),
        rx,
        pack=pack_outputs(pack, "rnea"),
    )
    if rx is not None:
        rx["f"] = f_root
    _, tau_l, tau_r = tree.gather(
        lay, functools.partial(rnea_back_step, alg), _soa_zeros(MOTION, B, dt, model.nb), lx, rx
    )
    return _assemble(model, tau_l, tau_r)


# --- CRBA --------------------------------------------------------------------------------------


def _crba_pair_index(lay):
    """Static gather map for the mass matrix: ``pairs`` ``(r, c)`` with body(r) an ancestor (or
    the body) of body(c), and for every entry of the ``nv x nv`` matrix the pair that holds it
    (``M`` symmetric; ``len(pairs)``, a zero row, where neither body is an ancestor of the other)."""
    db = np.asarray(lay.dof_body)
    anc = np.asarray(lay.ancestor)[db][:, db]
    rs, cs = np.nonzero(anc)
    pos = {(int(r), int(c)): k for k, (r, c) in enumerate(zip(rs, cs))}
    nv = len(db)
    idx = np.full((nv, nv), len(rs), np.int32)
    for r in range(nv):
        for c in range(nv):
            idx[r, c] = pos.get((r, c), pos.get((c, r), len(rs)))
    return rs, cs, idx


@kept_step
def crba_pose_step(alg, ident, parent, x):
    """CRBA scatter step: the link's pose ``(R, p)`` in the common frame (the world, or the free
    root's body frame; ``ident`` is the root's pose) from its parent's; outputs its motion
    subspace and rigid inertia ``(m, h, Ibar)`` in that frame."""
    m, h, Ib = _inertia_x(x)
    if "root" in x:
        return ident, (m, h, Ib)
    X, S = _link_X_S(alg, x, x["q"])
    return crba_steps.world_step(alg, parent, X, S, (m, h, Ib))


def crba_tree(alg, model, lay, nums, qT, pack=None):
    """Mass matrix (Featherstone (6.2); Rodriguez86 (7.7)-(7.11), the link steps of
    :mod:`jaxdyn.algorithms.crba`) in a common frame (the world, or the free root's body frame,
    where the root's ``S`` is ``1_6``): a scatter gives each body's pose ``(R, p)``, its motion
    subspace ``S`` and rigid inertia ``I`` in that frame (``crba.world_step``); composite inertias
    ``Ic`` are subtree sums; ``M[r, c] = S_r^T Ic_{b(c)} S_c`` (``crba.column_force``,
    ``crba.entry``) for body(r) ancestor of body(c) (the other triangle by symmetry),
    ``+ armature`` on the diagonal."""
    B, dt = qT.shape[-1], model.dtype
    lx, rx = _tree_inputs(model, nums, None, q=qT)
    one, zero = jnp.ones((B,), dt), jnp.zeros((B,), dt)
    ident = ((one, zero, zero, zero, one, zero, zero, zero, one), (zero, zero, zero))
    pose_step = functools.partial(crba_pose_step, alg, ident)
    _, link_out, root_I = tree.scatter(
        lay,
        pose_step,
        lx,
        ident if lay.traversal == "unroll" else _no_fold(ident),
        rx,
        pack=pack_outputs(pack, "crba"),
    )
    link_out = tree.unpack(link_out)
    stack = lambda t: jnp.stack([jnp.broadcast_to(jnp.asarray(a, dt), (B,)) for a in t])  # noqa: E731
    stack_n = lambda t: jnp.stack([jnp.broadcast_to(jnp.asarray(a, dt), (len(idx), B)) for a in t], 1)  # noqa: E731
    nb = model.nb
    # body masses do not depend on q: one (nb,) vector broadcast over the batch (an (nb, B)
    # buffer updated with constants would be constant-folded into a literal of the batch's size)
    mass = jnp.zeros((nb,), dt)
    Iw = [None, jnp.zeros((nb, 3, B), dt), jnp.zeros((nb, 6, B), dt)]
    idx = np.asarray(lay.link_bodies)
    S_parts, body_of = [], []
    if lay.floating:
        mass = mass.at[0].set(root_I[0])
        Iw = [None, Iw[1].at[0].set(stack(root_I[1])), Iw[2].at[0].set(stack(root_I[2]))]
        S_parts.append(jnp.broadcast_to(jnp.eye(6, dtype=dt)[:, :, None], (6, 6, B)))
        body_of += [0] * 6
    if len(idx):
        Sw, (m, h, Ib) = link_out
        mass = mass.at[idx].set(m)
        Iw = [None, Iw[1].at[idx].set(jnp.stack(h, 1)), Iw[2].at[idx].set(jnp.stack(Ib, 1))]
        cols = [jnp.concatenate([stack_n(sa), stack_n(sl)], 1) for sa, sl in _cols(Sw)]  # (n, 6, B) each
        S_parts.append(jnp.stack(cols, 1).reshape((-1, 6, B)))  # link j's column c at j k + c
        body_of += list(np.repeat(idx, len(cols)))
    Iw[0] = jnp.broadcast_to(mass[:, None], (nb, B))
    # one (nb, 10, B) array through the subtree sum: one read and one update per link step instead
    # of one per part (deviceless H100, talos at 131k: 9 -> 4 XLA kernels per step; CPU unchanged)
    Ic = alg.keep(tree.subtree_sum(lay, jnp.concatenate([Iw[0][:, None], Iw[1], Iw[2]], 1)))
    Ic = [Ic[:, 0], Ic[:, 1:4], Ic[:, 4:10]]
    S = jnp.concatenate(S_parts)  # (root 6 + links, 6, B) in scan order
    bo = np.asarray(body_of)
    halves = lambda x: (split(x[:, 0:3].swapaxes(0, 1)), split(x[:, 3:6].swapaxes(0, 1)))  # noqa: E731
    # the link steps over stacks of columns: every scalar an (ndof, B) or (npairs, B) array
    F = crba_steps.column_force(
        alg, (Ic[0][bo], split(Ic[1][bo].swapaxes(0, 1)), split(Ic[2][bo].swapaxes(0, 1))), halves(S)
    )
    F = jnp.stack(F[0] + F[1], 1)  # (ndof, 6, B)
    g = jnp.asarray(lay.v_gather)
    S, F = alg.keep((S[g], F[g]))  # dof order
    rs, cs, pidx = _crba_pair_index(lay)
    # one frame: a column's force is the same at every ancestor, M[r, c] = S_r . F_c
    vals = crba_steps.entry(alg, halves(S[rs]), halves(F[cs]))
    arm = model.armature.astype(dt)
    vals = vals + jnp.where(jnp.asarray(rs == cs)[:, None], arm[rs][:, None], 0.0)
    vals = jnp.concatenate([vals, jnp.zeros((1, B), dt)])
    return vals[jnp.asarray(pidx.reshape(-1))]
