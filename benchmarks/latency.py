"""Batch-1 latency of a jitted ``jaxdyn.aba`` call on CPU, one fresh subprocess per configuration.

    python benchmarks/latency.py --robots ur5,panda --dtypes float32,float64 --out benchmarks/results/latency-cpu

For one sample (q, qd, tau) the dynamics are a few thousand flops, so the time per call is
dominated by how XLA CPU runs the program, not by the arithmetic. Two XLA CPU facts matter:

* A program whose HloCostAnalysis flop count is >= 1000 is executed asynchronously on a worker
  thread unless async dispatch is off (``jax.config.update("jax_cpu_enable_async_dispatch",
  False)`` before the CPU client is created). The thread hop costs tens of microseconds.
  Process-wide, hence one subprocess per configuration. (jax 0.10.2 declares this option with
  ``config.bool_flag``, which does not read the ``JAX_CPU_ENABLE_ASYNC_DISPATCH`` environment
  variable; the child sets the variable and also calls ``jax.config.update``.)
* The thunk executor runs the thunks sequentially in the caller's thread only if every buffer a
  thunk uses is <= 512 bytes; otherwise it builds a dependency graph and may use a thread pool.
  The table counts the ENTRY instructions (parameters and constants excluded: roughly the thunks)
  and those whose result is > 512 bytes (largest array, for tuples).

Configurations: dispatch {async, sync} x traversal {auto (scan for > 3 moving links), unroll,
latency (unrolled, 6x6 transforms)} x
model {arg: passed to jit, closure: closed over, a compile-time constant} x cores {all, one:
``taskset -c 0``}. Each child reports compile time (``lower().compile()``), the minimum over
blocks of the block medians, the overall median and 90th percentile (us), and a jitted identity
on an (nv,) array timed in the same process: the dispatch floor.
"""

from __future__ import annotations

import argparse
import datetime
import itertools
import json
import math
import os
import re
import shlex
import shutil
import subprocess
import sys

AXES = {
    "dispatch": ("async", "sync"),
    "traversals": ("auto", "unroll", "latency"),
    "model": ("arg", "closure"),
    "cores": ("all", "one"),
}
ELEMENT_BYTES = {
    "pred": 1,
    "s8": 1,
    "u8": 1,
    "f16": 2,
    "bf16": 2,
    "s16": 2,
    "u16": 2,
    "f32": 4,
    "s32": 4,
    "u32": 4,
    "f64": 8,
    "s64": 8,
    "u64": 8,
    "c64": 8,
    "c128": 16,
}
INSTRUCTION = re.compile(r"^\s*(?:ROOT\s+)?%?[\w.\-]+\s*=\s*(.+?)\s+([\w\-]+)\(")
ARRAY_SHAPE = re.compile(r"\b([a-z]+\d*)\[([\d,]*)\]")


def entry_thunks(hlo_text, limit=512):
    """(instructions, instructions with a result > ``limit`` bytes) in the ENTRY computation,
    parameters and constants excluded."""
    lines = hlo_text[hlo_text.index("\nENTRY") :].splitlines()[1:]
    count = large = 0
    for line in lines:
        if line.strip() == "}":
            break
        m = INSTRUCTION.match(line)
        if not m or m.group(2) in ("parameter", "constant"):
            continue
        count += 1
        sizes = [
            ELEMENT_BYTES.get(t, 0) * math.prod(int(n) for n in d.split(",") if n)
            for t, d in ARRAY_SHAPE.findall(m.group(1))
        ]
        large += max(sizes, default=0) > limit
    return count, large


