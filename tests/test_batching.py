"""jaxdyn.aba / rnea / crba under jax.vmap: the batch kernels through a custom_vmap rule.

Reference: ``vmap`` of the one-sample algorithms of :mod:`jaxdyn.algorithms` (no batching rule),
which tests/test_pinocchio_reference.py checks against Pinocchio. The batched computations run
under ``jax.jit``, the public function and its reference in one program (op-by-op dispatch of
these costs more than compiling them); the one-sample derivatives op by op, where the reference
reuses the primitives that the public function's derivatives compiled (cheaper than two
programs)."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import assert_close

import jaxdyn
from jaxdyn import builders, kernels, planner
from jaxdyn.algorithms import aba as aba_mod
from jaxdyn.algorithms import crba as crba_mod
from jaxdyn.algorithms import rnea as rnea_mod

B = 5
_MIN_BATCH = planner.CPU_KERNEL_MIN_BATCH


@pytest.fixture(autouse=True)
def _kernels_at_this_files_batch(monkeypatch):
    """Every choice of the rule but the batch size at this file's batch of 5 (the kernels pay
    back from ``planner.CPU_KERNEL_MIN_BATCH`` samples on a CPU:
    test_small_batches_run_vmap_on_a_cpu)."""
    monkeypatch.setattr(planner, "CPU_KERNEL_MIN_BATCH", 1)


@functools.cache
def _model(name):
    return {
        # 5 links: unrolled kernels; floating tree of 14 links: scanned kernels
        "chain": lambda: builders.chain(5, ("revolute", "prismatic"), seed=11),
        "tree_float": lambda: builders.random_tree(14, ("revolute", "prismatic"), floating_base=True, seed=12),
    }[name]()


def _batch(model, seed=0):
    k = jax.random.split(jax.random.PRNGKey(seed), 5)
    q = jax.vmap(lambda kk: jaxdyn.random_configuration(model, kk))(jax.random.split(k[0], B))
    qd, qdd, tau = (jax.random.normal(kk, (B, model.nv), model.dtype) for kk in k[1:4])
    f = jax.random.normal(k[4], (B, model.nb, 6), model.dtype)
    return q, qd, qdd, tau, f


class _Spy:
    """Counts calls of a batch kernel (the rule looks the kernel up by name at trace time)."""

    def __init__(self, monkeypatch, name):
        self.calls = 0
        fn = getattr(kernels, name)

        def wrapped(*a, **k):
            self.calls += 1
            return fn(*a, **k)

        monkeypatch.setattr(kernels, name, wrapped)


def _three(aba, rnea, crba):
    """``vmap`` over the state of ``aba`` (at ``tau``), ``rnea`` (at ``qdd``) and ``crba``."""
    ax = (None, 0, 0, 0, 0)
    return lambda m, q, qd, qdd, tau, f: (
        jax.vmap(aba, in_axes=ax)(m, q, qd, tau, f),
        jax.vmap(rnea, in_axes=ax)(m, q, qd, qdd, f),
        jax.vmap(crba, in_axes=ax[:2])(m, q),
    )


# the references: vmap of the one-sample algorithms (module level: compiled once per model)
_reference = jax.jit(_three(aba_mod.aba, rnea_mod.rnea, crba_mod.crba))


@pytest.mark.parametrize("name", ["chain", "tree_float"])
def test_vmap_runs_the_batch_kernels_and_equals_the_algorithms(name, monkeypatch):
    model = _model(name)
    q, qd, qdd, tau, f = _batch(model)
    spies = {k: _Spy(monkeypatch, k) for k in ("aba_batch", "rnea_batch", "crba_batch")}
    got = jax.jit(_three(jaxdyn.aba, jaxdyn.rnea, jaxdyn.crba))(model, q, qd, qdd, tau, f)  # traced here
    for a, b in zip(got, _reference(model, q, qd, qdd, tau, f)):
        assert_close(a, b)
    # the CRBA kernel on GPUs only (on a CPU vmap of the one-sample CRBA is faster)
    calls = {"aba_batch": 1, "rnea_batch": 1, "crba_batch": int(jax.default_backend() != "cpu")}
    assert {k: s.calls for k, s in spies.items()} == calls
    # one sample: the algorithms themselves, no kernel
    one = jax.jit(lambda *a: [jaxdyn.aba(*a), aba_mod.aba(*a)])(model, q[0], qd[0], tau[0])
    assert_close(*one)
    assert {k: s.calls for k, s in spies.items()} == calls


def test_small_batches_run_vmap_on_a_cpu(monkeypatch):
    """On a CPU a batch under ``planner.CPU_KERNEL_MIN_BATCH`` samples runs vmap of the
    one-sample algorithm, a larger one the kernel; the override (``jaxdyn.executor``) decides
    whatever the size, and is part of jit's cache key (one jitted function, traced again)."""
    monkeypatch.setattr(planner, "CPU_KERNEL_MIN_BATCH", _MIN_BATCH)
    monkeypatch.setattr(jax, "default_backend", lambda: "cpu")
    spy = _Spy(monkeypatch, "aba_batch")
    model = _model("chain")
    f = jax.vmap(jaxdyn.aba, in_axes=(None, 0, 0, 0))
    small, large = (jnp.zeros((n, model.nv), model.dtype) for n in (_MIN_BATCH - 1, _MIN_BATCH))
    jax.make_jaxpr(f)(model, small, small, small)
    assert spy.calls == 0
    jax.make_jaxpr(f)(model, large, large, large)
    assert spy.calls == 1
    with jaxdyn.executor(batch="kernel"):
        jax.make_jaxpr(f)(model, small, small, small)
    assert spy.calls == 2
    with jaxdyn.executor(batch="vmap"):
        jax.make_jaxpr(f)(model, large, large, large)
    assert spy.calls == 2
    g = jax.jit(lambda *a: f(*a))  # a function not traced yet
    g(model, large, large, large)
    assert spy.calls == 3
    with jaxdyn.executor(batch="vmap"):
        g(model, large, large, large)  # a cache miss: traced again, by vmap
    assert spy.calls == 3
    g(model, large, large, large)  # the first trace, from the cache
    assert spy.calls == 3


