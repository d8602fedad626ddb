"""The body tree of an MJCF model (:mod:`jaxdyn.io.mjcf`): MuJoCo's bodies in document order
with their joints, geoms, sites and inertial (poses composed through frames), the names MuJoCo
gives unnamed bodies and joints, the bodies' inertias, and jaxdyn's bodies, one per MuJoCo joint
(several joints in one body composed in order, a free body after the first as three slides and
a ball) with the joints' parameters. Every error names the element at fault."""

from __future__ import annotations

import numpy as np

from ... import joints
from ..inertia import combine
from .geom_inertia import body_inertia, bounds
from .parse import (
    I3,
    JOINT_TYPES,
    MIN_MASS,
    REFUSED_BODY,
    MJCFError,
    _limited,
    _pose,
    compose,
    desc,
    finite,
    numbers,
    rot,
    unit,
    z_to,
)


class _Body:
    def __init__(self, name, parent, R, p, elem, mocap=False):
        self.name, self.parent, self.R, self.p, self.elem, self.mocap = name, parent, R, p, elem, mocap
        self.joints = []  # (elem, attrs, kind, R, p) -- joint pose in the body frame
        self.geoms = []  # (elem, attrs, R, p)
        self.sites = []  # (name, R, p)
        self.inertial = None  # (elem, attrs, R, p)


def _collect(container, body, pose, cls, bodies, ctx):
    for child in container:
        tag = child.tag
        if not isinstance(tag, str):  # comments
            continue
        what = desc(child)
        if tag == "body":
            a = child.attrib
            if "class" in a:
                raise MJCFError(f"{what}: bodies take no class attribute (use childclass)")
            R, p = compose(pose, _pose(a, ctx, what))
            mocap = a.get("mocap", "false") == "true"
            b = _Body(a.get("name"), body, R, p, child, mocap)
            if "gravcomp" in a and float(numbers(a["gravcomp"], 1, f"{what} gravcomp")[0]) != 0:
                ctx.warnings.append(f"body '{a.get('name')}': gravcomp (gravity compensation) is ignored")
            bodies.append(b)
            _collect(child, len(bodies) - 1, I3, a.get("childclass", cls), bodies, ctx)
        elif tag == "frame":
            a = child.attrib
            if "scale" in a or "massscale" in a:
                raise MJCFError(f"{what}: frame scale / massscale are not supported")
            if a.get("childclass") and a["childclass"] not in ctx.defaults:
                raise MJCFError(f"{what}: unknown default class '{a['childclass']}'")
            _collect(child, body, compose(pose, _pose(a, ctx, what)), a.get("childclass", cls), bodies, ctx)
        elif tag in ("joint", "freejoint"):
            if body == 0:
                raise MJCFError(f"{what}: joints cannot be attached to the world body")
            if tag == "freejoint":
                a = dict(child.attrib)
                if a.get("align", "auto") == "true":
                    raise MJCFError(
                        f"{what}: align='true' (moving the body frame to the inertial frame) is not supported"
                    )
                a["type"] = "free"
            else:
                a = ctx.attrs(child, cls)
            bodies[body].joints.append((child, a, a.get("type", "hinge"), pose))
        elif tag == "geom":
            a = ctx.attrs(child, cls)
            bodies[body].geoms.append((child, a, pose))
        elif tag == "site":
            a = ctx.attrs(child, cls)
            if "fromto" in a:  # as for geoms
                ft = numbers(a["fromto"], 6, f"{what} fromto")
                R, p = compose(pose, (z_to(ft[:3] - ft[3:], f"{what} fromto"), (ft[:3] + ft[3:]) / 2))
            else:
                R, p = compose(pose, _pose(a, ctx, what))
            if a.get("name"):
                bodies[body].sites.append((a["name"], R, p))
        elif tag == "inertial":
            if body == 0:
                raise MJCFError(f"{what}: the world body takes no inertial")
            if bodies[body].inertial is not None:
                raise MJCFError(f"{what} in body '{bodies[body].name}': a second <inertial>")
            bodies[body].inertial = (child, dict(child.attrib), pose)
        elif tag in ("camera", "light"):
            continue
        elif tag in REFUSED_BODY:
            raise MJCFError(f"{what}: <{tag}> is not supported by jaxdyn's MJCF loader")
        else:
            raise MJCFError(f"{what}: unknown element <{tag}> in the body tree")


def _bodies(root, ctx):
    """MuJoCo's bodies in document order, the world first."""
    bodies = [_Body("world", None, np.eye(3), np.zeros(3), None)]
    for wb in root.findall("worldbody"):
        _collect(wb, 0, I3, "main", bodies, ctx)
    return bodies


