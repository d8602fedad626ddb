"""The loaded MJCF files of the sweep (tests/reference/sweep_mjcf_wheels.py) against MuJoCo:
for each file that loads and has no free or ball joint, ``qacc`` of ``mj_forward`` at three
random states near ``qpos0`` with random controls and activations, with MuJoCo's contacts and
joint friction loss off (jaxdyn's forward dynamics here has neither) and its solver run to
convergence, states where a joint limit acts skipped (jaxdyn's joint limits are spring-dampers). Prints the largest difference relative
to the largest acceleration, per file.

Run: ``python tests/reference/check_mjcf_wheels_constraints.py`` (needs mujoco).
"""

import os
import sys
import warnings

import jax
import jax.numpy as jnp
import mujoco
import numpy as np

import jaxdyn
from jaxdyn import sim

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sweep_mjcf_wheels import files  # noqa: E402

OPTS = sim.SimOptions(friction=False, joint_limits=False)


def check(path, rng):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            m = jaxdyn.load_mjcf(path)
        except Exception:  # noqa: BLE001 - refused: the sweep reports why
            return None
    try:
        mm = mujoco.MjModel.from_xml_path(path)
    except ValueError as e:  # the wheel leaves out mesh files that MuJoCo needs
        return f"MuJoCo does not compile it: {str(e).splitlines()[0]}"
    if np.any(np.isin(mm.jnt_type, [mujoco.mjtJoint.mjJNT_FREE, mujoco.mjtJoint.mjJNT_BALL])):
        return "free or ball joints: not compared"
    mm.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT | mujoco.mjtDisableBit.mjDSBL_FRICTIONLOSS
    mm.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_REFSAFE  # forward_dynamics has no step to bound by
    mm.opt.iterations, mm.opt.tolerance = 100, 1e-14  # converged (Playground's scenes truncate the solver)
    d = mujoco.MjData(mm)
    ctrl = None if m.actuators is None else (lambda q, v, u, a: (u, a if m.actuators.na else None))
    f = jax.jit(
        lambda q, v, u, a: sim.forward_dynamics(
            m,
            q,
            v,
            jnp.zeros(m.nv),
            options=OPTS,
            **({} if ctrl is None else dict(zip(("ctrl", "act"), ctrl(q, v, u, a)))),
        )
    )
    worst, n = 0.0, 0
    for _ in range(3):
        d.qpos[:] = mm.qpos0 + 0.05 * rng.standard_normal(mm.nq)
        d.qvel[:] = 0.3 * rng.standard_normal(mm.nv)
        lo, hi = mm.actuator_ctrlrange[:, 0], mm.actuator_ctrlrange[:, 1]
        d.ctrl[:] = np.where(
            mm.actuator_ctrllimited, lo + (hi - lo) * rng.uniform(size=mm.nu), rng.standard_normal(mm.nu)
        )
        d.act[:] = 0.1 * rng.standard_normal(mm.na)
        mujoco.mj_forward(mm, d)
        if np.any(d.efc_type[: d.nefc] == mujoco.mjtConstraint.mjCNSTR_LIMIT_JOINT):
            continue
        out = np.asarray(f(jnp.asarray(d.qpos), jnp.asarray(d.qvel), jnp.asarray(d.ctrl), jnp.asarray(d.act)))
        worst = max(worst, np.abs(out - d.qacc).max() / max(1e-12, np.abs(d.qacc).max()))
        n += 1
    return f"qacc to {worst:.1e} of the largest ({n} states)" if n else "a joint limit acts at every state tried"


def main():
    jax.config.update("jax_enable_x64", True)
    rng = np.random.default_rng(0)
    for path in files():
        r = check(path, rng)
        if r is not None:
            print(f"{path.split('site-packages/')[-1]:80s} {r}", flush=True)


if __name__ == "__main__":
    main()
