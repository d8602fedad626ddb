"""Collision geometry attached to the bodies of a :class:`~jaxdyn.Model` (``model.geoms``).

The dynamics algorithms ignore it; it is carried for contact models (:mod:`jaxdyn.contact`).
Loaded from MJCF geoms (:func:`~jaxdyn.load_mjcf`) and URDF ``<collision>`` elements
(:func:`~jaxdyn.load_urdf`), or declared in code with :func:`make_geoms`; models without any
carry an empty set (``ng == 0``).

Shapes and their ``size`` (MuJoCo's conventions, unused entries zero):

=========  ====  =====================================================
type       code  size
=========  ====  =====================================================
plane      0     half-extents x, y (0 = infinite); grid spacing
hfield     1     half-extents x, y; elevation scale (MuJoCo's ``size[2]``)
sphere     2     radius
capsule    3     radius, half-length of the cylindrical part (along z)
ellipsoid  4     three semi-axes
cylinder   5     radius, half-length (along z)
box        6     three half-sizes
mesh       7     zeros (the mesh itself is not stored)
=========  ====  =====================================================

The codes are MuJoCo's ``mjtGeom`` values. A height field's grid of heights is in
``Geoms.hfields`` (one array per ``hfield`` geom, in geom order); it collides as the ground
(:class:`jaxdyn.contact.HeightField`), never in a pair.
"""

from __future__ import annotations

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

PLANE, HFIELD, SPHERE, CAPSULE, ELLIPSOID, CYLINDER, BOX, MESH = 0, 1, 2, 3, 4, 5, 6, 7
TYPE_CODES = {
    "plane": PLANE,
    "hfield": HFIELD,
    "sphere": SPHERE,
    "capsule": CAPSULE,
    "ellipsoid": ELLIPSOID,
    "cylinder": CYLINDER,
    "box": BOX,
    "mesh": MESH,
}
# MuJoCo's defaults of a geom's soft-contact parameters, and its friction cones
DEFAULT_SOLREF = (0.02, 1.0)
DEFAULT_SOLIMP = (0.9, 0.95, 0.001, 0.5, 2.0)
CONES = ("pyramidal", "elliptic")


