"""Trajectory optimisation: iterative LQR / DDP with box-constrained controls.

Problem (discrete time, horizon ``T``)::

    minimise   J(u) = sum_{t<T} l(x_t, u_t, t) + l_f(x_T)
    subject to x_{t+1} = f(x_t, u_t),  x_0 given,  u_lower <= u_t <= u_upper

* Dynamics ``f`` (:class:`Dynamics`): for a :class:`~jaxdyn.Model`, :func:`model_dynamics` wraps
  one (or several sub-) steps of :func:`jaxdyn.sim.step` with the state ``x = (q, qd)``. The
  optimiser works in the tangent space of the state manifold: perturbations are
  ``x (+) dx = (integrate(q, dq), qd + dqd)`` and differences use
  :func:`jaxdyn.difference`, so ``dx`` has size ``2 nv`` and floating-base / spherical joints
  (quaternions) are handled without a singular or over-parametrised linearisation.
* Costs (:class:`Cost`): a running cost ``l(x, u, t)`` and a terminal cost ``l_f(x)``; user
  functions (:class:`FunctionCost`), quadratic state/control costs (:func:`quadratic_cost`),
  an end-effector position cost (:class:`FramePositionCost`), and sums of them (``cost_a + cost_b``).

The optimiser (:func:`ilqr`) is iterative LQR (Li & Todorov, *Iterative linear quadratic
regulator design for nonlinear biological movement systems*, ICINCO 2004) with the
regularisation and line search of Tassa, Erez & Todorov (*Synthesis and stabilization of complex
behaviors through online trajectory optimization*, IROS 2012) and the control limits of Tassa,
Mansard & Todorov (*Control-limited differential dynamic programming*, ICRA 2014):

1. linearise the dynamics along the nominal trajectory by ``jax.jacfwd`` of the discrete step
   (``f_x``, ``f_u`` in the tangent space) and expand the costs to second order with
   ``jax.grad`` / ``jax.hessian`` (all time steps at once with ``vmap``);
2. backward pass (a reverse ``lax.scan``), Tassa 2012 eqs. (5) and (10)-(11)::

       Q_x  = l_x + f_x' V_x'          Q_u  = l_u + f_u' V_x'
       Q_xx = l_xx + f_x' V_xx' f_x    Q_uu = l_uu + f_u' V_xx' f_u    Q_ux = l_ux + f_u' V_xx' f_x
       regularised: Q~_uu = l_uu + f_u' (V_xx' + mu I) f_u,  Q~_ux = l_ux + f_u' (V_xx' + mu I) f_x
       k = argmin_{lo <= u + k <= hi} 1/2 k' Q~_uu k + k' Q_u      (box QP, Tassa 2014 Alg. 1:
                                                                     projected Newton)
       K = -Q~_uu,ff^-1 Q~_ux,f on the free controls, 0 on the clamped ones
       V_x  = Q_x + K' Q_uu k + K' Q_u + Q_ux' k
       V_xx = Q_xx + K' Q_uu K + K' Q_ux + Q_ux' K
       dV   = sum (alpha k' Q_u + alpha^2/2 k' Q_uu k)         (expected change of J)

   A non positive definite ``Q~_uu`` (Cholesky failure) raises ``mu`` and repeats the pass;
3. forward pass ``u_t = clip(u_t + alpha k_t + K_t (x_t (-) xbar_t), lo, hi)`` for all step sizes
   ``alpha`` of the line search at once (``vmap``); the largest ``alpha`` whose actual/expected
   decrease ratio exceeds ``armijo`` is accepted (Tassa 2012 eq. (13)), then ``mu`` is lowered;
   when none is, ``mu`` is raised (the Levenberg-Marquardt schedule of Tassa 2012 Sec. II-F).

The whole optimisation (iterations included, as a ``lax.while_loop``) is one jitted program per
problem structure: changing ``x0``, the initial controls, targets or weights (arrays) reuses it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from . import configuration, sim
from .algorithms.kinematics import frame_placement
from .model import Model

__all__ = [
    "Dynamics",
    "ModelDynamics",
    "LinearDynamics",
    "FunctionDynamics",
    "model_dynamics",
    "Cost",
    "FunctionCost",
    "QuadraticCost",
    "FramePositionCost",
    "SumCost",
    "quadratic_cost",
    "ILQROptions",
    "ILQRResult",
    "Expansion",
    "ilqr",
    "simulate",
    "total_cost",
    "linearize",
    "backward_pass",
    "forward_pass",
    "box_qp",
]


# -- dynamics ---------------------------------------------------------------------------------------


class Dynamics(eqx.Module):
    """Discrete dynamics ``x_next = f(x, u)`` on a state manifold.

    Subclasses implement ``__call__(x, u)`` and the sizes ``nx`` (state), ``nu`` (control) and
    ``ndx`` (tangent space, default ``nx``); ``plus(x, dx)`` / ``minus(x1, x0)`` (default
    Euclidean) define perturbations and differences of states.
    """

    def __call__(self, x, u):
        raise NotImplementedError(f"{type(self).__name__}: a Dynamics subclass must define __call__(x, u)")

    @property
    def nx(self) -> int:
        raise NotImplementedError(f"{type(self).__name__}: a Dynamics subclass must define the property nx")

    @property
    def nu(self) -> int:
        raise NotImplementedError(f"{type(self).__name__}: a Dynamics subclass must define the property nu")

    @property
    def ndx(self) -> int:
        return self.nx

    def plus(self, x, dx):
        return x + dx

    def minus(self, x1, x0):
        return x1 - x0


class LinearDynamics(Dynamics):
    """``x_next = A x + B u + c`` (time invariant)."""

    A: jnp.ndarray
    B: jnp.ndarray
    c: jnp.ndarray

    def __init__(self, A, B, c=None):
        A, B = jnp.asarray(A), jnp.asarray(B)
        if A.ndim != 2 or A.shape[0] != A.shape[1]:
            raise ValueError(f"LinearDynamics: A must be square (nx, nx), got {A.shape}")
        if B.ndim != 2 or B.shape[0] != A.shape[0]:
            raise ValueError(f"LinearDynamics: B must have shape ({A.shape[0]}, nu), got {B.shape}")
        c = jnp.zeros(A.shape[0], A.dtype) if c is None else jnp.asarray(c, A.dtype)
        if c.shape != (A.shape[0],):
            raise ValueError(f"LinearDynamics: c must have shape ({A.shape[0]},), got {c.shape}")
        self.A, self.B, self.c = A, B.astype(A.dtype), c

    def __call__(self, x, u):
        return self.A @ x + self.B @ u + self.c

    @property
    def nx(self) -> int:
        return self.A.shape[0]

    @property
    def nu(self) -> int:
        return self.B.shape[1]


class FunctionDynamics(Dynamics):
    """User dynamics ``fn(x, u) -> x_next`` on a Euclidean state of size ``nx`` (``fn`` is
    static: a new function recompiles)."""

    fn: Callable = eqx.field(static=True)
    sizes: tuple = eqx.field(static=True)

    def __init__(self, fn: Callable, nx: int, nu: int):
        if not callable(fn):
            raise ValueError("FunctionDynamics: fn must be callable fn(x, u) -> x_next")
        self.fn, self.sizes = fn, (int(nx), int(nu))

    def __call__(self, x, u):
        return self.fn(x, u)

    @property
    def nx(self) -> int:
        return self.sizes[0]

    @property
    def nu(self) -> int:
        return self.sizes[1]


class ModelDynamics(Dynamics):
    """One control step of a :class:`~jaxdyn.Model`: ``substeps`` calls of
    :func:`jaxdyn.sim.step` of ``dt / substeps`` with the torque held. State
    ``x = concat(q, qd)``; control ``u`` = the torques of the ``actuated`` dofs (the others get
    zero torque: an acrobot, or the unactuated base of a floating-base robot). Build it with
    :func:`model_dynamics`."""

    model: Model
    dt: float = eqx.field(static=True)
    integrator: str = eqx.field(static=True)
    options: sim.SimOptions = eqx.field(static=True)
    substeps: int = eqx.field(static=True)
    actuated: tuple = eqx.field(static=True)

    @property
    def nx(self) -> int:
        return self.model.nq + self.model.nv

    @property
    def ndx(self) -> int:
        return 2 * self.model.nv

    @property
    def nu(self) -> int:
        return len(self.actuated)

    def split(self, x):
        """``(q, qd)`` of a state."""
        return x[: self.model.nq], x[self.model.nq :]

    def torque(self, u):
        """The joint torque ``(nv,)`` that control ``u`` applies."""
        tau = jnp.zeros(self.model.nv, self.model.dtype)
        return tau.at[np.asarray(self.actuated, dtype=int)].set(u)

    def __call__(self, x, u):
        q, qd = self.split(x)
        tau = self.torque(u)
        h = self.dt / self.substeps
        for _ in range(self.substeps):
            q, qd = sim.step(self.model, q, qd, tau, h, self.integrator, None, self.options)
        return jnp.concatenate([q, qd])

    def plus(self, x, dx):
        q, qd = self.split(x)
        nv = self.model.nv
        return jnp.concatenate([configuration.integrate(self.model, q, dx[:nv]), qd + dx[nv:]])

    def minus(self, x1, x0):
        q1, qd1 = self.split(x1)
        q0, qd0 = self.split(x0)
        return jnp.concatenate([configuration.difference(self.model, q0, q1), qd1 - qd0])


def model_dynamics(
    model: Model,
    dt: float,
    integrator: str = sim.DEFAULT_INTEGRATOR,
    options: sim.SimOptions = sim.SimOptions(),
    substeps: int = 1,
    actuated: Sequence[str | int] | None = None,
) -> ModelDynamics:
    """Discrete dynamics of ``model`` for :func:`ilqr` (see :class:`ModelDynamics`).

    Args:
      dt: control period [s] (torque held constant over it).
      integrator, options: as for :func:`jaxdyn.sim.step`.
      substeps: integrator steps per control period.
      actuated: joint names and/or velocity indices that receive a control; ``None`` = every dof
        of a fixed-base model, every dof but the 6 of the free-flyer for a floating base.
    """
    sim._check_integrator(integrator)
    if not dt > 0:
        raise ValueError(f"model_dynamics: dt must be positive, got {dt!r}")
    if not isinstance(substeps, (int, np.integer)) or substeps < 1:
        raise ValueError(f"model_dynamics: substeps must be a positive integer, got {substeps!r}")
    if actuated is None:
        idx = list(range(6 if model.floating_base else 0, model.nv))
    else:
        if isinstance(actuated, (str, int, np.integer)):
            actuated = [actuated]
        idx = []
        for a in actuated:
            if isinstance(a, str):
                if a not in model.joint_names:
                    raise ValueError(
                        f"model_dynamics: actuated joint '{a}' is not a joint of model "
                        f"'{model.name}' (joints: {', '.join(model.joint_names)})"
                    )
                s = model.joint_v_slice(a)
                idx.extend(range(s.start, s.stop))
            elif isinstance(a, (int, np.integer)) and 0 <= int(a) < model.nv:
                idx.append(int(a))
            else:
                raise ValueError(
                    f"model_dynamics: actuated entry {a!r} is neither a joint name nor a "
                    f"velocity index in [0, {model.nv})"
                )
        if len(set(idx)) != len(idx) or not idx:
            raise ValueError(f"model_dynamics: actuated dofs must be distinct and non-empty, got {idx}")
    return ModelDynamics(model, float(dt), integrator, options, int(substeps), tuple(idx))


# -- costs ------------------------------------------------------------------------------------------


class Cost(eqx.Module):
    """A trajectory cost: running ``running(x, u, t)`` (``t`` the integer step) and terminal
    ``terminal(x)``, both scalar. Costs add: ``cost_a + cost_b`` is a :class:`SumCost`."""

    def running(self, x, u, t):
        raise NotImplementedError(f"{type(self).__name__}: a Cost subclass must define running(x, u, t)")

    def terminal(self, x):
        raise NotImplementedError(f"{type(self).__name__}: a Cost subclass must define terminal(x)")

    def __add__(self, other: Cost) -> SumCost:
        if not isinstance(other, Cost):
            return NotImplemented
        left = self.terms if isinstance(self, SumCost) else (self,)
        right = other.terms if isinstance(other, SumCost) else (other,)
        return SumCost(left + right)


class SumCost(Cost):
    """The sum of several costs."""

    terms: tuple

    def running(self, x, u, t):
        return sum(c.running(x, u, t) for c in self.terms)

    def terminal(self, x):
        return sum(c.terminal(x) for c in self.terms)


class FunctionCost(Cost):
    """User functions ``running_fn(x, u, t)`` and ``terminal_fn(x)`` (either may be ``None``
    for zero). The functions are static (a new function recompiles); close over nothing that
    should change between solves, or subclass :class:`Cost` with array fields instead."""

    running_fn: Callable | None = eqx.field(static=True)
    terminal_fn: Callable | None = eqx.field(static=True)

    def __init__(self, running_fn: Callable | None = None, terminal_fn: Callable | None = None):
        for name, f in (("running_fn", running_fn), ("terminal_fn", terminal_fn)):
            if f is not None and not callable(f):
                raise ValueError(f"FunctionCost: {name} must be callable or None, got {type(f).__name__}")
        self.running_fn, self.terminal_fn = running_fn, terminal_fn

    def running(self, x, u, t):
        return jnp.zeros((), x.dtype) if self.running_fn is None else self.running_fn(x, u, t)

    def terminal(self, x):
        return jnp.zeros((), x.dtype) if self.terminal_fn is None else self.terminal_fn(x)


def _pick(ref, t):
    """A reference that is either constant ``(n,)`` or per step ``(T, n)``."""
    return ref if ref.ndim == 1 else ref[jnp.minimum(t, ref.shape[0] - 1)]


class QuadraticCost(Cost):
    """``l = 1/2 dx' Q dx + 1/2 du' R du``, ``l_f = 1/2 dx_T' Qf dx_T`` with
    ``dx = x (-) x_ref`` (``space.minus`` when a :class:`Dynamics` is given, else ``x - x_ref``)
    and ``du = u - u_ref``. References may be constant or per step (``(T+1, nx)``/``(T, nu)``;
    the terminal cost uses the last row). Build it with :func:`quadratic_cost`."""

    Q: jnp.ndarray
    R: jnp.ndarray
    Qf: jnp.ndarray
    x_ref: jnp.ndarray
    u_ref: jnp.ndarray
    space: Dynamics | None = None

    def _dx(self, x, ref):
        return x - ref if self.space is None else self.space.minus(x, ref)

    def running(self, x, u, t):
        dx = self._dx(x, _pick(self.x_ref, t))
        du = u - _pick(self.u_ref, t)
        return 0.5 * dx @ self.Q @ dx + 0.5 * du @ self.R @ du

    def terminal(self, x):
        ref = self.x_ref if self.x_ref.ndim == 1 else self.x_ref[-1]
        dx = self._dx(x, ref)
        return 0.5 * dx @ self.Qf @ dx


def _weight_matrix(w, n, name, dtype):
    w = jnp.asarray(w, dtype)
    if w.ndim == 0:
        return w * jnp.eye(n, dtype=dtype)
    if w.shape == (n,):
        return jnp.diag(w)
    if w.shape == (n, n):
        return w
    raise ValueError(
        f"quadratic_cost: {name} must be a scalar, a ({n},) diagonal or a ({n}, {n}) matrix, got {w.shape}"
    )


def quadratic_cost(
    x_ref, Q, R, Qf=None, u_ref=None, nu: int | None = None, space: Dynamics | None = None, dtype=None
) -> QuadraticCost:
    """A :class:`QuadraticCost`. Weights may be scalars, diagonals or full matrices; ``Qf``
    defaults to ``Q``; ``u_ref`` to zero (then ``nu`` or a matrix ``R`` gives its size). Pass
    ``space=dynamics`` to measure state errors with ``dynamics.minus`` (needed on a manifold:
    the weights then act on the tangent space of size ``dynamics.ndx``)."""
    x_ref = jnp.asarray(x_ref, dtype)
    dtype = x_ref.dtype
    if x_ref.ndim not in (1, 2):
        raise ValueError(f"quadratic_cost: x_ref must have shape (nx,) or (T+1, nx), got {x_ref.shape}")
    ndx = space.ndx if space is not None else x_ref.shape[-1]
    if space is not None and x_ref.shape[-1] != space.nx:
        raise ValueError(f"quadratic_cost: x_ref has {x_ref.shape[-1]} state entries, the dynamics {space.nx}")
    if u_ref is None:
        if nu is None:
            Rm = jnp.asarray(R)
            if Rm.ndim != 2:
                if space is None:
                    raise ValueError("quadratic_cost: give u_ref, nu or a matrix R (the control size is unknown)")
                nu = space.nu
            else:
                nu = Rm.shape[0]
        u_ref = jnp.zeros(nu, dtype)
    u_ref = jnp.asarray(u_ref, dtype)
    if u_ref.ndim not in (1, 2):
        raise ValueError(f"quadratic_cost: u_ref must have shape (nu,) or (T, nu), got {u_ref.shape}")
    n_u = u_ref.shape[-1]
    Qm = _weight_matrix(Q, ndx, "Q", dtype)
    Qfm = Qm if Qf is None else _weight_matrix(Qf, ndx, "Qf", dtype)
    Rm = _weight_matrix(R, n_u, "R", dtype)
    return QuadraticCost(Qm, Rm, Qfm, x_ref, u_ref, space)


class FramePositionCost(Cost):
    """End-effector position cost on a :class:`~jaxdyn.Model` state ``x = (q, qd)``:
    ``l = weight/2 |p(q) - target|^2`` (running, per step) and
    ``l_f = terminal_weight/2 |p(q_T) - target|^2``, ``p`` from :func:`jaxdyn.frame_placement`.
    ``target`` is ``(3,)`` or per step ``(T+1, 3)`` (the terminal cost uses its last row)."""

    model: Model
    frame: str = eqx.field(static=True)
    target: jnp.ndarray
    weight: jnp.ndarray
    terminal_weight: jnp.ndarray

    def __init__(self, model: Model, frame: str, target, weight=0.0, terminal_weight=1.0):
        if frame not in model.frame_names:
            raise ValueError(
                f"FramePositionCost: frame '{frame}' is not a frame of model '{model.name}' "
                f"(frames: {', '.join(model.frame_names)})"
            )
        target = jnp.asarray(target, model.dtype)
        if target.ndim not in (1, 2) or target.shape[-1] != 3:
            raise ValueError(f"FramePositionCost: target must have shape (3,) or (T+1, 3), got {target.shape}")
        self.model, self.frame, self.target = model, frame, target
        self.weight = jnp.asarray(weight, model.dtype)
        self.terminal_weight = jnp.asarray(terminal_weight, model.dtype)

    def position(self, x):
        """World position of the frame for state ``x``."""
        return frame_placement(self.model, x[: self.model.nq], self.frame).p

    def running(self, x, u, t):
        e = self.position(x) - _pick(self.target, t)
        return 0.5 * self.weight * e @ e

    def terminal(self, x):
        tgt = self.target if self.target.ndim == 1 else self.target[-1]
        e = self.position(x) - tgt
        return 0.5 * self.terminal_weight * e @ e


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
    """Jacobians of the discrete dynamics (``jax.jacfwd`` of ``f(x (+) dx, u + du) (-) f(x, u)``
    at zero) and second-order expansions of the costs (``jax.grad``/``jax.hessian`` in
    ``(dx, du)``) at every step of the trajectory (``vmap`` over time)."""
    zx = jnp.zeros(dynamics.ndx, xs.dtype)
    zu = jnp.zeros(dynamics.nu, xs.dtype)

    def at_step(x, u, t):
        x1 = jax.lax.stop_gradient(dynamics(x, u))
        g = lambda dx, du: dynamics.minus(dynamics(dynamics.plus(x, dx), u + du), x1)
        fx, fu = jax.jacfwd(g, argnums=(0, 1))(zx, zu)
        l = lambda dx, du: cost.running(dynamics.plus(x, dx), u + du, t)
        lx, lu = jax.grad(l, argnums=(0, 1))(zx, zu)
        (lxx, _), (lux, luu) = jax.hessian(l, argnums=(0, 1))(zx, zu)
        return fx, fu, lx, lu, lxx, luu, lux

    ts = jnp.arange(us.shape[0])
    fx, fu, lx, lu, lxx, luu, lux = jax.vmap(at_step)(xs[:-1], us, ts)
    lf = lambda dx: cost.terminal(dynamics.plus(xs[-1], dx))
    return Expansion(fx, fu, lx, lu, lxx, luu, lux, jax.grad(lf)(zx), jax.hessian(lf)(zx))


def _sym(A):
    return 0.5 * (A + A.T)


def _masked_cholesky(H, free):
    """Cholesky factor of ``H`` restricted to the ``free`` rows/columns (identity elsewhere)."""
    both = free[:, None] & free[None, :]
    Hf = jnp.where(both, H, jnp.eye(H.shape[0], dtype=H.dtype))
    return jnp.linalg.cholesky(Hf)


def _cho_solve(L, b):
    return jax.scipy.linalg.cho_solve((L, True), b)


_QP_STEPS = (1.0, 0.5, 0.25, 0.125, 0.0625, 0.03125, 0.015625, 0.0078125)


def box_qp(H, g, lower, upper, k0, iterations: int = 10):
    """``argmin 1/2 k' H k + g' k`` subject to ``lower <= k <= upper`` by projected Newton
    (Tassa, Mansard & Todorov 2014, Algorithm 1): the clamped set is the controls at a bound
    whose gradient points outward; a Newton step on the free set is followed by a projected
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
        L = _masked_cholesky(H, free)
        d = jnp.where(free, -_cho_solve(L, jnp.where(free, grad, 0.0)), 0.0)
        cand = jnp.clip(kk[None] + steps[:, None] * d[None], lower, upper)
        vals = jax.vmap(f)(cand)
        f0 = f(kk)
        ok = jnp.isfinite(vals) & (vals <= f0 + 0.1 * (cand - kk[None]) @ grad)
        j = jnp.argmax(ok)
        moved = jnp.any(ok) & jnp.all(jnp.isfinite(d))
        new = jnp.where(moved, cand[j], kk)
        # stop once a step no longer improves the objective (relative to its size)
        going = moved & (f0 - vals[j] > tol * (1.0 + jnp.abs(f0)))
        return i + 1, new, going

    _, k, _ = jax.lax.while_loop(lambda s: (s[0] < iterations) & s[2], body, (0, k, jnp.asarray(True)))
    clamped, _ = clamped_mask(k)
    free = ~clamped
    return k, free, _masked_cholesky(H, free)


