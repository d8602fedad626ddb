"""Ellipsoids: a point's closest point (Newton's method on the Lagrange multiplier), so sphere-,
capsule-, box- and cylinder-ellipsoid, and two ellipsoids (the largest separation of their support
functions).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..spatial import mm, mtv, mv, spd_inverse
from .boxes import EDGE_DIRECTION, EDGE_START, box_features, sphere_box
from .cylinders import rim_points, rim_rows, sphere_cylinder
from .segments import beyond_ends, dot, golden_minimum, length

ELLIPSOID_STEPS = 24  # Newton steps for a point's closest point on an ellipsoid (monotone)


def ellipsoid_closest(y, a):
    """The point ``x`` of the ellipsoid ``sum (x_i / a_i)^2 = 1`` (semi-axes ``a``, its own frame)
    closest to ``y``, and the outward unit normal there, ``unit(x / a^2)``. The closest point
    is ``x_i = a_i^2 y_i / (a_i^2 + t)`` with ``t`` the root of ``psi(t) = 1 / |v(t)| - 1``,
    ``v_i = a_i y_i / (a_i^2 + t)`` (the Lagrange condition, Eberly's "distance from a point to
    an ellipsoid"): ``psi`` is increasing and concave on ``t > -a_min^2`` (``1 / |v|`` is a power
    mean of order -2 of the linear ``(a_i^2 + t) / (a_i |y_i|)``), so it has one root there and
    Newton's method from the lower bound ``max_i (a_i |y_i| - a_i^2)`` rises to it monotonically
    (:data:`ELLIPSOID_STEPS` steps, without derivatives; for a sphere one step is exact). One more
    Newton step with derivatives gives ``t`` the derivative of the root (implicit function
    theorem). Outside points have ``t >= 0``, inside points ``t < 0``. Where the root would lie
    at ``-a_min^2`` (a point deep inside, on the plane of the shortest axis, with two closest
    points) the shortest axis' coordinate takes what the others leave, with ``y``'s sign."""
    dtype = y.dtype
    a2 = a * a
    k = jnp.argmin(a, -1)
    short = jax.nn.one_hot(k, 3, dtype=dtype)
    floor = -jnp.take_along_axis(a2, k[..., None], -1)[..., 0] * (1.0 - 1e-6)
    tiny = jnp.finfo(dtype).tiny

    def psi(t, y, a, a2):  # psi and its derivative
        den = a2 + t[..., None]
        v = a * y / den
        vv = dot(v, v)
        ok = vv > tiny
        inv = jnp.where(ok, jax.lax.rsqrt(jnp.where(ok, vv, 1.0)), 0.0)
        slope = dot(v, v / den) * inv**3
        return jnp.where(ok, inv - 1.0, 1.0), jnp.where(ok, slope, 1.0)

    y0, a0, a20 = (jax.lax.stop_gradient(x) for x in (y, a, a2))
    t0 = jnp.maximum(jnp.max(a0 * jnp.abs(y0) - a20, -1), jax.lax.stop_gradient(floor))

    def step(_, t):
        f, df = psi(t, y0, a0, a20)
        return jnp.maximum(t - f / df, jax.lax.stop_gradient(floor))

    t = jax.lax.fori_loop(0, ELLIPSOID_STEPS, step, t0)
    at_floor = t - jax.lax.stop_gradient(floor) <= -1e-6 * jax.lax.stop_gradient(floor)
    f, df = psi(t, y, a, a2)
    t = jnp.where(at_floor, floor, jnp.maximum(t - f / jax.lax.stop_gradient(df), floor))
    x = a2 * y / (a2 + t[..., None])
    others = x * (1.0 - short)  # at the floor: the shortest axis takes what the others leave
    q = others / a
    left = 1.0 - dot(q, q)
    deep = at_floor & (left > 0)
    fill = jnp.where(deep, jnp.sqrt(jnp.where(deep, left, 1.0)), 0.0) * jnp.where(dot(y, short) >= 0, 1.0, -1.0)
    fill = fill * jnp.take_along_axis(a, k[..., None], -1)[..., 0]
    x = jnp.where(at_floor[..., None], others + fill[..., None] * short, x)
    _, n, _ = length(x / a2)
    return x, n


def ellipsoid_distance(p, ce, Re, a):
    """Signed distance of the points ``p`` to the ellipsoids ``(ce, Re, semi-axes a)``, the unit
    outward normal at the closest surface point, and that point (world frame;
    :func:`ellipsoid_closest`): ``(y - x) . n`` in the ellipsoid's frame, ``|y - x|`` outside."""
    y = mtv(Re, p - ce)
    x, n = ellipsoid_closest(y, a)
    return dot(y - x, n), mv(Re, n), ce + mv(Re, x)


