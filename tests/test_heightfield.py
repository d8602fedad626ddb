"""Height fields (jaxdyn.contact.HeightField, MJCF ``hfield``): MJCF inline elevation and PNG
files load as MuJoCo loads them; the contacts of every shape on a field against MuJoCo 4.0's
(tests/reference/generate_mujoco_hfield.py); a planar field equals the plane; gradients in
float64, finite on edges and vertices; float32; rest states against MuJoCo (slow); bad input
refused by name."""

import os
import shutil
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.test_util import check_grads

import jaxdyn
from jaxdyn import contact as C
from jaxdyn import sim
from jaxdyn.io.mjcf import MJCFError

DATA = os.path.join(os.path.dirname(__file__), "data", "mujoco", "contact")


@pytest.fixture(scope="module")
def ref():
    return np.load(os.path.join(DATA, "hfield.npz"))


def _load(xml):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return jaxdyn.load_mjcf(xml)


def test_inline_and_png_fields_load_as_in_mujoco(ref, monkeypatch):
    """The 13 x 15 terrain given inline and as an 8-bit PNG: the heights are MuJoCo's
    ``hfield_data`` times the elevation ``size[2]`` (single precision, as MuJoCo keeps them),
    the grid's first row at ``y = -r_y``; the field's pose and half-extents are the geom's and
    the asset's."""
    for key, data in (("terrain_xml", "terrain_data"), ("png_xml", "png_data")):
        monkeypatch.chdir(DATA)  # the PNG file is next to the npz
        model = _load(str(ref[key]))
        hf = C.HeightField.from_model(model)
        np.testing.assert_allclose(np.asarray(hf.heights), ref[data].astype(np.float64) * 0.08, rtol=0, atol=1e-15)
        np.testing.assert_allclose(np.asarray(hf.size), [0.6, 0.7])
        np.testing.assert_allclose(np.asarray(hf.pos), [0.05, -0.03, 0.0])
        assert model.geoms.type[hf.geom] == jaxdyn.geometry.HFIELD


# the deepest contact of each shape on the terrain against MuJoCo's, 24 poses each, MuJoCo's 2 mm
# deep: signed distance [m] and normal [rad] where the two measure the same thing (module
# docstring of jaxdyn.contact.heightfield; docs/contact.md, "Height fields")
STATIC = {"sphere": (1e-7, 1e-5), "capsule": (2.5e-4, 0.03), "cylinder": (1e-3, 1.0), "ellipsoid": (1e-6, 5e-3)}


def _deepest(ref, name):
    model = _load(str(ref[f"{name}_xml"]))
    hf = C.HeightField.from_model(model)
    z = jnp.zeros(6)
    cp = jax.jit(jax.vmap(lambda q: C.contact_points(model, q, z, hf)))(jnp.asarray(ref[f"{name}_qpos"]))
    phi = np.asarray(cp.distance)
    k = np.argmin(phi, 1)
    return phi.min(1), np.asarray(cp.normal)[np.arange(len(k)), k]


@pytest.mark.parametrize("name", list(STATIC))
def test_contacts_match_mujoco(ref, name):
    """The deepest contact, against MuJoCo's (median over the poses below 1e-6 m and 1e-4 rad).
    Spheres (the nearest features of (H3)): depth and normal to 1e-7 m and 1e-5 rad. Capsules:
    the same where an end is deepest; a capsule lying on a bump with its middle, in one pose of
    24, is 0.19 mm shallower (jaxdyn collides its end spheres only). Ellipsoids (the deepest of
    their lowest points along the normals of the triangles they span): 1e-6 m. Cylinders (the
    rims along the normal under the deepest rim point, and the field's vertices and edges
    deepest in them): 1 mm (one pose of 24 is 0.57 mm shallower, the others within 1e-6 m)."""
    tol, angle = STATIC[name]
    phi, n = _deepest(ref, name)
    err = np.abs(phi - ref[f"{name}_dist"])
    assert err.max() < tol and np.median(err) < 1e-6, err
    ang = np.arccos(np.clip(np.sum(n * ref[f"{name}_normal"], 1), -1, 1))
    assert np.median(ang) < 1e-4 and ang.max() < angle, ang


