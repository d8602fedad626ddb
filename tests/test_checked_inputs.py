"""Mistakes in the simulation's inputs are refused by name before anything is compiled: a step
length that is not positive and finite, a negative number of steps, controls or a policy output
of the wrong shape."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxdyn
from jaxdyn import envs, sim

DP = jaxdyn.load_robot("double_pendulum")
Q0, QD0 = jnp.array([0.5, 0.0]), jnp.zeros(2)


@pytest.mark.parametrize("dt", [0.0, -1e-3, float("nan"), float("inf"), np.array([1e-3, 0.0])])
def test_step_and_rollout_refuse_a_dt_that_is_not_positive_and_finite(dt):
    with pytest.raises(ValueError, match=r"step: dt must be positive and finite, got"):
        sim.step(DP, Q0, QD0, jnp.zeros(2), dt)
    with pytest.raises(ValueError, match=r"rollout: dt must be positive and finite, got"):
        sim.rollout(DP, Q0, QD0, jnp.zeros((3, 2)), dt)


def test_dt_of_the_wrong_type_is_named():
    with pytest.raises(TypeError, match=r"step: dt must be a real number .* got '1e-3'"):
        sim.step(DP, Q0, QD0, jnp.zeros(2), "1e-3")


def test_a_traced_dt_is_not_read():
    """Under jit a dt argument is traced: its value cannot be checked in Python (the docs say
    so), and a valid one runs."""
    q1, _ = jax.jit(lambda h: sim.step(DP, Q0, QD0, jnp.zeros(2), h, "semi_implicit_euler"))(1e-3)
    assert np.all(np.isfinite(q1))


@pytest.mark.parametrize("steps", [-1, 2.5, True])
def test_rollout_refuses_steps_that_are_not_a_count(steps):
    policy = lambda q, qd, t: jnp.zeros(2)  # noqa: E731
    with pytest.raises(ValueError, match=rf"rollout: steps must be a non-negative integer .* got {steps!r}"):
        sim.rollout(DP, Q0, QD0, policy, 1e-3, steps=steps)


def test_rollout_refuses_substeps_that_are_not_a_count():
    with pytest.raises(ValueError, match=r"rollout: substeps must be an integer >= 1, got 0"):
        sim.rollout(DP, Q0, QD0, jnp.zeros((3, 2)), 1e-3, substeps=0)


def test_wrong_shapes_name_the_expected_shape():
    with pytest.raises(ValueError, match=r"step: tau must have shape \(2,\) for model '2dof_planar', got \(3,\)"):
        sim.step(DP, Q0, QD0, jnp.zeros(3), 1e-3)
    with pytest.raises(ValueError, match=r"step: q must have shape \(2,\) for model '2dof_planar', got \(2, 1\)"):
        sim.step(DP, Q0[:, None], QD0, jnp.zeros(2), 1e-3)
    with pytest.raises(ValueError, match=r"rollout: controls must have shape \(T, 2\), got \(2,\)"):
        sim.rollout(DP, Q0, QD0, jnp.zeros(2), 1e-3)
    bad_policy = lambda q, qd, t: jnp.zeros(3)  # noqa: E731
    with pytest.raises(ValueError, match=r"rollout: the torque policy's output must have shape \(2,\) .* got \(3,\)"):
        sim.rollout(DP, Q0, QD0, bad_policy, 1e-3, steps=4)


def test_model_check_applies_the_loaders_rules():
    m = DP.check()  # a loaded model passes and is returned
    with pytest.raises(
        ValueError, match=r"model '2dof_planar': body '.*' has a negative mass -0.267[0-9]* \(masses must be >= 0\)"
    ):
        m.replace(mass=-m.mass).check()
    with pytest.raises(
        ValueError, match=r"model '2dof_planar': damping must have shape \(2,\) \(from its topology\), got \(3,\)"
    ):
        m.replace(damping=jnp.zeros(3)).check()
    with pytest.raises(ValueError, match=r"model '2dof_planar': com \(body '.*'\) is not finite: nan"):
        m.replace(com=m.com.at[1, 0].set(jnp.nan)).check()
    with pytest.raises(ValueError, match=r"q_lower is not finite: nan"):
        m.replace(q_lower=m.q_lower.at[0].set(jnp.nan)).check()
    m.replace(q_lower=jnp.full(2, -jnp.inf)).check()  # infinite limits are fine
    with pytest.raises(ValueError, match=r"joint '.*' moves body '.*', which carries no mass or inertia"):
        m.replace(mass=m.mass.at[1].set(0.0), inertia=m.inertia.at[1].set(0.0)).check()
    lopsided = m.inertia.at[1].set(jnp.diag(jnp.array([1.0, 1.0, 5.0])))
    with pytest.warns(jaxdyn.InertiaWarning, match=r"body '.*': principal moments .* violate the triangle inequality"):
        m.replace(inertia=lopsided).check()
    with pytest.raises(ValueError, match=r"inertia not physically consistent: body"):
        m.replace(inertia=lopsided).check(inertia="strict")


def test_sim_and_environments_check_their_model():
    bad = DP.replace(mass=-DP.mass)
    with pytest.raises(ValueError, match=r"step: model '2dof_planar': body '.*' has a negative mass"):
        sim.step(bad, Q0, QD0, jnp.zeros(2), 1e-3)
    with pytest.raises(ValueError, match=r"rollout: model '2dof_planar': damping must have shape \(2,\)"):
        sim.rollout(DP.replace(damping=jnp.zeros(3)), Q0, QD0, jnp.zeros((3, 2)), 1e-3)
    with pytest.raises(TypeError, match=r"step: the first argument must be a jaxdyn.Model, got ndarray"):
        sim.step(np.zeros(2), Q0, QD0, jnp.zeros(2), 1e-3)
    with pytest.raises(ValueError, match=r"body '.*' has a negative mass"):
        envs.make("pendulum", model=jaxdyn.load_robot("pendulum").replace(mass=-jnp.ones(1)))
    with pytest.raises(ValueError, match=r"dt must be a positive finite number, got inf"):
        envs.make("pendulum", dt=float("inf"))


def test_a_traced_model_is_checked_for_shapes_only():
    """Under grad the model's values are tracers: the value rules are skipped, the shapes are
    checked."""
    step = lambda mass: sim.step(DP.replace(mass=mass), Q0, QD0, jnp.zeros(2), 1e-3, "euler")[1][0]  # noqa: E731
    assert jax.eval_shape(jax.grad(step), DP.mass).shape == (2,)  # traced: no value read
    with pytest.raises(ValueError, match=r"step: model '2dof_planar': mass must have shape \(2,\)"):
        jax.eval_shape(jax.grad(step), jnp.ones(3))  # shapes are checked while tracing


def test_common_api_slips_name_the_fix():
    """The mistakes a new user makes with the README's quickstart."""
    q, qd = jnp.zeros(2), jnp.zeros(2)
    with pytest.raises(
        TypeError,
        match=r"aba: the first argument must be a jaxdyn.Model, got an array \(the call is aba\(model, q, qd, tau\)",
    ):
        jaxdyn.aba(q, DP, qd, qd)
    with pytest.raises(TypeError, match=r"rnea: the first argument must be a jaxdyn.Model, got str .*load_robot"):
        jaxdyn.rnea("double_pendulum", q, qd, qd)
    with pytest.raises(
        TypeError,
        match=r"kinetic_energy: the first argument must be a jaxdyn.Model, got an array \(arguments in the wrong order",
    ):
        jaxdyn.kinetic_energy(q, DP, qd)
    np.testing.assert_allclose(
        jaxdyn.crba(DP, [0.1, 0.2]), jaxdyn.crba(DP, jnp.array([0.1, 0.2]))
    )  # a list is an array
    with pytest.raises(KeyError, match=r"unknown robot 'Panda'; did you mean 'panda'\?"):
        jaxdyn.load_robot("Panda")
    with pytest.raises(TypeError, match=r"random_configuration: key must be a JAX random key \(jax.random.key\(0\)"):
        jaxdyn.random_configuration(DP, 0)
    two_args = lambda q, qd: jnp.zeros(2)  # noqa: E731
    with pytest.raises(
        TypeError, match=r"rollout: the controls policy is called as policy\(q, qd, t\) .* cannot take three"
    ):
        sim.rollout(DP, Q0, QD0, two_args, 1e-3, steps=5)
    with pytest.raises(jaxdyn.MJCFError, match=r"expected <mujoco> \(a URDF file: load it with jaxdyn.load_urdf\)"):
        jaxdyn.load_mjcf(jaxdyn.robots.robot_path("double_pendulum"))
    with pytest.raises(jaxdyn.URDFError, match=r"expected <robot> \(an MJCF file: load it with jaxdyn.load_mjcf\)"):
        jaxdyn.load_urdf("<mujoco/>")


