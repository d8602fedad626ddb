"""MuJoCo reference for the sphere-cylinder and capsule-cylinder pairs and the ellipsoid's ground
contact of jaxdyn.contact (tests/test_contact_pairs.py). MuJoCo is not a jaxdyn dependency.

    pip install mujoco          # 4.x
    python tests/reference/generate_mujoco_convex.py

A cylinder (radius 0.1 m, half-length 0.15 m) at random orientations, and a sphere (radius
0.05 m) and a capsule (radius 0.04 m, half-length 0.1 m) at random poses around it, 60 of each,
a third of them penetrating, plus chosen poses: the sphere centre on the axis inside, near a rim,
beside the side, above a disk; the capsule along the side, standing on a disk, across a disk,
through the cylinder; an ellipsoid (semi-axes 0.12, 0.07, 0.04 m) at 40 random poses above and
into a plane. Stored (``tests/data/mujoco/contact/convex.npz``):

* ``sphere_dist``: ``mj_geomDistance`` of the sphere and the cylinder (GJK for shapes apart, EPA
  for overlapping ones: the minimum translation, with ``ccd_tolerance`` 1e-12 and 10,000
  iterations); for a sphere this is the sphere's signed distance to the cylinder;
* ``capsule_segment``: the smallest over the capsule's segment of MuJoCo's sphere-cylinder
  distance for a sphere of the capsule's radius centred on the segment point (a grid of 201
  points, then 100 golden-section steps around its best point): the capsule's signed distance
  as a swept sphere, deep penetrations included;
* ``capsule_dist``: ``mj_geomDistance`` of the capsule and the cylinder (equal to the segment
  value for shapes apart);
* ``ellipsoid_dist``: ``mj_geomDistance`` of the plane ``z = 0`` and the ellipsoid;
* the poses (positions, quaternions ``w, x, y, z``) and sizes.
"""

from __future__ import annotations

import os

import mujoco
import numpy as np
from generate_mujoco_pairs import _quat_axis_angle as _quat

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "data", "mujoco", "contact", "convex.npz")
CYL, SPHERE, CAPSULE = (0.1, 0.15), 0.05, (0.04, 0.1)
ELLIPSOID = (0.12, 0.07, 0.04)

PROBE = f"""<mujoco><option ccd_tolerance="1e-12" ccd_iterations="10000"/><worldbody>
<body mocap="true"><geom name="cyl" type="cylinder" size="{CYL[0]} {CYL[1]}"/></body>
<body mocap="true"><geom name="sphere" type="sphere" size="{SPHERE}"/></body>
<body mocap="true"><geom name="capsule" type="capsule" size="{CAPSULE[0]} {CAPSULE[1]}"/></body>
<body mocap="true"><geom name="probe" type="sphere" size="{CAPSULE[0]}"/></body>
<geom name="plane" type="plane" size="0 0 1" pos="0 0 -20"/>
<body mocap="true"><geom name="ellipsoid" type="ellipsoid" size="{ELLIPSOID[0]} {ELLIPSOID[1]} {ELLIPSOID[2]}"/></body>
</worldbody></mujoco>"""


def _rot(q):
    m = np.zeros(9)
    mujoco.mju_quat2Mat(m, q)
    return m.reshape(3, 3)


class Probe:
    def __init__(self):
        self.m = mujoco.MjModel.from_xml_string(PROBE)
        self.d = mujoco.MjData(self.m)
        self.far = np.array([10.0, 10.0, 10.0])

    def place(self, body, pos, quat=(1.0, 0.0, 0.0, 0.0)):
        self.d.mocap_pos[body] = pos
        self.d.mocap_quat[body] = quat

    def distance(self, name1, name2):
        mujoco.mj_kinematics(self.m, self.d)
        g1, g2 = (mujoco.mj_name2id(self.m, mujoco.mjtObj.mjOBJ_GEOM, n) for n in (name1, name2))
        return mujoco.mj_geomDistance(self.m, self.d, g1, g2, 10.0, None)

    def capsule_segment(self, cpos, cquat):
        """Smallest sphere-cylinder distance over the capsule's segment."""
        axis = _rot(cquat)[:, 2] * CAPSULE[1]
        self.place(2, self.far + 5)

        def f(t):
            self.place(3, cpos + (2 * t - 1) * axis)
            return self.distance("cyl", "probe")

        ts = np.linspace(0.0, 1.0, 201)
        vals = [f(t) for t in ts]
        k = int(np.argmin(vals))
        lo, hi = ts[max(k - 1, 0)], ts[min(k + 1, 200)]
        g = (np.sqrt(5) - 1) / 2
        for _ in range(100):
            x1, x2 = hi - g * (hi - lo), lo + g * (hi - lo)
            if f(x1) <= f(x2):
                hi = x2
            else:
                lo = x1
        self.place(3, self.far + 8)
        return min(f(0.5 * (lo + hi)), min(vals))


