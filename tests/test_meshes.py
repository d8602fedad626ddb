"""Mesh files in robot descriptions: the readers (STL, OBJ, COLLADA) against solids written for
the test, URDF mesh collisions against Pinocchio's, and a mesh geom's ground contact against the
box it is."""

import os
import struct
import warnings

import jax
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
        from jaxdyn.io.mjcf_inertia import mesh_volume_inertia

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
    touches the ground with its 8 deepest, found anew at every pose: the same forces as the
    prism split into three 8-vertex mesh geoms (all of whose vertices are contact points) while
    at most 8 vertices are in the ground, and finite derivatives through the selection."""
    import equinox as eqx
    import jax.numpy as jnp

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
    forces = jax.jit(contact.generalized_forces)
    push = jax.jit(jax.grad(lambda m, q: contact.generalized_forces(m, q, jnp.zeros(6))[2], argnums=1))
    compared = 0
    for tilt in (0.0, 0.3, 1.2):  # flat (12 vertices equally deep: 8 kept), tilted onto an edge, on its side
        quat = np.array([np.cos(tilt / 2), np.sin(tilt / 2), 0.0, 0.0])
        x = prism @ np.asarray(quat_to_rotation(quat)).T
        q = np.concatenate([[0.01, -0.02, -x[:, 2].min() - 0.001], quat])  # the deepest vertex 1 mm in
        pts = contact.contact_points(m1, q, np.zeros(6))
        assert len(pts.depth) == 8
        heights = np.sort(x[:, 2] + q[2])
        np.testing.assert_allclose(np.sort(np.asarray(pts.centre[:, 2])), heights[:8], rtol=0, atol=1e-15)
        if (heights < 0).sum() <= 8:
            qd = np.array([0.0, 0.1, 0.0, 0.01, 0.0, 0.0])
            np.testing.assert_allclose(forces(m1, q, qd), forces(m3, q, qd), rtol=1e-12, atol=1e-9)
            compared += 1
        assert np.all(np.isfinite(push(m1, q)))
    assert compared == 2
