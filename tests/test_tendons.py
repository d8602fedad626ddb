"""Tendon transmissions, spatial tendons through sites and tendon limits against MuJoCo 4.0
(tests/reference/generate_mujoco_tendons.py; MuJoCo is not needed here):

* a 3D arm (tests/data/mjcf/constraints/tendon_drive.xml) with a fixed tendon and two spatial ones,
  two limited, one coupled by a tendon equality, actuators on the three tendons (one tendon's
  total actuator force bounded by its actuatorfrcrange) and on a joint:
  tendon lengths and Jacobians, the actuators' lengths, velocities, forces and joint torques,
  the passive forces, the accelerations and the equality and limit forces, at states where the
  limits act and where they do not;
* Menagerie's Franka Emika Panda with its hand (fingers coupled by a joint equality, driven
  through a fixed tendon by a servo): accelerations and the coupling's force under controls;
* gradients of the accelerations against finite differences, float32, bad input named.
"""

import os
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.test_util import check_grads

import jaxdyn
from jaxdyn import actuators, sim
from jaxdyn import constraints as C
from jaxdyn.io.mjcf import MJCFError

HERE = os.path.dirname(__file__)
REF = np.load(os.path.join(HERE, "data", "mujoco", "tendons", "reference.npz"))
DRIVE = os.path.join(HERE, "data", "mjcf", "constraints", "tendon_drive.xml")
PANDA = os.path.join(HERE, "data", "mjcf", "menagerie", "franka_emika_panda", "panda.xml")
OPTS = sim.SimOptions(friction=False, joint_limits=False)  # MuJoCo's joint limits are constraints


def _inputs(prefix, dtype=jnp.float64, keys=("qpos", "qvel", "ctrl", "act")):
    return tuple(jnp.asarray(REF[f"{prefix}_{k}"], dtype) for k in keys)


def _drive_values(m):
    def one(q, v, u, a):
        L, JT = C.tendon_kinematics(m, q)
        tree = m.replace(constraints=m.constraints.tendons_only())
        a0 = sim.forward_dynamics(tree, q, v, jnp.zeros(m.nv, m.dtype), options=OPTS, ctrl=u, act=a)
        sol = C.solve(m, q, v, a0)  # what sim.forward_dynamics returns: sol.qdd
        return dict(
            ten_length=L,
            ten_J=JT,
            actuator_length=actuators.lengths(m, q),
            actuator_velocity=actuators.velocities(m, q, v),
            actuator_force=actuators.forces(m, q, v, u, a),
            qfrc_actuator=actuators.joint_torques(m, q, v, u, a),
            qfrc_passive=sim.passive_torques(m, q, v, OPTS),
            qacc=sol.qdd,
            force=sol.force,
        )

    return jax.jit(jax.vmap(one))


def test_tendon_drive_matches_mujoco():
    """The accelerations are those of sim.forward_dynamics (its constrained solve from the
    acceleration of every other force; the gradient test checks the two equal), vmapped over the
    states."""
    m = jaxdyn.load_mjcf(DRIVE)
    assert m.constraints.tendon_limited == (True, True, False) and m.actuators.tendon == (0, 1, 2, -1)
    out = _drive_values(m)(*_inputs("drive"))
    for k, v in out.items():
        if k == "force":
            continue
        ref = REF[f"drive_{k}"]
        # measured: 8e-16 of the largest value (forces 2e-15)
        np.testing.assert_allclose(np.asarray(v), ref, rtol=0, atol=1e-12 * max(1.0, np.abs(ref).max()), err_msg=k)
    ref_force = np.concatenate([REF["drive_eq_force"], REF["drive_limit_force"]], axis=1)
    np.testing.assert_allclose(np.asarray(out["force"]), ref_force, rtol=0, atol=1e-10 * np.abs(ref_force).max())
    limit = REF["drive_limit_force"]
    assert np.all((limit > 0).sum(0) >= 2) and np.all((limit == 0).sum(0) >= 1)  # limits on and off


