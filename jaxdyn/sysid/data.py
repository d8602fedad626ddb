"""Identification data: loading (NPZ/CSV), saving, signal processing, hold-out splits.

Recorded joint data hold positions and torques only. :func:`preprocess` turns them into the
samples the estimators use, following the identification literature (Gautier & Khalil;
Swevers et al. 1997; Gaz et al. 2019):

1. **Zero-phase low-pass filter of q** (Butterworth, ``scipy.signal.butter`` in second-order
   sections, applied forward and backward with ``scipy.signal.sosfiltfilt``: no phase lag, squared
   magnitude response ``1 / (1 + (f / f_c)^(2 order))^2``).
2. **Cut-off** ``f_c = cutoff_factor * bandwidth`` (default factor 5), where ``bandwidth`` is the
   excitation bandwidth: given (e.g. the highest harmonic of a known Fourier excitation), or
   estimated from the data by :func:`excitation_bandwidth` (the highest frequency at which the
   Blackman-Harris periodogram of q stands 40 dB above its noise floor). At ``bandwidth`` a 4th
   order filter passes ``1 - 5e-6`` of the signal, while the noise of the second derivative grows
   like ``f_c^(5/2)``, so a factor of a few keeps the excited band intact and the noise low.
   Clipped to 0.45 times the sampling rate.
3. **Derivatives** by central differences of the filtered q:
   ``qd_k = (q_{k+1} - q_{k-1}) / (2 dt)``, ``qdd_k = (q_{k+1} - 2 q_k + q_{k-1}) / dt^2``.
4. **Parallel filtering**: the same filter is applied to tau (and, by the estimators, to the
   friction columns of the regressor, through :attr:`SysIdData.preprocessing`), so both sides of
   ``tau = Y pi`` see the same filter and the unmodelled high-frequency content of the torque
   (noise, the steps of Coulomb friction) is treated alike on both sides.
5. **Edges**: ``edge`` samples are dropped at each end, the length over which the impulse response
   of the (one-pass) filter decays below 1e-3 of its peak (the filter is also run on that many
   padding samples, odd extension, so its start-up transient dies out before the kept samples).
6. **Decimation** by ``floor(0.4 rate / f_c)``: the kept samples' Nyquist frequency is then at
   least ``f_c / 0.8`` (the rule of Matlab's ``decimate``, used by Gautier for parallel
   filtering), so the band the filter passes is sampled without aliasing while the filtered noise
   is close to white at the kept rate, as ``cov = sigma^2 (W^T W)^-1`` assumes.

The Savitzky-Golay filter (a local least-squares polynomial, Savitzky & Golay 1964) stays
available (``filter="savgol"``, ``scipy.signal.savgol_filter``).
"""

from __future__ import annotations

import csv
import dataclasses
import math
import os
from typing import Any

import numpy as np

from .. import joints
from .._files import replace_atomically
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
    t: np.ndarray | None
    joint_names: tuple
    estimated: tuple = ()
    preprocessing: Preprocessing | None = None

    def __len__(self):
        return self.q.shape[0]

    def subset(self, idx) -> SysIdData:
        """The samples ``idx`` (a slice or index array)."""
        pre = None if self.preprocessing is None else self.preprocessing.subset(idx)
        return dataclasses.replace(
            self,
            q=self.q[idx],
            qd=self.qd[idx],
            qdd=self.qdd[idx],
            tau=self.tau[idx],
            t=None if self.t is None else self.t[idx],
            preprocessing=pre,
        )


def check_model(model: Model, fn: str = "sysid"):
    """Raise unless ``model`` is fixed-base with 1-dof joints (:func:`jaxdyn.joints.one_dof`)."""
    if model.floating_base:
        raise ValueError(
            f"{fn}: model '{model.name}' has a floating base; identification from joint "
            "data supports fixed-base models only (load with floating_base=False)"
        )
    one = joints.one_dof(model.joint_types)
    bad = [(n, t) for n, t, o in zip(model.joint_names, model.joint_types, one) if not o]
    if bad:
        raise ValueError(
            f"{fn}: joint '{bad[0][0]}' of model '{model.name}' is {bad[0][1]}; only 1-dof joints are supported"
        )


