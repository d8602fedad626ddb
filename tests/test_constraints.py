"""Closed loops and couplings (jaxdyn.constraints) against MuJoCo 4.0 and Pinocchio 4.1
(tests/reference/generate_mujoco_constraints.py): MuJoCo's soft equality constraints (qacc and
efc_force at random states, 1 s Euler rollouts), Pinocchio's hard constraintDynamics (joint
accelerations and contact forces, with and without Baumgarte gains); the O(N) constraint-space
operator against the dense one; gradients against finite differences; bad input named."""

import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.test_util import check_grads

import jaxdyn
from jaxdyn import constraints as C
from jaxdyn import sim
from jaxdyn.algorithms.kinematics import forward_kinematics
from jaxdyn.io.mjcf import MJCFError

HERE = os.path.dirname(__file__)
REF = np.load(os.path.join(HERE, "data", "mujoco", "constraints", "reference.npz"))
MODELS = os.path.join(HERE, "data", "mjcf", "constraints")
OPTS = sim.SimOptions(friction=False, joint_limits=False)  # MuJoCo's limits are constraints


def _load(name):
    return jaxdyn.load_mjcf(os.path.join(MODELS, f"{name}.xml"))


def _smooth(m, q, v):
    """The acceleration of every force but the equality constraints (MuJoCo's qacc_smooth)."""
    return sim.forward_dynamics(
        m.replace(constraints=m.constraints.tendons_only()), q, v, jnp.zeros(m.nv), options=OPTS
    )


@pytest.mark.parametrize("name", ["fourbar", "gripper", "leg", "weld", "tendons"])
def test_soft_constraints_match_mujoco(name):
    m = _load(name)
    fd = jax.jit(jax.vmap(lambda q, v: sim.forward_dynamics(m, q, v, jnp.zeros(m.nv), options=OPTS)))
    sol = jax.jit(jax.vmap(lambda q, v: C.solve(m, q, v, _smooth(m, q, v))))
    q, v = jnp.asarray(REF[f"{name}_qpos"]), jnp.asarray(REF[f"{name}_qvel"])
    qacc, force, pos = REF[f"{name}_qacc"], REF[f"{name}_force"], REF[f"{name}_pos"]
    np.testing.assert_allclose(np.asarray(fd(q, v)), qacc, rtol=0, atol=1e-10 * np.abs(qacc).max())
    s = sol(q, v)
    np.testing.assert_allclose(np.asarray(s.force), force, rtol=0, atol=1e-10 * np.abs(force).max())
    np.testing.assert_allclose(np.asarray(s.rows.r), pos, rtol=0, atol=1e-12)
    assert np.abs(force).max() > 1e-2  # the constraints carry load


@pytest.mark.parametrize("name, tag", [("leg", ""), ("leg", "_baumgarte"), ("fourbar", "")])
def test_hard_constraints_match_pinocchio(name, tag):
    """Pinocchio's contact force is in the constraint frame on body 1 (LOCAL): ``R1^T f``. The
    planar four-bar's connect has a redundant (out-of-plane) row: the hard solve reports it
    singular and, with proximal iterations, gives Pinocchio's proximal accelerations and forces."""
    m = _load(name)
    gains = tuple(float(x) for x in REF["baumgarte"]) if tag else (0.0, 0.0)
    prox = 1e-10 if name == "fourbar" else 0.0

    def one(q, v):
        a0 = jaxdyn.aba(m, q, v, jnp.zeros(m.nv))
        s = C.solve(m, q, v, a0, "hard", baumgarte=gains, prox=prox, prox_iterations=50)
        R1 = forward_kinematics(m, q).R[m.constraints.body1[0]]
        return s.qdd, R1.T @ s.force, s.singular

    qs, vs = jnp.asarray(REF[f"{name}_qpos"]), jnp.asarray(REF[f"{name}_qvel"])
    qdd, lam, singular = jax.jit(jax.vmap(one))(qs, vs)
    # the rank test is XLA operations (jaxdyn.linalg.min_pivot): no library kernel, which can
    # deadlock XLA's CPU thread pool in a batched program
    assert "custom_call" not in jax.jit(jax.vmap(one)).lower(qs, vs).as_text()
    ref_qdd, ref_lam = REF[f"{name}_pin_qdd{tag}"], REF[f"{name}_pin_lambda{tag}"]
    np.testing.assert_allclose(np.asarray(qdd), ref_qdd, rtol=0, atol=1e-10 * np.abs(ref_qdd).max())
    np.testing.assert_allclose(np.asarray(lam), ref_lam, rtol=0, atol=1e-8 * np.abs(ref_lam).max())
    assert np.all(np.asarray(singular)) if name == "fourbar" else not np.any(np.asarray(singular))


