"""Stick-figure pictures of a model: a PNG of one configuration, a GIF of a trajectory.

No display is needed: every figure is a :class:`matplotlib.figure.Figure` rendered by the Agg
canvas directly, so the user's global matplotlib backend (and ``pyplot``'s state) is never touched.

The picture is the kinematic skeleton (see :func:`skeleton`):

* a segment from every body's joint origin to each child's joint origin (from the world origin
  for the roots of a fixed-base model);
* a segment from a body's joint origin to each *leaf* named frame on it: a frame away from the
  body origin that does not lie on the way to a child joint or to another frame of the same body
  (end effectors, tool points, feet), so the last link of a chain is visible;
* for a body with no children and no leaf frame, a dashed stub to its centre of mass.

A free body other than a floating base (an MJCF free joint after the first moving body: three
massless world-axis slides and a ball, :mod:`jaxdyn.io.mjcf`) is drawn as a floating base: no
segment and no marker for its slides, a free-joint marker at the body.

Joints are markers coloured by type. All positions come from :func:`jaxdyn.forward_kinematics`
and :func:`jaxdyn.frame_placements`; for an animation the positions of every frame of the
trajectory are computed by one jitted, vmapped call.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from . import joints, spatial
from ._files import replace_atomically
from ._optional import require
from .algorithms.kinematics import center_of_mass, forward_kinematics, frame_placements
from .model import Model

__all__ = ["skeleton", "draw", "animate", "JOINT_COLORS"]

# per joint type, from its registry entry (jaxdyn.joints.JointType.color)
JOINT_COLORS = {name: jt.color for name, jt in joints.JOINTS.items()}
_LINK_COLOR = "#3b4a5a"
# one colour per limb (a serial stretch of the tree between branchings), muted so that the joint
# colours stay readable
_LIMB_COLORS = ("#3b4a5a", "#2e6f95", "#6a4c93", "#8c5a3c", "#1f7a70", "#7a7f2a", "#a04668", "#54687d")
_DEFAULT_VIEW = (22.0, -58.0)
_CONTACT_COLOR = "#d81b60"


# -- static structure of the skeleton ---------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class _Structure:
    """Which points the skeleton has and how they are joined (plain Python/NumPy, no arrays of
    the model's dtype). Point order: body origins ``(nb)``, the world origin (fixed base only),
    the leaf frames, the centre-of-mass stubs."""

    nb: int
    world: bool  # a world-origin point at index nb
    leaf_frames: tuple[int, ...]  # frame indices
    stub_bodies: tuple[int, ...]  # bodies whose COM ends a dashed stub
    segments: np.ndarray  # (S, 2) point indices
    kinds: tuple[str, ...]  # per segment: "link", "frame" or "com"


def _on_segment(x, c, tol):
    """Is point ``x`` on the segment from the origin to ``c`` (within ``tol``)?"""
    cc = float(c @ c)
    if cc <= tol * tol:
        return False
    t = float(x @ c) / cc
    return -1e-9 <= t <= 1 + tol / np.sqrt(cc) and np.linalg.norm(x - t * c) <= tol


def free_parts(model: Model) -> tuple[set, set]:
    """``(slides, bodies)``: the bodies of the three massless world-axis slides of each free joint
    that is not the floating base (identity placements, the first on the world) and the free
    bodies after them (a ball joint)."""
    parents, types = model.parents, model.joint_types
    mass = np.asarray(model.mass, np.float64)
    pl_p = np.asarray(model.placement_p, np.float64)
    pl_R = np.asarray(model.placement_R, np.float64)
    slides, bodies = set(), set()
    for b in range(model.nb):
        chain: list[int] = []
        p = parents[b]
        while p >= 0 and len(chain) < 3 and joints.get(types[p]) is joints.PRISMATIC:
            chain.append(p)
            p = parents[p]
        plain = all(mass[c] == 0 and np.allclose(pl_p[c], 0) and np.allclose(pl_R[c], np.eye(3)) for c in chain)
        if joints.get(types[b]) is joints.SPHERICAL and len(chain) == 3 and p == -1 and plain:
            slides.update(chain)
            bodies.add(b)
    return slides, bodies


def structure(model: Model) -> _Structure:
    """The skeleton's points and segments for ``model`` (reads the model's placement and frame
    offsets eagerly, so the model must hold concrete arrays)."""
    nb = model.nb
    parents = model.parents
    try:
        pl_p = np.asarray(model.placement_p, np.float64)
        fr_p = np.asarray(model.frame_p, np.float64)
        com = np.asarray(model.com, np.float64)
    except jax.errors.TracerArrayConversionError:
        raise TypeError("viewer: the model's arrays are traced; draw a concrete model (outside jit/vmap)") from None
    scale = 1.0 + (float(np.max(np.linalg.norm(pl_p, axis=-1))) if nb else 0.0)
    tol = 1e-6 * scale
    children = [[c for c in range(nb) if parents[c] == b] for b in range(nb)]
    frame_bodies = model.topology.frame_bodies
    slides, free_bodies = free_parts(model)
    world = any(
        p < 0 and not joints.get(t).floating and b not in slides
        for b, (p, t) in enumerate(zip(parents, model.joint_types))
    )

    segs, kinds = [], []
    W = nb
    for b in range(nb):
        if b in slides or b in free_bodies:
            continue
        if parents[b] >= 0:
            segs.append((parents[b], b))
            kinds.append("link")
        elif not joints.get(model.joint_types[b]).floating:
            segs.append((W, b))
            kinds.append("link")

    leaf_frames: list[int] = []
    for b in range(nb):
        on_b = [f for f, fb in enumerate(frame_bodies) if fb == b]
        others = [pl_p[c] for c in children[b]]
        for f in on_b:
            x = fr_p[f]
            if np.linalg.norm(x) <= tol:
                continue
            if any(np.linalg.norm(x - fr_p[g]) <= tol for g in leaf_frames if frame_bodies[g] == b):
                continue  # coincides with a frame already drawn
            cands = others + [fr_p[g] for g in on_b if g != f and np.linalg.norm(fr_p[g] - x) > tol]
            if any(_on_segment(x, c, tol) for c in cands):
                continue  # on the way to a child joint or to another frame
            leaf_frames.append(f)
    n0 = nb + int(world)
    for k, f in enumerate(leaf_frames):
        segs.append((frame_bodies[f], n0 + k))
        kinds.append("frame")

    has_leaf = {frame_bodies[f] for f in leaf_frames}
    stubs = tuple(b for b in range(nb) if not children[b] and b not in has_leaf and np.linalg.norm(com[b]) > tol)
    n1 = n0 + len(leaf_frames)
    for k, b in enumerate(stubs):
        segs.append((b, n1 + k))
        kinds.append("com")
    return _Structure(nb, world, tuple(leaf_frames), stubs, np.array(segs, np.int32).reshape(-1, 2), tuple(kinds))


# -- numbers: one traceable function, one jitted vmapped program per model ----------------------------


def _points(model: Model, q, leaf_frames, stub_bodies, world: bool, extra_frames):
    """Skeleton points (P, 3), body rotations (nb, 3, 3), centre of mass (3,) and the positions of
    ``extra_frames`` (E, 3) at one configuration ``q`` (traceable)."""
    poses = forward_kinematics(model, q)
    parts = [poses.p]
    if world:
        parts.append(jnp.zeros((1, 3), poses.p.dtype))
    idx = np.array(list(leaf_frames) + list(extra_frames), np.int32)
    fp = frame_placements(model, q).p[idx] if len(idx) else jnp.zeros((0, 3), poses.p.dtype)
    parts.append(fp[: len(leaf_frames)])
    if stub_bodies:
        sb = np.array(stub_bodies, np.int32)
        parts.append(spatial.transform_point(spatial.Pose(poses.R[sb], poses.p[sb]), model.com[sb]))
    return jnp.concatenate(parts, 0), poses.R, center_of_mass(model, q), fp[len(leaf_frames) :]


@functools.partial(jax.jit, static_argnums=(2, 3, 4, 5))
def _points_batch(model, qs, leaf_frames, stub_bodies, world, extra_frames):
    return jax.vmap(_points, in_axes=(None, 0, None, None, None, None))(
        model, qs, leaf_frames, stub_bodies, world, extra_frames
    )


def _limbs(parents) -> list[int]:
    """Limb number of every body: bodies joined by a chain with no branching share a limb."""
    nb = len(parents)
    n_children = [0] * (nb + 1)
    for p in parents:
        n_children[p if p >= 0 else nb] += 1
    limb: list[int] = []
    heads: dict[int, int] = {}
    for b, p in enumerate(parents):
        head = b if p < 0 or n_children[p] > 1 else limb[p]
        limb.append(head)
        heads.setdefault(head, len(heads))
    return [heads[h] for h in limb]


def _check_q(model: Model, q, fn: str, batched: bool) -> np.ndarray:
    """``q`` as a NumPy array of the model's dtype with a clear error for a wrong shape."""
    name = "qs" if batched else "q"
    try:
        arr = np.asarray(q)
    except Exception as e:  # noqa: BLE001 - report what could not be read
        raise TypeError(f"{fn}: argument '{name}' is not an array ({type(q).__name__})") from e
    want = f"(T, {model.nq})" if batched else f"({model.nq},)"
    ok = arr.ndim == (2 if batched else 1) and arr.shape[-1] == model.nq and (not batched or arr.shape[0] > 0)
    if not ok:
        raise ValueError(
            f"{fn}: argument '{name}' has shape {arr.shape}, expected {want}: model '{model.name}' has "
            f"nq={model.nq} ({len(model.joint_names)} joints"
            f"{', floating base: q[:7] = [x, y, z, qw, qx, qy, qz]' if model.floating_base else ''})"
        )
    if not np.issubdtype(arr.dtype, np.number) or not np.all(np.isfinite(arr)):
        raise ValueError(f"{fn}: argument '{name}' contains NaN, inf or non-numbers")
    return arr.astype(np.dtype(model.dtype))


