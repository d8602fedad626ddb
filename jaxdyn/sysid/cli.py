"""Command lines: ``jaxdyn identify`` and ``jaxdyn excite``."""

from __future__ import annotations

import os
import sys

import jax.numpy as jnp
import numpy as np

from .._argtypes import count, fraction, positive
from .._files import OutputExists, refuse_existing, replace_atomically
from ..algorithms.regressor import inertial_parameters
from .data import SysIdData, check_model, load_data, split_holdout
from .estimators import ProgressBar, friction_prior, identify, mass_bounds_array, predict_torques, torque_rmse
from .friction import KINDS, friction_model
from .regressors import regressor_rows


def add_cli_arguments(p):
    """Arguments of ``jaxdyn identify`` (added to an ``argparse`` parser)."""
    p.add_argument("urdf", help="nominal URDF (fixed base, 1-dof joints)")
    p.add_argument(
        "data", help="measurements: .npz or .csv (format: python -c 'import jaxdyn.sysid; help(jaxdyn.sysid)')"
    )
    p.add_argument("--out", required=True, help="identified URDF to write (must differ from the input)")
    p.add_argument("--force", action="store_true", help="replace --out and the --plots files if they exist")
    p.add_argument(
        "--method",
        choices=("ls", "wls", "gradient", "both"),
        default="both",
        help="least squares on base parameters (weighted unless --unweighted), physically consistent "
        "gradient fit, or both (default)",
    )
    p.add_argument(
        "--unweighted",
        action="store_true",
        help="ordinary least squares (default: weighted, per-joint weights 1/sigma_j from an OLS pass)",
    )
    p.add_argument(
        "--holdout", type=fraction, default=0.2, help="fraction of samples (the last ones) held out (default 0.2)"
    )
    p.add_argument(
        "--test",
        default=None,
        metavar="FILE",
        help="a separate held-out recording (same format; filtered like the training data); replaces --holdout",
    )
    p.add_argument("--plots", default=None, help="directory for PNG plots of predicted vs measured torques")
    p.add_argument(
        "--video", default=None, help="MP4 or GIF of the robot following the measured motion (jaxdyn[render])"
    )
    p.add_argument("--steps", type=count(0), default=500, help="gradient-fit iterations (default 500)")
    p.add_argument(
        "--reg",
        type=float,
        default=None,
        help="weight of the divergence to the nominal model relative to the normalised torque MSE "
        "(default 1e-6 with --unweighted; otherwise --prior-weight applies)",
    )
    p.add_argument(
        "--prior-weight",
        type=float,
        default=None,
        help="weight of the divergence to the nominal model in units of the noise-weighted residuals "
        "(default 1 with weighted least squares)",
    )
    p.add_argument(
        "--friction",
        nargs="?",
        const="coulomb",
        default=None,
        choices=KINDS,
        help="also identify joint friction: viscous, coulomb (viscous + Coulomb; the default when the "
        "flag has no value) or stribeck (+ exponential Stribeck term)",
    )
    p.add_argument("--offset", action="store_true", help="with --friction: also a constant torque offset per joint")
    p.add_argument("--stribeck-velocity", type=positive, default=0.1, help="Stribeck velocity v_s (default 0.1)")
    p.add_argument(
        "--smooth-velocity",
        type=float,
        default=None,
        help="replace sign(qd) by tanh(qd/eps) with this eps (default: v_s/10 for stribeck, else exact sign)",
    )
    p.add_argument(
        "--total-mass", type=float, default=None, help="known total mass of the bodies [kg] (consistent fit)"
    )
    p.add_argument("--total-mass-tol", type=float, default=None, help="its tolerance [kg] (default 1%% of it)")
    p.add_argument(
        "--mass-bounds",
        action="append",
        default=[],
        metavar="BODY=LO:HI",
        help="mass bounds of one body [kg] for the consistent fit (LO or HI may be empty); repeatable",
    )
    p.add_argument(
        "--mass-range",
        default=None,
        metavar="LO:HI",
        help="bounds for the bodies without --mass-bounds, as factors of their nominal masses (e.g. 0.5:1.5)",
    )
    p.add_argument(
        "--rel-std-threshold",
        type=float,
        default=10.0,
        help="relative standard deviation [%%] above which a parameter is reported as poorly excited (default 10)",
    )
    g = p.add_argument_group("signal processing (when the data have no qd/qdd)")
    g.add_argument("--dt", type=positive, default=None, help="sample period [s] when the data has no time stamps")
    g.add_argument(
        "--filter",
        choices=("butterworth", "savgol"),
        default=None,
        help="butterworth (default: zero-phase, central differences, parallel filtering, decimation) "
        "or savgol (the default when only --window is given)",
    )
    g.add_argument(
        "--cutoff", type=positive, default=None, help="Butterworth cut-off [Hz] (default: factor x bandwidth)"
    )
    g.add_argument("--cutoff-factor", type=positive, default=5.0, help="cut-off / excitation bandwidth (default 5)")
    g.add_argument(
        "--bandwidth",
        type=positive,
        default=None,
        help="excitation bandwidth [Hz], e.g. the highest harmonic of a Fourier excitation "
        "(default: estimated from the spectrum of q)",
    )
    g.add_argument("--filter-order", type=count(1), default=4, help="Butterworth order (default 4)")
    g.add_argument(
        "--decimate",
        type=count(1),
        default=None,
        help="keep one sample in this many (default floor(0.4 rate / cut-off); savgol: 1)",
    )
    g.add_argument(
        "--edge",
        type=count(0),
        default=None,
        help="samples dropped at each end (default: the filter's impulse-response length; savgol: window/2)",
    )
    g.add_argument("--no-filter-tau", action="store_true", help="do not filter tau (no parallel filtering)")
    g.add_argument("--window", type=count(1), default=None, help="Savitzky-Golay window (samples; default 31)")
    g.add_argument("--polyorder", type=count(0), default=3, help="Savitzky-Golay degree (default 3)")


