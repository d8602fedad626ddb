"""Pictures and videos of a model's real geometry: PNG, GIF and MP4 from MuJoCo's offscreen
renderer, fed with jaxdyn's geometry and kinematics (the optional extra ``jaxdyn[render]``).

The shapes come from :func:`visuals` (URDF ``<visual>`` elements, MJCF geoms with their colours,
or the collision geoms and a capsule skeleton). They become a MuJoCo scene of mocap bodies, one
per jaxdyn body and environment, whose poses are set from :func:`jaxdyn.forward_kinematics` (one
jitted, vmapped call for the whole trajectory): MuJoCo only draws, it never simulates. The scene
has a ground with a grid (at the contact ground's height where a ``contact`` is given), a
directional light with shadows, and a camera that tracks the base (the centre of the trajectory
for a fixed-base robot). Several environments of a batch are laid out side by side on a grid or
overlaid; contact points (dots) and their forces (rods from the points, along the force) of
:meth:`jaxdyn.contact.Contact.point_forces` are drawn as decorations of MuJoCo's scene.

Offscreen OpenGL needs no display: on a machine without one, ``MUJOCO_GL`` defaults (when it is
unset) to ``osmesa`` where the OSMesa library is installed (Debian: ``apt-get install
libosmesa6``), else ``egl``. Time per frame on a 2-core CPU: docs/rendering.md.

For a picture without these dependencies, :mod:`jaxdyn.viewer` draws the stick figure with
matplotlib.
"""

from __future__ import annotations

import dataclasses
import os

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .. import spatial
from .._files import replace_atomically
from .._optional import require
from ..algorithms.kinematics import forward_kinematics
from ..model import Model
from ._gl import mujoco as _mujoco
from .visuals import MissingMeshWarning, Visual, primitive_mesh, visuals

__all__ = [
    "Visual",
    "visuals",
    "primitive_mesh",
    "MissingMeshWarning",
    "Camera",
    "Renderer",
    "render_image",
    "render_video",
    "trajectory_arrays",
    "check_video_output",
]


@dataclasses.dataclass(frozen=True)
class Camera:
    """Where the camera looks from: ``azimuth`` and ``elevation`` in degrees (MuJoCo's free
    camera), ``distance`` in metres (None: from the robot's size and the layout of the envs),
    ``track``: for a floating base, follow the robot (the middle of its bodies) frame by frame;
    otherwise look at the middle of the whole trajectory."""

    azimuth: float = 135.0
    elevation: float = -20.0
    distance: float | None = None
    track: bool = True


def trajectory_arrays(trajectory, nq: int):
    """``(qs (T, B, nq), qds (T, B, nv) or None)`` from a :class:`jaxdyn.sim.Trajectory` (one
    rollout ``q (T, nq)``, or a vmapped batch ``q (B, T, nq)``) or from an array ``(T, nq)`` or
    ``(T, B, nq)``."""
    qd = None
    if hasattr(trajectory, "q") and hasattr(trajectory, "qd"):
        q, qd = np.asarray(trajectory.q), np.asarray(trajectory.qd)
        if q.ndim == 3:  # vmapped rollouts: (B, T, n)
            q, qd = np.swapaxes(q, 0, 1), np.swapaxes(qd, 0, 1)
    else:
        try:
            q = np.asarray(trajectory)
        except Exception as e:  # noqa: BLE001 - name what could not be read
            raise TypeError(
                f"render: the trajectory is not an array or a Trajectory ({type(trajectory).__name__})"
            ) from e
    shape = q.shape
    if q.ndim == 2:
        q = q[:, None]
        qd = None if qd is None else qd[:, None]
    if q.ndim != 3 or q.shape[-1] != nq or q.shape[0] == 0 or q.shape[1] == 0:
        raise ValueError(
            f"render: the trajectory's q has shape {shape}, expected (T, {nq}), (T, B, {nq}) or a Trajectory"
        )
    if not np.issubdtype(q.dtype, np.number) or not np.all(np.isfinite(q)):
        raise ValueError("render: the trajectory contains NaN, inf or non-numbers (see sim.first_nonfinite)")
    return q, qd


