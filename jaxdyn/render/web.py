"""The robot in a web browser (``jaxdyn view --serve``; the extra ``jaxdyn[view]``, viser).

:class:`WebViewer` serves a 3D scene of a model's shapes (:func:`jaxdyn.render.visuals`, drawn
as triangle meshes) on a ground grid, with controls:

* with a rollout ``qs (T, nq)`` or ``(T, B, nq)``: a time slider that scrubs it, play/pause
  (real time when ``dt`` is known), the env of a batch to show, contact forces on or off (with a
  ``contact`` and the velocities);
* without one: a slider per scalar joint (revolute, prismatic) between its limits, and the
  floating base's height.

Poses come from :func:`jaxdyn.forward_kinematics` (computed for the whole rollout at start, one
jitted call); the browser only draws. Rollouts are saved and read as ``.npz`` files by
:func:`save_rollout` and :func:`load_rollout`.
"""

from __future__ import annotations

import os
import threading
import time

import jax.numpy as jnp
import numpy as np

from .. import joints
from .._optional import require
from ..model import Model
from . import mat_to_quat, trajectory_arrays, world_poses
from .visuals import primitive_mesh, visuals

__all__ = ["WebViewer", "save_rollout", "load_rollout"]


def save_rollout(path, trajectory, dt=None):
    """Write ``trajectory`` (a :class:`jaxdyn.sim.Trajectory`, vmapped or not, or ``q`` over
    time) to ``path`` (``.npz``): ``q (T, B, nq)``, ``qd (T, B, nv)`` where known, ``dt``."""
    if not os.fspath(path).endswith(".npz"):
        raise ValueError(f"save_rollout: the file '{path}' must end in .npz")
    q = np.asarray(trajectory.q if hasattr(trajectory, "q") else trajectory)
    nq = q.shape[-1]
    qs, qds = trajectory_arrays(trajectory, nq)
    arrays = {"q": qs}
    if qds is not None:
        arrays["qd"] = qds
    if dt is not None:
        arrays["dt"] = np.asarray(float(dt))
    np.savez(path, **arrays)


