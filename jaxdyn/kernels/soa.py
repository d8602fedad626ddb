"""Struct-of-arrays (SoA) batched kernels: ABA, RNEA and CRBA over a batch of states.

The generic algorithms (:mod:`jaxdyn.algorithms`) work on one sample with ``(3,3)``/``(6,6)``
arrays and are batched by ``jax.vmap``; on XLA CPU every small matrix product then becomes its
own reduce, which breaks fusion (hundreds of tiny kernels per call). Here the batch is the
*last* axis and every scalar of the recursion is its own ``(B,)`` array: a 3-vector is a tuple
of 3 arrays, a rotation 9, a symmetric 3x3 its 6 upper entries, an articulated inertia
``[[A, B], [B^T, C]]`` its 21 independent entries ``(A sym 6, B 9, C sym 6)`` and a rigid inertia
``(m, h (3), Ibar sym 6)``. All arithmetic is elementwise, so XLA fuses whole link steps into a
few loop kernels, vectorised over the batch (SIMD lanes on CPU, coalesced threads on GPU).

Structural zeros (the empty half of a motion subspace, the zero velocity of the world, the
zero entries of skew matrices) are Python ``0.0`` literals at trace time and are skipped by the
small helpers below (:func:`_mul`, :func:`_add`), so they cost nothing. Model numbers
(placements, axes, masses, centres of mass, inertias, gravity, armature) stay JAX arrays read
from the model: the kernels are differentiable w.r.t. the model and can take it as a ``jit``
argument. The static topology drives a Python loop over links (compile time grows with the
number of links: see benchmarks/results/kernels-cpu.md).

Equations are those of :mod:`jaxdyn.algorithms` (seed 000 = Rodriguez, Jain & Kreutz-Delgado,
"Spatial operator algebra"; Featherstone, "Rigid Body Dynamics Algorithms" (2008), tables 5.1,
6.2, 7.1):

* joint transform ``X = placement o X_J(q)``; with Rodrigues' formula for a unit axis ``u``,
  ``R_J = u u^T + cos q (1 - u u^T) + sin q [u]x``, so ``R = A0 + cos q A1 + sin q A2`` with the
  model-only matrices ``A0 = R0 u u^T``, ``A1 = R0 - A0``, ``A2 = R0 [u]x`` (prismatic:
  ``R = R0``, ``p = p0 + q R0 u``);
* RNEA (seed 000 (5.1)-(5.6), (4.1)-(4.4)): ``v = X^-1 v_p + S qd``,
  ``a = X^-1 a_p + S qdd + v x S qd``, ``f = I a + v x* I v - f_ext``, ``f_p += X* f``,
  ``tau = S^T f + armature qdd``;
* ABA (seed 000 Result 8.1, (8.3)-(8.13)): inward ``U = P S``, ``D = S^T U + armature``,
  ``e = tau - S^T z``, ``P+ = P - U D^-1 U^T``, ``z+ = z + P+ c + U D^-1 e``,
  ``P_p += X* P+ X``, ``z_p += X* z+``; outward ``a' = X^-1 a_p + c``,
  ``qdd = D^-1 (e - U^T a')``, ``a = a' + S qdd``; world acceleration ``[0; -g]``;
* CRBA (seed 000 (7.7)-(7.11); Featherstone table 6.2): composite inertias
  ``Ic_p += X* Ic X`` (rigid, compact), ``F = Ic_i S_i``, ``M_ii = S_i^T F + armature``, then
  ``F <- X* F`` up the ancestors ``j``: ``M_ji = S_j^T F``.

A free-floating root (``joint_types[0] == "free"``, ``q = [x, y, z, qw, qx, qy, qz]``,
body-frame velocity ``[omega; v]``, as :func:`jaxdyn.aba`) has ``S = 1_6``: its ABA step solves
``D qdd = e - P a'`` with an unrolled ``L D L^T`` factorisation of the 6x6 ``D``.
Spherical joints are not supported here (use :func:`jaxdyn.aba` and friends with ``jax.vmap``).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..model import Model


# --- scalar helpers that skip structural zeros (Python literals) ---------------------------------


def _lit(x):
    return isinstance(x, float)


def _mul(a, b):
    if _lit(a):
        if a == 0.0:
            return 0.0
        if a == 1.0:
            return b
        if _lit(b):
            return a * b
    if _lit(b):
        if b == 0.0:
            return 0.0
        if b == 1.0:
            return a
    return a * b


def _add(*xs):
    out = 0.0
    for x in xs:
        if _lit(x) and x == 0.0:
            continue
        out = x if (_lit(out) and out == 0.0) else out + x
    return out


def _neg(a):
    return 0.0 if (_lit(a) and a == 0.0) else -a


def _sub(a, b):
    return _add(a, _neg(b))


def _dot(a, b):
    return _add(*[_mul(x, y) for x, y in zip(a, b)])


def _v_add(a, b):
    return tuple(_add(x, y) for x, y in zip(a, b))


def _v_sub(a, b):
    return tuple(_sub(x, y) for x, y in zip(a, b))


def _v_scale(s, a):
    return tuple(_mul(s, x) for x in a)


def _cross(a, b):
    return (_sub(_mul(a[1], b[2]), _mul(a[2], b[1])),
            _sub(_mul(a[2], b[0]), _mul(a[0], b[2])),
            _sub(_mul(a[0], b[1]), _mul(a[1], b[0])))


def _row(M, r):
    return M[3 * r:3 * r + 3]


def _col(M, c):
    return (M[c], M[3 + c], M[6 + c])


def _mv(M, x):
    return tuple(_dot(_row(M, r), x) for r in range(3))


def _mtv(M, x):
    return tuple(_dot(_col(M, r), x) for r in range(3))


def _mm(A, B):
    return tuple(_dot(_row(A, r), _col(B, c)) for r in range(3) for c in range(3))


def _skew(p):
    return (0.0, _neg(p[2]), p[1], p[2], 0.0, _neg(p[0]), _neg(p[1]), p[0], 0.0)


_UPPER = ((0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2))
_SYM = {rc: k for k, rc in enumerate(_UPPER)}


def _sym_full(S):
    return tuple(S[_SYM[(min(r, c), max(r, c))]] for r in range(3) for c in range(3))


def _sym_mv(S, x):
    return _mv(_sym_full(S), x)


def _rot_sym(R, S):
    """``R S R^T`` for symmetric ``S`` (6 upper entries in and out)."""
    T = _mm(R, _sym_full(S))
    return tuple(_dot(_row(T, r), _row(R, c)) for r, c in _UPPER)


def _rot_gen(R, M):
    """``R M R^T`` for a general 3x3 ``M``."""
    T = _mm(R, M)
    return tuple(_dot(_row(T, r), _row(R, c)) for r in range(3) for c in range(3))


# --- spatial algebra on SoA tuples (motion [w; v], force [n; f]) ---------------------------------


def _motion_to_child(R, p, w, v):
    """``BX_A m`` (seed 000's ``phi^T``): ``[R^T w; R^T (v - p x w)]``."""
    return _mtv(R, w), _mtv(R, _v_sub(v, _cross(p, w)))


def _force_to_parent(R, p, n, f):
    """``AX*_B f`` (seed 000's ``phi``): ``[R n + p x R f; R f]``."""
    fr = _mv(R, f)
    return _v_add(_mv(R, n), _cross(p, fr)), fr


def _cross_motion(w, v, mw, mv):
    """``[w; v] x [mw; mv]`` (Featherstone ``crm``)."""
    return _cross(w, mw), _v_add(_cross(w, mv), _cross(v, mw))


def _cross_force(w, v, n, f):
    """``[w; v] x* [n; f]`` (Featherstone ``crf``)."""
    return _v_add(_cross(w, n), _cross(v, f)), _cross(w, f)


def _inertia_apply(m, h, Ib, w, v):
    """Rigid inertia ``(m, h, Ibar)`` times motion: ``[Ibar w + h x v; m v - h x w]``."""
    return _v_add(_sym_mv(Ib, w), _cross(h, v)), _v_sub(_v_scale(m, v), _cross(h, w))


def _rigid_to_art(m, h, Ib):
    """Rigid inertia as the 21 entries ``(A, B, C)`` of ``[[Ibar, [h]x], [[h]x^T, m 1]]``."""
    return tuple(Ib), _skew(h), (m, 0.0, 0.0, m, 0.0, m)


def _art_to_parent(R, p, A, B, C):
    """``X* P X`` for a symmetric 6x6 ``P = [[A, B], [B^T, C]]`` (as spatial.matrix_inertia_to_parent):
    ``C' = R C R^T``, ``B' = R B R^T + [p]x C'``, ``A' = R A R^T - K - K^T - [p]x C' [p]x``
    with ``K = (R B R^T) [p]x``."""
    A1, B1, C1 = _rot_sym(R, A), _rot_gen(R, B), _rot_sym(R, C)
    P = _skew(p)
    PC = _mm(P, _sym_full(C1))
    Bn = _v_add(B1, PC)
    K = _mm(B1, P)
    An = tuple(_sub(_sub(A1[k], _add(K[3 * r + c], K[3 * c + r])), _dot(_row(PC, r), _col(P, c)))
               for k, (r, c) in enumerate(_UPPER))
    return An, Bn, C1


def _rigid_to_parent(R, p, m, h, Ib):
    """``X* I X`` for a rigid inertia, compactly: ``h' = R h + m p`` and
    ``Ibar' = R Ibar R^T + (R h) p^T + p (R h)^T + m p p^T - (2 p.(R h) + m p.p) 1``
    (parallel-axis theorem, from ``[a]x [b]x = b a^T - (a.b) 1``)."""
    hr = _mv(R, h)
    Ibr = _rot_sym(R, Ib)
    mp = _v_scale(m, p)
    tr = _add(_mul(2.0, _dot(p, hr)), _dot(mp, p))
    Ibn = tuple(_sub(_add(Ibr[k], _mul(hr[r], p[c]), _mul(p[r], hr[c]), _mul(mp[r], p[c])), tr if r == c else 0.0)
                for k, (r, c) in enumerate(_UPPER))
    return m, _v_add(hr, mp), Ibn


def _ldl_solve(M, b):
    """Solve ``M x = b`` for a symmetric positive definite ``n x n`` ``M`` (list of rows of
    scalars, lower triangle read) by an unrolled ``L D L^T`` factorisation."""
    n = len(b)
    LD = [[None] * n for _ in range(n)]  # L[i][k] * d[k]
    L = [[None] * n for _ in range(n)]
    d = [None] * n
    for j in range(n):
        d[j] = _sub(M[j][j], _add(*[_mul(L[j][k], LD[j][k]) for k in range(j)]))
        inv = 1.0 / d[j]
        for i in range(j + 1, n):
            LD[i][j] = _sub(M[i][j], _add(*[_mul(L[i][k], LD[j][k]) for k in range(j)]))
            L[i][j] = _mul(LD[i][j], inv)
        d[j] = inv
    y = []
    for i in range(n):
        y.append(_sub(b[i], _add(*[_mul(L[i][k], y[k]) for k in range(i)])))
    x = [None] * n
    for i in reversed(range(n)):
        x[i] = _sub(_mul(y[i], d[i]), _add(*[_mul(L[k][i], x[k]) for k in range(i + 1, n)]))
    return x


def _art_matrix(A, B, C):
    """Rows of the full 6x6 from ``(A, B, C)``."""
    Af, Cf = _sym_full(A), _sym_full(C)
    rows = []
    for r in range(3):
        rows.append(list(_row(Af, r)) + list(_row(B, r)))
    for r in range(3):
        rows.append(list(_col(B, r)) + list(_row(Cf, r)))
    return rows


# --- model numbers (JAX arrays; no per-sample work) ---------------------------------------------


def _check_joints(model: Model, fn: str):
    for j, t in enumerate(model.joint_types):
        if t == "spherical":
            raise ValueError(
                f"{fn}: joint '{model.joint_names[j]}' is spherical, which the SoA kernels do not "
                f"support; use jaxdyn.{fn.replace('_batch', '')} with jax.vmap for this model")


def _model_numbers(model: Model):
    """Per-body model-only arrays: joint matrices ``A0, A1, A2`` (Rodrigues split, see the module
    docstring), ``w = R0 u``, ``p0``, axis ``u``, and the rigid inertia ``(m, h, Ibar)`` about
    the body origin (seed 000 (3.1))."""
    dt = model.dtype
    R0, p0, u = model.placement_R.astype(dt), model.placement_p.astype(dt), model.axis.astype(dt)
    uu = u[:, :, None] * u[:, None, :]
    A0 = jnp.einsum("bij,bjk->bik", R0, uu)
    K = jnp.stack([jnp.zeros_like(u[:, 0]), -u[:, 2], u[:, 1], u[:, 2], jnp.zeros_like(u[:, 0]), -u[:, 0],
                   -u[:, 1], u[:, 0], jnp.zeros_like(u[:, 0])], -1).reshape(-1, 3, 3)
    A2 = jnp.einsum("bij,bjk->bik", R0, K)
    w = jnp.einsum("bij,bj->bi", R0, u)
    m, c, Ic = model.mass.astype(dt), model.com.astype(dt), model.inertia.astype(dt)
    cc = jnp.sum(c * c, -1)[:, None, None] * jnp.eye(3, dtype=dt) - c[:, :, None] * c[:, None, :]
    Ib = Ic + m[:, None, None] * cc
    iu = np.array(_UPPER)
    Ib6 = Ib[:, iu[:, 0], iu[:, 1]]
    return {"A0": A0.reshape(-1, 9), "A1": (R0 - A0).reshape(-1, 9), "A2": A2.reshape(-1, 9), "R0": R0.reshape(-1, 9),
            "w": w, "p0": p0, "u": u, "m": m, "h": m[:, None] * c, "Ib": Ib6}


def _split(x):
    """Rows of an array as a tuple (``x[0], x[1], ...``)."""
    return tuple(x[k] for k in range(x.shape[0]))


def _body(nums, i):
    """The per-body numbers of body ``i`` as tuples of 0-d arrays."""
    return {k: (v[i] if v.ndim == 1 else _split(v[i])) for k, v in nums.items()}


def _joint_X(t, bn, qi):
    """Placement of body ``i`` in its parent for a 1-dof joint of static type ``t``."""
    if t == "prismatic":
        return bn["R0"], _v_add(bn["p0"], _v_scale(qi, bn["w"]))
    s, c = jnp.sin(qi), jnp.cos(qi)
    R = tuple(_add(a0, _mul(c, a1), _mul(s, a2)) for a0, a1, a2 in zip(bn["A0"], bn["A1"], bn["A2"]))
    return R, bn["p0"]


def _joint_S(t, bn):
    """Motion subspace ``(sa, sl)``: revolute ``[u; 0]``, prismatic ``[0; u]``."""
    z = (0.0, 0.0, 0.0)
    return (z, bn["u"]) if t == "prismatic" else (bn["u"], z)


def _free_X(qr):
    """Pose of a free root from ``[x, y, z, qw, qx, qy, qz]`` (quaternion normalised)."""
    x, y, z = qr[0:3]
    qw, qx, qy, qz = qr[3:7]
    s = 2.0 / (qw * qw + qx * qx + qy * qy + qz * qz)
    R = (1 - s * (qy * qy + qz * qz), s * (qx * qy - qw * qz), s * (qx * qz + qw * qy),
         s * (qx * qy + qw * qz), 1 - s * (qx * qx + qz * qz), s * (qy * qz - qw * qx),
         s * (qx * qz - qw * qy), s * (qy * qz + qw * qx), 1 - s * (qx * qx + qy * qy))
    return R, (x, y, z)


# --- argument handling ------------------------------------------------------------------------


def _prepare(model: Model, fn: str, **args):
    _check_joints(model, fn)
    sizes = {"q": (model.nq,), "f_ext": (model.nb, 6)}
    batch, single, out = None, None, {}
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
                f"or {want} for model '{model.name}' (nq={model.nq}, nv={model.nv}, nb={model.nb})")
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
            raise ValueError(f"{fn}: argument '{name}' has batch size {x.shape[0]}, expected {batch} (from the first argument)")
        out[name] = jnp.moveaxis(x, 0, -1)  # batch last
    return batch, single, out


