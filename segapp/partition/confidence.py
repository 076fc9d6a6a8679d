"""Confidence (issue 22): how far each pixel sits from the rounding's decision boundary,
relative to how far the painted pixels sit (:func:`rounding_confidence`)."""

from __future__ import annotations

import numpy as np

from .labels import label_sums


def rounding_confidence(codes: np.ndarray, V: np.ndarray, sets: list[np.ndarray]) -> np.ndarray:
    """Per-vertex confidence in [0, 1]: distance to the rounding's boundary, painted = 1.

    For two labels whose regions are a threshold of the embedding's vector ``x = V[:, 0]``
    (the Cheeger sweep, and its re-rounding by the potentials, which are affine in x), the
    boundary is the threshold ``t`` midway between the two sides, and ``h_i = |x_i − t|``.
    Otherwise (k-means on the row-normalised embedding ``U``, FAST-GE Fig. 2), with ``c_a``
    the mean of ``U`` over label a's region (the k-means centres at a fixed point of Lloyd's
    iteration) and ``a`` the pixel's label, ``h_i`` is the distance from ``u_i`` to the
    nearest bisector ``{u : ‖u − c_a‖ = ‖u − c_b‖}``, b ≠ a, signed positive on a's side:
    ``h_i = min_b (‖u_i − c_b‖² − ‖u_i − c_a‖²) / (2 ‖c_a − c_b‖)``.

    Each label's ``h`` is divided by its median over the label's painted vertices (the
    pixels the user is sure of sit there) and clipped to [0, 1]; painted vertices are 1.
    0 marks the boundary itself (or a vertex on the wrong side of it), 1 a vertex as far
    from it as the strokes. ``codes``: label indices 0..k−1 (before clamping).
    """
    V = np.asarray(V, dtype=np.float64)
    n, k = codes.shape[0], len(sets)
    h = None
    if k == 2:
        x = V[:, 0]
        lo0, hi0 = (x[codes == 0].min(), x[codes == 0].max()) if np.any(codes == 0) else (0, 0)
        lo1, hi1 = (x[codes == 1].min(), x[codes == 1].max()) if np.any(codes == 1) else (0, 0)
        if np.all(codes == codes[0]):
            h = np.ones(n)
        elif hi0 <= lo1:
            h = np.abs(x - (hi0 + lo1) / 2)
        elif hi1 <= lo0:
            h = np.abs(x - (hi1 + lo0) / 2)
    if h is None:
        # single precision: a confidence map needs no more, and at 0.5 MP the n × k passes
        # are memory-bound
        W = V.astype(np.float32)
        if W.shape[1] > 1:
            W /= np.maximum(np.sqrt(np.einsum("ij,ij->i", W, W)), 1e-30)[:, None]
        mass, sums = label_sums(W, codes, k)
        C = sums / np.maximum(mass, 1.0)[:, None]
        cc = np.einsum("aj,aj->a", C, C)
        sep = np.sqrt(np.maximum(cc[:, None] - 2 * C @ C.T + cc[None, :], 0.0))   # k × k
        # ‖u − c_b‖² − ‖u − c_a‖² = D_b − D_a with D_b = ‖c_b‖² − 2 u·c_b (‖u‖² cancels)
        D = W @ (-2.0 * C.T).astype(np.float32)
        D += cc.astype(np.float32)[None, :]                                    # n × k
        D -= D[np.arange(n), codes][:, None]
        D *= (0.5 / np.maximum(sep, 1e-30)).astype(np.float32)[codes]
        D[np.arange(n), codes] = np.inf
        D[:, mass == 0] = np.inf
        h = D.min(axis=1)
        h[~np.isfinite(h)] = 1.0
    ref = np.ones(k)
    for a, S in enumerate(sets):
        r = float(np.median(h[S])) if len(S) else 0.0
        if not r > 0:
            mine = codes == a
            r = float(h[mine].max()) if np.any(mine) else 1.0
        ref[a] = r if r > 0 else 1.0
    conf = np.clip(h / ref[codes], 0.0, 1.0)
    for S in sets:
        conf[S] = 1.0
    return conf.astype(np.float32)
