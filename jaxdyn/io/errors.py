"""Errors and warnings of the model loaders."""

from __future__ import annotations

from collections.abc import Callable
from typing import ParamSpec, TypeVar

import numpy as np

P = ParamSpec("P")
R = TypeVar("R")


class LoadError(ValueError):
    """A robot description that jaxdyn cannot load; the message names the element at fault.

    :class:`~jaxdyn.io.urdf.URDFError` and :class:`~jaxdyn.io.mjcf.MJCFError` derive from it, so
    ``except jaxdyn.LoadError`` catches a refusal from either loader."""


class InertiaWarning(UserWarning):
    """A body's inertia is not physically consistent, or was repaired (``inertia="fix"``)."""


LIMIT_FIELDS = frozenset({"q_lower", "q_upper", "velocity_limit", "effort_limit"})
BODY_FIELDS = frozenset({"placement_R", "placement_p", "axis", "mass", "com", "inertia"})


def check_finite_model(model, error: type[Exception]) -> None:
    """Raise ``error`` naming the field (and body) when a loaded model holds a non-finite number
    in its dtype: values that were finite as written can overflow when links are merged or when
    they are cast to float32. Limits may be infinite. Where the values are known in Python: a
    field traced by an enclosing ``jit`` (a model loaded inside it) is not read."""
    fields = [(f, getattr(model, f)) for f in model.__dataclass_fields__ if f not in LIMIT_FIELDS]
    geoms = getattr(model, "geoms", None)
    if geoms is not None:
        fields += [(f"geoms.{f}", getattr(geoms, f)) for f in geoms.__dataclass_fields__]
    for f, x in fields:
        if not hasattr(x, "dtype") or not np.issubdtype(np.dtype(x.dtype), np.floating):
            continue
        v = _value(x)
        if v is None:
            continue
        bad = ~np.isfinite(v)
        if np.any(bad):
            idx = np.argwhere(bad)[0]
            who = f" (body '{model.body_names[idx[0]]}')" if f in BODY_FIELDS and len(idx) else ""
            raise error(f"model '{model.name}': {f}{who} is not finite in {v.dtype} (values too large for the dtype)")


def shapes(model) -> dict:
    """The shape of every array field of a :class:`~jaxdyn.Model`, from its topology."""
    nb, nq, nv, nf = model.nb, model.nq, model.nv, len(model.frame_names)
    return {
        "placement_R": (nb, 3, 3),
        "placement_p": (nb, 3),
        "axis": (nb, 3),
        "mass": (nb,),
        "com": (nb, 3),
        "inertia": (nb, 3, 3),
        "gravity": (3,),
        "frame_R": (nf, 3, 3),
        "frame_p": (nf, 3),
        "q_lower": (nq,),
        "q_upper": (nq,),
        "velocity_limit": (nv,),
        "effort_limit": (nv,),
        "damping": (nv,),
        "friction": (nv,),
        "armature": (nv,),
        "stiffness": (nv,),
        "spring_reference": (nq,),
    }


def _value(x):
    """``x`` as a NumPy array, or ``None`` when it is traced (``jit``, ``vmap``, ``grad``)."""
    import jax

    try:
        return np.asarray(x)
    except (jax.errors.TracerArrayConversionError, jax.errors.ConcretizationTypeError):
        return None