class Geoms(eqx.Module):
    """``ng`` geoms.

    Array leaves (floating point, so ``jax.grad`` / ``jax.vmap`` over a model reach them):
      size ``(ng, 3)``: shape sizes;
      pos ``(ng, 3)``, R ``(ng, 3, 3)``: the geom frame in its body's frame (world frame for
        body -1);
      friction ``(ng, 3)``: sliding, torsional, rolling coefficients;
      vertices ``(nvert, 3)``: the convex-hull vertices of the mesh geoms, each in its geom's
        frame (what MuJoCo collides of a mesh), one row per vertex, the geom in ``vertex_geom``;
      faces ``(nface, 3, 3)``: the convex hulls' outward-facing triangles (counter-clockwise
        seen from outside), in the geoms' frames, the geom in ``face_geom``; computed from
        ``vertices`` by :func:`make_geoms` (none for a mesh whose vertices span no volume);
      edges ``(nedge, 2, 3)``: the triangles' edges, each once (with the diagonals of faces
        of more than three vertices), the geom in ``edge_geom``;
      pair_friction ``(len(pairs),)``: the sliding friction of each explicit pair, which its
        contacts use instead of the geoms' (MJCF ``<pair friction>``; MuJoCo's default 1);
      margin ``(ng,)``: MuJoCo's geom ``margin`` [m], default 0: a contact acts from the
        distance that is the sum of its two geoms' margins (the surfaces offset by it, as
        MuJoCo's soft contacts are; :mod:`jaxdyn.contact`);
      pair_margin ``(len(pairs),)``: each explicit pair's own margin, instead of the geoms'
        (MJCF ``<pair margin>``; default 0);
      pair_angular ``(len(pairs), 2)``: each explicit pair's own torsional and rolling friction
        (MJCF ``<pair friction>``'s third and fourth numbers; MuJoCo's defaults 0.005, 0.0001),
        acting where its ``pair_condim`` is 4 (torsional) or 6 (both);
      solref ``(ng, 2)``, solimp ``(ng, 5)``, solmix ``(ng,)``: MuJoCo's soft-contact parameters
        of each geom (defaults ``(0.02, 1)``, ``(0.9, 0.95, 0.001, 0.5, 2)``, 1), read by
        ``Contact(normal="mujoco")`` (:mod:`jaxdyn.contact.soft`) and mixed per contact as MuJoCo
        mixes them; pair_solref ``(len(pairs), 2)``, pair_solimp ``(len(pairs), 5)``: an explicit
        pair's own;
      invweight ``(ng, 2)``: MuJoCo's ``body_invweight0`` (translational, rotational) of each
        geom's body, the mean diagonal of its inverse inertia at its centre of mass in the
        reference configuration (0 on the world; -1 where not computed:
        :func:`jaxdyn.contact.soft.with_invweights`), the scale of ``Contact(normal="mujoco")``'s
        regularisation;
      hfields: one ``(nrow, ncol)`` array per ``hfield`` geom, in geom order: the surface's
        heights [m] at the grid vertices in the geom's frame (row ``i`` at ``y = -size[1] + 2
        size[1] i / (nrow - 1)``, column ``j`` along ``x`` likewise; :mod:`jaxdyn.contact.heightfield`).

    Static (tuples of ints / strings, one entry per geom): the integer data is static rather
    than integer array leaves because ``jax.grad`` refuses integer inputs, and a model must stay
    differentiable as a whole; use ``np.asarray(geoms.type)`` where an array is wanted.
      type: shape code (module docstring);
      body: the jaxdyn body the geom is fixed to, ``-1`` for the world;
      contype, conaffinity: collision bit masks (two geoms may collide when
        ``contype1 & conaffinity2 or contype2 & conaffinity1``);
      priority: MuJoCo's geom ``priority``: a contact takes the friction of the geom with the
        higher priority, the larger of the two where they are equal;
      condim: MuJoCo's contact dimensionality, 1, 3, 4 or 6 (default 3), combined as the
        friction (the higher priority's, else the larger): a contact of dimension 1 is
        frictionless, 3 has sliding friction (``friction[0]``), 4 adds torsional friction
        (``friction[1]``, a length: the couple about the normal is at most ``friction[1] f_n``)
        and 6 rolling friction (``friction[2]``, likewise about the tangent axes);
      names: geom names, ``""`` where the file gives none;
      exclude: geom index pairs ``(i, j)``, ``i < j``, that never collide with each other
        (MJCF ``<contact><exclude body1 body2>``: every geom of the one MuJoCo body against every
        geom of the other; after merging bodies welded together, two jaxdyn bodies' geoms may be
        excluded only in part);
      pairs: geom index pairs ``(i, j)``, ``i < j``, that collide whatever the filter says (bit
        masks, same body, parent and child, ``exclude``): MJCF ``<contact><pair geom1 geom2>``;
      pair_condim: each explicit pair's own contact dimension (MJCF ``<pair condim>``, default
        3), instead of its geoms';
      vertex_geom: the geom of each row of ``vertices`` (a mesh geom);
      face_geom: the geom of each row of ``faces``;
      edge_geom: the geom of each row of ``edges``;
      cone: MuJoCo's friction cone of the scene (``<option cone>``), ``"pyramidal"`` (MuJoCo's
        default) or ``"elliptic"``: it sets how stiff ``Contact(normal="mujoco")``'s normal
        force is (:mod:`jaxdyn.contact.soft`).
      max_pairs, max_contacts: the scene's own contact budgets, ``None`` where it sets none:
        MJCF ``<custom><numeric name="max_geom_pairs">`` and ``name="max_contact_points"``, the
        numbers MJX reads for its broad phase and its contact limit (MuJoCo Playground's
        scenes set them). ``Contact(max_pairs="auto", max_contacts="auto")``, the defaults,
        take them (:func:`jaxdyn.contact.pairs.pair_budget`,
        :func:`jaxdyn.contact.joint_space.contact_budget`).
    """

    size: Float[Array, "ng 3"]
    pos: Float[Array, "ng 3"]
    R: Float[Array, "ng 3 3"]
    friction: Float[Array, "ng 3"]
    vertices: Float[Array, "nvert 3"]
    faces: Float[Array, "nface 3 3"]
    edges: Float[Array, "nedge 2 3"]
    pair_friction: Float[Array, " npair"]
    margin: Float[Array, " ng"]
    pair_margin: Float[Array, " npair"]
    pair_angular: Float[Array, "npair 2"]
    solref: Float[Array, "ng 2"]
    solimp: Float[Array, "ng 5"]
    solmix: Float[Array, " ng"]
    invweight: Float[Array, "ng 2"]
    pair_solref: Float[Array, "npair 2"]
    pair_solimp: Float[Array, "npair 5"]
    type: tuple[int, ...] = eqx.field(static=True, default=())
    body: tuple[int, ...] = eqx.field(static=True, default=())
    contype: tuple[int, ...] = eqx.field(static=True, default=())
    conaffinity: tuple[int, ...] = eqx.field(static=True, default=())
    priority: tuple[int, ...] = eqx.field(static=True, default=())
    condim: tuple[int, ...] = eqx.field(static=True, default=())
    names: tuple[str, ...] = eqx.field(static=True, default=())
    exclude: tuple[tuple[int, int], ...] = eqx.field(static=True, default=())
    pairs: tuple[tuple[int, int], ...] = eqx.field(static=True, default=())
    pair_condim: tuple[int, ...] = eqx.field(static=True, default=())
    vertex_geom: tuple[int, ...] = eqx.field(static=True, default=())
    face_geom: tuple[int, ...] = eqx.field(static=True, default=())
    edge_geom: tuple[int, ...] = eqx.field(static=True, default=())
    hfields: tuple[Float[Array, "nrow ncol"], ...] = ()
    cone: str = eqx.field(static=True, default="pyramidal")
    max_pairs: int | None = eqx.field(static=True, default=None)
    max_contacts: int | None = eqx.field(static=True, default=None)

    @property
    def ng(self) -> int:
        return len(self.type)


