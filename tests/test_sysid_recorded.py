"""System identification from data as a robot records it.

``tests/data/sysid`` (written by ``tests/reference/generate_sysid_recording.py``; Pinocchio, not
jaxdyn, computed every torque): a 7-dof Panda whose true inertial parameters are the shipped
URDF's perturbed by 20-30 %, joints with viscous and Coulomb friction, two 10 s recordings at
1 kHz of encoder positions (noise 1e-4 rad) and joint torques (noise 0.1 N m), no velocities or
accelerations, and the true rigid-body torques along the held-out trajectory.
"""

import functools
import json
import math
import os
import re

import jax.numpy as jnp
import numpy as np
import pytest
import scipy.signal

import jaxdyn
from jaxdyn import sysid
from jaxdyn.cli import main

DATA = os.path.join(os.path.dirname(__file__), "data", "sysid")
URDF = os.path.join(DATA, "panda_arm.urdf")
TRAIN = os.path.join(DATA, "train.npz")
HELDOUT = os.path.join(DATA, "heldout.npz")
with open(os.path.join(DATA, "truth.json"), encoding="utf-8") as _fh:
    META = json.load(_fh)
SIGMA_TAU = META["sigma_tau_nm"]
TRUE_PI = np.array(META["true_parameters"])
TOTAL_MASS = float(np.sum(META["true_masses"]))
FRICTION = "coulomb+offset"


@functools.cache
def model():
    return jaxdyn.load_urdf(URDF, dtype=jnp.float64)


@functools.cache
def truth():
    return sysid.load_data(os.path.join(DATA, "heldout_truth.npz"), model())


def rigid_rmse(parameters) -> float:
    """RMS error of the rigid-body torques of ``parameters`` along the held-out trajectory."""
    t = truth()
    return float(np.sqrt(np.mean((sysid.predict_torques(parameters, t, model()) - t.tau) ** 2)))


def bounds():
    m0 = np.asarray(model().mass, np.float64)
    return np.stack([0.5 * m0, 1.5 * m0], 1)


@functools.cache
def fitted():
    """The library workflow: Butterworth preprocessing, weighted least squares with viscous +
    Coulomb + offset friction, then the consistent fit with mass bounds and the total mass."""
    train = sysid.load_data(TRAIN, model())
    res = sysid.identify(
        model(), train, "both", friction=FRICTION, weighted=True, steps=500, mass_bounds=bounds(), total_mass=TOTAL_MASS
    )
    return train, res


def test_recordings_are_what_a_robot_logs_and_the_truth_is_consistent():
    total = sum(os.path.getsize(os.path.join(DATA, f)) for f in os.listdir(DATA))
    assert total < 2e6
    for path in (TRAIN, HELDOUT):
        with np.load(path) as z:
            assert sorted(z.files) == ["dt", "joint_names", "q", "tau"]  # no velocities, no accelerations
            assert z["q"].shape == (10000, 7) and float(z["dt"]) == 1e-3
    # Pinocchio's true parameters reproduce Pinocchio's rigid-body torques through jaxdyn's regressor
    t = truth()
    np.testing.assert_allclose(sysid.predict_torques(TRUE_PI, t, model()), t.tau, atol=1e-9)
    assert sysid.is_physically_consistent(TRUE_PI)
    assert rigid_rmse(jaxdyn.inertial_parameters(model())) > 10 * SIGMA_TAU  # the prior is far off


