"""Property-based fuzzing of the model loaders on real robot descriptions.

Each example mutates a real file (deleted or misspelt attributes, deleted elements, wrong
numbers, NaN, inf and huge values, duplicated names, cycles, unknown tags, truncation). Every
mutated input must either load into a model whose numbers are all finite (limits may be
infinite), or raise the library's own :class:`jaxdyn.LoadError` with a message that names what
is at fault. Any other exception, a hang (hypothesis' deadline) or a model holding NaN fails
the test. Hypothesis draws new seeds on every run; a failure prints the example to replay.
"""

import glob
import os
import re
import warnings
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import jaxdyn

HERE = os.path.dirname(__file__)
ROBOTS = os.path.join(os.path.dirname(jaxdyn.__file__), "robots")
URDF_SOURCES = [os.path.join(ROBOTS, f) for f in ("double_pendulum.urdf", "ur5.urdf", "panda.urdf", "solo12.urdf")] + [
    os.path.join(HERE, "data", "urdf_published", "bolt.urdf")
]
MJCF_SOURCES = sorted(glob.glob(os.path.join(HERE, "data", "mjcf", "*.xml"))) + [
    os.path.join(HERE, "data", "mjcf", "dm_control", "humanoid.xml"),
    os.path.join(HERE, "data", "mjcf", "gymnasium", "ant.xml"),
]

BAD_VALUES = [
    "nan",
    "NaN",
    "inf",
    "-inf",
    "1e308",
    "-1e308",
    "1e-320",
    "abc",
    "",
    "1 2",
    "0 0 0 0 0 0 0 0",
    "-1",
    "0",
    "1e30 1e30 1e30",
    "nan 0 0",
    "0 0 0",
    "1 0 0 0",
    "-0.5 -0.5 -0.5",
]
UNKNOWN_TAGS = ["gazebo", "transmission", "foo", "plugin", "sensor"]


def _elements(root):
    return [e for e in root.iter() if e is not root]


def _mutate(text, ops):
    """Apply mutation ops (drawn by hypothesis) to an XML text; returns the new text."""
    root = ET.fromstring(text)
    truncate = None
    for op, i, j, value in ops:
        els = _elements(root)
        if not els:
            break
        el = els[i % len(els)]
        parent = next(p for p in root.iter() if el in list(p))
        if op == "del_attr" and el.attrib:
            del el.attrib[sorted(el.attrib)[j % len(el.attrib)]]
        elif op == "set_attr" and el.attrib:
            el.set(sorted(el.attrib)[j % len(el.attrib)], value)
        elif op == "rename_attr" and el.attrib:
            # a misspelt attribute name: one letter dropped
            k = sorted(el.attrib)[j % len(el.attrib)]
            n = i % len(k)
            if k[:n] + k[n + 1 :]:
                el.set(k[:n] + k[n + 1 :], el.attrib.pop(k))
        elif op == "del_elem":
            parent.remove(el)
        elif op == "dup_elem":
            parent.insert(list(parent).index(el), ET.fromstring(ET.tostring(el)))
        elif op == "unknown_tag":
            ET.SubElement(el, UNKNOWN_TAGS[j % len(UNKNOWN_TAGS)], {"name": value})
        elif op == "swap_names":
            # point a reference at another element's name: cycles, self-parenting, dangling links
            named = [e for e in root.iter() if e.get("name")]
            refs = [(e, k) for e in root.iter() for k in ("link", "joint", "body", "class", "childclass") if e.get(k)]
            if named and refs:
                e, k = refs[i % len(refs)]
                e.set(k, named[j % len(named)].get("name"))
        elif op == "move_elem":
            # re-parent an element under another one (MJCF bodies: new tree shapes)
            target = els[j % len(els)]
            if target is not el and el not in list(target.iter()):
                parent.remove(el)
                target.append(el)
        elif op == "truncate":
            truncate = j
    out = ET.tostring(root, encoding="unicode")
    if truncate is not None:
        out = out[: truncate % max(len(out), 1)]
    return out


OPS = st.lists(
    st.tuples(
        st.sampled_from(
            [
                "del_attr",
                "set_attr",
                "rename_attr",
                "del_elem",
                "dup_elem",
                "unknown_tag",
                "swap_names",
                "move_elem",
                "truncate",
            ]
        ),
        st.integers(0, 10_000),
        st.integers(0, 10_000),
        st.sampled_from(BAD_VALUES),
    ),
    min_size=1,
    max_size=4,
)


def _check_model(model):
    limits = {"q_lower", "q_upper", "velocity_limit", "effort_limit"}
    for f in model.__dataclass_fields__:
        x = getattr(model, f)
        if f in limits or not hasattr(x, "dtype"):
            continue
        for leaf in x if isinstance(x, (list, tuple)) else [x]:
            a = np.asarray(leaf)
            if np.issubdtype(a.dtype, np.floating):
                assert np.all(np.isfinite(a)), f"loaded model has non-finite {f}"


def _run(load, text):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            model = load(text)
        except jaxdyn.LoadError as e:
            msg = str(e)
            # an element or attribute in quotes or brackets, or a parse error's line and column
            assert re.search(r"'|<|line \d+", msg), f"error names nothing: {msg!r}"
            return
    _check_model(model)


FUZZ = settings(max_examples=100, deadline=5000, suppress_health_check=[HealthCheck.too_slow], database=None)


@pytest.mark.parametrize("path", URDF_SOURCES, ids=os.path.basename)
@pytest.mark.parametrize("floating, dtype", [(False, None), (True, "float32")])
@FUZZ
@given(ops=OPS, inertia=st.sampled_from(["warn", "strict", "fix"]))
def test_fuzz_urdf(path, floating, dtype, ops, inertia):
    with open(path) as fh:
        text = _mutate(fh.read(), ops)
    _run(lambda t: jaxdyn.load_urdf(t, floating_base=floating, dtype=dtype, inertia=inertia), text)


@pytest.mark.parametrize("path", MJCF_SOURCES, ids=os.path.basename)
@FUZZ
@given(ops=OPS)
def test_fuzz_mjcf(path, ops):
    with open(path) as fh:
        text = _mutate(fh.read(), ops)
    # includes resolve against the file's folder: a mutated text that still includes a file is
    # loaded from a temporary file beside it
    if "<include" in text:
        tmp = os.path.join(os.path.dirname(path), f".fuzz_{os.getpid()}.xml")
        with open(tmp, "w") as fh:
            fh.write(text)
        try:
            _run(jaxdyn.load_mjcf, tmp)
        finally:
            os.remove(tmp)
    else:
        _run(jaxdyn.load_mjcf, text)


def test_angles_near_the_largest_double_load_finite():
    """A hinge ``ref`` or body ``euler`` of 1e308 degrees is a defined angle (MuJoCo loads it):
    the degree-to-radian conversion must not overflow to inf (found by test_fuzz_mjcf)."""
    xml = """<mujoco><worldbody>
      <body name="b" euler="0 1e308 0"><joint name="j" type="hinge" axis="0 1 0" ref="-1e308"/>
        <geom type="sphere" size="0.1" mass="1"/></body></worldbody></mujoco>"""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = jaxdyn.load_mjcf(xml)
    _check_model(model)
