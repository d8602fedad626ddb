"""The cost of a published robot's self-collision pairs, and what the broad phase
(``Contact(max_pairs=K)``) saves: one robot standing under PD control, with its geoms colliding
with each other as well as with the floor, in the same run as MuJoCo on the same URDF.

The scenario is ``tests/reference/check_mujoco_standing.py``'s (``scenario``: example-robot-data's
URDF with its collision geometry, the SRDF's standing pose, 1 ms steps, float64), with
self-collision on in both simulators (MuJoCo: every robot geom ``contype = conaffinity = 1``; its
filter, like jaxdyn's, skips a body's parent). Rows: jaxdyn without pairs, with every pair, and
with ``K`` pairs per kind; for each, ms per step of one simulation (best of ``--rounds``
alternating rounds, compile excluded), ms per step of ``--batch`` simulations under ``vmap``
(the per-robot cost of a batch), the compile time, the largest count of pairs in reach
(:func:`jaxdyn.contact.pairs_in_reach`) along the run, and how far the base ends from the
every-pair run's.

    pip install mujoco example-robot-data
    python benchmarks/broad_phase.py [--robot a1] [--steps 1000] [--max-pairs 1 2 4 8] [--out FILE.md]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import xml.etree.ElementTree as ET

import jax
import jax.numpy as jnp
import mujoco
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "reference"))
from check_mujoco_standing import DT, scenario  # noqa: E402
from harness import emit  # noqa: E402
from standing import mujoco_stand  # noqa: E402

from jaxdyn import contact as C  # noqa: E402
from jaxdyn import sim  # noqa: E402


def _best(fn, rounds):
    best = np.inf
    for _ in range(rounds):
        t = time.perf_counter()
        jax.block_until_ready(fn())
        best = min(best, time.perf_counter() - t)
    return best


def measure(robot, steps, batch, budgets, rounds):
    sc = scenario(robot)
    m = sc.model
    rows = []
    ref = None
    variants = [("no pairs", C.Contact(collide_pairs=False)), ("every pair", C.Contact())]
    variants += [(f"K = {k}", C.Contact(max_pairs=k)) for k in budgets]
    for name, ct in variants:

        def roll(q0, ct=ct):
            return sim.rollout(m, q0, jnp.zeros(m.nv), sc.pd, DT, steps=steps, contact=ct).q

        one = jax.jit(roll)
        t = time.perf_counter()
        qs = jax.block_until_ready(one(sc.q0))
        compile_s = time.perf_counter() - t
        many = jax.jit(jax.vmap(roll))
        q0s = jnp.broadcast_to(sc.q0, (batch, m.nq))
        jax.block_until_ready(many(q0s))
        one_ms = _best(lambda: one(sc.q0), rounds) / steps * 1e3  # noqa: B023
        many_ms = _best(lambda: many(q0s), rounds) / steps / batch * 1e3  # noqa: B023
        reach = jax.jit(jax.vmap(lambda q: C.pairs_in_reach(m, q)))(qs[:: max(1, steps // 200)])
        if name == "every pair":
            ref = qs
        rows.append(
            dict(
                name=name,
                one_ms=one_ms,
                many_ms=many_ms,
                compile_s=compile_s,
                reach=int(np.asarray(reach).max()) if reach.size else 0,
                final=qs[-1],
            )
        )
    for r in rows:
        r["base_mm"] = float(jnp.linalg.norm(r["final"][:3] - ref[-1, :3])) * 1e3
    # MuJoCo, the same scenario with its robot geoms colliding with each other
    tree = ET.fromstring(sc.xml)
    for g in tree.iter("geom"):
        if g.get("name") != "floor":
            g.set("conaffinity", "1")
    mujoco_run = mujoco_stand(sc, ET.tostring(tree, encoding="unicode"), steps)
    mujoco_ms = _best(mujoco_run, rounds) / steps * 1e3
    return rows, mujoco_ms, len(C.collision_pairs(m).pairs)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--robot", default="a1")
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--max-pairs", type=int, nargs="+", default=[1, 2, 4, 8])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out")
    args = ap.parse_args()
    jax.config.update("jax_enable_x64", True)
    rows, mujoco_ms, npairs = measure(args.robot, args.steps, args.batch, args.max_pairs, args.rounds)
    lines = [
        "| jaxdyn contact | ms/step, one | jaxdyn speed / MuJoCo's, one | ms/step per robot, batch "
        "| compile s | pairs in reach (largest per kind) | base vs every pair, mm |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['name']} | {r['one_ms']:.3f} | {mujoco_ms / r['one_ms']:.3f}x | {r['many_ms']:.3f} | "
            f"{r['compile_s']:.1f} | {r['reach']} | {r['base_mm']:.2g} |"
        )
    emit(
        lines,
        args.out,
        mujoco=mujoco.__version__,
        robot=f"{args.robot} ({npairs} self-collision pairs)",
        steps=args.steps,
        batch=args.batch,
        rounds=f"best of {args.rounds}, float64",
        mujoco_ms_per_step=f"{mujoco_ms:.3f} (self-collision on)",
    )


if __name__ == "__main__":
    main()
