"""Stored Pinocchio values for published URDFs with imperfect inertias (tests/test_urdf_published.py).

    pip install pin numpy                                   # Pinocchio 4.x, not a jaxdyn dependency
    python tests/reference/generate_pinocchio_published.py [--out tests/data/pinocchio_published]

The URDFs in tests/data/urdf_published/ are copies of files from example-robot-data (their
licences in that folder's README). Pinocchio loads them as written, inconsistent inertias
included, so jaxdyn's ``inertia="warn"`` must reproduce its numbers.

Per case ``{name}.npz``: ``joint_names`` (Pinocchio's order, universe excluded), ``joint_nv``,
and for K random states, in jaxdyn's conventions but Pinocchio's joint order:
``q`` (continuous joints as the angle; free flyer ``[x, y, z, qw, qx, qy, qz]``), ``v``, ``a``,
``tau`` (free flyer velocity ``[omega; v]`` in the base frame), and ``M`` (``crba``), ``rnea``
and ``aba`` permuted the same way. Gravity ``[0, 0, -9.81]``.
"""

from __future__ import annotations

import argparse
import os

import numpy as np
import pinocchio as pin

HERE = os.path.dirname(os.path.abspath(__file__))
URDFS = os.path.join(HERE, "..", "data", "urdf_published")
CASES = {  # name -> floating base
    "allegro_left_hand": False,
    "anymal_c": True,
    "bolt": True,
    "hyq_no_sensors": True,
    "pr2": False,
    "tiago": False,
    "romeo_small": True,
}
K = 3


def sample(model, rng):
    """(q_pin, q_jaxdyn) in Pinocchio's joint order."""
    qp, qj = [], []
    for j in range(1, model.njoints):
        jm = model.joints[j]
        if jm.nq == 7:
            quat = rng.normal(size=4)
            quat /= np.linalg.norm(quat)  # [w, x, y, z]
            pos = rng.uniform(-1, 1, 3)
            qp += [*pos, *quat[1:], quat[0]]
            qj += [*pos, *quat]
        elif jm.nq == 2:  # continuous (cos, sin)
            th = rng.uniform(-np.pi, np.pi)
            qp += [np.cos(th), np.sin(th)]
            qj += [th]
        else:
            lo, hi = model.lowerPositionLimit[jm.idx_q], model.upperPositionLimit[jm.idx_q]
            if not (np.isfinite(lo) and np.isfinite(hi) and hi > lo) or hi - lo > 1e6:
                lo, hi = -1.0, 1.0
            x = rng.uniform(lo, hi)
            qp += [x]
            qj += [x]
    return np.array(qp), np.array(qj)


def to_jaxdyn_v(model, x):
    """Tangent vectors: Pinocchio's free-flyer [v; omega] -> [omega; v]."""
    x = np.array(x, dtype=np.float64)
    if model.joints[1].nq == 7:
        x[0:6] = np.concatenate([x[3:6], x[0:3]])
    return x


def generate(name, floating, seed):
    path = os.path.join(URDFS, f"{name}.urdf")
    model = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if floating else pin.buildModelFromUrdf(path)
    model.gravity.linear[:] = (0.0, 0.0, -9.81)
    data = model.createData()
    rng = np.random.default_rng(seed)
    out = {k: [] for k in ("q", "v", "a", "tau", "M", "rnea", "aba")}
    for _ in range(K):
        qp, qj = sample(model, rng)
        v = rng.normal(0, 1, model.nv)
        a = rng.normal(0, 1, model.nv)
        tau = rng.normal(0, 1, model.nv)
        M = pin.crba(model, data, qp).copy()
        M = np.triu(M) + np.triu(M, 1).T
        rnea = pin.rnea(model, data, qp, v, a).copy()
        aba = pin.aba(model, data, qp, v, tau).copy()
        # self-check: M a + nle = rnea
        nle = pin.nonLinearEffects(model, data, qp, v)
        assert np.allclose(M @ a + nle, rnea, rtol=1e-9, atol=1e-9 * max(1.0, np.abs(rnea).max()))
        P = np.eye(model.nv)
        if floating:
            P[0:6] = P[np.r_[3:6, 0:3]]
        out["q"].append(qj)
        out["v"].append(P @ v)
        out["a"].append(P @ a)
        out["tau"].append(P @ tau)
        out["M"].append(P @ M @ P.T)
        out["rnea"].append(P @ rnea)
        out["aba"].append(P @ aba)
    arrays = {k: np.array(v) for k, v in out.items()}
    arrays["joint_names"] = np.array(list(model.names)[1:])
    arrays["joint_nv"] = np.array([model.joints[j].nv for j in range(1, model.njoints)])
    arrays["pinocchio_version"] = np.array(pin.__version__)
    arrays["floating"] = np.array(floating)
    return arrays


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(HERE, "..", "data", "pinocchio_published"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for i, (name, floating) in enumerate(CASES.items()):
        arrays = generate(name, floating, seed=100 + i)
        np.savez_compressed(os.path.join(args.out, f"{name}.npz"), **arrays)
        print(name, "nv", arrays["v"].shape[1])


if __name__ == "__main__":
    main()
