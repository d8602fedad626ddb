"""Pictures and videos of real geometry (:mod:`jaxdyn.render`): the shapes read from URDF and
MJCF, the poses MuJoCo is given, where the robot's pixels land, the files written, bad input.

Needs the extra ``jaxdyn[render]`` and an offscreen OpenGL (Debian's ``libosmesa6``), which
``.ci/run`` installs; without them the tests are skipped, saying which is missing."""

import os
import warnings

import numpy as np
import pytest

import jaxdyn
from jaxdyn import geometry

render = pytest.importorskip("jaxdyn.render")
DATA = os.path.join(os.path.dirname(__file__), "data")


def _gl_reason():
    for mod in ("mujoco", "imageio", "imageio_ffmpeg"):
        try:
            render._gl.mujoco() if mod == "mujoco" else __import__(mod)  # MUJOCO_GL set before the import
        except ImportError:
            return f'{mod} is not installed (pip install "jaxdyn[render]")'
    try:
        mj = render._gl.mujoco()
        m = mj.MjModel.from_xml_string("<mujoco><worldbody><geom size='.1'/></worldbody></mujoco>")
        r = mj.Renderer(m, 32, 32)
        r.close()
    except Exception as e:  # noqa: BLE001 - the reason is reported
        return f"no offscreen OpenGL for MuJoCo ({type(e).__name__}: {e}; apt-get install libosmesa6)"
    return None


_REASON = _gl_reason()
needs_gl = pytest.mark.skipif(_REASON is not None, reason=_REASON or "")
try:
    render._gl.mujoco()
    _NO_MUJOCO = None
except ImportError:
    _NO_MUJOCO = 'MuJoCo resolves MJCF colours and meshes: pip install "jaxdyn[render]"'
needs_mujoco = pytest.mark.skipif(_NO_MUJOCO is not None, reason=_NO_MUJOCO or "")


def _ball_model():
    """A ball of radius 0.1 m on a vertical slide from the world origin."""
    from jaxdyn.model import Topology, make_model

    top = Topology(parents=(-1,), joint_types=("prismatic",), joint_names=("z",), body_names=("ball",))
    m = make_model(
        top,
        placement_R=[np.eye(3)],
        placement_p=[[0.0, 0, 0]],
        axis=[[0, 0, 1.0]],
        mass=[1.0],
        com=[[0.0, 0, 0]],
        inertia=[np.eye(3) * 1e-3],
    )
    return m.replace(geoms=geometry.make_geoms(type=[geometry.SPHERE], size=[[0.1, 0, 0]], body=[0], dtype=m.dtype))


def _box_model():
    from jaxdyn.model import Topology, make_model

    top = Topology(parents=(-1,), joint_types=("prismatic",), joint_names=("slide",), body_names=("box",))
    m = make_model(
        top,
        placement_R=[np.eye(3)],
        placement_p=[[0.0, 0, 1.0]],
        axis=[[1.0, 0, 0]],
        mass=[1.0],
        com=[[0.0, 0, 0]],
        inertia=[np.eye(3) * 0.01],
    )
    g = geometry.make_geoms(type=[geometry.BOX], size=[[0.1, 0.1, 0.1]], body=[0], dtype=m.dtype)
    return m.replace(geoms=g)


RED = render.Visual(0, "box", np.array([0.1, 0.1, 0.1]), np.eye(3), np.zeros(3), np.array([1.0, 0, 0, 1]))
TOP = render.Camera(azimuth=90.0, elevation=-90.0, distance=3.0, track=False)


def _red(img):
    """Pixels of the red box: red well above green and blue."""
    img = img.astype(np.int32)
    return (img[..., 0] > 150) & (img[..., 0] - np.maximum(img[..., 1], img[..., 2]) > 100)


