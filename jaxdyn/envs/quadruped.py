"""Quadruped velocity-command tracking ("joystick") on flat ground, with domain randomisation.

The task is the flat-terrain joystick task of the public locomotion benchmarks, with their
reward kernels, penalties, observations and termination:

* MuJoCo Playground, ``Go1JoystickFlatTerrain`` and ``SpotJoystickFlatTerrain`` (Zakka et al.
  2025, "MuJoCo Playground", arXiv:2502.08844): PD position control at 50 Hz, rewards summed,
  multiplied by the control period and clipped at zero;
* legged_gym (Rudin et al. 2022, "Learning to walk in minutes using massively parallel deep
  reinforcement learning", CoRL 2021, PMLR 164:91-100): the same tracking kernels and
  penalties, and the randomised link masses, ground friction and motor strength of
  :func:`randomize`.

Written from the published task descriptions; no code is taken from either project.

Model. A floating-base quadruped with 12 actuated joints (``nq = 19``, ``nv = 18``); the default
is the shipped Solo12 (``jaxdyn/robots/solo12.urdf``, 2.5 kg; Grimminger et al. 2020, "An open
torque-controlled modular robot architecture for legged locomotion research", RA-L 5(2)). Its
URDF has no collision elements, so a sphere of radius ``foot_radius`` is attached at each foot
frame (:func:`attach_foot_spheres`); those four spheres touch the ground plane ``z = 0``
(:class:`jaxdyn.contact.Contact`). Nothing else collides (a fallen robot's base passes through
the ground; the episode has terminated by then).

Actuation. An action ``a`` (12 numbers, clipped to ``[-1, 1]``) sets the joint targets
``q_des = q_default + action_scale * a``. At every physics substep (``dt / substeps``) each
motor applies

    tau = s * clip(kp (q_des - q), -torque_limit, torque_limit) - s kd qd

with ``s`` the motor strength (1 nominal; randomised by :func:`randomize`). The velocity term
``-s kd qd`` is added to the model's joint damping, so the default ``"implicit_euler"``
integrator treats it implicitly in velocity (as MuJoCo's implicit integrators treat actuator
damping); the torque limit bounds the position term. The contact force is implicit in velocity
in the same step (:func:`jaxdyn.sim.step`). With ``contact=Contact(friction="spring", ...)``
(stick-capable friction) the bristles' elongation is part of the state
(:attr:`QuadrupedState.contact_state`).

Observation (``48`` numbers for 12 joints; legged_gym's, in its order; Playground's Go1 has the
same quantities), in the base frame: linear velocity (3), angular velocity (3), projected
gravity ``R^T [0, 0, -1]`` (3), command ``[vx, vy, yaw rate]`` (3), ``q - q_default`` of the
joints (12), joint velocities (12), last action (12). The linear velocity is what the tracking
reward compares with the command (on a robot, a state estimator's).

Observation noise (``obs_noise``, Playground's ``noise_config.level``; 0 by default): each
observed linear velocity, angular velocity, projected gravity, joint position and joint velocity
gets ``obs_noise * scale * u`` with ``u ~ U(-1, 1)`` drawn afresh at every control step, the
scales Playground's Go1 ``noise_config`` (:data:`OBS_NOISE_SCALES`: 0.1 m/s, 0.2 rad/s, 0.05,
0.03 rad, 1.5 rad/s); the command and the last action are exact. The draw comes from the
state's key and step count, so the same state gives the same observation.

Reward, ``max(0, dt * sum_i w_i r_i)`` (``clip_reward=True``, Playground's and legged_gym's
"only positive rewards"), with the terms of :meth:`QuadrupedJoystick.reward_terms`:

==================  ==========================================  =========================
term                r_i                                         default weight w_i
==================  ==========================================  =========================
tracking_lin_vel    ``exp(-|c_xy - v_xy|^2 / sigma)`` (base)    1.0
tracking_ang_vel    ``exp(-(c_yaw - omega_z)^2 / sigma)``       0.5
lin_vel_z           ``v_z^2`` (world)                           -0.5
ang_vel_xy          ``|omega_xy|^2`` (world)                    -0.05
orientation         ``|g_xy|^2`` (projected gravity)            -5.0
torques             ``|tau|_2 + |tau|_1``                       -2e-4
action_rate         ``|a - a_prev|^2``                          -0.01
termination         1 on the terminating step                   -1.0
==================  ==========================================  =========================

with ``sigma = tracking_sigma = 0.25`` (both benchmarks' values). Perfect tracking with the
base level and still gives the maximum ``1.5 dt`` per step.

Playground's gait-shaping terms are computed too (reported in ``info["reward_terms"]``) and
weighted 0 by default, so the default task is the one above; :data:`GAIT_REWARD_WEIGHTS` holds
Playground's ``Go1JoystickFlatTerrain`` weights for them, for ``reward_weights=``. A foot is in
contact when its frame is at most ``foot_radius`` above the ground (its sphere touches the
plane); ``|c|`` is the command's norm, ``t_air`` a foot's time since it left the ground, counted
in control steps, and a foot's first contact is the step it lands after a swing (in contact now
or at the previous step, with ``t_air > 0``):

==================  ============================================================  =========
term                r_i                                                           Playground
==================  ============================================================  =========
pose                ``exp(-sum_j w_j (q_j - q_default,j)^2)``, ``w = (1, 1, 0.1)``  0.5
                    per leg (abduction, hip, knee)
stand_still         ``sum_j |q_j - q_default,j|`` if ``|c| < 0.01``                 -1.0
energy              ``sum_j |qd_j| |tau_j|``                                       -1e-3
feet_slip           ``sum_f |v_f,xy|^2`` over the feet in contact, if ``|c| > 0.01``  -0.1
feet_clearance      ``sum_f |z_f - max_foot_height| |v_f,xy|^(1/2)``                -2.0
feet_height         ``sum_f (peak_f / max_foot_height - 1)^2`` at first contact,     -0.2
                    if ``|c| > 0.01`` (``peak_f``: the swing's highest ``z_f``)
feet_air_time       ``sum_f (t_air,f - 0.1)`` at first contact, if ``|c| > 0.01``    0.1
==================  ============================================================  =========

with ``z_f`` the height of the foot frame above the ground and ``v_f`` its world velocity.
``max_foot_height`` defaults to 0.075 m: Playground's 0.1 m for the Go1 scaled by the ratio of
the legs' segment lengths (Solo12 0.16 m, Go1 0.213 m). Playground's ``dof_pos_limits`` is
computed too (weighted 0 by default, -1 in :data:`GAIT_REWARD_WEIGHTS`): ``sum_j
max(0, l_j - q_j) + max(0, q_j - u_j)`` over the soft limits ``[l_j, u_j]``, the model's joint
range shrunk about its middle to 0.95 of its width (Playground's ``soft_joint_pos_limit_factor``);
0 for a joint without finite limits (the shipped Solo12's URDF gives +-10 rad).

Termination: the base's up axis points below the horizon (``R[2, 2] < 0``, flipped), the base
origin is lower than ``min_height``, a joint turns faster than ``max_joint_speed`` (default 200
rad/s), or the state is not finite. The speed bound is a safety net for a physics step that
runs away: under the default PD gains a motor's torque limit holds a joint at ``torque_limit /
kd = 27`` rad/s against its damping, and under saturated random actions on randomised robots
no joint exceeded 27 rad/s in 128 000 transitions (docs/contact.md, "The velocity solve"),
while one observation from a runaway step is enough to spoil PPO's observation statistics.

Episodes start in the default pose with the feet on the ground, a random heading
``U(-pi, pi)`` and a base twist ``U(-reset_velocity, reset_velocity)`` per component (Playground's
Go1 reset); the command ``[vx, vy, yaw rate]`` is drawn uniformly from ``command_range`` and held
for the episode.

Domain randomisation. :class:`QuadrupedParams` holds everything that :func:`randomize` draws
(the model with scaled link masses and ground friction, the contact law, the motor strengths);
:meth:`QuadrupedJoystick.with_params` puts a draw into an environment, so a batch of
differently built robots steps with one ``vmap``::

    params = randomize(env, key, 1024)  # leading axis 1024 on every leaf
    step = jax.vmap(lambda p, s, a: env.with_params(p).step(s, a))
"""

