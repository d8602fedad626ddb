"""The simulation step with contact, as RL users run it: env-steps per second against MuJoCo C, MJX, MJWarp.

``python benchmarks/sim_step.py`` steps three scenes that the library was never tuned on, in
float32, ``jit(vmap(sim.rollout))`` of ``--steps`` steps per env, and in the same process the
peers (``--peers``) on the same scene, the same time step and the same initial state:

* ``go1_feet``: MuJoCo Playground's Go1 feet-only scene (``scene_mjx_feetonly_flat_terrain.xml``,
  4 ms steps, its ``<option iterations="1" ls_iterations="5">``, eulerdamp off), the position
  servos (``kp`` 35, the actuator's force range) holding the ``home`` keyframe from the ``home``
  pose;
* ``go1_full``: Playground's Go1 with every collision geom
  (``scene_mjx_fullcollisions_flat_terrain.xml``), zero torque from the ``home`` pose;
* ``humanoid``: dm_control's humanoid (``suite/humanoid.xml``: 19 capsules and spheres, 157
  self-collision pairs after MuJoCo's filter, and the floor; 5 ms steps), zero torque from its
  initial pose, so it falls.

The peers, each as its users run it:

* ``mujoco``: MuJoCo C's own batched rollout (``mujoco.rollout``, one ``MjData`` per thread, as
  many threads as cores), the scene's own ``<option>``;
* ``mjx``: MJX (``mujoco.mjx``, JAX implementation), ``jit`` of a ``scan`` over
  ``vmap(mjx.step)``, configured as MuJoCo Playground configures the scene: the Go1 files are
  Playground's own; for the humanoid, Playground's copy of it
  (``dm_control_suite/xmls/humanoid.xml``: the same bodies and geoms, Newton, ``iterations`` 4,
  ``ls_iterations`` 8, eulerdamp off, ``max_contact_points`` and ``max_geom_pairs`` 8);
* ``mjx_default``: MJX with MuJoCo's default solver settings (Newton, 100 iterations, 50
  line-search steps, eulerdamp on), for reference;
* ``mjwarp``: MJWarp (``mujoco_warp``), the scene as ``mjx`` has it, one ``mjw.step`` captured in
  a CUDA graph and launched ``--steps`` times, contact and constraint capacity (``nconmax``,
  ``njmax``) sized from MuJoCo C's largest counts along the same rollout.

jaxdyn runs the step as a user writes it: ``sim.rollout(model, q0, qd0, None, dt, steps,
contact=Contact(ground=Ground.from_model(model)), ctrl=policy)`` with every default (the scene's
actuators driven by the control MuJoCo gets; zero torque where MuJoCo's are zeroed), vmapped
over envs and jitted; on the CPU with ``--xla_cpu_multi_thread_eigen=false`` (below). ``--devices all`` also
runs it with the batch split over one XLA CPU device per core
(``--xla_force_host_platform_device_count``, set before jax is imported), the counterpart of
MuJoCo's threads. The Playground files ship in the ``playground`` wheel and dm_control's in
``dm-control`` (install both with ``--no-deps``; only their XML is read); the Go1's visual
meshes, which Menagerie downloads at run time, are dropped (they carry no mass and collide with
nothing), in a temporary copy.

Each row: one engine on one scene and batch: env-steps/s, the ratio jaxdyn / that engine, the
compile time, the compiled program's memory (XLA's ``memory_analysis``: arguments, outputs and
temporaries; MJWarp: device memory taken by its model, data and graph), and where env 0's base
ends up (the same physics, to the contact model's differences). Results:
``benchmarks/results/<platform>-<date>-sim-step<tag>.{json,md}``, written after every row.
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
PEERS = ("mujoco", "mjx", "mjx_default", "mjwarp")
# MJX's defaults are MuJoCo's: Newton, 100 iterations, 50 line-search steps, eulerdamp on
MJX_DEFAULTS = dict(solver=2, iterations=100, ls_iterations=50)
PEER_CONFIG = {
    "mujoco": "mujoco.rollout, {cores} threads (one MjData each), the scene's own <option>",
    "mjx": "MJX (JAX), jit(scan(vmap(mjx.step))), Playground's <option> for the scene",
    "mjx_default": "MJX (JAX), MuJoCo's default solver: Newton, iterations 100, ls_iterations 50, eulerdamp on",
    "mjwarp": "MJWarp, mjw.step in a CUDA graph, Playground's <option>, nconmax/njmax from MuJoCo C's counts",
}


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


def scene_file(name, workdir, playground=False):
    """The XML file of a scene (``SCENES``); ``playground``: the file Playground configures for MJX."""
    if name.startswith("go1"):
        src = os.path.join(_package_dir("mujoco_playground"), "_src", "locomotion", "go1", "xmls")
        d = _without_meshes(src, os.path.join(workdir, "go1"))
        stem = "feetonly" if name == "go1_feet" else "fullcollisions"
        return os.path.join(d, f"scene_mjx_{stem}_flat_terrain.xml")
    if name == "humanoid" and playground:
        return os.path.join(_package_dir("mujoco_playground"), "_src", "dm_control_suite", "xmls", "humanoid.xml")
    if name == "humanoid":
        return os.path.join(_package_dir("dm_control"), "suite", "humanoid.xml")
    raise SystemExit(f"sim_step: unknown scene '{name}', choose from {', '.join(SCENES)}")


def _load(path, servo, default_solver=False):
    """The MuJoCo model of a scene file: zero torque unless ``servo``; MuJoCo's default solver."""
    import mujoco

    mm = mujoco.MjModel.from_xml_path(path)
    if not servo:
        mm.actuator_gainprm[:] = 0.0  # zero torque whatever the actuator
        mm.actuator_biasprm[:] = 0.0
    if default_solver:
        for k, v in MJX_DEFAULTS.items():
            setattr(mm.opt, k, v)
        mm.opt.disableflags &= ~int(mujoco.mjtDisableBit.mjDSBL_EULERDAMP)
    return mm


