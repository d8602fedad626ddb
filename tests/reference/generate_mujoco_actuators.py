"""Generate stored MuJoCo actuator forces and rollouts for tests/test_actuators.py (MuJoCo is NOT a
jaxdyn dependency).

    pip install mujoco            # 4.x
    python tests/reference/generate_mujoco_actuators.py [--out tests/data/mujoco/actuators]

For each scene (``arm.xml``, ``go1.xml`` in the output folder):

* ``points``: random states ``qpos``, ``qvel``, controls ``ctrl`` (beyond the control ranges, to
  exercise the clamps) and activations ``act``, with MuJoCo's ``actuator_force`` and
  ``qfrc_actuator`` after ``mj_forward``;
* ``rollout`` (the arm only): ``mj_step`` from a fixed state under smooth controls that
  saturate the servos, MuJoCo's ``implicitfast`` integrator (the scene's ``<option>``):
  ``qpos``, ``qvel`` and ``act`` at every step.

The Go1 is the ``go1_mjx_feetonly.xml`` of MuJoCo Playground (Apache-2.0), itself Menagerie's
Unitree Go1 (BSD-3-Clause), with its visual meshes removed; only ``qfrc_actuator`` is compared
there (contacts are off in the points).
"""

from __future__ import annotations

import argparse
import os

import mujoco
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "data", "mujoco", "actuators")


def points(m, rng, n=24):
    d = mujoco.MjData(m)
    out = {k: [] for k in ("qpos", "qvel", "ctrl", "act", "actuator_force", "qfrc_actuator")}
    for _ in range(n):
        mujoco.mj_resetData(m, d)
        d.qpos[:] = m.qpos0 + rng.uniform(-0.6, 0.6, m.nq)
        if m.jnt_type[0] == mujoco.mjtJoint.mjJNT_FREE:
            quat = rng.normal(size=4)
            d.qpos[3:7] = quat / np.linalg.norm(quat)
        d.qvel[:] = rng.uniform(-2.0, 2.0, m.nv)
        lo, hi = m.actuator_ctrlrange[:, 0], m.actuator_ctrlrange[:, 1]
        mid, half = (lo + hi) / 2, np.where(m.actuator_ctrllimited, (hi - lo) / 2, 1.0)
        d.ctrl[:] = mid + 1.5 * half * rng.uniform(-1.0, 1.0, m.nu)
        d.act[:] = rng.uniform(-1.0, 1.0, m.na)
        mujoco.mj_forward(m, d)
        for k in out:
            out[k].append(getattr(d, k).copy())
    return {f"points_{k}": np.array(v) for k, v in out.items()}


def rollout(m, steps=400):
    d = mujoco.MjData(m)
    d.qpos[:] = [0.3, -0.4, 0.05, 0.2, 0.1]
    d.qvel[:] = [0.5, -1.0, 0.2, 0.0, 0.3]
    t = np.arange(steps) * m.opt.timestep
    ctrl = np.stack(
        [
            1.8 * np.sin(2 * np.pi * 1.5 * t),  # beyond the servo's control range; saturates its force
            5.0 * np.sin(2 * np.pi * 0.7 * t),
            1.3 * np.cos(2 * np.pi * 1.1 * t),
            2.5 * np.sin(2 * np.pi * 2.0 * t),
            1.5 * np.sin(2 * np.pi * 0.9 * t),  # integrates past the activation range
            1.0 + np.sin(2 * np.pi * 0.5 * t),
        ],
        axis=1,
    )
    qpos, qvel, act = [d.qpos.copy()], [d.qvel.copy()], [d.act.copy()]
    for k in range(steps):
        d.ctrl[:] = ctrl[k]
        mujoco.mj_step(m, d)
        qpos.append(d.qpos.copy())
        qvel.append(d.qvel.copy())
        act.append(d.act.copy())
    return {
        "rollout_ctrl": ctrl,
        "rollout_qpos": np.array(qpos),
        "rollout_qvel": np.array(qvel),
        "rollout_act": np.array(act),
    }


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", default=OUT)
    args = p.parse_args()
    rng = np.random.default_rng(0)
    for name in ("arm", "go1"):
        m = mujoco.MjModel.from_xml_path(os.path.join(args.out, f"{name}.xml"))
        m.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONTACT)
        data = points(m, rng)
        if name == "arm":
            data.update(rollout(m))
        np.savez_compressed(os.path.join(args.out, f"{name}.npz"), mujoco=mujoco.__version__, **data)
        print(name, {k: v.shape for k, v in data.items()})


if __name__ == "__main__":
    main()
