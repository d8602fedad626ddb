"""The broad phase of jaxdyn.contact: ``Contact(max_pairs=K)`` evaluates, of each kind of pair,
the K pairs with the nearest bounding spheres. Checked: the bounding spheres hold their shapes
(each shape's support points in 400 directions), the forces equal every pair's wherever no more
than K pairs of a kind are in reach (:func:`jaxdyn.contact.pairs_in_reach`) at the 56 poses of
the MuJoCo pair reference, the table layout of the point forces, the bristle state, a step and
its gradient, and the argument's validation."""

import functools
import os
import warnings

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxdyn
from jaxdyn import contact as C
from jaxdyn import geometry, sim
from jaxdyn.contact import frames, pairs

HERE = os.path.dirname(__file__)
XML = os.path.join(HERE, "data", "mjcf", "contact_pairs.xml")
REF = os.path.join(HERE, "data", "mujoco", "contact", "pairs.npz")
# the box-box pair (the world's box and b1) is left out: where a box's edge reaches into the
# other box its deepest point lies where two faces are equally near, and which face's normal the
# contact takes is decided by rounding, differently in two compiled programs
EXCLUDE = (("world", "b1"),)


@functools.cache
def _model():
    return jaxdyn.load_mjcf(XML, dtype=jnp.float64)


@functools.cache
def _poses():
    """The reference poses and random velocities (56 of each)."""
    qs = np.load(REF)["qpos"]
    qds = np.random.default_rng(0).normal(size=(len(qs), _model().nv))
    return jnp.asarray(qs), jnp.asarray(qds)


@functools.cache
def _evaluate(max_pairs):
    """Wrenches, point forces, the bristle update and the reach counts at every pose."""
    m = _model()
    regular = C.Contact(exclude=EXCLUDE, max_pairs=max_pairs)
    spring = C.Contact(friction="spring", exclude=EXCLUDE, max_pairs=max_pairs)
    u0 = spring.init_state(m)
    u0 = C.ContactState(u0.ground, 1e-3 * jnp.asarray(np.random.default_rng(1).normal(size=u0.pairs.shape)))

    def one(q, qd):
        pf = regular.point_forces(m, q, qd)
        u1 = spring.update_state(m, q, qd, u0, 1e-3)
        return (
            regular.wrenches(m, q, qd),
            pf.force,
            pf.depth,
            spring.wrenches(m, q, qd, u0, 1e-3),
            u1.pairs,
            C.pairs_in_reach(m, q, EXCLUDE),
            C.pair_distances(m, q, EXCLUDE),
        )

    return jax.device_get(jax.jit(jax.vmap(one))(*_poses()))


def test_bounding_spheres_hold_their_shapes():
    """Each geom's bounding radius is the largest distance from its centre to its support
    point (the deepest point on a ground of normal n, over 400 normals): never smaller, and
    reached within 2 % (exactly for the sphere, the box and the mesh's vertices)."""
    rng = np.random.default_rng(2)
    hull = rng.normal(size=(30, 3)) * [0.3, 0.2, 0.1] + [0.05, 0.0, -0.02]
    types = [geometry.SPHERE, geometry.CAPSULE, geometry.BOX, geometry.CYLINDER, geometry.ELLIPSOID, geometry.MESH]
    sizes = [[0.1, 0, 0], [0.05, 0.2, 0], [0.1, 0.2, 0.3], [0.08, 0.15, 0], [0.1, 0.3, 0.2], [0, 0, 0]]
    g = geometry.make_geoms(
        type=types,
        size=sizes,
        body=[0] * 6,
        vertices=hull,
        vertex_geom=[5] * len(hull),
        dtype=np.float64,
    )
    m = eqx.tree_at(lambda m: m.geoms, _model(), g)  # every shape on the first free body
    r = np.asarray(pairs.bounding_radii(m.geoms))
    normals = rng.normal(size=(400, 3))
    normals /= np.linalg.norm(normals, axis=1, keepdims=True)
    q = _poses()[0][0]

    def support(n):
        cp = C.contact_points(m, q, jnp.zeros(m.nv), C.Ground(normal=n, height=-10.0))
        Rg, cg = frames.geom_poses(m, frames._frames(m, q))
        deepest = cp.centre - cp.radius[:, None] * n
        return jnp.linalg.norm(deepest - cg[np.asarray(cp.geom)], axis=1), cp.centre @ n - cp.radius

    dist, level = (np.asarray(x) for x in jax.jit(jax.vmap(support))(jnp.asarray(normals)))
    geom = np.asarray(C.contact_points(m, q, jnp.zeros(m.nv)).geom)
    far = np.zeros(len(types))
    for k in range(len(types)):  # the largest distance of the shape's support point
        on = geom == k
        far[k] = np.take_along_axis(dist[:, on], np.argmin(level[:, on], 1)[:, None], 1).max()
    assert np.all(far <= r + 1e-12), (far, r)
    assert np.all(far >= 0.98 * r), (far, r)
    np.testing.assert_allclose(far[[0, 2, 5]], r[[0, 2, 5]], rtol=1e-12)


