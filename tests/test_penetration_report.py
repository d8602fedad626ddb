"""Implausible contact is reported: a rollout records the first state in which a shape is deeper
in the ground (or two shapes in each other) than a bound far beyond the contact law's rest depth (``penetration_step``, as
``nonfinite_step`` records NaN), the quadruped environment ends the episode there, and a contact
given a model with nothing to collide warns once."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxdyn
from jaxdyn import envs, geometry, sim
from jaxdyn.contact import Contact, ContactParams

BALL = """<mujoco model="ball"><worldbody><body name="ball"><freejoint/>
  <geom type="sphere" size="0.1" mass="1"/></body></worldbody></mujoco>"""
DP = jaxdyn.load_robot("double_pendulum")


@pytest.fixture(scope="module")
def ball():
    return jaxdyn.load_mjcf(BALL)


def test_the_bound_is_a_large_multiple_of_the_rest_depth(ball):
    ct = Contact()
    rest = (1.0 * 9.81 / 1e6) ** (1 / 1.5)  # a 1 kg ball on k d^1.5 with k = 1e6: 0.46 mm
    assert float(sim.penetration_bound(ball, ct)) == pytest.approx(sim.PENETRATION_FACTOR * rest)
    stiff = Contact(params=ContactParams(stiffness=1e8))
    assert float(sim.penetration_bound(ball, stiff)) < float(sim.penetration_bound(ball, ct))
    assert sim.penetration_bound(ball, ct, 0.01) == 0.01
    assert sim.penetration_bound(ball, ct, None) is None
    assert sim.penetration_bound(ball, None) is None
    assert sim.penetration_bound(ball, Contact(collide_ground=False, collide_pairs=False)) is None
    with pytest.raises(ValueError, match=r"rollout: max_penetration must be 'auto', a positive number or None, got -1"):
        sim.penetration_bound(ball, ct, -1)
    with pytest.raises(ValueError, match=r"max_penetration must be 'auto'.*got 'deep'"):
        sim.penetration_bound(ball, ct, "deep")


def test_ground_penetration_is_the_deepest_point(ball):
    depth = jax.jit(jax.vmap(lambda z: sim.ground_penetration(ball, Contact(), jnp.array([0, 0, z, 1, 0, 0, 0.0]))))
    np.testing.assert_allclose(depth(jnp.array([0.5, 0.0, -2.0])), [0.0, 0.1, 2.1])


def test_a_step_too_coarse_for_the_contact_is_reported(ball):
    """The ball of the report: stepped with dt = 1 s it falls through the floor, every state
    finite, so only the penetration record says that the motion is not physical."""
    q0 = jnp.array([0, 0, 0.5, 1, 0, 0, 0.0])
    roll = jax.jit(
        lambda q0: sim.rollout(ball, q0, jnp.zeros(6), jnp.zeros((3, 6)), 1.0, integrator="euler", contact=Contact())
    )
    tr = roll(q0)
    assert int(tr.nonfinite_step) == -1 or int(tr.nonfinite_step) > int(tr.penetration_step)
    assert int(tr.penetration_step) == 2 and tr.q[2, 2] < -1.0
    assert sim.first_penetration(tr) == ((), 2)


def test_without_contact_nothing_is_reported():
    tr = jax.jit(lambda q0: sim.rollout(DP, q0, jnp.zeros(2), jnp.zeros((3, 2)), 1e-3))(jnp.array([0.5, 0.0]))
    assert int(tr.penetration_step) == -1 and sim.first_penetration(tr) is None


def test_a_contact_with_nothing_to_collide_warns_once():
    bare = DP.replace(geoms=geometry.empty_geoms(DP.dtype), name="pendulum without geoms")
    q, qd, tau = jnp.array([0.5, 0.0]), jnp.zeros(2), jnp.zeros(2)
    step = lambda: sim.step(bare, q, qd, tau, 1e-3, "euler", contact=Contact())  # noqa: E731
    with pytest.warns(UserWarning, match=r"step: a contact was given, but model 'pendulum without geoms' has no geom"):
        jax.eval_shape(step)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        jax.eval_shape(step)  # once per model


def test_environments_carry_the_penetration_record():
    """Every environment's state has ``penetration_step`` (-1 at reset, kept by the automatic
    reset); the quadruped's step sets it and terminates (traced only here: no compile)."""
    env = envs.make("pendulum")
    s = env.reset(jax.random.PRNGKey(0))
    assert int(s.penetration_step) == -1 and sim.first_penetration(s) is None
    quad = envs.QuadrupedJoystick()
    s = jax.eval_shape(quad.reset, jax.random.PRNGKey(0))
    nxt, _, term, _ = jax.eval_shape(quad.transition, s, jnp.zeros(12, quad.model.dtype))
    assert nxt.penetration_step.dtype == np.int32 and term.dtype == np.bool_


