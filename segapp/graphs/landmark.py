# Over 400 lines on purpose: the landmark graph is one pipeline (landmarks, coding, basis, painted-
# pixel landmarks) whose steps share their arrays.
#
# Why its own k-means (_kmeanspp, _lloyd) beside segapp.partition.kmeans: that one partitions
# an embedding into k ≤ ~20 clusters, best of several restarts (scipy's kmeans2); this one
# quantises a 50,000-row sample into p = hundreds to thousands of landmarks, once. scipy's
# k-means++ start recomputes the distances to all chosen centres for each new one (O(n·p²))
# and its assignment is brute force (O(n·p) per iteration); here one distance update per new
# centre (O(n·p)) and a k-d tree. Measured (50,000 × 5 rows, 10 iterations, one run each,
# load average 15): p = 250: 5.7 s here against 51 s with kmeans2(minit="++"), p = 500: 7.7 s
# against 269 s — the gap grows like p.
"""Landmark (sparse-coding) graphs: landmarks, Nadaraya–Watson coding, the orthonormal basis.

The graph of Chen & Cai (AAAI 2011) that SCACS §2.2 and Liu et al. §2.2 build, on the feature
vectors of :mod:`segapp.graphs.features`; the methods using it share :mod:`segapp.methods.landmark_base`.

Landmarks
---------
``p`` landmarks ``u_1 … u_p`` (the "base vectors" ``U`` of SCACS eq. (2)):

- ``"random"``: p points drawn at random (the papers' choice: Chen & Cai; SCACS Algorithm 1,
  step 2; Liu et al. §2.2);
- ``"kmeans"``: the centres of a k-means (k-means++ start, 10 Lloyd iterations) of a random
  sample of ``landmark_sample`` points — Chen & Cai's better-quality alternative; on images it
  places landmarks in small regions that a uniform sample misses.

Duplicate landmarks (identical feature vectors, common in flat image areas) are removed, and
so is any landmark that ends up with no weight (column sum 0), so ``p`` may shrink.

Sparse coding (Nadaraya–Watson)
-------------------------------
SCACS eq. (3) / Liu et al. eq. (4): with ``rNB(i)`` the ``r`` landmarks nearest to ``x_i``
(:class:`scipy.spatial.cKDTree`, all cores),

.. math:: Z_{ij} = \\frac{K_σ(x_i, u_j)}{\\sum_{j' ∈ rNB(i)} K_σ(x_i, u_{j'})}, \\quad j ∈ rNB(i),
   \\qquad K_σ(x, u) = \\exp(-\\lVert x - u\\rVert^2 / 2σ^2),

zero otherwise. Here ``Z`` is stored **n × p** (the papers write it p × n; every formula below is
the transpose of theirs) as an ``(n, r)`` int32 index array and an ``(n, r)`` float64 weight
array, 12·r bytes per point; rows sum to 1 (float64, not float32: the identity ``W 1 = 1`` below
must hold to ~1e-16, since float32 rounding of the weights perturbs the Laplacian by ~1e-7,
more than the smallest eigenvalues of well-separated data). The kernel is evaluated as ``exp(-(d² - d_1²) / 2σ²)`` (``d_1`` the
nearest distance; the factor cancels in the normalisation) so it cannot underflow to 0/0.

Bandwidth ``σ = sigma_scale · σ_0`` unless ``sigma`` is given, with ``σ_0`` by ``sigma_rule``:
``"knn"`` the mean distance of the points to their r nearest landmarks (Chen & Cai), ``"all"``
the mean distance between points and landmarks (SCACS §5.2: "the average Euclidean distance
between all instances and base vectors"), estimated on ≤ 2000 evenly spaced points.

The landmark graph
------------------
``D = diag(1ᵀZ)`` (p × p, the landmarks' column sums), ``Ẑ = Z D^{-1/2}`` and the graph on the n
points is ``W = Ẑ Ẑᵀ`` (n × n, never formed). Its degrees are all exactly one:
``W 1 = Ẑ Ẑᵀ 1 = Z D^{-1/2} D^{1/2} 1 = Z 1 = 1``, so ``W`` is "automatically normalised"
(Chen & Cai; SCACS §2.2), ``L = I − ẐẐᵀ`` is both its combinatorial and its normalised
Laplacian, and the constant vector is in the range of ``Ẑ``: ``1 = Ẑ c`` with ``c = D^{1/2}1``.

Every method here restricts the n-dimensional unknowns to ``x = Ẑ y``, ``y ∈ R^p`` (SCACS §3.1,
Liu et al. §3.1). :class:`LandmarkBasis` makes that subspace orthonormal once per data set:
with ``Ŝ = ẐᵀẐ = V Λ Vᵀ`` (p × p; eigenvalues below ``1e-9·max`` dropped: directions of ``y``
that ``Ẑ`` maps to ~0) and ``T = V Λ^{-1/2}``, the n × p' matrix ``Φ = Ẑ T`` has orthonormal
columns spanning range(Ẑ), and in the coordinates ``x = Φ z``

.. math:: Φᵀ L Φ = I − Λ, \\qquad Φᵀ Φ = I, \\qquad Φᵀ 1 = e := Tᵀ c, \\quad \\lVert e\\rVert^2 = n,

i.e. the landmark graph is *diagonal* there. Quantities on a set ``S`` of points with weights
``u`` (stroke pixels) are ``Φᵀ diag(u) Φ = Tᵀ (Σ_{i∈S} u_i ẑ_i ẑ_iᵀ) T`` and ``Φᵀu = Tᵀ Σ u_i ẑ_i``
(``ẑ_i`` row i of ``Ẑ``), accumulated in O(|S|·r²) from the stroke rows alone. ``Ŝ`` itself is
accumulated in float64 from the (n, r) arrays by ``np.bincount`` over the r(r+1)/2 landmark pairs
of each row: O(n·r²) time, O(p²) extra memory. Nothing n × n, and nothing n × p dense, is formed.

Painted pixels as landmarks
---------------------------
Per edit, up to ``stroke_landmarks`` painted pixels (evenly spaced, ≥ 16 per label) join the p
landmarks; points whose nearest painted-pixel landmark is nearer than their r-th landmark are
recoded over the union, a painted pixel only over the base landmarks and its own label's
(:func:`add_stroke_landmarks`); the Gram matrix is updated from the changed rows and the basis
rebuilt (O(p³) per edit, as SCACS and Liu et al. already pay for their p × p problems).

"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import scipy.linalg as sla
from scipy.spatial import cKDTree

from ..cancel import NEVER, CancelToken
from ..errors import InvalidInputError
from .features import CHUNK, Features

if TYPE_CHECKING:   # the strokes stage comes after the graphs in the pipeline
    from ..strokes.reading import Strokes

#: Relative threshold below which eigenvalues of Ŝ = ẐᵀẐ are treated as zero.
RANK_TOL = 1e-9

# -- landmarks ------------------------------------------------------------------------------
def _kmeanspp(X: np.ndarray, p: int, rng: np.random.Generator) -> np.ndarray:
    """k-means++ seeding in O(n·p) (one distance update per new centre)."""
    n = X.shape[0]
    centres = np.empty((p, X.shape[1]))
    centres[0] = X[rng.integers(n)]
    d2 = ((X - centres[0]) ** 2).sum(1)
    for j in range(1, p):
        total = d2.sum()
        i = rng.integers(n) if total <= 0 else int(np.searchsorted(np.cumsum(d2), rng.random() * total))
        centres[j] = X[min(i, n - 1)]
        np.minimum(d2, ((X - centres[j]) ** 2).sum(1), out=d2)
    return centres


def _lloyd(X: np.ndarray, centres: np.ndarray, iterations: int, cancel: CancelToken) -> np.ndarray:
    """Lloyd iterations with k-d tree assignment; returns the non-empty centres."""
    p = centres.shape[0]
    counts = np.ones(p)
    for _ in range(iterations):
        cancel.check()
        _, lab = cKDTree(centres).query(X, k=1, workers=-1)
        counts = np.bincount(lab, minlength=p).astype(float)
        sums = np.stack([np.bincount(lab, weights=X[:, j], minlength=p)
                         for j in range(X.shape[1])], axis=1)
        nonempty = counts > 0
        centres[nonempty] = sums[nonempty] / counts[nonempty, None]
    return centres[counts > 0]


def select_landmarks(features: Features, p: int, *, method: str = "kmeans", sample: int = 50_000,
                     rng: np.random.Generator, cancel: CancelToken = NEVER) -> np.ndarray:
    """``p`` landmarks (rows, duplicates removed) by random sampling or k-means of a sample."""
    n = features.n
    if method == "random" or n <= p:
        idx = np.sort(rng.choice(n, size=min(p, n), replace=False))
        L = features.rows(idx)
    else:
        idx = np.sort(rng.choice(n, size=min(n, max(sample, p)), replace=False))
        X = features.rows(idx)
        L = _lloyd(X, _kmeanspp(X, p, rng), 10, cancel)
    return np.unique(L, axis=0)


# -- sparse coding --------------------------------------------------------------------------
@dataclass
class SparseCode:
    """``Z`` (n × p, r non-zeros per row) and the landmark column sums ``D``; see module notes."""

    idx: np.ndarray       # (n, r) int32 landmark indices
    w: np.ndarray         # (n, r) float64 Nadaraya–Watson weights, rows sum to 1
    colsum: np.ndarray    # (p,) float64, D = diag(colsum)
    landmarks: np.ndarray  # (p, f)
    sigma: float           # in the units of Features.rows
    kth: np.ndarray | None = None  # (n,) float32 distance to the r-th nearest landmark
    unit: float = 1.0      # feature units per unit of Features.rows

    @property
    def feature_sigma(self) -> float:
        """The kernel width in the features' own units (what diagnostics report)."""
        return self.sigma * self.unit

    @property
    def n(self) -> int:
        return self.idx.shape[0]

    @property
    def p(self) -> int:
        return self.colsum.shape[0]

    @property
    def r(self) -> int:
        return self.idx.shape[1]

    @property
    def dscale(self) -> np.ndarray:
        """``D^{-1/2}`` as a vector (Ẑ = Z D^{-1/2}; 0 for a landmark no point uses)."""
        used = self.colsum > 0
        return np.where(used, 1.0 / np.sqrt(np.where(used, self.colsum, 1.0)), 0.0)

    def _pair_sums(self, idx: np.ndarray, w: np.ndarray) -> np.ndarray:
        """``Σ_i w_i w_iᵀ`` over the given rows as a dense p × p (of Z, not Ẑ)."""
        p, r = self.p, self.r
        acc_diag = np.zeros(p * p)
        acc_off = np.zeros(p * p)
        for a in range(r):
            ia = idx[:, a].astype(np.int64) * p
            wa = w[:, a]
            for b in range(a, r):
                vals = wa * w[:, b]
                key = ia + idx[:, b]
                if a == b:
                    acc_diag += np.bincount(key, weights=vals, minlength=p * p)
                else:
                    acc_off += np.bincount(key, weights=vals, minlength=p * p)
        acc_off = acc_off.reshape(p, p)
        return acc_diag.reshape(p, p) + acc_off + acc_off.T

    def raw_gram(self, cancel: CancelToken = NEVER) -> np.ndarray:
        """``ZᵀZ`` (p × p, float64; Z before the ``D^{-1/2}`` scaling), over chunks of rows."""
        S = np.zeros((self.p, self.p))
        for lo in range(0, self.n, CHUNK):
            cancel.check()
            hi = min(lo + CHUNK, self.n)
            S += self._pair_sums(self.idx[lo:hi], self.w[lo:hi])
        return S

    def gram(self, cancel: CancelToken = NEVER, raw: np.ndarray | None = None) -> np.ndarray:
        """``Ŝ = ẐᵀẐ`` (p × p, float64) from :meth:`raw_gram` (or the ``raw`` given)."""
        S = self.raw_gram(cancel) if raw is None else raw.copy()
        ds = self.dscale
        S *= ds[:, None]
        S *= ds[None, :]
        return (S + S.T) / 2

    def weighted_gram(self, rows: np.ndarray, u: np.ndarray) -> np.ndarray:
        """``Σ_{i ∈ rows} u_i ẑ_i ẑ_iᵀ`` (p × p)."""
        w = self.w[rows] * np.sqrt(u)[:, None]
        G = self._pair_sums(self.idx[rows], w)
        ds = self.dscale
        return G * ds[:, None] * ds[None, :]

    def weighted_sum(self, rows: np.ndarray, u: np.ndarray) -> np.ndarray:
        """``Σ_{i ∈ rows} u_i ẑ_i`` (p,)."""
        w = self.w[rows] * u[:, None]
        return np.bincount(self.idx[rows].ravel(), weights=w.ravel(), minlength=self.p) * self.dscale

    def apply(self, Y: np.ndarray, lo: int = 0, hi: int | None = None,
              rows: np.ndarray | None = None) -> np.ndarray:
        """``Ẑ Y`` for the rows ``lo:hi`` (or the given ``rows``); Y is p × m; float64."""
        Yd = np.asarray(Y, dtype=np.float64) * self.dscale[:, None]
        idx = self.idx[rows] if rows is not None else self.idx[lo:hi]
        w = self.w[rows] if rows is not None else self.w[lo:hi]
        out = w[:, 0, None] * Yd[idx[:, 0]]
        for a in range(1, self.r):
            out += w[:, a, None] * Yd[idx[:, a]]
        return out


