"""MJCF (MuJoCo XML) loader: standard-library XML only; MuJoCo is not needed.

:func:`load_mjcf` reads a MuJoCo model file (or its text) into a :class:`~jaxdyn.Model` whose mass
matrix, bias forces, inverse and forward dynamics equal those of MuJoCo's compiled model (checked
in ``tests/test_mjcf.py`` against values MuJoCo computed, ``tests/reference/
generate_mujoco_mjcf.py``). Semantics follow the MJCF reference (XMLreference and the modelling
chapter of MuJoCo's documentation).

Supported
---------
* ``<include file>``: the file is looked up relative to the main model file's directory (as the
  MJCF reference says), then relative to the including file's directory (MuJoCo also finds it
  there). For XML text, the main directory is the working directory.
* ``<default>`` classes (the top one is ``main``), nested classes inherit from their parent;
  ``class`` on elements; ``childclass`` on bodies and frames (applies to all descendants, the
  body's own elements included). ``<freejoint>`` takes no defaults; ``<joint type="free">`` does.
* Joints ``hinge`` (default type; default axis ``0 0 1``), ``slide``, ``ball``, ``free`` and
  ``<freejoint>``. Several joints in one body are composed in order as MuJoCo does (each hinge
  or ball rotates about its anchor ``pos`` in the body frame, axes in the frame left by the
  joints before it): jaxdyn gets one body per joint, the ones before the last massless; the
  last carries the inertia. Joint ``ref`` (hinge, slide) is folded into the joint placement, so
  jaxdyn's ``q`` equals MuJoCo's ``qpos`` (``q = ref`` is the pose written in the file).
* Free bodies: the first moving body, if free, is jaxdyn's free root (body 0, the ``free``
  joint, velocities in its conventions below). Every other free body (objects next to a robot,
  several robots) is MuJoCo's free joint itself: three slides along the world axes and a ball,
  jaxdyn joints ``<name>/x``, ``<name>/y``, ``<name>/z`` and ``<name>`` on massless bodies
  before the body, with ``q = qpos = [p; quat]`` and ``qd = qvel = [v_world; omega_body]``
  exactly as MuJoCo's (no conversion; its armature acts as MuJoCo's).
* Bodies without joints are welded to their parent: their inertia is added to the parent's
  jaxdyn body, and bodies welded to the world (and mocap bodies) are static.
* Orientations ``quat`` (normalised), ``euler`` with ``<compiler eulerseq>`` (lower case:
  axes that rotate with the frame, upper case: fixed axes), ``axisangle``, ``xyaxes``,
  ``zaxis`` (the minimal rotation taking ``+z`` there); ``<compiler angle>`` (default
  ``degree``) for ``euler``, ``axisangle`` and joint ``range`` / ``ref``.
* ``<frame>`` (pose, ``childclass``): its pose is applied to its children (bodies, frames,
  joints, geoms, sites, inertials).
* ``<inertial>`` with ``diaginertia`` (any orientation) or ``fullinertia``;
  ``<compiler inertiafromgeom>`` (``auto``: from geoms only for bodies without an
  ``<inertial>``), ``inertiagrouprange``, ``boundmass``, ``boundinertia``, ``balanceinertia``,
  ``settotalmass`` (applied last, over all bodies but the world). Geom inertias for sphere,
  capsule (a cylinder and two hemispheres), cylinder, box and ellipsoid, solid and of uniform
  density (``density``, default 1000, or ``mass``), posed by ``pos`` / orientation or
  ``fromto`` (the geom frame's ``+z`` then points from the second point to the first, as in
  MuJoCo's compiled model). An attribute with fewer numbers than its array (``size="0.06"``)
  overrides only the leading entries of the inherited value, as MuJoCo reads it.
* Mesh geoms whose mesh asset says ``inertia="exact"`` (directly or through a ``<default>``
  class): the exact volume, centroid and inertia of the closed mesh (STL or OBJ file, found
  through ``<compiler meshdir>`` / ``assetdir``, or inline ``vertex`` + ``face``; ``scale``,
  mirrors included). Vertices are taken in single precision, as MuJoCo stores them.
* Joint ``armature``, ``damping`` (linear coefficient), ``frictionloss`` (-> ``friction``),
  ``range`` with ``limited`` (``<compiler autolimits>``, default true), ``actuatorfrcrange``.
* Actuators with ``joint`` (or ``jointinparent``) transmission on hinge / slide / ball joints:
  each actuator's scalar force is bounded by ``forcerange`` if force-limited and, for a fixed
  gain with no bias and no activation dynamics (``motor``; ``general`` as such), by
  ``|gain| max|ctrlrange|`` if control-limited (the tighter of the two); times ``|gear|`` it
  bounds the joint force. Several actuators on one joint add up; the joint's
  ``actuatorfrcrange`` caps the sum. The result is ``effort_limit`` (inf where unbounded).
* ``<option gravity>`` and ``<flag gravity="disable">`` -> ``model.gravity``.
* Geoms are stored in ``model.geoms`` (:class:`~jaxdyn.geometry.Geoms`, in jaxdyn body
  frames; height fields are skipped; a mesh keeps the frame written in the file, where MuJoCo
  moves it to the mesh's centroid, and its convex hull's vertices go to ``Geoms.vertices`` for
  contact: STL and OBJ files and inline ``vertex`` data are read, other meshes load with a
  warning and do not collide; the meshes of geoms that never collide, ``contype`` and
  ``conaffinity`` 0 and in no ``<pair>`` (visual geoms), are not read). Every MuJoCo body is a named frame
  (``model.frame_names``; the world is ``"world"``), and so is every named site (posed by
  ``pos`` / orientation or ``fromto``; called ``"site:NAME"`` where a body has the same name).

Names: jaxdyn's joints are MuJoCo's joints, one jaxdyn body each, in MuJoCo's order (so the dof
order is MuJoCo's). The jaxdyn body of a MuJoCo body's last joint has the MuJoCo body's name,
earlier ones ``"BODY/JOINT"``. A jaxdyn body's frame is at the anchor of its hinge or ball
joint (MuJoCo's body frame moved by the joint ``pos``), with the MuJoCo body's orientation; the
named frame of the MuJoCo body is exact. Unnamed bodies and joints are called ``body<id>`` /
``joint<id>`` with MuJoCo's ids.

Joint springs of hinge and slide joints (``stiffness``, ``springref``) load into
``model.stiffness`` / ``model.spring_reference`` (applied by :mod:`jaxdyn.sim`). Warned about
(``UserWarning``) and otherwise ignored, since jaxdyn's model has no place for them: springs of
ball and free joints, non-linear ``stiffness`` terms, ``springdamper``, non-linear ``damping`` coefficients, body
``gravcomp``, joint ``actuatorgravcomp``, fluid forces (``<option density viscosity wind>``).
Also warned about, and loaded: ``armature`` on a free joint (``<joint type="free">`` under a
default with armature; ``<freejoint>`` has none). jaxdyn adds ``armature * qdd`` with the linear
part in body axes, MuJoCo ``armature * qacc`` with it in world axes: the mass matrices agree
(the armature is the same on the three axes), the bias forces differ by
``armature * (omega_b x v_b)`` on the linear dofs.

Refused (:class:`MJCFError`, naming the element), because the result would not be MuJoCo's
model: ``<tendon>`` and ``<equality>`` with content (closed loops, couplings), ``<deformable>``,
``<composite>``, ``<flexcomp>``, ``<replicate>``, ``<attach>``, ``<skin>``, ``<plugin>``,
``<extension>`` with content; a free joint
below another moving body or with other joints in its body, a ball joint followed by a hinge or
ball in the same body (MuJoCo refuses it too); a geom that would give a body its inertia but is
a height field, an SDF, a mesh with ``inertia="shell"``, or with MuJoCo's default ``legacy``
when it is not convex (``exact`` and ``convex`` are computed, and ``legacy`` of a convex closed
mesh, which equals ``exact``; a mesh without faces is its convex hull), a mesh that encloses no volume,
or asks for ``shellinertia`` or mesh fitting (add an ``<inertial>``, the message says so); ``<freejoint align="true">`` / ``<compiler alignfree="true">`` (moves the body
frame); frame ``scale``; actuators with tendon, site, body or slider-crank transmission, or on a
free joint; missing include files, unknown default classes, duplicate names, unknown elements
in the body tree, and numbers that do not parse, are not finite or come in the wrong count
(the message names element and attribute). Elements that do not affect the dynamics
(``visual``, ``asset``, ``sensor``, ``keyframe``, ``statistic``, ``custom``,
``size``, cameras, lights) are ignored.

``<contact>``: ``<exclude body1 body2>`` becomes ``model.geoms.exclude`` (the geoms of the two
MuJoCo bodies, also where welded bodies were merged into one jaxdyn body) and ``<pair geom1
geom2>`` ``model.geoms.pairs`` (:mod:`jaxdyn.contact` collides them as MuJoCo does, with its own
force law) with its sliding friction (the first of ``friction``, default 1) in
``model.geoms.pair_friction`` (0 for a pair of ``condim="1"``: frictionless) and its
``margin`` in ``model.geoms.pair_margin``, its ``condim`` in ``model.geoms.pair_condim`` and its
torsional and rolling friction (``friction``'s third and fourth numbers) in
``model.geoms.pair_angular``; a pair's own ``solref`` and ``solimp`` are warned about and not
read. Geom ``margin`` goes to ``model.geoms.margin``: a contact acts from the sum
of its geoms' margins on (a pair's own margin instead), as in MuJoCo 4. ``gap`` (geom or pair)
only widens MuJoCo's contact detection, for contacts that carry no force, and is not read. A geom touching a
plane uses the larger of the two sliding frictions (with ``jaxdyn.contact.Ground.from_model``),
as MuJoCo. Geom ``condim`` goes to ``model.geoms.condim`` and ``friction`` (sliding, torsional,
rolling) to ``model.geoms.friction``: a contact whose combined dimension is 1 is frictionless,
3 has sliding friction, 4 adds torsional and 6 rolling friction, as in MuJoCo.

Free-joint velocities
---------------------
MuJoCo's free joint: ``qpos = [p; quat]`` (as jaxdyn's), ``qvel = [v_w; omega_b]`` with ``v_w``
the velocity of the body origin in world axes and ``omega_b`` the angular velocity in body axes.
jaxdyn's: ``qd = [omega_b; v_b]``, both in body axes. With ``R`` the body-to-world rotation of
``quat``:

* velocity: ``v_w = R v_b``, so ``qd = [omega_b; R^T v_w]`` and ``qvel = [R v_b; omega_b]``;
* acceleration: ``d/dt v_b = d/dt (R^T v_w) = R^T a_w - omega_b x v_b`` (``dR/dt = R [omega_b]x``),
  so ``qdd = [domega_b; R^T a_w - omega_b x v_b]`` and ``qacc = [R (dv_b + omega_b x v_b);
  domega_b]``;
* generalised force, by power duality (``f_mj . qvel = f . qd`` for all velocities): MuJoCo's
  ``[F_w; tau_b]`` (world force, body torque) is jaxdyn's ``[tau_b; R^T F_w]``, and back
  ``[R f_b; tau_b]``. The mass matrix maps as ``M = T^T M_mj T`` with ``qvel = T qd``.

Hinge, slide and ball dofs are the same in both (a ball's velocity is the angular velocity in
the child frame in both); :func:`velocity_from_mujoco` and the other converters below change
only the free joint's six entries.
"""

