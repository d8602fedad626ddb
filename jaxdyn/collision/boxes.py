"""Boxes: the closest point of a box to a point (Ericson05 5.1.4) or, inside, the nearest face;
a capsule's segment against a box (its deepest point among 29 candidates, three contacts by
(B1)); two boxes (corners and edges of each against the other).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..spatial import mtv, mv
from .segments import LocalSDF, beyond_ends, dot, length, segment_params


def sphere_box(c, r, cb, Rb, h):
    """Sphere ``(c, r)`` against the box ``(cb, Rb, half-sizes h)``: signed distance, unit
    normal from the box to the sphere, and witness. Outside, the box point nearest to ``c``
    (Ericson05 5.1.4); inside, the nearest face."""
    sd, n_loc, s_loc = box_local(mtv(Rb, c - cb), h)
    n = mv(Rb, n_loc)
    point = 0.5 * (cb + mv(Rb, s_loc) + c - r[..., None] * n)
    return sd - r, n, point


def box_local(l, h):
    """The box of half-sizes ``h`` and points ``l`` in its frame: the signed distance, the
    outward unit normal and the nearest surface point, in that frame (:func:`sphere_box`)."""
    lc = jnp.clip(l, -h, h)
    d_out, n_out, ok = length(l - lc)
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
    return sd, n_loc, s_loc


def box_edges():
    """The 12 edges of the box of half-sizes ``h`` in its own coordinates, as ``start * h`` and
    ``direction * h``: along axis ``j`` from the corner with ``-h_j``, length ``2 h_j``."""
    start, direction = np.zeros((12, 3)), np.zeros((12, 3))
    for e, (j, s1, s2) in enumerate((j, s1, s2) for j in range(3) for s1 in (-1, 1) for s2 in (-1, 1)):
        start[e, [j, (j + 1) % 3, (j + 2) % 3]] = -1.0, s1, s2
        direction[e, j] = 2.0
    return start, direction


EDGE_START, EDGE_DIRECTION = box_edges()


FACE_AXIS = np.array([0, 0, 1, 1, 2, 2])  # face k: sigma_k l_i - h_i <= 0, i = FACE_AXIS[k]


FACE_SIGN = np.array([-1.0, 1.0, -1.0, 1.0, -1.0, 1.0])


FACE_PAIRS = np.array([(k, m) for k in range(6) for m in range(k + 1, 6)])  # the 15 pairs


def capsule_box(p, d, r, cb, Rb, h):
    """Capsule (the segment ``p + t d``, ``t`` in [0, 1], radius ``r``) against the box ``(cb,
    Rb, half-sizes h)``: signed distance, unit normal from the box to the capsule, and witness;
    :func:`sphere_box` at the point of the segment deepest in the box (module docstring).

    The box's signed distance ``f(t)`` along the segment is convex (outside the box the
    Euclidean distance to a convex set, inside the largest of the six face functions, and the
    two agree on the surface), so its minimum lies at one of 29 candidates, each evaluated:

    * the 15 parameters where two of the six face functions ``sigma l_i(t) - h_i`` are equal
      and the largest (``f <= 0`` is their maximum, piecewise linear: its minimum is where a
      falling and a rising one cross, or an end);
    * the two ends;
    * the segment's closest points to the 12 edges (:func:`segment_params`): outside the box
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
    scale = jax.lax.stop_gradient(jnp.sum(h, -1) + jnp.sqrt(dot(u, u)))
    tol = 32 * eps * scale[..., None]
    hb = h[..., None, :]
    e0, e1, sign = (jnp.asarray(x, dtype) for x in (EDGE_START, EDGE_DIRECTION, FACE_SIGN))
    c = sign * a[..., FACE_AXIS] - h[..., FACE_AXIS]  # face function k: c_k + g_k t
    g = sign * u[..., FACE_AXIS]
    k, m = FACE_PAIRS[:, 0], FACE_PAIRS[:, 1]
    num, den = c[..., m] - c[..., k], g[..., k] - g[..., m]
    ok = (jnp.abs(den) > 64 * eps * scale[..., None]) & (jnp.abs(num) <= jnp.abs(den))
    t_face = jnp.where(ok, jnp.clip(num / jnp.where(ok, den, 1.0), 0.0, 1.0), 0.0)
    t_end = jnp.zeros(a.shape[:-1] + (2,), dtype).at[..., 1].set(1.0)
    t_edge, _ = segment_params(a[..., None, :], u[..., None, :], e0 * hb, e1 * hb)
    t = jnp.concatenate([t_face, t_end, t_edge], -1)
    ts, a0, u0, h0 = (jax.lax.stop_gradient(x) for x in (t, a, u, hb))  # selection only
    q = jnp.abs(a0[..., None, :] + ts[..., None] * u0[..., None, :]) - h0
    qp = jnp.maximum(q, 0.0)
    f = jnp.sqrt(dot(qp, qp)) + jnp.minimum(jnp.max(q, -1), 0.0)
    largest = jax.lax.stop_gradient(c[..., k] + g[..., k] * t_face) >= f[..., :15] - tol
    f = jnp.where(jnp.concatenate([ok & largest, jnp.ones_like(t[..., 15:], bool)], -1), f, jnp.inf)
    tie = f <= jnp.min(f, -1, keepdims=True) + tol
    first = jnp.take_along_axis(t, jnp.argmax(tie, -1)[..., None], -1)[..., 0]
    mid = 0.5 * (jnp.min(jnp.where(tie, ts, jnp.inf), -1) + jnp.max(jnp.where(tie, ts, -jnp.inf), -1))
    t_min = first + jax.lax.stop_gradient(mid - first)
    return sphere_box(p + t_min[..., None] * d, r, cb, Rb, h)


