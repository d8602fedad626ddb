"""Analytical first derivatives of inverse and forward dynamics, in closed form.

``rnea_derivatives`` gives ``d tau / d q`` and ``d tau / d qd`` without differentiating the
recursions: one RNEA, the body quantities expressed in world coordinates, subtree sums, and
then every entry of the two ``nv x nv`` matrices is a 6-vector dot product selected by the tree's
ancestor relation. The O(N^2) part is a handful of dense, masked matrix products (no scan, no
per-direction sweep), which suits batched XLA on CPU and GPU. ``aba_derivatives`` adds the
inverse-dynamics identity ``d qdd = M^-1 (d tau - d ID)`` (Carpentier & Mansard, "Analytical
derivatives of rigid body dynamics algorithms", RSS 2018, eq. (8); the same identity as
``jaxdyn.aba``'s custom JVP) with ``M^-1`` from CRBA + Cholesky or the seed's O(N^2) inverse.

Derivation (world coordinates, about the world origin; ``x`` / ``x*`` the spatial motion / force
cross products of JainRodriguez95 (5.5); ``S_c`` the world motion subspace column of dof ``c`` on body
``b(c)``; ``p = parent(b(c))``). A change ``dq_c`` moves the subtree of ``b(c)`` rigidly by the
screw ``S_c dq_c``. With ``v``, ``a`` body velocities and accelerations (``a_world = -g``) and
``f_k = I_k a_k + v_k x* I_k v_k - f_ext_k``, for every body ``k`` in that subtree::

    dv_k / dq_c = S_c x v_k + Psid_c                          Psid_c  = v_p x S_c
    da_k / dq_c = S_c x a_k + Psidd_c + Psid_c x v_k          Psidd_c = a_p x S_c + v_p x Psid_c
    df_k / dq_c = S_c x* f_k + I_k Psidd_c + 2 B_k Psid_c
    2 B_k       = (v_k x*) I_k - I_k (v_k x) + (I_k v_k x-bar*)  with  (h x-bar*) m := m x* h

(the ``S_c x`` terms are the rigid motion of a body-fixed quantity; ``B_k`` is the Coriolis
matrix of the body as in Singh, Russell & Wensing, "Efficient analytical derivatives of
rigid-body dynamics using spatial vector algebra", IEEE RA-L 2022). With ``tau_r = S_r^T F_r``,
``F`` the subtree sums of ``f`` (the RNEA's joint wrenches), ``Ic``/``Bc`` the subtree sums of
``I``/``B``, and the identity ``(S_c x S_r)^T F + S_r^T (S_c x* F) = 0``::

    d tau_r / d q_c  = S_r . (Ic_r Psidd_c + 2 Bc_r Psid_c)                    b(c) ancestor-or-self of b(r)
                     = S_r . (S_c x* F_c + Ic_c Psidd_c + 2 Bc_c Psid_c)       b(r) strict ancestor of b(c)
    d tau_r / d qd_c = S_r . (Ic_r Phi_c + 2 Bc_r S_c)                          b(c) ancestor-or-self of b(r)
                     = S_r . (Ic_c Phi_c + 2 Bc_c S_c)                          b(r) strict ancestor of b(c)
    Phi_c = 2 Psid_c + vJ x S_c   (vJ = v_b(c) - v_p: zero for 1-dof joints)

and zero where neither body is an ancestor of the other. ``q`` derivatives are taken in the
tangent space (``nv`` columns: ``jaxdyn.integrate(model, q, dq)``), as Pinocchio's.
"""

from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from .. import linalg, spatial, tree
from ..model import Model
from .aba import aba
from .common import check, full_precision, world_motion
from .crba import crba
from .innovations import mass_matrix_inverse
from .kinematics import dof_motions_world
from .rnea import rnea_full


def _crm(v):
    """``(v x)`` as a 6x6 matrix (motion cross product)."""
    W, V = spatial.skew(v[..., :3]), spatial.skew(v[..., 3:])
    Z = jnp.zeros_like(W)
    return jnp.concatenate([jnp.concatenate([W, Z], -1), jnp.concatenate([V, W], -1)], -2)


