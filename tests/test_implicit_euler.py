"""The "implicit_euler" integrator (MuJoCo's Euler with implicit joint damping): step-for-step
equality with stored MuJoCo rollouts (fixed and free-floating base), stability with stiff joint
damping where the explicit schemes blow up, the ABA-with-armature identity, derivatives, the SoA
kernel, and non-finite reporting (:attr:`Trajectory.nonfinite_step`, :func:`sim.first_nonfinite`).

Reference data: tests/reference/generate_mujoco_implicit.py (MuJoCo is not needed here).
"""

import functools
import glob
import inspect
import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxdyn
from jaxdyn import builders, sim

DATA = os.path.join(os.path.dirname(__file__), "data", "mujoco", "implicit_euler")
# what MuJoCo models too: no effort clipping, no Coulomb friction, no joint limits (generator)
MJ_OPTS = sim.SimOptions(clip_effort=False, friction=False, joint_limits=False)


def _quat_R(q):
    w, x, y, z = q
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )


def _case(name, dtype=jnp.float64):
    """The stored MuJoCo case as jaxdyn inputs: model with the reference's damping/armature, q0,
    qd0, tau in jaxdyn's order and conventions, and a map of jaxdyn states to MuJoCo's."""
    d = np.load(os.path.join(DATA, f"{name}.npz"))
    free = bool(d["free"])
    robot = name.split("_")[0]
    m = jaxdyn.load_robot(robot, floating_base=free)
    lay = m.layout
    j_of = {n: j for j, n in enumerate(m.joint_names)}
    jv = np.array([lay.v_start[j_of[str(n)]] for n in d["joint_names"]])  # hinge dofs, MuJoCo order
    jq = np.array([lay.q_start[j_of[str(n)]] for n in d["joint_names"]])
    n0 = 6 if free else 0
    damping, armature = np.zeros(m.nv), np.zeros(m.nv)
    damping[jv], armature[jv] = d["damping"], d["armature"]
    m = m.replace(damping=jnp.asarray(damping), armature=jnp.asarray(armature)).astype(dtype)

    def from_mj(qpos, qvel):
        q, v = np.zeros(m.nq), np.zeros(m.nv)
        q[jq], v[jv] = qpos[7 if free else 0 :], qvel[n0:]
        if free:  # [p; quat] alike; MuJoCo [v_world; omega_body] -> jaxdyn [omega_body; v_body]
            q[0:7] = qpos[0:7]
            v[0:3], v[3:6] = qvel[3:6], _quat_R(qpos[3:7]).T @ qvel[0:3]
        return q, v

    def to_mj(q, qd):
        """jaxdyn (T, nq), (T, nv) -> MuJoCo qpos, qvel."""
        qpos = np.concatenate([q[:, 0:7], q[:, jq]], 1) if free else q[:, jq]
        qvel = qd[:, jv]
        if free:
            vw = np.einsum("tij,tj->ti", np.array([_quat_R(x) for x in q[:, 3:7]]), qd[:, 3:6])
            qvel = np.concatenate([vw, qd[:, 0:3], qvel], 1)
        return qpos, qvel

    q0, qd0 = from_mj(d["q0"], d["qd0"])
    tau = np.zeros((d["tau"].shape[0], m.nv))
    tau[:, jv] = d["tau"][:, n0:]
    assert np.all(d["tau"][:, :n0] == 0)  # no applied force on the free joint (conventions differ)
    return m, q0, qd0, tau, float(d["dt"]), to_mj, d


def _rollout(m, q0, qd0, tau, dt, integrator="implicit_euler", options=MJ_OPTS):
    return jax.jit(lambda q, v, u: sim.rollout(m, q, v, u, dt, integrator=integrator, options=options))(
        jnp.asarray(q0, m.dtype), jnp.asarray(qd0, m.dtype), jnp.asarray(tau, m.dtype)
    )


