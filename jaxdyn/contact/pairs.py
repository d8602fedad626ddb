"""Contact between the shapes on a model's bodies: which pairs collide, their contacts, and
the broad phase.

* Shape pairs (:func:`collision_pairs`): sphere-sphere, sphere-capsule, capsule-capsule,
  sphere-box, capsule-box, box-box, sphere-cylinder and capsule-cylinder (the cylinder's exact
  signed distance; a capsule's deepest point by golden-section search on it, convex, with the
  three contacts of capsule-box: :func:`jaxdyn.collision.segment_cylinder_contacts`),
  cylinder-box (the box's corners and edges against the cylinder, the cylinder's rims against
  the box: :func:`jaxdyn.collision.cylinder_box_contacts`), cylinder-cylinder
  (:func:`jaxdyn.collision.cylinder_cylinder_contacts`), and a mesh (its convex hull,
  ``Geoms.faces``) against a sphere, a capsule, a box or a cylinder (the hull's exact signed
  distance; its 8 vertices and edges deepest in the other shape: :func:`jaxdyn.collision.
  box_hull_contacts`, :func:`jaxdyn.collision.cylinder_hull_contacts`), two meshes (the 8
  vertices of each hull deepest in the other and the first hull's 8 edges reaching deepest into
  the second: :func:`jaxdyn.collision.hull_hull_contacts`), and an
  ellipsoid against a sphere or a capsule (its exact signed distance, Newton's method on the
  closest point's Lagrange multiplier: :func:`jaxdyn.collision.ellipsoid_closest`; the capsule
  with the three contacts of capsule-box), a box (the box's corners and edges against it, its
  support points along the faces' inward normals against the box:
  :func:`jaxdyn.collision.ellipsoid_box_contacts`), a cylinder (the cylinder's rims and side
  line against it, its support points along the disks' normals against the cylinder:
  :func:`jaxdyn.collision.ellipsoid_cylinder_contacts`), a mesh (the hull's vertices and edges
  against it, its support point deepest through the hull's faces against the hull:
  :func:`jaxdyn.collision.ellipsoid_hull_contacts`) or another ellipsoid (the maximum over
  directions of the support functions' separation, by Newton's method on the sphere:
  :func:`jaxdyn.collision.ellipsoid_ellipsoid`), between
  geoms of different bodies (geoms on the world body included), selected once per model by
  MuJoCo's rules (Todorov12; MuJoCo's documentation, "Collision detection"):
  ``contype1 & conaffinity2 or contype2 & conaffinity1``, never two geoms of one body, never a
  body and its parent body unless the parent is the world, never two bodies listed in
  ``exclude`` nor two geoms in ``model.geoms.exclude`` (MJCF ``<contact><exclude>``); and
  always the explicit pairs ``model.geoms.pairs`` (MJCF ``<contact><pair>``). For each pair:
  the signed distance ``phi`` between the two surfaces, the unit normal ``n`` from the first
  geom to the second, and the witness point ``p`` midway between the two surfaces' closest
  points (MuJoCo's contact position). Sphere-sphere:
  ``phi = |c2 - c1| - r1 - r2``, ``n`` along the centre line; a capsule is the sphere swept
  along its segment, so sphere-capsule and capsule-capsule are sphere-sphere between the
  closest points of the segments (Ericson05 5.1.2, 5.1.9; for parallel segments the midpoint of
  their overlap); sphere-box uses the closest point of the box to the centre, or, for a centre
  inside, the nearest face (``phi = -(h_i - |l_i|)_min - r``); capsule-box is sphere-box at
  the point of the capsule's segment deepest in the box, the minimum of the box's signed
  distance along the segment (convex; found exactly among 29 candidates: the ends, the closest
  points to the 12 edges, the crossings of two face planes' distances; for a minimum along an
  interval, a segment parallel to a face, the interval's midpoint), so ``phi`` is the smallest
  sphere-box distance over the segment, also where the segment reaches into the box
  (:func:`pair_distances`). A capsule-capsule pair acts through three contacts: at the two ends
  of the stretch of the first segment that the second runs alongside (the second's ends
  projected on the first, clamped), the first capsule's sphere there against the second
  capsule, and the closest points counted by (B1) beyond those two
  (:func:`jaxdyn.collision.segment_segment_contacts`), so a capsule lying along another rests
  on the two ends of their overlap, and crossing capsules on the crossing. A capsule-box pair
  acts through three contacts, sphere-box at its
  two ends and at that deepest point, the last counted beyond the deeper end's penetration
  (``phi_i = phi - min(0, phi_end0, phi_end1)``, (B1) of
  :func:`jaxdyn.collision.segment_box_contacts`), so a capsule lying on a face rests on its
  two ends; a box-box pair through 40: the 8 corners of each box against the other (sphere-box
  of radius 0) and the (B1) interior contact of each box's 12 edges against the other; a
  cylinder-box pair through 32: the box's 8 corners and the (B1) interior contacts of its 12
  edges against the cylinder, and the cylinder's rims against the box: on each rim its point
  deepest in the box (searched over the rim's angle), counted beyond 4 points placed as on the
  ground for the box's normal there, so a cylinder standing on a face rests on 4 rim points and
  one lying on its side on the two ends of its lowest line, as on the ground; a
  cylinder-cylinder pair through 25: the rims of each against the other, as for the box, and
  the first cylinder's side line facing the second (B1). A cylinder that pierces a box or
  another cylinder with neither rim, corner nor edge inside the other (a peg through a plate)
  has no contact. Each
  contact is a row of :class:`PairContacts` (``CollisionPairs.rows`` per pair). All pairs
  of one kind are evaluated together in one batched expression (geom indices gathered from a
  static table); with the broad phase ``Contact(max_pairs=K)``, only the ``K`` pairs of each
  kind whose bounding spheres are nearest (:func:`pairs_in_reach`). The same force law acts on the relative velocity ``v = v_2(p) - v_1(p)`` of
  the two bodies' material points at ``p``: ``f`` on the second body, ``-f`` on the first, with
  ``mu = max(mu_1, mu_2)`` (MuJoCo's combination; the higher-``priority`` geom's where the
  geoms' ``Geoms.priority`` differ), or an explicit pair's own friction
  (``Geoms.pair_friction``, MJCF ``<pair friction>``), and the depth ``max(0, margin -
  phi)`` with the sum of the geoms' margins (an explicit pair's own), as on the ground.
"""

