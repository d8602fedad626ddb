"""Readers that turn robot descriptions into a :class:`~jaxdyn.Model`."""

from .urdf import URDFError, load_urdf

__all__ = ["URDFError", "load_urdf"]
