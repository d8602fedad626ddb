"""The options of the simulation (:class:`SimOptions`: which forces act, the contact solve's
iterations) and the integrators' names."""

from __future__ import annotations

import dataclasses

INTEGRATORS = ("implicit_euler", "euler", "semi_implicit_euler", "rk4", "variational")
DEFAULT_INTEGRATOR = "implicit_euler"


@dataclasses.dataclass(frozen=True)
class SimOptions:
    """What :func:`forward_dynamics` adds to the commanded torque (static: hashable, so a change
    recompiles). Set a flag to ``False`` to model an ideal system."""

    clip_effort: bool = True
    damping: bool = True
    friction: bool = True
    # [rad/s or m/s] tanh smoothing scale of the joints' Coulomb friction; None: 1e-4 in
    # "implicit_euler", where the friction is solved implicitly in velocity (a joint loaded
    # below its friction creeps at eps * atanh(load / friction)), 1e-2 in the explicit
    # integrators (whose stability needs h friction / (eps I) < 2)
    friction_velocity: float | None = None
    # "implicit_euler": the joints' Coulomb friction implicit in velocity (it holds; a mass matrix
    # and Newton steps per step). False: explicit, friction_velocity None meaning 1e-2 (it creeps;
    # only the elementwise tanh, and the batch kernels under vmap)
    implicit_friction: bool = True
    joint_limits: bool = True
    springs: bool = True  # joint springs (model.stiffness, model.spring_reference)
    limit_stiffness: float = 1e3  # [N m / rad] soft joint-limit spring
    limit_damping: float = 10.0  # [N m s / rad] soft joint-limit damper (only beyond the limit)
    gravity: bool = True
    newton_iterations: int = 6  # "variational" only: quasi-Newton iterations per step
    # "implicit_euler" with contact: Newton steps on the contact's velocity equation after the
    # first (each on a convex subproblem with a line search; jaxdyn.sim.implicit.implicit_contact)
    contact_iterations: int = 1
    # "implicit_euler" with contact: exact Newton steps after the convex ones (the exact
    # derivative of the coupled force and a general solve), each kept only if it lowers
    # R^T diag(M_d)^-1 R: quadratic convergence near the root. 0 drops them for speed (the feet-only
    # Go1's step at 256 envs, float32 CPU: about 0.6x the time), leaving the fixed point of the
    # convex steps (docs/contact.md, "The velocity solve")
    contact_polish: int = 1
    # "implicit_euler" with contact: "explicit", the penetration at the start of the step, or
    # "implicit", the penetration at the end of the step (the gap moved by the end velocity,
    # jaxdyn.contact.JointSpaceContacts (J3)): stable at coarser steps and shallower at impacts,
    # but numerically dissipative (docs/contact.md, "Integration")
    contact_position: str = "explicit"
    # a model's equality constraints (jaxdyn.constraints): "soft", MuJoCo's solref/solimp
    # (efc_force and qacc as MuJoCo's), or "hard", Lagrange multipliers with Baumgarte gains
    # (Kp, Kd) (exact closure, as Pinocchio's constraintDynamics)
    constraints: str = "soft"
    baumgarte: tuple[float, float] = (0.0, 0.0)

    def __post_init__(self):
        for name in ("contact_iterations", "contact_polish"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ValueError(f"SimOptions: {name} must be a non-negative int, got {v!r}")
        if self.constraints not in ("soft", "hard"):
            raise ValueError(f"SimOptions: constraints must be 'soft' or 'hard', got {self.constraints!r}")
        if self.contact_position not in ("implicit", "explicit"):
            raise ValueError(
                f"SimOptions: contact_position must be 'implicit' or 'explicit', got {self.contact_position!r}"
            )


FRICTION_VELOCITY_IMPLICIT = 1e-4  # SimOptions.friction_velocity=None in "implicit_euler"
FRICTION_VELOCITY_EXPLICIT = 1e-2  # and in the explicit integrators


def friction_velocity(options: SimOptions, implicit: bool = False) -> float:
    """The joints' Coulomb friction smoothing scale ``eps`` of ``options``: its
    ``friction_velocity``, or where that is ``None`` the default of the integrator
    (``implicit``: ``"implicit_euler"``, whose velocity solve takes the friction implicitly)."""
    if options.friction_velocity is not None:
        return options.friction_velocity
    return FRICTION_VELOCITY_IMPLICIT if implicit else FRICTION_VELOCITY_EXPLICIT


IDEAL = SimOptions(clip_effort=False, damping=False, friction=False, joint_limits=False, springs=False)
