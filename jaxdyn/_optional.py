"""Optional dependencies, imported where they are used, with a clear message when absent."""

from __future__ import annotations

import importlib


def require(module: str, extra: str, what: str):
    """Import ``module`` or raise an ImportError saying which extra installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise ImportError(f'{what} needs {module.split(".")[0]}: pip install "jaxdyn[{extra}]"') from e
