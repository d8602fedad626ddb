"""Stick-capable friction (``Contact(friction="spring")``, jaxdyn.contact (S1)-(S6)): a block on
a slope below the friction angle stays put at the bristles' static deflection (where the
regularised law creeps), slides above it at ``g (sin - mu cos)``, at 1, 2 and 5 ms; the energy
(mechanical + Hunt-Crossley + bristle) never grows, in continuous time and step by step; the
elongation relaxes out of contact; finite derivatives at zero velocity, penetration and
elongation, and gradients through a rollout against central differences; shape pairs; float32;
a quadruped under PD control that comes to rest on a slope where the regularised law creeps.

Integrator: the default ``"implicit_euler"`` (the only one that carries the contact state).
"""

import functools
import os

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxdyn
from jaxdyn import configuration, sim
from jaxdyn import contact as C

G = 9.81
KT = 1e4  # ContactParams' default tangential stiffness [N/m]
THETA = np.arctan(0.5)  # slope: tan(theta) = 0.5
STEPS = 2000

BOX = """<mujoco><worldbody>
<body name="block" pos="0 0 1"><freejoint/>
<geom type="box" size="0.1 0.1 0.05" mass="1" friction="MU 0.005 0.0001"/></body>
</worldbody></mujoco>"""

# three spheres on one body (a tripod: it cannot roll) on a tilted box on the world
TRIPOD = """<mujoco><worldbody>
<geom type="box" size="1 1 0.1" pos="POS" euler="0 THETA 0"/>
<body name="tripod" pos="0 0 1"><freejoint/>
<geom type="sphere" size="0.03" pos="0.1 0 0" mass="0.5"/>
<geom type="sphere" size="0.03" pos="-0.1 0.1 0" mass="0.25"/>
<geom type="sphere" size="0.03" pos="-0.1 -0.1 0" mass="0.25"/>
</body></worldbody></mujoco>"""


def _slope(theta):
    n = np.array([np.sin(theta), 0.0, np.cos(theta)])  # ground normal: z turned by theta about y
    t = np.array([np.cos(theta), 0.0, -np.sin(theta)])  # downhill
    return n, t


def _block(mu, dtype=jnp.float64, theta=THETA, k=1e6, p=1.5):
    """The 1 kg block (8 corners, 4 touching) on the slope at its Hunt-Crossley rest depth."""
    model = jaxdyn.load_mjcf(BOX.replace("MU", repr(mu)), dtype=dtype)
    n, t = _slope(theta)
    pen = (G * np.cos(theta) / 4 / k) ** (1 / p)
    q0 = jnp.array([*(n * (0.05 - pen)), np.cos(theta / 2), 0.0, np.sin(theta / 2), 0.0], dtype)
    return model, C.Ground(normal=n, height=0.0), q0, jnp.asarray(t, dtype)


def _elastic_potential(model, q, ct):
    """``sum k d^(p+1) / (p+1)`` over the ground points: the Hunt-Crossley spring's energy."""
    cp = C.contact_points(model, q, jnp.zeros(model.nv, model.dtype), ct.ground)
    p = ct.params.exponent
    return jnp.sum(ct.params.stiffness * cp.depth ** (p + 1) / (p + 1))


def _total_energy(model, q, qd, ct, state):
    return sim.energy(model, q, qd) + _elastic_potential(model, q, ct) + ct.spring_energy(state)


@functools.cache
def _downhill():
    """One compiled program per dtype and friction law: ``STEPS`` steps of a traced ``dt``;
    returns the downhill position of the centre, the total energy at every step, the final
    elongations and the first non-finite step."""

    @jax.jit
    def run(model, ct, q0, qd0, t, dt):
        tr = sim.rollout(model, q0, qd0, jnp.zeros((STEPS, 6), model.dtype), dt, contact=ct)
        states = tr.contact_state if ct.stateful else None
        energy = jax.vmap(lambda q, qd, s: _total_energy(model, q, qd, ct, s))(tr.q, tr.qd, states)
        final = None if states is None else states.ground[-1]
        return tr.q[:, :3] @ t, energy, final, tr.nonfinite_step

    return run


