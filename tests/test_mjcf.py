"""MJCF loader against MuJoCo's compiled models (stored values; MuJoCo is not needed here).

tests/reference/generate_mujoco_mjcf.py says what was computed and what was switched off on the
MuJoCo side. float64 comes from conftest.py (test-only x64)."""

import functools
import glob
import math
import os
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxdyn
from jaxdyn import algorithms
from jaxdyn.io import mjcf as mj
from jaxdyn.io.mjcf import MJCFError, load_mjcf

HERE = os.path.dirname(__file__)
DATA = os.path.join(HERE, "data", "mjcf")
REFS = sorted(glob.glob(os.path.join(HERE, "data", "mjcf_reference", "*.npz")))
NAMES = [os.path.basename(p)[:-4] for p in REFS]
RTOL = 1e-10
# MuJoCo computes a mesh's inertia from its processed copy of the mesh (moved to the centroid and
# turned to the principal axes): its inertia of the inline mesh differs from the exact one by
# ~3e-10 relative (the STL's by 1e-16), ~1e-11 in M, amplified to ~2e-9 in forward dynamics
# (mesh_convex, its convex hulls: 2e-12 in M, 5e-10 in forward dynamics)
RTOL_MODEL = {"mesh_exact": 1e-8, "mesh_convex": 1e-8}


def xml_path(name):
    return os.path.join(DATA, name.replace("__", os.sep) + ".xml")