from __future__ import annotations

import functools
import warnings
from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int

from .. import geometry, planner
from ..batching import batch_any
from ..collision import (
    box_box_contacts,
    box_hull_contacts,
    cylinder_box_contacts,
    cylinder_cylinder_contacts,
    cylinder_hull_contacts,
    dot,
    ellipsoid_box_contacts,
    ellipsoid_cylinder_contacts,
    ellipsoid_ellipsoid,
    ellipsoid_hull_contacts,
    hull_hull_contacts,
    segment_box_contacts,
    segment_cylinder_contacts,
    segment_ellipsoid_contacts,
    segment_hull_contacts,
    segment_of,
    segment_point,
    segment_segment_contacts,
    sphere_box,
    sphere_cylinder,
    sphere_ellipsoid,
    sphere_hull,
    spheres,
)
from ..model import Model
from ..spatial import mv
from .frames import Frames, _frames, geom_poses, point_velocity
from .ground import padded_rows
from .laws import force_law
from .params import ContactParams
from .rules import angular_friction, contact_friction, contact_margin, geom_rules


class PairContacts(eqx.Module):
    """The contacts of the shape pairs of a model at one state (``m`` rows: one per pair of
    :func:`collision_pairs`, three per capsule-box pair and 40 per box-box pair, consecutive;
    ``CollisionPairs.rows``).

    geom1, geom2, body1, body2, pair: tuples of ``m`` ints (static; body ``-1`` is the world;
    ``pair`` the row's index into ``collision_pairs(model).pairs``);
    distance ``(m,)`` the contact's signed distance (negative: penetrating; for the pairs of
    one contact the distance between the surfaces, else module docstring); depth
    ``(m,)`` ``max(0, margin - distance)``; normal ``(m, 3)`` unit, from geom1 towards geom2; point
    ``(m, 3)`` witness, midway between the surfaces' closest points; velocity ``(m, 3)``
    ``v_2(p) - v_1(p)``, the relative world velocity of the two bodies' material points at the
    witness; mu ``(m,)`` the larger sliding friction of the two geoms (the higher-priority geom's
    where the priorities differ), or the explicit pair's own; margin ``(m,)`` the contact margin
    (the sum of the geoms', or the explicit pair's own).
    """

    distance: Float[Array, " m"]
    depth: Float[Array, " m"]
    normal: Float[Array, "m 3"]
    point: Float[Array, "m 3"]
    velocity: Float[Array, "m 3"]
    mu: Float[Array, " m"]
    margin: Float[Array, " m"]
    geom1: tuple[int, ...] = eqx.field(static=True)
    geom2: tuple[int, ...] = eqx.field(static=True)
    body1: tuple[int, ...] = eqx.field(static=True)
    body2: tuple[int, ...] = eqx.field(static=True)
    pair: tuple[int, ...] = eqx.field(static=True)


