"""trajopt through the compliant contact step: a body on a vertical slide lifted by a leg that
pushes against the ground (the only force that can raise it is the ground's), and an arm whose
fingertip pushes a free box across the ground (``examples/trajopt_push.py``)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxdyn
from jaxdyn import contact as C
from jaxdyn import trajopt as to

# torso (2 kg) on a vertical slide, unactuated; the leg (0.2 kg) slides under it, actuated, its
# foot a sphere of 5 cm that starts touching the ground; only the foot collides
LIFT = """<mujoco><worldbody>
<body name="torso" pos="0 0 0.45"><joint name="z" type="slide" axis="0 0 1"/>
<geom type="box" size="0.1 0.1 0.05" mass="2" contype="0" conaffinity="0"/>
<body name="leg"><joint name="knee" type="slide" axis="0 0 1"/>
<geom name="foot" type="sphere" size="0.05" pos="0 0 -0.4" mass="0.2"/></body></body>
</worldbody></mujoco>"""
DT, T = 0.02, 40
HOLD = -2.0 * 9.81  # the knee force that holds the torso up on the leg [N]


def _lift(contact=True, integrator="implicit_euler"):
    m = jaxdyn.load_mjcf(LIFT, dtype=jnp.float64)
    ct = C.Contact(C.Ground(), C.ContactParams()) if contact else None
    return to.model_dynamics(m, DT, integrator, contact=ct, actuated=["knee"])


def test_step_jacobians_through_contact_match_finite_differences():
    """``f_x``, ``f_u`` of the step with the foot in the ground and moving (the normal force's
    stiffness and damping active) by ``jax.jacfwd`` through the contact step, against central
    differences of the step; the implicit step (the solve's, slow set) and the explicit one."""
    for integrator in INTEGRATORS:
        _jacobians_match(_lift(integrator=integrator))


INTEGRATORS = ["semi_implicit_euler"]


def _jacobians_match(dyn):
    x = jnp.array([-0.004, 0.002, -0.05, 0.1])  # foot 2 mm deep, closing
    u = jnp.array([HOLD])
    assert not dyn.closed_form
    f = jax.jit(lambda x, u: dyn(x, u))
    fx, fu = jax.jit(lambda x, u: dyn.jacobians(x, u))(x, u)
    h = 1e-6
    E = np.eye(4)
    fd_x = np.stack([(f(x + h * E[i], u) - f(x - h * E[i], u)) / (2 * h) for i in range(4)], 1)
    fd_u = ((f(x, u + h) - f(x, u - h)) / (2 * h))[:, None]
    np.testing.assert_allclose(fx, fd_x, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(fu, fd_u, rtol=1e-6, atol=1e-10)
    # the ground's stiffness: the leg's velocity responds to the foot's depth (torso and knee)
    assert float(fx[3, 0]) < -1.0 and float(fx[3, 1]) < -1.0


def test_step_jacobians_through_implicit_contact_match_finite_differences():
    """As above, through the implicit step (contact forces implicit in velocity)."""
    _jacobians_match(_lift())


def _com_height(x):
    """Height of the centre of mass: the torso (2 kg) at ``0.45 + z``, the foot (0.2 kg) at
    ``0.05 + z + knee``."""
    return (2.0 * (0.45 + x[..., 0]) + 0.2 * (0.05 + x[..., 0] + x[..., 1])) / 2.2


def test_ilqr_lifts_the_body_through_ground_contact():
    """From the settled stance and the holding force, ilqr raises the torso by 10 cm and stops
    it there, the foot staying on the ground: the centre of mass rises, which only the ground's
    force can do (the same controls without the ground drop it by about g t^2 / 2)."""
    dyn = _lift()
    settle = jax.jit(lambda x: jax.lax.fori_loop(0, 100, lambda i, x: dyn(x, jnp.array([HOLD])), x))
    x0 = settle(jnp.zeros(4))
    depth0 = -float(x0[0] + x0[1])  # the foot's depth in the ground under the weight
    assert 0.0 < depth0 < 0.01 and abs(float(x0[2])) < 1e-6  # at rest on the foot
    goal = jnp.array([0.1, x0[1], 0.0, 0.0])
    cost = to.quadratic_cost(
        goal, jnp.array([1.0, 0.0, 0.01, 0.01]), 1e-4, Qf=jnp.array([1e3, 0.0, 10.0, 10.0]), u_ref=jnp.array([HOLD])
    )
    opt = to.ILQROptions(max_iterations=60, tolerance=1e-5)  # the contact's stiff force: creeping decreases
    res = jax.jit(lambda x0: to.ilqr(dyn, cost, x0, jnp.full((T, 1), HOLD), options=opt))(x0)
    assert bool(res.converged), int(res.status)
    xT = res.x[-1]
    assert abs(float(xT[0]) - 0.1) < 2e-3 and abs(float(xT[2])) < 0.05
    depth = -(res.x[:, 0] + res.x[:, 1])
    assert float(jnp.min(depth)) > -1e-3 and float(jnp.max(depth)) < 0.02  # the foot stays on the ground
    assert float(res.cost) < 0.05 * float(res.cost_history[0])
    rise = float(_com_height(xT) - _com_height(x0))
    assert 0.08 < rise < 0.1
    free = jax.jit(lambda us: to.simulate(_lift(contact=False), x0, us))(res.u)
    drop = float(_com_height(x0) - _com_height(free[-1]))
    np.testing.assert_allclose(drop, 0.5 * 9.81 * (T * DT) ** 2, rtol=0.05)


def test_model_dynamics_contact_bad_input():
    m = jaxdyn.load_mjcf(LIFT, dtype=jnp.float64)
    with pytest.raises(ValueError, match="contact must be a jaxdyn.contact.Contact"):
        to.model_dynamics(m, DT, contact="ground")
    with pytest.raises(ValueError, match="contact with state"):
        to.model_dynamics(m, DT, contact=C.Contact(C.Ground(), C.ContactParams(), friction="spring"))


def _push_example():
    """``examples/trajopt_push.py`` as a module: an arm's fingertip pushing a free box on the
    ground (its scene, start and cost are the test's)."""
    import importlib.util
    import os

    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples", "trajopt_push.py")
    spec = importlib.util.spec_from_file_location("trajopt_push", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_step_jacobians_through_a_shape_pair_match_finite_differences():
    """``f_x``, ``f_u`` of the push's step (a free box: a quaternion in the state) with the
    fingertip pressed 1 mm into the box and the box on the ground, by ``jax.jacfwd`` through
    the implicit contact step, against central differences in the tangent space: the box's
    velocity responds to the arm's joints and torques through the tip-box contact alone."""
    ex = _push_example()
    model, dyn = ex.scene()
    x = ex.start(model).at[model.nq :].set(jnp.array([0.3, -0.2, 0.01, 0.0, 0.0, 0.0, 0.0, 0.0]))
    u = jnp.array([1.0, 0.5])
    f = jax.jit(lambda x, u: dyn(x, u))
    fx, fu = jax.jit(lambda x, u: dyn.jacobians(x, u))(x, u)
    f0, n, h = f(x, u), fx.shape[0], 1e-7  # 1e-6 leaves 2e-4 of truncation error at 0.1 mm deep
    E = np.eye(n)

    def diff(xp, xm):
        return (dyn.minus(xp, f0) - dyn.minus(xm, f0)) / (2 * h)

    fd_x = np.stack([diff(f(dyn.plus(x, h * E[i]), u), f(dyn.plus(x, -h * E[i]), u)) for i in range(n)], 1)
    fd_u = np.stack([diff(f(x, u + h * np.eye(2)[i]), f(x, u - h * np.eye(2)[i])) for i in range(2)], 1)
    np.testing.assert_allclose(fx, fd_x, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(fu, fd_u, rtol=1e-5, atol=1e-6)
    box_v = slice(model.nv + 2, model.nv + 5)  # the box's linear velocity in the tangent of the state
    assert float(np.max(np.abs(fu[box_v]))) > 1e-3  # the torques reach the box through the tip


def test_ilqr_pushes_a_box_through_the_fingertip_contact():
    """``ilqr`` through the contact step slides the box 10 cm in 1 s and leaves it at rest,
    within the torque limits; the box keeps its line and stays upright. The same torques without
    the fingertip's contact leave the box where it stood: the push is the contact's. Where the
    box slides free of the tip it decelerates at ``mu g``, the ground's Coulomb friction."""
    ex = _push_example()
    r = ex.run()
    res = r["res"]
    assert bool(res.converged), int(res.status)
    assert float(res.cost) < 0.01 * float(res.cost_history[0])
    x, y, z = r["box_end"]
    assert abs(x - ex.BOX_X - ex.PUSH_BY) < 3e-3 and abs(y) < 3e-3 and abs(z - ex.BOX_Z) < 1e-3
    assert abs(abs(float(r["box_quat"][0])) - 1.0) < 1e-4  # upright, not turned
    assert r["box_speed"] < 0.02
    assert float(jnp.max(jnp.abs(res.u))) <= ex.UMAX + 1e-9
    assert abs(r["box_moved_apart"]) < 5e-4
    assert r["free_knots"] >= 2
    np.testing.assert_allclose(r["slide_deceleration"], ex.MU * 9.81, rtol=0.03)