def sphere_ellipsoid(c, r, ce, Re, a):
    """Sphere ``(c, r)`` against the ellipsoid: signed distance, unit normal from the ellipsoid
    to the sphere, witness midway between the surfaces (exact, :func:`ellipsoid_distance`)."""
    sd, n, s = ellipsoid_distance(c, ce, Re, a)
    return sd - r, n, 0.5 * (s + c - r[..., None] * n)


def segment_ellipsoid(p, d, r, ce, Re, a):
    """Capsule (segment ``p + t d``, radius ``r``) against the ellipsoid: :func:`sphere_ellipsoid`
    at the segment's point deepest in it, the minimiser of the ellipsoid's signed distance along
    the segment (convex), by golden section (as :func:`segment_cylinder`)."""
    p0, d0, ce0, Re0, a0 = (jax.lax.stop_gradient(x) for x in (p, d, ce, Re, a))
    f = lambda t: ellipsoid_distance(p0 + t[..., None] * d0, ce0, Re0, a0)[0]  # noqa: E731
    lo, hi = jnp.zeros(p.shape[:-1], p.dtype), jnp.ones(p.shape[:-1], p.dtype)
    t = golden_minimum(f, lo, hi)
    return sphere_ellipsoid(p + t[..., None] * d, r, ce, Re, a)


def segment_ellipsoid_contacts(p, d, r, ce, Re, a):
    """Capsule against ellipsoid as three contacts, as :func:`segment_box_contacts`: the two end
    spheres and the segment's deepest point counted beyond them (B1). Returns signed distances
    ``(..., 3)``, normals from the ellipsoid to the capsule ``(..., 3, 3)``, witnesses and the
    capsule's signed distance ``(...)``."""
    d0, n0, w0 = sphere_ellipsoid(p, r, ce, Re, a)
    d1, n1, w1 = sphere_ellipsoid(p + d, r, ce, Re, a)
    ds, ns, ws = segment_ellipsoid(p, d, r, ce, Re, a)
    di = beyond_ends(ds, d0, d1)
    return jnp.stack([d0, d1, di], -1), jnp.stack([n0, n1, ns], -2), jnp.stack([w0, w1, ws], -2), ds


def ellipsoid_support(R, a, n):
    """The support function of ellipsoids (rotation ``R``, semi-axes ``a``) at the directions ``n``
    and their support offsets: ``|A R^T n|`` and ``R A^2 R^T n / |A R^T n|``, the point of the
    ellipsoid farthest along ``n`` less its centre (its gradient; a sphere's ``r n``). Also the
    divisor used, ``|A R^T n|`` or 1 where it underflows (a zero-size ellipsoid, offset 0)."""
    m = mtv(R, n)
    sq = dot(a * m, a * m)
    ok = sq > jnp.finfo(sq.dtype).tiny
    r = jnp.where(ok, jnp.sqrt(jnp.where(ok, sq, 1.0)), 0.0)
    safe = jnp.where(ok, r, 1.0)
    return r, mv(R, a * a * m) / safe[..., None], safe


SUPPORT_STEPS = 30  # Newton steps on the sphere of directions for two ellipsoids


