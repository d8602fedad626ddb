"""Compliant ground contact (jaxdyn.contact): static penetration against the Hunt-Crossley
equilibrium, the block on a slope (creep below the friction angle, sliding acceleration above
it), continuity and finite derivatives at the non-smooth points, energy over a bounce, and
gradients through a contact rollout against central finite differences, and the closed-form
joint-space force and velocity derivative of the implicit step against RNEA and forward mode.

Integrator: the default ``"implicit_euler"`` at dt = 1 ms throughout (contact implicit in
velocity in it).
"""

import os

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxdyn
from jaxdyn import contact as C
from jaxdyn import sim
from jaxdyn.contact import laws

G = 9.81
DT = 1e-3

SPHERE = """<mujoco><worldbody><geom type="plane" size="0 0 1"/>
<body name="ball" pos="0 0 1"><freejoint/><geom type="sphere" size="0.1" mass="MASS"/></body>
</worldbody></mujoco>"""

BOX = """<mujoco><worldbody>
<body name="block" pos="0 0 1"><freejoint/>
<geom type="box" size="0.1 0.1 0.05" mass="1" friction="MU 0.005 0.0001"/></body>
</worldbody></mujoco>"""

MIXED = """<mujoco><worldbody><geom type="plane" size="0 0 1"/>
<body name="a" pos="0 0 1"><freejoint/>
<geom type="sphere" size="0.1" mass="1"/>
<geom type="capsule" size="0.05 0.2" pos="0.3 0 0" mass="0.5"/>
<geom type="box" size="0.1 0.1 0.1" pos="-0.3 0 0" mass="0.5"/>
<geom type="ellipsoid" size="0.1 0.2 0.3" pos="0 0.5 0.2" mass="0.1"/>
<geom type="sphere" size="0.1" pos="0 -0.5 0" contype="0" conaffinity="0" mass="0.1"/>
</body></worldbody></mujoco>"""


def _sphere(mass=2.0):
    return jaxdyn.load_mjcf(SPHERE.replace("MASS", str(mass)))


def _run(model, contact, q0, qd0, steps, substeps=1):
    return sim.rollout(model, q0, qd0, jnp.zeros((steps, model.nv)), DT, substeps=substeps, contact=contact)