def test_surface_is_mujocos(ref):
    """The surface's height (H1) at 400 points, 80 of them on grid lines, equals MuJoCo's
    (``mj_ray`` straight down onto the field) to 1e-12 m: the same triangulation."""
    hf = C.HeightField.from_model(_load(str(ref["terrain_xml"])))
    xy = ref["ray_xy"] - np.asarray(hf.pos)[:2]
    np.testing.assert_allclose(np.asarray(hf.height(xy[:, 0], xy[:, 1])), ref["ray_z"], rtol=0, atol=1e-12)


@pytest.mark.parametrize("name", ["box", "mesh"])
def test_box_and_mesh_contacts_against_mujoco(ref, name):
    """Boxes and hulls: jaxdyn's deepest contact is never more than 0.75 mm shallower than
    MuJoCo's (the field's edges and vertices in the shape, its corners or vertices in the
    field), and in three poses of 24 or more equal to 1e-7 m. Elsewhere jaxdyn's is deeper:
    MuJoCo collides each cell's prism with the shape on its own and reports a corner 4 mm
    below the surface (by its own ``mj_ray``) as 2 mm deep; jaxdyn measures the distance to
    the surface (docs/contact.md, "Height fields")."""
    phi, n = _deepest(ref, name)
    err = phi - ref[f"{name}_dist"]
    assert err.max() < 7.5e-4, err
    assert np.sum(np.abs(err) < 1e-7) >= 3, err


def _slope_field(n=(0.0, 0.0, 1.0), h=0.0, shape=(7, 9), size=(0.6, 0.5)):
    """A planar field of the plane ``n . x = h`` over the grid."""
    n = np.asarray(n) / np.linalg.norm(n)
    y, x = np.meshgrid(
        np.linspace(-size[1], size[1], shape[0]), np.linspace(-size[0], size[0], shape[1]), indexing="ij"
    )
    return C.HeightField.from_array((h - n[0] * x - n[1] * y) / n[2], size)


SHAPES_XML = """<mujoco><asset><mesh name="hex" vertex="0.05 0 -0.025 0.025 0.04 -0.025 -0.025 0.04 -0.025 -0.05 0 -0.025
 -0.025 -0.04 -0.025 0.025 -0.04 -0.025 0.05 0 0.025 0.025 0.04 0.025 -0.025 0.04 0.025 -0.05 0 0.025 -0.025 -0.04 0.025
 0.025 -0.04 0.025"/></asset><worldbody>
<body name="a" pos="0 0 0.1"><freejoint/><geom type="sphere" size="0.04"/></body>
<body name="b" pos="0.2 0 0.1"><freejoint/><geom type="capsule" size="0.03 0.06"/></body>
<body name="c" pos="-0.2 0 0.1"><freejoint/><geom type="box" size="0.05 0.04 0.03"/></body>
<body name="d" pos="0 0.2 0.1"><freejoint/><geom type="cylinder" size="0.04 0.03"/></body>
<body name="e" pos="0 -0.2 0.1"><freejoint/><geom type="ellipsoid" size="0.05 0.04 0.03"/></body>
<body name="f" pos="0.2 0.2 0.1"><freejoint/><geom type="mesh" mesh="hex"/></body>
</worldbody></mujoco>"""


def _shapes_state(seed, model=None, ground=None, depth=0.001):
    """The six shapes at random orientations; with ``model``, each lowered until it is
    ``depth`` deep in the plane ``ground``."""
    rng = np.random.default_rng(seed)
    q = []
    for k, (x, y) in enumerate([(0, 0), (0.2, 0), (-0.2, 0), (0, 0.2), (0, -0.2), (0.2, 0.2)]):
        quat = rng.normal(size=4)
        q.append([x + 0.013 * k, y - 0.007 * k, 0.2, *(quat / np.linalg.norm(quat))])
    q = np.concatenate(q)
    if model is not None:
        n = np.asarray(getattr(ground, "normal", (0.0, 0.0, 1.0)), np.float64)
        n = n / np.linalg.norm(n)
        cp = C.contact_points(model, jnp.asarray(q), jnp.zeros(model.nv), ground)
        phi, geom = np.asarray(cp.distance), np.asarray(cp.geom)
        for g in range(6):
            q[7 * g + 2] -= (phi[geom == g].min() + depth) / n[2]
    return jnp.asarray(q)


