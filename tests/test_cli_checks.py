"""The command lines check their arguments before loading or compiling anything and answer a
mistake with one line and exit status 2; no command replaces an existing output without
``--force``, and a write that fails never replaces a good file."""

import os
import re

import numpy as np
import pytest

import jaxdyn
from jaxdyn._files import OutputExists, refuse_existing, replace_atomically
from jaxdyn.cli import main
from jaxdyn.io.urdf_write import write_urdf
from jaxdyn.robots import robot_path


@pytest.mark.parametrize(
    "argv, message",
    [
        (["demo", "--robot", "nosuchrobot"], r"jaxdyn demo: error: --robot: unknown robot 'nosuchrobot' \(closest: '"),
        (["demo", "--robot", "pandas"], r"unknown robot 'pandas' \(closest: 'panda'"),
        (["demo", "--batch", "-5"], r"jaxdyn demo: error: argument --batch: must be at least 1, got -5"),
        (["demo", "--batch", "0"], r"argument --batch: must be at least 1, got 0"),
        (["demo", "--batch", "many"], r"argument --batch: expected an integer, got 'many'"),
        (["demo", "--repeats", "0"], r"argument --repeats: must be at least 1, got 0"),
        (["excite", "panda", "--out", "x.csv", "--harmonics", "0"], r"jaxdyn excite: error: argument --harmonics"),
        (["excite", "panda", "--out", "x.csv", "--rate", "nan"], r"argument --rate: must be finite, got 'nan'"),
        (["excite", "panda", "--out", "x.csv", "--margin", "1"], r"argument --margin: must be in \[0, 1\), got '1'"),
        (["identify", "a.urdf", "b.csv", "--out", "o.urdf", "--holdout", "-0.1"], r"argument --holdout: must be in"),
        (["identify", "a.urdf", "b.csv", "--out", "o.urdf", "--dt", "0"], r"argument --dt: must be positive, got '0'"),
        (["view", "panda", "--seed", "x"], r"jaxdyn view: error: argument --seed: invalid int value: 'x'"),
    ],
)
def test_bad_arguments_get_one_line_and_exit_status_2(argv, message, capsys):
    with pytest.raises(SystemExit) as e:
        main(argv)
    err = capsys.readouterr().err
    assert e.value.code == 2
    assert len(err.strip().splitlines()) == 1, err
    assert re.search(message, err), err


def test_existing_outputs_are_refused_without_force(tmp_path, capsys):
    out = tmp_path / "keep.csv"
    out.write_text("precious")
    png = tmp_path / "keep.png"
    assert main(["excite", "panda", "--out", str(out)]) == 2
    assert f"jaxdyn excite: error: {out} exists; give --force to replace it" in capsys.readouterr().err
    out.unlink()
    png.write_text("precious plot")  # the plot written next to --out is protected as well
    assert main(["excite", "panda", "--out", str(out)]) == 2
    assert f"{png} exists" in capsys.readouterr().err
    urdf = tmp_path / "existing.urdf"
    urdf.write_text("precious")
    assert main(["identify", robot_path("double_pendulum"), "data.csv", "--out", str(urdf)]) == 2
    assert f"jaxdyn identify: error: {urdf} exists; give --force" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        main(["view", "panda", "--out", str(urdf)])
    assert e.value.code == 2 and f"jaxdyn view: error: {urdf} exists" in capsys.readouterr().err
    assert urdf.read_text() == "precious" and png.read_text() == "precious plot"
    with pytest.raises(OutputExists, match=r"the output .* is a directory"):
        refuse_existing([str(tmp_path)], force=True)


def test_a_failed_write_leaves_the_old_file(tmp_path):
    path = tmp_path / "model.urdf"
    path.write_text("good")
    with pytest.raises(RuntimeError, match="disk full"), replace_atomically(path) as tmp:
        with open(tmp, "w") as fh:
            fh.write("half")
        raise RuntimeError("disk full")
    assert path.read_text() == "good" and os.listdir(tmp_path) == ["model.urdf"]
    # a successful write replaces the file, with the permissions a plain open() gives
    model = jaxdyn.load_robot("double_pendulum")
    write_urdf(robot_path("double_pendulum"), model, path)
    assert jaxdyn.load_urdf(str(path)).nv == 2 and os.listdir(tmp_path) == ["model.urdf"]
    umask = os.umask(0)
    os.umask(umask)
    assert os.stat(path).st_mode & 0o777 == 0o666 & ~umask


def test_view_mistakes_get_one_line_and_exit_status_2(tmp_path, capsys):
    out = str(tmp_path / "v.png")
    assert main(["view", "nosuchrobot", "--out", out]) == 2
    err = capsys.readouterr().err
    assert "jaxdyn view: error: 'nosuchrobot' is neither a shipped robot" in err and len(err.strip().splitlines()) == 1
    assert main(["view", "double_pendulum", "--q", "1", "2", "3", "--out", out]) == 2
    err = capsys.readouterr().err
    assert re.search(r"jaxdyn view: error: .*shape \(3,\)", err) and len(err.strip().splitlines()) == 1, err
    assert not os.path.exists(out)


def test_save_data_replaces_a_file_whole(tmp_path):
    from jaxdyn import sysid

    model = jaxdyn.load_robot("double_pendulum")
    t, z = np.linspace(0, 1, 50), np.zeros((50, 2))
    data = sysid.SysIdData(z, z, z, np.ones((50, 2)), t, model.joint_names)
    for name in ("d.csv", "d.npz"):
        path = tmp_path / name
        path.write_text("old")
        sysid.save_data(str(path), data)
        assert np.allclose(sysid.load_data(str(path), model).tau, 1.0)
    assert sorted(os.listdir(tmp_path)) == ["d.csv", "d.npz"]
