"""Benchmark harness: algorithm x robot x batch x dtype, against the peers installed.

Run ``jaxdyn bench --help`` (or ``python benchmarks/run.py``). For each case it reports jit
compile time, median time per batch after warm-up (``block_until_ready``), samples per second,
peak device memory where the backend reports it, and - in the same process - Pinocchio's time
per call from Python when ``pin`` is importable, as the ratio jaxdyn / Pinocchio (throughput).
Results go to ``benchmarks/results/<device>-<date>.{json,md}``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import time

ALGOS = ("rnea", "crba", "aba", "aba_jacobian")


def _model(name, dtype):
    import jaxdyn
    from jaxdyn import builders

    if name.startswith("chain"):
        return builders.chain(int(name[5:]), "revolute", seed=0, dtype=dtype)
    robot, _, base = name.partition(":")
    fb = None if not base else base == "floating"
    return jaxdyn.load_robot(robot, floating_base=fb, dtype=dtype)


def _kernel(algo):
    import jax

    import jaxdyn

    if algo == "rnea":
        return jax.vmap(jaxdyn.rnea, in_axes=(None, 0, 0, 0)), "q qd x"
    if algo == "aba":
        return jax.vmap(jaxdyn.aba, in_axes=(None, 0, 0, 0)), "q qd x"
    if algo == "crba":
        return jax.vmap(jaxdyn.crba, in_axes=(None, 0)), "q"
    if algo == "aba_jacobian":
        f = jax.jacfwd(lambda m, q, v, t: jaxdyn.aba(m, q, v, t), argnums=(1, 2, 3))
        return jax.vmap(f, in_axes=(None, 0, 0, 0)), "q qd x"
    raise ValueError(f"unknown algorithm {algo!r}; choose from {ALGOS}")


def _inputs(model, B, seed=0):
    import jax

    import jaxdyn

    k = jax.random.split(jax.random.PRNGKey(seed), 3)
    q = jax.vmap(lambda kk: jaxdyn.random_configuration(model, kk))(jax.random.split(k[0], B))
    qd = jax.random.normal(k[1], (B, model.nv), model.dtype)
    x = jax.random.normal(k[2], (B, model.nv), model.dtype)
    return q, qd, x


def measure(f, args, repeats):
    """jit-compile ``f`` for ``args``, warm up, time ``repeats`` calls with block_until_ready.
    Returns ``(output, compile seconds, median seconds per call)``."""
    import jax

    t0 = time.perf_counter()
    c = jax.jit(f).lower(*args).compile()
    compile_s = time.perf_counter() - t0
    out = jax.block_until_ready(c(*args))
    ts = []
    for _ in range(repeats):
        t = time.perf_counter()
        jax.block_until_ready(c(*args))
        ts.append(time.perf_counter() - t)
    ts.sort()
    return out, compile_s, ts[len(ts) // 2]


def time_jaxdyn(model, algo, B, repeats):
    import jax

    f, sig = _kernel(algo)
    q, qd, x = _inputs(model, B)
    args = (model, q) if sig == "q" else (model, q, qd, x)
    _, compile_s, med = measure(f, args, repeats)
    peak = None
    try:
        stats = jax.devices()[0].memory_stats() or {}
        peak = stats.get("peak_bytes_in_use")
    except Exception:  # noqa: BLE001 - backends without memory stats
        pass
    return {"compile_s": compile_s, "batch_s": med, "samples_per_s": B / med, "peak_bytes": peak}


def time_pinocchio(robot_name, algo, repeats=2000):
    """Seconds per call of Pinocchio from Python, or None if unavailable for this case."""
    try:
        import numpy as np
        import pinocchio as pin
    except ImportError:
        return None
    if robot_name.startswith("chain") or algo == "aba_jacobian":
        return None
    from jaxdyn.robots import DEFAULT_FLOATING, robot_path

    robot, _, base = robot_name.partition(":")
    fb = DEFAULT_FLOATING[robot] if not base else base == "floating"
    m = pin.buildModelFromUrdf(robot_path(robot), pin.JointModelFreeFlyer()) if fb else pin.buildModelFromUrdf(robot_path(robot))
    d = m.createData()
    rng = np.random.default_rng(0)
    q = pin.neutral(m)
    v, a = rng.normal(size=m.nv), rng.normal(size=m.nv)
    call = {"rnea": lambda: pin.rnea(m, d, q, v, a), "aba": lambda: pin.aba(m, d, q, v, a),
            "crba": lambda: pin.crba(m, d, q)}[algo]
    for _ in range(100):
        call()
    ts = []
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(repeats):
            call()
        ts.append((time.perf_counter() - t) / repeats)
    return sorted(ts)[2]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="jaxdyn bench")
    p.add_argument("--algos", default="rnea,crba,aba", help=f"comma list from {ALGOS}")
    p.add_argument("--robots", default="panda,talos", help="shipped robots (robot[:fixed|floating]) and chainN")
    p.add_argument("--batches", default="1,4096")
    p.add_argument("--dtypes", default="float32")
    p.add_argument("--repeats", type=int, default=20)
    p.add_argument("--out", default=os.path.join("benchmarks", "results"))
    p.add_argument("--no-save", action="store_true")
    args = p.parse_args(argv)

    from .cli import x64_context

    with x64_context("float64" in args.dtypes):
        return _run(args)


def _run(args) -> int:
    import jax
    import jax.numpy as jnp

    import jaxdyn

    dev = jax.devices()[0]
    env = {
        "date": datetime.date.today().isoformat(), "jaxdyn": jaxdyn.__version__, "jax": jax.__version__,
        "device": f"{dev.platform}:{dev.device_kind}", "cpu": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
    }
    try:
        import pinocchio as pin

        env["pinocchio"] = pin.__version__
    except ImportError:
        env["pinocchio"] = None
    print(" ".join(f"{k}={v}" for k, v in env.items()))
    hdr = f"{'algo':<13}{'robot':<16}{'dtype':<8}{'batch':>8}{'compile s':>10}{'us/batch':>12}{'samples/s':>12}{'pin us/call':>12}{'ratio':>8}"
    print(hdr)
    rows = []
    pin_cache = {}
    for dt in args.dtypes.split(","):
        dtype = {"float32": jnp.float32, "float64": jnp.float64}[dt]
        for robot in args.robots.split(","):
            model = _model(robot, dtype)
            for algo in args.algos.split(","):
                key = (robot, algo)
                if key not in pin_cache:
                    pin_cache[key] = time_pinocchio(robot, algo)
                pin_s = pin_cache[key]
                for B in map(int, args.batches.split(",")):
                    r = time_jaxdyn(model, algo, B, args.repeats)
                    ratio = r["samples_per_s"] * pin_s if pin_s else None
                    row = {"algo": algo, "robot": robot, "nv": model.nv, "dtype": dt, "batch": B, **r,
                           "pinocchio_s_per_call": pin_s, "ratio_vs_pinocchio": ratio}
                    rows.append(row)
                    print(f"{algo:<13}{robot:<16}{dt:<8}{B:>8}{r['compile_s']:>10.2f}{r['batch_s'] * 1e6:>12.1f}"
                          f"{r['samples_per_s']:>12.3g}{(pin_s or float('nan')) * 1e6:>12.2f}"
                          f"{(ratio if ratio else float('nan')):>8.2f}")
    if not args.no_save:
        os.makedirs(args.out, exist_ok=True)
        stem = os.path.join(args.out, f"{dev.platform}-{env['date']}")
        with open(stem + ".json", "w") as fh:
            json.dump({"env": env, "rows": rows}, fh, indent=1)
        with open(stem + ".md", "w") as fh:
            fh.write(f"# jaxdyn benchmark, {env['date']}\n\n" + ", ".join(f"{k}: {v}" for k, v in env.items()) + "\n\n")
            fh.write("| algo | robot | nv | dtype | batch | compile s | us/batch | samples/s | Pinocchio us/call | jaxdyn/Pinocchio |\n")
            fh.write("|---|---|---|---|---|---|---|---|---|---|\n")
            for r in rows:
                pin_us = f"{r['pinocchio_s_per_call'] * 1e6:.2f}" if r["pinocchio_s_per_call"] else "n/a"
                rat = f"{r['ratio_vs_pinocchio']:.2f}" if r["ratio_vs_pinocchio"] else "n/a"
                fh.write(f"| {r['algo']} | {r['robot']} | {r['nv']} | {r['dtype']} | {r['batch']} | {r['compile_s']:.2f} | "
                         f"{r['batch_s'] * 1e6:.1f} | {r['samples_per_s']:.3g} | {pin_us} | {rat} |\n")
        print(f"wrote {stem}.json and {stem}.md")
    return 0
