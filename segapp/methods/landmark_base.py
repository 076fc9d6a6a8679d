"""What the landmark methods share: options, the sampled partition, the method shells.

The feature family of :class:`segapp.methods.base.Method`, used by
:mod:`segapp.methods.landmark_fastge` (Liu et al. 2017, §3), :mod:`segapp.methods.ensemble`
(same paper, §4), :mod:`segapp.methods.scacs` (Li et al. 2015, Algorithm 1) and
:mod:`segapp.methods.scpc`. The feature vectors are in :mod:`segapp.graphs.features`, the
landmark graph (landmarks, sparse coding, the orthonormal basis, painted pixels as landmarks)
in :mod:`segapp.graphs.landmark`, the strokes in :mod:`segapp.strokes.reading`.

Partition
---------
:func:`partition` maps landmark coefficients ``Y`` (p × m) to the embedding ``X = Ẑ Y`` (n × m),
normalises its rows (FAST-GE Fig. 2 steps 8–10; SCACS step 12), runs the k-means anchored to
the strokes (:func:`segapp.partition.anchored_kmeans`) on a random sample of ``kmeans_sample``
embedded rows plus the stroke rows, and then assigns every row to its nearest prototype in
chunks — the random-sampling k-means of Liu et al. §3.1.
"""

from __future__ import annotations

import time
from abc import abstractmethod
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

import numpy as np
from scipy.cluster.vq import vq

from ..cancel import NEVER, CancelToken
from ..errors import InvalidInputError
from ..graphs.features import CHUNK, ArrayFeatures, Features, ImageFeatures
from ..graphs.landmark import (LandmarkBasis, SparseCode, StrokeRecoding, add_stroke_landmarks,
                               select_landmarks, sparse_code)
from ..options import SEED, Option, Settings
from ..partition import STROKE_AGREEMENT, anchored_kmeans, stroke_agreement
from ..strokes.reading import Strokes
from ..result import Segmentation
from .base import Method
from .embedding import normalise_rows

#: Options shared by the landmark methods. Bounds: the p × p eigenproblems cost O(p³) time
#: and 8p² bytes per matrix (5000 landmarks: 200 MB, tens of seconds); coding on r nearest
#: landmarks costs r(r+1)/2 passes over the n points.
LANDMARK_OPTIONS: tuple[Option, ...] = (
    # The highs bound the work (issue 23): dense p × p eigenproblems, O(p³). At 0.25 MP one
    # landmark FAST-GE solve took 10.5 CPU-s with 2000 + 1000 stroke landmarks (SCACS 10.5);
    # with 5000 it ran 134 s on the loaded 2-core machine.
    Option("n_landmarks", int, 1000, "landmarks p (the eigenproblems are p × p)", "setup",
           low=2, high=2000),
    Option("landmark_selection", str, "kmeans", "landmarks drawn at random or as k-means "
           "centres of a sample", "setup", choices=("random", "kmeans")),
    Option("landmark_sample", int, 50_000, "points sampled for the k-means landmark selection",
           "setup", low=2, high=1_000_000),
    Option("n_nearest", int, 5, "nearest landmarks r each point is coded on", "setup",
           low=2, high=20),
    Option("sigma", float, None, "kernel width of the sparse coding, in feature units",
           "setup", low=1e-6, high=1e6, none_ok=True, none_means="sigma_scale × sigma_rule"),
    Option("sigma_rule", str, "knn", "data-driven width: mean distance to the r nearest "
           "landmarks (knn) or to all landmarks (all)", "setup", choices=("knn", "all")),
    Option("sigma_scale", float, 1.0, "multiplier of the data-driven width", "setup",
           low=0.01, high=100.0),
    Option("spatial_weight", float, 0.25, "weight of pixel position against colour in an "
           "image's features", "setup", low=0.0, high=100.0),
    Option("stroke_landmarks", int, 100, "painted pixels added to the landmarks (0: the "
           "papers' landmarks alone)", "solve", low=0, high=1000),
    Option("kmeans_sample", int, 20_000, "rows k-means runs on (every other row goes to the "
           "nearest centre)", "solve", low=2, high=1_000_000),
    replace(SEED, stage="setup", help="random seed (landmarks, k-means starts)"),
)


# -- partition ------------------------------------------------------------------------------
def _identity(X: np.ndarray) -> np.ndarray:
    return X


