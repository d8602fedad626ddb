"""Estimators: (weighted) least squares on base parameters and the physically consistent fit.

* :func:`identify_ls` - ordinary (or, with ``weights``, weighted) least squares on the base
  parameters and friction coefficients, solved for the change from the prior (minimum norm, so
  unexcited directions keep their nominal values). Returns the estimate's :class:`Uncertainty`.
* :func:`identify_wls` - Gautier's two-step weighted least squares (Gautier & Poignet 2001,
  "Extended Kalman filtering and weighted least squares dynamic identification of robot",
  Control Eng. Practice 9(12)): an OLS pass, the residual variance of each joint's equations
  ``sigma_j^2 = ||rho_j||^2 / (N - sum_{i in j} h_ii)`` (``h_ii``: the OLS leverages, the
  diagonal of the hat matrix ``W (W^T W)^-1 W^T``, so the ``q`` parameter degrees of freedom are
  shared among the joints as the fit used them; Hoaglin & Welsch 1978, Am. Stat. 32(1)), then
  least squares on the rows scaled by ``1 / sigma_j``.
* :func:`identify_gradient` - the physically consistent fit in log-Cholesky coordinates (see the
  package docstring), here with optional **mass bounds** and a **total mass**:

  - bounds ``lo <= m_b <= hi`` are enforced by reparametrising the mass coordinate: with
    ``U = e^alpha V`` (``V_44 = 1``) the mass is ``m = e^(2 alpha)``, and ``alpha`` is replaced by
    ``alpha(z) = log(lo + (hi - lo) sigmoid(z)) / 2`` (both bounds), ``log(lo + e^(2z)) / 2``
    (lower bound only) or ``z`` (none), so every iterate lies inside the bounds and stays
    physically consistent;
  - a known total mass ``M`` (within ``tol``) adds ``((sum_b m_b - M) / tol)^2`` to the loss.
"""

from __future__ import annotations

import dataclasses
import functools
import sys
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from .. import parallel
from ..algorithms.regressor import inertial_parameters, model_with_parameters
from ..model import Model
from .consistency import (
    log_cholesky_to_parameters,
    log_cholesky_to_pseudo_inertia,
    parameters_to_pseudo_inertia,
    physical_consistency,
    pseudo_inertia_to_log_cholesky,
)
from .data import SysIdData, check_model
from .friction import FrictionModel, friction_columns, friction_model, split_coefficients
from .regressors import parameter_names, regressor_rows, structural_base
from .uncertainty import Uncertainty, data_share, default_prior_std, named_base, parameter_uncertainty


@dataclasses.dataclass
class Identification:
    """Result of an identification.

    model: the nominal model with the identified masses/COMs/inertias (and ``damping`` = viscous,
      ``friction`` = Coulomb coefficients when friction was identified); None when the inertial
      parameters have a non-positive mass.
    parameters: ``(nb, 10)`` identified inertial parameters; base: ``B`` ``(r, 10 nb)``;
    beta: ``B @ parameters.ravel()``; damping, coulomb: ``(n,)`` or None;
    consistency: :func:`physical_consistency` of ``parameters``; info: method-specific extras
    (``rank``, ``cond``, ``sigma``, ``sigma_joint``, ``weights``, ``data_share`` for least
    squares; ``loss`` history, ``total_mass``, ``mass_bounds`` for gradient).
    friction_model, friction_coefficients: the friction model and its block coefficient vector
    (see :mod:`jaxdyn.sysid.friction`); uncertainty: standard deviations of the base parameters
    and friction coefficients (least-squares estimators).
    """

    method: str
    model: Model | None
    parameters: np.ndarray
    base: np.ndarray
    beta: np.ndarray
    damping: np.ndarray | None
    coulomb: np.ndarray | None
    consistency: list
    info: dict
    friction_model: FrictionModel | None = None
    friction_coefficients: np.ndarray | None = None
    uncertainty: Uncertainty | None = None

    @property
    def consistent(self) -> bool:
        return all(r.consistent for r in self.consistency)

    @property
    def friction(self) -> dict:
        """``{term: (n,) coefficients}`` (empty without friction)."""
        if self.friction_model is None:
            return {}
        assert self.friction_coefficients is not None  # given with a friction model
        return split_coefficients(
            self.friction_model,
            self.friction_coefficients,
            len(self.friction_coefficients) // len(self.friction_model.terms),
        )

    @property
    def masses(self) -> np.ndarray:
        return np.asarray(self.parameters[:, 0])


