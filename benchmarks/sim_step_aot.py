"""The simulation step of ``benchmarks/sim_step.py`` compiled, not run, for a GPU on a CPU-only
host (deviceless XLA GPU compilation, as ``benchmarks/gpu_aot.py`` does for the kernels): XLA's
program memory (arguments, outputs, temporaries), the loop trips one step takes (each a launch and
a read of its predicate by the host on a GPU) and the kernels of the step's straight-line body.

Set-up as in ``gpu_aot.py`` (a separate environment with the CUDA plugin, no GPU or driver)::

    python -m venv --system-site-packages /tmp/cudaenv
    /tmp/cudaenv/bin/pip install "jax-cuda12-plugin[with-cuda]==0.10.2" jax==0.10.2 jaxlib==0.10.2
    JAX_PLATFORMS=cpu /tmp/cudaenv/bin/python benchmarks/sim_step_aot.py humanoid 4096,16384 \\
        [--executor dense=elementwise] [--steps 100] [--target benchmarks/gpu_targets/h200.txtpb]

The scenes' packages as for ``sim_step.py``. jaxdyn's planner is asked for a GPU's choices
(``jax.default_backend`` reads ``"gpu"`` while the program is traced), as on the device.
"""

import argparse
import json
import os
import re
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def loop_counts(hlo: str):
    """``(loop trips per step, kernels of the step body)`` of an optimized HLO module whose
    entry holds the rollout's loop over steps: the trips of every loop nested in the step's body
    (nested trips multiplied), and the fusions, custom calls and copies of that body."""
    from harness import hlo_computations

    comps = hlo_computations(hlo)
    parent, step = {}, None
    for c, lines in comps.items():
        for ln in lines:
            if " while(" in ln:
                body = re.search(r"body=%([^,\s]+)", ln)[1]
                t = re.search(r'"known_trip_count":\{"n":"(\d+)"', ln)
                parent[body] = (c, int(t[1]) if t else 1)
                if c.startswith("main"):
                    step = body
    trips = 0
    for body in parent:
        chain, b = [], body
        while b in parent:
            chain.append(parent[b][1])
            b = parent[b][0]
            if b == step:
                n = 1
                for t in chain:
                    n *= t
                trips += n
                break
    kernels = sum(1 for ln in comps.get(step, []) if re.search(r" (fusion|custom-call|copy)\(", ln))
    return trips, kernels


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("scene")
    p.add_argument("batches")
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--executor", default="")
    p.add_argument("--target", default=os.path.join(HERE, "gpu_targets", "h200.txtpb"))
    args = p.parse_args(argv)
    sys.path.insert(0, HERE)
    import jax
    import jax.numpy as jnp
    from jax.experimental import topologies

    jax.default_backend = lambda: "gpu"  # the planner's GPU choices, as on the device
    import sim_step

    import jaxdyn
    from jaxdyn import sim

    dev = topologies.get_topology_desc("", "cuda", target_config=open(args.target).read(), topology="1x1x1").devices[0]
    path, mm, qpos, ctrl, servo = sim_step._setup(args.scene, tempfile.mkdtemp())
    model, con = sim_step.jaxdyn_scene(path)
    dt, target = float(mm.opt.timestep), jnp.asarray(ctrl, model.dtype)

    def run(q0):  # sim_step._jaxdyn_rate's program
        qd0 = jnp.zeros(model.nv, model.dtype)
        if servo:
            return sim.rollout(model, q0, qd0, None, dt, steps=args.steps, contact=con, ctrl=lambda q, qd, t: target).q[
                -1
            ]
        zero = jnp.zeros(model.nv, model.dtype)
        return sim.rollout(model, q0, qd0, lambda q, qd, t: zero, dt, steps=args.steps, contact=con).q[-1]

    overrides = dict(kv.split("=", 1) for kv in args.executor.split(",") if kv)
    for B in (int(b) for b in args.batches.split(",")):
        x = jax.ShapeDtypeStruct((B, model.nq), jnp.float32, sharding=jax.sharding.SingleDeviceSharding(dev))
        with jaxdyn.executor(**overrides):
            t0 = time.perf_counter()
            compiled = jax.jit(jax.vmap(run)).trace(x).lower().compile()
        ma = compiled.memory_analysis()
        trips, kernels = loop_counts(compiled.as_text())
        nbytes = ma.argument_size_in_bytes + ma.output_size_in_bytes + ma.temp_size_in_bytes
        row = dict(
            scene=args.scene, envs=B, steps=args.steps, executor=args.executor or "planner", device=dev.device_kind
        )
        row.update(program_MB=round(nbytes / 2**20), temp_MB=round(ma.temp_size_in_bytes / 2**20))
        row.update(loop_trips_per_step=trips, step_body_kernels=kernels, compile_s=round(time.perf_counter() - t0, 1))
        print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
