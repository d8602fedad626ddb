"""Batches of trajectory optimisation problems on the CPU: jaxdyn's ``trajopt.solve_batch`` (and
``jax.jit(jax.vmap(trajopt.ilqr))``) against Crocoddyl solving the same problems on all cores.

The problem is the Panda reach of ``benchmarks/trajopt.py`` (7 dof, 100 knots of 10 ms,
symplectic Euler, torque, velocity and tool-point costs, gravity-compensation controls from
rest, a feasible start), one target per problem: ``N`` targets, the tool point at the "ready"
configuration offset by uniform random joint offsets in [-0.6, 0.6] rad (seed 0; the first 8 are
``benchmarks/trajopt.py``'s).

jaxdyn, float64, after compilation (compile times reported apart):

* ``solve_batch``: ``trajopt.solve_batch(problem, targets, "ilqr", slots=S, devices=...)`` (S
  slots iterated at once per device, a finished problem's slot refilled from the queue), on one
  CPU device and on all cores: the script sets
  ``XLA_FLAGS=--xla_force_host_platform_device_count=<os.cpu_count()>`` before importing JAX,
  and ``solve_batch`` runs one queue per host device (one ``jax.pmap``, a thread per device);
* ``jit(vmap)``: ``jax.jit(jax.vmap(ilqr))`` over the ``N`` problems (lock-step: every problem
  runs as many iterations as the slowest), for ``N`` up to ``--vmap-max``;
* one by one: the jitted single solve called ``N`` times (for ``N`` up to ``--single-max``).

Crocoddyl (its own interpreter, this file run with ``--croc``): ``SolverFDDP`` with
``problem.nthreads = 1`` per problem, (a) in one process, one problem after another, and (b) on
all cores: a ``multiprocessing.Pool`` of ``os.cpu_count()`` worker processes (fork), each
building its Pinocchio model and action models once (the pool's initializer) and then solving
the problems it is handed (``pool.map`` over the target indices, chunks of
``ceil(N / (4 workers))``); the time is the wall clock of the ``map`` call, after a warm-up
``map`` over the workers. Both sides' solutions are scored by one judge (jaxdyn's cost of the
controls, re-simulated in jaxdyn).

    python benchmarks/trajopt_batch.py [--sizes 8,64,1024] [--slots 16] [--out FILE.md]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from trajopt import DT, FRAME, MAX_ITER, Q_READY, W_P, W_PT, W_U, W_V, W_VT, T, arm_urdf  # noqa: E402

# -- Crocoddyl side (its own interpreter) -----------------------------------------------------------

_CROC: dict = {}


def _croc_init(urdf, x0):
    import crocoddyl
    import pinocchio as pin

    model = pin.buildModelFromUrdf(urdf)
    state = crocoddyl.StateMultibody(model)
    actuation = crocoddyl.ActuationModelFull(state)
    _CROC.update(crocoddyl=crocoddyl, state=state, actuation=actuation, fid=model.getFrameId(FRAME), x0=np.asarray(x0))


def _croc_solve(target):
    crocoddyl, state, actuation = _CROC["crocoddyl"], _CROC["state"], _CROC["actuation"]
    nu, nv, x0 = actuation.nu, state.nv, _CROC["x0"]
    vel_act = crocoddyl.ActivationModelWeightedQuad(np.r_[np.zeros(nv), np.ones(nv)])

    def costs(terminal):
        c = crocoddyl.CostModelSum(state, nu)
        vel = crocoddyl.CostModelResidual(state, vel_act, crocoddyl.ResidualModelState(state, np.zeros(state.nx), nu))
        pos = crocoddyl.CostModelResidual(
            state, crocoddyl.ResidualModelFrameTranslation(state, _CROC["fid"], np.asarray(target), nu)
        )
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
    solver = crocoddyl.SolverFDDP(problem)
    solver.solve([x0] * (T + 1), problem.quasiStatic([x0] * T), MAX_ITER, False)
    return int(solver.iter), float(solver.cost), np.asarray(solver.us).tolist()


def _croc_task(i):
    c = time.process_time()
    it, cost, us = _croc_solve(_CROC["targets"][i])
    return it, cost, us, time.process_time() - c


def _croc_pool_init(urdf, x0, targets):
    _croc_init(urdf, x0)
    _CROC["targets"] = targets


def croc_main(problem_path):
    import multiprocessing as mp

    import crocoddyl
    import pinocchio as pin

    with open(problem_path) as fh:
        pb = json.load(fh)
    targets = pb["targets"]
    n, workers = len(targets), os.cpu_count() or 1
    _croc_pool_init(pb["urdf"], pb["x0"], targets)
    _croc_task(0)  # warm-up
    c, t = time.process_time(), time.perf_counter()
    seq = [_croc_task(i) for i in range(n)] if n <= pb["sequential_max"] else None
    seq_wall, seq_cpu = time.perf_counter() - t, time.process_time() - c
    with mp.get_context("fork").Pool(workers, _croc_pool_init, (pb["urdf"], pb["x0"], targets)) as pool:
        pool.map(_croc_task, range(workers), chunksize=1)  # warm-up: every worker solves once
        t = time.perf_counter()
        par = pool.map(_croc_task, range(n), chunksize=max(1, math.ceil(n / (4 * workers))))
        par_wall = time.perf_counter() - t
    out = dict(
        crocoddyl=crocoddyl.__version__,
        pinocchio=pin.__version__,
        workers=workers,
        par_wall=par_wall,
        par_cpu=sum(p[3] for p in par),
        iterations=[p[0] for p in par],
        us=[p[2] for p in par],
        seq_wall=seq_wall if seq else None,
        seq_cpu=seq_cpu if seq else None,
    )
    print(json.dumps(out))


# -- jaxdyn side ------------------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--croc", help=argparse.SUPPRESS)
    ap.add_argument("--sizes", default="8,64,1024")
    ap.add_argument("--slots", default="16", help="slot counts of solve_batch, comma separated (capped at N)")
    ap.add_argument("--vmap-max", type=int, default=64)
    ap.add_argument("--one-device-max", type=int, default=64, help="solve_batch on one device up to this N")
    ap.add_argument(
        "--all-cores",
        action="store_true",
        help="solve_batch on every host device too (one pmap)",
    )
    ap.add_argument("--single-max", type=int, default=8)
    ap.add_argument("--croc-sequential-max", type=int, default=1024)
    ap.add_argument("--croc-python", default="/tmp/crocenv/bin/python")
    ap.add_argument("--out")
    args = ap.parse_args()
    if args.croc:
        return croc_main(args.croc)

    cores = os.cpu_count() or 1
    os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count={cores}"
    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    from harness import emit

    import jaxdyn
    from jaxdyn import sim
    from jaxdyn import trajopt as to

    load_start = " ".join(f"{x:.1f}" for x in os.getloadavg())
    sizes = [int(s) for s in args.sizes.split(",")]
    slot_counts = [int(s) for s in args.slots.split(",")]
    tmp = tempfile.mkdtemp()
    urdf = arm_urdf(os.path.join(tmp, "panda_arm.urdf"))
    model = jaxdyn.load_urdf(urdf, dtype=jnp.float64)
    q0 = jnp.asarray(Q_READY)
    x0 = jnp.concatenate([q0, jnp.zeros(7)])
    offsets = np.random.default_rng(0).uniform(-0.6, 0.6, (max(sizes), 7))
    targets = np.asarray(jax.jit(jax.vmap(lambda q: jaxdyn.frame_placement(model, q, FRAME).p))(q0 + offsets))
    U0 = jnp.tile(jaxdyn.rnea(model, q0, jnp.zeros(7), jnp.zeros(7)), (T, 1))
    dyn = to.model_dynamics(model, DT, "semi_implicit_euler", options=sim.IDEAL)
    wq = jnp.zeros(7)
    reg = to.quadratic_cost(
        jnp.zeros(14), jnp.concatenate([wq, jnp.full(7, DT * W_V)]), DT * W_U,
        Qf=jnp.concatenate([wq, jnp.full(7, W_VT)]), nu=7, space=dyn,
    )  # fmt: skip
    opt = to.ILQROptions(max_iterations=MAX_ITER)

    def cost_of(target):
        return reg + to.FramePositionCost(model, FRAME, target, weight=DT * W_P, terminal_weight=W_PT)

    def problem(target):
        return to.Problem(dyn, cost_of(target), x0, U0)

    def single(target):
        r = to.ilqr(dyn, cost_of(target), x0, U0, options=opt)
        return r.cost, r.iterations, r.u

    judge = jax.jit(jax.vmap(lambda us, tg: to.total_cost(cost_of(tg), to.simulate(dyn, x0, us), us)))

    def timed(f, *a):
        c, t = time.process_time(), time.perf_counter()
        r = jax.block_until_ready(f(*a))
        return r, time.perf_counter() - t, time.process_time() - c

    compiled = {}

    def program(key, f, *a, wrap=True):
        """``f`` (jitted if ``wrap``), compiled on first use (the first call's time recorded),
        then timed."""
        if key not in compiled:
            g = jax.jit(f) if wrap else f
            _, wall, _ = timed(g, *a)
            compiled[key] = (g, wall)
        return timed(compiled[key][0], *a)

    rows = []
    for n in sizes:
        tg = jnp.asarray(targets[:n])
        pb_path = os.path.join(tmp, f"problem{n}.json")
        with open(pb_path, "w") as fh:
            json.dump(
                dict(urdf=urdf, x0=np.asarray(x0).tolist(), targets=targets[:n].tolist(),
                     sequential_max=args.croc_sequential_max),
                fh,
            )  # fmt: skip
        out = subprocess.run(
            [args.croc_python, os.path.abspath(__file__), "--croc", pb_path], capture_output=True, text=True, check=True
        )
        croc = json.loads(out.stdout.strip().splitlines()[-1])
        J_croc = np.asarray(judge(jnp.asarray(croc["us"]), tg))
        croc_iters = int(np.sum(croc["iterations"]))
        if croc["seq_wall"] is not None:
            rows.append((n, "Crocoddyl FDDP, 1 process", croc["seq_wall"], croc["seq_cpu"], croc_iters, None, 1.0))
        rows.append(
            (n, f"Crocoddyl FDDP, pool of {croc['workers']} processes", croc["par_wall"], croc["par_cpu"], croc_iters,
             None, 1.0)
        )  # fmt: skip
        for d in (1, cores) if args.all_cores and n <= args.one_device_max else (cores,) if args.all_cores else (1,):
            for s in sorted({min(s, -(-n // d)) for s in slot_counts}):
                (res, passes), wall, cpu = program(
                    ("batch", n, s, d),
                    lambda tg, s=s, d=d: tuple(
                        to.solve_batch(problem, tg, "ilqr", options=opt, slots=s, devices=jax.devices()[:d])
                    ),
                    tg,
                    wrap=False,
                )
                ratio = float(np.max(np.abs(np.asarray(judge(res.u, tg)) / J_croc - 1)))
                name = f"jaxdyn solve_batch, {s} slots x {d} device{'s' if d > 1 else ''}"
                rows.append((n, name, wall, cpu, int(np.sum(res.iterations)), int(passes), ratio))
        if n <= args.vmap_max:
            (J, its, us), wall, cpu = program(("vmap", n), jax.vmap(single), tg)
            ratio = float(np.max(np.abs(np.asarray(judge(us, tg)) / J_croc - 1)))
            rows.append((n, "jaxdyn jit(vmap(ilqr))", wall, cpu, int(np.sum(its)), int(np.max(its)) + 1, ratio))
        if n <= args.single_max:
            walls, cpus, its_sum, uss = 0.0, 0.0, 0, []
            for i in range(n):
                (J, its, us), wall, cpu = program(("single",), single, tg[i])
                walls, cpus, its_sum = walls + wall, cpus + cpu, its_sum + int(its)
                uss.append(us)
            ratio = float(np.max(np.abs(np.asarray(judge(jnp.stack(uss), tg)) / J_croc - 1)))
            rows.append((n, "jaxdyn ilqr one by one", walls, cpus, its_sum, None, ratio))
        print(rows[-1], flush=True)

    lines = [
        "| N | solver | wall s | process CPU s | wall ms per problem | iterations (sum) | wall ms per iteration "
        "| batched passes | largest cost deviation from Crocoddyl's (one judge) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for n, name, wall, cpu, its, passes, dev in rows:
        lines.append(
            f"| {n} | {name} | {wall:.2f} | {cpu:.2f} | {1e3 * wall / n:.1f} | {its} | {1e3 * wall / its:.2f} "
            f"| {'-' if passes is None else passes} | {'-' if 'Crocoddyl' in name else f'{dev:.1e}'} |"
        )
    lines += ["", "| program | first call (compile and one run) s |", "|---|---|"]
    for key, (_, wall) in compiled.items():
        lines.append(f"| {' '.join(str(k) for k in key)} | {wall:.1f} |")
    emit(
        lines,
        args.out,
        dtype="float64",
        crocoddyl=croc["crocoddyl"],
        pinocchio_crocenv=croc["pinocchio"],
        problem=f"panda 7 dof, T={T}, dt={DT}, symplectic Euler, sim.IDEAL, feasible start",
        load_average_start=load_start,
        load_average_end=" ".join(f"{x:.1f}" for x in os.getloadavg()),
    )


if __name__ == "__main__":
    main()
