"""An ellipsoid against a published robot's mesh hulls: ``collision.ellipsoid_hull_contacts``
(exact searches on ``ELLIPSOID_CANDIDATES`` faces and edges chosen by cheap bounds) against the
search over every face's support point, every vertex and every edge, built from the same exact
pieces, in the same process. Random poses around each hull (ellipsoids of 0.06-0.3 times the
hull's extent, centres 0.3-1.2 times its diagonal from its centre), float64, compile excluded,
median of 5 calls on 8 pairs; the pair's distance compared where the search over everything
says the shapes are apart.

    pip install example-robot-data
    python benchmarks/ellipsoid_mesh_cost.py [--robot go2] [--hulls 3] [--poses 200]
"""

from __future__ import annotations

import argparse
import time
import warnings

import jax
import jax.numpy as jnp
import numpy as np

import jaxdyn
from jaxdyn import collision as K
from jaxdyn import geometry
from jaxdyn.contact.pairs import hull_arrays
from jaxdyn.spatial import quat_to_rotation


def every_feature(c, R, a, T, V, E):
    """The pair's distance from every face's support point, every vertex and every edge."""
    x, X, zero = c[:, None], R[:, None], jnp.zeros((), c.dtype)
    n = K.face_normals(T)
    sup = x + K.ellipsoid_support(X, a[:, None], -n)[1]
    faces = jnp.min(K.sphere_hull(sup, jnp.zeros(sup.shape[:-1], c.dtype), T)[0], -1)
    vertices = jnp.min(K.sphere_ellipsoid(V, zero, x, X, a[:, None])[0], -1)
    p, d = E[..., 0, :], E[..., 1, :] - E[..., 0, :]
    edges = jnp.min(K.segment_ellipsoid(p, d, zero, x, X, a[:, None])[0], -1)
    return jnp.minimum(jnp.minimum(faces, vertices), edges)


def median_ms(f, args, calls=5):
    jax.block_until_ready(f(*args))
    ts = []
    for _ in range(calls):
        t0 = time.perf_counter()
        jax.block_until_ready(f(*args))
        ts.append(time.perf_counter() - t0)
    return 1e3 * float(np.median(ts))


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--robot", default="go2")
    ap.add_argument("--hulls", type=int, default=3, help="the largest this many distinct hulls")
    ap.add_argument("--poses", type=int, default=200)
    a = ap.parse_args(argv)
    jax.config.update("jax_enable_x64", True)  # a script: float64 throughout
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = jaxdyn.load_robot(a.robot, dtype=jnp.float64)
    g = m.geoms
    ng = len(g.type)
    sizes = {}
    for k in np.flatnonzero(np.asarray(g.type) == geometry.MESH):
        key = (int(np.sum(np.asarray(g.face_geom) == k)), int(np.sum(np.asarray(g.edge_geom) == k)))
        sizes.setdefault(key, int(k))
    Rg, cg = jnp.broadcast_to(jnp.eye(3), (ng, 3, 3)), jnp.zeros((ng, 3))
    cand = jax.jit(K.ellipsoid_hull_contacts)
    full = jax.jit(every_feature)
    print(f"{a.robot}, candidates {K.ELLIPSOID_CANDIDATES}, {a.poses} poses per hull, jax {jax.__version__}")
    print("| hull (faces, edges) | poses apart | max error apart (m) | candidates ms | every feature ms | ratio |")
    print("|---|---|---|---|---|---|")
    for (nf, ne), k in sorted(sizes.items(), reverse=True)[: a.hulls]:
        V0 = np.asarray(g.vertices)[np.asarray(g.vertex_geom) == k]
        ext, ctr = V0.max(0) - V0.min(0), (V0.max(0) + V0.min(0)) / 2
        rng = np.random.default_rng(k)
        P = a.poses
        T, V, valid, E, e_valid = hull_arrays(g, np.asarray([k] * P), Rg, cg)
        size = jnp.asarray(rng.uniform(0.2, 1.0, (P, 3)) * ext.max() * 0.3)
        dirs = rng.normal(size=(P, 3))
        dirs /= np.linalg.norm(dirs, axis=1, keepdims=True)
        c = jnp.asarray(ctr + dirs * rng.uniform(0.3, 1.2, (P, 1)) * np.linalg.norm(ext))
        quat = rng.normal(size=(P, 4))
        R = jax.vmap(quat_to_rotation)(jnp.asarray(quat / np.linalg.norm(quat, axis=1, keepdims=True)))
        d = np.asarray(cand(c, R, size, T, V, valid, E, e_valid)[3])
        ref = np.concatenate([np.asarray(full(*(z[i : i + 8] for z in (c, R, size, T, V, E)))) for i in range(0, P, 8)])
        apart = ref > 0
        err = float(np.abs(d - ref)[apart].max())
        args8 = tuple(z[:8] for z in (c, R, size, T, V, valid, E, e_valid))
        t_c = median_ms(cand, args8)
        t_f = median_ms(full, tuple(z[:8] for z in (c, R, size, T, V, E)))
        print(f"| {nf}, {ne} | {apart.sum()} | {err:.1e} | {t_c:.1f} | {t_f:.1f} | {t_f / t_c:.0f}x |", flush=True)


if __name__ == "__main__":
    main()
