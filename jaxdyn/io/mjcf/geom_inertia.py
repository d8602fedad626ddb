"""Inertia of MJCF bodies from their geoms (:mod:`jaxdyn.io.mjcf`): solid primitives, exact
mesh volumes and inertias (STL and OBJ files, inline vertices and faces), MuJoCo's ``inertiafromgeom``, ``boundmass``,
``boundinertia`` and ``balanceinertia``.
"""

from __future__ import annotations

import math
import os

import numpy as np

from ...geometry import TYPE_CODES
from ...spatial import parallel_axis
from ..meshes import MeshError, hull_triangles, read_mesh
from .parse import (
    ORIENT,
    MJCFError,
    _pose,
    compose,
    desc,
    numbers,
    z_to,
)

# --------------------------------------------------------------------------------------------
# inertia


def geom_volume_inertia(gtype, size):
    """``(volume, I / mass)`` of a solid primitive about its centre, in the geom frame (MuJoCo's
    size conventions: capsule and cylinder half-lengths along z, box half-sizes)."""
    s = np.asarray(size, np.float64)
    pi = math.pi
    if gtype == "sphere":
        r = s[0]
        return 4 / 3 * pi * r**3, np.full(3, 0.4 * r * r)
    if gtype == "capsule":
        r, h = s[0], 2 * s[1]
        vc, vs = pi * r * r * h, 4 / 3 * pi * r**3
        v = vc + vs
        # cylinder plus two hemispheres, each hemisphere's centre of mass 3r/8 from its flat face
        ixx = (vc * (3 * r * r + h * h) / 12 + vs * (0.4 * r * r + h * h / 4 + 3 * h * r / 8)) / v
        izz = (vc * r * r / 2 + vs * 0.4 * r * r) / v
        return v, np.array([ixx, ixx, izz])
    if gtype == "cylinder":
        r, h = s[0], 2 * s[1]
        return pi * r * r * h, np.array([(3 * r * r + h * h) / 12, (3 * r * r + h * h) / 12, r * r / 2])
    if gtype == "box":
        a, b, c = s
        return 8 * a * b * c, np.array([b * b + c * c, a * a + c * c, a * a + b * b]) / 3
    if gtype == "ellipsoid":
        a, b, c = s
        return 4 / 3 * pi * a * b * c, np.array([b * b + c * c, a * a + c * c, a * a + b * b]) / 5
    raise ValueError(gtype)


def geom_shape(elem, a, ctx, pose, what):
    """(type, size(3), R, p in the body frame) of a geom, with fromto resolved."""
    gtype = a.get("type", "sphere")
    if gtype not in TYPE_CODES and gtype not in ("hfield", "sdf"):
        raise MJCFError(f"{what}: unknown geom type '{gtype}'")
    raw = numbers(a["size"], 3, f"{what} size", at_least=1) if "size" in a else np.zeros(0)
    size = np.zeros(3)
    size[: len(raw)] = raw
    if "fromto" in a:
        if gtype not in ("capsule", "cylinder", "box", "ellipsoid"):
            raise MJCFError(f"{what}: fromto is only allowed for capsule, cylinder, box and ellipsoid geoms")
        ft = numbers(a["fromto"], 6, f"{what} fromto")
        d = ft[3:] - ft[:3]
        L = np.linalg.norm(d)
        if L < 1e-12:
            raise MJCFError(f"{what} fromto: the two points coincide")
        # MuJoCo's compiled frame points +z from the second point to the first (the XML reference
        # words it the other way; the shapes are symmetric, so only the geom frame differs)
        R, p = z_to(-d, f"{what} fromto"), (ft[:3] + ft[3:]) / 2
        if gtype in ("capsule", "cylinder"):
            size = np.array([size[0], L / 2, 0.0])
        else:
            size = np.array([size[0], size[0], L / 2])
    else:
        R, p = _pose(a, ctx, what)
    R, p = compose(pose, (R, p))
    need = {"sphere": 1, "capsule": 2, "cylinder": 2, "box": 3, "ellipsoid": 3}.get(gtype, 0)
    if need and (np.any(size[:need] <= 0)):
        raise MJCFError(f"{what}: a {gtype} needs {need} positive size value(s), got {a.get('size')!r}")
    return gtype, size, R, p


def mesh_volume_inertia(tris):
    """``(volume, centroid, I / mass about the centroid)`` of the solid bounded by a closed,
    outward-oriented triangle mesh ``(n, 3, 3)``, exact for any (also non-convex) shape.

    Each triangle spans a tetrahedron with the origin of signed volume ``det[a b c] / 6``; over a
    tetrahedron with vertices ``p_k`` (one of them the origin), ``int x x^T dV = V / 20
    (sum_k p_k p_k^T + (sum_k p_k)(sum_k p_k)^T)``; the signed sums give the solid's moments."""
    a, b, c = tris[:, 0], tris[:, 1], tris[:, 2]
    v = np.einsum("ij,ij->i", a, np.cross(b, c)) / 6
    vol = float(v.sum())
    if not vol > 0:
        return vol, None, None
    s = a + b + c
    com = (v[:, None] * s).sum(0) / 4 / vol
    C = (
        np.einsum(
            "i,ijk->jk",
            v,
            np.einsum("ij,ik->ijk", a, a)
            + np.einsum("ij,ik->ijk", b, b)
            + np.einsum("ij,ik->ijk", c, c)
            + np.einsum("ij,ik->ijk", s, s),
        )
        / 20
    )
    C = C / vol - np.outer(com, com)  # second moments per unit mass, about the centroid
    return vol, com, np.trace(C) * np.eye(3) - C


