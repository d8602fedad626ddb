"""Sensors: MuJoCo's ``<sensor>`` elements as one function of the state.

:func:`from_mjcf` reads an MJCF file's ``<sensor>`` section into :class:`Sensors`, a pytree that
places each sensor's object on the bodies of a model loaded from the same file; :func:`read`
returns MuJoCo's ``sensordata`` at a state, in MuJoCo's order, as one array (``vmap`` and ``grad``
through it as through any jaxdyn function). ``Sensors.slice(name)`` is a sensor's slice of it and
``Sensors.as_dict(data)`` splits it by name.

Conventions (MuJoCo's, ``engine_sensor.c``): a sensor's *object* is a site, a MuJoCo body's frame
(``xbody``), its inertial frame (``body``: the centre of mass, principal axes) or a geom; vectors
are in world axes unless said otherwise. With ``R, p`` the object's world orientation and
position, ``omega`` its angular velocity and ``v`` the velocity of its origin (world axes):

* ``jointpos``: ``qpos`` of a hinge or slide joint (jaxdyn's ``q`` equals MuJoCo's ``qpos``)
* ``jointvel``: ``qvel`` of a hinge or slide joint
* ``ballquat``: a ball joint's quaternion (``q``, as stored), ``ballangvel`` its ``qd``
* ``framepos``: ``p``; with a reference frame ``(R_r, p_r)``: ``R_r^T (p - p_r)``
* ``framequat``: the orientation quaternion ``[w, x, y, z]``; with a reference ``q_r^* q``
* ``frame[xyz]axis``: a column of ``R``; with a reference ``R_r^T`` times it
* ``framelinvel``: ``v``; with a reference ``R_r^T (v - v_r - omega_r x (p - p_r))``
* ``frameangvel``: ``omega``; with a reference ``R_r^T (omega - omega_r)``
* ``framelinacc``: ``a - g``, ``a`` the acceleration of the origin (proper acceleration)
* ``frameangacc``: ``d omega / dt``
* ``gyro``: ``R^T omega`` of a site
* ``velocimeter``: ``R^T v`` of a site
* ``accelerometer``: ``R^T (a - g)`` of a site: the proper acceleration in the site frame (at rest
  on the ground it reads ``+9.81`` along the upward axis)
* ``magnetometer``: ``R^T b``, ``b`` the field of ``<option magnetic>`` (default ``0 -0.5 0``)
* ``force``: the force that the parent exerts on the subtree of the site's body (MuJoCo's
  ``cfrc_int``), in the site frame: ``f`` of :func:`~jaxdyn.rnea_full`
* ``torque``: its moment about the site origin, in the site frame
* ``subtreecom``: the centre of mass of a body's subtree
* ``subtreelinvel``: the velocity of that centre of mass
* ``subtreeangmom``: the subtree's angular momentum about its centre of mass
* ``actuatorfrc``: an actuator's scalar force (``actuator_force``, :func:`jaxdyn.actuators.forces`)
* ``jointactuatorfrc``: the actuators' force on a hinge or slide joint (``qfrc_actuator``: the
  sum over its actuators capped by the joint's ``actuatorfrcrange``, the model's effort limit)
* ``touch``: the sum of the normal forces of the contacts of the geoms of the site's (MuJoCo)
  body whose ray, from the contact point along the normal away from the body, meets the site's
  volume (the "sensor zone"), from the ``contacts`` given to :func:`read` (0 without): MuJoCo's,
  or jaxdyn's own from :func:`contacts_of`

Position sensors need ``q``, velocity sensors ``qd`` as well, and the acceleration sensors
(``accelerometer``, ``force``, ``torque``, ``framelinacc``, ``frameangacc``, ``touch``) the joint
accelerations ``qdd`` (:func:`~jaxdyn.aba`'s result, or MuJoCo's ``qacc`` through
:func:`jaxdyn.io.mjcf.acceleration_from_mujoco`): MuJoCo computes them after the forward dynamics,
from ``qacc``. The actuator sensors (``actuatorfrc``, ``jointactuatorfrc``) need ``qd`` and
the controls ``ctrl`` (and ``act`` for actuators with activation dynamics). ``force`` and
``torque`` include the external wrenches ``f_ext`` (contact forces:
MuJoCo's ``cfrc_ext``); without them they read the wrench of gravity and motion alone.

``noise`` is stored (``Sensors.noise``): MuJoCo does not add it when it steps. Given a ``key``,
:func:`read` adds zero-mean Gaussian noise of that standard deviation: to each entry of a real
sensor; to a positive one (``touch``) only where positive, kept non-negative; an axis is rotated
and a quaternion multiplied on the right by a rotation of angle ``noise * N(0, 1)`` about a random
axis. ``cutoff`` (where positive) then clamps real sensors to ``[-cutoff, cutoff]`` and positive
ones to ``cutoff`` from above, as MuJoCo does.

What :func:`from_mjcf` refuses (:class:`~jaxdyn.io.mjcf.MJCFError`, naming the sensor): MuJoCo's
other sensor types (or drops them with a warning, ``unsupported="warn"``: ``sensordata`` offsets
then differ from MuJoCo's; use the names); cameras as objects; mesh, height-field and SDF geoms
as objects (MuJoCo moves their frames to the shape's); the orientation of a body's inertial
frame where MuJoCo computes principal axes (``fullinertia``, several geoms or a mesh: use
``xbody`` or a site); ``force``, ``torque`` and subtree sensors on a body without its own joint
(jaxdyn merges it into its parent); ``delay`` and ``interval``. Mocap bodies are static at their
pose in the file, as in the model.

``framequat`` is the product of the quaternions along the chain of joints, continuous in ``q``;
it equals MuJoCo's where the fixed orientations in the file (bodies, sites) compile to
quaternions with a non-negative scalar part, and is its negative (the same rotation) otherwise.
"""

