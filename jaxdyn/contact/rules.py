"""MuJoCo's rules for contacts between geoms (Todorov12; MuJoCo's documentation, "Collision
detection" and "Contact parameters"): which geoms collide, and how the friction, the contact
dimension (``condim``) and the margin of two geoms combine into a contact's."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from .. import geometry


def collidable(geoms: geometry.Geoms, i: int) -> bool:
    """Whether geom ``i`` collides with the ground (:mod:`jaxdyn.contact.ground`): by MuJoCo's
    filter against any of the ground geoms (planes and height fields) where there are some."""
    if geoms.body[i] < 0:
        return False
    planes = [p for p, t in enumerate(geoms.type) if t in (geometry.PLANE, geometry.HFIELD)]
    if not planes:
        return geoms.contype[i] != 0 or geoms.conaffinity[i] != 0
    return any(_admitted(geoms, i, p) for p in planes)


def _admitted(geoms: geometry.Geoms, i: int, j: int) -> bool:
    """MuJoCo's filter on the geom data of geoms ``i`` and ``j`` (:func:`geom_rules`)."""
    return geom_rules(i, j, geoms.contype, geoms.conaffinity, geoms.exclude, geoms.pairs)


def geom_rules(i, j, contype, conaffinity, geom_exclude, explicit) -> bool:
    """MuJoCo's filter on two geoms' own data: an explicit pair, or bit masks that match either
    way and no geom ``exclude`` (the body rules are :func:`_pair_table`'s; an explicit pair
    overrides them too)."""
    key = (min(i, j), max(i, j))
    if key in explicit:
        return True
    masks = contype[i] & conaffinity[j] or contype[j] & conaffinity[i]
    return bool(masks) and key not in geom_exclude


def combined(g: geometry.Geoms, g1, g2):
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


def contact_friction(g: geometry.Geoms, g1, g2, mu1, mu2):
    """MuJoCo's sliding friction ``(m,)`` of contacts between geoms ``g1`` and ``g2``
    (:func:`combined`) whose own frictions are ``mu1`` and ``mu2``: an explicit pair's own
    (``geoms.pair_friction``), else the geom of higher ``priority``'s, else the larger; zero
    where the contact's dimension is 1 (frictionless)."""
    p1, p2, dim, k = combined(g, g1, g2)
    mu = _by_priority(p1, p2, mu1, mu2)
    if np.any(k >= 0):
        mu = jnp.where(k >= 0, g.pair_friction[np.maximum(k, 0)].astype(mu.dtype), mu)
    if np.any(dim == 1):
        mu = jnp.where(dim == 1, 0.0, mu)
    return mu


def angular_friction(g: geometry.Geoms, g1, g2):
    """MuJoCo's torsional and rolling friction ``(m, 2)`` of contacts between geoms ``g1`` and
    ``g2`` (:func:`combined`; ``-1``: a ground without a plane geom, which has neither): the
    geoms' ``friction[1]`` and ``friction[2]`` combined as the sliding friction, the torsional
    one where the contact's dimension is 4 or 6 and the rolling one where it is 6, zero
    elsewhere; an explicit pair's own (``Geoms.pair_angular``, by its ``pair_condim``).
    ``None`` where no contact has either (static), so that models without them pay nothing."""
    p1, p2, dim, k = combined(g, g1, g2)
    if not np.any(dim >= 4):
        return None
    fr = jnp.concatenate([g.friction[:, 1:], jnp.zeros((1, 2), g.friction.dtype)])  # row -1: none
    mu = _by_priority(p1, p2, fr[np.asarray(g1, np.int64)], fr[np.asarray(g2, np.int64)])
    if np.any(k >= 0):
        mu = jnp.where((k >= 0)[:, None], g.pair_angular[np.maximum(k, 0)].astype(mu.dtype), mu)
    return jnp.where(np.stack([dim >= 4, dim == 6], -1), mu, 0.0)


def contact_margin(g: geometry.Geoms, g1, g2):
    """MuJoCo's contact margin ``(m,)`` of contacts between geoms ``g1`` and ``g2``
    (:func:`combined`; ``-1``: a ground without a plane geom, margin 0): the sum of the two
    geoms' ``Geoms.margin``, or an explicit pair's own ``Geoms.pair_margin``. The contact acts
    from that distance on (its depth is ``margin - phi``), as MuJoCo's does."""
    k = combined(g, g1, g2)[3]
    mg = jnp.concatenate([g.margin, jnp.zeros((1,), g.margin.dtype)])  # row -1: none
    margin = mg[np.asarray(g1, np.int64)] + mg[np.asarray(g2, np.int64)]
    if np.any(k >= 0):
        margin = jnp.where(k >= 0, g.pair_margin[np.maximum(k, 0)], margin)
    return margin
