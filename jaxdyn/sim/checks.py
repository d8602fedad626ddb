"""Checks of :func:`~jaxdyn.sim.step`'s and :func:`~jaxdyn.sim.rollout`'s inputs (step length,
model, shapes, integrator, policies and controls) and the warning for a contact that cannot
touch anything."""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np

from ..model import Model
from .options import INTEGRATORS


def concrete(x):
    """``x`` as a NumPy array when its value is known in Python, ``None`` when it is traced
    (an argument of a ``jit``-compiled function, or batched by ``vmap``)."""
    try:
        return np.asarray(x)
    except (jax.errors.TracerArrayConversionError, jax.errors.ConcretizationTypeError):
        return None


def check_dt(dt, where: str):
    """Refuse a concrete ``dt`` that is not positive and finite (a traced one cannot be read)."""
    d = concrete(dt)
    if d is None:
        return
    if not np.issubdtype(d.dtype, np.number) or np.iscomplexobj(d):
        raise TypeError(f"{where}: dt must be a real number (the step length in seconds), got {dt!r}")
    if not np.all(np.isfinite(d) & (d > 0)):
        order = {"step": "step(model, q, qd, tau, dt)", "rollout": "rollout(model, q0, qd0, controls_or_policy, dt)"}
        if d.ndim and where in order:
            raise ValueError(
                f"{where}: dt must be positive and finite, got an array of shape {d.shape} (dt is the step length; "
                f"arguments in the wrong order? the call is {order[where]})"
            )
        raise ValueError(f"{where}: dt must be positive and finite, got {dt!r}")


def check_model(model: Model, where: str):
    """The loaders' rules on the model (:meth:`Model.check`, inertia consistency not looked at):
    shapes always, values where they are known in Python."""
    from ..io.errors import check_model

    if not isinstance(model, Model):
        raise TypeError(f"{where}: the first argument must be a jaxdyn.Model, got {type(model).__name__}")
    check_model(model, "skip", f"{where}: ")


def check_shape(where: str, name: str, x, shape, model: Model):
    if x is not None and jnp.shape(x) != shape:
        raise ValueError(f"{where}: {name} must have shape {shape} for model '{model.name}', got {jnp.shape(x)}")


def check_integrator(integrator: str):
    if integrator not in INTEGRATORS:
        raise ValueError(f"step: unknown integrator '{integrator}', choose one of {', '.join(INTEGRATORS)}")


def check_contact_state(integrator: str, contact, where: str):
    if contact is not None and contact.stateful and integrator != "implicit_euler":
        raise ValueError(
            f"{where}: Contact(friction='{contact.friction}') carries a state, integrated by the "
            f"'implicit_euler' step only (got '{integrator}')"
        )


_WARNED_NOTHING_COLLIDES: set = set()


def warn_if_nothing_collides(model: Model, contact, where: str):
    """One warning per model (by name) when a contact is given for a model without a geom on a
    moving body: nothing can touch anything, and the contact does nothing."""

    if (model.geoms is not None and any(b >= 0 for b in model.geoms.body)) or model.name in _WARNED_NOTHING_COLLIDES:
        return
    _WARNED_NOTHING_COLLIDES.add(model.name)
    warnings.warn(
        f"{where}: a contact was given, but model '{model.name}' has no geom on a moving body, so nothing "
        "collides and the contact does nothing (load the model from MJCF, or a URDF with <collision> "
        "shapes, to collide)",
        UserWarning,
        stacklevel=3,
    )


def _check_policy(name, policy):
    """A policy is called as ``policy(q, qd, t)``: one that cannot take three arguments is named
    here, not by the Python error from inside the scan."""
    import inspect

    try:
        sig = inspect.signature(policy)
    except (TypeError, ValueError):  # builtins and some callables have none: not checked
        return
    try:
        sig.bind(None, None, None)
    except TypeError:
        raise TypeError(
            f"rollout: the {name} policy is called as policy(q, qd, t) (t the step index), but "
            f"{getattr(policy, '__name__', type(policy).__name__)}{sig} cannot take three arguments"
        ) from None


def rollout_controls(name, controls, n, dtype, steps):
    """``(policy, array, steps)`` of a rollout's torques or ctrl: an array ``(T, n)`` (``steps``
    checked or set to ``T``), a callable policy, or ``None``."""
    if controls is None:
        return None, None, steps
    if callable(controls):
        _check_policy(name, controls)
        return controls, None, steps
    u = jnp.asarray(controls, dtype)
    if u.ndim != 2 or u.shape[1] != n:
        raise ValueError(f"rollout: {name} must have shape (T, {n}), got {u.shape}")
    if steps is not None and steps != u.shape[0]:
        raise ValueError(f"rollout: steps={steps} but {name} has {u.shape[0]} rows")
    return None, u, u.shape[0]
