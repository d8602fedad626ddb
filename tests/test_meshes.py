"""Mesh files in robot descriptions: the readers (STL, OBJ, COLLADA) against solids written for
the test, URDF mesh collisions against Pinocchio's, and a mesh geom's ground contact against the
box it is."""

import os
import struct
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.spatial import ConvexHull

import jaxdyn
from jaxdyn import contact, geometry
from jaxdyn.io import meshes

HERE = os.path.dirname(__file__)
DATA = os.path.join(HERE, "data")
ROBOT = os.path.join(DATA, "mesh_robot", "mesh_robot.urdf")

# a box whose numbers are exact in float32 (STL stores float32)
HALF = np.array([0.125, 0.25, 0.5])
CENTRE = np.array([0.25, -0.125, 0.0625])
CORNERS = CENTRE + HALF * np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)])
# the six faces as corner-index quads, counter-clockwise seen from outside
QUADS = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]


def _triangles(points=CORNERS):
    return np.array([[points[q[0]], points[q[k]], points[q[k + 1]]] for q in QUADS for k in (1, 2)])


def _write_stl_binary(path, tris):
    with open(path, "wb") as fh:
        fh.write(b"\0" * 80 + struct.pack("<I", len(tris)))
        for t in tris:
            fh.write(struct.pack("<12fH", 0, 0, 0, *t.reshape(-1), 0))


def _write_stl_ascii(path, tris):
    lines = ["solid box"]
    for t in tris:
        lines += ["  facet normal 0 0 0", "    outer loop"]
        lines += ["      vertex " + " ".join(repr(float(c)) for c in v) for v in t]
        lines += ["    endloop", "  endfacet"]
    with open(path, "w") as fh:
        fh.write("\n".join(lines + ["endsolid box", ""]))


def _write_obj(path):
    lines = (
        ["# a box", "o box"] + ["v " + " ".join(repr(float(c)) for c in v) for v in CORNERS] + ["vn 0 0 1", "vt 0 0"]
    )
    for k, q in enumerate(QUADS):  # the forms v, v/vt, v//vn, v/vt/vn, and negative indices
        if k % 2:
            lines.append("f " + " ".join(f"{i - 8}/1/1" for i in q))
        else:
            lines.append("f " + " ".join(f"{i + 1}//1" for i in q))
    with open(path, "w") as fh:
        fh.write("\n".join(lines) + "\n")


# COLLADA: the box in centimetres, through two nested nodes (a translation, then a quarter turn
# about z), with two positions that no polygon uses
DAE_T = np.array([0.5, 0.0, -0.25])
DAE_R = np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])


def _write_dae(path):
    pos = np.vstack([CORNERS, [[9.0, 9.0, 9.0], [-9.0, 9.0, 9.0]]]) * 100
    p = " ".join(f"{i} 0" for q in QUADS for i in q)  # VERTEX offset 0, NORMAL offset 1
    text = f"""<?xml version="1.0"?>
<COLLADA xmlns="http://www.collada.org/2005/11/COLLADASchema" version="1.4.1">
  <asset><unit name="centimeter" meter="0.01"/><up_axis>Y_UP</up_axis></asset>
  <library_geometries>
    <geometry id="box-mesh"><mesh>
      <source id="box-pos"><float_array id="box-pos-array" count="{pos.size}">{" ".join(repr(float(c)) for c in pos.reshape(-1))}</float_array>
        <technique_common><accessor source="#box-pos-array" count="{len(pos)}" stride="3"/></technique_common></source>
      <source id="box-nrm"><float_array id="box-nrm-array" count="3">0 0 1</float_array></source>
      <vertices id="box-vtx"><input semantic="POSITION" source="#box-pos"/></vertices>
      <polylist count="6"><input semantic="VERTEX" source="#box-vtx" offset="0"/>
        <input semantic="NORMAL" source="#box-nrm" offset="1"/><vcount>4 4 4 4 4 4</vcount><p>{p}</p></polylist>
    </mesh></geometry>
  </library_geometries>
  <library_nodes><node id="turned"><rotate>0 0 1 90</rotate><instance_geometry url="#box-mesh"/></node></library_nodes>
  <library_visual_scenes><visual_scene id="scene">
    <node id="moved"><translate>{DAE_T[0] * 100} {DAE_T[1] * 100} {DAE_T[2] * 100}</translate><scale>1 1 1</scale>
      <instance_node url="#turned"/></node>
  </visual_scene></library_visual_scenes>
  <scene><instance_visual_scene url="#scene"/></scene>
</COLLADA>"""
    with open(path, "w") as fh:
        fh.write(text)


def _same_points(a, b, atol):
    key = lambda x: x[np.lexsort(np.round(x, 6).T[::-1])]  # noqa: E731
    assert a.shape == b.shape
    np.testing.assert_allclose(key(a), key(b), rtol=0, atol=atol)


@pytest.mark.parametrize("kind", ["stl", "stl_ascii", "obj", "dae"])
def test_readers_return_the_solid(tmp_path, kind):
    path = str(tmp_path / f"box.{kind.split('_')[0]}")
    {
        "stl": lambda: _write_stl_binary(path, _triangles()),
        "stl_ascii": lambda: _write_stl_ascii(path, _triangles()),
        "obj": lambda: _write_obj(path),
        "dae": lambda: _write_dae(path),
    }[kind]()
    data = meshes.read_mesh(path)
    expect = CORNERS @ DAE_R.T + DAE_T if kind == "dae" else CORNERS
    _same_points(meshes.hull_vertices(data.points), expect, atol=1e-15)
    if kind != "dae":  # the triangles bound the box: its volume, outward
        from jaxdyn.io.mjcf import mesh_volume_inertia

        vol, com, _ = mesh_volume_inertia(data.triangles)
        assert vol == pytest.approx(8 * np.prod(HALF), rel=1e-12)
        np.testing.assert_allclose(com, CENTRE, atol=1e-15)


