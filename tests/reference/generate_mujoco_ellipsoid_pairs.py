"""MuJoCo reference for the sphere-, capsule-, box-, cylinder- and ellipsoid-ellipsoid pairs of jaxdyn.contact
(tests/test_contact_pairs.py). MuJoCo is not a jaxdyn dependency.

    pip install mujoco          # 4.x
    python tests/reference/generate_mujoco_ellipsoid_pairs.py

An ellipsoid (semi-axes 0.2, 0.12, 0.07 m) at the origin at random orientations, and a sphere
(radius 0.05 m) and a capsule (radius 0.04 m, half-length 0.1 m) at random poses around it, 80 of
each, and a second ellipsoid (semi-axes 0.1, 0.06, 0.05 m) likewise; then chosen poses with the
ellipsoid level: the sphere 1 mm into and 1 mm above the top of the ellipsoid, and 2 mm into its
end along the long axis; the capsule lying level across the top 1 mm deep and 2 mm above it, and
standing on the top 1 mm deep; the second ellipsoid level on the top 3 cm off-centre 1 mm deep
and 1 mm above, and turned by 90 degrees against the end 2 mm deep; a box (half-sizes 0.1, 0.07,
0.05 m) likewise, then level under the ellipsoid 2 cm off-centre, its top face 1 mm into the
ellipsoid and 1 mm below it, and turned by 45 degrees about x with its top edge 1 mm above the
ellipsoid's lowest point (0.5 mm into it, 1.4 cm off the axis); a cylinder (radius 0.04 m,
half-length 0.08 m) likewise, then standing on the top of the ellipsoid 2 cm off-centre 1 mm deep
and 1 mm above, and lying level across the top 1 mm deep. Stored
(``tests/data/mujoco/contact/ellipsoid_pairs.npz``): ``sphere_dist``, ``capsule_dist``,
``ellipsoid2_dist``, ``box_dist`` and ``cylinder_dist``,
MuJoCo's ``mj_geomDistance`` of the two geoms (GJK for shapes apart, EPA for overlapping ones:
the minimum translation, with ``ccd_tolerance`` 1e-12 and 10,000 iterations); the poses
(positions, quaternions ``w, x, y, z``) and sizes; ``chosen``, the number of chosen poses at the
end of each.
"""

from __future__ import annotations

import os

import mujoco
import numpy as np
from generate_mujoco_pairs import _quat_axis_angle as _quat

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "data", "mujoco", "contact", "ellipsoid_pairs.npz")
ELL, SPH, CAP, ELL2, BOX = (0.2, 0.12, 0.07), 0.05, (0.04, 0.1), (0.1, 0.06, 0.05), (0.1, 0.07, 0.05)
CYL = (0.04, 0.08)

PROBE = f"""<mujoco><option ccd_tolerance="1e-12" ccd_iterations="10000"/><worldbody>
<body mocap="true"><geom name="ell" type="ellipsoid" size="{ELL[0]} {ELL[1]} {ELL[2]}"/></body>
<body mocap="true" pos="5 5 5"><geom name="sph" type="sphere" size="{SPH}"/></body>
<body mocap="true" pos="-5 5 5"><geom name="cap" type="capsule" size="{CAP[0]} {CAP[1]}"/></body>
<body mocap="true" pos="5 -5 5"><geom name="ell2" type="ellipsoid" size="{ELL2[0]} {ELL2[1]} {ELL2[2]}"/></body>
<body mocap="true" pos="-5 -5 5"><geom name="box" type="box" size="{BOX[0]} {BOX[1]} {BOX[2]}"/></body>
<body mocap="true" pos="5 5 -5"><geom name="cyl" type="cylinder" size="{CYL[0]} {CYL[1]}"/></body>
</worldbody></mujoco>"""


