"""Shape pairs and cylinders in jaxdyn.contact: signed distances against MuJoCo's
(tests/reference/generate_mujoco_pairs.py), analytic penetrations, normals and witnesses, the
collision filter (against MuJoCo's, tests/reference/generate_mujoco_filter.py), finite derivatives at the degenerate configurations, momentum and energy in a
collision, cylinders resting on the ground, and URDF <collision> elements.
"""

import functools
import json
import os
import warnings

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxdyn
from jaxdyn import contact as C
from jaxdyn import geometry, sim
from jaxdyn.contact import rules

HERE = os.path.dirname(__file__)
XML = os.path.join(HERE, "data", "mjcf", "contact_pairs.xml")
REF = os.path.join(HERE, "data", "mujoco", "contact", "pairs.npz")
BODIES = ("s1", "s2", "c1", "c2", "b1", "cyl")
G = 9.81


@functools.cache
def _model(dtype=jnp.float64):
    return jaxdyn.load_mjcf(XML, dtype=dtype)


def _q(**poses):
    """q of the pairs model: bodies not named sit far apart (no contact)."""
    q = []
    for i, b in enumerate(BODIES):
        q += list(poses.get(b, [3.0 + 3 * i, 10.0, 5.0, 1.0, 0.0, 0.0, 0.0]))
    return np.array(q)


BATCH = 64  # every batch is padded to this size: one compiled program per dtype


@functools.cache
def _batched_program(dtype):
    m = _model(dtype)
    z = jnp.zeros(m.nv, dtype)
    return jax.jit(jax.vmap(lambda q: (C.pair_contacts(m, q, z), C.contact_points(m, q, z), C.pair_distances(m, q))))


def _batched(dtype=jnp.float64):
    """Pair contacts, ground contact points and pair distances of a batch of at most ``BATCH``
    poses, from one compiled program per dtype."""

    def run(qs):
        n = qs.shape[0]
        assert n <= BATCH
        padded = jnp.concatenate([qs, jnp.broadcast_to(qs[:1], (BATCH - n, qs.shape[1]))])
        return jax.tree_util.tree_map(lambda x: x[:n], _batched_program(dtype)(padded))

    return run


def _pair_index(model, a, b):
    names = model.geoms.names
    for k, (i, j) in enumerate(C.collision_pairs(model).pairs):
        if {names[i], names[j]} == {a, b}:
            return k, (names[i], names[j]) == (a, b)
    raise KeyError((a, b))


def _pair_rows(model, k):
    """The rows of pair ``k`` in PairContacts."""
    return np.flatnonzero(C.collision_pairs(model).row_pair == k)


@pytest.mark.parametrize("dtype, tol", [(jnp.float64, 1e-12), (jnp.float32, 2e-6)])
def test_distances_match_mujoco(dtype, tol):
    """Signed distance of every supported pair but capsule-box (its own test), and the cylinder's
    deepest ground point, at 40 random poses and 16 chosen ones (parallel and crossing capsules, a
    sphere centre inside the box and on its face, the cylinder upright, on its side, tilted, the
    capsule-box poses) against mjContact.dist."""
    ref = np.load(REF)
    m = _model(dtype)
    pc, cp, pd = _batched(dtype)(jnp.asarray(ref["qpos"], dtype))
    keys = [tuple(x) for x in ref["pair_names"]]
    names = m.geoms.names
    table = C.collision_pairs(m)
    compared = 0
    for k, (i, j) in enumerate(table.pairs):
        if m.geoms.type[j] == geometry.BOX and m.geoms.type[i] in (geometry.CAPSULE, geometry.BOX):
            continue
        r = ref["dist"][:, keys.index(tuple(sorted((names[i], names[j]))))]
        ok = np.isfinite(r)
        assert ok.sum() >= 40 and (r[ok] < 0).sum() >= 1, (names[i], names[j])
        np.testing.assert_allclose(np.asarray(pd)[ok, k], r[ok], rtol=0, atol=tol)
        rows = _pair_rows(m, k)
        dist = np.asarray(pc.distance)[ok][:, rows]
        if len(rows) == 1:  # one contact: its row carries the pair's distance
            np.testing.assert_allclose(dist[:, 0], r[ok], rtol=0, atol=tol)
        else:  # capsule-capsule: the stretch's two ends, then the closest points counted by (B1)
            assert np.all(dist[:, :2] >= r[ok][:, None] - tol)
            np.testing.assert_allclose(dist[:, 2], r[ok] - np.minimum(0, dist[:, :2].min(1)), rtol=0, atol=tol)
        compared += ok.sum()
    assert len(table.pairs) == 15 and compared > 400
    # the cylinder against the floor: its deepest rim point
    cyl = np.array(cp.geom) == names.index("cyl")
    phi = np.asarray(cp.centre[..., 2] - cp.radius)[:, cyl].min(1)
    r = ref["dist"][:, keys.index(("cyl", "floor"))]
    assert np.all(np.isfinite(r)) and (r < 0).sum() > 10
    np.testing.assert_allclose(phi, r, rtol=0, atol=tol)
    assert table.unsupported == ()  # every pair MuJoCo collides here


CAPSULE_BOX = (("c1", "b1"), ("c2", "b1"), ("c1", "wbox"), ("c2", "wbox"))


@pytest.mark.parametrize("dtype, tol", [(jnp.float64, 1e-12), (jnp.float32, 2e-6)])
def test_capsule_box_matches_mujoco(dtype, tol):
    """Capsule-box signed distances (two capsules against a box on a body and the tilted world
    box) at 40 random poses and 9 chosen ones: equal to MuJoCo's mjContact.dist (the smaller of
    the pair's one or two contacts) wherever the capsule's segment stays outside the box
    (separated, and penetrating up to the radius); equal everywhere, also where the segment
    reaches into the box, to the minimum over the segment of MuJoCo's sphere-box distance (the
    reference's ``segment``: the capsule as a swept sphere); never above MuJoCo's, each of whose
    contacts is a sphere-box distance at one point of the segment."""
    ref = np.load(REF)
    m = _model(dtype)
    pc, _, pd = _batched(dtype)(jnp.asarray(ref["qpos"], dtype))
    keys = [tuple(x) for x in ref["pair_names"]]
    names = m.geoms.names
    outside = inside = penetrating = 0
    for a, b in CAPSULE_BOX:
        k, forward = _pair_index(m, a, b)
        assert forward  # the capsule first: lower type code
        j = keys.index(tuple(sorted((a, b))))
        mj, seg = ref["dist"][:, j], ref["segment"][:, j]
        ok = np.isfinite(mj)
        out = ok & (seg + float(m.geoms.size[names.index(a), 0]) > 0)  # the segment outside the box
        d = np.asarray(pd[:, k], np.float64)
        # the contacts (collision.segment_box_contacts): the ends, and the interior (B1)
        rows = np.asarray(pc.distance[:, _pair_rows(m, k)], np.float64)
        ends = np.minimum(rows[:, 0], rows[:, 1])
        np.testing.assert_allclose(rows[:, 2], d - np.minimum(0.0, ends), rtol=0, atol=tol)
        assert np.all(rows[:, 2] >= d - tol) and np.all(ends >= d - tol)
        np.testing.assert_allclose(d[out], mj[out], rtol=0, atol=tol)
        np.testing.assert_allclose(d[ok], seg[ok], rtol=0, atol=tol)
        assert np.all(d[ok] <= mj[ok] + tol)
        outside, inside = outside + out.sum(), inside + (ok & ~out).sum()
        penetrating += (out & (mj < 0)).sum()
    assert outside >= 150 and inside >= 20 and penetrating >= 20


def _rows(ref, labels):
    return [int(np.flatnonzero(ref["label"] == label)[0]) for label in labels]


_S30 = np.sin(np.pi / 6)
_DIAG = np.array([1.0, 0.0, 1.0]) / np.sqrt(2)
_CORNER = np.array([1.0, 0.8, 1.2]) / np.sqrt(3.08)
# label: capsule, phi, MuJoCo's dist and number of contacts, normal (capsule to box), witness;
# box b1 at (0, 0, 1), half-sizes 0.1, 0.15, 0.08 (top face z = 1.08); c1 radius 0.05, c2 0.08
CAPSULE_BOX_CHOSEN = {
    "cb face": ("c1", 0.03, 0.03, 2, [0, 0, -1], [0.02, 0.03, 1.095]),
    "cb edge": (
        "c1",
        0.06 * np.sqrt(2) - 0.05,
        0.06 * np.sqrt(2) - 0.05,
        2,
        -_DIAG,
        0.5 * ([0.1, 0.0, 1.08] + np.array([0.16, 0.0, 1.14]) - 0.05 * _DIAG),
    ),
    "cb vertex": ("c1", 0.02, 0.02, 1, -_CORNER, [0.1, 0.15, 1.08] + 0.01 * _CORNER),
    "cb parallel": ("c2", 0.03, 0.03, 2, [0, 0, -1], [0.03, 0.01, 1.095]),  # the segment's middle
    "cb across": ("c1", 0.02, 0.02, 2, [0, 0, -1], [0.0, -0.01 * _S30 / np.cos(np.pi / 6), 1.09]),
    "cb end inside": ("c2", -0.1, -0.1, 1, [0, 0, -1], [0.01, -0.02, 1.03]),
    "cb on face": ("c1", -0.01, -0.01, 2, [0, 0, -1], [0.02, 0.0, 1.075]),
    # MuJoCo's point: the end at x = -0.15, 0.05 from the -x face; jaxdyn's: the middle of the
    # segment's deepest part |x| <= 0.03, 0.07 under the top face
    "cb through": ("c1", -0.12, 0.0, 2, [0, 0, -1], [0.0, 0.03, 1.02]),
    # MuJoCo's point: the end inside, 0.01 from the +x face; jaxdyn's: 0.04 from the +x and top faces
    "cb end inside, deeper inward": ("c2", -0.12, -0.09, 1, None, None),
}


# the distances of the three contacts (end 0, end 1, interior) where they are hand-computed
CAPSULE_BOX_ROWS = {
    "cb on face": [-0.01, -0.01, 0.0],
    "cb end inside": [-0.1, 0.2 * np.cos(0.35) - 0.1, 0.0],  # the upper end above the top face
    "cb through": [0.05 - 0.05, 0.05 - 0.05, -0.12],
}


def test_capsule_box_chosen_poses():
    """The chosen capsule-box poses against hand-computed values: signed distance, normal (from the
    capsule to the box) and witness (midway between the surfaces; for a segment parallel to a face,
    the middle of the part above the face); MuJoCo's distance and number of contacts as the docs
    state: the same distance where the segment stays outside the box or an end inside it is its
    deepest point, shallower for a segment through the box or going deeper from an end inside.
    The normal and witness are those of the pair's interior contact (its third row); the
    contacts' distances (B1) as collision.segment_box_contacts states: lying on the face, the
    two ends carry the depth and the interior none; an end inside, that end; through the box,
    the interior."""
    ref = np.load(REF)
    m = _model()
    rows = _rows(ref, CAPSULE_BOX_CHOSEN)
    pc, _, pd = _batched()(jnp.asarray(ref["qpos"][rows]))
    keys = [tuple(x) for x in ref["pair_names"]]
    tol = dict(rtol=0, atol=1e-12)
    for s, (label, (capsule, phi, mj, ncon, normal, witness)) in enumerate(CAPSULE_BOX_CHOSEN.items()):
        k, _ = _pair_index(m, capsule, "b1")
        j = keys.index(tuple(sorted((capsule, "b1"))))
        np.testing.assert_allclose(pd[s, k], phi, **tol, err_msg=label)
        np.testing.assert_allclose(ref["dist"][rows[s], j], mj, **tol, err_msg=label)
        assert ref["ncon"][rows[s], j] == ncon, label
        r = _pair_rows(m, k)
        if normal is not None:
            np.testing.assert_allclose(pc.normal[s, r[2]], normal, **tol, err_msg=label)
            np.testing.assert_allclose(pc.point[s, r[2]], witness, **tol, err_msg=label)
        if label in CAPSULE_BOX_ROWS:
            np.testing.assert_allclose(pc.distance[s, r], CAPSULE_BOX_ROWS[label], **tol, err_msg=label)


@pytest.mark.parametrize("dtype, tol", [(jnp.float64, 1e-12), (jnp.float32, 2e-6)])
def test_box_box_matches_mujoco(dtype, tol):
    """Box-box (b1 against the tilted world box) at 40 random poses: apart, the boxes' distance
    equals MuJoCo's mj_geomDistance (the reference's ``geom_distance``; MuJoCo's box-box contact
    reports a separation along one axis, not the distance) and the smallest distance of the 40
    contacts; overlapping, it is never deeper than MuJoCo's penetration (the minimum translation
    that separates them: a point of one box at depth d inside the other needs a translation of at
    least d), and no contact is deeper than it."""
    ref = np.load(REF)
    m = _model(dtype)
    pc, _, pd = _batched(dtype)(jnp.asarray(ref["qpos"], dtype))
    keys = [tuple(x) for x in ref["pair_names"]]
    k, _ = _pair_index(m, "wbox", "b1")
    j = keys.index(("b1", "wbox"))
    mj, gd = ref["dist"][:, j], ref["geom_distance"][:, j]
    ok = np.isfinite(mj)
    apart, overlap = ok & (gd > 0), ok & (mj < 0)
    assert apart.sum() >= 30 and overlap.sum() >= 8
    d = np.asarray(pd[:, k], np.float64)
    rows = np.asarray(pc.distance[:, _pair_rows(m, k)], np.float64)
    assert rows.shape[1] == 40
    np.testing.assert_allclose(d[apart], gd[apart], rtol=0, atol=tol)
    np.testing.assert_allclose(rows[apart].min(1), gd[apart], rtol=0, atol=tol)
    assert np.all(d[overlap] >= mj[overlap] - tol) and np.all(d[overlap] < 0)
    # every contact's distance is the distance of a point of an edge, or (B1) above it
    assert np.all(rows[overlap] >= d[overlap, None] - tol) and np.all(rows[overlap].min(1) < 0)
    normals = np.asarray(pc.normal[:, _pair_rows(m, k)], np.float64)
    np.testing.assert_allclose(np.linalg.norm(normals, axis=-1), 1.0, rtol=0, atol=10 * tol)