@pytest.mark.parametrize("dt", [1e-3, 2e-3, 5e-3])
def test_block_stays_put_below_the_friction_angle_and_slides_above(dt):
    """tan(theta) = 0.5 < mu = 1: after 2000 steps (2 s at 1 ms) the block has moved by the
    bristles' static deflection m g sin(theta) / (4 k_t) = 0.110 mm (plus the pitch of the
    unevenly loaded corners: 0.124 mm measured) and not at all over the second half (the
    regularised law at the former default eps, 0.02 m/s, creeps at eps r / sqrt(1 - r^2) =
    11.5 mm/s there, 23 mm over 2 s); each touching corner's elongation is exactly the static deflection. mu = 0.3 <
    tan(theta): it slides at g (sin(theta) - mu cos(theta)) (1 %). The total energy, bristles
    included, never grows from one step to the next."""
    run = _downhill()
    model, ground, q0, t = _block(1.0)
    ct = C.Contact(ground, friction="spring")
    x, energy, u, bad = (np.asarray(a) for a in run(model, ct, q0, jnp.zeros(6), t, dt))
    assert int(bad) == -1
    static = G * np.sin(THETA) / (4 * KT)  # 0.1097 mm
    moved = np.abs(x - x[0]).max()
    assert static <= moved < 1.2 * static, (moved, static)
    assert abs(x[-1] - x[STEPS // 2]) < 1e-12  # no creep: zero velocity (round-off)
    corners = np.linalg.norm(u, axis=-1)
    touching = corners > 0
    assert touching.sum() == 4
    np.testing.assert_allclose(corners[touching], static, rtol=1e-6)
    assert np.diff(energy).max() < 1e-9, np.diff(energy).max()

    if dt == 1e-3:  # the regularised law with a wide regularisation creeps under the same load
        xr, *_, bad = run(model, C.Contact(ground, C.ContactParams(friction_velocity=0.02)), q0, jnp.zeros(6), t, dt)
        xr = np.asarray(xr)
        creep = (xr[-1] - xr[STEPS // 2]) / (STEPS // 2 * dt)
        r = np.tan(THETA)
        assert abs(creep / (0.02 * r / np.sqrt(1 - r * r)) - 1) < 1e-3  # 11.547 mm/s
        assert xr[-1] - xr[0] > 150 * moved

    model, ground, q0, t = _block(0.3)
    ct = C.Contact(ground, friction="spring")
    x, energy, _, bad = (np.asarray(a) for a in run(model, ct, q0, jnp.array([0.0, 0, 0, 0.5, 0, 0]), t, dt))
    assert int(bad) == -1
    tt = np.arange(STEPS + 1) * dt
    acc = 2 * np.polyfit(tt[100:], x[100:], 2)[0]
    acc_ref = G * (np.sin(THETA) - 0.3 * np.cos(THETA))  # 1.7549 m/s^2
    assert abs(acc / acc_ref - 1) < 1e-2, (acc, acc_ref)
    assert np.diff(energy).max() < 0.0


def test_block_stays_put_in_float32():
    """float32, 1 ms: the block holds (moved less than 1.5 times the static deflection, no drift
    beyond 1 um over the last second) and slides at g (sin - mu cos) to 1 %."""
    run = _downhill()
    model, ground, q0, t = _block(1.0, jnp.float32)
    ct = C.Contact(ground, friction="spring")
    x, _, u, bad = (np.asarray(a) for a in run(model, ct, q0, jnp.zeros(6, jnp.float32), t, 1e-3))
    assert x.dtype == np.float32 and u.dtype == np.float32
    assert int(bad) == -1
    static = G * np.sin(THETA) / (4 * KT)
    assert np.abs(x - x[0]).max() < 1.5 * static
    assert abs(x[-1] - x[STEPS // 2]) < 1e-6
    model, ground, q0, t = _block(0.3, jnp.float32)
    ct = C.Contact(ground, friction="spring")
    x, _, _, bad = run(model, ct, q0, jnp.array([0.0, 0, 0, 0.5, 0, 0], jnp.float32), t, 1e-3)
    x = np.asarray(x, np.float64)
    assert int(bad) == -1
    tt = np.arange(STEPS + 1) * 1e-3
    acc = 2 * np.polyfit(tt[100:], x[100:], 2)[0]
    assert abs(acc / (G * (np.sin(THETA) - 0.3 * np.cos(THETA))) - 1) < 1e-2


def _energy_rate(model, q, qd, state, ct):
    """Exact ``dE/dt`` along the continuous dynamics (``h = 0`` in (S2), (S4)):
    ``q (+) t qd``, ``qd + t qdd``, ``u + t du/dt``."""
    z = jnp.zeros(model.nv, model.dtype)
    qdd = sim.forward_dynamics(model, q, qd, z, contact=ct, contact_state=state)
    rate = ct.state_rate(model, q, qd, state)

    def E(t):
        s = jax.tree_util.tree_map(lambda u, r: u + t * r, state, rate)
        qt = configuration.integrate(model, q, qd, t)
        return _total_energy(model, qt, qd + t * qdd, ct, s)

    return jax.jvp(E, (jnp.zeros((), model.dtype),), (jnp.ones((), model.dtype),))[1]


def test_never_injects_energy_and_relaxes_out_of_contact():
    """A block thrown spinning onto the slope (mu = 1: it lands, turns over onto another face,
    bounces on its corners, slides and comes to rest, stuck): at every state of the 1 s rollout
    at 1 ms the exact dE/dt of the continuous law, bristle energy included, is never positive
    (S6), and the run dissipates.
    Corners in the air carry no force and their elongation decays by b_t / (b_t + h k_t) per
    step (S5)."""
    model, ground, _, _ = _block(1.0)
    ct = C.Contact(ground, friction="spring")
    n, _ = _slope(THETA)
    q0 = jnp.array([*(0.15 * n), np.cos(0.3), np.sin(0.3), 0.0, 0.0])
    qd0 = jnp.array([8.0, -3.0, 2.0, 1.5, 0.5, -1.0])  # turns over onto another face

    @jax.jit
    def rates(q0, qd0):
        tr = sim.rollout(model, q0, qd0, jnp.zeros((1000, 6)), 1e-3, contact=ct)
        s = tr.contact_state
        p = jax.vmap(lambda q, qd, u: _energy_rate(model, q, qd, u, ct))(tr.q, tr.qd, s)
        cp = jax.vmap(lambda q: C.contact_points(model, q, jnp.zeros(6), ground).depth)(tr.q)
        return p, cp, s.ground, jnp.abs(tr.qd[-1]).max(), tr.nonfinite_step

    p, depth, u, speed, bad = (np.asarray(a) for a in rates(q0, qd0))
    assert int(bad) == -1
    assert speed < 1e-3  # at rest on the slope at the end
    assert p.max() < 1e-9, p.max()
    assert p.min() < -1.0
    touched = depth > 0
    assert touched.any(0).sum() >= 6  # most corners land at some time
    # a corner in the air (at the start of two consecutive steps): decays by b / (b + h k)
    air = ~touched[:-1] & ~touched[1:]
    norm = np.linalg.norm(u, axis=-1)
    decay = 100.0 / (100.0 + 1e-3 * KT)
    i, j = np.nonzero(air & (norm[:-1] > 1e-6))
    assert len(i) > 10
    np.testing.assert_allclose(norm[i + 1, j], decay * norm[i, j], rtol=1e-9)


def test_finite_derivatives_at_the_special_points_and_no_force_out_of_contact():
    """Derivatives of the wrenches and of the elongation update w.r.t. the contact (ground, law
    parameters), q, qd and the elongation are finite at exact touch, zero velocity,
    zero elongation (stick at f_s = 0), and out of contact with or without elongation; out of
    contact the friction and its velocity derivative (used by the implicit step) are zero."""
    model, _, _, _ = _block(1.0)
    ct = C.Contact(friction="spring")  # flat ground
    z0 = 0.05  # the bottom corners exactly on the ground

    def q_at(z):
        return jnp.array([0.0, 0.0, z, 1.0, 0.0, 0.0, 0.0])

    def scalar(ct, q, qd, u, dt):
        w = ct.wrenches(model, q, qd, u, dt)
        s1 = ct.update_state(model, q, qd, u, dt)
        return jnp.sum(w * jnp.arange(1.0, 7.0)) + jnp.sum(s1.ground * jnp.arange(1.0, 4.0))

    grad = jax.jit(jax.grad(scalar, argnums=(0, 1, 2, 3)))
    u0 = ct.init_state(model)
    assert u0.ground.shape == (8, 3) and u0.pairs.shape == (0, 3)
    u1 = C.ContactState(u0.ground.at[:, 0].set(1e-4), u0.pairs)
    zero = jnp.zeros(6)
    slide = jnp.array([0.0, 0.0, 0.0, 0.1, 0.0, -0.1])
    for z in (z0, z0 - 1e-4, z0 + 1e-3):  # touch, in contact, in the air
        for qd in (zero, slide):
            for u in (u0, u1):
                for dt in (0.0, 1e-3):
                    g = grad(ct, q_at(z), qd, u, dt)
                    for leaf in jax.tree_util.tree_leaves(g):
                        assert np.all(np.isfinite(np.asarray(leaf))), (z, qd, u, dt)
    D = jax.jit(lambda q, u: ct.velocity_derivative(model, q, zero, u, 1e-3))
    for u in (u0, u1):
        assert np.all(np.asarray(D(q_at(z0 + 1e-3), u)) == 0.0)  # in the air
        assert np.all(np.asarray(D(q_at(z0), u)) == 0.0)  # at exact touch, f_n = 0
        assert np.abs(np.asarray(D(q_at(z0 - 1e-4), u))).max() > 100.0  # in contact: b_t + h k_t
    w = np.asarray(ct.wrenches(model, q_at(z0 + 1e-3), slide, u1))
    assert np.all(w == 0.0)


def test_gradient_through_a_sticking_rollout_matches_central_differences():
    """d(downhill position after 0.2 s)/d(k_t) for the block held on the slope after a push
    (stick throughout: a smooth segment), forward mode, against central differences."""
    model, ground, q0, t = _block(1.0)

    @jax.jit
    def final(kt, v0):
        params = eqx.tree_at(lambda p: p.tangential_stiffness, C.ContactParams(), kt)
        ct = C.Contact(ground, params, friction="spring")
        qd0 = jnp.zeros(6).at[3].set(v0)
        tr = sim.rollout(model, q0, qd0, jnp.zeros((200, 6)), 1e-3, contact=ct)
        return tr.q[-1, :3] @ t

    kt, v0 = 1e4, 0.01
    g = jax.jit(lambda k: jax.jvp(lambda k: final(k, v0), (k,), (jnp.ones(()),))[1])(kt)
    hk = 1.0
    fd = (final(kt + hk, v0) - final(kt - hk, v0)) / (2 * hk)
    assert np.isfinite(g) and float(g) < 0  # stiffer: less deflection
    np.testing.assert_allclose(float(g), float(fd), rtol=1e-5)
    assert final(kt, v0) > final(kt, 0.0)  # pushed downhill: held further down


def test_shape_pairs_hold_a_tripod_on_a_tilted_box():
    """Pair contacts (sphere-box) carry the bristle too: a three-sphere tripod on a box on the
    world tilted by theta (tan = 0.5 < mu = 1) holds with zero drift over the second of two
    seconds (the regularised law creeps there at 11.5 mm/s, docs/contact.md)."""
    n, t = _slope(THETA)
    xml = TRIPOD.replace("THETA", repr(float(np.degrees(THETA)))).replace(
        "POS", " ".join(f"{x:.17g}" for x in -0.1 * n)
    )
    model = jaxdyn.load_mjcf(xml)  # the box's top face: the plane n . x = 0
    r, k = 0.03, 1e6
    pen = (G * np.cos(THETA) / 4 / k) ** (2 / 3)  # the lighter feet's depth; the start settles
    q0 = jnp.array([*(n * (r - pen)), np.cos(THETA / 2), 0.0, np.sin(THETA / 2), 0.0])

    @jax.jit
    def run(ct):
        tr = sim.rollout(model, q0, jnp.zeros(6), jnp.zeros((STEPS, 6)), 1e-3, contact=ct)
        return tr.q[:, :3] @ t, tr.nonfinite_step

    spring = C.Contact(collide_ground=False, friction="spring")
    assert spring.init_state(model).pairs.shape == (3, 3)
    x, bad = (np.asarray(a) for a in run(spring))
    assert int(bad) == -1
    assert abs(x[-1] - x[STEPS // 2]) < 1e-9
    assert np.abs(x - x[0]).max() < 2 * G * np.sin(THETA) / (3 * KT)


def test_step_and_rollout_carry_the_state_only_for_spring_friction():
    """``sim.step`` returns ``(q, qd)`` for the regularised law (unchanged) and ``(q, qd, state)``
    for ``friction="spring"`` (``contact_state=None``: relaxed); the rollout's states are the
    steps' states; integrators other than "implicit_euler" refuse a contact with state; an
    unknown law is refused."""
    model, ground, q0, _ = _block(1.0)
    tau, z = jnp.zeros(6), jnp.zeros(6)
    regular = C.Contact(ground)
    assert len(jax.eval_shape(lambda q: sim.step(model, q, z, tau, 1e-3, contact=regular), q0)) == 2
    none = jax.eval_shape(lambda q: sim.rollout(model, q, z, jnp.zeros((2, 6)), 1e-3, contact=regular), q0)
    assert none.contact_state is None
    ct = C.Contact(ground, friction="spring")
    relaxed = jax.eval_shape(lambda q: sim.step(model, q, z, tau, 1e-3, contact=ct), q0)
    assert len(relaxed) == 3 and relaxed[2].ground.shape == (8, 3)

    @jax.jit
    def one(q0, s0):
        q1, _, s1 = sim.step(model, q0, z, tau, 1e-3, contact=ct, contact_state=s0)
        tr = sim.rollout(model, q0, z, jnp.zeros((1, 6)), 1e-3, contact=ct, contact_state=s0)
        return q1, s1, tr

    s0 = ct.init_state(model)
    s0 = C.ContactState(s0.ground.at[:, 1].set(1e-5), s0.pairs)  # loaded across the slope
    q1, s1, tr = one(q0, s0)
    assert tr.contact_state.ground.shape == (2, 8, 3)
    np.testing.assert_array_equal(np.asarray(tr.contact_state.ground[0]), np.asarray(s0.ground))
    assert np.abs(np.asarray(s1.ground[:, 0])).max() > 0  # the corners' bristles loaded downhill
    np.testing.assert_allclose(np.asarray(tr.contact_state.ground[1]), np.asarray(s1.ground), atol=1e-15)
    np.testing.assert_allclose(np.asarray(tr.q[1]), np.asarray(q1), atol=1e-15)
    for integrator in ("rk4", "semi_implicit_euler", "variational"):
        with pytest.raises(ValueError, match="implicit_euler|variational"):
            sim.step(model, q0, z, tau, 1e-3, integrator, contact=ct)
        with pytest.raises(ValueError, match="implicit_euler|variational"):
            sim.rollout(model, q0, z, jnp.zeros((2, 6)), 1e-3, integrator=integrator, contact=ct)
    with pytest.raises(ValueError, match="friction"):
        C.Contact(friction="stribeck")


def _turn_about_y(theta, q):
    """A free-base configuration turned by ``theta`` about the world y axis through the origin
    (position and orientation), joints unchanged: on the ground turned the same way, the robot
    touches it exactly as before."""
    c, s = np.cos(theta), np.sin(theta)
    Ry = np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]])
    w0, x0, y0, z0 = np.cos(theta / 2), 0.0, np.sin(theta / 2), 0.0
    w1, x1, y1, z1 = q[3:7]
    quat = [
        w0 * w1 - x0 * x1 - y0 * y1 - z0 * z1,
        w0 * x1 + x0 * w1 + y0 * z1 - z0 * y1,
        w0 * y1 - x0 * z1 + y0 * w1 + z0 * x1,
        w0 * z1 + x0 * y1 - y0 * x1 + z0 * w1,
    ]
    return np.concatenate([Ry @ q[:3], quat, q[7:]])


def test_quadruped_stands_still_on_a_slope():
    """Solo-12 (tests/data/mujoco/contact/solo12.xml) under the PD of the MuJoCo comparison
    (kp = 5, kd = 0.1), on a 10 degree slope (tan = 0.18 < mu = 1), dropped from 1 cm, 4 s at
    1 ms. With the bristles the robot comes to rest: its base slides 16 mm downhill in the
    first 1.5 s (the legs' PD compliance under the landing), springs back 0.23 mm over the
    second to 3.5 s and 9 um over the last half second, and each foot's friction force stays
    well inside its cone. The regularised law with the former default eps (0.02 m/s) keeps
    creeping downhill at a steady 3 mm/s (its ``eps r / sqrt(1 - r^2)`` with ``r = tan``,
    docs/contact.md): 1.5 mm over the same half second."""
    here = os.path.join(os.path.dirname(__file__), "data", "mujoco", "contact")
    ref = np.load(os.path.join(here, "reference.npz"))
    model = jaxdyn.load_mjcf(os.path.join(here, "solo12.xml"))
    theta = np.radians(10.0)
    n, t = _slope(theta)
    q0 = jnp.asarray(_turn_about_y(theta, np.asarray(ref["solo12_qpos0"])))
    kp, kd, q_ref = float(ref["kp"]), float(ref["kd"]), jnp.asarray(ref["q_stand"])
    steps = 4000

    def pd(q, qd, time):
        return jnp.concatenate([jnp.zeros(6), kp * (q_ref - q[7:]) - kd * qd[6:]])

    @jax.jit
    def run(ct):
        tr = sim.rollout(model, q0, jnp.zeros(model.nv), pd, 1e-3, steps=steps, contact=ct)
        cp = C.contact_points(model, tr.q[-1], tr.qd[-1], ct.ground)
        if not ct.stateful:
            return tr.q[:, :3] @ jnp.asarray(t), cp.depth, None, None, tr.nonfinite_step
        u = tr.contact_state.ground[-1]
        f = C.contact_forces(cp, ct.ground, ct.params, elongation=u, dt=1e-3)
        return tr.q[:, :3] @ jnp.asarray(t), cp.depth, u, f, tr.nonfinite_step

    ground = C.Ground(normal=n, height=0.0)
    spring = C.Contact(ground, friction="spring")
    x, depth, u, f, bad = (np.asarray(a) for a in run(spring))
    xr, *_, bad_r = (np.asarray(a) for a in run(C.Contact(ground, C.ContactParams(friction_velocity=0.02))))
    assert int(bad) == -1 and int(bad_r) == -1
    last = steps - 500
    assert abs(x[-1] - x[last]) < 3e-5, x[-1] - x[last]  # 9 um measured
    assert abs(x[-1] - x[last]) < 0.2 * abs(x[last] - x[last - 1000])  # coming to rest
    assert xr[-1] - xr[last] > 1e-3  # 1.5 mm measured: steady creep
    assert abs((xr[-1] - xr[last]) - (xr[last] - xr[last - 500])) < 0.1 * (xr[-1] - xr[last])
    touching = depth > 0
    assert touching.sum() == 4
    elongation = np.linalg.norm(u, axis=-1)
    assert np.all(elongation[~touching] == 0) and np.all(elongation[touching] > 0)
    # each foot's friction force well inside its cone (mu = 1); together the forces hold the
    # weight: net tangential / net normal = tan(theta), the net tangential force downhill
    fn = f[touching] @ n
    ft = f[touching] - np.outer(fn, n)
    assert np.all(np.linalg.norm(ft, axis=-1) < 0.5 * fn)
    net = ft.sum(0)
    np.testing.assert_allclose(net @ -t / fn.sum(), np.tan(theta), rtol=1e-3)
    np.testing.assert_allclose(f[touching].sum(0) @ n, float(ref["solo12_weight"]) * np.cos(theta), rtol=1e-3)