def ellipsoid_ellipsoid(c1, R1, a1, c2, R2, a2):
    """Two ellipsoids ``(c, R, semi-axes a)``: signed distance, unit normal from the first to the
    second, and witness midway between the surfaces. The separation along a unit direction ``n``
    is ``f(n) = (c2 - c1) . n - |A1 R1^T n| - |A2 R2^T n|`` (the support functions: the first's
    farthest point along ``n`` is ``c1 + R1 A1^2 R1^T n / |A1 R1^T n|``), and the signed distance
    is its maximum over unit ``n``: the distance where they are apart, minus the minimum
    translation where they overlap. ``f`` is concave (a linear function less two norms), so for
    shapes apart its maximum on the sphere is unique; Newton's method on the sphere from the
    centre line finds it (:data:`SUPPORT_STEPS` steps without derivatives, each at most 0.5 rad,
    with the tangent Hessian ``P f'' P - f P``, shifted to stay negative definite where ``f < 0``);
    one more step with derivatives gives the direction's derivative (implicit function theorem)
    and ``f`` there the distance's (envelope theorem)."""
    dtype = c1.dtype
    eye = jnp.eye(3, dtype=dtype)

    def parts(n, R, a):  # |A R^T n|, its gradient (the support offset) and Hessian
        r, g, safe = ellipsoid_support(R, a, n)
        Q = mm(R * (a * a)[..., None, :], jnp.swapaxes(R, -1, -2))
        return r, g, (Q - g[..., :, None] * g[..., None, :]) / safe[..., None, None]

    def newton(n, dc, R1, a1, R2, a2, exact):  # f at n and the Newton step for its maximum
        r1, g1, H1 = parts(n, R1, a1)
        r2, g2, H2 = parts(n, R2, a2)
        f = dot(dc, n) - r1 - r2
        grad = dc - g1 - g2
        grad = grad - dot(grad, n)[..., None] * n  # on the tangent plane
        nn = n[..., :, None] * n[..., None, :]
        P = eye - nn
        shift = f if exact else jnp.abs(f)
        negH = mm(mm(P, H1 + H2), P) + shift[..., None, None] * P + nn  # minus the tangent Hessian
        return f, mv(spd_inverse(jax.lax.stop_gradient(negH)), grad)

    fixed = tuple(jax.lax.stop_gradient(x) for x in (c2 - c1, R1, a1, R2, a2))
    _, n0, _ = length(fixed[0])

    def step(_, n):
        s = newton(n, *fixed, False)[1]
        size = jnp.sqrt(dot(s, s))
        return length(n + s * jnp.minimum(1.0, 0.5 / jnp.maximum(size, 1e-30))[..., None])[1]

    n = jax.lax.fori_loop(0, SUPPORT_STEPS, step, n0)
    n = length(n + newton(n, c2 - c1, R1, a1, R2, a2, True)[1])[1]  # with derivatives
    r1, g1, _ = ellipsoid_support(R1, a1, n)
    r2, g2, _ = ellipsoid_support(R2, a2, n)
    return dot(c2 - c1, n) - r1 - r2, n, 0.5 * ((c1 + g1) + (c2 - g2))


def _edge_faces():
    """The two faces (indices in the order -x, +x, -y, +y, -z, +z) that meet at each edge of
    :data:`~jaxdyn.collision.boxes.EDGE_START`."""
    out = []
    for s, d in zip(EDGE_START, EDGE_DIRECTION):
        j = int(np.argmax(np.abs(d)))
        out.append([2 * k + int(s[k] > 0) for k in range(3) if k != j])
    return np.asarray(out)


_EDGE_FACES = _edge_faces()


