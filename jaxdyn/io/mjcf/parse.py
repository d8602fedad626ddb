"""MJCF parsing helpers (:mod:`jaxdyn.io.mjcf`): numbers and orientations of elements, the
compiler settings and default classes, ``<include>`` expansion, actuator semantics, ``limited``
flags with MuJoCo's autolimits, and the finiteness check of compiled numbers. Every error names
the element at fault (:class:`MJCFError`).
"""

from __future__ import annotations

import math
import os
import xml.etree.ElementTree as ET

import numpy as np

from ..errors import LoadError


class MJCFError(LoadError):
    """An MJCF model that jaxdyn cannot load; the message names the element at fault."""


ORIENT = ("quat", "axisangle", "euler", "xyaxes", "zaxis")
ACTUATORS = (
    "general",
    "motor",
    "position",
    "velocity",
    "intvelocity",
    "damper",
    "cylinder",
    "muscle",
    "adhesion",
    "dcmotor",
    "plugin",
)
# the MJCF joint kinds and the jaxdyn joint types (jaxdyn.joints) they load as
JOINT_TYPES = {"hinge": "revolute", "slide": "prismatic", "ball": "spherical", "free": "free"}
REFUSED_BODY = ("composite", "flexcomp", "replicate", "attach", "skin", "plugin")
MIN_MASS = 1e-15


# --------------------------------------------------------------------------------------------
# numbers and orientations


def desc(elem):
    name = elem.get("name")
    return f"<{elem.tag} name='{name}'>" if name else f"<{elem.tag}>"


def numbers(text, n, what, *, ints=False, at_least=None):
    """``n`` finite numbers (or between ``at_least`` and ``n`` of them) from ``text``."""
    try:
        vals = [(int(x) if ints else float(x)) for x in str(text).split()]
    except ValueError:
        raise MJCFError(f"{what}: cannot parse {text!r} as numbers") from None
    lo = n if at_least is None else at_least
    if not lo <= len(vals) <= n:
        count = f"{n}" if at_least is None else f"{at_least} to {n}"
        raise MJCFError(f"{what}: expected {count} numbers, got {len(vals)} in {text!r}")
    if not all(math.isfinite(v) for v in vals):
        raise MJCFError(f"{what}: numbers must be finite, got {text!r}")
    return np.array(vals, np.int64 if ints else np.float64)


def unit(v):
    v = np.asarray(v, np.float64)
    v = v / np.max(np.abs(v))  # first by the largest entry: no overflow in the norm
    return v / np.linalg.norm(v)


def rot(axis, angle):
    axis = unit(axis)
    x, y, z = axis
    c, s = math.cos(angle), math.sin(angle)
    C = 1 - c
    return np.array(
        [
            [c + x * x * C, x * y * C - z * s, x * z * C + y * s],
            [y * x * C + z * s, c + y * y * C, y * z * C - x * s],
            [z * x * C - y * s, z * y * C + x * s, c + z * z * C],
        ]
    )


def _quat_mat(q):
    w, x, y, z = unit(q)
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )


def z_to(v, what):
    """The minimal rotation taking ``+z`` to the direction ``v``."""
    if np.max(np.abs(v)) == 0 or np.linalg.norm(unit(v) * np.max(np.abs(v))) < 1e-12:
        raise MJCFError(f"{what}: zero vector")
    v = unit(v)
    ez = np.array([0.0, 0.0, 1.0])
    axis = np.cross(ez, v)
    s = np.linalg.norm(axis)
    if s < 1e-12:  # parallel: identity, or a half turn about x when antiparallel
        return np.eye(3) if v[2] > 0 else np.diag([1.0, -1.0, -1.0])
    return rot(axis, math.atan2(s, v[2]))


