"""The ``"implicit_euler"`` velocity solve with forces implicit in velocity: the contact's
(:func:`implicit_contact`) and the joints' Coulomb friction (:func:`implicit_joint_friction`),
Newton steps on a convex subproblem with a line search."""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .. import batching, linalg, planner, spatial, tree
from ..algorithms.kinematics import kinematics
from ..model import Model
from .dynamics import forces, forward_dynamics, mass_matrix
from .options import SimOptions
from .passive import JointFriction


def _free_torque(model: Model, q, qd, tau, f_ext, options: SimOptions, ctrl=None, act=None, kin=None):
    """``M qdd`` of :func:`forward_dynamics` (no contact) without forming ``qdd``: the joint
    torque of every force less the bias, ``tau - c(q, qd) + sum_k J_k^T f_ext_k``, one RNEA at
    ``qdd = 0`` in place of ABA and a product with ``M``; through ``qdd`` where the model's
    constraints are solved in the dynamics. ``kin``: the :func:`jaxdyn.kinematics` record at
    ``q``, if computed."""
    if model.constraints is not None and model.constraints.solved:
        M = mass_matrix(model, q, options, kin)
        return M @ forward_dynamics(model, q, qd, tau, f_ext, options, ctrl=ctrl, act=act)
    m, total = forces(model, q, qd, tau, options, ctrl, act)
    return total - batching.rnea(m, q, qd, jnp.zeros_like(qd), f_ext, kinematics=kin)


def implicit_joint_friction(md, q, qd, tau, f_ext, dt, friction: JointFriction, options, ctrl=None, act=None):
    """The ``"implicit_euler"`` acceleration with the joints' Coulomb friction implicit in
    velocity (no contact): the root ``a`` of

        R(a) = M_d (a - a_0) + f(qd + h a) = 0,                                         (F1)

    with ``a_0`` the acceleration of every other force (``M_d a_0 = b``, the joint torque of every
    other force less the bias, from one RNEA at ``qdd = 0`` as in :func:`implicit_contact`, and a
    Cholesky solve with the mass matrix of the damped model) and ``f`` of :class:`JointFriction`: the minimiser of the strictly convex
    ``1/2 (a - a_0)^T M_d (a - a_0) + sum_j F_j eps / h log cosh(v_j / eps)``, ``v = qd + h a``.
    Newton steps from ``a = a_0`` with a line search, each ``da = -(M_d + h D)^-1 R(a)`` with ``D
    = diag(f'(v))`` (a Cholesky solve with the mass matrix of the damped model, CRBA); the slope
    of the convex function along the step,

        s(t) = (M_d (a - a_0) + t M_d da + f(qd + h (a + t da))) . da,                   (F2)

    costs ``nv`` operations per trial; its zero is bracketed and refined as in
    :func:`implicit_contact`. From ``a_0`` a joint that slides starts converged up to its
    friction's change, and one that sticks lands in the tanh's linear zone after the first line
    search (the minimum along the step), where Newton's steps converge quadratically.
    ``1 + options.contact_iterations`` Newton steps."""
    kin = kinematics(md, q)  # shared by the RNEA and the CRBA
    b = _free_torque(md, q, qd, tau, f_ext, options, ctrl, act, kin)
    Md = mass_matrix(md, q, options, kin)
    spd_solve = _pattern_solves(md, ())[0]  # over M_d's branch pattern, kept by the diagonal terms
    a0 = spd_solve(Md, b)
    fractions = jnp.asarray(_LINE_SEARCH, qd.dtype)

    def newton(_, a):
        v = qd + dt * a
        Me = Md @ a - b
        da = -spd_solve(Md + jnp.diag(dt * friction.derivative(v)), Me + friction.force(v))
        s0, curvature = spatial.vdot(Me, da), spatial.vdot(da, Md @ da)

        def slope(t):
            return s0 + t * curvature + spatial.vdot(friction.force(v + (t * dt) * da), da)

        return a + _line_search(slope, fractions) * da

    return jax.lax.fori_loop(0, 1 + options.contact_iterations, newton, a0)


