"""MJCF ``<sensor>`` elements (:mod:`jaxdyn.sensors`): each sensor's type, size, noise and cutoff,
and the object it reads placed on a jaxdyn body of a model loaded from the same file. Every error
names the sensor element (:class:`MJCFError`).

The model tree is parsed again as :func:`~jaxdyn.io.mjcf.load_mjcf` parses it (includes, compiler
settings, default classes) for what the model does not keep: the poses and shapes of sites and
geoms in their MuJoCo body and the bodies' inertial frames. Poses on the model's bodies come from
its named frames (every MuJoCo body is one), so the sensors follow the model's body layout.
"""

from __future__ import annotations

import numpy as np

from ...model import Model
from .geom_inertia import body_inertia, geom_mass, geom_shape, geom_volume_inertia
from .loader import parse_scene
from .parse import I3, MJCFError, _pose, compose, desc, numbers, z_to
from .tree import _bodies, _names

# type -> (dimension, stage, data type); MuJoCo's sensor_dim, needstage and datatype
SUPPORTED = {
    "jointpos": (1, "pos", "real"),
    "ballquat": (4, "pos", "quaternion"),
    "framepos": (3, "pos", "real"),
    "framequat": (4, "pos", "quaternion"),
    "framexaxis": (3, "pos", "axis"),
    "frameyaxis": (3, "pos", "axis"),
    "framezaxis": (3, "pos", "axis"),
    "subtreecom": (3, "pos", "real"),
    "magnetometer": (3, "pos", "real"),
    "jointvel": (1, "vel", "real"),
    "ballangvel": (3, "vel", "real"),
    "framelinvel": (3, "vel", "real"),
    "frameangvel": (3, "vel", "real"),
    "gyro": (3, "vel", "real"),
    "velocimeter": (3, "vel", "real"),
    "subtreelinvel": (3, "vel", "real"),
    "subtreeangmom": (3, "vel", "real"),
    "accelerometer": (3, "acc", "real"),
    "force": (3, "acc", "real"),
    "torque": (3, "acc", "real"),
    "framelinacc": (3, "acc", "real"),
    "frameangacc": (3, "acc", "real"),
    "touch": (1, "acc", "positive"),
    "actuatorfrc": (1, "ctrl", "real"),
    "jointactuatorfrc": (1, "ctrl", "real"),
}
# MuJoCo's other sensor elements: refused, or dropped with a warning (from_mjcf's ``unsupported``)
UNSUPPORTED = (
    "rangefinder",
    "camprojection",
    "tendonpos",
    "tendonvel",
    "actuatorpos",
    "actuatorvel",
    "tendonactuatorfrc",
    "jointlimitpos",
    "jointlimitvel",
    "jointlimitfrc",
    "tendonlimitpos",
    "tendonlimitvel",
    "tendonlimitfrc",
    "insidesite",
    "e_potential",
    "e_kinetic",
    "clock",
    "distance",
    "normal",
    "fromto",
    "contact",
    "tactile",
    "user",
    "plugin",
)
SITE_SENSORS = ("touch", "accelerometer", "velocimeter", "gyro", "force", "torque", "magnetometer")
JOINT_SENSORS = ("jointpos", "jointvel", "ballquat", "ballangvel")
SUBTREE_SENSORS = ("subtreecom", "subtreelinvel", "subtreeangmom")
FRAME_SENSORS = tuple(t for t in SUPPORTED if t.startswith("frame"))
# sensors whose value depends on the orientation of the object itself (not only its origin)
OBJECT_ORIENTATION = ("framequat", "framexaxis", "frameyaxis", "framezaxis")
OBJTYPES = ("body", "xbody", "geom", "site", "camera")
SITE_ZONES = ("sphere", "capsule", "ellipsoid", "cylinder", "box")
BASE_ATTRS = ("name", "noise", "cutoff", "user", "nsample", "interp", "delay", "interval")
MJ_EPS = 1e-14  # MuJoCo's mjEPS: geoms lighter than this do not define a body's inertial frame