class Ctx:
    """Compiler settings and defaults shared by the parsing functions."""

    def __init__(self):
        self.degree = True
        self.eulerseq = "xyz"
        self.autolimits = True
        self.inertiafromgeom = "auto"
        self.inertiagrouprange = (0, 5)
        self.boundmass = 0.0
        self.boundinertia = 0.0
        self.balanceinertia = False
        self.settotalmass = -1.0
        self.defaults = {}  # class -> {tag: {attr: value}}
        self.meshes = {}  # name -> (element, attributes)
        self.main_dir = ""
        self.meshdir = ""
        self.warnings = []

    def angle(self, x):
        # pi / 180 first: x * pi overflows for |x| near the largest double, x * (pi / 180) does not
        return x * (math.pi / 180) if self.degree else x

    def orientation(self, attrs, what):
        """Rotation matrix of an element's orientation attributes (identity if none)."""
        given = [k for k in ORIENT if k in attrs]
        if len(given) > 1:
            raise MJCFError(f"{what}: more than one orientation given ({', '.join(given)})")
        if not given:
            return np.eye(3)
        k = given[0]
        if k == "quat":
            q = numbers(attrs[k], 4, f"{what} quat")
            if np.max(np.abs(q)) < 1e-12:
                raise MJCFError(f"{what} quat: zero quaternion")
            return _quat_mat(q)
        if k == "axisangle":
            a = numbers(attrs[k], 4, f"{what} axisangle")
            if np.max(np.abs(a[:3])) < 1e-12:
                raise MJCFError(f"{what} axisangle: zero axis")
            return rot(a[:3], self.angle(a[3]))
        if k == "euler":
            e = numbers(attrs[k], 3, f"{what} euler")
            R = np.eye(3)
            for ch, ang in zip(self.eulerseq, e):
                Ri = rot(np.eye(3)["xyz".index(ch.lower())], self.angle(ang))
                R = R @ Ri if ch.islower() else Ri @ R
            return R
        if k == "xyaxes":
            a = numbers(attrs[k], 6, f"{what} xyaxes")
            x, y = a[:3], a[3:]
            if np.max(np.abs(x)) < 1e-12 or np.max(np.abs(y)) < 1e-12:
                raise MJCFError(f"{what} xyaxes: zero axis")
            x, y = unit(x), unit(y)
            y = y - (x @ y) * x
            if np.linalg.norm(y) < 1e-9:
                raise MJCFError(f"{what} xyaxes: y axis parallel to x axis")
            y = y / np.linalg.norm(y)
            return np.stack([x, y, np.cross(x, y)], 1)
        return z_to(numbers(attrs[k], 3, f"{what} zaxis"), f"{what} zaxis")

    def attrs(self, elem, cls, tag=None):
        """The element's attributes over its class defaults (``cls``: the class in force)."""
        cls = elem.get("class", cls)
        if cls not in self.defaults:
            raise MJCFError(f"{desc(elem)}: unknown default class '{cls}'")
        base = dict(self.defaults[cls].get(tag or elem.tag, {}))
        own = {k: v for k, v in elem.attrib.items() if k != "class"}
        if any(k in own for k in ORIENT):
            for k in ORIENT:
                base.pop(k, None)
        return _merge(base, own)


# attributes read into fixed-size arrays: a value with fewer numbers replaces only the leading
# entries of the one it overrides (a class's size="0.06" over an inherited "0.04 0.1" is
# "0.06 0.1"), as MuJoCo reads them
PARTIAL = ("size", "friction", "gear", "gainprm", "biasprm", "dynprm", "damping", "stiffness")


def _merge(base, own):
    out = dict(base)
    for k, v in own.items():
        if k in PARTIAL and k in base:
            new, old = str(v).split(), str(base[k]).split()
            v = " ".join(new + old[len(new) :])
        out[k] = v
    return out


def _pose(attrs, ctx, what):
    p = numbers(attrs["pos"], 3, f"{what} pos") if "pos" in attrs else np.zeros(3)
    return ctx.orientation(attrs, what), p


def compose(a, b):
    return a[0] @ b[0], a[0] @ b[1] + a[1]


I3 = (np.eye(3), np.zeros(3))


# --------------------------------------------------------------------------------------------
# includes and defaults