from __future__ import annotations

import os
import warnings
from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int

from . import actuators, joints, spatial
from .algorithms.common import check
from .algorithms.kinematics import kinematics
from .algorithms.rnea import rnea_full
from .io.mjcf.sensors import parse_sensors
from .model import Model

__all__ = ["Sensors", "Contacts", "from_mjcf", "read"]

# sensors whose value is a vector x read in a frame F, F^T x: type -> (F, x). F: the reference
# frame ("ref"), the object's frame ("obj"), the site frame in its body ("site", for the body's
# wrench in body axes), the world; x: see read's table of vectors
FRAME_VECTOR = {
    "framepos": ("ref", "pos_rel"),
    "framexaxis": ("ref", "xaxis"),
    "frameyaxis": ("ref", "yaxis"),
    "framezaxis": ("ref", "zaxis"),
    "framelinvel": ("ref", "linvel_rel"),
    "frameangvel": ("ref", "angvel_rel"),
    "gyro": ("obj", "angvel"),
    "velocimeter": ("obj", "linvel"),
    "magnetometer": ("obj", "magnetic"),
    "accelerometer": ("obj", "linacc"),
    "framelinacc": ("world", "linacc"),
    "frameangacc": ("world", "angacc"),
    "force": ("site", "force"),
    "torque": ("site", "torque"),
}


class Sensors(eqx.Module):
    """The sensors of a model, in MuJoCo's ``sensordata`` order.

    Static: ``names``, ``types``, ``dims`` (entries of each in ``sensordata``), ``stages``
    (``"pos"``, ``"vel"``, ``"acc"``, ``"ctrl"``: the actuator sensors), ``datatypes`` (``"real"``, ``"positive"``, ``"axis"``,
    ``"quaternion"``), ``obj_body`` / ``ref_body`` (the jaxdyn body carrying the object and the
    reference frame; ``-1`` the world, ``-2`` none), ``index`` (the ``q`` / ``qd`` address of a
    joint sensor, the actuator of an ``actuatorfrc``, the jaxdyn body of a subtree sensor), ``zone`` (a touch sensor's site shape),
    ``touch_geoms`` (the ``model.geoms`` of a touch sensor's MuJoCo body).

    Arrays (``n`` sensors): ``obj_R (n,3,3)``, ``obj_p (n,3)``, ``obj_quat (n,4)``: the object's
    placement in its body frame; ``ref_R``, ``ref_p``, ``ref_quat`` the reference frame's;
    ``noise (n,)``, ``cutoff (n,)``; ``zone_size (n,3)``; ``magnetic (3,)`` the magnetic field.
    """

    names: tuple[str, ...] = eqx.field(static=True)
    types: tuple[str, ...] = eqx.field(static=True)
    dims: tuple[int, ...] = eqx.field(static=True)
    stages: tuple[str, ...] = eqx.field(static=True)
    datatypes: tuple[str, ...] = eqx.field(static=True)
    obj_body: tuple[int, ...] = eqx.field(static=True)
    ref_body: tuple[int, ...] = eqx.field(static=True)
    index: tuple[int, ...] = eqx.field(static=True)
    zone: tuple[str, ...] = eqx.field(static=True)
    touch_geoms: tuple[tuple[int, ...], ...] = eqx.field(static=True)
    obj_R: Float[Array, "n 3 3"]
    obj_p: Float[Array, "n 3"]
    obj_quat: Float[Array, "n 4"]
    ref_R: Float[Array, "n 3 3"]
    ref_p: Float[Array, "n 3"]
    ref_quat: Float[Array, "n 4"]
    noise: Float[Array, " n"]
    cutoff: Float[Array, " n"]
    zone_size: Float[Array, "n 3"]
    magnetic: Float[Array, " 3"]

    @property
    def adr(self) -> tuple[int, ...]:
        """Each sensor's first entry in ``sensordata`` (MuJoCo's ``sensor_adr``)."""
        return tuple(int(x) for x in np.concatenate([[0], np.cumsum(self.dims)[:-1]])) if self.dims else ()

    @property
    def nsensordata(self) -> int:
        return int(sum(self.dims))

    def slice(self, name: str) -> slice:
        """The slice of ``sensordata`` that holds the named sensor."""
        try:
            i = self.names.index(name)
        except ValueError:
            raise KeyError(f"no sensor named '{name}' (sensors: {', '.join(self.names)})") from None
        return slice(self.adr[i], self.adr[i] + self.dims[i])

    def as_dict(self, data: Float[Array, "... nsensordata"]) -> dict[str, Array]:
        """``sensordata`` (any leading batch axes) split by sensor name."""
        return {n: data[..., a : a + d] for n, a, d in zip(self.names, self.adr, self.dims)}

    def select(self, names) -> Sensors:
        """The named sensors only, in the order given: :func:`read` then computes just those
        (and needs only what they need, e.g. no ``qdd`` without an acceleration sensor)."""
        ix = []
        for n in names:
            if n not in self.names:
                raise KeyError(f"no sensor named '{n}' (sensors: {', '.join(self.names)})")
            ix.append(self.names.index(n))
        pick = np.asarray(ix, int)

        def take(x):
            return tuple(x[i] for i in ix) if isinstance(x, tuple) else x[pick]

        static = ("names", "types", "dims", "stages", "datatypes", "obj_body", "ref_body", "index", "zone")
        arrays = ("obj_R", "obj_p", "obj_quat", "ref_R", "ref_p", "ref_quat", "noise", "cutoff", "zone_size")
        return Sensors(
            **{f: take(getattr(self, f)) for f in static + arrays},
            touch_geoms=take(self.touch_geoms),
            magnetic=self.magnetic,
        )


