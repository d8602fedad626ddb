"""The robot model: static topology plus array leaves for every number.

``Model`` is an ``equinox.Module``. Its topology (parents, joint types, names) is static and
hashable; every physical number (placements, axes, masses, centres of mass, inertias, gravity,
limits) is an array leaf, so ``jax.grad`` with respect to the model and ``jax.vmap`` over a batch
of models work with no extra code.

Bodies are numbered in depth-first order (a parent always precedes its children). Body ``i`` is
moved by joint ``i``; ``parents[i] == -1`` means the world. A floating-base model has exactly one
``free`` joint, on body 0. The layout of ``q`` and ``qd`` follows the body order, joint by joint:
``joint_nq`` and ``joint_nv`` give the sizes.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import TYPE_CHECKING

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from . import geometry, joints, planner, spatial
from .actuators import Actuators
from .geometry import Geoms

if TYPE_CHECKING:
    from .constraints.model import Constraints


@dataclasses.dataclass(frozen=True)
class Topology:
    """Static, hashable description of the kinematic tree (tuples only)."""

    parents: tuple[int, ...]
    joint_types: tuple[str, ...]
    joint_names: tuple[str, ...]
    body_names: tuple[str, ...]
    frame_names: tuple[str, ...] = ()
    frame_bodies: tuple[int, ...] = ()

    def __post_init__(self):
        nb = len(self.parents)
        for name, seq in (
            ("joint_types", self.joint_types),
            ("joint_names", self.joint_names),
            ("body_names", self.body_names),
        ):
            if len(seq) != nb:
                raise ValueError(f"Topology: {name} has {len(seq)} entries, parents has {nb}")
        if len(self.frame_names) != len(self.frame_bodies):
            raise ValueError("Topology: frame_names and frame_bodies differ in length")
        for i, (p, t, n) in enumerate(zip(self.parents, self.joint_types, self.joint_names)):
            if t not in joints.JOINTS:
                raise ValueError(f"joint '{n}': unsupported joint type '{t}' (supported: {tuple(joints.JOINTS)})")
            if not -1 <= p < i:
                raise ValueError(f"joint '{n}': parent body {p} must precede body {i} (depth-first order)")
            if joints.get(t).floating and (i != 0 or p != -1):
                raise ValueError(f"joint '{n}': a {t} joint is only supported on the root body 0")
        if len(set(self.joint_names)) != nb:
            raise ValueError("Topology: joint names are not unique")


@dataclasses.dataclass(frozen=True, eq=False)
class Layout:
    """Index arrays derived from a :class:`Topology` (numpy, computed once per topology)."""

    nb: int
    nq: int
    nv: int
    floating: bool
    k: int  # dof slots per scanned link: 1, or 3 when a spherical joint is present
    qw: int  # q slots per scanned link: 1, or 4
    joint_nq: tuple[int, ...]
    joint_nv: tuple[int, ...]
    q_start: np.ndarray
    v_start: np.ndarray
    link_bodies: np.ndarray  # (n,) bodies handled by the scan (all but a free root)
    link_parent: np.ndarray  # (n,) parent body, world -> nb
    link_q: np.ndarray  # (n, qw) indices into q padded with one zero (pad = nq)
    link_v: np.ndarray  # (n, k) indices into v padded with one zero (pad = nv)
    dof_mask: np.ndarray  # (n, k)
    link_types: tuple[str, ...]  # (n,) joint types of the scanned links (jaxdyn.joints.link_flags)
    v_gather: np.ndarray  # (nv,) positions in concat([root (6 if floating)], link (n*k))
    dof_body: np.ndarray  # (nv,)
    ancestor: np.ndarray  # (nb, nb) bool, ancestor[a, b]: a is b or an ancestor of b
    depth: np.ndarray  # (nb,)
    traversal: str = "scan"  # how tree.scatter/gather walk the links: "scan" or "unroll"
    dense: bool = False  # "latency": unrolled, with 6x6 transforms in the ABA (see TRAVERSALS)
    # every scanned link's parent is the link scanned just before it (the first one hangs from the
    # world or the free root): "scan" then carries only the parent's value, no per-body buffer
    is_chain: bool = False


@functools.lru_cache(maxsize=256)
def layout(topo: Topology, traversal: str = "scan") -> Layout:
    nb = len(topo.parents)
    jnq = tuple(joints.get(t).nq for t in topo.joint_types)
    jnv = tuple(joints.get(t).nv for t in topo.joint_types)
    q_start = np.concatenate([[0], np.cumsum(jnq)[:-1]]).astype(np.int32) if nb else np.zeros(0, np.int32)
    v_start = np.concatenate([[0], np.cumsum(jnv)[:-1]]).astype(np.int32) if nb else np.zeros(0, np.int32)
    nq, nv = int(sum(jnq)), int(sum(jnv))
    floating = nb > 0 and joints.get(topo.joint_types[0]).floating
    link_bodies = np.arange(1 if floating else 0, nb, dtype=np.int32)
    types = [topo.joint_types[b] for b in link_bodies]
    # slots per scanned link: the largest joint's (1 for 1-dof joints only, 3 and 4 with a ball)
    k = max((joints.get(t).nv for t in types), default=1)
    qw = max((joints.get(t).nq for t in types), default=1)
    n = len(link_bodies)
    link_q = np.full((n, qw), nq, np.int32)
    link_v = np.full((n, k), nv, np.int32)
    dof_mask = np.zeros((n, k), bool)
    for j, b in enumerate(link_bodies):
        link_q[j, : jnq[b]] = q_start[b] + np.arange(jnq[b])
        link_v[j, : jnv[b]] = v_start[b] + np.arange(jnv[b])
        dof_mask[j, : jnv[b]] = True
    base = 6 if floating else 0
    v_gather = np.zeros(nv, np.int32)
    if floating:
        v_gather[:6] = np.arange(6)
    for j, b in enumerate(link_bodies):
        for c in range(jnv[b]):
            v_gather[v_start[b] + c] = base + j * k + c
    dof_body = np.concatenate([np.full(jnv[b], b) for b in range(nb)]).astype(np.int32) if nb else np.zeros(0, np.int32)
    anc = np.eye(nb, dtype=bool)
    depth = np.zeros(nb, np.int32)
    for bi in range(nb):
        p = topo.parents[bi]
        if p >= 0:
            anc[:, bi] |= anc[:, p]
            depth[bi] = depth[p] + 1
    parents = np.array(topo.parents, np.int32)
    link_parent = np.where(parents[link_bodies] < 0, nb, parents[link_bodies]).astype(np.int32)
    if traversal not in planner.TRAVERSALS[1:]:
        raise ValueError(f"layout: traversal must be one of {', '.join(planner.TRAVERSALS[1:])}, got {traversal!r}")
    dense = traversal == "latency"
    traversal = "unroll" if dense else traversal
    is_chain = (
        bool(n)
        and int(link_parent[0]) in ((0,) if floating else (nb,))
        and all(int(link_parent[j]) == int(link_bodies[j - 1]) for j in range(1, n))
    )
    return Layout(
        nb=nb,
        nq=nq,
        nv=nv,
        floating=floating,
        k=k,
        qw=qw,
        joint_nq=jnq,
        joint_nv=jnv,
        q_start=q_start,
        v_start=v_start,
        link_bodies=link_bodies,
        link_parent=link_parent,
        link_q=link_q,
        link_v=link_v,
        dof_mask=dof_mask,
        link_types=tuple(types),
        v_gather=v_gather,
        dof_body=dof_body,
        ancestor=anc,
        depth=depth,
        traversal=traversal,
        dense=dense,
        is_chain=is_chain,
    )


class Model(eqx.Module):
    """A rigid multibody tree.

    Array leaves (``nb`` bodies, ``nf`` frames):
      placement_R, placement_p: ``(nb,3,3)``, ``(nb,3)`` joint frame in the parent body frame
        (identity for a free root);
      axis: ``(nb,3)`` unit joint axis in the joint frame (unused for spherical/free);
      joint_params: ``{name: (nb,)}``, the joint types' parameters beyond the axis (the
        ``params`` of the types in :mod:`jaxdyn.joints`; 0 on joints of other types), one entry
        per parameter that the model's joint types read (none for the loaders' types);
      mass ``(nb,)``, com ``(nb,3)``, inertia ``(nb,3,3)``: body mass, centre of mass and
        rotational inertia about the centre of mass, in the body frame;
      gravity ``(3,)`` in the world frame;
      frame_R, frame_p: ``(nf,3,3)``, ``(nf,3)`` named frames in their body's frame;
      q_lower, q_upper ``(nq,)``; velocity_limit, effort_limit, damping, friction, armature
        ``(nv,)``. Armature enters the mass matrix as ``M + diag(armature)``;
      stiffness ``(nv,)``, spring_reference ``(nq,)``: joint springs of 1-dof joints,
        ``tau = -stiffness * (q - spring_reference)`` (MJCF ``stiffness`` / ``springref``),
        applied by :mod:`jaxdyn.sim` like the damping (zero by default).

    ``geoms``: collision geometry (:class:`~jaxdyn.geometry.Geoms`, from MJCF; empty for URDF and
    programmatic models); the dynamics algorithms do not read it. ``actuators``: the actuators
    a control drives (:class:`~jaxdyn.actuators.Actuators`, from MJCF's ``<actuator>``;
    ``None`` for a model driven by joint torques alone), read by :mod:`jaxdyn.sim` when a
    ``ctrl`` is given. ``constraints``: equality constraints (closed loops, joint couplings) and
    fixed tendons (:class:`~jaxdyn.constraints.Constraints`, from MJCF's ``<equality>`` and
    ``<tendon>``, URDF's ``<mimic>`` with ``mimic="coupled"``, or
    :func:`jaxdyn.constraints.add`); ``None`` for a tree. :mod:`jaxdyn.sim` applies them; the
    tree algorithms (ABA, RNEA, CRBA) ignore them.
    """

    topology: Topology = eqx.field(static=True)
    placement_R: Float[Array, "nb 3 3"]
    placement_p: Float[Array, "nb 3"]
    axis: Float[Array, "nb 3"]
    mass: Float[Array, " nb"]
    com: Float[Array, "nb 3"]
    inertia: Float[Array, "nb 3 3"]
    gravity: Float[Array, " 3"]
    frame_R: Float[Array, "nf 3 3"]
    frame_p: Float[Array, "nf 3"]
    q_lower: Float[Array, " nq"]
    q_upper: Float[Array, " nq"]
    velocity_limit: Float[Array, " nv"]
    effort_limit: Float[Array, " nv"]
    damping: Float[Array, " nv"]
    friction: Float[Array, " nv"]
    armature: Float[Array, " nv"]
    stiffness: Float[Array, " nv"]
    spring_reference: Float[Array, " nq"]
    name: str = eqx.field(static=True, default="robot")
    # collision geometry (jaxdyn.geometry.Geoms) for contact models; empty when the description
    # has none (make_model fills it)
    geoms: Geoms | None = None
    # actuators driven by a control (jaxdyn.actuators.Actuators, from MJCF); None: torques only
    actuators: Actuators | None = None
    # closed loops and couplings (jaxdyn.constraints.Constraints: equality constraints, fixed
    # tendons); None: a tree
    constraints: Constraints | None = None
    # the joint types' parameters beyond the axis, {name: (nb,)} (jaxdyn.joints: JointType.params)
    joint_params: dict[str, Float[Array, " nb"]] = eqx.field(default_factory=dict)

    # -- static layout ------------------------------------------------------------------------
    @property
    def layout(self) -> Layout:
        # the traversal is the planner's (it depends on the backend and the override in force),
        # so the layout cache is keyed on the concrete strategy
        return layout(self.topology, planner.traversal(self.topology))

    @property
    def nq(self) -> int:
        return self.layout.nq

    @property
    def nv(self) -> int:
        return self.layout.nv

    @property
    def nu(self) -> int:
        """The number of actuators (0 for a model driven by joint torques alone)."""
        return 0 if self.actuators is None else self.actuators.nu

    @property
    def nb(self) -> int:
        return len(self.topology.parents)

    @property
    def floating_base(self) -> bool:
        return self.layout.floating

    @property
    def joint_names(self) -> tuple[str, ...]:
        return self.topology.joint_names

    @property
    def body_names(self) -> tuple[str, ...]:
        return self.topology.body_names

    @property
    def frame_names(self) -> tuple[str, ...]:
        return self.topology.frame_names

    @property
    def joint_types(self) -> tuple[str, ...]:
        return self.topology.joint_types

    @property
    def parents(self) -> tuple[int, ...]:
        return self.topology.parents

    @property
    def joint_nq(self) -> tuple[int, ...]:
        return self.layout.joint_nq

    @property
    def joint_nv(self) -> tuple[int, ...]:
        return self.layout.joint_nv

    @property
    def dtype(self):
        return self.mass.dtype

    def body_index(self, name: str) -> int:
        """Index of a body by name (KeyError listing the bodies if absent)."""
        try:
            return self.topology.body_names.index(name)
        except ValueError:
            raise KeyError(f"no body named '{name}' (bodies: {', '.join(self.body_names)})") from None

    def frame_index(self, name: str) -> int:
        """Index of a named frame (KeyError listing the frames if absent)."""
        try:
            return self.topology.frame_names.index(name)
        except ValueError:
            raise KeyError(f"no frame named '{name}' (frames: {', '.join(self.frame_names)})") from None

    def joint_q_slice(self, name: str) -> slice:
        """The slice of ``q`` that belongs to the named joint."""
        j = self.joint_names.index(name)
        s = int(self.layout.q_start[j])
        return slice(s, s + self.joint_nq[j])

    def joint_v_slice(self, name: str) -> slice:
        """The slice of ``qd`` (and ``tau``) that belongs to the named joint."""
        j = self.joint_names.index(name)
        s = int(self.layout.v_start[j])
        return slice(s, s + self.joint_nv[j])

    def replace(self, **changes) -> Model:
        """A copy with some fields replaced, e.g. ``model.replace(gravity=jnp.zeros(3))``
        (works under ``vmap``/``grad`` with traced values)."""
        return Model(**{**{f: getattr(self, f) for f in self.__dataclass_fields__}, **changes})

    def check(self, inertia: str = "warn") -> Model:
        """Apply the loaders' rules to this model (after edits with :meth:`replace`, or to one
        built with :func:`make_model`), and return it.

        Always checked (shapes are known while tracing): every array field has the shape the
        topology gives it and a floating dtype. Checked where the values are known in Python (not
        for fields traced by ``jit``, ``vmap`` or ``grad``): numbers are finite (limits may be
        infinite, not NaN), masses are non-negative, no joint moves a subtree without mass or
        inertia; inertias are physically consistent (:mod:`jaxdyn.io.inertia`): ``inertia="warn"``
        (default) emits one :class:`~jaxdyn.io.errors.InertiaWarning`, ``"strict"`` raises,
        ``"skip"`` does not look. :mod:`jaxdyn.sim` and the environments run it (inertia skipped)
        on their model.

        Raises:
          ValueError: naming the model, the field and the body at fault.
        """
        from .io.errors import check_model

        check_model(self, inertia)
        return self

    def astype(self, dtype) -> Model:
        """The same model with every floating-point leaf cast to ``dtype`` (float64 needs JAX's
        64-bit mode: refused by name without it, rather than cast to float32)."""
        check_dtype(dtype)
        return jax.tree_util.tree_map(
            lambda x: x.astype(dtype) if eqx.is_array(x) and jnp.issubdtype(x.dtype, jnp.floating) else x, self
        )

    def body_inertias(self) -> spatial.RigidInertia:
        """Spatial inertias of all bodies about their frame origins (compact, Rodriguez86 (3.1)).

        ``inertia`` is read through its symmetric part ``(I + I^T) / 2``, so every algorithm is a
        function of the physical (symmetric) inertia only: gradients w.r.t. ``inertia`` are
        symmetric (a gradient step keeps it symmetric), and the inverse-dynamics identity behind
        :func:`jaxdyn.aba`'s derivatives holds for any perturbation."""
        I = self.inertia
        return spatial.inertia_from_com(self.mass, self.com, (I + jnp.swapaxes(I, -1, -2)) / 2)

    def __repr__(self):
        return (
            f"Model(name={self.name!r}, nb={self.nb}, nq={self.nq}, nv={self.nv}, "
            f"floating_base={self.floating_base}, dtype={self.dtype})"
        )


