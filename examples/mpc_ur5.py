"""Model-predictive control: the UR5 arm's tool point tracking a moving target (jaxdyn.trajopt).

The target circles in a vertical plane in front of the robot (radius ``RADIUS``, one turn in
``PERIOD`` seconds). Every control period ``DT`` the plan of ``--horizon`` knots is re-solved by
:func:`jaxdyn.trajopt.mpc_step` (feasibility-driven DDP warm started from the previous plan
shifted by one knot, at most ``--iterations`` iterations) from the measured state, and its
first torque applied; torques are limited to the URDF's effort limits.

The plant is :func:`jaxdyn.sim.step` at ``DT / SUBSTEPS`` with the torque held over the period,
the planner's model one step of ``DT``: the loop corrects the discretisation mismatch.

Cost per knot (``dt`` scaled, as the planner sees it over its horizon)::

    dt (W_P/2 |p_tool - target_t|^2 + W_Q/2 |q - q_start|^2 + W_V/2 |qd|^2 + W_U/2 |tau - g(q_start)|^2)
    + W_PT/2 |p_tool,T - target_T|^2 + W_V/2 |qd_T|^2

Printed: the solve time per replanning step after compilation (wall clock and process CPU time:
the median, the 90th percentile and the largest), iterations per step, and the tracking error.
Output in ``examples/output/mpc/``: a plot of the tracking error and the solve times, a GIF.

Run: ``python examples/mpc_ur5.py`` (a few minutes on 2 CPU cores, mostly compilation);
``--quick`` for a reduced run, ``--out DIR`` to write elsewhere.
"""

from __future__ import annotations

import argparse
import os
import time

import jax

jax.config.update("jax_enable_x64", True)  # a program may choose float64; the library never does

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import jaxdyn  # noqa: E402
from jaxdyn import sim, trajopt, viewer  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "output", "mpc")
FRAME = "tool0"
DT = 0.02  # control period [s]
SUBSTEPS = 4  # plant steps per control period
Q_START = [0.0, -1.2, 1.6, -1.9, -1.57, 0.0]
RADIUS, PERIOD = 0.15, 3.0  # [m], [s]
W_P, W_PT, W_Q, W_V, W_U = 1e4, 1e4, 1.0, 1.0, 1e-3
QUICK = dict(duration=1.5, horizon=10, gif_stride=5)


