"""Geoms and contact lists of an MJCF model (:mod:`jaxdyn.io.mjcf`): the collision shapes on
their jaxdyn bodies (:func:`jaxdyn.geometry.make_geoms`), the convex hulls of mesh geoms, and
``<contact>``'s excluded body pairs and explicit geom pairs. Every error and warning names the
geom or pair."""

from __future__ import annotations

import numpy as np

from ...geometry import DEFAULT_SOLIMP, DEFAULT_SOLREF, TYPE_CODES, make_geoms
from ..meshes import hull_vertices
from .geom_inertia import geom_shape, mesh_points
from .hfields import hfield_assets
from .parse import MJCFError, _pose, compose, desc, finite, numbers


def _frames(bodies, owner, bnames):
    """The model's frames: the world, every MuJoCo body (in its jaxdyn body) and every named
    site (``site:<name>`` where a body has the same name)."""
    frames = [("world", -1, np.eye(3), np.zeros(3))]
    site_frames = []
    for i, b in enumerate(bodies):
        ob, Ro, po = owner[i]
        if i:
            frames.append((b.name, ob, Ro, po))
        for sn, R, p in b.sites:
            site_frames.append((f"site:{sn}" if sn in bnames else sn, ob, Ro @ R, Ro @ p + po))
    frames += site_frames
    for f in frames:
        finite(f"frame '{f[0]}': pose", f[2], f[3])
    return frames


def _geoms(root, ctx, bodies, owner, dtype):
    """Every geom but SDFs (skipped) on the jaxdyn body that carries its MuJoCo body (a height
    field only on the world, with its grid of heights), with friction, contact filter, priority, ``condim``, margin, the exclusions and
    explicit pairs of ``<contact>``, and the hull vertices of the mesh geoms that may collide."""
    g = dict(
        type=[],
        size=[],
        body=[],
        pos=[],
        R=[],
        friction=[],
        contype=[],
        conaffinity=[],
        priority=[],
        condim=[],
        margin=[],
        names=[],
        solref=[],
        solimp=[],
        solmix=[],
    )
    g_mjbody = []  # the MuJoCo body of each geom (<contact><exclude> names those)
    geom_attrs = []  # (attributes, description) of each geom kept
    g_vert, g_vgeom = [np.zeros((0, 3))], []  # mesh geoms' convex-hull vertices and their geoms
    mesh_geoms = []  # (geom index, attributes, description) of the mesh geoms
    skipped_geoms = set()  # names of SDFs, which are not loaded
    hfields, hfield_data = None, []  # the <hfield> assets (read at the first hfield geom); each geom's heights
    for i, b in enumerate(bodies):
        ob, Ro, po = owner[i]
        for elem, a, pose in b.geoms:
            gw = f"geom {desc(elem)} in body '{b.name}'"
            gtype = a.get("type", "sphere")
            if gtype == "sdf":
                skipped_geoms.add(a.get("name"))
                continue
            if gtype == "hfield":
                if hfields is None:
                    hfields = hfield_assets(root, ctx)
                R, p = compose(pose, _pose(a, ctx, gw))
                size = _hfield_geom(a, gw, ob, hfields, hfield_data)
            elif gtype in ("mesh", "plane"):
                R, p = compose(pose, _pose(a, ctx, gw))
                raw = numbers(a["size"], 3, f"{gw} size", at_least=1) if "size" in a else np.zeros(0)
                size = np.zeros(3)
                if gtype == "plane":
                    size[: len(raw)] = raw
            else:
                gtype, size, R, p = geom_shape(elem, a, ctx, pose, gw)
            fr = np.array([1.0, 0.005, 0.0001])
            if "friction" in a:
                f = numbers(a["friction"], 3, f"{gw} friction", at_least=1)
                fr[: len(f)] = f
            g["type"].append(TYPE_CODES[gtype])
            g["size"].append(size)
            g["body"].append(ob)
            g["pos"].append(Ro @ p + po)
            g["R"].append(Ro @ R)
            g["friction"].append(fr)
            g["contype"].append(int(numbers(a.get("contype", "1"), 1, f"{gw} contype", ints=True)[0]))
            g["conaffinity"].append(int(numbers(a.get("conaffinity", "1"), 1, f"{gw} conaffinity", ints=True)[0]))
            g["priority"].append(int(numbers(a.get("priority", "0"), 1, f"{gw} priority", ints=True)[0]))
            g["condim"].append(_condim(a, gw))
            g["margin"].append(float(numbers(a.get("margin", "0"), 1, f"{gw} margin")[0]))
            g["names"].append(a.get("name", ""))
            g["solref"].append(solref_of(a, gw))
            g["solimp"].append(solimp_of(a, gw))
            g["solmix"].append(float(numbers(a.get("solmix", "1"), 1, f"{gw} solmix")[0]))
            geom_attrs.append((a, gw))
            g_mjbody.append(i)
            if gtype == "mesh":
                mesh_geoms.append((len(g["type"]) - 1, a, gw))
    exclude, pairs, pair_values = _contact_lists(root, ctx, bodies, g_mjbody, g["names"], skipped_geoms)
    in_pairs = {k for p in pairs for k in p}
    _warn_geom_contact_parameters(ctx, g, geom_attrs, in_pairs)
    for k, a, gw in mesh_geoms:  # the hulls of the meshes that may collide (visual ones never do)
        if g["contype"][k] or g["conaffinity"][k] or k in in_pairs:
            hull = _mesh_hull(ctx, a, gw)
            g_vert.append(hull)
            g_vgeom += [k] * len(hull)
    for k in range(len(g["type"])):
        finite(
            f"geom '{g['names'][k] or k}': size, pose or friction",
            g["size"][k],
            g["pos"][k],
            g["R"][k],
            g["friction"][k],
        )
    cone = "pyramidal"
    for o in root.iter("option"):
        cone = o.get("cone", cone)
    budgets = scene_budgets(root)
    geoms = make_geoms(  # the lists become arrays of make_geoms's shapes there
        **g,
        exclude=exclude,
        pairs=pairs,
        **pair_values,
        vertices=np.concatenate(g_vert),
        vertex_geom=g_vgeom,
        hfields=hfield_data,
        cone=cone,
        **budgets,
        dtype=dtype,
    )
    return geoms, g_mjbody


