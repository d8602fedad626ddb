"""Bad input gets a clear error naming the element or argument at fault."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import crba, rnea

import jaxdyn
from jaxdyn import URDFError, load_urdf

LINK = '<link name="{n}"><inertial><mass value="{m}"/><inertia ixx="{i}" iyy="{i}" izz="{i}" ixy="0" ixz="0" iyz="0"/></inertial></link>'


def urdf(links, joints):
    return "<robot name='t'>" + "".join(links) + "".join(joints) + "</robot>"


def link(n, m=1.0, i=0.1):
    return LINK.format(n=n, m=m, i=i)


def joint(n, p, c, t="revolute", extra=""):
    return f'<joint name="{n}" type="{t}"><parent link="{p}"/><child link="{c}"/><axis xyz="0 0 1"/>{extra}</joint>'


def test_floating_joint_from_a_world_link_is_a_floating_base():
    """A 'floating' joint from the root link to its only child (Pinocchio loads it as a free
    flyer): the child is a floating base, the same model as the child's tree loaded with
    floating_base=True (the root link stays with the world and keeps its frame), the free joint
    named as in the file; with floating_base=True as well, the joint is three slides and a ball
    below the free root."""
    tree = [link("b"), link("c")], [joint("j1", "b", "c")]
    world = urdf([link("world", m=2.0), *tree[0]], [joint("free", "world", "b", "floating"), *tree[1]])
    m = load_urdf(world)
    ref = load_urdf(urdf(*tree), floating_base=True)
    assert m.floating_base and m.nv == ref.nv == 7 and m.joint_names == ("free", "j1")
    assert m.topology.frame_bodies[m.frame_index("world")] == -1
    q = jaxdyn.random_configuration(ref, jax.random.PRNGKey(0))
    qd = jnp.arange(1.0, 8.0) / 10
    assert jnp.array_equal(crba(m, q), crba(ref, q))
    assert jnp.array_equal(rnea(m, q, qd, qd), rnea(ref, q, qd, qd))
    both = load_urdf(world, floating_base=True)  # the world link floats too: the joint is three slides and a ball
    assert both.joint_names == ("root_joint", "free/x", "free/y", "free/z", "free", "j1") and both.nv == 13


def test_floating_joint_below_the_root_is_three_slides_and_a_ball():
    """Any other 'floating' joint (here with an <origin>, under a fixed root): joints 'j/x', 'j/y',
    'j/z' and a ball 'j' (q = the position in the joint frame and a quaternion), and the mass
    matrix and gravity torques of one body on it in closed form, with ``R`` the ball's rotation,
    ``c`` the centre of mass and ``I_c`` the inertia about it in the body frame:
    ``M = [[m 1, -m R [c]x], [m [c]x R^T, I_c - m [c]x^2]]``, ``tau_g = -[m g; c x m R^T g]``."""
    body = (
        '<link name="b"><inertial><origin xyz="0.1 0.05 0.02"/><mass value="3"/><inertia ixx="0.2" '
        'iyy="0.3" izz="0.4" ixy="0.01" ixz="0.02" iyz="0.005"/></inertial></link>'
    )
    origin = '<origin xyz="0.1 0.2 0.3" rpy="0.3 0.2 0.1"/>'
    m = load_urdf(urdf([link("a"), body], [joint("j", "a", "b", "floating", extra=origin)]), dtype=jnp.float64)
    assert m.joint_names == ("j/x", "j/y", "j/z", "j") and (m.nq, m.nv) == (7, 6)
    assert m.joint_types == ("prismatic",) * 3 + ("spherical",)
    q = jaxdyn.random_configuration(m, jax.random.PRNGKey(2))
    R = np.asarray(jaxdyn.spatial.quat_to_rotation(q[3:7]))
    c, mass = np.array([0.1, 0.05, 0.02]), 3.0
    Ic = np.array([[0.2, 0.01, 0.02], [0.01, 0.3, 0.005], [0.02, 0.005, 0.4]])
    C = np.array([[0, -c[2], c[1]], [c[2], 0, -c[0]], [-c[1], c[0], 0]])
    M = np.block([[mass * np.eye(3), -mass * R @ C], [mass * C @ R.T, Ic - mass * C @ C]])
    np.testing.assert_allclose(crba(m, q), M, rtol=0, atol=1e-14)
    Rj = np.asarray(jaxdyn.spatial.quat_to_rotation(jnp.asarray(_rpy_quat(0.3, 0.2, 0.1))))
    g = Rj.T @ np.array([0, 0, -9.81])  # gravity in the joint frame
    tau_g = -np.concatenate([mass * g, np.cross(c, mass * R.T @ g)])
    np.testing.assert_allclose(rnea(m, q, jnp.zeros(6), jnp.zeros(6)), tau_g, rtol=0, atol=1e-13)


def test_planar_joint_is_two_slides_and_a_hinge():
    """A 'planar' joint (axis z, a tilted <origin>): the joints 'j/x', 'j/y', 'j/theta' (q = x, y,
    theta in the joint frame), and the mass matrix of one body on it in closed form: with
    ``r = R_z(theta) c`` its centre of mass from the joint axis, ``M = m [[1, 0, -r_y], [0, 1,
    r_x], [-r_y, r_x, |r|^2]] + diag(0, 0, I_zz)``; the gravity torques are ``-m g`` resolved in
    the plane and its moment ``r x m g`` about the axis."""
    m_, c, Izz = 3.0, np.array([0.1, 0.05, 0.02]), 0.4
    body = (
        '<link name="b"><inertial><origin xyz="0.1 0.05 0.02"/><mass value="3"/><inertia ixx="0.2" '
        'iyy="0.3" izz="0.4" ixy="0.01" ixz="0.02" iyz="0.005"/></inertial></link>'
    )
    origin = '<origin xyz="0.1 0.2 0.3" rpy="0.3 0.2 0.1"/>'
    m = load_urdf(urdf([link("a"), body], [joint("j", "a", "b", "planar", extra=origin)]), dtype=jnp.float64)
    assert m.joint_names == ("j/x", "j/y", "j/theta") and m.nq == m.nv == 3
    x, y, th = 0.3, -0.2, 0.7
    q = jnp.array([x, y, th])
    r = np.array([[np.cos(th), -np.sin(th)], [np.sin(th), np.cos(th)]]) @ c[:2]
    M = m_ * np.array([[1, 0, -r[1]], [0, 1, r[0]], [-r[1], r[0], r @ r]]) + np.diag([0, 0, Izz])
    np.testing.assert_allclose(crba(m, q), M, rtol=0, atol=1e-14)
    Rj = np.asarray(jaxdyn.spatial.quat_to_rotation(jnp.asarray(_rpy_quat(0.3, 0.2, 0.1))))
    g = Rj.T @ np.array([0, 0, -9.81])  # gravity in the joint frame
    tau_g = -m_ * np.array([g[0], g[1], r[0] * g[1] - r[1] * g[0]])
    np.testing.assert_allclose(rnea(m, q, jnp.zeros(3), jnp.zeros(3)), tau_g, rtol=0, atol=1e-13)


def _rpy_quat(r, p, y):
    """The quaternion ``[w, x, y, z]`` of URDF's ``rpy`` (``R = Rz(y) Ry(p) Rx(r)``)."""
    cr, sr, cp, sp, cy, sy = (f(a / 2) for a in (r, p, y) for f in (np.cos, np.sin))
    return [
        cr * cp * cy + sr * sp * sy,
        sr * cp * cy - cr * sp * sy,
        cr * sp * cy + sr * cp * sy,
        cr * cp * sy - sr * sp * cy,
    ]


