"""Simulation: integrator orders, energy behaviour, passive forces, rollouts vs MuJoCo, remat."""

import functools
import glob
import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxdyn
from jaxdyn import builders, sim

DP = jaxdyn.load_robot("double_pendulum")


@functools.partial(jax.jit, static_argnames=("integrator", "options"))
def _run(model, q, qd, dt, n, integrator, options=sim.IDEAL):
    """``n`` steps of size ``dt`` (both traced: one program per model structure and integrator)."""
    tau = jnp.zeros(model.nv, model.dtype)
    return jax.lax.fori_loop(
        0, n, lambda i, s: sim.step(model, s[0], s[1], tau, dt, integrator, options=options), (q, qd)
    )


def _integrate_fn(model, integrator):
    return functools.partial(_run, model, integrator=integrator)


def _orders(model, run, ref, q0, qd0, T, ns):
    errs = []
    for n in ns:
        q, qd = run(q0, qd0, T / n, n)
        errs.append(float(jnp.linalg.norm(jaxdyn.difference(model, q, ref[0])) + jnp.linalg.norm(qd - ref[1])))
    errs = np.array(errs)
    return np.log2(errs[:-1] / errs[1:])


@pytest.mark.parametrize("integrator,order", [("euler", 1), ("semi_implicit_euler", 1), ("rk4", 4), ("variational", 2)])
def test_convergence_order_double_pendulum(integrator, order):
    q0, qd0, T = jnp.array([1.0, -0.5]), jnp.array([0.3, 0.2]), 0.5
    ref = _integrate_fn(DP, "rk4")(q0, qd0, T / 16384, 16384)
    ns = (400, 800, 1600) if order == 4 else (200, 400, 800)  # RK4 is pre-asymptotic below ~400
    slopes = _orders(DP, _integrate_fn(DP, integrator), ref, q0, qd0, T, ns)
    assert np.all(np.abs(slopes - order) < 0.6), slopes


def test_rkmk4_order_on_lie_groups():
    """RKMK keeps order 4 on the free-flyer (SE(3)) and on spherical joints (SO(3))."""
    free = builders.chain(1, floating_base=True, seed=2)
    free = free.replace(gravity=jnp.zeros(3))
    for model in (free, builders.chain(1, "spherical", seed=1)):
        key = jax.random.PRNGKey(0)
        q0 = jaxdyn.random_configuration(model, key)
        qd0 = 2.0 * jax.random.normal(key, (model.nv,))
        run = _integrate_fn(model, "rk4")
        ref = run(q0, qd0, 1.0 / 8192, 8192)
        slopes = _orders(model, run, ref, q0, qd0, 1.0, (100, 200, 400))
        assert np.all(slopes > 3.5), (model.name, slopes)
        assert abs(float(jnp.linalg.norm(ref[0][3:7] if model.floating_base else ref[0][0:4])) - 1.0) < 1e-12


def test_variational_energy_bounded_over_1e5_steps():
    """Symplectic midpoint: the energy error of a conservative pendulum oscillates but does not
    drift over 1e5 steps; RK4 at the same step size drifts (its error grows ~linearly)."""
    model = builders.chain(1, seed=0)
    q0, qd0 = jnp.array([2.0]), jnp.array([0.0])
    E0 = float(sim.energy(model, q0, qd0))

    def energies(integrator):
        @jax.jit
        def f(q, qd):
            def body(s, _):
                s = sim.step(model, s[0], s[1], jnp.zeros(1), 1e-2, integrator, options=sim.IDEAL)
                return s, sim.energy(model, *s)

            return jax.lax.scan(body, (q, qd), None, length=100_000)[1]

        return np.abs(np.asarray(f(q0, qd0)) - E0)

    dv = energies("variational")
    first, last = dv[:10_000].max(), dv[-10_000:].max()
    assert last < 1e-3 * abs(E0) and last < 1.2 * first, (first, last)
    dr = energies("rk4")
    assert dr[-10_000:].max() > 5.0 * dr[:10_000].max()  # the contrast the scheme exists for