def _names(bodies):
    """MuJoCo's names for unnamed bodies (``body<id>``, set on the bodies) and joints
    (``joint<id>``); duplicate body, joint, geom and site names are refused. Returns each joint's
    name (keyed by ``id`` of its entry in ``_Body.joints``) and the set of joint names."""
    seen = {}
    for i, b in enumerate(bodies):
        if b.name is None:
            continue
        if b.name in seen:
            raise MJCFError(f"<body name='{b.name}'>: duplicate body name")
        seen[b.name] = i
    for i, b in enumerate(bodies):
        if b.name is None:
            b.name = f"body{i}"
            while b.name in seen:
                b.name += "_"
            seen[b.name] = i
    jnames, jid = set(), 0
    all_joints = []
    for b in bodies:
        for j in b.joints:
            n = j[1].get("name")
            if n:
                if n in jnames:
                    raise MJCFError(f"<joint name='{n}'>: duplicate joint name")
                jnames.add(n)
            all_joints.append((jid, b, j))
            jid += 1
    for kind, tagset in (("geom", "geoms"), ("site", "sites")):
        names = set()
        for b in bodies:
            for item in getattr(b, tagset):
                n = item[1].get("name") if kind == "geom" else item[0]
                if n:
                    if n in names:
                        raise MJCFError(f"<{kind} name='{n}'>: duplicate {kind} name")
                    names.add(n)
    joint_name = {}
    for jid, _b, j in all_joints:
        n = j[1].get("name")
        if not n:
            n = f"joint{jid}"
            while n in jnames:
                n += "_"
            jnames.add(n)
        joint_name[id(j)] = n
    return joint_name, jnames


def inertias(bodies, ctx, policy):
    """Each MuJoCo body's ``(mass, centre of mass, inertia)`` in its own frame (``<inertial>``
    or its geoms), bounded (``boundmass``, ``boundinertia``), scaled (``settotalmass``), and
    checked by the inertia ``policy`` under the body's own name."""
    inert = [(0.0, np.zeros(3), np.zeros((3, 3)))]
    inert = [(0.0, np.zeros(3), np.zeros((3, 3)))]
    for b in bodies[1:]:
        m, c, I, explicit = body_inertia(b, ctx)
        finite(f"body '{b.name}': mass, centre of mass or inertia", m, c, I)
        m, I = bounds(m, I, explicit, ctx)
        inert.append((m, c, I))
    if ctx.settotalmass > 0:
        total = sum(x[0] for x in inert[1:])
        if total <= 0:
            raise MJCFError("<compiler settotalmass>: the model has no mass to scale")
        s = ctx.settotalmass / total
        inert = [(m * s, c, I * s) for m, c, I in inert]
        finite("<compiler settotalmass>: scaled masses", *[x[0] for x in inert], *[x[2] for x in inert])
    for i, b in enumerate(bodies[1:], 1):
        m, c, I = inert[i]
        if b.inertial is not None or m > 0:
            inert[i] = (m, c, policy(m, I, f"body '{b.name}'" + (" <inertial>" if b.inertial is not None else "")))
    return inert


