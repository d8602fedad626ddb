"""Inertial-parameter identification from measured joint torques (fixed-base, 1-dof joints).

The torque model is linear in the standard inertial parameters ``pi`` (``(nb, 10)``, see
:mod:`jaxdyn.algorithms.regressor`)::

    tau = Y(q, qd, qdd) @ pi + armature * qdd  [+ damping * qd + coulomb * sign(qd)]

with the armature taken as known from the model and, optionally (``friction=True``), a viscous
and a Coulomb coefficient per joint identified as extra columns.

Two estimators:

* :func:`identify_ls` - ordinary least squares on the *base parameters*
  ``beta = B @ pi`` (Gautier & Khalil 1990; Atkeson, An & Hollerbach 1986). ``B`` is an
  orthonormal basis of the row space of the regressor, computed from random states
  (:func:`structural_base`, an SVD as in :func:`jaxdyn.base_parameters`), so the estimate is
  unique whatever the data excite; the unidentifiable directions are kept at the prior:
  ``pi = pi0 + B^T (beta - B pi0)``. This estimate need not be physically consistent.
* :func:`identify_gradient` - gradient descent (optax Adam) under the log-Cholesky
  parametrisation of the 4x4 pseudo-inertia (Rucker & Wensing 2022, "Smooth parameterization of
  rigid-body inertia", IEEE RA-L 7(2)): ``J = U U^T`` with ``U`` upper triangular,
  ``U = e^alpha [[e^d1, s12, s13, t1], [0, e^d2, s23, t2], [0, 0, e^d3, t3], [0, 0, 0, 1]]``.
  Every ``theta = (alpha, d1, d2, d3, s12, s23, s13, t1, t2, t3)`` gives a positive-definite
  ``J``, i.e. a physically consistent body (Wensing, Kim & Slotine 2018, RA-L 3(1)); the map is
  a bijection onto them. ``J = [[Sigma, h], [h^T, m]]`` with ``Sigma = int r r^T dm``,
  ``Ibar = tr(Sigma) 1 - Sigma`` (seed 004 (1.26)-(1.28)). The loss is the torque mean squared
  error plus ``reg`` times the log-det (Bregman) divergence to the prior,
  ``d(J || J0) = tr(J0^-1 J) - log det(J0^-1 J) - 4`` (Lee, Wensing & Park 2020, "Geometric
  robot dynamic identification: a convex programming approach", IEEE T-RO 36(2)), which pulls
  the unidentifiable directions toward the nominal model and is coordinate-free.

The torque residual uses the regressor, which is the exact Jacobian of RNEA with respect to
``pi`` (so ``Y @ pi == rnea(model_with_parameters(model, pi), q, qd, qdd) - armature * qdd``).

Data files
----------

NPZ: arrays ``q`` ``(T, n)``, ``tau`` ``(T, n)``; optional ``qd``, ``qdd`` ``(T, n)``, ``t``
``(T,)`` (seconds, uniformly sampled), ``dt`` (scalar), ``joint_names`` ``(n,)`` (strings; when
absent the columns are in the model's joint order). Other keys are an error.

CSV: comma separated, lines starting with ``#`` are comments, then one header line, then one row
per sample::

    t,q:joint1,q:joint2,qd:joint1,qd:joint2,tau:joint1,tau:joint2
    0.00,0.1,0.2,0.0,0.0,1.5,0.3

Column names are ``t`` (optional) or ``<kind>:<joint name>`` with kind one of ``q``, ``qd``,
``qdd``, ``tau``. ``q`` and ``tau`` are required for every joint; ``qd``/``qdd`` are optional but,
when present, must be given for every joint. Columns may be in any order.

Joint names are matched to the model's joints (every model joint must appear once, no others).
When ``qd``/``qdd`` are missing they are estimated with a Savitzky-Golay filter (a local
least-squares polynomial fit, Savitzky & Golay 1964; Schafer 2011, IEEE Signal Proc. Mag.)
which needs uniform sampling (``t`` or ``dt``); the ``window // 2`` samples at each end, where
the fit is one-sided, are then dropped.

Sharding: regressors are evaluated in fixed-size chunks (one compiled program per model)
spread over every visible device with :func:`jaxdyn.parallel.shard_batch`, padding with
:func:`jaxdyn.parallel.pad_batch`; the gradient loss runs on the sharded stack. With one device
this is plain single-device execution; with several, no code change is needed.
"""

from __future__ import annotations

import csv
import dataclasses
import functools
import math
import os
import sys
from typing import Callable, Optional, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from . import parallel
from .algorithms.regressor import inertial_parameters, model_with_parameters, regressor
from .model import Model

__all__ = [
    "SysIdData", "fourier_excitation", "load_data", "save_data", "savgol_derivative", "split_holdout", "check_model",
    "parameters_to_pseudo_inertia", "pseudo_inertia_to_parameters", "log_cholesky_to_pseudo_inertia",
    "pseudo_inertia_to_log_cholesky", "log_cholesky_to_parameters", "parameters_to_log_cholesky",
    "BodyConsistency", "physical_consistency", "is_physically_consistent", "structural_base",
    "regressor_rows", "Identification", "identify_ls", "identify_gradient", "identify",
    "predict_torques", "torque_rmse", "ProgressBar",
]

_KINDS = ("q", "qd", "qdd", "tau")


# ------------------------------------------------------------------------------------------
# data
# ------------------------------------------------------------------------------------------


@dataclasses.dataclass
class SysIdData:
    """Joint-space samples in the model's joint order: ``q, qd, qdd, tau`` ``(T, n)`` float64,
    ``t`` ``(T,)`` or None. ``estimated`` names the derivatives that were estimated by filtering."""

    q: np.ndarray
    qd: np.ndarray
    qdd: np.ndarray
    tau: np.ndarray
    t: Optional[np.ndarray]
    joint_names: tuple
    estimated: tuple = ()

    def __len__(self):
        return self.q.shape[0]

    def subset(self, idx) -> "SysIdData":
        """The samples ``idx`` (a slice or index array)."""
        return dataclasses.replace(self, q=self.q[idx], qd=self.qd[idx], qdd=self.qdd[idx], tau=self.tau[idx],
                                   t=None if self.t is None else self.t[idx])