def _min_rows(model, data, n_params, fn):
    rows = len(data) * model.nv
    if rows < n_params:
        raise ValueError(
            f"{fn}: {len(data)} samples x {model.nv} joints = {rows} equations are fewer than the "
            f"{n_params} parameters to identify; record at least {-(-n_params // model.nv)} samples"
        )


def _result(method, model, pi, B, fm, fric, info, uncertainty=None):
    d = c = None
    if fm is not None:
        terms = split_coefficients(fm, fric, model.nv)
        d, c = terms.get("viscous"), terms.get("coulomb")
    cons = physical_consistency(pi, model.body_names)
    new = None
    if np.all(pi[:, 0] > 0):
        new = model_with_parameters(model, jnp.asarray(pi, model.dtype))
        if d is not None:
            new = new.replace(damping=jnp.asarray(d, model.dtype))
        if c is not None:
            new = new.replace(friction=jnp.asarray(c, model.dtype))
    return Identification(
        method,
        new,
        pi,
        B,
        B @ pi.ravel(),
        d,
        c,
        cons,
        info,
        fm,
        None if fm is None else np.asarray(fric, np.float64),
        uncertainty,
    )


def friction_prior(model, fm):
    """Starting friction coefficients: the model's damping (viscous) and friction (Coulomb)."""
    if fm is None:
        return np.zeros(0)
    prior = {"viscous": np.asarray(model.damping, np.float64), "coulomb": np.asarray(model.friction, np.float64)}
    return np.concatenate([prior.get(t, np.zeros(model.nv)) for t in fm.terms])


def _weights(model, weights, fn):
    w = np.ones(model.nv) if weights is None else np.asarray(weights, np.float64)
    if w.shape != (model.nv,) or not np.all(np.isfinite(w)) or np.any(w <= 0):
        raise ValueError(f"{fn}: weights must be {model.nv} positive finite numbers (one per joint), got {w}")
    return w


