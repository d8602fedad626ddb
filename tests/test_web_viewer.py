"""The robot in the browser (:mod:`jaxdyn.render.web`, ``jaxdyn view --serve``): rollout files,
the poses the controls set, and a real browser (headless Chromium) showing the robot's pixels
where the time slider puts them.

Needs the extra ``jaxdyn[view]`` (viser), and Chromium for the browser test; ``.ci/run``
installs both. Without them the tests are skipped, saying which is missing."""

import shutil
import subprocess
import tempfile

import numpy as np
import pytest

import jaxdyn
from jaxdyn.cli import main

pytest.importorskip("viser", reason='viser is not installed (pip install "jaxdyn[view]")')
from test_render import RED, _box_model  # noqa: E402

from jaxdyn.render import web  # noqa: E402

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture
def box_viewer():
    qs = np.linspace(-0.3, 0.3, 7)[:, None]
    v = web.WebViewer(_box_model(), shapes=[RED], qs=qs, dt=0.1, port=0)
    yield v
    v.close()


def test_rollout_files(tmp_path):
    from jaxdyn import sim

    model = jaxdyn.load_robot("double_pendulum")
    q0 = np.array([0.3, -0.2])
    tr = sim.rollout(model, q0, np.zeros(2), np.zeros((5, 2)), 0.01)
    web.save_rollout(tmp_path / "r.npz", tr, dt=0.01)
    qs, qds, dt = web.load_rollout(tmp_path / "r.npz", model)
    assert qs.shape == (6, 1, 2) and qds.shape == (6, 1, 2) and dt == 0.01
    np.testing.assert_array_equal(qs[:, 0], np.asarray(tr.q))
    np.savez(tmp_path / "bad.npz", q=np.zeros((4, 3)))
    with pytest.raises(ValueError, match=r"bad.npz': render: the trajectory's q has shape \(4, 3\), expected \(T, 2\)"):
        web.load_rollout(tmp_path / "bad.npz", model)
    np.savez(tmp_path / "none.npz", x=np.zeros(3))
    with pytest.raises(ValueError, match="has no array 'q' \\(it has: x\\)"):
        web.load_rollout(tmp_path / "none.npz", model)
    with pytest.raises(ValueError, match="must end in .npz"):
        web.save_rollout(tmp_path / "r.txt", tr)


def test_time_slider_env_and_play_pose_the_bodies():
    qs = np.stack([np.linspace(-0.3, 0.3, 7), np.linspace(0.3, -0.3, 7)], 1)[:, :, None]  # (T, B=2, 1)
    v = web.WebViewer(_box_model(), shapes=[RED], qs=qs, dt=0.1, port=0)
    try:
        v.time.value = 6  # what the browser's slider does: on_update poses the robot
        np.testing.assert_allclose(v.frames[0].position, [0.3, 0, 1], atol=1e-6)
        v.env.value = 1
        np.testing.assert_allclose(v.frames[0].position, [-0.3, 0, 1], atol=1e-6)
        assert "t = 0.600 s" in v.label.content
    finally:
        v.close()


def test_joint_sliders_without_a_rollout():
    model = jaxdyn.load_robot("double_pendulum")
    v = web.WebViewer(model, port=0)
    try:
        assert [h.label for _, h in v.sliders] == list(model.joint_names)
        v.sliders[0][1].value = 0.5
        q = np.array([0.5, 0.0])
        p = np.asarray(jaxdyn.forward_kinematics(model, q).p)
        for b in range(model.nb):
            np.testing.assert_allclose(v.frames[b].position, p[b], atol=1e-6)
    finally:
        v.close()


def test_cli_serves_and_refuses_bad_rollouts(tmp_path, capsys):
    assert main(["view", "double_pendulum", "--serve", "--port", "0", "--stop-after", "0.5"]) == 0
    assert "(joint sliders) at http://127.0.0.1:" in capsys.readouterr().out
    np.savez(tmp_path / "bad.npz", q=np.zeros((4, 3)))
    assert main(["view", "double_pendulum", "--rollout", str(tmp_path / "bad.npz")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "expected (T, 2)" in err


def _screenshot(url, path, budget_ms, size=(640, 480)):
    """A headless Chromium screenshot of ``url`` once the page has had ``budget_ms`` of
    (virtual) time."""
    with tempfile.TemporaryDirectory() as profile:
        flags = [
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--enable-unsafe-swiftshader",  # WebGL on the CPU
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--hide-scrollbars",
            f"--user-data-dir={profile}",
            f"--window-size={size[0]},{size[1]}",
            f"--virtual-time-budget={budget_ms}",
            f"--screenshot={path}",
        ]
        subprocess.run([CHROMIUM, *flags, url], capture_output=True, timeout=240, check=True)


def _robot_in_page(url, path):
    """``(pixels, mean column)`` of the red box in a screenshot of the page, waiting longer
    (up to three page loads) where the scene has not arrived yet on a loaded machine."""
    for budget in (8000, 20000, 40000):
        _screenshot(url, path, budget)
        n, x = _blob(path)
        if n > 200:
            break
    return n, x


def _blob(path):
    import imageio.v3 as iio

    img = iio.imread(path)[..., :3].astype(np.int32)
    # viser's lighting turns the red box pink: red well above green and blue, which stay close
    # (unlike the orange of viser's notices)
    r, g, b = img[..., 0], img[..., 1], img[..., 2]
    red = (r > 150) & (r - g > 50) & (r - b > 40) & (np.abs(g - b) < 40)
    ys, xs = np.nonzero(red)
    return red.sum(), (xs.mean() if len(xs) else np.nan)


@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (apt-get install chromium)")
def test_browser_shows_the_robot_where_the_slider_puts_it(box_viewer, tmp_path):
    n0, x0 = _robot_in_page(box_viewer.url, tmp_path / "a.png")
    box_viewer.time.value = 6  # from x = -0.3 m to +0.3 m
    n1, x1 = _robot_in_page(box_viewer.url, tmp_path / "b.png")
    assert n0 > 200 and n1 > 200, (n0, n1)
    # the camera looks from (+x, -y, +z): world +x goes right on the screen
    assert x1 - x0 > 20, (x0, x1)


def test_contact_forces_on_and_off(tmp_path, capsys):
    """A ball pressed into the ground: its force is a segment from the contact point along the
    force (force_scale of the renderer), hidden when the checkbox is off; the command line
    offers it with --contact."""
    from test_render import _ball_model

    from jaxdyn import contact as C

    m = _ball_model()
    qs, qds = np.array([[0.095], [0.2]]), np.zeros((2, 1))
    v = web.WebViewer(m, qs=qs, qds=qds, dt=0.1, contact=C.Contact(), port=0)
    try:
        pts, f, act, scale = v.contacts
        assert act[0, 0].tolist() == [True] and act[1, 0].tolist() == [False]
        assert v.force_lines is not None and v.force_lines.visible
        np.testing.assert_allclose(v.force_lines.points[0], [[0, 0, 0], scale * f[0, 0, 0]], atol=1e-6)
        v.show_forces.value = False
        assert not v.force_lines.visible
        v.show_forces.value = True
        v.time.value = 1  # in the air: no force
        assert not v.force_lines.visible
    finally:
        v.close()
    web.save_rollout(tmp_path / "r.npz", np.zeros((3, 2)), dt=0.1)  # the pendulum, positions only
    capsys.readouterr()
    assert main(["view", "double_pendulum", "--rollout", str(tmp_path / "r.npz"), "--contact"]) == 2
    assert "--contact needs the velocities" in capsys.readouterr().err