def _line_search(slope, fractions):
    """The zero of the increasing ``slope(t)`` of a convex function along a descent step (``t
    >= 0``): bracketed among ``fractions`` (the first with a positive slope), refined by
    ``_REFINE`` regula-falsi steps; the largest fraction if the slope stays negative, ``0`` if
    it is not negative at ``0``."""
    s = jax.vmap(slope)(fractions)
    up = s > 0
    k = jnp.maximum(jnp.argmax(up), 1)  # the first fraction with a positive slope
    bracket = (fractions[k - 1], fractions[k], s[k - 1], s[k])

    def secant(lo, hi, s_lo, s_hi):
        gap = s_hi - s_lo
        return lo + (hi - lo) * (-s_lo) / jnp.where(gap > 0, gap, 1.0)

    def refine(_, b):
        lo, hi, s_lo, s_hi = b
        t = secant(lo, hi, s_lo, s_hi)
        st = slope(t)
        pos = st > 0
        return (jnp.where(pos, lo, t), jnp.where(pos, t, hi), jnp.where(pos, s_lo, st), jnp.where(pos, st, s_hi))

    t = secant(*jax.lax.fori_loop(0, _REFINE, refine, bracket))
    t = jnp.where(jnp.any(up), t, fractions[-1])
    return jnp.where(s[0] < 0, t, 0.0)


# Newton step fractions at which the slope of the convex subproblem is evaluated (from 0):
# the minimum along the step is bracketed between two of them, then found by regula falsi
_LINE_SEARCH = (0.0, 1.0 / 64, 1.0 / 16, 1.0 / 4, 1.0 / 2, 1.0, 2.0, 4.0)
_REFINE = 3  # regula falsi steps on the bracket


def _pattern_solves(model: Model, coupled):
    """``(spd_solve, solve)`` for the implicit step's Newton matrices (symmetric positive
    definite: the contact's and the joints' friction's) and polish matrices (general, without
    row exchanges), by block elimination over the
    mass matrix's branch pattern (:func:`jaxdyn.tree.branch_pattern`: ``M_d``'s, kept by the
    contacts of one body and the diagonal terms; :class:`jaxdyn.linalg.Bordered`).

    A collision pair between two blocks adds entries between them wherever its rows carry a
    force derivative: those blocks join in the static pattern (``coupled``, the pairs' bodies).
    Where that leaves none but the tree's pattern exists, and the executor branches on the
    batch's verdict (:func:`jaxdyn.planner.skip`), each solve takes the tree's pattern when every
    sample's matrix is zero outside it (the usual case: the rows of a pair apart have no force
    and no derivative), else the dense solve."""
    parents, nv = tuple(model.parents), model.joint_nv
    pattern = tree.branch_pattern(parents, nv, coupled)
    if pattern is not None or not coupled:
        return (
            lambda A, b: linalg.spd_solve(A, b, pattern=pattern),
            lambda A, b: linalg.solve(A, b, pivot=False, pattern=pattern),
        )
    loose = tree.branch_pattern(parents, nv)
    if loose is None or planner.skip() != "branch":
        return linalg.spd_solve, lambda A, b: linalg.solve(A, b, pivot=False)
    rows, cols = np.nonzero(~loose.mask())

    def checked(dense, bordered):
        def run(A, b):
            outside = batching.batch_any(jax.lax.stop_gradient(A)[rows, cols] != 0)
            return jax.lax.cond(outside, dense, bordered, A, b)

        return run

    return (
        checked(linalg.spd_solve, lambda A, b: linalg.spd_solve(A, b, pattern=loose)),
        checked(
            lambda A, b: linalg.solve(A, b, pivot=False), lambda A, b: linalg.solve(A, b, pivot=False, pattern=loose)
        ),
    )


class ContactReport(NamedTuple):
    """What the ``"implicit_euler"`` step saw of its start state's contact: the deepest depth and
    the touching rows beyond the solve's budget plus the pairs in reach beyond the broad phase's
    (``None``: no budget applies)."""

    depth: Any
    overflow: Any


