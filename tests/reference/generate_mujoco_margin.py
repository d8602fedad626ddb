"""MuJoCo reference for contact margins (tests/test_contact_margin.py). MuJoCo is not a jaxdyn
dependency.

    pip install mujoco          # 4.x
    python tests/reference/generate_mujoco_margin.py

Four free 5 cm, 1 kg balls on a floor of margin 1 cm: one with a margin of its own (2 cm), one
without, one with a negative margin (-1.5 cm), and one resting on a box on the world with
which it has an explicit ``<pair>`` of margin 1.5 cm (the pair's margin replaces the geoms' 5 cm
and 4 mm). Stiff contacts (``solref`` 0.002 1, the pair's too), 1 ms steps; every ball starts 1 mm above its
rest height and the scene runs 1 s. Stored in ``tests/data/mujoco/contact/margin.npz``: ``xml``,
``qpos0`` (the start), ``qpos`` (the end), ``includemargin`` (each contact's margin at the end,
in the order of the balls).
"""

from __future__ import annotations

import os

import mujoco
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "data", "mujoco", "contact", "margin.npz")

XML = """<mujoco><option timestep="0.001"/>
<default><geom solref="0.002 1" contype="1" conaffinity="1"/></default>
<worldbody>
<geom name="floor" type="plane" size="0 0 1" margin="0.01"/>
<geom name="table" type="box" size="0.1 0.1 0.05" pos="1 0 0.3" margin="0.004"/>
<body name="own" pos="0 0 0.081"><freejoint/><geom name="own" type="sphere" size="0.05" mass="1" margin="0.02"/></body>
<body name="none" pos="0.3 0 0.061"><freejoint/><geom name="none" type="sphere" size="0.05" mass="1"/></body>
<body name="negative" pos="0.6 0 0.046"><freejoint/><geom name="negative" type="sphere" size="0.05" mass="1" margin="-0.015"/></body>
<body name="paired" pos="1 0 0.416"><freejoint/><geom name="paired" type="sphere" size="0.05" mass="1" margin="0.05"/></body>
</worldbody>
<contact><pair geom1="table" geom2="paired" margin="0.015" solref="0.002 1"/></contact>
</mujoco>"""


def main():
    m = mujoco.MjModel.from_xml_string(XML)
    d = mujoco.MjData(m)
    qpos0 = d.qpos.copy()
    for _ in range(1000):
        mujoco.mj_step(m, d)
    names = ["own", "none", "negative", "paired"]
    by_ball = {}
    for c in d.contact[: d.ncon]:
        for g in (c.geom1, c.geom2):
            n = mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_GEOM, g)
            if n in names and not c.exclude:
                by_ball[n] = c.includemargin
    np.savez(
        OUT,
        xml=np.array(XML),
        qpos0=qpos0,
        qpos=d.qpos.copy(),
        includemargin=np.array([by_ball[n] for n in names]),
        mujoco_version=np.array(mujoco.__version__),
    )
    print("heights", d.qpos[2::7], "margins", [by_ball[n] for n in names])


if __name__ == "__main__":
    main()
