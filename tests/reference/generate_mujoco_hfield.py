"""MuJoCo reference for height fields (tests/test_heightfield.py). MuJoCo is not a jaxdyn
dependency; Pillow writes the PNG file.

    pip install mujoco pillow   # mujoco 4.x
    python tests/reference/generate_mujoco_hfield.py

Writes ``tests/data/mujoco/contact/hfield_terrain.png`` (an 8-bit greyscale image of the
terrain below) and ``hfield.npz`` with:

* the terrain: a 13 x 15 field (``size="0.6 0.7 0.08 0.05"``, at ``pos="0.05 -0.03 0"``) of
  smooth bumps plus noise, given inline (``terrain_xml``'s ``elevation``) and as the PNG
  (``png_xml``); MuJoCo's ``hfield_data`` of both (``terrain_data``, ``png_data``);
* MuJoCo's surface height (``mj_ray`` down onto the field, the shape's body excluded) at 400
  random points over it, 80 of them on inner grid lines (``ray_xy``, ``ray_z``);
* static contacts of six shapes on it (``shapes``: sphere, capsule, box, cylinder, ellipsoid,
  and a mesh, a hexagonal prism given by its 12 vertices): for each, ``POSES`` random
  positions over the field and random orientations (``<shape>_qpos``), each lowered until
  MuJoCo's deepest contact with the field is 2 mm deep (bisection on the height, MuJoCo's
  ``mj_collision``); the deepest contact's ``dist``, normal (``frame[:3]``, from the field to the
  shape) and position (``<shape>_dist``, ``_normal``, ``_pos``), and ``<shape>_xml``;
* rest states, at 1 ms (MuJoCo's ``Euler``, default ``solref``): a 5 cm, 1 kg ball released 1 mm
  above the bottom of a triangulated bowl, 1 cm off its axis (``bowl_xml``; a grid vertex with
  six faces around it; 4 s, by when it has stopped rolling: its speed is below 1 mm/s from
  4 s on), and a 1 kg box (10 x 8 x 6 cm) on a field sloped 10 degrees along x (``slope_xml``,
  sliding friction 1; 1 s): ``<scene>_qpos0`` and ``<scene>_qpos`` (the end).
"""

from __future__ import annotations

import os

import mujoco
import numpy as np
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "data", "mujoco", "contact")
POSES = 24
DEPTH = 0.002

rng = np.random.default_rng(41)
NROW, NCOL = 13, 15
_y, _x = np.meshgrid(np.linspace(1, -1, NROW), np.linspace(-1, 1, NCOL), indexing="ij")  # image order: top row +y
TERRAIN = 0.5 + 0.3 * np.sin(3 * _x + 1) * np.cos(2 * _y) + 0.12 * rng.uniform(-1, 1, (NROW, NCOL))
PNG8 = np.round(255 * (TERRAIN - TERRAIN.min()) / np.ptp(TERRAIN)).astype(np.uint8)

FIELD = '<geom name="terrain" type="hfield" hfield="terrain" pos="0.05 -0.03 0"/>'
ASSET_INLINE = (
    f'<hfield name="terrain" nrow="{NROW}" ncol="{NCOL}" size="0.6 0.7 0.08 0.05" elevation="'
    + " ".join(f"{v:.6f}" for v in TERRAIN.ravel())
    + '"/>'
)
ASSET_PNG = '<hfield name="terrain" file="hfield_terrain.png" size="0.6 0.7 0.08 0.05"/>'
HEX = " ".join(
    f"{0.05 * np.cos(a):.6f} {0.04 * np.sin(a):.6f} {z}" for z in (-0.025, 0.025) for a in np.arange(6) * np.pi / 3
)
SHAPES = {
    "sphere": '<geom name="shape" type="sphere" size="0.04"/>',
    "capsule": '<geom name="shape" type="capsule" size="0.03 0.06"/>',
    "box": '<geom name="shape" type="box" size="0.05 0.04 0.03"/>',
    "cylinder": '<geom name="shape" type="cylinder" size="0.04 0.03"/>',
    "ellipsoid": '<geom name="shape" type="ellipsoid" size="0.05 0.04 0.03"/>',
    "mesh": '<geom name="shape" type="mesh" mesh="hex"/>',
}


def scene(asset, body, extra_asset=""):
    return f"""<mujoco><option timestep="0.001"/><asset>{asset}{extra_asset}</asset>
<worldbody>{FIELD}<body name="shape" pos="0 0 0.3"><freejoint/>{body}</body></worldbody></mujoco>"""


def deepest(m, d):
    """MuJoCo's deepest contact between the field and the shape (dist, normal, pos), or None."""
    mujoco.mj_kinematics(m, d)
    mujoco.mj_collision(m, d)
    if d.ncon == 0:
        return None
    c = min(d.contact[: d.ncon], key=lambda c: c.dist)
    return c.dist, c.frame[:3].copy(), c.pos.copy()


