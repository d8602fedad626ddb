"""Crocoddyl's FDDP on a Panda reach from states interpolated to the goal, for tests/test_trajopt.py.

Writes ``tests/data/crocoddyl/fddp_panda_reach.json``: the target, Crocoddyl's controls, its
iterations and its own cost, from ``SolverFDDP`` with its defaults on the problem of
``benchmarks/trajopt.py --init interp`` (whose Crocoddyl side, ``croc_main``, builds and solves
it here): the shipped Panda with its fingers fixed (7 dof), 100 knots of 10 ms, symplectic
Euler, torque, joint-velocity and tool-point costs (running and terminal), gravity-compensation
controls and the states interpolated linearly from the ready pose to the goal configuration at
rest. The goal is that benchmark's target 7 (the ready pose plus the eighth of its offsets drawn
by ``np.random.default_rng(0).uniform(-0.6, 0.6, (8, 7))``), whose tool point Pinocchio places
here.

Run in an environment with Crocoddyl (its wheel is built against Pinocchio 4.0)::

    python -m venv /tmp/crocenv && /tmp/crocenv/bin/pip install crocoddyl "pin==4.0.0"
    /tmp/crocenv/bin/python tests/reference/generate_crocoddyl_panda_reach.py
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "data", "crocoddyl", "fddp_panda_reach.json")
TARGET = 7


def main():
    import pinocchio as pin

    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    import trajopt as bench

    with open(os.path.join(ROOT, "jaxdyn", "robots", "panda.urdf")) as fh:
        text = re.sub(r'(<joint name="panda_finger_joint\d" type=")prismatic(")', r"\1fixed\2", fh.read())
    urdf = os.path.join(tempfile.mkdtemp(), "panda_arm.urdf")
    with open(urdf, "w") as fh:
        fh.write(text)
    model = pin.buildModelFromUrdf(urdf)
    data = model.createData()
    q0 = np.asarray(bench.Q_READY)
    q_goal = q0 + np.random.default_rng(0).uniform(-0.6, 0.6, (8, 7))[TARGET]
    pin.framesForwardKinematics(model, data, q_goal)
    target = data.oMf[model.getFrameId(bench.FRAME)].translation.copy()
    s = np.linspace(0.0, 1.0, bench.T + 1)[:, None]
    xs = np.concatenate([q0 + s * (q_goal - q0), np.zeros((bench.T + 1, 7))], 1)
    x0 = np.concatenate([q0, np.zeros(7)])
    problem = os.path.join(os.path.dirname(urdf), "problem.json")
    with open(problem, "w") as fh:
        json.dump(dict(urdf=urdf, x0=x0.tolist(), targets=[target.tolist()], rounds=1, xs_init=[xs.tolist()]), fh)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        bench.croc_main(problem)
    res = json.loads(out.getvalue().strip().splitlines()[-1])
    sol = res["rounds"][0][0]
    ref = dict(
        target_index=TARGET,
        q_goal=q_goal.tolist(),
        target=target.tolist(),
        iterations=sol["iterations"],
        cost_crocoddyl=sol["cost"],
        us=sol["us"],
        crocoddyl=res["crocoddyl"],
        pinocchio=res["pinocchio"],
    )
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as fh:
        json.dump(ref, fh)
    print(f"wrote {OUT}: {sol['iterations']} iterations, cost {sol['cost']:.9g}")


if __name__ == "__main__":
    main()