def expand_includes(elem, main_dir, here, depth=0):
    if depth > 50:
        raise MJCFError("<include>: includes nested more than 50 deep (an include cycle?)")
    out = []
    for child in list(elem):
        if child.tag == "include":
            f = child.get("file")
            if not f:
                raise MJCFError("<include>: no file attribute")
            cands = [os.path.join(main_dir, f), os.path.join(here, f)]
            path = next((c for c in cands if os.path.isfile(c)), None)
            if path is None:
                raise MJCFError(f"<include file='{f}'>: file not found (looked in {', '.join(dict.fromkeys(cands))})")
            try:
                inc = ET.parse(path).getroot()
            except ET.ParseError as e:
                raise MJCFError(f"<include file='{f}'>: malformed XML: {e}") from None
            if inc.tag != "mujoco":
                raise MJCFError(f"<include file='{f}'>: the root element is <{inc.tag}>, expected <mujoco>")
            expand_includes(inc, main_dir, os.path.dirname(os.path.abspath(path)), depth + 1)
            out.extend(list(inc))
        else:
            expand_includes(child, main_dir, here, depth + 1)
            out.append(child)
    elem[:] = out


def actuator_semantics(tag, attrs):
    """(gaintype, biastype, dyntype, gain) implied by an actuator element or default."""
    if tag == "motor":
        return {"_gaintype": "fixed", "_biastype": "none", "_dyntype": "none", "_gain": "1"}
    if tag in ("position", "velocity", "intvelocity", "cylinder"):
        return {"_gaintype": "fixed", "_biastype": "affine", "_dyntype": "other", "_gain": "0"}
    if tag == "general":
        gp = attrs.get("gainprm")
        out = {}
        for k in ("gaintype", "biastype", "dyntype"):
            if k in attrs:
                out["_" + k] = attrs[k]
        if gp is not None:
            out["_gain"] = gp.split()[0] if gp.split() else "0"
        return out
    return {"_gaintype": "other", "_biastype": "other", "_dyntype": "other", "_gain": "0"}


def parse_defaults(elem, parent, ctx, top=False):
    """Class ``elem``: its parent's settings (complete: a parent's elements written after the
    nested class count too) overridden by its own, then its nested classes."""
    cls = "main" if top else elem.get("class")
    if not cls:
        raise MJCFError("<default>: a nested default has no class attribute")
    if cls in ctx.defaults and not top:
        raise MJCFError(f"<default class='{cls}'>: class defined twice")
    d = ctx.defaults.setdefault(cls, {t: dict(v) for t, v in parent.items()})
    for child in elem:
        if not isinstance(child.tag, str) or child.tag == "default":
            continue
        if child.tag in ACTUATORS:
            d["actuator"] = _merge(d.get("actuator", {}), child.attrib)
            d["actuator"].update(actuator_semantics(child.tag, child.attrib))
        else:
            d[child.tag] = _merge(d.get(child.tag, {}), child.attrib)
    for child in elem:
        if child.tag == "default":
            parse_defaults(child, d, ctx)


def flag(a, key, what, default):
    v = a.get(key, default)
    if v not in ("true", "false", "auto"):
        raise MJCFError(f"{what}: {key}={v!r}, expected true, false or auto")
    return v


def _limited(a, key_lim, key_range, ctx, what):
    """Whether an element's range is in force (``limited`` with MuJoCo's autolimits)."""
    v = flag(a, key_lim, what, "auto")
    if v == "auto":
        if ctx.autolimits:
            return key_range in a
        if key_range in a and np.any(numbers(a[key_range], 2, f"{what} {key_range}") != 0):
            raise MJCFError(f"{what}: {key_range} given without {key_lim} (compiler autolimits='false')")
        return False
    return v == "true"


def finite(what, *xs):
    for x in xs:
        if not np.all(np.isfinite(np.asarray(x, np.float64))):
            raise MJCFError(f"{what}: numbers out of range (not finite after compilation)")
