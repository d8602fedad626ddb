"""Launch parameters of the fused Pallas kernels on a GPU: samples per program (``block``) and
Triton warps per program (``num_warps``), for the looped (``traversal="scan"``) and unrolled
kernels, against the generic ``jit(vmap(...))`` of the same algorithm in the same process.

Written to pick the looped kernels' defaults (``block=128``, Triton's own ``num_warps``) from
measurements on the first GPU that runs it; it prints one line per case and writes
``results/<backend>-<date>-pallas-tune-<robots>.{json,md}``:

  python benchmarks/pallas_tune.py --robots talos:fixed,chain128 --algos aba,rnea,crba --batch 131072
  python benchmarks/pallas_tune.py --robots panda --traversals scan,unroll   # loop vs unrolled

GPU only (on a CPU Pallas interprets the kernels: no timing sense). A case that fails is
reported and the run goes on; results are saved after every case.
"""

import argparse
import datetime
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--robots", default="talos:fixed,solo12,chain128")
    p.add_argument("--algos", default="aba,rnea,crba")
    p.add_argument("--traversals", default="scan")
    p.add_argument("--blocks", default="64,128,256")
    p.add_argument("--warps", default="0,2,4,8", help="0: Triton's choice")
    p.add_argument("--batch", type=int, default=131072)
    p.add_argument("--repeats", type=int, default=10)
    p.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results"))
    p.add_argument(
        "--interpret",
        action="store_true",
        help="Pallas interpret mode on any backend: checks this script and the results, not speed",
    )
    args = p.parse_args(argv)

    import harness as bench
    import jax
    import jax.numpy as jnp

    import jaxdyn
    from jaxdyn.kernels import pallas

    if jax.default_backend() != "gpu" and not args.interpret:
        raise SystemExit("pallas_tune.py times GPU kernels; this backend is " + jax.default_backend())
    dev = jax.devices()[0]
    env = {
        "device": dev.device_kind,
        "jax": jax.__version__,
        "date": datetime.date.today().isoformat(),
        "batch": args.batch,
    }
    tag = args.robots.replace(",", "_").replace(":", "-")
    stem = os.path.join(args.out, f"{jax.default_backend()}-{env['date']}-pallas-tune-{tag}")
    os.makedirs(args.out, exist_ok=True)
    rows = []
    print(" ".join(f"{k}={v}" for k, v in env.items()))
    print(
        f"{'algo':<12}{'robot':<14}{'trav':<8}{'block':>6}{'warps':>6}{'compile s':>10}{'samples/s':>12}"
        f"{'x generic':>10}{'rel err':>10}"
    )
    generic = {
        "aba": jaxdyn.aba,
        "rnea": jaxdyn.rnea,
        "crba": jaxdyn.crba,
    }
    build = {
        "aba": pallas.aba_pallas,
        "rnea": pallas.rnea_pallas,
        "crba": pallas.crba_pallas,
    }
    for robot in args.robots.split(","):
        model = bench._model(robot, jnp.float32)
        q, qd, x = bench._inputs(model, args.batch)
        for algo in args.algos.split(","):
            xs = (q,) if algo == "crba" else (q, qd, x)
            g = jax.vmap(lambda *a: generic[algo](model, *a))
            ref, _, g_s = bench.measure(g, xs, args.repeats)
            ref = bench._head(ref)
            for trav in args.traversals.split(","):
                for block in map(int, args.blocks.split(",")):
                    for warps in map(int, args.warps.split(",")):
                        row = {
                            "algo": algo,
                            "robot": robot,
                            "traversal": trav,
                            "block": block,
                            "num_warps": warps or None,
                            "generic_samples_per_s": args.batch / g_s,
                        }
                        try:
                            f = build[algo](
                                model,
                                block=block,
                                num_warps=warps or None,
                                traversal=trav,
                                interpret=True if args.interpret else None,
                            )
                            out, c_s, s = bench.measure(f, xs, args.repeats)
                            row.update(
                                compile_s=c_s,
                                samples_per_s=args.batch / s,
                                x_generic=g_s / s,
                                rel_err=bench.rel_err(bench._head(out), ref),
                            )
                            print(
                                f"{algo:<12}{robot:<14}{trav:<8}{block:>6}{warps or '-':>6}{c_s:>10.1f}"
                                f"{args.batch / s:>12.3g}{g_s / s:>10.2f}{row['rel_err']:>10.1e}",
                                flush=True,
                            )
                        except Exception as e:  # noqa: BLE001 - report and go on
                            row["error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else ''}"
                            print(
                                f"{algo:<12}{robot:<14}{trav:<8}{block:>6}{warps or '-':>6}  failed: {row['error']}",
                                flush=True,
                            )
                        rows.append(row)
                        _save(stem, env, rows)
    return 0


def _save(stem, env, rows):
    with open(stem + ".json", "w") as fh:
        json.dump({"env": env, "rows": rows}, fh, indent=1)
    lines = [
        f"# Pallas launch parameters, {env['device']}, jax {env['jax']}, {env['date']}, batch {env['batch']}",
        "",
        "| algo | robot | traversal | block | warps | compile s | samples/s | x generic | rel. err |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if "error" in r:
            lines.append(
                f"| {r['algo']} | {r['robot']} | {r['traversal']} | {r['block']} | {r['num_warps'] or '-'} "
                f"| failed: {r['error']} | | | |"
            )
        else:
            lines.append(
                f"| {r['algo']} | {r['robot']} | {r['traversal']} | {r['block']} | {r['num_warps'] or '-'} "
                f"| {r['compile_s']:.1f} | {r['samples_per_s']:.3g} | {r['x_generic']:.2f} | {r['rel_err']:.1e} |"
            )
    with open(stem + ".md", "w") as fh:
        fh.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    sys.exit(main())
