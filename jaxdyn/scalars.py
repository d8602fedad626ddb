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


def ldl_factor(M):
    """``(L, d^-1)`` of an unrolled ``L diag(d) L^T`` factorisation of a symmetric positive
    definite ``n x n`` ``M`` (a list of rows of scalars, the lower triangle read; no pivoting is
    needed for SPD matrices): the joint-space blocks ``D = S^T P S`` of Rodriguez86 (8.5)."""
    n = len(M)
    LD = [[None] * n for _ in range(n)]  # L[i][k] * d[k]
    L = [[None] * n for _ in range(n)]
    d = [None] * n
    for j in range(n):
        d[j] = sub(M[j][j], add(*[mul(L[j][k], LD[j][k]) for k in range(j)]))
        inv = 1.0 / d[j]
        for i in range(j + 1, n):
            LD[i][j] = sub(M[i][j], add(*[mul(L[i][k], LD[j][k]) for k in range(j)]))
            L[i][j] = mul(LD[i][j], inv)
        d[j] = inv
    return L, d


def ldl_solve(factor, b):
    """``M^-1 b`` from :func:`ldl_factor`'s ``(L, d^-1)`` (``b`` a list of scalars): forward
    and back substitution."""
    L, d = factor
    n = len(b)
    y = []
    for i in range(n):
        y.append(sub(b[i], add(*[mul(L[i][k], y[k]) for k in range(i)])))
    x = [None] * n
    for i in reversed(range(n)):
        x[i] = sub(mul(y[i], d[i]), add(*[mul(L[k][i], x[k]) for k in range(i + 1, n)]))
    return x
