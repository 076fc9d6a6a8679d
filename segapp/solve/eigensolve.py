"""The eigensolver entry of the graph methods: AMG hierarchy, block solve, cancellation, checks.

FAST-GE (``L_G x = λ L_H x``, Cucuringu et al. 2016 §4.3–4.5), the normalized cut
(``L x = μ D x``) and CCSKL's smoothest normalized-Laplacian eigenvectors are all the smallest
pairs of a :class:`~segapp.solve.pencil.Pencil` on ``dᵀx = 0``, preconditioned by one
smoothed-aggregation V-cycle (:mod:`segapp.solve.amg`) of the graph Laplacian — plus, for FAST-GE,
the strokes' sparsified must-link graph — shifted by ``εD`` so the coarsest level is
non-singular. This module is the one place that builds that hierarchy
(:func:`amg_preconditioner`), runs the chosen solver with the caller's cancellation
(:func:`eigenpairs`: segapp's LOBPCG, or scipy's for comparison) and decides what a
non-converged solve means (:func:`nonconvergence`, shared with FAST-GE's harmonic solve,
:mod:`segapp.solve.harmonic`). How each method starts the block
(warm starts, stroke sources, a random block) stays with the method.
"""

from __future__ import annotations

import warnings
from typing import Callable, Literal

import numpy as np
import scipy.sparse as sp

from .amg import DEFAULT_THETA, AMGPreconditioner
from ..cancel import CancelLike, CancelToken
from ..errors import SolverError
from .lobpcg import SolverDiagnostics, lobpcg
from .pencil import Pencil

#: Relative diagonal shift of the matrix the AMG hierarchy is built on: small against the
#: eigenvalues sought (so the preconditioner still inverts the smooth modes well) but enough
#: to make the coarsest level non-singular.
AMG_SHIFT = 1e-8

Solver = Literal["segapp", "scipy"]


def amg_preconditioner(laplacian: sp.spmatrix, degrees: np.ndarray, *,
                       must_link: sp.spmatrix | None = None, theta: float = DEFAULT_THETA,
                       cancel: CancelLike = None) -> AMGPreconditioner:
    """Smoothed-aggregation V-cycle approximating ``(L + L̃_ML + εD)⁻¹``, ``ε`` = :data:`AMG_SHIFT`.

    ``must_link`` is the Laplacian of the strokes' sparsified must-link graph
    (:func:`segapp.strokes.constraints.sparsify`), None for a method without constraints in its
    operator. ``cancel`` is checked between the set-up's levels and steps.
    """
    A = laplacian if must_link is None else laplacian + must_link
    return AMGPreconditioner(A + sp.diags(AMG_SHIFT * np.asarray(degrees)), theta=theta,
                             cancel=cancel)


def random_start(M: Callable[[np.ndarray], np.ndarray], n: int, m: int,
                 rng: np.random.Generator) -> np.ndarray:
    """``M G`` for a Gaussian n × m block G: a start with the preconditioner's smoothness."""
    return M(rng.standard_normal((n, m)))


