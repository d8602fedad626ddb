"""Sensors (jaxdyn.sensors) against MuJoCo's sensordata, stored by
tests/reference/generate_mujoco_sensors.py in tests/data/mujoco/sensors/ (MuJoCo is not needed
here): every supported type on a free-floating tree (sensors.xml), dm_control's humanoid (IMU,
subtree velocity, force, torque and touch sensors, with and without contacts), Playground's Go1
(IMU and frame sensors beside contact sensors jaxdyn leaves out) and touch zones of every shape
(touch.xml); then batching, gradients, noise and the refusals."""

import functools
import os
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import actuator_points

import jaxdyn
from jaxdyn import sensors
from jaxdyn.io import mjcf
from jaxdyn.io.mjcf.sensors import SUPPORTED

HERE = os.path.join(os.path.dirname(__file__), "data", "mujoco", "sensors")
REF = np.load(os.path.join(HERE, "reference.npz"))
PATHS = {
    "sensors": os.path.join(HERE, "sensors.xml"),
    "humanoid": os.path.join(os.path.dirname(__file__), "data", "mjcf", "dm_control", "humanoid.xml"),
    "go1": os.path.join(HERE, "go1", "scene_mjx_feetonly_flat_terrain.xml"),
    "touch": os.path.join(HERE, "touch.xml"),
}


def _load(scene, dtype=jnp.float64):
    path = PATHS[scene]
    with warnings.catch_warnings():
        # the loader's notes on what it does not model, and the sensors left out
        warnings.simplefilter("ignore", UserWarning)
        model = jaxdyn.load_mjcf(path, dtype=dtype)
        return model, sensors.from_mjcf(path, model, unsupported="warn")


_FK = jax.jit(jaxdyn.forward_kinematics)


def _inputs(model, name, k):
    """jaxdyn's state, f_ext (from MuJoCo's cfrc_ext) and contacts for stored state ``k``."""
    r = lambda key: REF[f"{name}_{key}"][k]  # noqa: E731
    q = jnp.asarray(r("qpos"))
    qd = mjcf.velocity_from_mujoco(model, q, r("qvel"))
    qdd = mjcf.acceleration_from_mujoco(model, q, r("qvel"), r("qacc"))
    f_ext = np.zeros((model.nb, 6))
    contacts = None
    if f"{name}_contact_pos" in REF:
        poses = _FK(model, q)
        for b, body in enumerate(REF[f"{name}_body_names"]):
            j = model.topology.frame_bodies[model.frame_index(str(body))]
            if b == 0 or j < 0:
                continue
            n, f = r("cfrc_ext")[b, :3], r("cfrc_ext")[b, 3:]  # about the subtree's centre of mass, world axes
            R, o = np.asarray(poses.R[j], np.float64), np.asarray(poses.p[j], np.float64)
            f_ext[j, :3] += R.T @ (n + np.cross(r("com")[b] - o, f))
            f_ext[j, 3:] += R.T @ f
        # no height field or SDF in these scenes: MuJoCo's geom ids index model.geoms
        assert tuple(REF[f"{name}_geom_names"]) == model.geoms.names
        contacts = sensors.Contacts(
            *(jnp.asarray(r(f"contact_{x}")) for x in ("pos", "normal", "force", "geom1", "geom2"))
        )
    return q, qd, qdd, jnp.asarray(f_ext), contacts


def _batch(model, name):
    xs = [_inputs(model, name, k) for k in range(len(REF[f"{name}_qpos"]))]
    return jax.tree.map(lambda *a: jnp.stack(a), *xs)


def _reference(sens, name):
    """MuJoCo's sensordata rearranged into jaxdyn's order (sensors left out are skipped)."""
    names = list(REF[f"{name}_sensor_names"])
    adr, dim = REF[f"{name}_sensor_adr"], REF[f"{name}_sensor_dim"]
    cols = [np.arange(adr[names.index(n)], adr[names.index(n)] + dim[names.index(n)]) for n in sens.names]
    return REF[f"{name}_sensordata"][:, np.concatenate(cols)]


def _compare(sens, y, ref, rtol):
    for n in sens.names:
        sl = sens.slice(n)
        scale = max(1.0, float(np.abs(ref[:, sl]).max()))
        np.testing.assert_allclose(np.asarray(y[:, sl]), ref[:, sl], rtol=rtol, atol=rtol * scale, err_msg=n)


