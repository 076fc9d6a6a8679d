"""Strokes → must-link / cannot-link constraint graphs, merged with the data graph (FAST-GE §4.7).

Model
-----
A scribble label map gives stroke sets ``S_1 … S_k`` (pixels carrying label ``a``). Every pair in
the same set is a must-link (ML) constraint and every pair in different sets a cannot-link (CL)
constraint (§7.3: "we form a complete graph"). The merge heuristic of §4.7 weighs the constraint
edge ``(i, j)`` by

.. math:: w_{ij} = c\\, d_i d_j, \\qquad c = \\frac{\\text{constraint\\_weight}}{d_{\\min} d_{\\max}},

so the cliques are *rank-one weighted*: with ``u_a = d ∘ 1_{S_a}`` and ``s_a = 1ᵀu_a`` the
Laplacian of the ML clique on ``S_a`` is exactly

.. math:: L_{ML,a} = c\\,(s_a \\operatorname{diag}(u_a) - u_a u_aᵀ),

and, since the CL graph is the clique on all stroke pixels minus the per-label cliques,

.. math:: L_{CL} = c\\,\\bigl(\\operatorname{diag}(d_i (s - s_{a(i)})) - \\sum_{a \\ne b} u_a u_bᵀ\\bigr).

Both are "diagonal + rank-k" operators (:class:`LowRankLaplacian`), held in O(t + k²) memory for
t stroke pixels, applied exactly in O(t·m) time to m vectors: no clique, no dense matrix is formed.

Soft constraints: a per-pixel confidence ``q ∈ (0, 1]`` replaces ``u_a`` by ``√q ∘ u_a``, so edge
``(i, j)`` weighs ``c √(q_i q_j) d_i d_j`` (the weights inside one stroke of confidence q are
multiplied by q).

``d_min`` is taken as a low percentile of the degrees rather than the minimum: one isolated
pixel (all its affinities at the floor) would otherwise inflate every constraint weight by
orders of magnitude and stall the eigensolver.

Preconditioner graph
--------------------
Algebraic multigrid needs a sparse matrix. :func:`sparsify` returns a sparse ML graph whose
Laplacian matches the clique's in expectation: the union of ``r`` random Hamiltonian cycles
through each stroke set, each edge weighted ``c q-adjusted d_i d_j · (t − 1) / (2r)``. A union
of a few random cycles is an expander, so its Laplacian is spectrally close to the clique's —
which is all a preconditioner needs. The cycles are seeded by the stroke set itself, so an
unchanged stroke keeps its edges from one edit to the next.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..errors import InvalidInputError
from .reading import Strokes, fingerprint, read_strokes

#: Percentile of the degrees used as d_min (robust to a few isolated pixels).
DMIN_PERCENTILE = 1.0


@dataclass
class LowRankLaplacian:
    """``L = diag(diag) + U Σ Uᵀ`` with sparse ``U`` (n × r) and a small dense ``Σ`` (r × r)."""

    diag: np.ndarray
    U: sp.csc_matrix
    sigma: np.ndarray

    def __post_init__(self) -> None:
        # Everything happens on the stroke pixels: keep their indices and a dense t × r
        # factor, so a product costs O(t·r) instead of touching all n rows.
        U = sp.csr_matrix(self.U)
        self.rows = np.flatnonzero((np.diff(U.indptr) > 0) | (self.diag != 0))
        self._Us = U[self.rows].toarray()
        self._ds = self.diag[self.rows]

    def add_to(self, out: np.ndarray, X: np.ndarray) -> np.ndarray:
        """``out += L X`` in place, touching only the stroke rows; returns ``out``."""
        out[self.rows] += self._on_rows(X[self.rows])
        return out

    def quadratic(self, X: np.ndarray) -> np.ndarray:
        """``diag(Xᵀ L X)`` (one value per column of the n × m ``X``), from the stroke rows
        alone: L is zero outside them."""
        Xr = X[self.rows]
        return np.einsum("ij,ij->j", Xr, self._on_rows(Xr))

    def gram(self, X: np.ndarray) -> np.ndarray:
        """``Xᵀ L X`` (m × m for the n × m ``X``), from the stroke rows alone."""
        Xr = X[self.rows]
        return Xr.T @ self._on_rows(Xr)

    def _on_rows(self, Xr: np.ndarray) -> np.ndarray:
        """``(L X)`` on the stroke rows, given ``X`` there."""
        upd = self._ds[:, None] * Xr if Xr.ndim == 2 else self._ds * Xr
        if self._Us.shape[1]:
            upd += self._Us @ (self.sigma @ (self._Us.T @ Xr))
        return upd

    def matmat(self, X: np.ndarray) -> np.ndarray:
        return self.add_to(np.zeros(X.shape), X)

    def toarray(self) -> np.ndarray:
        """Dense form, for tests on small problems only."""
        U = self.U.toarray()
        return np.diag(self.diag) + U @ self.sigma @ U.T


@dataclass
class Constraints:
    """Constraint operators of one scribble map, ready to merge with the data graph.

    Attributes
    ----------
    strokes : Strokes
        The strokes they come from (:func:`segapp.strokes.reading.read_strokes`); column ``a``
        of ``U`` belongs to ``strokes.label_ids[a]``.
    ml, cl : LowRankLaplacian
        Exact Laplacians of the merged ML and CL cliques (weights of §4.7).
    scale : float
        ``c = constraint_weight / (d_min d_max)``.
    weights : ndarray
        ``√q ∘ d`` on the stroke pixels (the factor of the rank-one weights), length n.
    """

    strokes: Strokes
    ml: LowRankLaplacian
    cl: LowRankLaplacian
    scale: float
    weights: np.ndarray

    @property
    def label_ids(self) -> tuple[int, ...]:
        """The user's label ids present, sorted."""
        return self.strokes.label_ids

    @property
    def sets(self) -> list[np.ndarray]:
        """Flat pixel indices of each label's strokes."""
        return self.strokes.sets

    @property
    def k(self) -> int:
        return self.strokes.k


