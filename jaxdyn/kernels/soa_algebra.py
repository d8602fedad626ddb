"""The struct-of-arrays (SoA) spatial algebra of the batch kernels (:mod:`jaxdyn.kernels.soa`).

Every scalar of the recursion is its own ``(B,)`` array (batch last), a 0-d model number or a
Python float, a constant known at trace time whose structural zeros cost nothing
(:mod:`jaxdyn.scalars`). A 3-vector is a tuple of 3 scalars, a rotation 9, a symmetric 3x3 its 6
upper entries, an articulated inertia ``[[A, B], [B^T, C]]`` its 21 independent entries
``(A sym 6, B 9, C sym 6)`` and a rigid inertia ``(m, h (3), Ibar sym 6)``. :class:`SoAAlgebra`
gives the link steps of :mod:`jaxdyn.algorithms` the same operations as
:class:`jaxdyn.spatial.ArrayAlgebra`; the values a step hands to several consumers are computed
once on XLA CPU (:meth:`SoAAlgebra.keep`).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from .. import scalars
from .. import spatial_formulas as formulas
from ..algebra import Algebra

# --- values computed once (XLA CPU) -------------------------------------------------------------
#
# XLA CPU fuses a cheap elementwise producer into *every* consumer. On these graphs, where each
# scalar of a link step feeds several others, that recomputes whole upstream cones in each fused
# loop (panda ABA, scanned: 3.5x the multiplies, and an unrolled 7-link program that does not
# finish compiling in 10 minutes). XLA does not duplicate an expensive instruction (a division),
# so every value that a link step hands to several consumers passes through ``x / one``, with
# ``one`` a runtime 1 that XLA cannot fold: each such value becomes the root of one fused loop,
# computed once, and the short chains between them still fuse. Division by 1 is exact. Under a
# plain ``jax.jit`` the ABA, RNEA and CRBA run 1.1-2.8x faster than the same programs with XLA's
# fusion switched off (panda, solo12, talos at batch 4096; benchmarks/results/
# cpu-2026-11-25-fusion-ab.md); forward-mode derivatives through them do not (see
# :data:`COMPILER_OPTIONS`). A kernel traced on a CPU backend runs its steps with an algebra that
# holds the runtime 1 (:meth:`SoAAlgebra.for_batch`); elsewhere (GPU: XLA GPU fuses these graphs
# without duplicating them; Pallas kernel bodies) the algebra holds none and ``keep`` is the
# identity.


def _runtime_one(seed):
    """``1 + 0 * seed[0]`` per sample on a CPU backend (exactly 1, also where the seed is not
    finite), else None; ``seed`` is a traced batch-last input ``(k, B)``."""
    if jax.default_backend() != "cpu":
        return None
    s = jax.lax.stop_gradient(seed[0])  # (B,): the first coordinate of each sample (batch last)
    return 1.0 + jnp.where(jnp.isfinite(s), 0.0 * s, 0.0)


def _keep(one, tree_):
    """``tree_`` with each floating array leaf over the batch divided by ``one``; literals,
    integer leaves, model numbers and everything when ``one`` is None pass unchanged."""
    if one is None:
        return tree_

    def leaf(x):
        # arrays over the batch (SoA scalars (B,), stacks (k, B)); model numbers pass unchanged
        if isinstance(x, jax.Array) and x.shape[-1:] == one.shape and jnp.issubdtype(x.dtype, jnp.floating):
            return x / one.astype(x.dtype)
        return x

    return jax.tree_util.tree_map(leaf, tree_)


def kept(fn):
    """Decorator for a function whose first argument is an :class:`SoAAlgebra` (or
    :class:`SoAOps`): its outputs computed once (a helper whose results feed several consumers)."""

    @functools.wraps(fn)
    def wrapper(alg, *args, **kwargs):
        return alg.keep(fn(alg, *args, **kwargs))

    return wrapper


def kept_step(fn):
    """Decorator for a :mod:`jaxdyn.tree` step whose first argument is an :class:`SoAAlgebra`
    (bound with ``functools.partial``): its other inputs (the parent's values gathered from the
    per-link buffers, the link's slice of the scanned arrays) and its outputs computed once."""

    @functools.wraps(fn)
    def wrapper(alg, *args):
        return alg.keep(fn(alg, *alg.keep(args)))

    return wrapper


# --- scalar helpers that skip structural zeros (Python literals) ---------------------------------


_lit, _mul, _add, _neg, _sub = scalars.is_literal, scalars.mul, scalars.add, scalars.neg, scalars.sub


def v_add(a, b):
    return tuple(_add(x, y) for x, y in zip(a, b))


def _v_sub(a, b):
    return tuple(_sub(x, y) for x, y in zip(a, b))


def _v_scale(s, a):
    return tuple(_mul(s, x) for x in a)


def _row(M, r):
    return M[3 * r : 3 * r + 3]


def _col(M, c):
    return (M[c], M[3 + c], M[6 + c])


def _skew(p):
    return (0.0, _neg(p[2]), p[1], p[2], 0.0, _neg(p[0]), _neg(p[1]), p[0], 0.0)


UPPER = ((0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2))
_SYM = {rc: k for k, rc in enumerate(UPPER)}


def _sym_full(S):
    return tuple(S[_SYM[(min(r, c), max(r, c))]] for r in range(3) for c in range(3))


# --- spatial algebra on SoA tuples: jaxdyn.spatial_formulas over SoAOps ---------------------------


class SoAOps:
    """The 3-vector operations of the SoA layout for :mod:`jaxdyn.spatial_formulas`: a 3-vector
    a tuple of 3 scalars, a 3x3 matrix 9 (row-major), a symmetric one its 6 upper entries; the
    products' dot products computed once (:meth:`keep`) when ``one``, the runtime 1, is given."""

    def __init__(self, one=None):
        self.one = one

    def keep(self, tree_):
        """``tree_`` with each value over the batch computed once (``x / one``; module comment)."""
        return _keep(self.one, tree_)

    add = staticmethod(v_add)
    sub = staticmethod(_v_sub)
    scale = staticmethod(_v_scale)
    skew = staticmethod(_skew)
    sym_full = staticmethod(_sym_full)
    sadd = staticmethod(_add)
    smul = staticmethod(_mul)

    @kept
    def dot(self, a, b):
        return _add(*[_mul(x, y) for x, y in zip(a, b)])

    @kept
    def cross(self, a, b):
        return (
            _sub(_mul(a[1], b[2]), _mul(a[2], b[1])),
            _sub(_mul(a[2], b[0]), _mul(a[0], b[2])),
            _sub(_mul(a[0], b[1]), _mul(a[1], b[0])),
        )

    def mv(self, M, x):
        return tuple(self.dot(_row(M, r), x) for r in range(3))

    def mtv(self, M, x):
        return tuple(self.dot(_col(M, r), x) for r in range(3))

    def mm(self, A, B):
        return tuple(self.dot(_row(A, r), _col(B, c)) for r in range(3) for c in range(3))

    @kept
    def sym_mv(self, S, x):
        return self.mv(_sym_full(S), x)

    def rot_sym(self, R, S):
        """``R S R^T`` for symmetric ``S`` (6 upper entries in and out)."""
        T = self.mm(R, _sym_full(S))
        return tuple(self.dot(_row(T, r), _row(R, c)) for r, c in UPPER)

    def rot_gen(self, R, M):
        """``R M R^T`` for a general 3x3 ``M``."""
        T = self.mm(R, M)
        return tuple(self.dot(_row(T, r), _row(R, c)) for r in range(3) for c in range(3))

    @staticmethod
    def sym_of(M):
        return tuple(M[3 * r + c] for r, c in UPPER)

    @staticmethod
    def transpose(M):
        return tuple(M[3 * c + r] for r in range(3) for c in range(3))

    @staticmethod
    def eye(s):
        return (s, 0.0, 0.0, 0.0, s, 0.0, 0.0, 0.0, s)

    @staticmethod
    def outer(a, b):
        return tuple(_mul(a[r], b[c]) for r in range(3) for c in range(3))

    @staticmethod
    def gadd(*Ms):
        return tuple(_add(*xs) for xs in zip(*Ms))

    @staticmethod
    def gsub(A, B):
        return tuple(_sub(x, y) for x, y in zip(A, B))


def _art_matrix(A, B, C):
    """Rows of the full 6x6 from ``(A, B, C)``."""
    Af, Cf = _sym_full(A), _sym_full(C)
    rows = []
    for r in range(3):
        rows.append(list(_row(Af, r)) + list(_row(B, r)))
    for r in range(3):
        rows.append(list(_col(B, r)) + list(_row(Cf, r)))
    return rows


ZERO3 = (0.0, 0.0, 0.0)
_E3 = tuple(tuple(float(k == j) for j in range(3)) for k in range(3))
# the identity placement and a free root's S = 1_6 (six unit motions), as literals that fold away
IDENTITY_X = (sum(_E3, ()), ZERO3)
UNIT_MOTIONS = [(_E3[k], ZERO3) for k in range(3)] + [(ZERO3, _E3[k]) for k in range(3)]


def _is_art(x):
    """An articulated inertia ``(A, B, C)`` (a motion or force is a pair, a multi-dof joint's
    ``S`` a list)."""
    return isinstance(x, tuple) and len(x) == 3


def _cols(S):
    """The columns of a joint's ``S``: the motions of a multi-dof joint's list, or the one motion
    of a 1-dof joint."""
    return S if isinstance(S, list) else [S]


class SoAAlgebra:
    """The struct-of-arrays algebra of the link steps of :mod:`jaxdyn.algorithms` (the
    :class:`jaxdyn.algebra.Algebra` of :class:`jaxdyn.spatial.ArrayAlgebra`): a motion or force is
    ``(angular, linear)``, two 3-tuples of scalars; ``X = (R, p)`` (9 + 3 scalars);
    ``I = (m, h, Ibar)`` (1 + 3 + 6); a 1-dof joint's ``S = (s_angular, s_linear)`` with a scalar
    joint-space value, a k-dof joint's ``S`` a list of k such motions (the spherical joint's
    ``[1_3; 0]``) with joint-space values lists of k scalars (``U = P S`` and the gain ``G``
    lists of motions, ``D`` a k x k list of rows solved by an unrolled ``L D L^T``), and
    ``S = None`` the free root's ``1_6`` with joint-space values 6-sequences. A scalar is a
    ``(B,)`` array, a 0-d model number or a Python float (structural zeros skipped).

    ``one`` is the runtime 1 of a kernel traced on a CPU (:meth:`for_batch`; module comment):
    the composite operations then compute their outputs once (:meth:`keep`). Without it
    (``SoAAlgebra()``: a GPU, a Pallas kernel body) every value passes unchanged."""

    def __init__(self, one=None):
        self.one = one
        self.o = SoAOps(one)

    @classmethod
    def for_batch(cls, seed) -> SoAAlgebra:
        """The algebra of a kernel traced on the batch-last input ``seed`` ``(k, B)``: with a
        runtime 1 on a CPU backend, without one elsewhere."""
        return cls(_runtime_one(seed))

    def keep(self, tree_):
        """``tree_`` with each value over the batch computed once (``x / one``; module comment):
        for the values a link step hands to several consumers."""
        return _keep(self.one, tree_)

    @kept
    def motion_to_child(self, X, m):
        return formulas.motion_to_child(self.o, *X, *m)

    @kept
    def force_to_parent(self, X, f):
        return formulas.force_to_parent(self.o, *X, *f)

    @kept
    def cross_motion(self, v, m):
        return formulas.cross_motion(self.o, *v, *m)

    @kept
    def cross_force(self, v, f):
        return formulas.cross_force(self.o, *v, *f)

    @kept
    def inertia_apply(self, I, m):
        return formulas.inertia_apply(self.o, *I, *m)

    @staticmethod
    def add(*xs):
        out = xs[0]
        for x in xs[1:]:
            out = (v_add(out[0], x[0]), v_add(out[1], x[1]))
        return out

    @staticmethod
    def sub(a, b):
        return a if b is None else (_v_sub(a[0], b[0]), _v_sub(a[1], b[1]))

    def smul(self, S, x):
        if S is None:
            return tuple(x[0:3]), tuple(x[3:6])
        if isinstance(S, list):  # sum_k S_k x_k
            return self.add(*[self.smul(Sk, xk) for Sk, xk in zip(S, x)])
        return _v_scale(x, S[0]), _v_scale(x, S[1])

    def stmul(self, S, f):
        if S is None:
            return list(f[0]) + list(f[1])
        if isinstance(S, list):
            return [self.stmul(Sk, f) for Sk in S]
        if _is_art(S):  # the free root's U = P 1_6: U^T f = P f (P symmetric)
            return self.stmul(None, self.art_apply(S, f))
        return self.dot(S, f)

    @staticmethod
    def joint_axpy(a, x, y):
        if isinstance(y, list):
            return [_add(_mul(ak, xk), yk) for ak, xk, yk in zip(a, x, y)]
        return _add(_mul(a, x), y)

    @staticmethod
    def joint_sub(a, b):
        if isinstance(a, list):
            return [_sub(x, y) for x, y in zip(a, b)]
        return _sub(a, b)

    def dot(self, m, f):
        """The pairing ``m . f`` of a motion and a force: one scalar."""
        return _add(self.o.dot(m[0], f[0]), self.o.dot(m[1], f[1]))

    def compose(self, a, b):
        return formulas.compose(self.o, *a, *b)

    @kept
    def inertia_to_parent(self, X, I):
        return formulas.rigid_to_parent(self.o, *X, *I)

    @staticmethod
    def inertia_add(a, b):
        """Two rigid inertias ``(m, h, Ibar)`` about the same origin, joined."""
        return _add(a[0], b[0]), v_add(a[1], b[1]), v_add(a[2], b[2])

    def subspace_to_parent(self, X, S):
        """A joint's ``S`` (a motion, or a list of them) from B to A: ``[R w; R v + p x R w]``."""
        if isinstance(S, list):
            return [self.subspace_to_parent(X, Sk) for Sk in S]
        return formulas.motion_to_parent(self.o, *X, *S)

    # articulated inertias: the 21 entries (A sym 6, B 9, C sym 6) of [[A, B], [B^T, C]]
    @kept
    def art_of(self, I):
        """Rigid inertia as the 21 entries ``(A, B, C)`` of ``[[Ibar, [h]x], [[h]x^T, m 1]]``."""
        m, h, Ib = I
        return tuple(Ib), _skew(h), (m, 0.0, 0.0, m, 0.0, m)

    @kept
    def art_to_parent(self, X, P):
        return formulas.art_to_parent(self.o, *X, *P)

    def art_apply(self, P, m):
        (A, B, C), (w, v) = P, m
        o = self.o
        return v_add(o.sym_mv(A, w), o.mv(B, v)), v_add(o.mtv(B, w), o.sym_mv(C, v))

    def art_times_S(self, P, S):
        if S is None:
            return P
        if isinstance(S, list):  # computed once: read by D, the gain and P+
            return self.keep([self.art_apply(P, Sk) for Sk in S])
        return self.art_apply(P, S)

    @staticmethod
    def art_sub_outer(P, G, U):
        """``P - G U^T = P - sum_k G_k U_k^T`` (``G``, ``U`` motions, or lists of them for a
        k-dof joint), on the 21 entries."""
        (A, B, C), GU = P, list(zip(_cols(G), _cols(U)))

        def outer(half_g, half_u, r, c):
            return _add(*[_mul(g[half_g][r], u[half_u][c]) for g, u in GU])

        return (
            tuple(_sub(A[k], outer(0, 0, r, c)) for k, (r, c) in enumerate(UPPER)),
            tuple(_sub(B[3 * r + c], outer(0, 1, r, c)) for r in range(3) for c in range(3)),
            tuple(_sub(C[k], outer(1, 1, r, c)) for k, (r, c) in enumerate(UPPER)),
        )

    def joint_inertia(self, S, U, armature):
        if S is None:  # the free root: D = P + diag(armature), rows of scalars
            Pm = _art_matrix(*U)
            return [[_add(Pm[r][c], armature[r]) if r == c else Pm[r][c] for c in range(6)] for r in range(6)]
        if isinstance(S, list):  # a k-dof joint: D = S^T U + diag(armature), rows of scalars
            rows = [self.stmul(S, Uc) for Uc in U]  # rows[c][r] = S_r^T U_c (symmetric)
            return [
                [_add(rows[c][r], armature[r]) if r == c else rows[c][r] for c in range(len(S))] for r in range(len(S))
            ]
        return _add(self.stmul(S, U), armature)

    def joint_factor(self, D):
        return self.keep(scalars.ldl_factor(D)) if isinstance(D, list) else 1.0 / D

    def joint_solve(self, F, r):
        return self.keep(scalars.ldl_solve(F, r)) if isinstance(r, list) else _mul(F, r)

    def gain(self, U, Dinv):
        if isinstance(U, list):  # G = U D^-1: each of the six rows of U solved with D (symmetric)
            rows = [scalars.ldl_solve(Dinv, [Uk[h][r] for Uk in U]) for h in range(2) for r in range(3)]
            return self.keep(
                [(tuple(rows[r][k] for r in range(3)), tuple(rows[3 + r][k] for r in range(3))) for k in range(len(U))]
            )
        return _v_scale(Dinv, U[0]), _v_scale(Dinv, U[1])


# The link steps' interface (:class:`jaxdyn.algebra.Algebra`): mypy checks that the SoA algebra
# provides every operation.
_ALGEBRA: Algebra = SoAAlgebra()