def segment_box_contacts(p, d, r, cb, Rb, h):
    """Capsule (segment ``p + t d``, radius ``r``) against the box ``(cb, Rb, h)`` as three
    contacts: the two end spheres (:func:`sphere_box` at ``t = 0`` and ``t = 1``) and the
    segment's interior, at the point deepest in the box (:func:`capsule_box`), whose distance is
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
    d0, n0, w0 = sphere_box(p, r, cb, Rb, h)
    d1, n1, w1 = sphere_box(p + d, r, cb, Rb, h)
    ds, ns, ws = capsule_box(p, d, r, cb, Rb, h)
    di = beyond_ends(ds, d0, d1)
    return jnp.stack([d0, d1, di], -1), jnp.stack([n0, n1, ns], -2), jnp.stack([w0, w1, ws], -2), ds


CORNERS = np.array([(sx, sy, sz) for sx in (-1.0, 1.0) for sy in (-1.0, 1.0) for sz in (-1.0, 1.0)])


def corner_index(signs):
    return int(4 * (signs[0] > 0) + 2 * (signs[1] > 0) + (signs[2] > 0))


# the corners (rows of CORNERS) at the start and the end of each edge of box_edges
EDGE_CORNERS = np.array([[corner_index(s), corner_index(s + d)] for s, d in zip(EDGE_START, EDGE_DIRECTION)])


def box_features(cb, Rb, h, corner_rows, edge_rows):
    """A box ``(cb, Rb, half-sizes h)`` against another shape through its 8 corners and 12 edges:
    ``corner_rows(points (..., 8, 3))`` and ``edge_rows(starts, directions (..., 12, 3))`` give
    the other shape's ``(distance, normal, witness)`` at the corners and at each edge's deepest
    point. Returns both triples and the smaller of each edge's two corners' distances (for
    (B1): an edge's deepest point counted beyond its corners)."""
    dtype = cb.dtype
    x = lambda v: v[..., None, :]  # noqa: E731  one box per row of points
    X = lambda M: M[..., None, :, :]  # noqa: E731
    corners = x(cb) + mv(X(Rb), jnp.asarray(CORNERS, dtype) * x(h))
    e0, e1 = jnp.asarray(EDGE_START, dtype), jnp.asarray(EDGE_DIRECTION, dtype)
    c = corner_rows(corners)
    e = edge_rows(x(cb) + mv(X(Rb), e0 * x(h)), mv(X(Rb), e1 * x(h)))
    return c, e, jnp.minimum(c[0][..., EDGE_CORNERS[:, 0]], c[0][..., EDGE_CORNERS[:, 1]])


def box_box_contacts(c1, R1, h1, c2, R2, h2):
    """Box ``(c1, R1, h1)`` against box ``(c2, R2, h2)`` as 40 point contacts: the 8 corners of
    each box against the other (:func:`sphere_box` with radius 0), and the 12 edges of each box
    against the other, each the interior contact (B1) of a segment of radius 0: the edge's
    deepest point (:func:`capsule_box`) counted beyond its two corners, whose distances are the
    corner contacts' (:func:`beyond_ends`). A box lying on a face of the other rests on its 4
    corners (its edges' (B1) distances are 0), as on the ground; an edge
    across a face or across an edge of the other box acts at its deepest point. Returns signed
    distances ``(..., 40)``, unit normals from box 1 to box 2 ``(..., 40, 3)``, witnesses
    ``(..., 40, 3)`` (corners of box 1, of box 2, edges of box 1, of box 2) and the boxes'
    signed distance where they are apart (the smallest over the 24 edges of the distance of
    the edge's deepest point: exact for separated boxes, whose closest points include a point
    on an edge of one of them)."""
    zero = jnp.zeros((), c1.dtype)
    x = lambda v: v[..., None, :]  # noqa: E731  one box per row of points
    X = lambda M: M[..., None, :, :]  # noqa: E731
    corner_rows, edge_rows, apart = [], [], []
    # sign: sphere_box's normal points from the box (b) to the point (of a), so from box 1 to
    # box 2 it is -n for the points of box 1 and +n for those of box 2
    for (ca, Ra, ha), (cb, Rb, hb), sign in (((c1, R1, h1), (c2, R2, h2), -1.0), ((c2, R2, h2), (c1, R1, h1), 1.0)):
        (dc, nc, wc), (seg, ne, we), ends = box_features(
            ca,
            Ra,
            ha,
            lambda pts, cb=cb, Rb=Rb, hb=hb: sphere_box(pts, zero, x(cb), X(Rb), x(hb)),
            lambda p, d, cb=cb, Rb=Rb, hb=hb: capsule_box(p, d, zero, x(cb), X(Rb), x(hb)),
        )
        corner_rows.append((dc, sign * nc, wc))
        edge_rows.append((beyond_ends(seg, ends, ends), sign * ne, we))
        apart.append(seg)
    rows = corner_rows + edge_rows
    dist = jnp.concatenate([r[0] for r in rows], -1)
    normal = jnp.concatenate([r[1] for r in rows], -2)
    witness = jnp.concatenate([r[2] for r in rows], -2)
    return dist, normal, witness, jnp.min(jnp.concatenate(apart, -1), -1)


def box_sdf(cb, Rb, h):
    """The box's signed distance and outward normal in its own frame (:class:`LocalSDF`),
    without derivatives (for :func:`~jaxdyn.collision.cylinders.rim_points`)."""
    h0 = jax.lax.stop_gradient(h)[..., None, None, :]
    return LocalSDF(cb, Rb, lambda pts: box_local(pts, h0)[:2])
