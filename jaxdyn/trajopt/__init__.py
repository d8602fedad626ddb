"""Trajectory optimisation: iterative LQR / DDP with box-constrained controls.

Problem (discrete time, horizon ``T``)::

    minimise   J(u) = sum_{t<T} l(x_t, u_t, t) + l_f(x_T)
    subject to x_{t+1} = f(x_t, u_t),  x_0 given,  u_lower <= u_t <= u_upper

* Dynamics ``f`` (:class:`Dynamics`): for a :class:`~jaxdyn.Model`, :func:`model_dynamics` wraps
  one (or several sub-) steps of :func:`jaxdyn.sim.step` with the state ``x = (q, qd)``. The
  optimiser works in the tangent space of the state manifold: perturbations are
  ``x (+) dx = (integrate(q, dq), qd + dqd)`` and differences use
  :func:`jaxdyn.difference`, so ``dx`` has size ``2 nv`` and floating-base / spherical joints
  (quaternions) are handled without a singular or over-parametrised linearisation.
* Costs (:class:`Cost`): a running cost ``l(x, u, t)`` and a terminal cost ``l_f(x)``; user
  functions (:class:`FunctionCost`), quadratic state/control costs (:func:`quadratic_cost`),
  an end-effector position cost (:class:`FramePositionCost`), residual costs with a Gauss-Newton
  expansion as Crocoddyl's (:class:`ResidualCost`: :class:`FramePlacementCost`,
  :class:`FrameVelocityCost`, :class:`CenterOfMassCost`, :class:`ContactForceCost`), and sums of
  them (``cost_a + cost_b``).

The optimiser (:func:`ilqr`) is iterative LQR (Li & Todorov, *Iterative linear quadratic
regulator design for nonlinear biological movement systems*, ICINCO 2004) with the
regularisation and line search of Tassa, Erez & Todorov (*Synthesis and stabilization of complex
behaviors through online trajectory optimization*, IROS 2012) and the control limits of Tassa,
Mansard & Todorov (*Control-limited differential dynamic programming*, ICRA 2014):

1. linearise the dynamics along the nominal trajectory (``f_x``, ``f_u`` in the tangent space,
   :meth:`Dynamics.jacobians`: for a robot model in closed form from
   :func:`jaxdyn.aba_derivatives` and the integrator's chain rule,
   :meth:`ModelDynamics.jacobians`; ``jax.jacfwd`` of the step otherwise) and expand the costs
   to second order (:meth:`Cost.expand`: ``jax.grad`` / ``jax.hessian`` unless a cost gives
   them in closed form), all time steps at once with ``vmap``;
2. backward pass (a reverse ``lax.scan``), Tassa 2012 eqs. (5) and (10)-(11)::

       Q_x  = l_x + f_x' V_x'          Q_u  = l_u + f_u' V_x'
       Q_xx = l_xx + f_x' V_xx' f_x    Q_uu = l_uu + f_u' V_xx' f_u    Q_ux = l_ux + f_u' V_xx' f_x
       regularised: Q~_uu = l_uu + f_u' (V_xx' + mu I) f_u,  Q~_ux = l_ux + f_u' (V_xx' + mu I) f_x
       k = argmin_{lo <= u + k <= hi} 1/2 k' Q~_uu k + k' Q_u      (box QP, Tassa 2014 Alg. 1:
                                                                     projected Newton)
       K = -Q~_uu,ff^-1 Q~_ux,f on the free controls, 0 on the clamped ones
       (without limits: k = -Q~_uu^-1 Q_u, K = -Q~_uu^-1 Q~_ux, one Cholesky factorisation)
       V_x  = Q_x + K' Q_uu k + K' Q_u + Q_ux' k
       V_xx = Q_xx + K' Q_uu K + K' Q_ux + Q_ux' K
       dV   = sum (alpha k' Q_u + alpha^2/2 k' Q_uu k)         (expected change of J)

   A non positive definite ``Q~_uu`` (Cholesky failure) raises ``mu`` and repeats the pass;
3. forward pass ``u_t = clip(u_t + alpha k_t + K_t (x_t (-) xbar_t), lo, hi)`` for the step
   sizes ``alpha`` of the line search in decreasing order, stopping at the first (the largest)
   whose actual/expected decrease ratio exceeds ``armijo`` (Tassa 2012 eq. (13)); then ``mu`` is
   lowered after a step longer than ``step_decrease`` (0.5) and raised when none is accepted or
   the accepted one is at most ``step_increase`` (0.01) (the Levenberg-Marquardt schedule of
   Tassa 2012 Sec. II-F, by the step's size as in Crocoddyl). Usually the first step is
   accepted: one rollout per iteration.

:func:`fddp` is the same solver by multiple shooting (feasibility-driven DDP, Mastalli et al.,
*Crocoddyl: An Efficient and Versatile Framework for Multi-Contact Optimal Control*, ICRA 2020):
it starts from states ``x_init`` that need not be a rollout of the controls; the gaps
``g_t+1 = f(x_t, u_t) (-) x_t+1`` enter the backward pass (``V_x' = V_x,t+1 + V_xx,t+1 g_t+1``),
each step of size ``alpha`` keeps ``1 - alpha`` of them (the full step closes them), and the
expected change of the cost gains the gap terms::

    dJ(alpha) = sum_t alpha (Q_u' k + V_x'' g) + alpha^2/2 (k' Q_uu k - g' V_xx g) - (1 - alpha) (V_xx g)' dx_t+1

(``dx`` the trial's state change, all quantities of knot ``t+1``; exact for a linear-quadratic
problem). While gaps remain, a step that must raise the cost to close them is accepted when the
rise is at most ``gap_armijo`` times the predicted one.

The whole optimisation (iterations included, as a ``lax.while_loop``) is one jitted program per
problem structure: changing ``x0``, the initial controls, targets or weights (arrays) reuses it.
:func:`solve_batch` solves many problems of one structure in a few batched slots, a finished
problem's slot taking the next one, so that a batch costs the sum of its problems' iterations
rather than its size times the largest (``jax.vmap`` of a solve runs in lock-step).
"""