def eigenpairs(pencil: Pencil, X0: np.ndarray, M: AMGPreconditioner, *, nev: int | None = None,
               solver: Solver = "segapp",
               maxiter: int = 300, eig_tol: float = 1e-3, res_tol: float = 1e-6,
               cancel: CancelLike = None, on_nonconvergence: Literal["raise", "warn"] = "raise",
               monitor: Callable[[np.ndarray], bool] | None = None,
               advice: str = "try a larger maxiter"
               ) -> tuple[np.ndarray, np.ndarray, SolverDiagnostics]:
    """The ``nev`` smallest pairs of ``pencil`` on ``dᵀx = 0``, checked.

    Parameters
    ----------
    pencil : Pencil
        ``(A, B)`` with the projector onto ``dᵀx = 0``.
    X0 : ndarray (n, b)
        Initial block, ``b ≥ nev`` columns (extra columns are LOBPCG guard vectors).
    M : AMGPreconditioner
        The V-cycle of :func:`amg_preconditioner`; it checks ``cancel`` on every application
        during this solve.
    nev : int, optional
        Pairs wanted (default ``b``).
    solver : {"segapp", "scipy"}
        segapp's block LOBPCG (:func:`segapp.solve.lobpcg.lobpcg`), or scipy's LOBPCG on the same
        operators (absolute residual tolerance, for comparison).
    maxiter, eig_tol, res_tol
        Iteration cap; stop when the Ritz values settled to ``eig_tol`` (relative) twice, or
        every relative residual is below ``res_tol`` (scipy: absolute residuals).
    cancel : callable, Event or CancelToken, optional
        :class:`~segapp.errors.Cancelled` is raised when it asks to stop.
    monitor : callable, optional
        segapp's LOBPCG only: called with the Ritz vectors after every iteration; True stops
        the solve as converged (FAST-GE's :class:`~segapp.solve.settling.LabelSettling`).
    on_nonconvergence : {"raise", "warn"}
        At the iteration cap: raise :class:`~segapp.errors.SolverError` (with the diagnostics),
        or warn and return the vectors reached.
    advice : str
        What the error message suggests (the options of the calling method).

    Returns
    -------
    eigenvalues : ndarray (nev,)
    X : ndarray (n, nev)
        B-orthonormal eigenvectors.
    diagnostics : SolverDiagnostics
        Including ``preconditioner_applications`` (cumulative for ``M``).
    """
    token = CancelToken.of(cancel)
    nev = X0.shape[1] if nev is None else nev
    M.cancel = token
    try:
        if solver == "scipy":
            lam, X, diag = _scipy_lobpcg(pencil, X0, M, nev, maxiter, res_tol)
        else:
            lam, X, diag = lobpcg(pencil.A, pencil.B, X0, nev=nev, M=M, project=pencil.project,
                                  maxiter=maxiter, eig_tol=eig_tol, res_tol=res_tol,
                                  cancel=token, monitor=monitor)
    finally:
        M.cancel = None
    diag.preconditioner_applications = M.applications
    if not diag.converged:
        nonconvergence(diag, on_nonconvergence, advice)
    return lam[:nev], X[:, :nev], diag


def nonconvergence(diag: SolverDiagnostics, policy: Literal["raise", "warn"],
                   advice: str) -> None:
    """A solve that hit its iteration cap: raise :class:`~segapp.errors.SolverError` or warn."""
    msg = (f"the eigensolver did not converge in {diag.iterations} iterations "
           f"(largest relative residual {np.max(diag.residuals):.1e}); {advice}")
    if policy == "raise":
        raise SolverError(msg, diag)
    warnings.warn(msg, RuntimeWarning, stacklevel=4)


def _scipy_lobpcg(pencil: Pencil, X0: np.ndarray, M: AMGPreconditioner, nev: int,
                  maxiter: int, res_tol: float) -> tuple:
    """scipy's LOBPCG on the same pencil (for comparison; absolute residual tolerance)."""
    from scipy.sparse.linalg import LinearOperator
    from scipy.sparse.linalg import lobpcg as scipy_lobpcg
    n = pencil.n
    op = lambda f: LinearOperator((n, n), matvec=f, matmat=f, dtype=float)  # noqa: E731
    X0 = pencil.project(X0)[:, :nev]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lam, X, hist = scipy_lobpcg(op(pencil.A), X0, B=op(pencil.B), M=op(M),
                                    Y=np.ones((n, 1)), tol=res_tol, maxiter=maxiter,
                                    largest=False, retResidualNormsHistory=True)
    residuals = np.asarray(hist[-1])
    converged = bool(np.max(residuals) <= res_tol)
    diag = SolverDiagnostics(iterations=len(hist) - 1, eigenvalues=lam, residuals=residuals,
                             converged=converged,
                             reason="scipy lobpcg (absolute residual tolerance)"
                             + ("" if converged else ", iteration cap"))
    return lam, X, diag
