"""Trajectory optimisation (jaxdyn.trajopt). iLQR: the LQR special case against a Riccati
recursion and a direct solve, the double-pendulum swing-up with torque limits, monotone cost,
first-order model of the cost change, bad input. FDDP: the expected change with gaps exact on a
linear-quadratic problem, ilqr's optimum from feasible and infeasible guesses, Crocoddyl's
stored FDDP solution, batches. Constraints by the augmented Lagrangian, and MPC in closed loop.
One jitted solve per problem structure (compile time dominates)."""

import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxdyn
from jaxdyn import trajopt as to

UMAX = 0.5  # [N m] torque limit of the swing-up (gravity torque at horizontal is ~0.75 N m)
OPT = to.ILQROptions(max_iterations=80, tolerance=1e-6)


@pytest.fixture(scope="module")
def pendulum():
    """Double pendulum (q = 0 is upright, q = (pi, 0) hanging), 1.2 s at 10 ms, SIE."""
    m = jaxdyn.load_robot("double_pendulum", dtype=jnp.float64)
    dyn = to.model_dynamics(m, 0.01, "semi_implicit_euler")
    cost = to.quadratic_cost(jnp.zeros(4), 0.0, 1.0, Qf=[100.0, 100.0, 1.0, 1.0], nu=2)
    x0 = jnp.array([np.pi, 0.0, 0.0, 0.0])
    T = 120
    res = to.ilqr(dyn, cost, x0, jnp.zeros((T, 2)), -UMAX, UMAX, options=OPT)
    inf = jnp.full(2, jnp.inf)

    @jax.jit
    def probe(us, alphas):
        """Rollout of ``us``, then one unconstrained backward pass and the forward passes for
        ``alphas`` (``alphas[0] = 0`` gives the cost of ``us`` itself)."""
        xs = to.simulate(dyn, x0, us)
        exp = to.linearize(dyn, cost, xs, us)
        k, K, dV, ok, _ = to.backward_pass(exp, us, -inf, inf, 0.0)
        fw = jax.vmap(lambda a: to.forward_pass(dyn, cost, xs, us, k, K, a, -inf, inf)[2])
        return xs, fw(alphas), dV, ok

    return m, dyn, cost, x0, res, probe


def test_swing_up_reaches_goal_within_limits(pendulum):
    m, dyn, cost, x0, res, probe = pendulum
    h = np.asarray(res.cost_history)
    h = h[np.isfinite(h)]
    assert len(h) == int(res.iterations) + 1
    # from zero torque (the pendulum stays hanging) to upright
    assert h[-1] < 0.1 * h[0]
    assert np.all(np.diff(h) <= 1e-12 * h[:-1]), "cost must decrease monotonically"
    xT = np.asarray(res.x[-1])
    assert np.all(np.abs(xT[:2]) < 0.05), f"final angles {xT[:2]} not upright"
    assert np.all(np.abs(xT[2:]) < 0.5), f"final velocities {xT[2:]} not small"
    u = np.asarray(res.u)
    assert np.all(np.abs(u) <= UMAX + 1e-12)
    assert np.max(np.abs(u)) > 0.99 * UMAX  # the limit is active: the swing-up needs pumping
    # the returned states are the rollout of the returned controls
    xs, J, _, _ = probe(res.u, jnp.array([0.0, 1e-2, 1e-3, 1e-4]))
    np.testing.assert_allclose(xs, res.x, atol=1e-10)
    np.testing.assert_allclose(J[0], res.cost, rtol=1e-10)
    assert res.K.shape == (120, 2, 4) and res.k.shape == (120, 2)


def test_expected_decrease_is_first_order_exact(pendulum):
    """At a non-optimal trajectory the model dV(alpha) = alpha dV1 + alpha^2 dV2 of the backward
    pass must match the actual cost change of the forward pass to first order in alpha (a check
    of the jacfwd dynamics and the cost gradients against the true rollout)."""
    m, dyn, cost, x0, _, probe = pendulum
    T = 120
    us = 0.2 * jnp.sin(jnp.linspace(0.0, 6.0, T))[:, None] * jnp.array([1.0, -0.5])
    alphas = jnp.array([0.0, 1e-2, 1e-3, 1e-4])
    _, Ja, dV, ok = probe(us, alphas)
    assert bool(ok) and float(dV[0]) < 0
    J, Ja, alphas = Ja[0], Ja[1:], alphas[1:]
    ratio = np.asarray((Ja - J) / (alphas * dV[0] + alphas**2 * dV[1]))
    np.testing.assert_allclose(ratio[1:], 1.0, atol=2e-3)
    assert abs(ratio[-1] - 1.0) < abs(ratio[0] - 1.0) + 1e-6


def _riccati(A, B, Q, R, Qf, T):
    P, Ks = Qf, []
    for _ in range(T):
        K = -np.linalg.solve(R + B.T @ P @ B, B.T @ P @ A)
        P = Q + A.T @ P @ A + A.T @ P @ B @ K
        Ks.append(K)
    return Ks[::-1]


def test_lqr_one_iteration_matches_riccati_and_direct_solve():
    rng = np.random.default_rng(3)
    nx, nu, T = 4, 2, 15
    A = np.eye(nx) + 0.1 * rng.standard_normal((nx, nx))
    B = rng.standard_normal((nx, nu))
    Q, R, Qf = np.diag([1.0, 2.0, 0.5, 1.0]), np.diag([0.3, 0.1]), 10.0 * np.eye(nx)
    dyn = to.LinearDynamics(A, B)
    cost = to.quadratic_cost(jnp.zeros(nx), Q, R, Qf)
    x0 = rng.standard_normal(nx)
    res = to.ilqr(dyn, cost, x0, jnp.zeros((T, nu)), options=to.ILQROptions(mu_init=0.0, max_iterations=10))
    assert int(res.iterations) == 1 and bool(res.converged)
    # direct solve of the quadratic program in the stacked controls
    # direct solve of the quadratic program in the stacked controls: x = P x0 + G u
    P = np.zeros(((T + 1) * nx, nx))
    G = np.zeros(((T + 1) * nx, T * nu))
    P[:nx] = np.eye(nx)
    for t in range(T):
        P[(t + 1) * nx : (t + 2) * nx] = A @ P[t * nx : (t + 1) * nx]
        G[(t + 1) * nx : (t + 2) * nx] = A @ G[t * nx : (t + 1) * nx]
        G[(t + 1) * nx : (t + 2) * nx, t * nu : (t + 1) * nu] = B
    Qbig = np.kron(np.eye(T + 1), Q)
    Qbig[-nx:, -nx:] = Qf
    Rbig = np.kron(np.eye(T), R)
    u_star = -np.linalg.solve(G.T @ Qbig @ G + Rbig, G.T @ Qbig @ P @ x0)
    xs = P @ x0 + G @ u_star
    J_star = 0.5 * xs @ Qbig @ xs + 0.5 * u_star @ Rbig @ u_star
    np.testing.assert_allclose(res.u, u_star.reshape(T, nu), atol=1e-10)
    np.testing.assert_allclose(res.x, xs.reshape(T + 1, nx), atol=1e-10)
    np.testing.assert_allclose(res.cost, J_star, rtol=1e-12)
    np.testing.assert_allclose(res.cost_history[1], res.cost, rtol=1e-12)
    for t, K in enumerate(_riccati(A, B, Q, R, Qf, T)):
        np.testing.assert_allclose(res.K[t], K, atol=1e-10)
    np.testing.assert_allclose(res.k, 0.0, atol=1e-10)  # converged: no feedforward left


