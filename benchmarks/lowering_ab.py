"""Compare the programs two versions of jaxdyn hand to XLA (a refactor that must not slow anything).

``dump`` lowers (no compile) the one-sample and batched ABA, RNEA and CRBA and the SoA ABA kernel
(unrolled and scanned) for ur5, panda and solo12 (float32, batch 8) and writes their StableHLO,
locations stripped, to a JSON file; ``compare`` reports, per program, whether two dumps are
identical and otherwise the operations whose counts differ (constants aside). Identical programs
cannot differ in speed, which timings on a shared machine cannot show as reliably.

    PYTHONPATH=/path/to/old python benchmarks/lowering_ab.py dump /tmp/old.json
    PYTHONPATH=/path/to/new python benchmarks/lowering_ab.py dump /tmp/new.json
    python benchmarks/lowering_ab.py compare /tmp/old.json /tmp/new.json
"""

from __future__ import annotations

import collections
import json
import re
import sys


def dump(path: str) -> None:
    import jax
    import jax.numpy as jnp

    import jaxdyn
    from jaxdyn import kernels

    out = {}
    for robot in ("ur5", "panda", "solo12"):
        m = jaxdyn.load_robot(robot).astype(jnp.float32)
        q = jnp.zeros((8, m.nq), jnp.float32)
        v = jnp.zeros((8, m.nv), jnp.float32)
        batched = (None, 0, 0, 0)
        programs = {
            "aba": (jax.jit(jaxdyn.aba), (m, q[0], v[0], v[0])),
            "vmap_aba": (jax.jit(jax.vmap(jaxdyn.aba, in_axes=batched)), (m, q, v, v)),
            "vmap_rnea": (jax.jit(jax.vmap(jaxdyn.rnea, in_axes=batched)), (m, q, v, v)),
            "vmap_crba": (jax.jit(jax.vmap(jaxdyn.crba, in_axes=(None, 0))), (m, q)),
        }
        for trav in ("unroll", "scan"):
            f = jax.jit(lambda m, q, v, t, trav=trav: kernels.aba_batch(m, q, v, t, traversal=trav))
            programs[f"aba_batch_{trav}"] = (f, (m, q, v, v))
        for name, (f, args) in programs.items():
            text = f.lower(*args).as_text()
            out[f"{robot}/{name}"] = re.sub(r"#loc\d*[^\n]*|loc\([^)]*\)", "", text)
    with open(path, "w") as fh:
        json.dump(out, fh)


def _ops(text: str) -> collections.Counter:
    return collections.Counter(re.findall(r'= "?([a-z_]+\.[a-z_]+)', text))


def compare(path_a: str, path_b: str) -> None:
    with open(path_a) as fa, open(path_b) as fb:
        a, b = json.load(fa), json.load(fb)
    for key in a:
        if a[key] == b.get(key):
            print(f"{key}: identical")
            continue
        x, y = _ops(a[key]), _ops(b.get(key, ""))
        diff = {op: (x[op], y[op]) for op in sorted(set(x) | set(y)) if x[op] != y[op] and op != "stablehlo.constant"}
        print(f"{key}: differs, operations (old, new) {diff or 'the same (constants only)'}")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "dump":
        dump(sys.argv[2])
    elif len(sys.argv) == 4 and sys.argv[1] == "compare":
        compare(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)
