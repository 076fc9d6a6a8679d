"""The Cheeger sweep (k = 2, FAST-GE §4.6) and FAST-GE's ratio-cut objective of a partition.

Order the vertices by the eigenvector and take the prefix S that minimises
``cut_G(S) / cut_H(S)``; all n − 1 cuts are evaluated in O(|E| + n log n) with difference
arrays, and the constraint cliques' cuts in closed form from per-label prefix sums
(``cut(S) = c Σ_{a,b} s_a(S) (s_b − s_b(S))`` over the relevant label pairs).

A first answer (no previous answer to keep close to) can be swept by the *balanced* ratio
instead, where the colour term is used (:func:`sweep_ratios`, ``balanced``;
:func:`sweep_cut`, ``balance``): the strokes' cannot-link cliques make FAST-GE's
``cut_H`` the same for every cut that separates them, so its ratio is then the cut alone, and
the least cut is the small region inside the strong edge nearest a stroke (the shrinking bias
of minimum cuts); the balanced ratio is the normalized cut of the paper's demand graph K (§3).

For photos the sweep also weighs two Gaussian colour models of the sides
(:mod:`~segapp.partition.colour_model`): it minimises ``log ratio + w · c(S)``, and, given
the labels' own colour models, ``+ w_m · m(S)`` (:mod:`~segapp.partition.model_cost`).

Refinement stability (issue 10): given the previous edit's answer, the sweep keeps the cut
closest to it among the near-best ones (:func:`sweep_cut`), while that answer is itself a
near-best cut (:data:`PREVIOUS_GATE`, shared with :func:`segapp.partition.kmeans.stable_anchored_kmeans`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

import numpy as np
import scipy.sparse as sp
from scipy.ndimage import minimum_filter1d

from ..strokes.constraints import Constraints
from .colour_model import (COLOUR_WEIGHT, ImageColours, partition_colour_cost,
                           prefix_colour_costs, strokes_differ_in_colour)
from .local import local_move
from .model_cost import MODEL_WEIGHT, partition_model_cost, prefix_model_costs

if TYPE_CHECKING:  # annotations only (see segapp.partition)
    from ..solve.pencil import Pencil

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


def ratio_cut(codes: np.ndarray, pencil: Pencil, constraints: Constraints) -> float:
    """FAST-GE's objective of a partition: ``Σ_a cut_G(S_a) / cut_H(S_a)`` (§4.6).

    ``codes`` (n,) are label indices 0..k−1, ``S_a`` their regions; ``G = G_D + Ĝ_ML`` and
    ``H = K/n + Ĝ_CL`` as in :func:`sweep_cut` (for k = 2 the two terms are equal and each is
    the ratio the Cheeger sweep minimises). ``benchmarks/drops.py`` compares it between an
    edit's answer and the answer before (refinement stability). :func:`ratio_cuts` for several.
    """
    return float(ratio_cuts([codes], pencil, constraints)[0])


def ratio_cuts(partitions: Sequence[np.ndarray], pencil: Pencil,
               constraints: Constraints, balanced: bool = False) -> np.ndarray:
    """:func:`ratio_cut` of each of several partitions (label indices 0..k−1), in one pass;
    with ``balanced``, each region's term over the balanced denominator of
    :func:`sweep_ratios` instead (for two sides, half the sum is the balanced sweep's ratio).

    The data-graph terms ``cut_D(S_a) = x_aᵀ L x_a`` are :func:`region_cuts`; the volumes
    and the cliques' terms are per-label sums: ``vol(S_a) = Σ_{i ∈ S_a} d_i`` and the stroke
    mass ``s_b(S_a)`` of label b's strokes in ``S_a``, from which the must-link pairs split,
    ``Σ_b s_b(S_a) (s_b − s_b(S_a))``, and the cannot-link pairs split are counted in closed
    form. O(|E| + q·n) for q partitions.
    """
    d = pencil.degrees
    vol, n, k = float(d.sum()), d.size, constraints.k
    c, u = constraints.scale, constraints.weights
    sets = constraints.sets
    totals = np.array([u[S].sum() for S in sets])
    cuts = region_cuts(pencil.L, partitions, k)
    out = np.empty(len(partitions))
    for q, codes in enumerate(partitions):
        vs = np.bincount(codes, weights=d, minlength=k)
        inside = np.stack([np.bincount(codes[S], weights=u[S], minlength=k) for S in sets],
                          axis=1)                       # inside[a, b] = s_b(S_a)
        rest = totals[None, :] - inside
        within = np.einsum("ab,ab->a", inside, rest)
        across = inside.sum(1) * rest.sum(1) - within
        cut_h = (vs * (vol - vs) / vol * _split_share(across, totals) if balanced
                 else vs * (vol - vs) / (vol * n) + c * across)
        out[q] = np.sum((cuts[q] + c * within) / np.maximum(cut_h, np.finfo(float).tiny))
    return out


def region_cuts(L: sp.spmatrix, partitions: Sequence[np.ndarray], k: int) -> np.ndarray:
    """``cut(S_a) = Σ_{i ∈ S_a, j ∉ S_a} w_ij`` of every region a of every partition: (q, k).

    ``L`` is a graph Laplacian (``w_ij = −L_ij`` off the diagonal, zero row sums), so this is
    ``x_aᵀ L x_a`` for the region's indicator, read from the stored entries that join two
    regions only: the regions' boundaries, about 1% of the entries of an image graph. Every
    partition's label is packed into one integer per vertex, so one gather along the stored
    entries finds them for all partitions, instead of k sparse products per partition (4–5×
    faster at k = 5).
    """
    L = sp.csr_matrix(L)
    q, n = len(partitions), L.shape[0]
    if k ** q > 2 ** 63:                                     # not one integer: one at a time
        return np.vstack([region_cuts(L, [codes], k) for codes in partitions])
    code = np.zeros(n, np.min_scalar_type(k ** q - 1))     # Σ_p codes_p k^p
    for p, codes in enumerate(partitions):
        code += np.asarray(codes).astype(code.dtype) * code.dtype.type(k ** p)
    here = np.repeat(code, np.diff(L.indptr))               # the row's packed labels
    there = np.take(code, L.indices)                        # the column's
    joins = np.flatnonzero(here != there)                   # never the diagonal
    here, there, w = here[joins].astype(np.int64), there[joins].astype(np.int64), -L.data[joins]
    cuts = np.empty((q, k))
    for p in range(q):
        a, b = here % k, there % k
        leaving = a != b
        cuts[p] = np.bincount(a[leaving], weights=w[leaving], minlength=k)
        here, there = here // k, there // k
    return cuts


def sweep_ratios(x: np.ndarray, pencil: Pencil, constraints: Constraints | None,
                 balanced: bool = False) -> tuple[np.ndarray, np.ndarray]:
    r"""``cut_G(S) / cut_H(S)`` of every prefix S of the vertices sorted by ``x`` (§4.6).

    Returns the n − 1 ratios (prefix lengths 1 … n − 1) and the order. ``G = G_D + Ĝ_ML`` and
    ``H = K/n + Ĝ_CL``; O(|E| + n log n) with difference arrays.

    ``balanced`` (with constraints): the balanced ratio instead,

    .. math:: \frac{cut_G(S)}{cut_K(S)\,\sigma(S)}, \qquad
              cut_K(S) = \frac{vol(S)\,vol(\bar S)}{vol(V)},

    ``K`` the demand graph at full weight (§3: its cut is normalized cut's balance) and
    ``σ(S)`` the share of the cannot-link pairs that S splits (1 for a cut that separates
    every label's strokes). FAST-GE's ``cut_H`` is ``cut_K/n + c·σ(S)·P`` (P the cannot-link
    pairs' total weight); ``c·P`` dwarfs ``cut_K/n`` (on GrabCut's memorial, 1.9·10⁶ against
    0.02–0.45), so for every separating cut its ratio is ``cut_G`` over a constant.
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
        if balanced:
            cut_h = vol_s * (vol - vol_s) / vol * _split_share(across, totals)
        else:
            cut_h = cut_h + c * across
    return cut_g / np.maximum(cut_h, np.finfo(float).tiny), order


def _split_share(across: np.ndarray | float, totals: np.ndarray) -> np.ndarray:
    """σ(S): the share of the cannot-link pairs' weight that S splits, from ``across``
    (their split weight) and each label's stroke weight; floored so a cut that separates
    nothing scores as very bad rather than infinite."""
    pairs = (totals.sum() ** 2 - np.sum(totals ** 2)) / 2     # Σ_{a<b} s_a s_b
    return np.maximum(np.asarray(across, float) / max(pairs, np.finfo(float).tiny), 1e-12)


def sweep_cut(x: np.ndarray, pencil: Pencil, constraints: Constraints | None, *,
              previous: np.ndarray | None = None, tolerance: float = SWEEP_TOLERANCE,
              window: float = SWEEP_WINDOW, gate: float = PREVIOUS_GATE,
              colours: ImageColours | None = None,
              colour_weight: float = COLOUR_WEIGHT,
              model: tuple[np.ndarray, np.ndarray] | None = None,
              model_weight: float = MODEL_WEIGHT, keep_better: bool = False,
              contradicting: np.ndarray | None = None, balance: bool = False) -> np.ndarray:
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

    With ``colours`` (:class:`~segapp.partition.colour_model.ImageColours`) the prefix
    minimises ``log ratio + colour_weight · c(S)`` instead, ``c`` the colour cost of two
    Gaussian colour models (:mod:`~segapp.partition.colour_model`); tolerance and gate are
    then ``log tolerance`` and ``log gate`` on that score (the same rule: with
    ``colour_weight = 0`` the same cut). ``model`` (the per-pixel costs ``(−log P_lo,
    −log P_hi)`` of the labels' own colour models, :func:`~segapp.partition.model_cost.model_costs`)
    adds ``model_weight · m(S)`` to that score the same way.

    Two more candidates than the prefixes of the new order, after an edit (``previous``
    given): with ``contradicting`` (boolean (n,): the stroke pixels the previous answer gave
    the other side) the *local move* — the previous answer changed to the chosen cut only on
    the regions of the change that touch such a stroke
    (:func:`~segapp.partition.local.local_move`) — where it scores at least as well as the
    best prefix; with ``keep_better`` the previous answer itself where it scores better than
    the best prefix and the local move. The prefixes of one vector are not every cut: a new
    stroke moves the order far from it as well, and a partition the new vector's order cannot
    reach may be the better one in the sweep's own score.

    ``balance`` (FAST-GE option ``balance``): without ``previous``, or where the gate sets
    it aside, the prefixes are scored by the balanced ratio (:func:`sweep_ratios`), not
    FAST-GE's — where the colour term is used (``colours`` weighed, the strokes' colours
    differing beyond noise): the colours then speak against a balanced cut through a region
    of one colour, and without them the balanced ratio took 77% of a grey ring scene whose
    inside (6%) leaks through a gap (``tests/test_seed_size.py``). With a previous answer kept the sweep reads FAST-GE's ratio, which its
    tolerance and gate were measured with: the balanced one there gave more corrective
    strokes that made the answer worse (GrabCut-dev: 19 of 450 against 13).
    """
    if colours is not None and constraints is not None \
            and not strokes_differ_in_colour(colours, constraints.sets):
        colours = None  # the strokes' colours do not tell the labels apart
    n = x.shape[0]

    def prefix_scores(balanced: bool) -> tuple[np.ndarray, np.ndarray, int]:
        """The order, every prefix's score and the best prefix."""
        ratio, order = sweep_ratios(x, pencil, constraints, balanced)
        score = np.log(np.maximum(ratio, np.finfo(float).tiny))
        if colours is not None and colour_weight > 0:
            score = score + colour_weight * prefix_colour_costs(colours.lab, order)
        if model is not None and model_weight > 0:
            score = score + model_weight * prefix_model_costs(model, order)
        return order, score, int(np.argmin(score))

    def partition_score(side: np.ndarray) -> float:
        """The prefix score of any two-sided partition (side: boolean (n,))."""
        # the two terms of ratio_cut are equal for two sides: each is the sweep's ratio
        own = np.log(max(ratio_cuts([side.astype(np.int64)], pencil, constraints,
                                    balanced)[0] / 2, np.finfo(float).tiny))
        if colours is not None and colour_weight > 0:
            own += colour_weight * partition_colour_cost(colours.lab, side)
        if model is not None and model_weight > 0:
            own += model_weight * partition_model_cost(model, side)
        return float(own)

    balance = (balance and constraints is not None and colours is not None
               and colour_weight > 0)
    balanced = balance and previous is None
    order, score, best = prefix_scores(balanced)
    top = score[best]
    before = previous
    own = None
    if previous is not None and constraints is not None and gate < np.inf:
        own = partition_score(previous)
        if own > np.log(gate) + top:
            previous = None
            if balance:   # no answer to keep close to: scored as a first answer
                balanced, own = True, None
                order, score, best = prefix_scores(True)
                top = score[best]
    if previous is not None:
        inside = np.cumsum(previous[order], dtype=np.int64)[: n - 1]  # previous side in S
        outside = np.count_nonzero(~previous) - (np.arange(1, n) - inside)
        # Candidates: distinct cuts (local minima of the ratio over ±window·n positions of
        # the order), not points on a slope next to the best one shifted towards the old
        # answer: those made a bad first answer creep instead of being corrected.
        w = max(1, int(window * n), min(SWEEP_MIN_WINDOW, n // 10))
        near = np.flatnonzero((score <= np.log(tolerance) + score[best])
                              & (score <= minimum_filter1d(score, 2 * w + 1, mode="nearest")))
        best = int(near[np.argmax((inside + outside)[near])])
    mask = np.zeros(n, bool)
    mask[order[: best + 1]] = True
    if before is None or constraints is None:
        return mask
    if contradicting is not None:
        # the previous answer changed only where a contradicting stroke gives reason
        # (segapp.partition.local), where no prefix scores better; within the tolerance
        # instead, a wrong first answer crept towards the right one region by region
        moved = local_move(before, mask, contradicting, pencil.L)
        if not np.array_equal(moved, mask) and partition_score(moved) <= top:
            mask = moved
    if keep_better:
        # the previous answer itself where no new cut scores better
        own = partition_score(before) if own is None else own
        if own < min(top, partition_score(mask)):
            mask = before.copy()
    return mask


