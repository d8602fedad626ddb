"""URDF loader: standard-library XML only (no ROS, no Gazebo).

* Fixed joints are merged: the child link's inertia is added to the moving body it hangs from
  (as Pinocchio does) and the link becomes a named frame on that body. Links fixed to the world
  (fixed-base models) are frames on the world and take no part in the dynamics.
* Every URDF link is a named frame (``model.frame_names``); its body is the moving body it is
  rigidly attached to.
* Body ``i``'s frame is the frame of the child link of its joint; the joint axis is expressed
  in that frame.
* Joint order: depth-first from the root link, children in document order.
* Collision geometry: every ``<collision>`` with a ``<sphere radius>``, ``<box size>`` (full
  extents), ``<cylinder radius length>`` or ``<capsule radius length>`` (a common extension;
  ``length`` is the cylindrical part, as for the cylinder) becomes a geom of ``model.geoms``
  (:mod:`jaxdyn.geometry`, MuJoCo's conventions: half-sizes, the axis along the geom's z) on the
  link's body, its ``<origin>`` composed with the link's placement in that body (a link merged
  through fixed joints carries its geoms to the moving body it hangs from; links fixed to the
  world put theirs on the world), named by the collision's ``name`` or else the link's; with
  MuJoCo's defaults ``contype = conaffinity = 1`` and friction ``(1, 0.005, 0.0001)``. Geoms do
  not change the dynamics. A ``<mesh filename scale>`` (STL, OBJ or COLLADA, found as
  :func:`jaxdyn.io.meshes.resolve_mesh_path` says: ``package://`` through ``package_dirs``,
  ``ROS_PACKAGE_PATH`` and the file's ancestor directories, or a path relative to the file)
  becomes a mesh geom: the vertices of its scaled points' convex hull (``Geoms.vertices``),
  which is how MuJoCo collides a mesh. Meshes that cannot be found or read are skipped with one
  warning naming each link and file; ``<visual>`` elements are ignored.
* Mimic joints: ``mimic="independent"`` (default, as Pinocchio's default) loads them as ordinary
  independent joints; ``mimic="coupled"`` keeps every joint in ``q`` (no reduced coordinates) and
  adds, for each mimic joint, the joint equality ``q_mimic = offset + multiplier * q_leader``
  to ``model.constraints`` (:func:`jaxdyn.constraints.couple`, named ``"mimic:JOINT"``; as
  MuJoCo's URDF import does; a fixed mimic joint is left alone, and a mimic of a fixed joint
  is held at its offset): :mod:`jaxdyn.sim` holds it softly with MuJoCo's default solref
  and solimp, or exactly with ``SimOptions(constraints="hard")`` (Baumgarte gains
  ``SimOptions.baumgarte`` against drift); ``mimic="error"`` rejects them.
* A ``floating`` joint from the root link (a "world" link) to its only child, with no
  ``<origin>``, makes that child a floating base (as ``floating_base=True`` would; the joint keeps
  its name, and the root link stays with the world, as a fixed base's root link). Any other
  ``floating`` joint is three slides along its frame's axes and a ball, joints ``NAME/x``,
  ``NAME/y``, ``NAME/z`` and ``NAME`` (``q`` = the position in the joint frame and a quaternion
  ``[w, x, y, z]``, as Pinocchio's free flyer; its velocity is the slides' rates in the joint
  frame where Pinocchio's is the body's, ``R^T pdot``).
* A ``planar`` joint is two slides in the plane normal to its axis (along x and y for the axis
  z) and a hinge about the axis: joints ``NAME/x``, ``NAME/y``, ``NAME/theta`` (``q`` = x, y,
  angle in the joint frame; massless bodies ``CHILD/x``, ``CHILD/y``), as Pinocchio's planar
  joint with its velocity ``R(theta)^T (xdot, ydot)`` in the body frame instead.
"""

from __future__ import annotations

import difflib
import math
import os
import warnings
import xml.etree.ElementTree as ET

import numpy as np

from .. import joints
from ..geometry import BOX, CAPSULE, CYLINDER, MESH, SPHERE, make_geoms
from ..model import Model, Topology, check_dtype, make_model
from .errors import LoadError, check_finite_model, loads_eagerly, robot_name_hint, source_text
from .inertia import InertiaPolicy, check_policy, combine
from .meshes import MeshError, hull_vertices, read_mesh, resolve_mesh_path

