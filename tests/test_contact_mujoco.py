"""Ground contact against MuJoCo on the same MJCF models (tests/data/mujoco/contact/, written
and simulated by tests/reference/generate_mujoco_contact.py; MuJoCo is not needed here).

The two contact laws differ (docs/contact.md, "Validation against MuJoCo"): jaxdyn's
Hunt-Crossley force ``k d^1.5 (1 + c_d v_pen)`` with regularised Coulomb friction, MuJoCo's
soft constraints (``solref``, ``solimp``) with elliptic friction cones. The MuJoCo models'
``solref`` time constants are chosen so that MuJoCo's steady penetration equals jaxdyn's at the
model's weight; the comparisons are then

* at rest, exact for both laws: the total normal force equals the weight (both to 1e-6;
  against each other to 1e-3 as stored), the box and the capsule lie flat;
* the resting height: the two penetrations are equal at this load by construction, so the
  heights agree to 1 % of the penetration (2 um);
* where the laws differ, with tolerances from what they do differently: the time for the
  normal force to settle (within 0.1 s), where the tumbling box and capsule come to rest (within
  1 cm and 0.03 rad: friction during the tumble differs), the quadruped's base height and
  joints after 2 s (both creep toward the frictionless PD equilibrium, at different rates:
  regularised friction vs soft friction constraints; within 3 mm and 0.02 rad), and the
  frictionless PD equilibrium itself, which does not depend on the friction law (height to 1 %
  of the penetration, joints to 1e-4 rad).

Both simulators run at h = 1 ms (MuJoCo's Euler, jaxdyn's ``"implicit_euler"``), with the
same PD controller on the quadruped, evaluated at the start of every step.
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

HERE = os.path.join(os.path.dirname(__file__), "data", "mujoco", "contact")
DT = 1e-3


@pytest.fixture(scope="module")
def ref():
    return dict(np.load(os.path.join(HERE, "reference.npz")))


def _tilt(quat):
    """Angle between the body z axis and the world z axis, ``quat = (w, x, y, z)``."""
    w, x, y, z = quat
    return np.arccos(np.clip(1 - 2 * (x * x + y * y), -1, 1))


def _flat(name, quat):
    """How far from lying flat: the box's z axis from the vertical, the capsule's axis (the
    body x axis: ``euler="0 90 0"``) from the horizontal (radians)."""
    if name in ("box", "box_on_box", "mesh"):
        return _tilt(quat)
    w, x, y, z = quat
    return abs(np.arcsin(np.clip(2 * (x * z - w * y), -1, 1)))


def _yaw(quat):
    w, x, y, z = quat
    return np.arctan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))


def _settle_time(x, tol):
    out = np.flatnonzero(np.abs(x - x[-1]) > tol)
    return (out[-1] + 1) * DT if len(out) else 0.0


def _model(name):
    model = jaxdyn.load_mjcf(os.path.join(HERE, f"{name}.xml"))
    return model, C.Contact(C.Ground.from_model(model), C.ContactParams())


@pytest.mark.parametrize("name", ["box", "capsule", "box_on_box", "mesh"])
def test_dropped_body_settles_as_in_mujoco(ref, name):
    """Dropped tilted from 8 cm onto the ground, and the box onto a box on the world (box-box
    contact), 1.5 s: resting height (penetration 0.182 mm in both; 0.139 mm for the mesh, a
    hexagonal prism collided as its convex hull: six vertices in jaxdyn, four contacts in
    MuJoCo), flat, total normal force = weight, normal force settled (1 %) at a similar time;
    where it comes to rest (friction during the tumble) loosely."""
    model, ct = _model(name)
    mj = {k[len(name) + 1 :]: v for k, v in ref.items() if k.startswith(name + "_")}
    steps = len(mj["normal_force"]) - 1

    @jax.jit
    def run(q0, ct):
        tr = sim.rollout(model, q0, jnp.zeros(6), jnp.zeros((steps, 6)), DT, contact=ct)
        f = jax.vmap(lambda q, qd: C.total_force(model, q, qd, ct))(tr.q, tr.qd)
        return tr.q, f, tr.nonfinite_step

    q, f, bad = (np.asarray(x) for x in run(jnp.asarray(mj["qpos0"]), ct))
    assert int(bad) == -1
    weight = float(mj["weight"])
    qm = mj["qpos_final"]
    # at rest: the weight, exactly in both laws
    np.testing.assert_allclose(f[-1], [0, 0, weight], rtol=1e-6, atol=1e-9)
    assert abs(mj["normal_force"][-1] / weight - 1) < 1e-5  # MuJoCo's mesh: 3e-6 (still settling)
    assert abs(f[-1, 2] / mj["normal_force"][-1] - 1) < 1e-3
    # resting height: equal penetration at this load by the choice of MuJoCo's solref
    pen = float(mj["hunt_crossley_penetration"])
    assert _flat(name, q[-1, 3:7]) < 1e-6
    if name == "mesh":  # MuJoCo keeps 4 of the 6 base vertices as contacts and rests tilted
        assert _flat(name, qm[3:7]) < 3e-4  # 1.4e-4 rad: its base's height varies by 11 um
        depth = C.contact_points(model, jnp.asarray(q[-1]), jnp.zeros(6), ct.ground).depth
        assert abs(float(jnp.max(depth)) - float(mj["penetration"])) < 1e-2 * pen
        assert abs(q[-1, 2] - qm[2]) < 0.1 * pen, (q[-1, 2], qm[2])
    else:
        assert abs(q[-1, 2] - qm[2]) < 1e-2 * pen, (q[-1, 2], qm[2])
        assert _flat(name, qm[3:7]) < 1e-6
    # the transient: settling of the normal force, where the body ended up
    t_jd, t_mj = _settle_time(f[:, 2] / weight, 1e-2), float(mj["settle_time_force"])
    assert abs(t_jd - t_mj) < 0.1, (t_jd, t_mj)
    assert np.linalg.norm(q[-1, :2] - qm[:2]) < 1e-2
    assert abs(_yaw(q[-1, 3:7]) - _yaw(qm[3:7])) < (5e-2 if name == "mesh" else 3e-2)  # mesh: 0.037
    # the stored trajectory (every 10 ms): the same fall until the first touch
    touch = int(np.argmax(f[:, 2] > 0))  # the first step with a contact force
    assert touch > 50
    np.testing.assert_allclose(q[:touch:10], mj["qpos"][: (touch + 9) // 10], atol=1e-9)


@pytest.fixture(scope="module")
def solo(ref):
    """The quadruped rollout, one compiled program for every test below (2000 steps; the model,
    friction included, the step ``dt`` and the friction regularisation ``eps`` are arguments)."""
    model, _ = _model("solo12")
    kp, kd, q_ref = float(ref["kp"]), float(ref["kd"]), jnp.asarray(ref["q_stand"])

    def pd(q, qd, t):
        return jnp.concatenate([jnp.zeros(6), kp * (q_ref - q[7:]) - kd * qd[6:]])

    @jax.jit
    def run(model, q0, dt, eps):
        ct = C.Contact(C.Ground.from_model(model), C.ContactParams(friction_velocity=eps))
        tr = sim.rollout(model, q0, jnp.zeros(model.nv), pd, dt, steps=2000, contact=ct)
        f = jax.vmap(lambda q, qd: C.total_force(model, q, qd, ct))(tr.q, tr.qd)
        d = jax.vmap(lambda q: jnp.max(C.contact_points(model, q, jnp.zeros(model.nv), ct.ground).depth))(tr.q)
        return tr.q, f, d, tr.nonfinite_step

    return model, run


def test_quadruped_standing_under_pd_as_in_mujoco(ref, solo):
    """Solo-12, PD toward the standing posture, dropped from 1 cm, 2 s at 1 ms."""
    model, run = solo
    q, f, _, bad = (np.asarray(x) for x in run(model, jnp.asarray(ref["solo12_qpos0"]), DT, 0.02))
    assert int(bad) == -1
    weight = float(ref["solo12_weight"])
    qm = ref["solo12_qpos_final"]
    fm = ref["solo12_normal_force"]
    # total normal force: the weight once settled (both still creep, so not to round-off)
    assert abs(f[-1, 2] / weight - 1) < 1e-4, f[-1]
    assert abs(fm[-1] / weight - 1) < 1e-4
    assert abs(f[-1, 2] / fm[-1] - 1) < 1e-3
    t_jd, t_mj = _settle_time(f[:, 2] / weight, 1e-2), float(ref["solo12_settle_time_force"])
    assert abs(t_jd - t_mj) < 0.1, (t_jd, t_mj)
    # still creeping toward the frictionless equilibrium (below), at each law's own rate
    z_eq = ref["solo12_frictionless_qpos_final"][2]
    assert z_eq < q[-1, 2] < q[1000, 2] and z_eq < qm[2]
    assert abs(q[-1, 2] - qm[2]) < 3e-3, (q[-1, 2], qm[2])
    np.testing.assert_allclose(q[-1, 7:], qm[7:], atol=2e-2)
    np.testing.assert_allclose(q[-1, :2], qm[:2], atol=1e-5)  # symmetric: no drift
    assert _tilt(q[-1, 3:7]) < 1e-6


def test_quadruped_frictionless_equilibrium_as_in_mujoco(ref, solo):
    """Without friction (mu = 0; MuJoCo condim 1) the feet slide until the ground forces are
    vertical: a static PD equilibrium that depends on the penetration (equal in both here) but
    not on the friction law. 4 s at h = 2 ms (the equilibrium is a fixed point of the step for
    any h). Measured: base height 217.20691 mm in both (difference 5e-9 m), joints to 6e-8 rad."""
    model, run = solo
    frictionless = eqx.tree_at(lambda m: m.geoms.friction, model, jnp.zeros_like(model.geoms.friction))
    q, f, _, bad = (np.asarray(x) for x in run(frictionless, jnp.asarray(ref["solo12_qpos0"]), 2e-3, 0.02))
    assert int(bad) == -1
    qm = ref["solo12_frictionless_qpos_final"]
    assert abs(q[-1, 2] - qm[2]) < 1e-7, (q[-1, 2], qm[2])  # measured 5e-9 m
    np.testing.assert_allclose(q[-1, 7:], qm[7:], atol=1e-6)  # measured 6e-8 rad
    np.testing.assert_allclose(f[-1], [0, 0, float(ref["solo12_weight"])], rtol=1e-6, atol=1e-6)


def test_quadruped_standing_stays_bounded_at_5_ms(ref, solo):
    """``"implicit_euler"`` at h = 5 ms (the PD explicit at 5 ms too), 10 s, with the friction
    regularisation scaled to the step (``eps = 0.1 m/s ~ 2 h mu g``, docs/contact.md): finite,
    standing (base height within 1 cm of the 1 ms run's), the feet no deeper than 1.5 mm, the
    normal force at the weight. With the default ``eps = 0.02 m/s`` the robot sinks into the
    ground at 5 ms (docs/contact.md, "Time steps")."""
    model, run = solo
    q, f, d, bad = (np.asarray(x) for x in run(model, jnp.asarray(ref["solo12_qpos0"]), 5e-3, 0.1))
    assert int(bad) == -1
    z_eq = ref["solo12_frictionless_qpos_final"][2]
    assert np.all(q[200:, 2] > z_eq - 1e-3) and np.all(q[:, 2] <= q[0, 2] + 1e-9)
    assert d.max() < 1.5e-3
    assert abs(f[-1, 2] / float(ref["solo12_weight"]) - 1) < 1e-3


def test_quadruped_dropped_from_10_cm_lands_and_stands_at_5_ms(ref, solo):
    """``"implicit_euler"`` at h = 5 ms with the default ``ContactParams``, dropped from 10 cm
    above standing height (1.4 m/s at touch-down), 10 s: the feet land and hold the robot at the
    static Hunt-Crossley penetration ``(m g / 4 k)^(1/p)`` (0.335 mm), the normal force at the
    weight, the base standing above the frictionless PD equilibrium (docs/contact.md, "Time
    steps")."""
    model, run = solo
    q0 = jnp.asarray(ref["solo12_qpos0"]).at[2].add(0.09)
    q, f, d, bad = (np.asarray(x) for x in run(model, q0, 5e-3, 0.02))
    assert int(bad) == -1
    weight = float(ref["solo12_weight"])
    static = (weight / 4 / 1e6) ** (1 / 1.5)
    last = slice(-200, None)  # the last second
    assert np.all(np.abs(d[last] / static - 1) < 0.05), (d[last].min(), d[last].max(), static)
    assert d.max() < 1e-2  # the deepest: the first step after touch-down, 1.4 m/s x 5 ms
    assert np.all(np.abs(f[last, 2] / weight - 1) < 1e-2), (f[last, 2].min() / weight, f[last, 2].max() / weight)
    z_eq = ref["solo12_frictionless_qpos_final"][2]
    assert np.all(q[last, 2] > z_eq) and np.all(q[last, 2] < q0[2] - 0.09 + 0.01)
    assert _tilt(q[-1, 3:7]) < 1e-3


@pytest.mark.parametrize("position", ["explicit", "implicit"])
def test_quadruped_end_of_step_penetration_at_coarse_steps(ref, solo, position):
    """``SimOptions(contact_position=...)`` on the quadruped, default ``ContactParams``: dropped
    from 10 cm at 5 ms, the start-of-step penetration lets the first step after touch-down go
    6.7 mm deep (1.4 m/s x 5 ms), the end-of-step penetration (J3) catches it within the step
    (measured 0.77 mm); standing at 10 ms, the first goes non-finite (after 34 steps, measured)
    and the second stands, with the feet at the static penetration and the force at the
    weight."""
    model, _ = solo
    kp, kd, q_ref = float(ref["kp"]), float(ref["kd"]), jnp.asarray(ref["q_stand"])
    options = sim.SimOptions(contact_position=position)

    @jax.jit
    def run(q0, dt):
        ct = C.Contact(C.Ground.from_model(model))
        pd = lambda q, qd, t: jnp.concatenate([jnp.zeros(6), kp * (q_ref - q[7:]) - kd * qd[6:]])  # noqa: E731
        tr = sim.rollout(model, q0, jnp.zeros(model.nv), pd, dt, steps=200, contact=ct, options=options)
        d = jax.vmap(lambda q: jnp.max(C.contact_points(model, q, jnp.zeros(model.nv), ct.ground).depth))(tr.q)
        return d, C.total_force(model, tr.q[-1], tr.qd[-1], ct)[2], tr.nonfinite_step

    q_stand = jnp.asarray(ref["solo12_qpos0"])
    weight = float(ref["solo12_weight"])
    static = (weight / 4 / 1e6) ** (1 / 1.5)
    d, _, bad = (np.asarray(x) for x in run(q_stand.at[2].add(0.09), 5e-3))
    assert int(bad) == -1
    if position == "implicit":
        assert d.max() < 1e-3, d.max()
    else:
        assert d.max() > 5e-3, d.max()
    d, f, bad = (np.asarray(x) for x in run(q_stand, 1e-2))
    if position == "implicit":
        assert int(bad) == -1
        assert abs(d[-1] / static - 1) < 0.05 and abs(f / weight - 1) < 1e-2, (d[-1], static, f / weight)
    else:
        assert int(bad) >= 0
