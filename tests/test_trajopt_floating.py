"""trajopt on a floating base: Solo-12 turning its base in flight, against Crocoddyl 3.2.1's FDDP
on the same problem (stored by tests/reference/generate_crocoddyl_solo12.py)."""

import json
import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxdyn
from jaxdyn import trajopt as to


def _q(q):
    """Pinocchio's free-flyer configuration ``[p, qx, qy, qz, qw, joints]`` in jaxdyn's order."""
    q = np.asarray(q)
    return np.concatenate([q[..., :3], q[..., 6:7], q[..., 3:6], q[..., 7:]], -1)


def _v(v):
    """Pinocchio's free-flyer tangent ``[linear, angular, joints]`` in jaxdyn's order."""
    v = np.asarray(v)
    return np.concatenate([v[..., 3:6], v[..., :3], v[..., 6:]], -1)


def _x(x, nq=19):
    x = np.asarray(x)
    return np.concatenate([_q(x[..., :nq]), _v(x[..., nq:])], -1)


def _w(w, nv=18):
    return np.concatenate([_v(w[:nv]), _v(w[nv:])])


DATA = os.path.join(os.path.dirname(__file__), "data", "crocoddyl", "fddp_solo12_flight.json")


@pytest.fixture(scope="module")
def flight():
    """The problem in jaxdyn's statement and Crocoddyl's stored solution."""
    with open(DATA) as fh:
        ref = json.load(fh)
    m = jaxdyn.load_robot("solo12", dtype=jnp.float64)
    dt = ref["dt"]
    dyn = to.model_dynamics(m, dt, "semi_implicit_euler", options=jaxdyn.sim.IDEAL)
    Q = dt * _w(np.asarray(ref["w_x"]))
    cost = to.quadratic_cost(_x(ref["x_ref"]), Q, dt * ref["w_u"], Qf=_w(np.asarray(ref["w_xt"])), nu=12, space=dyn)
    return ref, dyn, cost, jnp.asarray(_x(ref["x0"]))


def test_crocoddyl_solution_rolls_out_and_costs_the_same_in_jaxdyn(flight):
    """The same problem on both sides: Crocoddyl's controls roll out in jaxdyn (free-flyer on
    SE(3), 12 actuated joints, gravity) to Crocoddyl's own states, and jaxdyn's cost of them is
    Crocoddyl's cost."""
    ref, dyn, cost, x0 = flight
    us = jnp.asarray(ref["us"])

    @jax.jit
    def rollout(us):
        xs = to.simulate(dyn, x0, us)
        return xs, to.total_cost(cost, xs, us)

    xs, J = rollout(us)
    assert ref["converged"] and ref["gaps_norm"] < 1e-9
    np.testing.assert_allclose(xs, _x(ref["xs"]), atol=1e-9)
    np.testing.assert_allclose(J, ref["cost"], rtol=1e-10)
    # the legs turned the base: roll and yaw moved towards the target with zero angular momentum
    assert float(jnp.abs(xs[-1, 4])) > 0.01


def test_fddp_floating_base_reaches_crocoddyl_cost(flight):
    """jaxdyn's fddp from Crocoddyl's guess (x0 at every knot: the fall leaves a gap at each,
    zero torques) closes the gaps and reaches the cost of Crocoddyl's solution to 1e-6
    relative, with the same controls to the solution's conditioning."""
    ref, dyn, cost, x0 = flight
    T = ref["T"]
    xs0 = jnp.broadcast_to(x0, (T + 1, x0.shape[0]))
    opt = to.ILQROptions(max_iterations=100, tolerance=1e-9)
    res = jax.jit(lambda xs: to.fddp(dyn, cost, x0, jnp.zeros((T, 12)), xs, options=opt))(xs0)
    assert bool(res.converged) and float(jnp.max(jnp.abs(res.gaps))) == 0.0
    J_c = to.total_cost(cost, to.simulate(dyn, x0, jnp.asarray(ref["us"])), jnp.asarray(ref["us"]))
    assert abs(float(res.cost) / float(J_c) - 1.0) < 1e-6
    np.testing.assert_allclose(res.u, ref["us"], atol=1e-3 * float(np.max(np.abs(ref["us"]))))
    assert int(res.iterations) <= 2 * ref["iterations"]


def test_quadratic_cost_gauss_newton_expansion_on_the_free_flyer(flight):
    """``quadratic_cost`` on SE(3) x R^n (``hessian="gauss_newton"``, the default): the exact
    gradient (``jax.grad`` through ``(+)`` and ``(-)``), and a Hessian that is the exact one
    less the residual's curvature ``sum_i (Q r)_i d2r_i/ddx2`` (each ``d2r_i`` by
    ``jax.hessian``), so equal to it at the reference; the terminal expansion likewise."""
    ref, dyn, cost, x0 = flight
    exact = to.quadratic_cost(cost.x_ref, cost.Q, cost.R, Qf=cost.Qf, nu=12, space=dyn, hessian="exact")
    rng = np.random.default_rng(3)
    # a state away from the reference: the base turned and moved, the legs and velocities random
    x = dyn.plus(x0, jnp.asarray(rng.uniform(-0.5, 0.5, dyn.ndx)))
    u = jnp.asarray(rng.standard_normal(12))
    x_ref = cost.x_ref

    @jax.jit
    def expansions(x):
        res = lambda dx: dyn.minus(dyn.plus(x, dx), x_ref)  # noqa: E731
        z = jnp.zeros(dyn.ndx)
        curvature = jnp.einsum("i,ijk->jk", 0.5 * (cost.Q + cost.Q.T) @ res(z), jax.hessian(res)(z))
        return (
            cost.expand(dyn, x, u, 0),
            exact.expand(dyn, x, u, 0),
            curvature,
            cost.expand_terminal(dyn, x),
            exact.expand_terminal(dyn, x),
        )

    (lx, lu, lxx, luu, lux), (lx_e, lu_e, lxx_e, luu_e, lux_e), curv, (tx, txx), (tx_e, txx_e) = expansions(x)
    scale = float(jnp.max(jnp.abs(lxx_e)))
    np.testing.assert_allclose(lx, lx_e, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(tx, tx_e, rtol=1e-10, atol=1e-10)
    assert float(jnp.max(jnp.abs(curv))) > 1e-3 * scale  # the two Hessians differ here
    np.testing.assert_allclose(lxx + curv, lxx_e, atol=1e-10 * scale)
    np.testing.assert_allclose(np.linalg.eigvalsh(np.asarray(lxx)).min(), 0.0, atol=1e-10 * scale)  # PSD, Q singular
    for a, b in ((lu, lu_e), (luu, luu_e), (lux, lux_e)):
        np.testing.assert_allclose(a, b, atol=1e-12)
    # at the reference the residual is zero and the expansions are the same
    at_ref = expansions(x_ref)
    np.testing.assert_allclose(at_ref[0][2], at_ref[1][2], atol=1e-10 * scale)
    np.testing.assert_allclose(at_ref[3][1], at_ref[4][1], atol=1e-10 * float(jnp.max(jnp.abs(at_ref[4][1]))))
    with pytest.raises(ValueError, match="quadratic_cost: hessian must be one of"):
        to.quadratic_cost(cost.x_ref, cost.Q, cost.R, nu=12, space=dyn, hessian="newton")
