"""Energies and momentum (Rodriguez86 (3.2)-(3.4): link kinetic energy ``V^T M V / 2``)."""

from __future__ import annotations

import jax.numpy as jnp
from jaxtyping import Array, Float

from .. import spatial
from ..model import Model
from .common import check, full_precision
from .kinematics import body_velocities, center_of_mass, forward_kinematics


def kinetic_energy(model: Model, q, qd) -> Float[Array, ""]:
    """``sum_k v_k^T I_k v_k / 2`` (= ``qd^T M qd / 2``)."""
    check(model, "kinetic_energy", q=q, qd=qd)
    v = body_velocities(model, q, qd)
    return 0.5 * jnp.sum(v * spatial.inertia_apply(model.body_inertias(), v))


@full_precision
def potential_energy(model: Model, q) -> Float[Array, ""]:
    """Gravitational potential ``-sum_k m_k g . c_k`` (zero at the world origin)."""
    check(model, "potential_energy", q=q)
    poses = forward_kinematics(model, q)
    c = spatial.transform_point(poses, model.com)
    return -jnp.sum(model.mass * (c @ model.gravity))


def mechanical_energy(model: Model, q, qd) -> Float[Array, ""]:
    return kinetic_energy(model, q, qd) + potential_energy(model, q)


def momentum(model: Model, q, qd) -> Float[Array, " 6"]:
    """Total spatial momentum ``[angular about the world origin; linear]`` in world axes."""
    check(model, "momentum", q=q, qd=qd)
    v = body_velocities(model, q, qd)
    h = spatial.inertia_apply(model.body_inertias(), v)
    return jnp.sum(spatial.force_to_parent(forward_kinematics(model, q), h), 0)


def centroidal_momentum(model: Model, q, qd) -> Float[Array, " 6"]:
    """Total momentum ``[angular about the centre of mass; linear]`` in world axes."""
    h = momentum(model, q, qd)
    c = center_of_mass(model, q)
    return jnp.concatenate([h[:3] - spatial.cross(c, h[3:]), h[3:]])