def savgol_derivative(x, dt: float, window: int, polyorder: int = 3, deriv: int = 1) -> np.ndarray:
    """``deriv``-th time derivative (``deriv=0``: the smoothed signal) of uniformly sampled ``x``
    ``(T, ...)`` by a Savitzky-Golay filter (``scipy.signal.savgol_filter``): a least-squares
    polynomial of degree ``polyorder`` fitted to the ``window`` samples around each one,
    differentiated at the sample (the first/last ``window // 2`` samples use the first/last full
    window, evaluated off-centre)."""
    from scipy.signal import savgol_filter

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
    return savgol_filter(x, window, polyorder, deriv=deriv, delta=dt, axis=0, mode="interp")


# ------------------------------------------------------------------------------------------
# signal processing: zero-phase Butterworth filtering, central differences, decimation
# ------------------------------------------------------------------------------------------


@dataclasses.dataclass
class Preprocessing:
    """How a recording was turned into identification samples (see the module docstring).

    method: ``"butterworth"`` or ``"savgol"``; rate: sampling rate of the recording [Hz];
    cutoff [Hz], order: of the Butterworth filter; bandwidth [Hz]: the excitation bandwidth the
    cut-off was derived from (None when the cut-off was given); cutoff_factor; rule: how the
    cut-off was chosen, in words; window, polyorder: of the Savitzky-Golay filter; decimation:
    one sample in ``decimation`` kept; edge: samples dropped at each end of the recording;
    filter_tau: the same filter was applied to tau (parallel filtering); index: positions of the
    kept samples in the recording; qd_full: the estimated velocity at every recorded sample (for
    the parallel filtering of friction columns); sos: the Butterworth second-order sections.
    """

    method: str
    rate: float
    decimation: int
    edge: int
    filter_tau: bool
    index: np.ndarray
    qd_full: np.ndarray
    n_recorded: int
    cutoff: float | None = None
    order: int | None = None
    bandwidth: float | None = None
    cutoff_factor: float | None = None
    rule: str = ""
    window: int | None = None
    polyorder: int | None = None
    sos: np.ndarray | None = None

    def smooth(self, x) -> np.ndarray:
        """The filter applied to q (and tau), at the recorded rate, along axis 0 of ``x``."""
        x = np.asarray(x, np.float64)
        if self.method == "butterworth":
            return zero_phase(x, self.sos, self.edge)
        assert self.window is not None and self.polyorder is not None  # set by the Savitzky-Golay filter
        return savgol_derivative(x, 1.0 / self.rate, self.window, self.polyorder, 0)

    def parallel(self, x_full) -> np.ndarray:
        """``x_full`` (recorded rate, ``(n_recorded, ...)``) filtered like tau, at the kept samples."""
        x_full = np.asarray(x_full, np.float64)
        if x_full.shape[0] != self.n_recorded:
            raise ValueError(f"Preprocessing.parallel: {x_full.shape[0]} samples, the recording has {self.n_recorded}")
        return (self.smooth(x_full) if self.filter_tau else x_full)[self.index]

    def subset(self, idx) -> Preprocessing:
        return dataclasses.replace(self, index=self.index[idx])

    def describe(self) -> str:
        """The choices, in words (what ``jaxdyn identify`` prints)."""
        if self.method == "butterworth":
            f = (
                f"zero-phase Butterworth low-pass (scipy.signal.sosfiltfilt), order {self.order}, "
                f"cut-off {self.cutoff:.4g} Hz ({self.rule})"
            )
        else:
            f = f"Savitzky-Golay (scipy.signal.savgol_filter), window {self.window} samples, degree {self.polyorder}"
        kept = self.rate / self.decimation
        deriv = "central differences of the filtered q" if self.method == "butterworth" else "of the local polynomial"
        return (
            f"{f}; derivatives: {deriv}; "
            f"tau {'filtered alike (parallel filtering)' if self.filter_tau else 'not filtered'}; "
            f"decimation {self.decimation} ({self.rate:.6g} Hz -> {kept:.4g} Hz); "
            f"{self.edge} samples dropped at each end; {len(self.index)} of {self.n_recorded} samples kept"
        )


