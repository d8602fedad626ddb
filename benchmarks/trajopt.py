"""Trajectory optimisation on the CPU: jaxdyn's ``trajopt.ilqr`` against Crocoddyl's FDDP on the
same problem, in the same run, Crocoddyl in its own environment (a subprocess).

The problem: the Franka Panda with its fingers fixed (7 dof, the URDF of ``jaxdyn.robots``
with the two prismatic finger joints made ``fixed``, loaded by both), from rest at the "ready"
configuration, reaching ``--targets`` tool-point targets (frame ``panda_hand_tcp``; targets are
the tool point at configurations a fixed offset from "ready") over ``T = 100`` knots of
``dt = 10 ms``. Symplectic (semi-implicit) Euler ``v' = v + dt a``, ``q' = q (+) dt v'``
(Crocoddyl's ``IntegratedActionModelEuler``); no joint friction, damping, limits or effort
clipping (``sim.IDEAL``). Cost, the running part scaled by ``dt`` as Crocoddyl's integrated
models do::

    J = sum_t dt (W_U/2 |u_t|^2 + W_V/2 |qd_t|^2 + W_P/2 |p(q_t) - target|^2)
        + W_VT/2 |qd_T|^2 + W_PT/2 |p(q_T) - target|^2

Initial guess: the gravity-compensation torque of ``x0`` at every knot (Crocoddyl's
``quasiStatic``), with the states ``x0`` (a feasible guess: the robot does not move). With
``--init interp`` the states are instead interpolated linearly from ``x0`` to the configuration
the target was made from, at rest (an infeasible guess, gaps at every knot): jaxdyn runs
``trajopt.fddp`` and Crocoddyl ``SolverFDDP`` from the same states and controls.

Timed (after a warm-up; ``--rounds`` alternating rounds, the best kept, since the 2-core
development machine is shared): jaxdyn's jitted solve, one problem at a time and the
``--targets`` problems as one ``jax.jit(jax.vmap(...))``; Crocoddyl's ``SolverFDDP`` one problem
at a time (``problem.nthreads = 1``). Both solutions are scored by one judge: jaxdyn's cost of
the controls, re-simulated in jaxdyn.

    python -m venv /tmp/crocenv && /tmp/crocenv/bin/pip install crocoddyl
    python benchmarks/trajopt.py [--targets 8] [--rounds 3] [--croc-python /tmp/crocenv/bin/python] [--out FILE.md]

The Crocoddyl side is this file run as ``--croc PROBLEM.json`` by that interpreter.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

T, DT = 100, 0.01
W_U, W_V, W_P = 1e-3, 1e-1, 1e1
W_VT, W_PT = 1e1, 1e4
FRAME = "panda_hand_tcp"
Q_READY = [0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785]
MAX_ITER = 200


def arm_urdf(path_out):
    """The Panda URDF of ``jaxdyn.robots`` with the finger joints fixed (7 dof)."""
    from jaxdyn.robots import robot_path

    with open(robot_path("panda")) as fh:
        text = fh.read()
    text = re.sub(r'(<joint name="panda_finger_joint\d" type=")prismatic(")', r"\1fixed\2", text)
    with open(path_out, "w") as fh:
        fh.write(text)
    return path_out


# -- Crocoddyl side (its own interpreter) -----------------------------------------------------------


def croc_main(problem_path):
    import crocoddyl
    import pinocchio as pin

    with open(problem_path) as fh:
        pb = json.load(fh)
    model = pin.buildModelFromUrdf(pb["urdf"])
    state = crocoddyl.StateMultibody(model)
    actuation = crocoddyl.ActuationModelFull(state)
    nu, nv = actuation.nu, model.nv
    fid = model.getFrameId(FRAME)
    x0 = np.asarray(pb["x0"])

    def build(target):
        def costs(terminal):
            c = crocoddyl.CostModelSum(state, nu)
            vel = crocoddyl.CostModelResidual(
                state,
                crocoddyl.ActivationModelWeightedQuad(np.r_[np.zeros(nv), np.ones(nv)]),
                crocoddyl.ResidualModelState(state, np.zeros(state.nx), nu),
            )
            pos = crocoddyl.CostModelResidual(state, crocoddyl.ResidualModelFrameTranslation(state, fid, target, nu))
            if terminal:
                c.addCost("vel", vel, W_VT)
                c.addCost("pos", pos, W_PT)
            else:
                c.addCost("u", crocoddyl.CostModelResidual(state, crocoddyl.ResidualModelControl(state, nu)), W_U)
                c.addCost("vel", vel, W_V)
                c.addCost("pos", pos, W_P)
            return crocoddyl.DifferentialActionModelFreeFwdDynamics(state, actuation, c)

        running = crocoddyl.IntegratedActionModelEuler(costs(False), DT)
        terminal = crocoddyl.IntegratedActionModelEuler(costs(True), 0.0)
        problem = crocoddyl.ShootingProblem(x0, [running] * T, terminal)
        problem.nthreads = 1
        return problem

    def solve(target):
        problem = build(np.asarray(target))
        solver = crocoddyl.SolverFDDP(problem)
        xs = [x0] * (T + 1)
        us = problem.quasiStatic([x0] * T)
        if pb.get("xs_init"):
            xs = [np.asarray(x) for x in pb["xs_init"][pb["targets"].index(target)]]
        t = time.perf_counter()
        solver.solve(xs, us, MAX_ITER, False)
        return time.perf_counter() - t, solver

    rounds = []
    for _ in range(pb["rounds"]):
        per = []
        for target in pb["targets"]:
            wall, solver = solve(target)
            per.append(
                dict(wall=wall, iterations=int(solver.iter), cost=float(solver.cost), us=np.asarray(solver.us).tolist())
            )
        rounds.append(per)
    print(json.dumps(dict(rounds=rounds, crocoddyl=crocoddyl.__version__, pinocchio=pin.__version__)))


# -- jaxdyn side ------------------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--croc", help=argparse.SUPPRESS)
    ap.add_argument("--targets", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--croc-python", default="/tmp/crocenv/bin/python")
    ap.add_argument("--dtype", default="float64", choices=("float64", "float32"))
    ap.add_argument("--jacfwd", action="store_true", help="the step's Jacobians by jacfwd (the former path)")
    ap.add_argument("--no-batch", action="store_true", help="skip the vmapped batch")
    ap.add_argument(
        "--hessian",
        default="gauss_newton",
        choices=("exact", "gauss_newton"),
        help="FramePositionCost's Hessian (Crocoddyl's residual cost is Gauss-Newton)",
    )
    ap.add_argument(
        "--init", default="rest", choices=("rest", "interp"), help="states of the guess: x0, or interpolated (fddp)"
    )
    ap.add_argument("--out")
    args = ap.parse_args()
    if args.croc:
        return croc_main(args.croc)

    import jax

    if args.dtype == "float64":
        jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from harness import emit

    import jaxdyn
    from jaxdyn import sim
    from jaxdyn import trajopt as to

    dtype = jnp.float64 if args.dtype == "float64" else jnp.float32
    tmp = tempfile.mkdtemp()
    urdf = arm_urdf(os.path.join(tmp, "panda_arm.urdf"))
    model = jaxdyn.load_urdf(urdf, dtype=dtype)
    assert model.nv == 7, model.nv
    q0 = jnp.asarray(Q_READY, dtype)
    x0 = jnp.concatenate([q0, jnp.zeros(7, dtype)])
    rng = np.random.default_rng(0)
    offsets = rng.uniform(-0.6, 0.6, (args.targets, 7))
    targets = np.stack(
        [np.asarray(jaxdyn.frame_placement(model, q0 + jnp.asarray(o, dtype), FRAME).p) for o in offsets]
    )
    u_grav = jaxdyn.rnea(model, q0, jnp.zeros(7, dtype), jnp.zeros(7, dtype))
    U0 = jnp.tile(u_grav, (T, 1))

    dyn = to.model_dynamics(model, DT, "semi_implicit_euler", options=sim.IDEAL)
    if args.jacfwd:

        class JacfwdDynamics(to.ModelDynamics):
            def jacobians(self, x, u):
                return to.Dynamics.jacobians(self, x, u)

        dyn = JacfwdDynamics(dyn.model, dyn.dt, dyn.integrator, dyn.options, dyn.substeps, dyn.actuated)
    wq = jnp.zeros(7, dtype)
    reg = to.quadratic_cost(
        jnp.zeros(14, dtype), jnp.concatenate([wq, jnp.full(7, DT * W_V, dtype)]), DT * W_U,
        Qf=jnp.concatenate([wq, jnp.full(7, W_VT, dtype)]), nu=7, space=dyn, dtype=dtype,
    )  # fmt: skip
    opt = to.ILQROptions(max_iterations=MAX_ITER)

    q_goal = jnp.asarray(Q_READY + offsets, dtype)
    s = jnp.linspace(0.0, 1.0, T + 1)[:, None]
    XS = jnp.stack([jnp.concatenate([q0 + s * (qg - q0), jnp.zeros((T + 1, 7), dtype)], 1) for qg in q_goal])
    interp = args.init == "interp"

    def solve(target, xs):
        cost = reg + to.FramePositionCost(
            model, FRAME, target, weight=DT * W_P, terminal_weight=W_PT, hessian=args.hessian
        )
        if interp:
            return to.fddp(dyn, cost, x0, U0, xs, options=opt)
        return to.ilqr(dyn, cost, x0, U0, options=opt)

    def judge(us, target):
        cost = reg + to.FramePositionCost(model, FRAME, target, weight=DT * W_P, terminal_weight=W_PT)
        us = jnp.asarray(us, dtype)
        return to.total_cost(cost, to.simulate(dyn, x0, us), us)

    one = jax.jit(solve)
    batch = jax.jit(jax.vmap(solve))
    judge_j = jax.jit(judge)
    tg = jnp.asarray(targets, dtype)

    t = time.perf_counter()
    jax.block_until_ready(one(tg[0], XS[0]))
    compile_one = time.perf_counter() - t
    compile_batch = float("nan")
    if not args.no_batch:
        t = time.perf_counter()
        jax.block_until_ready(batch(tg, XS))
        compile_batch = time.perf_counter() - t

    pb_path = os.path.join(tmp, "problem.json")
    with open(pb_path, "w") as fh:
        json.dump(
            dict(
                urdf=urdf,
                x0=np.asarray(x0).tolist(),
                targets=targets.tolist(),
                rounds=args.rounds,
                xs_init=np.asarray(XS).tolist() if interp else None,
            ),
            fh,
        )

    best_one, best_batch, best_croc = None, None, None
    croc = None
    for _ in range(args.rounds):
        walls, res = [], []
        for i in range(args.targets):
            t = time.perf_counter()
            r = jax.block_until_ready(one(tg[i], XS[i]))
            walls.append(time.perf_counter() - t)
            res.append(r)
        if best_one is None or sum(walls) < sum(best_one[0]):
            best_one = (walls, res)
        if not args.no_batch:
            t = time.perf_counter()
            rb = jax.block_until_ready(batch(tg, XS))
            wb = time.perf_counter() - t
            if best_batch is None or wb < best_batch[0]:
                best_batch = (wb, rb)
    out = subprocess.run(
        [args.croc_python, os.path.abspath(__file__), "--croc", pb_path], capture_output=True, text=True, check=True
    )
    croc = json.loads(out.stdout.strip().splitlines()[-1])
    best_croc = min(croc["rounds"], key=lambda per: sum(p["wall"] for p in per))

    walls, res = best_one
    wb, rb = best_batch if best_batch else (float("nan"), None)
    batch_iters = np.asarray(rb.iterations) if rb is not None else np.full(args.targets, -1)
    lines = [
        "| target | jaxdyn iters | jaxdyn ms/iter | jaxdyn wall ms | Crocoddyl iters | Crocoddyl ms/iter | Crocoddyl wall ms "
        "| cost jaxdyn / Crocoddyl (one judge) | batch iters |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    rows = []
    for i in range(args.targets):
        c = best_croc[i]
        Jj = float(judge_j(res[i].u, tg[i]))
        Jc = float(judge_j(np.asarray(c["us"]), tg[i]))
        it_j = int(res[i].iterations)
        rows.append((walls[i], it_j, c["wall"], c["iterations"]))
        lines.append(
            f"| {i} | {it_j} | {1e3 * walls[i] / max(it_j, 1):.2f} | {1e3 * walls[i]:.1f} | {c['iterations']} "
            f"| {1e3 * c['wall'] / max(c['iterations'], 1):.2f} | {1e3 * c['wall']:.1f} | {Jj / Jc:.7f} "
            f"| {int(batch_iters[i]) if rb is not None else '-'} |"
        )
    tj, ij = sum(r[0] for r in rows), sum(r[1] for r in rows)
    tc, ic = sum(r[2] for r in rows), sum(r[3] for r in rows)
    lines += [
        "",
        f"| | jaxdyn `{'fddp' if interp else 'ilqr'}` | Crocoddyl FDDP |",
        "|---|---|---|",
        f"| time per iteration (mean over the targets) | {1e3 * tj / ij:.2f} ms | {1e3 * tc / ic:.2f} ms |",
        f"| iterations (sum over {args.targets} targets) | {ij} | {ic} |",
        f"| {args.targets} targets one by one, wall | {tj:.3f} s | {tc:.3f} s |",
        f"| {args.targets} targets as one `jit(vmap)` batch, wall | {wb:.3f} s "
        f"({int(np.max(batch_iters))} iterations in lock-step) | - |",
        f"| compile (one problem / the batch) | {compile_one:.1f} s / {compile_batch:.1f} s | none |",
    ]
    emit(
        lines,
        args.out,
        dtype=args.dtype,
        crocoddyl=croc["crocoddyl"],
        pinocchio_crocenv=croc["pinocchio"],
        rounds=f"best of {args.rounds}",
        problem=f"panda 7 dof, T={T}, dt={DT}, symplectic Euler, sim.IDEAL",
        step_jacobians="jacfwd" if args.jacfwd else "closed form",
        end_effector_hessian=args.hessian,
        initial_states="interpolated to the goal (infeasible)" if interp else "x0 at every knot (a rollout)",
    )


if __name__ == "__main__":
    main()
