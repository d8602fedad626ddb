"""Actuators: MuJoCo's force generation on joint and tendon transmissions, driven by a control
``ctrl``.

Each actuator ``i`` drives one hinge or slide joint (its dof ``k``) or one tendon ``t`` of
``model.constraints`` (:mod:`jaxdyn.constraints.tendons`: length ``L_t``, Jacobian ``JT_t``)
through the gear ``g_i`` (MuJoCo's ``gear[0]``). Its length, velocity and moment arm (a row
over ``nv``, MuJoCo's ``actuator_moment``) are

    joint:   l_i = g_i q_k,     ldot_i = g_i qd_k,      m_i = g_i e_k,
    tendon:  l_i = g_i L_t,     ldot_i = g_i JT_t qd,   m_i = g_i JT_t,

and its scalar force, MuJoCo's force generation (documentation, "Actuation model"),

    w_i = clamp(ctrl_i, ctrlrange_i)            (when ctrl-limited)
    u_i = w_i  (dyntype none),  or  act_i       (integrator, filter, filterexact)
    F_i = clamp(gain_i u_i + bias_i, forcerange_i)     (when force-limited)
    gain_i = G_i0 + G_i1 l_i + G_i2 ldot_i      (gaintype "fixed": G_i1 = G_i2 = 0)
    bias_i = B_i0 + B_i1 l_i + B_i2 ldot_i      (biastype "none": B = 0)

and its joint torque ``tau = sum_i m_i^T F_i`` (MuJoCo's ``qfrc_actuator``; a joint
transmission scatters ``g_i F_i`` into its dof without forming ``m_i``).
The shortcuts are particular ``G``, ``B``: ``motor`` ``G = [1, 0, 0]``; ``position``
``G = [kp, 0, 0]``, ``B = [0, -kp, -kv]``; ``velocity`` ``G = [kv, 0, 0]``, ``B = [0, 0, -kv]``;
``intvelocity`` the position servo on an integrated activation; ``damper``
``G = [0, 0, -kv]``.

Activation dynamics (``na`` stateful actuators, MuJoCo's ``act``; one Euler step of ``h``):

    integrator:   act' = act + h w
    filter:       act' = act + h (w - act) / tau
    filterexact:  act' = act + (w - act) (1 - exp(-h / tau))

then clamped to ``actrange`` when act-limited. The force uses ``act`` at the start of the step,
or ``act'`` with ``actearly``.

In the ``"implicit_euler"`` step (:mod:`jaxdyn.sim`) the actuators' velocity feedback is
implicit, as MuJoCo's ``implicitfast`` integrator treats it: ``-d tau / d qd``
(:func:`velocity_derivative`: ``-g_i^2 (G_i2 u_i + B_i2)``, zero for an actuator at a bound of
its force range) is added to the joint damping of the implicit solve, so the solve stays ABA
with a modified armature (per sample: it depends on the state and the control); everything
else is explicit. A tendon actuator's velocity feedback couples the tendon's dofs (``-g_i^2
(G_i2 u_i + B_i2) JT_t^T JT_t``, not diagonal) and stays explicit in that step.
"""

from __future__ import annotations

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

DYNTYPES = ("none", "integrator", "filter", "filterexact")