def excitation_bandwidth(q, dt: float, *, snr_db: float = 40.0):
    """``(bandwidth, per_joint)`` [Hz]: for each joint, the highest frequency at which the
    periodogram of ``q`` (``scipy.signal.periodogram``, linear trend removed, 4-term
    Blackman-Harris window: sidelobes below -92 dB, so the leakage of the large low-frequency lines
    stays under the threshold) exceeds its noise floor by ``snr_db`` dB. The noise floor is the
    median of the periodogram over the upper half of the band (0.25 to 0.5 times the sampling
    rate), where a robot's excitation has no power. ``bandwidth`` is the largest over the joints.
    The estimate exceeds the highest excited frequency by up to the window's main-lobe half-width,
    4 frequency bins (``4 / duration``)."""
    from scipy.signal import periodogram

    q = np.asarray(q, np.float64)
    if q.ndim != 2 or q.shape[0] < 16:
        raise ValueError(f"excitation_bandwidth: q must be (T >= 16, n), got shape {q.shape}")
    fs = 1.0 / dt
    f, P = periodogram(q, fs=fs, window="blackmanharris", detrend="linear", axis=0)
    floor = np.median(P[f >= fs / 4], 0)
    floor = np.maximum(floor, np.finfo(np.float64).tiny)
    per_joint = np.zeros(q.shape[1])
    for j in range(q.shape[1]):
        above = np.nonzero(P[:, j] > floor[j] * 10 ** (snr_db / 10))[0]
        per_joint[j] = f[above.max()] if above.size else 0.0
    return float(per_joint.max()), per_joint


def butterworth_sos(cutoff: float, rate: float, order: int = 4) -> np.ndarray:
    """Second-order sections of a digital low-pass Butterworth filter (``scipy.signal.butter``)."""
    from scipy.signal import butter

    if not 0 < cutoff < rate / 2:
        raise ValueError(f"butterworth_sos: cut-off {cutoff} Hz must lie in (0, {rate / 2}) (half the sampling rate)")
    if order < 1:
        raise ValueError(f"butterworth_sos: order must be >= 1, got {order}")
    return butter(int(order), cutoff, btype="low", fs=rate, output="sos")


def filter_edge(sos, rtol: float = 1e-3) -> int:
    """Samples after which the impulse response of the (one-pass, causal) filter ``sos`` stays
    below ``rtol`` times its peak: the samples spoiled by start-up transients at each end."""
    from scipy.signal import sosfilt

    n = 256
    while True:
        imp = np.zeros(n)
        imp[0] = 1.0
        h = np.abs(sosfilt(sos, imp))
        big = np.nonzero(h > rtol * h.max())[0]
        if big.max() < n // 2 or n > 2**24:
            return int(big.max()) + 1
        n *= 4


def zero_phase(x, sos, edge: int) -> np.ndarray:
    """``x`` filtered forward and backward along axis 0 (``scipy.signal.sosfiltfilt``), padded at
    each end with ``edge`` samples (odd extension)."""
    from scipy.signal import sosfiltfilt

    x = np.asarray(x, np.float64)
    return sosfiltfilt(sos, x, axis=0, padlen=min(int(edge), x.shape[0] - 1))


