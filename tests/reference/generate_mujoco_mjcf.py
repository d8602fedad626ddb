"""Generate MuJoCo reference values for tests/test_mjcf.py (MuJoCo is NOT a jaxdyn dependency).

    pip install mujoco            # 4.x
    python tests/reference/generate_mujoco_mjcf.py [--out tests/data/mjcf_reference]

For every model file in ``tests/data/mjcf`` (``*.xml`` and ``*/*.xml``, except the included
fragments under ``include/`` and ``*/common/``; ``meshes/ell.stl`` is written by
``make_mesh_stl.py``), MuJoCo compiles the model and, for K random
states, computes:

* ``M``: the joint-space mass matrix (``mj_fullM``, armature included);
* ``bias``: ``qfrc_bias`` (Coriolis, centrifugal and gravity forces);
* ``inverse``: ``mj_inverse``'s ``qfrc_inverse`` for a random ``qacc``;
* ``forward``: ``mj_forward``'s ``qacc`` for a random ``qfrc_applied``.

Everything that jaxdyn's ``crba`` / ``rnea`` / ``aba`` do not model is switched off on the MuJoCo
side: contacts, joint limits, equality constraints, friction loss (all constraints) and the
passive forces (springs and dampers), and the actuators (a position servo pushes even at
zero control), so ``inverse = M qacc + bias`` and
``forward = M^-1 (qfrc_applied - bias)``. All values are MuJoCo's own coordinates (a free
joint's qvel is [world linear velocity; body angular velocity]); the test converts with
``jaxdyn.io.mjcf``'s converters. float64 throughout.

Also stored, to check what the loader read: the world poses of bodies, geoms and sites
(``xpos``/``xmat``, ``geom_xpos``/``geom_xmat``, ``site_xpos``/``site_xmat``) at each state, joint names / types / ranges / limited flags,
per-dof armature, damping, frictionloss, stiffness, per-dof effort limit derived from the
actuators (the loader's rule, applied to MuJoCo's compiled actuator arrays), gravity, the
body masses and names, and the MuJoCo version.
"""

from __future__ import annotations

import argparse
import glob
import os
import zlib

import mujoco
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "data", "mjcf")
K = 4


def model_files():
    files = sorted(glob.glob(os.path.join(DATA, "*.xml")) + glob.glob(os.path.join(DATA, "*", "*.xml")))
    return [f for f in files if os.sep + "include" + os.sep not in f and os.sep + "common" + os.sep not in f]


def case_name(path):
    rel = os.path.relpath(path, DATA)
    return rel[:-4].replace(os.sep, "__")


def random_qpos(m, rng):
    q = m.qpos0.copy()
    for j in range(m.njnt):
        a = m.jnt_qposadr[j]
        t = m.jnt_type[j]
        if t == mujoco.mjtJoint.mjJNT_FREE:
            q[a : a + 3] = rng.normal(0, 1, 3)
            w = rng.normal(0, 1, 4)
            q[a + 3 : a + 7] = w / np.linalg.norm(w)
        elif t == mujoco.mjtJoint.mjJNT_BALL:
            w = rng.normal(0, 1, 4)
            q[a : a + 4] = w / np.linalg.norm(w)
        else:
            q[a] += rng.uniform(-1.0, 1.0)
    return q


def effort_limits(m):
    """Per-dof effort limit from the actuators with joint transmission: per actuator, the bound of
    its scalar force (``forcerange`` if force-limited; for a fixed gain, no bias and no
    activation dynamics, ``|gain| * max|ctrlrange|`` if control-limited; the tighter of the two)
    times ``|gear|``, summed over the actuators of a dof; then the joint's ``actuatorfrcrange``
    if limited. inf where nothing bounds the force."""
    lim = np.zeros(m.nv)
    has = np.zeros(m.nv, bool)
    for a in range(m.nu):
        if m.actuator_trntype[a] != mujoco.mjtTrn.mjTRN_JOINT:
            continue
        j = m.actuator_trnid[a, 0]
        d = m.jnt_dofadr[j]
        bound = np.inf
        if m.actuator_forcelimited[a]:
            bound = np.max(np.abs(m.actuator_forcerange[a]))
        if (
            m.actuator_ctrllimited[a]
            and m.actuator_gaintype[a] == mujoco.mjtGain.mjGAIN_FIXED
            and m.actuator_biastype[a] == mujoco.mjtBias.mjBIAS_NONE
            and m.actuator_dyntype[a] == mujoco.mjtDyn.mjDYN_NONE
        ):
            bound = min(bound, abs(m.actuator_gainprm[a, 0]) * np.max(np.abs(m.actuator_ctrlrange[a])))
        lim[d] += abs(m.actuator_gear[a, 0]) * bound
        has[d] = True
    lim[~has] = np.inf
    for j in range(m.njnt):
        if m.jnt_actfrclimited[j]:
            d = m.jnt_dofadr[j]
            n = {0: 6, 1: 3}.get(int(m.jnt_type[j]), 1)
            lim[d : d + n] = np.minimum(lim[d : d + n], np.max(np.abs(m.jnt_actfrcrange[j])))
    return lim


