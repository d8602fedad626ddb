"""MuJoCo reference for the pairs of a mesh (its convex hull) with a sphere, a capsule, a
cylinder, a box and an ellipsoid (tests/test_meshes.py). MuJoCo is not a jaxdyn dependency.

    pip install mujoco          # 4.x
    python tests/reference/generate_mujoco_mesh_pairs.py

The mesh: 30 points drawn on an ellipsoid of semi-axes 0.15, 0.1, 0.07 m (an irregular convex
polytope), inline in the MJCF. MuJoCo moves a mesh to its centroid and principal axes; the
stored ``mesh_vertices`` are MuJoCo's, in the mesh geom's frame, and each pose is given as the
mesh geom's world pose (``mesh_pos``, ``mesh_mat``), so jaxdyn collides the same solid. For each
primitive, 60 random poses of the mesh around the primitive at the origin with its own random
orientation, and MuJoCo's ``mj_geomDistance`` of the two geoms (GJK where they are apart, EPA
where they overlap, ``ccd_tolerance`` 1e-12, 10,000 iterations). Stored in
``tests/data/mujoco/contact/mesh_pairs.npz``: per primitive ``<kind>_size``, ``<kind>_quat``
(``w, x, y, z``), ``<kind>_mesh_pos``, ``<kind>_mesh_mat``, ``<kind>_dist``.
"""

from __future__ import annotations

import os

import mujoco
import numpy as np
from generate_mujoco_pairs import _quat_axis_angle as _quat

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "data", "mujoco", "contact", "mesh_pairs.npz")
SIZES = {
    "sphere": (0.06, 0, 0),
    "capsule": (0.04, 0.1, 0),
    "cylinder": (0.07, 0.09, 0),
    "box": (0.09, 0.06, 0.05),
    "ellipsoid": (0.14, 0.09, 0.07),
}
N = 60


def main():
    rng = np.random.default_rng(21)
    u = rng.normal(size=(30, 3))
    points = u / np.linalg.norm(u, axis=1, keepdims=True) * [0.15, 0.1, 0.07]
    vertex = " ".join(f"{v:.6f}" for v in points.reshape(-1))
    bodies = "".join(
        f'<body name="{k}" mocap="true" pos="{3 * i} 9 9"><geom name="{k}" type="{k}" size="{" ".join(map(str, s))}"/></body>'
        for i, (k, s) in enumerate(SIZES.items())
    )
    xml = f"""<mujoco><option ccd_tolerance="1e-12" ccd_iterations="10000"/>
<asset><mesh name="rock" vertex="{vertex}"/></asset><worldbody>
<body name="rock" mocap="true"><geom name="rock" type="mesh" mesh="rock"/></body>{bodies}
</worldbody></mujoco>"""
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    rock = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, "rock")
    mesh = m.geom_dataid[rock]
    start, count = m.mesh_vertadr[mesh], m.mesh_vertnum[mesh]
    out = dict(
        mesh_vertices=np.array(m.mesh_vert[start : start + count], float), mujoco_version=np.array(mujoco.__version__)
    )
    for i, (kind, size) in enumerate(SIZES.items()):
        g = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, kind)
        quat, mpos, mmat, dist = [], [], [], []
        for _ in range(N):
            d.mocap_pos[:] = [[3.0 * j, 9.0, 9.0] for j in range(m.nmocap)]
            d.mocap_pos[i + 1] = 0.0
            d.mocap_quat[i + 1] = _quat(rng.normal(size=3), rng.uniform(0, np.pi))
            d.mocap_pos[0] = rng.uniform(-0.24, 0.24, 3)
            d.mocap_quat[0] = _quat(rng.normal(size=3), rng.uniform(0, np.pi))
            mujoco.mj_kinematics(m, d)
            quat.append(d.mocap_quat[i + 1].copy())
            mpos.append(d.geom_xpos[rock].copy())
            mmat.append(d.geom_xmat[rock].reshape(3, 3).copy())
            dist.append(mujoco.mj_geomDistance(m, d, g, rock, 10.0, None))
        out.update(
            {
                f"{kind}_size": np.array(size, float),
                f"{kind}_quat": np.array(quat),
                f"{kind}_mesh_pos": np.array(mpos),
                f"{kind}_mesh_mat": np.array(mmat),
                f"{kind}_dist": np.array(dist),
            }
        )
        print(f"{kind}: {N} poses, {(np.array(dist) < 0).sum()} overlapping")
    np.savez_compressed(OUT, **out)
    print(f"wrote {OUT} ({count} hull vertices)")


if __name__ == "__main__":
    main()
