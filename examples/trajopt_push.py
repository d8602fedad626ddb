"""Trajectory optimisation through compliant contact: an arm pushes a box across the ground.

A two-link arm (0.25 m links, hinges about the vertical, so gravity loads no joint) carries a
2 cm fingertip sphere that touches the side of a 0.5 kg box (10 cm cube, a free body) standing
on the ground. Only the fingertip, the box and the ground collide (``jaxdyn.contact``:
Hunt-Crossley normal force and regularised friction, mu 1 for both contacts, MuJoCo's
default). ``jaxdyn.trajopt.ilqr`` finds the shoulder and elbow torques (at most 5 N m) that
slide the box 10 cm forward in 1 s and leave it at rest there. The box is moved by nothing but the fingertip's contact force, so every useful gradient comes through the
differentiable contact: the Jacobians of each step are ``jax.jacfwd`` through
``jaxdyn.sim.step``'s implicit-Euler contact step (``model_dynamics(..., contact=...)``, the
contact position taken at the end of the step, which keeps the box's four ground corners
stable at 20 ms steps).

The script solves the problem, rolls the torques out again with the tip's contact and without
it (the box then stays where it is), prints the cost, iterations, times and where the box ends,
and plots the box's and the fingertip's paths and the torques to
``examples/output/trajopt/trajopt_push.png``.

Run: ``python examples/trajopt_push.py [--out DIR]`` (a few minutes on 2 CPU cores, mostly
compilation).
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
from jaxdyn import contact, sim, trajopt  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "output", "trajopt")
PUSH = """<mujoco><worldbody>
<body name="upper" pos="0 0 0.05"><joint name="shoulder" type="hinge" axis="0 0 1"/>
<geom type="capsule" fromto="0 0 0 0.25 0 0" size="0.015" mass="1" contype="0" conaffinity="0"/>
<body name="fore" pos="0.25 0 0"><joint name="elbow" type="hinge" axis="0 0 1"/>
<geom type="capsule" fromto="0 0 0 0.25 0 0" size="0.015" mass="0.5" contype="0" conaffinity="0"/>
<geom name="tip" type="sphere" pos="0.25 0 0" size="0.02" mass="0.05"/></body></body>
<body name="box" pos="0.45 0 0.05"><freejoint/><geom type="box" size="0.05 0.05 0.05" mass="0.5"/></body>
</worldbody></mujoco>"""
DT, T = 0.02, 50
PUSH_BY = 0.1  # [m] along x
UMAX = 5.0  # [N m]
MU = 1.0  # the geoms' sliding friction, MuJoCo's default (the ground's own is 0: the box's acts)
BOX_X, BOX_Z = 0.45, 0.04989  # the box's centre at rest on the ground (0.11 mm into it)


def scene(pairs: bool = True):
    """The model and its step: implicit Euler with contact, the shoulder and elbow actuated;
    ``pairs=False`` takes the fingertip-box contact away (the box keeps the ground)."""
    model = jaxdyn.load_mjcf(PUSH, dtype=jnp.float64)
    touch = contact.Contact(contact.Ground(), contact.ContactParams(), collide_pairs=pairs)
    options = sim.SimOptions(contact_position="implicit")
    dyn = trajopt.model_dynamics(
        model, DT, "implicit_euler", contact=touch, actuated=["shoulder", "elbow"], options=options
    )
    return model, dyn


def start(model):
    """The arm folded so that its tip sits 1 mm into the box's near face (at x = 0.40), both at
    rest: a contact from the first knot, so that the torques' effect on the box has a gradient."""
    elbow = 2.0 * np.arccos(0.381 / 0.5)
    q = jnp.array([-elbow / 2, elbow, BOX_X, 0.0, BOX_Z, 1.0, 0.0, 0.0, 0.0])
    return jnp.concatenate([q, jnp.zeros(model.nv)])


def problem(model, dyn, x0):
    """The cost: the box's position (x target 10 cm ahead, y and height kept) and orientation,
    in the tangent space, running and (1000x) terminal; small velocity and torque terms; the
    arm's configuration free."""
    goal = jnp.concatenate([x0[: model.nq].at[2].add(PUSH_BY), jnp.zeros(model.nv)])
    w = jnp.array([0.0, 0.0, 1.0, 1.0, 0.1, 0.1, 0.1, 0.1])  # arm (2), box x y z, box rotation
    Q = jnp.concatenate([w, jnp.full(model.nv, 1e-3)])
    Qf = jnp.concatenate([1e3 * w, jnp.ones(model.nv)])
    return trajopt.quadratic_cost(goal, DT * Q, DT * 1e-2, Qf=Qf, nu=2, space=dyn)


