"""The interface of the spatial algebra that the link steps of :mod:`jaxdyn.algorithms` are
written with (the ``alg`` argument of ``aba.velocity_step``, ``rnea.forward_step``,
``crba.composite_step`` and the others; docs/architecture.md, "Spatial algebra").

An algebra fixes a layout, never the physics: :class:`jaxdyn.spatial.ArrayAlgebra` (one sample,
or stacks of links or samples, as arrays), :class:`jaxdyn.spatial.DenseArrayAlgebra` (its
transforms as 6x6 products) and :class:`jaxdyn.kernels.soa_algebra.SoAAlgebra` (struct of arrays:
every scalar a ``(B,)`` array, a model number or a Python float, as the batch and Pallas kernels
run it). The values are whatever the layout makes of them, so they are typed ``Any``: a motion
``m = [w; v]`` or force ``f = [n; f]`` (Rodriguez86 (3.5)-(3.6); Featherstone's spatial vectors),
a transform ``X`` (the placement of a frame B in a frame A; ``phi`` is its force transform,
``phi^T`` its motion transform), a rigid inertia ``I`` (Rodriguez86 (3.1)), an articulated
inertia ``P`` (a symmetric 6x6, Rodriguez86 (8.4)), a motion subspace ``S`` (``H^T``: k motions)
and joint-space values (k numbers). Conventions are those of :mod:`jaxdyn.spatial`.

mypy checks that each concrete algebra provides these operations with these signatures (the
assignments at the end of :mod:`jaxdyn.spatial` and :mod:`jaxdyn.kernels.soa_algebra`); the
ArrayAlgebras are used as classes (their operations are static), the SoA algebra as an instance
(it holds the runtime 1 of the CPU kernels).
"""

from __future__ import annotations

from typing import Any, Protocol


class Algebra(Protocol):
    """The operations the shared link steps call (and nothing else)."""

    # motions and forces
    def motion_to_child(self, X: Any, m: Any) -> Any:
        """``phi^T m``: a motion given in the parent frame A expressed in the child frame B."""
        ...

    def force_to_parent(self, X: Any, f: Any) -> Any:
        """``phi f``: a force given in the child frame B expressed in the parent frame A."""
        ...

    def cross_motion(self, v: Any, m: Any) -> Any:
        """``v x m``: the spatial cross product of two motions (Featherstone's ``crm``)."""
        ...

    def cross_force(self, v: Any, f: Any) -> Any:
        """``v x* f``: a motion crossed with a force (Featherstone's ``crf``)."""
        ...

    def add(self, *xs: Any) -> Any:
        """The sum of motions, or of forces."""
        ...

    def sub(self, a: Any, b: Any) -> Any:
        """``a - b`` of motions or forces; ``b = None`` is zero."""
        ...

    def dot(self, m: Any, f: Any) -> Any:
        """``m . f``: the pairing of a motion and a force (a power; a mass-matrix entry)."""
        ...

    # rigid inertias and transforms
    def inertia_apply(self, I: Any, m: Any) -> Any:
        """``I m``: a rigid inertia times a motion, a force (Rodriguez86 (3.1))."""
        ...

    def inertia_to_parent(self, X: Any, I: Any) -> Any:
        """``phi I phi^T``: a rigid inertia about B's origin expressed about A's (parallel axes)."""
        ...

    def inertia_add(self, a: Any, b: Any) -> Any:
        """Two rigid inertias about the same origin, joined (a composite inertia, (7.9))."""
        ...

    def compose(self, a: Any, b: Any) -> Any:
        """The placement of C in A from B in A (``a``) and C in B (``b``)."""
        ...

    def subspace_to_parent(self, X: Any, S: Any) -> Any:
        """A joint's motion subspace ``S`` given in B expressed in A (each column a motion)."""
        ...

    # joint space: a motion subspace S (k motions) and k-vectors
    def smul(self, S: Any, x: Any) -> Any:
        """``S x``: joint-space values to a motion (or, for a gain ``G``, a force)."""
        ...

    def stmul(self, S: Any, f: Any) -> Any:
        """``S^T f``: a force (or motion) to joint space, the projection onto the joint's axes."""
        ...

    def joint_axpy(self, a: Any, x: Any, y: Any) -> Any:
        """``a * x + y`` for joint-space values (entrywise)."""
        ...

    def joint_sub(self, a: Any, b: Any) -> Any:
        """``a - b`` for joint-space values."""
        ...

    # articulated inertias and the Riccati filter (Rodriguez86 (8.4)-(8.9))
    def art_of(self, I: Any) -> Any:
        """A rigid inertia as an articulated one (the seed ``P = M_k`` of (8.4))."""
        ...

    def art_to_parent(self, X: Any, P: Any) -> Any:
        """``phi P phi^T``: an articulated inertia given in B expressed in A ((8.4))."""
        ...

    def art_apply(self, P: Any, m: Any) -> Any:
        """``P m``: an articulated inertia times a motion, a force."""
        ...

    def art_times_S(self, P: Any, S: Any) -> Any:
        """``U = P S`` (``P H^T``): the articulated inertia times each column of ``S``."""
        ...

    def art_sub_outer(self, P: Any, G: Any, U: Any) -> Any:
        """``P - G U^T``: the articulated inertia handed to the parent, ``P+`` of (8.9)."""
        ...

    def joint_inertia(self, S: Any, U: Any, armature: Any) -> Any:
        """``D = S^T U + diag(armature)`` ((8.5)): the joint-space inertia of the articulated body."""
        ...

    def joint_factor(self, D: Any) -> Any:
        """What the algebra solves ``D`` with: ``D^-1``, ``1 / D`` or an ``L D L^T`` factorisation."""
        ...

    def joint_solve(self, F: Any, r: Any) -> Any:
        """``D^-1 r`` from :meth:`joint_factor`'s ``F`` (``e+ = D^-1 e-`` of (8.8))."""
        ...

    def gain(self, U: Any, F: Any) -> Any:
        """The Kalman gain ``G = U D^-1`` ((8.5)) from ``U`` and :meth:`joint_factor`'s ``F``."""
        ...
