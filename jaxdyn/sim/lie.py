"""Lie-algebra helpers of the configuration manifold for the Munthe-Kaas RK4 step (RKMK): the
bracket of the tangent space and the truncated ``dexp^-1``."""

from __future__ import annotations

import jax.numpy as jnp

from .. import configuration
from ..model import Model


def _ad(model: Model, x, y):
    """``[x, y]`` in the tangent space: spatial motion cross product on the free-flyer block,
    ``x x y`` on spherical blocks, zero on 1-dof joints (abelian)."""
    out = jnp.zeros_like(y)
    for g in configuration.groups(model.topology):
        if not g.space.abelian:
            out = out.at[g.v].set(g.space.bracket(x[g.v], y[g.v]))
    return out


def dexpinv(model: Model, theta, v):
    """``dexp^-1_{-theta}(v) = v + [theta, v]/2 + [theta, [theta, v]]/12`` (+ O(theta^4)): the
    rate of ``theta`` with ``q (+) theta`` moving at body velocity ``v`` (HLW IV.8 (8.10))."""
    if all(g.space.abelian for g in configuration.groups(model.topology)):
        return v
    a = _ad(model, theta, v)
    return v + 0.5 * a + _ad(model, theta, a) / 12.0