def stroke_indicators(degrees: np.ndarray, sets: list[np.ndarray]) -> np.ndarray:
    """``u_a`` = the degrees on label a's stroke pixels, 0 elsewhere: one column per label (n × k).

    The right-hand sides whose potentials ``A⁻¹u_a`` the eigenvectors are close to (the start
    block of FAST-GE's LOBPCG); with unit degrees, the strokes' indicators (the right-hand
    sides of :mod:`segapp.solve.harmonic`).
    """
    u = np.zeros((degrees.shape[0], len(sets)))
    for a, S in enumerate(sets):
        u[S, a] = degrees[S]
    return u


def robust_dmin(degrees: np.ndarray) -> float:
    """``d_min`` of §4.7 taken as a low percentile of the degrees (see module notes)."""
    return float(max(np.percentile(degrees, DMIN_PERCENTILE), degrees.min(), 1e-12))


def build_constraints(
    strokes: Strokes | np.ndarray,
    degrees: np.ndarray,
    *,
    constraint_weight: float = 1.0,
    confidence: np.ndarray | None = None,
) -> Constraints:
    """Exact merged ML / CL Laplacians of a scribble map (see module docstring).

    Parameters
    ----------
    strokes : Strokes or ndarray of int, (H, W)
        The strokes read (:func:`segapp.strokes.reading.read_strokes`), or a scribble map
        (0 = unlabelled, otherwise the user's label id) read here with ``confidence``.
    degrees : ndarray, (n,)
        Degrees of the data graph G_D.
    constraint_weight : float
        Multiplies every constraint weight (1 = the paper's heuristic).
    confidence : ndarray, (H, W), optional
        Per-pixel confidence in (0, 1] of a scribble map's strokes (soft constraints);
        default 1. Read :class:`Strokes` carry theirs.
    """
    if not (np.isfinite(constraint_weight) and constraint_weight > 0):
        raise InvalidInputError(
            f"constraint_weight must be a positive number, got {constraint_weight!r}")
    n = degrees.shape[0]
    if not isinstance(strokes, Strokes):
        strokes = read_strokes(strokes, n, confidence)
    sets = strokes.sets
    scale = constraint_weight / (robust_dmin(degrees) * float(degrees.max()))
    u = np.zeros(n)
    for S, w in zip(sets, strokes.weights):
        u[S] = degrees[S] * w
    k = len(sets)
    rows = np.concatenate(sets)
    cols = np.repeat(np.arange(k), [len(S) for S in sets])
    U = sp.csc_matrix((u[rows], (rows, cols)), shape=(n, k))
    s_a = np.array([u[S].sum() for S in sets])
    s = s_a.sum()

    ml_diag = np.zeros(n)
    cl_diag = np.zeros(n)
    for S, sa in zip(sets, s_a):
        ml_diag[S] = scale * u[S] * sa
        cl_diag[S] = scale * u[S] * (s - sa)
    ml = LowRankLaplacian(ml_diag, U, -scale * np.eye(k))
    cl = LowRankLaplacian(cl_diag, U, -scale * (np.ones((k, k)) - np.eye(k)))
    return Constraints(strokes, ml, cl, scale, u)


def _seed_of(S: np.ndarray) -> int:
    """A seed derived from the pixel set, so an unchanged stroke keeps its random edges."""
    return int.from_bytes(fingerprint(S, digest_size=8), "little")


def sparsify(constraints: Constraints, n: int, cycles: int = 4) -> sp.csr_matrix:
    """Sparse Laplacian matching the ML cliques in expectation (for the AMG preconditioner).

    Each label's clique on ``t`` pixels with weights ``c u_i u_j`` is replaced by ``cycles``
    random Hamiltonian cycles on the same pixels, edges weighted ``c u_i u_j (t − 1)/(2·cycles)``
    (a pair appears in a cycle with probability ``2/(t − 1)``), so ``E[L_sparse] = L_ML`` up to
    repeated pairs. Cost O(t·cycles).
    """
    rows, cols, vals = [], [], []
    u = constraints.weights
    for S in constraints.sets:
        t = len(S)
        if t < 2:
            continue
        rng = np.random.default_rng(_seed_of(S))
        reps = 1 if t <= 3 else cycles  # a triangle or an edge is its own clique
        factor = (t - 1) / (2.0 * reps) if t > 3 else 1.0
        for _ in range(reps):
            perm = S[rng.permutation(t)] if t > 3 else S
            a, b = perm, np.roll(perm, -1)
            if t == 2:
                a, b = a[:1], b[:1]
            rows.append(a)
            cols.append(b)
            vals.append(constraints.scale * factor * u[a] * u[b])
    if not rows:
        return sp.csr_matrix((n, n))
    r, c, v = np.concatenate(rows), np.concatenate(cols), np.concatenate(vals)
    W = sp.coo_matrix((v, (r, c)), shape=(n, n)).tocsr()
    W = W + W.T
    d = np.asarray(W.sum(axis=1)).ravel()
    return (sp.diags(d) - W).tocsr()
