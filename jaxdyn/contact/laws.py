"""The contact force laws, per contact point, batched over any leading axes.

* Normal force, HuntCrossley75 in the form of MarhefkaOrin99 (``f = lambda x^n xdot + k x^n``
  with ``lambda = c_d k``; docs/contact.md):
  ``f_n = max(0, k d^p (1 + c_d v_pen))`` with ``v_pen = -n . v`` the penetration rate. The
  damping scales with ``d^p``, so the force is zero at first touch (no jump at impact), and the
  ``max`` keeps it from pulling the bodies together during separation (MarhefkaOrin99).
* Friction, regularised Coulomb: ``f_t = -mu f_n v_t / sqrt(|v_t|^2 + eps^2)`` with
  ``v_t = v - (n . v) n`` and ``mu`` combined as for pairs from the geom's sliding friction
  ``friction[0]`` and the ground's (``Ground.friction``: its plane geom's, from
  ``Ground.from_model``); this is the
  Coulomb law ``|f_t| <= mu f_n`` opposing sliding, smoothed over the velocity
  scale ``eps`` so it is smooth and finite at ``v_t = 0``. Static friction is thereby replaced
  by a steep viscous law: a body held by friction creeps at ``|v_t| = eps r / sqrt(1 - r^2)``
  with ``r = |f_tangential demand| / (mu f_n) < 1``. This is ``Contact(friction="regularised")``,
  the default.
* Friction, stick-capable (``Contact(friction="spring")``): the tangential spring-damper of
  AzadFeatherstone10 (also jaxsim's soft contacts), a bristle of stiffness ``k_t`` and damping
  ``b_t`` whose elongation ``u`` (world frame, one 3-vector per candidate point or pair,
  :class:`ContactState`) is part of the simulation state, in series with a Coulomb slider.
  With ``h = 0`` in continuous time and ``h`` the step in ``"implicit_euler"``:

      u_t = u - (n . u) n                                   (S1)  elongation in the tangent plane
      f_s = -k_t u_t - (b_t + h k_t) v_t                      (S2)  force if the contact sticks
      f_t = f_s min(1, mu f_n / |f_s|)                       (S3)  limited to the Coulomb cone
      du/dt = -(f_t + k_t u_t) / (b_t + h k_t)                (S4)  elongation rate
      u' = u_t + h du/dt                                      (S5)  the step's update

  In stick (``|f_s| < mu f_n``) (S4) is ``du/dt = v_t``: the bristle follows the contact point
  and the force is a spring-damper ``-k_t u - b_t v_t``, so a tangential load inside the cone is
  held at the static deflection ``|u| = |load| / k_t`` with zero velocity (no creep). In slip
  (S4) is the rate at which the bristle's own spring-damper carries exactly the limited force
  (``f_t = -k_t u_t - b_t du/dt``): the bristle relaxes towards ``mu f_n / k_t`` and the force
  is Coulomb's ``mu f_n`` along ``f_s``. Out of contact ``f_n = 0``, so ``f_t = 0`` and the
  elongation relaxes, ``du/dt = -k_t u / b_t`` (time constant ``b_t / k_t``; per step the
  factor ``b_t / (b_t + h k_t)``): a new touch-down starts from a relaxed bristle, and the force
  is continuous through it because the cone closes with ``f_n``. AzadFeatherstone10 scale
  stiffness and damping with ``sqrt(d)``; here ``k_t`` and ``b_t`` are constants, which keeps
  the law passive: with the bristle's energy ``k_t |u_t|^2 / 2`` (continuous time, ``h = 0``)

      d/dt (k_t |u_t|^2 / 2) + f_t . v_t = f_t . (f_t - f_s) / b_t - b_t |du/dt|^2 <= 0   (S6)

  since ``f_t = s f_s`` with ``0 <= s <= 1`` (``v_t - du/dt = (f_t - f_s) / b_t`` by (S2),
  (S4)): the friction and the bristle together never inject energy. In the step (S2) is the
  elastic force at the end-of-step elongation ``u + h v_t`` (backward Euler in ``u``), written
  as a function of the velocity so that the implicit step's velocity linearisation
  (:func:`jaxdyn.sim.step`) includes the bristle's stiffness, ``h k_t``: in stick the law is
  affine in the velocity and the step is exactly backward Euler for the bristle, stable and
  dissipative at any ``k_t h^2 / m``. (S5) is evaluated at the step's end velocity. For a pair
  the elongation is the second body's relative to the first; it is kept in world axes and
  projected by (S1) on the pair's current tangent plane (no rotation with the contact frame;
  the projection only shortens it). Cylinder rim points are re-anchored at the deepest rim
  point every step, so their elongation belongs to the slot, not to a material point.
* Torsional and rolling friction, for contacts whose dimension (MuJoCo's ``condim``, combined
  as the friction from ``Geoms.condim``) is 4 (torsional) or 6 (torsional and rolling): with
  ``omega`` the angular velocity of the pushed body relative to the other (world axes),
  ``w_n = n . omega`` its spin about the normal and ``w_r = omega - w_n n`` its rolling part,
  the contact adds the couple

      t_s = -mu_s f_n w_n n / sqrt(w_n^2 + eps_w^2)                        (R1)  torsional
      t_r = -mu_r f_n w_r / sqrt(|w_r|^2 + eps_w^2)                         (R2)  rolling

  with ``mu_s``, ``mu_r`` (lengths) the geoms' ``friction[1]`` and ``friction[2]`` combined as
  the sliding friction (MuJoCo's ``condim`` and ``friction``; a ground without a plane geom has
  neither, so the geom's own act) and ``eps_w`` = ``ContactParams.spin_velocity``: the
  regularised Coulomb law of the sliding friction, applied to the angular velocity, so
  ``|t_s| <= mu_s f_n`` and ``|t_r| <= mu_r f_n`` as MuJoCo bounds them (its elliptic cone
  couples the five friction directions; here each part has its own bound). The couple acts on
  the pushed body and its opposite on the other, as a pure moment; it is the same under both
  friction laws (the bristle of ``friction="spring"`` is translational), and implicit in
  velocity in the ``"implicit_euler"`` step as the sliding friction is.

Everything is a function of ``(q, qd)`` (and of ``u`` for ``friction="spring"``), with finite derivatives everywhere (also at zero
penetration, zero tangential velocity, a point exactly on the plane, coincident sphere centres,
parallel segments, a sphere centre on a box face or edge, a capsule's segment parallel to a box
face or through the box): ``d^p`` uses the safe-power form
``where(d > 0, where(d > 0, d, 1)^p, 0)`` so neither ``d`` nor ``p`` gets a ``0 * inf``
gradient, ``sqrt(|v_t|^2 + eps^2) >= eps``, the cone (S3) takes the stick branch only where
``|f_s| < mu f_n`` (so where ``f_n = 0`` the friction and its velocity derivative are zero,
also at ``f_s = 0``) and divides by ``|f_s|`` only in the slip branch, and every normalisation
and division is guarded the same way (a fallback direction where a length is zero). Distances and forces are
continuous; a witness point may jump where the closest points are not unique (parallel
segments, a capsule tilting through parallel to a box face, a centre equidistant from two box
faces, coincident centres), as it does for rigid shapes.
"""