URDF_JOINT_TYPES = ("revolute", "continuous", "prismatic", "fixed", "floating", "planar")


class URDFError(LoadError):
    """A URDF that jaxdyn cannot load; the message names the element at fault."""


def floats(text, n, what):
    try:
        vals = [float(x) for x in text.split()]
    except (AttributeError, ValueError):
        raise URDFError(f"{what}: cannot parse {text!r} as {n} numbers") from None
    if len(vals) != n or not all(math.isfinite(v) for v in vals):
        raise URDFError(f"{what}: expected {n} finite numbers, got {text!r}")
    return np.array(vals)


def _rpy(r, p, y):
    cr, sr, cp, sp, cy, sy = math.cos(r), math.sin(r), math.cos(p), math.sin(p), math.cos(y), math.sin(y)
    Rx = np.array([[1, 0, 0], [0, cr, -sr], [0, sr, cr]])
    Ry = np.array([[cp, 0, sp], [0, 1, 0], [-sp, 0, cp]])
    Rz = np.array([[cy, -sy, 0], [sy, cy, 0], [0, 0, 1]])
    return Rz @ Ry @ Rx


def origin(elem, what):
    o = elem.find("origin") if elem is not None else None
    if o is None:
        return np.eye(3), np.zeros(3)
    xyz = floats(o.get("xyz", "0 0 0"), 3, f"{what} <origin xyz>")
    rpy = floats(o.get("rpy", "0 0 0"), 3, f"{what} <origin rpy>")
    return _rpy(*rpy), xyz


def _attr_float(elem, name, default, what, allow_inf=False):
    """A number attribute (``default`` when absent); NaN is refused, and so is infinity unless
    ``allow_inf`` (limits)."""
    if elem is None or elem.get(name) is None:
        return default
    try:
        v = float(elem.get(name))
    except ValueError:
        raise URDFError(f"{what}: attribute {name}={elem.get(name)!r} is not a number") from None
    if math.isnan(v) or (math.isinf(v) and not allow_inf):
        raise URDFError(f"{what}: attribute {name}={elem.get(name)!r} must be a finite number")
    return v


def _link_inertia(link, policy):
    """(mass, com, I_com) of a link in the link frame; the inertia passed through ``policy``
    (:class:`~jaxdyn.io.inertia.InertiaPolicy`)."""
    name = link.get("name")
    inert = link.find("inertial")
    if inert is None:
        return 0.0, np.zeros(3), np.zeros((3, 3))
    what = f"link '{name}' <inertial>"
    R, c = origin(inert, what)
    me = inert.find("mass")
    m = _attr_float(me, "value", 0.0, what + " <mass>")
    if not math.isfinite(m) or m < 0:
        raise URDFError(f"{what}: mass must be a finite non-negative number, got {m}")
    ie = inert.find("inertia")
    g = lambda k: _attr_float(ie, k, 0.0, what + " <inertia>")
    Il = np.array([[g("ixx"), g("ixy"), g("ixz")], [g("ixy"), g("iyy"), g("iyz")], [g("ixz"), g("iyz"), g("izz")]])
    if not np.all(np.isfinite(Il)):
        raise URDFError(f"{what}: inertia has non-finite entries")
    Il = policy(m, Il, what)
    return m, c, R @ Il @ R.T


def read_urdf_text(source: str | os.PathLike) -> str:
    """The XML text of ``source``: a path to a URDF file, or URDF text itself (``str`` or
    ``bytes``)."""
    text = source_text(source, "load_urdf", "URDF")
    if not text.strip():
        raise URDFError("the URDF source is empty: give a file path or the XML text of a <robot>")
    if not text.lstrip().startswith("<"):
        if not os.path.exists(text):
            raise URDFError(f"URDF file not found: '{text[:200]}'{robot_name_hint(text)}")
        with open(text, encoding="utf-8") as fh:
            text = fh.read()
    return text


