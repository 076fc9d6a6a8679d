r"""A working-copy answer's rounding, read back from the answer as a rule on the embedding.

:mod:`segapp.inputs.refine` solves the embedding again at full resolution around the region
boundaries and must turn it into labels the way the method did. FAST-GE's rounding
(:func:`segapp.partition.rounding.round_eigenvectors`) is, up to its safeguards, a fixed
function of each pixel's embedding row once it has run:

* **two labels, one vector** (the Cheeger sweep, §4.6): a prefix of the pixels sorted by
  the vector, i.e. a *threshold* ``t``: one label where ``v ≤ t``, the other above;
* **otherwise** (k-means anchored to the strokes on the row-normalised embedding
  ``u = v / ‖v‖``, Fig. 2): the *nearest prototype*, each prototype the mean of its
  cluster's rows, ``argmin_a ‖u − c_a‖² = argmax_a (uᵀc_a − ‖c_a‖²/2)`` (unit rows).

Both are fitted to the working answer itself (the threshold that separates its labels best
along the vector, or the mean row of each of its labels), so the rule needs nothing from
the method but its result, and it works for any method whose result carries an embedding.
How well the rule gives the working answer back is measured where it will be used
(:meth:`RoundingRule.agreement`) and decides whether the refinement applies.

Measured on the bundled samples enlarged to 2.5 MP (``benchmarks/edges.py``'s images): the
rule gave the working answer back on 99.0–100% of the working band; fitted to a
full-resolution FAST-GE answer, it gave that answer back on 99.86% of its 6-px band
(astronaut), where the random-walker rule ``argmax φ`` on the same embedding (the
potentials alone, :func:`segapp.partition.embedding.embedding_potentials`) gave it back on
76% only: FAST-GE's k-means is not the potentials' argmax.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..partition.labels import label_sums


@dataclass(frozen=True)
class RoundingRule:
    """Labels (indices 0..k−1) from embedding rows: a threshold or nearest prototypes.

    Attributes
    ----------
    threshold : float or None
        Two labels, one vector: rows with ``v ≤ threshold`` get ``low``, the others
        ``1 − low``. None for the prototype rule.
    low : int
    prototypes : ndarray (k, m) or None
        The mean unit row of each label (the prototype rule).
    """

    threshold: float | None = None
    low: int = 0
    prototypes: np.ndarray | None = None

    @classmethod
    def fit(cls, V: np.ndarray, codes: np.ndarray, k: int,
            unpainted: np.ndarray | None = None) -> "RoundingRule":
        """The rule that gives ``codes`` (the answer's label indices) back from ``V``
        (n × m) best; the threshold is fitted on the ``unpainted`` rows only (painted ones
        were clamped to their label whatever their row)."""
        V = np.asarray(V, dtype=np.float64).reshape(codes.size, -1)
        if k == 2 and V.shape[1] == 1:
            sel = slice(None) if unpainted is None else unpainted
            return cls(*_best_threshold(V[sel, 0], codes[sel]))
        U = _unit_rows(V)
        # in row order, as np.add.at would sum them (the same bits)
        counts, sums = label_sums(U, codes, k)
        P = sums / np.maximum(counts, 1.0)[:, None]
        return cls(prototypes=P)

    def __call__(self, V: np.ndarray) -> np.ndarray:
        V = np.asarray(V, dtype=np.float64)
        V = V.reshape(V.shape[0], -1)
        if self.prototypes is None:
            return np.where(V[:, 0] <= self.threshold, self.low, 1 - self.low).astype(np.int64)
        P = self.prototypes
        return np.argmax(_unit_rows(V) @ P.T - 0.5 * np.einsum("ij,ij->i", P, P), axis=1)

    def agreement(self, V: np.ndarray, codes: np.ndarray) -> float:
        """Share of the rows whose label the rule gives back."""
        if codes.size == 0:
            return 1.0
        return float(np.mean(self(V) == codes))


def _unit_rows(V: np.ndarray) -> np.ndarray:
    norms = np.sqrt(np.einsum("ij,ij->i", V, V))
    return V / np.where(norms > 0, norms, 1.0)[:, None]


def _best_threshold(x: np.ndarray, codes: np.ndarray) -> tuple[float, int]:
    """The threshold and low side that reproduce two-label ``codes`` best along ``x``
    (a sweep over the sorted values; the middle of the widest-agreeing gap)."""
    if x.size == 0:
        return 0.0, 0
    order = np.argsort(x, kind="stable")
    xs, cs = x[order], codes[order]
    best = (-1, 0.0, 0)
    for low in (0, 1):
        # agreement when the first i values are `low` and the rest `1 − low`, i = 0..n
        good_low = np.r_[0, np.cumsum(cs == low)]
        good_high = np.r_[np.cumsum((cs != low)[::-1])[::-1], 0]
        score = good_low + good_high
        i = int(np.argmax(score))
        if score[i] > best[0]:
            t = (xs[0] - 1.0 if i == 0 else xs[-1] + 1.0 if i == xs.size
                 else 0.5 * (xs[i - 1] + xs[i]))
            best = (int(score[i]), float(t), low)
    return best[1], best[2]