@eqx.filter_jit
def _poses(model, qs):
    """Rotations ``(N, nb, 3, 3)`` and positions ``(N, nb, 3)`` of every body at each ``q``."""
    fk = jax.vmap(lambda q: forward_kinematics(model, q))(qs)
    return fk.R, fk.p


def world_poses(model, qs):
    """:func:`_poses` of ``qs (T, B, nq)`` as float64 ``(T, B, nb, ...)`` NumPy arrays."""
    T, B, nq = qs.shape
    R, p = _poses(model, jnp.asarray(qs.reshape(T * B, nq), model.dtype))
    return np.asarray(R, np.float64).reshape(T, B, -1, 3, 3), np.asarray(p, np.float64).reshape(T, B, -1, 3)


def mat_to_quat(R: np.ndarray) -> np.ndarray:
    """Unit quaternions ``(..., 4)`` (w, x, y, z, ``w >= 0``) of rotation matrices ``(..., 3, 3)``
    on the host, float64 (:func:`jaxdyn.spatial.rotation_to_quat` on NumPy arrays), normalised
    against round-off in ``R``."""
    q = spatial.rotation_to_quat(np.asarray(R, np.float64), xp=np)
    return q / np.linalg.norm(q, axis=-1, keepdims=True)


def _check_size(width, height):
    for name, v in (("width", width), ("height", height)):
        if not isinstance(v, (int, np.integer)) or not 16 <= v <= 8192:
            raise ValueError(f"render: {name} must be a whole number of pixels from 16 to 8192, got {v!r}")


def _extent(shapes, R, p) -> float:
    """A length for the robot's size: the spread of its bodies and shapes at one configuration
    (rotations ``R (nb, 3, 3)``, positions ``p (nb, 3)``), at least 0.2 m."""
    pts = [p]
    for v in shapes:
        c = v.p if v.body < 0 else R[v.body] @ v.p + p[v.body]
        pts.append(c + np.array([[1.0, 1, 1], [-1, -1, -1]]) * float(np.max(np.abs(v.size))))
    return max(float(np.max(np.ptp(np.concatenate(pts), axis=0))), 0.2)