def test_the_contact_step_takes_its_own_threshold(monkeypatch):
    """Inside the implicit contact step (``planner.site("contact_step")``, entered by
    ``sim.step`` around its velocity solve) a CPU batch takes the kernels from
    ``planner.CPU_STEP_KERNEL_MIN_BATCH`` samples (by default never: ``None``); outside it the
    general threshold holds (1 in this file); a contact step traced at 64 envs runs no kernel,
    unless the override asks."""
    from jaxdyn import contact, sim

    monkeypatch.setattr(jax, "default_backend", lambda: "cpu")
    spy = _Spy(monkeypatch, "rnea_batch")
    model = _model("chain")
    assert planner.CPU_STEP_KERNEL_MIN_BATCH is None
    with planner.site("contact_step"):
        jax.make_jaxpr(lambda *a: jax.vmap(jaxdyn.rnea, in_axes=(None, 0, 0, 0))(*a))(
            model, *(jnp.zeros((4096, model.nv), model.dtype),) * 3
        )
    assert spy.calls == 0
    n = 256
    monkeypatch.setattr(planner, "CPU_STEP_KERNEL_MIN_BATCH", n)
    small, large = (jnp.zeros((k, model.nv), model.dtype) for k in (n - 1, n))

    def trace(x):  # a new function each time: no trace is reused
        jax.make_jaxpr(lambda *a: jax.vmap(jaxdyn.rnea, in_axes=(None, 0, 0, 0))(*a))(model, x, x, x)

    with planner.site("contact_step"):
        trace(small)
        assert spy.calls == 0
        trace(large)
        assert spy.calls == 1
    trace(small)
    assert spy.calls == 2
    ball = jaxdyn.load_mjcf(
        '<mujoco><worldbody><geom type="plane" size="1 1 0.1"/><body pos="0 0 0.1"><freejoint/>'
        '<geom type="sphere" size="0.1" mass="1"/></body></worldbody></mujoco>'
    )
    con = contact.Contact(ground=contact.Ground.from_model(ball))
    x = jnp.tile(jaxdyn.configuration.neutral(ball), (64, 1))
    v = jnp.zeros((64, ball.nv), ball.dtype)
    step = jax.vmap(lambda q, qd: sim.step(ball, q, qd, jnp.zeros_like(qd), 1e-3, contact=con)[:2])
    jax.make_jaxpr(step)(x, v)
    assert spy.calls == 2
    with jaxdyn.executor(batch="kernel"):
        jax.make_jaxpr(step)(x, v)
    assert spy.calls == 3


