"""Write tests/data/mjcf/meshes/ell.stl and ell.obj: a closed, non-convex L-shaped solid (three
unit voxels, scaled to 5 cm) as a binary STL with outward-facing triangles, and the same solid as
a Wavefront OBJ (shared vertices, 1-based faces). Deterministic output."""

import os
import struct

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
VOXELS = {(0, 0, 0), (1, 0, 0), (0, 1, 0), (0, 1, 1)}
SIZE = 0.05


def triangles():
    out = []
    for v in sorted(VOXELS):
        for axis in range(3):
            for sign in (-1, 1):
                nb = list(v)
                nb[axis] += sign
                if tuple(nb) in VOXELS:
                    continue
                # the face's four corners, counter-clockwise seen from outside
                u, w = (axis + 1) % 3, (axis + 2) % 3
                base = np.array(v, float)
                if sign > 0:
                    base[axis] += 1
                corners = []
                for du, dw in ((0, 0), (1, 0), (1, 1), (0, 1)):
                    p = base.copy()
                    p[u] += du
                    p[w] += dw
                    corners.append(p)
                if sign < 0:
                    corners = corners[::-1]
                out += [(corners[0], corners[1], corners[2]), (corners[0], corners[2], corners[3])]
    return np.array(out) * SIZE


def main():
    tris = triangles()
    path = os.path.join(HERE, "..", "data", "mjcf", "meshes", "ell.stl")
    with open(path, "wb") as fh:
        fh.write(b"jaxdyn test mesh: L-shaped solid".ljust(80, b" "))
        fh.write(struct.pack("<I", len(tris)))
        for t in tris:
            n = np.cross(t[1] - t[0], t[2] - t[0])
            n = n / np.linalg.norm(n)
            fh.write(struct.pack("<12fH", *n, *t.ravel(), 0))
    print(path, len(tris), "triangles")
    points, index = np.unique(tris.reshape(-1, 3), axis=0, return_inverse=True)
    obj = os.path.join(HERE, "..", "data", "mjcf", "meshes", "ell.obj")
    with open(obj, "w") as fh:
        fh.write("# jaxdyn test mesh: L-shaped solid\n")
        fh.writelines(f"v {x!r} {y!r} {z!r}\n" for x, y, z in points.tolist())
        fh.writelines(f"f {a + 1} {b + 1} {c + 1}\n" for a, b, c in index.reshape(-1, 3).tolist())
    print(obj, len(points), "vertices")


if __name__ == "__main__":
    main()