def test_malformed_mesh_files_name_the_file(tmp_path):
    bad_obj = tmp_path / "bad.obj"
    bad_obj.write_text("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 7\n")
    with pytest.raises(meshes.MeshError, match=r"bad\.obj' line 4: malformed OBJ 'f 1 2 7'"):
        meshes.read_mesh(str(bad_obj), "link 'x'")
    short = tmp_path / "short.stl"
    short.write_bytes(b"\0" * 90)
    with pytest.raises(meshes.MeshError, match=r"link 'x': '.*short\.stl' is neither a binary STL"):
        meshes.read_mesh(str(short), "link 'x'")
    nan = tmp_path / "nan.obj"
    nan.write_text("v 0 0 0\nv 1 0 nan\nv 0 1 0\nf 1 2 3\n")
    with pytest.raises(meshes.MeshError, match=r"nan\.obj' holds coordinates that are not finite"):
        meshes.read_mesh(str(nan))
    ply = tmp_path / "m.ply"
    ply.write_text("ply\n")
    with pytest.raises(meshes.MeshError, match=r"m\.ply' is not a mesh file jaxdyn reads"):
        meshes.read_mesh(str(ply))
    dae = tmp_path / "m.dae"
    dae.write_text(
        "<COLLADA><library_visual_scenes><visual_scene id='s'><node><instance_geometry url='#nothing'/>"
        "</node></visual_scene></library_visual_scenes><scene><instance_visual_scene url='#s'/></scene></COLLADA>"
    )
    with pytest.raises(meshes.MeshError, match=r"instance_geometry url='#nothing'> names nothing"):
        meshes.read_mesh(str(dae))


def _outside(a, b):
    """How far the points ``a`` reach outside the convex hull of ``b``."""
    E = ConvexHull(b).equations
    return float((a @ E[:, :3].T + E[:, 3]).max(1).max())


