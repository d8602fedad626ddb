"""Compliant contact between the shapes on a model's bodies and the ground (a half-space).

What is modelled (docs/contact.md has the parameters, the validation and the limits):

* Ground: the half-space ``n . x <= h`` (:class:`Ground`: unit normal ``n``, any slope, and
  height ``h``; array leaves, so both are differentiable).
* Contact points, per geom of ``model.geoms`` on a body (geoms on the world and geoms with
  ``contype == conaffinity == 0`` are skipped): a sphere is its centre with radius ``r``, a
  capsule its two end-sphere centres (``+-`` half-length along the geom's z) with radius ``r``,
  a box its 8 corners with ``r = 0``. Other shapes (plane, ellipsoid, cylinder, mesh) are not
  collided yet. For a point ``c`` of radius ``r`` the signed distance of the shape to the
  ground is ``phi = n . c - h - r`` and the penetration ``d = max(0, -phi)``; the force acts at
  the witness point on the ground surface, ``p = c - (r - d) n`` (the shape's deepest point
  moved back onto the plane), with the velocity ``v`` of the body's material point there.
* Normal force, HuntCrossley75 in the form of MarhefkaOrin99 (``f = lambda x^n xdot + k x^n``
  with ``lambda = c_d k``; docs/contact.md):
  ``f_n = max(0, k d^p (1 + c_d v_pen))`` with ``v_pen = -n . v`` the penetration rate. The
  damping scales with ``d^p``, so the force is zero at first touch (no jump at impact), and the
  ``max`` keeps it from pulling the bodies together during separation (MarhefkaOrin99).
* Friction, regularised Coulomb: ``f_t = -mu f_n v_t / sqrt(|v_t|^2 + eps^2)`` with
  ``v_t = v - (n . v) n`` and ``mu`` the geom's sliding friction ``friction[0]``; this is the
  Coulomb law ``|f_t| <= mu f_n`` opposing sliding, smoothed over the velocity
  scale ``eps`` so it is smooth and finite at ``v_t = 0``. Static friction is thereby replaced
  by a steep viscous law: a body held by friction creeps at ``|v_t| = eps r / sqrt(1 - r^2)``
  with ``r = |f_tangential demand| / (mu f_n) < 1``.

Everything is a function of ``(q, qd)``, continuous, with finite derivatives everywhere (also at
zero penetration, zero tangential velocity and a point exactly on the plane): ``d^p`` uses the
safe-power form ``where(d > 0, where(d > 0, d, 1)^p, 0)`` so neither ``d`` nor ``p`` gets a
``0 * inf`` gradient, and ``sqrt(|v_t|^2 + eps^2) >= eps``.

:func:`contact_wrenches` sums the point forces into one wrench per body, in the convention of
``f_ext`` (``[moment; force]`` about the body origin in body coordinates), and :class:`Contact`
carries ``(ground, params)`` into :func:`jaxdyn.sim.forward_dynamics`, :func:`jaxdyn.sim.step`
and :func:`jaxdyn.sim.rollout` (argument ``contact``; added to ``f_ext``). In the default
``"implicit_euler"`` step the contact force is implicit in velocity (linearised backward Euler,
:func:`jaxdyn.sim.step`) and explicit in position; in the other integrators it is explicit
(evaluated at the state of each step or stage).
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from . import geometry
from .algorithms.kinematics import body_velocities, forward_kinematics
from .algorithms.rnea import rnea_full
from .model import Model


def _array(x):
    """Leaves stay JAX arrays (tracers included) or become numpy arrays (no device work at
    construction)."""
    return x if isinstance(x, jax.Array) else np.asarray(x, np.float64)


__all__ = [
    "Ground",
    "ContactParams",
    "Contact",
    "ContactPoints",
    "contact_points",
    "contact_forces",
    "contact_wrenches",
    "total_force",
]


class Ground(eqx.Module):
    """The half-space ``normal . x <= height`` (world frame). ``normal`` is normalised when
    used. Default: the plane ``z = 0``, ground below."""

    normal: Float[Array, " 3"] = eqx.field(default_factory=lambda: np.array([0.0, 0.0, 1.0]), converter=_array)
    height: Float[Array, ""] = eqx.field(default_factory=lambda: np.array(0.0), converter=_array)

    @staticmethod
    def from_model(model: Model) -> Ground:
        """The first plane geom on the world body of ``model.geoms`` (MJCF ``<geom type="plane">``):
        normal its z axis, height ``normal . pos``; the default ground if there is none."""
        g = model.geoms
        for i, (t, b) in enumerate(zip(g.type, g.body)):
            if t == geometry.PLANE and b < 0:
                n = g.R[i][:, 2]
                return Ground(normal=n, height=jnp.dot(n, g.pos[i]))
        return Ground()


class ContactParams(eqx.Module):
    """Contact law parameters (array leaves: differentiable, e.g. for identification).

    stiffness ``k`` [N/m^p], exponent ``p``: ``k d^p``. Defaults ``k = 1e6 N/m^1.5`` and the
      Hertz exponent ``p = 1.5`` (a sphere on a plane, HuntCrossley75): a 1 kg sphere rests
      0.46 mm deep, a 12.5 kg share of a 50 kg quadruped 2.5 mm; the contact frequency
      ``sqrt(p k d^(p-1) / m)`` stays near or below 200 rad/s for links of a kilogram and more,
      so ``omega h`` is about 0.2 at ``h = 1 ms``, far inside the explicit limit 2.
    damping ``c_d`` [s/m]: Hunt-Crossley damping, the fraction of the spring force added per
      m/s of penetration rate. Default 10 s/m. Near rest the damping coefficient is
      ``k d^p c_d = m g c_d``, so the contact settles with the time constant ``2 / (g c_d)``
      (0.02 s) whatever the stiffness; impacts at 0.1-1 m/s lose most of their energy.
    friction_velocity ``eps`` [m/s]: regularisation scale of Coulomb friction. Default 0.02 m/s.
      In ``"implicit_euler"`` the contact force is implicit in velocity (linearised, see
      :func:`jaxdyn.sim.step`), so the steep friction slope ``mu f_n / eps`` of the regularised
      zone is stable even under impact loads. Outside that zone the friction is saturated and
      effectively explicit: a slip smaller than about ``(m / m_eff) h mu g / 2`` then flips sign
      every step (a bounded period-2 cycle; ``m / m_eff = 1 + m |r x t|^2 / I`` is 3.5 for a
      rolling solid sphere), unless ``eps`` covers it. Hence ``eps ~ 2 h mu g`` (0.02 m/s for
      ``mu = 1`` at ``h = 1 ms``): a rolling sphere then rolls without chatter. Bodies held by
      friction without rolling (a block on a slope) tolerate much smaller values (1e-4 m/s tested
      at 1 ms). The price of a large ``eps`` is creep under static tangential loads (module
      docstring): 11.5 mm/s for a block on a slope at half the friction angle's tangent with the
      default, 0.58 mm/s with ``eps = 1e-3``.
    """

    stiffness: Float[Array, ""] = eqx.field(default=1e6, converter=_array)
    exponent: Float[Array, ""] = eqx.field(default=1.5, converter=_array)
    damping: Float[Array, ""] = eqx.field(default=10.0, converter=_array)
    friction_velocity: Float[Array, ""] = eqx.field(default=2e-2, converter=_array)


class Contact(eqx.Module):
    """Ground contact to add to the dynamics: ``sim.rollout(..., contact=Contact())``. A pytree
    (pass it through ``jit``/``grad``/``vmap`` like the model)."""

    ground: Ground = eqx.field(default_factory=Ground)
    params: ContactParams = eqx.field(default_factory=ContactParams)

    def wrenches(self, model: Model, q, qd) -> Float[Array, "nb 6"]:
        return contact_wrenches(model, q, qd, self.ground, self.params)

    def generalized_forces(self, model: Model, q, qd) -> Float[Array, " nv"]:
        """The joint-space contact force ``sum J^T f`` (see :func:`generalized_forces`)."""
        return generalized_forces(model, q, qd, self.ground, self.params)

    def velocity_derivative(self, model: Model, q, qd) -> Float[Array, "nv nv"]:
        """``d tau_c / d qd``: how the joint-space contact force changes with the velocity
        (forward-mode, ``nv`` directions); used by the ``"implicit_euler"`` step."""
        return jax.jacfwd(lambda v: self.generalized_forces(model, q, v))(jnp.asarray(qd, model.dtype))


class ContactPoints(eqx.Module):
    """The candidate contact points of a model at one state (``m`` points).

    body, geom: tuples of ``m`` ints (static); centre ``(m, 3)`` world
    position of the point (sphere centre, capsule end, box corner); radius ``(m,)``;
    depth ``(m,)`` penetration ``d >= 0``; point ``(m, 3)`` witness on the ground surface;
    velocity ``(m, 3)`` world velocity of the body's material point at ``point``; mu ``(m,)``.
    """

    centre: Float[Array, "m 3"]
    radius: Float[Array, " m"]
    depth: Float[Array, " m"]
    point: Float[Array, "m 3"]
    velocity: Float[Array, "m 3"]
    mu: Float[Array, " m"]
    body: tuple[int, ...] = eqx.field(static=True)
    geom: tuple[int, ...] = eqx.field(static=True)


def _point_table(geoms: geometry.Geoms):
    """Static description of every contact point: geom index, the (3, 3) matrix ``A`` with
    ``offset = A @ size`` (the point in the geom frame) and the vector ``a`` with
    ``radius = a . size``."""
    gi, A, a = [], [], []
    e0 = np.array([1.0, 0.0, 0.0])
    for g, (t, b, ct, ca) in enumerate(zip(geoms.type, geoms.body, geoms.contype, geoms.conaffinity)):
        if b < 0 or (ct == 0 and ca == 0):
            continue
        if t == geometry.SPHERE:
            gi.append(g), A.append(np.zeros((3, 3))), a.append(e0)
        elif t == geometry.CAPSULE:
            for s in (-1.0, 1.0):
                M = np.zeros((3, 3))
                M[2, 1] = s  # z offset = +- half-length (size[1])
                gi.append(g), A.append(M), a.append(e0)
        elif t == geometry.BOX:
            for sx in (-1.0, 1.0):
                for sy in (-1.0, 1.0):
                    for sz in (-1.0, 1.0):
                        gi.append(g), A.append(np.diag([sx, sy, sz])), a.append(np.zeros(3))
    if not gi:
        return np.zeros(0, np.int64), np.zeros((0, 3, 3)), np.zeros((0, 3))
    return np.array(gi, np.int64), np.stack(A), np.stack(a)


def _safe_pow(d, p):
    """``d^p`` for ``d >= 0`` with finite derivatives in ``d`` and ``p`` at ``d = 0`` (``p >= 1``)."""
    pos = d > 0
    return jnp.where(pos, jnp.where(pos, d, 1.0) ** p, 0.0)


def _unit(n):
    return n / jnp.sqrt(jnp.sum(n * n))


def contact_points(model: Model, q, qd, ground: Ground | None = None) -> ContactPoints:
    """Candidate contact points, penetrations, witness points and velocities (module docstring)."""
    return _contact_points(model, q, qd, Ground() if ground is None else ground)[0]


def _contact_points(model: Model, q, qd, ground: Ground):
    g = model.geoms
    gi, A, a = _point_table(g)
    dt = model.dtype
    body = np.asarray(g.body, np.int64)[gi] if len(gi) else np.zeros(0, np.int64)
    X = forward_kinematics(model, q)
    V = body_velocities(model, q, qd)  # (nb, 6) body frame [omega; v]
    size = g.size[gi]  # (m, 3)
    off = jnp.einsum("mij,mj->mi", jnp.asarray(A, dt), size)
    radius = jnp.einsum("mj,mj->m", jnp.asarray(a, dt), size)
    c_body = g.pos[gi] + jnp.einsum("mij,mj->mi", g.R[gi], off)  # point in the body frame
    Rb, pb = X.R[body], X.p[body]
    centre = pb + jnp.einsum("mij,mj->mi", Rb, c_body)
    n = _unit(jnp.asarray(ground.normal, dt))
    h = jnp.asarray(ground.height, dt)
    phi = centre @ n - h - radius
    depth = jnp.maximum(-phi, 0.0)
    point = centre - (radius - depth)[:, None] * n
    r_body = jnp.einsum("mji,mj->mi", Rb, point - pb)  # body-frame lever arm of the witness
    w, v = V[body, :3], V[body, 3:]
    vel = jnp.einsum("mij,mj->mi", Rb, v + jnp.cross(w, r_body))
    return (
        ContactPoints(centre, radius, depth, point, vel, g.friction[gi, 0], tuple(map(int, body)), tuple(map(int, gi))),
        Rb,
        pb,
    )


def contact_forces(cp: ContactPoints, ground: Ground, params: ContactParams, dtype=None) -> Float[Array, "m 3"]:
    """World-frame force on each contact point: Hunt-Crossley normal force plus regularised
    Coulomb friction (module docstring)."""
    dtype = dtype or cp.depth.dtype
    n = _unit(jnp.asarray(ground.normal, dtype))
    k, p, cd, eps = (
        jnp.asarray(x, dtype) for x in (params.stiffness, params.exponent, params.damping, params.friction_velocity)
    )
    vn = cp.velocity @ n
    fn = jnp.maximum(k * _safe_pow(cp.depth, p) * (1.0 - cd * vn), 0.0)  # v_pen = -vn
    vt = cp.velocity - vn[:, None] * n
    ft = -(cp.mu * fn / jnp.sqrt(jnp.sum(vt * vt, -1) + eps * eps))[:, None] * vt
    return fn[:, None] * n + ft


def contact_wrenches(
    model: Model, q, qd, ground: Ground | None = None, params: ContactParams | None = None
) -> Float[Array, "nb 6"]:
    """Contact wrenches on every body, ``(nb, 6)`` ``[moment; force]`` about the body origin in
    body coordinates (the ``f_ext`` convention of :func:`~jaxdyn.aba`): the sum over the body's
    points of ``(R^T (p - o) x R^T f, R^T f)`` with ``o, R`` the body's world pose."""
    q = jnp.asarray(q, model.dtype)
    qd = jnp.asarray(qd, model.dtype)
    ground = Ground() if ground is None else ground
    params = ContactParams() if params is None else params
    out = jnp.zeros((model.nb, 6), model.dtype)
    if len(_point_table(model.geoms)[0]) == 0:
        return out
    cp, Rb, pb = _contact_points(model, q, qd, ground)
    f = contact_forces(cp, ground, params, model.dtype)
    f_b = jnp.einsum("mji,mj->mi", Rb, f)
    r_b = jnp.einsum("mji,mj->mi", Rb, cp.point - pb)
    w = jnp.concatenate([jnp.cross(r_b, f_b), f_b], -1)
    return out.at[np.asarray(cp.body, np.int64)].add(w)


def total_force(model: Model, q, qd, contact: Contact | None = None) -> Float[Array, " 3"]:
    """Sum of the world-frame contact forces over all points (e.g. to compare with the weight)."""
    contact = Contact() if contact is None else contact
    cp = contact_points(model, jnp.asarray(q, model.dtype), jnp.asarray(qd, model.dtype), contact.ground)
    return jnp.sum(contact_forces(cp, contact.ground, contact.params, model.dtype), 0)


def generalized_forces(
    model: Model, q, qd, ground: Ground | None = None, params: ContactParams | None = None
) -> Float[Array, " nv"]:
    """The contact wrenches as joint-space forces, ``tau_c = sum_b J_b^T f_b``: minus the
    inverse dynamics of the wrenches alone (RNEA at zero velocity, acceleration and gravity,
    whose ``f_k = -f_ext_k`` gives ``tau = -J^T f_ext``)."""
    w = contact_wrenches(model, q, qd, ground, params)
    z = jnp.zeros(model.nv, model.dtype)
    return -rnea_full(model, jnp.asarray(q, model.dtype), z, z, w, gravity=False).tau