from __future__ import annotations

import os
import warnings
import xml.etree.ElementTree as ET

import jax.numpy as jnp
import numpy as np

from .. import spatial
from ..geometry import TYPE_CODES, make_geoms
from ..model import Model, Topology, make_model
from .errors import check_finite_model
from .inertia import InertiaPolicy, check_policy, combine
from .meshes import hull_vertices, read_stl
from .mjcf_inertia import (
    _body_inertia,
    _bounds,
    _geom_shape,
    geom_volume_inertia,
    mesh_points,
    mesh_volume_inertia,
)
from .mjcf_parse import (
    ACTUATORS,
    I3,
    MIN_MASS,
    REFUSED_BODY,
    MJCFError,
    _actuator_semantics,
    _compose,
    _Ctx,
    _desc,
    _expand_includes,
    _numbers,
    _parse_defaults,
    _pose,
    _rot,
    _unit,
    _z_to,
)

__all__ = [
    "MJCFError",
    "geom_volume_inertia",
    "mesh_volume_inertia",
    "read_stl",
    "acceleration_from_mujoco",
    "acceleration_to_mujoco",
    "force_from_mujoco",
    "force_to_mujoco",
    "load_mjcf",
    "velocity_from_mujoco",
    "velocity_to_mujoco",
]


# --------------------------------------------------------------------------------------------
# the body tree