def backward_pass(exp: Expansion, us, u_lower, u_upper, mu, k_warm=None, qp_iterations: int = 10):
    """Riccati-like backward pass of box-constrained iLQR (module docstring; Tassa 2012
    eqs. (10)-(11), Tassa 2014 Sec. III). ``mu`` regularises ``V_xx`` (``V_xx + mu I``).

    Returns ``(k (T, nu), K (T, nu, ndx), dV (2,), ok)``: feedforward and feedback gains, the
    coefficients of the expected cost change ``dV(alpha) = alpha dV[0] + alpha^2 dV[1]``, and
    whether every regularised ``Q_uu`` was positive definite on its free set.
    """
    T, nu = us.shape
    ndx = exp.lfx.shape[0]
    I = jnp.eye(ndx, dtype=us.dtype)
    if k_warm is None:
        k_warm = jnp.zeros_like(us)

    def body(carry, inp):
        Vx, Vxx, dV, ok = carry
        fx, fu, lx, lu, lxx, luu, lux, u, kw = inp
        Qx = lx + fx.T @ Vx
        Qu = lu + fu.T @ Vx
        Qxx = lxx + fx.T @ Vxx @ fx
        Quu = luu + fu.T @ Vxx @ fu
        Qux = lux + fu.T @ Vxx @ fx
        Vreg = Vxx + mu * I
        Quu_r = _sym(luu + fu.T @ Vreg @ fu)
        Qux_r = lux + fu.T @ Vreg @ fx
        k, free, L = box_qp(Quu_r, Qu, u_lower - u, u_upper - u, kw, qp_iterations)
        K = jnp.where(free[:, None], -_cho_solve(L, jnp.where(free[:, None], Qux_r, 0.0)), 0.0)
        ok = ok & jnp.all(jnp.isfinite(L)) & jnp.all(jnp.isfinite(k))
        dV = dV + jnp.stack([k @ Qu, 0.5 * k @ Quu @ k])
        Vx = Qx + K.T @ Quu @ k + K.T @ Qu + Qux.T @ k
        Vxx = _sym(Qxx + K.T @ Quu @ K + K.T @ Qux + Qux.T @ K)
        return (Vx, Vxx, dV, ok), (k, K)

    init = (exp.lfx, _sym(exp.lfxx), jnp.zeros(2, us.dtype), jnp.asarray(True))
    xs = (exp.fx, exp.fu, exp.lx, exp.lu, exp.lxx, exp.luu, exp.lux, us, k_warm)
    (_, _, dV, ok), (k, K) = jax.lax.scan(body, init, xs, reverse=True)
    return k, K, dV, ok


