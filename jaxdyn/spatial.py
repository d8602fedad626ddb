"""Spatial (6D) algebra with compact transforms.

Conventions (used everywhere in jaxdyn, as in the seeds and in Featherstone):

* motion vectors ``[angular; linear]`` = ``[omega; v]``, ``v`` the velocity of the point at the
  frame origin;
* force vectors ``[moment; force]`` = ``[n; f]``, ``n`` the moment about the frame origin;
* a :class:`Pose` ``(R, p)`` is the placement of a frame B in a frame A: ``R`` maps B coordinates
  to A coordinates and ``p`` is B's origin in A coordinates (Pinocchio's ``SE3``). Never stored as
  a 6x6 matrix: ``X @ v`` is done with two 3x3 products and a cross product.
* a rigid-body inertia is stored compactly as :class:`RigidInertia` ``(m, h, Ibar)``: mass, first
  moment ``h = m c`` (c the centre of mass) and rotational inertia about the frame origin.
  Articulated inertias are general symmetric 6x6 matrices (Rodriguez86 (8.4): they are not rigid).

Glossary: ``X`` pose/transform, ``v`` motion, ``f`` force, ``I`` inertia, ``S`` motion subspace.
Rodriguez86 writes the force transform as ``phi`` and the motion transform as
``phi^T``; :func:`force_to_parent` is ``phi(k+1, k)`` and :func:`motion_to_child` is
``phi^T(k+1, k)`` (Rodriguez86 (3.5)-(3.6)).
"""

from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp
from jaxtyping import Array, Float

from . import scalars
from . import spatial_formulas as formulas
from .algebra import Algebra


def skew(w: Float[Array, "... 3"]) -> Float[Array, "... 3 3"]:
    """Cross-product matrix: ``skew(w) @ x == cross(w, x)``."""
    x, y, z = w[..., 0], w[..., 1], w[..., 2]
    o = jnp.zeros_like(x)
    return jnp.stack([jnp.stack([o, -z, y], -1), jnp.stack([z, o, -x], -1), jnp.stack([-y, x, o], -1)], -2)


def cross(a, b):
    """3D cross product written elementwise (fuses better than ``jnp.cross`` under vmap)."""
    return jnp.stack(
        [
            a[..., 1] * b[..., 2] - a[..., 2] * b[..., 1],
            a[..., 2] * b[..., 0] - a[..., 0] * b[..., 2],
            a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0],
        ],
        -1,
    )


# The small products below are written as explicit sums over the contracted axis instead of
# ``jnp.sum(a * b, axis)``: XLA CPU (jax 0.10.2) miscompiles a reduce fused with an elementwise
# consumer once the array passes ~2^15 elements (wrong rows from ~1,820 samples on in a batch of
# (B, 6, 3); reproduced in tests/test_large_batch.py), and unrolled sums fuse better anyway.


def _sum_terms(terms):
    out = terms[0]
    for t in terms[1:]:
        out = out + t
    return out


def vdot(a, b):
    """``a . b`` over the last axis, ``(..., n) x (..., n) -> (...)`` for any ``n``, an explicit
    sum (see above)."""
    return _sum_terms([a[..., j] * b[..., j] for j in range(a.shape[-1])])


def mv(A, x):
    """``A @ x`` for (..., m, n) x (..., n), elementwise so that XLA fuses it."""
    return _sum_terms([A[..., :, j] * x[..., None, j] for j in range(A.shape[-1])])


def mtv(A, x):
    """``A.T @ x`` for (..., n, m) x (..., n)."""
    return _sum_terms([A[..., j, :] * x[..., j, None] for j in range(A.shape[-2])])


def mm(A, B):
    """``A @ B`` for small matrices, elementwise (no batched GEMM call under vmap)."""
    return _sum_terms([A[..., :, j, None] * B[..., None, j, :] for j in range(A.shape[-1])])


def mtm(A, B):
    """``A.T @ B`` for small matrices."""
    return _sum_terms([A[..., j, :, None] * B[..., None, j, :] for j in range(A.shape[-2])])