# Fusion control. XLA CPU fuses a cheap elementwise producer into *every* consumer; on these long
# elementwise graphs (each scalar of a link step feeds many others) that duplicates whole upstream
# cones into each fusion: 6-7x the flops and minutes of compile time for a 6-link robot
# (``optimization_barrier`` does not help: XLA CPU expands barriers before fusing). Compiling the
# kernels with instruction fusion switched off (per program, through ``jax.jit``'s
# ``compiler_options``; no global setting) computes every value once: measured on a 2-core
# x86 CPU, ur5 ABA at batch 4096 3.2 us/sample unfused vs 10 us fused, and 5-10x faster compiles.
# Use :func:`jit` (or pass these options yourself) for the SoA kernels.
COMPILER_OPTIONS = {"xla_disable_hlo_passes": "fusion"}


def jit(fn=None, **kwargs):
    """``jax.jit`` with :data:`COMPILER_OPTIONS` (extra ``compiler_options`` are merged), e.g.
    ``f = kernels.jit(kernels.aba_batch)``. On a GPU backend the
    options are not passed (XLA GPU fuses these graphs without duplicating them)."""
    if fn is None:
        return lambda f: jit(f, **kwargs)
    opts = dict(kwargs.pop("compiler_options", None) or {})
    if jax.default_backend() == "cpu":
        opts = {**COMPILER_OPTIONS, **opts}
    return jax.jit(fn, compiler_options=opts or None, **kwargs)


