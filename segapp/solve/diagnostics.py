"""What a solve did (:class:`SolverDiagnostics`) and what a solve that hit its cap means.

Every eigensolve of :meth:`segapp.solve.GraphSolver.eigenpairs` returns one: block LOBPCG
(:mod:`segapp.solve.lobpcg`) fills it per iteration, FAST-GE's harmonic solve
(:mod:`segapp.solve.harmonic`) from its potentials' CG or direct solve.
:func:`handle_nonconvergence` applies the caller's policy (option ``on_nonconvergence``).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from ..errors import SolverError


@dataclass
class SolverDiagnostics:
    """What the eigensolver did: enough to tell a good solve from a bad one."""

    iterations: int = 0
    converged: bool = False
    reason: str = ""
    eigenvalues: np.ndarray = field(default_factory=lambda: np.zeros(0))
    residuals: np.ndarray = field(default_factory=lambda: np.zeros(0))
    """Normwise relative residuals ``‖Ax − λBx‖ / ((‖A‖ + |λ|‖B‖)‖x‖)`` of the returned vectors,
    with ‖A‖, ‖B‖ estimated from the largest ``‖AV‖/‖V‖`` seen during the iteration. (FAST-GE's
    harmonic solve, :mod:`segapp.solve.harmonic`: the relative residuals of its potentials' CG.)"""
    eigenvalue_change: float = np.inf
    """Largest relative change of a Ritz value in the last iteration (NaN: not tracked, as in
    FAST-GE's harmonic solve)."""
    history: list[np.ndarray] = field(default_factory=list)
    preconditioner_applications: int = 0
    warm_start: bool = False
    linear_solver: str = ""
    """FAST-GE's harmonic solve: which linear solver gave the potentials, e.g. ``direct,
    CHOLMOD 3.0.14 (system: libcholmod.so.3)`` or ``iterative, AMG-preconditioned CG``; empty
    for LOBPCG (no linear solve)."""
    direct_unavailable: str = ""
    """Why the potentials were not solved directly, when they were not (the real reason: no
    usable library and why, the option, the image's size, a factor still being made)."""
    notes: list[str] = field(default_factory=list)
    """Anything else the person should know about this answer (e.g. the background work
    after the previous edit failed, and how)."""

    def solver_summary(self) -> str:
        """One line for a status bar: the linear solver, and why not the direct one."""
        if not self.linear_solver:
            return f"{self.iterations} iterations"
        kind, _, detail = self.linear_solver.partition(", ")
        if kind == "direct":
            return f"direct solve ({detail.split(' (')[0]})"
        why = f"; not direct: {self.direct_unavailable}" if self.direct_unavailable else ""
        return f"iterative solve, {self.iterations} CG steps{why}"

    def __repr__(self) -> str:
        state = "converged" if self.converged else "NOT converged"
        res = np.array2string(np.asarray(self.residuals), precision=1, separator=", ")
        change = (f"; last eigenvalue change {self.eigenvalue_change:.1e}"
                  if not np.isnan(self.eigenvalue_change) else "")
        linear = f"; linear solver: {self.linear_solver}" if self.linear_solver else ""
        why = (f" — not direct: {self.direct_unavailable}" if self.linear_solver
               and self.direct_unavailable else "")
        return (f"SolverDiagnostics({state} after {self.iterations} iterations ({self.reason}); "
                f"relative residuals {res}{change}{'; warm start' if self.warm_start else ''}"
                f"{linear}{why}{''.join('; ' + n for n in self.notes)})")


def handle_nonconvergence(diag: SolverDiagnostics, policy: Literal["raise", "warn"],
                          advice: str) -> None:
    """A solve that hit its iteration cap: raise :class:`~segapp.errors.SolverError` or warn."""
    msg = (f"the eigensolver did not converge in {diag.iterations} iterations "
           f"(largest relative residual {np.max(diag.residuals):.1e}); {advice}")
    if policy == "raise":
        raise SolverError(msg, diag)
    warnings.warn(msg, RuntimeWarning, stacklevel=4)


def status_note(diag: object) -> str:
    """``", direct solve (CHOLMOD 3.0.14)"`` or ``", iterative solve, 13 CG steps; not direct:
    …"`` for a status bar (issue 28: never silently slow); else the iteration count."""
    if isinstance(diag, SolverDiagnostics):
        return f", {diag.solver_summary()}"
    iters = getattr(diag, "iterations", None)
    return f", {iters} iterations" if iters is not None else ""
