"""How well the data determine the parameters.

Base-parameter uncertainty (Gautier & Khalil; the standard deviations of Swevers et al. 1997 and
Gaz et al. 2019): for the (weighted) least-squares problem ``W x = y + rho`` with ``m`` equations
and ``q`` unknowns (base parameters and friction coefficients),

    sigma^2 = ||rho||^2 / (m - q),    cov(x) = sigma^2 (W^T W)^-1,
    std_i = sqrt(cov_ii),             relative std_i = 100 std_i / |x_i|  [%]

(for weighted least squares ``W`` and ``rho`` are the weighted ones, so ``sigma`` is close to 1).
Parameters with a relative standard deviation above a threshold (default 10 %) are reported as
poorly excited. The formula assumes uncorrelated residuals: with filtered data that holds when
the filtered samples are decimated to about twice the cut-off (:func:`~jaxdyn.sysid.data.preprocess`).

Named base parameters: the orthonormal basis ``B`` of :func:`~jaxdyn.sysid.structural_base` mixes
all the standard parameters. For the report, a column-pivoted QR decomposition of ``B``
(``scipy.linalg.qr``, as Gautier's numerical base parameters, Gautier 1991, "Numerical calculation
of the base inertial parameters of robots", J. Robotic Systems 8(4)) picks ``r`` independent
standard parameters ``pi_b``; the others ``pi_d`` regroup into them:
``beta_named = pi_b + K_d pi_d = B[:, b]^-1 B pi``, so every named base parameter is one standard
parameter (its label) plus a combination of parameters that cannot be told apart from it.

Data or prior: with a Gaussian prior ``pi ~ N(pi0, diag(s^2))`` (default ``s``: 30 % of each
nominal quantity, see :func:`default_prior_std`) the posterior covariance of the linear model is
``P = (A^T A / sigma^2 + diag(s^-2))^-1`` with ``A`` the (weighted) regressor of the standard
parameters; ``share_k = 1 - P_kk / s_k^2`` is the part of parameter ``k``'s prior variance that
the data remove: near 1, the data determine it; near 0, it comes from the prior (here: the
nominal model, or the bounds, or the regularisation of the consistent fit).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np


@dataclasses.dataclass
class Uncertainty:
    """Standard deviations of the estimated parameters (module docstring).

    names: one label per parameter (named base parameters first, then friction coefficients);
    expressions: the regrouped standard parameters of each base parameter (friction: its name);
    values, std, relative_std (%): ``(q,)``; covariance ``(q, q)``; n_base: how many of the
    parameters are base parameters; sigma: residual standard deviation (weighted units);
    dof: ``m - q``; cond: condition number of the (weighted) regressor ``W``;
    threshold: relative std (%) above which a parameter is poorly excited; poorly_excited: names.
    """

    names: list
    expressions: list
    values: np.ndarray
    std: np.ndarray
    relative_std: np.ndarray
    covariance: np.ndarray
    n_base: int
    sigma: float
    dof: int
    cond: float
    threshold: float
    poorly_excited: list

    def table(self) -> str:
        """One line per parameter: name, value, std, relative std, flag."""
        w = max(12, max(len(n) for n in self.names) + 2)
        lines = [f"{'parameter':<{w}}{'value':>13}{'std':>12}{'rel. std':>10}"]
        for i, n in enumerate(self.names):
            flag = "  poorly excited" if n in self.poorly_excited else ""
            lines.append(f"{n:<{w}}{self.values[i]:>13.5g}{self.std[i]:>12.3g}{self.relative_std[i]:>9.3g}%{flag}")
        return "\n".join(lines)


def named_base(B, names: Sequence[str], tol: float = 1e-10):
    """``(K, labels, expressions)``: the named base parameters ``beta_named = K @ pi`` ``(r, p)``
    (module docstring) for the orthonormal basis ``B`` ``(r, p)``; ``labels[i]`` is the standard
    parameter that base parameter ``i`` stands for, with ``(+k)`` when ``k`` others regroup into
    it; ``expressions[i]`` writes the combination out."""
    from scipy.linalg import qr

    B = np.asarray(B, np.float64)
    r = B.shape[0]
    _, _, piv = qr(B, mode="economic", pivoting=True)
    idx = np.sort(piv[:r])
    K = np.linalg.solve(B[:, idx], B)
    K[np.abs(K) < tol] = 0.0
    labels, expressions = [], []
    for i in range(r):
        others = [int(k) for k in np.nonzero(K[i])[0] if k != idx[i]]
        labels.append(names[int(idx[i])] + (f" (+{len(others)})" if others else ""))
        terms = [names[int(idx[i])]] + [f"{K[i, k]:+.4g} {names[k]}" for k in others]
        expressions.append(" ".join(terms))
    return K, labels, expressions


def parameter_uncertainty(
    W,
    residual,
    x,
    names: Sequence[str],
    *,
    n_base: int,
    transform=None,
    expressions: Sequence[str] | None = None,
    threshold: float = 10.0,
) -> Uncertainty:
    """:class:`Uncertainty` of the least-squares estimate ``x`` of ``W x = y`` (``W`` ``(m, q)``,
    weighted as the fit was, ``residual = y - W x``). ``transform`` ``(q, q)``: report
    ``transform @ x`` instead (e.g. named base parameters; the covariance is transformed alike)."""
    W = np.asarray(W, np.float64)
    rho = np.asarray(residual, np.float64).ravel()
    m, qn = W.shape
    dof = max(m - qn, 1)
    sigma2 = float(rho @ rho) / dof
    sv = np.linalg.svd(W, compute_uv=False)
    cond = float(sv[0] / sv[-1]) if sv[-1] > 0 else float("inf")
    N = W.T @ W
    try:
        cov = sigma2 * np.linalg.inv(N)
    except np.linalg.LinAlgError:
        cov = np.full((qn, qn), np.inf)
    x = np.asarray(x, np.float64)
    if transform is not None:
        T = np.asarray(transform, np.float64)
        x = T @ x
        cov = T @ cov @ T.T
    std = np.sqrt(np.maximum(np.diag(cov), 0.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(np.abs(x) > 0, 100.0 * std / np.abs(x), np.inf)
    names = list(names)
    poor = [n for n, r_ in zip(names, rel) if not r_ <= threshold]
    return Uncertainty(
        names,
        list(expressions) if expressions is not None else list(names),
        x,
        std,
        rel,
        cov,
        int(n_base),
        float(np.sqrt(sigma2)),
        int(dof),
        cond,
        float(threshold),
        poor,
    )


def default_prior_std(
    pi0, mass_bounds=None, *, relative: float = 0.3, com: float = 0.05, n_friction: int = 0, friction_std: float = 1.0
) -> np.ndarray:
    """Prior standard deviations of the standard parameters ``(10 nb + n_friction,)``: mass
    ``relative * m0`` (or a quarter of the bound interval when ``mass_bounds`` ``(nb, 2)`` gives a
    finite one), first moments ``sqrt((relative |h0|)^2 + (com m0)^2)`` (COM uncertain by ``com``
    metres), rotational inertia entries ``relative`` times the body's largest nominal moment,
    friction coefficients ``friction_std``. Zero-mass bodies get a 1e-3 floor."""
    pi0 = np.asarray(pi0, np.float64).reshape(-1, 10)
    m0 = np.maximum(pi0[:, 0], 1e-3)
    s_m = relative * m0
    if mass_bounds is not None:
        mb = np.asarray(mass_bounds, np.float64)
        fin = np.isfinite(mb).all(1)
        s_m = np.where(fin, np.maximum((mb[:, 1] - mb[:, 0]) / 4, 1e-6), s_m)
    s_h = np.sqrt((relative * np.abs(pi0[:, 1:4])) ** 2 + (com * m0[:, None]) ** 2)
    Imax = np.maximum(np.abs(pi0[:, [4, 6, 9]]).max(1), 1e-6)
    s_I = np.repeat((relative * Imax)[:, None], 6, 1)
    s = np.concatenate([s_m[:, None], s_h, s_I], 1).ravel()
    return np.concatenate([s, np.full(n_friction, friction_std)])


@dataclasses.dataclass
class DataShare:
    """Which standard parameters the data determine (module docstring). share: ``(p,)`` in
    [0, 1]; names; per_body: ``{body: {"mass": share, "com": mean over mx, my, mz,
    "inertia": mean over the six entries}}``; the classification uses ``high`` and ``low``."""

    names: list
    share: np.ndarray
    per_body: dict
    high: float = 0.9
    low: float = 0.1

    def source(self, s: float) -> str:
        return "data" if s >= self.high else ("prior" if s <= self.low else "data+prior")

    def table(self) -> str:
        w = max(12, max(len(b) for b in self.per_body) + 2)
        lines = [f"{'body':<{w}}{'mass':>17}{'COM (m c)':>17}{'inertia':>17}"]
        for b, d in self.per_body.items():
            cells = "".join(f"{100 * d[k]:>6.0f}% {self.source(d[k]):<10}" for k in ("mass", "com", "inertia"))
            lines.append(f"{b:<{w}}{cells}")
        return "\n".join(lines)


def data_share(A, sigma: float, prior_std, names: Sequence[str], body_names: Sequence[str]) -> DataShare:
    """:class:`DataShare` for the (weighted) regressor ``A`` ``(m, p [+ friction])`` of the
    standard parameters, residual standard deviation ``sigma`` (weighted units) and prior
    standard deviations ``prior_std`` (``(p [+ friction],)``, :func:`default_prior_std`)."""
    A = np.asarray(A, np.float64)
    s = np.asarray(prior_std, np.float64)
    H = A.T @ A / max(sigma, 1e-300) ** 2 + np.diag(1.0 / s**2)
    P = np.linalg.inv(H)
    share = np.clip(1.0 - np.diag(P) / s**2, 0.0, 1.0)
    nb = len(body_names)
    per = {}
    for b, name in enumerate(body_names):
        sb = share[10 * b : 10 * b + 10]
        per[name] = {"mass": float(sb[0]), "com": float(np.mean(sb[1:4])), "inertia": float(np.mean(sb[4:10]))}
    return DataShare(list(names)[: 10 * nb], share[: 10 * nb], per)