def test_variational_momentum_velocity_round_trip():
    """The variational step's velocity is M^-1 p with armature included: one step from rest
    with zero gravity stays at rest, and a free spin keeps its kinetic energy to round-off."""
    m = DP.replace(gravity=jnp.zeros(3), armature=jnp.array([0.05, 0.02]))
    q0 = jnp.array([0.1, 0.2])
    q1, qd1 = _run(m, q0, jnp.zeros(2), 1e-2, 1, "variational")
    assert np.allclose(q1, q0, atol=1e-14) and np.allclose(qd1, 0.0, atol=1e-14)
    # free motion: kinetic energy (armature included) oscillates within O(h^2), no drift
    qd0 = jnp.array([1.0, -2.0])
    T0 = float(sim.energy(m, q0, qd0))
    q, qd = _run(m, q0, qd0, 1e-2, 50, "variational")
    assert abs(float(sim.energy(m, q, qd)) - T0) < 1e-3 * T0


def _mujoco_cases():
    return sorted(glob.glob(os.path.join(os.path.dirname(__file__), "data", "mujoco", "*.npz")))


@pytest.mark.parametrize("path", _mujoco_cases(), ids=lambda p: os.path.basename(p)[:-4])
def test_rollout_matches_mujoco(path):
    """Same URDF, same damping/armature, same integrator: trajectories agree with MuJoCo 4's to
    round-off (tests/reference/generate_mujoco.py says what is switched off and why)."""
    d = np.load(path)
    robot = os.path.basename(path).rsplit("_", 1)[0]
    m = jaxdyn.load_robot(robot)
    perm = np.array([m.joint_names.index(str(n)) for n in d["joint_names"]])
    m = m.replace(damping=jnp.full(m.nv, float(d["damping"])), armature=jnp.full(m.nv, float(d["armature"])))
    q0, qd0, tau = (np.zeros_like(x) for x in (d["q0"], d["qd0"], d["tau"]))
    q0[perm], qd0[perm], tau[:, perm] = d["q0"], d["qd0"], d["tau"]
    opts = sim.SimOptions(clip_effort=False, friction=False, joint_limits=False)
    tr = jax.jit(lambda: sim.rollout(m, q0, qd0, tau, float(d["dt"]), integrator=str(d["integrator"]), options=opts))()
    assert np.abs(np.asarray(tr.q)[:, perm] - d["q"]).max() < 1e-10
    assert np.abs(np.asarray(tr.qd)[:, perm] - d["qd"]).max() < 1e-9


def test_passive_forces_and_limits():
    m = DP.replace(
        damping=jnp.array([0.5, 0.2]),
        friction=jnp.array([0.3, 0.1]),
        q_lower=jnp.array([-1.0, -jnp.inf]),
        q_upper=jnp.array([1.0, jnp.inf]),
        effort_limit=jnp.array([2.0, jnp.inf]),
    )
    # jitted (op by op every primitive would compile on its own); the options are static
    passive = jax.jit(sim.passive_torques, static_argnums=3)
    applied = jax.jit(sim.applied_torques, static_argnums=2)
    forward = jax.jit(lambda m, q, qd, u, o: sim.forward_dynamics(m, q, qd, u, options=o), static_argnums=4)
    o = sim.SimOptions(friction_velocity=1e-3, limit_stiffness=100.0, limit_damping=5.0)
    qd = jnp.array([2.0, -1.0])
    # inside the limits: damping + Coulomb friction oppose the motion
    t = passive(m, jnp.array([0.0, 0.0]), qd, o)
    assert np.allclose(t, [-0.5 * 2 - 0.3, 0.2 * 1 + 0.1], atol=1e-9)
    # beyond the upper limit of joint 0: spring + damper push back; joint 1 has no limit
    t = passive(
        m, jnp.array([1.1, 50.0]), jnp.zeros(2), sim.SimOptions(damping=False, friction=False, limit_stiffness=100.0)
    )
    assert np.allclose(t, [-10.0, 0.0])
    t = passive(
        m,
        jnp.array([-1.2, 0.0]),
        jnp.array([-1.0, 0.0]),
        sim.SimOptions(damping=False, friction=False, limit_stiffness=100.0, limit_damping=5.0),
    )
    assert np.allclose(t, [20.0 + 5.0, 0.0])
    # actuator limits clip only joints that have one
    assert np.allclose(applied(m, jnp.array([5.0, 5.0]), sim.SimOptions()), [2.0, 5.0])
    assert np.allclose(applied(m, jnp.array([5.0, 5.0]), sim.IDEAL), [5.0, 5.0])
    # forward_dynamics = aba with the total torque; gravity switch
    q, u = jnp.array([0.3, -0.2]), jnp.array([1.0, -0.5])
    qdd = forward(m, q, qd, u, o)
    tot = applied(m, u, o) + passive(m, q, qd, o)
    assert np.allclose(qdd, jax.jit(jaxdyn.aba)(m, q, qd, tot), atol=1e-12)
    qdd0 = forward(m, q, jnp.zeros(2), jnp.zeros(2), sim.SimOptions(gravity=False))
    assert np.allclose(qdd0, 0.0, atol=1e-12)


