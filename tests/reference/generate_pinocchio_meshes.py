"""Stored Pinocchio collision geometry of tests/data/mesh_robot/mesh_robot.urdf (tests/test_meshes.py).

    pip install pin numpy scipy                     # Pinocchio 4.x, not a jaxdyn dependency
    python tests/reference/generate_pinocchio_meshes.py [--out tests/data/pinocchio_meshes.npz]

Pinocchio reads the meshes through coal and assimp (STL, OBJ, COLLADA), resolves
``package://`` through ``package_dirs`` and applies ``<mesh scale>``. For each mesh collision
object, in Pinocchio's order: ``joint`` (the name of the joint it moves with), ``placement``
``(4, 4)`` (the object's frame in that joint's frame) and the vertices of the convex hull of the
mesh's vertices as Pinocchio loaded them, in the object's frame (``hull``, concatenated;
``hull_start`` the first row of each).
"""

from __future__ import annotations

import argparse
import os

import numpy as np
import pinocchio as pin
from scipy.spatial import ConvexHull

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "data")
URDF = os.path.join(DATA, "mesh_robot", "mesh_robot.urdf")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(DATA, "pinocchio_meshes.npz"))
    args = ap.parse_args()
    model = pin.buildModelFromUrdf(URDF, pin.JointModelFreeFlyer())
    # Pinocchio looks a relative mesh path up in package_dirs; jaxdyn beside the URDF file
    dirs = [DATA, os.path.dirname(URDF)]
    geom = pin.buildGeomFromUrdf(model, URDF, pin.COLLISION, package_dirs=dirs)
    names, joints, placements, hulls, starts = [], [], [], [], [0]
    for o in geom.geometryObjects:
        if not o.meshPath or not os.path.splitext(o.meshPath)[1]:  # a primitive
            continue
        V = np.asarray(o.geometry.vertices(), np.float64)
        pts = np.unique(V, axis=0)
        hull = pts[np.sort(ConvexHull(pts).vertices)]
        names.append(o.name)
        joints.append(model.names[o.parentJoint])
        placements.append(o.placement.homogeneous)
        hulls.append(hull)
        starts.append(starts[-1] + len(hull))
    np.savez(
        args.out,
        names=np.array(names),
        joint=np.array(joints),
        placement=np.array(placements),
        hull=np.concatenate(hulls),
        hull_start=np.array(starts),
        pinocchio=pin.__version__,
    )
    print(f"wrote {args.out}: {len(names)} mesh objects, {starts[-1]} hull vertices (Pinocchio {pin.__version__})")


if __name__ == "__main__":
    main()
