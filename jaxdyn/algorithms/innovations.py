"""Innovations factorization of the mass matrix and O(N) mass-matrix operators.

JainRodriguez95 (4.1b)-(4.1d) (Jain & Rodriguez), from the Kalman filter of Rodriguez86 section 8-10:

    M = [I + H phi K] D [I + H phi K]^T,    [I + H phi K]^-1 = I - H psi K,
    M^-1 = [I - H psi K]^T D^-1 [I - H psi K],

with ``D``, ``G = P H^T D^-1`` and ``P`` the Riccati (articulated-inertia) gather of Rodriguez86
(8.4)-(8.9), computed here by :func:`~jaxdyn.aba_full` with zero velocity and gravity. We write
``L = I + H phi K`` ("innovations factor") and ``Linv = I - H psi K``. Each is applied in O(N)
without forming a matrix:

* ``Linv @ tau`` = the filter's innovations ``e = tau - H z`` with ``z`` the residual forces
  propagated with the gains (Rodriguez86 (8.3), (8.6)-(8.7) with xi = eta = 0);
* ``L @ e``: the same gather run backwards, ``tau = e + H z``;
* ``Linv^T @ y``: the smoother (Rodriguez86 (8.11)-(8.13)) ``qdd = y - G^T a'``;
* ``L^T @ x``: the smoother inverted, ``y = x + G^T a'``.

Triangularity of ``L`` holds in the papers' tip-first order (they number links from the tip): with jaxdyn's
base-first dof order ``L`` is *upper* triangular (a body's innovation depends on its
descendants only).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jaxtyping import Array, Float

from .. import linalg, spatial, tree
from ..model import Model
from .aba import ArticulatedQuantities, aba_full, gain_filter_step, gain_smooth_step
from .common import JointData, Kinematics, check, full_precision
from .kinematics import kinematics as _kinematics
from .rnea import rnea_full


class MassFactorization(NamedTuple):
    """Riccati gather of one configuration: joint data and per-link articulated quantities."""

    jd: JointData
    link: ArticulatedQuantities
    root: ArticulatedQuantities | None


def factorize(model: Model, q: Float[Array, " nq"], kinematics: Kinematics | None = None) -> MassFactorization:
    """The O(N) Riccati gather (Rodriguez86 (8.4)-(8.9)) at ``q``, shared by all operators below
    (``kinematics``: the :func:`jaxdyn.kinematics` record at ``q``, if computed; the gather and
    the operators then share its joint data)."""
    check(model, "factorize", q=q, kinematics=kinematics)
    kin = _kinematics(model, q) if kinematics is None else kinematics
    z = jnp.zeros(model.nv, model.dtype)
    r = aba_full(model, q, z, z, gravity=False, kinematics=kin)
    return MassFactorization(kin.joints, r.link, r.root)


def _root_x(model, fac, *extra):
    return (fac.jd.X_root, fac.jd.S_root, *extra, fac.root) if model.layout.floating else None


@full_precision
def apply_innovations_inverse(model: Model, fac: MassFactorization, tau: Float[Array, " nv"]) -> Float[Array, " nv"]:
    """``[I - H psi K] tau``: the innovations ``e`` of the filter (Rodriguez86 (8.6); JainRodriguez95 (4.1c))."""
    lay = model.layout
    t_l, t_r = tree.v_to_link_values(lay, tau)

    def up(z, x):
        X, S, t, art = x
        return gain_filter_step(spatial.ArrayAlgebra, X, S, art.G, z, tau=t)

    _, e_l, e_r = tree.gather(
        lay, up, jnp.zeros((model.nb, 6), tau.dtype), (fac.jd.X, fac.jd.S, t_l, fac.link), _root_x(model, fac, t_r)
    )
    return tree.link_values_to_v(lay, e_l, e_r)


@full_precision
def apply_innovations_factor(model: Model, fac: MassFactorization, e: Float[Array, " nv"]) -> Float[Array, " nv"]:
    """``[I + H phi K] e``: generalized forces whose innovations are ``e`` (JainRodriguez95 (4.1b))."""
    lay = model.layout
    e_l, e_r = tree.v_to_link_values(lay, e)

    def up(z, x):
        X, S, ek, art = x
        return gain_filter_step(spatial.ArrayAlgebra, X, S, art.G, z, e=ek)

    _, t_l, t_r = tree.gather(
        lay, up, jnp.zeros((model.nb, 6), e.dtype), (fac.jd.X, fac.jd.S, e_l, fac.link), _root_x(model, fac, e_r)
    )
    return tree.link_values_to_v(lay, t_l, t_r)


@full_precision
def apply_innovations_inverse_transpose(
    model: Model, fac: MassFactorization, y: Float[Array, " nv"]
) -> Float[Array, " nv"]:
    """``[I - H psi K]^T y``: the smoother ``qdd_k = y_k - G_k^T a'_k`` (Rodriguez86 (8.12))."""
    lay = model.layout
    y_l, y_r = tree.v_to_link_values(lay, y)

    def down(a_p, x):
        X, S, yk, art = x
        return gain_smooth_step(spatial.ArrayAlgebra, X, S, art.G, a_p, e_plus=yk)

    _, o_l, o_r = tree.scatter(
        lay, down, (fac.jd.X, fac.jd.S, y_l, fac.link), jnp.zeros(6, y.dtype), _root_x(model, fac, y_r)
    )
    return tree.link_values_to_v(lay, o_l, o_r)