def test_planar_field_is_the_plane():
    """A field whose heights lie on a sloped plane: every shape's deepest contact (depth,
    normal, witness) equals the plane's (a sphere's first row; the field's vertices and
    edges in a box, cylinder, ellipsoid or hull are extra rows whose depth is no more than the
    plane's deepest); points beyond the field's extent have no contact."""
    model = _load(SHAPES_XML)
    n, h = np.array([0.1, -0.05, 1.0]), 0.004
    hf, ground = _slope_field(n, h), C.Ground(normal=n, height=h)
    q, z = _shapes_state(3, model, ground), jnp.zeros(model.nv)
    both = jax.jit(lambda q: (C.contact_points(model, q, z, hf), C.contact_points(model, q, z, ground)))
    cf, cg = both(q)
    gf, gg = np.asarray(cf.geom), np.asarray(cg.geom)
    for g in sorted(set(gg)):
        pf, pg = np.asarray(cf.distance)[gf == g], np.asarray(cg.distance)[gg == g]
        assert pg.min() < 0
        np.testing.assert_allclose(pf.min(), pg.min(), atol=1e-12)
        kf, kg = np.flatnonzero(gf == g)[np.argmin(pf)], np.flatnonzero(gg == g)[np.argmin(pg)]
        np.testing.assert_allclose(np.asarray(cf.normal)[kf], np.asarray(cg.normal)[kg], atol=1e-12)
        np.testing.assert_allclose(np.asarray(cf.point)[kf], np.asarray(cg.point)[kg], atol=1e-12)
    far = q.at[0].set(2.0)  # the sphere beyond the field: no contact there
    assert float(jnp.max(both(far)[0].depth[np.asarray(cf.geom) == 0])) == 0.0


BALL_XML = '<mujoco><worldbody><body name="a"><freejoint/><geom type="sphere" size="0.04"/></body></worldbody></mujoco>'
BUMPS = np.array([[0.0, 0.01, 0.0, 0.02], [0.015, 0.03, 0.005, 0.0], [0.0, 0.02, 0.01, 0.005]])


def test_sphere_in_a_valley_touches_both_slopes():
    """A ball above a V-shaped valley (two faces meeting along a grid line) touches both
    slopes with equal depths and mirrored normals, and on a ridge the ridge's edge once, along
    the line from the edge to its centre; a ball over a flat stretch touches once, also above a
    vertex shared by six triangles."""
    x = np.linspace(-0.2, 0.2, 5)
    v = np.abs(x)[None, :].repeat(4, 0)  # valley along y through x = 0 (a column of vertices)
    model = _load(BALL_XML)
    z = jnp.zeros(model.nv)
    points = jax.jit(C.contact_points)
    for heights, zc, rows in ((v, 0.04 * np.sqrt(2) - 0.001, 2), (-v, 0.039, 1), (0 * v, 0.039, 1)):
        q = jnp.array([0.0, 0.05, zc, 1, 0, 0, 0])
        hf = C.HeightField.from_array(heights, (0.2, 0.15))
        cp = points(model, q, z, hf)
        d = np.asarray(cp.depth)[np.asarray(cp.geom) == 0]
        nrm = np.asarray(cp.normal)[np.asarray(cp.geom) == 0][d > 0]
        assert np.sum(d > 0) == rows, d
        if rows == 2:  # each slope 0.001 / sqrt(2) deep, normals mirrored
            np.testing.assert_allclose(d[d > 0], 0.001 / np.sqrt(2), atol=1e-12)
            np.testing.assert_allclose(nrm[0] * [-1, 1, 1], nrm[1], atol=1e-12)
        else:  # the ridge's edge, or the flat face, straight below
            np.testing.assert_allclose(d[d > 0], 0.001, atol=1e-12)
            np.testing.assert_allclose(nrm[0], [0, 0, 1], atol=1e-12)
    flat = C.HeightField.from_array(np.zeros((5, 5)), (0.2, 0.2))
    on_vertex = q.at[:3].set(jnp.array([0.1, 0.1, 0.039]))
    d = np.asarray(points(model, on_vertex, z, flat).depth)
    np.testing.assert_allclose(np.sort(d)[::-1], [0.001, 0, 0, 0], atol=1e-15)


