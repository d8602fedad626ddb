"""Shape pairs and cylinders in jaxdyn.contact: signed distances against MuJoCo's
(tests/reference/generate_mujoco_pairs.py), analytic penetrations, normals and witnesses, the
collision filter, finite derivatives at the degenerate configurations, momentum and energy in a
collision, cylinders resting on the ground, and URDF <collision> elements.
"""

import functools
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


@functools.cache
def _batched(dtype=jnp.float64):
    """One compiled program per dtype: pair contacts and ground contact points of a batch."""
    m = _model(dtype)
    z = jnp.zeros(m.nv, dtype)
    return jax.jit(jax.vmap(lambda q: (C.pair_contacts(m, q, z), C.contact_points(m, q, z))))


def _pair_index(model, a, b):
    names = model.geoms.names
    for k, (i, j) in enumerate(C.collision_pairs(model).pairs):
        if {names[i], names[j]} == {a, b}:
            return k, (names[i], names[j]) == (a, b)
    raise KeyError((a, b))


@pytest.mark.parametrize("dtype, tol", [(jnp.float64, 1e-12), (jnp.float32, 2e-6)])
def test_distances_match_mujoco(dtype, tol):
    """Signed distance of every supported pair, and the cylinder's deepest ground point, at 40
    random poses and 7 chosen ones (parallel and crossing capsules, a sphere centre inside the
    box and on its face, the cylinder upright, on its side, tilted) against mjContact.dist."""
    ref = np.load(REF)
    m = _model(dtype)
    pc, cp = _batched(dtype)(jnp.asarray(ref["qpos"], dtype))
    keys = [tuple(x) for x in ref["pair_names"]]
    names = m.geoms.names
    table = C.collision_pairs(m)
    compared = 0
    for k, (i, j) in enumerate(table.pairs):
        r = ref["dist"][:, keys.index(tuple(sorted((names[i], names[j]))))]
        ok = np.isfinite(r)
        assert ok.sum() >= 40 and (r[ok] < 0).sum() >= 1, (names[i], names[j])
        np.testing.assert_allclose(np.asarray(pc.distance)[ok, k], r[ok], rtol=0, atol=tol)
        compared += ok.sum()
    assert len(table.pairs) == 10 and compared > 400
    # the cylinder against the floor: its deepest rim point
    cyl = np.array(cp.geom) == names.index("cyl")
    phi = np.asarray(cp.centre[..., 2] - cp.radius)[:, cyl].min(1)
    r = ref["dist"][:, keys.index(("cyl", "floor"))]
    assert np.all(np.isfinite(r)) and (r < 0).sum() > 10
    np.testing.assert_allclose(phi, r, rtol=0, atol=tol)
    # pairs MuJoCo collides that jaxdyn does not (yet): capsule-box and box-box
    kinds = {tuple(sorted(m.geoms.type[g] for g in p)) for p in table.unsupported}
    assert kinds == {(geometry.CAPSULE, geometry.BOX), (geometry.BOX, geometry.BOX)}