def forward_pass(dynamics: Dynamics, cost: Cost, xs, us, k, K, alpha, u_lower, u_upper):
    """Closed-loop rollout ``u_t = clip(ubar_t + alpha k_t + K_t (x_t (-) xbar_t), lower, upper)``
    from ``xs[0]``. Returns ``(xs_new, us_new, J_new)``; vmap over ``alpha`` for a parallel line
    search."""

    def body(x, inp):
        xb, ub, kt, Kt, t = inp
        u = jnp.clip(ub + alpha * kt + Kt @ dynamics.minus(x, xb), u_lower, u_upper)
        return dynamics(x, u), (x, u, cost.running(x, u, t))

    ts = jnp.arange(us.shape[0])
    xT, (xn, un, ls) = jax.lax.scan(body, xs[0], (xs[:-1], us, k, K, ts))
    return jnp.concatenate([xn, xT[None]]), un, jnp.sum(ls) + cost.terminal(xT)


# -- the optimiser ----------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class ILQROptions:
    """Settings of :func:`ilqr` (static: hashable; a change recompiles).

    Stopping: the expected decrease ``-dV(1)`` or an accepted actual decrease is below
    ``tolerance * (1 + |J|)``; or ``mu`` exceeds ``mu_max`` (failure); or ``max_iterations``.
    Regularisation (Tassa 2012 Sec. II-F): on failure ``delta = max(delta0, delta * delta0)``,
    ``mu = max(mu_min, mu * delta)``; on success ``delta = min(1/delta0, delta/delta0)``,
    ``mu = mu * delta`` (0 below ``mu_min``). Line search: step sizes ``alphas`` (all evaluated
    at once), accepted when actual/expected decrease > ``armijo``.
    """

    max_iterations: int = 100
    tolerance: float = 1e-7
    mu_init: float = 1e-6
    mu_min: float = 1e-8
    mu_max: float = 1e10
    delta0: float = 2.0
    alphas: tuple = tuple(float(a) for a in 10.0 ** np.linspace(0.0, -3.0, 11))
    armijo: float = 0.1
    qp_iterations: int = 10
    verbose: bool = False


