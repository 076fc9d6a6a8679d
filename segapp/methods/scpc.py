r"""SC-PC: large-scale spectral clustering based on pairwise constraints (Algorithm 1).

"Large-scale spectral clustering based on pairwise constraints", Information Processing &
Management / Expert Systems with Applications, 2015 (paper 003 in ``../shared/papers``).

Model (§2.1–2.3)
----------------
Landmark spectral clustering (Chen & Cai's LSC, the coding of :mod:`segapp.graphs.landmark`) whose
landmarks are the *constrained points themselves*, with the constraints injected into the
point–landmark affinity ``Ẑ`` before its SVD:

1. landmarks ``U`` = the p points that take part in constraints (here: stroke pixels, or
   labelled vertices); every point is coded over its ``r`` nearest landmarks by Nadaraya–Watson
   weights (eq. (2)) and ``Ẑ = Z D^{-1/2}`` (Ẑ is stored n × p, the paper's transpose);
2. connected components of the must-link graph on the p points (Tarjan in the paper): with
   strokes, all pixels of one label are must-linked, so the components are the labels;
3. eq. (3): the rows of the constrained points are replaced by their component's indicator:
   ``Ẑ(p_j, p_i) = 1`` if ``p_i, p_j`` lie in the same component, 0 otherwise;
4. for each component ``T_a``: ``L_{p_j}`` = the ``l`` points with the largest affinity
   ``Ẑ(·, p_j)`` to landmark ``p_j ∈ T_a``; ``freq_i`` = in how many of those sets point ``i``
   appears; the sorted distinct frequencies ``freq'_1 < … < freq'_m`` get the values of eq. (4);
   every ``L_{p_j}`` becomes the union over the component (eq. (5)), and eq. (6) sets
   ``Ẑ(i, p_j) = lookupVec(freq_i)`` for every point ``i`` of the union and every ``p_j ∈ T_a``;
5. SVD ``Ẑ = B Σ Aᵀ`` through the p × p matrix ``ẐᵀẐ = A Σ² Aᵀ``, ``B = Ẑ A Σ^{-1}``; the
   top-k right singular vectors (columns of B), k-means on the rows of B (§2.3, Algorithm 1).

Readings chosen (the text file is garbled in places)
----------------------------------------------------
- **eq. (4)** prints ``lookupVec_{i'} = min + freq'_{i'} (max − min)/(m − 1)`` (``max`` when
  m = 1), with ``min``/``max`` the smallest and largest affinity in the component's
  neighbourhoods. Taken literally with the frequency *values*, the entries grow without bound
  with the component's size (a point in 300 neighbourhoods would get ``min + 300(max−min)/(m−1)``);
  the paper's worked example (frequencies (1, 2), min 0.4, max 0.7 → lookupVec (0.7, 1)) cannot
  tell values from ranks because there the values *are* the ranks. We use the rank ``i'``
  (1 … m) of the frequency: the example is reproduced exactly, the m = 1 branch stays the top
  value's limit, and every entry lies in ``[min, 2·max − min]``.
- **neighbours** ``L_{p_j}`` are read from ``Ẑ`` (the text: "the l neighbors … based on the
  affinity submatrix Ẑ"): among the points coded over landmark ``p_j``, the ``l`` with the
  largest weight. Constrained points are not counted as neighbours: their rows are fixed by
  eq. (3), which the propagation must not overwrite (the paper is silent on the order).
- **many stroke pixels**: strokes hold thousands of pixels, the paper's p is a few hundred to
  a few thousand; at most ``n_landmarks`` stroke pixels are used, drawn at random in proportion
  to each label's share (at least one per label). Every stroke pixel still gets its
  component's row of eq. (3) over the landmarks drawn from its label.
- **no constraint weights** in the paper: a stroke ``confidence`` is ignored.
- k-means on the rows of ``B`` **normalised to unit length** (Ng–Jordan–Weiss; FAST-GE
  Fig. 2), where the paper applies "traditional k-means to the rows of B". The rows of eq. (3)
  are component indicators with ``|T_a|`` ones, so the stroke pixels' rows of ``B`` are ~100×
  longer than the others; plain k-means then spends its k centres on magnitude, not direction:
  on the 4-region test image of the test suite (60×60, noise 0.15) 25.6% of the pixels
  correct unnormalised vs 97.2% normalised. k-means runs on a random sample of
  ``kmeans_sample`` rows with restarts and a start from each label's stroke mean, every point
  then goes to its nearest centre, and clusters are matched to the user's labels (Hungarian).

``eigenvectors`` are the k columns of ``B``, ``eigenvalues`` the singular values ``σ_1 … σ_k``.

Cost: the constraints aggregated
--------------------------------
Eq. (3) gives every stroke pixel of component a the *same* row, the indicator ``1_{T_a}`` of
the component's landmarks, and eq. (6) gives a propagated point i the same value
``v_{ia} = lookupVec(freq_i)`` on every landmark of ``T_a``. Written out, the replaced rows
are ``|S_a| · |T_a|`` entries per label: a fill of 120K pixels with ~970 landmarks was 1.2·10⁸
entries, 6.8 GB and 174 s (issue 32). They are held instead as

.. math:: Ẑ_R = V Eᵀ + K, \qquad E_{ja} = [j ∈ T_a] \; (p × k), \qquad
   V_{ia} = \begin{cases} 1 & i ∈ S_a \\ v_{ia} & i \text{ propagated in } a \\
   0 & \text{otherwise} \end{cases} \; (|R| × k),

``K`` the code entries a propagated row keeps (≤ r per row), so that, exactly,

.. math:: Ẑ_Rᵀ Ẑ_R = E (VᵀV) Eᵀ + E (VᵀK) + (KᵀV) Eᵀ + KᵀK, \qquad
   Ẑ_R Y = V (EᵀY) + K Y,

with ``Σ_{i∈S_a} 1_{T_a}1_{T_a}ᵀ = |S_a| 1_{T_a}1_{T_a}ᵀ`` inside ``E VᵀV Eᵀ``: no painted
pixel's row is formed, and every term costs O(|R|·(k + r)²) time and memory for the |R| ≤ n
replaced rows, plus O(p²·k) — the same answer as the rows written out
(``tests/methods/test_methods_spectral.py`` compares with a dense construction). Cost per
edit, all told: the coding of all n points over the p ≤ ``n_landmarks`` landmarks (k-d tree,
O(n r log p)), the neighbourhoods (O(n r), at most l·p points), the p × p Gram matrix
(O(n r² + p² k)) and its eigendecomposition (O(p³)), the embedding (O(n (r + k) k)): bounded
by n and the options, not by the number of painted pixels. Measured on the issue's scene
(``python benchmarks/painted.py``): docs/methods.md.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp

from ..cancel import NEVER, CancelToken
from ..errors import InvalidInputError
from ..graphs.features import CHUNK
from ..graphs.landmark import SparseCode, sparse_code
from ..options import Option, override, without
from ..strokes.reading import Strokes
from ..result import Segmentation
from .landmark_base import (LANDMARK_OPTIONS, FeatureMethod, LandmarkDiagnostics,
                            round_landmark_embedding)

#: Landmarks are the stroke pixels and the coding is redone for every edit, so only the image
#: features (spatial_weight) are set up once.
OPTIONS: tuple[Option, ...] = override(
    without(LANDMARK_OPTIONS, "landmark_selection", "landmark_sample", "stroke_landmarks"),
    # stroke landmarks only, no p × p eigenproblem: 5000 took 2.8 s at 0.25 MP
    n_landmarks={"stage": "solve", "help": "at most this many stroke pixels become landmarks",
                 "high": 5000},
    n_nearest={"stage": "solve"}, sigma={"stage": "solve"}, sigma_rule={"stage": "solve"},
    sigma_scale={"stage": "solve"}, seed={"stage": "solve"},
) + (
    Option("n_neighbours", int, 5, "nearest stroke landmarks a constrained point's code is "
           "propagated to", "solve", low=1, high=50),
)


def choose_landmarks(strokes: Strokes, cap: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """At most ``cap`` stroke pixels, in proportion to each label's share (≥ 1 per label).

    Returns the point indices (sorted within each label) and their component (label position).
    """
    sizes = np.array([S.size for S in strokes.sets])
    if sizes.sum() <= cap:
        take = sizes
    else:
        take = np.maximum(1, np.floor(cap * sizes / sizes.sum()).astype(int))
        take = np.minimum(take, sizes)
    idx = [np.sort(rng.choice(S, size=t, replace=False)) if t < S.size else S
           for S, t in zip(strokes.sets, take)]
    comp = np.concatenate([np.full(t, a) for a, t in enumerate(take)])
    return np.concatenate(idx), comp


def lookup_values(freq: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """Eq. (4) with the rank reading (module notes): the value of every entry of ``freq``."""
    levels, rank = np.unique(freq, return_inverse=True)
    m = levels.size
    if m == 1:
        return np.full(freq.shape, hi)
    return lo + (rank + 1) * (hi - lo) / (m - 1)


@dataclass
class ConstrainedCode:
    """``Ẑ`` of SC-PC: the Nadaraya–Watson code with some rows replaced (eqs. (3), (6)).

    The replaced rows are held aggregated (module notes, "Cost"): ``Ẑ_R = V Eᵀ + K`` with
    ``E`` (p × k) the indicator of each component's landmarks (``comp``), ``V`` (|R| × k,
    CSR) the value of each replaced row on each component it takes — 1 for a stroke pixel's
    own component (eq. (3)), ``lookupVec(freq_i)`` for a propagated point (eq. (6)) — and
    ``K`` (|R| × p, CSR) the code entries a propagated row keeps, on the landmarks of
    components it does not take. It offers the :meth:`segapp.graphs.landmark.SparseCode.apply`
    interface used by the partition.
    """

    code: SparseCode
    rows: np.ndarray            # replaced rows, sorted
    V: sp.csr_matrix            # |rows| × k
    K: sp.csr_matrix            # |rows| × p
    comp: np.ndarray            # (p,) component of each landmark

    @property
    def n(self) -> int:
        return self.code.n

    def _indicator(self) -> sp.csr_matrix:
        """``E`` (p × k): landmark j belongs to component comp[j]."""
        p, k = self.comp.size, self.V.shape[1]
        return sp.csr_matrix((np.ones(p), (np.arange(p), self.comp)), shape=(p, k))

    def gram(self, cancel: CancelToken = NEVER) -> np.ndarray:
        """``ẐᵀẐ`` (p × p): the code's Gram matrix with the replaced rows swapped, the new
        ones as ``E VᵀV Eᵀ + E VᵀK + KᵀV Eᵀ + KᵀK`` (no row of them formed)."""
        S = self.code.gram(cancel)
        if self.rows.size:
            S -= self.code.weighted_gram(self.rows, np.ones(self.rows.size))
            E = self._indicator().toarray()
            VK = (self.V.T @ self.K).toarray()                 # k × p
            S += E @ (self.V.T @ self.V).toarray() @ E.T
            S += E @ VK + VK.T @ E.T
            S += (self.K.T @ self.K).toarray()
        return (S + S.T) / 2

    def apply(self, Y: np.ndarray, lo: int = 0, hi: int | None = None,
              rows: np.ndarray | None = None) -> np.ndarray:
        """``Ẑ Y`` for rows ``lo:hi`` (or the given ``rows``)."""
        out = self.code.apply(Y, lo, hi, rows=rows)
        want = np.arange(lo, self.n if hi is None else hi) if rows is None else np.asarray(rows)
        pos = np.searchsorted(self.rows, want)
        hit = (pos < self.rows.size) & (self.rows[np.minimum(pos, self.rows.size - 1)] == want)
        if np.any(hit):
            EY = self._indicator().T @ np.asarray(Y, np.float64)    # k × m: Σ_{j ∈ T_a} Y_j
            out[hit] = self.V[pos[hit]] @ EY + self.K[pos[hit]] @ Y
        return out


def _top_per_landmark(i: np.ndarray, j: np.ndarray, z: np.ndarray, p: int,
                      l: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The ``l`` entries of largest ``z`` for every landmark ``j`` (ties: smaller ``i`` first)."""
    order = np.lexsort((i, -z, j))
    i, j, z = i[order], j[order], z[order]
    rank = np.arange(j.size) - np.searchsorted(j, np.arange(p))[j]
    top = rank < l
    return i[top], j[top], z[top]


