"""jaxdyn.envs.quadruped (Solo12 joystick task) and jaxdyn.envs.adapters: shapes, determinism,
standing under PD with the contact carrying the weight, termination of a flipped robot and the
automatic reset, reward terms against their definitions, domain randomisation (a vmap over
models changes the dynamics; vmapped batch == single environments), finite states, and the
gymnax / Brax interfaces.

Compile time dominates (the contact step is a large program): one jitted, vmapped rollout of
``B`` environments for ``T`` steps serves most tests; one single-environment program checks
the batch against single steps; everything else is traced (``eval_shape``) or tiny.
"""

from __future__ import annotations

import dataclasses
import os

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxdyn.envs as envs
from jaxdyn import contact as C
from jaxdyn.envs import adapters
from jaxdyn.envs.quadruped import QuadrupedJoystick, randomize, sample_params

T = 50  # 1 s at 50 Hz
G = 9.81
_CACHE = {}


def _stack(*trees):
    return jax.tree_util.tree_map(lambda *xs: jnp.stack([jnp.asarray(x) for x in xs]), *trees)


def _row(tree, i):
    return jax.tree_util.tree_map(lambda x: x[i], tree)


def _with(s, **fields):
    """``s`` with some fields replaced."""
    names = tuple(fields)
    return eqx.tree_at(lambda x: tuple(getattr(x, k) for k in names), s, tuple(fields.values()))


def _flipped(env, s):
    """``s`` upside down (180 degrees about x), base 0.3 m up, at rest."""
    q = s.q.at[0:7].set(jnp.asarray([0.0, 0.0, 0.3, 0.0, 1.0, 0.0, 0.0], s.q.dtype))
    return _with(s, q=q, qd=jnp.zeros_like(s.qd))


def _probe():
    """Rows: 0, 1 nominal robot standing with zero action (same key: identical); 2 the same with
    every link 20 % heavier; 3 nominal, started upside down; 4 randomised robot, random actions."""
    if _CACHE:
        return _CACHE
    env = QuadrupedJoystick(reset_velocity=0.0)
    s0 = env.reset(jax.random.PRNGKey(0))
    nominal = env.params
    one = {"friction": (1.0, 1.0), "motor_strength": (1.0, 1.0)}
    heavy = sample_params(nominal, jax.random.PRNGKey(1), mass_scale=(1.2, 1.2), **one)
    rand = sample_params(nominal, jax.random.PRNGKey(2))
    s4 = env.reset(jax.random.PRNGKey(4))
    params = _stack(nominal, nominal, heavy, nominal, rand)
    states = _stack(s0, s0, s0, _flipped(env, s0), s4)
    actions = jnp.zeros((5, T, 12), env.model.dtype)
    actions = actions.at[4].set(jax.random.uniform(jax.random.PRNGKey(5), (T, 12), env.model.dtype, -1, 1))

    def episode(p, s, a):
        e = env.with_params(p)

        def body(s, a):
            s2, obs, r, d, info = e.step(s, a)
            return s2, (s2, obs, r, d, info)

        return jax.lax.scan(body, s, a)[1]

    out = jax.jit(jax.vmap(episode))(params, states, actions)
    _CACHE.update(env=env, params=params, s0=states, actions=actions, out=out)
    return _CACHE