class _Place:
    """An object placed on a jaxdyn body: ``body`` (-1: the world), ``R, p`` in its frame; ``R``
    is ``None`` where jaxdyn does not reproduce the object's orientation, with ``why`` saying why."""

    def __init__(self, body, R, p, why=""):
        self.body, self.R, self.p, self.why = body, R, p, why


def parse_sensors(source, model: Model, unsupported: str = "error"):
    """The sensors of an MJCF file or text as a list of dicts (name, type, dim, stage, datatype,
    noise, cutoff, obj and ref placements, index, zone) in MuJoCo's order, the unsupported
    sensors' descriptions (dropped with ``unsupported="warn"``) and ``<option magnetic>``."""
    if unsupported not in ("error", "warn"):
        raise ValueError(f"unsupported must be 'error' or 'warn', got {unsupported!r}")
    root, ctx, _ = parse_scene(source)
    scene = _Scene(root, ctx, model)
    specs: list[dict] = []
    dropped: list[str] = []
    names: set[str] = set()
    for section in root.findall("sensor"):
        for elem in section:
            if not isinstance(elem.tag, str):
                continue
            sid = len(specs) + len(dropped)
            if elem.tag in UNSUPPORTED:
                what = desc(elem)
                if unsupported == "error":
                    raise MJCFError(
                        f"{what}: <{elem.tag}> sensors are not supported by jaxdyn.sensors (supported: "
                        f"{', '.join(SUPPORTED)}); from_mjcf(..., unsupported='warn') drops them with a warning"
                    )
                dropped.append(what)
                continue
            if elem.tag not in SUPPORTED:
                raise MJCFError(f"{desc(elem)}: unknown sensor element <{elem.tag}>")
            spec = _sensor(elem, scene, sid)
            if spec["name"] in names:
                raise MJCFError(f"{desc(elem)}: duplicate sensor name")
            names.add(spec["name"])
            specs.append(spec)
    return specs, dropped, scene.magnetic


