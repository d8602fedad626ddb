"""Rodriguez86/001 operators: innovations factorization, O(N) mass-matrix operators, Minv, log det,
operational-space compliance, regressor and base parameters (identities between the algorithms)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import ZOO, assert_close, crba, state, zoo

import jaxdyn

factors = jax.jit(jaxdyn.innovations_factorization)
minv = jax.jit(jaxdyn.mass_matrix_inverse)
solve = jax.jit(jaxdyn.solve_mass_matrix)
apply_m = jax.jit(jaxdyn.apply_mass_matrix)
logdet = jax.jit(jaxdyn.logdet_mass_matrix)
lam = jax.jit(jaxdyn.body_inverse_inertias)
regressor = jax.jit(jaxdyn.regressor)
factorize = jax.jit(jaxdyn.factorize)
aba = jax.jit(jaxdyn.aba)
rnea = jax.jit(jaxdyn.rnea)
body_jacobians = jax.jit(lambda model, q: [jaxdyn.body_jacobian(model, q, b, "local") for b in model.body_names])
frame_jacobian = jax.jit(jaxdyn.frame_jacobian, static_argnums=(2, 3))
frame_inverse_inertia = jax.jit(jaxdyn.frame_inverse_inertia, static_argnums=2)
# the four O(N) operators of the factor L and its inverse (Rodriguez86 (8.1)-(8.13)) at once
operators = jax.jit(
    lambda model, fac, x: [
        f(model, fac, x)
        for f in (
            jaxdyn.apply_innovations_factor,
            jaxdyn.apply_innovations_inverse,
            jaxdyn.apply_innovations_factor_transpose,
            jaxdyn.apply_innovations_inverse_transpose,
        )
    ]
)


@pytest.fixture(params=ZOO)
def model(request):
    return zoo(request.param)


def test_factorization_identities(model):
    q, qd, _, tau = state(model)
    M = np.asarray(crba(model, q))
    F = factors(model, q)
    nv = model.nv
    assert_close(F.L @ F.D @ F.L.T, M)  # M = L D L^T
    assert_close(F.L @ F.Linv, np.eye(nv))  # (I + H phi K)(I - H psi K) = I
    assert_close(np.diag(F.L), np.ones(nv), 1e-12)  # unit triangular
    assert (
        np.abs(np.tril(F.L, -1)).max() < 1e-12
    )  # upper triangular in base-first order (the papers number links from the tip)
    assert_close(F.Linv @ M @ F.Linv.T, F.D)  # innovations are white
    Dblocks = np.asarray(F.D)
    assert np.linalg.eigvalsh(0.5 * (Dblocks + Dblocks.T)).min() > 0  # D > 0
    # D tip-ward... the last dof's D equals 1/(M^-1)_{kk} at a root dof
    Mi = np.asarray(minv(model, q))
    assert_close(M @ Mi, np.eye(nv), 1e-9)
    assert_close(logdet(model, q), np.linalg.slogdet(M)[1])  # det M = prod D
    # 1-dof joints: 1/(M^-1)_kk <= D_k <= M_kk
    d = np.diag(Dblocks)
    one = [i for i in range(nv) if np.count_nonzero(Dblocks[i]) == 1]
    assert np.all(d[one] <= np.diag(M)[one] * (1 + 1e-12))
    assert np.all(d[one] >= 1 / np.diag(Mi)[one] * (1 - 1e-12))


def test_matrix_free_operators(model):
    q, qd, qdd, tau = state(model)
    M = np.asarray(crba(model, q))
    assert_close(apply_m(model, q, qdd), M @ qdd)
    assert_close(solve(model, q, tau), np.linalg.solve(M, tau), 1e-9)
    fac = factorize(model, q)
    F = factors(model, q)
    for got, mat in zip(operators(model, fac, tau), (F.L, F.Linv, F.L.T, F.Linv.T)):
        assert_close(got, mat @ tau)
    # ABA with zero velocity and gravity is M^-1
    m0 = model.replace(gravity=jnp.zeros(3))
    assert_close(aba(m0, q, jnp.zeros(model.nv), tau), solve(model, q, tau), 1e-9)


def test_operational_space_compliance(model):
    """Lambda_k = J_k M^-1 J_k^T by the outward recursion of Rodriguez86 (9.20)-(9.21)."""
    q, _, _, _ = state(model)
    Mi = np.asarray(minv(model, q))
    C = lam(model, q)
    for b, J in enumerate(body_jacobians(model, q)):
        assert_close(C[b], J @ Mi @ J.T, 1e-9)
    f = model.frame_names[-1]
    Jf = frame_jacobian(model, q, f, "local")
    assert_close(frame_inverse_inertia(model, q, f), Jf @ Mi @ Jf.T, 1e-9)


def test_regressor(model):
    q, qd, qdd, _ = state(model)
    pi = jaxdyn.inertial_parameters(model)
    Y = regressor(model, q, qd, qdd)
    assert_close(Y @ pi.ravel(), rnea(model, q, qd, qdd))
    # model <-> parameters round trip
    m2 = jaxdyn.model_with_parameters(model, pi)
    assert_close(m2.com, model.com)
    assert_close(m2.inertia, model.inertia)


@pytest.mark.parametrize("name", ["chain_rev", "tree_mixed_float"])
def test_base_parameters(name):
    model = zoo(name)
    pi = jaxdyn.inertial_parameters(model)
    B, s = jaxdyn.base_parameters(model, jax.random.PRNGKey(1), n_samples=12)
    assert 0 < B.shape[0] < pi.size
    # a parameter change in the null space does not change any torque
    null = np.linalg.svd(B, full_matrices=True)[2][B.shape[0] :]
    dpi = null.T @ np.random.default_rng(0).normal(size=null.shape[0])
    q2, qd2, qdd2, _ = state(model, 7)
    Y2 = np.asarray(regressor(model, q2, qd2, qdd2))
    assert np.abs(Y2 @ dpi).max() < 1e-8 * max(1, np.abs(Y2).max())


def test_operators_float32_vmap_and_grad():
    """The seed operators in float32 (vs float64), batched with vmap, and differentiable."""
    m64 = zoo("tree_mixed_float")
    m32 = m64.astype(jnp.float32)
    keys = jax.random.split(jax.random.PRNGKey(4), 3)
    qs = jax.vmap(lambda k: jaxdyn.random_configuration(m64, k))(keys)
    b = jax.random.normal(keys[0], (3, m64.nv))

    def ops(m, q, b):
        return (
            jaxdyn.mass_matrix_inverse(m, q),
            jaxdyn.solve_mass_matrix(m, q, b),
            jaxdyn.logdet_mass_matrix(m, q),
            jaxdyn.body_inverse_inertias(m, q),
            jaxdyn.total_joint_rates(m, q, b),
        )

    f = jax.jit(jax.vmap(ops, in_axes=(None, 0, 0)))
    r64 = f(m64, qs, b)
    r32 = f(m32, qs.astype(jnp.float32), b.astype(jnp.float32))
    for x32, x64 in zip(r32, r64):
        assert x32.dtype == jnp.float32
        x64 = np.asarray(x64)
        assert np.max(np.abs(np.asarray(x32, np.float64) - x64)) / max(1.0, np.abs(x64).max()) < 1e-4
    # d/dq log det M along a tangent equals tr(M^-1 dM) (jvp through the Riccati gather)
    q = qs[0]
    dq = jaxdyn.configuration_derivative(m64, q, b[1])
    d_logdet = jax.jit(lambda q, t: jax.jvp(lambda x: jaxdyn.logdet_mass_matrix(m64, x), (q,), (t,))[1])(q, dq)
    M, dM = jax.jit(lambda q, t: jax.jvp(lambda x: jaxdyn.crba(m64, x), (q,), (t,)))(q, dq)
    assert_close(d_logdet, np.trace(np.linalg.solve(M, dM)), 1e-8)