def _sigma_all(features: Features, landmarks: np.ndarray) -> float:
    """Mean distance between points and landmarks (SCACS §5.2), on ≤ 2000 evenly spaced points."""
    from scipy.spatial.distance import cdist
    idx = np.unique(np.linspace(0, features.n - 1, min(features.n, 2000)).astype(np.int64))
    return float(cdist(features.rows(idx), landmarks).mean())


def sparse_code(features: Features, landmarks: np.ndarray, r: int, *, sigma: float | None = None,
                sigma_rule: str = "knn", sigma_scale: float = 1.0,
                cancel: CancelToken = NEVER) -> SparseCode:
    """Nadaraya–Watson coding of every point over its ``r`` nearest landmarks (module notes)."""
    p = landmarks.shape[0]
    if r > p:
        raise InvalidInputError(f"n_nearest={r} is larger than the number of landmarks ({p})")
    n = features.n
    tree = cKDTree(landmarks)
    idx = np.empty((n, r), np.int32)
    d2 = np.empty((n, r))
    kth = np.empty(n, np.float32)
    dist_sum = 0.0
    for lo in range(0, n, CHUNK):
        cancel.check()
        hi = min(lo + CHUNK, n)
        dist, ind = tree.query(features.chunk(lo, hi), k=r, workers=-1)
        dist = dist.reshape(hi - lo, r)
        idx[lo:hi] = ind.reshape(hi - lo, r)
        dist_sum += float(dist.sum())
        kth[lo:hi] = dist[:, -1]
        # store squared distance minus the nearest one (the kernel factor that cancels)
        d2[lo:hi] = dist ** 2 - dist[:, :1] ** 2
    if sigma is None:
        base = dist_sum / (n * r) if sigma_rule == "knn" else _sigma_all(features, landmarks)
        sigma = sigma_scale * base
        if not sigma > 0:  # every point sits on a landmark: any positive width is equivalent
            sigma = 1.0
    else:
        sigma = sigma / features.unit        # given in the features' units
    # σ² may underflow for a tiny given σ: the kernel is then 1 on the nearest landmark alone.
    inv = -1.0 / max(2.0 * sigma * sigma, np.finfo(float).tiny)
    colsum = np.zeros(p)
    for lo in range(0, n, CHUNK):
        hi = min(lo + CHUNK, n)
        w = d2[lo:hi]
        np.multiply(w, inv, out=w)
        np.exp(w, out=w)
        w /= w.sum(axis=1, keepdims=True)
        colsum += np.bincount(idx[lo:hi].ravel(), weights=w.ravel(), minlength=p)
    w = d2
    keep = colsum > 0
    if not keep.all():  # landmarks no point uses (weights underflowed): drop and re-index
        newpos = np.cumsum(keep, dtype=np.int64) - 1
        newpos[~keep] = 0  # only referenced with weight 0
        idx = newpos[idx].astype(np.int32)
        colsum, landmarks = colsum[keep], landmarks[keep]
    return SparseCode(idx, w, colsum, landmarks, float(sigma), kth, features.unit)


