"""Forward dynamics with the forces of :class:`~jaxdyn.sim.SimOptions`, contact and the model's
equality constraints; the mass matrix the implicit solves use; the mechanical energy."""

from __future__ import annotations

import dataclasses

import jax.numpy as jnp
from jaxtyping import Array, Float

from .. import actuators, batching
from .. import constraints as _constraints
from ..algorithms.common import Kinematics, full_precision
from ..algorithms.energy import kinetic_energy, potential_energy
from ..algorithms.kinematics import kinematics
from ..model import Model
from .options import SimOptions
from .passive import applied_torques, implicit_friction, passive_torques


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
    kin = None
    if contact is not None:  # the contact and the ABA share one forward kinematics
        kin = kinematics(model, q, qd)  # with the body velocities the contact reads
        fc = contact.wrenches(model, q, qd, contact_state, kinematics=kin)
        f_ext = fc if f_ext is None else f_ext + fc
    m, total = forces(model, q, qd, tau, options, ctrl, act)
    if model.constraints is not None and model.constraints.solved:
        return _constrained(m, q, qd, total, f_ext, options, kin=kin)
    return batching.aba(m, q, qd, total, f_ext, kinematics=kin)


def _constrained(m, q, qd, total, f_ext, options: SimOptions, dt=None, kin=None):
    """The constrained acceleration (:func:`jaxdyn.constraints.solve`) of ``m``'s tree under the
    joint torque ``total`` and ``f_ext`` (``kin``: the :func:`jaxdyn.kinematics` record at ``q``,
    if computed)."""
    tree_m = m.replace(constraints=None)  # the tendons' forces are in total
    a0 = batching.aba(tree_m, q, qd, total, f_ext, kinematics=kin)
    return _constraints.solve(m, q, qd, a0, options.constraints, dt, options.baumgarte).qdd


def constraint_wrenches(model, q, qd, tau, f_ext, dt, options, ctrl, act):
    """``f_ext`` plus the constraint forces as body wrenches, computed as in MuJoCo's step:
    from the acceleration of every other force with the mass matrix of the model (the implicit
    damping, joint friction and contact of the step act afterwards)."""
    m = model if options.gravity else model.replace(gravity=jnp.zeros_like(model.gravity))
    if implicit_friction(model, options) is not None:  # solved in the step's velocity, after
        options = dataclasses.replace(options, friction=False)
    a0 = forward_dynamics(
        model.replace(constraints=model.constraints.tendons_only()), q, qd, tau, f_ext, options, ctrl=ctrl, act=act
    )
    sol = _constraints.solve(m, q, qd, a0, options.constraints, dt, options.baumgarte)
    fc = _constraints.joint_force_wrenches(m, q, sol.rows.J.T @ sol.force)
    return fc if f_ext is None else f_ext + fc


def forces(model: Model, q, qd, tau, options: SimOptions, ctrl=None, act=None):
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


def mass_matrix(model: Model, q, options: SimOptions, kin: Kinematics | None = None):
    """The mass matrix of the step's model (``kin``: the :func:`jaxdyn.kinematics` record at
    ``q``, if computed)."""
    return batching.crba(model, q, kinematics=kin)


def energy(model: Model, q, qd) -> Float[Array, ""]:
    """Total mechanical energy including rotor (armature) kinetic energy."""
    qd = jnp.asarray(qd, model.dtype)
    return kinetic_energy(model, q, qd) + 0.5 * jnp.sum(model.armature * qd * qd) + potential_energy(model, q)