_PAIR_KINDS = (
    (geometry.SPHERE, geometry.SPHERE),
    (geometry.SPHERE, geometry.CAPSULE),
    (geometry.CAPSULE, geometry.CAPSULE),
    (geometry.SPHERE, geometry.BOX),
    (geometry.CAPSULE, geometry.BOX),
    (geometry.BOX, geometry.BOX),
    (geometry.SPHERE, geometry.CYLINDER),
    (geometry.CAPSULE, geometry.CYLINDER),
    (geometry.CYLINDER, geometry.CYLINDER),
    (geometry.CYLINDER, geometry.BOX),
    (geometry.SPHERE, geometry.MESH),
    (geometry.CAPSULE, geometry.MESH),
    (geometry.CYLINDER, geometry.MESH),
    (geometry.BOX, geometry.MESH),
    (geometry.MESH, geometry.MESH),
    (geometry.SPHERE, geometry.ELLIPSOID),
    (geometry.CAPSULE, geometry.ELLIPSOID),
    (geometry.ELLIPSOID, geometry.ELLIPSOID),
    (geometry.ELLIPSOID, geometry.BOX),
    (geometry.ELLIPSOID, geometry.CYLINDER),
    (geometry.ELLIPSOID, geometry.MESH),
)
# contacts per pair (rows of PairContacts), by kind: capsule-capsule, capsule-box and
# capsule-cylinder two end contacts and an interior one (collision.segment_segment_contacts,
# segment_box_contacts, segment_cylinder_contacts), box-box 8 + 8 corners and 12 + 12 edges
# (collision.box_box_contacts), cylinder-box 8 corners, 12 edges and 12 rim points
# (collision.cylinder_box_contacts), cylinder-cylinder 12 + 12 rim points and a side line
# (collision.cylinder_cylinder_contacts), capsule-mesh as capsule-box
# (collision.segment_hull_contacts), cylinder-mesh 12 rim points, 8 hull vertices and 8 edges
# (collision.cylinder_hull_contacts), box-mesh 8 corners, 12 edges and 8 hull vertices
# (collision.box_hull_contacts), mesh-mesh 8 + 8 hull vertices and 8 edges of the first
# (collision.hull_hull_contacts),
# ellipsoid-box 8 corners, 12 edges and 6 support points (collision.ellipsoid_box_contacts),
# ellipsoid-cylinder 12 rim points, 2 support points and a side line
# (collision.ellipsoid_cylinder_contacts), ellipsoid-mesh a support point, 8 hull vertices and 8
# edges (collision.ellipsoid_hull_contacts);
# one for the others
_PAIR_ROWS = {
    (geometry.CAPSULE, geometry.ELLIPSOID): 3,
    (geometry.CAPSULE, geometry.MESH): 3,
    (geometry.CYLINDER, geometry.MESH): 28,
    (geometry.BOX, geometry.MESH): 28,
    (geometry.MESH, geometry.MESH): 24,
    (geometry.CAPSULE, geometry.CYLINDER): 3,
    (geometry.CAPSULE, geometry.CAPSULE): 3,
    (geometry.CAPSULE, geometry.BOX): 3,
    (geometry.BOX, geometry.BOX): 40,
    (geometry.CYLINDER, geometry.BOX): 32,
    (geometry.CYLINDER, geometry.CYLINDER): 25,
    (geometry.ELLIPSOID, geometry.BOX): 26,
    (geometry.ELLIPSOID, geometry.CYLINDER): 15,
    (geometry.ELLIPSOID, geometry.MESH): 17,
}


# the narrow phase by the shapes' arguments: a sphere ``(c, r)`` or a capsule's segment ``(p, d,
# r)`` against a shape ``(c, R, size)`` (normals from the shape), two shapes ``(c, R, size)``
# (normals from the first)
_SPHERE_AGAINST = {
    geometry.BOX: sphere_box,
    geometry.CYLINDER: sphere_cylinder,
    geometry.ELLIPSOID: sphere_ellipsoid,
}
_SEGMENT_AGAINST = {
    geometry.BOX: segment_box_contacts,
    geometry.CYLINDER: segment_cylinder_contacts,
    geometry.ELLIPSOID: segment_ellipsoid_contacts,
}
_SOLID_PAIRS = {
    (geometry.BOX, geometry.BOX): box_box_contacts,
    (geometry.CYLINDER, geometry.CYLINDER): cylinder_cylinder_contacts,
    (geometry.CYLINDER, geometry.BOX): cylinder_box_contacts,
    (geometry.ELLIPSOID, geometry.BOX): ellipsoid_box_contacts,
    (geometry.ELLIPSOID, geometry.CYLINDER): ellipsoid_cylinder_contacts,
}


class CollisionPairs(NamedTuple):
    """The geom pairs of a model that collide (:func:`collision_pairs`).

    pairs: ``(geom1, geom2)`` index pairs in evaluation order (grouped by kind: sphere-sphere,
      sphere-capsule, capsule-capsule, sphere-box, capsule-box, box-box, sphere-cylinder,
      capsule-cylinder, cylinder-cylinder, cylinder-box, then sphere, capsule, cylinder and box
      against a mesh, mesh-mesh, sphere-ellipsoid, capsule-ellipsoid, ellipsoid-ellipsoid; within a
      pair the geom
      of the lower type code first, so the normal of a sphere-box or capsule-box pair points
      from the sphere or capsule to the box, of a cylinder-box pair from the cylinder to the box).
    kinds: ``((type1, type2), geom1 indices, geom2 indices)`` per kind present.
    unsupported: pairs the filter admits but that are not collided (those with a flat mesh).
    rows: the number of contacts of each pair (rows of :class:`PairContacts`, consecutive, in
      the order of ``pairs``): 3 for capsule-capsule, capsule-box, capsule-cylinder,
      capsule-mesh and capsule-ellipsoid, 40 for box-box, 32 for cylinder-box, 25 for cylinder-cylinder, 28 for
      box-mesh and cylinder-mesh, 26 for ellipsoid-box, 15 for ellipsoid-cylinder, 17 for
      ellipsoid-mesh, 24 for mesh-mesh, 1 for the others.
    """

    pairs: tuple[tuple[int, int], ...]
    kinds: tuple[tuple[tuple[int, int], tuple[int, ...], tuple[int, ...]], ...]
    unsupported: tuple[tuple[int, int], ...]
    rows: tuple[int, ...]

    @property
    def row_pair(self) -> np.ndarray:
        """The index into ``pairs`` of each row of :class:`PairContacts`."""
        return np.repeat(np.arange(len(self.pairs), dtype=np.int64), np.asarray(self.rows, np.int64))


