"""The only code that walks the tree: scatter (base to tips) and gather (tips to base).

In the spatial operator algebra (seed 000 sections 4-5, seed 001 (4.3)-(4.6)) a *scatter* is an
application of ``phi^T`` (velocities, accelerations move outward) and a *gather* an application of
``phi`` (forces, composite and articulated inertias move inward). Algorithms supply a per-link
step function; this module supplies the loop, as one ``jax.lax.scan`` over links.

Per-body values live in a buffer with one extra slot for the world (index ``nb``), so a link
whose parent is the world reads/writes that slot. A free-floating root is not part of the scan:
its step is the same step function called once with the root's data (a 6-dof joint), before the
scan for a scatter and after it for a gather.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from .model import Layout

tmap = jax.tree_util.tree_map


def _buffer(nb: int, world):
    return tmap(lambda w: jnp.zeros((nb + 1,) + jnp.shape(w), jnp.result_type(w)).at[nb].set(w), world)


def scatter(lay: Layout, step, link_x, world, root_x=None):
    """Base-to-tips recursion ``val[i] = step(val[parent[i]], x[i])``.

    Args:
      lay: the model layout.
      step: ``step(parent_val, x) -> (val, out)``; ``val`` has the structure of ``world``.
      link_x: pytree of per-link inputs with leading axis ``len(lay.link_bodies)``.
      world: the value of the world (the parent of root bodies).
      root_x: inputs of the free root step (floating-base models only).

    Returns:
      ``(vals, link_out, root_out)``: ``vals`` per body with leading axis ``nb``; ``link_out``
      stacked over scanned links; ``root_out`` the root step's output (None if fixed base).
    """
    nb = lay.nb
    buf = _buffer(nb, world)
    root_out = None
    if lay.floating:
        root_val, root_out = step(world, root_x)
        buf = tmap(lambda b, r: b.at[0].set(r), buf, root_val)
    n = len(lay.link_bodies)
    if n == 0:
        return tmap(lambda b: b[:nb], buf), None, root_out

    def body(buf, xs):
        i, parent, x = xs
        pv = tmap(lambda b: b[parent], buf)
        val, out = step(pv, x)
        buf = tmap(lambda b, v: b.at[i].set(v), buf, val)
        return buf, out

    xs = (jnp.asarray(lay.link_bodies), jnp.asarray(lay.link_parent), link_x)
    buf, link_out = jax.lax.scan(body, buf, xs)
    return tmap(lambda b: b[:nb], buf), link_out, root_out


def gather(lay: Layout, step, init, link_x, root_x=None):
    """Tips-to-base recursion: ``acc[parent[i]] += contrib`` with
    ``(contrib, out) = step(acc[i], x[i])``, visiting children before parents.

    Args:
      init: pytree of per-body initial accumulators, leading axis ``nb``.
      step: ``step(acc_i, x) -> (contrib_to_parent, out)``.
      link_x: per-link inputs (leading axis = number of scanned links).
      root_x: inputs of the free root step (floating base only); its contribution is dropped.

    Returns:
      ``(acc, link_out, root_out)``: the final accumulators per body (leading axis ``nb``;
      ``acc[i]`` includes everything outboard of body i), the stacked link outputs, and the root
      step's output.
    """
    nb = lay.nb
    buf = tmap(lambda a: jnp.concatenate([a, jnp.zeros((1,) + a.shape[1:], a.dtype)], 0), init)
    n = len(lay.link_bodies)
    link_out = None
    if n:
        def body(buf, xs):
            i, parent, x = xs
            contrib, out = step(tmap(lambda b: b[i], buf), x)
            buf = tmap(lambda b, c: b.at[parent].add(c), buf, contrib)
            return buf, out

        xs = (jnp.asarray(lay.link_bodies), jnp.asarray(lay.link_parent), link_x)
        buf, link_out = jax.lax.scan(body, buf, xs, reverse=True)
    root_out = None
    if lay.floating:
        _, root_out = step(tmap(lambda b: b[0], buf), root_x)
    return tmap(lambda b: b[:nb], buf), link_out, root_out


def subtree_sum(lay: Layout, vals):
    """Sum of per-body values over each body's subtree (a gather with identity transforms)."""
    acc, _, _ = gather(lay, lambda a, x: (a, None), vals, jnp.zeros(len(lay.link_bodies)),
                       root_x=None if not lay.floating else 0.0)
    return acc


def link_values_to_v(lay: Layout, link_vals, root_vals=None):
    """Assemble a ``(nv, ...)`` array from per-link ``(n, k, ...)`` values (and the root's
    ``(6, ...)``), dropping padded slots."""
    parts = []
    if lay.floating:
        parts.append(root_vals)
    if len(lay.link_bodies):
        parts.append(link_vals.reshape((-1,) + link_vals.shape[2:]))
    flat = jnp.concatenate(parts) if len(parts) > 1 else parts[0]
    return flat[jnp.asarray(lay.v_gather)]


def v_to_link_values(lay: Layout, v, pad=0.0):
    """Split a ``(nv,)`` vector into per-link ``(n, k)`` slots (padding ``pad``) and the root's 6."""
    vp = jnp.concatenate([v, jnp.full((1,), pad, v.dtype)])
    link = vp[jnp.asarray(lay.link_v)] if len(lay.link_bodies) else jnp.zeros((0, lay.k), v.dtype)
    root = v[0:6] if lay.floating else None
    return link, root


def q_to_link_values(lay: Layout, q):
    """Per-link configuration slots ``(n, qw)`` from ``q (nq,)`` (padding with zeros)."""
    qp = jnp.concatenate([q, jnp.zeros((1,), q.dtype)])
    return qp[jnp.asarray(lay.link_q)] if len(lay.link_bodies) else jnp.zeros((0, lay.qw), q.dtype)