def _frame_index(model: Model, name: str) -> int:
    if name in model.frame_names:
        return model.frame_names.index(name)
    raise KeyError(f"no frame named '{name}' on model '{model.name}' (frames: {', '.join(model.frame_names)})")


def _kinematics(model: Model, qs: np.ndarray, extra_frames=()):
    st = structure(model)
    pts, R, c, extra = _points_batch(
        model, jnp.asarray(qs), st.leaf_frames, st.stub_bodies, st.world, tuple(extra_frames)
    )
    return (
        st,
        np.asarray(pts, np.float64),
        np.asarray(R, np.float64),
        np.asarray(c, np.float64),
        np.asarray(extra, np.float64),
    )


@eqx.filter_jit
def _point_forces_batch(model, contact, qs, qds, states):
    pf = jax.vmap(lambda q, qd, u: contact.point_forces(model, q, qd, u))(qs, qds, states)
    return pf.point, pf.force, pf.depth


def _contacts(model: Model, contact, qs: np.ndarray, qds, states, force_scale, half: float, fn: str):
    """``(points, forces, active, scale, level)`` of every ground and pair contact along ``qs``,
    for :class:`_Scene`; ``scale`` [m/N] draws the model's weight as ``half`` (half the view)
    unless ``force_scale`` is given; ``level`` the height of a level ground plane, where the grid
    is drawn (None for a slope: the grid stays under the robot)."""
    from .contact import Contact

    if not isinstance(contact, Contact):
        raise TypeError(f"{fn}: contact must be a jaxdyn.contact.Contact, got {type(contact).__name__}")
    name = "qd" if fn == "draw" else "qds"
    if qds is None:
        raise ValueError(
            f"{fn}: drawing contact forces needs the velocities '{name}' (the force law depends on them), "
            f"e.g. the qd of a sim.rollout trajectory"
        )
    qds = np.asarray(qds)
    if fn == "draw":
        qds = qds[None]
    if qds.shape != (qs.shape[0], model.nv) or not np.all(np.isfinite(qds)):
        want = f"({model.nv},)" if fn == "draw" else f"({qs.shape[0]}, {model.nv})"
        got = qds.shape[1:] if fn == "draw" else qds.shape
        raise ValueError(f"{fn}: argument '{name}' has shape {got} or non-finite entries, expected {want}")
    points, forces, depth = _point_forces_batch(
        model, contact, jnp.asarray(qs), jnp.asarray(qds.astype(qs.dtype)), states
    )
    if force_scale is None:
        weight = float(np.sum(np.asarray(model.mass)) * np.linalg.norm(np.asarray(model.gravity)))
        force_scale = half / weight if weight > 0 else 1e-3
    elif not float(force_scale) > 0:
        raise ValueError(f"{fn}: force_scale must be a positive number of metres per newton, got {force_scale!r}")
    points, forces = np.asarray(points, np.float64), np.asarray(forces, np.float64)
    level = None
    ground: Any = contact.ground  # a plane or a height field, told apart by its normal
    if hasattr(ground, "normal"):  # a level plane (a height field is not drawn)
        n = np.asarray(ground.normal, np.float64)
        n = n / np.linalg.norm(n)
        level = float(ground.height) / n[2] if abs(n[2]) > 1 - 1e-9 else None
    return points, forces, np.asarray(depth) > 0, float(force_scale), level


