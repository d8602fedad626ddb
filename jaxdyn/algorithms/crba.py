"""Composite-rigid-body algorithm: the joint-space mass matrix (Rodriguez86 (7.7)-(7.11)).

Rodriguez writes ``M_{k,i} = H_k R_{k,i} H_i^T`` (7.10) with ``R_{k,i} = phi_{k,i} R_{i,i}`` for
``i <= k`` (7.7) and ``R_{i,i}`` the composite inertia from the "Lyapunov-like" recursion
``R_{k+1,k+1} = phi R_{k,k} phi^T + M_{k+1}`` (7.8)-(7.9). The link steps below state these
equations once, over an algebra ``alg`` (docs/architecture.md):

* :func:`composite_step`: (7.9), a child's composite inertia added to its parent's;
* :func:`column_force`, :func:`column_step`: a column ``R_{k,i} H_i^T`` of (7.7), started at its
  own link and moved one joint toward the base;
* :func:`entry`: (7.10), ``M_{k,i} = H_k R_{k,i} H_i^T``.

Their values are in the algebra's layout: with :class:`~jaxdyn.spatial.ArrayAlgebra` a motion or
force is a ``(..., 6)`` array, ``[angular; linear]``, a transform a :class:`~jaxdyn.spatial.Pose`
and a rigid inertia a :class:`~jaxdyn.spatial.RigidInertia` (``m (...)``, ``h (..., 3)``,
``Ibar (..., 3, 3)``), and an entry ``(...)``; with the struct-of-arrays algebra every number
is a scalar of the batch.

Frames are inputs to them. In body frames every ``phi`` is a joint's placement (Featherstone08
table 6.2). In a common frame (the world, or a free root's body frame) :func:`world_step` first
moves each link's ``H^T`` and ``M`` there; every ``phi`` of the recursion is then the identity,
composite inertias are plain subtree sums and a column is the same force at every ancestor.
The one-sample :func:`crba` takes the common frame and forms all entries as one dense
``S^T F`` product, which is what a GPU does best; cost O(N) for the gather plus O(N^2) entries.
"""

from __future__ import annotations

import jax.numpy as jnp
from jaxtyping import Array, Float

from .. import spatial
from ..algebra import Algebra
from ..model import Model
from .common import Kinematics, check, full_precision
from .kinematics import composite_inertias_from_poses, dof_motions_world, forward_kinematics


def composite_inertias_world(model: Model, q) -> spatial.RigidInertia:
    """Composite inertia of the subtree of every body, world coordinates about the world
    origin (``R_{k,k}`` of Rodriguez86 (7.8)-(7.9), in the world frame)."""
    check(model, "composite_inertias_world", q=q)
    return composite_inertias_from_poses(model, forward_kinematics(model, q))


def world_step(alg: Algebra, X_wp, X, S, I):
    """One link of the outward sweep of the CRBA in world coordinates (or any common frame): the
    link's placement ``X_w = X_wp X`` from its parent's, and its motion subspace and rigid inertia
    moved there (:func:`to_common`). Returns ``(X_w, (S_w, I_w))``. Composite inertias are then
    subtree sums of the ``I_w`` (the ``phi`` of Rodriguez86 (7.8)-(7.9) absorbed by the common
    coordinates), and the entries ``M[r, c] = S_r^T Ic S_c`` (Rodriguez86 (7.10)-(7.11)).

    Written over an algebra ``alg`` as the ABA's and RNEA's steps (docs/architecture.md); the
    batch kernels run it with :class:`jaxdyn.kernels.soa_algebra.SoAAlgebra`."""
    Xw = alg.compose(X_wp, X)
    return Xw, to_common(alg, Xw, S, I)


def to_common(alg: Algebra, Xw, S, I):
    """A link's motion subspace and rigid inertia in the common frame, ``phi^T H^T`` and
    ``phi M phi^T`` (Rodriguez86 (7.2), (7.8)), from its placement ``Xw`` there. The one-sample
    :func:`crba` applies the same two transforms (``spatial.motion_matrix_to_parent``,
    ``spatial.inertia_to_parent``, :class:`~jaxdyn.spatial.ArrayAlgebra`'s ``subspace_to_parent``
    and ``inertia_to_parent``) to all links at once, through :func:`dof_motions_world` and
    :func:`composite_inertias_from_poses`, which the Jacobians and the centre of mass share."""
    return alg.subspace_to_parent(Xw, S), alg.inertia_to_parent(Xw, I)


def composite_step(alg: Algebra, X, Ic, Ic_parent):
    """Rodriguez86 (7.9) on a tree, one child at a time: the parent's composite inertia
    ``Ic_parent`` (its own ``M``, plus the children added so far) gains the child's ``Ic``
    moved across the joint, ``phi Ic phi^T``; ``X`` is the child's placement in the parent."""
    return alg.inertia_add(Ic_parent, alg.inertia_to_parent(X, Ic))


def column_force(alg: Algebra, Ic, s):
    """``R_{i,i} H_i^T`` for one column ``s`` (a motion) of a link's motion subspace: the force
    ``Ic s`` (Rodriguez86 (7.7) with ``k = i``)."""
    return alg.inertia_apply(Ic, s)


def column_step(alg: Algebra, X, F):
    """``R_{k,i} H_i^T = phi_{k,i} R_{i,i} H_i^T`` one joint further toward the base
    (Rodriguez86 (7.7)): the column's force moved to the parent, ``X`` the placement of the link
    it was expressed at."""
    return alg.force_to_parent(X, F)


def entry(alg: Algebra, s, F):
    """``M_{k,i} = H_k R_{k,i} H_i^T`` (Rodriguez86 (7.10)) for one column ``s`` of link k's
    motion subspace and a column force ``F`` expressed at link k: ``s . F``."""
    return alg.dot(s, F)


@full_precision
def crba(model: Model, q: Float[Array, " nq"], kinematics: Kinematics | None = None) -> Float[Array, "nv nv"]:
    """The joint-space mass matrix ``M(q)`` (symmetric positive definite), ``+ diag(armature)``.
    ``kinematics``: optional :func:`jaxdyn.kinematics` record at ``q`` (None: computed here)."""
    check(model, "crba", q=q, kinematics=kinematics)
    lay = model.layout
    Sw, poses = dof_motions_world(model, q, kinematics)  # (6, nv)
    Ic = composite_inertias_from_poses(model, poses)
    db = lay.dof_body
    # common frame: every column force at once, and every entry as one product
    F = column_force(spatial.ArrayAlgebra, spatial.RigidInertia(Ic.m[db], Ic.h[db], Ic.Ibar[db]), Sw.T)  # (nv, 6)
    G = Sw.T @ F.T  # G[r, c] = entry(S_r, F_c) = S_r . (Ic_{b(c)} S_c)
    anc = jnp.asarray(lay.ancestor[db][:, db])  # anc[r, c]: body(r) ancestor-or-self of body(c)
    M = jnp.where(anc, G, jnp.where(anc.T, G.T, 0.0))
    return M + jnp.diag(model.armature)
