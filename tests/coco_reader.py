"""A COCO RLE reader written from the specification, for the tests (independent of segapp's
encoder): the COCO API's maskApi.c reads a mask column by column (Fortran order) as alternating
runs starting with 0s; rleFrString stores each run length in groups of 5 bits, little end
first, each a character 48 + bits with 32 added while more groups follow; the last group's bit
16 is the sign; from the third run on, the value is the difference from the run two before."""

from __future__ import annotations

import numpy as np


def decode_rle_string(s: str) -> list[int]:
    """COCO's rleFrString, transcribed: counts from the compressed string."""
    counts: list[int] = []
    p = 0
    while p < len(s):
        x, k, more = 0, 0, True
        while more:
            c = ord(s[p]) - 48
            x |= (c & 0x1F) << (5 * k)
            more = bool(c & 0x20)
            p += 1
            k += 1
            if not more and (c & 0x10):
                x |= -1 << (5 * k)
        if len(counts) > 2:
            x += counts[-2]
        counts.append(x)
    return counts


def decode_mask(rle: dict) -> np.ndarray:
    """Counts → mask: alternate runs of 0 and 1, filled column by column (Fortran order)."""
    h, w = rle["size"]
    flat = np.zeros(h * w, bool)
    pos, value = 0, False
    for n in decode_rle_string(rle["counts"]):
        flat[pos:pos + n] = value
        pos += n
        value = not value
    assert pos == h * w
    return flat.reshape((h, w), order="F")
