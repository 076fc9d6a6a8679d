"""Label maps as indexed (palette) PNGs: pixel value = label id, shown in the schema's colours.

A training pipeline reads the indices (``np.asarray(Image.open(path))`` gives the label ids,
as PASCAL VOC's masks do); an image viewer shows the labels' colours.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np
from PIL import Image

from ..editing.schema import LabelSchema
from ..inputs.checks import check_label_map
from ..io.render import MAX_LABEL_ID, default_colors

__all__ = ["indexed_png", "palette_of"]


def palette_of(colors: LabelSchema | Mapping[int, tuple[int, int, int]] | None) -> list[int]:
    """A 768-entry palette: index ``i`` the colour of label ``i`` (0 black; ids without a
    colour keep their default colour, :func:`segapp.io.render.default_colors`)."""
    if isinstance(colors, LabelSchema):
        return colors.palette()
    table = default_colors().astype(int).copy()
    for i, c in (colors or {}).items():
        table[int(i)] = c
    return [int(v) for v in table.ravel()]


def indexed_png(labels: np.ndarray,
                colors: LabelSchema | Mapping[int, tuple[int, int, int]] | None = None
                ) -> Image.Image:
    """An ``(H, W)`` label map (ids 0..255) as a palette image ready to save as PNG."""
    lab = check_label_map(labels, None, "an indexed PNG's label map", max_label=MAX_LABEL_ID,
                          keep_dtype=True)
    h, w = lab.shape
    img = Image.frombytes("P", (w, h), np.ascontiguousarray(lab, dtype=np.uint8).tobytes())
    img.putpalette(palette_of(colors))
    return img
