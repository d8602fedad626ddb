"""MuJoCo reference for the shape pairs and cylinder-ground contact of jaxdyn.contact
(tests/test_contact_pairs.py). MuJoCo is not a jaxdyn dependency.

    pip install mujoco          # 4.x
    python tests/reference/generate_mujoco_pairs.py

For ``tests/data/mjcf/contact_pairs.xml`` (spheres, capsules and a box on bodies of three slides
and a ball joint, a box on the world, a cylinder that collides only with the floor; every geom's
margin set to 2 m here, not in the file, so that separated pairs are reported too): the signed distance ``mjContact.dist`` of every pair of
geoms in contact after ``mj_forward`` (the smallest over the pair's contacts) and the number of
the pair's contacts ``ncon``, at random poses and chosen ones (``label``: parallel and crossing
capsules, a sphere centre inside the box and on its face, the cylinder upright, on its side and
tilted, and capsule-box poses: separated with a face, an edge or a vertex closest, parallel to a
face, across a face; penetrating with an end inside the box, lying on a face, the segment
through the box, an end inside with the segment going deeper). ``dist`` is NaN where MuJoCo reports no contact for the pair.

For the capsule-box pairs also ``segment``: the smallest over the capsule's segment of MuJoCo's
sphere-box distance (``mj_geomDistance`` of a sphere of the capsule's radius centred on the
segment point against the box; the distance is convex along the segment: a grid of 201 points,
then 100 golden-section steps around its best point), the capsule's signed distance by its
definition as a swept sphere, deep penetrations included. NaN for the other pairs.

For every pair MuJoCo reports, also ``geom_distance``: ``mj_geomDistance`` of its two geoms (the
Euclidean distance between separated shapes; MuJoCo's box-box contacts report, within the
margin, a separation along one axis instead). NaN where ``dist`` is.
"""

from __future__ import annotations

import os

import mujoco
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
XML = os.path.join(HERE, "..", "data", "mjcf", "contact_pairs.xml")
OUT = os.path.join(HERE, "..", "data", "mujoco", "contact", "pairs.npz")
BODIES = ("s1", "s2", "c1", "c2", "b1", "cyl")


PROBE = """<mujoco><worldbody>
<body mocap="true"><geom name="sphere" type="sphere" size="1"/></body>
<body mocap="true"><geom name="box" type="box" size="1 1 1"/></body>
</worldbody></mujoco>"""


def _quat_axis_angle(axis, angle):
    axis = np.asarray(axis, float) / np.linalg.norm(axis)
    return np.concatenate([[np.cos(angle / 2)], np.sin(angle / 2) * axis])


def _quat_z_to(v):
    """The rotation about ``e_z x v`` taking ``e_z`` to the direction ``v``."""
    v = np.asarray(v, float) / np.linalg.norm(v)
    return _quat_axis_angle(np.cross([0.0, 0.0, 1.0], v), np.arccos(v[2]))


def _capsule_at(end, direction, half_length):
    """Capsule pose (position, quaternion) with its -z end at ``end``, axis along ``direction``."""
    v = np.asarray(direction, float) / np.linalg.norm(direction)
    return [*(np.asarray(end, float) + half_length * v), *_quat_z_to(v)]


def capsule_box_poses():
    """Chosen capsule-box poses against box b1 at (0, 0, 1), unrotated (half-sizes 0.1, 0.15,
    0.08: top face at z = 1.08), with capsule c1 (radius 0.05, half-length 0.15) or c2 (0.08,
    0.1); label, poses."""
    b1 = [0.0, 0.0, 1.0, 1, 0, 0, 0]
    along_x, along_y = _quat_axis_angle([0, 1, 0], np.pi / 2), _quat_axis_angle([1, 0, 0], -np.pi / 2)
    yaw30 = _quat_z_to([np.cos(np.pi / 6), np.sin(np.pi / 6), 0.0])
    diag = np.array([1.0, 0.0, 1.0]) / np.sqrt(2)
    away = np.array([1.0, 0.8, 1.2]) / np.sqrt(3.08)
    return [
        # separated: the lower end 0.08 above the top face, tilted 30 degrees (phi 0.03)
        ("cb face", dict(b1=b1, c1=_capsule_at([0.02, 0.03, 1.16], [0.5, 0.0, np.sqrt(0.75)], 0.15))),
        # separated: across the +x top edge, perpendicular to its diagonal, centre 0.06 sqrt(2) away
        ("cb edge", dict(b1=b1, c1=[*([0.1, 0.0, 1.08] + 0.06 * np.sqrt(2) * diag), *_quat_z_to([1, 1, -1])])),
        # separated: an end 0.07 from the (+x, +y, +z) corner, pointing away from it
        ("cb vertex", dict(b1=b1, c1=_capsule_at([0.1, 0.15, 1.08] + 0.07 * away, away, 0.15))),
        # separated: c2 parallel to the top face, along y, 0.03 above it (MuJoCo: 2 contacts)
        ("cb parallel", dict(b1=b1, c2=[0.03, 0.01, 1.19, *along_y])),
        # separated: c1 level, 0.02 above the top face, yawed 30 degrees, both ends beyond x = +-0.1
        ("cb across", dict(b1=b1, c1=[0.01, 0.0, 1.15, *yaw30])),
        # penetrating: c2's lower end 0.02 below the top face, tilted 20 degrees, the end deepest
        ("cb end inside", dict(b1=b1, c2=_capsule_at([0.01, -0.02, 1.06], [np.sin(0.35), 0.0, np.cos(0.35)], 0.1))),
        # penetrating: c1 lying on the top face along y, 0.01 deep (MuJoCo: 2 contacts)
        ("cb on face", dict(b1=b1, c1=[0.02, 0.0, 1.12, *along_y])),
        # penetrating: c1's segment through the box along x (y 0.03, z 1.01), both ends outside
        ("cb through", dict(b1=b1, c1=[0.0, 0.03, 1.01, *along_x])),
        # penetrating: c2's -z end 0.01 inside the +x face, the segment going deeper to the top face
        ("cb end inside, deeper inward", dict(b1=b1, c2=_capsule_at([0.09, 0.0, 1.0], [-0.6, 0.0, 0.8], 0.1))),
    ]