def test_shapes_dtypes_and_determinism():
    p = _probe()
    env, (st, obs, r, d, info) = p["env"], p["out"]
    assert env.model.dtype == jnp.float64  # the suite runs in float64 (conftest)
    assert env.observation_size == 48 and env.action_size == 12
    assert obs.shape == (5, T, 48) and obs.dtype == jnp.float64
    assert r.shape == d.shape == (5, T) and d.dtype == jnp.bool_
    assert st.q.shape == (5, T, 19) and st.last_action.shape == (5, T, 12)
    assert info["tau"].shape == (5, T, 18)
    assert set(info["reward_terms"]) == {k for k, _ in env.reward_weights}
    np.testing.assert_array_equal(obs[0], obs[1])
    np.testing.assert_array_equal(st.q[0], st.q[1])
    # the first observation: zero twist, gravity straight down in the base frame, the command
    o = np.asarray(env.observation(_row(p["s0"], 0)))
    np.testing.assert_allclose(o[:9], [0, 0, 0, 0, 0, 0, 0, 0, -1], atol=1e-12)
    np.testing.assert_array_equal(o[9:12], np.asarray(p["s0"].goal[0]))
    np.testing.assert_allclose(o[12:], 0.0, atol=1e-12)  # default pose, at rest, no last action
    moving = _with(_row(p["s0"], 0), qd=jnp.arange(1.0, 19.0))  # [omega; v] in the base frame first
    np.testing.assert_array_equal(np.asarray(env.observation(moving))[:6], [4, 5, 6, 1, 2, 3])
    lo, hi = np.array(env.command_range).T
    assert np.all((p["s0"].goal >= lo) & (p["s0"].goal <= hi))


def test_float32_step_stays_float32():
    env = QuadrupedJoystick(dtype=jnp.float32)
    s = env.reset(jax.random.PRNGKey(0))
    out = jax.eval_shape(env.step, s, jnp.zeros(12, jnp.float32))
    for leaf in jax.tree_util.tree_leaves(out):
        assert leaf.dtype in (jnp.float32, jnp.int32, jnp.uint32, jnp.bool_), leaf


def test_stands_with_zero_action_and_contact_carries_the_weight():
    p = _probe()
    env, (st, _, r, d, info) = p["env"], p["out"]
    q, qd = np.asarray(st.q[0]), np.asarray(st.qd[0])
    assert not np.asarray(d[0]).any()
    up = 1 - 2 * (q[:, 4] ** 2 + q[:, 5] ** 2)  # R[2, 2] of the base quaternion (w, x, y, z)
    assert np.all(up > 0.999)  # upright throughout the second
    assert np.all((q[:, 2] > 0.2) & (q[:, 2] < env.stand_height + 1e-3))
    assert np.abs(qd[-1]).max() < 0.05  # settled
    force = jax.jit(jax.vmap(lambda q, qd: C.total_force(env.model, q, qd, env.contact)))
    forces = np.asarray(force(st.q[:, -1], st.qd[:, -1]))
    for row, scale in ((0, 1.0), (2, 1.2)):
        f = forces[row]
        weight = scale * float(np.sum(env.model.mass)) * G
        assert abs(f[2] / weight - 1) < 0.01, (row, f, weight)
        assert np.hypot(f[0], f[1]) < 0.01 * weight
    # zero action holds the default pose against gravity: the PD torque stays below its limit
    tau = np.abs(np.asarray(info["tau"])[0, -1, 6:])
    assert 0.05 < tau.max() < env.torque_max
    assert np.all(np.asarray(r[0]) >= 0) and np.all(np.asarray(r[0]) <= 1.5 * env.dt + 1e-12)