# the scene's contact budgets: MJX's custom numerics, as make_geoms names them
_BUDGETS = {"max_geom_pairs": "max_pairs", "max_contact_points": "max_contacts"}


def scene_budgets(root) -> dict:
    """``<custom><numeric name="max_geom_pairs" data="K">`` and ``name="max_contact_points"``:
    the budgets MJX gives its broad phase and its contacts, as ``make_geoms``'s ``max_pairs`` and
    ``max_contacts``; ``-1`` (MJX's "no limit") and an absent numeric give ``None``."""
    out = {}
    for c in root.iter("custom"):
        for e in c.iter("numeric"):
            name = e.get("name", "")
            if name not in _BUDGETS:
                continue
            what = f"<custom><numeric name='{name}'> data"
            v = float(numbers(e.get("data", ""), 1, what)[0])  # MuJoCo's numerics are reals
            if v != int(v) or v == 0 or v < -1:
                raise MJCFError(
                    f"{what}: expected a positive whole number of {name[4:].replace('_', ' ')}, or -1 (no limit), got {v:g}"
                )
            out[_BUDGETS[name]] = None if v == -1 else int(v)
    return out


def numbers_over_default(a, key, default, what):
    """The numbers of attribute ``key`` over MuJoCo's ``default`` (fewer numbers set the leading
    ones), as MuJoCo reads ``solref`` and ``solimp``."""
    out = np.array(default, np.float64)
    if key in a:
        v = numbers(a[key], len(default), f"{what} {key}", at_least=1)
        out[: len(v)] = v
    return out


def solref_of(a, what):
    """``solref`` (MuJoCo's default ``0.02 1``)."""
    return numbers_over_default(a, "solref", DEFAULT_SOLREF, what)


def solimp_of(a, what):
    """``solimp`` (MuJoCo's default ``0.9 0.95 0.001 0.5 2``)."""
    return numbers_over_default(a, "solimp", DEFAULT_SOLIMP, what)


def _hfield_geom(a, gw, ob, hfields, hfield_data):
    """The ``size`` row ``(r_x, r_y, elevation)`` of an ``hfield`` geom, its heights appended to
    ``hfield_data``; the field must be on the world (a body welded to it counts)."""
    name = a.get("hfield")
    if name is None:
        raise MJCFError(f"{gw}: an hfield geom needs the attribute hfield (the <hfield> asset's name)")
    if name not in hfields:
        raise MJCFError(f"{gw}: the height field '{name}' it names is not defined in <asset>")
    if ob >= 0:
        raise MJCFError(f"{gw}: a height field on a moving body is not supported (only on the world)")
    heights, size = hfields[name]
    hfield_data.append(heights)
    return size[:3].copy()