def test_filter_uses_scipy_and_follows_the_stated_rule(monkeypatch):
    calls = {"butter": 0, "sosfiltfilt": 0, "periodogram": 0}
    for name in calls:
        real = getattr(scipy.signal, name)

        def wrapped(*a, _real=real, _name=name, **k):
            calls[_name] += 1
            return _real(*a, **k)

        monkeypatch.setattr(scipy.signal, name, wrapped)
    data = sysid.load_data(HELDOUT, model())
    assert all(v > 0 for v in calls.values()), calls
    pre = data.preprocessing
    assert data.estimated == ("qd", "qdd") and pre.method == "butterworth" and pre.order == 4
    # bandwidth: the highest harmonic (0.5 Hz), over-estimated by at most the Blackman-Harris main
    # lobe (4 bins of 1 / 10 s)
    f_max = META["excitation"]["highest_harmonic_hz"]
    assert f_max <= pre.bandwidth <= f_max + 4 / META["duration_s"] + 1e-9
    assert pre.cutoff == pytest.approx(5 * pre.bandwidth) and pre.cutoff_factor == 5
    assert pre.decimation == math.floor(0.4 * 1000 / pre.cutoff)
    # edge: where the impulse response of the one-pass filter stays below 1e-3 of its peak
    sos = scipy.signal.butter(4, pre.cutoff, fs=1000, output="sos")
    imp = np.zeros(20000)
    imp[0] = 1
    h = np.abs(scipy.signal.sosfilt(sos, imp))
    assert pre.edge == np.nonzero(h > 1e-3 * h.max())[0].max() + 1
    np.testing.assert_array_equal(pre.index, np.arange(pre.edge, 10000 - pre.edge, pre.decimation))
    # tau went through the same zero-phase filter (parallel filtering)
    with np.load(HELDOUT) as z:
        tau = z["tau"].astype(np.float64)
    np.testing.assert_allclose(
        data.tau, scipy.signal.sosfiltfilt(sos, tau, axis=0, padlen=pre.edge)[pre.index], atol=1e-12
    )
    # the derivatives are those of the true motion (the truth is sampled every 10 ms)
    t = truth()
    k = pre.index // 10
    assert np.all(pre.index % 10 == 0)
    assert np.sqrt(np.mean((data.qd - t.qd[k]) ** 2)) < 5e-4
    assert np.sqrt(np.mean((data.qdd - t.qdd[k]) ** 2)) < 1e-2
    text = pre.describe()
    for s in (f"order 4, cut-off {pre.cutoff:.4g} Hz", f"decimation {pre.decimation} ", f"{pre.edge} samples dropped"):
        assert s in text, (s, text)
    # every choice can be overridden
    d2 = sysid.load_data(HELDOUT, model(), cutoff=6.0, filter_order=3, decimation=25, edge=400)
    p2 = d2.preprocessing
    assert (p2.cutoff, p2.order, p2.decimation, p2.edge, p2.bandwidth) == (6.0, 3, 25, 400, None)
    assert "cut-off 6 Hz (given)" in p2.describe() and len(d2) == len(range(400, 9600, 25))
    d3 = sysid.load_data(HELDOUT, model(), bandwidth=0.5, cutoff_factor=8)
    assert d3.preprocessing.cutoff == pytest.approx(4.0) and "(given)" in d3.preprocessing.rule
    # Savitzky-Golay stays available
    d4 = sysid.load_data(HELDOUT, model(), filter="savgol", window=101)
    assert d4.preprocessing.method == "savgol" and d4.preprocessing.edge == 50 and len(d4) == 9900
    assert "Savitzky-Golay" in d4.preprocessing.describe()


def test_heldout_rigid_body_torques_below_half_the_noise():
    _, res = fitted()
    wls, grad = res["wls"], res["gradient"]
    for r in (wls, grad):
        assert rigid_rmse(r.parameters) < 0.5 * SIGMA_TAU, (r.method, rigid_rmse(r.parameters))
    assert grad.consistent
    # friction recovered: viscous and Coulomb coefficients within 5 %, offsets near zero
    np.testing.assert_allclose(grad.friction["viscous"], META["viscous"], rtol=0.05)
    np.testing.assert_allclose(grad.friction["coulomb"], META["coulomb"], rtol=0.05)
    assert np.all(np.abs(grad.friction["offset"]) < 0.05)


