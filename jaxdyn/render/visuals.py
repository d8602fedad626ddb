"""What a model looks like: the shapes drawn on its bodies (:class:`Visual`), read from the
robot description or derived from the model.

Sources, by :func:`visuals`:

* a URDF file: every link's ``<visual>`` (box, sphere, cylinder, capsule, mesh with ``scale``),
  placed on the jaxdyn body the link belongs to (a link merged through a fixed joint is a named
  frame of its body), coloured by its ``<material>`` (a ``<color rgba>`` inline or in a named
  material of the ``<robot>``). Mesh files are read by :mod:`jaxdyn.io.meshes`: STL and OBJ with
  their triangles; COLLADA gives points only, so a ``.dae`` is drawn as its convex hull;
* an MJCF file: the model's geoms (:attr:`jaxdyn.Model.geoms`, the loader keeps every geom,
  visual or not), with the colours MuJoCo's compiler resolves (``rgba``, materials, default
  classes) and the full triangles of mesh geoms, where the ``mujoco`` package can compile the
  file; MuJoCo's hidden geom groups (3 and above, by convention collision-only copies) are left
  out;
* no file, or a URDF without ``<visual>``: the collision geoms of the model (a mesh as its convex
  hull), and "bones": a capsule along every segment of the stick figure of
  :func:`jaxdyn.viewer.skeleton`, so that a model without any geometry is still seen as solids.

A mesh file that cannot be found or read is drawn, with a warning naming it, as the box of the
same inertia as its body (the body's equivalent uniform box, at its centre of mass): the file's
own extent is unknown. Planes and height fields on the world are not drawn (the renderers draw
their own ground).
"""

from __future__ import annotations

import dataclasses
import os
import warnings
import xml.etree.ElementTree as ET

import numpy as np

from ..geometry import BOX, CAPSULE, CYLINDER, ELLIPSOID, HFIELD, MESH, PLANE, SPHERE
from ..io.meshes import MeshError, hull_triangles, read_mesh, resolve_mesh_path
from ..model import Model

__all__ = ["Visual", "visuals", "primitive_mesh", "PALETTE"]

KINDS = {SPHERE: "sphere", CAPSULE: "capsule", ELLIPSOID: "ellipsoid", CYLINDER: "cylinder", BOX: "box", MESH: "mesh"}
# one colour per limb, as the stick figure's
PALETTE = (
    (0.62, 0.66, 0.72, 1.0),
    (0.30, 0.53, 0.72, 1.0),
    (0.55, 0.42, 0.72, 1.0),
    (0.72, 0.50, 0.36, 1.0),
    (0.28, 0.62, 0.58, 1.0),
    (0.66, 0.66, 0.32, 1.0),
    (0.74, 0.40, 0.52, 1.0),
    (0.45, 0.53, 0.62, 1.0),
)


class MissingMeshWarning(UserWarning):
    """A mesh file of a visual could not be found or read; a stand-in box is drawn."""


@dataclasses.dataclass(frozen=True, eq=False)
class Visual:
    """One shape fixed to a body.

    body: the jaxdyn body (``-1``: the world); kind: ``"sphere"``, ``"capsule"``,
    ``"cylinder"``, ``"box"``, ``"ellipsoid"`` or ``"mesh"``; size ``(3,)``: MuJoCo's
    conventions (:mod:`jaxdyn.geometry`); R ``(3, 3)``, p ``(3,)``: the shape's frame in the
    body's frame; rgba ``(4,)``; vertices ``(n, 3)`` and faces ``(m, 3)`` (vertex indices,
    counter-clockwise seen from outside) of a mesh, in the shape's frame; name: where it comes
    from, for messages.
    """

    body: int
    kind: str
    size: np.ndarray
    R: np.ndarray
    p: np.ndarray
    rgba: np.ndarray
    vertices: np.ndarray | None = None
    faces: np.ndarray | None = None
    name: str = ""


