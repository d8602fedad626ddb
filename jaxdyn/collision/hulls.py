"""Convex hulls of mesh geoms (outward triangles ``T (..., F, 3, 3)`` in world coordinates): the
exact signed distance of a point (Ericson05 5.1.5), and a hull against a sphere, a capsule, a
box, a cylinder or another hull.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ..spatial import cross, mtv
from .boxes import box_features, sphere_box
from .cylinders import rim_points, rim_rows, segment_cylinder, sphere_cylinder
from .ellipsoids import ellipsoid_support, segment_ellipsoid_contacts, sphere_ellipsoid
from .segments import beyond_ends, dot, golden_minimum, length

HULL_POINTS = 8  # a hull's vertices that count against another shape: its this many deepest


def closest_on_triangles(p, a, b, c):
    """The point of each triangle ``(a, b, c)`` nearest to ``p`` (Ericson05 5.1.5, its Voronoi
    regions tested in turn, here as selections so that every triangle is one batched
    expression). Shapes broadcast; degenerate triangles fall back to a vertex or an edge."""
    ab, ac, ap = b - a, c - a, p - a
    d1, d2 = dot(ab, ap), dot(ac, ap)
    bp = p - b
    d3, d4 = dot(ab, bp), dot(ac, bp)
    cp = p - c
    d5, d6 = dot(ab, cp), dot(ac, cp)
    va, vb, vc = d3 * d6 - d5 * d4, d5 * d2 - d1 * d6, d1 * d4 - d3 * d2
    safe = lambda x: jnp.where(x == 0, 1.0, x)  # noqa: E731
    den = safe(va + vb + vc)
    inside = a + (vb / den)[..., None] * ab + (vc / den)[..., None] * ac
    e_bc = (d4 - d3) / safe((d4 - d3) + (d5 - d6))
    on_bc = b + e_bc[..., None] * (c - b)
    on_ac = a + (d2 / safe(d2 - d6))[..., None] * ac
    on_ab = a + (d1 / safe(d1 - d3))[..., None] * ab
    # Ericson's order of tests, the first that holds wins: so select from the last one back
    q = inside
    q = jnp.where(((va <= 0) & (d4 - d3 >= 0) & (d5 - d6 >= 0))[..., None], on_bc, q)
    q = jnp.where(((vb <= 0) & (d2 >= 0) & (d6 <= 0))[..., None], on_ac, q)
    q = jnp.where(((d6 >= 0) & (d5 <= d6))[..., None], c, q)
    q = jnp.where(((vc <= 0) & (d1 >= 0) & (d3 <= 0))[..., None], on_ab, q)
    q = jnp.where(((d3 >= 0) & (d4 <= d3))[..., None], b, q)
    return jnp.where(((d1 <= 0) & (d2 <= 0))[..., None], a, q)


def hull_distance(p, T):
    """Signed distance of points ``p`` ``(..., k, 3)`` to the convex hull bounded by the outward
    triangles ``T`` ``(..., F, 3, 3)`` (one hull per leading index), and the outward unit normal
    of its nearest surface point. Inside (no face plane with the point in front), the largest
    of the planes' distances ``n_f . p - n_f . a_f``, along that face's normal: exact for a
    convex body. Outside, the distance to the nearest triangle's nearest point, along the line
    from it (the planes' largest distance is only a lower bound there, near edges and
    vertices). The nearest face is chosen by index, so the derivative is that face's."""
    a, b, c = (T[..., None, :, j, :] for j in range(3))  # (..., 1, F, 3)
    n = face_normals(T)[..., None, :, :]
    pk = p[..., :, None, :]  # (..., k, 1, 3)
    s = dot(n, pk - a)  # (..., k, F)
    f = jnp.argmax(s, -1)
    take = lambda x: jnp.take_along_axis(x, f[..., None], -1)[..., 0]  # noqa: E731
    s_max = take(s)
    n_in = jnp.take_along_axis(jnp.broadcast_to(n, s.shape + (3,)), f[..., None, None], -2)[..., 0, :]
    q = closest_on_triangles(pk, a, b, c)  # (..., k, F, 3)
    dq = dot(pk - q, pk - q)
    j = jnp.argmin(dq, -1)
    q_near = jnp.take_along_axis(q, j[..., None, None], -2)[..., 0, :]
    d_out, n_out, ok = length(p - q_near)
    outside = (s_max > 0) & ok
    return jnp.where(outside, d_out, s_max), jnp.where(outside[..., None], n_out, n_in)