class Contacts(NamedTuple):
    """Contacts for ``touch`` sensors, as MuJoCo describes them (``mjContact`` and
    ``mj_contactForce``), ``m`` rows: ``point (m,3)`` where the contact acts, ``normal (m,3)`` its
    unit normal, pointing from ``geom1`` to ``geom2`` (the first row of MuJoCo's contact frame),
    ``force (m,)`` the normal force (rows where it is not positive count nothing), ``geom1``,
    ``geom2`` ``(m,)`` the geoms in contact, as indices into ``model.geoms`` (MuJoCo's geom ids
    where no height field or SDF precedes them; ``-1``: a shape that is not one of the model's
    geoms, such as :class:`jaxdyn.contact.Ground`). A touch sensor reads the contacts of the
    geoms of its site's MuJoCo body (also where jaxdyn merged that body into its parent)."""

    point: Float[Array, "m 3"]
    normal: Float[Array, "m 3"]
    force: Float[Array, " m"]
    geom1: Int[Array, " m"]
    geom2: Int[Array, " m"]


def contacts_of(model: Model, q, qd, contact, state=None) -> Contacts:
    """jaxdyn's own contacts at the state ``(q, qd)`` as :class:`Contacts`, for ``touch``:
    ``sensors.read(..., contacts=contacts_of(model, q, qd, contact))``.

    The rows are those of :meth:`jaxdyn.contact.Contact.point_forces`: the ground contact points
    (``geom1 = -1``, the ground; ``geom2`` the model's geom; the normal the ground's, pointing
    into the body), then the contacts of the shape pairs (``geom1``, ``geom2`` the pair's geoms,
    the normal from the first to the second; a pair with a geom on the world has that geom
    first). ``force`` is the normal part of the force law at ``(q, qd)`` (``contact.params``, or
    MuJoCo's with ``Contact(normal="mujoco")``; ``state``: the bristle elongations of
    ``friction="spring"``, as ``sim.rollout`` carries them). The ``"implicit_euler"`` step solves
    for its contact forces at the step's end velocity, so a touch sensor read from the state
    differs from the step's force while bodies move; at rest the two agree (the weight a body
    rests on). With the broad phase (``Contact(max_pairs=K)``) only the chosen pairs' rows count.
    """
    pf = contact.point_forces(model, q, qd, state)
    i32 = lambda x: jnp.asarray(np.asarray(x, np.int32).reshape(-1))  # noqa: E731
    force = jnp.sum(pf.force * pf.normal, -1)
    return Contacts(pf.point, pf.normal, force, i32(pf.other_geom), i32(pf.geom))


