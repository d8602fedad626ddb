"""MuJoCo, imported with an offscreen OpenGL chosen for a machine without a display."""

from __future__ import annotations

import ctypes.util
import os
import sys

from .._optional import require


def _offscreen() -> str:
    return "osmesa" if ctypes.util.find_library("OSMesa") else "egl"


def mujoco():
    """The ``mujoco`` module, able to render offscreen.

    Where ``MUJOCO_GL`` is unset and there is no display, it is set before MuJoCo is first
    imported (MuJoCo reads it then): ``osmesa`` where the OSMesa library is installed, else
    ``egl``. Where MuJoCo was already imported that way (another library imported it first), it
    picked GLFW, which needs a display: its offscreen context is switched to OSMesa or EGL, as
    long as PyOpenGL has not been loaded for another platform; otherwise a RuntimeError says to
    set ``MUJOCO_GL``."""
    headless = "MUJOCO_GL" not in os.environ and not os.environ.get("DISPLAY")
    already = "mujoco" in sys.modules
    if headless:
        os.environ["MUJOCO_GL"] = _offscreen()
    mj = require("mujoco", "render", "jaxdyn.render")
    if headless and already:
        _switch_context(os.environ["MUJOCO_GL"])
    return mj


def _switch_context(backend: str) -> None:
    from mujoco.rendering.classic import gl_context

    if getattr(gl_context.GLContext, "__module__", "").startswith(f"mujoco.{backend}"):
        return
    platform = os.environ.get("PYOPENGL_PLATFORM")
    if "OpenGL" in sys.modules and platform not in (None, backend):
        raise RuntimeError(
            "jaxdyn.render: MuJoCo was imported before jaxdyn.render, without a display and without "
            "MUJOCO_GL, and PyOpenGL is loaded for another platform: set MUJOCO_GL=osmesa (or egl) "
            "in the environment before starting Python"
        )
    if backend == "osmesa":
        from mujoco.osmesa import GLContext
    else:
        from mujoco.egl import GLContext
    gl_context.GLContext = GLContext