def test_spring_friction_holds_the_feet_where_the_regularised_law_splays_them():
    """``Contact(friction="spring")`` in the environment: the state carries the bristles (relaxed
    at reset and at an automatic reset). Standing with zero action for 2 s, the feet hold: they
    move 0.11 mm in the first 0.2 s (the bristles' deflection under the legs' outward push) and
    0.15 um over the second second, all four equally; under the regularised law they creep
    outward 19 mm and the base sags 1 cm (2 mm with the bristles)."""
    env0 = QuadrupedJoystick(reset_velocity=0.0)
    envs_by_law = {
        law: QuadrupedJoystick(
            reset_velocity=0.0, contact=C.Contact(params=env0.contact.params, collide_pairs=False, friction=law)
        )
        for law in ("spring", "regularised")
    }
    out = {}
    for law, env in envs_by_law.items():
        s0 = env.reset(jax.random.PRNGKey(0))
        flipped = _flipped(env, s0)

        def body(s, a, env=env):
            s2, _, _, d, _ = jax.vmap(env.step)(s, a)
            feet = jax.vmap(lambda q: C.contact_points(env.model, q, jnp.zeros(18), env.contact.ground).centre)(s2.q)
            return s2, (s2.q[:, 2], feet, d, s2.contact_state)

        run = jax.jit(lambda s: jax.lax.scan(body, s, jnp.zeros((100, 2, 12)))[1])
        out[law] = (s0, run(_stack(s0, flipped)))
    s0, (z, feet, d, cs) = out["spring"]
    assert s0.contact_state.ground.shape == (4, 3) and not np.asarray(s0.contact_state.ground).any()
    assert not np.asarray(d[:, 0]).any() and bool(d[0, 1])  # the flipped robot resets at once
    assert not np.asarray(cs.ground[0, 1]).any()  # relaxed by the automatic reset
    feet = np.asarray(feet[:, 0, :, :2])
    moved = np.linalg.norm(feet[-1] - feet[10], axis=-1)
    assert np.all(moved < 2e-4) and np.ptp(moved) < 1e-6
    assert np.abs(feet[-1] - feet[49]).max() < 1e-6  # 0.15 um measured
    u = np.linalg.norm(np.asarray(cs.ground[-1, 0]), axis=-1)
    assert np.all(u > 0) and np.ptp(u) < 1e-3 * u.max()  # 0.2 mm each, to 6e-5
    sag = float(z[10, 0] - z[-1, 0])  # 1.8 mm: the legs' PD compliance settling
    assert abs(sag) < 3e-3
    _, (zr, feet_r, dr, cs_r) = out["regularised"]
    assert cs_r is None and not np.asarray(dr[:, 0]).any()
    feet_r = np.asarray(feet_r[:, 0, :, :2])
    assert np.all(np.linalg.norm(feet_r[-1] - feet_r[49], axis=-1) > 5e-3)
    assert float(zr[10, 0] - zr[-1, 0]) > 3 * sag


def test_heavier_robot_moves_differently():
    p = _probe()
    st = p["out"][0]
    np.testing.assert_array_equal(p["s0"].q[2], p["s0"].q[0])
    gap = np.abs(np.asarray(st.q[2, :, 2] - st.q[0, :, 2])).max()
    assert gap > 1e-3  # the heavier robot sags lower under the same PD gains
    assert np.asarray(st.q[2, -1, 2]) < np.asarray(st.q[0, -1, 2])


def test_flipped_robot_terminates_and_resets():
    p = _probe()
    env, (st, _, _, d, info) = p["env"], p["out"]
    assert bool(env.terminated(_row(p["s0"], 3)))
    assert not bool(env.terminated(_row(p["s0"], 0)))
    low = _row(p["s0"], 0)
    low = _with(low, q=low.q.at[2].set(0.5 * env.min_height))
    assert bool(env.terminated(low))
    fast = _row(p["s0"], 0)  # a runaway joint (docs/rl.md), and one just inside the bound
    assert bool(env.terminated(_with(fast, qd=fast.qd.at[10].set(1.01 * env.max_joint_speed))))
    assert not bool(env.terminated(_with(fast, qd=fast.qd.at[10].set(-0.99 * env.max_joint_speed))))
    assert bool(env.terminated(_with(fast, qd=fast.qd.at[10].set(-1.01 * env.max_joint_speed))))
    assert bool(d[3, 0]) and bool(info["terminated"][3, 0]) and not bool(info["truncated"][3, 0])
    assert int(st.t[3, 0]) == 0  # a fresh episode follows
    assert np.asarray(env.base_rotation(st.q[3, 0]))[2, 2] > 0.99
    assert float(info["reward_terms"]["termination"][3, 0]) == 1.0
    assert float(info["final_observation"][3, 0, 8]) > 0  # gravity points up in the base frame


