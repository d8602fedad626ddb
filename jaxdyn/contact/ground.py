"""Contact of the shapes on a model's bodies with the ground (:class:`~jaxdyn.contact.Ground`).

* Ground: the half-space ``n . x <= h`` (:class:`Ground`: unit normal ``n``, any slope, and
  height ``h``; array leaves, so both are differentiable).
* Ground contact points, per geom of ``model.geoms`` on a body that the ground collides with:
  where the geoms hold planes (an MJCF floor), by MuJoCo's filter against them (bit masks,
  ``Geoms.exclude``, explicit ``Geoms.pairs``); without planes, every geom with ``contype`` or
  ``conaffinity`` nonzero. Geoms on the world are skipped. A sphere is its centre with radius
  ``r``, a capsule its two end-sphere centres (``+-`` half-length along the geom's z) with radius ``r``,
  a box its 8 corners with ``r = 0``, a cylinder (radius ``r``, half-length ``l``, axis ``a``)
  four points on each of its two rim circles with ``r = 0``: the deepest rim point
  ``c_k + r u`` with ``u = w / |w|``, ``w = (n . a) a - n`` (``c_k = c +- l a`` the disk centres:
  the point of the circle lowest along ``n``), and that point turned about the axis by 90, 180
  and 270 degrees (``u``, ``a x u``, ``-u``, ``-a x u``). Where the axis is parallel to ``n``
  (``w = 0``, a cylinder upright on either disk, every rim point equally deep) ``u`` is the
  geom's x axis. The depth of every point is continuous; the points themselves move
  continuously except through that upright pose, where each disk's square of points turns about
  the axis with equal depths (elastic force and moment unchanged). A mesh geom: the vertices of
  its convex hull (``Geoms.vertices``, what MuJoCo collides of a mesh) with ``r = 0``; of a
  hull with more than :data:`MESH_GROUND_POINTS` (8) vertices, the 8 deepest along ``-n``
  (``lax.top_k`` at each evaluation; MuJoCo keeps up to 4 contacts of a mesh on a plane). An
  ellipsoid (semi-axes ``A``): its point lowest along ``n``, ``c - R A^2 m / sqrt(m^T A^2 m)``
  with ``m = R^T n``, with ``r = 0`` (exact). Planes are not collided with the ground. For a
  point ``c`` of radius ``r`` the signed distance of the shape to the ground is
  ``phi = n . c - h - r`` and the penetration
  ``d = max(0, margin - phi)``, with ``margin`` the contact margin (MuJoCo's: the geom's
  ``Geoms.margin`` plus the ground plane's, or an explicit pair's own ``Geoms.pair_margin``;
  default 0), so a contact acts from that distance on, as MuJoCo's does; the force acts at the
  witness point on the ground surface, ``p = c - (r - max(0, -phi)) n`` (the shape's deepest
  point moved back onto the plane), with the velocity ``v`` of the body's material point there.
"""

from __future__ import annotations

from typing import cast

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from .. import geometry
from ..algorithms.common import full_precision
from ..collision import (
    HULL_POINTS,
    _deepest,
    beyond_ends,
    cylinder_rims,
    dot,
    ellipsoid_support,
    golden_minimum,
    sphere_box,
    sphere_cylinder,
    sphere_ellipsoid,
    sphere_hull,
    take,
    unit,
)
from ..model import Model
from ..spatial import mv
from .frames import Frames, _frames, geom_poses, point_velocity
from .heightfield import (
    FIELD_CONTACTS,
    FIELD_SUPPORT_STEPS,
    FIELD_VERTICES,
    OUTSIDE,
    HeightField,
    field_distance,
    grid_vertices,
    window_normals,
    window_of,
)
from .laws import force_law
from .params import ContactParams, Ground
from .rules import collidable, contact_friction, contact_margin


