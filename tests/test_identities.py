"""Identities between algorithms on random chains and trees with every joint type (float64)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import (
    ZOO,
    aba,
    assert_close,
    bias,
    body_acc,
    body_jac,
    body_vel,
    coriolis,
    crba,
    energy,
    kinetic,
    rnea,
    state,
    zoo,
)

import jaxdyn


@pytest.fixture(params=ZOO)
def model(request):
    return zoo(request.param)


def test_crba_equals_rnea_columns(model):
    q, qd, _, _ = state(model)
    M = crba(model, q)
    z = jnp.zeros(model.nv)
    g = rnea(model, q, z, z)
    cols = jax.vmap(lambda e: rnea(model, q, z, e) - g)(jnp.eye(model.nv)).T
    assert_close(M, cols)
    assert_close(M, M.T, 1e-12)
    assert np.linalg.eigvalsh(np.asarray(M)).min() > 0


def test_aba_inverts_rnea(model):
    for seed in range(3):
        q, qd, qdd, tau = state(model, seed)
        fext = jax.random.normal(jax.random.PRNGKey(seed + 10), (model.nb, 6))
        assert_close(aba(model, q, qd, rnea(model, q, qd, qdd)), qdd, 1e-9)
        assert_close(rnea(model, q, qd, aba(model, q, qd, tau, fext), fext), tau, 1e-9)
        M = crba(model, q)
        assert_close(aba(model, q, qd, tau), np.linalg.solve(M, tau - bias(model, q, qd)), 1e-9)


def test_mdot_minus_2c_is_skew(model):
    q, qd, _, _ = state(model)
    qdot = jaxdyn.configuration_derivative(model, q, qd)
    Mdot = jax.jit(lambda a, b: jax.jvp(lambda x: crba(model, x), (a,), (b,))[1])(q, qdot)
    lhs = qd @ Mdot @ qd
    rhs = 2 * qd @ coriolis(model, q, qd)
    assert_close(lhs, rhs, 1e-9)


def test_energy_balance(model):
    """d/dt (kinetic + potential) = tau . qd along forward dynamics, by jvp and by finite differences."""
    q, qd, _, tau = state(model)
    qdd = aba(model, q, qd, tau)
    qdot = jaxdyn.configuration_derivative(model, q, qd)
    dE = jax.jit(lambda a, b, c, d: jax.jvp(lambda x, y: energy(model, x, y), (a, b), (c, d))[1])(q, qd, qdot, qdd)
    assert_close(dE, tau @ qd, 1e-9)
    h = 1e-5
    ep = energy(model, jaxdyn.integrate(model, q, h * qd + 0.5 * h * h * qdd), qd + h * qdd)
    em = energy(model, jaxdyn.integrate(model, q, -h * qd + 0.5 * h * h * qdd), qd - h * qdd)
    np.testing.assert_allclose((ep - em) / (2 * h), tau @ qd, rtol=1e-5, atol=1e-6)


djac = jax.jit(jaxdyn.frame_jacobian_time_derivative, static_argnames=("frame", "reference"))


def test_kinetic_energy_and_jacobians(model):
    q, qd, qdd, _ = state(model)
    M = crba(model, q)
    assert_close(kinetic(model, q, qd), 0.5 * qd @ (M - jnp.diag(model.armature)) @ qd)
    v, a = body_vel(model, q, qd), body_acc(model, q, qd, qdd)
    for b in (0, model.nb // 2, model.nb - 1):
        name = model.body_names[b]
        J = body_jac(model, q, name, "local")
        assert_close(J @ qd, v[b])
        dJ = djac(model, q, qd, name, "local")
        assert_close(J @ qdd + dJ @ qd, a[b], 1e-9)


def test_com_jacobian(model):
    q, qd, _, _ = state(model)
    qdot = jaxdyn.configuration_derivative(model, q, qd)
    dcom = jax.jit(lambda a, b: jax.jvp(lambda x: jaxdyn.center_of_mass(model, x), (a,), (b,))[1])(q, qdot)
    assert_close(jax.jit(jaxdyn.center_of_mass_jacobian)(model, q) @ qd, dcom)


def test_momentum_rate_is_external_force():
    """Floating base, no gravity: total momentum is conserved by ABA."""
    model = zoo("tree_mixed_float")
    model = model.replace(gravity=jnp.zeros(3))
    q, qd, _, tau = state(model)
    tau = tau.at[:6].set(0.0)
    qdd = aba(model, q, qd, tau)
    qdot = jaxdyn.configuration_derivative(model, q, qd)
    dh = jax.jit(lambda a, b, c, d: jax.jvp(lambda x, y: jaxdyn.momentum(model, x, y), (a, b), (c, d))[1])(
        q, qd, qdot, qdd
    )
    assert_close(dh, jnp.zeros(6), 1e-9)


def test_integrate_difference_roundtrip(model):
    q, qd, _, _ = state(model)
    q1 = jaxdyn.integrate(model, q, qd, 0.3)
    assert_close(jaxdyn.difference(model, q, q1), 0.3 * qd, 1e-10)
    assert_close(jaxdyn.difference(model, q, q), jnp.zeros(model.nv), 1e-12)