def test_reward_terms_match_their_definitions():
    env = _probe()["env"]
    reward_terms = jax.jit(lambda *x: env.reward_terms(*x))  # one program for the transitions
    s = _row(_probe()["s0"], 0)
    c = jnp.asarray([0.3, -0.1, 0.4], s.q.dtype)
    s = _with(s, goal=c)
    # perfect tracking, level and still otherwise: both kernels at 1, every penalty 0
    qd = jnp.zeros(18, s.q.dtype).at[2].set(c[2]).at[3:5].set(c[:2])
    nxt = _with(s, qd=qd)
    zero = jnp.zeros(12, s.q.dtype)
    t = {k: float(v) for k, v in reward_terms(s, zero, zero, nxt).items()}
    assert t["tracking_lin_vel"] == 1.0 and t["tracking_ang_vel"] == 1.0
    # the default task's penalties (the gait terms, weighted 0, have their own test)
    assert all(t[k] == 0.0 for k, w in env.reward_weights if w < 0)
    reward = jax.jit(lambda *x: env.reward(*x))(s, zero, jnp.zeros(18), nxt)
    assert float(reward) == pytest.approx(1.5 * env.dt, rel=1e-12)
    # off the command by dv: exp(-dv^2 / sigma); penalties as defined
    dv = 0.2
    qd2 = qd.at[3].add(dv).at[5].set(0.3)
    a = jnp.full(12, 0.5, s.q.dtype)
    tau = jnp.arange(12.0)
    t2 = reward_terms(s, a, tau, _with(s, qd=qd2))
    assert float(t2["tracking_lin_vel"]) == pytest.approx(np.exp(-(dv**2) / 0.25), rel=1e-12)
    assert float(t2["lin_vel_z"]) == pytest.approx(0.09, rel=1e-12)  # level base: v_z world = v_z base
    assert float(t2["action_rate"]) == pytest.approx(12 * 0.25, rel=1e-12)
    assert float(t2["torques"]) == pytest.approx(np.linalg.norm(np.arange(12.0)) + 66.0, rel=1e-12)
    # a tilted base is penalised by the projected gravity's horizontal part
    th = 0.3
    tilt = nxt.q.at[3:7].set(jnp.asarray([np.cos(th / 2), np.sin(th / 2), 0.0, 0.0]))
    t3 = reward_terms(s, zero, zero, _with(nxt, q=tilt))
    assert float(t3["orientation"]) == pytest.approx(np.sin(th) ** 2, rel=1e-9)


