"""Regressor stacks over data (chunked, sharded) and the structural base-parameter basis."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .. import joints, parallel
from ..algorithms.regressor import regressor
from ..model import Model
from .data import SysIdData, check_model
from .friction import friction_columns, friction_model

PARAMETER_LABELS = ("m", "mx", "my", "mz", "Ixx", "Ixy", "Iyy", "Ixz", "Iyz", "Izz")


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
        part = tuple(jnp.asarray(a[s : s + chunk], dt) for a in (q, qd, qdd))
        part, n = parallel.pad_batch(part, chunk) if part[0].shape[0] < chunk else (part, chunk)
        part = parallel.shard_batch(part, mesh)
        Y = _batched_regressor(model_r, *part)
        out.append(np.asarray(Y, np.float64)[:n])
    return np.concatenate(out, 0)


def regressor_rows(model: Model, data: SysIdData, *, friction=False, chunk: int = 256, mesh=None):
    """``(Y, y)``: regressors ``(T, n, p)`` and targets ``tau - armature * qdd`` ``(T, n)`` (numpy
    float64). ``p = 10 nb`` plus the friction columns of ``friction`` (see
    :func:`~jaxdyn.sysid.friction.friction_model`; ``True``: columns ``qd_j`` and ``sign(qd_j)``
    on joint ``j``'s row). Evaluated in ``model.dtype``, sharded over ``mesh`` (default: all
    devices)."""
    check_model(model, "regressor_rows")
    if data.q.shape[1] != model.nv:
        raise ValueError(f"regressor_rows: data has {data.q.shape[1]} joints, model '{model.name}' has {model.nv}")
    Y = _chunked((model, data.q, data.qd, data.qdd), chunk, mesh)
    y = data.tau - np.asarray(model.armature, np.float64) * data.qdd
    fm = friction_model(friction)
    if fm is not None:
        Y = np.concatenate([Y, friction_columns(fm, data)], -1)
    return Y, y


def parameter_names(model: Model) -> list:
    """``"<body>.<parameter>"`` for the ``10 nb`` standard inertial parameters, in regressor order."""
    return [f"{b}.{p}" for b in model.body_names for p in PARAMETER_LABELS]


def structural_base(model: Model, *, seed: int = 0, n_samples: int = 256, rtol: float | None = None, mesh=None):
    """``(B, s)``: orthonormal basis ``(r, 10 nb)`` of the identifiable (base) parameter space
    (the row space of regressors stacked over random states: ``Y == (Y B^T) B``) and the singular
    values. Like :func:`jaxdyn.base_parameters` (random states: joints uniform within their limits,
    velocities and accelerations standard normal), but reuses this module's compiled regressor."""
    check_model(model, "structural_base")
    rtol = (1e-9 if model.dtype == jnp.float64 else 1e-4) if rtol is None else rtol
    rng = np.random.default_rng(seed)
    lo, hi = np.asarray(model.q_lower, np.float64), np.asarray(model.q_upper, np.float64)
    half = joints.dof_ranges(model.joint_types, np.pi, 1.0)
    ok = np.isfinite(lo) & np.isfinite(hi) & (hi > lo)
    lo, hi = np.where(ok, lo, -half), np.where(ok, hi, half)
    q = lo + (hi - lo) * rng.random((n_samples, model.nq))
    qd, qdd = rng.standard_normal((2, n_samples, model.nv))
    Y = _chunked((model, q, qd, qdd), n_samples, mesh)
    _, s, Vt = np.linalg.svd(Y.reshape(-1, Y.shape[-1]), full_matrices=False)
    r = int(np.sum(s > rtol * s[0]))
    return Vt[:r], s
