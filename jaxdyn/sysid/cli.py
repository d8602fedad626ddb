"""Command line: ``jaxdyn identify``."""

from __future__ import annotations

import os
import sys

import jax.numpy as jnp
import numpy as np

from ..algorithms.regressor import inertial_parameters
from .data import SysIdData, check_model, load_data, split_holdout
from .estimators import ProgressBar, identify, predict_torques, torque_rmse
from .regressors import regressor_rows


def add_cli_arguments(p):
    """Arguments of ``jaxdyn identify`` (added to an ``argparse`` parser)."""
    p.add_argument("urdf", help="nominal URDF (fixed base, 1-dof joints)")
    p.add_argument("data", help="measurements: .npz or .csv (format: python -c 'import jaxdyn.sysid; help(jaxdyn.sysid)')")
    p.add_argument("--out", required=True, help="identified URDF to write (must differ from the input)")
    p.add_argument("--method", choices=("ls", "gradient", "both"), default="both",
                   help="least squares on base parameters, physically consistent gradient fit, or both (default)")
    p.add_argument("--holdout", type=float, default=0.2, help="fraction of samples (the last ones) held out (default 0.2)")
    p.add_argument("--plots", default=None, help="directory for PNG plots of predicted vs measured torques")
    p.add_argument("--steps", type=int, default=500, help="gradient-fit iterations (default 500)")
    p.add_argument("--reg", type=float, default=1e-6, help="weight of the divergence to the nominal model (default 1e-6)")
    p.add_argument("--friction", action="store_true", help="also identify viscous and Coulomb joint friction")
    p.add_argument("--dt", type=float, default=None, help="sample period [s] when the data has no time stamps")
    p.add_argument("--window", type=int, default=31, help="Savitzky-Golay window (samples) for missing qd/qdd")


def run_cli(args) -> int:
    """``jaxdyn identify``: returns the exit status (0 ok, 2 bad input, 3 no consistent result)."""
    from .._x64 import x64_context

    if os.path.exists(args.urdf) and os.path.realpath(args.out) == os.path.realpath(args.urdf):
        print(f"jaxdyn identify: --out {args.out} is the input URDF; choose another path", file=sys.stderr)
        return 2
    with x64_context(True):
        try:
            return _run_cli(args)
        except ValueError as e:  # URDFError is a ValueError
            print(f"jaxdyn identify: error: {e}", file=sys.stderr)
            return 2


def _run_cli(args) -> int:
    from ..io.urdf import load_urdf
    from ..io.urdf_write import write_urdf

    model = load_urdf(args.urdf, dtype=jnp.float64)
    check_model(model, "jaxdyn identify")
    data = load_data(args.data, model, dt=args.dt, window=args.window)
    train, test = split_holdout(data, args.holdout)
    if len(test) == 0:
        test = train
    print(f"model '{model.name}': {model.nv} joints, {model.nb} bodies; data: {len(data)} samples"
          f"{' (' + '/'.join(data.estimated) + ' estimated by Savitzky-Golay)' if data.estimated else ''}; "
          f"{len(train)} for fitting, {len(test)} held out")
    results = identify(model, train, args.method, friction=args.friction, steps=args.steps, reg=args.reg,
                       progress=ProgressBar("gradient fit", stream=sys.stderr))
    first = next(iter(results.values()))
    print(f"base parameters: {first.base.shape[0]} of {10 * model.nb}")
    if "ls" in results:
        i = results["ls"].info
        print(f"least squares: rank {i['rank']}/{i['n_base'] + (2 * model.nv if args.friction else 0)}, "
              f"condition number {i['cond']:.3g}, residual std {i['sigma']:.4g}")

    rows = regressor_rows(model, test)
    pi0 = np.asarray(inertial_parameters(model), np.float64)
    fr0 = dict(damping=np.asarray(model.damping), coulomb=np.asarray(model.friction)) if args.friction else {}
    preds = {"nominal": predict_torques(pi0, test, model, rows=rows, **fr0)}
    for k, r in results.items():
        preds[k] = predict_torques(r.parameters, test, model, damping=r.damping, coulomb=r.coulomb, rows=rows)
    rmse = {k: torque_rmse(v, test) for k, v in preds.items()}
    w = max(10, max(len(j) for j in model.joint_names) + 2)
    print(f"\nheld-out torque RMSE [N m or N]:\n{'joint':<{w}}" + "".join(f"{k:>14}" for k in rmse))
    for j, name in enumerate(model.joint_names):
        print(f"{name:<{w}}" + "".join(f"{v[j]:>14.5g}" for v in rmse.values()))
    print(f"{'all':<{w}}" + "".join(f"{np.sqrt(np.mean(v ** 2)):>14.5g}" for v in rmse.values()))

    final = results.get("gradient", results.get("ls"))
    print(f"\nphysical consistency ({final.method}):")
    for c in final.consistency:
        print(f"  {c.body:<{w}} m={c.mass:<10.4g} min eig(J)={c.min_eig_J:<11.3e} "
              f"{'ok' if c.consistent else 'NOT CONSISTENT'}")
    if not final.consistent:
        bad = [c.body for c in final.consistency if not c.consistent]
        print(f"jaxdyn identify: the {final.method} estimate is not physically consistent for {', '.join(bad)}; "
              "no URDF written (use --method gradient or both)", file=sys.stderr)
        return 3
    write_urdf(args.urdf, final.model, args.out, dynamics=args.friction)
    back = np.asarray(inertial_parameters(load_urdf(args.out, dtype=jnp.float64)))
    print(f"wrote {args.out} ({final.method}); re-loaded parameters differ by at most "
          f"{np.max(np.abs(back - final.parameters)):.2e}")
    if args.plots:
        paths = plot_torques(test, preds, args.plots)
        print(f"plots: {', '.join(paths)}")
    return 0


def plot_torques(data: SysIdData, predictions: dict, directory) -> list:
    """One PNG per joint in ``directory``: measured torques and each of ``predictions``
    (``{label: (T, n)}``) against time. Returns the paths. Draws on a ``Figure`` (Agg canvas), so
    the user's matplotlib backend is left alone."""
    from matplotlib.figure import Figure

    os.makedirs(directory, exist_ok=True)
    t = data.t if data.t is not None else np.arange(len(data))
    paths = []
    for j, name in enumerate(data.joint_names):
        fig = Figure(figsize=(8, 3.2), tight_layout=True)
        ax = fig.add_subplot()
        ax.plot(t, data.tau[:, j], color="0.6", lw=2.0, label="measured")
        for k, v in predictions.items():
            e = np.sqrt(np.mean((v[:, j] - data.tau[:, j]) ** 2))
            ax.plot(t, v[:, j], lw=1.0, ls="--" if k == "nominal" else "-", label=f"{k} (RMSE {e:.3g})")
        ax.set_xlabel("t [s]" if data.t is not None else "sample")
        ax.set_ylabel("torque")
        ax.set_title(f"{name}: predicted vs measured (held out)")
        ax.legend(fontsize=8, loc="upper right")
        path = os.path.join(directory, f"torque_{name}.png")
        fig.savefig(path, dpi=90)
        paths.append(path)
    return paths