def identify_ls(
    model: Model,
    data: SysIdData,
    *,
    friction=False,
    base=None,
    rows=None,
    rcond: float = 1e-10,
    mesh=None,
    weights=None,
    threshold: float = 10.0,
    prior_std=None,
    method: str = "ls",
) -> Identification:
    """Least squares on the base parameters (module docstring).

    Args:
      friction: a friction specification (:func:`~jaxdyn.sysid.friction.friction_model`: False,
        True = viscous + Coulomb, ``"coulomb+offset"``, ``"stribeck"``, a ``FrictionModel``).
      base: ``B`` from :func:`structural_base` (computed if None); rows: precomputed
        :func:`regressor_rows` (with the same friction columns).
      weights: ``(n,)`` per-joint row weights (weighted least squares; default 1).
      threshold: relative standard deviation (%) above which a parameter is reported as poorly
        excited. prior_std: prior standard deviations for the data-or-prior report
        (default :func:`~jaxdyn.sysid.uncertainty.default_prior_std`).

    ``info`` holds the numerical ``rank`` and condition number ``cond`` of the (weighted) base
    regressor ``W``, ``sigma`` (residual standard deviation, weighted units), ``sigma_joint``
    (per-joint residual standard deviation in torque units, leverage-corrected: see
    :func:`identify_wls`), ``normal_matrix`` ``W^T W``, ``weights``, ``data_share`` (a
    :class:`~jaxdyn.sysid.uncertainty.DataShare`) and ``devices``; the result's ``uncertainty``
    the standard deviations of the named base parameters and friction coefficients.
    """
    check_model(model, "identify_ls")
    mesh = parallel.batch_mesh() if mesh is None else mesh
    fm = friction_model(friction)
    B = structural_base(model, mesh=mesh)[0] if base is None else np.asarray(base)
    r = B.shape[0]
    nv = model.nv
    nf = fm.n_columns(nv) if fm is not None else 0
    _min_rows(model, data, r + nf, "identify_ls")
    Y, y = regressor_rows(model, data, friction=fm, mesh=mesh) if rows is None else rows
    p = 10 * model.nb
    if Y.shape[-1] != p + nf:
        raise ValueError(
            f"identify_ls: rows have {Y.shape[-1]} columns, expected {p + nf} ({p} inertial + {nf} friction)"
        )
    w = _weights(model, weights, "identify_ls")
    Yw = Y * w[None, :, None]
    A = Yw.reshape(-1, Y.shape[-1])
    b = (y * w).reshape(-1)
    W = np.concatenate([A[:, :p] @ B.T, A[:, p:]], 1)
    pi0 = np.asarray(inertial_parameters(model), np.float64).ravel()
    x0 = np.concatenate([B @ pi0, friction_prior(model, fm)])
    # solve for the change from the prior: the minimum-norm solution keeps unexcited directions
    dx, _, rank, sv = np.linalg.lstsq(W, b - W @ x0, rcond=rcond)
    x = x0 + dx
    beta = x[:r]
    pi = (pi0 + B.T @ (beta - B @ pi0)).reshape(model.nb, 10)
    res = b - W @ x
    dof = max(W.shape[0] - rank, 1)
    # per-joint residual variance with the leverages of the fit (module docstring)
    Q = np.linalg.qr(W)[0]
    lev = np.sum(Q * Q, 1).reshape(-1, nv).sum(0)
    T = len(data)
    res_j = res.reshape(T, nv) / w
    sigma_joint = np.sqrt(np.sum(res_j**2, 0) / np.maximum(T - lev, 1.0))
    names = parameter_names(model)
    K, labels, expr = named_base(B, names)
    M = K @ B.T  # named base parameters = M @ beta
    Tr = np.eye(r + nf)
    Tr[:r, :r] = M
    fnames = [f"{j}.{t}" for t in (fm.terms if fm is not None else ()) for j in model.joint_names]
    unc = parameter_uncertainty(
        W, res, x, labels + fnames, n_base=r, transform=Tr, expressions=expr + fnames, threshold=threshold
    )
    ps = default_prior_std(pi0, n_friction=nf) if prior_std is None else np.asarray(prior_std, np.float64)
    share = data_share(A, unc.sigma, ps, names + fnames, model.body_names)
    info = {
        "rank": int(rank),
        "n_base": r,
        "cond": float(sv[0] / sv[-1]) if sv[-1] > 0 else float("inf"),
        "sigma": float(np.sqrt(res @ res / dof)),
        "sigma_joint": sigma_joint,
        "normal_matrix": W.T @ W,
        "weights": w,
        "data_share": share,
        "devices": int(mesh.devices.size),
    }
    return _result(method, model, pi, B, fm, x[r:] if fm is not None else None, info, unc)


def identify_wls(
    model: Model,
    data: SysIdData,
    *,
    friction=False,
    base=None,
    rows=None,
    mesh=None,
    threshold: float = 10.0,
    prior_std=None,
) -> Identification:
    """Weighted least squares with per-joint weights ``1 / sigma_j`` from the residuals of an
    ordinary least-squares pass (module docstring). ``info["ols"]`` holds that first pass;
    ``info["weights"]`` the weights. Other arguments as :func:`identify_ls`."""
    check_model(model, "identify_wls")
    mesh = parallel.batch_mesh() if mesh is None else mesh
    fm = friction_model(friction)
    B = structural_base(model, mesh=mesh)[0] if base is None else np.asarray(base)
    rows = regressor_rows(model, data, friction=fm, mesh=mesh) if rows is None else rows
    ols = identify_ls(model, data, friction=fm, base=B, rows=rows, mesh=mesh, threshold=threshold, prior_std=prior_std)
    sj = ols.info["sigma_joint"]
    floor = 1e-6 * max(float(np.max(sj)), 1e-300)
    w = 1.0 / np.maximum(sj, floor)
    res = identify_ls(
        model,
        data,
        friction=fm,
        base=B,
        rows=rows,
        mesh=mesh,
        weights=w,
        threshold=threshold,
        prior_std=prior_std,
        method="wls",
    )
    res.info["ols"] = ols
    return res


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


