"""Inertial parametrisations (pseudo-inertia, log-Cholesky) and physical consistency."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from .. import linalg
from ..algorithms.regressor import inertial_parameters
from ..model import Model
from ..spatial import parallel_axis


def parameters_to_pseudo_inertia(pi) -> jnp.ndarray:
    """``(..., 10)`` inertial parameters -> ``(..., 4, 4)`` pseudo-inertia
    ``[[Sigma, h], [h^T, m]]`` with ``Sigma = tr(Ibar)/2 1 - Ibar`` (Turney80 (1.26))."""
    pi = jnp.asarray(pi)
    m, h = pi[..., 0], pi[..., 1:4]
    xx, xy, yy, xz, yz, zz = (pi[..., i] for i in range(4, 10))
    Ib = jnp.stack([jnp.stack([xx, xy, xz], -1), jnp.stack([xy, yy, yz], -1), jnp.stack([xz, yz, zz], -1)], -2)
    S = 0.5 * jnp.trace(Ib, axis1=-2, axis2=-1)[..., None, None] * jnp.eye(3, dtype=pi.dtype) - Ib
    top = jnp.concatenate([S, h[..., :, None]], -1)
    bot = jnp.concatenate([h[..., None, :], m[..., None, None]], -1)
    return jnp.concatenate([top, bot], -2)


def pseudo_inertia_to_parameters(J) -> jnp.ndarray:
    """Inverse of :func:`parameters_to_pseudo_inertia`: ``Ibar = tr(Sigma) 1 - Sigma``."""
    J = jnp.asarray(J)
    S, h, m = J[..., :3, :3], J[..., :3, 3], J[..., 3, 3]
    Ib = jnp.trace(S, axis1=-2, axis2=-1)[..., None, None] * jnp.eye(3, dtype=J.dtype) - S
    return jnp.concatenate(
        [
            m[..., None],
            h,
            jnp.stack([Ib[..., 0, 0], Ib[..., 0, 1], Ib[..., 1, 1], Ib[..., 0, 2], Ib[..., 1, 2], Ib[..., 2, 2]], -1),
        ],
        -1,
    )


def log_cholesky_to_pseudo_inertia(theta) -> jnp.ndarray:
    """``(..., 10)`` log-Cholesky coordinates ``(alpha, d1, d2, d3, s12, s23, s13, t1, t2, t3)`` ->
    ``J = U U^T`` (Rucker & Wensing 2022, eq. (11)); positive definite for every ``theta``."""
    theta = jnp.asarray(theta)
    a, d1, d2, d3, s12, s23, s13, t1, t2, t3 = (theta[..., i] for i in range(10))
    z = jnp.zeros_like(a)
    o = jnp.ones_like(a)
    U = (
        jnp.stack(
            [
                jnp.stack([jnp.exp(d1), s12, s13, t1], -1),
                jnp.stack([z, jnp.exp(d2), s23, t2], -1),
                jnp.stack([z, z, jnp.exp(d3), t3], -1),
                jnp.stack([z, z, z, o], -1),
            ],
            -2,
        )
        * jnp.exp(a)[..., None, None]
    )
    return U @ jnp.swapaxes(U, -1, -2)


def pseudo_inertia_to_log_cholesky(J) -> jnp.ndarray:
    """Inverse of :func:`log_cholesky_to_pseudo_inertia` for positive-definite ``J``: the
    upper-triangular factor is ``U = P L P`` with ``L L^T = P J P`` (Cholesky) and ``P`` the
    exchange matrix. NaN for a ``J`` that is not positive definite."""
    J = jnp.asarray(J)
    P = jnp.eye(4, dtype=J.dtype)[::-1]
    PJP = P @ J @ P
    # jaxdyn.linalg (XLA operations) over any leading axes: no library kernel under vmap
    L = jax.vmap(linalg.cholesky)(PJP.reshape((-1, 4, 4))).reshape(PJP.shape)
    U = P @ L @ P
    ea = U[..., 3, 3]
    V = U / ea[..., None, None]
    return jnp.stack(
        [
            jnp.log(ea),
            jnp.log(V[..., 0, 0]),
            jnp.log(V[..., 1, 1]),
            jnp.log(V[..., 2, 2]),
            V[..., 0, 1],
            V[..., 1, 2],
            V[..., 0, 2],
            V[..., 0, 3],
            V[..., 1, 3],
            V[..., 2, 3],
        ],
        -1,
    )


def log_cholesky_to_parameters(theta) -> jnp.ndarray:
    """Log-Cholesky coordinates -> inertial parameters (always physically consistent)."""
    return pseudo_inertia_to_parameters(log_cholesky_to_pseudo_inertia(theta))


def parameters_to_log_cholesky(pi) -> jnp.ndarray:
    """Inertial parameters of physically consistent bodies -> log-Cholesky coordinates."""
    return pseudo_inertia_to_log_cholesky(parameters_to_pseudo_inertia(pi))


@dataclasses.dataclass
class BodyConsistency:
    """Physical-consistency report of one body. ``min_eig_J``: smallest eigenvalue of the
    pseudo-inertia (> 0 iff consistent, Wensing, Kim & Slotine 2018); ``triangle_margin``:
    ``min(I1 + I2 - I3)`` over the principal moments about the COM, relative to the largest."""

    body: str
    mass: float
    com: tuple
    principal_moments: tuple
    min_eig_J: float
    triangle_margin: float
    consistent: bool


def physical_consistency(params, body_names: Sequence[str] | None = None, tol: float = 0.0) -> list:
    """Check every body: ``params`` is a :class:`~jaxdyn.Model` or ``(nb, 10)`` inertial
    parameters. A body is consistent when ``m > 0`` and its pseudo-inertia is positive definite
    (smallest eigenvalue > ``tol`` times its largest), which implies positive principal moments
    about the COM satisfying the triangle inequalities. Eager (returns Python objects)."""
    if isinstance(params, Model):
        body_names = params.body_names if body_names is None else body_names
        params = inertial_parameters(params)
    pi = np.asarray(params, np.float64).reshape(-1, 10)
    body_names = [f"body{i}" for i in range(len(pi))] if body_names is None else list(body_names)
    J = np.asarray(parameters_to_pseudo_inertia(jnp.asarray(pi)), np.float64)
    out = []
    for b in range(len(pi)):
        m = pi[b, 0]
        eJ = np.linalg.eigvalsh(J[b])
        if m > 0:
            c = pi[b, 1:4] / m
            xx, xy, yy, xz, yz, zz = pi[b, 4:]
            Ibar = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
            Ic = Ibar - parallel_axis(m, c, xp=np)
            ev = np.linalg.eigvalsh(Ic)
            tri = float((ev[0] + ev[1] - ev[2]) / max(abs(ev[2]), 1e-300))
        else:
            c, ev, tri = np.full(3, np.nan), np.full(3, np.nan), float("nan")
        ok = bool(m > 0 and eJ[0] > tol * max(eJ[-1], 0.0))
        out.append(
            BodyConsistency(body_names[b], float(m), tuple(map(float, c)), tuple(map(float, ev)), float(eJ[0]), tri, ok)
        )
    return out


def is_physically_consistent(params, tol: float = 0.0) -> bool:
    """True when every body passes :func:`physical_consistency`."""
    return all(r.consistent for r in physical_consistency(params, tol=tol))
