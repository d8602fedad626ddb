"""Train the Solo12 joystick task (:class:`jaxdyn.envs.QuadrupedJoystick`), or MuJoCo Playground's
Go1 joystick task on its MJCF scene (``--go1``: :class:`jaxdyn.envs.MJCFJoystick`), with Brax's PPO.

The jaxdyn environment goes through :func:`jaxdyn.envs.adapters.to_brax`; ``brax.training``'s
PPO (``brax.training.agents.ppo.train``) trains it with Brax's own wrappers (episode length,
automatic reset, and domain randomisation: every parallel environment gets its own link
masses, foot friction and motor strengths from :func:`jaxdyn.envs.quadruped.brax_randomization`).
The PPO hyper-parameters of the full run are those of MuJoCo Playground's Go1 joystick
configuration (Zakka et al. 2025) scaled down in batch size; ``--quick`` is a small run that
checks the pipeline end to end on a CPU in a few minutes.

Writes ``examples/output/quadruped/`` ``learning_curve.png`` (evaluation return against
environment steps), ``walk.gif`` (the trained policy, drawn by :func:`jaxdyn.viewer.animate`
with the base trail and the feet's contact points and forces), ``walk.mp4`` (the same walk's
real geometry and contact forces, :func:`jaxdyn.render.render_video`, where ``jaxdyn[render]``
is installed), and ``run.json`` (settings,
wall times, returns) and ``params.pkl`` (the policy at the latest evaluation, saved at every
evaluation). ``render`` also measures the policy on five commands (forward, backward,
sideways, turning, forward while turning; ``COMMANDS``, the first drawn in the GIF): the base
velocity reached and the feet's duty factors and touchdowns (``run.json`` ``tracking``).
``--gait`` trains with Playground's gait-shaping reward terms and wider command ranges, and
``--obs-noise 1`` with Playground's observation noise (:func:`make_env`). ``--go1`` trains the
Go1 on Playground's scene instead, driven by the scene's position servos and observed through its
sensors (with ``--gait``, Playground's full reward weights and command ranges). ``--resume DIR`` continues a saved run (its settings, networks, observation
statistics and curve) for ``--timesteps`` more steps, so a long training can run in parts. ``--minutes`` stops the training at the first evaluation after that wall time;
``--render DIR`` draws the curve and the walk from a finished or stopped run's ``run.json`` and
``params.pkl`` (for example on a CPU, after a run on a GPU machine without matplotlib). Needs the
``rl`` extra (``pip install "jaxdyn[rl]"``: Brax, gymnax, matplotlib). ::

    python examples/train_quadruped.py --quick     # 154 k steps, about 3.5 CPU-minutes
    python examples/train_quadruped.py --go1 --quick
    python examples/train_quadruped.py             # 50 M steps: a GPU run
    python examples/train_quadruped.py --timesteps 100000000 --minutes 5 --no-render
    python examples/train_quadruped.py --render examples/output/quadruped
    python examples/train_quadruped.py --resume DIR --out DIR --timesteps 5000000 --minutes 60
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import os
import pickle
import time

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

import jaxdyn
from jaxdyn import viewer
from jaxdyn._optional import require
from jaxdyn.envs import MJCFJoystick, QuadrupedJoystick
from jaxdyn.envs.adapters import to_brax
from jaxdyn.envs.quadruped import GAIT_REWARD_WEIGHTS, brax_randomization
from jaxdyn.render import render_video

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "output", "quadruped")

FULL = dict(
    num_timesteps=50_000_000,
    num_envs=4096,
    batch_size=256,
    num_minibatches=32,
    unroll_length=20,
    num_updates_per_batch=4,
    num_evals=10,
    num_eval_envs=128,
    episode_length=1000,
    hidden=(128, 128, 128, 128),
)
QUICK = dict(
    num_timesteps=150_000,
    num_envs=128,
    batch_size=128,
    num_minibatches=4,
    unroll_length=20,
    num_updates_per_batch=4,
    num_evals=6,
    num_eval_envs=32,
    episode_length=250,
    hidden=(64, 64),
)


def _brax_on_new_jax():
    """Brax 0.14 calls ``jax.device_put_replicated``, which jax 0.10 removed; supply the
    documented replacement (a stacked copy per device, laid out along the devices) to this
    script's jax module when it is missing. jaxdyn itself does not use it."""
    if hasattr(jax, "device_put_replicated"):  # False once removed (the attribute access raises)
        return

    def device_put_replicated(x, devices):
        mesh = jax.sharding.Mesh(np.array(devices), ("d",))
        sharding = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("d"))
        return jax.tree_util.tree_map(lambda a: jax.device_put(jnp.stack([a] * len(devices)), sharding), x)

    jax.device_put_replicated = device_put_replicated