class ContactPoints(eqx.Module):
    """The candidate ground contact points of a model at one state (``m`` points).

    body, geom: tuples of ``m`` ints (static); centre ``(m, 3)`` world
    position of the point (sphere centre, capsule end, box corner, cylinder rim point); radius
    ``(m,)``; depth ``(m,)`` the penetration ``d = max(0, margin - phi) >= 0`` (``phi`` the
    signed distance to the ground); point ``(m, 3)`` witness on the ground surface (below the
    shape's deepest point where it penetrates, else that point); velocity ``(m, 3)`` world
    velocity of the body's material point at ``point``; normal ``(m, 3)`` the ground's unit
    normal at each point (the plane's; a :class:`~jaxdyn.contact.HeightField`'s, per point);
    distance ``(m,)`` the signed distance ``phi`` of the shape to the ground; mu ``(m,)`` the
    sliding friction: the
    larger of the geom's and the ground's (the higher-priority one's where the priorities
    differ), or that of an explicit pair of the geom and the ground's plane; margin ``(m,)`` the
    contact margin (the geom's ``Geoms.margin`` plus the ground plane's, or an explicit pair's
    own ``Geoms.pair_margin``).
    """

    centre: Float[Array, "m 3"]
    radius: Float[Array, " m"]
    depth: Float[Array, " m"]
    point: Float[Array, "m 3"]
    velocity: Float[Array, "m 3"]
    mu: Float[Array, " m"]
    margin: Float[Array, " m"]
    normal: Float[Array, "m 3"]
    distance: Float[Array, " m"]
    body: tuple[int, ...] = eqx.field(static=True)
    geom: tuple[int, ...] = eqx.field(static=True)


def _point_table(geoms: geometry.Geoms):
    """Static description of every fixed contact point (sphere, capsule, box): geom index, the
    (3, 3) matrix ``A`` with ``offset = A @ size`` (the point in the geom frame) and the vector
    ``a`` with ``radius = a . size``."""
    gi, A, a = [], [], []
    e0 = np.array([1.0, 0.0, 0.0])
    for g, t in enumerate(geoms.type):
        if not collidable(geoms, g):
            continue
        if t == geometry.SPHERE:
            gi.append(g)
            A.append(np.zeros((3, 3)))
            a.append(e0)
        elif t == geometry.CAPSULE:
            for s in (-1.0, 1.0):
                M = np.zeros((3, 3))
                M[2, 1] = s  # z offset = +- half-length (size[1])
                gi.append(g)
                A.append(M)
                a.append(e0)
        elif t == geometry.BOX:
            for sx in (-1.0, 1.0):
                for sy in (-1.0, 1.0):
                    for sz in (-1.0, 1.0):
                        gi.append(g)
                        A.append(np.diag([sx, sy, sz]))
                        a.append(np.zeros(3))
    if not gi:
        return np.zeros(0, np.int64), np.zeros((0, 3, 3)), np.zeros((0, 3))
    return np.array(gi, np.int64), np.stack(A), np.stack(a)


def _cylinders(geoms: geometry.Geoms):
    return np.array([g for g, t in enumerate(geoms.type) if t == geometry.CYLINDER and collidable(geoms, g)], np.int64)


# a mesh geom with more convex-hull vertices than this touches the ground with its this many
# deepest ones (MuJoCo keeps up to 4 contacts of a mesh on a plane); as many as it has against
# another shape (collision.HULL_POINTS)
MESH_GROUND_POINTS = HULL_POINTS


def padded_rows(owner, ids):
    """Static ``(P, W)`` tables of the rows of ``owner`` (a geom index per row: ``vertex_geom``,
    ``face_geom``, ``edge_geom``) that belong to each geom of ``ids``, each padded with its first
    row to the longest, and where they are valid (not padding)."""
    owner = np.asarray(owner, np.int64)
    rows = [np.flatnonzero(owner == i) for i in ids]
    width = max((len(r) for r in rows), default=0)
    idx = np.array([np.concatenate([r, np.full(width - len(r), r[0])]) for r in rows], np.int64)
    valid = np.array([np.arange(width) < len(r) for r in rows], bool)
    return idx.reshape(len(rows), width), valid.reshape(len(rows), width)


def _mesh_rows(geoms: geometry.Geoms):
    """The mesh geoms that collide with the ground, split by size: the rows of
    ``geoms.vertices`` of those with at most :data:`MESH_GROUND_POINTS` vertices (all of them
    are contact points), and for the larger ones their geom indices and a ``(G, V)`` table of
    their rows (each padded with its first row to the longest; the padding is never among the
    deepest ``MESH_GROUND_POINTS``, as every such geom has more vertices than that)."""
    counts: dict[int, int] = {}
    for g in geoms.vertex_geom:
        if collidable(geoms, g):
            counts[g] = counts.get(g, 0) + 1
    small = {g for g, n in counts.items() if n <= MESH_GROUND_POINTS}
    large = np.array([g for g, n in counts.items() if n > MESH_GROUND_POINTS], np.int64)
    table, valid = padded_rows(geoms.vertex_geom, large)
    return np.array([k for k, g in enumerate(geoms.vertex_geom) if g in small], np.int64), large, table, valid


