"""Algebraic-multigrid preconditioner for graph Laplacians, applied to blocks of vectors.

PyAMG builds the hierarchy (smoothed aggregation: strength of connection, aggregates,
Jacobi-smoothed prolongators ``P_l``, Galerkin operators ``A_{l+1} = P_lᵀ A_l P_l``); the cycle
itself is ours because LOBPCG applies the preconditioner to a block of m residuals at once and
PyAMG's cycle takes one vector at a time (Gauss–Seidel sweeps are inherently sequential).
A block V-cycle with ℓ1-Jacobi smoothing costs a few sparse-matrix × block products per level,
which measured about 3–4× cheaper than m single-vector PyAMG cycles at 250K pixels.

The cycle is symmetric (``R = Pᵀ``, equal pre- and post-smoothing, exact coarsest solve by
Cholesky), hence a fixed SPD operator, as LOBPCG's theory asks.

Strength threshold. Image graphs have edge weights from ~1e-4 (across an edge in the image) to
1 (inside a flat region). Aggregating across weak edges mixes two regions in one coarse
unknown, so the coarse spaces cannot represent the piecewise-constant vectors the eigensolver
is after; with θ = 0 (PyAMG's default) LOBPCG needed 34 iterations at 250K pixels, with
θ = 0.03 it needed 8 (at the first σ rule; with σ = 0.4 × mean on a 4-neighbour graph θ = 0, 0.03, 0.1, 0.25 gave 82, 24, 21, 48
iterations on the 240K-px coffee sample, see docs/architecture.md).

The hierarchy is a list of :class:`Level` objects (operator, prolongator, smoother diagonal),
as PyAMG's ``MultilevelSolver`` keeps its ``levels``, ending in a coarse solve with a ``solve``
method (:class:`CholeskySolve`, or :class:`PseudoInverseSolve` for a singular coarsest matrix).
:func:`amg_preconditioner` is the one place that builds a hierarchy on a graph Laplacian (with
the shift ``εD`` that makes its coarsest level non-singular): LOBPCG's (FAST-GE with the
strokes' must-link graph, the normalized cut, CCSKL) and the harmonic potentials' CG
(:mod:`segapp.solve.harmonic`, on the Dirichlet matrix of the strokes).

Cancellation: the set-up, :meth:`AMGPreconditioner.galerkin_update` and every application take
the caller's :class:`~segapp.cancel.CancelToken` as a parameter (nothing is stored on the
preconditioner); a solver that applies it through a one-argument callable binds the token
with :func:`functools.partial`.

Set-up. The hierarchy is built level by level here from PyAMG's building blocks (symmetric
strength, standard aggregation, ``fit_candidates``), the same recipe as
:func:`pyamg.smoothed_aggregation_solver` with a Jacobi-smoothed prolongator
``P = (I − ω/ρ D⁻¹A) T``, ω = 4/3, for two reasons:

* cancellation is checked between levels and steps, so a superseded solve in the app does
  not have to wait for a whole set-up;
* on the finest level ``ρ(D⁻¹A)`` is bounded by Gershgorin's ``max_i Σ_j |a_ij| / a_ii``,
  which for a (shifted) graph Laplacian is ≤ 2 and tight on bipartite grids, instead of
  PyAMG's Arnoldi estimate, which measured 60% of the set-up time at 250K px. Coarse Galerkin
  operators are not diagonally dominant in general (Gershgorin's bound was 2× too large there
  and cost CG steps): they keep an Arnoldi estimate, with fewer steps than PyAMG's default
  (:data:`RHO_STEPS`). PyAMG's default candidate improvement (Gauss–Seidel sweeps on B = 1) is skipped:
  for a Laplacian the constant is the near-null space already.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
from pyamg.aggregation.aggregate import standard_aggregation
from pyamg.aggregation.tentative import fit_candidates
from pyamg.strength import symmetric_strength_of_connection
from pyamg.util.linalg import approximate_spectral_radius

from ..cancel import NEVER, CancelToken

#: Strength-of-connection threshold (see module docstring).
DEFAULT_THETA = 0.03
#: Stop coarsening at this many unknowns; the coarsest level is solved by dense Cholesky.
MAX_COARSE = 400
#: Upper bound on the number of levels.
MAX_LEVELS = 20
#: Arnoldi steps and restarts of the coarse levels' ρ(D⁻¹A) estimate. PyAMG's defaults are
#: 15 steps with up to 5 restarts; 10 steps without restart gave the same CG steps (250K:
#: 12, 1.1M / 5 labels: 13) and LOBPCG iterations, ρ within a few % of the default's, and a
#: set-up of 0.30 vs 0.35 s at 250K, 1.5 vs 2.2 s at 1.1M (coffee, interleaved, 2026-11-24;
#: labels 99.77-99.99% equal to the default's, differences inside the solvers' tolerances).
RHO_STEPS, RHO_RESTARTS = 10, 0
#: Jacobi weight of the prolongation smoother (PyAMG's default).
OMEGA = 4.0 / 3.0


def _abs_row_sums(A: sp.csr_matrix) -> np.ndarray:
    """``Σ_j |a_ij|`` per row, straight from the CSR arrays (no |A| copy)."""
    absA = sp.csr_matrix((np.abs(A.data), A.indices, A.indptr), shape=A.shape)
    return absA @ np.ones(A.shape[0])


#: Relative diagonal shift of the matrix the hierarchy is built on (:func:`amg_preconditioner`):
#: small against the eigenvalues sought (so the preconditioner still inverts the smooth modes
#: well) but enough to make the coarsest level non-singular.
AMG_SHIFT = 1e-8


def build_hierarchy(A: sp.csr_matrix, theta: float, cancel: CancelToken = NEVER
                    ) -> tuple[list[sp.csr_matrix], list[sp.csr_matrix]]:
    """Smoothed-aggregation operators ``[A_0, A_1, …]`` and prolongators ``[P_0, …]``."""
    check = cancel.check

    ops, Ps = [A], []
    B = np.ones((A.shape[0], 1))
    while A.shape[0] > MAX_COARSE and len(ops) < MAX_LEVELS:
        check()
        C = symmetric_strength_of_connection(A, theta)
        check()
        AggOp = standard_aggregation(C)[0].tocsr()
        check()
        nc = AggOp.shape[1]
        if nc == 0 or nc >= A.shape[0]:
            break  # no coarsening possible
        T, B = fit_candidates(AggOp, B)
        T = sp.csr_matrix(T)
        diag = A.diagonal()
        dinv = np.where(diag > 0, 1.0 / np.where(diag > 0, diag, 1.0), 0.0)
        DinvA = sp.csr_matrix(sp.diags(dinv) @ A)
        check()
        if len(ops) == 1:
            rho = float(np.max(_abs_row_sums(DinvA)))
        else:
            check()
            # A fixed start vector: PyAMG's default is random, which made coarse sizes vary
            # from run to run.
            x0 = np.random.default_rng(0).random((A.shape[0], 1))
            rho = float(approximate_spectral_radius(DinvA, initial_guess=x0,
                                                    maxiter=RHO_STEPS, restart=RHO_RESTARTS))
        P = (T - (OMEGA / rho) * (DinvA @ T)).tocsr()
        check()
        AP = A @ P
        check()
        A = (P.T.tocsr() @ AP).tocsr()
        A.sum_duplicates()
        Ps.append(P)
        ops.append(A)
    return ops, Ps


def _scatter_indptr(indptr: np.ndarray, rows: np.ndarray, n: int) -> np.ndarray:
    """CSR row pointer of an n-row matrix whose rows ``rows`` (sorted) are those of a
    ``len(rows)``-row matrix with pointer ``indptr``, all other rows empty."""
    counts = np.zeros(n, dtype=np.int64)
    counts[rows] = np.diff(indptr)
    return np.concatenate([[0], np.cumsum(counts)])


def _residual(A: sp.csr_matrix, x: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``b − A x`` in one new block (not two): the cycle's peak memory is a few blocks."""
    r = A @ x
    np.subtract(b, r, out=r)
    return r