from __future__ import annotations

from .augmented import AL_STATUS, ALOptions, ALResult, AugmentedCost, augmented_lagrangian, violated_constraints
from .batch import BatchResult, Problem, solve_batch
from .constraints import Constraint, FramePositionConstraint, FunctionConstraint, JointPositionLimits
from .costs import (
    CenterOfMassCost,
    ContactForceCost,
    Cost,
    FramePlacementCost,
    FramePositionCost,
    FrameVelocityCost,
    FunctionCost,
    QuadraticCost,
    ResidualCost,
    SumCost,
    quadratic_cost,
)
from .dynamics import Dynamics, FunctionDynamics, LinearDynamics, ModelDynamics, model_dynamics
from .ilqr import (
    STATUS,
    BackwardPass,
    Expansion,
    ILQROptions,
    ILQRResult,
    Rollout,
    backward_pass,
    box_qp,
    defects,
    fddp,
    forward_pass,
    ilqr,
    linearize,
    simulate,
    total_cost,
)
from .mpc import MPC_OPTIONS, mpc_step, shift

__all__ = [
    "Dynamics",
    "ModelDynamics",
    "LinearDynamics",
    "FunctionDynamics",
    "model_dynamics",
    "Cost",
    "FunctionCost",
    "QuadraticCost",
    "FramePositionCost",
    "ResidualCost",
    "FramePlacementCost",
    "FrameVelocityCost",
    "CenterOfMassCost",
    "ContactForceCost",
    "SumCost",
    "quadratic_cost",
    "ILQROptions",
    "ILQRResult",
    "Expansion",
    "ilqr",
    "fddp",
    "STATUS",
    "BackwardPass",
    "Rollout",
    "defects",
    "simulate",
    "total_cost",
    "linearize",
    "backward_pass",
    "forward_pass",
    "box_qp",
    "Constraint",
    "JointPositionLimits",
    "FramePositionConstraint",
    "FunctionConstraint",
    "ALOptions",
    "ALResult",
    "AL_STATUS",
    "AugmentedCost",
    "augmented_lagrangian",
    "violated_constraints",
    "Problem",
    "BatchResult",
    "solve_batch",
    "mpc_step",
    "shift",
    "MPC_OPTIONS",
]
