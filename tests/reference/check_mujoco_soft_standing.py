"""A quadruped standing on soft feet, as authored, in MuJoCo and in jaxdyn.

    pip install mujoco playground     # not jaxdyn dependencies (only the files of playground are read)
    python tests/reference/check_mujoco_soft_standing.py

MuJoCo Playground's Go1 feet-only scene (``scene_mjx_feetonly_flat_terrain.xml``; its feet set
``solimp="0.9 .95 0.023"``, MuJoCo's pyramidal cone, Euler at 4 ms), released from its ``home``
keyframe with the position servos (``kp`` 35, the scene's force ranges) holding ``home``'s
``ctrl``, 2 s. Meshes are dropped (they are visual). MuJoCo C with the scene's own options, and
jaxdyn's ``"implicit_euler"`` step driven through the model's actuators with the default
Hunt-Crossley law and with ``Contact(normal="mujoco")``. Prints the base height and the feet's
mean penetration at the end, and their differences from MuJoCo's. With MuJoCo 4.0.0 (2026-11-29):

    MuJoCo 4.0.0: base 0.26047 m, feet 0.53 mm deep
    jaxdyn hunt_crossley: base 0.26215 m (+1.68 mm), feet 0.99 mm deep (+0.45 mm)
    jaxdyn mujoco: base 0.26150 m (+1.03 mm), feet 0.53 mm deep (+0.00 mm)

The feet sink as authored with MuJoCo's law; the base's remaining millimetre is the legs' (the
scene's single solver iteration in MuJoCo, and the friction laws, which differ).
"""

from __future__ import annotations

import importlib.util
import os
import tempfile
import warnings
import xml.etree.ElementTree as ET

import jax
import jax.numpy as jnp
import mujoco
import numpy as np

import jaxdyn
from jaxdyn import contact as C
from jaxdyn import sim

SECONDS = 2.0


def scene(workdir):
    spec = importlib.util.find_spec("mujoco_playground")
    src = os.path.join(os.path.dirname(spec.origin), "_src", "locomotion", "go1", "xmls")
    for f in os.listdir(src):
        if f.endswith(".xml"):
            tree = ET.parse(os.path.join(src, f))
            for parent in list(tree.getroot().iter()):
                for c in list(parent):
                    if (c.tag == "mesh" and parent.tag == "asset") or (
                        c.tag == "geom" and ("mesh" in c.attrib or c.get("class") == "visual")
                    ):
                        parent.remove(c)
            tree.write(os.path.join(workdir, f))
    return os.path.join(workdir, "scene_mjx_feetonly_flat_terrain.xml")


def feet_depth(z_feet, radius):
    return float(np.mean(radius - z_feet))


def main():
    jax.config.update("jax_enable_x64", True)
    with tempfile.TemporaryDirectory() as tmp:
        path = scene(tmp)
        mm = mujoco.MjModel.from_xml_path(path)
        d = mujoco.MjData(mm)
        d.qpos[:], d.ctrl[:] = mm.key_qpos[0], mm.key_ctrl[0]
        steps = int(round(SECONDS / mm.opt.timestep))
        for _ in range(steps):
            mujoco.mj_step(mm, d)
        feet = [mujoco.mj_name2id(mm, mujoco.mjtObj.mjOBJ_GEOM, n) for n in ("FR", "FL", "RR", "RL")]
        radius = float(mm.geom_size[feet[0], 0])
        z_mj, depth_mj = float(d.qpos[2]), feet_depth(d.geom_xpos[feet, 2], radius)
        print(f"MuJoCo {mujoco.__version__}: base {z_mj:.5f} m, feet {1e3 * depth_mj:.2f} mm deep")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            model = jaxdyn.load_mjcf(path, dtype=jnp.float64)
        q0 = jnp.asarray(mm.key_qpos[0])
        ctrl = jnp.tile(jnp.asarray(mm.key_ctrl[0]), (steps, 1))
        fi = [model.geoms.names.index(n) for n in ("FR", "FL", "RR", "RL")]
        for law in ("hunt_crossley", "mujoco"):
            con = C.Contact(C.Ground.from_model(model), normal=law, collide_pairs=False)
            run = jax.jit(
                lambda q: sim.rollout(model, q, jnp.zeros(model.nv), None, mm.opt.timestep, contact=con, ctrl=ctrl)
            )
            tr = run(q0)
            q = tr.q[-1]
            pf = con.point_forces(model, q, tr.qd[-1])
            depth = float(np.mean(np.asarray(pf.depth)[[pf.geom.index(g) for g in fi]]))
            z = float(q[2])
            print(
                f"jaxdyn {law}: base {z:.5f} m ({1e3 * (z - z_mj):+.2f} mm), feet {1e3 * depth:.2f} mm deep "
                f"({1e3 * (depth - depth_mj):+.2f} mm)"
            )


if __name__ == "__main__":
    main()
