"""Every mesh collision of every example-robot-data URDF, as jaxdyn and Pinocchio load it.

    pip install pin example-robot-data scipy        # not jaxdyn dependencies
    python tests/reference/check_pinocchio_meshes.py

For each URDF of example-robot-data that jaxdyn (with the robot's default base) and Pinocchio load
(``buildGeomFromUrdf`` with the distribution's share directory as ``package_dirs``), each of
Pinocchio's mesh collision objects is matched to the jaxdyn mesh geom on the same body whose
convex hull is nearest, and the distance between the two hulls, in that body's frame, is
reported: how far either hull's vertices reach outside the other. Prints one line per file
format (the worst distance and the count) and every robot where the counts differ or a
distance exceeds 1e-6 m.
"""

from __future__ import annotations

import os
import warnings

import numpy as np
import pinocchio as pin
from scipy.spatial import ConvexHull

import jaxdyn
from jaxdyn import geometry, robots


def outside(a, b):
    E = ConvexHull(b).equations
    return float((a @ E[:, :3].T + E[:, 3]).max(1).max())


def main():
    worst: dict[str, list[float]] = {}
    seen = set()
    for name in robots.external_robots():
        path, package = robots.external_index()[name]
        if path in seen:  # a file has a second name, "<package>/<stem>"
            continue
        seen.add(path)
        share = path[: path.index("example-robot-data")]
        floating = package in robots.FLOATING_PACKAGES
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model = jaxdyn.load_urdf(path, floating_base=floating, dtype=np.float64)
            pm = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if floating else pin.buildModelFromUrdf(path)
            pg = pin.buildGeomFromUrdf(pm, path, pin.COLLISION, package_dirs=[share])
        except Exception as e:  # a file one of the two refuses
            print(f"{name}: not compared ({type(e).__name__}: {str(e)[:100]})")
            continue
        g = model.geoms
        vert, vgeom = np.asarray(g.vertices), np.asarray(g.vertex_geom)
        ours: dict[int, list[np.ndarray]] = {}
        for i, t in enumerate(g.type):
            if t == geometry.MESH:
                ours.setdefault(g.body[i], []).append(vert[vgeom == i] @ np.asarray(g.R[i]).T + np.asarray(g.pos[i]))
        theirs: dict[int, list[tuple[str, np.ndarray]]] = {}
        for o in pg.geometryObjects:
            if not os.path.splitext(o.meshPath)[1]:
                continue
            V = np.asarray(o.geometry.vertices() if hasattr(o.geometry, "vertices") else o.geometry.points())
            P = o.placement.homogeneous
            joint = pm.names[o.parentJoint]
            body = -1 if o.parentJoint == 0 else 0 if joint == "root_joint" else model.joint_names.index(joint)
            theirs.setdefault(body, []).append((os.path.splitext(o.meshPath)[1].lower(), V @ P[:3, :3].T + P[:3, 3]))
        counts = {b: len(v) for b, v in ours.items()}, {b: len(v) for b, v in theirs.items()}
        if counts[0] != counts[1]:
            print(f"{name}: mesh geoms per body differ: jaxdyn {counts[0]}, Pinocchio {counts[1]}")
        for b, objs in theirs.items():
            for ext, V in objs:
                d = min(max(outside(mine, V), outside(V, mine)) for mine in ours.get(b, [np.zeros((4, 3)) + np.inf]))
                worst.setdefault(ext, []).append(d)
                if d > 1e-6:
                    print(f"{name}: a {ext} mesh on body {b} differs by {d:.3g} m")
    for ext, d in sorted(worst.items()):
        print(f"{ext}: {len(d)} mesh collisions, largest hull distance {max(d):.2g} m")


if __name__ == "__main__":
    main()
