"""Recursive Newton-Euler inverse dynamics (Rodriguez86 section 7; JainRodriguez95 (4.2)).

Glossary: X link placement in its parent, S motion subspace (``H^T``), v/a body spatial velocity
and acceleration (``V``, ``lambda``), f spatial force (``x``), I body inertia (``M_k``).
"""

from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp
from jaxtyping import Array, Float

from .. import spatial, tree
from ..algebra import Algebra
from ..model import Model
from .common import Kinematics, check, joint_data, world_motion


def smul(S, x):
    """``S @ x`` for ``S (..., 6, k)`` and ``x (..., k)``."""
    return spatial.mv(S, x)


def stmul(S, f):
    """``S^T @ f`` -> ``(..., k)``."""
    return spatial.mtv(S, f)


def forward_step(alg: Algebra, X, S, qd, qdd, I, f_ext, parent):
    """One link of the outward sweep, from the parent's ``(v_p, a_p)`` (Rodriguez86 (5.1)-(5.6),
    (4.4)): ``v = X^-1 v_p + S qd``, ``a = X^-1 a_p + S qdd + v x S qd``,
    ``f = I a + v x* I v - f_ext`` (``f_ext = None``: none). Returns ``((v, a), f)``.

    ``alg`` is the algebra the quantities are written in: :class:`jaxdyn.spatial.ArrayAlgebra`
    here, the struct-of-arrays one in the batch kernels (:mod:`jaxdyn.kernels.soa`), which run
    this same step. A free root is the step with ``S = 1_6`` and the world as its parent."""
    v_p, a_p = parent
    vJ = alg.smul(S, qd)
    v = alg.add(alg.motion_to_child(X, v_p), vJ)
    a = alg.add(alg.motion_to_child(X, a_p), alg.smul(S, qdd), alg.cross_motion(v, vJ))
    f = alg.sub(alg.add(alg.inertia_apply(I, a), alg.cross_force(v, alg.inertia_apply(I, v))), f_ext)
    return (v, a), f


def backward_step(alg: Algebra, X, S, armature, qdd, f):
    """One link of the inward sweep, with ``f`` the link's force including its children's
    (Rodriguez86 (4.1)-(4.3), (6.5)): ``tau = S^T f + armature qdd`` and the contribution
    ``X* f`` to the parent's force. Returns ``(X* f, tau)``."""
    return alg.force_to_parent(X, f), alg.joint_axpy(armature, qdd, alg.stmul(S, f))


class RNEAResult(NamedTuple):
    """tau ``(nv,)``; v, a ``(nb, 6)`` body velocities and accelerations (a offset by the
    gravity acceleration when gravity is on); f ``(nb, 6)`` the joint wrenches ``x_k`` that each
    parent exerts on its child, about the body origin in body coordinates (Rodriguez86 R1)."""

    tau: Float[Array, " nv"]
    v: Float[Array, "nb 6"]
    a: Float[Array, "nb 6"]
    f: Float[Array, "nb 6"]