# --gait: MuJoCo Playground's Go1 command amplitudes (1.5 m/s, 0.8 m/s, 1.2 rad/s), the linear
# ones scaled by the ratio of the legs' segment lengths (Solo12 0.16 m, Go1 0.213 m)
GAIT_COMMANDS = ((-1.1, 1.1), (-0.6, 0.6), (-1.2, 1.2))


def make_env(gait=False, obs_noise=0.0, robot="solo12"):
    """The Solo12 joystick task with the feet colliding with the ground only: the feet of a
    gait do not touch each other, and the foot pairs cost a collision table per physics step.
    ``gait``: Playground's gait-shaping reward terms weighted (``GAIT_REWARD_WEIGHTS``) and its
    wider command ranges (``GAIT_COMMANDS``), under which standing still earns little of the
    tracking reward. ``obs_noise``: the level of the observation noise (1: Playground's).
    ``robot="go1"``: Playground's Go1 task on its scene (:class:`~jaxdyn.envs.MJCFJoystick`;
    its contact is the feet's already): under ``gait`` Playground's full reward weights and
    commands; otherwise, as the Solo12's default task, the base terms alone and the narrower
    commands of :class:`~jaxdyn.envs.QuadrupedJoystick` (under Playground's commands, up to
    1.5 m/s, a robot that does not walk yet earns almost none of the tracking kernels, and the
    tilt penalty clips its reward to zero)."""
    if robot == "go1":
        if gait:
            return MJCFJoystick(obs_noise=obs_noise)
        base_only = {k: 0.0 for k in GAIT_REWARD_WEIGHTS}
        narrow = ((-0.5, 0.5), (-0.3, 0.3), (-1.0, 1.0))
        return MJCFJoystick(obs_noise=obs_noise, reward_weights=base_only, command_range=narrow)
    if gait:
        env = QuadrupedJoystick(reward_weights=GAIT_REWARD_WEIGHTS, command_range=GAIT_COMMANDS, obs_noise=obs_noise)
    else:
        env = QuadrupedJoystick(obs_noise=obs_noise)
    return eqx.tree_at(lambda e: e.contact, env, dataclasses.replace(env.contact, collide_pairs=False))


class _WallBudget(Exception):
    """Raised by the progress callback at the first evaluation after ``--minutes``."""


def network_factory(cfg):
    """Brax's PPO network factory with the hidden sizes of ``cfg`` (policy and value alike):
    the one definition that training and ``--render`` share."""
    networks = require("brax.training.agents.ppo.networks", "rl", "examples/train_quadruped.py")
    hidden = tuple(cfg["hidden"])
    return functools.partial(
        networks.make_ppo_networks, policy_hidden_layer_sizes=hidden, value_hidden_layer_sizes=hidden
    )


def make_networks(env, cfg):
    """The policy maker of ``train``'s networks (observations normalised, as ``ppo.train``
    builds them), rebuilt for ``--render`` from the saved configuration."""
    networks = require("brax.training.agents.ppo.networks", "rl", "examples/train_quadruped.py")
    normalize = require("brax.training.acme.running_statistics", "rl", "examples/train_quadruped.py").normalize
    brax_env = to_brax(env)
    ppo_net = network_factory(cfg)(
        brax_env.observation_size, brax_env.action_size, preprocess_observations_fn=normalize
    )
    return networks.make_inference_fn(ppo_net)