def _xbar(h):
    """``(h x-bar*)``: the 6x6 matrix of ``m -> m x* h`` for a force ``h = [n; f]``."""
    N, F = spatial.skew(h[..., :3]), spatial.skew(h[..., 3:])
    return -jnp.concatenate([jnp.concatenate([N, F], -1), jnp.concatenate([F, jnp.zeros_like(F)], -1)], -2)


def _world_inertia(poses: spatial.Pose, I: spatial.RigidInertia):
    return spatial.inertia_matrix(spatial.inertia_to_parent(poses, I))


class RNEADerivatives(NamedTuple):
    """``dtau_dq`` ``(nv, nv)`` (tangent-space columns) and ``dtau_dqd`` ``(nv, nv)``."""

    dtau_dq: Float[Array, "nv nv"]
    dtau_dqd: Float[Array, "nv nv"]


class ABADerivatives(NamedTuple):
    """``dqdd_dq`` ``(nv, nv)`` (tangent-space columns), ``dqdd_dqd`` ``(nv, nv)`` and
    ``dqdd_dtau = M^-1`` ``(nv, nv)``, plus ``qdd`` itself."""

    qdd: Float[Array, " nv"]
    dqdd_dq: Float[Array, "nv nv"]
    dqdd_dqd: Float[Array, "nv nv"]
    dqdd_dtau: Float[Array, "nv nv"]


@full_precision
def rnea_derivatives(
    model: Model,
    q: Float[Array, " nq"],
    qd: Float[Array, " nv"],
    qdd: Float[Array, " nv"],
    f_ext: Float[Array, "nb 6"] | None = None,
) -> RNEADerivatives:
    """``d tau / d q`` and ``d tau / d qd`` of :func:`jaxdyn.rnea` in closed form (module
    docstring). ``q`` columns are tangent-space directions (``integrate(model, q, dq)``), so for
    a free base or a spherical joint they are not the derivative w.r.t. the quaternion's entries.

    Cost: one RNEA and forward kinematics, O(N) subtree sums (:func:`jaxdyn.tree.subtree_sum`)
    and O(nv^2) 6-vector products as dense masked matrix products. Differentiable (plain JAX).
    """
    check(model, "rnea_derivatives", q=q, qd=qd, qdd=qdd, f_ext=f_ext)
    lay = model.layout
    dtype = model.dtype
    r = rnea_full(model, q, qd, qdd, f_ext)
    S, poses = dof_motions_world(model, q)  # (6, nv), body poses in the world
    S = S.T  # (nv, 6)
    v = spatial.motion_to_parent(poses, r.v)  # (nb, 6) world coordinates, about the world origin
    a = spatial.motion_to_parent(poses, r.a)
    F = spatial.force_to_parent(poses, r.f)  # subtree sums of f_k (the joint wrenches)
    I = model.body_inertias()
    Iw = _world_inertia(poses, I)  # (nb, 6, 6)
    h = spatial.mv(Iw, v)
    B2 = spatial.mm(-jnp.swapaxes(_crm(v), -1, -2), Iw) - spatial.mm(Iw, _crm(v)) + _xbar(h)  # 2 B_k
    Ic, B2c = tree.subtree_sum(lay, (Iw, B2))  # sums over each body's subtree (world coordinates)

    db = lay.dof_body  # (nv,) body of each dof
    par = np.asarray(model.topology.parents)[db]  # parent body of each dof's body, -1: the world
    zero = jnp.zeros((1, 6), dtype)
    v_ext = jnp.concatenate([v, zero])  # index nb (-1): the world, at rest
    a_ext = jnp.concatenate([a, world_motion(model, dtype)[None]])  # the world's acceleration: -g
    vp, ap = v_ext[par], a_ext[par]
    vJ = v[db] - vp
    Psid = spatial.cross_motion(vp, S)
    Psidd = spatial.cross_motion(ap, S) + spatial.cross_motion(vp, Psid)
    Phi = 2.0 * Psid + spatial.cross_motion(vJ, S)

    Icd, B2cd = Ic[db], B2c[db]  # (nv, 6, 6): composites of each dof's body
    alpha = spatial.mv(Icd, S)  # Ic_r S_r (Ic symmetric)
    beta = spatial.mtv(B2cd, S)  # (2 Bc_r)^T S_r
    Wq = spatial.cross_force(S, F[db]) + spatial.mv(Icd, Psidd) + spatial.mv(B2cd, Psid)
    Wqd = spatial.mv(Icd, Phi) + spatial.mv(B2cd, S)

    desc = lay.ancestor[db][:, db].T  # desc[r, c]: b(c) is b(r) or an ancestor of it
    strict = lay.ancestor[db][:, db] & (db[:, None] != db[None, :])  # b(r) strict ancestor of b(c)
    dq = jnp.where(desc, alpha @ Psidd.T + beta @ Psid.T, 0.0) + jnp.where(strict, S @ Wq.T, 0.0)
    dqd = jnp.where(desc, alpha @ Phi.T + beta @ S.T, 0.0) + jnp.where(strict, S @ Wqd.T, 0.0)
    return RNEADerivatives(dq, dqd)


