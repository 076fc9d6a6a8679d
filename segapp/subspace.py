"""FAST-GE's eigenpairs as potentials: preconditioned CG on the strokes' sources + Rayleigh–Ritz.

Why this works (FAST-GE §4.3, §4.7)
-----------------------------------
With ``A = L_D + L_ML`` and ``B = D/n + L_CL`` on ``dᵀx = 0`` (:mod:`segapp.pencil`), the
cannot-link cliques give ``B`` a huge rank-(k − 1) part on the stroke pixels, so the k − 1
wanted eigenvalues are tiny (~1e-11 on photos) and the next one is large (~1e-3): a gap of
eight orders of magnitude. Inverse subspace iteration ``X ← A⁻¹ B X`` therefore converges by
that ratio per step, and ``B X`` for any X is, up to the small ``D/n`` term, a combination of
the stroke sources ``u_a = d ∘ 1_{S_a}``. So the wanted eigenvectors are, to high accuracy,
combinations of the k *potentials*

.. math:: y_a = A^{-1} b_a, \\qquad b_a = u_a - d\\,\\frac{1ᵀu_a}{\\operatorname{vol}}

(``b_a`` is made orthogonal to ``1``, the null vector of A, so the singular system is
consistent) — the same amount of work as random_walker's linear solves, and in the limit of
stiff must-links exactly its potentials. One block of preconditioned conjugate gradients
(the AMG V-cycle of :mod:`segapp.amg`, one per column, per-column step lengths) computes the
``y_a``; after every CG step the Rayleigh–Ritz procedure of the pencil on ``span(Y)``
(projected to ``dᵀx = 0``) gives Ritz pairs, and the iteration stops when the k − 1 smallest
Ritz values have settled to a relative ``eig_tol`` twice (as the LOBPCG of :mod:`segapp.lobpcg`
does), or when their residuals are below ``res_tol``. Rayleigh–Ritz is nearly free here: CG
carries ``A Y = b − R``, and ``B`` touches only the stroke rows plus a diagonal.

A warm start (the app's edit after edit) starts CG from the previous potentials of the labels
that still have strokes: the residual is then confined to where the strokes changed.

The returned pairs are those of the paper's pencil, not of an approximation of it: the
Rayleigh–Ritz step uses the exact operators, and the residuals reported are the pencil's.
Measured on the coffee photo at 44K px, 4 labels (docs/architecture.md): after 8 CG steps the
subspace is within sin θ = 6e-3 of a tightly converged reference, Ritz values within 1e-3, and
99.995% of the labels agree.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from .cancel import CancelLike, CancelToken
from .constraints import stroke_indicators
from .errors import SolverError
from .lobpcg import SolverDiagnostics
from .pencil import Pencil

Operator = Callable[[np.ndarray], np.ndarray]


def _colnorm(V: np.ndarray) -> np.ndarray:
    return np.sqrt(np.einsum("ij,ij->j", V, V))


def stroke_sources(pencil: Pencil, sets: list[np.ndarray]) -> np.ndarray:
    """``b_a = u_a − d (1ᵀu_a)/vol``, one column per label: consistent right-hand sides."""
    d = pencil.degrees
    b = stroke_indicators(d, sets)
    b -= np.outer(d, b.sum(axis=0) / d.sum())
    return b


def _ritz(pencil: Pencil, Y: np.ndarray, AY: np.ndarray, nev: int
          ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Rayleigh–Ritz of the pencil on span(Y) projected to ``dᵀx = 0``: θ, X, AX, BX."""
    d = pencil.degrees
    shift = (d @ Y) / d.sum()
    Yp = Y - shift                      # A·1 = 0, so A Yp = A Y
    BY = pencil.B(Yp)
    GA = Yp.T @ AY
    GB = Yp.T @ BY
    # SVQB-style orthonormalisation of the B-Gram matrix: drops dependent directions.
    scale = 1.0 / np.sqrt(np.maximum(np.diag(GB), np.finfo(float).tiny))
    GBs = GB * scale[:, None] * scale[None, :]
    w, V = np.linalg.eigh((GBs + GBs.T) / 2)
    keep = w > 1e-12 * max(w.max(), 0)
    T = (scale[:, None] * V[:, keep]) / np.sqrt(w[keep])
    if T.shape[1] < nev:
        raise SolverError(f"the strokes' potentials span only {T.shape[1]} of {nev} directions")
    GAt = T.T @ GA @ T
    theta, C = np.linalg.eigh((GAt + GAt.T) / 2)
    C = T @ C
    return theta, Yp @ C, AY @ C, BY @ C


