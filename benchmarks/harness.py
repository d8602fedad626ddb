"""Benchmark harness: algorithm x robot x batch x dtype, against the peers installed.

Run ``python benchmarks/run.py --help``. For each case it reports jit
compile time, median time per batch after warm-up (``block_until_ready``), samples per second,
peak device memory where the backend reports it, and - in the same process, on the same random
inputs' shapes - the peers that are importable:

* Pinocchio (``pin``): time per call from Python (``pin.aba`` looped), and its OpenMP batch API
  (``abaInParallel`` / ``rneaInParallel`` on all cores) at the same batch size;
* frax (``frax``): ``jit(vmap(Robot.forward_dynamics / rnea / crba))`` loaded from the same URDF
  (it forms the mass matrix and solves it densely);
* MuJoCo MJX (``mujoco.mjx``): ``jit(vmap(mjx.forward))`` (contacts and constraints off) for
  forward dynamics, ``mjx.inverse`` for inverse dynamics, ``kinematics + com_pos + crb`` for the
  mass matrix, from the same URDF (a free joint added for floating bases).

Ratios are jaxdyn throughput / peer throughput (> 1: jaxdyn faster). Results go to
``benchmarks/results/<device>-<date>.{json,md}``. The peers are never jaxdyn dependencies:
install them in a separate environment together with jaxdyn (see benchmarks/README.md).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import sys
import time

from jaxdyn._timing import measure, median_time

ALGOS = (
    "rnea",
    "crba",
    "aba",
    "aba_jacobian",
    "minv",
    "innovations",
    "aba_soa",
    "rnea_soa",
    "crba_soa",
    "aba_jacobian_soa",
    "aba_pallas",
    "rnea_pallas",
    "crba_pallas",
    "aba_jacobian_pallas",
    "aba_derivatives",
)
# aba_derivatives: jaxdyn.aba_derivatives, the closed-form Jacobian of ABA (tangent-space q columns,
# as Pinocchio's computeABADerivatives); another implementation of the aba_jacobian job.
# *_pallas: the fused Pallas kernels (jaxdyn.kernels.pallas), GPU only
DEFAULT_ALGOS = "aba,aba_soa,rnea,rnea_soa,crba,crba_soa"
GPU_ALGOS = "aba_pallas,rnea_pallas,crba_pallas"  # added to the default on a GPU: the fastest paths there
# *_soa: the struct-of-arrays batched kernels (jaxdyn.kernels) called directly, under jax.jit (on CPU
# aba_jacobian_soa with kernels.COMPILER_OPTIONS)


def hlo_computations(hlo: str) -> dict[str, list[str]]:
    """The computations of an HLO module's text (``Compiled.as_text()``), in text order: each
    one's name (the entry's too) to the lines of its body."""
    comps: dict[str, list[str]] = {}
    cur = None
    for ln in hlo.splitlines():
        m = re.match(r"^(?:ENTRY )?%?([\w.\-]+) \(", ln)
        if m and ln.rstrip().endswith("{"):
            cur = m[1]
            comps[cur] = []
        elif ln.startswith("}"):
            cur = None
        elif cur is not None:
            comps[cur].append(ln)
    return comps


def family(algo):
    """The job an implementation does, shared with the peers' counterpart: ``aba_soa`` and
    ``aba_pallas`` -> ``aba``; ``aba_derivatives`` -> ``aba_jacobian``."""
    if algo == "aba_derivatives":
        return "aba_jacobian"
    return algo.replace("_soa", "").replace("_pallas", "")


def _model(name, dtype):
    import jaxdyn
    from jaxdyn import builders

    if name.startswith("chain"):
        return builders.chain(int(name[5:]), "revolute", seed=0, dtype=dtype)
    robot, _, base = name.partition(":")
    fb = None if not base else base == "floating"
    return jaxdyn.load_robot(robot, floating_base=fb, dtype=dtype)


def _kernel(algo):
    import jax

    import jaxdyn

    if algo == "rnea":
        return jax.vmap(jaxdyn.rnea, in_axes=(None, 0, 0, 0)), "q qd x"
    if algo == "aba":
        return jax.vmap(jaxdyn.aba, in_axes=(None, 0, 0, 0)), "q qd x"
    if algo == "crba":
        return jax.vmap(jaxdyn.crba, in_axes=(None, 0)), "q"
    if algo == "aba_jacobian":
        f = jax.jacfwd(lambda m, q, v, t: jaxdyn.aba(m, q, v, t), argnums=(1, 2, 3))
        return jax.vmap(f, in_axes=(None, 0, 0, 0)), "q qd x"
    if algo in ("aba_soa", "rnea_soa"):
        from jaxdyn import kernels

        return (kernels.aba_batch if algo == "aba_soa" else kernels.rnea_batch), "q qd x"
    if algo in ("crba_soa", "aba_jacobian_soa"):
        from jaxdyn import kernels

        return (kernels.crba_batch, "q") if algo == "crba_soa" else (kernels.aba_jacobian_batch, "q qd x")
    if algo == "minv":
        return jax.vmap(jaxdyn.mass_matrix_inverse, in_axes=(None, 0)), "q"
    if algo == "aba_derivatives":  # (dqdd/dq, dqdd/dqd, dqdd/dtau), the outputs of aba_jacobian
        return jax.vmap(
            lambda m, q, v, t: tuple(jaxdyn.aba_derivatives(m, q, v, t))[1:], in_axes=(None, 0, 0, 0)
        ), "q qd x"
    if algo == "innovations":
        return jax.vmap(jaxdyn.innovations_factorization, in_axes=(None, 0)), "q"
    raise ValueError(f"unknown algorithm {algo!r}; choose from {ALGOS}")


def _inputs(model, B, seed=0):
    import jax

    import jaxdyn

    k = jax.random.split(jax.random.PRNGKey(seed), 3)
    q = jax.vmap(lambda kk: jaxdyn.random_configuration(model, kk))(jax.random.split(k[0], B))
    qd = jax.random.normal(k[1], (B, model.nv), model.dtype)
    x = jax.random.normal(k[2], (B, model.nv), model.dtype)
    return q, qd, x


def best_of_rounds(fns, args, rounds, repeats=11):
    """``{key: seconds}``: for each of the callables ``fns`` (a dict), the best over ``rounds``
    of :func:`median_time` of ``repeats`` calls, the callables alternating within each round
    (for same-process A/B comparisons: this VM's timings drift between processes)."""
    best = {}
    for _ in range(rounds):
        for k, f in fns.items():
            t = median_time(f, args, repeats)
            best[k] = min(best.get(k, t), t)
    return best


def time_jaxdyn(model, algo, B, repeats):
    import jax

    traversal = model.layout.traversal
    if algo.endswith("_pallas"):
        if jax.default_backend() != "gpu":
            raise RuntimeError(
                f"{algo} runs on a GPU only (on CPU Pallas interprets the kernel: a correctness check, not a benchmark)"
            )
        from jaxdyn import planner
        from jaxdyn.kernels import pallas

        limit = planner.PALLAS_MAX_LINKS[algo]
        traversal = planner.pallas_traversal(model, algo)
        n = planner.scanned_links(model.topology)
        if traversal == "unroll" and n > limit:
            raise RuntimeError(
                f"{algo} skipped for {n} links (> {limit}, jaxdyn.planner.PALLAS_MAX_LINKS): it has "
                "no looped form and Triton's compile time grows steeply with the unrolled body (the "
                "ABA for talos, 32 links, ran past 240 s: benchmarks/results/gpu-aot-h100.md)"
            )
        f = getattr(pallas, algo)(model)
        if algo == "aba_pallas" and traversal == "scan":  # the looped ABA's default frames
            traversal = "scan/aligned"
        sig = "q model-constant" if algo == "crba_pallas" else "q qd x model-constant"
    else:
        f, sig = _kernel(algo)
    q, qd, x = _inputs(model, B)
    args = (model, q) if "qd" not in sig else (model, q, qd, x)
    if sig.endswith("model-constant"):
        args = args[1:]
    opts = None
    if algo == "aba_jacobian_soa" and jax.default_backend() == "cpu":
        from jaxdyn import kernels

        opts = kernels.COMPILER_OPTIONS  # fusion off: see its comment in jaxdyn/kernels/soa.py
    info = {}
    before = _peak_bytes()
    out, compile_s, med = measure(f, args, repeats, info=info, compiler_options=opts)
    after = _peak_bytes()
    # The runtime's peak is the process's high-water mark and cannot be reset: it belongs to this
    # case only if the case raised it (then it is exact: the most in use while the case ran,
    # its inputs included). Otherwise the case stayed under an earlier peak: not reported.
    peak = after if after is not None and (before is None or after > before) else None
    return {
        "compile_s": compile_s,
        "batch_s": med,
        "samples_per_s": B / med,
        "peak_bytes": peak,
        "program_bytes": info.get("program_bytes"),
        "_head": _head(out),
        "traversal": traversal,
    }


def _peak_bytes():
    """The device's peak memory in use so far (GPU), or None where the backend does not say."""
    import jax

    try:
        return (jax.devices()[0].memory_stats() or {}).get("peak_bytes_in_use")
    except Exception:  # noqa: BLE001 - backends without memory stats
        return None


CHECK_SAMPLES = 512  # samples of each output cross-checked between jaxdyn paths


def _head(out):
    """The first CHECK_SAMPLES samples of a batched output (a pytree), flattened per sample, as
    float64 NumPy: kept to cross-check the SoA / Pallas kernels against the generic path."""
    import jax
    import numpy as np

    leaves = [
        np.asarray(x[:CHECK_SAMPLES], np.float64).reshape(min(CHECK_SAMPLES, x.shape[0]), -1)
        for x in jax.tree_util.tree_leaves(out)
    ]
    return np.concatenate(leaves, axis=1)


def reference_head(model, family_name, B):
    """The first CHECK_SAMPLES outputs of the one-sample algorithm of ``jaxdyn.algorithms`` (no
    batching rule, so not the batch kernel that ``vmap(jaxdyn.aba)`` reaches) under ``vmap``, on
    the inputs every row of ``(model, B)`` gets (:func:`_inputs`): the independent reference of
    the "rel. err" column. None for the algorithms without one here."""
    import jax

    from jaxdyn.algorithms.aba import aba
    from jaxdyn.algorithms.crba import crba
    from jaxdyn.algorithms.rnea import rnea

    q, qd, x = (a[:CHECK_SAMPLES] for a in _inputs(model, B))
    if family_name in ("aba", "rnea"):
        f = aba if family_name == "aba" else rnea
        return _head(jax.jit(jax.vmap(f, in_axes=(None, 0, 0, 0)))(model, q, qd, x))
    if family_name == "crba":
        return _head(jax.jit(jax.vmap(crba, in_axes=(None, 0)))(model, q))
    if family_name == "aba_jacobian":
        jac = jax.jacfwd(aba, argnums=(1, 2, 3))
        return _head(jax.jit(jax.vmap(jac, in_axes=(None, 0, 0, 0)))(model, q, qd, x))
    return None


def rel_err(a, ref):
    """||a - ref|| / ||ref|| (Frobenius, over the checked samples), or None if shapes differ."""
    import numpy as np

    if a is None or ref is None or a.shape != ref.shape:
        return None
    return float(np.linalg.norm(a - ref) / max(np.linalg.norm(ref), 1e-30))


def time_pinocchio(robot_name, algo, repeats=2000):
    """Seconds per call of Pinocchio from Python, or None if unavailable for this case."""
    try:
        import numpy as np
        import pinocchio as pin
    except ImportError:
        return None
    path, fb = _robot_base(robot_name)
    m = pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer()) if fb else pin.buildModelFromUrdf(str(path))
    d = m.createData()
    rng = np.random.default_rng(0)
    q = pin.neutral(m)
    v, a = rng.normal(size=m.nv), rng.normal(size=m.nv)
    # Counterparts: aba_jacobian -> computeABADerivatives (d qdd / d(q, v, tau); its q-derivative
    # is in the tangent space, nv columns, where jaxdyn's jacfwd differentiates the nq coordinates);
    # innovations -> crba + cholesky.decompose (Pinocchio's sparse U D U^T factorisation of M, the
    # same job: a factorisation of the mass matrix from q).
    call = {
        "rnea": lambda: pin.rnea(m, d, q, v, a),
        "aba": lambda: pin.aba(m, d, q, v, a),
        "crba": lambda: pin.crba(m, d, q),
        "minv": lambda: pin.computeMinverse(m, d, q),
        "aba_jacobian": lambda: pin.computeABADerivatives(m, d, q, v, a),
        "innovations": lambda: (pin.crba(m, d, q), pin.cholesky.decompose(m, d)),
    }.get(algo)
    if call is None:
        return None
    return time_call(call, repeats)


