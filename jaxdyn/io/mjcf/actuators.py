"""Actuators of an MJCF model (:mod:`jaxdyn.io.mjcf`): each joint's effort limit, from the
actuators' force ranges, control ranges times gains, and gears, and the joints'
``actuatorfrcrange``; and the actuators themselves (:class:`jaxdyn.actuators.Actuators`, MuJoCo's
force generation and activation dynamics, shortcuts expanded as MuJoCo's compiler does). Joint and
tendon transmissions are supported; every error and warning names the actuator."""

from __future__ import annotations

import numpy as np

from ... import joints
from .parse import ACTUATORS, JOINT_TYPES, MJCFError, _limited, actuator_semantics, desc, flag, numbers


def _tendons(root):
    """The tendon elements in MuJoCo's order, by name (unnamed ones ``tendon<k>``)."""
    elems = [e for r in root.findall("tendon") for e in r if isinstance(e.tag, str)]
    return {e.get("name") or f"tendon{k}": (k, e) for k, e in enumerate(elems)}


def effort_limits(root, ctx, jmap, nv):
    """The effort limit of every dof (``inf`` where no actuator drives it; the joints'
    ``actuatorfrcrange`` alone on the joints of a fixed tendon that an actuator drives, whose
    torque MuJoCo does not bound by the actuators' force ranges)."""
    eff = np.zeros(nv)
    has = np.zeros(nv, bool)
    free = np.zeros(nv, bool)
    anames = set()
    tendons = _tendons(root)
    for act_root in root.findall("actuator"):
        for k, e in enumerate(act_root):
            if not isinstance(e.tag, str):
                continue
            what = desc(e) if e.get("name") else f"<{e.tag}> (actuator {k})"
            if e.tag not in ACTUATORS:
                raise MJCFError(f"{what}: unknown actuator element")
            n = e.get("name")
            if n:
                if n in anames:
                    raise MJCFError(f"{what}: duplicate actuator name")
                anames.add(n)
            a = ctx.attrs(e, "main", "actuator")
            a.update(actuator_semantics(e.tag, e.attrib))
            for t in ("site", "body", "cranksite", "slidersite"):
                if t in e.attrib or (e.tag == "adhesion"):
                    raise MJCFError(
                        f"{what}: transmission through a {t if t in e.attrib else 'body'} is not "
                        "supported (joint and tendon transmissions are)"
                    )
            if "tendon" in e.attrib:
                tn = e.get("tendon")
                if tn not in tendons:
                    raise MJCFError(f"{what}: tendon '{tn}' is not defined")
                te = tendons[tn][1]
                if te.tag == "fixed":
                    for j in te:
                        if isinstance(j.tag, str) and j.get("joint") in jmap:
                            free[jmap[j.get("joint")][1]] = True
                continue
            jn = e.get("joint") or e.get("jointinparent")
            if not jn:
                raise MJCFError(f"{what}: no joint transmission")
            if jn not in jmap:
                raise MJCFError(f"{what}: joint '{jn}' is not defined")
            body_i, d0, kind, _ = jmap[jn]
            if kind == "free":
                raise MJCFError(f"{what}: actuators on a free joint are not supported")
            bound = np.inf
            if _limited(a, "forcelimited", "forcerange", ctx, what):
                bound = float(np.max(np.abs(numbers(a.get("forcerange", "0 0"), 2, f"{what} forcerange"))))
            simple = (
                a.get("_gaintype", "fixed") == "fixed"
                and a.get("_biastype", "none") == "none"
                and a.get("_dyntype", "none") == "none"
            )
            if simple and _limited(a, "ctrllimited", "ctrlrange", ctx, what):
                gain = abs(float(numbers(a.get("_gain", "1"), 1, f"{what} gainprm")[0]))
                ctrl = float(np.max(np.abs(numbers(a.get("ctrlrange", "0 0"), 2, f"{what} ctrlrange"))))
                bound = min(bound, gain * ctrl)
            gear = numbers(a.get("gear", "1"), 6, f"{what} gear", at_least=1)
            ndof = joints.get(JOINT_TYPES[kind]).nv
            g = np.zeros(6)
            g[: len(gear)] = gear
            for c in range(ndof):
                eff[d0 + c] += abs(g[c]) * bound if g[c] != 0 else 0.0
                has[d0 + c] = True
    eff[~has | free] = np.inf
    for _body_i, d0, kind, afr in jmap.values():
        n_dof = {"free": 6, "ball": 3}.get(kind, 1)
        eff[d0 : d0 + n_dof] = np.minimum(eff[d0 : d0 + n_dof], afr)
    return eff