def run(path, seed):
    m = mujoco.MjModel.from_xml_path(path)
    m.opt.disableflags |= (
        mujoco.mjtDisableBit.mjDSBL_CONSTRAINT
        | mujoco.mjtDisableBit.mjDSBL_SPRING
        | mujoco.mjtDisableBit.mjDSBL_DAMPER
        | mujoco.mjtDisableBit.mjDSBL_ACTUATION
    )
    d = mujoco.MjData(m)
    rng = np.random.default_rng(seed)
    out = {
        k: []
        for k in (
            "qpos",
            "qvel",
            "qacc",
            "qfrc_applied",
            "M",
            "bias",
            "inverse",
            "forward",
            "xpos",
            "xmat",
            "geom_xpos",
            "geom_xmat",
            "site_xpos",
            "site_xmat",
        )
    }
    for _ in range(K):
        q, v, a, f = random_qpos(m, rng), rng.normal(0, 1, m.nv), rng.normal(0, 1, m.nv), rng.normal(0, 1, m.nv)
        mujoco.mj_resetData(m, d)
        d.qpos[:], d.qvel[:], d.qfrc_applied[:] = q, v, f
        mujoco.mj_forward(m, d)
        M = np.zeros((m.nv, m.nv))
        mujoco.mj_fullM(m, d, M)
        out["M"].append(M)
        out["bias"].append(d.qfrc_bias.copy())
        out["forward"].append(d.qacc.copy())
        for k in ("xpos", "xmat", "geom_xpos", "geom_xmat", "site_xpos", "site_xmat"):
            out[k].append(getattr(d, k).copy())
        d.qacc[:] = a
        mujoco.mj_inverse(m, d)
        out["inverse"].append(d.qfrc_inverse.copy())
        # self-checks: nothing but M and the bias forces entered
        np.testing.assert_allclose(out["inverse"][-1], M @ a + out["bias"][-1], rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(M @ out["forward"][-1], f - out["bias"][-1], rtol=1e-8, atol=1e-8)
        for k, x in (("qpos", q), ("qvel", v), ("qacc", a), ("qfrc_applied", f)):
            out[k].append(x)
    name = lambda t, i: mujoco.mj_id2name(m, t, i) or ""
    res = {k: np.array(v, np.float64) for k, v in out.items()}
    res.update(
        joint_names=np.array([name(mujoco.mjtObj.mjOBJ_JOINT, j) for j in range(m.njnt)]),
        joint_types=np.array(m.jnt_type, np.int32),  # 0 free, 1 ball, 2 slide, 3 hinge
        joint_range=np.array(m.jnt_range),
        joint_limited=np.array(m.jnt_limited, bool),
        joint_stiffness=np.array(m.jnt_stiffness[:, 0] if m.jnt_stiffness.ndim == 2 else m.jnt_stiffness),
        dof_armature=np.array(m.dof_armature),
        dof_damping=np.array(m.dof_damping[:, 0] if m.dof_damping.ndim == 2 else m.dof_damping),
        dof_frictionloss=np.array(m.dof_frictionloss),
        effort_limit=effort_limits(m),
        qpos0=np.array(m.qpos0),
        gravity=np.array(m.opt.gravity),
        body_names=np.array([name(mujoco.mjtObj.mjOBJ_BODY, b) for b in range(m.nbody)]),
        body_mass=np.array(m.body_mass),
        body_inertia=np.array(m.body_inertia),
        total_mass=float(np.sum(m.body_mass)),
        mujoco_version=mujoco.__version__,
        K=K,
        geom_names=np.array([name(mujoco.mjtObj.mjOBJ_GEOM, g) for g in range(m.ngeom)]),
        geom_type=np.array(m.geom_type, np.int32),
        geom_size=np.array(m.geom_size),
        geom_bodyid=np.array(m.geom_bodyid, np.int32),
        site_names=np.array([name(mujoco.mjtObj.mjOBJ_SITE, s) for s in range(m.nsite)]),
    )
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(HERE, "..", "data", "mjcf_reference"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for path in model_files():
        res = run(path, seed=zlib.crc32(case_name(path).encode()))  # stable when files are added
        dst = os.path.join(args.out, case_name(path) + ".npz")
        np.savez_compressed(dst, **res)
        print(f"{case_name(path)}: nq={res['qpos'].shape[1]} nv={res['M'].shape[1]} -> {os.path.relpath(dst)}")


if __name__ == "__main__":
    main()
