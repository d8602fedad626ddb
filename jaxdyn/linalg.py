"""Small dense linear algebra in XLA operations: Cholesky and Gaussian elimination for the
``nv x nv`` and ``m x m`` systems of one sample (a Newton step of the implicit contact step, a
constraint solve, a Riccati step of iLQR), written so that ``vmap`` turns them into element-wise
loops over the batch.

Why not ``jnp.linalg``: on a CPU, jaxlib sends a batched ``cholesky``, ``cho_factor`` or
``solve`` to LAPACK through a custom call that splits the batch over XLA's intra-op thread pool
and blocks its thread until the pieces finish. When two such calls run at once (two independent
factorisations in one program, as in the contact step) and they hold every thread of the pool,
the pieces they wait for never run: the program hangs with every thread parked (jaxlib 0.10.2;
reproduced with two independent batched ``cho_factor`` calls at batch 1,024 on 2 cores,
``--xla_cpu_multi_thread_eigen=false`` included). These functions call no library kernel, so
they cannot take part in that wait, on any backend.

That is the CPU's executor (``planner.dense() == "elementwise"``). Elsewhere (``"library"``, the
default on a GPU, where each loop trip costs a launch and a read of its predicate by the host)
the same functions call the backend's batched factorisations and triangular solves
(``jax.lax.linalg``: cuSOLVER and cuBLAS), with the same results to round-off and the same
implicit derivatives; :func:`jaxdyn.executor` chooses either on any backend.

Glossary: ``A`` the matrix (``n x n``), ``L`` its lower Cholesky factor (``A = L L^T``), ``b`` a
right-hand side ``(n,)`` or ``(n, k)``.

* :func:`cholesky`: ``L`` by columns (Cholesky-Banachiewicz): for ``j = 0..n-1``,
  ``c = a_j - L l_j`` (``l_j`` row ``j`` of ``L``, zero from column ``j`` on),
  ``L_jj = sqrt(c_j)``, ``L_ij = c_i / L_jj`` for ``i > j``. ``n`` steps of ``O(n^2)``; a
  matrix that is not positive definite gives NaN, as LAPACK's does through ``jnp.linalg``.
* :func:`cho_solve`: ``L y = b`` forward (:func:`solve_lower`), ``L^T x = y`` backward, a
  column per step.
* :func:`min_pivot`: the smallest pivot of the Cholesky factorisation with diagonal pivoting,
  a rank test for a positive semi-definite matrix (the hard constraint solve's).
* :func:`spd_solve` and :func:`solve`: ``x = A^-1 b`` differentiated implicitly
  (``lax.custom_linear_solve``: ``dx = A^-1 (db - dA x)``), so derivatives never run through
  the factorisation's loop; :func:`solve` eliminates with partial pivoting then substitutes
  back (any nonsingular ``A``), or with ``pivot=False`` by Gauss-Jordan elimination of
  ``[A | b]`` (``n`` steps, no back substitution), and solves ``A^T`` for reverse mode.
* :func:`gauss_jordan`: ``A^-1 b`` and the pivots by Gauss-Jordan elimination without row
  exchanges (every pivot positive: a symmetric ``A`` is positive definite), ``unroll`` as
  below; :func:`solve` with ``pivot=False`` solves by it.
* :class:`Bordered` (``pattern=`` of :func:`spd_solve` and :func:`solve`): the solve of a
  bordered block-diagonal matrix, whose only nonzero entries are in independent diagonal
  blocks and in the rows and columns of a border, by block elimination: each block's
  ``[A_kk | A_kr | b_k]`` by Gauss-Jordan (all blocks of a size at once), the border's Schur
  complement ``A_rr - sum_k A_rk A_kk^-1 A_kr`` likewise, then each block's unknowns. No
  entry outside the pattern fills in. The mass matrix of a branched tree has this pattern (the
  dofs of two branches couple only through their common ancestors:
  :func:`jaxdyn.tree.branch_pattern`), and keeps it under the implicit step's contact and
  friction terms. Under ``vmap`` on a CPU the Go1's 18 x 18 (a 6-dof border, four 3-dof legs)
  took 0.8 us per sample against 3.1 for the dense Cholesky solve (256 samples, float32).
* ``unroll=True`` (:func:`cholesky`, :func:`solve_lower`, :func:`cho_solve`,
  :func:`gauss_jordan`; the loops only,
  the library has none): the ``n`` steps as straight-line code. For a few small matrices
  inside a loop of their own, where each iteration of an inner loop costs more than its
  arithmetic: the Riccati step of :mod:`jaxdyn.trajopt` (7 x 7, inside the scan over 100
  knots) took 10.3-11.8 ms per iLQR iteration unrolled against 18.2-19.5 as loops
  (``docs/benchmarks.md``). Under ``vmap`` over a batch, where each step's arithmetic is wide,
  the loops measured faster (a Cholesky and two substitutions of 18 x 18 at 256 samples: 3.8
  against 4.3 us per sample unrolled).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import jax.scipy.linalg
import numpy as np
from jaxtyping import Array, Float

from . import planner

__all__ = ["Bordered", "cholesky", "cho_solve", "solve_lower", "spd_solve", "solve", "gauss_jordan", "min_pivot"]


def cholesky(A: Float[Array, "n n"], unroll: bool = False) -> Float[Array, "n n"]:
    """Lower-triangular ``L`` with ``L L^T = A`` for a symmetric positive-definite ``A`` (only
    its lower triangle is read). Differentiable (through the loop); prefer :func:`spd_solve`
    when only solves are differentiated. ``unroll``: the ``n`` steps as straight-line code
    instead of a loop (for a few small matrices inside a loop of their own, where each
    iteration of a loop costs more than its arithmetic)."""
    A = jnp.asarray(A)
    if _library():
        return jax.lax.linalg.cholesky(A, symmetrize_input=False)
    n = A.shape[-1]
    i = jnp.arange(n)

    def column(j, L):
        c = A[:, j] - L @ L[j]
        return L.at[:, j].set(jnp.where(i >= j, c, 0.0) / jnp.sqrt(c[j]))

    return jax.lax.fori_loop(0, n, column, jnp.zeros_like(A), unroll=unroll or None)


def solve_lower(
    L: Float[Array, "n n"], b: Float[Array, "n ..."], unroll: bool = False, transpose: bool = False
) -> Float[Array, "n ..."]:
    """``y`` with ``L y = b`` (``L`` lower triangular, as from :func:`cholesky`), a column per
    step; with ``transpose``, ``L^T y = b`` (backward). With the Cholesky factor of ``A``,
    ``|y|^2 = b^T A^-1 b`` (one substitution where :func:`cho_solve` takes two)."""
    L, b = jnp.asarray(L), jnp.asarray(b)
    if _library():
        return jax.scipy.linalg.solve_triangular(L, b, lower=True, trans=1 if transpose else 0)
    if transpose:
        return _backward(L.T, b, unroll)
    return _substitute(L, b, reverse=False, unroll=unroll)


def _library() -> bool:
    return planner.dense() == "library"


def _substitute(T, b, reverse: bool, unroll: bool = False):
    """``x`` with ``T x = b`` for a lower (``reverse=False``) or upper (``reverse=True``)
    triangular ``T``, from the row with one unknown on, column-oriented: ``x_i = r_i / T_ii``,
    then ``r -= T[:, i] x_i``. The row-oriented form (``x_i = (b_i - T_i . x) / T_ii``) reduces
    a row per step, which XLA CPU (jax 0.10.2) hands to YNNPACK under ``vmap``: the feet-only
    Go1's contact step took 3 % more CPU time with it."""
    n = T.shape[-1]
    shape = (n,) + (1,) * (b.ndim - 1)

    def col(k, c):
        x, r = c
        i = n - 1 - k if reverse else k
        xi = r[i] / T[i, i]
        return x.at[i].set(xi), r - T[:, i].reshape(shape) * xi

    return jax.lax.fori_loop(0, n, col, (jnp.zeros_like(b), b), unroll=unroll or None)[0]