@pytest.mark.parametrize("scene", ["sensors", "humanoid", "go1", "touch"])
def test_sensordata_equals_mujocos(scene):
    model, sens = _load(scene)
    # the humanoid's states without and with contacts in one batch (no contact: zero forces)
    names = ["humanoid", "humanoid_contact"] if scene == "humanoid" else [scene]
    batches = [_batch(model, name) for name in names]
    if scene == "humanoid":
        c = batches[1][4]
        batches[0] = (
            *batches[0][:4],
            jax.tree.map(lambda x: jnp.zeros((len(batches[0][0]),) + x.shape[1:], x.dtype), c),
        )
    q, qd, qdd, f_ext, contacts = jax.tree.map(lambda *a: jnp.concatenate(a), *batches)
    f = jax.jit(jax.vmap(lambda q, qd, qdd, f_ext, c: sensors.read(model, sens, q, qd, qdd, f_ext=f_ext, contacts=c)))
    y = f(q, qd, qdd, f_ext, contacts)
    ref = np.concatenate([_reference(sens, name) for name in names])
    assert y.shape == ref.shape
    _compare(sens, y, ref, 1e-10)


def test_sensordata_in_float32():
    model, sens = _load("humanoid", jnp.float32)
    assert sens.obj_R.dtype == jnp.float32
    q, qd, qdd, f_ext, contacts = _batch(model.astype(jnp.float64), "humanoid_contact")
    f32 = lambda x: x.astype(jnp.float32)  # noqa: E731
    f = jax.jit(jax.vmap(lambda q, qd, qdd, f_ext, c: sensors.read(model, sens, q, qd, qdd, f_ext=f_ext, contacts=c)))
    y = f(f32(q), f32(qd), f32(qdd), f32(f_ext), contacts)
    assert y.dtype == jnp.float32
    _compare(sens, y, _reference(sens, "humanoid_contact"), 1e-4)


def test_scene_coverage():
    """The stored states exercise what they are meant to: cutoffs that clamp, touch sensors that
    read contacts through the ray test, framequat with a negative scalar part."""
    _model, sens = _load("sensors")
    ref = _reference(sens, "sensors")
    # touch: the touch scene below; the actuator sensors: on the actuator test arm (last test)
    assert set(sens.types) == set(SUPPORTED) - {"touch", "actuatorfrc", "jointactuatorfrc"}
    for n, c in (("knee_vel", 0.2), ("foot_accel", 0.5), ("knee_force", 0.5)):
        assert np.any(np.isclose(np.abs(ref[:, sens.slice(n)]), c)), n
    assert np.any(ref[:, sens.slice("imu_quat")][:, 0] < 0)
    _model, touch = _load("touch")
    tref = _reference(touch, "touch")
    assert np.all((tref[:, :6] > 0).sum(0) >= 2)  # every zone touched, and not always
    assert np.all((tref[:, :6] == 0).sum(0) >= 1)
    _model, humanoid = _load("humanoid")
    href = _reference(humanoid, "humanoid_contact")
    touched = [
        n for n, t in zip(humanoid.names, humanoid.types) if t == "touch" and np.any(href[:, humanoid.slice(n)] > 0)
    ]
    assert len(touched) >= 8


# a small floating tree with one sensor of most types, for the properties that do not need MuJoCo
SMALL = """<mujoco><option gravity="0 0 -9.81"/><worldbody>
  <geom name="floor" type="plane" size="2 2 0.1"/>
  <body name="a" pos="0 0 0.5"><freejoint/><geom name="g" type="box" size="0.1 0.05 0.04"/>
    <site name="s" pos="0.02 0.01 0" euler="10 20 30"/>
    <site name="z" type="box" pos="0 0 -0.04" size="0.1 0.05 0.02"/>
    <body name="b" pos="0 0 -0.2"><joint name="h" axis="0 1 0"/><geom size="0.05" pos="0 0 -0.05"/>
      <site name="bs" pos="0.01 0 -0.1"/>
      <body name="c" pos="0.1 0 0"><joint name="ball" type="ball"/><geom size="0.03"/></body>
    </body>
  </body></worldbody><sensor>
  <gyro name="gyro" site="s" cutoff="0.5"/><accelerometer name="acc" site="s"/><velocimeter name="vel" site="s"/>
  <magnetometer name="mag" site="s"/><framepos name="pos" objtype="site" objname="bs" reftype="site" refname="s"/>
  <framequat name="quat" objtype="body" objname="c" reftype="xbody" refname="a"/>
  <framezaxis name="zaxis" objtype="site" objname="bs"/>
  <framelinvel name="linvel" objtype="site" objname="bs" reftype="site" refname="s"/>
  <frameangvel name="angvel" objtype="xbody" objname="c"/>
  <framelinacc name="linacc" objtype="geom" objname="g"/><frameangacc name="angacc" objtype="body" objname="b"/>
  <jointpos name="hpos" joint="h"/><jointvel name="hvel" joint="h"/>
  <ballquat name="bquat" joint="ball"/><ballangvel name="bvel" joint="ball"/>
  <force name="force" site="bs" cutoff="3"/><torque name="torque" site="bs"/>
  <subtreecom name="com" body="a"/><subtreelinvel name="comvel" body="b"/><subtreeangmom name="angmom" body="a"/>
  <touch name="touch" site="z"/>
</sensor></mujoco>"""


