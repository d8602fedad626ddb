"""The bodies' world frames and velocities that the contacts are evaluated with, the velocity
Jacobians of material points, and the sum of point forces into body wrenches."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from ..algorithms.kinematics import body_velocities, forward_kinematics, jacobians_from_world
from ..model import Model
from ..spatial import Pose, cross, mm, mtv, mv


class Frames(NamedTuple):
    """World pose and world-axes velocity of every body, the world appended as row ``nb`` (so
    that body index ``-1`` addresses it): rotation ``R``, origin ``o``, angular ``w`` and the
    linear velocity ``v`` of the point at the origin."""

    R: Float[Array, "nb1 3 3"]
    o: Float[Array, "nb1 3"]
    w: Float[Array, "nb1 3"]
    v: Float[Array, "nb1 3"]


def _frames(model: Model, q, qd=None, X=None, kinematics=None) -> Frames:
    """The frames at ``(q, qd)``; without ``qd`` the velocities are zero (no RNEA pass). ``X``:
    the body poses at ``q`` if already computed; ``kinematics``: the
    :func:`jaxdyn.kinematics` record at ``q``, if computed (its poses, and its joint data for
    the velocities)."""
    if X is None:
        X = forward_kinematics(model, q) if kinematics is None else kinematics.poses
    dt = model.dtype
    z = jnp.zeros((1, 3), dt)
    R = jnp.concatenate([X.R, jnp.eye(3, dtype=dt)[None]])
    if qd is None:
        zw = jnp.zeros((model.nb + 1, 3), dt)
        return Frames(R, jnp.concatenate([X.p, z]), zw, zw)
    V = body_velocities(model, q, qd, kinematics)  # (nb, 6) body frame [omega; v]
    return Frames(
        R,
        jnp.concatenate([X.p, z]),
        jnp.concatenate([mv(X.R, V[:, :3]), z]),
        jnp.concatenate([mv(X.R, V[:, 3:]), z]),
    )


def point_velocity(F: Frames, body, p):
    """World velocity of the material point of ``body`` (index array) at the world point ``p``."""
    return F.v[body] + cross(F.w[body], p - F.o[body])


def geom_poses(model: Model, F: Frames):
    """World rotation and centre of every geom."""
    g = model.geoms
    assert g is not None  # a model with geoms (make_model gives every model its Geoms)
    b = np.asarray(g.body, np.int64)
    Rb = F.R[b]
    return mm(Rb, g.R), F.o[b] + mv(Rb, g.pos)


def add_wrenches(out, F: Frames, body, point, f, torque=None):
    """Add the world forces ``f`` at world points ``point`` (and the world couples ``torque``)
    to the rows ``body`` of ``out`` (``(nb + 1, 6)``, the world last) as body-frame wrenches
    about the body origins."""
    R, o = F.R[body], F.o[body]
    moment = cross(point - o, f) if torque is None else cross(point - o, f) + torque
    w = jnp.concatenate([mtv(R, moment), mtv(R, f)], -1)
    return out.at[body].add(w)


def point_jacobians(model: Model, Jw, bodies, points, angular=False):
    """World-frame velocity Jacobians ``(m, 3, nv)`` of the material points of ``bodies``
    (``-1``: the world, zero rows) at the world ``points``: ``v_p = v_O + omega x p`` from the
    world Jacobian ``Jw`` about the world origin (Rodriguez86 (7.2)); with ``angular``, ``(m, 6,
    nv)``, the angular velocity's rows (world axes) first."""
    b: jax.Array | np.ndarray
    if isinstance(bodies, jax.Array):
        b = jnp.where(bodies < 0, model.nb, bodies)
    else:
        b = np.where(np.asarray(bodies, np.int64) < 0, model.nb, np.asarray(bodies, np.int64))
    eye = jnp.broadcast_to(jnp.eye(3, dtype=points.dtype), (len(b), 3, 3))
    J = jacobians_from_world(model, Jw, Pose(eye, points), b, "local_world_aligned")
    return J if angular else J[:, 3:]
