"""trajopt's residual costs: frame placement and velocity and the centre of mass against Pinocchio's
values and derivatives (stored by tests/reference/generate_pinocchio_residuals.py, the quantities
Crocoddyl's residual models compute), the contact force against the Hunt-Crossley law, and the
Gauss-Newton expansion against the exact derivatives of the cost."""

import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from test_trajopt_contact import LIFT  # the foot (a 5 cm sphere on the leg) on the ground

import jaxdyn
from jaxdyn import contact as C
from jaxdyn import trajopt as to

DATA = os.path.join(os.path.dirname(__file__), "data", "pinocchio", "solo12_floating_residuals.npz")


def _q(q):
    """Pinocchio's free-flyer configuration ``[p, qx, qy, qz, qw, joints]`` in jaxdyn's order."""
    q = np.asarray(q)
    return np.concatenate([q[..., :3], q[..., 6:7], q[..., 3:6], q[..., 7:]], -1)


def _v(v, axis=-1):
    """Pinocchio's free-flyer tangent ``[linear, angular, joints]`` in jaxdyn's order."""
    v = np.moveaxis(np.asarray(v), axis, -1)
    return np.moveaxis(np.concatenate([v[..., 3:6], v[..., :3], v[..., 6:]], -1), -1, axis)


def _swap(r, axis=-1):
    """``[linear; angular]`` <-> ``[angular; linear]``."""
    r = np.moveaxis(np.asarray(r), axis, -1)
    return np.moveaxis(np.concatenate([r[..., 3:], r[..., :3]], -1), -1, axis)


@pytest.fixture(scope="module")
def solo():
    ref = np.load(DATA)
    m = jaxdyn.load_robot("solo12", dtype=jnp.float64)
    dyn = to.model_dynamics(m, 0.01, "semi_implicit_euler", options=jaxdyn.sim.IDEAL)
    return ref, m, dyn


def _states(ref):
    return jnp.asarray(np.concatenate([_q(ref["q"]), _v(ref["v"])], -1))


def _value_and_jacobian(cost, dyn, x):
    return cost.residual(x, None, None), cost.jacobians(dyn, x, None, None)[0]


def test_frame_placement_residual_and_derivative_match_pinocchio(solo):
    """``log6(M_ref^-1 M(q))`` and its derivative along the configuration's tangent,
    ``Jlog6 J_local``, to 1e-10 for three frames (a foot, a shank, the base) at four states of
    the floating Solo-12 (random base orientations); the velocity columns are zero."""
    ref, m, dyn = solo
    frames = [str(f) for f in ref["frames"]]

    @jax.jit
    @jax.vmap
    def placements(R0, p0, x):  # every frame at one state
        return [_value_and_jacobian(to.FramePlacementCost(m, f, R0[i], p0[i]), dyn, x) for i, f in enumerate(frames)]

    out = placements(jnp.asarray(ref["placement_ref_R"]), jnp.asarray(ref["placement_ref_p"]), _states(ref))
    for f, (r, J) in enumerate(out):
        np.testing.assert_allclose(r, _swap(ref["placement_r"][:, f]), atol=1e-10)
        np.testing.assert_allclose(J[:, :, :18], _v(_swap(ref["placement_J"][:, f], 1), 2), atol=1e-9)
        np.testing.assert_array_equal(J[:, :, 18:], 0.0)


def test_frame_velocity_residual_and_derivatives_match_pinocchio(solo):
    """The frame's velocity in ``local`` and ``local_world_aligned`` axes and its derivatives in
    the configuration's tangent and the velocity, to 1e-10 (Pinocchio's
    ``getFrameVelocityDerivatives`` in local axes; world-aligned, the derivative of its vector
    as tests/reference/generate_pinocchio_residuals.py states it)."""
    ref, m, dyn = solo
    frames = [str(f) for f in ref["frames"]]
    axes = (("local", "local"), ("lwa", "local_world_aligned"))

    @jax.jit
    @jax.vmap
    def velocities(x):
        return [[_value_and_jacobian(to.FrameVelocityCost(m, f, reference=a), dyn, x) for _, a in axes] for f in frames]

    out = velocities(_states(ref))
    for f in range(len(frames)):
        for (tag, _), (r, J) in zip(axes, out[f]):
            np.testing.assert_allclose(r, _swap(ref[f"velocity_{tag}"][:, f]), atol=1e-10)
            np.testing.assert_allclose(J[:, :, :18], _v(_swap(ref[f"velocity_{tag}_dq"][:, f], 1), 2), atol=1e-9)
            np.testing.assert_allclose(J[:, :, 18:], _v(_swap(ref[f"velocity_{tag}_dv"][:, f], 1), 2), atol=1e-10)