from __future__ import annotations

import jax.numpy as jnp

from ..collision import dot
from .params import ContactParams


def _safe_pow(d, p):
    """``d^p`` for ``d >= 0`` with finite derivatives in ``d`` and ``p`` at ``d = 0`` (``p >= 1``)."""
    pos = d > 0
    return jnp.where(pos, jnp.where(pos, d, 1.0) ** p, 0.0)


def tangential(u, n):
    """``u - (n . u) n``, (S1)."""
    return u - dot(u, n)[..., None] * n


def _cone(fs, limit):
    """The factor ``min(1, limit / |fs|)`` of (S3), ``fs`` clamped to the cone: the stick
    branch only where ``|fs| < limit``, so a zero ``limit`` gives zero force and zero
    derivatives also at ``fs = 0``; ``|fs|`` divides only in the slip branch, where it is
    positive unless ``limit = 0``."""
    sq = dot(fs, fs)
    ok = sq > jnp.finfo(fs.dtype).tiny
    norm = jnp.where(ok, jnp.sqrt(jnp.where(ok, sq, 1.0)), 0.0)
    return jnp.where(norm < limit, 1.0, limit / jnp.where(ok, norm, 1.0))


def friction(vt, ut, limit, params: ContactParams, dtype, dt):
    """The friction force ``f_t`` ``(..., 3)`` at the tangential velocity ``vt`` with the bound
    ``limit = mu f_n`` (module docstring), and its secant slope ``c`` ``(...)``, ``|f_t|`` per
    unit of the speed it opposes (:meth:`JointSpaceContacts.newton_matrix`). Regularised
    Coulomb (``ut is None``): ``f_t = -c v_t`` with ``c = limit / sqrt(|v_t|^2 + eps^2)``. The
    bristle law with tangential elongations ``ut`` (S1)-(S3): ``w = k_t u_t + b v_t`` with ``b =
    b_t + dt k_t``, ``f_t = -min(1, limit / |w|) w`` and ``c = b min(1, limit / |w|)``."""
    if ut is None:
        eps = jnp.asarray(params.friction_velocity, dtype)
        c = limit / jnp.sqrt(dot(vt, vt) + eps * eps)
        return -c[..., None] * vt, c
    kt, bt = (jnp.asarray(x, dtype) for x in (params.tangential_stiffness, params.tangential_damping))
    b = bt + jnp.asarray(dt, dtype) * kt
    w = kt * ut + b * vt
    scale = _cone(w, limit)
    return -scale[..., None] * w, b * scale