def joint_bodies(bodies, ctx, joint_name, jnames):
    """jaxdyn's bodies, one per MuJoCo joint in MuJoCo's order, and the joints' parameters.

    Returns ``(jb, dof, owner, jmap, stiff, springs, nv, bnames)``: ``jb`` the bodies' lists
    (parent, joint type, names, placement, axis; mass and inertia zero until
    :func:`add_inertias`), ``dof`` the per-coordinate and per-dof lists (limits, armature,
    damping, friction loss, stiffness and its reference), ``owner`` the jaxdyn body of each
    MuJoCo body with the pose of the MuJoCo body frame in it, ``jmap`` joint name -> (jaxdyn
    body, first dof, MuJoCo type, actuatorfrcrange bound), the joints whose stiffness or
    springdamper is dropped, the number of dofs and the set of body names."""
    jb = dict(parent=[], type=[], jname=[], bname=[], R=[], p=[], axis=[], mass=[], com=[], I=[])
    dof = dict(lo=[], hi=[], arm=[], damp=[], fric=[], stiff=[], sref=[])
    owner = {0: (-1, np.eye(3), np.zeros(3))}
    jmap = {}  # joint name -> (jaxdyn body, first dof, MuJoCo type, actuatorfrcrange bound)
    stiff, springs = [], []
    nv = 0
    bnames = set(b.name for b in bodies)

    def new_body(parent, jtype, jname, bname, R, p, axis):
        for k, v in (
            ("parent", parent),
            ("type", jtype),
            ("jname", jname),
            ("bname", bname),
            ("R", R),
            ("p", p),
            ("axis", axis),
            ("mass", 0.0),
            ("com", np.zeros(3)),
            ("I", np.zeros((3, 3))),
        ):
            jb[k].append(v)
        return len(jb["parent"]) - 1

    for i, b in enumerate(bodies[1:], 1):
        pb, Ro, po = owner[b.parent]
        C = compose((Ro, po), (b.R, b.p))
        what = f"body '{b.name}'"
        if b.mocap and b.joints:
            raise MJCFError(f"{what}: a mocap body cannot have joints")
        kinds = [j[2] for j in b.joints]
        for k, (_elem, a, kind, pose) in enumerate(b.joints):
            jn = joint_name[id(b.joints[k])]
            jw = f"joint '{jn}' in {what}"
            if kind not in ("hinge", "slide", "ball", "free"):
                raise MJCFError(f"{jw}: unknown joint type '{kind}'")
            if kind in ("hinge", "ball") and "ball" in kinds[:k]:
                raise MJCFError(f"{jw}: a ball joint followed by a rotation in the same body (MuJoCo refuses it too)")
            jp = numbers(a["pos"], 3, f"{jw} pos") if "pos" in a else np.zeros(3)
            jp = pose[0] @ jp + pose[1]
            if kind == "free":
                if len(b.joints) > 1:
                    raise MJCFError(f"{jw}: a free joint must be the only joint of its body")
                if pb != -1:
                    raise MJCFError(f"{jw}: a free joint is only allowed in a body attached to the world")
                if not jb["parent"]:  # the first moving body: jaxdyn's free root, body 0
                    pb = new_body(-1, "free", jn, b.name, np.eye(3), np.zeros(3), np.zeros(3))
                else:
                    # any other free body: MuJoCo's free joint itself, three slides along the world
                    # axes and a ball (qpos [p; quat], qvel [v_world; omega_body], as MuJoCo's)
                    for k_ax, axis_name in enumerate("xyz"):
                        bn, sn = f"{b.name}/{jn}/{axis_name}", f"{jn}/{axis_name}"
                        while bn in bnames:
                            bn += "_"
                        while sn in jnames:
                            sn += "_"
                        bnames.add(bn)
                        jnames.add(sn)
                        pb = new_body(pb, "prismatic", sn, bn, np.eye(3), np.zeros(3), np.eye(3)[k_ax])
                    pb = new_body(pb, "spherical", jn, b.name, np.eye(3), np.zeros(3), np.zeros(3))
                C = I3
                n_dof, ax = 6, np.zeros(3)
            else:
                ax = np.zeros(3)
                if kind in ("hinge", "slide"):
                    ax = numbers(a.get("axis", "0 0 1"), 3, f"{jw} axis")
                    if np.max(np.abs(ax)) < 1e-12:
                        raise MJCFError(f"{jw}: zero axis")
                    ax = pose[0] @ unit(ax)
                ref = float(numbers(a["ref"], 1, f"{jw} ref")[0]) if "ref" in a else 0.0
                if kind == "hinge":
                    ref = ctx.angle(ref)
                    place = compose(C, (rot(ax, -ref), jp))
                    after = (np.eye(3), -jp)
                elif kind == "ball":
                    place = compose(C, (np.eye(3), jp))
                    after = (np.eye(3), -jp)
                else:
                    place = compose(C, (np.eye(3), -ax * ref))
                    after = I3
                last = k == len(b.joints) - 1
                bn = b.name if last else f"{b.name}/{jn}"
                while not last and bn in bnames:
                    bn += "_"
                jtype = JOINT_TYPES[kind]
                pb = new_body(pb, jtype, jn, bn, place[0], place[1], ax)
                C = after
                n_dof = joints.get(jtype).nv
            # joint parameters
            arm = float(numbers(a.get("armature", "0"), 1, f"{jw} armature")[0])
            dmp = numbers(a.get("damping", "0"), 3, f"{jw} damping", at_least=1)
            fr = float(numbers(a.get("frictionloss", "0"), 1, f"{jw} frictionloss")[0])
            st = numbers(a.get("stiffness", "0"), 3, f"{jw} stiffness", at_least=1)
            # joint springs of hinge/slide joints go into the model (q is MuJoCo's qpos, the ref
            # folded into the placement); ball and free springs and non-linear terms are dropped
            if kind in ("hinge", "slide"):
                sref = float(numbers(a["springref"], 1, f"{jw} springref")[0]) if "springref" in a else 0.0
                dof["stiff"] += [float(st[0])]
                dof["sref"] += [ctx.angle(sref) if kind == "hinge" else sref]
                if np.any(st[1:] != 0):
                    stiff.append(jn)
            else:
                dof["stiff"] += [0.0] * n_dof
                dof["sref"] += [0.0] * {"free": 7, "ball": 4}[kind]
                if np.any(st != 0):
                    stiff.append(jn)
            if kind == "free" and arm != 0 and jb["type"][pb] == "free":
                ctx.warnings.append(
                    f"joint '{jn}': armature on a free joint enters jaxdyn on body-frame velocities, MuJoCo's on "
                    "the world-frame linear velocity: the mass matrices agree, the bias forces differ by "
                    "armature * (omega x v) on the linear dofs"
                )
            if np.any(dmp[1:] != 0):
                ctx.warnings.append(
                    f"joint '{jn}': non-linear damping coefficients {list(dmp[1:])} ignored "
                    "(jaxdyn's damping is linear)"
                )
            if "springdamper" in a and np.any(numbers(a["springdamper"], 2, f"{jw} springdamper") != 0):
                springs.append(jn)
            if a.get("actuatorgravcomp", "false") == "true":
                ctx.warnings.append(f"joint '{jn}': actuatorgravcomp is ignored")
            lo, hi = -np.inf, np.inf
            if kind in ("hinge", "slide") and _limited(a, "limited", "range", ctx, jw):
                r = numbers(a.get("range", "0 0"), 2, f"{jw} range")
                if kind == "hinge":
                    r = np.array([ctx.angle(r[0]), ctx.angle(r[1])])
                if not r[0] < r[1]:
                    raise MJCFError(f"{jw} range: the lower limit must be below the upper, got {a.get('range')!r}")
                lo, hi = r
            elif kind == "ball" and "range" in a:
                numbers(a["range"], 2, f"{jw} range")
            nq = {"free": 7, "ball": 4}.get(kind, 1)
            dof["lo"] += [lo] * nq if nq == 1 else [-np.inf] * nq
            dof["hi"] += [hi] * nq if nq == 1 else [np.inf] * nq
            dof["arm"] += [arm] * n_dof
            dof["damp"] += [float(dmp[0])] * n_dof
            dof["fric"] += [fr] * n_dof
            afr = np.inf
            if _limited(a, "actuatorfrclimited", "actuatorfrcrange", ctx, jw):
                afr = float(np.max(np.abs(numbers(a.get("actuatorfrcrange", "0 0"), 2, f"{jw} actuatorfrcrange"))))
            jmap[jn] = (pb, nv, kind, afr)
            nv += n_dof
        owner[i] = (pb, C[0], C[1])

    if not jb["parent"]:
        raise MJCFError("<worldbody> holds no <joint> or <freejoint>: nothing moves")
    return jb, dof, owner, jmap, stiff, springs, nv, bnames