BOX_ON_BOX = """<mujoco><worldbody>
<geom name="table" type="box" size="0.3 0.2 0.05" pos="0.05 0 0.5" euler="0 0 20"/>
<body name="box"><freejoint/><geom name="box" type="box" size="0.08 0.06 0.04" mass="0.8"/></body>
</worldbody></mujoco>"""


def test_box_falls_onto_box():
    """A 0.8 kg box dropped flat, and dropped tilted about two axes, onto a box on the world (top
    face z = 0.55) comes to rest on its 4 lower corners, each at the Hunt-Crossley depth
    (m g / 4 k)^(1/p) as on the ground, the edges' contacts (B1) carrying nothing, the normal
    force equal to the weight, flat and still. Thrown spinning onto it, it tumbles onto a side
    face and rests there, and its mechanical energy (kinetic and gravitational) never exceeds its
    start."""
    m = jaxdyn.load_mjcf(BOX_ON_BOX, dtype=jnp.float64)
    ct = C.Contact(collide_pairs=True)
    assert C.collision_pairs(m).pairs == ((0, 1),) and C.collision_pairs(m).rows == (40,)  # table, box
    k, p, mass, hz, top = 1e6, 1.5, 0.8, 0.04, 0.55
    tilt = np.array([np.cos(0.15), np.sin(0.15) * 0.6, np.sin(0.15) * 0.8, 0.0])
    spin = np.array([np.cos(0.3), np.sin(0.3) * 0.6, np.sin(0.3) * 0.8, 0.0])
    q0 = jnp.array(
        [
            [0.0, 0.0, top + hz + 1e-3, 1.0, 0.0, 0.0, 0.0],
            [0.03, -0.02, top + hz + 0.04, *tilt],
            [0.03, -0.02, 0.7, *spin],
        ]
    )
    qd0 = jnp.zeros((3, 6)).at[2].set(jnp.array([6.0, -8.0, 3.0, 0.1, -0.05, 0.0]))  # [omega; v]

    @jax.jit
    @jax.vmap
    def settle(q0, qd0):
        tr = sim.rollout(m, q0, qd0, jnp.zeros((1500, 6)), 1e-3, contact=ct)
        pc = C.pair_contacts(m, tr.q[-1], tr.qd[-1])
        energy = jax.vmap(lambda q, v: jaxdyn.kinetic_energy(m, q, v) + jaxdyn.potential_energy(m, q))(tr.q, tr.qd)
        return tr.q, tr.qd, C.total_force(m, tr.q[-1], tr.qd[-1], ct), pc.distance, energy, tr.nonfinite_step

    q, qd, f, dist, energy, bad = (np.asarray(a) for a in settle(q0, qd0))
    assert np.all(bad == -1) and np.all(np.isfinite(q))
    assert np.all(energy <= energy[:, :1] * (1 + 1e-12))
    # the thrown box tumbles onto a side face (half-size 0.06) and rests there
    np.testing.assert_allclose(q[2, -1, 2], top + 0.06 - (mass * G / (4 * k)) ** (1 / p), rtol=1e-6)
    assert np.abs(qd[2, -1]).max() < 1e-6
    depth = (mass * G / (4 * k)) ** (1 / p)
    for s in range(2):  # flat, tilted
        np.testing.assert_allclose(top + hz - q[s, -1, 2], depth, rtol=1e-6)
        np.testing.assert_allclose(f[s], [0.0, 0.0, mass * G], rtol=1e-6, atol=1e-9)
        np.testing.assert_allclose(np.abs(qd[s, -1]).max(), 0.0, atol=1e-6)
        w, x, y, z = q[s, -1, 3:]
        assert abs(1 - 2 * (x * x + y * y) - 1) < 1e-9  # the box's z axis vertical
        table_corners, box_corners, edges = dist[s, :8], dist[s, 8:16], dist[s, 16:]
        lower = np.sort(box_corners)[:4]
        np.testing.assert_allclose(lower, -depth, rtol=1e-6)
        assert np.all(np.sort(box_corners)[4:] > 0) and np.all(table_corners > 0)
        np.testing.assert_allclose(np.minimum(edges, 0.0), 0.0, atol=1e-12)


def _quat_of(R):
    """The unit quaternion ``(w, x, y, z)`` of a rotation matrix (its trace ``> -1``)."""
    w = 0.5 * np.sqrt(1.0 + np.trace(R))
    return np.array([w, (R[2, 1] - R[1, 2]) / (4 * w), (R[0, 2] - R[2, 0]) / (4 * w), (R[1, 0] - R[0, 1]) / (4 * w)])


def _qmul(a, b):
    w1, v1, w2, v2 = a[0], a[1:], b[0], b[1:]
    return jnp.concatenate([jnp.array([w1 * w2 - jnp.dot(v1, v2)]), w1 * v2 + w2 * v1 + jnp.cross(v1, v2)])


def test_capsule_box_gradients():
    """jax.grad of the capsule-box distance w.r.t. the capsule's pose (a translation and a
    rotation vector applied to it, at zero) and w.r.t. q is finite at every chosen pose and a
    random one, and that of every pair's distance in float32 at every reference pose. Where the distance is smooth in the pose (the closest feature a face, an edge or a
    vertex, an end inside the box, the deepest point where two faces are equally near, the random
    pose) it equals central differences; with the segment parallel to the top face, across it, on
    it or through the box, the translation gradient is the face normal (the rotation gradient, at
    a kink of the distance, is only finite)."""
    ref = np.load(REF)
    m = _model()
    smooth = ["cb face", "cb edge", "cb vertex", "cb end inside", "cb end inside, deeper inward"]
    level = ["cb parallel", "cb across", "cb on face", "cb through"]
    generic = next(r for r in range(len(ref["qpos"])) if ref["label"][r] == "" and ref["segment"][r, 0] < 0)
    rows = [*_rows(ref, smooth + level), generic]  # generic: random, c1 penetrating b1
    which = jnp.array([CAPSULE_BOX_CHOSEN[lb][0] == "c2" for lb in smooth + level] + [False], jnp.float64)
    qs = jnp.asarray(ref["qpos"][rows])
    k1, k2 = _pair_index(m, "c1", "b1")[0], _pair_index(m, "c2", "b1")[0]

    def distance(xi, q, c2):  # xi moves c1 (c2 = 0) or c2 (c2 = 1)
        for w, capsule in ((1.0 - c2, "c1"), (c2, "c2")):
            i0 = 7 * BODIES.index(capsule)
            dq = jnp.concatenate([jnp.ones(1), 0.5 * w * xi[3:]])
            rot = _qmul(dq / jnp.linalg.norm(dq), q[i0 + 3 : i0 + 7])
            q = q.at[i0 : i0 + 3].add(w * xi[:3]).at[i0 + 3 : i0 + 7].set(rot)
        d = C.pair_distances(m, q)
        return jnp.where(c2 == 0.0, d[k1], d[k2])

    grads = jax.jit(jax.vmap(jax.grad(distance, argnums=(0, 1)), (None, 0, 0)))
    g, gq = (np.asarray(a) for a in grads(jnp.zeros(6), qs, which))
    assert np.all(np.isfinite(g)) and np.all(np.isfinite(gq))
    h = 1e-6
    steps = jnp.asarray(np.concatenate([h * np.eye(6), -h * np.eye(6)]))
    values = jax.jit(jax.vmap(jax.vmap(distance, (0, None, None)), (None, 0, 0)))(steps, qs, which)
    values = np.asarray(values)
    fd = (values[:, :6] - values[:, 6:]) / (2 * h)
    is_smooth = np.arange(len(rows)) < len(smooth)
    is_smooth[-1] = True
    np.testing.assert_allclose(g[is_smooth], fd[is_smooth], rtol=0, atol=1e-7)
    up = np.broadcast_to([0.0, 0.0, 1.0], (len(level), 3))
    np.testing.assert_allclose(g[~is_smooth, :3], up, rtol=0, atol=1e-12)
    np.testing.assert_allclose(fd[~is_smooth, :3], up, rtol=0, atol=1e-7)
    # float32, compiled and batched over every reference pose: finite (sphere-box's nearest-face
    # gap by jnp.min gave NaN here: its derivative divides by the count of elements equal to the
    # minimum, 0 where the compiled program recomputed them with a different rounding)
    m32 = _model(jnp.float32)
    z32 = jnp.zeros(m32.nv, jnp.float32)
    total = jax.jit(jax.vmap(jax.grad(lambda q: C.pair_contacts(m32, q, z32).distance.sum())))
    assert np.all(np.isfinite(np.asarray(total(jnp.asarray(ref["qpos"], jnp.float32)))))


def test_analytic_penetrations_normals_and_witnesses():
    """Penetration, normal (first geom to second) and witness point (midway between the
    surfaces) of spheres, a sphere on the tilted world box, a sphere inside a box, crossing and
    parallel capsules (three contacts each); friction the larger of the two geoms'."""
    m = _model()
    x = [1.0, 0.0, 0.0, 0.0]
    along_x = [np.cos(np.pi / 4), 0.0, np.sin(np.pi / 4), 0.0]
    along_y = [np.cos(np.pi / 4), -np.sin(np.pi / 4), 0.0, 0.0]
    iw = m.geoms.names.index("wbox")
    Rw, cw = np.asarray(m.geoms.R[iw]), np.asarray(m.geoms.pos[iw])
    hw = np.asarray(m.geoms.size[iw])
    k_law, p_law = 1e6, 1.5
    d_rest = (1.0 * G / k_law) ** (1 / p_law)
    on_wbox = cw + Rw @ [0.02, -0.03, hw[2] + 0.1 - d_rest]
    qs = [
        _q(s1=[0, 0, 1, *x], s2=[0.12, 0.05, 1, *x]),
        _q(s1=[*on_wbox, *x]),
        _q(s2=[0.02, 0.1, 1, *x], b1=[0, 0, 1, *x]),
        _q(c1=[0, 0, 1, *along_x], c2=[0.03, 0.02, 1.1, *along_y]),
        _q(c1=[0, 0, 1, *along_x], c2=[0.05, 0.1, 1, *along_x]),
    ]
    pc, _, _ = _batched()(jnp.asarray(np.array(qs)))
    dist, nrm, pt = (np.asarray(a) for a in (pc.distance, pc.normal, pc.point))
    tol = dict(rtol=0, atol=1e-12)

    def check(sample, a, b, dist_ref, n_ref, p_ref, contact=0):
        k, forward = _pair_index(m, a, b)
        assert forward
        k = _pair_rows(m, k)[contact]
        np.testing.assert_allclose(dist[sample, k], dist_ref, **tol)
        np.testing.assert_allclose(nrm[sample, k], n_ref, **tol)
        np.testing.assert_allclose(pt[sample, k], p_ref, **tol)

    # spheres 0.1 and 0.07 at distance 0.13: penetration 0.04 along the centre line
    n = np.array([0.12, 0.05, 0.0]) / 0.13
    check(0, "s1", "s2", 0.13 - 0.17, n, [0, 0, 1] + (0.1 - 0.02) * n)
    # sphere resting on the world box's top face at the Hunt-Crossley depth of 1 kg
    top = Rw[:, 2]
    check(1, "s1", "wbox", -d_rest, -top, on_wbox - (0.1 - d_rest / 2) * top)
    # sphere centre inside box b1 (half-sizes 0.1, 0.15, 0.08), nearest face +y at 0.05
    check(2, "s2", "b1", -0.05 - 0.07, [0, -1, 0], [0.02, 0.5 * (0.15 + 0.1 - 0.07), 1])
    # crossing capsules (radii 0.05, 0.08): segments 0.1 apart at x = 0.03; the two ends of the
    # stretch of c1 alongside c2 are both the crossing, and the closest points add nothing (B1)
    w = [0.03, 0, 1 + 0.5 * (0.1 + 0.05 - 0.08)]
    check(3, "c1", "c2", 0.1 - 0.13, [0, 0, 1], w, contact=0)
    check(3, "c1", "c2", 0.1 - 0.13, [0, 0, 1], w, contact=1)
    check(3, "c1", "c2", 0.0, [0, 0, 1], w, contact=2)
    # parallel capsules, overlap x in [-0.05, 0.15]: contacts at the overlap's two ends, the
    # closest points (the overlap's middle) counted beyond them: 0
    y = 0.5 * (0.1 + 0.05 - 0.08)
    check(4, "c1", "c2", 0.1 - 0.13, [0, 1, 0], [-0.05, y, 1], contact=0)
    check(4, "c1", "c2", 0.1 - 0.13, [0, 1, 0], [0.15, y, 1], contact=1)
    check(4, "c1", "c2", 0.0, [0, 1, 0], [0.05, y, 1], contact=2)
    # the force on the sphere resting on the box carries its weight along the face normal
    ct = C.Contact(collide_ground=False)
    f = eqx.filter_jit(C.total_force)(m, qs[1], np.zeros(m.nv), ct)
    np.testing.assert_allclose(np.asarray(f), G * top, rtol=1e-10, atol=1e-12)
    # friction: the larger of the two geoms' (s2 has 0.6, every other geom 1)
    fr = np.asarray(m.geoms.friction[:, 0])
    for row, (i, j) in enumerate(zip(pc.geom1, pc.geom2)):
        assert pc.mu[0, row] == max(fr[i], fr[j])