def mmt(A, B):
    """``A @ B.T`` for small matrices."""
    return _sum_terms([A[..., :, None, j] * B[..., None, :, j] for j in range(A.shape[-1])])


def _swap(M):
    return jnp.swapaxes(M, -1, -2)


class ArrayOps:
    """The 3-vector operations of the array layout for :mod:`jaxdyn.spatial_formulas`: vectors
    ``(..., 3)``, scalars ``(...)``, 3x3 matrices ``(..., 3, 3)``, symmetric ones stored whole."""

    cross = staticmethod(cross)
    mv = staticmethod(mv)
    mtv = staticmethod(mtv)
    mm = staticmethod(mm)
    sym_mv = staticmethod(mv)
    skew = staticmethod(skew)
    transpose = staticmethod(_swap)

    @staticmethod
    def add(a, b):
        return a + b

    @staticmethod
    def sub(a, b):
        return a - b

    @staticmethod
    def scale(s, a):
        return s[..., None] * a

    @staticmethod
    def dot(a, b):
        return a[..., 0] * b[..., 0] + a[..., 1] * b[..., 1] + a[..., 2] * b[..., 2]

    @staticmethod
    def rot_sym(R, S):
        return mm(mm(R, S), _swap(R))

    rot_gen = rot_sym

    @staticmethod
    def sym_full(S):
        return S

    sym_of = sym_full

    @staticmethod
    def eye(s):
        return s[..., None, None] * jnp.eye(3, dtype=s.dtype)

    @staticmethod
    def outer(a, b):
        return a[..., :, None] * b[..., None, :]

    @staticmethod
    def gadd(*Ms):
        return _sum_terms(list(Ms))

    @staticmethod
    def gsub(A, B):
        return A - B

    @staticmethod
    def sadd(*xs):
        return _sum_terms(list(xs))

    @staticmethod
    def smul(a, b):
        return a * b


def _halves(x):
    return x[..., :3], x[..., 3:]


def _joined(halves):
    return jnp.concatenate(halves, -1)


class Pose(NamedTuple):
    """Placement of frame B in frame A: rotation ``R`` (B->A coordinates), origin ``p`` (in A)."""

    R: Float[Array, "... 3 3"]
    p: Float[Array, "... 3"]


def identity_pose(dtype=jnp.float32, batch_shape=()) -> Pose:
    """The identity placement (optionally broadcast to ``batch_shape``)."""
    return Pose(
        jnp.broadcast_to(jnp.eye(3, dtype=dtype), batch_shape + (3, 3)),
        jnp.zeros(batch_shape + (3,), dtype),
    )


def compose(a: Pose, b: Pose) -> Pose:
    """Placement of C in A from B in A (``a``) and C in B (``b``)."""
    return Pose(*formulas.compose(ArrayOps, a.R, a.p, b.R, b.p))


def inverse(a: Pose) -> Pose:
    """Placement of A in B from B in A."""
    Rt = jnp.swapaxes(a.R, -1, -2)
    return Pose(Rt, -mv(Rt, a.p))


def transform_point(X: Pose, x):
    """Coordinates in A of a point given in B."""
    return mv(X.R, x) + X.p


def motion_to_parent(X: Pose, m):
    """Motion vector in B -> same motion in A (``AX_B m``; Pinocchio's ``act``)."""
    return _joined(formulas.motion_to_parent(ArrayOps, X.R, X.p, *_halves(m)))


def motion_to_child(X: Pose, m):
    """Motion vector in A -> same motion in B (``BX_A m``, Rodriguez86's ``phi^T``)."""
    return _joined(formulas.motion_to_child(ArrayOps, X.R, X.p, *_halves(m)))


def force_to_parent(X: Pose, f):
    """Force vector in B -> same force in A (``AX*_B f``, Rodriguez86's ``phi``)."""
    return _joined(formulas.force_to_parent(ArrayOps, X.R, X.p, *_halves(f)))


def force_to_child(X: Pose, f):
    """Force vector in A -> same force in B."""
    return _joined(formulas.force_to_child(ArrayOps, X.R, X.p, *_halves(f)))


