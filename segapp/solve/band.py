"""One-shot direct solves of a band's Dirichlet problem (:mod:`segapp.graphs.band`).

The band around a 12-megapixel answer's boundaries is a set of strips a few dozen pixels
wide (200K–650K unknowns), solved once per edit for a few right-hand sides. Not a whole
grid, so :mod:`segapp.solve.ordering`'s nested dissection does not apply: CHOLMOD orders the
band itself (AMD: a strip's natural order). Measured on the coffee sample's band at 12 MP
(452,664 unknowns, 2.2M entries in the upper triangle, 4 right-hand sides; load 1.0, 2 cores):
analysis 0.26 s, factorization 0.62 s, solve 0.10 s, factor 159 MB. The analysis needs the
pattern only, so :mod:`segapp.inputs.refine` runs it while the features are computed
(:class:`BandSolver`). Where CHOLMOD is missing, SciPy's SuperLU (minimum degree on
``AᵀA + A``) solves the same system, exactly and more slowly. Both release the GIL.
"""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp

from . import cholmod
from ..cancel import NEVER, CancelToken
from ..errors import SolverError


class BandSolver:
    """A direct solver of one band's matrix: :meth:`analyse` (the pattern only: CHOLMOD's
    AMD order and symbolic factorization) can run in another thread while the values are
    computed (it releases the GIL); :meth:`solve` factors the values and solves.

    Parameters
    ----------
    indptr, indices : ndarray
        The upper triangle's pattern as CSR, sorted, diagonal included
        (:class:`segapp.graphs.band.BandGraph`).
    """

    def __init__(self, indptr: np.ndarray, indices: np.ndarray) -> None:
        self.indptr = np.ascontiguousarray(indptr, dtype=np.int32)
        self.indices = np.ascontiguousarray(indices, dtype=np.int32)
        self.n = self.indptr.size - 1
        self._factor: cholmod.Factor | None = None
        self.seconds: dict[str, float] = {}

    def analyse(self) -> None:
        """CHOLMOD's analysis of the pattern (nothing to do without CHOLMOD)."""
        if self.n and cholmod.available() and self._factor is None:
            t = time.perf_counter()
            # CSR of the upper triangle = CSC of the lower one, what CHOLMOD reads
            self._factor = cholmod.Factor(self.indptr, self.indices, None)
            self.seconds["analyse"] = time.perf_counter() - t

    def solve(self, data: np.ndarray, b: np.ndarray, cancel: CancelToken = NEVER
              ) -> tuple[np.ndarray, dict]:
        """``x = A⁻¹ b`` for the matrix with these values on the pattern; the report as
        :func:`solve_band`'s."""
        if self.n == 0:
            return np.zeros((0,) + b.shape[1:]), {"solver": "none", "factor_bytes": 0}
        cancel.check()
        self.analyse()
        if self._factor is not None:
            f = self._factor
            t1 = time.perf_counter()
            f.factorize(data)
            t2 = time.perf_counter()
            x = f.solve(b)
            return x, {"solver": "CHOLMOD (AMD)", **self.seconds, "factorize": t2 - t1,
                       "solve": time.perf_counter() - t2, "factor_bytes": f.nbytes}
        from scipy.sparse.linalg import splu

        from ..graphs.band import symmetric
        upper = sp.csr_matrix((data, self.indices, self.indptr), shape=(self.n, self.n))
        t = time.perf_counter()
        try:
            lu = splu(symmetric(upper).tocsc(), permc_spec="MMD_AT_PLUS_A")
        except RuntimeError as exc:   # "Factor is exactly singular"
            raise SolverError(f"the band's Dirichlet matrix is singular ({exc})") from None
        t1 = time.perf_counter()
        x = lu.solve(np.asarray(b, dtype=np.float64))
        return x, {"solver": "SuperLU", "factorize": t1 - t, "solve": time.perf_counter() - t1,
                   "factor_bytes": int(lu.L.data.nbytes + lu.U.data.nbytes
                                       + lu.L.indices.nbytes + lu.U.indices.nbytes)}


def solve_band(upper: sp.csr_matrix, b: np.ndarray, cancel: CancelToken = NEVER
               ) -> tuple[np.ndarray, dict]:
    """``x = A⁻¹ b`` for the symmetric positive definite ``A`` whose upper triangle (CSR,
    sorted, diagonal included) is ``upper``: :func:`segapp.graphs.band.band_system`'s.

    Returns ``x`` and a report: ``solver`` ("CHOLMOD (AMD)" or "SuperLU"), the seconds of
    each step, the factor's bytes. ``cancel`` is checked before the factorization (which
    runs to its end once started: under a second at 12 MP).
    """
    return BandSolver(upper.indptr, upper.indices).solve(upper.data, b, cancel)
