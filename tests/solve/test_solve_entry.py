"""segapp.solve's door, :class:`GraphSolver`, the one solve entry of the graph methods: its
LOBPCG pairs against dense ``eigh``, the choice of eigensolver (and its reason), the warm and
random starts, the bound on the harmonic solvers it keeps, non-convergence, cancellation, and
Session.prepare's hook (the normalized cut that calls the entry: ``tests/methods/test_ncut.py``)."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import scipy.linalg as sla

import segapp
from segapp.cancel import CancelToken
from segapp.solve import cholmod
from segapp.solve import (EigenProblem, GraphSolver, SolveSettings, choose_eigensolver,
                          random_start)
from segapp.solve.amg import amg_preconditioner
from segapp.errors import Cancelled, SolverError
from segapp.graphs.image import image_graph
from segapp.solve.pencil import Pencil
from scenes import two_regions  # noqa: E402  (tests/ is on sys.path)

pytestmark = pytest.mark.usefixtures("one_blas_thread")


@pytest.fixture(scope="module")
def ncut_pencil():
    g = image_graph(two_regions(), denoise=0)
    return g, Pencil(g.laplacian, g.degrees)


def dense_reference(g, m):
    """Smallest non-trivial pairs of ``L x = λ (D/n) x`` (the constant, λ = 0, excluded)."""
    lam = sla.eigh(g.laplacian.toarray(), np.diag(g.degrees / g.n), eigvals_only=True)
    return lam[1:m + 1]


def lobpcg_problem(pencil, X0, **settings):
    return EigenProblem(pencil, X0.shape[1], start=X0, settings=SolveSettings(**settings))


def solve(problem, cancel=None, *, graph):
    """One solve through a new door (LOBPCG from the problem's start block)."""
    door = GraphSolver(graph.laplacian, graph.degrees)
    return door.eigenpairs(problem, cancel) if cancel is not None else door.eigenpairs(problem)


@pytest.mark.parametrize("method", ["lobpcg", "segapp"])     # "segapp": the old name
def test_lobpcg_pairs_match_dense_eigh(ncut_pencil, method):
    g, pencil = ncut_pencil
    M = amg_preconditioner(g.laplacian, g.degrees)
    X0 = random_start(M, g.n, 3, np.random.default_rng(1))
    lam, X, diag = solve(lobpcg_problem(pencil, X0, eigensolver=method, maxiter=500,
                                        eig_tol=1e-12, res_tol=1e-9), graph=g)
    ref = dense_reference(g, 3)
    np.testing.assert_allclose(lam, ref, rtol=1e-5, atol=1e-9 * ref.max())
    assert diag.converged and diag.preconditioner_applications > 0
    np.testing.assert_allclose(X.T @ pencil.B(X), np.eye(3), atol=1e-6)   # B-orthonormal
    assert np.abs(g.degrees @ X).max() < 1e-8 * np.abs(X).max() * g.degrees.sum()


def test_scipys_lobpcg_in_the_benchmarks_gives_the_same_pairs(ncut_pencil):
    from benchmarks.solvers import scipy_lobpcg
    g, pencil = ncut_pencil
    M = amg_preconditioner(g.laplacian, g.degrees)
    X0 = random_start(M, g.n, 3, np.random.default_rng(1))
    lam, _, diag = scipy_lobpcg(pencil, X0, M, 3, maxiter=500, res_tol=1e-9)
    ref = dense_reference(g, 3)
    np.testing.assert_allclose(lam, ref, rtol=1e-5, atol=1e-9 * ref.max())
    assert diag.converged


def test_nonconvergence_raises_or_warns_with_the_advice(ncut_pencil):
    g, pencil = ncut_pencil
    M = amg_preconditioner(g.laplacian, g.degrees)
    X0 = random_start(M, g.n, 2, np.random.default_rng(0))
    tight = dict(maxiter=1, eig_tol=1e-15, res_tol=1e-15)
    with pytest.raises(SolverError, match="did not converge.*try fewer widgets") as info:
        solve(lobpcg_problem(pencil, X0, advice="try fewer widgets", **tight), graph=g)
    assert info.value.diagnostics.iterations == 1 and not info.value.diagnostics.converged
    with pytest.warns(RuntimeWarning, match="did not converge"):
        lam, X, diag = solve(lobpcg_problem(pencil, X0, on_nonconvergence="warn", **tight),
                             graph=g)
    assert X.shape == (g.n, 2) and not diag.converged


def test_lobpcg_needs_a_start_and_an_eigensolver_it_knows(ncut_pencil):
    g, pencil = ncut_pencil
    with pytest.raises(ValueError, match="needs a start"):
        solve(EigenProblem(pencil, 1), graph=g)
    with pytest.raises(ValueError, match="unknown eigensolver"):
        solve(EigenProblem(pencil, 1, settings=SolveSettings(eigensolver="scipy")), graph=g)


def test_a_random_start_draws_from_the_problems_generator(ncut_pencil):
    """The door's ``M G`` start is that of :func:`random_start` from the same generator (the
    normalized cut's k-means draws on from it), and a warm start reuses the last vectors."""
    g, pencil = ncut_pencil
    settings = SolveSettings(maxiter=500, eig_tol=1e-12, res_tol=1e-9, warm_start=True)
    door = GraphSolver(g.laplacian, g.degrees)
    rng = np.random.default_rng(4)
    lam, X, diag = door.eigenpairs(EigenProblem(pencil, 2, settings=settings, random=rng))
    assert not diag.warm_start
    M = amg_preconditioner(g.laplacian, g.degrees)
    by_hand = solve(lobpcg_problem(pencil, random_start(M, g.n, 2, np.random.default_rng(4)),
                                   maxiter=500, eig_tol=1e-12, res_tol=1e-9), graph=g)
    np.testing.assert_allclose(lam, by_hand.values, rtol=1e-12)
    after = np.random.default_rng(4)
    after.standard_normal((g.n, 2))                        # what the start drew, no more
    assert rng.bit_generator.state == after.bit_generator.state
    again = door.eigenpairs(EigenProblem(pencil, 2, settings=settings, random=rng))
    assert again.diagnostics.warm_start and again.diagnostics.iterations <= 2
    np.testing.assert_allclose(again.values, lam, rtol=1e-8)


def test_choose_eigensolver_says_why_not_the_harmonic_path():
    sets = (np.array([0]), np.array([1]), np.array([2]))
    harmonic = SolveSettings(eigensolver="harmonic")
    problem = EigenProblem(None, 2, sets=sets, settings=harmonic)
    assert choose_eigensolver(problem, True) == ("harmonic", "")
    assert choose_eigensolver(problem, lambda: True) == ("harmonic", "")
    soft = EigenProblem(None, 2, sets=sets, settings=harmonic, soft=True)
    assert choose_eigensolver(soft, True) == ("lobpcg", "LOBPCG, not the harmonic "
                                              "potentials: soft strokes")
    name, why = choose_eigensolver(problem, lambda: False)
    assert name == "lobpcg" and "no stroke reaches" in why
    name, why = choose_eigensolver(EigenProblem(None, 3, sets=sets, settings=harmonic), True)
    assert name == "lobpcg" and "3 vectors asked for 3 labels" in why
    for asked in ("lobpcg", "segapp"):
        problem = EigenProblem(None, 2, sets=sets, settings=SolveSettings(eigensolver=asked))
        assert choose_eigensolver(problem, True) == ("lobpcg", "")


def test_the_door_keeps_at_most_two_harmonic_solvers(ncut_pencil):
    """The plain one and the current shift's; a new theta replaces both."""
    g, _ = ncut_pencil
    door = GraphSolver.of(g)
    plain = door.harmonic_solver(0.25)
    first = door.harmonic_solver(0.25, 1e-3)
    assert door.harmonic_solver(0.25) is plain and door.harmonic is plain
    door.harmonic_solver(0.25, 2e-3)
    assert sorted(door._harmonic) == [(0.25, 0.0), (0.25, 2e-3)] and first.shift == 1e-3
    door.harmonic_solver(0.5)
    assert list(door._harmonic) == [(0.5, 0.0)]


def test_cancel_reaches_the_v_cycle_and_lobpcg(ncut_pencil):
    g, pencil = ncut_pencil
    M = amg_preconditioner(g.laplacian, g.degrees)
    X0 = random_start(M, g.n, 2, np.random.default_rng(0))
    door = GraphSolver(g.laplacian, g.degrees)
    door.eigenpairs(lobpcg_problem(pencil, X0))          # its hierarchy: built once
    polls = []
    door.eigenpairs(lobpcg_problem(pencil, X0),
                    CancelToken(lambda: polls.append(1) and False))
    total = len(polls)
    for stop_at in (1, total // 2, total):
        count = [0]

        def cancel():
            count[0] += 1
            return count[0] >= stop_at
        with pytest.raises(Cancelled):
            door.eigenpairs(lobpcg_problem(pencil, X0), CancelToken(cancel))
    M(X0)                                     # nothing of a solve's token stays on M
    with pytest.raises(Cancelled):            # the set-up checks too
        amg_preconditioner(g.laplacian, g.degrees, cancel=CancelToken(lambda: True))


def test_the_solve_takes_a_token_and_stores_none():
    """One cancellation token handed down as a parameter (issue 24): solve/ neither converts
    what callers pass (the methods do, once) nor parks the token on an object."""
    import re
    from pathlib import Path
    for path in (Path(segapp.__file__).parent / "solve").glob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert "CancelToken.of(" not in text, path.name
        assert not re.search(r"\.cancel\s*=", text), path.name


GOES_ON = (None, lambda: False, threading.Event(), CancelToken(lambda: False))


def _stopped_event() -> threading.Event:
    e = threading.Event()
    e.set()
    return e


STOPS = (lambda: True, _stopped_event(), CancelToken(lambda: True))


def _scene() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    img = two_regions()
    s = np.zeros(img.shape[:2], int)
    s[3, 2:6], s[20, 20:26], s[3, 20:26] = 1, 2, 3
    s2 = s.copy()
    s2[10, 2:6] = 1                                   # one more stroke of label 1
    return img, s, s2


@pytest.mark.skipif(not cholmod.available(), reason=f"CHOLMOD: {cholmod.unavailable_reason()}")
@pytest.mark.parametrize("cancel", GOES_ON, ids=["None", "callable", "Event", "CancelToken"])
def test_preparing_the_next_edit_takes_any_cancel_like_value(cancel):
    """Session.prepare, the public entry of the methods' prepare_next hook, takes what a
    caller has (None, a callable, an Event, a token): FAST-GE factors the last strokes, so
    the next edit is answered from that factor, not from an update of the older one."""
    img, s, s2 = _scene()
    session = segapp.Session(img, method="fastge", stable_refinement=False)
    session.background = False
    session.update(s)
    assert "updated for" in session.update(s2).diagnostics.reason   # base factor: s
    session.prepare(cancel)
    after = session.update(s2)
    assert "the base factor (" in after.diagnostics.reason, after.diagnostics   # base: s2
    fresh = segapp.segment(img, s2, method="fastge", stable_refinement=False)
    np.testing.assert_array_equal(after.labels, fresh.labels)
    session.close()


@pytest.mark.skipif(not cholmod.available(), reason=f"CHOLMOD: {cholmod.unavailable_reason()}")
@pytest.mark.parametrize("cancel", STOPS, ids=["callable", "Event", "CancelToken"])
def test_a_preparation_asked_to_stop_raises_cancelled_and_keeps_the_old_factor(cancel):
    img, s, s2 = _scene()
    session = segapp.Session(img, method="fastge", stable_refinement=False)
    session.background = False
    session.update(s)
    session.update(s2)
    with pytest.raises(Cancelled):
        session.prepare(cancel)
    after = session.update(s2)
    assert "updated for" in after.diagnostics.reason, after.diagnostics   # base still s
    fresh = segapp.segment(img, s2, method="fastge", stable_refinement=False)
    np.testing.assert_array_equal(after.labels, fresh.labels)
    session.close()


def test_preparing_never_changes_a_ccskl_answer():
    """CCSKL prepares its potentials' factor (used where its extended basis needs it): with
    any cancel-like value, the next answer is that of a session that did not prepare."""
    img, s, s2 = _scene()
    plain = segapp.Session(img, method="ccskl")
    plain.background = False
    plain.update(s)
    want = plain.update(s2).labels
    for cancel in GOES_ON + STOPS:
        session = segapp.Session(img, method="ccskl")
        session.background = False
        session.update(s)
        try:
            session.prepare(cancel)
        except Cancelled:
            assert cancel in STOPS
        np.testing.assert_array_equal(session.update(s2).labels, want)


def test_every_module_of_solve_has_its_test_file():
    """One test file per module of segapp/solve (the package's own entry: this file)."""
    from pathlib import Path
    here = Path(__file__).parent
    for path in (Path(segapp.__file__).parent / "solve").glob("*.py"):
        name = "test_solve_entry.py" if path.stem == "__init__" else f"test_{path.stem}.py"
        assert (here / name).is_file(), f"solve/{path.name} has no tests/solve/{name}"
