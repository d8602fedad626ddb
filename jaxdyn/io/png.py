"""A small PNG reader (numpy and the standard library's ``zlib``), for height-field images
(MJCF ``<hfield file="...png">``): one channel of a non-interlaced PNG (W3C PNG specification,
2nd edition: chunks, zlib-compressed scanlines, the five filter types)."""

from __future__ import annotations

import struct
import zlib

import numpy as np

_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_CHANNELS = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}  # colour type -> samples per pixel


class PNGError(ValueError):
    """A file that is not a PNG this reader handles; the message says why."""


def read_png_channel(path: str) -> np.ndarray:
    """The first channel of the PNG file ``path`` as an ``(height, width)`` integer array, the
    image's top row first: grey for greyscale images, red for colour ones (a palette image's
    entries' red), 16-bit samples as they are (0..65535). Raises :class:`PNGError` for a file
    that is not a PNG, is truncated, interlaced or of a bit depth other than 8 and 16, and
    ``OSError`` where it cannot be read."""
    with open(path, "rb") as fh:
        data = fh.read()
    if not data.startswith(_SIGNATURE):
        raise PNGError("not a PNG file (no PNG signature)")
    pos, idat, header, palette = len(_SIGNATURE), [], None, None
    while pos + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[pos : pos + 8])
        body = data[pos + 8 : pos + 8 + length]
        if len(body) != length:
            raise PNGError("truncated PNG file")
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body[:13])
        elif kind == b"PLTE":
            palette = np.frombuffer(body, np.uint8).reshape(-1, 3)
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
        pos += 12 + length
    if header is None or not idat:
        raise PNGError("PNG file without an image header or image data")
    width, height, depth, colour, _, _, interlace = header
    if colour not in _CHANNELS:
        raise PNGError(f"unknown PNG colour type {colour}")
    if depth not in (8, 16):
        raise PNGError(f"PNG bit depth {depth} is not read (8 and 16 are)")
    if interlace:
        raise PNGError("interlaced PNG images are not read")
    try:
        raw = zlib.decompress(b"".join(idat))
    except zlib.error as e:
        raise PNGError(f"corrupt PNG image data ({e})") from None
    bpp = _CHANNELS[colour] * depth // 8  # bytes per pixel
    stride = width * bpp
    if len(raw) < height * (stride + 1):
        raise PNGError("truncated PNG image data")
    rows = np.frombuffer(raw, np.uint8)[: height * (stride + 1)].reshape(height, stride + 1)
    img = _unfilter(rows[:, 0], rows[:, 1:].astype(np.int64), bpp)
    if depth == 16:
        img = img[:, 0::2] * 256 + img[:, 1::2]
    samples = img.reshape(height, width, _CHANNELS[colour])
    first = samples[..., 0]
    if colour == 3:
        if palette is None:
            raise PNGError("palette PNG without a palette")
        first = palette[np.clip(first, 0, len(palette) - 1), 0].astype(np.int64)
    return first


def _unfilter(kinds, rows, bpp):
    """Undo the scanline filters (none, sub, up, average, Paeth) row by row."""
    out = np.zeros_like(rows)
    prev = np.zeros(rows.shape[1], np.int64)
    for r, (kind, row) in enumerate(zip(kinds, rows)):
        if kind == 0:
            cur = row
        elif kind == 2:
            cur = (row + prev) & 255
        elif kind == 1:  # each byte adds the one bpp to its left: a running sum per byte of the pixel
            cur = (np.cumsum(row.reshape(-1, bpp), 0) & 255).reshape(-1)
        elif kind in (3, 4):
            cur = row.copy()
            for x in range(cur.size):  # each byte depends on the one bpp to its left
                a = cur[x - bpp] if x >= bpp else 0
                b = prev[x]
                if kind == 3:
                    pred = (a + b) // 2
                else:
                    c = prev[x - bpp] if x >= bpp else 0
                    p = a + b - c
                    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                    pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                cur[x] = (cur[x] + pred) & 255
        else:
            raise PNGError(f"unknown PNG filter type {kind} in row {r}")
        out[r] = cur
        prev = cur
    return out