def rnea_full(
    model: Model,
    q,
    qd,
    qdd,
    f_ext=None,
    gravity: bool = True,
    inertia: spatial.RigidInertia | None = None,
    kinematics: Kinematics | None = None,
) -> RNEAResult:
    """RNEA returning the intermediate quantities (see :class:`RNEAResult`).

    Scatter (Rodriguez86 (5.1)-(5.6)): ``v_k = X^-1 v_p + S qd``,
    ``a_k = X^-1 a_p + S qdd + v_k x S qd`` (``eta_k``); world acceleration ``[0; -g]``.
    Body forces (Rodriguez86 (4.4)): ``f_k = I a_k + v_k x* I v_k - f_ext_k``.
    Gather (Rodriguez86 (4.1)-(4.3)): ``f_p += X* f_k``, ``tau_k = S^T f_k`` ((6.5)).
    ``inertia`` overrides the model's body inertias (used by the regressor); ``kinematics``
    (:class:`~jaxdyn.algorithms.common.Kinematics` at ``q``) supplies the joint data.
    """
    check(model, "rnea", q=q, qd=qd, qdd=qdd, f_ext=f_ext, kinematics=kinematics)
    lay = model.layout
    dtype = model.dtype
    jd = joint_data(model, q) if kinematics is None else kinematics.joints
    I = model.body_inertias() if inertia is None else inertia
    lb = lay.link_bodies
    qd_l, qd_r = tree.v_to_link_values(lay, jnp.asarray(qd, dtype))
    qdd_l, qdd_r = tree.v_to_link_values(lay, jnp.asarray(qdd, dtype))
    fe = jnp.zeros((model.nb, 6), dtype) if f_ext is None else jnp.asarray(f_ext, dtype)
    take = lambda tree_, idx: type(tree_)(*(x[idx] for x in tree_))

    def down(parent, x):
        return forward_step(spatial.ArrayAlgebra, *x, parent)

    zero6 = jnp.zeros(6, dtype)
    world = (zero6, world_motion(model, dtype) if gravity else zero6)
    link_x = (jd.X, jd.S, qd_l, qdd_l, take(I, lb), fe[lb])
    root_x = (jd.X_root, jd.S_root, qd_r, qdd_r, take(I, 0), fe[0]) if lay.floating else None
    (v, a), f_link, f_root = tree.scatter(lay, down, link_x, world, root_x)
    f_body = jnp.zeros((model.nb, 6), dtype)
    if len(lb):
        f_body = f_body.at[lb].set(f_link)
    if lay.floating:
        f_body = f_body.at[0].set(f_root)

    def up(f_k, x):
        return backward_step(spatial.ArrayAlgebra, *x, f_k)

    arm_l, arm_r = tree.v_to_link_values(lay, model.armature.astype(dtype))
    link_in = (jd.X, jd.S, arm_l, qdd_l)
    root_in = (jd.X_root, jd.S_root, arm_r, qdd_r) if lay.floating else None
    f, tau_l, tau_r = tree.gather(lay, up, f_body, link_in, root_in)
    tau = tree.link_values_to_v(lay, tau_l, tau_r)
    return RNEAResult(tau, v, a, f)


def rnea(
    model: Model,
    q: Float[Array, " nq"],
    qd: Float[Array, " nv"],
    qdd: Float[Array, " nv"],
    f_ext: Float[Array, "nb 6"] | None = None,
    kinematics: Kinematics | None = None,
) -> Float[Array, " nv"]:
    """Inverse dynamics ``tau = M(q) qdd + C(q, qd) qd + g(q) - sum_k J_k^T f_ext_k``.

    Args:
      q ``(nq,)``, qd ``(nv,)``, qdd ``(nv,)``: state and joint accelerations (one sample; batch
        with ``jax.vmap``).
      f_ext: optional ``(nb, 6)`` external wrenches ``[moment; force]`` on each body, about the
        body origin in body coordinates.
      kinematics: optional :func:`jaxdyn.kinematics` record at ``q``, shared with other
        algorithms at the same configuration (None: computed here).

    Returns: generalised forces ``(nv,)`` (for a free base: ``[moment; force]`` in the body frame).
    """
    return rnea_full(model, q, qd, qdd, f_ext, kinematics=kinematics).tau


def bias_forces(model: Model, q, qd, f_ext=None) -> Float[Array, " nv"]:
    """``C(q, qd) qd + g(q)`` (- external forces): RNEA with ``qdd = 0`` (Rodriguez86 (7.11))."""
    return rnea(model, q, qd, jnp.zeros(model.nv, model.dtype), f_ext)


def gravity_torques(model: Model, q) -> Float[Array, " nv"]:
    """``g(q)``: RNEA with zero velocity and acceleration."""
    z = jnp.zeros(model.nv, model.dtype)
    return rnea(model, q, z, z)


def coriolis_torques(model: Model, q, qd) -> Float[Array, " nv"]:
    """``C(q, qd) qd`` alone (no gravity)."""
    z = jnp.zeros(model.nv, model.dtype)
    return rnea_full(model, q, qd, z, gravity=False).tau