def implicit_contact(
    model, md, q, qd, tau, f_ext, dt, contact, contact_state, stateful, options, ctrl=None, act=None, friction=None
):
    """The ``"implicit_euler"`` acceleration with the contact force implicit in velocity: the
    root ``a`` of the backward-Euler velocity equation (position and every other force explicit)

        R(a) = M_d a - r - tau_c(v(a)) = 0,      v(a) = qd_lin + h a,

    with ``M_d`` the mass matrix of the damped model (armature ``+ h B``), ``r = tau - c(q, qd) =
    M_d qdd`` the torque of every force but the contact's less the bias (``qdd`` the
    acceleration without contact; one RNEA at ``qdd = 0``, :func:`_free_torque`), ``tau_c(v)``
    the joint-space contact force at ``(q, v)`` (:meth:`jaxdyn.contact.Contact.joint_space`:
    point Jacobians and the law's 3x3 velocity derivatives, no RNEA) and ``qd_lin = qd`` (fixed base; the
    floating-base frame term below). With ``friction="spring"`` the bristle's elastic force is
    taken at the end-of-step elongation ``u + h v_t`` (docs/contact.md (S2)), so its stiffness
    enters ``D``. With the joints' Coulomb friction (``friction``, :class:`JointFriction`)
    ``R`` gains ``+ f(v(a))``, ``L`` its convex ``sum_j F_j eps log cosh(v_j / eps)``, the
    Newton matrix its secant slopes ``+ h diag(c(v))`` and the polish steps its derivative.

    Solved by ``1 + options.contact_iterations`` Newton steps from ``a = 0`` (the start
    velocity), each on a convex problem: with the friction bound ``mu f_n`` frozen at ``fbar``
    (:class:`jaxdyn.contact.JointSpaceContacts` (J4)), ``R_fbar(a)`` is the gradient of the
    strictly convex

        L(a) = h/2 a^T M_d a - h r^T a + sum_c psi_c(G_c v(a)).

    ``fbar`` is the elastic force ``k d^p`` for the first step (the force at the start velocity,
    damping included, can be 1e4 times the weight in an impact) and the iterate's normal force
    after it, so a fixed point solves ``R(a) = 0`` with the exact force. The step is
    ``da = -(M_d - h D_bar)^-1 R_fbar(a)`` (a Cholesky solve: ``M_d - h D_bar`` is symmetric
    positive definite) with ``D_bar`` the majorant of
    :meth:`~jaxdyn.contact.JointSpaceContacts.newton_matrix` (``M_d - h D_bar`` bounds ``L``'s
    Hessian over ``h``: a descent direction that a fast slip does not send across the stick
    region); the slope of ``L`` along it,

        s(t) = R_fbar(a + t da) . da = (M_d a - r) . da + t da^T M_d da - sum_c f_c(x_c + t h dx_c) . dx_c,

    with ``x_c = G_c v(a)`` and ``dx_c = G_c da`` the contact velocities of the iterate and of
    the step (:meth:`~jaxdyn.contact.JointSpaceContacts.contact_velocities`), increases with
    ``t``: each trial costs one evaluation of the contact laws, in contact space. The step
    length is its zero, bracketed among the fractions ``_LINE_SEARCH`` and refined by
    ``_REFINE`` regula-falsi steps (the largest fraction when ``s`` stays negative).
    ``options.contact_polish`` Newton steps with the exact derivative of the coupled force
    (:meth:`~jaxdyn.contact.JointSpaceContacts.velocity_derivative`) follow, each kept only if
    it lowers ``R^T diag(M_d)^-1 R`` (each dof's residual scaled by its own inertia, a fixed
    metric for the comparison): quadratic convergence near the root. A Newton iteration on
    ``R`` alone stalls away from the root after a hard impact (docs/contact.md, "The velocity
    solve"). Returns ``(a, qd_lin, report)``, ``report`` the deepest contact of ``q`` (the
    rows' depths the solve took: the deepest are among them) and the rows beyond the budget
    (:class:`ContactReport`)."""
    lookahead = dt if options.contact_position == "implicit" else None
    kin = kinematics(model, q)  # one forward kinematics for the contacts, the CRBA and the RNEA
    js = contact.joint_space(
        model, q, contact_state, dt if stateful else 0.0, lookahead, qd=qd, step=dt, kinematics=kin
    )
    Md = mass_matrix(md, q, options, kin)
    other = _free_torque(md, q, qd, tau, f_ext, options, ctrl, act, kin)  # M_d qdd = tau - c
    qd_lin = qd
    if model.floating_base:
        # the step changes the base velocity, in body axes at the start pose, by
        # h (qdd + [0; omega x v_b]) (the linear part moves in world axes): the end velocity
        # is qd_lin + h a with qd_lin = qd + h [0; omega x v_b]
        qd_lin = qd_lin.at[3:6].add(dt * spatial.cross(qd[0:3], qd[3:6]))
    fractions = jnp.asarray(_LINE_SEARCH, qd.dtype)
    newton_solve, polish_solve = _pattern_solves(model, contact.coupled_bodies(model))

    def joint_friction(v):  # f(v) of the joints' friction (zero without)
        return jnp.zeros_like(v) if friction is None else friction.force(v)

    report = ContactReport(jnp.max(js.depth, initial=0.0), js.overflow)
    # the polish step's merit weights, 1 / diag(M_d) (positive: every dof has mass or armature)
    w = 1.0 / jnp.diagonal(jax.lax.stop_gradient(Md))

    def solve(js):  # the Newton steps and the polish steps over the rows of js
        def residual(a, fbar=None):  # R_fbar(a); R(a), the exact force's, without fbar
            v = qd_lin + dt * a
            return Md @ a - other - js.forces(v, fbar) + joint_friction(v)

        elastic = js.elastic_normal_forces()

        def newton(i, a):
            v = qd_lin + dt * a
            # the first step bounds the friction by the elastic force k d^p, not by the normal
            # force at the start velocity (an impact's, with the damping, can be 1e4 times the
            # weight); the following steps by the iterate's
            fbar = jnp.where(i > 0, js.normal_forces(v), elastic)
            Ma = Md @ a
            N = Md - dt * js.newton_matrix(v, fbar)
            if friction is not None:
                N = N + jnp.diag(dt * friction.secant(v))
            da = -newton_solve(N, Ma - other - js.forces(v, fbar) + joint_friction(v))
            # s(t) in contact space: the joint-space terms are linear in t (the joints' friction
            # is per dof, nv terms)
            # explicit sums (spatial.vdot): XLA CPU hands a fused dot's reduction to YNNPACK
            s0 = spatial.vdot(Ma - other, da)
            curvature = spatial.vdot(da, Md @ da)
            x, dx = js.contact_velocities(v), js.contact_velocities(da)

            def slope(t):
                xt = jax.tree_util.tree_map(lambda x0, d: x0 + (t * dt) * d, x, dx)
                return s0 + t * curvature - js.power(xt, dx, fbar) + spatial.vdot(joint_friction(v + (t * dt) * da), da)

            return a + _line_search(slope, fractions) * da

        a = jax.lax.fori_loop(0, 1 + options.contact_iterations, newton, jnp.zeros_like(qd))
        if options.contact_polish == 0:
            return a

        def merit(R):  # R^T diag(M_d)^-1 R, only compared: any fixed positive weights order the
            # candidates soundly, and these need no factorisation (R^T M_d^-1 R would take a
            # Cholesky of M_d per step: 1.1x the Go1's step time, docs/benchmarks.md)
            r = jax.lax.stop_gradient(R)
            return spatial.vdot(r * w, r)

        def polish(_, carry):
            a, R, m = carry
            v = qd_lin + dt * a
            J = Md - dt * js.velocity_derivative(v)
            if friction is not None:
                J = J + jnp.diag(dt * friction.derivative(v))
            # without row exchanges (half the cost of pivoting under vmap on a CPU): J is M_d,
            # positive definite, less h dF/dv, and a candidate spoiled by a small pivot raises
            # the merit (or is NaN) and is not kept
            cand = a - polish_solve(J, R)
            Rc = residual(cand)
            mc = merit(Rc)
            better = mc < m
            return jnp.where(better, cand, a), jnp.where(better, Rc, R), jnp.where(better, mc, m)

        R = residual(a)
        return jax.lax.fori_loop(0, options.contact_polish, polish, (a, R, merit(R)))[0]

    # the rows apart carry no force: the solve takes the fewest rows that hold every touching
    # one of the batch, none where no row touches, and where the rows are sorted by distance
    # the first of them (planner.contact_row_sizes)
    rows = js.depth.shape[0]
    sizes = planner.contact_row_sizes(rows, js.by_distance) if js.separable() else ()
    if len(sizes) < 2:
        return solve(js), qd_lin, report

    def without_contact(js):  # no row touches: R(a) = M_d a - other (+ the joints' friction)
        if friction is None:  # the Newton steps' root, in one solve
            return newton_solve(Md, other)
        return solve(js.first(0))

    # batch_max is not batched under vmap: the switch runs one branch for the whole batch
    touching = batching.batch_max(jax.lax.stop_gradient(js.touching()))
    which = sum((touching > k).astype(jnp.int32) for k in sizes[:-1])
    branches = [without_contact if k == 0 else (lambda js, k=k: solve(js if k == rows else js.first(k))) for k in sizes]
    a = jax.lax.switch(which, branches, js)
    return a, qd_lin, report
