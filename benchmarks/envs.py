"""Environment steps per second of jaxdyn.envs for a batch of parallel environments.

For every environment: ``--steps`` control steps of ``--n-envs`` environments as one jitted
``lax.scan`` over ``vmap(env.step)`` (auto-reset included), uniform random actions drawn inside
the scan; the reported rate is ``n_envs * steps / median wall time`` (compile excluded, it is
reported separately). ``--physics-only`` also times ``env.transition`` (no reset, reward and
observation still computed).

If ``mujoco`` and ``mujoco.mjx`` are importable, the same robot is loaded from the same URDF
into MuJoCo and the same physics step (``substeps`` x ``mjx.step`` at ``dt / substeps``, the
matching integrator, joint torques from random actions scaled to the effort limits through
``qfrc_applied``; no reward/observation/reset) is timed the same way, for comparison.

    python benchmarks/envs.py [--envs pendulum panda_reach] [--n-envs 4096] [--steps 100]
                              [--dtype float32] [--shard] [--out benchmarks/results]
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import time

import jax
import jax.numpy as jnp
import numpy as np
from harness import median_time as _median_time

import jaxdyn
import jaxdyn.envs as envs


def bench_jaxdyn(env, n, steps, repeats, shard, physics_only=False):
    """Returns (compile seconds, environment steps per second)."""
    states = jax.jit(lambda k: envs.vector_reset(env, k, n))(jax.random.PRNGKey(0))
    if shard:
        from jaxdyn.parallel import shard_batch

        states = shard_batch(states)
    na = env.action_size
    dt = env.model.dtype

    def one_step(s, a):
        if physics_only:
            return env.transition(s, a)[0]
        return env.step(s, a)[0]

    def run(states, key):
        def body(carry, k):
            a = jax.random.uniform(k, (n, na), dt, -1.0, 1.0)
            return jax.vmap(one_step)(carry, a), None

        return jax.lax.scan(body, states, jax.random.split(key, steps))[0]

    f = jax.jit(run)
    t = time.perf_counter()
    f = f.lower(states, jax.random.PRNGKey(1)).compile()
    compile_s = time.perf_counter() - t
    sec = _median_time(f, (states, jax.random.PRNGKey(1)), repeats)
    return compile_s, n * steps / sec


def bench_mjx(env, urdf_path, n, steps, repeats):
    """Same physics in MuJoCo MJX from the same URDF. Returns (compile seconds, steps/s)."""
    import mujoco
    from mujoco import mjx

    m = mujoco.MjModel.from_xml_path(urdf_path)
    if m.nv != env.model.nv:
        raise RuntimeError(f"MuJoCo loaded {m.nv} dofs from {urdf_path}, jaxdyn has {env.model.nv}")
    m.opt.timestep = env.dt / env.substeps
    m.opt.integrator = {"rk4": mujoco.mjtIntegrator.mjINT_RK4}.get(env.integrator, mujoco.mjtIntegrator.mjINT_EULER)
    m.dof_armature[:] = np.asarray(env.model.armature)
    m.dof_damping[:] = np.asarray(env.model.damping)
    m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT  # jaxdyn has no contact either
    mx = mjx.put_model(m)
    d0 = mjx.make_data(mx)
    limit = np.zeros(m.nv, np.float32)
    limit[np.asarray(env.actuated)] = np.asarray(env.torque_limit)
    limit = jnp.asarray(limit)
    na = env.action_size
    idx = jnp.asarray(env.actuated)
    qpos = jnp.tile(jnp.asarray(np.asarray(env.reset(jax.random.PRNGKey(0)).q), jnp.float32), (n, 1))
    data = jax.vmap(lambda q: d0.replace(qpos=q))(qpos)

    def run(data, key):
        def body(d, k):
            a = jax.random.uniform(k, (n, na), jnp.float32, -1.0, 1.0)
            tau = jnp.zeros((n, m.nv), jnp.float32).at[:, idx].set(a * limit[idx])

            def phys(dd, t):
                dd = dd.replace(qfrc_applied=t)
                for _ in range(env.substeps):
                    dd = mjx.step(mx, dd)
                return dd

            return jax.vmap(phys)(d, tau), None

        return jax.lax.scan(body, data, jax.random.split(key, steps))[0]

    f = jax.jit(run)
    t = time.perf_counter()
    f = f.lower(data, jax.random.PRNGKey(1)).compile()
    compile_s = time.perf_counter() - t
    sec = _median_time(f, (data, jax.random.PRNGKey(1)), repeats)
    return compile_s, n * steps / sec, mujoco.__version__


def _urdf_of(name):
    from jaxdyn.robots import robot_path

    robots = os.path.join(os.path.dirname(os.path.abspath(envs.__file__)), "..", "robots")
    return {
        "pendulum": os.path.join(robots, "pendulum.urdf"),
        "acrobot": os.path.join(robots, "acrobot.urdf"),
        "cartpole": os.path.join(robots, "cartpole.urdf"),
        "cartpole_swingup": os.path.join(robots, "cartpole.urdf"),
        "panda_reach": robot_path("panda"),
    }.get(name)


def _have_mjx():
    try:
        import mujoco  # noqa: F401
        from mujoco import mjx  # noqa: F401

        return True
    except Exception:  # noqa: BLE001 - any import failure means "not available"
        return False


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--envs", nargs="+", default=list(envs.available_envs()))
    ap.add_argument("--n-envs", type=int, default=4096)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    ap.add_argument("--shard", action="store_true", help="shard the batch over all devices")
    ap.add_argument("--physics-only", action="store_true", help="also time env.transition (no auto-reset)")
    ap.add_argument("--no-mjx", action="store_true")
    ap.add_argument(
        "--kernels",
        default="generic,soa",
        help="forward-dynamics executors to time (jaxdyn.executor's batch): generic (vmap), soa (kernel) or both",
    )
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results"))
    args = ap.parse_args(argv)
    if args.dtype == "float64":
        jax.config.update("jax_enable_x64", True)  # benchmark script, not the library
    dtype = jnp.float32 if args.dtype == "float32" else jnp.float64
    dev = jax.devices()[0]
    mjx_ok = _have_mjx() and not args.no_mjx
    head = [
        f"# jaxdyn.envs throughput: {dev.platform} ({dev.device_kind}), {len(jax.devices())} device(s)",
        "",
        f"jax {jax.__version__}, {args.dtype}, {datetime.date.today()}, {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} CPU cores; {args.n_envs} parallel environments, {args.steps} steps per jitted "
        f"`lax.scan` of `vmap(env.step)` (auto-reset included), random actions, median of {args.repeats} runs"
        f"{', batch sharded' if args.shard else ''}.",
        "",
    ]
    kinds = args.kernels.split(",")
    cols = ["env", "nv", "dt [s]", "integrator x substeps"]
    for k in kinds:
        cols += [f"compile [s] ({k})", f"env steps/s ({k})"]
    if args.physics_only:
        cols.append("env.transition steps/s")
    if mjx_ok:
        cols += ["MJX physics steps/s", "MJX compile [s]"]
    lines = head + ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    print("\n".join(lines), flush=True)
    mj_version = None
    for name in args.envs:
        env = envs.make(name, dtype=dtype)
        row = [name, str(env.model.nv), f"{env.dt:g}", f"{env.integrator} x {env.substeps}"]
        for k in kinds:
            with jaxdyn.executor(batch={"generic": "vmap", "soa": "kernel"}[k]):
                comp, rate = bench_jaxdyn(env, args.n_envs, args.steps, args.repeats, args.shard)
            row += [f"{comp:.1f}", f"{rate:.3g}"]
        if args.physics_only:
            row.append(f"{bench_jaxdyn(env, args.n_envs, args.steps, args.repeats, args.shard, True)[1]:.3g}")
        if mjx_ok:
            try:
                mc, mr, mj_version = bench_mjx(env, _urdf_of(name), args.n_envs, args.steps, args.repeats)
                row += [f"{mr:.3g}", f"{mc:.1f}"]
            except Exception as e:  # noqa: BLE001 - report, keep benchmarking the others
                row += [f"failed: {type(e).__name__}: {str(e)[:60]}", "-"]
        line = "| " + " | ".join(row) + " |"
        print(line, flush=True)
        lines.append(line)
    lines.append("")
    if mjx_ok:
        lines.append(
            f"MJX: mujoco {mj_version}, same URDF, same time step and integrator, armature and damping "
            "copied from the jaxdyn model, contact disabled; physics only (no reward, observation, "
            "reset or gravity compensation)."
        )
    else:
        lines.append("MJX comparison: not run (`mujoco.mjx` is not importable in this environment).")
    lines.append("")
    lines.append(
        'generic: `vmap` of the per-sample ABA (`jaxdyn.executor(batch="vmap")`); soa: the same step with '
        'forward dynamics batched into `jaxdyn.kernels.aba_batch` (`jaxdyn.executor(batch="kernel")`).'
    )
    lines.append("")
    lines.append(
        f"Reproduce: `python benchmarks/envs.py --n-envs {args.n_envs} --steps {args.steps} --kernels {args.kernels}`."
    )
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, f"envs-{dev.platform}.md")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("wrote", path)


if __name__ == "__main__":
    main()
