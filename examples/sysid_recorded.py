"""Identification of a Franka Panda from data as a robot records it: before and after.

The recordings in ``tests/data/sysid`` (written by ``tests/reference/generate_sysid_recording.py``
with Pinocchio) hold what a torque-controlled arm logs: encoder positions at 1 kHz (noise
1e-4 rad) and joint torques (noise 0.1 N m), no velocities or accelerations; the joints have
viscous and Coulomb friction; the true inertial parameters are the shipped URDF's perturbed by
20-30 %. The held-out recording is a different excitation; its true rigid-body torques are the
reference.

* **before**: the pipeline of earlier jaxdyn versions, run through today's options:
  Savitzky-Golay derivatives (31 samples), torques unfiltered, ordinary least squares with
  viscous + Coulomb friction, the log-Cholesky fit without bounds (``reg=1e-6``, no
  preconditioning, 500 L-BFGS steps).
* **after**: zero-phase Butterworth filtering with the cut-off from the excitation bandwidth,
  central differences, parallel filtering of tau and friction columns, decimation; weighted
  least squares with viscous + Coulomb + offset friction; the consistent fit with mass bounds
  (0.5 to 1.5 times nominal) and the total mass.
* **excitation design**: :func:`jaxdyn.sysid.optimize_excitation` on the same arm.

Run: ``python examples/sysid_recorded.py`` (about a minute on 2 CPU cores). Output: PNGs in
``examples/output/`` (``sysid_recorded_*.png``) and ``examples/output/sysid_recorded_excitation.csv``,
or in ``--out DIR``. ``--quick``: a reduced run (fewer L-BFGS and excitation-design steps).
"""

import argparse
import json
import os
import sys
import time

import jax