class Actuators(eqx.Module):
    """The actuators of a model (MuJoCo's ``actuator_*`` arrays for joint transmissions).

    Static: ``names`` (``nu``), ``dof`` (the driven dof of each, an index into ``qd``), ``qpos``
    (its index into ``q``), ``tendon`` (the driven tendon, an index into the tendons of
    ``model.constraints``; ``-1`` for a joint transmission, whose ``dof`` and ``qpos`` are then
    ``-1``), ``dyntype`` (one of :data:`DYNTYPES` each), ``actearly``. Arrays:
    ``gear (nu,)``, ``gain (nu, 3)`` and ``bias (nu, 3)`` (the affine coefficients ``G``, ``B``
    of the module docstring), ``ctrl_range``, ``force_range``, ``act_range`` ``(nu, 2)``
    (``[-inf, inf]`` where not limited) and ``time_constant (nu,)`` (``dynprm[0]`` of the
    filters)."""

    names: tuple[str, ...] = eqx.field(static=True)
    dof: tuple[int, ...] = eqx.field(static=True)
    qpos: tuple[int, ...] = eqx.field(static=True)
    dyntype: tuple[str, ...] = eqx.field(static=True)
    actearly: tuple[bool, ...] = eqx.field(static=True)
    tendon: tuple[int, ...] = eqx.field(static=True)
    gear: Float[Array, " nu"]
    gain: Float[Array, "nu 3"]
    bias: Float[Array, "nu 3"]
    ctrl_range: Float[Array, "nu 2"]
    force_range: Float[Array, "nu 2"]
    act_range: Float[Array, "nu 2"]
    time_constant: Float[Array, " nu"]

    def __check_init__(self):
        nu = len(self.names)
        for field in ("dof", "qpos", "dyntype", "actearly", "tendon"):
            if len(getattr(self, field)) != nu:
                raise ValueError(f"Actuators: {field} has {len(getattr(self, field))} entries, names has {nu}")
        for n, d in zip(self.names, self.dyntype):
            if d not in DYNTYPES:
                raise ValueError(f"actuator '{n}': unknown dyntype '{d}' (supported: {', '.join(DYNTYPES)})")

    @property
    def nu(self) -> int:
        return len(self.names)

    @property
    def on_tendons(self) -> tuple[int, ...]:
        """The actuators with a tendon transmission."""
        return tuple(i for i, t in enumerate(self.tendon) if t >= 0)

    @property
    def stateful(self) -> tuple[int, ...]:
        """The actuators with an activation state, in MuJoCo's ``act`` order."""
        return tuple(i for i, d in enumerate(self.dyntype) if d != "none")

    @property
    def na(self) -> int:
        return len(self.stateful)

    def index(self, name: str) -> int:
        """The index of an actuator by name (KeyError listing the actuators if absent)."""
        try:
            return self.names.index(name)
        except ValueError:
            raise KeyError(f"no actuator named '{name}' (actuators: {', '.join(self.names)})") from None


def make_actuators(
    names,
    dof,
    qpos,
    *,
    gear=None,
    gain=None,
    bias=None,
    ctrl_range=None,
    force_range=None,
    act_range=None,
    dyntype=None,
    time_constant=None,
    actearly=None,
    tendon=None,
    dtype=None,
) -> Actuators:
    """:class:`Actuators` from numbers, optional fields filled with a motor's (gear 1, gain 1,
    no bias, unlimited, no activation, joint transmission); ``tendon``: per actuator the index of
    the tendon it drives or ``-1``."""
    dtype = dtype or jnp.result_type(float)
    nu = len(names)

    def arr(x, shape, fill):
        a = np.full(shape, fill, np.float64) if x is None else np.asarray(x, np.float64)
        if a.shape != shape:
            raise ValueError(f"make_actuators: expected shape {shape}, got {a.shape}")
        return jnp.asarray(a, dtype)

    unlimited = np.tile([-np.inf, np.inf], (nu, 1))
    return Actuators(
        names=tuple(names),
        dof=tuple(int(d) for d in dof),
        qpos=tuple(int(i) for i in qpos),
        dyntype=tuple(dyntype) if dyntype is not None else ("none",) * nu,
        actearly=tuple(bool(b) for b in actearly) if actearly is not None else (False,) * nu,
        tendon=tuple(int(t) for t in tendon) if tendon is not None else (-1,) * nu,
        gear=arr(gear, (nu,), 1.0),
        gain=arr(gain, (nu, 3), 0.0) if gain is not None else arr(np.tile([1.0, 0, 0], (nu, 1)), (nu, 3), 0.0),
        bias=arr(bias, (nu, 3), 0.0),
        ctrl_range=arr(unlimited if ctrl_range is None else ctrl_range, (nu, 2), 0.0),
        force_range=arr(unlimited if force_range is None else force_range, (nu, 2), 0.0),
        act_range=arr(unlimited if act_range is None else act_range, (nu, 2), 0.0),
        time_constant=arr(time_constant, (nu,), 1.0),
    )


def of_model(model) -> Actuators:
    """The model's actuators (``ValueError`` naming the model when it has none)."""
    acts = getattr(model, "actuators", None)
    if acts is None or acts.nu == 0:
        raise ValueError(f"model '{model.name}' has no actuators: drive it with joint torques (tau)")
    return acts


def _check_ctrl(acts: Actuators, ctrl):
    if ctrl.shape != (acts.nu,):
        raise ValueError(f"ctrl must have shape ({acts.nu},) (one entry per actuator), got {ctrl.shape}")


def _check_act(acts: Actuators, act):
    if act.shape != (acts.na,):
        raise ValueError(
            f"act must have shape ({acts.na},) (one entry per actuator with activation dynamics), got {act.shape}"
        )


