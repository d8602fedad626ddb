"""Excitation trajectories: finite Fourier series (Swevers et al. 1997) and their optimisation.

A finite Fourier series per joint (Swevers, Ganseman, Tukel, De Schutter & Van Brussel 1997,
"Optimal robot excitation and identification", IEEE T-RA 13(5), eq. (5)):

    q_j(t) = q0_j + sum_{l=1..L} a_jl / (l w) sin(l w t) - b_jl / (l w) cos(l w t),   w = 2 pi f0,

is periodic (period ``1 / f0``), so the excitation can be repeated and averaged, and its
derivatives are exact. :func:`optimize_excitation` chooses ``a, b, q0`` to make the base
regressor well conditioned, as Swevers et al. do, with the gradient of the criterion through
jaxdyn's regressor (``jax.grad``) and optax's Adam instead of a constrained SQP:

* criterion ``"cond"`` (default): ``log cond(W)``, ``W`` the regressor of the base parameters
  (orthonormal basis of :func:`~jaxdyn.sysid.structural_base`, plus friction columns if asked)
  stacked over ``n_samples`` instants of one period; ``"logdet"``: ``-log det(W^T W) / r``
  (D-optimality);
* constraints: joint position limits (shrunk by ``margin`` of the half-range on each side;
  unlimited revolute joints: +-pi rad, prismatic: +-0.5 m), velocity limits and acceleration
  limits (times ``1 - margin``), as a quadratic penalty on a grid of ``4 n_samples`` instants
  during the optimisation; afterwards each joint's oscillation is scaled down (and its centre
  moved) just enough that the limits hold on a dense grid, so the result respects them exactly;
* the robot starts and ends at rest: ``sum_l a_jl = 0`` (``qd(0) = 0``) and
  ``sum_l l b_jl = 0`` (``qdd(0) = 0``) hold by construction (``a_j1``, ``b_j1`` are computed
  from the others), so a controller can move to ``q(0)``, stop, and play the trajectory.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from .. import joints
from .._files import replace_atomically
from ..algorithms.regressor import regressor
from ..model import Model
from .data import check_model


def fourier_excitation(
    model: Model,
    duration: float,
    dt: float,
    *,
    seed: int = 0,
    n_harmonics: int = 5,
    base_frequency: float = 0.1,
    margin: float = 0.1,
):
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
    half = joints.dof_ranges(model.joint_types, 1.0, 0.1)
    ok = np.isfinite(lo) & np.isfinite(hi) & (hi > lo)
    lo, hi = np.where(ok, lo, -half), np.where(ok, hi, half)
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


@dataclasses.dataclass
class FourierTrajectory:
    """A finite Fourier series per joint (module docstring): ``a``, ``b`` ``(n, L)`` [rad/s or
    m/s], ``q0`` ``(n,)``, ``base_frequency`` ``f0`` [Hz]."""

    a: np.ndarray
    b: np.ndarray
    q0: np.ndarray
    base_frequency: float
    joint_names: tuple = ()

    @property
    def period(self) -> float:
        return 1.0 / self.base_frequency

    @property
    def n_harmonics(self) -> int:
        return int(np.asarray(self.a).shape[1])

    def evaluate(self, t):
        """``(q, qd, qdd)`` ``(T, n)`` at the times ``t`` ``(T,)`` (exact derivatives)."""
        return _series(
            np.asarray(self.a, np.float64),
            np.asarray(self.b, np.float64),
            np.asarray(self.q0, np.float64),
            self.base_frequency,
            np.asarray(t, np.float64),
            np,
        )

    def sample(self, rate: float, periods: float = 1.0):
        """``(t, q, qd, qdd)`` at ``rate`` Hz over ``periods`` periods (end point excluded)."""
        t = np.arange(int(round(periods * self.period * rate))) / rate
        return (t,) + self.evaluate(t)

    def to_dict(self) -> dict:
        return {
            "base_frequency": float(self.base_frequency),
            "joint_names": list(self.joint_names),
            "a": np.asarray(self.a).tolist(),
            "b": np.asarray(self.b).tolist(),
            "q0": np.asarray(self.q0).tolist(),
        }

    @classmethod
    def from_dict(cls, d: dict) -> FourierTrajectory:
        return cls(
            np.array(d["a"], np.float64),
            np.array(d["b"], np.float64),
            np.array(d["q0"], np.float64),
            float(d["base_frequency"]),
            tuple(d.get("joint_names", ())),
        )


def _series(a, b, q0, f0, t, xp):
    w = 2 * np.pi * f0 * xp.arange(1, a.shape[1] + 1)
    s, c = xp.sin(xp.outer(t, w)), xp.cos(xp.outer(t, w))
    q = q0 + s @ (a / w).T - c @ (b / w).T
    qd = c @ a.T + s @ b.T
    qdd = -s @ (a * w).T + c @ (b * w).T
    return q, qd, qdd


def _rest_coefficients(a_free, b_free, xp):
    """Full ``(a, b)`` from the harmonics 2..L: ``a_1 = -sum a_l`` (``qd(0) = 0``),
    ``b_1 = -sum l b_l`` (``qdd(0) = 0``)."""
    L = a_free.shape[1] + 1
    l = xp.arange(2, L + 1)
    a1 = -xp.sum(a_free, 1, keepdims=True)
    b1 = -xp.sum(b_free * l, 1, keepdims=True)
    return xp.concatenate([a1, a_free], 1), xp.concatenate([b1, b_free], 1)


@dataclasses.dataclass
class ExcitationLimits:
    """Per joint: position interval ``[lower, upper]`` (margin applied), velocity and
    acceleration bounds (margin applied)."""

    lower: np.ndarray
    upper: np.ndarray
    velocity: np.ndarray
    acceleration: np.ndarray

    def check(self, q, qd, qdd, rtol: float = 1e-9) -> dict:
        """Worst violations (<= 0 means respected): ``{"position", "velocity", "acceleration"}``,
        relative to the joint's range / bound."""
        span = self.upper - self.lower
        pos = np.max(np.maximum(q - self.upper, self.lower - q) / span)
        vel = np.max(np.abs(qd) / self.velocity) - 1.0
        acc = np.max(np.abs(qdd) / self.acceleration) - 1.0
        return {"position": float(pos), "velocity": float(vel), "acceleration": float(acc)}


