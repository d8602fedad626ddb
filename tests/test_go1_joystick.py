"""The Go1 joystick task on MuJoCo Playground's scene (:class:`jaxdyn.envs.MJCFJoystick`) against
MuJoCo 4.0 (data: ``tests/reference/generate_mujoco_go1_joystick.py``).

MuJoCo ran the shipped scene with its own options (Euler at 4 ms, one Newton iteration,
pyramidal cone, the joints' frictionloss as constraints) from the ``home`` keyframe for 2 s
under ``home``'s ``ctrl`` plus sinusoids on the legs (a squat of about 5 cm, a sway and a pitch
of up to 9 degrees, base speeds up to 0.34 m/s, 0.19 m/s root mean square), the ``ctrl`` held over each 20 ms control step.
The environment steps the same ``ctrl`` as actions (``ctrl = default_pose + 0.5 a``) with its
own physics (jaxdyn's ``implicit_euler``, MuJoCo's soft contact law, jaxdyn's friction). Measured
over the 100 control steps, in float32 (float64 within 0.1 mm and 1 mm/s of it):

* stance height (the base's ``z``): within 4.6 mm of MuJoCo's; asserted 8 mm;
* base orientation: within 0.029 rad (1.7 degrees); asserted 0.05 rad;
* base velocity (the IMU's velocimeter, what the task observes and rewards): within 0.09 m/s at
  every step, 0.038 m/s root mean square; asserted 0.15 m/s and 0.05 m/s;
* base angular velocity (the gyro): 0.15 rad/s root mean square (peaks up to 0.83 rad/s at
  the feet's impacts); asserted 0.25 rad/s root mean square;
* the horizontal drift of the base: within 12 mm; asserted 25 mm.

The differences are the friction laws (MuJoCo's pyramidal cone and its joint frictionloss
constraints solved with one Newton iteration, jaxdyn's regularised friction) and the implicit
joint damping, which MuJoCo's Euler step treats explicitly here (``eulerdamp`` disabled).
"""

from __future__ import annotations

import os

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxdyn import spatial
from jaxdyn.envs import MJCFJoystick, make, randomize
from jaxdyn.io.mjcf import velocity_from_mujoco

HERE = os.path.dirname(os.path.abspath(__file__))
REF = os.path.join(HERE, "data", "mujoco", "go1_joystick", "reference.npz")

HEIGHT_TOL = 8e-3  # m
ANGLE_TOL = 0.05  # rad
VEL_MAX_TOL, VEL_RMS_TOL = 0.15, 0.05  # m/s
GYRO_RMS_TOL = 0.25  # rad/s
DRIFT_TOL = 0.025  # m


@pytest.fixture(scope="module")
def ref():
    return dict(np.load(REF))


def _sensor(ref, name):
    names = [str(n) for n in ref["sensor_names"]]
    i = names.index(name)
    a, d = int(ref["sensor_adr"][i]), int(ref["sensor_dim"][i])
    return ref["sensordata"][:, a : a + d]


def _run(env, ref):
    """The environment from ``home`` at rest under MuJoCo's ``ctrl`` as actions: per control
    step ``q``, ``qd`` and the observation (one compiled scan)."""
    dt = env.model.dtype
    s0 = env.reset(jax.random.PRNGKey(0))
    s0 = eqx.tree_at(lambda s: (s.q, s.qd), s0, (jnp.asarray(ref["qpos"][0], dt), jnp.zeros(18, dt)))
    actions = (jnp.asarray(ref["ctrl"], dt) - env.q_default) / env.action_scale

    def body(s, a):
        s2, _, _, _ = env.transition(s, a)
        return s2, (s2.q, s2.qd, env.observation(s2))

    return jax.tree_util.tree_map(np.asarray, jax.jit(lambda s, a: jax.lax.scan(body, s, a)[1])(s0, actions))


def _check_against_mujoco(q, obs, ref, scale=1.0):
    qm = ref["qpos"][1:]
    dz = np.abs(q[:, 2] - qm[:, 2])
    assert dz.max() < scale * HEIGHT_TOL, f"stance height off MuJoCo's by {1e3 * dz.max():.2f} mm"
    dot = np.clip(np.abs(np.sum(q[:, 3:7] * qm[:, 3:7], 1)) / np.linalg.norm(q[:, 3:7], axis=1), 0, 1)
    angle = 2 * np.arccos(dot)
    assert angle.max() < scale * ANGLE_TOL, f"orientation off MuJoCo's by {angle.max():.4f} rad"
    dv = np.linalg.norm(obs[:, 0:3] - _sensor(ref, "local_linvel")[1:], axis=1)
    assert dv.max() < scale * VEL_MAX_TOL, f"base velocity off MuJoCo's by {dv.max():.3f} m/s"
    assert np.sqrt(np.mean(dv**2)) < scale * VEL_RMS_TOL
    dw = np.linalg.norm(obs[:, 3:6] - _sensor(ref, "gyro")[1:], axis=1)
    assert np.sqrt(np.mean(dw**2)) < scale * GYRO_RMS_TOL, f"gyro off MuJoCo's by {np.sqrt(np.mean(dw**2)):.3f} rms"
    drift = np.linalg.norm(q[:, :2] - qm[:, :2], axis=1)
    assert drift.max() < scale * DRIFT_TOL
    # the motion checked is larger than the tolerances
    speed = np.linalg.norm(_sensor(ref, "local_linvel")[1:], axis=1)
    assert np.ptp(qm[:, 2]) > 5 * HEIGHT_TOL and np.sqrt(np.mean(speed**2)) > 3 * VEL_RMS_TOL