def target(t, centre):
    """The target's position at times ``t`` (a circle in the plane x = const)."""
    a = 2 * np.pi * np.asarray(t) / PERIOD
    return centre + RADIUS * np.stack([np.zeros_like(a), np.sin(a), np.cos(a) - 1.0], -1)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--duration", type=float, default=6.0, help="closed-loop time [s] (default 6)")
    ap.add_argument("--horizon", type=int, default=20, help="knots per plan (default 20, 0.4 s)")
    ap.add_argument("--iterations", type=int, default=3, help="fddp iterations per replanning step (default 3)")
    ap.add_argument("--gif-stride", type=int, default=3, help="keep every n-th step in the GIF")
    ap.add_argument("--out", default=OUT, help="output folder (default: examples/output/mpc)")
    ap.add_argument("--quick", action="store_true", help="a reduced run (shorter, shorter horizon)")
    args = ap.parse_args(argv)
    if args.quick:
        for k, v in QUICK.items():
            if ap.get_default(k) == getattr(args, k):
                setattr(args, k, v)
    os.makedirs(args.out, exist_ok=True)

    model = jaxdyn.load_robot("ur5", dtype=jnp.float64)
    nv, H = model.nv, args.horizon
    dyn = trajopt.model_dynamics(model, DT, "semi_implicit_euler")
    q0 = jnp.asarray(Q_START)
    x0 = jnp.concatenate([q0, jnp.zeros(nv)])
    g0 = jaxdyn.rnea(model, q0, jnp.zeros(nv), jnp.zeros(nv))
    centre = np.asarray(jaxdyn.frame_placement(model, q0, FRAME).p)
    effort = model.effort_limit
    posture = trajopt.quadratic_cost(
        x0, jnp.concatenate([jnp.full(nv, DT * W_Q), jnp.full(nv, DT * W_V)]), DT * W_U,
        Qf=jnp.concatenate([jnp.zeros(nv), jnp.full(nv, W_V)]), u_ref=g0, space=dyn,
    )  # fmt: skip
    options = trajopt.ILQROptions(max_iterations=args.iterations, tolerance=1e-6)

    @jax.jit
    def replan(x, xs, us, targets):
        cost = posture + trajopt.FramePositionCost(model, FRAME, targets, weight=DT * W_P, terminal_weight=W_PT)
        return trajopt.mpc_step(dyn, cost, x, xs, us, -effort, effort, options)

    @jax.jit
    def plant(x, tau):
        q, qd = x[:nv], x[nv:]
        for _ in range(SUBSTEPS):
            q, qd = sim.step(model, q, qd, tau, DT / SUBSTEPS, "semi_implicit_euler")
        return jnp.concatenate([q, qd])

    tool = jax.jit(lambda q: jaxdyn.frame_placement(model, q, FRAME).p)

    steps = int(round(args.duration / DT))
    x = x0
    xs, us = jnp.tile(x0, (H + 1, 1)), jnp.tile(g0, (H, 1))
    t0 = time.perf_counter()
    jax.block_until_ready(replan(x, xs, us, jnp.asarray(target(DT * np.arange(H + 1), centre))))
    jax.block_until_ready(plant(x, g0))
    print(f"compiled the replanning step and the plant in {time.perf_counter() - t0:.1f} s")

    walls, cpus, iters, errors, qs = [], [], [], [], [np.asarray(q0)]
    for k in range(steps):
        tg = jnp.asarray(target(DT * (k + np.arange(H + 1)), centre))
        w, c = time.perf_counter(), time.process_time()
        r = jax.block_until_ready(replan(x, xs, us, tg))
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
        iters.append(int(r.iterations))
        x = plant(x, r.u[0])
        xs, us = r.x, r.u
        qs.append(np.asarray(x[:nv]))
        errors.append(float(np.linalg.norm(np.asarray(tool(x[:nv])) - target(DT * (k + 1), centre))))

    walls_ms, cpus_ms, err_mm = 1e3 * np.asarray(walls), 1e3 * np.asarray(cpus), 1e3 * np.asarray(errors)
    settle = int(round(1.0 / DT))
    late = err_mm[settle:] if steps > settle else err_mm
    stat = lambda a: f"median {np.median(a):.1f} ms, 90% {np.percentile(a, 90):.1f} ms, max {np.max(a):.1f} ms"
    print(f"{steps} replanning steps of {H} knots ({H * DT:.2f} s), control period {1e3 * DT:.0f} ms")
    print(f"solve time per replanning step: wall {stat(walls_ms)}; process CPU {stat(cpus_ms)}")
    print(f"fddp iterations per step: mean {np.mean(iters):.2f}, max {max(iters)}")
    print(f"tracking error after 1 s: mean {np.mean(late):.2f} mm, max {np.max(late):.2f} mm")

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ts = DT * np.arange(1, steps + 1)
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(7, 5), sharex=True)
    a1.plot(ts, err_mm)
    a1.set_ylabel("tool-point error [mm]")
    a1.set_yscale("log")
    a2.plot(ts, walls_ms, label="wall")
    a2.plot(ts, cpus_ms, label="process CPU")
    a2.axhline(1e3 * DT, color="k", ls="--", lw=0.8, label="control period")
    a2.set_ylabel("solve time per step [ms]")
    a2.set_xlabel("t [s]")
    a2.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(args.out, "mpc_ur5.png"))
    plt.close(fig)
    viewer.animate(
        model,
        np.asarray(qs),
        os.path.join(args.out, "mpc_ur5.gif"),
        stride=args.gif_stride,
        trail=FRAME,
        dt=DT,
        target=target(DT * np.arange(steps + 1), centre),
    )
    print(f"wrote {args.out}/mpc_ur5.png and mpc_ur5.gif")


if __name__ == "__main__":
    main()
