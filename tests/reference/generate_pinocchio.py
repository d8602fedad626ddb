"""Generate stored Pinocchio reference values for the jaxdyn test suite.

How to run (needs Pinocchio, which jaxdyn itself does NOT depend on)::

    python3 -m venv refenv && refenv/bin/pip install pin numpy   # pin 4.x, never a jaxdyn dependency
    refenv/bin/python tests/reference/generate_pinocchio.py [--robots DIR] [--out DIR]

Defaults: robots shipped in jaxdyn/robots (or $JAXDYN_ROBOTS), output to
tests/data/pinocchio/ next to this script.  One compressed NPZ per (robot, base):
``{robot}_{base}.npz``, base in {fixed, floating}.  Seeds are fixed and the zip entries carry a
fixed timestamp, so reruns with the same Pinocchio/numpy produce byte-identical files.
Many self-checks run before a file is written (an assertion error means no file).

Models
------
fixed    = pin.buildModelFromUrdf(path)                           (mimic flag off = default)
floating = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer())
URDF fixed joints are merged (they become frames); URDF <mimic> joints are NOT coupled: a movable
mimic joint is an ordinary independent joint (panda_finger_joint2, axis -y, becomes a
JointModelPrismaticUnaligned), and talos' mimic joints are all type="fixed" so they are simply
merged into their parent bodies.  In the FIXED-base model the URDF root link's inertia
is stored on the universe (model.inertias[0], saved as ``universe_*``); it takes no part in any
dynamics quantity below and pin.computeTotalMass / centerOfMass exclude it.  In the FLOATING model
the root link's inertia belongs to the free-flyer joint (joint 1, named 'root_joint').

Conventions (all Pinocchio's own; the jaxdyn tests convert)
-----------------------------------------------------------
* "joint i" means model.joints[i], i = 1..nj (nj = model.njoints - 1; universe excluded).
  Per-joint arrays have length nj, entry j <-> pinocchio joint j+1.  ``joint_parents`` uses
  pinocchio indexing (0 = universe, so parent of entry j is entry joint_parents[j]-1).
* Spatial motion / force 6-vectors are [linear; angular]; Jacobian rows likewise.
* Free-flyer q = [x, y, z, qx, qy, qz, qw] (quaternion x,y,z,w; base position in world, base
  orientation world<-base); free-flyer v = [v_lin; omega] of the base, both in the BASE (local)
  frame.  Revolute/prismatic joints: 1 q, 1 v.  (Continuous 'RUB*' joints would be (cos, sin); none
  occur in these robots.)
* Placements: R, p with x_parent = R @ x_child + p (pinocchio SE3: rotation, translation).
  placement_R/p = model.jointPlacements[i] (joint i frame in parent joint frame, at q = 0).
  oMi_* = data.oMi[i], oMf_* = data.oMf[f] (world <- joint / frame).
* Inertia per joint (model.inertias[i], in joint i's frame): mass, com (lever c), inertia_com
  (3x3 about the COM, joint-frame axes).
* dynamic_params: concatenation over i=1..nj of model.inertias[i].toDynamicParameters(), each
  [m, m c_x, m c_y, m c_z, I_xx, I_xy, I_yy, I_xz, I_yz, I_zz] with I = I_com + m S(c)^T S(c),
  i.e. rotational inertia about the JOINT frame origin (order verified in this script).
  regressor (K, nv, 10 nj) = pin.computeJointTorqueRegressor(q, v, a), regressor @ dynamic_params
  = rnea.
* gravity = model.gravity.linear = [0, 0, -9.81].  rnea / nle / gravity_torque include gravity.
* fext (K, nj, 6): external spatial force [f; n] applied to joint i's body, expressed in joint
  i's LOCAL frame (about joint origin), as for pin.rnea(..., fext) / pin.aba(..., fext):
  rnea_fext = rnea - sum_i J_i^T fext_i with J_i the LOCAL joint Jacobian (checked here);
  aba_fext = M^-1 (tau - nle + sum_i J_i^T fext_i).
* crba, minv: full symmetric matrices (upper triangle mirrored).  M @ minv = I.
* v_local, a_local (K, nj, 6): data.v[i], data.a[i] after forwardKinematics(q, v, a): spatial
  velocity / acceleration of joint i's body in joint i's local frame; a_local EXCLUDES gravity
  (spatial, not classical acceleration: a_lin = d/dt(v_lin) in the moving frame convention).
* Jacobians (K, nbf, 6, nv) for the BODY frames listed in jac_frame_names:
  J_local  : frame velocity in the frame's own axes, about the frame origin (pin.LOCAL).
  J_world  : spatial velocity in world axes, linear part = velocity of the point at the WORLD
             ORIGIN (pin.WORLD).
  J_lwa    : world axes, about the frame origin (pin.LOCAL_WORLD_ALIGNED).
  dJ_local, dJ_lwa: pin.getFrameJacobianTimeVariation; verified numerically (finite differences)
  to be the exact time derivatives d/dt J_local(q(t)), d/dt J_lwa(q(t)) along qdot = v.
  Hence J_local a + dJ_local v = spatial acceleration in LOCAL, and J_lwa a + dJ_lwa v =
  CLASSICAL acceleration (ddot of the frame origin position; d/dt of omega) in world axes.
* kinetic_energy = 0.5 v^T M v.
  potential_energy = pin.computePotentialEnergy = -sum_i m_i g . c_i^world (i = 1..nj, universe
  excluded) = +sum_i m_i 9.81 z_i for g = [0,0,-9.81]  (positive when the COM is above z = 0).
* com (K,3) world COM of joints 1..nj; Jcom (K,3,nv) with d com/dt = Jcom v;
  hg (K,6) = centroidal momentum [linear; angular], angular about the COM, world axes;
  total_mass = pin.computeTotalMass(model) (= sum_{i>=1} m_i).
* dt = 0.1; q_next = pin.integrate(q, v dt) (free-flyer: SE3 exponential with local v, i.e.
  body-frame twist); q_diff = pin.difference(q, q_next) (= v dt).

Random states (K = 4 per file, numpy default_rng with a fixed per-file seed)
---------------------------------------------------------------------------
q: revolute with finite lower<upper: U(lower, upper), otherwise U(-pi, pi); continuous: angle
U(-pi, pi) as (cos, sin); prismatic: U(lower, upper) if lower<upper else U(-0.5, 0.5);
free-flyer: translation U(-1,1)^3, uniform random unit quaternion (x,y,z,w).
v, a, tau: standard normal (nv);  fext: standard normal (nj, 6).

Array keys
----------
Metadata: pin_version, robot, base, nq, nv, nj, joint_names, joint_shortnames, joint_idx_q,
joint_idx_v, joint_nq, joint_nv, joint_parents, lower_limit, upper_limit (nq, model limits as
parsed; free-flyer ones are +-inf / +-1), frame_names, frame_types (str: BODY, JOINT, FIXED_JOINT,
OP_FRAME, SENSOR), frame_type_codes (int, pinocchio enum values OP_FRAME=1, JOINT=2,
FIXED_JOINT=4, BODY=8, SENSOR=16), frame_parent_joints (pinocchio joint index, 0 = universe),
frame_parent_frames, frame_placement_R/p (frame in parent joint frame), body_frame_names,
jac_frame_names, jac_frame_ids, gravity, mass, com_lever, inertia_com, universe_mass, universe_com,
universe_inertia_com, placement_R, placement_p, total_mass, dynamic_params, dt.
States: q, v, a, tau, fext, rnea, rnea_fext, aba, aba_fext, crba, nle, gravity_torque, minv,
oMi_R, oMi_p, oMf_R, oMf_p, v_local, a_local, J_local, J_world, J_lwa, dJ_local, dJ_lwa,
kinetic_energy, potential_energy, com, Jcom, hg, q_next, q_diff, regressor.
NOTE the name clash resolution: ``com`` (K,3) is the world centre of mass per state
(pin.centerOfMass); the per-joint COM lever (model.inertias[i].lever) is ``com_lever`` (nj,3).
jac_frame_names / jac_frame_ids: the BODY frames whose Jacobians are stored: all BODY frames,
except talos (file-size limit): at most 12, chosen as the leaf BODY frames (one per parent joint)
padded with evenly spaced other BODY frames.
"""