def check_model(model: Model, fn: str = "sysid"):
    """Raise unless ``model`` is fixed-base with 1-dof (revolute/continuous/prismatic) joints."""
    if model.floating_base:
        raise ValueError(f"{fn}: model '{model.name}' has a floating base; identification from joint "
                         "data supports fixed-base models only (load with floating_base=False)")
    bad = [(n, t) for n, t in zip(model.joint_names, model.joint_types) if t not in ("revolute", "continuous", "prismatic")]
    if bad:
        raise ValueError(f"{fn}: joint '{bad[0][0]}' of model '{model.name}' is {bad[0][1]}; only 1-dof "
                         "(revolute, continuous, prismatic) joints are supported")


def savgol_derivative(x, dt: float, window: int, polyorder: int = 3, deriv: int = 1) -> np.ndarray:
    """``deriv``-th time derivative of uniformly sampled ``x`` ``(T, ...)`` by a Savitzky-Golay
    filter: a least-squares polynomial of degree ``polyorder`` fitted to the ``window`` samples
    around each one, differentiated at the sample (the first/last ``window // 2`` samples use the
    first/last full window, evaluated off-centre)."""
    x = np.asarray(x, np.float64)
    T = x.shape[0]
    if window % 2 == 0 or window < polyorder + 2:
        raise ValueError(f"savgol_derivative: window must be odd and >= polyorder + 2 = {polyorder + 2}, got {window}")
    if deriv > polyorder:
        raise ValueError(f"savgol_derivative: deriv={deriv} exceeds polyorder={polyorder}")
    if T < window:
        raise ValueError(f"savgol_derivative: {T} samples are fewer than the filter window {window}")
    if not dt > 0:
        raise ValueError(f"savgol_derivative: dt must be positive, got {dt}")
    h = window // 2

    def coeffs(pos):  # weights over the window giving the derivative at offset `pos` in it
        k = np.arange(window) - pos
        A = np.vander(k.astype(np.float64), polyorder + 1, increasing=True)
        c = np.linalg.pinv(A)[deriv]
        return math.factorial(deriv) * c / dt**deriv

    flat = x.reshape(T, -1)
    out = np.empty_like(flat)
    win = np.lib.stride_tricks.sliding_window_view(flat, window, axis=0)  # (T-window+1, F, window)
    out[h:T - h] = win @ coeffs(h)
    for i in range(h):
        out[i] = coeffs(i) @ flat[:window]
        out[T - h + i] = coeffs(h + 1 + i) @ flat[T - window:]
    return out.reshape(x.shape)


def _finite(name, arr, source, joint_names=None):
    bad = ~np.isfinite(arr)
    if bad.any():
        r, *c = np.argwhere(bad)[0]
        col = f", joint '{joint_names[c[0]]}'" if c and joint_names is not None else ""
        raise ValueError(f"{source}: '{name}' has a non-finite value (NaN/inf) at sample {r}{col}")


def _read_csv(path):
    with open(path, newline="", encoding="utf-8") as fh:
        lines = [ln for ln in fh if ln.strip() and not ln.lstrip().startswith("#")]
    if not lines:
        raise ValueError(f"{path}: empty CSV file (no header)")
    header = [h.strip() for h in next(csv.reader([lines[0]]))]
    rows = []
    for i, row in enumerate(csv.reader(lines[1:])):
        if len(row) != len(header):
            raise ValueError(f"{path}: data row {i + 1} has {len(row)} values, the header has {len(header)} columns")
        try:
            rows.append([float(v) for v in row])
        except ValueError:
            raise ValueError(f"{path}: data row {i + 1} has a value that is not a number: {row}") from None
    if len(set(header)) != len(header):
        dup = sorted({h for h in header if header.count(h) > 1})
        raise ValueError(f"{path}: duplicate CSV columns {dup}")
    table = np.array(rows, np.float64).reshape(len(rows), len(header))
    arrays, names = {}, {}
    for j, h in enumerate(header):
        if h in ("t", "time"):
            arrays["t"] = table[:, j]
            continue
        kind, sep, joint = h.partition(":")
        if not sep or kind not in _KINDS or not joint:
            raise ValueError(f"{path}: column '{h}' is not 't' or '<kind>:<joint>' with kind in {_KINDS}")
        names.setdefault(kind, []).append(joint)
        arrays.setdefault(kind, []).append(table[:, j])
    if "q" not in names or "tau" not in names:
        raise ValueError(f"{path}: the CSV needs 'q:<joint>' and 'tau:<joint>' columns for every joint")
    ref = names["q"]
    out = {"joint_names": np.array(ref)}
    for kind in _KINDS:
        if kind not in names:
            continue
        if set(names[kind]) != set(ref):
            diff = sorted(set(names[kind]) ^ set(ref))
            raise ValueError(f"{path}: the '{kind}:' columns do not name the same joints as the 'q:' columns "
                             f"(differ in: {', '.join(diff)})")
        cols = dict(zip(names[kind], arrays[kind]))
        out[kind] = np.stack([cols[n] for n in ref], -1)
    if "t" in arrays:
        out["t"] = arrays["t"]
    return out


def _read_npz(path):
    allowed = {"q", "qd", "qdd", "tau", "t", "dt", "joint_names"}
    with np.load(path, allow_pickle=False) as z:
        extra = sorted(set(z.files) - allowed)
        if extra:
            raise ValueError(f"{path}: unknown arrays {extra}; allowed: {sorted(allowed)}")
        return {k: z[k] for k in z.files}


