"""Forces added to the commanded torque before forward dynamics: actuator limits, joint damping,
Coulomb friction (smoothed, and its form for the implicit velocity solve), joint springs, soft
joint limits and the tendons' passive forces."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from .. import configuration
from .. import constraints as _constraints
from ..algorithms.common import full_precision
from ..model import Model
from .options import SimOptions, friction_velocity


def _one_dof(model: Model):
    return configuration.one_dof_indices(model.topology)


def applied_torques(model: Model, tau, options: SimOptions = SimOptions()):
    """The commanded torque after actuator limits (``clip(tau, -effort_limit, effort_limit)``)."""
    tau = jnp.asarray(tau, model.dtype)
    if options.clip_effort:
        tau = jnp.clip(tau, -model.effort_limit, model.effort_limit)
    return tau


@full_precision
def passive_torques(model: Model, q, qd, options: SimOptions = SimOptions()) -> Float[Array, " nv"]:
    """Joint damping, smoothed Coulomb friction, joint springs and soft joint-limit torques
    (module docstring)."""
    qd = jnp.asarray(qd, model.dtype)
    out = jnp.zeros(model.nv, model.dtype)
    if options.damping:
        out = out - model.damping * qd
    if options.friction:
        out = out - model.friction * jnp.tanh(qd / friction_velocity(options))
    one_q, one_v = _one_dof(model)
    if options.springs and len(one_q):
        out = out.at[one_v].add(-model.stiffness[one_v] * (q[one_q] - model.spring_reference[one_q]))
    if options.joint_limits and len(one_q):
        qi, vi = q[one_q], qd[one_v]
        lo, hi = model.q_lower[one_q], model.q_upper[one_q]
        # inf limits give zero penetration (max(q - inf, 0) = 0), so no masks are needed
        over = jnp.maximum(qi - hi, 0.0)
        under = jnp.minimum(qi - lo, 0.0)
        pen = over + under
        active = (over > 0) | (under < 0)
        lim = -options.limit_stiffness * pen - jnp.where(active, options.limit_damping * vi, 0.0)
        out = out.at[one_v].add(lim)
    if model.constraints is not None:  # tendons' springs and dampers (their limits: constraint rows)
        out = out + _constraints.tendon_forces(model, q, qd, options.springs, options.damping)
    return out


class JointFriction:
    """The joints' Coulomb friction ``f(v) = F tanh(v / eps)`` (per dof, opposing ``v``) in the
    ``"implicit_euler"`` velocity solve: the gradient of the convex ``F eps log cosh(v /
    eps)``, whose secant slope ``c(v) = F tanh(v / eps) / v`` (at most ``F / eps``) gives a
    quadratic that bounds it from above (``log cosh`` is concave in ``v^2``), and whose
    derivative is ``F / eps sech^2(v / eps)``."""

    def __init__(self, F, eps):
        self.F, self.eps = F, eps

    def force(self, v):
        return self.F * jnp.tanh(v / self.eps)

    def secant(self, v):
        x = v / self.eps
        small = jnp.abs(x) < 1e-3
        xs = jnp.where(small, 1.0, x)
        return self.F / self.eps * jnp.where(small, 1.0 - x * x / 3.0, jnp.tanh(xs) / xs)

    def derivative(self, v):
        t = jnp.tanh(v / self.eps)
        return self.F / self.eps * (1.0 - t * t)


def implicit_friction(model: Model, options: SimOptions) -> JointFriction | None:
    """The joints' friction for the ``"implicit_euler"`` velocity solve; ``None`` with
    ``options.friction`` off or a model whose friction is known to be zero (a traced one is
    taken as present)."""
    if not (options.friction and options.implicit_friction):
        return None
    F = model.friction
    try:
        if not np.any(np.asarray(F)):
            return None
    except (jax.errors.TracerArrayConversionError, jax.errors.ConcretizationTypeError):
        pass  # traced: taken as present
    return JointFriction(F, jnp.asarray(friction_velocity(options, implicit=True), model.dtype))