def rel_err(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return float(np.max(np.abs(a - b)) / max(1.0, float(np.max(np.abs(b))))) if b.size else 0.0


def quiet_load(src, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_mjcf(src, **kw)


def free_T(q):
    """qvel_mujoco = T qd_jaxdyn for the free joint's 6 dofs."""
    R = np.asarray(jaxdyn.spatial.quat_to_rotation(jnp.asarray(q[3:7])))
    T = np.zeros((6, 6))
    T[0:3, 3:6] = R
    T[3:6, 0:3] = np.eye(3)
    return T


def _dyn(m, q, v, a, f):
    """Everything compared with MuJoCo for one state, in jaxdyn's coordinates. The recursive
    algorithms as :mod:`jaxdyn.algorithms` defines them (under ``vmap`` the public functions run
    the batch kernels, checked on an MJCF model by test_kernels_and_rollout_on_mjcf_model)."""
    vj = mj.velocity_from_mujoco(m, q, v)
    aj = jnp.stack([mj.acceleration_from_mujoco(m, q, v, a), mj.acceleration_from_mujoco(m, q, v, jnp.zeros_like(a))])
    tau = jax.vmap(lambda acc: algorithms.rnea.rnea(m, q, vj, acc))(aj)
    X = jaxdyn.forward_kinematics(m, q)
    return dict(
        M=algorithms.crba.crba(m, q),
        inv=tau[0],
        bias=tau[1],
        vj=vj,
        fwd=mj.acceleration_to_mujoco(m, q, vj, algorithms.aba.aba(m, q, vj, mj.force_from_mujoco(m, q, f))),
        XR=X.R,
        Xp=X.p,
    )


_dyn_jit = jax.jit(jax.vmap(_dyn, in_axes=(None, 0, 0, 0, 0)))


@functools.cache
def case(name, dtype=None):
    """(model, MuJoCo's values, jaxdyn's values): one compiled program per model (the static name
    and geoms, which the dynamics do not read, are dropped so that equal trees share it)."""
    r = dict(np.load(os.path.join(HERE, "data", "mjcf_reference", name + ".npz")))
    m = quiet_load(xml_path(name), dtype=dtype)
    dt = m.dtype
    out = _dyn_jit(
        m.replace(geoms=None, name="mjcf"), *(jnp.asarray(r[k], dt) for k in ("qpos", "qvel", "qacc", "qfrc_applied"))
    )
    out = {k: np.asarray(v, np.float64) for k, v in out.items()}
    # named frames from the body poses: frame = body o (frame_R, frame_p), the world for body -1
    fb = np.asarray(m.topology.frame_bodies, np.int64)
    XR = np.concatenate([out["XR"], np.broadcast_to(np.eye(3), (len(out["XR"]), 1, 3, 3))], 1)[:, fb]
    Xp = np.concatenate([out["Xp"], np.zeros((len(out["Xp"]), 1, 3))], 1)[:, fb]
    out["FR"] = XR @ np.asarray(m.frame_R, np.float64)
    out["Fp"] = np.einsum("kfij,fj->kfi", XR, np.asarray(m.frame_p, np.float64)) + Xp
    return m, r, out


def mujoco_in_jaxdyn(m, r, o, k):
    """MuJoCo's M, inverse and bias forces of state k in jaxdyn's coordinates, and MuJoCo's
    forward-dynamics qacc (in MuJoCo's coordinates, as jaxdyn's is converted back)."""
    q = r["qpos"][k]
    M = r["M"][k]
    fwd = r["forward"][k]
    if m.floating_base:
        T = np.eye(m.nv)
        T[:6, :6] = free_T(q)
        M = T.T @ M @ T
    ff = lambda x: np.asarray(mj.force_from_mujoco(m, jnp.asarray(q), jnp.asarray(x)))
    inv, bias = ff(r["inverse"][k]), ff(r["bias"][k])
    if m.floating_base and m.armature[0] != 0:
        # the documented difference of a free joint's armature (module docstring): MuJoCo's bias
        # forces hold armature * (omega x v) on the free joint's linear dofs, jaxdyn's do not
        vj = o["vj"][k]
        corr = np.concatenate([np.zeros(3), float(m.armature[3]) * np.cross(vj[:3], vj[3:6]), np.zeros(m.nv - 6)])
        inv, bias = inv - corr, bias - corr
        qdd = np.asarray(mj.acceleration_from_mujoco(m, q, r["qvel"][k], fwd)) + np.linalg.solve(o["M"][k], corr)
        fwd = np.asarray(mj.acceleration_to_mujoco(m, q, vj, qdd))
    return M, inv, bias, fwd


ERRORS = {}


@pytest.mark.parametrize("name", NAMES)
def test_dynamics_match_mujoco(name):
    """crba (+ armature), rnea and aba in float64 against MuJoCo's mj_fullM, qfrc_bias,
    mj_inverse and mj_forward (converted with the free-joint maps)."""
    m, r, o = case(name)
    assert m.nq == r["qpos"].shape[1] and m.nv == r["M"].shape[1]
    errs = dict(M=0.0, inverse=0.0, bias=0.0, forward=0.0)
    for k in range(int(r["K"])):
        M, inv, bias, fwd = mujoco_in_jaxdyn(m, r, o, k)
        errs["M"] = max(errs["M"], rel_err(o["M"][k], M))
        errs["inverse"] = max(errs["inverse"], rel_err(o["inv"][k], inv))
        errs["bias"] = max(errs["bias"], rel_err(o["bias"][k], bias))
        errs["forward"] = max(errs["forward"], rel_err(o["fwd"][k], fwd))
    ERRORS[name] = errs
    assert max(errs.values()) < RTOL_MODEL.get(name, RTOL), errs


@pytest.mark.parametrize("name", NAMES)
def test_kinematics_match_mujoco(name):
    """Named frames of MuJoCo bodies and sites, and every geom, at MuJoCo's world poses."""
    m, r, o = case(name)
    bnames = [str(n) or f"body{i}" for i, n in enumerate(r["body_names"])]
    fidx = [m.frame_index(n) for n in bnames]
    snames = [str(s) for s in r["site_names"]]
    sidx = [(i, m.frame_index(f"site:{s}" if s in bnames else s)) for i, s in enumerate(snames) if s]
    g = m.geoms
    keep = [i for i, t in enumerate(r["geom_type"]) if t != 1]  # no height fields in jaxdyn
    assert g.ng == len(keep)
    np.testing.assert_array_equal(np.asarray(g.type), r["geom_type"][keep])
    sized = np.asarray(g.type) != jaxdyn.geometry.MESH  # a mesh's size is not stored
    np.testing.assert_allclose(np.asarray(g.size)[sized], r["geom_size"][keep][sized], rtol=1e-12, atol=1e-12)
    assert [n for n in g.names] == [str(r["geom_names"][i]) for i in keep]
    gb = np.asarray(g.body, np.int64)
    nomesh = np.asarray(g.type) != jaxdyn.geometry.MESH  # MuJoCo moves a mesh's frame to its centroid
    for k in range(int(r["K"])):
        FR, Fp = o["FR"][k], o["Fp"][k]
        np.testing.assert_allclose(Fp[fidx], r["xpos"][k], atol=1e-12)
        np.testing.assert_allclose(FR[fidx], r["xmat"][k].reshape(-1, 3, 3), atol=1e-12)
        for i, f in sidx:
            np.testing.assert_allclose(Fp[f], r["site_xpos"][k][i], atol=1e-12)
            np.testing.assert_allclose(FR[f], r["site_xmat"][k][i].reshape(3, 3), atol=1e-12)
        XR = np.concatenate([o["XR"][k], np.eye(3)[None]])[gb]  # body -1 -> identity
        Xp = np.concatenate([o["Xp"][k], np.zeros((1, 3))])[gb]
        gp = np.einsum("gij,gj->gi", XR, np.asarray(g.pos)) + Xp
        gR = XR @ np.asarray(g.R)
        np.testing.assert_allclose(gp[nomesh], r["geom_xpos"][k][keep][nomesh], atol=1e-12)
        # a geom's frame is defined up to its shape's symmetry: any rotation for a sphere, one
        # about z for shapes round about z (capsules, cylinders, fromto boxes and ellipsoids)
        t, sz = np.asarray(g.type), np.asarray(g.size)
        full = (
            nomesh
            & (t != jaxdyn.geometry.SPHERE)
            & ~np.isin(t, (jaxdyn.geometry.CAPSULE, jaxdyn.geometry.CYLINDER))
            & (sz[:, 0] != sz[:, 1])
        )
        zonly = nomesh & (t != jaxdyn.geometry.SPHERE) & ~full
        mR = r["geom_xmat"][k][keep].reshape(-1, 3, 3)
        np.testing.assert_allclose(gR[full], mR[full], atol=1e-12)
        np.testing.assert_allclose(gR[zonly][:, :, 2], mR[zonly][:, :, 2], atol=1e-12)


@pytest.mark.parametrize("name", NAMES)
def test_parameters_match_mujoco(name):
    """Joint names and order, limits, armature, damping, friction loss, effort limits, gravity."""
    m, r, _ = case(name)
    names = [str(n) or f"joint{j}" for j, n in enumerate(r["joint_names"])]
    mj_types = {0: "free", 1: "spherical", 2: "prismatic", 3: "revolute"}
    # a free joint other than the first joint is three world-axis slides and a ball in jaxdyn
    want_names, want_types = [], []
    for j, (n, t) in enumerate(zip(names, r["joint_types"])):
        if int(t) == 0 and j > 0:
            want_names += [f"{n}/x", f"{n}/y", f"{n}/z", n]
            want_types += ["prismatic"] * 3 + ["spherical"]
        else:
            want_names.append(n)
            want_types.append(mj_types[int(t)])
    assert list(m.joint_names) == want_names
    assert list(m.joint_types) == want_types
    np.testing.assert_allclose(m.armature, r["dof_armature"], rtol=1e-12)
    np.testing.assert_allclose(m.damping, r["dof_damping"], rtol=1e-12)
    np.testing.assert_allclose(m.friction, r["dof_frictionloss"], rtol=1e-12)
    np.testing.assert_allclose(m.effort_limit, r["effort_limit"], rtol=1e-12)
    np.testing.assert_allclose(m.gravity, r["gravity"], rtol=1e-12)
    for j, t in enumerate(r["joint_types"]):
        if t in (2, 3):
            s = m.joint_q_slice(names[j])
            lo, hi = r["joint_range"][j] if r["joint_limited"][j] else (-np.inf, np.inf)
            assert float(m.q_lower[s][0]) == pytest.approx(lo, rel=1e-12)
            assert float(m.q_upper[s][0]) == pytest.approx(hi, rel=1e-12)


def test_agreement_summary():
    """Largest relative error per model over the float64 comparisons (printed with -s)."""
    for name in NAMES:
        if name not in ERRORS:
            test_dynamics_match_mujoco(name)
    print("\nmax relative error vs MuJoCo (float64):")
    for name, e in sorted(ERRORS.items()):
        print(f"  {name:24s} " + " ".join(f"{k}={v:.1e}" for k, v in e.items()))
        assert max(e.values()) < RTOL_MODEL.get(name, RTOL)


def test_float32_sanity():
    """The humanoid in float32: the same comparisons to ~1e-4 relative."""
    name = "dm_control__humanoid"
    m, r, o = case(name, jnp.float32)
    assert m.dtype == jnp.float32 and m.geoms.size.dtype == jnp.float32
    m64, _, o64 = case(name)
    worst = 0.0
    for k in range(int(r["K"])):
        M, inv, bias, fwd = mujoco_in_jaxdyn(m64, r, o64, k)
        worst = max(
            worst,
            rel_err(o["M"][k], M),
            rel_err(o["inv"][k], inv),
            rel_err(o["bias"][k], bias),
            rel_err(o["fwd"][k], fwd),
        )
    print(f"\nfloat32 humanoid: max relative error {worst:.1e}")
    assert worst < 1e-4


# ------------------------------------------------------------------------------------------
# inertia of primitive geoms


def _numeric_inertia(inside, extent, n=60):
    """Volume and inertia / mass of a solid by midpoint quadrature on an n^3 grid (an
    independent check of the closed forms; coarse, so compared to ~1%)."""
    ax = [np.linspace(-e, e, n, endpoint=False) + e / n for e in extent]
    X, Y, Z = np.meshgrid(*ax, indexing="ij")
    w = inside(X, Y, Z)
    dv = np.prod([2 * e / n for e in extent])
    vol = w.sum() * dv
    I = np.array([((Y**2 + Z**2) * w).sum(), ((X**2 + Z**2) * w).sum(), ((X**2 + Y**2) * w).sum()]) * dv
    return vol, I / vol


@pytest.mark.parametrize(
    "gtype,size",
    [
        ("sphere", (0.3, 0, 0)),
        ("capsule", (0.1, 0.25, 0)),
        ("cylinder", (0.2, 0.1, 0)),
        ("box", (0.1, 0.2, 0.3)),
        ("ellipsoid", (0.3, 0.2, 0.1)),
    ],
)
def test_geom_inertia_closed_forms(gtype, size):
    vol, iu = mj.geom_volume_inertia(gtype, size)
    a, b, c = size
    closed = {
        "sphere": (4 / 3 * math.pi * a**3, [0.4 * a * a] * 3),
        "box": (8 * a * b * c, [(b * b + c * c) / 3, (a * a + c * c) / 3, (a * a + b * b) / 3]),
        "cylinder": (math.pi * a * a * 2 * b, [(3 * a * a + 4 * b * b) / 12] * 2 + [a * a / 2]),
        "ellipsoid": (4 / 3 * math.pi * a * b * c, [(b * b + c * c) / 5, (a * a + c * c) / 5, (a * a + b * b) / 5]),
    }
    if gtype in closed:
        assert vol == pytest.approx(closed[gtype][0], rel=1e-14)
        np.testing.assert_allclose(iu, closed[gtype][1], rtol=1e-14)
    shapes = {
        "sphere": (lambda x, y, z: x * x + y * y + z * z <= a * a, (a, a, a)),
        "capsule": (lambda x, y, z: x * x + y * y + np.maximum(np.abs(z) - b, 0) ** 2 <= a * a, (a, a, a + b)),
        "cylinder": (lambda x, y, z: (x * x + y * y <= a * a) & (np.abs(z) <= b), (a, a, b)),
        "box": (lambda x, y, z: np.ones_like(x, bool), (a, b, c)),
        "ellipsoid": (lambda x, y, z: (x / a) ** 2 + (y / b) ** 2 + (z / c) ** 2 <= 1, (a, b, c)),
    }
    nvol, niu = _numeric_inertia(*shapes[gtype])
    assert vol == pytest.approx(nvol, rel=2e-2)
    np.testing.assert_allclose(iu, niu, rtol=3e-2)


def test_mesh_inertia_exact():
    """The closed-mesh formula against a box and a tetrahedron, and the STL body against MuJoCo."""
    corners = np.array([[x, y, z] for x in (-1, 1) for y in (-2, 2) for z in (-3, 3)], float) * 0.1
    quads = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    tris = np.array([[corners[q[0]], corners[q[k]], corners[q[k + 1]]] for q in quads for k in (1, 2)])
    vol, com, iu = mj.mesh_volume_inertia(tris + 0.3)
    bvol, biu = mj.geom_volume_inertia("box", (0.1, 0.2, 0.3))
    assert vol == pytest.approx(bvol, rel=1e-13)
    np.testing.assert_allclose(com, [0.3] * 3, rtol=1e-13)
    np.testing.assert_allclose(iu, np.diag(biu), rtol=1e-12, atol=1e-15)
    assert mj.mesh_volume_inertia(tris[:, ::-1])[1] is None  # inside out: refused by the loader
    m, r, _ = case("mesh_exact")
    for b, bn in enumerate(m.body_names):
        i = [str(n) for n in r["body_names"]].index(bn)
        assert float(m.mass[b]) == pytest.approx(float(r["body_mass"][i]), rel=1e-12)
        np.testing.assert_allclose(
            np.linalg.eigvalsh(np.asarray(m.inertia[b])), np.sort(r["body_inertia"][i]), rtol=1e-9
        )


def test_geom_bodies_match_mujoco_masses():
    """geoms.xml: one geom-derived body per joint; masses and principal moments as MuJoCo's."""
    m, r, _ = case("geoms")
    names = [str(n) for n in r["body_names"]]
    for b, bn in enumerate(m.body_names):
        i = names.index(bn)
        assert float(m.mass[b]) == pytest.approx(float(r["body_mass"][i]), rel=1e-12)
        ev = np.linalg.eigvalsh(np.asarray(m.inertia[b]))
        np.testing.assert_allclose(ev, np.sort(r["body_inertia"][i]), rtol=1e-10, atol=1e-15)


# ------------------------------------------------------------------------------------------
# refusals, warnings, policies


def body(content, extra="", top=""):
    return f"""<mujoco>{top}<worldbody><body name="b" pos="0 0 1">{content}</body>{extra}</worldbody></mujoco>"""


J = '<joint name="j" axis="0 1 0"/><geom name="g" size="0.1"/>'


def test_several_free_bodies_load_as_mujoco_free_joints():
    """The first moving body, if free, is the free root; any other free body is MuJoCo's free
    joint (three world-axis slides and a ball, MuJoCo's qpos and qvel); dynamics against MuJoCo:
    the free_bodies model of test_dynamics_match_mujoco."""
    two = jaxdyn.load_mjcf(
        body(
            '<freejoint name="f1"/><geom size="0.1"/>', '<body name="c"><freejoint name="f2"/><geom size="0.1"/></body>'
        )
    )
    assert two.joint_types == ("free", "prismatic", "prismatic", "prismatic", "spherical")
    assert two.joint_names == ("f1", "f2/x", "f2/y", "f2/z", "f2") and (two.nq, two.nv) == (14, 12)
    after = jaxdyn.load_mjcf(body(J, '<body name="c"><freejoint name="f2"/><geom size="0.1"/></body>'))
    assert after.joint_types == ("revolute", "prismatic", "prismatic", "prismatic", "spherical")
    assert np.allclose(np.asarray(after.axis[1:4]), np.eye(3)) and after.body_names[-1] == "c"
    assert list(after.parents) == [-1, -1, 1, 2, 3]


ERROR_CASES = [
    (
        "tendon",
        body(J, top="").replace(
            "</mujoco>", '<tendon><spatial name="t1"><geom geom="g"/><site site="s"/></spatial></tendon></mujoco>'
        ),
        "<spatial name='t1'>: a spatial tendon's <geom> (wrapping around geoms, pulleys) is not supported",
    ),
    (
        "equality",
        body(J).replace("</mujoco>", '<equality><weld name="w1" body1="nobody"/></equality></mujoco>'),
        "<weld name='w1'>: body 'nobody' does not exist",
    ),
    (
        "free_below",
        body(J + '<body name="c"><freejoint name="f2"/><geom size="0.1"/></body>'),
        "joint 'f2' in body 'c'",
    ),
    ("replicate", body(J, '<replicate count="2"><body name="r"/></replicate>'), "<replicate>"),
    ("attach", body(J + '<attach model="x" body="y" prefix="p"/>'), "<attach>"),
    ("composite", body(J + '<composite type="grid" count="2 2 1"/>'), "<composite>"),
    ("flexcomp", body(J + '<flexcomp name="fc" type="grid" count="2 2 1"/>'), "<flexcomp name='fc'>"),
    (
        "skin",
        body(J).replace("</mujoco>", '<deformable><skin name="sk"/></deformable></mujoco>'),
        "<deformable> with content (<skin name='sk'>",
    ),
    (
        "missing_include",
        body(J).replace("<worldbody>", '<include file="no_such_file.xml"/><worldbody>'),
        "<include file='no_such_file.xml'>: file not found",
    ),
    ("nan", body('<joint name="j" axis="0 nan 0"/><geom size="0.1"/>'), "joint 'j' in body 'b' axis"),
    ("inf", body('<joint name="j"/><geom name="gg" size="inf"/>'), "geom <geom name='gg'> in body 'b' size"),
    (
        "unparsable",
        body('<joint name="j"/><inertial pos="0 0 x" mass="1" diaginertia="1 1 1"/>'),
        "body 'b' <inertial> pos: cannot parse",
    ),
    ("count", body('<joint name="j" pos="0 0"/><geom size="0.1"/>'), "joint 'j' in body 'b' pos: expected 3 numbers"),
    ("body_pos_count", body(J, '<body name="c" pos="1 2 3 4"><joint/><geom size="1"/></body>'), "<body name='c'> pos"),
    (
        "unknown_class",
        body('<joint name="j" class="nope"/><geom size="0.1"/>'),
        "<joint name='j'>: unknown default class 'nope'",
    ),
    (
        "unknown_childclass",
        body(J, '<body name="c" childclass="nope"><joint/><geom size="1"/></body>'),
        "unknown default class 'nope'",
    ),
    ("dup_body", body(J, '<body name="b"><joint/><geom size="1"/></body>'), "<body name='b'>: duplicate body name"),
    (
        "dup_joint",
        body(J, '<body name="c"><joint name="j"/><geom size="1"/></body>'),
        "<joint name='j'>: duplicate joint name",
    ),
    (
        "dup_class",
        body(J, top='<default><default class="a"/><default class="a"/></default>'),
        "<default class='a'>: class defined twice",
    ),
    (
        "mesh",  # a closed mesh with a dent: MuJoCo's 'legacy' inertia is not the exact one there
        body(
            '<joint name="j"/><geom name="gm" type="mesh" mesh="m"/>',
            top='<asset><mesh name="m" vertex="1 0 0 -0.5 0.87 0 -0.5 -0.87 0 0 0 1 0 0 0.2" '
            'face="0 1 3 1 2 3 2 0 3 1 0 4 2 1 4 0 2 4"/></asset>',
        ),
        (
            "geom <geom name='gm'> in body 'b': the geom would define the inertia of body 'b' from <mesh name='m'>, "
            "whose inertia='legacy' (MuJoCo's default) jaxdyn reproduces for convex, closed meshes only"
        ),
    ),
    (
        "mesh_shell",
        body(
            '<joint name="j"/><geom name="gs" type="mesh" mesh="s"/>',
            top='<asset><mesh name="s" inertia="shell" vertex="0 0 0 1 0 0 0 1 0 0 0 1"/></asset>',
        ),
        "from <mesh name='s'>, whose inertia='shell' jaxdyn does not reproduce",
    ),
    (
        "mesh_open",
        body(
            '<joint name="j"/><geom name="go" type="mesh" mesh="o"/>',
            top='<asset><mesh name="o" inertia="exact" vertex="0 0 0 1 0 0 0 1 0" face="0 1 2"/></asset>',
        ),
        "<mesh name='o'>: the mesh encloses no positive volume",
    ),
    (
        "mesh_missing_file",
        body(
            '<joint name="j"/><geom type="mesh" mesh="nofile"/>',
            top='<asset><mesh inertia="exact" file="nofile.stl"/></asset>',
        ),
        "<mesh name='nofile'>: mesh file",
    ),
    (
        "act_tendon",
        body(J).replace("</mujoco>", '<actuator><motor name="mt" tendon="t"/></actuator></mujoco>'),
        "<motor name='mt'>: tendon 't' is not defined",
    ),
    (
        "act_site",
        body(J).replace("</mujoco>", '<actuator><general name="ms" site="s"/></actuator></mujoco>'),
        "<general name='ms'>: transmission through a site",
    ),
    (
        "act_body",
        body(J).replace("</mujoco>", '<actuator><adhesion name="ab" body="b"/></actuator></mujoco>'),
        "<adhesion name='ab'>: transmission through a body",
    ),
    (
        "act_unknown_joint",
        body(J).replace("</mujoco>", '<actuator><motor name="mu" joint="zz"/></actuator></mujoco>'),
        "<motor name='mu'>: joint 'zz' is not defined",
    ),
    ("unknown_element", body(J + '<gadget name="x"/>'), "<gadget name='x'>: unknown element"),
    (
        "world_joint",
        '<mujoco><worldbody><joint name="wj"/></worldbody></mujoco>',
        "<joint name='wj'>: joints cannot be attached to the world",
    ),
    (
        "ball_then_hinge",
        body('<joint name="bj" type="ball"/><joint name="hj"/><geom size="0.1"/>'),
        "joint 'hj' in body 'b': a ball joint followed",
    ),
    ("massless", body('<joint name="j"/>'), "joint 'j' moves body 'b', which carries no mass"),
    (
        "two_orientations",
        body(J, '<body name="c" quat="1 0 0 0" euler="0 0 1"><joint/><geom size="1"/></body>'),
        "<body name='c'>: more than one orientation",
    ),
    (
        "no_joint",
        '<mujoco><worldbody><body name="s"><geom size="1"/></body></worldbody></mujoco>',
        "<worldbody> holds no <joint>",
    ),
    ("bad_root", "<robot/>", "expected <mujoco>"),
    (
        "shell",
        body('<joint name="j"/><geom name="gs" size="0.1" shellinertia="true"/>'),
        "geom <geom name='gs'> in body 'b': shellinertia",
    ),
]


@pytest.mark.parametrize("key,xml,msg", ERROR_CASES, ids=[c[0] for c in ERROR_CASES])
def test_refusals_name_the_element(key, xml, msg):
    with pytest.raises(MJCFError) as e:
        load_mjcf(xml)
    assert msg in str(e.value), str(e.value)
    assert isinstance(e.value, jaxdyn.io.LoadError)


def test_missing_file():
    with pytest.raises(MJCFError, match="not found"):
        load_mjcf(os.path.join(DATA, "no_such_model.xml"))


def test_ignored_elements_and_sites():
    xml = body(J + '<site name="tip" pos="0 0 0.5"/><camera name="c"/><light name="l"/>').replace(
        "</mujoco>",
        '<sensor><jointpos joint="j"/></sensor><keyframe><key qpos="0.1"/></keyframe>'
        '<contact><exclude body1="b" body2="world"/></contact><visual/><tendon/><equality/></mujoco>',
    )
    m = load_mjcf(xml)
    assert m.nv == 1 and "tip" in m.frame_names
    np.testing.assert_allclose(m.frame_p[m.frame_index("tip")], [0, 0, 0.5])


def test_stiffness_warns_with_joint_names():
    """Hinge springs are modelled (tests/test_springs.py); ball springs and non-linear stiffness
    terms are dropped with a warning naming the joints."""
    xml = body(
        '<joint name="springy" type="ball" stiffness="3"/><geom size="0.1"/>'
        '<body name="c"><joint name="also" stiffness="1 2"/><geom size="0.1"/></body>'
    )
    with pytest.warns(UserWarning, match="stiffness.*springy, also"):
        m = load_mjcf(xml)
    assert float(m.stiffness[-1]) == 1.0


def test_other_dropped_forces_warn_and_gravity_flag():
    xml = body('<joint name="j" damping="1 2"/><geom size="0.1"/>').replace('pos="0 0 1"', 'pos="0 0 1" gravcomp="1"')
    xml = xml.replace("<mujoco>", '<mujoco><option viscosity="0.1"><flag gravity="disable"/></option>')
    with pytest.warns(UserWarning) as rec:
        m = load_mjcf(xml)
    text = " ".join(str(w.message) for w in rec)
    for what in ("gravcomp", "non-linear damping", "viscosity"):
        assert what in text, text
    np.testing.assert_array_equal(m.gravity, np.zeros(3))
    assert float(m.damping[0]) == 1.0


def test_free_joint_armature_warns():
    with pytest.warns(UserWarning, match="armature on a free joint"):
        load_mjcf(xml_path("floating_joint"))


BAD_INERTIA = body('<joint name="j"/><inertial pos="0 0 0" mass="1" diaginertia="0.01 0.02 0.05"/>')


def test_inertia_policies():
    with pytest.warns(jaxdyn.InertiaWarning, match="body 'b' <inertial>.*triangle"):
        m = load_mjcf(BAD_INERTIA)
    np.testing.assert_allclose(np.diag(np.asarray(m.inertia[0])), [0.01, 0.02, 0.05])
    with pytest.raises(MJCFError, match="body 'b' <inertial>.*inertia='strict'"):
        load_mjcf(BAD_INERTIA, inertia="strict")
    with pytest.warns(jaxdyn.InertiaWarning, match="inertia='fix'"):
        m = load_mjcf(BAD_INERTIA, inertia="fix")
    np.testing.assert_allclose(np.diag(np.asarray(m.inertia[0])), [0.08 / 3] * 3)
    with pytest.raises(ValueError, match="inertia must be one of"):
        load_mjcf(BAD_INERTIA, inertia="maybe")
    # MuJoCo's own repair, balanceinertia, is what "fix" does too: no warning then
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m = load_mjcf(BAD_INERTIA.replace("<mujoco>", '<mujoco><compiler balanceinertia="true"/>'), inertia="strict")
    np.testing.assert_allclose(np.diag(np.asarray(m.inertia[0])), [0.08 / 3] * 3)


def test_inertia_warning_names_the_body_at_fault():
    """In a tree of several bodies the warning names the body whose inertia is inconsistent (the
    first here), and a body with a consistent <inertial> or no mass is not named."""
    xml = """<mujoco><worldbody>
      <body name="first"><joint name="j1"/><inertial pos="0 0 0" mass="1" diaginertia="0.01 0.02 0.05"/>
        <body name="middle"><joint name="j2"/><geom type="sphere" size="0.1"/>
          <body name="last"><joint name="j3"/><inertial pos="0 0 0" mass="1" diaginertia="0.1 0.1 0.1"/></body>
        </body>
      </body></worldbody></mujoco>"""
    with pytest.warns(jaxdyn.InertiaWarning) as rec:
        load_mjcf(xml)
    text = " ".join(str(w.message) for w in rec)
    assert "body 'first' <inertial>" in text, text
    assert "'last'" not in text and "'middle'" not in text, text
    with pytest.raises(MJCFError, match="body 'first' <inertial>"):
        load_mjcf(xml, inertia="strict")


def test_autolimits_false():
    xml = '<mujoco><compiler autolimits="false"/>' + body('<joint name="j" range="-1 1"/><geom size="0.1"/>')[8:]
    with pytest.raises(MJCFError, match="range given without limited"):
        load_mjcf(xml)
    m = load_mjcf(xml.replace('range="-1 1"', 'range="-1 1" limited="true"'))
    assert float(m.q_upper[0]) == pytest.approx(math.radians(1))


# ------------------------------------------------------------------------------------------
# converters, sources, geoms in the model


def test_converters_round_trip_and_power():
    m = quiet_load(xml_path("floating_joint"))
    rng = np.random.default_rng(0)
    q = np.asarray(jaxdyn.random_configuration(m, jax.random.PRNGKey(1)))
    v, a, f = rng.normal(size=m.nv), rng.normal(size=m.nv), rng.normal(size=m.nv)
    vj = mj.velocity_from_mujoco(m, q, v)
    np.testing.assert_allclose(mj.velocity_to_mujoco(m, q, vj), v, rtol=1e-14, atol=1e-14)
    aj = mj.acceleration_from_mujoco(m, q, v, a)
    np.testing.assert_allclose(mj.acceleration_to_mujoco(m, q, vj, aj), a, rtol=1e-14, atol=1e-14)
    fj = mj.force_from_mujoco(m, q, f)
    np.testing.assert_allclose(mj.force_to_mujoco(m, q, fj), f, rtol=1e-14, atol=1e-14)
    assert float(fj @ vj) == pytest.approx(float(f @ v), rel=1e-13)  # power is coordinate-free
    np.testing.assert_allclose(vj[6:], v[6:])  # the other dofs are untouched
    # the acceleration map is the time derivative of the velocity map along a trajectory
    h = 1e-6
    qn = np.asarray(jaxdyn.integrate(m, jnp.asarray(q), vj, h))
    vn = v + h * a
    dv = (np.asarray(mj.velocity_from_mujoco(m, qn, vn)) - np.asarray(vj)) / h
    np.testing.assert_allclose(dv[:6], np.asarray(aj)[:6], atol=1e-5)
    fixed = quiet_load(xml_path("chain"))
    np.testing.assert_array_equal(mj.velocity_from_mujoco(fixed, np.zeros(fixed.nq), v[:6]), v[:6])


def test_path_and_text_give_the_same_model(monkeypatch):
    for name in ("chain", "include_main"):
        a = quiet_load(xml_path(name))
        with open(xml_path(name)) as fh:
            text = fh.read()
        monkeypatch.chdir(DATA)  # includes of XML text are looked up from the working directory
        b = quiet_load(text)
        for la, lb in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)):
            np.testing.assert_array_equal(la, lb)
        assert a.topology == b.topology


