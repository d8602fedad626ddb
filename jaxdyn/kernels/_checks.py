"""Argument checks shared by the fused kernels."""

from __future__ import annotations


def check_args(name, model, arg_names, xs, widths):
    """Each ``xs[k]`` must be ``(B, widths[k])`` with the first argument's ``B``; returns ``B``."""
    B = xs[0].shape[0] if xs[0].ndim else 0
    for arg, x, n in zip(arg_names, xs, widths):
        if x.ndim != 2 or x.shape[1] != n or x.shape[0] != B:
            raise ValueError(
                f"{name}: argument '{arg}' has shape {x.shape}, expected ({B}, {n}) for model '{model.name}'"
            )
    return B