@loads_eagerly
def load_urdf(
    source: str | os.PathLike,
    floating_base: bool = False,
    *,
    mimic: str = "independent",
    inertia: str = "warn",
    dtype=None,
    gravity=(0.0, 0.0, -9.81),
    package_dirs=(),
    collision_meshes: bool = True,
) -> Model:
    """Load a :class:`~jaxdyn.Model` from a URDF file path or an XML string.

    Args:
      source: a path to a ``.urdf`` file, or the XML text itself.
      floating_base: give the root link a free-flyer joint (``q[:7] = [x, y, z, qw, qx, qy, qz]``).
      mimic: ``"independent"`` (default), ``"coupled"`` (joint equalities) or ``"error"``;
        see the module docstring.
      inertia: what to do with link inertias that are not physically consistent (negative
        principal moments, triangle inequality violated, inertia without mass):
        ``"warn"`` (default: load them as written, as Pinocchio does, and emit one
        :class:`~jaxdyn.io.errors.InertiaWarning` naming every such link and by how much),
        ``"strict"`` (refuse the file) or ``"fix"`` (clamp and balance, as MuJoCo's
        ``balanceinertia``; each change is reported). See :mod:`jaxdyn.io.inertia`.
      dtype: floating dtype of the model's arrays (default: JAX's default float).
      gravity: world-frame gravity.
      package_dirs: directories to find ``package://NAME/...`` mesh files in: each holds the
        package folder ``NAME`` or is it (as Pinocchio's ``package_dirs``); searched before
        ``ROS_PACKAGE_PATH`` and the URDF file's own ancestor directories.
      collision_meshes: read ``<mesh>`` collisions into mesh geoms (module docstring); False
        skips them (with one warning) and reads no mesh file.

    Raises:
      URDFError: malformed XML, xacro input, missing or duplicate links/joints, several roots,
        cycles, unsupported joint types, non-finite numbers, negative masses, inconsistent
        inertias under ``inertia="strict"``, or moving bodies without mass (forward dynamics
        would divide by zero). The message names the offending element.
    """
    if mimic not in ("independent", "coupled", "error"):
        raise ValueError(f"mimic must be 'independent', 'coupled' or 'error', got {mimic!r}")
    check_dtype(dtype)
    policy = InertiaPolicy(check_policy(inertia), URDFError)
    text = read_urdf_text(source)
    is_path = isinstance(source, (str, os.PathLike)) and not str(source).lstrip().startswith("<")
    base_dir = os.path.dirname(os.path.abspath(str(source))) if is_path else None
    try:
        root = ET.fromstring(text)
    except ET.ParseError as e:
        if "xacro" in text[:4096]:
            raise URDFError(
                f"this looks like a xacro file, which is not plain URDF ({e}): expand it "
                "first, e.g. `xacro robot.urdf.xacro > robot.urdf`"
            ) from None
        raise URDFError(f"malformed URDF XML: {e}") from None
    if root.tag != "robot":
        hint = " (an MJCF file: load it with jaxdyn.load_mjcf)" if root.tag == "mujoco" else ""
        raise URDFError(f"the root element is <{root.tag}>, expected <robot>{hint}")
    _reject_xacro(root)
    robot_name = root.get("name", "robot")
    policy.source = f"URDF '{robot_name}'"

    links = {}
    for le in root.findall("link"):
        n = le.get("name")
        if not n:
            raise URDFError("a <link> has no name")
        if n in links:
            raise URDFError(f"link '{n}' is defined twice")
        links[n] = le
    if not links:
        raise URDFError("the URDF has no <link>")

    joints_: list[tuple] = []
    child_of: dict[str, str] = {}
    names: set[str] = set()
    for je in root.findall("joint"):
        n = je.get("name")
        if not n:
            raise URDFError("a <joint> has no name")
        if n in names:
            raise URDFError(f"joint '{n}' is defined twice")
        names.add(n)
        t = je.get("type")
        pe, ce = je.find("parent"), je.find("child")
        if pe is None or pe.get("link") is None:
            raise URDFError(f"joint '{n}' has no <parent link=...>")
        if ce is None or ce.get("link") is None:
            raise URDFError(f"joint '{n}' has no <child link=...>")
        p, c = str(pe.get("link")), str(ce.get("link"))
        for role, ln in (("parent", p), ("child", c)):
            if ln not in links:
                raise URDFError(f"joint '{n}': {role} link '{ln}' is not defined")
        if t not in URDF_JOINT_TYPES:
            close = difflib.get_close_matches(str(t), URDF_JOINT_TYPES, n=1, cutoff=0.0)
            hint = f" (closest known: '{close[0]}')" if close and t else f" (one of {', '.join(URDF_JOINT_TYPES)})"
            raise URDFError(f"joint '{n}': unknown joint type {t!r}{hint}")
        if je.find("mimic") is not None and mimic == "error":
            mim = je.find("mimic")
            raise URDFError(
                f"joint '{n}' is a mimic joint of '{mim.get('joint') if mim is not None else ''}' (mimic='error')"
            )
        if c in child_of:
            raise URDFError(f"link '{c}' is the child of two joints: '{child_of[c]}' and '{n}'")
        child_of[c] = n
        joints_.append((n, t, p, c, je))

    roots = [ln for ln in links if ln not in child_of]
    if len(roots) != 1:
        if not roots:
            raise URDFError(
                "the URDF has no root link (every link has a parent): the joints "
                f"{', '.join(repr(j) for j in child_of.values())} form a cycle"
            )
        raise URDFError(
            f"the URDF has {len(roots)} root links ({', '.join(repr(r) for r in roots)}); expected one tree"
        )
    root_link = roots[0]
    joint_names = {j[0] for j in joints_}
    children: dict[str, list[tuple]] = {ln: [] for ln in links}
    for j in joints_:
        children[j[2]].append(j)
    # a 'floating' joint from the root link (a "world" link) to its only child: that child is a
    # floating base, and the root link stays with the world (as a fixed base's root link)
    world_link, root_joint = None, "root_joint"
    for jn, t, p, c, je in joints_:
        if t != "floating":
            continue
        Rj, pj = origin(je, f"joint '{jn}'")
        at_root = p == root_link and len(children[root_link]) == 1
        if at_root and not floating_base and np.allclose(Rj, np.eye(3), rtol=0, atol=1e-12) and not np.any(pj):
            world_link, root_link, root_joint, floating_base = root_link, c, jn, True

    # depth-first walk, merging fixed joints
    body_parent, body_type, body_joint, body_name = [], [], [], []
    pl_R, pl_p, axes = [], [], []
    b_mass: list = []
    b_com: list = []
    b_I: list = []
    lim_lo, lim_hi, vel, eff, damp, fric = [], [], [], [], [], []
    frames = []  # (name, body, R, p)
    owner = {}  # link -> (body, R_link_in_body, p_link_in_body)

    def add_inertia(body, link_name, R, p):
        m, c, I = _link_inertia(links[link_name], policy)
        if body < 0 or m == 0 and not np.any(I):
            return
        cb, Ib = R @ c + p, R @ I @ R.T
        b_mass[body], b_com[body], b_I[body] = combine(b_mass[body], b_com[body], b_I[body], m, cb, Ib)

    def new_body(parent, jtype, jname, bname, R, p, ax):
        body_parent.append(parent)
        body_type.append(jtype)
        body_joint.append(jname)
        body_name.append(bname)
        pl_R.append(R)
        pl_p.append(p)
        axes.append(ax)
        b_mass.append(0.0)
        b_com.append(np.zeros(3))
        b_I.append(np.zeros((3, 3)))
        return len(body_parent) - 1

    if world_link is not None:
        owner[world_link] = (-1, np.eye(3), np.zeros(3))
        frames.append((world_link, -1, np.eye(3), np.zeros(3)))
    if floating_base:
        b = new_body(-1, "free", root_joint, root_link, np.eye(3), np.zeros(3), np.zeros(3))
        lim_lo += [-np.inf] * 7
        lim_hi += [np.inf] * 7
        vel += [np.inf] * 6
        eff += [np.inf] * 6
        damp += [0.0] * 6
        fric += [0.0] * 6
        owner[root_link] = (b, np.eye(3), np.zeros(3))
        add_inertia(b, root_link, np.eye(3), np.zeros(3))
    else:
        owner[root_link] = (-1, np.eye(3), np.zeros(3))
    frames.append((root_link, owner[root_link][0], np.eye(3), np.zeros(3)))

    visited = {root_link} if world_link is None else {root_link, world_link}
    stack = list(reversed(children[root_link]))
    while stack:  # depth-first, children in document order; parents are created first
        jn, t, p, c, je = stack.pop()
        if c in visited:
            raise URDFError(f"joint '{jn}' closes a cycle at link '{c}'")
        visited.add(c)
        stack.extend(reversed(children[c]))
        pb, Rp, pp = owner[p]
        Rj, pj = origin(je, f"joint '{jn}'")
        R, pos = Rp @ Rj, Rp @ pj + pp
        if t == "fixed":
            owner[c] = (pb, R, pos)
            add_inertia(pb, c, R, pos)
            frames.append((c, pb, R, pos))
            continue
        ax_e = je.find("axis")
        ax = floats(ax_e.get("xyz", "1 0 0"), 3, f"joint '{jn}' <axis>") if ax_e is not None else np.array([1.0, 0, 0])
        nrm = np.linalg.norm(ax)
        if nrm < 1e-12 and t != "floating":
            raise URDFError(f"joint '{jn}': the axis is zero")
        if t == "floating":  # three slides along the joint frame's axes, then a ball
            parts = [("prismatic", np.eye(3)[k], f"{jn}/{a}", f"{c}/{a}") for k, a in enumerate("xyz")]
            parts.append(("spherical", np.zeros(3), jn, c))
        elif t == "planar":  # two slides in the plane normal to the axis, then a hinge about it
            n = ax / nrm  # the usual axis z: the slides along x and y
            u = np.eye(3)[0] if abs(n[2]) > 1 - 1e-12 else np.eye(3)[int(np.argmin(np.abs(n)))]
            u = u - (u @ n) * n
            u = u / np.linalg.norm(u)
            parts = [("prismatic", u, f"{jn}/x", f"{c}/x"), ("prismatic", np.cross(n, u), f"{jn}/y", f"{c}/y")]
            parts.append(("continuous", n, f"{jn}/theta", c))
        else:
            parts = [(t, ax / nrm, jn, c)]
        le, de = je.find("limit"), je.find("dynamics")
        lo = _attr_float(le, "lower", -np.inf, f"joint '{jn}' <limit>", allow_inf=True)
        hi = _attr_float(le, "upper", np.inf, f"joint '{jn}' <limit>", allow_inf=True)
        if t in ("continuous", "planar", "floating") or le is None or lo >= hi:
            lo, hi = -np.inf, np.inf
        v_ = _attr_float(le, "velocity", np.inf, f"joint '{jn}' <limit>", allow_inf=True)
        e_ = _attr_float(le, "effort", np.inf, f"joint '{jn}' <limit>", allow_inf=True)
        d_ = _attr_float(de, "damping", 0.0, f"joint '{jn}' <dynamics>")
        f_ = _attr_float(de, "friction", 0.0, f"joint '{jn}' <dynamics>")
        b = pb
        for k, (tk, axk, jk, bk) in enumerate(parts):  # each part's limits and dynamics: the joint's
            while jk != jn and (jk in joint_names or jk in body_joint):  # an added joint and a
                jk += "_"  # massless body get names the file does not use
            while bk != c and (bk in links or bk in body_name):
                bk += "_"
            b = new_body(b, tk, jk, bk, R if k == 0 else np.eye(3), pos if k == 0 else np.zeros(3), axk)
            nq, nv = joints.get(tk).nq, joints.get(tk).nv
            lim_lo.extend([lo] * nq)
            lim_hi.extend([hi] * nq)
            vel.extend([v_ if v_ > 0 else np.inf] * nv)
            eff.extend([e_ if e_ > 0 else np.inf] * nv)
            damp.extend([d_] * nv)
            fric.extend([f_] * nv)
        owner[c] = (b, np.eye(3), np.zeros(3))
        add_inertia(b, c, np.eye(3), np.zeros(3))
        frames.append((c, b, np.eye(3), np.zeros(3)))

    if len(visited) != len(links):
        missing = sorted(set(links) - visited)
        raise URDFError(
            f"links not reachable from the root link '{root_link}' (the joints among them form a "
            f"cycle): {', '.join(missing)}"
        )
    if not body_parent:
        raise URDFError(
            f"the URDF has no moving joint below its root link '{root_link}' (and floating_base=False): "
            "nothing to simulate; for a single free-flying body load with floating_base=True"
        )

    _check_massless(body_parent, body_type, body_joint, body_name, b_mass, b_I)
    _check_finite_bodies(body_name, b_mass, b_com, b_I, pl_p)
    meshes = _MeshReader(base_dir, package_dirs) if collision_meshes else None
    geoms, skipped = _collisions(links, frames, meshes)
    if skipped:
        why = "; ".join(skipped) if collision_meshes else ", ".join(skipped)
        warnings.warn(
            f"URDF '{robot_name}': <mesh> collision geometry not loaded "
            f"({'collision_meshes=False' if not collision_meshes else 'these geoms do not collide'}): {why}",
            UserWarning,
            stacklevel=2,
        )
    policy.finish()
    topo = Topology(
        parents=tuple(body_parent),
        joint_types=tuple(body_type),
        joint_names=tuple(body_joint),
        body_names=tuple(body_name),
        frame_names=tuple(f[0] for f in frames),
        frame_bodies=tuple(f[1] for f in frames),
    )
    model = make_model(
        topo,
        placement_R=np.array(pl_R),
        placement_p=np.array(pl_p),
        axis=np.array(axes),
        mass=np.array(b_mass),
        com=np.array(b_com),
        inertia=np.array(b_I),
        gravity=gravity,
        frame_R=np.array([f[2] for f in frames]),
        frame_p=np.array([f[3] for f in frames]),
        q_lower=np.array(lim_lo),
        q_upper=np.array(lim_hi),
        velocity_limit=np.array(vel),
        effort_limit=np.array(eff),
        damping=np.array(damp),
        friction=np.array(fric),
        name=robot_name,
        dtype=dtype,
        geoms=make_geoms(**geoms, dtype=dtype),
    )
    if model.geoms is not None and model.geoms.ng:  # the body weights of Contact(normal="mujoco")
        from ..contact.soft import with_invweights

        model = with_invweights(model)
    model = model.replace(actuators=_actuators(root, model, robot_name))
    if mimic == "coupled":
        model = _mimic_couplings(root, model)
    check_finite_model(model, URDFError)
    return model


