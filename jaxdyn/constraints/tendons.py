"""Tendon kinematics: the lengths and Jacobians of fixed and spatial tendons (MuJoCo's
``ten_length`` and ``ten_J``; documentation, "Modeling", section "Tendons").

Glossary: ``L (nt,)`` tendon lengths, ``JT (nt, nv)`` their Jacobians (``dL/dt = JT qd``),
``p_k`` the world position of the ``k``-th point of a spatial tendon's path, ``Jp_k (3, nv)``
its point Jacobian, ``u_k`` the unit vector of the segment from ``p_k`` to ``p_k+1``.

A fixed tendon is linear in the positions of 1-dof joints:

    L = coef_q q,        JT = coef_v.

A spatial tendon through the sites ``s_1 .. s_n`` (no wrapping geoms, no pulleys) is the
polyline through them:

    L = sum_k |p_k+1 - p_k|,        JT = sum_k u_k^T (Jp_k+1 - Jp_k),

with ``Jp = v_o + w x p`` over the dofs that move the site's body (``w``, ``v_o`` the world
motion of each dof about the world origin, :func:`jaxdyn.algorithms.kinematics.dof_motions_world`).
A segment of zero length adds nothing to ``JT`` (its direction is undefined there).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float


def _unit(d):
    """``(d / |d|, |d|)`` with finite values and gradients at ``d = 0`` (zero there)."""
    n2 = jnp.sum(d * d)
    ok = n2 > 0
    n = jnp.where(ok, jnp.sqrt(jnp.where(ok, n2, 1.0)), 0.0)
    return jnp.where(ok, d / jnp.where(ok, n, 1.0), 0.0), n


def kinematics(model, q: Float[Array, " nq"]) -> tuple[Float[Array, " nt"], Float[Array, "nt nv"]]:
    """The lengths ``L (nt,)`` and Jacobians ``JT (nt, nv)`` of the tendons of
    ``model.constraints`` at ``q`` (module docstring)."""
    from ..algorithms.kinematics import dof_motions_world

    c = model.constraints
    dtype = model.dtype
    q = jnp.asarray(q, dtype)
    L = c.coef_q @ q
    JT = c.coef_v
    if not any(c.tendon_path):
        return L, JT
    lay = model.layout
    Jw, poses = dof_motions_world(model, q)
    Rb = jnp.concatenate([poses.R, jnp.eye(3, dtype=dtype)[None]])
    pb = jnp.concatenate([poses.p, jnp.zeros((1, 3), dtype)])
    anc = np.concatenate([lay.ancestor, np.zeros((model.nb, 1), bool)], 1)[lay.dof_body]  # (nv, nb+1)
    body = np.asarray([model.nb if b < 0 else b for b in c.path_body], np.int32)
    p = jnp.einsum("kij,kj->ki", Rb[body], c.path_point) + pb[body]  # (npath, 3)
    mask = jnp.asarray(anc[:, body].T, dtype)  # (npath, nv)
    ang = Jw[:3][None] * mask[:, None]  # (npath, 3, nv)
    Jp = Jw[3:][None] * mask[:, None] + jnp.cross(jnp.swapaxes(ang, 1, 2), p[:, None]).swapaxes(1, 2)
    lengths, rows = [], []
    for t, path in enumerate(c.tendon_path):
        if not path:
            lengths.append(L[t])
            rows.append(JT[t])
            continue
        lt, jt = jnp.zeros((), dtype), jnp.zeros(model.nv, dtype)
        for a, b in zip(path[:-1], path[1:]):
            u, n = _unit(p[b] - p[a])
            lt = lt + n
            jt = jt + u @ (Jp[b] - Jp[a])
        lengths.append(lt)
        rows.append(jt)
    return jnp.stack(lengths), jnp.stack(rows)
