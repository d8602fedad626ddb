"""MuJoCo's soft contact as jaxdyn's normal law, ``Contact(normal="mujoco")``
(jaxdyn.contact.soft): a scene's ``solref``, ``solimp`` and ``solmix`` (geoms, defaults, explicit
pairs), mixed as MuJoCo mixes them, with the bodies' ``invweight0`` and the scene's cone. Against
MuJoCo 4.0 (tests/reference/generate_mujoco_soft.py): frictionless contacts step for step as
MuJoCo's Euler, resting penetrations with friction for both cones; bad input named."""

import os
import warnings

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.test_util import check_grads

import jaxdyn
from jaxdyn import contact as C
from jaxdyn import geometry, sensors, sim
from jaxdyn.io.mjcf import velocity_from_mujoco

SCENES = {
    "humanoid": "dm_control/humanoid.xml",
    "cheetah": "dm_control/cheetah.xml",
    "walker": "dm_control/walker.xml",
    "ant": "gymnasium/ant.xml",
}
REF = os.path.join(os.path.dirname(__file__), "data", "mujoco", "contact", "soft.npz")


def _load(xml, dtype):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the soft-contact parameters are named
        return jaxdyn.load_mjcf(xml, dtype=dtype)


def _rollout(model, q0, v0, steps, dt=0.002):
    contact = C.Contact(C.Ground.from_model(model), normal="mujoco")
    u = jnp.zeros((steps, model.nv), model.dtype)
    return jax.jit(lambda q, v: sim.rollout(model, q, v, u, dt, contact=contact))(q0, v0)


def test_frictionless_contacts_step_as_mujoco_euler():
    """Four bodies dropped on the floor and a box with sideways and spinning velocities, each a
    rule of the parameters: solref/solimp mixed by solmix (an underdamped contact that rebounds),
    a direct solref against a time constant (element-wise minimum), a higher priority, an explicit
    pair's own. ``condim`` 1, so the normal law is all of the contact: 400 Euler steps of 2 ms equal
    MuJoCo's to 1e-10 m (the bodies sink 0.2-17 mm into the floor and bounce)."""
    ref = np.load(REF)
    model = _load(str(ref["bounce_xml"]), jnp.float64)
    iw = np.asarray(model.geoms.invweight)
    np.testing.assert_allclose(iw[2:, 0], [0.5, 1.0, 1 / 1.5, 2.0], rtol=1e-12)  # MuJoCo's body_invweight0
    q0 = jnp.asarray(ref["bounce_qpos"][0])
    v0 = velocity_from_mujoco(model, q0, jnp.asarray(ref["bounce_qvel"][0]))
    tr = _rollout(model, q0, v0, 400)
    assert int(tr.nonfinite_step) == -1
    assert int(tr.penetration_step) == -1  # 17 mm is plausible for these parameters
    assert 0.017 < float(sim.penetration_bound(model, C.Contact(normal="mujoco"))) < 1.0
    np.testing.assert_allclose(np.asarray(tr.q), ref["bounce_qpos"], rtol=0, atol=1e-10)
    assert ref["bounce_qpos"][:, 9].min() < 0.05 - 0.015  # the direct solref's ball sank 17 mm


@pytest.mark.parametrize(
    "cone, dtype", [("pyramidal", jnp.float32), ("elliptic", jnp.float64), ("pyramidal", jnp.float64)]
)
def test_resting_penetration_is_mujocos(cone, dtype):
    """A box (sliding friction 0.5) and a ball (``condim`` 4) with the Menagerie Go2's soft
    ``solimp``, released at rest on the floor: after 2 s they rest at MuJoCo's heights, for the
    pyramidal cone (normal stiffer by ``(condim - 1) / (mu^2 (1 + mu^2))``: 3.3 mm less deep for
    the box) and the elliptic one, to 1e-9 m in float64 and 1e-6 m in float32, without sliding."""
    ref = np.load(REF)
    model = _load(str(ref[f"rest_{cone}_xml"]), dtype)
    assert model.geoms.cone == cone
    q0 = jnp.asarray(ref[f"rest_{cone}_qpos"][0], dtype)
    tr = _rollout(model, q0, jnp.zeros(model.nv, dtype), 1000)
    z, z_ref = np.asarray(tr.q[-1, 2::7], np.float64), ref[f"rest_{cone}_qpos"][-1, 2::7]
    tol = 1e-9 if dtype == jnp.float64 else 1e-6
    np.testing.assert_allclose(z, z_ref, rtol=0, atol=tol)
    np.testing.assert_allclose(
        np.asarray(tr.q[-1, [0, 1, 7, 8]], np.float64), ref[f"rest_{cone}_qpos"][0, [0, 1, 7, 8]], atol=tol
    )
    assert 0.05 - z_ref[0] > 0.007  # soft: the box sinks 7.6-10.9 mm


