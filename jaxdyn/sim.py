"""Simulation: joint-space forces, integrators on the configuration manifold, batched rollouts.

Forces added to the commanded torque before forward dynamics (:func:`forward_dynamics`, all
read from the URDF into the :class:`~jaxdyn.Model`):

* actuator limits: ``tau`` clipped to ``+-effort_limit`` (joints without a limit are not clipped);
* viscous damping ``-damping * qd`` and smoothed Coulomb friction
  ``-friction * tanh(qd / friction_velocity)`` (``<dynamics damping friction>``);
* soft joint limits: a one-sided spring-damper ``-k (q - q_upper) - b qd`` beyond ``q_upper``
  (and the mirror image below ``q_lower``), for 1-dof joints with finite ``<limit>``;
* rotor inertia (``armature``) is part of the mass matrix inside :func:`~jaxdyn.aba`.

Integrators (:func:`step`), all on the manifold (quaternions stay unit, ``q (+) v`` is
:func:`~jaxdyn.integrate`):

* ``"euler"`` explicit and ``"semi_implicit_euler"`` (velocity first, then position): order 1;
* ``"rk4"``: the classical tableau in Munthe-Kaas form (RKMK, Hairer-Lubich-Wanner, *Geometric
  Numerical Integration*, IV.8.2): stages live in the Lie algebra, ``q_i = q (+) theta_i`` and
  ``theta' = dexp^-1(v)`` truncated after the second commutator, so the order is 4 on the
  free-flyer and spherical joints too;
* ``"variational"``: the midpoint variational integrator (Marsden & West, *Discrete mechanics and
  variational integrators*, Acta Numerica 2001, eqs. (1.5.6)-(1.5.7) and the forced form (3.2.9)),
  written in position-momentum form with discrete Lagrangian
  ``L_d(q0, q1) = h L(q0 (+) xi h/2, xi)``, ``xi = (q1 (-) q0) / h``. It is symplectic and
  momentum preserving, so for a conservative system the energy error stays bounded over very
  long runs (no drift); order 2. Each step solves the discrete Euler-Lagrange equation for
  ``xi`` by a fixed number of Newton iterations (differentiable, vmap-able). The state is still
  ``(q, qd)``: the velocity is mapped to and from the momentum ``p = (M(q) + armature) qd``.

:func:`rollout` is one ``lax.scan`` over time (``jax.checkpoint`` on the step with
``remat=True``: reverse-mode memory is then one state per step); batch it with ``vmap``.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from . import configuration, spatial
from .algorithms.aba import aba
from .algorithms.energy import kinetic_energy, potential_energy
from .algorithms.innovations import solve_mass_matrix
from .model import Model

INTEGRATORS = ("euler", "semi_implicit_euler", "rk4", "variational")
KERNELS = ("generic", "soa")


@dataclasses.dataclass(frozen=True)
class SimOptions:
    """What :func:`forward_dynamics` adds to the commanded torque (static: hashable, so a change
    recompiles). Set a flag to ``False`` to model an ideal system."""

    clip_effort: bool = True
    damping: bool = True
    friction: bool = True
    friction_velocity: float = 1e-2  # [rad/s or m/s] tanh smoothing scale of Coulomb friction
    joint_limits: bool = True
    limit_stiffness: float = 1e3  # [N m / rad] soft joint-limit spring
    limit_damping: float = 10.0  # [N m s / rad] soft joint-limit damper (only beyond the limit)
    gravity: bool = True
    newton_iterations: int = 6  # "variational" only: quasi-Newton iterations per step
    # "soa": under jax.vmap, forward dynamics runs the struct-of-arrays kernel
    # jaxdyn.kernels.aba_batch (a jax.custom_batching.custom_vmap rule; same numbers, much faster
    # in batch; compile with jaxdyn.kernels.jit on CPU). jvp/jacfwd and grad go through the
    # kernel's own derivatives (tested against "generic"). Unbatched calls and batched models
    # use the generic ABA.
    kernel: str = "generic"

    def __post_init__(self):
        if self.kernel not in KERNELS:
            raise ValueError(f"SimOptions: unknown kernel '{self.kernel}', choose one of {', '.join(KERNELS)}")


IDEAL = SimOptions(clip_effort=False, damping=False, friction=False, joint_limits=False)


class Trajectory(NamedTuple):
    """A rollout: ``q (T+1, nq)``, ``qd (T+1, nv)`` (state at every step, first = initial) and
    the torque that was applied ``tau (T, nv)`` (after clipping, before passive forces)."""

    q: jnp.ndarray
    qd: jnp.ndarray
    tau: jnp.ndarray


def _one_dof(model: Model):
    one_q, one_v, _, _, _ = configuration._groups(model.topology)
    return one_q, one_v


def applied_torques(model: Model, tau, options: SimOptions = SimOptions()):
    """The commanded torque after actuator limits (``clip(tau, -effort_limit, effort_limit)``)."""
    tau = jnp.asarray(tau, model.dtype)
    if options.clip_effort:
        tau = jnp.clip(tau, -model.effort_limit, model.effort_limit)
    return tau


def passive_torques(model: Model, q, qd, options: SimOptions = SimOptions()) -> Float[Array, " nv"]:
    """Joint damping, smoothed Coulomb friction and soft joint-limit torques (module docstring)."""
    qd = jnp.asarray(qd, model.dtype)
    out = jnp.zeros(model.nv, model.dtype)
    if options.damping:
        out = out - model.damping * qd
    if options.friction:
        out = out - model.friction * jnp.tanh(qd / options.friction_velocity)
    one_q, one_v = _one_dof(model)
    if options.joint_limits and len(one_q):
        qi, vi = q[one_q], qd[one_v]
        lo, hi = model.q_lower[one_q], model.q_upper[one_q]
        # inf limits give zero penetration (max(q - inf, 0) = 0), so no masks are needed
        over = jnp.maximum(qi - hi, 0.0)
        under = jnp.minimum(qi - lo, 0.0)
        pen = over + under
        active = (over > 0) | (under < 0)
        lim = -options.limit_stiffness * pen - jnp.where(active, options.limit_damping * vi, 0.0)
        out = out.at[one_v].add(lim)
    return out


def _soa_rule(axis_size, in_batched, model, q, qd, tau, *f_ext):
    """Batching rule of :func:`_aba_vmappable`: the SoA kernel when only the state is batched;
    plain ``vmap(aba)`` when the model itself is batched."""
    from . import kernels

    m_b, *x_b = in_batched
    if not any(x_b) and not any(jax.tree_util.tree_leaves(m_b)):
        return aba(model, q, qd, tau, *f_ext), False
    if any(jax.tree_util.tree_leaves(m_b)):
        axes = (jax.tree_util.tree_map(lambda b: 0 if b else None, m_b), *[0 if b else None for b in x_b])
        return jax.vmap(aba, in_axes=axes)(model, q, qd, tau, *f_ext), True
    xs = [x if b else jnp.broadcast_to(x, (axis_size,) + jnp.shape(x)) for x, b in zip((q, qd, tau, *f_ext), x_b)]
    return kernels.aba_batch(model, *xs), True


@jax.custom_batching.custom_vmap
def _aba_vmappable(model, q, qd, tau, *f_ext):
    """:func:`~jaxdyn.aba` for one sample; under ``jax.vmap`` the SoA batch kernel."""
    return aba(model, q, qd, tau, *f_ext)


_aba_vmappable.def_vmap(_soa_rule)


def forward_dynamics(model: Model, q, qd, tau, f_ext=None, options: SimOptions = SimOptions()) -> Float[Array, " nv"]:
    """``qdd`` from ABA with the actuator limits and passive forces of ``options`` applied
    (with ``options.kernel == "soa"``, batched by ``vmap`` into :func:`jaxdyn.kernels.aba_batch`)."""
    m = model if options.gravity else model.replace(gravity=jnp.zeros_like(model.gravity))
    total = applied_torques(model, tau, options) + passive_torques(model, q, qd, options)
    if options.kernel == "soa":
        return _aba_vmappable(m, q, qd, total, *(() if f_ext is None else (f_ext,)))
    return aba(m, q, qd, total, f_ext)


# -- Lie-algebra helpers for RKMK -------------------------------------------------------------


def _ad(model: Model, x, y):
    """``[x, y]`` in the tangent space: spatial motion cross product on the free-flyer block,
    ``x x y`` on spherical blocks, zero on 1-dof joints (abelian)."""
    out = jnp.zeros_like(y)
    _, _, _, _, sph_v = configuration._groups(model.topology)
    if len(sph_v):
        out = out.at[sph_v].set(spatial.cross(x[sph_v], y[sph_v]))
    if model.floating_base:
        out = out.at[0:6].set(spatial.cross_motion(x[0:6], y[0:6]))
    return out


def _dexpinv(model: Model, theta, v):
    """``dexp^-1_{-theta}(v) = v + [theta, v]/2 + [theta, [theta, v]]/12`` (+ O(theta^4)): the
    rate of ``theta`` with ``q (+) theta`` moving at body velocity ``v`` (HLW IV.8 (8.10))."""
    if not (model.floating_base or len(configuration._groups(model.topology)[4])):
        return v
    a = _ad(model, theta, v)
    return v + 0.5 * a + _ad(model, theta, a) / 12.0


# -- integrators --------------------------------------------------------------------------------


def _check_integrator(integrator: str):
    if integrator not in INTEGRATORS:
        raise ValueError(f"step: unknown integrator '{integrator}', choose one of {', '.join(INTEGRATORS)}")


def _rk4(model, q, qd, tau, dt, f_ext, options):
    f = lambda qq, vv: forward_dynamics(model, qq, vv, tau, f_ext, options)
    zero = jnp.zeros_like(qd)
    th, vel = zero, qd
    ks, as_ = [], []
    for c in (0.5, 0.5, 1.0, None):
        qi = q if not ks else configuration.integrate(model, q, th)
        a = f(qi, vel)
        k = _dexpinv(model, th, vel) if ks else vel
        ks.append(k)
        as_.append(a)
        if c is not None:
            th = c * dt * k
            vel = qd + c * dt * a
    w = (1.0, 2.0, 2.0, 1.0)
    theta = dt / 6.0 * sum(wi * ki for wi, ki in zip(w, ks))
    qd1 = qd + dt / 6.0 * sum(wi * ai for wi, ai in zip(w, as_))
    return configuration.integrate(model, q, theta), qd1


def _lagrangian(model: Model, options: SimOptions):
    m = model if options.gravity else model.replace(gravity=jnp.zeros_like(model.gravity))

    def L(q, v):
        return kinetic_energy(m, q, v) + 0.5 * jnp.sum(m.armature * v * v) - potential_energy(m, q)

    return L


def _variational(model, q, qd, tau, dt, f_ext, options):
    """One step of the forced midpoint variational integrator in position-momentum form
    (Marsden & West 2001, (3.2.9)): ``p0 = -D1 L_d(q0, q1) - F-``, ``p1 = D2 L_d(q0, q1) + F+``,
    with ``F- = F+ = h/2 F(q_mid, xi)``; perturbations ``q (+) eps`` (left trivialisation)."""
    L = _lagrangian(model, options)
    ip = lambda a, e: configuration.integrate(model, a, e)

    def Ld(q0, q1):
        xi = configuration.difference(model, q0, q1) / dt
        return dt * L(ip(q0, 0.5 * dt * xi), xi)

    def force(q0, xi):
        qm = ip(q0, 0.5 * dt * xi)
        F = applied_torques(model, tau, options) + passive_torques(model, qm, xi, options)
        if f_ext is not None:
            raise ValueError("step: f_ext is not supported by the 'variational' integrator; use 'rk4'")
        return 0.5 * dt * F

    zero = jnp.zeros_like(qd)
    p0 = jax.grad(lambda v: L(q, v))(qd)  # continuous Legendre transform (M + armature) qd

    def residual(xi):
        q1 = ip(q, dt * xi)
        d1 = jax.grad(lambda e: Ld(ip(q, e), q1))(zero)
        return p0 + d1 + force(q, xi)

    # Quasi-Newton: dR/dxi = -(M + armature)(q_mid) + O(h), so each iteration is one O(N)
    # mass-matrix solve (seed 001) instead of a dense Jacobian of the residual; it contracts by
    # O(h) per iteration and reaches round-off in a few iterations for stable step sizes.
    m = model if options.gravity else model.replace(gravity=jnp.zeros_like(model.gravity))
    xi = qd + dt * forward_dynamics(model, q, qd, tau, None, options)  # explicit predictor
    newton = lambda _, x: x + solve_mass_matrix(m, ip(q, 0.5 * dt * x), residual(x))
    xi = jax.lax.fori_loop(0, options.newton_iterations, newton, xi)
    q1 = ip(q, dt * xi)
    p1 = jax.grad(lambda e: Ld(q, ip(q1, e)))(zero) + force(q, xi)
    qd1 = solve_mass_matrix(m, q1, p1)
    return q1, qd1


def step(model: Model, q, qd, tau, dt, integrator: str = "semi_implicit_euler", f_ext=None,
         options: SimOptions = SimOptions()):
    """Advance ``(q, qd)`` by ``dt`` under torque ``tau`` (held constant over the step).

    Returns ``(q_next, qd_next)``. See the module docstring for the integrators and forces.
    """
    _check_integrator(integrator)
    q = jnp.asarray(q, model.dtype)
    qd = jnp.asarray(qd, model.dtype)
    if integrator == "rk4":
        return _rk4(model, q, qd, tau, dt, f_ext, options)
    if integrator == "variational":
        return _variational(model, q, qd, tau, dt, f_ext, options)
    qdd = forward_dynamics(model, q, qd, tau, f_ext, options)
    qd1 = qd + dt * qdd
    if integrator == "semi_implicit_euler":
        return configuration.integrate(model, q, qd1, dt), qd1
    return configuration.integrate(model, q, qd, dt), qd1


def rollout(model: Model, q0, qd0, controls_or_policy, dt, steps: int | None = None,
            integrator: str = "semi_implicit_euler", options: SimOptions = SimOptions(),
            remat: bool = False, substeps: int = 1) -> Trajectory:
    """Simulate ``steps`` control steps as one ``lax.scan`` over time.

    ``controls_or_policy``: an array ``(T, nv)`` of torques (``steps`` defaults to ``T``), or a
    callable ``policy(q, qd, t) -> tau`` with ``t`` the step index (closed loop; it may close
    over parameters to differentiate). Each control step is ``substeps`` integrator steps of
    ``dt / substeps`` with the torque held. ``remat=True`` rematerialises each step in the
    backward pass (``jax.checkpoint``), so the memory of ``grad`` through a rollout is one state
    per step instead of every intermediate of the dynamics. Batch with ``jax.vmap``.
    """
    _check_integrator(integrator)
    if substeps < 1:
        raise ValueError(f"rollout: substeps must be >= 1, got {substeps}")
    q0 = jnp.asarray(q0, model.dtype)
    qd0 = jnp.asarray(qd0, model.dtype)
    if q0.shape != (model.nq,):
        raise ValueError(f"rollout: q0 must have shape ({model.nq},) for model '{model.name}', got {q0.shape}")
    if qd0.shape != (model.nv,):
        raise ValueError(f"rollout: qd0 must have shape ({model.nv},) for model '{model.name}', got {qd0.shape}")
    if callable(controls_or_policy):
        if steps is None:
            raise ValueError("rollout: steps is required with a policy")
        policy = controls_or_policy
        xs = jnp.arange(steps)
    else:
        u = jnp.asarray(controls_or_policy, model.dtype)
        if u.ndim != 2 or u.shape[1] != model.nv:
            raise ValueError(f"rollout: controls must have shape (T, {model.nv}), got {u.shape}")
        if steps is not None and steps != u.shape[0]:
            raise ValueError(f"rollout: steps={steps} but controls has {u.shape[0]} rows")
        policy = None
        xs = u
    h = dt / substeps

    def body(carry, x):
        q, qd = carry
        tau = policy(q, qd, x) if policy is not None else x
        tau = applied_torques(model, tau, options)
        for _ in range(substeps):
            q, qd = step(model, q, qd, tau, h, integrator, None, options)
        return (q, qd), (q, qd, tau)

    if remat:
        body = jax.checkpoint(body)
    _, (qs, qds, taus) = jax.lax.scan(body, (q0, qd0), xs)
    return Trajectory(jnp.concatenate([q0[None], qs]), jnp.concatenate([qd0[None], qds]), taus)


def energy(model: Model, q, qd) -> Float[Array, ""]:
    """Total mechanical energy including rotor (armature) kinetic energy."""
    return kinetic_energy(model, q, qd) + 0.5 * jnp.sum(model.armature * qd * qd) + potential_energy(model, q)
