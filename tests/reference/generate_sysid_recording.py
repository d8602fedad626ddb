"""Generate the synthetic robot recordings used by ``tests/test_sysid_recorded.py``.

Pinocchio (not jaxdyn) computes every torque. The data are what a torque-controlled arm logs:
encoder positions at 1 kHz with white noise, joint torques with white noise, no velocities or
accelerations; the joints have viscous and Coulomb friction; the "true" inertial parameters
differ from the nominal URDF that an identification starts from.

How to run (needs Pinocchio, which jaxdyn itself does not depend on)::

    python tests/reference/generate_sysid_recording.py [--out DIR]

Output (default ``tests/data/sysid/``, about 1.3 MB; fixed seeds, so reruns with the same
Pinocchio/numpy give the same numbers):

``panda_arm.urdf``
    The shipped ``jaxdyn/robots/panda.urdf`` with the two finger joints made ``fixed`` (a 7-dof
    arm; the hand and fingers are rigidly attached to link 7, as in Gaz et al. 2019). This is
    the *nominal* model an identification starts from.
``train.npz``, ``heldout.npz``
    Two recordings, 10 s at 1 kHz each, of two different finite-Fourier-series excitations
    (Swevers et al. 1997): ``q`` (encoder positions + N(0, 1e-4 rad)), ``tau`` (rigid-body
    torques of the true model + viscous + Coulomb friction + N(0, 0.1 N m)), ``dt``,
    ``joint_names``. Stored as float32 (round-off far below the noise).
``heldout_truth.npz``
    The held-out trajectory without noise at 100 Hz: exact ``q``, ``qd``, ``qdd`` and ``tau`` =
    the TRUE RIGID-BODY torques (no friction, no noise), ``dt``, ``joint_names``: the reference
    that identified models are scored against.
``truth.json``
    True inertial parameters per body (``[m, m c, I about the joint origin (xx, xy, yy, xz,
    yz, zz)]``, body = joint frame, Pinocchio's order, which is also jaxdyn's), true and nominal
    masses, friction coefficients, noise levels, excitation description.

The truth: for every link, mass x (1 +- U(0.2, 0.3)) (random sign), centre of mass moved by
N(0, (0.3 |c| / sqrt(3) + 5 mm)^2) per axis, rotational inertia about the COM with its principal
moments scaled by the mass factor times U(0.7, 1.3) each and its principal axes rotated by up
to ~0.2 rad (redrawn until the triangle inequalities hold, so the body is physically consistent).
Friction per joint: viscous U(0.1, 0.4) N m s/rad, Coulomb U(0.2, 0.6) N m.

Excitation: per joint ``q_j(t) = q0_j + sum_l a_jl/(l w) sin(l w t) - b_jl/(l w) cos(l w t)``,
``w = 2 pi 0.1 Hz``, 5 harmonics (highest 0.5 Hz), ``a, b ~ N(0, 1)``, scaled per joint so that
the motion spans 80 % of the joint range around its centre, at most 60 % of the velocity limit
and 60 % of the Panda's published acceleration limits; exactly one period (10 s).
"""

from __future__ import annotations

import argparse
import json
import os
import xml.etree.ElementTree as ET

import numpy as np
import pinocchio as pin

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SRC_URDF = os.path.join(ROOT, "jaxdyn", "robots", "panda.urdf")
DEFAULT_OUT = os.path.join(ROOT, "tests", "data", "sysid")

RATE = 1000.0  # Hz
DURATION = 10.0  # s
SIGMA_Q = 1e-4  # rad
SIGMA_TAU = 0.1  # N m
BASE_FREQUENCY = 0.1  # Hz
HARMONICS = 5
TRUTH_RATE = 100.0  # Hz, the held-out reference
# Franka Panda joint acceleration limits [rad/s^2] (Franka Control Interface documentation)
ACC_LIMIT = np.array([15.0, 7.5, 10.0, 12.5, 15.0, 20.0, 20.0])


