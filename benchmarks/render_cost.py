"""What a video costs against the simulation it shows (docs/rendering.md, "Cost").

Simulates ``--seconds`` of the Solo12 quadruped of :class:`jaxdyn.envs.quadruped.QuadrupedJoystick`
(its model, foot spheres, contact, control step 0.02 s of 5 substeps, its PD servo holding the
default pose: zero actions) as ``env.step`` in a ``lax.scan``, then renders the rollout with
:func:`jaxdyn.render.render_video` to an MP4 at ``--fps`` (contact forces drawn, shadows on),
at each ``--sizes``. Times, wall clock:

* ``simulate, first call``: the rollout as a script runs it once (compile and run);
* ``simulate, compiled``: the same rollout again (best of ``--repeats``);
* ``render WxH``: the whole ``render_video`` call (forward kinematics and contact forces of every
  frame, the MuJoCo scene, every frame, the MP4), and its time per frame; a size written
  ``WxH-flat`` is rendered without shadows. A first call at 64x48 compiles the kinematics and
  contact forces of the trajectory (what the first video of a script pays once); the sizes
  after it reuse them.

    python benchmarks/render_cost.py [--seconds 10] [--fps 30] [--sizes 320x240 320x240-flat 640x480] [--out FILE.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time

import jax
import jax.numpy as jnp
import numpy as np


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--fps", type=float, default=30.0)
    ap.add_argument("--sizes", nargs="+", default=["320x240", "320x240-flat", "480x360", "640x480"])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", help="write the results to this JSON file")
    a = ap.parse_args(argv)

    import imageio_ffmpeg

    import jaxdyn
    from jaxdyn import render
    from jaxdyn.render._gl import mujoco as _mujoco

    mujoco = _mujoco()  # MUJOCO_GL chosen before MuJoCo is imported
    from jaxdyn.envs.quadruped import QuadrupedJoystick

    env = QuadrupedJoystick()
    model, contact = env.model, env.contact
    steps = int(round(a.seconds / env.dt))

    def rollout(key):
        """The env's control steps with zero actions (its PD servo holds the default pose)."""

        def body(s, _):
            s2 = env.step(s, jnp.zeros(12, model.dtype))[0]
            return s2, (s.q, s.qd)

        return jax.lax.scan(body, env.reset(key), None, length=steps)[1]

    run = jax.jit(rollout)
    t = time.perf_counter()
    qs, qds = jax.block_until_ready(run(jax.random.PRNGKey(0)))
    sim_first = time.perf_counter() - t
    sim_best = np.inf
    for _ in range(a.repeats):
        t = time.perf_counter()
        jax.block_until_ready(run(jax.random.PRNGKey(0)))
        sim_best = min(sim_best, time.perf_counter() - t)
    rows = [
        {"what": f"simulate {a.seconds:g} s, first call (compile and run)", "seconds": sim_first},
        {"what": f"simulate {a.seconds:g} s, compiled (best of {a.repeats})", "seconds": sim_best},
    ]
    with tempfile.TemporaryDirectory() as d:
        for size in ["64x48-first"] + a.sizes:
            first = size.endswith("-first")
            size = size.removesuffix("-first")
            flat = first or size.endswith("-flat")
            w, h = (int(x) for x in size.removesuffix("-flat").split("x"))
            t = time.perf_counter()
            n = render.render_video(
                model,
                np.asarray(qs),
                os.path.join(d, f"{size}.mp4"),
                dt=env.dt,
                fps=a.fps,
                contact=contact,
                qds=np.asarray(qds),
                width=w,
                height=h,
                shadows=not flat,
            )
            s = time.perf_counter() - t
            what = f"render {n} frames {w}x{h}{', no shadows' if flat else ''}"
            if first:
                what += ", first call (compiles kinematics and contact forces)"
            rows.append({"what": what, "seconds": s, "per_frame_ms": 1e3 * s / n})
    for r in rows:
        extra = f"  ({r['per_frame_ms']:.0f} ms/frame)" if "per_frame_ms" in r else ""
        print(f"{r['what']:<80} {r['seconds']:8.2f} s{extra}")
    info = {
        "date": time.strftime("%Y-%m-%d"),
        "machine": f"{platform.machine()} {os.cpu_count()} cores, {platform.processor() or platform.platform()}",
        "versions": {
            "jaxdyn": jaxdyn.__version__,
            "jax": jax.__version__,
            "mujoco": mujoco.__version__,
            "imageio-ffmpeg": imageio_ffmpeg.__version__,
            "python": sys.version.split()[0],
        },
        "MUJOCO_GL": os.environ.get("MUJOCO_GL"),
        "seconds": a.seconds,
        "fps": a.fps,
        "load_average_1min_at_end": os.getloadavg()[0],
        "rows": rows,
    }
    if a.out:
        with open(a.out, "w") as f:
            json.dump(info, f, indent=1)
    return info


if __name__ == "__main__":
    main()
