"""Torsional and rolling friction (MuJoCo ``condim`` 4 and 6; jaxdyn.contact (R1)-(R2)):

* a ball spinning about the vertical on the ground slows at the torsional bound: its spin
  follows the closed-form solution of ``I dw/dt = -mu_s m g w / sqrt(w^2 + eps_w^2)``, in float64
  and float32, and its derivative with respect to ``mu_s`` is that solution's;
* a rolling ball loses angular momentum about its contact point at exactly the rolling bound
  ``mu_r f_n`` (friction and the normal force pass through that point), and keeps it with
  ``condim`` 4 (torsional only);
* both against MuJoCo (elliptic cones, ``impratio`` 10, stored in
  tests/data/mujoco/contact/spin.npz by tests/reference/generate_mujoco_spin.py);
* the joint-space form of the implicit step (``JointSpaceContacts``) with these couples equals
  the body wrenches through RNEA and forward mode, and its convex subproblem's derivative is
  symmetric negative semi-definite with its majorant below it;
* a pair's couple acts on both bodies, equal and opposite; the MJCF loader reads ``condim`` and
  ``friction`` as MuJoCo combines them.
"""

import dataclasses
import os
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.optimize import brentq

import jaxdyn
from jaxdyn import contact as C
from jaxdyn import sim

G = 9.81
R_BALL, M_BALL = 0.05, 1.0
INERTIA = 0.4 * M_BALL * R_BALL**2
DATA = os.path.join(os.path.dirname(__file__), "data")


def _ball(condim, friction, dtype=jnp.float64):
    xml = f"""<mujoco><worldbody>
<body name="ball" pos="0 0 1"><freejoint/><geom type="sphere" size="{R_BALL}" mass="{M_BALL}"
 condim="{condim}" friction="{friction}"/></body></worldbody></mujoco>"""
    return jaxdyn.load_mjcf(xml, dtype=dtype)


def _rest(dtype=jnp.float64):
    d = (M_BALL * G / 1e6) ** (2 / 3)  # the static depth of the default law
    return jnp.array([0.0, 0.0, R_BALL - d, 1.0, 0.0, 0.0, 0.0], dtype), d


def _spin_closed_form(w0, alpha, eps, t):
    """The spin at ``t`` of ``dw/dt = -alpha w / sqrt(w^2 + eps^2)`` from ``w0 > 0``:
    ``t = (F(w0) - F(w)) / alpha`` with ``F(w) = sqrt(w^2 + eps^2) - eps ln((eps + sqrt(w^2 +
    eps^2)) / w)``, solved for ``w``."""

    def F(w):
        s = np.sqrt(w * w + eps * eps)
        return s - eps * np.log((eps + s) / w)

    return brentq(lambda w: (F(w0) - F(w)) / alpha - t, 1e-300, w0, xtol=1e-15, rtol=1e-15)


@jax.jit
def _spin_run(model, q0, mu_s, w0):
    """500 steps of 1 ms from rest on the ground spinning at ``w0`` about the vertical, with the
    ball's torsional friction ``mu_s`` (a leaf of the model, differentiated below)."""
    model = dataclasses.replace(
        model, geoms=dataclasses.replace(model.geoms, friction=model.geoms.friction.at[0, 1].set(mu_s))
    )
    qd0 = jnp.zeros(6, q0.dtype).at[2].set(w0)
    tr = sim.rollout(model, q0, qd0, jnp.zeros((500, 6), q0.dtype), 1e-3, contact=C.Contact())
    return tr.qd, tr.nonfinite_step


def _spin_reference(mu_s=1e-3, t=1e-3 * np.arange(1, 501)):
    eps = float(C.ContactParams().spin_velocity)
    return np.array([_spin_closed_form(10.0, mu_s * M_BALL * G / INERTIA, eps, ti) for ti in t])


