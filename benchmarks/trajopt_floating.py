"""Trajectory optimisation on a floating base: jaxdyn's ``trajopt.fddp`` against Crocoddyl's
``SolverFDDP`` on Solo-12 turning its base in flight (the problem of
``tests/reference/generate_crocoddyl_solo12.py``: free-flyer, 12 actuated joints, gravity, no
contact, 25 knots of 20 ms, symplectic Euler, quadratic state and control costs, from ``x0`` at
every knot with zero torques), in the same run.

jaxdyn: the jitted ``fddp`` (float64, ``ILQROptions(tolerance=1e-9)``, closed-form step
Jacobians: ``aba_derivatives`` and the chain rule through the free-flyer's exponential map),
timed after compilation, best of ``--rounds``; Crocoddyl 3.2.1 in its own interpreter
(``problem.nthreads = 1``, its defaults), best of ``--rounds``. Costs of both solutions by one
judge (jaxdyn's cost of the controls' rollout).

    python benchmarks/trajopt_floating.py [--rounds 3] [--out FILE.md]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def crocoddyl_side(rounds):
    """Run in Crocoddyl's interpreter: one warm-up and ``rounds`` timed solves of the reference
    problem (its :func:`solve`), printed as one JSON line."""
    sys.path.insert(0, os.path.join(ROOT, "tests", "reference"))
    import generate_crocoddyl_solo12 as pb

    pb.solve()  # warm-up
    walls, cpus, iterations = [], [], []
    for _ in range(rounds):
        t, c = time.perf_counter(), time.process_time()
        crocoddyl, pin, solver, _ = pb.solve()
        walls.append(time.perf_counter() - t)
        cpus.append(time.process_time() - c)
        iterations.append(int(solver.iter))
    out = dict(crocoddyl=crocoddyl.__version__, pinocchio=pin.__version__, walls=walls, cpus=cpus)
    print(json.dumps(dict(out, iterations=iterations, cost=float(solver.cost))))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--crocoddyl-side", type=int, metavar="ROUNDS", help=argparse.SUPPRESS)
    ap.add_argument("--croc-python", default="/tmp/crocenv/bin/python")
    ap.add_argument("--out")
    args = ap.parse_args()
    if args.crocoddyl_side:
        crocoddyl_side(args.crocoddyl_side)
        return

    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    sys.path.insert(0, os.path.join(ROOT, "tests", "reference"))
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    import generate_crocoddyl_solo12 as pb
    from harness import emit
    from test_trajopt_floating import _w, _x

    import jaxdyn
    from jaxdyn import trajopt as to

    load_start = " ".join(f"{x:.1f}" for x in os.getloadavg())
    m = jaxdyn.load_robot("solo12", dtype=jnp.float64)
    dyn = to.model_dynamics(m, pb.DT, "semi_implicit_euler", options=jaxdyn.sim.IDEAL)
    cost = to.quadratic_cost(
        _x(pb.X_REF), pb.DT * _w(np.asarray(pb.W_X)), pb.DT * pb.W_U, Qf=_w(np.asarray(pb.W_XT)), nu=12, space=dyn
    )
    x0 = jnp.asarray(_x(pb.X0))
    xs0 = jnp.broadcast_to(x0, (pb.T + 1, x0.shape[0]))
    opt = to.ILQROptions(max_iterations=pb.MAX_ITER, tolerance=1e-9)
    solve = jax.jit(lambda xs: to.fddp(dyn, cost, x0, jnp.zeros((pb.T, 12)), xs, options=opt))
    judge = jax.jit(lambda us: to.total_cost(cost, to.simulate(dyn, x0, us), us))

    t = time.perf_counter()
    jax.block_until_ready(solve(xs0))
    compile_s = time.perf_counter() - t
    walls, cpus = [], []
    for _ in range(args.rounds):
        c, t = time.process_time(), time.perf_counter()
        res = jax.block_until_ready(solve(xs0))
        walls.append(time.perf_counter() - t)
        cpus.append(time.process_time() - c)
    out = subprocess.run(
        [args.croc_python, os.path.abspath(__file__), "--crocoddyl-side", str(args.rounds)],
        capture_output=True,
        text=True,
        check=True,
    )
    croc = json.loads(out.stdout.strip().splitlines()[-1])
    with open(pb.OUT) as fh:
        us_c = jnp.asarray(json.load(fh)["us"])
    J_j, J_c = float(judge(res.u)), float(judge(us_c))
    it_j, it_c = int(res.iterations), croc["iterations"][0]
    wc = min(croc["walls"])
    lines = [
        "| | jaxdyn `fddp` | Crocoddyl `SolverFDDP` |",
        "|---|---|---|",
        f"| iterations | {it_j} | {it_c} |",
        f"| wall to converge (best of {args.rounds}) | {1e3 * min(walls):.1f} ms | {1e3 * wc:.1f} ms |",
        f"| time per iteration | {1e3 * min(walls) / it_j:.2f} ms | {1e3 * wc / it_c:.2f} ms |",
        f"| process CPU to converge (best) | {1e3 * min(cpus):.1f} ms | {1e3 * min(croc['cpus']):.1f} ms |",
        f"| cost (one judge) | {J_j:.12g} | {J_c:.12g} |",
        f"| cost ratio jaxdyn / Crocoddyl | {J_j / J_c:.10f} | |",
        f"| compile | {compile_s:.1f} s | none |",
    ]
    emit(
        lines,
        args.out,
        dtype="float64",
        crocoddyl=croc["crocoddyl"],
        pinocchio_crocenv=croc["pinocchio"],
        problem=f"solo12 free-flyer in flight, T={pb.T}, dt={pb.DT}, symplectic Euler, sim.IDEAL",
        load_average_start=load_start,
        load_average_end=" ".join(f"{x:.1f}" for x in os.getloadavg()),
    )


if __name__ == "__main__":
    main()