def motion_matrix_to_parent(X: Pose, S):
    """Columns of a (..., 6, k) motion matrix from B to A."""
    return map_columns(motion_to_parent, X, S)


def map_columns(fn, X, S):
    """Apply a vector transform ``fn(X, v)`` to every column of a ``(..., 6, k)`` matrix."""
    cols = jnp.swapaxes(S, -1, -2)
    Xb = Pose(X.R[..., None, :, :], X.p[..., None, :])
    return jnp.swapaxes(fn(Xb, cols), -1, -2)


def cross_motion(v, m):
    """Spatial motion cross product ``v x m`` (JainRodriguez95 (5.5); Featherstone ``crm``)."""
    return _joined(formulas.cross_motion(ArrayOps, *_halves(v), *_halves(m)))


def cross_force(v, f):
    """Spatial force cross product ``v x* f`` (Featherstone ``crf``; ``-V~^T f`` in JainRodriguez95)."""
    return _joined(formulas.cross_force(ArrayOps, *_halves(v), *_halves(f)))


class RigidInertia(NamedTuple):
    """Rigid-body spatial inertia about a frame origin, compact: mass, first moment, inertia.

    As a 6x6 matrix (Rodriguez86 (3.1)): ``[[Ibar, skew(h)], [skew(h).T, m 1]]`` with ``h = m c``
    and ``Ibar = I_com + m (|c|^2 1 - c c^T)`` (parallel-axis theorem, Rodriguez86 after (4.9)).
    """

    m: Float[Array, ...]
    h: Float[Array, "... 3"]
    Ibar: Float[Array, "... 3 3"]


def parallel_axis(m, c, xp=jnp):
    """``m (|c|^2 1 - c c^T)`` ``(..., 3, 3)``: what a mass ``m (...)`` at ``c (..., 3)`` adds to a
    rotational inertia about its centre of mass to give the one about the origin (the
    parallel-axis theorem, Rodriguez86 after (4.9)); subtracted, the way back. ``xp``: the array
    module (``numpy`` for the float64 arithmetic of the loaders and of ``sysid``)."""
    cc = xp.sum(c * c, -1)[..., None, None] * xp.eye(3, dtype=c.dtype) - c[..., :, None] * c[..., None, :]
    return xp.asarray(m)[..., None, None] * cc


def inertia_from_com(m, c, I_com) -> RigidInertia:
    """Rigid inertia about the frame origin from mass, COM and rotational inertia about the COM
    (:func:`parallel_axis`)."""
    return RigidInertia(m, m[..., None] * c, I_com + parallel_axis(m, c))


def inertia_apply(I: RigidInertia, v):
    """``I @ v`` -> force."""
    return _joined(formulas.inertia_apply(ArrayOps, I.m, I.h, I.Ibar, *_halves(v)))


def inertia_to_parent(X: Pose, I: RigidInertia) -> RigidInertia:
    """Express a rigid inertia given in B in frame A (``X*_B I BX_A``), compactly
    (:func:`jaxdyn.spatial_formulas.rigid_to_parent`)."""
    return RigidInertia(*formulas.rigid_to_parent(ArrayOps, X.R, X.p, I.m, I.h, I.Ibar))


def inertia_add(a: RigidInertia, b: RigidInertia) -> RigidInertia:
    """Inertia of two bodies rigidly joined (both about the same frame origin)."""
    return RigidInertia(a.m + b.m, a.h + b.h, a.Ibar + b.Ibar)


def inertia_matrix(I: RigidInertia) -> Float[Array, "... 6 6"]:
    """The 6x6 matrix of a rigid inertia (used to seed articulated inertias)."""
    H = skew(I.h)
    m = I.m[..., None, None] * jnp.eye(3, dtype=I.h.dtype)
    top = jnp.concatenate([I.Ibar, H], -1)
    bot = jnp.concatenate([jnp.swapaxes(H, -1, -2), m], -1)
    return jnp.concatenate([top, bot], -2)


