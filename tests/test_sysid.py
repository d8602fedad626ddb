"""System identification: data loading, least squares on base parameters, log-Cholesky gradient
fit, physical consistency, URDF write-back, CLI and sharded evaluation."""

import functools
import json
import os
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxdyn
from jaxdyn import sysid
from jaxdyn.io.urdf_write import urdf_with_inertials, write_urdf
from jaxdyn.robots import robot_path

_rnea = jax.jit(jax.vmap(jaxdyn.rnea, in_axes=(None, 0, 0, 0)))


def perturbed(model, scale, seed):
    """A physically consistent perturbation of the model: random log-Cholesky offsets."""
    th = np.asarray(sysid.parameters_to_log_cholesky(jaxdyn.inertial_parameters(model)))
    th = th + scale * np.random.default_rng(seed).standard_normal(th.shape)
    pi = np.asarray(sysid.log_cholesky_to_parameters(th))
    return jaxdyn.model_with_parameters(model, jnp.asarray(pi)), pi


@functools.cache
def pendulum_problem(noise=0.0, T=400, friction=False):
    model = jaxdyn.load_robot("double_pendulum")
    truth, pi = perturbed(model, 0.2, 0)
    t, q, qd, qdd = sysid.fourier_excitation(model, T * 0.01, 0.01, seed=1, base_frequency=0.25)
    tau = np.asarray(_rnea(truth, q, qd, qdd))
    d = c = None
    if friction:
        d, c = np.array([0.02, 0.05]), np.array([0.01, 0.003])
        tau = tau + d * qd + c * np.sign(qd)
    tau = tau + noise * np.random.default_rng(2).standard_normal(tau.shape)
    return model, pi, sysid.SysIdData(q, qd, qdd, tau, t, model.joint_names), (d, c)


@functools.cache
def pendulum_base():
    return sysid.structural_base(jaxdyn.load_robot("double_pendulum"))[0]


def test_log_cholesky_round_trip():
    rng = np.random.default_rng(0)
    th = rng.standard_normal((20, 10))
    J = np.asarray(sysid.log_cholesky_to_pseudo_inertia(th))
    assert np.all(np.linalg.eigvalsh(J)[:, 0] > 0)
    np.testing.assert_allclose(np.asarray(sysid.pseudo_inertia_to_log_cholesky(J)), th, atol=1e-10)
    pi = np.asarray(sysid.pseudo_inertia_to_parameters(J))
    np.testing.assert_allclose(np.asarray(sysid.parameters_to_log_cholesky(pi)), th, atol=1e-9)
    np.testing.assert_allclose(np.asarray(sysid.parameters_to_pseudo_inertia(pi)), J, atol=1e-12)
    # agrees with the library's pseudo-inertia, and every log-Cholesky point is consistent
    model = jaxdyn.load_robot("panda")
    pim = jaxdyn.inertial_parameters(model)
    np.testing.assert_allclose(
        np.asarray(sysid.parameters_to_pseudo_inertia(pim)), np.asarray(jaxdyn.pseudo_inertia(model)), atol=1e-14
    )
    assert sysid.is_physically_consistent(pi)
    assert sysid.is_physically_consistent(model)
    # inconsistent bodies are named: negative mass, and a triangle-inequality violation
    bad = np.asarray(pim).copy()
    bad[2, 0] = -1.0
    rep = sysid.physical_consistency(bad, model.body_names)
    assert [r.body for r in rep if not r.consistent] == [model.body_names[2]]
    tri = model.replace(inertia=model.inertia.at[4].set(jnp.diag(jnp.array([0.01, 0.01, 0.05]))))
    rep = sysid.physical_consistency(tri)
    assert not rep[4].consistent and rep[4].triangle_margin < 0
    assert all(r.consistent for i, r in enumerate(rep) if i != 4)


def test_ls_recovers_base_parameters_exactly():
    model, pi, data, _ = pendulum_problem()
    B = pendulum_base()
    assert B.shape == (6, 20)  # planar double pendulum, same axes: 6 base parameters
    res = sysid.identify_ls(model, data, base=B)
    assert res.info["rank"] == B.shape[0]
    beta = B @ pi.ravel()
    np.testing.assert_allclose(res.beta, beta, rtol=0, atol=1e-10 * np.abs(beta).max())
    pred = sysid.predict_torques(res.parameters, data, model)
    assert np.max(sysid.torque_rmse(pred, data)) < 1e-10
    # with viscous + Coulomb friction as extra columns
    model, pi, data, (d, c) = pendulum_problem(friction=True)
    res = sysid.identify_ls(model, data, base=B, friction=True)
    np.testing.assert_allclose(res.beta, beta, atol=1e-10 * np.abs(beta).max())
    np.testing.assert_allclose(res.damping, d, atol=1e-10)
    np.testing.assert_allclose(res.coulomb, c, atol=1e-10)
    assert res.model is not None and np.allclose(np.asarray(res.model.damping), d)