from __future__ import annotations

from typing import NamedTuple, cast

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .. import geometry, sim, spatial
from ..algorithms.kinematics import body_velocities, forward_kinematics
from ..contact import Contact, ContactParams, ContactState, Ground, with_invweights
from ..io.urdf import load_urdf
from ..model import Model
from .core import Env, EnvState, _finite, raw_key

SOLO12_FEET = ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT")
# hip abduction, hip flexion, knee per leg (FL, FR, HL, HR): the standing pose of the ODRI Solo12
SOLO12_STAND = (0.0, 0.8, -1.6, 0.0, 0.8, -1.6, 0.0, -0.8, 1.6, 0.0, -0.8, 1.6)
# peak joint torque of Solo12 (Grimminger et al. 2020: 0.025 N m/A x 9:1 gearing x 12 A)
SOLO12_TORQUE = 2.7

REWARD_WEIGHTS = (
    ("tracking_lin_vel", 1.0),
    ("tracking_ang_vel", 0.5),
    ("lin_vel_z", -0.5),
    ("ang_vel_xy", -0.05),
    ("orientation", -5.0),
    ("torques", -2e-4),
    ("action_rate", -0.01),
    ("termination", -1.0),
    ("pose", 0.0),
    ("stand_still", 0.0),
    ("energy", 0.0),
    ("feet_slip", 0.0),
    ("feet_clearance", 0.0),
    ("feet_height", 0.0),
    ("feet_air_time", 0.0),
    ("dof_pos_limits", 0.0),
)
# MuJoCo Playground's Go1JoystickFlatTerrain weights of the gait-shaping terms (module docstring)
GAIT_REWARD_WEIGHTS = {
    "pose": 0.5,
    "stand_still": -1.0,
    "energy": -1e-3,
    "feet_slip": -0.1,
    "feet_clearance": -2.0,
    "feet_height": -0.2,
    "feet_air_time": 0.1,
    "dof_pos_limits": -1.0,
}
# MuJoCo Playground's Go1 observation noise scales (``noise_config.scales``) for the observed
# quantities in the observation's order: linear velocity, angular velocity, projected gravity,
# joint positions, joint velocities (the command and the last action are not noised)
OBS_NOISE_SCALES = {"linvel": 0.1, "gyro": 0.2, "gravity": 0.05, "joint_pos": 0.03, "joint_vel": 1.5}
# the soft joint limits of ``dof_pos_limits``: the range shrunk about its middle to this fraction
SOFT_LIMIT_FACTOR = 0.95
# abduction, hip, knee weights of the pose term, per leg
_POSE_WEIGHTS = (1.0, 1.0, 0.1) * 4


