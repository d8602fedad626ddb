"""Excitation trajectories: finite Fourier series (Swevers et al. 1997)."""

from __future__ import annotations

import numpy as np

from ..model import Model
from .data import check_model


def fourier_excitation(model: Model, duration: float, dt: float, *, seed: int = 0, n_harmonics: int = 5,
                       base_frequency: float = 0.1, margin: float = 0.1):
    """A finite-Fourier-series excitation trajectory (Swevers, Ganseman, Tukel, De Schutter &
    Van Brussel 1997, IEEE T-RA 13(5)) sampled every ``dt`` for ``duration`` seconds:

    ``q_j(t) = q0_j + s_j sum_l (a_jl sin(l w t) - b_jl cos(l w t)) / (l w)``, ``w = 2 pi f0``,

    with random ``a, b ~ N(0, 1)`` and per-joint ``s_j, q0_j`` chosen so that the trajectory stays
    inside the joint limits shrunk by ``margin`` (unlimited revolute joints: +-1 rad, prismatic:
    +-0.1 m) and below ``(1 - margin)`` times the velocity limits. Returns ``(t, q, qd, qdd)``
    numpy float64 arrays, derivatives exact."""
    check_model(model, "fourier_excitation")
    n = model.nv
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((n, n_harmonics))
    b = rng.standard_normal((n, n_harmonics))
    w = 2 * np.pi * base_frequency * np.arange(1, n_harmonics + 1)

    def series(t):
        s, c = np.sin(np.outer(t, w)), np.cos(np.outer(t, w))
        q = s @ (a / w).T - c @ (b / w).T
        qd = c @ a.T + s @ b.T
        qdd = -s @ (a * w).T + c @ (b * w).T
        return q, qd, qdd

    lo, hi = np.asarray(model.q_lower, np.float64), np.asarray(model.q_upper, np.float64)
    rev = np.array([t != "prismatic" for t in model.joint_types])
    ok = np.isfinite(lo) & np.isfinite(hi) & (hi > lo)
    lo = np.where(ok, lo, np.where(rev, -1.0, -0.1))
    hi = np.where(ok, hi, np.where(rev, 1.0, 0.1))
    grid = np.linspace(0.0, 1.0 / base_frequency, 2000, endpoint=False)
    o, od, _ = series(grid)
    half = 0.5 * (hi - lo) * (1 - margin)
    span = 0.5 * (o.max(0) - o.min(0))
    s = half / span
    vlim = np.asarray(model.velocity_limit, np.float64) * (1 - margin)
    s = np.minimum(s, np.where(np.isfinite(vlim), vlim / np.abs(od).max(0), np.inf))
    q0 = 0.5 * (lo + hi) - s * 0.5 * (o.max(0) + o.min(0))
    t = np.arange(int(round(duration / dt))) * dt
    q, qd, qdd = series(t)
    return t, q0 + s * q, s * qd, s * qdd