def test_hard_solve_closes_the_loop_and_inverse_dynamics_recovers_the_force():
    m = _load("leg")
    q, v = jnp.asarray(REF["leg_qpos"][0]), jnp.asarray(REF["leg_qvel"][0])
    tau = jnp.array([0.3, -0.2, 0.1, 0.0, 0.05])
    s = C.constrained_aba(m, q, v, tau, mode="hard")
    gamma = jax.jvp(lambda q_: C.rows(m, q_).J @ v, (q,), (v,))[1]  # hinges only: dq/dt = v
    np.testing.assert_allclose(np.asarray(s.rows.J @ s.qdd + gamma), 0.0, atol=1e-10)
    tau_c, f = C.constrained_inverse_dynamics(m, q, v, s.qdd, tau_free=tau)
    np.testing.assert_allclose(np.asarray(f), np.asarray(s.force), rtol=1e-9)
    np.testing.assert_allclose(np.asarray(tau_c), np.asarray(tau), atol=1e-9)


def test_rollout_steps_match_mujoco_euler():
    """The first 25 steps of MuJoCo's Euler rollout (implicit joint damping, the constraint force
    from the smooth acceleration); tests/test_constraints.py::test_one_second_rollouts_match_mujoco
    runs the full second of each model in the slow set."""
    m = _load("fourbar")
    qr, vr, dt = REF["fourbar_rollout_q"], REF["fourbar_rollout_qd"], float(REF["fourbar_dt"])
    tr = jax.jit(lambda q0, v0: sim.rollout(m, q0, v0, jnp.zeros((25, m.nv)), dt, options=OPTS))(
        jnp.asarray(qr[0]), jnp.asarray(vr[0])
    )
    np.testing.assert_allclose(np.asarray(tr.q), qr[:26], rtol=0, atol=1e-12)
    np.testing.assert_allclose(np.asarray(tr.qd), vr[:26], rtol=0, atol=1e-10)


@pytest.mark.parametrize("name", ["fourbar", "gripper", "leg"])
def test_one_second_rollouts_match_mujoco(name):
    m = _load(name)
    qr, vr, dt = REF[f"{name}_rollout_q"], REF[f"{name}_rollout_qd"], float(REF[f"{name}_dt"])
    steps = int(REF["steps"])
    tr = jax.jit(lambda q0, v0: sim.rollout(m, q0, v0, jnp.zeros((steps, m.nv)), dt, options=OPTS))(
        jnp.asarray(qr[0]), jnp.asarray(vr[0])
    )
    # measured: 5e-16 in q and 4e-14 in qd over the 500 steps
    np.testing.assert_allclose(np.asarray(tr.q), qr, rtol=0, atol=1e-10)
    np.testing.assert_allclose(np.asarray(tr.qd), vr, rtol=0, atol=1e-8)


def test_delassus_by_innovations_equals_dense_and_wrenches_equal_torques():
    m = _load("weld")
    q = jnp.asarray(REF["weld_qpos"][1])
    J = C.rows(m, q).J
    A = C.delassus(m, q, J)
    np.testing.assert_allclose(np.asarray(A), np.asarray(C.delassus(m, q, J, "dense")), rtol=1e-10, atol=1e-12)
    tau = jnp.asarray(np.random.default_rng(0).standard_normal(m.nv))
    v = jnp.asarray(REF["weld_qvel"][1])
    fe = C.joint_force_wrenches(m, q, tau)
    np.testing.assert_allclose(
        np.asarray(jaxdyn.aba(m, q, v, jnp.zeros(m.nv), fe)), np.asarray(jaxdyn.aba(m, q, v, tau)), atol=1e-10
    )


def test_loop_made_in_code_equals_the_mjcf_one():
    m = _load("leg")
    tree = m.replace(constraints=None)
    made = C.add(tree, C.connect(tree, "rod", "shank", anchor1=(0, 0, -0.42), q=_qpos0(m), name="pushrod"), q=_qpos0(m))
    q, v = jnp.asarray(REF["leg_qpos"][2]), jnp.asarray(REF["leg_qvel"][2])
    a = sim.forward_dynamics(m, q, v, jnp.zeros(m.nv), options=OPTS)
    b = sim.forward_dynamics(made, q, v, jnp.zeros(m.nv), options=OPTS)
    np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=1e-10, atol=1e-10)
    off = made.replace(constraints=made.constraints.with_active("pushrod", False))
    np.testing.assert_allclose(
        np.asarray(sim.forward_dynamics(off, q, v, jnp.zeros(m.nv), options=OPTS)),
        np.asarray(sim.forward_dynamics(tree, q, v, jnp.zeros(m.nv), options=OPTS)),
        atol=1e-12,
    )


