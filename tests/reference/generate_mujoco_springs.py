"""MuJoCo reference for joint springs (tests/test_springs.py). MuJoCo is not a jaxdyn dependency.

    pip install mujoco          # 4.x
    python tests/reference/generate_mujoco_springs.py

For ``tests/data/mjcf/springs.xml`` (hinge and slide springs with ``springref``, damping,
armature) and the dm_control humanoid (hinge springs on a free-floating body): ``qfrc_spring``
at random states, and for ``springs.xml`` an Euler rollout (implicit damping on, contacts and
limits off) from a displaced state under a sinusoidal ``qfrc_applied``.
"""

from __future__ import annotations

import os

import mujoco
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
MJCF = os.path.join(HERE, "..", "data", "mjcf")
OUT = os.path.join(HERE, "..", "data", "mujoco", "springs")


def spring_states(path, seed, k=4):
    m = mujoco.MjModel.from_xml_path(path)
    d = mujoco.MjData(m)
    rng = np.random.default_rng(seed)
    qs, fs = [], []
    for _ in range(k):
        d.qpos[:] = m.qpos0 + rng.normal(0, 0.4, m.nq)
        for j in range(m.njnt):  # unit quaternions for free and ball joints
            a = m.jnt_qposadr[j]
            if m.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE:
                d.qpos[a + 3 : a + 7] /= np.linalg.norm(d.qpos[a + 3 : a + 7])
            elif m.jnt_type[j] == mujoco.mjtJoint.mjJNT_BALL:
                d.qpos[a : a + 4] /= np.linalg.norm(d.qpos[a : a + 4])
        mujoco.mj_forward(m, d)
        qs.append(d.qpos.copy())
        fs.append(d.qfrc_spring.copy())
    return dict(qpos=np.array(qs), qfrc_spring=np.array(fs))


def euler_rollout(path, steps=400, dt=1e-3, seed=7):
    m = mujoco.MjModel.from_xml_path(path)
    m.opt.timestep = dt
    m.opt.integrator = mujoco.mjtIntegrator.mjINT_EULER
    m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT | mujoco.mjtDisableBit.mjDSBL_LIMIT
    d = mujoco.MjData(m)
    rng = np.random.default_rng(seed)
    d.qpos[:] = m.qpos0 + rng.normal(0, 0.3, m.nq)
    d.qvel[:] = rng.normal(0, 0.5, m.nv)
    t = np.arange(steps) * dt
    tau = 0.5 * np.sin(2 * np.pi * 1.5 * t[:, None] + np.arange(m.nv))
    q, v = [d.qpos.copy()], [d.qvel.copy()]
    for i in range(steps):
        d.qfrc_applied[:] = tau[i]
        mujoco.mj_step(m, d)
        q.append(d.qpos.copy())
        v.append(d.qvel.copy())
    return dict(tau=tau, q=np.array(q), qd=np.array(v), dt=dt)


def main():
    springs = os.path.join(MJCF, "springs.xml")
    humanoid = os.path.join(MJCF, "dm_control", "humanoid.xml")
    out = {f"springs_{k}": v for k, v in spring_states(springs, 0).items()}
    out.update({f"humanoid_{k}": v for k, v in spring_states(humanoid, 1).items()})
    out.update({f"rollout_{k}": v for k, v in euler_rollout(springs).items()})
    out["mujoco_version"] = np.array(mujoco.__version__)
    os.makedirs(OUT, exist_ok=True)
    np.savez_compressed(os.path.join(OUT, "reference.npz"), **out)
    print({k: np.shape(v) for k, v in out.items()})


if __name__ == "__main__":
    main()