def _level_point(all_pts, level):
    """A point on the ground level below the middle of ``all_pts``, so the view holds the ground."""
    c = 0.5 * (all_pts.min(0) + all_pts.max(0))
    return np.array([[c[0], c[1], level]])


def skeleton(model: Model, q) -> tuple[np.ndarray, np.ndarray]:
    """The stick figure that :func:`draw` shows, at configuration ``q`` of shape ``(nq,)``.

    Returns ``(points, segments)``: ``points (P, 3)`` world positions, in the order: the ``nb``
    body (joint) origins of :func:`jaxdyn.forward_kinematics`, then the world origin (only if a
    body is attached to the world), then the leaf named frames of
    :func:`jaxdyn.frame_placements`, then the centre of mass of each childless body that has no
    leaf frame; ``segments (S, 2)`` point indices of the segments drawn.
    """
    qa = _check_q(model, q, "skeleton", batched=False)
    st, pts, _, _, _ = _kinematics(model, qa[None])
    return pts[0], st.segments.copy()


# -- drawing ----------------------------------------------------------------------------------------


def _check_path(path, fn: str, ext: str):
    if path is None:
        return None
    path = os.fspath(path)
    got = os.path.splitext(path)[1].lower()
    if got != ext:
        other = {".png": "draw", ".gif": "animate"}.get(got)
        hint = f" (use {other}() for {got})" if other and other != fn else ""
        raise ValueError(f"{fn}: path '{path}' has extension '{got or '(none)'}', expected '{ext}'{hint}")
    return path


