"""A height field ground (:class:`HeightField`): a triangulated surface over a regular grid,
MuJoCo's ``hfield``, and the signed distance of contact points to it.

Glossary: ``l`` a point in the field's frame, ``H`` the ``(nrow, ncol)`` grid of heights,
``r_x, r_y`` the half-extents, ``dx = 2 r_x / (ncol - 1)``, ``dy = 2 r_y / (nrow - 1)`` the
cell sizes, ``s`` a signed distance (positive above the surface), ``n`` a unit normal.

**The surface** (MuJoCo's, Todorov12; MuJoCo's documentation, *hfield*). Grid vertex ``(i, j)``
lies at ``(x_j, y_i, H_ij)`` with ``x_j = -r_x + j dx`` and ``y_i = -r_y + i dy``: row 0 is the
edge ``y = -r_y``, column 0 the edge ``x = -r_x``. Each cell is split along its diagonal from
``(x_j, y_i)`` to ``(x_{j+1}, y_{i+1})`` into two triangles, as MuJoCo splits it (checked with
``mj_ray`` on a one-cell field). In the cell's coordinates ``f_u = (l_x + r_x) / dx - j``,
``f_v = (l_y + r_y) / dy - i`` in ``[0, 1]``,

    f_u >= f_v:  z = H_ij + f_u (H_i,j+1 - H_ij) + f_v (H_i+1,j+1 - H_i,j+1)           (H1)
    f_u <  f_v:  z = H_ij + f_v (H_i+1,j - H_ij) + f_u (H_i+1,j+1 - H_i+1,j)

a plane ``z = z_0 + z_x x + z_y y`` over each triangle, whose upward unit normal is
``n = (-z_x, -z_y, 1) / sqrt(1 + z_x^2 + z_y^2)``. The cell under a point is found by
arithmetic (``floor``, clamped to the grid) and its heights by a gather: O(1) per point, the
same work for every point, so it batches under ``vmap``.

**The signed distance of a contact point** ``c`` of radius ``r`` (the ground contact points of
:mod:`jaxdyn.contact.ground`: sphere centres and capsule ends with their radius, box corners,
cylinder rim points, an ellipsoid's lowest point and hull vertices with ``r = 0``):

    below the surface (l_z <= z(l_x, l_y)):  s = (l_z - z) n_z,  normal n             (H2)

the distance to the plane of the triangle below ``l`` (the surface's distance for a point under
a face). Above the surface, a point of radius ``r > 0`` takes the exact distance to the surface,

    s = min_T |l - q_T|,  normal (l - q*) / |l - q*|                                 (H3)

with ``q_T`` the point of triangle ``T`` closest to ``l`` (its projection on the face where it
falls inside, else the nearest point of its three edges, Ericson05 5.1.5) over the triangles of
the cells within ``w`` cells of ``l``'s (``w`` covers the radius and the contact margin, so a
surface point within reach of the sphere is never missed), and ``q*`` the closest of them: a
sphere over a ridge touches the ridge's edge, one over a bump its top vertex, with the normal
through the contact. Points of radius 0 above the surface use (H2) too (their signed distance
matters only once they touch). Both are zero on the surface, so ``s`` is continuous through it,
and (H3)'s normal meets (H2)'s there (``q*`` falls on the face below). A point whose ``(l_x,
l_y)`` lies outside the field's extent has no contact (``s`` = :data:`OUTSIDE`), as in MuJoCo,
whose field ends there; the field is a surface over solid ground, without MuJoCo's base depth
(``size[3]``), which only bounds its prisms from below.

Where (H3)'s nearest point jumps (a sphere exactly above a valley's bisector, equally near
both slopes) the normal is discontinuous; the contact acts through the nearer slope only, so a
ball settling in a V-shaped groove is pushed to alternating sides while its energy falls. The
normals of (H2) change across a triangle edge, as the surface's do.

Every division is guarded and every branch is a ``where`` over finite values, so the
derivatives are finite on edges, on vertices and at ``l`` on the surface.
"""

from __future__ import annotations

import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from .. import geometry
from ..model import Model
from .params import array