def sphere_hull(c, r, T):
    """Spheres ``(c, r)`` ``(..., k)`` against the hull ``T``: signed distance, unit normal from
    the hull to the sphere and witness midway between the surfaces (:func:`hull_distance`)."""
    sd, n = hull_distance(c, T)
    surface = c - sd[..., None] * n
    return sd - r, n, 0.5 * (surface + c - r[..., None] * n)


def hull_sdf_of(T):
    """The hull's signed distance and outward normal as a function of points ``(..., 2, k, 3)``,
    without derivatives (for :func:`rim_points`)."""
    T0 = jax.lax.stop_gradient(T)[..., None, :, :, :]  # a rim axis
    return lambda pts: hull_distance(pts, T0)


def segment_hull(p, d, r, T):
    """Capsules (segment ``p + t d``, radius ``r``) against the hull ``T``: :func:`sphere_hull`
    at the segment's point deepest in the hull, the minimiser of the hull's signed distance
    along it (convex: a convex body's), by golden section (as :func:`segment_cylinder`)."""
    p0, d0, T0 = (jax.lax.stop_gradient(x) for x in (p, d, T))
    f = lambda t: hull_distance((p0 + t[..., None] * d0)[..., None, :], T0)[0][..., 0]  # noqa: E731
    lo, hi = jnp.zeros(p.shape[:-1], p.dtype), jnp.ones(p.shape[:-1], p.dtype)
    t = golden_minimum(f, lo, hi)
    dist, n, w = sphere_hull((p + t[..., None] * d)[..., None, :], r[..., None], T)
    return dist[..., 0], n[..., 0, :], w[..., 0, :]


def segment_hull_contacts(p, d, r, T):
    """Capsule against hull as three contacts, as :func:`segment_box_contacts`: the two end
    spheres and the segment's deepest point counted beyond them (B1). Returns signed distances
    ``(..., 3)``, normals from the hull to the capsule ``(..., 3, 3)``, witnesses and the
    capsule's signed distance ``(...)``."""
    ends = jnp.stack([p, p + d], -2)
    de, ne, we = sphere_hull(ends, jnp.stack([r, r], -1), T)
    ds, ns, ws = segment_hull(p, d, r, T)
    di = beyond_ends(ds, de[..., 0], de[..., 1])
    dist = jnp.concatenate([de, di[..., None]], -1)
    return dist, jnp.concatenate([ne, ns[..., None, :]], -2), jnp.concatenate([we, ws[..., None, :]], -2), ds


FAR = 1e3  # metres: the distance of a row that stands for no contact (farther than any)


def _deepest(dist, valid):
    """The rows (``(..., K)`` indices into the last axis of ``dist``, and whether each is a
    valid row) of the :data:`HULL_POINTS` smallest distances among the valid ones: a hull's
    vertices or edges that meet another shape first, chosen anew at each evaluation
    (``lax.top_k``; the choice has no derivative, the chosen rows' distances do). Invalid rows
    (padding to the largest hull) come last, so they are chosen only from a hull with fewer
    valid rows than ``K``. Of fewer than ``K`` rows, the indices are padded with row 0 marked
    invalid, so a pair's number of contacts does not depend on its hull's size."""
    m = dist.shape[-1]
    _, k = jax.lax.top_k(jnp.where(valid, -dist, -jnp.inf), min(HULL_POINTS, m))
    ok = jnp.take_along_axis(valid, k, -1)
    if m < HULL_POINTS:
        pad = k.shape[:-1] + (HULL_POINTS - m,)
        k = jnp.concatenate([k, jnp.zeros(pad, k.dtype)], -1)
        ok = jnp.concatenate([ok, jnp.zeros(pad, bool)], -1)
    return k, ok


def take(x, k):
    """Rows ``k`` ``(..., K)`` of ``x`` ``(..., M)`` or ``(..., M, 3)``."""
    return jnp.take_along_axis(x, k, -1) if x.ndim == k.ndim else jnp.take_along_axis(x, k[..., None], -2)