def mesh_points(a, ctx, mw):
    """``(vertices (n, 3), triangles (m, 3, 3) or None)`` of a mesh asset's attributes ``a`` in
    the mesh frame, scaled (a mirroring scale turns the faces back outward): an STL or OBJ file
    (through ``<compiler meshdir>``; :func:`jaxdyn.io.meshes.read_mesh`), or inline ``vertex``
    (+ ``face``). MJCFError otherwise."""
    tris = None
    if "file" in a:
        if not a["file"].lower().endswith((".stl", ".obj")):
            raise MJCFError(f"{mw}: only STL and OBJ mesh files are read, got '{a['file']}'")
        path = a["file"] if os.path.isabs(a["file"]) else os.path.join(ctx.main_dir, ctx.meshdir, a["file"])
        try:
            vert, tris = read_mesh(path, mw)
        except MeshError as e:
            raise MJCFError(str(e)) from None
        # MuJoCo keeps mesh vertices in single precision (an STL file holds them so already)
        vert = vert.astype(np.float32).astype(np.float64)
        tris = None if tris is None else tris.astype(np.float32).astype(np.float64)
    elif "vertex" in a:
        if len(a["vertex"].split()) % 3:
            raise MJCFError(f"{mw} vertex: the number of values is not a multiple of 3")
        # MuJoCo keeps mesh vertices in single precision, as an STL file holds them
        vert = numbers(a["vertex"], 10**9, f"{mw} vertex", at_least=3).reshape(-1, 3)
        vert = vert.astype(np.float32).astype(np.float64)
        if "face" in a:
            face = numbers(a["face"], 10**9, f"{mw} face", ints=True, at_least=3)
            if len(face) % 3 or face.min() < 0 or face.max() >= len(vert):
                raise MJCFError(f"{mw} face: expected vertex index triples within 0..{len(vert) - 1}")
            tris = vert[face.reshape(-1, 3)]
    else:
        raise MJCFError(f"{mw}: no mesh data (a file or inline vertex data)")
    scale = numbers(a.get("scale", "1 1 1"), 3, f"{mw} scale")
    if tris is not None:
        tris = tris * scale
        if np.prod(scale) < 0:  # a mirror turns the faces inside out
            tris = tris[:, ::-1]
    return vert * scale, tris


def _mesh_mass_properties(mesh, ctx, gw, bw):
    """(volume, centroid, I / mass) of a mesh asset in the geom frame, or MJCFError."""
    if mesh is None:
        raise MJCFError(f"{gw}: the mesh it names is not defined in <asset>")
    _, a = mesh
    mw = f"<mesh name='{a.get('_name')}'>"
    kind = a.get("inertia", "legacy")
    if kind not in ("exact", "convex", "legacy"):
        raise MJCFError(
            f"{gw}: the geom would define the inertia of {bw} from {mw}, whose inertia='{kind}' jaxdyn "
            f"does not reproduce; add an <inertial> to {bw}, or give the mesh inertia='exact' or 'convex'"
        )
    if kind == "exact" and "file" not in a and not ("vertex" in a and "face" in a):
        raise MJCFError(f"{mw}: inertia='exact' needs a file or vertex and face data")
    vert, tris = mesh_points(a, ctx, mw)
    if kind == "convex" or tris is None:  # MuJoCo makes a mesh without faces its convex hull
        hull = hull_triangles(vert)
        if hull is None:
            raise MJCFError(f"{mw}: the mesh's vertices span no volume (a convex hull needs 4 points off a plane)")
        return mesh_volume_inertia(hull)
    vol, com, iu = mesh_volume_inertia(tris)
    if kind == "legacy":
        # MuJoCo's 'legacy' sums the tetrahedra of the faces and a centre with their volumes'
        # absolute values: the exact inertia when the mesh is convex, closed and outward-facing
        # (every tetrahedron positive), which is what jaxdyn computes and checks here
        hull = hull_triangles(vert)
        hvol = mesh_volume_inertia(hull)[0] if hull is not None else 0.0
        if com is None or abs(vol - hvol) > 1e-6 * hvol:
            raise MJCFError(
                f"{gw}: the geom would define the inertia of {bw} from {mw}, whose inertia='legacy' "
                "(MuJoCo's default) jaxdyn reproduces for convex, closed meshes only, and this mesh's "
                f"volume {vol:.6g} differs from its convex hull's {hvol:.6g}; add an <inertial> to {bw}, "
                "or give the mesh inertia='exact' (closed, outward-oriented meshes) or 'convex'"
            )
    if com is None:
        raise MJCFError(
            f"{mw}: the mesh encloses no positive volume ({vol:.3g}); inertia='exact' needs a "
            "closed mesh with outward-facing triangles"
        )
    return vol, com, iu


