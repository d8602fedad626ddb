"""Composite-rigid-body algorithm: the joint-space mass matrix (Rodriguez86 (7.7)-(7.11)).

Rodriguez writes ``M_{k,i} = H_k R_{k,i} H_i^T`` with ``R_{k,i} = phi_{k,i} R_{i,i}`` for
``i <= k`` and ``R_{i,i}`` the composite inertia from the "Lyapunov-like" recursion
``R_{k+1,k+1} = phi R_{k,k} phi^T + M_{k+1}`` (7.8)-(7.9). Expressed in world coordinates every
``phi`` is absorbed into the coordinates: the composite inertia of a subtree is a plain sum of
its bodies' world-frame inertias (a gather), and ``M[r, c] = S_r^T Ic_{b(c)} S_c`` whenever the
body of dof r is an ancestor of (or equal to) the body of dof c. The last step is one dense
``S^T F`` product, which is what a GPU does best; cost O(N) for the gather plus O(N^2) entries.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from .. import spatial, tree
from ..model import Model
from .common import check, full_precision, joint_data
from .kinematics import composite_inertias_from_poses, forward_kinematics


def composite_inertias_world(model: Model, q) -> spatial.RigidInertia:
    """Composite inertia of the subtree of every body, world coordinates about the world
    origin (``R_{k,k}`` of Rodriguez86 (7.8)-(7.9), in the world frame)."""
    check(model, "composite_inertias_world", q=q)
    return composite_inertias_from_poses(model, forward_kinematics(model, q))


def world_step(alg, X_wp, X, S, I):
    """One link of the outward sweep of the CRBA in world coordinates (or any common frame): the
    link's placement ``X_w = X_wp X`` from its parent's, and its motion subspace and rigid inertia
    moved there (:func:`to_common`). Returns ``(X_w, (S_w, I_w))``. Composite inertias are then
    subtree sums of the ``I_w`` (the ``phi`` of Rodriguez86 (7.8)-(7.9) absorbed by the common
    coordinates), and the entries ``M[r, c] = S_r^T Ic S_c`` (Rodriguez86 (7.10)-(7.11)).

    Written over an algebra ``alg`` as the ABA's and RNEA's steps (docs/architecture.md); the
    batch kernels run it with :class:`jaxdyn.kernels.soa.SoAAlgebra`."""
    Xw = alg.compose(X_wp, X)
    return Xw, to_common(alg, Xw, S, I)


def to_common(alg, Xw, S, I):
    """A link's motion subspace and rigid inertia in the common frame, ``phi^T H^T`` and
    ``phi M phi^T`` (Rodriguez86 (7.2), (7.8)), from its placement ``Xw`` there. The one-sample
    CRBA applies it to all links at once after the placements' scatter (one vectorised pass,
    cheaper than inside a scanned step)."""
    return alg.subspace_to_parent(Xw, S), alg.inertia_to_parent(Xw, I)


@full_precision
def crba(model: Model, q: Float[Array, " nq"]) -> Float[Array, "nv nv"]:
    """The joint-space mass matrix ``M(q)`` (symmetric positive definite), ``+ diag(armature)``."""
    check(model, "crba", q=q)
    lay = model.layout
    alg = spatial.ArrayAlgebra
    jd = joint_data(model, q)
    I = model.body_inertias()
    lb = np.asarray(lay.link_bodies)
    take = lambda t, idx: type(t)(*(x[idx] for x in t))  # noqa: E731

    poses = forward_kinematics(model, q)  # the placements' scatter: X_w = X_wp X
    # to_common's two transforms, each applied to all bodies (links) at once
    Iw = alg.inertia_to_parent(poses, I)
    link_S = root_S = None
    if len(lb):  # (n, k, 6)
        link_S = jnp.swapaxes(alg.subspace_to_parent(spatial.Pose(poses.R[lb], poses.p[lb]), jd.S), -1, -2)
    if jd.S_root is not None:  # (6 dof, 6)
        root_S = alg.subspace_to_parent(spatial.Pose(poses.R[0], poses.p[0]), jd.S_root).T
    Ic = tree.subtree_sum(lay, Iw)
    Sw = tree.link_values_to_v(lay, link_S, root_S)  # (nv, 6): the dofs' motions, world coordinates
    db = np.asarray(lay.dof_body)
    # M[r, c] = S_r^T Ic_b(c) S_c (Rodriguez86 (7.10)-(7.11)) for every pair at once: one matrix
    # product (a GEMM under vmap), kept where body(r) is an ancestor of body(c) or the reverse
    F = alg.inertia_apply(take(Ic, db), Sw)  # (nv, 6): Ic S_c
    G = Sw @ F.T  # G[r, c] = S_r . F_c
    anc = jnp.asarray(np.asarray(lay.ancestor)[db][:, db])  # anc[r, c]: body(r) ancestor-or-self of body(c)
    M = jnp.where(anc, G, jnp.where(anc.T, G.T, 0.0))
    return M + jnp.diag(model.armature)
