"""Inertial-parameter identification from measured joint torques (fixed-base, 1-dof joints).

The torque model is linear in the standard inertial parameters ``pi`` (``(nb, 10)``, see
:mod:`jaxdyn.algorithms.regressor`)::

    tau = Y(q, qd, qdd) @ pi + armature * qdd  [+ friction(qd)]

with the armature taken as known from the model and, optionally, a friction model per joint
(viscous, Coulomb, Stribeck, offset: :mod:`jaxdyn.sysid.friction`) identified as extra columns.

Modules: :mod:`~jaxdyn.sysid.data` (loading, zero-phase filtering, derivatives, decimation),
:mod:`~jaxdyn.sysid.friction`, :mod:`~jaxdyn.sysid.regressors`, :mod:`~jaxdyn.sysid.estimators`
(OLS, WLS, the consistent fit with mass bounds), :mod:`~jaxdyn.sysid.uncertainty` (standard
deviations, what the data determine), :mod:`~jaxdyn.sysid.excitation` (Fourier trajectories and
their optimisation), :mod:`~jaxdyn.sysid.consistency` (pseudo-inertia, log-Cholesky, physical
consistency), :mod:`~jaxdyn.sysid.cli` (``jaxdyn identify``, ``jaxdyn excite``). Workflow and
measured numbers: ``docs/sysid.md``.

Estimators:

* :func:`identify_ls` - ordinary (or weighted; :func:`identify_wls`) least squares on the *base parameters*
  ``beta = B @ pi`` (Gautier & Khalil 1990; Atkeson, An & Hollerbach 1986). ``B`` is an
  orthonormal basis of the row space of the regressor, computed from random states
  (:func:`structural_base`, an SVD as in :func:`jaxdyn.base_parameters`), so the estimate is
  unique whatever the data excite; the unidentifiable directions are kept at the prior:
  ``pi = pi0 + B^T (beta - B pi0)``. This estimate need not be physically consistent.
* :func:`identify_gradient` - gradient descent (optax L-BFGS or Adam) under the log-Cholesky
  parametrisation of the 4x4 pseudo-inertia (Rucker & Wensing 2022, "Smooth parameterization of
  rigid-body inertia", IEEE RA-L 7(2)): ``J = U U^T`` with ``U`` upper triangular,
  ``U = e^alpha [[e^d1, s12, s13, t1], [0, e^d2, s23, t2], [0, 0, e^d3, t3], [0, 0, 0, 1]]``.
  Every ``theta = (alpha, d1, d2, d3, s12, s23, s13, t1, t2, t3)`` gives a positive-definite
  ``J``, i.e. a physically consistent body (Wensing, Kim & Slotine 2018, RA-L 3(1)); the map is
  a bijection onto them. ``J = [[Sigma, h], [h^T, m]]`` with ``Sigma = int r r^T dm``,
  ``Ibar = tr(Sigma) 1 - Sigma`` (Turney80 (1.26)-(1.28)). The loss is the torque mean squared
  error plus ``reg`` times the log-det (Bregman) divergence to the prior,
  ``d(J || J0) = tr(J0^-1 J) - log det(J0^-1 J) - 4`` (Lee, Wensing & Park 2020, "Geometric
  robot dynamic identification: a convex programming approach", IEEE T-RO 36(2)), which pulls
  the unidentifiable directions toward the nominal model and is coordinate-free. Mass bounds and
  a known total mass are enforced there (:mod:`~jaxdyn.sysid.estimators`).

The torque residual uses the regressor, which is the exact Jacobian of RNEA with respect to
``pi`` (so ``Y @ pi == rnea(model_with_parameters(model, pi), q, qd, qdd) - armature * qdd``).

Data files
----------

NPZ: arrays ``q`` ``(T, n)``, ``tau`` ``(T, n)``; optional ``qd``, ``qdd`` ``(T, n)``, ``t``
``(T,)`` (seconds, uniformly sampled), ``dt`` (scalar), ``joint_names`` ``(n,)`` (strings; when
absent the columns are in the model's joint order). Other keys are an error.

CSV: comma separated, lines starting with ``#`` are comments, then one header line, then one row
per sample::

    t,q:joint1,q:joint2,qd:joint1,qd:joint2,tau:joint1,tau:joint2
    0.00,0.1,0.2,0.0,0.0,1.5,0.3

Column names are ``t`` (optional) or ``<kind>:<joint name>`` with kind one of ``q``, ``qd``,
``qdd``, ``tau``. ``q`` and ``tau`` are required for every joint; ``qd``/``qdd`` are optional but,
when present, must be given for every joint. Columns may be in any order.

Joint names are matched to the model's joints (every model joint must appear once, no others).
When ``qd``/``qdd`` are missing, the recording (uniformly sampled: ``t`` or ``dt``) goes through
:func:`preprocess`: a zero-phase Butterworth low-pass filter with the cut-off from the excitation
bandwidth, central differences, the same filter on tau, the filter's edges dropped, decimation
(see :mod:`jaxdyn.sysid.data`); or, with ``filter="savgol"``, a Savitzky-Golay filter (a local
least-squares polynomial fit, Savitzky & Golay 1964; Schafer 2011, IEEE Signal Proc. Mag.), the
``window // 2`` samples at each end, where the fit is one-sided, dropped.

Sharding: regressors are evaluated in fixed-size chunks (one compiled program per model)
spread over every visible device with :func:`jaxdyn.parallel.shard_batch`, padding with
:func:`jaxdyn.parallel.pad_batch`; the gradient loss runs on the sharded stack. With one device
this is plain single-device execution; with several, no code change is needed.
"""