def geom_mass(a, vol, gw):
    """A geom's ``mass``, else its ``density`` (default 1000) times its volume ``vol``."""
    if "mass" in a:
        m = float(numbers(a["mass"], 1, f"{gw} mass")[0])
    else:
        m = float(numbers(a.get("density", "1000"), 1, f"{gw} density")[0]) * vol
    if m < 0:
        raise MJCFError(f"{gw}: negative mass")
    return m


def body_inertia(b, ctx):
    """(mass, com, I about the com) of a MuJoCo body in its own frame."""
    what = f"body '{b.name}'"
    use_geoms = ctx.inertiafromgeom == "true" or (ctx.inertiafromgeom == "auto" and b.inertial is None)
    if not use_geoms:
        if b.inertial is None:
            return 0.0, np.zeros(3), np.zeros((3, 3)), False
        elem, a, pose = b.inertial
        w = f"{what} <inertial>"
        if "mass" not in a:
            raise MJCFError(f"{w}: mass is required")
        if "pos" not in a:
            raise MJCFError(f"{w}: pos is required")
        m = float(numbers(a["mass"], 1, f"{w} mass")[0])
        if m < 0:
            raise MJCFError(f"{w} mass: must not be negative, got {m}")
        R, c = compose(pose, _pose(a, ctx, w))
        if "fullinertia" in a:
            if any(k in a for k in ORIENT):
                raise MJCFError(f"{w}: fullinertia and an orientation cannot both be given")
            f = numbers(a["fullinertia"], 6, f"{w} fullinertia")
            I = np.array([[f[0], f[3], f[4]], [f[3], f[1], f[5]], [f[4], f[5], f[2]]])
        elif "diaginertia" in a:
            I = np.diag(numbers(a["diaginertia"], 3, f"{w} diaginertia"))
        else:
            raise MJCFError(f"{w}: diaginertia or fullinertia is required")
        return m, c, R @ I @ R.T, True
    m_tot, mc, parts = 0.0, np.zeros(3), []
    lo, hi = ctx.inertiagrouprange
    for elem, a, pose in b.geoms:
        gw = f"geom {desc(elem)} in {what}"
        group = int(numbers(a.get("group", "0"), 1, f"{gw} group", ints=True)[0])
        if not lo <= group <= hi:
            continue
        gtype = a.get("type", "sphere")
        if gtype in ("plane",):
            continue
        if gtype == "mesh":  # (shellinertia applies to primitives only)
            vol, cm, iu = _mesh_mass_properties(ctx.meshes.get(a.get("mesh")), ctx, gw, what)
            m = geom_mass(a, vol, gw)
            R, p = compose(pose, _pose(a, ctx, gw))
            cb = R @ cm + p
            parts.append((m, cb, R @ (m * iu) @ R.T))
            m_tot += m
            mc = mc + m * cb
            continue
        if gtype in ("hfield", "sdf") or ("mesh" in a and gtype != "mesh"):
            kind = "mesh-fitted " + gtype if gtype not in ("mesh", "hfield", "sdf") else gtype
            raise MJCFError(
                f"{gw}: a {kind} geom would define the inertia of {what}, and jaxdyn does not compute "
                f"{kind} inertias (MuJoCo's default for meshes is that of their convex hull); add an "
                f"<inertial> to {what}, or put the geom in a group outside <compiler inertiagrouprange>"
            )
        if a.get("shellinertia", "false") == "true":
            raise MJCFError(f"{gw}: shellinertia='true' is not supported; add an <inertial> to {what}")
        gtype, size, R, p = geom_shape(elem, a, ctx, pose, gw)
        vol, i_unit = geom_volume_inertia(gtype, size)
        m = geom_mass(a, vol, gw)
        parts.append((m, p, R @ np.diag(m * i_unit) @ R.T))
        m_tot += m
        mc = mc + m * p
    if m_tot <= 0:
        return 0.0, np.zeros(3), np.zeros((3, 3)), False
    c = mc / m_tot
    I = sum(Ig + parallel_axis(m, p - c, xp=np) for m, p, Ig in parts)
    return m_tot, c, I, False


def bounds(m, I, explicit, ctx):
    """boundmass, boundinertia, balanceinertia on a body's (mass, I) (principal axes kept)."""
    if ctx.boundmass > 0:
        m = max(m, ctx.boundmass)
    if ctx.boundinertia > 0 or (ctx.balanceinertia and explicit):
        ev, V = np.linalg.eigh((I + I.T) / 2)
        if ctx.boundinertia > 0:
            ev = np.maximum(ev, ctx.boundinertia)
        if ctx.balanceinertia and explicit and ev[0] + ev[1] < ev[2]:
            ev = np.full(3, ev.mean())
        I = (V * ev) @ V.T
    return m, I
