"""Points, spheres and segments (a capsule is a sphere swept along its segment): closest points of
a segment to a point and of two segments (Ericson05 5.1.2, 5.1.9), sphere-sphere, the three
contacts of two capsules, and what the other shapes share: guarded normalisation, the
golden-section search of a convex function along a segment, the (B1) count beyond the ends.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..spatial import ArrayOps

dot = ArrayOps.dot  # a . b over the last axis, an explicit sum


class LocalSDF(NamedTuple):
    """A shape's signed distance in its own frame, for
    :func:`jaxdyn.collision.cylinders.rim_points`: the frame's origin ``c`` ``(..., 3)`` and axes
    ``R`` ``(..., 3, 3)`` (taken without derivatives) and ``f``, which maps points ``(..., 2, k,
    3)`` in that frame to their signed distance and the outward unit normal in that frame. The
    rims are carried into the frame once, so the search's evaluations rotate nothing."""

    c: Any
    R: Any
    f: Callable


def length(x):
    """``|x|`` and ``x / |x|`` (the fallback ``e_z`` where ``|x|`` underflows), with finite
    derivatives at ``x = 0``; also returns where the length is usable."""
    sq = dot(x, x)
    ok = sq > jnp.finfo(x.dtype).tiny
    n = jnp.where(ok, jnp.sqrt(jnp.where(ok, sq, 1.0)), 0.0)
    ez = jnp.zeros_like(x).at[..., 2].set(1.0)
    return n, jnp.where(ok[..., None], x / jnp.where(ok, n, 1.0)[..., None], ez), ok


def unit(n):
    return n / jnp.sqrt(dot(n, n))


def spheres(c1, r1, c2, r2):
    """Signed distance, unit normal (1 to 2; ``e_z`` for coincident centres) and witness
    midway between the surfaces, of spheres ``(c1, r1)`` and ``(c2, r2)``."""
    d, n, _ = length(c2 - c1)
    dist = d - r1 - r2
    point = 0.5 * (c1 + c2) + (0.5 * (r1 - r2))[..., None] * n
    return dist, n, point


def segment_point(p, d, c):
    """Closest point to ``c`` of the segment ``p + t d``, ``t`` in [0, 1] (Ericson05 5.1.2)."""
    e = dot(d, d)
    ok = e > jnp.finfo(e.dtype).tiny
    t = jnp.clip(dot(c - p, d) / jnp.where(ok, e, 1.0), 0.0, 1.0)
    return p + jnp.where(ok, t, 0.0)[..., None] * d


def _segments(p1, d1, p2, d2):
    """Closest points of the segments ``p1 + s d1`` and ``p2 + t d2`` (``s, t`` in [0, 1]):
    Ericson05 5.1.9 (the closest points of the lines, ``s`` clamped, ``t`` from ``s`` and
    clamped, ``s`` again from a clamped ``t``). For (near-)parallel segments
    (``|d1 x d2|^2 <= tol |d1|^2 |d2|^2``) ``s`` starts at the midpoint of the overlap of the
    two segments along the first instead of the closest points of the lines."""
    s, t = segment_params(p1, d1, p2, d2)
    return p1 + s[..., None] * d1, p2 + t[..., None] * d2


def segment_params(p1, d1, p2, d2):
    """The parameters ``(s, t)`` of the closest points of :func:`_segments`."""
    dtype = p1.dtype
    tiny = jnp.finfo(dtype).tiny
    r = p1 - p2
    a, e, b = dot(d1, d1), dot(d2, d2), dot(d1, d2)
    c, f = dot(d1, r), dot(d2, r)
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


def segment_of(Rg, cg, size):
    """A capsule's segment: start and direction (its axis is the geom's z, half-length size[1])."""
    a = Rg[..., :, 2] * size[..., 1, None]
    return cg - a, 2.0 * a


GOLDEN_STEPS = 64  # golden-section steps at most: the bracket shrinks by 0.618^64 = 4e-14


