"""One published legged robot standing under PD control, one simulation at a time on the CPU:
jaxdyn's step against MuJoCo's on the same URDF, in the same run, as a ratio.

The scenario and both models are those of ``tests/reference/check_mujoco_standing.py`` (its
``scenario``: example-robot-data's URDF with its collision geometry, the SRDF's standing pose,
robot-floor contacts, 1 ms steps). jaxdyn: one jitted ``sim.rollout`` of ``--steps`` steps
(``"implicit_euler"``, float64), compile excluded; MuJoCo: ``mj_step`` in a Python loop with
the PD torques in ``qfrc_applied`` (its ``Euler`` integrator). Best of ``--rounds`` alternating
rounds. This is the single-simulation case jaxdyn is not built for (it batches thousands on an
accelerator: docs/benchmarks.md); it is recorded so that the cost of a published robot's
collision geometry is known.

    pip install mujoco example-robot-data
    python benchmarks/standing.py [--robot go2 a1] [--steps 1000] [--out FILE.md]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import jax
import jax.numpy as jnp
import mujoco
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "reference"))
from check_mujoco_standing import DT, scenario  # noqa: E402
from harness import emit  # noqa: E402

from jaxdyn import sim  # noqa: E402


def mujoco_stand(sc, xml, steps):
    """A function that runs the scenario ``sc``'s PD stand for ``steps`` MuJoCo steps (its
    ``Euler`` integrator, the PD torques in ``qfrc_applied``) on the model ``xml``."""
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)

    def run():
        mujoco.mj_resetData(m, d)
        d.qpos[:] = sc.qpos0
        for _ in range(steps):
            d.qfrc_applied[:] = sc.mj_pd(d.qpos, d.qvel)
            mujoco.mj_step(m, d)

    return run


def measure(robot, steps, rounds):
    sc = scenario(robot)
    run = jax.jit(lambda q0: sim.rollout(sc.model, q0, jnp.zeros(sc.model.nv), sc.pd, DT, steps=steps, contact=sc.ct).q)
    t = time.perf_counter()
    jax.block_until_ready(run(sc.q0))
    compile_s = time.perf_counter() - t
    mujoco_run = mujoco_stand(sc, sc.xml, steps)

    best_jd = best_mj = np.inf
    for _ in range(rounds):
        t = time.perf_counter()
        jax.block_until_ready(run(sc.q0))
        best_jd = min(best_jd, (time.perf_counter() - t) / steps)
        t = time.perf_counter()
        mujoco_run()
        best_mj = min(best_mj, (time.perf_counter() - t) / steps)
    g = sc.model.geoms
    return dict(
        robot=robot,
        geoms=g.ng,
        meshes=sum(1 for x in g.type if x == 7),
        jaxdyn_ms=best_jd * 1e3,
        mujoco_ms=best_mj * 1e3,
        ratio=best_mj / best_jd,
        compile_s=compile_s,
    )


def stand_rows(doc, robots, measure):
    """The command line of the stand benchmarks (``--robot``, ``--steps``, ``--rounds``,
    ``--out``; ``doc``'s first line describes it) and ``measure(robot, steps, rounds)`` of each
    robot, in float64. Returns ``(args, rows)``."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--robot", nargs="+", default=robots)
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out")
    args = ap.parse_args()
    jax.config.update("jax_enable_x64", True)
    return args, [measure(r, args.steps, args.rounds) for r in args.robot]


def stand_emit(lines, args):
    """Write a stand benchmark's table with the run's MuJoCo version, steps and rounds."""
    emit(
        lines,
        args.out,
        mujoco=mujoco.__version__,
        steps=args.steps,
        rounds=f"best of {args.rounds} alternating, float64",
    )


def main():
    args, rows = stand_rows(__doc__, ["go2", "a1"], measure)
    lines = [
        "| robot | geoms (meshes) | jaxdyn ms/step | MuJoCo ms/step | jaxdyn speed / MuJoCo's | jaxdyn compile s |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['robot']} | {r['geoms']} ({r['meshes']}) | {r['jaxdyn_ms']:.3f} | {r['mujoco_ms']:.3f} | "
            f"{r['ratio']:.3f}x | {r['compile_s']:.1f} |"
        )
    stand_emit(lines, args)


if __name__ == "__main__":
    main()
