"""Inverse dynamics and the mass matrix of every example-robot-data URDF, jaxdyn against Pinocchio.

    pip install pin example-robot-data        # not jaxdyn dependencies
    python tests/reference/check_pinocchio_all_published.py

For each URDF that jaxdyn loads (with the robot's default base; the ones it refuses are printed
with the reason), Pinocchio loads the same file (a free flyer where jaxdyn's base floats), and
at one random configuration, velocity and acceleration both compute ``rnea`` and ``crba``.
Joints are matched by name; Pinocchio's conventions are converted (free-flyer quaternion
``[x, y, z, w]`` and velocity ``[v; omega]``, a continuous joint's ``(cos, sin)``). Prints the
number compared and the largest errors relative to each quantity's largest entry (at least 1).
"""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pinocchio as pin

import jaxdyn
from jaxdyn import robots


def pinocchio_state(m, pm, q):
    """Pinocchio's ``q`` and the ``(nv, nv)`` permutation from its velocity order to jaxdyn's."""
    names = list(pm.names)
    pq, P = np.zeros(pm.nq), np.zeros((m.nv, pm.nv))
    for j, name in enumerate(m.joint_names):
        jm = pm.joints[names.index(name)]
        qs, vs = int(m.layout.q_start[j]), int(m.layout.v_start[j])
        if m.joint_types[j] == "free":
            w, x, y, z = q[qs + 3 : qs + 7]
            pq[jm.idx_q : jm.idx_q + 7] = [*q[qs : qs + 3], x, y, z, w]
            for k in range(3):
                P[vs + k, jm.idx_v + 3 + k] = P[vs + 3 + k, jm.idx_v + k] = 1.0
        elif jm.nq == 2:  # a continuous joint: (cos, sin)
            pq[jm.idx_q : jm.idx_q + 2] = [np.cos(q[qs]), np.sin(q[qs])]
            P[vs, jm.idx_v] = 1.0
        else:
            pq[jm.idx_q] = q[qs]
            P[vs, jm.idx_v] = 1.0
    return pq, P


def main():
    jax.config.update("jax_enable_x64", True)  # a script: float64 throughout
    seen, rows = set(), []
    for name in robots.external_robots():
        path, _ = robots.external_index()[name]
        if path in seen:  # a file has a second name, "<package>/<stem>"
            continue
        seen.add(path)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                m = jaxdyn.load_robot(name, dtype=jnp.float64)
        except Exception as e:  # reported, not raised
            print(f"{name}: refused: {type(e).__name__}: {e}")
            continue
        pm = (
            pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if m.floating_base else pin.buildModelFromUrdf(path)
        )
        pd = pm.createData()
        rng = np.random.default_rng(0)
        q = np.asarray(jaxdyn.random_configuration(m, jax.random.PRNGKey(1)))
        qd, qdd = rng.normal(size=m.nv), rng.normal(size=m.nv)
        pq, P = pinocchio_state(m, pm, q)
        tau_p = P @ pin.rnea(pm, pd, pq, P.T @ qd, P.T @ qdd)
        M_p = P @ pin.crba(pm, pd, pq) @ P.T
        M_p = np.triu(M_p) + np.triu(M_p, 1).T  # Pinocchio fills the upper triangle
        tau_j = np.asarray(jaxdyn.rnea(m, jnp.asarray(q), jnp.asarray(qd), jnp.asarray(qdd)))
        M_j = np.asarray(jaxdyn.crba(m, jnp.asarray(q)))
        e_tau = np.abs(tau_p - tau_j).max() / max(1.0, np.abs(tau_p).max())
        e_M = np.abs(M_p - M_j).max() / max(1.0, np.abs(M_p).max())
        rows.append((max(e_tau, e_M), name, m.nv))
    rows.sort(reverse=True)
    print(f"{len(rows)} URDFs compared; the largest relative errors of rnea and crba:")
    for err, name, nv in rows[:8]:
        print(f"  {name:40s} nv {nv:3d}  {err:.1e}")


if __name__ == "__main__":
    main()
