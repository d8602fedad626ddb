"""Diagonalized Lagrangian dynamics (JainRodriguez95: Jain & Rodriguez 1995).

With the innovations factorization ``M = L D L^T`` (``L = I + H phi K``) and a square root
``D = C C^T`` (``C`` the lower Cholesky factor of each joint block; ``C = sqrt(D)`` for 1-dof
joints; any square root works, the lower Cholesky factor is used throughout), the mass-matrix factor is ``m = L C`` (JainRodriguez95 (5.1)), so
``M = m m^T`` and ``l = m^-1 = C^-1 [I - H psi K]``. The new velocity and force coordinates are

* total joint rates ``eta = m^T qd = C^T [I + H phi K]^T qd``  (JainRodriguez95 Table 2),
* working moments ``epsilon = l T = C^-1 [I - H psi K] T``     (JainRodriguez95 Table 3),

where ``T`` is the net generalized force (applied torques minus the gravity torques). Kinetic
energy is ``eta . eta / 2`` (JainRodriguez95 (1.2)) and the equations of motion are diagonal:

    d(eta)/dt + C(q, eta) = epsilon                        (JainRodriguez95 (1.3), Lemma 7.1)

with the non-working Coriolis term ``C(q, eta) = l c(q, qd) - (dm/dt)^T qd``, where ``c`` is
the usual Coriolis/centrifugal torque; ``eta . C(q, eta) = 0`` (JainRodriguez95 (7.3)). This module
evaluates ``C`` from that identity (the closed form (7.1) and
Algorithm 7.1 equal ``l (dm eta - qd^T M_q qd / 2)`` = ``l c - dm^T qd``): ``(dm/dt)^T qd`` is
the forward-mode derivative of the O(N) operator ``q -> m(q)^T qd`` along ``dq/dt``, so every
piece stays O(N) and matrix-free. Algorithm 7.1's explicit recursion is not implemented.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
from jaxtyping import Array, Float

from .. import linalg, tree
from ..configuration import configuration_derivative, integrate
from ..model import Model
from .common import check
from .innovations import (
    MassFactorization,
    apply_innovations_factor_transpose,
    apply_innovations_inverse,
    apply_innovations_inverse_transpose,
    factorize,
)
from .rnea import coriolis_torques, gravity_torques


def _chol_blocks(model: Model, fac: MassFactorization):
    """The lower Cholesky factors ``C`` of the joint blocks of ``D`` (:mod:`jaxdyn.linalg`: XLA
    operations, no library kernel under ``vmap``)."""
    lay = model.layout
    Cl = None
    if len(lay.link_bodies):
        Cl = jnp.sqrt(fac.link.D) if lay.k == 1 else jax.vmap(linalg.cholesky)(fac.link.D)
    Cr = linalg.cholesky(fac.root.D) if fac.root is not None else None
    return Cl, Cr


def _blocks(model, Cl, Cr, x, transpose=False, inverse=False):
    lay = model.layout
    x_l, x_r = tree.v_to_link_values(lay, x)

    def op(C, v):
        if inverse:
            if C.shape[-1] == 1:
                return v / C[..., 0]
            solve = lambda C_, v_: linalg.solve_lower(C_, v_, transpose=transpose)  # noqa: E731
            return jax.vmap(solve)(C, v) if C.ndim == 3 else solve(C, v)
        A = jnp.swapaxes(C, -1, -2) if transpose else C
        return jnp.einsum("...ij,...j->...i", A, v)

    o_l = op(Cl, x_l) if Cl is not None else x_l
    o_r = op(Cr, x_r) if Cr is not None else None
    return tree.link_values_to_v(lay, o_l, o_r)


def total_joint_rates(model: Model, q: Float[Array, " nq"], qd: Float[Array, " nv"]) -> Float[Array, " nv"]:
    """``eta = D^(1/2)T [I + H phi K]^T qd`` (JainRodriguez95 Table 2), O(N)."""
    check(model, "total_joint_rates", q=q, qd=qd)
    fac = factorize(model, q)
    Cl, Cr = _chol_blocks(model, fac)
    return _blocks(model, Cl, Cr, apply_innovations_factor_transpose(model, fac, qd), transpose=True)


def joint_rates_from_total(model: Model, q: Float[Array, " nq"], eta: Float[Array, " nv"]) -> Float[Array, " nv"]:
    """Inverse of :func:`total_joint_rates`: ``qd = [I - H psi K]^T D^(-1/2)T eta``."""
    fac = factorize(model, q)
    Cl, Cr = _chol_blocks(model, fac)
    return apply_innovations_inverse_transpose(model, fac, _blocks(model, Cl, Cr, eta, transpose=True, inverse=True))


def working_moments(model: Model, q: Float[Array, " nq"], T: Float[Array, " nv"]) -> Float[Array, " nv"]:
    """``epsilon = D^(-1/2) [I - H psi K] T`` (JainRodriguez95 Table 3), O(N)."""
    check(model, "working_moments", q=q, tau=T)
    fac = factorize(model, q)
    Cl, Cr = _chol_blocks(model, fac)
    return _blocks(model, Cl, Cr, apply_innovations_inverse(model, fac, T), inverse=True)


def diagonal_coriolis(model: Model, q: Float[Array, " nq"], qd: Float[Array, " nv"]) -> Float[Array, " nv"]:
    """``C(q, eta)`` of the diagonal equations at the state ``(q, qd)`` (``eta`` is implied):
    ``l c(q, qd) - (dm/dt)^T qd`` (JainRodriguez95 Lemma 7.1)."""
    check(model, "diagonal_coriolis", q=q, qd=qd)
    qdot = configuration_derivative(model, q, qd).astype(q.dtype)
    mdot_T_qd = jax.jvp(lambda x: total_joint_rates(model, x, qd), (q,), (qdot,))[1]
    return working_moments(model, q, coriolis_torques(model, q, qd)) - mdot_T_qd


def diagonal_dynamics(model: Model, q: Float[Array, " nq"], eta: Float[Array, " nv"], tau: Float[Array, " nv"]):
    """Right-hand side of the diagonal equations in ``(q, eta)``: returns ``(qd, eta_dot)`` with
    ``eta_dot = epsilon - C(q, eta)``, ``epsilon`` the working moments of ``tau - g(q)``."""
    qd = joint_rates_from_total(model, q, eta)
    eps = working_moments(model, q, tau - gravity_torques(model, q))
    return qd, eps - diagonal_coriolis(model, q, qd)


def simulate_diagonal(model: Model, q0, qd0, tau_fn: Callable, dt: float, steps: int):
    """Integrate the diagonal equations with classical RK4 on ``(q, eta)`` (quaternion joints on
    their manifold). ``tau_fn(t, q, qd) -> tau``. Returns ``(qs, qds)`` of shape
    ``(steps + 1, nq)`` and ``(steps + 1, nv)`` (``qd`` recovered from ``eta``)."""
    eta0 = total_joint_rates(model, q0, qd0)

    def f(t, q, eta):
        qd = joint_rates_from_total(model, q, eta)
        _, etad = diagonal_dynamics(model, q, eta, tau_fn(t, q, qd))
        return qd, etad

    c = jnp.array([0.0, 0.5, 0.5, 1.0], eta0.dtype)
    w = jnp.array([1.0, 2.0, 2.0, 1.0], eta0.dtype) / 6

    def step(carry, i):
        q, eta = carry
        t = i * dt

        # the four RK4 stages as a scan, so the right-hand side is traced (and compiled) once
        def stage(sc, cw):
            kq, ke, aq, ae = sc
            ci, wi = cw
            qs_ = integrate(model, q, kq, ci * dt)
            kq, ke = f(t + ci * dt, qs_, eta + ci * dt * ke)
            return (kq, ke, aq + wi * kq, ae + wi * ke), None

        z = jnp.zeros_like(eta)
        (_, _, v, etad), _ = jax.lax.scan(stage, (z, z, z, z), (c, w))
        q_next = integrate(model, q, v, dt)
        eta_next = eta + dt * etad
        return (q_next, eta_next), (q_next, joint_rates_from_total(model, q_next, eta_next))

    _, (qs, qds) = jax.lax.scan(step, (q0, eta0), jnp.arange(steps))
    return jnp.concatenate([q0[None], qs]), jnp.concatenate([qd0[None], qds])
