"""A model's quantities at one concrete configuration, in NumPy, for the loaders: the body poses,
the dofs' world motions, the mass matrix and MuJoCo's ``body_invweight0``. The same joint
transforms and motion subspaces as :mod:`jaxdyn.joints` (checked against
:func:`jaxdyn.algorithms.kinematics.dof_motions_world` and :func:`jaxdyn.crba` to round-off in the
tests), without compiling a JAX program: a loader calls them on every model it builds, where
compiling the one-sample algorithms took seconds per model."""

from __future__ import annotations

import numpy as np

from . import joints
from .model import Model

MINVAL = 1e-15  # MuJoCo's mjMINVAL


def inverse_mass_matrix(model: Model, q) -> np.ndarray:
    """``M(q)^-1`` ``(nv, nv)`` (NumPy, :func:`reference_mass_matrix`); the pseudo-inverse where
    ``M`` is singular (a moving body without mass or inertia: the loaders report such models,
    this only keeps the weights finite)."""
    return _inverse(reference_mass_matrix(model, *reference_kinematics(model, q)))


def _inverse(M):
    try:
        return np.linalg.inv(M)
    except np.linalg.LinAlgError:
        return np.linalg.pinv(M)


def reference_kinematics(model: Model, q):
    """NumPy, at a concrete ``q``: the body poses ``(R (nb, 3, 3), p (nb, 3))`` and the world motion
    of every dof, ``(w (nv, 3), v (nv, 3))`` (angular, and linear of the point at the world
    origin), by the joint types of :mod:`jaxdyn.joints`; no JAX program is compiled, so a loader can
    call it on every model at no noticeable cost."""
    q = np.asarray(q, np.float64)
    lay = model.layout
    PR, Pp, ax = (np.asarray(x, np.float64) for x in (model.placement_R, model.placement_p, model.axis))
    params = {k: np.asarray(x, np.float64) for k, x in model.joint_params.items()}
    R, p = np.zeros((model.nb, 3, 3)), np.zeros((model.nb, 3))
    w, v = np.zeros((model.nv, 3)), np.zeros((model.nv, 3))
    for b, (parent, kind) in enumerate(zip(model.parents, model.joint_types)):
        qs, vs = int(lay.q_start[b]), int(lay.v_start[b])
        Rp, pp = (np.eye(3), np.zeros(3)) if parent < 0 else (R[parent], p[parent])
        R0, p0 = Rp @ PR[b], Rp @ Pp[b] + pp  # the joint frame
        jt = joints.get(kind)
        u = ax[b] / max(np.linalg.norm(ax[b]), 1e-300)
        RJ, pJ, S = jt.reference_motion(u, {k: x[b : b + 1] for k, x in params.items()}, q[qs : qs + jt.nq])
        R[b], p[b] = R0 @ RJ, p0 + R0 @ pJ
        # each dof's world motion: angular R sa, linear R sl + p x (R sa) (at the world origin)
        w[vs : vs + jt.nv] = S[:, :3] @ R[b].T
        v[vs : vs + jt.nv] = S[:, 3:] @ R[b].T + np.cross(p[b], w[vs : vs + jt.nv])
    return R, p, w, v


def _point_jacobian(model: Model, w, v, b, c):
    """``(angular (3, nv), linear (3, nv))``: the world Jacobians of body ``b``'s material point at
    the world point ``c``."""
    lay = model.layout
    mask = lay.ancestor[lay.dof_body, b]
    ang = (w * mask[:, None]).T
    lin = (v * mask[:, None]).T + np.cross(ang.T, c).T
    return ang, lin


def reference_mass_matrix(model: Model, R, p, w, v):
    """``M = sum_b m_b Jc_b^T Jc_b + Jw_b^T I_b Jw_b`` plus the armature (world axes, NumPy), from
    :func:`reference_kinematics`."""
    mass, com, inertia = (np.asarray(x, np.float64) for x in (model.mass, model.com, model.inertia))
    M = np.diag(np.asarray(model.armature, np.float64))
    for b in range(model.nb):
        ang, lin = _point_jacobian(model, w, v, b, R[b] @ com[b] + p[b])
        M += mass[b] * lin.T @ lin + ang.T @ (R[b] @ inertia[b] @ R[b].T) @ ang
    return M


def body_invweights(model: Model, q, bodies, points) -> np.ndarray:
    """MuJoCo's ``body_invweight0`` ``(len(bodies), 2)`` at the configuration ``q``: for each
    jaxdyn body and world point (its centre of mass), the mean diagonal of ``J M^-1 J^T`` over the
    point's three translational rows (and the body's three rotational rows), with ``J`` the
    point's velocity Jacobian (world axes) and ``M`` the mass matrix with the armature; a body
    whose one part is zero takes the other's, the world (``-1``) is 0. NumPy, at a concrete
    ``q`` (:func:`reference_kinematics`)."""
    R, p, w, v = reference_kinematics(model, q)
    Minv = _inverse(reference_mass_matrix(model, R, p, w, v))
    out = np.zeros((len(bodies), 2))
    for i, (b, c) in enumerate(zip(bodies, points)):
        if b < 0:
            continue
        ang, lin = _point_jacobian(model, w, v, b, np.asarray(c, np.float64))
        tran = np.trace(lin @ Minv @ lin.T) / 3
        rot = np.trace(ang @ Minv @ ang.T) / 3
        if tran < MINVAL < rot:
            tran = rot
        elif rot < MINVAL < tran:
            rot = tran
        out[i] = tran, rot
    return out
