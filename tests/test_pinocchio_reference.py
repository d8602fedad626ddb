"""Every algorithm against stored Pinocchio values, all shipped robots, fixed and floating base."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import DEFAULT_EMITTERS
from pinocchio_ref import CASES, Ref, swap6

import jaxdyn
from jaxdyn import algorithms


def everything(m, q, v, a, tau, fext):
    """Every quantity compared with Pinocchio, for one state (vmapped and jitted once per model).
    The recursive algorithms are called as :mod:`jaxdyn.algorithms` defines them: under ``vmap``
    the public ``jaxdyn.aba``/``rnea``/``crba`` run the batch kernels instead, checked against
    Pinocchio by :func:`test_batched_public_api_matches_pinocchio`."""
    X = jaxdyn.forward_kinematics(m, q)
    F = jaxdyn.frame_placements(m, q)
    out = {
        "rnea": algorithms.rnea.rnea(m, q, v, a),
        "rnea_fext": algorithms.rnea.rnea(m, q, v, a, fext),
        "crba": algorithms.crba.crba(m, q),
        "aba": algorithms.aba.aba(m, q, v, tau),
        "aba_fext": algorithms.aba.aba(m, q, v, tau, fext),
        "nle": jaxdyn.bias_forces(m, q, v),
        "gravity_torque": jaxdyn.gravity_torques(m, q),
        "oMi_R": X.R,
        "oMi_p": X.p,
        "oMf_R": F.R,
        "oMf_p": F.p,
        "v_local": jaxdyn.body_velocities(m, q, v),
        "a_local": jaxdyn.body_accelerations(m, q, v, a),
        "kinetic_energy": jaxdyn.kinetic_energy(m, q, v),
        "potential_energy": jaxdyn.potential_energy(m, q),
        "com": jaxdyn.center_of_mass(m, q),
        "Jcom": jaxdyn.center_of_mass_jacobian(m, q),
        "hg": jaxdyn.centroidal_momentum(m, q, v),
        "q_next": jaxdyn.integrate(m, q, v, 0.1),
        "minv": jaxdyn.mass_matrix_inverse(m, q),
        "regressor": jaxdyn.regressor(m, q, v, a),
    }
    for key, r in (("J_local", "local"), ("J_world", "world"), ("J_lwa", "local_world_aligned")):
        out[key] = jaxdyn.frame_jacobians(m, q, r)
    for key, r in (("dJ_local", "local"), ("dJ_lwa", "local_world_aligned")):
        out[key] = jaxdyn.frame_jacobians_time_derivative(m, q, v, r)
    return out


RTOL = 1e-9


def close(a, b, rtol=RTOL, atol_scale=1.0):
    a, b = np.asarray(a), np.asarray(b)
    scale = max(1.0, float(np.max(np.abs(b))))
    np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * scale * atol_scale)


@pytest.fixture(scope="module", params=CASES, ids=[f"{r}-{b}" for r, b in CASES])
def ref(request):
    r = Ref(*request.param)
    K = r.K
    stack = lambda f: np.stack([f(k) for k in range(K)])
    args = (
        stack(r.q),
        stack(lambda k: r.vec(k, "v")),
        stack(lambda k: r.vec(k, "a")),
        stack(lambda k: r.vec(k, "tau")),
        stack(r.fext),
    )
    assert float(r.d["dt"]) == 0.1
    r.out = jax.jit(jax.vmap(everything, in_axes=(None, 0, 0, 0, 0, 0)))(r.model, *args)
    r.out = {k: np.asarray(v) for k, v in r.out.items()}
    return r


@pytest.mark.parametrize("robot, base", [("double_pendulum", "fixed"), ("panda", "fixed"), ("talos", "floating")])
def test_batched_public_api_matches_pinocchio(robot, base):
    """``jax.vmap`` of the public ``jaxdyn.rnea``/``crba``/``aba`` (the struct-of-arrays kernels:
    unrolled for the double pendulum and panda, scanned for talos) against Pinocchio, with and
    without external forces."""
    r = Ref(robot, base)
    K = r.K
    stack = lambda f: np.stack([f(k) for k in range(K)])
    q, v, a, tau, fext = (
        stack(r.q),
        stack(lambda k: r.vec(k, "v")),
        stack(lambda k: r.vec(k, "a")),
        stack(lambda k: r.vec(k, "tau")),
        stack(r.fext),
    )

    def public(m, q, v, a, tau, fext):
        return (
            jaxdyn.rnea(m, q, v, a),
            jaxdyn.rnea(m, q, v, a, fext),
            jaxdyn.crba(m, q),
            jaxdyn.aba(m, q, v, tau),
            jaxdyn.aba(m, q, v, tau, fext),
        )

    # compiled as users compile it (XLA CPU's default emitters; see tests/conftest.py)
    batched = jax.jit(jax.vmap(public, in_axes=(None, 0, 0, 0, 0, 0)), compiler_options=DEFAULT_EMITTERS)
    out = batched(r.model, q, v, a, tau, fext)
    for k in range(K):
        close(out[0][k], r.vec(k, "rnea"))
        close(out[1][k], r.vec(k, "rnea_fext"))
        close(out[2][k], r.mat(k, "crba"))
        close(out[3][k], r.vec(k, "aba"), rtol=1e-8)
        close(out[4][k], r.vec(k, "aba_fext"), rtol=1e-8)


def test_layout(ref):
    assert ref.model.nq == int(ref.d["nq"]) and ref.model.nv == int(ref.d["nv"])
    close(jnp.sum(ref.model.mass), ref.d["total_mass"])


def test_dynamics(ref):
    o = ref.out
    for k in range(ref.K):
        for key in ("rnea", "rnea_fext", "nle", "gravity_torque"):
            close(o[key][k], ref.vec(k, key))
        close(o["crba"][k], ref.mat(k, "crba"))
        close(o["aba"][k], ref.vec(k, "aba"), rtol=1e-8)
        close(o["aba_fext"][k], ref.vec(k, "aba_fext"), rtol=1e-8)
        close(o["minv"][k], ref.mat(k, "minv"), rtol=1e-8)


def test_kinematics(ref):
    m, d, o = ref.model, ref.d, ref.out
    fnames = list(d["frame_names"])
    fidx = [
        [j for j, n in enumerate(fnames) if n == name and d["frame_types"][j] == "BODY"][0] for name in m.frame_names
    ]
    for k in range(ref.K):
        R, p = ref.body_pose(k)
        close(o["oMi_R"][k], R)
        close(o["oMi_p"][k], p)
        close(o["oMf_R"][k], d["oMf_R"][k][fidx])
        close(o["oMf_p"][k], d["oMf_p"][k][fidx])
        close(o["v_local"][k], ref.body_motion(k, "v_local"))
        close(o["a_local"][k], ref.body_motion(k, "a_local"))


def test_jacobians(ref):
    m, d, o = ref.model, ref.d, ref.out
    idx = [m.frame_index(str(n)) for n in d["jac_frame_names"]]
    for k in range(ref.K):
        for key in ("J_local", "J_world", "J_lwa", "dJ_local", "dJ_lwa"):
            for i, fi in enumerate(idx):
                close(o[key][k][fi], ref.jac(k, key, i), rtol=1e-8)


def test_energy_com_momentum(ref):
    d, o = ref.d, ref.out
    for k in range(ref.K):
        close(o["kinetic_energy"][k], d["kinetic_energy"][k])
        close(o["potential_energy"][k], d["potential_energy"][k])
        close(o["com"][k], d["com"][k])
        close(o["Jcom"][k], d["Jcom"][k][:, ref.pv])
        close(o["hg"][k], swap6(d["hg"][k]))


def test_integrate_difference(ref):
    m, o = ref.model, ref.out
    for k in range(ref.K):
        qn = np.array(o["q_next"][k])
        qr = ref.q(k, "q_next")
        if m.floating_base:  # quaternion sign is arbitrary
            qn[3:7] *= np.sign(qn[3:7] @ qr[3:7])
        close(qn, qr)
        close(jaxdyn.difference(m, ref.q(k), qr), ref.vec(k, "q_diff"))


def test_regressor(ref):
    """Seed algorithm against Pinocchio's computeJointTorqueRegressor and dynamic parameters."""
    m, d = ref.model, ref.d
    cols = np.concatenate([np.arange(10 * pj, 10 * pj + 10) for pj in ref.pin_joint])
    for k in range(ref.K):
        close(ref.out["regressor"][k], d["regressor"][k][ref.pv][:, cols])
    close(jaxdyn.inertial_parameters(m).ravel(), d["dynamic_params"][cols])