def matrix_inertia_to_parent(X: Pose, M: Float[Array, "... 6 6"]) -> Float[Array, "... 6 6"]:
    """A general symmetric 6x6 inertia (e.g. articulated) from B to A: ``X* M X``, by blocks
    ``M = [[A, B], [B^T, C]]`` (:func:`jaxdyn.spatial_formulas.art_to_parent`)."""
    A, B, C = M[..., :3, :3], M[..., :3, 3:], M[..., 3:, 3:]
    An, Bn, Cn = formulas.art_to_parent(ArrayOps, X.R, X.p, A, B, C)
    top = jnp.concatenate([An, Bn], -1)
    bot = jnp.concatenate([_swap(Bn), Cn], -1)
    return jnp.concatenate([top, bot], -2)


def force_matrix(X: Pose, pR=None) -> Float[Array, "... 6 6"]:
    """``phi(k+1, k)`` as a 6x6 matrix (force in B -> force in A): ``[[R, p~ R], [0, R]]``
    (``pR = p~ R`` may be passed precomputed, e.g. for all links at once). Its transpose is the
    motion transform ``phi^T(k+1, k)`` (motion in A -> motion in B, :func:`motion_to_child`).

    Only for the latency path (Python-unrolled traversal at batch 1, see
    :func:`matrix_inertia_to_parent_dense`): there one 6x6 product per use is a single XLA
    kernel, while the compact form costs several, and on XLA CPU each kernel launch (~75 ns)
    costs more than its arithmetic. Batched code keeps the compact form (fewer flops).
    """
    R = X.R
    Z = jnp.zeros_like(R)
    pR = mm(skew(X.p), R) if pR is None else pR
    return jnp.concatenate([jnp.concatenate([R, pR], -1), jnp.concatenate([Z, R], -1)], -2)


def matrix_inertia_to_parent_dense(F: Float[Array, "... 6 6"], M: Float[Array, "... 6 6"]):
    """``F M F^T`` with ``F = force_matrix(X)``: :func:`matrix_inertia_to_parent` in two 6x6
    products (more flops than the block form, fewer XLA kernels)."""
    return mmt(mm(F, M), F)


# --- rotations -----------------------------------------------------------------------------


def rotation_axis_angle(axis: Float[Array, "... 3"], angle: Float[Array, ...]):
    """Rodrigues' formula for a unit ``axis``."""
    K = skew(axis)
    s, c = jnp.sin(angle)[..., None, None], jnp.cos(angle)[..., None, None]
    return jnp.eye(3, dtype=axis.dtype) + s * K + (1.0 - c) * mm(K, K)


def quaternion_matrix(w, x, y, z):
    """The 9 entries (row-major) of the rotation of the quaternion ``[w, x, y, z]``, normalised
    here (``s = 2 / |q|^2``, so any non-zero ``q`` works), over any scalars: arrays of one shape
    or the ``(B,)`` rows of the struct-of-arrays kernels."""
    s = 2.0 / (w * w + x * x + y * y + z * z)
    return (
        1 - s * (y * y + z * z),
        s * (x * y - w * z),
        s * (x * z + w * y),
        s * (x * y + w * z),
        1 - s * (x * x + z * z),
        s * (y * z - w * x),
        s * (x * z - w * y),
        s * (y * z + w * x),
        1 - s * (x * x + y * y),
    )


def quat_to_rotation(q: Float[Array, "... 4"]) -> Float[Array, "... 3 3"]:
    """Rotation matrix of a quaternion ``[w, x, y, z]`` (normalised here, so any non-zero q works;
    :func:`quaternion_matrix`)."""
    R = quaternion_matrix(q[..., 0], q[..., 1], q[..., 2], q[..., 3])
    return jnp.stack(R, -1).reshape(q.shape[:-1] + (3, 3))


