"""SoA batched kernels (jaxdyn.kernels) against the generic per-sample algorithms under vmap.

Compile time dominates (the SoA programs are unrolled over links), so the models are small, each
(model, kernel) pair is compiled once, and the references are module-level jitted programs that
the tests share (``jit`` caches on the model's static structure and the shapes; the arrays are
dynamic).
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxdyn
from jaxdyn import algorithms, builders, kernels


def _state(model, B, seed=0):
    k = jax.random.split(jax.random.PRNGKey(seed), 4)
    q = jax.vmap(lambda kk: jaxdyn.random_configuration(model, kk))(jax.random.split(k[0], B))
    qd = jax.random.normal(k[1], (B, model.nv), model.dtype)
    x = jax.random.normal(k[2], (B, model.nv), model.dtype)
    fe = jax.random.normal(k[3], (B, model.nb, 6), model.dtype)
    return q, qd, x, fe


# The references: vmap of the one-sample algorithms, each one compiled program per model.
_ref_aba = jax.jit(jax.vmap(algorithms.aba.aba, (None, 0, 0, 0, 0)))
_ref_rnea = jax.jit(jax.vmap(algorithms.rnea.rnea, (None, 0, 0, 0, 0)))
_ref_crba = jax.jit(jax.vmap(algorithms.crba.crba, (None, 0)))
_ref_jac = jax.jit(jax.vmap(jax.jacfwd(algorithms.aba.aba, argnums=(1, 2, 3)), (None, 0, 0, 0)))


@functools.partial(jax.jit, static_argnames=("traversal", "_pack"))
def _soa(model, q, qd, tau, fe, *, traversal, _pack=None):
    """The SoA ABA, the SoA RNEA at its output (``rnea(aba(tau))``) and the SoA mass matrix."""
    kw = dict(traversal=traversal, _pack=_pack)
    qdd = kernels.aba_batch(model, q, qd, tau, fe, **kw)
    return qdd, kernels.rnea_batch(model, q, qd, qdd, fe, **kw), kernels.crba_batch(model, q, **kw)


@pytest.fixture(scope="module")
def tree():
    """Floating base over a random tree of revolute and prismatic joints, with armature."""
    m = builders.random_tree(4, ("revolute", "prismatic"), floating_base=True, seed=3, dtype=jnp.float64)
    assert {"revolute", "prismatic", "free"} <= set(m.joint_types)
    return m.replace(armature=jnp.linspace(0.05, 0.4, m.nv))


def _check_aba_rnea(model, traversal, seed=0, **kw):
    """SoA ABA and RNEA against the generic path in float64, and rnea(aba(tau)) == tau."""
    q, qd, tau, fe = _state(model, 5, seed)
    out, tau_back, M = _soa(model, q, qd, tau, fe, traversal=traversal, **kw)
    np.testing.assert_allclose(out, _ref_aba(model, q, qd, tau, fe), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(tau_back, _ref_rnea(model, q, qd, out, fe), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(tau_back, tau, rtol=1e-9, atol=1e-9)  # rnea(aba(tau)) == tau
    return q, M


@pytest.mark.parametrize("traversal", ["unroll", "scan"])
def test_aba_rnea_match_generic_float64(tree, traversal):
    _check_aba_rnea(tree, traversal)


@pytest.mark.parametrize("traversal", ["unroll", "scan"])
def test_float32_and_single_sample(traversal):
    """float32 (a 4-link arm with a prismatic joint: cheap to compile) and a single (nq,) sample."""
    m = builders.chain(4, ("revolute", "revolute", "prismatic", "revolute"), seed=5, dtype=jnp.float32)
    q, qd, tau, _ = _state(m, 7, seed=1)
    f = jax.jit(lambda m, *x: [kernels.aba_batch(m, *a, traversal=traversal) for a in (x, [y[0] for y in x])])
    out, one = f(m, q, qd, tau)  # the batch, and its first sample alone: (nq,) -> (nv,)
    assert out.dtype == jnp.float32 and out.shape == (7, m.nv)
    m64 = m.astype(jnp.float64)
    ref = _ref_aba(m64, q.astype(jnp.float64), qd.astype(jnp.float64), tau.astype(jnp.float64), None)
    scale = np.max(np.abs(ref), axis=1, keepdims=True)
    assert np.max(np.abs(np.asarray(out, np.float64) - ref) / scale) < 1e-4
    assert one.shape == (m.nv,)
    np.testing.assert_allclose(one, out[0], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("traversal", ["unroll", "scan"])
def test_crba_matches_generic_float64(tree, traversal):
    q, qd, tau, fe = _state(tree, 5)
    ref = _ref_crba(tree, q)
    _, _, M = _soa(tree, q, qd, tau, fe, traversal=traversal)  # the program of the ABA/RNEA test
    np.testing.assert_allclose(M, ref, rtol=1e-11, atol=1e-11)
    if traversal == "scan":  # one (nq,) sample in, one (nv, nv) matrix out
        one = jax.jit(functools.partial(kernels.crba_batch, traversal="scan"))(tree, q[0])
        np.testing.assert_allclose(one, ref[0], rtol=1e-11, atol=1e-11)


def test_packed_scan_outputs_match_generic(tree, monkeypatch):
    """The scanned sweeps with their per-link outputs stacked into one array per step
    (``tree.Packed``: the GPU default, forced here on CPU) give the generic path's numbers."""
    packed = []
    pack = jaxdyn.tree.pack
    monkeypatch.setattr(jaxdyn.tree, "pack", lambda out: packed.append(1) or pack(out))
    q, M = _check_aba_rnea(tree, "scan", seed=2, _pack=True)
    assert packed  # the scans did hand their outputs back packed
    np.testing.assert_allclose(M, _ref_crba(tree, q), rtol=1e-11, atol=1e-11)


