"""Costs for :mod:`jaxdyn.trajopt`: the interface, sums, function, quadratic and frame-position
costs, and the residual costs (frame placement and velocity, centre of mass, contact force) with
their Gauss-Newton expansion."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .. import spatial
from ..algorithms.kinematics import (
    center_of_mass,
    dof_motions_world,
    frame_bodies,
    frame_jacobian,
    frame_placement,
    frame_poses,
)
from ..configuration import neutral
from ..model import Model
from .dynamics import Dynamics, ModelDynamics

# -- costs ------------------------------------------------------------------------------------------


class Cost(eqx.Module):
    """A trajectory cost: running ``running(x, u, t)`` (``t`` the integer step) and terminal
    ``terminal(x)``, both scalar. Costs add: ``cost_a + cost_b`` is a :class:`SumCost`."""

    def running(self, x, u, t):
        raise NotImplementedError(f"{type(self).__name__}: a Cost subclass must define running(x, u, t)")

    def terminal(self, x):
        raise NotImplementedError(f"{type(self).__name__}: a Cost subclass must define terminal(x)")

    def expand(self, dynamics: Dynamics, x, u, t):
        """Second-order expansion of the running cost in the tangent space of ``dynamics``:
        ``(l_x (ndx,), l_u (nu,), l_xx (ndx, ndx), l_uu (nu, nu), l_ux (nu, ndx))``, the
        derivatives of ``l(x (+) dx, u + du, t)`` at ``dx = du = 0``. This default
        differentiates :meth:`running` (``jax.grad``, ``jax.hessian``); subclasses may give
        them in closed form."""
        zx = jnp.zeros(dynamics.ndx, x.dtype)
        zu = jnp.zeros(dynamics.nu, x.dtype)
        l = lambda dx, du: self.running(dynamics.plus(x, dx), u + du, t)
        lx, lu = jax.grad(l, argnums=(0, 1))(zx, zu)
        (lxx, _), (lux, luu) = jax.hessian(l, argnums=(0, 1))(zx, zu)
        return lx, lu, lxx, luu, lux

    def expand_terminal(self, dynamics: Dynamics, x):
        """``(l_fx (ndx,), l_fxx (ndx, ndx))`` of the terminal cost (as :meth:`expand`)."""
        lf = lambda dx: self.terminal(dynamics.plus(x, dx))
        zx = jnp.zeros(dynamics.ndx, x.dtype)
        return jax.grad(lf)(zx), jax.hessian(lf)(zx)

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

    def expand(self, dynamics, x, u, t):
        parts = [c.expand(dynamics, x, u, t) for c in self.terms]
        return tuple(sum(p[i] for p in parts) for i in range(5))

    def expand_terminal(self, dynamics, x):
        parts = [c.expand_terminal(dynamics, x) for c in self.terms]
        return parts[0][0] + sum(p[0] for p in parts[1:]), parts[0][1] + sum(p[1] for p in parts[1:])


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


HESSIANS = ("exact", "gauss_newton")


def _check_frame(cls: str, model: Model, frame: str):
    if frame not in model.frame_names:
        raise ValueError(
            f"{cls}: frame '{frame}' is not a frame of model '{model.name}' (frames: {', '.join(model.frame_names)})"
        )


def _pad(a, n):
    """``a`` followed by zeros up to size ``n``."""
    return jnp.concatenate([a, jnp.zeros(n - a.shape[0], a.dtype)])


def _pick(ref, t, ndim: int = 1):
    """The reference at knot ``t`` of one that is either constant (``ndim`` axes) or per knot
    (a leading axis; ``t`` past its end reads the last row, and ``t = None``, the terminal knot,
    reads the last row)."""
    if ref.ndim == ndim:
        return ref
    return ref[-1] if t is None else ref[jnp.minimum(t, ref.shape[0] - 1)]


def _q_jacobian(fn, dynamics: ModelDynamics, x):
    """``fn(x (+) (dq, 0))`` at ``dq = 0`` and its derivative ``(m, nv)`` along the ``nv``
    configuration directions of the tangent space (a function of the configuration only)."""
    nv, ndx = dynamics.model.nv, dynamics.ndx
    g = lambda dq: fn(dynamics.plus(x, _pad(dq, ndx)))  # noqa: E731
    J, value = jax.jacfwd(lambda dq: (g(dq), g(dq)), has_aux=True)(jnp.zeros(nv, x.dtype))
    return value, J


def _x_jacobian(fn, dynamics: Dynamics, x):
    """``fn(x (+) dx)`` at ``dx = 0`` and its derivative ``(m, ndx)`` along the tangent space of
    ``dynamics`` (one forward-mode pass, ``ndx`` directions)."""
    g = lambda dx: fn(dynamics.plus(x, dx))  # noqa: E731
    J, value = jax.jacfwd(lambda dx: (g(dx), g(dx)), has_aux=True)(jnp.zeros(dynamics.ndx, x.dtype))
    return value, J


class QuadraticCost(Cost):
    """``l = 1/2 dx' Q dx + 1/2 du' R du``, ``l_f = 1/2 dx_T' Qf dx_T`` with
    ``dx = x (-) x_ref`` (``space.minus`` when a :class:`Dynamics` is given, else ``x - x_ref``)
    and ``du = u - u_ref``. References may be constant or per step (``(T+1, nx)``/``(T, nu)``;
    the terminal cost uses the last row). ``hessian``: on a manifold (a free-flyer, a ball
    joint), ``"gauss_newton"`` (the default) or ``"exact"`` (:meth:`expand`); where the states
    are Euclidean the two are the same. Build it with :func:`quadratic_cost`."""

    Q: jnp.ndarray
    R: jnp.ndarray
    Qf: jnp.ndarray
    x_ref: jnp.ndarray
    u_ref: jnp.ndarray
    space: Dynamics | None = None
    hessian: str = eqx.field(static=True, default="gauss_newton")

    def _dx(self, x, ref):
        return x - ref if self.space is None else self.space.minus(x, ref)

    def running(self, x, u, t):
        dx = self._dx(x, _pick(self.x_ref, t))
        du = u - _pick(self.u_ref, t)
        return 0.5 * dx @ self.Q @ dx + 0.5 * du @ self.R @ du

    def terminal(self, x):
        dx = self._dx(x, _pick(self.x_ref, None))
        return 0.5 * dx @ self.Qf @ dx

    def _closed_form(self, dynamics: Dynamics) -> bool:
        return dynamics.euclidean and (self.space is None or self.space.euclidean)

    def _state_expansion(self, dynamics: Dynamics, x, Q, ref):
        """``(l_x, l_xx)`` of ``1/2 r' Q r`` in the tangent space of ``dynamics``, ``r(dx) =
        (x (+) dx) (-) x_ref``: with ``Q_s = (Q + Q')/2``, ``J = dr/ddx`` at ``dx = 0`` (one
        forward-mode pass, ``ndx`` directions)::

            l_x = J' Q_s r,    l_xx = J' Q_s J

        ``l_x`` is exact; ``l_xx`` leaves out ``sum_i (Q_s r)_i d2r_i/ddx2`` (zero at the
        reference and where the states are Euclidean), positive semi-definite for a positive
        semi-definite ``Q``: Crocoddyl's ``ResidualModelState`` with a weighted quadratic
        activation. ``hessian="exact"``: ``jax.grad`` / ``jax.hessian`` (:meth:`Cost.expand`)."""
        Qs = 0.5 * (Q + Q.T)
        if self._closed_form(dynamics):
            return Qs @ (x - ref), Qs
        r, J = _x_jacobian(lambda xx: self._dx(xx, ref), dynamics, x)
        QJ = Qs @ J
        return QJ.T @ r, J.T @ QJ

    def expand(self, dynamics, x, u, t):
        """Where the states are Euclidean (``x (+) dx = x + dx`` for the dynamics and the
        cost), in closed form: ``l_x = Q_s dx``, ``l_xx = Q_s``, ``l_u = R_s du``, ``l_uu =
        R_s``, ``l_ux = 0`` with ``Q_s = (Q + Q')/2``, ``R_s = (R + R')/2``. On a manifold the
        state terms are the Gauss-Newton expansion of :meth:`_state_expansion` (the exact
        Hessian, ``hessian="exact"``, by differentiating twice through ``(+)`` and ``(-)``)."""
        if self.hessian == "exact" and not self._closed_form(dynamics):
            return super().expand(dynamics, x, u, t)
        Rs = 0.5 * (self.R + self.R.T)
        lx, lxx = self._state_expansion(dynamics, x, self.Q, _pick(self.x_ref, t))
        du = u - _pick(self.u_ref, t)
        return lx, Rs @ du, lxx, Rs, jnp.zeros((du.shape[0], lx.shape[0]), x.dtype)

    def expand_terminal(self, dynamics, x):
        if self.hessian == "exact" and not self._closed_form(dynamics):
            return super().expand_terminal(dynamics, x)
        return self._state_expansion(dynamics, x, self.Qf, _pick(self.x_ref, None))


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
    x_ref,
    Q,
    R,
    Qf=None,
    u_ref=None,
    nu: int | None = None,
    space: Dynamics | None = None,
    dtype=None,
    hessian: str = "gauss_newton",
) -> QuadraticCost:
    """A :class:`QuadraticCost`. Weights may be scalars, diagonals or full matrices; ``Qf``
    defaults to ``Q``; ``u_ref`` to zero (then ``nu`` or a matrix ``R`` gives its size). Pass
    ``space=dynamics`` to measure state errors with ``dynamics.minus`` (needed on a manifold:
    the weights then act on the tangent space of size ``dynamics.ndx``). ``hessian``: the state
    terms' expansion on a manifold, ``"gauss_newton"`` or ``"exact"``
    (:meth:`QuadraticCost.expand`)."""
    if hessian not in HESSIANS:
        raise ValueError(f"quadratic_cost: hessian must be one of {', '.join(HESSIANS)}, got {hessian!r}")
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
    return QuadraticCost(Qm, Rm, Qfm, x_ref, u_ref, space, hessian)


class FramePositionCost(Cost):
    """End-effector position cost on a :class:`~jaxdyn.Model` state ``x = (q, qd)``:
    ``l = weight/2 |p(q) - target|^2`` (running, per step) and
    ``l_f = terminal_weight/2 |p(q_T) - target|^2``, ``p`` from :func:`jaxdyn.frame_placement`.
    ``target`` is ``(3,)`` or per step ``(T+1, 3)`` (the terminal cost uses its last row).
    ``hessian``: ``"gauss_newton"`` (the default: ``weight J' J``, positive semi-definite, as
    Crocoddyl's ``ResidualModelFrameTranslation`` with a quadratic activation) or ``"exact"`` (the
    point's second derivatives included, indefinite away from the target). On the Panda reach
    of ``benchmarks/trajopt.py`` (8 targets) ``ilqr`` needed 58 iterations with the first and
    163 with the second, to the same costs."""

    model: Model
    frame: str = eqx.field(static=True)
    target: jnp.ndarray
    weight: jnp.ndarray
    terminal_weight: jnp.ndarray
    hessian: str = eqx.field(static=True)

    def __init__(
        self, model: Model, frame: str, target, weight=0.0, terminal_weight=1.0, hessian: str = "gauss_newton"
    ):
        _check_frame("FramePositionCost", model, frame)
        target = jnp.asarray(target, model.dtype)
        if target.ndim not in (1, 2) or target.shape[-1] != 3:
            raise ValueError(f"FramePositionCost: target must have shape (3,) or (T+1, 3), got {target.shape}")
        if hessian not in HESSIANS:
            raise ValueError(f"FramePositionCost: hessian must be one of {', '.join(HESSIANS)}, got {hessian!r}")
        self.model, self.frame, self.target, self.hessian = model, frame, target, hessian
        self.weight = jnp.asarray(weight, model.dtype)
        self.terminal_weight = jnp.asarray(terminal_weight, model.dtype)

    def position(self, x):
        """World position of the frame for state ``x``."""
        return frame_placement(self.model, x[: self.model.nq], self.frame).p

    def running(self, x, u, t):
        e = self.position(x) - _pick(self.target, t)
        return 0.5 * self.weight * e @ e

    def terminal(self, x):
        e = self.position(x) - _pick(self.target, None)
        return 0.5 * self.terminal_weight * e @ e

    def _q_expansion(self, dynamics: ModelDynamics, x, weight, tgt):
        """Gradient and Hessian of ``weight/2 |p(q (+) dq) - tgt|^2`` in ``dq`` (the cost does
        not depend on ``qd`` or ``u``), placed in the state's ``(dq, dqd)`` blocks.

        With 1-dof joints only (``nq == nv``) in closed form. ``S_c = [w_c; v_c]`` is the
        motion subspace of dof ``c`` in world coordinates about the world origin
        (:func:`jaxdyn.dof_motions_world`), zero unless ``c`` moves the frame; the point
        Jacobian and its derivative (``S_j x S_k`` the derivative of ``S_k`` along ``q_j``
        when ``j`` is ``k`` or one of its ancestors, zero otherwise)::

            J_c = v_c + w_c x p
            d2p/dq_j dq_k = w_k x J_j + [j ancestor-or-self of k] (w_j x v_k + v_j x w_k + (w_j x w_k) x p)
            l_q = weight J' e,    l_qq = weight (J' J + sum_i e_i d2p_i/dq dq),    e = p - tgt

        (the second term left out with ``hessian="gauss_newton"``).

        Otherwise by ``jax.grad`` / ``jax.hessian`` in the ``nv`` configuration directions."""
        model = self.model
        nq, nv = model.nq, model.nv
        q = x[:nq]
        if nq == nv:
            S, poses = dof_motions_world(model, q)
            i = model.frame_index(self.frame)
            p = frame_poses(model, poses, i).p
            lay = model.layout
            db = lay.dof_body
            fb = int(frame_bodies(model)[i])
            moves = np.zeros(nv, bool) if fb >= model.nb else lay.ancestor[db, fb]
            anc = jnp.asarray(lay.ancestor[db][:, db] & moves[:, None] & moves[None, :])
            S = jnp.where(jnp.asarray(moves)[:, None], S.T, 0.0)  # (nv, 6)
            w, v = S[:, :3], S[:, 3:]
            J = v + jnp.cross(w, p)  # (nv, 3): the columns of the point Jacobian
            e = p - tgt
            t1 = jnp.cross(w[None, :, :], J[:, None, :])  # [j, k]: w_k x J_j
            t2 = jnp.cross(w[:, None, :], v[None, :, :]) + jnp.cross(v[:, None, :], w[None, :, :])
            t2 = t2 + jnp.cross(jnp.cross(w[:, None, :], w[None, :, :]), p)
            H = J @ J.T
            if self.hessian == "exact":
                H = H + t1 @ e + jnp.where(anc, t2 @ e, 0.0)
            g, H = weight * (J @ e), weight * H
        elif self.hessian == "gauss_newton":
            e, Jt = _q_jacobian(lambda xx: self.position(xx) - tgt, dynamics, x)  # (3,), (3, nv)
            g, H = weight * (Jt.T @ e), weight * (Jt.T @ Jt)
        else:
            l = lambda dq: 0.5 * weight * jnp.sum((self.position(dynamics.plus(x, _pad(dq, 2 * nv))) - tgt) ** 2)
            z = jnp.zeros(nv, q.dtype)
            g, H = jax.grad(l)(z), jax.hessian(l)(z)
        lx = jnp.zeros(2 * nv, x.dtype).at[:nv].set(g)
        lxx = jnp.zeros((2 * nv, 2 * nv), x.dtype).at[:nv, :nv].set(H)
        return lx, lxx

    def expand(self, dynamics, x, u, t):
        """With :class:`ModelDynamics` the derivatives are taken in the ``nv`` configuration
        directions only (a third of the ``jax.hessian`` over ``(dq, dqd, du)``)."""
        if not isinstance(dynamics, ModelDynamics):
            return super().expand(dynamics, x, u, t)
        lx, lxx = self._q_expansion(dynamics, x, self.weight, _pick(self.target, t))
        nu = dynamics.nu
        return lx, jnp.zeros(nu, x.dtype), lxx, jnp.zeros((nu, nu), x.dtype), jnp.zeros((nu, lx.shape[0]), x.dtype)

    def expand_terminal(self, dynamics, x):
        if not isinstance(dynamics, ModelDynamics):
            return super().expand_terminal(dynamics, x)
        return self._q_expansion(dynamics, x, self.terminal_weight, _pick(self.target, None))


# -- residual costs -----------------------------------------------------------------------------------


def _residual_weight(cls: str, name: str, w, m: int, dtype):
    w = jnp.asarray(w, dtype)
    if w.ndim == 0:
        return jnp.full((m,), w, dtype)
    if w.shape != (m,):
        raise ValueError(f"{cls}: {name} must be a scalar or have shape ({m},), got {w.shape}")
    return w


def _reference(cls: str, name: str, ref, shape: tuple, dtype):
    """A reference of ``shape``, constant or per knot (a leading axis of ``T+1`` rows)."""
    ref = jnp.asarray(ref, dtype)
    if ref.shape != shape and (ref.ndim != len(shape) + 1 or ref.shape[1:] != shape):
        want = ", ".join(str(n) for n in shape)
        raise ValueError(f"{cls}: {name} must have shape ({want}) or (T+1, {want}), got {ref.shape}")
    return ref


class ResidualCost(Cost):
    """``l = 1/2 sum_i w_i r_i(x, u, t)^2`` (running) and ``l_f = 1/2 sum_i w_f,i r_i(x_T)^2``
    (terminal) of a residual ``r`` of ``m`` rows, ``w = weight`` and ``w_f = terminal_weight``
    (scalars or ``(m,)``): Crocoddyl's ``CostModelResidual`` with its weighted quadratic
    activation. Expanded by Gauss-Newton, with ``W = diag(w)`` and ``r_x``, ``r_u`` the
    residual's derivatives in the tangent space of the dynamics (``r(x (+) dx, u + du)`` at
    ``dx = du = 0``)::

        l_x = r_x' W r    l_u = r_u' W r    l_xx = r_x' W r_x    l_uu = r_u' W r_u    l_ux = r_u' W r_x

    positive semi-definite (the exact Hessian adds ``sum_i w_i r_i r_i,xx``, which vanishes as the
    residual does). Subclasses define :meth:`residual` (``u`` and ``t`` are ``None`` at the
    terminal knot) and ``depends``: ``"q"`` (the configuration only: with
    :class:`~jaxdyn.trajopt.ModelDynamics` the residual is differentiated along the ``nv``
    configuration directions alone), ``"x"`` (the state) or ``"xu"``. The derivatives are
    ``jax.jacfwd`` of the residual unless a subclass gives them (:meth:`jacobians`)."""

    weight: jnp.ndarray
    terminal_weight: jnp.ndarray
    depends: ClassVar[str] = "xu"

    def residual(self, x, u, t):
        """The residual ``(m,)`` at state ``x``, control ``u`` and knot ``t`` (``u``, ``t``
        ``None`` at the terminal knot)."""
        raise NotImplementedError(f"{type(self).__name__}: a ResidualCost subclass must define residual(x, u, t)")

    def running(self, x, u, t):
        r = self.residual(x, u, t)
        return 0.5 * jnp.sum(self.weight * r * r)

    def terminal(self, x):
        r = self.residual(x, None, None)
        return 0.5 * jnp.sum(self.terminal_weight * r * r)

    def jacobians(self, dynamics: Dynamics, x, u, t):
        """``(r_x (m, ndx), r_u (m, nu))`` at ``(x, u, t)`` (``u``, ``t`` ``None``: terminal)."""
        return self._linearize(dynamics, x, u, t)[1:]

    def _linearize(self, dynamics: Dynamics, x, u, t):
        """``(r, r_x, r_u)``: the residual and its derivatives (:meth:`jacobians`)."""
        nu, ndx = dynamics.nu, dynamics.ndx
        if self.depends == "q" and isinstance(dynamics, ModelDynamics):
            r, rq = _q_jacobian(lambda xx: self.residual(xx, u, t), dynamics, x)
            rx = jnp.concatenate([rq, jnp.zeros((rq.shape[0], ndx - rq.shape[1]), x.dtype)], 1)
        else:
            r, rx = _x_jacobian(lambda xx: self.residual(xx, u, t), dynamics, x)
        if self.depends != "xu" or u is None:
            return r, rx, jnp.zeros((rx.shape[0], nu), x.dtype)
        return r, rx, jax.jacfwd(lambda du: self.residual(x, u + du, t))(jnp.zeros(nu, x.dtype))

    def _expand(self, w, r, rx, ru):
        Wrx, Wru = w[:, None] * rx, w[:, None] * ru
        return rx.T @ (w * r), ru.T @ (w * r), rx.T @ Wrx, ru.T @ Wru, ru.T @ Wrx

    def expand(self, dynamics, x, u, t):
        """The Gauss-Newton expansion (class docstring)."""
        return self._expand(self.weight, *self._linearize(dynamics, x, u, t))

    def expand_terminal(self, dynamics, x):
        lx, _, lxx, _, _ = self._expand(self.terminal_weight, *self._linearize(dynamics, x, None, None))
        return lx, lxx


class FramePlacementCost(ResidualCost):
    """A frame's placement against a reference: ``r = log6(M_ref^-1 M(q))`` (6 rows ``[omega; v]``,
    the twist in the frame's own axes that moves the reference onto the frame, :func:`jaxdyn.spatial.log6`),
    ``M = (R, p)`` the frame's world placement (:func:`jaxdyn.frame_placement`); Crocoddyl's
    ``ResidualModelFramePlacement`` (whose twist is ordered ``[v; omega]``). ``rotation``
    ``(3, 3)`` and ``translation`` ``(3,)``, or per knot ``(T+1, 3, 3)`` / ``(T+1, 3)``;
    ``weight`` and ``terminal_weight`` scalars or ``(6,)`` (:class:`ResidualCost`)."""

    model: Model
    frame: str = eqx.field(static=True)
    rotation: jnp.ndarray
    translation: jnp.ndarray
    depends: ClassVar[str] = "q"

    def __init__(self, model: Model, frame: str, rotation, translation, weight=0.0, terminal_weight=1.0):
        c = "FramePlacementCost"
        _check_frame(c, model, frame)
        self.model, self.frame = model, frame
        self.rotation = _reference(c, "rotation", rotation, (3, 3), model.dtype)
        self.translation = _reference(c, "translation", translation, (3,), model.dtype)
        self.weight = _residual_weight(c, "weight", weight, 6, model.dtype)
        self.terminal_weight = _residual_weight(c, "terminal_weight", terminal_weight, 6, model.dtype)

    def residual(self, x, u, t):
        M = frame_placement(self.model, x[: self.model.nq], self.frame)
        R0, p0 = _pick(self.rotation, t, 2), _pick(self.translation, t)
        return spatial.log6(spatial.rotation_to_quat(R0.T @ M.R), R0.T @ (M.p - p0))


class FrameVelocityCost(ResidualCost):
    """A frame's spatial velocity against a reference: ``r = J(q) qd - v_ref`` (6 rows
    ``[omega; v]`` in ``reference`` axes: ``"local"``, ``"local_world_aligned"`` or
    ``"world"``, :func:`jaxdyn.frame_jacobian`); Crocoddyl's ``ResidualModelFrameVelocity``
    (ordered ``[v; omega]``). ``velocity`` ``(6,)`` or per knot ``(T+1, 6)``, zero by
    default."""

    model: Model
    frame: str = eqx.field(static=True)
    reference: str = eqx.field(static=True)
    velocity: jnp.ndarray
    depends: ClassVar[str] = "x"

    def __init__(
        self, model: Model, frame: str, velocity=None, reference: str = "local", weight=0.0, terminal_weight=1.0
    ):
        c = "FrameVelocityCost"
        _check_frame(c, model, frame)
        if reference not in ("local", "local_world_aligned", "world"):
            raise ValueError(f"{c}: reference must be 'local', 'local_world_aligned' or 'world', got {reference!r}")
        self.model, self.frame, self.reference = model, frame, reference
        self.velocity = _reference(c, "velocity", jnp.zeros(6) if velocity is None else velocity, (6,), model.dtype)
        self.weight = _residual_weight(c, "weight", weight, 6, model.dtype)
        self.terminal_weight = _residual_weight(c, "terminal_weight", terminal_weight, 6, model.dtype)

    def residual(self, x, u, t):
        nq = self.model.nq
        J = frame_jacobian(self.model, x[:nq], self.frame, self.reference)
        return J @ x[nq:] - _pick(self.velocity, t)


class CenterOfMassCost(ResidualCost):
    """The centre of mass against a target: ``r = c(q) - target`` (:func:`jaxdyn.center_of_mass`,
    world coordinates); Crocoddyl's ``ResidualModelCoMPosition``. ``target`` ``(3,)`` or per
    knot ``(T+1, 3)``."""

    model: Model
    target: jnp.ndarray
    depends: ClassVar[str] = "q"

    def __init__(self, model: Model, target, weight=0.0, terminal_weight=1.0):
        c = "CenterOfMassCost"
        self.model = model
        self.target = _reference(c, "target", target, (3,), model.dtype)
        self.weight = _residual_weight(c, "weight", weight, 3, model.dtype)
        self.terminal_weight = _residual_weight(c, "terminal_weight", terminal_weight, 3, model.dtype)

    def residual(self, x, u, t):
        return center_of_mass(self.model, x[: self.model.nq]) - _pick(self.target, t)


class ContactForceCost(ResidualCost):
    """The contact force on a body against a target: ``r = F(q, qd) - target``, ``F`` the sum of
    the world-frame forces that the compliant contact ``contact`` (:class:`jaxdyn.contact.Contact`,
    normally the dynamics' own) puts on ``body`` at the state (from the ground and from other
    bodies' geoms, :meth:`~jaxdyn.contact.Contact.point_forces`): the force law at ``(q, qd)``,
    a smooth function of the state. ``target`` ``(3,)`` or per knot ``(T+1, 3)``, zero by
    default (a foot that should not push, or a force to track). A contact with bristle state
    (``friction="spring"``) is refused, the trajectory's state not carrying it."""

    model: Model
    contact: Any
    body: str = eqx.field(static=True)
    target: jnp.ndarray
    depends: ClassVar[str] = "x"

    def __init__(self, model: Model, contact, body: str, target=None, weight=0.0, terminal_weight=1.0):
        c = "ContactForceCost"
        if body not in model.body_names:
            raise ValueError(
                f"{c}: body '{body}' is not a body of model '{model.name}' (bodies: {', '.join(model.body_names)})"
            )
        if getattr(contact, "stateful", False):
            raise ValueError(f"{c}: a contact with bristle state (friction='spring') needs its state, which x lacks")
        q0 = neutral(model)
        rows = jax.eval_shape(lambda q, qd: contact.point_forces(model, q, qd), q0, jnp.zeros(model.nv, q0.dtype))
        b = model.body_index(body)
        if b not in rows.body and b not in rows.other:
            raise ValueError(f"{c}: body '{body}' has no contact of this Contact (no collision geom that touches)")
        self.model, self.contact, self.body = model, contact, body
        self.target = _reference(c, "target", jnp.zeros(3) if target is None else target, (3,), model.dtype)
        self.weight = _residual_weight(c, "weight", weight, 3, model.dtype)
        self.terminal_weight = _residual_weight(c, "terminal_weight", terminal_weight, 3, model.dtype)

    def force(self, x):
        """The contact force ``(3,)`` on the body at state ``x``, world coordinates."""
        nq = self.model.nq
        pf = self.contact.point_forces(self.model, x[:nq], x[nq:])
        b = self.model.body_index(self.body)
        sign = (np.asarray(pf.body) == b).astype(float) - (np.asarray(pf.other) == b).astype(float)
        return jnp.asarray(sign, x.dtype) @ pf.force

    def residual(self, x, u, t):
        return self.force(x) - _pick(self.target, t)