def test_urdf_mesh_collisions_match_pinocchio():
    """Pinocchio (through coal and assimp) and jaxdyn load the same four files (binary STL, OBJ,
    two COLLADA) with scales, a mirror, origins and a link merged through a fixed joint: every
    mesh's convex hull, in its body's frame, is the same solid (STL exactly, COLLADA to
    assimp's single-precision transforms)."""
    ref = np.load(os.path.join(DATA, "pinocchio_meshes.npz"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = jaxdyn.load_urdf(ROBOT, floating_base=True, dtype=np.float64)
    g = model.geoms
    mesh_ids = [i for i, t in enumerate(g.type) if t == geometry.MESH]
    assert len(mesh_ids) == len(ref["names"]) == 5
    assert [t for t in g.type if t != geometry.MESH] == [geometry.BOX]
    vert, vgeom = np.asarray(g.vertices), np.asarray(g.vertex_geom)
    for k, name in enumerate(ref["names"]):
        link = str(name).rsplit("_", 1)[0]
        (i,) = [i for i in mesh_ids if g.names[i] == link]
        body = model.body_names.index(model.body_names[g.body[i]])
        assert model.joint_names[body] == str(ref["joint"][k])
        mine = vert[vgeom == i] @ np.asarray(g.R[i]).T + np.asarray(g.pos[i])
        P = ref["placement"][k]
        hull = ref["hull"][ref["hull_start"][k] : ref["hull_start"][k + 1]]
        theirs = hull @ P[:3, :3].T + P[:3, 3]
        tol = 1e-12 if link in ("leg_stl", "foot_obj") else 1e-6
        assert _outside(mine, theirs) < tol and _outside(theirs, mine) < tol, link
        if link == "leg_stl":  # the same float32 numbers: the same vertices
            _same_points(mine, theirs, atol=1e-12)


def test_package_paths_resolve_through_the_places_searched(tmp_path, monkeypatch):
    with open(ROBOT) as fh:
        text = fh.read().replace('filename="meshes/', 'filename="package://mesh_robot/meshes/')
    # text has no directory: package_dirs, or ROS_PACKAGE_PATH
    with pytest.warns(UserWarning, match=r"package 'mesh_robot' searched in .*pass package_dirs"):
        bare = jaxdyn.load_urdf(text, floating_base=True)
    assert geometry.MESH not in bare.geoms.type
    found = jaxdyn.load_urdf(text, floating_base=True, package_dirs=[DATA])
    assert found.geoms.type.count(geometry.MESH) == 5
    pkg = os.path.join(DATA, "mesh_robot")
    assert jaxdyn.load_urdf(text, floating_base=True, package_dirs=pkg).geoms.type.count(geometry.MESH) == 5
    monkeypatch.setenv("ROS_PACKAGE_PATH", os.pathsep.join([str(tmp_path), DATA]))
    env = jaxdyn.load_urdf(text, floating_base=True)
    np.testing.assert_array_equal(env.geoms.vertices, found.geoms.vertices)


def _box_urdf(collision, name="box"):
    return f"""<robot name="{name}"><link name="body">
      <inertial><mass value="2"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial>
      <collision><origin xyz="0.01 0 0.02" rpy="0.2 0 0"/><geometry>{collision}</geometry></collision>
    </link></robot>"""


def test_missing_and_unreadable_meshes_warn_and_keep_the_rest(tmp_path):
    (tmp_path / "bad.obj").write_text("v 0 0 0\nf 1 2 3\n")
    text = f"""<robot name="r">
      <link name="base"><inertial><mass value="1"/><inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial>
        <collision><geometry><box size="0.1 0.1 0.1"/></geometry></collision>
        <collision><geometry><mesh filename="{tmp_path}/gone.stl"/></geometry></collision></link>
      <link name="arm"><inertial><mass value="1"/><inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial>
        <collision><geometry><mesh filename="file://{tmp_path}/bad.obj"/></geometry></collision></link>
      <joint name="j" type="revolute"><parent link="base"/><child link="arm"/><axis xyz="0 0 1"/>
        <limit lower="-1" upper="1" effort="1" velocity="1"/></joint></robot>"""
    with pytest.warns(UserWarning) as record:
        model = jaxdyn.load_urdf(text)
    (w,) = [r for r in record if "mesh" in str(r.message)]
    msg = str(w.message)
    assert "link 'base' <collision> 2" in msg and "gone.stl' not found" in msg
    assert "link 'arm' <collision> 1" in msg and "bad.obj' line 2: malformed OBJ" in msg
    assert model.geoms.type == (geometry.BOX,) and model.nv == 1
    with pytest.warns(UserWarning, match=r"collision_meshes=False\): base, arm"):
        jaxdyn.load_urdf(text, collision_meshes=False)
    with pytest.raises(
        jaxdyn.URDFError, match=r"link 'body' <collision> 1: <mesh> scale must be three finite non-zero"
    ):
        jaxdyn.load_urdf(_box_urdf(f'<mesh filename="{tmp_path}/bad.obj" scale="1 0 1"/>'), floating_base=True)


def test_a_mesh_geom_touches_the_ground_as_the_box_it_is(tmp_path):
    """A box written as a mesh (binary STL of the box centred at its origin, scaled by 2) and
    the same box as a ``<box>``: the same contact forces at penetrating, sliding, tilted poses."""
    unit = CORNERS - CENTRE
    _write_stl_binary(str(tmp_path / "box.stl"), _triangles(unit))
    size = " ".join(map(str, 4 * HALF))
    as_box = jaxdyn.load_urdf(_box_urdf(f'<box size="{size}"/>'), floating_base=True, dtype=np.float64)
    as_mesh = jaxdyn.load_urdf(
        _box_urdf(f'<mesh filename="{tmp_path}/box.stl" scale="2 2 2"/>'), floating_base=True, dtype=np.float64
    )
    assert as_mesh.geoms.type == (geometry.MESH,) and len(as_mesh.geoms.vertices) == 8
    forces = jax.jit(contact.generalized_forces)
    rng = np.random.default_rng(0)
    for _ in range(4):
        quat = rng.normal(size=4)
        quat /= np.linalg.norm(quat)
        q = np.concatenate([[0.0, 0.0, 0.2], quat])
        qd = 0.01 * rng.normal(size=6)  # slow: Hunt-Crossley damping leaves a push (c_d v_n < 1)
        f_box, f_mesh = forces(as_box, q, qd), forces(as_mesh, q, qd)
        assert np.abs(f_box).max() > 1.0  # some corners are in the ground
        np.testing.assert_allclose(f_mesh, f_box, rtol=1e-12, atol=1e-9)


def test_a_large_mesh_touches_the_ground_with_its_deepest_vertices():
    """A hull of more than ``MESH_GROUND_POINTS`` vertices (a 12-sided prism, 24 vertices)
    touches the ground with its 8 deepest, found anew at every pose: while at most 8 vertices
    are in the ground, the same contacts in the ground (points, depths, velocities: so the same
    forces) as the prism split into three 8-vertex mesh geoms, all of whose vertices are contact
    points (the derivatives through the selection: test_mesh_pair_derivatives_are_finite)."""
    import equinox as eqx

    from jaxdyn.spatial import quat_to_rotation

    assert contact.MESH_GROUND_POINTS == 8
    ang = np.arange(12) * np.pi / 6
    ring = np.stack([0.1 * np.cos(ang), 0.1 * np.sin(ang), np.zeros(12)], 1)
    prism = np.vstack([ring + [0, 0, -0.05], ring + [0, 0, 0.05]])
    body = jaxdyn.load_urdf(_box_urdf('<box size="0.1 0.1 0.1"/>'), floating_base=True, dtype=np.float64)
    one = geometry.make_geoms(
        type=[geometry.MESH], size=np.zeros((1, 3)), body=[0], vertices=prism, vertex_geom=[0] * 24, dtype=np.float64
    )
    three = geometry.make_geoms(
        type=[geometry.MESH] * 3, size=np.zeros((3, 3)), body=[0] * 3, vertices=prism,
        vertex_geom=np.repeat([0, 1, 2], 8), dtype=np.float64,
    )  # fmt: skip
    m1 = eqx.tree_at(lambda m: m.geoms, body, one)
    m3 = eqx.tree_at(lambda m: m.geoms, body, three)
    points = jax.jit(contact.contact_points)
    compared = 0
    for tilt in (0.0, 0.3, 1.2):  # flat (12 vertices equally deep: 8 kept), tilted onto an edge, on its side
        quat = np.array([np.cos(tilt / 2), np.sin(tilt / 2), 0.0, 0.0])
        x = prism @ np.asarray(quat_to_rotation(quat)).T
        q = np.concatenate([[0.01, -0.02, -x[:, 2].min() - 0.001], quat])  # the deepest vertex 1 mm in
        pts = points(m1, q, np.zeros(6))
        assert len(pts.depth) == 8
        heights = np.sort(x[:, 2] + q[2])
        np.testing.assert_allclose(np.sort(np.asarray(pts.centre[:, 2])), heights[:8], rtol=0, atol=1e-15)
        if (heights < 0).sum() <= 8:
            qd = np.array([0.0, 0.1, 0.0, 0.01, 0.2, 0.0])
            p1, p3 = points(m1, q, qd), points(m3, q, qd)
            touching = []
            for p in (p1, p3):
                d = np.asarray(p.depth)
                k = np.flatnonzero(d > 0)
                k = k[np.argsort(d[k])]
                touching.append(np.hstack([d[k, None], np.asarray(p.point)[k], np.asarray(p.velocity)[k]]))
            assert len(touching[0]) == (heights < 0).sum() > 0
            np.testing.assert_allclose(touching[0], touching[1], rtol=0, atol=1e-15)
            compared += 1
    assert compared == 2


def _mesh_pair_reference(kind, dtype):
    """MuJoCo's mesh_pairs.npz for one primitive kind, as the arrays the collision functions take."""
    from jaxdyn.spatial import quat_to_rotation

    r = np.load(os.path.join(DATA, "mujoco", "contact", "mesh_pairs.npz"))
    V = r["mesh_vertices"]
    gm = geometry.make_geoms(
        type=[geometry.MESH], size=np.zeros((1, 3)), body=[0], vertices=V, vertex_geom=[0] * len(V)
    )
    faces, edges = np.asarray(gm.faces, np.float64), np.asarray(gm.edges, np.float64)
    mp, mM = r[f"{kind}_mesh_pos"], r[f"{kind}_mesh_mat"]
    a = lambda x: jnp.asarray(x, dtype)  # noqa: E731
    T = a(mp[:, None, None] + np.einsum("pij,fkj->pfki", mM, faces))
    Vw = a(mp[:, None] + np.einsum("pij,vj->pvi", mM, V))
    E = a(mp[:, None, None] + np.einsum("pij,ekj->peki", mM, edges))
    P = len(mp)
    R = jax.vmap(quat_to_rotation)(a(r[f"{kind}_quat"]))
    S = jnp.broadcast_to(a(r[f"{kind}_size"]), (P, 3))
    return r[f"{kind}_dist"], T, Vw, E, R, S


@pytest.mark.parametrize("dtype, tol", [(jnp.float64, 1e-14), (jnp.float32, 1e-6)])
@pytest.mark.parametrize("kind", ["sphere", "capsule", "cylinder", "box", "ellipsoid"])
def test_mesh_pairs_match_mujoco(kind, dtype, tol):
    """A primitive against a mesh (the convex hull of 30 points on an ellipsoid, 56 triangles),
    60 poses each, against MuJoCo's mj_geomDistance (GJK / EPA at 1e-12): the pair's signed
    distance equals MuJoCo's where the shapes are apart (the cylinder's rim search and the
    ellipsoid's edge search are golden-section searches: 1e-11), and where they overlap it is
    negative and never deeper than EPA's minimum translation (a sphere's equal to it); in float32
    to 1e-6 m."""
    from jaxdyn import collision as K

    ref, T, V, E, R, S = _mesh_pair_reference(kind, dtype)
    c = jnp.zeros((len(ref), 3), dtype)
    valid, e_valid = jnp.ones(V.shape[:2], bool), jnp.ones(E.shape[:2], bool)
    if kind == "sphere":
        d = jax.jit(K.sphere_hull)(c[:, None], S[:, :1], T)[0][:, 0]
    elif kind == "capsule":
        p, dd = K.segment_of(R, c, S)
        d = jax.jit(K.segment_hull_contacts)(p, dd, S[:, 0], T)[3]
    elif kind == "cylinder":
        d = jax.jit(K.cylinder_hull_contacts)(c, R, S, T, V, valid, E, e_valid)[3]
    elif kind == "ellipsoid":
        dist, normal, _, d = jax.jit(K.ellipsoid_hull_contacts)(c, R, S, T, V, valid, E, e_valid)
        assert dist.shape == (len(ref), 17)
        np.testing.assert_allclose(np.linalg.norm(np.asarray(normal, np.float64), axis=-1), 1.0, atol=10 * tol)
    else:
        d = jax.jit(K.box_hull_contacts)(c, R, S, T, V, valid)[3]
    d = np.asarray(d)
    apart = ref > 0
    assert apart.sum() >= 40 and (~apart).sum() >= 8
    assert d.dtype == dtype
    atol = max(tol, 1e-11) if kind in ("cylinder", "ellipsoid") else tol
    np.testing.assert_allclose(d[apart], ref[apart], rtol=0, atol=atol)
    assert np.all(d[~apart] < 0) and np.all(d[~apart] >= ref[~apart] - max(tol, 1e-12))
    if kind == "sphere":
        np.testing.assert_allclose(d[~apart], ref[~apart], rtol=0, atol=tol)


def test_ellipsoid_against_a_fine_hull_searches_candidates():
    """An ellipsoid against a hull of 300 points on an ellipsoid (596 faces, 894 edges: more than
    ``ELLIPSOID_CANDIDATES``), at 60 poses: the pair's distance equals the search over every
    face's support point, every vertex and every edge (``benchmarks/ellipsoid_mesh_cost.py``'s
    ``every_feature``, built from the same exact pieces) where the shapes are apart (to 1e-9 m:
    on this hull the ranking finds every nearest edge; 16 candidates miss one by 7e-6 m) and is
    never deeper; where they overlap it is negative and never deeper either."""
    from jaxdyn import collision as K
    from jaxdyn.spatial import quat_to_rotation

    rng = np.random.default_rng(3)
    pts = rng.normal(size=(300, 3))
    V = 0.1 * pts / np.linalg.norm(pts, axis=1, keepdims=True) * np.array([1.0, 0.7, 0.5])
    gm = geometry.make_geoms(type=[geometry.MESH], size=np.zeros((1, 3)), body=[0], vertices=V, vertex_geom=[0] * 300)
    P = 60
    T = jnp.broadcast_to(jnp.asarray(gm.faces, jnp.float64), (P,) + gm.faces.shape)
    E = jnp.broadcast_to(jnp.asarray(gm.edges, jnp.float64), (P,) + gm.edges.shape)
    Vw = jnp.broadcast_to(jnp.asarray(V), (P, 300, 3))
    assert T.shape[1] > K.ELLIPSOID_CANDIDATES and E.shape[1] > K.ELLIPSOID_CANDIDATES
    dirs = rng.normal(size=(P, 3))
    c = jnp.asarray(dirs / np.linalg.norm(dirs, axis=1, keepdims=True) * rng.uniform(0.08, 0.2, (P, 1)))
    quat = rng.normal(size=(P, 4))
    R = jax.vmap(quat_to_rotation)(jnp.asarray(quat / np.linalg.norm(quat, axis=1, keepdims=True)))
    a = jnp.asarray(rng.uniform(0.01, 0.06, (P, 3)))
    valid, e_valid = jnp.ones(Vw.shape[:2], bool), jnp.ones(E.shape[:2], bool)
    d = np.asarray(jax.jit(K.ellipsoid_hull_contacts)(c, R, a, T, Vw, valid, E, e_valid)[3])

    import importlib.util

    here = os.path.dirname(__file__)
    spec = importlib.util.spec_from_file_location(
        "cost", os.path.join(here, "..", "benchmarks", "ellipsoid_mesh_cost.py")
    )
    cost = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cost)
    exhaustive = jax.jit(cost.every_feature)  # the benchmark's search over every face, vertex and edge
    ref = np.concatenate(
        [np.asarray(exhaustive(*(z[i : i + 10] for z in (c, R, a, T, Vw, E)))) for i in range(0, P, 10)]
    )
    apart = ref > 0
    assert apart.sum() >= 20 and (~apart).sum() >= 10
    assert np.all(d >= ref - 1e-12)
    np.testing.assert_allclose(d[apart], ref[apart], rtol=0, atol=1e-9)
    assert np.all(d[~apart] < 0)


def test_primitives_meet_a_mesh_cube_as_the_box_it_is():
    """A mesh cube (its 8 corners) and the box geom of the same size, each against a sphere, a
    capsule, a cylinder and a box on the world, at 40 random poses: the pairs' signed distances
    are equal where the shapes are apart (both exact), and both negative where they overlap;
    every mesh pair is collided (no warning)."""
    import equinox as eqx

    body = jaxdyn.load_urdf(_box_urdf('<box size="0.1 0.1 0.1"/>'), floating_base=True, dtype=np.float64)
    h = np.array([0.1, 0.15, 0.2])
    cube = h * np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)])
    prims = [(geometry.SPHERE, [0.08, 0, 0]), (geometry.CAPSULE, [0.05, 0.1, 0])]
    prims += [(geometry.CYLINDER, [0.07, 0.09, 0]), (geometry.BOX, [0.06, 0.09, 0.12])]
    pos = [[0, 0, 0], [0.5, 0, 0], [-0.5, 0, 0], [0, 0.5, 0], [0, -0.5, 0]]

    def model(mesh):
        g = geometry.make_geoms(
            type=[geometry.MESH if mesh else geometry.BOX] + [t for t, _ in prims],
            size=[np.zeros(3) if mesh else h] + [s for _, s in prims],
            body=[0, -1, -1, -1, -1],
            pos=pos,
            vertices=cube if mesh else None,
            vertex_geom=[0] * 8 if mesh else (),
            dtype=np.float64,
        )
        return eqx.tree_at(lambda m: m.geoms, body, g)

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mesh, box = model(True), model(False)
        pm, pb = contact.collision_pairs(mesh), contact.collision_pairs(box)
    assert pm.rows == (1, 3, 28, 28) and [a for a, _ in pm.pairs] == [1, 2, 3, 4]
    other = [a if b == 0 else b for a, b in pb.pairs]  # the box model's pairs by their primitive
    dist = jax.jit(jax.vmap(lambda m, q: contact.pair_distances(m, q), in_axes=(None, 0)))
    rng = np.random.default_rng(1)
    quat = rng.normal(size=(40, 4))
    q = np.hstack([rng.uniform(-0.35, 0.35, (40, 3)), quat / np.linalg.norm(quat, axis=1, keepdims=True)])
    dm, db = np.asarray(dist(mesh, q)), np.asarray(dist(box, q))[:, np.argsort(other)]
    apart = db > 1e-9
    assert apart.sum() > 100 and (~apart).sum() > 10
    np.testing.assert_allclose(dm[apart], db[apart], rtol=0, atol=1e-13)
    assert np.all(dm[~apart] < 1e-12)