def attach_foot_spheres(model: Model, feet, radius: float, friction: float = 1.0) -> Model:
    """``model`` with one collision sphere of ``radius`` centred on each frame named in ``feet``
    (fixed to the frame's body), replacing ``model.geoms``."""
    missing = [f for f in feet if f not in model.frame_names]
    if missing:
        raise ValueError(
            f"attach_foot_spheres: feet {missing} are not frames of '{model.name}' "
            f"(frames: {', '.join(model.frame_names)})"
        )
    if not radius > 0:
        raise ValueError(f"attach_foot_spheres: radius must be positive, got {radius!r}")
    idx = [model.frame_names.index(f) for f in feet]
    n = len(idx)
    geoms = geometry.make_geoms(
        type=[geometry.SPHERE] * n,
        size=[[radius, 0.0, 0.0]] * n,
        body=[model.topology.frame_bodies[i] for i in idx],
        pos=np.asarray(model.frame_p)[idx],
        R=np.broadcast_to(np.eye(3), (n, 3, 3)),
        friction=[[friction, 0.005, 1e-4]] * n,
        contype=[1] * n,
        conaffinity=[1] * n,
        names=tuple(feet),
        dtype=model.dtype,
    )
    return with_invweights(model.replace(geoms=geoms))


class QuadrupedState(EnvState):
    """:class:`~jaxdyn.envs.EnvState` plus the previous action (observed, and penalised by
    ``action_rate``), the feet's gait record (``(4,)`` each: ``feet_air_time`` [s] since each
    foot left the ground, ``last_contact``, ``swing_peak`` the highest foot height of the
    current swing [m]; module docstring) and the contact's state (the bristles of
    ``Contact(friction="spring")``, :class:`jaxdyn.contact.ContactState`, relaxed at every
    reset; ``None`` for a contact without state). ``goal`` holds the command ``[vx, vy, yaw
    rate]``."""

    last_action: jax.Array
    feet_air_time: jax.Array
    last_contact: jax.Array
    swing_peak: jax.Array
    contact_state: ContactState | None = None


class BaseMotion(NamedTuple):
    """The base's motion as the observation and the reward read it: ``linvel`` ``(3,)`` and
    ``gyro`` ``(3,)`` the linear and angular velocity in base axes, ``gravity`` ``(3,)`` the
    unit gravity direction in base axes (``R^T [0, 0, -1]``), ``linvel_world`` and
    ``angvel_world`` ``(3,)`` the same velocities in world axes."""

    linvel: jax.Array
    gyro: jax.Array
    gravity: jax.Array
    linvel_world: jax.Array
    angvel_world: jax.Array


class QuadrupedParams(eqx.Module):
    """What :func:`randomize` draws per environment: the model (link masses and inertias, foot
    friction ``model.geoms.friction[:, 0]``), the contact law and the motor strengths ``(nu,)``."""

    model: Model
    contact: Contact
    motor_strength: jax.Array