def _mesh_from_triangles(tris: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Indexed vertices and faces of triangles ``(m, 3, 3)`` (shared corners merged)."""
    flat = np.asarray(tris, np.float64).reshape(-1, 3)
    verts, inv = np.unique(flat, axis=0, return_inverse=True)
    return verts, np.asarray(inv, np.int32).reshape(-1, 3)


def primitive_mesh(kind: str, size, segments: int = 24) -> tuple[np.ndarray, np.ndarray]:
    """Triangles of a primitive (for viewers that draw meshes only): ``(vertices (n, 3), faces
    (m, 3))``, counter-clockwise seen from outside, in the shape's frame."""
    size = np.asarray(size, np.float64)
    if kind == "box":
        s = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], np.float64) * size
        f = [(0, 1, 3), (0, 3, 2), (4, 6, 7), (4, 7, 5), (0, 4, 5), (0, 5, 1)]
        f += [(2, 3, 7), (2, 7, 6), (0, 2, 6), (0, 6, 4), (1, 5, 7), (1, 7, 3)]
        return s, np.array(f, np.int32)
    n = segments
    if kind == "cylinder":
        a = 2 * np.pi * np.arange(n) / n
        ring = np.stack([size[0] * np.cos(a), size[0] * np.sin(a)], 1)
        v = np.concatenate([np.c_[ring, -size[1] * np.ones(n)], np.c_[ring, size[1] * np.ones(n)], [[0, 0, -size[1]]]])
        v = np.concatenate([v, [[0, 0, size[1]]]])
        f = []
        for i in range(n):
            j = (i + 1) % n
            f += [(i, j, n + j), (i, n + j, n + i), (2 * n, j, i), (2 * n + 1, n + i, n + j)]
        return v, np.array(f, np.int32)
    # sphere, ellipsoid, capsule: a latitude-longitude sphere, stretched or split at the equator
    m = n // 2
    th = np.pi * np.arange(m + 1) / m
    ph = 2 * np.pi * np.arange(n) / n
    st, ct = np.sin(th)[:, None], np.cos(th)[:, None]
    v = np.stack([st * np.cos(ph), st * np.sin(ph), np.broadcast_to(ct, (m + 1, n))], -1).reshape(-1, 3)
    if kind == "sphere":
        v = v * size[0]
    elif kind == "ellipsoid":
        v = v * size
    elif kind == "capsule":
        v = v * size[0] + np.where(v[:, 2:] >= 0, 1.0, -1.0) * np.array([0, 0, size[1]])
    else:
        raise ValueError(f"primitive_mesh: unknown kind '{kind}' (box, sphere, ellipsoid, capsule, cylinder)")
    tris: list[tuple[int, int, int]] = []
    for i in range(m):
        for j in range(n):
            k0, k1 = i * n + j, i * n + (j + 1) % n
            tris += [(k0, k0 + n, k1 + n), (k0, k1 + n, k1)]
    return v, np.array(tris, np.int32)


def _limbs(parents) -> list[int]:
    from ..viewer import _limbs as limbs

    return limbs(parents)


def _body_colors(model: Model) -> list[tuple]:
    limbs = _limbs(model.parents)
    return [PALETTE[k % len(PALETTE)] for k in limbs]


def _inertia_box(model: Model, body: int, name: str) -> Visual:
    """The uniform box of ``body``'s mass and rotational inertia, at its centre of mass."""
    m = float(np.asarray(model.mass)[body]) if body >= 0 else 0.0
    if m > 0:
        I = np.asarray(model.inertia[body], np.float64)
        c = np.asarray(model.com[body], np.float64)
        Ic = I - m * (np.dot(c, c) * np.eye(3) - np.outer(c, c))  # about the centre of mass
        w, V = np.linalg.eigh(0.5 * (Ic + Ic.T))
        # I_x = m/3 (b^2 + c^2) for half-sizes (a, b, c): a^2 = 3/(2m) (I_y + I_z - I_x)
        h2 = 1.5 / m * (np.sum(w) - 2 * w)
        half = np.sqrt(np.clip(h2, 1e-6, None))
        R = V if np.linalg.det(V) > 0 else V * np.array([1, 1, -1])
    else:
        half, R, c = np.full(3, 0.02), np.eye(3), np.zeros(3)
    return Visual(body, "box", half, R, c, np.array([0.85, 0.55, 0.2, 0.6]), name=name)


