"""jaxdyn: differentiable, batched rigid-body dynamics in JAX.

Conventions: motion ``[angular; linear]``, force ``[moment; force]``; free-flyer
``q = [x, y, z, qw, qx, qy, qz]`` with body-frame velocity ``[omega; v]``; gravity in the world
frame. Every function takes one sample; batch with ``jax.vmap`` and compile with ``jax.jit``.
The library never changes global JAX settings: enable float64 yourself with
``jax.config.update("jax_enable_x64", True)`` if you want it.
"""

from . import spatial
from .algorithms.aba import aba, aba_full
from .algorithms.common import check_state
from .algorithms.crba import composite_inertias_world, crba
from .algorithms.energy import (
    centroidal_momentum,
    kinetic_energy,
    mechanical_energy,
    momentum,
    potential_energy,
)
from .algorithms.kinematics import (
    body_accelerations,
    body_jacobian,
    body_velocities,
    center_of_mass,
    center_of_mass_jacobian,
    forward_kinematics,
    frame_jacobian,
    frame_jacobian_time_derivative,
    frame_jacobians,
    frame_jacobians_time_derivative,
    frame_placement,
    frame_placements,
)
from .algorithms.rnea import bias_forces, coriolis_torques, gravity_torques, rnea, rnea_full
from .configuration import configuration_derivative, difference, integrate, neutral, normalize, random_configuration
from .io import URDFError, load_urdf
from .model import Model, Topology, make_model
from .robots import available_robots, load_robot

__version__ = "0.1.0"