# ------------------------------------------------------------------------------------------
# mass bounds
# ------------------------------------------------------------------------------------------


def mass_bounds_array(model: Model, bounds) -> np.ndarray:
    """``(nb, 2)`` mass bounds ``[lo, hi]`` (``0`` and ``inf`` where unbounded) from None, an
    ``(nb, 2)`` array, or ``{body name: (lo, hi)}`` (either may be None)."""
    nb = model.nb
    out = np.tile(np.array([0.0, np.inf]), (nb, 1))
    if bounds is None:
        return out
    if isinstance(bounds, dict):
        for name, (lo, hi) in bounds.items():
            if name not in model.body_names:
                raise ValueError(
                    f"mass bounds: '{name}' is not a body of model '{model.name}' "
                    f"(bodies: {', '.join(model.body_names)})"
                )
            b = model.body_names.index(name)
            out[b] = [0.0 if lo is None else float(lo), np.inf if hi is None else float(hi)]
    else:
        arr = np.asarray(bounds, np.float64)
        if arr.shape != (nb, 2):
            raise ValueError(f"mass bounds: expected shape ({nb}, 2), got {arr.shape}")
        out = np.where(np.isnan(arr), out, arr)
    for b in range(nb):
        lo, hi = out[b]
        if not (lo >= 0 and hi > lo):
            raise ValueError(f"mass bounds of '{model.body_names[b]}': need 0 <= lo < hi, got [{lo}, {hi}]")
    return out


def _mass_coding(bounds):
    """Per body: kind (0 none, 1 lower only, 2 both), lo, span (runtime arrays of the loss)."""
    lo, hi = bounds[:, 0], bounds[:, 1]
    kind = np.where(np.isfinite(hi), 2, np.where(lo > 0, 1, 0))
    lo_s = np.where(kind > 0, lo, 1.0)
    span = np.where(kind == 2, hi - lo, 1.0)
    return kind.astype(np.int32), lo_s, span


def _alpha(z, kind, lo, span):
    """The log-Cholesky ``alpha`` (mass ``e^(2 alpha)``) from the bounded coordinate ``z``."""
    a1 = 0.5 * jnp.logaddexp(jnp.log(lo), 2.0 * z)
    log_lo2 = jnp.where(lo > 0, jnp.log(jnp.where(lo > 0, lo, 1.0)), -jnp.inf)
    a2 = 0.5 * jnp.logaddexp(log_lo2, jnp.log(span) + jax.nn.log_sigmoid(z))
    return jnp.where(kind == 2, a2, jnp.where(kind == 1, a1, z))


def _z_from_mass(m, kind, lo, span):
    """Inverse of :func:`_alpha` (masses first moved strictly inside their bounds)."""
    m = np.asarray(m, np.float64)
    z = 0.5 * np.log(np.maximum(m, 1e-300))
    m1 = np.maximum(m - lo, 1e-3 * lo)
    z = np.where(kind == 1, 0.5 * np.log(m1), z)
    frac = np.clip((m - np.where(kind == 2, lo, 0.0)) / span, 1e-3, 1 - 1e-3)
    return np.where(kind == 2, np.log(frac) - np.log1p(-frac), z)


