"""The MJCF loader holds scenes to MuJoCo's schema (:mod:`jaxdyn.io.mjcf.schema`): a misspelt or
misplaced attribute or element, or a keyword outside its set, is refused naming the element, the
name and the closest known one; the table is MuJoCo's own, so every scene MuJoCo's packages ship
passes it."""

import glob
import os
import re
import site
import xml.etree.ElementTree as ET

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxdyn import load_mjcf, load_urdf, sensors
from jaxdyn.io.mjcf import MJCFError
from jaxdyn.io.mjcf.loader import parse_scene
from jaxdyn.io.mjcf.schema import ATTRIBUTES, KEYWORDS, MUJOCO_SCHEMA_VERSION
from jaxdyn.io.urdf import URDFError

HERE = os.path.dirname(__file__)


def scene(body="", top=""):
    return (
        f'<mujoco model="m">{top}<worldbody><body name="b">'
        f'<joint name="j"/><geom name="g" size="0.1"/>{body}</body></worldbody></mujoco>'
    )


def _schema_of_installed_mujoco():
    """MuJoCo's printed schema as {path: attributes}, keyed as ATTRIBUTES is."""
    mujoco = pytest.importorskip("mujoco")
    out, stack = {}, []
    for line in mujoco.mj_printSchema(False, False).splitlines():
        if not line.strip():
            continue
        if not line[:30].strip():
            out["/".join(stack[1:]) or stack[0]] |= set(line.split())
            continue
        m = re.match(r"^( *)(\S+) \((.)\)", line[:30])
        assert m, line
        depth, name = len(m.group(1)) // 3, m.group(2).replace("(world)body", "body")
        del stack[depth:]
        stack.append(name)
        out["/".join(stack[1:]) or name] = set(line[30:].split())
    return mujoco.__version__, out


def test_table_is_the_installed_mujocos_schema():
    version, schema = _schema_of_installed_mujoco()
    ours = {k: set(v) for k, v in ATTRIBUTES.items() if k != "body/frame"}
    missing = {k: sorted(v - ours.get(k, set())) for k, v in schema.items() if v - ours.get(k, set())}
    assert not missing and set(schema) == set(ours), (
        f"MuJoCo {version}'s schema differs from the table (MuJoCo {MUJOCO_SCHEMA_VERSION}): "
        f"missing {missing}, elements only in one: {set(schema) ^ set(ours)}"
    )


def _keyword_scene(tag, attr, value):
    """A small scene with ``<tag attr=value>`` where MuJoCo reads that element."""
    a, body = f'{attr}="{value}"', '<body name="b"><joint name="j"/><geom size="0.1"/></body>'
    top = {
        "compiler": f"<compiler {a}/>",
        "option": f"<option {a}/>",
        "flag": f'<option><flag gravity="{value}"/></option>',
        "mesh": f'<asset><mesh name="m" vertex="0 0 0 1 0 0 0 1 0 0 0 1" {a}/></asset>',
    }
    if tag in top:
        return f"<mujoco>{top[tag]}<worldbody>{body}</worldbody></mujoco>"
    if tag == "body":
        return f'<mujoco><worldbody><body {a}><geom size="0.1"/></body></worldbody></mujoco>'
    if tag in ("joint", "freejoint", "geom", "site"):
        return f'<mujoco><worldbody><body name="b"><geom size="0.1"/><{tag} {a}/></body></worldbody></mujoco>'
    return f'<mujoco><worldbody>{body}</worldbody><actuator><{tag} joint="j" {a}/></actuator></mujoco>'


def test_keyword_sets_are_mujocos():
    """Every keyword of ``KEYWORDS`` is one MuJoCo accepts there, and MuJoCo refuses one outside
    the set ("invalid keyword"; other compile errors of the small scenes do not matter)."""
    mujoco = pytest.importorskip("mujoco")

    def refused(xml):
        try:
            mujoco.MjModel.from_xml_string(xml)
        except ValueError as e:
            return "invalid keyword" in str(e)
        return False

    wrong = [(t, k, v) for (t, k), vals in KEYWORDS.items() for v in vals if refused(_keyword_scene(t, k, v))]
    lax = [(t, k) for (t, k) in KEYWORDS if not refused(_keyword_scene(t, k, "bogus"))]
    assert not wrong and not lax, f"refused by MuJoCo: {wrong}; not keyword attributes in MuJoCo: {lax}"


