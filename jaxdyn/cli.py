"""Console entry point: ``jaxdyn demo``, ``jaxdyn bench`` (from a checkout), ``jaxdyn view``, ``jaxdyn identify`` and
``jaxdyn excite``."""

from __future__ import annotations

import argparse
import sys

from ._argtypes import Parser, count, positive
from ._files import OutputExists, refuse_existing
from ._x64 import x64_context  # noqa: F401  (also importable from here, as before)


def _demo(args) -> int:
    with x64_context(args.dtype == "float64"):
        return _demo_body(args)


def _demo_body(args) -> int:
    import jax
    import jax.numpy as jnp
    import numpy as np

    import jaxdyn

    dtype = jnp.float64 if args.dtype == "float64" else jnp.float32
    model = jaxdyn.load_robot(args.robot, dtype=dtype)
    B = args.batch
    print(
        f"jaxdyn {jaxdyn.__version__} on {jax.devices()[0].platform} ({jax.devices()[0].device_kind}), jax {jax.__version__}"
    )
    print(
        f"robot '{args.robot}': {model.nb} bodies, nq={model.nq}, nv={model.nv}, "
        f"floating base={model.floating_base}, joints: {', '.join(model.joint_names)}"
    )
    keys = jax.random.split(jax.random.PRNGKey(args.seed), 4)
    q = jax.vmap(lambda k: jaxdyn.random_configuration(model, k))(jax.random.split(keys[0], B))
    qd = jax.random.normal(keys[1], (B, model.nv), dtype)
    qdd = jax.random.normal(keys[2], (B, model.nv), dtype)

    rows: list[tuple] = []
    fns = {
        "rnea": (jax.vmap(jaxdyn.rnea, in_axes=(None, 0, 0, 0)), (model, q, qd, qdd)),
        "crba": (jax.vmap(jaxdyn.crba, in_axes=(None, 0)), (model, q)),
    }
    results = {}
    for name, (f, a) in fns.items():
        results[name] = _time(name, f, a, B, rows, args.repeats)
    tau = results["rnea"]
    f = jax.vmap(jaxdyn.aba, in_axes=(None, 0, 0, 0))
    results["aba"] = _time("aba", f, (model, q, qd, tau), B, rows, args.repeats)

    print(f"\nbatch of {B} random states, {args.dtype}:")
    print(f"{'algorithm':<10}{'compile [s]':>13}{'time/batch [ms]':>17}{'samples/s':>13}")
    for r in rows:
        print(f"{r[0]:<10}{r[1]:>13.2f}{r[2] * 1e3:>17.3f}{r[3]:>13.3g}")

    # checks: ABA inverts RNEA, M symmetric positive definite, energy balance identity
    err = float(jnp.max(jnp.abs(results["aba"] - qdd)) / jnp.maximum(1.0, jnp.max(jnp.abs(qdd))))
    M = np.asarray(results["crba"][: min(B, 64)], np.float64)
    sym = float(np.max(np.abs(M - np.swapaxes(M, 1, 2))) / np.max(np.abs(M)))
    pd = bool(np.all(np.linalg.eigvalsh(0.5 * (M + np.swapaxes(M, 1, 2)))[:, 0] > 0))
    tol = 1e-9 if dtype == jnp.float64 else 2e-3
    ok = err < tol and sym < tol and pd
    print("\nchecks:")
    print(f"  aba(rnea(qdd)) == qdd    max relative error {err:.2e}  (tolerance {tol:g})")
    print(f"  M symmetric              max relative asymmetry {sym:.2e}")
    print(f"  M positive definite      {pd}")
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


def _time(name, f, a, B, rows, repeats):
    from ._timing import measure

    out, compile_s, med = measure(f, a, repeats)
    rows.append((name, compile_s, med, B / med))
    return out


def _fail(message: str) -> int:
    """Bad input: one line on stderr, exit status 2."""
    print(message, file=sys.stderr)
    return 2


