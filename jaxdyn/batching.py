"""The public ``aba``, ``rnea`` and ``crba``: one sample each, and the batch kernels under ``vmap``.

Each function takes one sample and computes it with the recursive algorithm of
:mod:`jaxdyn.algorithms`. Under ``jax.vmap`` over the state (the model not batched) a
``jax.custom_batching.custom_vmap`` rule sends the whole batch to the struct-of-arrays kernel of
:mod:`jaxdyn.kernels` (:func:`~jaxdyn.kernels.aba_batch`, :func:`~jaxdyn.kernels.rnea_batch`,
:func:`~jaxdyn.kernels.crba_batch`): the same link equations written on ``(B,)`` scalars, the
traversal (unrolled or scanned) chosen from the model's size. So the code a user writes first,
``jax.jit(jax.vmap(jaxdyn.aba, in_axes=(None, 0, 0, 0)))``, is the fast one, with no other call
and no special ``jit``.

The rule falls back to ``vmap`` of the one-sample algorithm when the model itself is batched
(``vmap`` over models, e.g. domain randomisation), and where the planner says so
(:func:`jaxdyn.planner.batch_kernel`: measured faster than the kernel, or the override of
:func:`jaxdyn.executor`).

Derivatives (``jvp``/``jacfwd``, ``grad``/``vjp``, any order, batched or not) are those of the
one-sample algorithm, batched by ``vmap`` where a batch is differentiated: each public function
is a ``jax.custom_jvp`` whose tangent rule differentiates the algorithm (for ABA its
implicit-differentiation rule, :func:`jaxdyn.algorithms.aba.aba`). So the kernel computes the
values of a batched call that is not differentiated, and differentiation never reaches the
``custom_vmap`` primitive, which JAX can linearise but not transpose. Measured on panda (float32,
batch 4,096, 2-core CPU): ``jit(grad)`` of a batched loss compiles in 11 s against 43 s through
the kernel's own recursion, and runs 4x slower (117 ms against 28 ms); for gradients of large
batches the kernels can still be differentiated directly (:func:`jaxdyn.kernels.aba_batch`).

To compare with the one-sample algorithms under ``vmap`` (what the kernels are tested against),
call :func:`jaxdyn.algorithms.aba.aba`, :func:`jaxdyn.algorithms.rnea.rnea` and
:func:`jaxdyn.algorithms.crba.crba` directly: they have no batching rule.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jaxtyping import Array, Float

from . import kernels, planner
from .algorithms import aba as _aba_mod
from .algorithms import crba as _crba_mod
from .algorithms import rnea as _rnea_mod
from .algorithms.common import Kinematics
from .model import Model


def _batched(one_sample, kernel: str):
    """``one_sample(model, kin, *xs)`` for one sample (``kin``: a
    :class:`~jaxdyn.algorithms.common.Kinematics` record or None); under ``vmap`` over the state
    the batch kernel ``jaxdyn.kernels.<kernel>(model, *xs)`` (batch-first arrays; the kernel
    runs its own kinematics, and XLA drops a record that nothing else reads); derivatives those
    of ``one_sample`` (module docstring)."""

    def axes(batched):
        return jax.tree_util.tree_map(lambda b: 0 if b else None, batched)

    @jax.custom_batching.custom_vmap
    def values(model, kin, *xs):
        return one_sample(model, kin, *xs)

    @values.def_vmap
    def rule(axis_size, in_batched, model, kin, *xs):
        m_b, k_b, *x_b = in_batched
        model_batched = any(jax.tree_util.tree_leaves(m_b))
        if not model_batched and not any(jax.tree_util.tree_leaves((k_b, x_b))):
            return one_sample(model, kin, *xs), False
        if model_batched or not planner.batch_kernel(model, kernel, axis_size):
            return jax.vmap(one_sample, in_axes=(axes(m_b), axes(k_b), *axes(x_b)))(model, kin, *xs), True
        xs = [x if b else jnp.broadcast_to(x, (axis_size,) + jnp.shape(x)) for x, b in zip(xs, x_b)]
        return getattr(kernels, kernel)(model, *xs), True

    @jax.custom_jvp
    def f(model, kin, *xs):
        return values(model, kin, *xs)

    @f.defjvp
    def f_jvp(primals, tangents):
        return jax.jvp(one_sample, primals, tangents)

    return f


def _aba_one(model, kin, q, qd, tau, f_ext=None):
    return _aba_mod.aba(model, q, qd, tau, f_ext, kinematics=kin)


def _rnea_one(model, kin, q, qd, qdd, f_ext=None):
    return _rnea_mod.rnea(model, q, qd, qdd, f_ext, kinematics=kin)


def _crba_one(model, kin, q):
    return _crba_mod.crba(model, q, kinematics=kin)


_aba_v = _batched(_aba_one, "aba_batch")
_rnea_v = _batched(_rnea_one, "rnea_batch")
_crba_v = _batched(_crba_one, "crba_batch")


def _kind(x) -> str:
    return "an array" if hasattr(x, "shape") else type(x).__name__


def _args(fn: str, signature: str, model, *xs):
    """The public entry's slips named before JAX sees them: a first argument that is not a
    :class:`~jaxdyn.Model` (arguments swapped, a robot's name or path given), and lists or
    tuples for arrays (made arrays: under ``custom_jvp`` a list would be a pytree of scalars)."""
    if not isinstance(model, Model):
        raise TypeError(
            f"{fn}: the first argument must be a jaxdyn.Model, got {_kind(model)} (the call is "
            f"{signature}; get a model from jaxdyn.load_robot, load_urdf or load_mjcf)"
        )
    return [jnp.asarray(x) if isinstance(x, (list, tuple)) else x for x in xs]


@functools.wraps(_aba_mod.aba)
def aba(
    model: Model,
    q: Float[Array, " nq"],
    qd: Float[Array, " nv"],
    tau: Float[Array, " nv"],
    f_ext: Float[Array, "nb 6"] | None = None,
    kinematics: Kinematics | None = None,
) -> Float[Array, " nv"]:
    q, qd, tau = _args("aba", "aba(model, q, qd, tau)", model, q, qd, tau)
    return _aba_v(model, kinematics, q, qd, tau, *(() if f_ext is None else (f_ext,)))


@functools.wraps(_rnea_mod.rnea)
def rnea(
    model: Model,
    q: Float[Array, " nq"],
    qd: Float[Array, " nv"],
    qdd: Float[Array, " nv"],
    f_ext: Float[Array, "nb 6"] | None = None,
    kinematics: Kinematics | None = None,
) -> Float[Array, " nv"]:
    q, qd, qdd = _args("rnea", "rnea(model, q, qd, qdd)", model, q, qd, qdd)
    return _rnea_v(model, kinematics, q, qd, qdd, *(() if f_ext is None else (f_ext,)))


@functools.wraps(_crba_mod.crba)
def crba(model: Model, q: Float[Array, " nq"], kinematics: Kinematics | None = None) -> Float[Array, "nv nv"]:
    (q,) = _args("crba", "crba(model, q)", model, q)
    return _crba_v(model, kinematics, q)


_NOTE = """

    Batching: under ``jax.vmap`` over the state this runs the batch kernel of
    :mod:`jaxdyn.kernels` (see :mod:`jaxdyn.batching`); same numbers to round-off."""
for _f in (aba, rnea, crba):
    _f.__doc__ = (_f.__doc__ or "") + _NOTE
    del _f.__wrapped__  # signatures come from the definitions above
del _f


@jax.custom_batching.custom_vmap
def batch_any(x) -> Array:
    """``jnp.any(x)`` of one sample's boolean array; under ``jax.vmap``, of the whole batch, and
    not batched: a predicate that ``lax.cond`` keeps a branch on (a batched predicate turns the
    ``cond`` into a select of both branches). For work that every sample would skip, such as a
    narrow phase whose pairs are out of reach in every sample (:func:`jaxdyn.planner.skip`): the
    branch must give each sample what it would alone, as a select does. Not differentiated (a
    boolean)."""
    return jnp.any(x)


@batch_any.def_vmap
def _batch_any_rule(axis_size, in_batched, x):
    return jnp.any(x), False


@jax.custom_batching.custom_vmap
def batch_max(x) -> Array:
    """``x`` of one sample (an integer scalar); under ``jax.vmap``, its largest value over the
    batch, not batched: the index of a ``lax.switch`` that keeps its branches (as
    :func:`batch_any` for a ``cond``), e.g. the number of touching contact rows the implicit
    contact solve must hold for every sample (:func:`jaxdyn.planner.contact_row_sizes`). Not
    differentiated (an integer)."""
    return x


@batch_max.def_vmap
def _batch_max_rule(axis_size, in_batched, x):
    return jnp.max(x), False