def time_call(call, repeats=2000):
    """Seconds per call of ``call()`` (a peer's one-sample function): the median of 5 rounds of
    ``repeats`` calls, after 100 warm-up calls."""
    for _ in range(100):
        call()
    ts = []
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(repeats):
            call()
        ts.append((time.perf_counter() - t) / repeats)
    return sorted(ts)[2]


def env_info():
    """``date, jaxdyn, jax, device, cpu, cpu_count`` of this run."""
    import jax

    import jaxdyn

    dev = jax.devices()[0]
    return {
        "date": datetime.date.today().isoformat(),
        "jaxdyn": jaxdyn.__version__,
        "jax": jax.__version__,
        "device": f"{dev.platform}:{dev.device_kind}",
        "cpu": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
    }


def emit(lines, out=None, **extra):
    """Print a results table (``lines``) under the run's :func:`env_info` and ``extra`` as one
    ``key: value`` line, and write it to the markdown file ``out`` if given."""
    head = ", ".join(f"{k}: {v}" for k, v in {**env_info(), **extra}.items())
    text = head + "\n\n" + "\n".join(lines) + "\n"
    print(text)
    if out:
        with open(out, "w") as fh:
            fh.write(text)


_CHAIN_URDFS = {}


def _robot_base(robot_name):
    """``(URDF path, floating base)`` the peers load for a harness robot name; a ``chainN`` is
    written from jaxdyn's own chain model (:func:`jaxdyn.io.urdf_write.model_to_urdf`), so every
    engine runs the same robot."""
    from jaxdyn.robots import default_floating, robot_path

    if robot_name.startswith("chain"):
        if robot_name not in _CHAIN_URDFS:
            import tempfile

            from jaxdyn.io.urdf_write import model_to_urdf

            fd, path = tempfile.mkstemp(prefix=f"jaxdyn-{robot_name}-", suffix=".urdf")
            with os.fdopen(fd, "w") as fh:
                fh.write(model_to_urdf(_model(robot_name, None)))
            _CHAIN_URDFS[robot_name] = path
        return _CHAIN_URDFS[robot_name], False
    robot, _, base = robot_name.partition(":")
    fb = default_floating(robot) if not base else base == "floating"
    return robot_path(robot), fb


