"""MuJoCo reference for the pair of two meshes (their convex hulls; tests/test_meshes.py).
MuJoCo is not a jaxdyn dependency.

    pip install mujoco          # 4.x
    python tests/reference/generate_mujoco_mesh_mesh.py

The meshes: 30 points drawn on an ellipsoid of semi-axes 0.15, 0.1, 0.07 m (``rock``) and 16
on one of 0.08, 0.06, 0.05 m (``pebble``), inline in the MJCF. MuJoCo moves a mesh to its
centroid and principal axes; the stored vertices are MuJoCo's, in each geom's frame, and each
pose is given as the geoms' world poses, so jaxdyn collides the same solids. 100 random poses of
the pebble around the rock, and MuJoCo's ``mj_geomDistance`` of the two geoms (GJK where they
are apart, EPA where they overlap, ``ccd_tolerance`` 1e-12, 10,000 iterations). Stored in
``tests/data/mujoco/contact/mesh_mesh.npz``: ``rock_vertices``, ``pebble_vertices``,
``rock_pos``, ``rock_mat``, ``pebble_pos``, ``pebble_mat``, ``dist``.
"""

from __future__ import annotations

import os

import mujoco
import numpy as np
from generate_mujoco_pairs import _quat_axis_angle as _quat

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "data", "mujoco", "contact", "mesh_mesh.npz")
N = 100


def _points(rng, n, axes):
    u = rng.normal(size=(n, 3))
    return " ".join(f"{v:.6f}" for v in (u / np.linalg.norm(u, axis=1, keepdims=True) * axes).reshape(-1))


def main():
    rng = np.random.default_rng(23)
    xml = f"""<mujoco><option ccd_tolerance="1e-12" ccd_iterations="10000"/>
<asset><mesh name="rock" vertex="{_points(rng, 30, [0.15, 0.1, 0.07])}"/>
<mesh name="pebble" vertex="{_points(rng, 16, [0.08, 0.06, 0.05])}"/></asset><worldbody>
<body name="rock" mocap="true"><geom name="rock" type="mesh" mesh="rock"/></body>
<body name="pebble" mocap="true" pos="3 0 0"><geom name="pebble" type="mesh" mesh="pebble"/></body>
</worldbody></mujoco>"""
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    out = dict(mujoco_version=np.array(mujoco.__version__))
    ids = {}
    for name in ("rock", "pebble"):
        g = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, name)
        mesh = m.geom_dataid[g]
        start, count = m.mesh_vertadr[mesh], m.mesh_vertnum[mesh]
        out[f"{name}_vertices"] = np.array(m.mesh_vert[start : start + count], float)
        ids[name] = g
    poses = {k: ([], []) for k in ids}
    dist = []
    for _ in range(N):
        d.mocap_pos[0] = 0.0
        d.mocap_quat[0] = _quat(rng.normal(size=3), rng.uniform(0, np.pi))
        d.mocap_pos[1] = rng.uniform(-0.2, 0.2, 3)
        d.mocap_quat[1] = _quat(rng.normal(size=3), rng.uniform(0, np.pi))
        mujoco.mj_kinematics(m, d)
        for k, g in ids.items():
            poses[k][0].append(d.geom_xpos[g].copy())
            poses[k][1].append(d.geom_xmat[g].reshape(3, 3).copy())
        dist.append(mujoco.mj_geomDistance(m, d, ids["rock"], ids["pebble"], 10.0, None))
    for k, (pos, mat) in poses.items():
        out[f"{k}_pos"], out[f"{k}_mat"] = np.array(pos), np.array(mat)
    out["dist"] = np.array(dist)
    np.savez_compressed(OUT, **out)
    print(f"wrote {OUT}: {N} poses, {(out['dist'] < 0).sum()} overlapping")


if __name__ == "__main__":
    main()
