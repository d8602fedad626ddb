"""Compliant contact between the shapes on a model's bodies, and between them and the ground.

What is modelled (docs/contact.md has the parameters, the validation and the limits):

* Ground: the half-space ``n . x <= h`` (:class:`Ground`: unit normal ``n``, any slope, and
  height ``h``; array leaves, so both are differentiable).
* Ground contact points, per geom of ``model.geoms`` on a body that the ground collides with:
  where the geoms hold planes (an MJCF floor), by MuJoCo's filter against them (bit masks,
  ``Geoms.exclude``, explicit ``Geoms.pairs``); without planes, every geom with ``contype`` or
  ``conaffinity`` nonzero. Geoms on the world are skipped. A sphere is its centre with radius
  ``r``, a capsule its two end-sphere centres (``+-`` half-length along the geom's z) with radius ``r``,
  a box its 8 corners with ``r = 0``, a cylinder (radius ``r``, half-length ``l``, axis ``a``)
  four points on each of its two rim circles with ``r = 0``: the deepest rim point
  ``c_k + r u`` with ``u = w / |w|``, ``w = (n . a) a - n`` (``c_k = c +- l a`` the disk centres:
  the point of the circle lowest along ``n``), and that point turned about the axis by 90, 180
  and 270 degrees (``u``, ``a x u``, ``-u``, ``-a x u``). Where the axis is parallel to ``n``
  (``w = 0``, a cylinder upright on either disk, every rim point equally deep) ``u`` is the
  geom's x axis. The depth of every point is continuous; the points themselves move
  continuously except through that upright pose, where each disk's square of points turns about
  the axis with equal depths (elastic force and moment unchanged). A mesh geom: the vertices of
  its convex hull (``Geoms.vertices``, what MuJoCo collides of a mesh) with ``r = 0``; of a
  hull with more than :data:`MESH_GROUND_POINTS` (8) vertices, the 8 deepest along ``-n``
  (``lax.top_k`` at each evaluation; MuJoCo keeps up to 4 contacts of a mesh on a plane). An
  ellipsoid (semi-axes ``A``): its point lowest along ``n``, ``c - R A^2 m / sqrt(m^T A^2 m)``
  with ``m = R^T n``, with ``r = 0`` (exact). Planes are not collided with the ground. For a
  point ``c`` of radius ``r`` the signed distance of the shape to the ground is
  ``phi = n . c - h - r`` and the penetration
  ``d = max(0, margin - phi)``, with ``margin`` the contact margin (MuJoCo's: the geom's
  ``Geoms.margin`` plus the ground plane's, or an explicit pair's own ``Geoms.pair_margin``;
  default 0), so a contact acts from that distance on, as MuJoCo's does; the force acts at the
  witness point on the ground surface, ``p = c - (r - max(0, -phi)) n`` (the shape's deepest
  point moved back onto the plane), with the velocity ``v`` of the body's material point there.
* Shape pairs (:func:`collision_pairs`): sphere-sphere, sphere-capsule, capsule-capsule,
  sphere-box, capsule-box, box-box, sphere-cylinder and capsule-cylinder (the cylinder's exact
  signed distance; a capsule's deepest point by golden-section search on it, convex, with the
  three contacts of capsule-box: :func:`jaxdyn.collision._segment_cylinder_contacts`),
  cylinder-box (the box's corners and edges against the cylinder, the cylinder's rims against
  the box: :func:`jaxdyn.collision._cylinder_box_contacts`), cylinder-cylinder
  (:func:`jaxdyn.collision._cylinder_cylinder_contacts`), and a mesh (its convex hull,
  ``Geoms.faces``) against a sphere, a capsule, a box or a cylinder (the hull's exact signed
  distance; its 8 vertices and edges deepest in the other shape: :func:`jaxdyn.collision.
  _box_hull_contacts`, :func:`jaxdyn.collision._cylinder_hull_contacts`), two meshes (the 8
  vertices of each hull deepest in the other: :func:`jaxdyn.collision._hull_hull_contacts`), between
  geoms of different bodies (geoms on the world body included), selected once per model by
  MuJoCo's rules (Todorov12; MuJoCo's documentation, "Collision detection"):
  ``contype1 & conaffinity2 or contype2 & conaffinity1``, never two geoms of one body, never a
  body and its parent body unless the parent is the world, never two bodies listed in
  ``exclude`` nor two geoms in ``model.geoms.exclude`` (MJCF ``<contact><exclude>``); and
  always the explicit pairs ``model.geoms.pairs`` (MJCF ``<contact><pair>``). For each pair:
  the signed distance ``phi`` between the two surfaces, the unit normal ``n`` from the first
  geom to the second, and the witness point ``p`` midway between the two surfaces' closest
  points (MuJoCo's contact position). Sphere-sphere:
  ``phi = |c2 - c1| - r1 - r2``, ``n`` along the centre line; a capsule is the sphere swept
  along its segment, so sphere-capsule and capsule-capsule are sphere-sphere between the
  closest points of the segments (Ericson05 5.1.2, 5.1.9; for parallel segments the midpoint of
  their overlap); sphere-box uses the closest point of the box to the centre, or, for a centre
  inside, the nearest face (``phi = -(h_i - |l_i|)_min - r``); capsule-box is sphere-box at
  the point of the capsule's segment deepest in the box, the minimum of the box's signed
  distance along the segment (convex; found exactly among 29 candidates: the ends, the closest
  points to the 12 edges, the crossings of two face planes' distances; for a minimum along an
  interval, a segment parallel to a face, the interval's midpoint), so ``phi`` is the smallest
  sphere-box distance over the segment, also where the segment reaches into the box
  (:func:`pair_distances`). A capsule-capsule pair acts through three contacts: at the two ends
  of the stretch of the first segment that the second runs alongside (the second's ends
  projected on the first, clamped), the first capsule's sphere there against the second
  capsule, and the closest points counted by (B1) beyond those two
  (:func:`jaxdyn.collision._segment_segment_contacts`), so a capsule lying along another rests
  on the two ends of their overlap, and crossing capsules on the crossing. A capsule-box pair
  acts through three contacts, sphere-box at its
  two ends and at that deepest point, the last counted beyond the deeper end's penetration
  (``phi_i = phi - min(0, phi_end0, phi_end1)``, (B1) of
  :func:`jaxdyn.collision._segment_box_contacts`), so a capsule lying on a face rests on its
  two ends; a box-box pair through 40: the 8 corners of each box against the other (sphere-box
  of radius 0) and the (B1) interior contact of each box's 12 edges against the other; a
  cylinder-box pair through 32: the box's 8 corners and the (B1) interior contacts of its 12
  edges against the cylinder, and the cylinder's rims against the box: on each rim its point
  deepest in the box (searched over the rim's angle), counted beyond 4 points placed as on the
  ground for the box's normal there, so a cylinder standing on a face rests on 4 rim points and
  one lying on its side on the two ends of its lowest line, as on the ground; a
  cylinder-cylinder pair through 25: the rims of each against the other, as for the box, and
  the first cylinder's side line facing the second (B1). A cylinder that pierces a box or
  another cylinder with neither rim, corner nor edge inside the other (a peg through a plate)
  has no contact. Each
  contact is a row of :class:`PairContacts` (``CollisionPairs.rows`` per pair). All pairs
  of one kind are evaluated together in one batched expression (geom indices gathered from a
  static table); with the broad phase ``Contact(max_pairs=K)``, only the ``K`` pairs of each
  kind whose bounding spheres are nearest (:func:`pairs_in_reach`). The same force law acts on the relative velocity ``v = v_2(p) - v_1(p)`` of
  the two bodies' material points at ``p``: ``f`` on the second body, ``-f`` on the first, with
  ``mu = max(mu_1, mu_2)`` (MuJoCo's combination; the higher-``priority`` geom's where the
  geoms' ``Geoms.priority`` differ), or an explicit pair's own friction
  (``Geoms.pair_friction``, MJCF ``<pair friction>``), and the depth ``max(0, margin -
  phi)`` with the sum of the geoms' margins (an explicit pair's own), as on the ground.
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

:func:`contact_wrenches` sums the point forces into one wrench per body, in the convention of
``f_ext`` (``[moment; force]`` about the body origin in body coordinates), and :class:`Contact`
carries ``(ground, params)`` and the choice of contacts into
:func:`jaxdyn.sim.forward_dynamics`, :func:`jaxdyn.sim.step` and :func:`jaxdyn.sim.rollout`
(argument ``contact``; added to ``f_ext``). In the default ``"implicit_euler"`` step the
contact force is implicit in velocity (backward Euler in velocity, solved by Newton steps on
convex subproblems, :func:`jaxdyn.sim.step`) and explicit in position; in the other integrators
it is explicit (evaluated at the state of each step or stage). ``friction="spring"`` carries its :class:`ContactState` through
``sim.step``/``sim.rollout`` (argument ``contact_state``; ``"implicit_euler"`` only).
"""

from __future__ import annotations

import functools
import warnings
from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int

from . import geometry
from .algorithms.common import full_precision
from .algorithms.kinematics import _jacobians_from_world, body_velocities, dof_motions_world, forward_kinematics
from .algorithms.rnea import rnea_full
from .collision import (
    HULL_POINTS,
    _box_box_contacts,
    _box_hull_contacts,
    _cylinder_box_contacts,
    _cylinder_cylinder_contacts,
    _cylinder_hull_contacts,
    _cylinder_rims,
    _deepest,
    _dot,
    _hull_hull_contacts,
    _segment_box_contacts,
    _segment_cylinder_contacts,
    _segment_hull_contacts,
    _segment_of,
    _segment_point,
    _segment_segment_contacts,
    _sphere_box,
    _sphere_cylinder,
    _sphere_hull,
    _spheres,
    _take,
    _unit,
)
from .model import Model
from .spatial import Pose, cross, mm, mtv, mv


def _array(x):
    """Leaves stay JAX arrays (tracers included) or become numpy arrays (no device work at
    construction)."""
    return x if isinstance(x, jax.Array) else np.asarray(x, np.float64)


__all__ = [
    "Ground",
    "ContactParams",
    "Contact",
    "ContactState",
    "FRICTION_LAWS",
    "ContactPoints",
    "JointSpaceContacts",
    "PairContacts",
    "CollisionPairs",
    "contact_points",
    "contact_forces",
    "collision_pairs",
    "pair_contacts",
    "pair_distances",
    "pair_forces",
    "contact_wrenches",
    "generalized_forces",
    "total_force",
    "PointForces",
]


