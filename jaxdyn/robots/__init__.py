"""Robots shipped inside the package, and the robots of ``example-robot-data`` when installed.

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

MJCF scenes shipped, as paths for :func:`~jaxdyn.load_mjcf`: :data:`GO1_SCENE`, MuJoCo
Playground's Unitree Go1 feet-only flat-terrain scene (Apache-2.0, ``go1_playground/NOTICE``;
meshes removed), with its position servos, IMU and frame sensors and ``home`` keyframe: the
scene of :class:`jaxdyn.envs.MJCFJoystick`.

Any other name is looked up in the pip package ``example-robot-data`` (an optional extra:
``pip install "jaxdyn[robots]"``), which ships about 70 published URDFs (go2, a1, anymal, hyq,
tiago, pr2, allegro hands, ...): ``load_robot("go2")``. A name is the file's stem when that is
unique (``"go2"``, ``"ur10_robot"``), else ``"<package>/<stem>"`` with the ``_description``
suffix of the package dropped (``"anymal_b_simple/anymal"``); the ``"<package>/<stem>"`` form
names every file, also one whose stem a shipped robot's name shadows (``"solo/solo12"``,
``"panda/panda"``: the published files, with their collision meshes); :func:`external_robots`
lists them. Legged, humanoid and aerial robots default to a floating base (:data:`FLOATING_PACKAGES`);
pass ``floating_base`` to choose. Collision meshes load as convex hulls (:func:`~jaxdyn.load_urdf`);
they do not enter the dynamics.
"""

from __future__ import annotations

import difflib
import functools
import os

from ..io.urdf import load_urdf
from ..model import Model

_DIR = os.path.dirname(os.path.abspath(__file__))
GO1_SCENE = os.path.join(_DIR, "go1_playground", "scene_mjx_feetonly_flat_terrain.xml")
DEFAULT_FLOATING = {
    "double_pendulum": False,
    "ur5": False,
    "panda": False,
    "solo12": True,
    "talos": True,
    "pendulum": False,
    "acrobot": False,
    "cartpole": False,
}
EXTERNAL_DISTRIBUTION = "example-robot-data"
# example-robot-data packages of robots that move freely (legs, humanoids, flying bases)
FLOATING_PACKAGES = frozenset(
    {
        "a1",
        "alex",
        "alexander",
        "anymal_b_simple",
        "anymal_c_simple",
        "b1",
        "bolt",
        "borinot",
        "centauro",
        "g1",
        "go1",
        "go2",
        "hector",
        "hextilt",
        "human",
        "hyq",
        "icub",
        "iris",
        "laikago",
        "quadruped",
        "romeo",
        "simple_humanoid",
        "solo",
        "talos_data",
    }
)


def available_robots() -> tuple[str, ...]:
    """Names of the robots shipped inside jaxdyn (see :func:`external_robots` for the others)."""
    return tuple(DEFAULT_FLOATING)


@functools.lru_cache(maxsize=1)
def external_index() -> dict[str, tuple[str, str]]:
    """``name -> (path, package)`` for every URDF of the installed example-robot-data."""
    from importlib import metadata

    try:
        dist = metadata.distribution(EXTERNAL_DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return {}
    found = []
    for f in dist.files or ():
        parts = f.parts
        if f.suffix == ".urdf" and "robots" in parts:
            pkg_dir = parts[parts.index("robots") + 1]
            found.append((f.stem, pkg_dir.removesuffix("_description"), str(f.locate())))
    stems: dict[str, int] = {}
    for stem, _, _ in found:
        stems[stem] = stems.get(stem, 0) + 1
    index = {}
    for stem, pkg, path in sorted(found):
        index[stem if stems[stem] == 1 else f"{pkg}/{stem}"] = (path, pkg)
    for stem, pkg, path in sorted(found):  # "<package>/<stem>" for every file: reaches those a shipped name shadows
        index.setdefault(f"{pkg}/{stem}", (path, pkg))
    return index


def external_robots() -> tuple[str, ...]:
    """Names of the example-robot-data URDFs :func:`load_robot` can load (empty when the
    package is not installed)."""
    return tuple(external_index())


class UnknownRobot(KeyError):
    """A robot name that is neither shipped nor in example-robot-data; its message reads as
    written (a plain ``KeyError`` shows the repr of its message, with quotes escaped)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def robot_path(name: str) -> str:
    """Path of a robot's URDF: a shipped robot, else one from example-robot-data."""
    if name in DEFAULT_FLOATING:
        return os.path.join(_DIR, f"{name}.urdf")
    index = external_index()
    if name in index:
        return index[name][0]
    # the nearest known name, shipped or installed, whether or not example-robot-data is there
    best = difflib.get_close_matches(name.lower(), [*DEFAULT_FLOATING, *index], n=1, cutoff=0.6)
    hint = f"did you mean '{best[0]}'? " if best else ""
    if not index:
        raise UnknownRobot(
            f"unknown robot '{name}'; {hint}shipped robots: {', '.join(DEFAULT_FLOATING)}. More published "
            f"robots (go2, a1, anymal, tiago, ...) come with the optional package {EXTERNAL_DISTRIBUTION}: "
            f'pip install "jaxdyn[robots]"'
        )
    close = [n for n in index if name in n] or list(index)
    raise UnknownRobot(
        f"unknown robot '{name}'; {hint}shipped robots: {', '.join(DEFAULT_FLOATING)}; from "
        f"{EXTERNAL_DISTRIBUTION}: {', '.join(close)}"
    )


def default_floating(name: str) -> bool:
    """Whether :func:`load_robot` gives ``name`` a floating base by default."""
    if name in DEFAULT_FLOATING:
        return DEFAULT_FLOATING[name]
    robot_path(name)
    return external_index()[name][1] in FLOATING_PACKAGES


def load_robot(name: str, floating_base: bool | None = None, **kwargs) -> Model:
    """Load a robot by name: shipped with jaxdyn, or from example-robot-data when installed.
    ``floating_base=None`` uses the robot's default (module docstring); other keyword arguments
    go to :func:`~jaxdyn.load_urdf` (e.g. ``inertia="fix"``)."""
    if not isinstance(name, str):
        got = (
            "a jaxdyn.Model, which is already loaded: use it as it is"
            if isinstance(name, Model)
            else type(name).__name__
        )
        raise TypeError(f"load_robot: name must be a robot's name (a str such as 'panda'), got {got}")
    if name.lower().endswith((".urdf", ".xml")) or os.path.isfile(name):
        raise UnknownRobot(
            f"load_robot takes a robot's name, not a file: '{name}'; load a file with jaxdyn.load_urdf(path) "
            "or jaxdyn.load_mjcf(path)"
        )
    path = robot_path(name)
    fb = default_floating(name) if floating_base is None else floating_base
    return load_urdf(path, floating_base=bool(fb), **kwargs)