def _mimic_couplings(root, model):
    """``<mimic>`` elements as joint equalities (:func:`jaxdyn.constraints.couple`)."""
    from .. import constraints

    recs = []
    types = {je.get("name"): je.get("type") for je in root.findall("joint")}
    for je in root.findall("joint"):
        mim = je.find("mimic")
        if mim is None:
            continue
        n, leader = je.get("name"), mim.get("joint")
        what = f"joint '{n}' <mimic joint={leader!r}>"
        if leader not in types:
            raise URDFError(f"{what}: joint '{leader}' is not defined")
        if types[n] == "fixed":  # a fixed joint follows nothing (talos's fixed gripper fingers)
            continue
        mult = _attr_float(mim, "multiplier", 1.0, what)
        off = _attr_float(mim, "offset", 0.0, what)
        # a fixed leader stays at zero: the mimic joint is held at the offset
        lead = None if types[leader] == "fixed" else leader
        try:
            recs.append(constraints.couple(model, n, lead, mult, off, name=f"mimic:{n}"))
        except ValueError as e:
            raise URDFError(f"{what}: {e}") from None
    return constraints.add(model, *recs) if recs else model


def _actuators(root, model, robot_name):
    """The model's actuators: one per simple ``<transmission>`` (one joint of the model with one
    dof, one actuator; gear ``mechanicalReduction``, default 1), in document order; without
    ``<transmission>``, one motor per revolute, continuous and prismatic joint, named after it
    (gear 1). Control ranges and force ranges are open: the joints' effort limits bound the
    torques (:mod:`jaxdyn.sim`). Other transmissions are left out, and an actuator named in
    several transmissions (one motor driving several joints) becomes one control per joint,
    ``ACTUATOR/JOINT``; one warning names both."""
    from ..actuators import make_actuators

    lay = model.layout
    one_dof = {
        n: (int(lay.v_start[j]), int(lay.q_start[j]))
        for j, n in enumerate(model.joint_names)
        if model.joint_nv[j] == 1  # revolute, continuous, prismatic
    }
    trans = root.findall("transmission")
    if not trans:
        names = sorted(one_dof, key=lambda n: one_dof[n][0])
        if not names:
            return None
        return make_actuators(names, [one_dof[n][0] for n in names], [one_dof[n][1] for n in names], dtype=model.dtype)
    rows, skipped = [], []
    for k, t in enumerate(trans):
        what = f"<transmission name='{t.get('name')}'>" if t.get("name") else f"<transmission> {k}"
        js, acts = t.findall("joint"), t.findall("actuator")
        if len(js) != 1 or len(acts) != 1:
            skipped.append(f"{what} ({len(js)} joints, {len(acts)} actuators)")
            continue
        jn = js[0].get("name")
        if jn not in one_dof:
            skipped.append(f"{what} (joint '{jn}' is not a moving 1-dof joint of the model)")
            continue
        red = acts[0].find("mechanicalReduction")
        g = 1.0
        if red is not None and (red.text or "").strip():
            try:
                g = float(red.text)  # type: ignore[arg-type]
            except ValueError:
                raise URDFError(f"{what}: mechanicalReduction {red.text!r} is not a number") from None
            if not np.isfinite(g) or g == 0:
                raise URDFError(f"{what}: mechanicalReduction must be finite and non-zero, got {red.text!r}")
        rows.append((acts[0].get("name") or t.get("name") or jn, jn, g))
    count: dict[str, int] = {}
    for a, _, _ in rows:
        count[a] = count.get(a, 0) + 1
    shared = sorted(a for a, c in count.items() if c > 1)
    names = [f"{a}/{j}" if count[a] > 1 else a for a, j, _ in rows]
    notes = []
    if skipped:
        notes.append("transmissions not modelled: " + "; ".join(skipped))
    if shared:
        notes.append("actuators driving several joints, one control per joint here: " + ", ".join(shared))
    if notes:
        warnings.warn(f"URDF '{robot_name}': " + "; ".join(notes), UserWarning, stacklevel=3)
    if not rows:
        return None
    return make_actuators(
        names,
        [one_dof[j][0] for _, j, _ in rows],
        [one_dof[j][1] for _, j, _ in rows],
        gear=np.array([g for _, _, g in rows]),
        dtype=model.dtype,
    )


