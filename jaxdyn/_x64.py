"""A scoped float64 context for the command-line tools (the global JAX setting is left untouched)."""

from __future__ import annotations


def x64_context(enabled: bool):
    """A context with float64 enabled (scoped: the global JAX setting is left untouched)."""
    import contextlib

    import jax

    if not enabled:
        return contextlib.nullcontext()
    if hasattr(jax, "enable_x64"):
        return jax.enable_x64(True)
    from jax.experimental import enable_x64  # type: ignore[attr-defined]  # older JAX only

    return enable_x64()
