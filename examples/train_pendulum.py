"""Train a swing-up policy with analytic policy gradients through jaxdyn's differentiable dynamics.

The policy (a small MLP, equinox) maps the observation to a normalised torque. The loss is the
negative discounted return of ``--horizon`` control steps of :meth:`jaxdyn.envs.Env.transition`
(the environment step without auto-reset), averaged over a batch of initial states drawn with
``env.reset``; its gradient with respect to the policy parameters is back-propagated through
every integrator step (``jax.grad`` of a ``lax.scan``, rematerialised per step), and Adam
(optax) follows it, with the global gradient norm clipped because gradients through long
horizons of a chaotic system grow large (Suh et al., "Do differentiable simulators give better
policy gradients?", ICML 2022; Xu et al., "Accelerated policy learning with parallel
differentiable simulation", ICLR 2022).

Every ``--eval-every`` iterations the policy is evaluated on full episodes (``env.step`` with
auto-reset semantics, ``max_steps`` long) from a fixed set of initial states; the learning
curve (PNG) and a GIF of the trained policy (``jaxdyn.viewer.animate``) go to
``examples/output/``. ::

    python examples/train_pendulum.py                       # pendulum swing-up, ~2 min on 2 cores
    python examples/train_pendulum.py --env cartpole_swingup --iters 300
    python examples/train_pendulum.py --quick --out /tmp/out   # reduced size (see QUICK)
"""

from __future__ import annotations

import argparse
import os
import time

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax

import jaxdyn.envs as envs

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "output")
# --quick: a reduced run (a few seconds after compilation on 2 cores); explicit options still win
QUICK = dict(iters=60, batch=32, horizon=50, eval_every=20, eval_episodes=16, gif_stride=10)


def make_policy(env, key, width=64):
    return eqx.nn.MLP(
        env.observation_size,
        env.action_size,
        width,
        2,
        activation=jax.nn.tanh,
        final_activation=jax.nn.tanh,
        key=key,
        dtype=env.model.dtype,
    )


def apg_loss(policy, env, states, horizon, gamma):
    """Negative mean discounted return of ``horizon`` steps from a batch of ``states``."""

    def one(state):
        def body(carry, _):
            s, disc = carry
            a = policy(env.observation(s))
            s, r, _, _ = env.transition(s, a)
            return (s, disc * gamma), disc * r

        _, rs = jax.lax.scan(jax.checkpoint(body), (state, jnp.ones((), env.model.dtype)), None, length=horizon)
        return jnp.sum(rs)

    return -jnp.mean(jax.vmap(one)(states)) / horizon


def evaluate(policy, env, states):
    """Undiscounted return of one full episode (``env.max_steps`` steps) per initial state, and
    the trajectory of the first one."""

    def one(state):
        def body(s, _):
            a = policy(env.observation(s))
            s2, _, r, _, _ = env.step(s, a)
            return s2, (r, s.q)

        _, (rs, qs) = jax.lax.scan(body, state, None, length=env.max_steps)
        return jnp.sum(rs), qs

    returns, qs = jax.vmap(one)(states)
    return returns, qs[0]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--env", default="pendulum", choices=envs.available_envs())
    p.add_argument("--iters", type=int, default=400)
    p.add_argument("--batch", type=int, default=128, help="initial states per gradient step")
    p.add_argument("--horizon", type=int, default=150, help="control steps differentiated through")
    p.add_argument("--gamma", type=float, default=0.99)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--clip", type=float, default=1.0, help="global gradient-norm clip")
    p.add_argument("--eval-every", type=int, default=25)
    p.add_argument("--eval-episodes", type=int, default=64)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--gif-stride", type=int, default=2, help="keep every n-th step in the GIF")
    p.add_argument("--out", default=OUT, help="output folder (default: examples/output)")
    p.add_argument(
        "--quick", action="store_true", help="reduced size: " + ", ".join(f"{k}={v}" for k, v in QUICK.items())
    )
    if p.parse_known_args(argv)[0].quick:
        p.set_defaults(**QUICK)
    args = p.parse_args(argv)

    env = envs.make(args.env)
    if args.horizon > env.max_steps:
        p.error(f"--horizon {args.horizon} exceeds the episode length {env.max_steps}")
    key = jax.random.PRNGKey(args.seed)
    key, kp, ke = jax.random.split(key, 3)
    policy = make_policy(env, kp)
    sched = optax.cosine_decay_schedule(args.lr, args.iters, alpha=0.1)
    opt = optax.chain(optax.clip_by_global_norm(args.clip), optax.adam(sched))
    opt_state = opt.init(eqx.filter(policy, eqx.is_array))
    eval_states = jax.vmap(env.reset)(jax.random.split(ke, args.eval_episodes))

    @eqx.filter_jit
    def update(policy, opt_state, key):
        states = jax.vmap(env.reset)(jax.random.split(key, args.batch))
        loss, g = eqx.filter_value_and_grad(apg_loss)(policy, env, states, args.horizon, args.gamma)
        updates, opt_state = opt.update(g, opt_state, eqx.filter(policy, eqx.is_array))
        return eqx.apply_updates(policy, updates), opt_state, loss, optax.global_norm(g)

    evaluate_jit = eqx.filter_jit(evaluate)
    print(
        f"{args.env}: obs {env.observation_size}, actions {env.action_size}, dt {env.dt}, "
        f"episode {env.max_steps} steps; APG horizon {args.horizon}, batch {args.batch}"
    )
    curve = []
    t0 = time.perf_counter()
    for it in range(args.iters + 1):
        if it % args.eval_every == 0 or it == args.iters:
            ret, _ = evaluate_jit(policy, env, eval_states)
            ret = np.asarray(ret)
            curve.append((it, time.perf_counter() - t0, ret.mean(), ret.std()))
            print(
                f"iter {it:4d}  t {curve[-1][1]:6.1f}s  episode return {ret.mean():9.2f} +- {ret.std():7.2f}",
                flush=True,
            )
        if it == args.iters:
            break
        key, k = jax.random.split(key)
        policy, opt_state, loss, gnorm = update(policy, opt_state, k)
        if not np.isfinite(float(loss)):
            raise FloatingPointError(f"iteration {it}: the loss is not finite")

    first, last = curve[0][2], curve[-1][2]
    print(f"return {first:.1f} -> {last:.1f} in {curve[-1][1]:.0f} s")
    os.makedirs(args.out, exist_ok=True)
    _plot(curve, args, os.path.join(args.out, f"train_{args.env}_curve.png"))
    _, qs = evaluate_jit(policy, env, eval_states)
    import jaxdyn.viewer as viewer

    gif = os.path.join(args.out, f"train_{args.env}.gif")
    viewer.animate(
        env.model,
        np.asarray(qs),
        gif,
        fps=1.0 / env.dt / args.gif_stride,
        stride=args.gif_stride,
        dt=env.dt,
        trail="tip" if "tip" in env.model.frame_names else None,
        view=(10.0, -90.0),
        title=f"{args.env}: trained policy",
    )
    print("wrote", os.path.join(args.out, f"train_{args.env}_curve.png"), "and", gif)
    return curve


def _plot(curve, args, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    it, _, m, s = map(np.asarray, zip(*curve))
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(it, m, "o-", label="mean episode return")
    ax.fill_between(it, m - s, m + s, alpha=0.25, label="+- 1 std over initial states")
    ax.set_xlabel("gradient step")
    ax.set_ylabel("return")
    ax.set_title(f"{args.env}: analytic policy gradient (batch {args.batch}, horizon {args.horizon})")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


if __name__ == "__main__":
    main()