def make_geoms(
    *,
    type,
    size,
    body,
    pos=None,
    R=None,
    friction=None,
    contype=1,
    conaffinity=1,
    priority=0,
    condim=3,
    names=(),
    exclude=(),
    pairs=(),
    pair_friction=None,
    margin=0.0,
    pair_margin=None,
    pair_condim=None,
    pair_angular=None,
    vertices=None,
    vertex_geom=(),
    hfields=(),
    solref=None,
    solimp=None,
    solmix=1.0,
    invweight=None,
    pair_solref=None,
    pair_solimp=None,
    cone="pyramidal",
    max_pairs=None,
    max_contacts=None,
    dtype=None,
) -> Geoms:
    """Build :class:`Geoms` from numbers; float leaves in ``dtype`` (default JAX's default
    float).

    ``type`` (codes, module docstring), ``size`` ``(ng, 3)`` and ``body`` (``-1``: the world) are
    required; the rest defaults to MuJoCo's defaults: ``pos`` zero, ``R`` the identity,
    ``friction`` ``(1, 0.005, 0.0001)``, ``contype = conaffinity = 1``, ``priority = 0``,
    ``condim = 3`` and ``margin = 0`` (a scalar applies to every geom; a negative margin lets the
    surfaces overlap by it before the contact acts, as in MuJoCo), ``names`` empty, no
    ``exclude`` or explicit ``pairs`` (geom index pairs, in either order), and per entry of
    ``pairs``: ``pair_friction`` (sliding, default 1), ``pair_margin`` (default 0),
    ``pair_condim`` (default 3) and ``pair_angular`` ``(len(pairs), 2)`` (torsional and rolling,
    default MuJoCo's 0.005 and 0.0001); no mesh ``vertices`` (``(nvert, 3)`` in their geoms'
    frames, the geom of each in ``vertex_geom``; give a mesh geom its convex hull's vertices).
    The hulls' triangles (``faces``) are computed from the vertices (scipy's Qhull).
    ``hfields``: one ``(nrow, ncol)`` array of heights [m] per ``HFIELD`` geom, in geom order
    (``nrow, ncol >= 2``); a height field must be on the world (``body -1``). MuJoCo's soft-contact
    parameters ``solref`` ``(ng, 2)``, ``solimp`` ``(ng, 5)`` (a row or one per geom; default
    MuJoCo's), ``solmix`` and per pair ``pair_solref``, ``pair_solimp`` (default MuJoCo's), the
    bodies' ``invweight`` ``(ng, 2)`` (default -1: not computed; the loaders compute it,
    :func:`jaxdyn.contact.soft.with_invweights`), the scene's friction ``cone`` and its contact
    budgets ``max_pairs`` and ``max_contacts`` (positive ints, or ``None``: :class:`Geoms`).

    Example: a sphere of radius 0.05 at the tip of body 2 and a box on the world::

        geoms = make_geoms(type=[SPHERE, BOX], size=[[0.05, 0, 0], [0.5, 0.5, 0.1]], body=[2, -1],
                           pos=[[0, 0, 0.3], [0, 0, -0.1]])
        model = eqx.tree_at(lambda m: m.geoms, model, geoms)
    """
    dtype = dtype or jnp.result_type(float)
    ints = lambda x: tuple(int(v) for v in np.asarray(x, np.int64).reshape(-1))
    type = ints(type)
    ng = len(type)
    f = lambda x, shape: jnp.asarray(np.asarray(x, np.float64).reshape(shape), dtype)
    names = tuple(names) if len(names) else ("",) * ng
    pos = np.zeros((ng, 3)) if pos is None else pos
    R = np.broadcast_to(np.eye(3), (ng, 3, 3)) if R is None else R
    friction = np.broadcast_to([1.0, 0.005, 0.0001], (ng, 3)) if friction is None else friction
    every = lambda x: np.broadcast_to(np.asarray(x, np.int64), (ng,)) if np.ndim(x) == 0 else x
    body, contype, conaffinity = ints(body), ints(every(contype)), ints(every(conaffinity))
    priority, condim = ints(every(priority)), ints(every(condim))
    for what, seq in (
        ("names", names),
        ("body", body),
        ("contype", contype),
        ("conaffinity", conaffinity),
        ("priority", priority),
        ("condim", condim),
    ):
        if len(seq) != ng:
            raise ValueError(f"make_geoms: {len(seq)} entries in {what} for {ng} geoms")
    bad = sorted({c for c in condim} - {1, 3, 4, 6})
    if bad:
        raise ValueError(f"make_geoms: condim must be 1, 3, 4 or 6 (MuJoCo's), got {bad[0]}")
    exclude = _index_pairs(exclude, ng, "exclude")
    margin = np.broadcast_to(np.asarray(margin, np.float64), (ng,)) if np.ndim(margin) == 0 else margin
    if len(margin) != ng:
        raise ValueError(f"make_geoms: {len(margin)} entries in margin for {ng} geoms")
    _, pair_friction = _pair_values(pairs, pair_friction, ng, "pair_friction", 1.0)
    _, pair_margin = _pair_values(pairs, pair_margin, ng, "pair_margin", 0.0)
    _, pair_angular = _pair_values(pairs, pair_angular, ng, "pair_angular", (0.005, 0.0001))
    pairs, pair_condim = _pair_values(pairs, pair_condim, ng, "pair_condim", 3.0)
    bad = sorted(set(pair_condim) - {1, 3, 4, 6})
    if bad:
        raise ValueError(f"make_geoms: pair_condim must be 1, 3, 4 or 6 (MuJoCo's), got {bad[0]}")
    pair_condim = tuple(int(c) for c in pair_condim)
    for what, values in (("margin", margin), ("pair_margin", pair_margin)):
        bad = [k for k, x in enumerate(np.asarray(values, np.float64)) if not np.isfinite(x)]
        if bad:
            raise ValueError(f"make_geoms: {what} must be finite, entry {bad[0]} is {values[bad[0]]}")
    vertices = np.zeros((0, 3)) if vertices is None else np.asarray(vertices, np.float64).reshape(-1, 3)
    vertex_geom = ints(vertex_geom)
    if len(vertex_geom) != len(vertices):
        raise ValueError(f"make_geoms: {len(vertex_geom)} entries in vertex_geom for {len(vertices)} vertices")
    for g in sorted(set(vertex_geom)):
        if not 0 <= g < ng or type[g] != MESH:
            raise ValueError(f"make_geoms: vertex_geom names geom {g}, which is not a mesh geom of 0..{ng - 1}")
    faces, face_geom, edges, edge_geom = _hull_faces(vertices, vertex_geom)
    solref = _rows(solref, DEFAULT_SOLREF, ng, "solref")
    solimp = _rows(solimp, DEFAULT_SOLIMP, ng, "solimp")
    solmix = np.broadcast_to(np.asarray(solmix, np.float64), (ng,)) if np.ndim(solmix) == 0 else solmix
    if len(solmix) != ng:
        raise ValueError(f"make_geoms: {len(solmix)} entries in solmix for {ng} geoms")
    invweight = np.full((ng, 2), -1.0) if invweight is None else invweight
    _, pair_solref = _pair_values(pairs, pair_solref, ng, "pair_solref", DEFAULT_SOLREF)
    _, pair_solimp = _pair_values(pairs, pair_solimp, ng, "pair_solimp", DEFAULT_SOLIMP)
    if cone not in CONES:
        raise ValueError(f"make_geoms: cone must be one of {', '.join(CONES)} (MuJoCo's), got {cone!r}")
    for what, budget in (("max_pairs", max_pairs), ("max_contacts", max_contacts)):
        if budget is not None and (isinstance(budget, bool) or not isinstance(budget, (int, np.integer)) or budget < 1):
            raise ValueError(f"make_geoms: {what} must be a positive int or None, got {budget!r}")
    for what, values in (("solref", solref), ("solimp", solimp), ("solmix", solmix)):
        if not np.all(np.isfinite(np.asarray(values, np.float64))):
            raise ValueError(f"make_geoms: {what} must be finite")
    hf = [g for g in range(ng) if type[g] == HFIELD]
    if len(hfields) != len(hf):
        raise ValueError(f"make_geoms: {len(hfields)} arrays in hfields for {len(hf)} hfield geoms")
    hfields = tuple(np.asarray(h, np.float64) for h in hfields)
    for g, h in zip(hf, hfields):
        if h.ndim != 2 or min(h.shape) < 2 or not np.all(np.isfinite(h)):
            raise ValueError(
                f"make_geoms: the heights of hfield geom {g} must be a finite (nrow, ncol) grid, nrow, ncol >= 2"
            )
        if body[g] >= 0:
            raise ValueError(
                f"make_geoms: hfield geom {g} is on body {body[g]}; a height field must be on the world (-1)"
            )
    return Geoms(
        size=f(size, (ng, 3)),
        pos=f(pos, (ng, 3)),
        R=f(R, (ng, 3, 3)),
        friction=f(friction, (ng, 3)),
        vertices=f(vertices, (len(vertex_geom), 3)),
        faces=f(faces, (len(face_geom), 3, 3)),
        edges=f(edges, (len(edge_geom), 2, 3)),
        pair_friction=f(pair_friction, (len(pairs),)),
        margin=f(margin, (ng,)),
        pair_margin=f(pair_margin, (len(pairs),)),
        pair_angular=f(pair_angular, (len(pairs), 2)),
        solref=f(solref, (ng, 2)),
        solimp=f(solimp, (ng, 5)),
        solmix=f(solmix, (ng,)),
        invweight=f(invweight, (ng, 2)),
        pair_solref=f(pair_solref, (len(pairs), 2)),
        pair_solimp=f(pair_solimp, (len(pairs), 5)),
        type=type,
        body=body,
        contype=contype,
        conaffinity=conaffinity,
        priority=priority,
        condim=condim,
        names=names,
        exclude=exclude,
        pairs=pairs,
        pair_condim=pair_condim,
        vertex_geom=vertex_geom,
        face_geom=face_geom,
        edge_geom=edge_geom,
        hfields=tuple(jnp.asarray(h, dtype) for h in hfields),
        cone=cone,
        max_pairs=None if max_pairs is None else int(max_pairs),
        max_contacts=None if max_contacts is None else int(max_contacts),
    )


