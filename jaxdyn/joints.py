"""Joint types: configuration sizes, joint transforms, motion subspaces, configuration manifolds.

Every joint type lives here, and nowhere else. Dispatch is on the *static* joint type in Python
at trace time (never a traced switch over types): the per-link work inside the traversals is
branch-free.

Supported types (``nq``/``nv``):

* ``revolute`` / ``continuous`` (1/1): rotation by ``q`` about the unit ``axis`` (joint frame);
  ``continuous`` is a revolute joint without position limits (``q`` is the angle, not
  Pinocchio's ``(cos, sin)`` pair);
* ``prismatic`` (1/1): translation by ``q`` along ``axis``;
* ``spherical`` (4/3): ``q`` a unit quaternion ``[w, x, y, z]`` (child-to-parent rotation),
  velocity the angular velocity in the child frame;
* ``free`` (7/6, root body only): ``q = [x, y, z, qw, qx, qy, qz]`` (world position and
  body-to-world orientation), velocity ``[omega; v]`` in the body frame.

Fixed joints do not exist at run time: the URDF loader merges them into the parent body.
"""

from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp
import numpy as np
from jax import Array

from . import scalars, spatial

NQ = {"revolute": 1, "continuous": 1, "prismatic": 1, "spherical": 4, "free": 7}
NV = {"revolute": 1, "continuous": 1, "prismatic": 1, "spherical": 3, "free": 6}
TYPES = tuple(NQ)


# --- 1-dof joints: the joint motion written once ---------------------------------------------
#
# A revolute or prismatic joint composed with its placement ``(R0, p0)`` is affine in
# ``(1, cos q, sin q, q)``. Rodrigues' formula for a unit axis ``u``,
# ``R_J = u u^T + cos q (1 - u u^T) + sin q [u]x``, gives
#
#     R(q) = A0 + cos q A1 + sin q A2,    p(q) = p0 + q d,    S = [sa; sl]         (J1)
#
# revolute:  A0 = R0 u u^T, A1 = R0 - A0, A2 = R0 [u]x, d = 0,      sa = u, sl = 0;
# prismatic: A0 = R0,       A1 = A2 = 0,                d = R0 u,  sa = 0, sl = u.
#
# :func:`one_dof_numbers` computes the model-only numbers, :func:`one_dof_motion` and
# :func:`one_dof_subspace` evaluate (J1). Every executor uses them: the per-sample algorithms
# (:func:`link_poses`, :func:`link_subspaces`, arrays over the links) and the struct-of-arrays
# kernels (:mod:`jaxdyn.kernels.soa`, tuples of ``(B,)`` arrays or of Python-float constants).
# A new 1-dof joint type whose motion has the form (J1) needs its numbers here and its name in
# NQ/NV and in the kernels' list of supported types; no algorithm or executor changes.


class OneDof(NamedTuple):
    """The numbers of (J1) per link: ``A0, A1, A2`` ``(n, 3, 3)``, ``p0, d, sa, sl`` ``(n, 3)``;
    ``d`` and ``sl`` are None when no link is prismatic (structural zeros)."""

    A0: Array
    A1: Array
    A2: Array
    p0: Array
    d: Array | None
    sa: Array
    sl: Array | None


def one_dof_numbers(R0, p0, u, prismatic=None) -> OneDof:
    """The numbers of (J1) for links with placements ``(R0 (n,3,3), p0 (n,3))`` and unit axes
    ``u (n, 3)``; ``prismatic``: a static boolean ``(n,)`` mask of the prismatic links (None:
    all revolute)."""
    A0 = spatial.mm(R0, u[..., :, None] * u[..., None, :])
    A1, A2 = R0 - A0, spatial.mm(R0, spatial.skew(u))
    sa, sl = one_dof_axes(u, prismatic)
    if sl is None:
        return OneDof(A0, A1, A2, p0, None, sa, None)
    m = jnp.asarray(np.asarray(prismatic), u.dtype)[:, None, None]
    return OneDof((1.0 - m) * A0 + m * R0, (1.0 - m) * A1, (1.0 - m) * A2, p0, spatial.mv(R0, sl), sa, sl)


def one_dof_axes(u, prismatic=None):
    """``(sa, sl)`` of (J1) for unit axes ``u (n, 3)``: ``(u, None)`` when no link is prismatic
    (``prismatic`` None or all False), else ``u`` masked by revolute and by prismatic links."""
    if prismatic is None or not np.any(prismatic):
        return u, None
    pri = jnp.asarray(np.asarray(prismatic), u.dtype)[:, None]
    return (1.0 - pri) * u, pri * u


