"""Generate MuJoCo's sensordata for tests/test_sensors.py (MuJoCo is NOT a jaxdyn dependency).

    pip install mujoco            # 4.x; the Go1 scene also needs mujoco_playground's files
    python tests/reference/generate_mujoco_sensors.py [--out tests/data/mujoco/sensors]

Scenes (in the output folder):

* ``sensors.xml``: every sensor type jaxdyn computes but ``touch``, on a free-floating tree
  (written for jaxdyn);
* ``humanoid``: dm_control's humanoid (``tests/data/mjcf/dm_control/humanoid.xml``): subtree
  velocity, IMU, six force and six torque sensors, eighteen touch sensors;
* ``go1/``: MuJoCo Playground's Go1 feet-only flat-terrain scene (Apache-2.0; the robot is
  Menagerie's Unitree Go1, BSD-3-Clause) with its mesh assets and mesh geoms removed
  (``go1_mjx_feetonly.xml``, ``scene_mjx_feetonly_flat_terrain.xml``, ``sensor_feet.xml``,
  copied here by this script): its IMU and frame sensors, and four ``contact`` sensors jaxdyn
  does not compute;
* ``touch.xml``: touch sensors of every zone shape and force / torque sensors on two free
  bodies in contact with a floor and each other (written for jaxdyn).

For each scene and K random states (unit quaternions for free and ball joints) ``mj_forward``
gives ``qpos``, ``qvel``, ``qacc`` and ``sensordata`` (MuJoCo's coordinates; the test converts
a free root's velocity and acceleration). Half of ``sensors.xml``'s states have the root's quaternion negated.
``sensors.xml`` and the first humanoid set have
contacts switched off, so that force and torque sensors read gravity and motion alone. The
humanoid's second set (low above the floor) and ``touch.xml`` keep their contacts and store them
as ``mj_contactForce`` gives them: ``contact_pos``, ``contact_normal`` (the first row of the
contact frame), ``contact_force`` (the normal force, 0 for padding), ``contact_geom1`` /
``contact_geom2`` (MuJoCo's geom ids, -1 for padding; ``geom_names`` names them), and each body's ``cfrc_ext`` with the centre of mass
it is taken about (``subtree_com`` of the body's root), from which the test builds ``f_ext``.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import xml.etree.ElementTree as ET

import mujoco
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "data")
OUT = os.path.join(DATA, "mujoco", "sensors")
GO1_FILES = ("go1_mjx_feetonly.xml", "scene_mjx_feetonly_flat_terrain.xml", "sensor_feet.xml")


def _go1_copy(out):
    """Playground's Go1 feet-only scene files, mesh assets and mesh / visual geoms removed."""
    spec = importlib.util.find_spec("mujoco_playground")
    if spec is None or spec.origin is None:
        raise SystemExit("generate_mujoco_sensors: the Go1 scene needs mujoco_playground's files")
    src = os.path.join(os.path.dirname(spec.origin), "_src", "locomotion", "go1", "xmls")
    dst = os.path.join(out, "go1")
    os.makedirs(dst, exist_ok=True)
    for f in GO1_FILES:
        tree = ET.parse(os.path.join(src, f))
        root = tree.getroot()
        for c in root.iter("compiler"):
            c.attrib.pop("meshdir", None)
        for parent in list(root.iter()):
            for c in list(parent):
                if (c.tag == "mesh" and parent.tag == "asset") or (
                    c.tag == "geom" and ("mesh" in c.attrib or c.get("class") == "visual")
                ):
                    parent.remove(c)
        tree.write(os.path.join(dst, f))
    return os.path.join(dst, "scene_mjx_feetonly_flat_terrain.xml")


def _random_state(m, d, rng, spread):
    d.qpos[:] = m.qpos0 + rng.normal(0, spread, m.nq)
    for j in range(m.njnt):
        a = m.jnt_qposadr[j]
        if m.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE:
            d.qpos[a + 3 : a + 7] /= np.linalg.norm(d.qpos[a + 3 : a + 7])
        elif m.jnt_type[j] == mujoco.mjtJoint.mjJNT_BALL:
            d.qpos[a : a + 4] /= np.linalg.norm(d.qpos[a : a + 4])
    d.qvel[:] = rng.normal(0, 1.0, m.nv)


