"""Actuators of an MJCF model (:mod:`jaxdyn.io.mjcf`): jaxdyn keeps each joint's effort limit,
from the actuators' force ranges, control ranges times gains, and gears, and the joints'
``actuatorfrcrange``. Only joint transmission is supported; every error names the actuator."""

from __future__ import annotations

import numpy as np

from .parse import ACTUATORS, MJCFError, _actuator_semantics, _desc, _limited, _numbers


def _effort_limits(root, ctx, jmap, nv):
    """The effort limit of every dof (``inf`` where no actuator drives it)."""
    eff = np.zeros(nv)
    has = np.zeros(nv, bool)
    anames = set()
    for act_root in root.findall("actuator"):
        for k, e in enumerate(act_root):
            if not isinstance(e.tag, str):
                continue
            what = _desc(e) if e.get("name") else f"<{e.tag}> (actuator {k})"
            if e.tag not in ACTUATORS:
                raise MJCFError(f"{what}: unknown actuator element")
            n = e.get("name")
            if n:
                if n in anames:
                    raise MJCFError(f"{what}: duplicate actuator name")
                anames.add(n)
            a = ctx.attrs(e, "main", "actuator")
            a.update(_actuator_semantics(e.tag, e.attrib))
            for t in ("tendon", "site", "body", "cranksite", "slidersite"):
                if t in e.attrib or (e.tag == "adhesion"):
                    raise MJCFError(
                        f"{what}: transmission through a {t if t in e.attrib else 'body'} is not "
                        "supported (only joint transmission)"
                    )
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
                bound = float(np.max(np.abs(_numbers(a.get("forcerange", "0 0"), 2, f"{what} forcerange"))))
            simple = (
                a.get("_gaintype", "fixed") == "fixed"
                and a.get("_biastype", "none") == "none"
                and a.get("_dyntype", "none") == "none"
            )
            if simple and _limited(a, "ctrllimited", "ctrlrange", ctx, what):
                gain = abs(float(_numbers(a.get("_gain", "1"), 1, f"{what} gainprm")[0]))
                ctrl = float(np.max(np.abs(_numbers(a.get("ctrlrange", "0 0"), 2, f"{what} ctrlrange"))))
                bound = min(bound, gain * ctrl)
            gear = _numbers(a.get("gear", "1"), 6, f"{what} gear", at_least=1)
            ndof = 3 if kind == "ball" else 1
            g = np.zeros(6)
            g[: len(gear)] = gear
            for c in range(ndof):
                eff[d0 + c] += abs(g[c]) * bound if g[c] != 0 else 0.0
                has[d0 + c] = True
    eff[~has] = np.inf
    for _body_i, d0, kind, afr in jmap.values():
        n_dof = {"free": 6, "ball": 3}.get(kind, 1)
        eff[d0 : d0 + n_dof] = np.minimum(eff[d0 : d0 + n_dof], afr)
    return eff