FILTER = """<mujoco><worldbody>
<geom name="floor" type="plane" size="0 0 1"/>
<geom name="w" type="sphere" size="0.1" pos="0 0 -1"/>
<body name="a"><joint type="hinge"/>
  <geom name="a1" type="sphere" size="0.1" mass="1"/><geom name="a2" type="capsule" size="0.1 0.2" mass="1"/>
  <body name="b"><joint type="hinge"/><geom name="b1" type="sphere" size="0.1" mass="1"/>
    <body name="c"><joint type="hinge"/>
      <geom name="c1" type="sphere" size="0.1" mass="1"/><geom name="c2" type="box" size="0.1 0.1 0.1" mass="1"/>
    </body>
  </body>
</body>
<body name="d"><joint type="slide"/><geom name="d1" type="sphere" size="0.1" mass="1" contype="1" conaffinity="2"/></body>
<body name="e"><joint type="slide"/>
  <geom name="e1" type="sphere" size="0.1" mass="1" contype="2" conaffinity="0"/>
  <geom name="e2" type="sphere" size="0.1" mass="1" contype="0" conaffinity="0"/>
</body>
</worldbody></mujoco>"""


def test_pair_filter():
    """MuJoCo's rules: no pair within a body, none between parent and child (the world's
    children do collide with world geoms), contype/conaffinity in either direction, exclude."""
    m = jaxdyn.load_mjcf(FILTER)
    names = m.geoms.names

    def named(pairs):
        return {frozenset((names[i], names[j])) for i, j in pairs}

    def s(*pairs):
        return {frozenset(p.split("-")) for p in pairs}

    t = C.collision_pairs(m)
    world = ("w-a1", "w-a2", "w-b1", "w-c1", "w-c2")  # the world is a's parent: no exclusion
    a_c = ("a1-c1", "a1-c2", "a2-c1", "a2-c2")  # grandparent and grandchild collide
    d = ("w-d1", "a1-d1", "a2-d1", "b1-d1", "c1-d1", "c2-d1", "d1-e1")  # d1 contype 1, e1's 2 & 2
    assert named(t.pairs) == s(*world, *a_c, *d)
    assert named(t.unsupported) == set()
    t = C.collision_pairs(m, exclude=[("a", "c"), ("world", "d")])
    assert named(t.pairs) == s(*world, *d[1:])
    assert named(t.unsupported) == set()
    with pytest.raises(ValueError, match="no body named 'nope'"):
        C.collision_pairs(m, exclude=[("a", "nope")])


def test_filter_matches_mujoco():
    """Every geom pair MuJoCo collides in contact_filter.xml (bit masks; geoms on one body; parent
    and child, also through a body welded to its parent; <exclude> by MuJoCo body, also where
    that body is merged into its parent in jaxdyn; explicit <pair>s that override the rest; a
    floor plane with its own masks), against jaxdyn's pair table and ground contacts."""
    path = os.path.join(HERE, "data", "mjcf", "contact_filter.xml")
    with pytest.warns(UserWarning) as record:  # every pair parameter in it is read but one
        m = jaxdyn.load_mjcf(path)
    (text,) = [str(w.message) for w in record]
    assert "<pair geom1='d2' geom2='floor'>: MuJoCo's friction [0.7, 1.0," in text and "is anisotropic" in text
    # in the pairs' order: c2-e1's margin; d1-w of condim 4 with torsional friction 0.02
    assert np.allclose(m.geoms.pair_margin, [0.0, 0.0, 0.0, 0.0, 0.01])
    assert m.geoms.pair_condim == (3, 4, 3, 3, 1)
    np.testing.assert_allclose(np.asarray(m.geoms.pair_angular)[1], [0.02, 0.0001])
    assert m.geoms.condim[m.geoms.names.index("c3")] == 1
    with open(os.path.join(HERE, "data", "mujoco", "contact", "filter.json")) as fh:
        stored = json.load(fh)
    ref = {frozenset(p) for p in stored["pairs"]}
    names = m.geoms.names
    t = C.collision_pairs(m)
    pairs = {frozenset((names[i], names[j])) for i, j in t.pairs}
    assert pairs == {p for p in ref if "floor" not in p} and t.unsupported == ()
    assert any("c3" in p for p in pairs)  # the cylinder's pairs are collided too
    ground = {names[g] for g in range(m.geoms.ng) if rules.collidable(m.geoms, g)}
    assert ground == {n for p in ref if "floor" in p for n in p if n != "floor"}
    # an excluded pair exerts no force where MuJoCo's filter would have admitted it: geoms af
    # (body a_fixed, welded to a) and d3 (body d) overlap only when excluded
    assert ("af" in names) and frozenset(("af", "d3")) not in pairs
    # each contact's sliding friction as MuJoCo's: the higher-priority geom's, else the larger of
    # the two geoms' (the floor's too), or an explicit pair's own (0.3, 0.7, and MuJoCo's default 1 where the pair gives none);
    # none where MuJoCo's contact has dimension 1 (c3 against e1, both condim 1; the pair c2-e1)
    q, qd = jnp.zeros(m.nq), jnp.zeros(m.nv)
    got = {}
    cp = C.contact_points(m, q, qd, C.Ground.from_model(m))
    for g, mu in zip(cp.geom, np.asarray(cp.mu)):
        got.setdefault("|".join(sorted((names[g], "floor"))), set()).add(round(float(mu), 6))
    pc = C.pair_contacts(m, q, qd)
    for g1, g2, mu in zip(pc.geom1, pc.geom2, np.asarray(pc.mu)):
        got.setdefault("|".join(sorted((names[g1], names[g2]))), set()).add(round(float(mu), 6))
    # (d3 has priority 1: its 0.2 wins against every geom and the floor)
    assert {"a1|b1", "d2|floor", "d1|w", "a1|floor", "a1|d3", "b1|d3", "d3|floor"} <= set(stored["friction"])
    assert {k for k, d in stored["dim"].items() if d == 1} == {"c3|e1", "c2|e1"}
    for key, mu in stored["friction"].items():
        assert got[key] == {round(mu if stored["dim"][key] > 1 else 0.0, 6)}, key
    # the torsional (dimension 4 and 6) and rolling (6) friction as MuJoCo's: c1 (condim 6)
    # against the floor and e1; d3 (condim 4, priority 1) against every geom it touches
    angular = {}
    ground = C.Ground.from_model(m)
    for g1, g2 in [(g, ground.geom) for g in cp.geom] + list(zip(pc.geom1, pc.geom2)):
        mua = rules.angular_friction(m.geoms, np.array([g1]), np.array([g2]))
        key = "|".join(sorted((names[g1], names[g2])))
        angular.setdefault(key, set()).add((0.0, 0.0) if mua is None else tuple(np.round(np.asarray(mua[0]), 6)))
    assert len(stored["torsional"]) == 8 and len(stored["rolling"]) == 2
    for key in stored["friction"]:
        want = (round(stored["torsional"].get(key, 0.0), 6), round(stored["rolling"].get(key, 0.0), 6))
        assert angular[key] == {want}, key


@pytest.mark.parametrize(
    "contact, match",
    [
        ('<exclude body1="a" body2="nope"/>', "body2='nope' is not a body"),
        ('<exclude body1="a"/>', "missing attribute body2"),
        ('<pair geom1="a1" geom2="nope"/>', "geom2='nope' is not a geom"),
        ('<pair geom1="a1" geom2="a1"/>', "the same geom 'a1'"),
        ('<pairs geom1="a1" geom2="b1"/>', "<pairs>: unknown element in <contact> \\(closest known there: <pair>\\)"),
    ],
)
def test_bad_contact_elements_are_named(contact, match):
    xml = """<mujoco><worldbody>
    <body name="a"><joint type="hinge"/><geom name="a1" type="sphere" size="0.1" mass="1"/>
      <body name="b"><joint type="hinge"/><geom name="b1" type="sphere" size="0.1" mass="1"/></body>
    </body></worldbody><contact>%s</contact></mujoco>"""
    with pytest.raises(jaxdyn.LoadError, match=match):
        jaxdyn.load_mjcf(xml % contact)


def test_repeated_pair_collides_once_with_the_first_friction():
    xml = """<mujoco><worldbody>
    <body name="a"><joint type="hinge"/><geom name="a1" type="sphere" size="0.1" mass="1"/>
      <body name="b"><joint type="hinge"/><geom name="b1" type="sphere" size="0.1" mass="1"/></body>
    </body></worldbody><contact><pair geom1="a1" geom2="b1" friction="0.3"/>
    <pair geom1="b1" geom2="a1" friction="0.8"/></contact></mujoco>"""
    with pytest.warns(UserWarning, match="given twice; jaxdyn collides it once"):
        m = jaxdyn.load_mjcf(xml)
    assert m.geoms.pairs == ((0, 1),) and np.allclose(m.geoms.pair_friction, [0.3])


def test_explicit_geom_lists_in_code():
    """make_geoms' exclude and pairs: index pairs in either order, checked."""
    kw = dict(type=[geometry.SPHERE] * 3, size=np.full((3, 3), 0.1), body=[0, 1, 2])
    g = geometry.make_geoms(**kw, exclude=[(2, 0), (0, 2)], pairs=[(1, 0)])
    assert g.exclude == ((0, 2),) and g.pairs == ((0, 1),)
    with pytest.raises(ValueError, match=r"exclude pair \(0, 3\) is not two different geoms"):
        geometry.make_geoms(**kw, exclude=[(0, 3)])
    with pytest.raises(ValueError, match=r"pairs pair \(1, 1\)"):
        geometry.make_geoms(**kw, pairs=[(1, 1)])
    # pair_friction: one per entry of pairs, reordered with them; 1 by default
    g = geometry.make_geoms(**kw, pairs=[(2, 1), (1, 0), (0, 1)], pair_friction=[0.8, 0.3, 0.3])
    assert g.pairs == ((0, 1), (1, 2)) and np.allclose(g.pair_friction, [0.3, 0.8])
    assert np.allclose(geometry.make_geoms(**kw, pairs=[(1, 0)]).pair_friction, [1.0])
    with pytest.raises(ValueError, match="1 entries in pair_friction for 2 pairs"):
        geometry.make_geoms(**kw, pairs=[(1, 0), (2, 1)], pair_friction=[0.5])
    with pytest.raises(ValueError, match=r"pair \(0, 1\) is given twice with different pair_friction"):
        geometry.make_geoms(**kw, pairs=[(1, 0), (0, 1)], pair_friction=[0.5, 0.6])


def _cylinder_reference():
    """The stored MuJoCo cylinder poses (tests/reference/generate_mujoco_convex.py) as the
    inputs of the collision functions: the cylinder at the origin."""
    r = np.load(os.path.join(HERE, "data", "mujoco", "contact", "convex.npz"))

    def rot(quats):
        return np.asarray(jaxdyn.spatial.quat_to_rotation(jnp.asarray(quats, jnp.float64)))

    n = len(r["cylinder_quat"])
    cyl = (
        np.zeros((n, 3)),
        rot(r["cylinder_quat"]),
        np.tile([*r["cylinder_size"], 0.0], (n, 1)),
    )
    axis = rot(r["capsule_quat"])[:, :, 2] * r["capsule_size"][1]
    sphere = (r["sphere_pos"], np.full(n, float(r["sphere_radius"])))
    capsule = (r["capsule_pos"] - axis, 2 * axis, np.full(n, float(r["capsule_size"][0])))
    return r, cyl, sphere, capsule


@pytest.mark.parametrize("dtype, tol", [(jnp.float64, 1e-12), (jnp.float32, 2e-7)])
def test_cylinder_pairs_match_mujoco(dtype, tol):
    """Sphere-cylinder: the signed distance at 64 poses (18 penetrating: the centre inside, on the
    axis, near a rim) against MuJoCo's mj_geomDistance (GJK / EPA at tolerance 1e-12);
    capsule-cylinder: the capsule's signed distance (its segment's deepest point, a golden-section
    search) against the smallest MuJoCo sphere-cylinder distance along the segment, and against
    mj_geomDistance where they are apart; unit normals, the witness midway between the surfaces
    for a sphere."""
    from jaxdyn import collision as K

    r, cyl, (c, rs), (p, d, rc) = _cylinder_reference()
    a = lambda *xs: [jnp.asarray(x, dtype) for x in xs]  # noqa: E731
    cc, Rc, size = a(*cyl)
    dist, n, w = (np.asarray(x) for x in jax.jit(K.sphere_cylinder)(*a(c, rs), cc, Rc, size))
    np.testing.assert_allclose(dist, r["sphere_dist"], rtol=0, atol=tol)
    np.testing.assert_allclose(np.linalg.norm(n, axis=-1), 1.0, atol=10 * tol)
    # the witness: half the penetration behind the sphere's surface point along the normal
    np.testing.assert_allclose(w, c - (rs + 0.5 * dist)[:, None] * n, atol=10 * tol)
    _, _, _, ds = jax.jit(K.segment_cylinder_contacts)(*a(p, d, rc), cc, Rc, size)
    ds = np.asarray(ds)
    np.testing.assert_allclose(ds, r["capsule_segment"], rtol=0, atol=tol)
    apart = r["capsule_dist"] > 0
    assert apart.sum() > 20 and (~apart).sum() > 10
    np.testing.assert_allclose(ds[apart], r["capsule_dist"][apart], rtol=0, atol=max(tol, 2e-12))


ELLIPSOID = """<mujoco><worldbody><body name="e"><freejoint/>
<geom type="ellipsoid" size="0.12 0.07 0.04" mass="1"/></body></worldbody></mujoco>"""