def test_spin_slows_at_the_torsional_bound():
    """``condim`` 4, ``mu_s = 1 mm``: the ball's spin at every step follows the closed form with
    ``alpha = mu_s m g / I`` (the normal force is the weight at rest) to 2e-6 rad/s (the step's
    backward Euler in ``w``) while it loses half its spin; the other velocities stay zero."""
    q0, _ = _rest()
    ref = _spin_reference()
    qd, bad = _spin_run(_ball(4, "1 0.001 0"), q0, 1e-3, 10.0)
    assert int(bad) == -1
    np.testing.assert_allclose(np.asarray(qd[1:, 2]), ref, rtol=0, atol=2e-6)
    np.testing.assert_allclose(np.asarray(qd[:, [0, 1, 3, 4, 5]]), 0.0, atol=1e-12)
    assert ref[-1] < 5.2  # half the spin is gone: the test sees the law


def test_spin_in_float32_and_its_gradient():
    """The same spin in float32 to 2e-4 relative; ``d w(T) / d mu_s`` through the rollout
    equals the closed form's (its central difference, 1e-5 relative)."""
    ref = _spin_reference()
    q32, _ = _rest(jnp.float32)
    qd32, bad = _spin_run(_ball(4, "1 0.001 0", jnp.float32), q32, jnp.float32(1e-3), jnp.float32(10.0))
    assert int(bad) == -1 and qd32.dtype == jnp.float32
    np.testing.assert_allclose(np.asarray(qd32[1:, 2]), ref, rtol=2e-4)

    q0, _ = _rest()
    grad = jax.grad(lambda mu: _spin_run(_ball(4, "1 0.001 0"), q0, mu, 10.0)[0][-1, 2])(1e-3)
    h = 1e-7
    fd = (_spin_reference(1e-3 + h, [0.5])[0] - _spin_reference(1e-3 - h, [0.5])[0]) / (2 * h)
    np.testing.assert_allclose(float(grad), fd, rtol=1e-5)


@pytest.mark.parametrize("condim", [4, 6])
def test_rolling_ball_loses_angular_momentum_about_its_contact_at_the_rolling_bound(condim):
    """A ball at rest depth rolling at 1 m/s with ``friction="1 0.002 0.002"``: friction and the
    normal force pass through the contact point, so the angular momentum about it,
    ``L = I w_y + m z v_x``, changes only by the rolling couple: with ``condim`` 6 by
    ``-h mu_r m g w / sqrt(w^2 + eps_w^2)`` each step (1e-10 relative), with ``condim`` 4 not at
    all (a rolling ball has no spin about the normal)."""
    model = _ball(condim, "1 0.002 0.002")
    q0, d = _rest()
    R = R_BALL - d
    qd0 = jnp.array([0.0, 1.0 / R, 0.0, 1.0, 0.0, 0.0])
    tr = jax.jit(lambda: sim.rollout(model, q0, qd0, jnp.zeros((300, 6)), 1e-3, contact=C.Contact()))()
    assert int(tr.nonfinite_step) == -1
    Rot = np.asarray(jax.vmap(jaxdyn.spatial.quat_to_rotation)(tr.q[:, 3:7]))
    v = np.einsum("tij,tj->ti", Rot, np.asarray(tr.qd[:, 3:]))
    w = np.einsum("tij,tj->ti", Rot, np.asarray(tr.qd[:, :3]))
    L = INERTIA * w[:, 1] + M_BALL * np.asarray(tr.q[:, 2]) * v[:, 0]
    L0 = M_BALL * R * 1.0 + INERTIA / R
    if condim == 4:
        np.testing.assert_allclose(L, L0, rtol=1e-12)
        return
    eps = float(C.ContactParams().spin_velocity)
    couple = 0.002 * M_BALL * G * w[1:, 1] / np.sqrt(w[1:, 1] ** 2 + eps**2)  # at each step's end velocity
    loss = np.concatenate([[0.0], np.cumsum(1e-3 * couple)])
    np.testing.assert_allclose(L, L0 - loss, rtol=1e-10)
    assert L0 - L[-1] > 0.05 * 0.002 * M_BALL * G * 0.3  # the law acted
    np.testing.assert_allclose(v[-1, 0], 1.0 - 0.002 * G * 0.3 * R / (INERTIA / M_BALL + R * R), rtol=1e-3)