class _Body:
    def __init__(self, name, parent, R, p, elem, mocap=False):
        self.name, self.parent, self.R, self.p, self.elem, self.mocap = name, parent, R, p, elem, mocap
        self.joints = []  # (elem, attrs, kind, R, p) -- joint pose in the body frame
        self.geoms = []  # (elem, attrs, R, p)
        self.sites = []  # (name, R, p)
        self.inertial = None  # (elem, attrs, R, p)


def _collect(container, body, pose, cls, bodies, ctx):
    for child in container:
        tag = child.tag
        if not isinstance(tag, str):  # comments
            continue
        what = _desc(child)
        if tag == "body":
            a = child.attrib
            if "class" in a:
                raise MJCFError(f"{what}: bodies take no class attribute (use childclass)")
            R, p = _compose(pose, _pose(a, ctx, what))
            mocap = a.get("mocap", "false") == "true"
            b = _Body(a.get("name"), body, R, p, child, mocap)
            if "gravcomp" in a and float(_numbers(a["gravcomp"], 1, f"{what} gravcomp")[0]) != 0:
                ctx.warnings.append(f"body '{a.get('name')}': gravcomp (gravity compensation) is ignored")
            bodies.append(b)
            _collect(child, len(bodies) - 1, I3, a.get("childclass", cls), bodies, ctx)
        elif tag == "frame":
            a = child.attrib
            if "scale" in a or "massscale" in a:
                raise MJCFError(f"{what}: frame scale / massscale are not supported")
            if a.get("childclass") and a["childclass"] not in ctx.defaults:
                raise MJCFError(f"{what}: unknown default class '{a['childclass']}'")
            _collect(child, body, _compose(pose, _pose(a, ctx, what)), a.get("childclass", cls), bodies, ctx)
        elif tag in ("joint", "freejoint"):
            if body == 0:
                raise MJCFError(f"{what}: joints cannot be attached to the world body")
            if tag == "freejoint":
                a = dict(child.attrib)
                if a.get("align", "auto") == "true":
                    raise MJCFError(
                        f"{what}: align='true' (moving the body frame to the inertial frame) is not supported"
                    )
                a["type"] = "free"
            else:
                a = ctx.attrs(child, cls)
            bodies[body].joints.append((child, a, a.get("type", "hinge"), pose))
        elif tag == "geom":
            a = ctx.attrs(child, cls)
            bodies[body].geoms.append((child, a, pose))
        elif tag == "site":
            a = ctx.attrs(child, cls)
            if "fromto" in a:  # as for geoms
                ft = _numbers(a["fromto"], 6, f"{what} fromto")
                R, p = _compose(pose, (_z_to(ft[:3] - ft[3:], f"{what} fromto"), (ft[:3] + ft[3:]) / 2))
            else:
                R, p = _compose(pose, _pose(a, ctx, what))
            if a.get("name"):
                bodies[body].sites.append((a["name"], R, p))
        elif tag == "inertial":
            if body == 0:
                raise MJCFError(f"{what}: the world body takes no inertial")
            if bodies[body].inertial is not None:
                raise MJCFError(f"{what} in body '{bodies[body].name}': a second <inertial>")
            bodies[body].inertial = (child, dict(child.attrib), pose)
        elif tag in ("camera", "light"):
            continue
        elif tag in REFUSED_BODY:
            raise MJCFError(f"{what}: <{tag}> is not supported by jaxdyn's MJCF loader")
        else:
            raise MJCFError(f"{what}: unknown element <{tag}> in the body tree")


# --------------------------------------------------------------------------------------------
# the loader


def _read(source):
    text = str(source)
    if not text.strip():
        raise MJCFError("the MJCF source is empty: give a file path or the XML text of a <mujoco> model")
    if text.lstrip().startswith("<"):
        return text, os.getcwd()
    if not os.path.isfile(text):
        raise MJCFError(f"MJCF file not found: '{text[:200]}'")
    with open(text, encoding="utf-8") as fh:
        return fh.read(), os.path.dirname(os.path.abspath(text))


def _flag(a, key, what, default):
    v = a.get(key, default)
    if v not in ("true", "false", "auto"):
        raise MJCFError(f"{what}: {key}={v!r}, expected true, false or auto")
    return v