def main():
    rng = np.random.default_rng(7)
    p = Probe()
    n = 60
    cyl_quat = np.array([_quat(rng.normal(size=3), rng.uniform(0, np.pi)) for _ in range(n)])
    sph_pos = rng.uniform(-0.25, 0.25, size=(n, 3))
    cap_pos = rng.uniform(-0.3, 0.3, size=(n, 3))
    cap_quat = np.array([_quat(rng.normal(size=3), rng.uniform(0, np.pi)) for _ in range(n)])
    # chosen poses (cylinder upright): centre on the axis inside, near a rim, beside the side,
    # above a disk; capsule along the side, standing on a disk, across a disk, through it
    up = np.array([1.0, 0.0, 0.0, 0.0])
    cyl_quat = np.vstack([cyl_quat, [up] * 4])
    sph_pos = np.vstack([sph_pos, [[0, 0, 0.05], [0.09, 0.0, 0.14], [0.13, 0.02, 0.0], [0.01, 0.0, 0.18]]])
    cap_pos = np.vstack([cap_pos, [[0.13, 0.0, 0.0], [0.0, 0.0, 0.28], [0.0, 0.0, 0.18], [0.0, 0.0, 0.0]]])
    side, across = _quat([0, 1, 0], 0.0), _quat([0, 1, 0], np.pi / 2)
    cap_quat = np.vstack([cap_quat, [side, side, across, across]])
    sphere_dist, capsule_dist, capsule_segment = [], [], []
    for k in range(len(cyl_quat)):
        p.place(0, np.zeros(3), cyl_quat[k])
        p.place(1, sph_pos[k])
        p.place(2, p.far)
        p.place(3, p.far + 8)
        sphere_dist.append(p.distance("cyl", "sphere"))
        p.place(1, p.far + 3)
        p.place(2, cap_pos[k], cap_quat[k])
        capsule_dist.append(p.distance("cyl", "capsule"))
        capsule_segment.append(p.capsule_segment(cap_pos[k], cap_quat[k]))
    # the ellipsoid against the plane z = -20 (the plane geom), shifted: heights around 0.12
    ell_pos = np.column_stack([rng.uniform(-0.5, 0.5, (40, 2)), rng.uniform(-0.1, 0.15, 40)])
    ell_quat = np.array([_quat(rng.normal(size=3), rng.uniform(0, np.pi)) for _ in range(40)])
    ellipsoid_dist = []
    p.place(0, p.far + 20)
    for k in range(40):
        p.place(4, ell_pos[k] - [0.0, 0.0, 20.0], ell_quat[k])
        ellipsoid_dist.append(p.distance("plane", "ellipsoid"))
    out = dict(
        ellipsoid_size=np.array(ELLIPSOID),
        ellipsoid_pos=ell_pos,
        ellipsoid_quat=ell_quat,
        ellipsoid_dist=np.array(ellipsoid_dist),
        cylinder_size=np.array(CYL),
        cylinder_quat=cyl_quat,
        sphere_radius=np.array(SPHERE),
        sphere_pos=sph_pos,
        capsule_size=np.array(CAPSULE),
        capsule_pos=cap_pos,
        capsule_quat=cap_quat,
        sphere_dist=np.array(sphere_dist),
        capsule_dist=np.array(capsule_dist),
        capsule_segment=np.array(capsule_segment),
        mujoco_version=np.array(mujoco.__version__),
    )
    np.savez_compressed(OUT, **out)
    sd, cs = out["sphere_dist"], out["capsule_segment"]
    ed = out["ellipsoid_dist"]
    print(
        f"wrote {OUT}: sphere {len(sd)} poses ({(sd < 0).sum()} penetrating), capsule {(cs < 0).sum()} "
        f"penetrating, ellipsoid {(ed < 0).sum()} of {len(ed)} penetrating"
    )


if __name__ == "__main__":
    main()
