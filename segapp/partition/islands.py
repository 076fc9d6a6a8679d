"""Small islands of a label far from its strokes, given to what surrounds them."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy import ndimage as ndi

_FOUR = ndi.generate_binary_structure(2, 1)


def absorb_islands(labels: np.ndarray, shape: tuple[int, int], sets: Sequence[np.ndarray],
                   label_ids: Sequence[int], max_pixels: int,
                   posteriors: np.ndarray | None = None, keep: float = 2.0) -> np.ndarray:
    """Labels with every small stroke-free island given to its nearest other label.

    An island is a 4-connected component of one label that holds none of that label's
    painted pixels and at most ``max_pixels`` pixels; its pixels take the label of the
    nearest pixel outside every island (Euclidean). Components with strokes are kept
    whole, so every painted label keeps its painted pixels' component.
    """
    L = np.asarray(labels).reshape(shape)
    drop = np.zeros(shape, bool)
    for a, lid in enumerate(label_ids):
        comp, n = ndi.label(L == lid, structure=_FOUR)
        if n <= 1:
            continue
        sizes = np.bincount(comp.ravel(), minlength=n + 1)
        held = np.zeros(n + 1, bool)
        held[comp.ravel()[np.asarray(sets[a])]] = True
        small = (sizes <= max_pixels) & ~held
        small[0] = False
        if posteriors is not None and small.any():
            mean = (np.bincount(comp.ravel(), weights=posteriors[:, a], minlength=n + 1)
                    / np.maximum(sizes, 1))
            small &= mean < keep
        if small.any():
            drop |= small[comp]
    if not drop.any() or drop.all():
        return labels
    idx = ndi.distance_transform_edt(drop, return_distances=False, return_indices=True)
    out = L[tuple(idx)]
    return out.reshape(np.shape(labels)).astype(np.asarray(labels).dtype, copy=False)