def test_quaternions_of_rotations():
    from scipy.spatial.transform import Rotation

    R = Rotation.random(500, random_state=0)
    q = render.mat_to_quat(R.as_matrix())
    ref = np.roll(R.as_quat(), 1, axis=-1)  # (x, y, z, w) -> (w, x, y, z)
    ref *= np.where(ref[:, :1] < 0, -1.0, 1.0)
    np.testing.assert_allclose(q, ref, atol=1e-12)
    # the same function in JAX (differentiable) and half-turns, where w = 0 and x, y or z leads
    import jax.numpy as jnp

    from jaxdyn import spatial

    np.testing.assert_allclose(spatial.rotation_to_quat(jnp.asarray(R.as_matrix())), ref, atol=1e-12)
    for axis in np.eye(3):
        half = Rotation.from_rotvec(np.pi * axis).as_matrix()
        np.testing.assert_allclose(np.abs(render.mat_to_quat(half)), np.r_[0.0, axis], atol=1e-15)
        np.testing.assert_allclose(spatial.rotation_log(jnp.asarray(half)), np.pi * axis, atol=1e-12)


def test_primitive_meshes_are_closed_and_outward():
    for kind, size in (("box", [0.1, 0.2, 0.3]), ("sphere", [0.2, 0, 0]), ("capsule", [0.1, 0.3, 0])):
        v, f = render.primitive_mesh(kind, size)
        tri = v[f]
        # the divergence theorem: a closed, outward surface encloses a positive volume
        vol = np.einsum("ij,ij->i", tri[:, 0], np.cross(tri[:, 1], tri[:, 2])).sum() / 6
        want = {"box": 8 * 0.1 * 0.2 * 0.3, "sphere": 4 / 3 * np.pi * 0.2**3}.get(
            kind, 4 / 3 * np.pi * 0.1**3 + np.pi * 0.1**2 * 0.6
        )
        assert 0.9 * want < vol <= 1.0001 * want, (kind, vol, want)


def _urdf(tmp_path, mesh_file):
    text = f"""<robot name="vis">
  <material name="blue"><color rgba="0 0 1 1"/></material>
  <link name="base">
    <inertial><mass value="1"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial>
    <visual><origin xyz="0 0 0.1"/><geometry><box size="0.2 0.4 0.6"/></geometry><material name="blue"/></visual>
  </link>
  <link name="arm">
    <inertial><mass value="2"/><inertia ixx="0.02" iyy="0.03" izz="0.04" ixy="0" ixz="0" iyz="0"/></inertial>
    <visual><origin xyz="0.1 0 0" rpy="0 1.5707963267948966 0"/><geometry><cylinder radius="0.05" length="0.3"/></geometry>
      <material name="inline"><color rgba="0.2 0.8 0.2 1"/></material></visual>
    <visual><geometry><mesh filename="{mesh_file}" scale="2 2 2"/></geometry></visual>
    <visual><geometry><mesh filename="missing.stl"/></geometry></visual>
  </link>
  <link name="tool"><visual><geometry><sphere radius="0.03"/></geometry></visual></link>
  <joint name="j" type="revolute"><parent link="base"/><child link="arm"/><origin xyz="0 0 0.5"/>
    <axis xyz="0 1 0"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
  <joint name="fix" type="fixed"><parent link="arm"/><child link="tool"/><origin xyz="0.3 0 0"/></joint>
</robot>"""
    path = tmp_path / "vis.urdf"
    path.write_text(text)
    return str(path)


def test_urdf_visuals(tmp_path):
    from jaxdyn.io.meshes import read_mesh

    stl = os.path.join(DATA, "mesh_robot", "meshes", "go2_calf_lower_convex.stl")
    path = _urdf(tmp_path, stl)
    model = jaxdyn.load_urdf(path)
    with pytest.warns(render.MissingMeshWarning, match="missing.stl"):
        vis = render.visuals(model, path)
    kinds = [v.kind for v in vis]
    # the base link is the world (fixed base): its box stays there; arm: cylinder, mesh, stand-in box;
    # the tool link is merged into the arm's body, 0.3 m along x
    assert kinds == ["box", "cylinder", "mesh", "box", "sphere"]
    box, cyl, mesh, stand_in, tool = vis
    assert box.body == -1 and np.allclose(box.size, [0.1, 0.2, 0.3]) and np.allclose(box.rgba, [0, 0, 1, 1])
    assert np.allclose(box.p, [0, 0, 0.1])
    assert cyl.body == 0 and np.allclose(cyl.size[:2], [0.05, 0.15]) and np.allclose(cyl.rgba, [0.2, 0.8, 0.2, 1])
    assert np.allclose(cyl.R @ [0, 0, 1], [1, 0, 0], atol=1e-12)
    tris = read_mesh(stl).triangles * 2
    np.testing.assert_allclose(np.sort(mesh.vertices[mesh.faces].reshape(-1, 3), 0), np.sort(tris.reshape(-1, 3), 0))
    # the stand-in: the uniform box of the arm's inertia (I_x = m/3 (b^2 + c^2) for half-sizes a, b, c)
    a2 = np.sort(stand_in.size**2)
    m = 2.0
    I = np.sort([m / 3 * (a2[1] + a2[2]), m / 3 * (a2[0] + a2[2]), m / 3 * (a2[0] + a2[1])])
    np.testing.assert_allclose(I, [0.02, 0.03, 0.04], rtol=1e-9)
    assert tool.body == 0 and np.allclose(tool.p, [0.3, 0, 0]) and np.isclose(tool.size[0], 0.03)