def test_gradients_float64_and_finite_at_edges():
    """The total ground force of the six shapes on a bumpy field, as a function of the heights
    and of the configuration: ``check_grads`` (forward and reverse, float64) at a generic
    state, and finite gradients with a ball exactly above a grid vertex, on a grid edge and
    on the diagonal."""
    model = _load(SHAPES_XML)
    z = jnp.zeros(model.nv)
    heights = np.tile(BUMPS, (3, 2))[:7, :7]
    size = np.array([0.3, 0.3])

    def force(h, q):
        hf = C.HeightField.from_array(h, size)
        return C.total_force(model, q, z, C.Contact(hf, collide_pairs=False))[2]

    q = _shapes_state(5, model, C.HeightField.from_array(heights, size))
    assert float(force(heights, q)) > 0
    # jitted: check_grads evaluates op by op otherwise (thousands of one-primitive compiles)
    by_heights, by_state = jax.jit(lambda h: force(h, q)), jax.jit(lambda q: force(heights, q))
    check_grads(by_heights, (jnp.asarray(heights),), order=1, modes=("fwd", "rev"), atol=1e-5, rtol=1e-5, eps=1e-6)
    check_grads(by_state, (q,), order=1, modes=("fwd", "rev"), atol=1e-5, rtol=1e-5, eps=1e-6)
    grad = jax.jit(jax.grad(force, argnums=(0, 1)))
    for x, y in ((0.0, 0.0), (0.05, 0.0), (0.0, 0.05), (0.05, 0.05)):  # vertex, edges, diagonal
        h0 = float(C.HeightField.from_array(heights, size).height(x, y))
        qs = q.at[:3].set(jnp.array([x, y, h0 + 0.039]))
        gh, gq = grad(heights, qs)
        assert np.all(np.isfinite(np.asarray(gh))) and np.all(np.isfinite(np.asarray(gq)))
        assert float(jnp.abs(gq[2])) > 0


def test_float32_and_vmap_over_fields():
    """In float32 the contacts equal float64's to 1e-6 m; a batch of fields of one grid shape
    goes through ``vmap`` (one program), each equal to its own evaluation."""
    q = _shapes_state(7)
    heights = np.tile(BUMPS, (3, 2))[:7, :7]
    out = {}
    for dt in (jnp.float32, jnp.float64):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = jaxdyn.load_mjcf(SHAPES_XML, dtype=dt)
        hf = C.HeightField.from_array(heights.astype(dt), np.array([0.3, 0.3], dt))
        cp = jax.jit(lambda q, m=model, hf=hf, dt=dt: C.contact_points(m, q, jnp.zeros(m.nv, dt), hf))(q.astype(dt))
        assert cp.depth.dtype == dt
        out[dt] = np.asarray(cp.distance, np.float64)
    close = out[jnp.float64] < 0.1
    np.testing.assert_allclose(out[jnp.float32][close], out[jnp.float64][close], atol=1e-6)
    model = _load(SHAPES_XML)
    z = jnp.zeros(model.nv)
    batch = jnp.stack([jnp.asarray(heights) * s for s in (0.5, 1.0, 1.5)])
    f = lambda h: C.contact_points(model, q, z, C.HeightField.from_array(h, np.array([0.3, 0.3]))).depth  # noqa: E731
    np.testing.assert_allclose(jax.jit(jax.vmap(f))(batch)[2], jax.jit(f)(batch[2]), atol=1e-15)


def test_contact_state_and_spring_friction_rows():
    """``Contact.init_state`` has a row per ground contact row on a field (four per sphere and
    capsule end, eight field rows per box, cylinder, ellipsoid and mesh), and a step with
    ``friction="spring"`` runs."""
    model = _load(SHAPES_XML)
    hf = _slope_field()
    ct = C.Contact(hf, friction="spring", collide_pairs=False)
    st = ct.init_state(model)
    q, z = _shapes_state(1), jnp.zeros(model.nv)
    assert st.ground.shape[0] == C.contact_points(model, q, z, hf).depth.shape[0]
    out = jax.jit(lambda q: sim.step(model, q, z, z, 1e-3, contact=ct, contact_state=st))(q)
    assert np.all(np.isfinite(np.asarray(out[0])))


