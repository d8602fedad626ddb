"""Operations on the configuration manifold: neutral and random configurations, integration,
difference and the map from velocities to configuration rates.

Joints are grouped by static type; each group's operation is the joint type's own
(:mod:`jaxdyn.joints`), vectorised over the group: a handful of gathers/scatters per type present,
independent of the number of joints.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from . import joints
from .model import Model, Topology, layout


class Group(NamedTuple):
    """The joints on one configuration space (:class:`jaxdyn.joints.Space`), in body order:
    ``q`` ``(g, nq)`` and ``v`` ``(g, nv)`` indices and the default half-ranges ``(g,)`` of their
    joint types (:meth:`jaxdyn.joints.JointType.default_range`)."""

    space: joints.Space
    q: np.ndarray
    v: np.ndarray
    half: np.ndarray


@functools.lru_cache(maxsize=256)
def groups(topo: Topology) -> tuple[Group, ...]:
    """The model's joints grouped by configuration space, in first-seen order."""
    lay = layout(topo)
    types = [joints.get(t) for t in topo.joint_types]
    out = []
    for space in dict.fromkeys(jt.space for jt in types):
        idx = [j for j, jt in enumerate(types) if jt.space is space]
        nq, nv = types[idx[0]].nq, types[idx[0]].nv
        q = np.array([np.arange(lay.q_start[j], lay.q_start[j] + nq) for j in idx], np.int32).reshape(-1, nq)
        v = np.array([np.arange(lay.v_start[j], lay.v_start[j] + nv) for j in idx], np.int32).reshape(-1, nv)
        out.append(Group(space, q, v, np.array([types[j].default_range() for j in idx], np.float64)))
    return tuple(out)


@functools.lru_cache(maxsize=256)
def one_dof_indices(topo: Topology) -> tuple[np.ndarray, np.ndarray]:
    """``(q, v)`` indices of the 1-dof joints (``nq == nv == 1``), in body order."""
    lay = layout(topo)
    one = np.flatnonzero(joints.one_dof(topo.joint_types))
    return lay.q_start[one].astype(np.int32), lay.v_start[one].astype(np.int32)


def _check(model: Model, name: str, x, size: int):
    if x.shape[-1:] != (size,):
        raise ValueError(
            f"{name}: expected a trailing dimension of {size} for model '{model.name}', got shape {x.shape}"
        )


def neutral(model: Model) -> Float[Array, " nq"]:
    """The neutral configuration: zero joint positions, identity quaternions, base at the origin."""
    q = jnp.zeros(model.nq, model.dtype)
    for g in groups(model.topology):
        q0 = np.asarray(g.space.neutral, np.float64)
        if np.any(q0):
            q = q.at[g.q].set(jnp.broadcast_to(jnp.asarray(q0, model.dtype), g.q.shape))
    return q


def random_configuration(model: Model, key) -> Float[Array, " nq"]:
    """A random configuration: 1-dof joints uniform within finite limits (``[-pi, pi]`` for
    angles and ``[-1, 1]`` m for lengths without usable limits), uniformly random unit
    quaternions, a free base uniform in ``[-1, 1]^3``."""
    if not isinstance(model, Model):
        raise TypeError(
            f"random_configuration: the first argument must be a jaxdyn.Model, got "
            f"{'an array' if hasattr(model, 'shape') else type(model).__name__} (the call is "
            "random_configuration(model, key))"
        )
    if not hasattr(key, "dtype"):
        raise TypeError(
            f"random_configuration: key must be a JAX random key (jax.random.key(0) or "
            f"jax.random.PRNGKey(0)), got {type(key).__name__} {key!r}"
        )
    q = jnp.zeros(model.nq, model.dtype)
    keys = jax.random.split(key, 4)  # one stream per space (jaxdyn.joints.Space.random)
    for g in groups(model.topology):
        q = q.at[g.q].set(g.space.random(keys, model.q_lower[g.q], model.q_upper[g.q], g.half, model.dtype))
    return q


def integrate(model: Model, q: Float[Array, " nq"], v: Float[Array, " nv"], dt=1.0) -> Float[Array, " nq"]:
    """``q (+) v dt`` on the configuration manifold (exponential map, as Pinocchio's integrate).

    Per joint type (:mod:`jaxdyn.joints`): 1-dof ``q + v dt``; spherical ``q * exp(omega dt)``;
    free base ``M * exp6(v dt)`` with the body-frame twist ``[omega; v]``.
    """
    q, v = jnp.asarray(q), jnp.asarray(v)
    _check(model, "integrate: q", q, model.nq)
    _check(model, "integrate: v", v, model.nv)
    out = q
    for g in groups(model.topology):
        out = out.at[g.q].set(g.space.integrate(q[g.q], v[g.v] * dt))
    return out


def difference(model: Model, q0: Float[Array, " nq"], q1: Float[Array, " nq"]) -> Float[Array, " nv"]:
    """The velocity ``v`` with ``integrate(q0, v, 1) == q1`` (logarithm map; Pinocchio's difference)."""
    q0, q1 = jnp.asarray(q0), jnp.asarray(q1)
    _check(model, "difference: q0", q0, model.nq)
    _check(model, "difference: q1", q1, model.nq)
    v = jnp.zeros(model.nv, q0.dtype)
    for g in groups(model.topology):
        v = v.at[g.v].set(g.space.difference(q0[g.q], q1[g.q]))
    return v


def configuration_derivative(model: Model, q: Float[Array, " nq"], v: Float[Array, " nv"]) -> Float[Array, " nq"]:
    """``dq/dt`` for velocity ``v``: ``qd`` for 1-dof joints, ``q * [0, omega] / 2`` for
    quaternions, ``R v`` for the base position."""
    q, v = jnp.asarray(q), jnp.asarray(v)
    qdot = jnp.zeros(model.nq, jnp.result_type(q, v))
    for g in groups(model.topology):
        qdot = qdot.at[g.q].set(g.space.rate(q[g.q], v[g.v]))
    return qdot


def normalize(model: Model, q: Float[Array, " nq"]) -> Float[Array, " nq"]:
    """Project the quaternions in ``q`` back to unit norm."""
    q = jnp.asarray(q)
    for g in groups(model.topology):
        if g.space.quaternion_at is not None:
            q = q.at[g.q].set(g.space.normalize(q[g.q]))
    return q
