"""Actuators (jaxdyn.actuators) against MuJoCo on the same MJCF scenes (tests/data/mujoco/actuators/,
written and simulated by tests/reference/generate_mujoco_actuators.py; MuJoCo is not needed here).

* ``actuator_force`` and ``qfrc_actuator`` at random states, controls beyond the control ranges
  and random activations: a fixed-base arm with every supported kind (position servo saturating
  at its force range, velocity servo, geared motor, general affine gain and bias behind a filter,
  integrated-velocity servo with an activation range, a damper sharing a joint) and Playground's
  Go1 (twelve position servos with ``inheritrange``, free base);
* a 400-step rollout of the arm under MuJoCo's ``implicitfast`` integrator (the servos' ``kv``
  implicit, as in jaxdyn's ``"implicit_euler"`` step), activations included.
"""

import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import actuator_points

import jaxdyn
from jaxdyn import actuators, sim
from jaxdyn.io.mjcf.convert import velocity_from_mujoco

HERE = os.path.join(os.path.dirname(__file__), "data", "mujoco", "actuators")


def _load(name, dtype=jnp.float64):
    return jaxdyn.load_mjcf(os.path.join(HERE, f"{name}.xml"), dtype=dtype), np.load(os.path.join(HERE, f"{name}.npz"))


@pytest.mark.parametrize("name", ["arm", "go1"])
def test_forces_equal_mujocos(name):
    model, ref = _load(name)
    assert model.nu == ref["points_ctrl"].shape[1]
    for qpos, qvel, ctrl, act, force, qfrc in actuator_points(ref):
        qd = velocity_from_mujoco(model, qpos, qvel)
        a = act if model.actuators.na else None
        np.testing.assert_allclose(actuators.forces(model, qpos, qd, ctrl, a), force, rtol=1e-12, atol=1e-12)
        tau = actuators.joint_torques(model, qpos, qd, ctrl, a)
        # the hinge and slide dofs are MuJoCo's; the free base carries no actuator
        np.testing.assert_allclose(
            tau[model.nv - qfrc.size + (6 if model.floating_base else 0) :],
            qfrc[-(model.nv - 6 if model.floating_base else model.nv) :],
            atol=1e-12,
        )


def test_go1_servos_read_their_control_range_from_the_joints():
    model, _ = _load("go1")
    acts = model.actuators
    lo, hi = np.asarray(model.q_lower)[list(acts.qpos)], np.asarray(model.q_upper)[list(acts.qpos)]
    # inheritrange="1": the control range is the joint's range
    np.testing.assert_allclose(acts.ctrl_range, np.stack([lo, hi], axis=1))
    np.testing.assert_allclose(acts.gain[:, 0], 35.0)
    np.testing.assert_allclose(acts.bias[:, 1], -35.0)


def test_rollout_equals_mujocos_implicitfast():
    model, ref = _load("arm")
    traj = sim.rollout(model, ref["rollout_qpos"][0], ref["rollout_qvel"][0], None, 0.002, ctrl=ref["rollout_ctrl"])
    np.testing.assert_allclose(traj.act, ref["rollout_act"], atol=1e-10)
    np.testing.assert_allclose(traj.q, ref["rollout_qpos"], atol=1e-9)
    np.testing.assert_allclose(traj.qd, ref["rollout_qvel"], atol=1e-8)


def test_rollout_float32_is_usable():
    model, ref = _load("arm", jnp.float32)
    traj = sim.rollout(model, ref["rollout_qpos"][0], ref["rollout_qvel"][0], None, 0.002, ctrl=ref["rollout_ctrl"])
    np.testing.assert_allclose(traj.q, ref["rollout_qpos"], atol=2e-4)


def test_step_returns_the_activation_and_batches():
    model, ref = _load("arm")
    q, qd = ref["rollout_qpos"][0], ref["rollout_qvel"][0]
    ctrl = jnp.asarray(ref["rollout_ctrl"][:8])
    one_step = lambda u: sim.step(model, q, qd, None, 0.002, ctrl=u)  # noqa: E731
    q1, qd1, act1 = jax.jit(jax.vmap(one_step))(ctrl)
    assert q1.shape == (8, model.nq) and act1.shape == (8, model.actuators.na)
    one = jax.jit(one_step)(ctrl[3])
    np.testing.assert_allclose(q1[3], one[0], atol=1e-14)
    np.testing.assert_allclose(act1[3], one[2], atol=1e-14)


