"""Reference values for closed loops and couplings (tests/test_constraints.py), written to
tests/data/mujoco/constraints/reference.npz.

MuJoCo 4.0 (soft equality constraints, solref/solimp as written) on the models of
tests/data/mjcf/constraints/: a four-bar linkage (connect), a gripper whose fingers are coupled by
a joint equality with a polynomial and share a fixed tendon with a spring and a damper, a leg
whose knee is driven through a pushrod (connect, a spatial loop), and two chains joined by a weld
(torquescale, a wide solimp), and two fixed tendons coupled by a tendon equality. For each, at random states: ``qacc`` and the equality rows'
``efc_force`` and ``efc_pos`` of ``mj_forward``; for the four-bar, the gripper and the leg, a
1 s rollout of MuJoCo's Euler step (dt 2 ms, implicit joint damping).

Pinocchio 4.1 (hard constraints, ``constraintDynamics``) on the leg and the four-bar (a proximal
solve: the planar loop's out-of-plane row is redundant), built from MuJoCo's
compiled model (bodies, joint axes, inertias; MuJoCo's ``qpos0`` as Pinocchio's zero): the
joint accelerations and the contact force of the pushrod's 3D constraint, at the same states,
without stabilisation and with Baumgarte gains.

Run: ``python tests/reference/generate_mujoco_constraints.py`` (needs mujoco and pinocchio).
"""

import os

import mujoco
import numpy as np
import pinocchio as pin

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = os.path.join(HERE, "..", "data", "mjcf", "constraints")
OUT = os.path.join(HERE, "..", "data", "mujoco", "constraints")
NAMES = ("fourbar", "gripper", "leg", "weld", "tendons")
ROLLOUTS = ("fourbar", "gripper", "leg")
STEPS = 500
BAUMGARTE = (20.0, 5.0)


def _state(mm, name, rng):
    q = mm.qpos0.copy()
    if name == "weld":  # near the welded pose: the hinges and the ball
        q[:3] += 0.1 * rng.standard_normal(3)
        b = q[3:7] + 0.05 * rng.standard_normal(4)
        q[3:7] = b / np.linalg.norm(b)
    else:
        q += (0.01 if name == "gripper" else 0.1) * rng.standard_normal(mm.nq)  # fingers inside their range
    return q, rng.standard_normal(mm.nv)


def _pinocchio_model(mm):
    """Pinocchio's model of a MuJoCo model made of hinges (joint anchors at the body origins)."""
    model = pin.Model()
    model.gravity.linear = mm.opt.gravity.copy()
    last = {0: 0}  # MuJoCo body -> Pinocchio joint that moves it
    for b in range(1, mm.nbody):
        parent = last[mm.body_parentid[b]]
        place = pin.SE3(pin.Quaternion(*mm.body_quat[b]).matrix(), mm.body_pos[b].copy())
        for j in range(mm.body_jntadr[b], mm.body_jntadr[b] + mm.body_jntnum[b]):
            assert mm.jnt_type[j] == mujoco.mjtJoint.mjJNT_HINGE and not np.any(mm.jnt_pos[j])
            parent = model.addJoint(parent, pin.JointModelRevoluteUnaligned(mm.jnt_axis[j].copy()), place, f"j{j}")
            place = pin.SE3.Identity()
        Ri = pin.Quaternion(*mm.body_iquat[b]).matrix()
        inertia = pin.Inertia(mm.body_mass[b], mm.body_ipos[b].copy(), Ri @ np.diag(mm.body_inertia[b]) @ Ri.T)
        model.appendBodyToJoint(parent, inertia, pin.SE3.Identity())
        last[b] = parent
    return model, last