def test_packing_default_per_backend_and_algorithm(monkeypatch):
    """Packed scan outputs by default for the ABA and CRBA on a GPU backend only; never for the
    RNEA (measured slower packed on a long chain); ``_pack`` overrides."""
    from jaxdyn.kernels import soa_common

    assert not any(soa_common.pack_outputs(None, a) for a in ("aba", "rnea", "crba"))  # this CPU
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
    assert [soa_common.pack_outputs(None, a) for a in ("aba", "rnea", "crba")] == [True, False, True]
    assert soa_common.pack_outputs(True, "rnea") and not soa_common.pack_outputs(False, "aba")


def test_chunked_batches_equal_whole(tree):
    """``chunk``: the batch in pieces (lax.map, the last one padded) gives the same numbers."""
    q, qd, tau, fe = _state(tree, 5)
    f = jax.jit(
        lambda m, q, qd, tau, fe: (
            kernels.aba_batch(m, q, qd, tau, fe, traversal="scan", chunk=2),
            kernels.crba_batch(m, q, traversal="scan", chunk=2),
        )
    )
    whole = _soa(tree, q, qd, tau, fe, traversal="scan")  # chunk "auto": 5 samples in one piece
    for a, b in zip(f(tree, q, qd, tau, fe), (whole[0], whole[2])):
        np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-13)
    with pytest.raises(ValueError, match="aba_batch: argument 'chunk'"):
        kernels.aba_batch(tree, q, qd, tau, chunk=0)


def test_aba_jacobian_batch_matches_jacfwd(tree):
    """Unchunked and in chunks of 2 (3 samples: one padded piece), against vmap(jacfwd(aba))."""
    q, qd, tau, _ = _state(tree, 3)
    R = _ref_jac(tree, q, qd, tau)
    for chunk in (None, 2):
        f = functools.partial(kernels.aba_jacobian_batch, traversal="scan", chunk=chunk)
        J = jax.jit(f, compiler_options=kernels.COMPILER_OPTIONS)(tree, q, qd, tau)
        for a, b in zip(J, R):
            assert a.shape == b.shape
            np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-9 * float(jnp.max(jnp.abs(b))))
    with pytest.raises(ValueError, match="batched inputs"):
        kernels.aba_jacobian_batch(tree, q[0], qd[0], tau[0])
    with pytest.raises(ValueError, match="'chunk' must be"):
        kernels.aba_jacobian_batch(tree, q, qd, tau, chunk=0)


@functools.cache
def _small():
    """A free root and two links (a revolute, a prismatic joint): the cheapest floating model."""
    return builders.chain(2, ("revolute", "prismatic"), floating_base=True, seed=2, dtype=jnp.float64)