def poses(rng, k):
    """``k`` random poses (positions in a 0.5 m cube that reaches the world box; uniform
    orientations; the cylinder's centre 0 to 0.3 m above the floor) and the chosen ones; the
    poses and their labels (empty for the random ones)."""
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
    labels = [""] * k + [
        "capsules parallel",
        "capsules end to end",
        "capsules crossing",
        "sphere in box",
        "cylinder upright",
        "cylinder on its side",
        "cylinder tilted",
    ]
    for label, c in capsule_box_poses():
        chosen.append(c), labels.append(label)
    for c in chosen:
        q = []
        for b in BODIES:
            q += list(c.get(b, far[b]))
        out.append(q)
    return np.array(out), np.array(labels)


def _segment_distance(probe, pd, end, axis, radius, box_pos, box_mat, box_size):
    """min over t in [0, 1] of MuJoCo's sphere-box distance, the sphere of ``radius`` centred at
    ``end + t axis`` (module docstring)."""
    probe.geom_size[0, 0] = radius
    probe.geom_size[1] = box_size
    pd.geom_xpos[1], pd.geom_xmat[1] = box_pos, box_mat
    pd.geom_xmat[0] = np.eye(3).ravel()

    def f(t):
        pd.geom_xpos[0] = end + t * axis
        return mujoco.mj_geomDistance(probe, pd, 0, 1, 10.0, None)

    grid = np.linspace(0.0, 1.0, 201)
    values = [f(t) for t in grid]
    i = int(np.argmin(values))
    lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, 200)]
    g = (np.sqrt(5.0) - 1.0) / 2.0
    x1, x2 = hi - g * (hi - lo), lo + g * (hi - lo)
    f1, f2 = f(x1), f(x2)
    for _ in range(100):
        if f1 < f2:
            hi, x2, f2 = x2, x1, f1
            x1 = hi - g * (hi - lo)
            f1 = f(x1)
        else:
            lo, x1, f1 = x1, x2, f2
            x2 = lo + g * (hi - lo)
            f2 = f(x2)
    return min(f1, f2, values[i])


def main():
    with open(XML) as fh:  # every geom with a margin of 2 m: separated pairs are reported too
        m = mujoco.MjModel.from_xml_string(fh.read().replace("<default>", '<default><geom margin="2"/>', 1))
    d = mujoco.MjData(m)
    assert m.nq == 7 * len(BODIES)
    names = [mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_GEOM, i) for i in range(m.ngeom)]
    probe = mujoco.MjModel.from_xml_string(PROBE)
    pd = mujoco.MjData(probe)
    qs, labels = poses(np.random.default_rng(0), 40)
    # every geom pair, names sorted; those MuJoCo never collides stay NaN
    pairs = sorted({tuple(sorted((names[a], names[b]))) for a in range(m.ngeom) for b in range(a + 1, m.ngeom)})
    dist = np.full((len(qs), len(pairs)), np.nan)
    ncon = np.zeros((len(qs), len(pairs)), np.int64)
    segment = np.full((len(qs), len(pairs)), np.nan)
    geom_distance = np.full((len(qs), len(pairs)), np.nan)
    capsule, box = mujoco.mjtGeom.mjGEOM_CAPSULE, mujoco.mjtGeom.mjGEOM_BOX
    for k, q in enumerate(qs):
        d.qpos[:] = q
        mujoco.mj_forward(m, d)
        for c in d.contact[: d.ncon]:
            key = tuple(sorted((names[c.geom1], names[c.geom2])))
            j = pairs.index(key)
            dist[k, j] = np.nanmin([dist[k, j], c.dist])
            ncon[k, j] += 1
            geom_distance[k, j] = mujoco.mj_geomDistance(m, d, c.geom1, c.geom2, 10.0, None)
            g1, g2 = sorted((c.geom1, c.geom2), key=lambda g: m.geom_type[g])
            if (m.geom_type[g1], m.geom_type[g2]) == (capsule, box) and ncon[k, j] == 1:
                axis = d.geom_xmat[g1].reshape(3, 3)[:, 2] * m.geom_size[g1, 1]
                end = d.geom_xpos[g1] - axis
                segment[k, j] = _segment_distance(
                    probe, pd, end, 2 * axis, m.geom_size[g1, 0], d.geom_xpos[g2], d.geom_xmat[g2], m.geom_size[g2]
                )
    keep = [j for j in range(len(pairs)) if np.any(np.isfinite(dist[:, j]))]
    out = dict(
        qpos=qs,
        label=labels,
        pair_names=np.array([pairs[j] for j in keep]),
        dist=dist[:, keep],
        ncon=ncon[:, keep],
        segment=segment[:, keep],
        geom_distance=geom_distance[:, keep],
        mujoco_version=np.array(mujoco.__version__),
    )
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    np.savez_compressed(OUT, **out)
    print({k: np.shape(v) for k, v in out.items()})
    print(out["pair_names"])


if __name__ == "__main__":
    main()
