"""Fused Pallas kernels for batched forward (ABA) and inverse (RNEA) dynamics and the mass matrix
(CRBA), specialised to one model (:func:`aba_pallas`, :func:`rnea_pallas`, :func:`crba_pallas`),
and the Jacobian of ABA from fused forward-mode derivatives of the ABA and RNEA kernels
(:func:`aba_jacobian_pallas`).

The struct-of-arrays ABA of :mod:`jaxdyn.kernels.soa` (unrolled over links; equations and seed
references there) is traced inside one ``pallas_call`` body: each program of the grid loads a
block of ``block`` samples of every input coordinate, runs the whole recursion on them in
registers and writes ``qdd``: one GPU kernel per call, no intermediate in device memory. The
model's numbers are folded in as constants (:class:`~jaxdyn.kernels.soa_common.Constants`), so the
kernel is specialised to the robot (like generated code) and is not differentiable w.r.t. the
model; it is for forward simulation at scale. Results equal :func:`jaxdyn.kernels.aba_batch`
to rounding. For robots with more than :data:`jaxdyn.planner.PALLAS_MAX_LINKS` links (whose straight-line
Triton programs take minutes to compile) the ABA, RNEA and CRBA instead loop over the links
inside the kernel (``traversal="scan"``, :mod:`jaxdyn.kernels.pallas_scan`).

Inputs are split into one ``(B,)`` column per coordinate outside the kernel (Triton wants
power-of-two block shapes); ``B`` is padded to a multiple of ``block``.

Status: written for GPUs (Triton backend of Pallas); checked in Pallas interpret mode on CPU
(``interpret=True``, the default off-GPU) against the plain kernels, and lowered for CUDA on CPU
(``jax.export``, tested). On an H100 (jax 0.11.2, ``benchmarks/results/h100-2026-11-23.md``),
at 2^20 samples: ABA 2.5e9 samples/s (ur5) and 1.2e9 (panda), 32-41x frax's forward dynamics,
and 81 / 89 us for one sample; RNEA 3.2e9 / 1.7e9; CRBA 1.4e9 / 6.4e8. At 131,072 samples the
Jacobian of ABA ran at 2.0e8 / 9.6e7, 61-65x frax's ``jacfwd``. All were within 5e-7 of the
generic path. Compile times on the H100 host: ABA 3.5 s (ur5) and 25 s (panda); RNEA
1.2 / 4.5 s; CRBA 0.8 / 7 s; Jacobian 5.4 / 33 s. A deviceless H100 compile
(``benchmarks/gpu_aot.py``) ran over 240 s for talos's ABA (32 links): the harness runs each
kernel up to its :data:`jaxdyn.planner.PALLAS_MAX_LINKS` entry.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from .. import planner
from ..model import Model
from ._checks import check_args
from .soa_algebra import SoAAlgebra
from .soa_common import Constants, check_joints
from .soa_unrolled import aba_unroll, crba_unroll, rnea_unroll


def aba_pallas(
    model: Model,
    *,
    block: int = 128,
    interpret: bool | None = None,
    num_warps: int | None = None,
    traversal: str | None = None,
):
    """Build ``f(q (B, nq), qd (B, nv), tau (B, nv)) -> qdd (B, nv)`` as one Pallas kernel.

    Args:
      model: a concrete :class:`jaxdyn.Model` (its numbers are baked in; no spherical joints).
      block: samples per program (a power of two).
      traversal: ``"unroll"`` (the whole recursion straight-line, fastest for small robots),
        ``"scan"`` (a loop over links, :mod:`jaxdyn.kernels.pallas_scan`; compile time flat in
        the number of links) or ``"auto"`` (:func:`jaxdyn.planner.pallas_traversal`); default (``None``): the planner's.
        The looped ABA works in aligned frames (each link's quantities at its origin
        with the root's axes, as the scanned :func:`jaxdyn.kernels.aba_batch`), the unrolled one
        in body frames.
      interpret: run the kernel in Pallas interpret mode; default: True unless the default
        backend is a GPU.
      num_warps: Triton warps per program (default: Triton's choice). The kernels are lowered
        with Triton: their bodies are elementwise math on 1-D blocks, which Triton maps onto
        threads directly.
    """
    if planner.pallas_traversal(model, "aba_pallas", traversal) == "scan":
        return _looped(model, "aba", block, interpret, num_warps)
    return _fused(
        model,
        "aba_pallas",
        lambda c, q, qd, tau: aba_unroll(SoAAlgebra(), model, c, q, qd, tau, None),
        ("q", "qd", "tau"),
        block,
        interpret,
        num_warps,
    )


def rnea_pallas(
    model: Model,
    *,
    block: int = 128,
    interpret: bool | None = None,
    num_warps: int | None = None,
    traversal: str | None = None,
):
    """Build ``f(q (B, nq), qd (B, nv), qdd (B, nv)) -> tau (B, nv)``: inverse dynamics (the
    SoA RNEA of :mod:`jaxdyn.kernels.soa`, Rodriguez86's outward velocity/acceleration and
    inward force recursions) as one Pallas kernel, the model folded in. Arguments as
    :func:`aba_pallas`."""
    if planner.pallas_traversal(model, "rnea_pallas", traversal) == "scan":
        return _looped(model, "rnea", block, interpret, num_warps)
    return _fused(
        model,
        "rnea_pallas",
        lambda c, q, qd, qdd: rnea_unroll(SoAAlgebra(), model, c, q, qd, qdd, None),
        ("q", "qd", "qdd"),
        block,
        interpret,
        num_warps,
    )


def _looped(model, algo, block, interpret, num_warps):
    from .pallas_scan import looped

    return looped(model, algo, block=block, interpret=interpret, num_warps=num_warps)


def crba_pallas(
    model: Model,
    *,
    block: int = 128,
    interpret: bool | None = None,
    num_warps: int | None = None,
    traversal: str | None = None,
):
    """Build ``f(q (B, nq)) -> M (B, nv, nv)``: the joint-space mass matrix (armature included;
    the composite-rigid-body algorithm of :mod:`jaxdyn.kernels.soa`, Featherstone table 6.2,
    Rodriguez86 (7.7)-(7.11)) as one Pallas kernel, the model folded in. Arguments as
    :func:`aba_pallas`."""
    if planner.pallas_traversal(model, "crba_pallas", traversal) == "scan":
        return _looped(model, "crba", block, interpret, num_warps)
    return mass_matrix_kernel(model, crba_unroll, block, interpret, num_warps)


def mass_matrix_kernel(model, rows, block, interpret, num_warps):
    """``f(q (B, nq)) -> M (B, nv, nv)``: one Pallas kernel of ``rows(model, constants, qT)``, a
    mass matrix's ``nv * nv`` row-major scalars (:func:`jaxdyn.kernels.soa_unrolled.crba_unroll`
    with body-frame inputs; ``benchmarks/crba_frames_ab.py`` passes it with ``frames="common"``)."""
    nv = model.nv
    f = _fused(
        model,
        "crba_pallas",
        lambda c, q: rows(SoAAlgebra(), model, c, q),
        ("q",),
        block,
        interpret,
        num_warps,
        out_width=nv * nv,
    )
    return lambda q: f(q).reshape(q.shape[0], nv, nv)


def aba_jacobian_pallas(
    model: Model,
    *,
    block: int = 128,
    interpret: bool | None = None,
    num_warps: int | None = None,
):
    """Build ``f(q, qd, tau) -> (dqdd/dq (B, nv, nq), dqdd/dqd (B, nv, nv), dqdd/dtau (B, nv, nv))``,
    the per-sample Jacobians of forward dynamics, from fused kernels and the inverse-dynamics
    identity (implicit differentiation of ``ID(q, qd, FD(q, qd, tau)) = tau``, Carpentier &
    Mansard, "Analytical derivatives of rigid body dynamics algorithms", RSS 2018, eq. (8))::

        dqdd/dq = -M^-1 dID/dq,   dqdd/dqd = -M^-1 dID/dqd,   dqdd/dtau = M^-1,

    with ``ID`` evaluated at ``qdd = FD(q, qd, tau)`` (``M`` includes the armature, as both
    kernels do). Four fused programs: :func:`aba_pallas` for ``qdd``; :func:`rnea_pallas` in
    forward mode with tangents in ``q`` only and in ``qd`` only (``vmap``ped over the ``nq`` and
    ``nv`` directions, one-hot for every sample); ``M^-1`` applied to the ``nq + 2 nv`` columns
    as the forward-mode derivative of :func:`aba_pallas` in ``tau`` alone (linear in ``tau``: no
    tangent of the articulated inertias). Each kernel body calls ``jax.jvp`` on the unrolled
    recursion with a tangent in one argument only, so each program carries only what its
    direction needs: compiling it is cheaper than the full tangent of ABA in ``(q, qd, tau)``
    (panda: 33 s on the H100 host; the full tangent had not finished after 170 s,
    ``benchmarks/results/h100-2026-11-23.md``). Same numbers as
    ``vmap(jacfwd(jaxdyn.aba, argnums=(1, 2, 3)))`` (``q`` in its coordinates, quaternion
    included). Arguments as :func:`aba_pallas`."""
    nq, nv, dt = model.nq, model.nv, model.dtype
    args = (block, interpret, num_warps)
    check_joints(model, "aba_jacobian_pallas")

    def tangent(fn, wrt):  # the forward-mode derivative of fn in its argument `wrt` alone
        def body(c, *groups):
            primal, dx = list(groups[:3]), groups[3]
            g = lambda x: fn(SoAAlgebra(), model, c, *primal[:wrt], x, *primal[wrt + 1 :], None)  # noqa: E731
            return jax.jvp(g, (primal[wrt],), (dx,))[1]

        return body

    names = ("q", "qd", "x", "dx")
    fd = aba_pallas(model, block=block, interpret=interpret, num_warps=num_warps)
    did_dq = _fused(model, "aba_jacobian_pallas", tangent(rnea_unroll, 0), names, *args, tangent_of_q=True)
    did_dqd = _fused(model, "aba_jacobian_pallas", tangent(rnea_unroll, 1), names, *args)
    minv = _fused(model, "aba_jacobian_pallas", tangent(aba_unroll, 2), names, *args)

    def jac(q, qd, tau):
        q, qd, tau = (jnp.asarray(x, dt) for x in (q, qd, tau))
        check_args("aba_jacobian_pallas", model, ("q", "qd", "tau"), (q, qd, tau), (nq, nv, nv))
        qdd = fd(q, qd, tau)
        one_hot = lambda x, n: jnp.broadcast_to(jnp.eye(n, dtype=dt)[:, None, :], (n,) + x.shape)  # noqa: E731
        each = lambda k, x, d: jax.vmap(lambda t: k(q, qd, x, t))(d)  # noqa: E731
        rhs = jnp.concatenate(
            [-each(did_dq, qdd, one_hot(q, nq)), -each(did_dqd, qdd, one_hot(qd, nv)), one_hot(tau, nv)]
        )  # (nq + 2 nv, B, nv)
        J = jnp.moveaxis(each(minv, tau, rhs), 0, -1)  # M^-1 rhs: (B, nv, nq + 2 nv)
        return J[..., :nq], J[..., nq : nq + nv], J[..., nq + nv :]

    return jac


def _fused(model, name, body, arg_names, block, interpret, num_warps, tangent_of_q=False, out_width=None):
    """One Pallas kernel running ``body(Constants(model), *groups)`` on a block of samples per
    program, each group a list of ``(block,)`` columns: the first argument is ``q (B, nq)``, the
    others ``(B, nv)`` (the last ``(B, nq)`` with ``tangent_of_q``); the output is ``(B, nv)``
    (``(B, out_width)`` if given). Pallas's own JVP rule for ``pallas_call`` is
    not used (it mis-counts its block mappings when some tangents are symbolic zeros, jax
    0.10.2): derivatives are taken inside ``body``."""
    from jax.experimental import pallas as pl

    check_joints(model, name)
    if block < 1 or block & (block - 1):
        raise ValueError(f"{name}: block must be a power of two, got {block}")
    if interpret is None:
        interpret = jax.default_backend() != "gpu"
    from jax.experimental.pallas import triton as pltriton

    params = pltriton.CompilerParams(num_warps=num_warps, num_stages=1)
    consts = Constants(model)
    nq, nv, dt = model.nq, model.nv, model.dtype
    nout = nv if out_width is None else out_width
    widths = (nq,) + (nv,) * (len(arg_names) - 1)
    if tangent_of_q:
        widths = widths[:-1] + (nq,)
    starts = [sum(widths[:k]) for k in range(len(widths) + 1)]

    def kernel(*refs):
        ins, outs = refs[: starts[-1]], refs[starts[-1] :]
        cols = [r[...] for r in ins]
        res = body(consts, *[cols[a:b] for a, b in zip(starts[:-1], starts[1:])])
        for o, x in zip(outs, res):
            o[...] = jnp.broadcast_to(jnp.asarray(x, dt), (block,))

    spec = pl.BlockSpec((block,), lambda i: (i,))

    def f(*xs):
        xs = tuple(jnp.asarray(x, dt) for x in xs)
        B = check_args(name, model, arg_names, xs, widths)
        Bp = -(-B // block) * block
        cols = [jnp.pad(x[:, k], (0, Bp - B)) for x in xs for k in range(x.shape[1])]
        if model.floating_base:  # padded samples need a unit quaternion
            cols[3] = cols[3].at[B:].set(1.0)
        out = pl.pallas_call(
            kernel,
            out_shape=[jax.ShapeDtypeStruct((Bp,), dt)] * nout,
            grid=(Bp // block,),
            in_specs=[spec] * len(cols),
            out_specs=[spec] * nout,
            interpret=interpret,
            compiler_params=None if interpret else params,
        )(*cols)
        return jnp.stack(out, -1)[:B]

    return f