@functools.partial(jax.jit, static_argnames="traversal")
def _grads(model, q, qd, tau, w, traversal=None):
    """d/d(model, q) of a weighted sum of ``sin(qdd)`` and of a weighted sum of ``M``: through the
    SoA kernels with ``traversal``, through vmap of the generic algorithms with None."""
    if traversal is None:
        aba = lambda m, q: jax.vmap(algorithms.aba.aba, (None, 0, 0, 0))(m, q, qd, tau)  # noqa: E731
        crba = jax.vmap(algorithms.crba.crba, (None, 0))
    else:
        aba = lambda m, q: kernels.aba_batch(m, q, qd, tau, traversal=traversal)  # noqa: E731
        crba = functools.partial(kernels.crba_batch, traversal=traversal)
    g = jax.grad(lambda m, q: jnp.sum(jnp.sin(aba(m, q)) * w), argnums=(0, 1))(model, q)
    gm = jax.grad(lambda m, q: jnp.sum(crba(m, q) * jnp.outer(w, w)), argnums=(0, 1))(model, q)
    return g, gm


@pytest.mark.parametrize("traversal", ["unroll", "scan"])
def test_grad_wrt_q_and_mass_matches_generic(traversal):
    m = _small()
    q, qd, tau, _ = _state(m, 3, seed=2)
    w = jnp.linspace(-1.0, 1.0, m.nv)
    g, gm = _grads(m, q, qd, tau, w, traversal=traversal)
    r, rm = _grads(m, q, qd, tau, w)  # the same program for both traversals
    np.testing.assert_allclose(g[1], r[1], rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(g[0].mass, r[0].mass, rtol=1e-8, atol=1e-8)
    assert np.all(np.isfinite(g[0].inertia)) and np.max(np.abs(g[0].mass)) > 0
    # the mass matrix too: d/d(q, inertia) of a weighted sum of M
    np.testing.assert_allclose(gm[1], rm[1], rtol=1e-8, atol=1e-8)
    # the generic path reads the full 3x3 inertia, the SoA path its symmetric part: equal
    # directional derivatives along symmetric perturbations, i.e. equal symmetrised gradients
    sym = lambda a: 0.5 * (a + jnp.swapaxes(a, -1, -2))  # noqa: E731
    np.testing.assert_allclose(sym(gm[0].inertia), sym(rm[0].inertia), rtol=1e-8, atol=1e-8)


@pytest.fixture(scope="module")
def sph_tree():
    """Floating base over a random tree with revolute, prismatic and spherical joints, with
    armature: the scanned kernels give every link three dof slots."""
    m = builders.random_tree(4, ("revolute", "prismatic", "spherical"), floating_base=True, seed=8, dtype=jnp.float64)
    assert {"revolute", "prismatic", "spherical", "free"} <= set(m.joint_types)
    return m.replace(armature=jnp.linspace(0.05, 0.4, m.nv))


@pytest.mark.parametrize("traversal", ["unroll", "scan"])
def test_spherical_joints_match_generic_float64(sph_tree, traversal):
    """ABA, RNEA (rnea(aba(tau)) == tau) and CRBA with spherical joints: the 3x3 ``D`` of the
    spherical links, and in the scanned form the padded dof slots of the 1-dof links."""
    q, M = _check_aba_rnea(sph_tree, traversal, seed=3)
    np.testing.assert_allclose(M, _ref_crba(sph_tree, q), rtol=1e-11, atol=1e-11)


def test_spherical_joints_float32_and_jacobian():
    """float32 (scanned, against float64) and the Jacobian kernel (forward mode through both SoA
    kernels, called outside a trace: it compiles itself with kernels.COMPILER_OPTIONS on a CPU)
    against vmap(jacfwd(aba)), on a chain with a spherical joint in the middle."""
    m = builders.chain(3, ("revolute", "spherical", "prismatic"), seed=2, dtype=jnp.float64)
    q, qd, tau, _ = _state(m, 3, seed=4)
    J = kernels.aba_jacobian_batch(m, q, qd, tau, traversal="scan")  # compiled with its own options
    for a, b in zip(J, _ref_jac(m, q, qd, tau)):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-9 * float(jnp.max(jnp.abs(b))))
    m32, x32 = m.astype(jnp.float32), [x.astype(jnp.float32) for x in (q, qd, tau)]
    out = jax.jit(functools.partial(kernels.aba_batch, traversal="scan"))(m32, *x32)
    ref = _ref_aba(m, q, qd, tau, None)
    assert out.dtype == jnp.float32
    assert np.max(np.abs(np.asarray(out, np.float64) - ref)) < 1e-4 * np.max(np.abs(ref))


