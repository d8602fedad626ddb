"""Box-constrained iLQR/DDP for :mod:`jaxdyn.trajopt`: expansions, the box QP, the backward
and forward passes and the solver."""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .. import linalg
from .costs import Cost, SumCost
from .dynamics import Dynamics, ModelDynamics

# -- building blocks --------------------------------------------------------------------------------


class Expansion(NamedTuple):
    """Linear-quadratic model along a trajectory, in the tangent space (``ndx``):
    dynamics ``fx (T, ndx, ndx)``, ``fu (T, ndx, nu)``; running cost ``lx (T, ndx)``,
    ``lu (T, nu)``, ``lxx (T, ndx, ndx)``, ``luu (T, nu, nu)``, ``lux (T, nu, ndx)``; terminal
    ``lfx (ndx,)``, ``lfxx (ndx, ndx)``."""

    fx: jnp.ndarray
    fu: jnp.ndarray
    lx: jnp.ndarray
    lu: jnp.ndarray
    lxx: jnp.ndarray
    luu: jnp.ndarray
    lux: jnp.ndarray
    lfx: jnp.ndarray
    lfxx: jnp.ndarray


def simulate(dynamics: Dynamics, x0, us):
    """States ``(T+1, nx)`` of the open-loop controls ``us (T, nu)`` from ``x0`` (a ``lax.scan``)."""

    def body(x, u):
        x1 = dynamics(x, u)
        return x1, x1

    _, xs = jax.lax.scan(body, x0, us)
    return jnp.concatenate([x0[None], xs])


def total_cost(cost: Cost, xs, us):
    """``J = sum_t l(x_t, u_t, t) + l_f(x_T)`` of a trajectory ``xs (T+1, nx)``, ``us (T, nu)``."""
    ts = jnp.arange(us.shape[0])
    return jnp.sum(jax.vmap(cost.running)(xs[:-1], us, ts)) + cost.terminal(xs[-1])


def linearize(dynamics: Dynamics, cost: Cost, xs, us) -> Expansion:
    """Jacobians of the discrete dynamics (:meth:`Dynamics.jacobians`: in closed form for a
    robot model, :meth:`ModelDynamics.jacobians`) and second-order expansions of the costs
    (:meth:`Cost.expand`, :meth:`Cost.expand_terminal`) at every step of the trajectory
    (``vmap`` over time)."""

    def at_step(x, u, t):
        fx, fu = dynamics.jacobians(x, u)
        lx, lu, lxx, luu, lux = cost.expand(dynamics, x, u, t)
        return fx, fu, lx, lu, lxx, luu, lux

    ts = jnp.arange(us.shape[0])
    fx, fu, lx, lu, lxx, luu, lux = jax.vmap(at_step)(xs[:-1], us, ts)
    lfx, lfxx = cost.expand_terminal(dynamics, xs[-1])
    return Expansion(fx, fu, lx, lu, lxx, luu, lux, lfx, lfxx)


def _sym(A):
    return 0.5 * (A + A.T)


def _masked(H, free):
    """``H`` on the ``free`` rows and columns, the identity elsewhere."""
    both = free[:, None] & free[None, :]
    return jnp.where(both, H, jnp.eye(H.shape[0], dtype=H.dtype))


def _masked_cholesky(H, free):
    """Cholesky factor of ``H`` restricted to the ``free`` rows/columns (identity elsewhere)."""
    return linalg.cholesky(_masked(H, free), unroll=True)


def _definite_solve(H, b):
    """``(H^-1 b, definite)`` for a symmetric ``H`` ``(nu, nu)`` and ``b`` ``(nu,)`` or ``(nu,
    k)``: one unrolled Gauss-Jordan elimination (:func:`jaxdyn.linalg.gauss_jordan`; inside the
    knot scan the steps of a factorisation and two substitutions cost more than their
    arithmetic), ``definite`` whether ``H`` is positive definite (every pivot positive)."""
    x, pivots = linalg.gauss_jordan(H, b, unroll=True)
    return x, jnp.all(pivots > 0)


def _masked_solve(H, free, b):
    """``(x, definite)``: ``x = H_ff^-1 b_f`` on the ``free`` rows and zero elsewhere, and
    whether ``H_ff`` is positive definite (:func:`_definite_solve` of the masked ``H``)."""
    mask = free.reshape(free.shape + (1,) * (b.ndim - 1))
    x, definite = _definite_solve(_masked(H, free), jnp.where(mask, b, 0.0))
    return jnp.where(mask, x, 0.0), definite


_QP_STEPS = (1.0, 0.5, 0.25, 0.125, 0.0625, 0.03125, 0.015625, 0.0078125)