def load_data(source, model: Model, *, dt: Optional[float] = None, window: int = 31, polyorder: int = 3) -> SysIdData:
    """Load identification data for ``model`` from an ``.npz`` or ``.csv`` file (see the module
    docstring for the formats), or from a dict of arrays with the NPZ keys.

    Joint columns are reordered to the model's joint order. Missing ``qd``/``qdd`` are estimated by
    :func:`savgol_derivative` (``window`` samples, degree ``polyorder``); the ``window // 2``
    samples at each end are then dropped.

    Raises:
      ValueError: unsupported model, unknown/missing joint names, wrong shapes, NaN/inf, non-uniform
        or missing time stamps when derivatives must be estimated; the message names the culprit.
    """
    check_model(model, "load_data")
    if isinstance(source, dict):
        name, raw = "data", dict(source)
    else:
        name = os.fspath(source)
        if not os.path.exists(name):
            raise ValueError(f"load_data: data file not found: {name}")
        ext = os.path.splitext(name)[1].lower()
        if ext == ".npz":
            raw = _read_npz(name)
        elif ext == ".csv":
            raw = _read_csv(name)
        else:
            raise ValueError(f"load_data: {name}: unknown data format '{ext}' (use .npz or .csv)")
    for k in ("q", "tau"):
        if k not in raw:
            raise ValueError(f"{name}: missing required array '{k}'")
    n = model.nv
    jn = raw.get("joint_names")
    if jn is None:
        order = np.arange(n)
        data_names = model.joint_names
    else:
        data_names = tuple(str(s) for s in np.asarray(jn).ravel())
        unknown = [j for j in data_names if j not in model.joint_names]
        if unknown:
            raise ValueError(f"{name}: joint(s) {unknown} are not joints of model '{model.name}' "
                             f"(its joints: {', '.join(model.joint_names)})")
        missing = [j for j in model.joint_names if j not in data_names]
        if missing:
            raise ValueError(f"{name}: no data for joint(s) {missing} of model '{model.name}'")
        if len(set(data_names)) != len(data_names):
            raise ValueError(f"{name}: joint names are repeated: {list(data_names)}")
        order = np.array([data_names.index(j) for j in model.joint_names])
    arrs = {}
    T = None
    for k in _KINDS:
        if k not in raw:
            continue
        a = np.asarray(raw[k], np.float64)
        if a.ndim != 2 or a.shape[1] != len(data_names):
            raise ValueError(f"{name}: '{k}' has shape {a.shape}, expected (T, {len(data_names)}) "
                             f"(one column per joint of model '{model.name}')")
        if T is None:
            T = a.shape[0]
        elif a.shape[0] != T:
            raise ValueError(f"{name}: '{k}' has {a.shape[0]} samples, 'q' has {T}")
        _finite(k, a, name, data_names)
        arrs[k] = a[:, order]
    t = None
    if "t" in raw:
        t = np.asarray(raw["t"], np.float64).ravel()
        if t.shape[0] != T:
            raise ValueError(f"{name}: 't' has {t.shape[0]} samples, 'q' has {T}")
        _finite("t", t, name)
    if dt is None and "dt" in raw:
        dt = float(np.asarray(raw["dt"]))
    estimated = []
    if "qd" not in arrs or "qdd" not in arrs:
        if t is not None:
            steps = np.diff(t)
            if T < 2 or np.any(steps <= 0):
                raise ValueError(f"{name}: 't' must be strictly increasing to estimate qd/qdd")
            step = float(np.median(steps))
            if np.max(np.abs(steps - step)) > 1e-3 * step:
                raise ValueError(f"{name}: 't' is not uniformly sampled (steps from {steps.min():g} to "
                                 f"{steps.max():g} s); estimating qd/qdd needs uniform sampling: resample, "
                                 "or give qd and qdd")
            if dt is not None and abs(dt - step) > 1e-3 * step:
                raise ValueError(f"{name}: dt={dt} disagrees with the time stamps' step {step}")
            dt = step
        if dt is None:
            raise ValueError(f"{name}: qd/qdd are not given and neither 't' nor 'dt' is: cannot estimate them")
        if T < window:
            raise ValueError(f"{name}: {T} samples are fewer than the derivative filter window {window}")
        if "qd" not in arrs:
            arrs["qd"] = savgol_derivative(arrs["q"], dt, window, polyorder, 1)
            estimated.append("qd")
        if "qdd" not in arrs:
            if "qd" in estimated:
                arrs["qdd"] = savgol_derivative(arrs["q"], dt, window, polyorder, 2)
            else:
                arrs["qdd"] = savgol_derivative(arrs["qd"], dt, window, polyorder, 1)
            estimated.append("qdd")
        h = window // 2
        keep = slice(h, T - h)
        arrs = {k: v[keep] for k, v in arrs.items()}
        t = None if t is None else t[keep]
    if t is None and dt is not None:
        t = np.arange(arrs["q"].shape[0]) * float(dt)
    return SysIdData(arrs["q"], arrs["qd"], arrs["qdd"], arrs["tau"], t, tuple(model.joint_names), tuple(estimated))


def save_data(path, data: SysIdData, *, derivatives: bool = True):
    """Write ``data`` as ``.npz`` or ``.csv`` (format of the module docstring); with
    ``derivatives=False`` only ``t``, ``q`` and ``tau`` are written."""
    path = os.fspath(path)
    kinds = _KINDS if derivatives else ("q", "tau")
    ext = os.path.splitext(path)[1].lower()
    if ext == ".npz":
        arrays = {k: getattr(data, k) for k in kinds}
        if data.t is not None:
            arrays["t"] = data.t
        np.savez(path, joint_names=np.array(data.joint_names), **arrays)
    elif ext == ".csv":
        cols, header = [], []
        if data.t is not None:
            cols.append(data.t[:, None])
            header.append("t")
        for k in kinds:
            cols.append(getattr(data, k))
            header += [f"{k}:{j}" for j in data.joint_names]
        np.savetxt(path, np.concatenate(cols, 1), delimiter=",", header=",".join(header), comments="", fmt="%.17g")
    else:
        raise ValueError(f"save_data: unknown format '{ext}' for {path} (use .npz or .csv)")


