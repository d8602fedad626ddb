"""jaxdyn.linalg: the small dense solvers of the implicit step, the constraint solve and iLQR,
against NumPy's LAPACK in float64 and float32, with implicit derivatives checked by finite
differences, under vmap, and without a library (LAPACK) call in the compiled program; each
under both executors of the small dense algebra (``jaxdyn.executor(dense=...)``: XLA loops, the
CPU's, and the backend's library, a GPU's)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.test_util import check_grads

import jaxdyn
from jaxdyn import linalg, planner

DENSE = ["elementwise", "library"]


def spd(rng, n):
    X = rng.normal(size=(n, n))
    return X @ X.T + n * np.eye(n)


@pytest.mark.parametrize("dense", DENSE)
@pytest.mark.parametrize("n", [1, 7, 18])
def test_factor_and_solves_equal_lapack(n, dense):
    with jaxdyn.executor(dense=dense):
        assert planner.dense() == dense
        _factor_and_solves(n, dense)


def _factor_and_solves(n, dense):
    rng = np.random.default_rng(n)
    A, b, B = spd(rng, n), rng.normal(size=n), rng.normal(size=(n, 3))
    L = linalg.cholesky(A)
    np.testing.assert_allclose(L, np.linalg.cholesky(A), atol=1e-12)
    np.testing.assert_allclose(linalg.cho_solve(L, b), np.linalg.solve(A, b), atol=1e-12)
    y = linalg.solve_lower(L, b)
    np.testing.assert_allclose(np.linalg.cholesky(A) @ y, b, atol=1e-12)
    np.testing.assert_allclose(y @ y, b @ np.linalg.solve(A, b), rtol=1e-12)
    yt = linalg.solve_lower(L, B, transpose=True)  # L^T y = B, backward
    np.testing.assert_allclose(np.linalg.cholesky(A).T @ yt, B, atol=1e-12)
    np.testing.assert_allclose(linalg.spd_solve(A, B), np.linalg.solve(A, B), atol=1e-12)
    np.testing.assert_allclose(linalg.spd_solve(A, B, L), np.linalg.solve(A, B), atol=1e-12)
    # unrolled into straight-line code: the same factor and solves
    Lu = linalg.cholesky(A, unroll=True)
    np.testing.assert_allclose(Lu, np.linalg.cholesky(A), atol=1e-12)
    np.testing.assert_allclose(linalg.cho_solve(Lu, B, unroll=True), np.linalg.solve(A, B), atol=1e-12)
    np.testing.assert_allclose(linalg.solve_lower(Lu, b, unroll=True), y, atol=1e-12)
    # a general matrix whose first pivot is tiny: partial pivoting keeps the solve exact
    G = rng.normal(size=(n, n)) + np.eye(n)
    G[0, 0] = 1e-14
    x = np.linalg.solve(G, B)
    np.testing.assert_allclose(linalg.solve(G, B), x, atol=1e-10 * np.abs(x).max())
    np.testing.assert_allclose(linalg.solve(G, b), np.linalg.solve(G, b), atol=1e-10 * np.abs(x).max())
    # without row exchanges: exact where the symmetric part is positive definite, not with the
    # tiny first pivot
    S = A + (G - G.T)
    np.testing.assert_allclose(linalg.solve(S, B, pivot=False), np.linalg.solve(S, B), atol=1e-12)
    if n > 1 and dense == "elementwise":  # the library's LU always exchanges rows
        err = np.abs(np.asarray(linalg.solve(G, B, pivot=False)) - x).max()
        assert not err < 1e-6 * np.abs(x).max()


@pytest.mark.parametrize("unroll", [False, True])
@pytest.mark.parametrize("n", [1, 7])
def test_gauss_jordan_solves_and_its_pivots_are_the_minors_ratios(n, unroll):
    """``linalg.gauss_jordan``: the solution of LAPACK, and pivots that are the ratios of
    consecutive leading principal minors, so all positive exactly where a symmetric matrix is
    positive definite (the Riccati step's test, jaxdyn.trajopt.backward_pass)."""
    rng = np.random.default_rng(n + 10)
    A, b, B = spd(rng, n), rng.normal(size=n), rng.normal(size=(n, 3))
    minors = np.array([1.0] + [np.linalg.det(A[:k, :k]) for k in range(1, n + 1)])
    for rhs in (b, B):
        x, pivots = linalg.gauss_jordan(A, rhs, unroll=unroll)
        np.testing.assert_allclose(x, np.linalg.solve(A, rhs), atol=1e-12)
        np.testing.assert_allclose(pivots, minors[1:] / minors[:-1], rtol=1e-10)
        assert np.all(np.asarray(pivots) > 0)
    # symmetric and indefinite: the last leading minor changes sign, so does the last pivot
    Q = A.copy()
    Q[-1, -1] = -Q[-1, -1]
    x, pivots = linalg.gauss_jordan(Q, b, unroll=unroll)
    assert float(pivots[-1]) < 0 and np.all(np.asarray(pivots[:-1]) > 0)
    np.testing.assert_allclose(x, np.linalg.solve(Q, b), atol=1e-10 * np.abs(np.linalg.solve(Q, b)).max())


@pytest.mark.parametrize("dense", DENSE)
def test_float32_solves_to_single_precision(dense):
    rng = np.random.default_rng(0)
    A, b = spd(rng, 18), rng.normal(size=18)
    x = np.linalg.solve(A, b)
    for f in (lambda A, b: linalg.spd_solve(A, b), linalg.solve):
        with jaxdyn.executor(dense=dense):
            y = f(A.astype(np.float32), b.astype(np.float32))
        assert y.dtype == jnp.float32
        np.testing.assert_allclose(y, x, atol=1e-5 * np.abs(x).max())


@pytest.mark.parametrize("dense", DENSE)
def test_not_positive_definite_gives_nan_as_lapack(dense):
    A = np.diag([1.0, -1.0, 2.0])
    with jaxdyn.executor(dense=dense):
        assert not np.isfinite(np.asarray(linalg.cholesky(A))).all()
    assert not np.isfinite(np.asarray(jnp.linalg.cholesky(A))).all()


@pytest.mark.parametrize("dense", DENSE)
def test_implicit_derivatives_equal_finite_differences(dense):
    """Derivatives in A and b, forward and reverse (the Cholesky solve reads the lower triangle,
    so A is perturbed symmetrically); jitted, as the step runs them."""
    with jaxdyn.executor(dense=dense):
        _derivatives()


def _derivatives():
    rng = np.random.default_rng(1)
    A, G, b = spd(rng, 5), rng.normal(size=(5, 5)) + 3 * np.eye(5), rng.normal(size=5)
    check_grads(jax.jit(lambda A, b: linalg.spd_solve(0.5 * (A + A.T), b)), (A, b), 2, modes=["fwd", "rev"])
    check_grads(jax.jit(linalg.solve), (G, b), 1, modes=["fwd", "rev"])
    check_grads(jax.jit(lambda A, b: linalg.solve(A, b, pivot=False)), (G, b), 1, modes=["fwd", "rev"])
    check_grads(jax.jit(lambda A: linalg.cholesky(0.5 * (A + A.T))), (A,), 1, modes=["fwd", "rev"])
    g = jax.grad(lambda A: linalg.spd_solve(A, b) @ b)(A)
    np.testing.assert_allclose(g, jax.grad(lambda A: jnp.linalg.solve(A, b) @ b)(A), atol=1e-12)


@pytest.mark.parametrize("dense", DENSE)
def test_min_pivot_reveals_rank(dense):
    """The smallest pivot with diagonal pivoting equals LAPACK's (``dpstrf``, the squares of its
    factor's diagonal) on a positive-definite matrix, falls to round-off on a rank-deficient
    positive semi-definite one, and works in float32 and on an empty matrix."""
    from scipy.linalg import lapack

    rng = np.random.default_rng(3)
    A = spd(rng, 7)
    c, _, rank, info = lapack.dpstrf(A, lower=1)
    assert info == 0 and rank == 7
    X = rng.normal(size=(7, 4))
    P = X @ X.T  # rank 4
    with jaxdyn.executor(dense=dense):
        np.testing.assert_allclose(linalg.min_pivot(A), np.min(np.diag(c) ** 2), rtol=1e-12)
        assert linalg.min_pivot(P) <= 1e-12 * np.diag(P).max()
        assert linalg.min_pivot(A.astype(np.float32)).dtype == jnp.float32
        np.testing.assert_allclose(linalg.min_pivot(A.astype(np.float32)), np.min(np.diag(c) ** 2), rtol=1e-5)
        assert linalg.min_pivot(np.zeros((0, 0))) == np.inf
        pivots = jax.jit(jax.vmap(linalg.min_pivot))(np.stack([A, P]))
    assert pivots[0] > 1e-3 * np.diag(A).max() and pivots[1] <= 1e-12 * np.diag(P).max()


def test_factorising_algorithms_call_no_library_kernel():
    """The algorithms that factor small blocks (the diagonalized dynamics' square roots of
    ``D``, here with a ball joint's 3 x 3 block and the free root's 6 x 6 one; the
    log-determinant of ``M``; the log-Cholesky parametrisation of sysid) take them from
    :mod:`jaxdyn.linalg`: their batched programs have no custom call, which can deadlock XLA's
    CPU thread pool. Their values are checked against LAPACK's and the identities in
    ``test_innovations.py``, ``test_seed_algorithms.py`` and ``test_sysid.py``."""
    from jaxdyn import builders, sysid

    model = builders.chain(4, ("revolute", "prismatic", "spherical"), seed=11, floating_base=True)
    assert model.layout.k == 3
    keys = jax.random.split(jax.random.PRNGKey(4), 3)
    q = jax.vmap(lambda k: jaxdyn.random_configuration(model, k))(keys)
    qd = jax.random.normal(keys[0], (3, model.nv), q.dtype)
    for f, args in [
        (lambda q, v: jaxdyn.total_joint_rates(model, q, v), (q, qd)),
        (lambda q, v: jaxdyn.working_moments(model, q, v), (q, qd)),  # C^-1
        (lambda q, v: jaxdyn.joint_rates_from_total(model, q, v), (q, qd)),  # C^-T
        (lambda q: jaxdyn.logdet_mass_matrix(model, q), (q,)),
        (sysid.pseudo_inertia_to_log_cholesky, (jnp.tile(4.0 * jnp.eye(4), (3, 1, 1)),)),
    ]:
        assert "custom_call" not in jax.jit(jax.vmap(f)).lower(*args).as_text()


def test_batched_program_calls_no_library_kernel():
    """Under jit(vmap), the factorisations are XLA loops: the program has no custom call (jaxlib's
    LAPACK kernels, whose batched form can deadlock XLA's CPU thread pool when two run at once)."""
    rng = np.random.default_rng(2)
    A = np.stack([spd(rng, 6) for _ in range(4)])
    b = rng.normal(size=(4, 6))

    def f(A, b):
        return linalg.spd_solve(A, b) + linalg.solve(A + np.eye(6), b)

    text = jax.jit(jax.vmap(f)).lower(A, b).as_text()
    assert "custom_call" not in text
    loops = text.count("stablehlo.while")  # the factorisation's, the substitutions', ...
    x = np.linalg.solve(A, b[..., None])[..., 0] + np.linalg.solve(A + np.eye(6), b[..., None])[..., 0]
    np.testing.assert_allclose(jax.vmap(f)(A, b), x, atol=1e-12)
    # the library's executor calls the backend's kernels (here LAPACK's); its one loop on a CPU
    # turns the LU's pivots into a permutation (a kernel of its own on a GPU)
    with jaxdyn.executor(dense="library"):
        text = jax.jit(jax.vmap(f)).lower(A, b).as_text()
        np.testing.assert_allclose(jax.vmap(f)(A, b), x, atol=1e-12)
    assert loops == 5 and "custom_call" in text and text.count("stablehlo.while") == 1


def test_dense_executor_choice():
    """The CPU's choice is the XLA loops, and for the contact rows' congruence the explicit sum
    below 24 dofs and the matrix product from there; the override wins, and a bad name is
    refused."""
    cpu = jax.default_backend() == "cpu"
    assert planner.dense() == ("elementwise" if cpu else "library")
    assert planner.congruence_product(18) == (not cpu) and planner.congruence_product(27)
    with jaxdyn.executor(dense="library"):
        assert planner.dense() == "library" and planner.congruence_product(18)
    with jaxdyn.executor(dense="elementwise"):
        assert planner.dense() == "elementwise" and not planner.congruence_product(27)
    with pytest.raises(ValueError, match="unknown dense 'cusolver'"):
        with jaxdyn.executor(dense="cusolver"):
            pass


def test_broad_executor_choice():
    """Work a sample may skip is a branch on a CPU and a select elsewhere, the contact solve's
    row sizes follow it; the override wins, and a bad name is refused (the two compared:
    test_broad_phase.py)."""
    assert planner.skip() == ("branch" if jax.default_backend() == "cpu" else "select")
    for how in ("branch", "select"):
        with jaxdyn.executor(skip=how):
            assert planner.skip() == how
    # the implicit solve's row sizes under the branch: none, 8 and its doublings below the
    # budget where the rows are sorted by distance, every row
    with jaxdyn.executor(skip="branch"):
        assert planner.contact_row_sizes(52) == (0, 8, 16, 32, 52) and planner.contact_row_sizes(30) == (0, 8, 16, 30)
        assert planner.contact_row_sizes(16) == (0, 8, 16) and planner.contact_row_sizes(9) == (0, 8, 9)
        assert planner.contact_row_sizes(8) == (0, 8) and planner.contact_row_sizes(52, by_distance=False) == (0, 52)
        assert planner.contact_row_sizes(0) == (0,)
    with jaxdyn.executor(skip="select"):
        assert planner.contact_row_sizes(52) == (52,)
    with pytest.raises(ValueError, match="unknown skip 'never'"):
        with jaxdyn.executor(skip="never"):
            pass


def _bordered_matrices(rng, pattern, n):
    """A symmetric positive-definite matrix and a general one whose symmetric part is positive
    definite, both zero outside ``pattern``."""
    mask = pattern.mask()
    X = rng.normal(size=(n, n))
    S = X @ X.T * mask
    E = 0.5 * rng.normal(size=(n, n)) * mask
    # strictly diagonally dominant, so definite (and the general one's symmetric part too)
    A = S + np.diag(np.abs(S).sum(1) + np.abs(E).sum(1) + 1.0)
    return A, A + E - E.T, mask


# a free root and four 3-dof legs (the Go1's), and a pattern out of order with blocks of three
# sizes around a border of two dofs (indices not consecutive)
PATTERNS = [
    linalg.Bordered(tuple(range(6)), (tuple(tuple(range(6 + 3 * k, 9 + 3 * k)) for k in range(4)),)),
    linalg.Bordered((3, 10), (((11,),), ((0, 2), (1, 4)), ((5, 6, 7, 8, 9),))),
    linalg.Bordered((), (((0, 1), (2, 3)),)),  # block-diagonal
]


@pytest.mark.parametrize("dense", DENSE)
@pytest.mark.parametrize("k", range(len(PATTERNS)))
def test_bordered_solves_equal_dense(k, dense):
    """Block elimination over a bordered block-diagonal pattern gives the dense solution:
    symmetric positive definite (``spd_solve``) and general without row exchanges (``solve``),
    one and several right-hand sides, float64 to 1e-12 and float32 to 1e-5, under jit(vmap),
    with the dense solve's implicit derivatives; the library's executor ignores the pattern."""
    pattern = PATTERNS[k]
    n = len(pattern.order)
    assert sorted(pattern.order) == list(range(n))
    rng = np.random.default_rng(10 + k)
    A, G, mask = _bordered_matrices(rng, pattern, n)
    b, B = rng.normal(size=n), rng.normal(size=(n, 3))
    with jaxdyn.executor(dense=dense):
        spd_solve = jax.jit(lambda M, r: linalg.spd_solve(M, r, pattern=pattern))
        solve = jax.jit(lambda M, r: linalg.solve(M, r, pivot=False, pattern=pattern))
        for M, run in ((A, spd_solve), (G, solve)):
            for r in (b, B):
                np.testing.assert_allclose(run(M, r), np.linalg.solve(M, r), atol=1e-12)
            x32 = run(M.astype(np.float32), b.astype(np.float32))
            assert x32.dtype == jnp.float32
            x = np.linalg.solve(M, b)
            np.testing.assert_allclose(x32, x, atol=1e-5 * np.abs(x).max())
        # batched, and differentiated in the pattern's entries and the right-hand side: the
        # dense solve's derivatives
        Ms, bs = np.stack([G, G + np.diag(rng.uniform(size=n))]), np.stack([b, -b])
        np.testing.assert_allclose(jax.vmap(solve)(Ms, bs), np.linalg.solve(Ms, bs[..., None])[..., 0], atol=1e-12)
        loss = lambda M, r: jnp.sum(jnp.sin(linalg.solve(M * mask, r, pivot=False, pattern=pattern)))  # noqa: E731
        dense_loss = lambda M, r: jnp.sum(jnp.sin(jnp.linalg.solve(M * mask, r)))  # noqa: E731
        for got, want in zip(jax.jit(jax.grad(loss, (0, 1)))(G, b), jax.grad(dense_loss, (0, 1))(G, b)):
            np.testing.assert_allclose(got, want, atol=1e-12)
        got = jax.jit(jax.grad(lambda M: jnp.sum(jnp.sin(linalg.spd_solve(M * mask, b, pattern=pattern)))))(A)
        want = jax.grad(lambda M: jnp.sum(jnp.sin(jnp.linalg.solve(M * mask, b))))(A)
        np.testing.assert_allclose(got, want, atol=1e-12)
    # the pattern is used: an entry outside it is not read (taken as zero)
    outside = np.argwhere(~mask)
    if len(outside):
        i, j = outside[0]
        spoiled = A.copy()
        spoiled[i, j] = spoiled[j, i] = 1e3
        np.testing.assert_allclose(spd_solve(spoiled, b), np.linalg.solve(A, b), atol=1e-12)