@functools.lru_cache(maxsize=16)
def _gradient_step_fn(nv, nb, nf, steps, learning_rate, method):
    """``(optimizer, run, loss_fn, hessian)``: a jitted optimisation loop of a static number of
    steps (``lax.scan``) over the preconditioned coordinates ``u`` (``v = v0 + P u``, ``v`` the
    flattened bounded log-Cholesky coordinates and friction coefficients), the loss, and its
    Hessian with respect to ``v``; cached so that repeated fits with the same settings compile
    once."""
    import optax

    if method == "lbfgs":
        optimizer = optax.lbfgs(memory_size=20)
    elif method == "adam":
        optimizer = optax.adam(optax.cosine_decay_schedule(learning_rate, max(steps, 1), alpha=0.01))
    else:
        raise ValueError(f"identify_gradient: optimizer must be 'lbfgs' or 'adam', got {method!r}")

    def v_loss(v, Y, y, w, mask, scale, J0inv, logdetJ0, kind, lo, span, mtot, mtol, reg):
        z = v[: 10 * nb].reshape(nb, 10)
        alpha = _alpha(z[:, 0], kind, lo, span)
        theta = z.at[:, 0].set(alpha)
        pi = log_cholesky_to_parameters(theta).reshape(-1)
        x = jnp.concatenate([pi, v[10 * nb :]]) if nf else pi
        r = (jnp.einsum("tjp,p->tj", Y, x) - y) * w
        data = jnp.sum(mask[:, None] * r * r) / (jnp.sum(mask) * nv) / scale
        J = log_cholesky_to_pseudo_inertia(theta)
        logdetJ = 8.0 * theta[:, 0] + 2.0 * jnp.sum(theta[:, 1:4], -1)
        div = jnp.einsum("bij,bji->b", J0inv, J) - (logdetJ - logdetJ0) - 4.0
        total = jnp.sum(jnp.exp(2.0 * alpha))
        pen = jnp.where(mtol > 0, ((total - mtot) / jnp.where(mtol > 0, mtol, 1.0)) ** 2, 0.0)
        return data + reg * jnp.sum(div) + pen, data

    def loss_fn(params, v0, P, *args):
        return v_loss(v0 + P @ params["u"], *args)

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

    hessian = jax.jit(jax.hessian(lambda v, *args: v_loss(v, *args)[0]))
    return optimizer, jax.jit(run, static_argnums=2), jax.jit(loss_fn), hessian


