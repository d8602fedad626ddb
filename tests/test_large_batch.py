"""Large batches on XLA CPU give the same numbers as small ones.

XLA CPU (jax 0.10.2) miscompiles ``jnp.sum(a * b, -1) + c`` (a reduce fused with an elementwise
consumer) once the arrays pass ~2^15 elements: rows from ~1,820 on of a (4096, 6, 3) batch came
out wrong, so every batched ABA beyond ~1,800 samples was wrong in float32 and float64 until
jaxdyn.spatial stopped using tiny reductions. These tests pin the batch behaviour of the main
algorithms against the same rows computed in a small batch.
"""

import jax
import jax.numpy as jnp
import numpy as np
from helpers import DEFAULT_EMITTERS

import jaxdyn
from jaxdyn import kernels, spatial

ROWS = np.array([0, 1000, 1819, 1820, 2500, 4095])


def _everything(m, q, qd, x):
    return dict(
        aba=jaxdyn.aba(m, q, qd, x),
        rnea=jaxdyn.rnea(m, q, qd, x),
        crba=jaxdyn.crba(m, q),
        solve=jaxdyn.solve_mass_matrix(m, q, x),
        jac=jaxdyn.frame_jacobians(m, q, "world"),
        energy=jaxdyn.kinetic_energy(m, q, qd) + jaxdyn.potential_energy(m, q),
        com=jaxdyn.center_of_mass(m, q),
    )


def test_batch_4096_equals_small_batches():
    """The rows at large offsets of a 4096 batch equal the same samples placed first in the
    batch (rows the miscompile never touched): one compiled program, two input orders."""
    m = jaxdyn.load_robot("panda", dtype=jnp.float32)
    B = 4096
    k = jax.random.split(jax.random.PRNGKey(0), 3)
    q = jax.vmap(lambda kk: jaxdyn.random_configuration(m, kk))(jax.random.split(k[0], B))
    qd = jax.random.normal(k[1], (B, m.nv), jnp.float32)
    x = jax.random.normal(k[2], (B, m.nv), jnp.float32)
    # ROWS moved to the front, the other samples after them
    perm = np.concatenate([ROWS, np.setdiff1d(np.arange(B), ROWS)])
    n = len(ROWS)
    f = jax.jit(
        lambda q, qd, x: (
            jax.vmap(_everything, in_axes=(None, 0, 0, 0))(m, q, qd, x),
            kernels.aba_batch(m, q, qd, x),  # the struct-of-arrays kernel, same rows
        ),
        compiler_options=DEFAULT_EMITTERS,
    )
    big, soa = f(q, qd, x)
    small, soa_small = f(q[perm], qd[perm], x[perm])
    assert ROWS.max() >= 1820 and n < 1820
    for name in big:
        a, b = np.asarray(big[name])[ROWS], np.asarray(small[name])[:n]
        scale = max(1.0, float(np.max(np.abs(b))))
        assert np.max(np.abs(a - b)) < 1e-4 * scale, name
    np.testing.assert_allclose(np.asarray(soa)[ROWS], np.asarray(small["aba"])[:n], rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(np.asarray(soa_small)[:n], np.asarray(small["aba"])[:n], rtol=1e-3, atol=1e-3)


def test_spatial_products_at_large_batch():
    """The pattern that XLA CPU miscompiled: a small matrix-vector product plus a cross product."""
    rng = np.random.default_rng(0)
    A = rng.normal(size=(6, 3, 3)).astype(np.float32)
    h = rng.normal(size=(6, 3)).astype(np.float32)
    w = rng.normal(size=(4096, 6, 3)).astype(np.float32)
    out = jax.jit(
        lambda A, h, w: spatial.mv(A[None], w) + spatial.cross(h[None], w), compiler_options=DEFAULT_EMITTERS
    )(A, h, w)
    ref = np.einsum("nij,bnj->bni", A, w) + np.cross(h[None], w)
    np.testing.assert_allclose(np.asarray(out), ref, rtol=1e-5, atol=1e-5)


def test_free_flyer_integrate_at_large_batch():
    """Quaternion products and norms (integrate/difference) at a batch of 16,384 free bases."""
    m = jaxdyn.load_robot("solo12", dtype=jnp.float32)
    B = 16384
    k = jax.random.split(jax.random.PRNGKey(1), 2)
    q = jax.vmap(lambda kk: jaxdyn.random_configuration(m, kk))(jax.random.split(k[0], B))
    v = jax.random.normal(k[1], (B, m.nv), jnp.float32)
    f = jax.jit(
        jax.vmap(lambda q, v: jaxdyn.difference(m, q, jaxdyn.integrate(m, q, v, 0.1)), in_axes=(0, 0)),
        compiler_options=DEFAULT_EMITTERS,
    )
    rows = np.array([0, 5000, 16383])
    big, small = np.asarray(f(q, v))[rows], np.asarray(f(q[rows], v[rows]))
    np.testing.assert_allclose(big, small, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(big, 0.1 * np.asarray(v)[rows], rtol=1e-3, atol=1e-3)