def add_inertias(jb, bodies, inert, owner):
    """Each MuJoCo body's inertia onto the jaxdyn body that carries it (a welded body's onto
    its parent's); bodies whose whole subtree is massless are refused."""
    for i, _b in enumerate(bodies[1:], 1):
        m, c, I = inert[i]
        ob, Ro, po = owner[i]
        if ob < 0 or (m == 0 and not np.any(I)):
            continue
        jb["mass"][ob], jb["com"][ob], jb["I"][ob] = combine(
            jb["mass"][ob], jb["com"][ob], jb["I"][ob], m, Ro @ c + po, Ro @ I @ Ro.T
        )
    for b in range(len(jb["parent"])):
        finite(
            f"joint '{jb['jname'][b]}' (body '{jb['bname'][b]}'): placement, axis, mass or inertia",
            jb["R"][b],
            jb["p"][b],
            jb["axis"][b],
            jb["mass"][b],
            jb["com"][b],
            jb["I"][b],
        )
    _check_massless(jb)


def _check_massless(jb):
    """Refuse moving bodies whose whole subtree carries no mass or inertia (ABA would divide by
    zero); the massless bodies before a body's last joint pass through their subtree."""
    parents = jb["parent"]
    sub_m = list(jb["mass"])
    sub_I = [float(np.abs(I).sum()) for I in jb["I"]]
    for b in range(len(parents) - 1, -1, -1):
        if parents[b] >= 0:
            sub_m[parents[b]] += sub_m[b]
            sub_I[parents[b]] += sub_I[b]
    for b in range(len(parents)):
        if sub_m[b] <= MIN_MASS and sub_I[b] <= 0:
            raise MJCFError(
                f"joint '{jb['jname'][b]}' moves body '{jb['bname'][b]}', which carries no mass or inertia (nor "
                "does anything attached to it): forward dynamics would divide by zero. Give the body an "
                "<inertial> or geoms with mass."
            )