@pytest.mark.parametrize("scene", ["bowl", "slope"])
def test_rest_states_match_mujoco(ref, scene):
    """1 ms ``"implicit_euler"`` steps with the default ``ContactParams``. A 1 kg box held by
    friction on a 10 degree field, 1 s from MuJoCo's start: where MuJoCo's rests to 1 mm along
    the slope (MuJoCo's own creep in 1 s is 0.8 mm) and 0.1 mm in height, its tilt to 1e-3 rad.
    A 1 kg ball released at MuJoCo's rest in a triangulated bowl (a vertex pit between six
    faces): its height stays within 0.1 mm of MuJoCo's, but it rolls off by up to 5 mm in
    0.5 s (3.9 mm measured). MuJoCo holds it there with six contacts, two of them where the
    ball overlaps a neighbouring cell's prism across a crease (its closest point on that
    triangle's edge); jaxdyn's nearest features (H3) count a face only where the ball's
    projection falls in it, so its ball rests elsewhere in the pit (docs/contact.md, "Height
    fields")."""
    model = _load(str(ref[f"{scene}_xml"]))
    ct = C.Contact(C.HeightField.from_model(model))
    steps = 500 if scene == "bowl" else 1000
    q0 = ref["bowl_qpos"] if scene == "bowl" else ref["slope_qpos0"]
    tr = jax.jit(lambda q0: sim.rollout(model, q0, jnp.zeros(6), jnp.zeros((steps, 6)), 1e-3, contact=ct))(
        jnp.asarray(q0)
    )
    assert int(tr.nonfinite_step) == -1
    q, q_ref = np.asarray(tr.q[-1]), ref[f"{scene}_qpos"]
    if scene == "bowl":
        np.testing.assert_allclose(q[:2], q_ref[:2], atol=5e-3)
        np.testing.assert_allclose(q[2], q_ref[2], atol=1e-4)
    else:
        np.testing.assert_allclose(q[:2], q_ref[:2], atol=1e-3)
        np.testing.assert_allclose(q[2], q_ref[2], atol=1e-4)
        np.testing.assert_allclose(np.abs(q[3:7] @ q_ref[3:7]), 1.0, atol=1e-6)


def _hfield_xml(asset, geom='<geom type="hfield" hfield="h"/>'):
    ball = '<body name="ball"><freejoint/><geom size="0.1"/></body>'
    return f"<mujoco><asset>{asset}</asset><worldbody>{geom}{ball}</worldbody></mujoco>"


@pytest.mark.parametrize(
    "asset, geom, match",
    [
        ('<hfield name="h" nrow="2" ncol="2" size="1 1 1 0.1" elevation="1 2 3"/>', None, "elevation has 3 values"),
        ('<hfield name="h" nrow="2" ncol="2" size="1 0 1 0.1"/>', None, "must be positive"),
        ('<hfield name="h" nrow="2" ncol="2" size="1 1 1 0"/>', None, "must be positive"),
        ('<hfield name="h" nrow="1" ncol="2" size="1 1 1 0.1"/>', None, "at least 2"),
        ('<hfield name="h" file="missing.png" size="1 1 1 0.1"/>', None, "file 'missing.png' is not found"),
        ('<hfield name="h" file="terrain.bin" size="1 1 1 0.1"/>', None, "only PNG"),
        ('<hfield name="h" size="1 1 1 0.1"/>', None, "give a file, or nrow and ncol"),
        ('<hfield name="h" nrow="2" ncol="2" size="1 1 1 0.1"/>', '<geom type="hfield" hfield="x"/>', "'x'"),
        (
            '<hfield name="h" nrow="2" ncol="2" size="1 1 1 0.1"/>',
            '<body><freejoint/><inertial mass="1" pos="0 0 0" diaginertia="1 1 1"/><geom type="hfield" hfield="h"/></body>',
            "moving body",
        ),
    ],
)
def test_bad_hfield_input_names_the_element(asset, geom, match, tmp_path):
    xml = _hfield_xml(asset) if geom is None else _hfield_xml(asset, geom)
    with pytest.raises(MJCFError, match=match) as e:
        jaxdyn.load_mjcf(xml)
    assert "hfield" in str(e.value) or "geom" in str(e.value)