def test_model_with_geoms_transforms():
    """replace / astype / vmap / grad over a model that carries geoms."""
    m, r, _ = case("floating_joint")
    assert m.geoms is not None and m.geoms.ng > 0 and jaxdyn.load_robot("pendulum").geoms.ng == 0
    m2 = m.replace(gravity=jnp.zeros(3))
    assert m2.geoms is m.geoms
    m32 = m.astype(jnp.float32)
    assert m32.geoms.pos.dtype == jnp.float32 and m32.geoms.type == m.geoms.type
    q = jnp.asarray(r["qpos"][0])
    v = mj.velocity_from_mujoco(m, q, jnp.asarray(r["qvel"][0]))
    g = jax.jit(jax.grad(lambda mm: jaxdyn.kinetic_energy(mm, q, v)))(m)
    assert g.geoms is not None and float(jnp.abs(g.mass).sum()) > 0
    batch = jax.tree_util.tree_map(lambda x: jnp.stack([x, 2 * x]), m)
    ke = jax.jit(jax.vmap(lambda mm: jaxdyn.kinetic_energy(mm, q, v)))(batch)
    # doubling every float leaf doubles masses and inertias, placements change too: just finite
    assert ke.shape == (2,) and bool(jnp.all(jnp.isfinite(ke)))