def _panda(dtype=None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # its mesh files are not shipped: those geoms do not collide
        return jaxdyn.load_mjcf(PANDA, dtype=dtype)


def test_panda_with_hand_matches_mujoco():
    m = _panda()
    assert m.actuators.tendon[-1] == 0 and m.constraints.tendon_names == ("split",)

    def one(q, v, u):
        tree = m.replace(constraints=m.constraints.tendons_only())
        sol = C.solve(m, q, v, sim.forward_dynamics(tree, q, v, jnp.zeros(m.nv), options=OPTS, ctrl=u))
        return sol.qdd, sol.force, actuators.joint_torques(m, q, v, u), actuators.lengths(m, q)

    qdd, force, qfrc, length = jax.jit(jax.vmap(one))(*_inputs("panda", keys=("qpos", "qvel", "ctrl")))
    ref = REF["panda_qacc"]
    # measured: 7e-15 of the largest acceleration, the coupling's force to 2e-14 of the largest
    np.testing.assert_allclose(np.asarray(qdd), ref, rtol=0, atol=1e-11 * np.abs(ref).max())
    f = REF["panda_efc_force"]
    np.testing.assert_allclose(np.asarray(force), f, rtol=0, atol=1e-10 * np.abs(f).max())
    np.testing.assert_allclose(np.asarray(qfrc), REF["panda_qfrc_actuator"], rtol=0, atol=1e-10)
    np.testing.assert_allclose(np.asarray(length), REF["panda_actuator_length"], rtol=0, atol=1e-14)


def test_gradients_through_spatial_tendons_limits_and_tendon_actuators():
    """Forward and reverse mode of the accelerations against finite differences, at a state where
    the fixed tendon's limit acts (inside solimp's width its impedance varies with q)."""
    m = jaxdyn.load_mjcf(DRIVE)
    q, v, u, a = (x[3] for x in _inputs("drive"))
    assert REF["drive_limit_force"][3, 0] > 0 and REF["drive_limit_force"][3, 1] == 0
    f = jax.jit(lambda q, v: sim.forward_dynamics(m, q, v, jnp.zeros(m.nv), options=OPTS, ctrl=u, act=a))
    np.testing.assert_allclose(
        np.asarray(f(q, v)), REF["drive_qacc"][3], rtol=0, atol=1e-12 * np.abs(REF["drive_qacc"]).max()
    )
    check_grads(f, (q, v), order=1, modes=("fwd", "rev"), eps=1e-6, atol=1e-5, rtol=1e-5)


def test_tendon_kinematics_gradient_quick():
    """The cheap counterpart of the gradient test: the spatial tendons' lengths and the tendon
    actuators' torques against finite differences."""
    m = jaxdyn.load_mjcf(DRIVE)
    q, v, u, a = (x[2] for x in _inputs("drive"))
    tau = jax.jit(lambda q, v: actuators.joint_torques(m, q, v, u, a) + C.tendon_kinematics(m, q)[0].sum())
    check_grads(tau, (q, v), order=1, modes=("rev",), eps=1e-6, atol=1e-6, rtol=1e-6)


def test_float32_is_usable():
    m = jaxdyn.load_mjcf(DRIVE, dtype=jnp.float32)
    out = _drive_values(m)(*_inputs("drive", jnp.float32))
    qacc, ref = np.asarray(out["qacc"]), REF["drive_qacc"]
    assert qacc.dtype == np.float32
    # measured: 3e-7 of the largest acceleration
    np.testing.assert_allclose(qacc, ref, rtol=0, atol=1e-5 * np.abs(ref).max())


def test_panda_gripper_closes_under_its_servo():
    """A 0.2 s rollout of the Panda's hand under the gripper's servo (ctrl 0: closed): the fingers
    close together, held equal by the coupling, in MuJoCo's Euler step with implicit damping."""
    m = _panda()
    q0 = jnp.asarray(REF["panda_qpos"][0]).at[7:].set(0.03)
    ctrl = jnp.tile(jnp.asarray(REF["panda_qpos"][0][:8]).at[7].set(0.0), (100, 1))
    ctrl = ctrl.at[:, :7].set(q0[:7])
    tr = jax.jit(lambda q0: sim.rollout(m, q0, jnp.zeros(m.nv), None, 0.002, options=OPTS, ctrl=ctrl))(q0)
    fingers = np.asarray(tr.q[:, 7:])
    assert fingers[-1, 0] < 0.02 and np.all(np.isfinite(np.asarray(tr.q)))
    np.testing.assert_allclose(fingers[:, 0], fingers[:, 1], atol=2e-4)


BAD = [
    (
        '<tendon><spatial name="w"><site site="a"/><geom geom="g"/><site site="b"/></spatial></tendon>',
        "spatial tendon's <geom> .wrapping around geoms, pulleys. is not supported",
    ),
    (
        '<tendon><spatial name="w"><site site="a"/><pulley divisor="2"/><site site="b"/></spatial></tendon>',
        "spatial tendon's <pulley>",
    ),
    ('<tendon><spatial name="w"><site site="a"/><site site="nosite"/></spatial></tendon>', "site 'nosite' does not"),
    ('<tendon><spatial name="w"><site site="a"/></spatial></tendon>', "needs at least two sites"),
    ('<tendon><spatial name="w" margin="0.1"><site site="a"/><site site="b"/></spatial></tendon>', "tendon margin"),
    ('<actuator><motor tendon="nothing"/></actuator>', "tendon 'nothing' is not defined"),
]


@pytest.mark.parametrize("extra, message", BAD)
def test_bad_tendons_are_named(extra, message):
    xml = (
        '<mujoco><worldbody><site name="a" pos="0 0 1"/><body name="b"><joint name="j" axis="0 1 0"/>'
        f'<geom name="g" size="0.1"/><site name="b" pos="0 0 0.2"/></body></worldbody>{extra}</mujoco>'
    )
    with pytest.raises(MJCFError, match=message):
        jaxdyn.load_mjcf(xml)