def ellipsoid_box_contacts(ce, Re, a, cb, Rb, h):
    """Ellipsoid ``(ce, Re, semi-axes a)`` against box ``(cb, Rb, half-sizes h)`` as 26 point
    contacts, as :func:`jaxdyn.collision.cylinders.cylinder_box_contacts`:

    * the box's 8 corners against the ellipsoid's exact signed distance (:func:`sphere_ellipsoid`
      of radius 0);
    * the box's 12 edges, each the interior contact (B1) of a segment of radius 0: the edge's
      point deepest in the ellipsoid (:func:`segment_ellipsoid`) counted beyond its corners and
      beyond the support points of its two faces (below), so an ellipsoid resting on a face near
      an edge rests on its support point alone, and an edge acts where the ellipsoid hangs over it;
    * the ellipsoid's 6 support points along the inward normals of the box's faces, its points
      deepest through each face's plane (:func:`ellipsoid_support`), against the box
      (:func:`~jaxdyn.collision.boxes.sphere_box` of radius 0).

    An ellipsoid resting on a face of the box acts at its lowest point along the face's normal,
    as on the ground; an edge or corner of the box against the ellipsoid acts at its deepest
    point. Returns signed distances ``(..., 26)``, unit normals from the ellipsoid to the box
    ``(..., 26, 3)``, witnesses ``(..., 26, 3)`` (corners, edges, support points) and the pair's
    signed distance: the smallest over the edges' deepest points and the support points, exact
    where the shapes are apart (their closest points are on an edge of the box, or on a face of
    the box and the ellipsoid's point lowest along the face's normal)."""
    dtype = ce.dtype
    zero = jnp.zeros((), dtype)
    x = lambda v: v[..., None, :]  # noqa: E731  one shape per row of points
    X = lambda M: M[..., None, :, :]  # noqa: E731
    # sphere_ellipsoid's normal points from the ellipsoid to the point (of the box): kept
    (dc, nc, wc), (seg, ne, we), corner_ends = box_features(
        cb,
        Rb,
        h,
        lambda pts: sphere_ellipsoid(pts, zero, x(ce), X(Re), x(a)),
        lambda p, d: segment_ellipsoid(p, d, zero, x(ce), X(Re), x(a)),
    )
    # the faces' inward normals -sigma R e_i (faces -x, +x, -y, +y, -z, +z)
    inward = -jnp.swapaxes(Rb, -1, -2)[..., [0, 0, 1, 1, 2, 2], :] * jnp.asarray([-1.0, 1.0] * 3, dtype)[:, None]
    _, offset, _ = ellipsoid_support(X(Re), x(a), inward)
    ds, ns, ws = sphere_box(x(ce) + offset, zero, x(cb), X(Rb), x(h))  # the normal from the box to the point
    # an edge counted beyond its corners and beyond the support points of its two faces (B1)
    de = beyond_ends(seg, corner_ends, jnp.minimum(ds[..., _EDGE_FACES[:, 0]], ds[..., _EDGE_FACES[:, 1]]))
    dist = jnp.concatenate([dc, de, ds], -1)
    normal = jnp.concatenate([nc, ne, -ns], -2)
    witness = jnp.concatenate([wc, we, ws], -2)
    return dist, normal, witness, jnp.minimum(jnp.min(seg, -1), jnp.min(ds, -1))


def ellipsoid_sdf_of(ce, Re, a):
    """The ellipsoid's signed distance and outward normal as a function of points ``(..., 2, k,
    3)``, without derivatives (for :func:`~jaxdyn.collision.cylinders.rim_points`)."""
    ce0, a0 = (jax.lax.stop_gradient(x)[..., None, None, :] for x in (ce, a))
    Re0 = jax.lax.stop_gradient(Re)[..., None, None, :, :]

    def sdf(pts):
        dist, n, _ = ellipsoid_distance(pts, ce0, Re0, a0)
        return dist, n

    return sdf