@functools.lru_cache(maxsize=256)
def _pair_table(types, bodies, contype, conaffinity, parents, exclude, geom_exclude, explicit) -> CollisionPairs:
    found: dict[tuple[int, int], list[tuple[int, int]]] = {k: [] for k in _PAIR_KINDS}
    unsupported = []
    geom_exclude, explicit = frozenset(geom_exclude), frozenset(explicit)
    for i in range(len(types)):
        for j in range(i + 1, len(types)):
            bi, bj = bodies[i], bodies[j]
            if {types[i], types[j]} & {geometry.PLANE, geometry.HFIELD}:  # the ground (Ground, HeightField)
                continue
            if not geom_rules(i, j, contype, conaffinity, geom_exclude, explicit):
                continue
            if (i, j) not in explicit:  # the body rules
                parent_child = bi >= 0 and bj >= 0 and (parents[bi] == bj or parents[bj] == bi)
                if bi == bj or parent_child or (min(bi, bj), max(bi, bj)) in exclude:
                    continue
            a, b = (i, j) if types[i] <= types[j] else (j, i)
            kind = (types[a], types[b])
            if kind in found:
                found[kind].append((a, b))
            else:
                unsupported.append((a, b))
    kinds = tuple((k, tuple(p[0] for p in v), tuple(p[1] for p in v)) for k, v in found.items() if v)
    pairs = tuple(p for k in _PAIR_KINDS for p in found[k])
    rows = tuple(_PAIR_ROWS.get(k, 1) for k in _PAIR_KINDS for _ in found[k])
    return CollisionPairs(pairs, kinds, tuple(unsupported), rows)


def _exclude_ids(model: Model, exclude) -> tuple[tuple[int, int], ...]:
    ids = []
    for pair in exclude:
        if len(pair) != 2:
            raise ValueError(f"contact exclude: expected pairs of body names, got {pair!r}")
        b = []
        for name in pair:
            if name == "world":
                b.append(-1)
            elif name in model.body_names:
                b.append(model.body_names.index(name))
            else:
                raise ValueError(
                    f"contact exclude: no body named '{name}' (bodies: world, {', '.join(model.body_names)})"
                )
        ids.append((min(b), max(b)))
    return tuple(sorted(set(ids)))


def collision_pairs(model: Model, exclude=()) -> CollisionPairs:
    """The geom pairs of ``model.geoms`` that collide with each other, by MuJoCo's filter
    (module docstring): bit masks, not on one body, not parent and child (unless the parent is
    the world), not in ``exclude`` (pairs of body names, ``"world"`` for the world) nor in
    ``model.geoms.exclude``; and the explicit ``model.geoms.pairs`` whatever the filter says.
    Computed in Python from the static geom data, once per model structure (cached). Pairs the
    filter admits whose shapes jaxdyn does not collide (``unsupported``: pairs with a mesh whose
    vertices span no volume) are warned about, by name."""
    g = model.geoms
    assert g is not None  # a model with geoms (make_model gives every model its Geoms)
    solid = set(g.face_geom)  # a mesh without a hull of volume (flat) collides with nothing
    table = _pair_table(
        tuple(-1 if t == geometry.MESH and i not in solid else t for i, t in enumerate(g.type)),
        tuple(g.body),
        tuple(g.contype),
        tuple(g.conaffinity),
        tuple(model.parents),
        _exclude_ids(model, exclude),
        g.exclude,
        g.pairs,
    )
    if table.unsupported:
        kinds = {v: k for k, v in geometry.TYPE_CODES.items()}
        name = lambda i: f"'{g.names[i]}'" if i < len(g.names) and g.names[i] else f"geom {i}"  # noqa: E731
        pairs = table.unsupported
        listed = ", ".join(f"{name(a)}-{name(b)} ({kinds[g.type[a]]}-{kinds[g.type[b]]})" for a, b in pairs[:8])
        if len(pairs) > 8:
            listed += f" and {len(pairs) - 8} more"
        warnings.warn(
            f"model '{model.name}': {len(pairs)} geom pairs are not collided (jaxdyn collides no pair "
            f"with a flat mesh; exclude them to silence this): {listed}",
            UserWarning,
            stacklevel=2,
        )
    return table


def pair_contacts(model: Model, q, qd, exclude=()) -> PairContacts:
    """Signed distances, normals, witness points and relative velocities of the shape pairs of
    :func:`collision_pairs` (module docstring)."""
    q, qd = jnp.asarray(q, model.dtype), jnp.asarray(qd, model.dtype)
    return _pair_contacts(model, _frames(model, q, qd), exclude)


