"""Per-call times of the one-sample algorithms and of a batch, for comparing two checkouts.

Times ``jit`` of ``jaxdyn.aba``, ``rnea``, ``crba`` and ``jax.jacfwd`` of ``aba`` (scanned only)
for one sample, under the traversals ``"scan"`` and ``"unroll"``, and ``jit(vmap(jaxdyn.aba))`` at
1,024 samples; panda (fixed) and talos (floating), float64. Each case: 9 blocks of 300 (panda) or
100 (talos) calls, the median and the best block. This VM's timings drift between processes, so
run it alternately in the two checkouts several times and compare the best of each:

    for r in 1 2 3 4; do
      (cd ../base && PYTHONPATH=. python ../main/benchmarks/checkout_ab.py /tmp/base$r.json)
      python benchmarks/checkout_ab.py /tmp/new$r.json
    done
    python benchmarks/checkout_ab.py --compare /tmp/base*.json -- /tmp/new*.json
"""

from __future__ import annotations

import contextlib
import json
import math
import sys
import time


def measure(path):
    import jax
    import jax.numpy as jnp
    import numpy as np

    jax.config.update("jax_enable_x64", True)
    import jaxdyn

    def timeit(f, *a, n):
        c = f.lower(*a).compile()
        jax.block_until_ready(c(*a))
        ts = []
        for _ in range(9):
            t = time.perf_counter()
            for _ in range(n):
                r = c(*a)
            jax.block_until_ready(r)
            ts.append((time.perf_counter() - t) / n)
        return float(np.median(ts)) * 1e6, float(min(ts)) * 1e6

    out = {"jaxdyn": jaxdyn.__file__, "jax": jax.__version__}
    for robot, fb in (("panda", False), ("talos", True)):
        n = 100 if robot == "talos" else 300
        rng = np.random.default_rng(0)
        for trav in ("scan", "unroll"):
            m = jaxdyn.load_robot(robot, floating_base=fb, dtype=jnp.float64)
            if hasattr(jaxdyn, "executor"):  # the override, part of jit's key: on for this traversal's cases
                walk = jaxdyn.executor(traversal=trav)
            else:  # a checkout from before jaxdyn.planner: the model's own field
                m, walk = m.with_traversal(trav), contextlib.nullcontext()
            q = jaxdyn.configuration.neutral(m)
            qd, tau = (jnp.asarray(rng.normal(size=m.nv)) for _ in range(2))
            cases = {
                "aba": lambda q, v, t, m=m: jaxdyn.aba(m, q, v, t),
                "rnea": lambda q, v, t, m=m: jaxdyn.rnea(m, q, v, t),
                "crba": lambda q, v, t, m=m: jaxdyn.crba(m, q),
            }
            if trav == "scan":
                cases["jac_aba"] = lambda q, v, t, m=m: jax.jacfwd(lambda v: jaxdyn.aba(m, q, v, t))(v)
            with walk:
                for name, fn in cases.items():
                    out[f"{robot}-{trav}-{name}"] = timeit(jax.jit(fn), q, qd, tau, n=n)
        m = jaxdyn.load_robot(robot, floating_base=fb, dtype=jnp.float64)
        B = 1024
        qs = jnp.broadcast_to(jaxdyn.configuration.neutral(m), (B, m.nq))
        qds, taus = (jnp.asarray(rng.normal(size=(B, m.nv))) for _ in range(2))
        batched = jax.jit(jax.vmap(lambda q, v, t, m=m: jaxdyn.aba(m, q, v, t)))
        out[f"{robot}-vmap1024-aba"] = timeit(batched, qs, qds, taus, n=20)
    with open(path, "w") as f:
        json.dump(out, f, indent=1)


def compare(base_files, new_files):
    base = [json.load(open(p)) for p in base_files]
    new = [json.load(open(p)) for p in new_files]
    keys = [k for k in base[0] if isinstance(base[0][k], list)]
    print("| case | base best [us] | new best [us] | new / base |\n|---|---:|---:|---:|")
    logs = []
    for k in keys:
        b, n = min(x[k][1] for x in base), min(x[k][1] for x in new)
        logs.append(math.log(n / b))
        print(f"| {k} | {b:.1f} | {n:.1f} | {n / b:.2f} |")
    print(f"\ngeometric mean of new / base: {math.exp(sum(logs) / len(logs)):.3f}")


if __name__ == "__main__":
    if sys.argv[1] == "--compare":
        i = sys.argv.index("--")
        compare(sys.argv[2:i], sys.argv[i + 1 :])
    else:
        measure(sys.argv[1])
