"""What the constraint-space operator ``A = J M^-1 J^T`` costs (docs/constraints.md, "Cost").

Times, in one process, ``jit(vmap(...))`` over a batch of configurations of a chain of ``n``
revolute links (``jaxdyn.builders.chain``) with a connect at its tip (3 rows) or a weld (6):

* ``innovations``: ``X = M^-1 J^T`` by the O(N) filter/smoother of the innovations
  factorization, one sweep per row over one Riccati gather, then ``A = J X``
  (:func:`jaxdyn.constraints.delassus`);
* ``dense``: CRBA, a Cholesky factorisation and two triangular solves (O(N^3));
* ``solve``: the whole soft constrained forward dynamics (ABA, rows, ``A``, the ``m x m`` solve);
* with ``--pinocchio``: the pushrod leg of tests/data/mjcf/constraints/leg.xml, the hard solve
  batched against Pinocchio's ``constraintDynamics`` called once per state (its model built as
  tests/reference/generate_mujoco_constraints.py builds it).

    python benchmarks/constraints_cost.py [--n 6 12 24 48] [--batch 256] [--repeats 5] [--pinocchio]

Prints microseconds per sample (best of ``--repeats``) and the ratio dense / innovations.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import jaxdyn  # noqa: E402
from jaxdyn import constraints as C  # noqa: E402


def _time(run, args, repeats):
    jax.block_until_ready(run(*args))
    best = np.inf
    for _ in range(repeats):
        t = time.perf_counter()
        jax.block_until_ready(run(*args))
        best = min(best, time.perf_counter() - t)
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, nargs="+", default=[6, 12, 24, 48])
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--kind", choices=("connect", "weld"), default="connect")
    ap.add_argument("--pinocchio", action="store_true")
    args = ap.parse_args()
    if args.pinocchio:
        return _leg_against_pinocchio(args)
    print(f"backend {jax.default_backend()}, batch {args.batch}, {args.kind} at the tip, us per sample")
    print(f"{'n':>4} {'innovations':>12} {'dense':>10} {'dense/innov':>12} {'solve':>10}")
    for n in args.n:
        tree = jaxdyn.builders.chain(n, seed=1)
        make = C.connect if args.kind == "connect" else C.weld
        m = C.add(tree, make(tree, tree.body_names[-1], tree.body_names[n // 2], name="loop"))
        rng = np.random.default_rng(0)
        q = jnp.asarray(rng.uniform(-1, 1, (args.batch, m.nq)), m.dtype)
        v = jnp.asarray(rng.standard_normal((args.batch, m.nv)), m.dtype)
        J = jax.vmap(lambda q: C.rows(m, q).J)(q)
        inn = jax.jit(jax.vmap(lambda q, J: C.delassus(m, q, J)))
        den = jax.jit(jax.vmap(lambda q, J: C.delassus(m, q, J, "dense")))
        sol = jax.jit(jax.vmap(lambda q, v: C.constrained_aba(m, q, v, jnp.zeros(m.nv)).qdd))
        ti = _time(inn, (q, J), args.repeats) / args.batch * 1e6
        td = _time(den, (q, J), args.repeats) / args.batch * 1e6
        ts = _time(sol, (q, v), args.repeats) / args.batch * 1e6
        print(f"{n:>4} {ti:>12.2f} {td:>10.2f} {td / ti:>12.2f} {ts:>10.2f}")


def _leg_against_pinocchio(args):
    import mujoco
    import pinocchio as pin

    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, os.path.join(here, "..", "tests", "reference"))
    from generate_mujoco_constraints import _pinocchio_model

    path = os.path.join(here, "..", "tests", "data", "mjcf", "constraints", "leg.xml")
    m = jaxdyn.load_mjcf(path)
    mm = mujoco.MjModel.from_xml_path(path)
    rng = np.random.default_rng(0)
    q = mm.qpos0 + 0.1 * rng.standard_normal((args.batch, mm.nq))
    v = rng.standard_normal((args.batch, mm.nv))
    run = jax.jit(jax.vmap(lambda q, v: C.constrained_aba(m, q, v, jnp.zeros(m.nv), mode="hard").qdd))
    tj = _time(run, (jnp.asarray(q), jnp.asarray(v)), args.repeats) / args.batch * 1e6
    pm, last = _pinocchio_model(mm)
    pd = pm.createData()
    cm = pin.RigidConstraintModel(
        pin.ContactType.CONTACT_3D,
        pm,
        last[mm.eq_obj1id[0]],
        pin.SE3(np.eye(3), mm.eq_data[0, :3].copy()),
        last[mm.eq_obj2id[0]],
        pin.SE3(np.eye(3), mm.eq_data[0, 3:6].copy()),
        pin.ReferenceFrame.LOCAL,
    )
    models, datas = pin.StdVec_RigidConstraintModel(), pin.StdVec_RigidConstraintData()
    models.append(cm)
    datas.append(cm.createData())
    pin.initConstraintDynamics(pm, pd, models, datas)
    prox = pin.ProximalSettings(1e-14, 0.0, 1)
    tau = np.zeros(pm.nv)
    best = np.inf
    for _ in range(args.repeats):
        t = time.perf_counter()
        for k in range(args.batch):
            pin.constraintDynamics(pm, pd, q[k] - mm.qpos0, v[k], tau, models, datas, prox)
        best = min(best, time.perf_counter() - t)
    tp = best / args.batch * 1e6
    print(
        f"leg (nv {m.nv}, 3 rows), batch {args.batch}, us per sample: jaxdyn hard {tj:.2f}, "
        f"Pinocchio constraintDynamics {tp:.2f} (one Python call per state), ratio {tj / tp:.2f}"
    )


if __name__ == "__main__":
    main()