class Ground(eqx.Module):
    """The half-space ``normal . x <= height`` (world frame). ``normal`` is normalised when
    used. Default: the plane ``z = 0``, ground below.

    friction: the ground's own sliding friction; a geom touches it with the larger of the two
      (MuJoCo's combination), so the default 0 leaves each geom's own.
    geom (static): the plane geom of ``model.geoms`` this ground stands for (``-1``: none); a
      geom in an explicit pair with it (MJCF ``<pair>``) touches it with the pair's friction.
    """

    normal: Float[Array, " 3"] = eqx.field(default_factory=lambda: np.array([0.0, 0.0, 1.0]), converter=_array)
    height: Float[Array, ""] = eqx.field(default_factory=lambda: np.array(0.0), converter=_array)
    friction: Float[Array, ""] = eqx.field(default_factory=lambda: np.array(0.0), converter=_array)
    geom: int = eqx.field(static=True, default=-1)

    @staticmethod
    def from_model(model: Model) -> Ground:
        """The first plane geom on the world body of ``model.geoms`` (MJCF ``<geom type="plane">``):
        normal its z axis, height ``normal . pos``, its sliding friction; the default ground if
        there is none."""
        g = model.geoms
        for i, (t, b) in enumerate(zip(g.type, g.body)):
            if t == geometry.PLANE and b < 0:
                n = g.R[i][:, 2]
                return Ground(normal=n, height=jnp.dot(n, g.pos[i]), friction=g.friction[i, 0], geom=i)
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
      In ``"implicit_euler"`` the contact force is implicit in velocity (backward Euler, see
      :func:`jaxdyn.sim.step`), so the steep friction slope ``mu f_n / eps`` of the regularised
      zone is stable even under impact loads. Outside that zone the friction is saturated and, in
      a single linearised step, effectively explicit: a slip smaller than about ``(m / m_eff) h mu g / 2`` then flips sign
      every step (a bounded period-2 cycle; ``m / m_eff = 1 + m |r x t|^2 / I`` is 3.5 for a
      rolling solid sphere), unless ``eps`` covers it. Hence ``eps ~ 2 h mu g`` (0.02 m/s for
      ``mu = 1`` at ``h = 1 ms``): a rolling sphere then rolls without chatter. Bodies held by
      friction without rolling (a block on a slope) tolerate much smaller values (1e-4 m/s tested
      at 1 ms). The price of a large ``eps`` is creep under static tangential loads (module
      docstring): 11.5 mm/s for a block on a slope at half the friction angle's tangent with the
      default, 0.58 mm/s with ``eps = 1e-3``. Used by ``friction="regularised"`` only.
    spin_velocity ``eps_w`` [rad/s]: regularisation scale of the torsional and rolling friction
      (contacts of MuJoCo ``condim`` 4 and 6, module docstring (R1)-(R2)), as ``eps`` is for
      sliding. Default 0.1 rad/s. Under a static twisting or rolling load ``r`` times the bound
      the contact turns at ``eps_w r / sqrt(1 - r^2)``. Used by both friction laws.
    tangential_stiffness ``k_t`` [N/m], tangential_damping ``b_t`` [N s/m]: the bristle of
      ``friction="spring"`` (module docstring, (S2)-(S5)), per contact point or pair. Defaults
      ``1e4`` N/m and ``100`` N s/m: a 1 kg block held on four corners by a tangential load of
      ``m g / 2`` deflects ``m g / (8 k_t)`` = 0.12 mm, its tangential mode ``sqrt(4 k_t / m)``
      = 200 rad/s is critically damped (``4 b_t = 2 sqrt(4 k_t m)``), and an unloaded bristle
      relaxes with the time constant ``b_t / k_t`` = 10 ms. The bristle is implicit in the
      ``"implicit_euler"`` step, so ``k_t`` is limited by the deflection wanted, not by stability.
      ``b_t`` must be positive.
    """

    stiffness: Float[Array, ""] = eqx.field(default=1e6, converter=_array)
    exponent: Float[Array, ""] = eqx.field(default=1.5, converter=_array)
    damping: Float[Array, ""] = eqx.field(default=10.0, converter=_array)
    friction_velocity: Float[Array, ""] = eqx.field(default=2e-2, converter=_array)
    tangential_stiffness: Float[Array, ""] = eqx.field(default=1e4, converter=_array)
    tangential_damping: Float[Array, ""] = eqx.field(default=100.0, converter=_array)
    spin_velocity: Float[Array, ""] = eqx.field(default=0.1, converter=_array)


def _pairs_converter(x):
    return tuple((str(a), str(b)) for a, b in x)


FRICTION_LAWS = ("regularised", "spring")


class ContactState(eqx.Module):
    """The state of ``friction="spring"``: the bristle elongation ``u`` (module docstring, (S1)-(S5)),
    world frame, ``ground (m, 3)`` one row per ground contact point in the order of
    :func:`contact_points`, ``pairs (p, 3)`` one row per contact of :func:`pair_contacts` (the
    second body's relative to the first). Zero rows where a kind of contact is off. A pytree;
    :meth:`Contact.init_state` gives the relaxed state (zeros)."""

    ground: Float[Array, "m 3"]
    pairs: Float[Array, "p 3"]


class Contact(eqx.Module):
    """Contact to add to the dynamics: ``sim.rollout(..., contact=Contact())``. A pytree (pass it
    through ``jit``/``grad``/``vmap`` like the model).

    ground, params: the ground half-space and the force law's parameters (array leaves).
    collide_ground, collide_pairs (static): which contacts act, shapes against the ground and
      shapes against each other (:func:`collision_pairs`); both on by default.
    exclude (static): pairs of body names (``"world"`` for the world body) whose geoms never
      collide with each other, as MJCF's ``<contact><exclude body1 body2>``.
    friction (static): ``"regularised"`` (default; a function of ``(q, qd)``, creeps under a
      static tangential load) or ``"spring"`` (stick-capable, with the bristle elongation as
      state, :class:`ContactState`; ``sim.step`` and ``sim.rollout`` carry it, with
      ``"implicit_euler"``). Module docstring.
    max_pairs (static): the broad phase. ``None`` (default): every pair of
      :func:`collision_pairs` is evaluated at every state. An int ``K``: of each kind of pair
      (sphere-box, box-box, ...) that has more than ``K`` pairs, the ``K`` whose bounding
      spheres are nearest are evaluated (the smallest gaps ``|c_2 - c_1| - r_1 - r_2``, chosen
      anew at each evaluation with ``lax.top_k``), so the cost of a step follows ``K``, not the
      number of pairs (MJX's ``max_geom_pairs`` in the same role). The forces equal those of
      every pair as long as no more than ``K`` pairs of a kind have bounding spheres that meet
      (a pair whose spheres are apart does not touch); :func:`pairs_in_reach` counts them along
      a trajectory, to choose ``K``. With ``SimOptions(contact_position="implicit")`` a pair
      also acts when it would touch within the step: count with a ``margin`` of the step
      times the largest closing speed. A pair that leaves the chosen ones with
      ``friction="spring"`` starts again from a relaxed bristle.
    """

    ground: Ground = eqx.field(default_factory=Ground)
    params: ContactParams = eqx.field(default_factory=ContactParams)
    collide_ground: bool = eqx.field(static=True, default=True)
    collide_pairs: bool = eqx.field(static=True, default=True)
    exclude: tuple[tuple[str, str], ...] = eqx.field(static=True, default=(), converter=_pairs_converter)
    friction: str = eqx.field(static=True, default="regularised")
    max_pairs: int | None = eqx.field(static=True, default=None)

    def __check_init__(self):
        if self.friction not in FRICTION_LAWS:
            raise ValueError(f"Contact: unknown friction '{self.friction}', choose one of {', '.join(FRICTION_LAWS)}")
        if self.max_pairs is not None and (
            isinstance(self.max_pairs, bool) or not isinstance(self.max_pairs, (int, np.integer)) or self.max_pairs < 1
        ):
            raise ValueError(f"Contact: max_pairs must be a positive int or None, got {self.max_pairs!r}")

    @property
    def stateful(self) -> bool:
        """Whether the contact has a state to carry (``friction="spring"``)."""
        return self.friction == "spring"

    def init_state(self, model: Model) -> ContactState | None:
        """The relaxed state (zero elongation) for ``model``; ``None`` for a contact without state."""
        if not self.stateful:
            return None
        m = _n_ground_points(model.geoms) if self.collide_ground else 0
        p = sum(collision_pairs(model, self.exclude).rows) if self.collide_pairs else 0
        return ContactState(jnp.zeros((m, 3), model.dtype), jnp.zeros((p, 3), model.dtype))

    @full_precision
    def wrenches(self, model: Model, q, qd, state: ContactState | None = None, dt=0.0) -> Float[Array, "nb 6"]:
        """Body wrenches (:func:`contact_wrenches`). ``state``, ``dt``: for ``friction="spring"``,
        the elongation (``None``: relaxed) and the ``h`` of (S2) (``0``: continuous time);
        ignored by the regularised law."""
        return _evaluate(model, q, qd, self.ground, self.params, self._state(model, state), dt, **self._which())[0]

    @full_precision
    def generalized_forces(self, model: Model, q, qd, state: ContactState | None = None, dt=0.0) -> Float[Array, " nv"]:
        """The joint-space contact force ``sum J^T f`` (see :func:`generalized_forces`)."""
        return _joint_space(model, q, self.wrenches(model, q, qd, state, dt))

    @full_precision
    def velocity_derivative(
        self, model: Model, q, qd, state: ContactState | None = None, dt=0.0
    ) -> Float[Array, "nv nv"]:
        """``d tau_c / d qd``: how the joint-space contact force changes with the velocity, in
        closed form (:meth:`JointSpaceContacts.velocity_derivative`); used by the
        ``"implicit_euler"`` step, with the step's ``dt`` for ``friction="spring"``."""
        return self.joint_space(model, q, state, dt).velocity_derivative(jnp.asarray(qd, model.dtype))

    @full_precision
    def joint_space(
        self, model: Model, q, state: ContactState | None = None, dt=0.0, lookahead=None
    ) -> JointSpaceContacts:
        """Every contact (ground points, then pairs) at the configuration ``q`` with its
        velocity Jacobian: the joint-space force and its velocity derivative at any velocity
        without repeating the kinematics (:class:`JointSpaceContacts`). ``lookahead``: the
        ``h`` of (J3) there (None: the penetrations of ``q``)."""
        return _joint_space_contacts(model, q, self, self._state(model, state), dt, lookahead)

    @full_precision
    def state_rate(self, model: Model, q, qd, state: ContactState | None = None, dt=0.0) -> ContactState:
        """``du/dt`` of (S4) at ``(q, qd, u)`` (``friction="spring"`` only)."""
        self._require_state("state_rate")
        state = self._state(model, state)
        return _evaluate(model, q, qd, self.ground, self.params, state, dt, **self._which())[1]

    @full_precision
    def update_state(self, model: Model, q, qd, state: ContactState | None, dt) -> ContactState:
        """The elongation after a step of ``dt``, (S5): ``u_t + dt du/dt`` with the rate (S4)
        evaluated at ``(q, qd)``, ``qd`` the step's end velocity (``friction="spring"`` only)."""
        self._require_state("update_state")
        state = self._state(model, state)
        _, rate, ut = _evaluate(model, q, qd, self.ground, self.params, state, dt, **self._which())
        return jax.tree_util.tree_map(lambda u, r: u + dt * r, ut, rate)

    def spring_energy(self, state: ContactState | None) -> Float[Array, ""]:
        """The bristles' elastic energy ``sum k_t |u|^2 / 2`` (zero without state)."""
        if state is None:
            return jnp.zeros(())
        kt = self.params.tangential_stiffness
        return 0.5 * kt * (jnp.sum(state.ground * state.ground) + jnp.sum(state.pairs * state.pairs))

    @full_precision
    def point_forces(self, model: Model, q, qd, state: ContactState | None = None, dt=0.0) -> PointForces:
        """Where each contact force acts and how large it is, in world coordinates
        (:class:`PointForces`), e.g. to draw them (:func:`jaxdyn.viewer.animate`) or to log
        foot forces. ``state``, ``dt``: as for :meth:`wrenches`."""
        kinds = self._kinds(model, q, qd, self._state(model, state), dt, table_rows=True)
        dt_ = model.dtype
        if not kinds:
            z = jnp.zeros((0, 3), dt_)
            return PointForces(z, z, jnp.zeros((0,), dt_), (), (), z)
        ks = _split_world(kinds)
        return PointForces(
            jnp.concatenate([k.point for k in ks]),
            jnp.concatenate([k.f for k in ks]),
            jnp.concatenate([k.depth for k in ks]),
            tuple(int(b) for k in ks for b in k.body),
            tuple(int(b) for k in ks for b in k.other),
            jnp.concatenate([jnp.zeros_like(k.f) if k.torque is None else k.torque for k in ks]),
        )

    def _kinds(self, model: Model, q, qd, state, dt=0.0, table_rows=False):
        q, qd = jnp.asarray(q, model.dtype), jnp.asarray(qd, model.dtype)
        if not _acts(model, self.collide_ground, self.collide_pairs, self.exclude):
            return {}
        return _kinds(
            model, _frames(model, q, qd), self.ground, self.params, state, dt, table_rows=table_rows, **self._which()
        )

    def _state(self, model: Model, state):
        if not self.stateful:
            return None
        return self.init_state(model) if state is None else state

    def _require_state(self, what):
        if not self.stateful:
            raise ValueError(f"Contact.{what}: friction='{self.friction}' has no state; use friction='spring'")

    def _which(self):
        return dict(
            collide_ground=self.collide_ground,
            collide_pairs=self.collide_pairs,
            exclude=self.exclude,
            max_pairs=self.max_pairs,
        )


class ContactPoints(eqx.Module):
    """The candidate ground contact points of a model at one state (``m`` points).

    body, geom: tuples of ``m`` ints (static); centre ``(m, 3)`` world
    position of the point (sphere centre, capsule end, box corner, cylinder rim point); radius
    ``(m,)``; depth ``(m,)`` the penetration ``d = max(0, margin - phi) >= 0`` (``phi`` the
    signed distance to the ground); point ``(m, 3)`` witness on the ground surface (below the
    shape's deepest point where it penetrates, else that point); velocity ``(m, 3)`` world
    velocity of the body's material point at ``point``; mu ``(m,)`` the sliding friction: the
    larger of the geom's and the ground's (the higher-priority one's where the priorities
    differ), or that of an explicit pair of the geom and the ground's plane; margin ``(m,)`` the
    contact margin (the geom's ``Geoms.margin`` plus the ground plane's, or an explicit pair's
    own ``Geoms.pair_margin``).
    """

    centre: Float[Array, "m 3"]
    radius: Float[Array, " m"]
    depth: Float[Array, " m"]
    point: Float[Array, "m 3"]
    velocity: Float[Array, "m 3"]
    mu: Float[Array, " m"]
    margin: Float[Array, " m"]
    body: tuple[int, ...] = eqx.field(static=True)
    geom: tuple[int, ...] = eqx.field(static=True)


class PairContacts(eqx.Module):
    """The contacts of the shape pairs of a model at one state (``m`` rows: one per pair of
    :func:`collision_pairs`, three per capsule-box pair and 40 per box-box pair, consecutive;
    ``CollisionPairs.rows``).

    geom1, geom2, body1, body2, pair: tuples of ``m`` ints (static; body ``-1`` is the world;
    ``pair`` the row's index into ``collision_pairs(model).pairs``);
    distance ``(m,)`` the contact's signed distance (negative: penetrating; for the pairs of
    one contact the distance between the surfaces, else module docstring); depth
    ``(m,)`` ``max(0, margin - distance)``; normal ``(m, 3)`` unit, from geom1 towards geom2; point
    ``(m, 3)`` witness, midway between the surfaces' closest points; velocity ``(m, 3)``
    ``v_2(p) - v_1(p)``, the relative world velocity of the two bodies' material points at the
    witness; mu ``(m,)`` the larger sliding friction of the two geoms (the higher-priority geom's
    where the priorities differ), or the explicit pair's own; margin ``(m,)`` the contact margin
    (the sum of the geoms', or the explicit pair's own).
    """

    distance: Float[Array, " m"]
    depth: Float[Array, " m"]
    normal: Float[Array, "m 3"]
    point: Float[Array, "m 3"]
    velocity: Float[Array, "m 3"]
    mu: Float[Array, " m"]
    margin: Float[Array, " m"]
    geom1: tuple[int, ...] = eqx.field(static=True)
    geom2: tuple[int, ...] = eqx.field(static=True)
    body1: tuple[int, ...] = eqx.field(static=True)
    body2: tuple[int, ...] = eqx.field(static=True)
    pair: tuple[int, ...] = eqx.field(static=True)


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

    def _depth(self, vel):
        """(J3) at the contact velocities ``vel`` ``(m, 3)``."""
        if self.lookahead is None:
            return self.depth
        return _end_depth(self.distance, self.lookahead, _dot(self.normal, vel))

    @full_precision
    def normal_forces(self, v) -> Float[Array, " m"]:
        """The normal force ``f_n`` ``(m,)`` of every contact at the joint velocity ``v``
        ``(nv,)``: the Hunt-Crossley part of (J1), at the penetration of (J3)."""
        vel = _mv_rows(self.G, v)
        return _normal_force(self._depth(vel), self.normal, vel, self.params, self.G.dtype)

    def elastic_normal_forces(self) -> Float[Array, " m"]:
        """The normal force ``k d^p`` ``(m,)`` of every contact at rest (no normal velocity),
        with the penetration of the configuration."""
        return _normal_force(self.depth, self.normal, jnp.zeros_like(self.normal), self.params, self.G.dtype)

    @full_precision
    def point_forces(self, v, friction_normal=None) -> Float[Array, "m 3"]:
        """World force ``f_c`` of every contact at the joint velocity ``v``; with
        ``friction_normal`` ``(m,)``, the friction bounded by ``mu`` times it instead of the
        normal force at ``v`` ((J4))."""
        vel = _mv_rows(self.G, v)
        d = self._depth(vel)
        return _force_law(
            d, self.normal, vel, self.mu, self.params, self.G.dtype, self.elongation, self.dt, friction_normal
        )[0]

    @full_precision
    def torques(self, v, friction_normal=None) -> Float[Array, "m 3"]:
        """World couple ``t_c`` of the torsional and rolling friction of every contact at the
        joint velocity ``v`` (zero rows without ``A``); ``friction_normal`` as for
        :meth:`point_forces`."""
        if self.A is None:
            return jnp.zeros_like(self.normal)
        fb = self.normal_forces(v) if friction_normal is None else friction_normal
        w = _mv_rows(self.A, v)
        return _angular_friction_law(fb, self.normal, w, self.mu_angular, self.params, self.G.dtype)[0]

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

        def law(d, phi, n, vel, mu, u, fb):
            if h is not None:
                d = _end_depth(phi, h, _dot(n, vel))
            return _force_law(d, n, vel, mu, self.params, dtype, u, self.dt, fb if fixed else None)[0]

        phi = self.depth if self.distance is None else self.distance
        vel = _mv_rows(self.G, v)
        fb = friction_normal if fixed else jnp.zeros_like(self.depth)
        if self.A is None:
            K = jax.vmap(jax.jacfwd(law, argnums=3))(self.depth, phi, self.normal, vel, self.mu, self.elongation, fb)
            return _congruence(K, self.G)

        def law6(d, phi, n, x, mu, u, fb, mua):  # [f; t] of the contact velocity x = [v_c; w_c]
            f = law(d, phi, n, x[:3], mu, u, fb)
            dd = _end_depth(phi, h, _dot(n, x[:3])) if h is not None else d
            fn = fb if fixed else _normal_force(dd, n, x[:3], self.params, dtype)
            return jnp.concatenate([f, _angular_friction_law(fn, n, x[3:], mua, self.params, dtype)[0]])

        GA = jnp.concatenate([self.G, self.A], axis=1)
        x = _mv_rows(GA, v)
        K = jax.vmap(jax.jacfwd(law6, argnums=3))(
            self.depth, phi, self.normal, x, self.mu, self.elongation, fb, self.mu_angular
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
        slopes (:func:`_angular_friction_law`)."""
        dtype = self.G.dtype
        h = self.lookahead
        p = self.params

        def normal(d, phi, n, vn):
            if h is not None:
                d = _end_depth(phi, h, vn)
            return _normal_force(d, n, vn * n, p, dtype)

        phi = self.depth if self.distance is None else self.distance
        vel = _mv_rows(self.G, v)
        vn = _dot(vel, self.normal)
        slope = jax.vmap(jax.grad(normal, argnums=3))(self.depth, phi, self.normal, vn)
        vt = vel - vn[:, None] * self.normal
        ut = None if self.elongation is None else _tangential(self.elongation, self.normal)
        c = _friction(vt, ut, self.mu * friction_normal, p, dtype, self.dt)[1]
        nn = self.normal[:, :, None] * self.normal[:, None, :]
        tangent = jnp.eye(3, dtype=dtype) - nn
        K = slope[:, None, None] * nn - c[:, None, None] * tangent
        D = _congruence(K, self.G)
        if self.A is None:
            return D
        w = _mv_rows(self.A, v)
        _, cs, cr = _angular_friction_law(friction_normal, self.normal, w, self.mu_angular, p, dtype)
        return D + _congruence(-cs[:, None, None] * nn - cr[:, None, None] * tangent, self.A)


def _congruence(K, G):
    """``sum_c G_c^T K_c G_c`` ``(nv, nv)`` of per-contact blocks ``K`` ``(m, k, k)`` and
    Jacobians ``G`` ``(m, k, nv)``."""
    return jnp.einsum("mik,min->kn", G, jnp.einsum("mij,mjn->min", K, G))


def _end_depth(phi, h, vn):
    """(J3): the penetration after a step of ``h`` at the normal velocity ``vn`` from the signed
    distance ``phi``."""
    return jnp.maximum(-(phi + h * vn), 0.0)


def _mv_rows(G, v):
    return jnp.einsum("min,n->mi", G, v)


def _mtv_rows(G, f):
    return jnp.einsum("min,mi->n", G, f)


def _point_jacobians(model: Model, Jw, bodies, points, angular=False):
    """World-frame velocity Jacobians ``(m, 3, nv)`` of the material points of ``bodies``
    (``-1``: the world, zero rows) at the world ``points``: ``v_p = v_O + omega x p`` from the
    world Jacobian ``Jw`` about the world origin (Rodriguez86 (7.2)); with ``angular``, ``(m, 6,
    nv)``, the angular velocity's rows (world axes) first."""
    if isinstance(bodies, jax.Array):
        b = jnp.where(bodies < 0, model.nb, bodies)
    else:
        b = np.where(np.asarray(bodies, np.int64) < 0, model.nb, np.asarray(bodies, np.int64))
    eye = jnp.broadcast_to(jnp.eye(3, dtype=points.dtype), (len(b), 3, 3))
    J = _jacobians_from_world(model, Jw, Pose(eye, points), b, "local_world_aligned")
    return J if angular else J[:, 3:]


def _joint_space_contacts(model: Model, q, contact: Contact, state, dt, lookahead=None) -> JointSpaceContacts:
    dtype = model.dtype
    q = jnp.asarray(q, dtype)
    depth, normal, mu, J, u, phi, mua = [], [], [], [], [], [], []
    use_ground = contact.collide_ground and _has_ground_points(model.geoms)
    use_pairs = contact.collide_pairs and len(collision_pairs(model, contact.exclude).pairs) > 0
    Jw, X = dof_motions_world(model, q)
    F = _frames(model, q, X=X)
    if use_ground:
        cp = _contact_points(model, F, contact.ground)
        n = _unit(jnp.asarray(contact.ground.normal, dtype))
        depth.append(cp.depth), mu.append(cp.mu), normal.append(jnp.broadcast_to(n, cp.point.shape))
        phi.append(_dot(cp.centre, n) - jnp.asarray(contact.ground.height, dtype) - cp.radius - cp.margin)
        J.append(_point_jacobians(model, Jw, cp.body, cp.point, angular=True))
        mua.append(_angular_friction(model.geoms, np.asarray(cp.geom), np.full(len(cp.geom), contact.ground.geom)))
        if state is not None:
            u.append(state.ground)
    if use_pairs:
        pc = _pair_slots(model, F, contact.exclude, contact.max_pairs)
        depth.append(pc.depth), mu.append(pc.mu), normal.append(pc.normal)
        phi.append(pc.distance - pc.margin)
        J.append(
            _point_jacobians(model, Jw, pc.body2, pc.point, angular=True)
            - _point_jacobians(model, Jw, pc.body1, pc.point, angular=True)
        )
        mua.append(pc.mu_angular)
        if state is not None:
            u.append(state.pairs[pc.row] if pc.chosen else state.pairs)
    if not depth:
        z = jnp.zeros((0,), dtype)
        depth, mu, normal, J = [z], [z], [jnp.zeros((0, 3), dtype)], [jnp.zeros((0, 6, model.nv), dtype)]
        phi = [z]
        u = [jnp.zeros((0, 3), dtype)] if state is not None else []
    cat = jnp.concatenate
    J = cat(J)
    angular = any(m is not None for m in mua)
    if angular:  # zero coefficients for the kind without torsional or rolling friction
        mua = cat([jnp.zeros((len(d), 2), dtype) if m is None else m.astype(dtype) for m, d in zip(mua, depth)])
    return JointSpaceContacts(
        cat(depth),
        cat(normal),
        cat(mu),
        J[:, 3:],
        cat(u) if state is not None else None,
        contact.params,
        jnp.asarray(dt, dtype),
        cat(phi),
        None if lookahead is None else jnp.asarray(lookahead, dtype),
        J[:, :3] if angular else None,
        mua if angular else None,
    )


# ---------------------------------------------------------------------------------------------
# small batched helpers (the geometric ones, _dot, _length, _unit, are in jaxdyn.collision)


def _safe_pow(d, p):
    """``d^p`` for ``d >= 0`` with finite derivatives in ``d`` and ``p`` at ``d = 0`` (``p >= 1``)."""
    pos = d > 0
    return jnp.where(pos, jnp.where(pos, d, 1.0) ** p, 0.0)


class _Frames(NamedTuple):
    """World pose and world-axes velocity of every body, the world appended as row ``nb`` (so
    that body index ``-1`` addresses it): rotation ``R``, origin ``o``, angular ``w`` and the
    linear velocity ``v`` of the point at the origin."""

    R: Float[Array, "nb1 3 3"]
    o: Float[Array, "nb1 3"]
    w: Float[Array, "nb1 3"]
    v: Float[Array, "nb1 3"]


def _frames(model: Model, q, qd=None, X=None) -> _Frames:
    """The frames at ``(q, qd)``; without ``qd`` the velocities are zero (no RNEA pass). ``X``:
    the body poses at ``q`` if already computed."""
    X = forward_kinematics(model, q) if X is None else X
    dt = model.dtype
    z = jnp.zeros((1, 3), dt)
    R = jnp.concatenate([X.R, jnp.eye(3, dtype=dt)[None]])
    if qd is None:
        zw = jnp.zeros((model.nb + 1, 3), dt)
        return _Frames(R, jnp.concatenate([X.p, z]), zw, zw)
    V = body_velocities(model, q, qd)  # (nb, 6) body frame [omega; v]
    return _Frames(
        R,
        jnp.concatenate([X.p, z]),
        jnp.concatenate([mv(X.R, V[:, :3]), z]),
        jnp.concatenate([mv(X.R, V[:, 3:]), z]),
    )


def _point_velocity(F: _Frames, body, p):
    """World velocity of the material point of ``body`` (index array) at the world point ``p``."""
    return F.v[body] + cross(F.w[body], p - F.o[body])


def _geom_poses(model: Model, F: _Frames):
    """World rotation and centre of every geom."""
    g = model.geoms
    b = np.asarray(g.body, np.int64)
    Rb = F.R[b]
    return mm(Rb, g.R), F.o[b] + mv(Rb, g.pos)


def _tangential(u, n):
    """``u - (n . u) n``, (S1)."""
    return u - _dot(u, n)[..., None] * n


def _cone(fs, limit):
    """The factor ``min(1, limit / |fs|)`` of (S3), ``fs`` clamped to the cone: the stick
    branch only where ``|fs| < limit``, so a zero ``limit`` gives zero force and zero
    derivatives also at ``fs = 0``; ``|fs|`` divides only in the slip branch, where it is
    positive unless ``limit = 0``."""
    sq = _dot(fs, fs)
    ok = sq > jnp.finfo(fs.dtype).tiny
    norm = jnp.where(ok, jnp.sqrt(jnp.where(ok, sq, 1.0)), 0.0)
    return jnp.where(norm < limit, 1.0, limit / jnp.where(ok, norm, 1.0))


def _friction(vt, ut, limit, params: ContactParams, dtype, dt):
    """The friction force ``f_t`` ``(..., 3)`` at the tangential velocity ``vt`` with the bound
    ``limit = mu f_n`` (module docstring), and its secant slope ``c`` ``(...)``, ``|f_t|`` per
    unit of the speed it opposes (:meth:`JointSpaceContacts.newton_matrix`). Regularised
    Coulomb (``ut is None``): ``f_t = -c v_t`` with ``c = limit / sqrt(|v_t|^2 + eps^2)``. The
    bristle law with tangential elongations ``ut`` (S1)-(S3): ``w = k_t u_t + b v_t`` with ``b =
    b_t + dt k_t``, ``f_t = -min(1, limit / |w|) w`` and ``c = b min(1, limit / |w|)``."""
    if ut is None:
        eps = jnp.asarray(params.friction_velocity, dtype)
        c = limit / jnp.sqrt(_dot(vt, vt) + eps * eps)
        return -c[..., None] * vt, c
    kt, bt = (jnp.asarray(x, dtype) for x in (params.tangential_stiffness, params.tangential_damping))
    b = bt + jnp.asarray(dt, dtype) * kt
    w = kt * ut + b * vt
    scale = _cone(w, limit)
    return -scale[..., None] * w, b * scale


def _normal_force(depth, normal, velocity, params: ContactParams, dtype):
    """The Hunt-Crossley normal force ``max(0, k d^p (1 - c_d v_n))`` (module docstring)."""
    k, p, cd = (jnp.asarray(x, dtype) for x in (params.stiffness, params.exponent, params.damping))
    return jnp.maximum(k * _safe_pow(depth, p) * (1.0 - cd * _dot(velocity, normal)), 0.0)  # v_pen = -v_n


def _force_law(depth, normal, velocity, mu, params: ContactParams, dtype, u=None, dt=0.0, friction_normal=None):
    """Hunt-Crossley normal force plus friction (module docstring) for penetrations ``depth``,
    unit normals and velocities ``v`` (the force pushes along ``+n``; ``v`` is the velocity of
    the pushed body relative to the other). ``u is None``: regularised Coulomb friction; else
    the bristle law (S1)-(S4) with elongations ``u`` and step ``dt``. ``friction_normal``: the
    normal force that bounds the friction (``mu f_n``), if not this velocity's own (the
    ``"implicit_euler"`` step's convex subproblem, (J4) of :class:`JointSpaceContacts`).
    Returns the force, and for the bristle law ``du/dt`` (S4) and ``u_t`` (S1)."""
    vn = _dot(velocity, normal)
    fn = _normal_force(depth, normal, velocity, params, dtype)
    fb = fn if friction_normal is None else friction_normal
    vt = velocity - vn[..., None] * normal
    ut = None if u is None else _tangential(u, normal)
    ft = _friction(vt, ut, mu * fb, params, dtype, dt)[0]
    if u is None:
        return fn[..., None] * normal + ft, None, None
    kt, bt = (jnp.asarray(x, dtype) for x in (params.tangential_stiffness, params.tangential_damping))
    b = bt + jnp.asarray(dt, dtype) * kt
    return fn[..., None] * normal + ft, -(ft + kt * ut) / b, ut


def _angular_friction_law(fb, normal, omega, mu_angular, params: ContactParams, dtype):
    """The torsional and rolling friction torque ``(..., 3)`` (module docstring, (R1)-(R2)) at the
    relative angular velocity ``omega`` with the normal force ``fb`` bounding it and the
    coefficients ``mu_angular`` ``(..., 2)`` (torsional, rolling), and the secant slopes
    ``c_s``, ``c_r`` ``(...)`` of each part, ``|tau|`` per unit of the angular speed it opposes
    (:meth:`JointSpaceContacts.newton_matrix`)."""
    eps = jnp.asarray(params.spin_velocity, dtype)
    wn = _dot(omega, normal)
    wr = omega - wn[..., None] * normal
    cs = mu_angular[..., 0] * fb / jnp.sqrt(wn * wn + eps * eps)
    cr = mu_angular[..., 1] * fb / jnp.sqrt(_dot(wr, wr) + eps * eps)
    return -(cs * wn)[..., None] * normal - cr[..., None] * wr, cs, cr


def _torques(depth, normal, velocity, omega, mu_angular, params: ContactParams, dtype):
    """(R1)-(R2) bounded by the normal force at ``velocity`` (of the law that gives the force)."""
    fn = _normal_force(depth, normal, velocity, params, dtype)
    return _angular_friction_law(fn, normal, omega, mu_angular, params, dtype)[0]


def _add_wrenches(out, F: _Frames, body, point, f, torque=None):
    """Add the world forces ``f`` at world points ``point`` (and the world couples ``torque``)
    to the rows ``body`` of ``out`` (``(nb + 1, 6)``, the world last) as body-frame wrenches
    about the body origins."""
    R, o = F.R[body], F.o[body]
    moment = cross(point - o, f) if torque is None else cross(point - o, f) + torque
    w = jnp.concatenate([mtv(R, moment), mtv(R, f)], -1)
    return out.at[body].add(w)


# ---------------------------------------------------------------------------------------------
# ground contact


def _collidable(geoms: geometry.Geoms, i: int) -> bool:
    """Whether geom ``i`` collides with the ground (module docstring)."""
    if geoms.body[i] < 0:
        return False
    planes = [p for p, t in enumerate(geoms.type) if t == geometry.PLANE]
    if not planes:
        return geoms.contype[i] != 0 or geoms.conaffinity[i] != 0
    return any(_admitted(geoms, i, p) for p in planes)


def _admitted(geoms: geometry.Geoms, i: int, j: int) -> bool:
    """MuJoCo's filter on the geom data of geoms ``i`` and ``j`` (:func:`_geom_rules`)."""
    return _geom_rules(i, j, geoms.contype, geoms.conaffinity, geoms.exclude, geoms.pairs)


def _geom_rules(i, j, contype, conaffinity, geom_exclude, explicit) -> bool:
    """MuJoCo's filter on two geoms' own data: an explicit pair, or bit masks that match either
    way and no geom ``exclude`` (the body rules are :func:`_pair_table`'s; an explicit pair
    overrides them too)."""
    key = (min(i, j), max(i, j))
    if key in explicit:
        return True
    masks = contype[i] & conaffinity[j] or contype[j] & conaffinity[i]
    return bool(masks) and key not in geom_exclude


def _point_table(geoms: geometry.Geoms):
    """Static description of every fixed contact point (sphere, capsule, box): geom index, the
    (3, 3) matrix ``A`` with ``offset = A @ size`` (the point in the geom frame) and the vector
    ``a`` with ``radius = a . size``."""
    gi, A, a = [], [], []
    e0 = np.array([1.0, 0.0, 0.0])
    for g, t in enumerate(geoms.type):
        if not _collidable(geoms, g):
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


def _cylinders(geoms: geometry.Geoms):
    return np.array([g for g, t in enumerate(geoms.type) if t == geometry.CYLINDER and _collidable(geoms, g)], np.int64)


# a mesh geom with more convex-hull vertices than this touches the ground with its this many
# deepest ones (MuJoCo keeps up to 4 contacts of a mesh on a plane); as many as it has against
# another shape (collision.HULL_POINTS)
MESH_GROUND_POINTS = HULL_POINTS


def _padded_rows(owner, ids):
    """Static ``(P, W)`` tables of the rows of ``owner`` (a geom index per row: ``vertex_geom``,
    ``face_geom``, ``edge_geom``) that belong to each geom of ``ids``, each padded with its first
    row to the longest, and where they are valid (not padding)."""
    owner = np.asarray(owner, np.int64)
    rows = [np.flatnonzero(owner == i) for i in ids]
    width = max((len(r) for r in rows), default=0)
    idx = np.array([np.concatenate([r, np.full(width - len(r), r[0])]) for r in rows], np.int64)
    valid = np.array([np.arange(width) < len(r) for r in rows], bool)
    return idx.reshape(len(rows), width), valid.reshape(len(rows), width)


def _mesh_rows(geoms: geometry.Geoms):
    """The mesh geoms that collide with the ground, split by size: the rows of
    ``geoms.vertices`` of those with at most :data:`MESH_GROUND_POINTS` vertices (all of them
    are contact points), and for the larger ones their geom indices and a ``(G, V)`` table of
    their rows (each padded with its first row to the longest; the padding is never among the
    deepest ``MESH_GROUND_POINTS``, as every such geom has more vertices than that)."""
    counts: dict[int, int] = {}
    for g in geoms.vertex_geom:
        if _collidable(geoms, g):
            counts[g] = counts.get(g, 0) + 1
    small = {g for g, n in counts.items() if n <= MESH_GROUND_POINTS}
    large = np.array([g for g, n in counts.items() if n > MESH_GROUND_POINTS], np.int64)
    table, valid = _padded_rows(geoms.vertex_geom, large)
    return np.array([k for k, g in enumerate(geoms.vertex_geom) if g in small], np.int64), large, table, valid


def _ellipsoids(geoms: geometry.Geoms):
    return np.array(
        [g for g, t in enumerate(geoms.type) if t == geometry.ELLIPSOID and _collidable(geoms, g)], np.int64
    )


def _n_ground_points(geoms: geometry.Geoms) -> int:
    small, large, _, _ = _mesh_rows(geoms)
    meshes = len(small) + MESH_GROUND_POINTS * len(large)
    return len(_point_table(geoms)[0]) + 8 * len(_cylinders(geoms)) + meshes + len(_ellipsoids(geoms))


def _ellipsoid_support(Rg, cg, size, n):
    """The point of each ellipsoid (semi-axes ``size`` along its frame's axes) lowest along the
    ground normal ``n``: ``c - R A^2 m / sqrt(m^T A^2 m)`` with ``m = R^T n`` and ``A`` the
    semi-axes (the support point in direction ``-n``; a sphere's ``c - r n``): ``(m, 3)``."""
    m = mtv(Rg, jnp.broadcast_to(n, cg.shape))
    a2m = size * size * m
    return cg - mv(Rg, a2m) / jnp.sqrt(_dot(m, a2m))[..., None]


def _has_ground_points(geoms: geometry.Geoms) -> bool:
    return _n_ground_points(geoms) > 0


@full_precision
def contact_points(model: Model, q, qd, ground: Ground | None = None) -> ContactPoints:
    """Candidate ground contact points, penetrations, witness points and velocities (module
    docstring): the sphere, capsule and box points in geom order, then the cylinders' points,
    the ellipsoids' lowest points, then the mesh geoms' convex-hull vertices (of a mesh with
    more than :data:`MESH_GROUND_POINTS`, that many, the deepest first)."""
    q, qd = jnp.asarray(q, model.dtype), jnp.asarray(qd, model.dtype)
    return _contact_points(model, _frames(model, q, qd), Ground() if ground is None else ground)


def _contact_points(model: Model, F: _Frames, ground: Ground) -> ContactPoints:
    g = model.geoms
    dt = model.dtype
    n = _unit(jnp.asarray(ground.normal, dt))
    h = jnp.asarray(ground.height, dt)
    Rg, cg = _geom_poses(model, F)
    gi, A, a = _point_table(g)
    ci = _cylinders(g)
    off = mv(jnp.asarray(A, dt), g.size[gi])
    centre = [cg[gi] + mv(Rg[gi], off)]
    radius = [_dot(jnp.asarray(a, dt), g.size[gi])]
    geom = [gi]
    if len(ci):
        centre.append(_cylinder_rims(Rg[ci], cg[ci], g.size[ci], n).reshape(-1, 3))
        radius.append(jnp.zeros(8 * len(ci), dt))
        geom.append(np.repeat(ci, 8))
    ei = _ellipsoids(g)
    if len(ei):  # ellipsoids: the point lowest along the normal, radius 0
        centre.append(_ellipsoid_support(Rg[ei], cg[ei], g.size[ei], n))
        radius.append(jnp.zeros(len(ei), dt))
        geom.append(ei)
    vi, li, table, valid = _mesh_rows(g)
    if len(vi):  # small mesh geoms: the vertices of their convex hulls, radius 0
        mi = np.asarray(g.vertex_geom, np.int64)[vi]
        centre.append(cg[mi] + mv(Rg[mi], g.vertices[vi]))
        radius.append(jnp.zeros(len(vi), dt))
        geom.append(mi)
    if len(li):  # larger ones: their MESH_GROUND_POINTS vertices deepest along -n
        x = cg[li][:, None] + mv(Rg[li][:, None], g.vertices[table])  # (G, V, 3)
        k, _ = _deepest(x @ n, jnp.asarray(valid))  # the lowest along n
        centre.append(_take(x, k).reshape(-1, 3))
        radius.append(jnp.zeros(k.size, dt))
        geom.append(np.repeat(li, MESH_GROUND_POINTS))
    centre, radius = jnp.concatenate(centre), jnp.concatenate(radius)
    geom = np.concatenate(geom)
    body = np.asarray(g.body, np.int64)[geom]
    phi = centre @ n - h - radius
    plane = np.full(len(geom), ground.geom)
    margin = _contact_margin(g, geom, plane).astype(dt)
    point = centre - (radius - jnp.maximum(-phi, 0.0))[:, None] * n
    vel = _point_velocity(F, body, point)
    mu = _contact_friction(g, geom, plane, g.friction[geom, 0], jnp.asarray(ground.friction, dt))
    depth = jnp.maximum(margin - phi, 0.0)
    return ContactPoints(centre, radius, depth, point, vel, mu, margin, tuple(map(int, body)), tuple(map(int, geom)))


def _combined(g: geometry.Geoms, g1, g2):
    """MuJoCo's combination rule for contacts between geoms ``g1`` and ``g2`` (static ``(m,)``
    index arrays; ``-1``: a ground without a plane geom, priority 0, ``condim`` 3): the
    priorities ``p1``, ``p2`` (the higher one's parameters win, else the larger), the contact's
    dimension (combined from the geoms' ``condim`` by the same rule, or an explicit pair's own
    ``Geoms.pair_condim``) and the index of the explicit pair of the two geoms (``-1``: none),
    all static ``(m,)`` arrays."""
    prio = np.zeros(g.ng + 1, np.int64)  # the last entry (index -1): priority 0, condim 3
    prio[: len(g.priority)] = g.priority
    dims = np.full(g.ng + 1, 3, np.int64)
    dims[: len(g.condim)] = g.condim
    i1, i2 = np.asarray(g1, np.int64), np.asarray(g2, np.int64)
    p1, p2 = prio[i1], prio[i2]
    dim = np.where(p1 > p2, dims[i1], np.where(p1 < p2, dims[i2], np.maximum(dims[i1], dims[i2])))
    index = {p: k for k, p in enumerate(g.pairs)}
    k = np.array([index.get((min(a, b), max(a, b)), -1) for a, b in zip(i1, i2)], np.int64)
    if np.any(k >= 0):
        own = np.asarray(g.pair_condim if len(g.pair_condim) else (3,) * len(g.pairs), np.int64)
        dim = np.where(k >= 0, own[np.maximum(k, 0)], dim)
    return p1, p2, dim, k


def _by_priority(p1, p2, x1, x2):
    """The higher priority's of ``x1``, ``x2`` (rows), the larger where the priorities are equal."""
    x = jnp.maximum(x1, x2)
    if np.any(p1 != p2):
        sel = lambda p: p.reshape(p.shape + (1,) * (x.ndim - p.ndim))  # noqa: E731
        x = jnp.where(sel(p1 > p2), x1, jnp.where(sel(p1 < p2), x2, x))
    return x


def _contact_friction(g: geometry.Geoms, g1, g2, mu1, mu2):
    """MuJoCo's sliding friction ``(m,)`` of contacts between geoms ``g1`` and ``g2``
    (:func:`_combined`) whose own frictions are ``mu1`` and ``mu2``: an explicit pair's own
    (``geoms.pair_friction``), else the geom of higher ``priority``'s, else the larger; zero
    where the contact's dimension is 1 (frictionless)."""
    p1, p2, dim, k = _combined(g, g1, g2)
    mu = _by_priority(p1, p2, mu1, mu2)
    if np.any(k >= 0):
        mu = jnp.where(k >= 0, g.pair_friction[np.maximum(k, 0)].astype(mu.dtype), mu)
    if np.any(dim == 1):
        mu = jnp.where(dim == 1, 0.0, mu)
    return mu


def _angular_friction(g: geometry.Geoms, g1, g2):
    """MuJoCo's torsional and rolling friction ``(m, 2)`` of contacts between geoms ``g1`` and
    ``g2`` (:func:`_combined`; ``-1``: a ground without a plane geom, which has neither): the
    geoms' ``friction[1]`` and ``friction[2]`` combined as the sliding friction, the torsional
    one where the contact's dimension is 4 or 6 and the rolling one where it is 6, zero
    elsewhere; an explicit pair's own (``Geoms.pair_angular``, by its ``pair_condim``).
    ``None`` where no contact has either (static), so that models without them pay nothing."""
    p1, p2, dim, k = _combined(g, g1, g2)
    if not np.any(dim >= 4):
        return None
    fr = jnp.concatenate([g.friction[:, 1:], jnp.zeros((1, 2), g.friction.dtype)])  # row -1: none
    mu = _by_priority(p1, p2, fr[np.asarray(g1, np.int64)], fr[np.asarray(g2, np.int64)])
    if np.any(k >= 0):
        mu = jnp.where((k >= 0)[:, None], g.pair_angular[np.maximum(k, 0)].astype(mu.dtype), mu)
    return jnp.where(np.stack([dim >= 4, dim == 6], -1), mu, 0.0)


def _contact_margin(g: geometry.Geoms, g1, g2):
    """MuJoCo's contact margin ``(m,)`` of contacts between geoms ``g1`` and ``g2``
    (:func:`_combined`; ``-1``: a ground without a plane geom, margin 0): the sum of the two
    geoms' ``Geoms.margin``, or an explicit pair's own ``Geoms.pair_margin``. The contact acts
    from that distance on (its depth is ``margin - phi``), as MuJoCo's does."""
    k = _combined(g, g1, g2)[3]
    mg = jnp.concatenate([g.margin, jnp.zeros((1,), g.margin.dtype)])  # row -1: none
    margin = mg[np.asarray(g1, np.int64)] + mg[np.asarray(g2, np.int64)]
    if np.any(k >= 0):
        margin = jnp.where(k >= 0, g.pair_margin[np.maximum(k, 0)], margin)
    return margin


@full_precision
def contact_forces(
    cp: ContactPoints, ground: Ground, params: ContactParams, dtype=None, elongation=None, dt=0.0
) -> Float[Array, "m 3"]:
    """World-frame force on each ground contact point: Hunt-Crossley normal force plus
    regularised Coulomb friction, or, given the bristle ``elongation`` ``(m, 3)``, the
    stick-capable friction (S1)-(S3) with step ``dt`` (module docstring)."""
    dtype = dtype or cp.depth.dtype
    n = _unit(jnp.asarray(ground.normal, dtype))
    return _force_law(cp.depth, n, cp.velocity, cp.mu, params, dtype, elongation, dt)[0]


# ---------------------------------------------------------------------------------------------
# shape pairs

_PAIR_KINDS = (
    (geometry.SPHERE, geometry.SPHERE),
    (geometry.SPHERE, geometry.CAPSULE),
    (geometry.CAPSULE, geometry.CAPSULE),
    (geometry.SPHERE, geometry.BOX),
    (geometry.CAPSULE, geometry.BOX),
    (geometry.BOX, geometry.BOX),
    (geometry.SPHERE, geometry.CYLINDER),
    (geometry.CAPSULE, geometry.CYLINDER),
    (geometry.CYLINDER, geometry.CYLINDER),
    (geometry.CYLINDER, geometry.BOX),
    (geometry.SPHERE, geometry.MESH),
    (geometry.CAPSULE, geometry.MESH),
    (geometry.CYLINDER, geometry.MESH),
    (geometry.BOX, geometry.MESH),
    (geometry.MESH, geometry.MESH),
)
# contacts per pair (rows of PairContacts), by kind: capsule-capsule, capsule-box and
# capsule-cylinder two end contacts and an interior one (collision._segment_segment_contacts,
# _segment_box_contacts, _segment_cylinder_contacts), box-box 8 + 8 corners and 12 + 12 edges
# (collision._box_box_contacts), cylinder-box 8 corners, 12 edges and 12 rim points
# (collision._cylinder_box_contacts), cylinder-cylinder 12 + 12 rim points and a side line
# (collision._cylinder_cylinder_contacts), capsule-mesh as capsule-box
# (collision._segment_hull_contacts), cylinder-mesh 12 rim points, 8 hull vertices and 8 edges
# (collision._cylinder_hull_contacts), box-mesh 8 corners, 12 edges and 8 hull vertices
# (collision._box_hull_contacts), mesh-mesh 8 + 8 hull vertices (collision._hull_hull_contacts);
# one for the others
_PAIR_ROWS = {
    (geometry.CAPSULE, geometry.MESH): 3,
    (geometry.CYLINDER, geometry.MESH): 28,
    (geometry.BOX, geometry.MESH): 28,
    (geometry.MESH, geometry.MESH): 16,
    (geometry.CAPSULE, geometry.CYLINDER): 3,
    (geometry.CAPSULE, geometry.CAPSULE): 3,
    (geometry.CAPSULE, geometry.BOX): 3,
    (geometry.BOX, geometry.BOX): 40,
    (geometry.CYLINDER, geometry.BOX): 32,
    (geometry.CYLINDER, geometry.CYLINDER): 25,
}


class CollisionPairs(NamedTuple):
    """The geom pairs of a model that collide (:func:`collision_pairs`).

    pairs: ``(geom1, geom2)`` index pairs in evaluation order (grouped by kind: sphere-sphere,
      sphere-capsule, capsule-capsule, sphere-box, capsule-box, box-box, sphere-cylinder,
      capsule-cylinder, cylinder-cylinder, cylinder-box, then sphere, capsule, cylinder and box
      against a mesh, mesh-mesh; within a pair the geom
      of the lower type code first, so the normal of a sphere-box or capsule-box pair points
      from the sphere or capsule to the box, of a cylinder-box pair from the cylinder to the box).
    kinds: ``((type1, type2), geom1 indices, geom2 indices)`` per kind present.
    unsupported: pairs the filter admits but whose shape combination is not collided
      (anything with an ellipsoid, a flat mesh).
    rows: the number of contacts of each pair (rows of :class:`PairContacts`, consecutive, in
      the order of ``pairs``): 3 for capsule-capsule, capsule-box, capsule-cylinder and
      capsule-mesh, 40 for box-box, 32 for cylinder-box, 25 for cylinder-cylinder, 28 for
      box-mesh and cylinder-mesh, 16 for mesh-mesh, 1 for the others.
    """

    pairs: tuple[tuple[int, int], ...]
    kinds: tuple[tuple[tuple[int, int], tuple[int, ...], tuple[int, ...]], ...]
    unsupported: tuple[tuple[int, int], ...]
    rows: tuple[int, ...]

    @property
    def row_pair(self) -> np.ndarray:
        """The index into ``pairs`` of each row of :class:`PairContacts`."""
        return np.repeat(np.arange(len(self.pairs), dtype=np.int64), np.asarray(self.rows, np.int64))


@functools.lru_cache(maxsize=256)
def _pair_table(types, bodies, contype, conaffinity, parents, exclude, geom_exclude, explicit) -> CollisionPairs:
    found: dict[tuple[int, int], list[tuple[int, int]]] = {k: [] for k in _PAIR_KINDS}
    unsupported = []
    geom_exclude, explicit = frozenset(geom_exclude), frozenset(explicit)
    for i in range(len(types)):
        for j in range(i + 1, len(types)):
            bi, bj = bodies[i], bodies[j]
            if geometry.PLANE in (types[i], types[j]):  # planes are the ground (Ground)
                continue
            if not _geom_rules(i, j, contype, conaffinity, geom_exclude, explicit):
                continue
            if (i, j) not in explicit:  # the body rules
                parent_child = bi >= 0 and bj >= 0 and (parents[bi] == bj or parents[bj] == bi)
                if bi == bj or parent_child or (min(bi, bj), max(bi, bj)) in exclude:
                    continue
            a, b = (i, j) if types[i] <= types[j] else (j, i)
            kind = (types[a], types[b])
            if kind in found:
                found[kind].append((a, b))
            else:
                unsupported.append((a, b))
    kinds = tuple((k, tuple(p[0] for p in v), tuple(p[1] for p in v)) for k, v in found.items() if v)
    pairs = tuple(p for k in _PAIR_KINDS for p in found[k])
    rows = tuple(_PAIR_ROWS.get(k, 1) for k in _PAIR_KINDS for _ in found[k])
    return CollisionPairs(pairs, kinds, tuple(unsupported), rows)


def _exclude_ids(model: Model, exclude) -> tuple[tuple[int, int], ...]:
    ids = []
    for pair in exclude:
        if len(pair) != 2:
            raise ValueError(f"contact exclude: expected pairs of body names, got {pair!r}")
        b = []
        for name in pair:
            if name == "world":
                b.append(-1)
            elif name in model.body_names:
                b.append(model.body_names.index(name))
            else:
                raise ValueError(
                    f"contact exclude: no body named '{name}' (bodies: world, {', '.join(model.body_names)})"
                )
        ids.append((min(b), max(b)))
    return tuple(sorted(set(ids)))


def collision_pairs(model: Model, exclude=()) -> CollisionPairs:
    """The geom pairs of ``model.geoms`` that collide with each other, by MuJoCo's filter
    (module docstring): bit masks, not on one body, not parent and child (unless the parent is
    the world), not in ``exclude`` (pairs of body names, ``"world"`` for the world) nor in
    ``model.geoms.exclude``; and the explicit ``model.geoms.pairs`` whatever the filter says.
    Computed in Python from the static geom data, once per model structure (cached). Pairs the
    filter admits whose shapes jaxdyn does not collide (``unsupported``: pairs with an
    ellipsoid, a mesh whose vertices span no volume) are warned about, by name."""
    g = model.geoms
    solid = set(g.face_geom)  # a mesh without a hull of volume (flat) collides with nothing
    table = _pair_table(
        tuple(-1 if t == geometry.MESH and i not in solid else t for i, t in enumerate(g.type)),
        tuple(g.body),
        tuple(g.contype),
        tuple(g.conaffinity),
        tuple(model.parents),
        _exclude_ids(model, exclude),
        g.exclude,
        g.pairs,
    )
    if table.unsupported:
        kinds = {v: k for k, v in geometry.TYPE_CODES.items()}
        name = lambda i: f"'{g.names[i]}'" if i < len(g.names) and g.names[i] else f"geom {i}"  # noqa: E731
        pairs = table.unsupported
        listed = ", ".join(f"{name(a)}-{name(b)} ({kinds[g.type[a]]}-{kinds[g.type[b]]})" for a, b in pairs[:8])
        if len(pairs) > 8:
            listed += f" and {len(pairs) - 8} more"
        warnings.warn(
            f"model '{model.name}': {len(pairs)} geom pairs are not collided (jaxdyn collides no pair "
            f"with an ellipsoid, no flat mesh; exclude them to silence this): {listed}",
            UserWarning,
            stacklevel=2,
        )
    return table


def pair_contacts(model: Model, q, qd, exclude=()) -> PairContacts:
    """Signed distances, normals, witness points and relative velocities of the shape pairs of
    :func:`collision_pairs` (module docstring)."""
    q, qd = jnp.asarray(q, model.dtype), jnp.asarray(qd, model.dtype)
    return _pair_contacts(model, _frames(model, q, qd), exclude)


def _bounding_radii(g: geometry.Geoms) -> Float[Array, " ng"]:
    """The radius of each geom's bounding sphere about its centre: ``r`` for a sphere, ``r + l``
    for a capsule, ``sqrt(r^2 + l^2)`` for a cylinder, the half-diagonal of a box, the largest
    semi-axis of an ellipsoid, the farthest hull vertex of a mesh (0 for a plane)."""
    s = g.size
    t = np.asarray(g.type, np.int64)
    r = jnp.zeros(g.ng, s.dtype)
    r = jnp.where(t == geometry.SPHERE, s[:, 0], r)
    r = jnp.where(t == geometry.CAPSULE, s[:, 0] + s[:, 1], r)
    r = jnp.where(t == geometry.CYLINDER, jnp.sqrt(s[:, 0] ** 2 + s[:, 1] ** 2), r)
    r = jnp.where(t == geometry.BOX, jnp.sqrt(jnp.sum(s * s, -1)), r)
    r = jnp.where(t == geometry.ELLIPSOID, jnp.max(s, -1), r)
    if len(g.vertex_geom):
        far = jax.ops.segment_max(
            jnp.sqrt(jnp.sum(g.vertices * g.vertices, -1)), np.asarray(g.vertex_geom, np.int64), g.ng
        )
        r = jnp.where(t == geometry.MESH, jnp.maximum(far, 0.0), r)
    return r


def _bounding_gaps(model: Model, F: _Frames, table: CollisionPairs):
    """``(P,)`` the gap between the bounding spheres (:func:`_bounding_radii`) of the two geoms
    of each pair of ``table``, less the pair's contact margin: ``|c_2 - c_1| - r_1 - r_2 -
    margin`` (at most the pair's signed distance less its margin, so a pair with a positive gap
    has no force)."""
    _, cg = _geom_poses(model, F)
    r = _bounding_radii(model.geoms)
    ij = np.asarray(table.pairs, np.int64).reshape(-1, 2)
    d = cg[ij[:, 1]] - cg[ij[:, 0]]
    margin = _contact_margin(model.geoms, ij[:, 0], ij[:, 1]).astype(d.dtype)
    return jnp.sqrt(jnp.sum(d * d, -1)) - r[ij[:, 0]] - r[ij[:, 1]] - margin


def _pair_geometry(model: Model, F: _Frames, table: CollisionPairs, max_pairs: int | None = None):
    """Per kind of pair: signed distances ``(P, S)``, normals and witnesses ``(P, S, 3)`` of its
    ``S`` contacts, and the pairs' signed distances ``(P,)``; and per kind the pairs evaluated,
    as indices into ``table.pairs`` ``(P,)``. Every pair of the kind (a static range), or with
    ``max_pairs`` ``K`` below the kind's number of pairs, the ``K`` with the smallest bounding
    gaps (:func:`_bounding_gaps`, chosen at each evaluation by ``lax.top_k``: traced indices)."""
    g = model.geoms
    Rg, cg = _geom_poses(model, F)
    size = g.size
    out, ids = [], []
    gaps = None
    one = lambda dd, n, p: (dd[:, None], n[:, None], p[:, None], dd)  # a kind of one contact per pair
    start = 0
    for (t1, t2), i1, i2 in table.kinds:
        i, j = np.asarray(i1, np.int64), np.asarray(i2, np.int64)
        pair = np.arange(start, start + len(i), dtype=np.int64)
        start += len(i)
        sel = None
        if max_pairs is not None and len(i) > max_pairs:
            gaps = _bounding_gaps(model, F, table) if gaps is None else gaps
            sel = jax.lax.top_k(-gaps[pair], max_pairs)[1]
            i, j, pair = jnp.asarray(i)[sel], jnp.asarray(j)[sel], jnp.asarray(pair)[sel]
        ids.append(pair)
        r1 = size[i, 0]
        if (t1, t2) == (geometry.SPHERE, geometry.SPHERE):
            out.append(one(*_spheres(cg[i], r1, cg[j], size[j, 0])))
        elif (t1, t2) == (geometry.SPHERE, geometry.CAPSULE):
            p2, d2 = _segment_of(Rg[j], cg[j], size[j])
            out.append(one(*_spheres(cg[i], r1, _segment_point(p2, d2, cg[i]), size[j, 0])))
        elif (t1, t2) == (geometry.CAPSULE, geometry.CAPSULE):
            segs = (*_segment_of(Rg[i], cg[i], size[i]), r1, *_segment_of(Rg[j], cg[j], size[j]), size[j, 0])
            out.append(_segment_segment_contacts(*segs))
        elif (t1, t2) == (geometry.SPHERE, geometry.BOX):  # the normal from the sphere to the box
            dd, n, p = _sphere_box(cg[i], r1, cg[j], Rg[j], size[j])
            out.append(one(dd, -n, p))
        elif (t1, t2) == (geometry.CAPSULE, geometry.BOX):  # the normal from the capsule to the box
            p1, d1 = _segment_of(Rg[i], cg[i], size[i])
            dd, n, p, phi = _segment_box_contacts(p1, d1, r1, cg[j], Rg[j], size[j])
            out.append((dd, -n, p, phi))
        elif (t1, t2) == (geometry.BOX, geometry.BOX):
            out.append(_box_box_contacts(cg[i], Rg[i], size[i], cg[j], Rg[j], size[j]))
        elif (t1, t2) == (geometry.SPHERE, geometry.CYLINDER):  # the normal from the sphere to the cylinder
            dd, n, p = _sphere_cylinder(cg[i], r1, cg[j], Rg[j], size[j])
            out.append(one(dd, -n, p))
        elif (t1, t2) == (geometry.CAPSULE, geometry.CYLINDER):  # the normal from the capsule to the cylinder
            p1, d1 = _segment_of(Rg[i], cg[i], size[i])
            dd, n, p, phi = _segment_cylinder_contacts(p1, d1, r1, cg[j], Rg[j], size[j])
            out.append((dd, -n, p, phi))
        elif (t1, t2) == (geometry.CYLINDER, geometry.CYLINDER):
            out.append(_cylinder_cylinder_contacts(cg[i], Rg[i], size[i], cg[j], Rg[j], size[j]))
        elif (t1, t2) == (geometry.CYLINDER, geometry.BOX):  # the normal from the cylinder to the box
            out.append(_cylinder_box_contacts(cg[i], Rg[i], size[i], cg[j], Rg[j], size[j]))
        elif (t1, t2) == (geometry.MESH, geometry.MESH):  # two convex hulls, the normal from the first
            T1, V1, valid1, _, _ = _hull_arrays(g, np.asarray(i1, np.int64), Rg, cg, sel)
            T2, V2, valid2, _, _ = _hull_arrays(g, np.asarray(i2, np.int64), Rg, cg, sel)
            out.append(_hull_hull_contacts(T1, V1, valid1, T2, V2, valid2))
        else:  # a primitive against a mesh's convex hull, the normal from the primitive to the mesh
            T, V, valid, E, e_valid = _hull_arrays(g, np.asarray(i2, np.int64), Rg, cg, sel)
            if t1 == geometry.SPHERE:
                dd, n, p = _sphere_hull(cg[i][:, None], r1[:, None], T)
                out.append(one(dd[:, 0], -n[:, 0], p[:, 0]))
            elif t1 == geometry.CAPSULE:
                p1, d1 = _segment_of(Rg[i], cg[i], size[i])
                dd, n, p, phi = _segment_hull_contacts(p1, d1, r1, T)
                out.append((dd, -n, p, phi))
            elif t1 == geometry.CYLINDER:
                out.append(_cylinder_hull_contacts(cg[i], Rg[i], size[i], T, V, valid, E, e_valid))
            else:
                out.append(_box_hull_contacts(cg[i], Rg[i], size[i], T, V, valid))
    return out, ids


def _hull_arrays(g: geometry.Geoms, meshes, Rg, cg, sel=None):
    """The convex hulls of the mesh geoms ``meshes`` ``(P,)`` (static; with ``sel``, the
    traced entries ``sel`` of them) in world coordinates: triangles ``(P, F, 3, 3)``, vertices
    ``(P, V, 3)`` and edges ``(P, M, 2, 3)``, each padded to the largest hull by repeating its
    first row (a repeated triangle changes no distance; padded vertices and edges are marked
    false in ``(P, V)`` and ``(P, M)`` masks)."""

    (fi, _), (vi, valid), (ei, e_valid) = (_padded_rows(o, meshes) for o in (g.face_geom, g.vertex_geom, g.edge_geom))
    if sel is not None:
        meshes, fi, vi, valid, ei, e_valid = (jnp.asarray(x)[sel] for x in (meshes, fi, vi, valid, ei, e_valid))
    R, c = Rg[meshes], cg[meshes]
    T = c[:, None, None] + mv(R[:, None, None], g.faces[fi])
    V = c[:, None] + mv(R[:, None], g.vertices[vi])
    E = c[:, None, None] + mv(R[:, None, None], g.edges[ei])
    return T, V, jnp.asarray(valid), E, jnp.asarray(e_valid)


def pairs_in_reach(model: Model, q, exclude=(), margin=0.0) -> Int[Array, " k"]:
    """``(k,)`` for each kind of pair of :func:`collision_pairs` (the order of its ``kinds``),
    how many of its pairs have bounding spheres closer than ``margin`` at the configuration
    ``q``: gap ``|c_2 - c_1| - r_1 - r_2 - m <= margin``, with ``r`` the radius of a sphere
    about the geom's centre that holds it (``r + l`` for a capsule, the half-diagonal of a box,
    the farthest hull vertex of a mesh) and ``m`` the pair's contact margin (``Geoms.margin``). ``Contact(max_pairs=K)`` gives every pair's forces where
    each count is at most ``K``; e.g. ``K = jax.vmap(lambda q: pairs_in_reach(model, q))(qs).max()``
    over the configurations ``qs`` of a trajectory."""
    q = jnp.asarray(q, model.dtype)
    table = collision_pairs(model, exclude)
    near = _bounding_gaps(model, _frames(model, q), table) <= margin
    counts, start = [], 0
    for _, i1, _ in table.kinds:
        counts.append(jnp.sum(near[start : start + len(i1)]))
        start += len(i1)
    return jnp.stack(counts) if counts else jnp.zeros(0, jnp.int32)


def pair_distances(model: Model, q, exclude=()) -> Float[Array, " p"]:
    """``(p,)`` the signed distance between the two shapes of each pair of
    :func:`collision_pairs` (negative: penetrating): for the kinds of one contact that contact's
    distance; capsule-capsule, the distance of the segments' closest points less the radii;
    capsule-box and capsule-cylinder, the capsule's distance as a swept sphere (the smallest
    sphere-box or sphere-cylinder distance over its segment); box-box, the smallest distance of
    an edge's deepest point in the other box, exact where the boxes are apart (module docstring
    of :mod:`jaxdyn.collision`); cylinder-box, the smallest distance of the box's edges' and the
    cylinder's rims' deepest points, cylinder-cylinder of the rims' and the side line's deepest
    points, exact where they are apart."""
    q = jnp.asarray(q, model.dtype)
    table = collision_pairs(model, exclude)
    F = _frames(model, q)
    parts = [k[3] for k in _pair_geometry(model, F, table)[0]]
    return jnp.concatenate(parts) if parts else jnp.zeros(0, model.dtype)


class _PairSlots(NamedTuple):
    """The evaluated contacts of the shape pairs: the fields of :class:`PairContacts` for the
    rows of every pair (static index arrays, ``numpy``) or, with a budget, of the pairs chosen
    (traced index arrays), and ``row``, each contact's row in the whole table (the rows of
    :class:`PairContacts`, ``CollisionPairs.rows``); ``omega``, ``mu_angular``: the relative
    angular velocity ``w_2 - w_1`` (world) and the torsional and rolling friction of each
    contact, ``None`` where no pair has either (:func:`_angular_friction`)."""

    distance: Array
    depth: Array
    normal: Array
    point: Array
    velocity: Array
    mu: Array
    geom1: np.ndarray | Array
    geom2: np.ndarray | Array
    body1: np.ndarray | Array
    body2: np.ndarray | Array
    pair: np.ndarray | Array
    row: np.ndarray | Array
    omega: Array | None = None
    mu_angular: Array | None = None
    margin: Array | None = None

    @property
    def chosen(self) -> bool:
        """Whether the rows are a chosen subset of the table's (traced indices)."""
        return not isinstance(self.row, np.ndarray)


def _gather(a: np.ndarray, idx):
    """``a[idx]``, in ``numpy`` for a static ``idx``."""
    return a[idx] if isinstance(idx, np.ndarray) else jnp.asarray(a)[idx]


def _pair_slots(model: Model, F: _Frames, exclude, max_pairs: int | None = None) -> _PairSlots:
    g = model.geoms
    table = collision_pairs(model, exclude)
    dt = model.dtype
    kinds, ids = _pair_geometry(model, F, table, max_pairs)
    if kinds:
        dist = jnp.concatenate([k[0].reshape(-1) for k in kinds])
        normal = jnp.concatenate([k[1].reshape(-1, 3) for k in kinds])
        point = jnp.concatenate([k[2].reshape(-1, 3) for k in kinds])
    else:
        dist, normal, point = jnp.zeros(0, dt), jnp.zeros((0, 3), dt), jnp.zeros((0, 3), dt)
    first = np.cumsum(np.asarray((0, *table.rows), np.int64))[:-1]  # each pair's first row
    pairs, rows = [], []
    for k, pid in zip(kinds, ids):
        s = k[0].shape[-1]
        xp = np if isinstance(pid, np.ndarray) else jnp
        pairs.append(xp.repeat(pid, s))
        rows.append((_gather(first, pid)[:, None] + xp.arange(s)).reshape(-1))
    static = all(isinstance(p, np.ndarray) for p in pairs)
    xp = np if static else jnp
    pair = xp.concatenate(pairs) if pairs else np.zeros(0, np.int64)
    row = xp.concatenate(rows) if rows else np.zeros(0, np.int64)
    ij = np.asarray(table.pairs, np.int64).reshape(-1, 2)
    g1, g2 = _gather(ij[:, 0], pair), _gather(ij[:, 1], pair)
    body = np.asarray(g.body, np.int64)
    b1, b2 = _gather(body, g1), _gather(body, g2)
    vel = _point_velocity(F, b2, point) - _point_velocity(F, b1, point)
    mu = _contact_friction(g, ij[:, 0], ij[:, 1], g.friction[ij[:, 0], 0], g.friction[ij[:, 1], 0])[pair]
    mua = _angular_friction(g, ij[:, 0], ij[:, 1])
    omega, mua = (None, None) if mua is None else (F.w[b2] - F.w[b1], mua[pair])
    margin = _contact_margin(g, ij[:, 0], ij[:, 1])[pair].astype(dt)
    depth = jnp.maximum(margin - dist, 0.0)
    return _PairSlots(dist, depth, normal, point, vel, mu, g1, g2, b1, b2, pair, row, omega, mua, margin)


def _pair_contacts(model: Model, F: _Frames, exclude) -> PairContacts:
    s = _pair_slots(model, F, exclude)
    ints = lambda x: tuple(map(int, x))  # noqa: E731
    return PairContacts(
        s.distance,
        s.depth,
        s.normal,
        s.point,
        s.velocity,
        s.mu,
        s.margin,
        ints(s.geom1),
        ints(s.geom2),
        ints(s.body1),
        ints(s.body2),
        ints(s.pair),
    )


def pair_forces(pc: PairContacts, params: ContactParams, dtype=None, elongation=None, dt=0.0) -> Float[Array, "m 3"]:
    """World-frame force of each pair on its second geom's body (the first body gets the
    opposite force at the same point): the ground's force law on the pair's depth, normal and
    relative velocity (with ``elongation`` ``(m, 3)``: the stick-capable friction)."""
    dtype = dtype or pc.depth.dtype
    return _force_law(pc.depth, pc.normal, pc.velocity, pc.mu, params, dtype, elongation, dt)[0]


# ---------------------------------------------------------------------------------------------
# into the dynamics


def contact_wrenches(
    model: Model,
    q,
    qd,
    ground: Ground | None = None,
    params: ContactParams | None = None,
    *,
    collide_ground: bool = True,
    collide_pairs: bool = True,
    exclude=(),
    state: ContactState | None = None,
    dt=0.0,
    max_pairs: int | None = None,
) -> Float[Array, "nb 6"]:
    """Contact wrenches on every body, ``(nb, 6)`` ``[moment; force]`` about the body origin in
    body coordinates (the ``f_ext`` convention of :func:`~jaxdyn.aba`): the sum over the body's
    contact forces ``f`` at world points ``p`` of ``(R^T ((p - o) x f), R^T f)`` with ``o, R``
    the body's world pose; ground contact and shape pairs (each pair's force on both bodies)
    as chosen. ``state``: the bristle elongations of the stick-capable friction (module
    docstring, with ``dt`` the ``h`` of (S2)); ``None``: regularised friction. ``max_pairs``:
    the broad phase's budget per kind of pair (:class:`Contact`)."""
    which = dict(collide_ground=collide_ground, collide_pairs=collide_pairs, exclude=exclude, max_pairs=max_pairs)
    return _evaluate(model, q, qd, ground, params, state, dt, **which)[0]


class PointForces(eqx.Module):
    """The world-frame contact forces at one state (:meth:`Contact.point_forces`): the ground
    contact points in the order of :func:`contact_points`, then the contacts of the shape pairs
    of :func:`collision_pairs` in the order of :func:`pair_contacts` (``m`` rows in all).

    point ``(m, 3)`` where each force acts (the witness point); force ``(m, 3)`` the force on
    ``body`` (for a pair, on its second geom's body, and ``-force`` on the first; for a pair
    with the world, on the model's body); depth
    ``(m,)`` the penetration (the force is zero where it is zero); body, other (static tuples of
    ``m`` ints): the body the force acts on and the body that takes ``-force`` (``-1``: the world
    or the ground); torque ``(m, 3)``: the couple of the torsional and rolling friction on
    ``body`` (``-torque`` on ``other``), zero for contacts of ``condim`` below 4.
    """

    point: Float[Array, "m 3"]
    force: Float[Array, "m 3"]
    depth: Float[Array, " m"]
    body: tuple[int, ...] = eqx.field(static=True)
    other: tuple[int, ...] = eqx.field(static=True)
    torque: Float[Array, "m 3"]


class _Kind(NamedTuple):
    """The forces of one kind of contact (ground points or shape pairs): ``f`` on ``body``,
    ``-f`` on ``other`` (``-1``: the world or the ground; static, or traced for pairs chosen by
    the broad phase); ``rate``, ``ut``: (S4) and (S1); ``row``: the rows of the whole pair table
    that chosen pairs' contacts fill (traced; ``None``: every row, in order); ``torque``: the
    torsional and rolling friction couple on ``body`` (``-torque`` on ``other``; ``None``: no
    contact of the kind has either)."""

    body: np.ndarray | Array
    other: np.ndarray | Array
    point: Array
    depth: Array
    f: Array
    rate: Array
    ut: Array
    row: Array | None = None
    torque: Array | None = None


def _acts(model: Model, collide_ground: bool, collide_pairs: bool, exclude) -> bool:
    """Whether any contact of the chosen kinds exists on ``model`` (static)."""
    ground = collide_ground and _has_ground_points(model.geoms)
    return ground or (collide_pairs and len(collision_pairs(model, exclude).pairs) > 0)


def _split_world(kinds: dict) -> list:
    """The kinds as a list, each pair's row flipped so that ``body`` is a body of the model where the
    pair is with the world (``body2 = -1``): ``f`` then acts on ``body`` and ``-f`` on the world."""
    out = []
    for name, k in kinds.items():
        if name == "pairs" and np.any(k.body < 0):
            flip = k.body < 0
            sign = jnp.asarray(np.where(flip, -1.0, 1.0), k.f.dtype)[:, None]
            k = k._replace(
                body=np.where(flip, k.other, k.body),
                other=np.where(flip, k.body, k.other),
                f=sign * k.f,
                torque=None if k.torque is None else sign * k.torque,
            )
        out.append(k)
    return out


def _kinds(
    model: Model,
    F: _Frames,
    ground,
    params,
    state,
    dt,
    *,
    collide_ground,
    collide_pairs,
    exclude,
    max_pairs=None,
    table_rows=False,
):
    """The point forces of each kind of contact that acts, as ``{"ground": _Kind, "pairs": _Kind}``
    (a kind is absent when it is off or the model has none). ``state``: the elongations of
    ``friction="spring"`` (``None``: regularised friction). ``max_pairs``: the broad phase's
    budget per kind of pair; with ``table_rows``, the chosen pairs' contacts are put in the rows
    of the whole table (the others: no force, no depth, at the midpoint of the geoms' centres)."""
    out = {}
    spring = state is not None
    if _acts(model, collide_ground, False, exclude):
        cp = _contact_points(model, F, ground)
        n = _unit(jnp.asarray(ground.normal, model.dtype))
        u = state.ground if spring else None
        f, r, ut = _force_law(cp.depth, n, cp.velocity, cp.mu, params, model.dtype, u, dt)
        body = np.asarray(cp.body, np.int64)
        mua = _angular_friction(model.geoms, np.asarray(cp.geom, np.int64), np.full(len(body), ground.geom))
        tq = None if mua is None else _torques(cp.depth, n, cp.velocity, F.w[body], mua, params, model.dtype)
        out["ground"] = _Kind(body, np.full_like(body, -1), cp.point, cp.depth, f, r, ut, None, tq)
    if _acts(model, False, collide_pairs, exclude):
        pc = _pair_slots(model, F, exclude, max_pairs)
        u = (state.pairs[pc.row] if pc.chosen else state.pairs) if spring else None
        f, r, ut = _force_law(pc.depth, pc.normal, pc.velocity, pc.mu, params, model.dtype, u, dt)
        tq = None
        if pc.mu_angular is not None:
            tq = _torques(pc.depth, pc.normal, pc.velocity, pc.omega, pc.mu_angular, params, model.dtype)
        k = _Kind(pc.body2, pc.body1, pc.point, pc.depth, f, r, ut, pc.row if pc.chosen else None, tq)
        out["pairs"] = _table_rows(model, F, k, exclude) if table_rows and k.row is not None else k
    return out


def _table_rows(model: Model, F: _Frames, k: _Kind, exclude) -> _Kind:
    """The chosen pairs' contacts ``k`` put in the rows of the whole pair table: the other rows
    have no force, rate, elongation or depth and lie at the midpoint of their geoms' centres."""
    table = collision_pairs(model, exclude)
    ij = np.asarray(table.pairs, np.int64).reshape(-1, 2)[table.row_pair]
    body = np.asarray(model.geoms.body, np.int64)
    _, cg = _geom_poses(model, F)
    into = lambda base, x: None if x is None else base.at[k.row].set(x)  # noqa: E731
    z = jnp.zeros((len(ij), 3), k.f.dtype)
    return _Kind(
        body[ij[:, 1]],
        body[ij[:, 0]],
        into(0.5 * (cg[ij[:, 0]] + cg[ij[:, 1]]), k.point),
        into(jnp.zeros(len(ij), k.depth.dtype), k.depth),
        into(z, k.f),
        into(z, k.rate),
        into(z, k.ut),
        None,
        into(z, k.torque),
    )


def _evaluate(
    model: Model, q, qd, ground, params, state, dt, *, collide_ground, collide_pairs, exclude, max_pairs=None
):
    """Wrenches (as :func:`contact_wrenches`) and, with a ``state``, its rate (S4) and the
    elongations projected on the tangent planes (S1), as :class:`ContactState` (else ``None``)."""
    q = jnp.asarray(q, model.dtype)
    qd = jnp.asarray(qd, model.dtype)
    ground = Ground() if ground is None else ground
    params = ContactParams() if params is None else params
    out = jnp.zeros((model.nb + 1, 6), model.dtype)  # the world's row last, dropped
    which = dict(collide_ground=collide_ground, collide_pairs=collide_pairs, exclude=exclude, max_pairs=max_pairs)
    spring = state is not None
    rates = [jnp.zeros_like(state.ground), jnp.zeros_like(state.pairs)] if spring else None
    proj = [state.ground, state.pairs] if spring else None
    if not _acts(model, collide_ground, collide_pairs, exclude):
        return out[:-1], _as_state(rates), _as_state(proj)
    F = _frames(model, q, qd)
    kinds = _kinds(model, F, ground, params, state, dt, **which)
    for slot, name in enumerate(("ground", "pairs")):
        if name not in kinds:
            continue
        k = kinds[name]
        if name == "ground":
            out = _add_wrenches(out, F, k.body, k.point, k.f, k.torque)
        else:
            xp = np if isinstance(k.body, np.ndarray) else jnp
            out = _add_wrenches(
                out,
                F,
                xp.concatenate([k.body, k.other]),
                jnp.concatenate([k.point, k.point]),
                jnp.concatenate([k.f, -k.f]),
                None if k.torque is None else jnp.concatenate([k.torque, -k.torque]),
            )
        if spring and k.row is not None:  # chosen pairs: the others' elongations relax to zero
            z = jnp.zeros_like(state.pairs)
            rates[slot], proj[slot] = z.at[k.row].set(k.rate), z.at[k.row].set(k.ut)
        elif spring:
            rates[slot], proj[slot] = k.rate, k.ut
    return out[:-1], _as_state(rates), _as_state(proj)


def _as_state(x):
    return None if x is None else ContactState(*x)


def total_force(
    model: Model, q, qd, contact: Contact | None = None, state: ContactState | None = None
) -> Float[Array, " 3"]:
    """Sum of the world-frame contact forces on the model's bodies from the ground and from
    geoms on the world body (e.g. to compare with the weight; forces between two bodies
    cancel). ``state``: the elongations for ``friction="spring"`` (``None``: relaxed)."""
    contact = Contact() if contact is None else contact
    total = jnp.zeros(3, model.dtype)
    for k in contact._kinds(model, q, qd, contact._state(model, state)).values():
        sign = (k.body >= 0) * 1.0 - (k.other >= 0) * 1.0
        total = total + jnp.sum(jnp.asarray(sign, model.dtype)[:, None] * k.f, 0)
    return total


def generalized_forces(
    model: Model,
    q,
    qd,
    ground: Ground | None = None,
    params: ContactParams | None = None,
    *,
    collide_ground: bool = True,
    collide_pairs: bool = True,
    exclude=(),
    state: ContactState | None = None,
    dt=0.0,
    max_pairs: int | None = None,
) -> Float[Array, " nv"]:
    """The contact wrenches as joint-space forces, ``tau_c = sum_b J_b^T f_b``: minus the
    inverse dynamics of the wrenches alone (RNEA at zero velocity, acceleration and gravity,
    whose ``f_k = -f_ext_k`` gives ``tau = -J^T f_ext``)."""
    w = contact_wrenches(
        model,
        q,
        qd,
        ground,
        params,
        collide_ground=collide_ground,
        collide_pairs=collide_pairs,
        exclude=exclude,
        state=state,
        dt=dt,
        max_pairs=max_pairs,
    )
    return _joint_space(model, q, w)


def _joint_space(model: Model, q, w):
    z = jnp.zeros(model.nv, model.dtype)
    return -rnea_full(model, jnp.asarray(q, model.dtype), z, z, w, gravity=False).tau