def test_masses_stay_within_the_given_bounds():
    _, res = fitted()
    g = res["gradient"]
    lo, hi = bounds().T
    assert np.all(g.masses > lo) and np.all(g.masses < hi), (g.masses, lo, hi)
    assert abs(g.masses.sum() - TOTAL_MASS) < 0.01 * TOTAL_MASS
    assert g.consistent and all(c.min_eig_J > 0 for c in g.consistency)
    # bounds hold even when they exclude the unconstrained optimum
    train, _ = fitted()
    tight = sysid.identify_gradient(
        model(),
        train,
        friction=FRICTION,
        steps=100,
        mass_bounds={"panda_link3": (2.0, 2.1), "panda_link2": (None, 0.5)},
        weights=res["wls"].info["weights"],
        prior_weight=1.0,
    )
    assert 2.0 < tight.masses[2] < 2.1 and tight.masses[1] < 0.5 and tight.consistent
    with pytest.raises(ValueError, match="'elbow' is not a body"):
        sysid.mass_bounds_array(model(), {"elbow": (1, 2)})
    with pytest.raises(ValueError, match="need 0 <= lo < hi"):
        sysid.mass_bounds_array(model(), {"panda_link3": (2, 1)})
    with pytest.raises(ValueError, match="outside the sum of the mass bounds"):
        sysid.identify_gradient(model(), train, friction=FRICTION, steps=1, mass_bounds=bounds(), total_mass=100.0)


def test_uncertainty_report():
    _, res = fitted()
    u = res["wls"].uncertainty
    r = res["wls"].base.shape[0]
    nf = 3 * model().nv
    assert len(u.names) == len(u.values) == len(u.std) == len(u.relative_std) == r + nf and u.n_base == r
    assert u.covariance.shape == (r + nf, r + nf)
    np.testing.assert_allclose(u.covariance, u.covariance.T, atol=1e-15)
    assert np.all(np.linalg.eigvalsh(u.covariance) > 0) and np.all(u.std > 0)
    assert 1 < u.cond < 1e4 and np.isfinite(u.cond)
    np.testing.assert_allclose(u.relative_std, 100 * u.std / np.abs(u.values))
    assert u.poorly_excited == [n for n, s in zip(u.names, u.relative_std) if s > u.threshold]
    assert 0.8 < u.sigma < 1.2  # weighted residuals have unit variance
    # the standard deviations describe the actual errors: named base parameters of the truth
    K, _, _ = sysid.named_base(res["wls"].base, sysid.parameter_names(model()))
    true = np.concatenate([K @ TRUE_PI.ravel(), META["viscous"], META["coulomb"], np.zeros(7)])
    z = (u.values - true) / u.std
    assert 0.3 < np.mean(z**2) < 3 and np.max(np.abs(z)) < 5, z
    well = u.relative_std < 2
    assert well.sum() >= 20
    assert np.all(np.abs(u.values - true)[well] < 0.1 * np.abs(true[well]))
    # the data cannot see the first link's mass (vertical first axis) but see the last link's inertia
    share = res["wls"].info["data_share"]
    assert (
        share.per_body["panda_link1"]["mass"] < 0.1 and share.source(share.per_body["panda_link1"]["mass"]) == "prior"
    )
    assert share.per_body["panda_link7"]["inertia"] > 0.9
    assert "panda_link1" in share.table()
    # the same quantities for unweighted least squares
    ols = res["wls"].info["ols"]
    assert (
        ols.method == "ls"
        and ols.uncertainty.n_base == r
        and ols.uncertainty.sigma == pytest.approx(ols.info["sigma"], rel=1e-6)
    )
    np.testing.assert_allclose(1 / res["wls"].info["weights"], ols.info["sigma_joint"])


