"""Which MJCF files of the installed MuJoCo, MJX, dm_control and Playground wheels that hold
``<tendon>`` or ``<equality>`` content jaxdyn loads, and why the others are refused (the counts
in docs/mjcf.md). Each file is loaded with :func:`jaxdyn.load_mjcf`; a refusal is grouped by the
start of its message.

Run: ``python tests/reference/sweep_mjcf_wheels.py`` (prints one line per file, then the counts).
"""

import collections
import glob
import os
import re
import site
import sys
import warnings

import jaxdyn

PACKAGES = ("mujoco", "dm_control", "mujoco_playground")


def files():
    out = []
    for sp in site.getsitepackages():
        for pkg in PACKAGES:
            for path in sorted(glob.glob(os.path.join(sp, pkg, "**", "*.xml"), recursive=True)):
                with open(path, encoding="utf-8", errors="replace") as fh:
                    text = fh.read()
                if not text.lstrip().startswith("<mujoco") and "<mujoco" not in text[:2000]:
                    continue
                if re.search(r"<tendon>\s*<(fixed|spatial)", text) or re.search(r"<equality>\s*<\w", text):
                    out.append(path)
    return out


def reason(err: str) -> str:
    for key, label in (
        ("spatial tendon's <geom>", "wrapping geom in a spatial tendon"),
        ("spatial tendon's <pulley>", "pulley in a spatial tendon"),
        ("tendon frictionloss", "tendon frictionloss"),
        ("tendon armature", "tendon armature"),
        ("tendon margin", "tendon margin"),
        ("transmission through", "actuator on a site or body"),
        ("mesh", "meshes"),
        ("equality constraints are not supported", "flex equality"),
    ):
        if key in err:
            return label
    return "other: " + err[:120]


def main():
    counts = collections.Counter()
    paths = files()
    for path in paths:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                jaxdyn.load_mjcf(path)
                result = "loads"
            except Exception as e:  # noqa: BLE001 - every refusal is reported
                result = reason(f"{type(e).__name__}: {e}")
        counts[result] += 1
        print(f"{result:40s} {path.split('site-packages/')[-1]}", flush=True)
    print(f"\n{len(paths)} files with tendons or equalities", file=sys.stderr)
    for k, n in counts.most_common():
        print(f"{n:4d}  {k}", file=sys.stderr)


if __name__ == "__main__":
    main()
