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
  in velocity (:func:`~jaxdyn.sim.implicit.implicit_joint_friction`; with contact, inside the contact's Newton
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

The package's modules: :mod:`~jaxdyn.sim.options` (:class:`SimOptions`, the integrators' names),
:mod:`~jaxdyn.sim.passive` (actuator limits and passive joint forces),
:mod:`~jaxdyn.sim.dynamics` (:func:`forward_dynamics` with those forces, contact and
constraints), :mod:`~jaxdyn.sim.integrators` (:func:`step`, :func:`rollout` and the steps),
:mod:`~jaxdyn.sim.lie` (the Lie-algebra helpers of RKMK), :mod:`~jaxdyn.sim.implicit` (the
``"implicit_euler"`` velocity solve with contact and joint friction),
:mod:`~jaxdyn.sim.trajectory` (:class:`Trajectory` and what a rollout records) and
:mod:`~jaxdyn.sim.checks` (input checks). Everything public is re-exported here.
"""

from . import checks, dynamics, implicit, integrators, lie, options, passive, trajectory
from .dynamics import energy, forward_dynamics
from .integrators import implicit_damping_model, rollout, step
from .options import (
    DEFAULT_INTEGRATOR,
    FRICTION_VELOCITY_EXPLICIT,
    FRICTION_VELOCITY_IMPLICIT,
    IDEAL,
    INTEGRATORS,
    SimOptions,
    friction_velocity,
)
from .passive import applied_torques, passive_torques
from .trajectory import (
    PENETRATION_FACTOR,
    Trajectory,
    first_nonfinite,
    first_overflow,
    first_penetration,
    ground_penetration,
    penetration,
    penetration_bound,
)

__all__ = [
    "DEFAULT_INTEGRATOR",
    "FRICTION_VELOCITY_EXPLICIT",
    "FRICTION_VELOCITY_IMPLICIT",
    "IDEAL",
    "INTEGRATORS",
    "PENETRATION_FACTOR",
    "SimOptions",
    "Trajectory",
    "applied_torques",
    "energy",
    "first_nonfinite",
    "first_overflow",
    "first_penetration",
    "forward_dynamics",
    "friction_velocity",
    "ground_penetration",
    "implicit_damping_model",
    "passive_torques",
    "penetration",
    "penetration_bound",
    "rollout",
    "step",
]