def test_center_of_mass_residual_and_jacobian_match_pinocchio(solo):
    ref, m, dyn = solo
    target = jnp.array([0.1, -0.2, 0.3])
    r, J = jax.jit(jax.vmap(lambda x: _value_and_jacobian(to.CenterOfMassCost(m, target), dyn, x)))(_states(ref))
    np.testing.assert_allclose(r + target, ref["com"], atol=1e-12)
    np.testing.assert_allclose(J[:, :, :18], _v(ref["com_J"], 2), atol=1e-10)


def test_gauss_newton_expansion(solo):
    """The expansion's gradient is the cost's exact gradient (Gauss-Newton is exact to first
    order) with per-row weights, its Hessian ``r_x' W r_x`` is positive semi-definite, and it
    equals the exact Hessian where the residual vanishes (the floating Solo-12's foot)."""
    ref, m, dyn = solo
    x = _states(ref)[1]
    u = jnp.zeros(dyn.nu)
    w = jnp.array([1.0, 2.0, 3.0, 0.5, 0.25, 4.0])

    def exact(c, x):
        run = lambda dx: c.running(dyn.plus(x, dx), u, 3)  # noqa: E731
        z = jnp.zeros(dyn.ndx)
        return jax.grad(run)(z), jax.hessian(run)(z)

    @jax.jit
    def everything(x, R0, p0):
        cost = to.FramePlacementCost(m, "FL_FOOT", R0, p0, weight=w, terminal_weight=2.0 * w)
        M = jaxdyn.frame_placement(m, x[: m.nq], "FL_FOOT")
        at = to.FramePlacementCost(m, "FL_FOOT", M.R, M.p, weight=w)  # r = 0 at x
        return (
            cost.expand(dyn, x, u, 3),
            exact(cost, x),
            cost.expand_terminal(dyn, x),
            at.expand(dyn, x, u, 3)[2],
            exact(at, x)[1],
        )

    (lx, lu, lxx, luu, lux), (g, H), (lfx, lfxx), lxx0, H0 = everything(
        x, jnp.asarray(ref["placement_ref_R"][1, 0]), jnp.asarray(ref["placement_ref_p"][1, 0])
    )
    np.testing.assert_allclose(lx, g, rtol=1e-10, atol=1e-12)
    assert np.all(lu == 0.0) and np.all(luu == 0.0) and np.all(lux == 0.0)
    assert np.min(np.linalg.eigvalsh(lxx)) > -1e-10
    assert np.max(np.abs(lxx - H)) > 1e-3  # the residual is large: the two Hessians differ
    np.testing.assert_allclose(lfx, 2.0 * lx, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(lfxx, 2.0 * lxx, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(lxx0, H0, atol=1e-9)


def test_frame_position_gauss_newton_hessian():
    """``FramePositionCost`` (``hessian="gauss_newton"``, the default) on an arm (the closed form): the exact
    gradient and ``weight J' J``, the exact Hessian less the point's second derivatives."""
    m = jaxdyn.load_robot("ur5", dtype=jnp.float64)
    dyn = to.model_dynamics(m, 0.01, "semi_implicit_euler")
    x = jnp.concatenate([jaxdyn.neutral(m) + 0.3, 0.1 * jnp.ones(m.nv)])
    u = jnp.zeros(dyn.nu)
    target = jnp.array([0.2, 0.3, 0.1])
    ex = to.FramePositionCost(m, "tool0", target, weight=2.0, hessian="exact")
    gn = to.FramePositionCost(m, "tool0", target, weight=2.0)  # Gauss-Newton by default

    @jax.jit
    def both(x):
        J = jax.jacfwd(lambda dq: ex.position(dyn.plus(x, jnp.concatenate([dq, jnp.zeros(m.nv)]))))(jnp.zeros(m.nv))
        return ex.expand(dyn, x, u, 0), gn.expand(dyn, x, u, 0), J

    (lx_e, _, lxx_e, _, _), (lx_g, _, lxx_g, _, _), J = both(x)
    np.testing.assert_allclose(lx_g, lx_e, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(lxx_g[: m.nv, : m.nv], 2.0 * J.T @ J, rtol=1e-9, atol=1e-12)
    assert np.max(np.abs(lxx_g - lxx_e)) > 1e-3


def test_contact_force_cost_is_the_hunt_crossley_force():
    """The force on the leg of a foot ``d`` deep, going in at ``v_pen``:
    ``k d^p (1 + c_d v_pen)`` upwards (the law of jaxdyn.contact.laws with the contact's own
    parameters); its derivatives are those of the law (``r_x`` against central differences); a
    body without contact, or unknown, is refused by name."""
    m = jaxdyn.load_mjcf(LIFT, dtype=jnp.float64)
    params = C.ContactParams()
    ct = C.Contact(C.Ground(), params)
    dyn = to.model_dynamics(m, 0.02, "semi_implicit_euler", contact=ct, actuated=["knee"])
    cost = to.ContactForceCost(m, ct, "leg", target=jnp.array([0.0, 0.0, 20.0]), weight=1.0)
    x = jnp.array([-0.004, 0.002, -0.05, 0.0])  # the foot 2 mm deep, going in at 0.05 m/s
    d, v_pen = 0.002, 0.05
    k, p, cd = float(params.stiffness), float(params.exponent), float(params.damping)
    f = np.array([0.0, 0.0, k * d**p * (1.0 + cd * v_pen)])
    h, E = 1e-7, jnp.eye(4)

    @jax.jit
    def everything(x):
        fd = (jax.vmap(cost.force)(x + h * E) - jax.vmap(cost.force)(x - h * E)).T / (2 * h)
        return cost.force(x), cost.residual(x, None, 0), cost.jacobians(dyn, x, jnp.zeros(1), 0)[0], fd

    force, r, rx, fd = everything(x)
    np.testing.assert_allclose(force, f, rtol=1e-10, atol=1e-9)
    np.testing.assert_allclose(r, f - np.array([0.0, 0.0, 20.0]), rtol=1e-10, atol=1e-9)
    np.testing.assert_allclose(rx, fd, rtol=1e-6, atol=1e-3)
    assert float(rx[2, 0]) < -1e3  # deeper (z down) pushes harder
    with pytest.raises(ValueError, match="body 'torso' has no contact"):
        to.ContactForceCost(m, ct, "torso")
    with pytest.raises(ValueError, match="body 'foot' is not a body"):
        to.ContactForceCost(m, ct, "foot")


def test_residual_costs_refuse_bad_input_by_name():
    m = jaxdyn.load_robot("ur5", dtype=jnp.float64)
    fr = m.frame_names[-1]
    with pytest.raises(ValueError, match="FramePlacementCost: frame 'nope'"):
        to.FramePlacementCost(m, "nope", np.eye(3), np.zeros(3))
    with pytest.raises(ValueError, match=r"FramePlacementCost: rotation must have shape \(3, 3\)"):
        to.FramePlacementCost(m, fr, np.eye(4), np.zeros(3))
    with pytest.raises(ValueError, match=r"FramePlacementCost: weight must be a scalar or have shape \(6,\)"):
        to.FramePlacementCost(m, fr, np.eye(3), np.zeros(3), weight=np.ones(3))
    with pytest.raises(ValueError, match="FrameVelocityCost: reference must be"):
        to.FrameVelocityCost(m, fr, reference="body")
    with pytest.raises(ValueError, match=r"CenterOfMassCost: target must have shape \(3\) or \(T\+1, 3\)"):
        to.CenterOfMassCost(m, np.zeros(2))
    with pytest.raises(ValueError, match="FramePositionCost: hessian must be one of"):
        to.FramePositionCost(m, fr, np.zeros(3), hessian="newton")


def test_fddp_reaches_a_placement_with_per_knot_references():
    """A UR5 tool placement (position and orientation) reached by ``fddp`` with a frame
    placement cost, a small velocity cost on the tool (per-knot zero references) and a torque
    cost: the final placement within 1 mm and 0.01 rad of the target."""
    m = jaxdyn.load_robot("ur5", dtype=jnp.float64)
    frame = m.frame_names[-1]
    T, dt = 30, 0.02
    dyn = to.model_dynamics(m, dt, "semi_implicit_euler")
    q_goal = jaxdyn.neutral(m) + jnp.array([0.4, -0.3, 0.5, 0.2, -0.4, 0.3])
    M = jaxdyn.frame_placement(m, q_goal, frame)
    x0 = jnp.concatenate([jaxdyn.neutral(m), jnp.zeros(m.nv)])
    g = jax.jit(lambda q: jaxdyn.rnea(m, q, jnp.zeros(m.nv), jnp.zeros(m.nv)))(x0[: m.nq])
    cost = (
        to.FramePlacementCost(m, frame, M.R, M.p, weight=dt * 10.0, terminal_weight=1e3)
        + to.FrameVelocityCost(m, frame, velocity=jnp.zeros((T + 1, 6)), weight=dt * 0.1, terminal_weight=10.0)
        + to.quadratic_cost(jnp.zeros(2 * m.nv), 0.0, dt * 1e-3, u_ref=g, space=dyn)
    )
    us0 = jnp.broadcast_to(g, (T, m.nv))
    xs0 = jnp.broadcast_to(x0, (T + 1, x0.shape[0]))
    res = jax.jit(lambda: to.fddp(dyn, cost, x0, us0, xs0, options=to.ILQROptions(max_iterations=100)))()
    assert int(res.status) == 0
    Mf = jaxdyn.frame_placement(m, res.x[-1, : m.nq], frame)
    assert float(jnp.linalg.norm(Mf.p - M.p)) < 1e-3
    assert float(jnp.linalg.norm(jaxdyn.spatial.rotation_log(M.R.T @ Mf.R))) < 1e-2
