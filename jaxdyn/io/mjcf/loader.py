"""The MJCF loader's entry point (:mod:`jaxdyn.io.mjcf`): the file or text, its includes, the
compiler settings, options and defaults, then the body tree (:mod:`.tree`), actuators
(:mod:`.actuators`) and geoms (:mod:`.geoms`) into a :class:`~jaxdyn.Model`."""

from __future__ import annotations

import os
import warnings
import xml.etree.ElementTree as ET

import equinox as eqx
import jax.numpy as jnp
import numpy as np

from ...model import Model, Topology, make_model
from ..errors import check_finite_model, loads_eagerly, source_text
from ..inertia import InertiaPolicy, check_policy
from .actuators import _actuators, effort_limits
from .equality import constraints_from_mjcf
from .geoms import _frames, _geoms
from .parse import Ctx, MJCFError, desc, expand_includes, flag, numbers, parse_defaults
from .schema import check_scene
from .tree import _bodies, _names, add_inertias, inertias, joint_bodies


@loads_eagerly
def load_mjcf(source: str | os.PathLike, *, inertia: str = "warn", dtype=None) -> Model:
    """Load a :class:`~jaxdyn.Model` from an MJCF file path or MJCF text.

    Args:
      source: a path to an MJCF (MuJoCo XML) file, or the XML text itself (includes are then
        looked up from the working directory).
      inertia: ``"warn"`` (default), ``"strict"`` or ``"fix"``: what to do with inertias that
        are not physically consistent (:mod:`jaxdyn.io.inertia`).
      dtype: floating dtype of the model's arrays (default: JAX's default float).

    Raises:
      MJCFError: the model uses a feature jaxdyn cannot reproduce, or is malformed; the message
        names the element (what is supported: :mod:`jaxdyn.io.mjcf`).
    """
    check_policy(inertia)
    root, ctx, gravity = parse_scene(source)
    model_name = root.get("model", "mujoco")

    bodies = _bodies(root, ctx)
    joint_name, jnames = _names(bodies)
    policy = InertiaPolicy(inertia, MJCFError, f"MJCF model '{model_name}'")
    inert = inertias(bodies, ctx, policy)
    jb, dof, owner, jmap, stiff, springs, nv, bnames = joint_bodies(bodies, ctx, joint_name, jnames)
    add_inertias(jb, bodies, inert, owner)
    policy.finish()
    eff = effort_limits(root, ctx, jmap, nv)
    frames = _frames(bodies, owner, bnames)
    geoms, geom_mjbody = _geoms(root, ctx, bodies, owner, dtype)
    if stiff:
        ctx.warnings.insert(
            0,
            "joint stiffness of ball and free joints, and non-linear stiffness terms, are not modelled by jaxdyn "
            "and were dropped for joints: " + ", ".join(stiff),
        )
    if springs:
        ctx.warnings.insert(
            0, "joint springdamper is not modelled by jaxdyn and was dropped for joints: " + ", ".join(springs)
        )
    topo = Topology(
        parents=tuple(jb["parent"]),
        joint_types=tuple(jb["type"]),
        joint_names=tuple(jb["jname"]),
        body_names=tuple(jb["bname"]),
        frame_names=tuple(f[0] for f in frames),
        frame_bodies=tuple(f[1] for f in frames),
    )
    model = make_model(
        topo,
        placement_R=np.array(jb["R"]),
        placement_p=np.array(jb["p"]),
        axis=np.array(jb["axis"]),
        mass=np.array(jb["mass"]),
        com=np.array(jb["com"]),
        inertia=np.array(jb["I"]),
        gravity=gravity,
        frame_R=np.array([f[2] for f in frames]),
        frame_p=np.array([f[3] for f in frames]),
        q_lower=np.array(dof["lo"]),
        q_upper=np.array(dof["hi"]),
        effort_limit=eff,
        damping=np.array(dof["damp"]),
        friction=np.array(dof["fric"]),
        armature=np.array(dof["arm"]),
        stiffness=np.array(dof["stiff"]),
        spring_reference=np.array(dof["sref"]),
        name=model_name,
        dtype=dtype,
        geoms=geoms,
    )
    model = _with_invweights(model, bodies, owner, inert, geom_mjbody, joint_name, jmap, ctx)
    model = model.replace(actuators=_actuators(root, ctx, jmap, model))
    model = model.replace(constraints=constraints_from_mjcf(root, ctx, model, bodies, owner, inert, joint_name, jmap))
    if ctx.warnings:
        warnings.warn(f"MJCF model '{model_name}': " + "; ".join(ctx.warnings), UserWarning, stacklevel=2)
    check_finite_model(model, MJCFError)
    return model