def _ellipsoids(geoms: geometry.Geoms):
    return np.array([g for g, t in enumerate(geoms.type) if t == geometry.ELLIPSOID and collidable(geoms, g)], np.int64)


def n_ground_points(geoms: geometry.Geoms, ground=None) -> int:
    """The number of ground contact rows: one per point, :data:`FIELD_CONTACTS` per sphere and
    capsule end on a :class:`~jaxdyn.contact.HeightField`."""
    small, large, _, _ = _mesh_rows(geoms)
    meshes = len(small) + MESH_GROUND_POINTS * len(large)
    _, _, a = _point_table(geoms)
    extra = 0
    if isinstance(ground, HeightField):
        extra = (FIELD_CONTACTS - 1) * int(np.sum(np.any(a != 0, axis=1))) + 2 * FIELD_VERTICES * len(_solids(geoms))
    return len(a) + extra + 8 * len(_cylinders(geoms)) + meshes + len(_ellipsoids(geoms))


def has_ground_points(geoms: geometry.Geoms) -> bool:
    return n_ground_points(geoms) > 0


@full_precision
def contact_points(model: Model, q, qd, ground: Ground | HeightField | None = None) -> ContactPoints:
    """Candidate ground contact points, penetrations, witness points and velocities (module
    docstring): the sphere, capsule and box points in geom order, then the cylinders' points,
    the ellipsoids' lowest points, then the mesh geoms' convex-hull vertices (of a mesh with
    more than :data:`MESH_GROUND_POINTS`, that many, the deepest first). ``ground``: a
    :class:`Ground` (default ``z = 0``) or a :class:`~jaxdyn.contact.HeightField`."""
    q, qd = jnp.asarray(q, model.dtype), jnp.asarray(qd, model.dtype)
    return _contact_points(model, _frames(model, q, qd), Ground() if ground is None else ground)