def _parse_mass_bounds(model, specs, rel):
    """``{body: (lo, hi)}`` from ``BODY=LO:HI`` strings and a relative ``LO:HI`` for the rest."""
    out = {}
    if rel is not None:
        try:
            flo, fhi = (float(v) for v in rel.split(":"))
        except ValueError:
            raise ValueError(f"--mass-range: expected LO:HI factors (e.g. 0.5:1.5), got {rel!r}") from None
        m0 = np.asarray(model.mass, np.float64)
        out = {b: (flo * m0[i], fhi * m0[i]) for i, b in enumerate(model.body_names)}
    for spec in specs:
        name, sep, rng = spec.partition("=")
        lo, sep2, hi = rng.partition(":")
        if not sep or not sep2:
            raise ValueError(f"--mass-bounds: expected BODY=LO:HI, got {spec!r}")
        try:
            out[name.strip()] = (float(lo) if lo.strip() else None, float(hi) if hi.strip() else None)
        except ValueError:
            raise ValueError(f"--mass-bounds: LO and HI must be numbers, got {spec!r}") from None
    return out or None


def _in_float64(command, run, args) -> int:
    """``run(args)`` in float64; bad input (``ValueError``, ``LoadError`` included) and an
    existing output without ``--force`` are printed and give exit status 2."""
    from .._x64 import x64_context

    with x64_context(True):
        try:
            return run(args)
        except ValueError as e:
            print(f"{command}: error: {e}", file=sys.stderr)
            return 2
        except OutputExists as e:
            print(f"{command}: error: {e}", file=sys.stderr)
            return 2