jax.config.update("jax_enable_x64", True)  # a program may choose float64; the library never does

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import jaxdyn  # noqa: E402
from jaxdyn import sysid  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "tests", "data", "sysid")
OUT = os.path.join(ROOT, "examples", "output")
ACC_LIMIT = [15.0, 7.5, 10.0, 12.5, 15.0, 20.0, 20.0]  # Panda, rad/s^2
# L-BFGS steps of the consistent fits and gradient steps of the excitation design: full and --quick runs
FULL = dict(steps=500, excitation_steps=300)
QUICK = dict(steps=60, excitation_steps=40)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--quick", action="store_true", help="reduced size: " + ", ".join(f"{k}={v}" for k, v in QUICK.items())
    )
    ap.add_argument("--out", default=OUT, help="output folder (default: examples/output)")
    args = ap.parse_args(argv)
    size = QUICK if args.quick else FULL
    out = args.out
    t0 = time.time()
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(DATA, "truth.json"), encoding="utf-8") as fh:
        meta = json.load(fh)
    sigma = meta["sigma_tau_nm"]
    model = jaxdyn.load_urdf(os.path.join(DATA, "panda_arm.urdf"), dtype=jnp.float64)
    truth = sysid.load_data(os.path.join(DATA, "heldout_truth.npz"), model)
    pi_true = np.array(meta["true_parameters"])
    pi0 = np.asarray(jaxdyn.inertial_parameters(model))
    rows = sysid.regressor_rows(model, truth)
    rigid = lambda pi: sysid.predict_torques(pi, truth, model, rows=rows)  # noqa: E731
    rmse = lambda pi: float(np.sqrt(np.mean((rigid(pi) - truth.tau) ** 2)))  # noqa: E731
    train_path = os.path.join(DATA, "train.npz")

    # ---- before ------------------------------------------------------------------------------
    old = sysid.load_data(train_path, model, filter="savgol", window=31, filter_tau=False)
    before = sysid.identify(
        model, old, "both", friction=True, weighted=False, steps=size["steps"], reg=1e-6, precondition=0
    )
    # ---- after -------------------------------------------------------------------------------
    new = sysid.load_data(train_path, model)
    m0 = np.asarray(model.mass)
    bounds = np.stack([0.5 * m0, 1.5 * m0], 1)
    total = float(np.sum(meta["true_masses"]))
    after = sysid.identify(
        model,
        new,
        "both",
        friction="coulomb+offset",
        weighted=True,
        steps=size["steps"],
        mass_bounds=bounds,
        total_mass=total,
        progress=sysid.ProgressBar("consistent fit", stream=sys.stderr),
    )
    print(f"signal processing (after): {new.preprocessing.describe()}")
    fits = {
        "nominal": pi0,
        "before: OLS": before["ls"].parameters,
        "before: consistent": before["gradient"].parameters,
        "after: WLS": after["wls"].parameters,
        "after: consistent": after["gradient"].parameters,
    }
    print(f"\nheld-out rigid-body torque RMSE against the truth [N m] (torque noise {sigma}):")
    for k, pi in fits.items():
        per = np.sqrt(np.mean((rigid(pi) - truth.tau) ** 2, 0))
        print(f"  {k:<20} {rmse(pi):8.4f}   per joint {np.array2string(per, precision=4)}")
    print("\nmasses [kg]:")
    print(f"  {'body':<13}{'nominal':>9}{'true':>9}{'before':>9}{'after':>9}   bounds")
    for b, name in enumerate(model.body_names):
        print(
            f"  {name:<13}{m0[b]:>9.3f}{meta['true_masses'][b]:>9.3f}{before['gradient'].masses[b]:>9.3f}"
            f"{after['gradient'].masses[b]:>9.3f}   [{bounds[b, 0]:.3f}, {bounds[b, 1]:.3f}]"
        )
    print(f"  total: true {total:.3f}, after {after['gradient'].masses.sum():.3f}")
    u = after["wls"].uncertainty
    print(
        f"\nafter, weighted least squares: condition number {u.cond:.4g}; {len(u.poorly_excited)} of {len(u.names)} "
        f"parameters with relative std > {u.threshold:g}% (poorly excited)"
    )
    print(after["wls"].info["data_share"].table())

    # ---- excitation design ---------------------------------------------------------------------
    ex = sysid.optimize_excitation(
        model,
        n_harmonics=5,
        base_frequency=0.1,
        n_samples=100,
        steps=size["excitation_steps"],
        acceleration_limit=ACC_LIMIT,
        progress=sysid.ProgressBar("excitation", stream=sys.stderr),
    )
    print(
        f"\nexcitation design: condition number of the base regressor {ex.cond_initial:.4g} (random start) -> "
        f"{ex.cond_final:.4g}; worst limit use {ex.violation}"
    )
    sysid.write_trajectory_csv(os.path.join(out, "sysid_recorded_excitation.csv"), ex, rate=100.0)
    sysid.plot_excitation(os.path.join(out, "sysid_recorded_excitation.png"), ex)
    # record both trajectories on the true robot (here simulated with jaxdyn: the truth's RNEA, the
    # same friction and noise as the stored recordings) and identify from each
    truth_model = jaxdyn.model_with_parameters(model, jnp.asarray(pi_true))
    rnea = jax.jit(jax.vmap(jaxdyn.rnea, in_axes=(None, 0, 0, 0)))
    rng = np.random.default_rng(7)
    print("identification from one period of each excitation (simulated recording, same noise and friction):")
    for label, traj in (("random start", ex.initial), ("optimised", ex.trajectory)):
        t, q, qd, qdd = traj.sample(1000.0)
        tau = (
            np.asarray(rnea(truth_model, q, qd, qdd))
            + np.array(meta["viscous"]) * qd
            + np.array(meta["coulomb"]) * np.sign(qd)
            + rng.normal(0, sigma, q.shape)
        )
        rec = sysid.load_data({"q": q + rng.normal(0, meta["sigma_q_rad"], q.shape), "tau": tau, "dt": 1e-3}, model)
        r = sysid.identify_wls(model, rec, friction="coulomb+offset")
        base = r.uncertainty.relative_std[: r.uncertainty.n_base]
        print(
            f"  {label:<13} cond {r.info['cond']:8.4g}; median relative std of the base parameters "
            f"{np.median(base):6.3g}%; {np.sum(base > r.uncertainty.threshold)} of {len(base)} above "
            f"{r.uncertainty.threshold:g}%; held-out rigid-body RMSE {rmse(r.parameters):.4f} N m"
        )

    plots(model, meta, truth, rigid, fits, before, after, new, old, bounds, out)
    print(f"\nplots in {out} (sysid_recorded_*.png)  [{time.time() - t0:.0f} s]")


