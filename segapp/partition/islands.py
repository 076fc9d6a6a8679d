"""Small islands of a label away from its strokes, given to the labels around them.

The rounding (Cheeger sweep or k-means, §4.4–4.6 of Cucuringu et al. 2016) labels each
pixel by its row of the embedding alone, so a label can come out as many small far patches:
where a label's colour model claims pixels of a colour that also occurs in another region,
the solve's prior pulls those patches, and the embedding follows. A person never paints
such a patch, and a corrective stroke takes back only the patch it lands on. This step is a
spatial coherence prior on the rounding's answer: a 4-connected component of label a that
holds none of a's painted pixels and at most ``max_pixels`` pixels (an *island*) is given,
pixel by pixel, to the label of the nearest pixel outside every island (Euclidean), unless
its mean posterior ``P(a | colour)`` is at least ``keep`` (FAST-GE passes its solve's
prior): a region whose colours say, beyond doubt, that it is label a (sky between branches)
is still found without a stroke of its own. Components that hold strokes are never touched,
so no painted label vanishes and every painted pixel keeps its label.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy import ndimage as ndi

_FOUR = ndi.generate_binary_structure(2, 1)


def absorb_islands(labels: np.ndarray, shape: tuple[int, int], sets: Sequence[np.ndarray],
                   label_ids: Sequence[int], max_pixels: int,
                   posteriors: np.ndarray | None = None, keep: float = 1.0
                   ) -> tuple[np.ndarray, np.ndarray | None]:
    """Labels with every island given to its nearest other label, and the islands' mask.

    Parameters
    ----------
    labels : ndarray of int, (H·W,) or (H, W)
        The rounding's answer in user ids.
    shape : (H, W)
    sets : sequence of int arrays
        Each label's painted pixels (flat), in the order of ``label_ids``.
    label_ids : sequence of int
    max_pixels : int
        Largest island absorbed.
    posteriors : ndarray (H·W, k), optional
        The labels' colour posteriors in the order of ``label_ids``; an island whose mean
        posterior of its own label is at least ``keep`` is kept.
    keep : float

    Returns
    -------
    labels : ndarray
        Same shape and dtype as ``labels`` (the input itself when nothing is absorbed).
    absorbed : ndarray of bool, (H·W,), or None
        The pixels given to another label; None when there were none.
    """
    L = np.asarray(labels).reshape(shape)
    drop = np.zeros(shape, bool)
    for a, lid in enumerate(label_ids):
        comp, n = ndi.label(L == lid, structure=_FOUR)
        if n <= 1:
            continue
        flat = comp.ravel()
        sizes = np.bincount(flat, minlength=n + 1)
        held = np.zeros(n + 1, bool)
        held[flat[np.asarray(sets[a], dtype=np.int64)]] = True
        small = (sizes <= max_pixels) & ~held
        small[0] = False
        if not small.any():
            continue
        where = np.flatnonzero(small[flat])
        if posteriors is not None:
            # the candidates' pixels only: a column of the whole (n, k) array is a strided
            # read of all of it (5 × 1.1 ms at 250K px)
            mean = (np.bincount(flat[where], weights=posteriors[where, a], minlength=n + 1)
                    / np.maximum(sizes, 1))
            small &= mean < keep
            where = where[small[flat[where]]]
        drop.ravel()[where] = True
    if not drop.any() or drop.all():
        return labels, None
    idx = ndi.distance_transform_edt(drop, return_distances=False, return_indices=True)
    out = L[tuple(idx)].reshape(np.shape(labels)).astype(np.asarray(labels).dtype, copy=False)
    return out, drop.ravel()
