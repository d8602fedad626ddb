"""Costs for :mod:`jaxdyn.trajopt`: the interface, sums, function, quadratic and frame-position
costs."""

from __future__ import annotations

from collections.abc import Callable

import equinox as eqx
import jax.numpy as jnp

from ..algorithms.kinematics import frame_placement
from ..model import Model
from .dynamics import Dynamics

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
