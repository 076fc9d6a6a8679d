"""Degenerate roundings (issue 22): a label cut off with little more than its painted pixels.

A label painted with little mass (a click: one or two pixels at the working resolution) is
held by no must-link clique, and cutting it off alone is often FAST-GE's cheapest cut (the
shrinking bias of cut objectives). A label left with little more than its painted pixels is
re-rounded (:func:`reround_degenerate`: the sweep again with the strokes' masses evened out,
or the strokes' potentials, which the embedding carries,
:func:`~segapp.partition.embedding.embedding_potentials`); where no label is degenerate
FAST-GE's rounding stands.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp
from scipy.ndimage import minimum_filter1d
from scipy.sparse.csgraph import connected_components

from ..strokes.constraints import Constraints
from .embedding import embedding_potentials
from .sweep import SWEEP_MIN_WINDOW, SWEEP_WINDOW, sweep_ratios

if TYPE_CHECKING:  # annotations only (see segapp.partition)
    from ..solve.pencil import Pencil


def degenerate_labels(codes: np.ndarray, sets: list[np.ndarray]) -> list[int]:
    """Labels whose region holds little more than their own painted pixels.

    Label a is degenerate in a partition ``codes`` (label indices 0..k−1) when fewer than
    ``√n`` of its pixels are unpainted: less than a one-pixel-wide line across a square image
    of n pixels, a region on the scale of the seed, not of the image. (Measured on the ring
    scenes of issue 22: the cut-off regions hold 0–30 unpainted pixels, the right ones
    thousands.) O(n).
    """
    n, k = codes.shape[0], len(sets)
    counts = np.bincount(codes, minlength=k)           # minus the painted pixels (disjoint sets)
    for S in sets:
        counts -= np.bincount(codes[S], minlength=k)
    return [a for a in range(k) if counts[a] < np.sqrt(n)]


def _components(G: sp.csr_matrix, rows: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """Connected-component index of every vertex of ``G`` restricted to the entries ``keep``
    (one flag per stored entry; ``rows`` the entries' row indices). O(nnz), no sorting."""
    n = G.shape[0]
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows[keep], minlength=n), out=indptr[1:])
    A = sp.csr_matrix((np.ones(int(np.count_nonzero(keep))), G.indices[keep], indptr),
                      shape=G.shape)
    return connected_components(A, directed=False)[1]


