"""Joint springs (MJCF ``stiffness`` / ``springref``) against MuJoCo: the spring torques at random
states, and the implicit Euler rollout of a sprung, damped chain step for step."""

import os
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxdyn
from jaxdyn import sim
from jaxdyn.io import mjcf as mj

HERE = os.path.dirname(__file__)
REF = np.load(os.path.join(HERE, "data", "mujoco", "springs", "reference.npz"))
SPRINGS = os.path.join(HERE, "data", "mjcf", "springs.xml")
HUMANOID = os.path.join(HERE, "data", "mjcf", "dm_control", "humanoid.xml")
ONLY_SPRINGS = sim.SimOptions(damping=False, friction=False, joint_limits=False, clip_effort=False)


def _load(path):
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # springs are modelled: nothing is dropped
        # but the contact law's parameters are named (dm_control's humanoid sets solref, solimp)
        warnings.filterwarnings("ignore", message=".*geom soft-contact parameters act with")
        return jaxdyn.load_mjcf(path)


@pytest.mark.parametrize("name, path", [("springs", SPRINGS), ("humanoid", HUMANOID)])
def test_spring_torques_match_mujoco(name, path):
    m = _load(path)
    qpos, ref = REF[f"{name}_qpos"], REF[f"{name}_qfrc_spring"]
    f = jax.jit(jax.vmap(lambda q: sim.passive_torques(m, q, jnp.zeros(m.nv), ONLY_SPRINGS)))
    tau = np.asarray(f(jnp.asarray(qpos)))
    # MuJoCo's generalized force on the free joint is zero for joint springs, so no conversion
    np.testing.assert_allclose(tau, ref, rtol=1e-12, atol=1e-12 * np.abs(ref).max())
    assert np.abs(ref).max() > 1.0


def test_springs_switch_off_and_ideal():
    m = _load(SPRINGS)
    q = jnp.asarray(REF["springs_qpos"][0])
    off = sim.passive_torques(m, q, jnp.zeros(m.nv), sim.SimOptions(springs=False, joint_limits=False, damping=False))
    assert float(jnp.abs(off).max()) == 0.0
    assert float(jnp.abs(sim.passive_torques(m, q, jnp.zeros(m.nv), sim.IDEAL)).max()) == 0.0
    # springref in degrees for hinges, metres for slides; the joint ref does not move it
    np.testing.assert_allclose(np.asarray(m.spring_reference), [np.deg2rad(20), np.deg2rad(-30), 0.02, 0.0])
    np.testing.assert_allclose(np.asarray(m.stiffness), [12.0, 4.0, 200.0, 0.5])


def test_implicit_euler_matches_mujoco_euler_with_springs():
    m = _load(SPRINGS)
    opts = sim.SimOptions(friction=False, joint_limits=False, clip_effort=False)
    dt = float(REF["rollout_dt"])
    q_ref, qd_ref = REF["rollout_q"], REF["rollout_qd"]
    traj = jax.jit(lambda q0, v0, u: sim.rollout(m, q0, v0, u, dt, options=opts))(
        jnp.asarray(q_ref[0]),
        mj.velocity_from_mujoco(m, jnp.asarray(q_ref[0]), jnp.asarray(qd_ref[0])),
        jnp.asarray(REF["rollout_tau"]),
    )
    assert int(traj.nonfinite_step) == -1
    np.testing.assert_allclose(np.asarray(traj.q), q_ref, rtol=0, atol=1e-11)
    np.testing.assert_allclose(np.asarray(traj.qd), qd_ref, rtol=0, atol=1e-10)


def test_ball_joint_spring_is_dropped_with_a_warning():
    xml = """<mujoco><worldbody><body pos="0 0 1"><joint name="b" type="ball" stiffness="3"/>
      <geom type="sphere" size="0.1" pos="0.2 0 0"/></body></worldbody></mujoco>"""
    with pytest.warns(UserWarning, match="stiffness of ball and free joints.*b"):
        m = jaxdyn.load_mjcf(xml)
    assert float(jnp.abs(m.stiffness).max()) == 0.0
