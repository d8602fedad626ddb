"""The simulation step with contact, as RL users run it: env-steps per second against MuJoCo C.

``python benchmarks/sim_step.py`` steps three scenes that the library was never tuned on, in
float32, ``jit(vmap(sim.rollout))`` of ``--steps`` steps per env, and in the same process MuJoCo
C's own batched rollout (``mujoco.rollout``, one ``MjData`` per thread, as many threads as cores)
on the same scene, the same time step and the same initial state:

* ``go1_feet``: MuJoCo Playground's Go1 feet-only scene (``scene_mjx_feetonly_flat_terrain.xml``,
  4 ms steps, its ``<option iterations="1" ls_iterations="5">``), the position servos
  (``kp`` 35, the actuator's force range) holding the ``home`` keyframe from the ``home`` pose;
* ``go1_full``: Playground's Go1 with every collision geom
  (``scene_mjx_fullcollisions_flat_terrain.xml``), zero torque from the ``home`` pose;
* ``humanoid``: dm_control's humanoid (``suite/humanoid.xml``: 19 capsules and spheres, 157
  self-collision pairs after MuJoCo's filter, and the floor; 5 ms steps), zero torque from its
  initial pose, so it falls.

jaxdyn runs the step as a user writes it: ``sim.rollout(model, q0, qd0, policy, dt, steps,
contact=Contact(ground=Ground.from_model(model)))`` with every default, vmapped over envs and
jitted, with ``--xla_cpu_multi_thread_eigen=false`` (below). ``--devices all`` also runs it with the batch split over one XLA CPU device per core
(``--xla_force_host_platform_device_count``, set before jax is imported), the counterpart of
MuJoCo's threads. The Playground files ship in the ``playground`` wheel and dm_control's in
``dm-control`` (install both with ``--no-deps``; only their XML is read); the Go1's visual
meshes, which Menagerie downloads at run time, are dropped (they carry no mass and collide with
nothing), in a temporary copy.

Each row: env-steps/s of both, the ratio jaxdyn / MuJoCo, jaxdyn's compile time, and where
env 0's base ends up in both after the rollout (the same physics, to the contact model's
differences). Results: ``benchmarks/results/cpu-<date>-sim-step.{json,md}``.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import os
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

SCENES = ("go1_feet", "go1_full", "humanoid")


def _package_dir(name):
    spec = importlib.util.find_spec(name)  # no import: only the package's files are read
    if spec is None or spec.origin is None:
        raise SystemExit(f"sim_step: this scene needs the '{name}' package's files (pip install --no-deps ...)")
    return os.path.dirname(spec.origin)


def _without_meshes(src_dir, dst_dir):
    """Copies of the XML files of ``src_dir`` without mesh assets and mesh geoms."""
    os.makedirs(dst_dir, exist_ok=True)
    for f in os.listdir(src_dir):
        if not f.endswith(".xml"):
            continue
        tree = ET.parse(os.path.join(src_dir, f))
        for parent in list(tree.getroot().iter()):
            for c in list(parent):
                drop_asset = c.tag == "mesh" and parent.tag == "asset"
                drop_geom = c.tag == "geom" and ("mesh" in c.attrib or c.get("class") == "visual")
                if drop_asset or drop_geom:
                    parent.remove(c)
        tree.write(os.path.join(dst_dir, f))
    return dst_dir


def scene_file(name, workdir):
    """The XML file of a scene (``SCENES``)."""
    if name.startswith("go1"):
        src = os.path.join(_package_dir("mujoco_playground"), "_src", "locomotion", "go1", "xmls")
        d = _without_meshes(src, os.path.join(workdir, "go1"))
        stem = "feetonly" if name == "go1_feet" else "fullcollisions"
        return os.path.join(d, f"scene_mjx_{stem}_flat_terrain.xml")
    if name == "humanoid":
        return os.path.join(_package_dir("dm_control"), "suite", "humanoid.xml")
    raise SystemExit(f"sim_step: unknown scene '{name}', choose from {', '.join(SCENES)}")


def _setup(name, workdir):
    """MuJoCo model, initial qpos, the control MuJoCo gets, and jaxdyn's policy parameters."""
    import mujoco
    import numpy as np

    path = scene_file(name, workdir)
    mm = mujoco.MjModel.from_xml_path(path)
    if mm.nkey:
        qpos, ctrl = mm.key_qpos[0].copy(), mm.key_ctrl[0].copy()
    else:
        qpos, ctrl = mm.qpos0.copy(), np.zeros(mm.nu)
    servo = name == "go1_feet"
    if not servo:
        ctrl = np.zeros(mm.nu)
        mm.actuator_gainprm[:] = 0.0  # zero torque whatever the actuator
        mm.actuator_biasprm[:] = 0.0
    return path, mm, qpos, ctrl, servo