def plots(model, meta, truth, rigid, fits, before, after, new, old, bounds, out):
    from matplotlib.figure import Figure
    from scipy.signal import periodogram

    # 1. held-out rigid-body torques: truth and estimates, and their errors
    fig = Figure(figsize=(11, 8), tight_layout=True)
    t = truth.t
    for i, j in enumerate((1, 3, 5)):
        ax = fig.add_subplot(3, 2, 2 * i + 1)
        ax.plot(t, truth.tau[:, j], color="0.6", lw=2.5, label="truth")
        for k, st in (("nominal", ":"), ("before: consistent", "--"), ("after: consistent", "-")):
            ax.plot(t, rigid(fits[k])[:, j], ls=st, lw=1.0, label=k)
        ax.set_ylabel(f"{model.joint_names[j]} [N m]", fontsize=8)
        ax.legend(fontsize=7)
        ax = fig.add_subplot(3, 2, 2 * i + 2)
        for k in ("before: OLS", "before: consistent", "after: WLS", "after: consistent"):
            e = rigid(fits[k])[:, j] - truth.tau[:, j]
            ax.plot(t, e, lw=0.8, label=f"{k} (RMSE {np.sqrt(np.mean(e**2)):.3g})")
        ax.axhspan(-meta["sigma_tau_nm"] / 2, meta["sigma_tau_nm"] / 2, color="g", alpha=0.1, label="half the noise")
        ax.set_ylabel("error [N m]", fontsize=8)
        ax.set_yscale("symlog", linthresh=0.01)
        ax.legend(fontsize=6)
    fig.suptitle("held-out trajectory: rigid-body torques of the identified models against the truth")
    fig.savefig(os.path.join(out, "sysid_recorded_torques.png"), dpi=80)

    # 2. masses
    fig = Figure(figsize=(9, 3.8), tight_layout=True)
    ax = fig.add_subplot()
    x = np.arange(model.nb)
    m0 = np.asarray(model.mass)
    ax.bar(x - 0.3, m0, 0.2, label="nominal (prior)")
    ax.bar(x - 0.1, meta["true_masses"], 0.2, label="true")
    ax.bar(x + 0.1, before["gradient"].masses, 0.2, label="before (consistent fit)")
    ax.bar(x + 0.3, after["gradient"].masses, 0.2, label="after (bounded, total mass)")
    ax.errorbar(
        x + 0.3,
        0.5 * (bounds[:, 0] + bounds[:, 1]),
        yerr=0.5 * (bounds[:, 1] - bounds[:, 0]),
        fmt="none",
        ecolor="k",
        capsize=3,
        lw=0.8,
        label="bounds",
    )
    ax.set_xticks(x, model.body_names, fontsize=8)
    ax.set_ylabel("mass [kg]")
    ax.legend(fontsize=7)
    fig.savefig(os.path.join(out, "sysid_recorded_masses.png"), dpi=80)

    # 3. uncertainty of the named base parameters and friction coefficients
    u = after["wls"].uncertainty
    fig = Figure(figsize=(11, 4.2), tight_layout=True)
    ax = fig.add_subplot()
    k = np.arange(len(u.names))
    ax.bar(k, u.relative_std, color=["C3" if n in u.poorly_excited else "C0" for n in u.names])
    ax.axhline(u.threshold, color="k", ls="--", lw=0.8, label=f"threshold {u.threshold:g}%")
    ax.set_yscale("log")
    ax.set_xticks(k, u.names, rotation=90, fontsize=5)
    ax.set_ylabel("relative std [%]")
    ax.set_title(f"weighted least squares: relative standard deviations (cond {u.cond:.3g}); red: poorly excited")
    ax.legend(fontsize=7)
    fig.savefig(os.path.join(out, "sysid_recorded_uncertainty.png"), dpi=80)

    # 4. the filter: spectrum of q and the acceleration estimates
    with np.load(os.path.join(DATA, "heldout.npz")) as z:
        q = z["q"].astype(np.float64)
    pre = new.preprocessing
    f, P = periodogram(q, fs=pre.rate, window="blackmanharris", detrend="linear", axis=0)
    fig = Figure(figsize=(11, 4), tight_layout=True)
    ax = fig.add_subplot(1, 2, 1)
    ax.loglog(f[1:], P[1:, 1], lw=0.8, label=model.joint_names[1])
    ax.axvline(pre.bandwidth, color="C1", ls="--", label=f"bandwidth {pre.bandwidth:.2g} Hz")
    ax.axvline(pre.cutoff, color="C2", ls="--", label=f"cut-off {pre.cutoff:.2g} Hz")
    ax.axvline(pre.rate / pre.decimation / 2, color="C3", ls=":", label=f"Nyquist after decimation {pre.decimation}")
    ax.set_xlabel("frequency [Hz]")
    ax.set_ylabel("periodogram of q [rad^2/Hz]")
    ax.legend(fontsize=7)
    ax = fig.add_subplot(1, 2, 2)
    held_new = sysid.load_data(os.path.join(DATA, "heldout.npz"), model)
    held_old = sysid.load_data(os.path.join(DATA, "heldout.npz"), model, filter="savgol", window=31, filter_tau=False)
    sel = (truth.t > 4) & (truth.t < 6)
    ax.plot(
        held_old.t[(held_old.t > 4) & (held_old.t < 6)],
        held_old.qdd[(held_old.t > 4) & (held_old.t < 6), 1],
        lw=0.5,
        color="C3",
        label="Savitzky-Golay 31",
    )
    ax.plot(truth.t[sel], truth.qdd[sel, 1], color="0.5", lw=3, label="true")
    s2 = (held_new.t > 4) & (held_new.t < 6)
    ax.plot(held_new.t[s2], held_new.qdd[s2, 1], "o", ms=4, color="C2", label="Butterworth + central differences")
    ax.set_xlabel("t [s]")
    ax.set_ylabel(f"qdd of {model.joint_names[1]} [rad/s^2]")
    ax.legend(fontsize=7)
    fig.savefig(os.path.join(out, "sysid_recorded_filter.png"), dpi=80)


if __name__ == "__main__":
    main()
