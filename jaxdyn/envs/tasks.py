"""The environments: pendulum swing-up, acrobot swing-up, cart-pole (balance / swing-up) and a
Panda reaching task. Each loads its URDF (``jaxdyn/robots``) unless a ``model`` is given."""

from __future__ import annotations

import os

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .. import joints, sim
from ..algorithms.kinematics import frame_placement
from ..algorithms.rnea import gravity_torques
from ..io.urdf import load_urdf
from ..model import Model
from .core import Env, EnvState, wrap_angle

_ROBOTS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "robots")


def _load(name: str, model: Model | None, dtype) -> Model:
    if model is None:
        model = load_urdf(os.path.join(_ROBOTS, f"{name}.urdf"), dtype=dtype)
    elif dtype is not None:
        model = model.astype(dtype)
    return model


def _check_nv(env_name: str, model: Model, nv: int, what: str):
    if model.nv != nv or model.nq != nv or model.floating_base:
        raise ValueError(
            f"{env_name}: model must be {what} (fixed base, nq = nv = {nv}), got '{model.name}' with nq={model.nq}, nv={model.nv}"
        )


class Pendulum(Env):
    """Torque-limited pendulum swing-up (the classic task of Gym ``Pendulum-v1``).

    ``q = 0`` is upright. Observation ``[cos q, sin q, qd]``; action: hinge torque in
    ``[-1, 1] * 2 N m``; reward ``-(wrap(q)^2 + 0.1 qd^2 + 0.001 u^2)`` of the state the step
    starts from, with ``u`` the torque in N m; episodes start at ``q ~ U(-pi, pi)``,
    ``qd ~ U(-1, 1)`` and last ``max_steps`` (no termination).
    """

    def __init__(
        self,
        model: Model | None = None,
        *,
        dt: float = 0.05,
        substeps: int = 2,
        integrator: str = sim.DEFAULT_INTEGRATOR,
        options: sim.SimOptions = sim.SimOptions(),
        max_steps: int = 200,
        action_scale: float = 1.0,
        dtype=None,
    ):
        self.model = _load("pendulum", model, dtype)
        _check_nv("Pendulum", self.model, 1, "a single hinge")
        self.dt, self.substeps, self.integrator, self.options = dt, substeps, integrator, options
        self.max_steps, self.actuated, self.action_scale = max_steps, (0,), action_scale

    def initial(self, key):
        k1, k2 = jax.random.split(key)
        dt = self.model.dtype
        q = jax.random.uniform(k1, (1,), dt, -jnp.pi, jnp.pi)
        qd = jax.random.uniform(k2, (1,), dt, -1.0, 1.0)
        return q, qd, jnp.zeros(0, dt)

    def observation(self, state: EnvState):
        th = state.q[0]
        return jnp.stack([jnp.cos(th), jnp.sin(th), state.qd[0]])

    def reward(self, state, action, tau, next_state):
        th, thd = wrap_angle(state.q[0]), state.qd[0]
        return -(th**2 + 0.1 * thd**2 + 0.001 * tau[0] ** 2)


class Acrobot(Env):
    """Acrobot swing-up with a continuous elbow torque (Sutton & Barto 1998, sec. 11.3; Spong 1995).

    ``q = 0`` hangs down; only the elbow is actuated. Observation
    ``[cos q1, sin q1, cos q2, sin q2, qd1, qd2]``; reward: the height of the tip (frame
    ``"tip"``) divided by the total length (``[-1, 1]``, 1 = straight up) minus
    ``action_cost * a^2``; episodes start near the bottom (``q, qd ~ U(-0.1, 0.1)``), last
    ``max_steps`` and never terminate (swing up and stay up).

    The default integrator is ``"rk4"``, not :data:`jaxdyn.sim.DEFAULT_INTEGRATOR`: the acrobot
    has no joint damping (nothing stiff for ``"implicit_euler"`` to fix) and steps
    ``dt = 50 ms`` in one go, where accuracy matters (measured from a released pose, zero
    torque, 500 steps: energy error 4e-4 relative with ``"rk4"`` against 0.27 with
    ``"implicit_euler"``, and 2e-5 rad against 1.4 rad from a fine reference after 2 s).
    """

    action_cost: float = eqx.field(static=True)
    tip_z: tuple = eqx.field(static=True)  # (tip height hanging down, tip height straight up)

    def __init__(
        self,
        model: Model | None = None,
        *,
        dt: float = 0.05,
        substeps: int = 1,
        integrator: str = "rk4",
        options: sim.SimOptions = sim.SimOptions(),
        max_steps: int = 500,
        action_scale: float = 1.0,
        action_cost: float = 1e-3,
        dtype=None,
    ):
        self.model = _load("acrobot", model, dtype)
        _check_nv("Acrobot", self.model, 2, "a two-hinge chain")
        if "tip" not in self.model.frame_names:
            raise ValueError(
                f"Acrobot: model '{self.model.name}' has no frame 'tip' (frames: {', '.join(self.model.frame_names)})"
            )
        self.dt, self.substeps, self.integrator, self.options = dt, substeps, integrator, options
        self.max_steps, self.actuated, self.action_scale = max_steps, (1,), action_scale
        self.action_cost = action_cost
        z = [
            float(frame_placement(self.model, jnp.array(q, self.model.dtype), "tip").p[2])
            for q in ([0.0, 0.0], [np.pi, 0.0])
        ]
        self.tip_z = (z[0], z[1])

    def initial(self, key):
        k1, k2 = jax.random.split(key)
        dt = self.model.dtype
        return (
            jax.random.uniform(k1, (2,), dt, -0.1, 0.1),
            jax.random.uniform(k2, (2,), dt, -0.1, 0.1),
            jnp.zeros(0, dt),
        )

    def observation(self, state: EnvState):
        q = state.q
        return jnp.concatenate([jnp.stack([jnp.cos(q[0]), jnp.sin(q[0]), jnp.cos(q[1]), jnp.sin(q[1])]), state.qd])

    def tip_height(self, q):
        """Height of the tip mapped to ``[-1, 1]``: -1 hanging straight down, 1 straight up."""
        lo, hi = self.tip_z
        return (2.0 * frame_placement(self.model, q, "tip").p[2] - lo - hi) / (hi - lo)

    def reward(self, state, action, tau, next_state):
        return self.tip_height(next_state.q) - self.action_cost * jnp.sum(action**2)