def frax_kernel(robot_name, algo):
    """A batched frax function with jaxdyn's argument convention, or None if unavailable."""
    try:
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import frax
    except ImportError:
        return None
    import jax

    path, fb = _robot_base(robot_name)
    r = frax.Robot(str(path), floating_base="quaternion" if fb else None)
    if algo == "aba":
        return jax.vmap(lambda q, v, t: r.forward_dynamics(q, v, t, None)), "q qd x"
    if algo == "rnea":
        import jax.numpy as jnp

        g = jnp.array([0.0, 0.0, 9.81, 0.0, 0.0, 0.0])  # frax's own convention (its forward_dynamics)
        return jax.vmap(lambda q, v, a: r.rnea(q, v, a, g.astype(q.dtype), None)), "q qd x"
    if algo == "crba":
        return jax.vmap(r.crba), "q"
    if algo == "aba_jacobian":
        f = jax.jacfwd(lambda q, v, t: r.forward_dynamics(q, v, t, None), argnums=(0, 1, 2))
        return jax.vmap(f), "q qd x"
    return None


def mjx_kernel(robot_name, algo):
    """A batched MuJoCo MJX function with jaxdyn's argument convention, or None."""
    if algo not in ("aba", "rnea", "crba", "aba_jacobian"):
        return None
    try:
        import contextlib
        import io

        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            import mujoco
            from mujoco import mjx
    except ImportError:
        return None
    import jax

    path, fb = _robot_base(robot_name)
    spec = mujoco.MjSpec.from_file(str(path))
    if fb:
        spec.worldbody.first_body().add_freejoint()
    m = spec.compile()
    m.opt.disableflags |= (
        mujoco.mjtDisableBit.mjDSBL_CONTACT
        | mujoco.mjtDisableBit.mjDSBL_CONSTRAINT
        | mujoco.mjtDisableBit.mjDSBL_EQUALITY
    )  # URDF mimic -> equality in MuJoCo
    mx = mjx.put_model(m)
    d0 = mjx.make_data(mx)

    def fwd(q, v, t):
        return mjx.forward(mx, d0.replace(qpos=q, qvel=v, qfrc_applied=t)).qacc

    if algo == "aba":
        return jax.vmap(fwd), "q qd x"
    if algo == "aba_jacobian":
        return jax.vmap(jax.jacfwd(fwd, argnums=(0, 1, 2))), "q qd x"
    if algo == "rnea":
        return jax.vmap(lambda q, v, a: mjx.inverse(mx, d0.replace(qpos=q, qvel=v, qacc=a)).qfrc_inverse), "q qd x"

    def crb(q):
        d = mjx.kinematics(mx, d0.replace(qpos=q))
        d = mjx.com_pos(mx, d)
        return mjx.full_m(mx, mjx.crb(mx, d))

    return jax.vmap(crb), "q"


