"""Joint types: one object per type holds everything about it.

A joint type (:class:`JointType`) carries its configuration and velocity sizes, its parameters,
its transform and motion subspace (over the scalars of :mod:`jaxdyn.scalars`: the per-sample
arrays over links, the ``(B,)`` arrays of the batch kernels and the Python-float constants of
the fused ones; and in NumPy for :mod:`jaxdyn.reference`), its configuration-space operations
(neutral, integrate, difference, rate, normalise, random configuration and default ranges), and
how it is drawn and written back to URDF. :data:`JOINTS` maps a type's name (``Model.joint_types``)
to its object; every other module asks :func:`get` and never compares type names. Dispatch is on
the *static* joint type in Python at trace time (never a traced switch over types): the per-link
work inside the traversals is branch-free.

Registered types (``nq``/``nv``):

* ``revolute`` / ``continuous`` (1/1): rotation by ``q`` about the unit ``axis`` (joint frame);
  ``continuous`` is a revolute joint without position limits (``q`` is the angle, not
  Pinocchio's ``(cos, sin)`` pair);
* ``prismatic`` (1/1): translation by ``q`` along ``axis``;
* ``helical`` (1/1): a screw, rotation by ``q`` about ``axis`` and translation by ``pitch q``
  along it (``pitch`` in metres per radian, :attr:`Model.joint_params` ``["pitch"]``);
* ``spherical`` (4/3): ``q`` a unit quaternion ``[w, x, y, z]`` (child-to-parent rotation),
  velocity the angular velocity in the child frame;
* ``free`` (7/6, root body only): ``q = [x, y, z, qw, qx, qy, qz]`` (world position and
  body-to-world orientation), velocity ``[omega; v]`` in the body frame.

Fixed joints do not exist at run time: the URDF loader merges them into the parent body.

Adding a joint type: subclass :class:`Screw` (a 1-dof joint of the form (J1) below: only
:meth:`Screw.lead`, and the parameters it reads) or :class:`JointType`, and :func:`register` an
instance. The algorithms and the batch kernels run any :class:`Screw`; a multi-dof type other
than a quaternion rotation needs its own per-link form in the kernels.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from . import scalars, spatial

# --- 1-dof joints: the joint motion written once ---------------------------------------------
#
# A 1-dof screw joint (rotation by ``r q`` about a unit axis ``u``, ``r`` 0 or 1, and translation
# by ``h q`` along it, ``h`` the lead) composed with its placement ``(R0, p0)`` is affine in
# ``(1, cos q, sin q, q)``. Rodrigues' formula, ``R_J = u u^T + cos q (1 - u u^T) + sin q [u]x``,
# gives
#
#     R(q) = A0 + cos q A1 + sin q A2,    p(q) = p0 + q d,    S = [sa; sl]         (J1)
#
# rotating (r = 1): A0 = R0 u u^T, A1 = R0 - A0, A2 = R0 [u]x, sa = u;
# not rotating:     A0 = R0,       A1 = A2 = 0,                sa = 0;
# and d = h R0 u, sl = h u: revolute h = 0, prismatic h = 1 (r = 0), helical h = pitch
# (Featherstone08 Table 4.1, the helical joint).
#
# :func:`one_dof_numbers` computes the model-only numbers, :func:`one_dof_motion` and
# :func:`one_dof_subspace` evaluate (J1). Every executor uses them: the per-sample algorithms
# (:func:`link_poses`, :func:`link_subspaces`, arrays over the links) and the struct-of-arrays
# kernels (:mod:`jaxdyn.kernels.soa`, tuples of ``(B,)`` arrays or of Python-float constants).


class OneDof(NamedTuple):
    """The numbers of (J1) per link: ``A0, A1, A2`` ``(n, 3, 3)``, ``p0, d, sa, sl`` ``(n, 3)``;
    ``d`` and ``sl`` are None when no link translates (structural zeros)."""

    A0: Array
    A1: Array
    A2: Array
    p0: Array
    d: Array | None
    sa: Array
    sl: Array | None


def one_dof_numbers(R0, p0, u, rotates=None, lead=None) -> OneDof:
    """The numbers of (J1) for links with placements ``(R0 (n,3,3), p0 (n,3))`` and unit axes
    ``u (n, 3)``; ``rotates``: a static boolean ``(n,)`` mask of the links that rotate (None: all),
    ``lead``: ``(n,)`` translation per unit ``q`` (None: no link translates; see
    :func:`screw_coefficients`)."""
    A0 = spatial.mm(R0, u[..., :, None] * u[..., None, :])
    A1, A2 = R0 - A0, spatial.mm(R0, spatial.skew(u))
    sa, sl = one_dof_axes(u, rotates, lead)
    if rotates is not None and not np.all(rotates):
        m = jnp.asarray(~np.asarray(rotates), u.dtype)[:, None, None]
        A0, A1, A2 = (1.0 - m) * A0 + m * R0, (1.0 - m) * A1, (1.0 - m) * A2
    return OneDof(A0, A1, A2, p0, None if sl is None else spatial.mv(R0, sl), sa, sl)


def one_dof_axes(u, rotates=None, lead=None):
    """``(sa, sl)`` of (J1) for unit axes ``u (n, 3)``: ``sa`` is ``u`` masked by the rotating
    links (``rotates`` None: all), ``sl = lead u`` (None when ``lead`` is None)."""
    sa = u
    if rotates is not None and not np.all(rotates):
        sa = jnp.asarray(np.asarray(rotates), u.dtype)[:, None] * u
    return sa, None if lead is None else jnp.asarray(lead, u.dtype)[..., None] * u


def one_dof_motion(A0, A1, A2, p0, d, q, rotates: bool = True, translates: bool = True):
    """(J1): ``R`` (9 entries, row-major) and ``p`` (3) of a link from the 9 entries of
    ``A0, A1, A2`` and the 3 of ``p0, d`` (any scalars: arrays that broadcast with ``q``, or
    Python floats, whose zeros drop out). ``rotates``/``translates`` (static) drop the terms a
    joint type does not have; both True (default) evaluate a mixed set of links (both terms, with
    the zeros of :func:`one_dof_numbers` as data). ``d`` None: no translation."""
    if rotates:
        s, c = jnp.sin(q), jnp.cos(q)
        R = tuple(scalars.add(a0, scalars.mul(c, a1), scalars.mul(s, a2)) for a0, a1, a2 in zip(A0, A1, A2))
    else:
        R = tuple(A0)
    if not translates or d is None:
        return R, tuple(p0)
    return R, tuple(scalars.add(pk, scalars.mul(q, dk)) for pk, dk in zip(p0, d))


def one_dof_subspace(sa, sl, rotates: bool = True, translates: bool = True):
    """(J1): the motion subspace ``(sa, sl)`` of a link; a half the joint type does not have is
    zeros (Python literals), and so are absent numbers (None)."""
    zero = (0.0, 0.0, 0.0)
    return (tuple(sa) if rotates else zero), (tuple(sl) if translates and sl is not None else zero)


_ZERO3 = (0.0, 0.0, 0.0)
_UNIT_QUAT = (1.0, 0.0, 0.0, 0.0)


# --- configuration spaces: the Lie-group operations, vectorised over g joints ------------------
#
# ``q (g, nq)``, ``v (g, nv)``; ``keys``: the four random streams of
# :func:`jaxdyn.configuration.random_configuration`, each space reading its own.


class Space:
    """A configuration space shared by joint types (:attr:`JointType.space`): the vector space of
    1-dof coordinates, the unit quaternions (SO(3)) or SE(3)."""

    neutral: tuple[float, ...] = ()
    quaternion_at: int | None = None
    abelian = True  # bracket() is zero

    def integrate(self, q, v):
        """``q (+) v`` (exponential map)."""
        return q + v

    def difference(self, q0, q1):
        """``v`` with ``integrate(q0, v) == q1`` (logarithm map)."""
        return q1 - q0

    def rate(self, q, v):
        """``dq/dt`` for velocity ``v``."""
        return v

    def normalize(self, q):
        return q

    def bracket(self, x, y):
        """The Lie bracket ``[x, y]`` of two velocities ``(g, nv)``; None for an abelian group."""
        return None

    def random(self, keys, lo, hi, half, dtype):
        """Random configurations ``(g, nq)`` within the limits ``lo, hi`` ``(g, nq)`` where finite,
        else within ``+-half`` ``(g,)`` (:meth:`JointType.default_range`). Every concrete space
        defines it (abstract here)."""
        raise NotImplementedError(
            f"{type(self).__name__}: a Space subclass must define random(keys, lo, hi, half, dtype)"
        )


class Vector(Space):
    """1-dof coordinates (angles or lengths): ``q + v``; random uniform in the limits."""

    neutral = (0.0,)

    def random(self, keys, lo, hi, half, dtype):
        ok = jnp.isfinite(lo) & jnp.isfinite(hi) & (hi > lo)
        half = jnp.asarray(half, dtype)[:, None]
        lo, hi = jnp.where(ok, lo, -half), jnp.where(ok, hi, half)
        return lo + jax.random.uniform(keys[0], lo.shape, dtype) * (hi - lo)


class Quaternion(Space):
    """Unit quaternions ``[w, x, y, z]`` with the angular velocity in the child frame."""

    neutral = _UNIT_QUAT
    quaternion_at = 0
    abelian = False

    def integrate(self, q, v):
        out = spatial.quat_multiply(q, spatial.quat_exp(v))
        return out / jnp.linalg.norm(out, axis=-1, keepdims=True)

    def difference(self, q0, q1):
        return spatial.quat_log(spatial.quat_multiply(spatial.quat_conjugate(q0), q1))

    def rate(self, q, v):
        return 0.5 * spatial.quat_multiply(q, jnp.concatenate([jnp.zeros_like(v[..., :1]), v], -1))

    def normalize(self, q):
        return q / jnp.linalg.norm(q, axis=-1, keepdims=True)

    def bracket(self, x, y):
        return spatial.cross(x, y)

    def random(self, keys, lo, hi, half, dtype):
        qq = jax.random.normal(keys[1], lo.shape, dtype)
        return qq / jnp.linalg.norm(qq, axis=-1, keepdims=True)


class RigidMotion(Space):
    """SE(3) as ``[p; quat]`` (world position, body-to-world orientation) with the body-frame
    twist ``[omega; v]``: ``M exp6(v)``."""

    neutral = (0.0, 0.0, 0.0) + _UNIT_QUAT
    quaternion_at = 3
    abelian = False

    def integrate(self, q, v):
        dq, dp = spatial.exp6(v)
        quat = q[..., 3:7]
        nquat = spatial.quat_multiply(quat, dq)
        p = q[..., 0:3] + spatial.mv(spatial.quat_to_rotation(quat), dp)
        return jnp.concatenate([p, nquat / jnp.linalg.norm(nquat, axis=-1, keepdims=True)], -1)

    def difference(self, q0, q1):
        a = q0[..., 3:7] / jnp.linalg.norm(q0[..., 3:7], axis=-1, keepdims=True)
        b = q1[..., 3:7] / jnp.linalg.norm(q1[..., 3:7], axis=-1, keepdims=True)
        rel = spatial.quat_multiply(spatial.quat_conjugate(a), b)
        dp = spatial.mtv(spatial.quat_to_rotation(a), q1[..., 0:3] - q0[..., 0:3])
        return spatial.log6(rel, dp)

    def rate(self, q, v):
        R = spatial.quat_to_rotation(q[..., 3:7])
        w = jnp.concatenate([jnp.zeros_like(v[..., :1]), v[..., 0:3]], -1)
        return jnp.concatenate([spatial.mv(R, v[..., 3:6]), 0.5 * spatial.quat_multiply(q[..., 3:7], w)], -1)

    def normalize(self, q):
        return jnp.concatenate([q[..., 0:3], q[..., 3:7] / jnp.linalg.norm(q[..., 3:7], axis=-1, keepdims=True)], -1)

    def bracket(self, x, y):
        return spatial.cross_motion(x, y)

    def random(self, keys, lo, hi, half, dtype):
        qq = jax.random.normal(keys[2], lo.shape[:-1] + (4,), dtype)
        p = jax.random.uniform(keys[3], lo.shape[:-1] + (3,), dtype, -1.0, 1.0)
        return jnp.concatenate([p, qq / jnp.linalg.norm(qq, axis=-1, keepdims=True)], -1)


VECTOR, QUATERNION, RIGID_MOTION = Vector(), Quaternion(), RigidMotion()


# --- joint types -----------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class JointType:
    """A joint type. Fields: ``name``; ``nq``, ``nv``; ``params``: names of the per-joint
    numbers beyond the axis (each an ``(nb,)`` array of :attr:`Model.joint_params`, 0 on joints
    of other types); ``angular``: whether the 1-dof coordinate is an angle (radians; else metres),
    which picks default ranges; ``floating``: the joint moves its body freely in the world (root
    body only); ``urdf``: the URDF joint type written back (None: URDF cannot express it; ``""``:
    written as no joint, a URDF's floating root); ``color`` and ``marker`` for the viewers."""

    name: str
    nq: int
    nv: int
    space: Space = VECTOR
    params: tuple[str, ...] = ()
    angular: bool = True
    floating: bool = False
    rotates: bool = True
    urdf: str | None = None
    color: str = "#7f7f7f"
    marker: str = "o"

    # -- kinematics (scalars: arrays, (B,) arrays or Python floats) ------------------------------
    @property
    def screw(self) -> bool:
        """A 1-dof joint of the form (J1)."""
        return False

    @property
    def translates(self) -> bool:
        """The (J1) translation term applies (:meth:`lead` is not a structural zero)."""
        return self.lead({}, 1, np.float64) is not None

    def lead(self, params: dict, nb: int, dtype):
        """Translation per unit ``q`` of a 1-dof joint for ``nb`` bodies, ``(nb,)`` (NumPy or JAX),
        or None when the joint does not translate (a structural zero)."""
        return None

    @property
    def quaternion_at(self) -> int | None:
        """Offset in the joint's ``q`` of a unit quaternion (None: none)."""
        return self.space.quaternion_at

    def transform(self, num: dict, q: Sequence) -> tuple[tuple, tuple]:
        """``(R (9 entries), p (3))``: the body frame in its parent's, from the link's joint numbers
        ``num`` (the fields of :class:`OneDof` for one link: its placement is ``A0 + A1``
        (``R0``) and ``p0``) and the joint's ``q`` entries."""
        raise NotImplementedError(f"{self.name}: a JointType subclass must define transform(num, q)")

    def subspace(self, num: dict):
        """The motion subspace in the body frame: one column ``(sa, sl)`` for a 1-dof joint, else
        the list of the ``nv`` columns."""
        raise NotImplementedError(f"{self.name}: a JointType subclass must define subspace(num)")

    def reference_motion(self, u, params: dict, q) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """NumPy: ``(R_J, p_J, S)``, the joint's motion in its joint frame at ``q`` and its
        subspace ``(nv, 6)`` in the body frame (:mod:`jaxdyn.reference`)."""
        raise NotImplementedError(f"{self.name}: a JointType subclass must define reference_motion(u, params, q)")

    def rotation_quaternion(self, u, params: dict, q):
        """The joint's rotation as a quaternion ``[w, x, y, z]`` (JAX), or None when it does not
        rotate."""
        raise NotImplementedError(f"{self.name}: a JointType subclass must define rotation_quaternion(u, params, q)")

    def default_range(self, angle: float = np.pi, length: float = 1.0) -> float:
        """Half-range of a coordinate without usable limits: ``angle`` for an angle, ``length``
        for a length."""
        return angle if self.angular else length

    def sample_params(self, rng) -> dict:
        """Random values of :attr:`params` for :mod:`jaxdyn.builders` (NumPy ``rng``)."""
        return {}


@dataclasses.dataclass(frozen=True)
class Screw(JointType):
    """A 1-dof joint of the form (J1): rotation by ``q`` about the axis when ``rotates``, and
    translation by ``lead q`` along it (:meth:`lead`)."""

    @property
    def screw(self) -> bool:
        return True

    def transform(self, num, q):
        return one_dof_motion(
            num["A0"], num["A1"], num["A2"], num["p0"], num.get("d"), q[0], self.rotates, self.translates
        )

    def subspace(self, num):
        return one_dof_subspace(num["sa"], num.get("sl"), self.rotates, self.translates)

    def reference_motion(self, u, params, q):
        h = self.lead(params, 1, np.float64)
        h = 0.0 if h is None else float(np.asarray(h).reshape(-1)[0])
        R = np.eye(3)
        if self.rotates:
            K = spatial_skew_np(u)
            R = R + np.sin(q[0]) * K + (1 - np.cos(q[0])) * K @ K
        S = np.concatenate([u if self.rotates else np.zeros(3), h * u])[None]
        return R, h * q[0] * u, S

    def rotation_quaternion(self, u, params, q):
        if not self.rotates:
            return None
        half = 0.5 * q[0]
        return jnp.concatenate([jnp.cos(half)[None], jnp.sin(half) * u])


@dataclasses.dataclass(frozen=True)
class Prismatic(Screw):
    rotates: bool = False

    def lead(self, params, nb, dtype):
        return np.ones(nb, dtype)


@dataclasses.dataclass(frozen=True)
class Helical(Screw):
    """A screw joint: ``S = [u; pitch u]``, ``X_J = rot(u, q)`` and translation ``pitch q u``."""

    def lead(self, params, nb, dtype):
        return params.get("pitch", np.zeros(nb, dtype))

    def sample_params(self, rng):
        return {"pitch": rng.uniform(-0.2, 0.2)}


# a spherical joint's S = [1_3; 0] (Python literals: its structural zeros cost nothing)
_SPHERICAL_S = [(tuple(float(k == j) for j in range(3)), _ZERO3) for k in range(3)]
_FREE_S = [(tuple(float(k == j) for j in range(3)), _ZERO3) for k in range(3)] + [
    (_ZERO3, tuple(float(k == j) for j in range(3))) for k in range(3)
]


@dataclasses.dataclass(frozen=True)
class Spherical(JointType):
    """A ball joint: ``q`` a unit quaternion, ``R = R0 R(q)``, ``S = [1_3; 0]``."""

    def transform(self, num, q):
        R0 = tuple(scalars.add(a, b) for a, b in zip(num["A0"], num["A1"]))
        return _mm9(R0, spatial.quaternion_matrix(*q[0:4])), tuple(num["p0"])

    def subspace(self, num):
        return _SPHERICAL_S

    def reference_motion(self, u, params, q):
        return _quat_matrix_np(q[0:4]), np.zeros(3), np.eye(3, 6)

    def rotation_quaternion(self, u, params, q):
        return q[0:4] / jnp.sqrt(jnp.sum(q[0:4] * q[0:4]))


@dataclasses.dataclass(frozen=True)
class Free(JointType):
    """A free-flying root: ``q = [p; quat]`` (world position, body-to-world orientation), velocity
    the body-frame twist ``[omega; v]``, ``S = 1_6``."""

    def transform(self, num, q):
        return spatial.quaternion_matrix(*q[3:7]), tuple(q[0:3])

    def subspace(self, num):
        return _FREE_S

    def reference_motion(self, u, params, q):
        return _quat_matrix_np(q[3:7]), np.asarray(q[0:3], np.float64), np.eye(6)

    def rotation_quaternion(self, u, params, q):
        return q[3:7] / jnp.sqrt(jnp.sum(q[3:7] * q[3:7]))


JOINTS: dict[str, JointType] = {}


def register(joint: JointType) -> JointType:
    """Add a joint type to :data:`JOINTS` (its ``name`` becomes a valid ``Model.joint_types``
    entry); returns it."""
    if joint.name in JOINTS:
        raise ValueError(f"joint type '{joint.name}' is already registered")
    JOINTS[joint.name] = joint
    return joint


REVOLUTE = register(Screw("revolute", 1, 1, urdf="revolute", color="#e8702a"))
CONTINUOUS = register(Screw("continuous", 1, 1, urdf="revolute", color="#d62728"))
PRISMATIC = register(Prismatic("prismatic", 1, 1, angular=False, urdf="prismatic", color="#2ca02c", marker="D"))
HELICAL = register(Helical("helical", 1, 1, params=("pitch",), color="#17becf", marker="h"))
SPHERICAL = register(Spherical("spherical", 4, 3, QUATERNION, color="#9467bd"))
FREE = register(Free("free", 7, 6, RIGID_MOTION, floating=True, urdf="", color="#1f4e9c", marker="s"))


def get(name: str) -> JointType:
    """The registered joint type ``name`` (ValueError listing the registered types if absent)."""
    try:
        return JOINTS[name]
    except KeyError:
        raise ValueError(f"unsupported joint type '{name}' (supported: {tuple(JOINTS)})") from None


def params_of(types: Sequence[str]) -> tuple[str, ...]:
    """The parameter names the joint types ``types`` read, in first-seen order."""
    out: list[str] = []
    for t in types:
        out += [p for p in get(t).params if p not in out]
    return tuple(out)


def one_dof(types: Sequence[str]) -> np.ndarray:
    """Boolean mask of the 1-dof joints (``nq == nv == 1``) among ``types``."""
    return np.array([get(t).nq == 1 and get(t).nv == 1 for t in types], bool)


def dof_ranges(types: Sequence[str], angle: float, length: float) -> np.ndarray:
    """Per dof of the 1-dof joints among ``types`` (all of them 1-dof): ``angle`` where the
    coordinate is an angle, ``length`` where it is a length (the default ranges of
    :mod:`jaxdyn.sysid`)."""
    return np.array([get(t).default_range(angle, length) for t in types], np.float64)


class LinkFlags(NamedTuple):
    """Static per-link facts the per-link kernels read: ``rotates`` ``(n,)`` (the (J1) rotation
    terms apply), ``translates`` (some link's lead is not a structural zero), ``quaternion``
    ``(n,)`` (the link's rotation is a unit quaternion, :class:`Spherical`) and ``any_quaternion``."""

    rotates: np.ndarray
    translates: bool
    quaternion: np.ndarray
    any_quaternion: bool


@functools.lru_cache(maxsize=256)
def link_flags(types: tuple[str, ...]) -> LinkFlags:
    """:class:`LinkFlags` of links of joint types ``types`` (scanned links: no floating joint)."""
    jt = [get(t) for t in types]
    for j in jt:
        if not j.screw and j.quaternion_at != 0:
            raise ValueError(f"joint type '{j.name}' has no per-link form in the traversals")
    rot = np.array([bool(not j.screw or j.rotates) for j in jt], dtype=bool)
    quat = np.array([bool(not j.screw) for j in jt], dtype=bool)
    return LinkFlags(rot, any(j.screw and j.translates for j in jt), quat, bool(quat.any()))


def screw_coefficients(types: Sequence[str], params: dict, dtype):
    """``(rotates, lead)`` of (J1) for bodies of joint types ``types``: the static mask of the
    rotating ones (and of non-screw joints, whose (J1) part is their placement) and the leads
    ``(n,)`` (None when no joint translates); ``params`` the model's :attr:`Model.joint_params`
    indexed to these bodies."""
    nb = len(types)
    jt = [get(t) for t in types]
    rot = np.array([bool(not j.screw or j.rotates) for j in jt], dtype=bool)
    lead = None
    for t in dict.fromkeys(types):
        j = get(t)
        h = j.lead(params, nb, dtype) if j.screw else None
        if h is None:
            continue
        mask = np.array([s == t for s in types])
        term: Array | np.ndarray
        if isinstance(h, np.ndarray):  # a constant: folded into one NumPy array
            term = np.where(mask, h, 0.0).astype(dtype)
        else:
            term = jnp.where(mask, jnp.asarray(h, dtype), 0.0)
        lead = term if lead is None else lead + term
    return rot, lead


def model_screw(model, bodies=None):
    """:func:`screw_coefficients` of ``model``'s bodies (or of ``bodies``, an index array)."""
    types = model.joint_types
    params = model.joint_params
    if bodies is not None:
        types = tuple(types[int(b)] for b in bodies)
        params = {k: v[np.asarray(bodies)] for k, v in params.items()}
    return screw_coefficients(types, params, model.dtype)


def _mm9(A, B):
    """Product of two 3x3 matrices given as 9 row-major scalar entries."""
    return tuple(
        scalars.add(*[scalars.mul(A[3 * i + k], B[3 * k + j]) for k in range(3)]) for i in range(3) for j in range(3)
    )


def spatial_skew_np(u):
    return np.array([[0, -u[2], u[1]], [u[2], 0, -u[0]], [-u[1], u[0], 0]], np.float64)


def _quat_matrix_np(qt):
    a, b, c, d = np.asarray(qt, np.float64) / np.linalg.norm(qt)
    return np.array(
        [
            [a * a + b * b - c * c - d * d, 2 * (b * c - a * d), 2 * (b * d + a * c)],
            [2 * (b * c + a * d), a * a - b * b + c * c - d * d, 2 * (c * d - a * b)],
            [2 * (b * d - a * c), 2 * (c * d + a * b), a * a - b * b - c * c + d * d],
        ]
    )


# --- per-sample arrays over the scanned links --------------------------------------------------


def _matrix_entries(a):
    """The 9 entries (row-major) of ``(..., 3, 3)`` arrays, each ``(...)``."""
    return tuple(a[..., i, j] for i in range(3) for j in range(3))


def _vector_entries(a):
    """The 3 entries of ``(..., 3)`` arrays, each ``(...)``."""
    return tuple(a[..., i] for i in range(3))


def link_poses(layout, placement: spatial.Pose, axis, q_link, lead=None):
    """Placement of every scanned link's body frame in its parent body frame, vectorised.

    ``X = placement o X_J(q)`` where ``X_J`` is the joint motion (Rodriguez86 (3.5): the joint's
    rotation sits inside ``phi``, applied after the placement); (J1) for the 1-dof joints, the
    quaternion's rotation for the spherical ones.

    Args:
      layout: the model's static :class:`~jaxdyn.model.Layout`.
      placement: joint placements of the scanned links, ``R (n,3,3)``, ``p (n,3)``.
      axis: unit joint axes ``(n, 3)``.
      q_link: per-link configuration slots ``(n, layout.qw)``.
      lead: the links' leads ``(n,)`` (:func:`screw_coefficients`; None: none translates).
    """
    fl = link_flags(layout.link_types)
    num = one_dof_numbers(placement.R, placement.p, axis, fl.rotates, lead)
    q0 = q_link[..., 0]
    if fl.any_quaternion:
        q0 = jnp.where(fl.quaternion, 0.0, q0)
    M, V = _matrix_entries, _vector_entries
    d = None if num.d is None else V(num.d)
    R, p = one_dof_motion(M(num.A0), M(num.A1), M(num.A2), V(num.p0), d, q0)
    R = jnp.stack([jnp.broadcast_to(r, q0.shape) for r in R], -1).reshape(q0.shape + (3, 3))
    p = jnp.stack([jnp.broadcast_to(x, q0.shape) for x in p], -1)
    if fl.any_quaternion:
        unit = jnp.array(_UNIT_QUAT, q_link.dtype)
        quat = jnp.where(fl.quaternion[:, None], q_link, unit)
        R = jnp.where(fl.quaternion[:, None, None], spatial.mm(placement.R, spatial.quat_to_rotation(quat)), R)
    return spatial.Pose(R, p)


def link_subspaces(layout, axis, lead=None):
    """Motion subspaces ``S`` (Rodriguez86's ``H^T``), ``(n, 6, k)`` in the child frames.

    (J1) ``[sa; sl]`` for 1-dof links (revolute ``[axis; 0]``, prismatic ``[0; axis]``, helical
    ``[axis; pitch axis]``), spherical ``[1; 0]``; padded columns of 1-dof links are zero when
    the model has a spherical joint (k = 3).
    """
    fl = link_flags(layout.link_types)
    sa, sl = one_dof_axes(axis, fl.rotates, lead)
    col = jnp.concatenate([sa, jnp.zeros_like(axis) if sl is None else sl], -1)
    if layout.k == 1:
        return col[..., None]
    eye = jnp.concatenate([jnp.eye(3, dtype=axis.dtype), jnp.zeros((3, 3), axis.dtype)], 0)
    pad = jnp.concatenate([col[..., None], jnp.zeros(col.shape + (2,), axis.dtype)], -1)
    return jnp.where(jnp.asarray(fl.quaternion)[:, None, None], eye, pad)


def free_pose(q_root) -> spatial.Pose:
    """Pose of a free-flying root from ``[x, y, z, qw, qx, qy, qz]`` (the quaternion normalised,
    :func:`jaxdyn.spatial.quaternion_matrix`)."""
    return spatial.Pose(spatial.quat_to_rotation(q_root[3:7]), q_root[0:3])


def free_subspace(dtype):
    """Motion subspace of the free joint: ``1_6`` (body-frame ``[omega; v]``)."""
    return jnp.eye(6, dtype=dtype)