class CartPole(Env):
    """Cart-pole: a force on the cart (``[-1, 1] * 10 N``) balances an unactuated pole.

    ``q = [x, theta]``, ``theta = 0`` upright. Observation ``[x, cos theta, sin theta, xd, thetad]``.

    * ``swing_up=False`` (balance, as Gym ``CartPole-v1`` with a continuous force): start near
      upright (every state ``~ U(-0.05, 0.05)``), reward 1 per step, terminate when
      ``|theta| > 12 deg`` or ``|x| > 2.4 m``.
    * ``swing_up=True`` (as the DeepMind Control Suite swing-up): start hanging
      (``theta ~ pi + U(-0.1, 0.1)``), reward ``(1 + cos theta) / 2 - 0.1 (x / 2.4)^2 -
      0.001 a^2``, no termination (the rail's soft limits at +-3 m keep the cart on it).
    """

    swing_up: bool = eqx.field(static=True)

    def __init__(
        self,
        model: Model | None = None,
        *,
        swing_up: bool = False,
        dt: float = 0.02,
        substeps: int = 2,
        integrator: str = sim.DEFAULT_INTEGRATOR,
        options: sim.SimOptions = sim.SimOptions(),
        max_steps: int = 500,
        action_scale: float = 1.0,
        dtype=None,
    ):
        self.model = _load("cartpole", model, dtype)
        if self.model.nv != 2 or self.model.nq != 2 or joints.get(self.model.joint_types[0]) is not joints.PRISMATIC:
            raise ValueError(
                f"CartPole: model must be a prismatic cart with one hinge, got '{self.model.name}' "
                f"with joints {self.model.joint_types}"
            )
        self.dt, self.substeps, self.integrator, self.options = dt, substeps, integrator, options
        self.max_steps, self.actuated, self.action_scale = max_steps, (0,), action_scale
        self.swing_up = bool(swing_up)

    def initial(self, key):
        k1, k2 = jax.random.split(key)
        dt = self.model.dtype
        q = jax.random.uniform(k1, (2,), dt, -0.05, 0.05)
        qd = jax.random.uniform(k2, (2,), dt, -0.05, 0.05)
        if self.swing_up:
            q = q.at[1].set(jnp.pi + 2.0 * q[1])  # pi + U(-0.1, 0.1)
        return q, qd, jnp.zeros(0, dt)

    def observation(self, state: EnvState):
        x, th = state.q[0], state.q[1]
        return jnp.stack([x, jnp.cos(th), jnp.sin(th), state.qd[0], state.qd[1]])

    def reward(self, state, action, tau, next_state):
        if not self.swing_up:
            return jnp.ones((), self.model.dtype)
        x, th = next_state.q[0], next_state.q[1]
        return 0.5 * (1.0 + jnp.cos(th)) - 0.1 * (x / 2.4) ** 2 - 1e-3 * jnp.sum(action**2)

    def terminated(self, state):
        if self.swing_up:
            return jnp.zeros((), bool)
        return (jnp.abs(wrap_angle(state.q[1])) > jnp.deg2rad(12.0)) | (jnp.abs(state.q[0]) > 2.4)


# Reflected rotor inertia and joint damping of the Panda arm joints in MuJoCo Menagerie's
# franka_emika_panda model (armature 0.1 kg m^2, damping 1 N m s/rad): the URDF has none, and
# without them the light wrist (0.007 kg m^2 about joint 7) and fingers make the dynamics stiff.
PANDA_ARMATURE = 0.1
PANDA_DAMPING = 1.0
PANDA_READY = (0.0, -np.pi / 4, 0.0, -3 * np.pi / 4, 0.0, np.pi / 2, np.pi / 4, 0.02, 0.02)