def test_ls_recovers_panda_base_parameters():
    model = jaxdyn.load_robot("panda")
    truth, pi = perturbed(model, 0.1, 3)
    t, q, qd, qdd = sysid.fourier_excitation(model, 2.0, 0.01, seed=4, base_frequency=0.5)
    tau = np.asarray(_rnea(truth, q, qd, qdd))
    data = sysid.SysIdData(q, qd, qdd, tau, t, model.joint_names)
    res = sysid.identify_ls(model, data)
    beta = res.base @ pi.ravel()
    assert res.info["rank"] == res.base.shape[0]
    np.testing.assert_allclose(res.beta, beta, atol=1e-8 * np.abs(beta).max())


def test_gradient_fit_is_consistent_and_reduces_error():
    model, pi, data, _ = pendulum_problem(noise=0.002)
    train, test = sysid.split_holdout(data, 0.25)
    B = pendulum_base()
    res = sysid.identify_gradient(model, train, base=B, steps=150)
    assert res.consistent and all(r.min_eig_J > 0 for r in res.consistency)
    before = sysid.torque_rmse(sysid.predict_torques(jaxdyn.inertial_parameters(model), test, model), test)
    after = sysid.torque_rmse(sysid.predict_torques(res.parameters, test, model), test)
    assert np.all(after < 0.2 * before), (before, after)
    assert np.all(after < 0.004)  # within twice the noise level
    assert res.info["loss"][-1] < 0.05 * res.info["loss"][0]
    # the identified model reproduces the prediction through RNEA
    tau = np.asarray(_rnea(res.model, test.q, test.qd, test.qdd))
    np.testing.assert_allclose(tau, sysid.predict_torques(res.parameters, test, model), atol=1e-10)


def test_savgol_and_file_round_trip(tmp_path):
    t = np.arange(200) * 0.01
    x = np.stack([1 + 2 * t - t**2 + 0.5 * t**3, np.sin(3 * t)], 1)
    d1 = sysid.savgol_derivative(x, 0.01, 21, 3, 1)
    d2 = sysid.savgol_derivative(x, 0.01, 21, 3, 2)
    np.testing.assert_allclose(d1[:, 0], 2 - 2 * t + 1.5 * t**2, atol=1e-9)  # exact for a cubic, edges too
    np.testing.assert_allclose(d2[:, 0], -2 + 3 * t, atol=1e-7)
    np.testing.assert_allclose(d1[10:-10, 1], 3 * np.cos(3 * t[10:-10]), atol=1e-4)
    model, pi, data, _ = pendulum_problem()
    for ext in ("npz", "csv"):
        path = str(tmp_path / f"d.{ext}")
        sysid.save_data(path, data)
        back = sysid.load_data(path, model)
        for k in ("q", "qd", "qdd", "tau", "t"):
            np.testing.assert_array_equal(getattr(back, k), getattr(data, k))
        # without derivatives: estimated, window // 2 samples dropped at each end
        sysid.save_data(path, data, derivatives=False)
        est = sysid.load_data(path, model, window=15)
        assert est.estimated == ("qd", "qdd") and len(est) == len(data) - 14
        np.testing.assert_allclose(est.qd, data.qd[7:-7], atol=2e-3 * np.abs(data.qd).max())
        np.testing.assert_allclose(est.qdd, data.qdd[7:-7], atol=2e-2 * np.abs(data.qdd).max())
    # CSV columns in any order are matched by joint name
    path = tmp_path / "perm.csv"
    path.write_text(
        "# comment\ntau:joint2,q:joint2,q:joint1,tau:joint1,qd:joint1,qd:joint2,qdd:joint2,qdd:joint1\n"
        "1,2,3,4,5,6,7,8\n"
    )
    d = sysid.load_data(path, model)
    np.testing.assert_array_equal(d.q, [[3, 2]])
    np.testing.assert_array_equal(d.tau, [[4, 1]])
    np.testing.assert_array_equal(d.qdd, [[8, 7]])