def excitation_limits(model: Model, *, acceleration_limit=10.0, velocity_limit=None, margin: float = 0.05):
    """:class:`ExcitationLimits` for ``model``: its joint limits shrunk by ``margin`` times the
    half-range at each end (unlimited revolute joints: +-pi rad, prismatic: +-0.5 m), its
    velocity limits (or ``velocity_limit``, a number or ``(n,)``; where neither is finite:
    2 rad/s or 0.5 m/s) and ``acceleration_limit`` (a number or ``(n,)``), both times
    ``1 - margin``."""
    check_model(model, "excitation_limits")
    n = model.nv
    if not 0 <= margin < 1:
        raise ValueError(f"excitation_limits: margin must be in [0, 1), got {margin}")
    lo, hi = np.asarray(model.q_lower, np.float64), np.asarray(model.q_upper, np.float64)
    ok = np.isfinite(lo) & np.isfinite(hi) & (hi > lo)
    half = joints.dof_ranges(model.joint_types, np.pi, 0.5)
    lo, hi = np.where(ok, lo, -half), np.where(ok, hi, half)
    half = 0.5 * (hi - lo)
    v = (
        np.asarray(model.velocity_limit, np.float64)
        if velocity_limit is None
        else np.broadcast_to(np.asarray(velocity_limit, np.float64), (n,))
    )
    v = np.where(np.isfinite(v) & (v > 0), v, joints.dof_ranges(model.joint_types, 2.0, 0.5))
    acc = np.broadcast_to(np.asarray(acceleration_limit, np.float64), (n,)).copy()
    if not np.all(acc > 0) or not np.all(v > 0):
        raise ValueError("excitation_limits: velocity and acceleration limits must be positive")
    return ExcitationLimits(lo + margin * half, hi - margin * half, (1 - margin) * v, (1 - margin) * acc)