def from_mjcf(source: str | os.PathLike, model: Model, *, unsupported: str = "error") -> Sensors:
    """The ``<sensor>`` elements of an MJCF file (or its text) as :class:`Sensors` of ``model``
    (loaded from the same MJCF by :func:`~jaxdyn.load_mjcf`), in the model's dtype.

    Args:
      source: the MJCF file path or text (includes are followed as the loader follows them).
      model: the model the sensors are placed on.
      unsupported: ``"error"`` (default): a sensor type jaxdyn does not compute raises
        :class:`~jaxdyn.io.mjcf.MJCFError`; ``"warn"``: such sensors are left out, with a
        ``UserWarning`` naming them (``sensordata`` offsets then differ from MuJoCo's).

    Raises:
      MJCFError: naming the sensor element (see the module docstring for what is refused).
    """
    specs, dropped, magnetic = parse_sensors(source, model, unsupported)
    if dropped:
        warnings.warn(
            "jaxdyn.sensors.from_mjcf: sensors of types jaxdyn does not compute were left out (sensordata offsets "
            "differ from MuJoCo's): " + ", ".join(dropped),
            UserWarning,
            stacklevel=2,
        )
    dtype = model.dtype
    n = len(specs)

    def placements(key):
        R = np.tile(np.eye(3), (n, 1, 1))
        p = np.zeros((n, 3))
        quat = np.tile([1.0, 0.0, 0.0, 0.0], (n, 1))
        body = []
        for i, s in enumerate(specs):
            pl = s[key]
            body.append(-2 if pl is None else int(pl.body))
            if pl is not None:
                p[i] = pl.p
                if pl.R is not None:
                    R[i], quat[i] = pl.R, _matrix_quaternion_np(pl.R)
        return tuple(body), jnp.asarray(R, dtype), jnp.asarray(p, dtype), jnp.asarray(quat, dtype)

    obj_body, obj_R, obj_p, obj_quat = placements("obj")
    ref_body, ref_R, ref_p, ref_quat = placements("ref")
    return Sensors(
        names=tuple(s["name"] for s in specs),
        types=tuple(s["type"] for s in specs),
        dims=tuple(s["dim"] for s in specs),
        stages=tuple(s["stage"] for s in specs),
        datatypes=tuple(s["datatype"] for s in specs),
        obj_body=obj_body,
        ref_body=ref_body,
        index=tuple(int(s["index"]) for s in specs),
        zone=tuple(s["zone"][0] for s in specs),
        touch_geoms=tuple(tuple(s["geoms"]) for s in specs),
        obj_R=obj_R,
        obj_p=obj_p,
        obj_quat=obj_quat,
        ref_R=ref_R,
        ref_p=ref_p,
        ref_quat=ref_quat,
        noise=jnp.asarray([s["noise"] for s in specs], dtype).reshape(n),
        cutoff=jnp.asarray([s["cutoff"] for s in specs], dtype).reshape(n),
        zone_size=jnp.asarray(np.array([s["zone"][1] for s in specs]).reshape(n, 3), dtype),
        magnetic=jnp.asarray(magnetic, dtype),
    )