class ILQRResult(NamedTuple):
    """Output of :func:`ilqr`: optimal states ``x (T+1, nx)`` and controls ``u (T, nu)``; the
    feedforward ``k (T, nu)`` and feedback gains ``K (T, nu, ndx)`` of a backward pass at the
    final trajectory (policy ``u_t + K_t (x (-) x_t)``, clipped to the limits); the final
    ``cost``; ``cost_history (max_iterations + 1,)`` (initial cost first, NaN after the last
    iteration); ``iterations``; ``converged`` (tolerance met, not by exhausting ``mu`` or the
    iteration budget); final regularisation ``mu``."""

    x: jnp.ndarray
    u: jnp.ndarray
    k: jnp.ndarray
    K: jnp.ndarray
    cost: jnp.ndarray
    cost_history: jnp.ndarray
    iterations: jnp.ndarray
    converged: jnp.ndarray
    mu: jnp.ndarray


class _State(NamedTuple):
    xs: jnp.ndarray
    us: jnp.ndarray
    J: jnp.ndarray
    exp: Expansion
    k: jnp.ndarray
    K: jnp.ndarray
    dV: jnp.ndarray
    ok: jnp.ndarray
    mu: jnp.ndarray
    delta: jnp.ndarray
    it: jnp.ndarray
    history: jnp.ndarray
    done: jnp.ndarray
    converged: jnp.ndarray