def check_dtype(dtype) -> None:
    """Refuse, naming the fix, a model dtype that is not floating or that JAX would not keep:
    float64 while JAX's 64-bit mode is off would silently become float32. ``None`` (JAX's
    default float) passes."""
    if dtype is None:
        return
    try:
        d = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"dtype must be a floating dtype such as jnp.float32 or jnp.float64, got {dtype!r}") from None
    if not jnp.issubdtype(d, jnp.floating):
        raise ValueError(f"dtype must be a floating dtype such as jnp.float32 or jnp.float64, got {d}")
    kept = np.dtype(jax.dtypes.canonicalize_dtype(d))
    if kept != d:
        raise ValueError(
            f"dtype {d} needs JAX's 64-bit mode, which is off, so the model would be {kept}: enable it at the "
            "start of the program with jax.config.update('jax_enable_x64', True) (jaxdyn never changes it), "
            f"or leave dtype unset for {kept}"
        )


def make_model(
    topology: Topology,
    *,
    placement_R,
    placement_p,
    axis,
    mass,
    com,
    inertia,
    gravity=(0.0, 0.0, -9.81),
    frame_R=None,
    frame_p=None,
    q_lower=None,
    q_upper=None,
    velocity_limit=None,
    effort_limit=None,
    damping=None,
    friction=None,
    armature=None,
    stiffness=None,
    spring_reference=None,
    name: str = "robot",
    dtype=None,
    geoms=None,
    actuators=None,
    joint_params=None,
) -> Model:
    """Build a :class:`Model` from numbers (numpy or JAX), filling optional fields with defaults.

    ``joint_params``: ``{name: (nb,)}`` values of the joint types' parameters
    (:attr:`jaxdyn.joints.JointType.params`; zeros where not given); a name no joint type of the
    topology reads is refused.

    ``dtype`` defaults to float64 when ``jax_enable_x64`` is on, else float32 (the library never
    changes that setting); float64 without it is refused (:func:`check_dtype`).
    """
    check_dtype(dtype)
    dtype = dtype or jnp.result_type(float)
    lay = layout(topology)
    nf = len(topology.frame_names)

    def arr(x, shape, fill=0.0):
        if x is None:
            return jnp.full(shape, fill, dtype)
        a = jnp.asarray(np.asarray(x, dtype=np.float64), dtype)
        if a.shape != shape:
            raise ValueError(f"make_model: expected shape {shape}, got {a.shape}")
        return a

    nb = lay.nb
    names = joints.params_of(topology.joint_types)
    given = dict(joint_params or {})
    for k in given:
        if k not in names:
            raise ValueError(f"make_model: joint_params has '{k}', which none of the joint types {names or '()'} read")
    ql = np.full(lay.nq, -np.inf) if q_lower is None else q_lower
    qu = np.full(lay.nq, np.inf) if q_upper is None else q_upper
    return Model(
        topology=topology,
        placement_R=arr(placement_R, (nb, 3, 3)),
        placement_p=arr(placement_p, (nb, 3)),
        axis=arr(axis, (nb, 3)),
        mass=arr(mass, (nb,)),
        com=arr(com, (nb, 3)),
        inertia=arr(inertia, (nb, 3, 3)),
        gravity=arr(gravity, (3,)),
        frame_R=arr(np.broadcast_to(np.eye(3), (nf, 3, 3)) if frame_R is None else frame_R, (nf, 3, 3)),
        frame_p=arr(np.zeros((nf, 3)) if frame_p is None else frame_p, (nf, 3)),
        q_lower=arr(ql, (lay.nq,)),
        q_upper=arr(qu, (lay.nq,)),
        velocity_limit=arr(velocity_limit, (lay.nv,), np.inf),
        effort_limit=arr(effort_limit, (lay.nv,), np.inf),
        damping=arr(damping, (lay.nv,)),
        friction=arr(friction, (lay.nv,)),
        armature=arr(armature, (lay.nv,)),
        stiffness=arr(stiffness, (lay.nv,)),
        spring_reference=arr(spring_reference, (lay.nq,)),
        name=name,
        geoms=geometry.empty_geoms(dtype) if geoms is None else geoms,
        actuators=actuators,
        joint_params={k: arr(given.get(k), (nb,)) for k in names},
    )