def box_hull_contacts(cb, Rb, h, T, V, valid):
    """Box ``(cb, Rb, half-sizes h)`` against a hull (triangles ``T``, vertices ``V`` with
    ``valid``) as 28 point contacts: the box's 8 corners against the hull's exact signed
    distance (:func:`sphere_hull` of radius 0), its 12 edges as interior contacts (B1) of
    segments of radius 0 (the edge's deepest point, :func:`segment_hull`, counted beyond its
    corners), and the hull's :data:`HULL_POINTS` vertices deepest in the box
    (:func:`sphere_box` of radius 0). Returns signed distances ``(..., 28)``, unit normals from
    the box to the hull, witnesses, and the pair's signed distance: the smallest over the
    edges' deepest points and the vertices, exact where the shapes are apart (their closest
    points lie on an edge of the box or at a vertex of the hull, or are equally near along a
    whole face or edge that ends there)."""
    dtype = cb.dtype
    zero = jnp.zeros((), dtype)
    x = lambda v: v[..., None, :]  # noqa: E731  one shape per row of points
    X = lambda M: M[..., None, :, :]  # noqa: E731
    Te = T[..., None, :, :, :]  # one hull per edge
    (dc, nc, wc), (seg, ne, we), ends = box_features(  # normals hull -> box
        cb,
        Rb,
        h,
        lambda pts: sphere_hull(pts, jnp.zeros(pts.shape[:-1], dtype), T),
        lambda p, d: segment_hull(p, d, jnp.zeros(p.shape[:-1], dtype), Te),
    )
    de = beyond_ends(seg, ends, ends)
    dv, nv, wv = sphere_box(V, zero, x(cb), X(Rb), x(h))  # normals box -> vertex
    k, ok = _deepest(dv, valid)
    dv, nv, wv = jnp.where(ok, take(dv, k), FAR), take(nv, k), take(wv, k)
    dist = jnp.concatenate([dc, de, dv], -1)
    normal = jnp.concatenate([-nc, -ne, nv], -2)
    witness = jnp.concatenate([wc, we, wv], -2)
    return dist, normal, witness, jnp.minimum(jnp.min(seg, -1), jnp.min(dv, -1))


def cylinder_hull_contacts(cc, Rc, size, T, V, valid, E, e_valid):
    """Cylinder ``(cc, Rc, size)`` against a hull (triangles ``T``, vertices ``V``, edges ``E``
    ``(..., M, 2, 3)``, with their ``valid`` masks) as 28 point contacts: the cylinder's rims
    against the hull's exact signed distance, 4 points on each rim and each rim's deepest points
    counted beyond them (:func:`rim_points`, :func:`rim_rows`); the hull's
    :data:`HULL_POINTS` vertices deepest in the cylinder (:func:`sphere_cylinder` of radius 0);
    and its :data:`HULL_POINTS` edges that reach deepest into it, each the interior contact (B1)
    of a segment of radius 0 (:func:`segment_cylinder`) counted beyond its two vertices.
    Returns signed distances ``(..., 28)``, unit normals from the cylinder to the hull,
    witnesses, and the pair's signed distance: the smallest over the rims' deepest points and
    the edges' (exact where the shapes are apart: their closest points lie on a rim, or on an
    edge of the hull)."""
    zero = jnp.zeros((), cc.dtype)
    x = lambda v: v[..., None, :]  # noqa: E731
    X = lambda M: M[..., None, :, :]  # noqa: E731
    square, deepest, second = rim_points(cc, Rc, size, hull_sdf_of(T))
    dq, nq, wq = sphere_hull(square, jnp.zeros(square.shape[:-1], cc.dtype), T)  # normals hull -> rim
    dd, nd, wd = sphere_hull(deepest, jnp.zeros(deepest.shape[:-1], cc.dtype), T)
    drim, nrim, wrim = rim_rows(dq, -nq, wq, dd, -nd, wd, second, size[..., 0])
    dv, nv, wv = sphere_cylinder(V, zero, x(cc), X(Rc), x(size))  # normals cylinder -> vertex
    k, ok = _deepest(dv, valid)
    dv, nv, wv = jnp.where(ok, take(dv, k), FAR), take(nv, k), take(wv, k)
    p, d = E[..., 0, :], E[..., 1, :] - E[..., 0, :]
    seg, ne, we = segment_cylinder(p, d, zero, x(cc), X(Rc), x(size))
    d0 = sphere_cylinder(p, zero, x(cc), X(Rc), x(size))[0]
    d1 = sphere_cylinder(p + d, zero, x(cc), X(Rc), x(size))[0]
    k, ok = _deepest(seg, e_valid)  # the deepest edges, each counted beyond its ends (B1)
    de = jnp.where(ok, beyond_ends(take(seg, k), take(d0, k), take(d1, k)), FAR)
    ne, we = take(ne, k), take(we, k)
    dist = jnp.concatenate([drim, dv, de], -1)
    normal = jnp.concatenate([nrim, nv, ne], -2)
    witness = jnp.concatenate([wrim, wv, we], -2)
    apart = jnp.min(jnp.where(e_valid, seg, jnp.inf), -1)
    return dist, normal, witness, jnp.minimum(jnp.min(dd, -1), apart)