def _rows(x, default, ng, what):
    """``(ng, len(default))`` from one row or one per geom (None: ``default``); a row shorter than
    ``default`` sets its leading entries, as MJCF reads ``solimp="0.9 0.95"``."""
    if x is None:
        return np.broadcast_to(np.asarray(default, np.float64), (ng, len(default)))
    x = np.asarray(x, np.float64)
    if ng == 0 and x.size == 0:  # no geoms: an empty list per geom
        return np.zeros((0, len(default)))
    if x.ndim == 1:
        x = np.broadcast_to(x, (ng, len(x)))
    if x.ndim != 2 or len(x) != ng or not 1 <= x.shape[1] <= len(default):
        raise ValueError(f"make_geoms: {what} must be one row of at most {len(default)} numbers or one per geom")
    out = np.tile(np.asarray(default, np.float64), (ng, 1))
    out[:, : x.shape[1]] = x
    return out


def _hull_faces(vertices, vertex_geom):
    """The outward triangles of each mesh geom's convex hull and their edges (each once), with
    the geom of each."""
    from .io.meshes import hull_triangles

    tris, owner, edges, edge_owner = [np.zeros((0, 3, 3))], [], [np.zeros((0, 2, 3))], []
    geoms = np.asarray(vertex_geom, np.int64)
    for g in sorted(set(vertex_geom)):
        t = hull_triangles(vertices[geoms == g])
        if t is None:
            continue
        tris.append(t)
        owner += [g] * len(t)
        seen = {}
        for tri in t:
            for a, b in ((tri[0], tri[1]), (tri[1], tri[2]), (tri[2], tri[0])):
                key = tuple(sorted((tuple(a), tuple(b))))
                seen.setdefault(key, (a, b))
        edges.append(np.array(list(seen.values())).reshape(-1, 2, 3))
        edge_owner += [g] * len(seen)
    return np.concatenate(tris), tuple(owner), np.concatenate(edges), tuple(edge_owner)