def _backward(U, y, unroll: bool = False):
    """``x`` with ``U x = y`` (``U`` upper triangular)."""
    return _substitute(U, y, reverse=True, unroll=unroll)


def cho_solve(L: Float[Array, "n n"], b: Float[Array, "n ..."], unroll: bool = False) -> Float[Array, "n ..."]:
    """``x`` with ``L L^T x = b``, ``L`` from :func:`cholesky` (``unroll`` as there)."""
    L, b = jnp.asarray(L), jnp.asarray(b)
    if _library():
        return jax.scipy.linalg.cho_solve((L, True), b)
    return _backward(L.T, solve_lower(L, b, unroll), unroll)


def min_pivot(A: Float[Array, "n n"]) -> Float[Array, ""]:
    """The smallest pivot of the Cholesky factorisation of a symmetric positive semi-definite
    ``A`` with diagonal pivoting (LAPACK's ``pstrf`` order: each step eliminates the largest
    remaining diagonal entry of the Schur complement), for a rank test: ``A`` is numerically
    rank deficient where it is at most a tolerance times ``A``'s largest diagonal entry. A
    pivot bounds the smallest eigenvalue from above and, with this order, reveals a rank
    deficiency as a pivot at round-off level. Once a pivot is not positive the remaining steps
    eliminate nothing. ``n`` steps in XLA element-wise operations on every backend (no library
    call); ``0 x 0``: ``inf``."""
    A = jnp.asarray(A)
    n = A.shape[-1]
    if n == 0:
        return jnp.asarray(jnp.inf, A.dtype)
    i = jnp.arange(n)

    def step(_, c):
        S, left, smallest = c
        d = jnp.where(left, jnp.diagonal(S), -jnp.inf)
        p = jnp.argmax(d)
        pivot = d[p]
        ok = pivot > 0
        col = jnp.where(left & (i != p) & ok, S[:, p], 0.0) / jnp.sqrt(jnp.where(ok, pivot, 1.0))
        return S - jnp.outer(col, col), left & (i != p), jnp.minimum(smallest, pivot)

    init = (A, jnp.ones(n, bool), jnp.asarray(jnp.inf, A.dtype))
    return jax.lax.fori_loop(0, n, step, init)[2]