def test_vmap_slips_name_in_axes():
    """``vmap`` without ``in_axes=None`` for the model (here over its masses), an argument
    without a batch axis, and a batch given without ``vmap`` are named with the call that works;
    traced only (no compile)."""
    qs = jnp.zeros((2, 2))
    with pytest.raises(
        ValueError,
        match=r"aba: model.mass has shape \(\), expected \(2,\) .* jax.vmap mapped over the model's own arrays.* "
        r"jax.vmap\(jaxdyn.aba, in_axes=\(None, 0, 0, 0\)\)",
    ):
        jax.eval_shape(jax.vmap(lambda mass, q: jaxdyn.aba(DP.replace(mass=mass), q, q, q)), DP.mass, qs)
    with pytest.raises(ValueError, match=r"aba: argument 'tau' has shape \(\), .* give in_axes=None to an argument"):
        jax.eval_shape(jax.vmap(jaxdyn.aba, in_axes=(None, 0, 0, 0)), DP, qs, qs, jnp.zeros(2))
    with pytest.raises(
        ValueError,
        match=r"crba: argument 'q' has shape \(5, 2\), .* one sample per call: batch with jax.vmap\(jaxdyn.crba, in_axes=\(None, 0\)\)",
    ):
        jax.eval_shape(jaxdyn.crba, DP, jnp.zeros((5, 2)))
    with pytest.raises(
        ValueError, match=r"rnea: argument 'q' has shape \(3,\), expected \(2,\) for model '2dof_planar' \(nq=2"
    ):
        jax.eval_shape(jaxdyn.rnea, DP, jnp.zeros(3), jnp.zeros(2), jnp.zeros(2))
    # the right call: a batch of states, the model shared
    assert jax.eval_shape(jax.vmap(jaxdyn.aba, in_axes=(None, 0, 0, None)), DP, qs, qs, jnp.zeros(2)).shape == (2, 2)


