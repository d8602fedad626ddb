"""MuJoCo, imported with an offscreen OpenGL chosen for a machine without a display."""

from __future__ import annotations

import ctypes.util
import os

from .._optional import require


def mujoco():
    """The ``mujoco`` module. Where ``MUJOCO_GL`` is unset and there is no display, it is set
    before MuJoCo is first imported (MuJoCo reads it then): ``osmesa`` where the OSMesa library
    is installed, else ``egl``."""
    if "MUJOCO_GL" not in os.environ and not os.environ.get("DISPLAY"):
        os.environ["MUJOCO_GL"] = "osmesa" if ctypes.util.find_library("OSMesa") else "egl"
    return require("mujoco", "render", "jaxdyn.render")
