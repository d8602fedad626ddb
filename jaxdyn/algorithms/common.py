"""Per-sample joint data shared by the algorithms, and argument checks."""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .. import joints, spatial, tree
from ..model import Model


def full_precision(f):
    """Trace ``f`` with its matrix products at full float32 precision.

    On GPUs with TensorFloat-32 (Ampere, Hopper) XLA computes a float32 ``dot_general`` of
    default precision in TF32 (10-bit mantissa): the H100 run of 2026-11-23 measured the generic
    CRBA (its ``S^T F`` product) 3e-4 away from the elementwise SoA kernel, against 1e-7 for ABA
    and RNEA, whose products are explicit sums. The context is read when the products are traced,
    so it holds under the caller's ``jit``, ``vmap`` and differentiation (transposed products
    keep the precision). CPU results are unchanged. The library's global JAX settings are
    untouched: this is a trace-time context around ``f`` only.
    """

    @functools.wraps(f)
    def wrapped(*args, **kwargs):
        with jax.default_matmul_precision("highest"):
            return f(*args, **kwargs)

    return wrapped


class JointData(NamedTuple):
    """Joint transforms and motion subspaces for one configuration.

    X: placements of the scanned links in their parents (``phi^T(k+1, k)`` of Rodriguez86, compact);
    S: their motion subspaces ``(n, 6, k)`` (Rodriguez86's ``H^T``);
    X_root, S_root: the free root's pose in the world and ``S = 1_6`` (floating base only).
    """

    X: spatial.Pose
    S: jnp.ndarray
    X_root: spatial.Pose | None
    S_root: jnp.ndarray | None


class Kinematics(NamedTuple):
    """What the algorithms at one configuration share, computed once per call by
    :func:`jaxdyn.kinematics` (as MuJoCo's ``mj_kinematics`` fills ``xpos``, ``xmat`` and
    ``cdof`` of ``Data`` for every later stage): the joint transforms and motion subspaces, the
    world placement of every body and the motion subspace of every dof in world coordinates.

    joints: :class:`JointData` (``X``, ``S`` per scanned link; the free root's pose);
    poses: world placements of the bodies, ``Pose(R (nb,3,3), p (nb,3))`` (a scatter of
    ``X_world,k = X_world,parent o X_k``);
    dofs: ``(6, nv)``, each dof's motion subspace in world coordinates about the world origin
    (``phi^T H^T`` of Rodriguez86 (7.2): the columns of the world Jacobian);
    velocities: ``(nb, 6)``, every body's spatial velocity ``[omega; v]`` in its own frame at the
    joint velocity the record was built with (Rodriguez86 (5.1)), or None (built from ``q``
    alone).

    Passed as ``kinematics=`` to :func:`jaxdyn.aba`, :func:`jaxdyn.rnea`, :func:`jaxdyn.crba`,
    the contact's :meth:`~jaxdyn.contact.Contact.joint_space` and
    :meth:`~jaxdyn.contact.Contact.wrenches`, it replaces their own forward kinematics. It must
    be the record of the same ``q`` (and of the model's geometry: a model that differs only in
    inertias, armature, damping or gravity shares it), built inside any function that is
    differentiated with respect to ``q`` or the model, so that the derivatives pass through it.
    """

    joints: JointData
    poses: spatial.Pose
    dofs: jnp.ndarray
    velocities: jnp.ndarray | None = None


def joint_data(model: Model, q) -> JointData:
    q = jnp.asarray(q)  # a list or a numpy array, as users pass them
    lay = model.layout
    lb = lay.link_bodies
    axis = model.axis[lb]
    placement = spatial.Pose(model.placement_R[lb], model.placement_p[lb])
    _, lead = joints.model_screw(model, lb)
    X = joints.link_poses(lay, placement, axis, tree.q_to_link_values(lay, q).astype(axis.dtype), lead)
    S = joints.link_subspaces(lay, axis, lead)
    if lay.floating:
        return JointData(X, S, joints.free_pose(q[:7].astype(axis.dtype)), joints.free_subspace(axis.dtype))
    return JointData(X, S, None, None)


