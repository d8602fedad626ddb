"""Robots shipped inside the package.

======================  ==========================================  ======================
name                    what                                        default base
======================  ==========================================  ======================
``double_pendulum``     planar double pendulum, 2 revolute          fixed
``ur5``                 UR5 arm, 6 revolute                         fixed
``panda``               Franka Panda, 7 revolute + 2 prismatic      fixed
``solo12``              Solo-12 quadruped, 12 revolute              floating (18 dof)
``talos``               TALOS humanoid (reduced), 32 revolute       floating (38 dof)
``pendulum``            single pendulum, 1 revolute (RL task)       fixed
``acrobot``             acrobot (Spong), 2 revolute (RL task)       fixed
``cartpole``            cart-pole, prismatic + revolute (RL task)   fixed
======================  ==========================================  ======================

The first five are mesh-free URDFs from example-robot-data (BSD/Apache); the last three were
written for jaxdyn's RL environments (``jaxdyn.envs``).
"""

from __future__ import annotations

import os

from ..io.urdf import load_urdf
from ..model import Model

_DIR = os.path.dirname(os.path.abspath(__file__))
DEFAULT_FLOATING = {"double_pendulum": False, "ur5": False, "panda": False, "solo12": True, "talos": True,
                    "pendulum": False, "acrobot": False, "cartpole": False}


def available_robots() -> tuple[str, ...]:
    """Names accepted by :func:`load_robot`."""
    return tuple(DEFAULT_FLOATING)


def robot_path(name: str) -> str:
    """Path of a shipped robot's URDF."""
    if name not in DEFAULT_FLOATING:
        raise KeyError(f"unknown robot '{name}'; shipped robots: {', '.join(DEFAULT_FLOATING)}")
    return os.path.join(_DIR, f"{name}.urdf")


def load_robot(name: str, floating_base: bool | None = None, **kwargs) -> Model:
    """Load a shipped robot by name. ``floating_base=None`` uses the robot's default (see the
    module docstring); other keyword arguments go to :func:`~jaxdyn.load_urdf`."""
    fb = DEFAULT_FLOATING[name] if floating_base is None and name in DEFAULT_FLOATING else floating_base
    return load_urdf(robot_path(name), floating_base=bool(fb), **kwargs)