def test_kernels_and_rollout_on_mjcf_model():
    """The batched kernel and the simulator run on an MJCF model with geoms."""
    m, r, _ = case("balance")  # small (compile time); the SoA kernels take no ball joints
    assert not m.floating_base  # MuJoCo's coordinates are jaxdyn's
    q, v, tau = (jnp.asarray(r[k]) for k in ("qpos", "qvel", "qfrc_applied"))
    qdd = jaxdyn.kernels.aba_batch(m, q, v, tau)
    np.testing.assert_allclose(qdd, r["forward"], rtol=1e-10, atol=1e-10)  # MuJoCo's mj_forward
    # the public functions under vmap (the same kernels): MuJoCo's forward dynamics and mass matrix
    qdd = jax.jit(jax.vmap(jaxdyn.aba, in_axes=(None, 0, 0, 0)))(m, q, v, tau)
    np.testing.assert_allclose(qdd, r["forward"], rtol=1e-10, atol=1e-10)
    M = jax.vmap(jaxdyn.crba, in_axes=(None, 0))(m, q) + jnp.diag(m.armature)
    np.testing.assert_allclose(M, r["M"], rtol=1e-10, atol=1e-10)  # mj_fullM holds the armature
    traj = jaxdyn.rollout(m, q[0], v[0], jnp.zeros((5, m.nv)), dt=1e-3)
    assert bool(jnp.all(jnp.isfinite(traj.q)))


