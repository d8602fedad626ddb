"""Struct-of-arrays (SoA) batched kernels: ABA, RNEA, CRBA and the ABA Jacobian over a batch.

The generic algorithms (:mod:`jaxdyn.algorithms`) work on one sample with ``(3,3)``/``(6,6)``
arrays and are batched by ``jax.vmap``; on XLA CPU every small matrix product then becomes its
own reduce, which breaks fusion (hundreds of tiny kernels per call). Here the batch is the
*last* axis and every scalar of the recursion is its own ``(B,)`` array: a 3-vector is a tuple
of 3 arrays, a rotation 9, a symmetric 3x3 its 6 upper entries, an articulated inertia
``[[A, B], [B^T, C]]`` its 21 independent entries ``(A sym 6, B 9, C sym 6)`` and a rigid inertia
``(m, h (3), Ibar sym 6)``. All arithmetic is elementwise, so XLA fuses whole link steps into a
few loop kernels, vectorised over the batch (SIMD lanes on CPU, coalesced threads on GPU).

Two traversals (``traversal=`` of each kernel, default ``"auto"``): ``"unroll"`` is a Python
loop over links with static parents and joint types (fastest per sample; compile time grows
with the number of links), ``"scan"`` runs the same link steps through
:func:`jaxdyn.tree.scatter`/:func:`~jaxdyn.tree.gather` (``lax.scan`` over links; compile time
flat in the number of links; the joint data are then arrays, with a type-agnostic
revolute/prismatic transform). ``"auto"`` unrolls models with at most
:data:`SOA_UNROLL_MAX_LINKS` moving links and scans the others. The default is the model's own
traversal (:meth:`jaxdyn.Model.with_traversal`), whose single-sample ``"latency"`` form is
``"unroll"`` here.

Structural zeros (the empty half of a motion subspace, the zero velocity of the world, the
zero entries of skew matrices) are Python ``0.0`` literals at trace time and are skipped by the
arithmetic of :mod:`jaxdyn.scalars`, so they cost nothing; the SoA spatial algebra
(:class:`~jaxdyn.kernels.soa_algebra.SoAAlgebra`) is in :mod:`jaxdyn.kernels.soa_algebra`. Model numbers
(placements, axes, masses, centres of mass, inertias, gravity, armature) stay JAX arrays read
from the model: the kernels are differentiable w.r.t. the model and can take it as a ``jit``
argument (see benchmarks/results/kernels-cpu.md for compile times per traversal).

Equations are those of :mod:`jaxdyn.algorithms` (Rodriguez86; Featherstone08, tables 5.1, 6.2,
7.1; keys in docs/references.md):

* joint transform ``X = placement o X_J(q)``; with Rodrigues' formula for a unit axis ``u``,
  ``R_J = u u^T + cos q (1 - u u^T) + sin q [u]x``, so ``R = A0 + cos q A1 + sin q A2`` with the
  model-only matrices ``A0 = R0 u u^T``, ``A1 = R0 - A0``, ``A2 = R0 [u]x`` (prismatic:
  ``R = R0``, ``p = p0 + q R0 u``);
* RNEA: the link steps of :mod:`jaxdyn.algorithms.rnea` themselves
  (:func:`~jaxdyn.algorithms.rnea.forward_step`, :func:`~jaxdyn.algorithms.rnea.backward_step`),
  run with :class:`SoAAlgebra`;
* ABA (Rodriguez86 Result 8.1, (8.3)-(8.13)): the link steps of :mod:`jaxdyn.algorithms.aba`
  (``velocity_step``, ``bias_force``, ``filter_step``, ``to_parent``, ``smooth_step``) run with
  :class:`SoAAlgebra`: inward ``U = P S``, ``D = S^T U + armature``,
  ``e = tau - S^T z``, ``P+ = P - U D^-1 U^T``, ``z+ = z + P+ c + U D^-1 e``,
  ``P_p += X* P+ X``, ``z_p += X* z+``; outward ``a' = X^-1 a_p + c``,
  ``qdd = D^-1 (e - U^T a')``, ``a = a' + S qdd``; world acceleration ``[0; -g]``. The scanned
  traversals write these in *aligned* frames (see :func:`_aba_tree`), where ``X`` is a translation;
* CRBA (Rodriguez86 (7.7)-(7.11); Featherstone table 6.2): composite inertias
  ``Ic_p += X* Ic X`` (rigid, compact), ``F = Ic_i S_i``, ``M_ii = S_i^T F + armature``, then
  ``F <- X* F`` up the ancestors ``j``: ``M_ji = S_j^T F``.

A free-floating root (``joint_types[0] == "free"``, ``q = [x, y, z, qw, qx, qy, qz]``,
body-frame velocity ``[omega; v]``, as :func:`jaxdyn.aba`) has ``S = 1_6``: its ABA step solves
``D qdd = e - P a'`` with an unrolled ``L D L^T`` factorisation of the 6x6 ``D``. A spherical
joint (``q`` a unit quaternion ``[w, x, y, z]``, velocity the angular velocity in the child frame,
as :func:`jaxdyn.joints.link_poses`) is the same steps with ``R = R0 R(q)`` and the three
columns ``S = [1_3; 0]``: its ``D`` is 3x3, solved the same way. In the scanned traversals every
link of a model with a spherical joint then has three dof slots (a 1-dof link's two extra
columns of ``S`` are zeros, their ``D`` entries 1, their ``qdd`` 0), as in the one-sample
algorithms' layout.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from .. import joints, spatial, tree
from ..algorithms import aba as aba_steps
from ..algorithms import crba as crba_steps
from ..algorithms import rnea as rnea_steps
from ..algorithms.common import full_precision
from ..model import Model
from .soa_algebra import (
    _UPPER,
    _ZERO3,
    SoAAlgebra,
    _add,
    _cols,
    _computed_once,
    _dot,
    _force_to_parent,
    _inertia_apply,
    _keep,
    _kept,
    _kept_step,
    _mm,
    _mv,
    _rigid_to_art,
    _rigid_to_parent,
    _rot_sym,
    _v_add,
)

# --- model numbers (JAX arrays; no per-sample work) ---------------------------------------------


def _check_joints(model: Model, fn: str):
    """For the fused kernels (:mod:`jaxdyn.kernels.pallas`, :mod:`~jaxdyn.kernels.pallas_scan`),
    which take 1-dof joints and a free root only."""
    for j, t in enumerate(model.joint_types):
        if t == "spherical":
            raise ValueError(
                f"{fn}: joint '{model.joint_names[j]}' is spherical, which the fused kernels do not "
                f"support; use jaxdyn.{fn.replace('_pallas', '')} with jax.vmap for this model"
            )


@full_precision
def _model_numbers(model: Model):
    """Per-body model-only arrays: the joint numbers of (J1) (:func:`jaxdyn.joints.one_dof_numbers`:
    ``A0, A1, A2, p0``, and ``d, sl`` when a joint is prismatic, ``sa``) and the rigid inertia
    ``(m, h, Ibar)`` about the body origin (Rodriguez86 (3.1))."""
    dt = model.dtype
    R0, p0, u = model.placement_R.astype(dt), model.placement_p.astype(dt), model.axis.astype(dt)
    pri = np.array([t == "prismatic" for t in model.joint_types])
    jn = joints.one_dof_numbers(R0, p0, u, pri)
    m, c, Ic = model.mass.astype(dt), model.com.astype(dt), model.inertia.astype(dt)
    cc = jnp.sum(c * c, -1)[:, None, None] * jnp.eye(3, dtype=dt) - c[:, :, None] * c[:, None, :]
    Ib = Ic + m[:, None, None] * cc
    Ib = 0.5 * (Ib + jnp.swapaxes(Ib, -1, -2))  # read symmetrically: gradients w.r.t. the inertia stay symmetric
    iu = np.array(_UPPER)
    Ib6 = Ib[:, iu[:, 0], iu[:, 1]]
    out = {
        "A0": jn.A0.reshape(-1, 9),
        "A1": jn.A1.reshape(-1, 9),
        "A2": jn.A2.reshape(-1, 9),
        "p0": jn.p0,
        "sa": jn.sa,
        "m": m,
        "h": m[:, None] * c,
        "Ib": Ib6,
    }
    if jn.d is not None:
        out["d"], out["sl"] = jn.d, jn.sl
    return out


def _split(x):
    """Rows of an array as a tuple (``x[0], x[1], ...``); a tuple (of scalars, as the fused
    scanned kernels of :mod:`jaxdyn.kernels.pallas` load them) is returned as it is."""
    if isinstance(x, tuple):
        return x
    return tuple(x[k] for k in range(x.shape[0]))


def _body(nums, i):
    """The per-body numbers of body ``i`` as tuples of 0-d arrays (or of Python floats, for the
    constants of :func:`model_constants`)."""
    if isinstance(nums, Constants):
        return {k: v[i] for k, v in nums.bodies.items()}
    return {k: (v[i] if v.ndim == 1 else _split(v[i])) for k, v in nums.items()}


class Constants:
    """A model's numbers as Python floats (:func:`model_constants`): per-body ``bodies[k][i]``
    (scalars or tuples), ``armature`` per dof and the world acceleration ``world``. Traced with
    these, the unrolled kernels fold the model into the program (exact zeros of axes and
    placements drop out) and capture no arrays: what a Pallas kernel body needs."""

    def __init__(self, model: Model):
        nums = {k: np.asarray(v, np.float64) for k, v in _model_numbers(model).items()}
        self.bodies = {k: [float(x) if v.ndim == 1 else tuple(float(y) for y in x) for x in v] for k, v in nums.items()}
        self.armature = [float(a) for a in np.asarray(model.armature, np.float64)]
        g = [float(x) for x in np.asarray(model.gravity, np.float64)]
        self.world = (_ZERO3, (-g[0], -g[1], -g[2]))


@_kept
def _joint_X(t, bn, qi):
    """Placement of body ``i`` in its parent for a 1-dof joint of static type ``t``, (J1)."""
    return joints.one_dof_motion(bn["A0"], bn["A1"], bn["A2"], bn["p0"], bn.get("d"), qi, t)


def _joint_S(t, bn):
    """Motion subspace ``(sa, sl)`` of (J1): revolute ``[u; 0]``, prismatic ``[0; u]``."""
    return joints.one_dof_subspace(bn["sa"], bn.get("sl"), t)


# a spherical joint's S = [1_3; 0] (Python literals: its structural zeros cost nothing)
_SPHERICAL_S = [(tuple(float(k == j) for j in range(3)), _ZERO3) for k in range(3)]


@_kept
def _spherical_X(bn, quat):
    """Placement of body ``i`` in its parent for a spherical joint: ``(R0 R(quat), p0)``, with
    ``R0 = A0 + A1`` (J1) at ``q = 0``) and ``R(quat)`` :func:`jaxdyn.spatial.quaternion_matrix`
    (as :func:`jaxdyn.joints.link_poses`)."""
    R0 = tuple(_add(a, b) for a, b in zip(bn["A0"], bn["A1"]))
    return _mm(R0, spatial.quaternion_matrix(*quat)), tuple(bn["p0"])


def _slots(xT, vs, S):
    """A joint's entries of an ``(nv, ...)`` per-dof value starting at ``vs``: one scalar for a
    1-dof joint, a list for a multi-dof one (``S`` a list; the free root is handled apart)."""
    return [xT[vs + k] for k in range(len(S))] if isinstance(S, list) else xT[vs]


def _set_slots(out, vs, S, x):
    """Write a joint's value ``x`` (from a link step) into the per-dof list ``out`` at ``vs``: the
    inverse of :func:`_slots`."""
    if isinstance(S, list):
        out[vs : vs + len(S)] = x
    else:
        out[vs] = x


@_kept
def _free_X(qr):
    """Pose of a free root from ``[x, y, z, qw, qx, qy, qz]`` (:func:`jaxdyn.joints.free_pose`)."""
    return spatial.quaternion_matrix(*qr[3:7]), tuple(qr[0:3])


# --- argument handling ------------------------------------------------------------------------


def _prepare(model: Model, fn: str, **args):
    sizes = {"q": (model.nq,), "f_ext": (model.nb, 6)}
    batch, single, out = None, None, {}
    for name, x in args.items():
        if x is None:
            out[name] = None
            continue
        want = sizes.get(name, (model.nv,))
        shape = tuple(jnp.shape(x))
        is_single = shape == want
        if not is_single and (len(shape) != len(want) + 1 or shape[1:] != want):
            raise ValueError(
                f"{fn}: argument '{name}' has shape {shape}, expected (B, {', '.join(map(str, want))}) "
                f"or {want} for model '{model.name}' (nq={model.nq}, nv={model.nv}, nb={model.nb})"
            )
        if single is None:
            single = is_single
        elif single != is_single:
            raise ValueError(f"{fn}: argument '{name}' has shape {shape}: mix of batched and single inputs")
        x = jnp.asarray(x).astype(model.dtype)
        if is_single:
            x = x[None]
        if batch is None:
            batch = x.shape[0]
        elif x.shape[0] != batch:
            raise ValueError(
                f"{fn}: argument '{name}' has batch size {x.shape[0]}, expected {batch} (from the first argument)"
            )
        out[name] = jnp.moveaxis(x, 0, -1)  # batch last
    return batch, single, out


# Whether the scanned traversals stack each link step's outputs into one array
# (:class:`jaxdyn.tree.Packed`): for the ABA and the CRBA on a GPU backend, where each stacked scan
# output otherwise costs its own kernel per link step. Deviceless H100 compile at batch 131,072,
# XLA kernels per link step summed over the sweeps: talos ABA 56 -> 20, RNEA 18 -> 13, CRBA 30 ->
# 16 (11 with the one-array subtree sum in _crba_tree), chain1024 ABA 43 -> 19. On an H100, same
# process at batch 131,072 (benchmarks/results/h100-2026-11-27.md, benchmarks/pack_ab.py): ABA
# 1.26-1.37x, CRBA 1.01-1.18x; the RNEA (one force per link step) 1.05x on talos but 0.64x on
# chain128, so the RNEA is never packed. Not on CPU, where (with fusion off) the stacking was one
# more copy of every output: same-process A/B at batch 4096, talos and chain32 ABA/RNEA/CRBA
# 0.82-1.12x (benchmarks/results/cpu-2026-11-23-pack-ab.md; 0.72-1.14x in an earlier run). The
# kernels' private ``_pack`` argument forces it (tests; deviceless GPU compiles on a CPU-only host).
def _pack_outputs(pack=None, algo=None):
    if pack is not None:
        return bool(pack)
    return algo != "rnea" and jax.default_backend() != "cpu"


def _rows(x, B, dtype):
    """Stack SoA scalars (literals, 0-d model numbers or (B,) arrays) to a ``(k, B)`` array."""
    return jnp.stack([jnp.broadcast_to(jnp.asarray(r, dtype), (B,)) for r in x])


def _finish(rows, B, dtype, single, shape):
    out = jnp.moveaxis(rows.reshape(shape + (B,)), -1, 0)
    return out[0] if single else out


# --- unrolled traversals (Python loop over links, static parents and joint types) -----------------


# --- link steps shared by both traversals (SoA tuples in and out) -------------------------------


def _world_acc(model, B=None):
    """``[0; -g]`` (Rodriguez86 R3), as SoA scalars (``(B,)`` arrays when ``B`` is given)."""
    g = model.gravity.astype(model.dtype)
    la = (-g[0], -g[1], -g[2])
    if B is None:
        return _ZERO3, la
    z = jnp.zeros((B,), model.dtype)
    return (z, z, z), tuple(jnp.broadcast_to(x, (B,)) for x in la)


@_kept
def _velocity(R, p, S, qd, parent):
    """:func:`jaxdyn.algorithms.aba.velocity_step` (``parent=None``: the world at rest):
    ``((w, v), c)``."""
    return aba_steps.velocity_step(SoAAlgebra, (R, p), S, qd, parent)


@_kept
def _bias_force(m, h, Ib, w, v, fe):
    """:func:`jaxdyn.algorithms.aba.bias_force` (``fe``: six scalars or None)."""
    return aba_steps.bias_force(SoAAlgebra, (m, h, Ib), (w, v), _wrench(fe))


@_kept
def _riccati(P, Z, S, arm, tau, c, to_parent=True):
    """:func:`jaxdyn.algorithms.aba.filter_step`: ``(U, D^-1, e, P+, z+)``."""
    U, _, Dinv, e, _, Pa, za = aba_steps.filter_step(SoAAlgebra, P, Z, S, arm, tau, c, to_parent)
    return U, Dinv, e, Pa, za


@_kept
def _smooth(R, p, S, c, U, di, e, parent_a):
    """:func:`jaxdyn.algorithms.aba.smooth_step`: ``(a, qdd)``."""
    return aba_steps.smooth_step(SoAAlgebra, (R, p), S, c, U, di, e, parent_a)


def _free_root_solve(R, p, P, Z, tau6, arm6, world):
    """The free root's filter and smoother steps (``S = 1_6``, so ``U = P``,
    ``D = P + diag(armature)``, ``c = v x v = 0``): ``(a, qdd)``, ``D`` solved by an unrolled
    ``L D L^T`` factorisation."""
    U, _, F, e, *_ = aba_steps.filter_step(SoAAlgebra, P, Z, None, list(arm6), list(tau6), _MOTION, False)
    return aba_steps.smooth_step(SoAAlgebra, (R, p), None, _MOTION, U, F, e, world)


# --- unrolled traversal (Python loop over links, static parents and joint types) ------------------


def _kinematics_unroll(model, nums, qT):
    """Per body: numbers, placement ``(R, p)`` in the parent, motion subspace (None for a free
    root)."""
    lay = model.layout
    bodies = []
    for i, t in enumerate(model.joint_types):
        bn = _body(nums, i)
        qs = int(lay.q_start[i])
        if t == "free":
            bodies.append((bn, _free_X(tuple(qT[qs + k] for k in range(7))), None))
        elif t == "spherical":
            bodies.append((bn, _spherical_X(bn, tuple(qT[qs + k] for k in range(4))), _SPHERICAL_S))
        else:
            bodies.append((bn, _joint_X(t, bn, qT[qs]), _joint_S(t, bn)))
    return bodies


def _wrench(fe):
    """Six scalars ``[n; f]`` as a force ``(n, f)`` of :class:`SoAAlgebra` (None stays None)."""
    return None if fe is None else (tuple(fe[0:3]), tuple(fe[3:6]))


def _fe(feT, i):
    return None if feT is None else tuple(feT[i, k] for k in range(6))


def _aba_unroll(model, nums, qT, qdT, tauT, feT):
    lay = model.layout
    parents = model.parents
    arm = nums.armature if isinstance(nums, Constants) else model.armature.astype(model.dtype)
    kin = _kinematics_unroll(model, nums, qT)
    nb = model.nb
    V, Cb, P, Z = [None] * nb, [None] * nb, [None] * nb, [None] * nb
    # 1. outward: velocities v, bias accelerations c = v x S qd, bias forces z = v x* I v - f_ext
    for i in range(nb):
        bn, (R, p), S = kin[i]
        vs = int(lay.v_start[i])
        if S is None:  # free root: v = qd[0:6] (body frame), c = v x v = 0
            V[i], Cb[i] = (tuple(qdT[vs : vs + 3]), tuple(qdT[vs + 3 : vs + 6])), (_ZERO3, _ZERO3)
        else:
            pa = parents[i]
            V[i], Cb[i] = _velocity(R, p, S, _slots(qdT, vs, S), None if pa < 0 else V[pa])
        Z[i] = _bias_force(bn["m"], bn["h"], bn["Ib"], *V[i], _fe(feT, i))
        P[i] = SoAAlgebra.art_of((bn["m"], bn["h"], bn["Ib"]))
    # 2. inward Riccati sweep (the filter)
    U, Dinv, E = [None] * nb, [None] * nb, [None] * nb
    for i in reversed(range(nb)):
        bn, (R, p), S = kin[i]
        if S is None:
            continue
        vs = int(lay.v_start[i])
        pa = parents[i]
        P[i], Z[i] = _keep((P[i], Z[i]))  # the sums over the children, read by many terms
        U[i], Dinv[i], E[i], Pa, za = _riccati(
            P[i], Z[i], S, _slots(arm, vs, S), _slots(tauT, vs, S), Cb[i], to_parent=pa >= 0
        )
        if pa < 0:
            continue
        (An, Bn, Cn), (fn, ff) = aba_steps.to_parent(SoAAlgebra, (R, p), Pa, za)
        Ap, Bp, Cp = P[pa]
        P[pa] = (_v_add(Ap, An), _v_add(Bp, Bn), _v_add(Cp, Cn))
        Z[pa] = (_v_add(Z[pa][0], fn), _v_add(Z[pa][1], ff))
    # 3. outward accelerations (the smoother)
    Acc = [None] * nb
    qdd = [None] * model.nv
    world = nums.world if isinstance(nums, Constants) else _world_acc(model)
    for i in range(nb):
        bn, (R, p), S = kin[i]
        vs = int(lay.v_start[i])
        if S is None:
            P[i], Z[i] = _keep((P[i], Z[i]))
            Acc[i], x = _free_root_solve(R, p, P[i], Z[i], tauT[vs : vs + 6], arm[vs : vs + 6], world)
            qdd[vs : vs + 6] = x
            continue
        pa = parents[i]
        Acc[i], x = _smooth(R, p, S, Cb[i], U[i], Dinv[i], E[i], world if pa < 0 else Acc[pa])
        _set_slots(qdd, vs, S, x)
    return qdd


def _rnea_unroll(model, nums, qT, qdT, qddT, feT):
    lay = model.layout
    parents = model.parents
    const = isinstance(nums, Constants)  # Python floats only: traceable inside a Pallas kernel
    arm = nums.armature if const else model.armature.astype(model.dtype)
    kin = _kinematics_unroll(model, nums, qT)
    nb = model.nb
    world = nums.world if const else _world_acc(model)
    V, Acc, F = [None] * nb, [None] * nb, [None] * nb
    # outward, then inward: the link steps of jaxdyn.algorithms.rnea (a free root: S = 1_6)
    for i in range(nb):
        bn, X, S = kin[i]
        vs = int(lay.v_start[i])
        pa = parents[i]
        if S is None:
            qd, qdd = tuple(qdT[vs : vs + 6]), tuple(qddT[vs : vs + 6])
        else:
            qd, qdd = _slots(qdT, vs, S), _slots(qddT, vs, S)
        parent = (_MOTION, world) if pa < 0 else (V[pa], Acc[pa])
        (V[i], Acc[i]), F[i] = _keep(
            rnea_steps.forward_step(
                SoAAlgebra, X, S, qd, qdd, (bn["m"], bn["h"], bn["Ib"]), _wrench(_fe(feT, i)), parent
            )
        )
    tau = [None] * model.nv
    for i in reversed(range(nb)):
        bn, X, S = kin[i]
        vs = int(lay.v_start[i])
        if S is None:
            _, tau[vs : vs + 6] = rnea_steps.backward_step(
                SoAAlgebra, X, S, arm[vs : vs + 6], qddT[vs : vs + 6], _keep(F[i])
            )
            continue
        fp, x = rnea_steps.backward_step(SoAAlgebra, X, S, _slots(arm, vs, S), _slots(qddT, vs, S), _keep(F[i]))
        _set_slots(tau, vs, S, x)
        pa = parents[i]
        if pa >= 0:
            F[pa] = SoAAlgebra.add(F[pa], fp)
    return tau


def _crba_unroll(model, nums, qT):
    """Mass matrix ``M(q) + diag(armature)`` as ``nv * nv`` row-major scalars, unrolled over the
    tree (Featherstone table 6.2; Rodriguez86 (7.7)-(7.11)): composite inertias ``Ic_p += X* Ic X``
    inward (rigid, compact), then per dof ``F = Ic_i S_i``, ``M_ii = S_i^T F + armature`` and
    ``F <- X* F`` up the ancestors ``j``: ``M_ji = M_ij = S_j^T F``. A free root's ``S`` is
    ``1_6`` (its six unit motions). Entries of bodies on different branches are exact zeros."""
    lay = model.layout
    parents = model.parents
    arm = nums.armature if isinstance(nums, Constants) else model.armature.astype(model.dtype)
    kin = _kinematics_unroll(model, nums, qT)
    nb, nv = model.nb, model.nv
    Ic = [(bn["m"], bn["h"], bn["Ib"]) for bn, _, _ in kin]
    for i in reversed(range(nb)):
        Ic[i] = _keep(Ic[i])  # with the children's inertias added
        pa = parents[i]
        if pa >= 0:
            _, (R, p), _ = kin[i]
            m, h, Ib = _rigid_to_parent(R, p, *Ic[i])
            Ic[pa] = (_add(Ic[pa][0], m), _v_add(Ic[pa][1], h), _v_add(Ic[pa][2], Ib))
    e = [tuple(float(k == j) for j in range(3)) for k in range(3)]
    unit = [(e[k], _ZERO3) for k in range(3)] + [(_ZERO3, e[k]) for k in range(3)]  # a free root's S = 1_6

    def subspace(i):
        S = kin[i][2]
        return unit if S is None else S if isinstance(S, list) else [S]

    M = [[0.0] * nv for _ in range(nv)]
    for i in range(nb):
        vs = int(lay.v_start[i])
        for c, Sc in enumerate(subspace(i)):
            col = vs + c
            F = _inertia_apply(*Ic[i], *Sc)
            for r, Sr in enumerate(subspace(i)):
                M[vs + r][col] = _add(_dot(Sr[0], F[0]), _dot(Sr[1], F[1]))
            M[col][col] = _add(M[col][col], arm[col])
            j = i
            while parents[j] >= 0:
                _, (R, p), _ = kin[j]
                F = _force_to_parent(R, p, *F)
                j = parents[j]
                vj = int(lay.v_start[j])
                for r, Sr in enumerate(subspace(j)):
                    M[vj + r][col] = M[col][vj + r] = _add(_dot(Sr[0], F[0]), _dot(Sr[1], F[1]))
    return [x for row in M for x in row]


# --- scanned traversal (jaxdyn.tree scatter/gather over links or depth levels) --------------------


def _link_numbers(model, nums):
    """Per scanned link (leading axis n, in ``layout.link_bodies`` order): the joint numbers of
    (J1) (:func:`jaxdyn.joints.one_dof_numbers`; without prismatic joints ``d`` and the linear
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
    x["S3"] = jnp.swapaxes(joints.link_subspaces(lay, model.axis.astype(model.dtype)[idx]), -1, -2)
    for k in ("sa", "sl"):  # in S3
        x.pop(k, None)
    return x


@_kept
def _link_X_S(x, q):
    """Placement and motion subspace, (J1), of a scanned link from :func:`_link_numbers`; with
    three dof slots (:func:`_tree_inputs`: ``q = [angle, w, x, y, z]``, the angle 0 on a
    spherical link and the quaternion ``[1, 0, 0, 0]`` on the others) ``R = R(J1)(angle)
    R(quat)`` and ``S`` the list of the three columns."""
    d = _split(x["d"]) if "d" in x else None
    angle = q[0] if "S3" in x else q
    R, p = joints.one_dof_motion(_split(x["A0"]), _split(x["A1"]), _split(x["A2"]), _split(x["p0"]), d, angle, "either")
    if "S3" in x:
        S3 = x["S3"]
        cols = [(tuple(S3[c, r] for r in range(3)), tuple(S3[c, 3 + r] for r in range(3))) for c in range(3)]
        return (_mm(R, spatial.quaternion_matrix(*[q[k] for k in range(1, 5)])), p), cols
    sl = _split(x["sl"]) if "sl" in x else None
    return (R, p), joints.one_dof_subspace(_split(x["sa"]), sl, "either")


def _link_slots(x, name):
    """A scanned link's per-dof value ``name``: a scalar, or the list of its three slots."""
    return list(_split(x[name])) if "S3" in x else x[name]


def _inertia_x(x):
    return x["m"], _split(x["h"]), _split(x["Ib"])


def _tree_inputs(model, nums, feT, **per_dof):
    """``(link_x, root_x)`` for :mod:`jaxdyn.tree`: the model numbers of each scanned link plus
    its per-sample ``(n, B)`` slots of ``per_dof`` (``q`` and the ``(nv, B)`` arrays), and the
    free root's numbers and slots (or None)."""
    lay = model.layout
    lx = _link_numbers(model, nums)
    for k, a in per_dof.items():
        if lay.k == 1:
            lx[k] = a[lay.link_q[:, 0] if k == "q" else lay.link_v[:, 0]]
            continue
        a = jnp.concatenate([a, jnp.zeros_like(a[:1])])  # the padding slot reads a zero
        if k != "q":
            lx[k] = a[lay.link_v]  # (n, 3, B)
            continue
        sph = jnp.asarray(lay.is_sph)[:, None]
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
    return _split(x["fe"]) if "fe" in x else None


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


_MOTION = (_ZERO3, _ZERO3)
_ART = ((0.0,) * 6, (0.0,) * 9, (0.0,) * 6)


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

_I3 = (1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0)

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
    """``(Sa, Sl)`` of a link stored by :func:`_aba_kin_step` (a revolute-only model stores
    ``Sa`` only: its ``Sl`` stays a literal zero)."""
    S = x["S"]
    return S if isinstance(S, list) or len(S) == 2 else (S[0], _ZERO3)


@_kept_step
def _aba_kin_step(parent, x):
    """Outward ABA sweep 1 in aligned frames (a scatter step): from the parent's orientation
    ``R_p`` and velocity, the link's ``R = R_p R_J``, offset ``d = R_p p``, motion subspace
    ``S = R s`` (the axis passes through the link's origin), velocity ``v = X(d) v_p + S qd``
    (Rodriguez86 (5.1)), bias acceleration ``c = v x S qd`` (Rodriguez86 (8.3)), rigid inertia
    ``(m, R h, R Ibar R^T)`` and bias force ``v x* I v - f_ext`` (Rodriguez86 (8.24)); carries
    ``(R, w, v)``."""
    m, h, Ib = _inertia_x(x)
    if "root" in x:  # the root's frame is the common one: R = 1
        w, v = _split(x["qd"][0:3]), _split(x["qd"][3:6])
        return (_I3, w, v), _bias_force(m, h, Ib, w, v, _fe_x(x))
    Rp, wp, vp = parent
    (RJ, pJ), S_J = _link_X_S(x, x["q"])
    R, d = _mm(Rp, RJ), _mv(Rp, pJ)
    Sw = [(_mv(R, sa), _mv(R, sl)) for sa, sl in _cols(S_J)]
    S = Sw if isinstance(S_J, list) else Sw[0]
    (w, v), c = aba_steps.velocity_step(SoAAlgebra, (_I3, d), S, _link_slots(x, "qd"), (wp, vp))
    hR, IbR = _mv(R, h), _rot_sym(R, Ib)
    fe = _fe_x(x)
    if fe is not None:
        fe = _mv(R, fe[0:3]) + _mv(R, fe[3:6])
    if not isinstance(S, list) and "d" not in x:  # revolute only: the linear half is zero
        S = (S[0],)
    return (R, w, v), (d, S, c, (hR, IbR), _bias_force(m, hR, IbR, w, v, fe))


@_kept_step
def _aba_aligned_filter_step(acc, x):
    """Inward ABA sweep in aligned frames (a gather step): ``P = I + sum P+_children``, the Riccati
    filter (Rodriguez86 (8.5)-(8.9)) and the translation of ``(P+, z+)`` to the parent; outputs
    ``(U, D^-1, e)`` (the root returns its ``(P, z)``)."""
    x = _fields(x)
    m, h, Ib = (x["m"], *x["I"]) if "I" in x else _inertia_x(x)  # links: rotated in the kinematics sweep
    P = tuple(_v_add(a, b) for a, b in zip(_rigid_to_art(m, h, Ib), acc[0]))
    Z = tuple(_v_add(a, b) for a, b in zip(x["pA"], acc[1]))
    if "root" in x:
        return None, (P, Z)
    U, di, e, Pa, za = _riccati(P, Z, _aligned_S(x), _link_slots(x, "arm"), _link_slots(x, "tau"), x["c"])
    return aba_steps.to_parent(SoAAlgebra, (_I3, x["d"]), Pa, za), (U, di, e)


@_kept_step
def _aba_aligned_smooth_step(root_PZ, world, parent_a, x):
    """Outward ABA sweep 2 in aligned frames (a scatter step, with the root's ``(P, z)`` and the
    world's acceleration bound first): ``a' = X(d) a_p + c``, ``qdd = D^-1 (e - U^T a')``,
    ``a = a' + S qdd`` (Rodriguez86 (8.11)-(8.13)); the free root solves its 6x6 system
    (:func:`_free_root_solve`)."""
    if "root" in x:
        R, p = _free_X(_split(x["q"]))
        return _free_root_solve(R, p, *root_PZ, _split(x["tau"]), _split(x["arm"]), world)
    x = _fields(x)
    return aba_steps.smooth_step(SoAAlgebra, (_I3, x["d"]), _aligned_S(x), x["c"], x["U"], x["di"], x["e"], parent_a)


def _aba_tree(model, lay, nums, qT, qdT, tauT, feT, pack=None):
    """ABA as three :mod:`jaxdyn.tree` sweeps over SoA values in aligned frames (see above; same
    equations as the unrolled form, the free root is the tree's root step)."""
    B, dt = qT.shape[-1], model.dtype
    lx, rx = _tree_inputs(model, nums, feT, q=qT, qd=qdT, tau=tauT)
    zo = _no_fold((jnp.zeros((B,), dt), jnp.ones((B,), dt)))  # the world: R = 1, v = 0
    world = (tuple(zo[int(a)] for a in _I3), (zo[0],) * 3, (zo[0],) * 3)
    pack = _pack_outputs(pack, "aba")
    _, kin, root_pA = tree.scatter(lay, _aba_kin_step, lx, world, rx, pack=pack)
    if kin is not None:
        lx["kin"] = kin
    if rx is not None:
        rx["pA"] = root_pA
    zeros = tree.Zeros(_soa_zeros((_ART, _MOTION), B, dt))
    _, filt, root_PZ = tree.gather(lay, _aba_aligned_filter_step, zeros, lx, rx, pack=pack)
    if filt is not None:
        lx["filt"] = filt
    world = _no_fold(_world_acc(model, B))
    _, qdd_l, qdd_r = tree.scatter(lay, functools.partial(_aba_aligned_smooth_step, root_PZ, world), lx, world, rx)
    return _assemble(model, qdd_l, qdd_r)


@_kept_step
def _rnea_fwd_step(world, parent, x):
    """Outward RNEA sweep (a scatter step, the world's acceleration bound first):
    :func:`jaxdyn.algorithms.rnea.forward_step` on the link's numbers; outputs the link's force."""
    I = _inertia_x(x)
    if "root" in x:
        X, S, parent = _free_X(_split(x["q"])), None, (_MOTION, world)
        qd, qdd = _split(x["qd"]), _split(x["qdd"])
    else:
        X, S = _link_X_S(x, x["q"])
        qd, qdd = _link_slots(x, "qd"), _link_slots(x, "qdd")
    return rnea_steps.forward_step(SoAAlgebra, X, S, qd, qdd, I, _wrench(_fe_x(x)), parent)


@_kept_step
def _rnea_back_step(acc, x):
    """Inward RNEA sweep (a gather step): :func:`jaxdyn.algorithms.rnea.backward_step` on the
    link's force plus its children's."""
    f = SoAAlgebra.add(tree.unpack(x["f"]), acc)
    if "root" in x:
        X = _free_X(_split(x["q"]))  # the root's contribution to the world is dropped
        _, tau = rnea_steps.backward_step(SoAAlgebra, X, None, _split(x["arm"]), _split(x["qdd"]), f)
        return None, tau
    X, S = _link_X_S(x, x["q"])
    return rnea_steps.backward_step(SoAAlgebra, X, S, _link_slots(x, "arm"), _link_slots(x, "qdd"), f)


def _rnea_tree(model, lay, nums, qT, qdT, qddT, feT, pack=None):
    """RNEA as a :mod:`jaxdyn.tree` scatter (v, a, f) and gather (f, tau) over SoA values."""
    B, dt = qT.shape[-1], model.dtype
    lx, rx = _tree_inputs(model, nums, feT, q=qT, qd=qdT, qdd=qddT)
    world = _no_fold(_world_acc(model, B))
    _, lx["f"], f_root = tree.scatter(
        lay,
        functools.partial(_rnea_fwd_step, world),
        lx,
        (_soa_zeros(_MOTION, B, dt), world),
        rx,
        pack=_pack_outputs(pack, "rnea"),
    )
    if rx is not None:
        rx["f"] = f_root
    _, tau_l, tau_r = tree.gather(lay, _rnea_back_step, _soa_zeros(_MOTION, B, dt, model.nb), lx, rx)
    return _assemble(model, tau_l, tau_r)


# --- public entry points ---------------------------------------------------------------------------

TRAVERSALS = ("auto", "unroll", "scan")
# "auto" unrolls models with at most this many moving links and scans the rest (the free root does
# not count). Unrolled SoA programs are the fastest per sample but compile time grows with the
# link count (talos, 38 links: ~80 s on the 2-core CPU); the scanned form compiles in a time flat
# in the link count. Measured in benchmarks/results/kernels-cpu.md. Beyond that the tree is
# scanned link by link on every backend.
SOA_UNROLL_MAX_LINKS = 12


def _traversal(model, traversal):
    """The kernels' traversal: ``traversal``, else the model's; the model's ``"latency"`` (a
    single-sample form of the generic algorithms) is ``"unroll"`` here."""
    t = traversal or model.traversal
    if t == "latency":
        t = "unroll"
    if t not in TRAVERSALS:
        raise ValueError(f"unknown traversal '{t}', choose one of {', '.join(TRAVERSALS)}")
    if t == "auto":
        t = "unroll" if len(model.with_traversal("scan").layout.link_bodies) <= SOA_UNROLL_MAX_LINKS else "scan"
    return t


# Batches larger than this are processed in chunks of this many samples (``lax.map`` over
# chunks) on CPU: every value a link step computes once (see _keep) is a (B,) buffer, so a
# chunk keeps them in cache and caps the memory (panda ABA at B = 2^20, every intermediate a
# buffer: 2.6 GB of XLA buffers unchunked). On other backends the batch goes in whole (``chunk=None``).
CPU_CHUNK = 16384


def _chunk(chunk, B, fn):
    if chunk == "auto":
        chunk = CPU_CHUNK if jax.default_backend() == "cpu" else None
    if chunk is not None and (not isinstance(chunk, int) or chunk < 1):
        raise ValueError(f"{fn}: argument 'chunk' must be a positive int, None or 'auto', got {chunk!r}")
    return chunk if chunk is not None and B > chunk else None


def _run(model, fn, unrolled, scanned, traversal, chunk, pack, **args):
    B, single, a = _prepare(model, fn, **args)
    nums = _model_numbers(model)
    t = _traversal(model, traversal)
    vals = list(a.values())

    def rows_of(*vals):
        with _computed_once(vals[0]):
            if t == "unroll":
                return _rows(unrolled(model, nums, *vals), vals[0].shape[-1], model.dtype)
            return scanned(model, model.with_traversal(t).layout, nums, *vals, pack=pack)

    return _finish(_map_chunks(rows_of, vals, B, chunk, fn), B, model.dtype, single, (model.nv,))


def _map_chunks(rows_of, vals, B, chunk, fn):
    """``rows_of(*vals)`` (batch-last arrays in, ``(k, B)`` out), in chunks of ``chunk`` samples
    (padded by repeating the last sample; the padding is dropped)."""
    c = _chunk(chunk, B, fn)
    if c is None:
        return rows_of(*vals)
    n = -(-B // c)
    pad = lambda x: jnp.concatenate([x, jnp.repeat(x[..., -1:], n * c - B, -1)], -1)  # noqa: E731
    split = [None if x is None else jnp.moveaxis(pad(x).reshape(x.shape[:-1] + (n, c)), -2, 0) for x in vals]
    rows = jax.lax.map(lambda xs: rows_of(*xs), split)  # (n, k, c)
    return jnp.moveaxis(rows, 0, -2).reshape(rows.shape[1:-1] + (n * c,))[..., :B]


def aba_batch(model: Model, q, qd, tau, f_ext=None, *, traversal: str | None = None, chunk="auto", _pack=None):
    """Forward dynamics ``qdd = M^-1 (tau - C qd - g + sum J^T f_ext)`` for a batch, in SoA form.

    Same result as ``jax.vmap(jaxdyn.aba, in_axes=(None, 0, 0, 0))`` (armature included), with the
    Featherstone/Rodriguez recursion of the module docstring written on ``(B,)`` scalars.

    Args:
      model: a :class:`jaxdyn.Model` (any joint types).
      q ``(B, nq)``, qd ``(B, nv)``, tau ``(B, nv)``; a single sample ``(nq,)``/``(nv,)`` also works.
      f_ext: optional ``(B, nb, 6)`` body wrenches ``[moment; force]`` in body coordinates.
      traversal: ``"unroll"`` (a Python loop over links: fastest, compile time grows with the
        links), ``"scan"`` (:mod:`jaxdyn.tree` sweeps: compile time flat in the links) or
        ``"auto"`` (unroll up to :data:`SOA_UNROLL_MAX_LINKS` links). Default: the model's
        ``traversal`` field (``"auto"`` unless set with ``Model.with_traversal``; its
        ``"latency"`` is ``"unroll"`` here).
      chunk: process the batch ``chunk`` samples at a time (``lax.map``): bounded memory and
        cache-sized buffers; ``"auto"``: :data:`CPU_CHUNK` on CPU, the whole batch elsewhere;
        ``None``: the whole batch.
      _pack: private: force (True / False) whether the scanned traversals stack each link
        step's outputs into one array (:class:`jaxdyn.tree.Packed`); default: on a GPU backend.

    Returns: qdd ``(B, nv)`` (or ``(nv,)`` for a single sample).
    """
    return _run(model, "aba_batch", _aba_unroll, _aba_tree, traversal, chunk, _pack, q=q, qd=qd, tau=tau, f_ext=f_ext)


def rnea_batch(model: Model, q, qd, qdd, f_ext=None, *, traversal: str | None = None, chunk="auto", _pack=None):
    """Inverse dynamics ``tau = M qdd + C qd + g - sum J^T f_ext`` for a batch, in SoA form.

    Same result as ``jax.vmap(jaxdyn.rnea, in_axes=(None, 0, 0, 0))`` (armature included).
    Args as :func:`aba_batch` with ``qdd (B, nv)``; returns tau ``(B, nv)``.
    """
    return _run(
        model, "rnea_batch", _rnea_unroll, _rnea_tree, traversal, chunk, _pack, q=q, qd=qd, qdd=qdd, f_ext=f_ext
    )


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


@_kept_step
def _crba_pose_step(ident, parent, x):
    """CRBA scatter step: the link's pose ``(R, p)`` in the common frame (the world, or the free
    root's body frame; ``ident`` is the root's pose) from its parent's; outputs its motion
    subspace and rigid inertia ``(m, h, Ibar)`` in that frame."""
    m, h, Ib = _inertia_x(x)
    if "root" in x:
        return ident, (m, h, Ib)
    X, S = _link_X_S(x, x["q"])
    return crba_steps.world_step(SoAAlgebra, parent, X, S, (m, h, Ib))


def _crba_tree(model, lay, nums, qT, pack=None):
    """Mass matrix (Featherstone (6.2); Rodriguez86 (7.7)-(7.11)) in a common frame (the world, or
    the free root's body frame, where the root's ``S`` is ``1_6``): a scatter gives each body's
    pose ``(R, p)``, its motion subspace ``S`` and rigid inertia ``I`` in that frame; composite
    inertias ``Ic`` are subtree sums; ``M[r, c] = S_r^T Ic_{b(c)} S_c`` for body(r) ancestor of
    body(c) (the other triangle by symmetry), ``+ armature`` on the diagonal."""
    B, dt = qT.shape[-1], model.dtype
    lx, rx = _tree_inputs(model, nums, None, q=qT)
    one, zero = jnp.ones((B,), dt), jnp.zeros((B,), dt)
    ident = ((one, zero, zero, zero, one, zero, zero, zero, one), (zero, zero, zero))
    pose_step = functools.partial(_crba_pose_step, ident)
    _, link_out, root_I = tree.scatter(
        lay,
        pose_step,
        lx,
        ident if lay.traversal == "unroll" else _no_fold(ident),
        rx,
        pack=_pack_outputs(pack, "crba"),
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
    Ic = _keep(tree.subtree_sum(lay, jnp.concatenate([Iw[0][:, None], Iw[1], Iw[2]], 1)))
    Ic = [Ic[:, 0], Ic[:, 1:4], Ic[:, 4:10]]
    S = jnp.concatenate(S_parts)  # (root 6 + links, 6, B) in scan order
    bo = np.asarray(body_of)
    F = _inertia_apply(
        Ic[0][bo],
        _split(Ic[1][bo].swapaxes(0, 1)),
        _split(Ic[2][bo].swapaxes(0, 1)),
        _split(S[:, 0:3].swapaxes(0, 1)),
        _split(S[:, 3:6].swapaxes(0, 1)),
    )
    F = jnp.stack(F[0] + F[1], 1)  # (ndof, 6, B)
    g = jnp.asarray(lay.v_gather)
    S, F = _keep((S[g], F[g]))  # dof order
    rs, cs, pidx = _crba_pair_index(lay)
    Sr, Fc = S[rs], F[cs]
    vals = Sr[:, 0] * Fc[:, 0]
    for k in range(1, 6):  # explicit sum (see spatial.mv: XLA CPU and tiny reductions)
        vals = vals + Sr[:, k] * Fc[:, k]
    arm = model.armature.astype(dt)
    vals = vals + jnp.where(jnp.asarray(rs == cs)[:, None], arm[rs][:, None], 0.0)
    vals = jnp.concatenate([vals, jnp.zeros((1, B), dt)])
    return vals[jnp.asarray(pidx.reshape(-1))]


def crba_batch(model: Model, q, *, traversal: str | None = None, chunk="auto", _pack=None):
    """Joint-space mass matrix ``M(q) + diag(armature)`` for a batch, in SoA form.

    Same result as ``jax.vmap(jaxdyn.crba, in_axes=(None, 0))``. Every traversal walks the tree
    through :mod:`jaxdyn.tree` (``"auto"``/``"unroll"`` unroll it with static parents).

    Args:
      model: a :class:`jaxdyn.Model` (any joint types).
      q: ``(B, nq)`` (or one ``(nq,)`` sample).
      traversal, chunk, _pack: as :func:`aba_batch`.

    Returns: M ``(B, nv, nv)`` (or ``(nv, nv)``).
    """
    B, single, a = _prepare(model, "crba_batch", q=q)
    lay, nums = model.with_traversal(_traversal(model, traversal)).layout, _model_numbers(model)

    def rows_of(qT):
        with _computed_once(qT):
            return _crba_tree(model, lay, nums, qT, _pack)

    rows = _map_chunks(rows_of, [a["q"]], B, chunk, "crba_batch")
    return _finish(rows, B, model.dtype, single, (model.nv, model.nv))


# The one program that still compiles best with XLA CPU's instruction fusion switched off:
# ``jax.jit(functools.partial(aba_jacobian_batch, model), compiler_options=COMPILER_OPTIONS)``.
# Same-process A/B at batch 4096 (benchmarks/results/cpu-2026-11-25-fusion-ab.md): panda's
# unrolled Jacobian compiled in 116 s with fusion off and had not finished after 17 minutes
# under a plain ``jax.jit``; scanned under a plain ``jax.jit`` it compiled (53 s) but ran 3.1x
# slower than the unrolled one with fusion off. The option applies to one whole program, so the
# kernel cannot choose it for itself; on other backends it is not needed. XLA CPU's fusion emitters
# (its default) are named explicitly: with fusion off and the earlier emitters
# (``--xla_cpu_use_fusion_emitters=false`` in ``XLA_FLAGS``) the panda Jacobian came out wrong
# (tests/test_kernels.py::test_aba_jacobian_batch_matches_jacfwd), so a process-wide flag must not
# reach this program.
COMPILER_OPTIONS = {"xla_disable_hlo_passes": "fusion", "xla_cpu_use_fusion_emitters": True}


# The Jacobian kernel holds one tangent copy of every intermediate per direction (nq + nv through
# the RNEA, nq + 2 nv through the ABA): by default it works through the batch this many samples
# at a time, on every backend. A deviceless H100 compile (benchmarks/results/gpu-aot-h100.md) of
# the earlier form (forward mode through the whole ABA) reserved 22 GB of temporaries for talos
# at 131,072 samples unchunked (168 KB per sample; 1.4 GB per chunk of 8192).
JACOBIAN_CHUNK = 8192


def aba_jacobian_batch(model: Model, q, qd, tau, *, traversal: str | None = None, chunk="auto", _pack=None):
    """Per-sample Jacobians of forward dynamics, ``d qdd / d (q, qd, tau)``, for a batch.

    From the inverse-dynamics identity (implicit differentiation of ``ID(q, qd, FD(q, qd, tau))
    = tau``; Carpentier & Mansard, "Analytical derivatives of rigid body dynamics algorithms",
    RSS 2018, eq. (8)): ``dqdd/dq = -M^-1 dID/dq``, ``dqdd/dqd = -M^-1 dID/dqd``,
    ``dqdd/dtau = M^-1``, with ``ID`` (:func:`rnea_batch`) at ``qdd = FD(q, qd, tau)``
    (:func:`aba_batch`). ``dID`` is forward mode through the RNEA with tangents in ``q`` only and
    in ``qd`` only; ``M^-1`` is applied as the forward-mode derivative of the ABA in ``tau``
    alone (linear: no tangent of the articulated inertias). Each ``jax.jvp`` uses the same
    one-hot tangent for every sample (samples are independent), ``vmap``ped over the
    coordinates. On the 2-core CPU at 4096 samples this is 2.4x (panda) and 3.3x (talos
    floating) faster than forward mode through the whole ABA. Same numbers as
    ``jax.vmap(jax.jacfwd(jaxdyn.aba, argnums=(1, 2, 3)))``.

    Args: as :func:`aba_batch` (batched ``(B, ...)`` inputs only); ``chunk``: samples per piece
      (``lax.map`` over pieces; ``"auto"``: :data:`JACOBIAN_CHUNK` on every backend, ``None``:
      the whole batch at once).

    On CPU, compile it with ``compiler_options=``:data:`COMPILER_OPTIONS` (XLA instruction fusion
    off; see there).

    Returns: ``(dq (B, nv, nq), dqd (B, nv, nv), dtau (B, nv, nv))``.
    """
    B, single, _ = _prepare(model, "aba_jacobian_batch", q=q, qd=qd, tau=tau)
    if single:
        raise ValueError(
            "aba_jacobian_batch: expects batched inputs (B, nq)/(B, nv); use jax.jacfwd(jaxdyn.aba) for one sample"
        )
    if chunk == "auto":
        chunk = JACOBIAN_CHUNK
    if chunk is not None and (not isinstance(chunk, int) or chunk < 1):
        raise ValueError(f"aba_jacobian_batch: argument 'chunk' must be a positive int, None or 'auto', got {chunk!r}")
    dt = model.dtype
    q, qd, tau = (jnp.asarray(x).astype(dt) for x in (q, qd, tau))
    nq, nv = model.nq, model.nv

    kw = {"traversal": traversal, "chunk": None, "_pack": _pack}
    fd = lambda q, qd, tau: aba_batch(model, q, qd, tau, **kw)  # noqa: E731
    inv = lambda q, qd, qdd: rnea_batch(model, q, qd, qdd, **kw)  # noqa: E731

    def directions(g, x, n):  # d g / d x along each coordinate (the same one-hot for every sample)
        return jax.vmap(lambda e: jax.jvp(g, (x,), (jnp.broadcast_to(e, x.shape),))[1])(jnp.eye(n, dtype=dt))

    def jacobian(q, qd, tau):
        qdd = fd(q, qd, tau)
        did_dq = directions(lambda x: inv(x, qd, qdd), q, nq)  # (nq, b, nv)
        did_dqd = directions(lambda x: inv(q, x, qdd), qd, nv)
        rhs = jnp.concatenate(
            [-did_dq, -did_dqd, jnp.broadcast_to(jnp.eye(nv, dtype=dt)[:, None, :], (nv,) + tau.shape)]
        )
        cols = jax.vmap(lambda t: jax.jvp(lambda x: fd(q, qd, x), (tau,), (t,))[1])(rhs)  # M^-1 rhs
        return jnp.moveaxis(cols, 0, -1)  # (b, nv, nq + 2 nv)

    if chunk is None or B <= chunk:
        J = jacobian(q, qd, tau)
    else:
        n = -(-B // chunk)
        pieces = [
            jnp.concatenate([x, jnp.repeat(x[-1:], n * chunk - B, 0)]).reshape((n, chunk) + x.shape[1:])
            for x in (q, qd, tau)
        ]
        J = jax.lax.map(lambda xs: jacobian(*xs), pieces).reshape((n * chunk, nv, nq + 2 * nv))[:B]
    return J[..., :nq], J[..., nq : nq + nv], J[..., nq + nv :]
