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

Refinement stability (issue 10): given the previous edit's answer, the sweep keeps the cut
closest to it among the near-best ones (:func:`sweep_cut`) and anchored k-means also starts
from its regions (:func:`stable_anchored_kmeans`), so that a stroke does not flip the answer
between cuts of nearly equal cost.

Degenerate roundings (issue 22): a label painted with little mass (a click: one or two
pixels at the working resolution) is held by no must-link clique, and cutting it off alone is
often FAST-GE's cheapest cut (the shrinking bias of cut objectives). A label left with little
more than its painted pixels is re-rounded (:func:`reround_degenerate`: the sweep again with
the strokes' masses evened out, or the strokes' potentials, which the embedding carries,
:func:`embedding_potentials`); where no label is degenerate FAST-GE's rounding stands.

Confidence (issue 22): how far each pixel sits from the rounding's decision boundary, relative
to how far the painted pixels sit (:func:`rounding_confidence`).

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
from scipy.ndimage import minimum_filter1d
from scipy.optimize import linear_sum_assignment
from scipy.sparse.csgraph import connected_components

from ..cancel import CancelLike, CancelToken
from ..strokes.constraints import Constraints
from ..solve.pencil import Pencil

#: Rows used for the k-means restarts on large images.
KMEANS_SAMPLE = 20_000

#: Share of a label's painted pixels a constrained method's partition must give back to that
#: label before the painted pixels are set to it (the user-trust invariant, issue 10): below
#: it the strokes are not separated by the embedding and the method tries harder (FAST-GE
#: adds a vector) instead of returning a result that only clamping would make look right.
STROKE_AGREEMENT = 0.999

#: Refinement stability (issue 10): after an edit that adds strokes, the Cheeger sweep keeps
#: the cut closest to the previous answer among the local minima of the cut ratio (over
#: ±SWEEP_WINDOW·n positions of the order) within SWEEP_TOLERANCE × the best ratio. Measured
#: on the dev sets (docs/quality.md): tolerance 1.5–5 and window 0–0.05.
SWEEP_TOLERANCE = 3.0
SWEEP_WINDOW = 0.003
#: ... and over at least ±SWEEP_MIN_WINDOW positions (±n/10 on graphs under 50 vertices): on
#: a small graph ±0.3% is ±1 position, every wiggle of the ratio is then a candidate, and the
#: last digits of the solve decided between them (the long fuzz: warm and cold solves of
#: one edit 20% apart on 532 px).
SWEEP_MIN_WINDOW = 5

#: ... but only while the previous answer (the new strokes painted in) is itself a near-best
#: partition for the new strokes: its ratio cut at most PREVIOUS_GATE × that of the fresh
#: answer. A correction that makes the previous answer a poor cut gets the fresh answer, so
#: a wrong answer is not corrected by creeping (measured on the dev sets, strokes and clicks,
#: with gates 3, 10, 30, 100 and none: docs/quality.md).
PREVIOUS_GATE = 30.0


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
        nearest, _ = vq(X[fixed], centres, check_finite=False)
        wrong = owner[nearest] != labels_of_fixed
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
    nearest, _ = vq(U, centres, check_finite=False)
    return owner[nearest].astype(np.int64), centres, owner


def stable_anchored_kmeans(U: np.ndarray, sets: list[np.ndarray], previous: np.ndarray | None,
                           *, objective: Callable[[np.ndarray], float] | None = None,
                           gate: float = PREVIOUS_GATE, rng: np.random.Generator | None = None,
                           cancel: CancelLike = None) -> np.ndarray:
    """:func:`anchored_kmeans` from the strokes and, after an edit, from the previous answer.

    ``previous`` (n,) holds the label indices 0..k−1 of the previous edit's answer with the
    new strokes painted in (as :func:`sweep_cut`'s). Its regions' mean embedding rows seed a
    second run (the previous partition's centres, recomputed in the new embedding: the Rayleigh–Ritz
    basis of the eigenvectors may rotate between edits, so the old centres themselves are
    not comparable), and the run with the smaller within-label sum of squares
    ``Σ_a Σ_{i ∈ a} ‖U_i − mean_a‖²`` wins, the stroke-seeded one on ties: Lloyd's iteration
    stops in a local optimum, and which of two nearby optima it reaches should not flip with
    every stroke (refinement stability, issue 10). With ``objective`` (FAST-GE's
    :func:`ratio_cut`), the previous answer is used only if its objective is at most
    ``gate`` × that of the stroke-seeded run (:data:`PREVIOUS_GATE`). Returns the label
    index of every row.
    """
    k = len(sets)
    codes, _, _ = anchored_kmeans(U, sets, rng=rng, cancel=cancel)
    if previous is None:
        return codes
    if objective is not None and objective(previous) > gate * objective(codes):
        return codes
    seeds = np.array([U[previous == a].mean(axis=0) for a in range(k)])
    other, _, _ = anchored_kmeans(U, sets, seeds=seeds, rng=rng, cancel=cancel)
    if (_within_ss(U, other, k) < _within_ss(U, codes, k)
            and stroke_agreement(other, sets).min() >= stroke_agreement(codes, sets).min()):
        return other
    return codes


