"""Fused Pallas kernels for batched forward (ABA) and inverse (RNEA) dynamics, specialised to one
model (:func:`aba_pallas`, :func:`rnea_pallas`), and the Jacobian of ABA by forward-mode
differentiation of the fused kernel (:func:`aba_jacobian_pallas`).

The struct-of-arrays ABA of :mod:`jaxdyn.kernels.soa` (unrolled over links; equations and seed
references there) is traced inside one ``pallas_call`` body: each program of the grid loads a
block of ``block`` samples of every input coordinate, runs the whole recursion on them in
registers and writes ``qdd``: one GPU kernel per call, no intermediate in device memory. The
model's numbers are folded in as constants (:class:`~jaxdyn.kernels.soa.Constants`), so the
kernel is specialised to the robot (like generated code) and is not differentiable w.r.t. the
model; it is for forward simulation at scale. Results equal :func:`jaxdyn.kernels.aba_batch`
to rounding.

Inputs are split into one ``(B,)`` column per coordinate outside the kernel (Triton wants
power-of-two block shapes); ``B`` is padded to a multiple of ``block``.

Status: written for GPUs (Triton backend of Pallas); checked in Pallas interpret mode on CPU
(``interpret=True``, the default off-GPU) against the plain kernels, and lowered for CUDA on CPU
(``jax.export``, tested). On an H100 (jax 0.11.2, ``benchmarks/results/h100-2026-11-23.md``)
it ran at 2.5e9 samples/s for ur5 and 1.2e9 for panda at 2^20 samples (32-41x frax's forward
dynamics) and 81 / 89 us for one sample, within 1.3e-7 of the generic path; compile 3.5 s
(ur5) and 25 s (panda). A deviceless H100 compile (``benchmarks/gpu_aot.py``) ran over 240 s
for talos (32 links): the harness runs each kernel up to its :data:`PALLAS_MAX_LINKS` entry.
:func:`rnea_pallas` and :func:`aba_jacobian_pallas` are tested the same way (interpret mode,
CUDA lowering) but have not run on a GPU yet; their deviceless compile times are in
``benchmarks/results/gpu-aot-h100.md``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ..model import Model
from .soa import Constants, _aba_unroll, _check_joints, _rnea_unroll


# Largest robot (scanned links) the benchmark harness compiles each kernel for: Triton's compile
# time grows steeply with the unrolled body (deviceless H100 compile of the ABA: 12 links 40 s,
# 32 > 240 s; of the RNEA: 12 links 5.7 s, 32 links 20 s).
PALLAS_MAX_LINKS = {"aba_pallas": 12, "aba_jacobian_pallas": 12, "rnea_pallas": 32}


def aba_pallas(model: Model, *, block: int = 128, interpret: bool | None = None, backend: str = "triton",
               num_warps: int | None = None):
    """Build ``f(q (B, nq), qd (B, nv), tau (B, nv)) -> qdd (B, nv)`` as one Pallas kernel.

    Args:
      model: a concrete :class:`jaxdyn.Model` (its numbers are baked in; no spherical joints).
      block: samples per program (a power of two).
      interpret: run the kernel in Pallas interpret mode; default: True unless the default
        backend is a GPU.
      backend: GPU lowering, ``"triton"`` (the default: the body is elementwise math on 1-D
        blocks, which Triton maps onto threads directly) or ``"mosaic"`` (Mosaic GPU, the
        default of ``pallas_call`` itself in jax >= 0.8, which warns that this use is deprecated).
      num_warps: Triton warps per program (default: Triton's choice).
    """
    return _fused(model, "aba_pallas", _aba_unroll, ("q", "qd", "tau"), block, interpret, backend, num_warps)


def rnea_pallas(model: Model, *, block: int = 128, interpret: bool | None = None, backend: str = "triton",
                num_warps: int | None = None):
    """Build ``f(q (B, nq), qd (B, nv), qdd (B, nv)) -> tau (B, nv)``: inverse dynamics (the
    unrolled SoA RNEA of :mod:`jaxdyn.kernels.soa`, seed 000's outward velocity/acceleration and
    inward force recursions) as one Pallas kernel, the model folded in. Arguments as
    :func:`aba_pallas`."""
    return _fused(model, "rnea_pallas", _rnea_unroll, ("q", "qd", "qdd"), block, interpret, backend, num_warps)


def aba_jacobian_pallas(model: Model, *, block: int = 128, interpret: bool | None = None, backend: str = "triton",
                        num_warps: int | None = None):
    """Build ``f(q, qd, tau) -> (dqdd/dq (B, nv, nq), dqdd/dqd (B, nv, nv), dqdd/dtau (B, nv, nv))``,
    the per-sample Jacobians of forward dynamics, as :func:`aba_pallas` differentiated in forward
    mode: one tangent direction per input coordinate, seeded for every sample at once (samples
    are independent), ``vmap``ped over the ``nq + 2 nv`` directions. Pallas differentiates the
    kernel body itself, so each direction is one fused kernel program computing the primal and
    its tangent in registers. Same numbers as ``vmap(jacfwd(jaxdyn.aba, argnums=(1, 2, 3)))``
    (``q`` in its coordinates, quaternion included). Arguments as :func:`aba_pallas`."""
    f = aba_pallas(model, block=block, interpret=interpret, backend=backend, num_warps=num_warps)
    nq, nv = model.nq, model.nv

    def jac(q, qd, tau):
        q, qd, tau = (jnp.asarray(x, model.dtype) for x in (q, qd, tau))

        def column(e):
            seeds = (jnp.broadcast_to(e[:nq], q.shape), jnp.broadcast_to(e[nq:nq + nv], qd.shape),
                     jnp.broadcast_to(e[nq + nv:], tau.shape))
            return jax.jvp(f, (q, qd, tau), seeds)[1]

        J = jnp.moveaxis(jax.vmap(column)(jnp.eye(nq + 2 * nv, dtype=model.dtype)), 0, -1)  # (B, nv, nq + 2 nv)
        return J[..., :nq], J[..., nq:nq + nv], J[..., nq + nv:]

    return jac


def _fused(model, name, unrolled, arg_names, block, interpret, backend, num_warps):
    """One Pallas kernel running ``unrolled(model, Constants(model), q, x1, x2, None)`` on a
    block of samples per program: inputs ``(B, nq), (B, nv), (B, nv)``, output ``(B, nv)``."""
    from jax.experimental import pallas as pl

    _check_joints(model, name)
    if block < 1 or block & (block - 1):
        raise ValueError(f"{name}: block must be a power of two, got {block}")
    if interpret is None:
        interpret = jax.default_backend() != "gpu"
    if backend == "triton":
        from jax.experimental.pallas import triton as pltriton
        params = pltriton.CompilerParams(num_warps=num_warps, num_stages=1)
    elif backend == "mosaic":
        from jax.experimental.pallas import mosaic_gpu as plmgpu
        params = plmgpu.CompilerParams()
    else:
        raise ValueError(f"{name}: backend must be 'triton' or 'mosaic', got {backend!r}")
    consts = Constants(model)
    nq, nv, dt = model.nq, model.nv, model.dtype

    def kernel(*refs):
        ins, outs = refs[:nq + 2 * nv], refs[nq + 2 * nv:]
        cols = [r[...] for r in ins]
        res = unrolled(model, consts, cols[:nq], cols[nq:nq + nv], cols[nq + nv:], None)
        for o, x in zip(outs, res):
            o[...] = jnp.broadcast_to(jnp.asarray(x, dt), (block,))

    spec = pl.BlockSpec((block,), lambda i: (i,))

    def f(q, x1, x2):
        q, x1, x2 = (jnp.asarray(x, dt) for x in (q, x1, x2))
        for arg, x, n in zip(arg_names, (q, x1, x2), (nq, nv, nv)):
            if x.ndim != 2 or x.shape[1] != n or x.shape[0] != q.shape[0]:
                raise ValueError(f"{name}: argument '{arg}' has shape {x.shape}, expected ({q.shape[0]}, {n}) "
                                 f"for model '{model.name}'")
        B = q.shape[0]
        Bp = -(-B // block) * block
        cols = [jnp.pad(x[:, k], (0, Bp - B)) for x in (q, x1, x2) for k in range(x.shape[1])]
        if model.floating_base:  # padded samples need a unit quaternion
            cols[3] = cols[3].at[B:].set(1.0)
        out = pl.pallas_call(kernel, out_shape=[jax.ShapeDtypeStruct((Bp,), dt)] * nv, grid=(Bp // block,),
                             in_specs=[spec] * len(cols), out_specs=[spec] * nv, interpret=interpret,
                             compiler_params=None if interpret else params)(*cols)
        return jnp.stack(out, -1)[:B]

    return f
