"""From generalized eigenvectors to labels: embedding, k-means, Cheeger sweep, label matching.

Embedding (FAST-GE Fig. 2, after Lee, Oveis Gharan & Trevisan 2012): each eigenvector ``x``
loses its d-weighted mean (``x ← x − (dᵀx / dᵀ1)·1``, the representative of ``x + c1`` the
generalized Cheeger inequality of §5 is stated for), is scaled to ``xᵀ L_H x = 1``, and each
row of the n × m result is scaled to unit length, so that the points concentrate in k
directions on the sphere; k-means then separates them (§4.6).

k-means: Lloyd iterations from scipy (:func:`scipy.cluster.vq.kmeans2`), restarted from
k-means++ seeds and once from the mean embedding of each label's stroke pixels; the restarts
run on a random sample of rows (a few tens of thousands suffice to place k centres), the best
few candidates by their objective on *all* rows are refined on all rows, and the best
objective wins (§7.3 keeps the best of 20 runs).

Cheeger sweep (k = 2, §4.6): order the vertices by the eigenvector and take the prefix S that
minimises ``cut_G(S) / cut_H(S)``; all n − 1 cuts are evaluated in O(|E| + n log n) with
difference arrays, and the constraint cliques' cuts in closed form from per-label prefix sums
(``cut(S) = c Σ_{a,b} s_a(S) (s_b − s_b(S))`` over the relevant label pairs).

Label matching: clusters are matched to the user's labels by the Hungarian method
(:func:`scipy.optimize.linear_sum_assignment`) on the count of each label's stroke pixels in
each cluster, so label 3's strokes come out as label 3.
"""

from __future__ import annotations

import warnings
from typing import Callable

import numpy as np
import scipy.sparse as sp
from scipy.cluster.vq import kmeans2, vq
from scipy.optimize import linear_sum_assignment

from .constraints import Constraints
from .errors import Cancelled
from .pencil import Pencil

#: Rows used for the k-means restarts on large images.
KMEANS_SAMPLE = 20_000


def embed(X: np.ndarray, pencil: Pencil) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """FAST-GE embedding (Fig. 2).

    Returns the row-normalised ``U`` (n × m), the row norms ``l`` and the column-normalised
    vectors before row normalisation (steps 1–7; what the heatmaps show).
    """
    X = pencil.project(np.asarray(X, dtype=np.float64))
    norms = np.sqrt(np.maximum(np.einsum("ij,ij->j", X, pencil.B(X)), np.finfo(float).tiny))
    X = X / norms
    lengths = np.sqrt(np.einsum("ij,ij->i", X, X))
    U = X / np.where(lengths > 0, lengths, 1.0)[:, None]
    return U, lengths, X


def _objective(U: np.ndarray, centers: np.ndarray) -> tuple[np.ndarray, float]:
    codes, dist = vq(U, centers, check_finite=False)
    return codes, float(np.dot(dist, dist))


def kmeans(U: np.ndarray, k: int, *, seeds: np.ndarray | None = None, restarts: int = 10,
           rng: np.random.Generator | None = None, iterations: int = 20,
           cancel: Callable[[], bool] | None = None) -> np.ndarray:
    """Best-of-``restarts`` k-means of the rows of U; ``seeds`` (k × m) adds one seeded start.

    Returns cluster codes (n,) in 0..k−1. ``cancel`` is checked between restarts.
    """
    def check() -> None:
        if cancel is not None and cancel():
            raise Cancelled("solve cancelled")

    rng = rng if rng is not None else np.random.default_rng(0)
    n = U.shape[0]
    sample = U if n <= KMEANS_SAMPLE else U[rng.choice(n, KMEANS_SAMPLE, replace=False)]
    candidates = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # kmeans2 warns when a cluster empties; we compare objectives
        if seeds is not None:
            c, _ = kmeans2(sample, np.asarray(seeds, float), iter=iterations, minit="matrix",
                           check_finite=False)
            candidates.append(c)
        for _ in range(restarts):
            check()
            c, _ = kmeans2(sample, k, iter=iterations, minit="++", seed=rng, check_finite=False)
            candidates.append(c)
        # Rank on the sample (ranking on all rows cost one full pass per candidate).
        scored = sorted(candidates, key=lambda c: _objective(sample, c)[1])[:3]
        best_codes, best_obj = None, np.inf
        for c in scored:
            check()
            if n > sample.shape[0]:
                c, _ = kmeans2(U, c, iter=5, minit="matrix", check_finite=False)
            codes, obj = _objective(U, c)
            if obj < best_obj:
                best_codes, best_obj = codes, obj
    return best_codes


