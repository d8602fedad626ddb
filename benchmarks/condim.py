"""The cost of torsional and rolling friction (MuJoCo ``condim`` 4 and 6) in a standing legged
robot's step: jaxdyn's and MuJoCo's, each with ``condim`` 3 and 6 on every geom, in the same
run, as ratios.

The scenario is ``benchmarks/standing.py``'s (``tests/reference/check_mujoco_standing.py``:
example-robot-data's URDF with its collision geometry, the SRDF's standing pose under PD,
robot-floor contacts, 1 ms steps, float64). ``condim`` 6 gives every geom MuJoCo's default
torsional and rolling friction (0.005 and 0.0001 m) in both simulators. Best of ``--rounds``
alternating rounds; also the largest difference of the base height between the two ``condim``
over the run (a standing robot barely spins or rolls its feet).

    pip install mujoco example-robot-data
    python benchmarks/condim.py [--robot a1 go2] [--steps 1000] [--out FILE.md]
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "reference"))
from check_mujoco_standing import DT, scenario  # noqa: E402
from standing import mujoco_stand, stand_emit, stand_rows  # noqa: E402

from jaxdyn import sim  # noqa: E402


def _with_condim(model, condim):
    g = model.geoms
    friction = g.friction.at[:, 1].set(0.005).at[:, 2].set(0.0001)
    return dataclasses.replace(model, geoms=dataclasses.replace(g, condim=(condim,) * g.ng, friction=friction))


def _best(fn, rounds, steps):
    best = np.inf
    for _ in range(rounds):
        t = time.perf_counter()
        fn()
        best = min(best, (time.perf_counter() - t) / steps)
    return best * 1e3


def measure(robot, steps, rounds):
    sc = scenario(robot)
    row = dict(robot=robot)
    z = {}
    for condim in (3, 6):
        model = _with_condim(sc.model, condim)
        run = jax.jit(lambda q0, m=model: sim.rollout(m, q0, jnp.zeros(m.nv), sc.pd, DT, steps=steps, contact=sc.ct).q)
        t = time.perf_counter()
        z[condim] = np.asarray(jax.block_until_ready(run(sc.q0))[:, 2])
        row[f"compile{condim}"] = time.perf_counter() - t
        xml = sc.xml.replace('condim="3" friction="1 0 0"', f'condim="{condim}" friction="1 0.005 0.0001"')
        assert condim == 3 or xml != sc.xml, "the MuJoCo model's contact default was not found"
        mj = mujoco_stand(sc, xml, steps)
        row[f"jd{condim}"] = _best(lambda: jax.block_until_ready(run(sc.q0)), rounds, steps)
        row[f"mj{condim}"] = _best(mj, rounds, steps)
    row["dz"] = float(np.abs(z[6] - z[3]).max())
    return row


def main():
    args, rows = stand_rows(__doc__, ["a1", "go2"], measure)
    lines = [
        "| robot | jaxdyn ms/step, condim 3 / 6 | MuJoCo ms/step, condim 3 / 6 | condim 6 / 3, jaxdyn | condim 6 / 3, MuJoCo | "
        "jaxdyn speed / MuJoCo's, condim 6 | base height, condim 6 - 3 (jaxdyn, max) | jaxdyn compile s, condim 3 / 6 |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['robot']} | {r['jd3']:.3f} / {r['jd6']:.3f} | {r['mj3']:.4f} / {r['mj6']:.4f} | "
            f"{r['jd6'] / r['jd3']:.2f}x | {r['mj6'] / r['mj3']:.2f}x | {r['mj6'] / r['jd6']:.3f}x | "
            f"{r['dz'] * 1e3:.3f} mm | {r['compile3']:.1f} / {r['compile6']:.1f} |"
        )
    stand_emit(lines, args)


if __name__ == "__main__":
    main()
