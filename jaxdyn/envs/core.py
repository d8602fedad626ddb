"""A small functional reinforcement-learning environment API on :mod:`jaxdyn.sim`.

The conventions are those of the JAX RL libraries (gymnax, brax): an environment is an
immutable object (an :class:`equinox.Module`) whose methods are pure functions of their inputs,

* ``state = env.reset(key)``
* ``state, obs, reward, done, info = env.step(state, action)``

so both can be ``jit``-ed, ``vmap``-ed over a batch of environments and differentiated (analytic
policy gradients through the dynamics). All the randomness comes from the PRNG key carried in
the :class:`EnvState`: the same key gives the same episode.

Actions are normalised to ``[-1, 1]`` per actuated joint (clipped there) and scaled to the
joint's effort limit from the URDF (times ``action_scale``). One environment step holds the
torque for ``substeps`` integrator steps of ``dt / substeps`` (frame skip) with
:func:`jaxdyn.sim.step`; the environments use ``"implicit_euler"`` (joint damping implicit,
MuJoCo's Euler) unless stated otherwise (the acrobot keeps ``"rk4"``, see its docstring).

Episodes end by *termination* (the task's failure/success condition) or *truncation* (the
``max_steps`` limit). :meth:`Env.step` resets automatically: on the step that ends an episode
the returned ``reward``/``done`` (and ``info["final_observation"]``) describe the ending
transition while the returned ``state``/``obs`` are already those of a fresh episode, drawn
with a key split off the state's key. :meth:`Env.transition` is the same step without the
reset. ``info`` holds ``terminated``, ``truncated``, ``final_observation``,
``episode_return`` (the undiscounted return of the episode up to and including this step) and
``tau`` (the joint torque applied, after the effort limits).

The reset draw is computed on every step and selected with ``jnp.where`` (under ``vmap`` a
branch would run both sides anyway), so a step costs one :meth:`Env.reset` more than the physics.

Non-finite states are recorded, not raised (no host callback in a jitted loop): every
:class:`EnvState` counts its control steps since :meth:`Env.reset` in ``steps`` (kept across
automatic resets) and holds in ``nonfinite_step`` the value of ``steps`` right after the first
step whose ``q`` or ``qd`` was not finite (``-1`` while none was). A step that leaves the state
or the reward non-finite ends its episode (:meth:`Env.guarded_transition`, used by
:meth:`Env.step` and the Brax adapter): ``terminated`` is set and the reward (and every reward
term in ``info``) is 0, so no NaN reaches a learner (one non-finite reward turns every PPO
parameter into NaN), and the automatic reset replaces the state; ``nonfinite_step`` keeps the
record. :meth:`Env.transition` itself returns the step as computed. After a batched run,
:func:`jaxdyn.sim.first_nonfinite` ``(states)`` gives ``(env index, step)`` of the earliest
failure, or ``None``. An environment with contact (:class:`~jaxdyn.envs.QuadrupedJoystick`)
likewise ends the episode of a step that leaves a shape deeper in the ground than
:func:`jaxdyn.sim.penetration_bound` (the step was too coarse for the contact) and records the
first in ``penetration_step``; :func:`jaxdyn.sim.first_penetration` reads it.
"""

from __future__ import annotations

import abc
import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .. import sim
from ..algorithms.common import full_precision
from ..model import Model


class EnvState(eqx.Module):
    """The state of one environment: joint positions/velocities, task data ``goal`` (e.g. a
    reaching target; shape ``(0,)`` when the task has none), the step count ``t`` in the
    episode, the return so far, the PRNG key (raw ``uint32`` key data) for the next reset, and
    the non-finite record (module docstring): ``steps`` (int32, control steps since
    :meth:`Env.reset`, not zeroed by automatic resets) and ``nonfinite_step`` (int32, the
    ``steps`` value after the first step that left ``q`` or ``qd`` non-finite, ``-1`` if none),
    and ``penetration_step`` (int32, likewise for the first step that left a shape implausibly
    deep in the ground, :func:`jaxdyn.sim.penetration_bound`; ``-1`` if none or without contact)."""

    q: jax.Array
    qd: jax.Array
    goal: jax.Array
    t: jax.Array
    episode_return: jax.Array
    key: jax.Array
    steps: jax.Array
    nonfinite_step: jax.Array
    penetration_step: jax.Array


