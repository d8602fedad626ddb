"""jit, vmap (over states and over models), grad/jacfwd/jacrev (check_grads), float32."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import aba, assert_close, crba, rnea, state, zoo
from jax.test_util import check_grads

import jaxdyn
from jaxdyn import builders


def test_vmap_over_states_equals_loop():
    model = zoo("tree_mixed_float")
    keys = jax.random.split(jax.random.PRNGKey(0), 5)
    qs = jax.vmap(lambda k: jaxdyn.random_configuration(model, k))(keys)
    qd = jax.random.normal(keys[0], (5, model.nv))
    tau = jax.random.normal(keys[1], (5, model.nv))
    batched = jax.jit(jax.vmap(jaxdyn.aba, in_axes=(None, 0, 0, 0)))(model, qs, qd, tau)
    for i in range(5):
        assert_close(batched[i], aba(model, qs[i], qd[i], tau[i]), 1e-12)
    Mb = jax.jit(jax.vmap(jaxdyn.crba, in_axes=(None, 0)))(model, qs)
    assert_close(Mb[3], crba(model, qs[3]), 1e-12)


def test_vmap_over_models():
    """A batch of models with different masses: vmap over the Model pytree."""
    base = zoo("chain_mixed")
    scales = jnp.array([0.5, 1.0, 2.0])
    models = jax.vmap(lambda s: base.replace(mass=base.mass * s))(scales)
    q, qd, qdd, _ = state(base)
    taus = jax.jit(jax.vmap(jaxdyn.rnea, in_axes=(0, None, None, None)))(models, q, qd, qdd)
    for i, _s in enumerate(scales):
        mi = jax.tree_util.tree_map(lambda x: x[i] if isinstance(x, jax.Array) else x, models)
        assert_close(taus[i], rnea(mi, q, qd, qdd), 1e-12)
    assert not np.allclose(taus[0], taus[2])


def fd_check(f, args, eps=1e-6, rtol=1e-6):
    """jacfwd and jacrev of f (jitted) against central finite differences, every argument."""
    jf = jax.jit(jax.jacfwd(f, argnums=tuple(range(len(args)))))(*args)
    jr = jax.jit(jax.jacrev(f, argnums=tuple(range(len(args)))))(*args)
    fj = jax.jit(f)
    for i, x in enumerate(args):
        flat = np.asarray(x).ravel()
        cols = []
        for j in range(flat.size):
            d = np.zeros_like(flat)
            d[j] = eps
            xp = [jnp.asarray(a) for a in args]
            xm = list(xp)
            xp[i] = jnp.asarray((flat + d).reshape(np.shape(x)))
            xm[i] = jnp.asarray((flat - d).reshape(np.shape(x)))
            cols.append((np.asarray(fj(*xp)) - np.asarray(fj(*xm))) / (2 * eps))
        num = np.stack(cols, -1).reshape(np.shape(jf[i]))
        assert_close(jf[i], num, rtol)
        assert_close(jr[i], jf[i], 1e-10)


def test_grads_wrt_state():
    """check_grads (fwd and rev) for RNEA; jacfwd == jacrev == finite differences for the rest.
    A floating chain with revolute, prismatic and spherical joints covers every joint type."""
    model = builders.chain(3, ("revolute", "prismatic", "spherical"), floating_base=True, seed=9)
    q, qd, qdd, tau = state(model)
    check_grads(jax.jit(lambda q_, v_, a_: jaxdyn.rnea(model, q_, v_, a_)), (q, qd, qdd), order=1, modes=("fwd", "rev"))
    fd_check(lambda q_, v_, t_: jaxdyn.aba(model, q_, v_, t_), (q, qd, tau))
    fd_check(lambda q_: jaxdyn.crba(model, q_), (q,))
    fd_check(lambda q_, v_: jaxdyn.kinetic_energy(model, q_, v_) + jaxdyn.potential_energy(model, q_), (q, qd))
    frame = model.frame_names[-1]
    fd_check(lambda q_: jaxdyn.frame_jacobian(model, q_, frame, "local_world_aligned"), (q,))
    fd_check(
        lambda q_, v_: jnp.concatenate([jaxdyn.center_of_mass(model, q_), jaxdyn.momentum(model, q_, v_)]), (q, qd)
    )


def test_grad_wrt_model_parameters():
    """d tau / d (mass, com, inertia, placements): jacfwd == jacrev == finite differences."""
    model = builders.random_tree(4, ("revolute", "prismatic", "spherical"), floating_base=True, seed=10)
    q, qd, qdd, tau = state(model)

    def f(mass, com, inertia, pp):
        m = model.replace(mass=mass, com=com, inertia=inertia, placement_p=pp)
        return jnp.concatenate([jaxdyn.rnea(m, q, qd, qdd), jaxdyn.aba(m, q, qd, tau)])

    args = (model.mass, model.com, model.inertia, model.placement_p)
    fd_check(f, args)
    # rnea is linear in the inertial parameters: tau(2 * params) = 2 * tau(params)
    r = jax.jit(lambda m, I: f(m, model.com, I, model.placement_p)[: model.nv])
    assert_close(r(2 * model.mass, 2 * model.inertia), 2 * r(model.mass, model.inertia), 1e-10)


@pytest.mark.parametrize("name", ["panda", "solo12", "tree_mixed_float"])
def test_float32_matches_float64(name):
    m64 = zoo(name)
    m32 = m64.astype(jnp.float32)
    assert m32.dtype == jnp.float32
    worst = {}
    for seed in range(3):
        q, qd, qdd, tau = state(m64, seed)
        c = lambda x: x.astype(jnp.float32)
        for fn, args in (("rnea", (q, qd, qdd)), ("aba", (q, qd, tau)), ("crba", (q,))):
            f = jax.jit(getattr(jaxdyn, fn))
            r64 = np.asarray(f(m64, *args))
            r32 = f(m32, *map(c, args))
            assert r32.dtype == jnp.float32
            err = np.max(np.abs(np.asarray(r32, np.float64) - r64)) / max(1.0, np.max(np.abs(r64)))
            worst[fn] = max(worst.get(fn, 0.0), err)
    assert all(e < 1e-4 for e in worst.values()), worst


def test_library_leaves_global_config_alone():
    import subprocess
    import sys

    code = "import jax, jaxdyn; m = jaxdyn.load_robot('ur5'); print(jax.config.jax_enable_x64, m.dtype)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "float32"]


def test_dense_transforms_equal_compact_ones():
    """spatial.force_matrix F (the 6x6 form of the "latency" traversal) and its transpose equal
    the compact force and motion transforms, and F M F^T equals matrix_inertia_to_parent."""
    from jaxdyn import spatial

    rng = np.random.default_rng(0)
    R = np.linalg.qr(rng.normal(size=(3, 3)))[0]
    X = spatial.Pose(jnp.asarray(R), jnp.asarray(rng.normal(size=3)))
    m, f = jnp.asarray(rng.normal(size=6)), jnp.asarray(rng.normal(size=6))
    A = rng.normal(size=(6, 6))
    M = jnp.asarray(A + A.T)
    F = spatial.force_matrix(X)  # float32 unless x64 is on: tolerance for both
    assert_close(F @ f, spatial.force_to_parent(X, f), 1e-5)
    assert_close(F.T @ m, spatial.motion_to_child(X, m), 1e-5)
    assert_close(spatial.matrix_inertia_to_parent_dense(F, M), spatial.matrix_inertia_to_parent(X, M), 1e-5)
    assert not np.allclose(np.asarray(F), np.eye(6))  # a non-trivial transform
