"""The constraints of a model: equality constraints and fixed tendons (MuJoCo's ``eq_*`` and
``tendon_*`` arrays, in jaxdyn's bodies and coordinates).

Equality constraints (``neq``), each of one kind:

* ``"connect"``: a point of body 1 held to a point of body 2 (a ball joint closing a loop),
  residual ``r = p1 - p2`` (3 rows, world axes);
* ``"weld"``: a frame of body 1 held to a frame of body 2 (position and orientation), residual
  ``[p1 - p2; torquescale * v]`` (6 rows) with ``(w, v)`` the quaternion of
  ``R2^T R1`` taken with ``w >= 0``;
* ``"joint"``: a polynomial coupling of two 1-dof joints,
  ``r = q1 - q1_0 - (c0 + c1 d + c2 d^2 + c3 d^3 + c4 d^4)``, ``d = q2 - q2_0`` (1 row; without a
  second joint ``r = q1 - q1_0 - c0``);
* ``"tendon"``: the same polynomial in the lengths of two fixed tendons.

Static (Python tuples): ``names``, ``kinds``, ``body1``/``body2`` (jaxdyn body indices, ``-1``
the world; connect and weld), ``index1``/``index2`` (the joint's index in ``model.joint_names``,
or the tendon's; ``-1`` none; joint and tendon). Arrays, one row per constraint: ``anchor1``,
``anchor2 (neq, 3)`` the points in their bodies' frames; ``frame1``, ``frame2 (neq, 3, 3)`` the
orientations of the welded frames in their bodies (``R1 = R_body1 frame1``); ``torquescale``;
``polycoef (neq, 5)``; ``ref1``, ``ref2`` the reference values ``q1_0``, ``q2_0`` (joint
positions or tendon lengths at the model's reference configuration); ``active (neq,)`` (1 on,
0 off); ``solref (neq, 2)``, ``solimp (neq, 5)`` (MuJoCo's, for the soft solve); ``invweight
(neq, 2)``: MuJoCo's approximate inverse inertias of the constraint's translation and rotation
rows (``body_invweight0`` / ``dof_invweight0`` / ``tendon_invweight0`` at the reference
configuration), which set its regulariser ``R`` (:mod:`jaxdyn.constraints.solve`).

Tendons (``nt``, :mod:`jaxdyn.constraints.tendons`): a fixed tendon's length is
``L = coef_q q`` (linear in the positions of 1-dof joints) with Jacobian ``coef_v (nt, nv)``; a
spatial tendon's is the polyline through the points ``tendon_path[t]`` (static indices into
``path_body``, the jaxdyn body of each point, ``-1`` the world, and ``path_point (npath, 3)``, the
point in its body's frame; its rows of ``coef_q``, ``coef_v`` are zero). ``tendon_stiffness``,
``tendon_spring (nt, 2)`` (the spring's dead band, MuJoCo's ``springlength``),
``tendon_damping``, ``tendon_range (nt, 2)`` (``+-inf`` where not limited), ``tendon_limited``
(static: the tendons whose range is a limit constraint of the solve, MuJoCo's ``tendon_limited``),
``tendon_solref (nt, 2)`` and ``tendon_solimp (nt, 5)`` (MuJoCo's ``solreflimit``,
``solimplimit``), ``tendon_actuator_range (nt, 2)`` (MuJoCo's ``actuatorfrcrange``: the bounds of
the total force of the actuators on the tendon, ``+-inf`` where not limited), ``tendon_length0``
and ``tendon_invweight`` (MuJoCo's ``tendon_invweight0``).
"""

from __future__ import annotations

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from ..geometry import DEFAULT_SOLIMP, DEFAULT_SOLREF

KINDS = ("connect", "weld", "joint", "tendon")
ROWS = {"connect": 3, "weld": 6, "joint": 1, "tendon": 1}
# MuJoCo's default solref and solimp of equality constraints (documentation, "Solver parameters")


