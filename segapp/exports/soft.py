"""Confidence and soft masks as 16-bit PNGs (0..65535 for 0..1).

The confidence of a pixel is :attr:`segapp.Segmentation.confidence`: how far it sits from the
rounding's decision boundary, relative to the painted pixels (1 at the strokes and deep inside
a region, 0 on the boundary). A *soft mask* reads it as a probability of each label: a pixel
of label a with confidence c gives a the share ``(1 + c) / 2`` and each of the other k − 1
labels ``(1 − c) / (2 (k − 1))``, so the k soft masks sum to 1 at every pixel, their own label
has the most everywhere (the hard mask is their arg-max), and on a boundary it has one half.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from PIL import Image

from ..errors import InvalidInputError
from ..io.render import _row_bands

__all__ = ["unit_png", "soft_mask", "soft_masks", "SCALE"]

#: A 16-bit PNG's full scale: value / SCALE is the share in [0, 1].
SCALE = 65535


def unit_png(values: np.ndarray) -> Image.Image:
    """An ``(H, W)`` array in [0, 1] as a 16-bit grey image (always 16 bits, whatever the
    values; NaN as 0). Band by band: the app's export thread must not hold the GIL for long
    (:data:`segapp.io.render.BAND_PIXELS`)."""
    v = np.asarray(values)
    if v.ndim != 2:
        raise InvalidInputError(f"a soft mask must be (H, W), got shape {v.shape}")
    q = np.empty(v.shape, np.uint16)
    for r0, r1 in _row_bands(*v.shape):
        band = np.nan_to_num(v[r0:r1].astype(np.float32), nan=0.0)
        q[r0:r1] = np.rint(np.clip(band, 0.0, 1.0) * SCALE)
    return Image.fromarray(q)  # mode "I;16": saved as a 16-bit PNG


def soft_mask(labels: np.ndarray, confidence: np.ndarray, label: int, k: int) -> np.ndarray:
    """Label ``label``'s soft mask among ``k`` labels (see the module docstring), float32;
    computed band by band, as :func:`unit_png`."""
    lab = np.asarray(labels)
    conf = np.asarray(confidence)
    if conf.shape != lab.shape:
        raise InvalidInputError(f"confidence {conf.shape} and labels {lab.shape} differ in size")
    out = np.empty(lab.shape, np.float32)
    for r0, r1 in _row_bands(*lab.shape):
        c = np.clip(np.nan_to_num(conf[r0:r1].astype(np.float32), nan=0.0), 0.0, 1.0)
        other = (1.0 - c) / (2.0 * (k - 1)) if k > 1 else np.zeros_like(c)
        out[r0:r1] = np.where(lab[r0:r1] == label, (1.0 + c) / 2.0, other)
    return out


def soft_masks(labels: np.ndarray, confidence: np.ndarray,
               label_ids: Sequence[int]) -> dict[int, np.ndarray]:
    """Each label's :func:`soft_mask`, float32 in [0, 1]; they sum to 1 at every pixel."""
    return {int(i): soft_mask(labels, confidence, int(i), len(label_ids)) for i in label_ids}
