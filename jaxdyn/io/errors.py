"""Errors and warnings of the model loaders."""

from __future__ import annotations

import numpy as np


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
    they are cast to float32. Limits may be infinite."""
    fields = [(f, getattr(model, f)) for f in model.__dataclass_fields__ if f not in LIMIT_FIELDS]
    geoms = getattr(model, "geoms", None)
    if geoms is not None:
        fields += [(f"geoms.{f}", getattr(geoms, f)) for f in geoms.__dataclass_fields__]
    for f, x in fields:
        if not hasattr(x, "dtype") or not np.issubdtype(np.asarray(x).dtype, np.floating):
            continue
        bad = ~np.isfinite(np.asarray(x))
        if np.any(bad):
            idx = np.argwhere(bad)[0]
            who = f" (body '{model.body_names[idx[0]]}')" if f in BODY_FIELDS and len(idx) else ""
            raise error(
                f"model '{model.name}': {f}{who} is not finite in {np.asarray(x).dtype} "
                "(values too large for the dtype)"
            )