@pytest.mark.parametrize("dtype, tol", [(jnp.float64, 1e-12), (jnp.float32, 2e-7)])
def test_ellipsoid_ground_distance_matches_mujoco(dtype, tol):
    """An ellipsoid touches the ground at its point lowest along the normal: its signed distance
    at 40 poses (28 penetrating, some with the centre below the plane) against MuJoCo's
    mj_geomDistance of the ellipsoid and a plane; the contact point on the ellipsoid's surface."""
    r = np.load(os.path.join(HERE, "data", "mujoco", "contact", "convex.npz"))
    m = jaxdyn.load_mjcf(ELLIPSOID, dtype=dtype)
    q = jnp.asarray(np.hstack([r["ellipsoid_pos"], r["ellipsoid_quat"]]), dtype)
    cp = jax.jit(jax.vmap(lambda q: C.contact_points(m, q, jnp.zeros(6, dtype))))(q)
    assert cp.centre.shape == (40, 1, 3) and cp.geom == (0,)
    phi = np.asarray(cp.centre[:, 0, 2] - cp.radius[:, 0])
    np.testing.assert_allclose(phi, r["ellipsoid_dist"], rtol=0, atol=tol)
    assert (r["ellipsoid_dist"] < 0).sum() > 20
    # the point is on the surface: (R^T (x - c))_i / a_i has unit length
    R = jax.vmap(lambda quat: jaxdyn.spatial.quat_to_rotation(quat))(q[:, 3:])
    local = np.einsum("kji,kj->ki", np.asarray(R), np.asarray(cp.centre[:, 0] - q[:, :3]))
    np.testing.assert_allclose(np.linalg.norm(local / r["ellipsoid_size"], axis=1), 1.0, atol=10 * tol)


def test_ellipsoid_rests_and_never_gains_energy():
    """A 1 kg ellipsoid (semi-axes 0.12, 0.07, 0.04 m) set down on its flattest side rests at
    the depth (m g / k)^(1/p) below its shortest semi-axis, the ground force equal to the
    weight; dropped tilted from 15 cm it bounces and rolls, its energy (kinetic, gravitational,
    Hunt-Crossley) never above the start, 3 s at 1 ms."""
    m = jaxdyn.load_mjcf(ELLIPSOID)
    ct = C.Contact()
    k, p = 1e6, 1.5
    th = 0.4
    q0 = jnp.array(
        [
            [0.0, 0.0, 0.0401, 1.0, 0.0, 0.0, 0.0],
            [0.0, 0.0, 0.15, np.cos(th / 2), 0.6 * np.sin(th / 2), 0.8 * np.sin(th / 2), 0.0],
        ]
    )

    def energy(q, qd):
        cp = C.contact_points(m, q, jnp.zeros(6), ct.ground)
        return sim.energy(m, q, qd) + jnp.sum(k * cp.depth ** (p + 1) / (p + 1))

    @jax.jit
    @jax.vmap
    def run(q0):
        tr = sim.rollout(m, q0, jnp.zeros(6), jnp.zeros((3000, 6)), 1e-3, contact=ct)
        return tr.q, jax.vmap(energy)(tr.q, tr.qd), C.total_force(m, tr.q[-1], tr.qd[-1], ct), tr.nonfinite_step

    q, e, f, bad = (np.asarray(x) for x in run(q0))
    assert np.all(bad == -1)
    np.testing.assert_allclose(q[0, -1, 2], 0.04 - (G / k) ** (1 / p), rtol=1e-7)
    np.testing.assert_allclose(f[0], [0.0, 0.0, G], rtol=1e-6, atol=1e-9)
    assert e[1].max() <= e[1, 0] and e[1, -1] < 0.8 * e[1, 0]
    assert q[1, :, 2].min() < 0.1  # it landed


CYLINDER_POST = """<mujoco><worldbody>
<geom name="post" type="cylinder" size="0.1 0.25" pos="0 0 0.25"/>
<body name="b"><freejoint/>GEOM</body>
</worldbody></mujoco>"""


def test_sphere_and_capsule_rest_on_a_cylinder():
    """A 1 kg sphere dropped onto the top disk of an upright cylinder on the world rests at
    (m g / k)^(1/p); a 0.5 kg capsule dropped tilted onto it comes to rest level on its two
    ends at (m g / 2 k)^(1/p), the interior contact (B1) carrying nothing; still; derivatives
    finite with the sphere's centre on the cylinder's axis and the capsule along it."""
    k, p = 1e6, 1.5
    ct = C.Contact(collide_ground=False)
    tilt = [np.cos(0.1), 0.0, np.sin(0.1), 0.0]
    cases = {
        "sphere": ('<geom type="sphere" size="0.04" mass="1"/>', [0.02, 0.01, 0.55, 1.0, 0, 0, 0], 1),
        "capsule": ('<geom type="capsule" size="0.02 0.06" euler="0 90 0" mass="0.5"/>', [0.01, -0.02, 0.55, *tilt], 3),
    }
    for name, (geom, q0, rows) in cases.items():
        m = jaxdyn.load_mjcf(CYLINDER_POST.replace("GEOM", geom), dtype=jnp.float64)
        assert C.collision_pairs(m).rows == (rows,) and C.collision_pairs(m).unsupported == ()

        @jax.jit
        def settle(q0, m=m):
            tr = sim.rollout(m, q0, jnp.zeros(6), jnp.zeros((1500, 6)), 1e-3, contact=ct)
            return tr.q[-1], tr.qd[-1], C.pair_contacts(m, tr.q[-1], tr.qd[-1]).distance, tr.nonfinite_step

        q, qd, dist, bad = (np.asarray(x) for x in settle(jnp.asarray(q0)))
        assert int(bad) == -1 and np.abs(qd).max() < 1e-6, name
        if name == "sphere":
            depth = (G / k) ** (1 / p)
            np.testing.assert_allclose(0.54 - q[2], depth, rtol=1e-6)
            np.testing.assert_allclose(dist, [-depth], rtol=1e-6)
            special = jnp.array([0.0, 0.0, 0.3, 1.0, 0, 0, 0])  # the centre on the axis, inside
        else:
            depth = (0.5 * G / (2 * k)) ** (1 / p)
            np.testing.assert_allclose(0.52 - q[2], depth, rtol=1e-6)
            np.testing.assert_allclose(dist, [-depth, -depth, 0.0], rtol=1e-6, atol=1e-12)
            w, x, y, z = q[3:]
            assert abs(2 * (x * z - w * y)) < 1e-6  # the axis (the body x) level
            special = jnp.array([0.0, 0.0, 0.3, np.cos(np.pi / 4), 0.0, -np.sin(np.pi / 4), 0.0])  # on the axis
        gm, gq = jax.jit(jax.grad(lambda m, q: jnp.sum(C.pair_distances(m, q)), argnums=(0, 1)))(m, special)
        assert np.all(np.isfinite(np.asarray(gq))), name
        assert all(np.all(np.isfinite(np.asarray(x))) for x in jax.tree_util.tree_leaves(gm)), name


BOX_BODY = """<mujoco>ASSET<worldbody><body name="b" pos="0 0 1"><freejoint/>
<inertial pos="0 0 0" mass="1" diaginertia="0.014166666666666666 0.004166666666666667 0.016666666666666666"/>
GEOM</body></worldbody></mujoco>"""


def _box_and_mesh_cuboid():
    """The box geom (0.2 x 0.4 x 0.1 m) and a mesh cuboid of the same size whose vertices include
    an inner point, a point on a face and a repeated corner; the same inertia."""
    box = jaxdyn.load_mjcf(BOX_BODY.replace("ASSET", "").replace("GEOM", '<geom type="box" size="0.1 0.2 0.05"/>'))
    corners = [(x, y, z) for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)]
    vert = corners + [(0, 0, 0.5), (0, 1, 0), corners[3]]
    asset = (
        '<asset><mesh name="cube" scale="0.1 0.2 0.05" vertex="'
        + " ".join(f"{x} {y} {z}" for x, y, z in vert)
        + '"/></asset>'
    )
    mesh = jaxdyn.load_mjcf(BOX_BODY.replace("ASSET", asset).replace("GEOM", '<geom type="mesh" mesh="cube"/>'))
    return box, mesh, np.array(corners) * [0.1, 0.2, 0.05]


def test_mesh_collides_as_its_convex_hull():
    """A mesh geom touches the ground with its convex hull's vertices: the mesh cuboid's contact
    points and forces are the box geom's, at poses touching the ground on a face, an edge and a
    corner, moving."""
    box, mesh, corners = _box_and_mesh_cuboid()
    np.testing.assert_array_equal(np.asarray(mesh.geoms.vertices), corners)
    assert mesh.geoms.vertex_geom == (0,) * 8 and box.geoms.vertices.shape == (0, 3)
    ct = C.Contact()
    quats = np.array([[1.0, 0, 0, 0], [np.cos(0.3), np.sin(0.3), 0, 0], [0.9, 0.3, 0.2, 0.1]])
    q = jnp.asarray(np.hstack([np.tile([0.01, 0.02, 0.04], (3, 1)), quats / np.linalg.norm(quats, axis=1)[:, None]]))
    qd = jnp.tile(jnp.array([0.3, -0.2, 0.5, 0.1, 0.2, -0.4]), (3, 1))

    def evaluate(model):
        def one(q, qd):
            c = C.contact_points(model, q, qd)
            return c.centre, c.depth, C.total_force(model, q, qd, ct)

        return [np.asarray(x) for x in jax.jit(jax.vmap(one))(q, qd)]

    (cb, db, fb), (cm, dm, fm) = evaluate(box), evaluate(mesh)
    for k in range(3):  # the same points, in another order
        ob, om = np.lexsort(cb[k].T), np.lexsort(cm[k].T)
        np.testing.assert_allclose(cm[k][om], cb[k][ob], atol=1e-15)
        np.testing.assert_allclose(dm[k][om], db[k][ob], atol=1e-15)
        assert db[k].max() > 0
    np.testing.assert_allclose(fm, fb, rtol=1e-12, atol=1e-12)


def test_mesh_moves_as_the_box():
    """The mesh cuboid thrown spinning onto the ground falls, lands and comes to rest exactly as
    the box geom, 0.4 s at 1 ms."""
    box, mesh, _ = _box_and_mesh_cuboid()
    q0 = jnp.array([0.0, 0.0, 0.12, np.cos(0.2), np.sin(0.2), 0.3 * np.sin(0.2), 0.0])
    q0 = q0.at[3:7].set(q0[3:7] / jnp.linalg.norm(q0[3:7]))
    qd0 = jnp.array([0.0, 0.0, 3.0, 0.2, 0.0, -0.5])

    def run(model):
        return sim.rollout(model, q0, qd0, jnp.zeros((400, 6)), 1e-3, contact=C.Contact()).q

    qb, qm = jax.jit(run)(box), jax.jit(run)(mesh)
    # it lands on its largest face, at the Hunt-Crossley depth of four corners
    assert abs(float(qb[-1, 2]) - (0.05 - (G / 4 / 1e6) ** (2 / 3))) < 1e-6
    np.testing.assert_allclose(np.asarray(qm), np.asarray(qb), rtol=0, atol=1e-12)


def test_unreadable_collision_mesh_is_warned_about():
    """A mesh jaxdyn cannot read (here a PLY file) loads with a warning naming the geom; the
    geom then does not collide."""
    xml = BOX_BODY.replace("ASSET", '<asset><mesh name="m" file="shape.ply"/></asset>').replace(
        "GEOM", '<geom name="g" type="mesh" mesh="m"/>'
    )
    with pytest.warns(UserWarning, match=r"geom name='g'.*only STL and OBJ mesh files.*does not collide"):
        m = jaxdyn.load_mjcf(xml)
    assert m.geoms.type == (geometry.MESH,) and m.geoms.vertices.shape == (0, 3)
    kw = dict(type=[geometry.SPHERE, geometry.MESH], size=np.zeros((2, 3)), body=[0, 0])
    with pytest.raises(ValueError, match="vertex_geom names geom 0, which is not a mesh geom"):
        geometry.make_geoms(**kw, vertices=np.zeros((1, 3)), vertex_geom=[0])
    with pytest.raises(ValueError, match="2 entries in vertex_geom for 1 vertices"):
        geometry.make_geoms(**kw, vertices=np.zeros((1, 3)), vertex_geom=[1, 1])