def test_spin_and_roll_as_in_mujoco():
    """Stored MuJoCo runs (tests/reference/generate_mujoco_spin.py: elliptic cones,
    ``impratio`` 10, 1 ms, a 5 cm 1 kg ball on a plane, both with the same ``condim`` and
    ``friction``): the spin 0.5 s after starting at 10 rad/s (``condim`` 4, ``mu_s = 1 mm``) and
    the speed 0.5 s after starting to roll at 1 m/s (``condim`` 6, ``mu_r = 1 mm``). jaxdyn runs
    the same scene as MJCF with ``Ground.from_model`` (the plane's friction combined with the
    ball's) and a stiff ground (``k = 1e9``, so its rolling radius is MuJoCo's to 4e-6 m) with
    ``eps = 1 mm/s`` (no creep to speak of): the loss of spin and of speed equal MuJoCo's to
    0.2 % (measured 0.09 % and 0.05 %; MuJoCo's soft constraints are not exactly at the bound)."""
    ref = np.load(os.path.join(DATA, "mujoco", "contact", "spin.npz"))
    scene = str(ref["xml"])
    model = jaxdyn.load_mjcf(scene)
    ct = C.Contact(C.Ground.from_model(model), C.ContactParams(stiffness=1e9, friction_velocity=1e-3))
    d = (M_BALL * G / 1e9) ** (2 / 3)
    q0 = jnp.array([0.0, 0.0, R_BALL - d, 1.0, 0.0, 0.0, 0.0])

    @jax.jit
    def run(model, qd0):
        return sim.rollout(model, q0, qd0, jnp.zeros((500, 6)), 1e-3, contact=ct).qd

    spin = jaxdyn.load_mjcf(scene.replace('condim="6"', 'condim="4"').replace('"1 0 0.001"', '"1 0.001 0"'))
    qd = run(spin, jnp.array([0.0, 0, 10.0, 0, 0, 0]))
    np.testing.assert_allclose(10.0 - float(qd[-1, 2]), 10.0 - float(ref["spin"][-1]), rtol=2e-3)
    qd = run(model, jnp.array([0.0, 1.0 / (R_BALL - d), 0, 1.0, 0, 0]))
    assert float(ref["speed"][-1]) < 0.94
    speed = float(jnp.linalg.norm(qd[-1, 3:]))  # body axes: the same length as in the world's
    np.testing.assert_allclose(1.0 - speed, 1.0 - float(ref["speed"][-1]), rtol=2e-3)


def _with_angular(model):
    """``model`` with ``condim`` 6 on every other geom and torsional and rolling friction of
    2 cm and 1 cm, so that the couples are of the size of the forces' moments."""
    g = model.geoms
    friction = g.friction.at[:, 1].set(0.02).at[:, 2].set(0.01)
    geoms = dataclasses.replace(g, condim=tuple(6 if i % 2 else 3 for i in range(g.ng)), friction=friction)
    return dataclasses.replace(model, geoms=geoms)


def _models():
    solo = jaxdyn.load_mjcf(os.path.join(DATA, "mujoco", "contact", "solo12.xml"))
    ref = np.load(os.path.join(DATA, "mujoco", "contact", "reference.npz"))
    pairs = jaxdyn.load_mjcf(os.path.join(DATA, "mjcf", "contact_pairs.xml"))
    pref = np.load(os.path.join(DATA, "mujoco", "contact", "pairs.npz"))
    order = np.argsort(np.sum(pref["dist"] < 0, 1))[::-1]
    solo = dataclasses.replace(solo, geoms=dataclasses.replace(solo.geoms, condim=(6,) * solo.geoms.ng))
    solo = dataclasses.replace(
        solo, geoms=dataclasses.replace(solo.geoms, friction=solo.geoms.friction.at[:, 1:].set(0.02))
    )
    return {
        "solo12": (solo, jnp.asarray(ref["solo12_qpos0"]).at[2].add(-0.0115)),
        "pairs": (_with_angular(pairs), jnp.asarray(pref["qpos"][order[0]])),
    }


