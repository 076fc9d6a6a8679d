"""Block LOBPCG for the smallest pairs of ``A x = λ B x`` with a B-orthogonal constraint.

Knyazev's locally optimal block preconditioned conjugate gradient method (SIAM J. Sci. Comput.
23(2), 2001), written for this problem family instead of calling
:func:`scipy.sparse.linalg.lobpcg` (which ``benchmarks/solvers.py`` still runs for comparison)
because

* scipy's loop spent about half of each iteration at 250K pixels on its own dense block work
  (repeated B-orthonormalisations, constraint projections through a generic Y); here the
  constraint ``Y = 1`` is a d-weighted mean removal (``Pencil.project``), and every product
  ``A S``, ``B S`` is computed once and carried through the Rayleigh–Ritz updates;
* its stopping test is an absolute residual norm, whose meaning changes with the image size and
  the constraint weights (FAST-GE's stiff must-link cliques keep the relative residual near 1
  long after the eigenvalues and the labels have settled). This one also stops when the Ritz
  values have settled to a relative change ``eig_tol`` for two consecutive iterations, which
  measured as label-stable, and reports both measures;
* it polls a cancellation token (:class:`segapp.cancel.CancelToken`, a parameter) and checks
  the finiteness of every iterate.

Each iteration: residuals ``R = AX − BXΛ``, preconditioned ``W = M R`` (projected to ``dᵀw = 0``),
then Rayleigh–Ritz on ``S = [X, W, P]``. The basis is orthonormalised in the small space by
SVQB (Stathopoulos & Wu 2002: scale, eigendecompose the B-Gram matrix, drop directions below
a relative threshold), which handles the near-dependence of late iterations without extra
passes over the n-length vectors.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from ..cancel import NEVER, CancelToken
from ..errors import SolverError
from .diagnostics import SolverDiagnostics

Operator = Callable[[np.ndarray], np.ndarray]

#: Relative eigenvalue threshold below which SVQB drops a direction of the B-Gram matrix.
_DROP = 1e-12


def column_norms(V: np.ndarray) -> np.ndarray:
    """The Euclidean norm of each column, without an n × m temporary (``np.linalg.norm``'s)."""
    return np.sqrt(np.einsum("ij,ij->j", V, V))


def svqb(G: np.ndarray, drop: float = _DROP) -> np.ndarray:
    """Coefficients T with ``Tᵀ G T = I`` for a PSD Gram matrix G, dropping dependent directions
    (relative eigenvalue below ``drop``)."""
    diag = np.sqrt(np.maximum(np.diag(G), 0))
    scale = np.where(diag > 0, 1.0 / np.where(diag > 0, diag, 1.0), 0.0)
    Gs = G * scale[:, None] * scale[None, :]
    w, V = np.linalg.eigh((Gs + Gs.T) / 2)
    keep = w > drop * max(w.max(), 0)
    if not keep.any():
        raise np.linalg.LinAlgError("basis collapsed")
    return (scale[:, None] * V[:, keep]) / np.sqrt(w[keep])


def _gram(Ss: list[np.ndarray], OSs: list[np.ndarray]) -> np.ndarray:
    """Symmetric Gram matrix ``[S_i]ᵀ[OS_j]`` from its upper blocks (the operator is symmetric)."""
    sizes = [S.shape[1] for S in Ss]
    off = np.concatenate([[0], np.cumsum(sizes)])
    G = np.empty((off[-1], off[-1]))
    for i, S in enumerate(Ss):
        for j in range(i, len(Ss)):
            blk = S.T @ OSs[j]
            G[off[i]:off[i + 1], off[j]:off[j + 1]] = blk
            G[off[j]:off[j + 1], off[i]:off[i + 1]] = blk.T
    return G


def _advance(blocks: list[np.ndarray], C: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
    """New ``(X, P)`` of one family from ``blocks = [X, W(, P)]`` and the Ritz coefficients C.

    ``P = Σ_{b≥1} blocks[b] C_b`` (the non-X part), ``X = blocks[0] C_0 + P``; the n-length
    blocks are never stacked into one copy.
    """
    P = blocks[1] @ C[m:2 * m]
    for b, V in enumerate(blocks[2:], start=2):
        P += V @ C[b * m:(b + 1) * m]
    X = blocks[0] @ C[:m]
    X += P
    return X, P


def lobpcg(
    A: Operator,
    B: Operator,
    X0: np.ndarray,
    *,
    nev: int | None = None,
    M: Operator | None = None,
    project: Operator | None = None,
    maxiter: int = 100,
    res_tol: float = 1e-6,
    eig_tol: float = 1e-4,
    min_iter: int = 2,
    cancel: CancelToken = NEVER,
) -> tuple[np.ndarray, np.ndarray, SolverDiagnostics]:
    """Smallest ``m = X0.shape[1]`` eigenpairs of the symmetric pencil ``(A, B)``, B SPD.

    Parameters
    ----------
    A, B : callable
        Block operators ``X (n×m) ↦ AX``; A symmetric, B symmetric positive definite.
    X0 : ndarray (n, b)
        Initial block (random, or a previous solution for a warm start).
    nev : int, optional
        Number of pairs wanted, ``nev ≤ b`` (default b). Extra block columns are guard
        vectors: they speed up the convergence of the wanted ones and are not tested.
    M : callable, optional
        Preconditioner approximating ``A⁻¹`` (SPD).
    project : callable, optional
        B-orthogonal projector onto the admissible subspace (the constraint ``Y``), applied to
        ``X0`` and to every preconditioned residual.
    maxiter : int
        Iteration cap; reaching it leaves ``diagnostics.converged`` False (the caller decides).
    res_tol : float
        Stop when every relative residual is below this and each residual is also below its
        Ritz value's own scale ``|θ|‖Bx‖`` (see ``resolves_own_eigenvalue``).
    eig_tol : float
        Or stop when, for two consecutive iterations, no Ritz value moved by more than this
        relative amount (and at least ``min_iter`` iterations were made).
    cancel : CancelToken, optional
        Checked several times per iteration; :class:`~segapp.errors.Cancelled` is raised
        once it asks to stop.
    Returns
    -------
    eigenvalues : ndarray (nev,)
        Ascending.
    X : ndarray (n, nev)
        B-orthonormal eigenvectors.
    diagnostics : SolverDiagnostics
    """
    proj = project if project is not None else (lambda V: V)
    prec = M if M is not None else (lambda V: V)
    m = X0.shape[1]
    nev = m if nev is None else nev
    diag = SolverDiagnostics()

    def check(*arrays: np.ndarray) -> None:
        for a in arrays:
            if not np.all(np.isfinite(a)):
                diag.reason = "non-finite values"
                raise SolverError("eigensolver produced non-finite values "
                                  "(the graph or the constraint weights are degenerate)", diag)

    # Norm estimates of A and B (largest ‖AV‖/‖V‖ seen) for a normwise backward error: the
    # naive ‖Ax − λBx‖ / (‖Ax‖ + |λ|‖Bx‖) is ~1 for an exact null vector (λ = 0, e.g. a
    # disconnected graph), since numerator and denominator are both rounding noise.
    norm_est = {"A": 0.0, "B": 0.0}

    def observe(V: np.ndarray, AV: np.ndarray, BV: np.ndarray) -> None:
        nv = column_norms(V)
        ok = nv > 0
        if ok.any():
            norm_est["A"] = max(norm_est["A"], float(np.max(column_norms(AV)[ok] / nv[ok])))
            norm_est["B"] = max(norm_est["B"], float(np.max(column_norms(BV)[ok] / nv[ok])))

    def residual(lam, AX, BX) -> np.ndarray:
        R = BX * lam
        return np.subtract(AX, R, out=R)   # AX − BXΛ in one block

    def rel_residuals(lam, X, R) -> np.ndarray:
        scale = (norm_est["A"] + np.abs(lam) * norm_est["B"]) * column_norms(X)
        return column_norms(R) / np.where(scale > 0, scale, 1.0)

    def resolves_own_eigenvalue(lam, X, R, BX) -> bool:
        # ‖r‖ ≤ |θ|‖Bx‖: the Ritz value is at least correct to its own size. A small backward
        # error alone is not enough: the must-link cliques make ‖A‖ ~1e4 while the wanted
        # eigenvalues are ~1e-7, so a block that misses the smallest pair (a warm start after
        # an edit) can pass res_tol with a Ritz value 60× too large (fuzz seeds 217, 290). The
        # floor √ε‖A‖‖x‖ lets an exact null vector (disconnected graph) pass.
        floor = np.sqrt(np.finfo(float).eps) * norm_est["A"] * column_norms(X[:, :nev])
        return bool(np.all(column_norms(R[:, :nev])
                           <= np.maximum(np.abs(lam[:nev]) * column_norms(BX[:, :nev]), floor)))

    # Initial Rayleigh–Ritz on span(X0). A block that is numerically rank-deficient (e.g. a
    # preconditioned random block on a disconnected graph, where the null-space directions
    # swamp the others) is completed with random directions, once.
    X = proj(np.asarray(X0, dtype=np.float64))
    for attempt in range(2):
        AX, BX = A(X), B(X)
        check(AX, BX)
        observe(X, AX, BX)
        try:
            T = svqb(X.T @ BX)
        except np.linalg.LinAlgError as exc:
            raise SolverError("initial block is degenerate", diag) from exc
        if T.shape[1] >= nev or attempt == 1:
            break
        extra = np.random.default_rng(0).standard_normal((X.shape[0], nev - T.shape[1]))
        X = np.hstack([X @ T, proj(extra)])
    lam, C = np.linalg.eigh(T.T @ (X.T @ AX) @ T)
    m = min(m, C.shape[1])  # a rank-deficient initial block shrinks to its rank
    if m < nev:
        raise SolverError(f"initial block spans only {m} of {nev} wanted directions", diag)
    C = T @ C[:, :m]
    lam = lam[:m]
    X, AX, BX = X @ C, AX @ C, BX @ C
    P = AP = BP = None
    settled = 0
    stop_if_cancelled = cancel.check

    for it in range(1, maxiter + 1):
        stop_if_cancelled()
        R = residual(lam, AX, BX)
        diag.residuals = rel_residuals(lam, X, R)[:nev]
        if diag.residuals.max() <= res_tol and resolves_own_eigenvalue(lam, X, R, BX):
            diag.converged, diag.reason = True, "residual tolerance"
            break
        W = proj(prec(R))
        del R
        stop_if_cancelled()  # several checks per iteration: one costs ~0.3 s at 1M px
        AW, BW = A(W), B(W)
        check(W, AW, BW)
        observe(W, AW, BW)
        Ss, ASs, BSs = [X, W], [AX, AW], [BX, BW]
        if P is not None:
            Ss.append(P), ASs.append(AP), BSs.append(BP)
        stop_if_cancelled()
        GA, GB = _gram(Ss, ASs), _gram(Ss, BSs)
        try:
            T = svqb(GB)
            theta, C = np.linalg.eigh(T.T @ ((GA + GA.T) / 2) @ T)
        except np.linalg.LinAlgError as exc:
            raise SolverError("Rayleigh–Ritz step failed (basis collapsed)", diag) from exc
        if C.shape[1] < m:  # not enough independent directions left: restart without P
            P = AP = BP = None
            continue
        C = T @ C[:, :m]
        new_lam = theta[:m]
        # Relative change, floored by the first unwanted Ritz value (the spectral gap's scale)
        # so that an eigenvalue that is exactly 0 (a disconnected graph) can settle too.
        floor = 1e-9 * abs(theta[min(nev, len(theta) - 1)])
        change = np.max(np.abs(new_lam - lam)[:nev]
                        / np.maximum(np.abs(new_lam[:nev]), max(floor, np.finfo(float).tiny)))
        diag.eigenvalue_change = float(change)
        lam = new_lam
        diag.history.append(lam.copy())
        # P carries the non-X part of the Ritz vectors (the "conjugate direction"). One family
        # (X, AX or BX) at a time, each old block dropped once used: the peak is ~12 blocks
        # of n × m instead of ~18 (peak memory per pixel, issue 15).
        del X, W, AX, AW, BX, BW
        P = AP = BP = None
        X, P = _advance(Ss, C, m)
        Ss.clear()
        AX, AP = _advance(ASs, C, m)
        ASs.clear()
        BX, BP = _advance(BSs, C, m)
        BSs.clear()
        diag.iterations = it
        settled = settled + 1 if change <= eig_tol else 0
        if settled >= 2 and it >= min_iter:
            diag.converged, diag.reason = True, "eigenvalues settled"
            break
    else:
        diag.reason = "iteration cap"
    X, AX, BX, lam = X[:, :nev], AX[:, :nev], BX[:, :nev], lam[:nev]
    diag.residuals = rel_residuals(lam, X, residual(lam, AX, BX))
    diag.eigenvalues = lam.copy()
    check(X, lam)
    # Final B-normalisation (SVQB keeps it up to rounding).
    X = X / np.sqrt(np.maximum(np.einsum("ij,ij->j", X, BX), np.finfo(float).tiny))
    return lam, X, diag
