"""Discrete dynamics for :mod:`jaxdyn.trajopt`: the interface, linear and function dynamics, and a
robot model stepped by :func:`jaxdyn.sim.step`, with the step's Jacobians in closed form."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .. import configuration, sim
from ..algorithms.derivatives import aba_derivatives
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

    @property
    def euclidean(self) -> bool:
        """Whether ``plus``/``minus`` are ``x + dx`` / ``x1 - x0`` (costs then expand in closed
        form)."""
        return type(self).plus is Dynamics.plus and type(self).minus is Dynamics.minus

    def jacobians(self, x, u):
        """``(f_x (ndx, ndx), f_u (ndx, nu))``: the derivatives of
        ``f(x (+) dx, u + du) (-) f(x, u)`` at ``dx = du = 0`` (tangent space). This default
        differentiates ``__call__`` by ``jax.jacfwd``; subclasses may give them in closed form."""
        x1 = jax.lax.stop_gradient(self(x, u))
        g = lambda dx, du: self.minus(self(self.plus(x, dx), u + du), x1)
        zx = jnp.zeros(self.ndx, x.dtype)
        zu = jnp.zeros(self.nu, x.dtype)
        return jax.jacfwd(g, argnums=(0, 1))(zx, zu)


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

    def jacobians(self, x, u):
        return self.A.astype(x.dtype), self.B.astype(x.dtype)

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
    zero torque: an acrobot, or the unactuated base of a floating-base robot). ``contact``: a
    :class:`jaxdyn.contact.Contact` of the step (``None``: none); the optimiser then
    differentiates through the compliant contact forces. Build it with :func:`model_dynamics`."""

    model: Model
    dt: float = eqx.field(static=True)
    integrator: str = eqx.field(static=True)
    options: sim.SimOptions = eqx.field(static=True)
    substeps: int = eqx.field(static=True)
    actuated: tuple = eqx.field(static=True)
    contact: Any = None

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
            q, qd = sim.step(self.model, q, qd, tau, h, self.integrator, None, self.options, self.contact)
        return jnp.concatenate([q, qd])

    def plus(self, x, dx):
        q, qd = self.split(x)
        nv = self.model.nv
        return jnp.concatenate([configuration.integrate(self.model, q, dx[:nv]), qd + dx[nv:]])

    def minus(self, x1, x0):
        q1, qd1 = self.split(x1)
        q0, qd0 = self.split(x0)
        return jnp.concatenate([configuration.difference(self.model, q0, q1), qd1 - qd0])

    @property
    def euclidean(self) -> bool:
        return self.model.nq == self.model.nv

    @property
    def closed_form(self) -> bool:
        """Whether :meth:`jacobians` is in closed form: the integrators ``"euler"``,
        ``"semi_implicit_euler"`` and ``"implicit_euler"`` (the last on a fixed base, its
        free-base step moving the base on ``R^3 x SO(3)``, and without the joints' implicit
        Coulomb friction, ``SimOptions.implicit_friction``), without contact. The others
        (``"rk4"``, ``"variational"``, any step with a ``contact``) are differentiated by
        ``jax.jacfwd`` through :func:`jaxdyn.sim.step`, the contact forces included."""
        if self.contact is not None:
            return False
        if self.integrator == "implicit_euler":
            # the joints' Coulomb friction, when the step solves it implicitly (the decision
            # jaxdyn.sim makes, at trace time), is not in the closed form
            return not self.model.floating_base and sim.passive.implicit_friction(self.model, self.options) is None
        return self.integrator in ("euler", "semi_implicit_euler")

    def jacobians(self, x, u):
        """``(f_x, f_u)`` of the step in the tangent space, in closed form for the first-order
        integrators (:attr:`closed_form`; otherwise ``jax.jacfwd`` of the step).

        Per substep of length ``h``, with ``a = qdd(q, v, tau)`` the forward dynamics of
        :func:`jaxdyn.sim.forward_dynamics` and ``tau = tau_c(u) + tau_p(q, v)`` the clipped
        command plus the passive torques::

            v' = v + h a                                   (all three integrators)
            q' = q (+) h v'   (semi-implicit and implicit Euler),   q' = q (+) h v   (Euler)

        ``implicit_euler`` is the same recursion on the model with ``armature + h damping``
        (:func:`jaxdyn.sim.implicit_damping_model`). The derivatives of ``a`` are
        :func:`jaxdyn.aba_derivatives` (Carpentier & Mansard, RSS 2018, eq. (8)) plus the
        torque's own, through ``M^-1``::

            da/ddq = A_q + M^-1 dtau_p/ddq     da/dv = A_v + M^-1 dtau_p/dv     da/du = M^-1 dtau_c/du

        (``A_q``, ``A_v`` at fixed ``tau``; the force laws of ``tau_p``, ``tau_c`` are
        elementwise and differentiated by forward mode, with no ABA inside). The chain rule
        through the integrator, with ``w = h v'`` (or ``h v``) and the Jacobians of the
        exponential map ``D_q = d[(q (+) dq) (+) w (-) q (+) w]/ddq``,
        ``D_w = d[q (+) (w + dw) (-) q (+) w]/ddw`` (identities for 1-dof joints; by forward
        mode through :func:`jaxdyn.integrate` otherwise)::

            dv'/d(dq, dv, du) = (h da/ddq,  I + h da/dv,  h da/du)
            dq'/d(dq, dv, du) = (D_q + h D_w dv'/ddq,  h D_w dv'/dv,  h D_w dv'/du)   (Euler: (D_q, h D_w, 0))

        Substeps multiply: ``f_x = F_s ... F_1``, ``f_u = sum_i F_s ... F_{i+1} G_i``.
        """
        if not self.closed_form:
            return super().jacobians(x, u)
        model, nv, nq = self.model, self.model.nv, self.model.nq
        h = self.dt / self.substeps
        m = sim.implicit_damping_model(model, h, self.options) if self.integrator == "implicit_euler" else model
        m_dyn = m if self.options.gravity else m.replace(gravity=jnp.zeros_like(m.gravity))
        euclidean = nq == nv
        dtype = x.dtype
        eye = jnp.eye(nv, dtype=dtype)
        zv = jnp.zeros(nv, dtype)
        u_cols = np.asarray(self.actuated, dtype=int)
        tau_u = self.torque(u)
        # the clipped command's derivative (elementwise), as columns of the actuated dofs
        dtau_c = jax.jacfwd(lambda t: sim.applied_torques(m, t, self.options))(tau_u)[:, u_cols]

        q, qd = self.split(x)
        Fx = jnp.eye(2 * nv, dtype=dtype)
        Fu = jnp.zeros((2 * nv, self.nu), dtype)
        for _ in range(self.substeps):
            passive = lambda dq, dv, q=q, qd=qd: sim.passive_torques(
                m, configuration.integrate(model, q, dq) if not euclidean else q + dq, qd + dv, self.options
            )
            tau_p, (Tq, Tv) = passive(zv, zv), jax.jacfwd(passive, argnums=(0, 1))(zv, zv)
            tau = tau_p + sim.applied_torques(m, tau_u, self.options)
            d = aba_derivatives(m_dyn, q, qd, tau)
            a_q = d.dqdd_dq + d.dqdd_dtau @ Tq
            a_v = d.dqdd_dqd + d.dqdd_dtau @ Tv
            a_u = d.dqdd_dtau @ dtau_c
            qd1 = qd + h * d.qdd
            vq, vv, vu = h * a_q, eye + h * a_v, h * a_u
            w = h * (qd if self.integrator == "euler" else qd1)
            if euclidean:
                Dq, Dw = eye, eye
            else:
                qw = configuration.integrate(model, q, w)
                Dq = jax.jacfwd(
                    lambda dq: configuration.difference(
                        model, qw, configuration.integrate(model, configuration.integrate(model, q, dq), w)
                    )
                )(zv)
                Dw = jax.jacfwd(
                    lambda dw: configuration.difference(model, qw, configuration.integrate(model, q, w + dw))
                )(zv)
            if self.integrator == "euler":
                pq, pv, pu = Dq, h * Dw, jnp.zeros_like(vu)
            else:
                pq, pv, pu = Dq + h * Dw @ vq, h * Dw @ vv, h * Dw @ vu
            F = jnp.concatenate([jnp.concatenate([pq, pv], 1), jnp.concatenate([vq, vv], 1)], 0)
            G = jnp.concatenate([pu, vu], 0)
            Fx, Fu = F @ Fx, F @ Fu + G
            q, qd = configuration.integrate(model, q, w), qd1
        return Fx, Fu