def test_jit_vmap_with_closed_over_inputs():
    """``jit(vmap(ilqr))`` with ``x0`` or the initial controls closed over (concrete constants
    inside the trace, where every jnp operation returns a tracer): the value checks run on the
    host values and the batched solves equal the one-by-one ones, problems that finish at
    different iterations included."""
    rng = np.random.default_rng(5)
    nx, nu, T = 3, 2, 8
    dyn = to.LinearDynamics(np.eye(nx) + 0.1 * rng.standard_normal((nx, nx)), rng.standard_normal((nx, nu)))
    cost = to.quadratic_cost(jnp.zeros(nx), 1.0, 0.1, nu=nu)
    opt = to.ILQROptions(max_iterations=3)
    X0 = jnp.asarray(rng.standard_normal((2, nx))) * jnp.array([[1.0], [3.0]])  # 2 and 1 iterations
    U = jnp.zeros((T, nu))

    def solve(x, u):
        r = to.ilqr(dyn, cost, x, u, -0.05, 0.05, options=opt)
        return r.cost + 1e3 * r.iterations  # the iterations too: masks of finished problems

    ref = np.array([solve(x, U) for x in X0])
    u_closed = jax.jit(jax.vmap(lambda x: solve(x, U)))(X0)
    both_closed = jax.jit(lambda: jax.vmap(lambda x: solve(x, U))(X0))()
    x_closed = jax.jit(jax.vmap(lambda u: solve(X0[0], u)))(jnp.stack([U, U + 0.1]))
    np.testing.assert_allclose(u_closed, ref, rtol=1e-12)
    np.testing.assert_allclose(both_closed, ref, rtol=1e-12)
    np.testing.assert_allclose(x_closed[0], ref[0], rtol=1e-12)
    # a closed-over constant is still checked
    U_nan = U.at[0, 0].set(jnp.nan)
    with pytest.raises(ValueError, match="u_init contains NaN"):
        jax.jit(lambda x: solve(x, U_nan))(X0[0])


def _jacobians_match_jacfwd(cases, seed=0):
    """ModelDynamics.jacobians against jacfwd of the step (Dynamics.jacobians), each case a
    ``(dynamics, control or None)``, in one jitted program."""
    rng = np.random.default_rng(seed)
    args = []
    for i, (dyn, u) in enumerate(cases):
        m = dyn.model
        q = jaxdyn.random_configuration(m, jax.random.PRNGKey(i))
        x = jnp.concatenate([q, jnp.asarray(rng.standard_normal(m.nv))])
        args.append((x, jnp.asarray(3 * rng.standard_normal(dyn.nu)) if u is None else jnp.asarray(u)))
    dyns = [d for d, _ in cases]
    assert all(d.closed_form for d in dyns)

    @jax.jit
    def both(dyns, args):
        return [(d.jacobians(x, u), to.Dynamics.jacobians(d, x, u)) for d, (x, u) in zip(dyns, args)]

    for pair in both(dyns, args):
        for a, ref in zip(*pair):
            np.testing.assert_allclose(a, ref, atol=1e-10 * max(1.0, float(jnp.max(jnp.abs(ref)))))


def test_closed_form_step_jacobians_equal_jacfwd():
    """aba_derivatives and the integrator's chain rule (ModelDynamics.jacobians) equal jacfwd of
    the step: implicit damping, passive torques, one torque beyond its effort limit (the clip's
    zero derivative)."""
    pend = jaxdyn.load_robot("double_pendulum", dtype=jnp.float64)
    dyn = to.model_dynamics(pend, 0.01, "implicit_euler")
    with jaxdyn.executor(batch="vmap"):  # the reference jacfwd compiles faster through vmap
        _jacobians_match_jacfwd([(dyn, [1e3, 0.3])])
    assert not to.model_dynamics(pend, 0.01, "rk4").closed_form
    # the joints' implicit Coulomb friction (a velocity solve in the step) falls back to jacfwd
    rough = pend.replace(friction=jnp.full(pend.nv, 0.1))
    assert not to.model_dynamics(rough, 0.01, "implicit_euler").closed_form
    assert to.model_dynamics(rough, 0.01, "semi_implicit_euler").closed_form


def test_closed_form_step_jacobians_floating_base_and_euler():
    """As above for explicit Euler on an actuated subset with two substeps, and symplectic Euler
    on a free-flying chain with a spherical joint (the exponential map's Jacobians)."""
    from jaxdyn import builders

    pend = jaxdyn.load_robot("double_pendulum", dtype=jnp.float64)
    chain = builders.chain(3, ("revolute", "spherical", "prismatic"), floating_base=True, seed=3)
    with jaxdyn.executor(batch="vmap"):  # the reference jacfwd compiles faster through vmap
        _jacobians_match_jacfwd(
            [
                (to.model_dynamics(pend, 0.02, "euler", substeps=2, actuated=["joint2"]), None),
                (to.model_dynamics(chain, 0.01, "semi_implicit_euler"), None),
            ]
        )


def test_closed_form_cost_expansions_equal_autodiff():
    """QuadraticCost (Euclidean states) and FramePositionCost (the point Jacobian and its
    derivative from the dofs' world motion subspaces) expand in closed form as
    jax.grad/jax.hessian of the cost over (dx, du) do (Cost.expand's default)."""
    m = jaxdyn.load_robot("double_pendulum", dtype=jnp.float64)
    dyn = to.model_dynamics(m, 0.01)
    rng = np.random.default_rng(1)
    Q = rng.standard_normal((4, 4))
    cost = to.quadratic_cost(jnp.ones(4), Q, [0.3, 0.2], Qf=Q.T, space=dyn) + to.FramePositionCost(
        m, m.frame_names[-1], jnp.array([0.1, 0.2, 0.3]), weight=2.0, terminal_weight=5.0, hessian="exact"
    )
    x, u = jnp.asarray(rng.standard_normal(4)), jnp.asarray(rng.standard_normal(2))

    @jax.jit
    def both(cost, x, u):
        return (
            (cost.expand(dyn, x, u, 3), to.Cost.expand(cost, dyn, x, u, 3)),
            (cost.expand_terminal(dyn, x), to.Cost.expand_terminal(cost, dyn, x)),
        )

    for a, ref in both(cost, x, u):
        for ai, ri in zip(a, ref):
            np.testing.assert_allclose(ai, ri, atol=1e-12 * max(1.0, float(jnp.max(jnp.abs(ri)))))


