"""``jaxdyn.aba``'s derivatives come from the inverse-dynamics identity (a custom JVP,
``algorithms.aba._aba_jvp``): they must equal the derivatives of the three ABA sweeps
themselves (``aba_full``), in forward and reverse mode, to second order, w.r.t. the state, the
torques, external wrenches and the model's parameters (the gradient w.r.t. the inertia is
symmetric: the algorithms read it through its symmetric part)."""

import jax
import jax.numpy as jnp
import numpy as np

import jaxdyn
from jaxdyn import builders
from jaxdyn.algorithms.aba import aba_full


def _sweeps(m, q, qd, tau, fe=None):
    return aba_full(m, q, qd, tau, fe).qdd


def _setup(dtype=jnp.float64):
    # a branched floating tree with every joint type, armature and external wrenches
    m = builders.random_tree(6, ("revolute", "prismatic", "spherical"), floating_base=True, seed=1, dtype=dtype)
    m = m.replace(armature=jnp.linspace(0.05, 0.2, m.nv, dtype=dtype))
    k = jax.random.split(jax.random.PRNGKey(3), 4)
    q = jaxdyn.random_configuration(m, k[0]).astype(dtype)
    qd, tau = jax.random.normal(k[1], (m.nv,), dtype), jax.random.normal(k[2], (m.nv,), dtype)
    fe = jax.random.normal(k[3], (m.nb, 6), dtype)
    return m, q, qd, tau, fe


def _close(a, b, tol=1e-9):
    for x, y in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)):
        np.testing.assert_allclose(x, y, rtol=tol, atol=tol * max(1.0, float(jnp.abs(y).max())))


def test_state_derivatives_match_the_sweeps():
    m, q, qd, tau, fe = _setup()
    args = (m, q, qd, tau, fe)
    ref = jax.jacfwd(_sweeps, argnums=(1, 2, 3, 4))(*args)
    _close(jax.jacfwd(jaxdyn.aba, argnums=(1, 2, 3, 4))(*args), ref)
    _close(jax.jacrev(jaxdyn.aba, argnums=(1, 2, 3, 4))(*args), ref)
    # only some tangents live (the others are symbolic zeros in the rule), without f_ext
    _close(jax.jacfwd(jaxdyn.aba, argnums=3)(m, q, qd, tau), jax.jacfwd(_sweeps, argnums=3)(m, q, qd, tau))
    _close(jax.jacfwd(jaxdyn.aba, argnums=2)(m, q, qd, tau), jax.jacfwd(_sweeps, argnums=2)(m, q, qd, tau))
    # second order
    h = lambda f: jax.hessian(lambda q: jnp.sum(jnp.sin(f(m, q, qd, tau, fe))))(q)  # noqa: E731
    _close(h(jaxdyn.aba), h(_sweeps), 1e-8)


def test_model_gradient_matches_the_sweeps_and_is_symmetric_in_inertia():
    m, q, qd, tau, fe = _setup()
    loss = lambda f: lambda m: jnp.sum(f(m, q, qd, tau, fe) ** 2)  # noqa: E731
    g_new, g_ref = jax.grad(loss(jaxdyn.aba))(m), jax.grad(loss(_sweeps))(m)
    sym = lambda a: (a + jnp.swapaxes(a, -1, -2)) / 2  # noqa: E731
    assert np.allclose(g_new.inertia, sym(g_new.inertia), rtol=0, atol=1e-12 * float(jnp.abs(g_new.inertia).max()))
    _close(g_new, g_ref)
    # forward mode along a symmetric direction of every parameter
    dm = jax.tree_util.tree_map(lambda x: jnp.ones_like(x) if jnp.issubdtype(x.dtype, jnp.floating) else x, m)
    f = lambda fn: jax.jvp(lambda m: fn(m, q, qd, tau, fe), (m,), (dm,))[1]  # noqa: E731
    _close(f(jaxdyn.aba), f(_sweeps))


def test_float32_jacobian_close_to_float64():
    args = _setup()
    ref = np.asarray(jax.jacfwd(jaxdyn.aba, argnums=1)(*args))
    f32 = lambda x: x.astype(jnp.float32) if jnp.issubdtype(x.dtype, jnp.floating) else x  # noqa: E731
    J = jax.jacfwd(jaxdyn.aba, argnums=1)(*jax.tree_util.tree_map(f32, args))
    assert J.dtype == jnp.float32
    assert np.linalg.norm(np.asarray(J) - ref) / np.linalg.norm(ref) < 1e-4
