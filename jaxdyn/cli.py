"""Console entry point: ``jaxdyn demo`` and ``jaxdyn bench``."""

from __future__ import annotations

import argparse
import sys


def x64_context(enabled: bool):
    """A context with float64 enabled (scoped: the global JAX setting is left untouched)."""
    import contextlib

    import jax

    if not enabled:
        return contextlib.nullcontext()
    if hasattr(jax, "enable_x64"):
        return jax.enable_x64(True)
    from jax.experimental import enable_x64  # older JAX

    return enable_x64()


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
    print(f"jaxdyn {jaxdyn.__version__} on {jax.devices()[0].platform} ({jax.devices()[0].device_kind}), jax {jax.__version__}")
    print(f"robot '{args.robot}': {model.nb} bodies, nq={model.nq}, nv={model.nv}, "
          f"floating base={model.floating_base}, joints: {', '.join(model.joint_names)}")
    keys = jax.random.split(jax.random.PRNGKey(args.seed), 4)
    q = jax.vmap(lambda k: jaxdyn.random_configuration(model, k))(jax.random.split(keys[0], B))
    qd = jax.random.normal(keys[1], (B, model.nv), dtype)
    qdd = jax.random.normal(keys[2], (B, model.nv), dtype)

    rows = []
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
    from .bench import measure

    out, compile_s, med = measure(f, a, repeats)
    rows.append((name, compile_s, med, B / med))
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="jaxdyn", description="Differentiable batched rigid-body dynamics in JAX")
    sub = p.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("demo", help="load a shipped robot, run RNEA/CRBA/ABA on a batch, check and time them")
    d.add_argument("--robot", default="panda", help="one of: double_pendulum, ur5, panda, solo12, talos")
    d.add_argument("--batch", type=int, default=4096)
    d.add_argument("--dtype", choices=("float32", "float64"), default="float32")
    d.add_argument("--repeats", type=int, default=10)
    d.add_argument("--seed", type=int, default=0)
    b = sub.add_parser("bench", help="benchmark against the peers installed (see benchmarks/README.md)")
    b.add_argument("rest", nargs=argparse.REMAINDER)
    args = p.parse_args(argv)
    if args.cmd == "demo":
        return _demo(args)
    from . import bench

    return bench.main(args.rest)


if __name__ == "__main__":
    sys.exit(main())