def arm_urdf() -> str:
    """The shipped panda URDF with the finger joints fixed."""
    tree = ET.parse(SRC_URDF)
    root = tree.getroot()
    for j in root.findall("joint"):
        if j.get("name") in ("panda_finger_joint1", "panda_finger_joint2"):
            j.set("type", "fixed")
            for tag in ("axis", "limit", "mimic", "dynamics"):
                for child in j.findall(tag):
                    j.remove(child)
    return ET.tostring(root, encoding="unicode") + "\n"


def rotation(v):
    th = np.linalg.norm(v)
    if th == 0:
        return np.eye(3)
    k = v / th
    K = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    return np.eye(3) + np.sin(th) * K + (1 - np.cos(th)) * K @ K


def perturb(model, rng):
    """A copy of ``model`` with every body's inertia perturbed (see the module docstring)."""
    true = model.copy()
    for i in range(1, model.njoints):
        I = model.inertias[i]
        m, c, Ic = I.mass, np.array(I.lever), np.array(I.inertia)
        k = 1.0 + rng.choice([-1.0, 1.0]) * rng.uniform(0.2, 0.3)
        c2 = c + rng.normal(0.0, 0.3 * np.linalg.norm(c) / np.sqrt(3) + 0.005, 3)
        lam, R = np.linalg.eigh(Ic)
        while True:
            lam2 = k * lam * rng.uniform(0.7, 1.3, 3)
            if all(lam2[a] + lam2[b] >= lam2[d] for a, b, d in ((0, 1, 2), (1, 2, 0), (0, 2, 1))):
                break
        R2 = rotation(rng.uniform(-0.2, 0.2, 3)) @ R
        Ic2 = R2 @ np.diag(lam2) @ R2.T
        true.inertias[i] = pin.Inertia(k * m, c2, 0.5 * (Ic2 + Ic2.T))
    return true


def fourier(rng, lo, hi, vmax, amax, t):
    """Exact ``(q, qd, qdd)`` of a random finite Fourier series within 80 % of the joint range and
    60 % of the velocity and acceleration limits."""
    n = lo.shape[0]
    w = 2 * np.pi * BASE_FREQUENCY * np.arange(1, HARMONICS + 1)
    a = rng.standard_normal((n, HARMONICS))
    b = rng.standard_normal((n, HARMONICS))

    def series(tt):
        s, c = np.sin(np.outer(tt, w)), np.cos(np.outer(tt, w))
        return s @ (a / w).T - c @ (b / w).T, c @ a.T + s @ b.T, -s @ (a * w).T + c @ (b * w).T

    grid = np.linspace(0.0, 1.0 / BASE_FREQUENCY, 20000, endpoint=False)
    o, od, odd = series(grid)
    scale = np.minimum.reduce(
        [0.8 * (hi - lo) / (o.max(0) - o.min(0)), 0.6 * vmax / np.abs(od).max(0), 0.6 * amax / np.abs(odd).max(0)]
    )
    q0 = 0.5 * (lo + hi) - scale * 0.5 * (o.max(0) + o.min(0))
    q, qd, qdd = series(t)
    return q0 + scale * q, scale * qd, scale * qdd


