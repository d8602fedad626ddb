"""Analytic validation of the compliant ground contact (jaxdyn.contact, docs/contact.md):

* bounce apex heights against the Hunt-Crossley coefficient of restitution, from the closed
  form of the phase-plane integral (no gravity during the impact) and from a quadrature of the
  1-D impact ODE with gravity (scipy, independent of jaxdyn's integrators);
* a sphere thrown sliding on flat ground ends rolling at the speed that the conservation of
  angular momentum about the contact point gives, and then rolls on without losing speed (the
  model has no rolling resistance); a sphere spinning about the vertical keeps its spin (no
  torsional friction);
* the contact never injects energy: along bouncing, sliding and tumbling rollouts the exact
  time derivative of the energy (kinetic + gravity + the contact's elastic potential) is never
  positive.
"""

import jax
import jax.numpy as jnp
import numpy as np
from scipy.integrate import solve_ivp
from scipy.optimize import brentq

import jaxdyn
from jaxdyn import configuration, sim
from jaxdyn import contact as C

G = 9.81
R_BALL, M_BALL = 0.05, 1.0
BALL = f"""<mujoco><worldbody><geom type="plane" size="0 0 1"/>
<body name="ball" pos="0 0 1"><freejoint/><geom type="sphere" size="{R_BALL}" mass="{M_BALL}"/></body>
</worldbody></mujoco>"""
BOX = """<mujoco><worldbody><geom type="plane" size="0 0 1"/>
<body name="box" pos="0 0 1"><freejoint/><geom type="box" size="0.1 0.06 0.03" mass="1.5"/></body>
</worldbody></mujoco>"""
STEPS = 8000


def restitution_closed_form(v, cd):
    """Hunt-Crossley restitution without gravity during the impact. The 1-D contact
    ``m x'' = -k x^p (1 + c_d x')`` has ``x' dx'/dx = -(k/m) x^p (1 + c_d x')``, separable:
    ``x' dx' / (1 + c_d x') = -(k/m) x^p dx``. Integrated over the whole impact (``x = 0`` to
    ``x = 0``) the right side vanishes, and with ``u(v) = c_d v - ln(1 + c_d v)``,

        u(v_in) = u(-v_out),   i.e.   c_d v_in - ln(1 + c_d v_in) = -c_d v_out - ln(1 - c_d v_out),

    independent of ``k``, ``p`` and the mass (MarhefkaOrin99; GilardiSharf02). Small damping:
    ``e = v_out / v_in = 1 - (2/3) c_d v_in + O((c_d v_in)^2)``. The no-pull clip never acts
    in 1-D: ``x' = -1/c_d`` is a fixed point of the phase-plane ODE, so ``c_d v_out < 1``."""
    a = cd * v
    lhs = a - np.log1p(a)
    u = brentq(lambda u: -u - np.log1p(-u) - lhs, 0.0, 1.0 - 1e-16, xtol=1e-15, rtol=1e-15)
    return u / a


def restitution_quadrature(v, k, p, cd, g=G, m=M_BALL):
    """The same impact integrated numerically (DOP853, rtol 1e-12), gravity included:
    ``m x'' = m g - max(0, k x^p (1 + c_d x'))`` from ``x = 0, x' = v`` until ``x = 0`` again;
    returns ``-x'_out / v``."""

    def f(_, y):
        x, xd = y
        return [xd, g - max(0.0, k * max(x, 0.0) ** p * (1.0 + cd * xd)) / m]

    def leave(_, y):
        return y[0]

    leave.terminal, leave.direction = True, -1
    s = solve_ivp(f, (0.0, 1.0), [0.0, v], method="DOP853", events=leave, rtol=1e-12, atol=1e-15)
    return -s.y_events[0][0][1] / v


def _ball():
    return jaxdyn.load_mjcf(BALL)


def _elastic_potential(model, q, ct):
    cp = C.contact_points(model, q, jnp.zeros(model.nv, model.dtype), ct.ground)
    p = ct.params.exponent
    return jnp.sum(ct.params.stiffness * cp.depth ** (p + 1) / (p + 1))


def _energy_rate(model, q, qd, ct):
    """Exact ``dE/dt`` at ``(q, qd)`` along the continuous dynamics (no integrator):
    ``E = T + V + sum k d^(p+1) / (p+1)``, differentiated along ``q(t) = q (+) t qd``,
    ``qd(t) = qd + t qdd``."""
    qdd = sim.forward_dynamics(model, q, qd, jnp.zeros(model.nv, model.dtype), contact=ct)

    def E(t):
        qt = configuration.integrate(model, q, qd, t)
        return sim.energy(model, qt, qd + t * qdd) + _elastic_potential(model, qt, ct)

    return jax.jvp(E, (jnp.zeros((), model.dtype),), (jnp.ones((), model.dtype),))[1]