class _MeshReader:
    """Convex-hull vertices of URDF ``<mesh>`` elements, each file read once."""

    def __init__(self, base_dir, package_dirs):
        self.base_dir = base_dir
        self.package_dirs = [package_dirs] if isinstance(package_dirs, str | os.PathLike) else list(package_dirs)
        self.cache: dict[str, np.ndarray] = {}

    def __call__(self, shape, what) -> np.ndarray:
        """The hull vertices of the mesh, scaled, in its ``<collision>`` frame; MeshError (or
        URDFError for a bad ``scale``) where it cannot be read."""
        uri = shape.get("filename")
        if not uri:
            raise URDFError(f"{what}: <mesh> has no filename")
        scale = floats(shape.get("scale", "1 1 1"), 3, f"{what} <mesh> scale")
        if not np.all(np.isfinite(scale)) or np.any(scale == 0):
            raise URDFError(f"{what}: <mesh> scale must be three finite non-zero numbers, got {shape.get('scale')!r}")
        path = resolve_mesh_path(uri, self.base_dir, self.package_dirs, what)
        if path not in self.cache:
            self.cache[path] = read_mesh(path, what).points
        return hull_vertices(self.cache[path] * scale)


def _collisions(links, frames, meshes):
    """The geoms of every link's ``<collision>`` elements (module docstring), placed in the
    frame of the body each link is attached to (``frames``: (link, body, R, p) per link), and the
    mesh collisions skipped: the links (``meshes`` None: no mesh is read), else why, per file."""
    g: dict[str, list] = dict(type=[], size=[], body=[], pos=[], R=[], names=[])
    vertices, vertex_geom = [np.zeros((0, 3))], []
    skipped: list[str] = []
    for link, body, Rl, pl in frames:
        for k, ce in enumerate(links[link].findall("collision")):
            what = f"link '{link}' <collision> {k + 1}"
            ge = ce.find("geometry")
            shapes = [] if ge is None else list(ge)
            if len(shapes) != 1:
                raise URDFError(f"{what}: expected one shape inside <geometry>, found {len(shapes)}")
            shape = shapes[0]
            tag = shape.tag if isinstance(shape.tag, str) else ""
            sw = f"{what} <{tag}>"
            size = np.zeros(3)
            if tag == "mesh":
                if meshes is None:
                    if link not in skipped:
                        skipped.append(link)
                    continue
                try:
                    hull = meshes(shape, what)
                except MeshError as e:
                    skipped.append(str(e))
                    continue
                gtype = MESH
                vertices.append(hull)
                vertex_geom += [len(g["type"])] * len(hull)
            elif tag == "sphere":
                gtype, size[0] = SPHERE, _positive(shape, "radius", sw)
            elif tag == "box":
                gtype = BOX
                size = 0.5 * floats(shape.get("size"), 3, f"{sw} size")
                if np.any(size <= 0):
                    raise URDFError(f"{sw}: size must be three positive numbers, got {shape.get('size')!r}")
            elif tag in ("cylinder", "capsule"):
                gtype = CYLINDER if tag == "cylinder" else CAPSULE
                size[0] = _positive(shape, "radius", sw)
                size[1] = 0.5 * _positive(shape, "length", sw, allow_zero=tag == "capsule")
            else:
                raise URDFError(f"{what}: unknown geometry <{tag}> (sphere, box, cylinder, capsule and mesh are read)")
            Ro, po = origin(ce, what)
            g["type"].append(gtype)
            g["size"].append(size)
            g["body"].append(body)
            g["R"].append(Rl @ Ro)
            g["pos"].append(Rl @ po + pl)
            g["names"].append(ce.get("name") or link)
    # make_geoms turns the lists into arrays of its shapes
    return dict(**g, vertices=np.concatenate(vertices), vertex_geom=tuple(vertex_geom)), skipped


