"""Spread a batch over every visible device with ``jax.sharding``.

Batched work in jaxdyn is ``jit(vmap(f))``; placing the batch axis of the inputs on a 1-D device
mesh lets XLA's SPMD partitioner split the computation, so the same code runs on one CPU, one GPU
or eight, with no change. On CPU, ``XLA_FLAGS=--xla_force_host_platform_device_count=4`` (set
before JAX is imported) gives four host devices to test with.
"""

from __future__ import annotations

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec


def batch_mesh(devices=None) -> Mesh:
    """A 1-D mesh named ``"batch"`` over ``devices`` (default: all of ``jax.devices()``)."""
    devices = jax.devices() if devices is None else list(devices)
    return Mesh(np.array(devices), ("batch",))


def batch_sharding(mesh: Mesh | None = None, ndim: int = 1) -> NamedSharding:
    """The sharding that splits axis 0 over the mesh and replicates the other ``ndim - 1`` axes."""
    mesh = batch_mesh() if mesh is None else mesh
    return NamedSharding(mesh, PartitionSpec("batch", *([None] * (ndim - 1))))


def replicated(mesh: Mesh | None = None) -> NamedSharding:
    """A sharding that holds a full copy on every device of the mesh (for models, parameters)."""
    mesh = batch_mesh() if mesh is None else mesh
    return NamedSharding(mesh, PartitionSpec())


def shard_batch(tree, mesh: Mesh | None = None):
    """Place every array leaf of ``tree`` with its axis 0 split over the devices of ``mesh``.

    The batch size must be a multiple of the number of devices (the error says by how much it is
    not). With a single device this is a plain ``device_put``.
    """
    mesh = batch_mesh() if mesh is None else mesh
    n = mesh.devices.size
    leaves = jax.tree_util.tree_leaves(tree)
    for x in leaves:
        if np.ndim(x) == 0:
            raise ValueError("shard_batch: every leaf needs a leading batch axis, got a scalar")
        if x.shape[0] % n:
            raise ValueError(
                f"shard_batch: batch size {x.shape[0]} is not a multiple of the {n} devices; "
                f"pad it to {-(-x.shape[0] // n) * n}"
            )
    return jax.tree_util.tree_map(lambda x: jax.device_put(x, batch_sharding(mesh, np.ndim(x))), tree)


def replicate(tree, mesh: Mesh | None = None):
    """Place every array leaf of ``tree`` (e.g. a :class:`~jaxdyn.Model`) on all devices."""
    mesh = batch_mesh() if mesh is None else mesh
    import equinox as eqx

    arrays, static = eqx.partition(tree, eqx.is_array)
    arrays = jax.device_put(arrays, replicated(mesh))
    return eqx.combine(arrays, static)


def pad_batch(tree, multiple: int):
    """Pad axis 0 of every leaf to a multiple of ``multiple`` by repeating the last entry.

    Returns ``(padded_tree, n)`` with ``n`` the original batch size (slice results with ``[:n]``).
    """
    leaves = jax.tree_util.tree_leaves(tree)
    n = leaves[0].shape[0]
    pad = -n % multiple
    if pad == 0:
        return tree, n
    import jax.numpy as jnp

    return jax.tree_util.tree_map(lambda x: jnp.concatenate([x, jnp.repeat(x[-1:], pad, 0)], 0), tree), n