def _within_ss(U: np.ndarray, codes: np.ndarray, k: int) -> float:
    """Within-cluster sum of squares of a partition (each cluster around its mean)."""
    mass = np.bincount(codes, minlength=k).astype(float)
    sums = np.stack([np.bincount(codes, weights=U[:, j], minlength=k) for j in range(U.shape[1])],
                    axis=1)
    means = sums / np.maximum(mass, 1.0)[:, None]
    return float(np.einsum("ij,ij->", U, U) - np.einsum("a,aj,aj->", mass, means, means))


def _lloyd_anchored(X: np.ndarray, w: np.ndarray, fixed_at: np.ndarray, centres: np.ndarray,
                    owner: np.ndarray, iterations: int, check: Callable[[], None]) -> np.ndarray:
    """Lloyd's iteration with rows of ``fixed_at[i] = a ≥ 0`` restricted to label a's prototypes."""
    centres = centres.copy()
    codes = None
    fixed = fixed_at >= 0
    for _ in range(iterations):
        check()
        new, _ = vq(X, centres, check_finite=False)
        bad = fixed & (owner[new] != fixed_at)
        for a in np.unique(fixed_at[bad]):
            own = np.flatnonzero(owner == a)
            rows = np.flatnonzero(bad & (fixed_at == a))
            sub, _ = vq(X[rows], centres[own], check_finite=False)
            new[rows] = own[sub]
        if codes is not None and np.array_equal(new, codes):
            break
        codes = new
        mass = np.bincount(codes, weights=w, minlength=len(centres))
        for j in np.flatnonzero(mass > 0):
            sel = codes == j
            centres[j] = (w[sel, None] * X[sel]).sum(axis=0) / mass[j]
    return centres


def clamp_strokes(labels: np.ndarray, sets: list[np.ndarray],
                  label_ids: tuple[int, ...]) -> np.ndarray:
    """Give every painted pixel its painted label (in place); returns ``labels``.

    The last step of every constrained method, after the partition itself has been checked
    against :data:`STROKE_AGREEMENT`: the few painted pixels the partition gives elsewhere
    (a one-pixel stroke on a boundary) still show the label the user painted.
    """
    for i, S in zip(label_ids, sets):
        labels[S] = i
    return labels


def stroke_agreement(codes: np.ndarray, sets: list[np.ndarray]) -> np.ndarray:
    """Share of each label's stroke rows whose cluster is that label's (codes 0..k−1 = labels)."""
    return np.array([float(np.mean(codes[S] == a)) if len(S) else 1.0
                     for a, S in enumerate(sets)])


def ratio_cut(codes: np.ndarray, pencil: Pencil, constraints: Constraints) -> float:
    """FAST-GE's objective of a partition: ``Σ_a cut_G(S_a) / cut_H(S_a)`` (§4.6).

    ``codes`` (n,) are label indices 0..k−1, ``S_a`` their regions; ``G = G_D + Ĝ_ML`` and
    ``H = K/n + Ĝ_CL`` as in :func:`sweep_cut` (for k = 2 the two terms are equal and each is
    the ratio the Cheeger sweep minimises). O(|E| + n) per label. ``benchmarks/drops.py``
    compares it between an edit's answer and the answer before (refinement stability).
    """
    d = pencil.degrees
    vol, n = float(d.sum()), d.size
    c, u = constraints.scale, constraints.weights
    totals = np.array([u[S].sum() for S in constraints.sets])
    total = 0.0
    for a in range(constraints.k):
        x = (codes == a).astype(float)
        inside = np.array([u[S][x[S] > 0].sum() for S in constraints.sets])
        rest = totals - inside
        within = float(inside @ rest)
        across = float(inside.sum() * rest.sum()) - within
        vs = float(d @ x)
        cut_h = vs * (vol - vs) / (vol * n) + c * across
        total += (float(x @ (pencil.L @ x)) + c * within) / max(cut_h, np.finfo(float).tiny)
    return total


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