def round_landmark_embedding(code: SparseCode, Y: np.ndarray, strokes: Strokes, *, sample: int,
              rng: np.random.Generator, cancel: CancelToken = NEVER,
              normalise: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Labels (user ids, flat int32) and the embedding ``Ẑ Y`` (n × m float32); module notes.

    k-means with each cluster anchored to one label's strokes
    (:func:`segapp.partition.anchored_kmeans`) runs on ``sample`` random rows plus the stroke
    rows; every row then goes to its nearest centre. Rows are normalised first unless
    ``normalise`` is False. The labels are not yet clamped to the strokes (the caller does it
    after reading the agreement). ``code`` is anything with ``n`` and :meth:`SparseCode.apply`.
    """
    n, k = code.n, strokes.k
    rownorm = normalise_rows if normalise else _identity
    free = np.sort(rng.choice(n, size=min(n, sample), replace=False))
    cap = max(1, sample // (4 * k))
    picked = [S if len(S) <= cap else np.sort(rng.choice(S, cap, replace=False))
              for S in strokes.sets]
    rows = np.concatenate([free] + picked)
    offsets = np.cumsum([free.size] + [len(S) for S in picked])
    local = [np.arange(lo, hi) for lo, hi in zip(offsets[:-1], offsets[1:])]
    U = rownorm(code.apply(Y, rows=rows))
    _, centres, owner = anchored_kmeans(U, local, sample=U.shape[0], rng=rng, cancel=cancel)
    codes = np.empty(n, np.int64)
    X32 = np.empty((n, Y.shape[1]), np.float32)
    for lo in range(0, n, CHUNK):
        cancel.check()
        hi = min(lo + CHUNK, n)
        X = code.apply(Y, lo, hi)
        X32[lo:hi] = X
        nearest, _ = vq(rownorm(X), centres, check_finite=False)
        codes[lo:hi] = owner[nearest]
    return np.asarray(strokes.label_ids, np.int32)[codes], X32


# -- the common method shell ----------------------------------------------------------------
@dataclass
class LandmarkDiagnostics:
    """What a landmark method did: sizes, bandwidth, and how many stroke pixels kept their label."""

    n_landmarks: int
    basis_size: int
    sigma: float
    stroke_agreement: float
    extra: dict[str, Any] = field(default_factory=dict)

    def __repr__(self) -> str:
        more = "".join(f", {k}={v}" for k, v in self.extra.items())
        return (f"LandmarkDiagnostics(landmarks={self.n_landmarks}, basis={self.basis_size}, "
                f"sigma={self.sigma:.3g}, strokes kept={self.stroke_agreement:.1%}{more})")


class FeatureMethod(Method):
    """A method on feature vectors (images or (n, f) data): builds the features.

    ``from_image`` / ``from_data`` build the features and call ``cls(features, shape, settings)``.
    """

    #: Session works at full resolution (no reduced working copy): the point of these methods.
    full_resolution: ClassVar[bool] = True
    options: ClassVar[tuple[Option, ...]] = LANDMARK_OPTIONS

    @classmethod
    def from_settings(cls, image: np.ndarray, settings: Settings) -> "FeatureMethod":
        """Pixels as colour + scaled position feature vectors (see :mod:`segapp.graphs.features`)."""
        img = np.asarray(image)
        if img.ndim not in (2, 3) or (img.ndim == 3 and img.shape[2] not in (1, 3)):
            raise InvalidInputError(f"image must be (H, W) or (H, W, 3); got shape {img.shape}")
        feats = ImageFeatures(img, float(settings["spatial_weight"]))
        return cls(feats, feats.shape, settings)

    @classmethod
    def from_data(cls, *, graph: Any = None, features: np.ndarray | None = None,
                  **options: Any) -> "FeatureMethod":
        """On feature vectors (n, f); a graph alone is not enough for a landmark method."""
        if features is None:
            raise InvalidInputError(
                f"method {cls.name!r} needs feature vectors (features=, an (n, f) array)")
        feats = ArrayFeatures(features)
        return cls(feats, (feats.n,), **options)

    def __init__(self, features: Features, shape: tuple[int, ...],
                 settings: Settings | None = None, **options: Any) -> None:
        """On built features; ``settings`` already checked (:meth:`Method.resolve`), or
        ``options`` checked here."""
        self.features = features
        self.shape = tuple(shape)
        self.n = features.n
        self._settle(type(self).resolve(options) if settings is None else settings)


class LandmarkMethod(FeatureMethod):
    """Shell shared by the single-graph landmark methods: options, lazily built landmark graph.

    Subclasses set ``name``, ``description``, ``options`` and implement :meth:`_embed`.
    The landmarks, the coding and the basis are built on the first :meth:`update` (so that
    ``cancel`` covers them too) and reused by every later edit.
    """

    def __init__(self, features: Features, shape: tuple[int, ...],
                 settings: Settings | None = None, **options: Any) -> None:
        super().__init__(features, shape, settings, **options)
        self.code: SparseCode | None = None      # the coding of this edit (with its strokes)
        self.basis: LandmarkBasis | None = None
        self._landmarks: np.ndarray | None = None
        self._base: SparseCode | None = None     # the coding over the p landmarks alone
        self._raw: np.ndarray | None = None      # its raw Gram ZᵀZ
        self._recoding: StrokeRecoding | None = None
        self._basis_key: tuple | None = None

    # -- set-up (once per data set) --------------------------------------------------------
    def prepare(self, cancel: CancelToken = NEVER, seed_offset: int = 0) -> dict[str, float]:
        """Build landmarks, coding and its Gram matrix if not yet done; the stages' timings.

        Each stage is kept only once it is complete: a cancel in the middle of the coding
        left the code without its Gram matrix, and the next update solved with NaN
        (issue 30: an ensemble Session cancelled during its first update).
        """
        o = self.settings
        timings: dict[str, float] = {}
        rng = np.random.default_rng([o["seed"], seed_offset])
        if self._landmarks is None:
            t = time.perf_counter()
            cancel.progress("choosing landmarks")
            self._landmarks = select_landmarks(
                self.features, o["n_landmarks"], method=o["landmark_selection"],
                sample=o["landmark_sample"], rng=rng, cancel=cancel)
            timings["landmarks"] = time.perf_counter() - t
        if self._base is None:
            t = time.perf_counter()
            cancel.progress("coding the pixels on the landmarks")
            base = sparse_code(self.features, self._landmarks,
                               min(o["n_nearest"], self._landmarks.shape[0]),
                               sigma=o["sigma"], sigma_rule=o["sigma_rule"],
                               sigma_scale=o["sigma_scale"], cancel=cancel)
            raw = base.raw_gram(cancel)
            self._base, self._raw, self.code = base, raw, base
            timings["coding"] = time.perf_counter() - t
        self.timings.update(timings)
        return timings

    def _with_strokes(self, strokes: Strokes, timings: dict[str, float],
                      cancel: CancelToken) -> None:
        """``self.code`` / ``self.basis`` for these strokes: the base coding with the painted
        pixels added as landmarks (:func:`add_stroke_landmarks`), rebuilt when they change."""
        cap = self.settings["stroke_landmarks"]
        key = (cap, tuple(strokes.label_ids), strokes.keys())
        if key == self._basis_key and self.basis is not None:
            return
        t = time.perf_counter()
        cancel.progress("adding painted pixels to the landmarks")
        if self._recoding is not None:
            self._recoding.undo(self._base)
            self._recoding = None
        self._basis_key = None
        if cap > 0:
            self.code, raw, self._recoding = add_stroke_landmarks(
                self._base, self.features, strokes, cap, self._raw, cancel)
        else:
            self.code, raw = self._base, self._raw
        self.basis = LandmarkBasis.build(self.code, cancel, raw)
        self._basis_key = key
        timings["basis"] = time.perf_counter() - t

    def _solve(self, strokes: Strokes, cancel: CancelToken,
               timings: dict[str, float]) -> Segmentation:
        """Landmark graph for these strokes (the first call also builds the landmarks), then
        the subclass's eigenproblem and partition (:meth:`_embed`)."""
        setup = self.prepare(cancel)
        cancel.check()
        if strokes.k > self._base.p:
            raise InvalidInputError(
                f"{strokes.k} labels but only {self._base.p} landmarks: k must not exceed the "
                "number of landmarks (raise n_landmarks)")
        timings.update(setup)
        self._with_strokes(strokes, timings, cancel)
        cancel.progress("solving the landmark eigenproblem")
        labels, vectors, lam, extra = self._embed(strokes, timings, cancel)
        diag = LandmarkDiagnostics(self.code.p, self.basis.size, self.code.feature_sigma,
                                   strokes.kept(labels), extra)
        return Segmentation(labels, strokes.label_ids, vectors, np.asarray(lam, float),
                            diagnostics=diag)

    def _partition(self, Y: np.ndarray, strokes: Strokes, timings: dict[str, float],
                   cancel: CancelToken) -> tuple[np.ndarray, np.ndarray, bool]:
        """Labels and embedding of the basis coefficients ``Y`` (:func:`partition`), and
        whether every label keeps ≥ :data:`~segapp.partition.STROKE_AGREEMENT` of its strokes
        (if not, the subclass tries one more vector, as FAST-GE does)."""
        t = time.perf_counter()
        rng = np.random.default_rng([self.settings["seed"], 1])
        # One vector: a unit-length row is its sign, which cannot tell two labels on the same
        # side of the mean apart; the anchored k-means then splits the values themselves.
        labels, X = round_landmark_embedding(self.basis.code, Y, strokes,
                                             sample=self.settings["kmeans_sample"], rng=rng,
                                             cancel=cancel, normalise=Y.shape[1] > 1)
        timings["partition"] = timings.get("partition", 0.0) + time.perf_counter() - t
        separated = stroke_agreement(strokes.codes(labels), strokes.sets).min() >= STROKE_AGREEMENT
        return labels, X, separated

    @abstractmethod
    def _embed(self, strokes: Strokes, timings: dict[str, float],
               cancel: CancelToken) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Labels (flat), embedding (n × m), eigenvalues and extra diagnostics for the strokes
        (the subclass's eigenproblem and :meth:`_partition`)."""