def test_valid_minimal():
    m = load_urdf(urdf([link("a"), link("b")], [joint("j", "a", "b")]))
    assert m.nv == 1 and m.joint_names == ("j",)


@pytest.mark.parametrize(
    "xml, match",
    [
        ("<robot><link name='a'>", "malformed"),
        (urdf([link("a"), link("b")], [joint("j", "a", "nope")]), "child link 'nope'"),
        (
            urdf([link("a"), link("b")], ['<joint name="j" type="revolute"><child link="b"/></joint>']),
            "joint 'j' has no <parent",
        ),
        (
            urdf([link("a"), link("b"), link("c")], [joint("j1", "a", "b"), joint("j2", "c", "b")]),
            "link 'b' is the child of two joints",
        ),
        (
            urdf([link("a"), link("b"), link("c"), link("d")], [joint("j1", "a", "b"), joint("j2", "c", "d")]),
            "2 root links",
        ),
        (urdf([link("a"), link("b"), link("c")], [joint("j1", "b", "c"), joint("j2", "c", "b")]), "cycle"),
        (urdf([link("a"), link("b")], [joint("j", "a", "b", "screw")]), "joint 'j': unknown joint type"),
        (urdf([link("a"), link("b", m=-1)], [joint("j", "a", "b")]), "link 'b'.*mass"),
        (urdf([link("a"), link("b", i=-0.1)], [joint("j", "a", "b")]), "link 'b'.*not positive semi-definite"),
        (
            urdf(
                [
                    link("a"),
                    '<link name="b"><inertial><mass value="1"/><inertia ixx="1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>',
                ],
                [joint("j", "a", "b")],
            ),
            "link 'b'.*triangle",
        ),
        (urdf([link("a"), "<link name='b'/>"], [joint("j", "a", "b")]), "joint 'j' moves link 'b'.*no mass"),
        (urdf([link("a"), link("b")], [joint("j", "a", "b", extra='<mimic joint="x"/>')]), None),
        (urdf([link("a"), link("a")], []), "link 'a' is defined twice"),
        (
            urdf([link("a"), link("b")], [joint("j", "a", "b", extra='<origin xyz="1 nan 0"/>')]),
            "joint 'j' <origin xyz>",
        ),
        ("/no/such/file.urdf", "not found"),
    ],
)
def test_bad_urdf(xml, match):
    if match is None:  # mimic: loads independently by default, rejected on request
        assert load_urdf(xml).nv == 1
        with pytest.raises(URDFError, match="joint 'j' is a mimic joint"):
            load_urdf(xml, mimic="error")
        return
    with pytest.raises(URDFError, match=match):
        load_urdf(xml, inertia="strict")