def test_sphere_rests_at_hunt_crossley_equilibrium():
    """After settling, k d^p = m g: the penetration is (m g / k)^(1/p) and the contact carries the
    weight."""
    m, r = 2.0, 0.1
    model = _sphere(m)
    ct = C.Contact(C.Ground.from_model(model), C.ContactParams())
    k, p = 1e6, 1.5
    q0 = jnp.array([0.0, 0.0, r + 0.002, 1.0, 0.0, 0.0, 0.0])  # 2 mm above the ground

    @jax.jit
    def settle(ct):
        tr = _run(model, ct, q0, jnp.zeros(6), 1500)
        return tr.q[-1], C.total_force(model, tr.q[-1], tr.qd[-1], ct), tr.nonfinite_step

    q, f, bad = settle(ct)
    assert int(bad) == -1
    d = r - float(q[2])
    d_ref = (m * G / k) ** (1 / p)
    assert abs(d / d_ref - 1) < 1e-6, (d, d_ref)
    np.testing.assert_allclose(np.asarray(f), [0.0, 0.0, m * G], rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(np.asarray(q[:2]), 0.0, atol=1e-12)


def _slope(theta):
    n = np.array([np.sin(theta), 0.0, np.cos(theta)])  # ground normal: z turned by theta about y
    t = np.array([np.cos(theta), 0.0, -np.sin(theta)])  # downhill
    return n, t


def _block_on_slope(theta, mu, k=1e6, p=1.5):
    model = jaxdyn.load_mjcf(BOX.replace("MU", repr(mu)))
    n, t = _slope(theta)
    pen = (G * np.cos(theta) / 4 / k) ** (1 / p)  # four corners share the normal load
    q0 = jnp.array([*(n * (0.05 - pen)), np.cos(theta / 2), 0.0, np.sin(theta / 2), 0.0])
    return model, C.Ground(normal=n, height=0.0), q0, t


def test_block_on_slope_creeps_below_and_slides_above_the_friction_angle():
    """tan(theta) < mu: the regularised friction holds the block with the steady creep
    v = eps r / sqrt(1 - r^2), r = tan(theta) / mu (friction mu f_n v / sqrt(v^2 + eps^2) equal
    to the downhill weight); tan(theta) > mu: it slides at g (sin(theta) - mu cos(theta))."""
    steps = 600

    @jax.jit
    def downhill(model, ct, q0, qd0, t):
        tr = _run(model, ct, q0, qd0, steps)
        x = tr.q[:, :3] @ t
        return x, tr.nonfinite_step

    # creeps at the regularised law's rate: tan(theta) = mu / 2 with eps = 0.02 m/s (the former
    # default; today's 1e-4 m/s holds, tests/test_friction_hold.py) at h = 1 ms
    mu, theta = 1.0, np.arctan(0.5)
    model, ground, q0, t = _block_on_slope(theta, mu)
    params = C.ContactParams(friction_velocity=0.02)
    x, bad = downhill(model, C.Contact(ground, params), q0, jnp.zeros(6), t)
    assert int(bad) == -1
    x = np.asarray(x)
    creep = (x[-1] - x[-101]) / (100 * DT)
    r = np.tan(theta) / mu
    creep_ref = 0.02 * r / np.sqrt(1 - r * r)  # 11.547 mm/s
    assert abs(creep / creep_ref - 1) < 1e-3, (creep, creep_ref)

    # sliding: mu = 0.3 < tan(theta) = 0.5, started at 0.5 m/s downhill
    model, ground, q0, t = _block_on_slope(theta, 0.3)
    x, bad = downhill(model, C.Contact(ground, params), q0, jnp.array([0.0, 0, 0, 0.5, 0, 0]), t)
    assert int(bad) == -1
    x = np.asarray(x)
    tt = np.arange(steps + 1) * DT
    acc = 2 * np.polyfit(tt[100:], x[100:], 2)[0]
    acc_ref = G * (np.sin(theta) - 0.3 * np.cos(theta))
    assert abs(acc / acc_ref - 1) < 1e-2, (acc, acc_ref)


def test_block_creep_below_1mm_per_s_with_a_small_regularisation():
    """eps = 1 mm/s (stable at h = 1 ms: the implicit step treats the friction's regularised zone
    implicitly, and a block held on its corners does not roll): at tan(theta) = mu / 2 the creep
    is eps r / sqrt(1 - r^2) = 0.577 mm/s."""
    mu, theta = 1.0, np.arctan(0.5)
    model, ground, q0, t = _block_on_slope(theta, mu)
    ct = C.Contact(ground, C.ContactParams(friction_velocity=1e-3))

    @jax.jit
    def downhill(ct, q0):
        tr = _run(model, ct, q0, jnp.zeros(6), 400)
        return tr.q[:, :3] @ t, tr.nonfinite_step

    x, bad = downhill(ct, q0)
    assert int(bad) == -1
    x = np.asarray(x)
    creep = (x[-1] - x[-101]) / (100 * DT)
    creep_ref = 1e-3 * 0.5 / np.sqrt(1 - 0.25)
    assert 0 < creep < 1e-3
    assert abs(creep / creep_ref - 1) < 1e-3, (creep, creep_ref)


def test_force_continuous_with_finite_derivatives_at_the_kinks():
    """Zero force at zero penetration, and no NaN/inf in the derivatives w.r.t. the state, the
    law's parameters, the ground and the geometry: at zero penetration, zero velocity (zero
    tangential velocity), and with coincident contact points (a capsule of zero length)."""
    model = jaxdyn.load_mjcf(MIXED)
    # the contype = conaffinity = 0 sphere has no points, the ellipsoid its lowest; the world
    # plane none
    cp = jax.eval_shape(lambda: C.contact_points(model, jnp.array([0, 0, 1.0, 1, 0, 0, 0]), jnp.zeros(6)))
    assert cp.geom == (1,) + (2, 2) + (3,) * 8 + (4,)
    # coincident points: the capsule's two end spheres at the same place
    model = eqx.tree_at(lambda m: m.geoms.size, model, model.geoms.size.at[2, 1].set(0.0))
    ct = C.Contact()
    z0 = 0.1  # the sphere, the box and the ellipsoid touch; the capsule (radius 0.05 at z = 0.05) ...
    wrench = jax.jit(
        lambda model, ct, q, qd: C.contact_wrenches(model, q, qd, ct.ground, ct.params).sum(0)
    )  # one jit for all evaluations below

    def q_at(z):
        return jnp.array([0.0, 0.0, z, 1.0, 0.0, 0.0, 0.0])

    zero = jnp.zeros(6)
    assert np.all(np.asarray(wrench(model, ct, q_at(z0), zero)) == 0.0)  # exactly touching
    np.testing.assert_allclose(np.asarray(wrench(model, ct, q_at(z0 + 1e-9), zero)), 0.0, atol=0)
    small = np.asarray(wrench(model, ct, q_at(z0 - 1e-9), zero))
    assert 0 < small[5] < 1e-6  # k d^1.5 = 1e6 * (1e-9)^1.5 per point: continuous at first touch

    def scalar(model, ct, q, qd):
        w = wrench(model, ct, q, qd)
        return jnp.sum(w * jnp.arange(1.0, 7.0))

    grad = jax.jit(jax.grad(scalar, argnums=(0, 1, 2, 3)))
    for z in (z0, z0 - 1e-3):  # at first touch, and in contact at zero velocity
        for qd in (zero, jnp.array([0.0, 0, 0, 0, 0, -0.1])):  # at rest; zero tangential speed
            grads = grad(model, ct, q_at(z), qd)
            for leaf in jax.tree_util.tree_leaves(grads):
                assert np.all(np.isfinite(np.asarray(leaf))), (z, qd)
    # the normal force's slope in depth is continuous (p = 1.5: k p d^0.5 -> 0 at first touch)
    dz = jax.jit(jax.grad(lambda z: scalar(model, ct, q_at(z), zero)))
    assert float(dz(z0)) == 0.0
    assert float(dz(z0 - 1e-3)) < 0


def test_dropped_sphere_loses_energy_over_the_bounce():
    """Hunt-Crossley damping dissipates: the energy after the bounce is below the energy before
    (and the contact never pulls: the ball leaves the ground). Damping 0.5 s/m so that the ball
    bounces (the default 10 s/m all but stops a 2 m/s impact)."""
    m, r = 1.0, 0.1
    model = _sphere(m)
    q0 = jnp.array([0.0, 0.0, r + 0.2, 1.0, 0.0, 0.0, 0.0])
    qd0 = jnp.array([0.0, 3.0, 0.0, 0.3, 0.0, 0.0])  # spinning and moving sideways

    @jax.jit
    def drop(ct):
        tr = _run(model, ct, q0, qd0, 500)
        e = jax.vmap(lambda q, qd: sim.energy(model, q, qd))(tr.q, tr.qd)
        return tr.q[:, 2], e

    z, e = (np.asarray(a) for a in drop(C.Contact(params=C.ContactParams(damping=0.5))))
    touching = z < r
    first = int(np.argmax(touching))
    last = first + int(np.argmax(~touching[first:]))
    assert 0 < first < last < len(z) - 1
    e_before, e_after = e[first - 1], e[last:]
    assert np.all(e_after <= e_before), (e_before, e_after.max())
    assert e_after.max() < 0.99 * e_before  # damping takes a visible share
    land = last + int(np.argmax(touching[last:])) if touching[last:].any() else len(z)
    # in flight the step loses exactly g^2 h^2 / 2 (symplectic Euler under constant gravity)
    np.testing.assert_allclose(np.diff(e[last:land]), -0.5 * G**2 * DT**2, rtol=1e-6)


def test_gradient_through_contact_rollout_matches_finite_differences():
    """d(final height)/d(initial height) and d(final height)/d(stiffness) through a 200-step
    rollout of a sphere bouncing on soft ground (k = 1e4), against central differences."""
    model = _sphere(1.0)
    params = C.ContactParams(stiffness=1e4)

    @jax.jit
    def final(z0, k):
        ct = C.Contact(C.Ground(), eqx.tree_at(lambda p: p.stiffness, params, k))
        q0 = jnp.array([0.0, 0.0, z0, 1.0, 0.0, 0.0, 0.0])
        tr = _run(model, ct, q0, jnp.array([0.0, 0, 0, 0.2, 0, 0]), 200)
        return tr.q[-1, 2]

    z0, k = 0.105, 1e4
    g = jax.grad(final, argnums=(0, 1))(z0, k)
    hz, hk = 1e-6, 1e-2
    fd_z = (final(z0 + hz, k) - final(z0 - hz, k)) / (2 * hz)
    fd_k = (final(z0, k + hk) - final(z0, k - hk)) / (2 * hk)
    assert np.isfinite(g[0]) and np.isfinite(g[1])
    np.testing.assert_allclose(float(g[0]), float(fd_z), rtol=1e-5)
    np.testing.assert_allclose(float(g[1]), float(fd_k), rtol=1e-5)


def test_contact_composes_with_f_ext_and_integrators():
    """``contact`` adds to ``f_ext`` in forward_dynamics; no contact (default) leaves it
    unchanged; rk4 runs it; the variational integrator refuses it."""
    model = _sphere(1.0)
    q = jnp.array([0.0, 0.0, 0.099, 1.0, 0.0, 0.0, 0.0])
    qd = jnp.array([0.1, 0.0, 0.0, 0.2, 0.0, -0.1])
    ct = C.Contact()
    f_ext = jnp.ones((model.nb, 6))
    fd = jax.jit(lambda q, qd, f, ct: sim.forward_dynamics(model, q, qd, jnp.zeros(6), f, contact=ct))
    a1 = fd(q, qd, f_ext, ct)
    a2 = fd(q, qd, f_ext + jax.jit(C.contact_wrenches)(model, q, qd), None)
    np.testing.assert_allclose(np.asarray(a1), np.asarray(a2), rtol=1e-12, atol=1e-12)
    q1, _ = jax.jit(lambda q, qd: sim.step(model, q, qd, jnp.zeros(6), DT, "rk4", contact=ct))(q, qd)
    assert np.all(np.isfinite(np.asarray(q1)))
    try:
        sim.rollout(model, q, qd, jnp.zeros((2, 6)), DT, integrator="variational", contact=ct)
    except ValueError as e:
        assert "variational" in str(e)
    else:
        raise AssertionError("variational with contact must raise")


def test_convex_subproblem_derivative_and_its_majorant():
    """(J4) of :class:`~jaxdyn.contact.JointSpaceContacts`, the step's convex subproblem, on
    Solo-12 with its feet 1.5 mm in the ground, random velocities, both friction laws (the regularised one with and
    without the step's lookahead): with the friction bound frozen at ``fbar`` the force's
    derivative ``velocity_derivative(v, fbar)`` equals forward mode, is symmetric and negative
    semi-definite (the force is minus the gradient of a convex function); ``newton_matrix`` is
    symmetric with ``newton_matrix <= velocity_derivative`` (it majorises the Hessian);
    ``fbar = f_n(v)`` gives back the law's own force; ``elastic_normal_forces`` is ``k d^p``."""
    here = os.path.join(os.path.dirname(__file__), "data")
    model = jaxdyn.load_mjcf(os.path.join(here, "mujoco", "contact", "solo12.xml"))
    ref = np.load(os.path.join(here, "mujoco", "contact", "reference.npz"))
    q = jnp.asarray(ref["solo12_qpos0"]).at[2].add(-0.0115)
    rng = np.random.default_rng(3)
    h = 5e-3
    for friction in ("regularised", "spring"):
        ct = C.Contact(C.Ground.from_model(model), friction=friction)
        s0 = ct.init_state(model)
        state = None if s0 is None else jax.tree_util.tree_map(lambda u: 1e-3 * rng.normal(size=u.shape), s0)

        @jax.jit
        def parts(v, fbar, lookahead):
            js = ct.joint_space(model, q, state, h, lookahead)
            D = js.velocity_derivative(v, fbar)
            fwd = jax.jacfwd(lambda w: js.forces(w, fbar))(v)
            own = js.forces(v, js.normal_forces(v)) - js.forces(v)
            return D, fwd, js.newton_matrix(v, fbar), own, js.elastic_normal_forces(), js.depth

        m = jax.eval_shape(lambda: ct.joint_space(model, q, state, h).depth).shape[0]
        for lookahead in (None,) if friction == "spring" else (None, h):
            for _ in range(2):
                v = jnp.asarray(rng.normal(0, 0.3, model.nv))
                fbar = jnp.asarray(rng.uniform(0.0, 20.0, m))
                D, fwd, Db, own, fe, d = (np.asarray(x) for x in parts(v, fbar, lookahead))
                scale = np.abs(D).max()
                assert scale > 1.0  # the contacts are active
                np.testing.assert_allclose(D, fwd, atol=1e-10 * scale)
                np.testing.assert_allclose(D, D.T, atol=1e-10 * scale)
                assert np.linalg.eigvalsh(D).max() < 1e-9 * scale
                np.testing.assert_allclose(Db, Db.T, atol=1e-10 * scale)
                assert np.linalg.eigvalsh(D - Db).min() > -1e-9 * scale
                assert np.abs(own).max() == 0.0
                np.testing.assert_allclose(fe, 1e6 * d**1.5, rtol=1e-12)


def test_newton_matrices_equal_under_both_dense_executors():
    """The contact rows' congruence ``sum_c G_c^T K_c G_c`` behind ``velocity_derivative`` and
    ``newton_matrix`` under both executors of the small dense algebra
    (``jaxdyn.executor(dense=...)``: an explicit sum of the rows' outer products, the CPU's, or
    one matrix product, a GPU's): equal to 1e-12 relative on Solo-12 with its feet in the
    ground, batched over velocities as the step runs them."""
    here = os.path.join(os.path.dirname(__file__), "data")
    model = jaxdyn.load_mjcf(os.path.join(here, "mujoco", "contact", "solo12.xml"))
    ref = np.load(os.path.join(here, "mujoco", "contact", "reference.npz"))
    q = jnp.asarray(ref["solo12_qpos0"]).at[2].add(-0.0115)
    ct = C.Contact(C.Ground.from_model(model))
    v = jnp.asarray(np.random.default_rng(4).normal(0, 0.3, (3, model.nv)))

    def both(v):
        js = ct.joint_space(model, q, None, 0.0, 5e-3)
        return js.velocity_derivative(v), js.newton_matrix(v, js.normal_forces(v))

    out = {}
    for dense in ("elementwise", "library"):
        with jaxdyn.executor(dense=dense):
            out[dense] = [np.asarray(x) for x in jax.jit(jax.vmap(both))(v)]
    for a, b in zip(out["library"], out["elementwise"]):
        assert np.abs(b).max() > 1.0  # the contacts are active
        np.testing.assert_allclose(a, b, atol=1e-12 * np.abs(b).max())


@pytest.mark.parametrize("friction", ["regularised", "spring"])
@pytest.mark.parametrize("which", ["solo12", "pairs"])
def test_closed_form_velocity_derivative_equals_forward_mode(which, friction):
    """``Contact.joint_space``: the joint-space force ``sum_c G_c^T f_c(G_c v)`` and its velocity
    derivative ``sum_c G_c^T (d f_c / d v_c) G_c`` (docs/contact.md) equal
    :func:`generalized_forces` (body wrenches and RNEA) and its forward-mode Jacobian over all
    ``nv`` directions to 1e-12 relative, and ``G_c v`` is the contact velocity. Solo-12 (free
    base, feet pressed 1.5 mm into the ground, foot-foot sphere pairs apart) and the shape-pair
    model (six free bodies, non-root free joints; the MuJoCo poses with the most penetrating
    pairs), random velocities, with the bristle elongations and ``h = 5 ms`` for the spring law.
    With the step's lookahead (the ``"implicit_euler"`` default, (J3) of
    :class:`~jaxdyn.contact.JointSpaceContacts`) the force is the law at the end-of-step
    penetrations and the closed-form derivative equals forward mode, also through the depth."""
    here = os.path.join(os.path.dirname(__file__), "data")
    rng = np.random.default_rng(1)
    if which == "solo12":
        model = jaxdyn.load_mjcf(os.path.join(here, "mujoco", "contact", "solo12.xml"))
        ref = np.load(os.path.join(here, "mujoco", "contact", "reference.npz"))
        qs = [jnp.asarray(ref["solo12_qpos0"]).at[2].add(-0.0115)]
    else:
        model = jaxdyn.load_mjcf(os.path.join(here, "mjcf", "contact_pairs.xml"))
        ref = np.load(os.path.join(here, "mujoco", "contact", "pairs.npz"))
        order = np.argsort(np.sum(ref["dist"] < 0, 1))[::-1]
        qs = [jnp.asarray(ref["qpos"][i]) for i in order[:3]]
    ct = C.Contact(C.Ground.from_model(model), friction=friction, max_contacts=None)  # row by row
    vs = [jnp.asarray(rng.normal(0, 0.3, model.nv)) for _ in qs]  # the same for both laws
    s0 = ct.init_state(model)
    state = None if s0 is None else jax.tree_util.tree_map(lambda u: 1e-3 * rng.normal(size=u.shape), s0)
    h = 5e-3

    @jax.jit
    def both(q, v):
        js = ct.joint_space(model, q, state, h)
        cp = C.contact_points(model, q, v, ct.ground)
        pc = C.pair_contacts(model, q, v)
        vel = jnp.concatenate([cp.velocity, pc.velocity])
        tau = ct.generalized_forces(model, q, v, state, h)
        D = jax.jacfwd(lambda w: ct.generalized_forces(model, q, w, state, h))(v)
        return (js.forces(v), js.velocity_derivative(v), jnp.einsum("min,n->mi", js.G, v)), (tau, D, vel)

    @jax.jit
    def ahead(q, v):
        """With a lookahead (J3): the law at the end-of-step penetration of every contact, from
        the signed distances of contact_points and pair_contacts, and forward mode over nv."""
        js = ct.joint_space(model, q, state, h, lookahead=h)
        cp = C.contact_points(model, q, v, ct.ground)
        pc = C.pair_contacts(model, q, v)
        n = jnp.broadcast_to(ct.ground.normal / jnp.linalg.norm(ct.ground.normal), cp.point.shape)
        phi = jnp.concatenate([cp.centre @ n[0] - ct.ground.height - cp.radius, pc.distance])
        normal, vel = jnp.concatenate([n, pc.normal]), jnp.concatenate([cp.velocity, pc.velocity])
        depth = jnp.maximum(-(phi + h * jnp.sum(normal * vel, -1)), 0.0)
        mu = jnp.concatenate([cp.mu, pc.mu])
        u = None if state is None else jnp.concatenate([state.ground, state.pairs])
        f = laws.force_law(depth, normal, vel, mu, ct.params, model.dtype, u, h)[0]
        tau_ref = jnp.einsum("min,mi->n", js.G, f)
        D_ref = jax.jacfwd(js.forces)(v)
        at_rest = ct.joint_space(model, q, state, h, lookahead=0.0).forces(v) - ct.generalized_forces(
            model, q, v, state, h
        )
        return (js.forces(v), js.velocity_derivative(v)), (tau_ref, D_ref), at_rest, depth

    touching = 0
    for q, v in zip(qs, vs):
        (tau, D), (tau_ref, D_ref), at_rest, depth = ahead(q, v)
        np.testing.assert_allclose(tau, tau_ref, rtol=0, atol=1e-12 * np.abs(tau_ref).max())
        np.testing.assert_allclose(D, D_ref, rtol=0, atol=1e-12 * np.abs(D_ref).max())
        assert np.abs(np.asarray(at_rest)).max() <= 1e-12 * np.abs(np.asarray(tau_ref)).max()
        assert np.sum(np.asarray(depth) > 0) > 0
        (tau, D, vel), (tau_ref, D_ref, vel_ref) = both(q, v)
        touching += int(np.sum(np.abs(np.asarray(tau_ref)) > 0) > 0)
        np.testing.assert_allclose(vel, vel_ref, rtol=0, atol=1e-12 * np.abs(vel_ref).max())
        np.testing.assert_allclose(tau, tau_ref, rtol=0, atol=1e-12 * np.abs(tau_ref).max())
        assert np.abs(D_ref).max() > 0
        np.testing.assert_allclose(D, D_ref, rtol=0, atol=1e-12 * np.abs(D_ref).max())
    assert touching == len(qs)


def test_free_bodies_after_a_fixed_arm_settle_on_the_ground():
    """tests/data/mjcf/free_bodies.xml: a fixed-base arm, then a free box and a free rod with a
    flap (each MuJoCo free joint three world-axis slides and a ball in jaxdyn). Dropped from a few
    centimetres, the box comes to rest flat on the floor at the Hunt-Crossley depth of its four
    corners, and the normal forces on the box carry its weight."""
    path = os.path.join(os.path.dirname(__file__), "data", "mjcf", "free_bodies.xml")
    m = jaxdyn.load_mjcf(path, dtype=jnp.float64)
    ct = C.Contact(C.Ground.from_model(m))
    q0 = np.zeros(m.nq)
    q0[m.joint_q_slice("box_free/x")] = 0.4
    q0[m.joint_q_slice("box_free/z")] = 0.06
    q0[m.joint_q_slice("box_free")] = [1.0, 0.0, 0.0, 0.0]
    q0[m.joint_q_slice("rod_free/x")] = -0.3
    q0[m.joint_q_slice("rod_free/z")] = 0.2
    q0[m.joint_q_slice("rod_free")] = [1.0, 0.0, 0.0, 0.0]
    tr = _run(m, ct, jnp.asarray(q0), jnp.zeros(m.nv), 1500)
    q, qd = tr.q[-1], tr.qd[-1]
    box_v = np.concatenate([np.asarray(qd[m.joint_v_slice(f"box_free/{a}")]) for a in "xyz"])
    assert np.max(np.abs(box_v)) < 1e-3 and np.max(np.abs(np.asarray(qd[m.joint_v_slice("box_free")]))) < 1e-2
    mass = 600 * 0.1 * 0.08 * 0.06  # density x volume
    d = (mass * G / 4 / 1e6) ** (1 / 1.5)  # four corners, k d^1.5 each (ContactParams defaults)
    assert float(q[m.joint_q_slice("box_free/z")][0]) == pytest.approx(0.03 - d, abs=2e-5)
    cp = C.contact_points(m, q, qd, ct.ground)
    f = C.contact_forces(cp, ct.ground, ct.params)
    box_body = m.body_names.index("box")
    on_box = np.asarray(cp.body) == box_body
    assert float(jnp.sum(f[on_box, 2])) == pytest.approx(mass * G, rel=1e-3)