def potentials_eigenpairs(
    pencil: Pencil,
    M: Operator,
    sets: list[np.ndarray],
    *,
    nev: int,
    Y0: np.ndarray | None = None,
    maxiter: int = 300,
    eig_tol: float = 1e-3,
    res_tol: float = 1e-6,
    min_iter: int = 2,
    cancel: CancelLike = None,
) -> tuple[np.ndarray, np.ndarray, SolverDiagnostics, np.ndarray]:
    """The ``nev`` (≤ k − 1) smallest pairs of ``(A, B)`` from the k strokes' potentials.

    Parameters
    ----------
    pencil : Pencil
        ``A = L_D + L_ML``, ``B = D/n + L_CL`` (with constraints).
    M : callable
        SPD preconditioner approximating ``A⁻¹`` on blocks (the AMG V-cycle).
    sets : list of ndarray
        Pixel indices of each label's strokes (k sets).
    nev : int
        Pairs wanted, at most k − 1 (the k potentials span k − 1 directions of the tiny
        eigenvalues and one more).
    Y0 : ndarray (n, k), optional
        Initial potentials (a warm start: the previous edit's, matched by label).
    maxiter, eig_tol, res_tol, min_iter, cancel
        As :func:`segapp.lobpcg.lobpcg`: CG steps cap; stop when the wanted Ritz values moved
        by at most ``eig_tol`` (relative) in two consecutive steps, or when every relative
        residual is below ``res_tol``; ``cancel`` is checked every step.

    Returns
    -------
    eigenvalues : ndarray (nev,)
    X : ndarray (n, nev)
        B-orthonormal eigenvectors on ``dᵀx = 0``.
    diagnostics : SolverDiagnostics
        ``iterations`` counts CG steps (one V-cycle on k columns each).
    Y : ndarray (n, k)
        The potentials, for the next warm start.
    """
    k = len(sets)
    if not 1 <= nev <= k - 1:
        raise ValueError(f"nev must lie in 1..k−1 = {k - 1}, got {nev}")
    diag = SolverDiagnostics()

    stop_if_cancelled = CancelToken.of(cancel).check

    b = stroke_sources(pencil, sets)
    if Y0 is not None:
        Y = np.array(Y0, dtype=np.float64)
        R = b - pencil.A(Y)
    else:
        Y = np.zeros_like(b)
        R = b.copy()
    Z = M(R)
    P = Z.copy()
    rz = np.einsum("ij,ij->j", R, Z)
    lam = None
    settled = 0
    theta = X = AX = BX = None
    for it in range(1, maxiter + 1):
        stop_if_cancelled()
        AP = pencil.A(P)
        pAp = np.einsum("ij,ij->j", P, AP)
        active = pAp > 0
        alpha = np.where(active, rz / np.where(active, pAp, 1.0), 0.0)
        Y += P * alpha
        R -= AP * alpha
        if not (np.all(np.isfinite(Y)) and np.all(np.isfinite(R))):
            diag.reason = "non-finite values"
            raise SolverError("eigensolver produced non-finite values (the graph or the "
                              "constraint weights are degenerate)", diag)
        theta, X, AX, BX = _ritz(pencil, Y, b - R, nev)
        new = theta[:nev]
        diag.iterations = it
        diag.history.append(new.copy())
        if lam is not None:
            floor = 1e-9 * abs(theta[min(nev, len(theta) - 1)])
            change = float(np.max(np.abs(new - lam) / np.maximum(np.abs(new), max(
                floor, np.finfo(float).tiny))))
            diag.eigenvalue_change = change
            settled = settled + 1 if change <= eig_tol else 0
        lam = new
        res = _relative_residuals(lam, X[:, :nev], AX[:, :nev], BX[:, :nev])
        diag.residuals = res
        if res.max() <= res_tol:
            diag.converged, diag.reason = True, "residual tolerance"
            break
        if settled >= 2 and it >= min_iter:
            diag.converged, diag.reason = True, "eigenvalues settled"
            break
        stop_if_cancelled()
        Z = M(R)
        rz_new = np.einsum("ij,ij->j", R, Z)
        beta = np.where(rz > 0, rz_new / np.where(rz > 0, rz, 1.0), 0.0)
        rz = rz_new
        P = Z + P * beta
    else:
        diag.reason = "iteration cap"
    X = X[:, :nev]
    BXn = BX[:, :nev]
    X = X / np.sqrt(np.maximum(np.einsum("ij,ij->j", X, BXn), np.finfo(float).tiny))
    diag.eigenvalues = lam.copy()
    return lam, X, diag, Y


def _relative_residuals(lam: np.ndarray, X: np.ndarray, AX: np.ndarray,
                        BX: np.ndarray) -> np.ndarray:
    """``‖Ax − λBx‖ / (‖Ax‖ + |λ|‖Bx‖)`` per pair (the pencil's own residuals)."""
    R = AX - BX * lam
    scale = _colnorm(AX) + np.abs(lam) * _colnorm(BX)
    return _colnorm(R) / np.where(scale > 0, scale, 1.0)
