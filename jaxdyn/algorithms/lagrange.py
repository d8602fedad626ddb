"""The Lagrange (Uicker/Kahn/Lewis 4x4) formulation of Turney80 (Turney, Mudge & Lee 1980),
as an independent O(n^3) cross-check of RNEA.

``tau_i = sum_q sum_j Tr(dT_q/dq_j  J_q  dT_q/dq_i^T) qdd_j
        + sum_q sum_jk Tr(d2T_q/dq_j dq_k  J_q  dT_q/dq_i^T) qd_j qd_k
        - sum_q g^T dT_q/dq_i (m_q r_q)``                     (Turney80 (2.7)-(2.10))

with ``T_q`` the 4x4 world pose of body q, ``J_q`` its 4x4 pseudo-inertia about the body origin
(Turney80 (1.24)-(1.28): ``[[J, m c], [m c^T, m]]``, ``J = tr(Ibar)/2 1 - Ibar``) and ``r_q`` the
homogeneous centre of mass. Derivatives are matrix products (Turney80 (1.11)-(1.12), Appendix):
``dT_q/dq_j = W_j T_q`` and ``d2T_q/dq_u dq_v = W_u W_v T_q`` (``u`` the joint nearer the base),
where ``W_j = T_j Qhat_j T_j^-1`` and ``Qhat_j`` is the 4x4 generator of joint j in its own frame
(Turney80's ``Q`` operator; ``[[skew(axis), 0], [0, 0]]`` for revolute joints,
``[[0, axis], [0, 0]]`` for prismatic ones). The paper treats revolute DH chains; the same
formulas hold for any tree of 1-dof joints, which is what this module accepts.

Cost: ``dT`` has n^2 and ``d2T`` n^3 4x4 blocks, contracted by einsums: O(n^3) for ``tau``
(``M`` and the velocity term), O(n^4) for the full Christoffel tensor of :func:`lagrange_mcg`.
"""

from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from .. import joints, spatial
from ..model import Model
from .common import check, full_precision
from .kinematics import forward_kinematics


def _check_model(model: Model):
    bad = [n for n, one in zip(model.joint_names, joints.one_dof(model.joint_types)) if not one]
    if bad:
        raise ValueError(
            f"lagrange: only 1-dof joints on a fixed base are supported (Turney80); "
            f"joint '{bad[0]}' is {model.joint_types[model.joint_names.index(bad[0])]}"
        )


def _homogeneous(R, p):
    n = R.shape[0]
    top = jnp.concatenate([R, p[:, :, None]], -1)
    bot = jnp.broadcast_to(jnp.array([0.0, 0.0, 0.0, 1.0], R.dtype), (n, 1, 4))
    return jnp.concatenate([top, bot], -2)


def pseudo_inertia(model: Model) -> Float[Array, "nb 4 4"]:
    """4x4 pseudo-inertias about the body origins (Turney80 (1.26)-(1.28))."""
    I = model.body_inertias()
    J = 0.5 * jnp.trace(I.Ibar, axis1=-2, axis2=-1)[:, None, None] * jnp.eye(3, dtype=I.h.dtype) - I.Ibar
    top = jnp.concatenate([J, I.h[:, :, None]], -1)
    bot = jnp.concatenate([I.h[:, None, :], I.m[:, None, None]], -1)
    return jnp.concatenate([top, bot], -2)


