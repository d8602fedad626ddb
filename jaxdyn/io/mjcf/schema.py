"""The MJCF schema: every element MuJoCo's XML reader accepts, where it may appear, and its
attributes; the keyword attributes' values. :func:`check_scene` holds a scene to it, so that a
misspelt or misplaced attribute or element, or a keyword outside its set, is an error naming the
element and the closest known name, as MuJoCo refuses it, instead of being dropped silently.

``ATTRIBUTES`` is MuJoCo 4.0's schema (``mujoco.mj_printSchema``), attributes jaxdyn does not
model included (they are accepted, and ignored or warned about where they change the physics).
A key is the element's path from ``<mujoco>``: ``<worldbody>``, ``<body>`` and ``<frame>`` are
all ``body`` (a body's children are the same at every depth), nested ``<default>`` classes are
all ``default``. ``tests/test_mjcf_schema.py`` compares the table with the installed MuJoCo's.
"""

from __future__ import annotations

import difflib

from .parse import MJCFError, desc

MUJOCO_SCHEMA_VERSION = "4.0.0"

# path -> attributes (space-separated); the children of a path are the paths one tag longer
_TABLE: dict[str, str] = {
    "mujoco": "model",
    "compiler": (
        "alignfree angle assetdir autolimits balanceinertia boundinertia boundmass conflict "
        "coordinate discardvisual eulerseq fitaabb fusestatic inertiafromgeom inertiagrouprange "
        "meshdir passthrough savecanonical savecompiled saveinertial settotalmass strippath "
        "texturedir usethread"
    ),
    "compiler/lengthrange": "accel interval inttotal maxforce mode timeconst timestep tolrange useexisting uselimit",
    "option": (
        "actuatorgroupdisable ccd_iterations ccd_tolerance cone density gravity impratio integrator "
        "iterations jacobian ls_iterations ls_tolerance magnetic noslip_iterations noslip_tolerance "
        "o_friction o_margin o_solimp o_solref sdf_initpoints sdf_iterations sleep_tolerance solver "
        "timestep tolerance viscosity wind"
    ),
    "option/flag": (
        "actuation autoreset clampctrl constraint contact damper diagexact energy equality "
        "eulerdamp filterparent frictionloss fwdinv gravity invdiscrete ipc island limit midphase "
        "multiccd nativeccd override refsafe sensor sleep speculative spring warmstart"
    ),
    "size": (
        "memory nconmax njmax nkey nstack nuser_actuator nuser_body nuser_cam nuser_geom nuser_jnt "
        "nuser_sensor nuser_site nuser_tendon nuserdata"
    ),
    "statistic": "center extent meaninertia meanmass meansize",
    "visual": "",
    "visual/global": (
        "azimuth bvactive cameraid elevation ellipsoidinertia fovy glow ipd linewidth offheight "
        "offwidth orthographic realtime"
    ),
    "visual/quality": "numquads numslices numstacks offsamples shadowsize",
    "visual/headlight": "active ambient diffuse specular",
    "visual/map": (
        "actuatortendon alpha fogend fogstart force haze shadowclip shadowscale stiffness "
        "stiffnessrot torque zfar znear"
    ),
    "visual/scale": (
        "actuatorlength actuatorwidth camera com connect constraint contactheight contactwidth "
        "forcewidth framelength framewidth frustum jointlength jointwidth light selectpoint "
        "slidercrank"
    ),
    "visual/rgba": (
        "actuator actuatornegative actuatorpositive bv bvactive camera com connect constraint "
        "contactforce contactfriction contactgap contactpoint contacttorque crankbroken fog force "
        "frustum haze inertia joint light rangefinder selectpoint slidercrank"
    ),
    "default": "class",
    "default/mesh": "inertia maxhullvert scale",
    "default/texture": (
        "builtin colorspace embed gridlayout gridsize height hflip mark markrgb nchannel random "
        "rgb1 rgb2 type vflip width"
    ),
    "default/material": (
        "emission metallic reflectance rgba roughness shininess specular texrepeat texture texuniform"
    ),
    "default/material/layer": "role texture",
    "default/joint": (
        "actuatorfrclimited actuatorfrcrange actuatorgravcomp armature axis damping frictionloss "
        "group limited margin pos range ref solimpfriction solimplimit solreffriction solreflimit "
        "springdamper springref springyield stiffness type user"
    ),
    "default/geom": (
        "adhesion axisangle castshadow conaffinity condim contype density euler fitscale fluidcoef "
        "fluidshape friction fromto gap group hfield margin mass material mesh pos priority quat "
        "rgba shellinertia size solimp solmix solref surfacevel type user xyaxes zaxis"
    ),
    "default/site": "axisangle euler fromto group material mesh pos quat rgba size type user xyaxes zaxis",
    "default/camera": (
        "axisangle euler focal focalpixel fovy ipd mode output pos principal principalpixel "
        "projection quat resolution sensorsize user xyaxes zaxis"
    ),
    "default/light": (
        "active ambient attenuation bulbradius castshadow cutoff diffuse dir directional exponent "
        "intensity mode pos range softness specular type"
    ),
    "default/pair": "adhesion condim friction gap margin solimp solref solreffriction",
    "default/equality": "active solimp solref",
    "default/tendon": (
        "actuatorfrclimited actuatorfrcrange armature damping frictionloss group limited margin "
        "material range rgba solimpfriction solimplimit solreffriction solreflimit springlength "
        "springyield stiffness user width"
    ),
    "default/general": (
        "actdim actearly actlimited actrange armature biasprm biastype cranklength ctrllimited "
        "ctrlrange damping delay dynprm dyntype ffrange forcelimited forcerange gainprm gaintype "
        "gear group inheritrange input interp nsample user velrange"
    ),
    "default/motor": (
        "armature cranklength ctrllimited ctrlrange damping delay forcelimited forcerange gear "
        "group interp nsample user"
    ),
    "default/position": (
        "armature cranklength ctrllimited ctrlrange damping dampratio delay forcelimited forcerange "
        "gear group inheritrange interp kp kv nsample timeconst user"
    ),
    "default/velocity": (
        "armature cranklength ctrllimited ctrlrange damping delay forcelimited forcerange gear "
        "group interp kv nsample user"
    ),
    "default/intvelocity": (
        "actlimited actrange armature cranklength ctrllimited ctrlrange damping dampratio delay "
        "forcelimited forcerange gear group inheritrange interp kp kv nsample user"
    ),
    "default/orientation": "ctrlrange dampratio delay forcelimited forcerange group input interp kp kv nsample user",
    "default/pid": (
        "armature cranklength ctrllimited ctrlrange damping dampratio delay ffrange forcelimited "
        "forcerange gear group imax inheritrange input interp ki kp kv nsample posrange slewmax "
        "user velrange"
    ),
    "default/damper": (
        "armature cranklength ctrlrange damping delay forcelimited forcerange gear group interp kv nsample user"
    ),
    "default/cylinder": (
        "area armature bias cranklength ctrllimited ctrlrange damping delay diameter forcelimited "
        "forcerange gear group interp nsample timeconst user"
    ),
    "default/muscle": (
        "armature cranklength ctrllimited ctrlrange damping delay force forcelimited forcerange "
        "fpmax fvmax gear group interp lmax lmin nsample range scale timeconst user vmax"
    ),
    "default/adhesion": "ctrlrange delay forcelimited forcerange gain group interp nsample user",
    "default/dcmotor": (
        "armature cogging controller cranklength ctrllimited ctrlrange damping delay gear group "
        "inductance input interp lugre motorconst nominal nsample resistance saturation thermal "
        "user"
    ),
    "extension": "",
    "extension/plugin": "plugin",
    "extension/plugin/instance": "name",
    "extension/plugin/instance/config": "key value",
    "asset": "",
    "asset/mesh": (
        "builtin class content_type face file inertia material maxhullvert name normal params "
        "refpos refquat scale smoothnormal texcoord vertex"
    ),
    "asset/mesh/plugin": "instance plugin",
    "asset/mesh/plugin/config": "key value",
    "asset/hfield": "content_type elevation file name ncol nrow size",
    "asset/skin": "face file group inflate material name rgba texcoord vertex",
    "asset/skin/bone": "bindpos bindquat body vertid vertweight",
    "asset/texture": (
        "builtin class colorspace content_type embed file fileback filedown filefront fileleft "
        "fileright fileup gridlayout gridsize height hflip mark markrgb name nchannel random rgb1 "
        "rgb2 type vflip width"
    ),
    "asset/material": (
        "class emission metallic name reflectance rgba roughness shininess specular texrepeat texture texuniform"
    ),
    "asset/material/layer": "role texture",
    "asset/model": "content_type file name",
    "body": "axisangle childclass euler fuse gravcomp mocap name pos quat simple sleep user xyaxes zaxis",
    "body/inertial": "axisangle diaginertia euler fullinertia mass pos quat xyaxes zaxis",
    "body/joint": (
        "actuatorfrclimited actuatorfrcrange actuatorgravcomp armature axis class damping "
        "frictionloss group limited margin name pos range ref solimpfriction solimplimit "
        "solreffriction solreflimit springdamper springref springyield stiffness type user"
    ),
    "body/freejoint": "align group name",
    "body/geom": (
        "adhesion axisangle castshadow class conaffinity condim contype density euler fitscale "
        "fluidcoef fluidshape friction fromto gap group hfield margin mass material mesh name pos "
        "priority quat rgba shellinertia size solimp solmix solref surfacevel type user xyaxes "
        "zaxis"
    ),
    "body/geom/plugin": "instance plugin",
    "body/geom/plugin/config": "key value",
    "body/attach": "body frame model prefix",
    "body/site": "axisangle class euler fromto group material mesh name pos quat rgba size type user xyaxes zaxis",
    "body/camera": (
        "axisangle class euler focal focalpixel fovy ipd mode name output pos principal "
        "principalpixel projection quat resolution sensorsize target user xyaxes zaxis"
    ),
    "body/light": (
        "active ambient attenuation bulbradius castshadow class cutoff diffuse dir directional "
        "exponent intensity mode name pos range softness specular target texture type"
    ),
    "body/plugin": "instance plugin",
    "body/plugin/config": "key value",
    "body/flexcomp": (
        "axisangle cellcount count dim dof element euler file flatskin group inertiabox mass "
        "material mesh name origin point pos quat radius rgba rigid scale spacing texcoord type "
        "xyaxes zaxis"
    ),
    "body/flexcomp/edge": "damping equality solimp solref stiffness",
    "body/flexcomp/elasticity": "damping elastic2d poisson section sectionsize shear thickness yield young",
    "body/flexcomp/contact": (
        "activelayers conaffinity condim contype friction gap margin passive priority selfcollide solimp solmix solref"
    ),
    "body/flexcomp/pin": "grid gridrange id range",
    "body/flexcomp/plugin": "instance plugin",
    "body/flexcomp/plugin/config": "key value",
    "deformable": "",
    "deformable/flex": (
        "body cellcount dim dof element elemtexcoord flatskin group material name node nodecoord "
        "radius rgba texcoord vertex"
    ),
    "deformable/flex/contact": (
        "activelayers conaffinity condim contype friction gap margin passive priority selfcollide solimp solmix solref"
    ),
    "deformable/flex/edge": "damping stiffness",
    "deformable/flex/elasticity": "damping elastic2d poisson section sectionsize shear thickness yield young",
    "deformable/skin": "face file group inflate material name rgba texcoord vertex",
    "deformable/skin/bone": "bindpos bindquat body vertid vertweight",
    "contact": "",
    "contact/pair": "adhesion class condim friction gap geom1 geom2 margin name solimp solref solreffriction",
    "contact/exclude": "body1 body2 name",
    "tendon": "",
    "tendon/spatial": (
        "actuatorfrclimited actuatorfrcrange armature class damping frictionloss group limited "
        "margin material name range rgba solimpfriction solimplimit solreffriction solreflimit "
        "springlength springyield stiffness user width"
    ),
    "tendon/spatial/site": "site",
    "tendon/spatial/geom": "geom sidesite",
    "tendon/spatial/pulley": "divisor",
    "tendon/fixed": (
        "actuatorfrclimited actuatorfrcrange armature class damping frictionloss group limited "
        "margin name range solimpfriction solimplimit solreffriction solreflimit springlength "
        "springyield stiffness user"
    ),
    "tendon/fixed/joint": "coef joint",
    "equality": "",
    "equality/connect": "active anchor body1 body2 class name site1 site2 solimp solref",
    "equality/weld": "active anchor body1 body2 class name relpose site1 site2 solimp solref torquescale",
    "equality/joint": "active class joint1 joint2 name polycoef solimp solref",
    "equality/tendon": "active class name polycoef solimp solref tendon1 tendon2",
    "equality/flex": "active class flex name solimp solref",
    "equality/flexstrain": "active cell class flex name solimp solref",
    "actuator": "",
    "actuator/general": (
        "actdim actearly actlimited actrange armature biasprm biastype body class cranklength "
        "cranksite ctrllimited ctrlrange damping delay dynprm dyntype ffrange forcelimited "
        "forcerange gainprm gaintype gear group inheritrange input interp joint jointinparent "
        "lengthrange name nsample refsite site slidersite tendon user velrange"
    ),
    "actuator/motor": (
        "armature class cranklength cranksite ctrllimited ctrlrange damping delay forcelimited "
        "forcerange gear group interp joint jointinparent lengthrange name nsample refsite site "
        "slidersite tendon user"
    ),
    "actuator/position": (
        "armature class cranklength cranksite ctrllimited ctrlrange damping dampratio delay "
        "forcelimited forcerange gear group inheritrange interp joint jointinparent kp kv "
        "lengthrange name nsample refsite site slidersite tendon timeconst user"
    ),
    "actuator/velocity": (
        "armature class cranklength cranksite ctrllimited ctrlrange damping delay forcelimited "
        "forcerange gear group interp joint jointinparent kv lengthrange name nsample refsite site "
        "slidersite tendon user"
    ),
    "actuator/intvelocity": (
        "actlimited actrange armature class cranklength cranksite ctrllimited ctrlrange damping "
        "dampratio delay forcelimited forcerange gear group inheritrange interp joint jointinparent "
        "kp kv lengthrange name nsample refsite site slidersite tendon user"
    ),
    "actuator/orientation": (
        "class ctrlrange dampratio delay forcelimited forcerange group input interp joint kp kv "
        "name nsample refsite site user"
    ),
    "actuator/pid": (
        "armature class cranklength cranksite ctrllimited ctrlrange damping dampratio delay ffrange "
        "forcelimited forcerange gear group imax inheritrange input interp joint jointinparent ki "
        "kp kv lengthrange name nsample posrange refsite site slewmax slidersite tendon user "
        "velrange"
    ),
    "actuator/damper": (
        "armature class cranklength cranksite ctrlrange damping delay forcelimited forcerange gear "
        "group interp joint jointinparent kv lengthrange name nsample refsite site slidersite "
        "tendon user"
    ),
    "actuator/cylinder": (
        "area armature bias class cranklength cranksite ctrllimited ctrlrange damping delay "
        "diameter forcelimited forcerange gear group interp joint jointinparent lengthrange name "
        "nsample refsite site slidersite tendon timeconst user"
    ),
    "actuator/muscle": (
        "armature class cranklength cranksite ctrllimited ctrlrange damping delay force "
        "forcelimited forcerange fpmax fvmax gear group interp joint jointinparent lengthrange lmax "
        "lmin name nsample range scale slidersite tausmooth tendon timeconst user vmax"
    ),
    "actuator/adhesion": "body class ctrlrange delay forcelimited forcerange gain group interp name nsample user",
    "actuator/dcmotor": (
        "armature class cogging controller cranklength cranksite ctrllimited ctrlrange damping "
        "delay gear group inductance input interp joint jointinparent lengthrange lugre motorconst "
        "name nominal nsample refsite resistance saturation site slidersite tendon thermal user"
    ),
    "actuator/plugin": (
        "actdim actearly actlimited actrange armature class cranklength cranksite ctrllimited "
        "ctrlrange damping delay dynprm dyntype forcelimited forcerange gear group instance interp "
        "joint jointinparent lengthrange name nsample plugin site slidersite tendon user"
    ),
    "actuator/plugin/config": "key value",
    "sensor": "",
    "sensor/touch": "cutoff delay interp interval name noise nsample site user",
    "sensor/accelerometer": "cutoff delay interp interval name noise nsample site user",
    "sensor/velocimeter": "cutoff delay interp interval name noise nsample site user",
    "sensor/gyro": "cutoff delay interp interval name noise nsample site user",
    "sensor/force": "cutoff delay interp interval name noise nsample site user",
    "sensor/torque": "cutoff delay interp interval name noise nsample site user",
    "sensor/magnetometer": "cutoff delay interp interval name noise nsample site user",
    "sensor/camprojection": "camera cutoff delay interp interval name noise nsample site user",
    "sensor/rangefinder": "camera cutoff data delay interp interval name noise nsample site user",
    "sensor/jointpos": "cutoff delay interp interval joint name noise nsample user",
    "sensor/jointvel": "cutoff delay interp interval joint name noise nsample user",
    "sensor/tendonpos": "cutoff delay interp interval name noise nsample tendon user",
    "sensor/tendonvel": "cutoff delay interp interval name noise nsample tendon user",
    "sensor/actuatorpos": "actuator cutoff delay interp interval name noise nsample user",
    "sensor/actuatorvel": "actuator cutoff delay interp interval name noise nsample user",
    "sensor/actuatorfrc": "actuator cutoff delay interp interval name noise nsample user",
    "sensor/jointactuatorfrc": "cutoff delay interp interval joint name noise nsample user",
    "sensor/tendonactuatorfrc": "cutoff delay interp interval name noise nsample tendon user",
    "sensor/ballquat": "cutoff delay interp interval joint name noise nsample user",
    "sensor/ballangvel": "cutoff delay interp interval joint name noise nsample user",
    "sensor/jointlimitpos": "cutoff delay interp interval joint name noise nsample user",
    "sensor/jointlimitvel": "cutoff delay interp interval joint name noise nsample user",
    "sensor/jointlimitfrc": "cutoff delay interp interval joint name noise nsample user",
    "sensor/tendonlimitpos": "cutoff delay interp interval name noise nsample tendon user",
    "sensor/tendonlimitvel": "cutoff delay interp interval name noise nsample tendon user",
    "sensor/tendonlimitfrc": "cutoff delay interp interval name noise nsample tendon user",
    "sensor/framepos": "cutoff delay interp interval name noise nsample objname objtype refname reftype user",
    "sensor/framequat": "cutoff delay interp interval name noise nsample objname objtype refname reftype user",
    "sensor/framexaxis": "cutoff delay interp interval name noise nsample objname objtype refname reftype user",
    "sensor/frameyaxis": "cutoff delay interp interval name noise nsample objname objtype refname reftype user",
    "sensor/framezaxis": "cutoff delay interp interval name noise nsample objname objtype refname reftype user",
    "sensor/framelinvel": "cutoff delay interp interval name noise nsample objname objtype refname reftype user",
    "sensor/frameangvel": "cutoff delay interp interval name noise nsample objname objtype refname reftype user",
    "sensor/framelinacc": "cutoff delay interp interval name noise nsample objname objtype user",
    "sensor/frameangacc": "cutoff delay interp interval name noise nsample objname objtype user",
    "sensor/subtreecom": "body cutoff delay interp interval name noise nsample user",
    "sensor/subtreelinvel": "body cutoff delay interp interval name noise nsample user",
    "sensor/subtreeangmom": "body cutoff delay interp interval name noise nsample user",
    "sensor/insidesite": "cutoff delay enclosed interp interval name noise nsample objname objtype site user",
    "sensor/distance": "body1 body2 cutoff delay geom1 geom2 interp interval name noise nsample user",
    "sensor/normal": "body1 body2 cutoff delay geom1 geom2 interp interval name noise nsample user",
    "sensor/fromto": "body1 body2 cutoff delay geom1 geom2 interp interval name noise nsample user",
    "sensor/contact": (
        "body1 body2 cutoff data delay geom1 geom2 interp interval name noise nsample num reduce "
        "site subtree1 subtree2 user"
    ),
    "sensor/e_potential": "cutoff delay interp interval name noise nsample user",
    "sensor/e_kinetic": "cutoff delay interp interval name noise nsample user",
    "sensor/clock": "cutoff delay interp interval name noise nsample user",
    "sensor/tactile": "cutoff delay geom interp interval mesh name nsample user",
    "sensor/user": "cutoff datatype dim name needstage noise objname objtype user",
    "sensor/plugin": "cutoff instance name objname objtype plugin refname reftype user",
    "sensor/plugin/config": "key value",
    "custom": "",
    "custom/numeric": "data name size",
    "custom/text": "data name",
    "custom/tuple": "name",
    "custom/tuple/element": "objname objtype prm",
    "keyframe": "",
    "keyframe/key": "act ctrl mpos mquat name plastic qpos qvel time",
}