def test_bad_input():
    from jaxdyn.kernels import pallas

    sph = builders.chain(2, ("revolute", "spherical"), seed=0, dtype=jnp.float64)
    for traversal in ("unroll", "scan"):  # the fused kernels take 1-dof joints and a free root
        with pytest.raises(ValueError, match="joint1.*spherical.*fused kernels.*jaxdyn.aba with jax.vmap"):
            pallas.aba_pallas(sph, traversal=traversal)
    m = builders.chain(2, "revolute", seed=0, dtype=jnp.float64)
    q, qd, tau, fe = _state(m, 3)
    with pytest.raises(ValueError, match="'q' has shape"):
        kernels.aba_batch(m, q[:, :1], qd, tau)
    with pytest.raises(ValueError, match="'tau' has batch size 2"):
        kernels.aba_batch(m, q, qd, tau[:2])
    with pytest.raises(ValueError, match="'f_ext' has shape"):
        kernels.rnea_batch(m, q, qd, tau, fe[:, :, :3])
    with pytest.raises(ValueError, match="mix of batched and single"):
        kernels.aba_batch(m, q[0], qd, tau)


def test_traversal_choice():
    """'auto' unrolls small models and scans large ones; the override's traversal is honoured
    (its single-sample "latency" form is the kernels' "unroll"), a kernel's own argument first;
    an unknown name is an error naming the choices."""
    small = builders.chain(3, "revolute", seed=0, dtype=jnp.float64)
    big = builders.chain(jaxdyn.planner.SOA_UNROLL_MAX_LINKS + 1, "revolute", seed=0, dtype=jnp.float64)
    kt = jaxdyn.planner.kernel_traversal
    assert kt(small) == "unroll"
    assert kt(big) == "scan"
    for t in ("unroll", "latency"):
        with jaxdyn.executor(traversal=t):
            assert kt(big) == "unroll" and kt(small, "scan") == "scan"
    assert kt(big, "unroll") == "unroll"
    q, qd, tau, _ = _state(small, 2)
    with pytest.raises(ValueError, match="unknown traversal 'fast'.*scan"):
        kernels.aba_batch(small, q, qd, tau, traversal="fast")


def _through_kernels(m, q, qd, tau, qdd):
    """The kernels with the planner's traversal, directly and through the batching rule of
    ``jaxdyn.aba`` / ``rnea`` / ``crba`` under ``vmap`` (sent to the kernels whatever the batch
    size), and the kernels' ABA Jacobian."""
    ax = (None, 0, 0, 0)
    return (
        (kernels.aba_batch(m, q, qd, tau), kernels.rnea_batch(m, q, qd, qdd), kernels.crba_batch(m, q)),
        (
            jax.vmap(jaxdyn.aba, ax)(m, q, qd, tau),
            jax.vmap(jaxdyn.rnea, ax)(m, q, qd, qdd),
            jax.vmap(jaxdyn.crba, ax[:2])(m, q),
        ),
        kernels.aba_jacobian_batch(m, q, qd, tau),
    )


@pytest.mark.parametrize("traversal", ["auto", "scan", "unroll", "latency"])
def test_every_model_traversal_runs_the_kernels(traversal):
    """Each traversal of the override (``jaxdyn.executor``) is accepted by the batch
    kernels, directly and through the batching rule of ``jaxdyn.aba`` / ``rnea`` / ``crba``
    under ``vmap``; same numbers as the one-sample algorithms. The unrolled kernels run op by op
    (after the first traversal every primitive is compiled), the scanned ones under ``jit``
    (cheaper than dispatching their scans op by op)."""
    m = _small()
    q, qd, tau, _ = _state(m, 3, seed=4)
    ref_qdd = _ref_aba(_small(), q, qd, tau, None)
    ref = (ref_qdd, _ref_rnea(_small(), q, qd, ref_qdd, None), _ref_crba(_small(), q))
    with jaxdyn.executor(traversal=traversal, batch="kernel"):
        run = jax.jit(_through_kernels) if jaxdyn.planner.kernel_traversal(m) == "scan" else _through_kernels
        direct, public, J = run(m, q, qd, tau, ref_qdd)
    for a, b in zip(direct + public, ref + ref):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10)
    for a, b in zip(J, _ref_jac(_small(), q, qd, tau)):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("algo", ["aba", "rnea"])