def _setup(name, workdir):
    """The scene's file and MuJoCo model, initial qpos, the control MuJoCo gets, the servo flag."""
    import numpy as np

    path = scene_file(name, workdir)
    servo = name == "go1_feet"
    mm = _load(path, servo)
    if mm.nkey:
        qpos, ctrl = mm.key_qpos[0].copy(), mm.key_ctrl[0].copy()
    else:
        qpos, ctrl = mm.qpos0.copy(), np.zeros(mm.nu)
    if not servo:
        ctrl = np.zeros(mm.nu)
    return path, mm, qpos, ctrl, servo


def _initial_data(mm, qpos, ctrl):
    import mujoco

    d = mujoco.MjData(mm)
    d.qpos[:] = qpos
    d.ctrl[:] = ctrl
    mujoco.mj_forward(mm, d)
    return d


def _mujoco_rate(mm, qpos, ctrl, B, T, threads, repeats):
    """MuJoCo C's rollout: env-steps/s, env 0's final qpos, the largest contact and row counts."""
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


def _mujoco_counts(mm, qpos, ctrl, T):
    """The largest ncon and nefc along one env's rollout of T steps (MJWarp's capacities)."""
    import mujoco

    d = _initial_data(mm, qpos, ctrl)
    ncon, nefc = d.ncon, d.nefc
    for _ in range(T):
        mujoco.mj_step(mm, d)
        ncon, nefc = max(ncon, d.ncon), max(nefc, d.nefc)
    return ncon, nefc


def _xla_bytes(compiled):
    """Arguments, outputs and temporaries of a compiled XLA program, in bytes (None if unknown)."""
    try:
        ma = compiled.memory_analysis()
        return int(ma.argument_size_in_bytes + ma.output_size_in_bytes + ma.temp_size_in_bytes)
    except Exception:  # noqa: BLE001 - not every backend reports it
        return None


