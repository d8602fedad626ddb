"""Crocoddyl's FDDP on the double pendulum from an infeasible guess, for tests/test_trajopt.py.

Writes ``tests/data/crocoddyl/fddp_double_pendulum.json``: the problem, and Crocoddyl's solution
(states, controls, cost, iterations, final gaps' norm) of ``SolverFDDP`` with its defaults.

The problem (jaxdyn's statement in the test): the shipped ``double_pendulum`` URDF, rigid-body
dynamics only (``sim.IDEAL`` in jaxdyn: no damping, friction, limits or effort clipping;
Pinocchio's ABA ignores the URDF's damping), symplectic Euler (Crocoddyl's
``IntegratedActionModelEuler``: ``v' = v + dt a``, ``q' = q + dt v'``), ``T = 30`` knots of
``dt = 0.02`` s from rest at ``q = 0``, cost::

    J = sum_t W_U/2 |u_t|^2 + 1/2 (x_T - goal)' diag(W_T) (x_T - goal)

(Crocoddyl scales running costs by ``dt``: its control weight is ``W_U / dt``; its terminal
model, with ``dt = 0``, is not scaled). Initial guess: the states interpolated linearly from
``x0`` to ``goal`` (a gap at every knot), zero controls.

Run in an environment with Crocoddyl (its wheel is built against Pinocchio 4.0)::

    python -m venv /tmp/crocenv && /tmp/crocenv/bin/pip install crocoddyl "pin==4.0.0"
    /tmp/crocenv/bin/python tests/reference/generate_crocoddyl_fddp.py
"""

from __future__ import annotations

import json
import os

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
URDF = os.path.join(ROOT, "jaxdyn", "robots", "double_pendulum.urdf")
OUT = os.path.join(ROOT, "tests", "data", "crocoddyl", "fddp_double_pendulum.json")
T, DT = 30, 0.02
W_U = 0.1
W_T = [100.0, 100.0, 1.0, 1.0]
X0 = [0.0, 0.0, 0.0, 0.0]
GOAL = [0.8, -0.6, 0.0, 0.0]
MAX_ITER = 200


def main():
    import crocoddyl
    import pinocchio as pin

    model = pin.buildModelFromUrdf(URDF)
    state = crocoddyl.StateMultibody(model)
    actuation = crocoddyl.ActuationModelFull(state)
    nu = actuation.nu
    goal = np.asarray(GOAL)

    running_costs = crocoddyl.CostModelSum(state, nu)
    running_costs.addCost("u", crocoddyl.CostModelResidual(state, crocoddyl.ResidualModelControl(state, nu)), W_U / DT)
    terminal_costs = crocoddyl.CostModelSum(state, nu)
    terminal_costs.addCost(
        "x",
        crocoddyl.CostModelResidual(
            state, crocoddyl.ActivationModelWeightedQuad(np.asarray(W_T)), crocoddyl.ResidualModelState(state, goal, nu)
        ),
        1.0,
    )
    dam = lambda c: crocoddyl.DifferentialActionModelFreeFwdDynamics(state, actuation, c)
    running = crocoddyl.IntegratedActionModelEuler(dam(running_costs), DT)
    terminal = crocoddyl.IntegratedActionModelEuler(dam(terminal_costs), 0.0)
    x0 = np.asarray(X0)
    problem = crocoddyl.ShootingProblem(x0, [running] * T, terminal)
    s = np.linspace(0.0, 1.0, T + 1)[:, None]
    xs_init = x0 + s * (goal - x0)
    solver = crocoddyl.SolverFDDP(problem)
    ok = solver.solve([x for x in xs_init], [np.zeros(nu)] * T, MAX_ITER, False)
    out = dict(
        crocoddyl=crocoddyl.__version__,
        pinocchio=pin.__version__,
        T=T,
        dt=DT,
        w_u=W_U,
        w_terminal=W_T,
        x0=X0,
        goal=GOAL,
        converged=bool(ok),
        iterations=int(solver.iter),
        cost=float(solver.cost),
        gaps_norm=float(sum(np.linalg.norm(f) for f in solver.fs)),
        xs=np.asarray(solver.xs).tolist(),
        us=np.asarray(solver.us).tolist(),
    )
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as fh:
        json.dump(out, fh, indent=1)
        fh.write("\n")
    print(f"wrote {OUT}: {out['iterations']} iterations, cost {out['cost']:.12g}, converged {ok}")


if __name__ == "__main__":
    main()
