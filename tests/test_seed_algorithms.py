"""Rodriguez86/001/004 algorithms: Kalman filter/smoother internals of ABA, diagonalized dynamics,
and the Lagrange formulation as a cross-check of RNEA."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import assert_close, crba, rnea, state, zoo

import jaxdyn
from jaxdyn import builders


@pytest.mark.parametrize("name", ["chain_mixed", "tree_mixed_float"])
def test_filter_smoother_internals(name):
    """Rodriguez86: ABA is the inward Kalman filter + outward smoother. The smoothed estimate
    z + P a equals the RNEA joint wrench (the smoothed wrench identity), D = S^T P S > 0, P+ S = 0."""
    model = zoo(name)
    q, qd, _, tau = state(model)
    fext = jax.random.normal(jax.random.PRNGKey(3), (model.nb, 6))
    r = jax.jit(jaxdyn.aba_full)(model, q, qd, tau, fext)
    f = jax.jit(jaxdyn.rnea_full)(model, q, qd, r.qdd, fext).f
    lb = model.layout.link_bodies
    art = r.link
    xhat = art.z + jnp.einsum("nij,nj->ni", art.P, r.a[lb])
    assert_close(xhat, f[lb], 1e-9)
    # innovations: e = tau - S^T z  and  P+ S = 0 on the real dof columns, G = P S D^-1, H G = 1
    jd = jax.jit(jaxdyn.algorithms.common.joint_data)(model, q)
    PaS = jnp.einsum("nij,njk->nik", art.Pa, jd.S)
    assert np.abs(np.asarray(PaS)).max() < 1e-9 * np.abs(np.asarray(art.P)).max()
    HG = jnp.einsum("nji,njk->nik", jd.S, art.G)
    mask = jnp.asarray(model.layout.dof_mask)
    assert_close(
        jnp.where(mask[:, :, None] & mask[:, None, :], HG, 0.0),
        jnp.where(mask[:, :, None] & mask[:, None, :], jnp.eye(model.layout.k), 0.0),
        1e-10,
    )
    assert_close(art.tau_bar, jnp.eye(6) - jnp.einsum("nij,nkj->nik", art.G, jd.S))


def test_diagonalized_dynamics():
    model = zoo("tree_mixed_float")
    q, qd, _, tau = state(model)
    M = np.asarray(crba(model, q))

    @jax.jit
    def quantities(q, qd, tau):
        eta = jaxdyn.total_joint_rates(model, q, qd)
        eps = jaxdyn.working_moments(model, q, tau)
        Cd = jaxdyn.diagonal_coriolis(model, q, qd)
        qdd = jaxdyn.aba(model, q, qd, tau)
        qdot = jaxdyn.configuration_derivative(model, q, qd)
        eta_dot = jax.jvp(lambda x, y: jaxdyn.total_joint_rates(model, x, y), (q, qd), (qdot, qdd))[1]
        _, rhs = jaxdyn.diagonal_dynamics(model, q, eta, tau)
        back = jaxdyn.joint_rates_from_total(model, q, eta)
        return eta, eps, Cd, eta_dot, rhs, back, jaxdyn.coriolis_torques(model, q, qd)

    eta, eps, Cd, eta_dot, rhs, back, c = quantities(q, qd, tau)
    assert_close(0.5 * eta @ eta, 0.5 * qd @ M @ qd)  # kinetic energy = eta.eta / 2
    assert_close(back, qd)
    assert_close(eta @ eps, qd @ tau)  # power: eta.eps = qd.T
    assert abs(float(eta @ Cd)) < 1e-10 * max(1.0, float(jnp.abs(Cd).max() * jnp.abs(eta).max()))  # eta.C = 0
    assert abs(float(qd @ c)) > 1e-6  # while qd.c != 0
    assert_close(eta_dot, rhs, 1e-9)  # eta_dot + C(q, eta) = epsilon (the diagonal equations of motion)


def test_diagonal_trajectory_matches_aba():
    model = builders.chain(4, ("revolute", "prismatic", "spherical"), seed=11)
    q0, qd0, _, _ = state(model)
    tau_fn = lambda t, q, qd: jnp.sin(3 * t) * jnp.ones(model.nv) - 0.5 * qd
    dt, steps = 2e-3, 100
    qs, qds = jax.jit(jaxdyn.simulate_diagonal, static_argnums=(3, 4, 5))(model, q0, qd0, tau_fn, dt, steps)

    def f(t, q, qd):
        return qd, jaxdyn.aba(model, q, qd, tau_fn(t, q, qd))

    c, w = jnp.array([0.0, 0.5, 0.5, 1.0]), jnp.array([1.0, 2.0, 2.0, 1.0]) / 6

    @jax.jit
    def rk4(q, qd):
        def step(carry, i):
            q, qd = carry

            def stage(sc, cw):
                kq, kv, aq, av = sc
                kq, kv = f(i * dt + cw[0] * dt, jaxdyn.integrate(model, q, kq, cw[0] * dt), qd + cw[0] * dt * kv)
                return (kq, kv, aq + cw[1] * kq, av + cw[1] * kv), None

            z = jnp.zeros_like(qd)
            (_, _, v, a), _ = jax.lax.scan(stage, (z, z, z, z), (c, w))
            return (jaxdyn.integrate(model, q, v, dt), qd + dt * a), None

        return jax.lax.scan(step, (q, qd), jnp.arange(steps))[0]

    qT, qdT = rk4(q0, qd0)
    assert_close(jaxdyn.difference(model, qT, qs[-1]), jnp.zeros(model.nv), 1e-7)
    assert_close(qds[-1], qdT, 1e-6)


@pytest.mark.parametrize("seed", [0, 1])
def test_lagrange_equals_rnea(seed):
    model = (
        builders.random_tree(6, ("revolute", "prismatic"), seed=seed) if seed else builders.chain(6, "revolute", seed=4)
    )
    q, qd, qdd, _ = state(model, seed)
    assert_close(jax.jit(jaxdyn.lagrange_dynamics)(model, q, qd, qdd), rnea(model, q, qd, qdd), 1e-10)
    L = jax.jit(jaxdyn.lagrange_mcg)(model, q)
    assert_close(L.M, crba(model, q))
    assert_close(L.G, jaxdyn.gravity_torques(model, q))
    assert_close(jnp.einsum("ijk,j,k->i", L.C, qd, qd), jaxdyn.coriolis_torques(model, q, qd))


def test_lagrange_on_ur5_and_rejects_free_base():
    model = jaxdyn.load_robot("ur5")
    q, qd, qdd, _ = state(model)
    assert_close(jaxdyn.lagrange_dynamics(model, q, qd, qdd), rnea(model, q, qd, qdd), 1e-10)
    with pytest.raises(ValueError, match="joint 'joint0' is free"):
        jaxdyn.lagrange_dynamics(zoo("chain_mixed_float"), *state(zoo("chain_mixed_float"))[:3])


def test_paper_op_counts():
    c = jaxdyn.paper_op_counts(6)
    assert (
        c["lagrange"] == (5916, 4840) and c["newton_euler"] == (636, 591) and c["modified_newton_euler"] == (513, 504)
    )