@full_precision
def apply_innovations_factor_transpose(
    model: Model, fac: MassFactorization, x: Float[Array, " nv"]
) -> Float[Array, " nv"]:
    """``[I + H phi K]^T x``: the smoother inverted, ``y_k = x_k + G_k^T a'_k``."""
    lay = model.layout
    x_l, x_r = tree.v_to_link_values(lay, x)

    def down(a_p, xx):
        X, S, xk, art = xx
        return gain_smooth_step(spatial.ArrayAlgebra, X, S, art.G, a_p, qdd=xk)

    _, o_l, o_r = tree.scatter(
        lay, down, (fac.jd.X, fac.jd.S, x_l, fac.link), jnp.zeros(6, x.dtype), _root_x(model, fac, x_r)
    )
    return tree.link_values_to_v(lay, o_l, o_r)


@full_precision
def _apply_blocks(model, fac, x, which):
    lay = model.layout
    x_l, x_r = tree.v_to_link_values(lay, x)
    B_l = getattr(fac.link, which)
    out_l = jnp.einsum("nij,nj->ni", B_l, x_l) if len(lay.link_bodies) else x_l
    out_r = getattr(fac.root, which) @ x_r if lay.floating else None
    return tree.link_values_to_v(lay, out_l, out_r)


def joint_space_inertias(model: Model, fac: MassFactorization) -> Float[Array, "nv nv"]:
    """``D`` as a dense block-diagonal ``(nv, nv)`` matrix (1x1, 3x3 or 6x6 blocks)."""
    return jax.vmap(lambda e: _apply_blocks(model, fac, e, "D"))(jnp.eye(model.nv, dtype=model.dtype)).T


class InnovationsFactors(NamedTuple):
    """Dense factors for inspection: ``M = L D L^T`` and ``Linv = L^-1``."""

    L: Float[Array, "nv nv"]
    D: Float[Array, "nv nv"]
    Linv: Float[Array, "nv nv"]


def innovations_factorization(model: Model, q: Float[Array, " nq"]) -> InnovationsFactors:
    """Dense ``L = I + H phi K``, block-diagonal ``D`` and ``Linv = I - H psi K`` (JainRodriguez95 (4.1)),
    each column computed by the O(N) operator (O(N^2) in all)."""
    fac = factorize(model, q)
    eye = jnp.eye(model.nv, dtype=model.dtype)
    L = jax.vmap(lambda e: apply_innovations_factor(model, fac, e))(eye).T
    Linv = jax.vmap(lambda e: apply_innovations_inverse(model, fac, e))(eye).T
    return InnovationsFactors(L, joint_space_inertias(model, fac), Linv)


def solve_mass_matrix(model: Model, q: Float[Array, " nq"], b: Float[Array, " nv"]) -> Float[Array, " nv"]:
    """``M(q)^-1 b`` in O(N), matrix-free: ``Linv^T D^-1 Linv b`` (JainRodriguez95 (4.1d))."""
    check(model, "solve_mass_matrix", q=q, b=b)
    fac = factorize(model, q)
    return _solve(model, fac, b.astype(model.dtype))


def _solve(model, fac, b):
    e = apply_innovations_inverse(model, fac, b)
    return apply_innovations_inverse_transpose(model, fac, _apply_blocks(model, fac, e, "Dinv"))