def raw_key(key):
    """Raw ``uint32`` key data for typed keys (``jax.random.key``) and legacy ``PRNGKey``s alike,
    so the key can live in a state that is selected with ``jnp.where``."""
    key = jnp.asarray(key) if not isinstance(key, jax.Array) else key
    if jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
        return jax.random.key_data(key)
    if key.dtype != jnp.uint32 or key.shape != (2,):
        raise ValueError(f"key must be a jax.random.key or a PRNGKey of shape (2,) uint32, got {key.dtype}{key.shape}")
    return key


def _finite(q, qd):
    return jnp.all(jnp.isfinite(q)) & jnp.all(jnp.isfinite(qd))


def wrap_angle(x):
    """Angle wrapped to ``[-pi, pi)``."""
    return (x + jnp.pi) % (2 * jnp.pi) - jnp.pi


class Env(eqx.Module):
    """Base class of the environments: a robot model, the time stepping and the actuators.

    Subclasses implement :meth:`initial` (draw ``(q, qd, goal)``), :meth:`observation`,
    :meth:`reward` and optionally :meth:`terminated` and :meth:`extra_torque`.

    Fields:
      model: the :class:`~jaxdyn.Model` simulated.
      dt: control period [s] (one :meth:`step`).
      substeps: integrator steps per control step (frame skip), each of ``dt / substeps``.
      integrator: one of :data:`jaxdyn.sim.INTEGRATORS` (``"implicit_euler"`` unless the
        environment says otherwise).
      options: the :class:`~jaxdyn.sim.SimOptions` (effort clipping, damping, joint limits...).
      max_steps: episode length limit (truncation).
      actuated: indices (into ``qd``) of the actuated joints, in action order.
      action_scale: an action of 1 commands ``action_scale * effort_limit``.
    """

    model: Model
    dt: float = eqx.field(static=True)
    substeps: int = eqx.field(static=True)
    integrator: str = eqx.field(static=True)
    options: sim.SimOptions = eqx.field(static=True)
    max_steps: int = eqx.field(static=True)
    actuated: tuple = eqx.field(static=True)
    action_scale: float = eqx.field(static=True)

    def __check_init__(self):
        name = type(self).__name__
        if not (isinstance(self.dt, (int, float)) and math.isfinite(self.dt) and self.dt > 0):
            raise ValueError(f"{name}: dt must be a positive finite number, got {self.dt!r}")
        if not isinstance(self.model, Model):
            raise ValueError(f"{name}: model must be a jaxdyn.Model, got {type(self.model).__name__}")
        self.model.check(inertia="skip")  # the loaders' rules, once per environment
        if not (isinstance(self.substeps, (int, np.integer)) and self.substeps >= 1):
            raise ValueError(f"{name}: substeps must be an integer >= 1, got {self.substeps!r}")
        if self.integrator not in sim.INTEGRATORS:
            raise ValueError(
                f"{name}: unknown integrator {self.integrator!r}, choose one of {', '.join(sim.INTEGRATORS)}"
            )
        if not isinstance(self.options, sim.SimOptions):
            raise ValueError(f"{name}: options must be a jaxdyn.sim.SimOptions, got {type(self.options).__name__}")
        if not (isinstance(self.max_steps, (int, np.integer)) and self.max_steps >= 1):
            raise ValueError(f"{name}: max_steps must be an integer >= 1, got {self.max_steps!r}")
        if not (isinstance(self.action_scale, (int, float)) and self.action_scale > 0):
            raise ValueError(f"{name}: action_scale must be a positive number, got {self.action_scale!r}")
        if not self.actuated:
            raise ValueError(f"{name}: actuated must name at least one joint")
        eff = np.asarray(self.model.effort_limit)
        for i in self.actuated:
            if not 0 <= i < self.model.nv:
                raise ValueError(f"{name}: actuated index {i} is out of range for nv={self.model.nv}")
            if not np.isfinite(eff[i]):
                raise ValueError(
                    f"{name}: actuated joint '{self.model.joint_names[i]}' has no finite effort limit in "
                    f"the URDF (<limit effort=...>); actions are scaled to it"
                )

    # -- sizes and bounds ---------------------------------------------------------------------

    @property
    def action_size(self) -> int:
        return len(self.actuated)

    @property
    def observation_size(self) -> int:
        shape = jax.eval_shape(lambda k: self.observation(self.reset(k)), jax.random.PRNGKey(0)).shape
        return int(shape[0])

    @property
    def action_low(self) -> jax.Array:
        """Lower action bound (``-1`` per actuated joint)."""
        return -jnp.ones(self.action_size, self.model.dtype)

    @property
    def action_high(self) -> jax.Array:
        """Upper action bound (``+1`` per actuated joint)."""
        return jnp.ones(self.action_size, self.model.dtype)

    @property
    def torque_limit(self) -> jax.Array:
        """Torque (or force) commanded by an action of ``+1``, per actuated joint."""
        return self.action_scale * self.model.effort_limit[np.asarray(self.actuated)]

    # -- task definition (subclasses) -----------------------------------------------------------

    @abc.abstractmethod
    def initial(self, key) -> tuple[jax.Array, jax.Array, jax.Array]:
        """Draw the initial ``(q, qd, goal)`` of an episode."""

    @abc.abstractmethod
    def observation(self, state: EnvState) -> jax.Array:
        """The observation vector of ``state``."""

    @abc.abstractmethod
    def reward(self, state: EnvState, action: jax.Array, tau: jax.Array, next_state: EnvState) -> jax.Array:
        """Reward of the transition ``state -> next_state`` under the (clipped) ``action`` that
        commanded the joint torque ``tau``."""

    def terminated(self, state: EnvState) -> jax.Array:
        """Whether the episode ends in ``state`` (failure or success); never by default."""
        return jnp.zeros((), bool)

    def extra_torque(self, q, qd) -> jax.Array:
        """Torque added to the commanded one (e.g. gravity compensation); none by default."""
        return jnp.zeros(self.model.nv, self.model.dtype)

    # -- API ------------------------------------------------------------------------------------

    @full_precision
    def reset(self, key) -> EnvState:
        """A fresh episode drawn with ``key``."""
        key, sub = jax.random.split(raw_key(key))
        q, qd, goal = self.initial(sub)
        dt = self.model.dtype
        q, qd = jnp.asarray(q, dt), jnp.asarray(qd, dt)
        return EnvState(
            q=q,
            qd=qd,
            goal=jnp.asarray(goal, dt),
            t=jnp.zeros((), jnp.int32),
            episode_return=jnp.zeros((), dt),
            key=key,
            steps=jnp.zeros((), jnp.int32),
            nonfinite_step=jnp.where(_finite(q, qd), -1, 0).astype(jnp.int32),
            penetration_step=jnp.array(-1, jnp.int32),
        )

    def torque(self, state: EnvState, action) -> jax.Array:
        """Joint torque for a normalised ``action`` (clipped to ``[-1, 1]``)."""
        a = jnp.clip(jnp.asarray(action, self.model.dtype), -1.0, 1.0)
        tau = jnp.zeros(self.model.nv, self.model.dtype).at[np.asarray(self.actuated)].set(a * self.torque_limit)
        return tau + self.extra_torque(state.q, state.qd)

    def _check_action(self, action):
        action = jnp.asarray(action, self.model.dtype)
        if action.shape != (self.action_size,):
            raise ValueError(
                f"{type(self).__name__}.step: action must have shape ({self.action_size},), got {action.shape}"
            )
        return action

    def transition(self, state: EnvState, action):
        """One control step without automatic reset.

        Returns ``(next_state, reward, terminated, info)``; ``next_state.t`` and
        ``next_state.steps`` count the step, ``next_state.nonfinite_step`` records it if it left
        the state non-finite (module docstring).
        """
        action = self._check_action(action)
        a = jnp.clip(action, -1.0, 1.0)
        tau = self.torque(state, a)
        tau = sim.applied_torques(self.model, tau, self.options)
        h = self.dt / self.substeps
        sub = lambda _, x: sim.step(self.model, x[0], x[1], tau, h, self.integrator, None, self.options)
        # a loop, not an unrolled Python for: one copy of the dynamics in the compiled program
        q, qd = (
            jax.lax.fori_loop(0, self.substeps, sub, (state.q, state.qd))
            if self.substeps > 1
            else sub(0, (state.q, state.qd))
        )
        steps = state.steps + 1
        bad = jnp.where((state.nonfinite_step < 0) & ~_finite(q, qd), steps, state.nonfinite_step)
        nxt = EnvState(
            q=q,
            qd=qd,
            goal=state.goal,
            t=state.t + 1,
            episode_return=state.episode_return,
            key=state.key,
            steps=steps,
            nonfinite_step=bad,
            penetration_step=state.penetration_step,
        )
        r = jnp.asarray(self.reward(state, a, tau, nxt), self.model.dtype)
        nxt = eqx.tree_at(lambda s: s.episode_return, nxt, state.episode_return + r)
        term = jnp.asarray(self.terminated(nxt), bool)
        return nxt, r, term, {"tau": tau}

    @full_precision
    def guarded_transition(self, state: EnvState, action):
        """:meth:`transition` with a step that left ``q``, ``qd`` or the reward non-finite ended
        (module docstring): ``terminated``, reward 0, reward terms 0, and the episode return
        left at its value before the step."""
        nxt, r, term, info = self.transition(state, action)
        ok = _finite(nxt.q, nxt.qd) & jnp.isfinite(r)
        r = jnp.where(ok, r, jnp.zeros_like(r))
        if "reward_terms" in info:
            terms = {k: jnp.where(ok, v, jnp.zeros_like(v)) for k, v in info["reward_terms"].items()}
            info = dict(info, reward_terms=terms)
        nxt = eqx.tree_at(lambda s: s.episode_return, nxt, state.episode_return + r)
        return nxt, r, term | ~ok, info

    @full_precision
    def step(self, state: EnvState, action):
        """One control step with automatic reset (module docstring).

        Returns ``(state, obs, reward, done, info)``: ``done = terminated | truncated`` for the
        ending step, ``state``/``obs`` of a fresh episode when ``done``.
        """
        nxt, r, term, info = self.guarded_transition(state, action)
        trunc = (nxt.t >= self.max_steps) & ~term
        done = term | trunc
        final_obs = self.observation(nxt)
        key, sub = jax.random.split(nxt.key)
        fresh = self.reset(sub)
        cont = eqx.tree_at(lambda s: s.key, nxt, key)
        new = jax.tree_util.tree_map(lambda a, b: jnp.where(done, a, b), fresh, cont)
        # the step count and the non-finite and penetration records survive the automatic reset
        new = eqx.tree_at(
            lambda s: (s.steps, s.nonfinite_step, s.penetration_step),
            new,
            (nxt.steps, nxt.nonfinite_step, nxt.penetration_step),
        )
        obs = jnp.where(done, self.observation(fresh), final_obs)
        info = dict(
            info, terminated=term, truncated=trunc, final_observation=final_obs, episode_return=nxt.episode_return
        )
        return new, obs, r, done, info