def run_cli(args) -> int:
    """``jaxdyn identify``: returns the exit status (0 ok, 2 bad input, 3 no consistent result)."""
    if os.path.exists(args.urdf) and os.path.realpath(args.out) == os.path.realpath(args.urdf):
        print(f"jaxdyn identify: --out {args.out} is the input URDF; choose another path", file=sys.stderr)
        return 2
    try:
        refuse_existing([args.out, args.video], args.force)
        _check_video(args.video, "jaxdyn identify")
    except (OutputExists, ValueError) as e:
        print(f"jaxdyn identify: error: {e}", file=sys.stderr)
        return 2
    return _in_float64("jaxdyn identify", _run_cli, args)


def _check_video(path, what):
    if path is not None:
        from ..render import check_video_output

        check_video_output(path, f"--video {path}")


def _video(model, q, path, source, dt=None):
    """The robot following ``q (T, n)`` (samples ``dt`` apart, or one per frame at 30 fps)."""
    from ..render import render_video

    n = render_video(model, q, path, dt=dt, fps=30.0, source=source, width=480, height=360)
    print(f"wrote {path} ({n} frames)")


def _run_cli(args) -> int:
    from ..io.urdf import load_urdf
    from ..io.urdf_write import write_urdf

    model = load_urdf(args.urdf, dtype=jnp.float64)
    check_model(model, "jaxdyn identify")
    fm = None
    if args.friction is not None:
        fm = friction_model(
            args.friction,
            offset=args.offset,
            stribeck_velocity=args.stribeck_velocity,
            smooth_velocity=args.smooth_velocity,
        )
    elif args.offset:
        raise ValueError("--offset needs --friction")
    bounds = _parse_mass_bounds(model, args.mass_bounds, args.mass_range)
    mb = mass_bounds_array(model, bounds)
    fkw = dict(
        dt=args.dt,
        filter=args.filter,
        window=args.window,
        polyorder=args.polyorder,
        cutoff=args.cutoff,
        cutoff_factor=args.cutoff_factor,
        bandwidth=args.bandwidth,
        filter_order=args.filter_order,
        decimation=args.decimate,
        edge=args.edge,
        filter_tau=not args.no_filter_tau,
    )
    data = load_data(args.data, model, **fkw)
    if args.plots:  # before the identification: an existing plot is refused without --force
        plots = [os.path.join(args.plots, f"torque_{name}.png") for name in data.joint_names]
        refuse_existing(plots, args.force)
    if args.test:
        pre = data.preprocessing
        if pre is not None:  # the held-out recording goes through the same filter
            fkw.update(
                filter=pre.method,
                window=pre.window or args.window,
                cutoff=pre.cutoff,
                decimation=pre.decimation,
                edge=pre.edge,
            )
        train, test = data, load_data(args.test, model, **fkw)
    else:
        train, test = split_holdout(data, args.holdout)
        if len(test) == 0:
            test = train
    print(
        f"model '{model.name}': {model.nv} joints, {model.nb} bodies; data: {len(data)} samples"
        f"{' (' + '/'.join(data.estimated) + ' estimated)' if data.estimated else ''}; "
        f"{len(train)} for fitting, {len(test)} held out{' (' + args.test + ')' if args.test else ''}"
    )
    if data.preprocessing is not None:
        pre = data.preprocessing
        print(f"signal processing: {pre.describe()}")
        if pre.method == "butterworth":
            print(
                f"  filter: {pre.method}, order {pre.order}, cut-off {pre.cutoff:.6g} Hz"
                + (f", bandwidth {pre.bandwidth:.6g} Hz, factor {pre.cutoff_factor:g}" if pre.bandwidth else "")
                + f", decimation {pre.decimation}, edge {pre.edge} samples, rate {pre.rate:.6g} Hz"
            )
        else:
            print(
                f"  filter: {pre.method}, window {pre.window}, degree {pre.polyorder}, decimation {pre.decimation}, "
                f"edge {pre.edge} samples, rate {pre.rate:.6g} Hz"
            )
    if fm is not None:
        print(f"friction model: {fm.describe()}")
    weighted = not args.unweighted
    gkw = dict(steps=args.steps, mass_bounds=bounds, total_mass=args.total_mass, total_mass_tol=args.total_mass_tol)
    if args.reg is not None:
        gkw["reg"] = args.reg
    elif args.prior_weight is not None:
        gkw["prior_weight"] = args.prior_weight
    elif not weighted:
        gkw["reg"] = 1e-6
    results = identify(
        model,
        train,
        args.method,
        friction=fm,
        weighted=weighted,
        threshold=args.rel_std_threshold,
        progress=ProgressBar("gradient fit", stream=sys.stderr),
        **gkw,
    )
    first = next(iter(results.values()))
    print(f"base parameters: {first.base.shape[0]} of {10 * model.nb}")
    ls = results.get("wls", results.get("ls"))
    if ls is not None:
        i = ls.info
        nf = fm.n_columns(model.nv) if fm is not None else 0
        kind = "weighted least squares" if ls.method == "wls" else "least squares"
        print(
            f"{kind}: rank {i['rank']}/{i['n_base'] + nf}, condition number {i['cond']:.3g}, "
            f"residual std {i['sigma']:.4g}" + (" (weighted units)" if ls.method == "wls" else "")
        )
        print(
            "  per-joint residual std [N m or N]: "
            + ", ".join(f"{n} {s:.3g}" for n, s in zip(model.joint_names, i["sigma_joint"]))
        )
        if ls.method == "wls":
            print("  weights 1/sigma_j from the OLS pass: " + ", ".join(f"{v:.4g}" for v in i["weights"]))
        u = ls.uncertainty
        print(
            f"\nparameter uncertainty ({kind}; cov = sigma^2 (W^T W)^-1; named base parameters: "
            "standard parameter (+k regrouped)):"
        )
        print(u.table())
        print(
            f"condition number of the base regressor: {u.cond:.4g}; poorly excited (relative std > "
            f"{u.threshold:g}%): {len(u.poorly_excited)} of {len(u.names)}"
            + (": " + ", ".join(u.poorly_excited) if u.poorly_excited else "")
        )
        print(
            "\nwhat the data determine (share of the prior variance removed by the data; linear model, prior "
            "std 30% of nominal, masses with bounds: a quarter of the interval):"
        )
        print(i["data_share"].table())

    rows = regressor_rows(model, test)
    pi0 = np.asarray(inertial_parameters(model), np.float64)
    fr0 = {"friction": (fm, friction_prior(model, fm))} if fm is not None else {}
    preds = {"nominal": predict_torques(pi0, test, model, rows=rows, **fr0)}
    for k, r in results.items():
        preds[k] = predict_torques(r.parameters, test, model, friction=r if fm is not None else None, rows=rows)
    rmse = {k: torque_rmse(v, test) for k, v in preds.items()}
    w = max(10, max(len(j) for j in model.joint_names) + 2)
    print(f"\nheld-out torque RMSE [N m or N]:\n{'joint':<{w}}" + "".join(f"{k:>14}" for k in rmse))
    for j, name in enumerate(model.joint_names):
        print(f"{name:<{w}}" + "".join(f"{v[j]:>14.5g}" for v in rmse.values()))
    print(f"{'all':<{w}}" + "".join(f"{np.sqrt(np.mean(v**2)):>14.5g}" for v in rmse.values()))

    final = results.get("gradient", ls)
    assert final is not None  # a least-squares or gradient result
    if fm is not None:
        print(f"\nfriction ({final.method}):\n{'joint':<{w}}" + "".join(f"{t:>12}" for t in fm.terms))
        fr = final.friction
        for j, name in enumerate(model.joint_names):
            print(f"{name:<{w}}" + "".join(f"{fr[t][j]:>12.5g}" for t in fm.terms))
    print(f"\nphysical consistency and masses ({final.method}):")
    for b, c in enumerate(final.consistency):
        lo, hi = mb[b]
        bd = f"[{lo:.4g}, {hi:.4g}]" if (lo > 0 or np.isfinite(hi)) else "unbounded"
        inside = lo <= c.mass <= hi
        print(
            f"  {c.body:<{w}} m={c.mass:<10.4g} bounds {bd:<20} {'' if inside else 'OUTSIDE BOUNDS '}"
            f"min eig(J)={c.min_eig_J:<11.3e} {'ok' if c.consistent else 'NOT CONSISTENT'}"
        )
    tm = f"total mass {final.masses.sum():.5g} kg"
    if args.total_mass is not None:
        tm += f" (given {args.total_mass:g} kg)"
    print("  " + tm)
    if not final.consistent:
        bad = [c.body for c in final.consistency if not c.consistent]
        print(
            f"jaxdyn identify: the {final.method} estimate is not physically consistent for {', '.join(bad)}; "
            "no URDF written (use --method gradient or both)",
            file=sys.stderr,
        )
        return 3
    write_urdf(args.urdf, final.model, args.out, dynamics=fm is not None)
    back = np.asarray(inertial_parameters(load_urdf(args.out, dtype=jnp.float64)))
    print(
        f"wrote {args.out} ({final.method}); re-loaded parameters differ by at most "
        f"{np.max(np.abs(back - final.parameters)):.2e}"
    )
    if args.plots:
        paths = plot_torques(test, preds, args.plots)
        print(f"plots: {', '.join(paths)}")
    if args.video is not None:
        dt = None if data.t is None or len(data.t) < 2 else float(np.median(np.diff(data.t)))
        _video(model, data.q, args.video, args.urdf, dt=dt)
    return 0


