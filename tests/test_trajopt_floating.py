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
