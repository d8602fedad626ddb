"""Inertial-parameter regressor: ``tau = Y(q, qd, qdd) @ pi`` for system identification.

``pi`` stacks 10 standard inertial parameters per body (Pinocchio's order), all in the body
frame: ``[m, m c_x, m c_y, m c_z, Ixx, Ixy, Iyy, Ixz, Iyz, Izz]`` with ``I`` the rotational
inertia about the body-frame origin (``Ibar`` of Rodriguez86 after (4.9)). The Newton-Euler
equations are linear in these (Turney80 section 2: the pseudo-inertia enters linearly), so ``Y``
is the exact Jacobian of RNEA with respect to ``pi``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from .. import spatial
from ..model import Model
from .common import check
from .rnea import rnea_full


def parameters_to_inertia(pi: Float[Array, "nb 10"]) -> spatial.RigidInertia:
    """Compact rigid inertias ``(m, h, Ibar)`` from inertial parameters ``(nb, 10)``."""
    m, h = pi[:, 0], pi[:, 1:4]
    xx, xy, yy, xz, yz, zz = (pi[:, i] for i in range(4, 10))
    Ibar = jnp.stack([jnp.stack([xx, xy, xz], -1), jnp.stack([xy, yy, yz], -1), jnp.stack([xz, yz, zz], -1)], -2)
    return spatial.RigidInertia(m, h, Ibar)


def inertial_parameters(model: Model) -> Float[Array, "nb 10"]:
    """The model's inertial parameters ``(nb, 10)`` (see the module docstring)."""
    I = model.body_inertias()
    B = I.Ibar
    return jnp.concatenate(
        [I.m[:, None], I.h, jnp.stack([B[:, 0, 0], B[:, 0, 1], B[:, 1, 1], B[:, 0, 2], B[:, 1, 2], B[:, 2, 2]], -1)], -1
    )


def model_with_parameters(model: Model, pi: Float[Array, "nb 10"]) -> Model:
    """A copy of ``model`` whose masses, centres of mass and inertias come from ``pi``.

    Every body needs ``m > 0`` (the centre of mass is ``h / m``)."""
    I = parameters_to_inertia(pi)
    c = I.h / I.m[:, None]
    I_com = I.Ibar - spatial.parallel_axis(I.m, c)
    return model.replace(mass=I.m, com=c, inertia=I_com)


def regressor(model: Model, q, qd, qdd) -> Float[Array, "nv nb*10"]:
    """``Y`` with ``rnea(model, q, qd, qdd) == Y @ inertial_parameters(model).ravel() +
    armature * qdd``. Columns: 10 per body, in body order."""
    check(model, "regressor", q=q, qd=qd, qdd=qdd)
    pi = inertial_parameters(model)
    f = lambda p: rnea_full(model, q, qd, qdd, inertia=parameters_to_inertia(p.reshape(-1, 10))).tau
    return jax.jacfwd(f)(pi.ravel())


def base_parameters(model: Model, key, n_samples: int = 64, rtol: float = 1e-9):
    """The identifiable (base) parameter combinations, numerically: an orthonormal basis ``B``
    ``(r, 10 nb)`` of the row space of regressors stacked over random states, so that
    ``Y @ pi == (Y @ B.T) @ (B @ pi)`` for every state. Returns ``(B, singular_values)``.
    Eager (uses numpy's SVD)."""
    from ..configuration import random_configuration

    keys = jax.random.split(key, 3)
    qs = jax.vmap(lambda k: random_configuration(model, k))(jax.random.split(keys[0], n_samples))
    qd = jax.random.normal(keys[1], (n_samples, model.nv), model.dtype)
    qdd = jax.random.normal(keys[2], (n_samples, model.nv), model.dtype)
    Y = jax.jit(jax.vmap(regressor, in_axes=(None, 0, 0, 0)))(model, qs, qd, qdd)
    Y = np.asarray(Y, np.float64).reshape(-1, Y.shape[-1])
    _, s, Vt = np.linalg.svd(Y, full_matrices=False)
    r = int(np.sum(s > rtol * s[0]))
    return Vt[:r], s