def test_gait_terms_match_their_definitions():
    """Playground's gait-shaping terms (module docstring) on hand-made transitions: all four
    feet landing after a swing, and the base sliding with the feet on the ground."""
    env = _probe()["env"]
    reward_terms = jax.jit(lambda *x: env.reward_terms(*x))
    s = _row(_probe()["s0"], 0)
    dt, h, dtype = env.dt, env.max_foot_height, s.q.dtype
    c = jnp.asarray([0.3, 0.0, 0.0], dtype)
    z, slip = env.feet_kinematics(s.q, s.qd)  # standing in the reset pose: feet on the ground
    np.testing.assert_allclose(np.asarray(z), env.foot_radius, atol=1e-12)
    np.testing.assert_allclose(np.asarray(slip), 0.0, atol=1e-24)
    up = s.q.at[2].add(0.05)  # every foot 5 cm higher: in the air
    np.testing.assert_allclose(np.asarray(env.feet_kinematics(up, s.qd)[0]), env.foot_radius + 0.05, atol=1e-12)
    # the feet were in the air for 0.3 s, at most 6 cm high; now they land, base sliding at 0.2 m/s
    air = jnp.full(4, 0.3, dtype)
    prev = _with(s, goal=c, feet_air_time=air, last_contact=jnp.zeros(4, bool), swing_peak=jnp.full(4, 0.06, dtype))
    qd = s.qd.at[3].set(0.2).at[6:9].set(1.0)  # base velocity in its own frame; front-left leg 1 rad/s
    q = s.q.at[7 + 2].add(-0.5)  # the front-left knee bent by 0.5 rad more: that foot lifts
    nxt = _with(prev, q=q, qd=qd)
    tau = jnp.full(12, 2.0, dtype)
    t = {k: float(v) for k, v in reward_terms(prev, jnp.zeros(12, dtype), tau, nxt).items()}
    z, slip = (np.asarray(x) for x in env.feet_kinematics(q, qd))
    on = z <= env.foot_radius
    assert not on[0] and on[1:].all()
    assert t["pose"] == pytest.approx(np.exp(-0.1 * 0.25), rel=1e-12)
    assert t["stand_still"] == 0.0  # a command
    assert t["energy"] == pytest.approx(6.0, rel=1e-12)
    assert t["feet_slip"] == pytest.approx(slip[1:].sum(), rel=1e-12)
    np.testing.assert_allclose(slip[1:], 0.04, rtol=1e-9)  # the planted feet move with the base
    assert t["feet_clearance"] == pytest.approx(np.sum(np.abs(z - h) * slip**0.25), rel=1e-12)
    assert t["feet_air_time"] == pytest.approx(3 * (0.3 + dt - 0.1), rel=1e-12)  # three land
    assert t["feet_height"] == pytest.approx(3 * (0.06 / h - 1) ** 2, rel=1e-12)
    # no command: the feet terms off, the pose held by stand_still
    still = _with(nxt, goal=jnp.zeros(3, dtype))
    t0 = {k: float(v) for k, v in reward_terms(_with(prev, goal=still.goal), jnp.zeros(12), tau, still).items()}
    assert t0["feet_slip"] == t0["feet_height"] == t0["feet_air_time"] == 0.0
    assert t0["stand_still"] == pytest.approx(0.5, rel=1e-12)
    # the record the transition keeps: air time counted for the foot in the air, reset for the others
    f = env.gait(prev, q, qd)
    assert np.asarray(f["first_contact"]).tolist() == [False, True, True, True]
    np.testing.assert_allclose(np.asarray(f["air_time"]), 0.3 + dt)
    # weighted as Playground's Go1 when asked, the default task unchanged
    gait = QuadrupedJoystick(reward_weights=envs.quadruped.GAIT_REWARD_WEIGHTS)
    assert gait.weight("feet_air_time") == 0.1 and env.weight("feet_air_time") == 0.0