@pytest.mark.parametrize(
    "xml, msg",
    [
        (
            scene('<site name="s" sizee="0.1"/>'),
            r"<site name='s'>: unknown attribute 'sizee' \(closest known: 'size'\)",
        ),
        (
            scene().replace('<joint name="j"/>', '<joint name="j" dampng="5"/>'),
            r"<joint name='j'>: unknown attribute 'dampng' \(closest known: 'damping'\) \(in <body name='b'>\)",
        ),
        (
            scene(top='<default><default class="c"><geom frction="1"/></default></default>'),
            r"<geom>: unknown attribute 'frction' \(closest known: 'friction'\) \(in <default class='c'>\)",
        ),
        (scene(top='<compiler angel="radian"/>'), r"<compiler>: unknown attribute 'angel' \(closest known: 'angle'\)"),
        (scene(top='<option><flag gravty="disable"/></option>'), r"<flag>: unknown attribute 'gravty'"),
        (
            scene().replace("</mujoco>", '<actuator><motor joint="j" gears="2"/></actuator></mujoco>'),
            r"<motor>: unknown attribute 'gears' \(closest known: 'gear'\)",
        ),
        (
            scene('<jiont name="k"/>'),
            r"<jiont name='k'>: unknown element in <body name='b'> \(closest known there: <joint>\)",
        ),
        (scene().replace("<worldbody>", "<worldbdy/><worldbody>"), r"<worldbdy>: unknown element in <mujoco>"),
        (
            scene().replace("</mujoco>", '<actuator><geom name="x"/></actuator></mujoco>'),
            r"<geom name='x'>: element not allowed in <actuator>",
        ),
        (scene('<frame pos="0 0 1" eular="0 0 1"/>'), r"<frame>: unknown attribute 'eular' \(closest known: 'euler'\)"),
        (
            scene('<frame><geom sise="0.1"/></frame>'),
            r"<geom>: unknown attribute 'sise' \(closest known: 'size'\) \(in <frame>\)",
        ),
    ],
)
def test_unknown_names_are_refused_with_the_closest_known_one(xml, msg):
    with pytest.raises(MJCFError, match=msg):
        load_mjcf(xml)


@pytest.mark.parametrize(
    "xml, msg",
    [
        (
            scene().replace('<joint name="j"/>', '<joint name="j" type="hing"/>'),
            r"<joint name='j'>: type='hing' is not one of hinge, slide, ball, free",
        ),
        (
            scene().replace('<geom name="g"', '<geom name="g" type="sphre"'),
            r"<geom name='g'>: type='sphre' is not one of plane, hfield, sphere",
        ),
        (scene(top='<compiler autolimits="yes"/>'), r"<compiler>: autolimits='yes' is not one of false, true"),
        (scene(top='<compiler angle="Radian"/>'), r"<compiler>: angle='Radian' is not one of degree, radian"),
        (scene(top='<option><flag gravity="off"/></option>'), r"<flag>: gravity='off' is not one of enable, disable"),
        (scene(top='<default><joint limited="1"/></default>'), r"<joint>: limited='1' is not one of false, true, auto"),
        (
            scene().replace("</mujoco>", '<actuator><motor joint="j" ctrllimited="TRUE"/></actuator></mujoco>'),
            r"<motor>: ctrllimited='TRUE'",
        ),
        (
            scene('<body name="m" mocap="yes"><geom size="0.1"/></body>'),
            r"<body name='m'>: mocap='yes' is not one of false, true",
        ),
        (
            scene().replace('<geom name="g" size="0.1"', '<geom name="g" type="box" size="0.1 0 0.1"'),
            r"<geom name='g'> in body 'b': a box needs 3 positive size",
        ),
        (scene(top='<option integrator="RK5"/>'), r"<option>: integrator='RK5' is not one of Euler, RK4, implicit"),
    ],
)
def test_values_outside_their_domain_are_refused_by_name(xml, msg):
    with pytest.raises(MJCFError, match=msg):
        load_mjcf(xml)


def test_urdf_values_outside_their_domain_are_refused_by_name():
    link = '<link name="{}"><inertial><mass value="1"/><inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial></link>'
    joint = '<joint name="j" type="{}"><parent link="a"/><child link="b"/><axis xyz="0 0 1"/></joint>'
    urdf = f'<robot name="r">{link.format("a")}{link.format("b")}{joint}</robot>'
    with pytest.raises(URDFError, match=r"joint 'j': unknown joint type 'revolut' \(closest known: 'revolute'\)"):
        load_urdf(urdf.format("revolut"))
    box = '<collision><geometry><box size="0.1 -0.1 0.1"/></geometry></collision>'
    with pytest.raises(URDFError, match=r"<box>.*size must be three positive numbers"):
        load_urdf(urdf.format("continuous").replace("</inertial></link>", "</inertial>" + box + "</link>", 1))


