"""Friction that holds with the defaults (docs/contact.md, "Friction that holds"): in
``"implicit_euler"`` the contact friction and the joints' Coulomb friction (``frictionloss``)
are solved implicitly in velocity with a 1e-4 m/s (rad/s) regularisation, so a body loaded
below its friction stays put within MuJoCo's own drift. Reference: MuJoCo 4.0's ``Euler``
(tests/reference/generate_mujoco_friction.py)."""

import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxdyn
from jaxdyn import contact as C
from jaxdyn import sim

HERE = os.path.join(os.path.dirname(__file__), "data", "mujoco", "friction")
THETA = np.deg2rad(15.0)


@pytest.fixture(scope="module")
def ref():
    return np.load(os.path.join(HERE, "reference.npz"))


def _pendulum(fl, dtype=jnp.float64):
    xml = open(os.path.join(HERE, "pendulum.xml")).read().replace("FL", repr(fl))
    return jaxdyn.load_mjcf(xml, dtype=dtype)


def _swing(model, qd0, dt, steps, options=sim.SimOptions()):
    z = jnp.zeros(1, model.dtype)
    return sim.rollout(model, z, z + qd0, jnp.zeros((steps, 1), model.dtype), dt, options=options).q[:, 0]


def test_frictionloss_holds_a_joint_loaded_below_it(ref):
    """Friction loss 3 N m against a gravity torque of at most 2.45 N m: from rest the
    pendulum stays put (0.23 mrad in 2 s; MuJoCo's soft friction loss drifts 59 mrad), and
    thrown at 3 rad/s it stops where MuJoCo's does, to within MuJoCo's drift. The former
    default (``friction_velocity=1e-2``) crept 23 mrad, and the explicit ``tanh``
    (``implicit_friction=False``) 25 mrad."""
    model = _pendulum(3.0)
    dt, steps = float(ref["dt"]), int(ref["steps"])
    run = jax.jit(lambda qd0: _swing(model, qd0, dt, steps))
    rest, thrown = np.asarray(run(0.0)), np.asarray(run(3.0))
    mj_rest, mj_thrown = ref["pendulum_fl3_qd0"], ref["pendulum_fl3_qd3"]
    assert abs(rest[-1]) < 1e-3 < mj_rest[-1] / 10, (rest[-1], mj_rest[-1])
    # stopped: the last second moves less than 0.2 mrad (MuJoCo's: 24 mrad)
    assert abs(thrown[-1] - thrown[steps // 2]) < 2e-4
    assert abs(thrown[steps // 2] - mj_thrown[steps // 2]) < 2e-2, (thrown[steps // 2], mj_thrown[steps // 2])
    # the former regularisation creeps at eps atanh(load / friction)
    old = np.asarray(jax.jit(lambda: _swing(model, 0.0, dt, steps, sim.SimOptions(friction_velocity=1e-2)))())
    assert old[-1] > 0.02
    # the explicit tanh (implicit_friction=False; eps 1e-2 rad/s) creeps too (25 mrad measured)
    explicit = sim.SimOptions(implicit_friction=False)
    assert sim.friction_velocity(explicit) == 1e-2
    creep = np.asarray(jax.jit(lambda: _swing(model, 0.0, dt, steps, explicit))())
    assert creep[-1] > 0.02


def test_frictionloss_below_the_load_swings_as_in_mujoco(ref):
    """Friction loss 1 N m: the pendulum swings down and comes to rest where MuJoCo's does
    (2 s at 2 ms, from rest and from 3 rad/s): within 16 mrad during the swing and 7 mrad at
    rest (measured)."""
    model = _pendulum(1.0)
    dt, steps = float(ref["dt"]), int(ref["steps"])
    run = jax.jit(lambda qd0: _swing(model, qd0, dt, steps))
    for qd0 in (0.0, 3.0):
        q = np.asarray(run(qd0))
        mj = ref[f"pendulum_fl1_qd{qd0:g}"]
        np.testing.assert_allclose(q[::100], mj[::100], atol=2e-2)
        assert abs(q[-1] - mj[-1]) < 1e-2, (q[-1], mj[-1])


def test_frictionloss_in_the_contact_solve_equals_the_joint_solve():
    """With a contact (a ground far below, so no contact acts) the joints' friction is solved
    inside the contact's Newton solve: the same root as the contact-free Newton steps (F1)-(F2)
    once both have converged (4 steps each; measured equal to 1e-19 rad/s)."""
    model = _pendulum(3.0)
    ct = C.Contact(C.Ground(height=-10.0))
    o = sim.SimOptions(contact_iterations=3)

    @jax.jit
    def both(qd0):
        q, qd, tau = jnp.zeros(1), jnp.full(1, qd0), jnp.zeros(1)
        return sim.step(model, q, qd, tau, 2e-3, options=o)[1], sim.step(
            model, q, qd, tau, 2e-3, options=o, contact=ct
        )[1]

    for qd0 in (0.0, 0.5, 3.0):
        a, b = both(qd0)
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-12)


def test_frictionloss_solve_in_float32(ref):
    """float32 follows float64 to 1e-4 rad over 200 steps of the swing from 3 rad/s."""
    dt, steps = float(ref["dt"]), 200
    m64, m32 = _pendulum(1.0), _pendulum(1.0, jnp.float32)
    q64 = np.asarray(jax.jit(lambda: _swing(m64, 3.0, dt, steps))())
    q32 = np.asarray(jax.jit(lambda: _swing(m32, 3.0, dt, steps))())
    np.testing.assert_allclose(q32, q64, atol=1e-4)


def test_frictionloss_solve_gradients(ref):
    """The gradient of the final angle after 100 steps (sliding, then stopped by the friction)
    with respect to the friction loss and the initial velocity equals central differences
    (float64)."""
    dt, steps = float(ref["dt"]), 100
    base = _pendulum(1.0)

    def final(F, qd0):
        return _swing(base.replace(friction=jnp.array([F])), qd0, dt, steps)[-1]

    g = jax.jit(jax.grad(final, argnums=(0, 1)))(1.0, 3.0)
    f = jax.jit(final)
    e = 1e-5
    fd = ((f(1.0 + e, 3.0) - f(1.0 - e, 3.0)) / (2 * e), (f(1.0, 3.0 + e) - f(1.0, 3.0 - e)) / (2 * e))
    assert all(np.isfinite(x) for x in g)
    np.testing.assert_allclose(np.array(g), np.array(fd), rtol=1e-5)


def test_block_below_the_friction_angle_holds_with_the_default_contact(ref):
    """A 1 kg box with mu = 0.5 on a 15 degree slope (below the friction angle), the default
    ``Contact()`` and ``"implicit_euler"`` at 2 ms: it slides 1.28 mm in 2 s (MuJoCo 1.94 mm;
    the former default ``friction_velocity=2e-2`` 25.3 mm)."""
    model = jaxdyn.load_mjcf(os.path.join(HERE, "block.xml"))
    ground = C.Ground.from_model(model)
    dt, steps = float(ref["dt"]), int(ref["steps"])
    n = np.array([np.sin(THETA), 0.0, np.cos(THETA)])
    t = np.array([np.cos(THETA), 0.0, -np.sin(THETA)])
    pen = (9.81 * np.cos(THETA) / 4 / 1e6) ** (1 / 1.5)  # the Hunt-Crossley rest depth
    q0 = jnp.array([*(n * (0.05 - pen)), np.cos(THETA / 2), 0.0, np.sin(THETA / 2), 0.0])

    @jax.jit
    def downhill(ct):
        tr = sim.rollout(model, q0, jnp.zeros(6), jnp.zeros((steps, 6)), dt, contact=ct)
        return tr.q[:, :3] @ t

    x = np.asarray(downhill(C.Contact(ground)))
    mj = float(ref["block_downhill"][-1])
    assert 0 <= x[-1] - x[0] < 0.8 * mj, (x[-1] - x[0], mj)
    old = np.asarray(downhill(C.Contact(ground, C.ContactParams(friction_velocity=2e-2))))
    assert old[-1] - old[0] > 5 * mj


def test_contact_polish_option():
    """``SimOptions(contact_polish=0)`` drops the exact Newton step after the convex ones: a ball
    thrown sideways with spin onto the floor (sliding, its normal force changing within the
    step) steps differently without it, and the convex steps' fixed point, iterated further,
    comes to the polished step's velocity. Negative, fractional and boolean counts are refused."""
    xml = '<mujoco><worldbody><geom type="plane" size="0 0 1"/><body pos="0 0 0.1"><freejoint/><geom type="sphere" size="0.1" mass="1"/></body></worldbody></mujoco>'
    m = jaxdyn.load_mjcf(xml, dtype=jnp.float64)
    ct = C.Contact(C.Ground.from_model(m))
    q = jnp.array([0.0, 0.0, 0.0995, 1.0, 0.0, 0.0, 0.0])
    qd = jnp.array([3.0, -2.0, 5.0, 2.0, 0.5, -0.8])

    def step(polish, iterations):
        o = sim.SimOptions(contact_polish=polish, contact_iterations=iterations)
        return sim.step(m, q, qd, jnp.zeros(6), 2e-3, contact=ct, options=o)[1]

    polished, plain, iterated = jax.jit(lambda: (step(1, 1), step(0, 1), step(0, 12)))()
    gap = float(jnp.abs(plain - polished).max())
    assert gap > 1e-9
    assert float(jnp.abs(iterated - polished).max()) < 1e-3 * gap
    for bad in (-1, 1.5, True):
        with pytest.raises(ValueError, match="contact_polish must be a non-negative int"):
            sim.SimOptions(contact_polish=bad)
