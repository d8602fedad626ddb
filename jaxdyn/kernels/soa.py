"""Struct-of-arrays (SoA) batched kernels: ABA, RNEA, CRBA and the ABA Jacobian over a batch.

The generic algorithms (:mod:`jaxdyn.algorithms`) work on one sample with ``(3,3)``/``(6,6)``
arrays and are batched by ``jax.vmap``; on XLA CPU every small matrix product then becomes its
own reduce, which breaks fusion (hundreds of tiny kernels per call). Here the batch is the
*last* axis and every scalar of the recursion is its own ``(B,)`` array: a 3-vector is a tuple
of 3 arrays, a rotation 9, a symmetric 3x3 its 6 upper entries, an articulated inertia
``[[A, B], [B^T, C]]`` its 21 independent entries ``(A sym 6, B 9, C sym 6)`` and a rigid inertia
``(m, h (3), Ibar sym 6)``. All arithmetic is elementwise, so XLA fuses whole link steps into a
few loop kernels, vectorised over the batch (SIMD lanes on CPU, coalesced threads on GPU).

Two traversals (``traversal=`` of each kernel, default ``"auto"``): ``"unroll"`` is a Python
loop over links with static parents and joint types (fastest per sample; compile time grows
with the number of links), ``"scan"`` runs the same link steps through
:func:`jaxdyn.tree.scatter`/:func:`~jaxdyn.tree.gather` (``lax.scan`` over links; compile time
flat in the number of links; the joint data are then arrays, with a type-agnostic
revolute/prismatic transform). The default is the planner's (:func:`jaxdyn.planner.kernel_traversal`:
the override of :func:`jaxdyn.executor`, whose single-sample ``"latency"`` is ``"unroll"`` here,
else unrolled up to :data:`jaxdyn.planner.SOA_UNROLL_MAX_LINKS` moving links). This module holds
the entry points; the
traversals are :mod:`jaxdyn.kernels.soa_unrolled` and :mod:`jaxdyn.kernels.soa_scanned`, what they
share (model numbers, joint transforms, arguments, the SoA link steps)
:mod:`jaxdyn.kernels.soa_common`.

Structural zeros (the empty half of a motion subspace, the zero velocity of the world, the
zero entries of skew matrices) are Python ``0.0`` literals at trace time and are skipped by the
arithmetic of :mod:`jaxdyn.scalars`, so they cost nothing; the SoA spatial algebra
(:class:`~jaxdyn.kernels.soa_algebra.SoAAlgebra`) is in :mod:`jaxdyn.kernels.soa_algebra`. Model numbers
(placements, axes, masses, centres of mass, inertias, gravity, armature) stay JAX arrays read
from the model: the kernels are differentiable w.r.t. the model and can take it as a ``jit``
argument (see benchmarks/results/kernels-cpu.md for compile times per traversal).

Equations are those of :mod:`jaxdyn.algorithms` (Rodriguez86; Featherstone08, tables 5.1, 6.2,
7.1; keys in docs/references.md):

* joint transform ``X = placement o X_J(q)``; with Rodrigues' formula for a unit axis ``u``,
  ``R_J = u u^T + cos q (1 - u u^T) + sin q [u]x``, so ``R = A0 + cos q A1 + sin q A2`` with the
  model-only matrices ``A0 = R0 u u^T``, ``A1 = R0 - A0``, ``A2 = R0 [u]x`` (prismatic:
  ``R = R0``, ``p = p0 + q R0 u``);
* RNEA: the link steps of :mod:`jaxdyn.algorithms.rnea` themselves
  (:func:`~jaxdyn.algorithms.rnea.forward_step`, :func:`~jaxdyn.algorithms.rnea.backward_step`),
  run with :class:`SoAAlgebra`;
* ABA (Rodriguez86 Result 8.1, (8.3)-(8.13)): the link steps of :mod:`jaxdyn.algorithms.aba`
  (``velocity_step``, ``bias_force``, ``filter_step``, ``to_parent``, ``smooth_step``) run with
  :class:`SoAAlgebra`: inward ``U = P S``, ``D = S^T U + armature``,
  ``e = tau - S^T z``, ``P+ = P - U D^-1 U^T``, ``z+ = z + P+ c + U D^-1 e``,
  ``P_p += X* P+ X``, ``z_p += X* z+``; outward ``a' = X^-1 a_p + c``,
  ``qdd = D^-1 (e - U^T a')``, ``a = a' + S qdd``; world acceleration ``[0; -g]``. The scanned
  traversals write these in *aligned* frames (see :func:`jaxdyn.kernels.soa_scanned.aba_tree`), where ``X`` is a translation;
* CRBA (Rodriguez86 (7.7)-(7.11); Featherstone table 6.2): composite inertias
  ``Ic_p += X* Ic X`` (rigid, compact), ``F = Ic_i S_i``, ``M_ii = S_i^T F + armature``, then
  ``F <- X* F`` up the ancestors ``j``: ``M_ji = S_j^T F``.

A free-floating root (``joint_types[0] == "free"``, ``q = [x, y, z, qw, qx, qy, qz]``,
body-frame velocity ``[omega; v]``, as :func:`jaxdyn.aba`) has ``S = 1_6``: its ABA step solves
``D qdd = e - P a'`` with an unrolled ``L D L^T`` factorisation of the 6x6 ``D``. A spherical
joint (``q`` a unit quaternion ``[w, x, y, z]``, velocity the angular velocity in the child frame,
as :func:`jaxdyn.joints.link_poses`) is the same steps with ``R = R0 R(q)`` and the three
columns ``S = [1_3; 0]``: its ``D`` is 3x3, solved the same way. In the scanned traversals every
link of a model with a spherical joint then has three dof slots (a 1-dof link's two extra
columns of ``S`` are zeros, their ``D`` entries 1, their ``qdd`` 0), as in the one-sample
algorithms' layout.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from .. import planner
from ..model import Model, layout
from .soa_algebra import (
    SoAAlgebra,
)
from .soa_common import (
    _rows,
    finish,
    model_numbers,
    prepare,
)
from .soa_scanned import (
    aba_tree,
    crba_tree,
    rnea_tree,
)
from .soa_unrolled import (
    aba_unroll,
    rnea_unroll,
)

# --- public entry points ---------------------------------------------------------------------------


def _run(model, fn, unrolled, scanned, traversal, chunk, pack, **args):
    B, single, a = prepare(model, fn, **args)
    nums = model_numbers(model)
    t = planner.kernel_traversal(model, traversal)
    vals = list(a.values())

    def rows_of(*vals):
        alg = SoAAlgebra.for_batch(vals[0])
        if t == "unroll":
            return _rows(unrolled(alg, model, nums, *vals), vals[0].shape[-1], model.dtype)
        return scanned(alg, model, layout(model.topology, t), nums, *vals, pack=pack)

    return finish(_map_chunks(rows_of, vals, B, chunk, fn), B, model.dtype, single, (model.nv,))


def _map_chunks(rows_of, vals, B, chunk, fn):
    """``rows_of(*vals)`` (batch-last arrays in, ``(k, B)`` out), in chunks of ``chunk`` samples
    (padded by repeating the last sample; the padding is dropped)."""
    c = planner.chunk(chunk, B, fn)
    if c is None:
        return rows_of(*vals)
    n = -(-B // c)
    pad = lambda x: jnp.concatenate([x, jnp.repeat(x[..., -1:], n * c - B, -1)], -1)  # noqa: E731
    split = [None if x is None else jnp.moveaxis(pad(x).reshape(x.shape[:-1] + (n, c)), -2, 0) for x in vals]
    rows = jax.lax.map(lambda xs: rows_of(*xs), split)  # (n, k, c)
    return jnp.moveaxis(rows, 0, -2).reshape(rows.shape[1:-1] + (n * c,))[..., :B]


def aba_batch(model: Model, q, qd, tau, f_ext=None, *, traversal: str | None = None, chunk="auto", _pack=None):
    """Forward dynamics ``qdd = M^-1 (tau - C qd - g + sum J^T f_ext)`` for a batch, in SoA form.

    Same result as ``jax.vmap(jaxdyn.aba, in_axes=(None, 0, 0, 0))`` (armature included), with the
    Featherstone/Rodriguez recursion of the module docstring written on ``(B,)`` scalars.

    Args:
      model: a :class:`jaxdyn.Model` (any joint types).
      q ``(B, nq)``, qd ``(B, nv)``, tau ``(B, nv)``; a single sample ``(nq,)``/``(nv,)`` also works.
      f_ext: optional ``(B, nb, 6)`` body wrenches ``[moment; force]`` in body coordinates.
      traversal: ``"unroll"`` (a Python loop over links: fastest, compile time grows with the
        links), ``"scan"`` (:mod:`jaxdyn.tree` sweeps: compile time flat in the links) or
        ``"auto"`` (unroll up to :data:`jaxdyn.planner.SOA_UNROLL_MAX_LINKS` links). Default
        (``None``): the planner's (:func:`jaxdyn.planner.kernel_traversal`, which reads the
        override of :func:`jaxdyn.executor`; its ``"latency"`` is ``"unroll"`` here).
      chunk: process the batch ``chunk`` samples at a time (``lax.map``): bounded memory and
        cache-sized buffers; ``"auto"``: :data:`jaxdyn.planner.CPU_CHUNK` on CPU, the whole
        batch elsewhere;
        ``None``: the whole batch.
      _pack: private: force (True / False) whether the scanned traversals stack each link
        step's outputs into one array (:class:`jaxdyn.tree.Packed`); default: on a GPU backend.

    Returns: qdd ``(B, nv)`` (or ``(nv,)`` for a single sample).
    """
    return _run(model, "aba_batch", aba_unroll, aba_tree, traversal, chunk, _pack, q=q, qd=qd, tau=tau, f_ext=f_ext)


def rnea_batch(model: Model, q, qd, qdd, f_ext=None, *, traversal: str | None = None, chunk="auto", _pack=None):
    """Inverse dynamics ``tau = M qdd + C qd + g - sum J^T f_ext`` for a batch, in SoA form.

    Same result as ``jax.vmap(jaxdyn.rnea, in_axes=(None, 0, 0, 0))`` (armature included).
    Args as :func:`aba_batch` with ``qdd (B, nv)``; returns tau ``(B, nv)``.
    """
    return _run(model, "rnea_batch", rnea_unroll, rnea_tree, traversal, chunk, _pack, q=q, qd=qd, qdd=qdd, f_ext=f_ext)


def crba_batch(model: Model, q, *, traversal: str | None = None, chunk="auto", _pack=None):
    """Joint-space mass matrix ``M(q) + diag(armature)`` for a batch, in SoA form.

    Same result as ``jax.vmap(jaxdyn.crba, in_axes=(None, 0))``. Every traversal walks the tree
    through :mod:`jaxdyn.tree` (``"auto"``/``"unroll"`` unroll it with static parents).

    Args:
      model: a :class:`jaxdyn.Model` (any joint types).
      q: ``(B, nq)`` (or one ``(nq,)`` sample).
      traversal, chunk, _pack: as :func:`aba_batch`.

    Returns: M ``(B, nv, nv)`` (or ``(nv, nv)``).
    """
    B, single, a = prepare(model, "crba_batch", q=q)
    lay, nums = layout(model.topology, planner.kernel_traversal(model, traversal)), model_numbers(model)

    def rows_of(qT):
        return crba_tree(SoAAlgebra.for_batch(qT), model, lay, nums, qT, _pack)

    rows = _map_chunks(rows_of, [a["q"]], B, chunk, "crba_batch")
    return finish(rows, B, model.dtype, single, (model.nv, model.nv))


# The one program that still compiles best with XLA CPU's instruction fusion switched off:
# the kernel compiles itself so when called outside a trace (``_aba_jacobian_cpu``).
# Same-process A/B at batch 4096 (benchmarks/results/cpu-2026-11-25-fusion-ab.md): panda's
# unrolled Jacobian compiled in 116 s with fusion off and had not finished after 17 minutes
# under a plain ``jax.jit``; scanned under a plain ``jax.jit`` it compiled (53 s) but ran 3.1x
# slower than the unrolled one with fusion off. The option applies to one whole program: inside a
# caller's ``jax.jit`` the caller passes it; on other backends it is not needed. XLA CPU's fusion emitters
# (its default) are named explicitly: with fusion off and the earlier emitters
# (``--xla_cpu_use_fusion_emitters=false`` in ``XLA_FLAGS``) the panda Jacobian came out wrong
# (tests/test_kernels.py::test_aba_jacobian_batch_matches_jacfwd), so a process-wide flag must not
# reach this program.
COMPILER_OPTIONS = {"xla_disable_hlo_passes": "fusion", "xla_cpu_use_fusion_emitters": True}


# The Jacobian kernel holds one tangent copy of every intermediate per direction (nq + nv through
# the RNEA, nq + 2 nv through the ABA): by default it works through the batch this many samples
# at a time, on every backend. A deviceless H100 compile (benchmarks/results/gpu-aot-h100.md) of
# the earlier form (forward mode through the whole ABA) reserved 22 GB of temporaries for talos
# at 131,072 samples unchunked (168 KB per sample; 1.4 GB per chunk of 8192).
JACOBIAN_CHUNK = 8192


def aba_jacobian_batch(model: Model, q, qd, tau, *, traversal: str | None = None, chunk="auto", _pack=None):
    """Per-sample Jacobians of forward dynamics, ``d qdd / d (q, qd, tau)``, for a batch.

    From the inverse-dynamics identity (implicit differentiation of ``ID(q, qd, FD(q, qd, tau))
    = tau``; Carpentier & Mansard, "Analytical derivatives of rigid body dynamics algorithms",
    RSS 2018, eq. (8)): ``dqdd/dq = -M^-1 dID/dq``, ``dqdd/dqd = -M^-1 dID/dqd``,
    ``dqdd/dtau = M^-1``, with ``ID`` (:func:`rnea_batch`) at ``qdd = FD(q, qd, tau)``
    (:func:`aba_batch`). ``dID`` is forward mode through the RNEA with tangents in ``q`` only and
    in ``qd`` only; ``M^-1`` is applied as the forward-mode derivative of the ABA in ``tau``
    alone (linear: no tangent of the articulated inertias). Each ``jax.jvp`` uses the same
    one-hot tangent for every sample (samples are independent), ``vmap``ped over the
    coordinates. On the 2-core CPU at 4096 samples this is 2.4x (panda) and 3.3x (talos
    floating) faster than forward mode through the whole ABA. Same numbers as
    ``jax.vmap(jax.jacfwd(jaxdyn.aba, argnums=(1, 2, 3)))``.

    Args: as :func:`aba_batch` (batched ``(B, ...)`` inputs only); ``chunk``: samples per piece
      (``lax.map`` over pieces; ``"auto"``: :data:`JACOBIAN_CHUNK` on every backend, ``None``:
      the whole batch at once).

    On a CPU a call outside any trace compiles itself with ``compiler_options=``
    :data:`COMPILER_OPTIONS` (XLA instruction fusion off; see there). Traced inside a program of
    the caller (``jax.jit`` of a function that calls it), it is compiled with that program's
    options: pass :data:`COMPILER_OPTIONS` to that ``jax.jit`` on a CPU.

    Returns: ``(dq (B, nv, nq), dqd (B, nv, nv), dtau (B, nv, nv))``.
    """
    prepare(model, "aba_jacobian_batch", q=q, qd=qd, tau=tau)
    concrete = not any(isinstance(x, jax.core.Tracer) for x in jax.tree_util.tree_leaves((model, q, qd, tau)))
    if concrete and jax.default_backend() == "cpu":
        return _aba_jacobian_cpu(model, q, qd, tau, traversal=traversal, chunk=chunk, _pack=_pack)
    return _aba_jacobian(model, q, qd, tau, traversal=traversal, chunk=chunk, _pack=_pack)


def _aba_jacobian(model: Model, q, qd, tau, *, traversal=None, chunk="auto", _pack=None):
    """:func:`aba_jacobian_batch` itself."""
    B, single, _ = prepare(model, "aba_jacobian_batch", q=q, qd=qd, tau=tau)
    if single:
        raise ValueError(
            "aba_jacobian_batch: expects batched inputs (B, nq)/(B, nv); use jax.jacfwd(jaxdyn.aba) for one sample"
        )
    if chunk == "auto":
        chunk = JACOBIAN_CHUNK
    if chunk is not None and (not isinstance(chunk, int) or chunk < 1):
        raise ValueError(f"aba_jacobian_batch: argument 'chunk' must be a positive int, None or 'auto', got {chunk!r}")
    dt = model.dtype
    q, qd, tau = (jnp.asarray(x).astype(dt) for x in (q, qd, tau))
    nq, nv = model.nq, model.nv

    kw = {"traversal": traversal, "chunk": None, "_pack": _pack}
    fd = lambda q, qd, tau: aba_batch(model, q, qd, tau, **kw)  # noqa: E731
    inv = lambda q, qd, qdd: rnea_batch(model, q, qd, qdd, **kw)  # noqa: E731

    def directions(g, x, n):  # d g / d x along each coordinate (the same one-hot for every sample)
        return jax.vmap(lambda e: jax.jvp(g, (x,), (jnp.broadcast_to(e, x.shape),))[1])(jnp.eye(n, dtype=dt))

    def jacobian(q, qd, tau):
        qdd = fd(q, qd, tau)
        did_dq = directions(lambda x: inv(x, qd, qdd), q, nq)  # (nq, b, nv)
        did_dqd = directions(lambda x: inv(q, x, qdd), qd, nv)
        rhs = jnp.concatenate(
            [-did_dq, -did_dqd, jnp.broadcast_to(jnp.eye(nv, dtype=dt)[:, None, :], (nv,) + tau.shape)]
        )
        cols = jax.vmap(lambda t: jax.jvp(lambda x: fd(q, qd, x), (tau,), (t,))[1])(rhs)  # M^-1 rhs
        return jnp.moveaxis(cols, 0, -1)  # (b, nv, nq + 2 nv)

    if chunk is None or B <= chunk:
        J = jacobian(q, qd, tau)
    else:
        n = -(-B // chunk)
        pieces = [
            jnp.concatenate([x, jnp.repeat(x[-1:], n * chunk - B, 0)]).reshape((n, chunk) + x.shape[1:])
            for x in (q, qd, tau)
        ]
        J = jax.lax.map(lambda xs: jacobian(*xs), pieces).reshape((n * chunk, nv, nq + 2 * nv))[:B]
    return J[..., :nq], J[..., nq : nq + nv], J[..., nq + nv :]


# the kernel's CPU program, with the compiler options it needs (a call outside any trace)
_aba_jacobian_cpu = jax.jit(
    _aba_jacobian, static_argnames=("traversal", "chunk", "_pack"), compiler_options=COMPILER_OPTIONS
)