def identify_gradient(
    model: Model,
    data: SysIdData,
    *,
    friction=False,
    steps: int = 2000,
    learning_rate: float = 1e-2,
    reg: float = 1e-6,
    init=None,
    base=None,
    rows=None,
    weights=None,
    optimizer: str = "lbfgs",
    chunk_steps: int = 50,
    progress: Callable | None = None,
    mesh=None,
    mass_bounds=None,
    total_mass: float | None = None,
    total_mass_tol: float | None = None,
    init_friction=None,
    precondition: float = 1e-8,
    prior_weight: float | None = None,
) -> Identification:
    """Gradient-based identification under the log-Cholesky parametrisation (package and module
    docstrings).

    Args:
      model: nominal model; its inertial parameters are the prior (regularisation target) and, if
        ``init`` is None, the starting point.
      data: training samples. friction: a friction specification (as :func:`identify_ls`; start:
        the model's ``damping``/``friction``, or ``init_friction``).
      steps: optimiser iterations. optimizer: ``"lbfgs"`` (optax L-BFGS with a zoom line search;
        default, robust to the poor conditioning of inertial parameters) or ``"adam"`` (with a
        cosine decay of ``learning_rate`` to 1%; ``learning_rate`` is unused by L-BFGS).
      reg: weight of the log-det divergence to the prior (relative to the normalised torque MSE,
        which is 1 for zero predicted torque).
      prior_weight: the same weight in the units of the weighted residuals: the loss is then
        proportional to ``sum (w_j r)^2 / 2 + prior_weight * sum_b d(J_b || J0_b)`` (a maximum a
        posteriori fit when ``w_j = 1 / sigma_j``, e.g. :func:`identify_wls`'s weights, where 1
        is a prior worth about one measurement per body); overrides ``reg``.
      init: ``(nb, 10)`` starting parameters (physically consistent), e.g. a least-squares result.
      weights: ``(n,)`` per-joint residual weights (default 1), e.g. :func:`identify_wls`'s.
      mass_bounds: per-body mass bounds, ``{body: (lo, hi)}`` or ``(nb, 2)`` (see
        :func:`mass_bounds_array`); enforced exactly by the reparametrisation.
      total_mass: the known sum of the body masses [kg]; total_mass_tol: its tolerance
        (default 1% of it), the scale of the quadratic penalty.
      progress: ``callable(done, total, loss)`` called every ``chunk_steps`` steps
        (e.g. :class:`ProgressBar`).
      mesh: device mesh for the sharded loss (default: all devices).
      precondition: the optimiser works in coordinates ``u`` with ``v = v0 + |H|^(-1/2) u``, ``H``
        the loss Hessian at the start with its eigenvalue magnitudes floored at ``precondition``
        times the largest (a fixed Newton-like rescaling: the fit converges in far fewer steps on
        ill-conditioned data); 0 or False: plain coordinates.

    Every body of the result is physically consistent by construction (up to round-off), with
    its mass inside its bounds. ``info`` holds ``loss``, ``theta``, ``devices``, ``mass_bounds``,
    ``total_mass`` (the fitted sum) and ``total_mass_target``.
    """
    check_model(model, "identify_gradient")
    nv, nb = model.nv, model.nb
    fm = friction_model(friction)
    nf = fm.n_columns(nv) if fm is not None else 0
    mesh = parallel.batch_mesh() if mesh is None else mesh
    B = structural_base(model, mesh=mesh)[0] if base is None else np.asarray(base)
    _min_rows(model, data, B.shape[0] + nf, "identify_gradient")
    Y, y = regressor_rows(model, data, friction=fm, mesh=mesh) if rows is None else rows
    if Y.shape[-1] != 10 * nb + nf:
        raise ValueError(f"identify_gradient: rows have {Y.shape[-1]} columns, expected {10 * nb + nf}")
    dt = model.dtype
    w = _weights(model, weights, "identify_gradient")
    scale = float(np.mean((y * w) ** 2)) or 1.0
    if prior_weight is not None:
        if not prior_weight >= 0:
            raise ValueError(f"identify_gradient: prior_weight must be >= 0, got {prior_weight}")
        reg = 2.0 * float(prior_weight) / (y.size * scale)
    bounds = mass_bounds_array(model, mass_bounds)
    kind, lo, span = _mass_coding(bounds)
    if total_mass is not None:
        if not total_mass > 0:
            raise ValueError(f"identify_gradient: total_mass must be positive, got {total_mass}")
        if bounds[:, 0].sum() > total_mass or bounds[:, 1].sum() < total_mass:
            raise ValueError(
                f"identify_gradient: total mass {total_mass} kg lies outside the sum of the mass "
                f"bounds [{bounds[:, 0].sum():g}, {bounds[:, 1].sum():g}] kg"
            )
    mtot = float(total_mass) if total_mass is not None else 0.0
    mtol = (float(total_mass_tol) if total_mass_tol is not None else 0.01 * mtot) if total_mass is not None else 0.0
    if total_mass is not None and not mtol > 0:
        raise ValueError(f"identify_gradient: total_mass_tol must be positive, got {total_mass_tol}")

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
    theta0 = np.array(pseudo_inertia_to_log_cholesky(jnp.asarray(Js)), np.float64)
    theta0[:, 0] = _z_from_mass(np.exp(2 * theta0[:, 0]), kind, lo, span)
    f0 = np.zeros(0)
    if fm is not None:
        f0 = friction_prior(model, fm) if init_friction is None else np.asarray(init_friction, np.float64)
        if f0.shape != (nf,):
            raise ValueError(f"identify_gradient: init_friction has shape {f0.shape}, expected ({nf},)")
    v0 = np.concatenate([theta0.ravel(), f0])

    T = Y.shape[0]
    (Yp, yp, mask), _ = parallel.pad_batch((jnp.asarray(Y, dt), jnp.asarray(y, dt), jnp.ones(T, dt)), mesh.devices.size)
    mask = mask.at[T:].set(0.0)
    Yp, yp, mask = parallel.shard_batch((Yp, yp, mask), mesh)
    const = parallel.replicate(
        (
            jnp.asarray(w, dt),
            jnp.asarray(scale, dt),
            jnp.asarray(np.linalg.inv(J0), dt),
            jnp.asarray(np.linalg.slogdet(J0)[1], dt),
            jnp.asarray(kind),
            jnp.asarray(lo, dt),
            jnp.asarray(span, dt),
            jnp.asarray(mtot, dt),
            jnp.asarray(mtol, dt),
            jnp.asarray(reg, dt),
        ),
        mesh,
    )
    args = (Yp, yp, const[0], mask) + tuple(const[1:])

    if optimizer == "adam":
        key = (int(steps), float(learning_rate))
    else:  # L-BFGS ignores both: share one compiled loop across step counts
        key = (0, 0.0)
    opt, run, loss_fn, hessian = _gradient_step_fn(nv, nb, nf, *key, optimizer)
    # preconditioner: v = v0 + P u with P = |H|^(-1/2), H the loss Hessian at the start (its
    # eigenvalues floored at `precondition` times the largest); P = I without preconditioning
    if precondition:
        H = np.asarray(hessian(jnp.asarray(v0, dt), *args), np.float64)
        lam, V = np.linalg.eigh(0.5 * (H + H.T))
        lam = np.abs(lam)
        lam = np.maximum(lam, float(precondition) * max(lam.max(), 1e-300))
        P = (V / np.sqrt(lam)) @ V.T
    else:
        P = np.eye(v0.size)
    v0j, Pj = parallel.replicate((jnp.asarray(v0, dt), jnp.asarray(P, dt)), mesh)
    args = (v0j, Pj) + args
    params = parallel.replicate({"u": jnp.zeros(v0.size, dt)}, mesh)
    opt_state = opt.init(params)
    chunk_steps = max(1, min(chunk_steps, steps))
    history, done = [], 0
    if progress is not None:
        progress(0, steps, float(loss_fn(params, *args)[0]))
    while done < steps:
        n = min(chunk_steps, steps - done)
        params, opt_state, losses = run(params, opt_state, n, *args)
        history.append(np.asarray(losses))
        done += n
        if progress is not None:
            progress(done, steps, float(history[-1][-1]))
    v = v0 + P @ np.asarray(params["u"], np.float64)
    theta = v[: 10 * nb].reshape(nb, 10).copy()
    theta[:, 0] = np.asarray(_alpha(jnp.asarray(theta[:, 0]), kind, lo, span))
    pi = np.asarray(log_cholesky_to_parameters(jnp.asarray(theta)), np.float64)
    fr = v[10 * nb :] if fm is not None else None
    info = {
        "loss": np.concatenate(history) if history else np.zeros(0),
        "theta": theta,
        "devices": int(mesh.devices.size),
        "mass_bounds": bounds,
        "total_mass": float(pi[:, 0].sum()),
        "total_mass_target": total_mass,
        "weights": w,
        "reg": float(reg),
    }
    return _result("gradient", model, pi, B, fm, fr, info)


