"""Operation counts over n: Turney80's formulas next to what jaxdyn's kernels execute.

For revolute chains of n links this prints, and writes to ``benchmarks/results/op_counts.{md,json,png}``:

* the paper's counts (Turney80 Table 1): Newton-Euler 108n-12 mult / 100n-9 add, modified
  Newton-Euler 90n-27 / 88n-24, Lagrange 27/2 n^3 + 165/2 n^2 + 5n / 40/3 n^3 + 58 n^2 - 64/3 n;
* multiplications and additions in jaxdyn's jaxprs (rnea, aba, crba, lagrange_dynamics),
  counted by walking the jaxpr (scan bodies times their length; dot_general as m*n*k);
* XLA's own flop estimate of the compiled program,
  ``jax.jit(f).lower(...).compile().cost_analysis()["flops"]``, reported as is for reference.

Run: ``python benchmarks/op_counts.py [--max-n 64]``. A log-log plot shows O(n), O(n^2), O(n^3).
"""

from __future__ import annotations

import argparse
import json
import os

import jax
import jax.numpy as jnp
import numpy as np

import jaxdyn
from jaxdyn import builders

MUL = {"mul", "div", "integer_pow", "sqrt", "rsqrt", "sin", "cos", "exp", "log", "tan", "atan2"}
ADD = {"add", "sub", "neg", "add_any"}


def count(jaxpr) -> tuple[int, int]:
    """(multiplications, additions) executed by a closed jaxpr, recursing into sub-jaxprs."""
    m = a = 0
    for eqn in jaxpr.eqns:
        name = eqn.primitive.name
        size = int(np.prod(eqn.outvars[0].aval.shape)) if eqn.outvars and hasattr(eqn.outvars[0].aval, "shape") else 1
        if name in MUL:
            m += size
        elif name in ADD:
            a += size
        elif name == "dot_general":
            (lc, _), _ = eqn.params["dimension_numbers"]
            k = int(np.prod([eqn.invars[0].aval.shape[d] for d in lc])) if lc else 1
            m += size * k
            a += size * max(k - 1, 0)
        elif name == "reduce_sum":
            a += int(np.prod(eqn.invars[0].aval.shape)) - size
        elif name == "scan":
            sm, sa = count(eqn.params["jaxpr"].jaxpr)
            m += sm * eqn.params["length"]
            a += sa * eqn.params["length"]
        elif name == "while":
            raise ValueError("unbounded while loop: cannot count")
        else:
            for p in ("jaxpr", "call_jaxpr", "fun_jaxpr"):
                sub = eqn.params.get(p)
                if sub is not None:
                    sm, sa = count(getattr(sub, "jaxpr", sub))
                    m += sm
                    a += sa
    return m, a


def kernels(model):
    q = jaxdyn.neutral(model)
    v = jnp.ones(model.nv, model.dtype)
    return {
        "rnea": (jaxdyn.rnea, (model, q, v, v)),
        "aba": (jaxdyn.aba, (model, q, v, v)),
        "crba": (jaxdyn.crba, (model, q)),
        "lagrange": (jaxdyn.lagrange_dynamics, (model, q, v, v)),
    }


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--max-n", type=int, default=64)
    p.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results"))
    args = p.parse_args(argv)
    ns = [n for n in (1, 2, 4, 6, 8, 16, 32, 64, 128, 256) if n <= args.max_n]
    rows = []
    for n in ns:
        model = builders.chain(n, "revolute", seed=0)
        row = {"n": n, **{f"paper_{k}": v for k, v in jaxdyn.paper_op_counts(n).items()}}
        for name, (f, a) in kernels(model).items():
            if name == "lagrange" and n > 64:
                continue
            mm, aa = count(jax.make_jaxpr(f)(*a).jaxpr)
            cost = jax.jit(f).lower(*a).compile().cost_analysis()
            cost = cost[0] if isinstance(cost, (list, tuple)) else cost
            row[name] = (mm, aa, float(cost.get("flops", float("nan"))) if cost else float("nan"))
        rows.append(row)
    os.makedirs(args.out, exist_ok=True)
    hdr = "| n | NE paper (mul/add) | mod-NE paper | Lagrange paper | jaxdyn rnea (mul/add) | jaxdyn aba | jaxdyn crba | jaxdyn lagrange | XLA flops rnea / lagrange |"
    lines = [hdr, "|" + "---|" * 9]
    for r in rows:
        fmt = lambda t: f"{int(t[0])} / {int(t[1])}"
        lag = fmt(r["lagrange"]) if "lagrange" in r else "-"
        xl = f"{r['rnea'][2]:.0f} / {r['lagrange'][2]:.0f}" if "lagrange" in r else f"{r['rnea'][2]:.0f} / -"
        lines.append(
            f"| {r['n']} | {fmt(r['paper_newton_euler'])} | {fmt(r['paper_modified_newton_euler'])} | "
            f"{fmt(r['paper_lagrange'])} | {fmt(r['rnea'])} | {fmt(r['aba'])} | {fmt(r['crba'])} | {lag} | {xl} |"
        )
    table = "\n".join(lines)
    print(table)
    with open(os.path.join(args.out, "op_counts.md"), "w") as fh:
        fh.write(
            "# Operation counts: Turney80 (Turney, Mudge & Lee) vs jaxdyn's jaxprs\n\n"
            "Revolute chains of n links; jaxdyn columns count multiplications / additions in the jaxpr "
            "(scan bodies x length, dot_general as m*n*k). jaxdyn's kernels are general (6D spatial algebra, "
            "trees, any joint type), so their constants are larger than the paper's hand-tuned DH recursion; "
            "the growth rates are the point.\n\n" + table + "\n"
        )
    with open(os.path.join(args.out, "op_counts.json"), "w") as fh:
        json.dump(rows, fh, indent=1)
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no plot")
        return 0
    fig, ax = plt.subplots(figsize=(7, 5))
    n = np.array([r["n"] for r in rows])
    tot = lambda key: np.array([sum(r[key][:2]) if key in r else np.nan for r in rows], float)
    ax.loglog(n, tot("paper_newton_euler"), "k--", label="Newton-Euler, Turney80 (108n-12 + 100n-9)")
    ax.loglog(n, tot("paper_lagrange"), "k:", label="Lagrange, Turney80 (O(n^3))")
    for key, style in (("rnea", "o-"), ("aba", "s-"), ("crba", "^-"), ("lagrange", "d-")):
        ax.loglog(n, tot(key), style, label=f"jaxdyn {key} (jaxpr count)")
    ax.set_xlabel("links n")
    ax.set_ylabel("multiplications + additions")
    ax.set_title("Operation counts: O(n) recursions vs O(n^2) CRBA vs O(n^3) Lagrange")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(args.out, "op_counts.png"), dpi=120)
    print(f"wrote {args.out}/op_counts.{{md,json,png}}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
