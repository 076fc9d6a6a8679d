"""Semi-supervised cluster ensemble with sparse random projection (Liu et al. 2017, §4).

Liu, Ye, Wei, Tian, Liao, Zhang, "Fast Constrained Spectral Clustering and Cluster Ensemble
with Random Projection", Computational Intelligence and Neuroscience 2017, article 2658707.

The text file segapp works from stops at §3; §4 is reconstructed from the preliminaries it
builds on (§2.3 Lemma 1, §2.4 Lemma 2), the abstract and the contribution list (§1), and the
works cited there (Liu et al., "Spectral Ensemble Clustering", KDD 2015 [22]; Kane & Nelson,
sparse JL [34]). Three stages:

1. Base partitions (§1 (iii): "the combination of the fast CSC algorithm and spectral ensemble
   clustering"): ``n_partitions`` runs of :class:`~segapp.methods.landmark_fastge.LandmarkFastGE`
   (§3) with the same strokes and different random landmark samples (seed per partition;
   ``landmark_selection="random"`` by default, the paper's and the source of diversity). Each
   base partition is matched to the user's label ids, so all have k clusters.

2. Binary matrix and SEC (§2.3, Lemma 1): ``B = [B^{(1)} … B^{(r)}]`` (n × Σk_i) with
   ``B^{(i)}_{lj} = 1`` iff point l is in cluster j of partition i. The co-association matrix is
   ``S = BBᵀ`` and normalized-cut spectral clustering on S is equivalent to **weighted k-means on
   the points b_l / w_l with weights w_l**, ``w_l = D_ll = Σ_j S_lj`` (Lemma 1; the symbols are
   lost in the text, this is Theorem 1 of [22]). ``w_l = Σ_i |C^{(i)}(l)|``, the summed sizes of
   the clusters containing l, so S is never formed.

3. Sparse random projection (§2.4, Lemma 2): the points are projected to ``d'`` dimensions by
   Kane & Nelson's block construction ``R`` (d' × Σk_i): each column has ``s`` non-zeros
   ``±1/√s``, one in each of s blocks of d'/s rows, at a random row of the block with a random
   sign. Then weighted k-means on ``R b_l / w_l`` (§4: random projection keeps the weighted
   k-means objective within a small factor). Default ``d' = 4k`` (capped at Σk_i), ``s = 2``:
   projection bounds for k-means need O(k/ε²) dimensions, independent of n; k-means (k
   clusters) is what the consensus runs. When ``d' ≥ Σk_i`` there is nothing to reduce and
   ``R = I``: the exact SEC objective. (A random R of that size could only lose: with one
   partition, ``Σk_i = k`` columns of s = 2 non-zeros ±1/√2 coincide with probability 1/4 per
   pair, and two labels' clusters then became one point — issue 30's ``n_partitions=1``.)

Implementation: a row of B is determined by the tuple of its base labels, so the n points
collapse to the distinct tuples (at most k^r, in practice a few hundred to thousands); weighted
k-means on the distinct tuples with weights ``w_l × multiplicity`` has exactly the objective of
weighted k-means on all n rows, at a fraction of the cost. Weighted k-means: Lloyd iterations
from weighted k-means++ starts (``consensus_restarts``) and one start from each label's stroke
mean; the lowest objective wins; the clusters are matched to the user's labels (Hungarian).

``eigenvectors`` holds, per label, the fraction of base partitions that gave each pixel that
label (the co-association evidence; the projected coordinates themselves are random mixtures
with no visual meaning); ``eigenvalues`` is empty.

Memory: each base partition keeps its landmark coding (O(n·r)) for fast re-solves after an
edit, i.e. r·n_partitions·8 bytes per pixel, so the method works on Session's reduced working
copy (``full_resolution = False``) rather than on 12-megapixel originals.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from ..cancel import CancelToken
from ..errors import InvalidInputError
from ..graphs.features import Features
from ..options import MAX_LANDMARK_RUNS, Option, Settings, override
from ..partition import anchored_kmeans
from ..strokes.reading import Strokes
from ..result import Segmentation
from .landmark_base import FeatureMethod, LandmarkDiagnostics
from .landmark_fastge import OPTIONS as LFG_OPTIONS
from .landmark_fastge import LandmarkFastGE

#: Landmark FAST-GE's options for the base partitions (random landmarks: the partitions must
#: differ), then the ensemble's. Each base partition is one landmark FAST-GE (bounded count).
OPTIONS: tuple[Option, ...] = override(LFG_OPTIONS, landmark_selection={"default": "random"}) + (
    Option("n_partitions", int, 8, "base partitions (landmark FAST-GE runs; n_partitions × "
           f"n_landmarks ≤ {MAX_LANDMARK_RUNS})", "setup", low=1, high=32),
    Option("projection_dim", int, None, "rows of the sparse random projection", "solve",
           low=1, high=1000, none_ok=True, none_means="min(k · n_partitions, 4k)"),
    Option("projection_nnz", int, 2, "non-zeros per column of the projection", "solve",
           low=1, high=100),
)


def sparse_projection(d: int, D: int, s: int, rng: np.random.Generator) -> np.ndarray:
    """Kane–Nelson block sparse JL matrix (d × D), s non-zeros ±1/√s per column (dense array)."""
    R = np.zeros((d, D))
    bounds = np.linspace(0, d, s + 1).astype(int)
    for b in range(s):
        lo, hi = bounds[b], bounds[b + 1]
        rows = rng.integers(lo, hi, size=D)
        signs = rng.choice([-1.0, 1.0], size=D)
        R[rows, np.arange(D)] += signs / np.sqrt(s)
    return R


class ClusterEnsemble(FeatureMethod):
    """Consensus of several landmark FAST-GE partitions by SEC with sparse random projection."""

    name = "ensemble"
    description = ("semi-supervised cluster ensemble (Liu et al. 2017 §4): landmark FAST-GE "
                   "partitions, consensus by weighted k-means on a sparse random projection")
    constrained = True
    full_resolution = False
    options = OPTIONS

    def __init__(self, features: Features, shape: tuple[int, ...],
                 settings: Settings | None = None, **options: Any) -> None:
        super().__init__(features, shape, settings, **options)
        # Each base partition is a landmark FAST-GE with these settings and its own seed.
        self.bases = [LandmarkFastGE(features, shape, self._base_settings(self.settings, i))
                      for i in range(self.settings["n_partitions"])]

    @staticmethod
    def _base_settings(o: Settings, i: int) -> Settings:
        """Base partition i's settings: the ensemble's (already checked), its own seed."""
        seed = int(np.random.default_rng([o["seed"], 2, i]).integers(2 ** 31))
        return o.pick(LandmarkFastGE.options, LandmarkFastGE.name, seed=seed)

    def _solve(self, strokes: Strokes, cancel: CancelToken,
               timings: dict[str, float]) -> Segmentation:
        o = self.settings
        k, n = strokes.k, self.features.n
        t = time.perf_counter()
        ids = np.asarray(strokes.label_ids)
        lut = np.zeros(ids.max() + 1, np.uint8)
        lut[ids] = np.arange(k)
        codes = np.empty((n, len(self.bases)), np.uint8)
        for i, m in enumerate(self.bases):
            cancel.progress("base partitions", i, len(self.bases))
            # this update's solve options reach every base partition
            res = m.answer(strokes, cancel, self._base_settings(o, i))
            codes[:, i] = lut[res.labels.ravel()]
        timings["base_partitions"] = time.perf_counter() - t

        t = time.perf_counter()
        cancel.progress("consensus")
        labels, votes, obj, distinct = self._consensus(codes, strokes, cancel)
        timings["consensus"] = time.perf_counter() - t
        b0 = self.bases[0]
        diag = LandmarkDiagnostics(b0.code.p, b0.basis.size, b0.code.feature_sigma, strokes.kept(labels),
                                   {"partitions": len(self.bases), "distinct_rows": distinct,
                                    "objective": round(obj, 6)})
        return Segmentation(labels, strokes.label_ids, votes, np.zeros(0), diagnostics=diag)

    def _consensus(self, codes: np.ndarray, strokes: Strokes,
                   cancel: CancelToken) -> tuple[np.ndarray, np.ndarray, float, int]:
        o = self.settings
        n, r = codes.shape
        k = strokes.k
        rng = np.random.default_rng([o["seed"], 3])
        # distinct rows of B (= distinct tuples of base labels)
        if r * np.log2(max(k, 2)) < 62:
            key = np.zeros(n, np.int64)
            for i in range(r):
                key = key * k + codes[:, i]
            _, first, inverse, counts = np.unique(key, return_index=True, return_inverse=True,
                                                  return_counts=True)
            tuples = codes[first]
        else:
            tuples, inverse, counts = np.unique(codes, axis=0, return_inverse=True,
                                                return_counts=True)
        inverse = inverse.ravel()
        # w_l = Σ_i |C^(i)(l)| (Lemma 1): sizes of the clusters containing the tuple
        sizes = np.stack([np.bincount(codes[:, i], minlength=k) for i in range(r)])  # r × k
        w = sizes[np.arange(r)[None, :], tuples].sum(axis=1).astype(float)
        D = r * k
        d = o["projection_dim"] or min(D, 4 * k)
        cols = np.arange(r)[None, :] * k + tuples                 # column of B per partition
        if d >= D:    # nothing to reduce: B itself (a projection could only merge its rows)
            R = np.eye(D)
        else:
            R = sparse_projection(d, D, min(o["projection_nnz"], d), rng)
        Y = R[:, cols].sum(axis=2).T / w[:, None]                 # R b_l / w_l, per tuple
        weights = w * counts
        # Each tuple holding painted pixels is anchored to the label most of them carry.
        votes_per_tuple = np.zeros((len(tuples), k))
        for a, S in enumerate(strokes.sets):
            np.add.at(votes_per_tuple[:, a], inverse[S], 1.0)
        painted = np.flatnonzero(votes_per_tuple.sum(axis=1) > 0)
        owner = np.argmax(votes_per_tuple[painted], axis=1)
        tuple_sets = [painted[owner == a] for a in range(k)]
        if any(T.size == 0 for T in tuple_sets):
            raise InvalidInputError("the base partitions merge two labels' strokes everywhere: "
                                    "the ensemble cannot tell them apart (try n_partitions "
                                    "or method 'landmark')")
        tcodes, _, _ = anchored_kmeans(Y, tuple_sets, weights=weights, rng=rng, cancel=cancel)
        tcodes = tcodes.astype(np.int64)
        # The weighted k-means objective of the consensus (a label may end with no tuple: its
        # painted tuples projected onto another label's point).
        mass = np.bincount(tcodes, weights=weights, minlength=k)
        means = np.stack([np.bincount(tcodes, weights=weights * Y[:, j], minlength=k)
                          for j in range(Y.shape[1])], axis=1) / np.maximum(mass, 1e-300)[:, None]
        obj = float(np.dot(weights, ((Y - means[tcodes]) ** 2).sum(axis=1)))
        labels = np.asarray(strokes.label_ids, np.int32)[tcodes[inverse]]
        frac = np.stack([(tuples == a).mean(axis=1) for a in range(k)], axis=1)   # tuple × k
        votes = frac.astype(np.float32)[inverse]
        return labels, votes, obj, len(tuples)