def _pair_values(pairs, values, ng, what, default):
    """The explicit pairs (:func:`_index_pairs`) and a value of each in that order (``what``:
    ``pair_friction``, ``pair_margin``, ...; a number or, like ``default``, a row of numbers),
    from ``values`` given per entry of ``pairs`` (None: ``default`` each); a pair given twice
    must have one value."""
    pairs = [tuple(p) for p in pairs]
    shape = np.shape(default)
    if values is None:
        values = np.broadcast_to(np.asarray(default, np.float64), (len(pairs), *shape))
    values = np.asarray(values, np.float64)
    if len(values) != len(pairs) or values.shape[1:] != shape:
        raise ValueError(f"make_geoms: {len(values)} entries in {what} for {len(pairs)} pairs")
    keys = _index_pairs(pairs, ng, "pairs")
    out: dict = {}
    for (i, j), x in zip(pairs, values):
        key = (min(int(i), int(j)), max(int(i), int(j)))
        row = tuple(np.atleast_1d(x).tolist())
        if out.setdefault(key, row) != row:
            raise ValueError(f"make_geoms: pair {key} is given twice with different {what}")
    return keys, [out[k] if shape else out[k][0] for k in keys]


def _index_pairs(pairs, ng, what) -> tuple[tuple[int, int], ...]:
    """Sorted, de-duplicated ``(i, j)`` with ``i < j`` from geom index pairs in either order."""
    out = set()
    for pair in pairs:
        if len(pair) != 2:
            raise ValueError(f"make_geoms: {what} pair {tuple(pair)} is not two geom indices")
        i, j = (int(v) for v in pair)
        if not (0 <= i < ng and 0 <= j < ng) or i == j:
            raise ValueError(f"make_geoms: {what} pair {tuple(pair)} is not two different geoms of 0..{ng - 1}")
        out.add((min(i, j), max(i, j)))
    return tuple(sorted(out))