def box_qp(H, g, lower, upper, k0, iterations: int = 10):
    """``argmin 1/2 k' H k + g' k`` subject to ``lower <= k <= upper`` by projected Newton
    (Tassa, Mansard & Todorov 2014, Algorithm 1): the clamped set is the controls at a bound
    whose gradient points outward; a Newton step on the free set (taken where ``H_ff`` is
    positive definite, :func:`_masked_solve`) is followed by a projected
    Armijo line search (candidates in parallel). At most ``iterations`` steps, fewer once a step
    stops improving the objective (vmap-able); without active bounds the first iteration is the exact Newton
    solution. Returns ``(k, free, L)``: the solution, the free-control mask and the Cholesky
    factor of ``H`` on the free set (NaN when ``H_ff`` is not positive definite)."""
    k = jnp.clip(k0, lower, upper)
    steps = jnp.asarray(_QP_STEPS, H.dtype)
    f = lambda kk: 0.5 * kk @ H @ kk + g @ kk

    def clamped_mask(kk):
        grad = g + H @ kk
        return ((kk <= lower) & (grad > 0)) | ((kk >= upper) & (grad < 0)), grad

    tol = 10 * jnp.finfo(H.dtype).eps

    def body(state):
        i, kk, _ = state
        clamped, grad = clamped_mask(kk)
        free = ~clamped
        d, definite = _masked_solve(H, free, -grad)
        cand = jnp.clip(kk[None] + steps[:, None] * d[None], lower, upper)
        vals = jax.vmap(f)(cand)
        f0 = f(kk)
        ok = jnp.isfinite(vals) & (vals <= f0 + 0.1 * (cand - kk[None]) @ grad)
        j = jnp.argmax(ok)
        moved = jnp.any(ok) & definite & jnp.all(jnp.isfinite(d))
        new = jnp.where(moved, cand[j], kk)
        # stop once a step no longer improves the objective (relative to its size)
        going = moved & (f0 - vals[j] > tol * (1.0 + jnp.abs(f0)))
        return i + 1, new, going

    _, k, _ = jax.lax.while_loop(lambda s: (s[0] < iterations) & s[2], body, (0, k, jnp.asarray(True)))
    clamped, _ = clamped_mask(k)
    free = ~clamped
    return k, free, _masked_cholesky(H, free)


class BackwardPass(NamedTuple):
    """Output of :func:`backward_pass`: feedforward ``k (T, nu)`` and feedback gains
    ``K (T, nu, ndx)``; ``dV (2,)``, the coefficients of the expected cost change
    ``alpha dV[0] + alpha^2 dV[1]`` (gap terms included); ``ok``, whether every regularised
    ``Q_uu`` was positive definite on its free set; ``Vg (T, ndx)``, ``V_xx,t+1 g_t+1`` (zero
    without gaps), for the gap term of the expected change that depends on the trial rollout."""

    k: jnp.ndarray
    K: jnp.ndarray
    dV: jnp.ndarray
    ok: jnp.ndarray
    Vg: jnp.ndarray


