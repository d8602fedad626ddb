"""The speed issue's targets, read off the harness's result files.

Reads one or more results JSONs written by ``benchmarks/run.py`` (``jaxdyn bench``) and prints,
per target, the best measured jaxdyn path, its ratios to the peers measured in the same run, and
a verdict (met / missed / not measured). Nothing is re-timed: every number comes from a row of
the given files, and every ratio from that row's own peer timings, or, where its run did not time
a peer, from the same case's peer timing in another of the files (marked "peer: <file>").

    python benchmarks/targets.py benchmarks/results/gpu-2026-11-23-h100-*.json --out status.md
    python benchmarks/targets.py results/gpu-*.json --merge results/gpu-DATE-h100-merged \\
        --note "merged from parts 7a-7d"

``--merge STEM`` also writes the rows of all files as one results file (``STEM.json``, ``.md``,
``.png`` with :func:`harness.plot_json`); a row measured again in a later file (same
algorithm, robot, dtype, batch and traversal) replaces the earlier one. Each row keeps the file
it came from in ``source``.

GPU targets (float32, batches 131,072 and 1,048,576): ABA and RNEA >= 3x frax, CRBA >= frax,
>= 10x MJX (all three), the Jacobian of ABA >= 3x frax's ``jacfwd``, batch-1 ``aba`` <= 0.2 ms,
panda ABA peak memory at 2^20 <= 2 GB, stretch: a fused ABA/RNEA >= 1e9 samples/s for an arm.
CPU targets (batch 4,096): ``aba`` per sample <= Pinocchio's call from Python (panda, talos);
compile time of ``aba`` for talos floating <= 5 s. Fused rows also report their largest
``rel_err_vs_generic`` (correctness in the same run).
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

FAMILIES = {
    "aba": ("aba", "aba_soa", "aba_pallas"),
    "rnea": ("rnea", "rnea_soa", "rnea_pallas"),
    "crba": ("crba", "crba_soa", "crba_pallas"),
    "aba_jacobian": ("aba_jacobian", "aba_jacobian_soa", "aba_jacobian_pallas"),
}
FRAX_MIN = {"aba": 3.0, "rnea": 3.0, "crba": 1.0, "aba_jacobian": 3.0}
MJX_MIN = 10.0
BIG = (131072, 1048576)


def load(paths):
    """Rows of the files, later files replacing earlier rows of the same case; and the envs."""
    rows, envs = {}, []
    for p in paths:
        with open(p) as fh:
            res = json.load(fh)
        envs.append((os.path.basename(p), res["env"]))
        tag = os.path.splitext(os.path.basename(p))[0]
        for r in res["rows"]:
            r = dict(r)
            r.setdefault("source", tag)
            r.setdefault("device", res["env"].get("device", ""))
            rows[(r["algo"], r["robot"], r["dtype"], r["batch"], r.get("traversal"))] = r
    return list(rows.values()), envs


def _best(rows, family, robot, batch, dtype="float32"):
    cand = [
        r
        for r in rows
        if r["algo"] in FAMILIES[family] and r["robot"] == robot and r["batch"] == batch and r["dtype"] == dtype
    ]
    return max(cand, key=lambda r: r["samples_per_s"]) if cand else None


def _peer_ratio(rows, r, family, peer):
    """``(ratio, note)``: the best row's ratio to ``peer`` from its own run, or, where that run
    did not time the peer, against the peer's throughput in another run of the same case on the
    same device (marked: a cross-run ratio is weaker evidence)."""
    if r.get(peer):
        return r["samples_per_s"] / r[peer]["samples_per_s"], ""
    other = [
        x
        for x in rows
        if x["algo"] in FAMILIES[family]
        and x["robot"] == r["robot"]
        and x["batch"] == r["batch"]
        and x["dtype"] == r["dtype"]
        and x.get(peer)
        and x.get("device") == r.get("device")
    ]
    if not other:
        return None, ""
    o = other[-1]
    return r["samples_per_s"] / o[peer]["samples_per_s"], f" (peer: {o['source']})"


def _verdict(x, need):
    if x is None:
        return "not measured"
    return "met" if x >= need else "**missed**"


def status(rows):
    """Markdown lines: one table of the GPU rows (or CPU, by the rows' device), verdicts."""
    robots = sorted({r["robot"] for r in rows}, key=lambda s: (s.startswith("chain"), len(s), s))
    out = [
        "| target | robot | batch | best jaxdyn path | samples/s | x frax | verdict vs frax | x MJX | "
        "verdict vs MJX (>= 10x) | rel. err vs generic | source |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for family in FAMILIES:
        for robot in robots:
            for batch in BIG:
                r = _best(rows, family, robot, batch)
                if r is None:
                    continue
                fr, fnote = _peer_ratio(rows, r, family, "frax")
                mr, mnote = _peer_ratio(rows, r, family, "mjx")
                need = FRAX_MIN[family]
                vm = _verdict(mr, MJX_MIN) if family != "aba_jacobian" else "-"
                out.append(
                    f"| {family} >= {need:g}x frax | {robot} | {batch} | {r['algo']} ({r.get('traversal')}) | "
                    f"{r['samples_per_s']:.3g} | {_f(fr)}{fnote} | {_verdict(fr, need)} | {_f(mr)}{mnote} | {vm} | "
                    f"{_f(r.get('rel_err_vs_generic'), '.1e')} | {r['source']} |"
                )
    out += ["", "| target | case | measured | verdict | source |", "|---|---|---|---|---|"]
    if any(r.get("device", "").startswith("cpu") and r["batch"] == 1 for r in rows):
        out.append(
            "| (CPU batch-1 rows below are the harness's default set-up; the 20 us target's recipe, "
            "sync dispatch and the latency traversal, is timed by benchmarks/latency.py) | | | | |"
        )
    for r in sorted(
        (r for r in rows if r["algo"] in FAMILIES["aba"] and r["batch"] == 1 and r["dtype"] == "float32"),
        key=lambda r: (r["robot"], r["batch_s"]),
    ):
        bound = 2e-4 if r.get("device", "").startswith("gpu") else 2e-5  # the GPU and the CPU targets
        out.append(
            f"| batch-1 jitted aba <= {bound * 1e6:.0f} us | {r['algo']} {r['robot']} ({r.get('traversal')}) | "
            f"{r['batch_s'] * 1e6:.1f} us | {'met' if r['batch_s'] <= bound else 'missed by this path'} | "
            f"{r['source']} |"
        )
    for r in rows:
        if r["algo"] in FAMILIES["aba"] and r["robot"] == "panda" and r["batch"] == 1048576 and r.get("peak_bytes"):
            out.append(
                f"| peak memory, panda ABA 2^20 <= 2 GB | {r['algo']} | {r['peak_bytes'] / 1e9:.2f} GB | "
                f"{'met' if r['peak_bytes'] <= 2e9 else '**missed**'} | {r['source']} |"
            )
    for r in rows:
        if (
            r["algo"] in ("aba_pallas", "rnea_pallas")
            and r["robot"] in ("ur5", "panda")
            and r["dtype"] == "float32"
            and r["batch"] in BIG
        ):
            out.append(
                f"| stretch: fused >= 1e9 samples/s (arm) | {r['algo']} {r['robot']} {r['batch']} | "
                f"{r['samples_per_s']:.3g}/s, rel. err {_f(r.get('rel_err_vs_generic'), '.1e')} | "
                f"{'met' if r['samples_per_s'] >= 1e9 else 'not at this batch'} | {r['source']} |"
            )
    for robot in robots:  # CPU: the best path's time per sample against Pinocchio's call from Python
        cand = [
            r
            for r in rows
            if r["algo"] in FAMILIES["aba"]
            and r["robot"] == robot
            and r["batch"] == 4096
            and r["dtype"] == "float32"
            and r.get("ratio_vs_pinocchio") is not None
        ]
        if cand:
            r = max(cand, key=lambda r: r["ratio_vs_pinocchio"])
            others = ", ".join(
                f"{x['algo']} {x['ratio_vs_pinocchio']:.2f}x ({x['source']})" for x in cand if x is not r
            )
            out.append(
                f"| CPU aba per sample <= Pinocchio per call (batch 4096) | {r['algo']} {robot} | "
                f"{r['ratio_vs_pinocchio']:.2f}x; other rows: {others or '-'} | "
                f"{'met' if r['ratio_vs_pinocchio'] >= 1 else '**missed**'} | {r['source']} |"
            )
    for r in rows:
        if r["algo"] == "aba" and r["robot"].startswith("talos") and r["robot"] != "talos:fixed":
            out.append(
                f"| compile of aba, talos floating <= 5 s | {r['robot']} batch {r['batch']} | "
                f"{r['compile_s']:.1f} s | {'met' if r['compile_s'] <= 5 else '**missed**'} | {r['source']} |"
            )
    return out


def _f(x, spec=".2f"):
    return "n/a" if x is None else format(x, spec)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("files", nargs="+", help="results JSONs of benchmarks/run.py")
    p.add_argument("--out", help="also write the status table to this markdown file")
    p.add_argument("--merge", help="write the merged rows as STEM.json/.md/.png")
    p.add_argument("--note", default="", help="a note for the merged file's env")
    args = p.parse_args(argv)
    rows, envs = load(args.files)
    lines = [f"# Targets of the speed issue, from {len(args.files)} result file(s)", ""]
    lines += [f"- `{name}`: {env.get('device')}, jax {env.get('jax')}, {env.get('date')}" for name, env in envs]
    lines += [""] + status(rows)
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        with open(args.out, "w") as fh:
            fh.write(text)
    if args.merge:
        import harness as bench

        env = dict(envs[-1][1])
        env["note"] = (args.note + " " if args.note else "") + "merged from " + ", ".join(n for n, _ in envs)
        with open(args.merge + ".json", "w") as fh:
            json.dump({"env": env, "rows": rows, "failed": []}, fh, indent=1)
        bench.plot_json(args.merge + ".json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
