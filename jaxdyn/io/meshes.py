"""Mesh files of robot descriptions: their points, triangles and convex hulls.

Read (standard library and NumPy only):

* STL, binary or ASCII: the triangles.
* Wavefront OBJ: the ``v`` lines (``x y z [w]``) and the ``f`` lines (vertex indices, 1-based
  or negative from the end, ``v/vt/vn`` forms; a polygon is split into a fan of triangles).
* COLLADA (``.dae``): the positions of every mesh that the scene's nodes instance, each through
  its node's transforms (``matrix``, ``translate``, ``rotate``, ``scale``, composed from the
  root down; ``instance_node`` followed) and scaled by the asset's ``<unit meter>``. The
  ``up_axis`` is not applied: the positions stay in the file's own axes, as Pinocchio loads
  them (checked on 159 published files). Only points are read (what a convex hull needs), no
  triangles.

A mesh collides as its convex hull, as in MuJoCo (Todorov12; MuJoCo's documentation, "mesh"):
:func:`hull_vertices` keeps the hull's vertices, :func:`hull_triangles` its outward faces
(scipy's Qhull, Barber96).

Mesh references in URDF (``<mesh filename>``) are resolved by :func:`resolve_mesh_path`:
``package://NAME/REST`` in the given package directories (a directory holding ``NAME``, or
``NAME`` itself), in ``ROS_PACKAGE_PATH``, and in the URDF file's ancestor directories (one named
``NAME``, or holding ``NAME``); ``file://PATH``; or a path, relative to the URDF file.
"""

from __future__ import annotations

import math
import os
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from .errors import LoadError


class MeshError(LoadError):
    """A mesh file that jaxdyn cannot find or read; the message names the file."""


class MeshData(NamedTuple):
    """points ``(n, 3)``; triangles ``(m, 3, 3)``, or None where the file gives none."""

    points: np.ndarray
    triangles: np.ndarray | None


MESH_SUFFIXES = (".stl", ".obj", ".dae")


def read_mesh(path: str, what: str = "mesh") -> MeshData:
    """The points and triangles of a mesh file (module docstring), in the file's units, as
    float64. ``what`` names the element that refers to the file in error messages."""
    suffix = os.path.splitext(path)[1].lower()
    if suffix not in MESH_SUFFIXES:
        raise MeshError(f"{what}: '{path}' is not a mesh file jaxdyn reads (STL, OBJ, COLLADA .dae)")
    if not os.path.isfile(path):
        raise MeshError(f"{what}: mesh file '{path}' not found")
    with open(path, "rb") as fh:
        data = fh.read()
    if suffix == ".stl":
        tris = _stl_triangles(data, path, what)
        out = MeshData(tris.reshape(-1, 3), tris)
    elif suffix == ".obj":
        out = _read_obj(data, path, what)
    else:
        out = MeshData(_read_dae(data, path, what), None)
    if not len(out.points):
        raise MeshError(f"{what}: '{path}' holds no points")
    if not np.all(np.isfinite(out.points)):
        raise MeshError(f"{what}: '{path}' holds coordinates that are not finite numbers")
    return out


def read_stl(path: str, what: str = "mesh") -> np.ndarray:
    """Triangles ``(n, 3, 3)`` of a binary or ASCII STL file."""
    with open(path, "rb") as fh:
        return _stl_triangles(fh.read(), path, what)


def _stl_triangles(data: bytes, path: str, what: str) -> np.ndarray:
    """Triangles ``(n, 3, 3)`` of an STL file's bytes: binary (float64 of the stored float32)
    when the size matches the triangle count in the header, else ASCII."""
    if len(data) >= 84:
        n = int(np.frombuffer(data, "<u4", 1, 80)[0])
        if len(data) == 84 + 50 * n:
            rec = np.frombuffer(data, np.dtype([("n", "<f4", 3), ("v", "<f4", (3, 3)), ("a", "<u2")]), n, 84)
            return rec["v"].astype(np.float64)
    if data.lstrip()[:5].lower() != b"solid":
        raise MeshError(
            f"{what}: '{path}' is neither a binary STL file (size and triangle count disagree) nor ASCII STL"
        )
    words = data.decode("ascii", errors="replace").split()
    vals = []
    for k, w in enumerate(words):
        if w.lower() == "vertex":
            try:
                v = [float(x) for x in words[k + 1 : k + 4]]
            except ValueError:
                v = []
            if len(v) != 3:
                raise MeshError(f"{what}: '{path}': an ASCII STL 'vertex' without three numbers")
            vals.append(v)
    if not vals or len(vals) % 3:
        raise MeshError(f"{what}: '{path}': ASCII STL with {len(vals)} vertices, not whole triangles")
    return np.asarray(vals, np.float64).reshape(-1, 3, 3)