def _mesh_and_world(prims, vertices, dtype=np.float64):
    """A free body carrying one mesh geom (``vertices``, its hull) and the primitives
    ``[(type, size, pos)]`` on the world."""
    import equinox as eqx

    body = jaxdyn.load_urdf(_box_urdf('<box size="0.1 0.1 0.1"/>'), floating_base=True, dtype=dtype)
    g = geometry.make_geoms(
        type=[geometry.MESH] + [t for t, _, _ in prims],
        size=[np.zeros(3)] + [s for _, s, _ in prims],
        body=[0] + [-1] * len(prims),
        pos=[np.zeros(3)] + [p for _, _, p in prims],
        vertices=vertices,
        vertex_geom=[0] * len(vertices),
        dtype=dtype,
    )
    return eqx.tree_at(lambda m: m.geoms, body, g)


def _prism_on_a_box():
    """A free 12-sided prism (24 vertices) whose vertex (0.1, 0, -0.05) is on the centre of a
    sphere on the world and whose bottom face lies on the top face of a box on the world."""
    ang = np.arange(12) * np.pi / 6
    ring = np.stack([0.1 * np.cos(ang), 0.1 * np.sin(ang), np.zeros(12)], 1)
    prism = np.vstack([ring + [0, 0, -0.05], ring + [0, 0, 0.05]])
    model = _mesh_and_world(
        [(geometry.SPHERE, [0.05, 0, 0], [0.15, 0, -0.05]), (geometry.BOX, [0.2, 0.2, 0.05], [0, 0, -0.1])], prism
    )
    return model, np.array([0.05, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0])