def _mujoco_rate(mm, qpos, ctrl, B, T, threads, repeats):
    import mujoco
    import numpy as np
    from mujoco import rollout

    d = mujoco.MjData(mm)
    d.qpos[:] = qpos
    spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
    st = np.zeros(mujoco.mj_stateSize(mm, spec))
    mujoco.mj_getState(mm, d, st, spec)
    st = np.tile(st, (B, 1))
    ct = np.tile(ctrl, (B, T, 1))
    datas = [mujoco.MjData(mm) for _ in range(threads)]
    with rollout.Rollout(nthread=threads) as r:
        r.rollout(mm, datas, st, ct)
        best = float("inf")
        for _ in range(repeats):
            t0 = time.perf_counter()
            states, _ = r.rollout(mm, datas, st, ct)
            best = min(best, time.perf_counter() - t0)
    return B * T / best, states[0, -1, 1 : 1 + mm.nq]  # state: time, qpos, ...


def _jaxdyn_rate(path, mm, qpos, ctrl, servo, B, T, devices, repeats):
    import jax
    import jax.numpy as jnp
    import numpy as np

    import jaxdyn
    from jaxdyn import contact, sim

    model = jaxdyn.load_mjcf(path).astype(jnp.float32)
    dt = float(mm.opt.timestep)
    con = contact.Contact(ground=contact.Ground.from_model(model))
    nact = model.nv - 6
    kp = 35.0
    # the actuators' force ranges, in the model's joint order (Playground's Go1: one per leg joint)
    lim = jnp.asarray(np.abs(mm.actuator_forcerange[:, 1]), model.dtype)
    target = jnp.asarray(ctrl, model.dtype)

    def policy(q, qd, t):
        if not servo:
            return jnp.zeros(model.nv, model.dtype)
        u = jnp.clip(kp * (target - q[7 : 7 + nact]), -lim, lim)
        return jnp.concatenate([jnp.zeros(6, model.dtype), u])

    def run(q0):
        return sim.rollout(model, q0, jnp.zeros(model.nv, model.dtype), policy, dt, steps=T, contact=con).q[-1]

    q0 = jnp.tile(jnp.asarray(qpos, model.dtype), (B, 1))
    fn = jax.jit(jax.vmap(run))
    if devices > 1:
        from jax.sharding import Mesh, NamedSharding, PartitionSpec

        mesh = Mesh(np.asarray(jax.devices()[:devices]), ("env",))
        sharding = NamedSharding(mesh, PartitionSpec("env"))
        q0 = jax.device_put(q0, sharding)
        fn = jax.jit(jax.vmap(run), in_shardings=sharding, out_shardings=sharding)
    t0 = time.perf_counter()
    out = jax.block_until_ready(fn(q0))
    compile_s = time.perf_counter() - t0
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = jax.block_until_ready(fn(q0))
        best = min(best, time.perf_counter() - t0)
    return B * T / best, compile_s, np.asarray(out[0])