@full_precision
def aba_derivatives(
    model: Model,
    q: Float[Array, " nq"],
    qd: Float[Array, " nv"],
    tau: Float[Array, " nv"],
    f_ext: Float[Array, "nb 6"] | None = None,
    *,
    minv: str = "cholesky",
) -> ABADerivatives:
    """Forward dynamics and its first derivatives, as Pinocchio's ``computeABADerivatives``:
    ``qdd = aba(...)``, ``dqdd/dq = -M^-1 dtau/dq``, ``dqdd/dqd = -M^-1 dtau/dqd``,
    ``dqdd/dtau = M^-1`` (the inverse-dynamics identity, Carpentier & Mansard RSS 2018 eq. (8)),
    with the RNEA derivatives of :func:`rnea_derivatives` at ``(q, qd, qdd)``.

    ``minv``: how ``M^-1`` is formed. ``"cholesky"`` (default): CRBA and a dense Cholesky
    inverse (:mod:`jaxdyn.linalg`), O(nv^3) in a few small loops; on the 2-core CPU it took a
    quarter of the time of ``"innovations"`` for talos (38 dof) and a third for panda, float32,
    batched (measured with LAPACK's factorisation).
    ``"innovations"``: :func:`jaxdyn.mass_matrix_inverse` (one Riccati gather and the O(N)
    inverse factor applied to each unit vector, O(N^2); JainRodriguez95 (4.1), Rodriguez86 (8.4)-(8.13)): the choice for
    long chains, where nv^3 dominates.

    ``q`` columns are tangent-space directions (``integrate(model, q, dq)``). For the
    derivative w.r.t. the raw coordinates use ``jax.jacfwd(jaxdyn.aba, argnums=1)``.
    """
    check(model, "aba_derivatives", q=q, qd=qd, tau=tau, f_ext=f_ext)
    if minv not in ("cholesky", "innovations"):
        raise ValueError(f"aba_derivatives: argument 'minv' must be 'cholesky' or 'innovations', got {minv!r}")
    qdd = aba(model, q, qd, tau, f_ext)
    d = rnea_derivatives(model, q, qd, qdd, f_ext)
    if minv == "cholesky":
        # jaxdyn.linalg's XLA loops, not LAPACK: batched (the knots of a trajectory, the slots
        # of trajopt.solve_batch on several CPU devices) jaxlib's LAPACK kernels block XLA's
        # thread pool and can deadlock it
        Minv = linalg.cho_solve(linalg.cholesky(crba(model, q)), jnp.eye(model.nv, dtype=model.dtype))
        Minv = 0.5 * (Minv + Minv.T)
    else:
        Minv = mass_matrix_inverse(model, q)
    return ABADerivatives(qdd, -(Minv @ d.dtau_dq), -(Minv @ d.dtau_dqd), Minv)