def _check_view(view, fn):
    try:
        elev, azim = (float(v) for v in view)
    except Exception:  # noqa: BLE001
        raise ValueError(f"{fn}: view must be a pair (elevation, azimuth) in degrees, got {view!r}") from None
    return elev, azim


def _check_target(target, fn, T=None):
    if target is None:
        return None
    t = np.asarray(target, np.float64)
    if t.shape == (3,):
        return t[None] if T is None else np.broadcast_to(t, (T, 3))
    if T is not None and t.shape == (T, 3):
        return t
    want = "(3,)" if T is None else f"(3,) or ({T}, 3)"
    raise ValueError(f"{fn}: target has shape {t.shape}, expected {want}")


def new_figure(figsize, dpi):
    require("matplotlib", "pictures", "jaxdyn.viewer")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize, dpi=dpi)
    FigureCanvasAgg(fig)
    fig.subplots_adjust(left=0.0, right=0.97, bottom=0.03, top=0.95)
    return fig


def _new_axes(fig, *args):
    import mpl_toolkits.mplot3d  # noqa: F401 - registers the 3d projection

    return fig.add_subplot(*(args or (111,)), projection="3d")


def _limits(all_pts: np.ndarray):
    """Cube limits (centre, half-width) that hold every point."""
    lo, hi = all_pts.min(0), all_pts.max(0)
    centre = 0.5 * (lo + hi)
    half = max(0.5 * float(np.max(hi - lo)) * 1.08, 0.05)
    return centre, half


def _nice_step(span):
    raw = span / 6
    mag = 10 ** np.floor(np.log10(raw))
    for m in (1, 2, 5, 10):
        if m * mag >= raw:
            return m * mag
    return 10 * mag


