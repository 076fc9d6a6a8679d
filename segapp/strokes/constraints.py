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

import hashlib
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..errors import InvalidInputError

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
        r = self.rows
        Xr = X[r]
        upd = self._ds[:, None] * Xr if X.ndim == 2 else self._ds * Xr
        if self._Us.shape[1]:
            upd += self._Us @ (self.sigma @ (self._Us.T @ Xr))
        out[r] += upd
        return out

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
    label_ids : tuple of int
        The user's label ids present, sorted; column ``a`` of ``U`` belongs to ``label_ids[a]``.
    sets : list of ndarray
        Flat pixel indices of each label's strokes.
    ml, cl : LowRankLaplacian
        Exact Laplacians of the merged ML and CL cliques (weights of §4.7).
    scale : float
        ``c = constraint_weight / (d_min d_max)``.
    weights : ndarray
        ``√q ∘ d`` on the stroke pixels (the factor of the rank-one weights), length n.
    """

    label_ids: tuple[int, ...]
    sets: list[np.ndarray]
    ml: LowRankLaplacian
    cl: LowRankLaplacian
    scale: float
    weights: np.ndarray

    @property
    def k(self) -> int:
        return len(self.label_ids)


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


def confidence_weights(confidence: np.ndarray | None, n: int,
                       sets: list[np.ndarray]) -> list[np.ndarray]:
    """Each label's stroke-pixel weights ``√q`` from a per-pixel confidence q in [0, 1].

    A clique edge between painted pixels i and j then weighs ``√q_i √q_j`` times its full
    weight (soft constraints); without a confidence every weight is 1.
    """
    if confidence is None:
        return [np.ones(S.size) for S in sets]
    q = np.asarray(confidence, dtype=np.float64).ravel()
    if q.size != n:
        raise InvalidInputError("confidence must have the image's shape")
    if np.any(~np.isfinite(q)) or np.any(q < 0) or np.any(q > 1):
        raise InvalidInputError("confidence values must lie in [0, 1]")
    return [np.sqrt(q[S]) for S in sets]


def stroke_sets(scribbles: np.ndarray, n: int) -> tuple[tuple[int, ...], list[np.ndarray]]:
    """Validate a scribble label map and return its label ids and per-label flat pixel indices."""
    s = np.asarray(scribbles)
    if s.size != n:
        raise InvalidInputError(f"scribbles have {s.size} pixels but the image has {n}")
    if not np.issubdtype(s.dtype, np.integer):
        if not np.all(np.isfinite(s)) or np.any(s != np.round(s)):
            raise InvalidInputError("scribbles must hold integer label ids (0 = unlabelled)")
        s = s.astype(np.int64)
    flat = s.ravel()
    if np.any(flat < 0):
        raise InvalidInputError("scribbles must not hold negative values (0 = unlabelled)")
    order = np.argsort(flat, kind="stable")
    ids, starts = np.unique(flat[order], return_index=True)
    bounds = list(starts[1:]) + [flat.size]
    sets = {int(i): np.sort(order[a:b]) for i, a, b in zip(ids, starts, bounds) if i != 0}
    if not sets:
        raise InvalidInputError("no strokes: paint at least two labels")
    if len(sets) < 2:
        only = next(iter(sets))
        raise InvalidInputError(
            f"only label {only} has strokes: at least two different labels are needed")
    label_ids = tuple(sorted(sets))
    return label_ids, [sets[i] for i in label_ids]


def robust_dmin(degrees: np.ndarray) -> float:
    """``d_min`` of §4.7 taken as a low percentile of the degrees (see module notes)."""
    return float(max(np.percentile(degrees, DMIN_PERCENTILE), degrees.min(), 1e-12))


def build_constraints(
    scribbles: np.ndarray,
    degrees: np.ndarray,
    *,
    constraint_weight: float = 1.0,
    confidence: np.ndarray | None = None,
) -> Constraints:
    """Exact merged ML / CL Laplacians of a scribble map (see module docstring).

    Parameters
    ----------
    scribbles : ndarray of int, (H, W)
        0 = unlabelled, otherwise the user's label id.
    degrees : ndarray, (n,)
        Degrees of the data graph G_D.
    constraint_weight : float
        Multiplies every constraint weight (1 = the paper's heuristic).
    confidence : ndarray, (H, W), optional
        Per-pixel confidence in (0, 1] of the strokes (soft constraints); default 1.
    """
    if not (np.isfinite(constraint_weight) and constraint_weight > 0):
        raise InvalidInputError(
            f"constraint_weight must be a positive number, got {constraint_weight!r}")
    n = degrees.shape[0]
    label_ids, sets = stroke_sets(scribbles, n)
    scale = constraint_weight / (robust_dmin(degrees) * float(degrees.max()))
    u = np.zeros(n)
    for S, w in zip(sets, confidence_weights(confidence, n, sets)):
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
    return Constraints(label_ids, sets, ml, cl, scale, u)


def _seed_of(S: np.ndarray) -> int:
    """A seed derived from the pixel set, so an unchanged stroke keeps its random edges."""
    return int.from_bytes(hashlib.blake2b(np.ascontiguousarray(S).tobytes(),
                                          digest_size=8).digest(), "little")


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