def model_dynamics(
    model: Model,
    dt: float,
    integrator: str = sim.DEFAULT_INTEGRATOR,
    options: sim.SimOptions = sim.SimOptions(),
    substeps: int = 1,
    actuated: Sequence[str | int] | None = None,
    contact=None,
) -> ModelDynamics:
    """Discrete dynamics of ``model`` for :func:`ilqr` (see :class:`ModelDynamics`).

    Args:
      dt: control period [s] (torque held constant over it).
      integrator, options: as for :func:`jaxdyn.sim.step`.
      substeps: integrator steps per control period.
      actuated: joint names and/or velocity indices that receive a control; ``None`` = every dof
        of a fixed-base model, every dof but the 6 of the free-flyer for a floating base.
      contact: a :class:`jaxdyn.contact.Contact` acting in each step (compliant ground and
        shape-pair contact; not a contact with state, ``friction="spring"``, whose bristles the
        state ``(q, qd)`` does not carry).
    """
    sim.checks.check_integrator(integrator)
    if contact is not None:
        from ..contact import Contact

        if not isinstance(contact, Contact):
            raise ValueError(f"model_dynamics: contact must be a jaxdyn.contact.Contact, got {type(contact).__name__}")
        if contact.stateful:
            raise ValueError(
                f"model_dynamics: a contact with state (friction='{contact.friction}') is not supported: the "
                "trajectory's state (q, qd) does not carry it; use friction='regularised'"
            )
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
    return ModelDynamics(model, float(dt), integrator, options, int(substeps), tuple(idx), contact)
