"""MuJoCo reference for ground contact (tests/test_contact_mujoco.py). MuJoCo is not a jaxdyn
dependency.

    pip install mujoco          # 4.x
    python tests/reference/generate_mujoco_contact.py

Writes the models and the reference into ``tests/data/mujoco/contact/``:

* ``box.xml``, ``capsule.xml``: a box (1 kg, 0.2 x 0.12 x 0.06 m) and a capsule (0.5 kg,
  radius 3 cm, half-length 10 cm) on a free joint, above a plane;
* ``box_on_box.xml``: the same box above a box on the world (a table, 0.6 x 0.5 x 0.1 m, its
  top face at z = 0.1, yawed 15 degrees): box-box contact;
* ``mesh.xml``: a hexagonal prism (1 kg, circumradius 8 cm, 6 cm high) given as a mesh of its
  vertices and two inner points, above a plane: mesh-plane contact (the convex hull);
* ``solo12.xml``: the Solo-12 quadruped of ``jaxdyn/robots/solo12.urdf`` written as MJCF (the
  URDF's links, inertias and joints; the fixed ankle joint becomes a welded foot body) with a
  free base and a sphere of radius 2 cm on each foot, the only geoms that collide;
* ``reference.npz``: MuJoCo's trajectories (``qpos`` every millisecond), contact normal forces
  and summary numbers for each scenario (keys ``<scenario>_<name>``).

Every geom's MuJoCo contact softness is chosen so that MuJoCo's steady penetration equals the
Hunt-Crossley penetration of jaxdyn's default law (``k d^p`` = the load of each contact point,
``k = 1e6 N/m^1.5``, ``p = 1.5``): ``solimp`` is MuJoCo's default ``(0.9, 0.95, 0.001, 0.5,
2)`` and ``solref = (timeconst, 1)`` (critical damping) with the time constant found by
bisection on the penetration after settling (MuJoCo's penetration at rest does not depend on
the load, Hunt-Crossley's does, so they can agree at one load only: the model's weight at
rest). Both simulators then run the same scenario at ``h = 1 ms``: MuJoCo's ``Euler``
integrator, elliptic friction cones, ``condim = 3`` (sliding friction 1, no torsional or
rolling friction, as jaxdyn), and jaxdyn's ``"implicit_euler"``.

Scenarios:

* ``box``, ``capsule``, ``mesh``: dropped tilted from a few centimetres, 1.5 s;
  ``box_on_box``: the box dropped tilted as ``box``, 8 cm above the table instead of the floor;
* ``solo12``: base 1 cm above standing height, joints at the standing posture ``q_ref``; PD
  control ``tau = Kp (q_ref - q) - Kd qd`` on the 12 joints (``Kp = 5 N m/rad``,
  ``Kd = 0.1 N m s/rad``), computed from the state at the start of every step, 2 s.
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET

import mujoco
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
OUT = os.path.join(HERE, "..", "data", "mujoco", "contact")
URDF = os.path.join(ROOT, "jaxdyn", "robots", "solo12.urdf")

DT = 1e-3
K, P = 1e6, 1.5  # jaxdyn's default Hunt-Crossley stiffness and exponent
G = 9.81
FOOT_RADIUS = 0.02
KP, KD = 5.0, 0.1
Q_STAND = np.array([0.0, 0.8, -1.6, 0.0, 0.8, -1.6, 0.0, -0.8, 1.6, 0.0, -0.8, 1.6])
STRIDE = 10
SOLIMP = "0.9 0.95 0.001 0.5 2"
OPTION = f'<option timestep="{DT}" integrator="Euler" cone="elliptic"/>'

# a body (or a table and a body) on a free joint above the floor, with the contact softness tc
SCENE = """<mujoco model="{name}">
  <!-- written by tests/reference/generate_mujoco_contact.py -->
  {option}{assets}
  <default><geom condim="3" friction="1 0 0" solimp="{solimp}" solref="{tc:.6f} 1"/></default>
  <worldbody>
    <geom name="floor" type="plane" size="0 0 1"/>
{bodies}
  </worldbody>
