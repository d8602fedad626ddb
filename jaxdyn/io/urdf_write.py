"""Write a model's inertial parameters back into its URDF.

:func:`write_urdf` takes the ORIGINAL URDF (the one the model was loaded from) and replaces the
``<inertial>`` of the link of every model body with the model's mass, centre of mass
(``<origin xyz>``, ``rpy="0 0 0"``) and full rotational inertia about the centre of mass, in the
link frame (the body frame of :func:`~jaxdyn.load_urdf` is the frame of the child link of the
body's joint). Everything else (joints, geometry, comments) is kept.

Fixed joints: the loader merges the inertia of links attached by fixed joints into the moving
body they hang from, so the model only knows the merged body. The merged inertia is written on
the body's own link and every link merged into it gets a zero inertial (``mass 0``, zero inertia;
the loader skips those, so re-loading the written file gives back exactly the model's
parameters). Some simulators dislike zero-mass links; the URDF remains valid for jaxdyn and
Pinocchio. Links fixed to the world in a fixed-base model take no part in the dynamics and are
left untouched.

Optionally (``dynamics=True``) each moving joint's ``<dynamics damping friction>`` is set from
``model.damping`` and ``model.friction``.
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET

import numpy as np

from .. import joints
from .._files import replace_atomically
from ..model import Model
from .urdf import URDFError, load_urdf, read_urdf_text


def _fmt(x) -> str:
    return format(float(x), ".17g")


def _set_inertial(link: ET.Element, m, c, I, indent: str):
    old = link.find("inertial")
    pos = 0
    if old is not None:
        pos = list(link).index(old)
        tail = old.tail
        link.remove(old)
    else:
        tail = link.text if link.text and not link.text.strip() else "\n" + indent
    inner = indent + "  "
    e = ET.Element("inertial")
    e.text = "\n" + inner
    o = ET.SubElement(e, "origin", {"xyz": " ".join(_fmt(v) for v in c), "rpy": "0 0 0"})
    o.tail = "\n" + inner
    ms = ET.SubElement(e, "mass", {"value": _fmt(m)})
    ms.tail = "\n" + inner
    ET.SubElement(
        e,
        "inertia",
        {
            "ixx": _fmt(I[0, 0]),
            "ixy": _fmt(I[0, 1]),
            "ixz": _fmt(I[0, 2]),
            "iyy": _fmt(I[1, 1]),
            "iyz": _fmt(I[1, 2]),
            "izz": _fmt(I[2, 2]),
        },
    ).tail = "\n" + indent
    e.tail = tail
    if old is None:
        link.text = "\n" + indent
    link.insert(pos, e)


def urdf_with_inertials(source, model: Model, *, dynamics: bool = False) -> str:
    """The URDF text of ``source`` (path or XML text) with ``model``'s inertial parameters (see
    the module docstring). ``model`` must have the bodies and joints that ``source`` loads to.

    Raises:
      URDFError: ``source`` cannot be read or parsed, or it does not describe ``model``.
      ValueError: a body has non-positive mass or a non-finite parameter.
    """
    text = read_urdf_text(source)
    ref = load_urdf(text, floating_base=model.floating_base)
    if ref.body_names != model.body_names or ref.joint_names != model.joint_names:
        raise URDFError(
            f"the URDF (bodies {', '.join(ref.body_names)}) does not describe model '{model.name}' "
            f"(bodies {', '.join(model.body_names)})"
        )
    mass = np.asarray(model.mass, np.float64)
    com = np.asarray(model.com, np.float64)
    inertia = np.asarray(model.inertia, np.float64)
    for b, name in enumerate(model.body_names):
        if not (np.all(np.isfinite(com[b])) and np.all(np.isfinite(inertia[b])) and np.isfinite(mass[b])):
            raise ValueError(f"write_urdf: body '{name}' has non-finite inertial parameters")
        if mass[b] < 0:
            raise ValueError(f"write_urdf: body '{name}' has negative mass {mass[b]}")
    inertia = 0.5 * (inertia + np.swapaxes(inertia, 1, 2))

    parser = ET.XMLParser(target=ET.TreeBuilder(insert_comments=True))
    root = ET.fromstring(text, parser=parser)
    links = {le.get("name"): le for le in root.findall("link")}
    joints = root.findall("joint")
    parent_of = {}  # child link -> (joint type, parent link, joint element)
    for je in joints:
        child, parent = je.find("child"), je.find("parent")
        assert child is not None and parent is not None  # load_urdf above has checked every joint
        parent_of[child.get("link")] = (je.get("type"), parent.get("link"), je)
    body_links = set(model.body_names)

    def owner(link):
        """The body link a link is rigidly attached to (None: the world)."""
        while link not in body_links:
            if link not in parent_of:
                return None
            link = parent_of[link][1]
        return link

    for link_name, le in links.items():
        if link_name in body_links:
            b = model.body_index(link_name)
            _set_inertial(le, mass[b], com[b], inertia[b], "    ")
        elif owner(link_name) is not None:
            _set_inertial(le, 0.0, np.zeros(3), np.zeros((3, 3)), "    ")
    if dynamics:
        damping = np.asarray(model.damping, np.float64)
        friction = np.asarray(model.friction, np.float64)
        for je in joints:
            jname = je.get("name")
            if jname is None or jname not in model.joint_names or je.get("type") == "fixed":
                continue
            sl = model.joint_v_slice(jname)
            if sl.stop - sl.start != 1:
                continue
            de = je.find("dynamics")
            if de is None:
                de = ET.SubElement(je, "dynamics")
                de.tail = "\n  "
            de.set("damping", _fmt(damping[sl.start]))
            de.set("friction", _fmt(friction[sl.start]))
    body = ET.tostring(root, encoding="unicode")
    return '<?xml version="1.0" encoding="utf-8"?>\n' + body + "\n"


def write_urdf(source, model: Model, out_path, *, dynamics: bool = False) -> str:
    """Write :func:`urdf_with_inertials` of ``source`` to ``out_path`` and return the text
    (written under a temporary name beside it, then renamed: a failed write leaves an existing
    file as it was).

    Raises:
      ValueError: ``out_path`` is the input file (the original is never overwritten).
    """
    out = os.path.realpath(os.fspath(out_path))
    src = str(source)
    if not src.lstrip().startswith("<") and os.path.exists(src) and os.path.realpath(src) == out:
        raise ValueError(
            f"write_urdf: the output path {out_path} is the input URDF; choose another path "
            "(the original is never overwritten)"
        )
    text = urdf_with_inertials(source, model, dynamics=dynamics)
    with replace_atomically(out) as tmp, open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
    return text


def _rpy(R):
    """URDF ``rpy`` of a rotation ``R = Rz(yaw) Ry(pitch) Rx(roll)``."""
    R = np.asarray(R, np.float64)
    pitch = float(np.arcsin(np.clip(-R[2, 0], -1.0, 1.0)))
    if abs(R[2, 0]) < 1.0 - 1e-12:
        return float(np.arctan2(R[2, 1], R[2, 2])), pitch, float(np.arctan2(R[1, 0], R[0, 0]))
    return 0.0, pitch, float(np.arctan2(-R[0, 1], R[1, 1]))  # gimbal lock: roll folded into yaw


def model_to_urdf(model: Model, base_link: str = "base_link") -> str:
    """A URDF of ``model`` (a model built from numbers, e.g. :func:`jaxdyn.builders.chain`), so
    that other engines (Pinocchio, frax, MuJoCo) can load the same robot: one ``<link>`` per
    body with its ``<inertial>``, one ``<joint>`` per body with the placement (``xyz``/``rpy``)
    and axis. A fixed-base model hangs from ``base_link``; a floating model's root
    body is the URDF root (load it with ``floating_base=True``); ``base_link`` carries a unit
    inertial that no fixed-base dynamics sees (some URDF parsers require one). Revolute joints get the model's
    limits where finite (``+-1e3`` otherwise, URDF requires a ``<limit>``); armature, damping and
    friction are not written. Spherical joints have no URDF type and raise.
    """
    lines = [f'<robot name="{model.name}">']
    floating = model.floating_base
    if not floating:  # fixed to the world: its inertia takes no part (some parsers want one)
        lines += [
            f'  <link name="{base_link}">',
            "    <inertial>",
            '      <origin xyz="0 0 0" rpy="0 0 0"/>',
            '      <mass value="1"/>',
            '      <inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/>',
            "    </inertial>",
            "  </link>",
        ]
    q_lo, q_hi = np.asarray(model.q_lower, np.float64), np.asarray(model.q_upper, np.float64)
    eff, vel = np.asarray(model.effort_limit, np.float64), np.asarray(model.velocity_limit, np.float64)
    R0, p0, ax = (np.asarray(a, np.float64) for a in (model.placement_R, model.placement_p, model.axis))
    m, c, I = (np.asarray(a, np.float64) for a in (model.mass, model.com, model.inertia))
    lay = model.layout
    for i, (t, name, body, parent) in enumerate(
        zip(model.joint_types, model.joint_names, model.body_names, model.parents)
    ):
        lines += [
            f'  <link name="{body}">',
            "    <inertial>",
            f'      <origin xyz="{" ".join(map(_fmt, c[i]))}" rpy="0 0 0"/>',
            f'      <mass value="{_fmt(m[i])}"/>',
            "      <inertia "
            + " ".join(
                f'{k}="{_fmt(I[i][r, s])}"'
                for k, (r, s) in (
                    ("ixx", (0, 0)),
                    ("ixy", (0, 1)),
                    ("ixz", (0, 2)),
                    ("iyy", (1, 1)),
                    ("iyz", (1, 2)),
                    ("izz", (2, 2)),
                )
            )
            + "/>",
            "    </inertial>",
            "  </link>",
        ]
        jt = joints.get(t).urdf  # "": the floating root, written as no joint
        if jt == "":
            continue
        if jt is None:
            raise URDFError(f"model_to_urdf: joint '{name}' is {t}, which URDF cannot express")
        qs, vs = int(lay.q_start[i]), int(lay.v_start[i])
        lo, hi = (q_lo[qs], q_hi[qs]) if np.isfinite(q_lo[qs]) and np.isfinite(q_hi[qs]) else (-1e3, 1e3)
        e = eff[vs] if np.isfinite(eff[vs]) else 1e6
        v = vel[vs] if np.isfinite(vel[vs]) else 1e6
        lines += [
            f'  <joint name="{name}" type="{jt}">',
            f'    <parent link="{model.body_names[parent] if parent >= 0 else base_link}"/>',
            f'    <child link="{body}"/>',
            f'    <origin xyz="{" ".join(map(_fmt, p0[i]))}" rpy="{" ".join(map(_fmt, _rpy(R0[i])))}"/>',
            f'    <axis xyz="{" ".join(map(_fmt, ax[i]))}"/>',
            f'    <limit lower="{_fmt(lo)}" upper="{_fmt(hi)}" effort="{_fmt(e)}" velocity="{_fmt(v)}"/>',
            "  </joint>",
        ]
    lines.append("</robot>")
    return "\n".join(lines) + "\n"