import argparse
import io
import os
import sys
import zipfile

import numpy as np
import pinocchio as pin

ROBOTS = ["double_pendulum", "ur5", "panda", "solo12", "talos"]
BASES = ["fixed", "floating"]
K = 4
DT = 0.1
BASE_SEED = 20261122
MAX_BYTES = 300 * 1024
MAX_JAC_FRAMES = 12

FRAME_TYPE_NAMES = {int(v): k for k, v in pin.FrameType.names.items()}


# ----------------------------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------------------------
def close(a, b, tol=1e-8, what=""):
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    scale = max(1.0, float(np.max(np.abs(b))) if b.size else 1.0)
    err = float(np.max(np.abs(a - b))) if a.size else 0.0
    assert err <= tol * scale, f"self-check failed: {what}: max err {err:.3e} (scale {scale:.3g})"


def sym_from_upper(Mraw, what):
    """Pinocchio may fill only the upper triangle: return triu + triu(1).T, checking the lower
    triangle if it was filled."""
    Mraw = np.array(Mraw, dtype=float)
    M = np.triu(Mraw) + np.triu(Mraw, 1).T
    low = np.tril(Mraw, -1)
    if np.any(low != 0.0):  # already full: must agree with the mirrored upper part
        close(Mraw, M, 1e-10, what + " lower triangle vs upper")
    return M


