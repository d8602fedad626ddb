"""Steps per second of the Solo12 joystick environment (jaxdyn.envs.QuadrupedJoystick) for
1 to 4096 parallel environments, and of MJX on the same robot and task physics.

jaxdyn: ``--steps`` control steps of ``n`` environments as one jitted ``lax.scan`` over
``vmap(env.step)`` (PD torques per substep, contact, reward, observation, automatic reset),
random actions drawn inside the scan; rate ``n * steps / median wall time``; compile time
reported separately.

MJX (if ``mujoco.mjx`` imports): the same URDF loaded by MuJoCo, a free joint on the base, the
same four foot spheres (radius, position, friction) and a ground plane, position actuators with
the same ``kp``, ``kv = kd`` and torque limit, the same ``dt`` and number of substeps
(``mjx.step`` each; MuJoCo's ``implicitfast`` integrator, actuator damping implicit as in jaxdyn),
no reward/observation/reset. "Equal fidelity" here means equal model, contact geometry, control
and time step; the contact *laws* differ (jaxdyn: compliant Hunt-Crossley force with regularised
friction, implicit in velocity; MuJoCo: soft constraints solved by its Newton solver, pyramidal
friction cone), so the per-step costs compare like for like, the trajectories do not.

    python benchmarks/envs_quadruped.py [--n-envs 1 64 1024 4096] [--steps 10] [--out FILE.md]
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

import jaxdyn
import jaxdyn.envs as envs
from jaxdyn.robots import robot_path


def _median(f, *args, repeats):
    jax.block_until_ready(f(*args))
    ts = []
    for _ in range(repeats):
        t = time.perf_counter()
        jax.block_until_ready(f(*args))
        ts.append(time.perf_counter() - t)
    return float(np.median(ts))


def bench_jaxdyn(env, n, steps, repeats):
    states = jax.jit(lambda k: envs.vector_reset(env, k, n))(jax.random.PRNGKey(0))
    dt = env.model.dtype

    def run(states, key):
        def body(s, k):
            a = jax.random.uniform(k, (n, 12), dt, -1.0, 1.0)
            return jax.vmap(env.step)(s, a)[0], None

        return jax.lax.scan(body, states, jax.random.split(key, steps))[0]

    t = time.perf_counter()
    f = jax.jit(run).lower(states, jax.random.PRNGKey(1)).compile()
    compile_s = time.perf_counter() - t
    return compile_s, n * steps / _median(f, states, jax.random.PRNGKey(1), repeats=repeats)


def mjx_model(env):
    """The MuJoCo model of the benchmark (module docstring)."""
    import mujoco

    spec = mujoco.MjSpec.from_file(robot_path("solo12"))
    spec.compiler.discardvisual = True
    base = spec.worldbody.first_body()
    base.add_freejoint()
    h = env.dt / env.substeps
    spec.option.timestep = h
    spec.option.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    spec.worldbody.add_geom(type=mujoco.mjtGeom.mjGEOM_PLANE, size=[0, 0, 1])
    g = env.model.geoms
    link_of = {}  # jaxdyn body index -> its URDF link name (the first frame on the body)
    for f, b in zip(env.model.frame_names, env.model.topology.frame_bodies):
        link_of.setdefault(b, f)
    for i in range(g.ng):
        b = spec.body(link_of[g.body[i]])
        b.add_geom(
            type=mujoco.mjtGeom.mjGEOM_SPHERE,
            size=[float(g.size[i, 0]), 0, 0],
            pos=np.asarray(g.pos[i], np.float64),
            friction=np.asarray(g.friction[i], np.float64),
        )
    for j in env.model.joint_names[1:]:
        spec.add_actuator(
            target=j,
            trntype=mujoco.mjtTrn.mjTRN_JOINT,
            gaintype=mujoco.mjtGain.mjGAIN_FIXED,
            biastype=mujoco.mjtBias.mjBIAS_AFFINE,
            gainprm=[env.kp] + [0] * 9,
            biasprm=[0, -env.kp, -env.kd] + [0] * 7,
            forcelimited=True,
            forcerange=[-env.torque_max, env.torque_max],
        )
    m = spec.compile()
    if m.nv != env.model.nv or m.nu != 12:
        raise RuntimeError(f"MuJoCo model has nv={m.nv}, nu={m.nu}; jaxdyn nv={env.model.nv}")
    return m


def bench_mjx(env, n, steps, repeats):
    import mujoco
    from mujoco import mjx

    m = mjx_model(env)
    mx = mjx.put_model(m)
    d0 = mujoco.MjData(m)
    d0.qpos[:] = np.asarray(env.reset(jax.random.PRNGKey(0)).q, np.float64)
    dx = jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (n, *x.shape)), mjx.put_data(m, d0))
    q0 = jnp.asarray(env.default_pose, jnp.float32)

    def run(d, key):
        def body(d, k):
            a = jax.random.uniform(k, (n, 12), jnp.float32, -1.0, 1.0)
            d = d.replace(ctrl=q0 + env.action_scale * a)
            sub = lambda _, dd: jax.vmap(mjx.step, in_axes=(None, 0))(mx, dd)
            return jax.lax.fori_loop(0, env.substeps, sub, d), None

        return jax.lax.scan(body, d, jax.random.split(key, steps))[0]

    t = time.perf_counter()
    f = jax.jit(run).lower(dx, jax.random.PRNGKey(1)).compile()
    compile_s = time.perf_counter() - t
    return compile_s, n * steps / _median(f, dx, jax.random.PRNGKey(1), repeats=repeats), mujoco.__version__


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-envs", type=int, nargs="+", default=[1, 64, 1024, 4096])
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--no-mjx", action="store_true")
    ap.add_argument("--out", default=None, help="write a markdown table there")
    args = ap.parse_args(argv)
    env = envs.QuadrupedJoystick()
    try:
        from mujoco import mjx  # noqa: F401

        have_mjx = not args.no_mjx
    except ImportError:
        have_mjx = False
    rows = []
    for n in args.n_envs:
        c, r = bench_jaxdyn(env, n, args.steps, args.repeats)
        row = dict(n=n, jaxdyn_compile=c, jaxdyn_rate=r, jaxdyn_peak=_peak_mb())
        if have_mjx:
            mc, mr, mjv = bench_mjx(env, n, args.steps, args.repeats)
            row.update(mjx_compile=mc, mjx_rate=mr, mujoco=mjv, mjx_peak=_peak_mb())
        rows.append(row)
        print(row, flush=True)
        text = _table(rows, env, args, have_mjx)
        if args.out:  # after every row: a run cut short keeps what it measured
            with open(args.out, "w") as fh:
                fh.write(text)
    print(text)
    return rows


def _peak_mb():
    """The device's peak memory in use so far in MB (a high-water mark; GPU), or None."""
    try:
        peak = (jax.devices()[0].memory_stats() or {}).get("peak_bytes_in_use")
    except Exception:  # noqa: BLE001 - backends without memory stats
        return None
    return None if peak is None else peak / 2**20


