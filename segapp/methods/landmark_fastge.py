"""Landmark FAST-GE with random-sampling k-means (Liu et al. 2017, §3, Algorithm 1).

Liu, Ye, Wei, Tian, Liao, Zhang, "Fast Constrained Spectral Clustering and Cluster Ensemble
with Random Projection", Computational Intelligence and Neuroscience 2017, article 2658707.

Model
-----
FAST-GE's problem (Cucuringu et al. 2016, §4.2–4.3, §4.7) ``L_G x = λ L_H x`` with
``G = G_D + Ĝ_ML`` and ``H = K/n + Ĝ_CL``, where the data graph ``G_D`` is the landmark graph
``W = ẐẐᵀ`` of :mod:`segapp.graphs.landmark` (Liu et al. §2.2, eq. (5)) and the unknowns are restricted
to ``x = Ẑ y``, ``y ∈ R^p`` (§3.1: "we can let x = Ẑᵀy"; in the paper Ẑ is p × n). The paper's
eq. (11) ("Problem 3") is lost in the text file; with that substitution the only consistent
reading is the Rayleigh–Ritz (Galerkin) projection of FAST-GE's pencil onto range(Ẑ)::

    A y = λ B y,   A = Ẑᵀ L_G Ẑ,   B = Ẑᵀ L_H Ẑ        (p × p)

which is what we solve. It keeps FAST-GE's Rayleigh quotient exactly for every x in the
subspace, so the eigenvalues are upper bounds of FAST-GE's on the landmark graph and approach
them as the subspace grows (the paper's "asymptotically comparable" claim, §3.2).

Degrees and merge weights (§4.7 of FAST-GE)
-------------------------------------------
Every degree of the landmark graph is exactly 1 (module notes of :mod:`segapp.graphs.landmark`), so
``d_min = d_max = 1`` and the merge weight ``d_i d_j / (d_min d_max)`` of every constraint pair is
1 (times ``constraint_weight``, and ``√(q_i q_j)`` for soft strokes of confidence q). The demand
graph is ``K = 11ᵀ/n`` (``K_ij = d_i d_j / vol``), ``L_K = I − 11ᵀ/n``.

How the pixel constraints reach the landmark space
--------------------------------------------------
A constraint edge (i, j) of weight ``w`` contributes ``w (x_i − x_j)²`` to the quotient; with
``x = Ẑ y`` that is ``w ((ẑ_i − ẑ_j)ᵀ y)²``: the congruence ``Ẑᵀ L_ML Ẑ`` turns every pixel pair
into a rank-one term on the *difference of the two pixels' codes*. Two consequences: (1) a
constraint between pixels with the same code (same landmarks, same weights — e.g. two far-apart
pixels of identical colour when ``spatial_weight = 0``) is invisible: the subspace cannot
separate them; (2) a stroke constrains the landmarks its pixels are coded on, and through them
every pixel coded on the same landmarks — that is how a stroke spreads over a region.
For label a's stroke set ``S_a`` with weights ``u`` (``√q``, or 1), ``s_a = Σ u_i``, the
clique Laplacians are diagonal + rank-one (:mod:`segapp.strokes.constraints`), so

.. math:: Ẑᵀ L_{ML} Ẑ = \\sum_a (s_a M_a − g_a g_aᵀ), \\qquad
          Ẑᵀ L_{CL} Ẑ = \\sum_a (s − s_a) M_a − \\sum_{a≠b} g_a g_bᵀ,

with ``M_a = Σ_{i∈S_a} u_i ẑ_i ẑ_iᵀ`` and ``g_a = Σ_{i∈S_a} u_i ẑ_i``: p × p matrices from the
stroke rows alone, O(t r²) for t stroke pixels, no clique formed.

Solving
-------
In the orthonormal coordinates ``x = Φz`` of :class:`segapp.graphs.landmark.LandmarkBasis`,
``A = diag(1 − Λ) + Φᵀ L_ML Φ`` and ``B = (I − eeᵀ/n)/n + Φᵀ L_CL Φ``. The constant vector
(``z = e/√n``) is in the null space of both; as in FAST-GE (Fig. 2 step 4, and
:mod:`segapp.solve.pencil`) we solve on its complement ``eᵀz = 0`` (``1ᵀx = dᵀx = 0``), where the
demand term is ``I/n`` and ``B`` is positive definite. The cannot-link cliques make ``B``'s
largest eigenvalues ~t² while the demand term is 1/n (condition up to ~1e17 at 12 MP), beyond
what a Cholesky factorisation resolves, so ``B = Q diag(β) Qᵀ`` is diagonalised and
``β`` floored at ``max(1/n, 1e-12 β_max)`` — a change below the rounding level of the dense
solve — and the standard symmetric problem ``(β^{-1/2}QᵀAQβ^{-1/2}) w = λ w`` is solved by
:func:`scipy.linalg.eigh`; ``y = T H Q β^{-1/2} w``. The m = k − 1 smallest pairs are used
(as FAST-GE in segapp: ``n_vectors``).

Which vectors (issue 10)
------------------------
FAST-GE's §5 guarantees are stated for a connected data graph; the pixel grid is one, the
landmark graph need not be (a group of landmarks only the points near them use). Every
stroke-free piece gives a vector of eigenvalue ≈ 0 that is constant on all strokes — its
denominator is all demand term — and k − 1 of them left every label's strokes on one point of
the embedding (photo crops of the property test: labels lost entirely). The embedding takes
the k − 1 smallest vectors *that the cannot-link term acts on* (:func:`stroke_vectors`), and
the painted pixels join the landmarks (:func:`segapp.graphs.landmark.add_stroke_landmarks`, as SC-PC
§2.2 makes the constrained points landmarks) so that the subspace can separate two labels'
strokes a few pixels apart on one colour. Measured with ``python benchmarks/fidelity.py
--scenes 120`` (the property test's scenes): the invariant held on 113 before, 120 after.

Embedding and partition
-----------------------
The solutions are ``L_H``-normalised by construction (``zᵀBz = 1``) and have zero mean, i.e.
FAST-GE's Fig. 2 steps 1–7 hold; the rows of ``X = Ẑ y`` are normalised to unit length (not
with a single vector: a unit-length 1-vector row is only its sign) and clustered by
random-sampling k-means (§3.1): the k-means anchored to the strokes
(:func:`segapp.partition.anchored_kmeans`) on ``kmeans_sample`` random rows plus the stroke
rows, then every row goes to its nearest prototype. When a label keeps < 99.9% of its painted
pixels, one more vector (k instead of k − 1). ``eigenvectors`` holds ``X``.
For k = 2 the same k-means is used (no Cheeger sweep: the landmark graph's cuts are not sparse).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import scipy.linalg as sla

from ..cancel import CancelToken
from ..errors import InvalidInputError
from ..options import Option, pick
from ..strokes.reading import Strokes
from .base import n_vectors
from .fastge import OPTIONS as FASTGE_OPTIONS
from .landmark_base import LANDMARK_OPTIONS, LandmarkMethod

#: The landmark graph's options and FAST-GE's constraint weight and eigenvector count.
OPTIONS: tuple[Option, ...] = LANDMARK_OPTIONS + pick(FASTGE_OPTIONS, "constraint_weight",
                                                      "n_vectors")

#: Floor of B's eigenvalues relative to its largest (see "Solving").
B_FLOOR = 1e-12


def fastge_pencil(basis, strokes: Strokes, weight: float) -> tuple[np.ndarray, np.ndarray]:
    """``(A, B)`` of the projected FAST-GE pencil in basis coordinates (p' × p')."""
    n = basis.code.n
    p = basis.size
    A = np.diag(1.0 - basis.lam)
    B = np.eye(p) / n - np.outer(basis.e, basis.e) / (n * n)
    s_a = np.array([u.sum() for u in strokes.weights])
    s = s_a.sum()
    # Σ_a s_a M_a and Σ_a (s − s_a) M_a (M_a = Φ_aᵀ diag(u_a) Φ_a), and Σ_a g_a g_aᵀ = G Gᵀ
    MA, MB = basis.sets_terms(strokes.sets, strokes.weights, [s_a, s - s_a])
    G = np.stack([basis.set_sum(S, u) for S, u in zip(strokes.sets, strokes.weights)], axis=1)
    GG = G @ G.T
    g_all = G.sum(axis=1)
    A += weight * (MA - GG)
    B += weight * (MB + GG - np.outer(g_all, g_all))
    return (A + A.T) / 2, (B + B.T) / 2


def solve_pencil(A: np.ndarray, B: np.ndarray, H: np.ndarray, m: int,
                 floor: float) -> tuple[np.ndarray, np.ndarray]:
    """m smallest pairs of ``A z = λ B z`` on range(H) with B's spectrum floored (module notes)."""
    Ah = H.T @ A @ H
    Bh = H.T @ B @ H
    beta, Q = symmetric_eigh((Bh + Bh.T) / 2)
    beta = np.maximum(beta, max(floor, B_FLOOR * beta[-1]))
    N = Q / np.sqrt(beta)
    C = N.T @ Ah @ N
    lam, W = symmetric_eigh((C + C.T) / 2, m)
    return lam, H @ (N @ W)


