"""Swing-up of the double pendulum by box-constrained iLQR (jaxdyn.trajopt).

The shipped ``double_pendulum`` URDF is upright at ``q = (0, 0)`` (both links point along +z,
checked below with forward kinematics) and hangs at ``q = (pi, 0)``. Starting from rest hanging
down and from a naive zero-torque initial guess (with which the pendulum does not move at all),
iLQR finds torques within ``|tau| <= TAU_MAX`` that bring it to rest upright. The limit is below
the ~0.75 N m the shoulder needs to hold the arm horizontal, so the solution has to pump energy
by swinging back and forth. The URDF's joint damping (0.05 N m s/rad) is part of the dynamics.

Both joints are actuated, ``|tau_i| <= TAU_MAX``. (The acrobot variant, elbow only via
``model_dynamics(..., actuated=["joint2"])``, is not shown: from the zero guess with 2-3 s and
``|tau_2| <= 1 N m`` iLQR stops in a local minimum with this heavily damped shoulder.)

The solution is re-simulated with :func:`jaxdyn.sim.rollout` (an independent code path) to
confirm it. Output in ``examples/output/trajopt/``: cost curves, q/qd/tau plots, GIFs (stick figure), and
MP4s of the real geometry where ``jaxdyn[render]`` is installed.

Run: ``python examples/trajopt_double_pendulum.py [--horizon SECONDS]`` (a few minutes on 2 CPU cores,
mostly compilation); ``--quick`` for a reduced run (fewer iterations, a shorter GIF), ``--out DIR``
to write elsewhere.
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
DT = 0.01  # control period [s]; explicit integration of this stiffly damped pendulum needs < 0.015
INTEGRATOR = "rk4"
TAU_MAX = 0.4  # [N m]
# --quick: a reduced run; explicit options still win
QUICK = dict(iterations=40, gif_stride=20)


def plot_cost(histories: dict, path: str):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6, 4), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    for label, h in histories.items():
        h = np.asarray(h)
        h = h[np.isfinite(h)]
        ax.semilogy(np.arange(len(h)), h, ".-", label=label)
    ax.set_xlabel("iLQR iteration")
    ax.set_ylabel("cost J")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)


def plot_trajectory(t, q, qd, tau, tau_max, title: str, path: str, labels):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7, 8), dpi=100)
    FigureCanvasAgg(fig)
    axs = fig.subplots(3, 1, sharex=True)
    for i, name in enumerate(labels):
        axs[0].plot(t, q[:, i], label=name)
        axs[1].plot(t, qd[:, i], label=name)
        axs[2].step(t[:-1], tau[:, i], where="post", label=name)
    axs[0].axhline(0.0, color="k", lw=0.5)
    axs[0].set_ylabel("q [rad]")
    axs[1].set_ylabel("qd [rad/s]")
    axs[2].set_ylabel("tau [N m]")
    for s in (-1, 1):
        axs[2].axhline(s * tau_max, color="r", ls="--", lw=0.8)
    axs[2].set_xlabel("t [s]")
    axs[0].legend(loc="upper right")
    axs[0].set_title(title)
    for ax in axs:
        ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)


def solve(model, T, actuated, tau_max, label, iterations=300):
    dyn = trajopt.model_dynamics(model, DT, INTEGRATOR, actuated=actuated)
    # running: effort; terminal: upright at rest (Qf on q and qd)
    cost = trajopt.quadratic_cost(jnp.zeros(4), 0.0, 1.0, Qf=[100.0, 100.0, 1.0, 1.0], space=dyn)
    x0 = jnp.array([np.pi, 0.0, 0.0, 0.0])
    u0 = jnp.zeros((T, dyn.nu))
    opts = trajopt.ILQROptions(max_iterations=iterations, tolerance=1e-6, verbose=True)
    print(f"\n== {label}: T = {T} steps of {DT} s, |u| <= {tau_max} N m, {INTEGRATOR}")
    t0 = time.perf_counter()
    res = trajopt.ilqr(dyn, cost, x0, u0, -tau_max, tau_max, options=opts)
    jax.block_until_ready(res)
    wall = time.perf_counter() - t0
    print(
        f"{label}: {int(res.iterations)} iterations, converged={bool(res.converged)}, "
        f"cost {float(res.cost_history[0]):.4g} -> {float(res.cost):.6g}, {wall:.1f} s (incl. compile)"
    )
    # independent check: jaxdyn.sim.rollout of the optimal open-loop torques
    tau = jax.vmap(dyn.torque)(res.u)
    traj = sim.rollout(model, x0[:2], x0[2:], tau, DT, integrator=INTEGRATOR)
    err = float(jnp.max(jnp.abs(jnp.concatenate([traj.q, traj.qd], 1) - res.x)))
    print(
        f"{label}: final q = {np.round(np.asarray(traj.q[-1]), 4)} rad, qd = {np.round(np.asarray(traj.qd[-1]), 4)} rad/s, "
        f"max |tau| = {float(jnp.max(jnp.abs(res.u))):.4f} N m, sim.rollout vs iLQR states {err:.1e}"
    )
    return res, traj


def video(model, qs, path, **options):
    """An MP4 of the solution's real geometry (jaxdyn.render), where the extra is installed."""
    try:
        n = render.render_video(model, np.asarray(qs), path, dt=DT, width=480, height=360, **options)
    except ImportError as e:
        print(f"{os.path.basename(path)} not written: {e}")
        return
    print(f"wrote {os.path.basename(path)} ({n} frames)")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--horizon", type=float, default=2.0, help="horizon [s] (default 2)")
    ap.add_argument("--iterations", type=int, default=300, help="iLQR iterations at most (default 300)")
    ap.add_argument("--gif-stride", type=int, default=4, help="keep every n-th step in the GIF")
    ap.add_argument("--out", default=OUT, help="output folder (default: examples/output/trajopt)")
    ap.add_argument(
        "--quick", action="store_true", help="reduced size: " + ", ".join(f"{k}={v}" for k, v in QUICK.items())
    )
    if ap.parse_known_args(argv)[0].quick:
        ap.set_defaults(**QUICK)
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    model = jaxdyn.load_robot("double_pendulum", dtype=jnp.float64)
    tip = lambda q: float(jaxdyn.frame_placement(model, jnp.asarray(q), "link2").p[2])
    print(
        f"link2 origin height: q=(0,0) {tip([0.0, 0.0]):+.3f} m (upright), q=(pi,0) {tip([np.pi, 0.0]):+.3f} m (hanging)"
    )
    T = int(round(args.horizon / DT))
    t = np.arange(T + 1) * DT
    histories = {}
    problems = [("double pendulum", None, TAU_MAX, "trajopt_double_pendulum")]
    for label, actuated, tau_max, stem in problems:
        res, traj = solve(model, T, actuated, tau_max, label, args.iterations)
        histories[label] = res.cost_history
        plot_trajectory(
            t,
            np.asarray(traj.q),
            np.asarray(traj.qd),
            np.asarray(traj.tau),
            tau_max,
            f"{label} swing-up (iLQR, |u| <= {tau_max} N m)",
            os.path.join(args.out, f"{stem}.png"),
            model.joint_names,
        )
        viewer.animate(
            model,
            traj.q,
            os.path.join(args.out, f"{stem}.gif"),
            fps=1.0 / DT / args.gif_stride,
            stride=args.gif_stride,
            trail="link2",
            dt=DT,
            title=f"{label} swing-up",
            view=(0.0, 0.0),
        )
        print(f"wrote {stem}.png, {stem}.gif")
        video(model, traj.q, os.path.join(args.out, f"{stem}.mp4"), camera=render.Camera(azimuth=90.0, elevation=0.0))
    plot_cost(histories, os.path.join(args.out, "trajopt_double_pendulum_cost.png"))
    print(f"wrote trajopt_double_pendulum_cost.png in {args.out}")


if __name__ == "__main__":
    main()
