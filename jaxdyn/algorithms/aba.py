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

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from .. import spatial, tree
from ..algebra import Algebra
from ..model import Model
from .common import Kinematics, check, joint_data, world_motion
from .rnea import rnea_full


def bias_force(alg: Algebra, I, v, f_ext):
    """``xi = v x* I v - f_ext`` (Rodriguez86 (8.24)), the bias force that seeds ``z``
    (``f_ext = None``: none)."""
    return alg.sub(alg.cross_force(v, alg.inertia_apply(I, v)), f_ext)


def velocity_step(alg: Algebra, X, S, qd, v_p):
    """One link of the outward velocity sweep (Rodriguez86 (5.1), (8.3)): ``v = X^-1 v_p + S qd``
    and the bias acceleration ``c = v x S qd`` (eta). ``v_p = None`` is the world at rest.
    Returns ``(v, c)``.

    Like every step here it is written over an algebra ``alg``
    (:class:`jaxdyn.spatial.ArrayAlgebra` for one sample,
    :class:`jaxdyn.kernels.soa_algebra.SoAAlgebra` in the batch kernels); aligned frames are the
    inputs ``X = (1, d)``."""
    vJ = alg.smul(S, qd)
    v = vJ if v_p is None else alg.add(alg.motion_to_child(X, v_p), vJ)
    return v, alg.cross_motion(v, vJ)


def filter_step(alg: Algebra, P, z, S, armature, tau, c, to_parent=True):
    """One link of the inward Riccati sweep (the Kalman filter, Rodriguez86 (8.5)-(8.9)), from
    the link's articulated inertia ``P`` and residual force ``z`` (its own plus its children's):
    ``U = P S``, ``D = S^T U + armature``, ``e = tau - S^T z``; with ``to_parent`` also the
    gain ``G = U D^-1``, ``P+ = P - G U^T`` and ``z+ = z + P+ c + G e``.

    Returns ``(U, D, Dinv, e, G, P+, z+)``, the last three ``None`` without ``to_parent``;
    ``Dinv`` is whatever the algebra solves with (:meth:`joint_factor`: an inverse, ``1 / D``, or
    a factorisation)."""
    U = alg.art_times_S(P, S)
    D = alg.joint_inertia(S, U, armature)
    e = alg.joint_sub(tau, alg.stmul(S, z))
    Dinv = alg.joint_factor(D)
    if not to_parent:
        return U, D, Dinv, e, None, None, None
    G = alg.gain(U, Dinv)
    Pa = alg.art_sub_outer(P, G, U)
    za = alg.add(z, alg.art_apply(Pa, c), alg.smul(G, e))
    return U, D, Dinv, e, G, Pa, za


def to_parent(alg: Algebra, X, Pa, za):
    """``(phi P+ phi^T, phi z+)``: a link's contribution to its parent's ``(P, z)``
    (Rodriguez86 (8.3), (8.4))."""
    return alg.art_to_parent(X, Pa), alg.force_to_parent(X, za)


def smooth_step(alg: Algebra, X, S, c, U, Dinv, e, a_p):
    """One link of the outward acceleration sweep (the smoother, Rodriguez86 (8.11)-(8.13)):
    ``a' = X^-1 a_p + c``, ``qdd = D^-1 (e - U^T a')``, ``a = a' + S qdd``. Returns
    ``(a, qdd)``."""
    a1 = alg.add(alg.motion_to_child(X, a_p), c)
    qdd = alg.joint_solve(Dinv, alg.joint_sub(e, alg.stmul(U, a1)))
    return alg.add(a1, alg.smul(S, qdd)), qdd


def gain_filter_step(alg: Algebra, X, S, G, z, tau=None, e=None):
    """One link of the inward sweep of a filter whose gains ``G`` are already known
    (Rodriguez86 (8.3), (8.6), (8.7) with ``xi = eta = 0``; the sweep of the innovations
    operators ``[I - H psi K]`` and ``[I + H phi K]``, JainRodriguez95 (4.1b)-(4.1c)): from the
    residual force ``z`` (the children's ``phi z+`` summed at the link), the innovations
    ``e = tau - S^T z`` (8.6), or, given ``e``, the generalized force ``tau = e + S^T z``; then
    ``z+ = z + G e`` (8.7) and its contribution ``phi z+`` to the parent's ``z`` (8.3).
    Returns ``(phi z+, e)`` given ``tau``, ``(phi z+, tau)`` given ``e``."""
    Sz = alg.stmul(S, z)
    out = alg.joint_sub(tau, Sz) if e is None else alg.joint_axpy(1.0, e, Sz)
    e = out if e is None else e
    return alg.force_to_parent(X, alg.add(z, alg.smul(G, e))), out


