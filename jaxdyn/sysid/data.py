"""Identification data: loading (NPZ/CSV), saving, derivative estimation, hold-out splits."""

from __future__ import annotations

import csv
import dataclasses
import math
import os
from typing import Optional

import numpy as np

from ..model import Model

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