class _Scene:
    """MuJoCo's bodies, joints, sites and geoms by name, placed on the model's bodies."""

    def __init__(self, root, ctx, model):
        self.ctx, self.model = ctx, model
        self.bodies = _bodies(root, ctx)
        joint_name, _ = _names(self.bodies)
        self.body_id = {b.name: i for i, b in enumerate(self.bodies)}
        self.joints = {}  # name -> (MuJoCo type, body index)
        for i, b in enumerate(self.bodies):
            for j in b.joints:
                self.joints[joint_name[id(j)]] = (j[2], i)
        self.geoms = {}  # name -> (body index, element, attributes, pose)
        for i, b in enumerate(self.bodies):
            for elem, a, pose in b.geoms:
                if a.get("name"):
                    self.geoms[a["name"]] = (i, elem, a, pose)
        self.sites = _sites(root, ctx)  # name -> (body index, attributes, R, p)
        self.magnetic = np.array([0.0, -0.5, 0.0])
        for o in root.iter("option"):
            if "magnetic" in o.attrib:
                self.magnetic = numbers(o.attrib["magnetic"], 3, "<option> magnetic")

    def body_geoms(self, i, what):
        """The indices in ``model.geoms`` of MuJoCo body ``i``'s geoms (the loader keeps every
        geom but SDFs, in document order)."""
        order = [
            (j, a.get("name", "")) for j, b in enumerate(self.bodies) for _e, a, _p in b.geoms if a.get("type") != "sdf"
        ]
        names = tuple(self.model.geoms.names) if self.model.geoms is not None else ()
        if tuple(n for _j, n in order) != names:
            raise MJCFError(
                f"{what}: the geoms of model '{self.model.name}' are not the file's (load the model from the same MJCF)"
            )
        return tuple(k for k, (j, _n) in enumerate(order) if j == i)

    def body_frame(self, i, what):
        """The jaxdyn body carrying MuJoCo body ``i`` and its frame's pose there."""
        name = self.bodies[i].name
        try:
            f = self.model.frame_index(name)
        except KeyError:
            raise MJCFError(
                f"{what}: body '{name}' is not a frame of model '{self.model.name}' (load the model from the same MJCF)"
            ) from None
        b = self.model.topology.frame_bodies[f]
        return b, np.asarray(self.model.frame_R[f], np.float64), np.asarray(self.model.frame_p[f], np.float64)

    def place(self, objtype, name, what):
        """The object ``objtype name`` (MJCF's frame object types) as a :class:`_Place`."""
        if objtype == "camera":
            raise MJCFError(f"{what}: objtype='camera' is not supported (jaxdyn does not load cameras)")
        if objtype in ("body", "xbody"):
            if name not in self.body_id:
                raise MJCFError(f"{what}: unknown body '{name}'")
            i = self.body_id[name]
            jb, Rf, pf = self.body_frame(i, what)
            if objtype == "xbody":
                return _Place(jb, Rf, pf)
            R, c, why = _inertial_frame(self.bodies[i], self.ctx)
            return _Place(jb, None if R is None else Rf @ R, Rf @ c + pf, why)
        if objtype == "site":
            if name not in self.sites:
                raise MJCFError(f"{what}: unknown site '{name}'")
            i, _a, R, p = self.sites[name]
        elif objtype == "geom":
            if name not in self.geoms:
                raise MJCFError(f"{what}: unknown geom '{name}'")
            i, elem, a, pose = self.geoms[name]
            gtype = a.get("type", "sphere")
            gw = f"geom {desc(elem)}"
            if gtype in ("mesh", "hfield", "sdf"):
                raise MJCFError(
                    f"{what}: {gw} is a {gtype}; MuJoCo moves a {gtype} geom's frame to the shape's own "
                    "frame, which jaxdyn does not reproduce (put a site at the geom instead)"
                )
            if gtype == "plane":
                R, p = compose(pose, _pose(a, self.ctx, gw))
            else:
                _t, _s, R, p = geom_shape(elem, a, self.ctx, pose, gw)
        else:
            raise MJCFError(f"{what}: unknown object type '{objtype}' (expected one of {', '.join(OBJTYPES)})")
        jb, Rf, pf = self.body_frame(i, what)
        return _Place(jb, Rf @ R, Rf @ p + pf)


def _sites(root, ctx):
    """Every named site: ``name -> (MuJoCo body index, attributes over the defaults, R, p in the
    body frame)``; bodies are counted in document order as :func:`.tree._bodies` counts them."""
    out = {}
    count = [0]

    def walk(container, body, pose, cls):
        for child in container:
            tag = child.tag
            if tag == "body":
                count[0] += 1
                walk(child, count[0], I3, child.get("childclass", cls))
            elif tag == "frame":
                walk(child, body, compose(pose, _pose(child.attrib, ctx, desc(child))), child.get("childclass", cls))
            elif tag == "site":
                a = ctx.attrs(child, cls)
                what = desc(child)
                if "fromto" in a:  # as the loader places sites (and MuJoCo geoms)
                    ft = numbers(a["fromto"], 6, f"{what} fromto")
                    R, p = compose(pose, (z_to(ft[:3] - ft[3:], f"{what} fromto"), (ft[:3] + ft[3:]) / 2))
                else:
                    R, p = compose(pose, _pose(a, ctx, what))
                if a.get("name"):
                    out[a["name"]] = (body, a, R, p)

    for wb in root.findall("worldbody"):
        walk(wb, 0, I3, "main")
    return out


