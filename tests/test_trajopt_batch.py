"""trajopt.solve_batch: many problems in a few slots, each problem's result that of its own solve."""

import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxdyn import trajopt as to

T = 12
OPT = to.ILQROptions(tolerance=1e-9, max_iterations=40)


def _pendulum(dt=0.05):
    """A torque-driven pendulum ``(theta, omega)``, symplectic Euler (theta = 0 hanging)."""

    def f(x, u):
        w = x[1] + dt * (-9.81 * jnp.sin(x[0]) - 0.1 * x[1] + u[0])
        return jnp.stack([x[0] + dt * w, w])

    return to.FunctionDynamics(f, 2, 1)


def _problem(p):
    """The swing of the pendulum to the angle ``p["goal"]`` from the states ``p["xs"]``."""
    goal = jnp.stack([p["goal"], 0.0 * p["goal"]])
    cost = to.quadratic_cost(goal, jnp.array([0.1, 0.01]), 0.01, Qf=jnp.array([100.0, 10.0]), nu=1)
    return to.Problem(_pendulum(), cost, p["xs"][0], jnp.zeros((T, 1)), p["xs"])


def _params(n, seed=0):
    rng = np.random.default_rng(seed)
    goal = jnp.asarray(rng.uniform(0.3, 2.5, n))
    s = jnp.linspace(0.0, 1.0, T + 1)[:, None]
    power = jnp.asarray(rng.choice([0.0, 1.0, 3.0], n))
    xs = jnp.stack([jnp.concatenate([g * s**pw, 0.0 * s], 1) for g, pw in zip(goal, power)])
    return {"goal": goal, "xs": xs}


@pytest.fixture(scope="module")
def one_by_one():
    """The reference: each problem of ``_params(7)`` solved by its own jitted fddp / ilqr."""
    params = _params(7)

    @jax.jit
    def solve(p):
        pr = _problem(p)
        f = to.fddp(pr.dynamics, pr.cost, pr.x0, pr.u_init, pr.x_init, -4.0, 4.0, options=OPT)
        i = to.ilqr(pr.dynamics, pr.cost, pr.x0, pr.u_init, -4.0, 4.0, options=OPT)
        return f, i

    refs = [solve(jax.tree_util.tree_map(lambda a: a[i], params)) for i in range(7)]
    return params, [r[0] for r in refs], [r[1] for r in refs]


def _same(batch, refs):
    for i, r in enumerate(refs):
        assert int(batch.iterations[i]) == int(r.iterations) and int(batch.status[i]) == int(r.status)
        np.testing.assert_allclose(batch.cost[i], r.cost, rtol=1e-12)
        np.testing.assert_allclose(batch.u[i], r.u, atol=1e-12)
        np.testing.assert_allclose(batch.x[i], r.x, atol=1e-12)
        np.testing.assert_allclose(batch.K[i], r.K, atol=1e-10)
        np.testing.assert_allclose(batch.gaps[i], r.gaps, atol=1e-12)


def test_solve_batch_equals_one_by_one_solves(one_by_one):
    """Seven problems finishing at different iterations, in three slots (refilled as problems
    finish) and in seven (every problem at once): each result is its own solve's; the batched
    iterations run stay within the problems' summed work spread over the slots, below the
    lock-step count (problems times the largest count) of a vmapped batch."""
    params, f_refs, i_refs = one_by_one
    its = np.array([int(r.iterations) for r in f_refs])
    assert len(set(its.tolist())) > 2 and np.all([bool(r.converged) for r in f_refs])
    for slots in (3, 7):
        out = to.solve_batch(_problem, params, "fddp", -4.0, 4.0, OPT, slots=slots)
        _same(out.result, f_refs)
        # per problem: its iterations, the evaluation of the guess and a last convergence test
        work = int(np.sum(its + 2))
        assert int(out.passes) <= -(-work // slots) + int(its.max()) + 2
        assert int(out.passes) >= int(its.max()) + 1
    assert int(to.solve_batch(_problem, params, "fddp", -4.0, 4.0, OPT, slots=3).passes) < 7 * (its.max() + 1) / 2


def test_solve_batch_ilqr_and_under_jit_with_closed_over_params(one_by_one):
    """``method="ilqr"`` (single shooting: the problems without their states), and a call inside
    ``jax.jit`` with the data closed over (the checks then read host values only)."""
    params, f_refs, i_refs = one_by_one

    def single(p):
        pr = _problem(p)
        return pr._replace(x_init=None)

    _same(to.solve_batch(single, params, "ilqr", -4.0, 4.0, OPT, slots=2).result, i_refs)
    _same(jax.jit(lambda: to.solve_batch(_problem, params, "fddp", -4.0, 4.0, OPT, slots=4).result)(), f_refs)


def test_solve_batch_bad_input():
    params = _params(3)
    with pytest.raises(ValueError, match="method must be"):
        to.solve_batch(_problem, params, "sqp")
    with pytest.raises(ValueError, match=r"slots must be an integer in \[1, 3\]"):
        to.solve_batch(_problem, params, slots=4)
    with pytest.raises(ValueError, match="one common leading"):
        to.solve_batch(_problem, {"goal": params["goal"][:2], "xs": params["xs"]})
    with pytest.raises(ValueError, match="must return a trajopt.Problem"):
        to.solve_batch(lambda p: (1, 2), params)
    with pytest.raises(ValueError, match="takes no x_init"):
        to.solve_batch(_problem, params, "ilqr")
    with pytest.raises(ValueError, match=r"x_init must have shape \(13, 2\)"):
        to.solve_batch(lambda p: _problem(p)._replace(x_init=p["xs"][1:]), params)
    bad = dict(params, xs=params["xs"].at[0, 3, 0].set(jnp.nan))
    with pytest.raises(ValueError, match="x_init of problem 0 contains NaN"):
        to.solve_batch(_problem, bad)


def test_solve_batch_over_two_host_devices():
    """Seven problems over two CPU devices (a subprocess with two host devices): one ``pmap``,
    each device its own queue of four (the last problem repeated as padding, its copy dropped);
    the results equal those of one device, in the order of the problems."""
    code = """
import jax
jax.config.update("jax_enable_x64", True)
import numpy as np
from jaxdyn import trajopt as to
from test_trajopt_batch import OPT, _params, _problem
assert len(jax.devices()) == 2
p = _params(7)
two = to.solve_batch(_problem, p, "fddp", -4.0, 4.0, OPT, slots=2, devices=jax.devices())
one = to.solve_batch(_problem, p, "fddp", -4.0, 4.0, OPT, slots=2)  # the default device
for a, b in zip(two.result, one.result):
    assert a.shape == b.shape and a.shape[0] == 7
    np.testing.assert_allclose(np.asarray(a, float), np.asarray(b, float), rtol=1e-12, atol=1e-12)
assert int(two.passes) < int(one.passes)
print("ok", int(two.passes), int(one.passes))
"""
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=2", JAX_PLATFORMS="cpu")
    env["PYTHONPATH"] = os.pathsep.join([os.path.dirname(__file__), env.get("PYTHONPATH", "")])
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0 and "ok" in out.stdout, out.stderr[-3000:]