def backward_pass(
    exp: Expansion, us, u_lower, u_upper, mu, k_warm=None, qp_iterations: int = 10, gaps=None
) -> BackwardPass:
    """Riccati-like backward pass of box-constrained iLQR (module docstring; Tassa 2012
    eqs. (10)-(11), Tassa 2014 Sec. III). ``mu`` regularises ``V_xx`` (``V_xx + mu I``).
    Without limits (``u_lower`` and ``u_upper`` ``None``) ``k = -Q~_uu^-1 Q_u`` and
    ``K = -Q~_uu^-1 Q~_ux`` from one Gauss-Jordan elimination (:func:`jaxdyn.linalg.gauss_jordan`),
    the box QP's first Newton step; with limits ``K`` comes from the same elimination on the free
    controls (:func:`_masked_solve`). A pivot that is not positive (``Q~_uu``, or its free block,
    not positive definite) fails the pass.

    With ``gaps (T, ndx)`` (multiple shooting, ``g_t+1 = f(x_t, u_t) (-) x_t+1``), the value
    function of knot ``t+1`` is taken at the end of the gap (Mastalli et al. 2020):
    ``V_x' = V_x,t+1 + V_xx,t+1 g_t+1`` in ``Q_x`` and ``Q_u``, and the expected change gains
    the gap terms of :func:`fddp` (``alpha V_x' . g - alpha^2/2 g' V_xx,t+1 g``).
    """
    T, nu = us.shape
    ndx = exp.lfx.shape[0]
    I = jnp.eye(ndx, dtype=us.dtype)
    boxed = u_lower is not None or u_upper is not None
    if boxed:
        u_lower = jnp.full(nu, -jnp.inf, us.dtype) if u_lower is None else u_lower
        u_upper = jnp.full(nu, jnp.inf, us.dtype) if u_upper is None else u_upper
    if k_warm is None:
        k_warm = jnp.zeros_like(us)
    shooting = gaps is not None
    if not shooting:
        gaps = jnp.zeros((T, 0), us.dtype)  # no gap terms are traced

    def body(carry, inp):
        Vx, Vxx, dV, ok = carry
        fx, fu, lx, lu, lxx, luu, lux, u, kw, g = inp
        if shooting:
            Vg = Vxx @ g
            Vx = Vx + Vg
            dV = dV + jnp.stack([Vx @ g, -0.5 * g @ Vg])
        else:
            Vg = jnp.zeros(ndx, us.dtype)
        Qx = lx + fx.T @ Vx
        Qu = lu + fu.T @ Vx
        Qxx = lxx + fx.T @ Vxx @ fx
        Quu = luu + fu.T @ Vxx @ fu
        Qux = lux + fu.T @ Vxx @ fx
        Vreg = Vxx + mu * I
        Quu_r = _sym(luu + fu.T @ Vreg @ fu)
        Qux_r = lux + fu.T @ Vreg @ fx
        if boxed:
            k, free, _ = box_qp(Quu_r, Qu, u_lower - u, u_upper - u, kw, qp_iterations)
            K, definite = _masked_solve(Quu_r, free, -Qux_r)
            ok = ok & definite
        else:  # no limits: the Newton step of the box QP, one Gauss-Jordan elimination of
            # [Q~_uu | Q_u Q~_ux] for k and K, Q~_uu positive definite where every pivot is
            # positive (unrolled, here and in the box QP: inside the knot scan a loop's
            # iteration costs more than a nu x nu elimination's arithmetic; jaxdyn.linalg)
            kK, definite = _definite_solve(Quu_r, -jnp.concatenate([Qu[:, None], Qux_r], 1))
            k, K = kK[:, 0], kK[:, 1:]
            ok = ok & definite
        ok = ok & jnp.all(jnp.isfinite(k))
        dV = dV + jnp.stack([k @ Qu, 0.5 * k @ Quu @ k])
        Vx = Qx + K.T @ Quu @ k + K.T @ Qu + Qux.T @ k
        Vxx = _sym(Qxx + K.T @ Quu @ K + K.T @ Qux + Qux.T @ K)
        return (Vx, Vxx, dV, ok), (k, K, Vg)

    init = (exp.lfx, _sym(exp.lfxx), jnp.zeros(2, us.dtype), jnp.asarray(True))
    xs = (exp.fx, exp.fu, exp.lx, exp.lu, exp.lxx, exp.luu, exp.lux, us, k_warm, gaps)
    (_, _, dV, ok), (k, K, Vg) = jax.lax.scan(body, init, xs, reverse=True)
    return BackwardPass(k, K, dV, ok, Vg)


class Rollout(NamedTuple):
    """Output of :func:`forward_pass`: states ``x (T+1, nx)``, controls ``u (T, nu)``, the
    ``cost`` and, with multiple shooting, the ``gaps (T, ndx)`` left (``None`` otherwise)."""

    x: jnp.ndarray
    u: jnp.ndarray
    cost: jnp.ndarray
    gaps: jnp.ndarray | None


def forward_pass(dynamics: Dynamics, cost: Cost, xs, us, k, K, alpha, u_lower, u_upper, gaps=None) -> Rollout:
    """Closed-loop rollout ``u_t = clip(ubar_t + alpha k_t + K_t (x_t (-) xbar_t), lower, upper)``
    from ``xs[0]``; vmap over ``alpha`` for a parallel line search.

    With ``gaps`` (multiple shooting, Mastalli et al. 2020) each knot keeps the part
    ``1 - alpha`` of its gap: ``x_t+1 = f(x_t, u_t) (+) (alpha - 1) g_t+1``. ``alpha = 0`` with
    zero gains gives back ``xs``; a full step (``alpha = 1``) is a rollout, whose gaps are zero
    by construction."""
    shooting = gaps is not None
    if not shooting:
        gaps = jnp.zeros((us.shape[0], 0), us.dtype)

    def body(x, inp):
        xb, ub, kt, Kt, t, g = inp
        u = ub + alpha * kt + Kt @ dynamics.minus(x, xb)
        if u_lower is not None or u_upper is not None:
            u = jnp.clip(u, u_lower, u_upper)
        xn = dynamics(x, u)
        if shooting:
            x1 = dynamics.plus(xn, (alpha - 1.0) * g)
            g1 = jnp.where(alpha == 1.0, 0.0, dynamics.minus(xn, x1))
            return x1, (x, u, cost.running(x, u, t), g1)
        return xn, (x, u, cost.running(x, u, t), g)

    ts = jnp.arange(us.shape[0])
    xT, (xn, un, ls, gn) = jax.lax.scan(body, xs[0], (xs[:-1], us, k, K, ts, gaps))
    return Rollout(jnp.concatenate([xn, xT[None]]), un, jnp.sum(ls) + cost.terminal(xT), gn if shooting else None)


