"""Contact margins (MuJoCo's geom and ``<pair>`` ``margin``; jaxdyn.contact): a contact acts
from the distance that is the sum of its geoms' margins (an explicit pair's own instead), so
bodies rest that far apart, as in MuJoCo 4 (tests/reference/generate_mujoco_margin.py); the
margin enters the implicit step's end-of-step penetration and the broad phase's reach; it is a
differentiable leaf of the model; bad margins are refused by name.
"""

import dataclasses
import os
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxdyn
from jaxdyn import contact as C
from jaxdyn import geometry, sim

DATA = os.path.join(os.path.dirname(__file__), "data")
R_BALL, M_BALL, G = 0.05, 1.0, 9.81


def test_balls_rest_at_their_margins_as_in_mujoco():
    """Four 1 kg balls: on a floor of margin 1 cm with their own margins of 2 cm, none and
    -1.5 cm (contact margins 3, 1 and -0.5 cm), and on a box on the world through an explicit
    pair of margin 1.5 cm (instead of the geoms' 5 cm and 4 mm). A stiff ground (``k = 1e8``),
    0.4 s at 1 ms from MuJoCo's start (MuJoCo's end: 1 s): every ball rests at its radius plus its margin less the
    static depth ``(m g / k)^(2/3)`` (1e-9 m) and at MuJoCo's height to 2e-5 m (the two laws'
    static depths, 21 and 4.4 um, apart), where margins of 1-3 cm separate the cases;
    ``ContactPoints.margin`` and ``PairContacts.margin`` are MuJoCo's ``includemargin``."""
    ref = np.load(os.path.join(DATA, "mujoco", "contact", "margin.npz"))
    with pytest.warns(UserWarning, match="solref of <pair"):  # MuJoCo's stiff pair; jaxdyn's law is ContactParams
        model = jaxdyn.load_mjcf(str(ref["xml"]))
    ct = C.Contact(C.Ground.from_model(model), C.ContactParams(stiffness=1e8))
    q0 = jnp.asarray(ref["qpos0"])
    tr = jax.jit(lambda q0: sim.rollout(model, q0, jnp.zeros(model.nv), jnp.zeros((400, model.nv)), 1e-3, contact=ct))(
        q0
    )
    assert int(tr.nonfinite_step) == -1
    z, z_ref = np.asarray(tr.q[-1, 2::7]), ref["qpos"][2::7]
    np.testing.assert_allclose(z, z_ref, rtol=0, atol=2e-5)
    rest = (M_BALL * G / 1e8) ** (2 / 3)
    np.testing.assert_allclose(z, [R_BALL + m - rest for m in (0.03, 0.01, -0.005)] + [0.4 + 0.015 - rest], atol=1e-9)

    cp, pc = jax.jit(lambda q, v: (C.contact_points(model, q, v, ct.ground), C.pair_contacts(model, q, v)))(
        tr.q[-1], tr.qd[-1]
    )
    names = model.geoms.names
    got = {names[g]: float(m) for g, m, d in zip(cp.geom, cp.margin, cp.depth) if d > 0}
    for g1, g2, m, d in zip(pc.geom1, pc.geom2, pc.margin, pc.depth):
        if d > 0:
            assert "table" in (names[g1], names[g2])
            got[names[g1] if names[g2] == "table" else names[g2]] = float(m)
    assert set(got) == {"own", "none", "negative", "paired"}
    np.testing.assert_allclose(
        [got[n] for n in ("own", "none", "negative", "paired")], ref["includemargin"], atol=1e-15
    )


def _two_spheres(margin=(0.0, 0.0)):
    """Two unit-mass spheres of radius 0.1 on free joints (the second on a slide along x), no
    gravity."""
    xml = f"""<mujoco><option gravity="0 0 0"/><worldbody>
<body name="a"><joint name="ax" type="slide" axis="1 0 0"/><geom name="a" type="sphere" size="0.1" mass="1" margin="{margin[0]}"/></body>
<body name="b" pos="0.25 0 0"><joint name="bx" type="slide" axis="1 0 0"/><geom name="b" type="sphere" size="0.1" mass="1" margin="{margin[1]}"/></body>
</worldbody></mujoco>"""
    return jaxdyn.load_mjcf(xml)


