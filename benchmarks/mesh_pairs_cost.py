"""The cost of a published robot's mesh-mesh self-collision pairs: one evaluation of the total
contact force (``jaxdyn.contact.total_force``, every pair's contacts) with the joints at zero,
the broad phase keeping ``K`` pairs (``Contact(max_pairs=K)``), float64, compile excluded,
median of 20 calls. Run it in two checkouts to compare narrow phases.

    pip install example-robot-data
    python benchmarks/mesh_pairs_cost.py [--robot go2] [--max-pairs 2 8] [--label NAME]
"""

from __future__ import annotations

import argparse
import time
import warnings

import jax
import jax.numpy as jnp
import numpy as np

import jaxdyn
from jaxdyn import contact as C


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--robot", default="go2")
    ap.add_argument("--max-pairs", type=int, nargs="+", default=[2, 8])
    ap.add_argument("--label", default="")
    a = ap.parse_args(argv)
    jax.config.update("jax_enable_x64", True)  # a script: float64 throughout
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = jaxdyn.load_robot(a.robot, dtype=jnp.float64)
        q = jnp.zeros(m.nq, jnp.float64)  # the joints at zero, a free root at the origin, level
        if m.floating_base:
            q = q.at[3].set(1.0)
        kinds = [(k, len(i)) for k, i, _ in C.collision_pairs(m).kinds]
        print(f"{a.robot}: pair kinds (type codes, count) {kinds}")
        for K in a.max_pairs:
            ct = C.Contact(max_pairs=K)
            f = jax.jit(lambda q, ct=ct: C.total_force(m, q, jnp.zeros(m.nv), ct))
            f(q).block_until_ready()
            times = []
            for _ in range(20):
                t0 = time.perf_counter()
                f(q).block_until_ready()
                times.append(time.perf_counter() - t0)
            print(f"{a.label} max_pairs={K}: {1e3 * np.median(times):.1f} ms per evaluation", flush=True)


if __name__ == "__main__":
    main()