def test_damping_dissipates_and_limits_hold():
    lossy = DP.replace(damping=jnp.array([0.01, 0.01]), friction=jnp.array([0.002, 0.002]))
    opts = sim.SimOptions(limit_stiffness=50.0, limit_damping=0.5)
    run = jax.jit(
        lambda m: sim.rollout(
            m, jnp.array([0.4, 0.0]), jnp.zeros(2), jnp.zeros((1000, 2)), 1e-3, integrator="rk4", options=opts
        )
    )
    energy = jax.jit(jax.vmap(sim.energy, in_axes=(None, 0, 0)))
    # damping and friction (no limits in this model): the energy never increases
    tr = run(lossy)
    E = energy(lossy, tr.q, tr.qd)
    assert np.all(np.diff(np.asarray(E)) < 1e-12) and float(E[-1]) < float(E[0]) - 1e-4
    # soft limits keep the joints near their range (the spring stores energy: E is not monotone)
    tr = run(lossy.replace(q_lower=jnp.array([-0.5, -0.5]), q_upper=jnp.array([0.5, 0.5])))
    assert float(jnp.max(jnp.abs(tr.q))) < 0.7 and float(jnp.max(jnp.abs(tr.q))) > 0.5


def test_rollout_policy_vmap_and_remat_gradients():
    steps, dt = 1000, 1e-3
    u = 0.05 * jnp.sin(jnp.linspace(0, 6, steps))[:, None] * jnp.array([1.0, -1.0])
    q0, qd0 = jnp.array([0.2, 0.1]), jnp.zeros(2)

    def loss(u, remat):
        tr = sim.rollout(DP, q0, qd0, u, dt, remat=remat)
        return jnp.sum(tr.q[-1] ** 2) + jnp.sum(tr.qd[-1] ** 2)

    g_plain = jax.jit(jax.grad(lambda u: loss(u, False)))(u)
    g_remat = jax.jit(jax.grad(lambda u: loss(u, True)))(u)
    assert np.allclose(g_plain, g_remat, rtol=1e-10, atol=1e-14) and float(jnp.abs(g_plain).max()) > 0

    # closed-loop policy (a callable); vmap over initial states equals one rollout at a time
    K = jnp.array([[2.0, 0.0, 0.3, 0.0], [0.0, 1.0, 0.0, 0.2]])
    pol = lambda q, qd, t: -K @ jnp.concatenate([q, qd])  # noqa: E731
    one = lambda q: sim.rollout(DP, q, jnp.zeros(2), pol, 1e-3, steps=50, integrator="rk4").q[-1]  # noqa: E731
    qs = jnp.array([[0.1, 0.0], [0.0, 0.3], [-0.2, 0.1]])
    out = jax.jit(jax.vmap(one))(qs)
    single = jax.jit(one)
    for i in range(3):
        assert np.allclose(out[i], single(qs[i]), atol=1e-13)


def test_substeps_and_float32():
    run = jax.jit(
        lambda m, u: sim.rollout(m, jnp.array([0.5, 0.0]), jnp.zeros(2), u, 1e-2, substeps=2, options=sim.IDEAL)
    )
    tr = run(DP.astype(jnp.float32), jnp.zeros((100, 2), jnp.float32))
    ref = run(DP, jnp.zeros((100, 2)))
    assert tr.q.dtype == jnp.float32 and tr.q.shape == (101, 2)
    assert np.allclose(tr.q, ref.q, atol=2e-4)
    fine = sim.rollout(DP, jnp.array([0.5, 0.0]), jnp.zeros(2), jnp.zeros((200, 2)), 5e-3, options=sim.IDEAL)
    assert np.allclose(ref.q[-1], fine.q[-1], atol=1e-12)  # substeps == finer control steps