def _transmission(model, acts: Actuators, q, qd):
    """``(l, ldot, JT)``: the actuators' lengths and velocities and, for the tendon actuators
    (:attr:`Actuators.on_tendons`, in that order), their tendons' Jacobians ``(n, nv)``
    (``None`` without tendon actuators)."""
    q = jnp.asarray(q, model.dtype)
    qd = jnp.asarray(qd, model.dtype)
    on = acts.on_tendons
    if not on:
        return acts.gear * q[jnp.asarray(acts.qpos, jnp.int32)], acts.gear * qd[jnp.asarray(acts.dof, jnp.int32)], None
    from .constraints.tendons import kinematics

    L, JT = kinematics(model, q)
    ti = np.asarray([acts.tendon[i] for i in on], np.int32)
    JT = JT[ti]
    x, xd = jnp.zeros(acts.nu, model.dtype), jnp.zeros(acts.nu, model.dtype)
    joint = np.asarray([i for i, t in enumerate(acts.tendon) if t < 0], np.int32)
    if len(joint):
        x = x.at[joint].set(q[np.asarray(acts.qpos)[joint]])
        xd = xd.at[joint].set(qd[np.asarray(acts.dof)[joint]])
    x = x.at[np.asarray(on)].set(L[ti])
    xd = xd.at[np.asarray(on)].set(JT @ qd)
    return acts.gear * x, acts.gear * xd, JT


def lengths(model, q) -> Float[Array, " nu"]:
    """The actuators' lengths ``l`` (MuJoCo's ``actuator_length``)."""
    acts = of_model(model)
    return _transmission(model, acts, q, jnp.zeros(model.nv, model.dtype))[0]


def velocities(model, q, qd) -> Float[Array, " nu"]:
    """The actuators' velocities ``ldot`` (MuJoCo's ``actuator_velocity``)."""
    return _transmission(model, of_model(model), q, qd)[1]


def moments(model, q) -> Float[Array, "nu nv"]:
    """The actuators' moment arms ``m_i`` as rows (MuJoCo's ``actuator_moment``, dense)."""
    acts = of_model(model)
    _, _, JT = _transmission(model, acts, q, jnp.zeros(model.nv, model.dtype))
    out = jnp.zeros((acts.nu, model.nv), model.dtype)
    joint = [i for i, t in enumerate(acts.tendon) if t < 0]
    if joint:
        out = out.at[np.asarray(joint), np.asarray(acts.dof)[joint]].set(acts.gear[np.asarray(joint)])
    if JT is not None:
        on = np.asarray(acts.on_tendons)
        out = out.at[on].set(acts.gear[on][:, None] * JT)
    return out


def _controls(model, acts: Actuators, ctrl, act):
    """``(w, u)``: the clamped control and what the gains multiply (``act`` of the stateful)."""
    ctrl = jnp.asarray(ctrl, model.dtype)
    _check_ctrl(acts, ctrl)
    w = jnp.clip(ctrl, acts.ctrl_range[:, 0], acts.ctrl_range[:, 1])
    u = w
    if acts.na:
        act = jnp.zeros(acts.na, model.dtype) if act is None else jnp.asarray(act, model.dtype)
        _check_act(acts, act)
        u = u.at[jnp.asarray(acts.stateful)].set(act)
    return w, u


def _force(model, acts: Actuators, length, velocity, u):
    """``F``, with the forces of the actuators on a tendon scaled by ``clamp(T) / T`` where their
    total ``T = sum_i g_i F_i`` leaves the tendon's ``actuatorfrcrange`` (as MuJoCo scales them)."""
    gain = acts.gain[:, 0] + acts.gain[:, 1] * length + acts.gain[:, 2] * velocity
    bias = acts.bias[:, 0] + acts.bias[:, 1] * length + acts.bias[:, 2] * velocity
    F = jnp.clip(gain * u + bias, acts.force_range[:, 0], acts.force_range[:, 1])
    on = acts.on_tendons
    if not on:
        return F
    driven = sorted({acts.tendon[i] for i in on})
    sel = list(on)
    slot = np.asarray([driven.index(acts.tendon[i]) for i in sel], np.int32)
    T = jnp.zeros(len(driven), F.dtype).at[slot].add((acts.gear * F)[np.asarray(sel)])
    bounds = model.constraints.tendon_actuator_range[np.asarray(driven)]
    Tc = jnp.clip(T, bounds[:, 0], bounds[:, 1])
    scale = jnp.where(T != 0, Tc / jnp.where(T != 0, T, 1.0), 1.0)
    return F.at[np.asarray(sel)].set(F[np.asarray(sel)] * scale[slot])


