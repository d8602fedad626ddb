"""Forward kinematics, body velocities and accelerations, frame Jacobians and their time
derivatives, centre of mass and its Jacobian.

Jacobian reference frames (Pinocchio's names; rows ``[angular; linear]``):
``"local"`` (frame axes, about the frame origin), ``"world"`` (world axes, about the world
origin) and ``"local_world_aligned"`` (world axes, about the frame origin).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from .. import spatial, tree
from ..configuration import configuration_derivative
from ..model import Model
from .aba import velocity_step
from .common import JointData, Kinematics, check, full_precision, joint_data
from .rnea import rnea_full

REFERENCES = ("local", "world", "local_world_aligned")


def kinematics(model: Model, q: Float[Array, " nq"], qd: Float[Array, " nv"] | None = None) -> Kinematics:
    """The kinematics at ``q`` that several algorithms share (:class:`Kinematics`): the joint
    data, every body's world placement and every dof's world motion subspace, computed once;
    with ``qd`` also every body's velocity (the outward sweep of Rodriguez86 (5.1),
    :func:`jaxdyn.algorithms.aba.velocity_step`).

    Pass it as ``kinematics=`` to the algorithms called at the same ``q``, e.g.
    ``kin = jaxdyn.kinematics(model, q)``, then ``jaxdyn.crba(model, q, kinematics=kin)`` and
    ``jaxdyn.rnea(model, q, qd, qdd, kinematics=kin)``: one forward kinematics instead of one
    per algorithm (what :func:`jaxdyn.sim.step` does with contact).

    Args: q ``(nq,)``; qd optional ``(nv,)`` (one sample; batch with ``jax.vmap``).
    Returns: :class:`Kinematics` with ``poses`` ``R (nb, 3, 3)``, ``p (nb, 3)``, ``dofs (6, nv)``
    and ``velocities (nb, 6)`` (None without ``qd``)."""
    check(model, "kinematics", q=q, qd=qd)
    jd = joint_data(model, q)
    poses = _poses(model, jd)
    return Kinematics(jd, poses, _dofs_world(model, jd, poses), None if qd is None else _velocities(model, jd, qd))


def _velocities(model: Model, jd: JointData, qd) -> Float[Array, "nb 6"]:
    """The scatter ``v_k = X^-1 v_parent + S qd_k`` from the world at rest (Rodriguez86 (5.1))."""
    lay = model.layout
    qd_l, qd_r = tree.v_to_link_values(lay, jnp.asarray(qd, model.dtype))

    def down(v_p, x):
        return velocity_step(spatial.ArrayAlgebra, *x, v_p)

    root = (jd.X_root, jd.S_root, qd_r) if lay.floating else None
    v, _, _ = tree.scatter(lay, down, (jd.X, jd.S, qd_l), jnp.zeros(6, model.dtype), root)
    return v


_kinematics = kinematics  # for the functions whose argument ``kinematics`` shadows it


def _poses(model: Model, jd: JointData) -> spatial.Pose:
    """The scatter ``X_world,k = X_world,parent o X_k`` over the joint data."""

    def down(parent, X):
        return spatial.compose(parent, X), None

    poses, _, _ = tree.scatter(model.layout, down, jd.X, spatial.identity_pose(model.dtype), jd.X_root)
    return poses


def _dofs_world(model: Model, jd: JointData, poses: spatial.Pose) -> Float[Array, "6 nv"]:
    """Each dof's motion subspace moved to the world, ``phi^T H^T`` (Rodriguez86 (7.2))."""
    lay = model.layout
    lb = lay.link_bodies
    link = spatial.motion_matrix_to_parent(spatial.Pose(poses.R[lb], poses.p[lb]), jd.S)  # (n, 6, k)
    root = None
    if lay.floating:
        root = spatial.motion_matrix_to_parent(spatial.Pose(poses.R[0], poses.p[0]), jd.S_root).T  # (6dof, 6)
    return tree.link_values_to_v(lay, jnp.swapaxes(link, -1, -2), root).T  # (6, nv)


def forward_kinematics(model: Model, q: Float[Array, " nq"], kinematics: Kinematics | None = None) -> spatial.Pose:
    """World placement of every body frame: ``Pose(R (nb,3,3), p (nb,3))`` (a scatter of
    ``X_world,i = X_world,parent o X_parent,i``); the poses of ``kinematics`` where given."""
    check(model, "forward_kinematics", q=q, kinematics=kinematics)
    if kinematics is not None:
        return kinematics.poses
    return _poses(model, joint_data(model, q))