def test_massless_intermediate_link_is_fine():
    m = load_urdf(urdf([link("a"), "<link name='b'/>", link("c")], [joint("j1", "a", "b"), joint("j2", "b", "c")]))
    assert m.nv == 2


def test_wrong_shapes_name_the_argument():
    m = jaxdyn.load_robot("ur5")
    q = jaxdyn.neutral(m)
    with pytest.raises(ValueError, match="argument 'qd' has shape \\(5,\\)"):
        jaxdyn.rnea(m, q, jnp.zeros(5), jnp.zeros(6))
    with pytest.raises(ValueError, match="argument 'q'"):
        jaxdyn.aba(m, jnp.zeros(7), jnp.zeros(6), jnp.zeros(6))
    with pytest.raises(ValueError, match="argument 'f_ext'"):
        jaxdyn.rnea(m, q, jnp.zeros(6), jnp.zeros(6), jnp.zeros((6, 3)))
    with pytest.raises(KeyError, match="no frame named 'hand'"):
        jaxdyn.frame_jacobian(m, q, "hand")
    with pytest.raises(KeyError, match="unknown robot"):
        jaxdyn.load_robot("atlas")


def test_nan_inputs_detected_by_validator():
    m = jaxdyn.load_robot("ur5")
    q = jaxdyn.neutral(m)
    with pytest.raises(ValueError, match="argument 'qd' contains NaN or inf at index 2"):
        jaxdyn.check_state(m, q, qd=jnp.zeros(6).at[2].set(jnp.nan))
    jaxdyn.check_state(m, q, qd=jnp.zeros(6))