def _geom_visuals(model: Model, colors, rgba=None, mesh_data=None, keep=None) -> list[Visual]:
    """The model's geoms as visuals (planes and height fields left out)."""
    g = model.geoms
    out: list[Visual] = []
    if g is None or g.ng == 0:
        return out
    size, pos, Rg = (np.asarray(x, np.float64) for x in (g.size, g.pos, g.R))
    face_geom = np.asarray(g.face_geom, np.int64)
    faces = np.asarray(g.faces, np.float64)
    for k in range(g.ng):
        t, b = g.type[k], g.body[k]
        if t in (PLANE, HFIELD) or (keep is not None and not keep[k]):
            continue
        name = g.names[k] or f"geom {k}"
        col = np.asarray(rgba[k] if rgba is not None else (colors[b] if b >= 0 else (0.5, 0.5, 0.5, 1.0)), np.float64)
        if t == MESH:
            if mesh_data is not None and mesh_data.get(k) is not None:
                v, f = mesh_data[k]
            elif np.any(face_geom == k):
                v, f = _mesh_from_triangles(faces[face_geom == k])
            else:
                warnings.warn(
                    f"render: mesh geom '{name}' on body {b} has no vertices that jaxdyn could read; "
                    "drawn as the box of its body's inertia",
                    MissingMeshWarning,
                    stacklevel=3,
                )
                out.append(_inertia_box(model, b, name))
                continue
            out.append(Visual(b, "mesh", size[k], Rg[k], pos[k], col, v, f, name))
        else:
            out.append(Visual(b, KINDS[t], size[k], Rg[k], pos[k], col, name=name))
    return out


def _bones(model: Model, colors, radius=None) -> list[Visual]:
    """A capsule along every segment of the stick figure, fixed to the body it starts from; a
    sphere at every joint."""
    from ..viewer import structure

    st = structure(model)
    pl_p = np.asarray(model.placement_p, np.float64)
    fr_p = np.asarray(model.frame_p, np.float64)
    com = np.asarray(model.com, np.float64)
    lengths = [float(np.linalg.norm(pl_p[b])) for b in range(model.nb) if model.parents[b] >= 0 or st.world]
    lengths += [float(np.linalg.norm(fr_p[f])) for f in st.leaf_frames]
    scale = max([x for x in lengths if x > 0] or [0.3])
    r = (
        radius
        if radius is not None
        else max(0.12 * float(np.median([x for x in lengths if x > 0] or [scale])), 0.05 * scale)
    )
    out: list[Visual] = []
    n0 = st.nb + int(st.world)
    fb = model.topology.frame_bodies
    for (i, j), kind in zip(st.segments, st.kinds):
        if kind == "link":
            if i == st.nb:  # from the world origin to a root body's joint
                body, a, bpt = -1, np.zeros(3), pl_p[j]
            else:
                body, a, bpt = int(i), np.zeros(3), pl_p[j]
        elif kind == "frame":
            body, a, bpt = int(i), np.zeros(3), fr_p[st.leaf_frames[j - n0]]
            body = fb[st.leaf_frames[j - n0]]
        else:
            body, a, bpt = int(i), np.zeros(3), com[int(i)]
        d = bpt - a
        L = float(np.linalg.norm(d))
        if L < 1e-9:
            continue
        z = d / L
        x = np.cross(z, [1.0, 0, 0] if abs(z[0]) < 0.9 else [0, 1.0, 0])
        x /= np.linalg.norm(x)
        R = np.stack([x, np.cross(z, x), z], 1)
        col = colors[body] if body >= 0 else (0.5, 0.5, 0.5, 1.0)
        out.append(Visual(body, "capsule", np.array([r, L / 2, 0]), R, a + d / 2, np.asarray(col), name="bone"))
    for b in range(model.nb):
        out.append(Visual(b, "sphere", np.array([1.4 * r, 0, 0]), np.eye(3), np.zeros(3), np.array(colors[b])))
    return out


