"""Generate MuJoCo's trajectory of the shipped Go1 joystick scene for tests/test_go1_joystick.py
(MuJoCo is NOT a jaxdyn dependency).

    pip install mujoco            # 4.x
    python tests/reference/generate_mujoco_go1_joystick.py [--out tests/data/mujoco/go1_joystick]

The scene is the one jaxdyn ships (``jaxdyn/robots/go1_playground/``: MuJoCo Playground's Go1
feet-only flat-terrain scene, meshes removed), run by MuJoCo C with the scene's own options
(Euler at 4 ms, one Newton iteration, pyramidal cone). It starts from the ``home`` keyframe
(``qpos`` and ``ctrl``) at rest and is driven for 2 s at Playground's control period (20 ms, the
``ctrl`` held over 5 steps) by :func:`controls`: ``home``'s ``ctrl`` plus sinusoids on the legs
that make the robot squat, sway sideways and pitch with its feet on the ground.

Stores, per control step (``T + 1`` rows, the first the start): ``qpos``, ``qvel`` (MuJoCo's
coordinates), ``sensordata`` with the scene's sensor names and addresses (``sensor_names``,
``sensor_adr``, ``sensor_dim``), and the controls ``ctrl (T, nu)``.
"""

from __future__ import annotations

import argparse
import os

import mujoco
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
SCENE = os.path.join(ROOT, "jaxdyn", "robots", "go1_playground", "scene_mjx_feetonly_flat_terrain.xml")
OUT = os.path.join(HERE, "..", "data", "mujoco", "go1_joystick")
CTRL_DT, SUBSTEPS, SECONDS = 0.02, 5, 2.0


def controls(home_ctrl, steps, ctrl_dt=CTRL_DT):
    """``(steps, 12)`` controls: ``home_ctrl`` plus, at ``t = k ctrl_dt``, per leg (FR, FL, RR,
    RL; abduction, hip, knee) ``0.05 sin(pi t)`` on every abduction (a sideways sway),
    ``0.05 sin(2 pi t + phi)`` on the hips and ``-0.1 sin(2 pi t + phi)`` on the knees (a squat),
    with ``phi = 0`` for the front legs and ``pi / 2`` for the rear ones (a pitch)."""
    t = np.arange(steps)[:, None] * ctrl_dt
    phase = np.array([0.0, 0.0, np.pi / 2, np.pi / 2])
    u = np.tile(np.asarray(home_ctrl, float), (steps, 1)).reshape(steps, 4, 3)
    u[:, :, 0] += 0.05 * np.sin(np.pi * t)
    u[:, :, 1] += 0.05 * np.sin(2 * np.pi * t + phase)
    u[:, :, 2] += -0.1 * np.sin(2 * np.pi * t + phase)
    return u.reshape(steps, 12)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=OUT)
    args = ap.parse_args()
    m = mujoco.MjModel.from_xml_path(SCENE)
    d = mujoco.MjData(m)
    home = m.keyframe("home")
    d.qpos[:], d.ctrl[:] = home.qpos, home.ctrl
    mujoco.mj_forward(m, d)
    steps = int(round(SECONDS / CTRL_DT))
    ctrl = controls(home.ctrl, steps)
    assert abs(m.opt.timestep * SUBSTEPS - CTRL_DT) < 1e-12
    qpos, qvel, sdata = [d.qpos.copy()], [d.qvel.copy()], [d.sensordata.copy()]
    for k in range(steps):
        d.ctrl[:] = ctrl[k]
        for _ in range(SUBSTEPS):
            mujoco.mj_step(m, d)
        mujoco.mj_forward(m, d)  # the sensors at the state reached, as an observation reads them
        qpos.append(d.qpos.copy())
        qvel.append(d.qvel.copy())
        sdata.append(d.sensordata.copy())
    names = [m.sensor(i).name for i in range(m.nsensor)]
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "reference.npz")
    np.savez_compressed(
        path,
        qpos=np.array(qpos),
        qvel=np.array(qvel),
        sensordata=np.array(sdata),
        sensor_names=np.array(names),
        sensor_adr=np.array(m.sensor_adr),
        sensor_dim=np.array(m.sensor_dim),
        ctrl=ctrl,
        home_qpos=np.array(home.qpos),
        home_ctrl=np.array(home.ctrl),
        ctrl_dt=CTRL_DT,
        substeps=SUBSTEPS,
        mujoco_version=mujoco.__version__,
    )
    z = np.array(qpos)[:, 2]
    print(f"MuJoCo {mujoco.__version__}: {steps} control steps; base height {z.min():.4f} .. {z.max():.4f} m; {path}")


if __name__ == "__main__":
    main()
