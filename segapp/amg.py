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
θ = 0.03 it needed 8 (``benchmarks/speed.py`` reproduces the setting's effect).

"""

from __future__ import annotations

from typing import Callable

import numpy as np
import pyamg
import scipy.linalg as sla
import scipy.sparse as sp

from .errors import Cancelled

#: Strength-of-connection threshold (see module docstring).
DEFAULT_THETA = 0.03
#: Stop coarsening at this many unknowns; the coarsest level is solved by dense Cholesky.
MAX_COARSE = 400


def _l1_inverse(A: sp.csr_matrix) -> np.ndarray:
    """``1 / Σ_j |a_ij|``: the ℓ1-Jacobi smoother, convergent for any SPD matrix, no ω to tune."""
    rowsum = np.asarray(abs(A).sum(axis=1)).ravel()
    return 1.0 / np.maximum(rowsum, np.finfo(float).tiny)


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
    cancel : callable, optional
        Checked on every application; when it returns True, :class:`~segapp.errors.Cancelled`
        is raised (so a superseded solve stops within one cycle).
    """

    def __init__(self, A: sp.spmatrix, *, theta: float = DEFAULT_THETA, sweeps: int = 1,
                 cancel: Callable[[], bool] | None = None) -> None:
        A = sp.csr_matrix(A)
        self.ml = pyamg.smoothed_aggregation_solver(
            A, strength=("symmetric", {"theta": theta}), max_coarse=MAX_COARSE,
            keep=False)
        self.theta = theta
        self.sweeps = sweeps
        self.cancel = cancel
        self.applications = 0
        self._P = [lev.P.tocsr() for lev in self.ml.levels[:-1]]
        self._R = [P.T.tocsr() for P in self._P]
        self._set_operators([lev.A.tocsr() for lev in self.ml.levels])

    def _set_operators(self, ops: list[sp.csr_matrix]) -> None:
        # ℓ1-Jacobi diagonals and the coarsest factorisation, per level.
        self._A = ops
        self._dinv = [_l1_inverse(A)[:, None] for A in ops[:-1]]
        coarse = ops[-1].toarray()
        try:
            self._coarse = ("chol", sla.cho_factor(coarse))
        except np.linalg.LinAlgError:
            # A singular coarsest matrix (no shift given): fall back to a pseudo-inverse.
            self._coarse = ("pinv", np.linalg.pinv(coarse, hermitian=True))

    @property
    def levels(self) -> int:
        return len(self._A)

    @property
    def operator_complexity(self) -> float:
        return sum(A.nnz for A in self._A) / self._A[0].nnz

    def __call__(self, B: np.ndarray) -> np.ndarray:
        if self.cancel is not None and self.cancel():
            raise Cancelled("solve cancelled")
        self.applications += 1
        single = B.ndim == 1
        X = self._cycle(0, B[:, None] if single else B)
        return X[:, 0] if single else X

    def _cycle(self, level: int, b: np.ndarray) -> np.ndarray:
        if level == len(self._A) - 1:
            kind, fac = self._coarse
            return sla.cho_solve(fac, b) if kind == "chol" else fac @ b
        A, dinv = self._A[level], self._dinv[level]
        x = dinv * b
        for _ in range(self.sweeps - 1):
            x += dinv * (b - A @ x)
        x += self._P[level] @ self._cycle(level + 1, self._R[level] @ (b - A @ x))
        for _ in range(self.sweeps):
            x += dinv * (b - A @ x)
        return x

    def __repr__(self) -> str:
        sizes = " → ".join(str(A.shape[0]) for A in self._A)
        return (f"AMGPreconditioner(levels={self.levels}, unknowns {sizes}, "
                f"operator complexity {self.operator_complexity:.2f}, θ={self.theta})")