def test_finite_derivatives_at_degenerate_configurations():
    """jax.grad of the contact wrenches w.r.t. the model, q and qd is finite: spheres exactly
    touching, coincident sphere centres, parallel capsule segments, a sphere centre exactly on a
    box face, edge and corner, the cylinder exactly upright on the ground (its rim direction
    undefined), and a capsule lying on a box face, its segment on a face, along an edge, and
    through the box's centre along its x axis, and a box on the world box: centred on it with its
    axes (coincident centres, parallel faces and edges), and lying on its top face with its axes.
    Dyadic sizes make the touching and on-face cases exact."""
    m = _model()
    s12 = [m.geoms.names.index("s1"), m.geoms.names.index("s2")]
    m = eqx.tree_at(lambda m: m.geoms.size, m, m.geoms.size.at[s12, 0].set(jnp.array([0.125, 0.0625])))
    sz = np.asarray(m.geoms.size)
    ib = m.geoms.names.index("b1")
    hb = sz[ib]
    x = [1.0, 0.0, 0.0, 0.0]
    along_x = [np.cos(np.pi / 4), 0.0, np.sin(np.pi / 4), 0.0]
    cyl_hl = sz[m.geoms.names.index("cyl"), 1]
    iw = m.geoms.names.index("wbox")
    Rw, cw, hw = np.asarray(m.geoms.R[iw]), np.asarray(m.geoms.pos[iw]), sz[iw]
    qw = _quat_of(Rw)
    qs = np.array(
        [
            _q(s1=[0, 0, 1, *x], s2=[0.1875, 0, 1, *x]),  # touching: 0.125 + 0.0625
            _q(s1=[0, 0, 1, *x], s2=[0, 0, 1, *x]),  # coincident centres
            _q(c1=[0, 0, 1, *along_x], c2=[0.05, 0.1, 1, *along_x]),  # parallel segments
            _q(b1=[0, 0, 0, *x], s1=[0.05, -0.03, hb[2], *x]),  # on a face
            _q(b1=[0, 0, 0, *x], s1=[hb[0], 0.05, hb[2], *x]),  # on an edge
            _q(b1=[0, 0, 0, *x], s1=[hb[0], hb[1], hb[2], *x]),  # on a corner
            _q(cyl=[0, 0, cyl_hl - 1e-3, *x]),  # upright in the floor
            _q(b1=[0, 0, 0, *x], c1=[0.02, 0, hb[2] + 0.04, *along_x]),  # capsule lying on a face
            _q(b1=[0, 0, 0, *x], c1=[0.02, 0.05, hb[2], *along_x]),  # segment on a face
            _q(b1=[0, 0, 0, *x], c1=[0.02, hb[1], hb[2], *along_x]),  # segment along an edge
            _q(b1=[0, 0, 0, *x], c1=[0, 0, 0, *along_x]),  # segment through the centre
            _q(b1=[*cw, *qw]),  # boxes centred on each other, parallel
            _q(b1=[*(cw + Rw @ [0.0, 0.0, hw[2] + hb[2] - 1e-3]), *qw]),  # a box on the other's face
        ]
    )
    qd = np.random.default_rng(0).normal(0, 0.01, (len(qs), m.nv))  # slow: the damping does not clip
    ct = C.Contact(C.Ground.from_model(m))

    def scalar(model, q, qd):
        w = ct.wrenches(model, q, qd)
        return jnp.sum(w * jnp.arange(1.0, 1.0 + w.size).reshape(w.shape))

    value_and_grads = jax.jit(jax.vmap(jax.value_and_grad(scalar, argnums=(0, 1, 2)), in_axes=(None, 0, 0)))
    vals, grads = value_and_grads(m, jnp.asarray(qs), jnp.asarray(qd))
    assert np.all(np.asarray(vals[1:]) != 0.0)  # every case but the first is in contact
    assert float(vals[0]) == 0.0  # exactly touching: no force
    for leaf in jax.tree_util.tree_leaves(grads):
        assert np.all(np.isfinite(np.asarray(leaf)))


def test_collision_conserves_momentum_and_dissipates_energy():
    """Two spheres (1 kg each, gravity off, no ground) in an oblique collision with spin, in the
    default implicit step: the pair force acts equal and opposite at one point and depends on
    the relative velocity only, so the total linear and angular momentum stay constant to
    round-off; the kinetic energy after the collision is below the energy before, and never
    above it during the contact."""
    m = _model()
    x = [1.0, 0.0, 0.0, 0.0]
    q0 = jnp.asarray(_q(s1=[0, 0, 1, *x], s2=[0.3, 0.08, 1, *x]))
    qd0 = np.zeros(m.nv)
    qd0[0:6] = [1.0, 0.1, 0.0, 0.0, 3.0, 1.0]  # s1: slides x y z, ball omega
    qd0[6:12] = [-0.5, 0.0, 0.2, 2.0, 0.0, 0.0]
    others = [(a, b) for a in ("world", *BODIES) for b in BODIES if a != b and {a, b} != {"s1", "s2"}]
    ct = C.Contact(collide_ground=False, params=C.ContactParams(damping=1.0), exclude=others)
    (pair,) = C.collision_pairs(m, ct.exclude).pairs  # s1-s2 alone
    assert [m.geoms.names[g] for g in pair] == ["s1", "s2"]
    dt = 1e-3

    @jax.jit
    def run(q0, qd0):
        tr = sim.rollout(m, q0, qd0, jnp.zeros((300, m.nv)), dt, contact=ct)
        h = jax.vmap(lambda q, v: jaxdyn.momentum(m, q, v))(tr.q, tr.qd)
        e = jax.vmap(lambda q, v: jaxdyn.kinetic_energy(m, q, v))(tr.q, tr.qd)
        d = jax.vmap(lambda q: C.pair_contacts(m, q, jnp.zeros(m.nv)).depth)(tr.q)
        return h, e, d, tr.nonfinite_step

    h, e, d, bad = (np.asarray(a) for a in run(q0, jnp.asarray(qd0)))
    assert int(bad) == -1
    k, _ = _pair_index(m, "s1", "s2")
    touching = d[:, k] > 0
    assert touching.any() and not touching[0] and not touching[-1]
    assert np.abs(d[:, np.arange(d.shape[1]) != k]).max() == 0  # no other pair involved
    np.testing.assert_allclose(h, np.broadcast_to(h[0], h.shape), rtol=0, atol=1e-12 * np.abs(h[0]).max())
    assert e.max() <= e[0] * (1 + 1e-12)
    assert e[-1] < 0.999 * e[0]


CYLINDER = """<mujoco><worldbody><geom type="plane" size="0 0 1"/>
<body name="cyl"><freejoint/><geom type="cylinder" size="0.1 0.2" mass="2"/></body>
</worldbody></mujoco>"""