def forces(model, q, qd, ctrl, act=None) -> Float[Array, " nu"]:
    """The actuators' scalar forces ``F`` (MuJoCo's ``actuator_force``) at ``(q, qd)`` under
    ``ctrl (nu,)``; ``act (na,)``: the activations of the stateful actuators (``None``: zero),
    read by actuators without ``actearly`` (with it, call :func:`forces` with the updated
    activation, :func:`next_activation`)."""
    acts = of_model(model)
    _, u = _controls(model, acts, ctrl, act)
    length, velocity, _ = _transmission(model, acts, q, qd)
    return _force(model, acts, length, velocity, u)


def joint_torques(model, q, qd, ctrl, act=None) -> Float[Array, " nv"]:
    """The actuators' joint torques ``tau = sum_i m_i^T F_i`` (MuJoCo's ``qfrc_actuator``
    before the joints' ``actuatorfrcrange``, which :mod:`jaxdyn.sim` applies through the
    model's effort limit)."""
    acts = of_model(model)
    _, u = _controls(model, acts, ctrl, act)
    length, velocity, JT = _transmission(model, acts, q, qd)
    gF = acts.gear * _force(model, acts, length, velocity, u)
    if JT is None:
        return jnp.zeros(model.nv, model.dtype).at[jnp.asarray(acts.dof, jnp.int32)].add(gF)
    tau = JT.T @ gF[np.asarray(acts.on_tendons)]
    joint = np.asarray([i for i, t in enumerate(acts.tendon) if t < 0], np.int32)
    if len(joint):
        tau = tau.at[np.asarray(acts.dof)[joint]].add(gF[joint])
    return tau


def velocity_derivative(model, q, qd, ctrl, act=None) -> Float[Array, " nv"]:
    """The diagonal of ``d tau / d qd`` of the joint actuators' torques (joint transmissions
    make it diagonal): ``g_i^2 (G_i2 u_i + B_i2)`` summed per dof, leaving out the actuators whose
    force is at a bound of its force range, as MuJoCo's ``mjd_actuator_vel`` does, and the tendon
    actuators (module docstring). ``implicit_euler`` (:mod:`jaxdyn.sim`) treats ``-h`` times it as
    joint damping, MuJoCo's ``implicitfast``."""
    acts = of_model(model)
    _, u = _controls(model, acts, ctrl, act)
    length, velocity, _ = _transmission(model, acts, q, qd)
    F = _force(model, acts, length, velocity, u)
    clamped = (F <= acts.force_range[:, 0]) | (F >= acts.force_range[:, 1])
    dF = jnp.where(clamped, 0.0, acts.gain[:, 2] * u + acts.bias[:, 2])
    joint = np.asarray([i for i, t in enumerate(acts.tendon) if t < 0], np.int32)
    if not len(joint):
        return jnp.zeros(model.nv, model.dtype)
    return jnp.zeros(model.nv, model.dtype).at[np.asarray(acts.dof)[joint]].add((acts.gear**2 * dF)[joint])


def next_activation(model, ctrl, act, dt) -> Float[Array, " na"]:
    """The activations after a step of ``dt`` (module docstring; MuJoCo's Euler update)."""
    acts = of_model(model)
    ctrl = jnp.asarray(ctrl, model.dtype)
    _check_ctrl(acts, ctrl)
    act = jnp.asarray(act, model.dtype)
    _check_act(acts, act)
    if not acts.na:
        return act
    idx = jnp.asarray(acts.stateful)
    w = jnp.clip(ctrl, acts.ctrl_range[:, 0], acts.ctrl_range[:, 1])[idx]
    tau = acts.time_constant[idx]
    out = []
    for j, i in enumerate(acts.stateful):
        d = acts.dyntype[i]
        if d == "integrator":
            out.append(act[j] + dt * w[j])
        elif d == "filter":
            out.append(act[j] + dt * (w[j] - act[j]) / tau[j])
        else:  # filterexact
            out.append(act[j] + (w[j] - act[j]) * (1.0 - jnp.exp(-dt / tau[j])))
    new = jnp.stack(out)
    return jnp.clip(new, acts.act_range[idx, 0], acts.act_range[idx, 1])


def early_activation(model, ctrl, act, dt):
    """The activation the forces read: ``act``, with the actuators marked ``actearly`` taking
    their value after the step (MuJoCo's ``actearly``)."""
    acts = of_model(model)
    if not acts.na or not any(acts.actearly[i] for i in acts.stateful):
        return act
    new = next_activation(model, ctrl, act, dt)
    early = jnp.asarray([acts.actearly[i] for i in acts.stateful])
    return jnp.where(early, new, act)