def visuals(model: Model, source=None, *, bones=None, package_dirs=()) -> tuple[Visual, ...]:
    """The shapes to draw for ``model`` (module docstring).

    Args:
      source: the URDF (``.urdf``) or MJCF (``.xml``) file the model was loaded from, or None.
      bones: draw the stick figure as capsules; default: where the file gives no visual.
      package_dirs: where ``package://`` meshes are found (as :func:`jaxdyn.load_urdf`).
    """
    colors = _body_colors(model)
    out: list[Visual] = []
    if source is not None:
        path = os.fspath(source)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"render: the robot description '{path}' does not exist")
        if path.lower().endswith(".urdf"):
            out = _urdf_visuals(model, path, colors, package_dirs)
        elif path.lower().endswith(".xml"):
            out = _mjcf_visuals(model, path, colors)
        else:
            raise ValueError(f"render: '{path}' is neither a URDF (.urdf) nor an MJCF (.xml) file")
    from_file = bool(out)
    if not from_file:
        out = _geom_visuals(model, colors)
    if bones if bones is not None else not from_file:
        out += _bones(model, colors)
    return tuple(out)


# -- URDF ------------------------------------------------------------------------------------------


def _rgba_of(elem, materials) -> np.ndarray | None:
    if elem is None:
        return None
    c = elem.find("color")
    if c is not None and c.get("rgba"):
        try:
            v = np.array([float(x) for x in c.get("rgba").split()], np.float64)
        except ValueError:
            return None
        return v if v.shape == (4,) and np.all(np.isfinite(v)) else None
    return materials.get(elem.get("name", ""))


def _urdf_visuals(model: Model, path: str, colors, package_dirs) -> list[Visual]:
    from ..io.urdf import floats, origin

    root = ET.parse(path).getroot()
    materials: dict[str, np.ndarray] = {}
    for m in root.findall("material"):
        rgba = _rgba_of(m, {})
        if rgba is not None:
            materials[m.get("name", "")] = rgba
    frames = {n: k for k, n in enumerate(model.frame_names)}
    fb = model.topology.frame_bodies
    frR, frp = np.asarray(model.frame_R, np.float64), np.asarray(model.frame_p, np.float64)
    base = os.path.dirname(os.path.abspath(path))
    dirs = [package_dirs] if isinstance(package_dirs, str | os.PathLike) else list(package_dirs)
    cache: dict[str, tuple] = {}
    out: list[Visual] = []
    for link in root.findall("link"):
        lname = link.get("name", "")
        if lname in model.body_names:
            body, Rl, pl = model.body_names.index(lname), np.eye(3), np.zeros(3)
        elif lname in frames:
            f = frames[lname]
            body, Rl, pl = fb[f], frR[f], frp[f]
        else:
            continue
        for k, ve in enumerate(link.findall("visual")):
            what = f"link '{lname}' <visual> {k + 1}"
            ge = ve.find("geometry")
            shape = ge[0] if ge is not None and len(ge) else None
            if shape is None:
                continue
            Ro, po = origin(ve, what)
            R, p = Rl @ Ro, Rl @ po + pl
            col = _rgba_of(ve.find("material"), materials)
            col = np.asarray(colors[body] if body >= 0 else (0.5, 0.5, 0.5, 1.0)) if col is None else col
            size = np.zeros(3)
            tag = shape.tag
            if tag == "box":
                size = 0.5 * floats(shape.get("size", "0 0 0"), 3, f"{what} <box size>")
            elif tag == "sphere":
                size[0] = float(shape.get("radius", "0"))
            elif tag in ("cylinder", "capsule"):
                size[:2] = float(shape.get("radius", "0")), 0.5 * float(shape.get("length", "0"))
            elif tag == "mesh":
                uri = shape.get("filename", "")
                scale = floats(shape.get("scale", "1 1 1"), 3, f"{what} <mesh scale>")
                try:
                    mpath = resolve_mesh_path(uri, base, dirs, what)
                    if mpath not in cache:
                        data = read_mesh(mpath, what)
                        tris = data.triangles if data.triangles is not None else hull_triangles(data.points)
                        if tris is None:
                            raise MeshError(f"{what}: '{mpath}' has no triangles and its points span no volume")
                        cache[mpath] = _mesh_from_triangles(tris)
                except MeshError as e:
                    warnings.warn(
                        f"render: {e}; drawn as the box of its body's inertia", MissingMeshWarning, stacklevel=3
                    )
                    out.append(_inertia_box(model, body, what))
                    continue
                v, f = cache[mpath]
                v = v * scale
                if np.prod(np.sign(scale)) < 0:  # a mirror turns the faces inside out
                    f = f[:, ::-1]
                out.append(Visual(body, "mesh", size, R, p, col, v, f, what))
                continue
            else:
                continue
            out.append(Visual(body, "cylinder" if tag == "cylinder" else tag, size, R, p, col, name=what))
    return out


