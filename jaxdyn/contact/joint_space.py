"""The contacts of a model at one configuration as functions of the joint velocity, for the
``"implicit_euler"`` step (:func:`jaxdyn.sim.step`), (J1)-(J4). The force laws' equations
(S1)-(S6) and (R1)-(R2) are those of :mod:`jaxdyn.contact.laws`."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, cast

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from .. import planner, spatial
from ..algorithms.common import full_precision
from ..algorithms.kinematics import dof_motions_world
from ..collision import dot
from ..geometry import Geoms
from ..model import Model
from . import soft
from .frames import _frames, point_jacobians
from .ground import _contact_points, has_ground_points
from .laws import angular_friction_law, force_law, friction, normal_force, tangential
from .pairs import collision_pairs, pair_slots
from .params import ContactParams
from .rules import angular_friction

if TYPE_CHECKING:
    from .forces import Contact


class JointSpaceContacts(eqx.Module):
    """The ``m`` contacts of a model at one configuration (:meth:`Contact.joint_space`), as
    functions of the joint velocity ``v``: contact ``c`` has the penetration ``d_c``, unit normal
    ``n_c`` and friction ``mu_c`` of the configuration, and the velocity ``v_c = G_c v`` of the
    pushed body's material point at the witness (relative to the other body's for a pair), with
    ``G_c`` ``(3, nv)`` the world-frame point Jacobian (``J_2 - J_1`` for a pair). By the
    principle of virtual power the joint-space force is

        tau_c(v) = sum_c G_c^T f_c(G_c v),                                              (J1)

    equal to :func:`generalized_forces` (which goes through the body wrenches and RNEA), and its
    velocity derivative, with the 3x3 force-velocity Jacobian of the contact law per contact,

        D(v) = d tau_c / d v = sum_c G_c^T (d f_c / d v_c) G_c.                          (J2)

    ``d f_c / d v_c`` is ``jax.jacfwd`` of the law over the 3 velocity components, vmapped over
    the contacts: 3 directions instead of ``nv`` directions through kinematics and RNEA.

    With a ``lookahead`` ``h > 0`` (the ``"implicit_euler"`` step's, :func:`jaxdyn.sim.step`) the
    penetration is the one at the end of a step of ``h`` at the velocity ``v``: the signed
    distance ``phi_c`` of the configuration moved by the normal velocity over the step, with the
    normal and the Jacobian of the configuration,

        d_c(v) = max(0, -(phi_c + h n_c . v_c)),                                         (J3)

    so the contact's position stiffness enters ``D`` (a term ``-h (d f_c / d d_c) n_c^T``,
    BaraffWitkin98 (6)'s ``h^2 df/dx``) and a point that would cross the surface within the step
    pushes back in that step. ``h = 0``: the penetration of the configuration.

    With the friction bound ``mu_c f_n`` replaced by ``mu_c fbar_c``, a fixed non-negative
    ``fbar_c`` (``friction_normal=``), the force is the negative gradient of a convex function
    of the contact velocity,

        f_c(v_c) = -d psi_c / d v_c,   psi_c = -int_0^{v_n} f_n(s) ds + mu_c fbar_c phi_t(v_t),   (J4)

    since ``f_n`` does not increase with the normal velocity ``v_n = n_c . v_c`` (the
    Hunt-Crossley factor ``1 - c_d v_n`` and, with the lookahead, the end-of-step penetration
    both fall as the point leaves the surface) and the friction is the gradient of a convex
    function of the tangential velocity ``v_t``: ``phi_t = sqrt(|v_t|^2 + eps^2)`` for the
    regularised law, and for the bristle the Huber function of ``w = k_t u_t + b v_t`` with
    threshold ``mu_c fbar_c``, divided by ``b`` ((S3): its gradient is the projection onto the
    disk). So ``D`` of (J4) is symmetric negative semi-definite. The ``"implicit_euler"`` step
    solves its velocity equation as a sequence of these convex problems
    (:func:`jaxdyn.sim.step`); at its fixed point ``fbar_c = f_n(v)`` the force is (J1)'s.

    Contacts with torsional or rolling friction (``condim`` 4 or 6) add the couple ``t_c`` of
    (R1)-(R2) at the relative angular velocity ``w_c = A_c v`` (``A_c`` ``(3, nv)`` the
    world-frame angular Jacobian, ``A_2 - A_1`` for a pair): ``tau_c`` gains ``A_c^T t_c``, (J2)
    the blocks of ``t_c``'s derivative over ``(v_c, w_c)`` (through ``f_n``, and in ``w_c``),
    and ``psi_c`` of (J4) the convex ``mu_s fbar_c sqrt(w_n^2 + eps_w^2) + mu_r fbar_c
    sqrt(|w_r|^2 + eps_w^2)``. ``A`` and ``mu_angular`` ``(m, 2)`` are ``None`` for a model
    without such contacts.

    With ``Contact(normal="mujoco")``, ``soft = (c0, s, elastic)`` per contact: the normal force
    is MuJoCo's ``f_n = max(0, c0 - s v_n)`` ((M2) of :mod:`jaxdyn.contact.soft`, affine in the
    end velocity and non-increasing in ``v_n``, so (J4) holds) in place of Hunt-Crossley's, and
    ``elastic`` its force at rest; the lookahead (J3) does not apply to it.

    With a budget of rows (``Contact(max_contacts=...)``) the rows are the budget's nearest to
    touching, sorted by signed distance (``by_distance``: the touching ones first). With it or a
    budget of pairs (``Contact(max_pairs=...)``),
    ``overflow`` (int32) is the number of rows that touch at the configuration (signed distance
    below zero) beyond the rows' budget, whose force the solve left out, plus the pairs in reach
    (bounding spheres that meet) beyond the broad phase's budget, whose force may be missing (0
    while every budget suffices; ``None``: no budget applies, every row and pair taken).
    """

    depth: Float[Array, " m"]
    normal: Float[Array, "m 3"]
    mu: Float[Array, " m"]
    G: Float[Array, "m 3 nv"]
    elongation: Float[Array, "m 3"] | None
    params: ContactParams
    dt: Float[Array, ""]
    distance: Float[Array, " m"] | None = None
    lookahead: Float[Array, ""] | None = None
    A: Float[Array, "m 3 nv"] | None = None
    mu_angular: Float[Array, "m 2"] | None = None
    soft: tuple[Float[Array, " m"], Float[Array, " m"], Float[Array, " m"]] | None = None
    overflow: Array | None = None
    by_distance: bool = eqx.field(static=True, default=False)

    def touching(self) -> Array:
        """The number of rows with a penetration (int32): with ``by_distance``, the first rows."""
        return jnp.sum(self.depth > 0).astype(jnp.int32)

    def separable(self) -> bool:
        """Whether the rows apart carry no force (nor force derivative) at any velocity, so that
        the solve may leave out the rows that do not touch (:meth:`touching`): the penetration
        of the configuration (no lookahead) and Hunt-Crossley's normal law (MuJoCo's acts within
        the margin). Where the rows are also sorted by distance (``by_distance``, a budget's),
        the touching ones are the first."""
        return self.lookahead is None and self.soft is None

    def first(self, k: int) -> JointSpaceContacts:
        """The first ``k`` rows (static): every per-row field cut, the rest kept."""
        cut = lambda x: None if x is None else jax.tree_util.tree_map(lambda a: a[:k], x)  # noqa: E731
        rows = ("depth", "normal", "mu", "G", "elongation", "distance", "A", "mu_angular", "soft")
        changes: dict[str, Any] = {f: cut(getattr(self, f)) for f in rows}
        return dataclasses.replace(self, **changes)

    def _soft(self):
        """``(c0, s)`` of MuJoCo's law, or ``None`` (Hunt-Crossley)."""
        return None if self.soft is None else self.soft[:2]

    def _depth(self, vel):
        """(J3) at the contact velocities ``vel`` ``(m, 3)``."""
        if self.lookahead is None:
            return self.depth
        return _end_depth(self.distance, self.lookahead, dot(self.normal, vel))

    @full_precision
    def normal_forces(self, v) -> Float[Array, " m"]:
        """The normal force ``f_n`` ``(m,)`` of every contact at the joint velocity ``v``
        ``(nv,)``: the Hunt-Crossley part of (J1), at the penetration of (J3)."""
        vel = _mv_rows(self.G, v)
        return normal_force(self._depth(vel), self.normal, vel, self.params, self.G.dtype, self._soft())

    def elastic_normal_forces(self) -> Float[Array, " m"]:
        """The normal force ``k d^p`` ``(m,)`` of every contact at rest (no normal velocity),
        with the penetration of the configuration (MuJoCo's law: ``elastic``)."""
        if self.soft is not None:
            return self.soft[2]
        return normal_force(self.depth, self.normal, jnp.zeros_like(self.normal), self.params, self.G.dtype)

    @full_precision
    def point_forces(self, v, friction_normal=None) -> Float[Array, "m 3"]:
        """World force ``f_c`` of every contact at the joint velocity ``v``; with
        ``friction_normal`` ``(m,)``, the friction bounded by ``mu`` times it instead of the
        normal force at ``v`` ((J4))."""
        return self._point_forces_at(_mv_rows(self.G, v), friction_normal)

    def _point_forces_at(self, vel, friction_normal=None):
        """(J1)'s ``f_c`` at the contact velocities ``vel`` ``(m, 3)``."""
        d = self._depth(vel)
        return force_law(
            d,
            self.normal,
            vel,
            self.mu,
            self.params,
            self.G.dtype,
            self.elongation,
            self.dt,
            friction_normal,
            self._soft(),
        )[0]

    def contact_velocities(self, v):
        """``(G v, A v)``: the contact velocities ``(m, 3)`` and, with torsional or rolling
        friction, the relative angular velocities ``(m, 3)`` (else ``None``) of the joint
        velocity ``v``; linear in ``v``."""
        return _mv_rows(self.G, v), (None if self.A is None else _mv_rows(self.A, v))

    @full_precision
    def power(self, x, dx, friction_normal) -> Float[Array, ""]:
        """``tau_c(v) . dv`` from contact space: with ``x = contact_velocities(v)`` and ``dx =
        contact_velocities(dv)``, ``sum_c f_c(x_c) . dx_c`` (plus ``t_c . dw_c`` with angular
        friction), the friction bounded by ``mu`` times ``friction_normal`` ``(m,)`` ((J4)):
        no ``nv``-sized product."""
        out = _dot_rows(self._point_forces_at(x[0], friction_normal), dx[0])
        if self.A is None:
            return out
        t = angular_friction_law(friction_normal, self.normal, x[1], self.mu_angular, self.params, self.G.dtype)[0]
        return out + _dot_rows(t, dx[1])

    @full_precision
    def torques(self, v, friction_normal=None) -> Float[Array, "m 3"]:
        """World couple ``t_c`` of the torsional and rolling friction of every contact at the
        joint velocity ``v`` (zero rows without ``A``); ``friction_normal`` as for
        :meth:`point_forces`."""
        if self.A is None:
            return jnp.zeros_like(self.normal)
        fb = self.normal_forces(v) if friction_normal is None else friction_normal
        w = _mv_rows(self.A, v)
        return angular_friction_law(fb, self.normal, w, self.mu_angular, self.params, self.G.dtype)[0]

    @full_precision
    def forces(self, v, friction_normal=None) -> Float[Array, " nv"]:
        """``tau_c(v)``, (J1); ``friction_normal`` as for :meth:`point_forces`."""
        tau = _mtv_rows(self.G, self.point_forces(v, friction_normal))
        if self.A is None:
            return tau
        return tau + _mtv_rows(self.A, self.torques(v, friction_normal))

    @full_precision
    def velocity_derivative(self, v, friction_normal=None) -> Float[Array, "nv nv"]:
        """``D(v)``, (J2); with ``friction_normal``, the derivative of (J4)'s force, in which
        the friction bound is held fixed (symmetric and negative semi-definite)."""
        dtype = self.G.dtype

        h = self.lookahead
        fixed = friction_normal is not None

        coef = self._soft()
        use_soft = coef is not None

        def law(d, phi, n, vel, mu, u, fb, sf):
            if h is not None:
                d = _end_depth(phi, h, dot(n, vel))
            sf = sf if use_soft else None
            return force_law(d, n, vel, mu, self.params, dtype, u, self.dt, fb if fixed else None, sf)[0]

        phi = self.depth if self.distance is None else self.distance
        vel = _mv_rows(self.G, v)
        fb = friction_normal if fixed else jnp.zeros_like(self.depth)
        sf = coef if use_soft else (self.depth, self.depth)  # unused rows for Hunt-Crossley
        if self.A is None:
            K = jax.vmap(jax.jacfwd(law, argnums=3))(
                self.depth, phi, self.normal, vel, self.mu, self.elongation, fb, sf
            )
            return _congruence(K, self.G)

        def law6(d, phi, n, x, mu, u, fb, sf, mua):  # [f; t] of the contact velocity x = [v_c; w_c]
            f = law(d, phi, n, x[:3], mu, u, fb, sf)
            dd = _end_depth(phi, h, dot(n, x[:3])) if h is not None else d
            fn = fb if fixed else normal_force(dd, n, x[:3], self.params, dtype, sf if use_soft else None)
            return jnp.concatenate([f, angular_friction_law(fn, n, x[3:], mua, self.params, dtype)[0]])

        GA = jnp.concatenate([self.G, self.A], axis=1)
        x = _mv_rows(GA, v)
        K = jax.vmap(jax.jacfwd(law6, argnums=3))(
            self.depth, phi, self.normal, x, self.mu, self.elongation, fb, sf, self.mu_angular
        )
        return _congruence(K, GA)

    @full_precision
    def newton_matrix(self, v, friction_normal) -> Float[Array, "nv nv"]:
        """``(nv, nv)``: at the joint velocity ``v`` ``(nv,)`` and the friction bounds
        ``friction_normal`` ``(m,)``, a symmetric negative semi-definite ``D_bar`` with
        ``D_bar <= D`` of (J4) (so
        ``M - h D_bar`` majorises the convex problem's Hessian): the normal part of (J2) exact,
        ``f_n'(v_n) n n^T`` per contact, and the friction's tangential derivative replaced by the
        isotropic ``-c (I - n n^T)``, the slope of the friction's magnitude over the tangential
        speed: ``c = mu fbar / sqrt(|v_t|^2 + eps^2)`` (regularised), ``c = b min(1, mu fbar /
        |w|)`` (bristle, ``w = k_t u_t + b v_t``). This is the secant (iteratively reweighted)
        curvature of ``phi_t`` of (J4), which bounds ``phi_t`` from above by a quadratic: a
        Newton step with it decreases the friction's part of the convex function without a line
        search, where the exact curvature ``mu fbar eps^2 / r^3`` along a fast slip would send
        the step far past the stick region (Weiszfeld's step for a sum of norms). Torsional and
        rolling friction add ``A_c^T (-c_s n n^T - c_r (I - n n^T)) A_c`` with their secant
        slopes (:func:`angular_friction_law`)."""
        dtype = self.G.dtype
        h = self.lookahead
        p = self.params

        def normal(d, phi, n, vn):
            if h is not None:
                d = _end_depth(phi, h, vn)
            return normal_force(d, n, vn * n, p, dtype)

        phi = self.depth if self.distance is None else self.distance
        vel = _mv_rows(self.G, v)
        vn = dot(vel, self.normal)
        if self.soft is not None:  # MuJoCo's law: slope -s where the force is positive
            c0, s = self.soft[:2]
            slope = jnp.where(c0 - s * vn > 0, -s, 0.0)
        else:
            # forward mode: reverse mode's transpose of ``vn * n`` is a sum over the three
            # components, which XLA CPU fused with the law into one slow YNNPACK call
            def dnormal(d, phi, n, vn):
                return jax.jvp(lambda x: normal(d, phi, n, x), (vn,), (jnp.ones_like(vn),))[1]

            slope = jax.vmap(dnormal)(self.depth, phi, self.normal, vn)
        vt = vel - vn[:, None] * self.normal
        ut = None if self.elongation is None else tangential(self.elongation, self.normal)
        c = friction(vt, ut, self.mu * friction_normal, p, dtype, self.dt)[1]
        nn = self.normal[:, :, None] * self.normal[:, None, :]
        tangent = jnp.eye(3, dtype=dtype) - nn
        K = slope[:, None, None] * nn - c[:, None, None] * tangent
        D = _congruence(K, self.G)
        if self.A is None:
            return D
        w = _mv_rows(self.A, v)
        _, cs, cr = angular_friction_law(friction_normal, self.normal, w, self.mu_angular, p, dtype)
        return D + _congruence(-cs[:, None, None] * nn - cr[:, None, None] * tangent, self.A)


def _congruence(K, G):
    """``sum_c G_c^T K_c G_c`` ``(nv, nv)`` of per-contact blocks ``K`` ``(m, k, k)`` and
    Jacobians ``G`` ``(m, k, nv)``, as explicit sums (:func:`jaxdyn.spatial.mm`,
    :func:`~jaxdyn.spatial.mtm`): the blocks' products ``K_c G_c``, then the sum over the ``m k``
    rows of their outer products. See :func:`_dot_rows` for why no ``jnp.sum`` or matrix product
    on a CPU; elsewhere, and on a CPU for larger models
    (:func:`jaxdyn.planner.congruence_product`), that sum is one matrix product."""
    m, k, n = G.shape
    if m == 0:  # no rows (the solve without contact)
        return jnp.zeros((n, n), G.dtype)
    KG = spatial.mm(K, G).reshape(m * k, n)
    if planner.congruence_product(n):
        # one dot_general: the explicit sum's m k outer products stop fusing on a GPU above
        # 8,192 envs and are written out (planner.CPU_DENSE's note), and on a CPU cost more
        # from about 24 dofs (planner.CPU_CONGRUENCE_PRODUCT_MIN_DOFS)
        return jnp.einsum("rn,rm->nm", G.reshape(m * k, n), KG, precision=jax.lax.Precision.HIGHEST)
    return spatial.mtm(G.reshape(m * k, n), KG)


def _end_depth(phi, h, vn):
    """(J3): the penetration after a step of ``h`` at the normal velocity ``vn`` from the signed
    distance ``phi``."""
    return jnp.maximum(-(phi + h * vn), 0.0)


def _mv_rows(G, v):
    """``G_c v`` of every row ``(m, k)``. A ``dot_general``: as an explicit sum over the dofs the
    feet-only Go1's step took 15-20 % more CPU time (256 samples, float32)."""
    return jnp.einsum("min,n->mi", G, v)


def _mtv_rows(G, f):
    """``sum_c G_c^T f_c`` ``(nv,)``: an explicit sum over the ``m k`` rows (:func:`_dot_rows`)."""
    m, k, n = G.shape
    if m == 0:
        return jnp.zeros(n, G.dtype)
    return spatial.mtv(G.reshape(m * k, n), f.reshape(m * k))


def _dot_rows(a, b):
    """``sum_c a_c . b_c`` of two ``(m, k)`` arrays, an explicit sum (:func:`jaxdyn.spatial.vdot`).
    The contact rows' sums are written so (here, :func:`_congruence`, :func:`_mtv_rows`): under
    ``vmap`` on a CPU (jax 0.10.2) XLA hands a ``jnp.sum`` fused with its operands to YNNPACK,
    slower at these sizes than XLA's own fused loop."""
    if a.size == 0:
        return jnp.zeros((), jnp.result_type(a, b))
    return spatial.vdot(a.reshape(-1), b.reshape(-1))


def contact_budget(model: Model, contact: Contact) -> int | None:
    """The number of contact rows the ``"implicit_euler"`` step's velocity solve takes
    (``Contact(max_contacts=...)``): ``None`` for every row; with ``"auto"``, the scene's own
    (``model.geoms.max_contacts``: MJCF ``<custom><numeric name="max_contact_points">``, MJX's
    limit on its contacts), else four per body that carries a collidable geom, at least 16. A
    model with no more rows than that takes every row.
    Measured on falls with every collision geom (benchmarks/sim_step.py's scenes): at most 12
    rows of the Go1's 1,106 and 30 of the dm_control humanoid's 416 touched at once, against
    52 chosen for each."""
    budget = contact.max_contacts
    if budget == "auto" and model.geoms is not None and model.geoms.max_contacts is not None:
        budget = model.geoms.max_contacts
    if budget == "auto":
        g = model.geoms
        assert g is not None  # a model with geoms (make_model gives every model its Geoms)
        bodies = {b for b, t, c, a in zip(g.body, g.type, g.contype, g.conaffinity) if b >= 0 and (c or a)}
        budget = max(16, 4 * len(bodies))
    return None if budget is None else int(budget)


def joint_space_contacts(
    model: Model, q, contact: Contact, state, dt, lookahead=None, qd=None, step=None, kinematics=None
) -> JointSpaceContacts:
    dtype = model.dtype
    q = jnp.asarray(q, dtype)
    geoms = cast(Geoms, model.geoms)  # read only where a contact has rows: then a model with geoms
    J: Any  # the rows' Jacobians: a list of parts, then one array
    mua: Any  # the rows' torsional and rolling friction: a list of parts, then one array or None
    depth, normal, mu, J, u, phi, mua, soft_parts = [], [], [], [], [], [], [], []
    mujoco = contact.normal == "mujoco"
    if mujoco:
        soft.check_invweights(model)
    use_ground = contact.collide_ground and has_ground_points(geoms)
    use_pairs = contact.collide_pairs and len(collision_pairs(model, contact.exclude).pairs) > 0
    Jw, X = dof_motions_world(model, q, kinematics)
    F = _frames(model, q, X=X)
    # each row's bodies (None: the world) and world point
    body1: list[Any] = []
    body2: list[Any] = []
    point: list[Any] = []
    if use_ground:
        cp = _contact_points(model, F, contact.ground)
        depth.append(cp.depth)
        mu.append(cp.mu)
        normal.append(cp.normal)
        phi.append(cp.distance - cp.margin)
        body1.append(None)
        body2.append(cp.body)
        point.append(cp.point)
        mua.append(angular_friction(geoms, np.asarray(cp.geom), np.full(len(cp.geom), contact.ground.geom)))
        if mujoco:
            soft_parts.append(soft.ground_rows(model, cp, contact.ground))
        if state is not None:
            u.append(state.ground)
    if use_pairs:
        pc = pair_slots(model, F, contact.exclude, contact.max_pairs)
        depth.append(pc.depth)
        mu.append(pc.mu)
        normal.append(pc.normal)
        assert pc.margin is not None  # pair_slots sets it
        phi.append(pc.distance - pc.margin)
        body1.append(pc.body1)
        body2.append(pc.body2)
        point.append(pc.point)
        mua.append(pc.mu_angular)
        if mujoco:
            soft_parts.append(soft.take_rows(soft.pair_rows(model, contact.exclude), pc.row))
        if state is not None:
            u.append(pc.bristles(state.pairs))
    if not depth:
        z = jnp.zeros((0,), dtype)
        depth, mu, normal, J = [z], [z], [jnp.zeros((0, 3), dtype)], [jnp.zeros((0, 6, model.nv), dtype)]
        phi = [z]
        u = [jnp.zeros((0, 3), dtype)] if state is not None else []
    budget = contact_budget(model, contact)
    if budget is not None and sum(len(d) for d in depth) <= budget:
        budget = None
    cat = jnp.concatenate
    overflow = None if not use_pairs else pc.overflow  # pairs in reach that the broad phase left out
    angular = any(m is not None for m in mua)
    if angular:  # zero coefficients for the kind without torsional or rolling friction
        mua = cat([jnp.zeros((len(d), 2), dtype) if m is None else m.astype(dtype) for m, d in zip(mua, depth)])
    if budget is None:
        for b1, b2, pts in zip(body1, body2, point):
            Jr = point_jacobians(model, Jw, b2, pts, angular=True)
            J.append(Jr if b1 is None else Jr - point_jacobians(model, Jw, b1, pts, angular=True))
        J = cat(J)
        fields: list[Any] = [cat(depth), cat(normal), cat(mu), cat(u) if state is not None else None, cat(phi)]
        mua = mua if angular else None
        rows = soft.concat_rows(soft_parts) if soft_parts else None
    else:
        # the budget's rows nearest to touching (smallest signed distance): a row apart has no
        # force, so the solve equals every row's while no more rows than the budget touch
        phi_all = cat(phi)
        rows_over = jnp.maximum(jnp.sum(phi_all < 0) - budget, 0).astype(jnp.int32)
        overflow = rows_over if overflow is None else overflow + rows_over
        sel = jax.lax.top_k(-phi_all, budget)[1]
        b1 = cat([jnp.full(len(b), -1) if a is None else jnp.asarray(a) for a, b in zip(body1, body2)])[sel]
        b2, pts = cat([jnp.asarray(b) for b in body2])[sel], cat(point)[sel]
        J = point_jacobians(model, Jw, b2, pts, angular=True) - point_jacobians(model, Jw, b1, pts, angular=True)
        fields = [cat(depth)[sel], cat(normal)[sel], cat(mu)[sel], cat(u)[sel] if state is not None else None]
        fields.append(phi_all[sel])
        mua = mua[sel] if angular else None
        rows = soft.take_rows(soft.concat_rows(soft_parts), sel) if soft_parts else None
    depth_c, normal_c, mu_c, u_c, phi_c = fields
    coef = None
    if mujoco:
        G = J[:, 3:]
        if rows is None:  # no contact rows
            rows = soft.rows_between(geoms, np.zeros(0, np.int64), np.zeros(0, np.int64), dtype)
        vn = jnp.zeros_like(phi_c) if qd is None else dot(_mv_rows(G, jnp.asarray(qd, dtype)), normal_c)
        coef = soft.coefficients(rows, phi_c, mu_c, vn, step)
    return JointSpaceContacts(
        depth_c,
        normal_c,
        mu_c,
        J[:, 3:],
        u_c,
        contact.params,
        jnp.asarray(dt, dtype),
        phi_c,
        None if lookahead is None else jnp.asarray(lookahead, dtype),
        J[:, :3] if angular else None,
        mua,
        coef,
        overflow,
        budget is not None,
    )
