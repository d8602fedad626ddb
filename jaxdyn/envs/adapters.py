"""jaxdyn environments behind the APIs of the JAX RL libraries: gymnax and Brax.

* :class:`GymnaxEnv`: gymnax's ``Environment`` interface (Lange 2022, gymnax),
  ``reset(key, params) -> (obs, state)``, ``step(key, state, action, params) ->
  (obs, state, reward, done, info)`` with automatic reset, ``observation_space(params)``,
  ``action_space(params)`` (``gymnax.environments.spaces.Box``) and ``default_params``; usable
  by gymnax-based trainers (rejax, purejaxrl).
* :func:`to_brax`: a ``brax.envs.base.Env`` (Freeman et al. 2021, Brax), ``reset(rng) -> State``,
  ``step(state, action) -> State`` with ``State(pipeline_state, obs, reward, done, metrics,
  info)``; usable by ``brax.training`` (PPO, SAC) with Brax's own training wrappers (episode
  length, automatic reset, domain randomisation through ``randomization_fn``).

The environment *parameters* are what domain randomisation varies: for an environment with
``params``/``with_params`` (:class:`~jaxdyn.envs.quadruped.QuadrupedJoystick`) the
:class:`~jaxdyn.envs.quadruped.QuadrupedParams`, otherwise the environment module itself (its
array leaves: the model). Brax calls them ``sys`` (the attribute its ``DomainRandomizationVmapWrapper``
swaps); gymnax passes them as ``params``.

gymnax and Brax are optional (extra ``rl``) and imported only where their classes are needed:
the ``Box`` spaces of :class:`GymnaxEnv` and :func:`to_brax`.
"""

from __future__ import annotations

import jax.numpy as jnp

from .._optional import require
from ..algorithms.common import full_precision
from .core import Env


def env_params(env: Env):
    """The parameters of ``env`` that domain randomisation varies (module docstring)."""
    return env.params if hasattr(env, "with_params") else env  # type: ignore[attr-defined]  # with with_params


def bind_params(env: Env, params) -> Env:
    """``env`` with ``params`` (:func:`env_params`' structure) put in."""
    if hasattr(env, "with_params"):
        return env.with_params(params)
    if not isinstance(params, Env):
        raise TypeError(f"bind_params: params for a {type(env).__name__} must be an Env, got {type(params).__name__}")
    return params


def _check_env(env, who):
    if not isinstance(env, Env):
        raise TypeError(f"{who}: env must be a jaxdyn.envs.Env, got {type(env).__name__}")


class GymnaxEnv:
    """gymnax's ``Environment`` API on a jaxdyn environment (module docstring).

    ``step`` resets automatically as gymnax's does: when ``done``, the returned ``obs``/``state``
    start a new episode and ``info`` holds the ending transition's ``final_observation``,
    ``terminated``, ``truncated`` and ``discount`` (0 on termination, else 1). jaxdyn draws the
    new episode from the PRNG key carried in the state, so the ``key`` argument of ``step`` is
    accepted for the interface and not used; episodes are reproducible from the ``reset`` key.
    """

    def __init__(self, env: Env):
        _check_env(env, "GymnaxEnv")
        self.env = env

    @property
    def name(self) -> str:
        return type(self.env).__name__

    @property
    def default_params(self):
        return env_params(self.env)

    @property
    def num_actions(self) -> int:
        return self.env.action_size

    def reset(self, key, params=None):
        env = self.env if params is None else bind_params(self.env, params)
        state = env.reset(key)
        return env.observation(state), state

    def step(self, key, state, action, params=None):
        del key  # the reset draw uses the key in the state (class docstring)
        env = self.env if params is None else bind_params(self.env, params)
        state, obs, reward, done, info = env.step(state, action)
        info = dict(info, discount=1.0 - info["terminated"].astype(reward.dtype))
        return obs, state, reward, done, info

    def _box(self, low, high, shape, dtype):
        spaces = require("gymnax.environments.spaces", "rl", "jaxdyn.envs.adapters.GymnaxEnv spaces")
        return spaces.Box(low, high, shape, dtype)

    def observation_space(self, params=None):
        n = self.env.observation_size
        return self._box(-jnp.inf, jnp.inf, (n,), self.env.model.dtype)

    def action_space(self, params=None):
        n = self.env.action_size
        return self._box(-1.0, 1.0, (n,), self.env.model.dtype)


_BRAX_CLASS = None


def _brax_class():
    global _BRAX_CLASS
    if _BRAX_CLASS is not None:
        return _BRAX_CLASS
    base = require("brax.envs.base", "rl", "jaxdyn.envs.adapters.to_brax")

    class BraxEnv(base.Env):
        """A jaxdyn environment as a ``brax.envs.base.Env`` (see :func:`to_brax`)."""

        def __init__(self, env: Env):
            _check_env(env, "to_brax")
            self.env = env
            self.sys = env_params(env)

        def _bound(self) -> Env:
            return bind_params(self.env, self.sys)

        @full_precision
        def reset(self, rng):
            env = self._bound()
            s = env.reset(rng)
            zero = jnp.zeros((), env.model.dtype)
            metrics = {k: zero for k, _ in getattr(env, "reward_weights", ())}
            return base.State(s, env.observation(s), zero, zero, metrics, {})

        @full_precision
        def step(self, state, action):
            env = self._bound()
            nxt, reward, term, info = env.guarded_transition(state.pipeline_state, action)
            # keep what Brax's wrappers added to the metrics; update the reward terms
            terms = {k: jnp.asarray(v, reward.dtype) for k, v in info.get("reward_terms", {}).items()}
            metrics = {**state.metrics, **terms}
            return state.replace(
                pipeline_state=nxt,
                obs=env.observation(nxt),
                reward=reward,
                done=term.astype(reward.dtype),
                metrics=metrics,
            )

        @property
        def observation_size(self) -> int:
            return self.env.observation_size

        @property
        def action_size(self) -> int:
            return self.env.action_size

        @property
        def backend(self) -> str:
            return "jaxdyn"

    _BRAX_CLASS = BraxEnv
    return BraxEnv


def to_brax(env: Env):
    """``env`` as a ``brax.envs.base.Env`` (needs ``brax``: extra ``rl``).

    ``reset(rng)`` returns a ``brax.envs.base.State`` whose ``pipeline_state`` is the
    :class:`~jaxdyn.envs.EnvState`; ``step`` is :meth:`~jaxdyn.envs.Env.guarded_transition` (no
    automatic reset and no step limit: Brax's ``EpisodeWrapper`` and ``AutoResetWrapper``, applied
    by ``brax.training``, add them), with ``done`` the termination as a float and ``metrics`` the
    environment's reward terms when it reports them (``info["reward_terms"]``).

    The attribute ``sys`` holds the environment parameters (:func:`env_params`); Brax's
    ``DomainRandomizationVmapWrapper`` swaps it for each draw of a ``randomization_fn(sys, rng)
    -> (batched params, in_axes)``, e.g. :func:`jaxdyn.envs.quadruped.brax_randomization`.
    Metrics are the reward terms named in the environment's ``reward_weights`` (none otherwise).
    """
    return _brax_class()(env)
