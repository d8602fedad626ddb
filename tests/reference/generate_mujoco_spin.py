"""MuJoCo reference for torsional and rolling friction (tests/test_contact_spin.py). MuJoCo is
not a jaxdyn dependency.

    pip install mujoco          # 4.x
    python tests/reference/generate_mujoco_spin.py

A 5 cm, 1 kg ball on a plane, both geoms with the same ``condim`` and ``friction``; elliptic
cones with ``impratio`` 10 (so the friction directions are as stiff as the normal; with the
default 1 MuJoCo's soft torsional friction reaches 85 % of its bound here), ``implicitfast`` at
1 ms, a stiff contact (``solref`` 0.002 1). The ball settles for 0.3 s, then either spins at
10 rad/s about the vertical (``condim`` 4, ``friction="1 0.001 0"``) or rolls at 1 m/s
(``condim`` 6, ``friction="1 0 0.001"``) for 0.5 s. Stored in
``tests/data/mujoco/contact/spin.npz``: ``xml`` (the rolling scene; the spinning one swaps the
``condim`` and ``friction``), ``spin`` (the spin at each step), ``speed`` (the centre's speed
at each step), ``depth`` (the ball's rest penetration).
"""

from __future__ import annotations

import os

import mujoco
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "data", "mujoco", "contact", "spin.npz")
R, M = 0.05, 1.0

XML = """<mujoco><option timestep="0.001" cone="elliptic" impratio="10" integrator="implicitfast"/>
<default><geom condim="6" friction="1 0 0.001" solref="0.002 1"/></default>
<worldbody><geom type="plane" size="0 0 1"/>
<body name="ball" pos="0 0 0.05"><freejoint/><geom type="sphere" size="0.05" mass="1"/></body>
</worldbody></mujoco>"""


def run(xml, qvel, steps=500):
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    for _ in range(300):
        mujoco.mj_step(m, d)
    depth = R - d.qpos[2]
    d.qvel[:] = qvel
    out = []
    for _ in range(steps):
        mujoco.mj_step(m, d)
        out.append(d.qvel.copy())
    return np.array(out), depth


def main():
    spin_xml = XML.replace('condim="6"', 'condim="4"').replace('"1 0 0.001"', '"1 0.001 0"')
    spin, _ = run(spin_xml, [0, 0, 0, 0, 0, 10.0])
    roll, depth = run(XML, [1.0, 0, 0, 0, 1.0 / R, 0])
    np.savez(
        OUT,
        xml=np.array(XML),
        spin=spin[:, 5],
        speed=np.linalg.norm(roll[:, :3], axis=1),
        depth=np.array(depth),
        mujoco_version=np.array(mujoco.__version__),
    )
    print(f"spin at 0.5 s {spin[-1, 5]:.6f} rad/s, speed {np.linalg.norm(roll[-1, :3]):.6f} m/s, depth {depth:.2e} m")


if __name__ == "__main__":
    main()