def test_friction_models():
    qd = np.linspace(-1, 1, 11)[:, None] * np.array([1.0, 0.5])
    fm = sysid.friction_model("stribeck+offset", stribeck_velocity=0.2)
    assert fm.terms == ("viscous", "coulomb", "stribeck", "offset") and fm.eps == pytest.approx(0.02)
    f = fm.features(qd)
    s = np.tanh(qd / 0.02)
    np.testing.assert_allclose(f[..., 2], s * np.exp(-((qd / 0.2) ** 2)))
    np.testing.assert_allclose(f[..., 1], s)
    np.testing.assert_allclose(f[..., 3], 1.0)
    assert sysid.friction_model(True).terms == ("viscous", "coulomb") and sysid.friction_model(True).eps == 0
    assert sysid.friction_model(None) is None
    with pytest.raises(ValueError):
        sysid.friction_model("coulomb+viscous")
    tau = sysid.friction_torque(fm, np.arange(8.0), qd)
    np.testing.assert_allclose(tau[:, 0], f[:, 0] @ np.array([0.0, 2, 4, 6]))
    # friction columns are filtered like tau (parallel filtering) when the data were filtered
    train, res = fitted()
    cols = sysid.friction_columns(sysid.friction_model(FRICTION), train)
    pre = train.preprocessing
    sign = scipy.signal.sosfiltfilt(pre.sos, np.sign(pre.qd_full), axis=0, padlen=pre.edge)[pre.index]
    np.testing.assert_allclose(cols[:, np.arange(7), 7 + np.arange(7)], sign, atol=1e-12)
    # a Stribeck term the data do not contain is estimated near zero
    st = sysid.identify_ls(model(), train, friction="stribeck", base=res["wls"].base)
    unc = dict(zip(st.uncertainty.names, st.uncertainty.std))
    for j, name in enumerate(model().joint_names):
        assert abs(st.friction["stribeck"][j]) < 4 * unc[f"{name}.stribeck"] + 0.02


def _printed(out, label):
    return [ln for ln in out.splitlines() if ln.startswith(label)]


def test_cli_identify_recorded(tmp_path, capsys):
    out = str(tmp_path / "identified.urdf")
    rc = main(
        [
            "identify",
            URDF,
            TRAIN,
            "--test",
            HELDOUT,
            "--out",
            out,
            "--friction",
            "--offset",
            "--mass-range",
            "0.5:1.5",
            "--total-mass",
            str(TOTAL_MASS),
            "--steps",
            "300",
        ]
    )
    cap = capsys.readouterr()
    assert rc == 0, cap.err
    train, _ = fitted()
    pre = train.preprocessing
    line = _printed(cap.out, "  filter: butterworth")[0]
    nums = dict(re.findall(r"(cut-off|bandwidth|factor|decimation|edge|order) ([0-9.]+)", line))
    assert float(nums["cut-off"]) == pytest.approx(pre.cutoff) and float(nums["bandwidth"]) == pytest.approx(
        pre.bandwidth
    )
    assert (int(nums["order"]), int(nums["decimation"]), int(nums["edge"])) == (4, pre.decimation, pre.edge)
    assert "parallel filtering" in cap.out and "weighted least squares" in cap.out
    assert re.search(r"condition number of the base regressor: [0-9.]+; poorly excited \(relative std > 10%\)", cap.out)
    before, wls, grad = map(float, _printed(cap.out, "all ")[0].split()[1:])
    assert wls < before / 50 and grad < before / 50
    ident = jaxdyn.load_urdf(out, dtype=jnp.float64)
    lo, hi = bounds().T
    assert np.all((np.asarray(ident.mass) > lo) & (np.asarray(ident.mass) < hi))
    assert rigid_rmse(jaxdyn.inertial_parameters(ident)) < 0.5 * SIGMA_TAU
    # overrides are printed as used
    rc = main(
        [
            "identify",
            URDF,
            TRAIN,
            "--out",
            str(tmp_path / "o.urdf"),
            "--method",
            "ls",
            "--unweighted",
            "--cutoff",
            "6",
            "--filter-order",
            "3",
            "--decimate",
            "25",
            "--edge",
            "400",
            "--friction",
        ]
    )
    cap = capsys.readouterr()
    assert (
        "order 3, cut-off 6 Hz (given)" in cap.out
        and "decimation 25 (1000 Hz -> 40 Hz); 400 samples dropped" in cap.out
    )
    assert rc == 3  # least squares alone is not physically consistent here: no URDF
    assert main(["identify", URDF, TRAIN, "--out", str(tmp_path / "o.urdf"), "--mass-bounds", "nolink=1:2"]) == 2
    assert "'nolink' is not a body" in capsys.readouterr().err


