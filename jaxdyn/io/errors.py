"""Errors and warnings of the model loaders."""

from __future__ import annotations


class LoadError(ValueError):
    """A robot description that jaxdyn cannot load; the message names the element at fault.

    :class:`~jaxdyn.io.urdf.URDFError` and :class:`~jaxdyn.io.mjcf.MJCFError` derive from it, so
    ``except jaxdyn.LoadError`` catches a refusal from either loader."""


class InertiaWarning(UserWarning):
    """A body's inertia is not physically consistent, or was repaired (``inertia="fix"``)."""