class _Scene:
    """The artists of one picture; :meth:`update` moves them to frame ``k``."""

    def __init__(
        self,
        ax,
        model,
        st,
        pts,
        R,
        com_p,
        *,
        frames,
        com,
        target,
        ground,
        view,
        title,
        trail=None,
        label=None,
        all_pts=None,
        contacts=None,
    ):
        from mpl_toolkits.mplot3d.art3d import Line3DCollection

        self.ax, self.model, self.st = ax, model, st
        self.pts, self.R, self.com_p, self.target, self.trail = pts, R, com_p, target, trail
        self.label = label
        all_pts = pts.reshape(-1, 3) if all_pts is None else all_pts
        centre, half = _limits(all_pts)
        self.axis_len = 0.12 * half
        zmin = float(all_pts[:, 2].min())
        z0 = min(zmin, 0.0) if st.world else zmin
        if contacts is not None and contacts[4] is not None:
            z0 = contacts[4]  # the contact's level ground plane
        ax.set_xlim(centre[0] - half, centre[0] + half)
        ax.set_ylim(centre[1] - half, centre[1] + half)
        ax.set_zlim(centre[2] - half, centre[2] + half)
        ax.set_box_aspect((1, 1, 1), zoom=1.04)
        ax.view_init(elev=view[0], azim=view[1])
        ax.set_xlabel("x [m]", fontsize=8, labelpad=-2)
        ax.set_ylabel("y [m]", fontsize=8, labelpad=-2)
        ax.set_zlabel("z [m]", fontsize=8, labelpad=-2)
        ax.tick_params(labelsize=7, pad=0)
        for a in (ax.xaxis, ax.yaxis, ax.zaxis):
            a.pane.set_facecolor((0.97, 0.97, 0.98, 1.0))
            a.pane.set_edgecolor((0.8, 0.8, 0.85, 1.0))
        ax.grid(False)
        if ground:
            step = _nice_step(2 * half)
            xs = np.arange(np.ceil((centre[0] - half) / step), np.floor((centre[0] + half) / step) + 1) * step
            ys = np.arange(np.ceil((centre[1] - half) / step), np.floor((centre[1] + half) / step) + 1) * step
            lines = [[(x, centre[1] - half, z0), (x, centre[1] + half, z0)] for x in xs]
            lines += [[(centre[0] - half, y, z0), (centre[0] + half, y, z0)] for y in ys]
            ax.add_collection3d(Line3DCollection(lines, colors="#c9ced6", linewidths=0.6, zorder=0))
        self.z0 = z0
        if title:
            ax.set_title(title, fontsize=10)

        kinds = st.kinds
        styles = ["--" if k == "com" else "-" for k in kinds]
        widths = [1.5 if k == "com" else 3.2 if k == "link" else 2.4 for k in kinds]
        limb = _limbs(model.parents)
        colors = [
            "#8a96a3" if kind == "com" else _LIMB_COLORS[limb[b] % len(_LIMB_COLORS)]
            for kind, b in zip(kinds, self._segment_bodies())
        ]
        self.links = Line3DCollection(self._segments(0), colors=colors, linewidths=widths, linestyles=styles)
        ax.add_collection3d(self.links)

        self.joint_artists = []
        slides, free_bodies = free_parts(model)
        # a ball after three slides is drawn as the free joint it stands for
        types = [joints.FREE.name if b in free_bodies else t for b, t in enumerate(model.joint_types)]
        for t in JOINT_COLORS:
            idx = np.array([b for b in range(model.nb) if types[b] == t and b not in slides], np.int64)
            if len(idx) == 0:
                continue
            jt = joints.get(t)
            size = 9 if jt.floating else 6
            marker = jt.marker
            (h,) = ax.plot(
                [],
                [],
                [],
                linestyle="none",
                marker=marker,
                markersize=size,
                color=JOINT_COLORS[t],
                markeredgecolor="white",
                markeredgewidth=0.6,
                label=f"{t} joint",
                zorder=5,
            )
            self.joint_artists.append((h, idx))
        self.world_artist = None
        if st.world:
            (self.world_artist,) = ax.plot(
                [], [], [], linestyle="none", marker="s", markersize=8, color="#555555", label="fixed base", zorder=4
            )
        n_leaf = len(st.leaf_frames)
        self.leaf_artist = None
        if n_leaf:
            (self.leaf_artist,) = ax.plot(
                [], [], [], linestyle="none", marker="o", markersize=3.5, color=_LINK_COLOR, zorder=5
            )
        self.triads = None
        if frames:
            rgb = [(0.85, 0.1, 0.1), (0.1, 0.65, 0.1), (0.1, 0.25, 0.9)] * model.nb
            self.triads = Line3DCollection(self._triads(0), colors=rgb, linewidths=1.3)
            ax.add_collection3d(self.triads)
        self.com_artists = None
        if com:
            (c1,) = ax.plot(
                [],
                [],
                [],
                linestyle="none",
                marker="X",
                markersize=9,
                color="#c0392b",
                markeredgecolor="white",
                label="centre of mass",
                zorder=6,
            )
            (c2,) = ax.plot([], [], [], linestyle=":", color="#c0392b", linewidth=1.0)
            (c3,) = ax.plot([], [], [], linestyle="none", marker="x", markersize=6, color="#c0392b")
            self.com_artists = (c1, c2, c3)
        self.target_artist = None
        if target is not None:
            (self.target_artist,) = ax.plot(
                [],
                [],
                [],
                linestyle="none",
                marker="*",
                markersize=13,
                color="#f1c40f",
                markeredgecolor="#7a5c00",
                label="target",
                zorder=6,
            )
        self.trail_artist = None
        if trail is not None:
            (self.trail_artist,) = ax.plot(
                [], [], [], color="#16a085", linewidth=1.4, alpha=0.9, label="trail", zorder=3
            )
        self.contacts = None
        if contacts is not None:
            points, forces, active, scale, _ = contacts
            self.contacts = (points, forces, active)
            (dots,) = ax.plot(
                [],
                [],
                [],
                linestyle="none",
                marker="o",
                markersize=4,
                color=_CONTACT_COLOR,
                markeredgecolor="white",
                markeredgewidth=0.4,
                label="contact",
                zorder=7,
            )
            # one degenerate segment to start with (matplotlib cannot add an empty 3D collection)
            start = np.broadcast_to(points[0, :1], (1, 2, 3)) if points.shape[1] else np.zeros((1, 2, 3))
            arrows = Line3DCollection(start, colors=_CONTACT_COLOR, linewidths=1.8, zorder=7)
            ax.add_collection3d(arrows)
            ax.plot([], [], [], color=_CONTACT_COLOR, linewidth=1.8, label=f"force ({1 / scale:.3g} N per m)")
            self.contact_artists = (dots, arrows, scale)
        self.text = ax.text2D(0.02, 0.02, "", transform=ax.transAxes, fontsize=8) if label else None
        ax.legend(loc="upper left", fontsize=7, framealpha=0.8, markerscale=0.8, borderaxespad=0.2)
        self.update(0)

    def _segment_bodies(self):
        """The body each segment belongs to (its child end for links, its body otherwise)."""
        segs = self.st.segments
        return [int(j) if kind == "link" else int(i) for (i, j), kind in zip(segs, self.st.kinds)]

    def _segments(self, k):
        p = self.pts[k]
        return p[self.st.segments] if len(self.st.segments) else np.zeros((0, 2, 3))

    def _triads(self, k):
        p, R = self.pts[k][: self.model.nb], self.R[k]
        ends = p[:, None, :] + self.axis_len * np.swapaxes(R, 1, 2)  # (nb, 3 axes, 3)
        return np.stack([np.broadcast_to(p[:, None, :], ends.shape), ends], 2).reshape(-1, 2, 3)

    def update(self, k):
        p = self.pts[k]
        self.links.set_segments(self._segments(k))
        for h, idx in self.joint_artists:
            h.set_data_3d(p[idx, 0], p[idx, 1], p[idx, 2])
        if self.world_artist is not None:
            w = p[self.model.nb]
            self.world_artist.set_data_3d([w[0]], [w[1]], [w[2]])
        if self.leaf_artist is not None:
            n0 = self.model.nb + int(self.st.world)
            lf = p[n0 : n0 + len(self.st.leaf_frames)]
            self.leaf_artist.set_data_3d(lf[:, 0], lf[:, 1], lf[:, 2])
        if self.triads is not None:
            self.triads.set_segments(self._triads(k))
        if self.com_artists is not None:
            c = self.com_p[k]
            self.com_artists[0].set_data_3d([c[0]], [c[1]], [c[2]])
            self.com_artists[1].set_data_3d([c[0], c[0]], [c[1], c[1]], [c[2], self.z0])
            self.com_artists[2].set_data_3d([c[0]], [c[1]], [self.z0])
        if self.target_artist is not None:
            t = self.target[min(k, len(self.target) - 1)]
            self.target_artist.set_data_3d([t[0]], [t[1]], [t[2]])
        if self.trail_artist is not None:
            tr = self.trail[: k + 1]
            self.trail_artist.set_data_3d(tr[:, 0], tr[:, 1], tr[:, 2])
        if self.contacts is not None:
            points, forces, active = (a[k] for a in self.contacts)
            dots, arrows, scale = self.contact_artists
            p, f = points[active], forces[active]
            dots.set_data_3d(p[:, 0], p[:, 1], p[:, 2])
            arrows.set_segments(np.stack([p, p + scale * f], 1))
        if self.text is not None:
            self.text.set_text(self.label(k))


