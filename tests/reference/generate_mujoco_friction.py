"""MuJoCo 4.0 reference for friction that holds (tests/test_friction_hold.py): a pendulum with
joint ``frictionloss`` and a block on a slope, stepped with MuJoCo's ``Euler``.

    pip install mujoco                                   # not a jaxdyn dependency
    python tests/reference/generate_mujoco_friction.py   # writes tests/data/mujoco/friction/

* ``pendulum.xml``: a 1 kg, 0.5 m capsule on a hinge at the origin (gravity torque 2.45 N m
  when horizontal), ``frictionloss`` ``FL``. Stored: ``qpos`` every step over 2 s at 2 ms from
  rest at the horizontal and from 3 rad/s, for ``FL = 3`` (holds: the friction exceeds the
  load) and ``FL = 1`` (swings down).
* ``block.xml``: a 1 kg box (0.2 x 0.2 x 0.1 m) with sliding friction 0.5 resting on a plane
  tilted by 15 degrees (below the friction angle, 26.6 degrees), gravity along -z. Stored: its
  downhill displacement over 2 s at 2 ms (MuJoCo's soft friction lets it drift), from the
  pose of a box resting on the plane.
"""

from __future__ import annotations

import os

import mujoco
import numpy as np

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "mujoco", "friction")
DT, SECONDS = 0.002, 2.0
THETA = np.deg2rad(15.0)

PENDULUM = """<mujoco model="frictionloss pendulum"><option timestep="0.002"/><worldbody>
<body name="arm"><joint name="hinge" type="hinge" axis="0 1 0" frictionloss="FL"/>
<geom type="capsule" fromto="0 0 0 0.5 0 0" size="0.03" mass="1"/></body>
</worldbody></mujoco>"""

# the plane tilted about y; the block's faces parallel to it
BLOCK = """<mujoco model="block on a slope"><compiler angle="degree"/><option timestep="0.002"/><worldbody>
<geom name="slope" type="plane" size="5 5 0.1" euler="0 THETA 0" friction="0.5 0.005 0.0001"/>
<body name="block" pos="POS" euler="0 THETA 0"><freejoint/>
<geom type="box" size="0.1 0.1 0.05" mass="1" friction="0.5 0.005 0.0001"/></body>
</worldbody></mujoco>"""


def slope_frame():
    """The plane's normal and its downhill direction (the plane z axis turned by THETA about y)."""
    n = np.array([np.sin(THETA), 0.0, np.cos(THETA)])
    t = np.array([np.cos(THETA), 0.0, -np.sin(THETA)])
    return n, t


def main():
    os.makedirs(HERE, exist_ok=True)
    steps = int(round(SECONDS / DT))
    out = {"dt": DT, "steps": steps}
    with open(os.path.join(HERE, "pendulum.xml"), "w") as f:
        f.write(PENDULUM)
    for fl in (3.0, 1.0):
        m = mujoco.MjModel.from_xml_string(PENDULUM.replace("FL", repr(fl)))
        d = mujoco.MjData(m)
        for qd0 in (0.0, 3.0):
            mujoco.mj_resetData(m, d)
            d.qvel[0] = qd0
            qs = [d.qpos[0]]
            for _ in range(steps):
                mujoco.mj_step(m, d)
                qs.append(d.qpos[0])
            out[f"pendulum_fl{fl:g}_qd{qd0:g}"] = np.array(qs)
    n, t = slope_frame()
    pos = " ".join(f"{x:.17g}" for x in n * 0.05)
    xml = BLOCK.replace("THETA", f"{np.rad2deg(THETA):.17g}").replace("POS", pos)
    with open(os.path.join(HERE, "block.xml"), "w") as f:
        f.write(xml)
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    x = [d.qpos[:3] @ t]
    for _ in range(steps):
        mujoco.mj_step(m, d)
        x.append(d.qpos[:3] @ t)
    out["block_downhill"] = np.array(x) - x[0]
    np.savez(os.path.join(HERE, "reference.npz"), **out)
    print({k: (v[-1] if np.ndim(v) else v) for k, v in out.items()})


if __name__ == "__main__":
    main()