def train(cfg, seed, out, minutes=None, resume=None):
    """Brax PPO on the task. Saves the policy to ``out/params.pkl`` at every evaluation; with
    ``minutes``, stops at the first evaluation after that wall time (the saved policy is then
    the latest evaluated one). ``resume``: a saved run (``run.json``'s fields and ``params.pkl``'s
    ``step`` and ``params``) that this one continues: its networks and observation statistics
    are restored, steps and wall times count on from it, and its curve comes first. Returns the
    environment, the curve, the evaluation wall times, the total wall time and whether the
    budget stopped the run."""
    _brax_on_new_jax()
    ppo = require("brax.training.agents.ppo.train", "rl", "examples/train_quadruped.py")
    env = make_env(cfg.get("gait", False), cfg.get("obs_noise", 0.0), cfg.get("robot", "solo12"))
    curve, times = [], []
    step0, wall0 = 0, 0.0
    if resume is not None:
        curve = [(c["steps"], c["ret"], c["std"]) for c in resume["curve"]]
        times = [c["wall_s"] for c in resume["curve"]]
        step0, wall0 = resume["step"], times[-1]
    t0 = time.perf_counter() - wall0

    def save_params(step, make_policy, params):
        with open(os.path.join(out, "params.pkl"), "wb") as f:
            pickle.dump(dict(step=step0 + int(step), params=jax.device_get(params)), f)

    def progress(step, metrics):
        if resume is not None and step == 0:  # the restored policy, evaluated already
            return
        bad = [k for k, v in metrics.items() if not np.all(np.isfinite(np.asarray(v)))]
        if bad:
            print(f"  non-finite metrics at step {int(step)}: {bad}", flush=True)
        step = step0 + int(step)
        curve.append((step, float(metrics["eval/episode_reward"]), float(metrics["eval/episode_reward_std"])))
        times.append(time.perf_counter() - t0)
        _update_run(out, curve=[dict(steps=s, ret=r, std=sd, wall_s=t) for (s, r, sd), t in zip(curve, times)])
        print(
            f"  {int(step):>10,d} steps  return {curve[-1][1]:8.3f} +- {curve[-1][2]:.3f}  ({times[-1]:.0f} s)",
            flush=True,
        )
        if minutes is not None and times[-1] - wall0 > 60.0 * minutes and step > step0:
            raise _WallBudget

    stopped = False
    try:
        ppo.train(
            environment=to_brax(env),
            num_timesteps=cfg["num_timesteps"],
            num_envs=cfg["num_envs"],
            batch_size=cfg["batch_size"],
            num_minibatches=cfg["num_minibatches"],
            unroll_length=cfg["unroll_length"],
            num_updates_per_batch=cfg["num_updates_per_batch"],
            num_evals=cfg["num_evals"],
            num_eval_envs=cfg["num_eval_envs"],
            episode_length=cfg["episode_length"],
            learning_rate=3e-4,
            entropy_cost=1e-2,
            discounting=0.97,
            clipping_epsilon=0.2,
            max_grad_norm=1.0,
            normalize_observations=True,
            reward_scaling=1.0,
            network_factory=network_factory(cfg),
            randomization_fn=brax_randomization(),
            progress_fn=progress,
            policy_params_fn=save_params,
            restore_params=None if resume is None else resume["params"],
            seed=seed,
        )
    except _WallBudget:
        stopped = True
    return env, curve, times, time.perf_counter() - t0, stopped


# the commands [vx, vy, yaw rate] of the walk drawn (the first) and of the tracking measurement
COMMANDS = ((0.4, 0.0, 0.0), (-0.4, 0.0, 0.0), (0.0, 0.25, 0.0), (0.0, 0.0, 0.8), (0.3, 0.0, 0.5))


def walk(env, policy, steps, seed, commands=COMMANDS):
    """Rollouts of the deterministic policy on the nominal robot, one per command, batched:
    per step ``q``, ``qd``, reward, done and the feet's contact, each ``(len(commands), steps,
    ...)``."""
    dt = env.model.dtype

    def one(c):
        s0 = env.reset(jax.random.PRNGKey(seed))
        s0 = eqx.tree_at(lambda s: s.goal, s0, jnp.asarray(c, dt))

        def body(s, k):
            a, _ = policy(env.observation(s), k)
            s2, _, r, d, _ = env.step(s, a)
            return s2, (s.q, s.qd, r, d, s2.last_contact)

        keys = jax.random.split(jax.random.PRNGKey(seed + 1), steps)
        return jax.lax.scan(body, s0, keys)[1]

    return jax.jit(jax.vmap(one))(jnp.asarray(commands, dt))