def test_cylinder_rests_on_its_base_and_on_its_side():
    """A 2 kg cylinder settled on its flat base (four rim points share the weight: depth
    (m g / 4 k)^(1/p)) and on its side (one rim point per disk: (m g / 2 k)^(1/p)); the total
    normal force equals the weight."""
    m = jaxdyn.load_mjcf(CYLINDER)
    ct = C.Contact(C.Ground.from_model(m))
    k, p, mass, r, hl = 1e6, 1.5, 2.0, 0.1, 0.2
    side = [np.cos(np.pi / 4), np.sin(np.pi / 4), 0.0, 0.0]
    q0 = jnp.array([[0.0, 0.0, hl + 1e-3, 1.0, 0.0, 0.0, 0.0], [0.0, 0.0, r + 1e-3, *side]])

    @jax.jit
    @jax.vmap
    def settle(q0):
        tr = sim.rollout(m, q0, jnp.zeros(6), jnp.zeros((1500, 6)), 1e-3, contact=ct)
        return tr.q[-1], C.total_force(m, tr.q[-1], tr.qd[-1], ct), tr.nonfinite_step

    q, f, bad = (np.asarray(a) for a in settle(q0))
    assert np.all(bad == -1)
    depth = np.array([hl, r]) - q[:, 2]
    ref = np.array([(mass * G / (4 * k)) ** (1 / p), (mass * G / (2 * k)) ** (1 / p)])
    np.testing.assert_allclose(depth, ref, rtol=1e-6)
    np.testing.assert_allclose(f, np.broadcast_to([0.0, 0.0, mass * G], f.shape), rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(q[:, 3:], np.asarray(q0[:, 3:]), atol=1e-9)  # neither tips nor rolls


CAPSULE_ON_BOX = """<mujoco><worldbody>
<geom name="table" type="box" size="0.3 0.2 0.05" pos="0.05 0 0.5" euler="0 0 20"/>
<body name="cap"><freejoint/><geom name="cap" type="capsule" size="0.03 0.1" euler="0 90 0" mass="0.5"/></body>
</worldbody></mujoco>"""


def test_capsule_falls_onto_box():
    """A 0.5 kg capsule (radius 0.03 m) dropped level onto a box on the world (top face z = 0.55,
    yawed 20 degrees against the capsule) with Contact(collide_pairs=True) comes to rest on it on
    its two end contacts, each at the Hunt-Crossley depth (m g / 2 k)^(1/p), the interior contact
    (B1) carrying nothing, the normal force equal to the weight, level; dropped tilted, it comes
    to rest the same way: level and at that height, without rocking."""
    m = jaxdyn.load_mjcf(CAPSULE_ON_BOX, dtype=jnp.float64)
    ct = C.Contact(collide_pairs=True)
    assert C.collision_pairs(m).pairs == ((1, 0),) and C.collision_pairs(m).rows == (3,)
    k, p, mass, r, top = 1e6, 1.5, 0.5, 0.03, 0.55
    tilt = [np.cos(0.1), 0.3 * np.sin(0.1) / np.sqrt(1.09), np.sin(0.1) / np.sqrt(1.09), 0.0]
    q0 = jnp.array([[0.0, 0.0, top + r + 1e-3, 1.0, 0.0, 0.0, 0.0], [0.02, 0.03, top + r + 0.03, *tilt]])

    @jax.jit
    @jax.vmap
    def settle(q0):
        tr = sim.rollout(m, q0, jnp.zeros(6), jnp.zeros((1500, 6)), 1e-3, contact=ct)
        pc = C.pair_contacts(m, tr.q[-1], tr.qd[-1])
        return tr.q, tr.qd, C.total_force(m, tr.q[-1], tr.qd[-1], ct), pc.distance, pc.point, tr.nonfinite_step

    q, qd, f, dist, point, bad = (np.asarray(a) for a in settle(q0))
    assert np.all(bad == -1) and np.all(np.isfinite(q))
    depth = (mass * G / (2 * k)) ** (1 / p)
    for s in range(2):  # level, tilted
        np.testing.assert_allclose(top + r - q[s, -1, 2], depth, rtol=1e-6)
        np.testing.assert_allclose(dist[s], [-depth, -depth, 0.0], rtol=1e-6, atol=1e-12)
        np.testing.assert_allclose(f[s], [0.0, 0.0, mass * G], rtol=1e-6, atol=1e-9)
        np.testing.assert_allclose(np.abs(qd[s, -1]).max(), 0.0, atol=1e-6)
        w, x, y, z = q[s, -1, 3:]
        assert abs(2 * (x * z - w * y)) < 1e-6  # the world z of the capsule's axis, the body x
    # the level drop keeps its pose; the ends' witnesses at +-0.1 along the axis, depth / 2 down
    np.testing.assert_allclose(q[0, -1, 3:], [1.0, 0.0, 0.0, 0.0], atol=1e-9)
    for s_end, sign in ((0, -1.0), (1, 1.0)):
        np.testing.assert_allclose(point[0, s_end], q[0, -1, :3] + [sign * 0.1, 0, -(r - depth / 2)], atol=1e-9)
    # the tilted drop rests without rocking over the last 0.5 s
    assert np.abs(q[1, -500:, 2] - (top + r - depth)).max() < 1e-5


@pytest.mark.parametrize("dtype, tol", [(jnp.float64, 1e-10), (jnp.float32, 2e-6)])
def test_cylinder_box_matches_mujoco(dtype, tol):
    """Cylinder-box at 87 poses (tests/reference/generate_mujoco_cylinder_pairs.py): apart, the
    pair's distance and the smallest of its 32 contacts' equal MuJoCo's mj_geomDistance (GJK at
    tolerance 1e-12); overlapping, never deeper than MuJoCo's penetration (EPA, the minimum
    translation); at the chosen poses (standing on a face, lying on its side, tilted onto its
    rim, across an edge; 1-3 mm deep or apart) equal to it; unit normals."""
    from jaxdyn import collision as K

    r = np.load(os.path.join(HERE, "data", "mujoco", "contact", "cylinder_box.npz"))
    shapes = (r["cylinder_quat"], r["cylinder_size"], r["box_pos"], r["box_quat"], r["box_size"])
    _check_cylinder_pair(K.cylinder_box_contacts, r, shapes, 32, dtype, tol)


def _check_cylinder_pair(contacts, r, shapes, rows, dtype, tol):
    """A cylinder pair's contacts (``contacts``, a function of the collision module) at the
    stored MuJoCo poses (the first shape at the origin): apart, the pair's distance and its
    rows' smallest equal ``mj_geomDistance``; overlapping, never deeper; at the chosen poses
    equal; unit normals."""
    quat1, size1, pos2, quat2, size2 = shapes
    n, chosen = len(r["dist"]), int(r["chosen"])
    rot = jax.vmap(jaxdyn.spatial.quat_to_rotation)
    a = lambda x: jnp.asarray(x, dtype)  # noqa: E731
    pad = lambda size: a(np.tile(np.pad(size, (0, 3 - len(size))), (n, 1)))  # noqa: E731
    args = (a(np.zeros((n, 3))), rot(a(quat1)), pad(size1), a(pos2), rot(a(quat2)), pad(size2))
    dist, normal, _, phi = (np.asarray(x, np.float64) for x in jax.jit(contacts)(*args))
    assert dist.shape == (n, rows)
    _assert_as_epa(dist, normal, phi, r["dist"], chosen, tol)


def _assert_as_epa(dist, normal, phi, mj, chosen, tol):
    """A pair's contacts' distances ``dist`` ``(n, rows)``, normals and the pair's distance
    ``phi`` against MuJoCo's ``mj_geomDistance`` ``mj`` (the last ``chosen`` poses chosen): apart
    (over 40 poses), ``phi`` and the rows' smallest equal it; overlapping (10 or more), never deeper
    than its minimum translation; at the chosen poses equal; unit normals."""
    apart, overlap = mj > 0, mj < 0
    assert apart[:-chosen].sum() > 40 and overlap[:-chosen].sum() >= 10
    np.testing.assert_allclose(phi[apart], mj[apart], rtol=0, atol=tol)
    np.testing.assert_allclose(dist[apart].min(1), mj[apart], rtol=0, atol=tol)
    assert np.all(phi[overlap] >= mj[overlap] - tol) and np.all(phi[overlap] < 0)
    np.testing.assert_allclose(phi[-chosen:], mj[-chosen:], rtol=0, atol=tol)
    np.testing.assert_allclose(np.linalg.norm(normal, axis=-1), 1.0, rtol=0, atol=10 * tol)


CYLINDER_ON_BOX = """<mujoco><worldbody>
<geom name="table" type="box" size="0.3 0.25 0.05" pos="0.05 0 0.5" euler="0 0 20"/>
<body name="can"><freejoint/><geom name="can" type="cylinder" size="0.04 0.08" mass="0.6"/></body>
</worldbody></mujoco>"""


def test_cylinder_rests_on_a_box():
    """A 0.6 kg cylinder on a box on the world (top face z = 0.55), dropped standing, dropped
    tilted onto its rim (it rocks on the rim for about 2 s), and dropped lying on its side, comes
    to rest: standing on four rim
    points, each at the Hunt-Crossley depth (m g / 4 k)^(1/p); on its side on the two ends of its
    lowest line, (m g / 2 k)^(1/p) each; the normal force equal to the weight; still. Its
    mechanical energy never exceeds its start."""
    m = jaxdyn.load_mjcf(CYLINDER_ON_BOX, dtype=jnp.float64)
    # the regularisation these rests were measured with (the former default): with the narrower
    # default the friction holds the body where it first sticks, with the friction's share of the
    # load static (docs/contact.md, "Friction that holds")
    ct = C.Contact(C.Ground(), C.ContactParams(friction_velocity=0.02), collide_pairs=True)
    assert C.collision_pairs(m).pairs == ((1, 0),) and C.collision_pairs(m).rows == (32,)  # can, table
    k, p, mass, r, hl, top = 1e6, 1.5, 0.6, 0.04, 0.08, 0.55
    tilt = [np.cos(0.1), 0.6 * np.sin(0.1), 0.8 * np.sin(0.1), 0.0]
    side = [np.cos(np.pi / 4), 0.0, np.sin(np.pi / 4), 0.0]  # the axis along x
    q0 = jnp.array(
        [
            [0.0, 0.0, top + hl + 1e-3, 1.0, 0.0, 0.0, 0.0],
            [0.02, -0.03, top + hl + 0.03, *tilt],
            [0.0, 0.05, top + r + 1e-3, *side],
        ]
    )

    @jax.jit
    @jax.vmap
    def settle(q0):
        tr = sim.rollout(m, q0, jnp.zeros(6), jnp.zeros((3000, 6)), 1e-3, contact=ct)  # the tilted one rocks 2 s
        pc = C.pair_contacts(m, tr.q[-1], tr.qd[-1])
        energy = jax.vmap(lambda q, v: jaxdyn.kinetic_energy(m, q, v) + jaxdyn.potential_energy(m, q))(tr.q, tr.qd)
        return tr.q[-1], tr.qd[-1], C.total_force(m, tr.q[-1], tr.qd[-1], ct), pc.distance, energy, tr.nonfinite_step

    q, qd, f, dist, energy, bad = (np.asarray(x) for x in settle(q0))
    assert np.all(bad == -1) and np.all(np.isfinite(q))
    assert np.all(energy <= energy[:, :1] * (1 + 1e-12))
    standing, lying = (mass * G / (4 * k)) ** (1 / p), (mass * G / (2 * k)) ** (1 / p)
    for s, (height, depth, rows) in enumerate(((hl, standing, 4), (hl, standing, 4), (r, lying, 2))):
        np.testing.assert_allclose(top + height - q[s, 2], depth, rtol=1e-6)
        np.testing.assert_allclose(f[s], [0.0, 0.0, mass * G], rtol=1e-6, atol=1e-6)  # 2e-7 of the weight
        touching = np.sort(dist[s])[: rows + 1]
        np.testing.assert_allclose(touching[:rows], -depth, rtol=1e-6)
        # the others carry nothing: 1e-9 m is under 4e-8 N (the tilted one's fifth rim contact
        # ends 1e-10 to 4e-10 m deep, by CPU: its 2 s of rocking amplify round-off differently)
        assert touching[rows] >= -1e-9, s
    assert np.abs(qd[:2]).max() < 1e-6
    # lying, it may only roll (no rolling friction), and slowly: 1.7e-5 rad/s after the drop
    np.testing.assert_allclose(qd[2, [0, 1, 3, 5]], 0.0, atol=1e-9)
    assert abs(qd[2, 2]) < 1e-4 and abs(qd[2, 4] + r * qd[2, 2]) <= 1e-2 * abs(qd[2, 4])  # v_y = -r omega_z: rolling
    np.testing.assert_allclose(q[2, 3:], side, atol=1e-4)  # not tipped, hardly rolled


def test_cylinder_pair_derivatives_are_finite():
    """jax.grad of the cylinder-box and cylinder-cylinder contact wrenches w.r.t. the model, q
    and qd is finite where the rim's deepest point is not unique (standing level on the face,
    its rims parallel to it; centred on the box's axis), lying along the face's x axis, lying
    inside the box with the centres coinciding; standing on a post's axis, lying across its
    disk, and lying along a lying cylinder (parallel axes)."""
    m = jaxdyn.load_mjcf(CYLINDER_ON_BOX.replace('euler="0 0 20"', ""), dtype=jnp.float64)
    ct = C.Contact(collide_pairs=True, collide_ground=False)
    side = [np.cos(np.pi / 4), 0.0, np.sin(np.pi / 4), 0.0]
    qs = jnp.array(
        [
            [0.05, 0.0, 0.55 + 0.08 - 1e-3, 1.0, 0.0, 0.0, 0.0],  # standing centred on the box
            [0.05, 0.0, 0.55 + 0.04 - 1e-3, *side],  # lying along x
            [0.05, 0.0, 0.5, *side],  # centres coincide, the cylinder inside the box
        ]
    )
    qd = jnp.asarray(np.random.default_rng(1).normal(0, 0.01, (3, 6)))

    def scalar(model, q, qd):
        w = ct.wrenches(model, q, qd)
        return jnp.sum(w * jnp.arange(1.0, 1.0 + w.size).reshape(w.shape))

    vals, grads = jax.jit(jax.vmap(jax.value_and_grad(scalar, argnums=(0, 1, 2)), in_axes=(None, 0, 0)))(m, qs, qd)
    assert np.all(np.asarray(vals) != 0.0)
    for leaf in jax.tree_util.tree_leaves(grads):
        assert np.all(np.isfinite(np.asarray(leaf)))
    # cylinder-cylinder: a can standing on the post's axis (every rim tie), lying across the
    # post's disk, and lying along a lying cylinder (parallel axes, the side line's degenerate case)
    post = jaxdyn.load_mjcf(CYLINDER_POST.replace("GEOM", '<geom type="cylinder" size="0.04 0.08" mass="0.6"/>'))
    log = CYLINDER_POST.replace('euler="0 0 0"', "").replace('pos="0 0 0.25"', 'pos="0 0 0.25" euler="0 90 0"')
    log = jaxdyn.load_mjcf(log.replace("GEOM", '<geom type="cylinder" size="0.04 0.08" mass="0.6"/>'))
    models = jax.tree_util.tree_map(lambda *x: jnp.stack(x), post, post, log)  # one structure: one program
    qs = jnp.array(
        [[0.0, 0.0, 0.58 - 1e-3, 1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.54 - 1e-3, *side], [0.0, 0.0, 0.39 - 1e-3, *side]]
    )
    vals, grads = jax.jit(jax.vmap(jax.value_and_grad(scalar, argnums=(0, 1, 2))))(models, qs, qd)
    assert np.all(np.asarray(vals) != 0.0)
    for leaf in jax.tree_util.tree_leaves(grads):
        assert np.all(np.isfinite(np.asarray(leaf)))


def test_pairs_not_collided_are_warned_about_by_name():
    """A flat mesh (its points span no volume) is admitted by the filter but not collided:
    collision_pairs lists its pairs as unsupported and warns, naming the geoms; an ellipsoid is
    collided with a box, a cylinder and a mesh."""
    xml = """<mujoco><asset><mesh name="tri" vertex="0 0 0  0.05 0 0  0 0.05 0"/>
    <mesh name="tet" vertex="0 0 0  0.05 0 0  0 0.05 0  0 0 0.05"/></asset>
    <worldbody><geom name="table" type="box" size="0.3 0.3 0.05"/>
    <body name="a" pos="0 0 0.3"><freejoint/><inertial pos="0 0 0" mass="1" diaginertia="1e-3 1e-3 1e-3"/>
    <geom name="sheet" type="mesh" mesh="tri"/></body>
    <body name="b" pos="0.2 0 0.3"><freejoint/><geom name="can" type="cylinder" size="0.04 0.08" mass="1"/>
    <geom name="egg" type="ellipsoid" size="0.03 0.02 0.02" pos="0 0.1 0" mass="0.1"/></body>
    <body name="c" pos="-0.2 0 0.3"><freejoint/><geom name="rock" type="mesh" mesh="tet" mass="1"/></body>
    </worldbody></mujoco>"""
    m = jaxdyn.load_mjcf(xml)
    with pytest.warns(UserWarning, match=r"4 geom pairs are not collided .*'sheet'") as w:
        table = C.collision_pairs(m)
    assert all(
        f"'sheet'-'{o}'" in str(w[0].message) or f"'{o}'-'sheet'" in str(w[0].message)
        for o in ("table", "can", "egg", "rock")
    )
    assert "'egg'-'rock'" not in str(w[0].message)
    # collided: the can, the egg and the rock on the table; the can and the egg with the rock
    assert len(table.unsupported) == 4 and len(table.pairs) == 5


@pytest.mark.parametrize("dtype, tol", [(jnp.float64, 1e-10), (jnp.float32, 2e-6)])
def test_cylinder_cylinder_matches_mujoco(dtype, tol):
    """Cylinder-cylinder at 86 poses (tests/reference/generate_mujoco_cylinder_pairs.py): apart,
    the pair's distance and the smallest of its 25 contacts' equal MuJoCo's mj_geomDistance (GJK
    at tolerance 1e-12); overlapping, never deeper than MuJoCo's penetration (EPA); at the chosen
    poses (standing on the other's disk off its axis, lying across it, crossed at right angles;
    1-2 mm deep or apart) equal to it; unit normals."""
    from jaxdyn import collision as K

    r = np.load(os.path.join(HERE, "data", "mujoco", "contact", "cylinder_cylinder.npz"))
    shapes = (r["cylinder_quat"], r["cylinder_size"], r["cylinder2_pos"], r["cylinder2_quat"], r["cylinder2_size"])
    _check_cylinder_pair(K.cylinder_cylinder_contacts, r, shapes, 25, dtype, tol)


def test_cylinder_rests_on_a_cylinder():
    """A 0.6 kg can (radius 4 cm) on an upright post (radius 10 cm, top z = 0.5), dropped
    standing on the post's axis, comes to rest on four rim points at the Hunt-Crossley depth
    (m g / 4 k)^(1/p); dropped tilted, it comes to rest level; both with the normal force at the
    weight, still. Dropped standing 7 cm off the axis (overhanging the post's rim, resting on the
    rim's edge) it stays in place (within 0.05 mm over the last 2 s) with a residual chatter of
    kinetic energy below 1e-6 J (docs/contact.md), its energy never above the start."""
    m = jaxdyn.load_mjcf(CYLINDER_POST.replace("GEOM", '<geom type="cylinder" size="0.04 0.08" mass="0.6"/>'))
    # the regularisation these rests were measured with (the former default): with the narrower
    # default the friction holds the body where it first sticks, with the friction's share of the
    # load static (docs/contact.md, "Friction that holds")
    ct = C.Contact(C.Ground(), C.ContactParams(friction_velocity=0.02), collide_pairs=True)
    assert C.collision_pairs(m).rows == (25,)
    k, p, mass, hl, top = 1e6, 1.5, 0.6, 0.08, 0.5
    tilt = [np.cos(0.1), 0.6 * np.sin(0.1), 0.8 * np.sin(0.1), 0.0]
    q0 = jnp.array(
        [
            [0.0, 0.0, top + hl + 1e-3, 1.0, 0.0, 0.0, 0.0],
            [0.02, -0.03, top + hl + 0.03, *tilt],
            [0.07, 0.0, top + hl + 1e-3, 1.0, 0.0, 0.0, 0.0],
        ]
    )

    @jax.jit
    @jax.vmap
    def settle(q0):
        tr = sim.rollout(m, q0, jnp.zeros(6), jnp.zeros((3000, 6)), 1e-3, contact=ct)
        pc = C.pair_contacts(m, tr.q[-1], tr.qd[-1])
        energy = jax.vmap(lambda q, v: jaxdyn.kinetic_energy(m, q, v) + jaxdyn.potential_energy(m, q))(tr.q, tr.qd)
        kinetic = jax.vmap(lambda q, v: jaxdyn.kinetic_energy(m, q, v))(tr.q[-2000:], tr.qd[-2000:])
        f = C.total_force(m, tr.q[-1], tr.qd[-1], ct)
        return tr.q[-2000:, :3], tr.q[-1], tr.qd[-1], f, pc.distance, energy, kinetic, tr.nonfinite_step

    xs, q, qd, f, dist, energy, kinetic, bad = (np.asarray(x) for x in settle(q0))
    assert np.all(bad == -1) and np.all(np.isfinite(q))
    assert np.all(energy <= energy[:, :1] * (1 + 1e-12))
    depth = (mass * G / (4 * k)) ** (1 / p)
    np.testing.assert_allclose(top + hl - q[0, 2], depth, rtol=1e-6)
    np.testing.assert_allclose(np.sort(dist[0])[:4], -depth, rtol=1e-6)
    for s in range(2):
        np.testing.assert_allclose(f[s], [0.0, 0.0, mass * G], rtol=1e-6, atol=1e-6)
        assert np.abs(qd[s]).max() < 1e-6, s
        w, x, y, z = q[s, 3:]
        assert abs(1 - 2 * (x * x + y * y) - 1) < 1e-6, s  # the can's axis vertical
    assert np.ptp(xs[2], axis=0).max() < 5e-5 and kinetic[2].max() < 1e-6


CAPSULE_IN_CRADLE = """<mujoco><worldbody>
<geom name="log1" type="capsule" size="0.04 0.3" pos="0 0.06 0.5" euler="0 90 0"/>
<geom name="log2" type="capsule" size="0.04 0.3" pos="0.02 -0.06 0.5" euler="0 90 0"/>
<body name="cap"><freejoint/><geom name="cap" type="capsule" size="0.03 0.1" euler="0 90 0" mass="0.5"/></body>
</worldbody></mujoco>"""


def test_capsule_rests_level_in_a_cradle_of_capsules():
    """A 0.5 kg capsule dropped level, and tilted 0.2 rad, into the groove between two parallel
    capsules on the world comes to rest level on the four ends of the stretches where it lies
    alongside them (capsule-capsule: three contacts per pair, the closest points counted by (B1)
    carrying nothing), still, the contact force equal to the weight; without rocking."""
    m = jaxdyn.load_mjcf(CAPSULE_IN_CRADLE, dtype=jnp.float64)
    # the regularisation these rests were measured with (the former default): with the narrower
    # default the friction holds the body where it first sticks, with the friction's share of the
    # load static (docs/contact.md, "Friction that holds")
    ct = C.Contact(C.Ground(), C.ContactParams(friction_velocity=0.02), collide_pairs=True, collide_ground=False)
    assert C.collision_pairs(m).rows == (3, 3)
    tilt = [np.cos(0.1), 0.0, np.sin(0.1), 0.0]
    q0 = jnp.array([[0.01, 0.0, 0.58, 1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.6, *tilt]])

    @jax.jit
    @jax.vmap
    def settle(q0):
        tr = sim.rollout(m, q0, jnp.zeros(6), jnp.zeros((1500, 6)), 1e-3, contact=ct)
        pc = C.pair_contacts(m, tr.q[-1], tr.qd[-1])
        return tr.q, tr.qd, C.total_force(m, tr.q[-1], tr.qd[-1], ct), pc.distance, tr.nonfinite_step

    q, qd, f, dist, bad = (np.asarray(a) for a in settle(q0))
    assert np.all(bad == -1) and np.all(np.isfinite(q))
    for s in range(2):  # level, tilted
        np.testing.assert_allclose(f[s], [0.0, 0.0, 0.5 * G], rtol=1e-6, atol=1e-9)
        np.testing.assert_allclose(np.abs(qd[s, -1]).max(), 0.0, atol=1e-6)
        w, x, y, z = q[s, -1, 3:]
        assert abs(2 * (x * z - w * y)) < 1e-6  # the capsule's axis (its body x) level
        ends, interior = dist[s][[0, 1, 3, 4]], dist[s][[2, 5]]
        assert np.all(ends < 0) and np.ptp(ends) < 1e-9 and np.all(np.abs(interior) < 1e-12)
        assert np.abs(q[s, -500:, 2] - q[s, -1, 2]).max() < 1e-6  # no rocking over the last 0.5 s
    np.testing.assert_allclose(q[0, -1, 2], q[1, -1, 2], atol=1e-9)


URDF = """<robot name="coll">
  <link name="base">
    <inertial><mass value="2"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial>
    <visual><geometry><mesh filename="package://base.stl"/></geometry></visual>
    <collision name="base_box"><origin xyz="0 0 0.05" rpy="0 0 0.3"/><geometry><box size="0.4 0.2 0.1"/></geometry>
    </collision>
  </link>
  <link name="arm">
    <inertial><origin xyz="0 0 0.2"/><mass value="1"/>
      <inertia ixx="0.02" iyy="0.02" izz="0.001" ixy="0" ixz="0" iyz="0"/></inertial>
    <collision><origin xyz="0 0 0.2"/><geometry><cylinder radius="0.05" length="0.4"/></geometry></collision>
    <collision name="arm_mesh"><geometry><mesh filename="package://arm.stl"/></geometry></collision>
  </link>
  <link name="tool">
    <inertial><mass value="0.5"/><inertia ixx="0.001" iyy="0.001" izz="0.001" ixy="0" ixz="0" iyz="0"/></inertial>
    <collision name="tip"><origin xyz="0.1 0 0" rpy="0 1.5 0"/><geometry><capsule radius="0.02" length="0.1"/></geometry>
    </collision>
    <collision name="ball"><origin xyz="0 0.05 0"/><geometry><sphere radius="0.03"/></geometry></collision>
  </link>
  <link name="sensor"><collision><geometry><mesh filename="package://s.stl"/></geometry></collision></link>
  <joint name="j1" type="revolute"><parent link="base"/><child link="arm"/><origin xyz="0 0 0.1" rpy="0.1 0 0"/>
    <axis xyz="0 1 0"/><limit lower="-1" upper="1" effort="10" velocity="5"/></joint>
  <joint name="fix" type="fixed"><parent link="arm"/><child link="tool"/><origin xyz="0 0 0.4" rpy="0 0 0.5"/></joint>
  <joint name="fix2" type="fixed"><parent link="base"/><child link="sensor"/></joint>
</robot>"""


def _rot(axis, a):
    c, s = np.cos(a), np.sin(a)
    i, j = [(1, 2), (2, 0), (0, 1)][axis]
    R = np.eye(3)
    R[i, i], R[i, j], R[j, i], R[j, j] = c, -s, s, c
    return R


def _load_urdf(text, **kw):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = jaxdyn.load_urdf(text, dtype=jnp.float64, **kw)
    return m, [str(w.message) for w in caught if "collision" in str(w.message)]


def test_urdf_collision_elements():
    """<collision> spheres, boxes, cylinders and capsules become geoms with MuJoCo's sizes
    (half-extents, half-lengths); a fixed-joint child's geoms move to its parent body with the
    joint's placement composed; meshes that are not found are skipped with one warning naming
    each link and file; the dynamics are those of the same file without collision elements."""
    m, warned = _load_urdf(URDF, floating_base=True)
    assert len(warned) == 1 and "'package://arm.stl' not found" in warned[0] and "link 'sensor'" in warned[0]
    g = m.geoms
    assert g.names == ("base_box", "arm", "tip", "ball")
    assert g.type == (geometry.BOX, geometry.CYLINDER, geometry.CAPSULE, geometry.SPHERE)
    assert g.body == (0, 1, 1, 1) and g.contype == g.conaffinity == (1, 1, 1, 1)
    np.testing.assert_array_equal(np.asarray(g.size), [[0.2, 0.1, 0.05], [0.05, 0.2, 0], [0.02, 0.05, 0], [0.03, 0, 0]])
    np.testing.assert_array_equal(np.asarray(g.friction), np.tile([1.0, 0.005, 0.0001], (4, 1)))
    Rt, pt = _rot(2, 0.5), np.array([0.0, 0.0, 0.4])  # the tool link in the arm's frame
    pos = [[0, 0, 0.05], [0, 0, 0.2], Rt @ [0.1, 0, 0] + pt, Rt @ [0, 0.05, 0] + pt]
    R = [_rot(2, 0.3), np.eye(3), Rt @ _rot(1, 1.5), Rt]
    np.testing.assert_allclose(np.asarray(g.pos), pos, rtol=0, atol=1e-15)
    np.testing.assert_allclose(np.asarray(g.R), R, rtol=0, atol=1e-15)
    bare, warned = _load_urdf(URDF.replace("collision", "visual"), floating_base=True)
    assert warned == [] and bare.geoms.ng == 0
    assert eqx.tree_equal(eqx.tree_at(lambda m: m.geoms, m, bare.geoms), bare)
    assert C.collision_pairs(m).pairs == ()  # base and arm are parent and child
    # fixed base: the root link's geoms sit on the world, and (MuJoCo's rule) the world's geoms
    # collide with its children: the ball, the capsule and the cylinder with the base box
    fixed, _ = _load_urdf(URDF)
    assert fixed.geoms.body == (-1, 0, 0, 0)
    assert C.collision_pairs(fixed)[::2] == (((3, 0), (2, 0), (1, 0)), ())
    assert C.collision_pairs(fixed, exclude=[("world", "arm")])[::2] == ((), ())


@pytest.mark.parametrize(
    "bad, match",
    [
        ('<box size="0.4 0.2"/>', r"link 'base' <collision> 1 <box> size: expected 3 finite numbers"),
        ('<sphere radius="-1"/>', r"link 'base' <collision> 1 <sphere>: attribute radius='-1' must be positive"),
        ('<cylinder radius="0.1"/>', r"link 'base' <collision> 1 <cylinder>: attribute length is missing"),
        ('<cone radius="0.1"/>', r"link 'base' <collision> 1: unknown geometry <cone>"),
    ],
)
def test_urdf_bad_collision_is_named(bad, match):
    with pytest.raises(jaxdyn.io.urdf.URDFError, match=match):
        jaxdyn.load_urdf(URDF.replace('<box size="0.4 0.2 0.1"/>', bad))


@pytest.mark.parametrize(
    "sphere, floor, mu",
    [
        ('condim="1"', "", 0.9),  # the larger dimension, 3: the larger friction
        ('condim="1"', 'condim="1"', 0.0),  # both 1: frictionless
        ('condim="1" priority="1"', "", 0.0),  # the higher priority's dimension
        ('condim="6"', 'condim="1"', 0.9),  # 6 (rolling) acts as 3: the larger friction
    ],
)
def test_condim_one_is_frictionless(sphere, floor, mu):
    """MuJoCo's contact dimension (geom ``condim``), combined as MuJoCo combines it (the higher
    priority's, else the larger; tests/data/mjcf/contact_filter.xml checks it against MuJoCo):
    a contact of dimension 1 has no friction; 6 (torsional and rolling) has sliding friction."""
    xml = f"""<mujoco><worldbody><geom name="floor" type="plane" size="0 0 1" friction="0.9" {floor}/>
    <body pos="0 0 0.05"><freejoint/><geom type="sphere" size="0.1" friction="0.5" {sphere}/></body>
    </worldbody></mujoco>"""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = jaxdyn.load_mjcf(xml)
    cp = C.contact_points(m, jnp.array([0, 0, 0.05, 1, 0, 0, 0.0]), jnp.zeros(6), C.Ground.from_model(m))
    assert float(cp.mu[0]) == pytest.approx(mu, rel=1e-6)
    with pytest.raises(ValueError, match="condim must be 1, 3, 4 or 6"):
        geometry.make_geoms(type=[geometry.SPHERE], size=np.zeros((1, 3)), body=[0], condim=2)


@pytest.mark.parametrize("dtype, tol", [(jnp.float64, 1e-9), (jnp.float32, 5e-7)])
def test_ellipsoid_pairs_match_mujoco(dtype, tol):
    """Sphere-ellipsoid, capsule-ellipsoid, ellipsoid-ellipsoid, ellipsoid-box and
    ellipsoid-cylinder at 83 poses each
    (tests/reference/generate_mujoco_ellipsoid_pairs.py; the ellipsoid 0.2 x 0.12 x 0.07 m at
    random orientations, 11, 14 and 12 of the random poses overlapping). Sphere-ellipsoid and
    ellipsoid-ellipsoid equal MuJoCo's mj_geomDistance everywhere (GJK apart, EPA's minimum
    translation overlapping). Capsule-ellipsoid: apart, the pair's distance and its three
    contacts' smallest equal MuJoCo's; overlapping, never deeper than the minimum translation;
    at the chosen poses (level across the top 1 mm deep and 2 mm above, standing on it 1 mm
    deep) equal. Ellipsoid-box likewise (14 random poses overlapping; chosen: a face 1 mm into
    the bottom and 1 mm below it, an edge 0.5 mm into it) and ellipsoid-cylinder (10
    overlapping; chosen: standing on the top 1 mm deep and 1 mm above, lying across it 1 mm
    deep). Unit normals."""
    from jaxdyn import collision as K

    r = np.load(os.path.join(HERE, "data", "mujoco", "contact", "ellipsoid_pairs.npz"))
    rot = jax.vmap(jaxdyn.spatial.quat_to_rotation)
    a = lambda x: jnp.asarray(x, dtype)  # noqa: E731
    n, chosen = len(r["sphere_dist"]), int(r["chosen"])
    size = a(np.tile(r["ellipsoid_size"], (n, 1)))
    zero = a(np.zeros((n, 3)))
    sph = a(np.full(n, r["sphere_size"][0]))
    sd, normal, _ = jax.jit(K.sphere_ellipsoid)(a(r["sphere_pos"]), sph, zero, rot(a(r["sphere_ellipsoid_quat"])), size)
    mj = r["sphere_dist"]
    assert (mj[:-chosen] < 0).sum() >= 10 and (mj[:-chosen] > 0).sum() >= 40
    np.testing.assert_allclose(np.asarray(sd, np.float64), mj, rtol=0, atol=tol)
    np.testing.assert_allclose(np.linalg.norm(np.asarray(normal, np.float64), axis=-1), 1.0, rtol=0, atol=10 * tol)

    rc, hl = r["capsule_size"]
    p, d = K.segment_of(rot(a(r["capsule_quat"])), a(r["capsule_pos"]), a(np.tile([rc, hl, 0.0], (n, 1))))
    contacts = jax.jit(K.segment_ellipsoid_contacts)
    dist, normal, _, phi = (
        np.asarray(x, np.float64)
        for x in contacts(p, d, a(np.full(n, rc)), zero, rot(a(r["capsule_ellipsoid_quat"])), size)
    )
    assert dist.shape == (n, 3)
    _assert_as_epa(dist, normal, phi, r["capsule_dist"], chosen, tol)

    R2, size2 = rot(a(r["ellipsoid2_quat"])), a(np.tile(r["ellipsoid2_size"], (n, 1)))
    args = (zero, rot(a(r["ellipsoid2_ellipsoid_quat"])), size, a(r["ellipsoid2_pos"]), R2, size2)
    sd, normal, _ = jax.jit(K.ellipsoid_ellipsoid)(*args)
    mj = r["ellipsoid2_dist"]
    assert (mj[:-chosen] < 0).sum() >= 10 and (mj[:-chosen] > 0).sum() >= 40
    np.testing.assert_allclose(np.asarray(sd, np.float64), mj, rtol=0, atol=tol)
    np.testing.assert_allclose(np.linalg.norm(np.asarray(normal, np.float64), axis=-1), 1.0, rtol=0, atol=10 * tol)

    # ellipsoid-box: 26 contacts (corners, edges, the ellipsoid's support points along the faces)
    hb = a(np.tile(r["box_size"], (n, 1)))
    args = (zero, rot(a(r["box_ellipsoid_quat"])), size, a(r["box_pos"]), rot(a(r["box_quat"])), hb)
    dist, normal, _, phi = (np.asarray(x, np.float64) for x in jax.jit(K.ellipsoid_box_contacts)(*args))
    assert dist.shape == (n, 26)
    _assert_as_epa(dist, normal, phi, r["box_dist"], chosen, tol)

    # ellipsoid-cylinder: 15 contacts (the rims, the ellipsoid's support points along the disks,
    # the side line facing the ellipsoid)
    sc = a(np.tile([*r["cylinder_size"], 0.0], (n, 1)))
    args = (zero, rot(a(r["cylinder_ellipsoid_quat"])), size, a(r["cylinder_pos"]), rot(a(r["cylinder_quat"])), sc)
    dist, normal, _, phi = (np.asarray(x, np.float64) for x in jax.jit(K.ellipsoid_cylinder_contacts)(*args))
    assert dist.shape == (n, 15)
    _assert_as_epa(dist, normal, phi, r["cylinder_dist"], chosen, tol)


ELLIPSOID_POST = """<mujoco><worldbody>
<geom name="post" type="ellipsoid" size="0.2 0.12 0.07" pos="0 0 0.5" euler="0 0 30"/>
<body name="b"><freejoint/>GEOM</body>
</worldbody></mujoco>"""


def _settle(m, q0, ct, steps=1000):
    """A free body's rollout from ``q0`` at rest for ``steps`` steps of 1 ms: its final ``q``,
    ``qd``, pair distances, total contact force and the first non-finite step (numpy)."""

    @jax.jit
    def run(q0):
        tr = sim.rollout(m, q0, jnp.zeros(6), jnp.zeros((steps, 6)), 1e-3, contact=ct)
        q, qd = tr.q[-1], tr.qd[-1]
        return q, qd, C.pair_contacts(m, q, qd).distance, C.total_force(m, q, qd, ct), tr.nonfinite_step

    return tuple(np.asarray(x) for x in run(jnp.asarray(q0)))


def test_ellipsoid_near_a_box_edge_acts_once():
    """An ellipsoid lying level on a box's top face 0.2 mm deep: in the middle, 5 mm inside an
    edge, right above it and hanging 5 mm over it, exactly one of the 26 contacts acts, the
    support point on the face or the edge's deepest point ((B1): the edge counted beyond its
    faces' support points), and its depth moves continuously from the one to the other."""
    from jaxdyn import collision as K

    f = jax.jit(K.ellipsoid_box_contacts)
    a, h = jnp.asarray([0.1, 0.06, 0.03]), jnp.asarray([0.1, 0.07, 0.05])
    eye = jnp.eye(3)
    lowest = {}
    for name, x0 in (("middle", 0.0), ("inside", 0.095), ("above", 0.1), ("over", 0.105)):
        ce = jnp.asarray([x0, 0.0, 0.05 + 0.03 - 0.0002])
        dist = np.asarray(f(ce, eye, a, jnp.zeros(3), eye, h)[0])
        acting = np.flatnonzero(dist < 0)
        assert len(acting) == 1, (name, acting, dist[acting])
        lowest[name] = (int(acting[0]), float(dist[acting[0]]))
    assert lowest["middle"] == (25, pytest.approx(-2e-4, abs=1e-12))  # the support point on +z
    assert lowest["inside"] == (25, pytest.approx(-2e-4, abs=1e-12))
    assert lowest["above"][0] in range(8, 20) and lowest["above"][1] == pytest.approx(-2e-4, abs=1e-9)
    # the edge below the surface 5 mm off the lowest point (vertically; the distance is along the
    # surface's normal, tilted by 0.015 rad there)
    depth_over = 2e-4 - 0.03 * (1 - np.sqrt(1 - 0.05**2))
    assert lowest["over"][0] in range(8, 20) and lowest["over"][1] == pytest.approx(-depth_over, rel=2e-4)


def test_ellipsoid_on_a_cylinder_acts_once():
    """An ellipsoid (0.03 x 0.02 x 0.015 m) level on a standing cylinder's disk 0.2 mm deep: in
    the middle and 0.5 mm inside the rim it acts through its support point; right above the rim
    and hanging 0.5-2 mm over it through the rim, as deep as the rim is under its surface; a
    cylinder lying across the ellipsoid's top through its side line. One contact each (rows of
    depth above 1e-9 m: the rim's deepest point, counted beyond the rim's 4 points, is 0 there
    to round-off)."""
    from jaxdyn import collision as K

    f = jax.jit(K.ellipsoid_cylinder_contacts)
    a, size, eye = jnp.asarray([0.03, 0.02, 0.015]), jnp.asarray([0.04, 0.08, 0.0]), jnp.eye(3)
    for x0 in (0.0, 0.0395, 0.04, 0.0405, 0.042):
        dist = np.asarray(f(jnp.asarray([x0, 0.0, 0.08 + 0.015 - 2e-4]), eye, a, jnp.zeros(3), eye, size)[0])
        acting = np.flatnonzero(dist < -1e-9)
        assert len(acting) == 1, (x0, acting, dist[acting])
        over = max(x0 - 0.04, 0.0)  # the rim under the surface, vertically (the distance is along the normal)
        depth = 2e-4 - 0.015 * (1 - np.sqrt(1 - (over / 0.03) ** 2))
        assert dist[acting[0]] == pytest.approx(-depth, rel=1e-3), x0  # the normal tilts by 0.03 rad at 2 mm
        assert (acting[0] == 12) == (x0 < 0.04)  # the support point along the top disk's normal
    lying = jnp.asarray([[1.0, 0.0, 0.0], [0.0, 0.0, -1.0], [0.0, 1.0, 0.0]])  # the axis along y
    dist = np.asarray(f(jnp.zeros(3), eye, a, jnp.asarray([0.0, 0.0, 0.015 + 0.04 - 2e-4]), lying, size)[0])
    assert np.flatnonzero(dist < -1e-9).tolist() == [14] and dist[14] == pytest.approx(-2e-4, abs=1e-12)


ELLIPSOID_ON_BOX = """<mujoco><worldbody>
<geom name="table" type="box" size="0.3 0.25 0.05" pos="0.05 0 0.5" euler="0 0 20"/>
<body name="b"><freejoint/><geom type="ellipsoid" size="0.1 0.06 0.03" mass="0.8"/></body>
</worldbody></mujoco>"""


def test_ellipsoids_and_other_shapes_rest_on_each_other():
    """A 0.8 kg ellipsoid dropped level onto a box on the world (top face z = 0.55) rests on its
    lowest point, the support point along the face's normal, at (m g / k)^(1/p); a 0.6 kg box
    dropped level onto the top of an ellipsoid on the world rests there as deep; so do the
    ellipsoid dropped 5 cm off the axis onto a standing cylinder's disk (the disk's support
    point) and onto a mesh slab the size of the box (its support point through the top face),
    and a 0.6 kg cylinder dropped lying across the ellipsoid's top (its side line); the
    normal force equal to the weight, still after 1 s. Derivatives are finite with the centres
    coinciding."""
    k, p = 1e6, 1.5
    ct = C.Contact(collide_ground=False)
    box_on_top = ELLIPSOID_POST.replace("GEOM", '<geom type="box" size="0.05 0.04 0.02" mass="0.6"/>')
    can_across = ELLIPSOID_POST.replace("GEOM", '<geom type="cylinder" size="0.04 0.08" mass="0.6"/>')
    egg_on_can = ELLIPSOID_ON_BOX.replace('type="box" size="0.3 0.25 0.05"', 'type="cylinder" size="0.12 0.05"')
    slab = " ".join(f"{x * 0.3} {y * 0.25} {z * 0.05}" for x in (-1, 1) for y in (-1, 1) for z in (-1, 1))
    egg_on_slab = ELLIPSOID_ON_BOX.replace(
        "<worldbody>", f'<asset><mesh name="slab" vertex="{slab}"/></asset><worldbody>'
    )
    egg_on_slab = egg_on_slab.replace('type="box" size="0.3 0.25 0.05"', 'type="mesh" mesh="slab"')
    level = [np.cos(np.pi / 4), np.sin(np.pi / 4), 0.0, 0.0]  # the axis along y
    for xml, q0, mass, top, rows in (
        (ELLIPSOID_ON_BOX, [0.0, 0.0, 0.585, 1.0, 0, 0, 0], 0.8, 0.55 + 0.03, 26),
        (box_on_top, [0.0, 0.0, 0.595, 1.0, 0, 0, 0], 0.6, 0.57 + 0.02, 26),
        (egg_on_can, [0.05, 0.0, 0.585, 1.0, 0, 0, 0], 0.8, 0.55 + 0.03, 15),
        (can_across, [0.0, 0.0, 0.615, *level], 0.6, 0.57 + 0.04, 15),
        (egg_on_slab, [0.0, 0.0, 0.585, 1.0, 0, 0, 0], 0.8, 0.55 + 0.03, 17),
    ):
        m = jaxdyn.load_mjcf(xml, dtype=jnp.float64)
        assert C.collision_pairs(m).rows == (rows,) and C.collision_pairs(m).unsupported == ()

        q, qd, dist, force, bad = _settle(m, q0, ct)
        assert int(bad) == -1 and np.abs(qd).max() < 1e-5
        np.testing.assert_allclose(force, [0.0, 0.0, mass * G], rtol=0, atol=1e-6 * mass * G)
        depth = (mass * G / k) ** (1 / p)
        np.testing.assert_allclose(top - q[2], depth, rtol=1e-4)
        np.testing.assert_allclose(np.min(dist), -depth, rtol=1e-4)
        assert np.sum(dist < 0) == 1  # one contact carries it
        special = jnp.asarray(q0).at[:3].set(m.geoms.pos[0])  # the centres coincide
        gm, gq = jax.jit(jax.grad(lambda m, q: jnp.sum(C.pair_distances(m, q)), argnums=(0, 1)))(m, special)
        assert np.all(np.isfinite(np.asarray(gq)))
        assert all(np.all(np.isfinite(np.asarray(x))) for x in jax.tree_util.tree_leaves(gm))


def test_shapes_rest_on_an_ellipsoid():
    """A 1 kg sphere dropped onto the top of an ellipsoid on the world rests there at
    (m g / k)^(1/p), a 0.5 kg capsule dropped level across the top rests on its deepest point
    (the interior contact, (B1)) and a 0.8 kg ellipsoid dropped level on its flattest side as
    deep, the normal force equal to the weight; still after 1 s (the top is an unstable
    equilibrium: dropped off it they roll off, and the capsule's round-off grows into a turn
    within 3 s). Derivatives are finite with the centres coinciding (the sphere's deep inside,
    on the plane of the ellipsoid's shortest axis; the capsule's segment through it; the
    ellipsoids' minimum translation two-fold)."""
    k, p = 1e6, 1.5
    ct = C.Contact(collide_ground=False)
    level = [np.cos(np.pi / 4), 0.0, np.sin(np.pi / 4), 0.0]
    cases = {
        "sphere": ('<geom type="sphere" size="0.04" mass="1"/>', [0.0, 0.0, 0.62, 1.0, 0, 0, 0], 1, 1.0),
        "capsule": ('<geom type="capsule" size="0.02 0.06" mass="0.5"/>', [0.0, 0.0, 0.6, *level], 3, 0.5),
        "ellipsoid": (
            '<geom type="ellipsoid" size="0.1 0.06 0.03" mass="0.8"/>',
            [0.0, 0.0, 0.61, 1.0, 0, 0, 0],
            1,
            0.8,
        ),
    }
    for name, (geom, q0, rows, mass) in cases.items():
        m = jaxdyn.load_mjcf(ELLIPSOID_POST.replace("GEOM", geom), dtype=jnp.float64)
        assert C.collision_pairs(m).rows == (rows,) and C.collision_pairs(m).unsupported == ()

        q, qd, dist, force, bad = _settle(m, q0, ct)
        assert int(bad) == -1 and np.abs(qd).max() < 1e-5, name
        np.testing.assert_allclose(force, [0.0, 0.0, mass * G], rtol=0, atol=1e-6 * mass * G)
        r = {"sphere": 0.04, "capsule": 0.02, "ellipsoid": 0.03}[name]  # the lowest point below the centre
        depth = (mass * G / k) ** (1 / p)
        np.testing.assert_allclose(np.hypot(q[0], q[1]), 0.0, atol=1e-4)  # on the top
        np.testing.assert_allclose(0.57 + r - q[2], depth, rtol=1e-4)
        np.testing.assert_allclose(np.min(dist), -depth, rtol=1e-4)
    m = jaxdyn.load_mjcf(ELLIPSOID_POST.replace("GEOM", cases["sphere"][0]), dtype=jnp.float64)
    cap = jaxdyn.load_mjcf(ELLIPSOID_POST.replace("GEOM", cases["capsule"][0]), dtype=jnp.float64)
    egg = jaxdyn.load_mjcf(ELLIPSOID_POST.replace("GEOM", cases["ellipsoid"][0]), dtype=jnp.float64)
    for model in (m, cap, egg):
        special = jnp.array([0.0, 0.0, 0.5, 1.0, 0, 0, 0])  # the centres coincide
        gm, gq = jax.jit(jax.grad(lambda m, q: jnp.sum(C.pair_distances(m, q)), argnums=(0, 1)))(model, special)
        assert np.all(np.isfinite(np.asarray(gq)))
        assert all(np.all(np.isfinite(np.asarray(x))) for x in jax.tree_util.tree_leaves(gm))