def _peer_kernel(build, robot, algo):
    """A peer's kernel, or None (reported) when the peer cannot load or build the case."""
    try:
        return build(robot, algo)
    except Exception as e:  # noqa: BLE001 - a peer that cannot load a robot is reported, not fatal
        print(
            f"  ({build.__name__.replace('_kernel', '')} could not build {algo} for {robot}: "
            f"{type(e).__name__}: {str(e)[:120]})"
        )
        return None


def time_peer(kernel, model, B, repeats):
    """Time a peer's batched kernel on random inputs of jaxdyn's shapes (the peers use the same
    q layout: free-flyer position + (w, x, y, z) quaternion, then joints)."""
    if kernel is None:
        return None
    f, sig = kernel
    q, qd, x = _inputs(model, B)
    args = (q,) if sig == "q" else (q, qd, x)
    try:
        _, compile_s, med = measure(f, args, repeats)
    except Exception as e:  # noqa: BLE001 - a peer that cannot run a case is reported, not fatal
        print(f"  (peer failed: {type(e).__name__}: {str(e)[:120]})")
        return None
    return {"compile_s": compile_s, "batch_s": med, "samples_per_s": B / med}


def time_pinocchio_batch(robot_name, algo, B, threads=None, repeats=5):
    """Seconds per sample of Pinocchio's OpenMP batch API (``abaInParallel`` /
    ``rneaInParallel`` over a ``ModelPool``, all cores by default), or None if unavailable."""
    try:
        import numpy as np
        import pinocchio as pin
    except ImportError:
        return None
    fn = {"aba": getattr(pin, "abaInParallel", None), "rnea": getattr(pin, "rneaInParallel", None)}.get(algo)
    if fn is None:
        return None
    path, fb = _robot_base(robot_name)
    m = pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer()) if fb else pin.buildModelFromUrdf(str(path))
    threads = threads or os.cpu_count() or 1
    pool = pin.ModelPool(m, threads)
    rng = np.random.default_rng(0)
    q = np.asfortranarray(np.stack([pin.randomConfiguration(m, -np.ones(m.nq), np.ones(m.nq)) for _ in range(B)], 1))
    v = np.asfortranarray(rng.normal(size=(m.nv, B)))
    x = np.asfortranarray(rng.normal(size=(m.nv, B)))
    out = np.asfortranarray(np.zeros((m.nv, B)))
    fn(threads, pool, q, v, x, out)
    ts = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn(threads, pool, q, v, x, out)
        ts.append(time.perf_counter() - t)
    return sorted(ts)[len(ts) // 2] / B


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="jaxdyn bench")
    p.add_argument(
        "--algos",
        default=None,
        help=f"comma list from {ALGOS} (*_soa: the struct-of-arrays kernels of jaxdyn.kernels; "
        f"*_pallas: the fused Pallas kernels, GPU only). Default: {DEFAULT_ALGOS}, plus "
        f"{GPU_ALGOS} on a GPU",
    )
    p.add_argument("--robots", default="panda,talos", help="shipped robots (robot[:fixed|floating]) and chainN")
    p.add_argument("--batches", default="1,4096")
    p.add_argument("--dtypes", default="float32")
    p.add_argument("--repeats", type=int, default=20)
    p.add_argument("--out", default=os.path.join("benchmarks", "results"))
    p.add_argument("--no-save", action="store_true")
    p.add_argument("--force", action="store_true", help="replace the results files of a run of the same day and tag")
    p.add_argument("--peers", default="pinocchio,frax,mjx", help="peers to time when importable (comma list)")
    p.add_argument(
        "--traversal",
        default=None,
        choices=["auto", "scan", "unroll", "latency"],
        help="jaxdyn traversal strategy (default: the model's, 'auto')",
    )
    p.add_argument("--tag", default="", help="suffix of the results file name")
    args = p.parse_args(argv)

    from jaxdyn._x64 import x64_context

    with x64_context("float64" in args.dtypes):
        return _run(args)