class _Unmodelled(Exception):
    """An actuator jaxdyn does not model (the model then loads without actuators, with a warning)."""


def _num(a, key, default, what):
    return float(numbers(a.get(key, default), 1, f"{what} {key}")[0])


def _prm(a, key, default, what):
    """The first three of up to ten numbers (MuJoCo's ``gainprm``, ``biasprm``, ``dynprm``)."""
    v = numbers(a.get(key, default), 10, f"{what} {key}", at_least=1)
    return np.concatenate([v, np.zeros(10)])[:3]


def _force_generation(tag, a, what, ctx):
    """MuJoCo's general parameters of an actuator element: ``(G, B, dyntype, time constant)``
    (:mod:`jaxdyn.actuators`); shortcuts expanded as MuJoCo's compiler does."""
    zero = np.zeros(3)
    if tag == "motor":
        return np.array([1.0, 0, 0]), zero, "none", 1.0
    if tag in ("position", "intvelocity"):
        kp, kv = _num(a, "kp", "1", what), _num(a, "kv", "0", what)
        if "dampratio" in a and _num(a, "dampratio", "0", what) != 0:
            ctx.warnings.append(f"{what}: dampratio is not modelled (the servo keeps kv={kv:g})")
        if tag == "intvelocity":
            return np.array([kp, 0, 0]), np.array([0, -kp, -kv]), "integrator", 1.0
        tc = _num(a, "timeconst", "0", what)
        return np.array([kp, 0, 0]), np.array([0, -kp, -kv]), "filterexact" if tc > 0 else "none", tc or 1.0
    if tag == "velocity":
        kv = _num(a, "kv", "1", what)
        return np.array([kv, 0, 0]), np.array([0, 0, -kv]), "none", 1.0
    if tag == "damper":
        kv = _num(a, "kv", "0", what)
        return np.array([0, 0, -kv]), zero, "none", 1.0
    if tag == "cylinder":
        area = _num(a, "area", "1", what)
        if "diameter" in a:
            area = np.pi / 4 * _num(a, "diameter", "1", what) ** 2
        bias = numbers(a.get("bias", "0 0 0"), 3, f"{what} bias")
        return np.array([area, 0, 0]), bias, "filter", _num(a, "timeconst", "1", what)
    if tag != "general":
        raise _Unmodelled(
            f"{what}: <{tag}> actuators are not modelled (motor, position, velocity, intvelocity, damper, "
            "cylinder and general are)"
        )
    gaintype, biastype = a.get("gaintype", "fixed"), a.get("biastype", "none")
    dyntype = a.get("dyntype", "none")
    if gaintype not in ("fixed", "affine"):
        raise _Unmodelled(f"{what}: gaintype '{gaintype}' is not modelled (fixed, affine are)")
    if biastype not in ("none", "affine"):
        raise _Unmodelled(f"{what}: biastype '{biastype}' is not modelled (none, affine are)")
    if dyntype not in ("none", "integrator", "filter", "filterexact"):
        raise _Unmodelled(f"{what}: dyntype '{dyntype}' is not modelled (none, integrator, filter, filterexact are)")
    G = _prm(a, "gainprm", "1", what)
    if gaintype == "fixed":
        G[1:] = 0.0
    B = _prm(a, "biasprm", "0", what) if biastype == "affine" else zero
    return G, B, dyntype, float(_prm(a, "dynprm", "1", what)[0])