def rigid_torques(model, q, qd, qdd):
    data = model.createData()
    return np.array([pin.rnea(model, data, q[k], qd[k], qdd[k]) for k in range(q.shape[0])])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=DEFAULT_OUT)
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)

    urdf = arm_urdf()
    with open(os.path.join(args.out, "panda_arm.urdf"), "w", encoding="utf-8") as fh:
        fh.write(urdf)
    nominal = pin.buildModelFromXML(urdf)
    assert nominal.nq == nominal.nv == 7, nominal
    names = [nominal.names[i] for i in range(1, nominal.njoints)]
    lo, hi = np.array(nominal.lowerPositionLimit), np.array(nominal.upperPositionLimit)
    vmax = np.array(nominal.velocityLimit)

    rng = np.random.default_rng(20240607)
    true = perturb(nominal, rng)
    fv = rng.uniform(0.1, 0.4, 7)
    fc = rng.uniform(0.2, 0.6, 7)
    for i in range(1, true.njoints):  # every true body is physically consistent
        I = true.inertias[i]
        ev = np.linalg.eigvalsh(I.inertia)
        assert I.mass > 0 and ev[0] > 0 and ev[0] + ev[1] >= ev[2] * (1 - 1e-12), (i, ev)

    n_samples = int(round(DURATION * RATE))
    t = np.arange(n_samples) / RATE
    step = int(round(RATE / TRUTH_RATE))
    meta_traj = {}
    for name, seed in (("train", 1), ("heldout", 2)):
        traj_rng = np.random.default_rng(seed)
        q, qd, qdd = fourier(traj_rng, lo, hi, vmax, ACC_LIMIT, t)
        assert np.all(q >= lo) and np.all(q <= hi) and np.all(np.abs(qd) <= vmax)
        tau_rb = rigid_torques(true, q, qd, qdd)
        tau = tau_rb + fv * qd + fc * np.sign(qd)
        noise_rng = np.random.default_rng(100 + seed)
        q_meas = q + noise_rng.normal(0.0, SIGMA_Q, q.shape)
        tau_meas = tau + noise_rng.normal(0.0, SIGMA_TAU, tau.shape)
        np.savez_compressed(
            os.path.join(args.out, f"{name}.npz"),
            q=q_meas.astype(np.float32),
            tau=tau_meas.astype(np.float32),
            dt=np.float64(1.0 / RATE),
            joint_names=np.array(names),
        )
        meta_traj[name] = {
            "seed": seed,
            "max_abs_qd": np.abs(qd).max(0).tolist(),
            "max_abs_qdd": np.abs(qdd).max(0).tolist(),
            "rms_rigid_torque": np.sqrt(np.mean(tau_rb**2, 0)).tolist(),
            "rms_friction_torque": np.sqrt(np.mean((tau - tau_rb) ** 2, 0)).tolist(),
        }
        if name == "heldout":
            np.savez_compressed(
                os.path.join(args.out, "heldout_truth.npz"),
                q=q[::step],
                qd=qd[::step],
                qdd=qdd[::step],
                tau=tau_rb[::step],
                dt=np.float64(step / RATE),
                joint_names=np.array(names),
            )
        # Pinocchio's own regressor reproduces its RNEA with the true parameters (a self-check)
        data = true.createData()
        pi = np.concatenate([true.inertias[i].toDynamicParameters() for i in range(1, true.njoints)])
        for k in (0, n_samples // 3, n_samples - 1):
            Y = pin.computeJointTorqueRegressor(true, data, q[k], qd[k], qdd[k])
            assert np.allclose(Y @ pi, tau_rb[k], atol=1e-10)

    meta = {
        "generator": "tests/reference/generate_sysid_recording.py",
        "pinocchio": pin.__version__,
        "robot": "panda_arm.urdf (jaxdyn/robots/panda.urdf, finger joints fixed)",
        "joint_names": names,
        "rate_hz": RATE,
        "duration_s": DURATION,
        "sigma_q_rad": SIGMA_Q,
        "sigma_tau_nm": SIGMA_TAU,
        "truth_rate_hz": TRUTH_RATE,
        "excitation": {
            "base_frequency_hz": BASE_FREQUENCY,
            "harmonics": HARMONICS,
            "highest_harmonic_hz": BASE_FREQUENCY * HARMONICS,
            "acceleration_limit": ACC_LIMIT.tolist(),
            **meta_traj,
        },
        "true_parameters": [true.inertias[i].toDynamicParameters().tolist() for i in range(1, true.njoints)],
        "true_masses": [true.inertias[i].mass for i in range(1, true.njoints)],
        "nominal_masses": [nominal.inertias[i].mass for i in range(1, nominal.njoints)],
        "viscous": fv.tolist(),
        "coulomb": fc.tolist(),
    }
    with open(os.path.join(args.out, "truth.json"), "w", encoding="utf-8") as fh:
        json.dump(meta, fh, indent=1)
    total = sum(os.path.getsize(os.path.join(args.out, f)) for f in os.listdir(args.out))
    print(f"wrote {sorted(os.listdir(args.out))} to {args.out} ({total / 1e6:.2f} MB)")
    print("true/nominal mass:", np.round(np.array(meta["true_masses"]) / np.array(meta["nominal_masses"]), 3))


if __name__ == "__main__":
    main()