def defects(dynamics: Dynamics, xs, us):
    """The gaps ``g_t+1 = f(x_t, u_t) (-) x_t+1`` ``(T, ndx)`` of a state trajectory ``xs
    (T+1, nx)`` that need not be a rollout of ``us (T, nu)`` (zero for a rollout)."""
    return jax.vmap(lambda x, u, x1: dynamics.minus(dynamics(x, u), x1))(xs[:-1], us, xs[1:])


# -- the optimiser ----------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class ILQROptions:
    """Settings of :func:`ilqr` and :func:`fddp` (static: hashable; a change recompiles).

    Stopping: the trajectory is feasible (every gap at most ``gap_tolerance``; always, for
    :func:`ilqr`) and the expected decrease ``-dV(1)`` or an accepted actual decrease is below
    ``tolerance * (1 + |J|)``; or ``mu`` exceeds ``mu_max`` (failure); or ``max_iterations``.
    Regularisation (Tassa 2012 Sec. II-F, by the step's size as Mastalli et al. 2020;
    :func:`regularisation_schedule`): ``mu`` (``mu_init``, ``mu_min``, ``mu_max``, factor
    ``delta0``) raised when no step is accepted or the accepted one is at most
    ``step_increase``, lowered after a step longer than ``step_decrease``, kept in between. Line
    search: step sizes ``alphas`` (decreasing, tried in order until one is accepted), accepted
    when actual/expected decrease > ``armijo``;
    with gaps left, a step whose model predicts a cost increase (closing the gaps costs) is
    accepted when the actual increase is at most ``gap_armijo`` times the predicted one.
    """

    max_iterations: int = 100
    tolerance: float = 1e-7
    mu_init: float = 1e-6
    mu_min: float = 1e-8
    mu_max: float = 1e10
    delta0: float = 2.0
    alphas: tuple = tuple(float(a) for a in 10.0 ** np.linspace(0.0, -3.0, 11))
    armijo: float = 0.1
    gap_armijo: float = 2.0
    step_decrease: float = 0.5
    step_increase: float = 0.01
    gap_tolerance: float = 1e-9
    qp_iterations: int = 10
    verbose: bool = False

    def __post_init__(self):
        if not 0.0 <= self.step_increase < self.step_decrease <= 1.0:
            raise ValueError(
                "ILQROptions: need 0 <= step_increase < step_decrease <= 1 (the accepted step sizes "
                f"that raise and lower the regularisation), got step_increase={self.step_increase!r}, "
                f"step_decrease={self.step_decrease!r}"
            )


STATUS = ("converged", "iteration limit", "no descent (regularisation above mu_max)", "initial guess not finite")
"""What :attr:`ILQRResult.status` means, by its value."""


class ILQRResult(NamedTuple):
    """Output of :func:`ilqr` and :func:`fddp`: optimal states ``x (T+1, nx)`` and controls
    ``u (T, nu)``; the feedforward ``k (T, nu)`` and feedback gains ``K (T, nu, ndx)`` of a
    backward pass at the final trajectory (policy ``u_t + K_t (x (-) x_t)``, clipped to the
    limits); the final ``cost``; ``cost_history (max_iterations + 1,)`` (initial cost first, NaN
    after the last iteration); ``iterations``; ``converged`` (tolerance met, not by exhausting
    ``mu`` or the iteration budget); final regularisation ``mu``; the ``gaps (T, ndx)``
    ``f(x_t, u_t) (-) x_t+1`` left (zero for :func:`ilqr`); ``status``, an index into
    :data:`STATUS`. When the initial guess does not roll out to finite values (status 3), ``x``
    and ``u`` are the initial guess (``x0`` at every knot for :func:`ilqr`), never NaN."""

    x: jnp.ndarray
    u: jnp.ndarray
    k: jnp.ndarray
    K: jnp.ndarray
    cost: jnp.ndarray
    cost_history: jnp.ndarray
    iterations: jnp.ndarray
    converged: jnp.ndarray
    mu: jnp.ndarray
    gaps: jnp.ndarray
    status: jnp.ndarray


class _State(NamedTuple):
    xs: jnp.ndarray
    us: jnp.ndarray
    gaps: jnp.ndarray
    J: jnp.ndarray
    exp: Expansion
    bp: BackwardPass
    mu: jnp.ndarray
    delta: jnp.ndarray
    it: jnp.ndarray
    history: jnp.ndarray
    done: jnp.ndarray
    status: jnp.ndarray


