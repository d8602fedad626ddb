"""A legged robot as published (an example-robot-data URDF with its collision geometry, meshes
included), standing under PD control on the ground, in jaxdyn and in MuJoCo.

    pip install mujoco example-robot-data          # not jaxdyn dependencies
    python tests/reference/check_mujoco_standing.py [--robot go2]   # go2, a1, go1, anymal_c_simple/anymal

Both simulators load the same file with its collision geometry: jaxdyn through
``jaxdyn.load_robot(name)`` (meshes as convex hulls, touching the ground with their deepest
vertices), MuJoCo through its URDF importer (the collision meshes copied beside it, a
``floating`` root joint added so the base is free) with a floor. Only robot-floor contacts act (MuJoCo: the robot's geoms have ``conaffinity = 0``;
jaxdyn: ``Contact(collide_pairs=False)``). Contact settings as in ``generate_mujoco_contact.py``: MuJoCo's
``Euler`` at 1 ms, elliptic cones, ``condim = 3``, sliding friction 1, and a ``solref`` time
constant found by bisection so that MuJoCo's resting penetration equals jaxdyn's Hunt-Crossley
penetration at a quarter of the weight; jaxdyn's default ``Contact()`` and ``"implicit_euler"``
at 1 ms. The scenario: the SRDF's standing posture, the lowest point 1 cm above the floor, PD
``tau = Kp (q_ref - q) - Kd qd`` on every joint (``Kp = 2.5 N m/rad`` per kilogram of the robot,
40 for the Go2's 16 kg, ``Kd = Kp / 40 s``) from the state at the start of every step, 3 s.

Prints the final base height, joint angles and total normal force of both, and the time each
takes to settle. The speed of the same two simulations: ``benchmarks/standing.py``.
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import shutil
import sys
import tempfile
import warnings
import xml.etree.ElementTree as ET
from types import SimpleNamespace

import jax
import jax.numpy as jnp
import mujoco
import numpy as np

import jaxdyn
from jaxdyn import contact as C
from jaxdyn import robots, sim
from jaxdyn.io.meshes import resolve_mesh_path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from generate_mujoco_contact import DT, OPTION, SOLIMP, K, P, settle_time, simulate  # noqa: E402

SECONDS = 3.0


def standing_pose(urdf_path):
    """The SRDF's ``standing`` group state beside the URDF (``<package>/srdf/*.srdf``): the
    joint angles by name."""
    package = os.path.dirname(os.path.dirname(urdf_path))
    stem = os.path.splitext(os.path.basename(urdf_path))[0]
    srdfs = sorted(glob.glob(os.path.join(package, "srdf", "*.srdf")))
    srdf = next((f for f in srdfs if os.path.basename(f).startswith(stem)), srdfs[0] if srdfs else None)
    if srdf is None:
        raise SystemExit(f"no SRDF beside {urdf_path}")
    state = next((s for s in ET.parse(srdf).getroot().iter("group_state") if s.get("name") == "standing"), None)
    if state is None:
        raise SystemExit(f"{srdf} has no 'standing' group state")
    return {j.get("name"): float(j.get("value")) for j in state.iter("joint") if len(j.get("value").split()) == 1}


def mujoco_xml(urdf_path, root_link, tc, workdir, balance=False):
    """MuJoCo's import of the URDF (its collision meshes copied into ``workdir``) with a free
    base, then a floor and the contact settings."""
    with open(urdf_path) as fh:
        text = fh.read()
    tree = ET.fromstring(text)
    for mesh in (m for c in tree.iter("collision") for m in c.iter("mesh")):
        uri = mesh.get("filename", "")
        src = resolve_mesh_path(uri, os.path.dirname(urdf_path))
        if src.lower().endswith(".dae"):
            raise SystemExit(f"{urdf_path}: MuJoCo does not read COLLADA meshes ({uri})")
        shutil.copy(src, os.path.join(workdir, os.path.basename(src)))
    compiler = (
        f'<mujoco><compiler meshdir="{workdir}" discardvisual="true" strippath="true" '
        f'balanceinertia="{str(balance).lower()}" fusestatic="true"/></mujoco>'
    )
    text = re.sub(r"(<robot[^>]*>)", r"\1" + compiler, text, count=1)
    text = text.replace(
        "</robot>",
        '<link name="world_root"/><joint name="root_joint" type="floating"><parent link="world_root"/>'
        f'<child link="{root_link}"/></joint></robot>',
    )
    m = mujoco.MjModel.from_xml_string(text)
    path = "/tmp/jaxdyn_go2_mujoco.xml"
    mujoco.mj_saveLastXML(path, m)
    tree = ET.parse(path).getroot()
    for g in tree.iter("geom"):
        g.set("contype", "1")
        g.set("conaffinity", "0")
    world = tree.find("worldbody")
    world.insert(0, ET.fromstring('<geom name="floor" type="plane" size="0 0 1" contype="0" conaffinity="1"/>'))
    tree.insert(0, ET.fromstring(OPTION))
    default = f'<default><geom condim="3" friction="1 0 0" solimp="{SOLIMP}" solref="{tc:.6f} 1"/></default>'
    tree.insert(0, ET.fromstring(default))
    return ET.tostring(tree, encoding="unicode")


def scenario(robot, balance=False):
    """Both simulators' models of the scenario (module docstring): jaxdyn's ``model``, contact
    ``ct``, start ``q0`` and PD policy ``pd``; MuJoCo's tuned model ``xml``, start ``qpos0``, PD
    ``mj_pd`` and the ``adr`` of jaxdyn's joints in its ``qpos``; the ``weight`` and the
    Hunt-Crossley ``target`` penetration at a quarter of it."""
    urdf = robots.robot_path(robot)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = jaxdyn.load_robot(robot, floating_base=True, dtype=jnp.float64, inertia="fix" if balance else "warn")
    pose = standing_pose(urdf)
    joints = list(model.joint_names[1:])  # jaxdyn's order; MuJoCo's are found by name
    q_ref = np.array([pose.get(j, 0.0) for j in joints])
    kp = 2.5 * float(jnp.sum(model.mass))
    kd = kp / 40.0
    ct = C.Contact(collide_pairs=False)  # robot-floor contacts only, as in the MuJoCo model
    q0 = np.concatenate([[0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0], q_ref])
    cp = C.contact_points(model, q0, np.zeros(model.nv), ct.ground)
    low = float(jnp.min(cp.centre[:, 2] - cp.radius))  # the lowest point of the robot's geoms
    q0[2] = 0.01 - low
    weight = float(jnp.sum(model.mass)) * 9.81

    def pd(q, qd, t):
        return jnp.concatenate([jnp.zeros(6), kp * (q_ref - q[7:]) - kd * qd[6:]])

    # MuJoCo: its qpos is [x y z qw qx qy qz] and the joints in MuJoCo's order (by name here)
    work = tempfile.mkdtemp()
    root = model.body_names[0]
    mj0 = mujoco.MjModel.from_xml_string(mujoco_xml(urdf, root, 0.02, work, balance))
    adr = [mj0.jnt_qposadr[mujoco.mj_name2id(mj0, mujoco.mjtObj.mjOBJ_JOINT, j)] for j in joints]
    dadr = [mj0.jnt_dofadr[mujoco.mj_name2id(mj0, mujoco.mjtObj.mjOBJ_JOINT, j)] for j in joints]
    qpos0 = np.zeros(mj0.nq)
    qpos0[:7] = q0[:7]
    qpos0[adr] = q_ref

    def mj_pd(qpos, qvel):
        tau = np.zeros(mj0.nv)
        tau[dadr] = kp * (q_ref - qpos[adr]) - kd * qvel[dadr]
        return tau

    target = (weight / 4 / K) ** (1 / P)
    lo, hi = 2 * DT, 0.2
    for _ in range(30):
        tc = np.sqrt(lo * hi)
        pen = simulate(mujoco_xml(urdf, root, tc, work, balance), qpos0, SECONDS, mj_pd)[4][-1]
        lo, hi = (tc, hi) if pen < target else (lo, tc)
    xml = mujoco_xml(urdf, root, np.sqrt(lo * hi), work, balance)
    return SimpleNamespace(
        model=model,
        ct=ct,
        q0=q0,
        pd=pd,
        xml=xml,
        qpos0=qpos0,
        mj_pd=mj_pd,
        adr=adr,
        weight=weight,
        kp=kp,
        target=target,
    )


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--robot", default="go2", help="an example-robot-data name with a floating base and an SRDF")
    ap.add_argument(
        "--balance",
        action="store_true",
        help="repair inertias that break the triangle inequality in both (MuJoCo's balanceinertia, jaxdyn's "
        'inertia="fix"), for files MuJoCo refuses as they are',
    )
    args = ap.parse_args()
    jax.config.update("jax_enable_x64", True)
    sc = scenario(args.robot, args.balance)
    model, ct, weight = sc.model, sc.ct, sc.weight
    steps = int(round(SECONDS / DT))

    @jax.jit
    def run(model, q0):
        tr = sim.rollout(model, q0, jnp.zeros(model.nv), sc.pd, DT, steps=steps, contact=ct)
        f = jax.vmap(lambda q, qd: C.total_force(model, q, qd, ct))(tr.q, tr.qd)
        d = jax.vmap(lambda q: jnp.max(C.contact_points(model, q, jnp.zeros(model.nv), ct.ground).depth))(tr.q)
        return tr.q, f, d, tr.nonfinite_step

    q, f, d, bad = (np.asarray(x) for x in run(model, sc.q0))
    mm, dd, qs, fz, pen = simulate(sc.xml, sc.qpos0, SECONDS, sc.mj_pd)
    adr, target = sc.adr, sc.target
    tt = np.arange(steps + 1) * DT
    meshes = sum(1 for x in model.geoms.type if x == 7)
    print(
        f"{args.robot} ({model.nv} dof, {model.geoms.ng} geoms, {meshes} meshes), weight {weight:.4f} N, Kp {sc.kp:.1f}"
    )
    print(f"  masses: jaxdyn {float(jnp.sum(model.mass)):.6f} kg, MuJoCo {mujoco.mj_getTotalmass(mm):.6f} kg")
    print(f"  finite: {int(bad) == -1}; MuJoCo contacts at the end: {dd.ncon}")
    print(
        f"  penetration: jaxdyn {d[-1] * 1e3:.4f} mm, MuJoCo {pen[-1] * 1e3:.4f} mm (Hunt-Crossley at W/4: {target * 1e3:.4f})"
    )
    print(
        f"  base height: jaxdyn {q[-1, 2]:.6f} m, MuJoCo {qs[-1, 2]:.6f} m, difference {abs(q[-1, 2] - qs[-1, 2]) * 1e3:.3f} mm"
    )
    dj = np.abs(q[-1, 7:] - qs[-1, adr]).max()
    print(f"  joints: largest difference {dj:.2e} rad")
    dz = np.abs(q[:, 2] - qs[:, 2])
    print(
        f"  base height over the run: largest difference {dz.max() * 1e3:.3f} mm (after 0.5 s: {dz[500:].max() * 1e3:.3f} mm)"
    )
    print(
        "  base height every 0.5 s (mm): jaxdyn",
        np.round(q[::500, 2] * 1e3, 3),
        "MuJoCo",
        np.round(qs[::500, 2] * 1e3, 3),
    )
    print(f"  total normal force / weight: jaxdyn {f[-1, 2] / weight:.6f}, MuJoCo {fz[-1] / weight:.6f}")
    print(
        f"  settled (height to 0.1 mm): jaxdyn {settle_time(tt, q[:, 2], 1e-4):.3f} s, MuJoCo {settle_time(tt, qs[:, 2], 1e-4):.3f} s"
    )


if __name__ == "__main__":
    main()