def test_mesh_pairs_in_the_contact_model():
    """A sphere and a box on the world against a free mesh (a 12-sided prism, 24 vertices), the
    sphere's centre on a vertex of the hull and the hull's bottom face on the box's top face:
    pair_contacts has the pairs' rows (1 and 28), normals from the primitive to the mesh, and
    distances equal to the collision functions'."""
    from jaxdyn import collision as K

    model, q = _prism_on_a_box()
    table = contact.collision_pairs(model)
    assert table.pairs == ((1, 0), (2, 0)) and table.rows == (1, 28)
    pc = jax.jit(contact.pair_contacts)(model, q, np.zeros(6))
    T = model.geoms.faces[None] + q[:3]  # the hull's triangles in the world (the body is not turned)
    d_sphere = K.sphere_hull(jnp.array([[[0.15, 0, -0.05]]]), jnp.array([[0.05]]), T)[0][0, 0]
    assert float(pc.distance[0]) == pytest.approx(-0.05, abs=1e-15) and float(d_sphere) == float(pc.distance[0])
    assert np.all(np.asarray(pc.distance[1:21]) > 0.04)  # the box's corners and edges: far from the hull
    np.testing.assert_allclose(pc.distance[21:], 0.0, atol=1e-15)  # 8 of the hull's 12 bottom vertices
    # from the box up into the mesh
    np.testing.assert_allclose(pc.normal[21:], np.tile([0.0, 0.0, 1.0], (8, 1)), atol=1e-12)
    n_sphere = np.asarray(pc.normal[0])  # from the sphere into the hull at its vertex: a unit vector
    assert abs(np.linalg.norm(n_sphere) - 1) < 1e-12