def split_holdout(data: SysIdData, fraction: float):
    """``(train, holdout)``: the last ``fraction`` of the samples (contiguous in time, so the
    held-out torques are not interpolations of neighbouring training samples) are held out."""
    if not 0.0 <= fraction < 1.0:
        raise ValueError(f"split_holdout: fraction must be in [0, 1), got {fraction}")
    T = len(data)
    n_test = int(round(fraction * T))
    return data.subset(slice(0, T - n_test)), data.subset(slice(T - n_test, T))


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


# ------------------------------------------------------------------------------------------
# parametrisations and physical consistency
# ------------------------------------------------------------------------------------------


def parameters_to_pseudo_inertia(pi) -> jnp.ndarray:
    """``(..., 10)`` inertial parameters -> ``(..., 4, 4)`` pseudo-inertia
    ``[[Sigma, h], [h^T, m]]`` with ``Sigma = tr(Ibar)/2 1 - Ibar`` (seed 004 (1.26))."""
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
    return jnp.concatenate([m[..., None], h, jnp.stack([Ib[..., 0, 0], Ib[..., 0, 1], Ib[..., 1, 1],
                                                       Ib[..., 0, 2], Ib[..., 1, 2], Ib[..., 2, 2]], -1)], -1)


def log_cholesky_to_pseudo_inertia(theta) -> jnp.ndarray:
    """``(..., 10)`` log-Cholesky coordinates ``(alpha, d1, d2, d3, s12, s23, s13, t1, t2, t3)`` ->
    ``J = U U^T`` (Rucker & Wensing 2022, eq. (11)); positive definite for every ``theta``."""
    theta = jnp.asarray(theta)
    a, d1, d2, d3, s12, s23, s13, t1, t2, t3 = (theta[..., i] for i in range(10))
    z = jnp.zeros_like(a)
    o = jnp.ones_like(a)
    U = jnp.stack([
        jnp.stack([jnp.exp(d1), s12, s13, t1], -1),
        jnp.stack([z, jnp.exp(d2), s23, t2], -1),
        jnp.stack([z, z, jnp.exp(d3), t3], -1),
        jnp.stack([z, z, z, o], -1),
    ], -2) * jnp.exp(a)[..., None, None]
    return U @ jnp.swapaxes(U, -1, -2)


def pseudo_inertia_to_log_cholesky(J) -> jnp.ndarray:
    """Inverse of :func:`log_cholesky_to_pseudo_inertia` for positive-definite ``J``: the
    upper-triangular factor is ``U = P L P`` with ``L L^T = P J P`` (Cholesky) and ``P`` the
    exchange matrix. NaN for a ``J`` that is not positive definite."""
    J = jnp.asarray(J)
    P = jnp.eye(4, dtype=J.dtype)[::-1]
    L = jnp.linalg.cholesky(P @ J @ P)
    U = P @ L @ P
    ea = U[..., 3, 3]
    V = U / ea[..., None, None]
    return jnp.stack([jnp.log(ea), jnp.log(V[..., 0, 0]), jnp.log(V[..., 1, 1]), jnp.log(V[..., 2, 2]),
                      V[..., 0, 1], V[..., 1, 2], V[..., 0, 2], V[..., 0, 3], V[..., 1, 3], V[..., 2, 3]], -1)


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


def physical_consistency(params, body_names: Optional[Sequence[str]] = None, tol: float = 0.0) -> list:
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
            Ic = Ibar - m * (c @ c * np.eye(3) - np.outer(c, c))
            ev = np.linalg.eigvalsh(Ic)
            tri = float((ev[0] + ev[1] - ev[2]) / max(abs(ev[2]), 1e-300))
        else:
            c, ev, tri = np.full(3, np.nan), np.full(3, np.nan), float("nan")
        ok = bool(m > 0 and eJ[0] > tol * max(eJ[-1], 0.0))
        out.append(BodyConsistency(body_names[b], float(m), tuple(map(float, c)), tuple(map(float, ev)),
                                   float(eJ[0]), tri, ok))
    return out


def is_physically_consistent(params, tol: float = 0.0) -> bool:
    """True when every body passes :func:`physical_consistency`."""
    return all(r.consistent for r in physical_consistency(params, tol=tol))


# ------------------------------------------------------------------------------------------
# regressors
# ------------------------------------------------------------------------------------------

_batched_regressor = jax.jit(jax.vmap(regressor, in_axes=(None, 0, 0, 0)))