def _write(args, rows, cores):
    """The record so far (after every row): ``<out>/cpu-<date>-sim-step<tag>.{json,md}``."""
    import jax
    import mujoco

    env = dict(
        date=datetime.date.today().isoformat(),
        jax=jax.__version__,
        mujoco=mujoco.__version__,
        device=jax.devices()[0].platform,
        cpu_count=cores,
        dtype="float32",
        mujoco_peer=f"mujoco.rollout, {cores} threads (one MjData each), the scene's own <option>",
        python=sys.version.split()[0],
    )
    os.makedirs(args.out, exist_ok=True)
    stem = os.path.join(args.out, f"{env['device']}-{env['date']}-sim-step{args.tag}")
    with open(stem + ".json", "w") as f:
        json.dump(dict(env=env, rows=rows), f, indent=1)
    with open(stem + ".md", "w") as f:
        f.write("# The simulation step with contact (`python benchmarks/sim_step.py`)\n\n")
        f.write(", ".join(f"{k}: {v}" for k, v in env.items()) + "\n\n")
        f.write("| scene | envs x steps | XLA devices | jaxdyn env-steps/s | MuJoCo C env-steps/s | ratio | ")
        f.write("compile s | base z, jaxdyn / MuJoCo |\n|---|---|---|---|---|---|---|---|\n")
        for r in rows:
            f.write(
                f"| {r['scene']} | {r['batch']} x {r['steps']} | {r['devices']} | {r['jaxdyn_steps_per_s']:.3g} | "
                f"{r['mujoco_steps_per_s']:.3g} | {r['ratio']:.3f} | {r['compile_s']:.1f} | "
                f"{r['base_z_jaxdyn']:.3f} / {r['base_z_mujoco']:.3f} |\n"
            )
    return stem


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--scenes", default=",".join(SCENES))
    p.add_argument("--batches", default="1,64,1024,4096")
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--devices", default="1", help="'1', 'all' (one XLA CPU device per core) or '1,all'")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--tag", default="")
    p.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results"))
    args = p.parse_args(argv)
    cores = os.cpu_count() or 1
    devs = sorted({cores if d == "all" else int(d) for d in args.devices.split(",")})
    # must precede the first import of jax. XLA CPU's Eigen thread pool sometimes stops with the
    # batch's result never ready (jax 0.10.2: the Go1 step with two devices at 1,024 envs, every
    # thread parked; known to other JAX users); single-threaded Eigen avoids it
    flags = ["--xla_cpu_multi_thread_eigen=false"]
    if max(devs) > 1:
        flags.append(f"--xla_force_host_platform_device_count={max(devs)}")
    os.environ["XLA_FLAGS"] = " ".join([os.environ.get("XLA_FLAGS", ""), *flags]).strip()
    import warnings

    import jax

    # with two CPU devices the batch's result was sometimes never ready (jax 0.10.2, the Go1 step
    # at 1,024 envs, every thread parked) whatever the Eigen setting; synchronous dispatch
    jax.config.update("jax_cpu_enable_async_dispatch", False)

    warnings.filterwarnings("ignore", message=".*inertia.*")
    rows = []
    workdir = tempfile.mkdtemp(prefix="sim_step_")
    for name in args.scenes.split(","):
        path, mm, qpos, ctrl, servo = _setup(name, workdir)
        for B in (int(b) for b in args.batches.split(",")):
            mj_rate, mj_q = _mujoco_rate(mm, qpos, ctrl, B, args.steps, cores, args.repeats)
            for nd in devs:
                if B % nd:
                    continue
                rate, comp, q = _jaxdyn_rate(path, mm, qpos, ctrl, servo, B, args.steps, nd, args.repeats)
                row = dict(
                    scene=name,
                    batch=B,
                    steps=args.steps,
                    devices=nd,
                    jaxdyn_steps_per_s=rate,
                    mujoco_steps_per_s=mj_rate,
                    ratio=rate / mj_rate,
                    compile_s=comp,
                    base_z_jaxdyn=float(q[2]),
                    base_z_mujoco=float(mj_q[2]),
                )
                rows.append(row)
                print(
                    f"{name:9s} B={B:5d} dev={nd} jaxdyn {rate:10.0f}/s  mujoco {mj_rate:10.0f}/s  "
                    f"ratio {rate / mj_rate:6.3f}  compile {comp:5.1f}s  z {q[2]:.3f} vs {mj_q[2]:.3f}",
                    flush=True,
                )
                _write(args, rows, cores)
    print("wrote", _write(args, rows, cores) + ".md")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
