"""Batches of trajectory optimisation problems for :mod:`jaxdyn.trajopt` without lock-step waste.

``jax.vmap`` of :func:`~jaxdyn.trajopt.fddp` (or :func:`~jaxdyn.trajopt.ilqr`) is a
``lax.while_loop`` with a batched predicate: every iteration of the batch runs the iteration's
body on all of its problems, and the batch runs until its slowest problem has converged. Masks
keep the finished problems' results unchanged, but their share of the work is spent all the
same, so a batch whose problems need 10 to 50 iterations pays 50 iterations for each.

:func:`solve_batch` keeps a fixed number of *slots*, each solving one problem at a time, in one
jitted ``lax.while_loop``. Each pass of the loop is one solver iteration of every occupied slot
(``vmap`` over the slots); a slot whose problem has finished (converged, failed or out of
iterations) writes that problem's result and takes the next unsolved problem of the queue in the
same pass. The work is then the sum of the problems' iterations (plus the passes of the last
``slots`` problems, which finish with some slots idle) instead of the batch size times the
largest count. The problem data live in the device's memory as one pytree with a leading axis;
``problem(params_i)`` builds the ``i``-th problem inside the trace, so targets, weights, initial
states and guesses are arrays of that pytree and a new batch of the same shapes reuses the
compiled program.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .costs import Cost
from .dynamics import Dynamics
from .ilqr import ILQROptions, ILQRResult, _iterate, _start, checked, finish, host_value, running


class BatchResult(NamedTuple):
    """Output of :func:`solve_batch`: ``result``, an :class:`ILQRResult` whose fields have the
    leading axis ``N`` (the problems, in the order of ``params``), and ``passes``, the number of
    batched iterations run (each one iteration of every occupied slot; the solves' own
    ``result.iterations`` plus each problem's evaluation of its guess, spread over the slots)."""

    result: ILQRResult
    passes: jnp.ndarray


class Problem(NamedTuple):
    """One problem of a batch (:func:`solve_batch`): ``dynamics``, ``cost``, initial state
    ``x0 (nx,)``, initial controls ``u_init (T, nu)`` and, for :func:`fddp`, the initial states
    ``x_init (T+1, nx)`` (``None``: ``x0`` at every knot)."""

    dynamics: Dynamics
    cost: Cost
    x0: Any
    u_init: Any
    x_init: Any = None


def _arrays(pr: Problem, dtype, shooting: bool):
    """``(x0, u_init, x_init)`` of a problem as arrays of ``dtype`` (``x_init`` ``None`` for
    single shooting)."""
    x0 = jnp.asarray(pr.x0, dtype)
    us = jnp.asarray(pr.u_init, dtype)
    if not shooting:
        return x0, us, None
    xs = jnp.broadcast_to(x0, (us.shape[0] + 1, x0.shape[0])) if pr.x_init is None else pr.x_init
    return x0, us, jnp.asarray(xs, dtype)


@eqx.filter_jit
def _solve_batch(problem, params, lo, hi, opt: ILQROptions, shooting: bool, slots: int, dtype) -> BatchResult:
    n = jax.tree_util.tree_leaves(params)[0].shape[0]

    def build(i):
        return problem(jax.tree_util.tree_map(lambda a: a[i], params))

    def start(i):
        pr = build(i)
        x0, us, xs = _arrays(pr, dtype, shooting)
        return _start(pr.dynamics, pr.cost, x0, us, xs, lo, hi, opt)

    def iterate(i, s):
        pr = build(i)
        return _iterate(pr.dynamics, pr.cost, lo, hi, opt, shooting, s)

    def select(mask, a, b):
        return jax.tree_util.tree_map(
            lambda x, y: jnp.where(mask.reshape(mask.shape + (1,) * (x.ndim - 1)), x, y), a, b
        )

    idx0 = jnp.arange(slots)
    state0 = jax.vmap(start)(idx0)
    out0 = jax.tree_util.tree_map(lambda a: jnp.zeros((n,) + a.shape[1:], a.dtype), jax.vmap(finish)(state0))

    def body(carry):
        state, idx, nxt, out, passes = carry
        occupied = idx >= 0
        safe = jnp.maximum(idx, 0)
        state = select(occupied & jax.vmap(lambda s: running(s, opt))(state), jax.vmap(iterate)(safe, state), state)
        finished = occupied & ~jax.vmap(lambda s: running(s, opt))(state)

        def refill(args):
            state, idx, nxt, out = args
            where_to = jnp.where(finished, idx, n)  # out of range: not written
            out = jax.tree_util.tree_map(lambda o, r: o.at[where_to].set(r, mode="drop"), out, jax.vmap(finish)(state))
            take = nxt + jnp.cumsum(finished) - 1  # the next problems of the queue, in slot order
            idx = jnp.where(finished, jnp.where(take < n, take, -1), idx)
            state = select(finished & (idx >= 0), jax.vmap(start)(jnp.maximum(idx, 0)), state)
            return state, idx, nxt + jnp.sum(finished), out

        state, idx, nxt, out = jax.lax.cond(jnp.any(finished), refill, lambda args: args, (state, idx, nxt, out))
        return state, idx, nxt, out, passes + 1

    carry = (state0, idx0, jnp.asarray(slots), out0, jnp.asarray(0))
    _, _, _, out, passes = jax.lax.while_loop(lambda c: jnp.any(c[1] >= 0), body, carry)
    return BatchResult(out, passes)


@functools.lru_cache(maxsize=16)
def _on_devices(problem, opt: ILQROptions, shooting: bool, slots: int, dtype, devices: tuple):
    """:func:`_solve_batch` as one ``jax.pmap`` over ``devices``, each solving its own queue (the
    leading axis of ``params``) independently; cached, so a batch of the same structure reuses
    the compiled program."""
    return jax.pmap(
        lambda params, lo, hi: _solve_batch(problem, params, lo, hi, opt, shooting, slots, dtype),
        in_axes=(0, None, None),
        devices=devices,
    )


def solve_batch(
    problem: Callable[[Any], Problem],
    params,
    method: str = "fddp",
    u_lower=None,
    u_upper=None,
    options: ILQROptions = ILQROptions(),
    slots: int | None = None,
    devices=None,
) -> BatchResult:
    """Solve ``N`` problems of one structure by :func:`fddp` or :func:`ilqr`, each iteration
    of ``slots`` problems at a time batched, a finished problem's slot taking the next problem
    at once (module docstring): the work is the sum of the problems' iterations, not ``N``
    times the largest.

    Args:
      problem: ``problem(p) -> Problem`` for the pytree ``p`` of one problem's data (a static
        function: a new one recompiles). It is called inside the trace, with ``p`` a slice of
        ``params``; the problems must share their shapes and structure (the dynamics' and
        costs' static fields, the horizon, ``x_init`` given or not).
      params: a pytree of arrays with a leading axis of size ``N`` (targets, initial states,
        guesses, weights ...).
      method: ``"fddp"`` (multiple shooting; ``Problem.x_init`` may be given) or ``"ilqr"``.
      u_lower, u_upper: control limits shared by the problems (as for :func:`ilqr`).
      options: :class:`ILQROptions`, shared.
      slots: problems iterated at once on each device (``None``: ``min(N / devices, 64)``).
        Fewer slots waste less at the end of the queue, more amortise each iteration's fixed
        cost over more problems.
      devices: the devices to spread the problems over (``None``: the default device only),
        each running its own queue of ``ceil(N / devices)`` problems in its own slots (one
        ``jax.pmap``; the queue is padded with copies of the last problem, whose results are
        dropped). On the CPU, ``XLA_FLAGS=--xla_force_host_platform_device_count=<cores>``
        (set before JAX is imported) makes each core a device. (A Panda batch over two host
        devices used to hang there: jaxlib's batched LAPACK factorisation, which iLQR's
        Riccati step then called, can deadlock XLA's CPU thread pool; it now factors with
        :mod:`jaxdyn.linalg`.)

    Returns a :class:`BatchResult`: ``result`` an :class:`ILQRResult` whose every field has the
    leading axis ``N``, in the order of ``params``, each problem's result that of its own
    :func:`fddp` / :func:`ilqr` solve; ``passes`` the batched iterations run.
    The first problem is built outside the trace and checked as :func:`fddp` checks its inputs
    (shapes, and values where concrete); ``params`` must be arrays of one leading size.
    """
    if method not in ("fddp", "ilqr"):
        raise ValueError(f"solve_batch: method must be 'fddp' or 'ilqr', got {method!r}")
    if not callable(problem):
        raise ValueError(f"solve_batch: problem must be a function p -> Problem, got {type(problem).__name__}")
    leaves = jax.tree_util.tree_leaves(params)
    sizes = {int(np.shape(a)[0]) if np.ndim(a) > 0 else -1 for a in leaves}
    if not leaves or len(sizes) != 1 or -1 in sizes:
        raise ValueError(
            "solve_batch: params must be a pytree of arrays with one common leading (batch) axis, got leading "
            f"sizes {sorted(str(s) for s in sizes)}"
        )
    n = sizes.pop()
    if n < 1:
        raise ValueError("solve_batch: params hold no problem (leading size 0)")
    devs = tuple(jax.local_devices()[:1] if devices is None else devices)
    if not devs:
        raise ValueError("solve_batch: devices is empty")
    devs = devs[: min(len(devs), n)]
    per = -(-n // len(devs))  # problems per device
    slots = min(per, 64) if slots is None else slots
    if not isinstance(slots, (int, np.integer)) or not 1 <= slots <= per:
        raise ValueError(
            f"solve_batch: slots must be an integer in [1, {per}] (the problems per device: {n} on "
            f"{len(devs)}), got {slots!r}"
        )
    shooting = method == "fddp"
    if shooting and 1.0 not in options.alphas:
        raise ValueError("solve_batch: options.alphas must contain the full step 1.0 (it closes the gaps)")
    p0 = jax.tree_util.tree_map(lambda a: a[0], params)
    pr = problem(p0)
    if not isinstance(pr, Problem):
        raise ValueError(f"solve_batch: problem(p) must return a trajopt.Problem, got {type(pr).__name__}")
    if not shooting and pr.x_init is not None:
        raise ValueError("solve_batch: method 'ilqr' takes no x_init (single shooting); use method 'fddp'")
    x0, us, lo, hi = checked("solve_batch", pr.dynamics, pr.cost, pr.x0, pr.u_init, u_lower, u_upper, options)
    if shooting and pr.x_init is not None:
        xs = jnp.asarray(pr.x_init, x0.dtype)
        T, nx = us.shape[0], pr.dynamics.nx
        if xs.shape != (T + 1, nx):
            raise ValueError(f"solve_batch: x_init must have shape ({T + 1}, {nx}) (T+1 states), got {xs.shape}")
        host = host_value(pr.x_init)
        if host is not None and not np.all(np.isfinite(host)):
            raise ValueError("solve_batch: x_init of problem 0 contains NaN or inf")
    if len(devs) == 1:
        return _solve_batch(problem, params, lo, hi, options, shooting, int(slots), x0.dtype)
    d = len(devs)

    def split(a):
        a = jnp.concatenate([a, jnp.repeat(a[-1:], d * per - n, 0)]) if d * per > n else a
        return a.reshape((d, per) + a.shape[1:])

    out = _on_devices(problem, options, shooting, int(slots), x0.dtype, devs)(
        jax.tree_util.tree_map(split, params), lo, hi
    )
    result = jax.tree_util.tree_map(lambda a: a.reshape((d * per,) + a.shape[2:])[:n], out.result)
    return BatchResult(result, jnp.max(out.passes))