class Constraints(eqx.Module):
    """Equality constraints and fixed tendons of a model (module docstring)."""

    names: tuple[str, ...] = eqx.field(static=True)
    kinds: tuple[str, ...] = eqx.field(static=True)
    body1: tuple[int, ...] = eqx.field(static=True)
    body2: tuple[int, ...] = eqx.field(static=True)
    index1: tuple[int, ...] = eqx.field(static=True)
    index2: tuple[int, ...] = eqx.field(static=True)
    anchor1: Float[Array, "neq 3"]
    anchor2: Float[Array, "neq 3"]
    frame1: Float[Array, "neq 3 3"]
    frame2: Float[Array, "neq 3 3"]
    torquescale: Float[Array, " neq"]
    polycoef: Float[Array, "neq 5"]
    ref1: Float[Array, " neq"]
    ref2: Float[Array, " neq"]
    active: Float[Array, " neq"]
    solref: Float[Array, "neq 2"]
    solimp: Float[Array, "neq 5"]
    invweight: Float[Array, "neq 2"]
    tendon_names: tuple[str, ...] = eqx.field(static=True)
    coef_q: Float[Array, "nt nq"]
    coef_v: Float[Array, "nt nv"]
    tendon_stiffness: Float[Array, " nt"]
    tendon_spring: Float[Array, "nt 2"]
    tendon_damping: Float[Array, " nt"]
    tendon_range: Float[Array, "nt 2"]
    tendon_length0: Float[Array, " nt"]
    tendon_invweight: Float[Array, " nt"]
    tendon_solref: Float[Array, "nt 2"]
    tendon_solimp: Float[Array, "nt 5"]
    tendon_actuator_range: Float[Array, "nt 2"]
    tendon_limited: tuple[bool, ...] = eqx.field(static=True)
    tendon_path: tuple[tuple[int, ...], ...] = eqx.field(static=True)
    path_body: tuple[int, ...] = eqx.field(static=True)
    path_point: Float[Array, "npath 3"]

    def __check_init__(self):
        n = len(self.names)
        for f in ("kinds", "body1", "body2", "index1", "index2"):
            if len(getattr(self, f)) != n:
                raise ValueError(f"Constraints: {f} has {len(getattr(self, f))} entries, names has {n}")
        for name, k in zip(self.names, self.kinds):
            if k not in KINDS:
                raise ValueError(f"constraint '{name}': unknown kind '{k}' (supported: {', '.join(KINDS)})")

    @property
    def neq(self) -> int:
        return len(self.names)

    @property
    def nt(self) -> int:
        return len(self.tendon_names)

    @property
    def limits(self) -> int:
        """The number of tendon limit rows (one per limited tendon)."""
        return sum(self.tendon_limited)

    @property
    def solved(self) -> bool:
        """Whether the constrained solve has rows: equality constraints or tendon limits."""
        return bool(self.neq or self.limits)

    @property
    def rows(self) -> int:
        """The number of constraint rows (3 per connect, 6 per weld, 1 per joint or tendon)."""
        return sum(ROWS[k] for k in self.kinds)

    def index(self, name: str) -> int:
        try:
            return self.names.index(name)
        except ValueError:
            raise KeyError(f"no constraint named '{name}' (constraints: {', '.join(self.names)})") from None

    def tendons_only(self) -> Constraints:
        """The same tendons without the equality constraints and the tendons' limits (their
        springs and dampers, the passive forces, stay)."""
        eq = _empty_eq(self.coef_q.dtype)
        return Constraints(
            names=(),
            kinds=(),
            body1=(),
            body2=(),
            index1=(),
            index2=(),
            **eq,
            **{
                f: getattr(self, f)
                for f in (
                    "tendon_names",
                    "coef_q",
                    "coef_v",
                    "tendon_stiffness",
                    "tendon_spring",
                    "tendon_damping",
                    "tendon_range",
                    "tendon_length0",
                    "tendon_invweight",
                    "tendon_solref",
                    "tendon_solimp",
                    "tendon_actuator_range",
                    "tendon_path",
                    "path_body",
                    "path_point",
                )
            },
            tendon_limited=(False,) * self.nt,
        )

    def equality_records(self) -> list[dict]:
        """The equality constraints as the records :func:`build` takes (one dict each)."""
        arrays: tuple[str, ...] = ("anchor1", "anchor2", "frame1", "frame2", "torquescale", "polycoef", "ref1", "ref2")
        arrays += ("solref", "solimp", "invweight")
        return [
            dict(
                name=self.names[i],
                kind=self.kinds[i],
                body1=self.body1[i],
                body2=self.body2[i],
                index1=self.index1[i],
                index2=self.index2[i],
                active=bool(np.asarray(self.active[i]) > 0),
                **{f: np.asarray(getattr(self, f)[i]) for f in arrays},
            )
            for i in range(self.neq)
        ]

    def tendon_records(self) -> list[dict]:
        """The tendons as the records :func:`build` takes (one dict each)."""
        return [
            dict(
                name=self.tendon_names[i],
                coef_q=np.asarray(self.coef_q[i]),
                coef_v=np.asarray(self.coef_v[i]),
                stiffness=float(self.tendon_stiffness[i]),
                spring=np.asarray(self.tendon_spring[i]),
                damping=float(self.tendon_damping[i]),
                range=np.asarray(self.tendon_range[i]),
                length0=float(self.tendon_length0[i]),
                invweight=float(self.tendon_invweight[i]),
                limited=self.tendon_limited[i],
                solref=np.asarray(self.tendon_solref[i]),
                solimp=np.asarray(self.tendon_solimp[i]),
                actuator_range=np.asarray(self.tendon_actuator_range[i]),
                path=[(self.path_body[k], np.asarray(self.path_point[k])) for k in self.tendon_path[i]],
            )
            for i in range(self.nt)
        ]

    def with_active(self, name: str, on: bool = True) -> Constraints:
        """A copy with the named constraint switched on or off (MuJoCo's ``eq_active``)."""
        i = self.index(name)
        return eqx.tree_at(lambda c: c.active, self, self.active.at[i].set(1.0 if on else 0.0))