def _start(dynamics: Dynamics, cost: Cost, x0, us0, xs0, lo, hi, opt: ILQROptions) -> _State:
    """The solver's state before iteration 0: the guess (``us0`` clipped to the limits; ``xs0``
    with ``x0`` first and its gaps, or ``x0`` at every knot when ``xs0 is None``), no cost yet
    (``J = inf``), zero expansion and gains, ``it = -1`` (the first :func:`_iterate` evaluates
    the guess)."""
    dtype = x0.dtype
    T, nu = us0.shape
    ndx = dynamics.ndx
    if lo is not None or hi is not None:
        us0 = jnp.clip(us0, lo, hi)
    if xs0 is not None:
        xs0 = xs0.at[0].set(x0)
        gaps0 = defects(dynamics, xs0, us0)
    else:
        xs0 = jnp.broadcast_to(x0, (T + 1,) + x0.shape)  # only xs[0] is read with zero gains
        gaps0 = jnp.zeros((T, ndx), dtype)
    exp0 = jax.tree_util.tree_map(
        lambda a: jnp.zeros(a.shape, dtype), jax.eval_shape(lambda: linearize(dynamics, cost, xs0, us0))
    )
    bp0 = BackwardPass(
        jnp.zeros_like(us0), jnp.zeros((T, nu, ndx), dtype), jnp.zeros(2, dtype), jnp.asarray(True), gaps0 * 0
    )
    return _State(
        xs0,
        us0,
        gaps0,
        jnp.asarray(jnp.inf, dtype),
        exp0,
        bp0,
        jnp.asarray(opt.mu_init, dtype),
        jnp.asarray(1.0, dtype),
        jnp.asarray(-1),
        jnp.full(opt.max_iterations + 1, jnp.nan, dtype),
        jnp.asarray(False),
        jnp.asarray(1),
    )


def running(s: _State, opt: ILQROptions):
    """Whether the solve of state ``s`` goes on: not done and within the iteration budget."""
    return (~s.done) & (s.it < opt.max_iterations)


def finish(s: _State) -> ILQRResult:
    """The result of the final state ``s``."""
    return ILQRResult(
        s.xs, s.us, s.bp.k, s.bp.K, s.J, s.history, jnp.maximum(s.it, 0), s.status == 0, s.mu, s.gaps, s.status
    )


def _raised(mu, delta, opt: ILQROptions):
    """``(mu, delta)`` raised (Tassa 2012 Sec. II-F): ``delta = max(delta0, delta delta0)``,
    ``mu = max(mu_min, mu delta)``."""
    dtype = jnp.result_type(mu)
    delta = jnp.maximum(jnp.asarray(opt.delta0, dtype), delta * opt.delta0)
    return jnp.maximum(jnp.asarray(opt.mu_min, dtype), mu * delta), delta


def _lowered(mu, delta, opt: ILQROptions):
    """``(mu, delta)`` lowered (Tassa 2012 Sec. II-F): ``delta = min(1/delta0, delta/delta0)``,
    ``mu = mu delta``, 0 below ``mu_min``."""
    dtype = jnp.result_type(mu)
    delta = jnp.minimum(jnp.asarray(1.0 / opt.delta0, dtype), delta / opt.delta0)
    return jnp.where(mu * delta > opt.mu_min, mu * delta, jnp.asarray(0.0, dtype)), delta


def regularisation_schedule(mu, delta, accepted, alpha, opt: ILQROptions):
    """``(mu, delta)`` (scalars) after a line search that ``accepted`` (bool) a step of size
    ``alpha``: the Levenberg-Marquardt schedule of Tassa 2012 Sec. II-F, taken by the accepted
    step's size as in Mastalli et al. 2020 (Crocoddyl's ``th_stepdec`` and ``th_stepinc``).
    Lowered (:func:`_lowered`) after a step longer than ``opt.step_decrease``; raised
    (:func:`_raised`) when no step was accepted or the accepted one was at most
    ``opt.step_increase``; kept in between. A short step says the model is trusted too far:
    lowering ``mu`` after it makes the next Newton step longer still and the line search
    shorter (a Panda reach from interpolated states took 110 iterations, the full step refused
    for 100 of them; 36 with this schedule)."""
    mu_dn, d_dn = _lowered(mu, delta, opt)
    mu_up, d_up = _raised(mu, delta, opt)
    lower = accepted & (alpha > opt.step_decrease)
    raise_ = ~accepted | (alpha <= opt.step_increase)
    mu = jnp.where(lower, mu_dn, jnp.where(raise_, mu_up, mu))
    delta = jnp.where(lower, d_dn, jnp.where(raise_, d_up, delta))
    return mu, delta