def _contact_points(model: Model, F: Frames, ground: Ground | HeightField) -> ContactPoints:
    g = model.geoms
    assert g is not None  # a model with geoms (make_model gives every model its Geoms)
    dt = model.dtype
    field = ground if isinstance(ground, HeightField) else None
    Rg, cg = geom_poses(model, F)
    if field is None:
        plane_ground = cast(Ground, ground)  # not a height field: a plane
        n = unit(jnp.asarray(plane_ground.normal, dt))
        h = jnp.asarray(plane_ground.height, dt)
        normal_at = lambda x: jnp.broadcast_to(n, x.shape)  # noqa: E731
        signed = lambda x: x @ n - h  # noqa: E731
    else:  # a height field: the normal of the triangle under a point (H2), its signed distance
        normal_at = lambda x: field_distance(field, x, exact=False)[1][:, 0]  # noqa: E731
        signed = lambda x: field_distance(field, x.reshape(-1, 3), exact=False)[0].reshape(x.shape[:-1])  # noqa: E731
    gi, A, a = _point_table(g)
    ci = _cylinders(g)
    off = mv(jnp.asarray(A, dt), g.size[gi])
    centres = [cg[gi] + mv(Rg[gi], off)]
    radii = [dot(jnp.asarray(a, dt), g.size[gi])]
    geoms = [gi]
    rounded = np.any(a != 0, axis=1)  # points with a radius (spheres, capsule ends)
    if len(ci):  # on a field, along the normal of the triangle under the deepest rim point (below)
        nc = normal_at(cg[ci])
        for _ in range(FIELD_SUPPORT_STEPS if field is not None else 0):
            rims = cylinder_rims(Rg[ci], cg[ci], g.size[ci], nc)  # (C, 8, 3); 0 and 4: the rims' deepest
            low = jnp.where((signed(rims[:, 0]) <= signed(rims[:, 4]))[:, None], rims[:, 0], rims[:, 4])
            nc = normal_at(low)
        centres.append(cylinder_rims(Rg[ci], cg[ci], g.size[ci], nc).reshape(-1, 3))
        radii.append(jnp.zeros(8 * len(ci), dt))
        geoms.append(np.repeat(ci, 8))
    ei = _ellipsoids(g)
    if len(ei):  # ellipsoids: the point lowest along the normal (the support point along -n), radius 0
        if field is None:
            centres.append(cg[ei] - ellipsoid_support(Rg[ei], g.size[ei], normal_at(cg[ei]))[1])
        else:  # on a field: of its lowest points along the normals of the triangles it spans, the deepest
            nf = window_normals(field, cg[ei], max(1, window_of(field, _concrete_max(g.size[ei]))))
            low = cg[ei][:, None] - ellipsoid_support(Rg[ei][:, None], g.size[ei][:, None], nf)[1]  # (E, T, 3)
            depth = field_distance(field, low.reshape(-1, 3))[0].reshape(low.shape[:2])
            centres.append(take(low, jnp.argmin(depth, 1)[:, None])[:, 0])
        radii.append(jnp.zeros(len(ei), dt))
        geoms.append(ei)
    vi, li, table, valid = _mesh_rows(g)
    if len(vi):  # small mesh geoms: the vertices of their convex hulls, radius 0
        mi = np.asarray(g.vertex_geom, np.int64)[vi]
        centres.append(cg[mi] + mv(Rg[mi], g.vertices[vi]))
        radii.append(jnp.zeros(len(vi), dt))
        geoms.append(mi)
    if len(li):  # larger ones: their MESH_GROUND_POINTS vertices deepest along -n
        x = cg[li][:, None] + mv(Rg[li][:, None], g.vertices[table])  # (G, V, 3)
        k, _ = _deepest(signed(x), jnp.asarray(valid))  # the lowest along n, the deepest in a field
        centres.append(take(x, k).reshape(-1, 3))
        radii.append(jnp.zeros(k.size, dt))
        geoms.append(np.repeat(li, MESH_GROUND_POINTS))
    centre, radius = jnp.concatenate(centres), jnp.concatenate(radii)
    geom = np.concatenate(geoms)
    if field is None:
        s, normal = signed(centre), normal_at(centre)
    else:  # each sphere and capsule end as FIELD_CONTACTS rows
        rounded = np.concatenate([rounded, np.zeros(len(geom) - len(gi), bool)])
        rep = np.repeat(np.arange(len(geom)), np.where(rounded, FIELD_CONTACTS, 1))
        s, normal = _field_points(g, field, centre, geom, rounded)
        centre, radius, geom = centre[rep], radius[rep], geom[rep]
    body = np.asarray(g.body, np.int64)[geom]
    plane = np.full(len(geom), ground.geom)
    margin = contact_margin(g, geom, plane).astype(dt)
    phi = s - radius
    if field is not None:  # the field's vertices deepest in each box, cylinder, ellipsoid and mesh
        fv = _field_vertex_rows(g, field, Rg, cg)
        if fv is not None:
            centre, phi, normal = (jnp.concatenate([x, y]) for x, y in zip((centre, phi, normal), fv[:3]))
            radius = jnp.concatenate([radius, jnp.zeros(len(fv[3]), dt)])
            geom = np.concatenate([geom, fv[3]])
            body = np.asarray(g.body, np.int64)[geom]
            plane = np.full(len(geom), ground.geom)
            margin = contact_margin(g, geom, plane).astype(dt)
    point = centre - (radius - jnp.maximum(-phi, 0.0))[:, None] * normal
    vel = point_velocity(F, body, point)
    mu = contact_friction(g, geom, plane, g.friction[geom, 0], jnp.asarray(ground.friction, dt))
    depth = jnp.maximum(margin - phi, 0.0)
    return ContactPoints(
        centre, radius, depth, point, vel, mu, margin, normal, phi, tuple(map(int, body)), tuple(map(int, geom))
    )


def _concrete_max(x):
    """The largest entry of ``x`` where it is not traced, else ``None``."""
    try:
        return float(np.max(np.asarray(x)))
    except Exception:
        return None