def read(
    model: Model,
    sensors: Sensors,
    q: Float[Array, " nq"],
    qd: Float[Array, " nv"] | None = None,
    qdd: Float[Array, " nv"] | None = None,
    *,
    f_ext: Float[Array, "nb 6"] | None = None,
    contacts: Contacts | None = None,
    ctrl: Float[Array, " nu"] | None = None,
    act: Float[Array, " na"] | None = None,
    key: Array | None = None,
) -> Float[Array, " nsensordata"]:
    """MuJoCo's ``sensordata`` at a state: every sensor's value, in order (module docstring).

    Args:
      q: ``(nq,)`` the configuration.
      qd: ``(nv,)`` the joint velocities, in jaxdyn's conventions (a free root's from MuJoCo's
        ``qvel`` with :func:`jaxdyn.io.mjcf.velocity_from_mujoco`); needed by velocity and
        acceleration sensors.
      qdd: ``(nv,)`` the joint accelerations (:func:`jaxdyn.io.mjcf.acceleration_from_mujoco`
        converts MuJoCo's ``qacc``); needed by acceleration sensors.
      f_ext: ``(nb, 6)`` external wrenches on the bodies (:func:`~jaxdyn.rnea`'s convention), for
        ``force`` and ``torque``.
      contacts: :class:`Contacts`, for ``touch`` (``None``: no contact, touch sensors read 0).
      ctrl: ``(nu,)`` the controls of the model's actuators, for ``actuatorfrc`` and
        ``jointactuatorfrc``; act: ``(na,)`` their activations (:mod:`jaxdyn.actuators`).
      key: a ``jax.random`` key: add each sensor's noise (none without a key).

    Returns: ``(nsensordata,)``.
    """
    check(model, "sensors.read", q=q, qd=qd, qdd=qdd, f_ext=f_ext)
    _require(sensors, "vel", qd, "qd (the joint velocities)")
    _require(sensors, "acc", qdd, "qdd (the joint accelerations, e.g. from jaxdyn.aba)")
    _require(sensors, "ctrl", ctrl, "ctrl (the actuators' controls)")
    _require(sensors, "ctrl", qd, "qd (the joint velocities)")
    n = len(sensors.names)
    if n == 0:
        return jnp.zeros(0, model.dtype)
    dtype = model.dtype
    q = jnp.asarray(q, dtype)
    nb = model.nb
    rec = kinematics(model, q)  # one forward kinematics for the frames and the RNEA below
    poses = rec.poses
    Rb = jnp.concatenate([poses.R, jnp.eye(3, dtype=dtype)[None]])  # the world last
    pb = jnp.concatenate([poses.p, jnp.zeros((1, 3), dtype)])
    ob = np.where(np.array(sensors.obj_body) < 0, nb, sensors.obj_body)
    rb = np.where(np.array(sensors.ref_body) < 0, nb, sensors.ref_body)
    R = Rb[ob] @ sensors.obj_R  # objects' world orientations and positions (n, ...)
    p = _rotate(Rb[ob], sensors.obj_p) + pb[ob]
    Rr = Rb[rb] @ sensors.ref_R  # the reference frames' (the world where a sensor has none)
    pr = _rotate(Rb[rb], sensors.ref_p) + pb[rb]

    stages = set(sensors.stages)
    kin = None
    if stages & {"vel", "acc"}:
        qd = jnp.asarray(qd, dtype)
        if "acc" in stages:
            kin = rnea_full(model, q, qd, jnp.asarray(qdd, dtype), f_ext, gravity=True, kinematics=rec)
        else:
            kin = rnea_full(model, q, qd, jnp.zeros(model.nv, dtype), gravity=False, kinematics=rec)
        v = jnp.concatenate([kin.v, jnp.zeros((1, 6), dtype)])
        w_o, v_o = _point_velocity(Rb, v, ob, sensors.obj_p)
        w_r, v_r = _point_velocity(Rb, v, rb, sensors.ref_p)
    if "acc" in stages:
        assert kin is not None
        a = jnp.concatenate([kin.a, jnp.concatenate([jnp.zeros(3, dtype), -model.gravity.astype(dtype)])[None]])
        wb = v[ob, :3]
        vpb = v[ob, 3:] + spatial.cross(wb, sensors.obj_p)
        alpha_b = a[ob, :3]
        acc_b = a[ob, 3:] + spatial.cross(alpha_b, sensors.obj_p) + spatial.cross(wb, vpb)  # body axes
        alpha_o = _rotate(Rb[ob], alpha_b)
        acc_o = _rotate(Rb[ob], acc_b)
        f = jnp.concatenate([kin.f, jnp.zeros((1, 6), dtype)])[ob]

    # the sensors that read a vector x in a frame F as F^T x: a sensor without a reference frame
    # has the world as its reference (identity, at rest), which leaves its value as it is
    vectors = {
        "pos_rel": lambda: p - pr,
        "xaxis": lambda: R[:, :, 0],
        "yaxis": lambda: R[:, :, 1],
        "zaxis": lambda: R[:, :, 2],
        "magnetic": lambda: jnp.broadcast_to(sensors.magnetic, (n, 3)),
        "angvel": lambda: w_o,
        "linvel": lambda: v_o,
        "angvel_rel": lambda: w_o - w_r,
        "linvel_rel": lambda: v_o - v_r + spatial.cross(p - pr, w_r),
        "angacc": lambda: alpha_o,
        "linacc": lambda: acc_o,
        "force": lambda: f[:, 3:],
        "torque": lambda: f[:, :3] - spatial.cross(sensors.obj_p, f[:, 3:]),  # about the site
    }
    eye = jnp.broadcast_to(jnp.eye(3, dtype=dtype), (n, 3, 3))
    frames = {"ref": lambda: Rr, "obj": lambda: R, "site": lambda: sensors.obj_R, "world": lambda: eye}
    pos, vals = [], []
    fv = np.array([i for i, t in enumerate(sensors.types) if t in FRAME_VECTOR])
    if len(fv):
        used_f = sorted({FRAME_VECTOR[sensors.types[i]][0] for i in fv})
        used_v = sorted({FRAME_VECTOR[sensors.types[i]][1] for i in fv})
        kf = np.array([used_f.index(FRAME_VECTOR[sensors.types[i]][0]) for i in fv])
        kv = np.array([used_v.index(FRAME_VECTOR[sensors.types[i]][1]) for i in fv])
        F = jnp.stack([frames[k]() for k in used_f])[kf, fv]
        x = jnp.stack([vectors[k]() for k in used_v])[kv, fv]
        pos.append(fv)
        vals.append(_rotate_back(F, x))
    for t in sorted(set(sensors.types) - set(FRAME_VECTOR)):
        ix = np.array([i for i, s in enumerate(sensors.types) if s == t])
        idx = np.array(sensors.index)[ix]
        if t == "jointpos":
            y = q[idx][:, None]
        elif t == "ballquat":
            y = q[idx[:, None] + np.arange(4)]
        elif t in ("jointvel", "ballangvel"):
            assert qd is not None  # _require
            y = qd[idx][:, None] if t == "jointvel" else qd[idx[:, None] + np.arange(3)]
        elif t == "framequat":
            y = _frame_quaternions(model, sensors, q, ix)
        elif t in ("subtreecom", "subtreelinvel", "subtreeangmom"):
            y = _subtrees(model, t, idx, poses, kin)
        elif t in ("actuatorfrc", "jointactuatorfrc"):
            assert qd is not None and ctrl is not None  # _require
            qv = jnp.asarray(qd, dtype)
            if t == "actuatorfrc":
                y = actuators.forces(model, q, qv, ctrl, act)[idx][:, None]
            else:  # MuJoCo's qfrc_actuator: the sum capped by the joint's actuatorfrcrange
                tau = actuators.joint_torques(model, q, qv, ctrl, act)
                y = jnp.clip(tau, -model.effort_limit, model.effort_limit)[idx][:, None]
        elif t == "touch":
            y = jnp.zeros((len(ix), 1), dtype)
            if contacts is not None:
                y = _touch(model, sensors, ix, R[ix], p[ix], contacts)
        else:  # from_mjcf builds only the types above
            raise ValueError(f"sensors of unknown type '{t}'")
        pos.append(ix)
        vals.append(y)
    # sensordata: the groups' rows (sensors) flattened, then put in sensor order
    entries = np.concatenate([np.concatenate([sensors.adr[i] + np.arange(sensors.dims[i]) for i in ix]) for ix in pos])
    out = jnp.concatenate([jnp.asarray(y, dtype).reshape(-1) for y in vals])[np.argsort(entries)]
    return _noise_and_cutoff(sensors, out, key)


