"""MuJoCo reference for the collision filter of jaxdyn.contact (tests/test_contact_pairs.py).
MuJoCo is not a jaxdyn dependency.

    pip install mujoco          # 4.x
    python tests/reference/generate_mujoco_filter.py

For ``tests/data/mjcf/contact_filter.xml`` (bit masks, geoms on one body, parent and child
through a welded body, ``<exclude>``, explicit ``<pair>``s, a floor plane): every geom pair
MuJoCo collides, read off ``mjData.contact`` after ``mj_forward`` with the contact margin
overridden to 100 m (``<flag override>``, ``opt.o_margin``), so that every pair its filter
admits reports a contact whatever the distance. Written as the sorted list of geom name pairs,
with each pair's sliding friction (``mjData.contact.friction[0]``: MuJoCo's combination of the
geoms' frictions, or an explicit pair's own), its contact dimension (``mjData.contact.dim``:
the geoms' ``condim`` combined, or an explicit pair's own) and, for dimensions 4 and 6, its
torsional and rolling friction (``friction[2]`` and ``friction[3]``).
"""

from __future__ import annotations

import json
import os

import mujoco

HERE = os.path.dirname(os.path.abspath(__file__))
XML = os.path.join(HERE, "..", "data", "mjcf", "contact_filter.xml")
OUT = os.path.join(HERE, "..", "data", "mujoco", "contact", "filter.json")


def main():
    m = mujoco.MjModel.from_xml_path(XML)
    m.opt.enableflags |= mujoco.mjtEnableBit.mjENBL_OVERRIDE
    m.opt.o_margin = 100.0
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)

    def name(g):
        return mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_GEOM, g)

    pairs = sorted({tuple(sorted((name(c.geom1), name(c.geom2)))) for c in d.contact[: d.ncon]})
    # the override replaces the contacts' friction too: the frictions come from a second pass with
    # every geom's and pair's own margin at 100 m instead
    m = mujoco.MjModel.from_xml_path(XML)
    m.geom_margin[:] = 100.0
    m.pair_margin[:] = 100.0
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    friction, dim, torsional, rolling = {}, {}, {}, {}
    for c in d.contact[: d.ncon]:
        key = "|".join(sorted((name(c.geom1), name(c.geom2))))
        friction.setdefault(key, float(c.friction[0]))
        dim.setdefault(key, int(c.dim))
        if c.dim >= 4:
            torsional.setdefault(key, float(c.friction[2]))
        if c.dim == 6:
            rolling.setdefault(key, float(c.friction[3]))
    missing = set(pairs) ^ {tuple(k.split("|")) for k in friction}
    print("pairs without a contact in the second pass or extra:", sorted(missing))
    with open(OUT, "w") as fh:
        json.dump(
            {
                "mujoco": mujoco.__version__,
                "pairs": pairs,
                "friction": dict(sorted(friction.items())),
                "dim": dict(sorted(dim.items())),
                "torsional": dict(sorted(torsional.items())),
                "rolling": dict(sorted(rolling.items())),
            },
            fh,
            indent=1,
        )
        fh.write("\n")
    print(f"wrote {OUT}: {len(pairs)} pairs")


if __name__ == "__main__":
    main()