def _actuators(root, ctx, jmap, model):
    """The :class:`~jaxdyn.actuators.Actuators` of the model (``None`` without ``<actuator>``, or
    with a warning naming the actuator when one drives a ball joint, which they do not model),
    in MuJoCo's order. Errors are raised by :func:`effort_limits` first."""
    from ...actuators import make_actuators

    elems = [e for r in root.findall("actuator") for e in r if isinstance(e.tag, str)]
    if not elems:
        return None
    v_to_q = {int(v): int(q) for v, q, n in zip(model.layout.v_start, model.layout.q_start, model.joint_nv)}
    cols = {
        k: []
        for k in ("names", "dof", "qpos", "gear", "gain", "bias", "ctrl", "force", "act", "dyn", "tc", "early", "ten")
    }
    tendons = _tendons(root)
    for k, e in enumerate(elems):
        what = desc(e) if e.get("name") else f"<{e.tag}> (actuator {k})"
        a = ctx.attrs(e, "main", "actuator")
        ten = tendons[e.get("tendon")][0] if "tendon" in e.attrib else -1
        d0, kind = -1, "tendon"
        if ten < 0:
            _body, d0, kind, _afr = jmap[e.get("joint") or e.get("jointinparent")]
        try:
            if ten >= 0 and e.tag in ("position", "intvelocity") and _num(a, "inheritrange", "0", what) > 0:
                raise _Unmodelled(f"{what}: inheritrange on a tendon transmission is not modelled")
            if kind == "ball":
                raise _Unmodelled(f"{what}: actuators on ball joints are not modelled")
            G, B, dyn, tc = _force_generation(e.tag, a, what, ctx)
        except _Unmodelled as err:
            ctx.warnings.append(
                f"{err}, so the model has no actuators (drive it with joint torques; the effort limits are kept)"
            )
            return None
        if dyn in ("filter", "filterexact") and tc <= 0:
            raise MJCFError(f"{what}: the activation time constant must be positive, got {tc:g}")
        rng = {}
        for key in ("ctrl", "force", "act"):
            rng[key] = [-np.inf, np.inf]
            if _limited(a, f"{key}limited", f"{key}range", ctx, what):
                lo, hi = numbers(a.get(f"{key}range", "0 0"), 2, f"{what} {key}range")
                if lo > hi:
                    raise MJCFError(f"{what}: {key}range [{lo:g}, {hi:g}] has its lower bound above the upper")
                rng[key] = [lo, hi]
        inherit = _num(a, "inheritrange", "0", what) if e.tag in ("position", "intvelocity") else 0.0
        if inherit > 0:  # the control range from the joint's range, scaled about its middle
            lo, hi = float(model.q_lower[v_to_q[d0]]), float(model.q_upper[v_to_q[d0]])
            if not np.isfinite(lo) or not np.isfinite(hi):
                raise MJCFError(f"{what}: inheritrange needs a limited joint")
            mid, half = (lo + hi) / 2, inherit * (hi - lo) / 2
            rng["ctrl" if e.tag == "position" else "act"] = [mid - half, mid + half]
        cols["names"].append(e.get("name") or f"actuator{k}")
        cols["dof"].append(d0)
        cols["qpos"].append(v_to_q[d0] if d0 >= 0 else -1)
        cols["ten"].append(ten)
        cols["gear"].append(numbers(a.get("gear", "1"), 6, f"{what} gear", at_least=1)[0])
        cols["gain"].append(G)
        cols["bias"].append(B)
        cols["dyn"].append(dyn)
        cols["tc"].append(tc)
        cols["early"].append(flag(a, "actearly", what, "false") == "true")
        for key, col in (("ctrl", "ctrl"), ("force", "force"), ("act", "act")):
            cols[col].append(rng[key])
    if len(set(cols["names"])) != len(cols["names"]):
        raise MJCFError("<actuator>: actuator names are not unique")
    return make_actuators(
        cols["names"],
        cols["dof"],
        cols["qpos"],
        gear=np.array(cols["gear"]),
        gain=np.array(cols["gain"]),
        bias=np.array(cols["bias"]),
        ctrl_range=np.array(cols["ctrl"]),
        force_range=np.array(cols["force"]),
        act_range=np.array(cols["act"]),
        dyntype=cols["dyn"],
        time_constant=np.array(cols["tc"]),
        actearly=cols["early"],
        tendon=cols["ten"],
        dtype=model.dtype,
    )