def match_labels(codes: np.ndarray, sets: list[np.ndarray], label_ids: tuple[int, ...],
                 k: int) -> np.ndarray:
    """Map cluster codes 0..k−1 to the user's label ids by maximum stroke overlap (Hungarian).

    ``sets[a]`` holds the pixels of the strokes of label ``label_ids[a]``.
    """
    overlap = np.zeros((k, len(sets)))
    for a, S in enumerate(sets):
        overlap[:, a] = np.bincount(codes[S], minlength=k)[:k]
    rows, cols = linear_sum_assignment(overlap, maximize=True)
    lut = np.zeros(k, np.int32)
    ids = np.asarray(label_ids)
    lut[rows] = ids[cols]
    unmatched = np.setdiff1d(np.arange(k), rows)
    if unmatched.size:  # more clusters than labels: give each the label it overlaps most
        lut[unmatched] = ids[np.argmax(overlap[unmatched], axis=1)]
    return lut[codes]


def sweep_cut(x: np.ndarray, pencil: Pencil, constraints: Constraints | None) -> np.ndarray:
    """Cheeger sweep (§4.6): boolean mask of the best prefix of the vertices sorted by ``x``.

    Minimises ``cut_G(S) / cut_H(S)`` with ``G = G_D + Ĝ_ML`` and ``H = K/n + Ĝ_CL``.
    """
    n = x.shape[0]
    order = np.argsort(x, kind="stable")
    pos = np.empty(n, np.int64)
    pos[order] = np.arange(n)
    # Data-graph cut of every prefix: an edge (u, v) with pos[u] < pos[v] is cut by the
    # prefixes of length pos[u]+1 … pos[v].
    W = sp.triu(-pencil.L, k=1).tocoo()
    pu, pv = pos[W.row], pos[W.col]
    lo, hi = np.minimum(pu, pv), np.maximum(pu, pv)
    diff = np.zeros(n + 1)
    np.add.at(diff, lo + 1, W.data)
    np.add.at(diff, hi + 1, -W.data)
    cut_g = np.cumsum(diff)[1:n]  # prefix lengths 1 … n−1
    d = pencil.degrees
    vol_s = np.cumsum(d[order])[: n - 1]
    vol = d.sum()
    cut_h = vol_s * (vol - vol_s) / (vol * n)
    if constraints is not None:
        c = constraints.scale
        u = constraints.weights
        prefix = np.zeros((n - 1, constraints.k))
        for a, S in enumerate(constraints.sets):
            col = np.zeros(n)
            col[pos[S]] = u[S]
            prefix[:, a] = np.cumsum(col)[: n - 1]
        totals = np.array([u[S].sum() for S in constraints.sets])
        rest = totals[None, :] - prefix
        # ML: pairs of the same label split; CL: pairs of different labels split.
        within = np.einsum("ia,ia->i", prefix, rest)
        across = prefix.sum(1) * rest.sum(1) - within
        cut_g = cut_g + c * within
        cut_h = cut_h + c * across
    ratio = cut_g / np.maximum(cut_h, np.finfo(float).tiny)
    best = int(np.argmin(ratio)) + 1
    mask = np.zeros(n, bool)
    mask[order[:best]] = True
    return mask
