"""What a rollout records: :class:`Trajectory`, the first non-finite, implausibly deep and
over-budget states (read on the host), and the contact depth it is checked against."""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ..model import Model
from .checks import concrete


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class Trajectory:
    """A rollout: ``q (T+1, nq)``, ``qd (T+1, nv)`` (state at every step, first = initial), the
    torque that was applied ``tau (T, nv)`` (after clipping, before passive forces) and
    ``nonfinite_step`` (int32 scalar): the index ``k`` into ``q``/``qd`` of the first state with
    a NaN or inf entry (``k`` steps after the initial state, ``0`` if the initial state is not
    finite), ``-1`` if every state is finite. It is computed inside the rollout's scan, so a
    batched rollout (``vmap``) carries one per trajectory; :func:`first_nonfinite` reads it on
    the host.

    ``penetration_step`` (int32 scalar): with a ``contact``, the index ``k`` of the first state
    in which a shape is deeper in the ground, or two shapes deeper in each other, than
    ``rollout``'s ``max_penetration`` (a bound far
    beyond the contact law's rest depth: the step was too coarse for the contact, and the
    motion from there on is not physical), ``-1`` if none or without contact; read it on the host
    with :func:`first_penetration`.

    ``overflow_step`` (int32 scalar): with a contact whose ``"implicit_euler"`` solve takes a
    budget of rows (``Contact(max_contacts=...)``, ``"auto"`` by default, where the model has more
    candidate rows than the budget) or of pairs (``Contact(max_pairs=...)``, the broad phase,
    ``"auto"`` by default, where a kind of pair has more pairs than the budget), the index ``k``
    of the first state in which more rows touch than the rows' budget (their force is then
    missing from that step: raise ``max_contacts``) or more pairs of a kind are in reach than
    the pairs' budget (their force may be missing: raise ``max_pairs``), ``-1`` if none;
    ``None`` where no budget applies (read it with :func:`first_overflow`).

    ``contact_state``: for a contact with state (``Contact(friction="spring")``), the
    :class:`jaxdyn.contact.ContactState` at every step, each leaf with a leading ``T+1`` axis
    (first = initial); ``None`` otherwise. ``act``: the activations ``(T+1, na)`` of the
    actuators with activation dynamics when a ``ctrl`` drives them; ``None`` otherwise.

    A pytree (batch it with ``vmap``). Iterating and indexing give ``(q, qd, tau)`` as the
    former named tuple did, so ``q, qd, tau = rollout(...)`` still works.
    """

    q: jnp.ndarray
    qd: jnp.ndarray
    tau: jnp.ndarray
    nonfinite_step: jnp.ndarray
    contact_state: Any = None
    act: Any = None
    penetration_step: Any = None
    overflow_step: Any = None

    def __iter__(self):
        return iter((self.q, self.qd, self.tau))

    def __len__(self):
        return 3

    def __getitem__(self, i):
        return (self.q, self.qd, self.tau)[i]

    def _replace(self, **changes) -> Trajectory:
        return dataclasses.replace(self, **changes)


def all_finite(*xs):
    return jnp.all(jnp.stack([jnp.all(jnp.isfinite(x)) for x in xs]))


def first_nonfinite(x):
    """Where a rollout first went non-finite, read on the host after the run (no callback in
    the loop): ``x`` is a :class:`Trajectory` or anything with a ``nonfinite_step`` field (e.g.
    a batched :class:`jaxdyn.envs.EnvState`).

    Returns ``None`` if every state stayed finite; otherwise ``(index, step)`` with ``step`` the
    earliest ``nonfinite_step`` over the batch and ``index`` the batch entry that had it (the
    lowest such index on ties): an ``int`` for one batch axis (``vmap`` over environments), a
    tuple of ints for several, ``()`` for an unbatched trajectory.
    """
    return _first(x.nonfinite_step)


def first_overflow(x):
    """Where a rollout's contact rows first exceeded the solve's budget
    (:attr:`Trajectory.overflow_step`), on the host: as :func:`first_nonfinite`."""
    return _first(x.overflow_step)


def first_penetration(x):
    """Where a rollout's contact first went implausibly deep (:attr:`Trajectory.penetration_step`),
    read on the host after the run, as :func:`first_nonfinite` reads ``nonfinite_step``: ``None``,
    or ``(index, step)`` of the earliest such state of a batch. ``x``: a :class:`Trajectory` or a
    batched :class:`jaxdyn.envs.EnvState`."""
    return _first(x.penetration_step)