BALLS = """<mujoco model="two balls"><worldbody>
  <body name="a" pos="-0.15 0 1"><freejoint/><geom type="sphere" size="0.1" mass="1"/></body>
  <body name="b" pos="0.15 0 1"><freejoint/><geom type="sphere" size="0.1" mass="1"/></body>
</worldbody></mujoco>"""


@pytest.fixture(scope="module")
def balls():
    return jaxdyn.load_mjcf(BALLS)


def _closing(balls, speed):
    """The balls 10 cm apart, moving towards each other at ``speed`` [m/s] each (the first a free
    joint, velocity ``[omega; v]``, the second three slides and a ball joint)."""
    q = jnp.array([-0.15, 0, 1, 1, 0, 0, 0, 0.15, 0, 1, 1, 0, 0, 0])
    return q, jnp.array([0, 0, 0, speed, 0, 0, -speed, 0, 0, 0, 0, 0]) * jnp.ones(())


def test_shapes_driven_through_each_other_are_reported(balls):
    """Two balls 10 cm apart closing at 1 m/s each, stepped with dt = 0.1 s, are 10 cm into each
    other after one step (the bound of 2 kg on the default law: 7.3 cm), far from the ground:
    the batch's fast env is reported at step 1, the slow one (at 0.6 m/s, 2 cm in) not."""
    ct = Contact()
    assert float(sim.penetration_bound(balls, ct)) == pytest.approx(100 * (2 * 9.81 / 1e6) ** (1 / 1.5))
    q0, qd0 = jax.vmap(lambda v: _closing(balls, v))(jnp.array([0.6, 1.0]))
    roll = jax.jit(jax.vmap(lambda q, qd: sim.rollout(balls, q, qd, jnp.zeros((3, 12)), 0.1, contact=ct)))
    tr = roll(q0, qd0)
    assert tr.penetration_step.tolist() == [-1, 1]
    assert sim.first_penetration(tr) == (1, 1)  # (env, step)
    assert float(jax.jit(lambda q: sim.penetration(balls, ct, q))(tr.q[1, 1])) == pytest.approx(0.1, abs=1e-6)


def test_pairs_are_checked_by_every_integrator_and_without_the_ground(balls):
    """The explicit integrators evaluate the depth of each state; a contact of pairs only still
    has a bound; the last state is checked too."""
    ct = Contact(collide_ground=False)
    q0, qd0 = _closing(balls, 1.0)
    roll = jax.jit(lambda q0, qd0: sim.rollout(balls, q0, qd0, jnp.zeros((1, 12)), 0.1, integrator="euler", contact=ct))
    tr = roll(q0, qd0)
    assert int(tr.penetration_step) == 1 and int(tr.nonfinite_step) == -1
    assert sim.first_penetration(tr) == ((), 1)
    assert jax.jit(lambda q: sim.penetration(balls, Contact(collide_pairs=False), q))(tr.q[1]) == 0.0
