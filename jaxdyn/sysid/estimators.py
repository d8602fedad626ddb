"""Estimators: least squares on base parameters and the physically consistent gradient fit."""

from __future__ import annotations

import dataclasses
import functools
import sys
from typing import Callable, Optional

import jax
import jax.numpy as jnp
import numpy as np

from .. import parallel
from ..algorithms.regressor import inertial_parameters, model_with_parameters
from ..model import Model
from .consistency import (log_cholesky_to_parameters, log_cholesky_to_pseudo_inertia, parameters_to_pseudo_inertia,
                          physical_consistency, pseudo_inertia_to_log_cholesky)
from .data import SysIdData, check_model
from .regressors import regressor_rows, structural_base


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

