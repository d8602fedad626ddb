"""Timing helpers for ``jaxdyn demo`` and the benchmark harness (benchmarks/harness.py)."""

from __future__ import annotations

import time


def program_bytes(compiled):
    """Device memory XLA's buffer assignment gives the compiled program: arguments + outputs +
    the temporary arena (packed live temporaries), or None. A backend-independent stand-in for
    the peak device memory where the runtime does not report it (CPU). (XLA CPU's
    ``peak_memory_in_bytes`` leaves the temporaries out, so it is not used.)"""
    try:
        ma = compiled.memory_analysis()
        return int(ma.argument_size_in_bytes + ma.output_size_in_bytes + ma.temp_size_in_bytes)
    except Exception:  # noqa: BLE001 - not every backend implements it
        return None


def measure(f, args, repeats, max_seconds=20.0, info=None, compiler_options=None):
    """``jax.jit``-compile ``f`` for ``args`` (with XLA ``compiler_options`` if given), warm up,
    time ``repeats`` calls with block_until_ready. Returns ``(output, compile s, median s per
    call)``; ``info`` (a dict), if given, receives ``program_bytes``."""
    import jax

    t0 = time.perf_counter()
    c = jax.jit(f, compiler_options=compiler_options).lower(*args).compile()
    compile_s = time.perf_counter() - t0
    if info is not None:
        info["program_bytes"] = program_bytes(c)
    out = jax.block_until_ready(c(*args))
    return out, compile_s, median_time(c, args, repeats, max_seconds, warm=True)


def median_time(f, args, repeats, max_seconds=float("inf"), warm=False):
    """Median seconds of ``f(*args)`` over ``repeats`` calls (``block_until_ready``), after one
    warm-up call unless ``warm``; stops early once ``max_seconds`` have passed (slow cases)."""
    import jax

    if not warm:
        jax.block_until_ready(f(*args))
    ts = []
    budget = time.perf_counter() + max_seconds
    for _ in range(repeats):
        t = time.perf_counter()
        jax.block_until_ready(f(*args))
        ts.append(time.perf_counter() - t)
        if time.perf_counter() > budget:  # a very slow case: fewer repeats, still a median
            break
    ts.sort()
    return ts[len(ts) // 2]