# the signed distance of a point outside the field's extent (no contact)
OUTSIDE = 1.0e3
# the contact rows of a sphere or a capsule end on a height field: its nearest features (H3)
FIELD_CONTACTS = 4
# the field's vertices, and its edges, deepest in a box, cylinder, ellipsoid or mesh: rows each
FIELD_VERTICES = 4
# fixed-point steps for a cylinder's rims and an ellipsoid's lowest point on a field: the point
# lowest along the normal of the triangle under the previous one
FIELD_SUPPORT_STEPS = 2


class HeightField(eqx.Module):
    """A height field ground: the triangulated surface over a regular grid (module docstring),
    in the frame ``(pos, R)`` (world), the solid below it. Pass it as ``Contact(ground=...)``
    in place of a :class:`~jaxdyn.contact.Ground`.

    heights ``(nrow, ncol)`` [m]: the surface's height at each grid vertex in the field's frame,
      row ``i`` at ``y = -r_y + 2 r_y i / (nrow - 1)``, column ``j`` at ``x = -r_x + 2 r_x j /
      (ncol - 1)`` (MuJoCo's ``hfield_data`` times the elevation scale ``size[2]``).
    size ``(2,)`` [m]: the half-extents ``r_x, r_y``.
    pos ``(3,)``, R ``(3, 3)``: the field's frame in the world (an MJCF geom's pose).
    friction: the field's sliding friction, combined with each geom's as for
      :class:`~jaxdyn.contact.Ground`.
    geom (static): the ``hfield`` geom of ``model.geoms`` it stands for (``-1``: none).
    window (static): how many cells around a sphere's or capsule end's cell (H3) searches;
      ``None``: the largest radius plus margin of the model's points over the smaller cell
      size, rounded up (from the model's sizes when they are concrete, else 1).

    Array leaves: differentiate with respect to the heights, the pose and the friction, batch
    fields of one grid shape with ``vmap``.
    """

    heights: Float[Array, "nrow ncol"] = eqx.field(converter=array)
    size: Float[Array, " 2"] = eqx.field(converter=array)
    pos: Float[Array, " 3"] = eqx.field(default_factory=lambda: np.zeros(3), converter=array)
    R: Float[Array, "3 3"] = eqx.field(default_factory=lambda: np.eye(3), converter=array)
    friction: Float[Array, ""] = eqx.field(default_factory=lambda: np.array(0.0), converter=array)
    geom: int = eqx.field(static=True, default=-1)
    window: int | None = eqx.field(static=True, default=None)

    def __check_init__(self):
        shape = np.shape(self.heights)
        if len(shape) != 2 or min(shape) < 2:
            raise ValueError(
                f"HeightField: heights must be an (nrow, ncol) grid with nrow, ncol >= 2, got shape {shape}"
            )
        if np.shape(self.size) != (2,):
            raise ValueError(
                f"HeightField: size must be the two half-extents (r_x, r_y), got shape {np.shape(self.size)}"
            )
        for what, x in (("size", self.size), ("heights", self.heights)):
            if isinstance(x, np.ndarray) and not np.all(np.isfinite(x)):
                raise ValueError(f"HeightField: {what} must be finite")
        if isinstance(self.size, np.ndarray) and not np.all(self.size > 0):
            raise ValueError(f"HeightField: size (half-extents) must be positive, got {self.size.tolist()}")
        if self.window is not None and (not isinstance(self.window, (int, np.integer)) or self.window < 0):
            raise ValueError(f"HeightField: window must be a non-negative int or None, got {self.window!r}")

    @staticmethod
    def from_array(heights, size, pos=None, R=None, friction=0.0, window: int | None = None) -> HeightField:
        """A field from an ``(nrow, ncol)`` array of heights [m] (row ``i`` along ``y``, column
        ``j`` along ``x``, the first row at ``y = -size[1]``) over the half-extents ``size =
        (r_x, r_y)``, at ``pos`` with the rotation ``R`` (default: centred at the origin, axes
        of the world)."""
        pos = np.zeros(3) if pos is None else pos
        R = np.eye(3) if R is None else R
        return HeightField(heights=heights, size=size, pos=pos, R=R, friction=friction, window=window)

    @staticmethod
    def from_model(model: Model, name: str | None = None, window: int | None = None) -> HeightField:
        """The ``hfield`` geom of ``model.geoms`` named ``name`` (default: the first on the
        world body), as MJCF loads it: its heights, half-extents, pose and sliding friction."""
        g = model.geoms
        if g is None:
            raise ValueError(f"HeightField.from_model: model '{model.name}' has no geoms")
        k = 0
        for i, t in enumerate(g.type):
            if t != geometry.HFIELD:
                continue
            if (name is None and g.body[i] < 0) or (name is not None and g.names[i] == name):
                return HeightField(
                    heights=g.hfields[k],
                    size=g.size[i, :2],
                    pos=g.pos[i],
                    R=g.R[i],
                    friction=g.friction[i, 0],
                    geom=i,
                    window=window,
                )
            k += 1
        what = "no hfield geom" if name is None else f"no hfield geom named '{name}'"
        raise ValueError(f"HeightField.from_model: model '{model.name}' has {what}")

    def height(self, x, y) -> Array:
        """The surface's height (H1) at the field-frame coordinates ``x, y`` (any shape)."""
        l = jnp.stack(jnp.broadcast_arrays(jnp.asarray(x), jnp.asarray(y), jnp.zeros(())), -1)
        return _below(self, l.astype(jnp.result_type(self.heights, float)))[0]


