"""Model-predictive control for :mod:`jaxdyn.trajopt`: receding-horizon replanning, warm started
by shifting the previous plan.

At each control period the plan of ``T`` knots is re-solved from the measured state ``x`` and
its first control applied. The previous plan ``(xs, us)`` shifted by one knot (its last state
and control repeated) is the initial guess; its first state is replaced by ``x``, so the guess
has a gap where the measurement departs from the prediction, which :func:`fddp` closes (no
re-rollout of the shifted controls). A few iterations per period are usually enough, as the
guess is near the new optimum.
"""

from __future__ import annotations

import jax.numpy as jnp

from .costs import Cost
from .dynamics import Dynamics
from .ilqr import ILQROptions, ILQRResult, fddp

MPC_OPTIONS = ILQROptions(max_iterations=5, tolerance=1e-6)
"""Default options of :func:`mpc_step`: a few warm-started iterations per control period."""


def shift(xs, us):
    """The plan ``xs (T+1, nx)``, ``us (T, nu)`` advanced by one knot, the last state and control
    repeated: the warm start of the next replanning step."""
    return jnp.concatenate([xs[1:], xs[-1:]]), jnp.concatenate([us[1:], us[-1:]])


def mpc_step(
    dynamics: Dynamics,
    cost: Cost,
    x,
    xs,
    us,
    u_lower=None,
    u_upper=None,
    options: ILQROptions = MPC_OPTIONS,
) -> ILQRResult:
    """One replanning step: :func:`fddp` from the measured state ``x (nx,)``, warm started from
    the previous plan ``(xs, us)`` shifted by one knot (:func:`shift`). Apply ``result.u[0]``
    (or the policy ``result.u[0] + result.K[0] (x' (-) result.x[0])`` between replans) and pass
    ``(result.x, result.u)`` to the next step. ``cost`` carries the references of this horizon
    (a moving target as per-knot arrays reuses the compiled solve). For the first step pass a
    plan of the right shape (e.g. ``x`` at every knot and gravity-compensating controls)."""
    xs_w, us_w = shift(jnp.asarray(xs), jnp.asarray(us))
    return fddp(dynamics, cost, x, us_w, xs_w, u_lower, u_upper, options)