def test_unbatched_arguments_are_broadcast():
    model = _model("chain")
    q, qd, _, tau, _ = _batch(model, 1)
    got = jax.vmap(jaxdyn.aba, in_axes=(None, 0, None, 0))(model, q, qd[0], tau)
    assert_close(got, jax.vmap(aba_mod.aba, in_axes=(None, 0, None, 0))(model, q, qd[0], tau))
    got = jax.vmap(jaxdyn.aba, in_axes=(None, None, None, 1), out_axes=1)(model, q[0], qd[0], tau.T)
    assert_close(got, jax.vmap(aba_mod.aba, in_axes=(None, None, None, 0))(model, q[0], qd[0], tau).T)


def test_batched_models_fall_back_and_spherical_joints_run_the_kernel(monkeypatch):
    spy = _Spy(monkeypatch, "aba_batch")
    model = _model("chain")
    q, qd, _, tau, _ = _batch(model, 2)
    masses = model.mass[None] * jnp.linspace(0.5, 2.0, B)[:, None]
    models = jax.vmap(lambda m: model.replace(mass=m))(masses)
    axes = (jax.tree_util.tree_map(lambda _: 0, models), 0, 0, 0)
    got, ref = jax.jit(lambda *a: [jax.vmap(fn, in_axes=axes)(*a) for fn in (jaxdyn.aba, aba_mod.aba)])(
        models, q, qd, tau
    )
    assert_close(got, ref)
    assert spy.calls == 0  # a batched model: vmap of the one-sample algorithm
    sph = builders.chain(4, ("revolute", "spherical"), seed=13)
    qs, qds, _, taus, _ = _batch(sph, 3)
    ax = (None, 0, 0, 0)
    got, ref = jax.jit(lambda *a: [jax.vmap(fn, in_axes=ax)(*a) for fn in (jaxdyn.aba, aba_mod.aba)])(
        sph, qs, qds, taus
    )
    assert_close(got, ref)
    assert spy.calls == 1  # spherical joints, unrolled: the batch kernel
    with jaxdyn.executor(traversal="scan"):
        got, ref = jax.jit(lambda *a: [jax.vmap(fn, in_axes=ax)(*a) for fn in (jaxdyn.aba, aba_mod.aba)])(
            sph, qs, qds, taus
        )
    assert_close(got, ref)
    assert spy.calls == 1  # spherical joints, scanned (padded dof slots, measured slower): vmap


def test_unbatched_derivatives_of_every_order():
    """One sample, not batched: reverse mode, forward mode and second order pass through the
    public functions (a custom_vmap alone cannot be transposed) and equal the algorithms'."""
    # a free root, a revolute and a prismatic joint (the compile time grows with the links)
    model = builders.chain(2, ("revolute", "prismatic"), floating_base=True, seed=15)
    q, qd, qdd, tau, f = (x[0] for x in _batch(model, 6))
    dq = jnp.linspace(-1.0, 1.0, q.shape[0])
    for fast, ref, x in ((jaxdyn.aba, aba_mod.aba, tau), (jaxdyn.rnea, rnea_mod.rnea, qdd)):
        loss = lambda fn: lambda m, q, qd, x, f: jnp.sum(jnp.sin(fn(m, q, qd, x, f)))  # noqa: E731
        g = jax.grad(loss(fast), argnums=(0, 1, 2, 3, 4))(model, q, qd, x, f)
        r = jax.grad(loss(ref), argnums=(0, 1, 2, 3, 4))(model, q, qd, x, f)
        for a, b in zip(jax.tree_util.tree_leaves(g), jax.tree_util.tree_leaves(r)):
            assert_close(a, b, 1e-12)
        # second order along one dense direction (forward over reverse; the whole Hessian of the
        # public ABA, vmapped over directions: tests/test_aba_derivatives.py)
        hvp = lambda fn: jax.jvp(lambda q_: jax.grad(loss(fn), argnums=1)(model, q_, qd, x, f), (q,), (dq,))[1]  # noqa: E731
        assert_close(hvp(fast), hvp(ref), 1e-12)
    g = jax.grad(lambda m: jnp.sum(jaxdyn.crba(m, q) ** 2))(model)
    assert_close(g.inertia, jax.grad(lambda m: jnp.sum(crba_mod.crba(m, q) ** 2))(model).inertia, 1e-12)