@pytest.mark.parametrize("friction", ["regularised", "spring"])
@pytest.mark.parametrize("which", ["pairs", "solo12"])
def test_joint_space_form_with_couples_equals_the_wrenches_and_forward_mode(which, friction):
    """``Contact.joint_space`` with torsional and rolling friction (Solo-12 with ``condim`` 6 feet
    pressed 1.5 mm into the ground; the shape-pair model with ``condim`` 6 on every other geom at
    its most penetrating MuJoCo pose), random velocities, both friction laws: its force equals
    :func:`generalized_forces` (body wrenches with the couples, then RNEA) to 1e-12, its
    velocity derivative forward mode of that to 1e-12 (also with the step's lookahead, against
    forward mode of its own force); the convex subproblem (friction bounds frozen) has a
    symmetric negative semi-definite derivative equal to forward mode, with the majorant
    ``newton_matrix`` below it; the couples are a sizeable part of the force."""
    rng = np.random.default_rng(5)
    h = 5e-3
    model, q = _models()[which]
    ct = C.Contact(C.Ground.from_model(model), friction=friction)
    s0 = ct.init_state(model)
    state = None if s0 is None else jax.tree_util.tree_map(lambda u: 1e-3 * rng.normal(size=u.shape), s0)

    @jax.jit
    def parts(v, fbar):
        js = ct.joint_space(model, q, state, h)
        ahead = ct.joint_space(model, q, state, h, lookahead=h)
        tau = ct.generalized_forces(model, q, v, state, h)
        D_ref = jax.jacfwd(lambda w: ct.generalized_forces(model, q, w, state, h))(v)
        couples = jnp.einsum("min,mi->n", js.A, js.torques(v))
        return (
            (js.forces(v), tau),
            (js.velocity_derivative(v), D_ref),
            (ahead.velocity_derivative(v), jax.jacfwd(ahead.forces)(v)),
            (js.velocity_derivative(v, fbar), jax.jacfwd(lambda w: js.forces(w, fbar))(v)),
            js.newton_matrix(v, fbar),
            couples,
        )

    m = ct.joint_space(model, q, state, h).depth.shape[0]
    v = jnp.asarray(rng.normal(0, 0.3, model.nv))
    fbar = jnp.asarray(rng.uniform(0.0, 20.0, m))
    (f, f_ref), (D, D_ref), (Da, Da_ref), (Dc, Dc_ref), Db, couples = jax.tree_util.tree_map(np.asarray, parts(v, fbar))
    np.testing.assert_allclose(f, f_ref, rtol=0, atol=1e-12 * np.abs(f_ref).max())
    assert np.abs(couples).max() > 1e-3 * np.abs(f_ref).max()
    for a, b in ((D, D_ref), (Da, Da_ref), (Dc, Dc_ref)):
        assert np.abs(b).max() > 0
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-12 * np.abs(b).max())
    scale = np.abs(Dc).max()
    np.testing.assert_allclose(Dc, Dc.T, atol=1e-10 * scale)
    assert np.linalg.eigvalsh(Dc).max() < 1e-9 * scale
    np.testing.assert_allclose(Db, Db.T, atol=1e-10 * scale)
    assert np.linalg.eigvalsh(Dc - Db).min() > -1e-9 * scale


def test_a_pairs_couple_acts_on_both_bodies_equal_and_opposite():
    """The shape-pair model with ``condim`` 6 on every other geom, without the ground, at its
    MuJoCo poses with random velocities: the contact wrenches, moved to the world origin in world
    axes, sum to zero (each pair's force and couple act on both bodies, opposite), where the
    couples alone do not (pairs with the world excluded: the world takes no wrench here);
    ``PointForces.torque`` is zero for the contacts of dimension 3."""
    model = _with_angular(jaxdyn.load_mjcf(os.path.join(DATA, "mjcf", "contact_pairs.xml")))
    ref = np.load(os.path.join(DATA, "mujoco", "contact", "pairs.npz"))
    ct = C.Contact(collide_ground=False, exclude=[("world", b) for b in model.body_names])
    rng = np.random.default_rng(2)

    @jax.jit
    def net(q, v):
        w = ct.wrenches(model, q, v)
        X = jaxdyn.forward_kinematics(model, q)
        n = jnp.einsum("bij,bj->bi", X.R, w[:, 3:])  # world force
        m = jnp.einsum("bij,bj->bi", X.R, w[:, :3]) + jnp.cross(X.p, n)  # world moment about the origin
        return jnp.sum(n, 0), jnp.sum(m, 0), ct.point_forces(model, q, v)

    checked = 0
    table = C.collision_pairs(model, ct.exclude)
    dims = np.array([max(model.geoms.condim[i], model.geoms.condim[j]) for i, j in table.pairs])
    low = np.repeat(dims < 4, table.rows)
    for i in range(len(ref["qpos"])):
        q, v = jnp.asarray(ref["qpos"][i]), jnp.asarray(rng.normal(0, 1.0, model.nv))
        f, m, pf = net(q, v)
        tq = np.asarray(pf.torque)
        np.testing.assert_allclose(np.asarray(f), 0.0, atol=1e-9)
        np.testing.assert_allclose(np.asarray(m), 0.0, atol=1e-9)
        assert np.all(tq[low] == 0.0)
        checked += int(np.abs(tq).max() > 1e-3)
    assert checked >= 3