def sweep_ratios(x: np.ndarray, pencil: Pencil,
                 constraints: Constraints | None) -> tuple[np.ndarray, np.ndarray]:
    """``cut_G(S) / cut_H(S)`` of every prefix S of the vertices sorted by ``x`` (§4.6).

    Returns the n − 1 ratios (prefix lengths 1 … n − 1) and the order. ``G = G_D + Ĝ_ML`` and
    ``H = K/n + Ĝ_CL``; O(|E| + n log n) with difference arrays.
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
    return cut_g / np.maximum(cut_h, np.finfo(float).tiny), order


def sweep_cut(x: np.ndarray, pencil: Pencil, constraints: Constraints | None, *,
              previous: np.ndarray | None = None, tolerance: float = SWEEP_TOLERANCE,
              window: float = SWEEP_WINDOW, gate: float = PREVIOUS_GATE) -> np.ndarray:
    """Cheeger sweep (§4.6): boolean mask of the best prefix of the vertices sorted by ``x``.

    Minimises ``cut_G(S) / cut_H(S)`` with ``G = G_D + Ĝ_ML`` and ``H = K/n + Ĝ_CL``
    (:func:`sweep_ratios`). With ``previous`` (boolean (n,): the vertices the previous edit's
    answer put on the prefix's side), the prefix is the one that agrees with ``previous`` on
    the most vertices among the local minima of the ratio (over ±``window``·n positions, at
    least :data:`SWEEP_MIN_WINDOW` or n/10)
    whose ratio is at most ``tolerance`` × the best: refinement stability (issue 10). The
    strokes' cliques make the ratio close to the cheapest cut of the image graph that
    separates them, and its minimum jumps between cuts of similar cost (a weak boundary on
    each side of an object) as strokes are added; the previous answer picks among them
    instead of the last digits of the cost — while it is itself a near-best cut: its own
    ratio at most ``gate`` × the best (:data:`PREVIOUS_GATE`; ``previous`` should have the
    strokes painted in), else the best prefix is taken.
    """
    ratio, order = sweep_ratios(x, pencil, constraints)
    n = x.shape[0]
    best = int(np.argmin(ratio))
    if previous is not None and constraints is not None and gate < np.inf:
        # the two terms of ratio_cut are equal for two sides: each is the sweep's ratio
        if ratio_cut(previous.astype(np.int64), pencil, constraints) / 2 > gate * ratio[best]:
            previous = None
    if previous is not None:
        inside = np.cumsum(previous[order], dtype=np.int64)[: n - 1]  # previous side in S
        outside = np.count_nonzero(~previous) - (np.arange(1, n) - inside)
        # Candidates: distinct cuts (local minima of the ratio over ±window·n positions of
        # the order), not points on a slope next to the best one shifted towards the old
        # answer: those made a bad first answer creep instead of being corrected.
        w = max(1, int(window * n), min(SWEEP_MIN_WINDOW, n // 10))
        near = np.flatnonzero((ratio <= tolerance * ratio[best])
                              & (ratio <= minimum_filter1d(ratio, 2 * w + 1, mode="nearest")))
        best = int(near[np.argmax((inside + outside)[near])])
    mask = np.zeros(n, bool)
    mask[order[: best + 1]] = True
    return mask


def embedding_potentials(V: np.ndarray, sets: list[np.ndarray]) -> np.ndarray:
    """The strokes' potentials read from the embedding: barycentric coordinates (n × k).

    Each row ``v_i`` of the embedding (n × m) is written as the affine combination
    ``v_i ≈ Σ_a φ_a(i) v̄_a``, ``Σ_a φ_a(i) = 1``, of the stroke means ``v̄_a`` (the mean of
    ``V`` over label a's painted rows): ``[φ(i) 1]`` solves ``[V̄ 1]ᵀ``-systems, i.e.
    ``Φ = [V 1] A`` with ``[V̄ 1] A = I_k`` (a least-squares, minimum-norm ``A`` when
    m ≠ k − 1 or the means are affinely dependent).

    For FAST-GE's harmonic solve this is exact: its k − 1 Ritz vectors and the constant span
    ``span{E_a + φ_a}`` (:mod:`segapp.solve.harmonic`), each ``E_a + φ_a`` is 1 on label a's
    strokes and 0 on the others', so the affine map fixed by the stroke means gives back the
    random-walker potentials ``φ_a`` themselves (Grady 2006, on FAST-GE's graph): the
    probability that a random walk from pixel i reaches label a's strokes first. For other
    solves (LOBPCG) it is their affine reading in the same sense.
    """
    V = np.asarray(V, dtype=np.float64)
    k = len(sets)
    means = np.array([V[S].mean(axis=0) for S in sets])                 # k × m
    M = np.hstack([means, np.ones((k, 1))])                              # k × (m + 1)
    A = np.linalg.lstsq(M, np.eye(k), rcond=None)[0]                     # (m + 1) × k
    return V @ A[:-1] + A[-1]


def degenerate_labels(codes: np.ndarray, sets: list[np.ndarray]) -> list[int]:
    """Labels whose region holds little more than their own painted pixels.

    Label a is degenerate in a partition ``codes`` (label indices 0..k−1) when fewer than
    ``√n`` of its pixels are unpainted: less than a one-pixel-wide line across a square image
    of n pixels, a region on the scale of the seed, not of the image. (Measured on the ring
    scenes of issue 22: the cut-off regions hold 0–30 unpainted pixels, the right ones
    thousands.) O(n).
    """
    n = codes.shape[0]
    painted = np.zeros(n, bool)
    for S in sets:
        painted[S] = True
    counts = np.bincount(codes[~painted], minlength=len(sets))
    return [a for a in range(len(sets)) if counts[a] < np.sqrt(n)]


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
        mass = np.bincount(codes, minlength=k).astype(float)
        C = np.stack([np.bincount(codes, weights=W[:, j], minlength=k) for j in range(W.shape[1])],
                     axis=1) / np.maximum(mass, 1.0)[:, None]
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
