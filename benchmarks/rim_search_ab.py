"""The cylinder rims' golden-section searches at full precision against the square-root precision
they run at (``jaxdyn.collision.segments.golden_steps(smooth=True)``), in one process: the
scene's contact step ``sim.step`` for 50 steps under ``jax.jit(jax.vmap(...))`` compiled twice
(the first with ``collision.cylinders.golden_minimum`` forced to full precision), the two
programs alternated, CPU time per env-step (best and median of 7), and the largest difference of
the final configurations.

    python benchmarks/rim_search_ab.py [go1_full|humanoid|go1_feet] [envs]
"""

from __future__ import annotations

import sys
import time

import sim_step


def main():
    scene = sys.argv[1] if len(sys.argv) > 1 else "go1_full"
    B = int(sys.argv[2]) if len(sys.argv) > 2 else 64
    model, con, qpos, dt = sim_step.timing_scene(scene)
    import jax
    import jax.numpy as jnp
    import numpy as np

    from jaxdyn import sim
    from jaxdyn.collision import cylinders

    q0 = jnp.tile(qpos, (B, 1)).at[:, 2].add(jnp.linspace(-0.05, 0.05, B))
    qd0 = jnp.zeros((B, model.nv), jnp.float32)
    tau = jnp.zeros(model.nv, jnp.float32)
    search = cylinders.golden_minimum
    programs = {}
    for name in ("full precision", "square root"):
        if name == "full precision":
            cylinders.golden_minimum = lambda f, lo, hi, smooth=False: search(f, lo, hi)
        else:
            cylinders.golden_minimum = search

        def roll(q, qd):
            def body(c, _):
                return sim.step(model, *c, tau, dt, contact=con), None

            return jax.lax.scan(body, (q, qd), None, length=50)[0]

        t = time.perf_counter()
        programs[name] = jax.jit(jax.vmap(roll)).lower(q0, qd0).compile()
        print(f"{name}: compile {time.perf_counter() - t:.1f} s", flush=True)
    cylinders.golden_minimum = search
    a, b = (programs[n](q0, qd0) for n in programs)
    print("largest |q difference| after 50 steps", float(jnp.max(jnp.abs(a[0] - b[0]))))
    times = {n: [] for n in programs}
    for _ in range(7):
        for n, p in programs.items():
            t = time.process_time()
            jax.block_until_ready(p(q0, qd0))
            times[n].append(time.process_time() - t)
    for n, ts in times.items():
        print(f"{n}: {min(ts) / B / 50 * 1e6:.1f} us CPU per env-step (median {np.median(ts) / B / 50 * 1e6:.1f})")


if __name__ == "__main__":
    main()
