"""Where the batch kernels start to pay: ``vmap(jaxdyn.aba)`` through the kernel against ``vmap``
of the one-sample ABA, per batch size (``jaxdyn.planner.CPU_KERNEL_MIN_BATCH``), and the same for
the contact step of ``benchmarks/sim_step.py``'s scenes (``--step``).

    python benchmarks/planner_batch.py --robot go1_feet --batches 1,16,64,256,1024,4096
    python benchmarks/planner_batch.py --robot go1_feet --batches 64,1024 --step

Each configuration is one jitted ``lax.scan`` of ``--steps`` calls; the two executors
(``jaxdyn.executor(batch="kernel")`` and ``batch="vmap"``) alternate over ``--repeats`` rounds
and the best CPU time (``time.process_time``: this 2-core VM is shared, wall time is not) per
sample is printed, with the compile time. float32, single-threaded XLA CPU.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--robot", default="go1_feet", help="a scene of benchmarks/sim_step.py or a shipped robot")
    p.add_argument("--batches", default="1,16,64,256,1024,4096")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--step", action="store_true", help="time sim.step with the scene's contact instead of aba")
    args = p.parse_args(argv)
    os.environ["XLA_FLAGS"] = " ".join([os.environ.get("XLA_FLAGS", ""), "--xla_cpu_multi_thread_eigen=false"])
    import jax
    import jax.numpy as jnp
    import numpy as np

    jax.config.update("jax_cpu_enable_async_dispatch", False)
    import jaxdyn
    from jaxdyn import contact, sim

    sys.path.insert(0, os.path.dirname(__file__))
    dt = 0.004
    if args.robot in ("go1_feet", "go1_full", "humanoid"):
        import sim_step

        path, mm, qpos, _, _ = sim_step._setup(args.robot, tempfile.mkdtemp())
        model = jaxdyn.load_mjcf(path).astype(jnp.float32)
        q0, dt = np.asarray(qpos), float(mm.opt.timestep)
    else:
        model = jaxdyn.load_robot(args.robot, dtype=jnp.float32)
        q0 = np.asarray(jaxdyn.configuration.neutral(model))
    con = contact.Contact(ground=contact.Ground.from_model(model)) if args.step else None
    for B in map(int, args.batches.split(",")):
        rng = np.random.default_rng(0)
        q = jnp.tile(jnp.asarray(q0, jnp.float32), (B, 1))
        qd = jnp.asarray(rng.standard_normal((B, model.nv)) * 0.1, jnp.float32)
        tau = jnp.zeros((B, model.nv), jnp.float32)
        if args.step:
            f = jax.vmap(lambda q, v, t: sim.step(model, q, v, t, dt, contact=con)[:2])

            def body(c, _, f=f):
                return f(c[0], c[1], tau), None

            init = (q, qd)
        else:
            g = jax.vmap(jaxdyn.aba, in_axes=(None, 0, 0, 0))

            def body(c, _, g=g, q=q, tau=tau):
                return g(model, q, c, tau) * 1e-3, None

            init = qd
        run = jax.jit(lambda init, body=body: jax.lax.scan(body, init, None, length=args.steps)[0])
        compiled, compile_s = {}, {}
        for kind in ("kernel", "vmap"):
            with jaxdyn.executor(batch=kind):
                t0 = time.perf_counter()
                compiled[kind] = run.lower(init).compile()
                compile_s[kind] = time.perf_counter() - t0
            jax.block_until_ready(compiled[kind](init))
        best = dict.fromkeys(compiled, float("inf"))
        for _ in range(args.repeats):
            for kind, c in compiled.items():
                t0 = time.process_time()
                jax.block_until_ready(c(init))
                best[kind] = min(best[kind], time.process_time() - t0)
        per = {k: v / (B * args.steps) * 1e6 for k, v in best.items()}
        print(
            f"{args.robot} {'step' if args.step else 'aba'} B={B:6d}  kernel {per['kernel']:8.2f} us "
            f"(compile {compile_s['kernel']:5.1f} s)  vmap {per['vmap']:8.2f} us (compile {compile_s['vmap']:5.1f} s)  "
            f"kernel/vmap {per['kernel'] / per['vmap']:.2f}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
