"""MuJoCo reference for ``Contact(normal="mujoco")``, MuJoCo's soft contact as jaxdyn's normal
law (tests/test_contact_soft.py). MuJoCo is not a jaxdyn dependency.

    pip install mujoco          # 4.x
    python tests/reference/generate_mujoco_soft.py

Two scenes, MuJoCo's Euler integrator at 2 ms, stored in ``tests/data/mujoco/contact/soft.npz``
(``<name>_xml``, ``<name>_qpos``, ``<name>_qvel`` ``(steps + 1, ...)``, ``<name>_force``: each
step's summed normal force per ball):

* ``bounce``: frictionless contacts (``condim`` 1), each ball a different rule of the parameters:
  its own ``solref``/``solimp`` mixed with the floor's by ``solmix`` (an underdamped contact that
  bounces), a direct ``solref`` (stiffness and damping) against the floor's time constant
  (element-wise minimum), a higher ``priority`` than the floor's, and an explicit ``<pair>`` with
  a box on the world with the pair's own ``solref``/``solimp``. Dropped from 1-3 cm with sideways
  and spinning velocities, 400 steps.
* ``rest``: a 1 kg box (sliding friction 0.5, ``condim`` 3) and a 2 kg sphere (friction 1,
  ``condim`` 4) released at rest just above the floor, soft ``solimp`` (``0.015 1 0.031``, as the
  Menagerie Go2's feet), for the pyramidal and the elliptic cone (``rest_pyramidal``,
  ``rest_elliptic``), 1,000 steps: the resting penetrations.

And ``invweight_<name>``: MuJoCo's ``body_invweight0`` of each geom's body (``(ngeom, 2)``, geom
order) for the articulated test scenes ``tests/data/mjcf/`` ``dm_control/humanoid.xml``,
``dm_control/cheetah.xml``, ``dm_control/walker.xml`` and ``gymnasium/ant.xml``.
"""

from __future__ import annotations

import os

import mujoco
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SCENES = {
    name: os.path.join(HERE, "..", "data", "mjcf", *path.split("/"))
    for name, path in (
        ("humanoid", "dm_control/humanoid.xml"),
        ("cheetah", "dm_control/cheetah.xml"),
        ("walker", "dm_control/walker.xml"),
        ("ant", "gymnasium/ant.xml"),
    )
}
OUT = os.path.join(HERE, "..", "data", "mujoco", "contact", "soft.npz")

BOUNCE = """<mujoco><option timestep="0.002" integrator="Euler"/>
<default><geom condim="1"/></default>
<worldbody>
<geom name="floor" type="plane" size="0 0 1" solref="0.03 1.2" solimp="0.5 0.99 0.01 0.3 3" solmix="0.5"/>
<geom name="table" type="box" size="0.1 0.1 0.05" pos="1 0 0.3" contype="0" conaffinity="0"/>
<body name="mixed" pos="0 0 0.06"><freejoint/>
  <geom name="mixed" type="sphere" size="0.05" mass="2" solref="0.01 0.3" solimp="0.8 0.95 0.002 0.5 2" solmix="2"/></body>
<body name="direct" pos="0.3 0 0.07"><freejoint/>
  <geom name="direct" type="sphere" size="0.05" mass="1" solref="-3000 -20"/></body>
<body name="priority" pos="0.6 0 0.065"><freejoint/>
  <geom name="priority" type="capsule" size="0.03 0.05" euler="0 90 0" mass="1.5" priority="1" solref="0.015 0.6" solimp="0.7 0.9 0.005 0.4 1"/></body>
<body name="paired" pos="1 0 0.41"><freejoint/>
  <geom name="paired" type="sphere" size="0.05" mass="0.5" contype="0" conaffinity="0"/></body>
</worldbody>
<contact><pair geom1="table" geom2="paired" condim="1" solref="0.008 0.5" solimp="0.6 0.97 0.003 0.5 2"/></contact>
</mujoco>"""

REST = """<mujoco><option timestep="0.002" integrator="Euler" cone="{cone}"/>
<default><geom solimp="0.015 1 0.031"/></default>
<worldbody>
<geom name="floor" type="plane" size="0 0 1" friction="0.3"/>
<body name="box" pos="0 0 0.052"><freejoint/>
  <geom name="box" type="box" size="0.1 0.08 0.05" mass="1" friction="0.5"/></body>
<body name="ball" pos="0.5 0 0.052"><freejoint/>
  <geom name="ball" type="sphere" size="0.05" mass="2" condim="4" friction="1 0.01"/></body>
</worldbody>
</mujoco>"""


def run(xml, steps, init=None):
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    if init is not None:
        init(m, d)
    qpos, qvel, force = [d.qpos.copy()], [d.qvel.copy()], []
    for _ in range(steps):
        mujoco.mj_step(m, d)
        qpos.append(d.qpos.copy())
        qvel.append(d.qvel.copy())
        per_body = np.zeros(m.nbody)
        for i in range(d.ncon):
            f = np.zeros(6)
            mujoco.mj_contactForce(m, d, i, f)
            c = d.contact[i]
            for g in (c.geom1, c.geom2):
                per_body[m.geom_bodyid[g]] += f[0]
        force.append(per_body[1:])
    return np.array(qpos), np.array(qvel), np.array(force)


def bounce_init(m, d):
    # sideways, downward and spinning starts (qvel: world linear, body angular)
    d.qvel[0:6] = [0.2, 0.0, -0.5, 0.0, 3.0, 0.0]
    d.qvel[6:12] = [0.0, -0.1, -1.0, 1.0, 0.0, 0.0]
    d.qvel[12:18] = [0.1, 0.1, -0.3, 0.0, 0.0, 2.0]
    d.qvel[18:24] = [0.0, 0.0, -0.8, 0.0, 0.0, 0.0]


def main():
    out = {"mujoco_version": np.array(mujoco.__version__)}
    q, v, f = run(BOUNCE, 400, bounce_init)
    out.update(bounce_xml=np.array(BOUNCE), bounce_qpos=q, bounce_qvel=v, bounce_force=f)
    print("bounce: lowest heights", q[:, 2::7].min(0), "max force", f.max(0))
    for cone in ("pyramidal", "elliptic"):
        xml = REST.format(cone=cone)
        q, v, f = run(xml, 1000)
        out.update({f"rest_{cone}_xml": np.array(xml), f"rest_{cone}_qpos": q, f"rest_{cone}_qvel": v})
        out[f"rest_{cone}_force"] = f
        print(cone, "rest heights", q[-1, 2::7], "forces", f[-1])
    for name, path in SCENES.items():
        m = mujoco.MjModel.from_xml_path(path)
        out[f"invweight_{name}"] = m.body_invweight0[m.geom_bodyid]
    np.savez(OUT, **out)


if __name__ == "__main__":
    main()
