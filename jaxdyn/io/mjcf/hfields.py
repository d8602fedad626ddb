"""Height fields of an MJCF model (:mod:`jaxdyn.io.mjcf`): ``<asset><hfield>`` read as MuJoCo
reads it, for the ``hfield`` geoms on the world body (:class:`jaxdyn.contact.HeightField`).

An asset has ``size="r_x r_y elevation base"`` (all positive) and either a PNG ``file``
(through ``<compiler meshdir>``/``assetdir``, as MuJoCo looks it up, else beside the main file,
where MuJoCo Playground's scenes keep theirs; a file in neither place is refused with both
paths named; the first channel, 16-bit
samples by their high byte, as MuJoCo reads them) or ``nrow``, ``ncol`` and optionally
``elevation`` (``nrow * ncol`` numbers; none: a flat field). As in MuJoCo the values are
normalised to ``[0, 1]`` (``(v - min) / (max - min)``; all equal: zero), kept in single
precision, and the image's or the list's first row is the field's edge ``y = +r_y``; the
heights are the normalised values times ``elevation`` (``size[2]``). Errors name the element."""

from __future__ import annotations

import os

import numpy as np

from ..png import PNGError, read_png_channel
from .parse import MJCFError, numbers


def hfield_assets(root, ctx) -> dict:
    """``{name: (heights (nrow, ncol) [m], row 0 at y = -r_y; size (4,))}`` of the scene's
    ``<hfield>`` assets (a file's base name where unnamed); duplicates refused."""
    out: dict = {}
    for asset in root.findall("asset"):
        for e in asset.findall("hfield"):
            a = ctx.attrs(e, "main")
            name = a.get("name") or (os.path.splitext(os.path.basename(a["file"]))[0] if a.get("file") else None)
            what = f"<hfield name='{name}'>" if name else "<hfield>"
            if name is None:
                raise MJCFError(f"{what}: a height field needs a name or a file")
            if name in out:
                raise MJCFError(f"{what}: duplicate height field name")
            out[name] = _hfield(a, ctx, what)
    return out


def _find(file: str, ctx, what: str) -> str:
    """The path of a height field's ``file``: through ``<compiler meshdir>``/``assetdir`` from
    the main file's directory, as MuJoCo looks it up, else from the main file's directory alone
    (where scenes that hand MuJoCo their files by name, as MuJoCo Playground's do, keep it)."""
    if os.path.isabs(file):
        cands = [file]
    else:
        cands = list(dict.fromkeys([os.path.join(ctx.main_dir, ctx.meshdir, file), os.path.join(ctx.main_dir, file)]))
    for path in cands:
        if os.path.isfile(path):
            return path
    raise MJCFError(
        f"{what}: the height field file '{file}' is not found (looked for {' and '.join(cands)}); put the "
        "PNG there, or give the heights in the XML instead of the file (nrow, ncol and elevation on the "
        "<hfield>)"
    )


def _hfield(a, ctx, what):
    if "size" not in a:
        raise MJCFError(f"{what}: missing attribute size (r_x r_y elevation base)")
    size = numbers(a["size"], 4, f"{what} size")
    if not np.all(size > 0):
        raise MJCFError(f"{what}: every size (r_x r_y elevation base) must be positive, got {size.tolist()}")
    if "file" in a:
        for k in ("nrow", "ncol", "elevation"):
            if k in a:
                raise MJCFError(f"{what}: {k} is given with a file; the file sets the grid")
        if not a["file"].lower().endswith(".png"):
            raise MJCFError(f"{what}: only PNG height field files are read, got '{a['file']}'")
        path = _find(a["file"], ctx, what)
        try:
            data = read_png_channel(path)
        except OSError as e:
            raise MJCFError(f"{what}: cannot read the file '{path}' ({e.strerror or e})") from None
        except PNGError as e:
            raise MJCFError(f"{what}: cannot read the file '{path}': {e}") from None
        if data.max() > 255:  # MuJoCo reads 16-bit samples as 8-bit ones (their high byte)
            data = data >> 8
        data = data.astype(np.float64)
    else:
        if "nrow" not in a or "ncol" not in a:
            raise MJCFError(f"{what}: give a file, or nrow and ncol (and elevation)")
        nrow = int(numbers(a["nrow"], 1, f"{what} nrow", ints=True)[0])
        ncol = int(numbers(a["ncol"], 1, f"{what} ncol", ints=True)[0])
        if nrow < 2 or ncol < 2:
            raise MJCFError(f"{what}: nrow and ncol must be at least 2, got {nrow} and {ncol}")
        if "elevation" in a:
            data = numbers(a["elevation"], 10**9, f"{what} elevation", at_least=1)
            if data.size != nrow * ncol:
                raise MJCFError(f"{what}: elevation has {data.size} values, nrow * ncol = {nrow * ncol}")
        else:
            data = np.zeros(nrow * ncol)
        data = data.reshape(nrow, ncol)
    if min(data.shape) < 2:
        raise MJCFError(f"{what}: the grid is {data.shape[0]} x {data.shape[1]}; at least 2 x 2 is needed")
    data = data.astype(np.float32)  # MuJoCo normalises in single precision, as it keeps hfield_data
    lo, hi = data.min(), data.max()
    norm = (data - lo) / (hi - lo) if hi > lo else np.zeros_like(data)
    norm = norm.astype(np.float64)
    return norm[::-1] * size[2], size