def bounding_radii(g: geometry.Geoms) -> Float[Array, " ng"]:
    """The radius of each geom's bounding sphere about its centre: ``r`` for a sphere, ``r + l``
    for a capsule, ``sqrt(r^2 + l^2)`` for a cylinder, the half-diagonal of a box, the largest
    semi-axis of an ellipsoid, the farthest hull vertex of a mesh (0 for a plane)."""
    s = g.size
    t = np.asarray(g.type, np.int64)
    r = jnp.zeros(g.ng, s.dtype)
    r = jnp.where(t == geometry.SPHERE, s[:, 0], r)
    r = jnp.where(t == geometry.CAPSULE, s[:, 0] + s[:, 1], r)
    r = jnp.where(t == geometry.CYLINDER, jnp.sqrt(s[:, 0] ** 2 + s[:, 1] ** 2), r)
    r = jnp.where(t == geometry.BOX, jnp.sqrt(jnp.sum(s * s, -1)), r)
    r = jnp.where(t == geometry.ELLIPSOID, jnp.max(s, -1), r)
    if len(g.vertex_geom):
        far = jax.ops.segment_max(
            jnp.sqrt(jnp.sum(g.vertices * g.vertices, -1)), np.asarray(g.vertex_geom, np.int64), g.ng
        )
        r = jnp.where(t == geometry.MESH, jnp.maximum(far, 0.0), r)
    return r


def _bounding_gaps(model: Model, F: Frames, table: CollisionPairs):
    """``(P,)`` the gap between the bounding spheres (:func:`bounding_radii`) of the two geoms
    of each pair of ``table``, less the pair's contact margin: ``|c_2 - c_1| - r_1 - r_2 -
    margin`` (at most the pair's signed distance less its margin, so a pair with a positive gap
    has no force)."""
    assert model.geoms is not None  # a model with geoms (make_model gives every model its Geoms)
    _, cg = geom_poses(model, F)
    r = bounding_radii(model.geoms)
    ij = np.asarray(table.pairs, np.int64).reshape(-1, 2)
    d = cg[ij[:, 1]] - cg[ij[:, 0]]
    margin = contact_margin(model.geoms, ij[:, 0], ij[:, 1]).astype(d.dtype)
    # an explicit sum (collision.dot): as jnp.sum, XLA CPU handed it with the gathers to YNNPACK,
    # 13 us per sample for the Go1's 1,106 pairs (64 samples, float32)
    return jnp.sqrt(dot(d, d)) - r[ij[:, 0]] - r[ij[:, 1]] - margin


def pair_budget(model: Model, max_pairs: int | str | None) -> int | None:
    """The broad phase's budget ``K`` per kind of pair (``Contact(max_pairs=...)``): an int as
    given, ``None`` for every pair; ``"auto"`` (the default) the scene's own
    (``model.geoms.max_pairs``: MJCF ``<custom><numeric name="max_geom_pairs">``, which MJX reads
    in the same role), else four per body that carries a collidable geom, at least 16 (the
    rows' rule, :func:`jaxdyn.contact.joint_space.contact_budget`). Measured along falls with
    every collision geom (5 s, zero torque): at most 20 pairs of a kind in reach on Playground's
    Go1 (13 such bodies: 52) and 35 on dm_control's humanoid (13: 52)."""
    if max_pairs != "auto":
        return None if max_pairs is None else int(max_pairs)
    g = model.geoms
    assert g is not None  # a model with geoms (make_model gives every model its Geoms)
    if g.max_pairs is not None:
        return g.max_pairs
    bodies = {b for b, c, a in zip(g.body, g.contype, g.conaffinity) if b >= 0 and (c or a)}
    return max(16, 4 * len(bodies))


def _pair_geometry(model: Model, F: Frames, table: CollisionPairs, max_pairs: int | str | None = None):
    """Per kind of pair: signed distances ``(P, S)``, normals and witnesses ``(P, S, 3)`` of its
    ``S`` contacts, and the pairs' signed distances ``(P,)``; per kind the pairs evaluated, as
    indices into ``table.pairs`` ``(P,)``; and the pairs the budget left out that are in reach
    (int32, their bounding spheres meet: :func:`pairs_in_reach`; ``None`` where no kind has more
    pairs than the budget). Every pair of the kind (a static range), or with the budget ``K``
    (:func:`pair_budget`) below the kind's number of pairs, the ``K`` with the smallest bounding
    gaps (:func:`_bounding_gaps`, chosen at each evaluation by ``lax.top_k``: traced indices).

    With a budget (the broad phase on), a pair evaluated whose bounding spheres do not meet
    (a positive gap, the margin included) is out of reach: every row of it is :func:`_far_rows`
    (no force), and the narrow phase of a kind runs only where some pair of it is in reach
    (:func:`jaxdyn.planner.skip`: a branch on the batch's verdict, or a select). The fourth
    output: per kind, whether each pair evaluated is in reach ``(P,)`` (``None`` without a
    budget: every pair exact)."""
    g = model.geoms
    assert g is not None  # a model with geoms (make_model gives every model its Geoms)
    max_pairs = pair_budget(model, max_pairs)
    Rg, cg = geom_poses(model, F)
    out, ids = [], []
    reach: list[jax.Array | None] = []
    gaps = None
    overflow = None
    start = 0
    i: np.ndarray | jax.Array  # static indices, or traced ones with max_pairs
    j: np.ndarray | jax.Array
    pair: np.ndarray | jax.Array
    for kind, i1, i2 in table.kinds:
        i, j = np.asarray(i1, np.int64), np.asarray(i2, np.int64)
        pair = np.arange(start, start + len(i), dtype=np.int64)
        start += len(i)
        sel = None
        if max_pairs is not None:
            gaps = _bounding_gaps(model, F, table) if gaps is None else gaps
        if max_pairs is not None and len(i) > max_pairs:
            assert gaps is not None
            sel = jax.lax.top_k(-gaps[pair], max_pairs)[1]
            over = jnp.maximum(jnp.sum(gaps[pair] <= 0) - max_pairs, 0).astype(jnp.int32)
            overflow = over if overflow is None else overflow + over
            i, j, pair = jnp.asarray(i)[sel], jnp.asarray(j)[sel], jnp.asarray(pair)[sel]
        ids.append(pair)
        narrow = functools.partial(_narrow_phase, g, kind, i, j, i1, i2, sel)
        if gaps is None:
            out.append(narrow(Rg, cg))
            reach.append(None)
            continue
        near = jax.lax.stop_gradient(gaps[pair]) <= 0
        reach.append(near)

        rows = jax.eval_shape(narrow, Rg, cg)[0].shape[-1]  # contacts per pair of the kind
        far = functools.partial(_far_rows, cg, i, j, rows)

        def evaluated(Rg, cg, near=near, narrow=narrow, far=far):
            return jax.tree_util.tree_map(
                lambda a, b: jnp.where(near.reshape(near.shape + (1,) * (a.ndim - 1)), a, b), narrow(Rg, cg), far()
            )

        if planner.skip() == "branch":  # batch_any is not batched: the cond stays a branch under vmap
            out.append(jax.lax.cond(batch_any(near), evaluated, lambda Rg, cg, far=far: far(), Rg, cg))
        else:
            out.append(evaluated(Rg, cg))
    return out, ids, overflow, reach