def _read_obj(data: bytes, path: str, what: str) -> MeshData:
    points, faces = [], []
    for ln, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), 1):
        words = line.split()
        if not words:
            continue
        try:
            if words[0] == "v":
                points.append([float(x) for x in words[1:4]])
                if len(points[-1]) != 3:
                    raise ValueError
            elif words[0] == "f":
                idx = [int(w.split("/")[0]) for w in words[1:]]
                n = len(points)
                idx = [i - 1 if i > 0 else n + i for i in idx]
                if len(idx) < 3 or not all(0 <= i < n for i in idx):
                    raise ValueError
                faces += [(idx[0], idx[k], idx[k + 1]) for k in range(1, len(idx) - 1)]
        except ValueError:
            raise MeshError(f"{what}: '{path}' line {ln}: malformed OBJ '{line.strip()[:60]}'") from None
    if not points:
        raise MeshError(f"{what}: '{path}' has no vertices ('v' lines)")
    pts = np.asarray(points, np.float64)
    return MeshData(pts, pts[np.asarray(faces, np.int64)] if faces else None)


def _local(tag) -> str:
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""


def _floats(text, path, what, where) -> np.ndarray:
    try:
        return np.asarray([float(x) for x in (text or "").split()], np.float64)
    except ValueError:
        raise MeshError(f"{what}: '{path}': non-numeric values in <{where}>") from None


def _node_transform(node, path, what) -> np.ndarray:
    """The 4x4 transform of a COLLADA ``<node>``: its transform elements composed in order."""
    T = np.eye(4)
    for el in node:
        tag = _local(el.tag)
        if tag not in ("matrix", "translate", "rotate", "scale", "lookat", "skew"):
            continue
        v = _floats(el.text, path, what, tag)
        M = np.eye(4)
        if tag == "matrix" and v.size == 16:
            M = v.reshape(4, 4)
        elif tag == "translate" and v.size == 3:
            M[:3, 3] = v
        elif tag == "scale" and v.size == 3:
            M[:3, :3] = np.diag(v)
        elif tag == "rotate" and v.size == 4:
            n = np.linalg.norm(v[:3])
            if n == 0:
                raise MeshError(f"{what}: '{path}': <rotate> about a zero axis")
            a, t = v[:3] / n, math.radians(v[3])
            K = np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
            M[:3, :3] = np.eye(3) + math.sin(t) * K + (1 - math.cos(t)) * K @ K
        else:
            raise MeshError(
                f"{what}: '{path}': <{tag}> with {v.size} values is not read (matrix, translate, rotate, scale)"
            )
        T = T @ M
    return T


