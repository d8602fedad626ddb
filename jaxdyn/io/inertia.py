"""Physical consistency of a rigid body's inertia, and its repair.

A rigid body of mass ``m > 0`` has a rotational inertia about its centre of mass whose principal
moments ``I1 <= I2 <= I3`` are non-negative and satisfy the triangle inequality ``I1 + I2 >= I3``
(the second moments of the mass distribution, ``(I2 + I3 - I1) / 2`` and so on, are
non-negative). A massless body carries no inertia. Published descriptions often miss these by
round-off of a CAD export (eigenvalues of ``-1e-20``) or by a little more (sensor links with
hand-written moments); Pinocchio loads such files as they are and MuJoCo offers
``<compiler balanceinertia="true"/>``.

The loaders apply one of three policies (``inertia=`` of :func:`~jaxdyn.load_urdf` and
:func:`~jaxdyn.load_mjcf`):

* ``"warn"`` (default): load the numbers as written and emit one :class:`InertiaWarning` that
  names every inconsistent body and by how much;
* ``"strict"``: refuse the file with the loader's error, naming the first inconsistent body;
* ``"fix"``: clamp negative principal moments to zero, then, where the triangle inequality still
  fails, set the three principal moments to their mean (MuJoCo's ``balanceinertia``); the
  principal axes are kept. One :class:`InertiaWarning` lists every change.

Deviations within round-off (``1e-9`` of the largest moment plus ``1e-15`` kg m^2 for the
eigenvalues, ``1e-6`` of the largest moment plus ``1e-15`` kg m^2 for the triangle inequality)
count as consistent.
"""

from __future__ import annotations

import warnings

import numpy as np

from ..spatial import parallel_axis
from .errors import InertiaWarning

POLICIES = ("warn", "strict", "fix")
EIG_RTOL, EIG_ATOL, TRIANGLE_RTOL = 1e-9, 1e-15, 1e-6


def check_policy(policy: str) -> str:
    """``policy`` itself if it is one of :data:`POLICIES`, else a ``ValueError`` listing them."""
    if policy not in POLICIES:
        raise ValueError(f"inertia must be one of {', '.join(repr(p) for p in POLICIES)}, got {policy!r}")
    return policy


def inconsistency(mass: float, I: np.ndarray) -> str | None:
    """``None`` when ``(mass, I)`` (inertia about the centre of mass) is physically consistent,
    else a sentence saying what is wrong and by how much."""
    I = np.asarray(I, np.float64)
    scale = float(np.max(np.abs(I))) if I.size else 0.0
    ev = _eigh(I)[0]
    if mass == 0:
        if scale > EIG_ATOL:
            return f"zero mass with non-zero rotational inertia (principal moments {_fmt(ev)})"
        return None
    if ev[0] < -(EIG_RTOL * scale + EIG_ATOL):
        return f"rotational inertia not positive semi-definite: principal moments {_fmt(ev)} (smallest {ev[0]:.3g})"
    excess = ev[2] - ev[0] - ev[1]
    if excess > TRIANGLE_RTOL * scale + EIG_ATOL:
        return (
            f"principal moments {_fmt(ev)} violate the triangle inequality I1 + I2 >= I3 by {excess:.3g} "
            f"({100 * excess / ev[2]:.3g}% of I3)"
        )
    return None


def repair(mass: float, I: np.ndarray) -> tuple[np.ndarray, str | None]:
    """``(I_fixed, what_changed)``: negative principal moments clamped to zero, then the three
    moments set to their mean where the triangle inequality fails (axes kept). A massless body
    keeps its numbers (no consistent repair exists; it is reported by :func:`inconsistency`)."""
    I = np.asarray(I, np.float64)
    if mass == 0 or inconsistency(mass, I) is None:
        return I, None
    ev, V = _eigh(I)
    new = np.maximum(ev, 0.0)
    done = []
    if np.any(ev < 0):
        done.append(f"clamped principal moments {_fmt(ev)} to {_fmt(new)}")
    if new[2] - new[0] - new[1] > TRIANGLE_RTOL * max(new[2], 0.0):
        new = np.full(3, new.mean())
        done.append(f"balanced to {new[0]:.6g} each (mean of the principal moments)")
    return (V * new) @ V.T, "; ".join(done)


def combine(m1, c1, I1, m2, c2, I2):
    """Two rigid bodies (mass, centre of mass, inertia about their own centre of mass, all in one
    frame) as one body: masses add, the centres of mass average, and each inertia moves to the
    common centre of mass by the parallel-axis theorem."""
    m = m1 + m2
    if m <= 0:
        return 0.0, np.zeros(3), I1 + I2
    c = (m1 * c1 + m2 * c2) / m

    def shift(mm, cc):
        return parallel_axis(mm, cc - c, xp=np)

    return m, c, I1 + shift(m1, c1) + I2 + shift(m2, c2)


def _eigh(I):
    """Eigen-decomposition of the symmetric part, scaled first so that huge entries cannot
    overflow inside LAPACK."""
    scale = float(np.max(np.abs(I))) if I.size else 0.0
    if scale == 0.0:
        return np.zeros(3), np.eye(3)
    S = I / scale
    ev, V = np.linalg.eigh((S + S.T) / 2)
    return ev * scale, V


def _fmt(ev):
    return "[" + ", ".join(f"{x:.6g}" for x in ev) + "]"


class InertiaPolicy:
    """Applies a policy body by body and warns once at the end (:meth:`finish`).

    ``error`` is the loader's exception class (raised under ``"strict"``)."""

    def __init__(self, policy: str, error: type[Exception], source: str = "model"):
        self.policy = check_policy(policy)
        self.error = error
        self.source = source
        self.notes: list[str] = []

    def __call__(self, mass: float, I: np.ndarray, what: str) -> np.ndarray:
        """The inertia to use for ``what`` (e.g. ``"link 'wrist' <inertial>"``)."""
        problem = inconsistency(mass, I)
        if problem is None:
            return np.asarray(I, np.float64)
        if self.policy == "strict":
            raise self.error(
                f"{what}: {problem}; no rigid body has this inertia (inertia='strict'; "
                "use inertia='warn' to load it as written or inertia='fix' to repair it)"
            )
        if self.policy == "fix":
            I2, change = repair(mass, I)
            self.notes.append(f"{what}: {problem}; " + (change or "left as written"))
            return I2
        self.notes.append(f"{what}: {problem}")
        return np.asarray(I, np.float64)

    def finish(self):
        if self.notes:
            head = (
                "repaired inertias (inertia='fix')"
                if self.policy == "fix"
                else "inertias that are not physically consistent, loaded as written (inertia='warn')"
            )
            warnings.warn(
                f"{self.source}: {len(self.notes)} {head}:\n  " + "\n  ".join(self.notes), InertiaWarning, stacklevel=3
            )