# MuJoCo's defaults of a geom's contact parameters: the soft-contact ones, read by
# Contact(normal="mujoco") only, and gap, which MuJoCo 4's contacts do not use
GEOM_PARAMETERS = {"solref": DEFAULT_SOLREF, "solimp": DEFAULT_SOLIMP, "solmix": (1.0,), "gap": (0.0,)}


def _warn_geom_contact_parameters(ctx, g, geom_attrs, in_pairs):
    """One warning naming the collidable geoms whose ``solref``, ``solimp``, ``solmix`` or ``gap``
    (their own or their class's) differ from MuJoCo's defaults: the soft-contact parameters are
    loaded (``model.geoms``) and act with ``Contact(normal="mujoco")``, not with the default
    Hunt-Crossley law (:class:`jaxdyn.contact.ContactParams`); ``gap`` is not read."""
    found: dict[str, list[str]] = {}
    for k, (a, gw) in enumerate(geom_attrs):
        if not (g["contype"][k] or g["conaffinity"][k] or k in in_pairs):
            continue
        for key, default in GEOM_PARAMETERS.items():
            if key in a:
                v = numbers(a[key], len(default), f"{gw} {key}", at_least=1)
                if not np.allclose(v, default[: len(v)]):
                    found.setdefault(key, []).append(gw)

    def listed(key):
        w = found[key]
        return f"{key} of {len(w)} geom{'s' if len(w) > 1 else ''} ({', '.join(w[:4])}{', ...' if len(w) > 4 else ''})"

    soft = [listed(k) for k in ("solref", "solimp", "solmix") if k in found]
    if soft:
        ctx.warnings.append(
            "geom soft-contact parameters act with jaxdyn.contact.Contact(normal='mujoco'), MuJoCo's soft contact; "
            "the default Hunt-Crossley law (jaxdyn.contact.ContactParams) does not read them: " + "; ".join(soft)
        )
    if "gap" in found:
        ctx.warnings.append(f"geom gap is not read (MuJoCo 4's contacts do not use it either): {listed('gap')}")


def _mesh_hull(ctx, a, gw):
    """The convex-hull vertices of a mesh geom's mesh in the geom frame, or none (warned) where
    jaxdyn cannot read the mesh: the geom then does not collide."""
    mesh = ctx.meshes.get(a.get("mesh"))
    try:
        if mesh is None:
            raise MJCFError(f"the mesh '{a.get('mesh')}' it names is not defined in <asset>")
        vert, _ = mesh_points(mesh[1], ctx, f"<mesh name='{mesh[1].get('_name')}'>")
    except MJCFError as e:
        ctx.warnings.append(f"{gw}: {e}; the geom does not collide")
        return np.zeros((0, 3))
    return hull_vertices(vert)


# an explicit pair's contact parameters that jaxdyn's force law has no counterpart for (its
# ``friction``, ``margin`` and ``condim`` are read; ``gap`` only widens MuJoCo's contact
# detection beyond the margin, for contacts without force)
PAIR_PARAMETERS = ("solref", "solreffriction", "solimp")


def _condim(a, what) -> int:
    """A geom's or pair's ``condim`` (MuJoCo's default 3); 1, 3, 4 or 6."""
    dim = int(numbers(a.get("condim", "3"), 1, f"{what} condim", ints=True)[0])
    if dim not in (1, 3, 4, 6):
        raise MJCFError(f"{what}: condim must be 1, 3, 4 or 6, got {dim}")
    return dim


