"""The solve stage: the smallest eigenpairs of a pencil, behind one entry, :func:`solve`.

FAST-GE (``L_G x = λ L_H x``, Cucuringu et al. 2016 §4.3–4.5), the normalized cut
(``L x = μ D x``) and CCSKL's smoothest normalized-Laplacian eigenvectors all ask for the
smallest pairs of a :class:`~segapp.solve.pencil.Pencil` on ``dᵀx = 0``. A method describes
its problem once (:class:`EigenProblem`: the pencil, how many pairs, the strokes, the
settings) and calls :func:`solve` with a method:

* ``"harmonic"`` — FAST-GE's pairs as the Ritz pairs of the pencil on the strokes' harmonic
  potentials (:mod:`segapp.solve.harmonic`), solved directly from a factor
  (:mod:`segapp.solve.direct`, CHOLMOD) or by block CG with an AMG V-cycle; the
  :class:`~segapp.solve.harmonic.HarmonicSolver` that keeps the factor and the hierarchy
  from edit to edit is passed in;
* ``"lobpcg"`` — our block LOBPCG (:mod:`segapp.solve.lobpcg`) from the problem's start block,
  preconditioned by a smoothed-aggregation V-cycle (:mod:`segapp.solve.amg`; built by
  :func:`~segapp.solve.amg.amg_preconditioner`, the one place a hierarchy is built).

:func:`choose_method` says which applies (the option ``eigensolver``; ``"segapp"`` is the old
name of ``"lobpcg"``). Both return :class:`Eigenpairs` with
:class:`~segapp.solve.diagnostics.SolverDiagnostics`, and apply the problem's
non-convergence policy. Cancellation is one :class:`~segapp.cancel.CancelToken` handed down
as a parameter to every loop (LOBPCG, CG, V-cycle, factorization); the methods make it from
whatever their caller passed.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import partial
from typing import Callable, Literal, NamedTuple

import numpy as np

from ..cancel import NEVER, CancelToken
from .amg import AMGPreconditioner
from .diagnostics import SolverDiagnostics, handle_nonconvergence
from .harmonic import HarmonicSolver
from .lobpcg import lobpcg
from .pencil import Pencil

Method = Literal["harmonic", "lobpcg"]
#: The selectable eigensolvers (option ``eigensolver``) and the old names still accepted.
METHODS: tuple[str, ...] = ("harmonic", "lobpcg")
ALIASES: dict[str, str] = {"segapp": "lobpcg"}
#: What a non-converged harmonic solve suggests (its knobs, whatever the method).
HARMONIC_ADVICE = "try a larger maxiter or cg_tol"


@dataclass(frozen=True)
class SolveSettings:
    """How hard to solve and what a solve that hits its cap means.

    ``maxiter`` caps LOBPCG's iterations or the potentials' CG steps; LOBPCG stops when the
    Ritz values settled to ``eig_tol`` (relative) twice or every relative residual is below
    ``res_tol``; the potentials' CG stops at relative residual ``cg_tol``. ``linear_solver``
    and ``reuse`` are the harmonic path's (:meth:`HarmonicSolver.potential_ritz_pairs`).
    ``on_nonconvergence`` raises :class:`~segapp.errors.SolverError` or warns; ``advice`` is
    what LOBPCG's message suggests (the calling method's options).
    """

    maxiter: int = 300
    eig_tol: float = 1e-3
    res_tol: float = 1e-6
    cg_tol: float = 1e-4
    linear_solver: str = "auto"
    reuse: bool = True
    on_nonconvergence: Literal["raise", "warn"] = "raise"
    advice: str = "try a larger maxiter"


@dataclass(frozen=True, eq=False)
class EigenProblem:
    """The ``nev`` smallest pairs of ``pencil`` on ``dᵀx = 0``.

    Attributes
    ----------
    pencil : Pencil
    nev : int
        Pairs wanted.
    sets, label_ids
        Each label's stroke pixels and its id (the harmonic path's sources; empty without
        strokes).
    start : ndarray (n, b), optional
        LOBPCG's initial block, ``b ≥ nev`` (extra columns are guard vectors).
    settings : SolveSettings
    prior : ndarray (n, k), optional
        The labels' appearance posteriors (:mod:`segapp.appearance`), columns in the order of
        ``sets``: the harmonic path's anchors (:meth:`HarmonicSolver.potential_ritz_pairs`).
    """

    pencil: Pencil
    nev: int
    sets: tuple[np.ndarray, ...] = ()
    label_ids: tuple[int, ...] = ()
    start: np.ndarray | None = None
    settings: SolveSettings = SolveSettings()
    prior: np.ndarray | None = None

    def starting_from(self, start: np.ndarray) -> "EigenProblem":
        """The same problem with LOBPCG's start block."""
        return dataclasses.replace(self, start=start)


