"""Batched ABA, RNEA and CRBA on a robot with spherical joints, against Pinocchio, in one process.

The model is ``benchmarks/models/ragdoll_ball.xml``: a humanoid whose waist, neck, shoulders, hips
and ankles are ball joints (nv = 36), loaded by ``jaxdyn.load_mjcf`` and by Pinocchio's
``buildModelFromMJCF``. Rows:

* ``jit(vmap(jaxdyn.<algo>))``: the code a user writes first (its batching rule picks the
  struct-of-arrays kernel or ``vmap`` of the one-sample algorithm, ``jaxdyn.planner.batch_kernel``);
* ``jit(vmap(jaxdyn.algorithms.<algo>))``: ``vmap`` of the one-sample algorithm (no rule);
* the struct-of-arrays kernels called directly, unrolled and scanned
  (``jaxdyn.kernels.<algo>_batch(..., traversal=...)``);
* Pinocchio: one call at a time from Python (``pin.aba``, ``pin.rnea``, ``pin.crba``).

Before timing, the batched values are checked against Pinocchio in float64 (``--check``
samples): the maximum relative difference is printed with the table.

Usage: ``python benchmarks/spherical.py [--batch 4096] [--dtype float32] [--out FILE.md]``.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
MODEL = os.path.join(HERE, "models", "ragdoll_ball.xml")


def _pin_state(model, pm, q, v, x):
    """jaxdyn ``(q, v, x)`` in Pinocchio's conventions: quaternions ``[x, y, z, w]``, a free
    joint's velocity ``[v; omega]``; joints matched by name."""
    pq, pv, px = np.zeros(pm.nq), np.zeros(pm.nv), np.zeros(pm.nv)
    lay = model.layout
    for j, (name, t) in enumerate(zip(model.joint_names, model.joint_types)):
        pj = pm.joints[pm.getJointId(name)]
        qs, vs, nv = int(lay.q_start[j]), int(lay.v_start[j]), lay.joint_nv[j]
        qj = q[qs : qs + lay.joint_nq[j]]
        if t == "free":
            qj = np.concatenate([qj[0:3], qj[4:7], qj[3:4]])
        elif t == "spherical":
            qj = np.concatenate([qj[1:4], qj[0:1]])
        pq[pj.idx_q : pj.idx_q + len(qj)] = qj
        for src, dst in ((v, pv), (x, px)):
            vj = src[vs : vs + nv]
            dst[pj.idx_v : pj.idx_v + nv] = np.concatenate([vj[3:6], vj[0:3]]) if t == "free" else vj
    return pq, pv, px


