"""The viewer: skeleton points equal the kinematics, PNG/GIF files are written and non-blank,
bad input is refused. One jitted program per (model, trajectory length)."""

import os

import jax
import jax.numpy as jnp
import matplotlib
import numpy as np
import pytest

import jaxdyn
from jaxdyn import viewer


@pytest.fixture(scope="module")
def panda():
    return jaxdyn.load_robot("panda")


@pytest.fixture(scope="module")
def solo():
    return jaxdyn.load_robot("solo12")


@jax.jit
def _reference(model, key):
    """A random configuration and its body and frame placements (one program per model)."""
    q = jaxdyn.random_configuration(model, key)
    return q, jaxdyn.forward_kinematics(model, q), jaxdyn.frame_placements(model, q).p


def _check_skeleton(model, key, tol):
    q, fk, fp = _reference(model, key)
    pts, segs = viewer.skeleton(model, q)
    nb = model.nb
    fp = np.asarray(fp)
    np.testing.assert_allclose(pts[:nb], np.asarray(fk.p), atol=tol)
    segset = {tuple(s) for s in segs.tolist()}
    # every joint is joined to its parent's joint (or to the world origin for a fixed root)
    n0 = nb
    for b, p in enumerate(model.parents):
        if p >= 0:
            assert (p, b) in segset
        elif model.joint_types[b] != "free":
            assert (nb, b) in segset
            np.testing.assert_allclose(pts[nb], 0.0)
            n0 = nb + 1
    # every other point ends one segment that starts at a body, and is either a named frame on
    # that body or that body's centre of mass
    com_w = np.asarray(fk.p) + np.einsum("bij,bj->bi", np.asarray(fk.R), np.asarray(model.com))
    frame_bodies = np.array(model.topology.frame_bodies)
    names = []
    for j in range(n0, len(pts)):
        starts = [i for i, jj in segs.tolist() if jj == j]
        assert len(starts) == 1 and starts[0] < nb
        b = starts[0]
        on_b = np.flatnonzero(frame_bodies == b)
        d = np.linalg.norm(fp[on_b] - pts[j], axis=-1)
        if len(d) and d.min() < tol:
            names.append(model.frame_names[on_b[np.argmin(d)]])
        else:
            np.testing.assert_allclose(pts[j], com_w[b], atol=tol)
            assert not any(p == b for p in model.parents), "COM stubs only end childless bodies"
    return pts, segs, names


def test_skeleton_matches_kinematics(panda, solo):
    key = jax.random.PRNGKey(3)
    _, _, names = _check_skeleton(panda, key, 1e-10)
    assert "panda_hand_tcp" in names  # the end effector closes the chain
    _, _, names = _check_skeleton(solo, key, 1e-10)
    assert {"FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT"} <= set(names)
    tree = jaxdyn.builders.random_tree(7, floating_base=False, seed=2, dtype=jnp.float32)
    pts, _, _ = _check_skeleton(tree, key, 1e-5)
    assert len(pts) > tree.nb + 1  # leaves of a frame-less tree end in COM stubs


def _pixels(path):
    import matplotlib.image as mpimg

    img = mpimg.imread(path)
    assert img.ndim == 3 and img.shape[0] > 100 and img.shape[1] > 100
    return img[..., :3]


def test_draw_png(panda, tmp_path):
    backend = matplotlib.rcParams["backend"]
    q, _, _ = _reference(panda, jax.random.PRNGKey(0))
    path = tmp_path / "sub" / "panda.png"
    fig = viewer.draw(panda, q, path, frames=True, com=True, target=[0.4, 0.1, 0.5], title="test")
    img = _pixels(path)
    assert float(img.var()) > 1e-3
    dark = np.all(img < 0.4, axis=-1).mean()  # the links are drawn in dark colours
    assert dark > 1e-3
    ax = fig.axes[0]
    pts, _ = viewer.skeleton(panda, q)
    for lim, x in zip((ax.get_xlim(), ax.get_ylim(), ax.get_zlim()), pts.T):
        assert lim[0] <= x.min() and x.max() <= lim[1]
    assert matplotlib.rcParams["backend"] == backend  # the global backend is untouched

    # into the panels of a user figure, no file written
    fig2 = viewer.new_figure((6, 3), 60)
    axes = [fig2.add_subplot(1, 2, i + 1, projection="3d") for i in range(2)]
    out = viewer.draw(panda, jaxdyn.neutral(panda), ax=axes[0], view=(10, 30), ground=False)
    assert out is fig2
    viewer.draw(panda, q, ax=axes[1], title="")
    fig2.savefig(tmp_path / "grid.png")
    assert float(_pixels(tmp_path / "grid.png").var()) > 1e-3