class PandaReach(Env):
    """Franka Panda (fixed base) reaching a random target with the frame ``ee_frame``.

    Torque control of the 7 arm joints (``[-1, 1] * action_scale * effort limit``); the fingers
    are passive. With ``gravity_compensation=True`` (default; Franka's torque interface does the
    same) ``g(q)`` is added to the command. Every joint gets the rotor inertia ``armature``
    (fingers too: the gripper's leadscrew drive) and the arm joints the viscous ``damping``
    (default: MuJoCo Menagerie's Panda values, :data:`PANDA_ARMATURE`, :data:`PANDA_DAMPING`;
    ``None`` keeps the URDF's). Without them the light fingers and wrist make the semi-implicit
    Euler step at ``dt / substeps = 5 ms`` unstable against the soft joint limits. The default
    integrator, ``"implicit_euler"``, treats the joint damping implicitly (MuJoCo's Euler), so
    larger ``damping`` values stay stable too (the soft-limit spring-damper stays explicit).

    Targets are reachable by construction: the end-effector position of a configuration drawn
    uniformly within the joint limits (the first of 8 draws that is 10 cm above the floor and
    25 cm from the base axis). Episodes start at the "ready" pose plus ``U(-0.1, 0.1)`` rad.
    Observation ``[q (9), qd (9), target (3), ee position (3)]``; reward
    ``-|ee - target| - action_cost |a|^2``; no termination.
    """

    ee_frame: str = eqx.field(static=True)
    gravity_compensation: bool = eqx.field(static=True)
    action_cost: float = eqx.field(static=True)

    def __init__(
        self,
        model: Model | None = None,
        *,
        ee_frame: str = "panda_hand_tcp",
        dt: float = 0.02,
        substeps: int = 4,
        integrator: str = sim.DEFAULT_INTEGRATOR,
        options: sim.SimOptions = sim.SimOptions(),
        max_steps: int = 200,
        action_scale: float = 1.0,
        action_cost: float = 1e-3,
        gravity_compensation: bool = True,
        armature: float | None = PANDA_ARMATURE,
        damping: float | None = PANDA_DAMPING,
        dtype=None,
    ):
        if model is None:
            from ..robots import robot_path

            model = load_urdf(robot_path("panda"), dtype=dtype)
        elif dtype is not None:
            model = model.astype(dtype)
        if model.floating_base or model.nv < 7:
            raise ValueError(f"PandaReach: model must be a fixed-base arm with >= 7 joints, got '{model.name}'")
        if ee_frame not in model.frame_names:
            raise ValueError(
                f"PandaReach: ee_frame '{ee_frame}' is not a frame of '{model.name}' "
                f"(frames: {', '.join(model.frame_names)})"
            )
        arm = np.arange(7)
        if armature is not None:  # every joint: the fingers too (the gripper's leadscrew drive)
            model = model.replace(armature=jnp.full_like(model.armature, armature))
        if damping is not None:
            model = model.replace(damping=model.damping.at[arm].set(damping))
        self.model = model
        self.dt, self.substeps, self.integrator, self.options = dt, substeps, integrator, options
        self.max_steps, self.actuated, self.action_scale = max_steps, tuple(range(7)), action_scale
        self.ee_frame, self.gravity_compensation, self.action_cost = ee_frame, bool(gravity_compensation), action_cost

    def ready_pose(self):
        """The "ready" configuration (:data:`PANDA_READY`) clipped to the joint limits."""
        q = np.zeros(self.model.nq)
        q[: min(9, self.model.nq)] = PANDA_READY[: min(9, self.model.nq)]
        return jnp.clip(jnp.asarray(q, self.model.dtype), self.model.q_lower, self.model.q_upper)

    def ee_position(self, q):
        """World position of the end-effector frame."""
        return frame_placement(self.model, q, self.ee_frame).p

    def sample_target(self, key):
        """A reachable target: the end-effector position of a random configuration (class doc)."""
        dt = self.model.dtype
        lo, hi = self.model.q_lower[:7], self.model.q_upper[:7]
        qs = jax.random.uniform(key, (8, 7), dt, lo, hi)
        full = jnp.tile(self.ready_pose(), (8, 1)).at[:, :7].set(qs)
        p = jax.vmap(self.ee_position)(full)
        ok = (p[:, 2] > 0.1) & (jnp.linalg.norm(p[:, :2], axis=1) > 0.25)
        return p[jnp.argmax(ok)]

    def initial(self, key):
        k1, k2 = jax.random.split(key)
        dt = self.model.dtype
        q = self.ready_pose().at[:7].add(jax.random.uniform(k1, (7,), dt, -0.1, 0.1))
        return q, jnp.zeros(self.model.nv, dt), self.sample_target(k2)

    def extra_torque(self, q, qd):
        if not self.gravity_compensation:
            return jnp.zeros(self.model.nv, self.model.dtype)
        g = gravity_torques(self.model, q)
        return jnp.zeros_like(g).at[:7].set(g[:7])

    def observation(self, state: EnvState):
        return jnp.concatenate([state.q, state.qd, state.goal, self.ee_position(state.q)])

    def reward(self, state, action, tau, next_state):
        d = jnp.linalg.norm(self.ee_position(next_state.q) - next_state.goal)
        return -d - self.action_cost * jnp.sum(action**2)