def test_dof_pos_limits_and_observation_noise():
    """Playground's ``dof_pos_limits``: the distance beyond the soft limits (the range shrunk to
    0.95 about its middle), 0 inside them and for a joint without a finite limit. Observation
    noise: ``level * scale * U(-1, 1)`` on the observed quantities with Playground's scales, the
    command and the last action exact; a fresh draw at every step, the same for the same state."""
    base = _probe()["env"]
    m = base.model
    lo = m.q_lower.at[7:].set(-1.0).at[7 + 3].set(-jnp.inf)  # joint 3 unbounded below
    hi = m.q_upper.at[7:].set(2.0)
    env = QuadrupedJoystick(model=m.replace(q_lower=lo, q_upper=hi), obs_noise=0.5, reset_velocity=0.0)
    s = env.reset(jax.random.PRNGKey(3))
    dtype = s.q.dtype
    soft_lo, soft_hi = (np.asarray(x) for x in env.soft_limits())
    assert soft_lo[0] == pytest.approx(0.5 - 1.5 * 0.95) and soft_hi[0] == pytest.approx(0.5 + 1.5 * 0.95)
    assert soft_lo[3] == -np.inf and soft_hi[3] == np.inf
    # the soft range is [-0.925, 1.925]: joint 0 0.575 above, joint 1 0.275 below, joint 3 free
    q = s.q.at[7:].set(0.5).at[7].set(2.5).at[8].set(-1.2).at[10].set(-50.0)
    terms = jax.jit(lambda *x: env.reward_terms(*x))
    t = terms(s, jnp.zeros(12, dtype), jnp.zeros(12, dtype), _with(s, q=q))
    assert float(t["dof_pos_limits"]) == pytest.approx(0.575 + 0.275, rel=1e-12)
    inside = terms(s, jnp.zeros(12, dtype), jnp.zeros(12, dtype), _with(s, q=s.q.at[7:].set(0.5)))
    assert float(inside["dof_pos_limits"]) == 0.0
    assert float(base.reward_terms(s, jnp.zeros(12), jnp.zeros(12), s)["dof_pos_limits"]) == 0.0  # +-10 rad
    assert envs.quadruped.GAIT_REWARD_WEIGHTS["dof_pos_limits"] == -1.0 and base.weight("dof_pos_limits") == 0.0

    # noise: the same state twice, then 4000 steps of one episode
    obs = jax.jit(lambda st: env.observation(st))
    clean = np.asarray(base.observation(s))
    np.testing.assert_array_equal(np.asarray(obs(s)), np.asarray(obs(s)))
    steps = jnp.arange(4000, dtype=s.steps.dtype)
    draws = jax.jit(jax.vmap(lambda k: env.observation(_with(s, steps=k))))(steps)
    scale = np.asarray(env.observation_noise_scales())
    k = envs.quadruped.OBS_NOISE_SCALES
    want = [k["linvel"]] * 3 + [k["gyro"]] * 3 + [k["gravity"]] * 3 + [0.0] * 3 + [k["joint_pos"]] * 12
    np.testing.assert_array_equal(scale, want + [k["joint_vel"]] * 12 + [0.0] * 12)
    noised = scale > 0
    np.testing.assert_array_equal(np.asarray(draws)[:, ~noised], np.broadcast_to(clean[~noised], (4000, 12 + 3)))
    u = (np.asarray(draws) - clean)[:, noised] / (0.5 * scale[noised])
    assert np.abs(u).max() <= 1.0 + 1e-9 and np.abs(u).max(axis=0).min() > 0.99
    np.testing.assert_allclose(np.abs(u).mean(axis=0), 0.5, atol=0.05)  # E|U(-1, 1)| = 1/2
    np.testing.assert_allclose(u.mean(axis=0), 0.0, atol=0.06)
    assert np.all(np.abs(np.diff(u, axis=0)).max(axis=0) > 0)  # a fresh draw at every step
    with pytest.raises(ValueError, match="obs_noise must be a non-negative number"):
        QuadrupedJoystick(obs_noise=-1.0)


def test_gait_record_in_a_rollout():
    """The transition's gait record: feet standing stay in contact with no air time; under random
    actions feet leave the ground, and a foot has air time only while it is off the ground."""
    st = _probe()["out"][0]
    assert st.feet_air_time.shape == (5, T, 4) and st.last_contact.dtype == jnp.bool_
    assert np.asarray(st.last_contact[0, -10:]).all() and np.all(np.asarray(st.feet_air_time[0]) == 0)
    air, on, peak = (np.asarray(x[4]) for x in (st.feet_air_time, st.last_contact, st.swing_peak))
    assert (~on).any() and air.max() > 0
    assert np.all(air[on] == 0) and np.all(peak[on] == 0) and np.all(peak[~on] > 0)


def test_domain_randomisation_draws():
    env = _probe()["env"]
    n = 16
    ps = randomize(env, jax.random.PRNGKey(3), n)
    m = env.model
    assert ps.model.mass.shape == (n, m.nb) and ps.motor_strength.shape == (n, 12)
    ratio = np.asarray(ps.model.mass) / np.asarray(m.mass)
    assert np.all((ratio >= 0.8) & (ratio <= 1.2)) and ratio.std() > 0.05
    np.testing.assert_allclose(np.asarray(ps.model.inertia), ratio[..., None, None] * np.asarray(m.inertia), rtol=1e-12)
    mu = np.asarray(ps.model.geoms.friction)[..., 0]
    assert np.all(mu == mu[:, :1]) and np.all((mu >= 0.4) & (mu <= 1.25))
    s = np.asarray(ps.motor_strength)
    assert np.all((s >= 0.8) & (s <= 1.2))
    np.testing.assert_array_equal(np.asarray(ps.model.com[0]), np.asarray(m.com))
    with pytest.raises(ValueError, match="mass_scale"):
        randomize(env, jax.random.PRNGKey(0), 2, mass_scale=(1.2, 0.8))
    with pytest.raises(ValueError, match="unknown ranges"):
        randomize(env, jax.random.PRNGKey(0), 2, gravity=(0, 1))
    with pytest.raises(ValueError, match="n must be"):
        randomize(env, jax.random.PRNGKey(0), 0)