def _loss(fn, m, q, qd, tau):
    return jnp.sum(jnp.sin(jax.vmap(fn, in_axes=(None, 0, 0, 0))(m, q, qd, tau)))


@jax.jit
def _rule_derivatives(model, q, qd, qdd, tau):
    """Through the rule (the public functions) and through the algorithms: the gradients of a
    batched loss of ABA and RNEA w.r.t. (model, q, qd, x), the batched ABA Jacobian, and the
    gradient of a batched loss of CRBA w.r.t. the model."""
    out = []
    for fns, x in (((jaxdyn.aba, aba_mod.aba), tau), ((jaxdyn.rnea, rnea_mod.rnea), qdd)):
        out.append([jax.grad(_loss, argnums=(1, 2, 3, 4))(fn, model, q, qd, x) for fn in fns])
    jac = [
        jax.vmap(jax.jacfwd(fn, argnums=(1, 2, 3)), in_axes=(None, 0, 0, 0))(model, q, qd, tau)
        for fn in (jaxdyn.aba, aba_mod.aba)
    ]
    crba = [
        jax.grad(lambda m: jnp.sum(jax.vmap(fn, in_axes=(None, 0))(m, q) ** 2))(model)
        for fn in (jaxdyn.crba, crba_mod.crba)
    ]
    return out, jac, crba


def test_derivatives_through_the_rule():
    """Reverse mode (w.r.t. state and model parameters) and forward mode under vmap equal the
    algorithms' derivatives (the public functions differentiate the algorithms, ABA by implicit
    differentiation). The kernels' own derivatives: tests/test_kernels.py."""
    # a free root, a revolute and a prismatic joint (the compile time grows with the links)
    model = builders.chain(2, ("revolute", "prismatic"), floating_base=True, seed=14)
    q, qd, qdd, tau, _ = _batch(model, 4)
    grads, (jac, ref), (gm, gr) = _rule_derivatives(model, q, qd, qdd, tau)

    u = model.axis
    for g_fast, g_ref in grads:
        # joint axes are unit vectors: the two recursions agree on the sphere's tangent space
        # (the kernels' Rodrigues split assumes |u| = 1, so radial derivatives differ)
        # and placements are rotations: compare the so(3) part R^T G - G^T R
        tangent = lambda g: g - jnp.sum(g * u, -1, keepdims=True) * u  # noqa: E731
        R = model.placement_R
        so3 = lambda G: jnp.einsum("bji,bjk->bik", R, G) - jnp.einsum("bji,bjk->bik", G, R)  # noqa: E731
        g_fast = (g_fast[0].replace(axis=tangent(g_fast[0].axis), placement_R=so3(g_fast[0].placement_R)), *g_fast[1:])
        g_ref = (g_ref[0].replace(axis=tangent(g_ref[0].axis), placement_R=so3(g_ref[0].placement_R)), *g_ref[1:])
        for a, b in zip(jax.tree_util.tree_leaves(g_fast), jax.tree_util.tree_leaves(g_ref)):
            assert_close(a, b, 1e-8)
    for a, b in zip(jac, ref):
        assert_close(a, b, 1e-8)
    assert_close(gm.mass, gr.mass, 1e-8)
    assert_close(gm.inertia, gr.inertia, 1e-8)


def test_float32_batch_close_to_float64():
    m64 = _model("tree_float")
    m32 = m64.astype(jnp.float32)
    q, qd, qdd, tau, f = _batch(m64, 5)
    # the reference program of test_vmap_runs_the_batch_kernels_and_equals_the_algorithms, no wrenches
    ref = np.asarray(_reference(m64, q, qd, qdd, tau, jnp.zeros_like(f))[0])
    got = np.asarray(
        jax.jit(jax.vmap(jaxdyn.aba, in_axes=(None, 0, 0, 0)))(
            m32, q.astype(jnp.float32), qd.astype(jnp.float32), tau.astype(jnp.float32)
        )
    )
    assert got.dtype == np.float32
    scale = np.max(np.abs(ref))
    assert np.max(np.abs(got - ref)) < 1e-4 * scale