def _body_name(m, b):
    return mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_BODY, b) or ("world" if b == 0 else f"body{b}")


def states(path, seed, k, *, contacts=False, place=None, spread=0.5):
    """``k`` random states of the scene and MuJoCo's values there (module docstring)."""
    m = mujoco.MjModel.from_xml_path(path)
    if not contacts:
        m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT
    d = mujoco.MjData(m)
    rng = np.random.default_rng(seed)
    out = {key: [] for key in ("qpos", "qvel", "qacc", "sensordata", "cfrc_ext", "com")}
    cons = []
    for _ in range(k):
        _random_state(m, d, rng, spread)
        if place is not None:
            place(d, rng)
        mujoco.mj_forward(m, d)
        for key in ("qpos", "qvel", "qacc", "sensordata", "cfrc_ext"):
            out[key].append(getattr(d, key).copy())
        out["com"].append(d.subtree_com[m.body_rootid].copy())
        rows = []
        for j in range(d.ncon):
            c = d.contact[j]
            f = np.zeros(6)
            mujoco.mj_contactForce(m, d, j, f)
            rows.append((c.pos.copy(), c.frame[:3].copy(), f[0] if c.efc_address >= 0 else 0.0, *c.geom))
        cons.append(rows)
    res = {key: np.array(v) for key, v in out.items()}
    res["sensor_names"] = np.array(
        [mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_SENSOR, i) or "" for i in range(m.nsensor)]
    )
    res["sensor_adr"] = m.sensor_adr.copy()
    res["sensor_dim"] = m.sensor_dim.copy()
    res["body_names"] = np.array([_body_name(m, b) for b in range(m.nbody)])
    res["geom_names"] = np.array([mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_GEOM, g) or "" for g in range(m.ngeom)])
    if contacts:
        n = max(1, max(len(r) for r in cons))
        res["contact_pos"] = np.zeros((k, n, 3))
        res["contact_normal"] = np.tile([0.0, 0.0, 1.0], (k, n, 1))
        res["contact_force"] = np.zeros((k, n))
        res["contact_geom1"] = np.full((k, n), -1)
        res["contact_geom2"] = np.full((k, n), -1)
        for i, rows in enumerate(cons):
            for j, (pos, normal, force, g1, g2) in enumerate(rows):
                res["contact_pos"][i, j], res["contact_normal"][i, j], res["contact_force"][i, j] = pos, normal, force
                res["contact_geom1"][i, j], res["contact_geom2"][i, j] = g1, g2
        print(f"{os.path.basename(path)}: contacts per state {[len(r) for r in cons]}")
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=OUT)
    args = ap.parse_args()
    out = {}
    humanoid = os.path.join(DATA, "mjcf", "dm_control", "humanoid.xml")

    def low(d, rng):  # the humanoid's torso just above the floor: limbs touch it
        d.qpos[2] = rng.uniform(0.15, 0.35)

    def near(d, rng):  # block and ball on the floor, the ball against the block's side
        d.qpos[:3] = [0.0, 0.0, rng.uniform(0.02, 0.06)]
        d.qpos[3:7] = [1.0, *rng.normal(0, 0.15, 3)]
        d.qpos[3:7] /= np.linalg.norm(d.qpos[3:7])
        d.qpos[7:10] = [rng.uniform(0.22, 0.3), rng.uniform(-0.08, 0.08), rng.uniform(0.06, 0.1)]

    def flip(d, rng):  # the root's quaternion negated (the same rotation): framequat follows its sign
        if rng.uniform() < 0.5:
            d.qpos[3:7] *= -1

    scenes = {
        "sensors": states(os.path.join(args.out, "sensors.xml"), 0, 4, place=flip),
        "humanoid": states(humanoid, 1, 3),
        "humanoid_contact": states(humanoid, 2, 3, contacts=True, place=low),
        "go1": states(_go1_copy(args.out), 3, 4, contacts=True, spread=0.3),
        "touch": states(os.path.join(args.out, "touch.xml"), 4, 6, contacts=True, place=near),
    }
    for name, res in scenes.items():
        out.update({f"{name}_{k}": v for k, v in res.items()})
    out["mujoco_version"] = np.array(mujoco.__version__)
    np.savez_compressed(os.path.join(args.out, "reference.npz"), **out)
    print({k: np.shape(v) for k, v in out.items()})


if __name__ == "__main__":
    main()
