"""The helical (screw) joint: Pinocchio 4.1's values on a small tree (stored by
tests/reference/generate_pinocchio_helical.py), the identities between algorithms in float64 and
float32, the batch kernels, the configuration space, gradients and the refusals."""

import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import aba, assert_close, crba, kinetic, rnea, state
from jax.test_util import check_grads

import jaxdyn
from jaxdyn import builders, joints, kernels, reference
from jaxdyn.io.urdf import URDFError
from jaxdyn.io.urdf_write import model_to_urdf

DATA = os.path.join(os.path.dirname(__file__), "data", "pinocchio", "helical_tree.npz")
KIND_NAMES = ("revolute", "prismatic", "helical")


def _pinocchio_tree(dtype=jnp.float64):
    d = np.load(DATA)
    n = len(d["parents"])
    topo = jaxdyn.Topology(
        tuple(int(p) for p in d["parents"]),
        tuple(KIND_NAMES[int(k)] for k in d["kinds"]),
        tuple(f"joint{i}" for i in range(n)),
        tuple(f"link{i}" for i in range(n)),
    )
    model = jaxdyn.make_model(
        topo,
        placement_R=d["placement_R"],
        placement_p=d["placement_p"],
        axis=d["axis"],
        mass=d["mass"],
        com=d["com"],
        inertia=d["inertia_com"],
        gravity=d["gravity"],
        joint_params={"pitch": d["pitch"]},
        dtype=dtype,
    )
    return model, d


def test_helical_tree_matches_pinocchio():
    model, d = _pinocchio_tree()
    assert model.joint_types.count("helical") == 3
    fk = jax.jit(jaxdyn.forward_kinematics)
    for k in range(len(d["q"])):
        q, v, a, tau = d["q"][k], d["v"][k], d["a"][k], d["tau"][k]
        assert_close(rnea(model, q, v, a), d["rnea"][k])
        assert_close(crba(model, q), d["crba"][k])
        assert_close(aba(model, q, v, tau), d["aba"][k], 1e-9)
        poses = fk(model, q)
        assert_close(poses.R, d["oMi_R"][k])
        assert_close(poses.p, d["oMi_p"][k])
        R, p, _, _ = reference.reference_kinematics(model, q)  # NumPy, no JAX program
        assert_close(R, d["oMi_R"][k], 1e-12)
        assert_close(p, d["oMi_p"][k], 1e-12)


