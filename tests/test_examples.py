"""The examples run end to end at reduced size (``--quick``) and reach what they claim.

Each example runs in a subprocess: the examples enable float64 themselves, which would leak into
the other tests in-process. The subprocess inherits ``XLA_FLAGS`` from ``conftest.py`` (and a
persistent compilation cache where the environment configures one). Outputs go to ``tmp_path`` (``--out``), never to
``examples/output``. Each example is its own class, so that ``--dist loadscope`` would also spread
them over the workers.
"""

import json
import os
import re
import subprocess
import sys

import jax
import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_example(name, out, *args):
    """Run ``examples/<name> --quick --out <out> *args`` in ``out``; its stdout (exit status 0)."""
    env = dict(os.environ, MPLBACKEND="Agg")
    cache = jax.config.jax_compilation_cache_dir  # none in this suite (tests/conftest.py)
    if cache:
        env.setdefault("JAX_COMPILATION_CACHE_DIR", cache)
        env.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0.2")
    cmd = [sys.executable, os.path.join(ROOT, "examples", name), "--quick", "--out", str(out), *args]
    r = subprocess.run(cmd, cwd=out, env=env, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, f"{name} exited with {r.returncode}\n{r.stdout[-4000:]}\n{r.stderr[-4000:]}"
    return r.stdout


def numbers(pattern, text):
    """The float groups of the first match of ``pattern`` in ``text`` (fails when absent)."""
    m = re.search(pattern, text)
    assert m, f"no line matches {pattern!r} in:\n{text[-4000:]}"
    return [float(g) for g in m.groups()]


def written(out, *names):
    for n in names:
        path = os.path.join(out, n)
        assert os.path.isfile(path) and os.path.getsize(path) > 0, f"{n} missing or empty in {out}"


NUM = r"([-+0-9.eE]+)"


def videos(out, *names):
    """The examples' MP4s of the real geometry, where the extra jaxdyn[render] and an offscreen
    OpenGL are installed (.ci/run installs them); else the examples say why none was written."""
    from test_render import _REASON

    if _REASON is None:
        written(out, *names)


class TestViewRobots:
    def test_pictures_show_the_robots(self, tmp_path):
        from PIL import Image

        run_example("view_robots.py", tmp_path)
        written(tmp_path, "robots.png", "panda.gif")
        grid = np.asarray(Image.open(tmp_path / "robots.png").convert("RGB"))
        assert len(np.unique(grid.reshape(-1, 3), axis=0)) > 100  # drawn, not blank
        with Image.open(tmp_path / "panda.gif") as gif:
            assert gif.n_frames == 12  # one frame per sample of the quick trajectory
            assert len(gif.convert("RGB").getcolors(1 << 16) or ()) > 20


class TestTrainPendulum:
    def test_return_improves(self, tmp_path):
        out = run_example("train_pendulum.py", tmp_path)
        written(tmp_path, "train_pendulum_curve.png", "train_pendulum.gif")
        first, last = numbers(rf"return {NUM} -> {NUM} in", out)
        assert last > first + 0.2 * abs(first), (first, last)


class TestTrajoptDoublePendulum:
    def test_swing_up(self, tmp_path):
        out = run_example("trajopt_double_pendulum.py", tmp_path)
        stem = "trajopt_double_pendulum"
        written(tmp_path, f"{stem}.png", f"{stem}.gif", f"{stem}_cost.png")
        videos(tmp_path, f"{stem}.mp4")
        J0, J = numbers(rf"cost {NUM} -> {NUM},", out)
        assert J < 0.1 * J0, (J0, J)
        q = numbers(rf"final q = \[\s*{NUM}\s+{NUM}\s*\] rad", out)
        assert max(abs(v) for v in q) < 0.3, q  # upright (from q = (pi, 0), hanging)
        (err,) = numbers(rf"sim.rollout vs iLQR states {NUM}", out)
        assert err < 1e-8


class TestMPCUR5:
    def test_tracks_the_moving_target_in_closed_loop(self, tmp_path):
        out = run_example("mpc_ur5.py", tmp_path)
        written(tmp_path, "mpc_ur5.png", "mpc_ur5.gif")
        mean, worst = numbers(rf"tracking error after 1 s: mean {NUM} mm, max {NUM} mm", out)
        assert worst < 5.0, (mean, worst)
        (iters,) = numbers(rf"fddp iterations per step: mean {NUM},", out)
        assert iters <= 3.0
        numbers(rf"solve time per replanning step: wall median {NUM} ms", out)


class TestTrajoptContactLift:
    def test_lifts_through_the_ground(self, tmp_path):
        out = run_example("trajopt_contact_lift.py", tmp_path)
        written(tmp_path, "trajopt_contact_lift.png")
        assert "converged" in out
        (dz,) = numbers(rf"torso height change {NUM} m", out)
        assert abs(dz - 0.1) < 5e-3, dz
        rise, drop = numbers(rf"centre of mass: rises {NUM} m with the ground; .* drop it {NUM} m", out)
        assert rise > 0.08 and drop > 1.0, (rise, drop)


class TestTrajoptPush:
    def test_pushes_the_box_through_the_fingertip(self, tmp_path):
        out = run_example("trajopt_push.py", tmp_path)
        written(tmp_path, "trajopt_push.png")
        assert "converged" in out
        moved, sideways = numbers(rf"box moved {NUM} m \(target 0.1\), sideways {NUM} m", out)
        assert abs(moved - 0.1) < 3e-3 and abs(sideways) < 3e-3, (moved, sideways)
        (apart,) = numbers(rf"without the fingertip's contact move the box {NUM} m", out)
        assert abs(apart) < 5e-4
        decel, mu_g = numbers(rf"decelerates at {NUM} m/s\^2 \(mu g = {NUM}\)", out)
        assert abs(decel - mu_g) < 0.03 * mu_g


class TestTrajoptPanda:
    def test_reach_with_less_effort_than_the_baseline(self, tmp_path):
        out = run_example("trajopt_panda.py", tmp_path)
        written(tmp_path, "trajopt_panda.png", "trajopt_panda_cost.png", "trajopt_panda.gif")
        videos(tmp_path, "trajopt_panda.mp4")
        J0, J = numbers(rf"cost {NUM} -> {NUM},", out)
        assert J < 0.1 * J0, (J0, J)
        (mm,) = numbers(rf"final tool-point error {NUM} mm", out)
        assert mm < 10.0
        (share,) = numbers(rf"iLQR uses {NUM}% of it", out)
        assert share < 100.0
        (err,) = numbers(rf"sim.rollout vs iLQR states {NUM}", out)
        assert err < 1e-8


class TestSysidPanda:
    def test_identified_urdf_nearer_the_truth(self, tmp_path):
        out = run_example("sysid_panda.py", tmp_path)
        written(
            tmp_path,
            "panda_sysid.npz",
            "panda_sysid.csv",
            "panda_identified.urdf",
            "base_parameters.png",
            "torque_panda_joint2.png",
        )
        # base-parameter error in units of its noise-induced spread: identified URDF vs nominal
        chi, chi0 = numbers(rf"CLI exit status 0; .* = {NUM} \(nominal URDF: {NUM}\)", out)
        assert chi < 10.0 and chi < 1e-3 * chi0, (chi, chi0)


class TestSysidRecorded:
    def test_after_beats_before_and_the_excitation_design_helps(self, tmp_path):
        out = run_example("sysid_recorded.py", tmp_path)
        written(
            tmp_path,
            "sysid_recorded_excitation.csv",
            *(f"sysid_recorded_{k}.png" for k in ("excitation", "filter", "masses", "torques", "uncertainty")),
        )
        # held-out rigid-body torque RMSE against the truth [N m]
        (nominal,) = numbers(rf"\n  nominal\s+{NUM}", out)
        (before,) = numbers(rf"\n  before: consistent\s+{NUM}", out)
        (after,) = numbers(rf"\n  after: consistent\s+{NUM}", out)
        assert after < 0.2 * before < 0.2 * nominal, (nominal, before, after)
        c0, c = numbers(rf"base regressor {NUM} \(random start\) -> {NUM}", out)
        assert c < c0


class TestTrainQuadruped:
    def test_trains_and_draws_the_walk(self, tmp_path):
        """Brax's PPO on the Solo12 joystick task through jaxdyn.envs.adapters.to_brax, with
        domain randomisation, end to end at the smallest size: finite evaluation returns, a wall
        budget (--minutes) that stops the run at its first evaluation with the policy saved, the
        run continued from it for one more epoch (--resume), then the learning curve, the GIF of
        the walk with its contact forces, and run.json drawn from the saved run (--render).
        Learning itself needs a longer run (docs/rl.md)."""
        pytest.importorskip("brax.training.agents.ppo.train", reason="Brax not installed (extra 'rl')")
        out = run_example(
            "train_quadruped.py",
            tmp_path,
            "--timesteps",
            "3840",
            "--evals",
            "3",
            "--minutes",
            "0",
            "--no-render",
            "--obs-noise",
            "1",
        )
        run = json.loads((tmp_path / "run.json").read_text())
        assert run["config"]["obs_noise"] == 1.0  # Playground's noise, kept by --resume and --render
        assert run["stopped_by_wall_budget"] and [c["steps"] for c in run["curve"]][0] == 0
        assert len(run["curve"]) == 2 and all(np.isfinite(c["ret"]) for c in run["curve"])
        assert not (tmp_path / "walk.gif").exists() and (tmp_path / "params.pkl").is_file()
        # continued for one more epoch from the saved policy: the curve and the steps go on
        first = run["curve"][-1]["steps"]
        args = ("--resume", str(tmp_path), "--out", str(tmp_path), "--timesteps", "3840", "--evals", "3")
        out += run_example("train_quadruped.py", tmp_path, *args, "--minutes", "0", "--no-render")
        run = json.loads((tmp_path / "run.json").read_text())
        assert run["resumed_at"] == [first] and len(run["curve"]) == 3 and run["curve"][-1]["steps"] == 2 * first
        out += run_example("train_quadruped.py", tmp_path, "--render", str(tmp_path))
        written(tmp_path, "learning_curve.png", "walk.gif", "run.json")
        videos(tmp_path, "walk.mp4")
        run = json.loads((tmp_path / "run.json").read_text())
        assert run["walk"]["steps"] == 150 and np.isfinite(run["walk"]["ret"])
        assert run["walk"]["policy_steps"] == run["curve"][-1]["steps"] > 0
        # the tracking measurement: one row per command, duty factors in [0, 1]
        assert len(run["tracking"]) == 5 and all(np.isfinite(r["velocity"]).all() for r in run["tracking"])
        assert all(0 <= d <= 1 for r in run["tracking"] for d in r["duty"])
        assert "non-finite" not in out


class TestShippedQuadrupedPolicy:
    def test_the_shipped_policy_walks_every_command(self, tmp_path):
        """The policy trained on a GPU and shipped in examples/output/quadruped_gpu (docs/rl.md),
        redrawn and measured by --render on this machine's physics: on the nominal robot it
        tracks each of the five commands to 0.03 m/s or rad/s over the second half of 3 s,
        without terminating. A change to the physics step that breaks the published walk fails
        here (the policy then needs training again)."""
        pytest.importorskip("brax.training.agents.ppo.train", reason="Brax not installed (extra 'rl')")
        import shutil

        src = os.path.join(ROOT, "examples", "output", "quadruped_gpu")
        for name in ("params.pkl", "run.json"):
            shutil.copy(os.path.join(src, name), tmp_path / name)
        run_example("train_quadruped.py", tmp_path, "--render", str(tmp_path))
        written(tmp_path, "learning_curve.png", "walk.gif")
        videos(tmp_path, "walk.mp4")
        run = json.loads((tmp_path / "run.json").read_text())
        assert len(run["tracking"]) == 5
        for r in run["tracking"]:
            assert not r["terminated"], r
            np.testing.assert_allclose(r["velocity"], r["command"], rtol=0, atol=0.03, err_msg=str(r))
            assert all(0.5 < d < 0.95 for d in r["duty"]), r  # stepping, not standing