def test_batch_equals_single_environments_and_stays_finite():
    """Row 4 (randomised robot, random actions) of the vmapped rollout against the same
    environment stepped alone; through the gymnax adapter, which is ``env.step`` itself."""
    p = _probe()
    env, (st, obs, r, _, _) = p["env"], p["out"]
    assert np.all(np.asarray(st.nonfinite_step) == -1)
    assert np.all(np.isfinite(np.asarray(obs))) and np.all(np.isfinite(np.asarray(r)))
    assert np.asarray(r[4]).std() > 0
    g = adapters.GymnaxEnv(env)
    params = _row(p["params"], 4)
    step = jax.jit(g.step)
    s = _row(p["s0"], 4)
    for k in range(3):
        o, s, rk, dk, ik = step(jax.random.PRNGKey(k), s, p["actions"][4, k], params)
        np.testing.assert_allclose(np.asarray(s.q), np.asarray(st.q[4, k]), rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(np.asarray(o), np.asarray(obs[4, k]), rtol=1e-10, atol=1e-10)
        assert float(rk) == pytest.approx(float(r[4, k]), rel=1e-9, abs=1e-12)
        assert float(ik["discount"]) == 1.0 - float(ik["terminated"])


def test_gymnax_interface():
    env = _probe()["env"]
    g = adapters.GymnaxEnv(env)
    assert g.num_actions == 12 and g.default_params is not None
    obs, s = g.reset(jax.random.PRNGKey(0), g.default_params)
    assert obs.shape == (48,)
    np.testing.assert_array_equal(obs, env.observation(env.reset(jax.random.PRNGKey(0))))
    out = jax.eval_shape(g.step, jax.random.PRNGKey(0), s, jnp.zeros(12), g.default_params)
    assert len(out) == 5 and out[0].shape == (48,) and out[2].shape == () and out[3].dtype == jnp.bool_
    try:
        import gymnax.environments.spaces as spaces
    except ImportError:
        with pytest.raises(ImportError, match=r"jaxdyn\[rl\]"):
            g.action_space(g.default_params)
        return
    a, o = g.action_space(g.default_params), g.observation_space(g.default_params)
    assert isinstance(a, spaces.Box) and isinstance(o, spaces.Box)
    assert a.shape == (12,) and o.shape == (48,)
    x = a.sample(jax.random.PRNGKey(0))
    assert x.shape == (12,) and bool(a.contains(x))


def test_brax_interface():
    brax_base = pytest.importorskip("brax.envs.base", reason="Brax not installed (extra 'rl')")
    env = _probe()["env"]
    b = adapters.to_brax(env)
    assert isinstance(b, brax_base.Env) and b.unwrapped is b
    assert b.observation_size == 48 and b.action_size == 12 and b.backend == "jaxdyn"
    s = b.reset(jax.random.PRNGKey(0))
    assert isinstance(s, brax_base.State) and s.obs.shape == (48,)
    s2 = jax.eval_shape(b.step, s, jnp.zeros(12))
    assert isinstance(s2, brax_base.State)
    assert jax.tree_util.tree_structure(s2) == jax.tree_util.tree_structure(s)  # a scan carry
    assert s2.pipeline_state.q.shape == (19,) and s2.done.dtype == s2.reward.dtype
    # Brax's own wrappers: episode length, vmapped domain randomisation, automatic reset
    from brax.envs.wrappers import training as bw

    from jaxdyn.envs.quadruped import brax_randomization

    keys = jax.random.split(jax.random.PRNGKey(1), 3)
    w = bw.wrap(b, episode_length=10, randomization_fn=lambda sys: brax_randomization()(sys, keys))
    ws = jax.eval_shape(w.reset, keys)
    assert ws.obs.shape == (3, 48) and ws.pipeline_state.q.shape == (3, 19)
    ws2 = jax.eval_shape(w.step, ws, jnp.zeros((3, 12)))
    assert ws2.obs.shape == (3, 48) and set(ws2.metrics) >= set(s.metrics)
    # a scan carry through the wrappers: the metrics they add survive the step
    assert jax.tree_util.tree_structure(ws2) == jax.tree_util.tree_structure(ws)
    assert b.sys is not None and isinstance(b.sys, envs.QuadrupedParams)


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="floating base"):
        QuadrupedJoystick(envs.make("pendulum").model)
    with pytest.raises(ValueError, match="feet"):
        QuadrupedJoystick(feet=("FL_FOOT", "nope", "HL_FOOT", "HR_FOOT"))
    with pytest.raises(ValueError, match="unknown reward terms"):
        QuadrupedJoystick(reward_weights={"speed": 1.0})
    with pytest.raises(ValueError, match="kd"):
        QuadrupedJoystick(options=jaxdyn_sim_options(damping=False))
    with pytest.raises(ValueError, match="max_joint_speed must be a positive number"):
        QuadrupedJoystick(max_joint_speed=0.0)
    with pytest.raises(TypeError, match="env must be"):
        adapters.GymnaxEnv("solo12")
    assert isinstance(envs.make("solo12_joystick"), QuadrupedJoystick)