def one_dof_motion(A0, A1, A2, p0, d, q, kind: str):
    """(J1): ``R`` (9 entries, row-major) and ``p`` (3) of a link from the 9 entries of
    ``A0, A1, A2`` and the 3 of ``p0, d`` (any scalars: arrays that broadcast with ``q``, or
    Python floats, whose zeros drop out). ``kind`` (static): ``"revolute"``, ``"prismatic"``,
    or ``"either"`` for numbers of a mixed set of links (both terms, with the zeros of
    :func:`one_dof_numbers` as data)."""
    if kind == "prismatic":
        return tuple(A0), tuple(scalars.add(pk, scalars.mul(q, dk)) for pk, dk in zip(p0, d))
    s, c = jnp.sin(q), jnp.cos(q)
    R = tuple(scalars.add(a0, scalars.mul(c, a1), scalars.mul(s, a2)) for a0, a1, a2 in zip(A0, A1, A2))
    if kind == "revolute" or d is None:
        return R, tuple(p0)
    return R, tuple(scalars.add(pk, scalars.mul(q, dk)) for pk, dk in zip(p0, d))


def one_dof_subspace(sa, sl, kind: str):
    """(J1): the motion subspace ``(sa, sl)`` of a link; the empty half is zeros (Python
    literals) for a ``"revolute"`` or ``"prismatic"`` link, and absent numbers (None) too."""
    zero = (0.0, 0.0, 0.0)
    if kind == "revolute" or sl is None:
        return tuple(sa), zero
    if kind == "prismatic":
        return zero, tuple(sl)
    return tuple(sa), tuple(sl)


def _matrix_entries(a):
    """The 9 entries (row-major) of ``(..., 3, 3)`` arrays, each ``(...)``."""
    return tuple(a[..., i, j] for i in range(3) for j in range(3))


def _vector_entries(a):
    """The 3 entries of ``(..., 3)`` arrays, each ``(...)``."""
    return tuple(a[..., i] for i in range(3))


def link_poses(layout, placement: spatial.Pose, axis, q_link):
    """Placement of every scanned link's body frame in its parent body frame, vectorised.

    ``X = placement o X_J(q)`` where ``X_J`` is the joint motion (Rodriguez86 (3.5): the joint's
    rotation sits inside ``phi``, applied after the placement); (J1) for the 1-dof joints.

    Args:
      layout: the model's static :class:`~jaxdyn.model.Layout`.
      placement: joint placements of the scanned links, ``R (n,3,3)``, ``p (n,3)``.
      axis: unit joint axes ``(n, 3)``.
      q_link: per-link configuration slots ``(n, layout.qw)``.
    """
    num = one_dof_numbers(placement.R, placement.p, axis, layout.is_pri if layout.any_pri else None)
    q0 = q_link[..., 0]
    if layout.any_sph:
        q0 = jnp.where(layout.is_sph, 0.0, q0)
    M, V = _matrix_entries, _vector_entries
    d = None if num.d is None else V(num.d)
    R, p = one_dof_motion(M(num.A0), M(num.A1), M(num.A2), V(num.p0), d, q0, "either")
    R = jnp.stack([jnp.broadcast_to(r, q0.shape) for r in R], -1).reshape(q0.shape + (3, 3))
    p = jnp.stack([jnp.broadcast_to(x, q0.shape) for x in p], -1)
    if layout.any_sph:
        unit = jnp.array([1.0, 0.0, 0.0, 0.0], q_link.dtype)
        quat = jnp.where(layout.is_sph[:, None], q_link, unit)
        R = jnp.where(layout.is_sph[:, None, None], spatial.mm(placement.R, spatial.quat_to_rotation(quat)), R)
    return spatial.Pose(R, p)


def link_subspaces(layout, axis):
    """Motion subspaces ``S`` (Rodriguez86's ``H^T``), ``(n, 6, k)`` in the child frames.

    Revolute ``[axis; 0]``, prismatic ``[0; axis]`` ((J1)), spherical ``[1; 0]``; padded columns
    of 1-dof links are zero when the model has a spherical joint (k = 3).
    """
    sa, sl = one_dof_axes(axis, layout.is_pri if layout.any_pri else None)
    col = jnp.concatenate([sa, jnp.zeros_like(axis) if sl is None else sl], -1)
    if layout.k == 1:
        return col[..., None]
    eye = jnp.concatenate([jnp.eye(3, dtype=axis.dtype), jnp.zeros((3, 3), axis.dtype)], 0)
    pad = jnp.concatenate([col[..., None], jnp.zeros(col.shape + (2,), axis.dtype)], -1)
    return jnp.where(jnp.asarray(layout.is_sph)[:, None, None], eye, pad)


def free_pose(q_root) -> spatial.Pose:
    """Pose of a free-flying root from ``[x, y, z, qw, qx, qy, qz]`` (the quaternion normalised,
    :func:`jaxdyn.spatial.quaternion_matrix`)."""
    return spatial.Pose(spatial.quat_to_rotation(q_root[3:7]), q_root[0:3])


def free_subspace(dtype):
    """Motion subspace of the free joint: ``1_6`` (body-frame ``[omega; v]``)."""
    return jnp.eye(6, dtype=dtype)
