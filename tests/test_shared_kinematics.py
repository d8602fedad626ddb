"""The shared kinematics record (``jaxdyn.kinematics``): the algorithms given one return what they
compute without it, batched and differentiated, and the simulation step runs one forward
kinematics where it ran one per algorithm.

References: the same algorithms without the record (checked against Pinocchio in
tests/test_pinocchio_reference.py); the world poses of :func:`jaxdyn.forward_kinematics` and the
world Jacobian columns of :func:`jaxdyn.algorithms.kinematics.dof_motions_world` as they were
computed before the record existed (a scatter of the joint placements)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import assert_close, state, zoo

import jaxdyn
from jaxdyn import contact, sim
from jaxdyn.algorithms import aba as aba_mod
from jaxdyn.algorithms import common
from jaxdyn.algorithms import kinematics as kin_mod
from jaxdyn.algorithms import rnea as rnea_mod

CASES = ("chain_mixed", "tree_mixed_float")
LEG = """<mujoco><option timestep="0.005"/><worldbody><geom type="plane" size="5 5 .1"/>
  <body name="torso" pos="0 0 .3"><freejoint/><geom type="sphere" size=".1" mass="2"/>
    <body name="leg" pos="0 0 -.1"><joint name="hip" type="hinge" axis="0 1 0"/>
      <geom type="capsule" fromto="0 0 0 0 0 -.15" size=".03" mass=".3"/></body></body>