def identify(
    model: Model,
    data: SysIdData,
    method: str = "both",
    *,
    friction=False,
    progress: Callable | None = None,
    weighted: bool = False,
    threshold: float = 10.0,
    **gradient_kwargs,
) -> dict:
    """Run ``method`` (``"ls"``, ``"wls"``, ``"gradient"`` or ``"both"``) sharing one regressor
    stack. Returns ``{"ls" or "wls": Identification, "gradient": Identification}`` (the ones run).
    ``weighted=True`` (or ``method="wls"``) makes the least-squares step :func:`identify_wls`,
    whose weights the gradient fit then uses (with ``prior_weight=1`` unless ``reg`` or
    ``prior_weight`` is given). With ``"both"`` the gradient fit starts from the
    least-squares estimate when that is physically consistent and inside the mass bounds, else
    from the nominal model; its friction coefficients start from the least-squares ones.
    ``gradient_kwargs`` go to :func:`identify_gradient` (e.g. ``steps``, ``reg``,
    ``mass_bounds``, ``total_mass``)."""
    if method not in ("ls", "wls", "gradient", "both"):
        raise ValueError(f"identify: method must be 'ls', 'wls', 'gradient' or 'both', got {method!r}")
    check_model(model, "identify")
    fm = friction_model(friction)
    weighted = weighted or method == "wls"
    B = structural_base(model)[0]
    rows = regressor_rows(model, data, friction=fm)
    out = {}
    ls = None
    # the data-or-prior report uses the mass bounds, when given, as the masses' prior spread
    nf = fm.n_columns(model.nv) if fm is not None else 0
    prior_std = default_prior_std(
        inertial_parameters(model), mass_bounds_array(model, gradient_kwargs.get("mass_bounds")), n_friction=nf
    )
    if method in ("ls", "wls", "both") or (method == "gradient" and weighted):
        if weighted:
            ls = identify_wls(model, data, friction=fm, base=B, rows=rows, threshold=threshold, prior_std=prior_std)
        else:
            ls = identify_ls(model, data, friction=fm, base=B, rows=rows, threshold=threshold, prior_std=prior_std)
        if method != "gradient":
            out[ls.method] = ls
    if method in ("gradient", "both"):
        kw = dict(gradient_kwargs)
        init = None
        if method == "both" and ls is not None and ls.consistent:  # ls: computed for "both"
            mb = mass_bounds_array(model, kw.get("mass_bounds"))
            if np.all((ls.masses >= mb[:, 0]) & (ls.masses <= mb[:, 1])):
                init = ls.parameters
        if ls is not None and fm is not None and "init_friction" not in kw:
            kw["init_friction"] = ls.friction_coefficients
        if weighted and "weights" not in kw:
            assert ls is not None  # computed when weighted
            kw["weights"] = ls.info["weights"]
            if "reg" not in kw and "prior_weight" not in kw:
                kw["prior_weight"] = 1.0
        out["gradient"] = identify_gradient(
            model, data, friction=fm, base=B, rows=rows, init=init, progress=progress, **kw
        )
    return out


