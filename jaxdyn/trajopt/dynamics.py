"""Discrete dynamics for :mod:`jaxdyn.trajopt`: the interface, linear and function dynamics, and a
robot model stepped by :func:`jaxdyn.sim.step`."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import equinox as eqx
import jax.numpy as jnp
import numpy as np

from .. import configuration, sim
from ..model import Model

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
