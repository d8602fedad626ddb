"""The unrolled traversal of the struct-of-arrays kernels (:mod:`jaxdyn.kernels.soa`): a Python
loop over links with static parents and joint types (fastest per sample; compile time grows with
the number of links). The Pallas kernels (:mod:`jaxdyn.kernels.pallas`) trace these same
functions with the model's numbers folded in."""

from __future__ import annotations

from .. import joints
from ..algorithms import aba as aba_steps
from ..algorithms import crba as crba_steps
from ..algorithms import rnea as rnea_steps
from .soa_algebra import (
    IDENTITY_X,
    UNIT_MOTIONS,
    ZERO3,
    _add,
    v_add,
)
from .soa_common import (
    MOTION,
    Constants,
    bias_force,
    body,
    fe,
    free_root_solve,
    free_X,
    joint_S,
    joint_X,
    riccati,
    set_slots,
    slots,
    smooth,
    velocity,
    world_acc,
    wrench,
)

# --- unrolled traversal (Python loop over links, static parents and joint types) ------------------


def _kinematics_unroll(alg, model, nums, qT):
    """Per body: numbers, placement ``(R, p)`` in the parent, motion subspace (None for a free
    root)."""
    lay = model.layout
    bodies = []
    for i, t in enumerate(model.joint_types):
        bn = body(nums, i)
        qs = int(lay.q_start[i])
        qi = tuple(qT[qs + k] for k in range(lay.joint_nq[i]))
        if joints.get(t).floating:
            bodies.append((bn, free_X(alg, qi), None))
        else:
            bodies.append((bn, joint_X(alg, t, bn, qi), joint_S(t, bn)))
    return bodies


def aba_unroll(alg, model, nums, qT, qdT, tauT, feT):
    lay = model.layout
    parents = model.parents
    arm = nums.armature if isinstance(nums, Constants) else model.armature.astype(model.dtype)
    kin = _kinematics_unroll(alg, model, nums, qT)
    nb = model.nb
    V, Cb, P, Z = [None] * nb, [None] * nb, [None] * nb, [None] * nb
    # 1. outward: velocities v, bias accelerations c = v x S qd, bias forces z = v x* I v - f_ext
    for i in range(nb):
        bn, (R, p), S = kin[i]
        vs = int(lay.v_start[i])
        if S is None:  # free root: v = qd[0:6] (body frame), c = v x v = 0
            V[i], Cb[i] = (tuple(qdT[vs : vs + 3]), tuple(qdT[vs + 3 : vs + 6])), (ZERO3, ZERO3)
        else:
            pa = parents[i]
            V[i], Cb[i] = velocity(alg, R, p, S, slots(qdT, vs, S), None if pa < 0 else V[pa])
        Z[i] = bias_force(alg, bn["m"], bn["h"], bn["Ib"], *V[i], fe(feT, i))
        P[i] = alg.art_of((bn["m"], bn["h"], bn["Ib"]))
    # 2. inward Riccati sweep (the filter)
    U, Dinv, E = [None] * nb, [None] * nb, [None] * nb
    for i in reversed(range(nb)):
        bn, (R, p), S = kin[i]
        if S is None:
            continue
        vs = int(lay.v_start[i])
        pa = parents[i]
        P[i], Z[i] = alg.keep((P[i], Z[i]))  # the sums over the children, read by many terms
        U[i], Dinv[i], E[i], Pa, za = riccati(
            alg, P[i], Z[i], S, slots(arm, vs, S), slots(tauT, vs, S), Cb[i], to_parent=pa >= 0
        )
        if pa < 0:
            continue
        (An, Bn, Cn), (fn, ff) = aba_steps.to_parent(alg, (R, p), Pa, za)
        Ap, Bp, Cp = P[pa]
        P[pa] = (v_add(Ap, An), v_add(Bp, Bn), v_add(Cp, Cn))
        Z[pa] = (v_add(Z[pa][0], fn), v_add(Z[pa][1], ff))
    # 3. outward accelerations (the smoother)
    Acc = [None] * nb
    qdd = [None] * model.nv
    world = nums.world if isinstance(nums, Constants) else world_acc(model)
    for i in range(nb):
        bn, (R, p), S = kin[i]
        vs = int(lay.v_start[i])
        if S is None:
            P[i], Z[i] = alg.keep((P[i], Z[i]))
            Acc[i], x = free_root_solve(alg, R, p, P[i], Z[i], tauT[vs : vs + 6], arm[vs : vs + 6], world)
            qdd[vs : vs + 6] = x
            continue
        pa = parents[i]
        Acc[i], x = smooth(alg, R, p, S, Cb[i], U[i], Dinv[i], E[i], world if pa < 0 else Acc[pa])
        set_slots(qdd, vs, S, x)
    return qdd