def _grid(field: HeightField, dtype):
    H = jnp.asarray(field.heights, dtype)
    size = jnp.asarray(field.size, dtype)
    nrow, ncol = H.shape
    return H, size, size[0] * 2.0 / (ncol - 1), size[1] * 2.0 / (nrow - 1)


def _cell(field: HeightField, l):
    """The cell ``(i, j)`` under the field-frame points ``l`` (clamped to the grid) and the
    coordinates ``f_u, f_v`` in it."""
    H, size, dx, dy = _grid(field, l.dtype)
    nrow, ncol = H.shape
    u = (l[..., 0] + size[0]) / dx
    v = (l[..., 1] + size[1]) / dy
    j = jnp.clip(jnp.floor(u), 0, ncol - 2).astype(jnp.int32)
    i = jnp.clip(jnp.floor(v), 0, nrow - 2).astype(jnp.int32)
    return i, j, u - j, v - i


def _below(field: HeightField, l):
    """The height ``z`` (H1) and the upward unit normal ``n`` of the triangle under the
    field-frame points ``l`` ``(..., 3)``."""
    H, _, dx, dy = _grid(field, l.dtype)
    i, j, fu, fv = _cell(field, l)
    z00, z01, z10, z11 = H[i, j], H[i, j + 1], H[i + 1, j], H[i + 1, j + 1]
    upper = fu >= fv
    gx = jnp.where(upper, z01 - z00, z11 - z10)  # the height's change over the cell along x, y
    gy = jnp.where(upper, z11 - z01, z10 - z00)
    z = z00 + jnp.where(upper, fu * gx + fv * gy, fv * gy + fu * gx)
    zx, zy = gx / dx, gy / dy
    n = jnp.stack([-zx, -zy, jnp.ones_like(zx)], -1) / jnp.sqrt(1.0 + zx * zx + zy * zy)[..., None]
    return z, n


def _inside(field: HeightField, l):
    size = jnp.asarray(field.size, l.dtype)
    return (jnp.abs(l[..., 0]) <= size[0]) & (jnp.abs(l[..., 1]) <= size[1])


def _dot(a, b):
    return jnp.sum(a * b, -1)


def _window(i, j, d):
    """The grid indices ``(i + d_a, j + d_b)`` for every pair of offsets ``d`` around each
    ``(i, j)`` ``(P,)``: two ``(P, len(d)^2)`` arrays."""
    I = jnp.broadcast_to(i[:, None, None] + d[:, None], (len(i), len(d), len(d)))
    J = jnp.broadcast_to(j[:, None, None] + d[None, :], (len(i), len(d), len(d)))
    return I.reshape(len(i), -1), J.reshape(len(i), -1)


def _vertex(H, size, dx, dy, i, j):
    """The grid vertices ``(i, j)`` (any shape, clamped into the grid) in the field's frame."""
    nrow, ncol = H.shape
    i, j = jnp.clip(i, 0, nrow - 1), jnp.clip(j, 0, ncol - 1)
    return jnp.stack(jnp.broadcast_arrays(-size[0] + j * dx, -size[1] + i * dy, H[i, j]), -1)


def _face_normal(A, B, C):
    """Unit normals of triangles, zero for the degenerate ones (clamped beyond the grid)."""
    nrm = jnp.cross(B - A, C - A)
    sq = _dot(nrm, nrm)
    return nrm / jnp.sqrt(jnp.where(sq > 0, sq, 1.0))[..., None]