def _pinocchio_connect(mm, states, name, gain_sets, prox=(1e-14, 0.0, 1)):
    """Pinocchio's ``constraintDynamics`` of a MuJoCo model of hinges whose first equality is a
    connect: ``{name}_pin_qdd{tag}`` and ``{name}_pin_lambda{tag}`` per Baumgarte gain set."""
    model, last = _pinocchio_model(mm)
    data = model.createData()
    eq = 0
    b1, b2 = mm.eq_obj1id[eq], mm.eq_obj2id[eq]
    a1, a2 = mm.eq_data[eq, 0:3].copy(), mm.eq_data[eq, 3:6].copy()
    out = {}
    for tag, gains in gain_sets:
        cm = pin.RigidConstraintModel(
            pin.ContactType.CONTACT_3D,
            model,
            last[b1],
            pin.SE3(np.eye(3), a1),
            last[b2],
            pin.SE3(np.eye(3), a2),
            pin.ReferenceFrame.LOCAL,
        )
        cm.setBaumgarteCorrectorParameters(pin.BaumgarteCorrectorParameters(*gains))
        cd = cm.createData()
        models, datas = pin.StdVec_RigidConstraintModel(), pin.StdVec_RigidConstraintData()
        models.append(cm)
        datas.append(cd)
        pin.initConstraintDynamics(model, data, models, datas)
        settings = pin.ProximalSettings(*prox)
        qdd, lam = [], []
        for q, v in states:
            qp = q - mm.qpos0  # MuJoCo's qpos0 (the knee's ref) is Pinocchio's zero
            qdd.append(pin.constraintDynamics(model, data, qp, v, np.zeros(model.nv), models, datas, settings).copy())
            lam.append(data.lambda_c.copy())
        out[f"{name}_pin_qdd{tag}"] = np.array(qdd)
        out[f"{name}_pin_lambda{tag}"] = np.array(lam)
    return out


def main():
    os.makedirs(OUT, exist_ok=True)
    out = {"baumgarte": np.array(BAUMGARTE), "steps": STEPS}
    rng = np.random.default_rng(42)
    for name in NAMES:
        mm = mujoco.MjModel.from_xml_path(os.path.join(MODELS, f"{name}.xml"))
        d = mujoco.MjData(mm)
        qs, vs, acc, force, pos = [], [], [], [], []
        for _ in range(6):
            q, v = _state(mm, name, rng)
            d.qpos[:], d.qvel[:] = q, v
            mujoco.mj_forward(mm, d)
            assert d.nefc == d.ne, f"{name}: only equality rows expected (a limit is active)"
            qs.append(q)
            vs.append(v)
            acc.append(d.qacc.copy())
            force.append(d.efc_force.copy())
            pos.append(d.efc_pos.copy())
        out[f"{name}_qpos"], out[f"{name}_qvel"] = np.array(qs), np.array(vs)
        out[f"{name}_qacc"], out[f"{name}_force"], out[f"{name}_pos"] = np.array(acc), np.array(force), np.array(pos)
        if name == "leg":
            out.update(_pinocchio_connect(mm, list(zip(qs, vs)), "leg", (("", (0.0, 0.0)), ("_baumgarte", BAUMGARTE))))
        if name == "fourbar":  # planar: the connect's out-of-plane row is redundant, hence the proximal solve
            out.update(_pinocchio_connect(mm, list(zip(qs, vs)), "fourbar", (("", (0.0, 0.0)),), (1e-14, 1e-10, 200)))
        if name in ROLLOUTS:
            mujoco.mj_resetData(mm, d)
            d.qpos[:], d.qvel[:] = qs[0], 0.3 * vs[0]
            q_traj, v_traj = [d.qpos.copy()], [d.qvel.copy()]
            for _ in range(STEPS):
                mujoco.mj_step(mm, d)
                q_traj.append(d.qpos.copy())
                v_traj.append(d.qvel.copy())
            out[f"{name}_rollout_q"], out[f"{name}_rollout_qd"] = np.array(q_traj), np.array(v_traj)
            out[f"{name}_dt"] = mm.opt.timestep
    np.savez(os.path.join(OUT, "reference.npz"), **out)
    print("wrote", os.path.join(OUT, "reference.npz"), "mujoco", mujoco.__version__, "pinocchio", pin.__version__)


if __name__ == "__main__":
    main()