def test_pallas_matches_generic_interpret(algo):
    """The fused Pallas ABA / RNEA (model folded in as constants), in Pallas interpret mode on
    CPU: equal to ``vmap`` of the generic algorithm (armature, gravity and a free root included),
    padding of a batch that is not a multiple of the block included; bad arguments are named."""
    from jaxdyn.kernels import pallas

    build, ref_fn, last = {
        "aba": (pallas.aba_pallas, _ref_aba, "tau"),
        "rnea": (pallas.rnea_pallas, _ref_rnea, "qdd"),
    }[algo]
    m = builders.chain(3, ("revolute", "prismatic", "revolute"), floating_base=True, seed=2, dtype=jnp.float64)
    m = m.replace(armature=jnp.linspace(0.1, 0.3, m.nv))
    q, qd, x, _ = _state(m, 13, seed=5)
    out = jax.jit(build(m, block=8, interpret=True))(q, qd, x)
    ref = ref_fn(m, q, qd, x, None)
    assert out.shape == (13, m.nv)
    np.testing.assert_allclose(out, ref, rtol=1e-10, atol=1e-10)
    with pytest.raises(ValueError, match="power of two"):
        build(m, block=12)
    with pytest.raises(ValueError, match=f"{algo}_pallas: argument '{last}' has shape"):
        build(m, block=8)(q, qd, x[:, :2])


def test_crba_unrolled_and_pallas_match_generic():
    """The unrolled SoA mass matrix (a branched floating tree: off-branch zeros, the free root's
    6x6 block) equals ``vmap(jaxdyn.crba)``, plain with body-frame and common-frame inputs, and as
    a Pallas kernel (interpret mode)."""
    from jaxdyn.kernels import pallas, soa_common, soa_unrolled
    from jaxdyn.kernels.soa_algebra import SoAAlgebra

    m = builders.random_tree(5, ("revolute", "prismatic"), floating_base=True, seed=4, dtype=jnp.float64)
    m = m.replace(armature=jnp.linspace(0.1, 0.3, m.nv))
    q, _, _, _ = _state(m, 11, seed=3)
    ref = _ref_crba(m, q)
    unrolled = lambda q, f="body": soa_unrolled.crba_unroll(SoAAlgebra(), m, soa_common.model_numbers(m), q.T, f)  # noqa: E731
    outs = [jax.jit(pallas.crba_pallas(m, block=8, interpret=True))(q)]
    for frames in ("body", "common"):  # the same steps with body-frame or common-frame inputs
        plain = jax.jit(lambda q, f=frames: soa_common._rows(unrolled(q, f), 11, m.dtype))(q)
        outs.append(plain.T.reshape(11, m.nv, m.nv))
    for out in outs:
        np.testing.assert_allclose(out, ref, rtol=1e-10, atol=1e-10)
    with pytest.raises(ValueError, match="frames must be 'body' or 'common'"):
        unrolled(q, "aligned")
    assert np.any(np.asarray(ref[0]) == 0.0)  # off-branch entries exist (the test covers them)