def enforce_limits(traj: FourierTrajectory, limits: ExcitationLimits, n_grid: int | None = None) -> FourierTrajectory:
    """The trajectory with each joint's oscillation scaled by the largest factor <= 1 (and its
    centre ``q0`` moved) so that positions, velocities and accelerations respect ``limits`` on a
    grid of ``n_grid`` instants per period (default: 200 per period of the highest harmonic, at
    least 4000). Scaling keeps the start and end at rest."""
    n_grid = n_grid or max(4000, 200 * traj.n_harmonics)
    t = np.arange(n_grid) * traj.period / n_grid
    a, b, q0 = (np.array(x, np.float64) for x in (traj.a, traj.b, traj.q0))
    q, qd, qdd = _series(a, b, np.zeros_like(q0), traj.base_frequency, t, np)
    span = np.maximum(q.max(0) - q.min(0), 1e-300)
    s = np.minimum.reduce(
        [
            np.ones_like(q0),
            (limits.upper - limits.lower) / span,
            limits.velocity / np.maximum(np.abs(qd).max(0), 1e-300),
            limits.acceleration / np.maximum(np.abs(qdd).max(0), 1e-300),
        ]
    )
    s = s * (1 - 1e-6)
    lo_o, hi_o = s * q.min(0), s * q.max(0)
    pad = 2e-7 * (limits.upper - limits.lower)
    q0 = np.clip(q0, limits.lower - lo_o + pad, limits.upper - hi_o - pad)
    return dataclasses.replace(traj, a=a * s[:, None], b=b * s[:, None], q0=q0)


@dataclasses.dataclass
class ExcitationResult:
    """Result of :func:`optimize_excitation`.

    trajectory: the optimised :class:`FourierTrajectory` (limits enforced); initial: the random
    feasible start; cond_initial, cond_final: condition numbers of the base regressor stacked over
    ``n_samples`` instants of one period; criterion; history: the criterion (without penalty)
    per step; limits: :class:`ExcitationLimits`; violation: :meth:`ExcitationLimits.check` of the
    result on a dense grid (all <= 0); n_base: columns of the regressor (base parameters +
    friction columns)."""

    trajectory: FourierTrajectory
    initial: FourierTrajectory
    cond_initial: float
    cond_final: float
    criterion: str
    history: np.ndarray
    limits: ExcitationLimits
    violation: dict
    n_base: int
    n_samples: int


_batched_regressor = jax.vmap(regressor, in_axes=(None, 0, 0, 0))


def excitation_regressor(model: Model, traj: FourierTrajectory, base, n_samples: int, friction_velocity=None):
    """``W`` ``(n_samples n, r [+ 2 n])``: the base regressor ``Y B^T`` stacked over
    ``n_samples`` evenly spaced instants of one period (numpy), with viscous and smoothed Coulomb
    (``tanh(qd / friction_velocity)``) columns when ``friction_velocity`` is given."""
    t = np.arange(n_samples) * traj.period / n_samples
    q, qd, qdd = traj.evaluate(t)
    dt = model.dtype
    fv = None if friction_velocity is None else jnp.asarray(friction_velocity, dt)
    return np.asarray(
        _stack_jit(model, jnp.asarray(base, dt), jnp.asarray(q, dt), jnp.asarray(qd, dt), jnp.asarray(qdd, dt), fv),
        np.float64,
    )


def _stack(model, B, q, qd, qdd, friction_velocity):
    Y = _batched_regressor(model, q, qd, qdd) @ B.T  # (M, n, r)
    if friction_velocity is not None:
        n = qd.shape[1]
        eye = jnp.eye(n, dtype=qd.dtype)
        fr = jnp.concatenate([qd[:, :, None] * eye, jnp.tanh(qd / friction_velocity)[:, :, None] * eye], -1)
        Y = jnp.concatenate([Y, fr], -1)
    return Y.reshape(-1, Y.shape[-1])


_stack_jit = jax.jit(_stack)


def _cond(W):
    s = np.linalg.svd(W, compute_uv=False)
    return float(s[0] / s[-1]) if s[-1] > 0 else float("inf")