def nondegenerate_sweep(x: np.ndarray, pencil: Pencil, constraints: Constraints
                        ) -> np.ndarray | None:
    """The sweep of ``x`` re-rounding a degenerate two-label answer, independent of seed size.

    Over the prefixes S of the order of ``x`` that hold every painted pixel of one label and
    none of the other's, FAST-GE's ratio (:func:`sweep_ratios`) is

    .. math:: \\frac{cut_D(S)}{vol(S)\\,vol(V∖S)/(vol\\,n) + c\\,s_1 s_2},

    its cannot-link term the constant ``c s_1 s_2`` (``s_a``: label a's stroke mass Σ u).
    For big strokes that constant swamps the volume term and the ratio is the plain minimum
    cut, which cuts a seed off; for a one-pixel seed it does not — the answer depends on the
    seeds' size. Here every label's strokes weigh as *one* pixel of their mean weight,
    ``s_a → s_a / |S_a|``, so a click and a disc at the same place meet the same objective,
    and the minimum is taken over the prefixes with at least ``√n`` unpainted pixels on each
    side (the scale of :func:`degenerate_labels`), among the local minima of the ratio
    (over ±w positions, as :func:`sweep_cut`'s candidates) away from the ends of that range
    — a minimum at an end is the shrinking bias again, one step above the limit — or, if
    there is none, over the whole range. Returns the prefix mask, or None when no prefix
    qualifies.
    """
    n = x.shape[0]
    ratio_d, order = sweep_ratios(x, pencil, None)
    d = pencil.degrees
    vol_s = np.cumsum(d[order])[: n - 1]
    vol = d.sum()
    volume = vol_s * (vol - vol_s) / (vol * n)
    cut_g = ratio_d * np.maximum(volume, np.finfo(float).tiny)
    u = constraints.weights
    unit = [u[S].sum() / max(len(S), 1) for S in constraints.sets]
    ratio = cut_g / (volume + constraints.scale * unit[0] * unit[1])
    pos = np.empty(n, np.int64)
    pos[order] = np.arange(n)
    painted = np.zeros(n, bool)
    for S in constraints.sets:
        painted[S] = True
    inside = np.cumsum(~painted[order], dtype=np.int64)[: n - 1]      # unpainted in the prefix
    ok = (inside >= np.sqrt(n)) & (np.count_nonzero(~painted) - inside >= np.sqrt(n))
    separates = np.zeros(n - 1, bool)
    p0, p1 = pos[constraints.sets[0]], pos[constraints.sets[1]]
    for first, second in ((p0, p1), (p1, p0)):
        lo, hi = first.max() + 1, second.min()   # prefix lengths holding all of `first` only
        if lo <= hi:
            separates[max(lo, 1) - 1:min(hi, n - 1)] = True
    ok &= separates
    if not np.any(ok):
        return None
    w = max(1, int(SWEEP_WINDOW * n), min(SWEEP_MIN_WINDOW, n // 10))
    r = np.where(ok, ratio, np.inf)
    allowed = np.flatnonzero(ok)
    local = ok & (r <= minimum_filter1d(r, 2 * w + 1, mode="nearest"))
    local[: allowed[0] + w + 1] = False
    local[max(allowed[-1] - w, 0):] = False
    pick = local if np.any(local) else ok
    best = int(np.flatnonzero(pick)[np.argmin(ratio[pick])])
    mask = np.zeros(n, bool)
    mask[order[: best + 1]] = True
    return mask


def reround_degenerate(codes: np.ndarray, V: np.ndarray, pencil: Pencil,
                       constraints: Constraints) -> np.ndarray:
    """Re-round a label whose region holds little more than its own pixels (issue 22).

    Why: a one-pixel cannot-link constraint makes cutting the pixel off alone the cheapest
    ratio cut (its degree against the cannot-link weight ``c d_i d_j``, while a boundary
    with a gap costs more the larger the image: the shrinking bias of cut objectives); a 5×5
    disc is cut off the same way once the gap costs more than the disc's perimeter.

    Only a label degenerate as a whole is re-rounded (:func:`degenerate_labels`). A click cut
    off alone while its label holds a region elsewhere keeps FAST-GE's rounding: a global
    re-sweep would move every other boundary, and the potentials' zone of a click among
    many strokes can flood half the image (GrabCut 106024, click 16 of the click protocol:
    IoU 0.861 → 0.162 when such clicks were re-rounded too).

    1. Two labels: the embedding's vector ``V[:, 0]`` is swept again
       (:func:`nondegenerate_sweep`): the same order and FAST-GE's ratio, with every
       label's strokes weighing as one pixel (so the seeds' size does not matter), over the
       prefixes that separate the strokes and leave at least ``√n`` unpainted pixels on
       each side.
    2. A label still degenerate (k ≥ 3, or no prefix qualifies) gets the pixels whose
       largest potential is its label's (:func:`embedding_potentials`: the random-walker
       rule ``argmax_b φ_b(i) = a``) and that are connected to its strokes through such
       pixels; pixels painted with another label never change. A region the potentials also hold to the painted pixels (a small
       object outlined by a strong edge) stays as it was.

    Where nothing is degenerate, FAST-GE's rounding stands. Returns the new codes (a copy
    when anything changed); ``codes`` are label indices 0..k−1.
    """
    sets = constraints.sets
    found = degenerate_labels(codes, sets)
    if not found:
        return codes
    if len(sets) == 2:
        mask = nondegenerate_sweep(np.asarray(V, np.float64)[:, 0], pencil, constraints)
        if mask is not None:
            swept = mask.astype(np.int64)
            codes = swept ^ 1 if np.mean(mask[sets[0]]) >= 0.5 else swept
            found = degenerate_labels(codes, sets)
            if not found:
                return codes
    Phi = embedding_potentials(V, sets)
    best = np.argmax(Phi, axis=1)
    painted_at = np.full(codes.shape[0], -1, np.int64)
    for a, S in enumerate(sets):
        painted_at[S] = a
    G = sp.csr_matrix(pencil.L)
    rows = np.repeat(np.arange(codes.shape[0], dtype=G.indices.dtype), np.diff(G.indptr))
    codes = codes.copy()
    for a in found:
        mine = (best == a) & ((painted_at < 0) | (painted_at == a))
        mine[sets[a]] = True
        zone = _components(G, rows, (G.indices > rows) & mine[rows] & mine[G.indices])
        zone[~mine] = -1
        ids = np.unique(zone[sets[a]])
        codes[np.isin(zone, ids[ids >= 0])] = a
    return codes


