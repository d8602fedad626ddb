"""What the implicit contact step's joint-space matrices cost per call: the Newton matrix
(:meth:`jaxdyn.contact.JointSpaceContacts.newton_matrix`, one per Newton step) and the contact
force's velocity derivative (``velocity_derivative``, one per polish step), ``jit(vmap(...))``
over a batch of one state, on ``benchmarks/sim_step.py``'s scenes after 0.5 s of falling or
standing with zero torque (so that rows touch), float32, process CPU time per env, best of 7
blocks of 20 calls. This VM's timings drift between processes, so compare two checkouts by
running it alternately in each, several times:

    for r in 1 2 3; do
      (cd ../base && PYTHONPATH=. python ../main/benchmarks/newton_matrix_cost.py humanoid --batch 256)
      python benchmarks/newton_matrix_cost.py humanoid --batch 256
    done
"""

import argparse
import os
import sys
import time


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("scene", nargs="?", default="humanoid")
    p.add_argument("--batch", type=int, default=64)
    args = p.parse_args(argv)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import jax
    import jax.numpy as jnp
    import sim_step

    from jaxdyn import sim

    model, con, q, dt = sim_step.timing_scene(args.scene)
    B = args.batch
    zero = jnp.zeros(model.nv, jnp.float32)
    step = jax.jit(lambda q, qd: sim.step(model, q, qd, zero, dt, contact=con)[:2])
    qd = zero
    for _ in range(int(0.5 / dt)):
        q, qd = step(q, qd)
    q0, qd0 = jnp.tile(q, (B, 1)), jnp.tile(qd, (B, 1))
    js = jax.jit(jax.vmap(lambda q, qd: con.joint_space(model, q, None, 0.0, dt, qd=qd, step=dt)))(q0, qd0)
    fbar = jax.vmap(lambda j: j.elastic_normal_forces())(js)

    def cpu_us(f, *a, n=20):
        c = jax.jit(f)
        jax.block_until_ready(c(*a))
        best = float("inf")
        for _ in range(7):
            t = time.process_time()
            for _ in range(n):
                out = c(*a)
            jax.block_until_ready(out)
            best = min(best, (time.process_time() - t) / n)
        return best / B * 1e6

    nm = cpu_us(jax.vmap(lambda j, v, f: j.newton_matrix(v, f)), js, qd0, fbar)
    vd = cpu_us(jax.vmap(lambda j, v: j.velocity_derivative(v)), js, qd0)
    rows = js.G.shape[1]
    print(
        f"{args.scene}: {B} envs, {rows} rows, nv {model.nv}: newton_matrix {nm:.1f} us, "
        f"velocity_derivative {vd:.1f} us per env (CPU time)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
