"""Equality constraints and fixed tendons of an MJCF model (:mod:`jaxdyn.io.mjcf`) into
:class:`jaxdyn.constraints.Constraints`: ``<equality>`` ``connect``, ``weld`` (bodies or sites),
``joint`` and ``tendon``, and ``<tendon><fixed>``, with the constants MuJoCo's compiler derives at
the reference configuration ``qpos0`` (the connect's second anchor, the weld's relative pose,
the joints' and tendons' reference values, the inverse weights behind ``R``). Spatial tendons
through sites are modelled; wrapping geoms and pulleys, flex equalities, tendon armature, friction
loss and limit margins are refused by name."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ... import joints
from ...constraints.model import DEFAULT_SOLIMP, DEFAULT_SOLREF, build
from ...constraints.tendons import kinematics as tendon_kinematics
from ...reference import body_invweights, inverse_mass_matrix, reference_kinematics
from .geoms import numbers_over_default, solimp_of, solref_of
from .parse import MJCFError, _limited, desc, numbers

_TYPES = ("connect", "weld", "joint", "tendon")


def _quat_to_rot(qt):
    w, x, y, z = np.asarray(qt, np.float64) / np.linalg.norm(qt)
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )


def reference_configuration(model, bodies, joint_name, jmap, ctx):
    """MuJoCo's ``qpos0`` in jaxdyn's coordinates: hinge and slide ``ref``, identity balls, free
    bodies at their pose in the file."""
    from ...configuration import neutral

    q0 = np.asarray(neutral(model), np.float64).copy()
    lay = model.layout
    for b in bodies[1:]:
        for entry in b.joints:
            _elem, a, kind, _pose = entry
            jb = jmap[joint_name[id(entry)]][0]
            s = int(lay.q_start[jb])
            if kind in ("hinge", "slide") and "ref" in a:
                ref = float(numbers(a["ref"], 1, f"joint '{joint_name[id(entry)]}' ref")[0])
                q0[s] = ctx.angle(ref) if kind == "hinge" else ref
            elif kind == "free":
                R = b.R
                w = np.sqrt(max(1.0 + np.trace(R), 1e-12)) / 2
                quat = np.array(
                    [w, (R[2, 1] - R[1, 2]) / (4 * w), (R[0, 2] - R[2, 0]) / (4 * w), (R[1, 0] - R[0, 1]) / (4 * w)]
                )
                if joints.get(model.joint_types[jb]).floating:
                    q0[s : s + 3], q0[s + 3 : s + 7] = b.p, quat
                else:  # three slides then the ball: the slides precede the ball's body
                    for k in range(3):
                        q0[int(lay.q_start[jb - 3 + k])] = b.p[k]
                    q0[s : s + 4] = quat
    return q0


def _frame(model, name, kind, what):
    """The jaxdyn body and the pose ``(R, p)`` in it of a MuJoCo body or site."""
    names = [name] if kind == "body" else [f"site:{name}", name]
    for n in names:
        if n in model.frame_names:
            i = model.frame_index(n)
            return (
                model.topology.frame_bodies[i],
                np.asarray(model.frame_R[i], np.float64),
                np.asarray(model.frame_p[i], np.float64),
            )
    raise MJCFError(f"{what}: {kind} '{name}' does not exist")


_tendon_kinematics = jax.jit(tendon_kinematics)


def _poses(model, q0):
    """The jaxdyn bodies' world poses at ``q0``, the world's last (NumPy, :mod:`jaxdyn.reference`)."""
    R, p = reference_kinematics(model, q0)[:2]
    return np.concatenate([R, np.eye(3)[None]]), np.concatenate([p, np.zeros((1, 3))])


def _body_frames(model, bodies, owner, inert):
    """MuJoCo body name -> (jaxdyn body, R, p of the MuJoCo body frame in it, its centre of mass
    in that frame)."""
    out = {}
    for i, b in enumerate(bodies):
        jb, R, p = owner[i]
        com = np.zeros(3)
        if i and inert is not None and inert[i] is not None:
            com = np.asarray(inert[i][1], np.float64)
        out[b.name] = (jb, np.asarray(R, np.float64), np.asarray(p, np.float64), com)
    out.setdefault("world", (-1, np.eye(3), np.zeros(3), np.zeros(3)))
    return out


def _invweights(model, q0, frames):
    """MuJoCo's ``body_invweight0`` of the bodies named in ``frames`` (at each MuJoCo body's own
    centre of mass, :func:`jaxdyn.reference.body_invweights`), as a function of the name, and the
    inverse mass matrix at ``qpos0``."""
    Rw, pw = _poses(model, q0)
    names = list(frames)
    bodies = [frames[n][0] for n in names]
    points = [Rw[jb] @ (R @ com + p) + pw[jb] for jb, R, p, com in (frames[n] for n in names)]
    iw = dict(zip(names, body_invweights(model, q0, bodies, points)))
    return iw.__getitem__, inverse_mass_matrix(model, q0)


def _solparams(a, what):
    """An equality's ``solref`` and ``solimp`` (MuJoCo's defaults where absent)."""
    return solref_of(a, what), solimp_of(a, what)


def _one_dof_joint(jmap, name, what, coupling):
    """The jaxdyn body and first dof of the hinge or slide joint ``name``, or an
    :class:`MJCFError` naming it; ``coupling`` says what couples it (``"a fixed tendon couples"``,
    ``"joint equalities couple"``)."""
    if name not in jmap:
        raise MJCFError(f"{what}: joint '{name}' does not exist")
    jb, d0, kind, _ = jmap[name]
    if kind not in ("hinge", "slide"):
        raise MJCFError(f"{what}: joint '{name}' is a {kind} joint; {coupling} hinge and slide joints")
    return jb, d0


def _tendons(root, ctx, model, jmap):
    """``<tendon>``: ``<fixed>`` as linear couplings of 1-dof joints, ``<spatial>`` as paths
    through sites (wrapping around geoms and pulleys refused by name)."""
    out = []
    lay = model.layout
    for t_root in root.findall("tendon"):
        for k, e in enumerate(t_root):
            if not isinstance(e.tag, str):
                continue
            name = e.get("name") or f"tendon{len(out)}"
            what = desc(e) if e.get("name") else f"<{e.tag}> (tendon {k})"
            if e.tag not in ("fixed", "spatial"):
                raise MJCFError(f"{what}: unknown tendon element")
            if any(t["name"] == name for t in out):
                raise MJCFError(f"{what}: duplicate tendon name")
            a = ctx.attrs(e, "main", "tendon")
            for key in ("armature", "frictionloss", "margin"):
                if key in a and float(numbers(a[key], 1, f"{what} {key}")[0]) != 0:
                    raise MJCFError(f"{what}: tendon {key} is not supported by jaxdyn")
            if "springyield" in a:
                raise MJCFError(f"{what}: tendon springyield is not supported by jaxdyn")
            coef_q, coef_v, path = np.zeros(model.nq), np.zeros(model.nv), []
            for j in e:
                if not isinstance(j.tag, str):
                    continue
                if e.tag == "spatial":
                    if j.tag != "site":
                        raise MJCFError(
                            f"{what}: a spatial tendon's <{j.tag}> (wrapping around geoms, pulleys) is not "
                            "supported; paths through sites are"
                        )
                    jb, _R, p = _frame(model, j.get("site"), "site", what)
                    path.append((jb, p))
                    continue
                jn = j.get("joint")
                jb, d0 = _one_dof_joint(jmap, jn, what, "a fixed tendon couples")
                coef = float(numbers(j.get("coef", "1"), 1, f"{what} joint '{jn}' coef")[0])
                coef_q[int(lay.q_start[jb])] += coef
                coef_v[d0] += coef
            if e.tag == "spatial" and len(path) < 2:
                raise MJCFError(f"{what}: a spatial tendon needs at least two sites")
            rng = np.array([-np.inf, np.inf])
            limited = _limited(a, "limited", "range", ctx, what)
            if limited:
                rng = numbers(a.get("range", "0 0"), 2, f"{what} range")
                if not rng[0] < rng[1]:
                    raise MJCFError(f"{what} range: the lower limit must be below the upper")
            spring = np.full(2, -1.0)
            if "springlength" in a:
                s = numbers(a["springlength"], 2, f"{what} springlength", at_least=1)
                spring = np.array([s[0], s[-1]])
            stiff = float(numbers(a.get("stiffness", "0"), 3, f"{what} stiffness", at_least=1)[0])
            damp = float(numbers(a.get("damping", "0"), 3, f"{what} damping", at_least=1)[0])
            act_rng = np.array([-np.inf, np.inf])
            if _limited(a, "actuatorfrclimited", "actuatorfrcrange", ctx, what):
                act_rng = numbers(a.get("actuatorfrcrange", "0 0"), 2, f"{what} actuatorfrcrange")
            for key in ("stiffness", "damping"):  # MuJoCo 4's polynomial terms beyond the linear one
                if key in a and np.any(numbers(a[key], 3, f"{what} {key}", at_least=1)[1:] != 0):
                    raise MJCFError(f"{what}: non-linear tendon {key} is not supported by jaxdyn")
            solref = numbers_over_default(a, "solreflimit", DEFAULT_SOLREF, what)
            solimp = numbers_over_default(a, "solimplimit", DEFAULT_SOLIMP, what)
            out.append(
                dict(
                    name=name,
                    coef_q=coef_q,
                    coef_v=coef_v,
                    path=path,
                    stiffness=stiff,
                    damping=damp,
                    range=rng,
                    limited=limited,
                    spring=spring,
                    solref=np.asarray(solref, np.float64),
                    solimp=solimp,
                    actuator_range=act_rng,
                )
            )
    return out


def constraints_from_mjcf(root, ctx, model, bodies, owner, inert, joint_name, jmap):
    """The :class:`~jaxdyn.constraints.Constraints` of the scene, or ``None`` without
    ``<equality>`` or ``<tendon>`` content."""
    eq_elems = [e for r in root.findall("equality") for e in r if isinstance(e.tag, str)]
    tendons = _tendons(root, ctx, model, jmap)
    if not eq_elems and not tendons:
        return None
    q0 = reference_configuration(model, bodies, joint_name, jmap, ctx)
    frames = _body_frames(model, bodies, owner, inert)
    body_iw, Minv = _invweights(model, q0, frames)
    Rw, pw = _poses(model, q0)
    lay = model.layout
    if tendons:
        with_tendons = model.replace(constraints=build(model, (), tendons))
        L0, JT0 = (np.asarray(x, np.float64) for x in _tendon_kinematics(with_tendons, jnp.asarray(q0, model.dtype)))
        qs = q0.copy()  # MuJoCo's qpos_spring: the 1-dof joints' springref, qpos0 elsewhere
        one = [int(model.layout.q_start[j]) for j, t in enumerate(model.joint_types) if joints.get(t).nq == 1]
        qs[one] = np.asarray(model.spring_reference, np.float64)[one]
        Ls = np.asarray(_tendon_kinematics(with_tendons, jnp.asarray(qs, model.dtype))[0], np.float64)
    for i, t in enumerate(tendons):
        t["length0"] = float(L0[i])
        t["invweight"] = float(JT0[i] @ Minv @ JT0[i])
        if t["spring"][0] == -1 and t["spring"][1] == -1:  # the length at the joints' springref
            t["spring"] = np.full(2, float(Ls[i]))
    tnames = [t["name"] for t in tendons]
    equalities = []
    for k, e in enumerate(eq_elems):
        what = desc(e) if e.get("name") else f"<{e.tag}> (equality {k})"
        if e.tag not in _TYPES:
            raise MJCFError(
                f"{what}: {e.tag} equality constraints are not supported (connect, weld, joint, tendon are)"
            )
        a = ctx.attrs(e, "main", "equality")
        name = e.get("name") or f"equality{k}"
        if any(x["name"] == name for x in equalities):
            raise MJCFError(f"{what}: duplicate equality name")
        solref, solimp = _solparams(a, what)
        rec = dict(name=name, kind=e.tag, solref=solref, solimp=solimp, active=a.get("active", "true") == "true")
        if e.tag in ("connect", "weld"):
            if "site1" in a or "site2" in a:
                if not ("site1" in a and "site2" in a):
                    raise MJCFError(f"{what}: give both site1 and site2")
                if "body1" in a or "body2" in a or "anchor" in a:
                    raise MJCFError(f"{what}: sites and bodies cannot be mixed")
                (b1, R1, p1), (b2, R2, p2) = (_frame(model, a[s], "site", what) for s in ("site1", "site2"))
                mj1 = mj2 = None
                rec.update(anchor1=p1, anchor2=p2, frame1=R1, frame2=R2)
            else:
                if "body1" not in a:
                    raise MJCFError(f"{what}: body1 is required")
                mj1, mj2 = a["body1"], a.get("body2", "world")
                for n in (mj1, mj2):
                    if n not in frames:
                        raise MJCFError(f"{what}: body '{n}' does not exist")
                b1, R1, p1, _ = frames[mj1]
                b2, R2, p2, _ = frames[mj2]
                X1 = (Rw[b1] @ R1, Rw[b1] @ p1 + pw[b1])  # MuJoCo body frames at qpos0, world
                X2 = (Rw[b2] @ R2, Rw[b2] @ p2 + pw[b2])
                anchor = numbers(a.get("anchor", "0 0 0"), 3, f"{what} anchor")
                if e.tag == "connect":
                    # anchor in body1; body2's anchor: the same world point at qpos0
                    a2 = X2[0].T @ (X1[0] @ anchor + X1[1] - X2[1])
                    rec.update(anchor1=R1 @ anchor + p1, anchor2=R2 @ a2 + p2)
                else:
                    rp = numbers(a.get("relpose", "0 1 0 0 0 0 0"), 7, f"{what} relpose")
                    if np.all(rp[3:] == 0):  # the relative pose of qpos0
                        a1 = X1[0].T @ (X2[0] @ anchor + X2[1] - X1[1])
                        rel = X1[0].T @ X2[0]
                    else:
                        a1, rel = rp[:3], _quat_to_rot(rp[3:])
                    # weld: anchor on body2, its body1 image a1; orientation R1 rel against R2
                    rec.update(anchor1=R1 @ a1 + p1, anchor2=R2 @ anchor + p2, frame1=R1 @ rel, frame2=R2)
            if e.tag == "weld":
                rec["torquescale"] = float(numbers(a.get("torquescale", "1"), 1, f"{what} torquescale")[0])
            rec.update(body1=b1, body2=b2)
            if b1 == b2:
                raise MJCFError(f"{what}: both ends are on the same rigid body: the constraint does nothing")
            w1 = body_iw(mj1) if mj1 is not None else _site_iw(frames, b1, body_iw)
            w2 = body_iw(mj2) if mj2 is not None else _site_iw(frames, b2, body_iw)
            rec["invweight"] = w1 + w2
        else:
            keys = ("joint1", "joint2") if e.tag == "joint" else ("tendon1", "tendon2")
            if keys[0] not in a:
                raise MJCFError(f"{what}: {keys[0]} is required")
            pc = np.zeros(5)
            pc[:2] = (0.0, 1.0)
            if "polycoef" in a:
                s = numbers(a["polycoef"], 5, f"{what} polycoef", at_least=1)
                pc[: len(s)] = s
            rec["polycoef"] = pc
            iw = 0.0
            for slot, key in enumerate(keys):
                n = a.get(key)
                if n is None:
                    continue
                if e.tag == "joint":
                    jb, d0 = _one_dof_joint(jmap, n, what, "joint equalities couple")
                    rec[f"index{slot + 1}"] = jb
                    rec[f"ref{slot + 1}"] = q0[int(lay.q_start[jb])]
                    iw += Minv[d0, d0]
                else:
                    if n not in tnames:
                        raise MJCFError(f"{what}: tendon '{n}' does not exist")
                    ti = tnames.index(n)
                    rec[f"index{slot + 1}"] = ti
                    rec[f"ref{slot + 1}"] = tendons[ti]["length0"]
                    iw += tendons[ti]["invweight"]
            rec["invweight"] = np.array([iw, iw])
        equalities.append(rec)
    return build(model, equalities, tendons)


def _site_iw(frames, jb, body_iw):
    """A site's body weight: that of the MuJoCo body whose frame is the site's jaxdyn body."""
    for n, (b, *_rest) in frames.items():
        if b == jb:
            return body_iw(n)
    return np.zeros(2)