def spd_solve(
    A: Float[Array, "n n"], b: Float[Array, "n ..."], L=None, pattern: Bordered | None = None
) -> Float[Array, "n ..."]:
    """``A^-1 b`` for a symmetric positive-definite ``A`` by its Cholesky factor (``L`` when the
    caller already has it, for several right-hand sides of one ``A``), with implicit derivatives
    in ``A`` and ``b``. ``pattern``: ``A``'s :class:`Bordered` pattern, solved by block
    elimination (Gauss-Jordan without row exchanges: every pivot block of a positive-definite
    matrix is positive definite) where the dense algebra is element-wise (:func:`planner.dense`;
    ``L`` is then not used); the entries outside it are taken as zeros."""
    A, b = jnp.asarray(A), jnp.asarray(b)
    if pattern is not None and not _library():
        As = jax.lax.stop_gradient(A)
        return jax.lax.custom_linear_solve(lambda x: A @ x, b, lambda _, r: _bordered(As, r, pattern), symmetric=True)
    if L is None:
        L = cholesky(jax.lax.stop_gradient(A))
    L = jax.lax.stop_gradient(L)
    return jax.lax.custom_linear_solve(lambda x: A @ x, b, lambda _, r: cho_solve(L, r), symmetric=True)


class Bordered(NamedTuple):
    """The pattern of a bordered block-diagonal ``n x n`` matrix (static: tuples of ints), whose
    entries are zero outside the diagonal blocks and the border's rows and columns.

    border: the indices of the border (empty: block-diagonal).
    groups: the diagonal blocks, grouped by size: each group a tuple of blocks of one size,
      each block a tuple of indices. Every index is in the border or in one block."""

    border: tuple[int, ...]
    groups: tuple[tuple[tuple[int, ...], ...], ...]

    @property
    def order(self) -> np.ndarray:
        """The indices in elimination order: the border, then each group's blocks."""
        return np.asarray(self.border + tuple(i for g in self.groups for blk in g for i in blk), np.int64)

    def mask(self) -> np.ndarray:
        """``(n, n)`` bool: the entries the pattern holds (the blocks, the border's rows and
        columns)."""
        n = len(self.order)
        inside = np.zeros((n, n), bool)
        for group in self.groups:
            for block in group:
                inside[np.ix_(block, block)] = True
        inside[list(self.border), :] = True
        inside[:, list(self.border)] = True
        return inside