def central_differences(x, dt: float):
    """``(xd, xdd)``: central differences along axis 0, ``(x_{k+1} - x_{k-1}) / (2 dt)`` and
    ``(x_{k+1} - 2 x_k + x_{k-1}) / dt^2``; the end samples repeat their neighbours' values
    (they fall in the dropped edges)."""
    x = np.asarray(x, np.float64)
    xd = np.empty_like(x)
    xdd = np.empty_like(x)
    xd[1:-1] = (x[2:] - x[:-2]) / (2 * dt)
    xdd[1:-1] = (x[2:] - 2 * x[1:-1] + x[:-2]) / dt**2
    xd[0], xd[-1], xdd[0], xdd[-1] = xd[1], xd[-2], xdd[1], xdd[-2]
    return xd, xdd


def default_decimation(cutoff: float, rate: float) -> int:
    """``max(1, floor(0.4 rate / cutoff))``: the largest factor whose Nyquist frequency
    ``rate / (2 k)`` is at least ``cutoff / 0.8``."""
    return max(1, int(math.floor(0.4 * rate / cutoff + 1e-9)))


def preprocess(
    q,
    tau,
    dt: float,
    *,
    filter: str = "butterworth",
    cutoff: float | None = None,
    cutoff_factor: float = 5.0,
    bandwidth: float | None = None,
    order: int = 4,
    decimation: int | None = None,
    edge: int | None = None,
    filter_tau: bool = True,
    window: int = 31,
    polyorder: int = 3,
):
    """Positions and torques of a recording -> ``(q, qd, qdd, tau, Preprocessing)`` at the kept
    samples (module docstring). Every choice can be overridden:

    filter: ``"butterworth"`` (zero-phase, central differences) or ``"savgol"``.
    cutoff [Hz]: Butterworth cut-off; default ``cutoff_factor * bandwidth``, with ``bandwidth``
      [Hz] given (e.g. the highest harmonic of a Fourier excitation) or estimated by
      :func:`excitation_bandwidth`. order: Butterworth order (default 4).
    decimation: keep one sample in this many (default :func:`default_decimation` for Butterworth,
      1 for Savitzky-Golay). edge: samples dropped at each end (default :func:`filter_edge`, at
      least 1; Savitzky-Golay: ``window // 2``).
    filter_tau: apply the same filter to tau (parallel filtering; default True).
    window, polyorder: of the Savitzky-Golay filter.
    """
    q = np.asarray(q, np.float64)
    tau = np.asarray(tau, np.float64)
    T = q.shape[0]
    rate = 1.0 / dt
    if filter == "butterworth":
        bw_used = None
        if cutoff is None:
            if bandwidth is None:
                bw_used = excitation_bandwidth(q, dt)[0]
                src = "estimated from the spectrum of q"
                if bw_used <= 0:
                    raise ValueError(
                        "preprocess: no excitation found in the spectrum of q (constant positions?); "
                        "give the cut-off or the excitation bandwidth"
                    )
            else:
                bw_used, src = float(bandwidth), "given"
            if not cutoff_factor > 0:
                raise ValueError(f"preprocess: cutoff_factor must be positive, got {cutoff_factor}")
            cut = min(cutoff_factor * bw_used, 0.45 * rate)
            rule = f"{cutoff_factor:g} x excitation bandwidth {bw_used:.4g} Hz ({src})" + (
                ", clipped to 0.45 x the sampling rate" if cut < cutoff_factor * bw_used else ""
            )
        else:
            cut, rule = float(cutoff), "given"
        sos = butterworth_sos(cut, rate, order)
        edge = max(1, filter_edge(sos)) if edge is None else int(edge)
        dec = default_decimation(cut, rate) if decimation is None else int(decimation)
        if T <= 2 * edge + 2:
            raise ValueError(
                f"preprocess: {T} samples are too few for a cut-off of {cut:.4g} Hz, which spoils "
                f"{edge} samples at each end; record longer or raise the cut-off"
            )
        qf = zero_phase(q, sos, edge)
        qd, qdd = central_differences(qf, dt)
        pre: dict[str, Any] = dict(
            method="butterworth",
            cutoff=cut,
            order=int(order),
            bandwidth=bw_used,
            cutoff_factor=cutoff_factor if cutoff is None else None,
            rule=rule,
            sos=sos,
        )
    elif filter == "savgol":
        if T < window:
            raise ValueError(f"preprocess: {T} samples are fewer than the derivative filter window {window}")
        qf = savgol_derivative(q, dt, window, polyorder, 0)
        qd = savgol_derivative(q, dt, window, polyorder, 1)
        qdd = savgol_derivative(q, dt, window, polyorder, 2)
        edge = window // 2 if edge is None else int(edge)
        dec = 1 if decimation is None else int(decimation)
        pre = dict(method="savgol", window=int(window), polyorder=int(polyorder))
    else:
        raise ValueError(f"preprocess: filter must be 'butterworth' or 'savgol', got {filter!r}")
    if dec < 1 or edge < 0 or 2 * edge >= T:
        raise ValueError(f"preprocess: decimation {dec} must be >= 1 and edge {edge} within the {T} samples")
    index = np.arange(edge, T - edge, dec)
    info = Preprocessing(
        rate=rate, decimation=dec, edge=edge, filter_tau=bool(filter_tau), index=index, qd_full=qd, n_recorded=T, **pre
    )
    tau_f = info.smooth(tau) if filter_tau else tau
    return qf[index], qd[index], qdd[index], tau_f[index], info


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
            raise ValueError(
                f"{path}: the '{kind}:' columns do not name the same joints as the 'q:' columns "
                f"(differ in: {', '.join(diff)})"
            )
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