def _view(args) -> int:
    """``jaxdyn view``: draw a shipped robot, a URDF or an MJCF file at one configuration into a
    PNG (stick figure), or serve it in the browser (``--serve``, ``--rollout``)."""
    import os

    import jax
    import numpy as np

    import jaxdyn

    from . import viewer
    from .io.errors import LoadError

    fb = {"fixed": False, "floating": True}.get(args.base)
    source = None
    if args.robot in jaxdyn.available_robots():
        model = jaxdyn.load_robot(args.robot, floating_base=fb)
    elif os.path.isfile(args.robot) and args.robot.lower().endswith(".xml"):
        try:
            model = jaxdyn.load_mjcf(args.robot)
        except LoadError as e:
            return _fail(f"jaxdyn view: error: {e}")
        source = args.robot
    elif os.path.isfile(args.robot):
        try:
            model = jaxdyn.load_urdf(args.robot, floating_base=bool(fb))
        except jaxdyn.URDFError as e:
            return _fail(f"jaxdyn view: error: {e}")
        source = args.robot
    else:
        return _fail(
            f"jaxdyn view: error: '{args.robot}' is neither a shipped robot "
            f"({', '.join(jaxdyn.available_robots())}) nor a URDF or MJCF (.xml) file"
        )
    if args.q is not None and args.random:
        return _fail("jaxdyn view: error: give either --q or --random, not both")
    if args.serve or args.rollout is not None:
        return _serve(args, model, source)
    q: np.ndarray | jax.Array
    if args.q is not None:
        q = np.array(args.q)
    elif args.random:
        q = jaxdyn.random_configuration(model, jax.random.PRNGKey(args.seed))
    else:
        q = jaxdyn.neutral(model)
    try:
        viewer.draw(model, q, args.out, frames=args.frames, com=args.com, view=tuple(args.view))
    except ValueError as e:
        return _fail(f"jaxdyn view: error: {e}")
    print(f"wrote {args.out} ({model.name}: nq={model.nq}, {model.nb} bodies)")
    return 0


def _serve(args, model, source) -> int:
    """``jaxdyn view --serve``: the robot in the browser until Ctrl-C (or ``--stop-after``)."""
    import time

    try:
        from .render import web

        web.require("viser", "view", "jaxdyn view --serve")
    except ImportError as e:
        return _fail(f"jaxdyn view: error: {e}")
    qs = qds = dt = None
    if args.rollout is not None:
        try:
            qs, qds, dt = web.load_rollout(args.rollout, model)
        except (OSError, ValueError) as e:
            return _fail(f"jaxdyn view: error: {e}")
    contact = None
    if args.contact:
        from .contact import Contact

        if qds is None:
            return _fail("jaxdyn view: error: --contact needs the velocities: a rollout file with 'qd' (--rollout)")
        contact = Contact()
    try:
        v = web.WebViewer(model, source=source, qs=qs, qds=qds, dt=dt, contact=contact, host=args.host, port=args.port)
    except OSError as e:
        return _fail(f"jaxdyn view: error: cannot serve on {args.host}:{args.port}: {e}")
    what = f"rollout of {qs.shape[0]} steps x {qs.shape[1]} envs" if qs is not None else "joint sliders"
    print(f"serving {model.name} ({what}) at {v.url} ; Ctrl-C stops", flush=True)
    try:
        t0 = time.monotonic()
        while args.stop_after is None or time.monotonic() - t0 < args.stop_after:
            time.sleep(0.2)
    except KeyboardInterrupt:
        pass
    finally:
        v.close()
    return 0