def test_bad_input(tmp_path):
    model, pi, data, _ = pendulum_problem()
    q, tau = data.q[:50], data.tau[:50]

    def npz(**arrays):
        p = str(tmp_path / "x.npz")
        np.savez(p, **arrays)
        return p

    with pytest.raises(ValueError, match="'tau' has shape"):
        sysid.load_data(npz(q=q, tau=tau[:, :1], dt=0.01), model)
    with pytest.raises(ValueError, match="'qd' has 10 samples"):
        sysid.load_data(npz(q=q, tau=tau, qd=q[:10], qdd=q), model)
    bad = q.copy()
    bad[7, 1] = np.nan
    with pytest.raises(ValueError, match="'q' has a non-finite value.*sample 7, joint 'joint2'"):
        sysid.load_data(npz(q=bad, tau=tau, dt=0.01), model)
    with pytest.raises(ValueError, match=r"joint\(s\) \['elbow'\] are not joints"):
        sysid.load_data(npz(q=q, tau=tau, dt=0.01, joint_names=np.array(["joint1", "elbow"])), model)
    with pytest.raises(ValueError, match=r"no data for joint\(s\) \['joint2'\]"):
        sysid.load_data(npz(q=q[:, :1], tau=tau[:, :1], dt=0.01, joint_names=np.array(["joint1"])), model)
    with pytest.raises(ValueError, match="neither 't' nor 'dt'"):
        sysid.load_data(npz(q=q, tau=tau), model)
    t = np.arange(50) * 0.01
    t[20:] += 0.005
    with pytest.raises(ValueError, match="not uniformly sampled"):
        sysid.load_data(npz(q=q, tau=tau, t=t), model)
    with pytest.raises(ValueError, match="unknown arrays"):
        sysid.load_data(npz(q=q, tau=tau, dt=0.01, torque=tau), model)
    csv = tmp_path / "x.csv"
    csv.write_text("t,q:joint1,q:joint2,tau:joint1,tau:shoulder\n0,1,2,3,4\n")
    with pytest.raises(ValueError, match="'tau:' columns do not name the same joints.*shoulder"):
        sysid.load_data(csv, model)
    csv.write_text("t,q:joint1,q:joint2,tau:joint1,tau:joint2\n0,1,nan,3,4\n")
    with pytest.raises(ValueError, match="'q' has a non-finite value.*joint 'joint2'"):
        sysid.load_data(csv, model)
    (tmp_path / "x.txt").write_text("")
    with pytest.raises(ValueError, match="unknown data format"):
        sysid.load_data(tmp_path / "x.txt", model)
    few = data.subset(slice(0, 2))
    with pytest.raises(ValueError, match="4 equations are fewer than the 6 parameters"):
        sysid.identify_ls(model, few, base=pendulum_base())
    with pytest.raises(ValueError, match="floating base"):
        sysid.load_data(npz(q=q, tau=tau, dt=0.01), jaxdyn.load_robot("double_pendulum", floating_base=True))
    # the URDF writer never overwrites its input
    src = tmp_path / "in.urdf"
    src.write_text(open(robot_path("double_pendulum")).read())
    with pytest.raises(ValueError, match="is the input URDF"):
        write_urdf(str(src), model, str(src))
    with pytest.raises(jaxdyn.URDFError, match="does not describe model"):
        urdf_with_inertials(robot_path("ur5"), model)


def test_urdf_write_round_trip(tmp_path):
    model = jaxdyn.load_robot("panda")
    new, pi = perturbed(model, 0.05, 7)
    new = new.replace(damping=jnp.linspace(0.1, 0.9, 9), friction=jnp.linspace(0.01, 0.09, 9))
    out = tmp_path / "panda_id.urdf"
    write_urdf(robot_path("panda"), new, out, dynamics=True)
    back = jaxdyn.load_urdf(str(out))
    np.testing.assert_allclose(np.asarray(jaxdyn.inertial_parameters(back)), pi, atol=1e-15)
    np.testing.assert_allclose(np.asarray(back.damping), np.asarray(new.damping), atol=1e-15)
    np.testing.assert_allclose(np.asarray(back.friction), np.asarray(new.friction), atol=1e-15)
    # the hand (fixed to link 8 -> merged into link7) now carries a zero inertial
    import xml.etree.ElementTree as ET

    links = {le.get("name"): le for le in ET.parse(out).getroot().findall("link")}
    assert float(links["panda_hand"].find("inertial/mass").get("value")) == 0.0
    assert float(links["panda_link7"].find("inertial/mass").get("value")) == pytest.approx(float(new.mass[6]))
    # the original file is untouched
    assert jaxdyn.load_urdf(robot_path("panda")).mass[6] == model.mass[6]