def test_a_png_beside_the_scene_and_a_missing_one(ref, tmp_path):
    """MuJoCo Playground's layout: ``<compiler meshdir>`` points at the robot's meshes and the
    height field's PNG lies beside the scene file (Playground hands MuJoCo its files by name):
    it loads, with MuJoCo's heights. A PNG in neither place is refused naming the asset, the
    file, both paths looked in and the way out."""
    os.makedirs(tmp_path / "assets")
    shutil.copy(os.path.join(DATA, "hfield_terrain.png"), tmp_path / "assets" / "terrain.png")
    scene = (
        '<mujoco><compiler meshdir="../robot/meshes"/><asset><hfield name="ground" file="assets/{}" '
        'size="0.6 0.7 0.08 0.05"/></asset><worldbody><geom type="hfield" hfield="ground"/>'
        '<body><freejoint/><geom size="0.04"/></body></worldbody></mujoco>'
    )
    (tmp_path / "scene.xml").write_text(scene.format("terrain.png"))
    hf = C.HeightField.from_model(_load(str(tmp_path / "scene.xml")))
    np.testing.assert_allclose(np.asarray(hf.heights), ref["png_data"].astype(np.float64) * 0.08, rtol=0, atol=1e-15)
    (tmp_path / "missing.xml").write_text(scene.format("rough.png"))
    in_meshdir = os.path.join(str(tmp_path), "../robot/meshes", "assets/rough.png")
    with pytest.raises(MJCFError) as e:
        jaxdyn.load_mjcf(str(tmp_path / "missing.xml"))
    assert str(e.value) == (
        f"<hfield name='ground'>: the height field file 'assets/rough.png' is not found (looked for {in_meshdir} "
        f"and {os.path.join(str(tmp_path), 'assets/rough.png')}); put the PNG there, or give the heights in the "
        "XML instead of the file (nrow, ncol and elevation on the <hfield>)"
    )


def test_playgrounds_rough_terrain_go1_loads():
    """The installed MuJoCo Playground's rough-terrain Go1 (its 256 x 256 PNG beside the scene,
    its meshdir pointing at the robot's meshes) loads with its field."""
    import glob
    import site

    scenes = [
        f
        for d in site.getsitepackages()
        for f in glob.glob(
            os.path.join(d, "mujoco_playground", "**", "go1", "xmls", "*rough_terrain.xml"), recursive=True
        )
    ]
    if not scenes:
        pytest.skip("mujoco_playground is not installed")
    hf = C.HeightField.from_model(_load(scenes[0]))
    assert hf.heights.shape == (256, 256) and float(np.max(hf.heights)) == pytest.approx(0.05)


def test_unreadable_png_and_bad_arrays(tmp_path):
    """A file that is not a PNG is refused naming the element; ``HeightField.from_array``
    refuses a grid smaller than 2 x 2 and non-positive or non-finite sizes; ``from_model``
    without a field says so."""
    bad = tmp_path / "bad.png"
    bad.write_bytes(b"not a png at all")
    xml = _hfield_xml(f'<hfield name="h" file="{bad}" size="1 1 1 0.1"/>')
    with pytest.raises(MJCFError, match="<hfield name='h'>: cannot read the file .*not a PNG"):
        jaxdyn.load_mjcf(xml)
    with pytest.raises(ValueError, match="nrow, ncol >= 2"):
        C.HeightField.from_array(np.zeros((1, 3)), (1.0, 1.0))
    with pytest.raises(ValueError, match="positive"):
        C.HeightField.from_array(np.zeros((2, 3)), (1.0, 0.0))
    with pytest.raises(ValueError, match="finite"):
        C.HeightField.from_array(np.array([[0.0, np.nan], [0, 0]]), (1.0, 1.0))
    with pytest.raises(ValueError, match="no hfield geom"):
        C.HeightField.from_model(_load(SHAPES_XML))