def test_box_qp_active_bounds():
    H = jnp.array([[2.0, 0.5], [0.5, 1.0]])
    g = jnp.array([-4.0, 0.2])
    lo, hi = jnp.array([-1.0, -1.0]), jnp.array([1.0, 1.0])
    qp = jax.jit(to.box_qp)  # one program for both calls
    k, free, L = qp(H, g, lo, hi, jnp.zeros(2))
    # KKT by hand: u0 at its upper bound with an outward gradient, u1 interior with zero gradient
    # (0.5 * 1 + 1.0 * u1 + 0.2 = 0)
    np.testing.assert_allclose(k, [1.0, -0.7], atol=1e-12)
    assert not bool(free[0]) and bool(free[1])
    grad = g + H @ k
    assert float(grad[0]) < 0 and abs(float(grad[1])) < 1e-12
    # without bounds: the Newton solution
    k2, free2, _ = qp(H, g, -jnp.full(2, jnp.inf), jnp.full(2, jnp.inf), jnp.zeros(2))
    np.testing.assert_allclose(k2, -np.linalg.solve(np.asarray(H), np.asarray(g)), atol=1e-12)
    assert bool(jnp.all(free2))


def test_regularisation_follows_the_accepted_step_size():
    """The Levenberg-Marquardt schedule by the accepted step's size (Mastalli et al. 2020): a
    step longer than ``step_decrease`` lowers ``mu`` by ``delta`` (to 0 below ``mu_min``), a
    step of at most ``step_increase`` or none raises it, a step in between keeps it; bad
    thresholds are refused by name."""
    from jaxdyn.trajopt.ilqr import regularisation_schedule

    opt = to.ILQROptions()
    mu, delta = jnp.asarray(1e-3), jnp.asarray(1.0)
    yes, no = jnp.asarray(True), jnp.asarray(False)
    mu1, d1 = regularisation_schedule(mu, delta, yes, jnp.asarray(1.0), opt)
    np.testing.assert_allclose((mu1, d1), (1e-3 / opt.delta0, 1.0 / opt.delta0), rtol=1e-12)
    mu1, d1 = regularisation_schedule(jnp.asarray(1.5 * opt.mu_min), delta, yes, jnp.asarray(0.6), opt)
    assert float(mu1) == 0.0  # below mu_min after lowering
    for accepted, alpha in ((yes, 0.01), (yes, 0.001), (no, 1.0)):
        mu1, d1 = regularisation_schedule(mu, delta, accepted, jnp.asarray(alpha), opt)
        np.testing.assert_allclose((mu1, d1), (1e-3 * opt.delta0, opt.delta0), rtol=1e-12)
    mu1, d1 = regularisation_schedule(mu, delta, yes, jnp.asarray(0.25), opt)
    np.testing.assert_allclose((mu1, d1), (1e-3, 1.0), rtol=0)
    for bad in ({"step_increase": 0.6}, {"step_decrease": 1.5}, {"step_increase": -0.1}):
        with pytest.raises(ValueError, match="step_increase"):
            to.ILQROptions(**bad)


def test_bad_input():
    m = jaxdyn.load_robot("double_pendulum", dtype=jnp.float64)
    dyn = to.model_dynamics(m, 0.01)
    cost = to.quadratic_cost(jnp.zeros(4), 1.0, 1.0, nu=2)
    x0, u = jnp.zeros(4), jnp.zeros((5, 2))
    with pytest.raises(ValueError, match="x0"):
        to.ilqr(dyn, cost, jnp.zeros(3), u)
    with pytest.raises(ValueError, match="u_init"):
        to.ilqr(dyn, cost, x0, jnp.zeros((5, 3)))
    with pytest.raises(ValueError, match="u_init"):
        to.ilqr(dyn, cost, x0, jnp.zeros(5))
    with pytest.raises(ValueError, match="x0 contains NaN"):
        to.ilqr(dyn, cost, x0.at[1].set(jnp.nan), u)
    with pytest.raises(ValueError, match="u_init contains NaN"):
        to.ilqr(dyn, cost, x0, u.at[2, 0].set(jnp.nan))
    with pytest.raises(ValueError, match="u_lower"):
        to.ilqr(dyn, cost, x0, u, 1.0, -1.0)
    with pytest.raises(ValueError, match="u_upper"):
        to.ilqr(dyn, cost, x0, u, -1.0, jnp.ones(3))
    with pytest.raises(ValueError, match="cost"):
        to.ilqr(dyn, lambda x: x, x0, u)
    with pytest.raises(ValueError, match="nope"):
        to.model_dynamics(m, 0.01, actuated=["nope"])
    with pytest.raises(ValueError, match="integrator"):
        to.model_dynamics(m, 0.01, "leapfrog")
    with pytest.raises(ValueError, match="dt"):
        to.model_dynamics(m, -0.01)
    with pytest.raises(ValueError, match="frame 'nope'"):
        to.FramePositionCost(m, "nope", jnp.zeros(3))
    with pytest.raises(ValueError, match="Q must"):
        to.quadratic_cost(jnp.zeros(4), jnp.ones(3), 1.0, nu=2)
    assert to.model_dynamics(m, 0.01, actuated=["joint2"]).actuated == (1,)


def test_abstract_bases_name_the_missing_method():
    """Dynamics, Cost and Constraint are abstract bases: a subclass that leaves a method out gets
    an error naming the class and the method (trajopt's six NotImplementedError marks; the joint registry's five: tests/test_helical.py)."""
    from jaxdyn.trajopt import Cost, Dynamics
    from jaxdyn.trajopt.constraints import Constraint

    class Half(Dynamics):
        pass

    class HalfCost(Cost):
        pass

    class HalfConstraint(Constraint):
        pass

    d, c = Half(), HalfCost()
    g = HalfConstraint(rows=("a",), equality=False, knots="all")
    for call, what in (
        (lambda: d(None, None), "__call__"),
        (lambda: d.nx, "nx"),
        (lambda: d.nu, "nu"),
        (lambda: c.running(None, None, 0), "running"),
        (lambda: c.terminal(None), "terminal"),
        (lambda: g.running(None, None, 0), "value"),
    ):
        with pytest.raises(NotImplementedError, match=rf"Half\w*: a \w+ subclass must define (the property )?{what}"):
            call()