def _fmt(x, scale=1.0, spec=".3g"):
    return "n/a" if x is None else format(x * scale, spec)


def _run(args) -> int:
    import jax
    import jax.numpy as jnp

    import jaxdyn

    dev = jax.devices()[0]
    env = env_info()
    for mod, attr in (("pinocchio", "__version__"), ("frax", None), ("mujoco", "__version__")):
        try:
            import contextlib
            import importlib
            import io
            import warnings

            with (
                warnings.catch_warnings(),
                contextlib.redirect_stdout(io.StringIO()),
                contextlib.redirect_stderr(io.StringIO()),
            ):
                warnings.simplefilter("ignore")
                m = importlib.import_module(mod)
            env[mod] = getattr(m, attr, "installed") if attr else _dist_version(mod)
        except ImportError:
            env[mod] = None
    peers = [p for p in args.peers.split(",") if p]
    algos = (args.algos or DEFAULT_ALGOS + ("," + GPU_ALGOS if dev.platform == "gpu" else "")).split(",")
    unknown = [a for a in algos if a not in ALGOS]
    if unknown:
        raise SystemExit(f"jaxdyn bench: unknown algorithm(s) {unknown}; choose from {', '.join(ALGOS)}")
    print(" ".join(f"{k}={v}" for k, v in env.items()))
    hdr = (
        f"{'algo':<20}{'robot':<16}{'dtype':<8}{'batch':>8}{'compile s':>10}{'us/batch':>12}{'samples/s':>12}"
        f"{'pin x':>8}{'pinMP x':>8}{'frax x':>8}{'mjx x':>8}{'best x':>8}"
    )
    print(hdr)
    rows, failed = [], []
    pin_cache, peer_cache, heads = {}, {}, {}
    stem = os.path.join(args.out, f"{dev.platform}-{env['date']}{args.tag}")
    if not args.no_save:
        existing = [stem + e for e in (".json", ".md", ".png") if os.path.exists(stem + e)]
        if existing and not args.force:
            print(
                f"jaxdyn bench: error: {existing[0]} exists (a run of the same day and tag); give --force "
                "to replace it, or --tag",
                file=sys.stderr,
            )
            return 2
        os.makedirs(args.out, exist_ok=True)
    for dt in args.dtypes.split(","):
        dtype = {"float32": jnp.float32, "float64": jnp.float64}[dt]
        for robot in args.robots.split(","):
            # the traversal override (jaxdyn.executor) is part of jit's key: every call is inside it
            with jaxdyn.executor(traversal=args.traversal or "auto"):
                model = _model(robot, dtype)
                for algo in algos:
                    palgo = family(algo)  # the peers' counterpart
                    key = (robot, palgo)
                    if key not in pin_cache:
                        pin_cache[key] = time_pinocchio(robot, palgo) if "pinocchio" in peers else None
                    pin_s = pin_cache[key]
                    fk = _peer_kernel(frax_kernel, robot, palgo) if "frax" in peers else None
                    mk = _peer_kernel(mjx_kernel, robot, palgo) if "mjx" in peers else None
                    for B in map(int, args.batches.split(",")):
                        try:
                            r = time_jaxdyn(model, algo, B, args.repeats)
                        except Exception as e:  # noqa: BLE001 - e.g. out of device memory: report, go on
                            msg = f"{type(e).__name__}: {str(e).splitlines()[0][:160]}" if str(e) else type(e).__name__
                            print(f"{algo:<20}{robot:<16}{dt:<8}{B:>8}  failed: {msg}", flush=True)
                            failed.append({"algo": algo, "robot": robot, "dtype": dt, "batch": B, "error": msg})
                            if not args.no_save:
                                _save(stem, env, rows, failed)
                            continue
                        head = r.pop("_head")
                        hkey = (robot, palgo, dt, B)
                        if hkey not in heads:  # the one-sample algorithm, vmapped: every row's reference
                            heads[hkey] = reference_head(model, palgo, B)
                        err = rel_err(head, heads[hkey])
                        pkey = (robot, palgo, dt, B)  # aba and aba_soa share the peers' timings (one compile each)
                        if pkey not in peer_cache:
                            peer_cache[pkey] = (
                                time_peer(fk, model, B, args.repeats),
                                time_peer(mk, model, B, args.repeats),
                                time_pinocchio_batch(robot, palgo, B) if "pinocchio" in peers and B > 1 else None,
                            )
                        fr, mr, pb = peer_cache[pkey]
                        best = max(
                            [
                                1.0 / pin_s if pin_s else 0.0,
                                1.0 / pb if pb else 0.0,
                                fr["samples_per_s"] if fr else 0.0,
                                mr["samples_per_s"] if mr else 0.0,
                            ]
                        )
                        row = {
                            "algo": algo,
                            "robot": robot,
                            "nv": model.nv,
                            "dtype": dt,
                            "batch": B,
                            **r,
                            "rel_err_vs_generic": err,
                            "pinocchio_s_per_call": pin_s,
                            "ratio_vs_pinocchio": r["samples_per_s"] * pin_s if pin_s else None,
                            "frax": fr,
                            "ratio_vs_frax": r["samples_per_s"] / fr["samples_per_s"] if fr else None,
                            "mjx": mr,
                            "ratio_vs_mjx": r["samples_per_s"] / mr["samples_per_s"] if mr else None,
                            "pinocchio_batch_s_per_sample": pb,
                            "ratio_vs_best_peer": r["samples_per_s"] / best if best else None,
                        }
                        rows.append(row)
                        print(
                            f"{algo:<20}{robot:<16}{dt:<8}{B:>8}{r['compile_s']:>10.2f}{r['batch_s'] * 1e6:>12.1f}"
                            f"{r['samples_per_s']:>12.3g}{_fmt(row['ratio_vs_pinocchio'], spec='.2f'):>8}"
                            f"{_fmt(pb and r['samples_per_s'] * pb, spec='.2f'):>8}"
                            f"{_fmt(row['ratio_vs_frax'], spec='.2f'):>8}{_fmt(row['ratio_vs_mjx'], spec='.2f'):>8}"
                            f"{_fmt(row['ratio_vs_best_peer'], spec='.2f'):>8}"
                            + (f"  (rel. err vs generic {err:.1e})" if err is not None else ""),
                            flush=True,
                        )
                        if not args.no_save:  # after every row: a run cut short keeps what it measured
                            _save(stem, env, rows, failed)
    if not args.no_save:
        _save(stem, env, rows, failed)
        wrote = _plot(rows, stem + ".png", env)
        print(
            f"wrote {stem}.json, {stem}.md"
            + (
                f" and {stem}.png"
                if wrote
                else " (no PNG: matplotlib missing; "
                f"run `python -c \"import sys; sys.path.insert(0, 'benchmarks'); import harness as b; b.plot_json('{stem}.json')\"`)"
            )
        )
    return 0