def _rows(x, B, dtype):
    """Stack SoA scalars (literals, 0-d model numbers or (B,) arrays) to a ``(k, B)`` array."""
    return jnp.stack([jnp.broadcast_to(jnp.asarray(r, dtype), (B,)) for r in x])


def _finish(rows, B, dtype, single, shape):
    out = jnp.moveaxis(rows.reshape(shape + (B,)), -1, 0)
    return out[0] if single else out


# --- unrolled traversals (Python loop over links, static parents and joint types) -----------------


def _kinematics_unroll(model, nums, qT):
    """Per body: numbers, placement ``(R, p)`` in the parent, motion subspace (None for a free
    root)."""
    lay = model.layout
    bodies = []
    for i, t in enumerate(model.joint_types):
        bn = _body(nums, i)
        qs = int(lay.q_start[i])
        if t == "free":
            bodies.append((bn, _free_X(tuple(qT[qs + k] for k in range(7))), None))
        else:
            bodies.append((bn, _joint_X(t, bn, qT[qs]), _joint_S(t, bn)))
    return bodies


def _world_acc(model):
    """``[0; -g]`` (seed 000 R3), as SoA scalars."""
    g = model.gravity.astype(model.dtype)
    return (0.0, 0.0, 0.0), (-g[0], -g[1], -g[2])