def load_data(
    source,
    model: Model,
    *,
    dt: float | None = None,
    window: int | None = None,
    polyorder: int = 3,
    filter: str | None = None,
    cutoff: float | None = None,
    cutoff_factor: float = 5.0,
    bandwidth: float | None = None,
    filter_order: int = 4,
    decimation: int | None = None,
    edge: int | None = None,
    filter_tau: bool = True,
) -> SysIdData:
    """Load identification data for ``model`` from an ``.npz`` or ``.csv`` file (see the package
    docstring for the formats), or from a dict of arrays with the NPZ keys.

    Joint columns are reordered to the model's joint order. When ``qd`` or ``qdd`` is missing, the
    recording goes through :func:`preprocess` (filtering, derivatives, parallel filtering of tau,
    edges dropped, decimation; the returned data's ``preprocessing`` says what was done):
    ``filter="butterworth"`` (the default) or ``"savgol"`` (the default when only ``window`` is
    given, the behaviour of earlier versions: Savitzky-Golay with ``window`` samples and degree
    ``polyorder``, no decimation, ``window // 2`` samples dropped at each end). The other keywords
    are those of :func:`preprocess` (``filter_order`` is its ``order``). Data with both ``qd`` and
    ``qdd`` are used as they are.

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
            raise ValueError(
                f"{name}: joint(s) {unknown} are not joints of model '{model.name}' "
                f"(its joints: {', '.join(model.joint_names)})"
            )
        missing = [j for j in model.joint_names if j not in data_names]
        if missing:
            raise ValueError(f"{name}: no data for joint(s) {missing} of model '{model.name}'")
        if len(set(data_names)) != len(data_names):
            raise ValueError(f"{name}: joint names are repeated: {list(data_names)}")
        order = np.array([data_names.index(j) for j in model.joint_names])
    arrs = {}
    T: int | None = None
    for k in _KINDS:
        if k not in raw:
            continue
        a = np.asarray(raw[k], np.float64)
        if a.ndim != 2 or a.shape[1] != len(data_names):
            raise ValueError(
                f"{name}: '{k}' has shape {a.shape}, expected (T, {len(data_names)}) "
                f"(one column per joint of model '{model.name}')"
            )
        if T is None:
            T = a.shape[0]
        elif a.shape[0] != T:
            raise ValueError(f"{name}: '{k}' has {a.shape[0]} samples, 'q' has {T}")
        _finite(k, a, name, data_names)
        arrs[k] = a[:, order]
    assert T is not None  # 'q' is required
    t: np.ndarray | None = None
    if "t" in raw:
        t = np.asarray(raw["t"], np.float64).ravel()
        if t.shape[0] != T:
            raise ValueError(f"{name}: 't' has {t.shape[0]} samples, 'q' has {T}")
        _finite("t", t, name)
    if dt is None and "dt" in raw:
        dt = float(np.asarray(raw["dt"]))
    estimated, pre = [], None
    if "qd" not in arrs or "qdd" not in arrs:
        if t is not None:
            steps = np.diff(t)
            if T < 2 or np.any(steps <= 0):
                raise ValueError(f"{name}: 't' must be strictly increasing to estimate qd/qdd")
            step = float(np.median(steps))
            if np.max(np.abs(steps - step)) > 1e-3 * step:
                raise ValueError(
                    f"{name}: 't' is not uniformly sampled (steps from {steps.min():g} to "
                    f"{steps.max():g} s); estimating qd/qdd needs uniform sampling: resample, "
                    "or give qd and qdd"
                )
            if dt is not None and abs(dt - step) > 1e-3 * step:
                raise ValueError(f"{name}: dt={dt} disagrees with the time stamps' step {step}")
            dt = step
        if dt is None:
            raise ValueError(f"{name}: qd/qdd are not given and neither 't' nor 'dt' is: cannot estimate them")
        method = ("savgol" if window is not None else "butterworth") if filter is None else filter
        try:
            q_k, qd_k, qdd_k, tau_k, pre = preprocess(
                arrs["q"],
                arrs["tau"],
                dt,
                filter=method,
                cutoff=cutoff,
                cutoff_factor=cutoff_factor,
                bandwidth=bandwidth,
                order=filter_order,
                decimation=decimation,
                edge=edge,
                filter_tau=filter_tau,
                window=31 if window is None else window,
                polyorder=polyorder,
            )
        except ValueError as e:
            raise ValueError(f"{name}: {e}") from None
        keep = pre.index
        given = {k: v[keep] for k, v in arrs.items() if k in ("qd", "qdd")}
        if "qd" in arrs:
            pre.qd_full = arrs["qd"]
        estimated = [k for k in ("qd", "qdd") if k not in arrs]
        arrs = {"q": q_k, "qd": qd_k, "qdd": qdd_k, "tau": tau_k, **given}
        t = None if t is None else t[keep]
        if t is None:
            t = keep * float(dt)
    if t is None and dt is not None:
        t = np.arange(arrs["q"].shape[0]) * float(dt)
    return SysIdData(
        arrs["q"], arrs["qd"], arrs["qdd"], arrs["tau"], t, tuple(model.joint_names), tuple(estimated), pre
    )


def save_data(path, data: SysIdData, *, derivatives: bool = True):
    """Write ``data`` as ``.npz`` or ``.csv`` (format of the module docstring); with
    ``derivatives=False`` only ``t``, ``q`` and ``tau`` are written. The file is written under a
    temporary name beside ``path`` and renamed over it: a failed write leaves an existing file."""
    path = os.fspath(path)
    kinds = _KINDS if derivatives else ("q", "tau")
    ext = os.path.splitext(path)[1].lower()
    if ext == ".npz":
        arrays = {k: getattr(data, k) for k in kinds}
        if data.t is not None:
            arrays["t"] = data.t
        with replace_atomically(path) as tmp:
            np.savez(tmp, joint_names=np.array(data.joint_names), **arrays)
    elif ext == ".csv":
        cols, header = [], []
        if data.t is not None:
            cols.append(data.t[:, None])
            header.append("t")
        for k in kinds:
            cols.append(getattr(data, k))
            header += [f"{k}:{j}" for j in data.joint_names]
        table = np.concatenate(cols, 1)
        with replace_atomically(path) as tmp:
            np.savetxt(tmp, table, delimiter=",", header=",".join(header), comments="", fmt="%.17g")
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
