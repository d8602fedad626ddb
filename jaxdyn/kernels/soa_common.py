"""What the unrolled and scanned struct-of-arrays traversals of :mod:`jaxdyn.kernels.soa` share:
the model numbers they read (JAX arrays, no per-sample work), the joints' transforms and motion
subspaces, the handling of arguments and outputs, and the SoA forms of the algorithms' link steps
(:mod:`jaxdyn.algorithms` run with :class:`~jaxdyn.kernels.soa_algebra.SoAAlgebra`)."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .. import joints, spatial
from ..algorithms import aba as aba_steps
from ..algorithms.common import full_precision
from ..model import Model
from .soa_algebra import (
    UPPER,
    ZERO3,
    SoAAlgebra,
    kept,
)

# --- model numbers (JAX arrays; no per-sample work) ---------------------------------------------


def check_joints(model: Model, fn: str):
    """For the fused kernels (:mod:`jaxdyn.kernels.pallas`, :mod:`~jaxdyn.kernels.pallas_scan`),
    which take 1-dof joints and a free root only."""
    for j, t in enumerate(model.joint_types):
        if not (joints.get(t).screw or (j == 0 and joints.get(t).floating)):
            raise ValueError(
                f"{fn}: joint '{model.joint_names[j]}' is {t}, which the fused kernels do not "
                f"support; use jaxdyn.{fn.replace('_pallas', '')} with jax.vmap for this model"
            )


@full_precision
def model_numbers(model: Model):
    """Per-body model-only arrays: the joint numbers of (J1) (:func:`jaxdyn.joints.one_dof_numbers`:
    ``A0, A1, A2, p0``, and ``d, sl`` when a joint translates, ``sa``) and the rigid inertia
    ``(m, h, Ibar)`` about the body origin (Rodriguez86 (3.1))."""
    dt = model.dtype
    R0, p0, u = model.placement_R.astype(dt), model.placement_p.astype(dt), model.axis.astype(dt)
    rotates, lead = joints.model_screw(model)
    jn = joints.one_dof_numbers(R0, p0, u, rotates, lead)
    m, c, Ic = model.mass.astype(dt), model.com.astype(dt), model.inertia.astype(dt)
    Ib = Ic + spatial.parallel_axis(m, c)
    Ib = 0.5 * (Ib + jnp.swapaxes(Ib, -1, -2))  # read symmetrically: gradients w.r.t. the inertia stay symmetric
    iu = np.array(UPPER)
    Ib6 = Ib[:, iu[:, 0], iu[:, 1]]
    out: dict[str, Any] = {
        "A0": jn.A0.reshape(-1, 9),
        "A1": jn.A1.reshape(-1, 9),
        "A2": jn.A2.reshape(-1, 9),
        "p0": jn.p0,
        "sa": jn.sa,
        "m": m,
        "h": m[:, None] * c,
        "Ib": Ib6,
    }
    if jn.d is not None:
        out["d"], out["sl"] = jn.d, jn.sl
    return out


def split(x):
    """Rows of an array as a tuple (``x[0], x[1], ...``); a tuple (of scalars, as the fused
    scanned kernels of :mod:`jaxdyn.kernels.pallas` load them) is returned as it is."""
    if isinstance(x, tuple):
        return x
    return tuple(x[k] for k in range(x.shape[0]))


def body(nums, i):
    """The per-body numbers of body ``i`` as tuples of 0-d arrays (or of Python floats, for the
    constants of :func:`model_constants`)."""
    if isinstance(nums, Constants):
        return {k: v[i] for k, v in nums.bodies.items()}
    return {k: (v[i] if v.ndim == 1 else split(v[i])) for k, v in nums.items()}


class Constants:
    """A model's numbers as Python floats (:func:`model_constants`): per-body ``bodies[k][i]``
    (scalars or tuples), ``armature`` per dof and the world acceleration ``world``. Traced with
    these, the unrolled kernels fold the model into the program (exact zeros of axes and
    placements drop out) and capture no arrays: what a Pallas kernel body needs."""

    def __init__(self, model: Model):
        nums = {k: np.asarray(v, np.float64) for k, v in model_numbers(model).items()}
        self.bodies = {k: [float(x) if v.ndim == 1 else tuple(float(y) for y in x) for x in v] for k, v in nums.items()}
        self.armature = [float(a) for a in np.asarray(model.armature, np.float64)]
        g = [float(x) for x in np.asarray(model.gravity, np.float64)]
        self.world = (ZERO3, (-g[0], -g[1], -g[2]))


@kept
def joint_X(alg: SoAAlgebra, t, bn, qs):
    """Placement of body ``i`` in its parent for a joint of static type ``t`` from its numbers
    ``bn`` and its ``q`` entries ``qs`` (:meth:`jaxdyn.joints.JointType.transform`: (J1) for the
    1-dof joints)."""
    return joints.get(t).transform(bn, qs)


def joint_S(t, bn):
    """Motion subspace of body ``i``'s joint (:meth:`jaxdyn.joints.JointType.subspace`): one
    ``(sa, sl)`` column for a 1-dof joint (revolute ``[u; 0]``, prismatic ``[0; u]``), a list of
    columns for a multi-dof one."""
    return joints.get(t).subspace(bn)


def slots(xT, vs, S):
    """A joint's entries of an ``(nv, ...)`` per-dof value starting at ``vs``: one scalar for a
    1-dof joint, a list for a multi-dof one (``S`` a list; the free root is handled apart)."""
    return [xT[vs + k] for k in range(len(S))] if isinstance(S, list) else xT[vs]


def set_slots(out, vs, S, x):
    """Write a joint's value ``x`` (from a link step) into the per-dof list ``out`` at ``vs``: the
    inverse of :func:`slots`."""
    if isinstance(S, list):
        out[vs : vs + len(S)] = x
    else:
        out[vs] = x


@kept
def free_X(alg: SoAAlgebra, qr):
    """Pose of a floating root from its ``q`` (:meth:`jaxdyn.joints.Free.transform`:
    ``[x, y, z, qw, qx, qy, qz]``); the steps treat its ``S = 1_6`` apart."""
    return joints.FREE.transform({}, qr)


# --- argument handling ------------------------------------------------------------------------


def prepare(model: Model, fn: str, **args):
    sizes = {"q": (model.nq,), "f_ext": (model.nb, 6)}
    batch, single = None, None
    out: dict[str, Any] = {}
    for name, x in args.items():
        if x is None:
            out[name] = None
            continue
        want = sizes.get(name, (model.nv,))
        shape = tuple(jnp.shape(x))
        is_single = shape == want
        if not is_single and (len(shape) != len(want) + 1 or shape[1:] != want):
            raise ValueError(
                f"{fn}: argument '{name}' has shape {shape}, expected (B, {', '.join(map(str, want))}) "
                f"or {want} for model '{model.name}' (nq={model.nq}, nv={model.nv}, nb={model.nb})"
            )
        if single is None:
            single = is_single
        elif single != is_single:
            raise ValueError(f"{fn}: argument '{name}' has shape {shape}: mix of batched and single inputs")
        x = jnp.asarray(x).astype(model.dtype)
        if is_single:
            x = x[None]
        if batch is None:
            batch = x.shape[0]
        elif x.shape[0] != batch:
            raise ValueError(
                f"{fn}: argument '{name}' has batch size {x.shape[0]}, expected {batch} (from the first argument)"
            )
        out[name] = jnp.moveaxis(x, 0, -1)  # batch last
    return batch, single, out


# Whether the scanned traversals stack each link step's outputs into one array
# (:class:`jaxdyn.tree.Packed`): for the ABA and the CRBA on a GPU backend, where each stacked scan
# output otherwise costs its own kernel per link step. Deviceless H100 compile at batch 131,072,
# XLA kernels per link step summed over the sweeps: talos ABA 56 -> 20, RNEA 18 -> 13, CRBA 30 ->
# 16 (11 with the one-array subtree sum in crba_tree), chain1024 ABA 43 -> 19. On an H100, same
# process at batch 131,072 (benchmarks/results/h100-2026-11-27.md, benchmarks/pack_ab.py): ABA
# 1.26-1.37x, CRBA 1.01-1.18x; the RNEA (one force per link step) 1.05x on talos but 0.64x on
# chain128, so the RNEA is never packed. Not on CPU, where (with fusion off) the stacking was one
# more copy of every output: same-process A/B at batch 4096, talos and chain32 ABA/RNEA/CRBA
# 0.82-1.12x (benchmarks/results/cpu-2026-11-23-pack-ab.md; 0.72-1.14x in an earlier run). The
# kernels' private ``_pack`` argument forces it (tests; deviceless GPU compiles on a CPU-only host).
def pack_outputs(pack=None, algo=None):
    if pack is not None:
        return bool(pack)
    return algo != "rnea" and jax.default_backend() != "cpu"


def _rows(x, B, dtype):
    """Stack SoA scalars (literals, 0-d model numbers or (B,) arrays) to a ``(k, B)`` array."""
    return jnp.stack([jnp.broadcast_to(jnp.asarray(r, dtype), (B,)) for r in x])


def finish(rows, B, dtype, single, shape):
    out = jnp.moveaxis(rows.reshape(shape + (B,)), -1, 0)
    return out[0] if single else out


# --- link steps shared by both traversals (SoA tuples in and out) -------------------------------


def world_acc(model, B=None):
    """``[0; -g]`` (Rodriguez86 R3), as SoA scalars (``(B,)`` arrays when ``B`` is given)."""
    g = model.gravity.astype(model.dtype)
    la = (-g[0], -g[1], -g[2])
    if B is None:
        return ZERO3, la
    z = jnp.zeros((B,), model.dtype)
    return (z, z, z), tuple(jnp.broadcast_to(x, (B,)) for x in la)


@kept
def velocity(alg: SoAAlgebra, R, p, S, qd, parent):
    """:func:`jaxdyn.algorithms.aba.velocity_step` (``parent=None``: the world at rest):
    ``((w, v), c)``."""
    return aba_steps.velocity_step(alg, (R, p), S, qd, parent)


@kept
def bias_force(alg: SoAAlgebra, m, h, Ib, w, v, fe):
    """:func:`jaxdyn.algorithms.aba.bias_force` (``fe``: six scalars or None)."""
    return aba_steps.bias_force(alg, (m, h, Ib), (w, v), wrench(fe))


@kept
def riccati(alg: SoAAlgebra, P, Z, S, arm, tau, c, to_parent=True):
    """:func:`jaxdyn.algorithms.aba.filter_step`: ``(U, D^-1, e, P+, z+)``."""
    U, _, Dinv, e, _, Pa, za = aba_steps.filter_step(alg, P, Z, S, arm, tau, c, to_parent)
    return U, Dinv, e, Pa, za


@kept
def smooth(alg: SoAAlgebra, R, p, S, c, U, di, e, parent_a):
    """:func:`jaxdyn.algorithms.aba.smooth_step`: ``(a, qdd)``."""
    return aba_steps.smooth_step(alg, (R, p), S, c, U, di, e, parent_a)


def free_root_solve(alg: SoAAlgebra, R, p, P, Z, tau6, arm6, world):
    """The free root's filter and smoother steps (``S = 1_6``, so ``U = P``,
    ``D = P + diag(armature)``, ``c = v x v = 0``): ``(a, qdd)``, ``D`` solved by an unrolled
    ``L D L^T`` factorisation."""
    U, _, F, e, *_ = aba_steps.filter_step(alg, P, Z, None, list(arm6), list(tau6), MOTION, False)
    return aba_steps.smooth_step(alg, (R, p), None, MOTION, U, F, e, world)


def wrench(fe):
    """Six scalars ``[n; f]`` as a force ``(n, f)`` of :class:`SoAAlgebra` (None stays None)."""
    return None if fe is None else (tuple(fe[0:3]), tuple(fe[3:6]))


def fe(feT, i):
    return None if feT is None else tuple(feT[i, k] for k in range(6))


MOTION = (ZERO3, ZERO3)
ART = ((0.0,) * 6, (0.0,) * 9, (0.0,) * 6)
