"""Crocoddyl's FDDP on a floating-base problem: Solo-12 reorienting its base in flight, for
tests/test_trajopt_floating.py (and timed by benchmarks/trajopt_floating.py).

Writes ``tests/data/crocoddyl/fddp_solo12_flight.json``: the problem, and Crocoddyl's solution
(states, controls, cost, iterations, final gaps) of ``SolverFDDP`` with its defaults.

The problem (jaxdyn's statement in the test): the shipped ``solo12`` URDF on a free-flyer
(Pinocchio's ``JointModelFreeFlyer``; jaxdyn's ``load_robot("solo12")``), rigid-body dynamics
with gravity and no contact (``sim.IDEAL`` in jaxdyn), the 12 leg joints actuated and the base
not (Crocoddyl's ``ActuationModelFloatingBase``), symplectic Euler (``IntegratedActionModelEuler``:
``v' = v + dt a``, ``q' = q (+) dt v'``, the free-flyer's ``(+)`` the SE(3) exponential of the
body twist), ``T = 25`` knots of ``dt = 0.02`` s, from rest with the base 0.35 m up and the legs
in the standing posture. In the half second of flight the legs should reach a spread posture
and the base turn to 0.15 rad of roll and 0.1 rad of yaw; with no contact the base can turn
only through the legs' motion (the angular momentum stays zero). Cost::

    J = sum_t dt (W_U/2 |u_t|^2 + 1/2 dx_t' diag(W_X) dx_t) + 1/2 dx_T' diag(W_XT) dx_T,
    dx = x (-) x_ref = [difference(q_ref, q); v - v_ref]

(Crocoddyl's ``ResidualModelState`` with ``ActivationModelWeightedQuad``; its running costs are
multiplied by ``dt``, its terminal model, with ``dt = 0``, is not). The base position and linear
velocity have zero weight (the fall is not controllable). Vectors here are in Pinocchio's order:
free-flyer configuration ``[x, y, z, qx, qy, qz, qw]``, tangent ``[linear; angular]``; jaxdyn
uses ``[x, y, z, qw, qx, qy, qz]`` and ``[angular; linear]`` (the test converts). Initial guess:
``x0`` at every knot (the fall makes a gap at every knot), zero torques.

Run in an environment with Crocoddyl (its wheel is built against Pinocchio 4.0)::

    /tmp/crocenv/bin/python tests/reference/generate_crocoddyl_solo12.py

``benchmarks/trajopt_floating.py`` times the same solver on the same problem (:func:`solve`).
"""

from __future__ import annotations

import json
import os

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
URDF = os.path.join(ROOT, "jaxdyn", "robots", "solo12.urdf")
OUT = os.path.join(ROOT, "tests", "data", "crocoddyl", "fddp_solo12_flight.json")
T, DT = 25, 0.02
LEGS0 = [0.0, 0.8, -1.6, 0.0, 0.8, -1.6, 0.0, -0.8, 1.6, 0.0, -0.8, 1.6]
LEGS_REF = [0.3, 0.4, -0.9, -0.3, 0.4, -0.9, 0.3, -0.4, 0.9, -0.3, -0.4, 0.9]
ROLL_REF, YAW_REF = 0.15, 0.1
W_U = 1e-2
# tangent order: base linear (3), base angular (3), legs (12); then the velocities in that order
W_X = [0.0] * 3 + [1.0] * 3 + [1.0] * 12 + [0.0] * 3 + [0.1] * 3 + [0.1] * 12
W_XT = [0.0] * 3 + [1e3] * 3 + [1e2] * 12 + [0.0] * 3 + [10.0] * 3 + [10.0] * 12
MAX_ITER = 200


def quat_xyzw(roll, yaw):
    """The quaternion ``[x, y, z, w]`` of ``R = Rz(yaw) Rx(roll)``."""
    cr, sr, cy, sy = np.cos(roll / 2), np.sin(roll / 2), np.cos(yaw / 2), np.sin(yaw / 2)
    return [cy * sr, sy * sr, sy * cr, cy * cr]


X0 = [0.0, 0.0, 0.35, 0.0, 0.0, 0.0, 1.0] + LEGS0 + [0.0] * 18
X_REF = [0.0, 0.0, 0.35] + quat_xyzw(ROLL_REF, YAW_REF) + LEGS_REF + [0.0] * 18


def build():
    import crocoddyl
    import pinocchio as pin

    model = pin.buildModelFromUrdf(URDF, pin.JointModelFreeFlyer())
    state = crocoddyl.StateMultibody(model)
    actuation = crocoddyl.ActuationModelFloatingBase(state)
    nu = actuation.nu
    x_ref = np.asarray(X_REF)

    def dam(weights, w_u):
        costs = crocoddyl.CostModelSum(state, nu)
        costs.addCost(
            "x",
            crocoddyl.CostModelResidual(
                state,
                crocoddyl.ActivationModelWeightedQuad(np.asarray(weights)),
                crocoddyl.ResidualModelState(state, x_ref, nu),
            ),
            1.0,
        )
        if w_u:
            costs.addCost("u", crocoddyl.CostModelResidual(state, crocoddyl.ResidualModelControl(state, nu)), w_u)
        return crocoddyl.DifferentialActionModelFreeFwdDynamics(state, actuation, costs)

    running = crocoddyl.IntegratedActionModelEuler(dam(W_X, W_U), DT)
    terminal = crocoddyl.IntegratedActionModelEuler(dam(W_XT, 0.0), 0.0)
    problem = crocoddyl.ShootingProblem(np.asarray(X0), [running] * T, terminal)
    problem.nthreads = 1
    return crocoddyl, pin, problem, nu


def solve():
    crocoddyl, pin, problem, nu = build()
    solver = crocoddyl.SolverFDDP(problem)
    x0 = np.asarray(X0)
    ok = solver.solve([x0] * (T + 1), [np.zeros(nu)] * T, MAX_ITER, False)
    return crocoddyl, pin, solver, bool(ok)


def main():
    crocoddyl, pin, solver, ok = solve()
    out = dict(
        crocoddyl=crocoddyl.__version__,
        pinocchio=pin.__version__,
        T=T,
        dt=DT,
        w_u=W_U,
        w_x=W_X,
        w_xt=W_XT,
        x0=X0,
        x_ref=X_REF,
        converged=ok,
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