def test_excitation_design_reduces_condition_number_and_respects_limits(tmp_path, capsys):
    acc = [15.0, 7.5, 10.0, 12.5, 15.0, 20.0, 20.0]  # the Panda's published acceleration limits
    kw = dict(n_harmonics=5, base_frequency=0.1, n_samples=40, steps=100)
    res = sysid.optimize_excitation(model(), acceleration_limit=acc, **kw)
    assert res.cond_final < 0.5 * res.cond_initial, (res.cond_initial, res.cond_final)
    assert all(v <= 0 for v in res.violation.values()), res.violation
    # the library's own regressor agrees on the condition number
    traj = res.trajectory
    t = np.arange(40) * traj.period / 40
    q, qd, qdd = traj.evaluate(t)
    Y, _ = sysid.regressor_rows(model(), sysid.SysIdData(q, qd, qdd, np.zeros_like(q), t, model().joint_names))
    B = sysid.structural_base(model())[0]
    sv = np.linalg.svd(Y.reshape(-1, Y.shape[-1]) @ B.T, compute_uv=False)
    assert sv[0] / sv[-1] == pytest.approx(res.cond_final, rel=1e-6)
    # limits on a dense grid, against the URDF's own limits; at rest at both ends
    m = model()
    tg = np.linspace(0, traj.period, 20001)
    q, qd, qdd = traj.evaluate(tg)
    assert np.all(q >= np.asarray(m.q_lower)) and np.all(q <= np.asarray(m.q_upper))
    assert np.all(np.abs(qd) <= np.asarray(m.velocity_limit)) and np.all(np.abs(qdd) <= np.array(acc))
    np.testing.assert_allclose(qd[[0, -1]], 0, atol=1e-12)
    np.testing.assert_allclose(qdd[[0, -1]], 0, atol=1e-12)
    # the command line writes a CSV a controller can play and a plot
    csv, png = str(tmp_path / "excite.csv"), str(tmp_path / "excite.png")
    rc = main(
        [
            "excite",
            URDF,
            "--out",
            csv,
            "--plot",
            png,
            "--samples",
            "40",
            "--steps",
            "100",
            "--rate",
            "100",
            "--acc-limit",
            *map(str, acc),
        ]
    )
    cap = capsys.readouterr()
    assert rc == 0, cap.err
    c0, c1 = map(float, re.search(r"random start ([0-9.e+]+) -> optimised ([0-9.e+]+)", cap.out).groups())
    assert c1 < 0.5 * c0 and c0 == pytest.approx(res.cond_initial, rel=1e-3)
    with open(csv, encoding="utf-8") as fh:
        lines = [ln for ln in fh if not ln.startswith("#")]
    header = lines[0].strip().split(",")
    assert header == ["t"] + [f"{k}:{j}" for k in ("q", "qd", "qdd") for j in m.joint_names]
    table = np.loadtxt(lines[1:], delimiter=",")
    assert table.shape == (1000, 1 + 3 * 7)
    back = sysid.read_trajectory_csv(csv)
    np.testing.assert_allclose(np.concatenate(back.evaluate(table[:, 0]), 1), table[:, 1:], rtol=1e-8, atol=1e-8)
    assert np.all(table[:, 1:8] >= np.asarray(m.q_lower)) and np.all(table[:, 1:8] <= np.asarray(m.q_upper))
    with open(png, "rb") as fh:
        assert fh.read(8) == b"\x89PNG\r\n\x1a\n"
    assert main(["excite", URDF, "--out", csv, "--acc-limit", "1", "2"]) == 2  # csv exists: refused
    assert "exists; give --force" in capsys.readouterr().err
    assert main(["excite", URDF, "--out", csv, "--force", "--acc-limit", "1", "2"]) == 2
    assert "--acc-limit: give one value or 7" in capsys.readouterr().err
