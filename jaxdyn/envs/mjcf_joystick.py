"""Quadruped joystick task on an MJCF scene, driven by the scene's actuators and observed
through its sensors: MuJoCo Playground's ``Go1JoystickFlatTerrain`` ported.

The scene is MuJoCo Playground's Go1 feet-only flat-terrain scene as jaxdyn ships it
(:data:`jaxdyn.robots.GO1_SCENE`; Zakka et al. 2025, "MuJoCo Playground", arXiv:2502.08844;
Apache-2.0, the robot Unitree's Go1 through MuJoCo Menagerie), or any scene built the same way:
a floating base with 12 hinge joints, one actuator each, four feet, and the sensors named in
``sensor_names``. The environment has no PD law and no observation formulas of its own:

* **Action.** ``ctrl = default_pose + action_scale * a`` (``a`` clipped to ``[-1, 1]``) is the
  control of the scene's actuators (Playground's ``motor_targets``); the Go1's are position
  servos, ``kp = 35`` N m/rad, force ranges 23.7 and 35.55 N m, joint damping 0.5 N m s/rad,
  all read from the scene (:mod:`jaxdyn.actuators`). ``ctrl`` is held over the ``substeps``
  physics steps of a control step: the scene's 4 ms timestep, 5 per 20 ms control period as
  in Playground's ``ctrl_dt = 0.02``, ``sim_dt = 0.004``.
* **Contact.** ``Contact(normal="mujoco", collide_pairs=False)``: MuJoCo's soft contact with
  the scene's ``solref``/``solimp`` (the feet's ``solimp="0.9 .95 0.023"``), the feet against
  the floor only, as the scene's ``contype``/``conaffinity`` have it (docs/contact.md).
* **Observation.** The base's motion from the scene's sensors (:func:`jaxdyn.sensors.read`):
  the IMU's velocimeter (``local_linvel``) and gyro, gravity in the IMU frame from its
  ``framequat`` (``R^T [0, 0, -1]``), and for the reward the IMU's ``framelinvel`` and
  ``frameangvel`` (``global_linvel``, ``global_angvel``); with the joint positions less the
  default pose, the joint velocities, the last action and the command, in the order of
  :class:`~jaxdyn.envs.QuadrupedJoystick` (48 numbers).

Everything else is :class:`~jaxdyn.envs.QuadrupedJoystick`'s, in one place: the commands, the
reward terms and their kernels, the gait record, termination, observation noise, the reset draw
and domain randomisation (:func:`~jaxdyn.envs.quadruped.randomize`; here the motor strength
scales each actuator's gain, bias and force range). The defaults are Playground's Go1 values:
its reward weights (:data:`~jaxdyn.envs.quadruped.GAIT_REWARD_WEIGHTS` with the base terms),
command amplitudes ``(1.5 m/s, 0.8 m/s, 1.2 rad/s)``, ``action_scale = 0.5``,
``max_foot_height = 0.1`` m, and episodes starting from the scene's ``home`` keyframe with a
random heading and base twist. Differences from Playground: the command is drawn once per
episode (Playground redraws it at exponentially distributed times and zeroes components with
some probability), a foot is in contact when its site is within its sphere's radius of the
floor (Playground reads ``contact`` sensors, which jaxdyn does not compute), the start is not
shifted in ``x, y`` (the floor is uniform), and no pushes.

Under the same ``ctrl`` the trajectory follows MuJoCo's within a few millimetres of stance
height and a few centimetres per second of base velocity over 2 s
(``tests/test_go1_joystick.py``, data from ``tests/reference/generate_mujoco_go1_joystick.py``;
docs/rl.md).
"""

from __future__ import annotations

import os
import warnings
import xml.etree.ElementTree as ET

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .. import actuators, sensors, sim, spatial
from ..contact import Contact, Ground
from ..io.mjcf import MJCFError, load_mjcf
from ..model import Model
from .quadruped import GAIT_REWARD_WEIGHTS, BaseMotion, QuadrupedJoystick

# the scene's sensors the environment reads: role -> sensor name (Playground's Go1 names)
SENSOR_NAMES = {
    "linvel": "local_linvel",
    "gyro": "gyro",
    "orientation": "orientation",
    "linvel_world": "global_linvel",
    "angvel_world": "global_angvel",
}
# MuJoCo Playground's Go1 joystick: command amplitudes [vx, vy, yaw rate]
GO1_COMMANDS = ((-1.5, 1.5), (-0.8, 0.8), (-1.2, 1.2))
GO1_FEET = ("FR", "FL", "RR", "RL")


