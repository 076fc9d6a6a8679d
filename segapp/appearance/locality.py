r"""Where each label is likely to be, from where it was painted: the locality prior of issue 31.

GrabCut (Rother, Kolmogorov, Blake, SIGGRAPH 2004) learns its first object model from every
pixel of a region the person marked, not from the few painted ones, and that region is what
makes its first answer good. segapp has strokes, not a rectangle, so each label's first model
also learns from the unpainted pixels *near its strokes*, each pixel counted for the labels
in proportion to

.. math:: w_a(i) = \frac{K_a(i)^2}{\sum_b K_b(i)}, \qquad
          K_a(i) = \exp\!\Big(-\big(d_a(i) / R\big)^2\Big),

where :math:`d_a(i)` is the Euclidean distance from pixel i to label a's nearest painted pixel
and R = :data:`RADIUS` × the image's larger side (GrabCut's evaluations start the object as
the pixels within a quarter of the image of its stroke). The square over the sum shares a
pixel between the labels near it by their kernels and lets a pixel far from every stroke
count for none. The weights shape only what the colour models learn
(:mod:`segapp.methods.fastge`), not the solve: where a label is comes from the pencil.

Measured (docs/quality.md, full size, 20 strokes): with R = 0.25 the first answer fell from
0.480 to 0.439 (GrabCut-dev, every 2nd photo) and from 0.667 to 0.651 (BSDS-dev), strokes
to 90% changed within noise; R = 0.5 was worse still. A disc around the object helps GrabCut,
whose first model would otherwise learn from a few painted pixels and whose cut has no
strokes' reach; FAST-GE's potentials already carry where each label is. So it is off by
default (``locality`` = 0) and stays an option.

Distances are computed on a grid of at most :data:`GRID_CELLS` cells (a painted cell is at
distance 0), so the cost is bounded by a constant, not by the image or the painted pixels:
1–3 ms per label.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy import ndimage as ndi

#: R / the image's larger side.
RADIUS = 0.25
#: Cells of the grid the distances are computed on.
GRID_CELLS = 1 << 16


def locality_weights(shape: tuple[int, int], sets: Sequence[np.ndarray],
                     radius: float = RADIUS) -> np.ndarray:
    """(n, k) weights ``w_a(i)`` of the module doc for an image of ``shape`` (rows, columns)
    whose label a has the painted pixels ``sets[a]`` (flat indices, none empty)."""
    R = radius * max(shape)
    K = np.stack([np.exp(-np.square(stroke_distance(shape, S) / R)).ravel() for S in sets], 1)
    return np.square(K) / np.maximum(K.sum(1, keepdims=True), 1e-30)


def stroke_distance(shape: tuple[int, int], painted: np.ndarray) -> np.ndarray:
    """(rows, columns) float32: each pixel's distance to the nearest of the ``painted`` pixels
    (flat indices), exact on images of up to :data:`GRID_CELLS` pixels and otherwise within
    one cell's diagonal (cells of f × f pixels, f = ⌈√(n / GRID_CELLS)⌉)."""
    h, w = shape
    f = max(1, math.ceil(math.sqrt(h * w / GRID_CELLS)))
    cells = np.ones((-(-h // f), -(-w // f)), bool)
    r, c = np.divmod(np.asarray(painted, np.int64), w)
    cells[r // f, c // f] = False
    d = (ndi.distance_transform_edt(cells) * f).astype(np.float32)
    return np.repeat(np.repeat(d, f, 0), f, 1)[:h, :w]