def random_fourier(
    model: Model, limits: ExcitationLimits, *, n_harmonics: int = 5, base_frequency: float = 0.1, seed: int = 0
) -> FourierTrajectory:
    """A random trajectory (``a, b ~ N(0, 1)`` on harmonics 2..L, harmonic 1 from the rest
    conditions), centred in the limits and scaled into them (:func:`enforce_limits`)."""
    if n_harmonics < 2:
        raise ValueError(
            f"random_fourier: needs n_harmonics >= 2 (the first harmonic keeps the start at rest), got {n_harmonics}"
        )
    if not base_frequency > 0:
        raise ValueError(f"random_fourier: base_frequency must be positive, got {base_frequency}")
    rng = np.random.default_rng(seed)
    n = model.nv
    a, b = _rest_coefficients(rng.standard_normal((n, n_harmonics - 1)), rng.standard_normal((n, n_harmonics - 1)), np)
    traj = FourierTrajectory(
        a * 1e3, b * 1e3, 0.5 * (limits.lower + limits.upper), float(base_frequency), tuple(model.joint_names)
    )
    q = traj.evaluate(np.arange(4000) * traj.period / 4000)[0] - traj.q0
    traj.q0 = traj.q0 - 0.5 * (q.max(0) + q.min(0))
    return enforce_limits(traj, limits)


def _unpack(x, vs, mid, half):
    a, b = _rest_coefficients(x["a"] * vs, x["b"] * vs, jnp)
    return a, b, mid + half * x["c"]


@functools.lru_cache(maxsize=8)
def _excitation_fns(criterion, friction, steps, learning_rate, penalty):
    """``(optimizer, run)``: the jitted Adam loop of :func:`optimize_excitation` (the model and
    the constants are arguments, so calls with the same settings share one compilation)."""
    import optax

    def value(x, model, t_s, t_g, f0, fv, vs, mid, half, lower, upper, vel, acc, Bj):
        a, b, q0 = _unpack(x, vs, mid, half)
        q, qd, qdd = _series(a, b, q0, f0, t_s, jnp)
        W = _stack(model, Bj, q, qd, qdd, fv if friction else None)
        # squared singular values from the small Gram matrix (much faster than an SVD of W)
        e = jnp.maximum(jnp.linalg.eigvalsh(W.T @ W), 1e-300)
        crit = 0.5 * jnp.log(e[-1] / e[0]) if criterion == "cond" else -jnp.mean(jnp.log(e))
        qg, qdg, qddg = _series(a, b, q0, f0, t_g, jnp)
        span = upper - lower
        v = (
            jnp.mean(jax.nn.relu((qg - upper) / span) ** 2 + jax.nn.relu((lower - qg) / span) ** 2)
            + jnp.mean(jax.nn.relu(jnp.abs(qdg) / vel - 1.0) ** 2)
            + jnp.mean(jax.nn.relu(jnp.abs(qddg) / acc - 1.0) ** 2)
        )
        return crit + penalty * v, crit

    opt = optax.adam(optax.cosine_decay_schedule(learning_rate, max(steps, 1), alpha=0.05))
    vg = jax.value_and_grad(value, has_aux=True)

    def run(x, state, n, *c):
        def body(carry, _):
            x, state = carry
            (_, crit), g = vg(x, *c)
            upd, state = opt.update(g, state, x)
            return (optax.apply_updates(x, upd), state), crit

        (x, state), crits = jax.lax.scan(body, (x, state), None, length=n)
        return x, state, crits

    return opt, jax.jit(run, static_argnums=2)


