"""Shared test helpers: jitted entry points (so each model compiles once) and model zoo."""

import functools

import jax
import numpy as np

import jaxdyn
from jaxdyn import builders

rnea = jax.jit(jaxdyn.rnea)
aba = jax.jit(jaxdyn.aba)
crba = jax.jit(jaxdyn.crba)
coriolis = jax.jit(jaxdyn.coriolis_torques)
bias = jax.jit(jaxdyn.bias_forces)
kinetic = jax.jit(jaxdyn.kinetic_energy)
energy = jax.jit(jaxdyn.mechanical_energy)
body_vel = jax.jit(jaxdyn.body_velocities)
body_acc = jax.jit(jaxdyn.body_accelerations)
body_jac = jax.jit(jaxdyn.body_jacobian, static_argnames=("body", "reference"))


def state(model, seed=0):
    key = jax.random.PRNGKey(seed)
    k1, k2, k3, k4 = jax.random.split(key, 4)
    q = jaxdyn.random_configuration(model, k1)
    qd = jax.random.normal(k2, (model.nv,), model.dtype)
    qdd = jax.random.normal(k3, (model.nv,), model.dtype)
    tau = jax.random.normal(k4, (model.nv,), model.dtype)
    return q, qd, qdd, tau


@functools.cache
def zoo(name):
    """Random models that cover every joint type, chains and trees, fixed and floating."""
    mixed = ("revolute", "prismatic", "spherical", "continuous")
    return {
        "chain_rev": lambda: builders.chain(7, "revolute", seed=1),
        "chain_mixed": lambda: builders.chain(6, mixed, seed=2),
        "chain_mixed_float": lambda: builders.chain(5, mixed, floating_base=True, seed=3),
        "tree_rev_pri": lambda: builders.random_tree(9, ("revolute", "prismatic"), seed=4),
        "tree_mixed": lambda: builders.random_tree(8, mixed, seed=5),
        "tree_mixed_float": lambda: builders.random_tree(8, mixed, floating_base=True, seed=6),
        "panda": lambda: jaxdyn.load_robot("panda"),
        "solo12": lambda: jaxdyn.load_robot("solo12"),
    }[name]()


ZOO = ("chain_rev", "chain_mixed", "chain_mixed_float", "tree_rev_pri", "tree_mixed", "tree_mixed_float")


def assert_close(a, b, rtol=1e-10):
    a, b = np.asarray(a), np.asarray(b)
    scale = max(1.0, float(np.max(np.abs(b)))) if b.size else 1.0
    np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * scale)


# XLA CPU's default (fusion) emitters, for programs that must compile as users compile them
# (tests/conftest.py switches the suite to the faster-compiling earlier emitters)
DEFAULT_EMITTERS = {"xla_cpu_use_fusion_emitters": True}


def actuator_points(ref):
    """The random states of a stored actuator reference (tests/data/mujoco/actuators/*.npz,
    tests/reference/generate_mujoco_actuators.py), one tuple ``(qpos, qvel, ctrl, act,
    actuator_force, qfrc_actuator)`` each, MuJoCo's forces last."""
    fields = ("qpos", "qvel", "ctrl", "act", "actuator_force", "qfrc_actuator")
    return zip(*(ref[f"points_{f}"] for f in fields))
