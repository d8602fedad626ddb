"""Arithmetic on scalars that may be Python-float constants.

The link steps are written once over "scalars": a float, a ``(B,)`` array, a Pallas block, or an
array over links. Where a number is a Python ``float`` it is a constant known at trace time (a
structural zero of a motion subspace or a skew matrix, or a model number folded into a kernel),
and these helpers fold it: a product with ``0.0`` is ``0.0`` and one with ``1.0`` is the other
factor, a ``0.0`` term drops out of a sum. With arrays they are the plain operations.
"""

from __future__ import annotations


def is_literal(x) -> bool:
    """Whether ``x`` is a constant known at trace time (a Python float)."""
    return isinstance(x, float)


def mul(a, b):
    """``a * b``, folding literal zeros and ones."""
    if is_literal(a):
        if a == 0.0:
            return 0.0
        if a == 1.0:
            return b
        if is_literal(b):
            return a * b
    if is_literal(b):
        if b == 0.0:
            return 0.0
        if b == 1.0:
            return a
    return a * b


def add(*xs):
    """The sum of ``xs``, dropping literal zeros (``0.0`` for an empty sum)."""
    out = 0.0
    for x in xs:
        if is_literal(x) and x == 0.0:
            continue
        out = x if (is_literal(out) and out == 0.0) else out + x
    return out


def neg(a):
    """``-a`` (``0.0`` stays ``0.0``)."""
    return 0.0 if (is_literal(a) and a == 0.0) else -a


def sub(a, b):
    """``a - b``, folding literal zeros."""
    return add(a, neg(b))