class Eigenpairs(NamedTuple):
    """Ascending eigenvalues (nev,), B-orthonormal eigenvectors (n, nev), the solve's report."""

    values: np.ndarray
    vectors: np.ndarray
    diagnostics: SolverDiagnostics


def canonical_method(name: str) -> str:
    """The eigensolver a (possibly old) option value names: ``"segapp"`` is ``"lobpcg"``."""
    return ALIASES.get(name, name)


def choose_method(requested: str, problem: EigenProblem, *, soft: bool,
                  connected: Callable[[], bool]) -> Method:
    """``"harmonic"`` where the harmonic potentials give the pencil's pairs, else ``"lobpcg"``.

    The potentials give the k − 1 smallest pairs in the stiff must-link limit
    (:mod:`segapp.solve.harmonic`): not a k-th vector (they span k − 1 directions besides the
    constant), not soft strokes (their finite weights are the point), not a graph with a
    component no stroke reaches (its potentials are undefined; ``connected`` is asked last,
    as it may cost a components search).
    """
    if (canonical_method(requested) != "harmonic" or soft
            or problem.nev >= len(problem.sets)):
        return "lobpcg"
    return "harmonic" if connected() else "lobpcg"


def random_start(M: AMGPreconditioner, n: int, m: int, rng: np.random.Generator,
                 cancel: CancelToken = NEVER) -> np.ndarray:
    """``M G`` for a Gaussian n × m block G: a start with the preconditioner's smoothness."""
    return M(rng.standard_normal((n, m)), cancel)


def solve(problem: EigenProblem, method: str = "lobpcg", cancel: CancelToken = NEVER, *,
          preconditioner: AMGPreconditioner | None = None,
          harmonic: HarmonicSolver | None = None,
          timings: dict[str, float] | None = None) -> Eigenpairs:
    """The ``problem.nev`` smallest pairs of ``problem.pencil`` on ``dᵀx = 0``, checked.

    Parameters
    ----------
    problem : EigenProblem
    method : {"harmonic", "lobpcg"}
        (``"segapp"``: the old name of ``"lobpcg"``.)
    cancel : CancelToken
        Polled by every loop of the solve; :class:`~segapp.errors.Cancelled` when it asks.
    preconditioner : AMGPreconditioner
        LOBPCG's V-cycle (with ``problem.start``).
    harmonic : HarmonicSolver
        The harmonic path's per-graph solver (its factor and hierarchy carry over edits).
    timings : dict, optional
        The harmonic path's stage times (``dirichlet``, ``amg_setup``, ``potentials``,
        ``ritz``).

    Returns
    -------
    Eigenpairs
        ``(values, vectors, diagnostics)``; LOBPCG's diagnostics count the preconditioner's
        applications (cumulative for it).
    """
    method = canonical_method(method)
    s = problem.settings
    if method == "harmonic":
        if harmonic is None:
            raise ValueError("the harmonic solve needs its HarmonicSolver")
        lam, X, diag = harmonic.potential_ritz_pairs(
            problem.pencil, list(problem.sets), list(problem.label_ids), nev=problem.nev,
            tol=s.cg_tol, maxiter=s.maxiter, reuse=s.reuse, linear_solver=s.linear_solver,
            cancel=cancel, timings=timings, prior=problem.prior)
        if not diag.converged:
            handle_nonconvergence(diag, s.on_nonconvergence, HARMONIC_ADVICE)
        return Eigenpairs(lam, X, diag)
    if method != "lobpcg":
        raise ValueError(f"unknown eigensolver {method!r}; one of {', '.join(METHODS)}")
    if preconditioner is None or problem.start is None:
        raise ValueError("LOBPCG needs a preconditioner and the problem's start block")
    nev, pencil = problem.nev, problem.pencil
    lam, X, diag = lobpcg(pencil.A, pencil.B, problem.start, nev=nev,
                          M=partial(preconditioner, cancel=cancel), project=pencil.project,
                          maxiter=s.maxiter, eig_tol=s.eig_tol, res_tol=s.res_tol,
                          cancel=cancel)
    diag.preconditioner_applications = preconditioner.applications
    if not diag.converged:
        handle_nonconvergence(diag, s.on_nonconvergence, s.advice)
    return Eigenpairs(lam[:nev], X[:, :nev], diag)


__all__ = ["ALIASES", "METHODS", "EigenProblem", "Eigenpairs", "SolveSettings",
           "SolverDiagnostics", "canonical_method", "choose_method", "random_start", "solve"]
