"""jaxdyn.envs: API shapes/dtypes, determinism, auto-reset on termination and truncation,
action clipping, rewards against their definitions, reachable Panda targets, physics sanity,
vmap == single steps, sharding, bad input.

Compile time dominates: every environment is exercised through ONE jitted program (a batch of
episodes of ``T`` steps, vmapped), cached per module; the other programs are small pendulum ones.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxdyn
import jaxdyn.envs as envs
from jaxdyn import sim

B = 6  # episodes per probe; rows 0/1 share a key, rows 2/3 share a key with scaled actions
T = 210  # > pendulum's 200-step limit, so every pendulum episode is truncated once

_CACHE = {}


def _probe(name):
    """Run B episodes of T steps of ``name`` with random actions; cached per environment."""
    if name in _CACHE:
        return _CACHE[name]
    env = envs.make(name)

    def episode(key, actions):
        s0 = env.reset(key)

        def body(s, a):
            s2, obs, r, d, info = env.step(s, a)
            return s2, (s2, obs, r, d, dict(info, obs_of_state=env.observation(s2)))

        return s0, jax.lax.scan(body, s0, actions)[1]

    run = jax.jit(jax.vmap(episode))
    keys = jax.random.split(jax.random.PRNGKey(7), B)
    keys = keys.at[1].set(keys[0]).at[3].set(keys[2])
    a = jax.random.uniform(jax.random.PRNGKey(3), (B, T, env.action_size), env.model.dtype, -1.5, 1.5)
    a = a.at[1].set(a[0]).at[3].set(jnp.sign(a[2])).at[2].set(10.0 * jnp.sign(a[2]))  # |a| > 1 clips to +-1
    s0, (st, obs, r, d, info) = run(keys, a)
    out = dict(env=env, run=run, keys=keys, actions=a, s0=s0, states=st, obs=obs, rewards=r, dones=d, info=info)
    _CACHE[name] = out
    return out


ALL = ["pendulum", "acrobot", "cartpole", "cartpole_swingup", "panda_reach"]


@pytest.mark.parametrize("name", ALL)
def test_shapes_dtypes_determinism_clipping(name):
    p = _probe(name)
    env = p["env"]
    dt = env.model.dtype
    assert dt == jnp.float64  # the suite runs in float64 (conftest)
    nobs, na = env.observation_size, env.action_size
    assert p["obs"].shape == (B, T, nobs) and p["obs"].dtype == dt
    assert p["rewards"].shape == (B, T) and p["rewards"].dtype == dt
    assert p["dones"].shape == (B, T) and p["dones"].dtype == jnp.bool_
    assert p["states"].q.shape == (B, T, env.model.nq) and p["states"].t.dtype == jnp.int32
    assert p["states"].key.shape == (B, T, 2) and p["states"].key.dtype == jnp.uint32
    assert p["info"]["final_observation"].shape == (B, T, nobs)
    assert env.action_low.shape == env.action_high.shape == env.torque_limit.shape == (na,)
    np.testing.assert_array_equal(env.action_high, 1.0)
    assert np.all(np.isfinite(p["rewards"])) and np.all(np.isfinite(p["obs"]))
    # same key, same actions: bit-identical; different keys: different episodes
    np.testing.assert_array_equal(p["obs"][0], p["obs"][1])
    assert not np.allclose(p["obs"][0, 0], p["obs"][4, 0])
    # actions beyond the bounds are clipped: 10 * sign(a) acts as sign(a)
    np.testing.assert_array_equal(p["obs"][2], p["obs"][3])
    tau = np.asarray(p["info"]["tau"])[..., np.asarray(env.actuated)]
    if name != "panda_reach":  # (Panda adds gravity compensation to the command)
        np.testing.assert_allclose(np.abs(tau[3]), np.broadcast_to(env.torque_limit, tau[3].shape), rtol=1e-12)
    assert np.all(np.abs(tau) <= np.asarray(env.model.effort_limit)[np.asarray(env.actuated)] + 1e-9)


@pytest.mark.parametrize("name", ALL)
def test_auto_reset_and_truncation(name):
    p = _probe(name)
    env = p["env"]
    st, d, info = p["states"], np.asarray(p["dones"]), p["info"]
    t = np.asarray(st.t)
    prev_t = np.concatenate([np.asarray(p["s0"].t)[:, None], t[:, :-1]], axis=1)
    # a step either continues the episode (t + 1) or ends it and returns a fresh state (t = 0)
    np.testing.assert_array_equal(t, np.where(d, 0, prev_t + 1))
    np.testing.assert_array_equal(np.asarray(st.episode_return)[d], 0.0)
    trunc, term = np.asarray(info["truncated"]), np.asarray(info["terminated"])
    np.testing.assert_array_equal(d, trunc | term)
    assert not np.any(trunc & term)
    np.testing.assert_array_equal(trunc, (prev_t + 1 == env.max_steps) & ~term)
    # the returned observation is that of the returned (fresh) state; the final one is not
    np.testing.assert_allclose(p["obs"], info["obs_of_state"], rtol=0, atol=1e-12)
    cont = ~d
    np.testing.assert_array_equal(np.asarray(info["final_observation"])[cont], np.asarray(p["obs"])[cont])
    # episode_return in info accumulates the rewards since the last reset
    r = np.asarray(p["rewards"])
    acc = np.zeros(B)
    for k in range(T):
        acc = acc + r[:, k]
        np.testing.assert_allclose(np.asarray(info["episode_return"])[:, k], acc, rtol=1e-12, atol=1e-9)
        acc = np.where(d[:, k], 0.0, acc)
    if name == "pendulum":
        assert trunc[:, env.max_steps - 1].all() and d.sum() == B  # exactly one truncation each
        fresh = jax.tree_util.tree_map(lambda x: np.asarray(x)[:, env.max_steps - 1], st)
        assert np.all(np.abs(fresh.qd) <= 1.0) and np.all(np.abs(fresh.q) <= np.pi)
        # the new episode is a new draw, not a copy of the first one
        assert not np.allclose(fresh.q[:, 0], np.asarray(p["s0"].q)[:, 0])
    if name == "cartpole":  # random forces topple the pole long before 500 steps
        assert term.any()
        fo = np.asarray(info["final_observation"])[term]  # [x, cos, sin, xd, thd]
        ang = np.abs(np.arctan2(fo[:, 2], fo[:, 1]))
        assert np.all((ang > np.deg2rad(12.0)) | (np.abs(fo[:, 0]) > 2.4))
        np.testing.assert_array_equal(np.asarray(p["rewards"])[term], 1.0)
        assert not np.any(np.asarray(p["rewards"]) != 1.0)
    if name in ("acrobot", "cartpole_swingup", "panda_reach"):
        assert not term.any()


def test_pendulum_reward_matches_definition():
    p = _probe("pendulum")
    s0 = p["s0"].q[:, 0], p["s0"].qd[:, 0]
    o0 = np.stack([np.cos(s0[0]), np.sin(s0[0]), s0[1]], -1)
    o_prev = np.concatenate([o0[:, None], np.asarray(p["obs"])[:, :-1]], 1)
    th = np.arctan2(o_prev[..., 1], o_prev[..., 0])
    u = 2.0 * np.clip(np.asarray(p["actions"])[..., 0], -1, 1)
    expect = -(th**2 + 0.1 * o_prev[..., 2] ** 2 + 0.001 * u**2)
    np.testing.assert_allclose(p["rewards"], expect, rtol=1e-9, atol=1e-9)


def test_panda_targets_reachable_and_reward():
    p = _probe("panda_reach")
    env = p["env"]
    assert "panda_hand_tcp" in env.model.frame_names and env.ee_frame == "panda_hand_tcp"
    assert env.observation_size == 2 * env.model.nq + 6 and env.action_size == 7
    # reward = -|ee - target| - 1e-3 |a|^2, with ee and target read from the final observation
    fo = np.asarray(p["info"]["final_observation"])
    a = np.clip(np.asarray(p["actions"]), -1, 1)
    expect = -np.linalg.norm(fo[..., -3:] - fo[..., -6:-3], axis=-1) - 1e-3 * np.sum(a**2, -1)
    np.testing.assert_allclose(p["rewards"], expect, rtol=1e-9, atol=1e-9)
    # targets (initial episodes and the ones after truncation) are reached by inverse kinematics
    goals = np.concatenate([np.asarray(p["s0"].goal), np.asarray(p["states"].goal)[:, -1]])
    assert goals.shape == (2 * B, 3)
    assert np.all(goals[:, 2] > 0.1) and np.all(np.linalg.norm(goals[:, :2], axis=1) > 0.25)
    model = env.model

    def ik(target):
        def it(_, q):
            e = target - jaxdyn.frame_placement(model, q, env.ee_frame).p
            J = jaxdyn.frame_jacobian(model, q, env.ee_frame, reference="local_world_aligned")[3:, :7]
            dq = J.T @ jnp.linalg.solve(J @ J.T + 1e-4 * jnp.eye(3), e)
            return q.at[:7].add(jnp.clip(dq, -0.2, 0.2))

        q = jax.lax.fori_loop(0, 150, it, env.ready_pose())
        return jnp.linalg.norm(target - jaxdyn.frame_placement(model, q, env.ee_frame).p)

    err = np.asarray(jax.jit(jax.vmap(ik))(jnp.asarray(goals)))
    assert np.all(err < 1e-3), err


def test_physics_sanity_pendulum_energy_and_gravity():
    """Zero torque, rk4 with 4 substeps and ideal options: the pendulum released near upright
    keeps its energy over 100 steps (5 s), and gravity pulls it away from upright."""
    env = envs.make("pendulum", integrator="rk4", substeps=4, options=sim.IDEAL)
    model = env.model

    def run(q0):
        s = env.reset(jax.random.PRNGKey(0))
        s = eqx.tree_at(lambda s: (s.q, s.qd), s, (jnp.array([q0]), jnp.zeros(1)))

        def body(s, _):
            s, r, term, info = env.transition(s, jnp.zeros(1))
            return s, (s.q[0], s.qd[0], sim.energy(model, s.q, s.qd))

        return jax.lax.scan(body, s, None, length=100)[1]

    q, qd, e = map(np.asarray, jax.jit(jax.vmap(run))(jnp.array([0.3, np.pi])))
    e0 = 9.81 * 0.5 * np.cos(0.3)  # m g l/2 cos(q), q = 0 upright
    np.testing.assert_allclose(e[0], e0, rtol=1e-4)
    assert q[0, 5] > 0.3 and qd[0, 5] > 0  # falls away from upright, towards positive q
    assert np.abs(q[0]).max() > 2.5  # swings through the bottom
    np.testing.assert_allclose(q[1], np.pi, atol=1e-9)  # hanging straight down is an equilibrium


def test_vmap_64_equals_single_steps_and_sharding():
    env = envs.make("pendulum")
    n = 64
    states = jax.jit(lambda k: envs.vector_reset(env, k, n))(jax.random.PRNGKey(1))
    actions = jax.random.uniform(jax.random.PRNGKey(2), (n, 1), env.model.dtype, -1, 1)
    vstep = jax.jit(lambda s, a: envs.vector_step(env, s, a))
    one = jax.jit(lambda s, a: env.step(s, a))
    bs, bo, br, bd, _ = vstep(states, actions)
    for i in range(n):
        si = jax.tree_util.tree_map(lambda x: x[i], states)
        s1, o1, r1, d1, _ = one(si, actions[i])
        np.testing.assert_allclose(np.asarray(bo[i]), np.asarray(o1), rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(float(br[i]), float(r1), rtol=1e-12)
        np.testing.assert_allclose(np.asarray(bs.q[i]), np.asarray(s1.q), rtol=1e-12, atol=1e-14)
    # VecEnv with the batch sharded over the devices gives the same result
    venv = envs.VecEnv(env, n, shard=True)
    assert venv.observation_size == 3 and venv.action_size == 1
    vs = venv.reset(jax.random.PRNGKey(1))  # eager: shard_batch places the batch
    np.testing.assert_array_equal(np.asarray(vs.q), np.asarray(states.q))
    ss, so, *_ = vstep(vs, actions)
    np.testing.assert_allclose(np.asarray(so), np.asarray(bo), rtol=1e-12, atol=1e-14)
    # typed keys and legacy keys give the same episode
    np.testing.assert_array_equal(
        np.asarray(env.reset(jax.random.key(5)).q), np.asarray(env.reset(jax.random.PRNGKey(5)).q)
    )


def test_float32_environment():
    env = envs.make("pendulum", dtype=jnp.float32)
    s = env.reset(jax.random.PRNGKey(0))
    s2, obs, r, d, _ = jax.jit(lambda s, a: env.step(s, a))(s, jnp.ones(1))
    assert obs.dtype == r.dtype == s2.q.dtype == jnp.float32 and np.isfinite(float(r))


def test_a_diverged_step_ends_the_episode_with_a_finite_reward():
    """A step that leaves the state non-finite (here a NaN torque) ends its episode with reward
    0 and a fresh, finite observation, in Env.step and through the Brax adapter (a NaN reward
    would make every PPO parameter NaN); nonfinite_step keeps the record and transition itself
    returns the step as computed."""
    env = envs.make("pendulum", dtype=jnp.float32)
    s = env.reset(jax.random.PRNGKey(0))
    nan = jnp.full(1, jnp.nan, jnp.float32)
    raw, r_raw, term_raw, _ = jax.jit(lambda s, a: env.transition(s, a))(s, nan)
    assert not np.isfinite(float(r_raw)) and not bool(term_raw)  # the pendulum never terminates itself
    s2, obs, r, d, info = jax.jit(lambda s, a: env.step(s, a))(s, nan)
    assert bool(d) and bool(info["terminated"]) and float(r) == 0.0
    assert np.all(np.isfinite(obs)) and np.all(np.isfinite(s2.q)) and int(s2.t) == 0
    assert int(s2.nonfinite_step) == 1 and np.isfinite(float(info["episode_return"]))
    s3, _, r3, d3, _ = jax.jit(lambda s, a: env.step(s, a))(s, jnp.ones(1, jnp.float32))
    assert not bool(d3) and np.isfinite(float(r3)) and int(s3.nonfinite_step) == -1
    pytest.importorskip("brax.envs.base", reason="Brax not installed (extra 'rl')")
    from jaxdyn.envs import adapters

    b = adapters.to_brax(env)
    bs = b.reset(jax.random.PRNGKey(0))
    bs2 = jax.jit(b.step)(bs, nan)
    assert float(bs2.done) == 1.0 and float(bs2.reward) == 0.0


def test_bad_input():
    with pytest.raises(ValueError, match="unknown environment 'nope'"):
        envs.make("nope")
    with pytest.raises(ValueError, match="dt"):
        envs.make("pendulum", dt=-0.1)
    with pytest.raises(ValueError, match="substeps"):
        envs.make("acrobot", substeps=0)
    with pytest.raises(ValueError, match="integrator"):
        envs.make("cartpole", integrator="leapfrog")
    with pytest.raises(ValueError, match="max_steps"):
        envs.make("pendulum", max_steps=0)
    with pytest.raises(ValueError, match="ee_frame 'nose'"):
        envs.make("panda_reach", ee_frame="nose")
    with pytest.raises(ValueError, match="single hinge"):
        envs.Pendulum(model=jaxdyn.load_robot("double_pendulum"))
    with pytest.raises(ValueError, match="already registered"):
        envs.register("pendulum", envs.Pendulum)
    with pytest.raises(ValueError, match="n must be"):
        envs.vector_reset(envs.make("pendulum"), jax.random.PRNGKey(0), 0)
    env = envs.make("pendulum")
    s = env.reset(jax.random.PRNGKey(0))
    with pytest.raises(ValueError, match=r"action must have shape \(1,\)"):
        env.step(s, jnp.zeros(2))
    with pytest.raises(ValueError, match="key"):
        env.reset(jnp.zeros(3, jnp.uint32))
    # an actuated joint without an effort limit cannot scale actions
    m = env.model.replace(effort_limit=jnp.full(1, jnp.inf))
    with pytest.raises(ValueError, match="'hinge' has no finite effort limit"):
        envs.Pendulum(model=m)
