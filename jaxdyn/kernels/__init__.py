"""Fast paths for batches: struct-of-arrays (SoA) kernels (see :mod:`jaxdyn.kernels.soa`).

``aba_batch(model, q, qd, tau, f_ext=None)`` and ``rnea_batch(model, q, qd, qdd, f_ext=None)``
take ``(B, nq)``/``(B, nv)`` arrays and give the same numbers as ``jax.vmap`` of
:func:`jaxdyn.aba`/:func:`jaxdyn.rnea`; compile them with :func:`jit` on CPU (instruction fusion
off for these programs, see :data:`COMPILER_OPTIONS`).
"""

from .soa import (COMPILER_OPTIONS, SOA_UNROLL_MAX_LINKS, TRAVERSALS, aba_batch, aba_jacobian_batch, crba_batch, jit,
                  rnea_batch)

__all__ = ["COMPILER_OPTIONS", "SOA_UNROLL_MAX_LINKS", "TRAVERSALS", "aba_batch", "aba_jacobian_batch", "crba_batch", "jit", "rnea_batch"]