def apply_mass_matrix(model: Model, q: Float[Array, " nq"], x: Float[Array, " nv"]) -> Float[Array, " nv"]:
    """``M(q) x`` in O(N), matrix-free: RNEA with zero velocity and gravity (JainRodriguez95 (4.1a))."""
    check(model, "apply_mass_matrix", q=q, x=x)
    return rnea_full(model, q, jnp.zeros(model.nv, model.dtype), x, gravity=False).tau


def mass_matrix_inverse(model: Model, q: Float[Array, " nq"]) -> Float[Array, "nv nv"]:
    """Dense ``M(q)^-1`` without forming or inverting ``M``: one Riccati gather, then the O(N)
    filter/smoother product ``Linv^T D^-1 Linv`` applied to each unit vector (O(N^2) in all)."""
    check(model, "mass_matrix_inverse", q=q)
    fac = factorize(model, q)
    Minv = jax.vmap(lambda e: _solve(model, fac, e))(jnp.eye(model.nv, dtype=model.dtype))
    return 0.5 * (Minv + Minv.T)


def _logdet_spd(C):
    """``sum log det D`` of positive-definite blocks from their Cholesky factors ``C``
    (:mod:`jaxdyn.linalg`): ``2 sum log diag C``."""
    return 2.0 * jnp.sum(jnp.log(jnp.diagonal(C, axis1=-2, axis2=-1)))


def logdet_mass_matrix(model: Model, q: Float[Array, " nq"]) -> Float[Array, ""]:
    """``log det M = sum_k log det D_k`` in O(N) (JainRodriguez95 (4.1b): ``det L = 1``)."""
    fac = factorize(model, q)
    lay = model.layout
    total = jnp.zeros((), model.dtype)
    if len(lay.link_bodies):
        D = fac.link.D
        total = total + (jnp.sum(jnp.log(D[:, 0, 0])) if lay.k == 1 else _logdet_spd(jax.vmap(linalg.cholesky)(D)))
    if fac.root is not None:  # the free-floating root's 6x6 block
        total = total + _logdet_spd(linalg.cholesky(fac.root.D))
    return total


def _sym_motion_to_child(X: spatial.Pose, C):
    """``BX_A C BX_A^T`` for a symmetric motion-type matrix (a compliance)."""
    C1 = spatial.map_columns(spatial.motion_to_child, X, C)
    return jnp.swapaxes(spatial.map_columns(spatial.motion_to_child, X, jnp.swapaxes(C1, -1, -2)), -1, -2)


@full_precision
def body_inverse_inertias(model: Model, q: Float[Array, " nq"]) -> Float[Array, "nb 6 6"]:
    """Operational-space compliance ``Lambda_k = J_k M^-1 J_k^T`` of every body, in body
    coordinates, by the outward recursion of Rodriguez86 (9.20)-(9.21):
    ``Lambda' = phi^T Lambda_parent phi``, ``Lambda = tau_bar^T Lambda' tau_bar + H^T D^-1 H``
    with ``tau_bar = 1 - G H``. O(N)."""
    check(model, "body_inverse_inertias", q=q)
    fac = factorize(model, q)

    def down(C_p, x):
        X, S, art = x
        C1 = _sym_motion_to_child(X, C_p)
        G = art.U @ art.Dinv  # (6, k)
        tb = jnp.eye(6, dtype=C1.dtype) - G @ S.T
        C = tb.T @ C1 @ tb + S @ art.Dinv @ S.T
        return C, None

    world = jnp.zeros((6, 6), model.dtype)
    C, _, _ = tree.scatter(
        model.layout,
        down,
        (fac.jd.X, fac.jd.S, fac.link),
        world,
        (fac.jd.X_root, fac.jd.S_root, fac.root) if model.layout.floating else None,
    )
    return C


def frame_inverse_inertia(model: Model, q: Float[Array, " nq"], frame: str) -> Float[Array, "6 6"]:
    """``J M^-1 J^T`` of a named frame, local coordinates (``J`` = the "local" frame Jacobian),
    from :func:`body_inverse_inertias` moved to the frame."""
    i = model.frame_index(frame)
    b = model.topology.frame_bodies[i]
    if b < 0:
        return jnp.zeros((6, 6), model.dtype)
    C = body_inverse_inertias(model, q)[b]
    return _sym_motion_to_child(spatial.Pose(model.frame_R[i], model.frame_p[i]), C)