def normal_force(depth, normal, velocity, params: ContactParams, dtype, soft=None):
    """The Hunt-Crossley normal force ``max(0, k d^p (1 - c_d v_n))`` (module docstring); with
    ``soft = (c0, s)`` per row, MuJoCo's ``max(0, c0 - s v_n)`` (:mod:`jaxdyn.contact.soft`)."""
    if soft is not None:
        return jnp.maximum(soft[0] - soft[1] * dot(velocity, normal), 0.0)
    k, p, cd = (jnp.asarray(x, dtype) for x in (params.stiffness, params.exponent, params.damping))
    return jnp.maximum(k * _safe_pow(depth, p) * (1.0 - cd * dot(velocity, normal)), 0.0)  # v_pen = -v_n


def force_law(
    depth, normal, velocity, mu, params: ContactParams, dtype, u=None, dt=0.0, friction_normal=None, soft=None
):
    """Hunt-Crossley normal force plus friction (module docstring) for penetrations ``depth``,
    unit normals and velocities ``v`` (the force pushes along ``+n``; ``v`` is the velocity of
    the pushed body relative to the other). ``u is None``: regularised Coulomb friction; else
    the bristle law (S1)-(S4) with elongations ``u`` and step ``dt``. ``friction_normal``: the
    normal force that bounds the friction (``mu f_n``), if not this velocity's own (the
    ``"implicit_euler"`` step's convex subproblem, (J4) of :class:`JointSpaceContacts`).
    ``soft``: ``(c0, s)`` of MuJoCo's normal law (:mod:`jaxdyn.contact.soft`), else Hunt-Crossley.
    Returns the force, and for the bristle law ``du/dt`` (S4) and ``u_t`` (S1)."""
    vn = dot(velocity, normal)
    fn = normal_force(depth, normal, velocity, params, dtype, soft)
    fb = fn if friction_normal is None else friction_normal
    vt = velocity - vn[..., None] * normal
    ut = None if u is None else tangential(u, normal)
    ft = friction(vt, ut, mu * fb, params, dtype, dt)[0]
    if u is None:
        return fn[..., None] * normal + ft, None, None
    assert ut is not None  # the bristle law: u given
    kt, bt = (jnp.asarray(x, dtype) for x in (params.tangential_stiffness, params.tangential_damping))
    b = bt + jnp.asarray(dt, dtype) * kt
    return fn[..., None] * normal + ft, -(ft + kt * ut) / b, ut


def angular_friction_law(fb, normal, omega, mu_angular, params: ContactParams, dtype):
    """The torsional and rolling friction torque ``(..., 3)`` (module docstring, (R1)-(R2)) at the
    relative angular velocity ``omega`` with the normal force ``fb`` bounding it and the
    coefficients ``mu_angular`` ``(..., 2)`` (torsional, rolling), and the secant slopes
    ``c_s``, ``c_r`` ``(...)`` of each part, ``|tau|`` per unit of the angular speed it opposes
    (:meth:`JointSpaceContacts.newton_matrix`)."""
    eps = jnp.asarray(params.spin_velocity, dtype)
    wn = dot(omega, normal)
    wr = omega - wn[..., None] * normal
    cs = mu_angular[..., 0] * fb / jnp.sqrt(wn * wn + eps * eps)
    cr = mu_angular[..., 1] * fb / jnp.sqrt(dot(wr, wr) + eps * eps)
    return -(cs * wn)[..., None] * normal - cr[..., None] * wr, cs, cr


def torques(depth, normal, velocity, omega, mu_angular, params: ContactParams, dtype, soft=None):
    """(R1)-(R2) bounded by the normal force at ``velocity`` (of the law that gives the force)."""
    fn = normal_force(depth, normal, velocity, params, dtype, soft)
    return angular_friction_law(fn, normal, omega, mu_angular, params, dtype)[0]