def _solids(g: geometry.Geoms):
    """The collidable boxes, cylinders, ellipsoids and meshes with a hull of volume: the geoms
    a height field's vertices poke into (static)."""
    kinds = (geometry.BOX, geometry.CYLINDER, geometry.ELLIPSOID)
    solid = set(g.face_geom)
    return np.array(
        [i for i, t in enumerate(g.type) if (t in kinds or (t == geometry.MESH and i in solid)) and collidable(g, i)],
        np.int64,
    )


def _solid_sdf(g: geometry.Geoms, kind: int, G, Rg, cg, derivatives=True):
    """The signed distance and outward unit normal of the solids ``G`` (static indices, all of
    type ``kind``) at points ``(len(G), k, 3)``, as a function (exact: :mod:`jaxdyn.collision`)."""
    zero = jnp.zeros((), cg.dtype)
    c, R, size = cg[G][:, None], Rg[G][:, None], g.size[G][:, None]
    if kind == geometry.MESH:
        fi, _ = padded_rows(g.face_geom, G)
        T = cg[G][:, None, None] + mv(Rg[G][:, None, None], g.faces[fi])  # (P, F, 3, 3)
    if not derivatives:
        c, R, size = (jax.lax.stop_gradient(x) for x in (c, R, size))
        if kind == geometry.MESH:
            T = jax.lax.stop_gradient(T)
    if kind == geometry.BOX:
        return lambda x: sphere_box(x, zero, c, R, size)[:2]
    if kind == geometry.CYLINDER:
        return lambda x: sphere_cylinder(x, zero, c, R, size)[:2]
    if kind == geometry.ELLIPSOID:
        return lambda x: sphere_ellipsoid(x, zero, c, R, size)[:2]
    return lambda x: sphere_hull(x, zero, T)[:2]


def _field_vertex_rows(g: geometry.Geoms, field: HeightField, Rg, cg):
    """The height field's grid vertices and edges deepest in each solid of :func:`_solids`
    (among those of the cells its bounding sphere reaches): the :data:`FIELD_VERTICES`
    vertices ``v`` of smallest signed distance ``phi`` to the shape (exact), and the
    :data:`FIELD_VERTICES` edges whose deepest point (golden section on the shape's convex
    signed distance along the edge, differentiated as the minimum) reaches deepest beyond its
    two vertices, (B1) ``phi_e - min(0, phi_v0, phi_v1)``. Each is a contact row with the
    shape's outward normal ``m`` at its surface point nearest to the field point ``v`` reversed,
    ``n = -m`` (the shape leaves the field along ``-m``), and the body point ``v + phi n`` (on
    the shape's surface), so the witness of :func:`_contact_points` is ``v``. Returns
    ``(centre, phi, n, geom)`` or ``None``."""
    si = _solids(g)
    if not len(si):
        return None
    dt = cg.dtype
    try:  # the window from the bounding radii where the sizes are concrete (else 1 cell)
        from .pairs import bounding_radii

        reach = float(np.max(np.asarray(bounding_radii(g))[si]))
    except Exception:
        reach = None
    w = max(1, window_of(field, reach))
    V, valid = grid_vertices(field, cg[si], w)  # (G, NV, 3), NV = (2 w + 2)^2
    side = 2 * w + 2
    idx = np.arange(side * side).reshape(side, side)
    e0 = np.concatenate([idx[:, :-1].ravel(), idx[:-1, :].ravel(), idx[:-1, :-1].ravel()])  # along x, y, diagonal
    e1 = np.concatenate([idx[:, 1:].ravel(), idx[1:, :].ravel(), idx[1:, 1:].ravel()])
    P0, D = V[:, e0], V[:, e1] - V[:, e0]
    e_valid = valid[:, e0] & valid[:, e1]
    t = np.asarray(g.type, np.int64)[si]
    phi_v = jnp.full(V.shape[:2], OUTSIDE, dt)
    m_v = jnp.zeros(V.shape, dt)
    phi_e = jnp.full(P0.shape[:2], OUTSIDE, dt)
    m_e = jnp.zeros(P0.shape, dt)
    x_e = jnp.zeros(P0.shape, dt)
    for kind in (geometry.BOX, geometry.CYLINDER, geometry.ELLIPSOID, geometry.MESH):
        rows = np.flatnonzero(t == kind)
        if not len(rows):
            continue
        sdf = _solid_sdf(g, kind, si[rows], Rg, cg)
        sdf0 = _solid_sdf(g, kind, si[rows], Rg, cg, derivatives=False)
        d, n = sdf(V[rows])
        phi_v, m_v = phi_v.at[rows].set(d), m_v.at[rows].set(n)
        p0, dd = jax.lax.stop_gradient(P0[rows]), jax.lax.stop_gradient(D[rows])
        lo = jnp.zeros(p0.shape[:-1], dt)
        ts = golden_minimum(lambda s: sdf0(p0 + s[..., None] * dd)[0], lo, lo + 1.0)
        x = P0[rows] + ts[..., None] * D[rows]
        d, n = sdf(x)
        phi_e, m_e, x_e = phi_e.at[rows].set(d), m_e.at[rows].set(n), x_e.at[rows].set(x)
    phi_e = beyond_ends(phi_e, phi_v[:, e0], phi_v[:, e1])
    out = []
    for phi, m, x, ok in ((phi_v, m_v, V, valid), (phi_e, m_e, x_e, e_valid)):
        k, kept = _deepest(phi, ok)
        k, kept = k[:, :FIELD_VERTICES], kept[:, :FIELD_VERTICES]
        ph = jnp.where(kept, take(phi, k), OUTSIDE)
        n = -take(m, k)
        out.append(((take(x, k) + ph[..., None] * n).reshape(-1, 3), ph.reshape(-1), n.reshape(-1, 3)))
    geom = np.repeat(si, 2 * FIELD_VERTICES)
    cat = lambda a, b: jnp.concatenate(
        [a.reshape(len(si), FIELD_VERTICES, -1), b.reshape(len(si), FIELD_VERTICES, -1)], 1
    )  # noqa: E731
    centre, phi, n = (cat(a, b) for a, b in zip(out[0], out[1]))
    return centre.reshape(-1, 3), phi.reshape(-1), n.reshape(-1, 3), geom