@full_precision
def _derivatives(model: Model, q):
    """World poses T (n,4,4), dT[q, j] (n,n,4,4), d2T[q, j, k] (n,n,n,4,4)."""
    poses = forward_kinematics(model, q)
    T = _homogeneous(poses.R, poses.p)
    ax = model.axis
    # the joints' 4x4 generators [[sa~, sl], [0, 0]] from their motion subspaces S = [sa; sl] (J1)
    sa, sl = joints.one_dof_axes(ax, *joints.model_screw(model))
    sl = jnp.zeros_like(ax) if sl is None else sl
    Qh = jnp.concatenate(
        [jnp.concatenate([spatial.skew(sa), sl[:, :, None]], -1), jnp.zeros((model.nb, 1, 4), ax.dtype)], -2
    )
    Tinv = _homogeneous(jnp.swapaxes(poses.R, 1, 2), -spatial.mtv(poses.R, poses.p))
    W = T @ Qh @ Tinv  # (n,4,4) world generators
    anc = jnp.asarray(model.layout.ancestor)  # anc[j, q]: j ancestor-or-self of q
    dT = jnp.where(anc.T[:, :, None, None], jnp.einsum("jab,qbc->qjac", W, T), 0.0)  # (q, j)
    # d2T[q, j, k] = W_u W_v T_q with u the ancestor of (j, k) nearer the base
    WW = jnp.einsum("jab,kbc->jkac", W, W)
    jk = np.arange(model.nb)
    ordered = jnp.where(jnp.asarray(jk[:, None] <= jk[None, :])[:, :, None, None], WW, jnp.swapaxes(WW, 0, 1))
    d2T = jnp.einsum("jkab,qbc->qjkac", ordered, T)
    both = anc.T[:, :, None] & anc.T[:, None, :]
    d2T = jnp.where(both[..., None, None], d2T, 0.0)
    return T, dT, d2T


class LagrangeTerms(NamedTuple):
    M: Float[Array, "n n"]
    C: Float[Array, "n n n"]  # C[i, j, k]: Christoffel-type tensor, c_i = qd^T C[i] qd
    G: Float[Array, " n"]


@full_precision
def lagrange_mcg(model: Model, q: Float[Array, " nq"]) -> LagrangeTerms:
    """``M``, the tensor ``C^i_jk`` and ``G`` of Turney80 (2.11), with
    ``tau = M qdd + [qd^T C^i qd]_i + G``. O(n^4) (the tensor itself has n^3 entries)."""
    _check_model(model)
    check(model, "lagrange_mcg", q=q)
    T, dT, d2T = _derivatives(model, q)
    Jp = pseudo_inertia(model)
    M = jnp.einsum("qjab,qbc,qiac->ij", dT, Jp, dT)
    C = jnp.einsum("qjkab,qbc,qiac->ijk", d2T, Jp, dT)
    G = _gravity(model, T, dT)
    return LagrangeTerms(M + jnp.diag(model.armature), C, G)


@full_precision
def _gravity(model, T, dT):
    I = model.body_inertias()
    mr = jnp.concatenate([I.h, I.m[:, None]], -1)  # m_q [c_q; 1]
    g = jnp.concatenate([model.gravity, jnp.zeros(1, model.gravity.dtype)])
    return -jnp.einsum("a,qiab,qb->i", g, dT, mr)


@full_precision
def lagrange_dynamics(
    model: Model, q: Float[Array, " nq"], qd: Float[Array, " nv"], qdd: Float[Array, " nv"]
) -> Float[Array, " nv"]:
    """Inverse dynamics by the Lagrange formulation in O(n^3): the velocity product
    ``sum_jk d2T_q qd_j qd_k`` is formed once per body (Turney80's reuse of products)."""
    _check_model(model)
    check(model, "lagrange_dynamics", q=q, qd=qd, qdd=qdd)
    qd, qdd = jnp.asarray(qd, model.dtype), jnp.asarray(qdd, model.dtype)
    T, dT, d2T = _derivatives(model, q)
    Jp = pseudo_inertia(model)
    acc = jnp.einsum("qjab,j->qab", dT, qdd) + jnp.einsum("qjkab,j,k->qab", d2T, qd, qd)
    tau = jnp.einsum("qab,qbc,qiac->i", acc, Jp, dT)
    return tau + _gravity(model, T, dT) + model.armature * qdd


def paper_op_counts(n: int) -> dict:
    """Operation counts of Turney80 Table 1 (multiplications, additions) for an n-link arm."""
    return {
        "lagrange": (27 * n**3 / 2 + 165 * n**2 / 2 + 5 * n, 40 * n**3 / 3 + 58 * n**2 - 64 * n / 3),
        "newton_euler": (108 * n - 12, 100 * n - 9),
        "modified_newton_euler": (90 * n - 27, 88 * n - 24),
    }
