"""The benchmark harness runs end to end on a tiny case and writes its three result files."""

import json
import os

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
    out = capsys.readouterr().out
    assert "rnea_soa" in out and "samples/s" in out