def face_normals(T):
    """The unit outward normals ``(..., F, 3)`` of the hull's triangles ``T`` ``(..., F, 3, 3)``."""
    return length(cross(T[..., 1, :] - T[..., 0, :], T[..., 2, :] - T[..., 0, :]))[1]


def vertices_in_hull(V, valid, T):
    """The :data:`HULL_POINTS` vertices ``V`` ``(..., M, 3)`` (with ``valid``) deepest in the
    hull ``T``: chosen by the largest of the hull's face-plane distances (the signed distance
    inside, a lower bound outside, so every vertex inside comes before every vertex outside),
    then their exact signed distances (:func:`sphere_hull` of radius 0), unit normals from the
    hull to the vertex and witnesses; ``FAR`` for padding."""
    a, n = T[..., None, :, 0, :], face_normals(T)[..., None, :, :]  # (..., 1, F, 3)
    planes = jnp.max(dot(n, V[..., :, None, :] - a), -1)  # (..., M)
    k, ok = _deepest(planes, valid)
    Vk = take(V, k)
    d, nrm, w = sphere_hull(Vk, jnp.zeros(Vk.shape[:-1], V.dtype), T)
    return jnp.where(ok, d, FAR), nrm, w


EDGE_SAMPLES = 9  # points along an edge at which its face-plane bound is sampled (ranking only)


def _edges_in_hull(E, e_valid, T):
    """The :data:`HULL_POINTS` edges ``E`` ``(..., M, 2, 3)`` (with ``e_valid``) that reach
    deepest into the hull ``T``, each the interior contact (B1) of a segment of radius 0: the
    hull's exact signed distance (:func:`sphere_hull`) at the edge's point deepest through the
    hull's face planes, counted beyond its two ends. The face-plane distance ``max_f n_f . x -
    o_f`` is the signed distance inside (exact there) and a lower bound outside; along an edge it
    is convex, so the edges are chosen by it at :data:`EDGE_SAMPLES` points and each chosen
    edge's deepest point is its minimiser by golden section (one plane evaluation a step, not a
    point-triangle search: the cost of a published mesh's hull). An edge crossing into the hull
    acts at its deepest point exactly; apart, the point is the closest to the hull only where
    the planes' minimiser is (the distance is that of a point of the edge, never below the
    edge's). ``FAR`` for padding. Returns the (B1) distances, unit normals from the hull to the
    edge's point, witnesses, and the chosen edges' points' distances (for the pair's
    distance)."""
    a, n = T[..., None, :, 0, :], face_normals(T)[..., None, :, :]  # (..., 1, F, 3)
    o = dot(n, a)  # (..., 1, F)
    p, d = E[..., 0, :], E[..., 1, :] - E[..., 0, :]
    t = jnp.linspace(0.0, 1.0, EDGE_SAMPLES, dtype=E.dtype)[:, None]  # (S, 1)
    pts = p[..., :, None, :] + t * d[..., :, None, :]  # (..., M, S, 3)
    planes = lambda x: jnp.max(dot(n[..., None, :, :], x[..., None, :]) - o[..., None, :], -1)  # noqa: E731
    bound = jnp.min(planes(pts), -1)  # (..., M)
    k, ok = _deepest(bound, e_valid)
    pk, dk = take(p, k), take(d, k)
    n0, o0, pk0, dk0 = (jax.lax.stop_gradient(x) for x in (n, o, pk, dk))
    along = lambda s: jnp.max(dot(n0, (pk0 + s[..., None] * dk0)[..., None, :]) - o0, -1)  # noqa: E731
    zeros = jnp.zeros(pk.shape[:-1], E.dtype)
    tk = golden_minimum(along, zeros, zeros + 1.0)
    pts = jnp.stack([pk + tk[..., None] * dk, pk, pk + dk], -2)  # (..., K, 3, 3): deepest, ends
    dist, nrm, w = sphere_hull(pts, jnp.zeros(pts.shape[:-1], E.dtype), T[..., None, :, :, :])
    di = beyond_ends(dist[..., 0], dist[..., 1], dist[..., 2])
    return jnp.where(ok, di, FAR), nrm[..., 0, :], w[..., 0, :], jnp.where(ok, dist[..., 0], FAR)