def _require(sensors, stage, x, what):
    if x is None:
        need = [
            f"{t} '{n}'"
            for n, t, s in zip(sensors.names, sensors.types, sensors.stages)
            if s == stage or (stage == "vel" and s == "acc")
        ]
        if need:
            raise ValueError(f"sensors.read: {', '.join(need)} need {what}")


def _rotate(R, x):
    """``R @ x`` row by row: ``R (m,3,3)``, ``x (m,3)``."""
    return jnp.einsum("nij,nj->ni", R, x)


def _rotate_back(R, x):
    """``R^T @ x`` row by row."""
    return jnp.einsum("nji,nj->ni", R, x)


def _point_velocity(Rb, v, bodies, p):
    """World angular velocity of the bodies and world velocity of the points ``p`` (body axes)."""
    w = v[bodies, :3]
    vp = v[bodies, 3:] + spatial.cross(w, p)
    return _rotate(Rb[bodies], w), _rotate(Rb[bodies], vp)


def _subtrees(model, t, bodies, poses, kin):
    """``t`` (subtreecom, subtreelinvel or subtreeangmom) of the subtrees of ``bodies``: the
    centre of mass ``C = sum m_i x_i / M`` of the bodies below (and with) each, its velocity
    ``V = sum m_i v_i / M`` and ``L = sum R_i I_i omega_i + m_i (x_i - C) x (v_i - V)`` (world
    axes; ``x_i``, ``v_i`` the bodies' centres of mass and their velocities)."""
    mask = jnp.asarray(model.layout.ancestor[bodies], model.dtype)  # (s, nb): the subtrees
    mm = mask * model.mass
    M = jnp.sum(mm, 1, keepdims=True)
    x = _rotate(poses.R, model.com) + poses.p
    C = mm @ x / M
    if t == "subtreecom":
        return C
    w = kin.v[:, :3]
    vc = _rotate(poses.R, kin.v[:, 3:] + spatial.cross(w, model.com))
    V = mm @ vc / M
    if t == "subtreelinvel":
        return V
    Lc = _rotate(poses.R, jnp.einsum("bij,bj->bi", model.inertia, w))
    orbital = spatial.cross(x[None] - C[:, None], vc[None] - V[:, None])  # (s, nb, 3)
    return mask @ Lc + jnp.einsum("sb,sbi->si", mm, orbital)


def _axis_angle_quaternion(axis, angle):
    """``[cos(angle/2), sin(angle/2) axis]`` (any leading axes)."""
    half = jnp.asarray(angle)[..., None] / 2
    return jnp.concatenate([jnp.cos(half), jnp.sin(half) * axis], -1)


def _frame_quaternions(model, sensors, q, ix):
    """framequat of the sensors ``ix``: the product of the quaternions along the chain of joints
    (MuJoCo's ``xquat``) times the object's fixed quaternion, relative to the reference's."""
    lay = model.layout
    need = set()
    for i in ix:
        for b in (sensors.obj_body[i], sensors.ref_body[i]):
            while b >= 0 and b not in need:
                need.add(b)
                b = model.parents[b]
    unit = jnp.array([1.0, 0.0, 0.0, 0.0], model.dtype)
    Q = {-1: unit, -2: unit}
    for b in sorted(need):  # parents first
        jt, s = joints.get(model.joint_types[b]), int(lay.q_start[b])
        if jt.floating:  # q holds the body's world orientation
            Q[b] = jt.rotation_quaternion(model.axis[b], {}, q[s : s + jt.nq])
            continue
        Qb = spatial.quat_multiply(Q[model.parents[b]], _matrix_quaternion(model.placement_R[b]))
        rot = jt.rotation_quaternion(model.axis[b], {}, q[s : s + jt.nq])
        Q[b] = Qb if rot is None else spatial.quat_multiply(Qb, rot)
    qo = spatial.quat_multiply(jnp.stack([Q[sensors.obj_body[i]] for i in ix]), sensors.obj_quat[ix])
    qr = spatial.quat_multiply(jnp.stack([Q[sensors.ref_body[i]] for i in ix]), sensors.ref_quat[ix])
    return spatial.quat_multiply(spatial.quat_conjugate(qr), qo)