def test_models_built_inside_jit():
    """A model edited with traced parameters inside ``jit`` (the common case) is checked by shape
    only and computes as outside; a model loaded from a file inside ``jit`` loads, concrete (the
    loaders evaluate their arrays at once), so every check reads its values."""
    q, z = jnp.array([0.3, -0.2]), jnp.zeros(2)

    def heavier(s):
        return jaxdyn.aba(DP.replace(mass=DP.mass * s).check(), q, z, z)

    np.testing.assert_allclose(jax.jit(heavier)(2.0), heavier(2.0), rtol=1e-6)
    with pytest.raises(
        ValueError, match=r"model '2dof_planar': mass must have shape \(2,\) \(from its topology\), got \(3,\)"
    ):
        jax.eval_shape(lambda s: DP.replace(mass=jnp.ones(3) * s).check(), 1.0)
    path = jaxdyn.robots.robot_path("double_pendulum")
    ball = (
        '<mujoco model="ball"><worldbody><body><freejoint/><geom type="sphere" size="0.1"/></body></worldbody></mujoco>'
    )
    seen = []

    def load_inside(s):
        models = jaxdyn.load_urdf(path), jaxdyn.load_mjcf(ball)
        seen.extend(isinstance(m.mass, jax.core.Tracer) for m in models)
        return jaxdyn.aba(models[0], q * s, z, z)

    assert jax.eval_shape(load_inside, 1.0).shape == (2,)
    assert seen == [False, False]  # the loaded models are concrete, their values checked


