"""Closed loops and couplings: equality constraints and fixed tendons on a tree
(docs/constraints.md).

A :class:`Constraints` on ``model.constraints`` (from MJCF ``<equality>`` and ``<tendon>``, URDF
``<mimic>`` with ``mimic="coupled"``, or :func:`add` with :func:`connect`, :func:`weld`,
:func:`couple`) is applied by :mod:`jaxdyn.sim` (``forward_dynamics``, ``step``, ``rollout``):
MuJoCo's soft constraints by default (``SimOptions(constraints="soft")``), or hard ones with
Baumgarte stabilisation (``"hard"``). :func:`solve` is the constrained acceleration itself;
:func:`delassus` the constraint-space inverse inertia ``J M^-1 J^T`` through the O(N)
innovations operators.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from .. import joints
from .model import DEFAULT_SOLIMP, DEFAULT_SOLREF, KINDS, ROWS, Constraints, build
from .solve import (
    Rows,
    Solution,
    check,
    constrained_aba,
    constrained_inverse_dynamics,
    delassus,
    impedance,
    inverse_inertia_rows,
    joint_force_wrenches,
    rows,
    soft_parameters,
    solve,
    tendon_forces,
)
from .tendons import kinematics as tendon_kinematics

__all__ = [
    "DEFAULT_SOLIMP",
    "DEFAULT_SOLREF",
    "KINDS",
    "ROWS",
    "Constraints",
    "Rows",
    "Solution",
    "add",
    "build",
    "check",
    "connect",
    "constrained_aba",
    "constrained_inverse_dynamics",
    "couple",
    "delassus",
    "impedance",
    "inverse_inertia_rows",
    "joint_force_wrenches",
    "rows",
    "soft_parameters",
    "solve",
    "tendon_forces",
    "tendon_kinematics",
    "weld",
]


def _body(model, name, what):
    if name in (None, "world"):
        return -1
    if name not in model.body_names:
        raise KeyError(f"{what}: no body named '{name}' (bodies: {', '.join(model.body_names)})")
    return model.body_index(name)


def _pose(model, q, b):
    from ..algorithms.kinematics import forward_kinematics

    if b < 0:
        return np.eye(3), np.zeros(3)
    P = forward_kinematics(model, q)
    return np.asarray(P.R[b], np.float64), np.asarray(P.p[b], np.float64)


def _q(model, q):
    from ..configuration import neutral

    return neutral(model) if q is None else jnp.asarray(q, model.dtype)


def connect(model, body1: str, body2: str | None, anchor1=(0.0, 0.0, 0.0), anchor2=None, q=None, name=None, **solver):
    """A point of ``body1`` (``anchor1``, body frame) held to a point of ``body2`` (``"world"`` or
    ``None``: the world): ``anchor2`` in ``body2``'s frame, by default the point that coincides
    with ``anchor1`` at ``q`` (the neutral configuration by default). ``solver``: ``solref``,
    ``solimp``, ``active``. Returns the record for :func:`add`."""
    what = f"connect '{name or 'connect'}'"
    b1, b2 = _body(model, body1, what), _body(model, body2, what)
    if b1 == b2:
        raise ValueError(f"{what}: body1 and body2 are the same body '{body1}'")
    a1 = np.asarray(anchor1, np.float64).reshape(3)
    if anchor2 is None:
        qq = _q(model, q)
        R1, p1 = _pose(model, qq, b1)
        R2, p2 = _pose(model, qq, b2)
        a2 = R2.T @ (R1 @ a1 + p1 - p2)
    else:
        a2 = np.asarray(anchor2, np.float64).reshape(3)
    return dict(name=name, kind="connect", body1=b1, body2=b2, anchor1=a1, anchor2=a2, **solver)


def weld(model, body1: str, body2: str | None, anchor1=(0.0, 0.0, 0.0), q=None, name=None, torquescale=1.0, **solver):
    """A frame of ``body1`` (at ``anchor1``, with the body's axes) held to ``body2`` in the
    relative pose they have at ``q`` (the neutral configuration by default)."""
    what = f"weld '{name or 'weld'}'"
    b1, b2 = _body(model, body1, what), _body(model, body2, what)
    if b1 == b2:
        raise ValueError(f"{what}: body1 and body2 are the same body '{body1}'")
    qq = _q(model, q)
    R1, p1 = _pose(model, qq, b1)
    R2, p2 = _pose(model, qq, b2)
    a1 = np.asarray(anchor1, np.float64).reshape(3)
    a2 = R2.T @ (R1 @ a1 + p1 - p2)
    return dict(
        name=name,
        kind="weld",
        body1=b1,
        body2=b2,
        anchor1=a1,
        anchor2=a2,
        frame1=np.eye(3),
        frame2=R2.T @ R1,
        torquescale=torquescale,
        **solver,
    )


def couple(model, joint1: str, joint2: str | None, multiplier: float = 1.0, offset: float = 0.0, name=None, **solver):
    """``q[joint1] = offset + multiplier * q[joint2]`` for 1-dof joints (URDF's ``<mimic>``;
    ``joint2=None``: ``q[joint1] = offset``). MuJoCo's joint equality with ``polycoef =
    (offset, multiplier, 0, 0, 0)`` and zero reference positions."""
    what = f"coupling '{name or joint1}'"
    rec = dict(name=name or f"couple:{joint1}", kind="joint", polycoef=[offset, multiplier, 0, 0, 0], **solver)
    for slot, jn in ((1, joint1), (2, joint2)):
        if jn is None:
            continue
        if jn not in model.joint_names:
            raise KeyError(f"{what}: no joint named '{jn}' (joints: {', '.join(model.joint_names)})")
        j = model.joint_names.index(jn)
        if not joints.one_dof(model.joint_types[j : j + 1])[0]:
            raise ValueError(f"{what}: joint '{jn}' is {model.joint_types[j]}; couplings join 1-dof joints")
        rec[f"index{slot}"] = j
    return rec


def _invweight(model, q, rec):
    """MuJoCo's ``invweight`` of a record made in code (body weights at the bodies' centres of
    mass, joint weights ``(M^-1)_kk``, at ``q``; :mod:`jaxdyn.reference`)."""
    from ..reference import body_invweights, inverse_mass_matrix, reference_kinematics

    lay = model.layout
    if rec["kind"] == "joint":
        Minv = inverse_mass_matrix(model, q)
        iw = sum(Minv[lay.v_start[rec[k]], lay.v_start[rec[k]]] for k in ("index1", "index2") if rec.get(k, -1) >= 0)
        return np.array([iw, iw])
    R, p = reference_kinematics(model, q)[:2]
    com = np.asarray(model.com, np.float64)
    bodies = [b for b in (rec["body1"], rec["body2"]) if b >= 0]
    return body_invweights(model, q, bodies, [R[b] @ com[b] + p[b] for b in bodies]).sum(0)


def add(model, *records, q=None):
    """``model`` with the constraints ``records`` (from :func:`connect`, :func:`weld`,
    :func:`couple`) added to its own. Unnamed records are called ``"<kind><i>"``; the inverse
    weights of the soft solve are computed at ``q`` (the neutral configuration by default)."""
    qq = _q(model, q)
    old = model.constraints
    recs = [] if old is None else old.equality_records()
    names = {r["name"] for r in recs}
    for r in records:
        r = dict(r)
        if r.get("name") is None:
            r["name"] = f"{r['kind']}{len(recs)}"
        if r["name"] in names:
            raise ValueError(f"constraint '{r['name']}': the model already has a constraint of that name")
        names.add(r["name"])
        r.setdefault("invweight", _invweight(model, qq, r))
        recs.append(r)
    tendons = [] if old is None else old.tendon_records()
    return model.replace(constraints=build(model, recs, tendons))