def _iterate(dynamics: Dynamics, cost: Cost, lo, hi, opt: ILQROptions, shooting: bool, s: _State) -> _State:
    """One iteration: line search along the current gains, then (only after an accepted step)
    re-linearisation, then the regularised backward pass at the current trajectory. Iteration 0
    (``s.it < 0``) is the line search with zero gains and ``alpha = 0``: it evaluates the guess
    (a rollout of the controls without gaps; the states themselves with them), so each building
    block is compiled once and the gains always belong to the trajectory they are returned with.
    ``shooting``: multiple shooting (:func:`fddp`) or single shooting (:func:`ilqr`)."""
    dtype = s.J.dtype
    c = lambda v: jnp.asarray(v, dtype)
    alphas = jnp.asarray(opt.alphas, dtype)
    T, nu = s.us.shape
    ndx = dynamics.ndx

    def regularised_backward(exp, us, gaps, k_warm, mu, delta, done):
        """Backward pass, raising mu (Tassa 2012 Sec. II-F) until it succeeds or exceeds mu_max."""

        def cond(st):
            return (~st[2].ok) & (st[0] <= opt.mu_max) & ~done

        def body(st):
            mu, delta, _, first = st
            mu_up, delta_up = _raised(mu, delta, opt)
            mu, delta = jnp.where(first, mu, mu_up), jnp.where(first, delta, delta_up)
            bp = backward_pass(exp, us, lo, hi, mu, k_warm, opt.qp_iterations, gaps if shooting else None)
            return mu, delta, bp, jnp.asarray(False)

        bp0 = BackwardPass(
            jnp.zeros_like(us), jnp.zeros((T, nu, ndx), dtype), jnp.zeros(2, dtype), jnp.asarray(False), gaps * 0
        )
        mu, delta, bp, _ = jax.lax.while_loop(cond, body, (mu, delta, bp0, jnp.asarray(True)))
        return mu, delta, bp

    def feasible(gaps):
        return jnp.all(jnp.abs(gaps) <= opt.gap_tolerance)

    first = s.it < 0
    bp = s.bp
    expected = -(bp.dV[0] + bp.dV[1])  # at alpha = 1, where the trial's gap term vanishes
    scale = 1.0 + jnp.abs(s.J)
    was_feasible = feasible(s.gaps)
    small = (~first) & bp.ok & was_feasible & (expected < opt.tolerance * scale)

    # backtracking: the step sizes in order, stopping at the first accepted one (the largest, as
    # alphas decrease); usually the first, so one rollout per iteration. Under vmap the loop runs
    # until every problem of the batch still iterating has accepted a step or run out; problems
    # already done take no part (nor in the repeated backward passes), so they never prolong the
    # batch's inner loops.
    def search_body(cs):
        j, _, _ = cs
        a = jnp.where(first, c(0.0), alphas[j])
        r = forward_pass(dynamics, cost, s.xs, s.us, bp.k, bp.K, a, lo, hi, s.gaps if shooting else None)
        # expected change of J with the gap terms (derived in docs/trajopt.md)
        change = a * bp.dV[0] + a**2 * bp.dV[1]
        if shooting:
            dx = jax.vmap(dynamics.minus)(r.x[1:], s.xs[1:])
            change = change - (1.0 - a) * jnp.sum(bp.Vg * dx)
        decrease = s.J - r.cost
        descent = (-change) > 0
        z = decrease / jnp.where(descent, -change, jnp.inf)
        good = (r.cost < s.J) & (z > opt.armijo)
        if shooting:  # a step that must raise the cost to close the gaps
            good = good | ((~was_feasible) & (~descent) & (decrease >= opt.gap_armijo * (-change)))
        good = first | (bp.ok & jnp.isfinite(r.cost) & good)
        return j + 1, good, r

    search_cond = lambda cs: (~cs[1]) & (cs[0] < alphas.shape[0]) & ~small & ~s.done
    r0 = Rollout(s.xs, s.us, s.J, s.gaps if shooting else None)
    j, found, r = jax.lax.while_loop(search_cond, search_body, (jnp.asarray(0), jnp.asarray(False), r0))
    not_finite = first & ~(jnp.isfinite(r.cost) & jnp.all(jnp.isfinite(r.x)))
    accept = found & ~small & ~not_finite
    i = jnp.maximum(j - 1, 0)  # the index of the accepted step
    J = jnp.where(accept, r.cost, s.J)
    xs = jnp.where(accept, r.x, s.xs)
    us = jnp.where(accept, r.u, s.us)
    gaps = s.gaps if r.gaps is None else jnp.where(accept, r.gaps, s.gaps)
    keep = first | small
    mu, delta = regularisation_schedule(s.mu, s.delta, accept, alphas[i], opt)
    mu, delta = jnp.where(keep, s.mu, mu), jnp.where(keep, s.delta, delta)
    settled = accept & ~first & was_feasible & feasible(gaps) & (s.J - J < opt.tolerance * scale)
    converged = small | settled
    exp = jax.lax.cond(accept, lambda: linearize(dynamics, cost, xs, us), lambda: s.exp)
    k_warm = jnp.where(accept & ~first, bp.k, jnp.zeros_like(bp.k))
    done = s.done | not_finite
    mu, delta, bp = regularised_backward(exp, us, gaps, k_warm, mu, delta, done)
    failed = (~bp.ok) | (mu > opt.mu_max)
    it = s.it + jnp.where(small | not_finite, 0, 1)  # the convergence test alone is not an iteration
    history = s.history.at[jnp.maximum(it, 0)].set(J)
    status = jnp.where(not_finite, 3, jnp.where(converged, 0, jnp.where(failed, 2, 1)))
    if opt.verbose:
        jax.debug.print(
            "trajopt {it:4d}  cost {J:.8e}  gap {g:.2e}  alpha {a:.3e}  mu {mu:.2e}",
            it=it,
            J=J,
            g=jnp.max(jnp.abs(gaps)),
            a=jnp.where(accept & ~first, alphas[i], 0.0),
            mu=mu,
        )
    return _State(xs, us, gaps, J, exp, bp, mu, delta, it, history, done | converged | failed, status)