class QuadrupedJoystick(Env):
    """Velocity-command tracking for a floating-base quadruped (module docstring).

    Args (besides :class:`~jaxdyn.envs.Env`'s ``dt``, ``substeps``, ``integrator``, ``options``,
    ``max_steps``, ``action_scale``, ``dtype``):
      model: a floating-base model with 12 actuated joints; default Solo12. Without geoms, foot
        spheres are attached at the ``feet`` frames.
      feet: the four foot frame names (for the spheres and for drawing contacts).
      default_pose: the 12 joint angles of the standing pose (action 0).
      foot_radius: radius of the foot spheres [m]; a foot whose frame is at most this high above
        the ground is in contact for the gait terms.
      max_foot_height: target swing height of the feet for ``feet_clearance`` and
        ``feet_height`` [m].
      kp, kd: PD gains [N m/rad], [N m s/rad].
      torque_limit: bound on the position term of the PD torque [N m].
      friction: foot-ground Coulomb coefficient (nominal; see :func:`randomize`).
      contact: the :class:`~jaxdyn.contact.Contact`; default: ground ``z = 0``, the default law
        with the friction regularisation ``2 h mu g`` of the physics step ``h`` (docs/contact.md).
      command_range: ``((vx_lo, vx_hi), (vy_lo, vy_hi), (yaw_lo, yaw_hi))`` [m/s, rad/s].
      tracking_sigma: width of the tracking kernels.
      reward_weights: ``{term: weight}`` overriding :data:`REWARD_WEIGHTS`.
      clip_reward: clip the step reward at zero below.
      min_height: base height below which the episode terminates [m].
      max_joint_speed: joint speed above which the episode terminates [rad/s].
      reset_velocity: half-width of the uniform draw of the initial base twist.
      obs_noise: level of the observation noise (module docstring; 1 is Playground's).
    """

    contact: Contact
    motor_strength: jax.Array
    feet: tuple = eqx.field(static=True)
    default_pose: tuple = eqx.field(static=True)
    stand_height: float = eqx.field(static=True)
    foot_radius: float = eqx.field(static=True)
    max_foot_height: float = eqx.field(static=True)
    kp: float = eqx.field(static=True)
    kd: float = eqx.field(static=True)
    torque_max: float = eqx.field(static=True)
    command_range: tuple = eqx.field(static=True)
    tracking_sigma: float = eqx.field(static=True)
    reward_weights: tuple = eqx.field(static=True)
    clip_reward: bool = eqx.field(static=True)
    min_height: float = eqx.field(static=True)
    max_joint_speed: float = eqx.field(static=True)
    reset_velocity: float = eqx.field(static=True)
    obs_noise: float = eqx.field(static=True)

    def __init__(
        self,
        model: Model | None = None,
        *,
        feet=SOLO12_FEET,
        default_pose=SOLO12_STAND,
        foot_radius: float = 0.02,
        max_foot_height: float = 0.075,
        kp: float = 5.0,
        kd: float = 0.1,
        torque_limit: float = SOLO12_TORQUE,
        friction: float = 1.0,
        contact: Contact | None = None,
        dt: float = 0.02,
        substeps: int = 5,
        integrator: str = sim.DEFAULT_INTEGRATOR,
        options: sim.SimOptions = sim.SimOptions(),
        max_steps: int = 1000,
        action_scale: float = 0.3,
        command_range=((-0.5, 0.5), (-0.3, 0.3), (-1.0, 1.0)),
        tracking_sigma: float = 0.25,
        reward_weights: dict | None = None,
        clip_reward: bool = True,
        min_height: float = 0.1,
        max_joint_speed: float = 200.0,
        reset_velocity: float = 0.5,
        obs_noise: float = 0.0,
        dtype=None,
    ):
        if model is None:
            from ..robots import robot_path

            model = load_urdf(robot_path("solo12"), floating_base=True, dtype=dtype)
        elif dtype is not None:
            model = model.astype(dtype)
        if not model.floating_base or model.nv != 18 or model.nq != 19:
            raise ValueError(
                f"QuadrupedJoystick: model must have a floating base and 12 joints (nq=19, nv=18), got "
                f"'{model.name}' with nq={model.nq}, nv={model.nv}, floating_base={model.floating_base}"
            )
        feet = tuple(feet)
        if len(feet) != 4:
            raise ValueError(f"QuadrupedJoystick: feet must name 4 frames, got {feet!r}")
        assert model.geoms is not None  # make_model gives every model its Geoms (empty without shapes)
        if model.geoms.ng == 0:
            model = attach_foot_spheres(model, feet, foot_radius, friction)
        default_pose = tuple(float(x) for x in default_pose)
        if len(default_pose) != 12:
            raise ValueError(f"QuadrupedJoystick: default_pose must have 12 joint angles, got {len(default_pose)}")
        for name, v in (
            ("kp", kp),
            ("foot_radius", foot_radius),
            ("max_foot_height", max_foot_height),
            ("torque_limit", torque_limit),
            ("tracking_sigma", tracking_sigma),
            ("max_joint_speed", max_joint_speed),
        ):
            if not (isinstance(v, (int, float)) and v > 0):
                raise ValueError(f"QuadrupedJoystick: {name} must be a positive number, got {v!r}")
        if not (isinstance(obs_noise, (int, float)) and obs_noise >= 0):
            raise ValueError(f"QuadrupedJoystick: obs_noise must be a non-negative number, got {obs_noise!r}")
        if not (isinstance(kd, (int, float)) and kd >= 0):
            raise ValueError(f"QuadrupedJoystick: kd must be a non-negative number, got {kd!r}")
        if kd > 0 and not options.damping:
            raise ValueError("QuadrupedJoystick: options.damping=False would drop the PD velocity gain kd")
        cr = tuple((float(lo), float(hi)) for lo, hi in command_range)
        if len(cr) != 3 or any(lo > hi for lo, hi in cr):
            raise ValueError(f"QuadrupedJoystick: command_range must be 3 (low, high) pairs, got {command_range!r}")
        weights = dict(REWARD_WEIGHTS)
        unknown = set(reward_weights or {}) - set(weights)
        if unknown:
            raise ValueError(f"QuadrupedJoystick: unknown reward terms {sorted(unknown)}; known: {', '.join(weights)}")
        weights.update(reward_weights or {})
        if contact is None:
            h = dt / substeps
            # the feet against the ground only: the foot spheres never meet one another
            contact = Contact(
                # the field's converter takes a float
                params=ContactParams(friction_velocity=max(2e-2, 2 * h * friction * 9.81)),  # type: ignore[arg-type]
                collide_pairs=False,
            )
        self.model = model
        self.dt, self.substeps, self.integrator, self.options = dt, substeps, integrator, options
        self.max_steps, self.actuated, self.action_scale = max_steps, tuple(range(6, 18)), action_scale
        self.contact = contact
        self.motor_strength = jnp.ones(12, model.dtype)
        self.feet, self.default_pose = feet, default_pose
        self.foot_radius, self.max_foot_height = float(foot_radius), float(max_foot_height)
        self.kp, self.kd, self.torque_max = float(kp), float(kd), float(torque_limit)
        self.command_range, self.tracking_sigma = cr, float(tracking_sigma)
        self.reward_weights = tuple(weights.items())
        self.clip_reward, self.min_height, self.reset_velocity = bool(clip_reward), float(min_height), reset_velocity
        self.max_joint_speed = float(max_joint_speed)
        self.obs_noise = float(obs_noise)
        # base height that puts the lowest foot sphere on the ground in the default pose
        q0 = np.zeros(19)
        q0[3], q0[7:] = 1.0, default_pose
        from ..contact import contact_points

        def lowest(q):  # jitted: one small program, not hundreds of eager operations
            cp = contact_points(model, q, jnp.zeros(18, model.dtype))
            return jnp.min(cp.centre[:, 2] - cp.radius)

        self.stand_height = float(-jax.jit(lowest)(jnp.asarray(q0, model.dtype)))
        if self.stand_height <= self.min_height:
            raise ValueError(
                f"QuadrupedJoystick: the default pose stands the base {self.stand_height:.3f} m high, not above "
                f"min_height={self.min_height}"
            )

    # -- parameters (domain randomisation) -------------------------------------------------------

    @property
    def params(self) -> QuadrupedParams:
        """The nominal parameters of this environment."""
        return QuadrupedParams(self.model, self.contact, self.motor_strength)

    def with_params(self, params: QuadrupedParams) -> QuadrupedJoystick:
        """This environment with ``params`` (e.g. one draw of :func:`randomize`, inside ``vmap``)."""
        return eqx.tree_at(
            lambda e: (e.model, e.contact, e.motor_strength),
            self,
            (params.model, params.contact, params.motor_strength),
        )

    # -- bounds ----------------------------------------------------------------------------------

    @property
    def torque_limit(self) -> jax.Array:
        """Bound on the position term of the PD torque at nominal strength, per joint."""
        return jnp.full(12, self.torque_max, self.model.dtype)

    @property
    def q_default(self) -> jax.Array:
        return jnp.asarray(self.default_pose, self.model.dtype)

    def weight(self, term: str) -> float:
        return dict(self.reward_weights)[term]

    # -- the task ---------------------------------------------------------------------------------

    def initial(self, key):
        dt = self.model.dtype
        k1, k2, k3 = jax.random.split(key, 3)
        lo, hi = (jnp.asarray([r[i] for r in self.command_range], dt) for i in (0, 1))
        command = jax.random.uniform(k1, (3,), dt, lo, hi)
        yaw = jax.random.uniform(k2, (), dt, -jnp.pi, jnp.pi)
        quat = jnp.stack([jnp.cos(yaw / 2), jnp.zeros((), dt), jnp.zeros((), dt), jnp.sin(yaw / 2)])
        q = jnp.concatenate([jnp.asarray([0.0, 0.0, self.stand_height], dt), quat, self.q_default])
        v = self.reset_velocity
        qd = jnp.zeros(18, dt).at[:6].set(jax.random.uniform(k3, (6,), dt, -v, v))
        return q, qd, command

    def reset(self, key) -> QuadrupedState:
        s = super().reset(key)
        return QuadrupedState(
            **{f: getattr(s, f) for f in s.__dataclass_fields__},
            last_action=jnp.zeros(12, s.q.dtype),
            feet_air_time=jnp.zeros(4, s.q.dtype),
            last_contact=jnp.zeros(4, bool),
            swing_peak=jnp.zeros(4, s.q.dtype),
            contact_state=self.contact.init_state(self.model),
        )

    def base_rotation(self, q) -> jax.Array:
        return spatial.quat_to_rotation(q[3:7])

    def base_motion(self, q, qd) -> BaseMotion:
        """The base's motion that the observation and the reward read (:class:`BaseMotion`):
        here from the state, at the base's origin."""
        R = self.base_rotation(q)
        return BaseMotion(
            linvel=qd[3:6], gyro=qd[0:3], gravity=-R[2], linvel_world=R @ qd[3:6], angvel_world=R @ qd[0:3]
        )

    def observation(self, state: QuadrupedState) -> jax.Array:  # type: ignore[override]  # its own state type
        b = self.base_motion(state.q, state.qd)
        obs = jnp.concatenate(
            [b.linvel, b.gyro, b.gravity, state.goal, state.q[7:] - self.q_default, state.qd[6:], state.last_action]
        )
        if self.obs_noise == 0:
            return obs
        u = jax.random.uniform(jax.random.fold_in(state.key, state.steps), obs.shape, obs.dtype, -1.0, 1.0)
        return obs + self.obs_noise * self.observation_noise_scales() * u

    def observation_noise_scales(self) -> jax.Array:
        """``(48,)`` the noise scale of each observed number, in the observation's order
        (:data:`OBS_NOISE_SCALES`; 0 for the command and the last action)."""
        k = OBS_NOISE_SCALES
        parts = [(k["linvel"], 3), (k["gyro"], 3), (k["gravity"], 3), (0.0, 3), (k["joint_pos"], 12)]
        parts += [(k["joint_vel"], 12), (0.0, 12)]
        return jnp.asarray(np.concatenate([np.full(n, v) for v, n in parts]), self.model.dtype)

    def soft_limits(self) -> tuple[jax.Array, jax.Array]:
        """``(lower (12,), upper (12,))``: the joints' soft position limits of ``dof_pos_limits``
        (module docstring); infinite where the model's range is not finite at both ends."""
        lo, hi = self.model.q_lower[7:], self.model.q_upper[7:]
        finite = jnp.isfinite(lo) & jnp.isfinite(hi)
        mid = jnp.where(finite, (lo + hi) / 2, 0.0)
        half = jnp.where(finite, (hi - lo) / 2 * SOFT_LIMIT_FACTOR, jnp.inf)
        return mid - half, mid + half

    def feet_kinematics(self, q, qd) -> tuple[jax.Array, jax.Array]:
        """Height above the contact's ground ``(4,)`` (along its normal) and the squared speed
        along the ground ``(4,)`` of the foot frames' origins."""
        m = self.model
        idx = np.asarray([m.frame_names.index(f) for f in self.feet])
        body = np.asarray(m.topology.frame_bodies)[idx]
        X = forward_kinematics(m, q)
        V = body_velocities(m, q, qd)  # body frame [omega; v]
        r = m.frame_p[idx]  # the foot frames' origins in their bodies
        R = X.R[body]
        p = X.p[body] + jnp.einsum("fij,fj->fi", R, r)
        v = jnp.einsum("fij,fj->fi", R, V[body, 3:] + jnp.cross(V[body, :3], r))
        ground = cast(Ground, self.contact.ground)  # a plane: the environment's ground
        n = jnp.asarray(ground.normal, m.dtype)
        n = n / jnp.sqrt(jnp.sum(n**2))
        vn = v @ n
        return p @ n - jnp.asarray(ground.height, m.dtype), jnp.sum(v**2, axis=1) - vn**2

    def gait(self, state: QuadrupedState, next_q, next_qd) -> dict:
        """The feet's gait record after the step to ``(next_q, next_qd)`` (module docstring):
        ``contact``, ``first_contact``, ``air_time`` (counted through this step),
        ``swing_peak`` (through this step), the foot heights ``z`` and squared speeds along the
        ground ``slip`` (:meth:`feet_kinematics`); the state's fields for the next step are
        ``air_time`` and ``swing_peak`` zeroed where in contact, and ``contact``."""
        z, slip = self.feet_kinematics(next_q, next_qd)
        contact = z <= self.foot_radius
        first = (state.feet_air_time > 0) & (contact | state.last_contact)
        return {
            "contact": contact,
            "first_contact": first,
            "air_time": state.feet_air_time + self.dt,
            "swing_peak": jnp.maximum(state.swing_peak, z),
            "z": z,
            "slip": slip,
        }

    def reward_terms(self, state: QuadrupedState, action, tau, next_state: QuadrupedState, gait=None) -> dict:
        """The unweighted reward terms of the transition (module docstring's tables). ``gait``:
        :meth:`gait` of the transition, if the caller has it already."""
        q, qd, c = next_state.q, next_state.qd, next_state.goal
        b = self.base_motion(q, qd)
        sig = self.tracking_sigma
        dq = q[7:] - self.q_default
        moving = jnp.sqrt(jnp.sum(c**2)) > 0.01
        f = self.gait(state, q, qd) if gait is None else gait
        first = f["first_contact"].astype(q.dtype)
        slip = jnp.maximum(f["slip"], 0.0)
        # |v| ** (1/2) with a finite derivative at rest
        root_speed = jnp.where(slip > 0, jnp.where(slip > 0, slip, 1.0) ** 0.25, 0.0)
        h = self.max_foot_height
        lower, upper = self.soft_limits()
        return {
            "tracking_lin_vel": jnp.exp(-jnp.sum((c[:2] - b.linvel[:2]) ** 2) / sig),
            "tracking_ang_vel": jnp.exp(-((c[2] - b.gyro[2]) ** 2) / sig),
            "lin_vel_z": b.linvel_world[2] ** 2,
            "ang_vel_xy": jnp.sum(b.angvel_world[:2] ** 2),
            "orientation": jnp.sum(b.gravity[:2] ** 2),
            "torques": jnp.sqrt(jnp.sum(tau**2)) + jnp.sum(jnp.abs(tau)),
            "action_rate": jnp.sum((action - state.last_action) ** 2),
            "termination": self.terminated(next_state).astype(q.dtype),
            "pose": jnp.exp(-jnp.sum(jnp.asarray(_POSE_WEIGHTS, q.dtype) * dq**2)),
            "stand_still": jnp.where(moving, 0.0, jnp.sum(jnp.abs(dq))),
            "energy": jnp.sum(jnp.abs(qd[6:]) * jnp.abs(tau)),
            "feet_slip": jnp.where(moving, jnp.sum(jnp.where(f["contact"], slip, 0.0)), 0.0),
            "feet_clearance": jnp.sum(jnp.abs(f["z"] - h) * root_speed),
            "feet_height": jnp.where(moving, jnp.sum((f["swing_peak"] / h - 1.0) ** 2 * first), 0.0),
            "feet_air_time": jnp.where(moving, jnp.sum((f["air_time"] - 0.1) * first), 0.0),
            "dof_pos_limits": jnp.sum(jnp.maximum(lower - q[7:], 0.0) + jnp.maximum(q[7:] - upper, 0.0)),
        }

    def total_reward(self, terms: dict) -> jax.Array:
        """``dt * sum_i w_i r_i``, clipped at zero below with ``clip_reward``."""
        r = self.dt * sum(w * terms[k] for k, w in self.reward_weights)
        return jnp.maximum(r, 0.0) if self.clip_reward else r

    def reward(self, state, action, tau, next_state):
        act = np.asarray(self.actuated)
        return self.total_reward(self.reward_terms(state, action, tau[act], next_state))

    def terminated(self, state) -> jax.Array:
        R = self.base_rotation(state.q)
        fast = jnp.max(jnp.abs(state.qd[6:])) > self.max_joint_speed
        return (R[2, 2] < 0.0) | (state.q[2] < self.min_height) | fast | ~_finite(state.q, state.qd)

    def step_model(self) -> Model:
        """The model that the physics steps: the motors' velocity gain ``s kd`` added to the
        joints' damping (implicit in velocity, module docstring)."""
        act = np.asarray(self.actuated)
        return self.model.replace(damping=self.model.damping.at[act].add(self.motor_strength * self.kd))

    def actuation(self, model: Model, q, qd, action) -> tuple[jax.Array | None, jax.Array | None, jax.Array]:
        """What drives one physics step under the clipped ``action``: ``(tau, ctrl, applied)``,
        the joint torque and the actuator controls given to :func:`jaxdyn.sim.step` (either may
        be ``None``) and the joint torque ``(nv,)`` the joints receive (``info["tau"]``, the
        reward's torque). Here the PD law of the module docstring, its velocity term in
        :meth:`step_model`'s damping."""
        act = np.asarray(self.actuated)
        s = self.motor_strength
        target = self.q_default + self.action_scale * action
        zero = jnp.zeros(self.model.nv, self.model.dtype)
        tau = zero.at[act].set(s * jnp.clip(self.kp * (target - q[7:]), -self.torque_max, self.torque_max))
        return tau, None, tau.at[act].add(-s * self.kd * qd[6:])

    def transition(self, state: QuadrupedState, action):  # type: ignore[override]  # its own state type
        """One control step without automatic reset: ``substeps`` physics steps of
        :meth:`step_model`, driven by :meth:`actuation` recomputed at each (module docstring).
        ``info`` holds ``tau`` (the joint torque ``(nv,)`` of the last substep) and
        ``reward_terms``."""
        action = self._check_action(action)
        a = jnp.clip(action, -1.0, 1.0)
        act = np.asarray(self.actuated)
        model = self.step_model()
        h = self.dt / self.substeps
        zero = jnp.zeros(self.model.nv, self.model.dtype)

        def sub(_, x):
            q, qd, _, cs = x
            tau, ctrl, applied = self.actuation(model, q, qd, a)
            out = sim.step(model, q, qd, tau, h, self.integrator, None, self.options, self.contact, cs, ctrl=ctrl)
            cs1 = out[2] if self.contact.stateful else cs
            return out[0], out[1], applied, cs1

        cs0 = state.contact_state
        if self.contact.stateful and cs0 is None:
            raise ValueError(
                "QuadrupedJoystick: the contact has state (friction='spring') but the state has none; "
                "start from this environment's reset"
            )
        # a loop, not an unrolled Python for: one copy of the dynamics in the compiled program
        q, qd, tau, cs = jax.lax.fori_loop(0, self.substeps, sub, (state.q, state.qd, zero, cs0))
        steps = state.steps + 1
        bad = jnp.where((state.nonfinite_step < 0) & ~_finite(q, qd), steps, state.nonfinite_step)
        bound = sim.penetration_bound(self.model, self.contact)
        too_deep = (sim.ground_penetration(self.model, self.contact, q) > bound) if bound is not None else False
        deep = jnp.where((state.penetration_step < 0) & too_deep, steps, state.penetration_step)
        f = self.gait(state, q, qd)
        off = ~f["contact"]
        nxt = eqx.tree_at(
            lambda s: (
                s.q,
                s.qd,
                s.t,
                s.steps,
                s.nonfinite_step,
                s.penetration_step,
                s.last_action,
                s.feet_air_time,
                s.last_contact,
                s.swing_peak,
            ),
            state,
            (
                q,
                qd,
                state.t + 1,
                steps,
                bad,
                deep,
                a,
                jnp.where(off, f["air_time"], 0.0),
                f["contact"],
                jnp.where(off, f["swing_peak"], 0.0),
            ),
        )
        if self.contact.stateful:
            nxt = eqx.tree_at(lambda s: s.contact_state, nxt, cs)
        terms = self.reward_terms(state, a, tau[act], nxt, f)
        r = jnp.asarray(self.total_reward(terms), self.model.dtype)
        nxt = eqx.tree_at(lambda s: s.episode_return, nxt, state.episode_return + r)
        term = jnp.asarray(self.terminated(nxt), bool) | too_deep  # implausible contact ends the episode
        return nxt, r, term, {"tau": tau, "reward_terms": terms}