def _far_rows(cg, i, j, rows: int):
    """The ``rows`` contacts of pairs out of reach (bounding spheres apart) without their narrow
    phase: each row at the distance of the two geoms' centres (at least the shapes' distance,
    and beyond the pair's margin, so no force), the normal along the line of centres, the
    witness midway between them."""
    d = cg[j] - cg[i]
    sq = dot(d, d)
    ok = sq > jnp.finfo(d.dtype).tiny
    length = jnp.sqrt(jnp.where(ok, sq, 1.0))
    n = jnp.where(ok[:, None], d / length[:, None], jnp.asarray([0.0, 0.0, 1.0], d.dtype))
    length = jnp.where(ok, length, 0.0)
    mid = 0.5 * (cg[i] + cg[j])
    wide = lambda x: jnp.broadcast_to(x[:, None], (x.shape[0], rows, *x.shape[1:]))  # noqa: E731
    return wide(length), wide(n), wide(mid), length


def _narrow_phase(g: geometry.Geoms, kind, i, j, i1, i2, sel, Rg, cg):
    """The narrow phase of the pairs ``(i, j)`` of one kind (:func:`_pair_geometry`'s per-kind
    outputs)."""
    t1, t2 = kind
    size = g.size
    r1 = size[i, 0]
    one = lambda dd, n, p: (dd[:, None], n[:, None], p[:, None], dd)  # noqa: E731  a kind of one contact per pair
    if (t1, t2) == (geometry.SPHERE, geometry.SPHERE):
        return one(*spheres(cg[i], r1, cg[j], size[j, 0]))
    if (t1, t2) == (geometry.SPHERE, geometry.CAPSULE):
        p2, d2 = segment_of(Rg[j], cg[j], size[j])
        return one(*spheres(cg[i], r1, segment_point(p2, d2, cg[i]), size[j, 0]))
    if (t1, t2) == (geometry.CAPSULE, geometry.CAPSULE):
        segs = (*segment_of(Rg[i], cg[i], size[i]), r1, *segment_of(Rg[j], cg[j], size[j]), size[j, 0])
        return segment_segment_contacts(*segs)
    if t1 == geometry.SPHERE and t2 in _SPHERE_AGAINST:  # the normal from the sphere to the other
        dd, n, p = _SPHERE_AGAINST[t2](cg[i], r1, cg[j], Rg[j], size[j])
        return one(dd, -n, p)
    if t1 == geometry.CAPSULE and t2 in _SEGMENT_AGAINST:  # the normal from the capsule to the other
        p1, d1 = segment_of(Rg[i], cg[i], size[i])
        dd, n, p, phi = _SEGMENT_AGAINST[t2](p1, d1, r1, cg[j], Rg[j], size[j])
        return dd, -n, p, phi
    if (t1, t2) == (geometry.ELLIPSOID, geometry.ELLIPSOID):
        return one(*ellipsoid_ellipsoid(cg[i], Rg[i], size[i], cg[j], Rg[j], size[j]))
    if (t1, t2) in _SOLID_PAIRS:  # the normal from the first to the second
        return _SOLID_PAIRS[(t1, t2)](cg[i], Rg[i], size[i], cg[j], Rg[j], size[j])
    if (t1, t2) == (geometry.MESH, geometry.MESH):  # two convex hulls, the normal from the first
        T1, V1, valid1, E1, e_valid1 = hull_arrays(g, np.asarray(i1, np.int64), Rg, cg, sel)
        T2, V2, valid2, _, _ = hull_arrays(g, np.asarray(i2, np.int64), Rg, cg, sel)
        return hull_hull_contacts(T1, V1, valid1, T2, V2, valid2, E1, e_valid1)
    # a primitive against a mesh's convex hull, the normal from the primitive to the mesh
    T, V, valid, E, e_valid = hull_arrays(g, np.asarray(i2, np.int64), Rg, cg, sel)
    if t1 == geometry.SPHERE:
        dd, n, p = sphere_hull(cg[i][:, None], r1[:, None], T)
        return one(dd[:, 0], -n[:, 0], p[:, 0])
    if t1 == geometry.CAPSULE:
        p1, d1 = segment_of(Rg[i], cg[i], size[i])
        dd, n, p, phi = segment_hull_contacts(p1, d1, r1, T)
        return dd, -n, p, phi
    if t1 == geometry.CYLINDER:
        return cylinder_hull_contacts(cg[i], Rg[i], size[i], T, V, valid, E, e_valid)
    if t1 == geometry.ELLIPSOID:
        return ellipsoid_hull_contacts(cg[i], Rg[i], size[i], T, V, valid, E, e_valid)
    return box_hull_contacts(cg[i], Rg[i], size[i], T, V, valid)