def golden_steps(dtype, smooth: bool = False) -> int:
    """The golden-section steps that shrink a unit bracket to the precision of ``dtype``:
    ``ceil(log(eps) / log(0.618))``, at most :data:`GOLDEN_STEPS` (float32: 34, float64: 64).
    Steps beyond it change nothing the dtype can hold. ``smooth``: to ``2 sqrt(eps)`` (float32:
    16, float64: 37), for a search whose caller needs the minimum's *value* where the function
    is smooth at its minimiser: a parameter ``delta`` off it changes the value by
    ``f'' delta^2 / 2``, of the order of ``eps`` (and by ``|f'| delta`` at a kink)."""
    eps = float(jnp.finfo(dtype).eps)
    g = (5.0**0.5 - 1.0) / 2.0
    tol = 2.0 * eps**0.5 if smooth else eps
    return min(GOLDEN_STEPS, int(np.ceil(np.log(tol) / np.log(g))))


def golden_minimum(f, lo, hi, smooth: bool = False):
    """The minimiser of ``f`` (elementwise over arrays of arguments) in the bracket ``[lo, hi]``
    by :func:`golden_steps` golden-section steps (``smooth`` as there; exact for a unimodal
    ``f``; one new evaluation a step), returned without derivatives: the caller evaluates its
    distance there, whose derivative is then the minimum's (the envelope theorem)."""
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

    n = golden_steps(lo.dtype, smooth)
    lo, hi, *_ = jax.lax.fori_loop(0, n, step, (lo, hi, x1, x2, f(x1), f(x2)))
    return jax.lax.stop_gradient(0.5 * (lo + hi))


def segment_segment_contacts(p1, d1, r1, p2, d2, r2):
    """Capsule (segment ``p1 + s d1``, radius ``r1``) against capsule (``p2 + t d2``, ``r2``) as
    three contacts: at the two ends of the stretch of the first segment that the second runs
    alongside (the second segment's ends projected on the first and clamped to it,
    ``s_lo <= s_hi``), the first capsule's sphere there against the second capsule
    (:func:`spheres` with the second segment's point closest to it); and the closest points of
    the two segments (:func:`_segments`), counted beyond those two by (B1). Parallel capsules
    lying on each other rest on the two ends of their overlap; crossing ones (``s_lo = s_hi``,
    both contacts at the crossing) on the crossing; the interior contact acts where the segments
    come closer between ``s_lo`` and ``s_hi``, or outside them. Every distance is continuous in
    the poses. Returns the signed distances ``(..., 3)``, normals from the first capsule to the
    second ``(..., 3, 3)`` and witnesses ``(..., 3, 3)`` in the order ``s_lo``, ``s_hi``,
    interior, and the capsules' signed distance ``(...)``."""
    a = dot(d1, d1)
    ok = a > jnp.finfo(a.dtype).tiny
    a = jnp.where(ok, a, 1.0)
    s0 = jnp.where(ok, dot(p2 - p1, d1) / a, 0.0)
    s1 = jnp.where(ok, dot(p2 + d2 - p1, d1) / a, 0.0)
    out = []
    for s in (jnp.clip(jnp.minimum(s0, s1), 0.0, 1.0), jnp.clip(jnp.maximum(s0, s1), 0.0, 1.0)):
        c = p1 + s[..., None] * d1
        out.append(spheres(c, r1, segment_point(p2, d2, c), r2))
    P, Q = _segments(p1, d1, p2, d2)
    ds, ns, ws = spheres(P, r1, Q, r2)
    (dl, nl, wl), (dh, nh, wh) = out
    di = beyond_ends(ds, dl, dh)
    return jnp.stack([dl, dh, di], -1), jnp.stack([nl, nh, ns], -2), jnp.stack([wl, wh, ws], -2), ds


def beyond_ends(ds, d0, d1):
    """(B1): the segment's deepest distance ``ds`` counted beyond its ends' ``d0``, ``d1``."""
    return ds - jnp.minimum(0.0, jnp.minimum(d0, d1))