def ellipsoid_cylinder_contacts(ce, Re, a, cc, Rc, size):
    """Ellipsoid ``(ce, Re, semi-axes a)`` against cylinder ``(cc, Rc, size)`` as 15 point
    contacts, as :func:`jaxdyn.collision.cylinders.cylinder_cylinder_contacts`:

    * the cylinder's rims against the ellipsoid's exact signed distance (:func:`sphere_ellipsoid`
      of radius 0): 4 points on each rim and each rim's deepest points counted beyond them
      (:func:`~jaxdyn.collision.cylinders.rim_points`, :func:`~jaxdyn.collision.cylinders.
      rim_rows`), and all of a rim's rows counted beyond its disk's support point (next);
    * the ellipsoid's 2 support points along the disks' inward normals, its points deepest
      through each disk's plane (:func:`ellipsoid_support`), against the cylinder
      (:func:`~jaxdyn.collision.cylinders.sphere_cylinder` of radius 0);
    * the cylinder's side line facing the ellipsoid (through the rims' points in the direction,
      across the axis, from the axis's point nearest the ellipsoid to the ellipsoid), the
      interior contact (B1) of a segment of radius 0: its point deepest in the ellipsoid
      (:func:`segment_ellipsoid`) counted beyond its ends.

    An ellipsoid on a disk acts at its lowest point along the disk's normal, against the side at
    the side line's deepest point, and a rim against the ellipsoid at the rim's deepest point.
    Returns signed distances ``(..., 15)``, unit normals from the ellipsoid to the cylinder
    ``(..., 15, 3)``, witnesses ``(..., 15, 3)`` (the rim rows, the support points, the side
    line) and the pair's signed distance: the smallest over the rims' deepest points, the
    support points and the side line's deepest point, exact where the shapes are apart (their
    closest points are on a rim, on a disk and the ellipsoid's point lowest along its normal, or
    on the side line facing the ellipsoid)."""
    dtype = ce.dtype
    zero = jnp.zeros((), dtype)
    x = lambda v: v[..., None, :]  # noqa: E731  one shape per row of points
    X = lambda M: M[..., None, :, :]  # noqa: E731
    r, hl = size[..., 0], size[..., 1]
    axis = Rc[..., :, 2]
    # the ellipsoid's points deepest through the disks' planes (disk 0 at +hl: inward -axis)
    _, offset, _ = ellipsoid_support(X(Re), x(a), jnp.stack([-axis, axis], -2))
    dsup, nsup, wsup = sphere_cylinder(x(ce) + offset, zero, x(cc), X(Rc), x(size))  # normals cylinder -> point
    # the rims (rim 0 at +hl), each counted beyond its disk's support point
    square, deepest, second = rim_points(cc, Rc, size, ellipsoid_sdf_of(ce, Re, a))
    dq, nq, wq = sphere_ellipsoid(square, zero, x(ce), X(Re), x(a))  # normals ellipsoid -> rim point
    dd, nd, wd = sphere_ellipsoid(deepest, zero, x(ce), X(Re), x(a))
    drim, nrim, wrim = rim_rows(dq, nq, wq, dd, nd, wd, second, r)
    rim_of_row = np.asarray([0] * 4 + [1] * 4 + [0, 0, 1, 1])  # rim_rows: 4 + 4 points, 2 + 2 deepest
    drim = drim - jnp.minimum(0.0, dsup[..., rim_of_row])
    # the side line facing the ellipsoid
    p, d = cc - hl[..., None] * axis, 2.0 * hl[..., None] * axis
    _, n_axis, _ = segment_ellipsoid(p, d, zero, ce, Re, a)  # from the ellipsoid to the axis
    w = -n_axis - dot(-n_axis, axis)[..., None] * axis
    sq = dot(w, w)
    ok = sq > jnp.finfo(dtype).tiny
    u = jnp.where(ok[..., None], w / jnp.sqrt(jnp.where(ok, sq, 1.0))[..., None], Rc[..., :, 0])
    start = p + r[..., None] * u
    side, nside, wside, seg = segment_ellipsoid_contacts(start, d, zero, ce, Re, a)  # ends, then (B1)
    dside, ns, ws = side[..., 2], nside[..., 2, :], wside[..., 2, :]
    dist = jnp.concatenate([drim, dsup, dside[..., None]], -1)
    normal = jnp.concatenate([nrim, -nsup, ns[..., None, :]], -2)
    witness = jnp.concatenate([wrim, wsup, ws[..., None, :]], -2)
    return dist, normal, witness, jnp.minimum(jnp.minimum(jnp.min(dd, -1), jnp.min(dsup, -1)), seg)
