"""Simulation: joint-space forces, integrators on the configuration manifold, batched rollouts.

Forces added to the commanded torque before forward dynamics (:func:`forward_dynamics`, all
read from the URDF into the :class:`~jaxdyn.Model`):

* actuator limits: ``tau`` clipped to ``+-effort_limit`` (joints without a limit are not clipped);
* viscous damping ``-damping * qd`` and smoothed Coulomb friction
  ``-friction * tanh(qd / friction_velocity)`` (``<dynamics damping friction>``);
* joint springs ``-stiffness * (q - spring_reference)`` on 1-dof joints (MJCF ``stiffness``,
  ``springref``; zero for URDF models);
* soft joint limits: a one-sided spring-damper ``-k (q - q_upper) - b qd`` beyond ``q_upper``
  (and the mirror image below ``q_lower``), for 1-dof joints with finite ``<limit>``;
* rotor inertia (``armature``) is part of the mass matrix inside :func:`~jaxdyn.aba`.
* closed loops and couplings (``model.constraints``: equality constraints, fixed tendons;
  :mod:`jaxdyn.constraints`, docs/constraints.md): the tendons' passive forces join the passive
  torques; the equality constraints' forces are solved from the acceleration of all the others,
  MuJoCo's soft constraints or hard ones (``SimOptions.constraints``, ``baumgarte``), and in
  ``"implicit_euler"`` enter the step as body wrenches, as in MuJoCo's Euler step.
* ground contact, optional (``contact=`` of :func:`forward_dynamics`, :func:`step`,
  :func:`rollout`; :mod:`jaxdyn.contact`, docs/contact.md): body wrenches added to ``f_ext``.
  A contact with state (``Contact(friction="spring")``, the bristle elongation) takes it as
  ``contact_state=`` (``None``: relaxed); :func:`step` then returns it updated as a third
  element and :func:`rollout` records it in :attr:`Trajectory.contact_state`
  (``"implicit_euler"`` only).

Integrators (:func:`step`), all on the manifold (quaternions stay unit, ``q (+) v`` is
:func:`~jaxdyn.integrate`):

* ``"implicit_euler"`` (the default): semi-implicit Euler with the joint damping treated
  implicitly, MuJoCo's ``Euler`` integrator (with its default ``eulerdamp``). With
  ``B = diag(damping)`` the velocity update solves

      (M + h B) dv = h (tau - c - B qd),      qd1 = qd + dv,      q1 = q (+) h qd1,

  i.e. backward Euler in the damping force ``-B qd1 = -B qd - B dv`` and forward Euler in
  everything else. Here ``M`` includes the armature and ``tau`` every other force of
  :func:`forward_dynamics` (clipped command, Coulomb friction, soft joint limits, ``f_ext``),
  all evaluated at the start of the step (explicit). Derivation of the O(N) solve: ABA computes
  ``(M_rb + diag(a))^-1 (f - c)`` for any non-negative diagonal ``a`` added to the joint-space
  inertia (the armature enters only the joint blocks ``D = S^T P S + a``, not the bias ``c``).
  Dividing the update by ``h``,

      dv / h = (M_rb + diag(armature + h b))^-1 (tau - c - B qd),

  which is :func:`~jaxdyn.aba` of the model with ``armature + h * damping`` in place of the
  armature, fed the usual total torque (the explicit ``-B qd`` included). The damped free
  motion ``M v' = -B v`` becomes ``v1 = (M + h B)^-1 M v``, a contraction in the kinetic-energy
  norm for every ``h`` (no stability limit from the damping); the order is 1; with zero damping (or ``SimOptions(damping=False)``) it is exactly
  ``"semi_implicit_euler"`` (same numbers, bit for bit, on fixed-base models).
  Only the joint damping is implicit, as in MuJoCo: ``B`` is a constant of the model, so the
  solve is ABA with a modified (unbatched) armature and keeps its struct-of-arrays batch
  kernel under ``vmap`` (where :mod:`jaxdyn.planner` picks it). The soft joint-limit
  damper (state dependent: it would make the armature per sample) stays explicit; MuJoCo has no
  counterpart of it (its limits are constraints). The joints' Coulomb friction (MJCF
  ``frictionloss``, URDF ``<dynamics friction>``), where a model has any, is solved implicitly
  in velocity (:func:`_implicit_joint_friction`; with contact, inside the contact's Newton
  solve), with the regularisation ``friction_velocity`` 1e-4 rad/s by default: a joint loaded
  below its friction stays put (creeping at ``eps atanh(load / friction)``), as MuJoCo's friction
  loss constraint holds it. Its ``1 + contact_iterations`` Newton steps are Cholesky solves with
  the mass matrix (CRBA), which with ABA keeps its batch kernel under ``vmap``. Free-floating base: like MuJoCo, this integrator moves the base on
  ``R^3 x SO(3)``, not SE(3): with the base twist ``[omega; v_b]`` in the body frame and
  ``R`` the base orientation, the world-frame velocity of the base origin is ``v_w = R v_b``
  and its rate ``dv_w/dt = R (dv_b/dt + omega x v_b)``; the step updates
  ``v_w1 = v_w + h R (qdd_lin + omega x v_b)``, ``omega1 = omega + h qdd_ang``,
  ``p1 = p + h v_w1``, ``quat1 = quat * exp(h omega1)`` and returns ``v_b1 = R1^T v_w1``. This
  is MuJoCo's free-joint step (its ``qvel`` is ``[v_w; omega_body]``) in jaxdyn's
  coordinates, so rollouts agree with MuJoCo's step for step to round-off
  (tests/test_implicit_euler.py). The implicit damping acts on jaxdyn's base coordinates
  ``[omega; v_b]``; it equals MuJoCo's when the free joint carries no linear damping (the
  URDF default). Use it for anything with realistic joint damping: the explicit schemes below
  are unstable once ``h b / I`` exceeds about 2 (2.8 for RK4) on the stiffest joint mode.
* ``"euler"`` explicit and ``"semi_implicit_euler"`` (velocity first, then position): order 1;
  the free base is moved by the SE(3) exponential of the new twist;
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

Stability with joint damping ``b`` on a joint mode of inertia ``I`` (measured on one damped
joint, tests/test_implicit_euler.py): the largest stable ``h b / I`` is 2 for ``"euler"`` and
``"semi_implicit_euler"``, 2.785 for ``"rk4"``, about 2.4 for ``"variational"`` (its
quasi-Newton iteration stops contracting); ``"implicit_euler"`` has no limit. On a robot the
relevant ``b / I`` is the largest eigenvalue of ``M^-1 B``. docs/simulation.md has more.

:func:`rollout` is one ``lax.scan`` over time (``jax.checkpoint`` on the step with
``remat=True``: reverse-mode memory is then one state per step); batch it with ``vmap``. The
scan carries the index of the first non-finite state (:attr:`Trajectory.nonfinite_step`, jnp
operations only, no host callback); :func:`first_nonfinite` reports the earliest failure of a
batch on the host after the run.

Implausible contact is recorded too: with a ``contact``, :attr:`Trajectory.penetration_step`
is the first state whose deepest contact (a shape in the ground or two shapes in each other,
:func:`penetration`) exceeds :func:`penetration_bound` (:func:`first_penetration` reads it), and a contact given a model with nothing to collide warns
once.

Checked inputs: :func:`step` and :func:`rollout` refuse, by name, a ``dt`` that is not positive
and finite when its value is known in Python (a traced ``dt``, a ``jit`` argument or a ``vmap``
batch, cannot be read and is not checked), a ``steps`` that is not a non-negative integer, and
states, torques, controls or policy outputs of the wrong shape (shapes are checked while
tracing, so under ``jit`` too), and a model that breaks the loaders' rules
(:meth:`jaxdyn.Model.check`: field shapes, finite numbers, non-negative masses; values only
where they are known in Python).
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from . import actuators, batching, configuration, linalg, planner, spatial
from . import constraints as _constraints
from .algorithms.common import full_precision
from .algorithms.energy import kinetic_energy, potential_energy
from .algorithms.innovations import solve_mass_matrix
from .model import Model

INTEGRATORS = ("implicit_euler", "euler", "semi_implicit_euler", "rk4", "variational")
DEFAULT_INTEGRATOR = "implicit_euler"


@dataclasses.dataclass(frozen=True)
class SimOptions:
    """What :func:`forward_dynamics` adds to the commanded torque (static: hashable, so a change
    recompiles). Set a flag to ``False`` to model an ideal system."""

    clip_effort: bool = True
    damping: bool = True
    friction: bool = True
    # [rad/s or m/s] tanh smoothing scale of the joints' Coulomb friction; None: 1e-4 in
    # "implicit_euler", where the friction is solved implicitly in velocity (a joint loaded
    # below its friction creeps at eps * atanh(load / friction)), 1e-2 in the explicit
    # integrators (whose stability needs h friction / (eps I) < 2)
    friction_velocity: float | None = None
    # "implicit_euler": the joints' Coulomb friction implicit in velocity (it holds; a mass matrix
    # and Newton steps per step). False: explicit, friction_velocity None meaning 1e-2 (it creeps;
    # only the elementwise tanh, and the batch kernels under vmap)
    implicit_friction: bool = True
    joint_limits: bool = True
    springs: bool = True  # joint springs (model.stiffness, model.spring_reference)
    limit_stiffness: float = 1e3  # [N m / rad] soft joint-limit spring
    limit_damping: float = 10.0  # [N m s / rad] soft joint-limit damper (only beyond the limit)
    gravity: bool = True
    newton_iterations: int = 6  # "variational" only: quasi-Newton iterations per step
    # "implicit_euler" with contact: Newton steps on the contact's velocity equation after the
    # first (each on a convex subproblem with a line search; jaxdyn.sim._implicit_contact)
    contact_iterations: int = 1
    # "implicit_euler" with contact: "explicit", the penetration at the start of the step, or
    # "implicit", the penetration at the end of the step (the gap moved by the end velocity,
    # jaxdyn.contact.JointSpaceContacts (J3)): stable at coarser steps and shallower at impacts,
    # but numerically dissipative (docs/contact.md, "Integration")
    contact_position: str = "explicit"
    # a model's equality constraints (jaxdyn.constraints): "soft", MuJoCo's solref/solimp
    # (efc_force and qacc as MuJoCo's), or "hard", Lagrange multipliers with Baumgarte gains
    # (Kp, Kd) (exact closure, as Pinocchio's constraintDynamics)
    constraints: str = "soft"
    baumgarte: tuple[float, float] = (0.0, 0.0)

    def __post_init__(self):
        if self.constraints not in ("soft", "hard"):
            raise ValueError(f"SimOptions: constraints must be 'soft' or 'hard', got {self.constraints!r}")
        if self.contact_position not in ("implicit", "explicit"):
            raise ValueError(
                f"SimOptions: contact_position must be 'implicit' or 'explicit', got {self.contact_position!r}"
            )


FRICTION_VELOCITY_IMPLICIT = 1e-4  # SimOptions.friction_velocity=None in "implicit_euler"
FRICTION_VELOCITY_EXPLICIT = 1e-2  # and in the explicit integrators


def friction_velocity(options: SimOptions, implicit: bool = False) -> float:
    """The joints' Coulomb friction smoothing scale ``eps`` of ``options``: its
    ``friction_velocity``, or where that is ``None`` the default of the integrator
    (``implicit``: ``"implicit_euler"``, whose velocity solve takes the friction implicitly)."""
    if options.friction_velocity is not None:
        return options.friction_velocity
    return FRICTION_VELOCITY_IMPLICIT if implicit else FRICTION_VELOCITY_EXPLICIT


IDEAL = SimOptions(clip_effort=False, damping=False, friction=False, joint_limits=False, springs=False)


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class Trajectory:
    """A rollout: ``q (T+1, nq)``, ``qd (T+1, nv)`` (state at every step, first = initial), the
    torque that was applied ``tau (T, nv)`` (after clipping, before passive forces) and
    ``nonfinite_step`` (int32 scalar): the index ``k`` into ``q``/``qd`` of the first state with
    a NaN or inf entry (``k`` steps after the initial state, ``0`` if the initial state is not
    finite), ``-1`` if every state is finite. It is computed inside the rollout's scan, so a
    batched rollout (``vmap``) carries one per trajectory; :func:`first_nonfinite` reads it on
    the host.

    ``penetration_step`` (int32 scalar): with a ``contact``, the index ``k`` of the first state
    in which a shape is deeper in the ground, or two shapes deeper in each other, than
    ``rollout``'s ``max_penetration`` (a bound far
    beyond the contact law's rest depth: the step was too coarse for the contact, and the
    motion from there on is not physical), ``-1`` if none or without contact; read it on the host
    with :func:`first_penetration`.

    ``overflow_step`` (int32 scalar): with a contact whose ``"implicit_euler"`` solve takes a
    budget of rows (``Contact(max_contacts=...)``, ``"auto"`` by default, where the model has more
    candidate rows than the budget), the index ``k`` of the first state in which more rows
    touch than the budget (their force is then missing from that step: raise ``max_contacts``),
    ``-1`` if none; ``None`` where no budget applies (read it with :func:`first_overflow`).

    ``contact_state``: for a contact with state (``Contact(friction="spring")``), the
    :class:`jaxdyn.contact.ContactState` at every step, each leaf with a leading ``T+1`` axis
    (first = initial); ``None`` otherwise. ``act``: the activations ``(T+1, na)`` of the
    actuators with activation dynamics when a ``ctrl`` drives them; ``None`` otherwise.

    A pytree (batch it with ``vmap``). Iterating and indexing give ``(q, qd, tau)`` as the
    former named tuple did, so ``q, qd, tau = rollout(...)`` still works.
    """

    q: jnp.ndarray
    qd: jnp.ndarray
    tau: jnp.ndarray
    nonfinite_step: jnp.ndarray
    contact_state: Any = None
    act: Any = None
    penetration_step: Any = None
    overflow_step: Any = None

    def __iter__(self):
        return iter((self.q, self.qd, self.tau))

    def __len__(self):
        return 3

    def __getitem__(self, i):
        return (self.q, self.qd, self.tau)[i]

    def _replace(self, **changes) -> Trajectory:
        return dataclasses.replace(self, **changes)


def _all_finite(*xs):
    return jnp.all(jnp.stack([jnp.all(jnp.isfinite(x)) for x in xs]))


def first_nonfinite(x):
    """Where a rollout first went non-finite, read on the host after the run (no callback in
    the loop): ``x`` is a :class:`Trajectory` or anything with a ``nonfinite_step`` field (e.g.
    a batched :class:`jaxdyn.envs.EnvState`).

    Returns ``None`` if every state stayed finite; otherwise ``(index, step)`` with ``step`` the
    earliest ``nonfinite_step`` over the batch and ``index`` the batch entry that had it (the
    lowest such index on ties): an ``int`` for one batch axis (``vmap`` over environments), a
    tuple of ints for several, ``()`` for an unbatched trajectory.
    """
    return _first(x.nonfinite_step)


def first_overflow(x):
    """Where a rollout's contact rows first exceeded the solve's budget
    (:attr:`Trajectory.overflow_step`), on the host: as :func:`first_nonfinite`."""
    return _first(x.overflow_step)


def first_penetration(x):
    """Where a rollout's contact first went implausibly deep (:attr:`Trajectory.penetration_step`),
    read on the host after the run, as :func:`first_nonfinite` reads ``nonfinite_step``: ``None``,
    or ``(index, step)`` of the earliest such state of a batch. ``x``: a :class:`Trajectory` or a
    batched :class:`jaxdyn.envs.EnvState`."""
    return _first(x.penetration_step)


def _first(steps):
    """``None`` or ``(index, step)`` of the earliest non-negative entry of ``steps``."""
    if steps is None:
        return None
    s = np.asarray(jax.device_get(steps)).astype(np.int64)
    bad = s >= 0
    if not bad.any():
        return None
    key = np.where(bad, s, np.iinfo(np.int64).max)
    flat = int(np.argmin(key))  # first occurrence: lowest flat index on ties
    idx = np.unravel_index(flat, s.shape) if s.ndim else ()
    step = int(key.reshape(-1)[flat])
    idx = tuple(int(i) for i in idx)
    return (idx[0] if len(idx) == 1 else idx), step


def _one_dof(model: Model):
    return configuration.one_dof_indices(model.topology)


def applied_torques(model: Model, tau, options: SimOptions = SimOptions()):
    """The commanded torque after actuator limits (``clip(tau, -effort_limit, effort_limit)``)."""
    tau = jnp.asarray(tau, model.dtype)
    if options.clip_effort:
        tau = jnp.clip(tau, -model.effort_limit, model.effort_limit)
    return tau


@full_precision
def passive_torques(model: Model, q, qd, options: SimOptions = SimOptions()) -> Float[Array, " nv"]:
    """Joint damping, smoothed Coulomb friction, joint springs and soft joint-limit torques
    (module docstring)."""
    qd = jnp.asarray(qd, model.dtype)
    out = jnp.zeros(model.nv, model.dtype)
    if options.damping:
        out = out - model.damping * qd
    if options.friction:
        out = out - model.friction * jnp.tanh(qd / friction_velocity(options))
    one_q, one_v = _one_dof(model)
    if options.springs and len(one_q):
        out = out.at[one_v].add(-model.stiffness[one_v] * (q[one_q] - model.spring_reference[one_q]))
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
    if model.constraints is not None:  # tendons' springs and dampers (their limits: constraint rows)
        out = out + _constraints.tendon_forces(model, q, qd, options.springs, options.damping)
    return out


@full_precision
def forward_dynamics(
    model: Model,
    q,
    qd,
    tau,
    f_ext=None,
    options: SimOptions = SimOptions(),
    contact=None,
    contact_state=None,
    ctrl=None,
    act=None,
) -> Float[Array, " nv"]:
    """``qdd`` from ABA with the actuator limits and passive forces of ``options`` applied
    (batched by ``vmap`` into the executor :mod:`jaxdyn.planner` chooses, :mod:`jaxdyn.batching`).
    ``contact``: an optional :class:`jaxdyn.contact.Contact`, whose body wrenches at ``(q, qd)``
    are added to ``f_ext``; ``contact_state``: its state, if it has one (``None``: relaxed; the
    continuous-time law, ``h = 0`` in docs/contact.md (S2)). ``ctrl (nu,)``: the control of the
    model's actuators (:mod:`jaxdyn.actuators`), whose joint torques are added to ``tau``
    (``tau=None``: none); ``act (na,)``: the activations of those with activation dynamics."""
    if contact is not None:
        fc = contact.wrenches(model, q, qd, contact_state)
        f_ext = fc if f_ext is None else f_ext + fc
    m, total = _forces(model, q, qd, tau, options, ctrl, act)
    if model.constraints is not None and model.constraints.solved:
        return _constrained(m, q, qd, total, f_ext, options)
    return batching.aba(m, q, qd, total, f_ext)


def _constrained(m, q, qd, total, f_ext, options: SimOptions, dt=None):
    """The constrained acceleration (:func:`jaxdyn.constraints.solve`) of ``m``'s tree under the
    joint torque ``total`` and ``f_ext``."""
    tree_m = m.replace(constraints=None)  # the tendons' forces are in total
    a0 = batching.aba(tree_m, q, qd, total, f_ext)
    return _constraints.solve(m, q, qd, a0, options.constraints, dt, options.baumgarte).qdd


def _constraint_wrenches(model, q, qd, tau, f_ext, dt, options, ctrl, act):
    """``f_ext`` plus the constraint forces as body wrenches, computed as in MuJoCo's step:
    from the acceleration of every other force with the mass matrix of the model (the implicit
    damping, joint friction and contact of the step act afterwards)."""
    m = model if options.gravity else model.replace(gravity=jnp.zeros_like(model.gravity))
    if _implicit_friction(model, options) is not None:  # solved in the step's velocity, after
        options = dataclasses.replace(options, friction=False)
    a0 = forward_dynamics(
        model.replace(constraints=model.constraints.tendons_only()), q, qd, tau, f_ext, options, ctrl=ctrl, act=act
    )
    sol = _constraints.solve(m, q, qd, a0, options.constraints, dt, options.baumgarte)
    fc = _constraints.joint_force_wrenches(m, q, sol.rows.J.T @ sol.force)
    return fc if f_ext is None else f_ext + fc


def _forces(model: Model, q, qd, tau, options: SimOptions, ctrl=None, act=None):
    """The model the step's dynamics use (gravity off with ``options.gravity`` off) and the
    joint torque of every force but the external and contact ones: the clipped command, the
    actuators' torques under ``ctrl`` (clipped by the joints' effort limits, which hold their
    ``actuatorfrcrange``) and the passive torques."""
    m = model if options.gravity else model.replace(gravity=jnp.zeros_like(model.gravity))
    total = passive_torques(model, q, qd, options)
    if tau is not None:
        total = total + applied_torques(model, tau, options)
    if ctrl is not None:
        total = total + applied_torques(model, actuators.joint_torques(model, q, qd, ctrl, act), options)
    return m, total


def _free_torque(model: Model, q, qd, tau, f_ext, options: SimOptions, ctrl=None, act=None):
    """``M qdd`` of :func:`forward_dynamics` (no contact) without forming ``qdd``: the joint
    torque of every force less the bias, ``tau - c(q, qd) + sum_k J_k^T f_ext_k``, one RNEA at
    ``qdd = 0`` in place of ABA and a product with ``M``; through ``qdd`` where the model's
    constraints are solved in the dynamics."""
    if model.constraints is not None and model.constraints.solved:
        M = _mass_matrix(model, q, options)
        return M @ forward_dynamics(model, q, qd, tau, f_ext, options, ctrl=ctrl, act=act)
    m, total = _forces(model, q, qd, tau, options, ctrl, act)
    return total - batching.rnea(m, q, qd, jnp.zeros_like(qd), f_ext)


def _mass_matrix(model: Model, q, options: SimOptions):
    return batching.crba(model, q)


# -- Lie-algebra helpers for RKMK -------------------------------------------------------------


def _ad(model: Model, x, y):
    """``[x, y]`` in the tangent space: spatial motion cross product on the free-flyer block,
    ``x x y`` on spherical blocks, zero on 1-dof joints (abelian)."""
    out = jnp.zeros_like(y)
    for g in configuration.groups(model.topology):
        if not g.space.abelian:
            out = out.at[g.v].set(g.space.bracket(x[g.v], y[g.v]))
    return out


def _dexpinv(model: Model, theta, v):
    """``dexp^-1_{-theta}(v) = v + [theta, v]/2 + [theta, [theta, v]]/12`` (+ O(theta^4)): the
    rate of ``theta`` with ``q (+) theta`` moving at body velocity ``v`` (HLW IV.8 (8.10))."""
    if all(g.space.abelian for g in configuration.groups(model.topology)):
        return v
    a = _ad(model, theta, v)
    return v + 0.5 * a + _ad(model, theta, a) / 12.0


# -- integrators --------------------------------------------------------------------------------


def _concrete(x):
    """``x`` as a NumPy array when its value is known in Python, ``None`` when it is traced
    (an argument of a ``jit``-compiled function, or batched by ``vmap``)."""
    try:
        return np.asarray(x)
    except (jax.errors.TracerArrayConversionError, jax.errors.ConcretizationTypeError):
        return None


def _check_dt(dt, where: str):
    """Refuse a concrete ``dt`` that is not positive and finite (a traced one cannot be read)."""
    d = _concrete(dt)
    if d is None:
        return
    if not np.issubdtype(d.dtype, np.number) or np.iscomplexobj(d):
        raise TypeError(f"{where}: dt must be a real number (the step length in seconds), got {dt!r}")
    if not np.all(np.isfinite(d) & (d > 0)):
        order = {"step": "step(model, q, qd, tau, dt)", "rollout": "rollout(model, q0, qd0, controls_or_policy, dt)"}
        if d.ndim and where in order:
            raise ValueError(
                f"{where}: dt must be positive and finite, got an array of shape {d.shape} (dt is the step length; "
                f"arguments in the wrong order? the call is {order[where]})"
            )
        raise ValueError(f"{where}: dt must be positive and finite, got {dt!r}")


def _check_model(model: Model, where: str):
    """The loaders' rules on the model (:meth:`Model.check`, inertia consistency not looked at):
    shapes always, values where they are known in Python."""
    from .io.errors import check_model

    if not isinstance(model, Model):
        raise TypeError(f"{where}: the first argument must be a jaxdyn.Model, got {type(model).__name__}")
    check_model(model, "skip", f"{where}: ")


def _check_shape(where: str, name: str, x, shape, model: Model):
    if x is not None and jnp.shape(x) != shape:
        raise ValueError(f"{where}: {name} must have shape {shape} for model '{model.name}', got {jnp.shape(x)}")


def _check_integrator(integrator: str):
    if integrator not in INTEGRATORS:
        raise ValueError(f"step: unknown integrator '{integrator}', choose one of {', '.join(INTEGRATORS)}")


def _check_contact_state(integrator: str, contact, where: str):
    if contact is not None and contact.stateful and integrator != "implicit_euler":
        raise ValueError(
            f"{where}: Contact(friction='{contact.friction}') carries a state, integrated by the "
            f"'implicit_euler' step only (got '{integrator}')"
        )


def _rk4(model, q, qd, tau, dt, f_ext, options, contact=None, ctrl=None, act=None):
    f = lambda qq, vv: forward_dynamics(model, qq, vv, tau, f_ext, options, contact, ctrl=ctrl, act=act)
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


def _variational(model, q, qd, tau, dt, f_ext, options, ctrl=None, act=None):
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
        F = _forces(model, qm, xi, tau, options, ctrl, act)[1]
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
    # mass-matrix solve (the innovations inverse, Rodriguez86) instead of a dense Jacobian of the
    # residual; it contracts by O(h) per iteration and reaches round-off in a few iterations for
    # stable step sizes.
    m = model if options.gravity else model.replace(gravity=jnp.zeros_like(model.gravity))
    xi = qd + dt * forward_dynamics(model, q, qd, tau, None, options, ctrl=ctrl, act=act)  # explicit predictor
    newton = lambda _, x: x + solve_mass_matrix(m, ip(q, 0.5 * dt * x), residual(x))
    xi = jax.lax.fori_loop(0, options.newton_iterations, newton, xi)
    q1 = ip(q, dt * xi)
    p1 = jax.grad(lambda e: Ld(q, ip(q1, e)))(zero) + force(q, xi)
    qd1 = solve_mass_matrix(m, q1, p1)
    return q1, qd1


def implicit_damping_model(model: Model, dt, options: SimOptions = SimOptions(), actuator_damping=None) -> Model:
    """The model whose forward dynamics is the ``"implicit_euler"`` acceleration ``dv / h``:
    ``armature + dt * damping`` in place of the armature (module docstring), the damping being
    the joints' (with ``options.damping``) plus ``actuator_damping (nv,)``, the actuators'
    ``-d tau / d qd`` when a ``ctrl`` drives them (:func:`jaxdyn.actuators.velocity_derivative`,
    MuJoCo's ``implicitfast``); the model itself when there is neither."""
    b = model.damping if options.damping else None
    if actuator_damping is not None:
        b = actuator_damping if b is None else b + actuator_damping
    if b is None:
        return model
    return model.replace(armature=model.armature + jnp.asarray(dt, model.dtype) * b)


def _implicit_euler(model, q, qd, tau, dt, f_ext, options, contact=None, contact_state=None, ctrl=None, act=None):
    """MuJoCo's Euler step with implicit joint damping (module docstring). Returns
    ``(q1, qd1, contact_state1, report)``, ``contact_state1`` ``None`` for a contact without
    state, ``report`` the deepest contact of ``q`` and the rows beyond the solve's budget
    (:class:`_ContactReport`; ``None`` without contact)."""
    if model.constraints is not None and model.constraints.solved:  # closed loops, couplings: forces join f_ext
        f_ext = _constraint_wrenches(model, q, qd, tau, f_ext, dt, options, ctrl, act)
        model = model.replace(constraints=model.constraints.tendons_only())
    b_act = None if ctrl is None else -actuators.velocity_derivative(model, q, qd, ctrl, act)
    md = implicit_damping_model(model, dt, options, b_act)
    stateful = contact is not None and contact.stateful
    if stateful:
        contact_state = contact.init_state(model) if contact_state is None else contact_state
    qd_lin, depth = qd, None
    friction = _implicit_friction(model, options)
    if friction is not None:  # the joints' Coulomb friction joins the velocity solve
        options = dataclasses.replace(options, friction=False)
    if contact is None and friction is None:  # every force explicit: ABA of the damped model
        qdd = forward_dynamics(md, q, qd, tau, f_ext, options, ctrl=ctrl, act=act)
    elif contact is None:
        qdd = _implicit_joint_friction(md, q, qd, tau, f_ext, dt, friction, options, ctrl, act)
    else:  # the contact's force (and the joints' friction) implicit in velocity
        with planner.site("contact_step"):  # its measured executor thresholds
            qdd, qd_lin, depth = _implicit_contact(
                model, md, q, qd, tau, f_ext, dt, contact, contact_state, stateful, options, ctrl, act, friction
            )
    qd1 = qd + dt * qdd
    state1 = None
    if stateful:
        # the elongation (S5) at the end velocity the linearisation was taken about
        state1 = contact.update_state(model, q, qd_lin + dt * qdd, contact_state, dt)
    q1 = configuration.integrate(model, q, qd1, dt)
    if not model.floating_base:
        return q1, qd1, state1, depth
    # free base on R^3 x SO(3): world-frame linear velocity of the base origin v_w = R v_b,
    # dv_w/dt = R (dv_b/dt + omega x v_b); position += h v_w1, orientation *= exp(h omega1)
    w0, vb0 = qd[0:3], qd[3:6]
    R0 = spatial.quat_to_rotation(q[3:7])
    vw1 = spatial.mv(R0, vb0 + dt * (qdd[3:6] + spatial.cross(w0, vb0)))
    quat = spatial.quat_multiply(q[3:7], spatial.quat_exp(qd1[0:3] * dt))
    quat = quat / jnp.linalg.norm(quat)
    q1 = q1.at[0:3].set(q[0:3] + dt * vw1).at[3:7].set(quat)
    qd1 = qd1.at[3:6].set(spatial.mtv(spatial.quat_to_rotation(quat), vw1))
    return q1, qd1, state1, depth


class _JointFriction:
    """The joints' Coulomb friction ``f(v) = F tanh(v / eps)`` (per dof, opposing ``v``) in the
    ``"implicit_euler"`` velocity solve: the gradient of the convex ``F eps log cosh(v /
    eps)``, whose secant slope ``c(v) = F tanh(v / eps) / v`` (at most ``F / eps``) gives a
    quadratic that bounds it from above (``log cosh`` is concave in ``v^2``), and whose
    derivative is ``F / eps sech^2(v / eps)``."""

    def __init__(self, F, eps):
        self.F, self.eps = F, eps

    def force(self, v):
        return self.F * jnp.tanh(v / self.eps)

    def secant(self, v):
        x = v / self.eps
        small = jnp.abs(x) < 1e-3
        xs = jnp.where(small, 1.0, x)
        return self.F / self.eps * jnp.where(small, 1.0 - x * x / 3.0, jnp.tanh(xs) / xs)

    def derivative(self, v):
        t = jnp.tanh(v / self.eps)
        return self.F / self.eps * (1.0 - t * t)


def _implicit_friction(model: Model, options: SimOptions) -> _JointFriction | None:
    """The joints' friction for the ``"implicit_euler"`` velocity solve; ``None`` with
    ``options.friction`` off or a model whose friction is known to be zero (a traced one is
    taken as present)."""
    if not (options.friction and options.implicit_friction):
        return None
    F = model.friction
    try:
        if not np.any(np.asarray(F)):
            return None
    except (jax.errors.TracerArrayConversionError, jax.errors.ConcretizationTypeError):
        pass  # traced: taken as present
    return _JointFriction(F, jnp.asarray(friction_velocity(options, implicit=True), model.dtype))


def _implicit_joint_friction(md, q, qd, tau, f_ext, dt, friction: _JointFriction, options, ctrl=None, act=None):
    """The ``"implicit_euler"`` acceleration with the joints' Coulomb friction implicit in
    velocity (no contact): the root ``a`` of

        R(a) = M_d (a - a_0) + f(qd + h a) = 0,                                         (F1)

    with ``a_0`` the acceleration of every other force (ABA of the damped model ``M_d``, as
    without friction) and ``f`` of :class:`_JointFriction`: the minimiser of the strictly convex
    ``1/2 (a - a_0)^T M_d (a - a_0) + sum_j F_j eps / h log cosh(v_j / eps)``, ``v = qd + h a``.
    Newton steps from ``a = a_0`` with a line search, each ``da = -(M_d + h D)^-1 R(a)`` with ``D
    = diag(f'(v))`` (a Cholesky solve with the mass matrix of the damped model, CRBA); the slope
    of the convex function along the step,

        s(t) = (M_d (a - a_0) + t M_d da + f(qd + h (a + t da))) . da,                   (F2)

    costs ``nv`` operations per trial; its zero is bracketed and refined as in
    :func:`_implicit_contact`. From ``a_0`` a joint that slides starts converged up to its
    friction's change, and one that sticks lands in the tanh's linear zone after the first line
    search (the minimum along the step), where Newton's steps converge quadratically.
    ``1 + options.contact_iterations`` Newton steps. ABA and CRBA keep their batch kernels under
    ``vmap`` (the damped model's armature is not per sample)."""
    a0 = forward_dynamics(md, q, qd, tau, f_ext, options, ctrl=ctrl, act=act)
    Md = _mass_matrix(md, q, options)
    fractions = jnp.asarray(_LINE_SEARCH, qd.dtype)

    def newton(_, a):
        v = qd + dt * a
        Me = Md @ (a - a0)
        da = -linalg.spd_solve(Md + jnp.diag(dt * friction.derivative(v)), Me + friction.force(v))
        s0, curvature = Me @ da, da @ (Md @ da)

        def slope(t):
            return s0 + t * curvature + friction.force(v + (t * dt) * da) @ da

        return a + _line_search(slope, fractions) * da

    return jax.lax.fori_loop(0, 1 + options.contact_iterations, newton, a0)


def _line_search(slope, fractions):
    """The zero of the increasing ``slope(t)`` of a convex function along a descent step (``t
    >= 0``): bracketed among ``fractions`` (the first with a positive slope), refined by
    ``_REFINE`` regula-falsi steps; the largest fraction if the slope stays negative, ``0`` if
    it is not negative at ``0``."""
    s = jax.vmap(slope)(fractions)
    up = s > 0
    k = jnp.maximum(jnp.argmax(up), 1)  # the first fraction with a positive slope
    bracket = (fractions[k - 1], fractions[k], s[k - 1], s[k])

    def secant(lo, hi, s_lo, s_hi):
        gap = s_hi - s_lo
        return lo + (hi - lo) * (-s_lo) / jnp.where(gap > 0, gap, 1.0)

    def refine(_, b):
        lo, hi, s_lo, s_hi = b
        t = secant(lo, hi, s_lo, s_hi)
        st = slope(t)
        pos = st > 0
        return (jnp.where(pos, lo, t), jnp.where(pos, t, hi), jnp.where(pos, s_lo, st), jnp.where(pos, st, s_hi))

    t = secant(*jax.lax.fori_loop(0, _REFINE, refine, bracket))
    t = jnp.where(jnp.any(up), t, fractions[-1])
    return jnp.where(s[0] < 0, t, 0.0)


# Newton step fractions at which the slope of the convex subproblem is evaluated (from 0):
# the minimum along the step is bracketed between two of them, then found by regula falsi
_LINE_SEARCH = (0.0, 1.0 / 64, 1.0 / 16, 1.0 / 4, 1.0 / 2, 1.0, 2.0, 4.0)
_REFINE = 3  # regula falsi steps on the bracket
_POLISH = 1  # exact Newton steps after the convex ones, each kept if it reduces R^T M^-1 R


class _ContactReport(NamedTuple):
    """What the ``"implicit_euler"`` step saw of its start state's contact: the deepest depth and
    the touching rows beyond the solve's budget (``None``: no budget)."""

    depth: Any
    overflow: Any


def _implicit_contact(
    model, md, q, qd, tau, f_ext, dt, contact, contact_state, stateful, options, ctrl=None, act=None, friction=None
):
    """The ``"implicit_euler"`` acceleration with the contact force implicit in velocity: the
    root ``a`` of the backward-Euler velocity equation (position and every other force explicit)

        R(a) = M_d a - r - tau_c(v(a)) = 0,      v(a) = qd_lin + h a,

    with ``M_d`` the mass matrix of the damped model (armature ``+ h B``), ``r = tau - c(q, qd) =
    M_d qdd`` the torque of every force but the contact's less the bias (``qdd`` the
    acceleration without contact; one RNEA at ``qdd = 0``, :func:`_free_torque`), ``tau_c(v)``
    the joint-space contact force at ``(q, v)`` (:meth:`jaxdyn.contact.Contact.joint_space`:
    point Jacobians and the law's 3x3 velocity derivatives, no RNEA) and ``qd_lin = qd`` (fixed base; the
    floating-base frame term below). With ``friction="spring"`` the bristle's elastic force is
    taken at the end-of-step elongation ``u + h v_t`` (docs/contact.md (S2)), so its stiffness
    enters ``D``. With the joints' Coulomb friction (``friction``, :class:`_JointFriction`)
    ``R`` gains ``+ f(v(a))``, ``L`` its convex ``sum_j F_j eps log cosh(v_j / eps)``, the
    Newton matrix its secant slopes ``+ h diag(c(v))`` and the polish steps its derivative.

    Solved by ``1 + options.contact_iterations`` Newton steps from ``a = 0`` (the start
    velocity), each on a convex problem: with the friction bound ``mu f_n`` frozen at ``fbar``
    (:class:`jaxdyn.contact.JointSpaceContacts` (J4)), ``R_fbar(a)`` is the gradient of the
    strictly convex

        L(a) = h/2 a^T M_d a - h r^T a + sum_c psi_c(G_c v(a)).

    ``fbar`` is the elastic force ``k d^p`` for the first step (the force at the start velocity,
    damping included, can be 1e4 times the weight in an impact) and the iterate's normal force
    after it, so a fixed point solves ``R(a) = 0`` with the exact force. The step is
    ``da = -(M_d - h D_bar)^-1 R_fbar(a)`` (a Cholesky solve: ``M_d - h D_bar`` is symmetric
    positive definite) with ``D_bar`` the majorant of
    :meth:`~jaxdyn.contact.JointSpaceContacts.newton_matrix` (``M_d - h D_bar`` bounds ``L``'s
    Hessian over ``h``: a descent direction that a fast slip does not send across the stick
    region); the slope of ``L`` along it,

        s(t) = R_fbar(a + t da) . da = (M_d a - r) . da + t da^T M_d da - sum_c f_c(x_c + t h dx_c) . dx_c,

    with ``x_c = G_c v(a)`` and ``dx_c = G_c da`` the contact velocities of the iterate and of
    the step (:meth:`~jaxdyn.contact.JointSpaceContacts.contact_velocities`), increases with
    ``t``: each trial costs one evaluation of the contact laws, in contact space. The step
    length is its zero, bracketed among the fractions ``_LINE_SEARCH`` and refined by
    ``_REFINE`` regula-falsi steps (the largest fraction when ``s`` stays negative).
    ``_POLISH`` Newton steps with the exact derivative of the coupled force
    (:meth:`~jaxdyn.contact.JointSpaceContacts.velocity_derivative`) follow, each kept only if
    it lowers ``R^T M_d^-1 R``: quadratic convergence near the root. A Newton iteration on
    ``R`` alone stalls away from the root after a hard impact (docs/contact.md, "The velocity
    solve"). Returns ``(a, qd_lin, report)``, ``report`` the deepest contact of ``q`` (the
    rows' depths the solve took: the deepest are among them) and the rows beyond the budget
    (:class:`_ContactReport`)."""
    lookahead = dt if options.contact_position == "implicit" else None
    js = contact.joint_space(model, q, contact_state, dt if stateful else 0.0, lookahead, qd=qd, step=dt)
    Md = _mass_matrix(md, q, options)
    other = _free_torque(md, q, qd, tau, f_ext, options, ctrl, act)  # M_d qdd = tau - c
    qd_lin = qd
    if model.floating_base:
        # the step changes the base velocity, in body axes at the start pose, by
        # h (qdd + [0; omega x v_b]) (the linear part moves in world axes): the end velocity
        # is qd_lin + h a with qd_lin = qd + h [0; omega x v_b]
        qd_lin = qd_lin.at[3:6].add(dt * spatial.cross(qd[0:3], qd[3:6]))
    fractions = jnp.asarray(_LINE_SEARCH, qd.dtype)

    def joint_friction(v):  # f(v) of the joints' friction (zero without)
        return jnp.zeros_like(v) if friction is None else friction.force(v)

    def residual(a, fbar=None):  # R_fbar(a); R(a), the exact force's, without fbar
        v = qd_lin + dt * a
        return Md @ a - other - js.forces(v, fbar) + joint_friction(v)

    elastic = js.elastic_normal_forces()

    def newton(i, a):
        v = qd_lin + dt * a
        # the first step bounds the friction by the elastic force k d^p, not by the normal force
        # at the start velocity (an impact's, with the damping, can be 1e4 times the weight);
        # the following steps by the iterate's
        fbar = jnp.where(i > 0, js.normal_forces(v), elastic)
        Ma = Md @ a
        N = Md - dt * js.newton_matrix(v, fbar)
        if friction is not None:
            N = N + jnp.diag(dt * friction.secant(v))
        da = -linalg.spd_solve(N, Ma - other - js.forces(v, fbar) + joint_friction(v))
        # s(t) in contact space: the joint-space terms are linear in t (the joints' friction
        # is per dof, nv terms)
        s0 = (Ma - other) @ da
        curvature = da @ (Md @ da)
        x, dx = js.contact_velocities(v), js.contact_velocities(da)

        def slope(t):
            xt = jax.tree_util.tree_map(lambda x0, d: x0 + (t * dt) * d, x, dx)
            return s0 + t * curvature - js.power(xt, dx, fbar) + joint_friction(v + (t * dt) * da) @ da

        return a + _line_search(slope, fractions) * da

    a = jax.lax.fori_loop(0, 1 + options.contact_iterations, newton, jnp.zeros_like(qd))
    L = linalg.cholesky(jax.lax.stop_gradient(Md))

    def merit(R):
        return R @ linalg.spd_solve(Md, R, L)

    def polish(_, carry):
        a, R, m = carry
        v = qd_lin + dt * a
        J = Md - dt * js.velocity_derivative(v)
        if friction is not None:
            J = J + jnp.diag(dt * friction.derivative(v))
        cand = a - linalg.solve(J, R)
        Rc = residual(cand)
        mc = merit(Rc)
        better = mc < m
        return jnp.where(better, cand, a), jnp.where(better, Rc, R), jnp.where(better, mc, m)

    R = residual(a)
    a = jax.lax.fori_loop(0, _POLISH, polish, (a, R, merit(R)))[0]
    return a, qd_lin, _ContactReport(jnp.max(js.depth, initial=0.0), js.overflow)


@full_precision
def step(
    model: Model,
    q,
    qd,
    tau,
    dt,
    integrator: str = DEFAULT_INTEGRATOR,
    f_ext=None,
    options: SimOptions = SimOptions(),
    contact=None,
    contact_state=None,
    ctrl=None,
    act=None,
):
    """Advance ``(q, qd)`` by ``dt`` under torque ``tau`` (held constant over the step).

    ``contact``: an optional :class:`jaxdyn.contact.Contact` (ground contact forces, added to
    ``f_ext``; implicit in velocity in ``"implicit_euler"``, explicit in the others; every
    integrator but ``"variational"``). ``contact_state``: the state of a contact that has one
    (``Contact(friction="spring")``; ``None``: relaxed), ``"implicit_euler"`` only.

    ``ctrl (nu,)``: the control of the model's actuators (:mod:`jaxdyn.actuators`, from MJCF's
    ``<actuator>``), held over the step; their joint torques add to ``tau``, which may then be
    ``None``. In ``"implicit_euler"`` their velocity feedback (a servo's ``kv``) is implicit, as
    in MuJoCo's ``implicitfast``. ``act (na,)``: the activations of the actuators with
    activation dynamics (``None``: zero), advanced by the step.

    Returns ``(q_next, qd_next)``, then ``contact_state_next`` for a contact with state, then
    ``act_next`` when a ``ctrl`` drives actuators with activation dynamics. See the module
    docstring for the integrators and forces; the default, ``"implicit_euler"``, stays stable
    with stiff joint damping.
    """
    return _step(model, q, qd, tau, dt, integrator, f_ext, options, contact, contact_state, ctrl, act)[0]


def _step(model, q, qd, tau, dt, integrator, f_ext, options, contact, contact_state, ctrl, act):
    """:func:`step`'s outputs and the deepest contact depth of ``q`` where the step computed it
    (``"implicit_euler"`` with a contact; else ``None``)."""
    _check_integrator(integrator)
    _check_contact_state(integrator, contact, "step")
    _check_dt(dt, "step")
    _check_model(model, "step")
    if contact is not None:
        _warn_if_nothing_collides(model, contact, "step")
    q = jnp.asarray(q, model.dtype)
    qd = jnp.asarray(qd, model.dtype)
    _check_shape("step", "q", q, (model.nq,), model)
    _check_shape("step", "qd", qd, (model.nv,), model)
    act_force = act1 = None
    if ctrl is not None:
        acts = actuators.of_model(model)
        if acts.na:
            act = jnp.zeros(acts.na, model.dtype) if act is None else jnp.asarray(act, model.dtype)
            act1 = actuators.next_activation(model, ctrl, act, dt)
            act_force = actuators.early_activation(model, ctrl, act, dt)
    elif act is not None:
        raise ValueError("step: act (actuator activations) is given without ctrl")
    _check_shape("step", "tau", tau, (model.nv,), model)
    tail = () if act1 is None else (act1,)
    if integrator == "implicit_euler":
        q1, qd1, state1, depth = _implicit_euler(
            model, q, qd, tau, dt, f_ext, options, contact, contact_state, ctrl, act_force
        )
        return ((q1, qd1, *tail) if state1 is None else (q1, qd1, state1, *tail)), depth
    if integrator == "rk4":
        return (*_rk4(model, q, qd, tau, dt, f_ext, options, contact, ctrl, act_force), *tail), None
    if integrator == "variational":
        if contact is not None:
            raise ValueError("step: contact is not supported by the 'variational' integrator; use 'rk4'")
        if model.constraints is not None and model.constraints.solved:
            raise ValueError("step: constraints (model.constraints) are not supported by the 'variational' integrator")
        return (*_variational(model, q, qd, tau, dt, f_ext, options, ctrl, act_force), *tail), None
    qdd = forward_dynamics(model, q, qd, tau, f_ext, options, contact, ctrl=ctrl, act=act_force)
    qd1 = qd + dt * qdd
    if integrator == "semi_implicit_euler":
        return (configuration.integrate(model, q, qd1, dt), qd1, *tail), None
    return (configuration.integrate(model, q, qd, dt), qd1, *tail), None


@full_precision
def rollout(
    model: Model,
    q0,
    qd0,
    controls_or_policy,
    dt,
    steps: int | None = None,
    integrator: str = DEFAULT_INTEGRATOR,
    options: SimOptions = SimOptions(),
    remat: bool = False,
    substeps: int = 1,
    contact=None,
    contact_state=None,
    ctrl=None,
    act=None,
    max_penetration="auto",
) -> Trajectory:
    """Simulate ``steps`` control steps as one ``lax.scan`` over time.

    ``controls_or_policy``: an array ``(T, nv)`` of torques (``steps`` defaults to ``T``), or a
    callable ``policy(q, qd, t) -> tau`` with ``t`` the step index (closed loop; it may close
    over parameters to differentiate); ``None`` with ``ctrl``. ``ctrl``: the control of the
    model's actuators (:mod:`jaxdyn.actuators`), an array ``(T, nu)`` or a callable
    ``policy(q, qd, t) -> ctrl``, held over each control step (see :func:`step`); ``act``: the
    initial activations of those with activation dynamics (``None``: zero), recorded in
    :attr:`Trajectory.act`. Each control step is ``substeps`` integrator steps of
    ``dt / substeps`` with the torque held. ``remat=True`` rematerialises each step in the
    backward pass (``jax.checkpoint``), so the memory of ``grad`` through a rollout is one state
    per step instead of every intermediate of the dynamics. Batch with ``jax.vmap``.

    The scan also records the first step whose state is not finite
    (:attr:`Trajectory.nonfinite_step`, with jnp operations in the carry: no host callback);
    :func:`first_nonfinite` finds the earliest one of a batch after the run.

    ``contact``: an optional :class:`jaxdyn.contact.Contact`, ground contact in every
    integrator step (see :func:`step`). ``contact_state``: the initial state of a contact that
    has one (``None``: relaxed); the states are returned in :attr:`Trajectory.contact_state`.
    ``max_penetration`` [m]: with a ``contact``, the contact depth (a shape in the ground or two
    shapes in each other, :func:`penetration`) beyond which a state is implausible, recorded in
    :attr:`Trajectory.penetration_step` (:func:`penetration_bound`: ``"auto"``, the default, is
    ``PENETRATION_FACTOR`` times the rest depth of the whole model on one contact point; a
    number; ``None``: not checked, and no cost). Checked at every control step's state: the
    ``"implicit_euler"`` step's own depths of the state it starts from (no extra cost), the
    other integrators' by one more evaluation of the contacts per control step, and the last
    state by one evaluation after the loop. Intermediate substeps are not checked.
    """
    _check_integrator(integrator)
    _check_contact_state(integrator, contact, "rollout")
    if contact is not None and integrator == "variational":
        raise ValueError("rollout: contact is not supported by the 'variational' integrator; use 'rk4'")
    if not isinstance(substeps, (int, np.integer)) or substeps < 1:
        raise ValueError(f"rollout: substeps must be an integer >= 1, got {substeps!r}")
    if isinstance(steps, jax.core.Tracer):
        raise TypeError(
            "rollout: steps must be a Python int, known while tracing (it sets the length of the loop), got a "
            "traced value: under jax.jit make it static, jax.jit(sim.rollout, static_argnames=('steps',)), or "
            "close over it"
        )
    if steps is not None and (not isinstance(steps, (int, np.integer)) or isinstance(steps, bool) or steps < 0):
        raise ValueError(f"rollout: steps must be a non-negative integer (the number of control steps), got {steps!r}")
    _check_dt(dt, "rollout")
    _check_model(model, "rollout")
    q0 = jnp.asarray(q0, model.dtype)
    qd0 = jnp.asarray(qd0, model.dtype)
    if q0.shape != (model.nq,):
        raise ValueError(f"rollout: q0 must have shape ({model.nq},) for model '{model.name}', got {q0.shape}")
    if qd0.shape != (model.nv,):
        raise ValueError(f"rollout: qd0 must have shape ({model.nv},) for model '{model.name}', got {qd0.shape}")
    tau_policy, tau_xs, steps = _controls("controls", controls_or_policy, model.nv, model.dtype, steps)
    ctrl_policy, ctrl_xs, steps = _controls("ctrl", ctrl, model.nu, model.dtype, steps)
    if ctrl is not None:
        actuators.of_model(model)
    if controls_or_policy is None and ctrl is None:
        raise ValueError("rollout: give torques (controls_or_policy), a ctrl for the actuators, or both")
    if steps is None:
        raise ValueError("rollout: steps is required with a policy")
    h = dt / substeps
    if contact is not None:
        _warn_if_nothing_collides(model, contact, "rollout")
    deep_bound = penetration_bound(model, contact, max_penetration)
    stateful = contact is not None and contact.stateful
    cs0 = (contact.init_state(model) if contact_state is None else contact_state) if stateful else None
    na = model.actuators.na if (ctrl is not None and model.actuators is not None) else 0
    if act is not None and not na:
        raise ValueError("rollout: act is given, but no ctrl drives actuators with activation dynamics")
    act0 = (jnp.zeros(na, model.dtype) if act is None else jnp.asarray(act, model.dtype)) if na else None

    budgeted: list[bool] = []  # set while the scan traces its body

    def body(carry, x):
        q, qd, cs, a, k, bad, deep, over = carry
        t, tau_x, ctrl_x = x
        tau = tau_policy(q, qd, t) if tau_policy is not None else tau_x
        if tau_policy is not None:
            _check_shape("rollout", "the torque policy's output", tau, (model.nv,), model)
        tau = jnp.zeros(model.nv, model.dtype) if tau is None else applied_torques(model, tau, options)
        u = ctrl_policy(q, qd, t) if ctrl_policy is not None else ctrl_x
        if ctrl_policy is not None:
            _check_shape("rollout", "the ctrl policy's output", u, (model.nu,), model)
        for i in range(substeps):
            out, report = _step(
                model, q, qd, tau, h, integrator, None, options, contact, cs if stateful else None, u, a
            )
            depth = None if report is None else report.depth
            if report is not None and report.overflow is not None:  # a budget applies (static)
                budgeted.append(True)
                over = jnp.where((over < 0) & (report.overflow > 0), k, over)
            if i == 0 and deep_bound is not None:
                # the state k's depth: the implicit step's own, else evaluated here
                depth = penetration(model, contact, q) if depth is None else depth
                deep = jnp.where((deep < 0) & (depth > deep_bound), k, deep)
            q, qd = out[0], out[1]
            if stateful:
                cs = out[2]
            if na:
                a = out[-1]
        k = k + 1
        bad = jnp.where((bad < 0) & ~_all_finite(q, qd), k, bad)
        return (q, qd, cs, a, k, bad, deep, over), (q, qd, tau, cs, a)

    if remat:
        body = jax.checkpoint(body)
    bad0 = jnp.where(_all_finite(q0, qd0), -1, 0).astype(jnp.int32)
    minus1 = jnp.array(-1, jnp.int32)
    carry0 = (q0, qd0, cs0, act0, jnp.zeros((), jnp.int32), bad0, minus1, minus1)
    xs = (jnp.arange(steps), tau_xs, ctrl_xs)
    (qT, _, _, _, _, bad, deep, over), (qs, qds, taus, css, acts) = jax.lax.scan(body, carry0, xs)
    if deep_bound is not None:  # the last state, which no step starts from
        deep = jnp.where((deep < 0) & (penetration(model, contact, qT) > deep_bound), steps, deep).astype(jnp.int32)
    states = None
    if stateful:
        states = jax.tree_util.tree_map(lambda a, b: jnp.concatenate([a[None], b]), cs0, css)
    act_traj = jnp.concatenate([act0[None], acts]) if act0 is not None else None
    q_traj, qd_traj = jnp.concatenate([q0[None], qs]), jnp.concatenate([qd0[None], qds])
    return Trajectory(q_traj, qd_traj, taus, bad, states, act_traj, deep, over if budgeted else None)


PENETRATION_FACTOR = 100.0


def penetration_bound(model: Model, contact, max_penetration="auto"):
    """The depth [m] beyond which :func:`rollout` reports a state's contact as implausible
    (:attr:`Trajectory.penetration_step`), or ``None`` when it does not look (no contact, a
    contact with neither ground nor pairs, ``max_penetration=None``).

    ``"auto"``: ``PENETRATION_FACTOR`` (100) times the rest depth ``(W / k)^(1/p)`` of the whole
    model's weight ``W = m g`` on one contact point under the force law ``k d^p``
    (:class:`jaxdyn.contact.ContactParams`; ``g`` = 9.81 m/s^2 without gravity): a 1 kg ball on
    the default law rests 0.46 mm deep, so its bound is 4.6 cm, deeper than a drop from 10 m
    (3.6 cm); a 50 kg robot's is 0.62 m. With ``Contact(normal="mujoco")`` the rest depth is
    MuJoCo's law's for the softest geom (:func:`jaxdyn.contact.soft.rest_depth`). A number: that
    depth (positive)."""
    if contact is None or max_penetration is None or not (contact.collide_ground or contact.collide_pairs):
        return None
    if isinstance(max_penetration, str):
        if max_penetration != "auto":
            raise ValueError(
                f"rollout: max_penetration must be 'auto', a positive number or None, got {max_penetration!r}"
            )
        g = jnp.linalg.norm(jnp.asarray(model.gravity))
        weight = jnp.sum(model.mass) * jnp.where(g > 0, g, 9.81)
        if contact.normal == "mujoco" and model.geoms is not None:
            from .contact.soft import rest_depth

            return PENETRATION_FACTOR * rest_depth(model.geoms, weight)
        k, p = contact.params.stiffness, contact.params.exponent
        return PENETRATION_FACTOR * (weight / k) ** (1.0 / p)
    v = _concrete(max_penetration)
    if v is not None and not (v.shape == () and np.isfinite(v) and v > 0):
        raise ValueError(f"rollout: max_penetration must be 'auto', a positive number or None, got {max_penetration!r}")
    return max_penetration


def penetration(model: Model, contact, q):
    """The deepest contact depth ``d = max(0, margin - phi)`` [m] at ``q`` of the contacts that
    ``contact`` makes act (the shapes' ground contact points and the contacts of the shape pairs,
    with its broad phase ``max_pairs``), 0 without any: what :func:`rollout` compares with
    :func:`penetration_bound`."""
    from .contact.frames import _frames
    from .contact.ground import _contact_points, _has_ground_points
    from .contact.pairs import _pair_slots, collision_pairs

    q = jnp.asarray(q, model.dtype)
    if model.geoms is None:
        return jnp.zeros((), model.dtype)
    parts = [jnp.zeros(0, model.dtype)]
    ground = contact.collide_ground and _has_ground_points(model.geoms)
    pairs = contact.collide_pairs and len(collision_pairs(model, contact.exclude).pairs) > 0
    if ground or pairs:
        F = _frames(model, q)
        if ground:
            parts.append(_contact_points(model, F, contact.ground).depth)
        if pairs:
            parts.append(_pair_slots(model, F, contact.exclude, contact.max_pairs).depth)
    return jnp.max(jnp.concatenate(parts), initial=0.0)


def ground_penetration(model: Model, contact, q):
    """The deepest penetration ``max(0, -phi)`` [m] of the shapes' ground contact points at
    ``q`` (:func:`jaxdyn.contact.contact_points`, ``phi`` the signed distance), 0 without any."""
    from .contact import contact_points

    if model.geoms is None or not any(b >= 0 for b in model.geoms.body):
        return jnp.zeros((), model.dtype)
    cp = contact_points(model, q, jnp.zeros(model.nv, model.dtype), contact.ground)
    # depth = max(margin - phi, 0): beyond the margin, the penetration -phi is depth - margin
    return jnp.maximum(jnp.max(cp.depth - cp.margin), 0.0) if cp.depth.shape[0] else jnp.zeros((), model.dtype)


_WARNED_NOTHING_COLLIDES: set = set()


def _warn_if_nothing_collides(model: Model, contact, where: str):
    """One warning per model (by name) when a contact is given for a model without a geom on a
    moving body: nothing can touch anything, and the contact does nothing."""
    import warnings

    if (model.geoms is not None and any(b >= 0 for b in model.geoms.body)) or model.name in _WARNED_NOTHING_COLLIDES:
        return
    _WARNED_NOTHING_COLLIDES.add(model.name)
    warnings.warn(
        f"{where}: a contact was given, but model '{model.name}' has no geom on a moving body, so nothing "
        "collides and the contact does nothing (load the model from MJCF, or a URDF with <collision> "
        "shapes, to collide)",
        UserWarning,
        stacklevel=3,
    )


def _check_policy(name, policy):
    """A policy is called as ``policy(q, qd, t)``: one that cannot take three arguments is named
    here, not by the Python error from inside the scan."""
    import inspect

    try:
        sig = inspect.signature(policy)
    except (TypeError, ValueError):  # builtins and some callables have none: not checked
        return
    try:
        sig.bind(None, None, None)
    except TypeError:
        raise TypeError(
            f"rollout: the {name} policy is called as policy(q, qd, t) (t the step index), but "
            f"{getattr(policy, '__name__', type(policy).__name__)}{sig} cannot take three arguments"
        ) from None


def _controls(name, controls, n, dtype, steps):
    """``(policy, array, steps)`` of a rollout's torques or ctrl: an array ``(T, n)`` (``steps``
    checked or set to ``T``), a callable policy, or ``None``."""
    if controls is None:
        return None, None, steps
    if callable(controls):
        _check_policy(name, controls)
        return controls, None, steps
    u = jnp.asarray(controls, dtype)
    if u.ndim != 2 or u.shape[1] != n:
        raise ValueError(f"rollout: {name} must have shape (T, {n}), got {u.shape}")
    if steps is not None and steps != u.shape[0]:
        raise ValueError(f"rollout: steps={steps} but {name} has {u.shape[0]} rows")
    return None, u, u.shape[0]


def energy(model: Model, q, qd) -> Float[Array, ""]:
    """Total mechanical energy including rotor (armature) kinetic energy."""
    qd = jnp.asarray(qd, model.dtype)
    return kinetic_energy(model, q, qd) + 0.5 * jnp.sum(model.armature * qd * qd) + potential_energy(model, q)
