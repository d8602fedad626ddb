"""The scanned SoA sweeps must not leave batch-sized constants in the compiled program.

Their per-body buffers start from constants (zeros, gravity, the masses); XLA constant-folds
any update of a constant into a new literal, which for a batch of 2^20 talos samples meant
(34, 2^20) literals: seconds of compile time on the H100 (2026-11-23 run) and large constants
in the executable. ``jaxdyn.tree`` puts the scanned buffers behind an optimisation barrier."""

import re

import jax
import jax.numpy as jnp
import pytest

import jaxdyn
from jaxdyn import kernels

B = 2048


@pytest.mark.parametrize("algo", ["aba", "rnea", "crba"])
def test_no_batch_sized_constants(algo):
    m = jaxdyn.load_robot("talos", floating_base=False, dtype=jnp.float32)
    q = jax.ShapeDtypeStruct((B, m.nq), jnp.float32)
    v = jax.ShapeDtypeStruct((B, m.nv), jnp.float32)
    if algo == "crba":
        f, args = (lambda q: kernels.crba_batch(m, q, traversal="scan", chunk=None)), (q,)
    else:
        fn = {"aba": kernels.aba_batch, "rnea": kernels.rnea_batch}[algo]
        f, args = (lambda q, a, b: fn(m, q, a, b, traversal="scan", chunk=None)), (q, v, v)
    hlo = jax.jit(f).lower(*args).compile().as_text()
    big = [
        line.strip()[:120]
        for line in hlo.splitlines()
        if re.search(rf"= f32\[([\d,]*,)?{B}\]\{{[\d,]*\}} constant\(", line)
    ]
    assert not big, f"{algo}: batch-sized constants in the compiled program: {big[:3]}"
