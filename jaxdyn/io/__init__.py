"""Readers that turn robot descriptions into a :class:`~jaxdyn.Model`."""

from .errors import InertiaWarning, LoadError
from .mjcf import MJCFError, load_mjcf
from .urdf import URDFError, load_urdf

__all__ = ["InertiaWarning", "LoadError", "MJCFError", "URDFError", "load_mjcf", "load_urdf"]