def test_analytic_penetrations_normals_and_witnesses():
    """Penetration, normal (first geom to second) and witness point (midway between the
    surfaces) of spheres, a sphere on the tilted world box, a sphere inside a box, crossing and
    parallel capsules; friction the larger of the two geoms'."""
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
    pc, _ = _batched()(jnp.asarray(np.array(qs)))
    dist, nrm, pt = (np.asarray(a) for a in (pc.distance, pc.normal, pc.point))
    tol = dict(rtol=0, atol=1e-12)

    def check(sample, a, b, dist_ref, n_ref, p_ref):
        k, forward = _pair_index(m, a, b)
        assert forward
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
    # crossing capsules (radii 0.05, 0.08): segments 0.1 apart at x = 0.03
    check(3, "c1", "c2", 0.1 - 0.13, [0, 0, 1], [0.03, 0, 1 + 0.5 * (0.1 + 0.05 - 0.08)])
    # parallel capsules, overlap x in [-0.05, 0.15]: witness at the overlap's middle
    check(4, "c1", "c2", 0.1 - 0.13, [0, 1, 0], [0.05, 0.5 * (0.1 + 0.05 - 0.08), 1])
    # the force on the sphere resting on the box carries its weight along the face normal
    ct = C.Contact(collide_ground=False)
    f = eqx.filter_jit(C.total_force)(m, qs[1], np.zeros(m.nv), ct)
    np.testing.assert_allclose(np.asarray(f), G * top, rtol=1e-10, atol=1e-12)
    # friction: the larger of the two geoms' (s2 has 0.6, every other geom 1)
    fr = np.asarray(m.geoms.friction[:, 0])
    for k, (i, j) in enumerate(C.collision_pairs(m).pairs):
        assert pc.mu[0, k] == max(fr[i], fr[j])


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
    a_c = ("a1-c1", "a1-c2", "a2-c1")  # grandparent and grandchild collide
    d = ("w-d1", "a1-d1", "a2-d1", "b1-d1", "c1-d1", "c2-d1", "d1-e1")  # d1 contype 1, e1's 2 & 2
    assert named(t.pairs) == s(*world, *a_c, *d)
    assert named(t.unsupported) == s("a2-c2")  # capsule-box
    t = C.collision_pairs(m, exclude=[("a", "c"), ("world", "d")])
    assert named(t.pairs) == s(*world, *d[1:])
    assert named(t.unsupported) == set()
    with pytest.raises(ValueError, match="no body named 'nope'"):
        C.collision_pairs(m, exclude=[("a", "nope")])


def test_finite_derivatives_at_degenerate_configurations():
    """jax.grad of the contact wrenches w.r.t. the model, q and qd is finite: spheres exactly
    touching, coincident sphere centres, parallel capsule segments, a sphere centre exactly on a
    box face, edge and corner, and the cylinder exactly upright on the ground (its rim
    direction undefined). Dyadic sizes make the touching and on-face cases exact."""
    m = _model()
    s12 = [m.geoms.names.index("s1"), m.geoms.names.index("s2")]
    m = eqx.tree_at(lambda m: m.geoms.size, m, m.geoms.size.at[s12, 0].set(jnp.array([0.125, 0.0625])))
    sz = np.asarray(m.geoms.size)
    ib = m.geoms.names.index("b1")
    hb = sz[ib]
    x = [1.0, 0.0, 0.0, 0.0]
    along_x = [np.cos(np.pi / 4), 0.0, np.sin(np.pi / 4), 0.0]
    cyl_hl = sz[m.geoms.names.index("cyl"), 1]
    qs = np.array(
        [
            _q(s1=[0, 0, 1, *x], s2=[0.1875, 0, 1, *x]),  # touching: 0.125 + 0.0625
            _q(s1=[0, 0, 1, *x], s2=[0, 0, 1, *x]),  # coincident centres
            _q(c1=[0, 0, 1, *along_x], c2=[0.05, 0.1, 1, *along_x]),  # parallel segments
            _q(b1=[0, 0, 0, *x], s1=[0.05, -0.03, hb[2], *x]),  # on a face
            _q(b1=[0, 0, 0, *x], s1=[hb[0], 0.05, hb[2], *x]),  # on an edge
            _q(b1=[0, 0, 0, *x], s1=[hb[0], hb[1], hb[2], *x]),  # on a corner
            _q(cyl=[0, 0, cyl_hl - 1e-3, *x]),  # upright in the floor
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
    ct = C.Contact(collide_ground=False, params=C.ContactParams(damping=1.0))
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
    joint's placement composed; meshes are skipped with one warning naming the links; the
    dynamics are those of the same file without collision elements."""
    m, warned = _load_urdf(URDF, floating_base=True)
    assert len(warned) == 1 and "links: arm, sensor" in warned[0]
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
    # collide with its children: the ball with the base box; cylinder and capsule-box unsupported
    fixed, _ = _load_urdf(URDF)
    assert fixed.geoms.body == (-1, 0, 0, 0)
    assert C.collision_pairs(fixed)[::2] == (((3, 0),), ((1, 0), (2, 0)))
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
