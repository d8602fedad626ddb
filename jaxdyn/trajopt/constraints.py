"""Path constraints for :mod:`jaxdyn.trajopt`: the interface, joint position limits, a frame
position constraint and user functions.

A :class:`Constraint` has ``m`` named rows, each an inequality ``c(x, u, t) <= 0`` or, when
``equality`` is set, an equality ``c = 0``, imposed at the running knots ``t < T``
(:meth:`Constraint.running`), at the terminal state (:meth:`Constraint.terminal`) or both.
:func:`~jaxdyn.trajopt.augmented_lagrangian` imposes them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import equinox as eqx
import jax.numpy as jnp
import numpy as np

from ..algorithms.kinematics import frame_placement
from ..model import Model

KNOTS = ("all", "running", "terminal")


class Constraint(eqx.Module):
    """``m`` rows ``c(x, u, t)``, inequalities ``c <= 0`` (or equalities ``c = 0`` when
    ``equality``), named by ``rows`` (static, for reports), imposed at the ``knots``: ``"all"``
    (running and terminal), ``"running"`` (``t < T``) or ``"terminal"``. Subclasses define
    :meth:`value`; at the terminal knot ``u`` is ``None``."""

    rows: tuple[str, ...] = eqx.field(static=True)
    equality: bool = eqx.field(static=True)
    knots: str = eqx.field(static=True)

    def value(self, x, u, t):
        raise NotImplementedError(f"{type(self).__name__}: a Constraint subclass must define value(x, u, t)")

    @property
    def m(self) -> int:
        return len(self.rows)

    def running(self, x, u, t):
        """The rows at a running knot, checked to be ``(m,)``."""
        return self._checked(self.value(x, u, t))

    def terminal(self, x):
        """The rows at the terminal state (``u = None``, ``t = -1``), checked to be ``(m,)``."""
        return self._checked(self.value(x, None, -1))

    def _checked(self, c):
        c = jnp.asarray(c)
        if c.shape != (self.m,):
            raise ValueError(
                f"{type(self).__name__} ({', '.join(self.rows[:3])}{', ...' if self.m > 3 else ''}): "
                f"value must have shape ({self.m},), one entry per named row, got {c.shape}"
            )
        return c


def _check_knots(name, knots):
    if knots not in KNOTS:
        raise ValueError(f"{name}: knots must be one of {KNOTS}, got {knots!r}")
    return knots


class JointPositionLimits(Constraint):
    """``q_lower <= q <= q_upper`` for the configuration entries with a finite limit (the
    model's ``q_lower``/``q_upper`` unless given), at every knot: rows ``q_i - upper_i <= 0``
    named ``"<joint> upper"`` and ``lower_i - q_i <= 0`` named ``"<joint> lower"``."""

    index: tuple[int, ...] = eqx.field(static=True)
    upper_rows: int = eqx.field(static=True)
    bound: jnp.ndarray

    def __init__(self, model: Model, lower=None, upper=None, joints: Sequence[str] | None = None, knots: str = "all"):
        lo = np.asarray(model.q_lower if lower is None else lower, float)
        hi = np.asarray(model.q_upper if upper is None else upper, float)
        for nm, v in (("lower", lo), ("upper", hi)):
            if v.shape != (model.nq,):
                raise ValueError(f"JointPositionLimits: {nm} must have shape ({model.nq},), got {v.shape}")
        owner = [""] * model.nq
        for j in model.joint_names:
            s = model.joint_q_slice(j)
            for k in range(s.start, s.stop):
                owner[k] = j if s.stop - s.start == 1 else f"{j}[{k - s.start}]"
        if joints is not None:
            unknown = [j for j in joints if j not in model.joint_names]
            if unknown:
                raise ValueError(
                    f"JointPositionLimits: {unknown} are not joints of model '{model.name}' "
                    f"(joints: {', '.join(model.joint_names)})"
                )
        keep = [k for k in range(model.nq) if joints is None or owner[k].split("[")[0] in joints]
        up = [k for k in keep if np.isfinite(hi[k])]
        dn = [k for k in keep if np.isfinite(lo[k])]
        if not up and not dn:
            raise ValueError("JointPositionLimits: no joint with a finite position limit")
        self.rows = tuple(f"{owner[k]} upper" for k in up) + tuple(f"{owner[k]} lower" for k in dn)
        self.equality, self.knots = False, _check_knots("JointPositionLimits", knots)
        self.index, self.upper_rows = tuple(up + dn), len(up)
        self.bound = jnp.asarray(np.concatenate([hi[up], lo[dn]]), model.dtype)

    def value(self, x, u, t):
        qi = x[np.asarray(self.index, dtype=int)]
        sign = jnp.asarray(np.r_[np.ones(self.upper_rows), -np.ones(len(self.index) - self.upper_rows)], x.dtype)
        return sign * (qi - self.bound)


class FramePositionConstraint(Constraint):
    """The world position of a frame equal to ``target (3,)``: rows ``p(q) - target = 0``
    named ``"<frame> x/y/z"``, by default at the terminal state only."""

    model: Model
    frame: str = eqx.field(static=True)
    target: jnp.ndarray

    def __init__(self, model: Model, frame: str, target, knots: str = "terminal"):
        if frame not in model.frame_names:
            raise ValueError(
                f"FramePositionConstraint: frame '{frame}' is not a frame of model '{model.name}' "
                f"(frames: {', '.join(model.frame_names)})"
            )
        target = jnp.asarray(target, model.dtype)
        if target.shape != (3,):
            raise ValueError(f"FramePositionConstraint: target must have shape (3,), got {target.shape}")
        self.model, self.frame, self.target = model, frame, target
        self.rows = tuple(f"{frame} {a}" for a in "xyz")
        self.equality, self.knots = True, _check_knots("FramePositionConstraint", knots)

    def value(self, x, u, t):
        return frame_placement(self.model, x[: self.model.nq], self.frame).p - self.target


class FunctionConstraint(Constraint):
    """User rows ``fn(x, u, t)`` (``u = None``, ``t = -1`` at the terminal knot), named by
    ``rows``; ``fn`` is static (a new function recompiles)."""

    fn: Callable = eqx.field(static=True)

    def __init__(self, fn: Callable, rows: Sequence[str], equality: bool = False, knots: str = "all"):
        if not callable(fn):
            raise ValueError("FunctionConstraint: fn must be callable fn(x, u, t) -> (m,)")
        rows = (rows,) if isinstance(rows, str) else tuple(rows)
        if not rows or not all(isinstance(r, str) for r in rows):
            raise ValueError(f"FunctionConstraint: rows must be one name per row (strings), got {rows!r}")
        self.fn, self.rows, self.equality = fn, rows, bool(equality)
        self.knots = _check_knots("FunctionConstraint", knots)

    def value(self, x, u, t):
        return self.fn(x, u, t)