# -- feasibility-driven DDP (multiple shooting) ------------------------------------------------------


def test_fddp_expected_change_is_exact_on_a_linear_quadratic_problem():
    """From states that are not a rollout (random gaps), the expected change of the cost of one
    backward pass with gaps (alpha dV1 + alpha^2 dV2 and the gap term of the trial rollout)
    equals the actual change of the forward pass for every step size on a linear-quadratic
    problem, where the model is exact; each step leaves 1 - alpha of the gaps; the full step
    closes them and is the optimum, so fddp converges in one iteration to ilqr's solution."""
    rng = np.random.default_rng(3)
    nx, nu, T = 4, 2, 15
    dyn = to.LinearDynamics(np.eye(nx) + 0.1 * rng.standard_normal((nx, nx)), rng.standard_normal((nx, nu)))
    cost = to.quadratic_cost(jnp.zeros(nx), np.diag([1.0, 2.0, 0.5, 1.0]), np.diag([0.3, 0.1]), 10.0 * np.eye(nx))
    x0 = jnp.asarray(rng.standard_normal(nx))
    xs = jnp.asarray(rng.standard_normal((T + 1, nx))).at[0].set(x0)
    us = jnp.asarray(rng.standard_normal((T, nu)))
    inf = jnp.full(nu, jnp.inf)
    alphas = jnp.array([1.0, 0.5, 0.1, 0.01])

    @jax.jit
    def probe(xs, us):
        g = to.defects(dyn, xs, us)
        bp = to.backward_pass(to.linearize(dyn, cost, xs, us), us, -inf, inf, 0.0, gaps=g)

        def trial(a):
            r = to.forward_pass(dyn, cost, xs, us, bp.k, bp.K, a, -inf, inf, gaps=g)
            dx = jax.vmap(dyn.minus)(r.x[1:], xs[1:])
            return r.cost, a * bp.dV[0] + a**2 * bp.dV[1] - (1 - a) * jnp.sum(bp.Vg * dx), r.gaps

        return g, to.total_cost(cost, xs, us), jax.vmap(trial)(alphas)

    g, J0, (J, predicted, gaps) = probe(xs, us)
    assert float(jnp.max(jnp.abs(g))) > 0.5
    np.testing.assert_allclose(J - J0, predicted, rtol=1e-10, atol=1e-10)
    for a, ga in zip(alphas, gaps):
        np.testing.assert_allclose(ga, (1 - a) * g, atol=1e-12)
    opt = to.ILQROptions(mu_init=0.0, max_iterations=5)
    ref = to.ilqr(dyn, cost, x0, jnp.zeros((T, nu)), options=opt)
    res = to.fddp(dyn, cost, x0, us, xs, options=opt)
    assert int(res.iterations) == 1 and bool(res.converged) and int(res.status) == 0
    np.testing.assert_allclose(res.u, ref.u, atol=1e-10)
    np.testing.assert_allclose(res.x, ref.x, atol=1e-10)
    np.testing.assert_allclose(res.cost_history[0], J0, rtol=1e-12)  # the guess's own cost
    assert float(jnp.max(jnp.abs(res.gaps))) == 0.0


def _pendulum_dynamics(dt=0.05):
    """A torque-driven pendulum ``(theta, omega)``, symplectic Euler (theta = 0 hanging)."""

    def f(x, u):
        w = x[1] + dt * (-9.81 * jnp.sin(x[0]) - 0.1 * x[1] + u[0])
        return jnp.stack([x[0] + dt * w, w])

    return to.FunctionDynamics(f, 2, 1)


def test_fddp_from_feasible_and_infeasible_guesses_reaches_ilqr_cost():
    """A nonlinear pendulum swinging to 1.2 rad with torque limits: from a rollout fddp follows
    ilqr's iterates (to round-off) to the same optimum; from states interpolated linearly to the
    goal (gaps everywhere) it closes the gaps and reaches the same cost."""
    dyn = _pendulum_dynamics()
    goal = jnp.array([1.2, 0.0])
    cost = to.quadratic_cost(goal, [0.1, 0.01], 0.01, Qf=[100.0, 10.0], nu=1)
    x0, T = jnp.zeros(2), 30
    u0 = jnp.zeros((T, 1))
    opt = to.ILQROptions(tolerance=1e-10, max_iterations=60)
    ref = to.ilqr(dyn, cost, x0, u0, -4.0, 4.0, options=opt)
    fd = jax.jit(lambda xs: to.fddp(dyn, cost, x0, u0, xs, -4.0, 4.0, options=opt))
    rollout = fd(to.simulate(dyn, x0, u0))
    line = fd(x0 + jnp.linspace(0.0, 1.0, T + 1)[:, None] * (goal - x0))
    assert bool(ref.converged) and bool(rollout.converged) and bool(line.converged)
    h_ref, h = np.asarray(ref.cost_history), np.asarray(rollout.cost_history)
    np.testing.assert_allclose(h[:4], h_ref[:4], rtol=1e-9)
    for res in (rollout, line):
        np.testing.assert_allclose(res.cost, ref.cost, rtol=1e-8)
        np.testing.assert_allclose(res.u, ref.u, atol=1e-3)
        assert float(jnp.max(jnp.abs(res.gaps))) == 0.0 and int(res.status) == 0
        assert np.all(np.abs(np.asarray(res.u)) <= 4.0)
        np.testing.assert_allclose(res.x, to.simulate(dyn, x0, res.u), atol=1e-12)  # closed: a rollout
    hl = np.asarray(line.cost_history)
    assert hl[0] < 0.05 * h_ref[0]  # the interpolated guess is cheap but infeasible
    assert np.max(np.abs(ref.u)) > 0.99 * 4.0  # the torque limit is active


class CirclePendulum(to.Dynamics):
    """The function pendulum with its angle on the circle: ``x = (cos, sin, omega)``, tangent
    ``dx = (dtheta, domega)``, ``plus`` a rotation and ``minus`` the angle between (``ndx < nx``,
    as for a free-flyer's quaternion)."""

    dt: float = 0.05

    def __call__(self, x, u):
        w = x[2] + self.dt * (-9.81 * x[1] - 0.1 * x[2] + u[0])
        return self.plus(jnp.stack([x[0], x[1], w]), jnp.stack([self.dt * w, 0.0]))

    @property
    def nx(self):
        return 3

    @property
    def nu(self):
        return 1

    @property
    def ndx(self):
        return 2

    def plus(self, x, dx):
        c, s = jnp.cos(dx[0]), jnp.sin(dx[0])
        return jnp.stack([c * x[0] - s * x[1], s * x[0] + c * x[1], x[2] + dx[1]])

    def minus(self, x1, x0):
        angle = jnp.arctan2(x0[0] * x1[1] - x0[1] * x1[0], x0[0] * x1[0] + x0[1] * x1[1])
        return jnp.stack([angle, x1[2] - x0[2]])