_RANGES = dict(mass_scale=(0.8, 1.2), friction=(0.4, 1.25), motor_strength=(0.8, 1.2))


def _check_ranges(who, ranges):
    unknown = set(ranges) - set(_RANGES)
    if unknown:
        raise ValueError(f"{who}: unknown ranges {sorted(unknown)}; known: {', '.join(_RANGES)}")
    out = dict(_RANGES, **ranges)
    for name, r in out.items():
        if len(r) != 2 or not 0 <= r[0] <= r[1]:
            raise ValueError(f"{who}: {name} must be a (low, high) pair with 0 <= low <= high, got {r!r}")
    return out


def sample_params(params: QuadrupedParams, key, **ranges) -> QuadrupedParams:
    """One random variation of ``params`` (legged_gym's randomisation), uniformly:

    * ``mass_scale`` (default ``(0.8, 1.2)``): every link's mass and rotational inertia scaled
      by its own factor (centres of mass kept: a uniformly denser link);
    * ``friction`` (default ``(0.4, 1.25)``): one foot-ground friction coefficient for all
      feet (``model.geoms.friction[:, 0]`` and the contact's ground's friction, so that it
      holds whichever of the two the contact reads: the larger, or the floor's where a scene
      gives the floor priority);
    * ``motor_strength`` (default ``(0.8, 1.2)``): each motor's strength multiplied by its own
      factor (scales the PD torque and its limit).

    Pass ``(1, 1)`` to keep a quantity nominal.
    """
    r = _check_ranges("sample_params", ranges)
    model = params.model
    dt = model.dtype
    k1, k2, k3 = jax.random.split(raw_key(key), 3)
    s = jax.random.uniform(k1, (model.nb,), dt, *r["mass_scale"])
    mu = jax.random.uniform(k2, (), dt, *r["friction"])
    strength = params.motor_strength * jax.random.uniform(k3, params.motor_strength.shape, dt, *r["motor_strength"])
    assert model.geoms is not None  # the environment's model has its foot spheres
    geoms = eqx.tree_at(lambda g: g.friction, model.geoms, model.geoms.friction.at[:, 0].set(mu))
    model = model.replace(mass=model.mass * s, inertia=model.inertia * s[:, None, None], geoms=geoms)
    contact = eqx.tree_at(lambda c: c.ground.friction, params.contact, jnp.asarray(mu, dt))
    return QuadrupedParams(model, contact, strength)


def randomize(env: QuadrupedJoystick, key, n: int, **ranges) -> QuadrupedParams:
    """``n`` draws of :func:`sample_params` around ``env.params``, batched on a leading axis of
    every leaf, for ``jax.vmap(lambda p, s, a: env.with_params(p).step(s, a))``."""
    if not (isinstance(n, (int, np.integer)) and n >= 1):
        raise ValueError(f"randomize: n must be a positive integer, got {n!r}")
    _check_ranges("randomize", ranges)
    keys = jax.random.split(raw_key(key), n)
    return jax.vmap(lambda k: sample_params(env.params, k, **ranges))(keys)


def brax_randomization(**ranges):
    """A ``randomization_fn(sys, rng) -> (params, in_axes)`` for ``brax.training`` (with
    :func:`jaxdyn.envs.adapters.to_brax`): one :func:`sample_params` draw around ``sys`` per key
    of the batch ``rng``."""
    _check_ranges("brax_randomization", ranges)

    def fn(sys, rng):
        return jax.vmap(lambda k: sample_params(sys, k, **ranges))(rng), 0

    return fn
