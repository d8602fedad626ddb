"""The integrators: :func:`step` (explicit and semi-implicit Euler, RK4 in Munthe-Kaas form, the
midpoint variational step, and MuJoCo's Euler step with implicit damping, joint friction and
contact) and :func:`rollout`, one ``lax.scan`` over time."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from .. import actuators, configuration, planner, spatial
from ..algorithms.common import full_precision
from ..algorithms.energy import kinetic_energy, potential_energy
from ..algorithms.innovations import solve_mass_matrix
from ..model import Model
from .checks import (
    check_contact_state,
    check_dt,
    check_integrator,
    check_model,
    check_shape,
    rollout_controls,
    warn_if_nothing_collides,
)
from .dynamics import constraint_wrenches, forces, forward_dynamics
from .implicit import implicit_contact, implicit_joint_friction
from .lie import dexpinv
from .options import DEFAULT_INTEGRATOR, SimOptions
from .passive import applied_torques, implicit_friction
from .trajectory import Trajectory, all_finite, penetration, penetration_bound


def _rk4(model, q, qd, tau, dt, f_ext, options, contact=None, ctrl=None, act=None):
    f = lambda qq, vv: forward_dynamics(model, qq, vv, tau, f_ext, options, contact, ctrl=ctrl, act=act)
    zero = jnp.zeros_like(qd)
    th, vel = zero, qd
    ks, as_ = [], []
    for c in (0.5, 0.5, 1.0, None):
        qi = q if not ks else configuration.integrate(model, q, th)
        a = f(qi, vel)
        k = dexpinv(model, th, vel) if ks else vel
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
        F = forces(model, qm, xi, tau, options, ctrl, act)[1]
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
    (:class:`~jaxdyn.sim.implicit.ContactReport`; ``None`` without contact)."""
    if model.constraints is not None and model.constraints.solved:  # closed loops, couplings: forces join f_ext
        f_ext = constraint_wrenches(model, q, qd, tau, f_ext, dt, options, ctrl, act)
        model = model.replace(constraints=model.constraints.tendons_only())
    b_act = None if ctrl is None else -actuators.velocity_derivative(model, q, qd, ctrl, act)
    md = implicit_damping_model(model, dt, options, b_act)
    stateful = contact is not None and contact.stateful
    if stateful:
        contact_state = contact.init_state(model) if contact_state is None else contact_state
    qd_lin, depth = qd, None
    friction = implicit_friction(model, options)
    if friction is not None:  # the joints' Coulomb friction joins the velocity solve
        options = dataclasses.replace(options, friction=False)
    if contact is None and friction is None:  # every force explicit: ABA of the damped model
        qdd = forward_dynamics(md, q, qd, tau, f_ext, options, ctrl=ctrl, act=act)
    elif contact is None:
        qdd = implicit_joint_friction(md, q, qd, tau, f_ext, dt, friction, options, ctrl, act)
    else:  # the contact's force (and the joints' friction) implicit in velocity
        with planner.site("contact_step"):  # its measured executor thresholds
            qdd, qd_lin, depth = implicit_contact(
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
    check_integrator(integrator)
    check_contact_state(integrator, contact, "step")
    check_dt(dt, "step")
    check_model(model, "step")
    if contact is not None:
        warn_if_nothing_collides(model, contact, "step")
    q = jnp.asarray(q, model.dtype)
    qd = jnp.asarray(qd, model.dtype)
    check_shape("step", "q", q, (model.nq,), model)
    check_shape("step", "qd", qd, (model.nv,), model)
    act_force = act1 = None
    if ctrl is not None:
        acts = actuators.of_model(model)
        if acts.na:
            act = jnp.zeros(acts.na, model.dtype) if act is None else jnp.asarray(act, model.dtype)
            act1 = actuators.next_activation(model, ctrl, act, dt)
            act_force = actuators.early_activation(model, ctrl, act, dt)
    elif act is not None:
        raise ValueError("step: act (actuator activations) is given without ctrl")
    check_shape("step", "tau", tau, (model.nv,), model)
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
    check_integrator(integrator)
    check_contact_state(integrator, contact, "rollout")
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
    check_dt(dt, "rollout")
    check_model(model, "rollout")
    q0 = jnp.asarray(q0, model.dtype)
    qd0 = jnp.asarray(qd0, model.dtype)
    if q0.shape != (model.nq,):
        raise ValueError(f"rollout: q0 must have shape ({model.nq},) for model '{model.name}', got {q0.shape}")
    if qd0.shape != (model.nv,):
        raise ValueError(f"rollout: qd0 must have shape ({model.nv},) for model '{model.name}', got {qd0.shape}")
    tau_policy, tau_xs, steps = rollout_controls("controls", controls_or_policy, model.nv, model.dtype, steps)
    ctrl_policy, ctrl_xs, steps = rollout_controls("ctrl", ctrl, model.nu, model.dtype, steps)
    if ctrl is not None:
        actuators.of_model(model)
    if controls_or_policy is None and ctrl is None:
        raise ValueError("rollout: give torques (controls_or_policy), a ctrl for the actuators, or both")
    if steps is None:
        raise ValueError("rollout: steps is required with a policy")
    h = dt / substeps
    if contact is not None:
        warn_if_nothing_collides(model, contact, "rollout")
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
            check_shape("rollout", "the torque policy's output", tau, (model.nv,), model)
        tau = jnp.zeros(model.nv, model.dtype) if tau is None else applied_torques(model, tau, options)
        u = ctrl_policy(q, qd, t) if ctrl_policy is not None else ctrl_x
        if ctrl_policy is not None:
            check_shape("rollout", "the ctrl policy's output", u, (model.nu,), model)
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
        bad = jnp.where((bad < 0) & ~all_finite(q, qd), k, bad)
        return (q, qd, cs, a, k, bad, deep, over), (q, qd, tau, cs, a)

    if remat:
        body = jax.checkpoint(body)
    bad0 = jnp.where(all_finite(q0, qd0), -1, 0).astype(jnp.int32)
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
