"""jaxdyn: differentiable, batched rigid-body dynamics in JAX.

Conventions: motion ``[angular; linear]``, force ``[moment; force]``; free-flyer
``q = [x, y, z, qw, qx, qy, qz]`` with body-frame velocity ``[omega; v]``; gravity in the world
frame. Every function takes one sample; batch with ``jax.vmap`` and compile with ``jax.jit``.
The library never changes global JAX settings: to work in float64, set the ``jax_enable_x64``
flag in your own program.
"""

from . import (
    actuators,
    algorithms,
    batching,
    builders,
    contact,
    kernels,
    parallel,
    planner,
    sim,
    spatial,
    sysid,
    trajopt,
    viewer,
)
from .algorithms.aba import aba_full
from .algorithms.common import Kinematics, check_state
from .algorithms.crba import composite_inertias_world
from .algorithms.derivatives import ABADerivatives, RNEADerivatives, aba_derivatives, rnea_derivatives
from .algorithms.diagonalized import (
    diagonal_coriolis,
    diagonal_dynamics,
    joint_rates_from_total,
    simulate_diagonal,
    total_joint_rates,
    working_moments,
)
from .algorithms.energy import (
    centroidal_momentum,
    kinetic_energy,
    mechanical_energy,
    momentum,
    potential_energy,
)
from .algorithms.innovations import (
    MassFactorization,
    apply_innovations_factor,
    apply_innovations_factor_transpose,
    apply_innovations_inverse,
    apply_innovations_inverse_transpose,
    apply_mass_matrix,
    body_inverse_inertias,
    factorize,
    frame_inverse_inertia,
    innovations_factorization,
    joint_space_inertias,
    logdet_mass_matrix,
    mass_matrix_inverse,
    solve_mass_matrix,
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
    kinematics,
)
from .algorithms.lagrange import LagrangeTerms, lagrange_dynamics, lagrange_mcg, paper_op_counts, pseudo_inertia
from .algorithms.regressor import (
    base_parameters,
    inertial_parameters,
    model_with_parameters,
    parameters_to_inertia,
    regressor,
)
from .algorithms.rnea import bias_forces, coriolis_torques, gravity_torques, rnea_full
from .batching import aba, crba, rnea
from .configuration import configuration_derivative, difference, integrate, neutral, normalize, random_configuration
from .io import InertiaWarning, LoadError, MJCFError, URDFError, load_mjcf, load_urdf
from .model import Model, Topology, make_model
from .planner import executor
from .robots import available_robots, load_robot
from .sensors import Sensors
from .sim import SimOptions, Trajectory, rollout

__version__ = "0.1.0"