@needs_mujoco
def test_mjcf_visuals_colours_and_meshes():
    path = os.path.join(DATA, "mjcf", "mesh_exact.xml")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = jaxdyn.load_mjcf(path)
    vis = render.visuals(model, path)
    assert [v.kind for v in vis] == ["mesh", "mesh", "box", "mesh"]
    g = model.geoms
    verts, vgeom = np.asarray(g.vertices), np.asarray(g.vertex_geom)
    meshes = [k for k in range(g.ng) if g.type[k] == geometry.MESH]
    for v, k in zip([v for v in vis if v.kind == "mesh"], meshes):
        np.testing.assert_allclose(v.p, np.asarray(g.pos[k]), atol=1e-12)
        # jaxdyn's convex hull of the mesh (read from the file) is made of MuJoCo's vertices, in
        # the same frame: MuJoCo's recentring is undone
        hull = verts[vgeom == k]
        d = np.min(np.linalg.norm(hull[:, None] - v.vertices[None], axis=-1), axis=1)
        assert np.max(d) < 1e-6, np.max(d)


@needs_mujoco
def test_mjcf_rgba_and_materials(tmp_path):
    xml = """<mujoco><asset><material name="m" rgba="0 0.5 1 1"/></asset>
      <default><default class="c"><geom rgba="1 1 0 1"/></default></default>
      <worldbody><body><joint type="hinge"/>
        <geom type="sphere" size=".1" rgba="1 0 0 1"/>
        <geom type="box" size=".1 .1 .1" material="m" pos="0 0 .3"/>
        <geom type="capsule" size=".05 .1" class="c" pos="0 0 .6"/>
        <geom type="capsule" size=".05 .1" group="3" pos="0 0 .9"/>
      </body></worldbody></mujoco>"""
    path = tmp_path / "c.xml"
    path.write_text(xml)
    vis = render.visuals(jaxdyn.load_mjcf(str(path)), str(path))
    # group 3 (a collision copy by convention) is not drawn
    assert [v.kind for v in vis] == ["sphere", "box", "capsule"]
    np.testing.assert_allclose([v.rgba for v in vis], [[1, 0, 0, 1], [0, 0.5, 1, 1], [1, 1, 0, 1]], atol=1e-6)


def test_bones_for_a_model_without_geometry():
    model = jaxdyn.load_robot("double_pendulum")
    vis = render.visuals(model)
    bones = [v for v in vis if v.kind == "capsule"]
    assert len(bones) >= 2 and all(v.body >= -1 for v in vis)
    for v in bones:  # each bone spans a segment starting at its body's origin
        np.testing.assert_allclose(v.p - v.R[:, 2] * v.size[1], 0, atol=1e-12)


@needs_gl
def test_the_box_lands_where_kinematics_puts_it(tmp_path):
    """Seen from straight above, the red box's pixels are centred where the prismatic joint
    moves it: the image's x axis is the world's x (azimuth 90), 1 m of slide = a fixed number
    of pixels, the same in both directions."""
    model = _box_model()
    r = render.Renderer(model, [RED], width=160, height=120, shadows=False, ground=0.0)
    try:
        cols = []
        for x in (-0.4, 0.0, 0.4):
            R, p = r.poses(np.array([[[x]]]))
            img = r.frame(R[0], p[0], TOP, lookat=np.zeros(3))
            red = _red(img)
            assert red.sum() > 20, x
            ys, xs = np.nonzero(red)
            cols.append(xs.mean())
            assert abs(ys.mean() - 59.5) < 2
    finally:
        r.close()
    assert abs(cols[1] - 79.5) < 2
    assert cols[0] < cols[1] < cols[2]
    assert abs((cols[2] - cols[1]) - (cols[1] - cols[0])) < 1.5