# -- painted pixels as landmarks ------------------------------------------------------------
#: Painted pixels kept as landmarks per label at least (all of them when a label has fewer).
STROKE_LANDMARKS_PER_LABEL = 16


def pick_stroke_pixels(sets: list[np.ndarray], cap: int) -> list[np.ndarray]:
    """Evenly spaced painted pixels per label: ``cap`` in all, in proportion to each label's
    share but at least :data:`STROKE_LANDMARKS_PER_LABEL` (or all of a smaller stroke set)."""
    total = sum(S.size for S in sets)
    out = []
    for S in sets:
        q = min(S.size, max(STROKE_LANDMARKS_PER_LABEL, int(round(cap * S.size / total))))
        out.append(S[np.unique(np.linspace(0, S.size - 1, q).round().astype(np.int64))])
    return out


@dataclass
class StrokeRecoding:
    """What :func:`add_stroke_landmarks` changed in a base code, to put it back."""

    rows: np.ndarray
    idx: np.ndarray
    w: np.ndarray

    def undo(self, base: SparseCode) -> None:
        base.idx[self.rows] = self.idx
        base.w[self.rows] = self.w


def add_stroke_landmarks(base: SparseCode, features: Features, strokes: "Strokes",
                         cap: int, raw: np.ndarray, cancel: CancelToken = NEVER
                         ) -> tuple[SparseCode, np.ndarray, StrokeRecoding]:
    """The base coding with painted pixels added as landmarks; its raw Gram; how to undo it.

    Why: the landmark basis ``x = Ẑy`` can only tell two points apart as far as their codes
    differ, and two labels' strokes a few pixels apart on one colour have nearly the same r
    nearest landmarks: no vector of the basis separates them, whatever the constraints say
    (measured on photo crops with strokes 1–4 px apart: 0.57–0.94 of a label's painted pixels
    kept). SC-PC (paper 003, §2.2) makes the constrained points themselves the landmarks; here
    they are *added* to the p landmarks of Liu et al. / SCACS (at most ``cap`` painted pixels,
    evenly spaced, :func:`pick_stroke_pixels`), and the points are coded over the union:

    - a point whose nearest painted-pixel landmark is nearer than its r-th base landmark
      (``kth``) is recoded over its r nearest of the union (Nadaraya–Watson, the base σ);
      every other point keeps its code, so only the rows near the strokes change;
    - a painted pixel of label a is coded over the base landmarks and label a's painted
      pixels only: coding it over another label's painted pixels would state, in the basis,
      that it is a mixture of points the user said differ (the cannot-link of its stroke).

    The rows are changed *in place* in ``base.idx`` / ``base.w`` (undo with the returned
    record before the next edit); ``raw`` is the base's :meth:`SparseCode.raw_gram`, updated
    in O(changed rows · r²) to the new one instead of recomputed over all n points.
    """
    picked = pick_stroke_pixels(strokes.sets, cap)
    E = features.rows(np.concatenate(picked))
    owner = np.concatenate([np.full(P.size, a) for a, P in enumerate(picked)])
    p0, q, r = base.p, E.shape[0], base.r
    tree = cKDTree(E)
    near = []
    for lo in range(0, base.n, CHUNK):
        cancel.check()
        hi = min(lo + CHUNK, base.n)
        d, _ = tree.query(features.chunk(lo, hi), k=1, workers=-1)
        near.append(lo + np.flatnonzero(d < base.kth[lo:hi]))
    painted = np.concatenate(strokes.sets)
    rows = np.union1d(np.concatenate(near), painted)
    X = features.rows(rows)
    old_idx, old_w = base.idx[rows].copy(), base.w[rows].copy()
    dB = np.linalg.norm(X[:, None, :] - base.landmarks[old_idx], axis=2)
    dB[old_w <= 0] = np.inf                          # re-indexed dropped landmarks
    kq = min(r, q)
    dE, iE = tree.query(X, k=kq, workers=-1)
    dE, iE = dE.reshape(-1, kq), iE.reshape(-1, kq)
    for a, S in enumerate(strokes.sets):             # painted rows: own label's pixels only
        mine = np.flatnonzero(owner == a)
        pos = np.searchsorted(rows, S)
        ka = min(kq, mine.size)
        d, j = cKDTree(E[mine]).query(X[pos], k=ka, workers=-1)
        dE[pos] = np.inf
        dE[pos, :ka], iE[pos, :ka] = d.reshape(-1, ka), mine[j.reshape(-1, ka)]
    D = np.hstack([dB, dE])
    I = np.hstack([old_idx.astype(np.int64), p0 + iE])
    order = np.argsort(D, axis=1, kind="stable")[:, :r]
    D, I = np.take_along_axis(D, order, 1), np.take_along_axis(I, order, 1)
    w = np.exp(-(D ** 2 - D[:, :1] ** 2) / max(2.0 * base.sigma ** 2, np.finfo(float).tiny))
    w[~np.isfinite(D)] = 0.0
    w /= w.sum(axis=1, keepdims=True)
    record = StrokeRecoding(rows, old_idx, old_w)
    base.idx[rows] = I.astype(np.int32)
    base.w[rows] = w
    colsum = np.zeros(p0 + q)
    for lo in range(0, base.n, CHUNK):
        hi = min(lo + CHUNK, base.n)
        colsum += np.bincount(base.idx[lo:hi].ravel(), weights=base.w[lo:hi].ravel(),
                              minlength=p0 + q)
    code = SparseCode(base.idx, base.w, colsum, np.vstack([base.landmarks, E]), base.sigma,
                      base.kth, base.unit)
    grown = np.zeros((p0 + q, p0 + q))
    grown[:p0, :p0] = raw
    grown += code._pair_sums(I, w) - code._pair_sums(old_idx, old_w)
    return code, grown, record