@functools.cache
def _small():
    """The small scene at one state, and a compiled read of it, vmapped over states and keys,
    that takes the sensors (so that their noise can change)."""
    model = jaxdyn.load_mjcf(SMALL)
    sens = sensors.from_mjcf(SMALL, model)
    rng = np.random.default_rng(3)
    q = np.asarray(jaxdyn.neutral(model)) + rng.normal(0, 0.4, model.nq)
    q[3:7] /= np.linalg.norm(q[3:7])
    q[8:12] /= np.linalg.norm(q[8:12])
    qd, qdd = rng.normal(0, 1.0, model.nv), rng.normal(0, 1.0, model.nv)
    # two contacts of the box (geom 1) on the floor (geom 0): in the touch zone, at the middle of
    # the box's bottom face, and far beside it
    w, x, y, z = q[3:7]
    R = np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )
    contacts = sensors.Contacts(
        jnp.array([q[:3] + R @ [0.0, 0.0, -0.04], q[:3] + [0.5, 0.5, 0.0]]),
        jnp.array([[0.0, 0.0, 1.0], [0.0, 0.0, 1.0]]),
        jnp.array([5.0, 2.0]),
        jnp.array([0, 0]),
        jnp.array([1, 1]),
    )
    q = jnp.asarray(q)
    read = lambda sens, q, key: sensors.read(model, sens, q, qd, qdd, contacts=contacts, key=key)  # noqa: E731
    return model, sens, q, qd, qdd, contacts, jax.jit(jax.vmap(read, (None, 0, 0)))


def _with_noise(sens, noise):
    return sens.__class__(**{**vars(sens), "noise": jnp.asarray(noise, sens.noise.dtype)})