def test_animate_gif_floating_base(solo, tmp_path):
    from PIL import Image

    T = 11
    q0 = jaxdyn.neutral(solo)
    qs = np.repeat(np.asarray(q0)[None], T, 0)
    s = np.linspace(0.0, 1.0, T)
    qs[:, 0] = 0.8 * s  # the base walks along x and rises
    qs[:, 2] = 0.3 * s
    qs[:, 7:] = 0.6 * np.sin(2 * np.pi * s)[:, None]
    path = tmp_path / "solo.gif"
    fig = viewer.animate(solo, qs, path, fps=10, stride=2, trail="FL_FOOT", com=True, dt=0.05)
    with Image.open(path) as im:
        assert im.n_frames == len(range(0, T, 2))
        assert im.size[0] > 100
    ax = fig.axes[0]
    # fixed limits hold the whole trajectory, the moving base included
    xlim, zlim = ax.get_xlim(), ax.get_zlim()
    assert xlim[0] <= 0.0 - 0.1 and xlim[1] >= 0.8
    assert zlim[1] >= 0.3


def test_animate_default_trail_and_target(panda, tmp_path):
    from PIL import Image

    qs = np.linspace(np.asarray(jaxdyn.neutral(panda)), np.asarray(panda.q_upper) * 0.5, 4)
    tgt = np.linspace([0.3, 0.0, 0.4], [0.4, 0.2, 0.5], 4)
    viewer.animate(panda, qs, tmp_path / "p.gif", trail=True, target=tgt, frames=True)
    with Image.open(tmp_path / "p.gif") as im:
        assert im.n_frames == 4


def test_animate_failing_part_way_keeps_the_file_it_would_replace(panda, tmp_path, monkeypatch):
    """The GIF is written beside its destination and renamed over it: a frame that fails to draw
    leaves the existing file as it was and no temporary file behind."""
    path = tmp_path / "p.gif"
    path.write_bytes(b"a good file")
    qs = np.stack([np.asarray(jaxdyn.neutral(panda))] * 3)
    calls = []

    def fail_on_second_frame(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("a frame failed")
        return grab(self, *args, **kwargs)

    grab = matplotlib.animation.PillowWriter.grab_frame
    monkeypatch.setattr(matplotlib.animation.PillowWriter, "grab_frame", fail_on_second_frame)
    with pytest.raises(RuntimeError, match="a frame failed"):
        viewer.animate(panda, qs, path)
    assert path.read_bytes() == b"a good file"
    assert sorted(os.listdir(tmp_path)) == ["p.gif"]


def test_bad_input(panda, tmp_path):
    q = jaxdyn.neutral(panda)
    with pytest.raises(ValueError, match=r"nq=9"):
        viewer.draw(panda, np.zeros(7))
    with pytest.raises(ValueError, match=r"nq=9"):
        viewer.skeleton(panda, np.zeros((2, 9)))
    with pytest.raises(ValueError, match=r"NaN"):
        viewer.draw(panda, np.full(9, np.nan))
    with pytest.raises(ValueError, match=r"\.png"):
        viewer.draw(panda, q, tmp_path / "x.jpg")
    with pytest.raises(ValueError, match=r"animate"):
        viewer.draw(panda, q, tmp_path / "x.gif")
    with pytest.raises(ValueError, match=r"\.gif"):
        viewer.animate(panda, q[None], tmp_path / "x.png")
    with pytest.raises(ValueError, match=r"\(T, 9\)"):
        viewer.animate(panda, q, tmp_path / "x.gif")
    with pytest.raises(ValueError, match="stride"):
        viewer.animate(panda, q[None], tmp_path / "x.gif", stride=0)
    with pytest.raises(KeyError, match="no_such_frame"):
        viewer.animate(panda, q[None], tmp_path / "x.gif", trail="no_such_frame")
    with pytest.raises(ValueError, match="target"):
        viewer.draw(panda, q, target=[1.0, 2.0])
    with pytest.raises(ValueError, match="3D axes"):
        fig = viewer.new_figure((3, 3), 50)
        viewer.draw(panda, q, ax=fig.add_subplot(111))
    assert not (tmp_path / "x.gif").exists() and not (tmp_path / "x.jpg").exists()


def test_free_bodies_are_drawn_without_their_slides(tmp_path):
    """An MJCF free body after the first moving one (three world-axis slides and a ball): no
    segment reaches its slides' bodies, the body itself hangs from nothing; the arm is drawn."""
    m = jaxdyn.load_mjcf(os.path.join(os.path.dirname(__file__), "data", "mjcf", "free_bodies.xml"))
    slides, bodies = viewer.free_parts(m)
    names = m.body_names
    assert {names[b] for b in bodies} == {"box", "rod"} and len(slides) == 6
    _, segs = viewer.skeleton(m, jaxdyn.neutral(m))
    ends = set(segs.reshape(-1).tolist())
    assert not (ends & slides)
    assert [names[int(b)] for a, b in segs if int(a) in bodies] == ["flap"]  # the rod holds its flap
    assert {names.index("link1"), names.index("link2"), names.index("flap")} <= ends
    viewer.draw(m, jaxdyn.neutral(m), path=str(tmp_path / "free.png"))
    assert (tmp_path / "free.png").stat().st_size > 1000
