"""Pictures of the shipped robots with jaxdyn.viewer (no display needed).

Writes, under examples/output/ (``--out DIR`` elsewhere):
  robots.png  every shipped robot at a random joint configuration (floating bases upright at
              the origin, so the limbs are easy to read) and a random tree from jaxdyn.builders;
  panda.gif   the Panda moving along a smooth (minimum-jerk) joint trajectory from mid-range to a
              random configuration and back, with the trail of its tool point and the goal marked;
  robots_render.png  (with ``--solid``) the Solo-12 standing and the Panda, their meshes drawn by
              jaxdyn.render (needs jaxdyn[render] and jaxdyn[robots], example-robot-data's meshes).

Run: python examples/view_robots.py [--seed N] [--quick] [--solid] [--out DIR]
(``--quick``: a 12-frame GIF instead of 72, the grid at half resolution.)
"""

from __future__ import annotations

import argparse
import os

import jax
import jax.numpy as jnp
import numpy as np

import jaxdyn
from jaxdyn import viewer

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "output")


def random_q(model, key):
    """A random configuration; a floating base is put back upright at the origin."""
    q = jaxdyn.random_configuration(model, key)
    if model.floating_base:
        q = q.at[:7].set(jaxdyn.neutral(model)[:7])
    return q


def robots_grid(seed: int, out: str, dpi: int = 90) -> str:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    models = [jaxdyn.load_robot(name) for name in jaxdyn.available_robots()]
    models.append(jaxdyn.builders.random_tree(10, ("revolute", "prismatic"), seed=seed))
    keys = jax.random.split(jax.random.PRNGKey(seed), len(models))
    rows = -(-len(models) // 3)
    fig = Figure(figsize=(15, 5 * rows), dpi=dpi)
    FigureCanvasAgg(fig)
    fig.subplots_adjust(left=0.0, right=0.98, bottom=0.02, top=0.93, wspace=0.05, hspace=0.08)
    names = list(jaxdyn.available_robots()) + ["builders.random_tree(10)"]
    for i, (model, key, name) in enumerate(zip(models, keys, names)):
        ax = fig.add_subplot(rows, 3, i + 1, projection="3d")
        base = "floating base" if model.floating_base else "fixed base"
        viewer.draw(
            model, random_q(model, key), ax=ax, com=True, title=f"{name}  (nq={model.nq}, {model.nb} bodies, {base})"
        )
    fig.suptitle(f"jaxdyn shipped robots at random configurations (seed {seed})", fontsize=14)
    path = os.path.join(out, "robots.png")
    fig.savefig(path)
    return path


def panda_gif(seed: int, out: str, T: int = 72) -> str:
    model = jaxdyn.load_robot("panda")
    lo, hi = np.asarray(model.q_lower), np.asarray(model.q_upper)
    start = 0.5 * (lo + hi)
    goal = np.asarray(jaxdyn.random_configuration(model, jax.random.PRNGKey(seed + 1)))
    goal = start + 0.8 * (goal - start)  # stay clear of the limits
    t = np.linspace(0.0, 2.0, T)
    u = np.where(t <= 1.0, t, 2.0 - t)  # there and back
    s = 10 * u**3 - 15 * u**4 + 6 * u**5  # minimum-jerk profile, zero velocity at the ends
    qs = start + s[:, None] * (goal - start)
    target = np.asarray(jaxdyn.frame_placement(model, jnp.asarray(goal, model.dtype), "panda_hand_tcp").p)
    path = os.path.join(out, "panda.gif")
    viewer.animate(
        model,
        qs,
        path,
        fps=24,
        trail="panda_hand_tcp",
        target=target,
        dt=2.0 / (T - 1),
        title="panda: minimum-jerk reach and return",
        view=(20.0, -50.0),
    )
    return path


def robots_render(out: str, height: int = 300) -> str:
    """The Solo-12 standing and the Panda, side by side, from example-robot-data's URDFs and
    meshes (their <visual> elements), rendered by jaxdyn.render."""
    import imageio.v3 as iio

    from jaxdyn import render
    from jaxdyn.envs.quadruped import SOLO12_STAND
    from jaxdyn.robots import external_index

    index = external_index()
    if "solo12" not in index:
        raise ImportError('--solid needs example-robot-data\'s meshes: pip install "jaxdyn[robots]"')
    share = index["solo12"][0].split("/example-robot-data/")[0]
    w = height * 16 // 10
    imgs = []
    for name, q_of, cam in (
        ("solo12", lambda m: np.r_[0, 0, 0.24, 1, 0, 0, 0, SOLO12_STAND], render.Camera(140, -18, 1.1)),
        ("panda", lambda m: np.r_[0, -0.5, 0, -2.2, 0, 1.8, 0.8, 0.02, 0.02][: m.nq], render.Camera(150, -15)),
    ):
        path = index[name][0]
        model = jaxdyn.load_urdf(path, floating_base=name == "solo12", package_dirs=[share], collision_meshes=False)
        imgs.append(
            render.render_image(model, q_of(model), source=path, width=w, height=height, antialias=True, camera=cam)
        )
    path = os.path.join(out, "robots_render.png")
    iio.imwrite(path, np.concatenate(imgs, 1))
    return path


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--quick", action="store_true", help="a 12-frame GIF and a half-resolution grid")
    p.add_argument("--out", default=OUT, help="output folder (default: examples/output)")
    p.add_argument("--solid", action="store_true", help="also robots_render.png (jaxdyn[render], jaxdyn[robots])")
    args = p.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    dpi, frames = (45, 12) if args.quick else (90, 72)
    for path in (robots_grid(args.seed, args.out, dpi), panda_gif(args.seed, args.out, frames)):
        print(f"wrote {os.path.relpath(path)}")
    if args.solid:
        print(f"wrote {os.path.relpath(robots_render(args.out))}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