@needs_gl
def test_png_gif_mp4_and_side_by_side_envs(tmp_path):
    import imageio.v3 as iio

    model = _box_model()
    qs = np.linspace(-0.3, 0.3, 7)[:, None]
    img = render.render_image(model, qs[3], tmp_path / "a.png", shapes=[RED], width=96, height=64, camera=TOP)
    assert img.shape == (64, 96, 3) and np.array_equal(iio.imread(tmp_path / "a.png"), img)
    # two envs side by side: two red blobs
    two = render.render_image(model, qs[[0, 6]], shapes=[RED], width=96, height=64, camera=TOP, shadows=False)
    from scipy.ndimage import label

    assert label(_red(two))[1] == 2
    # overlaid: at their own coordinates, 0.6 m apart on the slide, the second translucent
    over = render.render_image(
        model, qs[[0, 6]], shapes=[RED], width=96, height=64, camera=TOP, shadows=False, layout="overlay"
    )
    blobs, n = label((over[..., 0].astype(int) - over[..., 1:].max(-1)) > 25)
    assert n == 2
    strength = [(over[..., 0].astype(int) - over[..., 1])[blobs == k].mean() for k in (1, 2)]
    xs = [np.nonzero(blobs == k)[1].mean() for k in (1, 2)]
    assert strength[np.argmin(xs)] > strength[np.argmax(xs)] + 30  # env 0 (x = -0.3) is opaque
    # dt and fps: 7 samples 0.1 s apart at 20 fps are 0.6 s, 13 frames
    n = render.render_video(model, qs, tmp_path / "v.mp4", dt=0.1, fps=20, shapes=[RED], width=96, height=64)
    frames = iio.imread(tmp_path / "v.mp4", index=None)
    assert n == 13 and frames.shape == (13, 64, 96, 3)
    n = render.render_video(model, qs, tmp_path / "v.gif", shapes=[RED], width=96, height=64, camera=TOP)
    gif = iio.imread(tmp_path / "v.gif", index=None)
    assert n == 7 and gif.shape[:3] == (7, 64, 96)
    # the box moves along the image's x across the GIF
    xs = [np.nonzero(_red(f[..., :3]))[1].mean() for f in gif]
    assert np.all(np.diff(xs) > 0)


@needs_gl
def test_contact_points_and_forces_are_drawn(tmp_path):
    """A ball pressed into the ground: its contact point and force appear (magenta dot, orange
    rod along the force, force_scale metres per newton long), and only when a contact is given."""
    from jaxdyn import contact as C

    m = _ball_model()
    q, qd = np.array([0.095]), np.zeros(1)
    side = render.Camera(azimuth=90.0, elevation=-10.0, distance=1.5, track=False)
    kw = dict(width=192, height=144, camera=side, shadows=False)
    plain = render.render_image(m, q, **kw)
    # 353 N at 1 mm per newton: a rod 0.35 m tall from the ground, above the ball
    with_c = render.render_image(m, q, contact=C.Contact(), qd=qd, force_scale=1e-3, **kw)
    im = [x.astype(np.int32) for x in (plain, with_c)]
    orange = [(x[..., 0] > 150) & (x[..., 0] - x[..., 2] > 90) & (x[..., 1] > 60) for x in im]
    assert orange[1].sum() > 5 and orange[0].sum() == 0
    ys, xs = np.nonzero(orange[1])
    # the rod's tip, 0.353 m up, projected: the camera looks at the body (z = 0.095) from 1.5 m,
    # 10 degrees down, with MuJoCo's vertical field of view of 45 degrees
    f = np.array([0, np.cos(np.radians(10)), -np.sin(np.radians(10))])
    up = np.array([0, np.sin(np.radians(10)), np.cos(np.radians(10))])
    d = np.array([0, 0, 0.353 - 0.095])
    row = 71.5 - 72 / np.tan(np.radians(22.5)) * (d @ up) / (d @ f + 1.5)
    assert abs(ys.min() - row) < 2 and abs(xs.mean() - 95.5) < 3, (ys.min(), row)