def test_gradients_through_the_servos_are_finite_and_exact():
    model, ref = _load("arm")
    q0, qd0 = ref["rollout_qpos"][0], ref["rollout_qvel"][0]

    def rollout_end(u):
        return sim.rollout(model, q0, qd0, None, 0.002, ctrl=u).q[-1].sum()

    final = jax.jit(rollout_end)  # one program for both sides of the central difference
    u = jnp.asarray(ref["rollout_ctrl"][:20]) * 0.3  # inside every range: smooth
    g = jax.jit(jax.grad(rollout_end))(u)
    assert np.all(np.isfinite(g))
    e = np.zeros(u.shape)
    e[5, 2] = 1e-6
    fd = (final(u + e) - final(u - e)) / 2e-6
    np.testing.assert_allclose(g[5, 2], fd, rtol=1e-6)


def test_torques_and_ctrl_add():
    model, ref = _load("arm")
    q, qd, ctrl = ref["points_qpos"][0], ref["points_qvel"][0], ref["points_ctrl"][0]
    act = ref["points_act"][0]
    tau = np.linspace(-1, 1, model.nv)
    both = sim.forward_dynamics(model, q, qd, tau, ctrl=ctrl, act=act, options=sim.IDEAL)
    alone = sim.forward_dynamics(
        model, q, qd, tau + actuators.joint_torques(model, q, qd, ctrl, act), options=sim.IDEAL
    )
    np.testing.assert_allclose(both, alone, atol=1e-12)


def test_bad_ctrl_and_missing_actuators_are_named():
    model, ref = _load("arm")
    q, qd = ref["points_qpos"][0], ref["points_qvel"][0]
    with pytest.raises(ValueError, match=r"ctrl must have shape \(6,\)"):
        sim.step(model, q, qd, None, 0.002, ctrl=np.zeros(5))
    with pytest.raises(ValueError, match=r"act must have shape \(2,\)"):
        sim.step(model, q, qd, None, 0.002, ctrl=np.zeros(6), act=np.zeros(3))
    with pytest.raises(ValueError, match="act .* without ctrl"):
        sim.step(model, q, qd, np.zeros(5), 0.002, act=np.zeros(2))
    panda = jaxdyn.load_robot("panda").replace(actuators=None)
    with pytest.raises(ValueError, match="model 'panda' has no actuators"):
        sim.step(panda, jaxdyn.neutral(panda), np.zeros(panda.nv), None, 0.002, ctrl=np.zeros(1))
    with pytest.raises(KeyError, match="no actuator named 'x'.*servo1"):
        model.actuators.index("x")


@pytest.mark.parametrize(
    "actuator, message",
    [
        (
            '<general name="f" joint="j" dyntype="filter" dynprm="0"/>',
            "<general name='f'>: the activation time constant",
        ),
        ('<motor name="m" joint="j" ctrlrange="1 -1"/>', "<motor name='m'>: ctrlrange .* lower bound above"),
    ],
)
def test_undefined_actuators_are_refused_by_name(actuator, message):
    xml = f"""<mujoco><worldbody><body><joint name="j" axis="0 1 0"/><geom size="0.1" mass="1"/></body>
    </worldbody><actuator>{actuator}</actuator></mujoco>"""
    with pytest.raises(jaxdyn.MJCFError, match=message):
        jaxdyn.load_mjcf(xml)


