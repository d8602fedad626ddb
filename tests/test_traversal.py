"""The traversal strategies (scan, unroll, latency) compute the same recursions; the planner
(jaxdyn.planner) chooses them, and its override (jaxdyn.executor) is part of jit's cache key."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxdyn
from jaxdyn import builders, planner
from jaxdyn.model import layout


def _everything(m, q, qd, tau):
    return dict(
        aba=jaxdyn.aba(m, q, qd, tau),
        rnea=jaxdyn.rnea(m, q, qd, tau),
        M=jaxdyn.crba(m, q),
        grad=jax.grad(lambda t: jnp.sum(jaxdyn.aba(m, q, qd, t) ** 2))(tau),
    )


EVERYTHING = jax.jit(_everything)


def _walked(strategy, model, q, qd, tau):
    """``EVERYTHING`` with the tree walked by ``strategy`` (the one jitted function, traced again
    under each override)."""
    with jaxdyn.executor(traversal=strategy):
        assert model.layout.traversal == ("unroll" if strategy == "latency" else strategy)
        return EVERYTHING(model, q, qd, tau)


def test_strategies_agree():
    """A branched floating tree with every joint type."""
    model = builders.random_tree(6, ("revolute", "prismatic", "spherical"), floating_base=True, seed=0)
    assert not model.layout.is_chain  # branch points: the scan's slots are exercised
    key = jax.random.PRNGKey(0)
    q = jaxdyn.random_configuration(model, key)
    qd = jax.random.normal(key, (model.nv,))
    tau = jax.random.normal(jax.random.PRNGKey(1), (model.nv,))
    ref = _walked("scan", model, q, qd, tau)
    for strategy in ("unroll", "latency"):
        out = _walked(strategy, model, q, qd, tau)
        for a, b in zip(jax.tree_util.tree_leaves(out), jax.tree_util.tree_leaves(ref)):
            assert np.all(np.isfinite(a))
            assert np.allclose(a, b, rtol=1e-10, atol=1e-10), strategy


def test_layout_and_auto():
    m = jaxdyn.load_robot("solo12", floating_base=True)
    assert planner.traversal(m.topology) in ("scan", "unroll")
    assert layout(m.topology, "latency").traversal == "unroll" and layout(m.topology, "latency").dense
    assert not layout(m.topology, "unroll").dense
    with pytest.raises(ValueError, match="unknown traversal 'zigzag'"):
        with jaxdyn.executor(traversal="zigzag"):
            pass
    with pytest.raises(ValueError, match="unknown batch 'level'"):
        with jaxdyn.executor(batch="level"):
            pass
    with pytest.raises(ValueError, match="traversal must be one of"):
        layout(m.topology, "auto")


def test_auto_per_backend(monkeypatch):
    """ "auto" resolves per backend (H100 measurements: the generic path unrolls small robots on
    a GPU; the SoA kernels pick the same on every backend); the layout cache follows."""
    panda, talos = jaxdyn.load_robot("panda"), jaxdyn.load_robot("talos", floating_base=False)
    chain = builders.chain(20, "revolute", seed=0)
    expect = {"cpu": ("scan", "scan", "scan", "scan"), "gpu": ("unroll", "scan", "scan", "scan")}
    for backend, (gen_panda, gen_talos, soa_talos, soa_chain) in expect.items():
        monkeypatch.setattr(jax, "default_backend", lambda: backend)
        assert planner.traversal(panda.topology) == panda.layout.traversal == gen_panda
        assert talos.layout.traversal == gen_talos
        assert planner.kernel_traversal(talos) == soa_talos and planner.kernel_traversal(chain) == soa_chain
        assert planner.kernel_traversal(panda) == "unroll"
        with jaxdyn.executor(traversal="scan"):  # an explicit choice stays
            assert panda.layout.traversal == "scan" and planner.kernel_traversal(panda) == "scan"
        assert planner.kernel_traversal(panda, "scan") == "scan"  # a kernel's own argument


@pytest.mark.parametrize("floating", [False, True])
def test_chain_fast_path_agrees(floating):
    """A serial chain takes the carry-only scan (Layout.is_chain): same results and gradients as
    the unrolled strategy; a branched tree does not take it."""
    model = builders.chain(5, ("revolute", "prismatic", "spherical"), floating_base=floating, seed=3)
    assert model.layout.is_chain and layout(model.topology, "scan").is_chain
    assert not builders.random_tree(6, "revolute", seed=0).layout.is_chain  # branched (seed 0)
    key = jax.random.PRNGKey(2)
    q = jaxdyn.random_configuration(model, key)
    qd = jax.random.normal(key, (model.nv,))
    tau = jax.random.normal(jax.random.PRNGKey(3), (model.nv,))
    ref = _walked("unroll", model, q, qd, tau)
    out = _walked("scan", model, q, qd, tau)
    for a, b in zip(jax.tree_util.tree_leaves(out), jax.tree_util.tree_leaves(ref)):
        assert np.allclose(a, b, rtol=1e-10, atol=1e-10)


def test_latency_program_keeps_buffers_small():
    """The single-sample ABA under traversal "latency" builds no array over 512 bytes: XLA CPU
    runs a program's kernels sequentially in the calling thread only then (see tree.gather); a
    stacked (nb, 6, 6) array made a 4-link call ~7x slower. Checks the compiled program's ENTRY
    instructions (a structural check, no timing)."""
    import re

    m = builders.chain(4, ("revolute", "prismatic", "revolute", "revolute"), seed=1, dtype=jnp.float32)
    q = jnp.zeros(m.nq, jnp.float32)
    with jaxdyn.executor(traversal="latency"):
        text = jax.jit(lambda q, qd, tau: jaxdyn.aba(m, q, qd, tau)).lower(q, q, q).compile().as_text()
    entry = text.split("\nENTRY")[1]
    sizes = {"f32": 4, "f64": 8, "s32": 4, "pred": 1, "u32": 4, "s64": 8}
    big = []
    for dt, dims in re.findall(r"= (f32|f64|s32|pred|u32|s64)\[([\d,]*)\]", entry):
        n = int(np.prod([int(d) for d in dims.split(",") if d])) if dims else 1
        if n * sizes[dt] > 512:
            big.append(f"{dt}[{dims}]")
    assert not big, big


def test_packed_outputs_round_trip_and_scan():
    """``tree.pack``: same-shape arrays become rows of one array, literals stay static, other
    arrays stay aside; a scan stacks the Packed over steps, and tree_map slicing and ``get``
    give each step's outputs back."""
    from jaxdyn import tree

    a, b, c = jnp.arange(4.0), jnp.arange(4.0) + 10, jnp.ones((2, 3))
    out = ((a, 0.0), {"x": b, "y": c})
    p = tree.pack(out)
    assert isinstance(p, tree.Packed) and p.rows.shape == (2, 4) and len(p.rest) == 1
    got = p.get()
    assert got[0][1] == 0.0 and isinstance(got[0][1], float)
    np.testing.assert_array_equal(got[0][0], a)
    np.testing.assert_array_equal(got[1]["x"], b)
    np.testing.assert_array_equal(got[1]["y"], c)
    assert not isinstance(tree.pack((a, 0.0)), tree.Packed)  # one array: nothing to stack

    def body(carry, t):
        return carry + 1, tree.pack((t * a, 0.0, t * b))

    _, ys = jax.lax.scan(body, 0, jnp.arange(3.0))
    assert ys.rows.shape == (3, 2, 4)
    step2 = jax.tree_util.tree_map(lambda v: v[2], ys).get()
    np.testing.assert_array_equal(step2[0], 2 * a)
    np.testing.assert_array_equal(step2[2], 2 * b)
    whole = tree.unpack(ys)
    np.testing.assert_array_equal(whole[2], jnp.arange(3.0)[:, None] * b)
    assert whole[1] == 0.0


