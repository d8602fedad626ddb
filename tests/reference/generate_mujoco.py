"""Generate stored MuJoCo rollouts for tests/test_sim.py (MuJoCo is NOT a jaxdyn dependency).

    refenv/bin/pip install mujoco            # 4.x, never a jaxdyn dependency
    refenv/bin/python tests/reference/generate_mujoco.py [--out tests/data/mujoco]

MuJoCo loads the same URDF files that jaxdyn ships (jaxdyn/robots/*.urdf). Both sides model the
same thing only where the physics coincide, so the reference rollouts use:
* fixed-base robots (MuJoCo's free joint uses a world-frame linear velocity, jaxdyn Pinocchio's
  body-frame twist; fixed base avoids a convention conversion in the reference);
* contacts, joint limits and equality constraints (URDF mimic) disabled (MuJoCo's are hard constraints, jaxdyn's soft springs);
* no Coulomb friction (MuJoCo's ``frictionloss`` is a constraint, jaxdyn's a smooth tanh);
* viscous joint damping and armature set to the same values on both sides;
* integrators: MuJoCo ``RK4`` (explicit damping) <-> jaxdyn ``"rk4"``, and MuJoCo ``Euler`` with
  ``eulerdamp`` disabled (semi-implicit: velocity then position) <-> ``"semi_implicit_euler"``.
Torques are smooth sinusoids applied through ``qfrc_applied``. One NPZ per case, with the joint
names in MuJoCo's order so the test maps by name.
"""

from __future__ import annotations

import argparse
import os

import mujoco
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROBOTS = os.path.join(HERE, "..", "..", "jaxdyn", "robots")

CASES = [
    # name, robot, integrator, dt, steps, damping, armature
    ("double_pendulum_rk4", "double_pendulum", "rk4", 1e-3, 1000, 0.02, 0.001),
    ("double_pendulum_euler", "double_pendulum", "semi_implicit_euler", 1e-3, 1000, 0.02, 0.001),
    ("ur5_rk4", "ur5", "rk4", 2e-3, 500, 0.5, 0.1),
    ("panda_rk4", "panda", "rk4", 2e-3, 500, 0.3, 0.05),
    ("panda_euler", "panda", "semi_implicit_euler", 1e-3, 500, 0.3, 0.05),
]


def run_case(name, robot, integrator, dt, steps, damping, armature, seed):
    m = mujoco.MjModel.from_xml_path(os.path.join(ROBOTS, f"{robot}.urdf"))
    m.opt.timestep = dt
    m.opt.integrator = mujoco.mjtIntegrator.mjINT_RK4 if integrator == "rk4" else mujoco.mjtIntegrator.mjINT_EULER
    m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT | mujoco.mjtDisableBit.mjDSBL_LIMIT
    m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_EULERDAMP
    # MuJoCo turns URDF <mimic> into an equality constraint; jaxdyn (like Pinocchio) loads mimic
    # joints as independent joints, so the coupling is switched off on the MuJoCo side.
    m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_EQUALITY
    m.opt.gravity[:] = (0.0, 0.0, -9.81)
    m.dof_damping[:] = damping
    m.dof_armature[:] = armature
    m.dof_frictionloss[:] = 0.0
    assert m.nq == m.nv, "fixed-base robots only"
    names = [mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_JOINT, j) for j in range(m.njnt)]
    rng = np.random.default_rng(seed)
    d = mujoco.MjData(m)
    d.qpos[:] = rng.uniform(-0.8, 0.8, m.nq)
    d.qvel[:] = rng.normal(0.0, 0.5, m.nv)
    amp = rng.uniform(0.2, 1.0, m.nv) * np.maximum(
        1.0, 0.05 * np.abs(m.actuator_forcerange[:, 1]).max() if m.nu else 1.0
    )
    freq = rng.uniform(0.5, 2.0, m.nv)
    phase = rng.uniform(0, 2 * np.pi, m.nv)
    t = np.arange(steps) * dt
    tau = amp * np.sin(2 * np.pi * freq * t[:, None] + phase)
    qs, vs = [d.qpos.copy()], [d.qvel.copy()]
    q0, v0 = d.qpos.copy(), d.qvel.copy()
    for k in range(steps):
        d.qfrc_applied[:] = tau[k]
        mujoco.mj_step(m, d)
        qs.append(d.qpos.copy())
        vs.append(d.qvel.copy())
    return dict(
        joint_names=np.array(names),
        integrator=integrator,
        dt=dt,
        damping=damping,
        armature=armature,
        q0=q0,
        qd0=v0,
        tau=tau,
        q=np.array(qs),
        qd=np.array(vs),
        mujoco_version=mujoco.__version__,
    )


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(HERE, "..", "data", "mujoco"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for i, case in enumerate(CASES):
        res = run_case(*case, seed=i)
        np.savez_compressed(os.path.join(args.out, f"{case[0]}.npz"), **res)
        print(case[0], res["q"].shape, "final |q|", np.abs(res["q"][-1]).max())


if __name__ == "__main__":
    main()
