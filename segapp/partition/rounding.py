"""FAST-GE's rounding: from the pencil's eigenvectors to labels (Fig. 2, §4.4–4.6).

The embedding (:mod:`~segapp.partition.embedding`), then the Cheeger sweep for two labels
(:mod:`~segapp.partition.sweep`) or k-means anchored to the strokes
(:mod:`~segapp.partition.kmeans`), then the re-rounding of a label cut off alone
(:mod:`~segapp.partition.degenerate`). The stroke agreement it returns is what FAST-GE checks
before it retries with one more vector.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..cancel import CancelToken
from ..strokes.constraints import Constraints
from .colour_model import COLOUR_WEIGHT, ImageColours
from .degenerate import reround_degenerate
from .embedding import embed
from .kmeans import stable_anchored_kmeans
from .labels import STROKE_AGREEMENT, stroke_agreement
from .model_cost import MODEL_WEIGHT, model_costs
from .sweep import ratio_cuts, sweep_cut

if TYPE_CHECKING:  # annotations only (see segapp.partition)
    from ..solve.pencil import Pencil


def round_eigenvectors(X: np.ndarray, pencil: Pencil, cons: Constraints, *,
                       k2_partition: str = "sweep", seed: int = 0,
                       cancel: CancelToken | None = None,
                       previous: np.ndarray | None = None,
                       colours: ImageColours | None = None,
                       colour_weight: float = COLOUR_WEIGHT,
                       posteriors: np.ndarray | None = None,
                       model_weight: float = MODEL_WEIGHT,
                       keep_better: bool = False, local: bool = False,
                       balance: bool = False,
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Labels (user ids, flat), the embedding vectors of X, and each label's stroke agreement.

    Embedding of Fig. 2 (§4.4); for two labels the Cheeger sweep (§4.6), otherwise k-means
    with each cluster anchored to one label's strokes (:func:`~segapp.partition.kmeans.anchored_kmeans`).
    The labels are *not* clamped to the strokes here: ``agreement[a]`` is the share of label
    a's painted pixels that the partition itself gives to label a, which the caller checks.

    ``previous`` (user ids, flat; the previous edit's answer with the same labels) makes the
    rounding stable under refinement (issue 10, option ``stable_refinement``): the sweep keeps,
    among the local minima of its ratio within :data:`~segapp.partition.sweep.SWEEP_TOLERANCE` of the
    best, the cut closest to it, and k-means also starts from its regions
    (:func:`~segapp.partition.kmeans.stable_anchored_kmeans`) — both only while the previous answer,
    the new strokes painted in, is itself within :data:`~segapp.partition.sweep.PREVIOUS_GATE` of
    the fresh answer in FAST-GE's objective (:func:`~segapp.partition.sweep.ratio_cut`). The answer
    then depends on the edit history, not only on the strokes; without ``previous`` (a new
    session, :func:`segapp.segment`) it is the history-free one. ``local`` and
    ``keep_better`` add two candidates after such an edit, each kept where it scores better
    in the rounding's objective: the previous answer changed only on the regions that touch
    a stroke contradicting it (:mod:`~segapp.partition.local`), and the previous answer
    itself (:func:`~segapp.partition.sweep.sweep_cut`,
    :func:`~segapp.partition.kmeans.stable_anchored_kmeans`).

    ``colours`` (:class:`~segapp.partition.colour_model.ImageColours`): the sweep also
    weighs how well two Gaussian colour models explain the cut (``colour_weight``; issue 22).
    ``balance``: a two-label answer without ``previous`` is swept by the balanced ratio
    where the colour term is used (:func:`~segapp.partition.sweep.sweep_cut`).
    ``posteriors`` ((n, 2), the labels' colour models' ``P_a(i)`` in the order of
    ``cons.sets``): it also weighs their data term (``model_weight``,
    :mod:`~segapp.partition.model_cost`).
    """
    k = cons.k
    U, _, V = embed(X, pencil)
    before = contradicting = None
    if previous is not None:
        # searchsorted once per value, then a lookup (a search per pixel cost ~1 ms)
        lookup = np.searchsorted(np.asarray(cons.label_ids), np.arange(int(previous.max()) + 1))
        before = lookup.astype(np.int64)[previous]
        if local:     # the stroke pixels the previous answer gave another label
            contradicting = np.zeros(before.size, bool)
            for a, S in enumerate(cons.sets):
                contradicting[S[before[S] != a]] = True
        for a, S in enumerate(cons.sets):     # the previous answer with the new strokes
            before[S] = a
    codes = None
    if k == 2 and k2_partition == "sweep":
        x = V[:, 0]
        low = int(np.mean(x[cons.sets[0]]) > np.mean(x[cons.sets[1]]))  # label of the low side
        model = None if posteriors is None else model_costs(posteriors, low)
        mask = sweep_cut(x, pencil, cons, previous=None if before is None else before == low,
                         colours=colours, colour_weight=colour_weight,
                         model=model, model_weight=model_weight,
                         keep_better=keep_better, contradicting=contradicting,
                         balance=balance).astype(np.int64)
        # The prefix is label 0's side if label 0's strokes are mostly in it.
        codes = mask ^ 1 if np.mean(mask[cons.sets[0]]) >= 0.5 else mask
        if stroke_agreement(codes, cons.sets).min() < STROKE_AGREEMENT:
            codes = None  # the best ratio cut does not separate the strokes: use k-means
    if codes is None:
        codes = stable_anchored_kmeans(U, cons.sets, before,
                                       objective=lambda cs: ratio_cuts(cs, pencil, cons),
                                       rng=np.random.default_rng(seed), cancel=cancel,
                                       keep_better=keep_better,
                                       contradicting=contradicting, laplacian=pencil.L)
    # A click cut off alone (shrinking bias): its region from the potentials (issue 22).
    codes = reround_degenerate(codes, V, pencil, cons)
    agreement = stroke_agreement(codes, cons.sets)
    return np.asarray(cons.label_ids, np.int32)[codes], V, agreement