def draw(
    model: Model,
    q,
    path=None,
    ax=None,
    frames: bool = False,
    com: bool = False,
    title=None,
    view=_DEFAULT_VIEW,
    target=None,
    *,
    ground: bool = True,
    contact=None,
    qd=None,
    contact_state=None,
    force_scale=None,
    figsize=(6.0, 6.0),
    dpi: int = 100,
):
    """Draw ``model`` at configuration ``q`` (shape ``(nq,)``) as a 3D stick figure.

    Args:
      path: write a PNG there (extension ``.png``); None writes nothing.
      ax: a 3D axes (``projection="3d"``) to draw into, e.g. one panel of a grid; a new figure
        (Agg canvas, no display, no ``pyplot``) is made when None.
      frames: draw every body frame as a short RGB (x, y, z) axis triad.
      com: mark the whole-body centre of mass, with a dotted drop line to the ground.
      title: axes title (default: the model's name); ``""`` for none.
      view: ``(elevation, azimuth)`` of the camera in degrees.
      target: a world point ``(3,)`` to mark (e.g. a reaching goal).
      ground: draw a grid on the ground plane (z = 0, or lower if the robot reaches below it).
      contact: a :class:`jaxdyn.contact.Contact`: mark every touching contact point (ground
        points and shape pairs, :meth:`~jaxdyn.contact.Contact.point_forces`) and draw its force
        as a segment from the point, ``force_scale`` metres per newton (default: the model's
        weight as long as half the view); needs the velocity ``qd`` ``(nv,)``, and for
        ``friction="spring"`` the ``contact_state`` (None: relaxed). For a pair the force drawn
        is the one on its second geom's body.

    Returns the :class:`matplotlib.figure.Figure`.
    """
    path = _check_path(path, "draw", ".png")
    view = _check_view(view, "draw")
    qa = _check_q(model, q, "draw", batched=False)
    tgt = _check_target(target, "draw")
    st, pts, R, c, _ = _kinematics(model, qa[None])
    all_pts = pts.reshape(-1, 3)
    if com:
        all_pts = np.concatenate([all_pts, c])
    if tgt is not None:
        all_pts = np.concatenate([all_pts, tgt])
    contacts = None
    if contact is not None:
        states = (
            None if contact_state is None else jax.tree_util.tree_map(lambda u: jnp.asarray(u)[None], contact_state)
        )
        contacts = _contacts(model, contact, qa[None], qd, states, force_scale, _limits(all_pts)[1], "draw")
        if contacts[4] is not None:
            all_pts = np.concatenate([all_pts, _level_point(all_pts, contacts[4])])
    if ax is None:
        fig = new_figure(figsize, dpi)
        ax = _new_axes(fig)
    elif getattr(ax, "name", None) != "3d":
        raise ValueError("draw: ax must be a 3D axes (fig.add_subplot(..., projection='3d'))")
    fig = ax.figure
    _Scene(
        ax,
        model,
        st,
        pts,
        R,
        c,
        frames=frames,
        com=com,
        target=tgt,
        ground=ground,
        view=view,
        title=model.name if title is None else title,
        all_pts=all_pts,
        contacts=contacts,
    )
    if path is not None:
        _ensure_dir(path)
        with replace_atomically(path) as tmp:
            fig.savefig(tmp, dpi=dpi)
    return fig