def _states_and_keys(model, q, n=4000):
    q2 = q.at[7].add(0.3).at[:3].add(0.1)
    return jnp.tile(jnp.stack([q, q2]), (n // 2, 1)), jax.random.split(jax.random.key(0), n)


def test_vmap_and_slices():
    model, sens, q, _qd, _qdd, _c, batch = _small()
    clean = _with_noise(sens, np.zeros(len(sens.names)))
    qs, keys = _states_and_keys(model, q)
    batched = batch(clean, qs, keys)
    np.testing.assert_array_equal(batched[0], batched[2])  # zero noise: the key does not matter
    assert not np.allclose(batched[0], batched[1])
    assert batched.shape == (len(qs), sens.nsensordata) and sens.nsensordata == 59
    parts = sens.as_dict(batched)
    assert list(parts) == list(sens.names)
    np.testing.assert_array_equal(parts["acc"], batched[:, sens.slice("acc")])
    assert sens.slice("hpos") == slice(sens.adr[11], sens.adr[11] + 1)
    with pytest.raises(KeyError, match="no sensor named 'nope'"):
        sens.slice("nope")


def test_gradients_are_finite():
    model, sens, q, qd, qdd, contacts, _batch = _small()
    w = jnp.linspace(-1.0, 1.0, sens.nsensordata)

    def loss(q, qd, qdd, force):
        return w @ sensors.read(model, sens, q, qd, qdd, contacts=contacts._replace(force=force))

    grads = jax.jit(jax.grad(loss, argnums=(0, 1, 2, 3)))(q, jnp.asarray(qd), jnp.asarray(qdd), contacts.force)
    for g in grads:
        assert np.all(np.isfinite(np.asarray(g))) and float(jnp.abs(g).max()) > 0
    assert float(grads[3][1]) == 0.0  # only the first contact is in the touch zone


def test_noise_and_cutoff():
    model, sens, q, _qd, _qdd, _c, batch = _small()
    noisy_sens = _with_noise(sens, np.where(np.arange(len(sens.names)) % 2 == 0, 0.05, 0.0))
    qs, keys = _states_and_keys(model, q)
    clean = batch(_with_noise(sens, np.zeros(len(sens.names))), qs, keys)[0]
    noisy = batch(noisy_sens, qs, keys)[::2]  # the samples at q
    for i, n in enumerate(sens.names):
        y = noisy[:, sens.slice(n)]
        d = y - clean[sens.slice(n)]
        t, noise, cutoff = sens.datatypes[i], float(noisy_sens.noise[i]), float(sens.cutoff[i])
        if noise == 0:
            np.testing.assert_allclose(d, 0.0, atol=1e-12, err_msg=n)
        elif t == "real" and cutoff == 0:
            assert abs(float(jnp.std(d)) - noise) < 0.005, n
            assert abs(float(jnp.mean(d))) < 0.005, n
        elif t == "quaternion":
            np.testing.assert_allclose(jnp.linalg.norm(y, axis=1), 1.0, atol=1e-12)
            angle = 2 * jnp.arccos(jnp.clip(jnp.abs(y @ clean[sens.slice(n)]), 0.0, 1.0))
            assert abs(float(jnp.sqrt(jnp.mean(angle**2))) - noise) < 0.005, n
        elif t == "axis":
            np.testing.assert_allclose(jnp.linalg.norm(y, axis=1), jnp.linalg.norm(clean[sens.slice(n)]), atol=1e-12)
        if cutoff > 0:
            assert float(jnp.abs(y).max()) <= cutoff, n
    assert float(clean[sens.slice("touch")][0]) == 5.0  # the contact under the zone, not the one beside it
    assert np.all(np.asarray(noisy[:, sens.slice("touch")]) >= 0.0)
    assert float(jnp.abs(clean[sens.slice("force")]).max()) == 3.0  # the cutoff clamps


def _xml(body="", sensor="", extra=""):
    return f"""<mujoco>{extra}<worldbody>
      <body name="a"><freejoint/><geom name="g" size="0.1"/><site name="s"/>
        <body name="b" pos="0 0 -0.3"><joint name="h"/><geom size="0.1"/><site name="bs"/>
          <body name="welded" pos="0 0 -0.2"><geom size="0.05"/><site name="ws"/></body>
          <body name="c" pos="0.2 0 0"><joint name="ball" type="ball"/><geom size="0.05"/></body>
        </body>{body}
      </body></worldbody><sensor>{sensor}</sensor></mujoco>"""


@pytest.mark.parametrize(
    "sensor, body, extra, match",
    [
        (
            '<rangefinder name="r" site="s"/>',
            "",
            "",
            r"<rangefinder name='r'>: <rangefinder> sensors are not supported",
        ),
        ('<gyro name="x" site="nope"/>', "", "", r"<gyro name='x'>: unknown site 'nope'"),
        ('<gyro name="x"/>', "", "", r"<gyro name='x'>: the 'site' attribute is required"),
        ('<jointpos name="x" joint="ball"/>', "", "", r"<jointpos name='x'>: joint 'ball' is a ball joint"),
        ('<ballquat name="x" joint="h"/>', "", "", r"<ballquat name='x'>: joint 'h' is a hinge joint"),
        ('<force name="x" site="ws"/>', "", "", r"<force name='x'>: body 'welded' has no joint of its own"),
        ('<subtreecom name="x" body="world"/>', "", "", r"<subtreecom name='x'>: the world has no joint"),
        ('<framepos name="x" objtype="camera" objname="cam"/>', "", "", r"objtype='camera' is not supported"),
        ('<framepos name="x" objtype="geom" objname="m"/>', '<geom name="m" type="mesh" mesh="m"/>', "", "is a mesh"),
        (
            '<framequat name="x" objtype="body" objname="i"/>',
            '<body name="i"><joint/><inertial pos="0 0 0" mass="1" fullinertia="1 2 3 0.1 0 0"/></body>',
            "",
            r"<framequat name='x'>: the orientation of the inertial frame of body 'i' is not reproduced: .*fullinertia",
        ),
        (
            '<framexaxis name="x" objtype="body" objname="two"/>',
            '<body name="two"><joint/><geom size="0.1"/><geom size="0.1" pos="0.1 0 0"/></body>',
            "",
            r"inertial frame of body 'two' is not reproduced: its inertia comes from several geoms",
        ),
        (
            '<framepos name="x" objtype="site" objname="s" reftype="site"/>',
            "",
            "",
            "reftype and refname must be given together",
        ),
        ('<gyro name="x" site="s" delay="0.01"/>', "", "", r"<gyro name='x'>: delay is not supported"),
        ('<gyro name="x" site="s"/><gyro name="x" site="s"/>', "", "", r"<gyro name='x'>: duplicate sensor name"),
        ('<gyro name="x" site="s" noise="-1"/>', "", "", "must not be negative"),
    ],
)
def test_refusals_name_the_sensor(sensor, body, extra, match):
    xml = _xml(body, sensor, extra)
    if "mesh" in body:
        xml = xml.replace("<mujoco>", '<mujoco><asset><mesh name="m" vertex="0 0 0 1 0 0 0 1 0 0 0 1"/></asset>')
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        model = jaxdyn.load_mjcf(xml)
    with pytest.raises(jaxdyn.MJCFError, match=match):
        sensors.from_mjcf(xml, model)


def test_unsupported_sensors_warn_and_go1_scene():
    model, _ = _load("go1")
    path = PATHS["go1"]
    with pytest.raises(jaxdyn.MJCFError, match=r"<contact name='FR_floor_found'>: <contact> sensors are not supported"):
        sensors.from_mjcf(path, model)
    with pytest.warns(
        UserWarning, match=r"left out .*<contact name='FR_floor_found'>, .*<contact name='RR_floor_found'>"
    ):
        sens = sensors.from_mjcf(path, model, unsupported="warn")
    assert sens.names[:3] == ("gyro", "local_linvel", "accelerometer") and len(sens.names) == 17


def test_read_needs_the_state_its_sensors_need():
    model, sens = _load("sensors")
    q = jnp.asarray(REF["sensors_qpos"][0])
    with pytest.raises(ValueError, match=r"gyro 'gyro'.* need qd"):
        sensors.read(model, sens, q)
    with pytest.raises(ValueError, match=r"accelerometer 'accel'.* need qdd"):
        sensors.read(model, sens, q, jnp.zeros(model.nv))
    pos = sensors.from_mjcf(
        _xml(sensor='<framepos name="p" objtype="site" objname="bs"/>'), m := jaxdyn.load_mjcf(_xml())
    )
    assert jax.jit(lambda q: sensors.read(m, pos, q))(jaxdyn.neutral(m)).shape == (3,)  # q is all it needs


def test_actuator_sensors_equal_mujocos_actuator_force_and_qfrc_actuator():
    """``actuatorfrc`` of every actuator and ``jointactuatorfrc`` of every joint of the actuator
    test arm (every kind of actuator, activations included; tests/data/mujoco/actuators) equal
    MuJoCo's ``actuator_force`` and ``qfrc_actuator`` at its stored random states and controls;
    they need ``ctrl`` and name the missing argument."""
    here = os.path.join(os.path.dirname(__file__), "data", "mujoco", "actuators")
    xml = open(os.path.join(here, "arm.xml")).read()
    model = jaxdyn.load_mjcf(xml)
    joints = [n for n in model.joint_names if model.joint_v_slice(n).stop - model.joint_v_slice(n).start == 1]
    lines = [f'<actuatorfrc name="F{i}" actuator="{n}"/>' for i, n in enumerate(model.actuators.names)]
    lines += [f'<jointactuatorfrc name="J{i}" joint="{n}"/>' for i, n in enumerate(joints)]
    xml = xml.replace("</mujoco>", "<sensor>" + "".join(lines) + "</sensor></mujoco>")
    model = jaxdyn.load_mjcf(xml)
    sens = sensors.from_mjcf(xml, model)
    ref = np.load(os.path.join(here, "arm.npz"))
    read = jax.jit(lambda q, qd, u, a: sensors.read(model, sens, q, qd, ctrl=u, act=a))
    nu = model.nu
    for qpos, qvel, ctrl, act, force, qfrc in actuator_points(ref):
        data = np.asarray(read(qpos, qvel, ctrl, act))
        np.testing.assert_allclose(data[:nu], force, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(data[nu:], qfrc, rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="actuatorfrc 'F0'.* need ctrl"):
        sensors.read(model, sens, ref["points_qpos"][0], ref["points_qvel"][0])
    bad = xml.replace('actuator="' + model.actuators.names[0] + '"', 'actuator="nosuch"', 1)
    with pytest.raises(jaxdyn.LoadError, match="unknown actuator 'nosuch'"):
        sensors.from_mjcf(bad, model)