@pytest.mark.parametrize("name", ["tree_mixed", "tree_mixed_float", "panda", "talos"])
def test_branch_pattern_holds_the_mass_matrix(name):
    """``tree.branch_pattern`` (the branch-induced sparsity the implicit step's solves use) is
    the mass matrix's: at random configurations every entry outside it is an exact zero."""
    from helpers import zoo

    from jaxdyn import tree

    m = jaxdyn.load_robot("talos") if name == "talos" else zoo(name)
    pattern = tree.branch_pattern(tuple(m.parents), m.joint_nv)
    if pattern is None:  # a random tree may come out a chain
        pytest.skip(f"{name}: a chain")
    assert sorted(pattern.order) == list(range(m.nv))
    mask = pattern.mask()
    crba = jax.jit(jax.vmap(lambda key: jaxdyn.crba(m, jaxdyn.random_configuration(m, key))))
    for M in np.asarray(crba(jax.random.split(jax.random.PRNGKey(3), 3))):
        assert np.all(M[~mask] == 0.0)


def test_branch_pattern_of_known_trees():
    """The quadruped's pattern is its free root around four legs; a chain has none; a pair of
    coupled bodies joins their blocks, a coupling to the world or the border does not."""
    from jaxdyn import tree

    solo = jaxdyn.load_robot("solo12")
    pattern = tree.branch_pattern(tuple(solo.parents), solo.joint_nv)
    assert pattern == jaxdyn.linalg.Bordered(tuple(range(6)), (tuple(tuple(range(s, s + 3)) for s in (6, 9, 12, 15)),))
    assert tree.branch_pattern((-1, 0, 1, 2), (6, 1, 1, 1)) is None  # a chain
    parents, nv = (-1, 0, 1, 0, 3, 0, 5), (6, 1, 1, 1, 1, 1, 1)  # three 2-link legs
    foot1, foot2 = 2, 4
    joined = tree.branch_pattern(parents, nv, ((foot1, foot2),))
    assert joined == jaxdyn.linalg.Bordered(tuple(range(6)), (((10, 11),), ((6, 7, 8, 9),)))
    assert tree.branch_pattern(parents, nv, ((-1, foot1), (0, foot2))) == tree.branch_pattern(parents, nv)
    assert tree.branch_pattern(parents, nv, ((foot1, foot2), (4, 6))) is None  # one block left
    # two chains from the world: block-diagonal, no border
    assert tree.branch_pattern((-1, 0, -1), (1, 1, 2)) == jaxdyn.linalg.Bordered((), (((0, 1), (2, 3)),))