def _l1_inverse(A: sp.csr_matrix) -> np.ndarray:
    """``1 / Σ_j |a_ij|``: the ℓ1-Jacobi smoother, convergent for any SPD matrix, no ω to tune."""
    rowsum = np.asarray(abs(A).sum(axis=1)).ravel()
    return 1.0 / np.maximum(rowsum, np.finfo(float).tiny)


@dataclass
class Level:
    """One level of the V-cycle: its operator ``A``, and — except on the coarsest level — the
    prolongator ``P`` to the next coarser one and the ℓ1-Jacobi diagonal ``dinv`` (n × 1)."""

    A: sp.csr_matrix
    P: sp.csr_matrix | None = None
    dinv: np.ndarray | None = None


class CholeskySolve:
    """Exact solve with the (dense, SPD) coarsest operator by Cholesky."""

    def __init__(self, A: np.ndarray) -> None:
        self.factor = sla.cho_factor(A)

    def solve(self, b: np.ndarray) -> np.ndarray:
        return sla.cho_solve(self.factor, b)


class PseudoInverseSolve:
    """The pseudo-inverse of a singular coarsest operator (a hierarchy built without shift)."""

    def __init__(self, A: np.ndarray) -> None:
        self.pinv = np.linalg.pinv(A, hermitian=True)

    def solve(self, b: np.ndarray) -> np.ndarray:
        return self.pinv @ b