def time_calls(f, args, repeats, blocks):
    """Warm up, then ``blocks`` x ``repeats`` timed calls. Returns (min of block medians, median,
    p90), in microseconds."""
    import time

    import jax
    import numpy as np

    for _ in range(max(20, repeats // 4)):
        jax.block_until_ready(f(*args))
    samples = np.empty((blocks, repeats))
    for b in range(blocks):
        for i in range(repeats):
            t0 = time.perf_counter()
            jax.block_until_ready(f(*args))
            samples[b, i] = time.perf_counter() - t0
    samples *= 1e6
    return (float(np.median(samples, axis=1).min()), float(np.median(samples)), float(np.percentile(samples, 90)))


def child(spec):
    """Runs in the subprocess: build, compile and time one configuration; print one JSON line."""
    import time

    import jax

    jax.config.update("jax_cpu_enable_async_dispatch", spec["dispatch"] == "async")
    import jax.numpy as jnp
    from harness import _inputs, _model

    import jaxdyn

    model = _model(spec["robot"], getattr(jnp, spec["dtype"]))
    # the process's one configuration: the override (part of jit's key) stays on to the end
    jaxdyn.executor(traversal=spec["traversal"]).__enter__()
    q, qd, tau = (a[0] for a in _inputs(model, 1))
    if spec["model"] == "arg":
        f, args = jax.jit(jaxdyn.aba), (model, q, qd, tau)
    else:
        f, args = jax.jit(lambda q, qd, tau: jaxdyn.aba(model, q, qd, tau)), (q, qd, tau)
    t0 = time.perf_counter()
    compiled = f.lower(*args).compile()
    compile_s = time.perf_counter() - t0
    thunks, large = entry_thunks(compiled.as_text())
    cost = compiled.cost_analysis()
    cost = cost[0] if isinstance(cost, (list, tuple)) else cost
    identity = time_calls(jax.jit(lambda x: x), (jnp.zeros(model.nv, model.dtype),), spec["repeats"], spec["blocks"])
    best, median, p90 = time_calls(f, args, spec["repeats"], spec["blocks"])
    device = jax.devices()[0]
    print(
        json.dumps(
            dict(
                spec,
                compile_s=compile_s,
                thunks=thunks,
                large_buffers=large,
                flops=cost.get("flops"),
                identity_us=identity[0],
                aba_us=best,
                median_us=median,
                p90_us=p90,
                dtype_out=str(q.dtype),
                async_dispatch=jax.config.read("jax_cpu_enable_async_dispatch"),
                affinity=len(os.sched_getaffinity(0)),
                device_kind=device.device_kind,
                platform=device.platform,
                jax_version=jax.__version__,
            )
        )
    )


def run_child(spec):
    """Run one configuration in a fresh process; returns its result dict (``failed`` on error)."""
    env = dict(
        os.environ,
        JAX_PLATFORMS="cpu",
        JAX_ENABLE_X64="1" if spec["dtype"] == "float64" else "0",
        JAX_CPU_ENABLE_ASYNC_DISPATCH="true" if spec["dispatch"] == "async" else "false",
    )
    cmd = [sys.executable, os.path.abspath(__file__), "--child", json.dumps(spec)]
    if spec["cores"] == "one":
        cmd = ["taskset", "-c", "0", *cmd]
    try:
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
        lines = p.stdout.strip().splitlines()
        if p.returncode == 0 and lines:
            return json.loads(lines[-1])
        error = f"exit {p.returncode}: " + p.stderr.strip()[-1500:]
    except (subprocess.TimeoutExpired, json.JSONDecodeError) as e:
        error = repr(e)[-1500:]
    return dict(spec, failed=True, error=error)


COLUMNS = (
    "robot",
    "dtype",
    "dispatch",
    "traversal",
    "model",
    "cores",
    "compile s",
    "thunks",
    "buffers >512 B",
    "identity us",
    "aba us (min of block medians)",
    "median",
    "p90",
)


def table_row(r):
    head = [r["robot"], r["dtype"], r["dispatch"], r["traversal"], r["model"], r["cores"]]
    if r.get("failed"):
        return head + ["FAILED"] + [""] * 6
    return head + [
        f"{r['compile_s']:.2f}",
        str(r["thunks"]),
        str(r["large_buffers"]),
        f"{r['identity_us']:.1f}",
        f"{r['aba_us']:.1f}",
        f"{r['median_us']:.1f}",
        f"{r['p90_us']:.1f}",
    ]


def markdown(results, notes, command):
    ok = [r for r in results if not r.get("failed")]
    first = ok[0] if ok else {}
    lines = [
        "# jaxdyn.aba batch-1 latency (CPU)",
        "",
        f"- device: {first.get('device_kind', '?')} ({first.get('platform', '?')}), jax {first.get('jax_version', '?')}",
        f"- date: {datetime.datetime.now().isoformat(timespec='seconds')}, CPUs: {os.cpu_count()}",
        f"- command: `{command}`",
        "",
        "| " + " | ".join(COLUMNS) + " |",
        "|" + "---|" * len(COLUMNS),
    ]
    lines += ["| " + " | ".join(table_row(r)) + " |" for r in results]
    failed = [r for r in results if r.get("failed")]
    notes = notes + [
        f"FAILED {r['robot']} {r['dtype']} {r['dispatch']} {r['traversal']} {r['model']} {r['cores']}:"
        f"\n\n```\n{r['error']}\n```"
        for r in failed
    ]
    return "\n".join(lines + [""] + [f"- {n}" for n in notes]) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--robots", default="ur5,panda,solo12,talos:floating")
    ap.add_argument("--dtypes", default="float32")
    ap.add_argument("--repeats", type=int, default=400, help="calls per timed block")
    ap.add_argument("--blocks", type=int, default=7)
    for axis, values in AXES.items():
        ap.add_argument(f"--{axis}", default=",".join(values))
    ap.add_argument(
        "--trials",
        type=int,
        default=1,
        help="fresh processes per configuration; the fastest is reported (this VM's timings "
        "vary by up to 2x from one process to the next)",
    )
    ap.add_argument("--out", default="benchmarks/results/latency-cpu", help="writes <out>.md and <out>.json")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return child(json.loads(args.child))

    choice = {axis: getattr(args, axis).split(",") for axis in AXES}
    for axis, values in choice.items():
        if bad := set(values) - set(AXES[axis]):
            ap.error(f"--{axis}: unknown {sorted(bad)}; choose from {AXES[axis]}")
    notes = []
    if "one" in choice["cores"] and shutil.which("taskset") is None:
        choice["cores"].remove("one")
        notes.append("cores=one skipped: `taskset` is not on PATH")
    command = "python " + " ".join(shlex.quote(a) for a in sys.argv)
    print("| " + " | ".join(COLUMNS) + " |", flush=True)
    results = []
    for robot, dtype, dispatch, traversal, model, cores in itertools.product(
        args.robots.split(","), args.dtypes.split(","), *choice.values()
    ):
        spec = dict(
            robot=robot,
            dtype=dtype,
            dispatch=dispatch,
            traversal=traversal,
            model=model,
            cores=cores,
            repeats=args.repeats,
            blocks=args.blocks,
        )
        trials = [run_child(spec) for _ in range(args.trials)]
        ok = [r for r in trials if not r.get("failed")]
        best = min(ok, key=lambda r: r["aba_us"]) if ok else trials[-1]
        best["trials"] = len(trials)
        results.append(best)
        print("| " + " | ".join(table_row(results[-1])) + " |", flush=True)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out + ".md", "w") as fh:
        fh.write(markdown(results, notes, command))
    with open(args.out + ".json", "w") as fh:
        json.dump(dict(command=command, cpu_count=os.cpu_count(), notes=notes, results=results), fh, indent=1)
    for n in notes:
        print("note:", n)
    print(f"wrote {args.out}.md and {args.out}.json")


if __name__ == "__main__":
    main()