CASES = sorted(os.path.basename(p)[:-4] for p in glob.glob(os.path.join(DATA, "*.npz")))


@pytest.mark.parametrize("name", CASES)
def test_matches_mujoco_euler_with_eulerdamp(name):
    """Same URDF, damping, armature and torques: jaxdyn's "implicit_euler" is MuJoCo 4's Euler
    (eulerdamp on) step for step, in float64 to round-off over the whole rollout (measured max
    |dq|, |dqd|: panda_stiff 1000 steps 5.8e-15, 7.7e-14; solo12_free 300 steps 8.6e-15,
    6.5e-14; relative to the largest |q|, |qd| of the reference: at most 3e-14).
    The free base goes through jaxdyn's [omega_body; v_body] <-> MuJoCo's [v_world; omega_body].
    float32 stays finite and close (measured panda 9e-6 / 7e-5, solo12 4e-6 / 3e-5)."""
    m, q0, qd0, tau, dt, to_mj, d = _case(name)
    assert len(CASES) == 2
    tr = _rollout(m, q0, qd0, tau, dt)
    qpos, qvel = to_mj(np.asarray(tr.q), np.asarray(tr.qd))
    scale_q, scale_v = max(1.0, np.abs(d["q"]).max()), max(1.0, np.abs(d["qd"]).max())
    eq, ev = np.abs(qpos - d["q"]).max(), np.abs(qvel - d["qd"]).max()
    assert eq < 1e-10 * scale_q and ev < 1e-10 * scale_v, (eq, ev)
    assert int(tr.nonfinite_step) == -1
    # float32: finite and close to MuJoCo's float64 rollout
    m32, *_ = _case(name, jnp.float32)
    t32 = _rollout(m32, q0, qd0, tau, dt)
    assert t32.q.dtype == jnp.float32 and int(t32.nonfinite_step) == -1
    qpos, qvel = to_mj(np.asarray(t32.q, np.float64), np.asarray(t32.qd, np.float64))
    eq, ev = np.abs(qpos - d["q"]).max(), np.abs(qvel - d["qd"]).max()
    assert eq < 1e-3 * scale_q and ev < 1e-3 * scale_v, (eq, ev)


def test_stiff_panda_finite_where_explicit_schemes_blow_up():
    """The stiff Panda (wrist damping 20 N m s/rad, no armature: the largest eigenvalue of
    h M^-1 B is 3.9 at the initial state, above RK4's stability limit 2.79, and 2.5-3.9 along the
    MuJoCo reference) with the default
    SimOptions (effort clipping, soft joint limits) for 2 s at dt = 1 ms: "implicit_euler" stays
    finite in float64 and float32; "semi_implicit_euler", "euler" and "rk4" go non-finite
    within a few dozen steps (measured: state 9 for rk4, 17 / 18 for the Euler schemes; the
    "variational" step at state 3, not asserted). This is why "implicit_euler" is the default."""
    m, q0, qd0, tau, dt, _, d = _case("panda_stiff")
    B = np.diag(np.asarray(m.damping))
    lam = [
        np.linalg.eigvals(np.linalg.solve(np.asarray(jaxdyn.crba(m, jnp.asarray(q))), B)).real.max()
        for q in np.asarray(d["q"])[::100]
    ]
    assert dt * lam[0] > 2.79 and dt * min(lam) > 2.0, dt * np.array(lam)  # measured 3.9 at the start, >= 2.5
    T = 2000
    u = np.tile(tau, (2, 1))[:T]
    opts = sim.SimOptions()
    for integrator in ("implicit_euler", "semi_implicit_euler", "euler", "rk4"):
        tr = _rollout(m, q0, qd0, u, dt, integrator, opts)
        first = sim.first_nonfinite(tr)
        if integrator == "implicit_euler":
            assert first is None and np.all(np.isfinite(np.asarray(tr.q))) and np.all(np.isfinite(np.asarray(tr.qd)))
            ref = np.asarray(tr.q)
        else:
            assert first is not None and 0 < first[1] < 100, (integrator, first)
            k = first[1]
            assert np.all(np.isfinite(np.asarray(tr.q)[:k])) and not np.all(np.isfinite(np.asarray(tr.qd)[k]))
    t32 = _rollout(m.astype(jnp.float32), q0, qd0, u, dt, "implicit_euler", opts)
    assert sim.first_nonfinite(t32) is None
    # float32 follows float64 over the 2 s (measured 6.4e-4 rad)
    assert np.abs(np.asarray(t32.q, np.float64) - ref).max() < 2e-2


