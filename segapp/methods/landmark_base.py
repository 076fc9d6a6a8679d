"""What the landmark methods share: options, strokes, the sampled partition, the method shells.

Used by :mod:`segapp.methods.landmark_fastge` (Liu et al. 2017, §3), :mod:`segapp.methods.ensemble`
(same paper, §4), :mod:`segapp.methods.scacs` (Li et al. 2015, Algorithm 1) and
:mod:`segapp.methods.scpc`. The feature vectors are in :mod:`segapp.graphs.features`, the landmark
graph (landmarks, sparse coding, the orthonormal basis, painted pixels as landmarks) in
:mod:`segapp.graphs.landmark`; their names are re-exported here.

Partition
---------
:func:`partition` maps landmark coefficients ``Y`` (p × m) to the embedding ``X = Ẑ Y`` (n × m),
normalises its rows (FAST-GE Fig. 2 steps 8–10; SCACS step 12), runs the k-means anchored to
the strokes (:func:`segapp.partition.anchored_kmeans`) on a random sample of ``kmeans_sample``
embedded rows plus the stroke rows, and then assigns every row to its nearest prototype in
chunks — the random-sampling k-means of Liu et al. §3.1.
"""

from __future__ import annotations

import hashlib
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

import numpy as np
from scipy.cluster.vq import vq
from threadpoolctl import threadpool_limits

from ..strokes.constraints import confidence_weights, stroke_sets
from ..errors import InvalidInputError
from ..graphs.features import CHUNK, ArrayFeatures, Features, ImageFeatures
from ..cancel import CancelToken
from ..graphs.landmark import (RANK_TOL, Cancel, LandmarkBasis, SparseCode, StrokeRecoding,
                              add_stroke_landmarks, check_cancel, pick_stroke_pixels,
                              select_landmarks, sparse_code)
from ..options import SEED, HasOptions, Option, resolve
from ..partition import STROKE_AGREEMENT, anchored_kmeans, clamp_strokes
from ..result import Segmentation

__all__ = ["CHUNK", "RANK_TOL", "LANDMARK_OPTIONS", "Cancel", "check_cancel", "Features",
           "ArrayFeatures", "ImageFeatures", "select_landmarks", "SparseCode", "sparse_code",
           "pick_stroke_pixels", "add_stroke_landmarks", "LandmarkBasis", "StrokeSets",
           "read_strokes", "partition", "LandmarkDiagnostics", "FeatureMethod", "LandmarkMethod"]

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


# -- constraints ----------------------------------------------------------------------------
@dataclass
class StrokeSets:
    """The strokes of one scribble map: label ids, pixel sets and their weights ``√q``."""

    label_ids: tuple[int, ...]
    sets: list[np.ndarray]
    weights: list[np.ndarray]

    @property
    def k(self) -> int:
        return len(self.label_ids)

    @property
    def count(self) -> int:
        return int(sum(S.size for S in self.sets))

    def agreement(self, labels: np.ndarray) -> dict[int, float]:
        """Per label id, the share of its stroke pixels that ``labels`` (flat) give that label."""
        return {i: float(np.mean(labels[S] == i)) for i, S in zip(self.label_ids, self.sets)}

    def kept(self, labels: np.ndarray) -> float:
        """Share of all stroke pixels that ``labels`` (flat) give their painted label."""
        return float(np.mean(np.concatenate(
            [labels[S] == i for i, S in zip(self.label_ids, self.sets)])))


def read_strokes(scribbles: np.ndarray, n: int, confidence: np.ndarray | None) -> StrokeSets:
    """Validate strokes (and optional per-pixel confidence in [0, 1]) as FAST-GE does."""
    label_ids, sets = stroke_sets(scribbles, n)
    return StrokeSets(label_ids, sets, confidence_weights(confidence, n, sets))


def _fingerprint(S: np.ndarray) -> bytes:
    return hashlib.blake2b(np.ascontiguousarray(S).tobytes(), digest_size=16).digest()


# -- partition ------------------------------------------------------------------------------
def _normalise_rows(X: np.ndarray) -> np.ndarray:
    lengths = np.sqrt(np.einsum("ij,ij->i", X, X))
    return X / np.where(lengths > 0, lengths, 1.0)[:, None]


def _identity(X: np.ndarray) -> np.ndarray:
    return X


