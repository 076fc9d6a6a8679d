"""k-means of the embedding's rows: free (restarts) and anchored to the strokes.

Free k-means: Lloyd iterations from scipy (:func:`scipy.cluster.vq.kmeans2`), restarted from
k-means++ seeds and once from given seeds; the restarts run on a random sample of rows (a few
tens of thousands suffice to place k centres), the best few candidates by their objective on
*all* rows are refined on all rows, and the best objective wins (§7.3 keeps the best of 20
runs). Anchored k-means (:func:`anchored_kmeans`) owns each prototype by a label and keeps
stroke rows on their label's prototypes; :func:`stable_anchored_kmeans` also starts from the
previous edit's regions (refinement stability, issue 10). The landmark graphs quantise
features into hundreds of landmarks with their own k-means (:mod:`segapp.graphs.landmark`
says why).
"""

from __future__ import annotations

import warnings
from typing import Callable, Sequence

import numpy as np
import scipy.sparse as sp
from scipy.cluster.vq import kmeans2, vq

from ..cancel import CancelLike, CancelToken
from .labels import STROKE_AGREEMENT, label_sums, stroke_agreement
from .local import local_move
from .sweep import PREVIOUS_GATE

#: Rows used for the k-means restarts on large images.
KMEANS_SAMPLE = 20_000


def nearest_prototypes(X: np.ndarray, centres: np.ndarray, *, rows: np.ndarray | None = None,
                       barred: np.ndarray | None = None) -> np.ndarray:
    """Index of each row's nearest prototype, ``argmin_j ‖x − c_j‖² = argmin_j ‖c_j‖² − 2 xᵀc_j``.

    ``barred`` (len(rows) × p, with ``rows``): prototypes those rows may not join. The row's
    own ``‖x‖²`` is the same for every j and is dropped: the distances are one (p × m)·(m × N)
    product laid out p × N, and the argmin a running minimum over the p rows of that (a few
    contiguous passes; numpy's argmin along the short axis of an N × p array costs ~4× more,
    :func:`scipy.cluster.vq.vq` ~2× on the 24K-row samples here). The expanded form rounds
    differently from ``Σ (x − c)²`` by ~1e-16 (‖x‖² + ‖c‖²), which can only change the
    nearest prototype of a row equidistant from two to that precision. Ties go to the first.
    """
    D = (-2.0 * centres) @ X.T
    D += np.einsum("ij,ij->i", centres, centres)[:, None]
    if rows is not None:
        D[:, rows] = np.where(barred.T, np.inf, D[:, rows])
    return _argmin_rows(D)


def _argmin_rows(D: np.ndarray) -> np.ndarray:
    """Row index of the smallest entry of each column of D (p × N), ties to the first, NaN
    never (a prototype seeded from an empty region).

    A running minimum: where row j is strictly smaller than the rows before it, j is larger
    than the index kept so far, so ``max(kept, j·[row j smaller])`` updates it without a
    masked store (masked stores cost ~10× a comparison on 24K entries).
    """
    p, N = D.shape
    best = np.where(np.isnan(D[0]), np.inf, D[0])   # a NaN is never nearest (as in vq)
    nearest = np.zeros(N, np.min_scalar_type(max(p - 1, 0)))
    smaller = np.empty(N, bool)
    step = np.empty_like(nearest)
    for j in range(1, p):
        np.less(D[j], best, out=smaller)
        np.fmin(best, D[j], out=best)
        np.multiply(smaller, nearest.dtype.type(j), out=step)
        np.maximum(nearest, step, out=nearest)
    return nearest


def _objective(U: np.ndarray, centers: np.ndarray) -> tuple[np.ndarray, float]:
    codes, dist = vq(U, centers, check_finite=False)
    return codes, float(np.dot(dist, dist))


def kmeans(U: np.ndarray, k: int, *, seeds: np.ndarray | None = None, restarts: int = 10,
           rng: np.random.Generator | None = None, iterations: int = 20,
           cancel: CancelLike = None) -> np.ndarray:
    """Best-of-``restarts`` k-means of the rows of U; ``seeds`` (k × m) adds one seeded start.

    Returns cluster codes (n,) in 0..k−1. ``cancel`` is checked between restarts.
    """
    check = CancelToken.of(cancel).check

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