def test_pairs_in_reach_count_the_touching_pairs():
    """At the 56 reference poses every pair with a negative signed distance is in reach, and
    the counts are those of the bounding gaps computed here from the geoms' centres."""
    m = _model()

    def one(q):  # the counts and distances alone (the forces' program: _evaluate, slow set)
        return (
            C.pairs_in_reach(m, q, EXCLUDE),
            C.pair_distances(m, q, EXCLUDE),
            frames.geom_poses(m, frames._frames(m, q))[1],
        )

    reach, dist, cg = (np.asarray(x) for x in jax.jit(jax.vmap(one))(_poses()[0]))
    table = C.collision_pairs(m, EXCLUDE)
    kind_of = np.concatenate([np.full(len(i), k) for k, (_, i, _) in enumerate(table.kinds)])
    radius = np.asarray(pairs.bounding_radii(m.geoms))
    ij = np.asarray(table.pairs)
    gaps = np.linalg.norm(cg[:, ij[:, 1]] - cg[:, ij[:, 0]], axis=2) - radius[ij[:, 0]] - radius[ij[:, 1]]
    assert np.all(gaps[dist < 0] <= 0)
    want = np.stack([(gaps[:, kind_of == k] <= 0).sum(1) for k in range(len(table.kinds))], 1)
    np.testing.assert_array_equal(reach, want)
    assert reach.max() == 4 and (dist < 0).sum() > 100


@pytest.mark.parametrize("max_pairs", [1, 2, 4])
def test_a_budget_gives_every_pairs_forces_where_it_suffices(max_pairs):
    """With K pairs per kind the wrenches (regularised and bristle friction), the point forces in
    the table's rows and the bristles' update equal every pair's at each pose where no kind has
    more than K pairs in reach; where one has more, a pair in contact is left out somewhere."""
    full = _evaluate(None)
    part = _evaluate(max_pairs)
    reach, dist = full[5], full[6]
    ok = reach.max(1) <= max_pairs
    assert ok.sum() >= 10
    for a, b in zip(full[:4], part[:4]):
        np.testing.assert_allclose(b[ok], a[ok], rtol=0, atol=1e-9 * max(1.0, np.abs(a).max()))
    # the bristles: those of the pairs in contact as every pair's; a pair not chosen starts
    # again from a relaxed bristle (zero), where every pair's relaxes by b_t / (b_t + h k_t)
    table = C.collision_pairs(_model(), EXCLUDE)
    touching = dist[:, table.row_pair] < 0
    a, b = full[4][ok], part[4][ok]
    np.testing.assert_allclose(b[touching[ok]], a[touching[ok]], rtol=0, atol=1e-12)
    assert np.all((np.abs(b - a) < 1e-12) | (b == 0))
    if max_pairs < 4:
        assert not ok.all()
        differs = np.abs(full[0] - part[0]).reshape(len(ok), -1).max(1) > 1e-6
        assert differs[~ok].any() and not differs[ok].any()
    else:
        assert ok.all()