def _rollout_fn(model):
    @jax.jit
    def run(q0, qd0, ct, dt):
        tr = sim.rollout(model, q0, qd0, jnp.zeros((STEPS, model.nv)), dt, contact=ct)
        e = jax.vmap(lambda q, qd: sim.energy(model, q, qd) + _elastic_potential(model, q, ct))(tr.q, tr.qd)
        return tr.q, tr.qd, e, tr.nonfinite_step

    return run


def _apexes(z, floor):
    """Heights of the local maxima of ``z`` (after the start) above ``floor``."""
    i = np.flatnonzero((z[1:-1] >= z[:-2]) & (z[1:-1] > z[2:])) + 1
    return z[i][z[i] > floor]


def test_closed_form_restitution_is_the_quadrature_without_gravity():
    """The phase-plane closed form against the ODE quadrature with ``g = 0`` (checks the
    derivation and the quadrature), and its small-damping limit ``1 - (2/3) c_d v``."""
    for cd, v in ((0.2, 1.4), (0.5, 0.7), (2.0, 1.0)):
        e = restitution_closed_form(v, cd)
        assert abs(restitution_quadrature(v, 1e6, 1.5, cd, g=0.0) / e - 1) < 1e-8
        assert abs(restitution_quadrature(v, 3e4, 1.0, cd, g=0.0) / e - 1) < 1e-8  # any k, p
    a = 1e-3
    assert abs((1 - restitution_closed_form(1.0, a)) / (2 * a / 3) - 1) < 1e-3


def test_bounce_apex_heights_follow_the_coefficient_of_restitution():
    """A 1 kg ball (r = 5 cm) dropped from 0.1 m with c_d = 0.2 s/m: successive apex heights
    ``h_{k+1} = e(v_k)^2 h_k`` with ``v_k = sqrt(2 g h_k)``.

    Default stiffness (k = 1e6, contact about 12 ms long), ``"implicit_euler"`` at 0.2 ms:
    against the quadrature with gravity to 1e-3 (measured 2e-5); the gravity-free closed form
    is 2.5 % higher there (gravity acts during the impact). Stiff ground (k = 1e8, about 2 ms)
    at 0.1 ms: against the closed form to 1 % (measured 0.45 %)."""
    model = _ball()
    run = _rollout_fn(model)
    q0 = jnp.array([0.0, 0.0, R_BALL + 0.1, 1.0, 0.0, 0.0, 0.0])
    cd = 0.2
    for k, dt, reference, tol in (
        (1e6, 2e-4, lambda v: restitution_quadrature(v, 1e6, 1.5, cd), 1e-3),
        (1e8, 1e-4, lambda v: restitution_closed_form(v, cd), 1e-2),
    ):
        ct = C.Contact(params=C.ContactParams(stiffness=k, damping=cd))
        q, _, _, bad = run(q0, jnp.zeros(6), ct, dt)
        assert int(bad) == -1
        h = np.concatenate([[0.1], _apexes(np.asarray(q[:, 2]) - R_BALL, 5e-3)])
        assert len(h) >= 4, h
        for h0, h1 in zip(h[:-1], h[1:]):
            e = reference(np.sqrt(2 * G * h0))
            assert abs(h1 / (e * e * h0) - 1) < tol, (k, h0, h1 / h0, e * e)