def jaxdyn_sim_options(**kw):
    from jaxdyn import sim

    return sim.SimOptions(**kw)


def test_recorded_impacts_stay_within_the_motors_range(data_dir):
    """Five control steps recorded under saturated random actions on randomised robots
    (benchmarks/saturated_actions.py, float32, feet against the ground): a foot moving into the
    ground at up to 3.3 m/s and 4-9 mm deep meets 0.2-17 kN of elastic and damping force at the
    start of a substep (8-700 times the robot's weight) on a 30 g lower leg. Solving the contact's velocity equation by
    semi-smooth Newton steps on ``R`` stalled away from its root there and left joint speeds of
    203-1476 rad/s after one control step, from 9-18 rad/s before. The step's convex iteration
    (jaxdyn.sim.implicit.implicit_contact) ends each within what the motors reach (27 rad/s against
    their damping)."""
    rec = np.load(os.path.join(data_dir, "quadruped", "runaway_states.npz"))
    env = QuadrupedJoystick(dtype=jnp.float32)
    env = eqx.tree_at(lambda e: e.contact, env, dataclasses.replace(env.contact, collide_pairs=False))
    params = randomize(env, jax.random.PRNGKey(1), 128)
    rows = jnp.asarray(rec["env"])
    params = jax.tree_util.tree_map(lambda x: x[rows], params)
    # the same robots as recorded (the draw of randomize is part of the case)
    np.testing.assert_allclose(np.asarray(jnp.sum(params.model.mass, axis=1)), rec["mass"], rtol=1e-6)
    n = len(rows)
    states = jax.vmap(env.reset)(jax.random.split(jax.random.PRNGKey(0), n))
    states = _with(states, q=jnp.asarray(rec["q"]), qd=jnp.asarray(rec["qd"]))
    step = jax.jit(jax.vmap(lambda p, s, a: env.with_params(p).transition(s, a)[0]))
    nxt = step(params, states, jnp.asarray(rec["action"]))
    speed = np.abs(np.asarray(nxt.qd[:, 6:])).max(axis=1)
    assert np.all(rec["speed_old"] > 200) and np.all(rec["speed_before"] < 20)
    assert np.all(np.isfinite(np.asarray(nxt.q))) and np.all(speed < 40), speed