def _field_points(g: geometry.Geoms, field: HeightField, centre, geom, rounded):
    """Signed distances and normals of the points ``centre`` (of the geoms ``geom``) to the
    height field, in the rows of :func:`_contact_points`: (H2) for the points of radius 0, and
    the :data:`FIELD_CONTACTS` nearest features of (H3) for each ``rounded`` one (static mask;
    spheres and capsule ends), searched over the cells that their radius and the largest
    margin reach."""
    s, n = field_distance(field, centre)
    s, n = s[:, 0], n[:, 0]
    idx = np.flatnonzero(rounded)
    if not len(idx):
        return s, n
    try:  # the model's sizes where they are not traced (window_of falls back to 1)
        margins = np.concatenate([2 * np.asarray(g.margin), np.asarray(g.pair_margin), [0.0]])
        reach = np.asarray(g.size)[geom[idx], 0].max() + max(0.0, margins.max())
    except Exception:
        reach = None
    sr, nr = field_distance(field, centre[idx], True, max(1, window_of(field, reach)), FIELD_CONTACTS)
    rows = np.where(rounded, FIELD_CONTACTS, 1)
    start = np.concatenate([[0], np.cumsum(rows)[:-1]])
    m = int(rows.sum())
    S = jnp.zeros(m, s.dtype).at[start].set(s)
    N = jnp.zeros((m, 3), n.dtype).at[start].set(n)
    at = (start[idx][:, None] + np.arange(FIELD_CONTACTS)).reshape(-1)
    return S.at[at].set(sr.reshape(-1)), N.at[at].set(nr.reshape(-1, 3))


@full_precision
def contact_forces(
    cp: ContactPoints, ground: Ground | HeightField, params: ContactParams, dtype=None, elongation=None, dt=0.0
) -> Float[Array, "m 3"]:
    """World-frame force on each ground contact point: Hunt-Crossley normal force plus
    regularised Coulomb friction, or, given the bristle ``elongation`` ``(m, 3)``, the
    stick-capable friction (S1)-(S3) with step ``dt`` (:mod:`jaxdyn.contact.laws`)."""
    dtype = dtype or cp.depth.dtype
    return force_law(cp.depth, cp.normal.astype(dtype), cp.velocity, cp.mu, params, dtype, elongation, dt)[0]
