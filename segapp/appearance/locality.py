r"""Where each label is likely to be, from where it was painted: the locality priors of issue 31.

Two uses of one distance, each label's distance :math:`d_a(i)` from pixel i to its nearest
painted pixel:

- **reach** (:func:`reach_posteriors`, FastGE option ``reach``, off by default): the prior the
  solve adds for label a at pixel i is its colour posterior weighted by how near the label's
  strokes the pixel is,

  .. math:: \pi_a(i) = \frac{P_a(i)\, e^{-d_a(i)/R}}{\sum_b P_b(i)\, e^{-d_b(i)/R}},
            \qquad R = \text{reach} \times \text{the image's larger side},

  Bayes' rule with a prior on where each label is that decays with the distance to its
  strokes (GrabCut's "the object is near where it was marked", Rother, Kolmogorov, Blake,
  SIGGRAPH 2004, made soft and k-way). A colour of label a far from a's strokes is no longer
  pulled to a as strongly as one beside them: a cannon ball's stone colour stops claiming the
  wall across the courtyard, while sky between branches a few strokes' widths from a sky
  stroke is still found. The two-label sweep's data term keeps the colour posteriors alone
  (where a label lies is already in the eigenvector's order).
- **locality** (:func:`locality_weights`, option ``locality``, off): where the colour models
  *learn*, below.

Reach: the scan is beside the option's declaration (:mod:`segapp.methods.fastge`) and in
docs/quality.md. It is off by default: on photos R = 0.1 × the larger side lowered BSDS-dev's
NoC@90 from 14.62 to 13.75, but where the colours are ambiguous (noise) the weights turn the
prior into "the nearest stroke's label": on the noisy three-region image of issue 10 (noise
35/255, short strokes) the answer fell from 99.6% to 66% correct pixels.

Locality: GrabCut (Rother, Kolmogorov, Blake, SIGGRAPH 2004) learns its first object model from every
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

#: Locality's R / the image's larger side.
RADIUS = 0.25
#: Default ``reach`` (off: module doc, "Reach").
REACH = 0.0
#: Cells of the grid the distances are computed on.
GRID_CELLS = 1 << 16


def locality_weights(shape: tuple[int, int], sets: Sequence[np.ndarray],
                     radius: float = RADIUS) -> np.ndarray:
    """(n, k) weights ``w_a(i)`` of the module doc for an image of ``shape`` (rows, columns)
    whose label a has the painted pixels ``sets[a]`` (flat indices, none empty)."""
    R = radius * max(shape)
    K = np.stack([np.exp(-np.square(stroke_distance(shape, S) / R)).ravel() for S in sets], 1)
    return np.square(K) / np.maximum(K.sum(1, keepdims=True), 1e-30)


def reach_posteriors(posteriors: np.ndarray, shape: tuple[int, int],
                     sets: Sequence[np.ndarray], reach: float) -> np.ndarray:
    """(n, k): the colour ``posteriors`` (n, k, rows summing to 1, columns in the order of
    ``sets``) weighted by :math:`e^{-d_a(i)/R}` and renormalised (module doc, "reach"), for an
    image of ``shape`` whose label a has the painted pixels ``sets[a]``; ``reach`` > 0.

    The weights are taken relative to each pixel's nearest label (``d_a − min_b d_b``), which
    leaves the ratio unchanged and keeps the largest weight of a row at 1, so no row
    underflows however far the pixel is from every stroke."""
    posteriors = np.asarray(posteriors)
    # weights per grid cell (at most GRID_CELLS × k exponentials), gathered per pixel once:
    # an edit's budget is a few tenths of a second (63 ms at 1.1 MP, 122 ms per pixel)
    cells = [_cell_distance(shape, S) for S in sets]
    f, columns = cells[0][1], cells[0][0].shape[1]
    K = np.stack([d.ravel() for d, _ in cells], 1)
    K -= K.min(1, keepdims=True)
    K /= np.float32(-reach * max(shape))
    np.exp(K, out=K)
    h, w = shape
    cell = ((np.arange(h) // f)[:, None] * columns + (np.arange(w) // f)[None, :]).ravel()
    P = posteriors * K[cell]
    total = P.sum(1)
    bad = ~(total > 0)        # a colour no near label explains: its colour posteriors stay
    total[bad] = 1.0
    P /= total[:, None]
    if bad.any():
        P[bad] = posteriors[bad]
    return P


def stroke_distance(shape: tuple[int, int], painted: np.ndarray) -> np.ndarray:
    """(rows, columns) float32: each pixel's distance to the nearest of the ``painted`` pixels
    (flat indices), exact on images of up to :data:`GRID_CELLS` pixels and otherwise within
    one cell's diagonal (cells of f × f pixels, f = ⌈√(n / GRID_CELLS)⌉)."""
    d, f = _cell_distance(shape, painted)
    h, w = shape
    return np.repeat(np.repeat(d, f, 0), f, 1)[:h, :w]


def _cell_distance(shape: tuple[int, int], painted: np.ndarray) -> tuple[np.ndarray, int]:
    """The distances of :func:`stroke_distance` per grid cell (float32) and the cell side f."""
    h, w = shape
    f = max(1, math.ceil(math.sqrt(h * w / GRID_CELLS)))
    cells = np.ones((-(-h // f), -(-w // f)), bool)
    r, c = np.divmod(np.asarray(painted, np.int64), w)
    cells[r // f, c // f] = False
    return (ndi.distance_transform_edt(cells) * f).astype(np.float32), f
