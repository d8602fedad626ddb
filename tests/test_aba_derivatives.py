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
    m = builders.random_tree(4, ("revolute", "prismatic", "spherical"), floating_base=True, seed=1, dtype=dtype)
    m = m.replace(armature=jnp.linspace(0.05, 0.2, m.nv, dtype=dtype))
    k = jax.random.split(jax.random.PRNGKey(3), 4)
    q = jaxdyn.random_configuration(m, k[0]).astype(dtype)
    qd, tau = jax.random.normal(k[1], (m.nv,), dtype), jax.random.normal(k[2], (m.nv,), dtype)
    fe = jax.random.normal(k[3], (m.nb, 6), dtype)
    return m, q, qd, tau, fe


def _close(a, b, tol=1e-9):
    for x, y in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)):
        if not np.size(y):  # empty leaves (a model without geoms)
            continue
        np.testing.assert_allclose(x, y, rtol=tol, atol=tol * max(1.0, float(jnp.abs(y).max())))


@jax.jit
def _state_jacobians(m, q, qd, tau, fe):
    """The sweeps' Jacobian w.r.t. (q, qd, tau, f_ext) (forward mode); ``jaxdyn.aba``'s in forward
    and reverse mode; and ``jaxdyn.aba``'s w.r.t. ``qd`` alone and ``tau`` alone without f_ext
    (only some tangents live: the others are symbolic zeros in the rule). One program."""
    a = (m, q, qd, tau, fe)
    return (
        jax.jacfwd(_sweeps, argnums=(1, 2, 3, 4))(*a),
        jax.jacfwd(jaxdyn.aba, argnums=(1, 2, 3, 4))(*a),
        jax.jacrev(jaxdyn.aba, argnums=(1, 2, 3, 4))(*a),
        [jax.jacfwd(jaxdyn.aba, argnums=k)(m, q, qd, tau) for k in (2, 3)],
    )


def test_state_derivatives_match_the_sweeps():
    m, q, qd, tau, fe = _setup()
    ref, fwd, rev, partial = _state_jacobians(m, q, qd, tau, fe)
    _close(fwd, ref)
    _close(rev, ref)
    # only some tangents live, without f_ext: d qdd / d qd and d qdd / d tau do not depend on
    # f_ext (qdd = M^-1 (tau - C qd - g + J^T f_ext), affine in f_ext with a q-only coefficient),
    # so the sweeps' blocks with f_ext are the reference
    for k, J in zip((2, 3), partial):
        _close(J, ref[k - 1])
    # second order (a smaller tree: the Hessian of the sweeps is slow to compile); the sweeps'
    # Hessian in forward-over-forward mode (jax.hessian is forward over reverse: 2x the compile)
    m2 = builders.random_tree(2, ("revolute", "spherical"), floating_base=True, seed=2, dtype=jnp.float64)
    q2 = jaxdyn.random_configuration(m2, jax.random.PRNGKey(5))
    v2, t2 = jnp.linspace(-1.0, 1.0, m2.nv), jnp.linspace(0.5, -0.5, m2.nv)
    loss = lambda f: lambda q: jnp.sum(jnp.sin(f(m2, q, v2, t2)))  # noqa: E731
    h = jax.jit(lambda q: [jax.hessian(loss(jaxdyn.aba))(q), jax.jacfwd(jax.jacfwd(loss(_sweeps)))(q)])
    _close(*h(q2), 1e-8)


def test_model_gradient_matches_the_sweeps_and_is_symmetric_in_inertia():
    m, q, qd, tau, fe = _setup()
    loss = lambda f: lambda m: jnp.sum(f(m, q, qd, tau, fe) ** 2)  # noqa: E731
    g_new, g_ref = jax.jit(lambda m: [jax.grad(loss(f))(m) for f in (jaxdyn.aba, _sweeps)])(m)
    sym = lambda a: (a + jnp.swapaxes(a, -1, -2)) / 2  # noqa: E731
    assert np.allclose(g_new.inertia, sym(g_new.inertia), rtol=0, atol=1e-12 * float(jnp.abs(g_new.inertia).max()))
    _close(g_new, g_ref)
    # forward mode along a symmetric direction of every parameter
    dm = jax.tree_util.tree_map(lambda x: jnp.ones_like(x) if jnp.issubdtype(x.dtype, jnp.floating) else x, m)
    f = lambda fn: jax.jvp(lambda m: fn(m, q, qd, tau, fe), (m,), (dm,))[1]  # noqa: E731
    _close(*jax.jit(lambda: [f(jaxdyn.aba), f(_sweeps)])())


def test_float32_jacobian_close_to_float64():
    args = _setup()
    ref = np.asarray(_state_jacobians(*args)[1][0])  # float64 d qdd / d q (the program above)
    f32 = lambda x: x.astype(jnp.float32) if jnp.issubdtype(x.dtype, jnp.floating) else x  # noqa: E731
    J = jax.jit(jax.jacfwd(jaxdyn.aba, argnums=1))(*jax.tree_util.tree_map(f32, args))
    assert J.dtype == jnp.float32
    assert np.linalg.norm(np.asarray(J) - ref) / np.linalg.norm(ref) < 1e-4