def tracking(qds, ds, contact, commands=COMMANDS):
    """Per command: the mean base velocity ``[vx, vy, yaw rate]`` (base frame) over the
    rollout's second half, the feet's duty factors (fraction of steps on the ground) and
    touchdowns over the whole rollout, and whether the episode ended."""
    qds, ds, contact = np.asarray(qds), np.asarray(ds), np.asarray(contact)
    half = qds.shape[1] // 2
    rows = []
    for i, c in enumerate(commands):
        v = qds[i, half:]
        rows.append(
            dict(
                command=list(c),
                velocity=[float(v[:, 3].mean()), float(v[:, 4].mean()), float(v[:, 2].mean())],
                duty=[float(x) for x in contact[i].mean(axis=0)],
                touchdowns=[int(x) for x in (contact[i, 1:] & ~contact[i, :-1]).sum(axis=0)],
                terminated=bool(ds[i].any()),
            )
        )
    return rows


def plot_curve(curve, path, title):
    require("matplotlib", "pictures", "examples/train_quadruped.py")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    steps, ret, std = (np.array(x) for x in zip(*curve))
    fig = Figure(figsize=(6, 3.6), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(111)
    ax.plot(steps, ret, "o-", color="#2e6f95")
    ax.fill_between(steps, ret - std, ret + std, color="#2e6f95", alpha=0.2)
    ax.set_xlabel("environment steps")
    ax.set_ylabel("evaluation return")
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)


def _update_run(out, **fields):
    """Merge ``fields`` into ``out/run.json`` (written at every evaluation, so a run cut short
    keeps its curve)."""
    path = os.path.join(out, "run.json")
    run = {}
    if os.path.exists(path):
        with open(path) as f:
            run = json.load(f)
    run.update(fields)
    with open(path, "w") as f:
        json.dump(run, f, indent=1)
    return run