def test_a_step_and_its_gradient_with_a_budget():
    """An implicit step of every pair and one with K = 4 (enough at every reference pose) give
    the same velocity and the same gradient of it with respect to q."""
    m = _model()
    qs, qds = _poses()
    q, qd = qs[7], qds[7]
    tau = jnp.zeros(m.nv)

    def run(ct):
        f = lambda q: sim.step(m, q, qd, tau, 1e-3, contact=ct)[1]  # noqa: E731
        return jax.jit(lambda q: (f(q), jax.jacfwd(f)(q)))(q)

    (v0, J0), (v1, J1) = run(C.Contact(exclude=EXCLUDE)), run(C.Contact(exclude=EXCLUDE, max_pairs=4))
    assert np.all(np.isfinite(np.asarray(J1)))
    np.testing.assert_allclose(v1, v0, rtol=0, atol=1e-10)
    np.testing.assert_allclose(J1, J0, rtol=0, atol=1e-8 * float(jnp.abs(J0).max()))


@pytest.mark.parametrize("bad", [0, -3, 2.5, True, "4"])
def test_max_pairs_is_checked(bad):
    with pytest.raises(ValueError, match="max_pairs must be 'auto', a positive int or None"):
        C.Contact(max_pairs=bad)


def test_pairs_in_reach_without_pairs():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = jaxdyn.load_robot("pendulum")
    assert C.pairs_in_reach(m, jnp.zeros(m.nq)).shape == (0,)


@functools.cache
def _row_budget_case():
    """The reference pose with the most touching rows: its index, that count, the state."""
    m = _model()
    qs, qds = _poses()
    every = C.Contact(exclude=EXCLUDE, max_contacts=None)
    touching = jax.jit(jax.vmap(lambda q: jnp.sum(every.joint_space(m, q).distance <= 0)))(qs)
    rows = jax.eval_shape(lambda q: every.joint_space(m, q).depth, qs[0]).shape[0]
    i = int(np.argmax(np.asarray(touching)))
    n = int(touching[i])
    assert 2 <= n < rows - 4
    return i, n, int(touching.max()), qs[i], qds[i]


def _budget_step(ct, qd):
    m = _model()
    return lambda q: sim.step(m, q, qd, jnp.zeros(m.nv), 1e-3, contact=ct)[1]


