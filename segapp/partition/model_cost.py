r"""The two-label sweep's data term from the labels' own colour models.

The maths
---------
FAST-GE's colour models (:mod:`segapp.appearance`) give every pixel i a posterior
``P_a(i)`` for each label a (rows sum to 1), learned from what the person painted. For two
labels, a cut S (the pixels given to the label of the sweep's low side, ``lo``) costs, in nats
per pixel,

.. math:: m(S) = \frac{1}{n}\Big(\sum_{i \in S} -\log P_{lo}(i)
                 + \sum_{i \notin S} -\log P_{hi}(i)\Big),

GrabCut's data term (Rother, Kolmogorov & Blake 2004, §2; Boykov & Jolly 2001) with the
labels' mixtures. The Cheeger sweep (:mod:`~segapp.partition.sweep`, FAST-GE §4.6) minimises
``log(cut_G / cut_H) + w_c c(S) + w_m m(S)`` over the prefixes S of its order, ``c`` the
unsupervised colour cost of :mod:`~segapp.partition.colour_model`: the eigenvector still
decides the order (where the boundary can lie), the models which of the ratio's near-equal
minima the painted colours support. Posteriors are floored at :data:`POSTERIOR_FLOOR` so one
pixel costs at most ``−log POSTERIOR_FLOOR`` (≈ 6.9 nats): a colour no model explains must not
decide the cut alone.

All n − 1 prefixes cost O(n) from two cumulative sums.
"""

from __future__ import annotations

import numpy as np

#: Weight ``w_m`` of :func:`prefix_model_costs` in the two-label sweep (FastGE option
#: ``model_weight``; the scan on the dev sets is beside that option's declaration).
MODEL_WEIGHT = 1.0
#: Smallest posterior a pixel's cost reads (module doc).
POSTERIOR_FLOOR = 1e-3


def model_costs(posteriors: np.ndarray, low: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-pixel costs ``(−log P_lo, −log P_hi)`` of two labels' posteriors ``(n, 2)``, the
    sweep's low side being label ``low`` (0 or 1)."""
    p = np.maximum(np.asarray(posteriors, np.float64), POSTERIOR_FLOOR)
    if p.ndim != 2 or p.shape[1] != 2 or low not in (0, 1):
        raise ValueError(f"posteriors of two labels (n, 2) and low in (0, 1), got "
                         f"{p.shape} and {low}")
    return -np.log(p[:, low]), -np.log(p[:, 1 - low])


def prefix_model_costs(costs: tuple[np.ndarray, np.ndarray], order: np.ndarray) -> np.ndarray:
    """``m(S)`` (module doc) of every prefix S of ``order`` (lengths 1 … n − 1)."""
    lo, hi = (np.asarray(c, np.float64)[order] for c in costs)
    n = lo.shape[0]
    if n < 2:
        return np.zeros(0)
    inside = np.cumsum(lo)[: n - 1]
    outside = hi.sum() - np.cumsum(hi)[: n - 1]
    return (inside + outside) / n


def partition_model_cost(costs: tuple[np.ndarray, np.ndarray], mask: np.ndarray) -> float:
    """``m(S)`` of one partition (``mask``: S, boolean (n,))."""
    lo, hi = costs
    mask = np.asarray(mask, bool)
    return float((lo[mask].sum() + hi[~mask].sum()) / mask.shape[0])