def _with_world(poses: spatial.Pose) -> spatial.Pose:
    eye = jnp.eye(3, dtype=poses.R.dtype)[None]
    return spatial.Pose(jnp.concatenate([poses.R, eye]), jnp.concatenate([poses.p, jnp.zeros((1, 3), poses.p.dtype)]))


def frame_bodies(model: Model):
    fb = np.array(model.topology.frame_bodies, np.int32)
    return np.where(fb < 0, model.nb, fb)


def frame_poses(model: Model, poses: spatial.Pose, idx) -> spatial.Pose:
    """World placements of the frames ``idx`` from the body poses."""
    Xb = _with_world(poses)
    fb = frame_bodies(model)[idx]
    return spatial.compose(spatial.Pose(Xb.R[fb], Xb.p[fb]), spatial.Pose(model.frame_R[idx], model.frame_p[idx]))


def frame_placements(model: Model, q: Float[Array, " nq"]) -> spatial.Pose:
    """World placement of every named frame: ``Pose(R (nf,3,3), p (nf,3))`` (frames on the world
    stay fixed)."""
    return frame_poses(model, forward_kinematics(model, q), np.arange(len(model.frame_names)))


def frame_placement(model: Model, q, frame: str) -> spatial.Pose:
    """World placement of one named frame: ``Pose(R (3,3), p (3,))``."""
    return frame_poses(model, forward_kinematics(model, q), model.frame_index(frame))


def body_velocities(model: Model, q, qd, kinematics: Kinematics | None = None) -> Float[Array, "nb 6"]:
    """Spatial velocity of every body in its own frame ``[omega; v]`` (Rodriguez86 (5.1)-(5.2));
    those of ``kinematics`` where it was built with this ``qd``, else from its joint data."""
    if kinematics is not None and kinematics.velocities is not None:
        return kinematics.velocities
    z = jnp.zeros(model.nv, model.dtype)
    return rnea_full(model, q, qd, z, gravity=False, kinematics=kinematics).v


def body_accelerations(model: Model, q, qd, qdd) -> Float[Array, "nb 6"]:
    """Spatial acceleration of every body in its own frame, without gravity (Rodriguez86 (5.4)-(5.6);
    the linear part is the body-frame derivative of ``v``: a spatial, not a classical, acceleration)."""
    return rnea_full(model, q, qd, qdd, gravity=False).a


def dof_motions_world(
    model: Model, q, kinematics: Kinematics | None = None
) -> tuple[Float[Array, "6 nv"], spatial.Pose]:
    """The motion subspace of every dof in world coordinates about the world origin (the
    columns of the world Jacobian, ``phi^T H^T`` of Rodriguez86 (7.2)), and the body poses
    (those of ``kinematics`` where given)."""
    kin = kinematics if kinematics is not None else _kinematics(model, q)
    return kin.dofs, kin.poses


@full_precision
def jacobians_from_world(model: Model, Jw, Xf: spatial.Pose, bodies, reference: str):
    """Jacobians of frames (poses ``Xf``, leading axis m) on ``bodies`` (``nb`` = the world;
    static or traced indices)."""
    if reference not in REFERENCES:
        raise ValueError(f"reference must be one of {REFERENCES}, got '{reference}'")
    lay = model.layout
    anc = np.concatenate([lay.ancestor, np.zeros((model.nb, 1), bool)], 1)  # world column: no dof
    if isinstance(bodies, jax.Array):  # traced indices: gather the rows
        mask = jnp.asarray(anc[lay.dof_body].T)[bodies]  # (m, nv)
    else:
        mask = jnp.asarray(anc[lay.dof_body][:, np.asarray(bodies)].T)
    J = jnp.where(mask[:, None, :], Jw[None], 0.0)  # (m, 6, nv)
    if reference == "world":
        return J
    ang, lin = J[:, :3], J[:, 3:]
    lin = lin + jnp.swapaxes(spatial.cross(jnp.swapaxes(ang, 1, 2), Xf.p[:, None, :]), 1, 2)  # v_p = v_o + w x p
    if reference == "local":
        Rt = jnp.swapaxes(Xf.R, 1, 2)
        ang, lin = Rt @ ang, Rt @ lin
    return jnp.concatenate([ang, lin], 1)


