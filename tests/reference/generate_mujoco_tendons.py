"""Reference values for tendon transmissions, spatial tendons and tendon limits
(tests/test_tendons.py), written to tests/data/mujoco/tendons/reference.npz.

MuJoCo 4.0 on two models:

* ``tests/data/mjcf/constraints/tendon_drive.xml``: a 3D arm with a fixed and two spatial tendons
  (through sites), two of them limited, one coupled by a tendon equality, actuators on all three
  tendons and one on a joint. At random states (the limits active in some), controls and
  activations: ``ten_length``, the dense tendon Jacobian (from ``ten_velocity`` at unit joint
  velocities), ``actuator_length``, ``actuator_velocity``, ``actuator_force``, ``qfrc_actuator``,
  ``qfrc_passive``, ``qacc`` and the constraint forces, as one column per equality row and one
  per limited tendon (zero where its limit row is absent).
* Menagerie's Franka Emika Panda with its hand (``tests/data/mjcf/menagerie/franka_emika_panda/
  panda.xml``: the fingers coupled by a joint equality and driven through the fixed tendon
  ``split`` by a servo). Its mesh geoms are removed before MuJoCo compiles it (the meshes are not
  shipped; the inertias are explicit, so the dynamics is unchanged, and the arm alone makes no
  contact). At random states inside the joint ranges and controls inside the control ranges:
  ``qacc``, ``efc_force``, ``actuator_length``, ``actuator_velocity``, ``actuator_force``,
  ``qfrc_actuator``.

Run: ``python tests/reference/generate_mujoco_tendons.py`` (needs mujoco).
"""

import os
import re

import mujoco
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "data")
OUT = os.path.join(DATA, "mujoco", "tendons")
DRIVE = os.path.join(DATA, "mjcf", "constraints", "tendon_drive.xml")
PANDA = os.path.join(DATA, "mjcf", "menagerie", "franka_emika_panda", "panda.xml")


def _dense_tendon_jacobian(m, d):
    J = np.zeros((m.ntendon, m.nv))
    qvel = d.qvel.copy()
    for k in range(m.nv):
        d.qvel[:] = 0.0
        d.qvel[k] = 1.0
        mujoco.mj_fwdVelocity(m, d)
        J[:, k] = d.ten_velocity
    d.qvel[:] = qvel
    mujoco.mj_forward(m, d)
    return J


def _limit_forces(m, d):
    """One column per limited tendon: its limit row's force, zero where the row is absent."""
    limited = np.flatnonzero(m.tendon_limited)
    out = np.zeros(len(limited))
    for r in range(d.nefc):
        if d.efc_type[r] == mujoco.mjtConstraint.mjCNSTR_LIMIT_TENDON:
            out[list(limited).index(d.efc_id[r])] = d.efc_force[r]
    return out


def drive(rng, n=8):
    m = mujoco.MjModel.from_xml_path(DRIVE)
    d = mujoco.MjData(m)
    keys = ("qpos", "qvel", "ctrl", "act", "ten_length", "actuator_length", "actuator_velocity")
    keys += ("actuator_force", "qfrc_actuator", "qfrc_passive", "qacc")
    out = {k: [] for k in keys + ("ten_J", "eq_force", "limit_force")}
    for _ in range(n):
        d.qpos[:] = rng.uniform(-0.8, 0.8, m.nq)
        d.qvel[:] = rng.uniform(-1.0, 1.0, m.nv)
        d.ctrl[:] = rng.uniform(-1.5, 1.5, m.nu)  # beyond the control ranges of two actuators
        d.act[:] = rng.uniform(-1.0, 1.0, m.na)
        mujoco.mj_forward(m, d)
        assert np.all(d.efc_type[: d.ne] == mujoco.mjtConstraint.mjCNSTR_EQUALITY) and d.nf == 0
        out["ten_J"].append(_dense_tendon_jacobian(m, d))
        out["eq_force"].append(d.efc_force[: d.ne].copy())
        out["limit_force"].append(_limit_forces(m, d))
        for k in keys:
            out[k].append(getattr(d, k).copy())
    res = {f"drive_{k}": np.array(v) for k, v in out.items()}
    active = (res["drive_limit_force"] != 0).sum(0)
    assert np.all(active >= 2), f"each tendon limit should act in some states, got {active}"
    return res


def panda_without_meshes():
    """The Panda's XML without its mesh assets and mesh geoms (MuJoCo needs the files of both)."""
    with open(PANDA, encoding="utf-8") as fh:
        text = fh.read()
    text = re.sub(r"<mesh [^>]*/>", "", text)
    text = re.sub(r"<geom [^>]*mesh=[^>]*/>", "", text)
    text = re.sub(r'<geom type="mesh"[^>]*/>', "", text)  # the visual and collision classes' defaults
    return text


def panda(rng, n=8):
    m = mujoco.MjModel.from_xml_string(panda_without_meshes())
    d = mujoco.MjData(m)
    keys = ("qpos", "qvel", "ctrl", "qacc", "efc_force", "actuator_length", "actuator_velocity")
    keys += ("actuator_force", "qfrc_actuator")
    out = {k: [] for k in keys}
    home = m.key_qpos[0]
    lo, hi = m.jnt_range[:, 0], m.jnt_range[:, 1]
    for _ in range(n):
        q = np.clip(home + rng.uniform(-0.3, 0.3, m.nq), lo + 0.05 * (hi - lo), hi - 0.05 * (hi - lo))
        q[7:9] = rng.uniform(0.005, 0.035, 2)  # the fingers apart: the equality row carries load
        d.qpos[:] = q
        d.qvel[:] = rng.uniform(-0.5, 0.5, m.nv)
        clo, chi = m.actuator_ctrlrange[:, 0], m.actuator_ctrlrange[:, 1]
        d.ctrl[:] = clo + (chi - clo) * rng.uniform(0.0, 1.0, m.nu)
        mujoco.mj_forward(m, d)
        assert d.ncon == 0 and d.nefc == d.ne == 1, (d.ncon, d.nefc, d.ne)
        for k in keys:
            out[k].append(getattr(d, k).copy())
    return {f"panda_{k}": np.array(v) for k, v in out.items()}


def main():
    os.makedirs(OUT, exist_ok=True)
    rng = np.random.default_rng(7)
    out = {**drive(rng), **panda(rng)}
    np.savez(os.path.join(OUT, "reference.npz"), **out)
    print("wrote", os.path.join(OUT, "reference.npz"), "mujoco", mujoco.__version__)


if __name__ == "__main__":
    main()