def _qpos0(m):
    q = np.zeros(m.nq)
    q[m.joint_q_slice("knee")] = np.deg2rad(20.0)  # the knee's ref (degrees in MJCF)
    return jnp.asarray(q)


def test_batched_and_differentiable():
    m = _load("fourbar")
    q, v = jnp.asarray(REF["fourbar_qpos"]), jnp.asarray(REF["fourbar_qvel"])
    # every function jitted: check_grads evaluates op by op otherwise
    f = jax.jit(lambda q, v: sim.forward_dynamics(m, q, v, jnp.zeros(m.nv), options=OPTS))
    batched = jax.jit(jax.vmap(f))(q, v)
    for k in range(2):
        np.testing.assert_allclose(np.asarray(batched[k]), np.asarray(f(q[k], v[k])), rtol=1e-12)
    hard = lambda q, v: C.constrained_aba(m, q, v, jnp.zeros(m.nv), mode="hard", prox=1e-6).qdd
    # the soft solve's impedance is saturated here (|r| > width): a smooth function of the state
    check_grads(f, (q[1], v[1]), order=1, modes=("fwd", "rev"), eps=1e-6, atol=1e-5, rtol=1e-5)
    leg = _load("leg")
    vl = jnp.asarray(REF["leg_qvel"][0])
    force = jax.jit(lambda q: C.solve(leg, q, vl, _smooth(leg, q, vl)).force)
    check_grads(force, (jnp.asarray(REF["leg_qpos"][0]),), order=1, modes=("rev",), eps=1e-6, atol=1e-5, rtol=1e-5)
    assert np.all(np.isfinite(np.asarray(jax.jit(jax.grad(lambda q: hard(q, v[1]).sum()))(q[1]))))


def test_gradient_of_a_rollout_against_finite_differences():
    m = _load("gripper")
    dt = 0.002
    q0, v0 = jnp.asarray(REF["gripper_qpos"][0]), jnp.asarray(REF["gripper_qvel"][0])

    def final(scale):
        tr = sim.rollout(m, q0, scale * v0, jnp.zeros((10, m.nv)), dt, options=OPTS)
        return tr.q[-1, 1]

    g = float(jax.jit(jax.grad(final))(1.0))
    h = 1e-5
    final = jax.jit(final)
    fd = (float(final(1.0 + h)) - float(final(1.0 - h))) / (2 * h)
    assert abs(g - fd) <= 1e-6 * max(1.0, abs(fd)) and abs(fd) > 1e-5


def test_singular_hard_system_is_reported():
    """The planar four-bar's connect has a row that never moves (out of the plane): the soft
    solve is regular (R > 0), the hard one is rank deficient, reported by name, and the
    proximal iterations give finite accelerations."""
    m = _load("fourbar")
    q, v = jnp.asarray(REF["fourbar_qpos"][0]), jnp.asarray(REF["fourbar_qvel"][0])
    with pytest.raises(ValueError, match="'equality0' are redundant or singular"):
        C.check(m, q)
    s = C.constrained_aba(m, q, v, jnp.zeros(m.nv), mode="hard")
    assert bool(s.singular)
    p = C.constrained_aba(m, q, v, jnp.zeros(m.nv), mode="hard", prox=1e-8)
    assert np.all(np.isfinite(np.asarray(p.qdd)))
    gamma = jax.jvp(lambda q_: C.rows(m, q_).J @ v, (q,), (v,))[1]
    np.testing.assert_allclose(np.asarray(p.rows.J @ p.qdd), np.asarray(-gamma), atol=1e-6)


BAD = [
    ('<equality><connect body1="nobody" body2="b" anchor="0 0 0"/></equality>', "body 'nobody' does not exist"),
    ('<equality><joint joint1="j" joint2="nojoint"/></equality>', "joint 'nojoint' does not exist"),
    ('<equality><connect site1="s1" site2="s2"/></equality>', "site 's1' does not exist"),
    ('<equality><tendon tendon1="t"/></equality>', "tendon 't' does not exist"),
    ('<equality><flex flex="f"/></equality>', "flex equality constraints are not supported"),
    ('<tendon><fixed name="t" frictionloss="1"><joint joint="j"/></fixed></tendon>', "tendon frictionloss"),
    ('<tendon><fixed name="t"><joint joint="nojoint"/></fixed></tendon>', "joint 'nojoint' does not exist"),
]


@pytest.mark.parametrize("extra, message", BAD)
def test_bad_constraints_are_named(extra, message):
    xml = (
        '<mujoco><worldbody><body name="b"><joint name="j" axis="0 1 0"/><geom size="0.1"/></body>'
        f"</worldbody>{extra}</mujoco>"
    )
    with pytest.raises(MJCFError, match=message):
        jaxdyn.load_mjcf(xml)