def _time_jax(fn, x, repeats):
    """Compile time, the best of ``repeats`` runs, the output, and the program's memory."""
    import jax

    t0 = time.perf_counter()
    compiled = fn.lower(x).compile()
    out = jax.block_until_ready(compiled(x))
    compile_s = time.perf_counter() - t0
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = jax.block_until_ready(compiled(x))
        best = min(best, time.perf_counter() - t0)
    return best, compile_s, out, _xla_bytes(compiled)


def jaxdyn_scene(path):
    """jaxdyn's side of a scene file: the model in float32 and the contact every row steps with
    (``Contact`` with every default on the scene's ground)."""
    import jax.numpy as jnp

    import jaxdyn
    from jaxdyn import contact

    model = jaxdyn.load_mjcf(path).astype(jnp.float32)
    return model, contact.Contact(ground=contact.Ground.from_model(model))


def timing_scene(name):
    """For the CPU-time scripts (``step_cpu_time.py``, ``contact_solve_cost.py``,
    ``newton_matrix_cost.py``; call it before the first JAX computation): XLA's CPU thread pool
    off for Eigen, warnings silenced, synchronous dispatch, then the scene's jaxdyn model and
    contact (:func:`jaxdyn_scene`), its initial configuration (float32) and time step."""
    import warnings

    os.environ["XLA_FLAGS"] = "--xla_cpu_multi_thread_eigen=false"
    warnings.filterwarnings("ignore")
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_cpu_enable_async_dispatch", False)
    path, mm, qpos, _, _ = _setup(name, os.path.join(os.path.expanduser("~"), ".cache", "jaxdyn-bench"))
    model, con = jaxdyn_scene(path)
    return model, con, jnp.asarray(qpos, jnp.float32), float(mm.opt.timestep)


def cpu_time_per_call(f, args, calls=10, rounds=5):
    """For the CPU-time scripts: the least process CPU time of one call of ``f(*args)`` over
    ``rounds`` rounds of ``calls`` calls (after one call that compiles)."""
    import jax

    jax.block_until_ready(f(*args))
    best = float("inf")
    for _ in range(rounds):
        c = time.process_time()
        for _ in range(calls):
            out = f(*args)
        jax.block_until_ready(out)
        best = min(best, (time.process_time() - c) / calls)
    return best


def _jaxdyn_rate(path, mm, qpos, ctrl, servo, B, T, devices, repeats):
    import jax
    import jax.numpy as jnp
    import numpy as np

    from jaxdyn import sim

    model, con = jaxdyn_scene(path)
    dt = float(mm.opt.timestep)
    # the scene's own actuators (Playground's Go1: position servos, kp 35, force ranges) driven
    # by the control MuJoCo gets, as jaxdyn.actuators models them; zero torque otherwise
    target = jnp.asarray(ctrl, model.dtype)

    def run(q0):
        qd0 = jnp.zeros(model.nv, model.dtype)
        if servo:
            return sim.rollout(model, q0, qd0, None, dt, steps=T, contact=con, ctrl=lambda q, qd, t: target).q[-1]
        return sim.rollout(
            model, q0, qd0, lambda q, qd, t: jnp.zeros(model.nv, model.dtype), dt, steps=T, contact=con
        ).q[-1]

    q0 = jnp.tile(jnp.asarray(qpos, model.dtype), (B, 1))
    fn = jax.jit(jax.vmap(run))
    if devices > 1:
        from jax.sharding import Mesh, NamedSharding, PartitionSpec

        mesh = Mesh(np.asarray(jax.devices()[:devices]), ("env",))
        sharding = NamedSharding(mesh, PartitionSpec("env"))
        q0 = jax.device_put(q0, sharding)
        fn = jax.jit(jax.vmap(run), in_shardings=sharding, out_shardings=sharding)
    best, compile_s, out, nbytes = _time_jax(fn, q0, repeats)
    return B * T / best, compile_s, np.asarray(out[0]), nbytes