def _features(field: HeightField, l, w: int):
    """The surface's features near each field-frame point ``l`` ``(P, 3)`` (the faces, edges
    and vertices of the cells within ``w`` of ``l``'s) whose Voronoi region holds ``l``, each
    a local minimum of the distance to the surface, (H3): distances ``(P, F)`` (``inf`` where
    the region does not hold ``l``), unit normals and nearest points ``(P, F, 3)``. The
    window's vertices are gathered once, with one more ring for the neighbours; every feature
    is a static slice of them."""
    H, size, dx, dy = _grid(field, l.dtype)
    nrow, ncol = H.shape
    i, j, _, _ = _cell(field, l)
    S = 2 * w + 4  # vertex offsets -w-1 .. w+2: the cells' corners and a ring around them
    I, J = _window(i, j, np.arange(-w - 1, w + 3))
    W = _vertex(H, size, dx, dy, I, J).reshape(len(l), S, S, 3)
    ok = ((I >= 0) & (I < nrow) & (J >= 0) & (J < ncol)).reshape(len(l), S, S)
    x = l[:, None, None, :]
    n_c = 2 * w + 1  # the cells: window rows and columns 1 .. 2 w + 1

    def at(a, b, k=n_c):  # the window's vertices offset by (a, b) from the cells' corners
        return W[:, 1 + a : 1 + a + k, 1 + b : 1 + b + k], ok[:, 1 + a : 1 + a + k, 1 + b : 1 + b + k]

    def face(a, b, upper, k=n_c):  # triangle U or L of the cells offset by (a, b), and whether it exists
        (P00, o00), (P11, o11) = at(a, b, k), at(a + 1, b + 1, k)
        (P01, o01), (P10, o10) = at(a, b + 1, k), at(a + 1, b, k)
        return (P00, P01, P11) if upper else (P00, P11, P10), o00 & o11 & o01 & o10

    cell_i = i[:, None, None] + np.arange(-w, w + 1)[:, None]
    cell_j = j[:, None, None] + np.arange(-w, w + 1)[None, :]
    dist, normal, near = [], [], []
    # faces: l above the plane and its projection along the normal in the (closed) face; on the
    # boundary with a coplanar neighbour, only the face that the cell rule of (H2) gives the
    # projection counts, so a flat stretch is touched once (at a crease both faces count)
    for upper in (True, False):
        (A, B, C), exists = face(0, 0, upper)
        n = _face_normal(A, B, C)
        h = _dot(x - A, n)
        p = x - h[..., None] * n
        closed = (
            (_dot(jnp.cross(B - A, p - A), n) >= 0)
            & (_dot(jnp.cross(C - B, p - B), n) >= 0)
            & (_dot(jnp.cross(A - C, p - C), n) >= 0)
        )
        pi, pj, pu, pv = _cell(field, p)
        owner = (pi == cell_i) & (pj == cell_j) & ((pu >= pv) == upper)
        coplanar = _dot(_below(field, p)[1], n) > 1.0 - 1e-12
        own = exists & closed & (owner | ~coplanar) & (h > 0) & _inside(field, p)
        dist.append(jnp.where(own, h, jnp.inf))
        normal.append(n)
        near.append(p)
    # edges from the vertices at offsets -w .. w+1: along x, along y and the diagonal, each with
    # its two faces, l in the wedge outside both and the nearest point inside the edge
    k = n_c + 1
    P0, o0 = at(0, 0, k)
    for (di, dj), faces in (
        ((0, 1), ((0, 0, True), (-1, 0, False))),
        ((1, 0), ((0, 0, False), (0, -1, True))),
        ((1, 1), ((0, 0, True), (0, 0, False))),
    ):
        P1, o1 = at(di, dj, k)
        e = P1 - P0
        e2 = _dot(e, e)
        t = _dot(x - P0, e) / jnp.where(e2 > 0, e2, 1.0)  # zero only for an edge beyond the grid
        q = P0 + jnp.clip(t, 0.0, 1.0)[..., None] * e
        inside = o0 & o1 & (t > 0) & (t < 1)
        for fi, fj, upper in faces:
            (A, B, C), exists = face(fi, fj, upper, k)
            n = _face_normal(A, B, C)
            m = jnp.cross(e, n)
            third = A + B + C - P0 - P1  # the face's vertex off the edge
            m = jnp.where((_dot(m, third - P0) > 0)[..., None], -m, m)
            inside = inside & (~exists | (_dot(x - q, m) > 0))
        r2 = _dot(x - q, x - q)
        dist.append(jnp.where(inside, jnp.sqrt(jnp.where(inside, r2, 1.0)), jnp.inf))
        near.append(q)
        normal.append((x - q) / jnp.sqrt(jnp.where(inside, r2, 1.0))[..., None])
    # vertices: l on the far side of every edge through the vertex
    inside = o0
    for di, dj in ((0, 1), (0, -1), (1, 0), (-1, 0), (1, 1), (-1, -1)):
        Pn, on = at(di, dj, k)
        inside = inside & (~on | (_dot(x - P0, Pn - P0) < 0))
    r2 = _dot(x - P0, x - P0)
    inside = inside & (r2 > jnp.finfo(l.dtype).tiny)
    dist.append(jnp.where(inside, jnp.sqrt(jnp.where(inside, r2, 1.0)), jnp.inf))
    near.append(P0)
    normal.append((x - P0) / jnp.sqrt(jnp.where(inside, r2, 1.0))[..., None])
    flat = lambda xs, c: jnp.concatenate([a.reshape(len(l), -1, *c) for a in xs], 1)  # noqa: E731
    return flat(dist, ()), flat(normal, (3,)), flat(near, (3,))