def test_cli_identify_end_to_end(tmp_path, capsys):
    from jaxdyn.cli import main

    model, pi, data, _ = pendulum_problem(noise=0.002)
    path = str(tmp_path / "pendulum.csv")
    sysid.save_data(path, data)
    out, plots = str(tmp_path / "id.urdf"), str(tmp_path / "plots")
    rc = main(
        [
            "identify",
            robot_path("double_pendulum"),
            path,
            "--out",
            out,
            "--method",
            "both",
            "--holdout",
            "0.25",
            "--steps",
            "150",
            "--plots",
            plots,
        ]
    )
    cap = capsys.readouterr()
    assert rc == 0, cap.err
    assert "gradient fit [" in cap.err  # progress bar
    line = [ln for ln in cap.out.splitlines() if ln.startswith("all ")][0].split()
    before, ls, grad = map(float, line[1:])
    assert grad < 0.2 * before and ls < 0.2 * before
    back = jaxdyn.load_urdf(out)
    assert sysid.is_physically_consistent(back)
    assert sorted(os.listdir(plots)) == ["torque_joint1.png", "torque_joint2.png"]
    # the input URDF is never the output; bad data gives exit status 2 and a message
    assert main(["identify", out, path, "--out", out]) == 2
    bad = tmp_path / "bad.csv"
    bad.write_text("t,q:joint1,q:jointX,tau:joint1,tau:jointX\n0,1,2,3,4\n")
    assert main(["identify", robot_path("double_pendulum"), str(bad), "--out", str(tmp_path / "o.urdf")]) == 2
    assert "jointX" in capsys.readouterr().err


_SHARD_SCRIPT = textwrap.dedent("""
    import json, sys
    import jax
    jax.config.update("jax_enable_x64", True)
    import numpy as np
    import jaxdyn
    from jaxdyn import sysid
    d = np.load(sys.argv[1])
    model = jaxdyn.load_robot("double_pendulum")
    data = sysid.SysIdData(d["q"], d["qd"], d["qdd"], d["tau"], None, model.joint_names)
    B = d["B"]
    ls = sysid.identify_ls(model, data, base=B)
    g = sysid.identify_gradient(model, data, base=B, steps=20)
    print(json.dumps({"devices": jax.device_count(), "used": [ls.info["devices"], g.info["devices"]], "ls": ls.beta.tolist(), "gd": g.parameters.ravel().tolist()}))
""")


def test_sharded_identification_matches_single_device(tmp_path):
    model, pi, data, _ = pendulum_problem(noise=0.002)
    data = data.subset(slice(0, 101))  # not a multiple of 4: padded
    B = pendulum_base()
    path = str(tmp_path / "d.npz")
    np.savez(path, q=data.q, qd=data.qd, qdd=data.qdd, tau=data.tau, B=B)
    script = tmp_path / "shard.py"
    script.write_text(_SHARD_SCRIPT)
    # the suite's compiler flags (conftest.py) and four host devices
    flags = (os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=4").strip()
    env = dict(os.environ, XLA_FLAGS=flags, JAX_PLATFORMS="cpu")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run([sys.executable, str(script), path], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    assert res["devices"] == 4 and res["used"] == [4, 4]
    assert jax.device_count() == 1
    ls = sysid.identify_ls(model, data, base=B)
    g = sysid.identify_gradient(model, data, base=B, steps=20)
    np.testing.assert_allclose(res["ls"], ls.beta, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(res["gd"], g.parameters.ravel(), rtol=1e-6, atol=1e-10)


def test_model_to_urdf_round_trip():
    """A model built from numbers, written as URDF and loaded back, has the same dynamics
    (fixed-base chain and a floating random tree with prismatic joints); the harness hands
    these files to the peers for the chainN cases."""
    from jaxdyn import builders
    from jaxdyn.io.urdf_write import model_to_urdf

    for m in (
        builders.chain(5, "revolute", seed=0, dtype=jnp.float64),
        builders.random_tree(5, ("revolute", "prismatic"), floating_base=True, seed=1, dtype=jnp.float64),
    ):
        m2 = jaxdyn.load_urdf(model_to_urdf(m), floating_base=m.floating_base, dtype=jnp.float64)
        assert m2.joint_names[1:] == m.joint_names[1:] and m2.nv == m.nv  # a free root is named by the loader
        q = jaxdyn.random_configuration(m, jax.random.PRNGKey(0))
        qd, tau = jnp.linspace(-1, 1, m.nv), jnp.linspace(1, -2, m.nv)
        aba = jax.jit(jaxdyn.aba)  # one program per model, not op by op
        np.testing.assert_allclose(aba(m2, q, qd, tau), aba(m, q, qd, tau), rtol=1e-10, atol=1e-10)
    sph = builders.chain(2, ("revolute", "spherical"), seed=0, dtype=jnp.float64)
    with pytest.raises(Exception, match="spherical.*URDF"):
        model_to_urdf(sph)