def test_aba_with_damping_in_armature_is_the_implicit_solve():
    """(M + h B) dv = h (tau - c - B qd) solved densely (CRBA with armature, RNEA bias) equals
    the step's dv = h aba(model with armature + h b); with zero damping the step is bit for bit
    "semi_implicit_euler" (fixed base)."""
    m = jaxdyn.load_robot("panda")
    k = jax.random.split(jax.random.PRNGKey(0), 4)
    m = m.replace(damping=jax.random.uniform(k[0], (m.nv,), minval=0.0, maxval=30.0), armature=jnp.full(m.nv, 0.01))
    q = jaxdyn.random_configuration(m, k[1])
    qd, tau = jax.random.normal(k[2], (m.nv,)), 3.0 * jax.random.normal(k[3], (m.nv,))
    h = 2e-3

    @jax.jit
    def both(m, q, qd, tau):
        q1, qd1 = sim.step(m, q, qd, tau, h, "implicit_euler", options=MJ_OPTS)
        M = jaxdyn.crba(m, q)  # includes diag(armature)
        c = jaxdyn.rnea(m, q, qd, jnp.zeros_like(qd))  # C qd + g
        dv = jnp.linalg.solve(M + h * jnp.diag(m.damping), h * (tau - c - m.damping * qd))
        return qd1 - qd, dv, q1, jaxdyn.integrate(m, q, qd + dv, h)

    dv_step, dv_dense, q1, q1_dense = both(m, q, qd, tau)
    np.testing.assert_allclose(dv_step, dv_dense, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(q1, q1_dense, rtol=0, atol=1e-12)
    assert float(jnp.abs(dv_dense).max()) > 1e-3
    # no damping: exactly the semi-implicit step
    m0 = m.replace(damping=jnp.zeros(m.nv))
    for mm, o in ((m0, MJ_OPTS), (m, sim.SimOptions(damping=False))):
        a = jax.jit(lambda q, v, t, mm=mm, o=o: sim.step(mm, q, v, t, h, "implicit_euler", options=o))(q, qd, tau)
        b = jax.jit(lambda q, v, t, mm=mm, o=o: sim.step(mm, q, v, t, h, "semi_implicit_euler", options=o))(q, qd, tau)
        np.testing.assert_array_equal(a[0], b[0])
        np.testing.assert_array_equal(a[1], b[1])
    default = lambda f: inspect.signature(f).parameters["integrator"].default  # noqa: E731
    assert default(sim.step) == "implicit_euler" and default(sim.rollout) == "implicit_euler"


def test_gradients_through_a_short_rollout():
    """grad of a 30-step stiff-Panda rollout (remat) w.r.t. the torques and the damping is finite
    and agrees with a central difference along a random direction."""
    m, q0, qd0, tau, dt, _, _ = _case("panda_stiff")
    u0 = jnp.asarray(tau[:30])

    def loss(u, damping):
        tr = sim.rollout(m.replace(damping=damping), q0, qd0, u, dt, remat=True, options=MJ_OPTS)
        return jnp.sum(jnp.sin(tr.q[-1])) + 0.1 * jnp.sum(tr.qd[-1] ** 2)

    f = jax.jit(loss)
    gu, gb = jax.jit(jax.grad(loss, (0, 1)))(u0, m.damping)
    assert np.all(np.isfinite(gu)) and np.all(np.isfinite(gb)) and float(jnp.abs(gb).max()) > 0
    du = jax.random.normal(jax.random.PRNGKey(1), u0.shape)
    db = jax.random.normal(jax.random.PRNGKey(2), m.damping.shape)
    eps = 1e-6
    fd = (f(u0 + eps * du, m.damping + eps * db) - f(u0 - eps * du, m.damping - eps * db)) / (2 * eps)
    an = jnp.sum(gu * du) + jnp.sum(gb * db)
    np.testing.assert_allclose(float(an), float(fd), rtol=1e-6)


@pytest.mark.parametrize("name", ["panda_stiff", "solo12_free"])
def test_soa_kernel_equals_generic(name):
    """The batch kernel under vmap (it receives the model with armature + h b) gives the generic
    step (vmap of the one-sample algorithms); fixed and free-floating base."""
    m, _, _, _, dt, _, _ = _case(name)
    B = 5
    rng = np.random.default_rng(0)
    q = jax.vmap(lambda k: jaxdyn.random_configuration(m, k))(jax.random.split(jax.random.PRNGKey(0), B))
    qd = jnp.asarray(rng.normal(0, 1.0, (B, m.nv)))
    u = jnp.asarray(rng.normal(0, 2.0, (B, m.nv)))

    stepper = jax.jit(jax.vmap(lambda q, v, t: sim.step(m, q, v, t, dt, "implicit_euler")))
    with jaxdyn.executor(batch="kernel"):
        a = stepper(q, qd, u)
        assert "transpose" in str(jax.make_jaxpr(stepper)(q, qd, u))
    with jaxdyn.executor(batch="vmap"):
        b = stepper(q, qd, u)
    np.testing.assert_allclose(a[0], b[0], rtol=0, atol=1e-12)
    np.testing.assert_allclose(a[1], b[1], rtol=1e-10, atol=1e-10)


def test_one_joint_stability_limits():
    """Damped free rotation of one joint (I qdd = -b qd, no gravity) for 3000 steps: the largest
    stable h b / I is 2 for "euler" / "semi_implicit_euler", 2.785 for "rk4" (the real-axis
    limit of its stability polynomial), about 2.4 for "variational" (its quasi-Newton iteration
    stops contracting), none for "implicit_euler" (stable at h b / I = 1e4). docs/simulation.md
    quotes these numbers."""
    m = builders.chain(1, seed=0).replace(gravity=jnp.zeros(3))
    inertia = float(jaxdyn.crba(m, jnp.zeros(1))[0, 0])
    h = 1e-3

    def grows(integrator, x):
        @jax.jit
        @jax.vmap
        def final(x):
            tr = sim.rollout(
                m.replace(damping=jnp.array([x * inertia / h])),
                jnp.zeros(1),
                jnp.ones(1),
                jnp.zeros((3000, 1)),
                h,
                integrator=integrator,
                options=MJ_OPTS,
            )
            return jnp.where(tr.nonfinite_step >= 0, jnp.inf, jnp.abs(tr.qd[-1, 0]))

        return np.asarray(final(jnp.asarray(x))) > 1.0  # |qd| grew from 1 (or went non-finite)

    for integrator, ok, bad in (
        ("euler", 1.99, 2.01),
        ("semi_implicit_euler", 1.99, 2.01),
        ("rk4", 2.78, 2.79),
        ("variational", 2.35, 2.45),
    ):
        np.testing.assert_array_equal(grows(integrator, [ok, bad]), [False, True], err_msg=integrator)
    big = sim.rollout(
        m.replace(damping=jnp.array([1e4 * inertia / h])),
        jnp.zeros(1),
        jnp.ones(1),
        jnp.zeros((3000, 1)),
        h,
        options=MJ_OPTS,
    )
    assert sim.first_nonfinite(big) is None and float(jnp.abs(big.qd).max()) <= 1.0


def test_trajectory_nonfinite_step_and_compatibility():
    """nonfinite_step is the first state index with a NaN/inf (0 for a bad initial state, -1 if
    none); first_nonfinite finds the earliest over a vmapped batch; q, qd, tau still unpack."""
    m = jaxdyn.load_robot("double_pendulum")
    u = jnp.zeros((40, 2)).at[:, 0].set(jnp.where(jnp.arange(40) == 12, jnp.inf, 0.0))  # inf torque at step 12
    opts = MJ_OPTS

    def run(q0, u):
        return sim.rollout(m, q0, jnp.zeros(2), u, 1e-3, options=opts)

    q0s = jnp.array([[0.1, 0.0], [0.2, 0.0], [jnp.nan, 0.0], [0.3, 0.0]])
    us = jnp.stack([jnp.zeros((40, 2)), u, jnp.zeros((40, 2)), u])
    tr = jax.jit(jax.vmap(run))(q0s, us)
    assert tr.nonfinite_step.dtype == jnp.int32 and tr.nonfinite_step.shape == (4,)
    np.testing.assert_array_equal(tr.nonfinite_step, [-1, 13, 0, 13])  # state 13 follows torque 12
    assert sim.first_nonfinite(tr) == (2, 0)
    tr2 = jax.jit(jax.vmap(run))(q0s[jnp.array([0, 1, 3])], us[jnp.array([0, 1, 3])])
    assert sim.first_nonfinite(tr2) == (1, 13)  # tie between envs 1 and 2: the lower index
    assert sim.first_nonfinite(jax.tree_util.tree_map(lambda x: x[0], tr2)) is None
    assert sim.first_nonfinite(jax.tree_util.tree_map(lambda x: x[1], tr2)) == ((), 13)
    nested = jax.tree_util.tree_map(lambda x: x.reshape((3, 1) + x.shape[1:]), tr2)
    assert sim.first_nonfinite(nested) == ((1, 0), 13)
    # backwards compatible with the former (q, qd, tau) named tuple
    one = jax.tree_util.tree_map(lambda x: x[1], tr2)
    q, qd, tau = one
    assert q is one.q and qd is one.qd and tau is one.tau and one[2] is one.tau and len(one) == 3
    assert isinstance(one, sim.Trajectory) and one._replace(tau=None).tau is None


def test_env_state_records_first_nonfinite_step_across_resets():
    """EnvState.steps counts control steps since reset (not zeroed by the automatic reset);
    nonfinite_step keeps the first one that left the state non-finite; first_nonfinite reads a
    batch. The pendulum's state is poisoned with NaN in env 1 before step 1: that step ends its
    episode (Env.guarded_transition) and returns a fresh, finite state."""
    import equinox as eqx

    from jaxdyn import envs

    env = envs.make("pendulum", max_steps=3)
    assert env.integrator == "implicit_euler"

    def run(key):
        s = envs.vector_reset(env, key, 3)
        s = eqx.tree_at(lambda s: s.q, s, s.q.at[1, 0].set(jnp.nan))

        def body(s, _):
            s, _, _, done, _ = envs.vector_step(env, s, jnp.zeros((3, 1)))
            return s, (s.steps, s.nonfinite_step, jnp.all(jnp.isfinite(s.q), axis=1), done)

        return jax.lax.scan(body, s, None, length=7)

    s, (steps, bad, finite, done) = jax.jit(run)(jax.random.PRNGKey(0))
    np.testing.assert_array_equal(steps[:, 0], np.arange(1, 8))
    np.testing.assert_array_equal(bad[:, 1], 1)  # recorded at step 1, kept after the resets
    np.testing.assert_array_equal(bad[:, [0, 2]], -1)
    assert done[0, 1] and finite[:, 1].all() and not done[1:3, 1].any()  # step 1 ends the episode
    assert sim.first_nonfinite(s) == (1, 1)


def test_panda_reach_with_stiff_damping():
    """PandaReach with damping 50 N m s/rad on the arm joints (default armature 0.1 kg m^2, 5 ms
    steps): the default "implicit_euler" stays finite, "semi_implicit_euler" does not
    (measured: first non-finite at step 10-12), and the env state says so."""
    from jaxdyn import envs

    acts = jax.random.uniform(jax.random.PRNGKey(1), (40, 2, 7), minval=-1, maxval=1)
    for integrator in ("implicit_euler", "semi_implicit_euler"):
        env = envs.make("panda_reach", integrator=integrator, damping=50.0, max_steps=30)

        def run(key, acts, env=env):
            s = envs.vector_reset(env, key, 2)
            return jax.lax.scan(lambda s, a: (envs.vector_step(env, s, a)[0], None), s, acts)[0]

        s = jax.jit(run)(jax.random.PRNGKey(0), acts)
        first = sim.first_nonfinite(s)
        if integrator == "implicit_euler":
            assert first is None
        else:
            assert first is not None and 0 < first[1] <= 30, first
        np.testing.assert_array_equal(s.steps, 40)


def test_order_one_fixed_and_floating_base():
    """Against a fine RK4 reference the error falls by 2x per halving of h (order 1) with joint
    damping on, for a fixed-base double pendulum and a free-floating 2-link chain (whose base
    moves on R^3 x SO(3) here, on SE(3) in the reference: same continuous dynamics)."""
    dp = jaxdyn.load_robot("double_pendulum").replace(damping=jnp.array([0.3, 0.1]))
    fl = builders.chain(2, floating_base=True, seed=3).replace(damping=jnp.array([0.0] * 6 + [0.2, 0.4]))
    opts = sim.SimOptions(clip_effort=False, friction=False, joint_limits=False)

    @functools.partial(jax.jit, static_argnames="integrator")
    def run(model, q0, qd0, h, n, integrator):
        tau = 0.3 * jnp.ones(model.nv)
        body = lambda i, s: sim.step(model, s[0], s[1], tau, h, integrator, options=opts)  # noqa: E731
        return jax.lax.fori_loop(0, n, body, (q0, qd0))

    for model in (dp, fl):
        key = jax.random.PRNGKey(4)
        q0 = jaxdyn.random_configuration(model, key)
        qd0 = jax.random.normal(key, (model.nv,))
        T = 0.5
        ref = run(model, q0, qd0, T / 8192, 8192, "rk4")
        errs = []
        for n in (200, 400, 800):
            q, qd = run(model, q0, qd0, T / n, n, "implicit_euler")
            errs.append(float(jnp.linalg.norm(jaxdyn.difference(model, q, ref[0])) + jnp.linalg.norm(qd - ref[1])))
        slopes = np.log2(np.array(errs[:-1]) / np.array(errs[1:]))
        assert np.all(np.abs(slopes - 1.0) < 0.2), (model.name, slopes, errs)


BOX_AND_ARM = """<mujoco><worldbody>
<body name="box" pos="0 0 0.0499"><freejoint/>
<geom type="box" size="0.1 0.08 0.05" mass="1" friction="0.8 0.005 0.0001"/></body>
<body name="link" pos="0.5 0 0.3"><joint name="hinge" axis="0 1 0" frictionloss="0.05"/>
<geom type="sphere" pos="0 0 -0.28" size="0.03" mass="0.5"/></body>
</worldbody></mujoco>"""


def test_dense_executors_give_the_same_contact_steps():
    """The implicit contact step under both executors of the small dense algebra
    (``jaxdyn.executor(dense=...)``, :func:`jaxdyn.planner.dense`): XLA loops and explicit sums
    (the CPU's) and the backend's factorisations with one matrix product for the contact rows'
    congruence (a GPU's). A box sliding and turning on the ground on four corners and a
    ball on an arm swinging into the floor against its joint's friction, 20 steps of 5 ms for three
    start velocities: the same states to 1e-10 (float64), and the same derivative of the final
    state along a start velocity (forward mode, in the same program)."""
    model = jaxdyn.load_mjcf(BOX_AND_ARM, dtype=jnp.float64)
    con = jaxdyn.contact.Contact(jaxdyn.contact.Ground())
    q0 = jnp.array([0.0, 0.0, 0.0499, 1.0, 0.0, 0.0, 0.0, 0.3])
    qd0 = jnp.array([[0.0, 0.0, s, 0.6 * s, 0.2, 0.0, -3.0 * s] for s in (0.5, 1.0, 2.0)])

    def final(qd):
        tr = sim.rollout(model, q0, qd, jnp.zeros((20, model.nv)), 5e-3, contact=con)
        return jnp.concatenate([tr.q[-1], tr.qd[-1]])

    run = jax.jit(jax.vmap(lambda qd: jax.jvp(final, (qd,), (jnp.ones_like(qd),))))  # one program
    out, jvp = {}, {}
    for dense in ("elementwise", "library"):
        with jaxdyn.executor(dense=dense):
            out[dense], jvp[dense] = run(qd0)
    x = np.asarray(out["elementwise"])
    assert np.isfinite(x).all() and np.isfinite(np.asarray(jvp["elementwise"])).all()
    assert np.ptp(x[:, 0]) > 1e-3  # the three boxes ended in different places
    np.testing.assert_allclose(out["library"], x, atol=1e-10)
    np.testing.assert_allclose(jvp["library"], jvp["elementwise"], atol=1e-8)


def test_branch_pattern_solves_give_the_dense_steps(monkeypatch):
    """The implicit step's Newton, polish and joint-friction solves by block elimination over the
    mass matrix's branch pattern (``tree.branch_pattern``: the Go1's free root around its four
    legs) give the dense solves' steps: Playground's Go1 (feet against the ground, the joints'
    friction loss, position servos) from a perturbed ``home`` pose, 25 steps of 4 ms with and
    without contact, float64, to 1e-10; and so does a coarser pattern (two legs joined in one
    block, blocks of two sizes)."""
    from jaxdyn import tree
    from jaxdyn.envs.mjcf_joystick import keyframe

    scene = os.path.join(
        os.path.dirname(jaxdyn.__file__), "robots", "go1_playground", "scene_mjx_feetonly_flat_terrain.xml"
    )
    model = jaxdyn.load_mjcf(scene, dtype=jnp.float64)
    home = keyframe(scene, "home")
    pattern = tree.branch_pattern(tuple(model.parents), model.joint_nv)
    assert pattern is not None and len(pattern.groups[0]) == 4
    con = jaxdyn.contact.Contact(jaxdyn.contact.Ground.from_model(model))
    q0 = jnp.asarray(home["qpos"])
    qd0 = jnp.asarray(np.random.default_rng(0).normal(scale=0.3, size=model.nv))
    ctrl = jnp.asarray(home["ctrl"]) + 0.2

    def final(contact):
        tr = sim.rollout(model, q0, qd0, None, 4e-3, steps=25, contact=contact, ctrl=lambda q, qd, t: ctrl)
        return np.asarray(jnp.concatenate([tr.q[-1], tr.qd[-1]]))

    with_pattern = [final(con), final(None)]
    legs = pattern.groups[0]
    coarse = jaxdyn.linalg.Bordered(pattern.border, ((legs[2], legs[3]), (legs[0] + legs[1],)))
    for replaced in (None, coarse):
        monkeypatch.setattr(tree, "branch_pattern", lambda *args, p=replaced: p)
        for got, want in zip([final(con), final(None)], with_pattern):
            np.testing.assert_allclose(got, want, atol=1e-10)
    assert np.ptp(with_pattern[0][7:19]) > 0.5  # the legs moved


def test_pair_between_branches_takes_the_dense_solve_while_it_touches(monkeypatch):
    """A collision pair between two blocks of the branch pattern (a box and a pendulum's ball,
    each on its own root) couples them only while its rows carry a force: the step then solves
    densely for the batch, else over the pattern. Batches of boxes apart from the ball and
    batches with one box pressed against it, 20 steps of 5 ms: the states of the dense solves
    (no pattern) to 1e-10 (float64), and the pressed box pushed by the ball."""
    from jaxdyn import tree

    model = jaxdyn.load_mjcf(BOX_AND_ARM, dtype=jnp.float64)
    con = jaxdyn.contact.Contact(jaxdyn.contact.Ground())
    assert sorted(con.coupled_bodies(model)[0]) == [0, 1]

    def final(xs, contact=con):
        def one(x):
            q0 = jnp.array([0.0, 0.0, 0.0499, 1.0, 0.0, 0.0, 0.0, 0.0]).at[0].set(x)
            qd0 = jnp.array([0.0, 0.0, 0.0, 0.3, 0.0, 0.0, 0.0])
            tr = sim.rollout(model, q0, qd0, jnp.zeros((20, model.nv)), 5e-3, contact=contact)
            return jnp.concatenate([tr.q[-1], tr.qd[-1]])

        return np.asarray(jax.jit(jax.vmap(one))(jnp.asarray(xs)))

    batches = ([0.0, 0.1], [0.0, 0.385])  # the second: a box against the ball (x 0.38)
    got = [final(xs) for xs in batches]
    apart = final(batches[1], jaxdyn.contact.Contact(jaxdyn.contact.Ground(), collide_pairs=False))
    monkeypatch.setattr(tree, "branch_pattern", lambda *args: None)
    for xs, x in zip(batches, got):
        np.testing.assert_allclose(x, final(xs), atol=1e-10)
    assert abs(got[1][1, 0] - apart[1, 0]) > 1e-3 and abs(got[1][0, 0] - apart[0, 0]) < 1e-12


def test_step_without_touching_rows_is_the_solve_without_contact():
    """Where no contact row of the batch touches, the step takes its branch without contact
    (``planner.contact_row_sizes``' size 0): the Go1 in the air, with the joints' friction loss
    (the Newton steps over no rows) and without it (one solve), gives the select's steps (every
    row solved for every sample) to 1e-10 (float64), batch alone and batch with one sample
    standing (which takes the rows)."""
    from jaxdyn.envs.mjcf_joystick import keyframe

    scene = os.path.join(
        os.path.dirname(jaxdyn.__file__), "robots", "go1_playground", "scene_mjx_feetonly_flat_terrain.xml"
    )
    model = jaxdyn.load_mjcf(scene, dtype=jnp.float64)
    home = jnp.asarray(keyframe(scene, "home")["qpos"])
    con = jaxdyn.contact.Contact(jaxdyn.contact.Ground.from_model(model))
    qd0 = jnp.asarray(np.random.default_rng(1).normal(scale=0.5, size=(2, model.nv)))

    def step(options):
        return jax.jit(
            jax.vmap(lambda q, qd: sim.step(model, q, qd, jnp.zeros(model.nv), 4e-3, contact=con, options=options))
        )

    air = jnp.stack([home.at[2].add(0.3), home.at[2].add(0.5)])
    for options in (sim.SimOptions(), sim.SimOptions(friction=False)):
        out = {}
        for how in ("branch", "select"):
            with jaxdyn.executor(skip=how):
                f = step(options)
                out[how] = [f(q, qd0) for q in (air, air.at[1].set(home))]
        for a, b in zip(jax.tree_util.tree_leaves(out["branch"]), jax.tree_util.tree_leaves(out["select"])):
            np.testing.assert_allclose(a, b, atol=1e-10)
