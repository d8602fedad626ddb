"""Articulated-body forward dynamics as Kalman filter + Bryson-Frazier smoother (Rodriguez86
Result 8.1, (8.1)-(8.13); Featherstone's ABA, Mirtich96 section 1.6).

Three sweeps: a scatter of velocities and bias terms, the inward Riccati *gather* of articulated
inertias ``P`` and residual forces ``z`` (the filter), and the outward *scatter* of
accelerations (the smoother).

Glossary (Rodriguez86 / Featherstone): P = IA articulated inertia (P^-), Pa = P+ = I^a, z = pA
(z^-), za = z^+ = p^a, U = P S (= P H^T), D = S^T P S (+ armature), e = tau - S^T z
(innovations e^-), c = v x S qd (eta), G = U D^-1 (Kalman gain).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from .. import spatial, tree
from ..model import Model
from .common import check, joint_data, world_motion
from .rnea import _smul, _stmul, rnea_full


def _inv(D):
    """``D^-1`` for the symmetric positive definite joint-space blocks ``D = S^T P S`` (Rodriguez86
    (8.5)), by an unrolled ``L diag(d) L^T`` factorisation of the lower triangle (no pivoting is
    needed for SPD matrices): ``D^-1 = L^-T diag(d)^-1 L^-1``, written as elementwise operations
    on ``D``'s entries. Unlike ``jnp.linalg.inv`` (a LAPACK / cuSOLVER call per batch on CPU / GPU,
    which XLA cannot fuse) it fuses with the rest of the step; k <= 6 here (the free root)."""
    k = D.shape[-1]
    if k == 1:
        return 1.0 / D
    L = [[None] * k for _ in range(k)]
    d = [None] * k
    for j in range(k):
        d[j] = D[..., j, j] - sum(L[j][m] * L[j][m] * d[m] for m in range(j))
        for i in range(j + 1, k):
            L[i][j] = (D[..., i, j] - sum(L[i][m] * L[j][m] * d[m] for m in range(j))) / d[j]
    # Li = L^-1 (unit lower triangular) by forward substitution, then D^-1[r, c] = sum_m Li[m, r] Li[m, c] / d[m]
    Li = [[1.0 if i == j else None for j in range(k)] for i in range(k)]
    for i in range(k):
        for j in range(i):
            Li[i][j] = -sum(L[i][m] * Li[m][j] for m in range(j, i))
    di = [1.0 / dm for dm in d]
    rows = [[sum(Li[m][r] * Li[m][c] * di[m] for m in range(max(r, c), k)) for c in range(k)] for r in range(k)]
    return jnp.stack([jnp.stack(r, -1) for r in rows], -2)


class _ForceParts(NamedTuple):
    """A link transform for the "latency" traversal: ``R`` and ``p~ R``, the blocks of the 6x6
    force matrix (:func:`jaxdyn.spatial.force_matrix`)."""

    R: jnp.ndarray
    pR: jnp.ndarray


class ArticulatedQuantities(NamedTuple):
    """Outputs of the Riccati gather, per scanned link (leading axis n; root separately).

    P ``(6,6)`` articulated inertia about the joint (P^-); Pa ``(6,6)`` P^+ handed to the parent
    (before the transform); z, za ``(6,)`` residual forces z^-, z^+; U = P S ``(6,k)``;
    D = S^T P S ``(k,k)`` (Rodriguez86 (8.5)) and its inverse Dinv; G = P S D^-1 ``(6,k)`` the
    Kalman gain and tau_bar = 1 - G S^T ``(6,6)`` the projector (Rodriguez86 (8.9), (10.6)); e ``(k,)`` innovations tau - S^T z^- (Rodriguez86 (8.6)); c ``(6,)`` bias
    acceleration eta.
    """

    P: jnp.ndarray
    Pa: jnp.ndarray
    z: jnp.ndarray
    za: jnp.ndarray
    U: jnp.ndarray
    D: jnp.ndarray
    Dinv: jnp.ndarray
    G: jnp.ndarray
    tau_bar: jnp.ndarray
    e: jnp.ndarray
    c: jnp.ndarray


class ABAResult(NamedTuple):
    qdd: Float[Array, " nv"]
    a: Float[Array, "nb 6"]  # body accelerations (offset by -g when gravity is on)
    v: Float[Array, "nb 6"]
    link: ArticulatedQuantities
    root: ArticulatedQuantities | None


def aba_full(model: Model, q, qd, tau, f_ext=None, gravity: bool = True) -> ABAResult:
    """ABA returning the filter/smoother internals (see :class:`ArticulatedQuantities`).

    Filter (inward, Rodriguez86 (8.3)-(8.9), (8.24)): ``P = M + sum_children phi P+ phi^T``,
    ``z = b + sum_children phi z+`` with ``b = v x* M v - f_ext`` (xi_k);
    ``D = S^T P S``, ``e = tau - S^T z``, ``P+ = P - U D^-1 U^T``, ``z+ = z + P+ c + U D^-1 e``.
    Smoother (outward, (8.11)-(8.13)): ``a' = phi^T a_parent + c``,
    ``qdd = D^-1 (e - U^T a')``, ``a = a' + S qdd``.
    """
    check(model, "aba", q=q, qd=qd, tau=tau, f_ext=f_ext)
    lay = model.layout
    dtype = model.dtype
    jd = joint_data(model, q)
    I = model.body_inertias()
    qd_l, qd_r = tree.v_to_link_values(lay, qd.astype(dtype))
    tau_l, tau_r = tree.v_to_link_values(lay, tau.astype(dtype))
    arm_l, arm_r = tree.v_to_link_values(lay, model.armature, pad=1.0)
    if lay.k > 1:  # padded slots of 1-dof links get D = 1 (qdd = 0 there)
        arm_l = jnp.where(jnp.asarray(lay.dof_mask), arm_l, 1.0)
    fe = jnp.zeros((model.nb, 6), dtype) if f_ext is None else f_ext.astype(dtype)

    # traversal "latency" (unrolled, for one sample at a time): each transform as one 6x6
    # product. On XLA CPU a small program is kernel-launch bound, and this cuts the launches
    # (panda: 218 -> 110). Otherwise the compact transforms, which need fewer flops.
    dense = lay.dense
    # The motion transform phi^T is the force transform phi transposed: one 6x6 matrix per link
    # serves all three passes (XLA merges the identical per-link builds).
    if dense:  # p~ R for all links at once; each step assembles its F from (R, p~ R)

        def parts(X):
            return _ForceParts(X.R, spatial.mm(spatial.skew(X.p), X.R))

        jd = jd._replace(X=parts(jd.X), X_root=parts(jd.X_root) if lay.floating else None)
        fmat = lambda X: spatial.force_matrix(X, pR=X.pR)  # noqa: E731
        to_child = lambda X, m: spatial.mtv(fmat(X), m)  # noqa: E731
    else:
        to_child = spatial.motion_to_child

    # 1. scatter: velocities; then, for all links at once, the bias accelerations c = v x vJ
    # (Rodriguez86 (8.1) eta) and bias forces b
    vJ_l = _smul(jd.S, qd_l)
    vJ_r = qd_r if lay.floating else None  # S_root = 1_6

    def down_v(v_p, x):
        X, vJ = x
        return to_child(X, v_p) + vJ, ()

    zero6 = jnp.zeros(6, dtype)
    v, _, _ = tree.scatter(lay, down_v, (jd.X, vJ_l), zero6, (jd.X_root, vJ_r) if lay.floating else None)
    lb = jnp.asarray(lay.link_bodies)
    c_l = spatial.cross_motion(v[lb], vJ_l)
    c_r = spatial.cross_motion(v[0], vJ_r) if lay.floating else None
    Iv = spatial.inertia_apply(I, v)
    b = spatial.cross_force(v, Iv) - fe

    def init(idx):  # per-body (P, z) = (M, b); built per body so that unrolled programs stay small
        return spatial.inertia_matrix(jax.tree_util.tree_map(lambda a: a[idx], I)), b[idx]

    # 2. gather: Riccati recursion for articulated inertias (the Kalman filter)
    def up(acc, x):
        P, z = acc
        X, S, tau_k, arm_k, c = x
        # Small products as elementwise sums (spatial.mm/mv), as in the rest of the library: no
        # GEMM call per tiny product on XLA CPU.
        U = spatial.mm(P, S)
        D = spatial.mtm(S, U) + jnp.diag(arm_k)
        Dinv = _inv(D)
        e = tau_k - _stmul(S, z)
        UDinv = spatial.mm(U, Dinv)
        Pa = P - spatial.mmt(UDinv, U)
        za = z + spatial.mv(Pa, c) + spatial.mv(UDinv, e)
        out = ArticulatedQuantities(
            P, Pa, z, za, U, D, Dinv, UDinv, jnp.eye(6, dtype=P.dtype) - spatial.mmt(UDinv, S), e, c
        )
        if dense:
            F = fmat(X)
            return (spatial.matrix_inertia_to_parent_dense(F, Pa), spatial.mv(F, za)), out
        return (spatial.matrix_inertia_to_parent(X, Pa), spatial.force_to_parent(X, za)), out

    link_x = (jd.X, jd.S, tau_l, arm_l, c_l)
    root_x = (jd.X_root, jd.S_root, tau_r, arm_r, c_r) if lay.floating else None
    _, art_l, art_r = tree.gather(lay, up, init, link_x, root_x)

    # 3. scatter: accelerations (the smoother)
    def down_a(a_p, x):
        X, S, art = x
        a1 = to_child(X, a_p) + art.c
        qdd = spatial.mv(art.Dinv, art.e - spatial.mtv(art.U, a1))
        return a1 + _smul(S, qdd), qdd

    world = world_motion(model, dtype) if gravity else zero6
    a, qdd_l, qdd_r = tree.scatter(
        lay, down_a, (jd.X, jd.S, art_l), world, (jd.X_root, jd.S_root, art_r) if lay.floating else None
    )
    qdd = tree.link_values_to_v(lay, qdd_l, qdd_r)
    return ABAResult(qdd, a, v, art_l, art_r)


def aba(
    model: Model,
    q: Float[Array, " nq"],
    qd: Float[Array, " nv"],
    tau: Float[Array, " nv"],
    f_ext: Float[Array, "nb 6"] | None = None,
) -> Float[Array, " nv"]:
    """Forward dynamics ``qdd = M^-1 (tau - C qd - g + sum J^T f_ext)`` in O(N).

    Args: q ``(nq,)``, qd ``(nv,)``, tau ``(nv,)``; f_ext optional ``(nb, 6)`` body wrenches
    ``[moment; force]`` in body coordinates. Returns qdd ``(nv,)``.

    Derivatives (any order, forward and reverse mode, w.r.t. the state, ``tau``, ``f_ext`` and
    the model's parameters) come from the inverse-dynamics identity rather than from
    differentiating the three sweeps (see :func:`_aba_jvp`).
    """
    return _aba(model, q, qd, tau, f_ext)


@jax.custom_jvp
def _aba(model, q, qd, tau, f_ext):
    return aba_full(model, q, qd, tau, f_ext).qdd


def _zero(t):
    return isinstance(t, jax.custom_derivatives.SymbolicZero)


def _dense(t):
    if not _zero(t):
        return t
    return np.zeros(t.shape, t.dtype) if t.dtype == jax.dtypes.float0 else jnp.zeros(t.shape, t.dtype)


def _aba_jvp(primals, tangents):
    """Tangent of forward dynamics by implicit differentiation of ``ID(p, q, qd, FD(p, q, qd,
    tau)) = tau`` (``p``: the model's parameters and ``f_ext``; Carpentier & Mansard,
    "Analytical derivatives of rigid body dynamics algorithms", RSS 2018, eq. (8)):
    ``dqdd = M^-1 (dtau - dID)``, where ``dID`` is the RNEA's tangent along ``(dp, dq, dqd)`` at
    fixed ``qdd`` and ``M^-1`` is applied as the ABA's tangent in ``tau`` alone (linear in
    ``tau``: no tangent of the articulated inertias). Inputs whose tangent is a symbolic zero
    are left out of both. Cheaper than the tangent of the three sweeps: with ``jacfwd`` over
    ``(q, qd, tau)`` no direction carries tangents of the 6x6 articulated inertias.

    The identity needs the RNEA and the ABA to be the same function of every parameter they
    read; both read ``model.inertia`` through its symmetric part (``Model.body_inertias``)."""
    model, q, qd, tau, f_ext = primals
    dmodel, dq, dqd, dtau, df = tangents
    qdd = aba_full(model, q, qd, tau, f_ext).qdd
    names = ("model", "q", "qd", "f_ext")
    vals = dict(zip(names, (model, q, qd, f_ext)))
    tans = dict(zip(names, (dmodel, dq, dqd, df)))
    live = [k for k in names if not all(_zero(t) for t in jax.tree_util.tree_leaves(tans[k], is_leaf=_zero))]
    rhs = None if _zero(dtau) else dtau
    if live:

        def inverse(*xs):
            v = {**vals, **dict(zip(live, xs))}
            return rnea_full(v["model"], v["q"], v["qd"], qdd, v["f_ext"]).tau

        dense = [jax.tree_util.tree_map(_dense, tans[k], is_leaf=_zero) for k in live]
        did = jax.jvp(inverse, tuple(vals[k] for k in live), tuple(dense))[1]
        rhs = -did if rhs is None else rhs - did
    if rhs is None:
        return qdd, jnp.zeros_like(qdd)
    return qdd, jax.jvp(lambda t: aba_full(model, q, qd, t, f_ext).qdd, (tau,), (rhs,))[1]


_aba.defjvp(_aba_jvp, symbolic_zeros=True)