def _take(A, rows, cols):
    """``A[rows[..., :, None], cols[..., None, :]]`` for static index arrays ``rows`` ``(c, s)``
    and ``cols`` ``(c, t)`` (or ``(t,)``, shared): stacked slices where every block's indices are
    consecutive (the usual case: a branch's dofs), else one gather."""
    rows = np.asarray(rows)
    cols = np.broadcast_to(np.asarray(cols), rows.shape[:-1] + np.asarray(cols).shape[-1:])

    def run(ix):
        return bool(np.all(np.diff(ix) == 1))

    if rows.shape[-1] == 0 or cols.shape[-1] == 0:
        return jnp.zeros(rows.shape + cols.shape[-1:], A.dtype)
    if all(run(r) and run(c) for r, c in zip(rows, cols)):
        return jnp.stack([A[r[0] : r[0] + len(r), c[0] : c[0] + len(c)] for r, c in zip(rows, cols)])
    return A[rows[:, :, None], cols[:, None, :]]


def _bordered(A, b, pattern: Bordered):
    """``A^-1 b`` for ``A`` of the :class:`Bordered` pattern, by block elimination without row
    exchanges: for each block ``k``, ``[Y_k | y_k] = A_kk^-1 [A_kr | b_k]`` (Gauss-Jordan, the
    blocks of a group at once); the Schur complement ``S = A_rr - sum_k A_rk Y_k`` and
    ``s = b_r - sum_k A_rk y_k``; ``x_r = S^-1 s`` (Gauss-Jordan); ``x_k = y_k - Y_k x_r``."""
    vec = b.ndim == 1
    B = b[:, None] if vec else b
    border = np.asarray(pattern.border, np.int64)
    r = len(border)
    S, s = _take(A, border[None], border)[0], B[border]
    solved = []
    for group in pattern.groups:
        idx = np.asarray(group, np.int64)  # (blocks, size)
        rhs = jnp.concatenate([_take(A, idx, border), B[idx]], axis=2)  # [A_kr | b_k]
        Y = jax.vmap(_gauss_jordan)(_take(A, idx, idx), rhs)  # (blocks, size, r + k)
        if r:
            Ark = _take(A, np.broadcast_to(border, (len(idx), r)), idx)  # A_rk (blocks, r, size)
            S = S - jnp.einsum("crs,csj->rj", Ark, Y[..., :r])
            s = s - jnp.einsum("crs,csj->rj", Ark, Y[..., r:])
        solved.append(Y)
    x_r = _gauss_jordan(S, s) if r else s
    parts = [x_r] + [
        (Y[..., r:] - jnp.einsum("csr,rj->csj", Y[..., :r], x_r) if r else Y).reshape(-1, B.shape[1]) for Y in solved
    ]
    x = jnp.concatenate(parts)
    order = pattern.order
    if not np.array_equal(order, np.arange(len(order))):
        x = x[np.argsort(order)]
    return x[:, 0] if vec else x


def _eliminate(A, b, pivot: bool):
    """``A^-1 b``: with ``pivot``, by Gaussian elimination with partial pivoting (rows exchanged
    so that each pivot is the largest remaining entry of its column), then back substitution;
    without, by :func:`_gauss_jordan`. With the library (:func:`planner.dense`), its LU
    factorisation with partial pivoting either way."""
    if _library():
        return jnp.linalg.solve(A, b)
    if not pivot:
        return _gauss_jordan(A, b)
    n = A.shape[-1]
    i = jnp.arange(n)

    def step(k, Ab):
        A, b = Ab
        if pivot:
            p = jnp.argmax(jnp.where(i >= k, jnp.abs(A[:, k]), -1.0))
            swap = jnp.where(i == k, p, jnp.where(i == p, k, i))
            A, b = A[swap], b[swap]
        m = jnp.where(i > k, A[:, k] / A[k, k], 0.0)
        return A - jnp.outer(m, A[k]), b - m.reshape(m.shape + (1,) * (b.ndim - 1)) * b[k]

    U, y = jax.lax.fori_loop(0, n, step, (A, b))
    return _backward(U, y)


