"""Fast paths for batches: struct-of-arrays (SoA) kernels (see :mod:`jaxdyn.kernels.soa`).

``aba_batch(model, q, qd, tau, f_ext=None)``, ``rnea_batch(model, q, qd, qdd, f_ext=None)``,
``crba_batch(model, q)`` and ``aba_jacobian_batch(model, q, qd, tau)`` take ``(B, nq)``/``(B, nv)``
arrays and give the same numbers as ``jax.vmap`` of :func:`jaxdyn.aba`, :func:`jaxdyn.rnea`,
:func:`jaxdyn.crba` and ``jax.jacfwd(jaxdyn.aba)``; ``traversal="auto" | "unroll" | "scan"`` (default: the model's)
picks how they walk the tree. Compile them with ``jax.jit``; on CPU,
``aba_jacobian_batch`` with ``compiler_options=``:data:`COMPILER_OPTIONS`. On a GPU backend the
scanned traversals stack each link step's outputs into one array (fewer XLA kernels per link
step). ``jaxdyn.sim.SimOptions(kernel="soa")`` routes batched
simulation through :func:`aba_batch`.
"""

from .soa import (
    COMPILER_OPTIONS,
    SOA_UNROLL_MAX_LINKS,
    TRAVERSALS,
    aba_batch,
    aba_jacobian_batch,
    crba_batch,
    rnea_batch,
)

__all__ = [
    "COMPILER_OPTIONS",
    "SOA_UNROLL_MAX_LINKS",
    "TRAVERSALS",
    "aba_batch",
    "aba_jacobian_batch",
    "crba_batch",
    "rnea_batch",
]