@pytest.mark.parametrize(
    "actuator, message",
    [
        ('<muscle joint="j"/>', r"<muscle> \(actuator 1\): <muscle> actuators are not modelled"),
        ('<general name="g" joint="j" gaintype="muscle"/>', "<general name='g'>: gaintype 'muscle' is not modelled"),
        ('<general name="g" joint="j" dyntype="muscle"/>', "<general name='g'>: dyntype 'muscle' is not modelled"),
    ],
)
def test_unmodelled_actuators_load_without_actuators_and_say_which(actuator, message):
    xml = f"""<mujoco><worldbody><body><joint name="j" axis="0 1 0"/><geom size="0.1" mass="1"/></body>
    </worldbody><actuator><motor name="first" joint="j"/>{actuator}</actuator></mujoco>"""
    with pytest.warns(UserWarning, match=message + ".*the model has no actuators"):
        model = jaxdyn.load_mjcf(xml)
    assert model.actuators is None and model.nu == 0


def test_dampratio_is_warned_about_by_name():
    xml = """<mujoco><worldbody><body><joint name="j" axis="0 1 0"/><geom size="0.1" mass="1"/></body>
    </worldbody><actuator><position name="p" joint="j" kp="10" dampratio="1"/></actuator></mujoco>"""
    with pytest.warns(UserWarning, match="<position name='p'>: dampratio is not modelled"):
        jaxdyn.load_mjcf(xml)


URDF = """<robot name="r">
  <link name="base"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="a"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="b"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="j1" type="revolute"><parent link="base"/><child link="a"/><axis xyz="0 0 1"/>
    <limit effort="30" velocity="1" lower="-1" upper="1"/></joint>
  <joint name="j2" type="prismatic"><parent link="a"/><child link="b"/><axis xyz="1 0 0"/>
    <limit effort="100" velocity="1" lower="-1" upper="1"/></joint>
  {transmissions}
</robot>"""


def test_urdf_motors_one_per_joint_or_from_transmissions():
    model = jaxdyn.load_urdf(URDF.format(transmissions=""))
    assert model.actuators.names == ("j1", "j2") and model.actuators.dof == (0, 1)
    np.testing.assert_allclose(model.actuators.gear, [1.0, 1.0])
    trans = """<transmission name="t2"><type>transmission_interface/SimpleTransmission</type>
      <joint name="j2"><hardwareInterface>EffortJointInterface</hardwareInterface></joint>
      <actuator name="m2"><mechanicalReduction>50</mechanicalReduction></actuator></transmission>"""
    model = jaxdyn.load_urdf(URDF.format(transmissions=trans))
    assert model.actuators.names == ("m2",) and model.actuators.dof == (1,)
    q, qd = np.zeros(2), np.zeros(2)
    # the motor's torque times the reduction, bounded by the joint's effort limit in the step
    np.testing.assert_allclose(actuators.joint_torques(model, q, qd, np.array([0.5])), [0.0, 25.0])
    clip_only = sim.SimOptions(damping=False, friction=False, joint_limits=False, springs=False)
    _, tau = sim.dynamics.forces(model, q, qd, None, clip_only, np.array([3.0]))
    np.testing.assert_allclose(tau, [0.0, 100.0])


def test_urdf_transmissions_not_modelled_are_named():
    bad = """<transmission name="t"><joint name="nope"/><actuator name="m"/></transmission>"""
    two = """<transmission name="d"><joint name="j1"/><joint name="j2"/><actuator name="m"/></transmission>"""
    shared = """<transmission name="s1"><joint name="j1"/><actuator name="hand"/></transmission>
      <transmission name="s2"><joint name="j2"/><actuator name="hand"/></transmission>"""
    with pytest.warns(
        UserWarning, match=r"<transmission name='t'> \(joint 'nope' is not .*<transmission name='d'> \(2"
    ):
        model = jaxdyn.load_urdf(URDF.format(transmissions=bad + two))
    assert model.actuators is None
    with pytest.warns(UserWarning, match="several joints, one control per joint here: hand"):
        model = jaxdyn.load_urdf(URDF.format(transmissions=shared))
    assert model.actuators.names == ("hand/j1", "hand/j2")
    bad_gear = """<transmission name="g"><joint name="j1"/><actuator name="m">
      <mechanicalReduction>abc</mechanicalReduction></actuator></transmission>"""
    with pytest.raises(jaxdyn.URDFError, match="<transmission name='g'>: mechanicalReduction 'abc'"):
        jaxdyn.load_urdf(URDF.format(transmissions=bad_gear))