def _inertial_frame(b, ctx):
    """``(R, c, why)``: the orientation and origin of a MuJoCo body's inertial frame (MuJoCo's
    ``body_iquat``, ``body_ipos``) in the body frame. ``R`` is ``None`` where MuJoCo takes it
    from an eigendecomposition (``fullinertia``, several geoms, a mesh's principal axes), which
    jaxdyn does not reproduce; ``why`` then says which."""
    if b.parent is None:  # the world
        return np.eye(3), np.zeros(3), ""
    _m, c, _I, _explicit = body_inertia(b, ctx)
    use_geoms = ctx.inertiafromgeom == "true" or (ctx.inertiafromgeom == "auto" and b.inertial is None)
    if not use_geoms:
        if b.inertial is None:
            return np.eye(3), np.zeros(3), ""
        elem, a, pose = b.inertial
        R, _p = compose(pose, _pose(a, ctx, f"body '{b.name}' <inertial>"))
        if "fullinertia" in a:
            return None, c, "its <inertial> gives a fullinertia, whose principal axes MuJoCo computes"
        return R, c, ""
    lo, hi = ctx.inertiagrouprange
    heavy = []  # orientations of the geoms that define the inertial frame (None: a mesh)
    for elem, a, pose in b.geoms:
        gw = f"geom {desc(elem)} in body '{b.name}'"
        group = int(numbers(a.get("group", "0"), 1, f"{gw} group", ints=True)[0])
        gtype = a.get("type", "sphere")
        if not lo <= group <= hi or gtype == "plane":
            continue
        if gtype == "mesh":
            m = float(numbers(a["mass"], 1, f"{gw} mass")[0]) if "mass" in a else None
            d = float(numbers(a.get("density", "1000"), 1, f"{gw} density")[0])
            if (m if m is not None else d) > MJ_EPS:
                heavy.append(None)
            continue
        _t, size, R, _p = geom_shape(elem, a, ctx, pose, gw)
        if geom_mass(a, geom_volume_inertia(_t, size)[0], gw) > MJ_EPS:
            heavy.append(R)
    if not heavy:
        return np.eye(3), np.zeros(3), ""
    if len(heavy) == 1 and heavy[0] is not None:
        return heavy[0], c, ""
    why = "its inertia comes from several geoms" if len(heavy) > 1 else "its inertia comes from a mesh"
    return None, c, why + ", and MuJoCo orients the inertial frame along the principal axes it computes"


def _attr_number(a, key, what, default=0.0):
    return float(numbers(a[key], 1, f"{what} {key}")[0]) if key in a else default


