"""Operations on the configuration manifold: neutral and random configurations, integration,
difference and the map from velocities to configuration rates.

Joints are grouped by static type (1-dof, spherical, free) so every operation is a handful of
vectorised gathers/scatters, independent of the number of joints.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from . import spatial
from .model import Model, Topology, layout


@functools.lru_cache(maxsize=256)
def _groups(topo: Topology):
    lay = layout(topo)
    one_q, one_v, rev = [], [], []
    sph_q, sph_v = [], []
    for j, t in enumerate(topo.joint_types):
        qs, vs = int(lay.q_start[j]), int(lay.v_start[j])
        if t in ("revolute", "continuous", "prismatic"):
            one_q.append(qs)
            one_v.append(vs)
            rev.append(t != "prismatic")
        elif t == "spherical":
            sph_q.append(np.arange(qs, qs + 4))
            sph_v.append(np.arange(vs, vs + 3))
    return (
        np.array(one_q, np.int32),
        np.array(one_v, np.int32),
        np.array(rev, bool),
        np.array(sph_q, np.int32).reshape(-1, 4),
        np.array(sph_v, np.int32).reshape(-1, 3),
    )


def _check(model: Model, name: str, x, size: int):
    if x.shape[-1:] != (size,):
        raise ValueError(
            f"{name}: expected a trailing dimension of {size} for model '{model.name}', got shape {x.shape}"
        )


def neutral(model: Model) -> Float[Array, " nq"]:
    """The neutral configuration: zero joint positions, identity quaternions, base at the origin."""
    q = jnp.zeros(model.nq, model.dtype)
    _, _, _, sph_q, _ = _groups(model.topology)
    if len(sph_q):
        q = q.at[sph_q[:, 0]].set(1.0)
    if model.floating_base:
        q = q.at[3].set(1.0)
    return q


def random_configuration(model: Model, key) -> Float[Array, " nq"]:
    """A random configuration: 1-dof joints uniform within finite limits (``[-pi, pi]`` for
    revolute joints and ``[-1, 1]`` m for prismatic joints without usable limits), uniformly
    random unit quaternions, a free base uniform in ``[-1, 1]^3``."""
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
    one_q, _, rev, sph_q, _ = _groups(model.topology)
    k1, k2, k3, k4 = jax.random.split(key, 4)
    q = neutral(model)
    if len(one_q):
        lo, hi = model.q_lower[one_q], model.q_upper[one_q]
        ok = jnp.isfinite(lo) & jnp.isfinite(hi) & (hi > lo)
        dflt = jnp.where(jnp.asarray(rev), jnp.pi, 1.0).astype(model.dtype)
        lo = jnp.where(ok, lo, -dflt)
        hi = jnp.where(ok, hi, dflt)
        u = jax.random.uniform(k1, (len(one_q),), model.dtype)
        q = q.at[one_q].set(lo + u * (hi - lo))
    if len(sph_q):
        qq = jax.random.normal(k2, (len(sph_q), 4), model.dtype)
        q = q.at[sph_q].set(qq / jnp.linalg.norm(qq, axis=-1, keepdims=True))
    if model.floating_base:
        qq = jax.random.normal(k3, (4,), model.dtype)
        q = q.at[0:3].set(jax.random.uniform(k4, (3,), model.dtype, -1.0, 1.0))
        q = q.at[3:7].set(qq / jnp.linalg.norm(qq))
    return q


def integrate(model: Model, q: Float[Array, " nq"], v: Float[Array, " nv"], dt=1.0) -> Float[Array, " nq"]:
    """``q (+) v dt`` on the configuration manifold (exponential map, as Pinocchio's integrate).

    1-dof: ``q + v dt``; spherical: ``q * exp(omega dt)``; free base: ``M * exp6(v dt)``
    with the body-frame twist ``[omega; v]``.
    """
    q, v = jnp.asarray(q), jnp.asarray(v)
    _check(model, "integrate: q", q, model.nq)
    _check(model, "integrate: v", v, model.nv)
    one_q, one_v, _, sph_q, sph_v = _groups(model.topology)
    out = q
    if len(one_q):
        out = out.at[one_q].set(q[one_q] + v[one_v] * dt)
    if len(sph_q):
        nq_ = spatial.quat_multiply(q[sph_q], spatial.quat_exp(v[sph_v] * dt))
        out = out.at[sph_q].set(nq_ / jnp.linalg.norm(nq_, axis=-1, keepdims=True))
    if model.floating_base:
        dq, dp = spatial.exp6(v[0:6] * dt)
        quat = q[3:7]
        R = spatial.quat_to_rotation(quat)
        nquat = spatial.quat_multiply(quat, dq)
        out = out.at[0:3].set(q[0:3] + spatial.mv(R, dp))
        out = out.at[3:7].set(nquat / jnp.linalg.norm(nquat))
    return out


def difference(model: Model, q0: Float[Array, " nq"], q1: Float[Array, " nq"]) -> Float[Array, " nv"]:
    """The velocity ``v`` with ``integrate(q0, v, 1) == q1`` (logarithm map; Pinocchio's difference)."""
    q0, q1 = jnp.asarray(q0), jnp.asarray(q1)
    _check(model, "difference: q0", q0, model.nq)
    _check(model, "difference: q1", q1, model.nq)
    one_q, one_v, _, sph_q, sph_v = _groups(model.topology)
    v = jnp.zeros(model.nv, q0.dtype)
    if len(one_q):
        v = v.at[one_v].set(q1[one_q] - q0[one_q])
    if len(sph_q):
        rel = spatial.quat_multiply(spatial.quat_conjugate(q0[sph_q]), q1[sph_q])
        v = v.at[sph_v].set(spatial.quat_log(rel))
    if model.floating_base:
        a, b = q0[3:7] / jnp.linalg.norm(q0[3:7]), q1[3:7] / jnp.linalg.norm(q1[3:7])
        rel = spatial.quat_multiply(spatial.quat_conjugate(a), b)
        dp = spatial.mtv(spatial.quat_to_rotation(a), q1[0:3] - q0[0:3])
        v = v.at[0:6].set(spatial.log6(rel, dp))
    return v


def configuration_derivative(model: Model, q: Float[Array, " nq"], v: Float[Array, " nv"]) -> Float[Array, " nq"]:
    """``dq/dt`` for velocity ``v``: ``qd`` for 1-dof joints, ``q * [0, omega] / 2`` for
    quaternions, ``R v`` for the base position."""
    q, v = jnp.asarray(q), jnp.asarray(v)
    one_q, one_v, _, sph_q, sph_v = _groups(model.topology)
    qdot = jnp.zeros(model.nq, jnp.result_type(q, v))
    if len(one_q):
        qdot = qdot.at[one_q].set(v[one_v])
    zero = jnp.zeros(v.shape[:-1] + (1,), v.dtype)
    if len(sph_q):
        w = v[sph_v]
        qdot = qdot.at[sph_q].set(
            0.5 * spatial.quat_multiply(q[sph_q], jnp.concatenate([jnp.zeros_like(w[:, :1]), w], -1))
        )
    if model.floating_base:
        R = spatial.quat_to_rotation(q[3:7])
        qdot = qdot.at[0:3].set(spatial.mv(R, v[3:6]))
        qdot = qdot.at[3:7].set(0.5 * spatial.quat_multiply(q[3:7], jnp.concatenate([zero, v[0:3]], -1)))
    return qdot


def normalize(model: Model, q: Float[Array, " nq"]) -> Float[Array, " nq"]:
    """Project the quaternions in ``q`` back to unit norm."""
    q = jnp.asarray(q)
    _, _, _, sph_q, _ = _groups(model.topology)
    if len(sph_q):
        qq = q[sph_q]
        q = q.at[sph_q].set(qq / jnp.linalg.norm(qq, axis=-1, keepdims=True))
    if model.floating_base:
        q = q.at[3:7].set(q[3:7] / jnp.linalg.norm(q[3:7]))
    return q