def test_more_quickstart_slips_name_the_fix():
    """Arguments in the wrong order, a model where a path or a name is expected, a file where a
    name is expected, float64 asked for without JAX's 64-bit mode, a list for q."""
    key = jax.random.PRNGKey(0)
    with pytest.raises(
        TypeError, match=r"random_configuration: the first argument must be a jaxdyn.Model, got an array"
    ):
        jaxdyn.random_configuration(key, DP)
    with pytest.raises(
        ValueError,
        match=r"rollout: dt must be positive and finite, got .* arguments in the wrong order\? the call is "
        r"rollout\(model, q0, qd0, controls_or_policy, dt\)",
    ):
        sim.rollout(DP, Q0, QD0, 1e-3, jnp.zeros((5, 2)))
    with pytest.raises(
        TypeError, match=r"load_urdf: the source must be a path .* got a jaxdyn.Model, which is already loaded"
    ):
        jaxdyn.load_urdf(DP)
    with pytest.raises(
        TypeError, match=r"load_mjcf: the source must be a path .* got a jaxdyn.Model, which is already loaded"
    ):
        jaxdyn.load_mjcf(DP)
    with pytest.raises(
        TypeError, match=r"load_robot: name must be a robot's name .* got a jaxdyn.Model, which is already"
    ):
        jaxdyn.load_robot(DP)
    path = jaxdyn.robots.robot_path("double_pendulum")
    with pytest.raises(
        KeyError, match=r"load_robot takes a robot's name, not a file: .*double_pendulum.urdf'; .*load_urdf"
    ):
        jaxdyn.load_robot(path)
    with pytest.raises(
        jaxdyn.URDFError, match=r"URDF file not found: 'panda' \(a robot's name\? .*load_robot\('panda'\)"
    ):
        jaxdyn.load_urdf("panda")
    with open(path, "rb") as fh:
        assert jaxdyn.load_urdf(fh.read()).nq == 2  # the file's bytes are its text
    with jax.enable_x64(False):
        with pytest.raises(
            ValueError,
            match=r"dtype float64 needs JAX's 64-bit mode, which is off, so the model would be float32: .*jax_enable_x64",
        ):
            jaxdyn.load_robot("double_pendulum", dtype=jnp.float64)
        with pytest.raises(ValueError, match=r"dtype float64 needs JAX's 64-bit mode"):
            DP.astype(jnp.float32).astype(jnp.float64)
    with pytest.raises(
        ValueError, match=r"dtype must be a floating dtype such as jnp.float32 or jnp.float64, got int32"
    ):
        DP.astype(jnp.int32)
    np.testing.assert_allclose(
        jaxdyn.forward_kinematics(DP, [0.1, 0.2]).p, jaxdyn.forward_kinematics(DP, jnp.array([0.1, 0.2])).p
    )


@pytest.mark.parametrize(
    "fn",
    ["kinetic_energy", "bias_forces", "body_velocities", "aba_derivatives", "rnea_derivatives", "lagrange_dynamics"],
)
def test_lists_are_arrays_everywhere(fn):
    """A state written as Python lists computes as the same arrays (eager, no compile)."""
    import inspect

    f = getattr(jaxdyn, fn)
    n = sum(p.default is inspect.Parameter.empty for p in inspect.signature(f).parameters.values()) - 1
    state = [[0.1, 0.2], [0.3, -0.1], [0.5, 0.4]][:n]
    as_lists = jax.tree_util.tree_leaves(f(DP, *state))
    as_arrays = jax.tree_util.tree_leaves(f(DP, *map(jnp.array, state)))
    for a, b in zip(as_lists, as_arrays):
        np.testing.assert_allclose(a, b, rtol=1e-12)


def test_rollout_under_jit_names_a_traced_steps():
    """``steps`` sets the loop's length: traced by ``jit`` it is named with the static argument
    that works (traced only, no compile)."""
    u = jnp.zeros((5, 2))
    with pytest.raises(
        TypeError, match=r"rollout: steps must be a Python int, .* jax.jit\(sim.rollout, static_argnames=\('steps',\)\)"
    ):
        jax.eval_shape(jax.jit(sim.rollout), DP, Q0, QD0, u, 1e-3, 5)
    traj = jax.jit(sim.rollout, static_argnames=("steps",)).eval_shape(DP, Q0, QD0, u, 1e-3, 5)
    assert traj.q.shape == (6, 2)
    assert float(sim.energy(DP, [0.5, 0.0], [0.0, 0.0])) == pytest.approx(float(sim.energy(DP, Q0, QD0)))
