"""The spatial algebra's formulas, written once over the 3-vector operations of a data layout.

A motion is ``(w, v)`` (angular, linear), a force ``(n, f)`` (moment, force), a transform
``(R, p)`` the placement of frame B in frame A (rotation, origin), a rigid inertia
``(m, h, Ibar)`` about a frame origin (Rodriguez86 (3.1): mass, first moment ``h = m c``,
rotational inertia about the origin) and an articulated inertia the blocks ``(A, B, C)`` of the
symmetric ``[[A, B], [B^T, C]]`` (Rodriguez86 (8.4)). Every formula takes ``o``, a layout's
operations on 3-vectors, scalars, 3x3 matrices and symmetric 3x3 matrices:

* :class:`jaxdyn.spatial.ArrayOps`: arrays ``(..., 3)``, ``(...)`` and ``(..., 3, 3)`` (one
  sample, or stacks of links or samples), a symmetric matrix stored whole;
* :class:`jaxdyn.kernels.soa_algebra.SoAOps`: tuples of scalars, each a ``(B,)`` array, a 0-d
  model number or a Python float whose structural zeros fold away (:mod:`jaxdyn.scalars`), a
  symmetric matrix stored as its 6 upper entries.

The operations a formula uses: ``add``, ``sub``, ``scale`` (scalar times vector), ``dot``,
``cross``, ``mv``, ``mtv`` (``M x``, ``M^T x``), ``mm``, ``sym_mv``, ``rot_sym``, ``rot_gen``
(``R S R^T`` of a symmetric and of a general matrix), ``skew`` (``[p]x``), ``sym_full``,
``sym_of`` (symmetric storage to a general matrix and back), ``transpose``, ``eye`` (``s 1``),
``outer`` (``a b^T``), ``gadd``, ``gsub`` (general matrices) and ``sadd``, ``smul`` (scalars).
The link steps' algebras (:class:`jaxdyn.spatial.ArrayAlgebra`,
:class:`jaxdyn.kernels.soa_algebra.SoAAlgebra`) apply these formulas to their layouts.
"""

from __future__ import annotations


def motion_to_child(o, R, p, w, v):
    """``BX_A m = [R^T w; R^T (v - p x w)]``: a motion in A expressed in B (Rodriguez86's
    ``phi^T``)."""
    return o.mtv(R, w), o.mtv(R, o.sub(v, o.cross(p, w)))


def motion_to_parent(o, R, p, w, v):
    """``AX_B m = [R w; R v + p x R w]``: a motion in B expressed in A."""
    wr = o.mv(R, w)
    return wr, o.add(o.mv(R, v), o.cross(p, wr))


def force_to_parent(o, R, p, n, f):
    """``AX*_B f = [R n + p x R f; R f]``: a force in B expressed in A (Rodriguez86's ``phi``)."""
    fr = o.mv(R, f)
    return o.add(o.mv(R, n), o.cross(p, fr)), fr


def force_to_child(o, R, p, n, f):
    """``BX*_A f = [R^T (n - p x f); R^T f]``: a force in A expressed in B."""
    return o.mtv(R, o.sub(n, o.cross(p, f))), o.mtv(R, f)


def cross_motion(o, w, v, mw, mv):
    """``[w; v] x [mw; mv] = [w x mw; w x mv + v x mw]`` (JainRodriguez95 (5.5); Featherstone's
    ``crm``)."""
    return o.cross(w, mw), o.add(o.cross(w, mv), o.cross(v, mw))


def cross_force(o, w, v, n, f):
    """``[w; v] x* [n; f] = [w x n + v x f; w x f]`` (Featherstone's ``crf``)."""
    return o.add(o.cross(w, n), o.cross(v, f)), o.cross(w, f)


def inertia_apply(o, m, h, Ib, w, v):
    """A rigid inertia times a motion: ``[Ibar w + h x v; m v - h x w]`` (Rodriguez86 (3.1))."""
    return o.add(o.sym_mv(Ib, w), o.cross(h, v)), o.sub(o.scale(m, v), o.cross(h, w))


def compose(o, Ra, pa, Rb, pb):
    """The placement of C in A from B in A ``(Ra, pa)`` and C in B ``(Rb, pb)``."""
    return o.mm(Ra, Rb), o.add(pa, o.mv(Ra, pb))


def rigid_to_parent(o, R, p, m, h, Ib):
    """``X* I X``: a rigid inertia about B's origin expressed about A's, compactly:
    ``h' = R h + m p`` and ``Ibar' = R Ibar R^T + (2 p.(R h) + m p.p) 1 - (R h) p^T - p (R h)^T
    - m p p^T`` (the parallel-axis theorem: a mass ``m`` at ``c`` moved to ``c + p`` adds
    ``m ((2 c.p + p.p) 1 - c p^T - p c^T - p p^T)``)."""
    hr = o.mv(R, h)
    Ibr = o.rot_sym(R, Ib)
    mp = o.scale(m, p)
    tr = o.sadd(o.smul(2.0, o.dot(p, hr)), o.dot(mp, p))
    moved = o.gadd(o.outer(hr, p), o.outer(p, hr), o.outer(mp, p))
    return m, o.add(hr, mp), o.sym_of(o.gsub(o.gadd(o.sym_full(Ibr), o.eye(tr)), moved))


def art_to_parent(o, R, p, A, B, C):
    """``X* P X`` for a symmetric ``P = [[A, B], [B^T, C]]`` (an articulated inertia): with
    ``A1, B1, C1`` the blocks rotated by ``R`` (``R . R^T``), ``C' = C1``,
    ``B' = B1 + [p]x C1`` and ``A' = A1 - K - K^T - [p]x C1 [p]x`` with ``K = B1 [p]x``
    (Rodriguez86 (8.4) between frames)."""
    A1, B1, C1 = o.rot_sym(R, A), o.rot_gen(R, B), o.rot_sym(R, C)
    P = o.skew(p)
    PC = o.mm(P, o.sym_full(C1))
    K = o.mm(B1, P)
    An = o.gsub(o.gsub(o.sym_full(A1), o.gadd(K, o.transpose(K))), o.mm(PC, P))
    return o.sym_of(An), o.gadd(B1, PC), C1
