"""Constrained forward dynamics: the rows of the constraints, MuJoCo's soft equality
constraints, hard constraints with Baumgarte stabilisation, fixed tendons' passive forces.

Glossary: ``J (m, nv)`` constraint Jacobian (``dr/dt = J qd``), ``r (m,)`` residual, ``a0`` the
unconstrained acceleration, ``X = M^-1 J^T (nv, m)``, ``A = J M^-1 J^T`` the constraint-space
inverse inertia (the Delassus operator), ``f (m,)`` the constraint forces (generalized force
``J^T f``).

Both solves start from ``a0`` and add ``X f``. ``X`` is formed one row of ``J`` at a time by the
O(N) innovations operators, ``M^-1 = Linv^T D^-1 Linv`` (JainRodriguez95 (4.1d),
:mod:`jaxdyn.algorithms.innovations`): ``m`` filter/smoother sweeps over one Riccati gather, no
mass matrix formed or factorised. ``A = J X`` is ``m x m``.

Soft (MuJoCo's formulation, documentation chapter "Computation", section "Constraint model"):
with equality constraints alone the constrained problem is the unconstrained quadratic
``min_a 1/2 |a - a0|_M^2 + 1/2 (J a - aref)^T R^-1 (J a - aref)``, solved exactly by

    (A + R) f = aref - J a0,        a = a0 + X f,

    aref = -B (J qd) - K imp r (- dJ/dt qd),      R = (1 - imp) / imp * invweight,
    K = 1 / (dmax^2 timeconst^2 dampratio^2),  B = 2 / (dmax timeconst)   (solref > 0)
    K = -solref[0] / dmax^2,                   B = -solref[1] / dmax       (solref <= 0)

(the last term for connect and weld rows, as MuJoCo 4's ``mj_referenceConstraint``) with
``imp`` MuJoCo's impedance ``solimp`` of the violation (the norm of a connect's or weld's
3 or 6 rows), ``invweight`` its approximate inverse inertia at the reference configuration
(:func:`invweights`), and ``timeconst >= 2 dt`` in a step of length ``dt`` (MuJoCo's
``refsafe``). ``f`` is MuJoCo's ``efc_force`` and ``a`` its ``qacc``.

Tendon limits are MuJoCo's unilateral limit rows (same ``aref`` and ``R``, with the tendon's
``solreflimit``, ``solimplimit`` and ``tendon_invweight0``): a row exists while its residual is
negative and pushes only (``f >= 0``); its cost ``1/2 R^-1 (J a - aref)^2`` counts only while
``J a - aref < 0``. The problem is then piecewise quadratic; Newton's method on it (MuJoCo's
"Newton" solver without the line search) solves the equation above on the active set
``{equality rows} + {limit rows with J a - aref < 0}`` and updates that set, which for a few
limit rows settles in a few steps (``1 + number of limit rows`` are taken). In the hard mode the
limit rows stay soft (``R > 0``) beside the equality rows' Lagrange multipliers.

Hard (Lagrange multipliers, exact closure): ``J a + gamma = -Kd J qd - Kp r`` with ``gamma =
dJ/dt qd`` (the Baumgarte stabilisation, Baumgarte 1972; ``Kp = Kd = 0``: the index-3 DAE's
acceleration level), i.e. the KKT system ``[M J^T; J 0] [a; -f] = [tau - c; -gamma - ...]``
solved in constraint space:

    A f = -gamma - Kd J qd - Kp r - J a0,      a = a0 + X f.

A singular ``A`` (redundant rows, a loop at a singular configuration) is reported:
:func:`check` raises naming the constraints, and the solve returns ``singular`` (``A``'s
smallest eigenvalue below ``1e-12`` of its largest) instead of dividing; ``prox > 0`` then
solves by proximal iterations ``f+ = f + (A + prox I)^-1 (b - A f)``, which converge to the
least-squares solution of smallest norm (the scheme of Pinocchio's ``ProximalSettings``).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from .. import linalg, spatial, tree
from ..algorithms.aba import aba
from ..algorithms.common import full_precision, joint_data
from ..algorithms.innovations import _solve, factorize
from ..algorithms.kinematics import dof_motions_world
from ..configuration import configuration_derivative
from .model import ROWS
from .tendons import kinematics as tendon_kinematics

MINVAL = 1e-15  # MuJoCo's mjMINVAL
MINIMP, MAXIMP = 0.0001, 0.9999  # MuJoCo's bounds on solimp's dmin, dmax, midpoint


class Rows(NamedTuple):
    """The constraint rows at one configuration (``m`` rows; inactive constraints give zero rows)."""

    r: Float[Array, " m"]  # residual
    J: Float[Array, "m nv"]  # Jacobian, dr/dt = J qd
    distance: Float[Array, " m"]  # what sets the impedance: |r| of the row, or of a connect's/weld's block
    invweight: Float[Array, " m"]
    solref: Float[Array, "m 2"]
    solimp: Float[Array, "m 5"]
    body: np.ndarray  # (m,) bool: rows of connect and weld constraints (positions of bodies)
    unilateral: np.ndarray  # (m,) bool: tendon limit rows (force >= 0, acting when r < 0)


def _norm(x):
    """``|x|`` with a finite gradient at 0."""
    n2 = jnp.sum(x * x)
    ok = n2 > 0
    return jnp.where(ok, jnp.sqrt(jnp.where(ok, n2, 1.0)), 0.0)


def _rotation_error(E):
    """``(w, v)``: the unit quaternion of the rotation ``E`` with ``w >= 0`` (valid away from a
    half turn, where a weld is far from satisfied)."""
    tr = E[0, 0] + E[1, 1] + E[2, 2]
    w = 0.5 * jnp.sqrt(jnp.maximum(1.0 + tr, 1e-12))
    v = jnp.stack([E[2, 1] - E[1, 2], E[0, 2] - E[2, 0], E[1, 0] - E[0, 1]]) / (4.0 * w)
    return w, v


@full_precision
def rows(model, q: Float[Array, " nq"]) -> Rows:
    """Residuals, Jacobians and solver parameters of ``model.constraints`` at ``q``: the rows of
    the equality constraints (module :mod:`jaxdyn.constraints.model` gives each kind's residual),
    then one row per limited tendon, MuJoCo's limit constraint on the nearer bound: residual
    ``L - lo`` with Jacobian ``JT`` below the middle of the range, ``hi - L`` with ``-JT`` above
    it (a unilateral row, acting when its residual is negative)."""
    c = model.constraints
    dtype = model.dtype
    nv = model.nv
    lay = model.layout
    if c is None or not c.solved:
        z = jnp.zeros((0,), dtype)
        none = np.zeros(0, bool)
        return Rows(z, jnp.zeros((0, nv), dtype), z, z, jnp.zeros((0, 2), dtype), jnp.zeros((0, 5), dtype), none, none)
    need_bodies = any(k in ("connect", "weld") for k in c.kinds)
    if need_bodies:
        Jw, poses = dof_motions_world(model, q)
        Rb = jnp.concatenate([poses.R, jnp.eye(3, dtype=dtype)[None]])
        pb = jnp.concatenate([poses.p, jnp.zeros((1, 3), dtype)])
        anc = np.concatenate([lay.ancestor, np.zeros((model.nb, 1), bool)], 1)[lay.dof_body]  # (nv, nb+1)
    if c.nt and ("tendon" in c.kinds or c.limits):
        L, JT = tendon_kinematics(model, q)
    out_r, out_J, out_d, out_w, out_ref, out_imp = [], [], [], [], [], []
    for i, kind in enumerate(c.kinds):
        n = ROWS[kind]
        if kind in ("connect", "weld"):
            b1, b2 = c.body1[i], c.body2[i]
            b1, b2 = (model.nb if b1 < 0 else b1), (model.nb if b2 < 0 else b2)
            p1 = Rb[b1] @ c.anchor1[i] + pb[b1]
            p2 = Rb[b2] @ c.anchor2[i] + pb[b2]
            m1, m2 = jnp.asarray(anc[:, b1], dtype), jnp.asarray(anc[:, b2], dtype)
            ang1, ang2 = Jw[:3] * m1, Jw[:3] * m2
            lin1 = Jw[3:] * m1 + jnp.cross(ang1.T, p1).T  # v_p = v_o + w x p
            lin2 = Jw[3:] * m2 + jnp.cross(ang2.T, p2).T
            r, J = p1 - p2, lin1 - lin2
            if kind == "weld":
                R1 = Rb[b1] @ c.frame1[i]
                R2 = Rb[b2] @ c.frame2[i]
                w, v = _rotation_error(R2.T @ R1)
                ts = c.torquescale[i]
                # d/dt of v for the error quaternion E = q2^-1 q1: 1/2 (w I - [v]x) R2^T (w1 - w2)
                Jr = 0.5 * ts * (w * jnp.eye(3, dtype=dtype) - spatial.skew(v)) @ R2.T @ (ang1 - ang2)
                r, J = jnp.concatenate([r, ts * v]), jnp.concatenate([J, Jr])
                iw = jnp.concatenate([jnp.full(3, c.invweight[i, 0]), jnp.full(3, c.invweight[i, 1])])
            else:
                iw = jnp.full(3, c.invweight[i, 0])
            dist = jnp.full(n, _norm(r))
        else:
            if kind == "joint":
                x1 = q[int(lay.q_start[c.index1[i]])].astype(dtype)
                J = jnp.zeros((1, nv), dtype).at[0, int(lay.v_start[c.index1[i]])].set(1.0)
            else:
                x1, J = L[c.index1[i]], JT[c.index1[i]][None]
            pc = c.polycoef[i]
            r = x1 - c.ref1[i] - pc[0]
            if c.index2[i] >= 0:
                if kind == "joint":
                    x2 = q[int(lay.q_start[c.index2[i]])].astype(dtype)
                    J2 = jnp.zeros((1, nv), dtype).at[0, int(lay.v_start[c.index2[i]])].set(1.0)
                else:
                    x2, J2 = L[c.index2[i]], JT[c.index2[i]][None]
                d = x2 - c.ref2[i]
                r = r - (pc[1] * d + pc[2] * d**2 + pc[3] * d**3 + pc[4] * d**4)
                J = J - (pc[1] + 2 * pc[2] * d + 3 * pc[3] * d**2 + 4 * pc[4] * d**3) * J2
            r = r[None]
            dist = jnp.abs(r)
            iw = c.invweight[i, :1]
        on = c.active[i]
        out_r.append(on * r)
        out_J.append(on * J)
        out_d.append(on * dist)
        out_w.append(iw)
        out_ref.append(jnp.broadcast_to(c.solref[i], (n, 2)))
        out_imp.append(jnp.broadcast_to(c.solimp[i], (n, 5)))
    for t in range(c.nt):
        if not c.tendon_limited[t]:
            continue
        below, above = L[t] - c.tendon_range[t, 0], c.tendon_range[t, 1] - L[t]
        lower = below < above
        r = jnp.minimum(below, above)[None]
        out_r.append(r)
        out_J.append(jnp.where(lower, 1.0, -1.0).astype(dtype) * JT[t][None])
        out_d.append(r)
        out_w.append(c.tendon_invweight[t][None])
        out_ref.append(c.tendon_solref[t][None])
        out_imp.append(c.tendon_solimp[t][None])
    cat = jnp.concatenate
    return Rows(
        cat(out_r), cat(out_J), cat(out_d), cat(out_w), cat(out_ref), cat(out_imp), _body_rows(c), _unilateral_rows(c)
    )


def _body_rows(c):
    if c is None or not c.solved:
        return np.zeros(0, bool)
    eq = [np.full(ROWS[k], k in ("connect", "weld")) for k in c.kinds]
    return np.concatenate(eq + [np.zeros(c.limits, bool)])


def _unilateral_rows(c):
    if c is None or not c.solved:
        return np.zeros(0, bool)
    return np.concatenate([np.zeros(c.rows, bool), np.ones(c.limits, bool)])


def impedance(solimp: Float[Array, "m 5"], distance: Float[Array, " m"]) -> Float[Array, " m"]:
    """MuJoCo's impedance ``d(x)`` in ``[dmin, dmax]`` of the violation ``x`` (``solimp = (dmin,
    dmax, width, midpoint, power)``; documentation, "Solver parameters"): ``dmin`` at ``x = 0``,
    ``dmax`` from ``|x| >= width``, between them ``y(|x| / width)`` with ``y = a x^p`` below the
    midpoint and ``1 - b (1 - x)^p`` above."""
    dmin = jnp.clip(solimp[:, 0], MINIMP, MAXIMP)
    dmax = jnp.clip(solimp[:, 1], MINIMP, MAXIMP)
    width = jnp.maximum(solimp[:, 2], 0.0)
    mid = jnp.clip(solimp[:, 3], MINIMP, MAXIMP)
    power = jnp.maximum(solimp[:, 4], 1.0)
    flat = (dmin == dmax) | (width <= MINVAL)
    x = jnp.abs(distance) / jnp.where(flat, 1.0, width)
    xs = jnp.clip(x, 1e-300, 1.0 - 1e-16)  # inside (0, 1), where the powers are smooth
    lower = xs**power / mid ** (power - 1)
    upper = 1 - (1 - xs) ** power / (1 - mid) ** (power - 1)
    y = jnp.where(power == 1, xs, jnp.where(xs <= mid, lower, upper))
    imp = dmin + y * (dmax - dmin)
    imp = jnp.where(x >= 1, dmax, jnp.where(x <= 0, dmin, imp))
    return jnp.where(flat, 0.5 * (dmin + dmax), imp)


def soft_parameters(rw: Rows, dt=None):
    """``(R, K, B, imp)`` of MuJoCo's soft constraints for the rows ``rw``; ``dt``: the step,
    whose ``2 dt`` bounds the time constant from below (``None``: no bound)."""
    tc, dr = rw.solref[:, 0], rw.solref[:, 1]
    if dt is not None:
        tc = jnp.where(tc > 0, jnp.maximum(tc, 2 * jnp.asarray(dt, tc.dtype)), tc)
    imp = impedance(rw.solimp, rw.distance)
    dmax = jnp.clip(rw.solimp[:, 1], MINIMP, MAXIMP)
    K = jnp.where(tc > 0, 1 / jnp.maximum(MINVAL, dmax**2 * tc**2 * dr**2), -tc / jnp.maximum(MINVAL, dmax**2))
    B = jnp.where(dr > 0, 2 / jnp.maximum(MINVAL, dmax * tc), -dr / jnp.maximum(MINVAL, dmax))
    R = jnp.maximum(MINVAL, (1 - imp) * rw.invweight / imp)
    return R, K, B, imp


def inverse_inertia_rows(model, q, J: Float[Array, "m nv"], fac=None) -> Float[Array, "nv m"]:
    """``X = M(q)^-1 J^T`` by the O(N) innovations operators, one filter/smoother pass per row
    of ``J`` over a single Riccati gather (``fac``: that gather, :func:`jaxdyn.factorize`)."""
    fac = factorize(model, q) if fac is None else fac
    return jax.vmap(lambda row: _solve(model, fac, row))(J.astype(model.dtype)).T


def delassus(model, q, J: Float[Array, "m nv"], method: str = "innovations") -> Float[Array, "m m"]:
    """``A = J M(q)^-1 J^T``: ``"innovations"`` (O(N m), :func:`inverse_inertia_rows`) or
    ``"dense"`` (CRBA, a Cholesky factorisation and two triangular solves: O(N^3))."""
    if method == "innovations":
        X = inverse_inertia_rows(model, q, J)
    elif method == "dense":
        from ..algorithms.crba import crba

        M = crba(model, q)
        X = linalg.spd_solve(M, J.T.astype(M.dtype))
    else:
        raise ValueError(f"delassus: method must be 'innovations' or 'dense', got {method!r}")
    A = J @ X
    return 0.5 * (A + A.T)


class Solution(NamedTuple):
    """A constrained forward dynamics: ``qdd (nv,)``, the constraint forces ``force (m,)``
    (MuJoCo's ``efc_force`` for the soft solve, the Lagrange multipliers for the hard one), the
    rows they act on, and ``singular`` (hard solve: ``A`` rank deficient)."""

    qdd: Float[Array, " nv"]
    force: Float[Array, " m"]
    rows: Rows
    singular: Array


def _rows_and_bias(model, q, qd, need: bool):
    """The rows at ``q`` and ``gamma = dJ/dt qd`` (the constraint acceleration at zero joint
    acceleration), from one trace of :func:`rows` differentiated along ``dq/dt`` where
    ``gamma`` is needed (hard rows, or the connect and weld rows of the soft solve)."""
    c = model.constraints
    if not (need or _body_rows(c).any()):
        rw = rows(model, q)
        return rw, jnp.zeros_like(rw.r)
    qdot = configuration_derivative(model, q, qd).astype(q.dtype)
    rw, drw = jax.jvp(lambda q_: rows(model, q_)._replace(body=None, unilateral=None), (q,), (qdot,))
    return rw._replace(body=_body_rows(c), unilateral=_unilateral_rows(c)), drw.J @ qd


def _singular(A):
    """Whether the positive semi-definite ``A`` is numerically rank deficient: its smallest
    pivot with diagonal pivoting at most ``1e-12`` times its largest diagonal entry
    (:func:`jaxdyn.linalg.min_pivot`; XLA operations, so a batched solve calls no library
    kernel)."""
    if not A.shape[0]:
        return jnp.asarray(False)
    return linalg.min_pivot(A) <= 1e-12 * jnp.maximum(jnp.max(jnp.diagonal(A)), MINVAL)


@full_precision
def solve(
    model,
    q: Float[Array, " nq"],
    qd: Float[Array, " nv"],
    a0: Float[Array, " nv"],
    mode: str = "soft",
    dt=None,
    baumgarte=(0.0, 0.0),
    prox: float = 0.0,
    prox_iterations: int = 10,
) -> Solution:
    """The constrained acceleration from the unconstrained one ``a0`` (module docstring):
    ``mode="soft"`` MuJoCo's soft constraints (``dt``: the step, for ``refsafe``), ``"hard"``
    Lagrange multipliers with Baumgarte gains ``baumgarte = (Kp, Kd)`` for the equality rows
    and, with ``prox > 0``, ``prox_iterations`` proximal iterations for rank-deficient
    systems. Tendon limits are soft rows in both modes (the active set of the module
    docstring)."""
    if mode not in ("soft", "hard"):
        raise ValueError(f"constraints: mode must be 'soft' or 'hard', got {mode!r}")
    q = jnp.asarray(q, model.dtype)
    qd = jnp.asarray(qd, model.dtype)
    rw, gamma = _rows_and_bias(model, q, qd, need=mode == "hard")
    if rw.r.shape[0] == 0:
        return Solution(a0, rw.r, rw, jnp.asarray(False))
    X = inverse_inertia_rows(model, q, rw.J)
    A = rw.J @ X
    A = 0.5 * (A + A.T)
    vel = rw.J @ qd
    R, K, B, imp = soft_parameters(rw, dt)
    b = -B * vel - K * imp * rw.r - rw.J @ a0
    if rw.body.any():  # MuJoCo's aref of connect and weld rows also holds -dJ/dt qd
        b = b - jnp.where(jnp.asarray(rw.body), gamma, 0.0)
    singular = jnp.asarray(False)
    if mode == "hard":
        Kp, Kd = baumgarte
        hard = jnp.asarray(~rw.unilateral)
        R = jnp.where(hard, 0.0, R)
        b = jnp.where(hard, -gamma - Kd * vel - Kp * rw.r - rw.J @ a0, b)
    H = A + jnp.diag(R)
    if mode == "hard":
        singular = _singular(H)

    def linear(H, b):
        if mode == "hard" and prox > 0:
            Hp = H + prox * jnp.eye(H.shape[0], dtype=H.dtype)
            L = linalg.cholesky(jax.lax.stop_gradient(Hp))
            step = lambda _, f: f + linalg.spd_solve(Hp, b - H @ f, L)
            return jax.lax.fori_loop(0, prox_iterations, step, jnp.zeros_like(b))
        return linalg.solve(H, b)

    if not rw.unilateral.any():
        f = linear(H, b)
        return Solution(a0 + X @ f, f, rw, singular)
    uni = jnp.asarray(rw.unilateral)
    exists = ~uni | (rw.r < 0)  # a limit row exists beyond its bound (MuJoCo's margin 0)

    def active_solve(active):
        both = active[:, None] & active[None, :]
        Hs = jnp.where(both, H, jnp.eye(H.shape[0], dtype=H.dtype))
        return linear(Hs, jnp.where(active, b, 0.0))

    # Newton's method on the piecewise quadratic primal: a limit row acts while J a - aref < 0,
    # i.e. A f - b < 0 at the current f (b > 0 at f = 0); each step solves its active set exactly
    f = active_solve(exists & (~uni | (b > 0)))
    for _ in range(int(rw.unilateral.sum()) + 1):
        f = active_solve(exists & (~uni | (A @ f - b < 0)))
    return Solution(a0 + X @ f, f, rw, singular)


def joint_force_wrenches(model, q, tau: Float[Array, " nv"]) -> Float[Array, "nb 6"]:
    """Body wrenches (the ``f_ext`` convention of :func:`jaxdyn.aba`: ``[moment; force]`` about
    the body origin, body coordinates) whose generalized force is ``tau``: each joint's force
    ``S_k tau_k`` on its body and the opposite on the parent (an internal force, which no other
    joint feels)."""
    lay = model.layout
    jd = joint_data(model, q)
    t_l, t_r = tree.v_to_link_values(lay, tau.astype(model.dtype))
    f = jnp.zeros((model.nb + 1, 6), model.dtype)
    if len(lay.link_bodies):
        w = jnp.einsum("nik,nk->ni", jd.S, t_l)
        f = f.at[lay.link_bodies].add(w).at[lay.link_parent].add(-spatial.force_to_parent(jd.X, w))
    if lay.floating:
        f = f.at[0].add(jd.S_root @ t_r)
    return f[: model.nb]


def tendon_forces(model, q, qd, springs=True, damping=True):
    """The tendons' passive generalized force ``JT^T t`` with ``t`` the tendon force: spring
    ``-k (L - l)`` outside the dead band ``[l_lo, l_hi]`` of ``tendon_spring``, damping
    ``-b dL/dt`` (:func:`jaxdyn.constraints.tendons.kinematics` gives ``L`` and ``JT``; the
    limits of ``tendon_range`` are rows of :func:`solve`)."""
    c = model.constraints
    out = jnp.zeros(model.nv, model.dtype)
    if c is None or not c.nt or not (springs or damping):
        return out
    L, JT = tendon_kinematics(model, q)
    t = jnp.zeros_like(L)
    if springs:
        lo, hi = c.tendon_spring[:, 0], c.tendon_spring[:, 1]
        t = t - c.tendon_stiffness * (jnp.maximum(L - hi, 0.0) + jnp.minimum(L - lo, 0.0))
    if damping:
        t = t - c.tendon_damping * (JT @ jnp.asarray(qd, model.dtype))
    return JT.T @ t


def constrained_aba(model, q, qd, tau, f_ext=None, mode: str = "soft", dt=None, baumgarte=(0.0, 0.0), prox=0.0):
    """Forward dynamics with the constraints of ``model``: :func:`jaxdyn.aba` of ``tau`` and
    ``f_ext`` (no passive forces: :func:`jaxdyn.sim.forward_dynamics` adds those), then
    :func:`solve`. Returns the :class:`Solution`."""
    a0 = aba(model, q, qd, tau, f_ext)
    return solve(model, q, qd, a0, mode, dt, baumgarte, prox)


def constrained_inverse_dynamics(model, q, qd, qdd, tau_free=None):
    """The constraint forces and joint torques of a motion that keeps the hard constraints:
    the least-norm ``f`` with ``J^T f`` the part of ``rnea(q, qd, qdd) - tau_free`` in the range of
    ``J^T`` (``tau_free``: the torques known to act, zero by default), and the remaining
    torque ``tau = rnea - J^T f``. Returns ``(tau, f)``."""
    from ..algorithms.rnea import rnea

    tau = rnea(model, q, qd, qdd)
    J = rows(model, jnp.asarray(q, model.dtype)).J
    rhs = tau if tau_free is None else tau - tau_free
    f = jnp.linalg.lstsq(J.T, rhs)[0]
    return tau - J.T @ f, f


def check(model, q=None) -> None:
    """Raise ``ValueError`` naming the constraints of a rank-deficient ``J M^-1 J^T`` at ``q``
    (default: the neutral configuration), which the hard solve cannot invert: redundant
    constraints, or a loop at a singular configuration. Values must be concrete."""
    from ..configuration import neutral

    c = model.constraints
    if c is None or not c.neq:
        return
    q = neutral(model) if q is None else jnp.asarray(q, model.dtype)
    rw = rows(model, q)
    A = np.asarray(delassus(model, q, rw.J[: c.rows]), np.float64)  # the equality rows (limits are soft)
    ev, V = np.linalg.eigh(A)
    if ev[0] > 1e-12 * max(ev[-1], MINVAL):
        return
    owner = [n for n, k in zip(c.names, c.kinds) for _ in range(ROWS[k])]
    null = V[:, ev <= 1e-12 * max(ev[-1], MINVAL)]
    involved = sorted({owner[i] for i in np.flatnonzero(np.abs(null).max(1) > 1e-6)})
    raise ValueError(
        f"model '{model.name}': the constraints {', '.join(repr(n) for n in involved)} are redundant or "
        f"singular at this configuration (J M^-1 J^T has {int(np.sum(ev <= 1e-12 * max(ev[-1], MINVAL)))} "
        "zero eigenvalues): the hard solve cannot divide by it; use the soft solve, remove redundant rows, "
        "or give prox > 0"
    )
