"""Reinforcement-learning environments on jaxdyn's differentiable simulator.

gymnax/brax-style functional API (see :mod:`jaxdyn.envs.core`)::

    import equinox as eqx, jax, jax.numpy as jnp, jaxdyn.envs as envs
    env = envs.make("pendulum")
    state = env.reset(jax.random.key(0))
    step = eqx.filter_jit(env.step)  # or jax.jit(lambda s, a: env.step(s, a))
    state, obs, reward, done, info = step(state, jnp.zeros(env.action_size))

Batches: :func:`vector_reset`/:func:`vector_step` or :class:`VecEnv` (``vmap``; optional
sharding over devices). Legged locomotion with domain randomisation:
:mod:`jaxdyn.envs.quadruped`, and MuJoCo Playground's Go1 joystick task on its MJCF scene,
driven by the scene's actuators and observed through its sensors:
:mod:`jaxdyn.envs.mjcf_joystick`; gymnax and Brax interfaces: :mod:`jaxdyn.envs.adapters`.
Registered names: see :func:`available_envs`.
"""

from __future__ import annotations

from collections.abc import Callable

from .core import Env, EnvState, VecEnv, vector_reset, vector_step, wrap_angle
from .mjcf_joystick import MJCFJoystick
from .quadruped import QuadrupedJoystick, QuadrupedParams, QuadrupedState, randomize, sample_params
from .tasks import Acrobot, CartPole, PandaReach, Pendulum

_REGISTRY: dict[str, Callable[..., Env]] = {
    "pendulum": Pendulum,
    "acrobot": Acrobot,
    "cartpole": CartPole,
    "cartpole_swingup": lambda **kw: CartPole(**{"swing_up": True, **kw}),
    "panda_reach": PandaReach,
    "solo12_joystick": QuadrupedJoystick,
    "go1_joystick": MJCFJoystick,
}


def available_envs() -> tuple[str, ...]:
    """Names accepted by :func:`make`."""
    return tuple(_REGISTRY)


def register(name: str, constructor: Callable[..., Env]) -> None:
    """Add an environment constructor to the registry of :func:`make`."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"register: name must be a non-empty string, got {name!r}")
    if name in _REGISTRY:
        raise ValueError(f"register: an environment named '{name}' is already registered")
    _REGISTRY[name] = constructor


def make(name: str, **kwargs) -> Env:
    """Build a registered environment; keyword arguments go to its constructor (``dt``,
    ``substeps``, ``integrator``, ``options``, ``max_steps``, ``action_scale``, ``dtype``,
    ``model``, and the task's own options)."""
    if name not in _REGISTRY:
        raise ValueError(f"make: unknown environment '{name}'; available: {', '.join(_REGISTRY)}")
    return _REGISTRY[name](**kwargs)


__all__ = [
    "Acrobot",
    "CartPole",
    "Env",
    "EnvState",
    "MJCFJoystick",
    "PandaReach",
    "Pendulum",
    "QuadrupedJoystick",
    "QuadrupedParams",
    "QuadrupedState",
    "VecEnv",
    "available_envs",
    "make",
    "randomize",
    "register",
    "sample_params",
    "vector_reset",
    "vector_step",
    "wrap_angle",
]