def rotation_to_quat(R, xp=jnp):
    """Unit quaternion ``[w, x, y, z]`` (``w >= 0``) of a rotation matrix, by Shepperd's method
    (Shepperd 1978): of ``4 w^2 = 1 + tr R`` and ``4 x^2 = 1 + 2 R_xx - tr R`` (likewise ``y``,
    ``z``) the largest is taken by its square root, at least 1/2, and the other three components
    from the off-diagonal sums and differences divided by it, so the result is exact and smooth
    everywhere (no division by a small number); the inverse of :func:`quat_to_rotation`.
    ``R`` ``(..., 3, 3)`` -> ``(..., 4)``; ``xp``: the array module (``numpy`` for host arrays,
    as :func:`parallel_axis`)."""
    r = lambda i, j: R[..., i, j]  # noqa: E731
    tr = r(0, 0) + r(1, 1) + r(2, 2)
    sq = xp.stack([1.0 + tr, 1.0 + 2.0 * r(0, 0) - tr, 1.0 + 2.0 * r(1, 1) - tr, 1.0 + 2.0 * r(2, 2) - tr], -1)
    k = xp.argmax(sq, -1)
    # each candidate: its own component 0.5 sqrt(4 c^2), the others (sum or difference) / (4 c);
    # the largest 4 c^2 is at least 1, so the floor of 1 only touches candidates not chosen
    c = 0.5 * xp.sqrt(xp.maximum(sq, 1.0))
    d = 0.25 / c
    wx, wy, wz = r(2, 1) - r(1, 2), r(0, 2) - r(2, 0), r(1, 0) - r(0, 1)
    xy, xz, yz = r(0, 1) + r(1, 0), r(0, 2) + r(2, 0), r(1, 2) + r(2, 1)
    cands = xp.stack(
        [
            xp.stack([c[..., 0], wx * d[..., 0], wy * d[..., 0], wz * d[..., 0]], -1),
            xp.stack([wx * d[..., 1], c[..., 1], xy * d[..., 1], xz * d[..., 1]], -1),
            xp.stack([wy * d[..., 2], xy * d[..., 2], c[..., 2], yz * d[..., 2]], -1),
            xp.stack([wz * d[..., 3], xz * d[..., 3], yz * d[..., 3], c[..., 3]], -1),
        ],
        -2,
    )
    q = xp.take_along_axis(cands, k[..., None, None], -2)[..., 0, :]
    return xp.where(q[..., :1] < 0, -q, q)


def rotation_log(R: Float[Array, "... 3 3"]) -> Float[Array, "... 3"]:
    """Rotation vector of a rotation matrix, angle in ``[0, pi]`` (``log(R)^v``; through
    :func:`rotation_to_quat` and :func:`quat_log`)."""
    return quat_log(rotation_to_quat(R))


def quat_multiply(a, b):
    """Hamilton product of quaternions ``[w, x, y, z]``."""
    aw, av = a[..., :1], a[..., 1:]
    bw, bv = b[..., :1], b[..., 1:]
    w = aw * bw - (av[..., :1] * bv[..., :1] + av[..., 1:2] * bv[..., 1:2] + av[..., 2:3] * bv[..., 2:3])
    v = aw * bv + bw * av + cross(av, bv)
    return jnp.concatenate([w, v], -1)


def quat_conjugate(q):
    """Conjugate ``[w, -x, -y, -z]`` (the inverse of a unit quaternion)."""
    return jnp.concatenate([q[..., :1], -q[..., 1:]], -1)


def _safe_norm(x, eps):
    n2 = _sum_terms([x[..., j] * x[..., j] for j in range(x.shape[-1])])
    small = n2 < eps
    return jnp.sqrt(jnp.where(small, 1.0, n2)), small, n2


def quat_exp(w: Float[Array, "... 3"]) -> Float[Array, "... 4"]:
    """Unit quaternion of the rotation vector ``w`` (``exp(w^)``), smooth at ``w = 0``."""
    th, small, th2 = _safe_norm(w, 1e-12)
    half = 0.5 * th
    s = jnp.where(small, 0.5 - th2 / 48.0, jnp.sin(half) / th)
    c = jnp.where(small, 1.0 - th2 / 8.0, jnp.cos(half))
    return jnp.concatenate([c[..., None], s[..., None] * w], -1)


