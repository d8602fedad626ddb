"""Every algorithm against stored Pinocchio values, all shipped robots, fixed and floating base."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxdyn
from pinocchio_ref import CASES, Ref, swap6

J = {name: jax.jit(getattr(jaxdyn, name)) for name in (
    "rnea", "crba", "aba", "bias_forces", "gravity_torques", "forward_kinematics", "frame_placements",
    "body_velocities", "body_accelerations", "kinetic_energy", "potential_energy", "center_of_mass",
    "center_of_mass_jacobian", "centroidal_momentum", "integrate", "difference")}
J["frame_jacobians"] = jax.jit(jaxdyn.frame_jacobians, static_argnames="reference")
J["frame_jacobians_time_derivative"] = jax.jit(jaxdyn.frame_jacobians_time_derivative, static_argnames="reference")

RTOL = 1e-9


def close(a, b, rtol=RTOL, atol_scale=1.0):
    a, b = np.asarray(a), np.asarray(b)
    scale = max(1.0, float(np.max(np.abs(b))))
    np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * scale * atol_scale)


@pytest.fixture(scope="module", params=CASES, ids=[f"{r}-{b}" for r, b in CASES])
def ref(request):
    return Ref(*request.param)


def test_layout(ref):
    assert ref.model.nq == int(ref.d["nq"]) and ref.model.nv == int(ref.d["nv"])
    close(jnp.sum(ref.model.mass), ref.d["total_mass"])


def test_dynamics(ref):
    m = ref.model
    for k in range(ref.K):
        q, v, a, tau = ref.q(k), ref.vec(k, "v"), ref.vec(k, "a"), ref.vec(k, "tau")
        close(J["rnea"](m, q, v, a), ref.vec(k, "rnea"))
        close(J["rnea"](m, q, v, a, ref.fext(k)), ref.vec(k, "rnea_fext"))
        close(J["crba"](m, q), ref.mat(k, "crba"))
        close(J["aba"](m, q, v, tau), ref.vec(k, "aba"), rtol=1e-8)
        close(J["aba"](m, q, v, tau, ref.fext(k)), ref.vec(k, "aba_fext"), rtol=1e-8)
        close(J["bias_forces"](m, q, v), ref.vec(k, "nle"))
        close(J["gravity_torques"](m, q), ref.vec(k, "gravity_torque"))


def test_kinematics(ref):
    m, d = ref.model, ref.d
    fnames = list(d["frame_names"])
    for k in range(ref.K):
        q, v, a = ref.q(k), ref.vec(k, "v"), ref.vec(k, "a")
        X = J["forward_kinematics"](m, q)
        R, p = ref.body_pose(k)
        close(X.R, R)
        close(X.p, p)
        F = J["frame_placements"](m, q)
        for i, name in enumerate(m.frame_names):
            pi = [j for j, n in enumerate(fnames) if n == name and d["frame_types"][j] == "BODY"][0]
            close(F.R[i], d["oMf_R"][k][pi])
            close(F.p[i], d["oMf_p"][k][pi])
        close(J["body_velocities"](m, q, v), ref.body_motion(k, "v_local"))
        close(J["body_accelerations"](m, q, v, a), ref.body_motion(k, "a_local"))


def test_jacobians(ref):
    m, d = ref.model, ref.d
    idx = [m.frame_index(str(n)) for n in d["jac_frame_names"]]
    pairs = [("J_local", "local"), ("J_world", "world"), ("J_lwa", "local_world_aligned")]
    for k in range(min(ref.K, 2)):
        q, v = ref.q(k), ref.vec(k, "v")
        for key, refname in pairs:
            Js = J["frame_jacobians"](m, q, reference=refname)
            for i, fi in enumerate(idx):
                close(Js[fi], ref.jac(k, key, i))
        for key, refname in [("dJ_local", "local"), ("dJ_lwa", "local_world_aligned")]:
            dJs = J["frame_jacobians_time_derivative"](m, q, v, reference=refname)
            for i, fi in enumerate(idx):
                close(dJs[fi], ref.jac(k, key, i), rtol=1e-8)


def test_energy_com_momentum(ref):
    m, d = ref.model, ref.d
    for k in range(ref.K):
        q, v = ref.q(k), ref.vec(k, "v")
        close(J["kinetic_energy"](m, q, v), d["kinetic_energy"][k])
        close(J["potential_energy"](m, q), d["potential_energy"][k])
        close(J["center_of_mass"](m, q), d["com"][k])
        close(J["center_of_mass_jacobian"](m, q), d["Jcom"][k][:, ref.pv])
        close(J["centroidal_momentum"](m, q, v), swap6(d["hg"][k]))


def test_integrate_difference(ref):
    m, d = ref.model, ref.d
    dt = float(d["dt"])
    for k in range(ref.K):
        q, v = ref.q(k), ref.vec(k, "v")
        qn = np.array(J["integrate"](m, q, v, dt))
        qr = ref.q(k, "q_next")
        if m.floating_base:  # quaternion sign is arbitrary
            s = np.sign(qn[3:7] @ qr[3:7])
            qn[3:7] *= s
        close(qn, qr)
        close(J["difference"](m, q, ref.q(k, "q_next")), ref.vec(k, "q_diff"))


J["mass_matrix_inverse"] = jax.jit(jaxdyn.mass_matrix_inverse)
J["regressor"] = jax.jit(jaxdyn.regressor)


def test_minverse_and_regressor(ref):
    """Seed algorithms against Pinocchio's computeMinverse and computeJointTorqueRegressor."""
    m, d = ref.model, ref.d
    cols = np.concatenate([np.arange(10 * pj, 10 * pj + 10) for pj in ref.pin_joint])
    for k in range(2):
        q, v, a = ref.q(k), ref.vec(k, "v"), ref.vec(k, "a")
        close(J["mass_matrix_inverse"](m, q), ref.mat(k, "minv"), rtol=1e-8)
        Y = np.asarray(J["regressor"](m, q, v, a))
        Yp = d["regressor"][k][ref.pv][:, cols]
        close(Y, Yp)
    close(jaxdyn.inertial_parameters(m).ravel(), d["dynamic_params"][cols])