# -- batches of environments ------------------------------------------------------------------


def vector_reset(env: Env, key, n: int, shard: bool = False) -> EnvState:
    """``n`` independent episodes (a batched :class:`EnvState`, leading axis ``n``), each drawn
    with its own key split from ``key``. ``shard=True`` spreads the batch over all devices with
    :func:`jaxdyn.parallel.shard_batch` (``n`` must be a multiple of the device count); a jitted
    :func:`vector_step` then runs on every device."""
    if not (isinstance(n, (int, np.integer)) and n >= 1):
        raise ValueError(f"vector_reset: n must be a positive integer, got {n!r}")
    keys = jax.random.split(raw_key(key), n)
    states = jax.vmap(env.reset)(keys)
    if shard:
        from ..parallel import shard_batch

        states = shard_batch(states)
    return states


def vector_step(env: Env, states: EnvState, actions):
    """:meth:`Env.step` over a batch (``vmap``); ``actions`` has shape ``(n, action_size)``."""
    return jax.vmap(env.step)(states, actions)


class VecEnv(eqx.Module):
    """``num_envs`` copies of ``env`` stepped together (``vmap``), with the same API as
    :class:`Env` on batched states, observations, rewards and dones.

    ``shard=True`` places the batch over all devices (:func:`jaxdyn.parallel.shard_batch`).
    The methods are pure; wrap them in ``jax.jit``/``eqx.filter_jit`` (or a ``lax.scan``).
    """

    env: Env
    num_envs: int = eqx.field(static=True)
    shard: bool = eqx.field(static=True, default=False)

    @property
    def observation_size(self) -> int:
        return self.env.observation_size

    @property
    def action_size(self) -> int:
        return self.env.action_size

    def reset(self, key) -> EnvState:
        return vector_reset(self.env, key, self.num_envs, self.shard)

    def step(self, states: EnvState, actions):
        return vector_step(self.env, states, actions)

    def observation(self, states: EnvState):
        return jax.vmap(self.env.observation)(states)