def _triangles(field: HeightField, l, w: int):
    """The triangles ``(A, B, C)`` each ``(P, T, 3)``, counter-clockwise seen from above, of
    the ``(2 w + 1)^2`` cells around the cell under ``l`` ``(P, 3)`` (indices clamped to the
    grid, so near its edges some repeat, which a minimum does not mind)."""
    H, size, dx, dy = _grid(field, l.dtype)
    nrow, ncol = H.shape
    i, j, _, _ = _cell(field, l)
    d = np.arange(-w, w + 1)
    I, J = _window(i, j, d)
    I, J = jnp.clip(I, 0, nrow - 2), jnp.clip(J, 0, ncol - 2)
    V = lambda a, b: _vertex(H, size, dx, dy, a, b)  # noqa: E731
    P00, P01, P10, P11 = V(I, J), V(I, J + 1), V(I + 1, J), V(I + 1, J + 1)
    cat = lambda *x: jnp.concatenate(x, 1)  # noqa: E731
    return cat(P00, P00), cat(P01, P11), cat(P11, P10)


def _closest(l, A, B, C):
    """The point of the triangles ``(A, B, C)`` ``(P, T, 3)`` nearest to ``l`` ``(P, 3)`` and the
    squared distance to it (Ericson05 5.1.5: the projection on a face where it falls inside,
    else the nearest point of the face's edges), the minimum over the triangles."""
    x = l[:, None, :]
    n = _face_normal(A, B, C)
    p = x - _dot(x - A, n)[..., None] * n
    inside = (
        (_dot(jnp.cross(B - A, p - A), n) >= 0)
        & (_dot(jnp.cross(C - B, p - B), n) >= 0)
        & (_dot(jnp.cross(A - C, p - C), n) >= 0)
    )
    cands = [p]
    for P, Q in ((A, B), (B, C), (C, A)):
        e = Q - P
        e2 = _dot(e, e)
        t = jnp.clip(_dot(x - P, e) / jnp.where(e2 > 0, e2, 1.0), 0.0, 1.0)
        cands.append(P + t[..., None] * e)
    q = jnp.stack(cands, 2)  # (P, T, 4, 3)
    d2 = _dot(x[:, :, None] - q, x[:, :, None] - q)
    d2 = d2.at[..., 0].set(jnp.where(inside, d2[..., 0], jnp.inf))
    q, d2 = q.reshape(len(l), -1, 3), d2.reshape(len(l), -1)
    k = jnp.argmin(d2, 1)
    qk = jnp.take_along_axis(q, k[:, None, None], 1)[:, 0]
    return qk, _dot(l - qk, l - qk)


