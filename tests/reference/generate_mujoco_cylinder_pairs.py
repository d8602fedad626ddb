"""MuJoCo reference for the cylinder-box and cylinder-cylinder pairs of jaxdyn.contact
(tests/test_contact_pairs.py). MuJoCo is not a jaxdyn dependency.

    pip install mujoco          # 4.x
    python tests/reference/generate_mujoco_cylinder_pairs.py

A cylinder (radius 0.1 m, half-length 0.15 m) at the origin at random orientations, and a box
(half-sizes 0.2, 0.12, 0.06 m) at random poses around it, 80 of them; then chosen poses with the
box level below the cylinder: the cylinder standing on the box's top face 1 mm deep and 1 mm
apart, lying on its side along the box's x axis 1 mm deep and 2 mm apart, tilted by 20 degrees
with its lowest rim point 2 mm into the face and 3 mm above it, and standing across the box's
edge 1 mm apart. Stored (``tests/data/mujoco/contact/cylinder_box.npz``): ``dist``, MuJoCo's
``mj_geomDistance`` of the two geoms (GJK for shapes apart, EPA for overlapping ones: the
minimum translation, with ``ccd_tolerance`` 1e-12 and 10,000 iterations); the poses (positions,
quaternions ``w, x, y, z``) and sizes; ``chosen``, the number of chosen poses at the end.

Cylinder-cylinder (``tests/data/mujoco/contact/cylinder_cylinder.npz``, the same fields with
``cylinder2_*`` for the second): the first cylinder (radius 0.1 m, half-length 0.15 m) at the
origin at random orientations, a second (radius 0.06 m, half-length 0.12 m) at random poses
around it, 80 of them; then chosen poses: the second standing on the first's top disk 1 mm deep
and 1 mm apart (off its axis by 2 cm), lying across it 1 mm deep and 2 mm apart, and the two
lying crossed at right angles 1 mm deep and 1 mm apart.
"""

from __future__ import annotations

import os

import mujoco
import numpy as np
from generate_mujoco_pairs import _quat_axis_angle as _quat

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "data", "mujoco", "contact", "cylinder_box.npz")
CYL, BOX = (0.1, 0.15), (0.2, 0.12, 0.06)

CYL2 = (0.06, 0.12)
OUT2 = os.path.join(HERE, "..", "data", "mujoco", "contact", "cylinder_cylinder.npz")

PROBE = f"""<mujoco><option ccd_tolerance="1e-12" ccd_iterations="10000"/><worldbody>
<body mocap="true"><geom name="cyl" type="cylinder" size="{CYL[0]} {CYL[1]}"/></body>
<body mocap="true"><geom name="box" type="box" size="{BOX[0]} {BOX[1]} {BOX[2]}"/></body>
<body mocap="true" pos="5 5 5"><geom name="cyl2" type="cylinder" size="{CYL2[0]} {CYL2[1]}"/></body>
</worldbody></mujoco>"""


def main():
    rng = np.random.default_rng(11)
    m = mujoco.MjModel.from_xml_string(PROBE)
    d = mujoco.MjData(m)
    n = 80
    cyl_quat = [_quat(rng.normal(size=3), rng.uniform(0, np.pi)) for _ in range(n)]
    box_pos = list(rng.uniform(-0.32, 0.32, size=(n, 3)))
    box_quat = [_quat(rng.normal(size=3), rng.uniform(0, np.pi)) for _ in range(n)]
    # chosen: the box level, its top face at z = -0.15 + gap below the standing cylinder's disk
    up = np.array([1.0, 0.0, 0.0, 0.0])
    top = lambda gap: -CYL[1] - BOX[2] - gap  # noqa: E731  the box centre's height
    side = _quat([0.0, 1.0, 0.0], np.pi / 2)  # the cylinder's axis along x
    tilt = _quat([0.0, 1.0, 0.0], np.radians(20.0))
    low = CYL[1] * np.cos(np.radians(20.0)) + CYL[0] * np.sin(np.radians(20.0))  # the lowest rim point
    chosen = [
        (up, [0.05, 0.0, top(-0.001)]),
        (up, [0.05, 0.0, top(0.001)]),
        (side, [0.0, 0.02, -CYL[0] - BOX[2] + 0.001]),
        (side, [0.0, 0.02, -CYL[0] - BOX[2] - 0.002]),
        (tilt, [0.0, 0.0, -low - BOX[2] + 0.002]),
        (tilt, [0.0, 0.0, -low - BOX[2] - 0.003]),
        (up, [0.2, 0.0, top(0.001)]),  # the box's edge x = 0 under the disk
    ]
    for q, p in chosen:
        cyl_quat.append(q)
        box_quat.append(up)
        box_pos.append(np.asarray(p, float))
    dist = _distances(m, d, ("cyl", 0), ("box", 1), cyl_quat, box_pos, box_quat)
    shapes = dict(box_size=np.array(BOX), box_pos=np.array(box_pos), box_quat=np.array(box_quat))
    _save(OUT, cyl_quat, shapes, dist, n, len(chosen))
    cylinder_cylinder(m, d, np.random.default_rng(12))