def _elements(source, tag):
    """The ``tag`` elements of an MJCF file and of the files it includes, in reading order."""
    pending = [os.fspath(source)]
    while pending:
        p = pending.pop(0)
        root = ET.parse(p).getroot()
        yield from root.iter(tag)
        pending += [os.path.join(os.path.dirname(p), i.get("file", "")) for i in root.iter("include")]


def keyframe(source: str | os.PathLike, name: str) -> dict[str, np.ndarray]:
    """The ``<key name=...>`` of an MJCF file's ``<keyframe>`` (in the file or a file it
    includes) as ``{attribute: array}`` (``qpos``, ``ctrl``, ...)."""
    for key in _elements(source, "key"):
        if key.get("name") == name:
            return {k: np.array(v.split(), float) for k, v in key.attrib.items() if k != "name"}
    raise MJCFError(f"no <key name='{name}'> in the <keyframe> of {os.fspath(source)} or the files it includes")


def timestep(source: str | os.PathLike) -> float:
    """The scene's ``<option timestep>`` (MuJoCo's default 2 ms where it sets none)."""
    for opt in _elements(source, "option"):
        if opt.get("timestep") is not None:
            return float(opt.get("timestep"))
    return 0.002


class MJCFJoystick(QuadrupedJoystick):
    """Velocity-command tracking on an MJCF quadruped scene through its actuators and sensors
    (module docstring).

    Args (besides :class:`~jaxdyn.envs.QuadrupedJoystick`'s ``dt``, ``substeps``,
    ``integrator``, ``options``, ``max_steps``, ``action_scale``, ``command_range``,
    ``tracking_sigma``, ``reward_weights`` (default: Playground's Go1 weights), ``clip_reward``,
    ``min_height``, ``max_joint_speed``, ``reset_velocity``, ``obs_noise``, ``dtype``):
      scene: the MJCF file; default the shipped Go1 scene (:data:`jaxdyn.robots.GO1_SCENE`).
      feet: the four feet's sites (frames of the model).
      home: the keyframe whose ``qpos`` starts an episode and whose joint angles are the
        default pose (``ctrl`` of action 0).
      foot_radius: a foot is in contact when its site is at most this high [m] (the Go1's foot
        spheres: 0.023 m).
      sensor_names: ``{role: sensor}`` overriding :data:`SENSOR_NAMES`.
      dt: the control period; default ``substeps`` times the scene's timestep.
    """

    sensors: sensors.Sensors
    home_q: tuple = eqx.field(static=True)

    def __init__(
        self,
        scene: str | os.PathLike | None = None,
        *,
        feet=GO1_FEET,
        home: str = "home",
        foot_radius: float = 0.023,
        max_foot_height: float = 0.1,
        sensor_names: dict | None = None,
        dt: float | None = None,
        substeps: int = 5,
        integrator: str = sim.DEFAULT_INTEGRATOR,
        options: sim.SimOptions = sim.SimOptions(),
        max_steps: int = 1000,
        action_scale: float = 0.5,
        command_range=GO1_COMMANDS,
        tracking_sigma: float = 0.25,
        reward_weights: dict | None = None,
        clip_reward: bool = True,
        min_height: float = 0.1,
        max_joint_speed: float = 200.0,
        reset_velocity: float = 0.5,
        obs_noise: float = 0.0,
        dtype=None,
    ):
        if scene is None:
            from ..robots import GO1_SCENE

            scene = GO1_SCENE
        with warnings.catch_warnings():
            # the feet's solimp, which Contact(normal="mujoco") reads, is named by the loader; the
            # scene's other sensors (Playground's contact sensors, which jaxdyn does not compute)
            # are not read
            warnings.filterwarnings("ignore", message=".*soft-contact parameters act with.*")
            warnings.filterwarnings("ignore", message=".*sensors of types jaxdyn does not compute.*")
            model = load_mjcf(scene, dtype=dtype)
            found = sensors.from_mjcf(scene, model, unsupported="warn")
        names = dict(SENSOR_NAMES, **(sensor_names or {}))
        unknown = set(names) - set(SENSOR_NAMES)
        if unknown:
            raise ValueError(f"MJCFJoystick: unknown sensor roles {sorted(unknown)}; known: {', '.join(SENSOR_NAMES)}")
        try:
            chosen = found.select([names[k] for k in SENSOR_NAMES])
        except KeyError as e:
            raise ValueError(f"MJCFJoystick: scene {os.fspath(scene)!r}: {e.args[0]}") from None
        expected = dict(linvel="velocimeter", gyro="gyro", orientation="framequat")
        expected.update(linvel_world="framelinvel", angvel_world="frameangvel")
        for role, t in zip(SENSOR_NAMES, chosen.types):
            if t != expected[role] or chosen.ref_body[list(SENSOR_NAMES).index(role)] != -2:
                raise ValueError(
                    f"MJCFJoystick: the {role} sensor '{names[role]}' must be a {expected[role]} without a "
                    f"reference frame, got a {t}"
                )
        acts = model.actuators
        if acts is None or acts.nu != 12 or acts.dof != tuple(range(6, 18)):
            raise ValueError(
                f"MJCFJoystick: the scene must have 12 actuators, one on each joint in order, got "
                f"{0 if acts is None else acts.nu} on dofs {() if acts is None else acts.dof}"
            )
        key = keyframe(scene, home)
        if "qpos" not in key or key["qpos"].shape != (19,):
            raise MJCFError(f"MJCFJoystick: keyframe '{home}' needs a qpos of 19 numbers")
        h = timestep(scene)
        contact = Contact(Ground.from_model(model), normal="mujoco", collide_pairs=False)
        weights = dict(GAIT_REWARD_WEIGHTS, **(reward_weights or {}))
        force = np.max(np.abs(np.asarray(acts.force_range)))
        super().__init__(
            model,
            feet=feet,
            default_pose=key["qpos"][7:],
            foot_radius=foot_radius,
            max_foot_height=max_foot_height,
            kp=float(np.max(np.asarray(acts.gain)[:, 0])),
            kd=0.0,
            torque_limit=float(force) if np.isfinite(force) else 1e3,
            contact=contact,
            dt=substeps * h if dt is None else dt,
            substeps=substeps,
            integrator=integrator,
            options=options,
            max_steps=max_steps,
            action_scale=action_scale,
            command_range=command_range,
            tracking_sigma=tracking_sigma,
            reward_weights=weights,
            clip_reward=clip_reward,
            min_height=min_height,
            max_joint_speed=max_joint_speed,
            reset_velocity=reset_velocity,
            obs_noise=obs_noise,
            dtype=None,
        )
        self.sensors = chosen
        self.home_q = tuple(float(x) for x in key["qpos"])
        self.stand_height = float(key["qpos"][2])

    @property
    def torque_limit(self) -> jax.Array:
        """The actuators' force bound per joint at nominal strength (the upper end of each
        force range)."""
        acts = self.model.actuators
        assert acts is not None  # checked by __init__
        return acts.force_range[:, 1]

    def step_model(self) -> Model:
        """The model with each actuator's gain, bias and force range scaled by its motor
        strength (1 nominal: the scene as written)."""
        s = self.motor_strength
        a = self.model.actuators
        assert a is not None  # checked by __init__
        scaled = eqx.tree_at(
            lambda x: (x.gain, x.bias, x.force_range),
            a,
            (a.gain * s[:, None], a.bias * s[:, None], a.force_range * s[:, None]),
        )
        return self.model.replace(actuators=scaled)

    def actuation(self, model: Model, q, qd, action):
        """``ctrl = default_pose + action_scale * action`` for the scene's actuators; the joints
        receive their torques (MuJoCo's ``qfrc_actuator``)."""
        ctrl = self.q_default + self.action_scale * action
        return None, ctrl, actuators.joint_torques(model, q, qd, ctrl)

    def base_motion(self, q, qd) -> BaseMotion:
        """The base's motion read from the scene's sensors (module docstring)."""
        y = sensors.read(self.model, self.sensors, q, qd)
        data = {role: y[a : a + d] for role, a, d in zip(SENSOR_NAMES, self.sensors.adr, self.sensors.dims)}
        R = spatial.quat_to_rotation(data["orientation"])
        return BaseMotion(
            linvel=data["linvel"],
            gyro=data["gyro"],
            gravity=-R[2],
            linvel_world=data["linvel_world"],
            angvel_world=data["angvel_world"],
        )

    def initial(self, key):
        """The ``home`` keyframe turned by a heading ``U(-pi, pi)``, with a base twist
        ``U(-reset_velocity, reset_velocity)`` per component; the command drawn from
        ``command_range``."""
        q, qd, command = super().initial(key)
        home = jnp.asarray(self.home_q, q.dtype)
        quat = spatial.quat_multiply(home[3:7], q[3:7])
        return home.at[3:7].set(quat), qd, command