def _circle_problem():
    dyn = CirclePendulum()
    goal = jnp.array([np.cos(1.0), np.sin(1.0), 0.0])
    cost = to.quadratic_cost(goal, [0.1, 0.01], 0.01, Qf=[100.0, 10.0], nu=1, space=dyn)
    x0, T = jnp.array([1.0, 0.0, 0.0]), 30
    u0 = jnp.zeros((T, 1))
    th = jnp.linspace(0.0, 1.0, T + 1)
    xs = jnp.stack([jnp.cos(th), jnp.sin(th), jnp.zeros(T + 1)], 1)
    inf = jnp.full(1, jnp.inf)

    @jax.jit
    def zero_gains(xs, alpha):
        g = to.defects(dyn, xs, u0)
        return g, to.forward_pass(dyn, cost, xs, u0, u0, jnp.zeros((T, 1, 2)), alpha, -inf, inf, gaps=g)

    return dyn, cost, x0, u0, xs, zero_gains


def test_fddp_gaps_on_a_state_manifold():
    """Gaps in the tangent space of a state manifold (the angle on the circle), with zero gains:
    the zero step gives back the guess and its gaps, half a step leaves half of each gap, the
    full step none."""
    dyn, cost, x0, u0, xs, zero_gains = _circle_problem()
    g, r0 = zero_gains(xs, 0.0)
    assert float(jnp.max(jnp.abs(g))) > 0.01
    np.testing.assert_allclose(r0.x, xs, atol=1e-14)
    np.testing.assert_allclose(r0.gaps, g, atol=1e-14)
    _, r_half = zero_gains(xs, 0.5)
    np.testing.assert_allclose(r_half.gaps, 0.5 * g, atol=1e-14)
    assert float(jnp.max(jnp.abs(r_half.x - xs))) > 1e-3
    _, r_full = zero_gains(xs, 1.0)
    np.testing.assert_allclose(r_full.x, to.simulate(dyn, x0, u0), atol=1e-14)
    assert float(jnp.max(jnp.abs(r_full.gaps))) == 0.0


def test_fddp_on_a_state_manifold_reaches_ilqr_optimum():
    """fddp from states spread along the arc to the goal reaches ilqr's optimum with the gaps
    closed (the angle on the circle)."""
    dyn, cost, x0, u0, xs, _ = _circle_problem()
    opt = to.ILQROptions(tolerance=1e-10, max_iterations=80)
    ref = to.ilqr(dyn, cost, x0, u0, -8.0, 8.0, options=opt)
    res = to.fddp(dyn, cost, x0, u0, xs, -8.0, 8.0, options=opt)
    assert bool(ref.converged) and bool(res.converged) and float(jnp.max(jnp.abs(res.gaps))) == 0.0
    np.testing.assert_allclose(res.cost, ref.cost, rtol=1e-9)
    np.testing.assert_allclose(res.u, ref.u, atol=1e-3)
    np.testing.assert_allclose(res.x, to.simulate(dyn, x0, res.u), atol=1e-12)


def test_fddp_vmap_and_jit_vmap_with_closed_over_guesses():
    """A batch of infeasible guesses (different interpolations to the goal) solved by
    ``vmap`` and ``jit(vmap)`` (the guesses closed over) equals the one-by-one solves."""
    dyn = _pendulum_dynamics()
    goal = jnp.array([1.2, 0.0])
    cost = to.quadratic_cost(goal, [0.1, 0.01], 0.01, Qf=[100.0, 10.0], nu=1)
    x0, T = jnp.zeros(2), 12
    u0 = jnp.zeros((T, 1))
    opt = to.ILQROptions(tolerance=1e-9, max_iterations=40)
    s = jnp.linspace(0.0, 1.0, T + 1)[:, None]
    XS = jnp.stack([x0 + s**p * (jnp.array([2.5, 0.0]) - x0) for p in (1.0, 3.0, 0.0)])

    def solve(xs):
        r = to.fddp(dyn, cost, x0, u0, xs, -4.0, 4.0, options=opt)
        return r.cost, r.iterations, jnp.max(jnp.abs(r.gaps)), r.u

    one = jax.jit(solve)
    ref = [one(xs) for xs in XS]
    for batched in (jax.vmap(solve)(XS), jax.jit(lambda: jax.vmap(solve)(XS))()):
        for i, r in enumerate(ref):
            np.testing.assert_allclose(batched[0][i], r[0], rtol=1e-12)
            assert int(batched[1][i]) == int(r[1]) and float(batched[2][i]) == 0.0
            np.testing.assert_allclose(batched[3][i], r[3], atol=1e-12)
    assert len({int(r[1]) for r in ref}) > 1  # the problems finish at different iterations


def test_fddp_float32():
    """In float32 fddp from interpolated states closes the gaps and reaches the float64 optimum
    to float32's tolerance, its iterates in float32."""
    dyn = _pendulum_dynamics()
    f32 = jnp.float32
    goal = jnp.array([1.2, 0.0], f32)
    cost = to.quadratic_cost(goal, [0.1, 0.01], 0.01, Qf=[100.0, 10.0], nu=1, dtype=f32)
    x0, T = jnp.zeros(2, f32), 30
    xs = x0 + jnp.linspace(0.0, 1.0, T + 1, dtype=f32)[:, None] * (goal - x0)
    opt = to.ILQROptions(tolerance=1e-5, max_iterations=60)
    res = to.fddp(dyn, cost, x0, jnp.zeros((T, 1), f32), xs, -4.0, 4.0, options=opt)
    assert res.x.dtype == f32 and res.u.dtype == f32 and res.K.dtype == f32
    assert int(res.status) == 0 and float(jnp.max(jnp.abs(res.gaps))) == 0.0
    ref = to.ilqr(
        dyn, to.quadratic_cost(goal, [0.1, 0.01], 0.01, Qf=[100.0, 10.0], nu=1, dtype=jnp.float64),
        jnp.zeros(2), jnp.zeros((T, 1)), -4.0, 4.0, options=to.ILQROptions(tolerance=1e-10, max_iterations=60),
    )  # fmt: skip
    np.testing.assert_allclose(float(res.cost), float(ref.cost), rtol=1e-4)


