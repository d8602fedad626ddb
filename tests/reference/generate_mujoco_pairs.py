"""MuJoCo reference for the shape pairs and cylinder-ground contact of jaxdyn.contact
(tests/test_contact_pairs.py). MuJoCo is not a jaxdyn dependency.

    pip install mujoco          # 4.x
    python tests/reference/generate_mujoco_pairs.py

For ``tests/data/mjcf/contact_pairs.xml`` (spheres, capsules and a box on bodies of three slides
and a ball joint, a box on the world, a cylinder that collides only with the floor; margin 2 so
that separated pairs are reported too): the signed distance ``mjContact.dist`` of every pair of
geoms in contact after ``mj_forward`` (the smallest over the pair's contacts), at random poses
and a few chosen ones (parallel and crossing capsules, a sphere centre inside the box and on its
face, the cylinder upright, on its side and tilted). ``dist`` is NaN where MuJoCo reports no
contact for the pair.
"""

from __future__ import annotations

import os

import mujoco
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
XML = os.path.join(HERE, "..", "data", "mjcf", "contact_pairs.xml")
OUT = os.path.join(HERE, "..", "data", "mujoco", "contact", "pairs.npz")
BODIES = ("s1", "s2", "c1", "c2", "b1", "cyl")


def _quat_axis_angle(axis, angle):
    axis = np.asarray(axis, float) / np.linalg.norm(axis)
    return np.concatenate([[np.cos(angle / 2)], np.sin(angle / 2) * axis])


def poses(rng, k):
    """``k`` random poses (positions in a 0.5 m cube that reaches the world box; uniform
    orientations; the cylinder's centre 0 to 0.3 m above the floor) and the chosen ones."""
    out = []
    for _ in range(k):
        q = []
        for b in BODIES:
            p = (
                rng.uniform([-0.1, -0.25, 0.05], [0.4, 0.25, 0.55])
                if b != "cyl"
                else rng.uniform([-1, -1, 0], [1, 1, 0.3])
            )
            quat = rng.normal(size=4)
            q += [*p, *(quat / np.linalg.norm(quat))]
        out.append(q)
    far = {b: [2.0 + 2 * i, 5.0, 3.0, 1.0, 0.0, 0.0, 0.0] for i, b in enumerate(BODIES)}
    along_x = _quat_axis_angle([0, 1, 0], np.pi / 2)  # capsule z axis along world x
    chosen = [
        # parallel capsules side by side, overlapping along x; the spheres apart
        dict(c1=[0.0, 0.0, 1.0, *along_x], c2=[0.05, 0.1, 1.0, *along_x]),
        # parallel, end to end, not overlapping
        dict(c1=[0.0, 0.0, 1.0, *along_x], c2=[0.3, 0.02, 1.0, *along_x]),
        # crossing capsules
        dict(c1=[0.0, 0.0, 1.0, *along_x], c2=[0.0, 0.0, 1.1, *_quat_axis_angle([1, 0, 0], np.pi / 2)]),
        # sphere centre inside the box, nearer the +y face; sphere centre on the box's +z face
        dict(s2=[0.02, 0.1, 1.0, 1, 0, 0, 0], b1=[0.0, 0.0, 1.0, 1, 0, 0, 0], s1=[0.05, -0.03, 1.08, 1, 0, 0, 0]),
        # cylinder upright, 1 mm into the floor; on its side, 2 mm in; tilted
        dict(cyl=[0.0, 0.0, 0.199, 1, 0, 0, 0]),
        dict(cyl=[0.0, 0.0, 0.098, *_quat_axis_angle([1, 0, 0], np.pi / 2)]),
        dict(cyl=[0.0, 0.0, 0.15, *_quat_axis_angle([1, 1, 0], 0.7)]),
    ]
    for c in chosen:
        q = []
        for b in BODIES:
            q += list(c.get(b, far[b]))
        out.append(q)
    return np.array(out)


def main():
    m = mujoco.MjModel.from_xml_path(XML)
    d = mujoco.MjData(m)
    assert m.nq == 7 * len(BODIES)
    names = [mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_GEOM, i) for i in range(m.ngeom)]
    qs = poses(np.random.default_rng(0), 40)
    # every geom pair, names sorted; those MuJoCo never collides stay NaN
    pairs = sorted({tuple(sorted((names[a], names[b]))) for a in range(m.ngeom) for b in range(a + 1, m.ngeom)})
    dist = np.full((len(qs), len(pairs)), np.nan)
    for k, q in enumerate(qs):
        d.qpos[:] = q
        mujoco.mj_forward(m, d)
        for c in d.contact[: d.ncon]:
            key = tuple(sorted((names[c.geom1], names[c.geom2])))
            j = pairs.index(key)
            dist[k, j] = np.nanmin([dist[k, j], c.dist])
    keep = [j for j in range(len(pairs)) if np.any(np.isfinite(dist[:, j]))]
    out = dict(
        qpos=qs,
        pair_names=np.array([pairs[j] for j in keep]),
        dist=dist[:, keep],
        mujoco_version=np.array(mujoco.__version__),
    )
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    np.savez_compressed(OUT, **out)
    print({k: np.shape(v) for k, v in out.items()})
    print(out["pair_names"])


if __name__ == "__main__":
    main()
