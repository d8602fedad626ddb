"""MuJoCo's soft contact as a normal-force law: ``Contact(normal="mujoco")``.

MuJoCo (documentation, chapter "Computation", MuJoCoComputation) solves for the constraint force
``f`` of a contact with the violation ``r = dist - margin`` (negative in penetration), its
normal velocity ``v_n = J v`` and acceleration ``J a``:

    f = max(0, D (aref - J a)),   aref = -B v_n - K imp r,   D = 1 / R,   R = (1 - imp) / imp * A     (M1)

with ``K``, ``B`` from the contact's ``solref``, ``imp`` its ``solimp`` impedance at ``|r|``
(:mod:`jaxdyn.constraints.impedance`), and ``A`` the approximate inverse inertia of the two bodies
at the reference configuration: the sum of their ``body_invweight0`` (translational part;
``Geoms.invweight``). The contact acts while ``dist < margin``. With the pyramidal cone (MuJoCo's
default, ``Geoms.cone``) the normal is carried by ``2 (condim - 1)`` edges ``n +- mu t`` whose
regulariser is ``R_e = 2 mu^2 (1 + mu^2) R`` (``mu`` the sliding friction): at rest their forces sum
to a normal force with ``D = 2 (condim - 1) / R_e``; with the elliptic cone, or ``condim`` 1,
``D = 1 / R``. jaxdyn keeps its own friction (:mod:`jaxdyn.contact.laws`) bounded by ``mu f_n``; the
normal force follows (M1), so a scene's penetration at rest and its impacts follow its authored
``solref``/``solimp``.

In MuJoCo's Euler step ``J a = (v_n' - v_n) / h`` with ``v_n'`` the end-of-step normal velocity,
so (M1) is a law of the end velocity that the ``"implicit_euler"`` step (:func:`jaxdyn.sim.step`)
solves for, as it solves jaxdyn's own law:

    f_n(v_n') = max(0, c0 - s v_n'),   c0 = D (K imp d - B v_n + v_n / h),   s = D / h,          (M2)

with ``d = -r`` the penetration, ``v_n`` the start velocity; non-increasing in ``v_n'``, so the
step's convex subproblems ((J4) of :class:`jaxdyn.contact.JointSpaceContacts`) keep their form. For
one frictionless contact the step's solution is MuJoCo's: the root of (M2) with ``a = a0 + M^-1
J^T f`` is ``f = max(0, (aref - J a0) / (A_exact + R))``. Outside a step (the explicit
integrators, :meth:`jaxdyn.contact.Contact.point_forces`, sensors) the force is (M1) with ``J a =
0``, ``c0 = D K imp d``, ``s = D B``: at rest, the step's.

The contacts' parameters combine as MuJoCo combines them: an explicit pair's own; else the geom of
higher ``priority``'s; else mixed by ``solmix`` (weights ``w1 = solmix1 / (solmix1 + solmix2)``, 0.5
where both are 0): ``solimp`` and a standard ``solref`` (both time constants positive) as weighted
means, a direct ``solref`` (either non-positive) element-wise as the minimum.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from .. import geometry
from ..constraints.impedance import MAXIMP, MINIMP, MINVAL, gains
from ..constraints.solve import impedance
from ..model import Model
from ..reference import body_invweights, reference_kinematics
from .pairs import collision_pairs
from .rules import combined

NORMAL_LAWS = ("hunt_crossley", "mujoco")


class SoftRows(NamedTuple):
    """The combined parameters of ``m`` contact rows: ``solref (m, 2)``, ``solimp (m, 5)``,
    ``invweight (m,)`` (the ``A`` of (M1)) and ``edges (m,)``, the cone's factor: ``D = edges /
    R_e`` (module docstring; ``R_e = R`` and ``edges = 1`` for the elliptic cone or ``condim`` 1)."""

    solref: Float[Array, "m 2"]
    solimp: Float[Array, "m 5"]
    invweight: Float[Array, " m"]
    edges: Float[Array, " m"]
    pyramidal: Float[Array, " m"]  # 1 where R_e = 2 mu^2 (1 + mu^2) R, else 0


def rows_between(g: geometry.Geoms, g1, g2, dtype) -> SoftRows:
    """The parameters of contacts between geoms ``g1`` and ``g2`` (static ``(m,)`` index arrays;
    ``-1``: a ground without a plane geom, MuJoCo's defaults and no weight), combined as in the
    module docstring."""
    i1, i2 = np.asarray(g1, np.int64), np.asarray(g2, np.int64)
    p1, p2, dim, k = combined(g, i1, i2)

    def table(x, default):  # per-geom rows with MuJoCo's default at index -1
        return jnp.concatenate([jnp.asarray(x, dtype), jnp.asarray(default, dtype)[None]])

    solref = table(g.solref, geometry.DEFAULT_SOLREF)
    solimp = table(g.solimp, geometry.DEFAULT_SOLIMP)
    solmix = table(g.solmix, 1.0)
    iw = table(g.invweight, (0.0, 0.0))
    m1, m2 = solmix[i1], solmix[i2]
    both = m1 + m2
    w1 = jnp.where(both >= MINVAL, m1 / jnp.where(both >= MINVAL, both, 1.0), 0.5)
    w1 = jnp.where(jnp.asarray(p1 > p2), 1.0, jnp.where(jnp.asarray(p1 < p2), 0.0, w1))[:, None]
    r1, r2 = solref[i1], solref[i2]
    standard = (r1[:, :1] > 0) & (r2[:, :1] > 0)
    ref = jnp.where(standard, w1 * r1 + (1 - w1) * r2, jnp.minimum(r1, r2))
    ref = jnp.where(jnp.asarray((p1 != p2)[:, None]), w1 * r1 + (1 - w1) * r2, ref)
    imp = w1 * solimp[i1] + (1 - w1) * solimp[i2]
    if np.any(k >= 0):
        own = (k >= 0)[:, None]
        ref = jnp.where(own, jnp.asarray(g.pair_solref, dtype)[np.maximum(k, 0)], ref)
        imp = jnp.where(own, jnp.asarray(g.pair_solimp, dtype)[np.maximum(k, 0)], imp)
    tran = iw[i1, 0] + iw[i2, 0]
    pyr = g.cone == "pyramidal"
    edges = np.where(pyr & (dim > 1), 2 * (dim - 1), 1)
    return SoftRows(ref, imp, tran, jnp.asarray(edges, dtype), jnp.asarray(pyr & (dim > 1), dtype))


def ground_rows(model: Model, cp, ground) -> SoftRows:
    """The soft-contact parameters (:mod:`jaxdyn.contact.soft`) of the ground contact points
    ``cp``: each geom against the ground's plane geom (``-1``: none)."""
    assert model.geoms is not None  # a model with geoms (make_model gives every model its Geoms)
    g1 = np.full(len(cp.geom), getattr(ground, "geom", -1), np.int64)
    return rows_between(model.geoms, g1, np.asarray(cp.geom, np.int64), model.dtype)


def pair_rows(model: Model, exclude) -> SoftRows:
    """The soft-contact parameters of every row of the pair table (:func:`collision_pairs`)."""
    assert model.geoms is not None  # a model with geoms (make_model gives every model its Geoms)
    table = collision_pairs(model, exclude)
    ij = np.asarray(table.pairs, np.int64).reshape(-1, 2)[table.row_pair]
    return rows_between(model.geoms, ij[:, 0], ij[:, 1], model.dtype)


def take_rows(rows: SoftRows, index) -> SoftRows:
    """The rows ``index`` (static or traced)."""
    return SoftRows(*(x[index] for x in rows))


def concat_rows(parts) -> SoftRows:
    return SoftRows(*(jnp.concatenate(x) for x in zip(*parts)))


def _regularisation(rows: SoftRows, phi, mu, dt=None):
    """``(D, K imp d, B)`` of (M1) per row at the signed distances ``phi = dist - margin`` and
    sliding frictions ``mu``; ``D = 0`` where ``phi >= 0`` (no contact). ``dt``: the step that
    bounds the time constant (MuJoCo's ``refsafe``)."""
    K, B = gains(rows.solref, rows.solimp, dt)
    imp = impedance(rows.solimp, phi)
    R = jnp.maximum(MINVAL, (1 - imp) / imp * rows.invweight)
    scale = jnp.where(rows.pyramidal > 0, 2 * mu * mu * (1 + mu * mu), 1.0)
    D = rows.edges / jnp.maximum(MINVAL, R * scale)
    D = jnp.where(phi < 0, D, 0.0)
    return D, K * imp * jnp.maximum(-phi, 0.0), B


def coefficients(rows: SoftRows, phi, mu, vn, dt=None):
    """``(c0, s, elastic)`` of ``f_n = max(0, c0 - s v_n')`` per row: (M2) for a step of ``dt``
    from the start normal velocities ``vn`` (``dt`` None: (M1) with ``J a = 0`` at the normal
    velocity ``v_n'``, ``c0 = D K imp d``, ``s = D B``), and ``elastic = D K imp d``, the force
    at rest."""
    D, kd, B = _regularisation(rows, phi, mu, dt)
    elastic = D * kd
    if dt is None:
        return elastic, D * B, elastic
    h = jnp.asarray(dt, D.dtype)
    return D * (kd - B * vn + vn / h), D / h, elastic


def rest_depth(geoms: geometry.Geoms, weight):
    """A depth at which MuJoCo's law holds ``weight`` [N] on one contact of the softest geom (its
    own ``solref``, ``solimp`` and body weight ``A``): beyond ``solimp``'s width the impedance is
    ``dmax``, where (M1) at rest is ``f = dmax^2 K d / ((1 - dmax) A)``, so the depth is at most
    ``width + weight (1 - dmax) A / (dmax^2 K)``; 0 without moving geoms. The scale of
    :func:`jaxdyn.sim.penetration_bound` for ``Contact(normal="mujoco")``."""
    iw = jnp.asarray(geoms.invweight)[:, 0]
    if iw.shape[0] == 0:
        return jnp.zeros(())
    K = gains(jnp.asarray(geoms.solref), jnp.asarray(geoms.solimp))[0]
    dmax = jnp.clip(jnp.asarray(geoms.solimp)[:, 1], MINIMP, MAXIMP)
    width = jnp.maximum(jnp.asarray(geoms.solimp)[:, 2], 0.0)
    d = width + weight * (1 - dmax) * jnp.maximum(iw, 0.0) / (dmax**2 * K)
    return jnp.max(jnp.where(iw > 0, d, 0.0))


def check_invweights(model: Model) -> None:
    """Refuse, naming the fix, a model whose geoms' ``invweight`` was not computed (concrete
    leaves only: a traced model is not checked)."""
    assert model.geoms is not None  # a model with geoms (make_model gives every model its Geoms)
    try:
        iw = np.asarray(model.geoms.invweight)
    except jax.errors.TracerArrayConversionError:
        return
    if np.any(iw < 0):
        bad = [model.geoms.names[i] or str(i) for i in np.nonzero((iw < 0).any(1))[0]]
        raise ValueError(
            f"Contact(normal='mujoco'): model.geoms.invweight is not set for geom(s) {', '.join(bad[:4])}"
            f"{', ...' if len(bad) > 4 else ''}; compute it with "
            "jaxdyn.contact.with_invweights(model) (the loaders do)"
        )


def with_invweights(model: Model, q=None) -> Model:
    """``model`` with ``model.geoms.invweight`` computed at ``q`` (default: the neutral
    configuration, :func:`jaxdyn.neutral`): each geom's body weight at the body's centre of mass
    (:func:`jaxdyn.reference.body_invweights`). The MJCF loader computes them at ``qpos0`` at each MuJoCo body's own
    centre of mass, as MuJoCo does."""
    assert model.geoms is not None  # a model with geoms (make_model gives every model its Geoms)
    import equinox as eqx

    from ..configuration import neutral

    q = neutral(model) if q is None else q
    R, p = reference_kinematics(model, q)[:2]
    body = np.asarray(model.geoms.body, np.int64)
    com = np.asarray(model.com, np.float64)
    pts = [R[b] @ com[b] + p[b] if b >= 0 else np.zeros(3) for b in body]
    iw = body_invweights(model, q, body, pts)
    return eqx.tree_at(lambda m: m.geoms.invweight, model, jnp.asarray(iw, model.geoms.invweight.dtype))
