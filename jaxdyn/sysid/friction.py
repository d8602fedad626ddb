"""Joint friction models that are linear in their coefficients (one set of coefficients per joint).

For joint ``j`` with velocity ``v = qd_j`` the friction torque is

    tau_f = F_v v + F_c s(v) + F_s s(v) exp(-|v / v_s|^delta) + tau_0

* ``"viscous"``: ``F_v v`` only.
* ``"coulomb"``: viscous + Coulomb, ``F_v v + F_c s(v)`` (the classical model, e.g. Gautier &
  Khalil; Swevers et al. 1997).
* ``"stribeck"``: viscous + Coulomb + the exponential Stribeck term ``F_s s(v) exp(-|v/v_s|^delta)``,
  the static Stribeck curve of Olsson, Astrom, Canudas de Wit, Gafvert & Lischinsky (1998),
  "Friction models and friction compensation", Eur. J. Control 4(3), section 2, written with
  ``F_s = F_static - F_c`` so that it is linear in ``(F_v, F_c, F_s)`` once the Stribeck velocity
  ``v_s`` and the exponent ``delta`` (default 2, Gaussian) are fixed.
* ``offset=True`` adds ``tau_0``: a constant torque per joint (torque-sensor or current offset).
* ``smooth_velocity = eps > 0`` replaces ``sign(v)`` by the smooth ``s(v) = tanh(v / eps)``
  everywhere (default for ``"stribeck"``: ``eps = v_s / 10``; 0, the exact sign, otherwise).

Columns of the friction regressor come in blocks of ``n`` (one column per joint, non-zero only
on that joint's row), in the order viscous, coulomb, stribeck, offset; the coefficient vector is
laid out the same way. When the data were filtered (:attr:`SysIdData.preprocessing`), the
friction columns are computed at the recording rate from the estimated velocity and filtered
like tau before they are sampled (parallel filtering): the discontinuous Coulomb column then
matches the filtered torques at velocity reversals.
"""

from __future__ import annotations

import dataclasses

import numpy as np

KINDS = ("viscous", "coulomb", "stribeck")


@dataclasses.dataclass(frozen=True)
class FrictionModel:
    """A per-joint friction model (module docstring)."""

    kind: str = "coulomb"
    offset: bool = False
    stribeck_velocity: float = 0.1
    stribeck_exponent: float = 2.0
    smooth_velocity: float | None = None

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"FrictionModel: kind must be one of {KINDS}, got {self.kind!r}")
        if not self.stribeck_velocity > 0 or not self.stribeck_exponent > 0:
            raise ValueError("FrictionModel: stribeck_velocity and stribeck_exponent must be positive")
        if self.smooth_velocity is not None and self.smooth_velocity < 0:
            raise ValueError(f"FrictionModel: smooth_velocity must be >= 0, got {self.smooth_velocity}")

    @property
    def terms(self) -> tuple:
        """Names of the coefficients per joint, in column-block order."""
        t = {
            "viscous": ("viscous",),
            "coulomb": ("viscous", "coulomb"),
            "stribeck": ("viscous", "coulomb", "stribeck"),
        }[self.kind]
        return t + (("offset",) if self.offset else ())

    @property
    def eps(self) -> float:
        if self.smooth_velocity is not None:
            return float(self.smooth_velocity)
        return self.stribeck_velocity / 10 if self.kind == "stribeck" else 0.0

    def n_columns(self, n_joints: int) -> int:
        return len(self.terms) * n_joints

    def sign(self, v):
        v = np.asarray(v, np.float64)
        return np.tanh(v / self.eps) if self.eps > 0 else np.sign(v)

    def features(self, qd) -> np.ndarray:
        """``(T, n, k)``: the friction basis functions of the velocities ``qd`` ``(T, n)``."""
        qd = np.asarray(qd, np.float64)
        s = self.sign(qd)
        f = {
            "viscous": qd,
            "coulomb": s,
            "offset": np.ones_like(qd),
            "stribeck": s * np.exp(-(np.abs(qd / self.stribeck_velocity) ** self.stribeck_exponent)),
        }
        return np.stack([f[t] for t in self.terms], -1)

    def describe(self) -> str:
        s = {
            "viscous": "F_v qd",
            "coulomb": "F_v qd + F_c s(qd)",
            "stribeck": f"F_v qd + F_c s(qd) + F_s s(qd) exp(-|qd/{self.stribeck_velocity:g}|^{self.stribeck_exponent:g})",
        }[self.kind]
        if self.offset:
            s += " + tau_0"
        sg = f"tanh(qd/{self.eps:g})" if self.eps > 0 else "sign(qd)"
        return f"{self.kind}{' + offset' if self.offset else ''}: {s} per joint, s(qd) = {sg}"


def friction_model(spec: None | bool | str | FrictionModel, **kwargs) -> FrictionModel | None:
    """Normalise a friction specification: None/False -> None; True -> viscous + Coulomb (the
    model of earlier versions); ``"viscous"``, ``"coulomb"``, ``"stribeck"``, optionally with
    ``"+offset"`` (e.g. ``"coulomb+offset"``); or a :class:`FrictionModel`. ``kwargs`` are
    :class:`FrictionModel` fields (for strings)."""
    if spec is None or spec is False:
        return None
    if isinstance(spec, FrictionModel):
        return spec
    if spec is True:
        return FrictionModel("coulomb", **kwargs)
    if isinstance(spec, str):
        parts = [p.strip() for p in spec.split("+")]
        offset = "offset" in parts
        parts = [p for p in parts if p != "offset"]
        if len(parts) != 1:
            raise ValueError(f"friction: {spec!r} is not one of {KINDS} optionally followed by '+offset'")
        kwargs = dict(kwargs)
        kwargs["offset"] = kwargs.get("offset", False) or offset
        return FrictionModel(parts[0], **kwargs)
    raise ValueError(f"friction: unsupported specification {spec!r}")


def friction_columns(fm: FrictionModel, data) -> np.ndarray:
    """``(T, n, k n)``: the friction columns of the regressor for ``data`` (module docstring;
    parallel-filtered when ``data.preprocessing`` is set)."""
    pre = getattr(data, "preprocessing", None)
    if pre is not None:
        feats = pre.parallel(fm.features(pre.qd_full))
    else:
        feats = fm.features(data.qd)
    T, n, k = feats.shape
    cols = np.zeros((T, n, k * n))
    j = np.arange(n)
    for c in range(k):
        cols[:, j, c * n + j] = feats[:, :, c]
    return cols


def friction_torque(fm: FrictionModel, coefficients, qd) -> np.ndarray:
    """``(T, n)`` friction torques for coefficient vector ``coefficients`` ``(k n,)`` (block
    layout of :func:`friction_columns`), evaluated directly at the velocities ``qd``."""
    feats = fm.features(qd)
    n = feats.shape[1]
    c = np.asarray(coefficients, np.float64).reshape(len(fm.terms), n)
    return np.einsum("tjk,kj->tj", feats, c)


def split_coefficients(fm: FrictionModel, coefficients, n: int) -> dict:
    """``{term: (n,) array}`` from the block coefficient vector."""
    c = np.asarray(coefficients, np.float64).reshape(len(fm.terms), n)
    return {t: c[i] for i, t in enumerate(fm.terms)}