def symmetric_eigh(M: np.ndarray, m: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The m smallest (all if None) eigenpairs of a symmetric matrix.

    LAPACK's ``?syevr`` (scipy's default driver) raised "Internal Error" on a finite,
    well-scaled 189 × 189 pencil matrix of the property test (ensemble, scene 12); the
    divide-and-conquer driver then computes all pairs.
    """
    try:
        return sla.eigh(M) if m is None else sla.eigh(M, subset_by_index=[0, m - 1])
    except np.linalg.LinAlgError:
        lam, V = sla.eigh(M, driver="evd")
        return (lam, V) if m is None else (lam[:m], V[:, :m])


class LandmarkFastGE(LandmarkMethod):
    """FAST-GE on the landmark graph: a p × p generalized eigenproblem, sampled k-means."""

    name = "landmark"
    description = ("landmark FAST-GE (Liu et al. 2017 §3): FAST-GE's pencil on a sparse-coding "
                   "landmark graph, p×p eigenproblem, random-sampling k-means; for huge images")
    constrained = True
    options = OPTIONS

    def _n_vectors(self, k: int) -> int:
        m = n_vectors(self.settings["n_vectors"], k)
        if m > self.basis.size - 1:
            raise InvalidInputError(
                f"{m} eigenvectors asked but the landmark basis has only {self.basis.size - 1} "
                "non-constant directions (raise n_landmarks)")
        return m

    def _embed(self, strokes: Strokes, timings: dict[str, float],
               cancel: CancelToken) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        o = self.settings
        basis = self.basis
        k = strokes.k
        m = self._n_vectors(k)
        t = time.perf_counter()
        A, B = fastge_pencil(basis, strokes, float(o["constraint_weight"]))
        timings["constraints"] = time.perf_counter() - t
        cancel.check()
        t = time.perf_counter()
        lam, z, blind = stroke_vectors(A, B, basis, k)
        Y = basis.T @ z
        timings["eigensolver"] = time.perf_counter() - t
        while True:
            cancel.check()
            labels, X, separated = self._partition(Y[:, :m], strokes, timings, cancel)
            # As FAST-GE: one more vector when the strokes are not separated (with k − 1 = 1
            # vector, row normalisation leaves only its sign to tell two labels apart).
            if separated or m >= min(k, Y.shape[1]):
                break
            m += 1
        return labels, X, lam[:m], {"vectors": m, "stroke_blind_skipped": blind}


#: A generalized eigenvector counts as carrying the constraints when the cannot-link cliques
#: give at least this share of its denominator ``zᵀBz`` (the rest is the demand term ``I/n``).
CARRYING = 0.5


def stroke_vectors(A: np.ndarray, B: np.ndarray, basis, k: int
                   ) -> tuple[np.ndarray, np.ndarray, int]:
    """The k smallest pairs of the pencil among the vectors the strokes act on.

    The pixel grid of FAST-GE is connected; the landmark graph ``ẐẐᵀ`` need not be: a group
    of landmarks used only by the points near them (an isolated colour, a quantisation level
    of a flat photo) is a (nearly) disconnected piece, and its indicator, minus its mean, is a
    pencil vector of eigenvalue ≈ 0 that is *constant on every stroke*: its denominator is all
    demand term (``zᵀ Φᵀ L_CL Φ z = 0``), it carries no constraint, and k − 1 such vectors
    left the strokes of all labels on one point of the embedding (all stroke rows equal, labels
    lost; measured on photo crops with 2–7 such pieces). FAST-GE's guarantees (§5) are stated
    for a connected data graph; on each stroke-free piece no constraint can reach, so those
    directions are skipped and the embedding takes the smallest vectors whose cannot-link
    share of ``zᵀBz`` is ≥ :data:`CARRYING` (the others: share ≈ 0, the stroke separators ≈ 1).

    Returns the eigenvalues and basis coordinates of up to k such vectors (in increasing
    order; the smallest overall if fewer carry the constraints) and the number skipped.
    """
    n = basis.code.n
    H = basis.complement()
    demand = np.eye(basis.size) / n - np.outer(basis.e, basis.e) / (n * n)
    count = min(H.shape[1], 2 * k + 6)
    while True:
        lam, z = solve_pencil(A, B, H, count, 1.0 / n)
        share = 1.0 - np.einsum("ij,ij->j", z, demand @ z) / np.einsum("ij,ij->j", z, B @ z)
        carrying = np.flatnonzero(share >= CARRYING)
        if carrying.size >= k or count == H.shape[1]:
            break
        count = min(H.shape[1], 4 * count)
    if carrying.size < k - 1:  # the strokes cannot be told apart at all: FAST-GE's own vectors
        return lam[:k], z[:, :k], 0
    take = carrying[:k]
    return lam[take], z[:, take], int(np.count_nonzero(share[: take[-1]] < CARRYING))