def optimize_excitation(
    model: Model,
    *,
    n_harmonics: int = 5,
    base_frequency: float = 0.1,
    n_samples: int = 100,
    steps: int = 300,
    learning_rate: float = 0.05,
    criterion: str = "cond",
    acceleration_limit=10.0,
    velocity_limit=None,
    margin: float = 0.05,
    friction: bool = False,
    seed: int = 0,
    base=None,
    init: FourierTrajectory | None = None,
    penalty: float = 1e3,
    progress: Callable | None = None,
    chunk_steps: int = 25,
) -> ExcitationResult:
    """Optimise a finite-Fourier-series excitation (module docstring) for ``model``.

    Args:
      n_harmonics, base_frequency [Hz]: the series (period ``1 / base_frequency``).
      n_samples: instants per period at which the regressor is stacked for the criterion.
      steps, learning_rate: Adam iterations and step size (coefficients are normalised by the
        velocity limits, the centres by the half-ranges).
      criterion: ``"cond"`` or ``"logdet"``.
      acceleration_limit, velocity_limit, margin: see :func:`excitation_limits`.
      friction: include viscous and (smoothed) Coulomb columns in the regressor.
      seed: of the random start; init: a start of one's own (made feasible first).
      base: ``B`` from :func:`~jaxdyn.sysid.structural_base` (computed if None).
      penalty: weight of the squared limit violations. progress: ``callable(done, total, value)``.

    Float64 is recommended (``jax.enable_x64``): condition numbers of regressors are large.
    """

    from .regressors import structural_base

    check_model(model, "optimize_excitation")
    if criterion not in ("cond", "logdet"):
        raise ValueError(f"optimize_excitation: criterion must be 'cond' or 'logdet', got {criterion!r}")
    if n_samples < 2:
        raise ValueError(f"optimize_excitation: n_samples must be >= 2, got {n_samples}")
    limits = excitation_limits(
        model, acceleration_limit=acceleration_limit, velocity_limit=velocity_limit, margin=margin
    )
    B = structural_base(model)[0] if base is None else np.asarray(base)
    start = (
        random_fourier(model, limits, n_harmonics=n_harmonics, base_frequency=base_frequency, seed=seed)
        if init is None
        else enforce_limits(init, limits)
    )
    L = start.n_harmonics
    dt = model.dtype
    fv = 0.05 * float(np.min(limits.velocity)) if friction else None
    vs = limits.velocity[:, None]
    mid, half = 0.5 * (limits.lower + limits.upper), 0.5 * (limits.upper - limits.lower)
    x0 = {
        "a": jnp.asarray(np.asarray(start.a)[:, 1:] / vs, dt),
        "b": jnp.asarray(np.asarray(start.b)[:, 1:] / vs, dt),
        "c": jnp.asarray((np.asarray(start.q0) - mid) / half, dt),
    }
    t_s = jnp.asarray(np.arange(n_samples) / n_samples / base_frequency, dt)
    t_g = jnp.asarray(np.arange(4 * n_samples) / (4 * n_samples) / base_frequency, dt)
    consts = tuple(
        jnp.asarray(v, dt) for v in (vs, mid, half, limits.lower, limits.upper, limits.velocity, limits.acceleration, B)
    )

    opt, run = _excitation_fns(criterion, friction, int(steps), float(learning_rate), float(penalty))
    x, state = x0, opt.init(x0)
    history, done = [], 0
    chunk_steps = max(1, min(chunk_steps, max(steps, 1)))
    while done < steps:
        n = min(chunk_steps, steps - done)
        x, state, crits = run(
            x,
            state,
            n,
            model,
            t_s,
            t_g,
            jnp.asarray(base_frequency, dt),
            jnp.asarray(fv if friction else 1.0, dt),
            *consts,
        )
        history.append(np.asarray(crits))
        done += n
        if progress is not None:
            progress(done, steps, float(np.exp(history[-1][-1])) if criterion == "cond" else float(history[-1][-1]))
    a, b, q0 = (np.asarray(v, np.float64) for v in _unpack(x, *consts[:3]))
    traj = enforce_limits(FourierTrajectory(a, b, q0, float(base_frequency), tuple(model.joint_names)), limits)
    cond0 = _cond(excitation_regressor(model, start, B, n_samples, fv))
    cond1 = _cond(excitation_regressor(model, traj, B, n_samples, fv))
    tg = np.arange(max(4000, 200 * L)) * traj.period / max(4000, 200 * L)
    viol = limits.check(*traj.evaluate(tg))
    hist = np.concatenate(history) if history else np.zeros(0)
    return ExcitationResult(
        traj,
        start,
        cond0,
        cond1,
        criterion,
        hist,
        limits,
        viol,
        int(B.shape[0] + (2 * model.nv if friction else 0)),
        int(n_samples),
    )