def empty_geoms(dtype=None) -> Geoms:
    """No geoms (``ng == 0``): what models without collision geometry carry. An empty set rather
    than ``None`` keeps every model's pytree free of ``None`` leaves, which JAX's
    ``custom_vmap`` cannot differentiate through (jax-ml/jax#9066)."""
    dtype = dtype or jnp.result_type(float)
    return Geoms(
        size=jnp.zeros((0, 3), dtype),
        pos=jnp.zeros((0, 3), dtype),
        R=jnp.zeros((0, 3, 3), dtype),
        friction=jnp.zeros((0, 3), dtype),
        vertices=jnp.zeros((0, 3), dtype),
        faces=jnp.zeros((0, 3, 3), dtype),
        edges=jnp.zeros((0, 2, 3), dtype),
        pair_friction=jnp.zeros((0,), dtype),
        margin=jnp.zeros((0,), dtype),
        pair_margin=jnp.zeros((0,), dtype),
        pair_angular=jnp.zeros((0, 2), dtype),
        solref=jnp.zeros((0, 2), dtype),
        solimp=jnp.zeros((0, 5), dtype),
        solmix=jnp.zeros((0,), dtype),
        invweight=jnp.zeros((0, 2), dtype),
        pair_solref=jnp.zeros((0, 2), dtype),
        pair_solimp=jnp.zeros((0, 5), dtype),
    )