def test_overflow_on_cast_to_float32_is_refused_by_name():
    xml = body('<joint name="j"/><inertial pos="0 0 0" mass="1e300" diaginertia="1 1 1"/>')
    assert float(quiet_load(xml).mass[0]) == 1e300  # finite in float64
    with pytest.raises(MJCFError, match="mass .*not finite in float32"):
        quiet_load(xml, dtype=jnp.float32)


def test_geom_contact_parameters_are_warned_about_by_name():
    xml = """<mujoco><default><geom solref="0.01 1"/></default><worldbody>
    <geom name="floor" type="plane" size="1 1 .1"/>
    <body><freejoint/><geom name="ball" size="0.1" solimp="0.015 1 0.031"/></body>
    <body pos="1 0 0"><freejoint/><geom name="visual" size="0.1" contype="0" conaffinity="0" solimp="0.5 0.6 0.01"/></body>
    </worldbody></mujoco>"""
    with pytest.warns(
        UserWarning, match=r"solref of 2 geoms \(.*'floor'.*'ball'.*\); solimp of 1 geom \(.*'ball'"
    ) as rec:
        jaxdyn.load_mjcf(xml)
    assert "visual" not in str(rec[0].message)  # a geom that collides with nothing is not named
    default = """<mujoco><worldbody><body><freejoint/><geom size="0.1" solref="0.02 1" gap="0"/></body></worldbody></mujoco>"""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        jaxdyn.load_mjcf(default)  # MuJoCo's defaults written out change nothing