def rnea_unroll(alg, model, nums, qT, qdT, qddT, feT):
    lay = model.layout
    parents = model.parents
    const = isinstance(nums, Constants)  # Python floats only: traceable inside a Pallas kernel
    arm = nums.armature if const else model.armature.astype(model.dtype)
    kin = _kinematics_unroll(alg, model, nums, qT)
    nb = model.nb
    world = nums.world if const else world_acc(model)
    V, Acc, F = [None] * nb, [None] * nb, [None] * nb
    # outward, then inward: the link steps of jaxdyn.algorithms.rnea (a free root: S = 1_6)
    for i in range(nb):
        bn, X, S = kin[i]
        vs = int(lay.v_start[i])
        pa = parents[i]
        if S is None:
            qd, qdd = tuple(qdT[vs : vs + 6]), tuple(qddT[vs : vs + 6])
        else:
            qd, qdd = slots(qdT, vs, S), slots(qddT, vs, S)
        parent = (MOTION, world) if pa < 0 else (V[pa], Acc[pa])
        (V[i], Acc[i]), F[i] = alg.keep(
            rnea_steps.forward_step(alg, X, S, qd, qdd, (bn["m"], bn["h"], bn["Ib"]), wrench(fe(feT, i)), parent)
        )
    tau = [None] * model.nv
    for i in reversed(range(nb)):
        bn, X, S = kin[i]
        vs = int(lay.v_start[i])
        if S is None:
            _, tau[vs : vs + 6] = rnea_steps.backward_step(
                alg, X, S, arm[vs : vs + 6], qddT[vs : vs + 6], alg.keep(F[i])
            )
            continue
        fp, x = rnea_steps.backward_step(alg, X, S, slots(arm, vs, S), slots(qddT, vs, S), alg.keep(F[i]))
        set_slots(tau, vs, S, x)
        pa = parents[i]
        if pa >= 0:
            F[pa] = alg.add(F[pa], fp)
    return tau


def crba_unroll(alg, model, nums, qT, frames="body"):
    """Mass matrix ``M(q) + diag(armature)`` as ``nv * nv`` row-major scalars, unrolled over the
    tree with the link steps of :mod:`jaxdyn.algorithms.crba` (Rodriguez86 (7.7)-(7.10)):
    composite inertias inward (:func:`~jaxdyn.algorithms.crba.composite_step`), then per dof its
    column force (:func:`~jaxdyn.algorithms.crba.column_force`), moved up the ancestors
    (:func:`~jaxdyn.algorithms.crba.column_step`) and paired with each one's motion subspace
    (:func:`~jaxdyn.algorithms.crba.entry`). A free root's ``S`` is ``1_6`` (its six unit
    motions); entries of bodies on different branches are exact zeros.

    ``frames`` chooses the inputs of the same steps: ``"body"``, each link's ``S`` and inertia in
    its own frame and ``phi`` its joint's placement (Featherstone08 table 6.2; the form
    :func:`jaxdyn.kernels.pallas.crba_pallas` runs); ``"common"``, both moved to the common frame
    first (:func:`~jaxdyn.algorithms.crba.world_step`; the world, or the free root's body frame),
    after which every ``phi`` is the identity, literals that fold away
    (``benchmarks/crba_frames_ab.py`` times the two)."""
    if frames not in ("body", "common"):
        raise ValueError(f"crba_unroll: frames must be 'body' or 'common', got {frames!r}")
    lay = model.layout
    parents = model.parents
    arm = nums.armature if isinstance(nums, Constants) else model.armature.astype(model.dtype)
    kin = _kinematics_unroll(alg, model, nums, qT)
    nb, nv = model.nb, model.nv
    ident, unit = IDENTITY_X, UNIT_MOTIONS  # literals that fold away
    X, S, Ic = [None] * nb, [None] * nb, [None] * nb  # the steps' inputs: phi, H^T and M per link
    Xw = [None] * nb
    for i, (bn, Xi, Si) in enumerate(kin):
        Ic[i] = (bn["m"], bn["h"], bn["Ib"])
        if frames == "body" or Si is None:  # a free root's body frame is the common frame
            X[i], S[i] = Xi, Si
        else:
            Xp = ident if parents[i] < 0 else Xw[parents[i]]
            Xw[i], (S[i], Ic[i]) = crba_steps.world_step(alg, Xp, Xi, Si, Ic[i])
            X[i] = ident
        if Si is None:
            Xw[i], S[i] = ident, unit
        S[i] = S[i] if isinstance(S[i], list) else [S[i]]
    for i in reversed(range(nb)):
        Ic[i] = alg.keep(Ic[i])  # with the children's inertias added
        pa = parents[i]
        if pa >= 0:
            Ic[pa] = crba_steps.composite_step(alg, X[i], Ic[i], Ic[pa])
    M = [[0.0] * nv for _ in range(nv)]
    for i in range(nb):
        vs = int(lay.v_start[i])
        for c, Sc in enumerate(S[i]):
            col = vs + c
            F = crba_steps.column_force(alg, Ic[i], Sc)
            for r, Sr in enumerate(S[i]):
                M[vs + r][col] = crba_steps.entry(alg, Sr, F)
            M[col][col] = _add(M[col][col], arm[col])
            j = i
            while parents[j] >= 0:
                F = crba_steps.column_step(alg, X[j], F)
                j = parents[j]
                vj = int(lay.v_start[j])
                for r, Sr in enumerate(S[j]):
                    M[vj + r][col] = M[col][vj + r] = crba_steps.entry(alg, Sr, F)
    return [x for row in M for x in row]