def hull_arrays(g: geometry.Geoms, meshes, Rg, cg, sel=None):
    """The convex hulls of the mesh geoms ``meshes`` ``(P,)`` (static; with ``sel``, the
    traced entries ``sel`` of them) in world coordinates: triangles ``(P, F, 3, 3)``, vertices
    ``(P, V, 3)`` and edges ``(P, M, 2, 3)``, each padded to the largest hull by repeating its
    first row (a repeated triangle changes no distance; padded vertices and edges are marked
    false in ``(P, V)`` and ``(P, M)`` masks)."""

    (fi, _), (vi, valid), (ei, e_valid) = (padded_rows(o, meshes) for o in (g.face_geom, g.vertex_geom, g.edge_geom))
    if sel is not None:
        meshes, fi, vi, valid, ei, e_valid = (jnp.asarray(x)[sel] for x in (meshes, fi, vi, valid, ei, e_valid))
    R, c = Rg[meshes], cg[meshes]
    T = c[:, None, None] + mv(R[:, None, None], g.faces[fi])
    V = c[:, None] + mv(R[:, None], g.vertices[vi])
    E = c[:, None, None] + mv(R[:, None, None], g.edges[ei])
    return T, V, jnp.asarray(valid), E, jnp.asarray(e_valid)


def pairs_in_reach(model: Model, q, exclude=(), margin=0.0) -> Int[Array, " k"]:
    """``(k,)`` for each kind of pair of :func:`collision_pairs` (the order of its ``kinds``),
    how many of its pairs have bounding spheres closer than ``margin`` at the configuration
    ``q``: gap ``|c_2 - c_1| - r_1 - r_2 - m <= margin``, with ``r`` the radius of a sphere
    about the geom's centre that holds it (``r + l`` for a capsule, the half-diagonal of a box,
    the farthest hull vertex of a mesh) and ``m`` the pair's contact margin (``Geoms.margin``). ``Contact(max_pairs=K)`` gives every pair's forces where
    each count is at most ``K``; e.g. ``K = jax.vmap(lambda q: pairs_in_reach(model, q))(qs).max()``
    over the configurations ``qs`` of a trajectory."""
    q = jnp.asarray(q, model.dtype)
    table = collision_pairs(model, exclude)
    near = _bounding_gaps(model, _frames(model, q), table) <= margin
    counts, start = [], 0
    for _, i1, _ in table.kinds:
        counts.append(jnp.sum(near[start : start + len(i1)]))
        start += len(i1)
    return jnp.stack(counts) if counts else jnp.zeros(0, jnp.int32)


def pair_distances(model: Model, q, exclude=()) -> Float[Array, " p"]:
    """``(p,)`` the signed distance between the two shapes of each pair of
    :func:`collision_pairs` (negative: penetrating): for the kinds of one contact that contact's
    distance; capsule-capsule, the distance of the segments' closest points less the radii;
    capsule-box and capsule-cylinder, the capsule's distance as a swept sphere (the smallest
    sphere-box or sphere-cylinder distance over its segment); box-box, the smallest distance of
    an edge's deepest point in the other box, exact where the boxes are apart (module docstring
    of :mod:`jaxdyn.collision`); cylinder-box, the smallest distance of the box's edges' and the
    cylinder's rims' deepest points, cylinder-cylinder of the rims' and the side line's deepest
    points, exact where they are apart."""
    q = jnp.asarray(q, model.dtype)
    table = collision_pairs(model, exclude)
    F = _frames(model, q)
    parts = [k[3] for k in _pair_geometry(model, F, table)[0]]
    return jnp.concatenate(parts) if parts else jnp.zeros(0, model.dtype)