def run(out=None):
    """Solve, roll out with and without the tip's contact, and (with ``out``) plot; returns the
    numbers the script prints."""
    model, dyn = scene()
    _, apart = scene(pairs=False)
    x0 = start(model)
    cost = problem(model, dyn, x0)
    opt = trajopt.ILQROptions(max_iterations=100, tolerance=1e-6)
    solve = jax.jit(lambda x0: trajopt.ilqr(dyn, cost, x0, jnp.zeros((T, 2)), -UMAX, UMAX, options=opt))
    t = time.perf_counter()
    res = jax.block_until_ready(solve(x0))
    t_first = time.perf_counter() - t
    t = time.perf_counter()
    res = jax.block_until_ready(solve(x0))
    t_solve = time.perf_counter() - t
    xs = np.asarray(jax.jit(lambda us: trajopt.simulate(dyn, x0, us))(res.u))
    xs_apart = np.asarray(jax.jit(lambda us: trajopt.simulate(apart, x0, us))(res.u))

    def tip_point(x):  # the fingertip's centre, 0.25 m along the forearm
        M = jaxdyn.frame_placement(model, x[: model.nq], "fore")
        return M.p + M.R @ jnp.array([0.25, 0.0, 0.0])

    tip = np.asarray(jax.vmap(tip_point)(jnp.asarray(xs)))
    nq = model.nq
    # where the box slides free (the tip 5 mm or more behind its face, the box faster than 5 cm/s)
    # only the ground's friction acts on it: its deceleration is mu g
    v = xs[:, nq + 2]
    free = ((xs[:-1, 2] - 0.05) - (tip[:-1, 0] + 0.02) > 5e-3) & (v[:-1] > 0.05) & (v[1:] > 0.05)
    r = {
        "res": res,
        "xs": xs,
        "tip": tip,
        "t_first": t_first,
        "t_solve": t_solve,
        "box_end": xs[-1, 2:5],
        "box_quat": xs[-1, 5:9],
        "box_speed": float(np.linalg.norm(xs[-1, nq + 2 : nq + 5])),
        "box_moved_apart": float(xs_apart[-1, 2] - BOX_X),
        "free_knots": int(free.sum()),
        "slide_deceleration": float(-np.mean(np.diff(v)[free]) / DT) if free.any() else float("nan"),
    }
    if out is not None:
        r["figure"] = _plot(out, xs, tip, np.asarray(res.u))
    return r


def _plot(out, xs, tip, us):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    ts = DT * np.arange(T + 1)
    fig = Figure(figsize=(9, 3.5), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 2, 1)
    ax.plot(ts, xs[:, 2] - 0.05, label="box's near face x")
    ax.plot(ts, tip[:, 0] + 0.02, "--", label="fingertip's front x")
    ax.axhline(BOX_X - 0.05 + PUSH_BY, color="0.6", lw=0.8)
    ax.set_xlabel("t [s]")
    ax.set_ylabel("x [m]")
    ax.legend()
    ax = fig.add_subplot(1, 2, 2)
    ax.plot(ts[:-1], us[:, 0], label="shoulder")
    ax.plot(ts[:-1], us[:, 1], label="elbow")
    ax.set_xlabel("t [s]")
    ax.set_ylabel("torque [N m]")
    ax.legend()
    fig.tight_layout()
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, "trajopt_push.png")
    fig.savefig(path)
    return path


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=OUT)
    ap.add_argument("--quick", action="store_true", help="accepted for the examples' tests; the run is already short")
    args = ap.parse_args()
    r = run(args.out)
    res = r["res"]
    print(
        f"ilqr through the contact step: cost {float(res.cost_history[0]):.4g} -> {float(res.cost):.4g}, "
        f"{int(res.iterations)} iterations, {trajopt.STATUS[int(res.status)]}; "
        f"solve {1e3 * r['t_solve']:.0f} ms ({1e3 * r['t_solve'] / max(int(res.iterations), 1):.1f} ms per "
        f"iteration), first call (compile) {r['t_first']:.0f} s"
    )
    x, y, z = r["box_end"]
    print(
        f"box moved {x - BOX_X:.4f} m (target {PUSH_BY}), sideways {y:.4f} m, final speed {r['box_speed']:.4f} m/s; "
        f"largest torque {float(jnp.max(jnp.abs(res.u))):.2f} N m (limit {UMAX})"
    )
    print(f"the same torques without the fingertip's contact move the box {r['box_moved_apart']:.5f} m")
    print(
        f"sliding free ({r['free_knots']} knots) the box decelerates at {r['slide_deceleration']:.3f} m/s^2 "
        f"(mu g = {MU * 9.81:.3f})"
    )
    print(f"wrote {r['figure']}")


if __name__ == "__main__":
    main()