def _save(stem, env, rows, failed):
    """The results as JSON and markdown, each written beside its file and renamed over it: a run
    cut short mid-write keeps the rows saved before."""
    from jaxdyn._files import replace_atomically

    with replace_atomically(stem + ".json") as tmp, open(tmp, "w") as fh:
        json.dump({"env": env, "rows": rows, "failed": failed}, fh, indent=1)
    with replace_atomically(stem + ".md") as tmp:
        write_markdown(tmp, env, rows, failed)


def write_markdown(path, env, rows, failed=()):
    """The results table, the headline table and the cases that did not run, as markdown."""
    with open(path, "w") as fh:
        fh.write(f"# jaxdyn benchmark, {env['date']}\n\n" + ", ".join(f"{k}: {v}" for k, v in env.items()) + "\n\n")
        fh.write(
            "Ratios: jaxdyn samples/s over the peer's (> 1: jaxdyn faster); Pinocchio is one call at a time "
            "from Python (aba_jacobian: computeABADerivatives; innovations: crba + cholesky.decompose; minv: "
            "computeMinverse). peak MB: the device's peak memory in use while the case ran, inputs included (GPU; n/a where the case stayed under an earlier case's peak, which the runtime cannot reset: run it alone to read it); rel. err vs generic: ||out - out_generic|| / ||out_generic|| over the first 512 samples, same inputs and dtype, out_generic from jax.vmap of the one-sample algorithm of jaxdyn.algorithms (no batching rule; for aba_jacobian its jacfwd; aba_derivatives where the shapes agree: fixed base); XLA program MB: what XLA's buffer "
            "assignment gives the compiled program (arguments, outputs, temporaries).\n\n"
        )
        fh.write(
            "| algo | robot | nv | dtype | batch | compile s | us/batch | samples/s | peak MB | XLA program MB | Pinocchio us/call "
            "| x Pinocchio | Pinocchio OpenMP us/sample | frax samples/s | x frax | MJX samples/s | x MJX "
            "| x best peer | rel. err vs generic |\n"
        )
        fh.write("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
        for r in rows:
            fh.write(
                f"| {r['algo']} | {r['robot']} | {r['nv']} | {r['dtype']} | {r['batch']} | {r['compile_s']:.2f} | "
                f"{r['batch_s'] * 1e6:.1f} | {r['samples_per_s']:.3g} | {_fmt(r['peak_bytes'], 1e-6, '.0f')} | "
                f"{_fmt(r.get('program_bytes'), 1e-6, '.1f')} | "
                f"{_fmt(r['pinocchio_s_per_call'], 1e6, '.2f')} | {_fmt(r['ratio_vs_pinocchio'], spec='.2f')} | "
                f"{_fmt(r['pinocchio_batch_s_per_sample'], 1e6, '.2f')} | "
                f"{_fmt(r['frax'] and r['frax']['samples_per_s'])} | {_fmt(r['ratio_vs_frax'], spec='.2f')} | "
                f"{_fmt(r['mjx'] and r['mjx']['samples_per_s'])} | {_fmt(r['ratio_vs_mjx'], spec='.2f')} | "
                f"{_fmt(r['ratio_vs_best_peer'], spec='.2f')} | {_fmt(r.get('rel_err_vs_generic'), spec='.1e')} |\n"
            )
        fh.write(_summary(rows))
        if failed:
            fh.write("\nCases that did not run (the error, first line):\n\n")
            for f in failed:
                fh.write(f"- {f['algo']} {f['robot']} {f['dtype']} batch {f['batch']}: {f['error']}\n")


def _summary(rows):
    """Headline table: per (algorithm, robot, dtype, batch) the faster jaxdyn implementation
    (generic ``vmap`` or SoA kernel) against each peer and the best one."""
    best = {}
    for r in rows:
        key = (family(r["algo"]), r["robot"], r["dtype"], r["batch"])
        if key not in best or r["samples_per_s"] > best[key]["samples_per_s"]:
            best[key] = r
    out = [
        "",
        "## Headline: the faster jaxdyn path per case",
        "",
        "| algo | robot | dtype | batch | jaxdyn path | samples/s | x Pinocchio per call | x Pinocchio OpenMP "
        "| x frax | x MJX | x best peer |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for (algo, robot, dt, B), r in best.items():
        pb = r.get("pinocchio_batch_s_per_sample")
        out.append(
            f"| {algo} | {robot} | {dt} | {B} | {r['algo']} | {r['samples_per_s']:.3g} | "
            f"{_fmt(r['ratio_vs_pinocchio'], spec='.2f')} | {_fmt(pb and r['samples_per_s'] * pb, spec='.2f')} | "
            f"{_fmt(r['ratio_vs_frax'], spec='.2f')} | {_fmt(r['ratio_vs_mjx'], spec='.2f')} | "
            f"{_fmt(r['ratio_vs_best_peer'], spec='.2f')} |"
        )
    return "\n".join(out) + "\n"


def _dist_version(mod):
    try:
        from importlib.metadata import version

        return version(mod)
    except Exception:  # noqa: BLE001
        return "installed"


def plot_json(path):
    """Write the PNG and markdown of a results JSON written by the harness (``<stem>.json`` ->
    ``<stem>.png``, ``<stem>.md``): e.g. after a run in an environment without matplotlib."""
    with open(path) as fh:
        res = json.load(fh)
    write_markdown(os.path.splitext(path)[0] + ".md", res["env"], res["rows"], res.get("failed", ()))
    return _plot(res["rows"], os.path.splitext(path)[0] + ".png", res["env"])


def _plot(rows, path, env):
    """Throughput vs batch, one panel per robot, one line per (algo, implementation)."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        return False
    robots = sorted({r["robot"] for r in rows})
    fig = Figure(figsize=(4.2 * len(robots), 3.6))
    axes = [fig.add_subplot(1, len(robots), i + 1) for i in range(len(robots))]
    for ax, robot in zip(axes, robots):
        rr = [r for r in rows if r["robot"] == robot]
        for algo in sorted({r["algo"] for r in rr}):
            for dt in sorted({r["dtype"] for r in rr}):
                sel = sorted((r for r in rr if r["algo"] == algo and r["dtype"] == dt), key=lambda r: r["batch"])
                if len({r["batch"] for r in sel}) < 1:
                    continue
                bs = [r["batch"] for r in sel]
                ax.plot(bs, [r["samples_per_s"] for r in sel], "o-", label=f"jaxdyn {algo} {dt}")
                for peer, style in (("frax", "s--"), ("mjx", "^:")):
                    if family(algo) != algo:  # its peer line is already drawn with the plain algo
                        break
                    pts = [(r["batch"], r[peer]["samples_per_s"]) for r in sel if r[peer]]
                    if pts:
                        ax.plot(*zip(*pts), style, label=f"{peer} {algo} {dt}")
                pin = [r["pinocchio_s_per_call"] for r in sel if r["pinocchio_s_per_call"]]
                if pin and family(algo) == algo:
                    ax.axhline(1.0 / pin[0], color="gray", lw=0.8, ls="-.", label=f"Pinocchio {algo} (1 core)")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(robot)
        ax.set_xlabel("batch size")
        ax.set_ylabel("samples / s")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=6)
    fig.suptitle(f"jaxdyn {env['jaxdyn']} on {env['device']}, jax {env['jax']}, {env['date']}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return True