def test_mesh_pair_derivatives_are_finite():
    """The contact wrenches of the sphere and box against the prism have finite derivatives at
    the ties of :func:`_prism_on_a_box` (the sphere's centre on a hull vertex, many nearest
    faces; the hull's face on the box's face, 12 equally deep vertices) and 2 mm deeper; so do
    the prism's ground forces, flat on the ground (12 equally deep vertices, 8 chosen) and
    tilted."""
    model, q = _prism_on_a_box()
    push = jax.jit(jax.grad(lambda q: contact.generalized_forces(model, q, jnp.zeros(6), collide_pairs=False)[2]))
    for tilt in (0.0, 0.3):
        quat = np.array([np.cos(tilt / 2), np.sin(tilt / 2), 0.0, 0.0])
        grad = push(np.concatenate([[0.0, 0.0, 0.049 - 0.05 * tilt], quat]))
        assert np.all(np.isfinite(np.asarray(grad))) and np.abs(np.asarray(grad)).max() > 0
    f = jax.jit(jax.grad(lambda q: jnp.sum(contact.contact_wrenches(model, q, jnp.zeros(6), collide_ground=False))))
    for dz in (0.0, -0.002):  # touching, then 2 mm into the box
        grad = f(q + np.array([0, 0, dz, 0, 0, 0, 0]))
        assert np.all(np.isfinite(np.asarray(grad)))


def test_a_mesh_rests_on_a_box():
    """A mesh cuboid (its 8 corners, 0.2 x 0.3 x 0.1 m, on the test body of 2 kg) dropped flat
    and dropped tilted onto a box on the world comes to rest on its 4 bottom vertices, each at
    the Hunt-Crossley depth (m g / 4 k)^(1/p), carrying its weight, still, its energy never
    above the start: box-mesh contact through the hull's vertices deepest in the box."""
    from jaxdyn import sim

    h = np.array([0.1, 0.15, 0.05])
    cuboid = h * np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)])
    m = _mesh_and_world([(geometry.BOX, [0.4, 0.4, 0.05], [0, 0, -0.05])], cuboid)
    # the regularisation this rest was measured with (the former default; docs/contact.md,
    # "Friction that holds")
    ct = contact.Contact(contact.Ground(), contact.ContactParams(friction_velocity=0.02), collide_ground=False)
    mass, k, p, g = 2.0, 1e6, 1.5, 9.81
    tilt = [np.cos(0.15), np.sin(0.15) * 0.6, np.sin(0.15) * 0.8, 0.0]
    q0 = jnp.array([[0.0, 0.0, 0.05 + 1e-3, 1.0, 0.0, 0.0, 0.0], [0.02, -0.01, 0.12, *tilt]])

    @jax.jit
    @jax.vmap
    def settle(q0):
        tr = sim.rollout(m, q0, jnp.zeros(6), jnp.zeros((2000, 6)), 1e-3, contact=ct)
        energy = jax.vmap(lambda q, v: jaxdyn.kinetic_energy(m, q, v) + jaxdyn.potential_energy(m, q))(tr.q, tr.qd)
        pc = contact.pair_contacts(m, tr.q[-1], tr.qd[-1])
        return (
            tr.q[-1],
            tr.qd[-1],
            contact.total_force(m, tr.q[-1], tr.qd[-1], ct),
            pc.distance,
            energy,
            tr.nonfinite_step,
        )

    q, qd, f, dist, energy, bad = (np.asarray(x) for x in settle(q0))
    assert np.all(bad == -1)
    assert np.all(energy <= energy[:, :1] * (1 + 1e-12))
    depth = (mass * g / (4 * k)) ** (1 / p)
    for s in range(2):
        np.testing.assert_allclose(h[2] - q[s, 2], depth, rtol=1e-5)
        np.testing.assert_allclose(f[s], [0.0, 0.0, mass * g], rtol=1e-6, atol=1e-3)  # 2e-4 N sideways: creep
        touching = np.sort(dist[s])[:5]
        np.testing.assert_allclose(touching[:4], -depth, rtol=2e-4)  # the tilted drop: 1e-7 rad left
        assert touching[4] >= -1e-10
    assert np.abs(qd).max() < 1e-4, np.abs(qd).max()


def test_mjcf_reads_collision_meshes_only(tmp_path):
    """An MJCF mesh geom that never collides (contype and conaffinity 0: a visual geom) is not
    read, so a visual mesh jaxdyn cannot read costs nothing and warns of nothing; the colliding
    one (an OBJ file) becomes its convex hull."""
    _write_obj(str(tmp_path / "box.obj"))
    (tmp_path / "pretty.ply").write_text("ply\n")
    xml = f"""<mujoco><compiler meshdir="{tmp_path}"/><asset><mesh name="box" file="box.obj"/>
    <mesh name="pretty" file="pretty.ply"/></asset><worldbody><body><freejoint/>
    <inertial pos="0 0 0" mass="1" diaginertia="0.01 0.01 0.01"/><geom type="mesh" mesh="box"/>
    <geom type="mesh" mesh="pretty" contype="0" conaffinity="0"/></body></worldbody></mujoco>"""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m = jaxdyn.load_mjcf(xml, dtype=np.float64)
    assert m.geoms.type == (geometry.MESH, geometry.MESH) and set(m.geoms.vertex_geom) == {0}
    _same_points(np.asarray(m.geoms.vertices), CORNERS, atol=1e-15)  # in the frame of the file