def _first(steps):
    """``None`` or ``(index, step)`` of the earliest non-negative entry of ``steps``."""
    if steps is None:
        return None
    s = np.asarray(jax.device_get(steps)).astype(np.int64)
    bad = s >= 0
    if not bad.any():
        return None
    key = np.where(bad, s, np.iinfo(np.int64).max)
    flat = int(np.argmin(key))  # first occurrence: lowest flat index on ties
    idx = np.unravel_index(flat, s.shape) if s.ndim else ()
    step = int(key.reshape(-1)[flat])
    idx = tuple(int(i) for i in idx)
    return (idx[0] if len(idx) == 1 else idx), step


PENETRATION_FACTOR = 100.0


def penetration_bound(model: Model, contact, max_penetration="auto"):
    """The depth [m] beyond which :func:`rollout` reports a state's contact as implausible
    (:attr:`Trajectory.penetration_step`), or ``None`` when it does not look (no contact, a
    contact with neither ground nor pairs, ``max_penetration=None``).

    ``"auto"``: ``PENETRATION_FACTOR`` (100) times the rest depth ``(W / k)^(1/p)`` of the whole
    model's weight ``W = m g`` on one contact point under the force law ``k d^p``
    (:class:`jaxdyn.contact.ContactParams`; ``g`` = 9.81 m/s^2 without gravity): a 1 kg ball on
    the default law rests 0.46 mm deep, so its bound is 4.6 cm, deeper than a drop from 10 m
    (3.6 cm); a 50 kg robot's is 0.62 m. With ``Contact(normal="mujoco")`` the rest depth is
    MuJoCo's law's for the softest geom (:func:`jaxdyn.contact.soft.rest_depth`). A number: that
    depth (positive)."""
    if contact is None or max_penetration is None or not (contact.collide_ground or contact.collide_pairs):
        return None
    if isinstance(max_penetration, str):
        if max_penetration != "auto":
            raise ValueError(
                f"rollout: max_penetration must be 'auto', a positive number or None, got {max_penetration!r}"
            )
        g = jnp.linalg.norm(jnp.asarray(model.gravity))
        weight = jnp.sum(model.mass) * jnp.where(g > 0, g, 9.81)
        if contact.normal == "mujoco" and model.geoms is not None:
            from ..contact.soft import rest_depth

            return PENETRATION_FACTOR * rest_depth(model.geoms, weight)
        k, p = contact.params.stiffness, contact.params.exponent
        return PENETRATION_FACTOR * (weight / k) ** (1.0 / p)
    v = concrete(max_penetration)
    if v is not None and not (v.shape == () and np.isfinite(v) and v > 0):
        raise ValueError(f"rollout: max_penetration must be 'auto', a positive number or None, got {max_penetration!r}")
    return max_penetration


def penetration(model: Model, contact, q):
    """The deepest contact depth ``d = max(0, margin - phi)`` [m] at ``q`` of the contacts that
    ``contact`` makes act (the shapes' ground contact points and the contacts of the shape pairs,
    with its broad phase ``max_pairs``), 0 without any: what :func:`rollout` compares with
    :func:`penetration_bound`."""
    from ..contact.frames import _frames
    from ..contact.ground import _contact_points, has_ground_points
    from ..contact.pairs import collision_pairs, pair_slots

    q = jnp.asarray(q, model.dtype)
    if model.geoms is None:
        return jnp.zeros((), model.dtype)
    parts = [jnp.zeros(0, model.dtype)]
    ground = contact.collide_ground and has_ground_points(model.geoms)
    pairs = contact.collide_pairs and len(collision_pairs(model, contact.exclude).pairs) > 0
    if ground or pairs:
        F = _frames(model, q)
        if ground:
            parts.append(_contact_points(model, F, contact.ground).depth)
        if pairs:
            parts.append(pair_slots(model, F, contact.exclude, contact.max_pairs).depth)
    return jnp.max(jnp.concatenate(parts), initial=0.0)


def ground_penetration(model: Model, contact, q):
    """The deepest penetration ``max(0, -phi)`` [m] of the shapes' ground contact points at
    ``q`` (:func:`jaxdyn.contact.contact_points`, ``phi`` the signed distance), 0 without any."""
    from ..contact import contact_points

    if model.geoms is None or not any(b >= 0 for b in model.geoms.body):
        return jnp.zeros((), model.dtype)
    cp = contact_points(model, q, jnp.zeros(model.nv, model.dtype), contact.ground)
    # depth = max(margin - phi, 0): beyond the margin, the penetration -phi is depth - margin
    return jnp.maximum(jnp.max(cp.depth - cp.margin), 0.0) if cp.depth.shape[0] else jnp.zeros((), model.dtype)