def _aba_unroll(model, nums, qT, qdT, tauT, feT):
    lay = model.layout
    parents = model.parents
    arm = model.armature.astype(model.dtype)
    kin = _kinematics_unroll(model, nums, qT)
    nb = model.nb
    zero3 = (0.0, 0.0, 0.0)
    V, Cb, P, Z = [None] * nb, [None] * nb, [None] * nb, [None] * nb
    # 1. outward: velocities v, bias accelerations c = v x S qd, bias forces z = v x* I v - f_ext
    for i in range(nb):
        bn, (R, p), S = kin[i]
        vs = int(lay.v_start[i])
        if S is None:  # free root: v = qd[0:6] (body frame), c = v x v = 0
            w, v = tuple(qdT[vs:vs + 3]), tuple(qdT[vs + 3:vs + 6])
            Cb[i] = (zero3, zero3)
        else:
            qd = qdT[vs]
            vJ = (_v_scale(qd, S[0]), _v_scale(qd, S[1]))
            pa = parents[i]
            w, v = (zero3, zero3) if pa < 0 else _motion_to_child(R, p, *V[pa])
            w, v = _v_add(w, vJ[0]), _v_add(v, vJ[1])
            Cb[i] = _cross_motion(w, v, *vJ)
        V[i] = (w, v)
        n, f = _cross_force(w, v, *_inertia_apply(bn["m"], bn["h"], bn["Ib"], w, v))
        if feT is not None:
            n, f = _v_sub(n, tuple(feT[i, k] for k in range(3))), _v_sub(f, tuple(feT[i, k] for k in range(3, 6)))
        Z[i] = (n, f)
        P[i] = _rigid_to_art(bn["m"], bn["h"], bn["Ib"])
    # 2. inward Riccati sweep (the filter)
    U, Dinv, E = [None] * nb, [None] * nb, [None] * nb
    for i in reversed(range(nb)):
        bn, (R, p), S = kin[i]
        if S is None:
            continue
        vs = int(lay.v_start[i])
        A, B, C = P[i]
        zn, zf = Z[i]
        sa, sl = S
        Ua = _v_add(_sym_mv(A, sa), _mv(B, sl))
        Ul = _v_add(_mtv(B, sa), _sym_mv(C, sl))
        D = _add(_dot(sa, Ua), _dot(sl, Ul), arm[vs])
        di = 1.0 / D
        e = _sub(tauT[vs], _add(_dot(sa, zn), _dot(sl, zf)))
        U[i], Dinv[i], E[i] = (Ua, Ul), di, e
        pa = parents[i]
        if pa < 0:
            continue
        Ga, Gl = _v_scale(di, Ua), _v_scale(di, Ul)
        Aa = tuple(_sub(A[k], _mul(Ga[r], Ua[c])) for k, (r, c) in enumerate(_UPPER))
        Ba = tuple(_sub(B[3 * r + c], _mul(Ga[r], Ul[c])) for r in range(3) for c in range(3))
        Ca = tuple(_sub(C[k], _mul(Gl[r], Ul[c])) for k, (r, c) in enumerate(_UPPER))
        cw, cv = Cb[i]
        za_n = _v_add(_v_add(zn, _v_add(_sym_mv(Aa, cw), _mv(Ba, cv))), _v_scale(e, Ga))
        za_f = _v_add(_v_add(zf, _v_add(_mtv(Ba, cw), _sym_mv(Ca, cv))), _v_scale(e, Gl))
        An, Bn, Cn = _art_to_parent(R, p, Aa, Ba, Ca)
        Ap, Bp, Cp = P[pa]
        P[pa] = (_v_add(Ap, An), _v_add(Bp, Bn), _v_add(Cp, Cn))
        fn, ff = _force_to_parent(R, p, za_n, za_f)
        Z[pa] = (_v_add(Z[pa][0], fn), _v_add(Z[pa][1], ff))
    # 3. outward accelerations (the smoother)
    Acc = [None] * nb
    qdd = [None] * model.nv
    world = _world_acc(model)
    for i in range(nb):
        bn, (R, p), S = kin[i]
        vs = int(lay.v_start[i])
        if S is None:  # free root: U = P, D = P + diag(armature), qdd = D^-1 (e - P a')
            aw, av = _motion_to_child(R, p, *world)
            A, B, C = P[i]
            Pm = _art_matrix(A, B, C)
            a1 = list(aw) + list(av)
            rhs = [_sub(_sub(tauT[vs + k], (Z[i][0] + Z[i][1])[k]), _dot(Pm[k], a1)) for k in range(6)]
            Dm = [[_add(Pm[r][c], arm[vs + r]) if r == c else Pm[r][c] for c in range(6)] for r in range(6)]
            x = _ldl_solve(Dm, rhs)
            qdd[vs:vs + 6] = x
            Acc[i] = (_v_add(aw, tuple(x[:3])), _v_add(av, tuple(x[3:])))
            continue
        pa = parents[i]
        aw, av = _motion_to_child(R, p, *(world if pa < 0 else Acc[pa]))
        aw, av = _v_add(aw, Cb[i][0]), _v_add(av, Cb[i][1])
        x = _mul(Dinv[i], _sub(E[i], _add(_dot(U[i][0], aw), _dot(U[i][1], av))))
        qdd[vs] = x
        Acc[i] = (_v_add(aw, _v_scale(x, S[0])), _v_add(av, _v_scale(x, S[1])))
    return qdd


