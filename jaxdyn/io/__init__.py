"""Readers that turn robot descriptions into a :class:`~jaxdyn.Model`."""

from .errors import InertiaWarning, LoadError
from .urdf import URDFError, load_urdf

__all__ = ["InertiaWarning", "LoadError", "URDFError", "load_urdf"]