def save_npz_deterministic(path, arrays):
    """Like np.savez_compressed, but with fixed zip timestamps so reruns are byte-identical."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for key in sorted(arrays):
            info = zipfile.ZipInfo(key + ".npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            with zf.open(info, "w", force_zip64=True) as f:
                np.lib.format.write_array(f, np.asanyarray(arrays[key]), allow_pickle=False)
    data = buf.getvalue()
    if path is not None:
        with open(path, "wb") as f:
            f.write(data)
    return len(data)


def build_model(urdf, base):
    if base == "fixed":
        return pin.buildModelFromUrdf(urdf)
    return pin.buildModelFromUrdf(urdf, pin.JointModelFreeFlyer())


def random_q(model, rng):
    q = np.zeros(model.nq)
    lo_all = model.lowerPositionLimit
    hi_all = model.upperPositionLimit
    for i in range(1, model.njoints):
        jm = model.joints[i]
        name = jm.shortname()
        iq, nq = jm.idx_q, jm.nq
        lo, hi = lo_all[iq : iq + nq], hi_all[iq : iq + nq]
        finite = nq >= 1 and np.all(np.isfinite(lo)) and np.all(np.isfinite(hi)) and np.all(lo < hi)
        if name == "JointModelFreeFlyer":
            q[iq : iq + 3] = rng.uniform(-1.0, 1.0, 3)
            quat = rng.standard_normal(4)
            quat /= np.linalg.norm(quat)
            q[iq + 3 : iq + 7] = quat  # x, y, z, w
        elif name.startswith("JointModelRUB"):  # continuous: (cos, sin)
            th = rng.uniform(-np.pi, np.pi)
            q[iq : iq + 2] = [np.cos(th), np.sin(th)]
        elif name.startswith("JointModelR"):  # RX/RY/RZ/RevoluteUnaligned
            assert nq == 1, name
            q[iq] = rng.uniform(lo[0], hi[0]) if finite else rng.uniform(-np.pi, np.pi)
        elif name.startswith("JointModelP"):  # PX/PY/PZ/PrismaticUnaligned
            assert nq == 1, name
            q[iq] = rng.uniform(lo[0], hi[0]) if finite else rng.uniform(-0.5, 0.5)
        else:
            raise NotImplementedError(f"joint type {name} not handled")
    assert pin.isNormalized(model, q, 1e-12), "random q not normalized"
    return q


def skew(c):
    return np.array([[0, -c[2], c[1]], [c[2], 0, -c[0]], [-c[1], c[0], 0]])


def choose_jac_frames(model, body_ids, fits_all):
    """All BODY frames if the file fits, else at most MAX_JAC_FRAMES: leaf BODY frames (no frame
    has them as parent), one per parent joint, then padded with evenly spaced other BODY frames."""
    if fits_all or len(body_ids) <= MAX_JAC_FRAMES:
        return list(body_ids)
    parents = {model.frames[f].parentFrame for f in range(model.nframes)}
    chosen, seen_joints = [], set()
    for f in body_ids:
        pj = model.frames[f].parentJoint
        if f not in parents and pj not in seen_joints:
            chosen.append(f)
            seen_joints.add(pj)
    chosen = chosen[:MAX_JAC_FRAMES]
    rest = [f for f in body_ids if f not in chosen]
    n_pad = MAX_JAC_FRAMES - len(chosen)
    if n_pad > 0 and rest:
        idx = np.unique(np.round(np.linspace(0, len(rest) - 1, n_pad)).astype(int))
        chosen += [rest[i] for i in idx]
    return sorted(chosen)


# ----------------------------------------------------------------------------------------------
# main computation
# ----------------------------------------------------------------------------------------------
def generate(urdf, robot, base, seed):
    model = build_model(urdf, base)
    data = model.createData()
    nq, nv, nj, nf = model.nq, model.nv, model.njoints - 1, model.nframes
    J_IDS = range(1, model.njoints)
    assert np.all(np.asarray(model.armature) == 0.0), "nonzero armature"
    g = np.array(model.gravity.linear)
    close(g, [0, 0, -9.81], 1e-12, "gravity")

    out = {}
    out["pin_version"] = np.array(pin.__version__)
    out["robot"] = np.array(robot)
    out["base"] = np.array(base)
    out["nq"] = np.array(nq)
    out["nv"] = np.array(nv)
    out["nj"] = np.array(nj)
    out["joint_names"] = np.array([model.names[i] for i in J_IDS])
    out["joint_shortnames"] = np.array([model.joints[i].shortname() for i in J_IDS])
    out["joint_idx_q"] = np.array([model.joints[i].idx_q for i in J_IDS], dtype=np.int64)
    out["joint_idx_v"] = np.array([model.joints[i].idx_v for i in J_IDS], dtype=np.int64)
    out["joint_nq"] = np.array([model.joints[i].nq for i in J_IDS], dtype=np.int64)
    out["joint_nv"] = np.array([model.joints[i].nv for i in J_IDS], dtype=np.int64)
    out["joint_parents"] = np.array([model.parents[i] for i in J_IDS], dtype=np.int64)
    out["lower_limit"] = np.array(model.lowerPositionLimit, dtype=float)
    out["upper_limit"] = np.array(model.upperPositionLimit, dtype=float)

    frames = list(model.frames)
    out["frame_names"] = np.array([f.name for f in frames])
    out["frame_type_codes"] = np.array([int(f.type) for f in frames], dtype=np.int64)
    out["frame_types"] = np.array([FRAME_TYPE_NAMES[int(f.type)] for f in frames])
    out["frame_parent_joints"] = np.array([f.parentJoint for f in frames], dtype=np.int64)
    out["frame_parent_frames"] = np.array([f.parentFrame for f in frames], dtype=np.int64)
    out["frame_placement_R"] = np.array([f.placement.rotation for f in frames])
    out["frame_placement_p"] = np.array([f.placement.translation for f in frames])
    body_ids = [i for i, f in enumerate(frames) if f.type == pin.FrameType.BODY]
    out["body_frame_names"] = np.array([frames[i].name for i in body_ids])
    out["gravity"] = g

    inert = [model.inertias[i] for i in J_IDS]
    out["mass"] = np.array([I.mass for I in inert])
    out["com_lever"] = np.array([I.lever for I in inert])
    out["inertia_com"] = np.array([I.inertia for I in inert])
    I0 = model.inertias[0]
    out["universe_mass"] = np.array(I0.mass)
    out["universe_com"] = np.array(I0.lever)
    out["universe_inertia_com"] = np.array(I0.inertia)
    out["placement_R"] = np.array([model.jointPlacements[i].rotation for i in J_IDS])
    out["placement_p"] = np.array([model.jointPlacements[i].translation for i in J_IDS])
    out["total_mass"] = np.array(pin.computeTotalMass(model))
    close(out["total_mass"], out["mass"].sum(), 1e-12, "total mass")

    # dynamic parameters, with an explicit check of the observed order
    params = []
    for I in inert:
        p = np.array(I.toDynamicParameters())
        m, c, Ic = I.mass, np.array(I.lever), np.array(I.inertia)
        Io = Ic + m * skew(c).T @ skew(c)
        expect = [m, *(m * c), Io[0, 0], Io[0, 1], Io[1, 1], Io[0, 2], Io[1, 2], Io[2, 2]]
        close(p, expect, 1e-12, "toDynamicParameters order")
        params.append(p)
    out["dynamic_params"] = np.concatenate(params)
    out["dt"] = np.array(DT)

    rng = np.random.default_rng(seed)
    S = {
        k: []
        for k in [
            "q",
            "v",
            "a",
            "tau",
            "fext",
            "rnea",
            "rnea_fext",
            "aba",
            "aba_fext",
            "crba",
            "nle",
            "gravity_torque",
            "minv",
            "oMi_R",
            "oMi_p",
            "oMf_R",
            "oMf_p",
            "v_local",
            "a_local",
            "J_local",
            "J_world",
            "J_lwa",
            "dJ_local",
            "dJ_lwa",
            "kinetic_energy",
            "potential_energy",
            "com",
            "Jcom",
            "hg",
            "q_next",
            "q_diff",
            "regressor",
        ]
    }
    DER = {k: [] for k in ["drnea_dq", "drnea_dv", "daba_dq", "daba_dv"]}

    for k in range(K):
        q = random_q(model, rng)
        v = rng.standard_normal(nv)
        a = rng.standard_normal(nv)
        tau = rng.standard_normal(nv)
        fext_np = rng.standard_normal((nj, 6))
        fext = [pin.Force.Zero()] + [pin.Force(fext_np[j, :3], fext_np[j, 3:]) for j in range(nj)]

        rnea = np.array(pin.rnea(model, data, q, v, a))
        rnea_fext = np.array(pin.rnea(model, data, q, v, a, fext))
        aba = np.array(pin.aba(model, data, q, v, tau))
        aba_fext = np.array(pin.aba(model, data, q, v, tau, fext))
        M = sym_from_upper(pin.crba(model, data, q), "crba")
        nle = np.array(pin.nonLinearEffects(model, data, q, v))
        gtau = np.array(pin.computeGeneralizedGravity(model, data, q))
        Minv = sym_from_upper(pin.computeMinverse(model, data, q), "minv")

        # --- self-checks on dynamics
        close(M, M.T, 1e-14, "M symmetric")
        assert np.linalg.eigvalsh(M).min() > 0, "M not positive definite"
        close(M @ Minv, np.eye(nv), 1e-8, "M @ Minv = I")
        close(M @ a + nle, rnea, 1e-9, "M a + nle = rnea")
        close(np.array(pin.rnea(model, data, q, np.zeros(nv), np.zeros(nv))), gtau, 1e-10, "g")
        close(np.array(pin.aba(model, data, q, v, rnea)), a, 1e-8, "aba(rnea) round trip")
        close(np.array(pin.aba(model, data, q, v, rnea_fext, fext)), a, 1e-8, "aba_fext round trip")
        close(Minv @ (tau - nle), aba, 1e-8, "aba = Minv (tau - nle)")
        # fext convention: local frame of each joint
        pin.computeJointJacobians(model, data, q)
        JtF = np.zeros(nv)
        for j in range(nj):
            Jj = pin.getJointJacobian(model, data, j + 1, pin.LOCAL)
            JtF += Jj.T @ fext_np[j]
        close(rnea_fext, rnea - JtF, 1e-9, "rnea_fext = rnea - sum J_local^T f")
        close(aba_fext, Minv @ (tau - nle + JtF), 1e-8, "aba_fext")

        # --- kinematics
        pin.forwardKinematics(model, data, q, v, a)
        pin.updateFramePlacements(model, data)
        oMi_R = np.array([data.oMi[i].rotation for i in J_IDS])
        oMi_p = np.array([data.oMi[i].translation for i in J_IDS])
        oMf_R = np.array([data.oMf[f].rotation for f in range(nf)])
        oMf_p = np.array([data.oMf[f].translation for f in range(nf)])
        v_local = np.array([data.v[i].vector for i in J_IDS])
        a_local = np.array([data.a[i].vector for i in J_IDS])
        fvel = {f: pin.getFrameVelocity(model, data, f, pin.LOCAL).vector.copy() for f in body_ids}
        facc = {f: pin.getFrameAcceleration(model, data, f, pin.LOCAL).vector.copy() for f in body_ids}
        cacc = {
            f: pin.getFrameClassicalAcceleration(model, data, f, pin.LOCAL_WORLD_ALIGNED).vector.copy()
            for f in body_ids
        }

        # --- Jacobians for all body frames (trimmed later if the file is too big)
        pin.computeJointJacobians(model, data, q)
        pin.updateFramePlacements(model, data)
        Jl = np.array([pin.getFrameJacobian(model, data, f, pin.LOCAL) for f in body_ids])
        Jw = np.array([pin.getFrameJacobian(model, data, f, pin.WORLD) for f in body_ids])
        Jlwa = np.array([pin.getFrameJacobian(model, data, f, pin.LOCAL_WORLD_ALIGNED) for f in body_ids])
        pin.computeJointJacobiansTimeVariation(model, data, q, v)
        pin.updateFramePlacements(model, data)
        dJl = np.array([pin.getFrameJacobianTimeVariation(model, data, f, pin.LOCAL) for f in body_ids])
        dJlwa = np.array([pin.getFrameJacobianTimeVariation(model, data, f, pin.LOCAL_WORLD_ALIGNED) for f in body_ids])
        for n, f in enumerate(body_ids):
            close(Jl[n] @ v, fvel[f], 1e-9, "J_local v = frame velocity")
            close(Jl[n] @ a + dJl[n] @ v, facc[f], 1e-8, "J_local a + dJ_local v = spatial acc")
            close(Jlwa[n] @ a + dJlwa[n] @ v, cacc[f], 1e-8, "J_lwa a + dJ_lwa v = classical acc")
        if k == 0:  # finite-difference check that dJ are exact time derivatives
            eps = 1e-6

            def jac_at(qq, ref):
                pin.computeJointJacobians(model, data, qq)
                pin.updateFramePlacements(model, data)
                return np.array([pin.getFrameJacobian(model, data, f, ref) for f in body_ids])

            qp, qm = pin.integrate(model, q, v * eps), pin.integrate(model, q, -v * eps)
            close((jac_at(qp, pin.LOCAL) - jac_at(qm, pin.LOCAL)) / (2 * eps), dJl, 1e-6, "dJ_local FD")
            close(
                (jac_at(qp, pin.LOCAL_WORLD_ALIGNED) - jac_at(qm, pin.LOCAL_WORLD_ALIGNED)) / (2 * eps),
                dJlwa,
                1e-6,
                "dJ_lwa FD",
            )

        # --- energies / momentum
        ke = float(pin.computeKineticEnergy(model, data, q, v))
        pe = float(pin.computePotentialEnergy(model, data, q))
        com = np.array(pin.centerOfMass(model, data, q))
        Jcom = np.array(pin.jacobianCenterOfMass(model, data, q))
        pin.computeCentroidalMomentum(model, data, q, v)
        hg = np.array(data.hg.vector)
        close(ke, 0.5 * v @ M @ v, 1e-9, "kinetic energy")
        cw = oMi_p + np.einsum("jab,jb->ja", oMi_R, out["com_lever"])
        close(pe, -np.sum(out["mass"] * (cw @ g)), 1e-9, "potential energy sign")
        close(com, (out["mass"] @ cw) / out["mass"].sum(), 1e-10, "com")
        close(hg[:3], out["total_mass"] * (Jcom @ v), 1e-9, "hg linear = m Jcom v")
        # angular momentum about the COM, world axes
        hang = np.zeros(3)
        for j in range(nj):
            R = oMi_R[j]
            vel = v_local[j]
            Ij = model.inertias[j + 1]
            h_loc = (Ij * pin.Motion(vel[:3], vel[3:])).vector  # local momentum about joint origin
            h_lin, h_ang = R @ h_loc[:3], R @ h_loc[3:]
            hang += h_ang + np.cross(oMi_p[j] - com, h_lin)
        close(hg[3:], hang, 1e-9, "hg angular about COM")

        # --- integration
        q_next = np.array(pin.integrate(model, q, v * DT))
        q_diff = np.array(pin.difference(model, q, q_next))
        assert pin.isNormalized(model, q_next, 1e-10)
        close(q_diff, v * DT, 1e-9, "difference(integrate)")

        # --- regressor
        Y = np.array(pin.computeJointTorqueRegressor(model, data, q, v, a))
        assert Y.shape == (nv, 10 * nj), Y.shape
        close(Y @ out["dynamic_params"], rnea, 1e-9, "regressor @ params = rnea")

        # --- first derivatives (tangent space at q, as integrate: local frame for the free flyer)
        dtau_dq, dtau_dv, _ = (np.array(x) for x in pin.computeRNEADerivatives(model, data, q, v, a))
        dqdd_dq, dqdd_dv, dqdd_dtau = (np.array(x) for x in pin.computeABADerivatives(model, data, q, v, tau))
        close(sym_from_upper(dqdd_dtau, "dqdd_dtau"), Minv, 1e-8, "dqdd/dtau = Minv")
        d_q, d_v, _ = (np.array(x) for x in pin.computeRNEADerivatives(model, data, q, v, aba))
        close(dqdd_dq, -Minv @ d_q, 1e-7, "dqdd/dq = -Minv dtau/dq")
        close(dqdd_dv, -Minv @ d_v, 1e-7, "dqdd/dv = -Minv dtau/dv")

        for key, val in [
            ("q", q),
            ("v", v),
            ("a", a),
            ("tau", tau),
            ("fext", fext_np),
            ("rnea", rnea),
            ("rnea_fext", rnea_fext),
            ("aba", aba),
            ("aba_fext", aba_fext),
            ("crba", M),
            ("nle", nle),
            ("gravity_torque", gtau),
            ("minv", Minv),
            ("oMi_R", oMi_R),
            ("oMi_p", oMi_p),
            ("oMf_R", oMf_R),
            ("oMf_p", oMf_p),
            ("v_local", v_local),
            ("a_local", a_local),
            ("J_local", Jl),
            ("J_world", Jw),
            ("J_lwa", Jlwa),
            ("dJ_local", dJl),
            ("dJ_lwa", dJlwa),
            ("kinetic_energy", ke),
            ("potential_energy", pe),
            ("com", com),
            ("Jcom", Jcom),
            ("hg", hg),
            ("q_next", q_next),
            ("q_diff", q_diff),
            ("regressor", Y),
        ]:
            S[key].append(val)
        for key, val in [("drnea_dq", dtau_dq), ("drnea_dv", dtau_dv), ("daba_dq", dqdd_dq), ("daba_dv", dqdd_dv)]:
            DER[key].append(val)

    for key, vals in S.items():
        out[key] = np.array(vals, dtype=float)

    # Jacobian frame selection: all BODY frames if the file stays small enough
    jac_keys = ["J_local", "J_world", "J_lwa", "dJ_local", "dJ_lwa"]
    full = dict(out)
    full["jac_frame_names"] = out["body_frame_names"]
    full["jac_frame_ids"] = np.array(body_ids, dtype=np.int64)
    fits_all = save_npz_deterministic(None, full) < 0.9 * MAX_BYTES
    chosen = choose_jac_frames(model, body_ids, fits_all)
    sel = [body_ids.index(f) for f in chosen]
    for key in jac_keys:
        out[key] = out[key][:, sel]
    out["jac_frame_names"] = np.array([frames[f].name for f in chosen])
    out["jac_frame_ids"] = np.array(chosen, dtype=np.int64)
    deriv = {key: np.array(vals, dtype=float) for key, vals in DER.items()}
    return out, deriv


def main(argv=None):
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--robots",
        default=os.environ.get(
            "JAXDYN_ROBOTS", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "jaxdyn", "robots")
        ),
    )
    ap.add_argument("--out", default=os.path.join(here, "..", "data", "pinocchio"))
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    print(f"pinocchio {pin.__version__}, numpy {np.__version__}")
    for r_i, robot in enumerate(ROBOTS):
        for b_i, base in enumerate(BASES):
            urdf = os.path.join(args.robots, robot + ".urdf")
            out, deriv = generate(urdf, robot, base, BASE_SEED + 10 * r_i + b_i)
            path = os.path.join(args.out, f"{robot}_{base}.npz")
            size = save_npz_deterministic(path, out)
            assert size < MAX_BYTES, f"{path} too big: {size} bytes"
            # first derivatives (same states) in a file of their own, so the main file's frame
            # selection and bytes do not depend on them
            dpath = os.path.join(args.out, f"{robot}_{base}_derivatives.npz")
            dsize = save_npz_deterministic(dpath, deriv)
            assert dsize < MAX_BYTES, f"{dpath} too big: {dsize} bytes"
            print(
                f"{os.path.normpath(path)}: nq={int(out['nq'])} nv={int(out['nv'])} "
                f"nj={int(out['nj'])} jac_frames={len(out['jac_frame_names'])} {size / 1024:.0f} KB"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
