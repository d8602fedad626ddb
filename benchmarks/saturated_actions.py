"""Saturated random actions on the Solo-12 joystick task: how often the physics step runs away.

Random +-1 actions on ``--envs`` randomised robots (``jaxdyn.envs.quadruped.randomize``) for
``--steps`` control steps, with automatic reset; prints how many transitions reached a joint
speed above 200 rad/s, how many gave a non-finite reward, and the largest joint speed
(docs/rl.md). ::

    python benchmarks/saturated_actions.py                                  # foot pairs on
    python benchmarks/saturated_actions.py --no-pairs --position implicit
"""

from __future__ import annotations

import argparse
import dataclasses
import time

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from jaxdyn import sim
from jaxdyn.envs import QuadrupedJoystick
from jaxdyn.envs.quadruped import randomize


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--envs", type=int, default=128)
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--position", choices=("explicit", "implicit"), default="explicit")
    ap.add_argument("--no-pairs", action="store_true", help="feet against the ground only")
    ap.add_argument("--float64", action="store_true")
    args = ap.parse_args()
    if args.float64:
        jax.config.update("jax_enable_x64", True)
    env = QuadrupedJoystick(options=sim.SimOptions(contact_position=args.position))
    if args.no_pairs:
        env = eqx.tree_at(lambda e: e.contact, env, dataclasses.replace(env.contact, collide_pairs=False))
    n = args.envs
    params = randomize(env, jax.random.PRNGKey(1), n)
    states = jax.vmap(env.reset)(jax.random.split(jax.random.PRNGKey(0), n))

    @jax.jit
    def run(params, states):
        def body(s, k):
            a = jnp.sign(jax.random.uniform(k, (n, 12)) - 0.5)
            s2, _, r, d, _ = jax.vmap(lambda p, s, a: env.with_params(p).step(s, a))(params, s, a)
            return s2, (jnp.max(jnp.abs(s2.qd[:, 6:]), axis=1), ~jnp.isfinite(r))

        return jax.lax.scan(body, states, jax.random.split(jax.random.PRNGKey(2), args.steps))[1]

    t = time.perf_counter()
    speed, nonfinite = (np.asarray(x) for x in run(params, states))
    print(
        f"{vars(args)}: {time.perf_counter() - t:.0f} s; transitions above 200 rad/s: {int((speed > 200).sum())} "
        f"of {speed.size}; non-finite rewards: {int(nonfinite.sum())}; largest joint speed {np.nanmax(speed):.0f} rad/s"
    )


if __name__ == "__main__":
    main()