def test_code_made_constraints_name_bad_input():
    m = _load("leg").replace(constraints=None)
    with pytest.raises(KeyError, match="no body named 'foot'"):
        C.connect(m, "foot", "shank")
    with pytest.raises(KeyError, match="no joint named 'ankle'"):
        C.couple(m, "knee", "ankle")
    with pytest.raises(ValueError, match="already has a constraint"):
        C.add(m, C.couple(m, "knee", "hip_y", name="c"), C.couple(m, "knee", "hip_x", name="c"))


def _urdf(leader="f1"):
    link = '<link name="{0}"><inertial><mass value="{1}"/><inertia ixx="1e-4" iyy="1e-4" izz="1e-4" ixy="0" ixz="0" iyz="0"/></inertial></link>'
    return f"""<robot name="hand">{link.format("base", 1.0)}{link.format("l", 0.05)}{link.format("r", 0.08)}
      <joint name="f1" type="prismatic"><parent link="base"/><child link="l"/><axis xyz="0 1 0"/>
        <limit lower="0" upper="0.04" effort="20" velocity="0.2"/></joint>
      <joint name="f2" type="prismatic"><parent link="base"/><child link="r"/><axis xyz="0 -1 0"/>
        <limit lower="0" upper="0.04" effort="20" velocity="0.2"/><mimic joint="{leader}" multiplier="2" offset="0.01"/></joint>
    </robot>"""


def test_urdf_mimic_coupled():
    free = jaxdyn.load_urdf(_urdf())
    assert free.constraints is None
    m = jaxdyn.load_urdf(_urdf(), mimic="coupled")
    assert m.constraints.names == ("mimic:f2",) and m.nq == 2
    q, v, tau = jnp.array([0.01, 0.03]), jnp.array([0.1, 0.2]), jnp.array([1.0, 0.0])
    hard = sim.SimOptions(constraints="hard", friction=False, joint_limits=False)
    qdd = jax.jit(lambda q, v: sim.forward_dynamics(m, q, v, tau, options=hard))(q, v)
    np.testing.assert_allclose(float(qdd[1]), 2 * float(qdd[0]), rtol=1e-12)
    # the residual q2 - 0.01 - 2 q1 = 0 at q, so with Baumgarte gains the coupling holds exactly
    q0 = jnp.array([0.01, 0.03])
    tr = jax.jit(lambda q0: sim.rollout(m, q0, jnp.zeros(2), jnp.tile(tau, (20, 1)), 1e-3, options=hard))(q0)
    np.testing.assert_allclose(np.asarray(tr.q[:, 1]), 0.01 + 2 * np.asarray(tr.q[:, 0]), atol=1e-6)
    with pytest.raises(jaxdyn.io.urdf.URDFError, match="joint .nope. is not defined"):
        jaxdyn.load_urdf(_urdf("nope"), mimic="coupled")


def test_coupling_gradients_quick():
    """The cheap counterpart of the slow gradient tests: the joint coupling of the mimic hand
    (no body kinematics), soft and hard, against finite differences."""
    m = jaxdyn.load_urdf(_urdf(), mimic="coupled")
    v = jnp.array([0.1, 0.2])
    soft = jax.jit(lambda q: C.constrained_aba(m, q, v, jnp.array([1.0, 0.0])).qdd)
    hard = jax.jit(lambda q: C.constrained_aba(m, q, v, jnp.array([1.0, 0.0]), mode="hard", baumgarte=(10.0, 1.0)).qdd)
    q = jnp.array([0.01, 0.0303])  # inside solimp's width: the impedance varies with q
    check_grads(soft, (q,), order=1, modes=("fwd", "rev"), eps=1e-7, atol=1e-6, rtol=1e-6)
    check_grads(hard, (q,), order=1, modes=("rev",), eps=1e-7, atol=1e-6, rtol=1e-6)


def test_float32_matches_mujoco_to_its_precision():
    m = jaxdyn.load_mjcf(os.path.join(MODELS, "fourbar.xml"), dtype=jnp.float32)
    q, v = jnp.asarray(REF["fourbar_qpos"], jnp.float32), jnp.asarray(REF["fourbar_qvel"], jnp.float32)
    f = jax.jit(jax.vmap(lambda q, v: sim.forward_dynamics(m, q, v, jnp.zeros(m.nv, jnp.float32), options=OPTS)))
    out, ref = np.asarray(f(q, v)), REF["fourbar_qacc"]
    assert out.dtype == np.float32
    # measured: 5e-6 of the largest acceleration
    np.testing.assert_allclose(out, ref, rtol=0, atol=1e-4 * np.abs(ref).max())