def _from_pin(model, pm, y):
    """A Pinocchio joint-velocity-space vector (``(nv,)``) or matrix in jaxdyn's order."""
    perm = []
    lay = model.layout
    for j, (name, t) in enumerate(zip(model.joint_names, model.joint_types)):
        iv = pm.joints[pm.getJointId(name)].idx_v
        idx = list(range(iv, iv + lay.joint_nv[j]))
        perm += idx[3:6] + idx[0:3] if t == "free" else idx
    y = np.asarray(y)[perm]
    return y[:, perm] if y.ndim == 2 else y


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch", type=int, default=4096)
    p.add_argument("--dtype", default="float32", choices=("float32", "float64"))
    p.add_argument("--repeats", type=int, default=11)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--check", type=int, default=16, help="samples checked against Pinocchio (float64)")
    p.add_argument("--out", default=None, help="markdown file for the table")
    args = p.parse_args(argv)

    import jax
    import pinocchio as pin
    from harness import _inputs, best_of_rounds, emit, time_call

    import jaxdyn
    from jaxdyn import algorithms, kernels
    from jaxdyn._timing import measure
    from jaxdyn._x64 import x64_context

    fns = {
        "aba": (jaxdyn.aba, algorithms.aba.aba, (None, 0, 0, 0), pin.aba),
        "rnea": (jaxdyn.rnea, algorithms.rnea.rnea, (None, 0, 0, 0), pin.rnea),
        "crba": (jaxdyn.crba, algorithms.crba.crba, (None, 0), pin.crba),
    }
    pm = pin.buildModelFromMJCF(MODEL)
    pd = pm.createData()

    # values: float64, against Pinocchio
    with x64_context(True):
        m64 = jaxdyn.load_mjcf(MODEL, dtype=jax.numpy.float64)
        q, qd, x = (np.asarray(a) for a in _inputs(m64, args.check, seed=1))
        errs = {}
        for algo, (public, _, axes, pin_fn) in fns.items():
            ins = (m64, q, qd, x)[: len(axes)]
            got = np.asarray(jax.jit(jax.vmap(public, in_axes=axes))(*ins))
            err = 0.0
            for k in range(args.check):
                pq, pv, px = _pin_state(m64, pm, q[k], qd[k], x[k])
                ref = _from_pin(m64, pm, pin_fn(pm, pd, pq, pv, px) if algo != "crba" else pin_fn(pm, pd, pq))
                if algo == "crba":
                    ref = np.triu(ref) + np.triu(ref, 1).T  # Pinocchio fills the upper triangle
                err = max(err, float(np.max(np.abs(got[k] - ref)) / np.max(np.abs(ref))))
            errs[algo] = err

    dtype = getattr(jax.numpy, args.dtype)
    model = jaxdyn.load_mjcf(MODEL, dtype=dtype)
    q, qd, x = _inputs(model, args.batch)
    rows = []
    for algo, (public, one_sample, axes, pin_fn) in fns.items():
        ins = (model, q, qd, x)[: len(axes)]
        progs, compile_s = {}, {}
        batch = getattr(kernels, f"{algo}_batch")
        variants = {"public": jax.vmap(public, in_axes=axes), "one_sample": jax.vmap(one_sample, in_axes=axes)}
        for t in ("unroll", "scan"):
            variants[t] = lambda *a, t=t: batch(*a, traversal=t)
        for name, fn in variants.items():
            f = jax.jit(fn)
            _, compile_s[name], _ = measure(f, ins, 3)
            progs[name] = f
        best = best_of_rounds(progs, ins, args.rounds, args.repeats)
        pq, pv, px = _pin_state(
            model, pm, np.asarray(q[0], np.float64), np.asarray(qd[0], np.float64), np.asarray(x[0], np.float64)
        )
        pin_args = (pm, pd, pq) if algo == "crba" else (pm, pd, pq, pv, px)
        pin_s = time_call(lambda: pin_fn(*pin_args))
        rows.append(
            {"algo": algo, "pin_sps": 1.0 / pin_s, "err": errs[algo]}
            | {f"{k}_sps": args.batch / v for k, v in best.items()}
            | {f"compile_{k}": v for k, v in compile_s.items()}
        )
        print(rows[-1], flush=True)

    info = dict(pinocchio=pin.__version__, model=f"ragdoll_ball (nq {model.nq}, nv {model.nv}, 9 ball joints)")
    names = {
        "public": "jit(vmap(jaxdyn.algo))",
        "one_sample": "vmap(one-sample)",
        "unroll": "kernel, unrolled",
        "scan": "kernel, scanned",
    }
    table = [
        "| algo | path | samples/s | compile s | x vmap(one-sample) | x Pinocchio per call |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        for k, label in names.items():
            table.append(
                f"| {r['algo']} | {label} | {r[k + '_sps']:.3g} | {r['compile_' + k]:.1f} | "
                f"{r[k + '_sps'] / r['one_sample_sps']:.2f} | {r[k + '_sps'] / r['pin_sps']:.2f} |"
            )
    table += [
        "",
        "| algo | Pinocchio calls/s | max rel. diff, jit(vmap(jaxdyn.algo)) vs Pinocchio (float64) |",
        "|---|---|---|",
    ]
    table += [f"| {r['algo']} | {r['pin_sps']:.3g} | {r['err']:.1e} |" for r in rows]
    emit(table, args.out, **info, dtype=args.dtype, batch=args.batch)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