class Renderer:
    """A MuJoCo scene of ``model``'s shapes, ``envs`` times, and an offscreen renderer of
    ``width x height`` pixels.

    Args:
      model: the jaxdyn model (concrete arrays).
      shapes: the :class:`Visual` shapes (default: :func:`visuals` of ``source``).
      source: the URDF or MJCF file the model was loaded from (for its visuals and colours).
      envs: how many copies of the robot (a batch of rollouts).
      layout: ``"side"`` (a grid, ``spacing`` metres apart, default from the robot's size) or
        ``"overlay"`` (all at their own coordinates, the envs after the first translucent).
      width, height: the picture's size in pixels.
      shadows: the light casts shadows (about half the time of a frame).
      antialias: 4x multisampling (smoother edges, about 3x the time of a frame on a CPU).
      ground: the height of the ground plane; None: none drawn.
      extent: the robot's size [m], which sets the camera's distance, the spacing and the grid
        (default: the spread of its bodies and shapes at the neutral configuration).
    """

    def __init__(
        self,
        model: Model,
        shapes=None,
        *,
        source=None,
        envs: int = 1,
        layout: str = "side",
        spacing: float | None = None,
        width: int = 480,
        height: int = 360,
        shadows: bool = True,
        antialias: bool = False,
        ground: float | None = 0.0,
        extent: float | None = None,
    ):
        mujoco = self._mj = _mujoco()
        _check_size(width, height)
        if layout not in ("side", "overlay"):
            raise ValueError(f"render: layout must be 'side' or 'overlay', got {layout!r}")
        if not isinstance(envs, (int, np.integer)) or envs < 1:
            raise ValueError(f"render: envs must be a positive whole number, got {envs!r}")
        self.model, self.envs, self.width, self.height = model, int(envs), int(width), int(height)
        self.shapes = tuple(visuals(model, source) if shapes is None else shapes)
        self.extent = float(extent) if extent is not None else self._extent()
        if spacing is None:
            spacing = 1.6 * self.extent
        cols = int(np.ceil(np.sqrt(self.envs)))
        self.offsets = np.zeros((self.envs, 3))
        if layout == "side":
            for e in range(self.envs):
                self.offsets[e, :2] = (e // cols) * spacing, (e % cols) * spacing
            self.offsets[:, :2] -= self.offsets[:, :2].mean(0)
        self.layout = layout
        self.spacing = float(spacing)

        s = mujoco.MjSpec()
        s.visual.global_.offwidth, s.visual.global_.offheight = self.width, self.height
        s.visual.quality.shadowsize = 1024
        s.visual.quality.offsamples = 4 if antialias else 0
        s.visual.headlight.ambient = [0.35, 0.35, 0.35]
        s.visual.headlight.diffuse = [0.45, 0.45, 0.45]
        s.visual.map.znear = 0.01
        s.stat.extent = max(self.extent, 0.1)
        s.add_texture(
            name="sky",
            type=mujoco.mjtTexture.mjTEXTURE_SKYBOX,
            builtin=mujoco.mjtBuiltin.mjBUILTIN_GRADIENT,
            rgb1=[0.55, 0.68, 0.82],
            rgb2=[0.93, 0.95, 0.97],
            width=64,
            height=384,
        )
        if ground is not None:
            cell = float(10 ** np.floor(np.log10(max(self.extent, 0.05))))  # 0.1 m, 1 m, ...: a round grid
            s.add_texture(
                name="grid",
                type=mujoco.mjtTexture.mjTEXTURE_2D,
                builtin=mujoco.mjtBuiltin.mjBUILTIN_CHECKER,
                rgb1=[0.80, 0.82, 0.84],
                rgb2=[0.74, 0.76, 0.79],
                mark=mujoco.mjtMark.mjMARK_EDGE,
                markrgb=[0.45, 0.48, 0.52],
                width=256,
                height=256,
            )
            mat = s.add_material(name="grid", texrepeat=[1 / (2 * cell), 1 / (2 * cell)], texuniform=True)
            mat.textures[mujoco.mjtTextureRole.mjTEXROLE_RGB] = "grid"
            s.worldbody.add_geom(
                type=mujoco.mjtGeom.mjGEOM_PLANE,
                size=[0, 0, 1],
                pos=[0, 0, float(ground)],
                material="grid",
                contype=0,
                conaffinity=0,
            )
        s.worldbody.add_light(
            type=mujoco.mjtLightType.mjLIGHT_DIRECTIONAL,
            dir=[-0.3, 0.4, -1.0],
            pos=[0, 0, 10],
            castshadow=bool(shadows),
            diffuse=[0.7, 0.7, 0.7],
            specular=[0.2, 0.2, 0.2],
        )
        GEOM = {
            "sphere": mujoco.mjtGeom.mjGEOM_SPHERE,
            "capsule": mujoco.mjtGeom.mjGEOM_CAPSULE,
            "ellipsoid": mujoco.mjtGeom.mjGEOM_ELLIPSOID,
            "cylinder": mujoco.mjtGeom.mjGEOM_CYLINDER,
            "box": mujoco.mjtGeom.mjGEOM_BOX,
            "mesh": mujoco.mjtGeom.mjGEOM_MESH,
        }
        mesh_names: dict[int, str] = {}
        for v in self.shapes:
            if v.kind == "mesh" and id(v.vertices) not in mesh_names:
                name = f"mesh{len(mesh_names)}"
                mesh = s.add_mesh(name=name, uservert=v.vertices.ravel().tolist(), userface=v.faces.ravel().tolist())
                mesh.inertia = mujoco.mjtMeshInertia.mjMESH_INERTIA_SHELL
                mesh_names[id(v.vertices)] = name
        self.bodies = sorted({v.body for v in self.shapes if v.body >= 0})
        for e in range(self.envs):
            alpha = 0.35 if layout == "overlay" and e > 0 else 1.0
            parents = {b: s.worldbody.add_body(name=f"env{e}_body{b}", mocap=True) for b in self.bodies}
            world = s.worldbody.add_body(name=f"env{e}_world", pos=self.offsets[e].tolist())
            for v in self.shapes:
                body = parents[v.body] if v.body >= 0 else world
                rgba = np.array(v.rgba, np.float64)
                rgba[3] *= alpha
                g = body.add_geom(
                    type=GEOM[v.kind],
                    size=np.maximum(np.asarray(v.size, np.float64), 0).tolist(),
                    pos=np.asarray(v.p, np.float64).tolist(),
                    quat=mat_to_quat(v.R).tolist(),
                    rgba=rgba.tolist(),
                    contype=0,
                    conaffinity=0,
                    group=1,
                )
                if v.kind == "mesh":
                    g.meshname = mesh_names[id(v.vertices)]
        self.mj_model = s.compile()
        self.mj_data = mujoco.MjData(self.mj_model)
        self._renderer = mujoco.Renderer(self.mj_model, self.height, self.width)
        self.camera = mujoco.MjvCamera()
        self.option = mujoco.MjvOption()

    def _extent(self) -> float:
        from ..configuration import neutral

        R, p = _poses(self.model, jnp.asarray(neutral(self.model))[None])
        return _extent(self.shapes, np.asarray(R[0], np.float64), np.asarray(p[0], np.float64))

    def close(self):
        """Free the OpenGL context."""
        if self._renderer is not None:
            self._renderer.close()
            self._renderer = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def poses(self, qs: np.ndarray):
        """World rotations ``(T, B, nb, 3, 3)`` and positions ``(T, B, nb, 3)`` of every body
        of every env (laid out by ``offsets``) for ``qs (T, B, nq)``."""
        if qs.shape[1] != self.envs:
            raise ValueError(f"render: the trajectory has {qs.shape[1]} envs, the renderer was made for {self.envs}")
        R, p = world_poses(self.model, qs)
        return R, p + self.offsets[None, :, None, :]

    def frame(self, R, p, camera: Camera = Camera(), lookat=None, contacts=None) -> np.ndarray:
        """One picture ``(height, width, 3)`` uint8 of the bodies at rotations ``R (B, nb, 3,
        3)`` and positions ``p (B, nb, 3)`` (from :meth:`poses`); ``contacts``: ``(points (n,
        3), forces (n, 3), scale [m/N])`` to draw as dots and rods."""
        mujoco = self._mj
        d = self.mj_data
        quats = mat_to_quat(R)
        for e in range(self.envs):
            for k, b in enumerate(self.bodies):
                i = e * len(self.bodies) + k
                d.mocap_pos[i] = p[e, b]
                d.mocap_quat[i] = quats[e, b]
        mujoco.mj_kinematics(self.mj_model, d)
        cam = self.camera
        cam.type = mujoco.mjtCamera.mjCAMERA_FREE
        cam.lookat[:] = p[:, 0].mean(0) if lookat is None else lookat
        cam.azimuth, cam.elevation = camera.azimuth, camera.elevation
        span = self.extent + (self.spacing * (np.ceil(np.sqrt(self.envs)) - 1) if self.layout == "side" else 0)
        cam.distance = camera.distance if camera.distance is not None else 1.5 * span + 0.3
        r = self._renderer
        if r is None:
            raise RuntimeError("render: the renderer was closed")
        r.update_scene(d, cam, self.option)
        if contacts is not None:
            points, forces, scale = contacts
            self._decorate(r.scene, points, forces, scale, radius=0.012 * cam.distance)
        return r.render()

    def _decorate(self, scn, points, forces, scale, radius):
        """Contact points as dots and forces as rods from them, ``radius`` [m] thick (from the camera's
        distance, so they stay visible at any size), into MuJoCo's scene ``scn``."""
        mujoco = self._mj
        r = radius
        for x, f in zip(points, forces):
            if scn.ngeom + 2 > scn.maxgeom:
                break
            g = scn.geoms[scn.ngeom]
            mujoco.mjv_initGeom(
                g,
                mujoco.mjtGeom.mjGEOM_SPHERE,
                np.array([r, 0, 0]),
                x,
                np.eye(3).ravel(),
                np.array([0.85, 0.1, 0.38, 1]),
            )
            scn.ngeom += 1
            tip = x + scale * f
            if np.linalg.norm(tip - x) > 2 * r:  # a rod along the force (MuJoCo's arrows are drawn shorter than asked)
                g = scn.geoms[scn.ngeom]
                mujoco.mjv_initGeom(
                    g,
                    mujoco.mjtGeom.mjGEOM_CYLINDER,
                    np.zeros(3),
                    np.zeros(3),
                    np.eye(3).ravel(),
                    np.array([0.95, 0.55, 0.1, 1]),
                )
                mujoco.mjv_connector(g, mujoco.mjtGeom.mjGEOM_CYLINDER, 0.5 * r, x, tip)
                scn.ngeom += 1


def contact_arrays(model, contact, qs, qds, states, force_scale, extent):
    """Per frame and env: the touching points, their forces, and the scale [m/N]."""
    from ..viewer import _contacts

    T, B, nq = qs.shape
    if qds is None:
        raise ValueError(
            "render: drawing contact forces needs the velocities (the force law depends on them): pass a "
            "sim.Trajectory or qds"
        )
    qds = np.asarray(qds)
    if qds.ndim == 2:
        qds = qds[:, None]
    if qds.shape != (T, B, model.nv):
        raise ValueError(f"render: qds has shape {qds.shape}, expected ({T}, {B}, {model.nv})")
    flat = (
        None
        if states is None
        else jax.tree_util.tree_map(lambda u: jnp.asarray(u).reshape(T * B, *u.shape[2:]), states)
    )
    pts, f, active, scale, _ = _contacts(
        model, contact, qs.reshape(T * B, nq), qds.reshape(T * B, -1), flat, force_scale, 0.5 * extent, "render"
    )
    n = pts.shape[1]
    return pts.reshape(T, B, n, 3), f.reshape(T, B, n, 3), active.reshape(T, B, n), scale


def _ground_height(model, contact):
    if contact is not None and hasattr(contact.ground, "normal"):
        n = np.asarray(contact.ground.normal, np.float64)
        if abs(n[2]) / np.linalg.norm(n) > 1 - 1e-9:
            return float(contact.ground.height) * np.linalg.norm(n) / n[2]
    if model.floating_base:
        return 0.0
    return None


def _frames(model, qs, qds, *, contact, contact_states, force_scale, ground, camera, shapes, source, **options):
    """Yield the pictures of ``qs (T, B, nq)``, one per sample; ``options``: for :class:`Renderer`."""
    T, B, nq = qs.shape
    R, p = world_poses(model, qs)  # one compiled program for the whole trajectory
    if shapes is None:
        shapes = visuals(model, source)
    ground_z = ground
    if ground == "auto":
        ground_z = _ground_height(model, contact)
        if ground_z is None:  # a fixed-base robot: the ground just under its lowest shape
            low = [p[..., 2].min()]
            for v in shapes:
                if v.body >= 0:
                    z = np.einsum("tbj,j->tb", R[:, :, v.body, 2, :], v.p) + p[:, :, v.body, 2]
                    low.append(z.min() - float(np.max(np.abs(v.size))))
            ground_z = min(0.0, float(min(low)))
    extent = _extent(shapes, R[0, 0], p[0, 0])
    with Renderer(model, shapes, envs=B, ground=ground_z, extent=extent, **options) as r:
        p = p + r.offsets[None, :, None, :]
        contacts = None
        if contact is not None:
            contacts = contact_arrays(model, contact, qs, qds, contact_states, force_scale, r.extent)
        # a fixed base, or no tracking: look at the middle of everything the robot reaches;
        # tracking: at the middle of the bodies of the frame
        allp = p.reshape(-1, 3)
        centre = 0.5 * (allp.min(0) + allp.max(0))
        track = camera.track and model.floating_base
        for t in range(T):
            lookat = 0.5 * (p[t].reshape(-1, 3).min(0) + p[t].reshape(-1, 3).max(0)) if track else centre
            c = None
            if contacts is not None:
                pts, f, act, scale = contacts
                pts_t = pts[t] + r.offsets[:, None, :]
                c = (pts_t[act[t]], f[t][act[t]], scale)
            yield r.frame(R[t], p[t], camera, lookat, c)


def check_video_output(path, what: str = "render") -> None:
    """Check, before a long computation, that a video can be written to ``path``: its extension
    (``.mp4`` or ``.gif``) and the extra ``jaxdyn[render]`` (MuJoCo, imageio, imageio-ffmpeg).
    ValueError naming ``what`` and, for a missing extra, the ``pip install`` that adds it."""
    ext = os.path.splitext(os.fspath(path))[1].lower()
    if ext not in (".mp4", ".gif"):
        raise ValueError(f"{what}: the video '{path}' must end in .mp4 or .gif")
    try:
        _mujoco()
        require("imageio.v3", "render", what)
        if ext == ".mp4":
            require("imageio_ffmpeg", "render", what)
    except ImportError as e:
        raise ValueError(str(e)) from None


def _check_out(path, exts, fn):
    path = os.fspath(path)
    ext = os.path.splitext(path)[1].lower()
    if ext not in exts:
        raise ValueError(f"{fn}: the output '{path}' must end in {' or '.join(exts)}")
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    return path, ext


def render_image(
    model: Model,
    q,
    path=None,
    *,
    source=None,
    shapes=None,
    width: int = 480,
    height: int = 360,
    layout: str = "side",
    spacing=None,
    shadows: bool = True,
    antialias: bool = False,
    camera: Camera = Camera(),
    contact=None,
    qd=None,
    contact_state=None,
    force_scale=None,
    ground="auto",
) -> np.ndarray:
    """A picture ``(height, width, 3)`` uint8 of ``model`` at ``q`` (``(nq,)``, or ``(B, nq)``
    for several envs), written to ``path`` (``.png``) when given.

    ``source``, ``shapes``, ``layout``, ``spacing``, ``shadows``, ``antialias``: as for
    :class:`Renderer`;
    ``camera``: a :class:`Camera`; ``contact`` (a :class:`jaxdyn.contact.Contact`) with the
    velocity ``qd`` draws the touching contact points and their forces, ``force_scale`` metres
    per newton (default: the robot's weight as long as half its size); ``ground``: the ground's
    height, ``"auto"`` (the contact's ground, else z = 0 for a floating base, else under the
    lowest body), or None for none.
    """
    q_arr = np.asarray(q)
    qs = q_arr[None] if q_arr.ndim == 1 else q_arr[None] if q_arr.ndim == 2 else q_arr
    qs, _ = trajectory_arrays(qs if qs.ndim == 3 else qs, model.nq)
    qds = None if qd is None else np.asarray(qd).reshape(1, qs.shape[1], model.nv)
    states = None if contact_state is None else jax.tree_util.tree_map(lambda u: jnp.asarray(u)[None], contact_state)
    if path is not None:
        path, _ = _check_out(path, (".png",), "render_image")
    img = next(
        _frames(
            model,
            qs,
            qds,
            source=source,
            shapes=shapes,
            width=width,
            height=height,
            layout=layout,
            spacing=spacing,
            shadows=shadows,
            antialias=antialias,
            camera=camera,
            contact=contact,
            contact_states=states,
            force_scale=force_scale,
            ground=ground,
        )
    )
    if path is not None:
        iio = require("imageio.v3", "render", "jaxdyn.render.render_image")
        with replace_atomically(path) as tmp:
            iio.imwrite(tmp, img)
    return img


def render_video(
    model: Model,
    trajectory,
    path,
    *,
    dt=None,
    fps: float = 30.0,
    source=None,
    shapes=None,
    width: int = 480,
    height: int = 360,
    layout: str = "side",
    spacing=None,
    shadows: bool = True,
    antialias: bool = False,
    camera: Camera = Camera(),
    contact=None,
    qds=None,
    contact_states=None,
    force_scale=None,
    ground="auto",
) -> int:
    """Write a video of ``trajectory`` to ``path``: MP4 (H.264, through imageio-ffmpeg's own
    ffmpeg) or GIF; returns the number of frames.

    ``trajectory``: a :class:`jaxdyn.sim.Trajectory` (its ``q`` and ``qd``; a vmapped batch of
    rollouts is drawn as several envs), or ``q`` over time ``(T, nq)`` or ``(T, B, nq)``.
    ``dt``: the time between samples; with it the video runs in real time at ``fps`` frames per
    second (the sample nearest each frame's time), without it every sample is a frame. For an
    MP4, ``width`` and ``height`` must be even. The rest as for :func:`render_image`
    (``qds (T, nv)`` or ``(T, B, nv)``: the velocities for contact forces, taken from a
    Trajectory when not given).
    """
    path, ext = _check_out(path, (".mp4", ".gif"), "render_video")
    if not fps > 0:
        raise ValueError(f"render_video: fps must be positive, got {fps!r}")
    if ext == ".mp4" and (width % 2 or height % 2):
        raise ValueError(f"render_video: an MP4 needs an even width and height, got {width} x {height}")
    qs, tqd = trajectory_arrays(trajectory, model.nq)
    if qds is None:
        qds = tqd
    T = qs.shape[0]
    if dt is not None:
        if not dt > 0:
            raise ValueError(f"render_video: dt must be positive, got {dt!r}")
        n = int(np.floor((T - 1) * dt * fps + 1e-9)) + 1
        keep = np.minimum(np.rint(np.arange(n) / (fps * dt)).astype(np.int64), T - 1)
    else:
        keep = np.arange(T)
    qs = qs[keep]
    if qds is not None:
        qds = np.asarray(qds)
        qds = (qds[:, None] if qds.ndim == 2 else qds)[keep]
    if contact_states is not None:  # leaves (T, ...) for one env, (T, B, ...) for several
        one = qs.shape[1] == 1
        contact_states = jax.tree_util.tree_map(
            lambda u: (jnp.asarray(u)[:, None] if one else jnp.asarray(u))[keep], contact_states
        )
    frames = _frames(
        model,
        qs,
        qds,
        source=source,
        shapes=shapes,
        width=width,
        height=height,
        layout=layout,
        spacing=spacing,
        shadows=shadows,
        antialias=antialias,
        camera=camera,
        contact=contact,
        contact_states=contact_states,
        force_scale=force_scale,
        ground=ground,
    )
    count = 0
    with replace_atomically(path) as tmp:
        if ext == ".mp4":
            iff = require("imageio_ffmpeg", "render", "jaxdyn.render.render_video (MP4)")
            writer = iff.write_frames(
                tmp, (width, height), fps=fps, codec="libx264", pix_fmt_out="yuv420p", macro_block_size=1, quality=7
            )
            writer.send(None)
            for img in frames:
                writer.send(np.ascontiguousarray(img))
                count += 1
            writer.close()
        else:
            iio = require("imageio.v3", "render", "jaxdyn.render.render_video (GIF)")
            imgs = list(frames)
            count = len(imgs)
            iio.imwrite(tmp, np.stack(imgs), extension=".gif", duration=1000.0 / fps, loop=0)
    return count