def test_trajectory_follows_mujoco_float32(ref):
    env = MJCFJoystick(dtype=jnp.float32)
    assert env.dt == pytest.approx(float(ref["ctrl_dt"])) and env.substeps == int(ref["substeps"])
    np.testing.assert_allclose(np.asarray(env.q_default), ref["home_ctrl"], atol=1e-7)
    q, qd, obs = _run(env, ref)
    assert np.all(np.isfinite(q)) and np.all(np.isfinite(qd))
    _check_against_mujoco(q, obs, ref)
    # the observation's joint part is the state's; the gravity part is the orientation's
    np.testing.assert_allclose(obs[:, 12:24], q[:, 7:] - ref["home_ctrl"], atol=1e-6)
    np.testing.assert_allclose(obs[:, 24:36], qd[:, 6:], atol=1e-6)
    up = _sensor(ref, "upvector")[1:]  # the IMU's z axis in the world: its z is -gravity_z in the IMU frame
    np.testing.assert_allclose(-obs[:, 8], up[:, 2], atol=2 * ANGLE_TOL**2)


def test_observation_reads_the_scene_sensors_at_mujoco_states(ref):
    """At MuJoCo's own states, the observation's base velocity, gyro and gravity are MuJoCo's
    sensordata (``local_linvel``, ``gyro``, ``orientation``) to float32 precision."""
    env = MJCFJoystick(dtype=jnp.float32)
    s0 = env.reset(jax.random.PRNGKey(1))
    qpos = jnp.asarray(ref["qpos"], jnp.float32)
    qd = jax.vmap(lambda p, v: velocity_from_mujoco(env.model, p, v))(qpos, jnp.asarray(ref["qvel"], jnp.float32))
    obs = np.asarray(
        jax.jit(jax.vmap(lambda q, v: env.observation(eqx.tree_at(lambda s: (s.q, s.qd), s0, (q, v)))))(qpos, qd)
    )
    np.testing.assert_allclose(obs[:, 0:3], _sensor(ref, "local_linvel"), atol=2e-5)
    np.testing.assert_allclose(obs[:, 3:6], _sensor(ref, "gyro"), atol=2e-5)
    quat = _sensor(ref, "orientation")
    w, x, y, z = quat.T
    gravity = -np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], 1)  # -R^T e_z
    np.testing.assert_allclose(obs[:, 6:9], gravity, atol=2e-5)


def test_trajectory_follows_mujoco_float64(ref):
    env = MJCFJoystick(dtype=jnp.float64)
    q, qd, obs = _run(env, ref)
    _check_against_mujoco(q, obs, ref)


def test_bad_scene_sensor_is_named():
    with pytest.raises(ValueError, match="no sensor named 'imu_gyro'"):
        MJCFJoystick(sensor_names={"gyro": "imu_gyro"})
    with pytest.raises(ValueError, match="unknown sensor roles"):
        MJCFJoystick(sensor_names={"accel": "accelerometer"})


def test_reset_action_and_randomisation():
    """An episode starts at ``home`` turned about the vertical; an action ``a`` commands the
    servos ``ctrl = home + 0.5 a`` (torque ``kp (ctrl - q)`` within the force ranges at rest);
    a randomised draw scales the servos and sets the floor's friction."""
    env = make("go1_joystick")
    home = np.asarray(env.home_q)
    s = env.reset(jax.random.PRNGKey(3))
    q = np.asarray(s.q)
    np.testing.assert_allclose(q[[0, 1, 2]], home[[0, 1, 2]], atol=1e-7)
    np.testing.assert_allclose(q[7:], home[7:], atol=1e-7)
    R = np.asarray(spatial.quat_to_rotation(s.q[3:7]))
    assert abs(R[2, 2] - 1) < 1e-6 and abs(q[6]) > 1e-3  # a heading, no tilt
    a = jnp.linspace(-1.0, 1.0, 12)
    tau, ctrl, applied = env.actuation(env.step_model(), jnp.asarray(home), jnp.zeros(18), a)
    assert tau is None
    np.testing.assert_allclose(np.asarray(ctrl), home[7:] + 0.5 * np.asarray(a), atol=1e-6)
    bound = np.tile([23.7, 23.7, 35.55], 4)
    np.testing.assert_allclose(np.asarray(applied[6:]), np.clip(35.0 * 0.5 * np.asarray(a), -bound, bound), rtol=1e-5)
    params = randomize(env, jax.random.PRNGKey(4), 2)
    p0 = jax.tree_util.tree_map(lambda x: x[0], params)
    e0 = env.with_params(p0)
    s0 = np.asarray(p0.motor_strength)
    assert np.all((s0 >= 0.8) & (s0 <= 1.2)) and np.ptp(s0) > 0
    np.testing.assert_allclose(np.asarray(e0.step_model().actuators.gain[:, 0]), 35.0 * s0, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(e0.step_model().actuators.force_range[:, 1]), bound * s0, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(e0.torque_limit), bound, rtol=1e-6)  # at nominal strength
    mu = float(p0.contact.ground.friction)
    assert 0.4 <= mu <= 1.25 and mu != pytest.approx(0.6)
