"""What a solve reports (``segapp/solve/diagnostics.py``): the status-bar line per linear
solver, the full report, and the non-convergence policy (raise or warn, with the advice)."""

from __future__ import annotations

import warnings
from types import SimpleNamespace

import numpy as np
import pytest

from segapp.errors import SolverError
from segapp.solve.diagnostics import SolverDiagnostics, handle_nonconvergence, status_note

DIRECT = "direct, CHOLMOD 3.0.14 (system: libcholmod.so.3)"
ITERATIVE = "iterative, AMG-preconditioned CG"


@pytest.mark.parametrize("linear, why, iterations, summary", [
    (DIRECT, "", 0, "direct solve (CHOLMOD 3.0.14)"),
    (ITERATIVE, "", 13, "iterative solve, 13 CG steps"),
    (ITERATIVE, "the image's factor is still being made in the background", 12,
     "iterative solve, 12 CG steps; not direct: the image's factor is still being made in "
     "the background"),
    ("", "", 27, "27 iterations"),                                 # LOBPCG: no linear solve
])
def test_the_status_line_names_the_linear_solver_and_why(linear, why, iterations, summary):
    d = SolverDiagnostics(iterations=iterations, converged=True, linear_solver=linear,
                          direct_unavailable=why)
    assert d.solver_summary() == summary
    assert status_note(d) == ", " + summary


def test_other_reports_give_their_iterations_or_nothing():
    assert status_note(SimpleNamespace(iterations=4)) == ", 4 iterations"
    assert status_note(object()) == ""


def test_the_report_says_everything_a_person_needs():
    d = SolverDiagnostics(iterations=7, converged=False, reason="iteration cap",
                          residuals=np.array([1.5e-3, 2e-5]), eigenvalue_change=3e-4,
                          warm_start=True, linear_solver=ITERATIVE,
                          direct_unavailable="linear_solver='iterative'",
                          notes=["the background work after the previous edit failed"])
    text = repr(d)
    for part in ("NOT converged after 7 iterations (iteration cap)", "1.5e-03", "2.0e-05",
                 "last eigenvalue change 3.0e-04", "warm start", "linear solver: " + ITERATIVE,
                 "not direct: linear_solver='iterative'",
                 "; the background work after the previous edit failed"):
        assert part in text, (part, text)
    quiet = repr(SolverDiagnostics(iterations=2, converged=True, reason="tolerance",
                                   eigenvalue_change=np.nan))
    assert quiet.startswith("SolverDiagnostics(converged after 2 iterations (tolerance)")
    assert "eigenvalue change" not in quiet and "linear solver" not in quiet
    assert "warm start" not in quiet


def test_nonconvergence_raises_with_the_report_and_the_advice():
    d = SolverDiagnostics(iterations=300, residuals=np.array([1e-6, 4.2e-2]))
    with pytest.raises(SolverError, match=r"did not converge in 300 iterations \(largest "
                       r"relative residual 4\.2e-02\); raise maxiter") as info:
        handle_nonconvergence(d, "raise", "raise maxiter")
    assert info.value.diagnostics is d


def test_nonconvergence_warns_when_asked_to():
    d = SolverDiagnostics(iterations=5, residuals=np.array([0.5]))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        handle_nonconvergence(d, "warn", "loosen eig_tol")
    assert len(caught) == 1 and caught[0].category is RuntimeWarning
    assert "did not converge in 5 iterations" in str(caught[0].message)
    assert str(caught[0].message).endswith("loosen eig_tol")