# ------------------------------------------------------------------------------------------
# command line: ``jaxdyn excite``
# ------------------------------------------------------------------------------------------


def add_excite_arguments(p):
    """Arguments of ``jaxdyn excite`` (added to an ``argparse`` parser)."""
    p.add_argument("robot", metavar="ROBOT_OR_URDF", help="a shipped robot name or a URDF file (fixed base)")
    p.add_argument("--out", required=True, help="CSV to write: t, q, qd, qdd per joint")
    p.add_argument("--force", action="store_true", help="replace --out and --plot if they exist")
    p.add_argument("--plot", default=None, help="PNG of the trajectory against its limits (default: next to --out)")
    p.add_argument("--video", default=None, help="MP4 or GIF of the robot following the trajectory (jaxdyn[render])")
    p.add_argument("--harmonics", type=count(1), default=5, help="Fourier harmonics per joint (default 5)")
    p.add_argument("--base-frequency", type=positive, default=0.1, help="fundamental frequency [Hz] (default 0.1)")
    p.add_argument("--samples", type=count(1), default=100, help="instants per period in the criterion (default 100)")
    p.add_argument("--steps", type=count(0), default=300, help="Adam iterations (default 300)")
    p.add_argument("--learning-rate", type=positive, default=0.05, help="Adam step size (default 0.05)")
    p.add_argument(
        "--criterion",
        choices=("cond", "logdet"),
        default="cond",
        help="minimise the condition number (default) or maximise log det of the base regressor",
    )
    p.add_argument(
        "--acc-limit",
        type=positive,
        nargs="+",
        default=[10.0],
        help="joint acceleration limits (one value, or one per joint; default 10)",
    )
    p.add_argument(
        "--vel-limit", type=positive, nargs="+", default=None, help="joint velocity limits (default: the URDF's)"
    )
    p.add_argument("--margin", type=fraction, default=0.05, help="fraction kept clear of every limit (default 0.05)")
    p.add_argument("--friction", action="store_true", help="include viscous and Coulomb columns in the criterion")
    p.add_argument("--rate", type=positive, default=1000.0, help="CSV sample rate [Hz] (default 1000)")
    p.add_argument("--periods", type=positive, default=1.0, help="periods written to the CSV (default 1)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random start (default 0)")


