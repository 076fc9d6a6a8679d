"""segapp.solve.lobpcg against dense ``scipy.linalg.eigh`` on small generalized pencils: the pairs,
B-orthonormality, the constraint projector, guard vectors, both stopping rules, the iteration
cap, cancellation and the refusal of non-finite operators."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg as sla
from hypothesis import given, settings
from hypothesis import strategies as st

from segapp.errors import Cancelled, SolverError
from segapp.cancel import CancelToken
from segapp.solve.lobpcg import lobpcg

pytestmark = pytest.mark.usefixtures("one_blas_thread")


def pencil(seed: int, n: int = 60, spread: float = 1e3):
    """Dense SPD A with eigenvalues over ``spread`` and a diagonal SPD B: ``(A, B)``."""
    rng = np.random.default_rng(seed)
    Q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    A = (Q * np.geomspace(1.0, spread, n)) @ Q.T
    B = np.diag(rng.uniform(0.5, 2.0, n))
    return (A + A.T) / 2, B


def solve(A, B, X0, **kw):
    return lobpcg(lambda X: A @ X, lambda X: B @ X, X0, **kw)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), nev=st.integers(1, 4), guard=st.integers(0, 2),
       precondition=st.booleans())
def test_smallest_pairs_match_dense_eigh(seed, nev, guard, precondition):
    """Preconditioned by ``A⁻¹`` (spectrum over 1e3) to 1e-10; without a preconditioner on a
    spectrum over 20 (unpreconditioned, the rate is set by the condition number) to 1e-8."""
    A, B = pencil(seed, spread=1e3 if precondition else 20.0)
    n = A.shape[0]
    ref = sla.eigh(A, B, eigvals_only=True)[:nev]
    X0 = np.random.default_rng(seed + 1).standard_normal((n, nev + guard))
    M = (lambda R: np.linalg.solve(A, R)) if precondition else None
    res_tol = 1e-10 if precondition else 1e-8
    lam, X, diag = solve(A, B, X0, nev=nev, M=M, maxiter=500, res_tol=res_tol, eig_tol=0.0)
    assert diag.converged and diag.reason == "residual tolerance"
    np.testing.assert_allclose(lam, ref, rtol=1e-9)
    assert lam.shape == (nev,) and X.shape == (n, nev)
    np.testing.assert_allclose(X.T @ B @ X, np.eye(nev), atol=1e-8)
    R = A @ X - B @ X * lam
    assert np.linalg.norm(R, axis=0).max() <= 10 * res_tol * np.linalg.norm(A, 2)
    assert diag.residuals.max() <= res_tol


def test_projector_excludes_an_invariant_direction():
    """``project`` removes an eigenvector ``y`` of the pencil (as FAST-GE removes the constant,
    the null vector of A): the pairs found are the next ones, B-orthogonal to ``y``.

    (The projector is applied to the start and to each preconditioned residual only, so ``y``
    must span an invariant subspace, as the constant does for a Laplacian; measured with a
    random ``y``: rounding drift along it grows over a few hundred iterations.)
    """
    A, B = pencil(3)
    n = A.shape[0]
    full, V = sla.eigh(A, B)
    y = V[:, 0]
    By = B @ y
    project = lambda X: X - np.outer(y, By @ X) / (By @ y)   # noqa: E731  B-orthogonal projector
    X0 = np.random.default_rng(5).standard_normal((n, 3))
    lam, X, diag = solve(A, B, X0, project=project, M=lambda R: np.linalg.solve(A, R),
                         maxiter=500, res_tol=1e-10, eig_tol=0.0)
    assert diag.converged
    np.testing.assert_allclose(lam, full[1:4], rtol=1e-9)
    assert np.abs(By @ X).max() <= 1e-9 * np.linalg.norm(By) * np.abs(X).max()


@pytest.mark.parametrize("eig_tol", [1e-2, 1e-4, 1e-8])
def test_eigenvalue_settling_stops_as_asked(eig_tol):
    A, B = pencil(6, spread=1e4)
    X0 = np.random.default_rng(7).standard_normal((A.shape[0], 2))
    lam, _, diag = solve(A, B, X0, M=lambda R: np.linalg.solve(A, R), maxiter=500, res_tol=0.0,
                         eig_tol=eig_tol)
    assert diag.converged and diag.reason == "eigenvalues settled"
    assert diag.eigenvalue_change <= eig_tol and diag.iterations >= 2
    ref = sla.eigh(A, B, eigvals_only=True)[:2]
    # settled Ritz values are upper bounds (Courant–Fischer), close to the truth
    assert np.all(lam >= ref * (1 - 1e-12)) and np.all(lam <= ref * (1 + 100 * eig_tol))


def test_looser_tolerance_takes_fewer_iterations():
    A, B = pencil(8, spread=1e4)
    X0 = np.random.default_rng(9).standard_normal((A.shape[0], 2))
    its = [solve(A, B, X0, M=lambda R: np.linalg.solve(A, R), maxiter=500, res_tol=0.0,
                 eig_tol=t)[2].iterations for t in (1e-1, 1e-4, 1e-10)]
    assert its[0] <= its[1] <= its[2] and its[0] < its[2]


def test_iteration_cap_is_reported_not_raised():
    A, B = pencil(10, spread=1e5)
    X0 = np.random.default_rng(11).standard_normal((A.shape[0], 3))
    lam, X, diag = solve(A, B, X0, maxiter=2, res_tol=0.0, eig_tol=0.0)
    assert not diag.converged and diag.reason == "iteration cap" and diag.iterations == 2
    assert X.shape == (A.shape[0], 3) and np.all(np.isfinite(lam))


def test_cancellation_at_any_check():
    A, B = pencil(12)
    X0 = np.random.default_rng(13).standard_normal((A.shape[0], 2))
    polls = []
    solve(A, B, X0, maxiter=50, res_tol=0.0, eig_tol=0.0, cancel=CancelToken(lambda: polls.append(1) and False))
    assert len(polls) >= 3 * 50 - 2     # several checks per iteration
    for stop_at in (1, 2, 3, len(polls) // 2, len(polls)):
        count = [0]

        def cancel():
            count[0] += 1
            return count[0] >= stop_at
        with pytest.raises(Cancelled):
            solve(A, B, X0, maxiter=50, res_tol=0.0, eig_tol=0.0, cancel=CancelToken(cancel))
        assert count[0] == stop_at          # stopped at the first True, nothing after


def test_a_rank_deficient_start_is_completed():
    A, B = pencil(14)
    x = np.random.default_rng(15).standard_normal((A.shape[0], 1))
    X0 = np.hstack([x, 2 * x, -x])          # rank 1, three wanted
    lam, _, diag = solve(A, B, X0, maxiter=500, res_tol=1e-10, eig_tol=0.0)
    np.testing.assert_allclose(lam, sla.eigh(A, B, eigvals_only=True)[:3], rtol=1e-7)


@pytest.mark.parametrize("where", ["A", "B", "M"])
def test_non_finite_values_are_a_solver_error(where):
    A, B = pencil(16)
    X0 = np.random.default_rng(17).standard_normal((A.shape[0], 2))

    def poisoned(M):
        return lambda X: np.full_like(X, np.nan)
    ops = {"A": lambda X: A @ X, "B": lambda X: B @ X, "M": lambda R: R}
    ops[where] = poisoned(ops[where])
    with pytest.raises(SolverError, match="non-finite|degenerate"):
        lobpcg(ops["A"], ops["B"], X0, M=ops["M"], maxiter=20)
