"""The benchmark harness runs end to end on a tiny case and writes its three result files."""

import json
import os

import pytest

from jaxdyn import bench


def test_harness_writes_results(tmp_path, capsys):
    rc = bench.main(["--robots", "double_pendulum", "--algos", "aba,rnea_soa", "--batches", "1,3",
                     "--repeats", "2", "--peers", "", "--out", str(tmp_path), "--tag=-smoke"])
    assert rc == 0
    files = sorted(os.listdir(tmp_path))
    assert [f.rsplit(".", 1)[1] for f in files] == ["json", "md", "png"], files
    with open(tmp_path / files[0]) as fh:
        res = json.load(fh)
    assert {(r["algo"], r["batch"]) for r in res["rows"]} == {("aba", 1), ("aba", 3), ("rnea_soa", 1), ("rnea_soa", 3)}
    for r in res["rows"]:
        assert r["samples_per_s"] > 0 and r["compile_s"] > 0 and r["ratio_vs_best_peer"] is None
        assert r["program_bytes"] > 0  # XLA buffer assignment, reported on CPU too
    out = capsys.readouterr().out
    assert "rnea_soa" in out and "samples/s" in out


def test_harness_reports_failed_cases_and_headline(tmp_path, monkeypatch):
    """A case that raises (e.g. out of device memory) is reported and the run goes on; the
    markdown has the headline table (the faster jaxdyn path per case)."""
    real = bench.time_jaxdyn

    def flaky(model, algo, B, repeats):
        if B == 3:
            raise RuntimeError("RESOURCE_EXHAUSTED: out of memory (simulated)")
        return real(model, algo, B, repeats)

    monkeypatch.setattr(bench, "time_jaxdyn", flaky)
    rc = bench.main(["--robots", "double_pendulum", "--algos", "rnea,rnea_soa", "--batches", "1,3",
                     "--repeats", "2", "--peers", "", "--out", str(tmp_path), "--tag=-fail"])
    assert rc == 0
    stem = [f for f in os.listdir(tmp_path) if f.endswith(".json")][0][:-5]
    with open(tmp_path / f"{stem}.json") as fh:
        res = json.load(fh)
    assert {(r["algo"], r["batch"]) for r in res["rows"]} == {("rnea", 1), ("rnea_soa", 1)}
    assert [(f["algo"], f["batch"]) for f in res["failed"]] == [("rnea", 3), ("rnea_soa", 3)]
    md = open(tmp_path / f"{stem}.md").read()
    assert "RESOURCE_EXHAUSTED" in md and "## Headline" in md
    head = md.split("## Headline")[1]
    assert head.count("| rnea | double_pendulum |") == 1  # one headline row per case, the faster path


def test_console_command_passes_options(capsys):
    """``jaxdyn bench --help`` reaches the harness's own options."""
    import pytest

    from jaxdyn import cli

    with pytest.raises(SystemExit) as e:
        cli.main(["bench", "--help"])
    assert e.value.code == 0
    assert "--algos" in capsys.readouterr().out


def test_bench_rejects_unknown_algorithm():
    """An unknown algorithm name stops the harness before any case runs, naming it."""
    with pytest.raises(SystemExit, match=r"unknown algorithm\(s\) \['abba'\]"):
        bench.main(["--robots", "double_pendulum", "--algos", "aba,abba", "--batches", "2", "--no-save"])