def test_helical_tree_float32_matches_pinocchio():
    model, d = _pinocchio_tree(jnp.float32)
    q, v, a, tau = (jnp.asarray(d[x][0], jnp.float32) for x in ("q", "v", "a", "tau"))
    np.testing.assert_allclose(rnea(model, q, v, a), d["rnea"][0], rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(aba(model, q, v, tau), d["aba"][0], rtol=1e-3, atol=1e-3)


def _helical_models(dtype):
    types = ("helical", "revolute", "prismatic", "spherical", "helical")
    return (
        builders.chain(4, ("helical", "revolute", "helical", "prismatic"), seed=11, dtype=dtype),
        builders.random_tree(6, types, floating_base=True, seed=12, dtype=dtype),
    )


@pytest.mark.parametrize("dtype", [jnp.float64, jnp.float32])
def test_helical_identities(dtype):
    tol = 1e-10 if dtype == jnp.float64 else 2e-4
    # float64: the floating tree (helical, revolute, prismatic, spherical); float32: the chain
    for model in _helical_models(dtype)[1 if dtype == jnp.float64 else 0 :][:1]:
        assert "helical" in model.joint_types and np.any(np.asarray(model.joint_params["pitch"]) != 0)
        q, qd, qdd, _ = state(model)
        tau = rnea(model, q, qd, qdd)
        assert_close(aba(model, q, qd, tau), qdd, tol)  # aba inverts rnea
        M = np.asarray(crba(model, q), np.float64)
        assert_close(M, M.T, tol)
        assert np.linalg.eigvalsh(M).min() > 0
        assert_close(kinetic(model, q, qd), 0.5 * qd @ M.astype(qd.dtype) @ qd, tol)
        # regressor linearity: Y(q, qd, qdd) pi == rnea
        Y = jax.jit(jaxdyn.regressor)(model, q, qd, qdd)
        assert_close(Y @ jaxdyn.inertial_parameters(model).reshape(-1), tau, tol)


def test_helical_configuration_space():
    for model in _helical_models(jnp.float64):
        q, qd, _, _ = state(model)
        q1 = jaxdyn.integrate(model, q, qd, 0.3)
        assert_close(jaxdyn.difference(model, q, q1), 0.3 * qd)
        one_q, one_v = jaxdyn.configuration.one_dof_indices(model.topology)
        helical = [i for i, t in enumerate(model.joint_types) if joints.get(t) is joints.HELICAL]
        hq = [int(model.layout.q_start[i]) for i in helical]
        assert set(hq) <= set(one_q.tolist())
        assert_close(q1[np.array(hq)], q[np.array(hq)] + 0.3 * qd[model.layout.v_start[helical]])


def _batch(dtype=jnp.float64):
    model = _helical_models(dtype)[0]
    keys = jax.random.split(jax.random.PRNGKey(3), 5)
    Q = jax.vmap(lambda k: jaxdyn.random_configuration(model, k))(keys)
    V, T = jax.random.normal(keys[0], (2, 5, model.nv), dtype)
    return model, Q, V, T


@pytest.mark.parametrize("dtype", [jnp.float64, jnp.float32])
def test_helical_batched(dtype):
    model, Q, V, T = _batch(dtype)
    tol = 1e-10 if dtype == jnp.float64 else 1e-4
    one = jnp.stack([aba(model, Q[i], V[i], T[i]) for i in range(5)])
    batched = jax.jit(jax.vmap(jaxdyn.aba, in_axes=(None, 0, 0, 0)))(model, Q, V, T)  # the batching rule
    assert batched.dtype == dtype
    assert_close(batched, one, tol)
    if dtype == jnp.float64:
        assert_close(kernels.aba_batch(model, Q, V, T, traversal="unroll"), one)


def test_helical_kernels_scanned():
    model, Q, V, T = _batch()
    assert_close(kernels.aba_batch(model, Q, V, T, traversal="scan"), jax.vmap(aba, (None, 0, 0, 0))(model, Q, V, T))
    want = jax.vmap(rnea, (None, 0, 0, 0))(model, Q, V, T)
    for traversal in ("unroll", "scan"):
        assert_close(kernels.rnea_batch(model, Q, V, T, traversal=traversal), want)


def test_helical_pitch_gradient():
    model = _helical_models(jnp.float64)[0]
    q, qd, _, tau = state(model)

    def f(pitch):
        return jnp.sum(jaxdyn.aba(model.replace(joint_params={"pitch": pitch}), q, qd, tau) ** 2)

    pitch = model.joint_params["pitch"]
    g = jax.jit(jax.grad(f))(pitch)
    fj, eps = jax.jit(f), 1e-6
    e = jnp.zeros_like(pitch).at[0].set(eps)
    assert_close(g[0], (fj(pitch + e) - fj(pitch - e)) / (2 * eps), 1e-6)


def test_helical_gradients():
    model = _helical_models(jnp.float64)[0]
    q, qd, _, tau = state(model)
    check_grads(jax.jit(lambda q: jaxdyn.aba(model, q, qd, tau)), (q,), order=1, modes=("fwd", "rev"))

    def of_pitch(pitch):
        return jaxdyn.aba(model.replace(joint_params={"pitch": pitch}), q, qd, tau)

    check_grads(jax.jit(of_pitch), (model.joint_params["pitch"],), order=1, modes=("fwd", "rev"))


def test_helical_zero_pitch_is_revolute():
    model = builders.chain(3, "helical", seed=4, dtype=jnp.float64)
    rev = jaxdyn.make_model(
        jaxdyn.Topology(model.parents, ("revolute",) * 3, model.joint_names, model.body_names),
        **{f: getattr(model, f) for f in ("placement_R", "placement_p", "axis", "mass", "com", "inertia")},
    )
    q, qd, _, tau = state(model)
    zero = model.replace(joint_params={"pitch": jnp.zeros(3)})
    assert_close(aba(zero, q, qd, tau), aba(rev, q, qd, tau))
    assert not np.allclose(aba(model, q, qd, tau), aba(rev, q, qd, tau))


def test_helical_refusals():
    model = builders.chain(2, "helical", seed=0, dtype=jnp.float64)
    with pytest.raises(URDFError, match="joint0.*helical"):
        model_to_urdf(model)
    with pytest.raises(ValueError, match="joint_params has 'pitch'"):
        jaxdyn.make_model(
            jaxdyn.Topology((-1,), ("revolute",), ("j",), ("b",)),
            placement_R=np.eye(3)[None],
            placement_p=np.zeros((1, 3)),
            axis=np.array([[0.0, 0.0, 1.0]]),
            mass=np.ones(1),
            com=np.zeros((1, 3)),
            inertia=np.eye(3)[None],
            joint_params={"pitch": np.ones(1)},
        )
    with pytest.raises(ValueError, match=r"joint_params\['pitch'\] must have shape \(2,\)"):
        model.replace(joint_params={"pitch": jnp.zeros(3)}).check()
    with pytest.raises(ValueError, match=r"joint_params must hold \['pitch'\]"):
        model.replace(joint_params={}).check()
    with pytest.raises(ValueError, match="unsupported joint type 'screw'"):
        jaxdyn.Topology((-1,), ("screw",), ("j",), ("b",))


def test_the_abstract_joint_type_and_space_name_what_a_subclass_must_define():
    """The registry's base classes (jaxdyn.joints.JointType, Space) hold the five abstract
    methods every registered type and space defines; a subclass that forgets one gets an error
    naming the class or type and the method."""
    stub, space = joints.JointType("stub", 1, 1), joints.Space()
    calls = {
        "transform": lambda: stub.transform({}, (0.0,)),
        "subspace": lambda: stub.subspace({}),
        "reference_motion": lambda: stub.reference_motion(np.eye(3)[0], {}, 0.0),
        "rotation_quaternion": lambda: stub.rotation_quaternion(np.eye(3)[0], {}, 0.0),
    }
    for what, call in calls.items():
        with pytest.raises(NotImplementedError, match=rf"stub: a JointType subclass must define {what}\("):
            call()
    with pytest.raises(NotImplementedError, match=r"Space: a Space subclass must define random\("):
        space.random(None, None, None, None, np.float64)
    for t in joints.JOINTS.values():  # every registered type and its space override them
        assert all(getattr(type(t), m) is not getattr(joints.JointType, m) for m in calls), t.name
        assert type(t.space).random is not joints.Space.random, t.name
