"""The generalized eigenproblem ``L_G x = λ L_H x`` of FAST-GE, as operators (§4.2–4.4, §4.7).

``G = G_D + Ĝ_ML`` and ``H = K/n + Ĝ_CL`` with the demand graph ``K_ij = d_i d_j / vol``.

Why B = diag(d)/n + L_CL works as LOBPCG's B
--------------------------------------------
LOBPCG needs a symmetric positive-definite ``B``; ``L_H`` is singular (``L_H 1 = 0``, and
``L_G 1 = 0`` too, so the constant vector is an eigenvector of no eigenvalue). The Laplacian of
the (dense, rank-one) demand graph is ``L_K = D − d dᵀ/vol``. On the hyperplane ``dᵀx = 0``
(the representative FAST-GE picks in Fig. 2, step 4) the rank-one term vanishes, so

.. math:: L_H x = \\bigl(D/n + L_{CL}\\bigr)\\, x =: B x \\qquad (dᵀx = 0),

and ``B`` is sparse plus low-rank and positive definite (``D/n`` is, ``L_CL`` is PSD). The
B-orthogonal complement of ``Y = 1`` is ``{x : 1ᵀBx = dᵀx/n = 0}`` — exactly that hyperplane,
because ``1ᵀ L_CL = 0``. Hence solving ``L_G x = λ B x`` under the constraint ``Y = 1`` yields the
pairs of ``L_G x = λ L_H x`` with ``dᵀx = 0``: a stationary point there satisfies
``L_G x − λ B x = μ B1 = μ d/n``; multiplying by ``1ᵀ`` gives ``0 = μ·vol/n``, so ``μ = 0`` and
``L_G x = λ B x = λ L_H x``. ``tests/solve/test_pencil.py`` checks this against a dense ``eigh`` of
``(L_G, L_H)`` restricted to ``dᵀx = 0``.

K is never formed: on the constrained space it is just ``D``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..strokes.constraints import Constraints, LowRankLaplacian


@dataclass
class Pencil:
    """``A = L_D + L_ML`` and ``B = D/n + L_CL`` as block operators.

    ``ml`` / ``cl`` may be None (unconstrained problem: ``A = L_D``, ``B = D/n``, the normalized-
    cut pencil of Shi & Malik up to the factor n).
    """

    L: sp.csr_matrix
    degrees: np.ndarray
    ml: LowRankLaplacian | None = None
    cl: LowRankLaplacian | None = None

    @classmethod
    def from_constraints(cls, L: sp.csr_matrix, degrees: np.ndarray,
                         constraints: Constraints | None) -> "Pencil":
        if constraints is None:
            return cls(L, degrees)
        return cls(L, degrees, constraints.ml, constraints.cl)

    @property
    def n(self) -> int:
        return self.L.shape[0]

    @property
    def b_diag(self) -> np.ndarray:
        return self.degrees / self.n

    def A(self, X: np.ndarray) -> np.ndarray:
        out = self.L @ X
        if self.ml is not None:
            self.ml.add_to(out, X)
        return out

    def B(self, X: np.ndarray) -> np.ndarray:
        bd = self.b_diag
        out = bd[:, None] * X if X.ndim == 2 else bd * X
        if self.cl is not None:
            self.cl.add_to(out, X)
        return out

    def project(self, X: np.ndarray) -> np.ndarray:
        """Remove the d-weighted mean: the B-orthogonal projection onto ``dᵀx = 0``."""
        d = self.degrees
        return X - (d @ X) / d.sum()

    def dense(self) -> tuple[np.ndarray, np.ndarray]:
        """Dense ``(L_G, L_H)`` including the demand graph — for tests on small problems only."""
        d = self.degrees
        n = self.n
        LG = self.L.toarray()
        if self.ml is not None:
            LG = LG + self.ml.toarray()
        LK = np.diag(d) - np.outer(d, d) / d.sum()
        LH = LK / n + (self.cl.toarray() if self.cl is not None else 0.0)
        return LG, LH