def gain_smooth_step(alg: Algebra, X, S, G, a_p, e_plus=None, qdd=None):
    """One link of the outward sweep of a smoother whose gains ``G`` are already known
    (Rodriguez86 (8.11)-(8.13) with ``eta = 0``; the transposed innovations operators
    ``[I - H psi K]^T`` and ``[I + H phi K]^T``, JainRodriguez95 (4.1b)-(4.1d)):
    ``lambda' = phi^T lambda_parent`` (8.11), ``qdd = e+ - G^T lambda'`` (8.12), or, given
    ``qdd``, ``e+ = qdd + G^T lambda'``; then ``lambda = lambda' + S qdd`` (8.13).
    Returns ``(lambda, qdd)`` given ``e_plus``, ``(lambda, e+)`` given ``qdd``."""
    a1 = alg.motion_to_child(X, a_p)
    Ga = alg.stmul(G, a1)
    out = alg.joint_sub(e_plus, Ga) if qdd is None else alg.joint_axpy(1.0, qdd, Ga)
    qdd = out if qdd is None else qdd
    return alg.add(a1, alg.smul(S, qdd)), out


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


def aba_full(
    model: Model, q, qd, tau, f_ext=None, gravity: bool = True, kinematics: Kinematics | None = None
) -> ABAResult:
    """ABA returning the filter/smoother internals (see :class:`ArticulatedQuantities`).

    Filter (inward, Rodriguez86 (8.3)-(8.9), (8.24)): ``P = M + sum_children phi P+ phi^T``,
    ``z = b + sum_children phi z+`` with ``b = v x* M v - f_ext`` (xi_k);
    ``D = S^T P S``, ``e = tau - S^T z``, ``P+ = P - U D^-1 U^T``, ``z+ = z + P+ c + U D^-1 e``.
    Smoother (outward, (8.11)-(8.13)): ``a' = phi^T a_parent + c``,
    ``qdd = D^-1 (e - U^T a')``, ``a = a' + S qdd``.
    """
    check(model, "aba", q=q, qd=qd, tau=tau, f_ext=f_ext, kinematics=kinematics)
    lay = model.layout
    dtype = model.dtype
    jd = joint_data(model, q) if kinematics is None else kinematics.joints
    I = model.body_inertias()
    qd_l, qd_r = tree.v_to_link_values(lay, jnp.asarray(qd, dtype))
    tau_l, tau_r = tree.v_to_link_values(lay, jnp.asarray(tau, dtype))
    arm_l, arm_r = tree.v_to_link_values(lay, model.armature, pad=1.0)
    if lay.k > 1:  # padded slots of 1-dof links get D = 1 (qdd = 0 there)
        arm_l = jnp.where(jnp.asarray(lay.dof_mask), arm_l, 1.0)
    fe = jnp.zeros((model.nb, 6), dtype) if f_ext is None else jnp.asarray(f_ext, dtype)

    # traversal "latency" (unrolled, for one sample at a time): each transform as one 6x6
    # product. On XLA CPU a small program is kernel-launch bound, and this cuts the launches
    # (panda: 218 -> 110). Otherwise the compact transforms, which need fewer flops.
    alg: type[spatial.ArrayAlgebra] = spatial.ArrayAlgebra
    X: Any = jd.X  # a Pose, or the (R, p~ R) of spatial.DenseArrayAlgebra
    X_root: Any = jd.X_root
    if lay.dense:  # p~ R for all links at once; each step assembles its F from (R, p~ R)
        alg = spatial.DenseArrayAlgebra
        X = spatial.DenseArrayAlgebra.parts(jd.X)
        X_root = spatial.DenseArrayAlgebra.parts(jd.X_root) if jd.X_root is not None else None

    # 1. scatter: velocities and bias accelerations c; bias forces b for all links at once
    def down_v(v_p, x):
        return velocity_step(alg, *x, v_p)

    zero6 = jnp.zeros(6, dtype)
    root_v = (X_root, jd.S_root, qd_r) if lay.floating else None
    v, c_l, c_r = tree.scatter(lay, down_v, (X, jd.S, qd_l), zero6, root_v)
    b = bias_force(alg, I, v, fe)

    def init(idx):  # per-body (P, z) = (M, b); built per body so that unrolled programs stay small
        return alg.art_of(jax.tree_util.tree_map(lambda a: a[idx], I)), b[idx]

    # 2. gather: Riccati recursion for articulated inertias (the Kalman filter)
    def up(acc, x):
        P, z = acc
        X, S, tau_k, arm_k, c = x
        U, D, Dinv, e, G, Pa, za = filter_step(alg, P, z, S, arm_k, tau_k, c)
        tau_bar = jnp.eye(6, dtype=P.dtype) - spatial.mmt(G, S)
        return to_parent(alg, X, Pa, za), ArticulatedQuantities(P, Pa, z, za, U, D, Dinv, G, tau_bar, e, c)

    link_x = (X, jd.S, tau_l, arm_l, c_l)
    root_x = (X_root, jd.S_root, tau_r, arm_r, c_r) if lay.floating else None
    _, art_l, art_r = tree.gather(lay, up, init, link_x, root_x)

    # 3. scatter: accelerations (the smoother)
    def down_a(a_p, x):
        X, S, art = x
        return smooth_step(alg, X, S, art.c, art.U, art.Dinv, art.e, a_p)

    world = world_motion(model, dtype) if gravity else zero6
    a, qdd_l, qdd_r = tree.scatter(
        lay, down_a, (X, jd.S, art_l), world, (X_root, jd.S_root, art_r) if lay.floating else None
    )
    qdd = tree.link_values_to_v(lay, qdd_l, qdd_r)
    return ABAResult(qdd, a, v, art_l, art_r)