@eqx.filter_jit
def solve(dynamics: Dynamics, cost: Cost, x0, us0, xs0, lo, hi, opt: ILQROptions) -> ILQRResult:
    """The iterations (:func:`_iterate`) as one ``lax.while_loop`` from :func:`_start`.
    ``xs0 = None``: single shooting (:func:`ilqr`); an array: multiple shooting from the states
    ``xs0`` (:func:`fddp`)."""
    shooting = xs0 is not None
    s = _start(dynamics, cost, x0, us0, xs0, lo, hi, opt)
    s = jax.lax.while_loop(lambda s: running(s, opt), lambda s: _iterate(dynamics, cost, lo, hi, opt, shooting, s), s)
    return finish(s)


def host_value(a):
    """``a`` as a NumPy array when it is concrete (a Python number, NumPy or committed JAX
    array), ``None`` when it is traced (an argument of an enclosing ``jit``/``vmap``/``grad``).

    The input checks run on these host values only: inside a ``jit`` every ``jnp`` operation,
    even on a closed-over constant, returns a tracer, so ``bool(jnp.all(...))`` there would raise
    ``TracerBoolConversionError``. Shapes are always static and are checked regardless.
    """
    if isinstance(a, jax.core.Tracer):
        return None
    try:
        return np.asarray(a)
    except Exception:  # an object NumPy cannot read concretely: leave the value unchecked
        return None


def checked(solver: str, dynamics, cost, x0, u_init, u_lower, u_upper, options):
    """The inputs of :func:`ilqr` / :func:`fddp` as arrays of one dtype, checked (their
    docstrings): ``(x0, u_init, lower, upper)``, the limits ``None`` when neither is given."""
    if not isinstance(dynamics, Dynamics):
        raise ValueError(f"{solver}: dynamics must be a jaxdyn.trajopt.Dynamics, got {type(dynamics).__name__}")
    if not isinstance(cost, Cost):
        raise ValueError(f"{solver}: cost must be a jaxdyn.trajopt.Cost, got {type(cost).__name__}")
    if not isinstance(options, ILQROptions):
        raise ValueError(f"{solver}: options must be an ILQROptions, got {type(options).__name__}")
    dtype = dynamics.model.dtype if isinstance(dynamics, ModelDynamics) else None
    x0_host, u_host = host_value(x0), host_value(u_init)
    x0 = jnp.asarray(x0, dtype)
    if not jnp.issubdtype(x0.dtype, jnp.floating):
        x0 = x0.astype(jnp.result_type(float))
    dtype = x0.dtype
    u_init = jnp.asarray(u_init, dtype)
    nx, nu = dynamics.nx, dynamics.nu
    if x0.shape != (nx,):
        raise ValueError(f"{solver}: x0 must have shape ({nx},) (the dynamics' state size), got {x0.shape}")
    if u_init.ndim != 2 or u_init.shape[1] != nu or u_init.shape[0] < 1:
        raise ValueError(f"{solver}: u_init must have shape (T, {nu}) with T >= 1, got {u_init.shape}")
    lim, lim_host = [], []
    for name, v, default in (("u_lower", u_lower, -np.inf), ("u_upper", u_upper, np.inf)):
        v = default if v is None else v
        lim_host.append(host_value(v))
        v = jnp.asarray(v, dtype)
        if v.ndim == 0:
            v = jnp.full(nu, v, dtype)
        if v.shape != (nu,):
            raise ValueError(f"{solver}: {name} must be a scalar or have shape ({nu},), got {v.shape}")
        lim.append(v)
    # unconstrained (neither limit given): None, so the backward pass needs no box QP
    lo, hi = (None, None) if u_lower is None and u_upper is None else (lim[0], lim[1])
    if x0_host is not None and not np.all(np.isfinite(x0_host)):
        raise ValueError(f"{solver}: x0 contains NaN or inf")
    if u_host is not None and not np.all(np.isfinite(u_host)):
        raise ValueError(f"{solver}: u_init contains NaN or inf")
    lo_host, hi_host = lim_host
    if lo_host is not None and hi_host is not None:
        if np.any(np.isnan(lo_host)) or np.any(np.isnan(hi_host)):
            raise ValueError(f"{solver}: u_lower/u_upper contain NaN")
        if np.any(lo_host > hi_host):
            raise ValueError(f"{solver}: u_lower must be <= u_upper, got {lo_host} > {hi_host}")
    if options.max_iterations < 1 or not options.alphas or options.qp_iterations < 1:
        raise ValueError(f"{solver}: options need max_iterations >= 1, qp_iterations >= 1 and at least one alpha")
    for term in cost.terms if isinstance(cost, SumCost) else (cost,):
        for what, f in (
            ("running(x, u, t)", lambda term=term: term.running(x0, u_init[0], 0)),
            ("terminal(x)", lambda term=term: term.terminal(x0)),
        ):
            shape = jax.eval_shape(f).shape
            if shape != ():
                raise ValueError(
                    f"{solver}: cost term {type(term).__name__}: {what} must be a scalar, got shape {shape}"
                )
    return x0, u_init, lo, hi