def landmark_neighbours(code: SparseCode, exclude: np.ndarray,
                        l: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``L_{p_j}`` for every landmark: the ``l`` points (not in ``exclude``) of largest ``Ẑ_ij``.

    Returns the (point, landmark, affinity) triples. Chunked: the best ``l`` per landmark of
    each chunk of rows, then the best ``l`` of those, so memory stays O(chunk + l·p·chunks).
    """
    n, p, r = code.n, code.p, code.r
    ds = code.dscale
    parts = []
    for lo in range(0, n, CHUNK):
        hi = min(lo + CHUNK, n)
        j = code.idx[lo:hi].ravel().astype(np.int64)
        i = np.repeat(np.arange(lo, hi), r)
        z = code.w[lo:hi].ravel() * ds[j]
        ok = (~exclude[i]) & (z > 0)
        parts.append(_top_per_landmark(i[ok], j[ok], z[ok], p, l))
    return _top_per_landmark(*(np.concatenate(x) for x in zip(*parts)), p, l)


def constrained_code(code: SparseCode, comp: np.ndarray,
                     strokes: Strokes, n_neighbours: int) -> tuple[ConstrainedCode, int]:
    """Eqs. (3)–(6) on the code of the n points over the landmarks (``comp``: their component).

    Returns the modified ``Ẑ`` (aggregated: :class:`ConstrainedCode`) and the number of
    propagated (non-stroke) points. Memory O(|R| + l·p + k·p), whatever the number of painted
    pixels (module notes, "Cost").
    """
    n, p, r = code.n, code.p, code.r
    k = strokes.k
    ds = code.dscale
    stroke_pix = np.concatenate(strokes.sets)
    stroke_comp = np.concatenate([np.full(S.size, a) for a, S in enumerate(strokes.sets)])
    is_stroke = np.zeros(n, bool)
    is_stroke[stroke_pix] = True
    nb_i, nb_j, nb_z = landmark_neighbours(code, is_stroke, n_neighbours)
    # eq. (6), per component: the union of its landmarks' neighbourhoods takes lookupVec(freq)
    # on every landmark of the component — one value per (point, component)
    taken_i, taken_a, taken_v = [], [], []
    for a in range(k):
        sel = comp[nb_j] == a
        if not np.any(sel):
            continue
        pts, freq = np.unique(nb_i[sel], return_counts=True)
        taken_i.append(pts)
        taken_a.append(np.full(pts.size, a))
        taken_v.append(lookup_values(freq, float(nb_z[sel].min()), float(nb_z[sel].max())))
    ti = np.concatenate(taken_i) if taken_i else np.zeros(0, np.int64)
    ta = np.concatenate(taken_a) if taken_a else np.zeros(0, np.int64)
    tv = np.concatenate(taken_v) if taken_v else np.zeros(0)
    prop_rows = np.unique(ti)
    replaced = np.union1d(prop_rows, stroke_pix)
    # V: eq. (3)'s 1 on a stroke pixel's component, eq. (6)'s value on a propagated point's
    V = sp.csr_matrix((np.concatenate([tv, np.ones(stroke_pix.size)]),
                       (np.searchsorted(replaced, np.concatenate([ti, stroke_pix])),
                        np.concatenate([ta, stroke_comp]))), shape=(replaced.size, k))
    # K: a propagated row keeps its code entries on landmarks of components it does not take
    kp_i = np.repeat(prop_rows, r)
    kp_j = code.idx[prop_rows].ravel().astype(np.int64)
    kp_v = code.w[prop_rows].ravel() * ds[kp_j]
    free = ~np.isin(kp_i * k + comp[kp_j], ti * k + ta) & (kp_v != 0)
    K = sp.csr_matrix((kp_v[free], (np.searchsorted(replaced, kp_i[free]), kp_j[free])),
                      shape=(replaced.size, p))
    return ConstrainedCode(code, replaced, V, K, np.asarray(comp, np.int64)), int(prop_rows.size)


class SCPC(FeatureMethod):
    """SC-PC: the constrained points as landmarks, constraints injected into Ẑ, SVD, k-means."""

    name = "scpc"
    description = ("SC-PC (2015): stroke pixels as landmarks, must-link components and "
                   "neighbourhood propagation injected into the landmark affinity, SVD, k-means")
    constrained = True
    options = OPTIONS

    def _read_strokes(self, scribbles: np.ndarray, confidence: np.ndarray | None) -> Strokes:
        """No constraint weights in the paper: a confidence is not read (module notes)."""
        return super()._read_strokes(scribbles, None)

    def _solve(self, strokes: Strokes, cancel: CancelToken,
               timings: dict[str, float]) -> Segmentation:
        """Landmarks, coding, constraint injection, SVD and k-means for the given strokes."""
        o = self.settings
        k = strokes.k
        rng = np.random.default_rng([o["seed"], 2])
        t = time.perf_counter()
        cancel.progress("coding the pixels on the painted landmarks")
        points, comp = choose_landmarks(strokes, o["n_landmarks"], rng)
        L = self.features.rows(points)
        code = sparse_code(self.features, L, min(o["n_nearest"], points.size), sigma=o["sigma"],
                           sigma_rule=o["sigma_rule"], sigma_scale=o["sigma_scale"],
                           cancel=cancel)
        if code.p != points.size:  # sparse_code dropped a landmark no point uses
            raise InvalidInputError("some stroke pixels are not close to any point; "
                                    "use a larger sigma")
        timings["coding"] = time.perf_counter() - t
        cancel.progress("injecting the constraints")
        t = time.perf_counter()
        zhat, propagated = constrained_code(code, comp, strokes, o["n_neighbours"])
        timings["constraints"] = time.perf_counter() - t
        cancel.progress("solving the eigenproblem")
        t = time.perf_counter()
        gram = zhat.gram(cancel)
        p = gram.shape[0]
        s2, A = sla.eigh(gram, subset_by_index=[p - k, p - 1])   # the k largest
        top = np.argsort(s2)[::-1]
        sv = np.sqrt(np.maximum(s2[top], 0.0))
        if not np.all(sv > 1e-12 * max(sv[0], 1e-300)):
            raise InvalidInputError(f"the landmark affinity has rank < k={k}: the strokes "
                                    "cannot be told apart; draw them elsewhere")
        Y = A[:, top] / sv                                    # B = Ẑ A Σ^{-1}
        timings["eigensolver"] = time.perf_counter() - t
        cancel.progress("partition")
        t = time.perf_counter()
        labels, B = round_landmark_embedding(zhat, Y, strokes, sample=o["kmeans_sample"],
                                             rng=rng, cancel=cancel)
        timings["partition"] = time.perf_counter() - t
        diag = LandmarkDiagnostics(code.p, k, code.feature_sigma, strokes.kept(labels),
                                   {"components": k, "propagated": propagated})
        return Segmentation(labels, strokes.label_ids, B, sv, diagnostics=diag)