def test_sliding_sphere_ends_rolling_and_keeps_its_speed():
    """A ball resting on the ground at its static penetration ``d = (m g / k)^(2/3)``, thrown at
    v0 = 2 m/s without spin. Friction acts at the contact point and gravity and the normal force
    pass through it, so the angular momentum about that point is conserved; the ball rolls
    about the witness point on the ground, at ``R = r - d`` below the centre, once the slip has
    stopped: ``v = v0 / (1 + I / (m R^2))``, ``omega = v / R`` (5/7 of v0 for ``d -> 0``). Then
    nothing dissipates: Hunt-Crossley damping needs a penetration rate and friction a slip (or
    a tangential load for the creep of its regularisation), and a rolling point contact has
    neither, so there is no rolling resistance and the speed stays constant."""
    model = _ball()
    run = _rollout_fn(model)
    ct = C.Contact()
    d = (M_BALL * G / 1e6) ** (2 / 3)
    v0 = 2.0
    q0 = jnp.array([0.0, 0.0, R_BALL - d, 1.0, 0.0, 0.0, 0.0])
    q, qd, e, bad = (np.asarray(x) for x in run(q0, jnp.array([0.0, 0, 0, v0, 0, 0]), ct, 1e-3))
    assert int(bad) == -1
    Rot = np.asarray(jax.vmap(jaxdyn.spatial.quat_to_rotation)(q[:, 3:7]))
    v = np.einsum("tij,tj->ti", Rot, qd[:, 3:])  # world-frame velocity of the centre
    w = np.einsum("tij,tj->ti", Rot, qd[:, :3])
    R = R_BALL - d
    inertia = 0.4 * M_BALL * R_BALL**2
    v_roll = v0 / (1 + inertia / (M_BALL * R * R))
    # angular momentum about the contact point, at every step (the step applies the friction
    # and normal impulses at that point too)
    L = inertia * w[:, 1] + M_BALL * q[:, 2] * v[:, 0]
    np.testing.assert_allclose(L, M_BALL * R * v0, rtol=1e-12)
    late = slice(STEPS // 2, None)  # 4 s to 8 s
    np.testing.assert_allclose(v[late, 0], v_roll, rtol=1e-12)
    np.testing.assert_allclose(w[late, 1] * R, v_roll, rtol=1e-12)
    np.testing.assert_allclose(v[late, 1:], 0.0, atol=1e-12)
    np.testing.assert_allclose(q[:, 2], R, rtol=1e-12)  # no sinking, no hop
    e_roll = 0.5 * M_BALL * v_roll**2 + 0.5 * inertia * (v_roll / R) ** 2 + M_BALL * G * (R_BALL - d)
    e_roll += 1e6 * d**2.5 / 2.5
    # quadratic in the speeds above: twice their relative round-off (measured 1.1e-12 after 8 s)
    np.testing.assert_allclose(e[late], e_roll, rtol=2e-12)


def test_sphere_spinning_about_the_vertical_keeps_its_spin():
    """The contact point of a ball spinning about the vertical lies on the spin axis: its
    velocity is zero, so there is no friction torque (the model has no torsional friction) and
    the spin is kept to round-off over 8 s."""
    model = _ball()
    run = _rollout_fn(model)
    d = (M_BALL * G / 1e6) ** (2 / 3)
    q0 = jnp.array([0.0, 0.0, R_BALL - d, 1.0, 0.0, 0.0, 0.0])
    q, qd, _, bad = (np.asarray(x) for x in run(q0, jnp.array([0.0, 0, 10.0, 0, 0, 0]), C.Contact(), 1e-3))
    assert int(bad) == -1
    np.testing.assert_allclose(qd[:, 2], 10.0, rtol=1e-12)
    np.testing.assert_allclose(qd[:, [0, 1, 3, 4, 5]], 0.0, atol=1e-12)


def test_contact_never_injects_energy():
    """``dE/dt <= 0`` at every state of three rollouts (1 ms): a spinning ball thrown sideways
    that bounces (c_d = 0.2 s/m), slides and starts rolling; the same with the default damping;
    a box dropped tilted and spinning onto its corners. In the model ``dE/dt`` is minus the
    Hunt-Crossley damping power ``c_d k d^p v_pen^2`` (or ``-k d^p |v_pen|`` while the no-pull
    clip acts) minus the friction power ``mu f_n |v_t|^2 / sqrt(|v_t|^2 + eps^2)``."""
    ball = _ball()
    box = jaxdyn.load_mjcf(BOX)
    q_ball = jnp.array([0.0, 0.0, R_BALL + 0.1, 1.0, 0.0, 0.0, 0.0])
    qd_ball = jnp.array([0.0, 20.0, 5.0, 1.0, 0.0, 0.0])
    tilt = np.array([np.cos(0.2), np.sin(0.2), 0.0, 0.0]) * 1.0
    q_box = jnp.array([0.0, 0.0, 0.15, *tilt])
    qd_box = jnp.array([1.0, -2.0, 6.0, 0.5, 0.0, 0.0])
    cases = [
        (ball, q_ball, qd_ball, C.Contact(params=C.ContactParams(damping=0.2))),
        (ball, q_ball, qd_ball, C.Contact()),
        (box, q_box, qd_box, C.Contact()),
    ]

    @jax.jit
    def rates(model, q0, qd0, ct):
        tr = sim.rollout(model, q0, qd0, jnp.zeros((1000, model.nv)), 1e-3, contact=ct)
        return jax.vmap(lambda q, qd: _energy_rate(model, q, qd, ct))(tr.q, tr.qd), tr.nonfinite_step

    for model, q0, qd0, ct in cases:
        p, bad = rates(model, q0, qd0, ct)
        p = np.asarray(p)
        assert int(bad) == -1
        assert p.max() < 1e-9, p.max()
        assert p.min() < -1.0  # the rollout does dissipate