def test_a_sensor_with_a_class_is_refused_by_both_readers():
    """MuJoCo has no sensor defaults: ``class`` on a sensor is not in its schema."""
    xml = scene('<site name="s"/>').replace(
        "</mujoco>", '<sensor><gyro name="x" site="s" class="c"/></sensor></mujoco>'
    )
    for read in (load_mjcf, lambda x: sensors.from_mjcf(x, None)):
        with pytest.raises(
            MJCFError, match=r"<gyro name='x'>: unknown attribute 'class' \(closest known: '.*'\) \(in <sensor>\)"
        ):
            read(xml)
    unknown = xml.replace('<gyro name="x" site="s" class="c"/>', '<gyroo name="y" site="s"/>')
    with pytest.raises(
        MJCFError, match=r"<gyroo name='y'>: unknown element in <sensor> \(closest known there: <gyro>\)"
    ):
        sensors.from_mjcf(unknown, None)


def test_namespaced_attributes_and_comments_pass():
    xml = scene().replace(
        '<mujoco model="m">', '<mujoco model="m" xmlns:x="urn:x" x:note="kept out"><!-- a comment -->'
    )
    load_mjcf(xml)


def _shipped_scenes():
    roots = [
        os.path.join(d, pkg)
        for d in site.getsitepackages()
        for pkg in ("mujoco", "dm_control", "mujoco_playground", "gymnasium")
    ]
    files = sorted(f for r in roots for f in glob.glob(os.path.join(r, "**", "*.xml"), recursive=True))
    return [f for f in files if "<mujoco" in open(f, errors="ignore").read(4000)]


def test_every_scene_the_mujoco_packages_ship_passes_the_schema():
    """The schema check (run before anything else is read) passes every MJCF file the installed
    MuJoCo packages ship: the table has every attribute MuJoCo accepts. Files refused for other
    reasons (tendons, missing includes, ...) are refused by name, not by the schema check."""
    files = _shipped_scenes()
    if not files:
        pytest.skip("no MuJoCo package with scene files is installed")
    bad = []
    for f in files:
        try:
            parse_scene(f)
        except MJCFError as e:
            if re.search(r"unknown attribute|unknown element|element not allowed|is not one of", str(e)):
                bad.append(f"{f}: {e}")
    assert not bad, "\n".join(bad)


FUZZ_SOURCES = [
    os.path.join(HERE, "data", "mjcf", f) for f in ("gymnasium/ant.xml", "defaults.xml", "frames.xml", "geoms.xml")
]


@pytest.mark.parametrize("path", FUZZ_SOURCES, ids=os.path.basename)
@settings(max_examples=60, deadline=5000, database=None)
@given(i=st.integers(0, 10_000), j=st.integers(0, 10_000), how=st.sampled_from(["drop", "double", "swap", "upper"]))
def test_fuzz_misspelt_attribute_names_are_refused_naming_them(path, i, j, how):
    """A misspelling of a real attribute (a letter dropped, doubled or swapped, or an upper-case
    one) is refused naming the element and the misspelt name, unless it spells another attribute
    the element takes."""
    with open(path) as fh:
        root = ET.fromstring(fh.read())
    els = [e for e in root.iter() if e.attrib]
    el = els[i % len(els)]
    k = sorted(el.attrib)[j % len(el.attrib)]
    n = j % len(k)
    new = {
        "drop": k[:n] + k[n + 1 :],
        "double": k[:n] + k[n] + k[n:],
        "swap": k[:n] + k[n + 1 : n + 2] + k[n] + k[n + 2 :] if n + 1 < len(k) else k[::-1],
        "upper": k[:n] + k[n].upper() + k[n + 1 :],
    }[how]
    if not re.fullmatch(r"[A-Za-z_][\w.-]*", new) or new in el.attrib or any(new in v for v in ATTRIBUTES.values()):
        return  # not an XML name, or another attribute's name: not a misspelling
    el.attrib[new] = el.attrib.pop(k)
    with pytest.raises(MJCFError, match=rf"<{el.tag}\b[^>]*>: unknown attribute '{re.escape(new)}' \(closest known: '"):
        load_mjcf(ET.tostring(root, encoding="unicode"))