def _hull_at(V, pos, mat, dtype):
    """The hull of the points ``V`` (geom frame) at the world poses ``pos``, ``mat``: triangles
    ``(P, F, 3, 3)``, vertices ``(P, V, 3)`` and edges ``(P, M, 2, 3)``."""
    gm = geometry.make_geoms(
        type=[geometry.MESH], size=np.zeros((1, 3)), body=[0], vertices=V, vertex_geom=[0] * len(V)
    )
    faces, edges = np.asarray(gm.faces, np.float64), np.asarray(gm.edges, np.float64)
    T = pos[:, None, None] + np.einsum("pij,fkj->pfki", mat, faces)
    W = pos[:, None] + np.einsum("pij,vj->pvi", mat, V)
    E = pos[:, None, None] + np.einsum("pij,ekj->peki", mat, edges)
    return jnp.asarray(T, dtype), jnp.asarray(W, dtype), jnp.asarray(E, dtype)


@pytest.mark.parametrize("dtype, tol", [(jnp.float64, 1e-12), (jnp.float32, 1e-6)])
def test_mesh_mesh_matches_mujoco(dtype, tol):
    """Two meshes (hulls of 30 and 16 points on ellipsoids) at 100 poses against MuJoCo's
    mj_geomDistance (GJK / EPA at 1e-12; tests/reference/generate_mujoco_mesh_mesh.py). The
    pair's distance is the smallest exact distance of the 8 + 8 vertices deepest in the other
    hull and of the first hull's 8 edges reaching deepest into the second: apart, never nearer
    than MuJoCo's, equal to it wherever a vertex is among the closest points (the smallest
    distance of every vertex, found here by brute force, equals MuJoCo's), and where two edges
    are, never farther than every vertex and at 10 or more poses nearer (an edge's point
    deepest through the face planes);
    overlapping (a vertex inside the other hull at each), negative and never deeper than EPA's
    minimum translation. Unit normals; float32 to 1e-6 m."""
    from jaxdyn import collision as K

    r = np.load(os.path.join(DATA, "mujoco", "contact", "mesh_mesh.npz"))
    hulls = lambda dt: (  # noqa: E731
        *_hull_at(r["rock_vertices"], r["rock_pos"], r["rock_mat"], dt),
        *_hull_at(r["pebble_vertices"], r["pebble_pos"], r["pebble_mat"], dt),
    )
    T1, V1, E1, T2, V2, _ = hulls(dtype)
    ones = lambda V: jnp.ones(V.shape[:2], bool)  # noqa: E731
    contacts = jax.jit(K.hull_hull_contacts)
    dist, normal, _, d = (np.asarray(x) for x in contacts(T1, V1, ones(V1), T2, V2, ones(V2), E1, ones(E1)))
    assert dist.shape == (100, 24) and d.dtype == dtype
    T1, V1, _, T2, V2, _ = hulls(jnp.float64)  # every vertex against the other hull, in float64
    every = np.minimum(
        np.asarray(jax.jit(K.hull_distance)(V1, T2)[0]).min(1), np.asarray(jax.jit(K.hull_distance)(V2, T1)[0]).min(1)
    )
    ref = r["dist"]
    apart = ref > 0
    at_vertex = apart & (np.abs(every - ref) < 1e-9)
    assert at_vertex.sum() >= 50 and (apart & ~at_vertex).sum() >= 20  # vertex-face and edge-edge poses
    np.testing.assert_allclose(d[at_vertex], ref[at_vertex], rtol=0, atol=tol)
    assert np.all(d[apart] >= ref[apart] - tol)
    edge = apart & ~at_vertex
    assert np.all(d[edge] <= every[edge] + tol) and np.sum(d[edge] < every[edge] - 1e-5) >= 10  # edges help
    inside = ~apart & (every < 0)
    assert inside.sum() == (~apart).sum() == 25  # at each overlapping pose a vertex is inside
    assert np.all(d[inside] < 0) and np.all(d[inside] >= ref[inside] - max(tol, 1e-12))
    np.testing.assert_allclose(np.linalg.norm(normal, axis=-1), 1.0, rtol=0, atol=10 * tol)


def test_mesh_cubes_crossed_edge_through_edge_touch_at_the_crossing():
    """Two mesh cubes (half-size 5 cm), the lower turned 45 degrees about x so that its top edge
    runs along x, the upper turned 45 degrees about y so that its bottom edge runs along y, the
    edges crossing 1 mm deep: no vertex is inside the other cube, and the pair acts through the
    lower cube's top edge at the crossing, its point 1 mm / sqrt(2) deep in the upper cube's
    wedge, along one of the wedge's face normals (the 8 + 8 vertex rows stay apart). 0.5 mm
    apart, the pair's distance is 0.5 mm."""
    from jaxdyn import collision as K

    h = 0.05
    corner = h * np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], float)
    c, s_ = np.cos(np.pi / 4), np.sin(np.pi / 4)
    about_x = np.array([[[1, 0, 0], [0, c, -s_], [0, s_, c]]], float)
    about_y = np.array([[[c, 0, s_], [0, 1, 0], [-s_, 0, c]]], float)
    contacts = jax.jit(K.hull_hull_contacts)
    for gap, want in ((-1e-3, -1e-3 / np.sqrt(2)), (5e-4, 5e-4)):
        T1, V1, E1 = _hull_at(corner, np.zeros((1, 3)), about_x, jnp.float64)
        z2 = 2 * h * np.sqrt(2) + gap  # the centres' height difference: edge tips h sqrt(2) from each centre
        T2, V2, _ = _hull_at(corner, np.array([[0.0, 0.0, z2]]), about_y, jnp.float64)
        ones = lambda V: jnp.ones(V.shape[:2], bool)  # noqa: E731
        dist, normal, w, d = (np.asarray(x)[0] for x in contacts(T1, V1, ones(V1), T2, V2, ones(V2), E1, ones(E1)))
        assert np.all(dist[:16] > 0)  # no vertex inside the other cube
        assert d == pytest.approx(want, abs=1e-12)
        if gap < 0:
            acting = np.flatnonzero(dist < 0)
            assert acting.tolist() and set(acting) <= set(range(16, 24)), acting
            assert dist[acting].min() == pytest.approx(want, abs=1e-12)
            k = acting[np.argmin(dist[acting])]
            # at the crossing: the point of the edge at x = 0, y = 0, 1 mm / sqrt(2) from either face
            # of the upper cube's wedge; the normal that face's, the witness midway to it
            np.testing.assert_allclose(np.abs(normal[k]), [s_, 0.0, c], atol=1e-9)
            np.testing.assert_allclose(np.abs(w[k][:2]), [2.5e-4, 0.0], atol=1e-9)


