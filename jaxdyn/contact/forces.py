"""What a simulation takes (:class:`Contact`), and the forces of all contacts of a model at a
state: body wrenches, point forces and joint-space forces.
The equations (S1)-(S6) and (R1)-(R2) cited here are those of :mod:`jaxdyn.contact.laws`.

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

from typing import NamedTuple, cast

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from ..algorithms.common import Kinematics, full_precision
from ..algorithms.rnea import rnea_full
from ..geometry import Geoms
from ..model import Model
from . import soft
from .frames import Frames, _frames, add_wrenches, geom_poses
from .ground import _contact_points, has_ground_points, n_ground_points
from .heightfield import HeightField
from .joint_space import JointSpaceContacts, joint_space_contacts
from .laws import force_law, torques
from .pairs import collision_pairs, pair_slots
from .params import FRICTION_LAWS, ContactParams, ContactState, Ground, pairs_converter
from .rules import angular_friction


class Contact(eqx.Module):
    """Contact to add to the dynamics: ``sim.rollout(..., contact=Contact())``. A pytree (pass it
    through ``jit``/``grad``/``vmap`` like the model).

    ground, params: the ground (the half-space :class:`Ground`, or a
      :class:`~jaxdyn.contact.HeightField`) and the force law's parameters (array leaves).
    collide_ground, collide_pairs (static): which contacts act, shapes against the ground and
      shapes against each other (:func:`collision_pairs`); both on by default.
    exclude (static): pairs of body names (``"world"`` for the world body) whose geoms never
      collide with each other, as MJCF's ``<contact><exclude body1 body2>``.
    friction (static): ``"regularised"`` (default; a function of ``(q, qd)``, creeps under a
      static tangential load) or ``"spring"`` (stick-capable, with the bristle elongation as
      state, :class:`ContactState`; ``sim.step`` and ``sim.rollout`` carry it, with
      ``"implicit_euler"``). :mod:`jaxdyn.contact.laws`.
    max_pairs (static): the broad phase: of each kind of pair (sphere-box, box-box, ...) that
      has more than ``K`` pairs of :func:`collision_pairs`, only the ``K`` whose bounding spheres
      are nearest are evaluated (the smallest gaps ``|c_2 - c_1| - r_1 - r_2``, chosen anew at
      each evaluation with ``lax.top_k``), so the cost of a step follows ``K``, not the number of
      pairs (MJX's ``max_geom_pairs`` in the same role). ``"auto"`` (default): the scene's own
      ``K`` (MJCF ``<custom><numeric name="max_geom_pairs">``, ``model.geoms.max_pairs``), else
      four per body that carries a collidable geom, at least 16
      (:func:`jaxdyn.contact.pairs.pair_budget`); an int ``K``; ``None``: every pair at every
      state. The forces equal those of every pair as long as no more than ``K`` pairs of a kind
      have bounding spheres that meet (a pair whose spheres are apart does not touch);
      :func:`pairs_in_reach` counts them along a trajectory, to choose ``K``, and
      ``sim.rollout`` reports the first state where more are in reach
      (``Trajectory.overflow_step``). With ``SimOptions(contact_position="implicit")`` a pair
      also acts when it would touch within the step: count with a ``margin`` of the step
      times the largest closing speed. A pair that leaves the chosen ones with
      ``friction="spring"`` starts again from a relaxed bristle.
    normal (static): the normal-force law. ``"hunt_crossley"`` (default): jaxdyn's
      Hunt-Crossley law with ``params`` (:mod:`jaxdyn.contact.laws`). ``"mujoco"``: MuJoCo's soft
      contact with each contact's ``solref``, ``solimp`` and ``solmix`` from ``model.geoms``
      (MJCF geoms, defaults and pairs), mixed as MuJoCo mixes them, and the scene's cone
      (:mod:`jaxdyn.contact.soft`): in the ``"implicit_euler"`` step the normal force of a
      frictionless contact is MuJoCo's Euler step's, and a scene's penetration at rest follows
      what its author tuned. The friction stays jaxdyn's (``friction``), bounded by ``mu f_n``.
    max_contacts (static): the contact rows (ground points and pair contacts) that the
      ``"implicit_euler"`` step's velocity solve takes, where most of a step's cost is:
      ``"auto"`` (default) a budget from the model
      (:func:`jaxdyn.contact.joint_space.contact_budget`: the scene's own, MJCF
      ``<custom><numeric name="max_contact_points">``, else four rows per body with a collidable
      geom, at least 16); an int; ``None``, every row. With a budget ``R`` below the model's
      number of rows, the ``R`` rows of smallest signed distance are chosen at each step
      (``lax.top_k``) and only they get Jacobians and enter the solve. A row apart has no
      force, so the step equals the one with every row while at most ``R`` rows touch (with
      ``SimOptions(contact_position="implicit")``: while at most ``R`` rows would touch within
      the step). The other integrators evaluate every row.
    """

    ground: Ground | HeightField = eqx.field(default_factory=Ground)
    params: ContactParams = eqx.field(default_factory=ContactParams)
    collide_ground: bool = eqx.field(static=True, default=True)
    collide_pairs: bool = eqx.field(static=True, default=True)
    exclude: tuple[tuple[str, str], ...] = eqx.field(static=True, default=(), converter=pairs_converter)
    friction: str = eqx.field(static=True, default="regularised")
    max_pairs: int | str | None = eqx.field(static=True, default="auto")
    max_contacts: int | str | None = eqx.field(static=True, default="auto")
    normal: str = eqx.field(static=True, default="hunt_crossley")

    def __check_init__(self):
        if self.normal not in soft.NORMAL_LAWS:
            raise ValueError(f"Contact: unknown normal '{self.normal}', choose one of {', '.join(soft.NORMAL_LAWS)}")
        if self.friction not in FRICTION_LAWS:
            raise ValueError(f"Contact: unknown friction '{self.friction}', choose one of {', '.join(FRICTION_LAWS)}")
        if self.max_pairs not in ("auto", None) and (
            isinstance(self.max_pairs, (bool, str))
            or not isinstance(self.max_pairs, (int, np.integer))
            or self.max_pairs < 1
        ):
            raise ValueError(f"Contact: max_pairs must be 'auto', a positive int or None, got {self.max_pairs!r}")
        if self.max_contacts not in ("auto", None) and (
            isinstance(self.max_contacts, (bool, str))
            or not isinstance(self.max_contacts, (int, np.integer))
            or self.max_contacts < 1
        ):
            raise ValueError(f"Contact: max_contacts must be 'auto', a positive int or None, got {self.max_contacts!r}")

    @property
    def stateful(self) -> bool:
        """Whether the contact has a state to carry (``friction="spring"``)."""
        return self.friction == "spring"

    def coupled_bodies(self, model: Model) -> tuple[tuple[int, int], ...]:
        """The pairs of bodies (``-1`` the world) whose geoms this contact collides with each
        other (static): the bodies whose velocities one contact row couples. A ground contact
        involves one body and is not listed."""
        if not (self.collide_pairs and _acts(model, False, True, self.exclude)):
            return ()
        body = cast(Geoms, model.geoms).body
        return tuple(sorted({(int(body[a]), int(body[b])) for a, b in collision_pairs(model, self.exclude).pairs}))

    def init_state(self, model: Model) -> ContactState | None:
        """The relaxed state (zero elongation) for ``model``; ``None`` for a contact without state."""
        if not self.stateful:
            return None
        m = n_ground_points(cast(Geoms, model.geoms), self.ground) if self.collide_ground else 0
        p = sum(collision_pairs(model, self.exclude).rows) if self.collide_pairs else 0
        return ContactState(jnp.zeros((m, 3), model.dtype), jnp.zeros((p, 3), model.dtype))

    @full_precision
    def wrenches(
        self, model: Model, q, qd, state: ContactState | None = None, dt=0.0, kinematics: Kinematics | None = None
    ) -> Float[Array, "nb 6"]:
        """Body wrenches (:func:`contact_wrenches`). ``state``, ``dt``: for ``friction="spring"``,
        the elongation (``None``: relaxed) and the ``h`` of (S2) (``0``: continuous time);
        ignored by the regularised law. ``kinematics``: the :func:`jaxdyn.kinematics` record at
        ``q``, where the caller shares one (None: computed here)."""
        st = self._state(model, state)
        return _evaluate(model, q, qd, self.ground, self.params, st, dt, kinematics=kinematics, **self._which())[0]

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
        self,
        model: Model,
        q,
        state: ContactState | None = None,
        dt=0.0,
        lookahead=None,
        qd=None,
        step=None,
        kinematics: Kinematics | None = None,
    ) -> JointSpaceContacts:
        """Every contact (ground points, then pairs) at the configuration ``q`` with its
        velocity Jacobian: the joint-space force and its velocity derivative at any velocity
        without repeating the kinematics (:class:`JointSpaceContacts`). ``lookahead``: the
        ``h`` of (J3) there (None: the penetrations of ``q``). ``qd``, ``step``: with
        ``normal="mujoco"``, the start velocity and length of the step whose end velocity the
        law takes ((M2) of :mod:`jaxdyn.contact.soft`; None: (M1) at the velocity).
        ``kinematics``: the :func:`jaxdyn.kinematics` record at ``q``, where the caller shares
        one (None: computed here)."""
        return joint_space_contacts(model, q, self, self._state(model, state), dt, lookahead, qd, step, kinematics)

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
            return PointForces(z, z, jnp.zeros((0,), dt_), (), (), z, z, (), ())
        ks = _split_world(kinds)
        return PointForces(
            jnp.concatenate([k.point for k in ks]),
            jnp.concatenate([k.f for k in ks]),
            jnp.concatenate([k.depth for k in ks]),
            tuple(int(b) for k in ks for b in k.body),
            tuple(int(b) for k in ks for b in k.other),
            jnp.concatenate([jnp.zeros_like(k.f) if k.torque is None else k.torque for k in ks]),
            jnp.concatenate([k.normal for k in ks]),
            tuple(int(g) for k in ks for g in k.geom),
            tuple(int(g) for k in ks for g in k.other_geom),
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
            normal=self.normal,
        )


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
    max_pairs: int | str | None = None,
    normal: str = "hunt_crossley",
) -> Float[Array, "nb 6"]:
    """Contact wrenches on every body, ``(nb, 6)`` ``[moment; force]`` about the body origin in
    body coordinates (the ``f_ext`` convention of :func:`~jaxdyn.aba`): the sum over the body's
    contact forces ``f`` at world points ``p`` of ``(R^T ((p - o) x f), R^T f)`` with ``o, R``
    the body's world pose; ground contact and shape pairs (each pair's force on both bodies)
    as chosen. ``state``: the bristle elongations of the stick-capable friction
    (:mod:`jaxdyn.contact.laws`, with ``dt`` the ``h`` of (S2)); ``None``: regularised friction. ``max_pairs``:
    the broad phase's budget per kind of pair, ``normal`` the normal-force law (:class:`Contact`)."""
    which = dict(
        collide_ground=collide_ground, collide_pairs=collide_pairs, exclude=exclude, max_pairs=max_pairs, normal=normal
    )
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
    ``body`` (``-torque`` on ``other``), zero for contacts of ``condim`` below 4; normal ``(m, 3)``
    the unit contact normal, pointing from ``other``'s shape to ``body``'s (the normal force is
    ``force . normal``; zero rows for pairs the broad phase left out); geom, other_geom (static):
    the geoms of ``body`` and ``other`` (indices into ``model.geoms``; ``-1``: the ground).
    """

    point: Float[Array, "m 3"]
    force: Float[Array, "m 3"]
    depth: Float[Array, " m"]
    body: tuple[int, ...] = eqx.field(static=True)
    other: tuple[int, ...] = eqx.field(static=True)
    torque: Float[Array, "m 3"]
    normal: Float[Array, "m 3"]
    geom: tuple[int, ...] = eqx.field(static=True)
    other_geom: tuple[int, ...] = eqx.field(static=True)


class _Kind(NamedTuple):
    """The forces of one kind of contact (ground points or shape pairs): ``f`` on ``body``,
    ``-f`` on ``other`` (``-1``: the world or the ground; static, or traced for pairs chosen by
    the broad phase); ``rate``, ``ut``: (S4) and (S1); ``row``: the rows of the whole pair table
    that chosen pairs' contacts fill (traced; ``None``: every row, in order); ``torque``: the
    torsional and rolling friction couple on ``body`` (``-torque`` on ``other``; ``None``: no
    contact of the kind has either); ``normal``: the unit normal, pointing towards ``body``'s
    shape (``f``'s normal part is ``f . normal``); ``geom``, ``other_geom``: the geoms of ``body``
    and ``other`` (``-1``: the ground)."""

    body: np.ndarray | Array
    other: np.ndarray | Array
    point: Array
    depth: Array
    f: Array
    rate: Array
    ut: Array
    row: np.ndarray | Array | None = None
    torque: Array | None = None
    normal: Array | None = None
    geom: np.ndarray | Array | None = None
    other_geom: np.ndarray | Array | None = None


def _acts(model: Model, collide_ground: bool, collide_pairs: bool, exclude) -> bool:
    """Whether any contact of the chosen kinds exists on ``model`` (static)."""
    ground = collide_ground and has_ground_points(cast(Geoms, model.geoms))  # read with collide_ground
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
                normal=sign * k.normal,
                geom=np.where(flip, k.other_geom, k.geom),
                other_geom=np.where(flip, k.geom, k.other_geom),
            )
        out.append(k)
    return out


def _kinds(
    model: Model,
    F: Frames,
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
    normal="hunt_crossley",
):
    """The point forces of each kind of contact that acts, as ``{"ground": _Kind, "pairs": _Kind}``
    (a kind is absent when it is off or the model has none). ``state``: the elongations of
    ``friction="spring"`` (``None``: regularised friction). ``max_pairs``: the broad phase's
    budget per kind of pair; with ``table_rows``, the chosen pairs' contacts are put in the rows
    of the whole table (the others: no force, no depth, at the midpoint of the geoms' centres).
    ``normal``: the normal-force law (:class:`Contact`)."""
    out = {}
    spring = state is not None
    mujoco = normal == "mujoco"
    if mujoco:
        soft.check_invweights(model)
    if _acts(model, collide_ground, False, exclude):
        cp = _contact_points(model, F, ground)
        n = cp.normal
        u = state.ground if spring else None
        law = None
        if mujoco:
            rows = soft.ground_rows(model, cp, ground)
            law = soft.coefficients(rows, cp.distance - cp.margin, cp.mu, None)[:2]
        f, r, ut = force_law(cp.depth, n, cp.velocity, cp.mu, params, model.dtype, u, dt, soft=law)
        body = np.asarray(cp.body, np.int64)
        assert model.geoms is not None  # it has ground points
        mua = angular_friction(model.geoms, np.asarray(cp.geom, np.int64), np.full(len(body), ground.geom))
        tq = None if mua is None else torques(cp.depth, n, cp.velocity, F.w[body], mua, params, model.dtype, law)
        geom = np.asarray(cp.geom, np.int64)
        out["ground"] = _Kind(
            body, np.full_like(body, -1), cp.point, cp.depth, f, r, ut, None, tq, n, geom, np.full_like(geom, -1)
        )
    if _acts(model, False, collide_pairs, exclude):
        pc = pair_slots(model, F, exclude, max_pairs)
        u = pc.bristles(state.pairs) if spring else None
        law = None
        if mujoco:
            rows = soft.take_rows(soft.pair_rows(model, exclude), pc.row)
            assert pc.margin is not None  # pair_slots sets it
            law = soft.coefficients(rows, pc.distance - pc.margin, pc.mu, None)[:2]
        f, r, ut = force_law(pc.depth, pc.normal, pc.velocity, pc.mu, params, model.dtype, u, dt, soft=law)
        tq = None
        if pc.mu_angular is not None:
            tq = torques(pc.depth, pc.normal, pc.velocity, pc.omega, pc.mu_angular, params, model.dtype, law)
        row = pc.row if pc.chosen else None
        k = _Kind(pc.body2, pc.body1, pc.point, pc.depth, f, r, ut, row, tq, pc.normal, pc.geom2, pc.geom1)
        out["pairs"] = _table_rows(model, F, k, exclude) if table_rows and k.row is not None else k
    return out


def _table_rows(model: Model, F: Frames, k: _Kind, exclude) -> _Kind:
    """The chosen pairs' contacts ``k`` put in the rows of the whole pair table: the other rows
    have no force, rate, elongation or depth and lie at the midpoint of their geoms' centres."""
    table = collision_pairs(model, exclude)
    ij = np.asarray(table.pairs, np.int64).reshape(-1, 2)[table.row_pair]
    assert model.geoms is not None  # it has pairs
    body = np.asarray(model.geoms.body, np.int64)
    _, cg = geom_poses(model, F)

    def into(base, x):
        return None if x is None else base.at[k.row].set(x)

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
        into(z, k.normal),
        ij[:, 1],
        ij[:, 0],
    )


def _evaluate(
    model: Model,
    q,
    qd,
    ground,
    params,
    state,
    dt,
    *,
    collide_ground,
    collide_pairs,
    exclude,
    max_pairs=None,
    normal="hunt_crossley",
    kinematics=None,
):
    """Wrenches (as :func:`contact_wrenches`) and, with a ``state``, its rate (S4) and the
    elongations projected on the tangent planes (S1), as :class:`ContactState` (else ``None``);
    ``kinematics``: the :func:`jaxdyn.kinematics` record at ``q``, if the caller has one."""
    q = jnp.asarray(q, model.dtype)
    qd = jnp.asarray(qd, model.dtype)
    ground = Ground() if ground is None else ground
    params = ContactParams() if params is None else params
    out = jnp.zeros((model.nb + 1, 6), model.dtype)  # the world's row last, dropped
    which = dict(
        collide_ground=collide_ground, collide_pairs=collide_pairs, exclude=exclude, max_pairs=max_pairs, normal=normal
    )
    spring = state is not None
    rates = [jnp.zeros_like(state.ground), jnp.zeros_like(state.pairs)] if spring else None
    proj = [state.ground, state.pairs] if spring else None
    if not _acts(model, collide_ground, collide_pairs, exclude):
        return out[:-1], _as_state(rates), _as_state(proj)
    F = _frames(model, q, qd, kinematics=kinematics)
    kinds = _kinds(model, F, ground, params, state, dt, **which)
    for slot, name in enumerate(("ground", "pairs")):
        if name not in kinds:
            continue
        k = kinds[name]
        if name == "ground":
            out = add_wrenches(out, F, k.body, k.point, k.f, k.torque)
        else:
            xp = np if isinstance(k.body, np.ndarray) else jnp
            out = add_wrenches(
                out,
                F,
                xp.concatenate([k.body, k.other]),
                jnp.concatenate([k.point, k.point]),
                jnp.concatenate([k.f, -k.f]),
                None if k.torque is None else jnp.concatenate([k.torque, -k.torque]),
            )
        if spring and k.row is not None:  # chosen pairs: the others' elongations relax to zero
            assert rates is not None and proj is not None  # with a state
            z = jnp.zeros_like(state.pairs)
            rates[slot], proj[slot] = z.at[k.row].set(k.rate), z.at[k.row].set(k.ut)
        elif spring:
            assert rates is not None and proj is not None  # with a state
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
    max_pairs: int | str | None = None,
    normal: str = "hunt_crossley",
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
        normal=normal,
    )
    return _joint_space(model, q, w)


def _joint_space(model: Model, q, w):
    z = jnp.zeros(model.nv, model.dtype)
    return -rnea_full(model, jnp.asarray(q, model.dtype), z, z, w, gravity=False).tau