def load_rollout(path, model: Model):
    """``(qs (T, B, nq), qds (T, B, nv) or None, dt or None)`` from a file of
    :func:`save_rollout` (also: an ``.npz`` with ``q (T, nq)``), checked against ``model``."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"rollout file '{path}' not found")
    try:
        data = np.load(path)
    except Exception as e:  # noqa: BLE001 - name the file and what went wrong
        raise ValueError(f"rollout file '{path}' is not an .npz file numpy reads ({e})") from None
    if "q" not in data:
        raise ValueError(f"rollout file '{path}' has no array 'q' (it has: {', '.join(data.files) or 'nothing'})")
    try:
        qs, _ = trajectory_arrays(data["q"], model.nq)
    except ValueError as e:
        raise ValueError(f"rollout file '{path}': {e} for model '{model.name}'") from None
    qds = None
    if "qd" in data:
        qds = np.asarray(data["qd"])
        qds = qds[:, None] if qds.ndim == 2 else qds
        if qds.shape != qs.shape[:2] + (model.nv,):
            raise ValueError(f"rollout file '{path}': qd has shape {data['qd'].shape}, q {data['q'].shape}")
    dt = float(data["dt"]) if "dt" in data else None
    return qs, qds, dt


def _rgb(rgba) -> tuple[int, int, int]:
    c = np.clip(np.asarray(rgba, np.float64)[:3], 0, 1)
    return (int(255 * c[0]), int(255 * c[1]), int(255 * c[2]))


class WebViewer:
    """A viser server showing ``model`` (module docstring).

    Args:
      model: the jaxdyn model.
      source: the URDF or MJCF file it was loaded from (its visuals and colours).
      qs, qds, dt: a rollout ``(T, nq)`` or ``(T, B, nq)``, its velocities, its time step.
      contact: a :class:`jaxdyn.contact.Contact` whose forces can be shown (needs ``qds``).
      host, port: where the page is served (``port=0``: a free port; :attr:`port` says which).
    """

    def __init__(
        self,
        model: Model,
        *,
        source=None,
        shapes=None,
        qs=None,
        qds=None,
        dt=None,
        contact=None,
        host="127.0.0.1",
        port=8080,
    ):
        viser = require("viser", "view", "jaxdyn.render.web")
        self.model = model
        self.shapes = tuple(visuals(model, source) if shapes is None else shapes)
        if port == 0:
            import socket

            with socket.socket() as s:
                s.bind((host, 0))
                port = s.getsockname()[1]
        self.server = viser.ViserServer(host=host, port=port, verbose=False)
        self.port = self.server.get_port()
        self.url = f"http://{host}:{self.port}"
        self.dt = dt
        self._lock = threading.Lock()
        self._running = True
        from ..configuration import neutral

        if qs is None:
            self.qs = np.asarray(neutral(model), np.float64)[None, None]
            self.rollout = False
        else:
            self.qs, tqd = trajectory_arrays(qs, model.nq)
            qds = tqd if qds is None and hasattr(qs, "qd") else qds
            self.rollout = True
        self.qds = None if qds is None else np.asarray(qds).reshape(self.qs.shape[:2] + (model.nv,))
        self.R, self.p = world_poses(model, self.qs)
        self.contacts = None
        if contact is not None and self.qds is not None:
            from . import _extent, contact_arrays

            ext = _extent(self.shapes, self.R[0, 0], self.p[0, 0])
            self.contacts = contact_arrays(model, contact, self.qs, self.qds, None, None, ext)
        self._build_scene()
        self._build_gui()
        self.show(0, 0)
        if self.rollout:
            self._thread = threading.Thread(target=self._play_loop, daemon=True)
            self._thread.start()

    def _build_scene(self):
        from . import _extent

        sc = self.server.scene
        sc.set_up_direction("+z")
        pts = self.p.reshape(-1, 3)
        centre = 0.5 * (pts.min(0) + pts.max(0))
        size = _extent(self.shapes, self.R[0, 0], self.p[0, 0]) + float(np.max(np.ptp(pts, axis=0)))
        cam = self.server.initial_camera
        cam.look_at = tuple(centre)
        cam.position = tuple(centre + size * np.array([0.8, -1.1, 0.55]))
        ground = min(0.0, float(self.p[..., 2].min())) if not self.model.floating_base else 0.0
        sc.add_grid(
            "/ground",
            width=20.0,
            height=20.0,
            cell_size=0.1,
            section_size=1.0,
            plane_color=(190, 196, 204),
            plane_opacity=1.0,
            position=(0.0, 0.0, ground),
        )
        self.frames = {}
        for b in sorted({v.body for v in self.shapes}):
            self.frames[b] = sc.add_frame(f"/robot/body{b + 1}", show_axes=False)
        for k, v in enumerate(self.shapes):
            if v.kind == "mesh":
                verts, faces = v.vertices, v.faces
            else:
                verts, faces = primitive_mesh(v.kind, v.size)
            sc.add_mesh_simple(
                f"/robot/body{v.body + 1}/shape{k}",
                vertices=np.asarray(verts, np.float32),
                faces=np.asarray(faces, np.uint32),
                color=_rgb(v.rgba),
                opacity=float(v.rgba[3]) if v.rgba[3] < 1 else None,
                position=tuple(np.asarray(v.p, np.float64)),
                wxyz=tuple(mat_to_quat(v.R)),
            )
        self.force_lines = None

    def _build_gui(self):
        gui = self.server.gui
        T, B, _ = self.qs.shape
        self.time = self.env = self.play = self.show_forces = None
        if self.rollout:
            self.time = gui.add_slider("time step", min=0, max=max(T - 1, 1), step=1, initial_value=0, disabled=T < 2)
            self.play = gui.add_checkbox("play", initial_value=False)
            self.speed = gui.add_slider("speed", min=0.1, max=4.0, step=0.1, initial_value=1.0)
            if B > 1:
                self.env = gui.add_slider("env", min=0, max=B - 1, step=1, initial_value=0)
            if self.contacts is not None:
                self.show_forces = gui.add_checkbox("contact forces", initial_value=True)
            for h in (self.time, self.env, self.show_forces):
                if h is not None:
                    h.on_update(lambda _: self.show(self.time.value, self.env.value if self.env else 0))
            self.label = gui.add_markdown(self._label(0))
        else:
            self._joint_sliders()

    def _joint_sliders(self):
        """A slider per 1-dof joint, between its limits (without: +-pi for an angle, +-1 m for a
        length), and a height slider for a floating base."""
        m = self.model
        lo, hi = np.asarray(m.q_lower, np.float64), np.asarray(m.q_upper, np.float64)
        starts = np.cumsum([0] + [len_q for len_q in m.layout.joint_nq])[:-1]
        self.sliders = []
        q0 = self.qs[0, 0].copy()
        for b, (name, t) in enumerate(zip(m.joint_names, m.joint_types)):
            i = int(starts[b])
            jt = joints.get(t)
            if jt.nq == 1 and jt.nv == 1:
                a = lo[i] if np.isfinite(lo[i]) else -jt.default_range()
                c = hi[i] if np.isfinite(hi[i]) else jt.default_range()
                h = self.server.gui.add_slider(
                    name, min=float(a), max=float(c), step=float(c - a) / 200, initial_value=float(np.clip(q0[i], a, c))
                )
                self.sliders.append((i, h))
            elif jt.floating:
                h = self.server.gui.add_slider(
                    f"{name} height", min=-1.0, max=2.0, step=0.01, initial_value=float(q0[i + 2])
                )
                self.sliders.append((i + 2, h))
        for _, h in self.sliders:
            h.on_update(lambda _: self._from_sliders())

    def _from_sliders(self):
        q = self.qs[0, 0].copy()
        for i, h in self.sliders:
            q[i] = h.value
        R, p = world_poses(self.model, jnp.asarray(q)[None, None])
        with self._lock:
            self.R, self.p = R, p
        self.show(0, 0)

    def _label(self, t):
        if self.dt is not None:
            return f"t = {t * self.dt:.3f} s (step {t} of {self.qs.shape[0] - 1})"
        return f"step {t} of {self.qs.shape[0] - 1}"

    def show(self, t: int, env: int = 0):
        """Pose the robot as at step ``t`` of env ``env``."""
        with self._lock:
            t = int(np.clip(t, 0, self.R.shape[0] - 1))
            env = int(np.clip(env, 0, self.R.shape[1] - 1))
            R, p = self.R[t, env], self.p[t, env]
            quats = mat_to_quat(R)
            with self.server.atomic():
                for b, h in self.frames.items():
                    if b >= 0:
                        h.position = tuple(p[b])
                        h.wxyz = tuple(quats[b])
                self._forces(t, env)
            if self.rollout and hasattr(self, "label"):
                self.label.content = self._label(t)

    def _forces(self, t, env):
        if self.contacts is None:
            return
        pts, f, act, scale = self.contacts
        on = self.show_forces is None or self.show_forces.value
        a = act[t, env]
        if not on or not a.any():
            if self.force_lines is not None:
                self.force_lines.visible = False
            return
        seg = np.stack([pts[t, env][a], pts[t, env][a] + scale * f[t, env][a]], 1).astype(np.float32)
        if self.force_lines is not None:
            self.force_lines.remove()
        self.force_lines = self.server.scene.add_line_segments(
            "/forces", points=seg, colors=(242, 140, 26), thickness=0.01
        )

    def _play_loop(self):
        last = time.monotonic()
        acc = 0.0
        while self._running:
            time.sleep(1 / 30)
            now = time.monotonic()
            if self.play is None or not self.play.value:
                last = now
                continue
            step = self.dt if self.dt else 1 / 30
            acc += (now - last) * float(self.speed.value) / step
            last = now
            n = int(acc)
            if n:
                acc -= n
                T = self.qs.shape[0]
                self.time.value = (int(self.time.value) + n) % T  # on_update poses the robot

    def close(self):
        """Stop the play loop and the server."""
        self._running = False
        if self.rollout:
            self._thread.join(timeout=1.0)
        self.server.stop()