def _table(rows, env, args, have_mjx):
    dev = jax.devices()[0]
    where = (
        f"CPU ({platform.processor() or platform.machine()}, {os.cpu_count()} cores)"
        if dev.platform == "cpu"
        else f"{dev.platform.upper()} ({dev.device_kind})"
    )
    lines = [
        f"# Solo12 joystick environment: steps per second ({datetime.date.today()})",
        "",
        f"Device: {where}; jax {jax.__version__}, "
        f"jaxdyn {jaxdyn.__version__}" + (f", mujoco/mjx {rows[0]['mujoco']}" if have_mjx else "") + ".",
        f"`python benchmarks/envs_quadruped.py --steps {args.steps} --repeats {args.repeats}`: "
        f"dt = {env.dt} s, {env.substeps} substeps of {env.dt / env.substeps * 1e3:g} ms, float32. "
        "peak MB: the device's memory high-water mark after the row (GPU; it only grows).",
        "",
        "| envs | jaxdyn steps/s | jaxdyn compile [s] | peak MB |"
        + (" MJX steps/s | MJX compile [s] | peak MB | jaxdyn / MJX |" if have_mjx else ""),
        "|---:|---:|---:|---:|" + ("---:|---:|---:|---:|" if have_mjx else ""),
    ]
    mb = lambda x: "n/a" if x is None else f"{x:,.0f}"  # noqa: E731
    for r in rows:
        line = f"| {r['n']} | {r['jaxdyn_rate']:,.0f} | {r['jaxdyn_compile']:.1f} | {mb(r['jaxdyn_peak'])} |"
        if have_mjx:
            line += (
                f" {r['mjx_rate']:,.0f} | {r['mjx_compile']:.1f} | {mb(r['mjx_peak'])} |"
                f" {r['jaxdyn_rate'] / r['mjx_rate']:.2f} |"
            )
        lines.append(line)
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