def _chunked(fn_args, chunk, mesh):
    """Evaluate the batched regressor over ``fn_args = (model, q, qd, qdd)`` numpy arrays in
    chunks of a fixed size (a multiple of the device count: one compiled program), sharded."""
    model, q, qd, qdd = fn_args
    mesh = parallel.batch_mesh() if mesh is None else mesh
    ndev = mesh.devices.size
    chunk = -(-chunk // ndev) * ndev
    model_r = parallel.replicate(model, mesh)
    out = []
    dt = model.dtype
    for s in range(0, q.shape[0], chunk):
        part = tuple(jnp.asarray(a[s:s + chunk], dt) for a in (q, qd, qdd))
        part, n = parallel.pad_batch(part, chunk) if part[0].shape[0] < chunk else (part, chunk)
        part = parallel.shard_batch(part, mesh)
        Y = _batched_regressor(model_r, *part)
        out.append(np.asarray(Y, np.float64)[:n])
    return np.concatenate(out, 0)


def regressor_rows(model: Model, data: SysIdData, *, friction: bool = False, chunk: int = 256, mesh=None):
    """``(Y, y)``: regressors ``(T, n, p)`` and targets ``tau - armature * qdd`` ``(T, n)`` (numpy
    float64). ``p = 10 nb`` (+ ``2 n`` with ``friction``: columns ``qd_j`` and ``sign(qd_j)`` on
    joint ``j``'s row). Evaluated in ``model.dtype``, sharded over ``mesh`` (default: all
    devices)."""
    check_model(model, "regressor_rows")
    if data.q.shape[1] != model.nv:
        raise ValueError(f"regressor_rows: data has {data.q.shape[1]} joints, model '{model.name}' has {model.nv}")
    Y = _chunked((model, data.q, data.qd, data.qdd), chunk, mesh)
    y = data.tau - np.asarray(model.armature, np.float64) * data.qdd
    if friction:
        eye = np.eye(model.nv)
        Yf = np.concatenate([data.qd[:, :, None] * eye, np.sign(data.qd)[:, :, None] * eye], -1)
        Y = np.concatenate([Y, Yf], -1)
    return Y, y


def structural_base(model: Model, *, seed: int = 0, n_samples: int = 256, rtol: Optional[float] = None, mesh=None):
    """``(B, s)``: orthonormal basis ``(r, 10 nb)`` of the identifiable (base) parameter space
    (the row space of regressors stacked over random states: ``Y == (Y B^T) B``) and the singular
    values. Like :func:`jaxdyn.base_parameters` (random states: joints uniform within their limits,
    velocities and accelerations standard normal), but reuses this module's compiled regressor."""
    check_model(model, "structural_base")
    rtol = (1e-9 if model.dtype == jnp.float64 else 1e-4) if rtol is None else rtol
    rng = np.random.default_rng(seed)
    lo, hi = np.asarray(model.q_lower, np.float64), np.asarray(model.q_upper, np.float64)
    rev = np.array([t != "prismatic" for t in model.joint_types])
    ok = np.isfinite(lo) & np.isfinite(hi) & (hi > lo)
    lo = np.where(ok, lo, np.where(rev, -np.pi, -1.0))
    hi = np.where(ok, hi, np.where(rev, np.pi, 1.0))
    q = lo + (hi - lo) * rng.random((n_samples, model.nq))
    qd, qdd = rng.standard_normal((2, n_samples, model.nv))
    Y = _chunked((model, q, qd, qdd), n_samples, mesh)
    _, s, Vt = np.linalg.svd(Y.reshape(-1, Y.shape[-1]), full_matrices=False)
    r = int(np.sum(s > rtol * s[0]))
    return Vt[:r], s


# ------------------------------------------------------------------------------------------
# estimators
# ------------------------------------------------------------------------------------------


@dataclasses.dataclass
class Identification:
    """Result of an identification.

    model: the nominal model with the identified masses/COMs/inertias (and ``damping``/``friction``
      when friction was identified); None when the inertial parameters have a non-positive mass.
    parameters: ``(nb, 10)`` identified inertial parameters; base: ``B`` ``(r, 10 nb)``;
    beta: ``B @ parameters.ravel()``; damping, coulomb: ``(n,)`` or None;
    consistency: :func:`physical_consistency` of ``parameters``; info: method-specific extras
    (``rank``, ``cond`` for least squares, ``loss`` history for gradient).
    """

    method: str
    model: Optional[Model]
    parameters: np.ndarray
    base: np.ndarray
    beta: np.ndarray
    damping: Optional[np.ndarray]
    coulomb: Optional[np.ndarray]
    consistency: list
    info: dict

    @property
    def consistent(self) -> bool:
        return all(r.consistent for r in self.consistency)


def _min_rows(model, data, n_params, fn):
    rows = len(data) * model.nv
    if rows < n_params:
        raise ValueError(f"{fn}: {len(data)} samples x {model.nv} joints = {rows} equations are fewer than the "
                         f"{n_params} parameters to identify; record at least {-(-n_params // model.nv)} samples")


def _result(method, model, pi, B, friction_vec, info):
    nv = model.nv
    d = c = None
    if friction_vec is not None:
        d, c = np.asarray(friction_vec[:nv]), np.asarray(friction_vec[nv:])
    cons = physical_consistency(pi, model.body_names)
    new = None
    if np.all(pi[:, 0] > 0):
        new = model_with_parameters(model, jnp.asarray(pi, model.dtype))
        if d is not None:
            new = new.replace(damping=jnp.asarray(d, model.dtype), friction=jnp.asarray(c, model.dtype))
    return Identification(method, new, pi, B, B @ pi.ravel(), d, c, cons, info)


def identify_ls(model: Model, data: SysIdData, *, friction: bool = False, base=None, rows=None,
                rcond: float = 1e-10, mesh=None) -> Identification:
    """Least squares on the base parameters (module docstring). ``base``: ``B`` from
    :func:`structural_base` (computed if None); ``rows``: precomputed :func:`regressor_rows`.
    ``info`` holds the numerical ``rank`` and condition number ``cond`` of the base regressor and
    ``sigma`` (residual standard deviation), ``normal_matrix`` ``W^T W`` of the base regressor
    ``W`` (``sigma^2 (W^T W)^-1`` is the estimate's covariance under white noise) and ``devices``
    (the regressors were evaluated on that many devices of ``mesh``, default: all)."""
    check_model(model, "identify_ls")
    mesh = parallel.batch_mesh() if mesh is None else mesh
    B = structural_base(model, mesh=mesh)[0] if base is None else np.asarray(base)
    r = B.shape[0]
    nf = 2 * model.nv if friction else 0
    _min_rows(model, data, r + nf, "identify_ls")
    Y, y = regressor_rows(model, data, friction=friction, mesh=mesh) if rows is None else rows
    p = 10 * model.nb
    A = Y.reshape(-1, Y.shape[-1])
    b = y.reshape(-1)
    W = np.concatenate([A[:, :p] @ B.T, A[:, p:]], 1)
    pi0 = np.asarray(inertial_parameters(model), np.float64).ravel()
    x0 = np.concatenate([B @ pi0, np.zeros(nf)])
    if friction:
        x0[r:] = np.concatenate([np.asarray(model.damping), np.asarray(model.friction)])
    # solve for the change from the prior: the minimum-norm solution keeps unexcited directions
    dx, _, rank, sv = np.linalg.lstsq(W, b - W @ x0, rcond=rcond)
    x = x0 + dx
    beta = x[:r]
    pi = (pi0 + B.T @ (beta - B @ pi0)).reshape(model.nb, 10)
    res = b - W @ x
    dof = max(W.shape[0] - rank, 1)
    info = {"rank": int(rank), "n_base": r, "cond": float(sv[0] / sv[-1]) if sv[-1] > 0 else float("inf"),
            "sigma": float(np.sqrt(res @ res / dof)), "normal_matrix": W.T @ W,
            "devices": int(mesh.devices.size)}
    return _result("ls", model, pi, B, x[r:] if friction else None, info)


class ProgressBar:
    """A plain-text progress bar on stderr (or ``stream``): ``update(done, total, loss)``."""

    def __init__(self, label: str = "", width: int = 30, stream=None):
        self.label, self.width, self.stream = label, width, sys.stderr if stream is None else stream

    def __call__(self, done: int, total: int, loss: float):
        k = int(self.width * done / max(total, 1))
        self.stream.write(f"\r{self.label} [{'#' * k}{'.' * (self.width - k)}] {done}/{total} loss {loss:.4e}")
        if done >= total:
            self.stream.write("\n")
        self.stream.flush()


@functools.lru_cache(maxsize=16)
def _gradient_step_fn(nv, friction, steps, learning_rate, reg, method):
    """``(optimizer, run, loss_fn)``: a jitted optimisation loop of a static number of steps
    (``lax.scan``), cached so that repeated fits with the same settings compile once."""
    import optax

    if method == "lbfgs":
        optimizer = optax.lbfgs(memory_size=20)
    elif method == "adam":
        optimizer = optax.adam(optax.cosine_decay_schedule(learning_rate, max(steps, 1), alpha=0.01))
    else:
        raise ValueError(f"identify_gradient: optimizer must be 'lbfgs' or 'adam', got {method!r}")

    def loss_fn(params, Y, y, w, mask, scale, J0inv, logdetJ0):
        theta = params["theta"]
        pi = log_cholesky_to_parameters(theta).reshape(-1)
        x = jnp.concatenate([pi, params["fric"]]) if friction else pi
        r = (jnp.einsum("tjp,p->tj", Y, x) - y) * w
        data = jnp.sum(mask[:, None] * r * r) / (jnp.sum(mask) * nv) / scale
        J = log_cholesky_to_pseudo_inertia(theta)
        logdetJ = 8.0 * theta[:, 0] + 2.0 * jnp.sum(theta[:, 1:4], -1)
        div = jnp.einsum("bij,bji->b", J0inv, J) - (logdetJ - logdetJ0) - 4.0
        return data + reg * jnp.sum(div), data

    def run(params, opt_state, n, *args):
        f = lambda p: loss_fn(p, *args)[0]
        vg = optax.value_and_grad_from_state(f) if method == "lbfgs" else jax.value_and_grad(f)

        def body(carry, _):
            params, opt_state = carry
            if method == "lbfgs":
                loss, g = vg(params, state=opt_state)
                upd, opt_state = optimizer.update(g, opt_state, params, value=loss, grad=g, value_fn=f)
            else:
                loss, g = vg(params)
                upd, opt_state = optimizer.update(g, opt_state, params)
            return (optax.apply_updates(params, upd), opt_state), loss

        (params, opt_state), losses = jax.lax.scan(body, (params, opt_state), None, length=n)
        return params, opt_state, losses

    return optimizer, jax.jit(run, static_argnums=2), jax.jit(loss_fn)


def identify_gradient(model: Model, data: SysIdData, *, friction: bool = False, steps: int = 2000,
                      learning_rate: float = 1e-2, reg: float = 1e-6, init=None, base=None, rows=None,
                      weights=None, optimizer: str = "lbfgs", chunk_steps: int = 50,
                      progress: Optional[Callable] = None,
                      mesh=None) -> Identification:
    """Gradient-based identification under the log-Cholesky parametrisation (module docstring).

    Args:
      model: nominal model; its inertial parameters are the prior (regularisation target) and, if
        ``init`` is None, the starting point.
      data: training samples. friction: identify viscous and Coulomb coefficients (start: the
        model's ``damping``/``friction``).
      steps: optimiser iterations. optimizer: ``"lbfgs"`` (optax L-BFGS with a zoom line search;
        default, robust to the poor conditioning of inertial parameters) or ``"adam"`` (with a
        cosine decay of ``learning_rate`` to 1%; ``learning_rate`` is unused by L-BFGS).
      reg: weight of the log-det divergence to the prior (relative to the normalised torque MSE,
        which is 1 for zero predicted torque).
      init: ``(nb, 10)`` starting parameters (physically consistent), e.g. a least-squares result.
      weights: ``(n,)`` per-joint residual weights (default 1).
      progress: ``callable(done, total, loss)`` called every ``chunk_steps`` steps
        (e.g. :class:`ProgressBar`).
      mesh: device mesh for the sharded loss (default: all devices).

    Every body of the result is physically consistent by construction (up to round-off).
    """
    check_model(model, "identify_gradient")
    nv, nb = model.nv, model.nb
    nf = 2 * nv if friction else 0
    mesh = parallel.batch_mesh() if mesh is None else mesh
    B = structural_base(model, mesh=mesh)[0] if base is None else np.asarray(base)
    _min_rows(model, data, B.shape[0] + nf, "identify_gradient")
    Y, y = regressor_rows(model, data, friction=friction, mesh=mesh) if rows is None else rows
    dt = model.dtype
    w = np.ones(nv) if weights is None else np.asarray(weights, np.float64)
    if w.shape != (nv,):
        raise ValueError(f"identify_gradient: weights has shape {w.shape}, expected ({nv},)")
    scale = float(np.mean((y * w) ** 2)) or 1.0

    pi0 = np.asarray(inertial_parameters(model), np.float64)
    J0 = np.asarray(parameters_to_pseudo_inertia(jnp.asarray(pi0)), np.float64)
    # a body with no mass of its own (e.g. a massless link between two joints) has a singular
    # prior pseudo-inertia: regularise it with a tiny isotropic term so the divergence is defined
    eps = 1e-9 * max(1.0, float(np.max(np.abs(J0))))
    ev = np.linalg.eigvalsh(J0)[:, 0]
    J0 = J0 + np.where(ev <= eps, eps, 0.0)[:, None, None] * np.eye(4)
    start = pi0 if init is None else np.asarray(init, np.float64).reshape(nb, 10)
    Js = np.asarray(parameters_to_pseudo_inertia(jnp.asarray(start)), np.float64)
    bad = [model.body_names[b] for b in range(nb) if np.linalg.eigvalsh(Js[b])[0] <= 0 and init is not None]
    if bad:
        raise ValueError(f"identify_gradient: init is not physically consistent for bodies {bad}")
    Js = np.where((np.linalg.eigvalsh(Js)[:, 0] <= eps)[:, None, None], J0, Js)
    theta0 = np.asarray(pseudo_inertia_to_log_cholesky(jnp.asarray(Js)), np.float64)
    params = {"theta": jnp.asarray(theta0, dt)}
    if friction:
        params["fric"] = jnp.asarray(np.concatenate([np.asarray(model.damping), np.asarray(model.friction)]), dt)

    T = Y.shape[0]
    (Yp, yp, mask), _ = parallel.pad_batch((jnp.asarray(Y, dt), jnp.asarray(y, dt), jnp.ones(T, dt)), mesh.devices.size)
    mask = mask.at[T:].set(0.0)
    Yp, yp, mask = parallel.shard_batch((Yp, yp, mask), mesh)
    const = parallel.replicate(
        (jnp.asarray(w, dt), jnp.asarray(scale, dt), jnp.asarray(np.linalg.inv(J0), dt),
         jnp.asarray(np.linalg.slogdet(J0)[1], dt)), mesh)
    params = parallel.replicate(params, mesh)

    if optimizer == "adam":
        key = (int(steps), float(learning_rate))
    else:  # L-BFGS ignores both: share one compiled loop across step counts
        key = (0, 0.0)
    optimizer, run, loss_fn = _gradient_step_fn(nv, friction, *key, float(reg), optimizer)
    opt_state = optimizer.init(params)
    chunk_steps = max(1, min(chunk_steps, steps))
    history, done = [], 0
    if progress is not None:
        progress(0, steps, float(loss_fn(params, Yp, yp, const[0], mask, const[1], const[2], const[3])[0]))
    while done < steps:
        n = min(chunk_steps, steps - done)
        params, opt_state, losses = run(params, opt_state, n, Yp, yp, const[0], mask, const[1], const[2], const[3])
        history.append(np.asarray(losses))
        done += n
        if progress is not None:
            progress(done, steps, float(history[-1][-1]))
    pi = np.asarray(log_cholesky_to_parameters(params["theta"]), np.float64)
    fr = np.asarray(params["fric"], np.float64) if friction else None
    info = {"loss": np.concatenate(history) if history else np.zeros(0), "theta": np.asarray(params["theta"]),
            "devices": int(mesh.devices.size)}
    return _result("gradient", model, pi, B, fr, info)


def identify(model: Model, data: SysIdData, method: str = "both", *, friction: bool = False,
             progress: Optional[Callable] = None, **gradient_kwargs) -> dict:
    """Run ``method`` (``"ls"``, ``"gradient"`` or ``"both"``) sharing one regressor stack.
    Returns ``{"ls": Identification, "gradient": Identification}`` (the ones run). With
    ``"both"`` the gradient fit starts from the least-squares estimate when that is physically
    consistent, else from the nominal model."""
    if method not in ("ls", "gradient", "both"):
        raise ValueError(f"identify: method must be 'ls', 'gradient' or 'both', got {method!r}")
    check_model(model, "identify")
    B = structural_base(model)[0]
    rows = regressor_rows(model, data, friction=friction)
    out = {}
    if method in ("ls", "both"):
        out["ls"] = identify_ls(model, data, friction=friction, base=B, rows=rows)
    if method in ("gradient", "both"):
        init = out["ls"].parameters if method == "both" and out["ls"].consistent else None
        out["gradient"] = identify_gradient(model, data, friction=friction, base=B, rows=rows, init=init,
                                            progress=progress, **gradient_kwargs)
    return out


# ------------------------------------------------------------------------------------------
# evaluation
# ------------------------------------------------------------------------------------------


def predict_torques(parameters, data: SysIdData, model: Model, *, damping=None, coulomb=None, rows=None) -> np.ndarray:
    """Predicted torques ``(T, n)`` for ``parameters`` (``(nb, 10)``) on ``data``:
    ``Y pi + armature qdd (+ damping qd + coulomb sign(qd))``. ``rows``: precomputed
    :func:`regressor_rows` without friction columns."""
    Y, _ = regressor_rows(model, data) if rows is None else rows
    p = 10 * model.nb
    tau = Y[..., :p] @ np.asarray(parameters, np.float64).ravel() + np.asarray(model.armature, np.float64) * data.qdd
    if damping is not None:
        tau = tau + np.asarray(damping) * data.qd
    if coulomb is not None:
        tau = tau + np.asarray(coulomb) * np.sign(data.qd)
    return tau


def torque_rmse(predicted, data: SysIdData) -> np.ndarray:
    """Per-joint root-mean-square torque error ``(n,)``."""
    return np.sqrt(np.mean((np.asarray(predicted) - data.tau) ** 2, 0))


# ------------------------------------------------------------------------------------------
# command line: ``jaxdyn identify``
# ------------------------------------------------------------------------------------------


def add_cli_arguments(p):
    """Arguments of ``jaxdyn identify`` (added to an ``argparse`` parser)."""
    p.add_argument("urdf", help="nominal URDF (fixed base, 1-dof joints)")
    p.add_argument("data", help="measurements: .npz or .csv (format: python -c 'import jaxdyn.sysid; help(jaxdyn.sysid)')")
    p.add_argument("--out", required=True, help="identified URDF to write (must differ from the input)")
    p.add_argument("--method", choices=("ls", "gradient", "both"), default="both",
                   help="least squares on base parameters, physically consistent gradient fit, or both (default)")
    p.add_argument("--holdout", type=float, default=0.2, help="fraction of samples (the last ones) held out (default 0.2)")
    p.add_argument("--plots", default=None, help="directory for PNG plots of predicted vs measured torques")
    p.add_argument("--steps", type=int, default=500, help="gradient-fit iterations (default 500)")
    p.add_argument("--reg", type=float, default=1e-6, help="weight of the divergence to the nominal model (default 1e-6)")
    p.add_argument("--friction", action="store_true", help="also identify viscous and Coulomb joint friction")
    p.add_argument("--dt", type=float, default=None, help="sample period [s] when the data has no time stamps")
    p.add_argument("--window", type=int, default=31, help="Savitzky-Golay window (samples) for missing qd/qdd")


def run_cli(args) -> int:
    """``jaxdyn identify``: returns the exit status (0 ok, 2 bad input, 3 no consistent result)."""
    from .cli import x64_context

    if os.path.exists(args.urdf) and os.path.realpath(args.out) == os.path.realpath(args.urdf):
        print(f"jaxdyn identify: --out {args.out} is the input URDF; choose another path", file=sys.stderr)
        return 2
    with x64_context(True):
        try:
            return _run_cli(args)
        except ValueError as e:  # URDFError is a ValueError
            print(f"jaxdyn identify: error: {e}", file=sys.stderr)
            return 2


def _run_cli(args) -> int:
    from .io.urdf import load_urdf
    from .io.urdf_write import write_urdf

    model = load_urdf(args.urdf, dtype=jnp.float64)
    check_model(model, "jaxdyn identify")
    data = load_data(args.data, model, dt=args.dt, window=args.window)
    train, test = split_holdout(data, args.holdout)
    if len(test) == 0:
        test = train
    print(f"model '{model.name}': {model.nv} joints, {model.nb} bodies; data: {len(data)} samples"
          f"{' (' + '/'.join(data.estimated) + ' estimated by Savitzky-Golay)' if data.estimated else ''}; "
          f"{len(train)} for fitting, {len(test)} held out")
    results = identify(model, train, args.method, friction=args.friction, steps=args.steps, reg=args.reg,
                       progress=ProgressBar("gradient fit", stream=sys.stderr))
    first = next(iter(results.values()))
    print(f"base parameters: {first.base.shape[0]} of {10 * model.nb}")
    if "ls" in results:
        i = results["ls"].info
        print(f"least squares: rank {i['rank']}/{i['n_base'] + (2 * model.nv if args.friction else 0)}, "
              f"condition number {i['cond']:.3g}, residual std {i['sigma']:.4g}")

    rows = regressor_rows(model, test)
    pi0 = np.asarray(inertial_parameters(model), np.float64)
    fr0 = dict(damping=np.asarray(model.damping), coulomb=np.asarray(model.friction)) if args.friction else {}
    preds = {"nominal": predict_torques(pi0, test, model, rows=rows, **fr0)}
    for k, r in results.items():
        preds[k] = predict_torques(r.parameters, test, model, damping=r.damping, coulomb=r.coulomb, rows=rows)
    rmse = {k: torque_rmse(v, test) for k, v in preds.items()}
    w = max(10, max(len(j) for j in model.joint_names) + 2)
    print(f"\nheld-out torque RMSE [N m or N]:\n{'joint':<{w}}" + "".join(f"{k:>14}" for k in rmse))
    for j, name in enumerate(model.joint_names):
        print(f"{name:<{w}}" + "".join(f"{v[j]:>14.5g}" for v in rmse.values()))
    print(f"{'all':<{w}}" + "".join(f"{np.sqrt(np.mean(v ** 2)):>14.5g}" for v in rmse.values()))

    final = results.get("gradient", results.get("ls"))
    print(f"\nphysical consistency ({final.method}):")
    for c in final.consistency:
        print(f"  {c.body:<{w}} m={c.mass:<10.4g} min eig(J)={c.min_eig_J:<11.3e} "
              f"{'ok' if c.consistent else 'NOT CONSISTENT'}")
    if not final.consistent:
        bad = [c.body for c in final.consistency if not c.consistent]
        print(f"jaxdyn identify: the {final.method} estimate is not physically consistent for {', '.join(bad)}; "
              "no URDF written (use --method gradient or both)", file=sys.stderr)
        return 3
    write_urdf(args.urdf, final.model, args.out, dynamics=args.friction)
    back = np.asarray(inertial_parameters(load_urdf(args.out, dtype=jnp.float64)))
    print(f"wrote {args.out} ({final.method}); re-loaded parameters differ by at most "
          f"{np.max(np.abs(back - final.parameters)):.2e}")
    if args.plots:
        paths = plot_torques(test, preds, args.plots)
        print(f"plots: {', '.join(paths)}")
    return 0


def plot_torques(data: SysIdData, predictions: dict, directory) -> list:
    """One PNG per joint in ``directory``: measured torques and each of ``predictions``
    (``{label: (T, n)}``) against time. Returns the paths. Draws on a ``Figure`` (Agg canvas), so
    the user's matplotlib backend is left alone."""
    from matplotlib.figure import Figure

    os.makedirs(directory, exist_ok=True)
    t = data.t if data.t is not None else np.arange(len(data))
    paths = []
    for j, name in enumerate(data.joint_names):
        fig = Figure(figsize=(8, 3.2), tight_layout=True)
        ax = fig.add_subplot()
        ax.plot(t, data.tau[:, j], color="0.6", lw=2.0, label="measured")
        for k, v in predictions.items():
            e = np.sqrt(np.mean((v[:, j] - data.tau[:, j]) ** 2))
            ax.plot(t, v[:, j], lw=1.0, ls="--" if k == "nominal" else "-", label=f"{k} (RMSE {e:.3g})")
        ax.set_xlabel("t [s]" if data.t is not None else "sample")
        ax.set_ylabel("torque")
        ax.set_title(f"{name}: predicted vs measured (held out)")
        ax.legend(fontsize=8, loc="upper right")
        path = os.path.join(directory, f"torque_{name}.png")
        fig.savefig(path, dpi=90)
        paths.append(path)
    return paths
