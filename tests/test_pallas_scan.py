"""The fused Pallas kernels that loop over links (jaxdyn.kernels.pallas_scan, traversal "scan"),
in Pallas interpret mode on CPU, against the generic per-sample algorithms, and lowered for CUDA.

Interpret mode runs the kernel body op by op per program, so the batches are small."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from harness import _inputs as _state

import jaxdyn
from jaxdyn import algorithms, builders
from jaxdyn.kernels import pallas


def _models():
    """A floating random tree of revolute and prismatic joints (branch slots, the free root's
    slot, prismatic columns), a fixed-base branched tree (the world's slot) and a serial chain
    (everything through the loop carry), with armature."""
    ms = {
        "floating_tree": builders.random_tree(
            7, ("revolute", "prismatic"), floating_base=True, seed=3, dtype=jnp.float64
        ),
        "fixed_tree": builders.random_tree(6, "revolute", seed=5, dtype=jnp.float64),
        "chain": builders.chain(5, ("revolute", "prismatic"), seed=1, dtype=jnp.float64),
    }
    return {k: m.replace(armature=jnp.linspace(0.05, 0.3, m.nv)) for k, m in ms.items()}


MODELS = _models()

# the references: vmap of the one-sample algorithms, module level (one compiled program per
# model and batch size, shared by the tests)
_REF = {
    "aba": jax.jit(jax.vmap(algorithms.aba.aba, (None, 0, 0, 0))),
    "rnea": jax.jit(jax.vmap(algorithms.rnea.rnea, (None, 0, 0, 0))),
    "crba": jax.jit(jax.vmap(algorithms.crba.crba, (None, 0))),
}


@pytest.mark.parametrize("algo", ["aba", "rnea"])
@pytest.mark.parametrize("name", sorted(MODELS))
def test_looped_matches_generic_float64(name, algo):
    m = MODELS[name]
    build = {"aba": pallas.aba_pallas, "rnea": pallas.rnea_pallas}[algo]
    q, qd, x = _state(m, 21, seed=len(name))
    out = jax.jit(build(m, block=8, interpret=True, traversal="scan"))(q, qd, x)
    ref = _REF[algo](m, q, qd, x)
    assert out.shape == (21, m.nv)
    np.testing.assert_allclose(out, ref, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_looped_crba_matches_generic_float64(name):
    """The looped mass matrix (poses, composite inertias, ancestor table) equals
    ``vmap(jaxdyn.crba)``: off-branch zeros, the free root's block and column, armature."""
    m = MODELS[name]
    q, _, _ = _state(m, 11, seed=4)
    out = jax.jit(pallas.crba_pallas(m, block=8, interpret=True, traversal="scan"))(q)
    ref = _REF["crba"](m, q)
    assert out.shape == (11, m.nv, m.nv)
    np.testing.assert_allclose(out, ref, rtol=1e-10, atol=1e-10)
    if name != "chain":
        assert np.any(np.asarray(ref[0]) == 0.0)  # off-branch entries exist (the test covers them)


def test_looped_float32_and_auto_choice():
    """float32 within 1e-4 (relative to the largest entry) of the float64 path; ``"auto"``
    loops beyond PALLAS_MAX_LINKS links and unrolls below, the override's "latency" unrolls; the
    Jacobian has no looped form."""
    m64 = builders.chain(14, "revolute", floating_base=True, seed=4, dtype=jnp.float64)
    m32 = builders.chain(14, "revolute", floating_base=True, seed=4, dtype=jnp.float32)
    pt = jaxdyn.planner.pallas_traversal
    assert pt(m32, "aba_pallas") == "scan"  # 14 > 12 links
    assert pt(m32, "rnea_pallas") == "unroll"  # 14 <= 32
    with jaxdyn.executor(traversal="scan"):
        assert pt(m32, "rnea_pallas") == "scan"
    with jaxdyn.executor(traversal="latency"):
        assert pt(m32, "aba_pallas") == "unroll"
    q, qd, tau = _state(m64, 9, seed=2)
    ref = _REF["aba"](m64, q, qd, tau)
    f = jax.jit(pallas.aba_pallas(m32, block=8, interpret=True))
    out = f(*(a.astype(jnp.float32) for a in (q, qd, tau)))
    assert out.dtype == jnp.float32
    assert float(jnp.max(jnp.abs(out - ref)) / jnp.max(jnp.abs(ref))) < 1e-4
    with pytest.raises(ValueError, match="aba_jacobian_pallas: only the unrolled form"):
        pt(m32, "aba_jacobian_pallas", "scan")
    with pytest.raises(ValueError, match="traversal must be one of auto, unroll, scan, got 'zigzag'"):
        pallas.aba_pallas(m32, traversal="zigzag")
    with pytest.raises(ValueError, match="aba_pallas: argument 'tau' has shape"):
        pallas.aba_pallas(m32, block=8, interpret=True)(q, qd, tau[:, :3])


def test_looped_lowers_for_cuda():
    """Lowered for the CUDA platform without a GPU (jax.export): the Triton lowering accepts the
    loop, the dynamic row indices and the masked loads/stores."""
    from jax import export

    m = builders.random_tree(7, ("revolute", "prismatic"), floating_base=True, seed=3, dtype=jnp.float32)
    q = jax.ShapeDtypeStruct((256, m.nq), jnp.float32)
    v = jax.ShapeDtypeStruct((256, m.nv), jnp.float32)
    target = "__gpu$xla.gpu.triton"
    for build, args in (
        (pallas.aba_pallas, (q, v, v)),
        (pallas.rnea_pallas, (q, v, v)),
        (pallas.crba_pallas, (q,)),
    ):
        f = jax.jit(build(m, block=128, interpret=False, traversal="scan"))
        exp = export.export(f, platforms=["cuda"], disabled_checks=[export.DisabledSafetyCheck.custom_call(target)])(
            *args
        )
        assert f"custom_call @{target}" in exp.mlir_module()


def test_looped_chunks_large_batches(monkeypatch):
    """Batches whose scratch exceeds SCRATCH_BYTES run in chunks (lax.map) with the same result."""
    from jaxdyn.kernels import pallas_scan

    real_call = pallas_scan._call
    m = MODELS["floating_tree"]
    q, qd, tau = _state(m, 21, seed=9)
    ref = _REF["aba"](m, q, qd, tau)  # the program of test_looped_matches_generic_float64[floating_tree-aba]
    monkeypatch.setattr(pallas_scan, "SCRATCH_BYTES", 1)  # one block (8 samples) per chunk: 3 chunks
    calls = []
    monkeypatch.setattr(pallas_scan, "_call", lambda *a: calls.append(a[2]) or real_call(*a))
    out = jax.jit(pallas.aba_pallas(m, block=8, interpret=True, traversal="scan"))(q, qd, tau)
    np.testing.assert_allclose(out, ref, rtol=1e-10, atol=1e-10)
    assert calls == [8]  # traced once, under lax.map, with chunks of 8 samples