# <frame> (in a body, or in a frame) is read outside MuJoCo's printed schema; its children are a
# body's
FRAME = "name childclass pos quat axisangle xyaxes zaxis euler"

ATTRIBUTES: dict[str, frozenset[str]] = {k: frozenset(v.split()) for k, v in _TABLE.items()}
ATTRIBUTES["body/frame"] = frozenset(FRAME.split())
# elements MuJoCo has read (older versions included) that jaxdyn refuses by name later, with
# its own message: their content is not checked here
REFUSED = frozenset({"replicate", "composite"})
RECURSIVE = ("default", "body")

_ACTUATOR_TAGS = ("general", "motor", "position", "velocity", "intvelocity", "damper", "cylinder", "muscle")
_TRISTATE = ("false", "true", "auto")
_BOOL = ("false", "true")
# (element tag, attribute) -> the keywords MuJoCo accepts, for the keyword attributes jaxdyn
# reads and the solver's settings; ("flag", "*") is every attribute of <option><flag>
# (tests/test_mjcf_schema.py checks each against MuJoCo)
KEYWORDS: dict[tuple[str, str], tuple[str, ...]] = {
    ("joint", "type"): ("hinge", "slide", "ball", "free"),
    ("joint", "limited"): _TRISTATE,
    ("joint", "actuatorfrclimited"): _TRISTATE,
    ("joint", "actuatorgravcomp"): _BOOL,
    ("freejoint", "align"): _TRISTATE,
    ("geom", "type"): ("plane", "hfield", "sphere", "capsule", "ellipsoid", "cylinder", "box", "mesh", "sdf"),
    ("geom", "shellinertia"): _BOOL,
    ("body", "mocap"): _BOOL,
    ("mesh", "inertia"): ("convex", "exact", "legacy", "shell"),
    ("compiler", "angle"): ("degree", "radian"),
    ("compiler", "inertiafromgeom"): _TRISTATE,
    ("compiler", "autolimits"): _BOOL,
    ("compiler", "balanceinertia"): _BOOL,
    ("compiler", "alignfree"): _BOOL,
    ("flag", "*"): ("enable", "disable"),
    ("general", "gaintype"): ("fixed", "affine", "muscle", "user"),
    ("general", "biastype"): ("none", "affine", "muscle", "user"),
    ("general", "dyntype"): ("none", "integrator", "filter", "filterexact", "muscle", "user"),
    **{
        (t, k): _TRISTATE
        for t in _ACTUATOR_TAGS
        for k in ("ctrllimited", "forcelimited", "actlimited")
        if k in ATTRIBUTES[f"actuator/{t}"]
    },
    # not read by jaxdyn, but a misspelt solver setting is a file MuJoCo refuses
    ("option", "integrator"): ("Euler", "RK4", "implicit", "implicitfast"),
    ("option", "cone"): ("pyramidal", "elliptic"),
    ("option", "jacobian"): ("dense", "sparse", "auto"),
    ("option", "solver"): ("PGS", "CG", "Newton"),
    ("site", "type"): ("sphere", "capsule", "ellipsoid", "cylinder", "box"),
}


