"""MJCF (MuJoCo XML) loader: standard-library XML only; MuJoCo is not needed.

:func:`load_mjcf` reads a MuJoCo model file (or its text) into a :class:`~jaxdyn.Model` whose mass
matrix, bias forces, inverse and forward dynamics equal those of MuJoCo's compiled model (checked
in ``tests/test_mjcf.py`` against values MuJoCo computed, ``tests/reference/
generate_mujoco_mjcf.py``). Semantics follow the MJCF reference (XMLreference and the modelling
chapter of MuJoCo's documentation).

Supported
---------
* ``<include file>``: the file is looked up relative to the main model file's directory (as the
  MJCF reference says), then relative to the including file's directory (MuJoCo also finds it
  there). For XML text, the main directory is the working directory.
* ``<default>`` classes (the top one is ``main``), nested classes inherit from their parent;
  ``class`` on elements; ``childclass`` on bodies and frames (applies to all descendants, the
  body's own elements included). ``<freejoint>`` takes no defaults; ``<joint type="free">`` does.
* Joints ``hinge`` (default type; default axis ``0 0 1``), ``slide``, ``ball``, ``free`` and
  ``<freejoint>``. Several joints in one body are composed in order as MuJoCo does (each hinge
  or ball rotates about its anchor ``pos`` in the body frame, axes in the frame left by the
  joints before it): jaxdyn gets one body per joint, the ones before the last massless; the
  last carries the inertia. Joint ``ref`` (hinge, slide) is folded into the joint placement, so
  jaxdyn's ``q`` equals MuJoCo's ``qpos`` (``q = ref`` is the pose written in the file).
* Free bodies: the first moving body, if free, is jaxdyn's free root (body 0, the ``free``
  joint, velocities in its conventions below). Every other free body (objects next to a robot,
  several robots) is MuJoCo's free joint itself: three slides along the world axes and a ball,
  jaxdyn joints ``<name>/x``, ``<name>/y``, ``<name>/z`` and ``<name>`` on massless bodies
  before the body, with ``q = qpos = [p; quat]`` and ``qd = qvel = [v_world; omega_body]``
  exactly as MuJoCo's (no conversion; its armature acts as MuJoCo's).
* Bodies without joints are welded to their parent: their inertia is added to the parent's
  jaxdyn body, and bodies welded to the world (and mocap bodies) are static.
* Orientations ``quat`` (normalised), ``euler`` with ``<compiler eulerseq>`` (lower case:
  axes that rotate with the frame, upper case: fixed axes), ``axisangle``, ``xyaxes``,
  ``zaxis`` (the minimal rotation taking ``+z`` there); ``<compiler angle>`` (default
  ``degree``) for ``euler``, ``axisangle`` and joint ``range`` / ``ref``.
* ``<frame>`` (pose, ``childclass``): its pose is applied to its children (bodies, frames,
  joints, geoms, sites, inertials).
* ``<inertial>`` with ``diaginertia`` (any orientation) or ``fullinertia``;
  ``<compiler inertiafromgeom>`` (``auto``: from geoms only for bodies without an
  ``<inertial>``), ``inertiagrouprange``, ``boundmass``, ``boundinertia``, ``balanceinertia``,
  ``settotalmass`` (applied last, over all bodies but the world). Geom inertias for sphere,
  capsule (a cylinder and two hemispheres), cylinder, box and ellipsoid, solid and of uniform
  density (``density``, default 1000, or ``mass``), posed by ``pos`` / orientation or
  ``fromto`` (the geom frame's ``+z`` then points from the second point to the first, as in
  MuJoCo's compiled model). An attribute with fewer numbers than its array (``size="0.06"``)
  overrides only the leading entries of the inherited value, as MuJoCo reads it.
* Mesh geoms whose mesh asset says ``inertia="exact"`` (directly or through a ``<default>``
  class): the exact volume, centroid and inertia of the closed mesh (STL or OBJ file, found
  through ``<compiler meshdir>`` / ``assetdir``, or inline ``vertex`` + ``face``; ``scale``,
  mirrors included). Vertices are taken in single precision, as MuJoCo stores them.
* Joint ``armature``, ``damping`` (linear coefficient), ``frictionloss`` (-> ``friction``),
  ``range`` with ``limited`` (``<compiler autolimits>``, default true), ``actuatorfrcrange``.
* Actuators with ``joint`` (or ``jointinparent``) transmission on hinge / slide / ball joints:
  each actuator's scalar force is bounded by ``forcerange`` if force-limited and, for a fixed
  gain with no bias and no activation dynamics (``motor``; ``general`` as such), by
  ``|gain| max|ctrlrange|`` if control-limited (the tighter of the two); times ``|gear|`` it
  bounds the joint force. Several actuators on one joint add up; the joint's
  ``actuatorfrcrange`` caps the sum. The result is ``effort_limit`` (inf where unbounded).
* ``<option gravity>`` and ``<flag gravity="disable">`` -> ``model.gravity``.
* Geoms are stored in ``model.geoms`` (:class:`~jaxdyn.geometry.Geoms`, in jaxdyn body
  frames; height fields are skipped; a mesh keeps the frame written in the file, where MuJoCo
  moves it to the mesh's centroid, and its convex hull's vertices go to ``Geoms.vertices`` for
  contact: STL and OBJ files and inline ``vertex`` data are read, other meshes load with a
  warning and do not collide; the meshes of geoms that never collide, ``contype`` and
  ``conaffinity`` 0 and in no ``<pair>`` (visual geoms), are not read). Every MuJoCo body is a named frame
  (``model.frame_names``; the world is ``"world"``), and so is every named site (posed by
  ``pos`` / orientation or ``fromto``; called ``"site:NAME"`` where a body has the same name).

Names: jaxdyn's joints are MuJoCo's joints, one jaxdyn body each, in MuJoCo's order (so the dof
order is MuJoCo's). The jaxdyn body of a MuJoCo body's last joint has the MuJoCo body's name,
earlier ones ``"BODY/JOINT"``. A jaxdyn body's frame is at the anchor of its hinge or ball
joint (MuJoCo's body frame moved by the joint ``pos``), with the MuJoCo body's orientation; the
named frame of the MuJoCo body is exact. Unnamed bodies and joints are called ``body<id>`` /
``joint<id>`` with MuJoCo's ids.

Joint springs of hinge and slide joints (``stiffness``, ``springref``) load into
``model.stiffness`` / ``model.spring_reference`` (applied by :mod:`jaxdyn.sim`). Warned about
(``UserWarning``) and otherwise ignored, since jaxdyn's model has no place for them: springs of
ball and free joints, non-linear ``stiffness`` terms, ``springdamper``, non-linear ``damping`` coefficients, body
``gravcomp``, joint ``actuatorgravcomp``, fluid forces (``<option density viscosity wind>``).
Also warned about, and loaded: ``armature`` on a free joint (``<joint type="free">`` under a
default with armature; ``<freejoint>`` has none). jaxdyn adds ``armature * qdd`` with the linear
part in body axes, MuJoCo ``armature * qacc`` with it in world axes: the mass matrices agree
(the armature is the same on the three axes), the bias forces differ by
``armature * (omega_b x v_b)`` on the linear dofs.

Equality constraints (``connect``, ``weld``, ``joint``, ``tendon``), fixed tendons and spatial
tendons through sites (with their limits, springs, dampers and ``actuatorfrcrange``) load into
``model.constraints`` (:mod:`.equality`, :mod:`jaxdyn.constraints`, docs/constraints.md);
actuators drive joints or tendons.

Refused (:class:`MJCFError`, naming the element), because the result would not be MuJoCo's
model: spatial tendons that wrap around geoms or pass over pulleys, tendon ``armature``,
``frictionloss``, ``margin``, ``springyield`` and polynomial stiffness or damping, flex
equalities, ``<deformable>``,
``<composite>``, ``<flexcomp>``, ``<replicate>``, ``<attach>``, ``<skin>``, ``<plugin>``,
``<extension>`` with content; a free joint
below another moving body or with other joints in its body, a ball joint followed by a hinge or
ball in the same body (MuJoCo refuses it too); a geom that would give a body its inertia but is
a height field, an SDF, a mesh with ``inertia="shell"``, or with MuJoCo's default ``legacy``
when it is not convex (``exact`` and ``convex`` are computed, and ``legacy`` of a convex closed
mesh, which equals ``exact``; a mesh without faces is its convex hull), a mesh that encloses no volume,
or asks for ``shellinertia`` or mesh fitting (add an ``<inertial>``, the message says so); ``<freejoint align="true">`` / ``<compiler alignfree="true">`` (moves the body
frame); frame ``scale``; actuators with site, body or slider-crank transmission, or on a
free joint; missing include files, unknown default classes, duplicate names, elements and
attributes that MuJoCo's schema does not know where they are written (misspellings: the message
names the closest known name, :mod:`.schema`), keywords outside their set, and numbers that do
not parse, are not finite or come in the wrong count (the message names element and attribute).
Elements that do not affect the dynamics (``visual``, ``asset``, ``sensor``, ``keyframe``,
``statistic``, ``size``, cameras, lights) are ignored; :func:`jaxdyn.sensors.from_mjcf` reads ``<sensor>``.
Of ``<custom>``, the two numerics MJX reads as its contact budgets, ``max_geom_pairs`` and
``max_contact_points`` (MuJoCo Playground's scenes set them), become ``model.geoms.max_pairs`` and
``model.geoms.max_contacts``, the defaults of ``Contact(max_pairs=, max_contacts=)``; the other
numerics, texts and tuples carry data for user code and are ignored.

``<contact>``: ``<exclude body1 body2>`` becomes ``model.geoms.exclude`` (the geoms of the two
MuJoCo bodies, also where welded bodies were merged into one jaxdyn body) and ``<pair geom1
geom2>`` ``model.geoms.pairs`` (:mod:`jaxdyn.contact` collides them as MuJoCo does, with its own
force law) with its sliding friction (the first of ``friction``, default 1) in
``model.geoms.pair_friction`` (0 for a pair of ``condim="1"``: frictionless) and its
``margin`` in ``model.geoms.pair_margin``, its ``condim`` in ``model.geoms.pair_condim`` and its
torsional and rolling friction (``friction``'s third and fourth numbers) in
``model.geoms.pair_angular``, its ``solref`` and ``solimp`` in ``model.geoms.pair_solref`` and
``pair_solimp``. Geom ``solref``, ``solimp`` and ``solmix`` go to ``model.geoms`` too, with
``<option cone>`` (``model.geoms.cone``) and each geom's MuJoCo body's ``body_invweight0`` at
``qpos0`` (``model.geoms.invweight``): MuJoCo's soft contact, ``Contact(normal="mujoco")``
(:mod:`jaxdyn.contact.soft`); the loader names those that differ from MuJoCo's defaults, which
the default Hunt-Crossley law does not read. Geom ``margin`` goes to ``model.geoms.margin``: a contact acts from the sum
of its geoms' margins on (a pair's own margin instead), as in MuJoCo 4. ``gap`` (geom or pair)
only widens MuJoCo's contact detection, for contacts that carry no force, and is not read. A geom touching a
plane uses the larger of the two sliding frictions (with ``jaxdyn.contact.Ground.from_model``),
as MuJoCo. Geom ``condim`` goes to ``model.geoms.condim`` and ``friction`` (sliding, torsional,
rolling) to ``model.geoms.friction``: a contact whose combined dimension is 1 is frictionless,
3 has sliding friction, 4 adds torsional and 6 rolling friction, as in MuJoCo.

Free-joint velocities
---------------------
MuJoCo's free joint: ``qpos = [p; quat]`` (as jaxdyn's), ``qvel = [v_w; omega_b]`` with ``v_w``
the velocity of the body origin in world axes and ``omega_b`` the angular velocity in body axes.
jaxdyn's: ``qd = [omega_b; v_b]``, both in body axes. With ``R`` the body-to-world rotation of
``quat``:

* velocity: ``v_w = R v_b``, so ``qd = [omega_b; R^T v_w]`` and ``qvel = [R v_b; omega_b]``;
* acceleration: ``d/dt v_b = d/dt (R^T v_w) = R^T a_w - omega_b x v_b`` (``dR/dt = R [omega_b]x``),
  so ``qdd = [domega_b; R^T a_w - omega_b x v_b]`` and ``qacc = [R (dv_b + omega_b x v_b);
  domega_b]``;
* generalised force, by power duality (``f_mj . qvel = f . qd`` for all velocities): MuJoCo's
  ``[F_w; tau_b]`` (world force, body torque) is jaxdyn's ``[tau_b; R^T F_w]``, and back
  ``[R f_b; tau_b]``. The mass matrix maps as ``M = T^T M_mj T`` with ``qvel = T qd``.

Hinge, slide and ball dofs are the same in both (a ball's velocity is the angular velocity in
the child frame in both); :func:`velocity_from_mujoco` and the other converters below change
only the free joint's six entries.
"""

from ..meshes import read_stl
from .convert import (
    acceleration_from_mujoco,
    acceleration_to_mujoco,
    force_from_mujoco,
    force_to_mujoco,
    velocity_from_mujoco,
    velocity_to_mujoco,
)
from .geom_inertia import geom_volume_inertia, mesh_volume_inertia
from .loader import load_mjcf
from .parse import MJCFError

__all__ = [
    "MJCFError",
    "geom_volume_inertia",
    "mesh_volume_inertia",
    "read_stl",
    "acceleration_from_mujoco",
    "acceleration_to_mujoco",
    "force_from_mujoco",
    "force_to_mujoco",
    "load_mjcf",
    "velocity_from_mujoco",
    "velocity_to_mujoco",
]