</mujoco>
"""
BOX_BODY = '<body name="box" pos="0 0 {z}"><freejoint/><geom type="box" size="0.1 0.06 0.03" mass="1"/></body>'
TABLE = '<geom name="table" type="box" size="0.3 0.25 0.05" pos="0.02 -0.01 0.05" euler="0 0 15"/>'
CAPSULE_BODY = """<body name="capsule" pos="0 0 0.2"><freejoint/>
      <geom type="capsule" size="0.03 0.1" euler="0 90 0" mass="0.5"/></body>"""
# a hexagonal prism (circumradius 8 cm, height 6 cm) as a mesh of its 12 vertices, with two
# vertices inside it (MuJoCo and jaxdyn collide the convex hull); the inertia of the solid prism
HEX_R, HEX_H = 0.08, 0.03
HEX = [(HEX_R * np.cos(a), HEX_R * np.sin(a), z) for z in (-HEX_H, HEX_H) for a in np.arange(6) * np.pi / 3]
HEX_ASSET = (
    '\n  <asset><mesh name="hexprism" vertex="'
    + " ".join(f"{x:.10g} {y:.10g} {z:.10g}" for x, y, z in HEX + [(0.01, 0, 0), (0, 0.02, 0.01)])
    + '"/></asset>'
)
MESH_BODY = """<body name="mesh" pos="0 0 0.2"><freejoint/>
      <inertial pos="0 0 0" mass="1" diaginertia="{ixx:.10g} {ixx:.10g} {izz:.10g}"/>
      <geom type="mesh" mesh="hexprism"/></body>""".format(
    ixx=5 * HEX_R**2 / 24 + (2 * HEX_H) ** 2 / 12, izz=5 * HEX_R**2 / 12
)
SCENES = {
    "box": "    " + BOX_BODY.format(z=0.2),
    "box_on_box": "    " + TABLE + "\n    " + BOX_BODY.format(z=0.3),
    "capsule": "    " + CAPSULE_BODY,
    "mesh": "    " + MESH_BODY,
}
ASSETS = {"mesh": HEX_ASSET}


def scene(name, tc, **opt):
    """The MJCF of scenario ``name`` with the solref time constant ``tc``."""
    return SCENE.format(name=name, bodies=SCENES[name], assets=ASSETS.get(name, ""), tc=tc, **opt)


def _f(v):
    return " ".join(f"{float(x):.10g}" for x in v)


def solo12_mjcf(tc):
    """Solo-12 from the URDF: one MJCF body per link, inertial from ``<inertial>`` (origin
    without rotation in this URDF), hinge joints with the URDF axis at the child's origin, the
    fixed ankle joint as a body without joint; a sphere geom on each foot (the URDF has no
    collision geometry); the other links carry no geoms."""
    robot = ET.parse(URDF).getroot()
    links = {ln.get("name"): ln for ln in robot.findall("link")}
    children = {}
    for j in robot.findall("joint"):
        children.setdefault(j.find("parent").get("link"), []).append(j)

    def inertial(link, ind):
        i = link.find("inertial")
        o = i.find("origin")
        if o is not None and np.any(np.array(o.get("rpy", "0 0 0").split(), float)):
            raise ValueError("rotated inertial origin")
        pos = o.get("xyz", "0 0 0").split() if o is not None else [0, 0, 0]
        m = i.find("mass").get("value")
        a = {k: float(v) for k, v in i.find("inertia").attrib.items()}
        full = [a["ixx"], a["iyy"], a["izz"], a["ixy"], a["ixz"], a["iyz"]]
        return f'{ind}<inertial pos="{_f(map(float, pos))}" mass="{m}" fullinertia="{_f(full)}"/>\n'

    def body(name, joint, ind):
        s = ""
        if joint is not None:
            o = joint.find("origin")
            if np.any(np.array(o.get("rpy", "0 0 0").split(), float)):
                raise ValueError("rotated joint origin")
            s += f'{ind}<body name="{name}" pos="{o.get("xyz")}">\n'
        s += inertial(links[name], ind + "  ")
        if joint is not None and joint.get("type") == "revolute":
            s += f'{ind}  <joint name="{joint.get("name")}" axis="{joint.find("axis").get("xyz")}"/>\n'
        elif joint is None:
            s += f"{ind}  <freejoint/>\n"
        if name.endswith("FOOT"):
            s += f'{ind}  <geom type="sphere" size="{FOOT_RADIUS}" contype="1" conaffinity="1"/>\n'
        for j in children.get(name, []):
            s += body(j.find("child").get("link"), j, ind + "  ")
        if joint is not None:
            s += f"{ind}</body>\n"
        return s

    inner = body("base_link", None, "      ")
    return f"""<mujoco model="solo12">
  <!-- written by tests/reference/generate_mujoco_contact.py from jaxdyn/robots/solo12.urdf -->
  {OPTION}
  <default><geom condim="3" friction="1 0 0" solimp="{SOLIMP}" solref="{tc:.6f} 1"/></default>
  <worldbody>
    <geom name="floor" type="plane" size="0 0 1"/>
    <body name="base_link" pos="0 0 0.3">
{inner}    </body>
  </worldbody>