class _PairSlots(NamedTuple):
    """The evaluated contacts of the shape pairs: the fields of :class:`PairContacts` for the
    rows of every pair (static index arrays, ``numpy``) or, with a budget, of the pairs chosen
    (traced index arrays), and ``row``, each contact's row in the whole table (the rows of
    :class:`PairContacts`, ``CollisionPairs.rows``); ``omega``, ``mu_angular``: the relative
    angular velocity ``w_2 - w_1`` (world) and the torsional and rolling friction of each
    contact, ``None`` where no pair has either (:func:`angular_friction`); ``overflow``: the
    pairs in reach that the budget left out (``None``: no budget applies,
    :func:`_pair_geometry`); ``near``: whether each row's pair is in reach (``None``: no
    broad phase, every pair exact), the bristle of a row out of reach starting again from
    relaxed (:meth:`bristles`)."""

    distance: Array
    depth: Array
    normal: Array
    point: Array
    velocity: Array
    mu: Array
    geom1: np.ndarray | Array
    geom2: np.ndarray | Array
    body1: np.ndarray | Array
    body2: np.ndarray | Array
    pair: np.ndarray | Array
    row: np.ndarray | Array
    omega: Array | None = None
    mu_angular: Array | None = None
    margin: Array | None = None
    overflow: Array | None = None
    near: Array | None = None

    def bristles(self, pairs_state: Array) -> Array:
        """The elongations of these rows from the state's pair rows ``pairs_state`` (the rows
        chosen, with a budget), a row out of reach relaxed (zero), as a pair the budget left
        out."""
        u = pairs_state[self.row] if self.chosen else pairs_state
        return u if self.near is None else jnp.where(self.near[:, None], u, 0.0)

    @property
    def chosen(self) -> bool:
        """Whether the rows are a chosen subset of the table's (traced indices)."""
        return not isinstance(self.row, np.ndarray)


def _gather(a: np.ndarray, idx):
    """``a[idx]``, in ``numpy`` for a static ``idx``."""
    return a[idx] if isinstance(idx, np.ndarray) else jnp.asarray(a)[idx]


def pair_slots(model: Model, F: Frames, exclude, max_pairs: int | str | None = None) -> _PairSlots:
    g = model.geoms
    assert g is not None  # a model with geoms (make_model gives every model its Geoms)
    table = collision_pairs(model, exclude)
    dt = model.dtype
    kinds, ids, overflow, reach = _pair_geometry(model, F, table, max_pairs)
    if kinds:
        dist = jnp.concatenate([k[0].reshape(-1) for k in kinds])
        normal = jnp.concatenate([k[1].reshape(-1, 3) for k in kinds])
        point = jnp.concatenate([k[2].reshape(-1, 3) for k in kinds])
    else:
        dist, normal, point = jnp.zeros(0, dt), jnp.zeros((0, 3), dt), jnp.zeros((0, 3), dt)
    first = np.cumsum(np.asarray((0, *table.rows), np.int64))[:-1]  # each pair's first row
    pairs, rows, near = [], [], []  # near: every kind's (a budget) or none's
    for k, pid, r in zip(kinds, ids, reach):
        s = k[0].shape[-1]
        xp = np if isinstance(pid, np.ndarray) else jnp
        pairs.append(xp.repeat(pid, s))
        rows.append((_gather(first, pid)[:, None] + xp.arange(s)).reshape(-1))
        if r is not None:
            near.append(jnp.repeat(r, s))
    static = all(isinstance(p, np.ndarray) for p in pairs)
    xp = np if static else jnp
    pair = xp.concatenate(pairs) if pairs else np.zeros(0, np.int64)
    row = xp.concatenate(rows) if rows else np.zeros(0, np.int64)
    ij = np.asarray(table.pairs, np.int64).reshape(-1, 2)
    g1, g2 = _gather(ij[:, 0], pair), _gather(ij[:, 1], pair)
    body = np.asarray(g.body, np.int64)
    b1, b2 = _gather(body, g1), _gather(body, g2)
    vel = point_velocity(F, b2, point) - point_velocity(F, b1, point)
    mu = contact_friction(g, ij[:, 0], ij[:, 1], g.friction[ij[:, 0], 0], g.friction[ij[:, 1], 0])[pair]
    mua = angular_friction(g, ij[:, 0], ij[:, 1])
    omega, mua = (None, None) if mua is None else (F.w[b2] - F.w[b1], mua[pair])
    margin = contact_margin(g, ij[:, 0], ij[:, 1])[pair].astype(dt)
    depth = jnp.maximum(margin - dist, 0.0)
    in_reach = jnp.concatenate(near) if near else None
    return _PairSlots(
        dist, depth, normal, point, vel, mu, g1, g2, b1, b2, pair, row, omega, mua, margin, overflow, in_reach
    )


def _pair_contacts(model: Model, F: Frames, exclude) -> PairContacts:
    s = pair_slots(model, F, exclude)
    assert s.margin is not None  # pair_slots sets it
    ints = lambda x: tuple(map(int, x))  # noqa: E731
    return PairContacts(
        s.distance,
        s.depth,
        s.normal,
        s.point,
        s.velocity,
        s.mu,
        s.margin,
        ints(s.geom1),
        ints(s.geom2),
        ints(s.body1),
        ints(s.body2),
        ints(s.pair),
    )


def pair_forces(pc: PairContacts, params: ContactParams, dtype=None, elongation=None, dt=0.0) -> Float[Array, "m 3"]:
    """World-frame force of each pair on its second geom's body (the first body gets the
    opposite force at the same point): the ground's force law on the pair's depth, normal and
    relative velocity (with ``elongation`` ``(m, 3)``: the stick-capable friction)."""
    dtype = dtype or pc.depth.dtype
    return force_law(pc.depth, pc.normal, pc.velocity, pc.mu, params, dtype, elongation, dt)[0]