def parse_scene(source):
    """The ``<mujoco>`` element of an MJCF file or text with its includes expanded, the parsing
    context (compiler settings, default classes, mesh assets) and ``<option>``'s gravity: what
    :func:`load_mjcf` and :func:`jaxdyn.sensors.from_mjcf` read the scene's elements with.
    Unsupported elements and malformed XML raise :class:`MJCFError`."""
    text, main_dir = _read(source)
    try:
        root = ET.fromstring(text)
    except ET.ParseError as e:
        raise MJCFError(f"malformed MJCF XML: {e}") from None
    if root.tag != "mujoco":
        hint = " (a URDF file: load it with jaxdyn.load_urdf)" if root.tag == "robot" else ""
        raise MJCFError(f"the root element is <{root.tag}>, expected <mujoco>{hint}")
    expand_includes(root, main_dir, main_dir)
    check_scene(root)  # misspelt or misplaced names first, as MuJoCo refuses them
    ctx = Ctx()
    gravity = _settings(root, ctx)  # compiler and option first (they may follow the body tree)
    ctx.defaults["main"] = {}
    for child in root:
        if child.tag == "default":
            parse_defaults(child, {}, ctx, top=True)
    _refuse_unsupported(root)
    ctx.main_dir = main_dir
    _mesh_assets(root, ctx)
    return root, ctx, gravity


def _read(source):
    text = source_text(source, "load_mjcf", "MJCF")
    if not text.strip():
        raise MJCFError("the MJCF source is empty: give a file path or the XML text of a <mujoco> model")
    if text.lstrip().startswith("<"):
        return text, os.getcwd()
    if not os.path.isfile(text):
        raise MJCFError(f"MJCF file not found: '{text[:200]}'")
    with open(text, encoding="utf-8") as fh:
        return fh.read(), os.path.dirname(os.path.abspath(text))


def _settings(root, ctx):
    """``<compiler>`` settings into ``ctx`` (angles, Euler sequence, limits, inertia options,
    mesh directory); ``<option>``'s gravity (zero with the gravity flag disabled), returned, and
    warnings for the fluid forces it does not model."""
    gravity = np.array([0.0, 0.0, -9.81])
    gravity_on = True
    for c in root.iter("compiler"):
        a = c.attrib
        if "angle" in a:
            if a["angle"] not in ("degree", "radian"):
                raise MJCFError(f"<compiler angle={a['angle']!r}>: expected degree or radian")
            ctx.degree = a["angle"] == "degree"
        if "eulerseq" in a:
            s = a["eulerseq"]
            if len(s) != 3 or any(ch not in "xyzXYZ" for ch in s):
                raise MJCFError(f"<compiler eulerseq={s!r}>: expected 3 characters from xyzXYZ")
            ctx.eulerseq = s
        if "autolimits" in a:
            ctx.autolimits = a["autolimits"] == "true"
        if "inertiafromgeom" in a:
            ctx.inertiafromgeom = flag(a, "inertiafromgeom", "<compiler>", "auto")
        if "inertiagrouprange" in a:
            ctx.inertiagrouprange = tuple(numbers(a["inertiagrouprange"], 2, "<compiler> inertiagrouprange", ints=True))
        for k in ("boundmass", "boundinertia", "settotalmass"):
            if k in a:
                setattr(ctx, k, float(numbers(a[k], 1, f"<compiler> {k}")[0]))
        if "balanceinertia" in a:
            ctx.balanceinertia = a["balanceinertia"] == "true"
        if a.get("coordinate", "local") != "local":
            raise MJCFError("<compiler coordinate='global'>: only local coordinates are supported (as in MuJoCo 3+)")
        if "meshdir" in a or "assetdir" in a:
            ctx.meshdir = a.get("meshdir", a.get("assetdir"))
        if a.get("alignfree", "false") == "true":
            raise MJCFError(
                "<compiler alignfree='true'>: aligning free bodies with their inertial frame is not supported"
            )
    for o in root.iter("option"):
        a = o.attrib
        if "gravity" in a:
            gravity = numbers(a["gravity"], 3, "<option> gravity")
        for k in ("density", "viscosity"):
            if k in a and float(numbers(a[k], 1, f"<option> {k}")[0]) != 0:
                ctx.warnings.append(f"<option {k}>: fluid forces are not modelled by jaxdyn (ignored)")
        if "wind" in a and np.any(numbers(a["wind"], 3, "<option> wind") != 0):
            ctx.warnings.append("<option wind>: fluid forces are not modelled by jaxdyn (ignored)")
        for f in o.iter("flag"):
            if f.get("gravity") == "disable":
                gravity_on = False
    if not gravity_on:
        gravity = np.zeros(3)
    return gravity


