"""Load the MJCF models that installed wheels ship and compare jaxdyn with MuJoCo on each.

Not a test (the models are not in this repository and the wheels are optional): a check of
``jaxdyn.load_mjcf`` on robots as they are published. For every XML under the given folders
(default: the assets of ``brax`` and MJX's test data, where installed), MuJoCo's ``mj_fullM``,
``qfrc_bias``, ``mj_inverse`` and ``mj_forward`` at random states
(``generate_mujoco_mjcf.run``) against jaxdyn's CRBA, RNEA and ABA in float64
(``tests/test_mjcf.py``'s comparison), or the loader's error where jaxdyn refuses the model.

    pip install mujoco brax     # MuJoCo 4.x
    python tests/reference/check_mjcf_assets.py [folder ...]
"""

from __future__ import annotations

import glob
import importlib.util
import os
import sys
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, ".."))


def default_folders():
    out = []
    for pkg, sub in (("brax", "envs/assets"), ("mujoco", "mjx/test_data")):
        spec = importlib.util.find_spec(pkg)
        if spec and spec.submodule_search_locations:
            out.append(os.path.join(list(spec.submodule_search_locations)[0], sub))
    return out


def main(argv=None) -> int:
    import jax

    jax.config.update("jax_enable_x64", True)
    import generate_mujoco_mjcf as gen
    import jax.numpy as jnp
    import test_mjcf as tm

    import jaxdyn

    folders = (argv if argv is not None else sys.argv[1:]) or default_folders()
    files = sorted(f for d in folders for f in glob.glob(os.path.join(d, "**", "*.xml"), recursive=True))
    for f in files:
        try:
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                m = jaxdyn.load_mjcf(f, dtype=jnp.float64)
        except jaxdyn.LoadError as e:
            print(f"refused  {f}: {str(e)[:300]}", flush=True)
            continue
        try:
            r = gen.run(f, 0)
        except Exception as e:  # noqa: BLE001 - the reference generator's own limits, per file
            print(f"no ref.  {f}: the MuJoCo reference failed ({type(e).__name__} {str(e)[:200]})", flush=True)
            continue
        o = tm._dyn_jit(m.replace(geoms=None), *(jnp.asarray(r[k]) for k in ("qpos", "qvel", "qacc", "qfrc_applied")))
        o = {k: np.asarray(v) for k, v in o.items()}
        err = 0.0
        for k in range(len(r["qpos"])):
            M, inv, bias, fwd = tm.mujoco_in_jaxdyn(m, r, o, k)
            for a, b in ((o["M"][k], M), (o["inv"][k], inv), (o["bias"][k], bias), (o["fwd"][k], fwd)):
                err = max(err, tm.rel_err(a, b))
        print(
            f"{'equal' if err < 1e-8 else 'DIFFER'}    {f}: nv {m.nv}, max rel. err {err:.1e}, {len(w)} warnings",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