def coarse_solver(A: sp.spmatrix) -> CholeskySolve | PseudoInverseSolve:
    """Cholesky of the coarsest operator, or its pseudo-inverse if it is singular."""
    dense = A.toarray()
    try:
        return CholeskySolve(dense)
    except np.linalg.LinAlgError:
        return PseudoInverseSolve(dense)


class AMGPreconditioner:
    """Block V-cycle approximating ``A⁻¹`` for a sparse SPD (or shifted singular) matrix ``A``.

    Parameters
    ----------
    A : scipy.sparse matrix
        Symmetric positive definite (a graph Laplacian plus a small shift).
    theta : float
        Symmetric strength-of-connection threshold for the aggregation.
    sweeps : int
        ℓ1-Jacobi sweeps before and after the coarse correction.
    cancel : CancelToken, optional
        Checked during the set-up (between levels); :class:`~segapp.errors.Cancelled` is raised
        when it asks to stop. Each application takes its own token (:meth:`__call__`).

    Attributes
    ----------
    levels : list of Level
        Finest first; the last one's operator is solved by ``coarse``.
    coarse : CholeskySolve or PseudoInverseSolve
    applications : int
        V-cycles applied so far (one per block).
    """

    def __init__(self, A: sp.spmatrix, *, theta: float = DEFAULT_THETA, sweeps: int = 1,
                 cancel: CancelToken = NEVER) -> None:
        A = sp.csr_matrix(A)
        self.theta = theta
        self.sweeps = sweeps
        self.applications = 0
        ops, Ps = build_hierarchy(A, theta, cancel)
        # Restriction R = Pᵀ is applied as P.T (a CSC view): no transposed copy to keep
        # (66 B/px at 250K px), and CSC × block measured faster than the CSR copy (3.6 vs 4.4 ms).
        self._set_levels(ops, Ps)

    def _set_levels(self, ops: list[sp.csr_matrix], Ps: list[sp.csr_matrix]) -> None:
        # ℓ1-Jacobi diagonals per level and the coarsest factorisation.
        self.levels = [Level(A, P, _l1_inverse(A)[:, None]) for A, P in zip(ops[:-1], Ps)]
        self.levels.append(Level(ops[-1]))
        self.coarse = coarse_solver(ops[-1])

    def galerkin_update(self, delta: sp.spmatrix, decoupled: np.ndarray | None = None, *,
                        cancel: CancelToken = NEVER) -> None:
        """Make the hierarchy precondition ``A' = A + Δ`` for a sparse, local change ``Δ``.

        The aggregates stay; every level's operator gets its exact Galerkin correction, so the
        coarse operators are those of the new matrix and only the prolongators' fit ages.
        ``decoupled`` are rows that ``A'`` reduces to their diagonal (pixels that became
        Dirichlet rows): their rows of ``P_0`` are zeroed, since a decoupled unknown must not
        share a coarse unknown with its old neighbours (measured at 250K px after one added
        stroke: 13 CG steps instead of 15; a new hierarchy: 12). With ``E = −P_0`` on those
        rows R (zero elsewhere),

        .. math:: P'ᵀA'P' = PᵀAP + PᵀΔP + Eᵀ(A'P) + (A'P)ᵀE + EᵀA'E,

        where ``A'P`` is needed on the rows R only, and ``Δ_{l+1} = P_lᵀ Δ_l P_l`` below:
        everything touches a few hundred rows. ``cancel`` is checked between the levels.

        Rows are never coupled back: after pixels were unpainted the caller builds a new
        hierarchy (:class:`~segapp.solve.harmonic.HarmonicSolver` does: the old aggregates and
        potentials misled CG, 45–108 steps instead of 11–14).
        """
        check = cancel.check
        delta = sp.csr_matrix(delta)
        A0 = (self.levels[0].A + delta).tocsr()
        ops = [A0]
        check()
        Ps = [level.P for level in self.levels[:-1]]
        if not Ps:
            self._set_levels(ops, Ps)
            return
        P0 = Ps[0]
        coarse = (P0.T @ (delta @ P0)).tocsr()
        rows = (np.zeros(0, np.int64) if decoupled is None
                else np.unique(np.asarray(decoupled, dtype=np.int64)))
        if rows.size:
            # E on the rows R only (|R| × n_coarse): minus the current rows.
            E_R = (-P0[rows]).tocsr()
            check()
            A_R = A0[rows]                                   # rows R of A'
            EtAP = (E_R.T @ (A_R @ P0)).tocsr()
            coarse = coarse + EtAP + EtAP.T + (E_R.T @ (A_R[:, rows] @ E_R)).tocsr()
            E = sp.csr_matrix((E_R.data, E_R.indices, _scatter_indptr(E_R.indptr, rows,
                                                                     P0.shape[0])),
                              shape=P0.shape)
            Ps[0] = (P0 + E).tocsr()
            Ps[0].eliminate_zeros()
        for level in range(1, len(self.levels)):
            check()
            ops.append((self.levels[level].A + coarse).tocsr())
            if level < len(Ps):
                P = Ps[level]
                coarse = (P.T @ (coarse @ P)).tocsr()
        self._set_levels(ops, Ps)

    @property
    def operator_complexity(self) -> float:
        return sum(level.A.nnz for level in self.levels) / self.levels[0].A.nnz

    def __call__(self, B: np.ndarray, cancel: CancelToken = NEVER) -> np.ndarray:
        """One V-cycle on every column of ``B`` (or on the vector ``B``); ``cancel`` is checked
        before it and half-way through."""
        cancel.check()
        self.applications += 1
        single = B.ndim == 1
        X = self._cycle(0, B[:, None] if single else B, cancel)
        return X[:, 0] if single else X

    def _cycle(self, depth: int, b: np.ndarray, cancel: CancelToken) -> np.ndarray:
        level = self.levels[depth]
        if level.P is None:
            return self.coarse.solve(b)
        A, dinv, P = level.A, level.dinv, level.P

        def smooth(x: np.ndarray) -> None:  # one ℓ1-Jacobi sweep, in place
            r = _residual(A, x, b)
            r *= dinv
            x += r

        x = dinv * b
        for _ in range(self.sweeps - 1):
            smooth(x)
        x += P @ self._cycle(depth + 1, P.T @ _residual(A, x, b), cancel)
        if depth == 0:  # a cycle at 1.1M px takes 160 ms: also look half-way
            cancel.check()
        for _ in range(self.sweeps):
            smooth(x)
        return x

    def __repr__(self) -> str:
        sizes = " → ".join(str(level.A.shape[0]) for level in self.levels)
        return (f"AMGPreconditioner(levels={len(self.levels)}, unknowns {sizes}, "
                f"operator complexity {self.operator_complexity:.2f}, θ={self.theta})")


def amg_preconditioner(laplacian: sp.spmatrix, degrees: np.ndarray, *,
                       must_link: sp.spmatrix | None = None, theta: float = DEFAULT_THETA,
                       cancel: CancelToken = NEVER) -> AMGPreconditioner:
    """Smoothed-aggregation V-cycle approximating ``(L + L̃_ML + εD)⁻¹``, ``ε`` = :data:`AMG_SHIFT`.

    ``laplacian`` is the graph Laplacian (or the strokes' Dirichlet matrix of it, for the
    harmonic potentials); ``must_link`` the Laplacian of the strokes' sparsified must-link
    graph (:func:`segapp.strokes.constraints.sparsify`), None for an operator without
    constraints. ``cancel`` is checked between the set-up's levels and steps.
    """
    A = laplacian if must_link is None else laplacian + must_link
    return AMGPreconditioner(A + sp.diags(AMG_SHIFT * np.asarray(degrees)), theta=theta,
                             cancel=cancel)