def check(model: Model, fn: str, **args):
    """Check the shapes of the model's arrays and of the named arguments (static, so free under
    jit). A model array one axis short is a model that ``jax.vmap`` mapped over (no
    ``in_axes=None`` for it); an argument one axis long is a batch given without ``vmap``, one
    axis short an argument that ``vmap`` mapped over while it had no batch axis: the messages
    name the fix.

    Recognised names: q (nq), qd/qdd/tau/v/x/b (nv), f_ext (nb, 6), kinematics (a
    :class:`Kinematics` record of the model).
    """
    import jaxdyn

    from ..io.errors import shapes

    if not isinstance(model, Model):
        raise TypeError(
            f"{fn}: the first argument must be a jaxdyn.Model, got "
            f"{'an array' if hasattr(model, 'shape') else type(model).__name__} (arguments in "
            "the wrong order? every function takes the model first)"
        )
    callee = f"jaxdyn.{fn}" if hasattr(jaxdyn, fn) else fn
    vmap = f"jax.vmap({callee}, in_axes=(None{', 0' * sum(x is not None for x in args.values())}))"
    for f, want in shapes(model).items():
        shape = tuple(np.shape(getattr(model, f)))
        if shape != want and shape == want[1:]:
            raise ValueError(
                f"{fn}: model.{f} has shape {shape}, expected {want} for model '{model.name}': jax.vmap mapped "
                f"over the model's own arrays. vmap over the state only, with in_axes=None for the model: "
                f"{vmap} (to batch over models, stack whole models)"
            )
    sizes = {"q": (model.nq,), "f_ext": (model.nb, 6)}
    kin = args.pop("kinematics", None)
    if kin is not None:
        _check_kinematics(model, fn, kin)
    for name, x in args.items():
        if x is None:
            continue
        want = sizes.get(name, (model.nv,))
        shape = tuple(np.shape(x))
        if shape == want:
            continue
        if shape[1:] == want:
            hint = f"; one sample per call: batch with {vmap}"
        elif shape == want[1:]:
            hint = f"; under jax.vmap, give in_axes=None to an argument without a batch axis, as to the model in {vmap}"
        else:
            hint = ""
        raise ValueError(
            f"{fn}: argument '{name}' has shape {shape}, expected {want} for model "
            f"'{model.name}' (nq={model.nq}, nv={model.nv}, nb={model.nb}){hint}"
        )


def _check_kinematics(model: Model, fn: str, kin) -> None:
    """A ``kinematics=`` argument that is not a :class:`Kinematics` record of ``model``."""
    if not isinstance(kin, Kinematics):
        raise TypeError(
            f"{fn}: argument 'kinematics' must be a jaxdyn.Kinematics record (from "
            f"jaxdyn.kinematics(model, q)), got {type(kin).__name__}"
        )
    want = {"dofs": (6, model.nv), "poses.p": (model.nb, 3)}
    got = {"dofs": tuple(np.shape(kin.dofs)), "poses.p": tuple(np.shape(kin.poses.p))}
    if kin.velocities is not None:
        want["velocities"] = (model.nb, 6)
        got["velocities"] = tuple(np.shape(kin.velocities))
    for name, shape in want.items():
        if got[name] != shape:
            why = (
                "a batch of records: map it with the same jax.vmap as q"
                if got[name][1:] == shape
                else "the record of another model"
            )
            raise ValueError(
                f"{fn}: argument 'kinematics' has {name} of shape {got[name]}, expected {shape} for model "
                f"'{model.name}' (nv={model.nv}, nb={model.nb}): {why}"
            )


def world_motion(model: Model, dtype):
    """The world's spatial acceleration that stands in for gravity: ``[0; -g]`` (Rodriguez86 R3:
    the base boundary condition lambda_N^+ = [0; -g])."""
    return jnp.concatenate([jnp.zeros(3, dtype), -model.gravity.astype(dtype)])


def check_state(model: Model, q, qd=None, qdd=None, tau=None, f_ext=None, quaternion_tol: float = 1e-3):
    """Eagerly validate a (single or batched) state before handing it to the jitted kernels.

    Checks trailing shapes, that every entry is finite (naming the argument and the first bad
    index) and that the quaternions in ``q`` have unit norm. Not traceable (it reads values);
    the kernels themselves never branch on data.
    """
    args = {"q": q, "qd": qd, "qdd": qdd, "tau": tau, "f_ext": f_ext}
    for name, x in args.items():
        if x is None:
            continue
        want = (model.nq,) if name == "q" else (model.nb, 6) if name == "f_ext" else (model.nv,)
        arr = np.asarray(x)
        if arr.shape[arr.ndim - len(want) :] != want:
            raise ValueError(
                f"check_state: argument '{name}' has shape {arr.shape}, expected (..., {', '.join(map(str, want))})"
            )
        bad = ~np.isfinite(arr)
        if bad.any():
            idx = np.argwhere(bad)[0]
            raise ValueError(
                f"check_state: argument '{name}' contains NaN or inf at index {tuple(int(i) for i in idx) if len(idx) > 1 else int(idx[0])}"
            )
    lay = model.layout
    qa = np.asarray(q)
    for j, t in enumerate(model.joint_types):
        at = joints.get(t).quaternion_at
        if at is not None:
            s = int(lay.q_start[j]) + at
            n = np.linalg.norm(qa[..., s : s + 4], axis=-1)
            if np.any(np.abs(n - 1) > quaternion_tol):
                raise ValueError(
                    f"check_state: the quaternion of joint '{model.joint_names[j]}' (q[{s}:{s + 4}]) is not unit norm"
                )
