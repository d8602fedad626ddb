"""Pinocchio's values of the residuals behind jaxdyn's trajopt residual costs (Crocoddyl's
``ResidualModelFramePlacement``, ``ResidualModelFrameVelocity`` and ``ResidualModelCoMPosition``
compute these same Pinocchio quantities), and their derivatives, for
``tests/test_trajopt_residuals.py``.

The shipped ``solo12`` URDF on a free-flyer (``pin.JointModelFreeFlyer()``, the model of
``generate_pinocchio.py``'s ``solo12_floating.npz``, whose joint tables the test reads to convert
the orderings). K = 4 states: the free-flyer at a random translation in ``U(-1, 1)^3`` and a
random unit quaternion, the leg joints ``U(-1, 1)`` rad, the velocity ``N(0, 1)``. Per state and
per frame of ``FRAMES``:

* ``placement_ref_R/p``: a reference placement (``pin.SE3.Random()`` under the file's seed);
* ``placement_r``: ``log6(M_ref^-1 oMf)`` as ``[v; omega]``, and ``placement_J``:
  ``Jlog6(M_ref^-1 oMf) J_local`` (6, nv), its derivative along the configuration's tangent;
* ``velocity_local`` / ``velocity_lwa``: ``getFrameVelocity`` in ``LOCAL`` and
  ``LOCAL_WORLD_ALIGNED``, ``[v; omega]``; ``velocity_local_dq`` / ``_dv``:
  ``getFrameVelocityDerivatives`` in ``LOCAL`` (6, nv); ``velocity_lwa_dq`` / ``_dv``: the
  derivatives of the world-aligned vector ``diag(R, R) v_local`` along the same tangent, from the
  local ones and the frame Jacobian (``R (dv - v x J_ang)`` per half, checked here against central
  differences of ``getFrameVelocity``). Pinocchio's own ``getFrameVelocityDerivatives`` in
  ``LOCAL_WORLD_ALIGNED`` is not that derivative: its ``dq`` carries the corrections of its
  reference-frame convention (stack-of-tasks/pinocchio#2702) and differs from the central
  differences by up to 2.9 at these states;
* ``com`` (3,) and ``com_J`` (3, nv): ``centerOfMass``, ``jacobianCenterOfMass``.

Pinocchio's conventions throughout (``[x, y, z, qx, qy, qz, qw]``, ``[linear; angular]``,
its joint order); the test converts. Run with Pinocchio installed (never a jaxdyn dependency)::

    python tests/reference/generate_pinocchio_residuals.py
"""

from __future__ import annotations

import os

import numpy as np
import pinocchio as pin

FRAMES = ("FL_FOOT", "HR_LOWER_LEG", "base_link")
K = 4
SEED = 20261130


def _check_lwa(model, data, q, v, fid, dq):
    """The world-aligned derivative against central differences of ``getFrameVelocity`` along
    ``pin.integrate`` (restores ``data``'s kinematics at ``q``)."""

    def vel(qq):
        pin.forwardKinematics(model, data, qq, v)
        pin.updateFramePlacements(model, data)
        return pin.getFrameVelocity(model, data, fid, pin.LOCAL_WORLD_ALIGNED).vector.copy()

    h = 1e-6
    fd = np.stack(
        [
            (vel(pin.integrate(model, q, h * e)) - vel(pin.integrate(model, q, -h * e))) / (2 * h)
            for e in np.eye(model.nv)
        ],
        1,
    )
    assert np.max(np.abs(fd - dq)) < 1e-7, np.max(np.abs(fd - dq))
    vel(q)
    pin.computeJointJacobians(model, data, q)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    urdf = os.path.join(here, "..", "..", "jaxdyn", "robots", "solo12.urdf")
    if not os.path.exists(urdf):
        from jaxdyn.robots import robot_path

        urdf = robot_path("solo12")
    model = pin.buildModelFromUrdf(urdf, pin.JointModelFreeFlyer())
    data = model.createData()
    rng = np.random.default_rng(SEED)
    np.random.seed(SEED)  # pin.SE3.Random draws from numpy's global generator
    out = {k: [] for k in ("q", "v", "com", "com_J")}
    per_frame = ("placement_ref_R", "placement_ref_p", "placement_r", "placement_J")
    per_frame += ("velocity_local", "velocity_lwa", "velocity_local_dq", "velocity_local_dv")
    per_frame += ("velocity_lwa_dq", "velocity_lwa_dv")
    for key in per_frame:
        out[key] = []
    for _ in range(K):
        quat = rng.standard_normal(4)
        quat /= np.linalg.norm(quat)
        q = np.concatenate([rng.uniform(-1, 1, 3), quat, rng.uniform(-1, 1, model.nq - 7)])
        v = rng.standard_normal(model.nv)
        pin.forwardKinematics(model, data, q, v)
        pin.updateFramePlacements(model, data)
        pin.computeJointJacobians(model, data, q)
        pin.computeForwardKinematicsDerivatives(model, data, q, v, np.zeros(model.nv))
        rows = {key: [] for key in per_frame}
        for name in FRAMES:
            fid = model.getFrameId(name)
            Mref = pin.SE3.Random()
            rel = Mref.actInv(data.oMf[fid])
            rows["placement_ref_R"].append(Mref.rotation.copy())
            rows["placement_ref_p"].append(Mref.translation.copy())
            rows["placement_r"].append(pin.log6(rel).vector.copy())
            J = pin.getFrameJacobian(model, data, fid, pin.LOCAL)
            rows["placement_J"].append(pin.Jlog6(rel) @ J)
            for tag, ref in (("local", pin.LOCAL), ("lwa", pin.LOCAL_WORLD_ALIGNED)):
                rows[f"velocity_{tag}"].append(pin.getFrameVelocity(model, data, fid, ref).vector.copy())
            dq, dv = (np.array(a) for a in pin.getFrameVelocityDerivatives(model, data, fid, pin.LOCAL))
            rows["velocity_local_dq"].append(dq)
            rows["velocity_local_dv"].append(dv)
            # world-aligned: v_lwa = diag(R, R) v_local, R = oMf.rotation, and along the tangent
            # R(q (+) dq) = R exp(J_ang dq), so d(R h) = R (dh - h x J_ang dq) for each half h
            R, h = data.oMf[fid].rotation, rows["velocity_local"][-1]
            Ja = J[3:]
            RR = np.kron(np.eye(2), R)
            rows["velocity_lwa_dq"].append(RR @ (dq - np.vstack([pin.skew(h[:3]) @ Ja, pin.skew(h[3:]) @ Ja])))
            rows["velocity_lwa_dv"].append(RR @ dv)
            _check_lwa(model, data, q, v, fid, rows["velocity_lwa_dq"][-1])
        for key in per_frame:
            out[key].append(np.array(rows[key]))
        out["q"].append(q)
        out["v"].append(v)
        out["com"].append(pin.centerOfMass(model, data, q).copy())
        out["com_J"].append(pin.jacobianCenterOfMass(model, data, q).copy())
    arrays = {k: np.asarray(v) for k, v in out.items()}
    arrays["frames"] = np.asarray(FRAMES)
    arrays["pin_version"] = np.asarray(pin.__version__)
    path = os.path.join(here, "..", "data", "pinocchio", "solo12_floating_residuals.npz")
    np.savez_compressed(path, **arrays)
    print("wrote", os.path.normpath(path))


if __name__ == "__main__":
    main()