</worldbody></mujoco>"""


def _all(model, q, qd, qdd, tau, kin):
    return (
        jaxdyn.aba(model, q, qd, tau, kinematics=kin),
        jaxdyn.rnea(model, q, qd, qdd, kinematics=kin),
        jaxdyn.crba(model, q, kinematics=kin),
    )


@pytest.mark.parametrize("name", CASES)
def test_record_is_the_scatter_of_the_joint_placements(name):
    model = zoo(name)
    q, *_ = state(model, 1)
    kin = jax.jit(jaxdyn.kinematics)(model, q)
    jd = common.joint_data(model, q)
    # the world poses by an independent loop over the bodies in topological order
    R, p = [None] * model.nb, [None] * model.nb
    lay = model.layout
    if lay.floating:
        R[0], p[0] = np.asarray(jd.X_root.R), np.asarray(jd.X_root.p)
    for i, b in enumerate(lay.link_bodies):
        par = model.parents[b]
        Ri, pi = np.asarray(jd.X.R[i]), np.asarray(jd.X.p[i])
        R[b], p[b] = (Ri, pi) if par < 0 else (R[par] @ Ri, R[par] @ pi + p[par])
    assert_close(kin.poses.R, np.stack(R), 1e-12)
    assert_close(kin.poses.p, np.stack(p), 1e-12)
    # a dof's world motion: the velocity of its body under qd = e_d (RNEA's velocity scatter),
    # moved to world axes about the world origin
    b = lay.dof_body
    V = jax.jit(jax.vmap(lambda e: jaxdyn.body_velocities(model, q, e)))(jnp.eye(model.nv))  # (nv, nb, 6)
    Vd = np.asarray(V)[np.arange(model.nv), b]  # (nv, 6): each dof's own body
    Rb, pb = np.stack(R)[b], np.stack(p)[b]
    w = np.einsum("dij,dj->di", Rb, Vd[:, :3])
    v = np.einsum("dij,dj->di", Rb, Vd[:, 3:]) - np.cross(w, pb)
    assert_close(kin.dofs, np.concatenate([w, v], 1).T, 1e-12)


@pytest.mark.parametrize("name", CASES)
def test_record_velocities_are_the_rnea_sweep(name):
    """Built with ``qd``, the record's body velocities are those of RNEA's outward sweep, and
    :func:`jaxdyn.body_velocities` given it returns them."""
    model = zoo(name)
    q, qd, *_ = state(model, 6)

    @jax.jit
    def both(q, qd):
        kin = jaxdyn.kinematics(model, q, qd)
        return kin.velocities, jaxdyn.body_velocities(model, q, qd), jaxdyn.body_velocities(model, q, qd, kin)

    rec, rnea_v, given = both(q, qd)
    assert_close(rec, rnea_v, 1e-12)
    assert_close(given, rnea_v, 1e-12)
    assert jaxdyn.kinematics(model, q).velocities is None


@pytest.mark.parametrize("name", CASES)
def test_algorithms_given_the_record_are_unchanged(name):
    model = zoo(name)
    q, qd, qdd, tau = state(model, 2)

    @jax.jit
    def both(q, qd, qdd, tau):
        return _all(model, q, qd, qdd, tau, jaxdyn.kinematics(model, q)), _all(model, q, qd, qdd, tau, None)

    with_kin, without = both(q, qd, qdd, tau)
    for a, b in zip(with_kin, without):
        assert_close(a, b, 1e-12)


@pytest.mark.parametrize("batch", ["kernel", "vmap"])
def test_batched_with_the_record_under_either_executor(batch, monkeypatch):
    """Under ``vmap`` the batch kernels run their own kinematics (the record is dropped); the
    one-sample algorithms take it."""
    from jaxdyn import planner

    monkeypatch.setattr(planner, "CPU_KERNEL_MIN_BATCH", 1)
    model = zoo("chain_mixed_float")
    keys = jax.random.split(jax.random.PRNGKey(3), 4)
    Q = jax.vmap(lambda k: jaxdyn.random_configuration(model, k))(keys)
    QD = jax.random.normal(keys[0], (4, model.nv))
    T = jax.random.normal(keys[1], (4, model.nv))

    def with_kin(q, qd, t):
        return _all(model, q, qd, t, t, jaxdyn.kinematics(model, q))

    with jaxdyn.executor(batch=batch):
        got = jax.jit(jax.vmap(with_kin))(Q, QD, T)
    want = jax.jit(jax.vmap(lambda q, qd, t: _all(model, q, qd, t, t, None)))(Q, QD, T)
    for a, b in zip(got, want):
        assert_close(a, b, 1e-11)


def test_derivatives_pass_through_the_record():
    """A record built inside the differentiated function carries the configuration's and the
    model's tangents: ``grad`` w.r.t. ``q`` and the model, and a ``jvp`` along ``q``, equal those
    without it."""
    model = zoo("chain_mixed_float")
    q, qd, qdd, tau = state(model, 4)
    dq = jax.random.normal(jax.random.PRNGKey(5), (model.nq,))

    def loss(model, q, shared):
        kin = jaxdyn.kinematics(model, q) if shared else None
        a, t, M = _all(model, q, qd, qdd, tau, kin)
        return jnp.sum(jnp.sin(a)) + jnp.sum(t * t) + jnp.sum(M * M)

    @jax.jit
    def derivatives(model, q):
        out = []
        for shared in (True, False):
            gm, gq = jax.grad(loss, argnums=(0, 1))(model, q, shared)
            tangent = jax.jvp(lambda q_: loss(model, q_, shared), (q,), (dq,))[1]
            out.append((gq, tangent, gm.inertia, gm.placement_p))
        return out

    (a, b) = derivatives(model, q)
    for x, y in zip(a, b):
        assert_close(x, y, 1e-10)


def test_a_wrong_record_names_the_argument():
    model = zoo("chain_mixed")
    other = zoo("tree_mixed_float")
    q, qd, _, tau = state(model)
    with pytest.raises(ValueError, match="argument 'kinematics'.*another model"):
        jaxdyn.aba(model, q, qd, tau, kinematics=jaxdyn.kinematics(other, state(other)[0]))
    kin = jaxdyn.kinematics(model, q)
    with pytest.raises(ValueError, match="argument 'kinematics' has velocities"):
        jaxdyn.rnea(model, q, qd, tau, kinematics=kin._replace(velocities=jnp.zeros((model.nb + 1, 6))))
    with pytest.raises(TypeError, match="argument 'kinematics' must be a jaxdyn.Kinematics"):
        jaxdyn.crba(model, q, kinematics=common.joint_data(model, q))


def test_the_contact_step_runs_one_forward_kinematics(monkeypatch):
    """The implicit contact step shares one record among the contacts, the CRBA and the RNEA:
    the joint data is built once per traced step (it was built eight times)."""
    model = jaxdyn.load_mjcf(LEG)
    ct = contact.Contact(ground=contact.Ground.from_model(model))
    calls = []
    real = common.joint_data

    def counted(*args):
        calls.append(1)
        return real(*args)

    for mod in (kin_mod, aba_mod, rnea_mod):
        monkeypatch.setattr(mod, "joint_data", counted)
    q0 = jaxdyn.neutral(model).at[2].set(0.2)
    step = jax.jit(lambda q, qd: sim.step(model, q, qd, jnp.zeros(model.nv), 0.005, contact=ct)[:2])
    q1, qd1 = step(q0, jnp.zeros(model.nv))
    assert len(calls) == 1
    # the leg starts 5 cm into the floor: the contact pushes the body up
    assert np.all(np.isfinite(np.asarray(qd1))) and float(qd1[5]) > 0.0


def test_contact_given_the_record_is_unchanged():
    """The contact's wrenches (which read the body velocities) and joint-space rows computed
    with a record equal those computed without, for a leg 5 cm into the floor, moving."""
    model = jaxdyn.load_mjcf(LEG)
    ct = contact.Contact(ground=contact.Ground.from_model(model))
    q = jaxdyn.neutral(model).at[2].set(0.2)
    qd = jnp.array([0.3, -0.2, 0.5, 0.1, 0.2, -0.4, 1.5])

    @jax.jit
    def both(q, qd):
        kin = jaxdyn.kinematics(model, q, qd)
        js = ct.joint_space(model, q, kinematics=kin)
        js0 = ct.joint_space(model, q)
        return ct.wrenches(model, q, qd, kinematics=kin), ct.wrenches(model, q, qd), js.forces(qd), js0.forces(qd)

    w, w0, f, f0 = both(q, qd)
    assert float(jnp.max(jnp.abs(w0))) > 1.0  # the floor pushes
    assert_close(w, w0, 1e-12)
    assert_close(f, f0, 1e-12)