def quat_log(q: Float[Array, "... 4"]) -> Float[Array, "... 3"]:
    """Rotation vector of a unit quaternion, angle in [0, pi] (shortest rotation)."""
    q = jnp.where(q[..., :1] < 0, -q, q)
    v = q[..., 1:]
    sn, small, sn2 = _safe_norm(v, 1e-12)
    ang = 2.0 * jnp.arctan2(sn, q[..., 0])
    scale = jnp.where(small, 2.0 / q[..., 0] * (1.0 - sn2 / (3.0 * q[..., 0] ** 2)), ang / sn)
    return scale[..., None] * v


def exp6(m: Float[Array, "... 6"]) -> tuple[Float[Array, "... 4"], Float[Array, "... 3"]]:
    """SE(3) exponential of a twist ``[omega; v]``: returns (quaternion, translation).

    ``p = V(omega) v`` with ``V = 1 + (1 - cos t)/t^2 w~ + (t - sin t)/t^3 w~^2`` (Rodrigues).
    """
    w, v = m[..., :3], m[..., 3:]
    th, small, th2 = _safe_norm(w, 1e-10)
    a = jnp.where(small, 0.5 - th2 / 24.0, (1.0 - jnp.cos(th)) / jnp.where(small, 1.0, th2))
    b = jnp.where(small, 1.0 / 6.0 - th2 / 120.0, (th - jnp.sin(th)) / jnp.where(small, 1.0, th2 * th))
    wv = cross(w, v)
    p = v + a[..., None] * wv + b[..., None] * cross(w, wv)
    return quat_exp(w), p


def log6(quat, p) -> Float[Array, "... 6"]:
    """Inverse of :func:`exp6`: twist ``[omega; v]`` with ``exp6(twist) == (quat, p)``."""
    w = quat_log(quat)
    th, small, th2 = _safe_norm(w, 1e-10)
    safe_th = jnp.where(small, 1.0, th)
    # V^-1 = 1 - w~/2 + c w~^2, c = (1 - t sin t / (2 (1 - cos t))) / t^2
    c_big = (1.0 - safe_th * jnp.sin(safe_th) / (2.0 * (1.0 - jnp.cos(safe_th)))) / (safe_th**2)
    c = jnp.where(small, 1.0 / 12.0 + th2 / 720.0, c_big)
    wp = cross(w, p)
    v = p - 0.5 * wp + c[..., None] * cross(w, wp)
    return jnp.concatenate([w, v], -1)


def spd_inverse(D):
    """``D^-1`` for small symmetric positive definite ``D (..., k, k)`` (the joint-space blocks
    ``D = S^T P S`` of Rodriguez86 (8.5)): the columns ``D^-1 e_c`` from the unrolled ``L diag(d)
    L^T`` factorisation of :func:`jaxdyn.scalars.ldl_factor` (the batch kernels' too), written as
    elementwise operations on ``D``'s entries (the unit vectors ``e_c`` are literals, so their
    zeros fold away). Unlike ``jnp.linalg.inv`` (a LAPACK / cuSOLVER call per batch on CPU /
    GPU, which XLA cannot fuse) it fuses with the rest of a link step; k <= 6 here (the free
    root)."""
    k = D.shape[-1]
    if k == 1:
        return 1.0 / D
    factor = scalars.ldl_factor([[D[..., r, c] for c in range(k)] for r in range(k)])
    cols = [scalars.ldl_solve(factor, [1.0 if r == c else 0.0 for r in range(k)]) for c in range(k)]
    return jnp.stack([jnp.stack([cols[c][r] for c in range(k)], -1) for r in range(k)], -2)