def anchored_kmeans(U: np.ndarray, sets: list[np.ndarray], *,
                    weights: np.ndarray | None = None,
                    seeds: np.ndarray | None = None, iterations: int = 50,
                    sample: int = KMEANS_SAMPLE, rng: np.random.Generator | None = None,
                    cancel: CancelLike = None,
                    max_prototypes: int = 4) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """k-means whose clusters belong to labels: stroke rows are fixed to their own label.

    Lloyd's iteration for ``min Σ_i w_i ‖U_i − c_{p(i)}‖²`` over prototypes ``c_p``, each
    owned by one label, under the must-link / cannot-link constraints of the strokes
    (COP-k-means, Wagstaff et al. 2001, with the constraint cliques of FAST-GE §7.3): a row of
    ``sets[a]`` may only join a prototype of label ``a``, every other row joins its nearest
    prototype, and each prototype is the mean of its rows. Each label starts with one
    prototype at its stroke mean (or at ``seeds``, e.g. the previous edit's centres), so the
    result is deterministic, needs no restarts and no cluster ↔ label matching, and a label
    cannot be merged into another's cluster while its strokes are given to a stroke-free area
    (what free k-means + Hungarian matching did when two small labels fell into one cluster).

    A label whose strokes cover two different-looking areas (a cup's rim and its handle) is
    not one cluster: when the nearest prototype of more than ``1 − STROKE_AGREEMENT`` of its
    stroke rows belongs to another label, the label gets one more prototype at the mean of
    those rows, and Lloyd's iteration resumes (at most ``max_prototypes`` per label).

    On more than ``sample`` rows the iteration runs on a uniform sample plus the stroke rows
    (weighted by the sampling rate, so the prototypes estimate the full means); then every row
    goes to its nearest prototype. ``weights`` (one per row; then every row is used) weigh the
    objective (the cluster ensemble's consensus).

    Returns
    -------
    codes : ndarray (n,) int64
        Label index (0..k−1) of every row's nearest prototype (stroke rows included: *not*
        clamped, so the caller can measure how many painted rows their own label claims).
    centres : ndarray (p, m)
        The prototypes (the first ``k`` are one per label, in label order).
    owner : ndarray (p,) int64
        The label index of each prototype.
    """
    check = CancelToken.of(cancel).check

    rng = rng if rng is not None else np.random.default_rng(0)
    n, k = U.shape[0], len(sets)
    if weights is not None or n <= sample:
        rows = np.arange(n)
        w = np.ones(n) if weights is None else np.asarray(weights, dtype=float)
        fixed_at = np.full(n, -1)
        for a, S in enumerate(sets):
            fixed_at[S] = a
    else:
        per_label = max(1, sample // (4 * k))
        strokes = [S if len(S) <= per_label else rng.choice(S, per_label, replace=False)
                   for S in sets]
        rows = np.concatenate([rng.choice(n, sample, replace=False)] + strokes)
        w = np.concatenate([np.ones(sample)]
                           + [np.full(len(S), sample / n * len(T) / len(S))
                              for S, T in zip(strokes, sets)])
        fixed_at = np.concatenate([np.full(sample, -1)]
                                  + [np.full(len(S), a) for a, S in enumerate(strokes)])
    X = U[rows]
    fixed = fixed_at >= 0
    if seeds is None:
        centres = np.array([np.average(X[fixed_at == a], axis=0, weights=w[fixed_at == a])
                            for a in range(k)])
    else:
        centres = np.array(seeds, dtype=float)
    owner = np.arange(k)
    labels_of_fixed = fixed_at[fixed]
    best = None
    for _ in range(max_prototypes):
        centres = _lloyd_anchored(X, w, fixed_at, centres, owner, iterations, check)
        wrong = owner[nearest_prototypes(X[fixed], centres)] != labels_of_fixed
        worst = max(np.mean(wrong[labels_of_fixed == a]) for a in range(k))
        if best is not None and worst >= best[0]:
            centres, owner = best[1], best[2]  # another prototype did not help: genuinely mixed
            break
        best = (worst, centres, owner)
        grow = [a for a in range(k) if np.mean(wrong[labels_of_fixed == a]) > 1 - STROKE_AGREEMENT
                and np.count_nonzero(owner == a) < max_prototypes]
        if not grow:
            break
        for a in grow:
            mine = wrong & (labels_of_fixed == a)
            centres = np.vstack([centres, np.average(X[fixed][mine], axis=0,
                                                     weights=w[fixed][mine])])
            owner = np.append(owner, a)
    check()
    nearest, _ = vq(U, centres, check_finite=False)   # one pass over all rows: vq's C loop
    if len(owner) > k:                                 # else prototype j is label j's
        nearest = owner[nearest]
    return nearest.astype(np.int64), centres, owner


def stable_anchored_kmeans(U: np.ndarray, sets: list[np.ndarray], previous: np.ndarray | None,
                           *, objective: Callable[[Sequence[np.ndarray]], Sequence[float]]
                           | None = None,
                           gate: float = PREVIOUS_GATE, rng: np.random.Generator | None = None,
                           cancel: CancelLike = None, keep_better: bool = False,
                           contradicting: np.ndarray | None = None,
                           laplacian: sp.spmatrix | None = None) -> np.ndarray:
    """:func:`anchored_kmeans` from the strokes and, after an edit, from the previous answer.

    ``previous`` (n,) holds the label indices 0..k−1 of the previous edit's answer with the
    new strokes painted in (as :func:`sweep_cut`'s). Its regions' mean embedding rows seed a
    second run (the previous partition's centres, recomputed in the new embedding: the Rayleigh–Ritz
    basis of the eigenvectors may rotate between edits, so the old centres themselves are
    not comparable), and the run with the smaller within-label sum of squares
    ``Σ_a Σ_{i ∈ a} ‖U_i − mean_a‖²`` wins, the stroke-seeded one on ties: Lloyd's iteration
    stops in a local optimum, and which of two nearby optima it reaches should not flip with
    every stroke (refinement stability, issue 10). With ``objective`` (FAST-GE's
    :func:`ratio_cuts`: the objective of each of the partitions it is given, in one pass),
    the previous answer is used only if its objective is at most ``gate`` × that of the
    stroke-seeded run (:data:`PREVIOUS_GATE`). Returns the label index of every row.

    Then, with ``objective``: given ``contradicting`` (the stroke pixels the previous answer
    gave another label) and the data graph's ``laplacian``, the *local move* (the previous
    answer changed to the chosen partition only on the regions that touch such a stroke,
    :func:`~segapp.partition.local.local_move`) replaces the chosen partition where its
    objective is at most the chosen one's; with ``keep_better`` the previous answer itself
    does where its objective is lower still (FAST-GE's objective decides between partitions
    that k-means, a heuristic in the embedding, did not compare).

    The within-label sums of squares are compared through the between-label term:
    ``Σ_a Σ_{i ∈ a} ‖U_i − mean_a‖² = Σ_i ‖U_i‖² − Σ_a ‖Σ_{i ∈ a} U_i‖² / |a|``, the first
    term the same for both, so only the per-label sums matter — and those of the second run
    are the first's moved by the rows whose label changed (a few hundred of 250K on the
    app's sample: the two runs' samples differ).
    """
    chosen = _stable_choice(U, sets, previous, objective, gate, rng, cancel)
    if previous is None or objective is None or not (keep_better or contradicting is not None):
        return chosen
    moved = (chosen if contradicting is None or laplacian is None
             else local_move(previous, chosen, contradicting, laplacian))
    own, cost, cost_moved = objective([previous, chosen, moved])
    if cost_moved <= cost and not np.array_equal(moved, chosen):
        chosen, cost = moved, cost_moved
    if keep_better and own < cost:
        return previous.copy()
    return chosen


def _stable_choice(U: np.ndarray, sets: list[np.ndarray], previous: np.ndarray | None,
                   objective: Callable[[Sequence[np.ndarray]], Sequence[float]] | None,
                   gate: float, rng: np.random.Generator | None,
                   cancel: CancelLike) -> np.ndarray:
    """The stroke-seeded or the previous-seeded run (:func:`stable_anchored_kmeans`)."""
    k = len(sets)
    codes, _, _ = anchored_kmeans(U, sets, rng=rng, cancel=cancel)
    if previous is None:
        return codes
    # The gate's objective reads the whole graph: it is asked last, only when the previous
    # answer's run found a different partition that wins (the same answer as asking first).
    mass_p, sums_p = label_sums(U, previous, k)
    with np.errstate(invalid="ignore", divide="ignore"):   # an empty region: NaN, as .mean()
        seeds = sums_p / mass_p[:, None]
    other, _, _ = anchored_kmeans(U, sets, seeds=seeds, rng=rng, cancel=cancel)
    if np.array_equal(other, codes):
        return codes
    # Both partitions' per-label sums from the previous answer's, moved by the rows whose
    # label differs from it (a few per cent of the rows).
    mass, sums = _moved_sums(U, previous, codes, mass_p, sums_p)
    mass_o, sums_o = _moved_sums(U, codes, other, mass, sums)
    if (_between_ss(mass_o, sums_o) <= _between_ss(mass, sums)
            or stroke_agreement(other, sets).min() < stroke_agreement(codes, sets).min()):
        return codes
    if objective is not None:
        own, fresh = objective([previous, codes])
        if own > gate * fresh:
            return codes
    return other


def _moved_sums(U: np.ndarray, before: np.ndarray, after: np.ndarray, mass: np.ndarray,
                sums: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`~segapp.partition.labels.label_sums` of ``after`` from those of ``before``:
    only the rows that moved."""
    moved = np.flatnonzero(before != after)
    k = len(mass)
    gone_m, gone_s = label_sums(U[moved], before[moved], k)
    come_m, come_s = label_sums(U[moved], after[moved], k)
    return mass - gone_m + come_m, sums - gone_s + come_s


def _between_ss(mass: np.ndarray, sums: np.ndarray) -> float:
    """``Σ_a ‖sums_a‖² / mass_a`` (empty labels add nothing): the part of the within-label
    sum of squares that depends on the partition, with the opposite sign."""
    return float(np.sum(np.einsum("aj,aj->a", sums, sums) / np.maximum(mass, 1.0)))


def _lloyd_anchored(X: np.ndarray, w: np.ndarray, fixed_at: np.ndarray, centres: np.ndarray,
                    owner: np.ndarray, iterations: int, check: Callable[[], None]) -> np.ndarray:
    """Lloyd's iteration with rows of ``fixed_at[i] = a ≥ 0`` restricted to label a's prototypes.

    Laid out for few dimensions and prototypes (m, p ≲ 10) and many rows: the distances
    ``‖c_j‖² − 2 xᵀc_j`` of all rows are one product ``[−2C ‖c‖²]·[X 1]ᵀ`` (p × N), a stroke
    row's distances to the other labels' prototypes are made ∞ (it joins the nearest of its
    own label's, ties to the first), and the weighted sums and masses of all prototypes
    are one product of the assignment's indicator rows with ``[w∘X w]``. About a dozen
    numpy calls per iteration, none per prototype.
    """
    centres = np.array(centres, dtype=float)
    p, N = centres.shape[0], X.shape[0]
    fixed = np.flatnonzero(fixed_at >= 0)
    penalty = np.where(owner[:, None] != fixed_at[fixed][None, :], np.inf, 0.0)   # p × t
    # the sample's stroke rows come last: a slice then, not a gather
    tail = slice(N - fixed.size, N) if fixed.size and fixed[0] == N - fixed.size else fixed
    XA = np.vstack([X.T, np.ones(N)])                        # (m + 1) × N
    WA = np.hstack([w[:, None] * X, w[:, None]])             # N × (m + 1)
    prototype = np.arange(p, dtype=np.min_scalar_type(max(p - 1, 0)))[:, None]
    member = np.empty((p, N))
    CA = np.empty((p, X.shape[1] + 1))                      # [−2C ‖c‖²]
    codes = None
    for _ in range(iterations):
        check()
        np.multiply(centres, -2.0, out=CA[:, :-1])
        np.einsum("ij,ij->i", centres, centres, out=CA[:, -1])
        D = CA @ XA
        D[:, tail] += penalty
        new = _argmin_rows(D)
        if codes is not None and np.array_equal(new, codes):
            break
        codes = new
        np.equal(codes[None, :], prototype, out=member)
        sums = member @ WA                                   # p × (m + 1): Σ w x, Σ w
        live = sums[:, -1] > 0                               # an emptied prototype stays put
        centres[live] = sums[live, :-1] / sums[live, -1:]
    return centres