@eqx.filter_jit
def _solve(dynamics: Dynamics, cost: Cost, x0, us0, lo, hi, opt: ILQROptions) -> ILQRResult:
    """The iterations as one ``lax.while_loop`` whose body is: line search along the current
    gains, then (only after an accepted step) re-linearisation, then the regularised backward
    pass at the current trajectory. The initial rollout is the line search of iteration 0 with
    zero gains, so each building block is compiled once and the gains returned always belong to
    the returned trajectory."""
    dtype = x0.dtype
    c = lambda v: jnp.asarray(v, dtype)
    alphas = jnp.asarray(opt.alphas, dtype)
    T, nu = us0.shape
    ndx = dynamics.ndx
    us0 = jnp.clip(us0, lo, hi)
    line_search = jax.vmap(forward_pass, in_axes=(None, None, None, None, None, None, 0, None, None))

    def regularised_backward(exp, us, k_warm, mu, delta):
        """Backward pass, raising mu (Tassa 2012 Sec. II-F) until it succeeds or exceeds mu_max."""

        def cond(s):
            return (~s[5]) & (s[0] <= opt.mu_max)

        def body(s):
            mu, delta, _, _, _, _, first = s
            delta_up = jnp.maximum(c(opt.delta0), delta * opt.delta0)
            mu = jnp.where(first, mu, jnp.maximum(c(opt.mu_min), mu * delta_up))
            delta = jnp.where(first, delta, delta_up)
            k, K, dV, ok = backward_pass(exp, us, lo, hi, mu, k_warm, opt.qp_iterations)
            return mu, delta, k, K, dV, ok, jnp.asarray(False)

        init = (
            mu,
            delta,
            jnp.zeros_like(us),
            jnp.zeros((T, nu, ndx), dtype),
            jnp.zeros(2, dtype),
            jnp.asarray(False),
            jnp.asarray(True),
        )
        mu, delta, k, K, dV, ok, _ = jax.lax.while_loop(cond, body, init)
        return mu, delta, k, K, dV, ok

    def iteration(s: _State) -> _State:
        first = s.it < 0
        expected = -(s.dV[0] + s.dV[1])
        scale = 1.0 + jnp.abs(s.J)
        small = (~first) & s.ok & (expected < opt.tolerance * scale)
        xs_a, us_a, J_a = line_search(dynamics, cost, s.xs, s.us, s.k, s.K, alphas, lo, hi)
        exp_a = -(alphas * s.dV[0] + alphas**2 * s.dV[1])
        z = (s.J - J_a) / jnp.where(exp_a > 0, exp_a, jnp.inf)
        good = s.ok & jnp.isfinite(J_a) & (J_a < s.J) & (z > opt.armijo)
        good = jnp.where(first, jnp.arange(alphas.shape[0]) == 0, good)
        accept = jnp.any(good) & ~small
        i = jnp.argmax(good)  # the largest accepted step (alphas decrease)
        J = jnp.where(accept, J_a[i], s.J)
        xs = jnp.where(accept, xs_a[i], s.xs)
        us = jnp.where(accept, us_a[i], s.us)
        # Levenberg-Marquardt schedule (Tassa 2012 Sec. II-F): lower mu after a success
        mu, delta = s.mu, s.delta
        d_dn = jnp.minimum(c(1.0 / opt.delta0), delta / opt.delta0)
        mu_dn = jnp.where(mu * d_dn > opt.mu_min, mu * d_dn, c(0.0))
        d_up = jnp.maximum(c(opt.delta0), delta * opt.delta0)
        mu_up = jnp.maximum(c(opt.mu_min), mu * d_up)
        keep = first | small
        mu = jnp.where(keep, mu, jnp.where(accept, mu_dn, mu_up))
        delta = jnp.where(keep, delta, jnp.where(accept, d_dn, d_up))
        converged = small | (accept & ~first & (s.J - J < opt.tolerance * scale))
        exp = jax.lax.cond(accept, lambda: linearize(dynamics, cost, xs, us), lambda: s.exp)
        k_warm = jnp.where(accept & ~first, s.k, jnp.zeros_like(s.k))
        mu, delta, k, K, dV, ok = regularised_backward(exp, us, k_warm, mu, delta)
        failed = (~ok) | (mu > opt.mu_max)
        it = s.it + jnp.where(small, 0, 1)  # the convergence test alone is not an iteration
        history = s.history.at[it].set(J)
        if opt.verbose:
            jax.debug.print(
                "ilqr {it:4d}  cost {J:.8e}  alpha {a:.3e}  mu {mu:.2e}",
                it=it,
                J=J,
                a=jnp.where(accept & ~first, alphas[i], 0.0),
                mu=mu,
            )
        return _State(xs, us, J, exp, k, K, dV, ok, mu, delta, it, history, converged | failed, converged)

    xs0 = jnp.zeros((T + 1,) + x0.shape, dtype).at[0].set(x0)  # only xs[0] is read with zero gains
    exp0 = jax.tree_util.tree_map(
        lambda a: jnp.zeros(a.shape, dtype), jax.eval_shape(lambda: linearize(dynamics, cost, xs0, us0))
    )
    init = _State(
        xs0,
        us0,
        c(jnp.inf),
        exp0,
        jnp.zeros_like(us0),
        jnp.zeros((T, nu, ndx), dtype),
        jnp.zeros(2, dtype),
        jnp.asarray(True),
        c(opt.mu_init),
        c(1.0),
        jnp.asarray(-1),
        jnp.full(opt.max_iterations + 1, jnp.nan, dtype),
        jnp.asarray(False),
        jnp.asarray(False),
    )
    s = jax.lax.while_loop(lambda s: (~s.done) & (s.it < opt.max_iterations), iteration, init)
    return ILQRResult(s.xs, s.us, s.k, s.K, s.J, s.history, s.it, s.converged, s.mu)