def hull_hull_contacts(T1, V1, valid1, T2, V2, valid2, E1, e_valid1):
    """Two convex hulls (triangles ``T``, vertices ``V`` with ``valid``, the first's edges
    ``E1`` with ``e_valid1``) as 24 point contacts: the :data:`HULL_POINTS` vertices of each
    deepest in the other (:func:`vertices_in_hull`), and the :data:`HULL_POINTS` edges of the
    first that reach deepest into the second, counted beyond their ends (B1)
    (:func:`_edges_in_hull`): two hulls crossing edge through edge touch there (the second's
    edges are not added, which would count that contact twice, as a cylinder pair's side line).
    Returns signed distances ``(..., 24)``, unit normals from the first hull to the second,
    witnesses, and the pair's signed distance: the smallest over the vertices and the edges'
    deepest points, exact where the hulls are apart and their closest points include a vertex,
    or a point of an edge of the first among those chosen."""
    d1, n1, w1 = vertices_in_hull(V1, valid1, T2)  # normals hull 2 -> a vertex of hull 1
    d2, n2, w2 = vertices_in_hull(V2, valid2, T1)  # hull 1 -> a vertex of hull 2
    de, ne, we, seg = _edges_in_hull(E1, e_valid1, T2)  # hull 2 -> a point of an edge of hull 1
    dist = jnp.concatenate([d1, d2, de], -1)
    normal = jnp.concatenate([-n1, n2, -ne], -2)
    witness = jnp.concatenate([w1, w2, we], -2)
    return dist, normal, witness, jnp.minimum(jnp.min(jnp.concatenate([d1, d2], -1), -1), jnp.min(seg, -1))


ELLIPSOID_CANDIDATES = 32  # a hull's faces and edges searched exactly against an ellipsoid


def edge_ellipsoid_estimate(p, d, ce, Re, a):
    """A cheap ranking of segments ``p + t d`` by how near they come to the ellipsoid: in its
    scaled coordinates ``y(t) = A^-1 R^T (p + t d - c)`` the first-order distance
    ``s(t) = (|y|^2 - 1) / (2 |A^-1 y|)`` (the level-set value over its gradient; a sphere's is
    ``(|x|^2 - r^2) / (2 |x|)``), minimised along the segment by golden section: a few flops an
    evaluation, where the exact distance takes a Newton solve. No derivatives: it only chooses
    the segments searched exactly."""
    p, d, ce, Re, a = (jax.lax.stop_gradient(x) for x in (p, d, ce, Re, a))
    y0, u = mtv(Re, p - ce) / a, mtv(Re, d) / a
    tiny = jnp.finfo(y0.dtype).tiny

    def s(t):
        y = y0 + t[..., None] * u
        return (dot(y, y) - 1.0) / (2.0 * jnp.maximum(jnp.sqrt(dot(y / a, y / a)), tiny))

    lo = jnp.zeros(y0.shape[:-1], y0.dtype)
    return s(golden_minimum(s, lo, lo + 1.0))