def _empty_eq(dtype):
    z = lambda *s: jnp.zeros(s, dtype)
    return dict(
        anchor1=z(0, 3),
        anchor2=z(0, 3),
        frame1=z(0, 3, 3),
        frame2=z(0, 3, 3),
        torquescale=z(0),
        polycoef=z(0, 5),
        ref1=z(0),
        ref2=z(0),
        active=z(0),
        solref=z(0, 2),
        solimp=z(0, 5),
        invweight=z(0, 2),
    )


def build(model, equalities=(), tendons=(), dtype=None) -> Constraints:
    """A :class:`Constraints` from lists of plain records (dicts), as the loaders and the
    functions of :mod:`jaxdyn.constraints` write them.

    ``equalities``: dicts with ``name``, ``kind`` and the fields of that kind (``body1``,
    ``body2``, ``anchor1``, ``anchor2``, ``frame1``, ``frame2``, ``torquescale``; ``index1``,
    ``index2``, ``polycoef``, ``ref1``, ``ref2``), optional ``active``, ``solref``, ``solimp``,
    ``invweight`` (computed by :func:`jaxdyn.constraints.solve.invweights` when absent).
    ``tendons``: dicts with ``name``, ``coef_q (nq,)``, ``coef_v (nv,)`` (fixed tendons) or
    ``path`` (spatial ones: a list of ``(body, point)``, the jaxdyn body, ``-1`` the world, and the
    point in its frame), and optional ``stiffness``, ``spring (2,)``, ``damping``, ``range (2,)``,
    ``limited`` (default: a finite range), ``solref``, ``solimp`` (of the limit),
    ``actuator_range (2,)``, ``length0``, ``invweight``.
    """
    dtype = dtype or model.dtype
    nq, nv = model.nq, model.nv
    a = lambda x, shape: jnp.asarray(np.asarray(x, np.float64).reshape(shape), dtype)
    eq = _empty_eq(dtype)
    if equalities:
        E = list(equalities)
        get = lambda k, d: [e.get(k, d) for e in E]
        eq = dict(
            anchor1=a(get("anchor1", np.zeros(3)), (len(E), 3)),
            anchor2=a(get("anchor2", np.zeros(3)), (len(E), 3)),
            frame1=a(get("frame1", np.eye(3)), (len(E), 3, 3)),
            frame2=a(get("frame2", np.eye(3)), (len(E), 3, 3)),
            torquescale=a(get("torquescale", 1.0), (len(E),)),
            polycoef=a(get("polycoef", np.array([0, 1, 0, 0, 0.0])), (len(E), 5)),
            ref1=a(get("ref1", 0.0), (len(E),)),
            ref2=a(get("ref2", 0.0), (len(E),)),
            active=a([1.0 if e.get("active", True) else 0.0 for e in E], (len(E),)),
            solref=a(get("solref", DEFAULT_SOLREF), (len(E), 2)),
            solimp=a(get("solimp", DEFAULT_SOLIMP), (len(E), 5)),
            invweight=a(get("invweight", np.zeros(2)), (len(E), 2)),
        )
    T = list(tendons)
    nt = len(T)
    tget = lambda k, d: [t.get(k, d) for t in T]
    inf = np.array([-np.inf, np.inf])
    coef_q = a(tget("coef_q", np.zeros(nq)), (nt, nq)) if nt else jnp.zeros((0, nq), dtype)
    coef_v = a(tget("coef_v", np.zeros(nv)), (nt, nv)) if nt else jnp.zeros((0, nv), dtype)
    paths: list[tuple[int, ...]] = []
    path_body: list[int] = []
    path_point: list[np.ndarray] = []
    for t in T:
        path = list(t.get("path") or ())
        paths.append(tuple(range(len(path_body), len(path_body) + len(path))))
        path_body += [int(b) for b, _ in path]
        path_point += [np.asarray(x, np.float64).reshape(3) for _, x in path]
    ranges = [np.asarray(t.get("range", inf), np.float64) for t in T]
    limited = [bool(t.get("limited", np.all(np.isfinite(r)))) for t, r in zip(T, ranges)]
    return Constraints(
        names=tuple(e["name"] for e in equalities),
        kinds=tuple(e["kind"] for e in equalities),
        body1=tuple(int(e.get("body1", -1)) for e in equalities),
        body2=tuple(int(e.get("body2", -1)) for e in equalities),
        index1=tuple(int(e.get("index1", -1)) for e in equalities),
        index2=tuple(int(e.get("index2", -1)) for e in equalities),
        **eq,
        tendon_names=tuple(t["name"] for t in T),
        coef_q=coef_q,
        coef_v=coef_v,
        tendon_stiffness=a(tget("stiffness", 0.0), (nt,)),
        tendon_spring=a(tget("spring", np.zeros(2)), (nt, 2)),
        tendon_damping=a(tget("damping", 0.0), (nt,)),
        tendon_range=a(tget("range", inf), (nt, 2)),
        tendon_length0=a(tget("length0", 0.0), (nt,)),
        tendon_invweight=a(tget("invweight", 0.0), (nt,)),
        tendon_solref=a(tget("solref", DEFAULT_SOLREF), (nt, 2)),
        tendon_solimp=a(tget("solimp", DEFAULT_SOLIMP), (nt, 5)),
        tendon_actuator_range=a(tget("actuator_range", inf), (nt, 2)),
        tendon_limited=tuple(limited),
        tendon_path=tuple(paths),
        path_body=tuple(path_body),
        path_point=a(path_point, (len(path_body), 3)) if path_body else jnp.zeros((0, 3), dtype),
    )