def write_trajectory_csv(path, result, rate: float = 1000.0, periods: float = 1.0) -> str:
    """Write the trajectory (an :class:`ExcitationResult` or :class:`FourierTrajectory`) as CSV
    for a controller: comment lines (``#``: what it is, the limits, the Fourier coefficients as
    JSON), a header ``t,q:<joint>...,qd:<joint>...,qdd:<joint>...`` and one row per sample at
    ``rate`` Hz over ``periods`` periods. Returns the path."""
    traj = result.trajectory if isinstance(result, ExcitationResult) else result
    t, q, qd, qdd = traj.sample(rate, periods)
    names = traj.joint_names or tuple(f"joint{j + 1}" for j in range(q.shape[1]))
    lines = [
        f"# jaxdyn excite: finite Fourier series, {traj.n_harmonics} harmonics of {traj.base_frequency:g} Hz "
        f"(period {traj.period:g} s), {periods:g} period(s) at {rate:g} Hz",
        "# starts and ends at rest (qd = qdd = 0): move the robot to the first row's q, then play the rows",
    ]
    if isinstance(result, ExcitationResult):
        lines.append(
            f"# criterion {result.criterion}; condition number of the base regressor "
            f"{result.cond_initial:.4g} (random start) -> {result.cond_final:.4g}"
        )
        lim = result.limits
        lines.append(
            "# limits used (margin applied): "
            + json.dumps(
                {
                    "lower": lim.lower.tolist(),
                    "upper": lim.upper.tolist(),
                    "velocity": lim.velocity.tolist(),
                    "acceleration": lim.acceleration.tolist(),
                }
            )
        )
    lines.append("# fourier: " + json.dumps(traj.to_dict()))
    header = ["t"] + [f"{k}:{j}" for k in ("q", "qd", "qdd") for j in names]
    lines.append(",".join(header))
    table = np.concatenate([t[:, None], q, qd, qdd], 1)
    path = os.fspath(path)
    with replace_atomically(path) as tmp, open(tmp, "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")
        np.savetxt(fh, table, delimiter=",", fmt="%.10g")
    return path


def read_trajectory_csv(path) -> FourierTrajectory:
    """The :class:`FourierTrajectory` stored in the ``# fourier:`` line of a CSV written by
    :func:`write_trajectory_csv`."""
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.startswith("# fourier: "):
                return FourierTrajectory.from_dict(json.loads(line[len("# fourier: ") :]))
            if not line.startswith("#"):
                break
    raise ValueError(f"read_trajectory_csv: {path} has no '# fourier:' line")


def plot_excitation(path, result: ExcitationResult) -> str:
    """A PNG: positions, velocities and accelerations of every joint normalised by their limits
    (the limits are the dashed lines at +-1), and the criterion per step. Draws on a ``Figure``
    (Agg canvas), so the user's matplotlib backend is left alone. Returns the path."""
    from matplotlib.figure import Figure

    traj, lim = result.trajectory, result.limits
    t = np.linspace(0.0, traj.period, 2000)
    q, qd, qdd = traj.evaluate(t)
    mid, half = 0.5 * (lim.lower + lim.upper), 0.5 * (lim.upper - lim.lower)
    fig = Figure(figsize=(9, 9), tight_layout=True)
    rows = [
        ((q - mid) / half, "q (limits at +-1)"),
        (qd / lim.velocity, "qd / velocity limit"),
        (qdd / lim.acceleration, "qdd / acceleration limit"),
    ]
    for i, (v, label) in enumerate(rows):
        ax = fig.add_subplot(4, 1, i + 1)
        for j in range(v.shape[1]):
            ax.plot(t, v[:, j], lw=1.0, label=traj.joint_names[j] if traj.joint_names else f"joint {j + 1}")
        for y in (-1, 1):
            ax.axhline(y, color="k", ls="--", lw=0.8)
        ax.set_ylabel(label, fontsize=8)
        ax.set_xlim(0, traj.period)
        if i == 0:
            ax.legend(fontsize=6, ncol=4, loc="upper right")
            ax.set_title(
                f"optimised excitation: {traj.n_harmonics} harmonics of {traj.base_frequency:g} Hz; "
                f"cond {result.cond_initial:.3g} -> {result.cond_final:.3g}",
                fontsize=9,
            )
    ax.set_xlabel("t [s]")
    ax = fig.add_subplot(4, 1, 4)
    h = np.exp(result.history) if result.criterion == "cond" else result.history
    ax.plot(h)
    if result.criterion == "cond":
        ax.set_yscale("log")
    ax.set_xlabel("Adam step")
    ax.set_ylabel("cond (sampled)" if result.criterion == "cond" else "-log det / r", fontsize=8)
    path = os.fspath(path)
    with replace_atomically(path) as tmp:
        fig.savefig(tmp, dpi=90)
    return path