def _closest(name, known):
    best = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.0)
    return f"'{best[0]}'" if best else "none"


def _name(elem):
    if elem.get("name") is None and elem.get("class") is not None:
        return f"<{elem.tag} class='{elem.get('class')}'>"
    return desc(elem)


def _in(parent):
    return f" (in {_name(parent)})" if parent is not None else ""


def check_scene(root) -> None:
    """Hold the ``<mujoco>`` element ``root`` (includes expanded) to MuJoCo's schema: every
    element known where it is, every attribute known for its element, the keyword attributes
    jaxdyn reads within their sets. Raise :class:`MJCFError` naming the element, the attribute
    (or element) and the closest known name."""
    _check(root, "mujoco", "mujoco", None)


def _check(elem, path, children, parent):
    """Check ``elem`` against the attributes of ``path`` and its children against the children
    of ``children`` (a ``<frame>``'s are a body's)."""
    known = ATTRIBUTES[path]
    where = _name(elem)
    for k, v in elem.attrib.items():
        if k.startswith("{"):  # an attribute in another XML namespace: not MuJoCo's
            continue
        if k not in known:
            if not known:
                raise MJCFError(f"{where}: unknown attribute '{k}' (<{elem.tag}> takes no attributes){_in(parent)}")
            raise MJCFError(f"{where}: unknown attribute '{k}' (closest known: {_closest(k, known)}){_in(parent)}")
        allowed = KEYWORDS.get((elem.tag, k)) or KEYWORDS.get((elem.tag, "*"))
        if allowed and v not in allowed:
            raise MJCFError(f"{where}: {k}={v!r} is not one of {', '.join(allowed)}{_in(parent)}")
    base = "" if children == "mujoco" else children + "/"
    for child in elem:
        tag = child.tag
        if not isinstance(tag, str) or tag in REFUSED:  # comments; elements refused later by name
            continue
        if tag == "frame" and children == "body":
            _check(child, "body/frame", "body", elem)
            continue
        if tag == children and tag in RECURSIVE:
            sub = tag
        elif (children, tag) == ("mujoco", "worldbody"):
            sub = "body"
        else:
            sub = base + tag
        if sub not in ATTRIBUTES or sub in ("mujoco", "body") and children == "mujoco" and tag != "worldbody":
            options = {p[len(base) :] for p in ATTRIBUTES if p.startswith(base) and "/" not in p[len(base) :]}
            extra = {"mujoco": {"worldbody"}, "body": {"body", "frame"}, "default": {"default"}}
            options = options - {"mujoco", "body"} | extra.get(children, set())
            elsewhere = any(p.rsplit("/", 1)[-1] == tag for p in ATTRIBUTES) or tag == "worldbody"
            what = "element not allowed" if elsewhere else "unknown element"
            raise MJCFError(
                f"{_name(child)}: {what} in {_name(elem)} (closest known there: <{_closest(tag, options)[1:-1]}>)"
            )
        _check(child, sub, sub, elem)
