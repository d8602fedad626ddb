"""Programmatic models for tests and benchmarks: serial chains and random trees.

Both draw physically valid random inertias (positive mass, principal moments that satisfy the
triangle inequality, random principal axes), random joint placements and random unit axes from a
NumPy seed, so a model is reproducible and cheap to build with hundreds of links.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from . import joints
from .model import Model, Topology, make_model


def _random_rotation(rng):
    q = rng.normal(size=4)
    q /= np.linalg.norm(q)
    w, x, y, z = q
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )


def _random_body(rng, scale):
    m = rng.uniform(0.5, 2.0)
    c = rng.uniform(-0.5, 0.5, 3) * scale
    d = rng.uniform(0.05, 0.1, 3) * m * scale**2  # any two exceed the third
    R = _random_rotation(rng)
    return m, c, R @ np.diag(d) @ R.T


def _types(joint_types, n, rng):
    if isinstance(joint_types, str):
        return [joint_types] * n
    joint_types = list(joint_types)
    if len(joint_types) == n:
        return joint_types
    return [joint_types[i] for i in rng.integers(0, len(joint_types), n)]


def _build(parents, types, rng, floating_base, name, dtype, scale=0.3, axis_aligned=False):
    if floating_base:
        parents = [-1] + [p + 1 for p in parents]
        types = [joints.FREE.name] + list(types)
    nb = len(parents)
    R, p, ax, mass, com, inertia = [], [], [], [], [], []
    params = {k: np.zeros(nb) for k in joints.params_of(types)}
    for i in range(nb):
        jt = joints.get(types[i])
        if jt.floating:
            R.append(np.eye(3))
            p.append(np.zeros(3))
        else:
            R.append(_random_rotation(rng))
            p.append(rng.uniform(-1, 1, 3) * scale)
        if axis_aligned:
            a = np.eye(3)[rng.integers(0, 3)]
        else:
            a = rng.normal(size=3)
            a /= np.linalg.norm(a)
        ax.append(a)
        m, c, I = _random_body(rng, scale)
        for k, x in jt.sample_params(rng).items():  # only types with parameters draw more numbers
            params[k][i] = x
        mass.append(m)
        com.append(c)
        inertia.append(I)
    names = [f"joint{i}" for i in range(nb)]
    bodies = [f"link{i}" for i in range(nb)]
    topo = Topology(
        tuple(parents),
        tuple(types),
        tuple(names),
        tuple(bodies),
        frame_names=tuple(bodies),
        frame_bodies=tuple(range(nb)),
    )
    return make_model(
        topo,
        placement_R=np.array(R),
        placement_p=np.array(p),
        axis=np.array(ax),
        mass=np.array(mass),
        com=np.array(com),
        inertia=np.array(inertia),
        frame_R=np.broadcast_to(np.eye(3), (nb, 3, 3)),
        frame_p=np.zeros((nb, 3)),
        name=name,
        dtype=dtype,
        joint_params=params,
    )


def chain(
    n: int,
    joint_types: str | Sequence[str] = "revolute",
    *,
    floating_base: bool = False,
    seed: int = 0,
    dtype=None,
    axis_aligned: bool = False,
) -> Model:
    """A serial chain of ``n`` moving links (plus a free root if ``floating_base``).

    ``joint_types``: one type for all links, a sequence of ``n`` types, or a shorter sequence
    sampled at random (any type of :data:`jaxdyn.joints.JOINTS` but a floating one, e.g.
    "revolute", "continuous", "prismatic", "spherical"; a type's parameters are drawn by its
    ``sample_params``).
    """
    rng = np.random.default_rng(seed)
    types = _types(joint_types, n, rng)
    return _build(list(range(-1, n - 1)), types, rng, floating_base, f"chain{n}", dtype, axis_aligned=axis_aligned)


def random_tree(
    n: int,
    joint_types: str | Sequence[str] = ("revolute", "prismatic", "spherical"),
    *,
    floating_base: bool = False,
    seed: int = 0,
    dtype=None,
) -> Model:
    """A random tree (a forest on the world, or one tree under a free root) of ``n`` moving links:
    each link's parent is drawn among the previous links or the base, then the bodies are
    renumbered depth-first."""
    rng = np.random.default_rng(seed)
    raw = [-1] + [int(rng.integers(-1, i)) for i in range(1, n)]  # several roots allowed
    # renumber depth-first so that parents precede children and subtrees are contiguous
    kids = {i: [j for j in range(n) if raw[j] == i] for i in range(-1, n)}
    order, stack = [], list(reversed(kids[-1]))
    while stack:
        i = stack.pop()
        order.append(i)
        stack.extend(reversed(kids[i]))
    new = {old: k for k, old in enumerate(order)}
    parents = [new[raw[old]] if raw[old] >= 0 else -1 for old in order]
    types = _types(joint_types, n, rng)
    return _build(parents, types, rng, floating_base, f"tree{n}", dtype)