def window_of(field: HeightField, reach) -> int:
    """The cells (H3) searches on each side: ``field.window``, else ``ceil(reach / min(dx,
    dy))`` for the largest ``reach`` (radius plus margin, or a shape's bounding radius) when it
    and the field's size are concrete, else 1."""
    if field.window is not None:
        return int(field.window)
    try:
        reach = float(reach)  # type: ignore[arg-type]
        size = np.asarray(field.size, np.float64)
    except Exception:  # traced sizes, or none given
        return 1
    nrow, ncol = np.shape(field.heights)
    cell = min(2 * size[0] / (ncol - 1), 2 * size[1] / (nrow - 1))
    return max(0, min(int(math.ceil(reach / cell - 1e-9)), max(nrow, ncol)))


def field_distance(field: HeightField, c, rounded: bool = False, w: int = 1, k: int = 1, exact: bool = True):
    """The signed distances ``s`` ``(P, k)`` of the world points ``c`` ``(P, 3)`` to the field's
    surface and the world unit normals ``(P, k, 3)`` along which they are measured (from the
    surface towards the outside). ``exact``: (H3)'s exact distance to the surface over the
    triangles within ``w`` cells, negative below it; else (H2). ``rounded`` (points of radius
    > 0): above the surface, the ``k`` nearest features of (H3) (:data:`OUTSIDE` where fewer);
    below it, the distance in the first row and no others. :data:`OUTSIDE` for points beyond
    the field's extent."""
    dt = c.dtype
    pos, R = jnp.asarray(field.pos, dt), jnp.asarray(field.R, dt)
    l = (c - pos) @ R  # R^T (c - pos), row vectors
    z, n = _below(field, l)
    s = (l[:, 2] - z) * n[:, 2]
    if exact:
        q, d2 = _closest(l, *_triangles(field, l, w))
        ok = d2 > jnp.finfo(dt).tiny
        d = jnp.sqrt(jnp.where(ok, d2, 1.0))
        sign = jnp.where(s > 0, 1.0, -1.0)
        n = jnp.where(ok[:, None], sign[:, None] * (l - q) / d[:, None], n)
        s = jnp.where(ok, sign * d, 0.0)
    s, n = s[:, None], n[:, None]
    if rounded:
        dist, nf, _ = _features(field, l, w)
        kk = min(k, dist.shape[1])
        _, idx = jax.lax.top_k(-dist, kk)
        sk = jnp.take_along_axis(dist, idx, 1)
        nk = jnp.take_along_axis(nf, idx[..., None], 1)
        found = jnp.isfinite(sk)
        sk = jnp.where(found, sk, OUTSIDE)
        if kk < k:
            pad = k - kk
            sk = jnp.concatenate([sk, jnp.full((len(l), pad), OUTSIDE, dt)], 1)
            nk = jnp.concatenate([nk, jnp.broadcast_to(n, (len(l), pad, 3))], 1)
            found = jnp.concatenate([found, jnp.zeros((len(l), pad), bool)], 1)
        above = (s > 0) & found[:, :1]  # the features above the surface; the distance in row 0 below it
        first = jnp.arange(k) == 0
        s = jnp.where(above, sk, jnp.where(first, s, OUTSIDE))
        n = jnp.where(above[..., None], nk, n)
    s = jnp.where(_inside(field, l)[:, None], s, OUTSIDE)
    return s, n @ R.T


def grid_vertices(field: HeightField, c, w: int):
    """The grid vertices of the cells within ``w`` of the cell under each world point ``c``
    ``(G, 3)``: world positions ``(G, (2 w + 2)^2, 3)`` and whether each lies in the grid
    (those beyond it are clamped onto its edge and marked false)."""
    dt = c.dtype
    pos, R = jnp.asarray(field.pos, dt), jnp.asarray(field.R, dt)
    l = (c - pos) @ R
    H, size, dx, dy = _grid(field, dt)
    nrow, ncol = H.shape
    i, j, _, _ = _cell(field, l)
    d = np.arange(-w, w + 2)
    I, J = _window(i, j, d)
    valid = (I >= 0) & (I < nrow) & (J >= 0) & (J < ncol)
    return _vertex(H, size, dx, dy, I, J) @ R.T + pos, valid


def window_normals(field: HeightField, c, w: int):
    """The world upward unit normals ``(G, 2 (2 w + 1)^2, 3)`` of the triangles of the cells
    within ``w`` of the cell under each world point ``c`` ``(G, 3)`` (clamped to the grid)."""
    dt = c.dtype
    pos, R = jnp.asarray(field.pos, dt), jnp.asarray(field.R, dt)
    return _face_normal(*_triangles(field, (c - pos) @ R, w)) @ R.T