# -- the orthonormal landmark basis ---------------------------------------------------------
@dataclass
class LandmarkBasis:
    """``Φ = Ẑ T`` with orthonormal columns spanning range(Ẑ); see module notes.

    Attributes
    ----------
    lam : (p',) eigenvalues of Ŝ kept (in (0, 1]); ``ΦᵀLΦ = diag(1 − lam)``.
    T : (p, p') ``V Λ^{-1/2}``: landmark coefficients of the basis vectors.
    e : (p',) ``Φᵀ1`` (norm² n).
    """

    code: SparseCode
    lam: np.ndarray
    T: np.ndarray
    e: np.ndarray

    @classmethod
    def build(cls, code: SparseCode, cancel: CancelToken = NEVER,
              raw: np.ndarray | None = None) -> "LandmarkBasis":
        """The basis of ``code`` (``raw``: its :meth:`SparseCode.raw_gram`, if known)."""
        S = code.gram(cancel, raw)
        cancel.check()
        lam, V = sla.eigh(S)
        keep = lam > RANK_TOL * lam[-1]
        lam, V = lam[keep], V[:, keep]
        T = V / np.sqrt(lam)
        e = T.T @ np.sqrt(code.colsum)
        return cls(code, np.minimum(lam, 1.0), T, e)

    @property
    def size(self) -> int:
        return self.lam.shape[0]

    def set_terms(self, rows: np.ndarray, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(Φᵀ diag(u) Φ, Φᵀu)`` restricted to the point set ``rows`` with weights ``u``.

        A stroke of s pixels: ``Φ_S = Ẑ_S T`` (s × p') costs s·r·p' and ``Φ_Sᵀ diag(u) Φ_S``
        s·p'², against 2·p'³ for ``Tᵀ (Ẑ_Sᵀ diag(u) Ẑ_S) T`` — per label, so 50 one-stroke
        labels at p' = 2600 took 9 s in set_terms alone (issue 23). The p × p form is kept
        for strokes of more than p' pixels.
        """
        rows = np.asarray(rows)
        if rows.size < self.size:
            Phi = self.code.apply(self.T, rows=rows)                  # (s, p')
            M = Phi.T @ (Phi * np.asarray(u, np.float64)[:, None])
        else:
            M = self.T.T @ self.code.weighted_gram(rows, u) @ self.T
        return (M + M.T) / 2, self.set_sum(rows, u)

    def sets_terms(self, sets: list[np.ndarray], weights: list[np.ndarray],
                   coefs: list[np.ndarray]) -> list[np.ndarray]:
        """``Σ_a c_a Φ_aᵀ diag(u_a) Φ_a`` for each coefficient vector ``c`` of ``coefs``.

        The point sets (strokes) of fewer than p' points go through one product of all their
        rows (``Φ_Sᵀ diag(w) Φ_S``, S = their union), computed once for every ``c``: with 50
        labels that replaced 50 small products and 150 rank-one updates of p' × p' matrices
        per landmark FAST-GE solve; larger sets use :meth:`set_terms`.
        """
        small = [a for a, S in enumerate(sets) if np.asarray(S).size < self.size]
        out = [np.zeros((self.size, self.size)) for _ in coefs]
        if small:
            rows = np.concatenate([np.asarray(sets[a]) for a in small])
            Phi = self.code.apply(self.T, rows=rows)                  # (s, p')
            for M, c in zip(out, coefs):
                w = np.concatenate([c[a] * np.asarray(weights[a], np.float64) for a in small])
                M += Phi.T @ (Phi * w[:, None])
        for a in sorted(set(range(len(sets))) - set(small)):
            Ma, _ = self.set_terms(sets[a], weights[a])
            for M, c in zip(out, coefs):
                M += c[a] * Ma
        return [(M + M.T) / 2 for M in out]

    def set_sum(self, rows: np.ndarray, u: np.ndarray) -> np.ndarray:
        """``Φᵀu`` for weights ``u`` on the point set ``rows`` (zero elsewhere)."""
        return self.T.T @ self.code.weighted_sum(rows, u)

    def complement(self) -> np.ndarray:
        """Orthonormal basis H (p' × p'−1) of ``{z : eᵀz = 0}`` (Householder reflector)."""
        e = self.e / np.linalg.norm(self.e)
        v = e.copy()
        v[0] += np.copysign(1.0, e[0])
        Hh = np.eye(e.size) - 2.0 * np.outer(v, v) / (v @ v)
        return Hh[:, 1:]  # the first column is ∓e
