"""Narrow-phase geometry of the contact model (:mod:`jaxdyn.contact`): signed distances, unit
normals and witness points between primitive shapes, each kind of pair evaluated for all its
pairs at once (batched array arithmetic, no Python per pair, no branch on data).

* sphere-sphere: the centre line (:func:`_spheres`);
* capsules are spheres swept along a segment: closest points of a segment to a point and of two
  segments (Ericson05 5.1.2, 5.1.9; :func:`_segment_point`, :func:`_segments`), the segment of a
  capsule geom (:func:`_segment_of`);
* sphere-box: the closest point of the box, or the nearest face for a centre inside
  (:func:`_sphere_box`); capsule-box: sphere-box at the segment's point deepest in the box,
  found exactly among 29 candidates (:func:`_capsule_box`);
* the contacts of a pair: capsule-box as its two end spheres and its interior counted beyond
  the ends, (B1) (:func:`_segment_box_contacts`); box-box as the corners of each box and the
  (B1) interior contacts of its edges against the other (:func:`_box_box_contacts`);
  cylinder-box as the box's corners and the (B1) interior contacts of its edges against the
  cylinder, and the cylinder's rims against the box, four points on each and its deepest point
  (:func:`_cylinder_box_contacts`, :func:`_rim_points`); cylinder-cylinder as the rims
  of each against the other and the side line of the first facing the second
  (:func:`_cylinder_cylinder_contacts`);
* a mesh's convex hull (outward triangles): its exact signed distance (:func:`_hull_distance`:
  the faces' planes inside, the nearest triangle outside, Ericson05 5.1.5), against a sphere
  and a capsule as against a box, and against a box or a cylinder with its vertices and edges
  deepest in the other shape (:func:`_box_hull_contacts`, :func:`_cylinder_hull_contacts`);
* an ellipsoid: a point's closest point on it by Newton's method on the Lagrange multiplier
  (:func:`_ellipsoid_closest`), so its exact signed distance against a sphere and, along a
  capsule's segment by golden section, against a capsule (:func:`_segment_ellipsoid_contacts`);
  two ellipsoids: the largest separation of their support functions over directions, by Newton's
  method on the sphere (:func:`_ellipsoid_ellipsoid`), the distance apart and the minimum
  translation overlapping.

Every normalisation is guarded (a fallback direction where a length is zero), so the
derivatives are finite at coincident centres, parallel segments and points on a face or an
edge; the module docstring of :mod:`jaxdyn.contact.laws` states what is continuous.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .spatial import cross, mm, mtv, mv, spd_inverse

# small batched helpers (explicit sums, as jaxdyn.spatial, for XLA CPU)


def _dot(a, b):
    return a[..., 0] * b[..., 0] + a[..., 1] * b[..., 1] + a[..., 2] * b[..., 2]


def _length(x):
    """``|x|`` and ``x / |x|`` (the fallback ``e_z`` where ``|x|`` underflows), with finite
    derivatives at ``x = 0``; also returns where the length is usable."""
    sq = _dot(x, x)
    ok = sq > jnp.finfo(x.dtype).tiny
    n = jnp.where(ok, jnp.sqrt(jnp.where(ok, sq, 1.0)), 0.0)
    ez = jnp.zeros_like(x).at[..., 2].set(1.0)
    return n, jnp.where(ok[..., None], x / jnp.where(ok, n, 1.0)[..., None], ez), ok


def _unit(n):
    return n / jnp.sqrt(_dot(n, n))


def _spheres(c1, r1, c2, r2):
    """Signed distance, unit normal (1 to 2; ``e_z`` for coincident centres) and witness
    midway between the surfaces, of spheres ``(c1, r1)`` and ``(c2, r2)``."""
    d, n, _ = _length(c2 - c1)
    dist = d - r1 - r2
    point = 0.5 * (c1 + c2) + (0.5 * (r1 - r2))[..., None] * n
    return dist, n, point


def _segment_point(p, d, c):
    """Closest point to ``c`` of the segment ``p + t d``, ``t`` in [0, 1] (Ericson05 5.1.2)."""
    e = _dot(d, d)
    ok = e > jnp.finfo(e.dtype).tiny
    t = jnp.clip(_dot(c - p, d) / jnp.where(ok, e, 1.0), 0.0, 1.0)
    return p + jnp.where(ok, t, 0.0)[..., None] * d


def _segments(p1, d1, p2, d2):
    """Closest points of the segments ``p1 + s d1`` and ``p2 + t d2`` (``s, t`` in [0, 1]):
    Ericson05 5.1.9 (the closest points of the lines, ``s`` clamped, ``t`` from ``s`` and
    clamped, ``s`` again from a clamped ``t``). For (near-)parallel segments
    (``|d1 x d2|^2 <= tol |d1|^2 |d2|^2``) ``s`` starts at the midpoint of the overlap of the
    two segments along the first instead of the closest points of the lines."""
    s, t = _segment_params(p1, d1, p2, d2)
    return p1 + s[..., None] * d1, p2 + t[..., None] * d2


def _segment_params(p1, d1, p2, d2):
    """The parameters ``(s, t)`` of the closest points of :func:`_segments`."""
    dtype = p1.dtype
    tiny = jnp.finfo(dtype).tiny
    r = p1 - p2
    a, e, b = _dot(d1, d1), _dot(d2, d2), _dot(d1, d2)
    c, f = _dot(d1, r), _dot(d2, r)
    a_ok, e_ok = a > tiny, e > tiny
    a_s, e_s = jnp.where(a_ok, a, 1.0), jnp.where(e_ok, e, 1.0)
    denom = a * e - b * b
    par = denom <= 64 * jnp.finfo(dtype).eps * a * e
    s_line = (b * f - c * e) / jnp.where(par, 1.0, denom)
    s_p2, s_q2 = -c / a_s, (b - c) / a_s  # segment 2's ends projected on segment 1
    lo = jnp.maximum(jnp.minimum(s_p2, s_q2), 0.0)
    hi = jnp.minimum(jnp.maximum(s_p2, s_q2), 1.0)
    s = jnp.where(a_ok, jnp.clip(jnp.where(par, 0.5 * (lo + hi), s_line), 0.0, 1.0), 0.0)
    t = jnp.where(e_ok, (b * s + f) / e_s, 0.0)
    tc = jnp.clip(t, 0.0, 1.0)
    s = jnp.where(a_ok & (t != tc), jnp.clip((b * tc - c) / a_s, 0.0, 1.0), s)
    return s, tc


def _segment_of(Rg, cg, size):
    """A capsule's segment: start and direction (its axis is the geom's z, half-length size[1])."""
    a = Rg[..., :, 2] * size[..., 1, None]
    return cg - a, 2.0 * a


def _sphere_box(c, r, cb, Rb, h):
    """Sphere ``(c, r)`` against the box ``(cb, Rb, half-sizes h)``: signed distance, unit
    normal from the box to the sphere, and witness. Outside, the box point nearest to ``c``
    (Ericson05 5.1.4); inside, the nearest face."""
    l = mtv(Rb, c - cb)
    lc = jnp.clip(l, -h, h)
    d_out, n_out, ok = _length(l - lc)
    outside = jnp.any(jnp.abs(l) > h, -1) & ok
    gap = h - jnp.abs(l)  # distances to the faces, inside
    k = jnp.argmin(gap, -1)
    # the nearest face's gap by its index: jnp.min's derivative divides by the number of
    # elements equal to the minimum, 0/0 where a compiled program recomputes them differently
    g_min = jnp.take_along_axis(gap, k[..., None], -1)[..., 0]
    n_in = jax.nn.one_hot(k, 3, dtype=l.dtype) * jnp.where(l >= 0, 1.0, -1.0)
    sd = jnp.where(outside, d_out, -g_min)
    n_loc = jnp.where(outside[..., None], n_out, n_in)
    s_loc = jnp.where(outside[..., None], lc, l + g_min[..., None] * n_in)
    n = mv(Rb, n_loc)
    point = 0.5 * (cb + mv(Rb, s_loc) + c - r[..., None] * n)
    return sd - r, n, point


def _cylinder_sdf(l, size):
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


def _sphere_cylinder(c, r, cc, Rc, size):
    """Sphere ``(c, r)`` against the cylinder ``(cc, Rc, size)``: signed distance, unit normal
    from the cylinder to the sphere, and witness midway between the surfaces
    (:func:`_cylinder_sdf`; exact, also for a centre inside)."""
    sd, n_loc = _cylinder_sdf(mtv(Rc, c - cc), size)
    n = mv(Rc, n_loc)
    surface = c - sd[..., None] * n  # the cylinder's surface point nearest to the centre
    point = 0.5 * (surface + c - r[..., None] * n)
    return sd - r, n, point


def _rim_square(Rg, centres, r, n):
    """4 points on each rim of the cylinders ``Rg`` (axis ``a``, the geom's z) centred at
    ``centres`` ``(..., k, 3)`` with radius ``r`` ``(...)``, that meet a plane of normal ``n``
    ``(..., k, 3)`` first: the point lowest along ``n`` (``u``, the in-disk direction of steepest
    descent), the point opposite and the two between (``+-v``, ``v = a x u``); ``u`` falls back
    to the geom's x axis where ``n`` is along ``a``. Returns ``(..., k, 4, 3)``."""
    a, ex = Rg[..., None, :, 2], Rg[..., None, :, 0]
    w = _dot(n, a)[..., None] * a - n  # the in-disk direction of steepest descent along -n
    sq = _dot(w, w)
    ok = sq > jnp.finfo(w.dtype).tiny
    u = jnp.where(ok[..., None], w / jnp.sqrt(jnp.where(ok, sq, 1.0))[..., None], ex)
    v = cross(a, u)
    return centres[..., None, :] + r[..., None, None, None] * jnp.stack([u, v, -u, -v], -2)


def _cylinder_rims(Rg, cg, size, n):
    """The 8 rim points of each cylinder that meet a plane of normal ``n`` first (the ground's
    contact points, module docstring of :mod:`jaxdyn.contact.ground`; :func:`_rim_square` on both
    rims). Returns ``(..., 8, 3)``."""
    a, hl = Rg[..., :, 2], size[..., 1, None]
    ends = jnp.stack([cg + hl * a, cg - hl * a], -2)  # (..., 2, 3)
    return _rim_square(Rg, ends, size[..., 0], n[..., None, :]).reshape(cg.shape[:-1] + (8, 3))


GOLDEN_STEPS = 64  # golden-section steps: the bracket shrinks by 0.618^64 = 4e-14


def _segment_cylinder(p, d, r, cc, Rc, size):
    """Capsule (segment ``p + t d``, radius ``r``) against the cylinder: :func:`_sphere_cylinder`
    at the point of the segment deepest in the cylinder. The cylinder's signed distance along
    the segment is convex (a convex body's), so a golden-section search finds its minimiser
    ``t*`` (:data:`GOLDEN_STEPS` steps, on values without derivatives); the distance at ``t*``
    then has the derivative of the minimum (the envelope theorem: at an interior minimum
    ``d phi / d t = 0``, at an end ``t*`` is fixed)."""
    a0, u0 = (jax.lax.stop_gradient(x) for x in (mtv(Rc, p - cc), mtv(Rc, d)))
    size0 = jax.lax.stop_gradient(size)
    f = lambda t: _cylinder_sdf(a0 + t[..., None] * u0, size0)[0]  # noqa: E731
    lo, hi = jnp.zeros(a0.shape[:-1], p.dtype), jnp.ones(a0.shape[:-1], p.dtype)
    t = _golden_minimum(f, lo, hi)
    return _sphere_cylinder(p + t[..., None] * d, r, cc, Rc, size)


def _golden_minimum(f, lo, hi):
    """The minimiser of ``f`` (elementwise over arrays of arguments) in the bracket ``[lo, hi]``
    by :data:`GOLDEN_STEPS` golden-section steps (exact for a unimodal ``f``; one new evaluation
    a step), returned without derivatives: the caller evaluates its distance there, whose
    derivative is then the minimum's (the envelope theorem)."""
    g = (5.0**0.5 - 1.0) / 2.0  # a Python float: weakly typed, keeps float32 float32
    x1, x2 = hi - g * (hi - lo), lo + g * (hi - lo)

    def step(_, s):  # the bracket [lo, hi] with its two inner points
        lo, hi, x1, x2, f1, f2 = s
        left = f1 <= f2  # the minimum lies in [lo, x2]: x1 becomes the upper inner point
        lo, hi = jnp.where(left, lo, x1), jnp.where(left, x2, hi)
        new = jnp.where(left, hi - g * (hi - lo), lo + g * (hi - lo))
        fn = f(new)
        x1, x2 = jnp.where(left, new, x2), jnp.where(left, x1, new)
        f1, f2 = jnp.where(left, fn, f2), jnp.where(left, f1, fn)
        return lo, hi, x1, x2, f1, f2

    lo, hi, *_ = jax.lax.fori_loop(0, GOLDEN_STEPS, step, (lo, hi, x1, x2, f(x1), f(x2)))
    return jax.lax.stop_gradient(0.5 * (lo + hi))


def _segment_cylinder_contacts(p, d, r, cc, Rc, size):
    """Capsule against cylinder as three contacts, as :func:`_segment_box_contacts`: the two end
    spheres and the segment's deepest point, counted beyond the ends by (B1). Returns the signed
    distances ``(..., 3)``, normals from the cylinder to the capsule ``(..., 3, 3)``, witnesses
    ``(..., 3, 3)`` and the capsule's signed distance ``(...)``."""
    d0, n0, w0 = _sphere_cylinder(p, r, cc, Rc, size)
    d1, n1, w1 = _sphere_cylinder(p + d, r, cc, Rc, size)
    ds, ns, ws = _segment_cylinder(p, d, r, cc, Rc, size)
    di = _beyond_ends(ds, d0, d1)
    return jnp.stack([d0, d1, di], -1), jnp.stack([n0, n1, ns], -2), jnp.stack([w0, w1, ws], -2), ds


ELLIPSOID_STEPS = 24  # Newton steps for a point's closest point on an ellipsoid (monotone)


def _ellipsoid_closest(y, a):
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
        vv = _dot(v, v)
        ok = vv > tiny
        inv = jnp.where(ok, jax.lax.rsqrt(jnp.where(ok, vv, 1.0)), 0.0)
        slope = _dot(v, v / den) * inv**3
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
    left = 1.0 - _dot(q, q)
    deep = at_floor & (left > 0)
    fill = jnp.where(deep, jnp.sqrt(jnp.where(deep, left, 1.0)), 0.0) * jnp.where(_dot(y, short) >= 0, 1.0, -1.0)
    fill = fill * jnp.take_along_axis(a, k[..., None], -1)[..., 0]
    x = jnp.where(at_floor[..., None], others + fill[..., None] * short, x)
    _, n, _ = _length(x / a2)
    return x, n


def _ellipsoid_distance(p, ce, Re, a):
    """Signed distance of the points ``p`` to the ellipsoids ``(ce, Re, semi-axes a)``, the unit
    outward normal at the closest surface point, and that point (world frame;
    :func:`_ellipsoid_closest`): ``(y - x) . n`` in the ellipsoid's frame, ``|y - x|`` outside."""
    y = mtv(Re, p - ce)
    x, n = _ellipsoid_closest(y, a)
    return _dot(y - x, n), mv(Re, n), ce + mv(Re, x)


def _sphere_ellipsoid(c, r, ce, Re, a):
    """Sphere ``(c, r)`` against the ellipsoid: signed distance, unit normal from the ellipsoid
    to the sphere, witness midway between the surfaces (exact, :func:`_ellipsoid_distance`)."""
    sd, n, s = _ellipsoid_distance(c, ce, Re, a)
    return sd - r, n, 0.5 * (s + c - r[..., None] * n)


def _segment_ellipsoid(p, d, r, ce, Re, a):
    """Capsule (segment ``p + t d``, radius ``r``) against the ellipsoid: :func:`_sphere_ellipsoid`
    at the segment's point deepest in it, the minimiser of the ellipsoid's signed distance along
    the segment (convex), by golden section (as :func:`_segment_cylinder`)."""
    p0, d0, ce0, Re0, a0 = (jax.lax.stop_gradient(x) for x in (p, d, ce, Re, a))
    f = lambda t: _ellipsoid_distance(p0 + t[..., None] * d0, ce0, Re0, a0)[0]  # noqa: E731
    lo, hi = jnp.zeros(p.shape[:-1], p.dtype), jnp.ones(p.shape[:-1], p.dtype)
    t = _golden_minimum(f, lo, hi)
    return _sphere_ellipsoid(p + t[..., None] * d, r, ce, Re, a)


def _segment_ellipsoid_contacts(p, d, r, ce, Re, a):
    """Capsule against ellipsoid as three contacts, as :func:`_segment_box_contacts`: the two end
    spheres and the segment's deepest point counted beyond them (B1). Returns signed distances
    ``(..., 3)``, normals from the ellipsoid to the capsule ``(..., 3, 3)``, witnesses and the
    capsule's signed distance ``(...)``."""
    d0, n0, w0 = _sphere_ellipsoid(p, r, ce, Re, a)
    d1, n1, w1 = _sphere_ellipsoid(p + d, r, ce, Re, a)
    ds, ns, ws = _segment_ellipsoid(p, d, r, ce, Re, a)
    di = _beyond_ends(ds, d0, d1)
    return jnp.stack([d0, d1, di], -1), jnp.stack([n0, n1, ns], -2), jnp.stack([w0, w1, ws], -2), ds


SUPPORT_STEPS = 30  # Newton steps on the sphere of directions for two ellipsoids


def _ellipsoid_ellipsoid(c1, R1, a1, c2, R2, a2):
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
        a2 = a * a
        m = mtv(R, n)
        sq = _dot(a * m, a * m)
        ok = sq > jnp.finfo(dtype).tiny
        r = jnp.where(ok, jnp.sqrt(jnp.where(ok, sq, 1.0)), 1.0)
        g = mv(R, a2 * m) / r[..., None]
        Q = mm(R * a2[..., None, :], jnp.swapaxes(R, -1, -2))
        return r, g, (Q - g[..., :, None] * g[..., None, :]) / r[..., None, None]

    def newton(n, dc, R1, a1, R2, a2, exact):  # f at n and the Newton step for its maximum
        r1, g1, H1 = parts(n, R1, a1)
        r2, g2, H2 = parts(n, R2, a2)
        f = _dot(dc, n) - r1 - r2
        grad = dc - g1 - g2
        grad = grad - _dot(grad, n)[..., None] * n  # on the tangent plane
        nn = n[..., :, None] * n[..., None, :]
        P = eye - nn
        shift = f if exact else jnp.abs(f)
        negH = mm(mm(P, H1 + H2), P) + shift[..., None, None] * P + nn  # minus the tangent Hessian
        return f, mv(spd_inverse(jax.lax.stop_gradient(negH)), grad)

    fixed = tuple(jax.lax.stop_gradient(x) for x in (c2 - c1, R1, a1, R2, a2))
    _, n0, _ = _length(fixed[0])

    def step(_, n):
        s = newton(n, *fixed, False)[1]
        size = jnp.sqrt(_dot(s, s))
        return _length(n + s * jnp.minimum(1.0, 0.5 / jnp.maximum(size, 1e-30))[..., None])[1]

    n = jax.lax.fori_loop(0, SUPPORT_STEPS, step, n0)
    n = _length(n + newton(n, c2 - c1, R1, a1, R2, a2, True)[1])[1]  # with derivatives
    r1, g1, _ = parts(n, R1, a1)
    r2, g2, _ = parts(n, R2, a2)
    return _dot(c2 - c1, n) - r1 - r2, n, 0.5 * ((c1 + g1) + (c2 - g2))


def _box_edges():
    """The 12 edges of the box of half-sizes ``h`` in its own coordinates, as ``start * h`` and
    ``direction * h``: along axis ``j`` from the corner with ``-h_j``, length ``2 h_j``."""
    start, direction = np.zeros((12, 3)), np.zeros((12, 3))
    for e, (j, s1, s2) in enumerate((j, s1, s2) for j in range(3) for s1 in (-1, 1) for s2 in (-1, 1)):
        start[e, [j, (j + 1) % 3, (j + 2) % 3]] = -1.0, s1, s2
        direction[e, j] = 2.0
    return start, direction


_EDGE_START, _EDGE_DIRECTION = _box_edges()
_FACE_AXIS = np.array([0, 0, 1, 1, 2, 2])  # face k: sigma_k l_i - h_i <= 0, i = _FACE_AXIS[k]
_FACE_SIGN = np.array([-1.0, 1.0, -1.0, 1.0, -1.0, 1.0])
_FACE_PAIRS = np.array([(k, m) for k in range(6) for m in range(k + 1, 6)])  # the 15 pairs


def _capsule_box(p, d, r, cb, Rb, h):
    """Capsule (the segment ``p + t d``, ``t`` in [0, 1], radius ``r``) against the box ``(cb,
    Rb, half-sizes h)``: signed distance, unit normal from the box to the capsule, and witness;
    :func:`_sphere_box` at the point of the segment deepest in the box (module docstring).

    The box's signed distance ``f(t)`` along the segment is convex (outside the box the
    Euclidean distance to a convex set, inside the largest of the six face functions, and the
    two agree on the surface), so its minimum lies at one of 29 candidates, each evaluated:

    * the 15 parameters where two of the six face functions ``sigma l_i(t) - h_i`` are equal
      and the largest (``f <= 0`` is their maximum, piecewise linear: its minimum is where a
      falling and a rising one cross, or an end);
    * the two ends;
    * the segment's closest points to the 12 edges (:func:`_segment_params`): outside the box
      ``f`` is the distance to it, continuously differentiable, so its minimum is an end, flat
      (parallel to a face) or where the closest box point is on an edge, and there the edge's
      closest point is a minimum of the distance to the edge, which is ``>= f``.

    Candidates within ``32 eps (|h|_1 + |d|)`` of the smallest tie; their parameters span the
    minimising interval (the segment parallel to a face, or level inside the box: ``f`` is flat
    there), and its midpoint is taken (a minimum, by convexity). Its derivative is that of the
    first tied candidate in the order above (where ``f`` is flat any parameter's derivative does;
    at a kink inside the box, the crossing of the two largest face functions)."""
    dtype = p.dtype
    eps = jnp.finfo(dtype).eps
    a, u = mtv(Rb, p - cb), mtv(Rb, d)  # the segment in box coordinates
    scale = jax.lax.stop_gradient(jnp.sum(h, -1) + jnp.sqrt(_dot(u, u)))
    tol = 32 * eps * scale[..., None]
    hb = h[..., None, :]
    e0, e1, sign = (jnp.asarray(x, dtype) for x in (_EDGE_START, _EDGE_DIRECTION, _FACE_SIGN))
    c = sign * a[..., _FACE_AXIS] - h[..., _FACE_AXIS]  # face function k: c_k + g_k t
    g = sign * u[..., _FACE_AXIS]
    k, m = _FACE_PAIRS[:, 0], _FACE_PAIRS[:, 1]
    num, den = c[..., m] - c[..., k], g[..., k] - g[..., m]
    ok = (jnp.abs(den) > 64 * eps * scale[..., None]) & (jnp.abs(num) <= jnp.abs(den))
    t_face = jnp.where(ok, jnp.clip(num / jnp.where(ok, den, 1.0), 0.0, 1.0), 0.0)
    t_end = jnp.zeros(a.shape[:-1] + (2,), dtype).at[..., 1].set(1.0)
    t_edge, _ = _segment_params(a[..., None, :], u[..., None, :], e0 * hb, e1 * hb)
    t = jnp.concatenate([t_face, t_end, t_edge], -1)
    ts, a0, u0, h0 = (jax.lax.stop_gradient(x) for x in (t, a, u, hb))  # selection only
    q = jnp.abs(a0[..., None, :] + ts[..., None] * u0[..., None, :]) - h0
    qp = jnp.maximum(q, 0.0)
    f = jnp.sqrt(_dot(qp, qp)) + jnp.minimum(jnp.max(q, -1), 0.0)
    largest = jax.lax.stop_gradient(c[..., k] + g[..., k] * t_face) >= f[..., :15] - tol
    f = jnp.where(jnp.concatenate([ok & largest, jnp.ones_like(t[..., 15:], bool)], -1), f, jnp.inf)
    tie = f <= jnp.min(f, -1, keepdims=True) + tol
    first = jnp.take_along_axis(t, jnp.argmax(tie, -1)[..., None], -1)[..., 0]
    mid = 0.5 * (jnp.min(jnp.where(tie, ts, jnp.inf), -1) + jnp.max(jnp.where(tie, ts, -jnp.inf), -1))
    t_min = first + jax.lax.stop_gradient(mid - first)
    return _sphere_box(p + t_min[..., None] * d, r, cb, Rb, h)


def _segment_box_contacts(p, d, r, cb, Rb, h):
    """Capsule (segment ``p + t d``, radius ``r``) against the box ``(cb, Rb, h)`` as three
    contacts: the two end spheres (:func:`_sphere_box` at ``t = 0`` and ``t = 1``) and the
    segment's interior, at the point deepest in the box (:func:`_capsule_box`), whose distance is
    counted beyond the deeper end's penetration:

        phi_i = phi(t*) - min(0, phi(0), phi(1))                                         (B1)

    (``phi(t)`` the sphere-box distance of the segment point ``t``, ``t*`` its minimiser, so
    ``phi_i >= phi(t*)``; where both ends are outside, ``phi_i = phi(t*)``, the capsule's signed
    distance). ``phi_i`` is continuous and reaches 0 as the deepest point moves to an end, so a
    capsule lying on a face rests on its two ends (``phi_i = 0``), a tilted one on its lower end,
    and one across an edge or through the box on its interior. Returns the signed distances
    ``(..., 3)``, normals from the box to the capsule ``(..., 3, 3)`` and witnesses ``(..., 3,
    3)`` in the order end 0, end 1, interior, and the capsule's signed distance ``phi(t*)``
    ``(...)``."""
    d0, n0, w0 = _sphere_box(p, r, cb, Rb, h)
    d1, n1, w1 = _sphere_box(p + d, r, cb, Rb, h)
    ds, ns, ws = _capsule_box(p, d, r, cb, Rb, h)
    di = _beyond_ends(ds, d0, d1)
    return jnp.stack([d0, d1, di], -1), jnp.stack([n0, n1, ns], -2), jnp.stack([w0, w1, ws], -2), ds


def _segment_segment_contacts(p1, d1, r1, p2, d2, r2):
    """Capsule (segment ``p1 + s d1``, radius ``r1``) against capsule (``p2 + t d2``, ``r2``) as
    three contacts: at the two ends of the stretch of the first segment that the second runs
    alongside (the second segment's ends projected on the first and clamped to it,
    ``s_lo <= s_hi``), the first capsule's sphere there against the second capsule
    (:func:`_spheres` with the second segment's point closest to it); and the closest points of
    the two segments (:func:`_segments`), counted beyond those two by (B1). Parallel capsules
    lying on each other rest on the two ends of their overlap; crossing ones (``s_lo = s_hi``,
    both contacts at the crossing) on the crossing; the interior contact acts where the segments
    come closer between ``s_lo`` and ``s_hi``, or outside them. Every distance is continuous in
    the poses. Returns the signed distances ``(..., 3)``, normals from the first capsule to the
    second ``(..., 3, 3)`` and witnesses ``(..., 3, 3)`` in the order ``s_lo``, ``s_hi``,
    interior, and the capsules' signed distance ``(...)``."""
    a = _dot(d1, d1)
    ok = a > jnp.finfo(a.dtype).tiny
    a = jnp.where(ok, a, 1.0)
    s0 = jnp.where(ok, _dot(p2 - p1, d1) / a, 0.0)
    s1 = jnp.where(ok, _dot(p2 + d2 - p1, d1) / a, 0.0)
    out = []
    for s in (jnp.clip(jnp.minimum(s0, s1), 0.0, 1.0), jnp.clip(jnp.maximum(s0, s1), 0.0, 1.0)):
        c = p1 + s[..., None] * d1
        out.append(_spheres(c, r1, _segment_point(p2, d2, c), r2))
    P, Q = _segments(p1, d1, p2, d2)
    ds, ns, ws = _spheres(P, r1, Q, r2)
    (dl, nl, wl), (dh, nh, wh) = out
    di = _beyond_ends(ds, dl, dh)
    return jnp.stack([dl, dh, di], -1), jnp.stack([nl, nh, ns], -2), jnp.stack([wl, wh, ws], -2), ds


def _beyond_ends(ds, d0, d1):
    """(B1): the segment's deepest distance ``ds`` counted beyond its ends' ``d0``, ``d1``."""
    return ds - jnp.minimum(0.0, jnp.minimum(d0, d1))


_CORNERS = np.array([(sx, sy, sz) for sx in (-1.0, 1.0) for sy in (-1.0, 1.0) for sz in (-1.0, 1.0)])


def _corner_index(signs):
    return int(4 * (signs[0] > 0) + 2 * (signs[1] > 0) + (signs[2] > 0))


# the corners (rows of _CORNERS) at the start and the end of each edge of _box_edges
_EDGE_CORNERS = np.array([[_corner_index(s), _corner_index(s + d)] for s, d in zip(_EDGE_START, _EDGE_DIRECTION)])


def _box_box_contacts(c1, R1, h1, c2, R2, h2):
    """Box ``(c1, R1, h1)`` against box ``(c2, R2, h2)`` as 40 point contacts: the 8 corners of
    each box against the other (:func:`_sphere_box` with radius 0), and the 12 edges of each box
    against the other, each the interior contact (B1) of a segment of radius 0: the edge's
    deepest point (:func:`_capsule_box`) counted beyond its two corners, whose distances are the
    corner contacts' (:func:`_beyond_ends`). A box lying on a face of the other rests on its 4
    corners (its edges' (B1) distances are 0), as on the ground; an edge
    across a face or across an edge of the other box acts at its deepest point. Returns signed
    distances ``(..., 40)``, unit normals from box 1 to box 2 ``(..., 40, 3)``, witnesses
    ``(..., 40, 3)`` (corners of box 1, of box 2, edges of box 1, of box 2) and the boxes'
    signed distance where they are apart (the smallest over the 24 edges of the distance of
    the edge's deepest point: exact for separated boxes, whose closest points include a point
    on an edge of one of them)."""
    dtype = c1.dtype
    corners = jnp.asarray(_CORNERS, dtype)
    e0, e1 = jnp.asarray(_EDGE_START, dtype), jnp.asarray(_EDGE_DIRECTION, dtype)
    zero = jnp.zeros((), dtype)
    x = lambda v: v[..., None, :]  # one box per row of points
    X = lambda M: M[..., None, :, :]
    corner_rows, edge_rows, apart = [], [], []
    # sign: _sphere_box's normal points from the box (b) to the point (of a), so from box 1 to
    # box 2 it is -n for the points of box 1 and +n for those of box 2
    for (ca, Ra, ha), (cb, Rb, hb), sign in (((c1, R1, h1), (c2, R2, h2), -1.0), ((c2, R2, h2), (c1, R1, h1), 1.0)):
        dc, n, w = _sphere_box(x(ca) + mv(X(Ra), corners * x(ha)), zero, x(cb), X(Rb), x(hb))  # (..., 8)
        corner_rows.append((dc, sign * n, w))
        p, d = x(ca) + mv(X(Ra), e0 * x(ha)), mv(X(Ra), e1 * x(ha))  # the 12 edges
        seg, n, w = _capsule_box(p, d, zero, x(cb), X(Rb), x(hb))
        di = _beyond_ends(seg, dc[..., _EDGE_CORNERS[:, 0]], dc[..., _EDGE_CORNERS[:, 1]])
        edge_rows.append((di, sign * n, w))
        apart.append(seg)
    rows = corner_rows + edge_rows
    dist = jnp.concatenate([r[0] for r in rows], -1)
    normal = jnp.concatenate([r[1] for r in rows], -2)
    witness = jnp.concatenate([r[2] for r in rows], -2)
    return dist, normal, witness, jnp.min(jnp.concatenate(apart, -1), -1)


RIM_GRID = 16  # angles sampled on a rim before the golden-section search


def _rim_points(cc, Rc, size, sdf):
    """The rim points of the cylinder ``(cc, Rc, size)`` that meet another shape first. ``sdf``
    maps points ``(..., 2, k, 3)`` to the shape's signed distance and outward unit normal there
    (inputs without derivatives). On each disk's rim:

    * the point deepest in the shape (the smallest signed distance): it minimises the distance
      over the rim's angle, which is not convex, so the best of :data:`RIM_GRID` angles, then
      :data:`GOLDEN_STEPS` golden-section steps in the bracket of its two neighbours (on values
      without derivatives; the distance there then has the derivative of the minimum, as
      :func:`_segment_cylinder`);
    * 4 points as on the ground (:func:`_rim_square`) for the plane of the shape's outward
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
    # values without derivatives, each rim's points along a last axis
    E1, E2, R = (jax.lax.stop_gradient(x)[..., None, None, :] for x in (e1, e2, r[..., None]))
    C0 = jax.lax.stop_gradient(centres)[..., None, :]

    def f(t):  # (..., 2, k) angles -> the rim points' signed distances
        return sdf(C0 + R * (jnp.cos(t)[..., None] * E1 + jnp.sin(t)[..., None] * E2))[0]

    step = 2.0 * np.pi / RIM_GRID
    grid = jnp.asarray(step * np.arange(RIM_GRID), dtype)
    vals = f(jnp.broadcast_to(grid, centres.shape[:-1] + (RIM_GRID,)))  # (..., 2, RIM_GRID)
    # the best angle, and the best local minimum of the grid at least two angles away from it
    k1 = jnp.argmin(vals, -1)
    local = (vals <= jnp.roll(vals, 1, -1)) & (vals <= jnp.roll(vals, -1, -1))
    gap = jnp.abs(np.arange(RIM_GRID) - k1[..., None])
    apart = jnp.minimum(gap, RIM_GRID - gap) >= 2
    masked = jnp.where(local & apart, vals, jnp.inf)
    k2 = jnp.argmin(masked, -1)
    second = jnp.isfinite(jnp.take_along_axis(masked, k2[..., None], -1)[..., 0])  # (..., 2)
    lo = grid[jnp.stack([k1, k2], -1)] - step  # (..., 2, 2): two searches on each rim
    t = _golden_minimum(f, lo, lo + 2.0 * step)[..., None]  # (..., 2, 2, 1)
    radial = jnp.cos(t) * e1[..., None, None, :] + jnp.sin(t) * e2[..., None, None, :]
    deepest = centres[..., None, :] + r[..., None, None, None] * radial  # (..., 2, 2, 3)
    normal = jax.lax.stop_gradient(sdf(jax.lax.stop_gradient(deepest))[1][..., 0, :])  # at the best
    square = _rim_square(Rc, centres, r, normal)  # (..., 2, 4, 3)
    return square.reshape(cc.shape[:-1] + (8, 3)), deepest.reshape(cc.shape[:-1] + (4, 3)), second


def _rim_rows(d_sq, n_sq, w_sq, d_deep, n_deep, w_deep, second, r):
    """The 12 contacts of a cylinder's two rims (:func:`_rim_points`): the 4 points of each rim,
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


def _box_sdf(cb, Rb, h):
    """The box's signed distance and outward normal as a function of points ``(..., 2, k, 3)``,
    without derivatives (for :func:`_rim_points`)."""
    zero = jnp.zeros((), cb.dtype)
    cb0, h0 = (jax.lax.stop_gradient(x)[..., None, None, :] for x in (cb, h))
    Rb0 = jax.lax.stop_gradient(Rb)[..., None, None, :, :]
    return lambda pts: _sphere_box(pts, zero, cb0, Rb0, h0)[:2]


def _cylinder_sdf_of(cc, Rc, size):
    """The cylinder's signed distance and outward normal as a function of points ``(..., 2, k,
    3)``, without derivatives (for :func:`_rim_points`)."""
    cc0, size0 = (jax.lax.stop_gradient(x)[..., None, None, :] for x in (cc, size))
    Rc0 = jax.lax.stop_gradient(Rc)[..., None, None, :, :]

    def sdf(pts):
        dist, n = _cylinder_sdf(mtv(Rc0, pts - cc0), size0)
        return dist, mv(Rc0, n)

    return sdf


def _cylinder_box_contacts(cc, Rc, size, cb, Rb, h):
    """Cylinder ``(cc, Rc, size)`` against box ``(cb, Rb, half-sizes h)`` as 32 point contacts:

    * the box's 8 corners against the cylinder's exact signed distance (:func:`_sphere_cylinder`
      of radius 0);
    * the box's 12 edges, each the interior contact (B1) of a segment of radius 0: the edge's
      point deepest in the cylinder (:func:`_segment_cylinder`) counted beyond its corners;
    * the cylinder's rims against the box (:func:`_sphere_box` of radius 0): 4 points on each
      rim and each rim's deepest points counted beyond them (:func:`_rim_points`,
      :func:`_rim_rows`).

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
    corners = jnp.asarray(_CORNERS, dtype)
    e0, e1 = jnp.asarray(_EDGE_START, dtype), jnp.asarray(_EDGE_DIRECTION, dtype)
    # _sphere_cylinder's normal points from the cylinder to the point (of the box): kept
    dc, nc, wc = _sphere_cylinder(x(cb) + mv(X(Rb), corners * x(h)), zero, x(cc), X(Rc), x(size))  # (..., 8)
    p, d = x(cb) + mv(X(Rb), e0 * x(h)), mv(X(Rb), e1 * x(h))  # the 12 edges
    seg, ne, we = _segment_cylinder(p, d, zero, x(cc), X(Rc), x(size))
    de = _beyond_ends(seg, dc[..., _EDGE_CORNERS[:, 0]], dc[..., _EDGE_CORNERS[:, 1]])
    square, deepest, second = _rim_points(cc, Rc, size, _box_sdf(cb, Rb, h))
    dr, nr, wr = _sphere_box(square, zero, x(cb), X(Rb), x(h))  # the normal from the box to the point
    dd, nd, wd = _sphere_box(deepest, zero, x(cb), X(Rb), x(h))
    drim, nrim, wrim = _rim_rows(dr, -nr, wr, dd, -nd, wd, second, size[..., 0])
    dist = jnp.concatenate([dc, de, drim], -1)
    normal = jnp.concatenate([nc, ne, nrim], -2)
    witness = jnp.concatenate([wc, we, wrim], -2)
    return dist, normal, witness, jnp.minimum(jnp.min(seg, -1), jnp.min(dd, -1))


def _cylinder_cylinder_contacts(c1, R1, s1, c2, R2, s2):
    """Cylinder ``(c1, R1, s1)`` against cylinder ``(c2, R2, s2)`` as 25 point contacts:

    * each cylinder's rims against the other's exact signed distance (:func:`_sphere_cylinder` of
      radius 0): 4 points on each rim and each rim's deepest points counted beyond them
      (:func:`_rim_points`, :func:`_rim_rows`);
    * the first cylinder's side line facing the second (through its rim points in the direction
      of the axes' common perpendicular, Ericson05 5.1.9), the interior contact (B1) of a segment
      of radius 0: its point deepest in the second (:func:`_segment_cylinder`) counted beyond its
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
    # _sphere_cylinder's normal points from the cylinder to the point: from 2 to the points of 1
    # (so -n from 1 to 2), from 1 to the points of 2 (+n)
    rows, deep = [], []
    for (ca, Ra, sa), (cb, Rb, sb), sign in (((c1, R1, s1), (c2, R2, s2), -1.0), ((c2, R2, s2), (c1, R1, s1), 1.0)):
        square, deepest, second = _rim_points(ca, Ra, sa, _cylinder_sdf_of(cb, Rb, sb))
        dq, nq, wq = _sphere_cylinder(square, zero, x(cb), X(Rb), x(sb))
        dd, nd, wd = _sphere_cylinder(deepest, zero, x(cb), X(Rb), x(sb))
        rows.append(_rim_rows(dq, sign * nq, wq, dd, sign * nd, wd, second, sa[..., 0]))
        deep.append(jnp.min(dd, -1))
    # the side line of 1 facing 2: through the axes' closest points' direction, across axis 1
    a1, a2 = R1[..., :, 2], R2[..., :, 2]
    p1, d1a = c1 - s1[..., 1, None] * a1, 2.0 * s1[..., 1, None] * a1
    p2, d2a = c2 - s2[..., 1, None] * a2, 2.0 * s2[..., 1, None] * a2
    q1, q2 = _segments(p1, d1a, p2, d2a)
    w = q2 - q1
    w = w - _dot(w, a1)[..., None] * a1
    sq = _dot(w, w)
    ok = sq > jnp.finfo(w.dtype).tiny
    u = jnp.where(ok[..., None], w / jnp.sqrt(jnp.where(ok, sq, 1.0))[..., None], R1[..., :, 0])
    start = p1 + s1[..., 0, None] * u
    seg, ns, ws = _segment_cylinder(start, d1a, zero, c2, R2, s2)
    e0 = _sphere_cylinder(start, zero, c2, R2, s2)[0]
    e1 = _sphere_cylinder(start + d1a, zero, c2, R2, s2)[0]
    ds = _beyond_ends(seg, e0, e1)
    dist = jnp.concatenate([rows[0][0], rows[1][0], ds[..., None]], -1)
    normal = jnp.concatenate([rows[0][1], rows[1][1], -ns[..., None, :]], -2)
    witness = jnp.concatenate([rows[0][2], rows[1][2], ws[..., None, :]], -2)
    return dist, normal, witness, jnp.minimum(jnp.minimum(deep[0], deep[1]), seg)


# ---------------------------------------------------------------------------------------------
# convex hulls (mesh geoms): outward triangles T (..., F, 3, 3) in world coordinates

HULL_POINTS = 8  # a hull's vertices that count against another shape: its this many deepest


def _closest_on_triangles(p, a, b, c):
    """The point of each triangle ``(a, b, c)`` nearest to ``p`` (Ericson05 5.1.5, its Voronoi
    regions tested in turn, here as selections so that every triangle is one batched
    expression). Shapes broadcast; degenerate triangles fall back to a vertex or an edge."""
    ab, ac, ap = b - a, c - a, p - a
    d1, d2 = _dot(ab, ap), _dot(ac, ap)
    bp = p - b
    d3, d4 = _dot(ab, bp), _dot(ac, bp)
    cp = p - c
    d5, d6 = _dot(ab, cp), _dot(ac, cp)
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


def _hull_distance(p, T):
    """Signed distance of points ``p`` ``(..., k, 3)`` to the convex hull bounded by the outward
    triangles ``T`` ``(..., F, 3, 3)`` (one hull per leading index), and the outward unit normal
    of its nearest surface point. Inside (no face plane with the point in front), the largest
    of the planes' distances ``n_f . p - n_f . a_f``, along that face's normal: exact for a
    convex body. Outside, the distance to the nearest triangle's nearest point, along the line
    from it (the planes' largest distance is only a lower bound there, near edges and
    vertices). The nearest face is chosen by index, so the derivative is that face's."""
    a, b, c = (T[..., None, :, j, :] for j in range(3))  # (..., 1, F, 3)
    n = cross(b - a, c - a)
    _, n, _ = _length(n)
    pk = p[..., :, None, :]  # (..., k, 1, 3)
    s = _dot(n, pk - a)  # (..., k, F)
    f = jnp.argmax(s, -1)
    take = lambda x: jnp.take_along_axis(x, f[..., None], -1)[..., 0]  # noqa: E731
    s_max = take(s)
    n_in = jnp.take_along_axis(jnp.broadcast_to(n, s.shape + (3,)), f[..., None, None], -2)[..., 0, :]
    q = _closest_on_triangles(pk, a, b, c)  # (..., k, F, 3)
    dq = _dot(pk - q, pk - q)
    j = jnp.argmin(dq, -1)
    q_near = jnp.take_along_axis(q, j[..., None, None], -2)[..., 0, :]
    d_out, n_out, ok = _length(p - q_near)
    outside = (s_max > 0) & ok
    return jnp.where(outside, d_out, s_max), jnp.where(outside[..., None], n_out, n_in)


def _sphere_hull(c, r, T):
    """Spheres ``(c, r)`` ``(..., k)`` against the hull ``T``: signed distance, unit normal from
    the hull to the sphere and witness midway between the surfaces (:func:`_hull_distance`)."""
    sd, n = _hull_distance(c, T)
    surface = c - sd[..., None] * n
    return sd - r, n, 0.5 * (surface + c - r[..., None] * n)


def _hull_sdf_of(T):
    """The hull's signed distance and outward normal as a function of points ``(..., 2, k, 3)``,
    without derivatives (for :func:`_rim_points`)."""
    T0 = jax.lax.stop_gradient(T)[..., None, :, :, :]  # a rim axis
    return lambda pts: _hull_distance(pts, T0)


def _segment_hull(p, d, r, T):
    """Capsules (segment ``p + t d``, radius ``r``) against the hull ``T``: :func:`_sphere_hull`
    at the segment's point deepest in the hull, the minimiser of the hull's signed distance
    along it (convex: a convex body's), by golden section (as :func:`_segment_cylinder`)."""
    p0, d0, T0 = (jax.lax.stop_gradient(x) for x in (p, d, T))
    f = lambda t: _hull_distance((p0 + t[..., None] * d0)[..., None, :], T0)[0][..., 0]  # noqa: E731
    lo, hi = jnp.zeros(p.shape[:-1], p.dtype), jnp.ones(p.shape[:-1], p.dtype)
    t = _golden_minimum(f, lo, hi)
    dist, n, w = _sphere_hull((p + t[..., None] * d)[..., None, :], r[..., None], T)
    return dist[..., 0], n[..., 0, :], w[..., 0, :]


def _segment_hull_contacts(p, d, r, T):
    """Capsule against hull as three contacts, as :func:`_segment_box_contacts`: the two end
    spheres and the segment's deepest point counted beyond them (B1). Returns signed distances
    ``(..., 3)``, normals from the hull to the capsule ``(..., 3, 3)``, witnesses and the
    capsule's signed distance ``(...)``."""
    ends = jnp.stack([p, p + d], -2)
    de, ne, we = _sphere_hull(ends, jnp.stack([r, r], -1), T)
    ds, ns, ws = _segment_hull(p, d, r, T)
    di = _beyond_ends(ds, de[..., 0], de[..., 1])
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


def _take(x, k):
    """Rows ``k`` ``(..., K)`` of ``x`` ``(..., M)`` or ``(..., M, 3)``."""
    return jnp.take_along_axis(x, k, -1) if x.ndim == k.ndim else jnp.take_along_axis(x, k[..., None], -2)


def _box_hull_contacts(cb, Rb, h, T, V, valid):
    """Box ``(cb, Rb, half-sizes h)`` against a hull (triangles ``T``, vertices ``V`` with
    ``valid``) as 28 point contacts: the box's 8 corners against the hull's exact signed
    distance (:func:`_sphere_hull` of radius 0), its 12 edges as interior contacts (B1) of
    segments of radius 0 (the edge's deepest point, :func:`_segment_hull`, counted beyond its
    corners), and the hull's :data:`HULL_POINTS` vertices deepest in the box
    (:func:`_sphere_box` of radius 0). Returns signed distances ``(..., 28)``, unit normals from
    the box to the hull, witnesses, and the pair's signed distance: the smallest over the
    edges' deepest points and the vertices, exact where the shapes are apart (their closest
    points lie on an edge of the box or at a vertex of the hull, or are equally near along a
    whole face or edge that ends there)."""
    dtype = cb.dtype
    zero = jnp.zeros((), dtype)
    x = lambda v: v[..., None, :]  # noqa: E731  one shape per row of points
    X = lambda M: M[..., None, :, :]  # noqa: E731
    corners = x(cb) + mv(X(Rb), jnp.asarray(_CORNERS, dtype) * x(h))
    dc, nc, wc = _sphere_hull(corners, jnp.zeros(corners.shape[:-1], dtype), T)  # normals hull -> box
    e0, e1 = jnp.asarray(_EDGE_START, dtype), jnp.asarray(_EDGE_DIRECTION, dtype)
    p, d = x(cb) + mv(X(Rb), e0 * x(h)), mv(X(Rb), e1 * x(h))
    Te = T[..., None, :, :, :]  # one hull per edge
    seg, ne, we = _segment_hull(p, d, jnp.zeros(p.shape[:-1], dtype), Te)
    de = _beyond_ends(seg, dc[..., _EDGE_CORNERS[:, 0]], dc[..., _EDGE_CORNERS[:, 1]])
    dv, nv, wv = _sphere_box(V, zero, x(cb), X(Rb), x(h))  # normals box -> vertex
    k, ok = _deepest(dv, valid)
    dv, nv, wv = jnp.where(ok, _take(dv, k), FAR), _take(nv, k), _take(wv, k)
    dist = jnp.concatenate([dc, de, dv], -1)
    normal = jnp.concatenate([-nc, -ne, nv], -2)
    witness = jnp.concatenate([wc, we, wv], -2)
    return dist, normal, witness, jnp.minimum(jnp.min(seg, -1), jnp.min(dv, -1))


def _cylinder_hull_contacts(cc, Rc, size, T, V, valid, E, e_valid):
    """Cylinder ``(cc, Rc, size)`` against a hull (triangles ``T``, vertices ``V``, edges ``E``
    ``(..., M, 2, 3)``, with their ``valid`` masks) as 28 point contacts: the cylinder's rims
    against the hull's exact signed distance, 4 points on each rim and each rim's deepest points
    counted beyond them (:func:`_rim_points`, :func:`_rim_rows`); the hull's
    :data:`HULL_POINTS` vertices deepest in the cylinder (:func:`_sphere_cylinder` of radius 0);
    and its :data:`HULL_POINTS` edges that reach deepest into it, each the interior contact (B1)
    of a segment of radius 0 (:func:`_segment_cylinder`) counted beyond its two vertices.
    Returns signed distances ``(..., 28)``, unit normals from the cylinder to the hull,
    witnesses, and the pair's signed distance: the smallest over the rims' deepest points and
    the edges' (exact where the shapes are apart: their closest points lie on a rim, or on an
    edge of the hull)."""
    zero = jnp.zeros((), cc.dtype)
    x = lambda v: v[..., None, :]  # noqa: E731
    X = lambda M: M[..., None, :, :]  # noqa: E731
    square, deepest, second = _rim_points(cc, Rc, size, _hull_sdf_of(T))
    dq, nq, wq = _sphere_hull(square, jnp.zeros(square.shape[:-1], cc.dtype), T)  # normals hull -> rim
    dd, nd, wd = _sphere_hull(deepest, jnp.zeros(deepest.shape[:-1], cc.dtype), T)
    drim, nrim, wrim = _rim_rows(dq, -nq, wq, dd, -nd, wd, second, size[..., 0])
    dv, nv, wv = _sphere_cylinder(V, zero, x(cc), X(Rc), x(size))  # normals cylinder -> vertex
    k, ok = _deepest(dv, valid)
    dv, nv, wv = jnp.where(ok, _take(dv, k), FAR), _take(nv, k), _take(wv, k)
    p, d = E[..., 0, :], E[..., 1, :] - E[..., 0, :]
    seg, ne, we = _segment_cylinder(p, d, zero, x(cc), X(Rc), x(size))
    d0 = _sphere_cylinder(p, zero, x(cc), X(Rc), x(size))[0]
    d1 = _sphere_cylinder(p + d, zero, x(cc), X(Rc), x(size))[0]
    k, ok = _deepest(seg, e_valid)  # the deepest edges, each counted beyond its ends (B1)
    de = jnp.where(ok, _beyond_ends(_take(seg, k), _take(d0, k), _take(d1, k)), FAR)
    ne, we = _take(ne, k), _take(we, k)
    dist = jnp.concatenate([drim, dv, de], -1)
    normal = jnp.concatenate([nrim, nv, ne], -2)
    witness = jnp.concatenate([wrim, wv, we], -2)
    apart = jnp.min(jnp.where(e_valid, seg, jnp.inf), -1)
    return dist, normal, witness, jnp.minimum(jnp.min(dd, -1), apart)


def _vertices_in_hull(V, valid, T):
    """The :data:`HULL_POINTS` vertices ``V`` ``(..., M, 3)`` (with ``valid``) deepest in the
    hull ``T``: chosen by the largest of the hull's face-plane distances (the signed distance
    inside, a lower bound outside, so every vertex inside comes before every vertex outside),
    then their exact signed distances (:func:`_sphere_hull` of radius 0), unit normals from the
    hull to the vertex and witnesses; ``FAR`` for padding."""
    a, b, c = (T[..., None, :, j, :] for j in range(3))  # (..., 1, F, 3)
    _, n, _ = _length(cross(b - a, c - a))
    planes = jnp.max(_dot(n, V[..., :, None, :] - a), -1)  # (..., M)
    k, ok = _deepest(planes, valid)
    Vk = _take(V, k)
    d, nrm, w = _sphere_hull(Vk, jnp.zeros(Vk.shape[:-1], V.dtype), T)
    return jnp.where(ok, d, FAR), nrm, w


def _hull_hull_contacts(T1, V1, valid1, T2, V2, valid2):
    """Two convex hulls (triangles ``T``, vertices ``V`` with ``valid``) as 16 point contacts:
    the :data:`HULL_POINTS` vertices of each deepest in the other (:func:`_vertices_in_hull`).
    Returns signed distances ``(..., 16)``, unit normals from the first hull to the second,
    witnesses, and the pair's signed distance: the smallest of the rows, exact where the hulls
    are apart and their closest points include a vertex (a vertex against a face, an edge or a
    vertex); where two edges are closest it is larger than the true distance, and two hulls
    that cross edge through edge with no vertex inside the other have no contact."""
    d1, n1, w1 = _vertices_in_hull(V1, valid1, T2)  # normals hull 2 -> a vertex of hull 1
    d2, n2, w2 = _vertices_in_hull(V2, valid2, T1)  # hull 1 -> a vertex of hull 2
    dist = jnp.concatenate([d1, d2], -1)
    return dist, jnp.concatenate([-n1, n2], -2), jnp.concatenate([w1, w2], -2), jnp.min(dist, -1)
