"""Every matrix product the library traces asks for full float32 precision.

On GPUs with TensorFloat-32 (Ampere, Hopper), XLA evaluates a float32 ``dot_general`` of default
precision in TF32: the H100 run of 2026-11-23 measured the generic CRBA 3e-4 away from the
elementwise SoA kernel. CPU results do not show it, so this checks the traced programs instead:
no ``dot_general`` (gradients included) may be left at the default precision.
"""

import equinox as eqx
import jax
import jax.numpy as jnp
import pytest
from helpers import state

import jaxdyn
from jaxdyn import builders, kernels


def _dots(jaxpr):
    """Every dot_general equation of a jaxpr, nested jaxprs (scan, jit, custom rules) included."""
    for eqn in jaxpr.eqns:
        if eqn.primitive.name == "dot_general":
            yield eqn
        for v in eqn.params.values():
            for sub in v if isinstance(v, (list, tuple)) else (v,):
                inner = getattr(sub, "jaxpr", sub)
                if hasattr(inner, "eqns"):
                    yield from _dots(inner)


def _default_precision_dots(f, *args):
    jaxpr = jax.make_jaxpr(f)(*args).jaxpr
    dots = list(_dots(jaxpr))
    bad = [
        e
        for e in dots
        if e.params["precision"] is None
        or any(p is None or p == jax.lax.Precision.DEFAULT for p in e.params["precision"])
    ]
    return dots, bad


def _cases(model):
    fac = lambda q: jaxdyn.factorize(model, q)  # noqa: E731
    return {
        "crba": lambda q, v, t: jaxdyn.crba(model, q),
        "aba": lambda q, v, t: jaxdyn.aba(model, q, v, t),
        "rnea": lambda q, v, t: jaxdyn.rnea(model, q, v, t),
        "mass_matrix_inverse": lambda q, v, t: jaxdyn.mass_matrix_inverse(model, q),
        "innovations": lambda q, v, t: (
            jaxdyn.apply_innovations_inverse(model, fac(q), t),
            jaxdyn.apply_innovations_factor(model, fac(q), t),
            jaxdyn.apply_innovations_inverse_transpose(model, fac(q), t),
            jaxdyn.apply_innovations_factor_transpose(model, fac(q), t),
        ),
        "body_inverse_inertias": lambda q, v, t: jaxdyn.body_inverse_inertias(model, q),
        "energy": lambda q, v, t: jaxdyn.mechanical_energy(model, q, v),
        "frame_jacobian": lambda q, v, t: jaxdyn.frame_jacobian(model, q, model.body_names[-1], "world"),
        "lagrange_mcg": lambda q, v, t: jaxdyn.lagrange_mcg(model, q),
        "crba_batch": lambda q, v, t: kernels.crba_batch(model, q[None]),
        "aba_batch": lambda q, v, t: kernels.aba_batch(model, q[None], v[None], t[None]),
    }


@pytest.mark.parametrize("name", list(_cases(builders.random_tree(3, floating_base=True, seed=1))))
def test_no_default_precision_products(name):
    if name in ("lagrange_mcg", "crba_batch", "aba_batch"):  # 1-dof joints on a fixed base only
        model = builders.random_tree(5, ("revolute", "prismatic"), floating_base=False, seed=1, dtype=jnp.float32)
    else:
        model = builders.random_tree(
            5, ("revolute", "prismatic", "spherical"), floating_base=True, seed=1, dtype=jnp.float32
        )
    q, v, _, t = state(model)
    f = _cases(model)[name]
    g = jax.grad(lambda q, v, t: sum(jnp.sum(x) for x in jax.tree_util.tree_leaves(f(q, v, t))), argnums=(0, 1, 2))
    for fn in (f, g):
        dots, bad = _default_precision_dots(fn, q, v, t)
        assert not bad, f"{name}: {len(bad)} of {len(dots)} matrix products at default (TF32 on GPU) precision"


def test_the_check_sees_default_precision():
    """The walker finds a default-precision product nested in a scan: the test above can fail."""

    def f(x):
        return jax.lax.scan(lambda c, a: (c @ a, None), x, jnp.stack([x, x]))[0]

    dots, bad = _default_precision_dots(f, jnp.eye(3))
    assert len(dots) == 1 and len(bad) == 1


def _contact_cases():
    from jaxdyn import sim
    from jaxdyn.envs import QuadrupedJoystick

    env = QuadrupedJoystick(dtype=jnp.float32)
    model, contact = env.model, env.contact
    h = env.dt / env.substeps

    def env_step(q, v, t):
        s = env.reset(jax.random.PRNGKey(0))
        s = eqx.tree_at(lambda s: (s.q, s.qd), s, (q, v))
        return env.step(s, t[6:])[:3]

    return env, {
        "sim_step_contact": lambda q, v, t: sim.step(model, q, v, t, h, contact=contact),
        "forward_dynamics_contact": lambda q, v, t: sim.forward_dynamics(model, q, v, t, contact=contact),
        "contact_point_forces": lambda q, v, t: contact.point_forces(model, q, v).force,
        "contact_joint_space": lambda q, v, t: contact.joint_space(model, q).velocity_derivative(v),
        "quadruped_env_step": env_step,
    }


@pytest.mark.parametrize(
    "name",
    [
        "sim_step_contact",
        "forward_dynamics_contact",
        "contact_point_forces",
        "contact_joint_space",
        "quadruped_env_step",
    ],
)
def test_no_default_precision_products_with_contact(name):
    """The physics step with contact (the RL environments' inner loop): a TF32 product there
    made Brax PPO's returns NaN within 5 M steps on an H200 (float32), where the CPU ran finite."""
    env, cases = _contact_cases()
    q = env.reset(jax.random.PRNGKey(1)).q.at[2].add(-0.01)  # feet in the ground
    v = jnp.linspace(-0.5, 0.5, 18, dtype=jnp.float32)
    t = jnp.linspace(-1.0, 1.0, 18, dtype=jnp.float32)
    f = cases[name]
    g = jax.grad(lambda q, v, t: sum(jnp.sum(x) for x in jax.tree_util.tree_leaves(f(q, v, t))), argnums=(0, 1, 2))
    for fn in (f, g):
        dots, bad = _default_precision_dots(fn, q, v, t)
        assert dots, f"{name}: no matrix product traced"
        assert not bad, f"{name}: {len(bad)} of {len(dots)} matrix products at default (TF32 on GPU) precision"