def _distances(m, d, first, second, quat1, pos2, quat2):
    """``mj_geomDistance`` of the geom ``first`` (name, mocap body) at the origin with the
    orientations ``quat1`` and ``second`` at the poses ``pos2``, ``quat2``."""
    g1, g2 = (mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, name) for name, _ in (first, second))
    b1, b2 = first[1], second[1]
    dist = []
    for k in range(len(quat1)):
        d.mocap_pos[b1], d.mocap_quat[b1] = np.zeros(3), quat1[k]
        d.mocap_pos[b2], d.mocap_quat[b2] = pos2[k], quat2[k]
        mujoco.mj_kinematics(m, d)
        dist.append(mujoco.mj_geomDistance(m, d, g1, g2, 10.0, None))
    return np.array(dist)


def _save(path, quat1, shapes, dist, n, chosen):
    out = dict(
        cylinder_size=np.array(CYL),
        cylinder_quat=np.array(quat1),
        **shapes,
        dist=dist,
        chosen=np.array(chosen),
        mujoco_version=np.array(mujoco.__version__),
    )
    np.savez_compressed(path, **out)
    print(f"wrote {path}: {len(dist)} poses, {(dist[:n] < 0).sum()} of the random ones penetrating; chosen {dist[n:]}")


def cylinder_cylinder(m, d, rng):
    n = 80
    quat1 = [_quat(rng.normal(size=3), rng.uniform(0, np.pi)) for _ in range(n)]
    pos2 = list(rng.uniform(-0.3, 0.3, size=(n, 3)))
    quat2 = [_quat(rng.normal(size=3), rng.uniform(0, np.pi)) for _ in range(n)]
    up = np.array([1.0, 0.0, 0.0, 0.0])
    along_x, along_y = _quat([0.0, 1.0, 0.0], np.pi / 2), _quat([1.0, 0.0, 0.0], np.pi / 2)
    chosen = [
        (up, up, [0.02, 0.0, CYL[1] + CYL2[1] - 0.001]),
        (up, up, [0.02, 0.0, CYL[1] + CYL2[1] + 0.001]),
        (up, along_x, [0.0, 0.03, CYL[1] + CYL2[0] - 0.001]),
        (up, along_x, [0.0, 0.03, CYL[1] + CYL2[0] + 0.002]),
        (along_x, along_y, [0.0, 0.0, CYL[0] + CYL2[0] - 0.001]),
        (along_x, along_y, [0.0, 0.0, CYL[0] + CYL2[0] + 0.001]),
    ]
    for q1, q2, p in chosen:
        quat1.append(q1)
        quat2.append(q2)
        pos2.append(np.asarray(p, float))
    d.mocap_pos[1] = [9.0, -9.0, 9.0]  # the box out of the way
    dist = _distances(m, d, ("cyl", 0), ("cyl2", 2), quat1, pos2, quat2)
    shapes = dict(cylinder2_size=np.array(CYL2), cylinder2_pos=np.array(pos2), cylinder2_quat=np.array(quat2))
    _save(OUT2, quat1, shapes, dist, n, len(chosen))


if __name__ == "__main__":
    main()
