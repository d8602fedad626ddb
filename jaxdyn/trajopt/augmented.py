"""Constrained trajectory optimisation for :mod:`jaxdyn.trajopt`: an augmented-Lagrangian outer
loop around the DDP inner solve (:func:`~jaxdyn.trajopt.fddp`), as in ALTRO (Howell, Jackson &
Manchester, *ALTRO: A Fast Solver for Constrained Trajectory Optimization*, IROS 2019).

Glossary: ``c`` a constraint's rows at a knot, ``lam`` their multipliers, ``mu`` the penalty,
``lam_hat`` the multiplier estimate ``lam + mu c`` (clipped at zero for inequalities).

Each row adds to the cost the Powell-Hestenes-Rockafellar term::

    equality   c = 0:   lam c + mu/2 c^2
    inequality c <= 0:  (max(0, lam + mu c)^2 - lam^2) / (2 mu)

whose gradient is ``lam_hat c_x`` and whose Gauss-Newton Hessian is ``mu c_x' c_x`` on the
active rows (``lam_hat > 0``; always for equalities), the constraint's own curvature left out
as ALTRO does. The inner problem (the cost plus these terms) is solved by :func:`fddp`, warm
started from the previous solution; then the multipliers move to ``lam_hat`` at the solution
and the penalty grows, ``mu <- min(phi mu, mu_max)`` (the updates of Howell et al. 2019).
The loop ends when every row is satisfied to ``tolerance`` with a converged inner solve, or
reports why it stopped (:data:`AL_STATUS`): the constraints still violated at the largest
penalty (:func:`violated_constraints` names them), or an inner solve that failed.
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .constraints import Constraint
from .costs import Cost
from .dynamics import Dynamics
from .ilqr import STATUS, ILQROptions, ILQRResult, checked, host_value, solve, total_cost


@dataclasses.dataclass(frozen=True)
class ALOptions:
    """Settings of :func:`augmented_lagrangian` (static). ``inner``: the options of each inner
    :func:`fddp` solve; ``max_outer`` outer iterations; penalty ``mu`` from ``penalty_init``,
    times ``penalty_scale`` after each outer iteration, at most ``penalty_max``; ``tolerance``:
    the largest violation accepted (in the rows' units)."""

    inner: ILQROptions = ILQROptions(max_iterations=60, tolerance=1e-6)
    max_outer: int = 20
    penalty_init: float = 1.0
    penalty_scale: float = 10.0
    penalty_max: float = 1e8
    tolerance: float = 1e-4


AL_STATUS = (
    "converged",
    "outer iteration limit",
    "constraints violated at the largest penalty (infeasible?)",
    "inner solve failed",
)
"""What :attr:`ALResult.status` means, by its value."""


class ALResult(NamedTuple):
    """Output of :func:`augmented_lagrangian`: states ``x (T+1, nx)`` and controls
    ``u (T, nu)``; ``cost``, the problem's own cost (without the augmented terms);
    ``violation (m,)``, each row's largest violation over its knots (``max(c, 0)`` for
    inequalities, ``|c|`` for equalities; rows in the order of the constraints and their
    ``rows``), ``worst_knot (m,)`` where it occurs (``T`` for the terminal knot); the final
    ``multipliers`` (per constraint ``(running (T, m_i), terminal (m_i,))``) and ``penalty``;
    ``outer_iterations``; ``inner_iterations`` (total); ``converged``; ``status`` (an index into
    :data:`AL_STATUS`); ``inner``, the last inner :class:`ILQRResult`."""

    x: jnp.ndarray
    u: jnp.ndarray
    cost: jnp.ndarray
    violation: jnp.ndarray
    worst_knot: jnp.ndarray
    multipliers: tuple
    penalty: jnp.ndarray
    outer_iterations: jnp.ndarray
    inner_iterations: jnp.ndarray
    converged: jnp.ndarray
    status: jnp.ndarray
    inner: ILQRResult


def _phr(c, lam, mu, equality: bool):
    """The augmented term of rows ``c`` (module docstring) and ``lam_hat``."""
    if equality:
        return lam @ c + 0.5 * mu * c @ c, lam + mu * c
    lam_hat = jnp.maximum(0.0, lam + mu * c)
    return (lam_hat @ lam_hat - lam @ lam) / (2.0 * mu), lam_hat


def _runs(con: Constraint) -> bool:
    return con.knots in ("all", "running")


def _ends(con: Constraint) -> bool:
    return con.knots in ("all", "terminal")


class AugmentedCost(Cost):
    """``cost`` plus the augmented-Lagrangian terms of ``constraints`` with multipliers
    ``lam`` (per constraint ``(running (T, m), terminal (m,))``) and penalty ``mu`` (module
    docstring); expansions add ``lam_hat c_x`` and the Gauss-Newton ``mu c_x' c_x`` of the
    active rows to the cost's own."""

    cost: Cost
    constraints: tuple
    lam: tuple
    mu: jnp.ndarray

    def running(self, x, u, t):
        total = self.cost.running(x, u, t)
        for con, (lr, _) in zip(self.constraints, self.lam):
            if _runs(con):
                total = total + _phr(con.running(x, u, t), lr[t], self.mu, con.equality)[0]
        return total

    def terminal(self, x):
        total = self.cost.terminal(x)
        for con, (_, lt) in zip(self.constraints, self.lam):
            if _ends(con):
                total = total + _phr(con.terminal(x), lt, self.mu, con.equality)[0]
        return total

    def _terms(self, con, c, lam, Cx, Cu):
        _, lam_hat = _phr(c, lam, self.mu, con.equality)
        w = self.mu * (jnp.ones_like(c) if con.equality else (lam_hat > 0).astype(c.dtype))
        g = (Cx.T @ lam_hat, Cu.T @ lam_hat)
        H = (Cx.T @ (w[:, None] * Cx), Cu.T @ (w[:, None] * Cu), Cu.T @ (w[:, None] * Cx))
        return g, H

    def expand(self, dynamics: Dynamics, x, u, t):
        lx, lu, lxx, luu, lux = self.cost.expand(dynamics, x, u, t)
        zx, zu = jnp.zeros(dynamics.ndx, x.dtype), jnp.zeros(dynamics.nu, x.dtype)
        for con, (lr, _) in zip(self.constraints, self.lam):
            if not _runs(con):
                continue
            f = lambda dx, du, con=con: con.running(dynamics.plus(x, dx), u + du, t)
            Cx, Cu = jax.jacfwd(f, argnums=(0, 1))(zx, zu)
            (gx, gu), (Hxx, Huu, Hux) = self._terms(con, con.running(x, u, t), lr[t], Cx, Cu)
            lx, lu, lxx, luu, lux = lx + gx, lu + gu, lxx + Hxx, luu + Huu, lux + Hux
        return lx, lu, lxx, luu, lux

    def expand_terminal(self, dynamics: Dynamics, x):
        lx, lxx = self.cost.expand_terminal(dynamics, x)
        zx = jnp.zeros(dynamics.ndx, x.dtype)
        for con, (_, lt) in zip(self.constraints, self.lam):
            if not _ends(con):
                continue
            Cx = jax.jacfwd(lambda dx, con=con: con.terminal(dynamics.plus(x, dx)))(zx)
            Cu = jnp.zeros((con.m, 0), x.dtype)
            (gx, _), (Hxx, _, _) = self._terms(con, con.terminal(x), lt, Cx, Cu)
            lx, lxx = lx + gx, lxx + Hxx
        return lx, lxx


def _values(constraints, xs, us):
    """Per constraint ``(running (T, m), terminal (m,))`` rows along a trajectory (zeros where
    the constraint is not imposed)."""
    T = us.shape[0]
    ts = jnp.arange(T)
    out = []
    for con in constraints:
        cr = jax.vmap(con.running)(xs[:-1], us, ts) if _runs(con) else jnp.zeros((T, con.m), xs.dtype)
        ct = con.terminal(xs[-1]) if _ends(con) else jnp.zeros(con.m, xs.dtype)
        out.append((cr, ct))
    return out


def _violations(constraints, values):
    """``(violation (m,), worst_knot (m,))`` over all rows (:class:`ALResult`)."""
    viol, knot = [], []
    for con, (cr, ct) in zip(constraints, values):
        v = jnp.concatenate([cr, ct[None]], 0)  # (T+1, m)
        v = jnp.abs(v) if con.equality else jnp.maximum(v, 0.0)
        mask = np.zeros((v.shape[0], 1), bool)
        mask[:-1] = _runs(con)
        mask[-1] = _ends(con)
        v = jnp.where(jnp.asarray(mask), v, 0.0)
        viol.append(jnp.max(v, 0))
        knot.append(jnp.argmax(v, 0))
    return jnp.concatenate(viol), jnp.concatenate(knot)


class _Outer(NamedTuple):
    lam: tuple
    mu: jnp.ndarray
    inner: ILQRResult
    it: jnp.ndarray
    inner_it: jnp.ndarray
    done: jnp.ndarray
    status: jnp.ndarray


def _al_solve(dynamics, cost, constraints, x0, us0, xs0, lo, hi, opt: ALOptions) -> ALResult:
    dtype = x0.dtype
    T = us0.shape[0]
    lam0 = tuple((jnp.zeros((T, c.m), dtype), jnp.zeros(c.m, dtype)) for c in constraints)

    def inner(lam, mu, xs, us):
        return solve(dynamics, AugmentedCost(cost, constraints, lam, mu), x0, us, xs, lo, hi, opt.inner)

    def outer(s: _Outer) -> _Outer:
        r = inner(s.lam, s.mu, s.inner.x, s.inner.u)
        vals = _values(constraints, r.x, r.u)
        viol, _ = _violations(constraints, vals)
        worst = jnp.max(viol) if viol.size else jnp.zeros((), dtype)
        lam = tuple(
            (_phr_hat(cr, lr, s.mu, con.equality), _phr_hat(ct, lt, s.mu, con.equality))
            for con, (cr, ct), (lr, lt) in zip(constraints, vals, s.lam)
        )
        satisfied = worst <= opt.tolerance
        failed = r.status >= 2
        at_max = s.mu >= opt.penalty_max
        status = jnp.where(failed, 3, jnp.where(satisfied & r.converged, 0, jnp.where(at_max & ~satisfied, 2, 1)))
        done = (status != 1) | (s.it + 1 >= opt.max_outer)
        mu = jnp.minimum(s.mu * opt.penalty_scale, jnp.asarray(opt.penalty_max, dtype))
        # a failed inner solve keeps the multipliers and penalty of the iterate it returns
        lam = jax.tree_util.tree_map(lambda a, b: jnp.where(failed, b, a), lam, s.lam)
        mu = jnp.where(failed | (status == 0), s.mu, mu)
        return _Outer(lam, mu, r, s.it + 1, s.inner_it + r.iterations, done, status)

    r0 = jax.eval_shape(lambda: inner(lam0, jnp.asarray(opt.penalty_init, dtype), xs0, us0))
    r0 = jax.tree_util.tree_map(lambda a: jnp.zeros(a.shape, a.dtype), r0)._replace(x=xs0.at[0].set(x0), u=us0)
    init = _Outer(
        lam0,
        jnp.asarray(opt.penalty_init, dtype),
        r0,
        jnp.asarray(0),
        jnp.asarray(0),
        jnp.asarray(False),
        jnp.asarray(1),
    )
    s = jax.lax.while_loop(lambda s: ~s.done, outer, init)
    viol, knot = _violations(constraints, _values(constraints, s.inner.x, s.inner.u))
    return ALResult(
        s.inner.x,
        s.inner.u,
        total_cost(cost, s.inner.x, s.inner.u),
        viol,
        knot,
        s.lam,
        s.mu,
        s.it,
        s.inner_it,
        s.status == 0,
        s.status,
        s.inner,
    )


def _phr_hat(c, lam, mu, equality):
    return lam + mu * c if equality else jnp.maximum(0.0, lam + mu * c)


_al_solve_jit = eqx.filter_jit(_al_solve)


def violated_constraints(constraints, result: ALResult, tolerance: float | None = None) -> list[str]:
    """The rows of ``constraints`` violated by more than ``tolerance`` (default: the solve's
    :attr:`ALOptions.tolerance` is not known here, so ``1e-4``) in ``result``, as
    ``"<row>: <violation> at knot <t>"``, largest first (a concrete, unbatched result)."""
    tol = 1e-4 if tolerance is None else tolerance
    rows = [r for c in constraints for r in c.rows]
    v, k = np.asarray(result.violation), np.asarray(result.worst_knot)
    if v.shape != (len(rows),):
        raise ValueError(f"violated_constraints: the result has {v.shape} violations for {len(rows)} rows")
    bad = [i for i in np.argsort(-v) if v[i] > tol]
    return [f"{rows[i]}: {v[i]:.3g} at knot {int(k[i])}" for i in bad]


def augmented_lagrangian(
    dynamics: Dynamics,
    cost: Cost,
    constraints,
    x0,
    u_init,
    x_init=None,
    u_lower=None,
    u_upper=None,
    options: ALOptions = ALOptions(),
) -> ALResult:
    """Minimise ``cost`` subject to the dynamics, the control box and ``constraints`` (a
    :class:`Constraint` or a sequence of them) by the augmented-Lagrangian loop of the module
    docstring, each inner problem solved by :func:`fddp` from the previous solution (first from
    ``x_init``, ``u_init``: states need not be a rollout; ``None`` = ``x0`` at every knot).

    Returns an :class:`ALResult`; one jitted program (``jit``/``vmap`` of it work). Called
    outside a trace, a solve that ends with rows violated warns with their names
    (:func:`violated_constraints`) and its :data:`AL_STATUS`. Raises ``ValueError`` for wrong
    inputs, as :func:`fddp`, and for a constraint whose rows have the wrong shape (naming it).
    """
    if isinstance(constraints, Constraint):
        constraints = (constraints,)
    constraints = tuple(constraints)
    if not constraints:
        raise ValueError("augmented_lagrangian: no constraints (use fddp or ilqr)")
    for c in constraints:
        if not isinstance(c, Constraint):
            raise ValueError(f"augmented_lagrangian: constraints must be Constraints, got {type(c).__name__}")
    if not isinstance(options, ALOptions):
        raise ValueError(f"augmented_lagrangian: options must be an ALOptions, got {type(options).__name__}")
    if not (options.penalty_init > 0 and options.penalty_scale >= 1 and options.max_outer >= 1):
        raise ValueError("augmented_lagrangian: options need penalty_init > 0, penalty_scale >= 1, max_outer >= 1")
    x0, u_init, lo, hi = checked("augmented_lagrangian", dynamics, cost, x0, u_init, u_lower, u_upper, options.inner)
    T = u_init.shape[0]
    x_init = jnp.broadcast_to(x0, (T + 1, dynamics.nx)) if x_init is None else jnp.asarray(x_init, x0.dtype)
    if x_init.shape != (T + 1, dynamics.nx):
        raise ValueError(f"augmented_lagrangian: x_init must have shape ({T + 1}, {dynamics.nx}), got {x_init.shape}")
    res = _al_solve_jit(dynamics, cost, constraints, x0, u_init, x_init, lo, hi, options)
    status = host_value(res.status)
    if status is not None and status.ndim == 0 and int(status) != 0:
        names = violated_constraints(constraints, res, options.tolerance)
        reason = AL_STATUS[int(status)]
        if int(status) == 3:
            reason += f" ({STATUS[int(np.asarray(res.inner.status))]})"
        warnings.warn(
            f"augmented_lagrangian stopped: {reason}"
            + (f"; violated: {'; '.join(names)}" if names else "; no constraint violated"),
            stacklevel=2,
        )
    return res