def main(argv=None) -> int:
    p = Parser(prog="jaxdyn", description="Differentiable batched rigid-body dynamics in JAX")
    sub = p.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("demo", help="load a shipped robot, run RNEA/CRBA/ABA on a batch, check and time them")
    d.add_argument("--robot", default="panda", help="a shipped robot: one of jaxdyn.available_robots()")
    d.add_argument("--batch", type=count(1), default=4096, help="states per batch (default 4096)")
    d.add_argument("--dtype", choices=("float32", "float64"), default="float32")
    d.add_argument("--repeats", type=count(1), default=10, help="timed runs per algorithm (default 10)")
    d.add_argument("--seed", type=int, default=0)
    b = sub.add_parser(
        "bench", help="from a checkout: the benchmark harness benchmarks/harness.py (see benchmarks/README.md)"
    )
    b.add_argument("rest", nargs=argparse.REMAINDER)
    v = sub.add_parser(
        "view",
        help="draw a robot (shipped name, URDF or MJCF file) into a PNG, or serve it in the browser (--serve, --rollout)",
    )
    v.add_argument("robot", metavar="ROBOT_OR_FILE", help="a shipped robot name, a URDF file or an MJCF (.xml) file")
    v.add_argument("--q", type=float, nargs="+", help="the configuration: nq numbers (default: neutral)")
    v.add_argument("--random", action="store_true", help="a random configuration (see --seed)")
    v.add_argument("--seed", type=int, default=0)
    v.add_argument("--out", default="view.png", help="PNG file to write (default: view.png)")
    v.add_argument("--force", action="store_true", help="replace --out if it exists")
    v.add_argument("--frames", action="store_true", help="draw the body frames as RGB axis triads")
    v.add_argument("--com", action="store_true", help="mark the centre of mass")
    v.add_argument("--base", choices=("fixed", "floating"), help="override the robot's default base")
    v.add_argument(
        "--view",
        type=float,
        nargs=2,
        default=(22.0, -58.0),
        metavar=("ELEV", "AZIM"),
        help="camera elevation and azimuth in degrees",
    )
    v.add_argument("--serve", action="store_true", help="serve a 3D view in the browser (viser; jaxdyn[view])")
    v.add_argument(
        "--rollout", metavar="NPZ", help="a saved rollout to scrub in the browser (jaxdyn.render.web.save_rollout)"
    )
    v.add_argument(
        "--contact",
        action="store_true",
        help="with --rollout: offer the forces of jaxdyn.contact.Contact() (default parameters) from its velocities",
    )
    v.add_argument("--host", default="127.0.0.1", help="address to serve on (default 127.0.0.1)")
    v.add_argument("--port", type=count(0), default=8080, help="port to serve on (default 8080; 0: a free one)")
    v.add_argument("--stop-after", type=positive, metavar="SECONDS", help="stop serving after this long")
    i = sub.add_parser("identify", help="identify inertial parameters from measured torques, write a new URDF")
    from . import sysid

    sysid.add_cli_arguments(i)
    e = sub.add_parser("excite", help="optimise a Fourier excitation trajectory for identification, write a CSV")
    sysid.add_excite_arguments(e)
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["bench"]:  # the harness parses its own options (argparse.REMAINDER drops leading --flags)
        return _bench(argv[1:])
    args = p.parse_args(argv)
    if args.cmd == "demo":
        _check_robot(d, args.robot)
    if args.cmd == "view" and not (args.serve or args.rollout is not None):
        try:
            refuse_existing([args.out], args.force)
        except OutputExists as e:
            v.error(str(e))
    if args.cmd == "identify":
        return sysid.run_cli(args)
    if args.cmd == "excite":
        return sysid.run_excite_cli(args)
    if args.cmd == "demo":
        return _demo(args)
    if args.cmd == "view":
        return _view(args)
    return _bench(args.rest)


def _check_robot(p, name):
    """A shipped robot's name, or a one-line error naming the closest one."""
    import difflib

    from .robots import available_robots

    names = available_robots()
    if name not in names:
        close = difflib.get_close_matches(name, names, n=1, cutoff=0.0)
        p.error(f"--robot: unknown robot '{name}' (closest: '{close[0]}'; shipped: {', '.join(names)})")


def _bench(argv) -> int:
    """Run the benchmark harness of a source checkout (``benchmarks/harness.py`` under the current
    directory); it is not part of the installed package."""
    import importlib.util
    import os

    path = os.path.join(os.getcwd(), "benchmarks", "harness.py")
    if not os.path.exists(path):
        print(
            "jaxdyn bench: the benchmark harness lives in the source repository: run "
            "`python benchmarks/run.py --help` from a checkout (benchmarks/README.md)",
            file=sys.stderr,
        )
        return 2
    spec = importlib.util.spec_from_file_location("jaxdyn_benchmarks_harness", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"jaxdyn bench: cannot load the benchmark harness from {path}")
    harness = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(harness)
    return harness.main(list(argv))


if __name__ == "__main__":
    sys.exit(main())
