"""Published URDFs as they are (imperfect inertias, meshes, mimic joints) against Pinocchio,
and the loader's inertia policies ``warn`` / ``strict`` / ``fix``."""

import os
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxdyn
from jaxdyn import algorithms
from jaxdyn.io import inertia as inertia_mod
from jaxdyn.io.errors import InertiaWarning, LoadError

HERE = os.path.dirname(__file__)
URDFS = os.path.join(HERE, "data", "urdf_published")
REF = os.path.join(HERE, "data", "pinocchio_published")
CASES = ("allegro_left_hand", "anymal_c", "bolt", "hyq_no_sensors", "pr2", "tiago", "romeo_small")


def _load(name, **kw):
    ref = np.load(os.path.join(REF, f"{name}.npz"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = jaxdyn.load_urdf(os.path.join(URDFS, f"{name}.urdf"), floating_base=bool(ref["floating"]), **kw)
    return model, ref, [w for w in caught if issubclass(w.category, InertiaWarning)]


def _perm(model, ref):
    """Index maps from the reference's (Pinocchio's) joint order to jaxdyn's q and v."""
    pq, pv = [], []
    for n in ref["joint_names"]:
        sq, sv = model.joint_q_slice(str(n)), model.joint_v_slice(str(n))
        pq += list(range(sq.start, sq.stop))
        pv += list(range(sv.start, sv.stop))
    return np.array(pq), np.array(pv)


def _make_dynamics(crba, rnea, aba):
    @jax.jit
    def dynamics(model, q, v, a, tau):
        f = lambda q, v, a, tau: (crba(model, q), rnea(model, q, v, a), aba(model, q, v, tau))
        return jax.vmap(f)(q, v, a, tau)

    return dynamics


# every file: the per-sample algorithms; float32: the public functions, whose batch runs the kernels
_dynamics = _make_dynamics(algorithms.crba.crba, algorithms.rnea.rnea, algorithms.aba.aba)
_dynamics_public = _make_dynamics(jaxdyn.crba, jaxdyn.rnea, jaxdyn.aba)


def _compare(model, ref, dynamics=_dynamics):
    pq, pv = _perm(model, ref)
    K, nq = ref["q"].shape
    q = np.zeros((K, model.nq))
    q[:, pq] = ref["q"]
    to = lambda x: np.zeros_like(x).at[..., pv].set(x) if isinstance(x, jnp.ndarray) else _scatter(x, pv)
    v, a, tau = (to(ref[k]) for k in ("v", "a", "tau"))
    dt = model.dtype
    M, rnea, aba = dynamics(model, *(jnp.asarray(x, dt) for x in (q, v, a, tau)))
    M = np.asarray(M, np.float64)[:, pv][:, :, pv]
    return M, np.asarray(rnea, np.float64)[:, pv], np.asarray(aba, np.float64)[:, pv]


def _scatter(x, idx):
    out = np.zeros_like(x)
    out[..., idx] = x
    return out


def _rel(a, b):
    return float(np.max(np.abs(a - b)) / max(1.0, np.max(np.abs(b))))


@pytest.mark.parametrize("name", CASES)
def test_matches_pinocchio_as_written(name):
    """``inertia="warn"`` loads the file as written, as Pinocchio does: same M, RNEA and ABA."""
    model, ref, warns = _load(name)
    M, rnea, aba = _compare(model, ref)
    assert _rel(M, ref["M"]) < 1e-10
    assert _rel(rnea, ref["rnea"]) < 1e-10
    # ABA solves with M: scale the tolerance by its conditioning
    cond = max(np.linalg.cond(m) for m in ref["M"])
    assert _rel(aba, ref["aba"]) < 1e-13 * cond + 1e-10, (cond, _rel(aba, ref["aba"]))


def test_float32_matches_pinocchio():
    model, ref, _ = _load("anymal_c", dtype=jnp.float32)
    M, rnea, aba = _compare(model, ref, _dynamics_public)
    assert _rel(M, ref["M"]) < 1e-5 and _rel(rnea, ref["rnea"]) < 1e-4
    assert np.max(np.abs(aba - ref["aba"]) / (1 + np.abs(ref["aba"]))) < 1e-3


def test_warn_names_every_inconsistent_link_once():
    _, _, warns = _load("anymal_c")
    assert len(warns) == 1
    text = str(warns[0].message)
    for link in (
        "depth_camera_front_camera",
        "depth_camera_rear_camera",
        "depth_camera_left_camera",
        "depth_camera_right_camera",
        "hatch",
    ):
        assert f"link '{link}'" in text
    assert "triangle inequality" in text and "50.7% of I3" in text
    _, _, clean = _load("pr2", inertia="warn")
    assert "sensor_mount_link" in str(clean[0].message)


def test_consistent_file_does_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error", InertiaWarning)
        jaxdyn.load_robot("panda")


@pytest.mark.parametrize(
    "name, link",
    [
        ("anymal_c", "depth_camera_front_camera"),
        ("hyq_no_sensors", "base_link"),
        ("tiago", "base_antenna_left_link"),
        ("bolt", "FL_FOOT"),
    ],
)
def test_strict_refuses_naming_the_link(name, link):
    with pytest.raises(jaxdyn.URDFError, match=f"link '{link}' <inertial>.*inertia='strict'"):
        _load(name, inertia="strict")


@pytest.mark.parametrize("name", ["anymal_c", "hyq_no_sensors", "tiago", "pr2", "romeo_small", "allegro_left_hand"])
def test_fix_repairs_and_reports(name):
    warn_model, _, _ = _load(name)
    model, _, warns = _load(name, inertia="fix")
    assert len(warns) == 1 and "repaired" in str(warns[0].message)
    # masses and centres of mass are untouched; every body is now physically consistent
    np.testing.assert_array_equal(np.asarray(model.mass), np.asarray(warn_model.mass))
    np.testing.assert_array_equal(np.asarray(model.com), np.asarray(warn_model.com))
    for b in range(model.nb):
        problem = inertia_mod.inconsistency(float(model.mass[b]), np.asarray(model.inertia[b], np.float64))
        assert problem is None, (model.body_names[b], problem)
    changed = [b for b in range(model.nb) if not np.allclose(model.inertia[b], warn_model.inertia[b], rtol=0, atol=0)]
    # tiago's repaired links hang from its fixed base: they take no part in the dynamics
    assert (name == "tiago" or len(changed) > 0) and len(changed) <= str(warns[0].message).count("\n")


def test_repair_rules():
    I, what = inertia_mod.repair(1.0, np.diag([0.001, 0.001, 0.01]))  # triangle fails: balance
    np.testing.assert_allclose(I, 0.004 * np.eye(3))
    assert "balanced" in what
    R = np.linalg.qr(np.random.default_rng(0).normal(size=(3, 3)))[0]
    I0 = R @ np.diag([-1e-3, 2.0, 2.0]) @ R.T  # clamp only, axes kept
    I, what = inertia_mod.repair(1.0, I0)
    np.testing.assert_allclose(I, R @ np.diag([0.0, 2.0, 2.0]) @ R.T, atol=1e-12)
    assert "clamped" in what and "balanced" not in what
    assert inertia_mod.inconsistency(0.3, np.diag([-1e-21, 1e-21, 0.0])) is None  # round-off of a point mass
    assert inertia_mod.repair(1.0, np.diag([1.0, 2.0, 2.5])) == (pytest.approx(np.diag([1.0, 2.0, 2.5])), None)
    with pytest.raises(ValueError, match="inertia must be one of"):
        jaxdyn.load_robot("ur5", inertia="lenient")


def test_massless_moving_subtree_still_refused():
    """romeo.urdf moves finger links that carry no mass: M is singular, so it stays refused."""
    with pytest.raises(jaxdyn.URDFError, match="joint 'LHand' moves link 'LFinger11Link'.*no mass"):
        jaxdyn.load_urdf(os.path.join(URDFS, "romeo.urdf"), floating_base=True)


ROBOT = """<robot name="r" xmlns:xacro="http://www.ros.org/wiki/xacro">
  <link name="base"><visual><geometry><mesh filename="{mesh}"/></geometry></visual>
    <inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="arm"><collision><geometry><mesh filename="{mesh}" scale="1 1 1"/></geometry></collision>
    <inertial><origin xyz="0 0 0.2"/><mass value="2"/><inertia ixx="0.1" iyy="0.1" izz="0.05" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="j" type="revolute"><parent link="base"/><child link="arm"/><axis xyz="0 1 0"/>
    <limit lower="-1" upper="1" effort="10" velocity="2"/></joint>
</robot>"""


def test_mesh_references_do_not_matter():
    """Mesh files that are not there are warned about by link and file; the dynamics do not
    depend on them."""
    models = []
    for m in ("package://no_such_pkg/meshes/arm.dae", "file:///no/such/file.stl", "relative/missing.obj"):
        with pytest.warns(UserWarning, match=r"link 'arm' <collision> 1: .*not found"):
            models.append(jaxdyn.load_urdf(ROBOT.format(mesh=m), floating_base=True))
    for m in models[1:]:
        for a, b in zip(jax.tree_util.tree_leaves(m), jax.tree_util.tree_leaves(models[0])):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


@pytest.mark.parametrize(
    "text",
    [
        '<robot name="r" xmlns:xacro="http://www.ros.org/wiki/xacro"><xacro:include filename="arm.xacro"/><link name="a"/></robot>',
        '<robot name="r"><link name="a"><inertial><mass value="${m}"/></inertial></link></robot>',
        '<robot name="r"><xacro:macro name="leg"/></robot>',
    ],
)
def test_xacro_is_refused_with_advice(text):
    with pytest.raises(LoadError, match="xacro.*expand"):
        jaxdyn.load_urdf(text)


def test_single_body_suggests_floating_base():
    text = '<robot name="r"><link name="a"><inertial><mass value="1"/><inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial></link></robot>'
    with pytest.raises(jaxdyn.URDFError, match="floating_base=True"):
        jaxdyn.load_urdf(text)
    assert jaxdyn.load_urdf(text, floating_base=True).nv == 6


def test_load_robot_reaches_example_robot_data():
    from jaxdyn import robots

    if not robots.external_robots():
        pytest.skip("example-robot-data is not installed")
    m = jaxdyn.load_robot("go2")
    assert m.floating_base and m.nv == 18
    assert not jaxdyn.load_robot("z1").floating_base
    assert robots.robot_path("anymal_c_simple/anymal").endswith("anymal.urdf")
    # a shipped name shadows the published file; its package/stem form reaches it
    assert robots.robot_path("solo12") != robots.robot_path("solo/solo12")
    assert "example-robot-data" in robots.robot_path("solo/solo12") and robots.default_floating("solo/solo12")
    with pytest.raises(KeyError, match="anymal_b_simple/anymal"):
        jaxdyn.load_robot("anymal")


def test_load_robot_without_the_extra_says_how(monkeypatch):
    from jaxdyn import robots

    monkeypatch.setattr(robots, "external_index", lambda: {})
    with pytest.raises(KeyError, match=r'pip install "jaxdyn\[robots\]"'):
        jaxdyn.load_robot("go2")