def _normalized(x):
    return x / jnp.sqrt(jnp.sum(x * x))


def _matrix_quaternion(R):
    """The unit quaternion ``[w, x, y, z]`` of a rotation matrix with ``w >= 0`` (Shepperd's
    choice of the largest of ``w, x, y, z`` for accuracy)."""
    t = R[0, 0] + R[1, 1] + R[2, 2]
    cands = jnp.stack([t, R[0, 0], R[1, 1], R[2, 2]])
    k = jnp.argmax(cands)
    r = jnp.sqrt(jnp.maximum(1.0 + 2.0 * cands[k] - t, 1e-30))  # 2 |largest component|
    s = 0.5 / r
    qw = jnp.stack([0.5 * r, (R[2, 1] - R[1, 2]) * s, (R[0, 2] - R[2, 0]) * s, (R[1, 0] - R[0, 1]) * s])
    qx = jnp.stack([(R[2, 1] - R[1, 2]) * s, 0.5 * r, (R[0, 1] + R[1, 0]) * s, (R[0, 2] + R[2, 0]) * s])
    qy = jnp.stack([(R[0, 2] - R[2, 0]) * s, (R[0, 1] + R[1, 0]) * s, 0.5 * r, (R[1, 2] + R[2, 1]) * s])
    qz = jnp.stack([(R[1, 0] - R[0, 1]) * s, (R[0, 2] + R[2, 0]) * s, (R[1, 2] + R[2, 1]) * s, 0.5 * r])
    quat = jnp.stack([qw, qx, qy, qz])[k]
    return jnp.where(quat[0] < 0, -quat, quat)


def _matrix_quaternion_np(R):
    """:func:`_matrix_quaternion` in numpy (float64, for the fixed placements)."""
    R = np.asarray(R, np.float64)
    t = np.trace(R)
    k = int(np.argmax([t, R[0, 0], R[1, 1], R[2, 2]]))
    if k == 0:
        r = np.sqrt(1.0 + t)
        quat = [0.5 * r, (R[2, 1] - R[1, 2]) / (2 * r), (R[0, 2] - R[2, 0]) / (2 * r), (R[1, 0] - R[0, 1]) / (2 * r)]
    else:
        i, j, l = k - 1, k % 3, (k + 1) % 3
        r = np.sqrt(1.0 + R[i, i] - R[j, j] - R[l, l])
        quat = [0.0] * 4
        quat[0] = (R[l, j] - R[j, l]) / (2 * r)
        quat[1 + i] = 0.5 * r
        quat[1 + j] = (R[j, i] + R[i, j]) / (2 * r)
        quat[1 + l] = (R[l, i] + R[i, l]) / (2 * r)
    quat = np.array(quat)
    return -quat if quat[0] < 0 else quat


def _noise_and_cutoff(sensors, out, key):
    """MuJoCo's sensor noise model (with a ``key``; module docstring), then its cutoff (real
    values clamped to ``[-cutoff, cutoff]``, positive ones to ``cutoff`` from above, where
    ``cutoff > 0``; axes and quaternions as they are), on all of ``sensordata``."""
    of = np.repeat(np.arange(len(sensors.names)), sensors.dims)  # each entry's sensor
    kind = np.array(sensors.datatypes)[of]
    real, positive = kind == "real", kind == "positive"
    if key is not None:
        k1, k2 = jax.random.split(key)
        x = out + sensors.noise[of] * jax.random.normal(k1, out.shape, out.dtype)
        out = jnp.where(real, x, jnp.where(positive & (out > 0), jnp.maximum(x, 0.0), out))
        for datatype, dim in (("axis", 3), ("quaternion", 4)):
            ix = np.array([i for i, t in enumerate(sensors.datatypes) if t == datatype])
            if not len(ix):
                continue
            entries = np.array(sensors.adr)[ix][:, None] + np.arange(dim)
            zr = jax.random.normal(jax.random.fold_in(k2, dim), (len(ix), 4), out.dtype)
            axis = zr[:, 1:] / jnp.linalg.norm(zr[:, 1:], axis=-1, keepdims=True)
            rot = _axis_angle_quaternion(axis, sensors.noise[ix] * zr[:, 0])
            y = out[entries]
            y = spatial.quat_multiply(y, rot) if dim == 4 else _rotate(spatial.quat_to_rotation(rot), y)
            out = out.at[entries].set(y)
    c = sensors.cutoff[of]
    out = jnp.where(real & (c > 0), jnp.clip(out, -c, c), out)
    return jnp.where(positive & (c > 0), jnp.minimum(out, c), out)