def _kernel_case():
    """A revolute-prismatic chain and a batch of 4 states and torques."""
    m = builders.chain(2, ("revolute", "prismatic"), seed=4, dtype=jnp.float64)
    k = jax.random.split(jax.random.PRNGKey(0), 3)
    q = jax.vmap(lambda kk: jaxdyn.random_configuration(m, kk))(jax.random.split(k[0], 4))
    qd, tau = jax.random.normal(k[1], (4, m.nv)), jax.random.normal(k[2], (4, m.nv))
    return m, q, qd, tau


def _batched_loss(model, q, qd, tau):
    qdd = jax.vmap(lambda q, v, t: sim.forward_dynamics(model, q, v, t))(q, qd, tau)
    return jnp.sum(jnp.sin(qdd))


def _both(fn, *args):
    """``fn(*args)`` with the batches sent to the kernels and to vmap of the one-sample
    algorithms (``jaxdyn.executor``; one jitted ``fn``, traced once under each)."""
    with jaxdyn.executor(batch="kernel"):
        a = fn(*args)
    with jaxdyn.executor(batch="vmap"):
        b = fn(*args)
    return a, b


def test_step_kernel_matches_generic():
    """Under vmap the step's forward dynamics runs kernels.aba_batch (where the planner sends a
    batch; here forced for a batch of 4): steps equal the generic path; one unbatched call is
    plain ABA. (The gradients w.r.t. the state and the model, jacfwd and a batched model's
    fallback to vmap(aba): test_step_kernel_derivatives_match_generic, in the slow set.)"""
    m, q, qd, tau = _kernel_case()
    stepper = jax.jit(jax.vmap(lambda q, v, t: sim.step(m, q, v, t, 1e-2, "semi_implicit_euler")))
    a, b = _both(stepper, q, qd, tau)
    np.testing.assert_allclose(a[0], b[0], atol=1e-12)
    np.testing.assert_allclose(a[1], b[1], atol=1e-12)
    with jaxdyn.executor(batch="kernel"):
        assert "transpose" in str(jax.make_jaxpr(stepper)(q, qd, tau))  # the SoA layout is in the program
    one = jax.jit(lambda: sim.forward_dynamics(m, q[0], qd[0], tau[0]))
    np.testing.assert_allclose(*_both(one), atol=1e-12)


def test_step_kernel_derivatives_match_generic():
    """Under vmap with the kernels the gradient w.r.t. the model and the state and jacfwd of
    forward dynamics equal the generic path's; a batch of models (vmap over the model too)
    falls back to vmap(aba)."""
    m, q, qd, tau = _kernel_case()
    ms = jax.vmap(lambda s: m.replace(mass=m.mass * s))(jnp.linspace(1.0, 2.0, 4))
    models = jax.jit(jax.vmap(lambda mm, q, v, t: sim.forward_dynamics(mm, q, v, t)))
    np.testing.assert_allclose(*_both(models, ms, q, qd, tau), atol=1e-12)
    g, r = _both(jax.jit(jax.grad(lambda mm, q: _batched_loss(mm, q, qd, tau), (0, 1))), m, q)
    np.testing.assert_allclose(g[1], r[1], rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(g[0].mass, r[0].mass, rtol=1e-9, atol=1e-9)
    fd = jax.jit(jax.vmap(jax.jacfwd(lambda q, v, t: sim.forward_dynamics(m, q, v, t))))
    np.testing.assert_allclose(*_both(fd, q, qd, tau), atol=1e-10)


def test_sim_bad_input():
    with pytest.raises(ValueError, match="unknown integrator 'leapfrog'"):
        sim.step(DP, jnp.zeros(2), jnp.zeros(2), jnp.zeros(2), 1e-3, "leapfrog")
    with pytest.raises(ValueError, match=r"q0 must have shape \(2,\)"):
        sim.rollout(DP, jnp.zeros(3), jnp.zeros(2), jnp.zeros((5, 2)), 1e-3)
    with pytest.raises(ValueError, match=r"controls must have shape \(T, 2\)"):
        sim.rollout(DP, jnp.zeros(2), jnp.zeros(2), jnp.zeros((5, 3)), 1e-3)
    with pytest.raises(ValueError, match="steps is required"):
        sim.rollout(DP, jnp.zeros(2), jnp.zeros(2), lambda q, qd, t: q, 1e-3)
    with pytest.raises(ValueError, match="substeps"):
        sim.rollout(DP, jnp.zeros(2), jnp.zeros(2), jnp.zeros((5, 2)), 1e-3, substeps=0)