def test_a_contact_budget_gives_every_rows_step_where_it_suffices():
    """``Contact(max_contacts=R)``: the implicit step's solve takes the R rows of smallest signed
    distance. Where at most R rows touch, the step equals the one with every row; half the
    touching rows changes the step (so the comparison can fail). Its Jacobian:
    test_a_contact_budget_keeps_the_steps_jacobian (slow set)."""
    _, n, most, q, qd = _row_budget_case()
    v0 = jax.jit(_budget_step(C.Contact(exclude=EXCLUDE, max_contacts=None), qd))(q)
    v1 = jax.jit(_budget_step(C.Contact(exclude=EXCLUDE, max_contacts=n), qd))(q)
    np.testing.assert_allclose(v1, v0, rtol=0, atol=1e-10)
    v2 = jax.jit(_budget_step(C.Contact(exclude=EXCLUDE, max_contacts=n // 2), qd))(q)
    assert float(jnp.abs(v2 - v0).max()) > 1e-6
    # the default budget (16 at least) holds every touching row of these poses
    assert C.Contact().max_contacts == "auto" and most <= 16
    v3 = jax.jit(_budget_step(C.Contact(exclude=EXCLUDE), qd))(q)
    np.testing.assert_allclose(v3, v0, rtol=0, atol=1e-10)


def test_a_contact_budget_keeps_the_steps_jacobian():
    """Where at most R rows touch, the step's Jacobian with respect to q with ``max_contacts=R``
    equals the one with every row."""
    _, n, _, q, qd = _row_budget_case()

    def with_jacobian(ct):  # one program each: the step and its Jacobian
        J, v = jax.jit(jax.jacfwd(lambda q: (_budget_step(ct, qd)(q),) * 2, has_aux=True))(q)
        return v, J

    v0, J0 = with_jacobian(C.Contact(exclude=EXCLUDE, max_contacts=None))
    v1, J1 = with_jacobian(C.Contact(exclude=EXCLUDE, max_contacts=n))
    np.testing.assert_allclose(v1, v0, rtol=0, atol=1e-10)
    np.testing.assert_allclose(J1, J0, rtol=0, atol=1e-8 * float(jnp.abs(J0).max()))


@pytest.mark.parametrize("bad", [0, -3, 2.5, True, "all"])
def test_max_contacts_is_checked(bad):
    with pytest.raises(ValueError, match="max_contacts must be 'auto', a positive int or None"):
        C.Contact(max_contacts=bad)


def test_rows_beyond_the_budget_are_reported():
    """Three balls resting on the floor apart from each other (three touching rows of six): a
    budget of two reports the first state (``Trajectory.overflow_step`` 0, ``first_overflow``),
    a budget of three reports none and steps as every row does, and without a budget (every row
    taken) there is no report. (The quick counterpart of
    test_a_contact_budget_gives_every_rows_step_where_it_suffices, slow set.)"""
    xml = (
        """<mujoco><worldbody><geom type="plane" size="0 0 1"/>"""
        + "".join(
            f'<body pos="{x} 0 0.0499"><freejoint/><geom type="sphere" size="0.05" mass="1"/></body>'
            for x in (0, 0.3, 0.6)
        )
        + "</worldbody></mujoco>"
    )
    m = jaxdyn.load_mjcf(xml)
    q0 = jnp.concatenate([jnp.array([x, 0, 0.0499, 1, 0, 0, 0]) for x in (0, 0.3, 0.6)])

    def run(budget):
        ct = C.Contact(C.Ground.from_model(m), max_contacts=budget)
        return sim.rollout(m, q0, jnp.zeros(m.nv), jnp.zeros((3, m.nv)), 1e-3, contact=ct)

    tight, enough, every = jax.jit(lambda: (run(2), run(3), run(None)))()
    assert int(tight.overflow_step) == 0 and sim.first_overflow(tight) == ((), 0)
    assert int(enough.overflow_step) == -1 and sim.first_overflow(enough) is None
    assert every.overflow_step is None
    for a, b in ((enough.q, every.q), (enough.qd, every.qd)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=0, atol=1e-10)
    assert float(jnp.abs(tight.qd - every.qd).max()) > 1e-6  # a ball left out of the solve falls


def _balls(spacing, custom=""):
    """Three balls of radius 0.05 resting on the floor in a row, ``spacing`` apart (centres),
    with a ``<custom>`` block."""
    xml = (
        f"""<mujoco><custom>{custom}</custom><worldbody><geom type="plane" size="0 0 1"/>"""
        + "".join(
            f'<body pos="{k * spacing} 0 0.0499"><freejoint/><geom type="sphere" size="0.05" mass="1"/></body>'
            for k in range(3)
        )
        + "</worldbody></mujoco>"
    )
    q0 = jnp.concatenate([jnp.array([k * spacing, 0, 0.0499, 1, 0, 0, 0]) for k in range(3)])
    return jaxdyn.load_mjcf(xml, dtype=jnp.float64), q0


def test_pairs_beyond_the_broad_phase_budget_are_counted():
    """Three balls in a row, each pressed against the next (two sphere-sphere pairs of three in
    reach): the implicit step's contacts count one pair beyond a broad phase of one, none beyond
    two, and no budget applies without one (``JointSpaceContacts.overflow``, which
    ``sim.rollout`` turns into ``Trajectory.overflow_step``: the slow
    test_pairs_beyond_the_broad_phase_budget_are_reported)."""
    m, q0 = _balls(0.0998)
    assert np.asarray(C.pairs_in_reach(m, q0)).tolist() == [2]

    def overflow(budget):
        return C.Contact(C.Ground.from_model(m), max_pairs=budget, max_contacts=None).joint_space(m, q0).overflow

    one, two = jax.jit(lambda: (overflow(1), overflow(2)))()
    assert (int(one), int(two)) == (1, 0) and jax.eval_shape(lambda: overflow(None)) is None


def test_pairs_beyond_the_broad_phase_budget_are_reported():
    """The same balls stepped: a broad phase of one pair reports the first state
    (``Trajectory.overflow_step``) and leaves a pair's force out; one of two reports none and
    steps as every pair does."""
    m, q0 = _balls(0.0998)

    def run(budget):
        ct = C.Contact(C.Ground.from_model(m), max_pairs=budget, max_contacts=None)
        return sim.rollout(m, q0, jnp.zeros(m.nv), jnp.zeros((3, m.nv)), 1e-3, contact=ct)

    tight, enough, every = jax.jit(lambda: (run(1), run(2), run(None)))()
    assert int(tight.overflow_step) == 0 and sim.first_overflow(tight) == ((), 0)
    assert int(enough.overflow_step) == -1 and every.overflow_step is None
    np.testing.assert_allclose(np.asarray(enough.qd), np.asarray(every.qd), rtol=0, atol=1e-10)
    assert float(jnp.abs(tight.qd - every.qd).max()) > 1e-6


def test_the_scenes_budgets_are_the_defaults():
    """MJCF ``<custom><numeric name="max_geom_pairs">`` and ``"max_contact_points"`` (MJX's
    budgets, which MuJoCo Playground's scenes set) become ``model.geoms.max_pairs`` and
    ``max_contacts``, and ``Contact()``'s ``"auto"`` budgets take them: the default contact's
    solve takes the scene's rows and counts the pairs beyond its pair budget. ``-1`` is no limit
    (then four per body with a collidable geom, at least 16); a number that is not a positive
    whole number is refused by name."""
    from jaxdyn.contact.joint_space import contact_budget
    from jaxdyn.io import MJCFError

    budgets = '<numeric name="max_geom_pairs" data="1"/><numeric name="max_contact_points" data="4"/>'
    m, q0 = _balls(0.0998, budgets)
    plain, _ = _balls(0.0998)
    assert (m.geoms.max_pairs, m.geoms.max_contacts) == (1, 4)
    assert (plain.geoms.max_pairs, plain.geoms.max_contacts) == (None, None)
    assert pairs.pair_budget(m, "auto") == 1 and contact_budget(m, C.Contact()) == 4
    assert (
        pairs.pair_budget(plain, "auto") == 16 and pairs.pair_budget(m, 3) == 3 and pairs.pair_budget(m, None) is None
    )
    unlimited, _ = _balls(0.0998, '<numeric name="max_geom_pairs" data="-1"/>')
    assert unlimited.geoms.max_pairs is None
    js = jax.jit(lambda: C.Contact(C.Ground.from_model(m)).joint_space(m, q0))()
    # four rows of the three ground points and the one pair evaluated (three touching), and
    # the pair left out counted
    assert js.depth.shape == (4,) and int(js.overflow) == 1
    for data in ("0", "2.5", "-2", "many"):
        with pytest.raises(MJCFError, match="<custom><numeric name='max_geom_pairs'> data"):
            _balls(0.3, f'<numeric name="max_geom_pairs" data="{data}"/>')


@functools.cache
def _reach_case():
    """Two balls and a capsule on the floor: apart in the first state, a ball pressed 1 mm into
    the capsule's top in the second (its pairs with the balls the one kind in reach there)."""
    xml = """<mujoco><worldbody><geom type="plane" size="0 0 1"/>
      <body name="a"><freejoint/><geom type="sphere" size="0.05" mass="1"/></body>
      <body name="c"><freejoint/><geom type="capsule" size="0.03" fromto="-0.1 0 0 0.1 0 0" mass="1"/></body>
      <body name="b"><freejoint/><geom type="sphere" size="0.05" mass="1"/></body>
    </worldbody></mujoco>"""
    m = jaxdyn.load_mjcf(xml, dtype=jnp.float64)

    def state(xa, xb):  # the balls at xa, xb (on the floor), the capsule at the origin
        return jnp.concatenate(
            [jnp.array([*xa, 1.0, 0, 0, 0]), jnp.array([0, 0, 0.0299, 1.0, 0, 0, 0]), jnp.array([*xb, 1.0, 0, 0, 0])]
        )

    q = jnp.stack([state((0, 0.5, 0.0499), (0, -0.5, 0.0499)), state((0.0, 0.0, 0.1088), (0, -0.5, 0.0499))])
    rng = np.random.default_rng(3)
    qd, dq = jnp.asarray(rng.normal(size=(2, m.nv))), jnp.asarray(rng.normal(size=(2, m.nq)))
    return m, q, qd, dq


def _reach_velocity(ct, derivative=False):
    """The end velocity of an implicit step of the reach case, and its derivative along ``dq``."""
    m = _reach_case()[0]

    def v(q, qd, dq):
        step = lambda q: sim.step(m, q, qd, jnp.zeros(m.nv), 1e-3, contact=ct)[1]  # noqa: E731
        return jax.jvp(step, (q,), (dq,)) if derivative else (step(q),)

    return v


def _reach_forces(ct):
    """The joint-space contact force of the reach case at its velocity
    (:meth:`jaxdyn.contact.Contact.joint_space`)."""
    m = _reach_case()[0]
    return lambda q, qd: (ct.joint_space(m, q, qd=qd).forces(qd),)


def _close(x, y, atol):
    for a, b in zip(x, y):
        np.testing.assert_allclose(a, b, rtol=0, atol=atol * max(1.0, float(jnp.abs(b).max())))


def test_pairs_out_of_reach_skip_their_narrow_phase():
    """With the broad phase on, a pair whose bounding spheres are apart is out of reach (its
    rows carry no force) and a kind with no pair in reach in any sample of a batch skips its
    narrow phase (``jaxdyn.planner.skip``: ``"branch"``, a ``lax.cond`` on the batch's verdict;
    ``"select"``, every pair's narrow phase and a select). In the reach case the first state's
    joint-space contact force is the same alone (the
    branch skips the ball-capsule pairs), in the batch with the second (the branch evaluates
    them), under the select and without a broad phase (every pair exact), and so are the
    second's; the batched program has a conditional per kind under the branch and none under
    the select. The step and its derivative: test_pairs_out_of_reach_keep_the_steps_derivative
    (slow set)."""
    m, q, qd, dq = _reach_case()
    table = C.collision_pairs(m)
    assert len(table.kinds) == 2  # sphere-sphere, sphere-capsule
    assert np.asarray(jax.vmap(lambda q: C.pairs_in_reach(m, q))(q)).tolist() == [[0, 0], [0, 1]]
    ground = C.Ground.from_model(m)
    exact = jax.jit(jax.vmap(_reach_forces(C.Contact(ground, max_pairs=None))))(q, qd)
    conds = {}
    for how in ("branch", "select"):
        with jaxdyn.executor(skip=how):
            f = jax.jit(jax.vmap(_reach_forces(C.Contact(ground))))
            _close(f(q, qd), exact, 1e-12)
            conds[how] = f.lower(q, qd).as_text().count("stablehlo.case")
    with jaxdyn.executor(skip="branch"):
        _close(jax.jit(_reach_forces(C.Contact(ground)))(q[0], qd[0]), [exact[0][0]], 1e-12)
    # the pressed ball's force on the capsule: a pair's force the comparisons would miss
    free = jax.jit(jax.vmap(_reach_forces(C.Contact(ground, collide_pairs=False))))(q, qd)
    assert float(jnp.abs(free[0][1] - exact[0][1]).max()) > 1.0
    assert conds["branch"] == len(table.kinds) and conds["select"] == 0, conds


def test_pairs_out_of_reach_keep_the_steps_derivative():
    """The reach case stepped: the end velocities and their derivatives along a direction of q
    under the branch, alone and batched, equal those without a broad phase."""
    m, q, qd, dq = _reach_case()
    ground = C.Ground.from_model(m)
    exact = jax.jit(jax.vmap(_reach_velocity(C.Contact(ground, max_pairs=None), True)))(q, qd, dq)
    with jaxdyn.executor(skip="branch"):
        _close(jax.jit(_reach_velocity(C.Contact(ground), True))(q[0], qd[0], dq[0]), [x[0] for x in exact], 1e-10)
        _close(jax.jit(jax.vmap(_reach_velocity(C.Contact(ground), True)))(q, qd, dq), exact, 1e-10)


@functools.cache
def _row_sizes_case():
    """Twenty balls on vertical slides, each with the floor alone (twenty rows), with a budget
    of 17 rows (the solve's sizes 8, 16 and 17): three, twelve and seventeen pressed 2 mm into
    the floor in three states."""
    xml = (
        '<mujoco><worldbody><geom type="plane" size="0 0 1" contype="2" conaffinity="1"/>'
        + "".join(
            f'<body pos="{0.3 * k} 0 0"><joint type="slide" axis="0 0 1"/>'
            '<geom type="sphere" size="0.05" mass="1" contype="1" conaffinity="2"/></body>'
            for k in range(20)
        )
        + "</worldbody></mujoco>"
    )
    m = jaxdyn.load_mjcf(xml, dtype=jnp.float64)
    k = jnp.arange(20)
    q = jnp.stack([jnp.where(k < n, 0.048, 0.3) for n in (3, 12, 17)])
    qd = jnp.asarray(np.random.default_rng(5).normal(size=(3, 20)))
    return m, q, qd


def test_the_solve_leaves_out_the_rows_apart():
    """With a budget the implicit solve's rows are sorted by distance, and a row apart carries
    no force: the solve takes the first 8, 16, ... rows (the smallest of its sizes) that hold
    every touching row of the batch (``jaxdyn.planner.contact_row_sizes``, a ``lax.switch`` on
    the batch's largest count under ``jaxdyn.executor(skip="branch")``). Twenty balls with a
    budget of 17 rows, three, twelve and seventeen touching in three states: the end velocities
    equal every row's alone (8, 16 and 17 rows), in the batch (17), under the select (17) and
    without a budget (20)."""
    m, q, qd = _row_sizes_case()
    ground = C.Ground.from_model(m)
    budget = C.Contact(ground, max_contacts=17)
    with jaxdyn.executor(skip="branch"):
        assert jaxdyn.planner.contact_row_sizes(17) == (0, 8, 16, 17)
    js = budget.joint_space(m, q[0])
    assert js.by_distance and js.separable() and js.depth.shape == (17,)
    assert np.asarray(jax.vmap(lambda q: budget.joint_space(m, q).touching())(q)).tolist() == [3, 12, 17]

    def velocity(ct):
        return lambda q, qd: sim.step(m, q, qd, jnp.zeros(m.nv), 1e-3, contact=ct)[1]

    every = jax.jit(jax.vmap(velocity(C.Contact(ground, max_contacts=None))))(q, qd)
    cases = {}
    for how in ("branch", "select"):
        with jaxdyn.executor(skip=how):
            f = jax.jit(jax.vmap(velocity(budget)))
            cases[how] = (f(q, qd), f.lower(q, qd).as_text().count("stablehlo.case"))
    with jaxdyn.executor(skip="branch"):
        one = jax.jit(velocity(budget))
        for i in range(3):  # each sample alone takes its own size
            np.testing.assert_allclose(one(q[i], qd[i]), every[i], rtol=0, atol=1e-12)
    for how in cases:
        np.testing.assert_allclose(cases[how][0], every, rtol=0, atol=1e-12)
    # the balls in the floor are pushed up against gravity: forces the comparisons would miss
    assert float(jnp.mean(every[:, :3] - qd[:, :3])) > 0.1
    assert cases["branch"][1] == cases["select"][1] + 1, cases