def _positive(elem, name, what, allow_zero=False):
    if elem.get(name) is None:
        raise URDFError(f"{what}: attribute {name} is missing")
    v = _attr_float(elem, name, 0.0, what)
    if v < 0 or v == 0 and not allow_zero:
        raise URDFError(
            f"{what}: attribute {name}={elem.get(name)!r} must be {'non-negative' if allow_zero else 'positive'}"
        )
    return v


def _reject_xacro(root):
    for el in root.iter():
        tag = el.tag if isinstance(el.tag, str) else ""
        if tag.startswith("{") and "xacro" in tag or tag.startswith("xacro:"):
            raise URDFError(
                f"element <{tag.split('}')[-1]}> is xacro, not URDF: expand the file first, "
                "e.g. `xacro robot.urdf.xacro > robot.urdf`"
            )
        for v in el.attrib.values():
            if "${" in v:
                raise URDFError(
                    f"<{tag}> has a xacro expression {v!r}: expand the file first, "
                    "e.g. `xacro robot.urdf.xacro > robot.urdf`"
                )


def _check_finite_bodies(names, mass, com, inertia, placement_p):
    """Huge but finite inputs can overflow when links are merged: refuse the body they reach."""
    for b, n in enumerate(names):
        vals = np.concatenate([[mass[b]], np.ravel(com[b]), np.ravel(inertia[b]), np.ravel(placement_p[b])])
        if not np.all(np.isfinite(vals)):
            raise URDFError(
                f"body '{n}': its mass, centre of mass, inertia or placement overflows to a "
                "non-finite number (values too large)"
            )


def _check_massless(parents, types, jnames, bnames, mass, inertia):
    """Reject moving bodies whose whole subtree has no mass and no inertia: the joint-space
    articulated inertia ``D`` of Rodriguez86 (8.5) would be zero and ABA would divide by zero."""
    nb = len(parents)
    sub_m = list(mass)
    sub_I = [np.abs(I).sum() for I in inertia]
    for b in range(nb - 1, -1, -1):
        if parents[b] >= 0:
            sub_m[parents[b]] += sub_m[b]
            sub_I[parents[b]] += sub_I[b]
    for b in range(nb):
        if sub_m[b] <= 0 and sub_I[b] <= 0:
            raise URDFError(
                f"joint '{jnames[b]}' moves link '{bnames[b]}', which carries no mass or inertia "
                "(nor does anything attached to it): forward dynamics would divide by zero. Give the "
                "link an <inertial>, or make the joint fixed."
            )