def aba_batch(model: Model, q, qd, tau, f_ext=None):
    """Forward dynamics ``qdd = M^-1 (tau - C qd - g + sum J^T f_ext)`` for a batch, in SoA form.

    Same result as ``jax.vmap(jaxdyn.aba, in_axes=(None, 0, 0, 0))`` (armature included), with the
    Featherstone/Rodriguez recursion of the module docstring written on ``(B,)`` scalars.

    Args:
      model: a :class:`jaxdyn.Model` without spherical joints (a free root is fine).
      q ``(B, nq)``, qd ``(B, nv)``, tau ``(B, nv)``; a single sample ``(nq,)``/``(nv,)`` also works.
      f_ext: optional ``(B, nb, 6)`` body wrenches ``[moment; force]`` in body coordinates.

    Returns: qdd ``(B, nv)`` (or ``(nv,)`` for a single sample). Compile with :func:`jit` (on CPU).
    """
    B, single, a = _prepare(model, "aba_batch", q=q, qd=qd, tau=tau, f_ext=f_ext)
    nums = _model_numbers(model)
    qdd = _rows(_aba_unroll(model, nums, a["q"], a["qd"], a["tau"], a["f_ext"]), B, model.dtype)
    return _finish(qdd, B, model.dtype, single, (model.nv,))