def _mjx_rate(mm, qpos, ctrl, B, T, repeats):
    """MJX (JAX implementation): ``jit`` of ``scan`` over ``vmap(mjx.step)`` from one initial state."""
    import jax
    import jax.numpy as jnp
    import numpy as np
    from mujoco import mjx

    mx = mjx.put_model(mm, impl="jax")
    d0 = mjx.put_data(mm, _initial_data(mm, qpos, ctrl), impl="jax")
    dx = jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (B, *x.shape)), d0)
    step = jax.vmap(mjx.step, in_axes=(None, 0))

    def run(dx):
        dx, _ = jax.lax.scan(lambda d, _: (step(mx, d), None), dx, None, length=T)
        return dx.qpos

    best, compile_s, out, nbytes = _time_jax(jax.jit(run), dx, repeats)
    return B * T / best, compile_s, np.asarray(out[0]), nbytes


def _mjwarp_rate(mm, qpos, ctrl, B, T, repeats, nconmax, njmax):
    """MJWarp: one ``mjw.step`` captured in a CUDA graph, launched T times per rollout."""
    import mujoco_warp as mjw
    import numpy as np
    import warp as wp

    dev = wp.get_device()
    free0 = dev.free_memory
    m = mjw.put_model(mm)
    # Playground's 1-4 solver iterations end at the limit by design: no warning per step for it
    solver_limits = int(mjw.OverflowType.ITERATIONS | mjw.OverflowType.LS_ITERATIONS)
    m.opt.warn_overflow = int(mjw.OverflowType.ALL) & ~solver_limits
    d = mjw.put_data(mm, _initial_data(mm, qpos, ctrl), nworld=B, nconmax=nconmax, njmax=njmax)
    state = ("time", "qpos", "qvel", "act", "qacc_warmstart", "ctrl")
    init = {k: wp.clone(getattr(d, k)) for k in state}

    def reset():
        for k in state:
            wp.copy(getattr(d, k), init[k])

    t0 = time.perf_counter()
    mjw.step(m, d)  # compiles and loads every kernel the step launches
    wp.synchronize()
    with wp.ScopedCapture() as capture:
        mjw.step(m, d)
    wp.synchronize()
    compile_s = time.perf_counter() - t0
    nbytes = free0 - dev.free_memory
    best = float("inf")
    for _ in range(repeats):
        reset()
        wp.synchronize()
        t0 = time.perf_counter()
        for _ in range(T):
            wp.capture_launch(capture.graph)
        wp.synchronize()
        best = min(best, time.perf_counter() - t0)
    overflow = int(np.bitwise_or.reduce(d.overflow.numpy().ravel())) & ~solver_limits
    if overflow:
        print(f"  mjwarp: {mjw.OverflowType(overflow)!r} (nconmax {nconmax}, njmax {njmax})", flush=True)
    return B * T / best, compile_s, d.qpos.numpy()[0], nbytes


def _peer_rate(peer, name, workdir, mm, qpos, ctrl, servo, B, T, cores, repeats):
    """env-steps/s, compile s, env 0's final qpos and memory of one peer on one scene and batch."""
    if peer == "mujoco":
        rate, q = _mujoco_rate(mm, qpos, ctrl, B, T, cores, repeats)
        return rate, 0.0, q, None
    pm = _load(scene_file(name, workdir, playground=True), servo, default_solver=peer == "mjx_default")
    if peer in ("mjx", "mjx_default"):
        return _mjx_rate(pm, qpos, ctrl, B, T, repeats)
    if peer == "mjwarp":
        ncon, nefc = _mujoco_counts(pm, qpos, ctrl, T)
        nconmax, njmax = max(16, int(1.5 * ncon) + 8), max(32, int(1.5 * nefc) + 16)
        return _mjwarp_rate(pm, qpos, ctrl, B, T, repeats, nconmax, njmax)
    raise SystemExit(f"sim_step: unknown peer '{peer}', choose from {', '.join(PEERS)}")