def test_bad_input(tmp_path):
    model = _box_model()
    with pytest.raises(ValueError, match=r"must end in \.mp4 or \.gif"):
        render.render_video(model, np.zeros((3, 1)), tmp_path / "v.avi")
    with pytest.raises(ValueError, match="even width and height"):
        render.render_video(model, np.zeros((3, 1)), tmp_path / "v.mp4", width=95)
    with pytest.raises(ValueError, match=r"expected \(T, 1\), \(T, B, 1\)"):
        render.render_video(model, np.zeros((3, 2)), tmp_path / "v.gif")
    with pytest.raises(ValueError, match="NaN"):
        render.render_video(model, np.full((3, 1), np.nan), tmp_path / "v.gif")
    with pytest.raises(ValueError, match="neither a URDF"):
        render.visuals(model, __file__)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        render.visuals(model, tmp_path / "none.urdf")


def test_a_missing_extra_names_the_pip_install(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "mujoco", None)  # import mujoco raises ImportError
    with pytest.raises(ImportError, match=r'pip install "jaxdyn\[render\]"'):
        render.Renderer(_box_model(), [RED])


@needs_gl
def test_excite_writes_a_video_of_the_excitation(tmp_path, capsys):
    import imageio.v3 as iio

    from jaxdyn.cli import main

    video = tmp_path / "excite.mp4"
    argv = ["excite", "double_pendulum", "--out", str(tmp_path / "e.csv"), "--steps", "3", "--harmonics", "2"]
    assert main(argv + ["--base-frequency", "1", "--video", str(video)]) == 0, capsys.readouterr().err
    frames = iio.imread(video, index=None)
    assert frames.shape == (30, 360, 480, 3)  # one period of 1 s at 30 fps
    moved = np.abs(frames[0].astype(np.int32) - frames[15]).max(-1) > 40  # the arm moves
    assert moved.sum() > 200


def test_video_options_are_checked_first(tmp_path, capsys):
    """A bad --video is refused in one line, exit status 2, before any computation."""
    from jaxdyn.cli import main

    avi = tmp_path / "e.avi"
    assert main(["excite", "double_pendulum", "--out", str(tmp_path / "e.csv"), "--video", str(avi)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"jaxdyn excite: error: --video {avi}: the video '{avi}' must end in .mp4 or .gif"
    assert main(["identify", "a.urdf", "b.csv", "--out", str(tmp_path / "o.urdf"), "--video", str(avi)]) == 2
    assert capsys.readouterr().err.strip().startswith("jaxdyn identify: error: --video")
    assert not (tmp_path / "e.csv").exists()


@needs_gl
def test_identify_writes_a_video_of_the_measured_motion(tmp_path, capsys):
    import imageio.v3 as iio
    from test_sysid import pendulum_problem

    from jaxdyn import sysid
    from jaxdyn.cli import main
    from jaxdyn.robots import robot_path

    _, _, data, _ = pendulum_problem(noise=0.002)
    path = str(tmp_path / "pendulum.csv")
    sysid.save_data(path, data)
    video = tmp_path / "motion.gif"
    rc = main(
        ["identify", robot_path("double_pendulum"), path, "--out", str(tmp_path / "id.urdf"), "--video", str(video)]
    )
    assert rc == 0, capsys.readouterr().err
    frames = iio.imread(video, index=None)
    T = float(data.t[-1] - data.t[0]) if data.t is not None else None
    assert frames.shape[1:3] == (360, 480)
    if T is not None:
        assert abs(len(frames) - (np.floor(T * 30 + 1e-9) + 1)) <= 1


@needs_gl
def test_renders_when_mujoco_was_imported_first_without_a_display():
    """Another library (Brax, MJX) may import MuJoCo before jaxdyn.render, which then picks GLFW
    (it needs a display); jaxdyn.render switches its offscreen context."""
    import subprocess
    import sys

    code = (
        "import mujoco\n"
        "import numpy as np, jaxdyn\n"
        "from jaxdyn import render\n"
        "img = render.render_image(jaxdyn.load_robot('double_pendulum'), np.zeros(2), width=64, height=48)\n"
        "print('std', img.std())\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("MUJOCO_GL", "DISPLAY", "PYOPENGL_PLATFORM")}
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert float(out.stdout.split("std")[-1]) > 10  # a picture, not a blank