def surface_rays(xml, n=400):
    """MuJoCo's surface heights (``mj_ray`` straight down onto the field) at ``n`` random points
    over the field, the grid's vertices and edges among them."""
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    xy = np.stack([rng.uniform(-0.55, 0.65, n), rng.uniform(-0.73, 0.67, n)], -1)
    xy[:40, 0] = (
        0.05 - 0.6 + 1.2 * rng.integers(1, NCOL - 1, 40) / (NCOL - 1) + 1e-9
    )  # on grid lines x_j (1 nm off: MuJoCo's ray can slip through exactly there)
    xy[40:80, 1] = -0.03 - 0.7 + 1.4 * rng.integers(1, NROW - 1, 40) / (NROW - 1) + 1e-9  # on grid lines y_i
    body = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, "shape")
    geom = np.zeros(1, np.int32)
    z = [
        2.0 - mujoco.mj_ray(m, d, np.array([x, y, 2.0]), np.array([0.0, 0.0, -1.0]), None, 1, body, geom) for x, y in xy
    ]
    return xy, np.array(z)


def static_contacts(name):
    xml = scene(ASSET_INLINE, SHAPES[name], f'<mesh name="hex" vertex="{HEX}"/>' if name == "mesh" else "")
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    out = {"qpos": [], "dist": [], "normal": [], "pos": []}
    while len(out["qpos"]) < POSES:
        x, y = rng.uniform(-0.45, 0.45), rng.uniform(-0.55, 0.55)
        quat = rng.normal(size=4)
        quat /= np.linalg.norm(quat)
        lo, hi = -0.1, 0.3  # heights of the body: deep in, clear of the field
        for _ in range(60):
            z = 0.5 * (lo + hi)
            d.qpos[:] = [x, y, z, *quat]
            c = deepest(m, d)
            if c is not None and c[0] < -DEPTH:
                lo = z
            else:
                hi = z
        d.qpos[:] = [x, y, hi, *quat]
        c = deepest(m, d)
        if c is None or abs(c[0] + DEPTH) > 1e-6:
            continue  # the deepest contact jumps here (a new prism): draw another pose
        out["qpos"].append(d.qpos.copy())
        for k, v in zip(("dist", "normal", "pos"), c):
            out[k].append(v)
    return xml, {k: np.array(v) for k, v in out.items()}


BOWL = (
    '<hfield name="terrain" nrow="11" ncol="11" size="0.5 0.5 0.1 0.05" elevation="'
    + " ".join(f"{(x * x + y * y):.6f}" for y in np.linspace(1, -1, 11) for x in np.linspace(-1, 1, 11))
    + '"/>'
)
SLOPE = (
    '<hfield name="terrain" nrow="9" ncol="9" size="0.5 0.5 '
    + f"{np.tan(np.radians(10)):.9f}"
    + ' 0.05" elevation="'
    + " ".join(f"{x:.6f}" for _ in range(9) for x in np.linspace(0, 1, 9))
    + '"/>'
)


def rest(asset, body, start, steps):
    xml = scene(asset, body).replace(FIELD, '<geom name="terrain" type="hfield" hfield="terrain"/>')
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    d.qpos[:] = start
    qpos0 = d.qpos.copy()
    for _ in range(steps):
        mujoco.mj_step(m, d)
    return xml, qpos0, d.qpos.copy()


def main():
    Image.fromarray(PNG8, "L").save(os.path.join(DATA, "hfield_terrain.png"))
    out = {}
    terrain_xml = scene(ASSET_INLINE, SHAPES["sphere"])
    png_xml = scene(ASSET_PNG, SHAPES["sphere"])
    out["terrain_xml"] = np.array(terrain_xml)
    out["png_xml"] = np.array(png_xml)
    out["terrain_data"] = mujoco.MjModel.from_xml_string(terrain_xml).hfield_data.reshape(NROW, NCOL)
    out["ray_xy"], out["ray_z"] = surface_rays(terrain_xml)
    cwd = os.getcwd()
    os.chdir(DATA)  # the PNG is found next to the scene, as the test loads it
    try:
        out["png_data"] = mujoco.MjModel.from_xml_string(png_xml).hfield_data.reshape(NROW, NCOL)
    finally:
        os.chdir(cwd)
    for name in SHAPES:
        xml, r = static_contacts(name)
        out[f"{name}_xml"] = np.array(xml)
        for k, v in r.items():
            out[f"{name}_{k}"] = v
        print(name, "deepest normal z", r["normal"][:, 2].min().round(3))
    # a ball in a bowl whose bottom is a grid vertex (six faces around it), a box on a slope
    ball = '<geom name="shape" type="sphere" size="0.05" mass="1"/>'
    xml, q0, q1 = rest(BOWL, ball, [0.01, -0.005, 0.05 + 0.001, 1, 0, 0, 0], 4000)
    out.update(bowl_xml=np.array(xml), bowl_qpos0=q0, bowl_qpos=q1)
    box = '<geom name="shape" type="box" size="0.05 0.04 0.03" mass="1"/>'
    t = np.radians(10)
    z0 = np.tan(t) * 0.5 + 0.03 / np.cos(t) + 0.001  # the slope's height at x = 0 is tan(10 deg) * 0.5
    xml, q0, q1 = rest(SLOPE, box, [0.0, 0.0, z0, np.cos(-t / 2), 0, np.sin(-t / 2), 0], 1000)
    out.update(slope_xml=np.array(xml), slope_qpos0=q0, slope_qpos=q1)
    out["shapes"] = np.array(list(SHAPES))
    out["mujoco_version"] = np.array(mujoco.__version__)
    np.savez_compressed(os.path.join(DATA, "hfield.npz"), **out)
    print("bowl", out["bowl_qpos"][:3], "slope", out["slope_qpos"][:7])


if __name__ == "__main__":
    main()
