"""Minimum-effort point-to-point motion of the Franka Panda by iLQR (jaxdyn.trajopt).

From rest at the "ready" configuration, move the tool point (frame ``panda_hand_tcp``) to a
target position in ``HORIZON`` seconds and stop there, minimising the effort ``sum_t |tau_t|^2``
of the full joint torque (gravity compensation is part of the effort). The fingers are held at
their initial opening by a quadratic cost. Torques are limited to the URDF's ``effort`` limits.

Cost (``dt`` = control period)::

    J = sum_t dt/2 (|tau_t|^2 + W_FINGER |q_fingers,t - q_fingers,0|^2 + W_QD |qd_t|^2)
        + W_FINGER/2 |q_fingers,T - q_fingers,0|^2 + W_POS/2 |p_tcp(q_T) - target|^2 + W_VEL/2 |qd_T|^2

Initial guess: the gravity-compensation torques of the start configuration (the robot does not
move). Baseline for comparison: a minimum-jerk joint-space path to a configuration that reaches the
same target (the configuration the target was generated from), with torques from inverse dynamics
(``jaxdyn.rnea``) -- a common hand-designed motion; iLQR should need markedly less effort.

The solution is re-simulated with :func:`jaxdyn.sim.rollout`. Output in
``examples/output/trajopt/``: cost curve, q/qd/tau plots, tool-point error, GIF.

Run: ``python examples/trajopt_panda.py [--init zeros]`` (a few minutes on 2 CPU cores, mostly compilation);
``--quick`` for a reduced run (fewer iterations, a shorter GIF), ``--out DIR`` to write elsewhere.
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
from jaxdyn import render, sim, trajopt, viewer  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "output", "trajopt")
FRAME = "panda_hand_tcp"
DT = 0.01
HORIZON = 1.5
INTEGRATOR = "semi_implicit_euler"
Q_START = [0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785, 0.02, 0.02]
Q_GOAL = [0.9, -0.2, 0.3, -1.7, 0.2, 1.9, 1.0, 0.02, 0.02]  # only used to make a reachable target
W_POS = 1e5  # [1/m^2] terminal tool-point error (1 mm -> 0.05)
W_VEL = 1e4  # terminal joint velocity (0.01 rad/s -> 0.5e-2 per joint)
W_FINGER = 1e4  # finger opening, every step and at the end
W_QD = 5.0  # running joint-velocity cost: keeps the light wrist from whipping round
# --quick: a reduced run; explicit options still win
QUICK = dict(iterations=30, gif_stride=15)


class EffortCost(trajopt.Cost):
    """``dt/2 |u|^2`` per step plus the finger-holding and joint-velocity terms."""

    dt: float
    finger_ref: jnp.ndarray
    nq: int

    def running(self, x, u, t):
        f = x[self.nq - 2 : self.nq] - self.finger_ref
        qd = x[self.nq :]
        return 0.5 * self.dt * (u @ u + W_FINGER * f @ f + W_QD * qd @ qd)

    def terminal(self, x):
        f = x[self.nq - 2 : self.nq] - self.finger_ref
        qd = x[self.nq :]
        return 0.5 * W_VEL * qd @ qd + 0.5 * W_FINGER * f @ f


def min_jerk(q0, q1, T, dt):
    """Minimum-jerk joint path (q, qd, qdd) at the T+1 sample times."""
    s = np.arange(T + 1) / T
    h = 10 * s**3 - 15 * s**4 + 6 * s**5
    hd = (30 * s**2 - 60 * s**3 + 30 * s**4) / (T * dt)
    hdd = (60 * s - 180 * s**2 + 120 * s**3) / (T * dt) ** 2
    d = np.asarray(q1) - np.asarray(q0)
    return np.asarray(q0) + h[:, None] * d, hd[:, None] * d, hdd[:, None] * d


def plots(t, traj, tcp_err, hist, names, limits, path_traj, path_cost):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(8, 10), dpi=100)
    FigureCanvasAgg(fig)
    axs = fig.subplots(4, 1, sharex=True)
    for i, name in enumerate(names[:7]):
        axs[0].plot(t, traj.q[:, i], label=name.replace("panda_", ""))
        axs[1].plot(t, traj.qd[:, i])
        axs[2].step(t[:-1], traj.tau[:, i], where="post")
    axs[0].set_ylabel("q [rad]")
    axs[1].set_ylabel("qd [rad/s]")
    axs[2].set_ylabel("tau [N m]")
    axs[3].semilogy(t, np.maximum(tcp_err, 1e-6))
    axs[3].set_ylabel("|p_tcp - target| [m]")
    axs[3].set_xlabel("t [s]")
    axs[0].legend(ncol=4, fontsize=7, loc="upper right")
    axs[0].set_title(f"Panda minimum-effort reach (iLQR), |tau| <= effort limit ({limits})")
    for ax in axs:
        ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(path_traj)

    fig = Figure(figsize=(6, 4), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    h = np.asarray(hist)
    h = h[np.isfinite(h)]
    ax.semilogy(np.arange(len(h)), h, ".-")
    ax.set_xlabel("iLQR iteration")
    ax.set_ylabel("cost J")
    ax.set_title("Panda minimum-effort reach")
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path_cost)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--init",
        choices=("gravity", "zeros"),
        default="gravity",
        help="initial torque guess: gravity compensation at the start (default) or zeros",
    )
    ap.add_argument("--iterations", type=int, default=150, help="iLQR iterations at most (default 150)")
    ap.add_argument("--gif-stride", type=int, default=4, help="keep every n-th step in the GIF")
    ap.add_argument("--out", default=OUT, help="output folder (default: examples/output/trajopt)")
    ap.add_argument(
        "--quick", action="store_true", help="reduced size: " + ", ".join(f"{k}={v}" for k, v in QUICK.items())
    )
    if ap.parse_known_args(argv)[0].quick:
        ap.set_defaults(**QUICK)
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    model = jaxdyn.load_robot("panda", dtype=jnp.float64)
    T = int(round(HORIZON / DT))
    q0 = jnp.asarray(Q_START)
    target = jaxdyn.frame_placement(model, jnp.asarray(Q_GOAL), FRAME).p
    p0 = jaxdyn.frame_placement(model, q0, FRAME).p
    print(
        f"{FRAME}: start {np.round(np.asarray(p0), 3)} m, target {np.round(np.asarray(target), 3)} m "
        f"({float(jnp.linalg.norm(target - p0)):.3f} m away), {HORIZON} s = {T} steps"
    )

    dyn = trajopt.model_dynamics(model, DT, INTEGRATOR)
    cost = EffortCost(DT, q0[7:], model.nq) + trajopt.FramePositionCost(model, FRAME, target, 0.0, W_POS)
    x0 = jnp.concatenate([q0, jnp.zeros(model.nv)])
    g0 = jaxdyn.gravity_torques(model, q0)
    u0 = jnp.tile(g0, (T, 1)) if args.init == "gravity" else jnp.zeros((T, model.nv))
    lim = model.effort_limit
    opts = trajopt.ILQROptions(max_iterations=args.iterations, tolerance=1e-6, verbose=True)
    t0 = time.perf_counter()
    res = trajopt.ilqr(dyn, cost, x0, u0, -lim, lim, options=opts)
    jax.block_until_ready(res)
    wall = time.perf_counter() - t0
    print(
        f"iLQR: {int(res.iterations)} iterations, converged={bool(res.converged)}, "
        f"cost {float(res.cost_history[0]):.5g} -> {float(res.cost):.6g}, {wall:.1f} s (incl. compile)"
    )

    traj = sim.rollout(model, q0, jnp.zeros(model.nv), res.u, DT, integrator=INTEGRATOR)
    err = float(jnp.max(jnp.abs(jnp.concatenate([traj.q, traj.qd], 1) - res.x)))
    tcp = jax.vmap(lambda q: jaxdyn.frame_placement(model, q, FRAME).p)(traj.q)
    tcp_err = np.linalg.norm(np.asarray(tcp - target), axis=1)
    effort = float(jnp.sum(res.u**2) * DT)
    print(
        f"final tool-point error {1e3 * tcp_err[-1]:.2f} mm, final |qd| {float(jnp.linalg.norm(traj.qd[-1])):.4f} rad/s, "
        f"effort sum tau^2 dt = {effort:.2f} N^2 m^2 s, max |tau|/limit = {float(jnp.max(jnp.abs(res.u) / lim)):.3f}, "
        f"sim.rollout vs iLQR states {err:.1e}"
    )
    # baseline: minimum-jerk joint path to Q_GOAL, torques by inverse dynamics
    qb, qdb, qddb = min_jerk(Q_START, Q_GOAL, T, DT)
    tau_b = jax.vmap(lambda q, v, a: jaxdyn.rnea(model, q, v, a) + model.damping * v)(qb[:-1], qdb[:-1], qddb[:-1])
    effort_b = float(jnp.sum(tau_b**2) * DT)
    print(
        f"baseline minimum-jerk joint path with inverse-dynamics torques: effort {effort_b:.2f} N^2 m^2 s "
        f"(iLQR uses {100 * effort / effort_b:.0f}% of it)"
    )

    t = np.arange(T + 1) * DT
    plots(
        t,
        jax.tree_util.tree_map(np.asarray, traj),
        tcp_err,
        res.cost_history,
        model.joint_names,
        "87/12 N m",
        os.path.join(args.out, "trajopt_panda.png"),
        os.path.join(args.out, "trajopt_panda_cost.png"),
    )
    viewer.animate(
        model,
        traj.q,
        os.path.join(args.out, "trajopt_panda.gif"),
        fps=1.0 / DT / args.gif_stride,
        stride=args.gif_stride,
        trail=FRAME,
        target=np.asarray(target),
        dt=DT,
        title="Panda minimum-effort reach (iLQR)",
    )
    print(f"wrote trajopt_panda.png, trajopt_panda_cost.png, trajopt_panda.gif in {args.out}")
    try:  # the real geometry, where the extra jaxdyn[render] is installed
        n = render.render_video(model, np.asarray(traj.q), os.path.join(args.out, "trajopt_panda.mp4"), dt=DT)
        print(f"wrote trajopt_panda.mp4 ({n} frames)")
    except ImportError as e:
        print(f"trajopt_panda.mp4 not written: {e}")


if __name__ == "__main__":
    main()