def _read_dae(data: bytes, path: str, what: str) -> np.ndarray:
    try:
        root = ET.fromstring(data)
    except ET.ParseError as e:
        raise MeshError(f"{what}: '{path}' is not valid COLLADA XML ({e})") from None
    elements = {el.get("id"): el for el in root.iter() if el.get("id")}
    unit = 1.0
    for el in root:
        if _local(el.tag) == "asset":
            for u in el:
                if _local(u.tag) == "unit" and (meter := u.get("meter")):
                    unit = float(meter)

    def positions(geometry) -> np.ndarray:
        """The positions that the primitives (triangles, polygons, ...) of a geometry use."""
        out = []
        for mesh in geometry:
            if _local(mesh.tag) != "mesh":
                continue
            source = {}  # <vertices> id -> its positions
            for verts in mesh:
                if _local(verts.tag) != "vertices":
                    continue
                for inp in verts:
                    if _local(inp.tag) == "input" and inp.get("semantic") == "POSITION":
                        src = elements.get((inp.get("source") or "").lstrip("#"))
                        arr = (
                            next((e for e in src.iter() if _local(e.tag) == "float_array"), None)
                            if src is not None
                            else None
                        )
                        acc = (
                            next((e for e in src.iter() if _local(e.tag) == "accessor"), None)
                            if src is not None
                            else None
                        )
                        if arr is None:
                            raise MeshError(
                                f"{what}: '{path}': the positions of geometry '{geometry.get('id')}' are missing"
                            )
                        stride = int(acc.get("stride", 3)) if acc is not None else 3
                        v = _floats(arr.text, path, what, "float_array")
                        source[verts.get("id")] = v[: v.size // stride * stride].reshape(-1, stride)[:, :3]
            for prim in mesh:
                inputs = [e for e in prim if _local(e.tag) == "input"]
                vin = [e for e in inputs if e.get("semantic") == "VERTEX"]
                if not vin:
                    continue
                stride = 1 + max(int(e.get("offset", 0)) for e in inputs)
                pos = source.get((vin[0].get("source") or "").lstrip("#"))
                if pos is None:
                    raise MeshError(
                        f"{what}: '{path}': a primitive of geometry '{geometry.get('id')}' names no <vertices>"
                    )
                idx = np.concatenate(
                    [_floats(p.text, path, what, "p") for p in prim.iter() if _local(p.tag) == "p"] or [np.zeros(0)]
                ).astype(np.int64)
                idx = idx[int(vin[0].get("offset", 0)) :: stride]
                if len(idx) and (idx.min() < 0 or idx.max() >= len(pos)):
                    raise MeshError(f"{what}: '{path}': geometry '{geometry.get('id')}' indexes past its positions")
                out.append(pos[np.unique(idx)])
        return np.concatenate(out) if out else np.zeros((0, 3))

    found: list[np.ndarray] = []

    def walk(node, T, depth):
        if depth > 64:
            raise MeshError(f"{what}: '{path}': COLLADA nodes nested deeper than 64 (a cycle of instance_node?)")
        T = T @ _node_transform(node, path, what)
        for el in node:
            tag = _local(el.tag)
            if tag == "node":
                walk(el, T, depth + 1)
            elif tag in ("instance_geometry", "instance_node"):
                target = elements.get((el.get("url") or "").lstrip("#"))
                if target is None:
                    raise MeshError(f"{what}: '{path}': <{tag} url='{el.get('url')}'> names nothing in the file")
                if tag == "instance_node":
                    walk(target, T, depth + 1)
                else:
                    p = positions(target)
                    found.append(p @ T[:3, :3].T + T[:3, 3])

    scenes = [el for el in root.iter() if _local(el.tag) == "instance_visual_scene"]
    scene = elements.get((scenes[0].get("url") or "").lstrip("#")) if scenes else None
    if scene is not None:
        for node in scene:
            if _local(node.tag) == "node":
                walk(node, np.eye(4), 0)
    else:  # no scene: every geometry as it is
        found += [positions(g) for g in root.iter() if _local(g.tag) == "geometry"]
    pts = np.concatenate(found) if found else np.zeros((0, 3))
    if not len(pts):
        raise MeshError(f"{what}: '{path}' has no mesh positions in its scene")
    return pts * unit


def resolve_mesh_path(
    uri: str, base_dir: str | None, package_dirs: Sequence[str | os.PathLike] = (), what: str = "mesh"
) -> str:
    """The file a URDF ``<mesh filename>`` refers to (module docstring); MeshError naming the
    places searched where none exists."""
    if uri.startswith("package://"):
        pkg, _, rel = uri[len("package://") :].partition("/")
        roots = [os.fspath(d) for d in package_dirs]
        roots += [d for d in os.environ.get("ROS_PACKAGE_PATH", "").split(os.pathsep) if d]
        if base_dir:
            d = os.path.abspath(base_dir)
            while True:
                roots.append(d)
                up = os.path.dirname(d)
                if up == d:
                    break
                d = up
        tried = []
        for d in roots:
            for cand in ((d, rel) if os.path.basename(os.path.normpath(d)) == pkg else (d, pkg, rel),):
                p = os.path.join(*cand)
                if os.path.isfile(p):
                    return p
                tried.append(p)
        where = f"package_dirs {[os.fspath(d) for d in package_dirs]}, ROS_PACKAGE_PATH"
        where += " and the URDF file's directories" if base_dir else " (the URDF was given as text: pass package_dirs)"
        raise MeshError(f"{what}: '{uri}' not found (package '{pkg}' searched in {where})")
    path = uri[len("file://") :] if uri.startswith("file://") else uri
    if not os.path.isabs(path):
        path = os.path.join(base_dir or os.getcwd(), path)
    if not os.path.isfile(path):
        raise MeshError(f"{what}: mesh file '{path}' not found")
    return path


def _convex_hull(points):
    """scipy's ``ConvexHull`` of the distinct points ``(n, 3)``, or None where they span no
    volume (flat, or fewer than 4 points)."""
    from scipy.spatial import ConvexHull, QhullError

    try:
        return ConvexHull(np.unique(points, axis=0))
    except (QhullError, ValueError):
        return None


def hull_triangles(points):
    """The convex hull of ``points`` ``(n, 3)`` as outward-facing triangles ``(m, 3, 3)``, or
    None where the points span no volume."""
    hull = _convex_hull(points)
    if hull is None:
        return None
    tri = hull.points[hull.simplices]
    outward = hull.equations[:, :3]
    flip = np.einsum("ij,ij->i", np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0]), outward) < 0
    tri[flip] = tri[flip][:, ::-1]
    return tri


def hull_vertices(points):
    """The vertices of the convex hull of ``points`` ``(n, 3)`` (a mesh collides as its convex
    hull); all distinct points where they span no volume."""
    hull = _convex_hull(points)
    if hull is None:
        return np.unique(points, axis=0)
    return hull.points[np.sort(hull.vertices)]
