"""Cylinders: the exact signed distance of a point, the rims' points that meet a plane first, a
capsule's segment against a cylinder, and the contacts of cylinder-box and cylinder-cylinder
(corners, edges, rims and side lines against the other shape).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..spatial import cross, mtv, mv
from .boxes import box_features, box_sdf, sphere_box
from .segments import LocalSDF, _segments, beyond_ends, dot, golden_minimum


def cylinder_sdf(l, size):
    """Signed distance of points ``l`` (in the cylinder's frame) to the cylinder of radius
    ``size[0]`` and half-length ``size[1]`` along z, and the outward unit normal of the nearest
    surface point. With ``d_r = |l_xy| - r`` and ``d_z = |l_z| - h``: outside,
    ``|(max(d_r, 0) u, max(d_z, 0) s)|`` along that vector (``u`` the radial direction, ``s``
    the sign of ``l_z``); inside, ``max(d_r, d_z)`` along the nearer face's normal. On the axis
    ``u`` is the frame's x axis."""
    r, h = size[..., 0], size[..., 1]
    sq = l[..., 0] ** 2 + l[..., 1] ** 2
    ok = sq > jnp.finfo(l.dtype).tiny
    rho = jnp.where(ok, jnp.sqrt(jnp.where(ok, sq, 1.0)), 0.0)
    zero = jnp.zeros_like(rho)
    u = jnp.stack(
        [
            jnp.where(ok, l[..., 0] / jnp.where(ok, rho, 1.0), 1.0),
            jnp.where(ok, l[..., 1] / jnp.where(ok, rho, 1.0), 0.0),
            zero,
        ],
        -1,
    )
    sz = jnp.where(l[..., 2] >= 0, 1.0, -1.0).astype(l.dtype)
    ez = jnp.stack([zero, zero, sz], -1)
    dr, dz = rho - r, jnp.abs(l[..., 2]) - h
    a, b = jnp.maximum(dr, 0.0), jnp.maximum(dz, 0.0)
    out_sq = a * a + b * b
    outside = out_sq > jnp.finfo(l.dtype).tiny
    d_out = jnp.sqrt(jnp.where(outside, out_sq, 1.0))
    n_out = (a[..., None] * u + b[..., None] * ez) / d_out[..., None]
    radial = dr >= dz
    n_in = jnp.where(radial[..., None], u, ez)
    dist = jnp.where(outside, d_out, jnp.maximum(dr, dz))
    return dist, jnp.where(outside[..., None], n_out, n_in)


def sphere_cylinder(c, r, cc, Rc, size):
    """Sphere ``(c, r)`` against the cylinder ``(cc, Rc, size)``: signed distance, unit normal
    from the cylinder to the sphere, and witness midway between the surfaces
    (:func:`cylinder_sdf`; exact, also for a centre inside)."""
    sd, n_loc = cylinder_sdf(mtv(Rc, c - cc), size)
    n = mv(Rc, n_loc)
    surface = c - sd[..., None] * n  # the cylinder's surface point nearest to the centre
    point = 0.5 * (surface + c - r[..., None] * n)
    return sd - r, n, point


def rim_square(Rg, centres, r, n):
    """4 points on each rim of the cylinders ``Rg`` (axis ``a``, the geom's z) centred at
    ``centres`` ``(..., k, 3)`` with radius ``r`` ``(...)``, that meet a plane of normal ``n``
    ``(..., k, 3)`` first: the point lowest along ``n`` (``u``, the in-disk direction of steepest
    descent), the point opposite and the two between (``+-v``, ``v = a x u``); ``u`` falls back
    to the geom's x axis where ``n`` is along ``a``. Returns ``(..., k, 4, 3)``."""
    a, ex = Rg[..., None, :, 2], Rg[..., None, :, 0]
    w = dot(n, a)[..., None] * a - n  # the in-disk direction of steepest descent along -n
    sq = dot(w, w)
    ok = sq > jnp.finfo(w.dtype).tiny
    u = jnp.where(ok[..., None], w / jnp.sqrt(jnp.where(ok, sq, 1.0))[..., None], ex)
    v = cross(a, u)
    return centres[..., None, :] + r[..., None, None, None] * jnp.stack([u, v, -u, -v], -2)


def cylinder_rims(Rg, cg, size, n):
    """The 8 rim points of each cylinder that meet a plane of normal ``n`` first (the ground's
    contact points, module docstring of :mod:`jaxdyn.contact.ground`; :func:`rim_square` on both
    rims). Returns ``(..., 8, 3)``."""
    a, hl = Rg[..., :, 2], size[..., 1, None]
    ends = jnp.stack([cg + hl * a, cg - hl * a], -2)  # (..., 2, 3)
    return rim_square(Rg, ends, size[..., 0], n[..., None, :]).reshape(cg.shape[:-1] + (8, 3))


def segment_cylinder(p, d, r, cc, Rc, size):
    """Capsule (segment ``p + t d``, radius ``r``) against the cylinder: :func:`sphere_cylinder`
    at the point of the segment deepest in the cylinder. The cylinder's signed distance along
    the segment is convex (a convex body's), so a golden-section search finds its minimiser
    ``t*`` (:func:`~jaxdyn.collision.segments.golden_steps` steps, on values without derivatives); the distance at ``t*``
    then has the derivative of the minimum (the envelope theorem: at an interior minimum
    ``d phi / d t = 0``, at an end ``t*`` is fixed)."""
    a0, u0 = (jax.lax.stop_gradient(x) for x in (mtv(Rc, p - cc), mtv(Rc, d)))
    size0 = jax.lax.stop_gradient(size)
    f = lambda t: cylinder_sdf(a0 + t[..., None] * u0, size0)[0]  # noqa: E731
    lo, hi = jnp.zeros(a0.shape[:-1], p.dtype), jnp.ones(a0.shape[:-1], p.dtype)
    t = golden_minimum(f, lo, hi)
    return sphere_cylinder(p + t[..., None] * d, r, cc, Rc, size)


def segment_cylinder_contacts(p, d, r, cc, Rc, size):
    """Capsule against cylinder as three contacts, as :func:`segment_box_contacts`: the two end
    spheres and the segment's deepest point, counted beyond the ends by (B1). Returns the signed
    distances ``(..., 3)``, normals from the cylinder to the capsule ``(..., 3, 3)``, witnesses
    ``(..., 3, 3)`` and the capsule's signed distance ``(...)``."""
    d0, n0, w0 = sphere_cylinder(p, r, cc, Rc, size)
    d1, n1, w1 = sphere_cylinder(p + d, r, cc, Rc, size)
    ds, ns, ws = segment_cylinder(p, d, r, cc, Rc, size)
    di = beyond_ends(ds, d0, d1)
    return jnp.stack([d0, d1, di], -1), jnp.stack([n0, n1, ns], -2), jnp.stack([w0, w1, ws], -2), ds


RIM_GRID = 16  # angles sampled on a rim before the golden-section search


def rim_points(cc, Rc, size, sdf):
    """The rim points of the cylinder ``(cc, Rc, size)`` that meet another shape first. ``sdf``
    maps points ``(..., 2, k, 3)`` to the shape's signed distance and outward unit normal there
    (inputs without derivatives), or is the shape's :class:`~jaxdyn.collision.segments.LocalSDF`. On each disk's rim:

    * the point deepest in the shape (the smallest signed distance): it minimises the distance
      over the rim's angle, which is not convex, so the best of :data:`RIM_GRID` angles, then
      :func:`~jaxdyn.collision.segments.golden_steps` golden-section steps in the bracket of its two neighbours (on values
      without derivatives, to the square root of the dtype's precision; the distance there then
      has the derivative of the minimum, as :func:`segment_cylinder`);
    * 4 points as on the ground (:func:`rim_square`) for the plane of the shape's outward
      normal at its point nearest the rim's centre (a face's normal where the centre is over the
      face): where a rim lies flat on a face (the deepest point is not unique) the 4 points are
      fixed in the cylinder (its x and y axes), so a cylinder resting on a face has a steady
      support, and where it is tilted onto the face they include the deepest point. The normal
      changes continuously while the centre is outside the shape.

    A second search starts from the best local minimum of the grid at least two angles from
    the best one (``second``: whether there is one), for a rim that meets the shape at two
    places. Returns the 4 points of each rim ``(..., 8, 3)``, the deepest points ``(..., 4, 3)``
    (the best and the second of each rim) and ``second`` ``(..., 2)``."""
    dtype = cc.dtype
    a, e1, e2 = Rc[..., :, 2], Rc[..., :, 0], Rc[..., :, 1]
    r, hl = size[..., 0], size[..., 1]
    centres = jnp.stack([cc + hl[..., None] * a, cc - hl[..., None] * a], -2)  # (..., 2, 3)
    # values without derivatives, each rim's points along a last axis: the rims' centres and
    # disk axes in the shape's frame (LocalSDF) or in the world's
    c0, a1, a2 = (jax.lax.stop_gradient(x) for x in (centres, e1, e2))
    if isinstance(sdf, LocalSDF):
        Rs = jax.lax.stop_gradient(sdf.R)
        c0 = mtv(Rs[..., None, :, :], c0 - jax.lax.stop_gradient(sdf.c)[..., None, :])
        a1, a2 = mtv(Rs, a1), mtv(Rs, a2)
        dist = sdf.f
    else:
        dist = sdf
    E1, E2, R = (x[..., None, None, :] for x in (a1, a2, jax.lax.stop_gradient(r)[..., None]))
    C0 = c0[..., None, :]

    step = 2.0 * np.pi / RIM_GRID
    grid = step * np.arange(RIM_GRID)
    cos_g, sin_g = jnp.asarray(np.cos(grid), dtype), jnp.asarray(np.sin(grid), dtype)
    vals = dist(C0 + R * (cos_g[:, None] * E1 + sin_g[:, None] * E2))[0]  # (..., 2, RIM_GRID)
    # the best angle, and the best local minimum of the grid at least two angles away from it
    k1 = jnp.argmin(vals, -1)
    local = (vals <= jnp.roll(vals, 1, -1)) & (vals <= jnp.roll(vals, -1, -1))
    gap = jnp.abs(np.arange(RIM_GRID) - k1[..., None])
    apart = jnp.minimum(gap, RIM_GRID - gap) >= 2
    masked = jnp.where(local & apart, vals, jnp.inf)
    k2 = jnp.argmin(masked, -1)
    second = jnp.isfinite(jnp.take_along_axis(masked, k2[..., None], -1)[..., 0])  # (..., 2)
    # each search on the arc of the angles theta_k +- step about a grid angle theta_k, in the
    # rational parameter u = tan(phi / 2) of phi = theta - theta_k (monotone on the arc, so the
    # distance stays unimodal in it): cos phi = (1 - u^2) / (1 + u^2), sin phi = 2 u / (1 + u^2),
    # the radial direction cos phi D0 + sin phi D1 with D0 (D1) the radial (tangential)
    # direction at theta_k
    k = jnp.stack([k1, k2], -1)  # (..., 2, 2): two searches on each rim
    ck, sk = cos_g[k][..., None], sin_g[k][..., None]  # cos and sin of theta_k

    def axes(e1, e2):  # the radial (D0) and tangential (D1) directions at theta_k
        return ck * e1 + sk * e2, ck * e2 - sk * e1

    def arc(u, d0, d1):  # the unit radial direction at u
        cu, su = (1.0 - u * u) / (1.0 + u * u), 2.0 * u / (1.0 + u * u)
        return cu[..., None] * d0 + su[..., None] * d1

    D = axes(E1, E2)  # out of the search's loop: each evaluation only combines them

    def f(u):  # (..., 2, 2) parameters -> the rim points' signed distances
        return dist(C0 + R * arc(u, *D))[0]

    # to the square root of the precision (golden_steps(smooth=True): 16 steps in float32, not
    # 34): where the distance is smooth at the deepest point its value is then exact to
    # round-off; where it has a kink (a rim point inside a box or a cylinder, as deep below two
    # faces) it is off by at most r 2 tau 0.618^16 (the distance is 1-Lipschitz along the arc,
    # whose angle is 2 atan(u)): 1.8e-4 r, 18 um for r = 10 cm
    tau = float(np.tan(step / 2.0))
    u = golden_minimum(f, jnp.full(k.shape, -tau, dtype), jnp.full(k.shape, tau, dtype), smooth=True)
    radial = arc(u, *axes(e1[..., None, None, :], e2[..., None, None, :]))
    deepest = centres[..., None, :] + r[..., None, None, None] * radial  # (..., 2, 2, 3)
    # the shape's normal at the best point, in world axes
    best = jax.lax.stop_gradient(C0 + R * arc(u, *D))[..., 0, :]  # (..., 2, 3)
    normal = jax.lax.stop_gradient(dist(best[..., None, :])[1][..., 0, :])
    if isinstance(sdf, LocalSDF):
        normal = mv(jax.lax.stop_gradient(sdf.R)[..., None, :, :], normal)
    square = rim_square(Rc, centres, r, normal)  # (..., 2, 4, 3)
    return square.reshape(cc.shape[:-1] + (8, 3)), deepest.reshape(cc.shape[:-1] + (4, 3)), second


def rim_rows(d_sq, n_sq, w_sq, d_deep, n_deep, w_deep, second, r):
    """The 12 contacts of a cylinder's two rims (:func:`rim_points`): the 4 points of each rim,
    then each rim's deepest points (the best and a second local minimum, ``(..., 4)`` in rim
    order) counted beyond the deepest of its 4 (as (B1)), so they act only where they are deeper
    than those (a rim against a curved surface or across an edge) and a rim lying flat rests on
    its 4 points alone. A rim without a second local minimum (``second`` false) gets, in that
    row, its best row's distance (if positive) plus ``r``: no contact. Two symmetric minima (a rim across another rim at
    two points) both act, rather than one of them chosen by round-off."""
    sq_min = jnp.min(d_sq.reshape(d_sq.shape[:-1] + (2, 4)), -1)  # (..., 2)
    d_b1 = d_deep.reshape(d_deep.shape[:-1] + (2, 2)) - jnp.minimum(0.0, sq_min)[..., None]
    # no second minimum: a distance above the first's and positive (no contact, the pair's
    # smallest distance unchanged)
    off = jnp.maximum(d_b1[..., :1], 0.0) + r[..., None, None]
    keep = jnp.stack([jnp.ones_like(second), second], -1)
    d_b1 = jnp.where(keep, d_b1, off).reshape(d_deep.shape)
    return (
        jnp.concatenate([d_sq, d_b1], -1),
        jnp.concatenate([n_sq, n_deep], -2),
        jnp.concatenate([w_sq, w_deep], -2),
    )


def cylinder_sdf_of(cc, Rc, size):
    """The cylinder's signed distance and outward normal in its own frame
    (:class:`~jaxdyn.collision.segments.LocalSDF`), without derivatives (for :func:`rim_points`)."""
    size0 = jax.lax.stop_gradient(size)[..., None, None, :]
    return LocalSDF(cc, Rc, lambda pts: cylinder_sdf(pts, size0))


def cylinder_box_contacts(cc, Rc, size, cb, Rb, h):
    """Cylinder ``(cc, Rc, size)`` against box ``(cb, Rb, half-sizes h)`` as 32 point contacts:

    * the box's 8 corners against the cylinder's exact signed distance (:func:`sphere_cylinder`
      of radius 0);
    * the box's 12 edges, each the interior contact (B1) of a segment of radius 0: the edge's
      point deepest in the cylinder (:func:`segment_cylinder`) counted beyond its corners;
    * the cylinder's rims against the box (:func:`sphere_box` of radius 0): 4 points on each
      rim and each rim's deepest points counted beyond them (:func:`rim_points`,
      :func:`rim_rows`).

    A cylinder standing on a face of the box rests on 4 rim points, lying on its side on the two
    ends of its lowest line, tilted on its lowest rim point, as on the ground; an edge or corner
    of the box against the cylinder acts at its deepest point. Returns signed distances ``(...,
    32)``, unit normals from the cylinder to the box ``(..., 32, 3)``, witnesses ``(..., 32, 3)``
    (corners, edges, the rims' 8 points, the rims' 4 deepest points) and the pair's signed
    distance: the smallest over the edges' and the rims' deepest points, exact where the shapes
    are apart (their closest points are on an edge of the box, or on a face of the box and the
    cylinder's point lowest along the face's normal, which lies on a rim)."""
    dtype = cc.dtype
    zero = jnp.zeros((), dtype)
    x = lambda v: v[..., None, :]  # noqa: E731  one shape per row of points
    X = lambda M: M[..., None, :, :]  # noqa: E731
    # sphere_cylinder's normal points from the cylinder to the point (of the box): kept
    (dc, nc, wc), (seg, ne, we), ends = box_features(
        cb,
        Rb,
        h,
        lambda pts: sphere_cylinder(pts, zero, x(cc), X(Rc), x(size)),
        lambda p, d: segment_cylinder(p, d, zero, x(cc), X(Rc), x(size)),
    )
    de = beyond_ends(seg, ends, ends)
    square, deepest, second = rim_points(cc, Rc, size, box_sdf(cb, Rb, h))
    dr, nr, wr = sphere_box(square, zero, x(cb), X(Rb), x(h))  # the normal from the box to the point
    dd, nd, wd = sphere_box(deepest, zero, x(cb), X(Rb), x(h))
    drim, nrim, wrim = rim_rows(dr, -nr, wr, dd, -nd, wd, second, size[..., 0])
    dist = jnp.concatenate([dc, de, drim], -1)
    normal = jnp.concatenate([nc, ne, nrim], -2)
    witness = jnp.concatenate([wc, we, wrim], -2)
    return dist, normal, witness, jnp.minimum(jnp.min(seg, -1), jnp.min(dd, -1))


def cylinder_cylinder_contacts(c1, R1, s1, c2, R2, s2):
    """Cylinder ``(c1, R1, s1)`` against cylinder ``(c2, R2, s2)`` as 25 point contacts:

    * each cylinder's rims against the other's exact signed distance (:func:`sphere_cylinder` of
      radius 0): 4 points on each rim and each rim's deepest points counted beyond them
      (:func:`rim_points`, :func:`rim_rows`);
    * the first cylinder's side line facing the second (through its rim points in the direction
      of the axes' common perpendicular, Ericson05 5.1.9), the interior contact (B1) of a segment
      of radius 0: its point deepest in the second (:func:`segment_cylinder`) counted beyond its
      ends. Crossing cylinders touch there; the second cylinder's side line is not added, which
      would count that contact twice.

    A cylinder standing on the disk of another rests on its rim points, as on the ground. Returns
    signed distances ``(..., 25)``, unit normals from cylinder 1 to cylinder 2 ``(..., 25, 3)``,
    witnesses ``(..., 25, 3)`` (the rim rows of 1, of 2, the side line) and the pair's signed
    distance: the smallest over the rims' and the side line's deepest points, exact where the
    cylinders are apart (their closest points are on a rim of one of them, or on the sides
    along the axes' common perpendicular)."""
    zero = jnp.zeros((), c1.dtype)
    x = lambda v: v[..., None, :]  # noqa: E731  one shape per row of points
    X = lambda M: M[..., None, :, :]  # noqa: E731
    # sphere_cylinder's normal points from the cylinder to the point: from 2 to the points of 1
    # (so -n from 1 to 2), from 1 to the points of 2 (+n)
    rows, deep = [], []
    for (ca, Ra, sa), (cb, Rb, sb), sign in (((c1, R1, s1), (c2, R2, s2), -1.0), ((c2, R2, s2), (c1, R1, s1), 1.0)):
        square, deepest, second = rim_points(ca, Ra, sa, cylinder_sdf_of(cb, Rb, sb))
        dq, nq, wq = sphere_cylinder(square, zero, x(cb), X(Rb), x(sb))
        dd, nd, wd = sphere_cylinder(deepest, zero, x(cb), X(Rb), x(sb))
        rows.append(rim_rows(dq, sign * nq, wq, dd, sign * nd, wd, second, sa[..., 0]))
        deep.append(jnp.min(dd, -1))
    # the side line of 1 facing 2: through the axes' closest points' direction, across axis 1
    a1, a2 = R1[..., :, 2], R2[..., :, 2]
    p1, d1a = c1 - s1[..., 1, None] * a1, 2.0 * s1[..., 1, None] * a1
    p2, d2a = c2 - s2[..., 1, None] * a2, 2.0 * s2[..., 1, None] * a2
    q1, q2 = _segments(p1, d1a, p2, d2a)
    w = q2 - q1
    w = w - dot(w, a1)[..., None] * a1
    sq = dot(w, w)
    ok = sq > jnp.finfo(w.dtype).tiny
    u = jnp.where(ok[..., None], w / jnp.sqrt(jnp.where(ok, sq, 1.0))[..., None], R1[..., :, 0])
    start = p1 + s1[..., 0, None] * u
    seg, ns, ws = segment_cylinder(start, d1a, zero, c2, R2, s2)
    e0 = sphere_cylinder(start, zero, c2, R2, s2)[0]
    e1 = sphere_cylinder(start + d1a, zero, c2, R2, s2)[0]
    ds = beyond_ends(seg, e0, e1)
    dist = jnp.concatenate([rows[0][0], rows[1][0], ds[..., None]], -1)
    normal = jnp.concatenate([rows[0][1], rows[1][1], -ns[..., None, :]], -2)
    witness = jnp.concatenate([rows[0][2], rows[1][2], ws[..., None, :]], -2)
    return dist, normal, witness, jnp.minimum(jnp.minimum(deep[0], deep[1]), seg)