def test_crba_link_steps_over_arrays():
    """The CRBA's link steps (``crba.composite_step``, ``column_force``, ``column_step``,
    ``entry``) run unchanged over the array algebra: the body-frame recursion for one sample,
    written here as a plain loop over a branched floating tree, equals ``jaxdyn.crba``."""
    from jaxdyn import spatial
    from jaxdyn.algorithms import crba as steps
    from jaxdyn.algorithms.common import joint_data

    m = builders.random_tree(5, ("revolute", "prismatic"), floating_base=True, seed=6, dtype=jnp.float64)
    m = m.replace(armature=jnp.linspace(0.1, 0.3, m.nv))
    q = _state(m, 1, seed=2)[0][0]
    alg, lay = spatial.ArrayAlgebra, m.layout

    @jax.jit  # one program, not op by op: the entries of M by (row, column)
    def entries(q):
        jd, out = joint_data(m, q), {}
        I_all = m.body_inertias()
        X, S = [None] * m.nb, [None] * m.nb
        for j, b in enumerate(np.asarray(lay.link_bodies)):
            X[b], S[b] = spatial.Pose(jd.X.R[j], jd.X.p[j]), jd.S[j]
        X[0], S[0] = jd.X_root, jd.S_root  # the free root: S = 1_6
        Ic = [spatial.RigidInertia(I_all.m[b], I_all.h[b], I_all.Ibar[b]) for b in range(m.nb)]
        for i in reversed(range(m.nb)):
            if m.parents[i] >= 0:
                Ic[m.parents[i]] = steps.composite_step(alg, X[i], Ic[i], Ic[m.parents[i]])
        for i in range(m.nb):
            vs = int(lay.v_start[i])
            for c in range(S[i].shape[-1]):
                F, j = steps.column_force(alg, Ic[i], S[i][:, c]), i
                while True:
                    vj = int(lay.v_start[j])
                    for r in range(S[j].shape[-1]):
                        out[f"{vj + r} {vs + c}"] = steps.entry(alg, S[j][:, r], F)
                    if m.parents[j] < 0:
                        break
                    F, j = steps.column_step(alg, X[j], F), m.parents[j]
        return out

    M = np.zeros((m.nv, m.nv))
    for key, value in entries(q).items():
        r, c = map(int, key.split())
        M[r, c] = M[c, r] = value
    M += np.diag(np.asarray(m.armature))
    np.testing.assert_allclose(M, jax.jit(jaxdyn.crba)(m, q), rtol=1e-12, atol=1e-12)


def test_pallas_aba_jacobian_matches_jacfwd_interpret():
    """Forward mode through the fused Pallas ABA (interpret mode): the per-sample Jacobians equal
    ``vmap(jacfwd(aba))`` w.r.t. (q, qd, tau), with a free root (quaternion coordinates)."""
    from jaxdyn.kernels.pallas import aba_jacobian_pallas

    m = _small()
    q, qd, tau, _ = _state(m, 3, seed=7)
    J = jax.jit(aba_jacobian_pallas(m, block=8, interpret=True))(q, qd, tau)
    with pytest.raises(ValueError, match="aba_jacobian_pallas: argument 'qd' has shape"):
        aba_jacobian_pallas(m, block=8, interpret=True)(q, qd[:, :2], tau)
    for a, b in zip(J, _ref_jac(m, q, qd, tau)):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-9)


def test_pallas_aba_lowers_for_cuda():
    """Without a GPU, lower the Pallas ABA for the CUDA platform (jax.export, cross-platform):
    catches ops the Triton lowering rejects. The GPU compiler itself (Triton IR
    -> PTX) runs only on a GPU and is not exercised here."""
    from jax import export

    from jaxdyn.kernels.pallas import aba_jacobian_pallas, aba_pallas, crba_pallas, rnea_pallas

    m = builders.chain(3, ("revolute", "prismatic", "revolute"), floating_base=True, seed=2, dtype=jnp.float32)
    q = jax.ShapeDtypeStruct((256, m.nq), jnp.float32)
    v = jax.ShapeDtypeStruct((256, m.nv), jnp.float32)
    target = "__gpu$xla.gpu.triton"
    for build in (aba_pallas, rnea_pallas, aba_jacobian_pallas):
        f = jax.jit(build(m, block=128, interpret=False))
        exp = export.export(f, platforms=["cuda"], disabled_checks=[export.DisabledSafetyCheck.custom_call(target)])(
            q, v, v
        )
        assert f"custom_call @{target}" in exp.mlir_module()
    f = jax.jit(crba_pallas(m, block=128, interpret=False))
    exp = export.export(f, platforms=["cuda"], disabled_checks=[export.DisabledSafetyCheck.custom_call(target)])(q)
    assert f"custom_call @{target}" in exp.mlir_module()