def _with_invweights(model, bodies, owner, inert, geom_mjbody, joint_name, jmap, ctx):
    """``model.geoms.invweight``: MuJoCo's ``body_invweight0`` of each geom's MuJoCo body, at
    ``qpos0`` and that body's own centre of mass (:func:`jaxdyn.reference.body_invweights`)."""
    from ...reference import body_invweights, reference_kinematics
    from .equality import reference_configuration

    if not geom_mjbody:
        return model
    q0 = reference_configuration(model, bodies, joint_name, jmap, ctx)
    Rw, pw = reference_kinematics(model, q0)[:2]
    Rw, pw = np.concatenate([Rw, np.eye(3)[None]]), np.concatenate([pw, np.zeros((1, 3))])  # world last
    jbs, points = [], []
    for i in geom_mjbody:
        jb, R, p = owner[i]
        com = np.zeros(3) if not i or inert is None or inert[i] is None else np.asarray(inert[i][1], np.float64)
        jbs.append(jb)
        points.append(Rw[jb] @ (np.asarray(R) @ com + np.asarray(p)) + pw[jb])
    iw = body_invweights(model, q0, jbs, points)
    return eqx.tree_at(lambda m: m.geoms.invweight, model, jnp.asarray(iw, model.geoms.invweight.dtype))


def _refuse_unsupported(root):
    """Deformables, plugins and the model-composition elements are refused by name (tendons and
    equality constraints: :mod:`.equality`)."""
    for child in root:
        tag = child.tag
        if not isinstance(tag, str):
            continue
        if tag in ("deformable", "extension") and len(child):
            first = child[0]
            raise MJCFError(
                f"<{tag}> with content ({desc(first)}, ...) is not supported: jaxdyn models rigid "
                "bodies without deformables or plugins"
            )
        if tag in ("replicate", "attach", "composite", "flexcomp", "skin"):
            raise MJCFError(f"<{tag}> is not supported by jaxdyn's MJCF loader")


def _mesh_assets(root, ctx):
    """The ``<mesh>`` assets by name (a file's base name where unnamed); duplicates refused."""
    for asset in root.findall("asset"):
        for me in asset.findall("mesh"):
            ma = ctx.attrs(me, "main")
            name = ma.get("name") or (os.path.splitext(os.path.basename(ma["file"]))[0] if ma.get("file") else None)
            if name:
                if name in ctx.meshes:
                    raise MJCFError(f"<mesh name='{name}'>: duplicate mesh name")
                ma["_name"] = name
                ctx.meshes[name] = (me, ma)