def _write(args, rows, cores, peers):
    """The record so far (after every row): ``<out>/<platform>-<date>-sim-step<tag>.{json,md}``."""
    import jax

    import jaxdyn

    versions = dict(jax=jax.__version__, jaxdyn=jaxdyn.__version__)
    for mod in ("mujoco", "mujoco_warp", "warp"):
        try:
            versions[mod] = __import__(mod).__version__
        except Exception:  # noqa: BLE001 - a peer that is not installed
            pass
    dev = jax.devices()[0]
    env = dict(
        date=datetime.date.today().isoformat(),
        **versions,
        device=dev.platform,
        device_kind=dev.device_kind,
        cpu_count=cores,
        dtype="float32",
        peers={p: PEER_CONFIG[p].format(cores=cores) for p in peers},
        python=sys.version.split()[0],
    )
    if args.executor:
        env["executor"] = args.executor
    os.makedirs(args.out, exist_ok=True)
    stem = os.path.join(args.out, f"{env['device']}-{env['date']}-sim-step{args.tag}")
    with open(stem + ".json", "w") as f:
        json.dump(dict(env=env, rows=rows), f, indent=1)
    with open(stem + ".md", "w") as f:
        f.write("# The simulation step with contact (`python benchmarks/sim_step.py`)\n\n")
        f.write(", ".join(f"{k}: {v}" for k, v in env.items() if k != "peers") + "\n\nPeers:\n\n")
        f.write("".join(f"- `{p}`: {c}\n" for p, c in env["peers"].items()) + "\n")
        f.write("| scene | envs x steps | engine | XLA devices | env-steps/s | jaxdyn / engine | compile s | ")
        f.write("program MB | base z |\n|---|---|---|---|---|---|---|---|---|\n")
        for r in rows:
            ours = [
                o["steps_per_s"]
                for o in rows
                if o["engine"] == "jaxdyn" and (o["scene"], o["batch"]) == (r["scene"], r["batch"])
            ]
            ratio = f"{max(ours) / r['steps_per_s']:.3f}" if ours and r["engine"] != "jaxdyn" else ""
            mb = f"{r['bytes'] / 2**20:.0f}" if r.get("bytes") else ""
            f.write(
                f"| {r['scene']} | {r['batch']} x {r['steps']} | {r['engine']} | {r.get('devices', '')} | "
                f"{r['steps_per_s']:.3g} | {ratio} | {r['compile_s']:.1f} | {mb} | {r['base_z']:.3f} |\n"
            )
    return stem