def _touch(model, sensors, ix, R, p, c: Contacts):
    """touch of the sensors ``ix`` (``R, p``: their sites' world poses), ``(s, 1)``: the sum of
    the normal forces of the contacts on the geoms of the site's body whose ray, from the contact
    point along the normal away from the body, meets the site's volume (the sensor zone)."""
    dtype = R.dtype
    ng = len(model.geoms.names) if model.geoms is not None else 0
    member = np.zeros((len(ix), ng + 1), bool)  # the last column: no geom of the model
    for k, i in enumerate(ix):
        member[k, list(sensors.touch_geoms[i])] = True
    g1, g2 = (jnp.where(g < 0, ng, g) for g in (jnp.asarray(c.geom1), jnp.asarray(c.geom2)))
    in1, in2 = jnp.asarray(member)[:, g1], jnp.asarray(member)[:, g2]  # (s, m)
    force = jnp.asarray(c.force, dtype)[None]
    on = (force > 0) & (in1 | in2)
    d = jnp.where(in2[..., None], -c.normal[None], c.normal[None]).astype(dtype)
    x0 = jnp.einsum("sij,smi->smj", R, c.point[None].astype(dtype) - p[:, None])  # site axes
    d = jnp.einsum("sij,smi->smj", R, d)
    hit = jnp.zeros(on.shape, bool)
    for zone in sorted({sensors.zone[i] for i in ix}):
        sel = np.array([sensors.zone[i] == zone for i in ix])
        hit = jnp.where(sel[:, None], _ray_hits(zone, sensors.zone_size[ix][:, None, :], x0, d), hit)
    return jnp.sum(jnp.where(on & hit, force, 0.0), 1, keepdims=True)


def _ray_hits(zone, size, x0, d):
    """Whether the rays ``x0 + t d`` (``t >= 0``; ``(..., 3)``) meet the solid ``zone`` of
    ``size (..., 3)`` at the origin of its axes (a ray that starts inside meets it)."""
    if zone == "sphere":
        return _ellipsoid_hits(x0 / size[..., :1], d / size[..., :1])
    if zone == "ellipsoid":
        return _ellipsoid_hits(x0 / size, d / size)
    if zone == "box":
        lo, hi = _slab(x0, d, size)
        return (lo <= hi) & (hi >= 0)
    r, h = size[..., 0], size[..., 1]
    cyl = _cylinder_hits(x0, d, r, h)
    if zone == "cylinder":
        return cyl
    ez = jnp.array([0.0, 0.0, 1.0], x0.dtype)
    caps = [_ellipsoid_hits((x0 - s * h[..., None] * ez) / r[..., None], d / r[..., None]) for s in (1.0, -1.0)]
    return cyl | caps[0] | caps[1]


def _ellipsoid_hits(x0, d):
    """Rays against the unit sphere (coordinates already scaled)."""
    a = jnp.sum(d * d, -1)
    b = jnp.sum(x0 * d, -1)
    c = jnp.sum(x0 * x0, -1) - 1.0
    disc = b * b - a * c
    far = (-b + jnp.sqrt(jnp.maximum(disc, 0.0))) / jnp.where(a > 0, a, 1.0)
    return (c <= 0) | ((disc >= 0) & (far >= 0) & (a > 0))


def _slab(x0, d, half):
    """The parameter interval ``[lo, hi]`` of the rays inside ``|x_k| <= half_k`` on the given
    axes (empty, ``lo > hi``, where a ray parallel to a slab starts outside it)."""
    safe = jnp.where(d == 0, 1.0, d)
    t1, t2 = (-half - x0) / safe, (half - x0) / safe
    inside = jnp.abs(x0) <= half
    lo = jnp.where(d == 0, jnp.where(inside, -jnp.inf, jnp.inf), jnp.minimum(t1, t2))
    hi = jnp.where(d == 0, jnp.where(inside, jnp.inf, -jnp.inf), jnp.maximum(t1, t2))
    return jnp.max(lo, -1), jnp.min(hi, -1)


def _cylinder_hits(x0, d, r, h):
    """Rays against the solid cylinder of radius ``r`` and half-height ``h`` along z."""
    lo_z, hi_z = _slab(x0[..., 2:], d[..., 2:], h[..., None])
    a = d[..., 0] ** 2 + d[..., 1] ** 2
    b = x0[..., 0] * d[..., 0] + x0[..., 1] * d[..., 1]
    c = x0[..., 0] ** 2 + x0[..., 1] ** 2 - r * r
    disc = b * b - a * c
    sq = jnp.sqrt(jnp.maximum(disc, 0.0))
    safe = jnp.where(a > 0, a, 1.0)
    lo_r = jnp.where(a > 0, (-b - sq) / safe, jnp.where(c <= 0, -jnp.inf, jnp.inf))
    hi_r = jnp.where(a > 0, (-b + sq) / safe, jnp.where(c <= 0, jnp.inf, -jnp.inf))
    ok_r = (a == 0) | (disc >= 0)
    lo, hi = jnp.maximum(lo_r, lo_z), jnp.minimum(hi_r, hi_z)
    return ok_r & (lo <= hi) & (hi >= 0)
