"""Converters between MuJoCo's and jaxdyn's free-joint conventions (:mod:`jaxdyn.io.mjcf`, "Free
joints"): velocities, accelerations and generalised forces. Hinge, slide and ball dofs are the
same in both; only a free root's six entries change."""

from __future__ import annotations

import jax.numpy as jnp

from ... import spatial
from ...model import Model


def _R(qpos):
    """Body-to-world rotation of the free root (``qpos[3:7]`` is the same in both conventions)."""
    return spatial.quat_to_rotation(jnp.asarray(qpos)[3:7])


def velocity_from_mujoco(model: Model, qpos, qvel):
    """jaxdyn's ``qd (nv,)`` from MuJoCo's ``qvel (nv,)`` at ``qpos (nq,)``: identity but for a
    free root, whose ``[v_world; omega_body]`` becomes ``[omega_body; R^T v_world]``."""
    qvel = jnp.asarray(qvel)
    if not model.floating_base:
        return qvel
    return jnp.concatenate([qvel[3:6], _R(qpos).T @ qvel[0:3], qvel[6:]])


def velocity_to_mujoco(model: Model, q, qd):
    """MuJoCo's ``qvel (nv,)`` from jaxdyn's ``qd (nv,)`` at ``q (nq,)``: the inverse of
    :func:`velocity_from_mujoco`."""
    qd = jnp.asarray(qd)
    if not model.floating_base:
        return qd
    return jnp.concatenate([_R(q) @ qd[3:6], qd[0:3], qd[6:]])


def acceleration_from_mujoco(model: Model, qpos, qvel, qacc):
    """jaxdyn's ``qdd (nv,)`` from MuJoCo's ``qacc (nv,)``; it needs the velocity: the
    body-frame linear acceleration is ``R^T a_world - omega x v_body``."""
    qacc = jnp.asarray(qacc)
    if not model.floating_base:
        return qacc
    R = _R(qpos)
    w, vb = qvel[3:6], R.T @ qvel[0:3]
    return jnp.concatenate([qacc[3:6], R.T @ qacc[0:3] - jnp.cross(w, vb), qacc[6:]])


def acceleration_to_mujoco(model: Model, q, qd, qdd):
    """MuJoCo's ``qacc (nv,)`` from jaxdyn's ``qdd (nv,)``: ``a_world = R (dv_body/dt + omega x
    v_body)``."""
    qdd = jnp.asarray(qdd)
    if not model.floating_base:
        return qdd
    w, vb = qd[0:3], qd[3:6]
    return jnp.concatenate([_R(q) @ (qdd[3:6] + jnp.cross(w, vb)), qdd[0:3], qdd[6:]])


def force_from_mujoco(model: Model, qpos, qfrc):
    """jaxdyn's generalised force ``(nv,)`` from MuJoCo's (``qfrc_applied``, ``qfrc_bias``, ...).

    By power duality ``tau_jaxdyn = T^T qfrc`` with ``qvel = T qd``; ``T`` (a permutation with
    a rotation) is orthogonal, so ``T^T = T^-1``: the map is :func:`velocity_from_mujoco`'s."""
    return velocity_from_mujoco(model, qpos, qfrc)


def force_to_mujoco(model: Model, q, tau):
    """MuJoCo's generalised force ``(nv,)`` from jaxdyn's ``tau``: :func:`velocity_to_mujoco`'s
    map (see :func:`force_from_mujoco`)."""
    return velocity_to_mujoco(model, q, tau)