# -- MJCF ------------------------------------------------------------------------------------------


def _quat_to_R(q) -> np.ndarray:
    w, x, y, z = np.asarray(q, np.float64) / np.linalg.norm(q)
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )


def _mjcf_visuals(model: Model, path: str, colors) -> list[Visual]:
    """The geoms with MuJoCo's resolved colours and mesh triangles; the geoms alone (default
    colours, meshes as hulls) where MuJoCo is absent or cannot compile the file."""
    g = model.geoms
    if g is None or g.ng == 0:
        return []
    from ._gl import mujoco as _mujoco

    try:
        mujoco = _mujoco()
    except ImportError:
        return _geom_visuals(model, colors)
    try:
        mm = mujoco.MjModel.from_xml_path(path)
    except Exception as e:  # noqa: BLE001 - fall back to the geoms jaxdyn read
        warnings.warn(f"render: MuJoCo cannot compile '{path}' ({e}); drawn with default colours", stacklevel=3)
        return _geom_visuals(model, colors)
    if list(mm.geom_type) != list(g.type):
        warnings.warn(
            f"render: MuJoCo's geoms of '{path}' do not match jaxdyn's one to one; drawn with default colours",
            stacklevel=3,
        )
        return _geom_visuals(model, colors)
    rgba = np.array(mm.geom_rgba, np.float64)
    for k in range(mm.ngeom):
        mat = mm.geom_matid[k]
        if mat >= 0 and np.allclose(rgba[k], [0.5, 0.5, 0.5, 1]):  # MuJoCo: the material's colour wins
            rgba[k] = mm.mat_rgba[mat]
    keep = np.asarray(mm.geom_group) < 3
    mesh_data = {}
    for k in range(mm.ngeom):
        d = mm.geom_dataid[k]
        if mm.geom_type[k] != mujoco.mjtGeom.mjGEOM_MESH or d < 0:
            continue
        v0, nv = mm.mesh_vertadr[d], mm.mesh_vertnum[d]
        f0, nf = mm.mesh_faceadr[d], mm.mesh_facenum[d]
        v = np.array(mm.mesh_vert[v0 : v0 + nv], np.float64)
        f = np.array(mm.mesh_face[f0 : f0 + nf], np.int32)
        # MuJoCo keeps a mesh in its inertial frame: back to the frame of the file (jaxdyn's geom frame)
        v = v @ _quat_to_R(mm.mesh_quat[d]).T + mm.mesh_pos[d]
        mesh_data[k] = (v, f)
    return _geom_visuals(model, colors, rgba=rgba, mesh_data=mesh_data, keep=keep)