def _distances(m, d, body, geom, ell_quat, pos, quat):
    g1, g2 = (mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, name) for name in ("ell", geom))
    dist = []
    for k in range(len(ell_quat)):
        d.mocap_pos[0], d.mocap_quat[0] = np.zeros(3), ell_quat[k]
        d.mocap_pos[body], d.mocap_quat[body] = pos[k], quat[k]
        mujoco.mj_kinematics(m, d)
        dist.append(mujoco.mj_geomDistance(m, d, g1, g2, 10.0, None))
    d.mocap_pos[body] = {
        1: [5.0, 5.0, 5.0],
        2: [-5.0, 5.0, 5.0],
        3: [5.0, -5.0, 5.0],
        4: [-5.0, -5.0, 5.0],
        5: [5.0, 5.0, -5.0],
    }[body]
    return np.array(dist)


def main():
    rng = np.random.default_rng(21)
    m = mujoco.MjModel.from_xml_string(PROBE)
    d = mujoco.MjData(m)
    n = 80
    up = np.array([1.0, 0.0, 0.0, 0.0])
    out = dict(
        ellipsoid_size=np.array(ELL),
        sphere_size=np.array([SPH]),
        capsule_size=np.array(CAP),
        ellipsoid2_size=np.array(ELL2),
        box_size=np.array(BOX),
        cylinder_size=np.array(CYL),
    )
    for name, body, chosen in (
        (
            "sphere",
            1,
            [
                (up, [0.0, 0.0, ELL[2] + SPH - 0.001]),
                (up, [0.0, 0.0, ELL[2] + SPH + 0.001]),
                (up, [ELL[0] + SPH - 0.002, 0.0, 0.0]),
            ],
        ),
        (
            "capsule",
            2,
            [
                (_quat([0.0, 1.0, 0.0], np.pi / 2), [0.0, 0.0, ELL[2] + CAP[0] - 0.001]),
                (_quat([1.0, 0.0, 0.0], np.pi / 2), [0.02, 0.0, ELL[2] + CAP[0] + 0.002]),
                (up, [0.0, 0.0, ELL[2] + CAP[1] + CAP[0] - 0.001]),
            ],
        ),
        (
            "ellipsoid2",
            3,
            [
                (up, [0.03, 0.0, ELL[2] + ELL2[2] - 0.001]),
                (up, [0.03, 0.0, ELL[2] + ELL2[2] + 0.001]),
                (_quat([0.0, 0.0, 1.0], np.pi / 2), [ELL[0] + ELL2[1] - 0.002, 0.0, 0.0]),
            ],
        ),
        (
            "box",
            4,
            [
                (up, [0.02, 0.0, -(ELL[2] + BOX[2]) + 0.001]),
                (up, [0.02, 0.0, -(ELL[2] + BOX[2]) - 0.001]),
                (_quat([1.0, 0.0, 0.0], np.pi / 4), [0.0, 0.0, -ELL[2] + 0.001 - (BOX[1] + BOX[2]) / np.sqrt(2)]),
            ],
        ),
        (
            "cylinder",
            5,
            [
                (up, [0.02, 0.0, ELL[2] + CYL[1] - 0.001]),
                (up, [0.02, 0.0, ELL[2] + CYL[1] + 0.001]),
                (_quat([1.0, 0.0, 0.0], np.pi / 2), [0.0, 0.0, ELL[2] + CYL[0] - 0.001]),
            ],
        ),
    ):
        ell_quat = [_quat(rng.normal(size=3), rng.uniform(0, np.pi)) for _ in range(n)] + [up] * len(chosen)
        pos = list(rng.uniform(-0.3, 0.3, size=(n, 3))) + [np.asarray(p, float) for _, p in chosen]
        quat = [_quat(rng.normal(size=3), rng.uniform(0, np.pi)) for _ in range(n)] + [q for q, _ in chosen]
        geom = {"sphere": "sph", "capsule": "cap", "ellipsoid2": "ell2", "box": "box", "cylinder": "cyl"}[name]
        dist = _distances(m, d, body, geom, ell_quat, pos, quat)
        out.update(
            {
                f"{name}_ellipsoid_quat": np.array(ell_quat),
                f"{name}_pos": np.array(pos),
                f"{name}_quat": np.array(quat),
                f"{name}_dist": dist,
            }
        )
        print(f"{name}: {len(dist)} poses, {(dist[:n] < 0).sum()} random ones overlapping; chosen {dist[n:]}")
    out.update(chosen=np.array(3), mujoco_version=np.array(mujoco.__version__))
    np.savez_compressed(OUT, **out)
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
