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

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from .. import geometry
from ..algorithms.common import full_precision
from ..collision import HULL_POINTS, _cylinder_rims, _deepest, _dot, _ellipsoid_support, _take, _unit
from ..model import Model
from ..spatial import mv
from .frames import _Frames, _frames, _geom_poses, _point_velocity
from .laws import _force_law
from .params import ContactParams, Ground
from .rules import _collidable, _contact_friction, _contact_margin


class ContactPoints(eqx.Module):
    """The candidate ground contact points of a model at one state (``m`` points).

    body, geom: tuples of ``m`` ints (static); centre ``(m, 3)`` world
    position of the point (sphere centre, capsule end, box corner, cylinder rim point); radius
    ``(m,)``; depth ``(m,)`` the penetration ``d = max(0, margin - phi) >= 0`` (``phi`` the
    signed distance to the ground); point ``(m, 3)`` witness on the ground surface (below the
    shape's deepest point where it penetrates, else that point); velocity ``(m, 3)`` world
    velocity of the body's material point at ``point``; mu ``(m,)`` the sliding friction: the
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
    body: tuple[int, ...] = eqx.field(static=True)
    geom: tuple[int, ...] = eqx.field(static=True)


def _point_table(geoms: geometry.Geoms):
    """Static description of every fixed contact point (sphere, capsule, box): geom index, the
    (3, 3) matrix ``A`` with ``offset = A @ size`` (the point in the geom frame) and the vector
    ``a`` with ``radius = a . size``."""
    gi, A, a = [], [], []
    e0 = np.array([1.0, 0.0, 0.0])
    for g, t in enumerate(geoms.type):
        if not _collidable(geoms, g):
            continue
        if t == geometry.SPHERE:
            gi.append(g), A.append(np.zeros((3, 3))), a.append(e0)
        elif t == geometry.CAPSULE:
            for s in (-1.0, 1.0):
                M = np.zeros((3, 3))
                M[2, 1] = s  # z offset = +- half-length (size[1])
                gi.append(g), A.append(M), a.append(e0)
        elif t == geometry.BOX:
            for sx in (-1.0, 1.0):
                for sy in (-1.0, 1.0):
                    for sz in (-1.0, 1.0):
                        gi.append(g), A.append(np.diag([sx, sy, sz])), a.append(np.zeros(3))
    if not gi:
        return np.zeros(0, np.int64), np.zeros((0, 3, 3)), np.zeros((0, 3))
    return np.array(gi, np.int64), np.stack(A), np.stack(a)


def _cylinders(geoms: geometry.Geoms):
    return np.array([g for g, t in enumerate(geoms.type) if t == geometry.CYLINDER and _collidable(geoms, g)], np.int64)


# a mesh geom with more convex-hull vertices than this touches the ground with its this many
# deepest ones (MuJoCo keeps up to 4 contacts of a mesh on a plane); as many as it has against
# another shape (collision.HULL_POINTS)
MESH_GROUND_POINTS = HULL_POINTS


def _padded_rows(owner, ids):
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
        if _collidable(geoms, g):
            counts[g] = counts.get(g, 0) + 1
    small = {g for g, n in counts.items() if n <= MESH_GROUND_POINTS}
    large = np.array([g for g, n in counts.items() if n > MESH_GROUND_POINTS], np.int64)
    table, valid = _padded_rows(geoms.vertex_geom, large)
    return np.array([k for k, g in enumerate(geoms.vertex_geom) if g in small], np.int64), large, table, valid


def _ellipsoids(geoms: geometry.Geoms):
    return np.array(
        [g for g, t in enumerate(geoms.type) if t == geometry.ELLIPSOID and _collidable(geoms, g)], np.int64
    )


def _n_ground_points(geoms: geometry.Geoms) -> int:
    small, large, _, _ = _mesh_rows(geoms)
    meshes = len(small) + MESH_GROUND_POINTS * len(large)
    return len(_point_table(geoms)[0]) + 8 * len(_cylinders(geoms)) + meshes + len(_ellipsoids(geoms))


def _has_ground_points(geoms: geometry.Geoms) -> bool:
    return _n_ground_points(geoms) > 0


@full_precision
def contact_points(model: Model, q, qd, ground: Ground | None = None) -> ContactPoints:
    """Candidate ground contact points, penetrations, witness points and velocities (module
    docstring): the sphere, capsule and box points in geom order, then the cylinders' points,
    the ellipsoids' lowest points, then the mesh geoms' convex-hull vertices (of a mesh with
    more than :data:`MESH_GROUND_POINTS`, that many, the deepest first)."""
    q, qd = jnp.asarray(q, model.dtype), jnp.asarray(qd, model.dtype)
    return _contact_points(model, _frames(model, q, qd), Ground() if ground is None else ground)


def _contact_points(model: Model, F: _Frames, ground: Ground) -> ContactPoints:
    g = model.geoms
    dt = model.dtype
    n = _unit(jnp.asarray(ground.normal, dt))
    h = jnp.asarray(ground.height, dt)
    Rg, cg = _geom_poses(model, F)
    gi, A, a = _point_table(g)
    ci = _cylinders(g)
    off = mv(jnp.asarray(A, dt), g.size[gi])
    centre = [cg[gi] + mv(Rg[gi], off)]
    radius = [_dot(jnp.asarray(a, dt), g.size[gi])]
    geom = [gi]
    if len(ci):
        centre.append(_cylinder_rims(Rg[ci], cg[ci], g.size[ci], n).reshape(-1, 3))
        radius.append(jnp.zeros(8 * len(ci), dt))
        geom.append(np.repeat(ci, 8))
    ei = _ellipsoids(g)
    if len(ei):  # ellipsoids: the point lowest along the normal (the support point along -n), radius 0
        centre.append(cg[ei] - _ellipsoid_support(Rg[ei], g.size[ei], jnp.broadcast_to(n, cg[ei].shape))[1])
        radius.append(jnp.zeros(len(ei), dt))
        geom.append(ei)
    vi, li, table, valid = _mesh_rows(g)
    if len(vi):  # small mesh geoms: the vertices of their convex hulls, radius 0
        mi = np.asarray(g.vertex_geom, np.int64)[vi]
        centre.append(cg[mi] + mv(Rg[mi], g.vertices[vi]))
        radius.append(jnp.zeros(len(vi), dt))
        geom.append(mi)
    if len(li):  # larger ones: their MESH_GROUND_POINTS vertices deepest along -n
        x = cg[li][:, None] + mv(Rg[li][:, None], g.vertices[table])  # (G, V, 3)
        k, _ = _deepest(x @ n, jnp.asarray(valid))  # the lowest along n
        centre.append(_take(x, k).reshape(-1, 3))
        radius.append(jnp.zeros(k.size, dt))
        geom.append(np.repeat(li, MESH_GROUND_POINTS))
    centre, radius = jnp.concatenate(centre), jnp.concatenate(radius)
    geom = np.concatenate(geom)
    body = np.asarray(g.body, np.int64)[geom]
    phi = centre @ n - h - radius
    plane = np.full(len(geom), ground.geom)
    margin = _contact_margin(g, geom, plane).astype(dt)
    point = centre - (radius - jnp.maximum(-phi, 0.0))[:, None] * n
    vel = _point_velocity(F, body, point)
    mu = _contact_friction(g, geom, plane, g.friction[geom, 0], jnp.asarray(ground.friction, dt))
    depth = jnp.maximum(margin - phi, 0.0)
    return ContactPoints(centre, radius, depth, point, vel, mu, margin, tuple(map(int, body)), tuple(map(int, geom)))


@full_precision
def contact_forces(
    cp: ContactPoints, ground: Ground, params: ContactParams, dtype=None, elongation=None, dt=0.0
) -> Float[Array, "m 3"]:
    """World-frame force on each ground contact point: Hunt-Crossley normal force plus
    regularised Coulomb friction, or, given the bristle ``elongation`` ``(m, 3)``, the
    stick-capable friction (S1)-(S3) with step ``dt`` (:mod:`jaxdyn.contact.laws`)."""
    dtype = dtype or cp.depth.dtype
    n = _unit(jnp.asarray(ground.normal, dtype))
    return _force_law(cp.depth, n, cp.velocity, cp.mu, params, dtype, elongation, dt)[0]
