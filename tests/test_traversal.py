"""The traversal strategies (scan, level, unroll, latency) compute the same recursions."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxdyn
from jaxdyn import builders
from jaxdyn.model import layout, resolve_traversal


def _everything(m, q, qd, tau):
    return dict(
        aba=jaxdyn.aba(m, q, qd, tau),
        rnea=jaxdyn.rnea(m, q, qd, tau),
        M=jaxdyn.crba(m, q),
        grad=jax.grad(lambda t: jnp.sum(jaxdyn.aba(m, q, qd, t) ** 2))(tau),
    )


EVERYTHING = jax.jit(_everything)


def test_strategies_agree():
    """A branched floating tree with every joint type (levels of unequal width: padding)."""
    model = builders.random_tree(6, ("revolute", "prismatic", "spherical"), floating_base=True, seed=0)
    assert (layout(model.topology, "level").level_bodies == model.nb + 1).any()  # padded levels
    key = jax.random.PRNGKey(0)
    q = jaxdyn.random_configuration(model, key)
    qd = jax.random.normal(key, (model.nv,))
    tau = jax.random.normal(jax.random.PRNGKey(1), (model.nv,))
    ref = EVERYTHING(model.with_traversal("scan"), q, qd, tau)
    for strategy in ("level", "unroll", "latency"):
        out = EVERYTHING(model.with_traversal(strategy), q, qd, tau)
        for a, b in zip(jax.tree_util.tree_leaves(out), jax.tree_util.tree_leaves(ref)):
            assert np.all(np.isfinite(a))
            assert np.allclose(a, b, rtol=1e-10, atol=1e-10), strategy


def test_level_layout_and_auto():
    m = jaxdyn.load_robot("solo12", floating_base=True)
    lay = layout(m.topology, "level")
    # 4 legs of 3 joints below the free base: 3 levels of 4 links, no padding
    assert lay.level_links.shape == (3, 4) and np.all(lay.level_bodies <= m.nb)
    assert sorted(lay.link_level_pos.tolist()) == list(range(12))
    assert resolve_traversal(m.topology, "auto") in ("scan", "unroll")
    assert layout(m.topology, "latency").traversal == "unroll" and layout(m.topology, "latency").dense
    assert not layout(m.topology, "unroll").dense
    with pytest.raises(ValueError, match="unknown traversal 'zigzag'"):
        m.with_traversal("zigzag")


@pytest.mark.parametrize("floating", [False, True])
def test_chain_fast_path_agrees(floating):
    """A serial chain takes the carry-only scan (Layout.is_chain): same results and gradients as
    the unrolled and level strategies; a branched tree does not take it."""
    model = builders.chain(5, ("revolute", "prismatic", "spherical"), floating_base=floating, seed=3)
    assert model.layout.is_chain and model.with_traversal("scan").layout.is_chain
    assert not builders.random_tree(6, "revolute", seed=0).layout.is_chain  # branched (seed 0)
    key = jax.random.PRNGKey(2)
    q = jaxdyn.random_configuration(model, key)
    qd = jax.random.normal(key, (model.nv,))
    tau = jax.random.normal(jax.random.PRNGKey(3), (model.nv,))
    ref = EVERYTHING(model.with_traversal("unroll"), q, qd, tau)
    out = EVERYTHING(model.with_traversal("scan"), q, qd, tau)
    for a, b in zip(jax.tree_util.tree_leaves(out), jax.tree_util.tree_leaves(ref)):
        assert np.allclose(a, b, rtol=1e-10, atol=1e-10)