# ------------------------------------------------------------------------------------------
# evaluation
# ------------------------------------------------------------------------------------------


def predict_torques(
    parameters, data: SysIdData, model: Model, *, damping=None, coulomb=None, friction=None, rows=None
) -> np.ndarray:
    """Predicted torques ``(T, n)`` for ``parameters`` (``(nb, 10)``) on ``data``:
    ``Y pi + armature qdd`` plus friction: ``damping qd + coulomb sign(qd)`` and/or ``friction``,
    an :class:`Identification` (its friction model and coefficients) or a ``(FrictionModel,
    coefficients)`` pair (friction columns parallel-filtered like the data, when they were
    filtered). ``rows``: precomputed :func:`regressor_rows` without friction columns.
    ``friction=None`` and no damping/coulomb: the rigid-body torques only."""
    Y, _ = regressor_rows(model, data) if rows is None else rows
    p = 10 * model.nb
    tau = Y[..., :p] @ np.asarray(parameters, np.float64).ravel() + np.asarray(model.armature, np.float64) * data.qdd
    if damping is not None:
        tau = tau + np.asarray(damping) * data.qd
    if coulomb is not None:
        tau = tau + np.asarray(coulomb) * np.sign(data.qd)
    if friction is not None:
        if isinstance(friction, Identification):
            fm, c = friction.friction_model, friction.friction_coefficients
        else:
            fm, c = friction
        if fm is not None:
            fmod = friction_model(fm)
            assert fmod is not None  # fm names a friction model
            tau = tau + friction_columns(fmod, data) @ np.asarray(c, np.float64)
    return tau


def torque_rmse(predicted, data: SysIdData) -> np.ndarray:
    """Per-joint root-mean-square torque error ``(n,)``."""
    return np.sqrt(np.mean((np.asarray(predicted) - data.tau) ** 2, 0))