</mujoco>
"""


def _quat_axis(axis, angle):
    axis = np.asarray(axis, float) / np.linalg.norm(axis)
    return np.array([np.cos(angle / 2), *(np.sin(angle / 2) * axis)])


def normal_forces(m, d):
    """Normal force of every active contact (``mj_contactForce``, contact frame: normal first)."""
    f = np.zeros(6)
    out = []
    for i in range(d.ncon):
        mujoco.mj_contactForce(m, d, i, f)
        out.append(f[0])
    return np.array(out)


def penetration(m, d):
    """Deepest penetration over the active contacts (``-dist``)."""
    return max((-d.contact[i].dist for i in range(d.ncon)), default=0.0)


def simulate(xml, qpos0, seconds, control=None):
    """MuJoCo Euler rollout at 1 ms; returns qpos (every step), total normal force and the
    deepest penetration at every step."""
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    d.qpos[:] = qpos0
    mujoco.mj_forward(m, d)
    n = int(round(seconds / DT))
    qs, fz, pen = [d.qpos.copy()], [normal_forces(m, d).sum()], [penetration(m, d)]
    for _ in range(n):
        if control is not None:
            d.qfrc_applied[:] = control(d.qpos, d.qvel)
        mujoco.mj_step(m, d)
        qs.append(d.qpos.copy())
        mujoco.mj_forward(m, d)  # contact forces at the new state (mj_step leaves the old ones)
        fz.append(normal_forces(m, d).sum())
        pen.append(penetration(m, d))
    return m, d, np.array(qs), np.array(fz), np.array(pen)


def pd(qpos, qvel):
    tau = np.zeros(18)
    tau[6:] = KP * (Q_STAND - qpos[7:]) - KD * qvel[6:]
    return tau


def tune(make_xml, qpos0, seconds, target, control=None):
    """Bisection on the solref time constant (dampratio 1) so that the steady penetration is
    ``target``; the penetration at rest grows with the time constant."""
    lo, hi = 2 * DT, 0.2
    for _ in range(40):
        tc = np.sqrt(lo * hi)
        pen = simulate(make_xml(tc), qpos0, seconds, control)[4][-1]
        lo, hi = (tc, hi) if pen < target else (lo, tc)
    return np.sqrt(lo * hi)


def settle_time(t, x, tol):
    """The first time after which ``x`` stays within ``tol`` of its final value."""
    out = np.flatnonzero(np.abs(x - x[-1]) > tol)
    return t[out[-1] + 1] if len(out) else t[0]


def scenario(name, make_xml, qpos0, seconds, load_per_point, control=None):
    target = (load_per_point / K) ** (1 / P)
    tc = tune(make_xml, qpos0, seconds, target, control)
    xml = make_xml(tc)
    with open(os.path.join(OUT, f"{name}.xml"), "w") as fh:
        fh.write(xml)
    m, d, qs, fz, pen = simulate(xml, qpos0, seconds, control)
    weight = -m.opt.gravity[2] * mujoco.mj_getTotalmass(m)
    t = np.arange(len(qs)) * DT
    out = {
        "qpos0": np.asarray(qpos0, float),
        "qpos": qs[::STRIDE],  # every 10 ms
        "qpos_final": qs[-1],
        "normal_force": fz,  # every ms
        "penetration": pen[-1],
        "weight": np.array(weight),
        "timeconst": np.array(tc),
        "hunt_crossley_penetration": np.array(target),
        "settle_time_height": np.array(settle_time(t, qs[:, 2], 1e-4)),
        "settle_time_force": np.array(settle_time(t, fz / weight, 1e-2)),
        "ncon": np.array(d.ncon),
    }
    print(
        f"{name}: solref timeconst {tc:.5f} s, penetration {pen[-1] * 1e3:.4f} mm (HC {target * 1e3:.4f}),"
        f" z {qs[-1, 2]:.6f}, normal force {fz[-1]:.6f} N (weight {weight:.6f}), ncon {d.ncon},"
        f" settled: height (0.1 mm) {out['settle_time_height']:.3f} s, force (1 %) {out['settle_time_force']:.3f} s"
    )
    return {f"{name}_{k}": v for k, v in out.items()}, xml


def main():
    os.makedirs(OUT, exist_ok=True)
    opt = dict(option=OPTION, solimp=SOLIMP)
    out = {"dt": np.array(DT), "kp": np.array(KP), "kd": np.array(KD), "q_stand": Q_STAND}
    box0 = np.array([0.0, 0.0, 0.08, *_quat_axis([1.0, 0.5, 0.0], 0.3)])
    res, _ = scenario("box", lambda tc: scene("box", tc, **opt), box0, 1.5, G / 4)
    out.update(res)
    res, _ = scenario(
        "box_on_box", lambda tc: scene("box_on_box", tc, **opt), box0 + [0, 0, 0.1, 0, 0, 0, 0], 1.5, G / 4
    )
    out.update(res)
    cap0 = np.array([0.0, 0.0, 0.08, *_quat_axis([0.2, 1.0, 0.0], 0.25)])
    res, _ = scenario("capsule", lambda tc: scene("capsule", tc, **opt), cap0, 1.5, 0.5 * G / 2)
    out.update(res)
    mesh0 = np.array([0.0, 0.0, 0.1, *_quat_axis([1.0, 0.4, 0.0], 0.35)])
    res, _ = scenario("mesh", lambda tc: scene("mesh", tc, **opt), mesh0, 1.5, G / 6)
    out.update(res)
    m = mujoco.MjModel.from_xml_string(solo12_mjcf(0.02))
    stand_height = 0.16 * 2 * np.cos(0.8) + FOOT_RADIUS
    solo0 = np.concatenate([[0.0, 0.0, stand_height + 0.01, 1.0, 0.0, 0.0, 0.0], Q_STAND])
    weight = -m.opt.gravity[2] * mujoco.mj_getTotalmass(m)
    res, xml = scenario("solo12", solo12_mjcf, solo0, 2.0, weight / 4, pd)
    out.update(res)
    # without friction (condim 1) the feet slide to the PD equilibrium under vertical ground
    # forces: the state that both friction laws creep toward
    _, _, qs, fz, pen = simulate(xml.replace('condim="3"', 'condim="1"'), solo0, 6.0, pd)
    out.update(solo12_frictionless_qpos_final=qs[-1], solo12_frictionless_normal_force=fz[-1])
    print(f"solo12 frictionless: z {qs[-1, 2]:.6f}, joints {np.round(qs[-1, 7:10], 5)}, force {fz[-1]:.6f} N")
    out["mujoco_version"] = np.array(mujoco.__version__)
    np.savez_compressed(os.path.join(OUT, "reference.npz"), **out)


if __name__ == "__main__":
    main()