def test_fddp_bad_input_and_non_finite_guess():
    dyn = _pendulum_dynamics()
    cost = to.quadratic_cost(jnp.zeros(2), 1.0, 1.0, nu=1)
    x0, u = jnp.zeros(2), jnp.zeros((5, 1))
    with pytest.raises(ValueError, match=r"fddp: x_init must have shape \(6, 2\)"):
        to.fddp(dyn, cost, x0, u, jnp.zeros((5, 2)))
    with pytest.raises(ValueError, match="fddp: x_init contains NaN"):
        to.fddp(dyn, cost, x0, u, jnp.zeros((6, 2)).at[3, 1].set(jnp.nan))
    with pytest.raises(ValueError, match="full step"):
        to.fddp(dyn, cost, x0, u, options=to.ILQROptions(alphas=(0.5, 0.25)))
    vector = to.FunctionCost(lambda x, u, t: x)
    with pytest.raises(
        ValueError, match=r"cost term FunctionCost: running\(x, u, t\) must be a scalar, got shape \(2,\)"
    ):
        to.fddp(dyn, cost + vector, x0, u)
    # controls whose rollout overflows: the solve stops at once with the reason, no NaN returned
    blow = to.FunctionDynamics(lambda x, u: x * 1e200 + u[0], 2, 1)
    res = to.ilqr(blow, cost, jnp.ones(2), jnp.ones((5, 1)))
    assert int(res.status) == 3 and to.STATUS[3] == "initial guess not finite" and not bool(res.converged)
    assert np.all(np.isfinite(res.x)) and np.all(np.isfinite(res.u)) and int(res.iterations) == 0


def test_fddp_robot_model_matches_crocoddyl_from_interpolated_states(data_dir):
    """The double pendulum (jaxdyn model, closed-form step Jacobians, rigid-body dynamics only)
    moving to (0.8, -0.6) rad in 0.6 s, from the states interpolated linearly to the goal with
    zero torques: fddp closes the gaps and reaches the cost of Crocoddyl 3.2.1's SolverFDDP from
    the same guess (stored by tests/reference/generate_crocoddyl_fddp.py; its controls scored
    by jaxdyn's cost of their rollout), with the same controls and states."""
    import json

    with open(os.path.join(data_dir, "crocoddyl", "fddp_double_pendulum.json")) as fh:
        ref = json.load(fh)
    m = jaxdyn.load_robot("double_pendulum", dtype=jnp.float64)
    dyn = to.model_dynamics(m, ref["dt"], "semi_implicit_euler", options=jaxdyn.sim.IDEAL)
    x0, goal, T = jnp.asarray(ref["x0"]), jnp.asarray(ref["goal"]), ref["T"]
    cost = to.quadratic_cost(goal, 0.0, ref["w_u"], Qf=ref["w_terminal"], nu=2)
    xs = x0 + jnp.linspace(0.0, 1.0, T + 1)[:, None] * (goal - x0)
    res = to.fddp(dyn, cost, x0, jnp.zeros((T, 2)), xs, options=to.ILQROptions(max_iterations=100, tolerance=1e-10))
    assert bool(res.converged) and float(jnp.max(jnp.abs(res.gaps))) == 0.0
    us_c = jnp.asarray(ref["us"])
    xs_c = to.simulate(dyn, x0, us_c)
    np.testing.assert_allclose(xs_c, ref["xs"], atol=1e-9)  # the same dynamics
    J_c = to.total_cost(cost, xs_c, us_c)
    np.testing.assert_allclose(J_c, ref["cost"], rtol=1e-9)  # the same cost
    np.testing.assert_allclose(res.cost, J_c, rtol=1e-10)
    np.testing.assert_allclose(res.u, us_c, atol=1e-4 * float(jnp.max(jnp.abs(us_c))))
    np.testing.assert_allclose(res.x, to.simulate(dyn, x0, res.u), atol=1e-10)
    assert int(res.iterations) <= 2 * ref["iterations"]  # 14 against Crocoddyl's 13


def test_fddp_panda_reach_from_interpolated_states_takes_full_steps(data_dir):
    """A 7-dof Panda reach (100 knots of 10 ms, the tool point to the position of a goal
    configuration, Gauss-Newton end-effector Hessian; ``benchmarks/trajopt.py --init interp``,
    target 7) from states interpolated to the goal: the Newton step with little regularisation
    overshoots the gaps' closing (the full step multiplies the cost by 70), so only short steps
    are accepted. With ``mu`` raised after each short step the solve closes every gap and reaches
    the cost of Crocoddyl 3.2.1's FDDP from the same guess (its controls, stored by
    tests/reference/generate_crocoddyl_panda_reach.py, scored by jaxdyn's cost of their rollout)
    in 36 iterations against its 40; lowering ``mu`` after every accepted step took 110, short
    steps for 100 of them."""
    import json
    import re
    import tempfile

    from jaxdyn import sim
    from jaxdyn.robots import robot_path

    with open(os.path.join(data_dir, "crocoddyl", "fddp_panda_reach.json")) as fh:
        ref = json.load(fh)
    with open(robot_path("panda")) as fh:
        text = re.sub(r'(<joint name="panda_finger_joint\d" type=")prismatic(")', r"\1fixed\2", fh.read())
    path = os.path.join(tempfile.mkdtemp(), "panda7.urdf")
    with open(path, "w") as fh:
        fh.write(text)
    model = jaxdyn.load_urdf(path, dtype=jnp.float64)
    T, dt, frame = 100, 0.01, "panda_hand_tcp"
    q0, qg = jnp.asarray([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785]), jnp.asarray(ref["q_goal"])
    target = jaxdyn.frame_placement(model, qg, frame).p
    np.testing.assert_allclose(target, ref["target"], atol=1e-12)  # the same goal as Pinocchio's
    x0 = jnp.concatenate([q0, jnp.zeros(7)])
    dyn = to.model_dynamics(model, dt, "semi_implicit_euler", options=sim.IDEAL)
    w = jnp.concatenate([jnp.zeros(7), jnp.full(7, dt * 1e-1)])
    reg = to.quadratic_cost(jnp.zeros(14), w, dt * 1e-3, Qf=jnp.concatenate([jnp.zeros(7), jnp.full(7, 1e1)]), nu=7)
    U0 = jnp.tile(jaxdyn.rnea(model, q0, jnp.zeros(7), jnp.zeros(7)), (T, 1))
    xs = jnp.concatenate([q0 + jnp.linspace(0, 1, T + 1)[:, None] * (qg - q0), jnp.zeros((T + 1, 7))], 1)

    def cost_of(target):
        return reg + to.FramePositionCost(model, frame, target, weight=dt * 1e1, terminal_weight=1e4)

    @jax.jit
    def solve(x0, U0, xs, target):
        return to.fddp(dyn, cost_of(target), x0, U0, xs, options=to.ILQROptions(max_iterations=200))

    res = solve(x0, U0, xs, target)
    assert bool(res.converged) and float(jnp.max(jnp.abs(res.gaps))) == 0.0
    assert int(res.iterations) <= ref["iterations"] + 5  # 36 against Crocoddyl's 40
    us_c = jnp.asarray(ref["us"])
    J_c = jax.jit(lambda us: to.total_cost(cost_of(target), to.simulate(dyn, x0, us), us))(us_c)
    np.testing.assert_allclose(J_c, ref["cost_crocoddyl"], rtol=1e-6)  # the same problem on both sides
    np.testing.assert_allclose(res.cost, J_c, rtol=2e-6)