def _rnea_unroll(model, nums, qT, qdT, qddT, feT):
    lay = model.layout
    parents = model.parents
    arm = model.armature.astype(model.dtype)
    kin = _kinematics_unroll(model, nums, qT)
    nb = model.nb
    world = _world_acc(model)
    zero3 = (0.0, 0.0, 0.0)
    V, Acc, F = [None] * nb, [None] * nb, [None] * nb
    # outward: v = X^-1 v_p + S qd, a = X^-1 a_p + S qdd + v x S qd, f = I a + v x* I v - f_ext
    for i in range(nb):
        bn, (R, p), S = kin[i]
        vs = int(lay.v_start[i])
        if S is None:  # free root: v = qd[0:6], a = X^-1 [0; -g] + qdd[0:6]
            w, v = tuple(qdT[vs:vs + 3]), tuple(qdT[vs + 3:vs + 6])
            aw, av = _motion_to_child(R, p, *world)
            aw, av = _v_add(aw, tuple(qddT[vs:vs + 3])), _v_add(av, tuple(qddT[vs + 3:vs + 6]))
        else:
            qd, qdd = qdT[vs], qddT[vs]
            vJ = (_v_scale(qd, S[0]), _v_scale(qd, S[1]))
            pa = parents[i]
            w, v = (zero3, zero3) if pa < 0 else _motion_to_child(R, p, *V[pa])
            w, v = _v_add(w, vJ[0]), _v_add(v, vJ[1])
            aw, av = _motion_to_child(R, p, *(world if pa < 0 else Acc[pa]))
            cw, cv = _cross_motion(w, v, *vJ)
            aw = _v_add(_v_add(aw, _v_scale(qdd, S[0])), cw)
            av = _v_add(_v_add(av, _v_scale(qdd, S[1])), cv)
        V[i], Acc[i] = (w, v), (aw, av)
        m, h, Ib = bn["m"], bn["h"], bn["Ib"]
        n1, f1 = _inertia_apply(m, h, Ib, aw, av)
        n2, f2 = _cross_force(w, v, *_inertia_apply(m, h, Ib, w, v))
        n, f = _v_add(n1, n2), _v_add(f1, f2)
        if feT is not None:
            n, f = _v_sub(n, tuple(feT[i, k] for k in range(3))), _v_sub(f, tuple(feT[i, k] for k in range(3, 6)))
        F[i] = (n, f)
    # inward: tau = S^T f + armature qdd, f_p += X* f
    tau = [None] * model.nv
    for i in reversed(range(nb)):
        bn, (R, p), S = kin[i]
        vs = int(lay.v_start[i])
        n, f = F[i]
        if S is None:
            tau[vs:vs + 6] = [_add(x, _mul(arm[vs + k], qddT[vs + k])) for k, x in enumerate(n + f)]
            continue
        tau[vs] = _add(_dot(S[0], n), _dot(S[1], f), _mul(arm[vs], qddT[vs]))
        pa = parents[i]
        if pa >= 0:
            fn, ff = _force_to_parent(R, p, n, f)
            F[pa] = (_v_add(F[pa][0], fn), _v_add(F[pa][1], ff))
    return tau


def rnea_batch(model: Model, q, qd, qdd, f_ext=None):
    """Inverse dynamics ``tau = M qdd + C qd + g - sum J^T f_ext`` for a batch, in SoA form.

    Same result as ``jax.vmap(jaxdyn.rnea, in_axes=(None, 0, 0, 0))`` (armature included).
    Args as :func:`aba_batch` with ``qdd (B, nv)``; returns tau ``(B, nv)``.
    """
    B, single, a = _prepare(model, "rnea_batch", q=q, qd=qd, qdd=qdd, f_ext=f_ext)
    nums = _model_numbers(model)
    tau = _rows(_rnea_unroll(model, nums, a["q"], a["qd"], a["qdd"], a["f_ext"]), B, model.dtype)
    return _finish(tau, B, model.dtype, single, (model.nv,))