def aba(
    model: Model,
    q: Float[Array, " nq"],
    qd: Float[Array, " nv"],
    tau: Float[Array, " nv"],
    f_ext: Float[Array, "nb 6"] | None = None,
    kinematics: Kinematics | None = None,
) -> Float[Array, " nv"]:
    """Forward dynamics ``qdd = M^-1 (tau - C qd - g + sum J^T f_ext)`` in O(N).

    Args: q ``(nq,)``, qd ``(nv,)``, tau ``(nv,)``; f_ext optional ``(nb, 6)`` body wrenches
    ``[moment; force]`` in body coordinates; kinematics optional :func:`jaxdyn.kinematics`
    record at ``q`` (None: computed here). Returns qdd ``(nv,)``.

    Derivatives (any order, forward and reverse mode, w.r.t. the state, ``tau``, ``f_ext`` and
    the model's parameters) come from the inverse-dynamics identity rather than from
    differentiating the three sweeps (see :func:`_aba_jvp`).
    """
    return _aba(model, q, qd, tau, f_ext, kinematics)


@jax.custom_jvp
def _aba(model, q, qd, tau, f_ext, kinematics):
    return aba_full(model, q, qd, tau, f_ext, kinematics=kinematics).qdd


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
    model, q, qd, tau, f_ext, kin = primals
    dmodel, dq, dqd, dtau, df, dkin = tangents
    qdd = aba_full(model, q, qd, tau, f_ext, kinematics=kin).qdd
    names = ("model", "q", "qd", "f_ext", "kin")
    vals = dict(zip(names, (model, q, qd, f_ext, kin)))
    tans = dict(zip(names, (dmodel, dq, dqd, df, dkin)))
    live = [k for k in names if not all(_zero(t) for t in jax.tree_util.tree_leaves(tans[k], is_leaf=_zero))]
    rhs = None if _zero(dtau) else dtau
    if live:

        def inverse(*xs):
            v = {**vals, **dict(zip(live, xs))}
            return rnea_full(v["model"], v["q"], v["qd"], qdd, v["f_ext"], kinematics=v["kin"]).tau

        dense = [jax.tree_util.tree_map(_dense, tans[k], is_leaf=_zero) for k in live]
        did = jax.jvp(inverse, tuple(vals[k] for k in live), tuple(dense))[1]
        rhs = -did if rhs is None else rhs - did
    if rhs is None:
        return qdd, jnp.zeros_like(qdd)
    return qdd, jax.jvp(lambda t: aba_full(model, q, qd, t, f_ext, kinematics=kin).qdd, (tau,), (rhs,))[1]


_aba.defjvp(_aba_jvp, symbolic_zeros=True)