# -- constraints by an augmented-Lagrangian outer loop ----------------------------------------------


def _speed_limited_swing(vmax):
    """The function pendulum from rest to 1.2 rad in 1.5 s (terminal equality, at rest) with the
    speed limited to ``vmax`` (a running inequality): constraints and their effort cost."""
    dyn = _pendulum_dynamics()
    cost = to.quadratic_cost(jnp.zeros(2), 0.0, 0.01, Qf=0.0, nu=1)
    speed = to.FunctionConstraint(lambda x, u, t: x[1:] - vmax, ["speed"])
    goal = to.FunctionConstraint(lambda x, u, t: x - jnp.array([1.2, 0.0]), ["angle", "rate"], True, "terminal")
    return dyn, cost, (speed, goal)


def test_augmented_lagrangian_meets_active_constraints():
    """From an infeasible guess (states interpolated to the goal): the terminal state is met,
    the speed limit binds (reached, with positive multipliers on its active rows and none
    negative), the result is a rollout of its controls."""
    dyn, cost, cons = _speed_limited_swing(1.2)
    x0, T = jnp.zeros(2), 30
    xs = jnp.linspace(0.0, 1.0, T + 1)[:, None] * jnp.array([1.2, 0.0])
    opt = to.ALOptions(tolerance=1e-5)
    res = to.augmented_lagrangian(dyn, cost, cons, x0, jnp.zeros((T, 1)), xs, options=opt)
    assert int(res.status) == 0 and bool(res.converged), to.AL_STATUS[int(res.status)]
    assert float(jnp.max(res.violation)) <= 1e-5 and res.violation.shape == (3,)
    assert float(jnp.max(jnp.abs(res.inner.gaps))) == 0.0
    np.testing.assert_allclose(res.x, to.simulate(dyn, x0, res.u), atol=1e-12)
    np.testing.assert_allclose(res.x[-1], [1.2, 0.0], atol=1e-5)
    assert float(jnp.max(res.x[:, 1])) > 1.2 - 1e-4  # the limit is reached
    lam_speed = res.multipliers[0][0]
    assert float(jnp.max(lam_speed)) > 0 and float(jnp.min(lam_speed)) >= 0.0


def test_augmented_lagrangian_under_jit_vmap():
    """jit(vmap) over initial states solves each problem as one call does."""
    dyn, cost, cons = _speed_limited_swing(1.2)
    T = 30
    X0 = jnp.array([[0.0, 0.0], [0.2, 0.0]])
    solve = lambda x: to.augmented_lagrangian(dyn, cost, cons, x, jnp.zeros((T, 1)))
    rb = jax.jit(jax.vmap(solve))(X0)
    assert np.all(np.asarray(rb.status) == 0) and float(jnp.max(rb.violation)) <= 1e-4
    for i, x in enumerate(X0):
        r = solve(x)
        np.testing.assert_allclose(rb.cost[i], r.cost, rtol=1e-9)
        assert int(rb.outer_iterations[i]) == int(r.outer_iterations)


def test_augmented_lagrangian_reports_infeasible_constraints_by_name():
    """A speed limit too low to reach the goal in time: the loop stops at the largest penalty
    with status 2, warns naming the violated rows, and returns finite states and controls."""
    dyn, cost, cons = _speed_limited_swing(0.3)
    x0, T = jnp.zeros(2), 30
    opt = to.ALOptions(penalty_max=1e4)
    with pytest.warns(UserWarning, match=r"largest penalty.*violated: (angle|speed)"):
        res = to.augmented_lagrangian(dyn, cost, cons, x0, jnp.zeros((T, 1)), options=opt)
    assert int(res.status) == 2 and not bool(res.converged)
    names = to.violated_constraints(cons, res, 1e-3)
    assert any(n.startswith("angle:") and n.endswith("at knot 30") for n in names), names
    assert np.all(np.isfinite(res.x)) and np.all(np.isfinite(res.u))


def test_augmented_lagrangian_stops_on_a_diverging_inner_solve():
    """Dynamics whose rollout of the guess overflows: the loop stops at once with the inner
    solve's reason, and returns the finite guess, not NaN."""
    blow = to.FunctionDynamics(lambda x, u: x * 1e200 + u[0], 2, 1)
    cost = to.quadratic_cost(jnp.zeros(2), 1.0, 1.0, nu=1)
    cap = to.FunctionConstraint(lambda x, u, t: x[:1] - 1.0, ["x0 cap"])
    with pytest.warns(UserWarning, match=r"inner solve failed \(initial guess not finite\)"):
        res = to.augmented_lagrangian(blow, cost, cap, jnp.ones(2), jnp.ones((4, 1)))
    assert int(res.status) == 3 and int(res.outer_iterations) == 1 and not bool(res.converged)
    assert np.all(np.isfinite(res.x)) and np.all(np.isfinite(res.u))


def test_constraint_rows_are_named_and_checked():
    m = jaxdyn.load_robot("double_pendulum", dtype=jnp.float64)
    lim = to.JointPositionLimits(m, lower=[-1.0, -jnp.inf], upper=[2.0, 0.5])
    assert lim.rows == ("joint1 upper", "joint2 upper", "joint1 lower")
    np.testing.assert_allclose(lim.running(jnp.array([2.5, 0.0, 0.0, 0.0]), None, 0), [0.5, -0.5, -3.5])
    assert to.JointPositionLimits(m, lower=[-1.0, -1.0], upper=[1.0, 1.0], joints=["joint2"]).rows == (
        "joint2 upper",
        "joint2 lower",
    )
    tip = to.FramePositionConstraint(m, "link2", jnp.zeros(3))
    x = jnp.array([0.4, -0.3, 0.0, 0.0])
    np.testing.assert_allclose(tip.terminal(x), jaxdyn.frame_placement(m, x[:2], "link2").p, atol=1e-15)
    assert tip.rows == ("link2 x", "link2 y", "link2 z") and tip.equality and tip.knots == "terminal"
    bad = to.FunctionConstraint(lambda x, u, t: x, ["one", "two"])
    with pytest.raises(ValueError, match=r"FunctionConstraint \(one, two\): value must have shape \(2,\)"):
        bad.running(x, None, 0)
    with pytest.raises(ValueError, match="not joints"):
        to.JointPositionLimits(m, joints=["nope"])
    with pytest.raises(ValueError, match="no joint with a finite"):
        to.JointPositionLimits(m)
    with pytest.raises(ValueError, match="knots"):
        to.FunctionConstraint(lambda x, u, t: x, ["a"], knots="first")
    dyn = to.model_dynamics(m, 0.01)
    with pytest.raises(ValueError, match="no constraints"):
        to.augmented_lagrangian(
            dyn, to.quadratic_cost(jnp.zeros(4), 1.0, 1.0, nu=2), [], jnp.zeros(4), jnp.zeros((3, 2))
        )