def test_explicit_forces_are_the_law_at_rest():
    """Outside a step the normal force is (M1) with no contact acceleration: at MuJoCo's resting
    state the point forces carry the weight of the box and the ball (to 1e-6 relative), and the
    joint-space force equals the point forces' through the wrenches."""
    ref = np.load(REF)
    model = _load(str(ref["rest_elliptic_xml"]), jnp.float64)
    q = jnp.asarray(ref["rest_elliptic_qpos"][-1])
    contact = C.Contact(C.Ground.from_model(model), normal="mujoco")
    qd = jnp.zeros(model.nv)

    @jax.jit
    def evaluate(q):
        js = contact.joint_space(model, q)
        touch = sensors.contacts_of(model, q, qd, contact)  # what touch sensors read
        total = C.total_force(model, q, qd, contact)
        return total, js.forces(qd), contact.generalized_forces(model, q, qd), touch

    total, tau_js, tau, touch = evaluate(q)
    np.testing.assert_allclose(np.asarray(total), [0, 0, 3 * 9.81], rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(tau_js, tau, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(float(jnp.sum(touch.force)), 3 * 9.81, rtol=1e-6)
    assert set(np.asarray(touch.geom1)[np.asarray(touch.force) > 0].tolist()) == {-1}  # the ground's


BALL = """<mujoco><worldbody><geom name="floor" type="plane" size="0 0 1" condim="1"/>
<body pos="0 0 0.049"><freejoint/><geom name="ball" type="sphere" size="0.05" mass="1" condim="1"
 solref="0.01 0.5" solimp="0.8 0.95 0.002 0.5 2"/></body></worldbody></mujoco>"""


def test_gradients_through_the_soft_law():
    """The end height of a ball pressed 1 mm into the floor and thrown down, 10 steps of 2 ms,
    differentiated with respect to its geom's solref and solimp (model leaves) and its start
    velocity: forward and reverse mode equal central finite differences (float64)."""
    model = _load(BALL, jnp.float64)
    q0 = jnp.asarray([0, 0, 0.049, 1, 0, 0, 0.0])
    contact = C.Contact(C.Ground.from_model(model), normal="mujoco")
    u = jnp.zeros((10, model.nv))

    def height(solref, solimp, vz):
        m = model.replace(geoms=eqx.tree_at(lambda g: (g.solref, g.solimp), model.geoms, (solref, solimp)))
        return sim.rollout(m, q0, jnp.zeros(6).at[5].set(vz), u, 0.002, contact=contact).q[-1, 2]

    args = (model.geoms.solref, model.geoms.solimp, jnp.asarray(-0.3))
    check_grads(jax.jit(height), args, order=1, modes=("fwd", "rev"), atol=1e-6, rtol=1e-4, eps=1e-7)


def test_mixing_rules_per_contact():
    """The parameters each contact takes (module docstring of jaxdyn.contact.soft): solmix
    weights, a direct solref's element-wise minimum, priority, an explicit pair's own."""
    from jaxdyn.contact import soft

    ref = np.load(REF)
    model = _load(str(ref["bounce_xml"]), jnp.float64)
    g = model.geoms
    names = list(g.names)
    floor = names.index("floor")
    rows = soft.rows_between(g, [floor] * 3, [names.index(n) for n in ("mixed", "direct", "priority")], jnp.float64)
    w = 0.5 / 2.5  # the floor's solmix 0.5 against the ball's 2
    np.testing.assert_allclose(rows.solref[0], [w * 0.03 + (1 - w) * 0.01, w * 1.2 + (1 - w) * 0.3])
    np.testing.assert_allclose(
        rows.solimp[0], w * np.array([0.5, 0.99, 0.01, 0.3, 3]) + (1 - w) * np.array([0.8, 0.95, 0.002, 0.5, 2])
    )
    np.testing.assert_allclose(rows.solref[1], [-3000, -20])
    np.testing.assert_allclose(rows.solref[2], [0.015, 0.6])
    np.testing.assert_allclose(rows.invweight, [0.5, 1.0, 1 / 1.5])
    pair = soft.rows_between(g, [names.index("table")], [names.index("paired")], jnp.float64)
    np.testing.assert_allclose(pair.solref[0], [0.008, 0.5])
    np.testing.assert_allclose(pair.solimp[0], [0.6, 0.97, 0.003, 0.5, 2])


def test_invweights_for_models_built_in_code_and_bad_input():
    """Geoms made in code have no ``invweight`` until :func:`jaxdyn.contact.with_invweights`; the
    law then names the fix. An unknown law is refused by name; the URDF loader computes them."""
    model = jaxdyn.load_robot("double_pendulum")
    geoms = geometry.make_geoms(type=[geometry.SPHERE], size=[[0.05, 0, 0]], body=[model.nb - 1], pos=[[0, 0, -0.5]])
    model = model.replace(geoms=geoms)
    contact = C.Contact(normal="mujoco")
    q, qd = jnp.zeros(model.nq), jnp.zeros(model.nv)
    with pytest.raises(ValueError, match="invweight is not set .*with_invweights"):
        contact.generalized_forces(model, q, qd)
    fixed = C.with_invweights(model)
    assert np.all(np.asarray(fixed.geoms.invweight) > 0)
    assert np.all(np.isfinite(np.asarray(contact.generalized_forces(fixed, q, qd))))
    with pytest.raises(ValueError, match="unknown normal 'soft'.*hunt_crossley, mujoco"):
        C.Contact(normal="soft")


@pytest.mark.parametrize("name", ["humanoid", "cheetah", "walker", "ant"])
def test_body_weights_are_mujocos(name):
    """``model.geoms.invweight`` of articulated scenes (hinges with ``ref``, free and fixed roots,
    bodies welded into their parents): MuJoCo's ``body_invweight0`` of each geom's body at
    ``qpos0``, to 1e-9 relative, computed without compiling a JAX program."""
    ref = np.load(REF)
    path = os.path.join(os.path.dirname(__file__), "data", "mjcf", *SCENES[name].split("/"))
    model = _load(path, jnp.float64)
    np.testing.assert_allclose(np.asarray(model.geoms.invweight), ref[f"invweight_{name}"], rtol=1e-9, atol=1e-12)


def test_reference_kinematics_and_mass_matrix_equal_the_algorithms():
    """The loaders' NumPy kinematics and mass matrix (jaxdyn.reference) equal
    dof_motions_world's and crba's to round-off, on a floating tree with every joint and a ball joint (the shared test tree, with armature)."""
    from helpers import zoo

    from jaxdyn import reference
    from jaxdyn.algorithms.kinematics import dof_motions_world

    model = zoo("tree_mixed_float")
    model = model.replace(armature=jnp.linspace(0.01, 0.1, model.nv))
    q = jaxdyn.random_configuration(model, jax.random.PRNGKey(3))
    R, p, w, v = reference.reference_kinematics(model, q)
    Jw, P, M = jax.jit(lambda q: (*dof_motions_world(model, q), jaxdyn.crba(model, q)))(q)
    np.testing.assert_allclose(R, P.R, atol=1e-13)
    np.testing.assert_allclose(p, P.p, atol=1e-13)
    np.testing.assert_allclose(np.concatenate([w.T, v.T]), Jw, atol=1e-12)
    np.testing.assert_allclose(reference.reference_mass_matrix(model, R, p, w, v), M, rtol=1e-12, atol=1e-12)