def ilqr(
    dynamics: Dynamics, cost: Cost, x0, u_init, u_lower=None, u_upper=None, options: ILQROptions = ILQROptions()
) -> ILQRResult:
    """Box-constrained iterative LQR (module docstring): minimise ``cost`` over ``T`` controls
    from the state ``x0 (nx,)``, starting from the open-loop controls ``u_init (T, nu)``
    (clipped to the limits).

    Args:
      dynamics: a :class:`Dynamics` (:func:`model_dynamics` for a :class:`~jaxdyn.Model`).
      cost: a :class:`Cost`.
      u_lower, u_upper: control limits, scalars or ``(nu,)`` (``None``: unbounded); every control
        of the result, and of every iterate, lies within them.
      options: :class:`ILQROptions`.

    Returns an :class:`ILQRResult`. The solve is one jitted program (``eqx.filter_jit``): arrays
    in ``dynamics``/``cost`` and ``x0``/``u_init``/limits are traced, so a new target or initial
    guess reuses it. Raises ``ValueError`` for wrong shapes and, where the values are concrete
    (not arguments of an enclosing ``jit``/``vmap``, closed-over constants included), for
    non-finite inputs or empty boxes; ``jax.jit(jax.vmap(...))`` of it works either way.
    """
    x0, u_init, lo, hi = checked("ilqr", dynamics, cost, x0, u_init, u_lower, u_upper, options)
    return solve(dynamics, cost, x0, u_init, None, lo, hi, options)


def fddp(
    dynamics: Dynamics,
    cost: Cost,
    x0,
    u_init,
    x_init=None,
    u_lower=None,
    u_upper=None,
    options: ILQROptions = ILQROptions(),
) -> ILQRResult:
    """Feasibility-driven DDP (Mastalli et al. 2020): :func:`ilqr` by multiple shooting, from
    states ``x_init (T+1, nx)`` that need not be a rollout of ``u_init (T, nu)`` (``None``:
    ``x0`` at every knot; ``x_init[0]`` is replaced by ``x0``).

    The gaps ``g_t+1 = f(x_t, u_t) (-) x_t+1`` enter the backward pass (:func:`backward_pass`)
    and shrink by ``1 - alpha`` in each accepted step (:func:`forward_pass`); the first full
    step closes them. Until then a step may raise the cost (``ILQROptions.gap_armijo``), and
    convergence needs every gap below ``ILQROptions.gap_tolerance``. From a rollout (zero gaps)
    the iterations are those of :func:`ilqr`. Arguments, checks and result as for
    :func:`ilqr`; ``result.gaps`` are the gaps left."""
    x0, u_init, lo, hi = checked("fddp", dynamics, cost, x0, u_init, u_lower, u_upper, options)
    if 1.0 not in options.alphas:
        raise ValueError("fddp: options.alphas must contain the full step 1.0 (it closes the gaps)")
    T = u_init.shape[0]
    if x_init is None:
        x_init = jnp.broadcast_to(x0, (T + 1, dynamics.nx))
    xs_host = host_value(x_init)
    x_init = jnp.asarray(x_init, x0.dtype)
    if x_init.shape != (T + 1, dynamics.nx):
        raise ValueError(f"fddp: x_init must have shape ({T + 1}, {dynamics.nx}) (T+1 states), got {x_init.shape}")
    if xs_host is not None and not np.all(np.isfinite(xs_host)):
        raise ValueError("fddp: x_init contains NaN or inf")
    return solve(dynamics, cost, x0, u_init, x_init, lo, hi, options)