def test_augmented_lagrangian_arm_joint_limit_and_end_effector():
    """The double pendulum (a 2-link arm) moving its elbow frame to a point with joint 2 held
    within +-0.01 rad (the unconstrained motion swings it further): both constraints met; with
    joint 1 limited short of the point (the same program, other bounds) the end-effector rows
    and the limit are reported violated."""
    m = jaxdyn.load_robot("double_pendulum", dtype=jnp.float64)
    dyn = to.model_dynamics(m, 0.02, "semi_implicit_euler")
    T = 25
    x0 = jnp.array([0.3, 0.0, 0.0, 0.0])
    target = jaxdyn.frame_placement(m, jnp.array([1.5, 0.0]), "link2").p
    cost = to.quadratic_cost(jnp.zeros(4), [0, 0, 0.01, 0.01], 0.01, Qf=[0, 0, 1.0, 1.0], nu=2)
    tip = to.FramePositionConstraint(m, "link2", target)

    def solve(upper):
        lim = to.JointPositionLimits(m, lower=[-10.0, -0.01], upper=upper)
        return (tip, lim), to.augmented_lagrangian(dyn, cost, (tip, lim), x0, jnp.zeros((T, 2)))

    cons, res = solve([10.0, 0.01])
    assert int(res.status) == 0, to.AL_STATUS[int(res.status)]
    assert float(jnp.max(res.violation)) <= 1e-4
    assert float(jnp.max(jnp.abs(res.x[:, 1]))) > 0.01 - 1e-4  # the elbow limit binds
    with pytest.warns(UserWarning, match="violated: link2"):
        cons, bad = solve([1.0, 0.01])
    assert int(bad.status) == 2
    names = [n.split(":")[0] for n in to.violated_constraints(cons, bad)]
    assert "joint1 upper" in names and any(n.startswith("link2") for n in names), names


# -- model-predictive control -----------------------------------------------------------------------


def test_mpc_tracks_a_moving_target_in_closed_loop():
    """Receding horizon on the function pendulum (15 knots of 50 ms, 5 warm-started fddp
    iterations per period, torque limit 5 N m) tracking 0.6 sin(1.5 t) rad; the plant is the
    continuous pendulum at 10 ms substeps with an unmodelled constant torque of 0.5 N m. The
    closed loop tracks within 0.03 rad once settled, with one or two iterations per period;
    without replanning (the plan made half-way played open loop over its horizon) the error is
    over five times larger."""
    dt, H, steps = 0.05, 15, 60
    dyn = _pendulum_dynamics(dt)

    def plant(x, u):
        for _ in range(5):
            w = x[1] + dt / 5 * (-9.81 * jnp.sin(x[0]) - 0.1 * x[1] + u[0] + 0.5)
            x = jnp.stack([x[0] + dt / 5 * w, w])
        return x

    def reference(k):
        t = (k + jnp.arange(H + 1)) * dt
        return jnp.stack([0.6 * jnp.sin(1.5 * t), 0.9 * jnp.cos(1.5 * t)], 1)

    @jax.jit
    def replan(x, xs, us, k):
        cost = to.quadratic_cost(reference(k), [10.0, 0.1], 1e-3, Qf=[10.0, 0.1], nu=1)
        return to.mpc_step(dyn, cost, x, xs, us, -5.0, 5.0)

    x = jnp.zeros(2)
    xs, us = jnp.zeros((H + 1, 2)), jnp.zeros((H, 1))
    err, iters, k_open = [], [], steps // 2
    for k in range(steps):
        r = replan(x, xs, us, k)
        if k == k_open:
            x_open, plan = x, r.u
        assert np.all(np.abs(np.asarray(r.u)) <= 5.0) and np.all(np.isfinite(r.x))
        x = plant(x, r.u[0])
        xs, us = r.x, r.u
        err.append(abs(float(x[0]) - 0.6 * np.sin(1.5 * (k + 1) * dt)))
        iters.append(int(r.iterations))
    settled = np.asarray(err[steps // 2 :])
    assert settled.max() < 0.03, settled.max()
    assert np.mean(iters[steps // 2 :]) < 2  # warm started: of the 5 allowed, one or two are used
    open_err = []
    for k in range(H):
        x_open = plant(x_open, plan[k])
        open_err.append(abs(float(x_open[0]) - 0.6 * np.sin(1.5 * (k_open + k + 1) * dt)))
    closed = max(err[k_open : k_open + H])
    assert max(open_err) > 5 * closed, (max(open_err), closed)
    # the warm start shifts the plan by one knot
    xs_s, us_s = to.shift(jnp.arange(8.0).reshape(4, 2), jnp.arange(3.0)[:, None])
    np.testing.assert_array_equal(xs_s[:, 0], [2.0, 4.0, 6.0, 6.0])
    np.testing.assert_array_equal(us_s[:, 0], [1.0, 2.0, 2.0])


def test_augmented_lagrangian_control_constraint_equals_the_box():
    """A torque bound written as a constraint on ``u`` (two inequality rows) gives the solution
    of the same bound as fddp's control box (the box QP), to the loop's tolerance."""
    dyn = _pendulum_dynamics()
    cost = to.quadratic_cost(jnp.array([1.2, 0.0]), [0.1, 0.01], 0.01, Qf=[100.0, 10.0], nu=1)
    x0, T = jnp.zeros(2), 30
    u0 = jnp.zeros((T, 1))
    bound = to.FunctionConstraint(
        lambda x, u, t: jnp.concatenate([u - 4.0, -4.0 - u]), ["u upper", "u lower"], knots="running"
    )
    res = to.augmented_lagrangian(dyn, cost, bound, x0, u0, options=to.ALOptions(tolerance=1e-6))
    box = to.fddp(dyn, cost, x0, u0, None, -4.0, 4.0, options=to.ILQROptions(tolerance=1e-10, max_iterations=60))
    assert int(res.status) == 0 and bool(box.converged)
    assert float(jnp.max(jnp.abs(box.u))) == 4.0  # the bound is active
    np.testing.assert_allclose(res.u, box.u, atol=1e-3)
    np.testing.assert_allclose(res.cost, box.cost, rtol=1e-5)
    assert float(jnp.max(res.u)) <= 4.0 + 1e-6