def merge(paths, stem):
    """One record of several runs' JSON (the later row wins): ``stem.json`` and ``stem.md``, with a
    table per scene and batch of every engine's env-steps/s and jaxdyn's ratio to each peer."""
    env, rows = {}, {}
    for path in paths:
        with open(path) as f:
            rec = json.load(f)
        env = {**env, **rec["env"], "peers": {**env.get("peers", {}), **rec["env"]["peers"]}}
        for r in rec["rows"]:
            if r.get("bytes") is not None and r["bytes"] <= 0:
                r["bytes"] = None  # MJWarp's reading of free memory under its memory pool
            rows[(r["scene"], r["batch"], r["engine"])] = r
    engines = [e for e in ("jaxdyn", *PEERS) if any(k[2] == e for k in rows)]
    with open(stem + ".json", "w") as f:
        json.dump(dict(env=env, rows=list(rows.values())), f, indent=1)
    with open(stem + ".md", "w") as f:
        f.write("# The simulation step with contact (`python benchmarks/sim_step.py`)\n\n")
        f.write(", ".join(f"{k}: {v}" for k, v in env.items() if k != "peers") + "\n\nPeers:\n\n")
        f.write("".join(f"- `{p}`: {c}\n" for p, c in env["peers"].items()) + "\n")
        f.write("env-steps/s (compile s, program MB; '-': not measured):\n\n")
        peers = [e for e in engines if e != "jaxdyn"]
        f.write("| scene | envs | " + " | ".join(engines) + " | " + " | ".join(f"jaxdyn / {p}" for p in peers))
        f.write(" |\n|" + "---|" * (2 + len(engines) + len(peers)) + "\n")
        for scene, batch in sorted({k[:2] for k in rows}, key=lambda k: (SCENES.index(k[0]), k[1])):
            cells, ours = [], rows.get((scene, batch, "jaxdyn"))
            for e in engines:
                r = rows.get((scene, batch, e))
                mb = f", {r['bytes'] / 2**20:.0f}" if r and r.get("bytes") else ""
                cells.append(f"{r['steps_per_s']:.3g} ({r['compile_s']:.0f}{mb})" if r else "-")
            for p in peers:
                r = rows.get((scene, batch, p))
                cells.append(f"{ours['steps_per_s'] / r['steps_per_s']:.2f}" if r and ours else "-")
            f.write(f"| {scene} | {batch} | " + " | ".join(cells) + " |\n")
    return stem


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--scenes", default=",".join(SCENES))
    p.add_argument("--batches", default="1,64,1024,4096")
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--devices", default="1", help="CPU: '1', 'all' (one XLA CPU device per core) or '1,all'")
    p.add_argument(
        "--peers",
        default="auto",
        help=f"comma-separated from {', '.join(PEERS)}; 'auto': mujoco on the CPU, "
        "the rest on a GPU; '' for jaxdyn alone",
    )
    p.add_argument("--no-jaxdyn", action="store_true", help="the peers alone")
    p.add_argument(
        "--executor",
        default="",
        help="jaxdyn's rows under jaxdyn.executor(...), e.g. 'dense=elementwise' or "
        "'traversal=unroll,dense=library' (default: the planner's choices)",
    )
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--tag", default="")
    p.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results"))
    p.add_argument("--merge", nargs="+", metavar="JSON", help="write one record (--out/<first's stem><tag>) of these")
    args = p.parse_args(argv)
    if args.merge:
        first = os.path.basename(args.merge[0]).split("-sim-step")[0]
        print("wrote", merge(args.merge, os.path.join(args.out, f"{first}-sim-step{args.tag}")) + ".md")
        return 0
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
    gpu = jax.default_backend() == "gpu"
    if gpu:
        devs = [1]
    if args.peers == "auto":
        peers = ["mjx", "mjx_default", "mjwarp"] if gpu else ["mujoco"]
    else:
        peers = [q for q in args.peers.split(",") if q]

    warnings.filterwarnings("ignore", message=".*inertia.*")
    import jaxdyn

    overrides = dict(kv.split("=", 1) for kv in args.executor.split(",") if kv)
    with jaxdyn.executor(**overrides):  # a bad name stops the run before any row
        pass
    rows = []
    workdir = tempfile.mkdtemp(prefix="sim_step_")

    def record(**row):
        rows.append(row)
        print(
            f"{row['scene']:9s} B={row['batch']:5d} {row['engine']:11s} {row['steps_per_s']:12.0f}/s  "
            f"compile {row['compile_s']:5.1f}s  z {row['base_z']:.3f}",
            flush=True,
        )
        _write(args, rows, cores, peers)

    for name in args.scenes.split(","):
        path, mm, qpos, ctrl, servo = _setup(name, workdir)
        for B in (int(b) for b in args.batches.split(",")):
            for nd in [] if args.no_jaxdyn else devs:
                if B % nd:
                    continue
                with jaxdyn.executor(**overrides):
                    rate, comp, q, nbytes = _jaxdyn_rate(path, mm, qpos, ctrl, servo, B, args.steps, nd, args.repeats)
                record(
                    scene=name,
                    batch=B,
                    steps=args.steps,
                    engine="jaxdyn",
                    devices=nd,
                    steps_per_s=rate,
                    compile_s=comp,
                    bytes=nbytes,
                    base_z=float(q[2]),
                )
            for peer in peers:
                try:
                    rate, comp, q, nbytes = _peer_rate(
                        peer, name, workdir, mm, qpos, ctrl, servo, B, args.steps, cores, args.repeats
                    )
                except Exception as e:  # noqa: BLE001 - one peer failing must not lose the other rows
                    print(f"{name} B={B} {peer}: failed: {type(e).__name__}: {e}", flush=True)
                    continue
                record(
                    scene=name,
                    batch=B,
                    steps=args.steps,
                    engine=peer,
                    steps_per_s=rate,
                    compile_s=comp,
                    bytes=nbytes,
                    base_z=float(q[2]),
                )
    print("wrote", _write(args, rows, cores, peers) + ".md")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