def render(out, seed):
    """The learning curve and the walk of the policy saved in ``out`` (``run.json``,
    ``params.pkl``); adds the walk's return to ``run.json``."""
    with open(os.path.join(out, "run.json")) as f:
        run = json.load(f)
    with open(os.path.join(out, "params.pkl"), "rb") as f:
        saved = pickle.load(f)
    _brax_on_new_jax()
    robot = run["config"].get("robot", "solo12")
    env = make_env(run["config"].get("gait", False), run["config"].get("obs_noise", 0.0), robot)
    policy = make_networks(env, run["config"])(saved["params"], deterministic=True)
    curve = [(c["steps"], c["ret"], c["std"]) for c in run["curve"]]
    title = "Go1 joystick (Playground's scene)" if robot == "go1" else "Solo12 joystick"
    plot_curve(curve, os.path.join(out, "learning_curve.png"), f"{title}, Brax PPO ({run['label']})")
    qs, qds, rs, ds, contact = (np.asarray(x) for x in walk(env, policy, 150, seed))
    rows = tracking(qds, ds, contact)
    # the first command's walk is drawn
    qs, qds, rs, ds, c = qs[0], qds[0], rs[0], ds[0], np.asarray(COMMANDS[0])
    viewer.animate(
        env.model,
        np.asarray(qs),
        os.path.join(out, "walk.gif"),
        fps=25,
        stride=2,
        trail=env.model.body_names[0],
        dt=env.dt,
        title=f"command vx={c[0]:.2f} vy={c[1]:.2f} yaw={c[2]:.2f}",
        view=(20.0, -60.0),
        dpi=60,
        contact=env.contact,
        qds=np.asarray(qds),
    )
    try:  # the real geometry (capsules along the links, the foot spheres), with jaxdyn[render]
        n = render_video(
            env.model,
            np.asarray(qs),
            os.path.join(out, "walk.mp4"),
            dt=env.dt,
            contact=env.contact,
            qds=np.asarray(qds),
            width=480,
            height=360,
        )
        print(f"walk.mp4: {n} frames")
    except ImportError as e:
        print(f"walk.mp4 not written: {e}")
    w = dict(
        policy_steps=saved["step"],
        steps=len(rs),
        ret=float(np.sum(rs)),
        terminated=bool(np.any(ds)),
        command=c.tolist(),
    )
    _update_run(out, walk=w, tracking=rows)
    print(f"walk: return {w['ret']:.3f} over {len(rs)} steps (policy after {saved['step']:,d} steps); wrote {out}")
    for r in rows:
        v, duty = r["velocity"], " ".join(f"{x:.2f}" for x in r["duty"])
        print(
            f"  command {r['command']} -> base velocity [{v[0]:+.2f}, {v[1]:+.2f}, {v[2]:+.2f}], "
            f"duty {duty}, touchdowns {r['touchdowns']}{', terminated' if r['terminated'] else ''}"
        )


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a small run for a CPU (a few minutes)")
    ap.add_argument("--timesteps", type=int, default=None, help="override the number of environment steps")
    ap.add_argument("--evals", type=int, default=None, help="override the number of evaluations")
    ap.add_argument("--minutes", type=float, default=None, help="stop at the first evaluation after this wall time")
    ap.add_argument("--no-render", action="store_true", help="train and save, without the curve and the GIF")
    ap.add_argument("--render", metavar="DIR", default=None, help="only draw the curve and the walk of a saved run")
    ap.add_argument(
        "--gait", action="store_true", help="Playground's gait-shaping reward terms and wider command ranges"
    )
    ap.add_argument(
        "--go1",
        action="store_true",
        help="MuJoCo Playground's Go1 joystick task on its MJCF scene (actuators and sensors)",
    )
    ap.add_argument(
        "--obs-noise",
        type=float,
        default=0.0,
        help="observation noise level (1: MuJoCo Playground's Go1 noise scales; default 0)",
    )
    ap.add_argument(
        "--resume",
        metavar="DIR",
        default=None,
        help="continue a saved run (its settings, policy and curve) for --timesteps more steps",
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=None, help=f"output folder (default {OUT}, or its sibling go1 with --go1)")
    args = ap.parse_args()
    if args.out is None:
        args.out = os.path.join(os.path.dirname(OUT), "go1") if args.go1 else OUT
    if args.render:
        render(args.render, args.seed)
        return
    resume = None
    if args.resume:  # read before --out (possibly the same folder) is written
        with open(os.path.join(args.resume, "run.json")) as f:
            resume = json.load(f)
        with open(os.path.join(args.resume, "params.pkl"), "rb") as f:
            resume.update(pickle.load(f))
        cfg = dict(resume["config"])
        cfg["num_timesteps"] = args.timesteps or cfg["num_timesteps"]
    else:
        cfg = dict(QUICK if args.quick else FULL)
        cfg["gait"] = args.gait
        cfg["robot"] = "go1" if args.go1 else "solo12"
        cfg["obs_noise"] = args.obs_noise
        if args.timesteps:
            cfg["num_timesteps"] = args.timesteps
    if args.evals:
        cfg["num_evals"] = args.evals
    os.makedirs(args.out, exist_ok=True)
    print(f"jax {jax.__version__} on {jax.devices()[0].platform}, jaxdyn {jaxdyn.__version__}; config {cfg}")
    if os.path.exists(os.path.join(args.out, "run.json")):
        os.remove(os.path.join(args.out, "run.json"))
    label = "quick run" if args.quick else "full run"
    _update_run(
        args.out,
        config={k: list(v) if isinstance(v, tuple) else v for k, v in cfg.items()},
        label=label if resume is None else resume["label"],
        seed=args.seed,
        device=jax.devices()[0].device_kind,
        jax=jax.__version__,
        **({} if resume is None else {"resumed_at": resume.get("resumed_at", []) + [resume["step"]]}),
    )
    _, curve, _, wall, stopped = train(cfg, args.seed, args.out, args.minutes, resume)
    budget = " (stopped by --minutes)" if stopped else ""
    print(f"trained in {wall:.0f} s{budget}; return {curve[0][1]:.3f} -> {curve[-1][1]:.3f}")
    _update_run(args.out, wall_s=wall, stopped_by_wall_budget=stopped)
    if not args.no_render:
        render(args.out, args.seed)


if __name__ == "__main__":
    jnp.zeros(())  # start the backend before timing
    main()
