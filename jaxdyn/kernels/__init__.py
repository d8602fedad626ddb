"""Fast paths for batches: struct-of-arrays (SoA) kernels (see :mod:`jaxdyn.kernels.soa`).

``aba_batch(model, q, qd, tau, f_ext=None)``, ``rnea_batch(model, q, qd, qdd, f_ext=None)``,
``crba_batch(model, q)`` and ``aba_jacobian_batch(model, q, qd, tau)`` take ``(B, nq)``/``(B, nv)``
arrays and give the same numbers as ``jax.vmap`` of :func:`jaxdyn.aba`, :func:`jaxdyn.rnea`,
:func:`jaxdyn.crba` and ``jax.jacfwd(jaxdyn.aba)``. The first three are what those functions run
under ``jax.vmap`` over the state (:mod:`jaxdyn.batching`), so they rarely need calling directly;
``aba_jacobian_batch`` is reached only here. ``traversal="auto" | "unroll" | "scan"`` (default:
the planner's, :func:`jaxdyn.planner.kernel_traversal`) picks how they walk the tree.

Compile them with ``jax.jit``. On a CPU ``aba_jacobian_batch`` needs
``compiler_options=``:data:`COMPILER_OPTIONS` (XLA instruction fusion off: under a plain ``jit``
panda's did not finish compiling in 17 minutes): called outside a trace it compiles itself so;
inside a caller's ``jax.jit``, pass them to that ``jit``. On a GPU backend the scanned traversals stack each link
step's outputs into one array (fewer XLA kernels per link step). The fused Pallas kernels are in
:mod:`jaxdyn.kernels.pallas`.
"""

from .soa import (
    COMPILER_OPTIONS,
    aba_batch,
    aba_jacobian_batch,
    crba_batch,
    rnea_batch,
)

__all__ = [
    "COMPILER_OPTIONS",
    "aba_batch",
    "aba_jacobian_batch",
    "crba_batch",
    "rnea_batch",
]