def _sensor(elem, scene, sid):
    """One supported sensor element as a dict (see :func:`parse_sensors`)."""
    tag = elem.tag
    a = dict(elem.attrib)
    what = desc(elem)  # attributes were checked against MuJoCo's schema (no class on sensors)
    dim, stage, datatype = SUPPORTED[tag]
    noise = _attr_number(a, "noise", what)
    cutoff = _attr_number(a, "cutoff", what)
    if noise < 0 or cutoff < 0:
        raise MJCFError(f"{what}: noise and cutoff must not be negative")
    if _attr_number(a, "delay", what) != 0:
        raise MJCFError(f"{what}: delay is not supported (jaxdyn's sensors read the current state)")
    if "interval" in a and numbers(a["interval"], 2, f"{what} interval", at_least=1)[0] != 0:
        raise MJCFError(f"{what}: interval is not supported (jaxdyn's sensors read the current state)")
    spec = dict(
        name=a.get("name") or f"sensor{sid}",
        type=tag,
        dim=dim,
        stage=stage,
        datatype=datatype,
        noise=noise,
        cutoff=cutoff,
        obj=None,
        ref=None,
        index=-1,
        zone=("sphere", np.zeros(3)),
        geoms=(),
    )

    def need(key):
        if key not in a:
            raise MJCFError(f"{what}: the '{key}' attribute is required")
        return a[key]

    if tag in SITE_SENSORS:
        site = need("site")
        spec["obj"] = scene.place("site", site, what)
        i, sa, _R, _p = scene.sites[site]
        if tag in ("force", "torque"):
            _joint_owned(scene, i, what, "force and torque sensors read the force across the body's joints")
        if tag == "touch":
            spec["zone"] = _zone(sa, what, site)
            spec["geoms"] = scene.body_geoms(i, what)
    elif tag in JOINT_SENSORS:
        jn = need("joint")
        if jn not in scene.joints:
            raise MJCFError(f"{what}: unknown joint '{jn}'")
        kind = scene.joints[jn][0]
        want = ("ball",) if tag.startswith("ball") else ("hinge", "slide")
        if kind not in want:
            raise MJCFError(f"{what}: joint '{jn}' is a {kind} joint; <{tag}> takes a {' or '.join(want)} joint")
        m = scene.model
        sl = m.joint_q_slice(jn) if tag in ("jointpos", "ballquat") else m.joint_v_slice(jn)
        spec["index"] = sl.start
    elif tag == "actuatorfrc":
        an = need("actuator")
        m = scene.model
        names = () if m.actuators is None else m.actuators.names
        if an not in names:
            have = f"its actuators: {', '.join(names)}" if names else "it has no actuators"
            raise MJCFError(f"{what}: unknown actuator '{an}' of model '{m.name}' ({have})")
        spec["index"] = names.index(an)
    elif tag == "jointactuatorfrc":
        jn = need("joint")
        if jn not in scene.joints:
            raise MJCFError(f"{what}: unknown joint '{jn}'")
        kind = scene.joints[jn][0]
        if kind not in ("hinge", "slide"):
            raise MJCFError(f"{what}: joint '{jn}' is a {kind} joint; <{tag}> takes a hinge or slide joint")
        spec["index"] = scene.model.joint_v_slice(jn).start
    elif tag in SUBTREE_SENSORS:
        bn = need("body")
        if bn not in scene.body_id:
            raise MJCFError(f"{what}: unknown body '{bn}'")
        i = scene.body_id[bn]
        _joint_owned(scene, i, what, "the subtree of a body without a joint is merged into its parent's jaxdyn body")
        spec["index"] = scene.body_frame(i, what)[0]
    else:  # frame sensors
        objtype = need("objtype")
        spec["obj"] = scene.place(objtype, need("objname"), what)
        if tag in OBJECT_ORIENTATION and spec["obj"].R is None:
            raise MJCFError(
                f"{what}: the orientation of the inertial frame of body '{a['objname']}' is not reproduced: "
                f"{spec['obj'].why} (use objtype='xbody' or a site)"
            )
        if ("reftype" in a) != ("refname" in a):
            raise MJCFError(f"{what}: reftype and refname must be given together")
        if "reftype" in a:
            if tag in ("framelinacc", "frameangacc"):
                raise MJCFError(f"{what}: <{tag}> takes no reference frame")
            spec["ref"] = scene.place(a["reftype"], a["refname"], what)
            if spec["ref"].R is None:
                raise MJCFError(
                    f"{what}: the orientation of the inertial frame of the reference body '{a['refname']}' is "
                    f"not reproduced: {spec['ref'].why} (use reftype='xbody' or a site)"
                )
    return spec


def _joint_owned(scene, i, what, reason):
    """Refuse MuJoCo body ``i`` unless it has a joint (so that a jaxdyn body is its own)."""
    b = scene.bodies[i]
    if b.parent is None or not b.joints:
        name = "the world" if b.parent is None else f"body '{b.name}'"
        raise MJCFError(f"{what}: {name} has no joint of its own; {reason}")


def _zone(a, what, site):
    """A touch sensor's zone: its site's type and size (MuJoCo's site defaults: a sphere, every
    size 0.005; ``fromto`` sets the half-length along z as for geoms)."""
    stype = a.get("type", "sphere")
    if stype not in SITE_ZONES:
        raise MJCFError(f"{what}: site '{site}' has type '{stype}', expected one of {', '.join(SITE_ZONES)}")
    size = np.full(3, 0.005)
    if "size" in a:
        raw = numbers(a["size"], 3, f"{what} site '{site}' size", at_least=1)
        size[: len(raw)] = raw
    if "fromto" in a:
        ft = numbers(a["fromto"], 6, f"{what} site '{site}' fromto")
        half = np.linalg.norm(ft[3:] - ft[:3]) / 2
        if stype in ("capsule", "cylinder"):
            size[1] = half
        elif stype in ("box", "ellipsoid"):
            size[1], size[2] = size[0], half
    return stype, size
