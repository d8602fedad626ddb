"""SoA batched kernels (jaxdyn.kernels) against the generic per-sample algorithms under vmap.

Compile time dominates (the SoA programs are unrolled over links), so the models are small and
each (model, kernel) pair is compiled once.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxdyn
from jaxdyn import builders, kernels


def _state(model, B, seed=0):
    k = jax.random.split(jax.random.PRNGKey(seed), 4)
    q = jax.vmap(lambda kk: jaxdyn.random_configuration(model, kk))(jax.random.split(k[0], B))
    qd = jax.random.normal(k[1], (B, model.nv), model.dtype)
    x = jax.random.normal(k[2], (B, model.nv), model.dtype)
    fe = jax.random.normal(k[3], (B, model.nb, 6), model.dtype)
    return q, qd, x, fe


@pytest.fixture(scope="module")
def tree():
    """Floating base over a random tree of revolute and prismatic joints, with armature."""
    m = builders.random_tree(4, ("revolute", "prismatic"), floating_base=True, seed=3, dtype=jnp.float64)
    assert {"revolute", "prismatic", "free"} <= set(m.joint_types)
    return m.replace(armature=jnp.linspace(0.05, 0.4, m.nv))


def test_aba_rnea_match_generic_float64(tree):
    q, qd, tau, fe = _state(tree, 5)
    ref = jax.vmap(jaxdyn.aba, (None, 0, 0, 0, 0))(tree, q, qd, tau, fe)
    out = kernels.jit(kernels.aba_batch)(tree, q, qd, tau, fe)
    np.testing.assert_allclose(out, ref, rtol=1e-10, atol=1e-10)
    ref = jax.vmap(jaxdyn.rnea, (None, 0, 0, 0, 0))(tree, q, qd, out, fe)
    tau_back = kernels.jit(kernels.rnea_batch)(tree, q, qd, out, fe)
    np.testing.assert_allclose(tau_back, ref, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(tau_back, tau, rtol=1e-9, atol=1e-9)  # rnea(aba(tau)) == tau


def test_float32_and_single_sample():
    """float32 (a 4-link arm with a prismatic joint: cheap to compile) and a single (nq,) sample."""
    m = builders.chain(4, ("revolute", "revolute", "prismatic", "revolute"), seed=5, dtype=jnp.float32)
    q, qd, tau, _ = _state(m, 7, seed=1)
    f = kernels.jit(kernels.aba_batch)
    out = f(m, q, qd, tau)
    assert out.dtype == jnp.float32 and out.shape == (7, m.nv)
    m64 = m.astype(jnp.float64)
    ref = jax.vmap(jaxdyn.aba, (None, 0, 0, 0))(m64, q.astype(jnp.float64), qd.astype(jnp.float64), tau.astype(jnp.float64))
    scale = np.max(np.abs(ref), axis=1, keepdims=True)
    assert np.max(np.abs(np.asarray(out, np.float64) - ref) / scale) < 1e-4
    one = f(m, q[0], qd[0], tau[0])  # a single sample (nq,) -> (nv,)
    assert one.shape == (m.nv,)
    np.testing.assert_allclose(one, out[0], rtol=1e-6, atol=1e-6)


def test_grad_wrt_q_and_mass_matches_generic():
    m = builders.chain(2, ("revolute", "prismatic"), floating_base=True, seed=2, dtype=jnp.float64)
    q, qd, tau, _ = _state(m, 3, seed=2)
    w = jnp.linspace(-1.0, 1.0, m.nv)

    def loss_soa(model, q):
        return jnp.sum(jnp.sin(kernels.aba_batch(model, q, qd, tau)) * w)

    def loss_ref(model, q):
        return jnp.sum(jnp.sin(jax.vmap(jaxdyn.aba, (None, 0, 0, 0))(model, q, qd, tau)) * w)

    g = kernels.jit(jax.grad(loss_soa, argnums=(0, 1)))(m, q)
    r = jax.jit(jax.grad(loss_ref, argnums=(0, 1)))(m, q)
    np.testing.assert_allclose(g[1], r[1], rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(g[0].mass, r[0].mass, rtol=1e-8, atol=1e-8)
    assert np.all(np.isfinite(g[0].inertia)) and np.max(np.abs(g[0].mass)) > 0


def test_bad_input():
    sph = builders.chain(3, ("revolute", "spherical", "revolute"), seed=0, dtype=jnp.float64)
    q, qd, tau, _ = _state(sph, 2)
    with pytest.raises(ValueError, match="joint1.*spherical.*jaxdyn.aba"):
        kernels.aba_batch(sph, q, qd, tau)
    with pytest.raises(ValueError, match="spherical.*jaxdyn.rnea"):
        kernels.rnea_batch(sph, q, qd, tau)
    m = builders.chain(2, "revolute", seed=0, dtype=jnp.float64)
    q, qd, tau, fe = _state(m, 3)
    with pytest.raises(ValueError, match="'q' has shape"):
        kernels.aba_batch(m, q[:, :1], qd, tau)
    with pytest.raises(ValueError, match="'tau' has batch size 2"):
        kernels.aba_batch(m, q, qd, tau[:2])
    with pytest.raises(ValueError, match="'f_ext' has shape"):
        kernels.rnea_batch(m, q, qd, tau, fe[:, :, :3])
    with pytest.raises(ValueError, match="mix of batched and single"):
        kernels.aba_batch(m, q[0], qd, tau)