def check_model(model, inertia: str = "warn", where: str = "") -> None:
    """The loaders' rules applied to a :class:`~jaxdyn.Model` (:meth:`jaxdyn.Model.check`):
    array shapes from the topology and a floating dtype (always: shapes are known while
    tracing); finite numbers (limits may be infinite, not NaN), non-negative masses, no moving
    subtree without mass or inertia, and, by ``inertia`` (``"warn"``, ``"strict"`` or
    ``"skip"``), physically consistent inertias, for the fields whose values are known in
    Python (traced ones are skipped). Raise ``ValueError`` naming the model, the field and the
    body."""
    from .inertia import inconsistency

    if inertia not in ("warn", "strict", "skip"):
        raise ValueError(f"inertia must be 'warn', 'strict' or 'skip', got {inertia!r}")
    head = f"{where}model '{model.name}'"
    for f, shape in shapes(model).items():
        x = getattr(model, f)
        if not hasattr(x, "shape") or tuple(x.shape) != shape:
            got = tuple(x.shape) if hasattr(x, "shape") else type(x).__name__
            raise ValueError(f"{head}: {f} must have shape {shape} (from its topology), got {got}")
        if not np.issubdtype(np.dtype(x.dtype), np.floating):
            raise ValueError(f"{head}: {f} must be floating-point, got {x.dtype}")
    from .. import joints

    want = joints.params_of(model.joint_types)
    if sorted(model.joint_params) != sorted(want):
        raise ValueError(
            f"{head}: joint_params must hold {list(want)} (the parameters of its joint types), got {list(model.joint_params)}"
        )
    for k, x in model.joint_params.items():
        if tuple(np.shape(x)) != (model.nb,):
            raise ValueError(f"{head}: joint_params['{k}'] must have shape ({model.nb},), got {tuple(np.shape(x))}")
        v = _value(x)
        if v is not None and not np.all(np.isfinite(v)):
            raise ValueError(f"{head}: joint_params['{k}'] is not finite")
    for f in shapes(model):
        v = _value(getattr(model, f))
        if v is None:
            continue
        bad = np.isnan(v) if f in LIMIT_FIELDS else ~np.isfinite(v)
        if np.any(bad):
            idx = np.argwhere(bad)[0]
            who = f" (body '{model.body_names[idx[0]]}')" if f in BODY_FIELDS else ""
            raise ValueError(f"{head}: {f}{who} is not finite: {v[tuple(idx)]}")
    m, I = _value(model.mass), _value(model.inertia)
    if m is None or I is None:
        return
    if np.any(m < 0):
        neg = int(np.flatnonzero(m < 0)[0])
        raise ValueError(f"{head}: body '{model.body_names[neg]}' has a negative mass {m[neg]:g} (masses must be >= 0)")
    sub_m, sub_I = m.astype(np.float64).copy(), np.abs(I).sum((1, 2)).astype(np.float64)
    for b in range(model.nb - 1, -1, -1):
        if model.parents[b] >= 0:
            sub_m[model.parents[b]] += sub_m[b]
            sub_I[model.parents[b]] += sub_I[b]
    for b in range(model.nb):
        if sub_m[b] <= 0 and sub_I[b] <= 0:
            raise ValueError(
                f"{head}: joint '{model.joint_names[b]}' moves body '{model.body_names[b]}', which carries no "
                "mass or inertia (nor does anything attached to it): forward dynamics would divide by zero"
            )
    if inertia == "skip":
        return
    found = []
    for b in range(model.nb):
        why = inconsistency(float(m[b]), 0.5 * (I[b] + I[b].T))
        if why is not None:
            found.append(f"body '{model.body_names[b]}': {why}")
    if found and inertia == "strict":
        raise ValueError(f"{head}: inertia not physically consistent: {found[0]}")
    if found:
        import warnings

        warnings.warn(f"{head}: inertia not physically consistent: " + "; ".join(found), InertiaWarning, stacklevel=3)


def loads_eagerly(load: Callable[P, R]) -> Callable[P, R]:
    """Run the loader ``load`` with its array operations evaluated at once, also inside an
    enclosing ``jit``, ``vmap`` or ``grad`` (``jax.ensure_compile_time_eval``): a file's numbers
    are constants, so the model is concrete there too and every check reads its values."""
    import functools

    import jax

    @functools.wraps(load)
    def wrapped(*args: P.args, **kwargs: P.kwargs) -> R:
        with jax.ensure_compile_time_eval():
            return load(*args, **kwargs)

    return wrapped


def source_text(source, fn: str, kind: str) -> str:
    """A loader's ``source`` (a path, or the XML text as ``str`` or ``bytes``) as a string; anything
    else is refused naming what was given (a model already loaded, an array)."""
    import os

    if isinstance(source, bytes):
        return source.decode("utf-8")
    if isinstance(source, (str, os.PathLike)):
        return str(os.fspath(source))
    from ..model import Model

    got = (
        "a jaxdyn.Model, which is already loaded: use it as it is"
        if isinstance(source, Model)
        else type(source).__name__
    )
    raise TypeError(f"{fn}: the source must be a path to a {kind} file or its XML text, got {got}")


def robot_name_hint(text: str) -> str:
    """`` (a robot's name? ...)`` where a missing file's name is that of a robot
    :func:`jaxdyn.load_robot` knows, else ``""``."""
    from ..robots import available_robots

    return f" (a robot's name? load it with jaxdyn.load_robot('{text}'))" if text in available_robots() else ""