def ellipsoid_hull_contacts(ce, Re, a, T, V, valid, E, e_valid):
    """Ellipsoid ``(ce, Re, semi-axes a)`` against a hull (triangles ``T``, vertices ``V``, edges
    ``E`` ``(..., M, 2, 3)``, with their ``valid`` masks) as 17 point contacts:

    * the ellipsoid's support point deepest in the hull: for every face its point farthest along
      the face's inward normal (:func:`~jaxdyn.collision.ellipsoids.ellipsoid_support`); of the
      :data:`ELLIPSOID_CANDIDATES` faces whose planes separate the shapes most (the face
      normals' separating-axis values), the support point deepest by the hull's exact signed
      distance (:func:`sphere_hull` of radius 0);
    * the hull's :data:`HULL_POINTS` vertices deepest in the ellipsoid (its exact signed
      distance, :func:`~jaxdyn.collision.ellipsoids.sphere_ellipsoid` of radius 0);
    * its :data:`HULL_POINTS` edges that reach deepest into the ellipsoid, each the interior
      contact (B1) of a segment of radius 0 (:func:`~jaxdyn.collision.ellipsoids.
      segment_ellipsoid`) counted beyond its two vertices, of the
      :data:`ELLIPSOID_CANDIDATES` edges ranked nearest by :func:`edge_ellipsoid_estimate`;

    the vertices and edges counted beyond the support point (B1), so an ellipsoid resting on a
    face acts through its support point, and a vertex or an edge where it reaches into the
    ellipsoid deeper than that. Returns signed distances ``(..., 17)``, unit normals from the
    ellipsoid to the hull, witnesses, and the pair's signed distance: the smallest over the
    support points, the vertices and the edges, exact where the shapes are apart and their
    closest points lie on a face of the hull (that face separates them most, so it is a
    candidate, and the ellipsoid's point farthest along its inward normal), at a vertex, or on
    a candidate edge. Where they overlap every candidate is at most as deep as the minimum
    translation. The exact searches cost a Newton solve per evaluation, so only the candidates
    get them (``benchmarks/results/cpu-2026-11-28-ellipsoid-mesh.md``: on a published hull of
    1,118 faces and 1,677 edges, 30x faster than searching every face and edge, and the pair's
    distance where apart within 2e-5 m of that search where the nearest edge is not ranked a
    candidate)."""
    dtype = ce.dtype
    zero = jnp.zeros((), dtype)
    x = lambda v: v[..., None, :]  # noqa: E731  one ellipsoid per row of points
    X = lambda M: M[..., None, :, :]  # noqa: E731
    n = face_normals(T)
    _, offset, _ = ellipsoid_support(X(Re), x(a), -n)
    sup = x(ce) + offset  # (..., F, 3)
    separation = jax.lax.stop_gradient(dot(n, sup - T[..., 0, :]))  # along each face's normal
    kf = jax.lax.top_k(separation, min(ELLIPSOID_CANDIDATES, separation.shape[-1]))[1]
    sup = take(sup, kf)
    dsup, nsup, wsup = sphere_hull(sup, jnp.zeros(sup.shape[:-1], dtype), T)  # normals hull -> point
    k = jnp.argmin(dsup, -1)[..., None]
    ds, ns, ws = take(dsup, k), -take(nsup, k), take(wsup, k)  # (..., 1)
    beyond = jnp.minimum(0.0, ds)
    dv, nv, wv = sphere_ellipsoid(V, zero, x(ce), X(Re), x(a))  # normals ellipsoid -> vertex
    vertex_min = jnp.min(jnp.where(valid, dv, jnp.inf), -1)
    k, ok = _deepest(dv, valid)
    dv, nv, wv = jnp.where(ok, take(dv, k) - beyond, FAR), take(nv, k), take(wv, k)
    p, d = E[..., 0, :], E[..., 1, :] - E[..., 0, :]
    rank = jnp.where(e_valid, -edge_ellipsoid_estimate(p, d, x(ce), X(Re), x(a)), -jnp.inf)
    ke = jax.lax.top_k(rank, min(ELLIPSOID_CANDIDATES, rank.shape[-1]))[1]
    p, d, e_valid = take(p, ke), take(d, ke), take(e_valid, ke)
    rows, nrows, wrows, seg = segment_ellipsoid_contacts(p, d, zero, x(ce), X(Re), x(a))  # ends, (B1)
    k, ok = _deepest(seg, e_valid)  # the deepest edges, each counted beyond its ends (B1)
    de = jnp.where(ok, take(rows[..., 2], k) - beyond, FAR)
    ne, we = take(nrows[..., 2, :], k), take(wrows[..., 2, :], k)
    dist = jnp.concatenate([ds, dv, de], -1)
    normal = jnp.concatenate([ns, nv, ne], -2)
    witness = jnp.concatenate([ws, wv, we], -2)
    apart = jnp.min(jnp.where(e_valid, seg, jnp.inf), -1)
    return dist, normal, witness, jnp.minimum(jnp.minimum(ds[..., 0], vertex_min), apart)