def partition(code: SparseCode, Y: np.ndarray, strokes: StrokeSets, *, sample: int,
              rng: np.random.Generator, cancel: Cancel = None,
              normalise: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Labels (user ids, flat int32) and the embedding ``Ẑ Y`` (n × m float32); module notes.

    k-means with each cluster anchored to one label's strokes
    (:func:`segapp.partition.anchored_kmeans`) runs on ``sample`` random rows plus the stroke
    rows; every row then goes to its nearest centre. Rows are normalised first unless
    ``normalise`` is False. The labels are not yet clamped to the strokes (the caller does it
    after reading the agreement). ``code`` is anything with ``n`` and :meth:`SparseCode.apply`.
    """
    n, k = code.n, strokes.k
    rownorm = _normalise_rows if normalise else _identity
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
        check_cancel(cancel)
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


class FeatureMethod(HasOptions, ABC):
    """Construction shared by the methods that work on feature vectors (images or (n, f) data).

    ``from_image`` / ``from_data`` build the features and call ``cls(features, shape, **options)``.
    """

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    constrained: ClassVar[bool] = True
    #: Session works at full resolution (no reduced working copy): the point of these methods.
    full_resolution: ClassVar[bool] = True
    options: ClassVar[tuple[Option, ...]] = LANDMARK_OPTIONS

    @classmethod
    def from_image(cls, image: np.ndarray, **options: Any) -> "LandmarkMethod":
        """Pixels as colour + scaled position feature vectors (see :mod:`segapp.methods.landmark_base`)."""
        resolved = resolve(cls.options, options, cls.name)
        cls._check_together(resolved)      # before the features: they are the first work
        sw = resolved["spatial_weight"]
        img = np.asarray(image)
        if img.ndim not in (2, 3) or (img.ndim == 3 and img.shape[2] not in (1, 3)):
            raise InvalidInputError(f"image must be (H, W) or (H, W, 3); got shape {img.shape}")
        feats = ImageFeatures(img, float(sw))
        return cls(feats, feats.shape, **options)

    @classmethod
    def from_data(cls, *, graph: Any = None, features: np.ndarray | None = None,
                  **options: Any) -> "LandmarkMethod":
        """On feature vectors (n, f); a graph alone is not enough for a landmark method."""
        if features is None:
            raise InvalidInputError(
                f"method {cls.name!r} needs feature vectors (features=, an (n, f) array)")
        feats = ArrayFeatures(features)
        return cls(feats, (feats.n,), **options)

    def __init__(self, features: Features, shape: tuple[int, ...], **options: Any) -> None:
        self._set_options(resolve(type(self).options, options, self.name))
        self._validate()
        self.features = features
        self.shape = tuple(shape)
        self.timings: dict[str, float] = {}

    @classmethod
    def _check_together(cls, options: dict[str, Any]) -> None:
        """Checks of set-up options that involve several of them (override); each option
        checks itself. Runs before any work."""

    def _validate(self) -> None:
        """Checks that involve several options (override); each option checks itself."""
        self._check_together(self.options)

    def update(self, scribbles: np.ndarray, *, cancel: Cancel = None,
               confidence: np.ndarray | None = None, **solve_options: Any) -> Segmentation:
        """Segment with the given strokes (subclasses implement ``_update``).

        ``solve_options`` (the solve-stage ones of ``options``) apply to this update only.

        On one BLAS thread, as :meth:`segapp.methods.fastge.FastGE.update`: on the 2-core
        machine with another process busy, a landmark FAST-GE call on the Four-Moons data took
        31 s with OpenBLAS's default threads and 3.9 s with one (``benchmarks/synthetic.py``).
        """
        self._use_solve_options(solve_options)
        self._validate()
        # Any cancel-like value (a callable, an Event, a token), as every method takes: the
        # token is the callable the landmark code polls (issue 24: an Event raised TypeError).
        token = CancelToken.of(cancel)
        with threadpool_limits(limits=1, user_api="blas"):
            return self._update(scribbles, cancel=token, confidence=confidence)

    @abstractmethod
    def _update(self, scribbles: np.ndarray, *, cancel: Cancel,
                confidence: np.ndarray | None) -> Segmentation:
        """The method's work for one edit (called on one BLAS thread)."""


class LandmarkMethod(FeatureMethod):
    """Shell shared by the single-graph landmark methods: options, lazily built landmark graph.

    Subclasses set ``name``, ``description``, ``options`` and implement :meth:`_solve`.
    The landmarks, the coding and the basis are built on the first :meth:`update` (so that
    ``cancel`` covers them too) and reused by every later edit.
    """

    def __init__(self, features: Features, shape: tuple[int, ...], **options: Any) -> None:
        super().__init__(features, shape, **options)
        self.code: SparseCode | None = None      # the coding of this edit (with its strokes)
        self.basis: LandmarkBasis | None = None
        self._landmarks: np.ndarray | None = None
        self._base: SparseCode | None = None     # the coding over the p landmarks alone
        self._raw: np.ndarray | None = None      # its raw Gram ZᵀZ
        self._recoding: StrokeRecoding | None = None
        self._basis_key: tuple | None = None

    # -- set-up (once per data set) --------------------------------------------------------
    def prepare(self, cancel: Cancel = None, seed_offset: int = 0) -> dict[str, float]:
        """Build landmarks, coding and its Gram matrix if not yet done; the stages' timings."""
        o = self.options
        timings: dict[str, float] = {}
        rng = np.random.default_rng([o["seed"], seed_offset])
        if self._landmarks is None:
            t = time.perf_counter()
            self._landmarks = select_landmarks(
                self.features, o["n_landmarks"], method=o["landmark_selection"],
                sample=o["landmark_sample"], rng=rng, cancel=cancel)
            timings["landmarks"] = time.perf_counter() - t
        if self._base is None:
            t = time.perf_counter()
            self._base = sparse_code(self.features, self._landmarks,
                                     min(o["n_nearest"], self._landmarks.shape[0]),
                                     sigma=o["sigma"], sigma_rule=o["sigma_rule"],
                                     sigma_scale=o["sigma_scale"], cancel=cancel)
            self._raw = self._base.raw_gram(cancel)
            self.code = self._base
            timings["coding"] = time.perf_counter() - t
        self.timings.update(timings)
        return timings

    def _with_strokes(self, strokes: StrokeSets, timings: dict[str, float],
                      cancel: Cancel) -> None:
        """``self.code`` / ``self.basis`` for these strokes: the base coding with the painted
        pixels added as landmarks (:func:`add_stroke_landmarks`), rebuilt when they change."""
        cap = self.options["stroke_landmarks"]
        key = (cap, tuple(strokes.label_ids), tuple(_fingerprint(S) for S in strokes.sets))
        if key == self._basis_key and self.basis is not None:
            return
        t = time.perf_counter()
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

    def _update(self, scribbles: np.ndarray, *, cancel: Cancel = None,
                confidence: np.ndarray | None = None) -> Segmentation:
        """Segment with the given strokes (the first call also builds the landmark graph)."""
        strokes = read_strokes(scribbles, self.features.n, confidence)
        setup = self.prepare(cancel)
        check_cancel(cancel)
        if strokes.k > self._base.p:
            raise InvalidInputError(
                f"{strokes.k} labels but only {self._base.p} landmarks: k must not exceed the "
                "number of landmarks (raise n_landmarks)")
        timings: dict[str, float] = dict(setup)
        self._with_strokes(strokes, timings, cancel)
        labels, vectors, lam, extra = self._solve(strokes, timings, cancel)
        agreement = strokes.agreement(labels)
        diag = LandmarkDiagnostics(self.code.p, self.basis.size, self.code.sigma,
                                   strokes.kept(labels), extra)
        clamp_strokes(labels, strokes.sets, strokes.label_ids)
        return Segmentation(labels.reshape(self.shape), strokes.label_ids,
                            vectors.reshape(*self.shape, -1), np.asarray(lam, float), timings,
                            diag, self.name, stroke_agreement=agreement)

    def _partition(self, Y: np.ndarray, strokes: StrokeSets, timings: dict[str, float],
                   cancel: Cancel) -> tuple[np.ndarray, np.ndarray, bool]:
        """Labels and embedding of the basis coefficients ``Y`` (:func:`partition`), and
        whether every label keeps ≥ :data:`~segapp.partition.STROKE_AGREEMENT` of its strokes
        (if not, the subclass tries one more vector, as FAST-GE does)."""
        t = time.perf_counter()
        rng = np.random.default_rng([self.options["seed"], 1])
        # One vector: a unit-length row is its sign, which cannot tell two labels on the same
        # side of the mean apart; the anchored k-means then splits the values themselves.
        labels, X = partition(self.basis.code, Y, strokes, sample=self.options["kmeans_sample"],
                              rng=rng, cancel=cancel, normalise=Y.shape[1] > 1)
        timings["partition"] = timings.get("partition", 0.0) + time.perf_counter() - t
        separated = min(strokes.agreement(labels).values()) >= STROKE_AGREEMENT
        return labels, X, separated

    @abstractmethod
    def _solve(self, strokes: StrokeSets, timings: dict[str, float],
               cancel: Cancel) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Labels (flat), embedding (n × m), eigenvalues and extra diagnostics for the strokes."""