def run_excite_cli(args) -> int:
    """``jaxdyn excite``: returns the exit status (0 ok, 2 bad input or an existing output
    without ``--force``)."""
    try:
        refuse_existing([args.out, _excite_plot(args), args.video], args.force)
        _check_video(args.video, "jaxdyn excite")
    except (OutputExists, ValueError) as e:
        print(f"jaxdyn excite: error: {e}", file=sys.stderr)
        return 2
    return _in_float64("jaxdyn excite", _run_excite, args)


def _excite_plot(args):
    return args.plot or os.path.splitext(args.out)[0] + ".png"


def _run_excite(args) -> int:
    from .. import robots
    from ..io.urdf import load_urdf
    from .excitation import optimize_excitation, plot_excitation, write_trajectory_csv

    if args.robot in robots.available_robots():
        model = robots.load_robot(args.robot, floating_base=False, dtype=jnp.float64)
    elif os.path.isfile(args.robot):
        model = load_urdf(args.robot, dtype=jnp.float64)
    else:
        raise ValueError(
            f"'{args.robot}' is neither a shipped robot ({', '.join(robots.available_robots())}) nor a URDF file"
        )
    check_model(model, "jaxdyn excite")
    n = model.nv
    acc = args.acc_limit[0] if len(args.acc_limit) == 1 else args.acc_limit
    vel = None if args.vel_limit is None else (args.vel_limit[0] if len(args.vel_limit) == 1 else args.vel_limit)
    for name, v in (("--acc-limit", acc), ("--vel-limit", vel)):
        if v is not None and np.ndim(v) and len(v) != n:
            raise ValueError(f"{name}: give one value or {n} (one per joint of '{model.name}'), got {len(v)}")
    print(
        f"model '{model.name}': {n} joints; {args.harmonics} harmonics of {args.base_frequency:g} Hz "
        f"(period {1 / args.base_frequency:g} s); criterion {args.criterion} over {args.samples} instants"
    )
    res = optimize_excitation(
        model,
        n_harmonics=args.harmonics,
        base_frequency=args.base_frequency,
        n_samples=args.samples,
        steps=args.steps,
        learning_rate=args.learning_rate,
        criterion=args.criterion,
        acceleration_limit=acc,
        velocity_limit=vel,
        margin=args.margin,
        friction=args.friction,
        seed=args.seed,
        progress=ProgressBar("excitation", stream=sys.stderr),
    )
    lim = res.limits
    print(
        f"condition number of the base regressor ({res.n_base} columns): random start {res.cond_initial:.4g} "
        f"-> optimised {res.cond_final:.4g}"
    )
    t, q, qd, qdd = res.trajectory.sample(args.rate, 1.0)
    w = max(10, max(len(j) for j in model.joint_names) + 2)
    print(
        f"{'joint':<{w}}{'q min':>9}{'q max':>9}{'lower':>9}{'upper':>9}{'|qd|max':>9}{'limit':>9}"
        f"{'|qdd|max':>10}{'limit':>9}"
    )
    for j, name in enumerate(model.joint_names):
        print(
            f"{name:<{w}}{q[:, j].min():>9.3f}{q[:, j].max():>9.3f}{lim.lower[j]:>9.3f}{lim.upper[j]:>9.3f}"
            f"{np.abs(qd[:, j]).max():>9.3f}{lim.velocity[j]:>9.3f}{np.abs(qdd[:, j]).max():>10.3f}"
            f"{lim.acceleration[j]:>9.3f}"
        )
    print("worst limit use (<= 0: respected): " + ", ".join(f"{k} {v:+.2e}" for k, v in res.violation.items()))
    path = write_trajectory_csv(args.out, res, rate=args.rate, periods=args.periods)
    plot = _excite_plot(args)
    plot_excitation(plot, res)
    print(f"wrote {path} ({len(t) * args.periods:.0f} rows at {args.rate:g} Hz) and {plot}")
    if args.video is not None:
        _, qv, _, _ = res.trajectory.sample(30.0, args.periods)
        _video(model, qv, args.video, None if args.robot in robots.available_robots() else args.robot)
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
        with replace_atomically(path) as tmp:
            fig.savefig(tmp, dpi=90)
        paths.append(path)
    return paths
