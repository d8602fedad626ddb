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

import jax.numpy as jnp

from . import spatial

NQ = {"revolute": 1, "continuous": 1, "prismatic": 1, "spherical": 4, "free": 7}
NV = {"revolute": 1, "continuous": 1, "prismatic": 1, "spherical": 3, "free": 6}
TYPES = tuple(NQ)


def link_poses(layout, placement: spatial.Pose, axis, q_link):
    """Placement of every scanned link's body frame in its parent body frame, vectorised.

    ``X = placement o X_J(q)`` where ``X_J`` is the joint motion (Rodriguez86 (3.5): the joint's
    rotation sits inside ``phi``, applied after the placement).

    Args:
      layout: the model's static :class:`~jaxdyn.model.Layout`.
      placement: joint placements of the scanned links, ``R (n,3,3)``, ``p (n,3)``.
      axis: unit joint axes ``(n, 3)``.
      q_link: per-link configuration slots ``(n, layout.qw)``.
    """
    q0 = q_link[..., 0]
    angle = jnp.where(layout.is_rev, q0, 0.0) if layout.any_pri or layout.any_sph else q0
    R_j = spatial.rotation_axis_angle(axis, angle)
    p_j = jnp.zeros_like(axis)
    if layout.any_pri:
        p_j = axis * jnp.where(layout.is_pri, q0, 0.0)[..., None]
    if layout.any_sph:
        unit = jnp.array([1.0, 0.0, 0.0, 0.0], q_link.dtype)
        quat = jnp.where(layout.is_sph[:, None], q_link, unit)
        R_j = jnp.where(layout.is_sph[:, None, None], spatial.quat_to_rotation(quat), R_j)
    return spatial.Pose(spatial.mm(placement.R, R_j), placement.p + spatial.mv(placement.R, p_j))


def link_subspaces(layout, axis):
    """Motion subspaces ``S`` (Rodriguez86's ``H^T``), ``(n, 6, k)`` in the child frames.

    Revolute ``[axis; 0]``, prismatic ``[0; axis]``, spherical ``[1; 0]``; padded columns of
    1-dof links are zero when the model has a spherical joint (k = 3).
    """
    zero = jnp.zeros_like(axis)
    if layout.any_pri:
        rev = jnp.asarray(layout.is_rev)[:, None]
        col = jnp.concatenate([jnp.where(rev, axis, zero), jnp.where(rev, zero, axis)], -1)
    else:
        col = jnp.concatenate([axis, zero], -1)
    if layout.k == 1:
        return col[..., None]
    eye = jnp.concatenate([jnp.eye(3, dtype=axis.dtype), jnp.zeros((3, 3), axis.dtype)], 0)
    pad = jnp.concatenate([col[..., None], jnp.zeros(col.shape + (2,), axis.dtype)], -1)
    return jnp.where(jnp.asarray(layout.is_sph)[:, None, None], eye, pad)


def free_pose(q_root) -> spatial.Pose:
    """Pose of a free-flying root from ``[x, y, z, qw, qx, qy, qz]``."""
    return spatial.Pose(spatial.quat_to_rotation(q_root[3:7]), q_root[0:3])


def free_subspace(dtype):
    """Motion subspace of the free joint: ``1_6`` (body-frame ``[omega; v]``)."""
    return jnp.eye(6, dtype=dtype)