class ArrayAlgebra:
    """The operations the link steps of :mod:`jaxdyn.algorithms` are written with, on arrays:
    motions and forces ``(..., 6)``, a :class:`Pose` ``X``, a :class:`RigidInertia` ``I``, a
    motion subspace ``S (..., 6, k)`` and joint-space values ``(..., k)``. The batch kernels run
    the same steps with a struct-of-arrays algebra of the same names
    (:class:`jaxdyn.kernels.soa_algebra.SoAAlgebra`), where every scalar is its own ``(B,)`` array."""

    motion_to_child = staticmethod(motion_to_child)
    force_to_parent = staticmethod(force_to_parent)
    cross_motion = staticmethod(cross_motion)
    cross_force = staticmethod(cross_force)
    inertia_apply = staticmethod(inertia_apply)

    @staticmethod
    def add(*xs):
        """Sum of motions or forces."""
        return _sum_terms(list(xs))

    @staticmethod
    def sub(a, b):
        """``a - b``; ``b = None`` is zero."""
        return a if b is None else a - b

    # products with a motion subspace S (..., 6, k) and joint-space values (..., k):
    smul = staticmethod(mv)  # S x: joint space to a motion or force
    stmul = staticmethod(mtv)  # S^T f: a motion or force to joint space

    @staticmethod
    def joint_axpy(a, x, y):
        """``a * x + y`` for joint-space values."""
        return a * x + y

    @staticmethod
    def joint_sub(a, b):
        """``a - b`` for joint-space values."""
        return a - b

    @staticmethod
    def dot(m, f):
        """The pairing ``m . f`` ``(...)`` of a motion and a force ``(..., 6)`` (a power)."""
        return _sum_terms([m[..., k] * f[..., k] for k in range(6)])

    compose = staticmethod(compose)
    inertia_to_parent = staticmethod(inertia_to_parent)
    inertia_add = staticmethod(inertia_add)
    subspace_to_parent = staticmethod(motion_matrix_to_parent)

    # articulated inertias: symmetric (..., 6, 6) matrices (Rodriguez86 (8.4))
    art_of = staticmethod(inertia_matrix)
    art_to_parent = staticmethod(matrix_inertia_to_parent)

    art_apply = staticmethod(mv)  # P m: an articulated inertia times a motion
    art_times_S = staticmethod(mm)  # P S (..., 6, k)

    @staticmethod
    def art_sub_outer(P, G, U):
        """``P - G U^T`` for ``G, U (..., 6, k)``."""
        return P - mmt(G, U)

    @staticmethod
    def joint_inertia(S, U, armature):
        """``S^T U + diag(armature) (..., k, k)``."""
        k = armature.shape[-1]
        return mtm(S, U) + armature[..., None] * jnp.eye(k, dtype=U.dtype)

    joint_factor = staticmethod(spd_inverse)

    joint_solve = staticmethod(mv)  # D^-1 r from joint_factor's D^-1
    gain = staticmethod(mm)  # G = U D^-1 (..., 6, k)


class _ForceParts(NamedTuple):
    """A link transform for the one-sample unrolled traversal: ``R`` and ``p~ R``, the blocks of
    the 6x6 force matrix (:func:`force_matrix`)."""

    R: jnp.ndarray
    pR: jnp.ndarray


class DenseArrayAlgebra(ArrayAlgebra):
    """:class:`ArrayAlgebra` with each transform applied as one 6x6 product (:func:`force_matrix`;
    ``X`` is a :class:`_ForceParts` made by :meth:`parts`). More flops than the compact form,
    fewer XLA kernels: for unrolled one-sample programs on XLA CPU, which are kernel-launch bound.
    The motion transform ``phi^T`` is the force transform ``phi`` transposed, so one matrix per
    link serves every sweep (XLA merges the identical builds)."""

    @staticmethod
    def parts(X: Pose) -> _ForceParts:
        """``(R, p~ R)`` of a (stack of) poses."""
        return _ForceParts(X.R, mm(skew(X.p), X.R))

    @staticmethod
    def motion_to_child(X, m):
        return mtv(force_matrix(X, pR=X.pR), m)

    @staticmethod
    def force_to_parent(X, f):
        return mv(force_matrix(X, pR=X.pR), f)

    @staticmethod
    def art_to_parent(X, P):
        return matrix_inertia_to_parent_dense(force_matrix(X, pR=X.pR), P)


# The link steps' interface (:class:`jaxdyn.algebra.Algebra`): mypy checks that both array
# algebras, used as classes, provide every operation.
_ALGEBRAS: tuple[Algebra, ...] = (ArrayAlgebra, DenseArrayAlgebra)
