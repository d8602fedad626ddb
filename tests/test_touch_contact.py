"""Touch sensors read from jaxdyn's own contact (:func:`jaxdyn.sensors.contacts_of`): a box
resting on the floor with a ball resting on the box. At rest the normal forces carry the
weights, so the box's touch zone under its bottom face reads the weight of box and ball, the
ball's zone the ball's weight (analytic: ``m g``), and a zone beside the contacts reads 0."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxdyn
from jaxdyn import contact, sensors, sim

# the bodies where the file places them (a free joint's q is the world pose): the box on the floor,
# the ball on the box
Q_FILE = [0.0, 0.0, 0.05, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.14, 1.0, 0.0, 0.0, 0.0]

SCENE = """<mujoco><option gravity="0 0 -9.81"/><worldbody>
  <geom name="floor" type="plane" size="2 2 0.1"/>
  <body name="box" pos="0 0 0.05"><freejoint/>
    <geom name="box" type="box" size="0.1 0.1 0.05" mass="2"/>
    <site name="under" type="box" pos="0 0 -0.05" size="0.11 0.11 0.01"/>
    <site name="beside" type="sphere" pos="0.3 0 0" size="0.02"/>
  </body>
  <body name="ball" pos="0 0 0.14"><freejoint/>
    <geom name="ball" type="sphere" size="0.04" mass="0.5"/>
    <site name="all" type="sphere" size="0.05"/>
  </body>
</worldbody><sensor>
  <touch name="box" site="under"/><touch name="ball" site="all"/><touch name="beside" site="beside"/>
</sensor></mujoco>"""


@pytest.mark.parametrize("dtype", [jnp.float64, jnp.float32])
def test_touch_at_rest_reads_the_weight_it_carries(dtype):
    model = jaxdyn.load_mjcf(SCENE, dtype=dtype)
    sens = sensors.from_mjcf(SCENE, model)
    con = contact.Contact(ground=contact.Ground.from_model(model))
    z = jnp.zeros(model.nv, dtype)
    traj = sim.rollout(model, jnp.asarray(Q_FILE, dtype), z, jnp.zeros((1500, model.nv), dtype), 2e-3, contact=con)
    q, qd = traj.q[-1], traj.qd[-1]
    assert float(jnp.max(jnp.abs(qd))) < 1e-4  # at rest (3 s)
    c = sensors.contacts_of(model, q, qd, con)
    qdd = jaxdyn.aba(model, q, qd, z)
    y = np.asarray(sensors.read(model, sens, q, qd, qdd, contacts=c))
    g = 9.81
    np.testing.assert_allclose(y[sens.slice("box")], [2.5 * g], rtol=2e-3)
    np.testing.assert_allclose(y[sens.slice("ball")], [0.5 * g], rtol=2e-3)
    assert y[sens.slice("beside")][0] == 0.0
    # the rows: the ground's (geom1 = -1) under the box, the ball's pair with the box
    assert set(np.asarray(c.geom1).tolist()) >= {-1}
    ball_row = (np.asarray(c.geom1) == 2) | (np.asarray(c.geom2) == 2)
    np.testing.assert_allclose(np.sum(np.asarray(c.force)[ball_row]), 0.5 * g, rtol=2e-3)


def test_contacts_of_rows_carry_the_forces_of_point_forces():
    """The box pressed 1 mm into the floor, the ball 1 mm into the box, at rest: the normal
    forces of :func:`sensors.contacts_of` are those of ``Contact.point_forces`` (the same law,
    another code path), so the box's zone reads the floor's push and the ball's zone the box's;
    batched under ``jit(vmap)``, a lifted box reads nothing."""
    model = jaxdyn.load_mjcf(SCENE)
    con = contact.Contact(ground=contact.Ground.from_model(model))
    sens = sensors.from_mjcf(SCENE, model)
    q0 = jnp.asarray(Q_FILE).at[2].add(-1e-3).at[9].add(-2e-3)  # box 1 mm down, ball 1 mm into it
    qd = jnp.zeros(model.nv)
    pf = jax.jit(lambda q: con.point_forces(model, q, qd))(q0)
    ground = np.asarray(pf.other) == -1
    floor = float(np.sum(np.asarray(pf.force)[ground, 2]))  # the ground's normal is +z
    ball = float(np.sum(np.abs(np.asarray(pf.force)[~ground, 2])))
    assert floor > 0.0 and ball > 0.0

    def touch(q):
        c = sensors.contacts_of(model, q, qd, con)
        return sensors.read(model, sens, q, qd, jnp.zeros(model.nv), contacts=c)

    qs = jnp.stack([q0, q0.at[2].add(0.01)])  # the second: the box lifted 9 mm off the floor
    y = np.asarray(jax.jit(jax.vmap(touch))(qs))
    np.testing.assert_allclose(y[0, sens.slice("box")], [floor], rtol=1e-12)
    np.testing.assert_allclose(y[0, sens.slice("ball")], [ball], rtol=1e-12)
    assert y[1, sens.slice("box")][0] == 0.0 and y[0, sens.slice("beside")][0] == 0.0