def _contact_lists(root, ctx, bodies, g_mjbody, g_names, skipped):
    """``<contact>``: ``<exclude body1 body2>`` as geom index pairs (every geom of the one
    MuJoCo body against every geom of the other), ``<pair geom1 geom2>`` as explicit geom pairs,
    with their sliding, torsional and rolling friction (``friction``'s first, third and fourth
    numbers, MuJoCo's defaults ``1 1 0.005 0.0001 0.0001``), ``condim`` and ``margin`` (default
    0), ``solref`` and ``solimp`` (``solreffriction`` is not read, warned). Returns ``(exclude, pairs,
    values)``, ``values`` the pairs' keyword arguments of :func:`~jaxdyn.geometry.make_geoms`."""
    body_ids = {b.name: i for i, b in enumerate(bodies) if b.name}
    geom_ids = {n: k for k, n in enumerate(g_names) if n}
    exclude, pairs, own, friction, margin, condim, angular, solref, solimp = [], [], [], [], [], [], [], [], []
    for c in root.findall("contact"):
        for e in c:
            if not isinstance(e.tag, str):
                continue
            keys = ("body1", "body2") if e.tag == "exclude" else ("geom1", "geom2")
            what = f"<{e.tag} " + " ".join(f"{k}='{e.get(k)}'" for k in keys if e.get(k) is not None) + ">"
            if e.tag == "exclude":
                ids = []
                for key in ("body1", "body2"):
                    name = e.get(key)
                    if name is None:
                        raise MJCFError(f"{what}: missing attribute {key}")
                    if name not in body_ids:
                        raise MJCFError(f"{what}: {key}='{name}' is not a body of the model")
                    ids.append(body_ids[name])
                g1 = [k for k, b in enumerate(g_mjbody) if b == ids[0]]
                g2 = [k for k, b in enumerate(g_mjbody) if b == ids[1]]
                exclude += [(i, j) for i in g1 for j in g2 if i != j]
            elif e.tag == "pair":
                a = ctx.attrs(e, "main")
                names = []
                for key in ("geom1", "geom2"):
                    name = a.get(key)
                    if name is None:
                        raise MJCFError(f"{what}: missing attribute {key}")
                    if name not in geom_ids and name not in skipped:
                        raise MJCFError(f"{what}: {key}='{name}' is not a geom of the model")
                    names.append(name)
                if any(n in skipped for n in names):
                    ctx.warnings.append(f"{what}: an SDF is not collided by jaxdyn (pair ignored)")
                    continue
                if names[0] == names[1]:
                    raise MJCFError(f"{what}: geom1 and geom2 are the same geom '{names[0]}'")
                key = (geom_ids[names[0]], geom_ids[names[1]])
                fr = np.array([1.0, 1.0, 0.005, 0.0001, 0.0001])  # MuJoCo's defaults
                given = numbers(a.get("friction", "1"), 5, f"{what} friction", at_least=1)
                fr[: len(given)] = given
                mu = float(fr[0])
                dim = _condim(a, what)
                if (dim > 1 and fr[1] != fr[0]) or (dim == 6 and fr[4] != fr[3]):
                    # MuJoCo's pair friction has two sliding and two rolling coefficients (the
                    # second sliding one defaults to 1, whatever the first)
                    ctx.warnings.append(
                        f"{what}: MuJoCo's friction {fr.tolist()} is anisotropic; jaxdyn's is isotropic, with the "
                        "first sliding and the first rolling coefficient"
                    )
                if dim == 1:  # a frictionless pair
                    mu = 0.0
                if key in pairs or key[::-1] in pairs:
                    ctx.warnings.append(
                        f"{what}: the pair is given twice; jaxdyn collides it once, with the first one's friction"
                    )
                    continue
                pairs.append(key)
                friction.append(mu)
                margin.append(float(numbers(a.get("margin", "0"), 1, f"{what} margin")[0]))
                condim.append(dim)
                angular.append((float(fr[2]), float(fr[3])))
                solref.append(solref_of(a, what))
                solimp.append(solimp_of(a, what))
                own += [f"{k} of {what}" for k in PAIR_PARAMETERS if k in a]
            else:
                raise MJCFError(f"{what}: unknown element <{e.tag}> in <contact> (expected exclude or pair)")
    if own:
        ctx.warnings.append(
            "soft-contact parameters of explicit pairs act with jaxdyn.contact.Contact(normal='mujoco'), not with the "
            "default Hunt-Crossley law (jaxdyn.contact.ContactParams); solreffriction is not read: " + ", ".join(own)
        )
    return (
        exclude,
        pairs,
        dict(
            pair_friction=friction,
            pair_margin=margin,
            pair_condim=condim,
            pair_angular=np.reshape(angular, (-1, 2)),
            pair_solref=np.reshape(solref, (-1, 2)),
            pair_solimp=np.reshape(solimp, (-1, 5)),
        ),
    )