def test_margin_in_the_step_the_broad_phase_and_the_gradient():
    """Two spheres 5 cm apart with margins 2 and 4 cm (contact margin 6 cm): the pair pushes
    them apart with the depth ``margin - distance`` = 1 cm (without margins: no force); the
    implicit step's joint-space force and its lookahead see the same depth (forward mode of
    the joint-space force equals its closed-form derivative); ``pairs_in_reach`` counts the
    pair only with its margin (bounding spheres 5 cm apart); ``max_pairs=1`` gives every
    pair's force; the force's derivative with respect to a geom's margin is ``dF/dd``."""
    q, v = jnp.zeros(2), jnp.array([0.0, -0.3])
    ct = C.Contact(collide_ground=False)
    budget = C.Contact(collide_ground=False, max_pairs=1)

    @jax.jit
    def parts(model):
        pc = C.pair_contacts(model, q, v)
        js = ct.joint_space(model, q, None, 1e-3, lookahead=1e-3)

        def force(m):
            geoms = dataclasses.replace(model.geoms, margin=model.geoms.margin.at[0].set(m))
            return ct.generalized_forces(dataclasses.replace(model, geoms=geoms), q, jnp.zeros(2))[1]

        return dict(
            distance=pc.distance[0],
            depth=pc.depth[0],
            reach=C.pairs_in_reach(model, q).sum(),
            tau=ct.generalized_forces(model, q, v),
            tau_budget=budget.generalized_forces(model, q, v),
            D=js.velocity_derivative(v),
            D_fwd=jax.jacfwd(js.forces)(v),
            fn_end=js.normal_forces(v)[0],
            dF=jax.grad(force)(model.geoms.margin[0]),
        )

    plain = jax.tree_util.tree_map(np.asarray, parts(_two_spheres()))
    assert np.abs(plain["tau"]).max() == 0.0 and int(plain["reach"]) == 0
    o = jax.tree_util.tree_map(np.asarray, parts(_two_spheres((0.02, 0.04))))
    np.testing.assert_allclose(o["distance"], 0.05, rtol=1e-12)
    np.testing.assert_allclose(o["depth"], 0.01, rtol=1e-12)
    assert int(o["reach"]) == 1
    p = ct.params
    fn = float(p.stiffness) * 0.01 ** float(p.exponent) * (1 + float(p.damping) * 0.3)
    np.testing.assert_allclose(o["tau"], [-fn, fn], rtol=1e-12)
    np.testing.assert_allclose(o["tau_budget"], o["tau"], rtol=1e-12)
    np.testing.assert_allclose(o["D"], o["D_fwd"], rtol=1e-12)
    end = 0.01 + 1e-3 * 0.3  # the end-of-step depth: the spheres close at 0.3 m/s
    np.testing.assert_allclose(o["fn_end"], fn * (end / 0.01) ** 1.5, rtol=1e-12)
    np.testing.assert_allclose(o["dF"], 1.5 * float(p.stiffness) * 0.01**0.5, rtol=1e-12)


def test_bad_margins_are_refused_by_name():
    """``make_geoms`` refuses a non-finite margin and a wrong count, naming the entry; an
    explicit pair's margin follows the pair when the pairs are reordered (default 0); MJCF reads a
    pair's margin and ``gap`` without a warning, and still warns about its ``solref``."""
    kw = dict(type=[geometry.SPHERE] * 3, size=np.full((3, 3), 0.1), body=[0, 1, 2])
    with pytest.raises(ValueError, match="margin must be finite, entry 1 is nan"):
        geometry.make_geoms(**kw, margin=[0.0, np.nan, 0.0])
    with pytest.raises(ValueError, match="2 entries in margin for 3 geoms"):
        geometry.make_geoms(**kw, margin=[0.0, 0.1])
    g = geometry.make_geoms(**kw, pairs=[(2, 1), (1, 0)], pair_margin=[0.03, 0.01])
    assert g.pairs == ((0, 1), (1, 2)) and np.allclose(g.pair_margin, [0.01, 0.03])
    assert np.allclose(geometry.make_geoms(**kw, pairs=[(1, 0)]).pair_margin, [0.0])
    with pytest.raises(jaxdyn.LoadError, match="margin"):
        jaxdyn.load_mjcf(
            '<mujoco><worldbody><body><freejoint/><geom type="sphere" size="0.1" margin="x"/></body></worldbody></mujoco>'
        )
    xml = """<mujoco><worldbody><geom name="f" type="plane" size="0 0 1"/>
<body><freejoint/><geom name="b" type="sphere" size="0.1" mass="1"/></body></worldbody>
<contact><pair geom1="f" geom2="b" margin="0.02" gap="0.01" {extra}/></contact></mujoco>"""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m = jaxdyn.load_mjcf(xml.format(extra=""))
    assert np.allclose(m.geoms.pair_margin, [0.02])
    with pytest.warns(UserWarning, match="solref of <pair"):
        jaxdyn.load_mjcf(xml.format(extra='solref="0.01 1"'))
