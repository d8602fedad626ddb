"""Closed-form first derivatives of inverse and forward dynamics (``jaxdyn.rnea_derivatives``,
``jaxdyn.aba_derivatives``): against Pinocchio's ``computeRNEADerivatives`` /
``computeABADerivatives`` (stored values, every shipped robot, fixed and floating base), and
against ``jax.jacfwd`` of ``rnea`` / ``aba`` composed with ``integrate`` (tangent-space
columns) on models with every joint type, armature and external wrenches."""

import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import zoo
from pinocchio_ref import CASES, DATA, Ref

import jaxdyn
from jaxdyn import builders


def _close(a, b, rtol):
    a, b = np.asarray(a), np.asarray(b)
    np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * max(1.0, float(np.max(np.abs(b)))))


def _both(m, q, qd, qdd, tau, fe):
    return jaxdyn.rnea_derivatives(m, q, qd, qdd, fe), jaxdyn.aba_derivatives(m, q, qd, tau, fe)


@pytest.mark.parametrize("case", CASES, ids=[f"{r}-{b}" for r, b in CASES])
def test_against_pinocchio(case):
    r = Ref(*case)
    d = np.load(os.path.join(DATA, f"{case[0]}_{case[1]}_derivatives.npz"))
    stack = lambda f: np.stack([f(k) for k in range(r.K)])  # noqa: E731
    q, v = stack(r.q), stack(lambda k: r.vec(k, "v"))
    a, tau = stack(lambda k: r.vec(k, "a")), stack(lambda k: r.vec(k, "tau"))
    rd, ad = jax.jit(jax.vmap(lambda q, v, a, t: _both(r.model, q, v, a, t, None)))(q, v, a, tau)
    perm = np.ix_(r.pv, r.pv)  # rows and tangent columns in jaxdyn's order ([omega; v] for the free flyer)
    for k in range(r.K):
        _close(rd.dtau_dq[k], d["drnea_dq"][k][perm], 1e-9)
        _close(rd.dtau_dqd[k], d["drnea_dv"][k][perm], 1e-9)
        _close(ad.dqdd_dq[k], d["daba_dq"][k][perm], 1e-8)
        _close(ad.dqdd_dqd[k], d["daba_dv"][k][perm], 1e-8)
        _close(ad.dqdd_dtau[k], r.mat(k, "minv"), 1e-8)
        _close(ad.qdd[k], r.vec(k, "aba"), 1e-8)


def _jacfwd_reference(m, q, qd, qdd, tau, fe):
    z = jnp.zeros(m.nv, m.dtype)
    rq, rqd = jax.jacfwd(lambda dq, v: jaxdyn.rnea(m, jaxdyn.integrate(m, q, dq), v, qdd, fe), argnums=(0, 1))(z, qd)
    aq, aqd, at = jax.jacfwd(lambda dq, v, t: jaxdyn.aba(m, jaxdyn.integrate(m, q, dq), v, t, fe), argnums=(0, 1, 2))(
        z, qd, tau
    )
    return (rq, rqd), (aq, aqd, at)


@pytest.mark.parametrize("name", ["chain_mixed", "chain_mixed_float", "tree_float"])
def test_against_jacfwd_every_joint_type(name):
    if name == "tree_float":
        m = builders.random_tree(6, ("revolute", "prismatic", "spherical", "continuous"), floating_base=True, seed=4)
    else:
        m = zoo(name)
    m = m.astype(jnp.float64).replace(armature=jnp.linspace(0.05, 0.3, m.nv))
    k = jax.random.split(jax.random.PRNGKey(11), 5)
    q = jaxdyn.random_configuration(m, k[0])
    qd, qdd, tau = (jax.random.normal(kk, (m.nv,), jnp.float64) for kk in k[1:4])
    fe = jax.random.normal(k[4], (m.nb, 6), jnp.float64)
    (rd, ad), (ref_r, ref_a) = jax.jit(lambda *a: (_both(*a), _jacfwd_reference(*a)))(m, q, qd, qdd, tau, fe)
    _close(rd.dtau_dq, ref_r[0], 1e-10)
    _close(rd.dtau_dqd, ref_r[1], 1e-10)
    _close(ad.dqdd_dq, ref_a[0], 1e-9)
    _close(ad.dqdd_dqd, ref_a[1], 1e-9)
    _close(ad.dqdd_dtau, ref_a[2], 1e-10)
    if name == "tree_float":  # M^-1 by the innovations inverse instead of CRBA + Cholesky
        alt = jax.jit(lambda *a: jaxdyn.aba_derivatives(*a, minv="innovations"))(m, q, qd, tau, fe)
        for x, y in zip(alt, ad):
            _close(x, y, 1e-10)


def test_float32_is_usable_and_batches():
    """float32 against float64 on the 38-dof talos, batched; the batched program calls no
    library kernel."""
    m64 = jaxdyn.load_robot("talos", dtype=jnp.float64)
    m32 = m64.astype(jnp.float32)
    keys = jax.random.split(jax.random.PRNGKey(2), 8)
    q = jax.vmap(lambda kk: jaxdyn.random_configuration(m64, kk))(keys)
    qd = jax.random.normal(keys[0], (8, m64.nv), jnp.float64)
    tau = jax.random.normal(keys[1], (8, m64.nv), jnp.float64)
    f = lambda m: jax.jit(jax.vmap(lambda q, v, t: jaxdyn.aba_derivatives(m, q, v, t)))  # noqa: E731
    d64 = f(m64)(q, qd, tau)
    # batched, M^-1 comes from XLA loops (jaxdyn.linalg): jaxlib's batched LAPACK kernels block
    # XLA's CPU thread pool and deadlocked trajopt.solve_batch on two host devices
    assert "custom_call" not in f(m64).lower(q, qd, tau).as_text()
    d32 = f(m32)(q.astype(jnp.float32), qd.astype(jnp.float32), tau.astype(jnp.float32))
    assert d32.dqdd_dq.dtype == jnp.float32 and d32.dqdd_dq.shape == (8, m64.nv, m64.nv)
    for a, b in zip(d32, d64):
        rel = float(jnp.linalg.norm(a.astype(jnp.float64) - b) / jnp.linalg.norm(b))
        assert rel < 1e-3, rel  # float32 through M^-1 of a 38-dof humanoid: measured 3e-7 (qdd) to 1.4e-4 (dqdd/dqd)


def test_bad_input_names_the_argument():
    m = jaxdyn.load_robot("panda", dtype=jnp.float64)
    q, z = jaxdyn.neutral(m), jnp.zeros(m.nv)
    with pytest.raises(ValueError, match="qd"):
        jaxdyn.rnea_derivatives(m, q, jnp.zeros(m.nv + 1), z)
    with pytest.raises(ValueError, match="tau"):
        jaxdyn.aba_derivatives(m, q, z, jnp.zeros((2, 3)))
    with pytest.raises(ValueError, match="minv"):
        jaxdyn.aba_derivatives(m, q, z, z, minv="lu")