from .cli import add_cli_arguments, add_excite_arguments, plot_torques, run_cli, run_excite_cli
from .consistency import (
    BodyConsistency,
    is_physically_consistent,
    log_cholesky_to_parameters,
    log_cholesky_to_pseudo_inertia,
    parameters_to_log_cholesky,
    parameters_to_pseudo_inertia,
    physical_consistency,
    pseudo_inertia_to_log_cholesky,
    pseudo_inertia_to_parameters,
)
from .data import (
    Preprocessing,
    SysIdData,
    butterworth_sos,
    central_differences,
    check_model,
    default_decimation,
    excitation_bandwidth,
    filter_edge,
    load_data,
    preprocess,
    save_data,
    savgol_derivative,
    split_holdout,
    zero_phase,
)
from .estimators import (
    Identification,
    ProgressBar,
    identify,
    identify_gradient,
    identify_ls,
    identify_wls,
    mass_bounds_array,
    predict_torques,
    torque_rmse,
)
from .excitation import (
    ExcitationLimits,
    ExcitationResult,
    FourierTrajectory,
    enforce_limits,
    excitation_limits,
    excitation_regressor,
    fourier_excitation,
    optimize_excitation,
    plot_excitation,
    random_fourier,
    read_trajectory_csv,
    write_trajectory_csv,
)
from .friction import FrictionModel, friction_columns, friction_model, friction_torque
from .regressors import parameter_names, regressor_rows, structural_base
from .uncertainty import DataShare, Uncertainty, data_share, default_prior_std, named_base, parameter_uncertainty

__all__ = [
    "SysIdData",
    "fourier_excitation",
    "load_data",
    "save_data",
    "savgol_derivative",
    "split_holdout",
    "check_model",
    "parameters_to_pseudo_inertia",
    "pseudo_inertia_to_parameters",
    "log_cholesky_to_pseudo_inertia",
    "pseudo_inertia_to_log_cholesky",
    "log_cholesky_to_parameters",
    "parameters_to_log_cholesky",
    "BodyConsistency",
    "physical_consistency",
    "is_physically_consistent",
    "structural_base",
    "regressor_rows",
    "Identification",
    "identify_ls",
    "identify_gradient",
    "identify",
    "predict_torques",
    "torque_rmse",
    "ProgressBar",
    "add_cli_arguments",
    "run_cli",
    "plot_torques",
    "Preprocessing",
    "preprocess",
    "excitation_bandwidth",
    "butterworth_sos",
    "filter_edge",
    "zero_phase",
    "central_differences",
    "default_decimation",
    "identify_wls",
    "mass_bounds_array",
    "FrictionModel",
    "friction_model",
    "friction_columns",
    "friction_torque",
    "parameter_names",
    "Uncertainty",
    "DataShare",
    "parameter_uncertainty",
    "named_base",
    "data_share",
    "default_prior_std",
    "add_excite_arguments",
    "run_excite_cli",
    "FourierTrajectory",
    "ExcitationLimits",
    "ExcitationResult",
    "optimize_excitation",
    "excitation_limits",
    "enforce_limits",
    "excitation_regressor",
    "random_fourier",
    "write_trajectory_csv",
    "read_trajectory_csv",
    "plot_excitation",
]