def frame_jacobians(model: Model, q: Float[Array, " nq"], reference: str = "local") -> Float[Array, "nf 6 nv"]:
    """Jacobians of all named frames at once: ``(nf, 6, nv)``, rows ``[omega; v]`` in the chosen
    ``reference`` ("local", "world" or "local_world_aligned")."""
    check(model, "frame_jacobians", q=q)
    Jw, poses = dof_motions_world(model, q)
    idx = np.arange(len(model.frame_names))
    return jacobians_from_world(model, Jw, frame_poses(model, poses, idx), frame_bodies(model), reference)


@full_precision
def frame_jacobian(model: Model, q: Float[Array, " nq"], frame: str, reference: str = "local") -> Float[Array, "6 nv"]:
    """Jacobian ``J`` of a named frame: its spatial velocity is ``J @ qd`` (rows ``[omega; v]``,
    in the chosen ``reference``: "local", "world" or "local_world_aligned")."""
    check(model, "frame_jacobian", q=q)
    i = np.array([model.frame_index(frame)])
    Jw, poses = dof_motions_world(model, q)
    return jacobians_from_world(model, Jw, frame_poses(model, poses, i), frame_bodies(model)[i], reference)[0]


def body_jacobian(model: Model, q, body: str, reference: str = "local") -> Float[Array, "6 nv"]:
    """Jacobian of a body frame (see :func:`frame_jacobian`)."""
    check(model, "body_jacobian", q=q)
    b = model.body_index(body)
    Jw, poses = dof_motions_world(model, q)
    return jacobians_from_world(model, Jw, spatial.Pose(poses.R[b][None], poses.p[b][None]), [b], reference)[0]


def frame_jacobians_time_derivative(model: Model, q, qd, reference: str = "local") -> Float[Array, "nf 6 nv"]:
    """Time derivatives of :func:`frame_jacobians` along ``qd`` (see
    :func:`frame_jacobian_time_derivative`)."""
    check(model, "frame_jacobians_time_derivative", q=q, qd=qd)
    qdot = configuration_derivative(model, q, qd)
    return jax.jvp(lambda q_: frame_jacobians(model, q_, reference), (q,), (qdot.astype(q.dtype),))[1]


def frame_jacobian_time_derivative(model: Model, q, qd, frame: str, reference: str = "local") -> Float[Array, "6 nv"]:
    """``dJ/dt`` along the motion ``qd``: the exact derivative of :func:`frame_jacobian` in the
    same reference, by forward-mode differentiation along ``dq/dt`` (quaternion joints
    included). ``J qdd + dJ qd`` is then the frame's acceleration in that reference (classical
    for "local_world_aligned", spatial for "local")."""
    check(model, "frame_jacobian_time_derivative", q=q, qd=qd)
    qdot = configuration_derivative(model, q, qd)
    return jax.jvp(lambda q_: frame_jacobian(model, q_, frame, reference), (q,), (qdot.astype(q.dtype),))[1]


def composite_inertias_from_poses(model: Model, poses: spatial.Pose) -> spatial.RigidInertia:
    """Composite inertia of every body's subtree in world coordinates about the world origin:
    the body inertias moved to the world, summed by a gather (``R_{k,k}`` of Rodriguez86
    (7.8)-(7.9), the ``phi`` transforms absorbed by the world coordinates)."""
    return tree.subtree_sum(model.layout, spatial.inertia_to_parent(poses, model.body_inertias()))


def center_of_mass(model: Model, q: Float[Array, " nq"]) -> Float[Array, " 3"]:
    """World position of the centre of mass of all bodies (the world's own links excluded)."""
    check(model, "center_of_mass", q=q)
    poses = forward_kinematics(model, q)
    c = spatial.transform_point(poses, model.com)
    return jnp.sum(model.mass[:, None] * c, 0) / jnp.sum(model.mass)


def center_of_mass_jacobian(model: Model, q: Float[Array, " nq"]) -> Float[Array, "3 nv"]:
    """``Jcom`` with ``dcom/dt = Jcom qd``: column d is ``(m_sub lin_d + ang_d x h_sub) / m``,
    with ``(m_sub, h_sub)`` the mass and first moment of the subtree moved by dof d (world
    frame, from the composite inertias of Rodriguez86 (7.8)-(7.9))."""
    check(model, "center_of_mass_jacobian", q=q)
    Jw, poses = dof_motions_world(model, q)
    comp = composite_inertias_from_poses(model, poses)
    db = model.layout.dof_body
    m_sub, h_sub = comp.m[db], comp.h[db]  # (nv,), (nv,3)
    cols = m_sub[:, None] * Jw[3:].T + spatial.cross(Jw[:3].T, h_sub)
    return cols.T / jnp.sum(model.mass)
