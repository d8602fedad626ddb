"""Generate stored MuJoCo ``Euler`` rollouts WITH implicit joint damping (``eulerdamp``, MuJoCo's
default) for tests/test_implicit_euler.py (MuJoCo is NOT a jaxdyn dependency).

    pip install mujoco            # 4.x
    python tests/reference/generate_mujoco_implicit.py [--out tests/data/mujoco/implicit_euler]

MuJoCo's ``Euler`` step with ``eulerdamp`` solves ``(M + h diag(dof_damping)) qacc = qfrc`` (``M``
with armature, ``qfrc`` including the damping force ``-B qvel``), then ``qvel += h qacc`` and
integrates ``qpos`` with the new ``qvel``: jaxdyn's ``"implicit_euler"``. The cases are robots
whose joint damping makes the explicit schemes unstable at ``dt = 1 ms``:

* ``panda_stiff``: the shipped Panda URDF (fixed base, no armature, as URDFs have none), damping
  1 N m s/rad on joints 1-4, 20 on the wrist joints 5-7, the URDF's 0.3 N s/m on the fingers.
  The largest eigenvalue of ``h M^-1 B`` is 3.9 at the initial state and 2.5-3.9 along the
  rollout (2 is the stability limit of the explicit Euler schemes, 2.79 of RK4). 1000 steps (1 s).
* ``solo12_free``: the shipped Solo-12 URDF with a free joint added to its root body (URDFs
  cannot say "floating"), damping 1 N m s/rad and armature 1e-4 kg m^2 on the 12 leg joints,
  none on the free joint; the lower legs have ~5e-4 kg m^2 about their axes. Gravity on, no
  floor (contacts are off): the robot falls while its legs move. 300 steps.

As in tests/reference/generate_mujoco.py, contacts, joint limits, equality constraints (URDF
mimic) and friction loss are disabled: jaxdyn's soft limits and smooth Coulomb friction are not
MuJoCo's constraints. Joint torques are smooth sinusoids through ``qfrc_applied`` (none on the
free joint). Each NPZ holds the joint names in MuJoCo's order (the test maps by name), per-dof
damping and armature in MuJoCo's dof order, and MuJoCo's ``qpos``/``qvel`` at every step. Free
joint conventions (MuJoCo): ``qpos = [p_world; quat (w, x, y, z)]``, ``qvel = [v_world;
omega_body]`` with ``v_world`` the world-frame velocity of the body origin; the test converts
to jaxdyn's ``[omega_body; v_body]``, ``v_body = R^T v_world``.
"""

from __future__ import annotations

import argparse
import os

import mujoco
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROBOTS = os.path.join(HERE, "..", "..", "jaxdyn", "robots")

PANDA_DAMPING = {
    "panda_joint1": 1.0,
    "panda_joint2": 1.0,
    "panda_joint3": 1.0,
    "panda_joint4": 1.0,
    "panda_joint5": 20.0,
    "panda_joint6": 20.0,
    "panda_joint7": 20.0,
    "panda_finger_joint1": 0.3,
    "panda_finger_joint2": 0.3,
}


def _load(robot: str, free: bool):
    spec = mujoco.MjSpec.from_file(os.path.join(ROBOTS, f"{robot}.urdf"))
    if free:
        spec.worldbody.first_body().add_freejoint()
    return spec.compile()


def run_case(name, robot, free, dt, steps, seed):
    m = _load(robot, free)
    m.opt.timestep = dt
    m.opt.integrator = mujoco.mjtIntegrator.mjINT_EULER
    # eulerdamp stays enabled (MuJoCo's default): that is the point of these references
    assert not m.opt.disableflags & mujoco.mjtDisableBit.mjDSBL_EULERDAMP
    m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT | mujoco.mjtDisableBit.mjDSBL_LIMIT
    m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_EQUALITY
    m.opt.gravity[:] = (0.0, 0.0, -9.81)
    names = [mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_JOINT, j) for j in range(m.njnt)]
    n0 = 6 if free else 0  # free joint dofs first (MuJoCo puts the root's joint first)
    hinge = names[1:] if free else names
    if robot == "panda":
        damping = np.array([PANDA_DAMPING[n] for n in hinge])
        armature = np.zeros(len(hinge))
    else:
        damping = np.full(len(hinge), 1.0)
        armature = np.full(len(hinge), 1e-4)
    m.dof_damping[:] = np.r_[np.zeros(n0), damping]
    m.dof_armature[:] = np.r_[np.zeros(n0), armature]
    m.dof_frictionloss[:] = 0.0
    rng = np.random.default_rng(seed)
    d = mujoco.MjData(m)
    nh = len(hinge)
    if free:
        d.qpos[0:3] = rng.normal(0.0, 0.3, 3)
        quat = rng.normal(size=4)
        d.qpos[3:7] = quat / np.linalg.norm(quat)
    d.qpos[m.nq - nh :] = rng.uniform(-0.8, 0.8, nh)
    d.qvel[:] = rng.normal(0.0, 0.5, m.nv)
    amp = rng.uniform(0.2, 1.0, nh) * (5.0 if robot == "panda" else 0.5)
    if robot == "panda":
        d.qpos[m.nq - 2 :] = 0.02  # fingers half open
        amp[-2:] = 0.0  # passive fingers
    freq = rng.uniform(0.5, 2.0, nh)
    phase = rng.uniform(0, 2 * np.pi, nh)
    t = np.arange(steps) * dt
    tau = np.zeros((steps, m.nv))
    tau[:, n0:] = amp * np.sin(2 * np.pi * freq * t[:, None] + phase)
    q0, v0 = d.qpos.copy(), d.qvel.copy()
    qs, vs = [q0], [v0]
    for k in range(steps):
        d.qfrc_applied[:] = tau[k]
        mujoco.mj_step(m, d)
        qs.append(d.qpos.copy())
        vs.append(d.qvel.copy())
    qs, vs = np.array(qs), np.array(vs)
    assert np.all(np.isfinite(qs)) and np.all(np.isfinite(vs))
    return dict(
        joint_names=np.array(hinge),
        free=free,
        integrator="implicit_euler",
        dt=dt,
        damping=damping,
        armature=armature,
        q0=q0,
        qd0=v0,
        tau=tau,
        q=qs,
        qd=vs,
        mujoco_version=mujoco.__version__,
    )


CASES = [
    # name, robot, free joint, dt, steps
    ("panda_stiff", "panda", False, 1e-3, 1000),
    ("solo12_free", "solo12", True, 1e-3, 300),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(HERE, "..", "data", "mujoco", "implicit_euler"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for i, case in enumerate(CASES):
        res = run_case(*case, seed=100 + i)
        np.savez_compressed(os.path.join(args.out, f"{case[0]}.npz"), **res)
        print(case[0], res["q"].shape, "max |q|", np.abs(res["q"]).max(), "max |qd|", np.abs(res["qd"]).max())


if __name__ == "__main__":
    main()