def test_a_mesh_cube_meets_a_mesh_slab_as_a_box_meets_a_box():
    """A free mesh cube over a mesh slab on the world, at 30 poses (tilted, up to 3 mm into the
    slab's top or up to 2 mm above it): the pair's distance equals that of the box geoms of the
    same sizes (the box-box pair's, exact for a corner over a face), and the contact force on the
    cube (every point's) is the box's, its 4 or fewer corners in the slab."""
    import equinox as eqx

    body = jaxdyn.load_urdf(_box_urdf('<box size="0.1 0.1 0.1"/>'), floating_base=True, dtype=np.float64)
    corner = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], float)
    h, slab = np.array([0.05, 0.07, 0.04]), np.array([0.4, 0.4, 0.05])

    def model(mesh):
        g = geometry.make_geoms(
            type=[geometry.MESH] * 2 if mesh else [geometry.BOX] * 2,
            size=[np.zeros(3), np.zeros(3)] if mesh else [h, slab],
            body=[0, -1],
            pos=[np.zeros(3), [0.0, 0.0, -0.05]],
            vertices=np.concatenate([corner * h, corner * slab]) if mesh else None,
            vertex_geom=[0] * 8 + [1] * 8 if mesh else (),
            dtype=np.float64,
        )
        return eqx.tree_at(lambda m: m.geoms, body, g)

    rng = np.random.default_rng(4)
    axis = rng.normal(size=(30, 3)) * [1, 1, 0]
    angle = rng.uniform(0, 0.3, 30)
    quat = np.hstack(
        [np.cos(angle / 2)[:, None], np.sin(angle / 2)[:, None] * axis / np.linalg.norm(axis, axis=1)[:, None]]
    )
    R = jax.vmap(jaxdyn.spatial.quat_to_rotation)(jnp.asarray(quat))
    lowest = np.min(np.einsum("pij,cj->pci", np.asarray(R), corner * h)[..., 2], 1)  # the lowest corner's z
    gap = rng.uniform(-0.003, 0.002, 30)
    q = np.hstack([np.zeros((30, 2)), (gap - lowest)[:, None], quat])
    ct = contact.Contact(collide_ground=False)

    def run(m):
        return jax.jit(
            jax.vmap(lambda q: (contact.pair_distances(m, q), contact.total_force(m, q, jnp.zeros(m.nv), ct)))
        )(jnp.asarray(q))

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (dm, fm), (db, fb) = run(model(True)), run(model(False))
    assert contact.collision_pairs(model(True)).rows == (24,)
    np.testing.assert_allclose(dm[:, 0], gap, rtol=0, atol=1e-12)
    np.testing.assert_allclose(dm, db, rtol=0, atol=1e-12)
    assert (gap < 0).sum() >= 10 and np.all(np.asarray(fm)[gap < 0, 2] > 0)
    np.testing.assert_allclose(fm, fb, rtol=1e-9, atol=1e-9)


def test_a_hull_of_fewer_than_8_vertices_keeps_its_rows():
    """A tetrahedron (4 vertices, 6 edges) against a box, a cylinder and another tetrahedron on
    the world: each pair has its kind's number of contacts (the missing vertices and edges are
    rows with no contact), and the tetrahedron's vertex pushed 2 mm into each shape is a
    contact 2 mm deep."""
    tet = np.array([[0.0, 0.0, -0.1], [0.08, 0.0, 0.0], [-0.04, 0.07, 0.0], [-0.04, -0.07, 0.0]])
    prims = [
        (geometry.BOX, [0.2, 0.2, 0.05], [0.0, 0.0, -0.15]),
        (geometry.CYLINDER, [0.2, 0.05, 0], [1.0, 0.0, -0.15]),
        (geometry.MESH, [0, 0, 0], [2.0, 0.0, 0.0]),
    ]
    import equinox as eqx

    body = jaxdyn.load_urdf(_box_urdf('<box size="0.1 0.1 0.1"/>'), floating_base=True, dtype=np.float64)
    g = geometry.make_geoms(
        type=[geometry.MESH] + [t for t, _, _ in prims],
        size=[np.zeros(3)] + [s for _, s, _ in prims],
        body=[0, -1, -1, -1],
        pos=[np.zeros(3)] + [p for _, _, p in prims],
        vertices=np.concatenate([tet, tet]),  # the world's tetrahedron: its top face at z = 0
        vertex_geom=[0] * 4 + [3] * 4,
        dtype=np.float64,
    )
    m = eqx.tree_at(lambda m: m.geoms, body, g)
    table = contact.collision_pairs(m)
    assert table.rows == (28, 28, 24)  # cylinder-mesh, box-mesh, mesh-mesh
    base = {1: [0.0, 0.0, -0.002], 2: [1.0, 0.0, -0.002], 3: [2.0, 0.0, 0.1 - 0.002]}  # by the world's geom
    qs = jnp.asarray([np.concatenate([base[a if b == 0 else b], [1.0, 0, 0, 0]]) for a, b in table.pairs])
    pcs = jax.jit(jax.vmap(lambda q: contact.pair_contacts(m, q, jnp.zeros(m.nv))))(qs)
    assert pcs.distance.shape == (len(qs), sum(table.rows))
    for k in range(len(qs)):
        pc = jax.tree_util.tree_map(lambda x: x[k], pcs)  # noqa: B023
        rows = np.asarray(table.row_pair) == k
        d = np.asarray(pc.distance)[rows]
        np.testing.assert_allclose(d.min(), -0.002, rtol=0, atol=1e-12)
        assert np.all(np.isfinite(np.asarray(pc.normal))) and np.sum(d > 100) >= 4  # the missing rows
