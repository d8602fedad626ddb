"""Compliant contact between the shapes on a model's bodies, and between them and the ground.

What is modelled (docs/contact.md has the parameters, the validation and the limits), a module
each:

* :mod:`jaxdyn.contact.params`: the ground half-space (:class:`Ground`), the force law's
  parameters (:class:`ContactParams`) and the bristle state of the stick-capable friction
  (:class:`ContactState`).
* :mod:`jaxdyn.contact.ground`: the contact points of every shape against the ground.
* :mod:`jaxdyn.contact.heightfield`: a height field ground (:class:`HeightField`, MuJoCo's
  ``hfield``) and the signed distance of a point to it.
* :mod:`jaxdyn.contact.pairs`: the shape pairs that collide, their contacts (the narrow phase of
  :mod:`jaxdyn.collision`) and the broad phase.
* :mod:`jaxdyn.contact.rules`: MuJoCo's collision filter and how two geoms' friction, contact
  dimension and margin combine.
* :mod:`jaxdyn.contact.laws`: the force laws, with the equations (S1)-(S6) and (R1)-(R2) that
  the other modules cite: the Hunt-Crossley normal force, regularised or stick-capable Coulomb
  friction, torsional and rolling friction.
* :mod:`jaxdyn.contact.soft`: MuJoCo's soft contact as a normal-force law (``solref``,
  ``solimp``, ``Contact(normal="mujoco")``), (M1)-(M2).
* :mod:`jaxdyn.contact.frames`: the bodies' world frames and velocities, the velocity Jacobians
  of material points, and the sum of point forces into body wrenches.
* :mod:`jaxdyn.contact.forces`: :class:`Contact`, what the simulation takes, and the forces of
  all contacts at a state: body wrenches, point forces, joint-space forces.
* :mod:`jaxdyn.contact.joint_space`: the contacts at one configuration as functions of the joint
  velocity, (J1)-(J4), for the ``"implicit_euler"`` step.
"""

from .forces import Contact, PointForces, contact_wrenches, generalized_forces, total_force
from .ground import MESH_GROUND_POINTS, ContactPoints, contact_forces, contact_points
from .heightfield import HeightField
from .joint_space import JointSpaceContacts
from .pairs import (
    CollisionPairs,
    PairContacts,
    collision_pairs,
    pair_contacts,
    pair_distances,
    pair_forces,
    pairs_in_reach,
)
from .params import FRICTION_LAWS, ContactParams, ContactState, Ground
from .soft import NORMAL_LAWS, body_invweights, with_invweights

__all__ = [
    "Ground",
    "HeightField",
    "ContactParams",
    "Contact",
    "ContactState",
    "FRICTION_LAWS",
    "NORMAL_LAWS",
    "body_invweights",
    "with_invweights",
    "ContactPoints",
    "JointSpaceContacts",
    "PairContacts",
    "CollisionPairs",
    "MESH_GROUND_POINTS",
    "contact_points",
    "contact_forces",
    "collision_pairs",
    "pair_contacts",
    "pair_distances",
    "pair_forces",
    "pairs_in_reach",
    "contact_wrenches",
    "generalized_forces",
    "total_force",
    "PointForces",
]