def _limited(a, key_lim, key_range, ctx, what):
    """Whether an element's range is in force (``limited`` with MuJoCo's autolimits)."""
    v = _flag(a, key_lim, what, "auto")
    if v == "auto":
        if ctx.autolimits:
            return key_range in a
        if key_range in a and np.any(_numbers(a[key_range], 2, f"{what} {key_range}") != 0):
            raise MJCFError(f"{what}: {key_range} given without {key_lim} (compiler autolimits='false')")
        return False
    return v == "true"


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
        names the element (module docstring).
    """
    check_policy(inertia)
    text, main_dir = _read(source)
    try:
        root = ET.fromstring(text)
    except ET.ParseError as e:
        raise MJCFError(f"malformed MJCF XML: {e}") from None
    if root.tag != "mujoco":
        raise MJCFError(f"the root element is <{root.tag}>, expected <mujoco>")
    _expand_includes(root, main_dir, main_dir)
    ctx = _Ctx()
    model_name = root.get("model", "mujoco")
    gravity = np.array([0.0, 0.0, -9.81])
    gravity_on = True

    # compiler and option first (they may follow the body tree in the file)
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
            ctx.inertiafromgeom = _flag(a, "inertiafromgeom", "<compiler>", "auto")
        if "inertiagrouprange" in a:
            ctx.inertiagrouprange = tuple(
                _numbers(a["inertiagrouprange"], 2, "<compiler> inertiagrouprange", ints=True)
            )
        for k in ("boundmass", "boundinertia", "settotalmass"):
            if k in a:
                setattr(ctx, k, float(_numbers(a[k], 1, f"<compiler> {k}")[0]))
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
            gravity = _numbers(a["gravity"], 3, "<option> gravity")
        for k in ("density", "viscosity"):
            if k in a and float(_numbers(a[k], 1, f"<option> {k}")[0]) != 0:
                ctx.warnings.append(f"<option {k}>: fluid forces are not modelled by jaxdyn (ignored)")
        if "wind" in a and np.any(_numbers(a["wind"], 3, "<option> wind") != 0):
            ctx.warnings.append("<option wind>: fluid forces are not modelled by jaxdyn (ignored)")
        for f in o.iter("flag"):
            if f.get("gravity") == "disable":
                gravity_on = False
    if not gravity_on:
        gravity = np.zeros(3)

    ctx.defaults["main"] = {}
    for child in root:
        if child.tag == "default":
            _parse_defaults(child, {}, ctx, top=True)

    for child in root:
        tag = child.tag
        if not isinstance(tag, str):
            continue
        if tag in ("tendon", "equality", "deformable", "extension") and len(child):
            first = child[0]
            raise MJCFError(
                f"<{tag}> with content ({_desc(first)}, ...) is not supported: jaxdyn models a "
                "kinematic tree without tendons, equality constraints, deformables or plugins"
            )
        if tag in ("replicate", "attach", "composite", "flexcomp", "skin"):
            raise MJCFError(f"<{tag}> is not supported by jaxdyn's MJCF loader")

    ctx.main_dir = main_dir
    for asset in root.findall("asset"):
        for me in asset.findall("mesh"):
            ma = ctx.attrs(me, "main")
            name = ma.get("name") or (os.path.splitext(os.path.basename(ma["file"]))[0] if ma.get("file") else None)
            if name:
                if name in ctx.meshes:
                    raise MJCFError(f"<mesh name='{name}'>: duplicate mesh name")
                ma["_name"] = name
                ctx.meshes[name] = (me, ma)

    # ---- the body tree, in document order
    bodies = [_Body("world", None, np.eye(3), np.zeros(3), None)]
    for wb in root.findall("worldbody"):
        _collect(wb, 0, I3, "main", bodies, ctx)

    # names: MuJoCo's ids for unnamed bodies / joints; duplicates refused
    seen = {}
    for i, b in enumerate(bodies):
        if b.name is None:
            continue
        if b.name in seen:
            raise MJCFError(f"<body name='{b.name}'>: duplicate body name")
        seen[b.name] = i
    for i, b in enumerate(bodies):
        if b.name is None:
            b.name = f"body{i}"
            while b.name in seen:
                b.name += "_"
            seen[b.name] = i
    jnames, jid = set(), 0
    all_joints = []
    for b in bodies:
        for j in b.joints:
            n = j[1].get("name")
            if n:
                if n in jnames:
                    raise MJCFError(f"<joint name='{n}'>: duplicate joint name")
                jnames.add(n)
            all_joints.append((jid, b, j))
            jid += 1
    for kind, tagset in (("geom", "geoms"), ("site", "sites")):
        names = set()
        for b in bodies:
            for item in getattr(b, tagset):
                n = item[1].get("name") if kind == "geom" else item[0]
                if n:
                    if n in names:
                        raise MJCFError(f"<{kind} name='{n}'>: duplicate {kind} name")
                    names.add(n)
    joint_name = {}
    for jid, _b, j in all_joints:
        n = j[1].get("name")
        if not n:
            n = f"joint{jid}"
            while n in jnames:
                n += "_"
            jnames.add(n)
        joint_name[id(j)] = n

    # ---- inertias of the MuJoCo bodies (own frames)
    policy = InertiaPolicy(inertia, MJCFError, f"MJCF model '{model_name}'")
    inert = [(0.0, np.zeros(3), np.zeros((3, 3)))]
    for b in bodies[1:]:
        m, c, I, explicit = _body_inertia(b, ctx)
        _finite(f"body '{b.name}': mass, centre of mass or inertia", m, c, I)
        m, I = _bounds(m, I, explicit, ctx)
        inert.append((m, c, I))
    if ctx.settotalmass > 0:
        total = sum(x[0] for x in inert[1:])
        if total <= 0:
            raise MJCFError("<compiler settotalmass>: the model has no mass to scale")
        s = ctx.settotalmass / total
        inert = [(m * s, c, I * s) for m, c, I in inert]
        _finite("<compiler settotalmass>: scaled masses", *[x[0] for x in inert], *[x[2] for x in inert])
    for i, _b in enumerate(bodies[1:], 1):
        m, c, I = inert[i]
        if b.inertial is not None or m > 0:
            inert[i] = (m, c, policy(m, I, f"body '{b.name}'" + (" <inertial>" if b.inertial is not None else "")))

    # ---- jaxdyn bodies: one per MuJoCo joint, in MuJoCo's order
    jb = dict(parent=[], type=[], jname=[], bname=[], R=[], p=[], axis=[], mass=[], com=[], I=[])
    dof = dict(lo=[], hi=[], arm=[], damp=[], fric=[], stiff=[], sref=[])
    owner = {0: (-1, np.eye(3), np.zeros(3))}
    jmap = {}  # joint name -> (jaxdyn body, first dof, MuJoCo type, actuatorfrcrange bound)
    stiff, springs = [], []
    nv = 0
    bnames = set(b.name for b in bodies)

    def new_body(parent, jtype, jname, bname, R, p, axis):
        for k, v in (
            ("parent", parent),
            ("type", jtype),
            ("jname", jname),
            ("bname", bname),
            ("R", R),
            ("p", p),
            ("axis", axis),
            ("mass", 0.0),
            ("com", np.zeros(3)),
            ("I", np.zeros((3, 3))),
        ):
            jb[k].append(v)
        return len(jb["parent"]) - 1

    for i, b in enumerate(bodies[1:], 1):
        pb, Ro, po = owner[b.parent]
        C = _compose((Ro, po), (b.R, b.p))
        what = f"body '{b.name}'"
        if b.mocap and b.joints:
            raise MJCFError(f"{what}: a mocap body cannot have joints")
        kinds = [j[2] for j in b.joints]
        for k, (_elem, a, kind, pose) in enumerate(b.joints):
            jn = joint_name[id(b.joints[k])]
            jw = f"joint '{jn}' in {what}"
            if kind not in ("hinge", "slide", "ball", "free"):
                raise MJCFError(f"{jw}: unknown joint type '{kind}'")
            if kind in ("hinge", "ball") and "ball" in kinds[:k]:
                raise MJCFError(f"{jw}: a ball joint followed by a rotation in the same body (MuJoCo refuses it too)")
            jp = _numbers(a["pos"], 3, f"{jw} pos") if "pos" in a else np.zeros(3)
            jp = pose[0] @ jp + pose[1]
            if kind == "free":
                if len(b.joints) > 1:
                    raise MJCFError(f"{jw}: a free joint must be the only joint of its body")
                if pb != -1:
                    raise MJCFError(f"{jw}: a free joint is only allowed in a body attached to the world")
                if not jb["parent"]:  # the first moving body: jaxdyn's free root, body 0
                    pb = new_body(-1, "free", jn, b.name, np.eye(3), np.zeros(3), np.zeros(3))
                else:
                    # any other free body: MuJoCo's free joint itself, three slides along the world
                    # axes and a ball (qpos [p; quat], qvel [v_world; omega_body], as MuJoCo's)
                    for k_ax, axis_name in enumerate("xyz"):
                        bn, sn = f"{b.name}/{jn}/{axis_name}", f"{jn}/{axis_name}"
                        while bn in bnames:
                            bn += "_"
                        while sn in jnames:
                            sn += "_"
                        bnames.add(bn)
                        jnames.add(sn)
                        pb = new_body(pb, "prismatic", sn, bn, np.eye(3), np.zeros(3), np.eye(3)[k_ax])
                    pb = new_body(pb, "spherical", jn, b.name, np.eye(3), np.zeros(3), np.zeros(3))
                C = I3
                n_dof, ax = 6, np.zeros(3)
            else:
                ax = np.zeros(3)
                if kind in ("hinge", "slide"):
                    ax = _numbers(a.get("axis", "0 0 1"), 3, f"{jw} axis")
                    if np.max(np.abs(ax)) < 1e-12:
                        raise MJCFError(f"{jw}: zero axis")
                    ax = pose[0] @ _unit(ax)
                ref = float(_numbers(a["ref"], 1, f"{jw} ref")[0]) if "ref" in a else 0.0
                if kind == "hinge":
                    ref = ctx.angle(ref)
                    place = _compose(C, (_rot(ax, -ref), jp))
                    after = (np.eye(3), -jp)
                elif kind == "ball":
                    place = _compose(C, (np.eye(3), jp))
                    after = (np.eye(3), -jp)
                else:
                    place = _compose(C, (np.eye(3), -ax * ref))
                    after = I3
                last = k == len(b.joints) - 1
                bn = b.name if last else f"{b.name}/{jn}"
                while not last and bn in bnames:
                    bn += "_"
                jtype = {"hinge": "revolute", "slide": "prismatic", "ball": "spherical"}[kind]
                pb = new_body(pb, jtype, jn, bn, place[0], place[1], ax)
                C = after
                n_dof = 3 if kind == "ball" else 1
            # joint parameters
            arm = float(_numbers(a.get("armature", "0"), 1, f"{jw} armature")[0])
            dmp = _numbers(a.get("damping", "0"), 3, f"{jw} damping", at_least=1)
            fr = float(_numbers(a.get("frictionloss", "0"), 1, f"{jw} frictionloss")[0])
            st = _numbers(a.get("stiffness", "0"), 3, f"{jw} stiffness", at_least=1)
            # joint springs of hinge/slide joints go into the model (q is MuJoCo's qpos, the ref
            # folded into the placement); ball and free springs and non-linear terms are dropped
            if kind in ("hinge", "slide"):
                sref = float(_numbers(a["springref"], 1, f"{jw} springref")[0]) if "springref" in a else 0.0
                dof["stiff"] += [float(st[0])]
                dof["sref"] += [ctx.angle(sref) if kind == "hinge" else sref]
                if np.any(st[1:] != 0):
                    stiff.append(jn)
            else:
                dof["stiff"] += [0.0] * n_dof
                dof["sref"] += [0.0] * {"free": 7, "ball": 4}[kind]
                if np.any(st != 0):
                    stiff.append(jn)
            if kind == "free" and arm != 0 and jb["type"][pb] == "free":
                ctx.warnings.append(
                    f"joint '{jn}': armature on a free joint enters jaxdyn on body-frame velocities, MuJoCo's on "
                    "the world-frame linear velocity: the mass matrices agree, the bias forces differ by "
                    "armature * (omega x v) on the linear dofs"
                )
            if np.any(dmp[1:] != 0):
                ctx.warnings.append(
                    f"joint '{jn}': non-linear damping coefficients {list(dmp[1:])} ignored "
                    "(jaxdyn's damping is linear)"
                )
            if "springdamper" in a and np.any(_numbers(a["springdamper"], 2, f"{jw} springdamper") != 0):
                springs.append(jn)
            if a.get("actuatorgravcomp", "false") == "true":
                ctx.warnings.append(f"joint '{jn}': actuatorgravcomp is ignored")
            lo, hi = -np.inf, np.inf
            if kind in ("hinge", "slide") and _limited(a, "limited", "range", ctx, jw):
                r = _numbers(a.get("range", "0 0"), 2, f"{jw} range")
                if kind == "hinge":
                    r = np.array([ctx.angle(r[0]), ctx.angle(r[1])])
                if not r[0] < r[1]:
                    raise MJCFError(f"{jw} range: the lower limit must be below the upper, got {a.get('range')!r}")
                lo, hi = r
            elif kind == "ball" and "range" in a:
                _numbers(a["range"], 2, f"{jw} range")
            nq = {"free": 7, "ball": 4}.get(kind, 1)
            dof["lo"] += [lo] * nq if nq == 1 else [-np.inf] * nq
            dof["hi"] += [hi] * nq if nq == 1 else [np.inf] * nq
            dof["arm"] += [arm] * n_dof
            dof["damp"] += [float(dmp[0])] * n_dof
            dof["fric"] += [fr] * n_dof
            afr = np.inf
            if _limited(a, "actuatorfrclimited", "actuatorfrcrange", ctx, jw):
                afr = float(np.max(np.abs(_numbers(a.get("actuatorfrcrange", "0 0"), 2, f"{jw} actuatorfrcrange"))))
            jmap[jn] = (pb, nv, kind, afr)
            nv += n_dof
        owner[i] = (pb, C[0], C[1])

    if not jb["parent"]:
        raise MJCFError("<worldbody> holds no <joint> or <freejoint>: nothing moves")

    # inertia of each MuJoCo body onto its jaxdyn body
    for i, _b in enumerate(bodies[1:], 1):
        m, c, I = inert[i]
        ob, Ro, po = owner[i]
        if ob < 0 or (m == 0 and not np.any(I)):
            continue
        jb["mass"][ob], jb["com"][ob], jb["I"][ob] = combine(
            jb["mass"][ob], jb["com"][ob], jb["I"][ob], m, Ro @ c + po, Ro @ I @ Ro.T
        )
    for b in range(len(jb["parent"])):
        _finite(
            f"joint '{jb['jname'][b]}' (body '{jb['bname'][b]}'): placement, axis, mass or inertia",
            jb["R"][b],
            jb["p"][b],
            jb["axis"][b],
            jb["mass"][b],
            jb["com"][b],
            jb["I"][b],
        )
    _check_massless(jb)
    policy.finish()

    # ---- actuators -> effort limits
    eff = np.zeros(nv)
    has = np.zeros(nv, bool)
    anames = set()
    for act_root in root.findall("actuator"):
        for k, e in enumerate(act_root):
            if not isinstance(e.tag, str):
                continue
            what = _desc(e) if e.get("name") else f"<{e.tag}> (actuator {k})"
            if e.tag not in ACTUATORS:
                raise MJCFError(f"{what}: unknown actuator element")
            n = e.get("name")
            if n:
                if n in anames:
                    raise MJCFError(f"{what}: duplicate actuator name")
                anames.add(n)
            a = ctx.attrs(e, "main", "actuator")
            a.update(_actuator_semantics(e.tag, e.attrib))
            for t in ("tendon", "site", "body", "cranksite", "slidersite"):
                if t in e.attrib or (e.tag == "adhesion"):
                    raise MJCFError(
                        f"{what}: transmission through a {t if t in e.attrib else 'body'} is not "
                        "supported (only joint transmission)"
                    )
            jn = e.get("joint") or e.get("jointinparent")
            if not jn:
                raise MJCFError(f"{what}: no joint transmission")
            if jn not in jmap:
                raise MJCFError(f"{what}: joint '{jn}' is not defined")
            body_i, d0, kind, _ = jmap[jn]
            if kind == "free":
                raise MJCFError(f"{what}: actuators on a free joint are not supported")
            bound = np.inf
            if _limited(a, "forcelimited", "forcerange", ctx, what):
                bound = float(np.max(np.abs(_numbers(a.get("forcerange", "0 0"), 2, f"{what} forcerange"))))
            simple = (
                a.get("_gaintype", "fixed") == "fixed"
                and a.get("_biastype", "none") == "none"
                and a.get("_dyntype", "none") == "none"
            )
            if simple and _limited(a, "ctrllimited", "ctrlrange", ctx, what):
                gain = abs(float(_numbers(a.get("_gain", "1"), 1, f"{what} gainprm")[0]))
                ctrl = float(np.max(np.abs(_numbers(a.get("ctrlrange", "0 0"), 2, f"{what} ctrlrange"))))
                bound = min(bound, gain * ctrl)
            gear = _numbers(a.get("gear", "1"), 6, f"{what} gear", at_least=1)
            ndof = 3 if kind == "ball" else 1
            g = np.zeros(6)
            g[: len(gear)] = gear
            for c in range(ndof):
                eff[d0 + c] += abs(g[c]) * bound if g[c] != 0 else 0.0
                has[d0 + c] = True
    eff[~has] = np.inf
    for _body_i, d0, kind, afr in jmap.values():
        n_dof = {"free": 6, "ball": 3}.get(kind, 1)
        eff[d0 : d0 + n_dof] = np.minimum(eff[d0 : d0 + n_dof], afr)

    # ---- frames (MuJoCo bodies, named sites) and geoms
    frames = [("world", -1, np.eye(3), np.zeros(3))]
    site_frames = []
    for i, b in enumerate(bodies):
        ob, Ro, po = owner[i]
        if i:
            frames.append((b.name, ob, Ro, po))
        for sn, R, p in b.sites:
            site_frames.append((f"site:{sn}" if sn in bnames else sn, ob, Ro @ R, Ro @ p + po))
    frames += site_frames
    g = dict(
        type=[],
        size=[],
        body=[],
        pos=[],
        R=[],
        friction=[],
        contype=[],
        conaffinity=[],
        priority=[],
        condim=[],
        margin=[],
        names=[],
    )
    g_mjbody = []  # the MuJoCo body of each geom (<contact><exclude> names those)
    g_vert, g_vgeom = [np.zeros((0, 3))], []  # mesh geoms' convex-hull vertices and their geoms
    mesh_geoms = []  # (geom index, attributes, description) of the mesh geoms
    skipped_geoms = set()  # names of height fields and SDFs, which are not loaded
    for i, b in enumerate(bodies):
        ob, Ro, po = owner[i]
        for elem, a, pose in b.geoms:
            gw = f"geom {_desc(elem)} in body '{b.name}'"
            gtype = a.get("type", "sphere")
            if gtype in ("hfield", "sdf"):
                skipped_geoms.add(a.get("name"))
                continue
            if gtype in ("mesh", "plane"):
                R, p = _compose(pose, _pose(a, ctx, gw))
                raw = _numbers(a["size"], 3, f"{gw} size", at_least=1) if "size" in a else np.zeros(0)
                size = np.zeros(3)
                if gtype == "plane":
                    size[: len(raw)] = raw
            else:
                gtype, size, R, p = _geom_shape(elem, a, ctx, pose, gw)
            fr = np.array([1.0, 0.005, 0.0001])
            if "friction" in a:
                f = _numbers(a["friction"], 3, f"{gw} friction", at_least=1)
                fr[: len(f)] = f
            g["type"].append(TYPE_CODES[gtype])
            g["size"].append(size)
            g["body"].append(ob)
            g["pos"].append(Ro @ p + po)
            g["R"].append(Ro @ R)
            g["friction"].append(fr)
            g["contype"].append(int(_numbers(a.get("contype", "1"), 1, f"{gw} contype", ints=True)[0]))
            g["conaffinity"].append(int(_numbers(a.get("conaffinity", "1"), 1, f"{gw} conaffinity", ints=True)[0]))
            g["priority"].append(int(_numbers(a.get("priority", "0"), 1, f"{gw} priority", ints=True)[0]))
            g["condim"].append(_condim(a, gw))
            g["margin"].append(float(_numbers(a.get("margin", "0"), 1, f"{gw} margin")[0]))
            g["names"].append(a.get("name", ""))
            g_mjbody.append(i)
            if gtype == "mesh":
                mesh_geoms.append((len(g["type"]) - 1, a, gw))
    exclude, pairs, pair_values = _contact_lists(root, ctx, bodies, g_mjbody, g["names"], skipped_geoms)
    in_pairs = {k for p in pairs for k in p}
    for k, a, gw in mesh_geoms:  # the hulls of the meshes that may collide (visual ones never do)
        if g["contype"][k] or g["conaffinity"][k] or k in in_pairs:
            hull = _mesh_hull(ctx, a, gw)
            g_vert.append(hull)
            g_vgeom += [k] * len(hull)
    for k in range(len(g["type"])):
        _finite(
            f"geom '{g['names'][k] or k}': size, pose or friction",
            g["size"][k],
            g["pos"][k],
            g["R"][k],
            g["friction"][k],
        )
    for f in frames:
        _finite(f"frame '{f[0]}': pose", f[2], f[3])
    ng = len(g["type"])
    geoms = make_geoms(
        type=np.array(g["type"], np.int64),
        size=np.array(g["size"]).reshape(ng, 3),
        body=np.array(g["body"], np.int64),
        pos=np.array(g["pos"]).reshape(ng, 3),
        R=np.array(g["R"]).reshape(ng, 3, 3),
        friction=np.array(g["friction"]).reshape(ng, 3),
        contype=np.array(g["contype"], np.int64),
        conaffinity=np.array(g["conaffinity"], np.int64),
        priority=np.array(g["priority"], np.int64),
        condim=np.array(g["condim"], np.int64),
        margin=np.array(g["margin"], np.float64),
        names=tuple(g["names"]),
        exclude=exclude,
        pairs=pairs,
        **pair_values,
        vertices=np.concatenate(g_vert),
        vertex_geom=g_vgeom,
        dtype=dtype,
    )
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
    if ctx.warnings:
        warnings.warn(f"MJCF model '{model_name}': " + "; ".join(ctx.warnings), UserWarning, stacklevel=2)

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
    check_finite_model(model, MJCFError)
    return model


def _mesh_hull(ctx, a, gw):
    """The convex-hull vertices of a mesh geom's mesh in the geom frame, or none (warned) where
    jaxdyn cannot read the mesh: the geom then does not collide."""
    mesh = ctx.meshes.get(a.get("mesh"))
    try:
        if mesh is None:
            raise MJCFError(f"the mesh '{a.get('mesh')}' it names is not defined in <asset>")
        vert, _ = mesh_points(mesh[1], ctx, f"<mesh name='{mesh[1].get('_name')}'>")
    except MJCFError as e:
        ctx.warnings.append(f"{gw}: {e}; the geom does not collide")
        return np.zeros((0, 3))
    return hull_vertices(vert)


# an explicit pair's contact parameters that jaxdyn's force law has no counterpart for (its
# ``friction``, ``margin`` and ``condim`` are read; ``gap`` only widens MuJoCo's contact
# detection beyond the margin, for contacts without force)
PAIR_PARAMETERS = ("solref", "solreffriction", "solimp")


def _condim(a, what) -> int:
    """A geom's or pair's ``condim`` (MuJoCo's default 3); 1, 3, 4 or 6."""
    dim = int(_numbers(a.get("condim", "3"), 1, f"{what} condim", ints=True)[0])
    if dim not in (1, 3, 4, 6):
        raise MJCFError(f"{what}: condim must be 1, 3, 4 or 6, got {dim}")
    return dim


def _contact_lists(root, ctx, bodies, g_mjbody, g_names, skipped):
    """``<contact>``: ``<exclude body1 body2>`` as geom index pairs (every geom of the one
    MuJoCo body against every geom of the other), ``<pair geom1 geom2>`` as explicit geom pairs,
    with their sliding, torsional and rolling friction (``friction``'s first, third and fourth
    numbers, MuJoCo's defaults ``1 1 0.005 0.0001 0.0001``), ``condim`` and ``margin`` (default
    0); the pairs' ``solref`` and ``solimp`` are not read (warned). Returns ``(exclude, pairs,
    values)``, ``values`` the pairs' keyword arguments of :func:`~jaxdyn.geometry.make_geoms`."""
    body_ids = {b.name: i for i, b in enumerate(bodies) if b.name}
    geom_ids = {n: k for k, n in enumerate(g_names) if n}
    exclude, pairs, own, friction, margin, condim, angular = [], [], [], [], [], [], []
    for c in root.findall("contact"):
        for e in c:
            if not isinstance(e.tag, str):
                continue
            keys = ("body1", "body2") if e.tag == "exclude" else ("geom1", "geom2")
            what = f"<{e.tag} " + " ".join(f"{k}='{e.get(k)}'" for k in keys if e.get(k) is not None) + ">"
            if e.tag == "exclude":
                ids = []
                for key in ("body1", "body2"):
                    name = e.get(key)
                    if name is None:
                        raise MJCFError(f"{what}: missing attribute {key}")
                    if name not in body_ids:
                        raise MJCFError(f"{what}: {key}='{name}' is not a body of the model")
                    ids.append(body_ids[name])
                g1 = [k for k, b in enumerate(g_mjbody) if b == ids[0]]
                g2 = [k for k, b in enumerate(g_mjbody) if b == ids[1]]
                exclude += [(i, j) for i in g1 for j in g2 if i != j]
            elif e.tag == "pair":
                a = ctx.attrs(e, "main")
                names = []
                for key in ("geom1", "geom2"):
                    name = a.get(key)
                    if name is None:
                        raise MJCFError(f"{what}: missing attribute {key}")
                    if name not in geom_ids and name not in skipped:
                        raise MJCFError(f"{what}: {key}='{name}' is not a geom of the model")
                    names.append(name)
                if any(n in skipped for n in names):
                    ctx.warnings.append(f"{what}: a height field or SDF is not collided by jaxdyn (pair ignored)")
                    continue
                if names[0] == names[1]:
                    raise MJCFError(f"{what}: geom1 and geom2 are the same geom '{names[0]}'")
                key = (geom_ids[names[0]], geom_ids[names[1]])
                fr = np.array([1.0, 1.0, 0.005, 0.0001, 0.0001])  # MuJoCo's defaults
                given = _numbers(a.get("friction", "1"), 5, f"{what} friction", at_least=1)
                fr[: len(given)] = given
                mu = float(fr[0])
                dim = _condim(a, what)
                if (dim > 1 and fr[1] != fr[0]) or (dim == 6 and fr[4] != fr[3]):
                    # MuJoCo's pair friction has two sliding and two rolling coefficients (the
                    # second sliding one defaults to 1, whatever the first)
                    ctx.warnings.append(
                        f"{what}: MuJoCo's friction {fr.tolist()} is anisotropic; jaxdyn's is isotropic, with the "
                        "first sliding and the first rolling coefficient"
                    )
                if dim == 1:  # a frictionless pair
                    mu = 0.0
                if key in pairs or key[::-1] in pairs:
                    ctx.warnings.append(
                        f"{what}: the pair is given twice; jaxdyn collides it once, with the first one's friction"
                    )
                    continue
                pairs.append(key)
                friction.append(mu)
                margin.append(float(_numbers(a.get("margin", "0"), 1, f"{what} margin")[0]))
                condim.append(dim)
                angular.append((float(fr[2]), float(fr[3])))
                own += [f"{k} of {what}" for k in PAIR_PARAMETERS if k in a]
            else:
                raise MJCFError(f"{what}: unknown element <{e.tag}> in <contact> (expected exclude or pair)")
    if own:
        ctx.warnings.append(
            "contact parameters of explicit pairs are not read (each pair uses its sliding friction and "
            "the contact law of jaxdyn.contact.ContactParams): " + ", ".join(own)
        )
    return (
        exclude,
        pairs,
        dict(pair_friction=friction, pair_margin=margin, pair_condim=condim, pair_angular=np.reshape(angular, (-1, 2))),
    )


def _finite(what, *xs):
    for x in xs:
        if not np.all(np.isfinite(np.asarray(x, np.float64))):
            raise MJCFError(f"{what}: numbers out of range (not finite after compilation)")


def _check_massless(jb):
    """Refuse moving bodies whose whole subtree carries no mass or inertia (ABA would divide by
    zero); the massless bodies before a body's last joint pass through their subtree."""
    parents = jb["parent"]
    sub_m = list(jb["mass"])
    sub_I = [float(np.abs(I).sum()) for I in jb["I"]]
    for b in range(len(parents) - 1, -1, -1):
        if parents[b] >= 0:
            sub_m[parents[b]] += sub_m[b]
            sub_I[parents[b]] += sub_I[b]
    for b in range(len(parents)):
        if sub_m[b] <= MIN_MASS and sub_I[b] <= 0:
            raise MJCFError(
                f"joint '{jb['jname'][b]}' moves body '{jb['bname'][b]}', which carries no mass or inertia (nor "
                "does anything attached to it): forward dynamics would divide by zero. Give the body an "
                "<inertial> or geoms with mass."
            )


# --------------------------------------------------------------------------------------------
# free-joint conventions (module docstring)


def _R(qpos):
    """Body-to-world rotation of the free root (``qpos[3:7]`` is the same in both conventions)."""
    return spatial.quat_to_rotation(jnp.asarray(qpos)[3:7])


def velocity_from_mujoco(model: Model, qpos, qvel):
    """jaxdyn's ``qd (nv,)`` from MuJoCo's ``qvel (nv,)`` at ``qpos (nq,)``: identity but for a
    free root, whose ``[v_world; omega_body]`` becomes ``[omega_body; R^T v_world]``."""
    qvel = jnp.asarray(qvel)
    if not model.floating_base:
        return qvel
    return jnp.concatenate([qvel[3:6], _R(qpos).T @ qvel[0:3], qvel[6:]])


def velocity_to_mujoco(model: Model, q, qd):
    """MuJoCo's ``qvel (nv,)`` from jaxdyn's ``qd (nv,)`` at ``q (nq,)``: the inverse of
    :func:`velocity_from_mujoco`."""
    qd = jnp.asarray(qd)
    if not model.floating_base:
        return qd
    return jnp.concatenate([_R(q) @ qd[3:6], qd[0:3], qd[6:]])


def acceleration_from_mujoco(model: Model, qpos, qvel, qacc):
    """jaxdyn's ``qdd (nv,)`` from MuJoCo's ``qacc (nv,)``; it needs the velocity: the
    body-frame linear acceleration is ``R^T a_world - omega x v_body``."""
    qacc = jnp.asarray(qacc)
    if not model.floating_base:
        return qacc
    R = _R(qpos)
    w, vb = qvel[3:6], R.T @ qvel[0:3]
    return jnp.concatenate([qacc[3:6], R.T @ qacc[0:3] - jnp.cross(w, vb), qacc[6:]])


def acceleration_to_mujoco(model: Model, q, qd, qdd):
    """MuJoCo's ``qacc (nv,)`` from jaxdyn's ``qdd (nv,)``: ``a_world = R (dv_body/dt + omega x
    v_body)``."""
    qdd = jnp.asarray(qdd)
    if not model.floating_base:
        return qdd
    w, vb = qd[0:3], qd[3:6]
    return jnp.concatenate([_R(q) @ (qdd[3:6] + jnp.cross(w, vb)), qdd[0:3], qdd[6:]])


def force_from_mujoco(model: Model, qpos, qfrc):
    """jaxdyn's generalised force ``(nv,)`` from MuJoCo's (``qfrc_applied``, ``qfrc_bias``, ...).

    By power duality ``tau_jaxdyn = T^T qfrc`` with ``qvel = T qd``; ``T`` (a permutation with
    a rotation) is orthogonal, so ``T^T = T^-1``: the map is :func:`velocity_from_mujoco`'s."""
    return velocity_from_mujoco(model, qpos, qfrc)


def force_to_mujoco(model: Model, q, tau):
    """MuJoCo's generalised force ``(nv,)`` from jaxdyn's ``tau``: :func:`velocity_to_mujoco`'s
    map (see :func:`force_from_mujoco`)."""
    return velocity_to_mujoco(model, q, tau)
