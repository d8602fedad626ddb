"""Contact forces per point (:meth:`jaxdyn.contact.Contact.point_forces`) and their drawing by
the viewer: the point forces rebuild the body wrenches and the total force, and the pictures
mark the touching points and draw their forces."""

import equinox as eqx
import numpy as np
import pytest

import jaxdyn
from jaxdyn import contact as C
from jaxdyn import geometry, viewer
from jaxdyn.envs.quadruped import SOLO12_FEET, SOLO12_STAND, attach_foot_spheres

_MAGENTA = np.array([216, 27, 96]) / 255.0  # viewer._CONTACT_COLOR


@pytest.fixture(scope="module")
def solo():
    """Solo12 with foot spheres and a box on the world under the front-left foot (one shape
    pair with the world, besides the ground points)."""
    m = attach_foot_spheres(jaxdyn.load_robot("solo12"), SOLO12_FEET, 0.02)
    g = m.geoms
    geoms = geometry.make_geoms(
        type=list(g.type) + [geometry.BOX],
        size=np.concatenate([np.asarray(g.size), [[0.05, 0.05, 0.01]]]),
        body=list(g.body) + [-1],
        pos=np.concatenate([np.asarray(g.pos), [[0.19, 0.15, 0.0]]]),
        dtype=m.dtype,
    )
    return m.replace(geoms=geoms)


H = 0.2415  # base height: the feet 1.4 mm into the ground, the front-left one 11 mm into the box


def _state(model, height):
    q = np.zeros(model.nq)
    q[2], q[3], q[7:] = height, 1.0, SOLO12_STAND
    qd = np.linspace(-0.2, 0.3, model.nv)  # sliding and pressing: friction and damping act
    return q, qd


@eqx.filter_jit
def _forces(model, ct, q, qd):
    return ct.point_forces(model, q, qd), ct.wrenches(model, q, qd), C.total_force(model, q, qd, ct)


def test_point_forces_rebuild_the_wrenches_and_the_total(solo):
    ct = C.Contact()
    q, qd = _state(solo, H)
    pf, w, total = _forces(solo, ct, q, qd)
    depth = np.asarray(pf.depth)
    # four feet on the ground, then the pairs: six foot-foot, four foot-box (with the world:
    # reported on the foot)
    feet = (3, 6, 9, 12)
    assert len(pf.body) == len(depth) == 14
    assert pf.body[:4] == feet and pf.other[:4] == (-1,) * 4
    assert pf.body[-4:] == feet and pf.other[-4:] == (-1,) * 4
    assert np.all(depth[:4] > 0) and depth[-4] > 0 and np.all(depth[4:-4] == 0), depth
    assert np.asarray(pf.force)[-4, 2] > 0  # the box pushes the foot up
    f = np.asarray(pf.force)
    assert np.all(f[depth == 0] == 0.0)
    assert np.all(np.linalg.norm(f[depth > 0], axis=-1) > 0)
    # each force at its point, moved to the body origin in body axes: the wrench of the body
    fk = jaxdyn.forward_kinematics(solo, q)
    R, o = np.asarray(fk.R), np.asarray(fk.p)
    rebuilt = np.zeros((solo.nb, 6))
    for p, fi, b, other in zip(np.asarray(pf.point), f, pf.body, pf.other):
        for body, force in ((b, fi), (other, -fi)):
            if body >= 0:
                rebuilt[body] += np.concatenate([R[body].T @ np.cross(p - o[body], force), R[body].T @ force])
    np.testing.assert_allclose(rebuilt, np.asarray(w), rtol=1e-12, atol=1e-9)
    on_model = (np.asarray(pf.body) >= 0).astype(float) - (np.asarray(pf.other) >= 0)
    np.testing.assert_allclose((on_model[:, None] * f).sum(0), np.asarray(total), rtol=1e-12, atol=1e-9)


def _pixels(path):
    from PIL import Image

    with Image.open(path) as im:
        return np.asarray(im.convert("RGB"), np.float64) / 255.0


def _magenta_share(img):
    return float(np.mean(np.all(np.abs(img - _MAGENTA) < 0.12, axis=-1)))


def test_draw_and_animate_contacts(solo, tmp_path):
    from PIL import Image

    ct = C.Contact()
    q, qd = _state(solo, H)
    viewer.draw(solo, q, tmp_path / "plain.png")
    viewer.draw(solo, q, tmp_path / "contact.png", contact=ct, qd=qd, force_scale=2e-3)
    assert _magenta_share(_pixels(tmp_path / "plain.png")) == 0.0
    assert _magenta_share(_pixels(tmp_path / "contact.png")) > 1e-4
    # the segments drawn are the forces of the touching points, force_scale metres per newton
    points, forces, active, scale, level = viewer._contacts(solo, ct, q[None], qd, None, 2e-3, 0.3, "draw")
    pf = _forces(solo, ct, q, qd)[0]
    np.testing.assert_array_equal(active[0], np.asarray(pf.depth) > 0)
    np.testing.assert_allclose(forces[0], np.asarray(pf.force), rtol=1e-12)
    assert scale == 2e-3 and level == 0.0
    # default scale: the robot's weight as long as half the view
    _, _, _, scale, _ = viewer._contacts(solo, ct, q[None], qd, None, None, 0.3, "draw")
    weight = float(np.sum(np.asarray(solo.mass))) * 9.81
    np.testing.assert_allclose(scale * weight, 0.3, rtol=1e-3)

    # a drop: no contact in the air, contact on landing
    T = 6
    heights = np.linspace(0.40, H, T)
    qs = np.stack([_state(solo, h)[0] for h in heights])
    qds = np.zeros((T, solo.nv))
    viewer.animate(solo, qs, tmp_path / "drop.gif", contact=ct, qds=qds)
    with Image.open(tmp_path / "drop.gif") as im:
        assert im.n_frames == T
        im.seek(0)
        first = np.asarray(im.convert("RGB"), np.float64) / 255.0
        im.seek(T - 1)
        last = np.asarray(im.convert("RGB"), np.float64) / 255.0
    assert _magenta_share(first) < _magenta_share(last)

    with pytest.raises(ValueError, match="'qds'"):
        viewer.animate(solo, qs, tmp_path / "x.gif", contact=ct)
    with pytest.raises(ValueError, match="'qds'"):
        viewer.animate(solo, qs, tmp_path / "x.gif", contact=ct, qds=qds[:-1])
    with pytest.raises(ValueError, match="'qd'"):
        viewer.draw(solo, q, contact=ct, qd=qd[:5])
    with pytest.raises(TypeError, match="Contact"):
        viewer.draw(solo, q, contact="ground", qd=qd)
    with pytest.raises(ValueError, match="force_scale"):
        viewer.draw(solo, q, contact=ct, qd=qd, force_scale=-1.0)
    assert not (tmp_path / "x.gif").exists()