def _concrete(a) -> bool:
    return not isinstance(a, jax.core.Tracer)


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
    guess reuses it. Raises ``ValueError`` for wrong shapes, non-finite inputs or empty boxes.
    """
    if not isinstance(dynamics, Dynamics):
        raise ValueError(f"ilqr: dynamics must be a jaxdyn.trajopt.Dynamics, got {type(dynamics).__name__}")
    if not isinstance(cost, Cost):
        raise ValueError(f"ilqr: cost must be a jaxdyn.trajopt.Cost, got {type(cost).__name__}")
    if not isinstance(options, ILQROptions):
        raise ValueError(f"ilqr: options must be an ILQROptions, got {type(options).__name__}")
    dtype = dynamics.model.dtype if isinstance(dynamics, ModelDynamics) else None
    x0 = jnp.asarray(x0, dtype)
    if not jnp.issubdtype(x0.dtype, jnp.floating):
        x0 = x0.astype(jnp.result_type(float))
    dtype = x0.dtype
    u_init = jnp.asarray(u_init, dtype)
    nx, nu = dynamics.nx, dynamics.nu
    if x0.shape != (nx,):
        raise ValueError(f"ilqr: x0 must have shape ({nx},) (the dynamics' state size), got {x0.shape}")
    if u_init.ndim != 2 or u_init.shape[1] != nu or u_init.shape[0] < 1:
        raise ValueError(f"ilqr: u_init must have shape (T, {nu}) with T >= 1, got {u_init.shape}")
    lim = []
    for name, v, default in (("u_lower", u_lower, -jnp.inf), ("u_upper", u_upper, jnp.inf)):
        v = jnp.full(nu, default, dtype) if v is None else jnp.asarray(v, dtype)
        if v.ndim == 0:
            v = jnp.full(nu, v, dtype)
        if v.shape != (nu,):
            raise ValueError(f"ilqr: {name} must be a scalar or have shape ({nu},), got {v.shape}")
        lim.append(v)
    lo, hi = lim
    if _concrete(x0) and not bool(jnp.all(jnp.isfinite(x0))):
        raise ValueError("ilqr: x0 contains NaN or inf")
    if _concrete(u_init) and not bool(jnp.all(jnp.isfinite(u_init))):
        raise ValueError("ilqr: u_init contains NaN or inf")
    if _concrete(lo) and _concrete(hi):
        if bool(jnp.any(jnp.isnan(lo))) or bool(jnp.any(jnp.isnan(hi))):
            raise ValueError("ilqr: u_lower/u_upper contain NaN")
        if bool(jnp.any(lo > hi)):
            raise ValueError(f"ilqr: u_lower must be <= u_upper, got {np.asarray(lo)} > {np.asarray(hi)}")
    if options.max_iterations < 1 or not options.alphas or options.qp_iterations < 1:
        raise ValueError("ilqr: options need max_iterations >= 1, qp_iterations >= 1 and at least one alpha")
    return _solve(dynamics, cost, x0, u_init, lo, hi, options)