def _gauss_jordan(A, b):
    """``A^-1 b`` by :func:`gauss_jordan` (the loop)."""
    return gauss_jordan(A, b)[0]


def gauss_jordan(
    A: Float[Array, "n n"], b: Float[Array, "n ..."], unroll: bool = False
) -> tuple[Float[Array, "n ..."], Float[Array, " n"]]:
    """``(A^-1 b, pivots)`` by Gauss-Jordan elimination of ``[A | b]`` without row exchanges:
    step ``k`` scales row ``k`` by ``1 / A_kk`` (the ``k``-th pivot) and subtracts its multiples
    from every other row, so after ``n`` steps ``A`` is the identity and ``b`` the solution.
    ``n`` steps where elimination and back substitution take ``2n``: under ``vmap`` on a CPU,
    18 x 18 at 256 samples, 3.5 us per sample against 4.1 (float32). The ``k``-th pivot is the
    ratio of the leading principal minors of orders ``k + 1`` and ``k``, so a symmetric ``A``
    is positive definite exactly where every pivot is positive (a non-positive pivot gives inf
    or NaN in the solution). ``unroll``: the ``n`` steps as straight-line code (as in
    :func:`cholesky`): one elimination of ``[Q_uu | Q_u Q_ux]`` replaces the Riccati step's
    Cholesky factorisation and two substitutions (:func:`jaxdyn.trajopt.backward_pass`).
    Differentiable through the steps; prefer :func:`solve` when only solves are
    differentiated."""
    A, b = jnp.asarray(A), jnp.asarray(b)
    n = A.shape[-1]
    i = jnp.arange(n)
    vec = b.ndim == 1
    Ab = jnp.concatenate([A, b[:, None] if vec else b], axis=1)

    def step(k, carry):
        Ab, pivots = carry
        p = Ab[k, k]
        r = Ab[k] / p
        m = jnp.where(i == k, 0.0, Ab[:, k])
        return (Ab - jnp.outer(m, r)).at[k].set(r), pivots.at[k].set(p)

    carry = (Ab, jnp.zeros(n, Ab.dtype))
    if unroll:  # static row indices: plain slices, no loop
        for k in range(n):
            carry = step(k, carry)
    else:
        carry = jax.lax.fori_loop(0, n, step, carry)
    x = carry[0][:, n:]
    return (x[:, 0] if vec else x), carry[1]


def solve(
    A: Float[Array, "n n"], b: Float[Array, "n ..."], pivot: bool = True, pattern: Bordered | None = None
) -> Float[Array, "n ..."]:
    """``A^-1 b`` for a nonsingular ``A``, with implicit derivatives in ``A`` and ``b``.

    ``pivot=False`` eliminates without exchanging rows, at about half the cost under ``vmap`` on
    a CPU (each exchange is a gather per sample): exact where every leading principal minor is
    nonzero, as when the symmetric part of ``A`` is positive definite; a zero pivot gives inf or
    NaN. With the library (``planner.dense() == "library"``) the LU factorisation exchanges rows
    either way. ``pattern`` (with ``pivot=False``): ``A``'s :class:`Bordered` pattern, solved by
    block elimination as in :func:`spd_solve` (the symmetric part positive definite: so is every
    pivot block's and the Schur complement's); the entries outside it are taken as zeros."""
    A, b = jnp.asarray(A), jnp.asarray(b)
    As = jax.lax.stop_gradient(A)
    if pattern is not None and not pivot and not _library():
        run = lambda M, r: _bordered(M, r, pattern)  # noqa: E731
    else:
        run = lambda M, r: _eliminate(M, r, pivot)  # noqa: E731
    return jax.lax.custom_linear_solve(
        lambda x: A @ x,
        b,
        lambda _, r: run(As, r),
        transpose_solve=lambda _, r: run(As.T, r),
    )