def _ensure_dir(path):
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)


def _default_trail_point(st: _Structure):
    """Index of the point a trail follows by default: the last leaf frame, else the last body."""
    if st.leaf_frames:
        return st.nb + int(st.world) + len(st.leaf_frames) - 1
    return st.nb - 1


def animate(
    model: Model,
    qs,
    path,
    fps: float = 30,
    stride: int = 1,
    trail=None,
    *,
    frames: bool = False,
    com: bool = False,
    title=None,
    view=_DEFAULT_VIEW,
    target=None,
    ground: bool = True,
    dt=None,
    contact=None,
    qds=None,
    contact_states=None,
    force_scale=None,
    figsize=(5.0, 5.0),
    dpi: int = 80,
):
    """Write a GIF of the trajectory ``qs`` (shape ``(T, nq)``), one frame every ``stride`` samples.

    The positions of every frame come from one jitted, vmapped forward-kinematics call; the axis
    limits are fixed from the whole trajectory (the base of a floating-base robot may move).

    Args:
      path: the GIF to write (extension ``.gif``), written with matplotlib's ``PillowWriter``.
      fps: frames per second of the GIF.
      stride: keep every ``stride``-th sample of ``qs``.
      trail: draw the path of a point: True for the default end effector (the last leaf frame of
        the skeleton), or the name of a frame (``model.frame_names``); None for no trail.
      dt: time step between samples of ``qs``; when given, the frames are labelled with the time.
      frames, com, title, view, target, ground: as for :func:`draw`; ``target`` may also be a
        moving target of shape ``(T, 3)``.
      contact, qds, contact_states, force_scale: contact points and forces, as for :func:`draw`,
        with the velocities ``qds`` ``(T, nv)`` and the states ``(T, ...)`` of the trajectory
        (e.g. ``tr.qd`` of :func:`jaxdyn.sim.rollout`); one scale for every frame.

    Returns the :class:`matplotlib.figure.Figure` (showing the last frame).
    """
    require("matplotlib", "pictures", "jaxdyn.viewer.animate")
    from matplotlib.animation import PillowWriter

    path = _check_path(path, "animate", ".gif")
    view = _check_view(view, "animate")
    if not isinstance(stride, (int, np.integer)) or stride < 1:
        raise ValueError(f"animate: stride must be a positive integer, got {stride!r}")
    if not fps > 0:
        raise ValueError(f"animate: fps must be positive, got {fps!r}")
    qa = _check_q(model, qs, "animate", batched=True)
    T = qa.shape[0]
    tgt = _check_target(target, "animate", T)
    keep = np.arange(0, T, stride)
    qa = qa[keep]
    if tgt is not None:
        tgt = tgt[keep]
    extra: tuple[int, ...] = ()
    if isinstance(trail, str):
        extra = (_frame_index(model, trail),)
    elif trail not in (None, False, True):
        raise ValueError(f"animate: trail must be None, True or a frame name, got {trail!r}")
    st, pts, R, c, ex = _kinematics(model, qa, extra)
    trail_p = None
    if trail is True:
        trail_p = pts[:, _default_trail_point(st)]
    elif extra:
        trail_p = ex[:, 0]
    all_pts = [pts.reshape(-1, 3)]
    if com:
        all_pts.append(c)
    if tgt is not None:
        all_pts.append(tgt)
    if trail_p is not None:
        all_pts.append(trail_p)
    contacts = None
    if contact is not None:
        if qds is not None:
            qds = np.asarray(qds)
            if qds.ndim != 2 or qds.shape[0] != T:
                raise ValueError(f"animate: argument 'qds' has shape {qds.shape}, expected ({T}, {model.nv})")
            qds = qds[keep]
        states = contact_states
        if states is not None:
            states = jax.tree_util.tree_map(lambda u: jnp.asarray(u)[keep], states)
        contacts = _contacts(
            model, contact, qa, qds, states, force_scale, _limits(np.concatenate(all_pts))[1], "animate"
        )
        if contacts[4] is not None:
            all_pts.append(_level_point(np.concatenate(all_pts), contacts[4]))
    n = len(keep)
    if dt is not None:
        label = lambda k: f"t = {keep[k] * dt:.2f} s"  # noqa: E731
    else:
        label = lambda k: f"frame {keep[k]} / {T - 1}"  # noqa: E731
    fig = new_figure(figsize, dpi)
    ax = _new_axes(fig)
    scene = _Scene(
        ax,
        model,
        st,
        pts,
        R,
        c,
        frames=frames,
        com=com,
        target=tgt,
        ground=ground,
        view=view,
        title=model.name if title is None else title,
        trail=trail_p,
        label=label,
        all_pts=np.concatenate(all_pts),
        contacts=contacts,
    )
    _ensure_dir(path)
    writer = PillowWriter(fps=fps)  # type: ignore[arg-type]  # a float frame rate works; matplotlib's stub says int
    # written beside the destination, then renamed over it: a failure part-way leaves a good file
    with replace_atomically(path) as tmp, writer.saving(fig, tmp, dpi):
        for k in range(n):
            scene.update(k)
            writer.grab_frame()
    return fig
