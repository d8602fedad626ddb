"""The benchmark harness runs end to end on a tiny case and writes its three result files."""

import json
import os

import harness as bench
import pytest


def test_harness_writes_results(tmp_path, capsys):
    rc = bench.main(
        [
            "--robots",
            "double_pendulum",
            "--algos",
            "aba,rnea_soa",
            "--batches",
            "1,3",
            "--repeats",
            "2",
            "--peers",
            "",
            "--out",
            str(tmp_path),
            "--tag=-smoke",
        ]
    )
    assert rc == 0
    files = sorted(os.listdir(tmp_path))
    assert [f.rsplit(".", 1)[1] for f in files] == ["json", "md", "png"], files
    with open(tmp_path / files[0]) as fh:
        res = json.load(fh)
    assert {(r["algo"], r["batch"]) for r in res["rows"]} == {("aba", 1), ("aba", 3), ("rnea_soa", 1), ("rnea_soa", 3)}
    for r in res["rows"]:
        assert r["samples_per_s"] > 0 and r["compile_s"] > 0 and r["ratio_vs_best_peer"] is None
        assert r["program_bytes"] > 0  # XLA buffer assignment, reported on CPU too
        # every row checked against vmap of the one-sample algorithm (jaxdyn.algorithms)
        assert r["rel_err_vs_generic"] < 1e-5, r  # float32
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
    rc = bench.main(
        [
            "--robots",
            "double_pendulum",
            "--algos",
            "rnea,rnea_soa",
            "--batches",
            "1,3",
            "--repeats",
            "2",
            "--peers",
            "",
            "--out",
            str(tmp_path),
            "--tag=-fail",
        ]
    )
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


def test_targets_status_from_result_files(tmp_path):
    """benchmarks/targets.py reads verdicts off rows: the best path per case, its same-run peer
    ratio, a peer from another file marked as such, 'not measured' without any peer timing."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "targets", os.path.join(os.path.dirname(__file__), "..", "benchmarks", "targets.py")
    )
    targets = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(targets)

    def row(algo, robot, sps, frax=None, mjx=None, err=None):
        return {
            "algo": algo,
            "robot": robot,
            "dtype": "float32",
            "batch": 131072,
            "samples_per_s": sps,
            "batch_s": 131072 / sps,
            "traversal": "scan",
            "rel_err_vs_generic": err,
            "frax": frax and {"samples_per_s": frax},
            "mjx": mjx and {"samples_per_s": mjx},
        }

    env = {"device": "gpu:test", "jax": "0", "date": "2026-01-01"}
    a = {"env": env, "rows": [row("aba", "panda", 1e7, frax=1e7, mjx=2e6), row("rnea", "talos", 1e7, frax=2e6)]}
    b = {"env": env, "rows": [row("aba_pallas", "panda", 5e8, frax=1e7, err=2e-7), row("crba", "talos", 1e7)]}
    paths = []
    for name, res in (("a", a), ("b", b)):
        paths.append(str(tmp_path / f"{name}.json"))
        with open(paths[-1], "w") as fh:
            json.dump(res, fh)
    rows, _ = targets.load(paths)
    lines = "\n".join(targets.status(rows))
    panda = next(line for line in lines.splitlines() if line.startswith("| aba >= 3x frax | panda"))
    assert "aba_pallas" in panda and "| 50.00 | met |" in panda  # same-run frax ratio
    assert "250.00 (peer: a) | met" in panda and "2.0e-07" in panda  # MJX from the other file, marked
    talos_rnea = next(line for line in lines.splitlines() if line.startswith("| rnea >= 3x frax | talos"))
    assert "| 5.00 | met |" in talos_rnea and "not measured" in talos_rnea  # no MJX timing anywhere
    talos_crba = next(line for line in lines.splitlines() if line.startswith("| crba >= 1x frax | talos"))
    assert talos_crba.count("not measured") == 2


def test_crba_frames_ab_checks_both_frames(tmp_path):
    """benchmarks/crba_frames_ab.py (the GPU A/B of the unrolled fused CRBA's body-frame and
    common-frame recursions) in Pallas interpret mode on a tiny batch: both kernels equal the
    one-sample CRBA of a floating-base robot, and the table is written."""
    import crba_frames_ab

    out = tmp_path / "ab.md"
    rows = crba_frames_ab.main(
        ["--interpret", "--batch", "8", "--rounds", "0", "--robots", "solo12", "--out", str(out)]
    )
    ((name, best, err),) = rows
    assert name == "solo12" and best == {} and err["body"] < 1e-5 and err["common"] < 1e-5
    assert "| solo12 | - | - | - |" in out.read_text()


def test_sim_step_scene_copies_drop_visual_meshes(tmp_path):
    """benchmarks/sim_step.py reads Playground's Go1 without Menagerie's meshes: the copies keep
    every other element, and MuJoCo and jaxdyn load them with the collision geoms intact."""
    mujoco = pytest.importorskip("mujoco")
    import sim_step

    import jaxdyn

    src, dst = tmp_path / "src", tmp_path / "dst"
    src.mkdir()
    (src / "scene.xml").write_text(
        """<mujoco><asset><mesh name="m" file="missing.stl"/><material name="red" rgba="1 0 0 1"/></asset>
        <worldbody><geom name="floor" type="plane" size="1 1 0.1"/>
        <body name="b" pos="0 0 1"><freejoint/><geom name="vis" type="mesh" mesh="m" contype="0" conaffinity="0"/>
        <geom name="col" type="sphere" size="0.1" material="red"/></body></worldbody></mujoco>"""
    )
    sim_step._without_meshes(str(src), str(dst))
    path = str(dst / "scene.xml")
    mm = mujoco.MjModel.from_xml_path(path)
    assert mm.nmesh == 0 and mm.ngeom == 2
    model = jaxdyn.load_mjcf(path)
    assert tuple(model.geoms.names) == ("floor", "col")


def test_harness_refuses_to_replace_a_run_without_force(tmp_path, capsys):
    """A second run of the same day and tag is refused before anything runs, naming the file."""
    import datetime

    import jax

    old = tmp_path / f"{jax.devices()[0].platform}-{datetime.date.today().isoformat()}-smoke.json"
    old.write_text("{}")
    argv = ["--robots", "double_pendulum", "--algos", "aba", "--batches", "1", "--peers", "", "--out", str(tmp_path)]
    assert bench.main([*argv, "--tag=-smoke"]) == 2
    err = capsys.readouterr().err
    assert f"jaxdyn bench: error: {old} exists (a run of the same day and tag); give --force" in err
    assert old.read_text() == "{}"
