"""Trajectory optimisation through compliant contact: a leg pushing on the ground lifts its body.

A 2 kg torso rides on a vertical slide (unactuated); under it a 0.2 kg leg slides along the
same axis, driven by a knee force, its foot a 5 cm sphere standing on the ground
(``jaxdyn.contact``: Hunt-Crossley normal force, regularised friction). Nothing but the ground
can raise the centre of mass, so iLQR (``jaxdyn.trajopt.ilqr``) has to find the knee forces that
press the foot into the ground to lift the torso by 10 cm in 0.8 s and stop it there. The
Jacobians of each step come from ``jax.jacfwd`` through ``jaxdyn.sim.step``'s implicit-Euler
contact step (``model_dynamics(..., contact=...)``).

The script solves the problem, rolls the controls out again with ``jaxdyn.sim.step`` (with and
without the ground, to show which force does the lifting), prints the cost, iterations, the
final height and the ground force (from the momentum balance) at the start and the peak, and plots the heights and forces
to ``examples/output/trajopt/trajopt_contact_lift.png``.

Run: ``python examples/trajopt_contact_lift.py [--out DIR]`` (a few minutes on 2 CPU cores,
mostly compilation; ``--quick`` is the same run).
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
from jaxdyn import contact, trajopt  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "output", "trajopt")
LIFT = """<mujoco><worldbody>
<body name="torso" pos="0 0 0.45"><joint name="z" type="slide" axis="0 0 1"/>
<geom type="box" size="0.1 0.1 0.05" mass="2" contype="0" conaffinity="0"/>
<body name="leg"><joint name="knee" type="slide" axis="0 0 1"/>
<geom name="foot" type="sphere" size="0.05" pos="0 0 -0.4" mass="0.2"/></body></body>
</worldbody></mujoco>"""
DT, T = 0.02, 40
RISE = 0.1  # [m]
HOLD = -2.0 * 9.81  # the knee force that holds the torso up [N]


def com_height(x):
    """Centre of mass: torso at ``0.45 + z``, foot at ``0.05 + z + knee``."""
    return (2.0 * (0.45 + x[..., 0]) + 0.2 * (0.05 + x[..., 0] + x[..., 1])) / 2.2


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=OUT)
    ap.add_argument("--quick", action="store_true", help="accepted for the examples' tests; the run is already short")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)

    model = jaxdyn.load_mjcf(LIFT, dtype=jnp.float64)
    ground = contact.Contact(contact.Ground(), contact.ContactParams())
    dyn = trajopt.model_dynamics(model, DT, "implicit_euler", contact=ground, actuated=["knee"])
    free = trajopt.model_dynamics(model, DT, "implicit_euler", actuated=["knee"])

    # the stance: settled on the foot under the holding force
    x0 = jax.jit(lambda x: jax.lax.fori_loop(0, 100, lambda i, x: dyn(x, jnp.array([HOLD])), x))(jnp.zeros(4))
    goal = jnp.array([RISE, x0[1], 0.0, 0.0])
    cost = trajopt.quadratic_cost(
        goal, jnp.array([1.0, 0.0, 0.01, 0.01]), 1e-4, Qf=jnp.array([1e3, 0.0, 10.0, 10.0]), u_ref=jnp.array([HOLD])
    )
    # past a few iterations the stiff contact force leaves only creeping decreases: stop at 1e-5
    opt = trajopt.ILQROptions(max_iterations=60, tolerance=1e-5)
    solve = jax.jit(lambda x0: trajopt.ilqr(dyn, cost, x0, jnp.full((T, 1), HOLD), options=opt))
    t = time.perf_counter()
    res = jax.block_until_ready(solve(x0))
    t_first = time.perf_counter() - t
    t = time.perf_counter()
    res = jax.block_until_ready(solve(x0))
    t_solve = time.perf_counter() - t
    print(
        f"ilqr through the contact step: cost {float(res.cost_history[0]):.4g} -> {float(res.cost):.4g}, "
        f"{int(res.iterations)} iterations, {trajopt.STATUS[int(res.status)]}; "
        f"solve {1e3 * t_solve:.0f} ms ({1e3 * t_solve / max(int(res.iterations), 1):.1f} ms per iteration), "
        f"first call (compile) {t_first:.0f} s"
    )

    xs = np.asarray(jax.jit(lambda us: trajopt.simulate(dyn, x0, us))(res.u))
    xs_free = np.asarray(jax.jit(lambda us: trajopt.simulate(free, x0, us))(res.u))
    print(f"torso height change {xs[-1, 0]:.4f} m (target {RISE}), final speed {xs[-1, 2]:.4f} m/s")
    rise, drop = com_height(xs[-1]) - com_height(xs[0]), com_height(xs[0]) - com_height(xs_free[-1])
    print(f"centre of mass: rises {rise:.4f} m with the ground; the same controls without it drop it {drop:.2f} m")

    # the ground's force from the momentum balance of the whole system (its only other external
    # force is gravity): F = m_total (a_com + g), a_com from the knots' centre-of-mass velocities
    v_com = (2.0 * xs[:, 2] + 0.2 * (xs[:, 2] + xs[:, 3])) / 2.2
    fz = 2.2 * (np.diff(v_com) / DT + 9.81)
    print(f"ground force: {fz[0]:.2f} N in the first step (weight {2.2 * 9.81:.2f} N), {fz.max():.2f} N at its peak")

    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    ts = DT * np.arange(T + 1)
    fig = Figure(figsize=(9, 3.5), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 3, 1)
    ax.plot(ts, xs[:, 0], label="torso z")
    ax.plot(ts, com_height(xs) - com_height(xs[0]), label="centre of mass")
    ax.set_xlabel("t [s]")
    ax.set_ylabel("height change [m]")
    ax.legend()
    ax = fig.add_subplot(1, 3, 2)
    ax.plot(ts[:-1], np.asarray(res.u[:, 0]))
    ax.set_xlabel("t [s]")
    ax.set_ylabel("knee force [N]")
    ax = fig.add_subplot(1, 3, 3)
    ax.plot(ts[:-1], fz)
    ax.set_xlabel("t [s]")
    ax.set_ylabel("ground force on the foot [N]")
    fig.tight_layout()
    path = os.path.join(args.out, "trajopt_contact_lift.png")
    fig.savefig(path)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