def test_mjcf_condim_and_friction_as_mujoco_combines_them():
    """MJCF ``condim`` 4 and 6 load without a warning; a geom's couple takes the larger
    torsional and rolling friction of it and the plane, the higher priority's where they differ,
    and none below ``condim`` 4 (torsional) or 6 (rolling); an explicit ``<pair>`` its own
    ``condim`` and ``friction``."""
    xml = """<mujoco><worldbody><geom name="floor" type="plane" size="0 0 1" friction="1 0.003 0.004" {floor}/>
<body name="ball" pos="0 0 1"><freejoint/><geom name="b" type="sphere" size="0.05" mass="1" {ball}/></body>
</worldbody></mujoco>"""
    q = jnp.array([0.0, 0.0, 0.049, 1.0, 0.0, 0.0, 0.0])
    qd = jnp.array([3.0, 2.0, 1.0, 0.0, 0.0, 0.0])
    cases = [  # floor, ball attributes -> (torsional, rolling)
        ("", 'condim="3" friction="1 0.01 0.02"', (0.0, 0.0)),
        ("", 'condim="4" friction="1 0.01 0.002"', (0.01, 0.0)),
        ("", 'condim="6" friction="1 0.001 0.002"', (0.003, 0.004)),
        ('condim="6"', 'friction="1 0.001 0.02"', (0.003, 0.02)),
        ('condim="6"', 'priority="1" friction="1 0.001 0.002"', (0.0, 0.0)),  # the ball's condim 3
        ('condim="6" priority="1"', 'friction="1 0.01 0.02"', (0.003, 0.004)),
    ]
    pair = xml.format(floor="{floor}", ball="{ball}").replace(
        "</worldbody>", '</worldbody><contact><pair geom1="floor" geom2="b" {pair}/></contact>'
    )
    cases += [  # an explicit pair: its own condim and friction, whatever the geoms'
        (pair.format(floor="", ball='condim="6"', pair='condim="4" friction="1 1 0.01 0.002 0.002"'), (0.01, 0.0)),
        (pair.format(floor="", ball="", pair='condim="6" friction="1 1 0.01 0.002 0.002"'), (0.01, 0.002)),
        (pair.format(floor="", ball='condim="6"', pair=""), (0.0, 0.0)),  # the pair's default condim 3
    ]
    scenes = [(xml.format(floor=c[0], ball=c[1]), c[2]) if len(c) == 3 else c for c in cases]
    for scene, (mu_s, mu_r) in scenes:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            model = jaxdyn.load_mjcf(scene)
        ct = C.Contact(C.Ground.from_model(model))
        pf = ct.point_forces(model, q, qd)
        fn = float(pf.force[0, 2])
        assert fn > 1.0
        eps = float(ct.params.spin_velocity)
        w = np.array([3.0, 2.0, 1.0])
        want = -mu_s * fn * w[2] / np.hypot(w[2], eps) * np.array([0, 0, 1.0])
        want -= mu_r * fn * np.array([3.0, 2.0, 0.0]) / np.sqrt(13 + eps**2)
        np.testing.assert_allclose(np.asarray(pf.torque[0]), want, rtol=1e-12, atol=1e-15, err_msg=scene)
