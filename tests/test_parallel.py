"""Sharding a batch over several devices changes no results (4 host CPU devices, subprocess)."""

import os
import subprocess
import sys
import textwrap

import jax.numpy as jnp
import pytest

import jaxdyn
from jaxdyn import parallel

SCRIPT = textwrap.dedent("""
    import jax, jax.numpy as jnp, numpy as np
    jax.config.update("jax_enable_x64", True)
    import jaxdyn
    from jaxdyn import parallel, sim
    assert len(jax.devices()) == 4, jax.devices()
    m = jaxdyn.load_robot("double_pendulum")
    B = 8
    q0 = jnp.stack([jnp.linspace(-1, 1, B), jnp.linspace(0.5, -0.5, B)], 1)
    u = 0.1 * jnp.ones((B, 20, 2))
    roll = jax.jit(jax.vmap(lambda q, u: sim.rollout(m, q, jnp.zeros(2), u, 1e-2).q))
    ref = np.asarray(roll(q0, u))
    q0s, us = parallel.shard_batch((q0, u))
    out = roll(q0s, us)
    assert len(out.sharding.device_set) == 4, out.sharding
    np.testing.assert_allclose(np.asarray(out), ref, rtol=0, atol=1e-13)
    # the padding helper for batches that do not divide the device count
    (qp,), n = parallel.pad_batch((q0[:7],), 4)
    assert qp.shape[0] == 8 and n == 7
    print("OK", len(jax.devices()))
""")


def test_rollouts_shard_over_four_host_devices():
    # the suite's compiler flags (conftest.py) and four host devices
    flags = (os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=4").strip()
    env = dict(os.environ, XLA_FLAGS=flags, JAX_PLATFORMS="cpu")
    r = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "OK 4" in r.stdout


def test_shard_batch_errors():
    mesh = parallel.batch_mesh()
    with pytest.raises(ValueError, match="leading batch axis"):
        parallel.shard_batch(jnp.float32(1.0), mesh)
    model = jaxdyn.load_robot("double_pendulum")
    rep = parallel.replicate(model, mesh)
    assert rep.nv == model.nv
