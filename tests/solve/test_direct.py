"""The direct solve of the strokes' Dirichlet problem (issue 21): ordering, factor, updates.

References are independent of the code under test: dense NumPy solves of the Dirichlet
matrix built entry by entry, CG run to 1e-12, and fresh sessions given the same strokes.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import segapp
from segapp.solve import cholmod
from segapp.solve import direct
from segapp.cancel import NEVER, Cancelled
from segapp.graphs.image import image_graph
from segapp.solve.harmonic import block_pcg, dirichlet_matrix, stroke_rhs
from segapp.solve.ordering import grid_nested_dissection, offsets_reach

needs_cholmod = pytest.mark.skipif(not cholmod.available(),
                                   reason=f"CHOLMOD: {cholmod.unavailable_reason()}")


def noisy_blocks(shape=(30, 40), seed=0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    img = np.zeros(shape)
    img[:, shape[1] // 2:] = 0.6
    img[shape[0] // 2:, :shape[1] // 3] = 0.3
    return np.clip(img + rng.normal(0, 0.05, shape), 0, 1)


def dense_dirichlet(L: sp.csr_matrix, fixed: np.ndarray) -> np.ndarray:
    """Ã entry by entry: painted rows keep the diagonal only, other edges to them dropped."""
    A = L.toarray()
    n = A.shape[0]
    for i in range(n):
        for j in range(n):
            if i != j and (fixed[i] or fixed[j]):
                A[i, j] = 0.0
    return A


# -- the ordering, as CHOLMOD uses it (the ordering itself: test_ordering.py) ------------------
@needs_cholmod
@pytest.mark.parametrize("connectivity, radius", [(4, None), (8, None), (8, 2.0)])
def test_cholmods_factor_follows_the_nested_dissection_it_is_given(connectivity, radius):
    g = image_graph(noisy_blocks((60, 80)), connectivity=connectivity, radius=radius)
    lower = sp.tril(g.laplacian, format="csc")
    lower.sort_indices()
    nd = cholmod.Factor(lower.indptr, lower.indices,
                        grid_nested_dissection(g.shape, offsets_reach(g.offsets)))
    natural = cholmod.Factor(lower.indptr, lower.indices, np.arange(g.n))
    # L + I: positive definite, the Laplacian's pattern
    data = lower.data + (lower.indices == np.repeat(np.arange(g.n), np.diff(lower.indptr)))
    nd.factorize(data)
    natural.factorize(data)
    assert nd.nbytes < 0.6 * natural.nbytes


# -- the factor and its updates ------------------------------------------------------------------
@needs_cholmod
def test_factor_solves_like_a_dense_solve():
    g = image_graph(noisy_blocks())
    rng = np.random.default_rng(1)
    fixed = rng.random(g.n) < 0.05
    d = direct.DirichletFactor(g.laplacian, g.shape, offsets_reach(g.offsets))
    d.factor(fixed)
    b = rng.normal(size=(g.n, 3))
    b[fixed] = 0
    ref = np.linalg.solve(dense_dirichlet(g.laplacian, fixed), b)
    np.testing.assert_allclose(d.solve(fixed, b), ref, rtol=1e-9, atol=1e-10 * np.abs(ref).max())


def _edit(rng: np.random.Generator, shape: tuple[int, int], fixed: np.ndarray,
          kind: str) -> np.ndarray:
    H, W = shape
    new = fixed.reshape(H, W).copy()
    y, x = rng.integers(0, H), rng.integers(0, W)
    h, w = rng.integers(1, 6), rng.integers(1, 12)
    if kind == "add":
        new[y:y + h, x:x + w] = True
    elif kind == "erase":
        painted = np.flatnonzero(fixed)
        if painted.size:
            py, px = np.unravel_index(rng.choice(painted), (H, W))
            new[max(0, py - h):py + h, max(0, px - w):px + w] = False
    elif kind == "mixed":
        new[y:y + h, x:x + w] = ~new[y:y + h, x:x + w]
    elif kind == "big":                                   # past the update's rank: refactor
        new[:, : W // 2] = True
    return new.ravel()


@needs_cholmod
@pytest.mark.parametrize("seed", range(6))
def test_updates_match_a_dense_solve_over_random_edits(seed):
    """Paint, erase, both at once and a fill past the crossover, each solved from the base
    factor of the previous step (the low-rank update) and checked against a dense solve."""
    rng = np.random.default_rng(seed)
    g = image_graph(noisy_blocks(seed=seed))
    d = direct.DirichletFactor(g.laplacian, g.shape, offsets_reach(g.offsets))
    fixed = np.zeros(g.n, dtype=bool)
    fixed[rng.choice(g.n, 30, replace=False)] = True
    d.factor(fixed)
    for kind in ["add", "erase", "mixed", "add", "erase", "big", "erase", "mixed"]:
        new = _edit(rng, g.shape, fixed, kind)
        if not new.any():
            continue
        b = rng.normal(size=(g.n, 2))
        b[new] = 0
        x = d.solve(new, b)
        ref = np.linalg.solve(dense_dirichlet(g.laplacian, new), b)
        np.testing.assert_allclose(x, ref, rtol=1e-8, atol=1e-9 * np.abs(ref).max(),
                                   err_msg=kind)
        if rng.random() < 0.5:      # sometimes the base moves on (as prepare() does)
            d.factor(new)
        fixed = new


@needs_cholmod
@pytest.mark.parametrize("gamma", [0.0, 0.3])
@pytest.mark.parametrize("kind", ["add", "erase", "mixed", "refactor", "same"])
def test_one_snapshot_serves_many_right_hand_sides(gamma, kind):
    """``for_strokes`` once, ``solve`` several times (the EM rounds of one edit): each equals
    an independent dense solve, on the Laplacian and on a shifted ``L + γD`` (rows that do not
    sum to zero), whichever way the snapshot was made."""
    rng = np.random.default_rng(7)
    g = image_graph(noisy_blocks())
    M = (g.laplacian + gamma * sp.diags(g.degrees)).tocsr()
    d = direct.DirichletFactor(M, g.shape, offsets_reach(g.offsets))
    fixed = np.zeros(g.n, dtype=bool)
    fixed[rng.choice(g.n, 40, replace=False)] = True
    d.factor(fixed)
    new = fixed if kind == "same" else _edit(rng, g.shape, fixed, kind.replace("refactor",
                                                                                "add"))
    if kind == "refactor":
        d.max_rank = 1           # past the update's limit
    snap = d.for_strokes(new)
    assert snap.how == {"same": "base", "refactor": "refactor"}.get(kind, "update")
    dense = dense_dirichlet(M, new)
    for _ in range(4):
        b = rng.normal(size=(g.n, 3))
        b[new] = 0
        ref = np.linalg.solve(dense, b)
        np.testing.assert_allclose(snap.solve(b), ref, rtol=1e-8,
                                   atol=1e-9 * np.abs(ref).max())
        np.testing.assert_allclose(snap.solve(b[:, 1]), ref[:, 1], rtol=1e-8,
                                   atol=1e-9 * np.abs(ref).max())


@needs_cholmod
def test_one_analysis_made_before_any_stroke_serves_every_shift():
    """The per-image analysis (made from the graph alone) shared by factors of ``L`` and of
    ``L + γD`` (on L's pattern, as the harmonic solver makes it): each solves like an
    independent dense solve, and like a factor that made its own analysis."""
    from segapp.solve.harmonic import shifted
    rng = np.random.default_rng(11)
    g = image_graph(noisy_blocks())
    grid = (g.shape, offsets_reach(g.offsets))
    shared = direct.GridAnalysis(g.laplacian, *grid)
    fixed = np.zeros(g.n, dtype=bool)
    fixed[rng.choice(g.n, 40, replace=False)] = True
    for gamma in (0.0, 0.2):
        M = shifted(g.laplacian, gamma * g.degrees) if gamma else g.laplacian
        assert shared.fits(M)
        d = direct.DirichletFactor(M, *grid, analysis=shared)
        assert d._symbolic is shared.symbolic
        own = direct.DirichletFactor(M, *grid)
        b = rng.normal(size=(g.n, 2))
        b[fixed] = 0
        ref = np.linalg.solve(dense_dirichlet(M, fixed), b)
        x = d.solve(fixed, b)
        np.testing.assert_allclose(x, ref, rtol=1e-9, atol=1e-10 * np.abs(ref).max())
        np.testing.assert_array_equal(x, own.solve(fixed, b))
    # a matrix on another pattern is not taken for this one: its factor analyses it anew
    other = (g.laplacian + sp.eye(g.n, k=g.shape[1] + 2) + sp.eye(g.n, k=-g.shape[1] - 2)).tocsr()
    other.sort_indices()
    assert not shared.fits(other)
    d = direct.DirichletFactor(other, *grid, analysis=shared)
    assert d._symbolic is not shared.symbolic


@needs_cholmod
def test_the_graph_solver_analyses_ahead_once_for_all_its_harmonic_solvers():
    from segapp.solve import GraphSolver
    g = image_graph(noisy_blocks())
    gs = GraphSolver.of(g)
    assert gs.analyse_ahead() and not gs.analyse_ahead()     # once per image
    sets = [np.arange(5), np.arange(g.n - 5, g.n)]
    plain = gs.harmonic_solver(0.25, 0.0)
    Y0 = plain.potentials(sets, linear_solver="direct")
    prior = np.full((g.n, 2), 0.5)
    gamma = gs.harmonic_solver(0.25, 0.1)
    Y1 = gamma.potentials(sets, linear_solver="direct", prior=prior)
    assert plain.direct._symbolic is gamma.direct._symbolic is gs._grid_analysis().symbolic
    for h, Y, p in ((plain, Y0, None), (gamma, Y1, prior)):   # dense references
        fixed = np.zeros(g.n, dtype=bool)
        fixed[np.concatenate(sets)] = True
        b = stroke_rhs(h.M, fixed, sets)
        if p is not None:
            b += (h.shift * g.degrees * ~fixed)[:, None] * p
        ref = np.linalg.solve(dense_dirichlet(h.M, fixed), b)
        np.testing.assert_allclose(Y[~fixed], ref[~fixed], atol=1e-9)


@needs_cholmod
def test_a_method_built_from_an_image_solves_with_the_analysis_begun_before_its_weights():
    """FastGE from an image: the grid's analysis begun beside the graph's build (from the
    grid alone) fits the graph built, serves the solve's factor, and the answer equals that
    of a solve whose factor made its own analysis."""
    from segapp.methods import get
    img = noisy_blocks((36, 44))
    s = np.zeros(img.shape, int)
    s[3:6, 3:20], s[30:33, 25:40], s[20:22, 2:10] = 1, 2, 3
    settings = get("fastge").resolve({})
    m = get("fastge").from_settings(img, settings)
    ahead = m.solver._grid_analysis()
    assert ahead is not None and ahead.fits(m.graph.laplacian)
    got = m.run(s, NEVER, None, settings)
    assert m.solver.harmonic.direct._symbolic is ahead.symbolic
    plain = get("fastge")(image_graph(img), settings=settings)   # no analysis ahead
    plain._image = img
    ref = plain.run(s, NEVER, None, settings)
    assert plain.solver._grid_analysis() is None
    np.testing.assert_array_equal(got.labels, ref.labels)
    np.testing.assert_allclose(got.eigenvalues, ref.eigenvalues, rtol=1e-9)


@needs_cholmod
def test_a_snapshot_is_immutable_and_outlives_a_new_base():
    rng = np.random.default_rng(3)
    g = image_graph(noisy_blocks())
    d = direct.DirichletFactor(g.laplacian, g.shape, offsets_reach(g.offsets))
    fixed = np.zeros(g.n, dtype=bool)
    fixed[rng.choice(g.n, 40, replace=False)] = True
    d.factor(fixed)
    new = _edit(rng, g.shape, fixed, "add")
    snap = d.for_strokes(new)
    b = rng.normal(size=(g.n, 2))
    b[new] = 0
    before = snap.solve(b)
    d.factor(_edit(rng, g.shape, new, "big"))      # another base swapped in
    d.reset()
    np.testing.assert_array_equal(snap.solve(b), before)
    assert not snap.fixed.flags.writeable and not snap.base.flags.writeable
    with pytest.raises(ValueError):
        snap.fixed[0] = not snap.fixed[0]


@needs_cholmod
@pytest.mark.parametrize("edit", ["add", "erase"])
def test_a_forward_solve_made_before_its_snapshot_gives_the_same_numbers(edit):
    """An update's forward solve, made from the base the snapshot reports through ``took``
    while the snapshot is still being made, is the snapshot's own first half: the solve is
    the same to the last bit and matches a dense solve; a forward of another base (a new
    one swapped in meanwhile) or of other strokes is not used."""
    rng = np.random.default_rng(4)
    g = image_graph(noisy_blocks())
    d = direct.DirichletFactor(g.laplacian, g.shape, offsets_reach(g.offsets))
    fixed = np.zeros(g.n, dtype=bool)
    fixed[rng.choice(g.n, 40, replace=False)] = True
    fixed.reshape(g.shape)[5:8, 3:20] = True
    d.factor(fixed)
    new = _edit(rng, g.shape, fixed, edit)
    took = []
    snap = d.for_strokes(new, took=took.append)
    assert snap.how == "update" and took == [d._current]
    b = rng.normal(size=(g.n, 2))
    b[new] = 0
    plain = snap.solve(b)
    early = direct.Forward(d, took[0], new, b)
    np.testing.assert_array_equal(snap.solve(b, forward=early), plain)
    assert early.take(snap) is None                               # used once
    ref = np.linalg.solve(dense_dirichlet(g.laplacian, new), b)
    np.testing.assert_allclose(plain, ref, rtol=1e-8, atol=1e-9 * np.abs(ref).max())
    other = direct.Forward(d, took[0], fixed, b)                  # the base's own strokes
    assert other.take(snap) is None
    old = d._current
    d.factor(new)                                                 # a new base swapped in
    assert direct.Forward(d, d._current, new, b).take(snap) is None
    assert snap._cur is old
    # a refactor (no base to update) reports None at once
    d.reset()
    told = []
    assert d.for_strokes(new, took=told.append).how == "refactor" and told == [None]


class _RebaseWhenFactored(dict):
    """``DirichletFactor.timings`` that swaps in another base the moment a factor is timed:
    a background ``prepare`` finishing at the worst moment for a solve that just factored."""

    def __init__(self, d: direct.DirichletFactor, other: np.ndarray) -> None:
        super().__init__(d.timings)
        self.d, self.other, self.armed = d, other, True

    def __setitem__(self, key, value) -> None:
        super().__setitem__(key, value)
        if key == "factor" and self.armed:
            self.armed = False
            self.d.factor(self.other)


@needs_cholmod
@pytest.mark.parametrize("start", ["no base", "too far from the base"])
def test_a_solve_keeps_its_own_factor_when_another_is_swapped_in(start):
    """Issue 28 item 4, deterministic: a solve that factors its strokes, then sees another
    stroke set's factor swapped in before it solves, still answers for its own strokes (the
    old ``_refactored_solve`` / ``solve`` re-read ``_current`` and used the other one)."""
    rng = np.random.default_rng(5)
    g = image_graph(noisy_blocks())
    d = direct.DirichletFactor(g.laplacian, g.shape, offsets_reach(g.offsets))
    mine = np.zeros(g.n, dtype=bool)
    mine[rng.choice(g.n, 40, replace=False)] = True
    other = mine.copy()
    other.reshape(g.shape)[:, :10] = True
    if start != "no base":
        d.factor(other)
        d.max_rank = 1
    d.timings = _RebaseWhenFactored(d, other)
    b = rng.normal(size=(g.n, 2))
    b[mine] = 0
    ref = np.linalg.solve(dense_dirichlet(g.laplacian, mine), b)
    x = d.solve(mine, b)
    assert not d.timings.armed and np.array_equal(d.base, other)   # the swap did happen
    np.testing.assert_allclose(x, ref, rtol=1e-8, atol=1e-9 * np.abs(ref).max())


@needs_cholmod
def test_solves_race_a_background_rebase_and_stay_exact():
    """Item 4 of issue 28: solves in one thread while another keeps factoring new bases.

    Before the snapshots a refactoring solve read ``self._current`` after its own ``factor``
    and could use the factor of another stroke set (a wrong answer, silently)."""
    rng = np.random.default_rng(11)
    g = image_graph(noisy_blocks((24, 30)))
    d = direct.DirichletFactor(g.laplacian, g.shape, offsets_reach(g.offsets))
    masks = []
    for i in range(6):
        m = np.zeros(g.n, dtype=bool)
        m[rng.choice(g.n, 20 + 60 * i, replace=False)] = True
        if i % 2:
            m.reshape(g.shape)[:, : g.shape[1] // 2] = True     # far apart: refactored
        masks.append(m)
    refs = {}
    for i, m in enumerate(masks):
        b = rng.normal(size=(g.n, 2))
        b[m] = 0
        refs[i] = (b, np.linalg.solve(dense_dirichlet(g.laplacian, m), b))
    d.max_rank = 8               # most solves refactor: the window of the old race
    stop = threading.Event()

    def rebase() -> None:
        r = np.random.default_rng(12)
        while not stop.is_set():
            d.factor(masks[r.integers(len(masks))])

    th = threading.Thread(target=rebase)
    th.start()
    worst = 0.0
    try:
        for _ in range(150):
            i = int(rng.integers(len(masks)))
            b, ref = refs[i]
            x = d.solve(masks[i], b)
            worst = max(worst, float(np.abs(x - ref).max() / np.abs(ref).max()))
    finally:
        stop.set()
        th.join()
    assert worst < 1e-8


@needs_cholmod
def test_an_update_is_used_below_the_crossover_and_a_refactor_above():
    g = image_graph(noisy_blocks((60, 80)))
    d = direct.DirichletFactor(g.laplacian, g.shape)
    fixed = np.zeros(g.n, dtype=bool)
    fixed[:80] = True
    d.factor(fixed)
    small = fixed.copy()
    small[2000:2010] = True
    assert d.can_update(small)
    big = fixed.copy()                   # scattered pixels: every one is on the boundary
    big[np.random.default_rng(0).choice(g.n, g.n // 3, replace=False)] = True
    assert not d.can_update(big)
    b = np.zeros((g.n, 1))
    b[g.n - 1] = 1.0
    d.solve(big, b)
    assert np.array_equal(d.base, big)       # the refactor made it the base


# -- the harmonic potentials -----------------------------------------------------------------------
def _strokes(shape: tuple[int, int]) -> np.ndarray:
    s = np.zeros(shape, dtype=np.int32)
    H, W = shape
    s[H // 4, 2:W // 3] = 1
    s[H // 4, W // 2 + 2:W - 2] = 2
    s[3 * H // 4, 2:W // 4] = 3
    return s


@needs_cholmod
def test_direct_potentials_equal_tightly_converged_cg():
    g = image_graph(noisy_blocks((40, 50)))
    s = _strokes(g.shape).ravel()
    sets = [np.flatnonzero(s == a) for a in (1, 2, 3)]
    fixed = np.isin(s, [1, 2, 3])
    b = stroke_rhs(g.laplacian, fixed, sets[:2])
    d = direct.DirichletFactor(g.laplacian, g.shape)
    d.factor(fixed)
    x = d.solve(fixed, b)
    A = dirichlet_matrix(g.laplacian, fixed)
    M = lambda r: r / A.diagonal()[:, None]  # noqa: E731 (Jacobi: independent of the AMG code)
    ref, _, rel = block_pcg(A, M, b, tol=1e-13, maxiter=5000)
    assert rel.max() <= 1e-13
    np.testing.assert_allclose(x, ref, atol=1e-8)


@needs_cholmod
def test_harmonic_solver_direct_and_iterative_agree():
    g = image_graph(noisy_blocks((40, 50)))
    s = _strokes(g.shape)
    method = segapp.methods.get("fastge")
    direct_ = method(g, linear_solver="direct", stable_refinement=False).update(s)
    iterative = method(g, linear_solver="iterative", cg_tol=1e-12, maxiter=1000,
                       stable_refinement=False).update(s)
    assert "direct" in direct_.diagnostics.reason
    assert "direct" not in iterative.diagnostics.reason
    np.testing.assert_allclose(direct_.eigenvalues, iterative.eigenvalues, rtol=1e-7)
    np.testing.assert_array_equal(direct_.labels, iterative.labels)


def test_iterative_fallback_without_cholmod(monkeypatch):
    monkeypatch.setattr(direct, "available", lambda: False)
    img = noisy_blocks((40, 50))
    s = _strokes(img.shape)
    sess = segapp.Session(img, stable_refinement=False)
    first = sess.update(s)
    sess.wait_prepared()
    s2 = s.copy()
    s2[30, 30:40] = 2
    second = sess.update(s2)
    for r in (first, second):
        assert "direct" not in r.diagnostics.reason and r.diagnostics.converged
    assert sess._method.solver.harmonic.direct is None


def test_image_graph_only():
    # A graph given as an adjacency has no grid to dissect: the iterative solve serves it.
    W = sp.random(60, 60, density=0.2, random_state=0)
    W = W + W.T + sp.diags(np.ones(59), 1) + sp.diags(np.ones(59), -1)
    labels = np.zeros(60, dtype=int)
    labels[:3], labels[-3:] = 1, 2
    res = segapp.cluster(labels, graph=W)
    assert "direct" not in res.diagnostics.reason


# -- sessions: the edit history does not change the answer ---------------------------------------
@needs_cholmod
def test_session_prepares_in_the_background_and_the_next_edit_is_an_update():
    img = noisy_blocks((60, 80))
    s = _strokes(img.shape)
    # appearance=0: the second edit's label 1 spans two blocks, so its colours no longer
    # differ from another label's beyond noise, and the colour models (and their γD in the
    # factored matrix) step aside: another factor (tests/methods/test_fastge.py)
    sess = segapp.Session(img, stable_refinement=False, appearance=0)
    sess.update(s)
    sess.wait_prepared()
    assert sess._method.solver.harmonic.direct.base is not None
    s2 = s.copy()
    s2[40, 50:60] = 1
    r = sess.update(s2)
    assert "updated for" in r.diagnostics.reason


@needs_cholmod
def test_waiting_for_the_background_work_can_be_cancelled():
    img = noisy_blocks((40, 50))
    s = _strokes(img.shape)
    sess = segapp.Session(img)
    sess.update(s)
    hold = threading.Event()
    sess._preparing = threading.Thread(target=hold.wait, daemon=True)   # work still going on
    sess._preparing.start()
    with pytest.raises(Cancelled):
        sess.update(s, cancel=lambda: True)
    hold.set()


@st.composite
def edit_histories(draw):
    H = draw(st.integers(24, 48))
    W = draw(st.integers(24, 48))
    seed = draw(st.integers(0, 2**31 - 1))
    kinds = draw(st.lists(st.sampled_from(["add", "erase", "clear", "undo"]),
                          min_size=2, max_size=6))
    return H, W, seed, kinds


@needs_cholmod
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(edit_histories())
def test_edited_session_equals_a_fresh_one(history):
    """Random images × random edit sequences (add, erase, clear a label, undo): with
    stable_refinement off, every answer equals a fresh session's on the same strokes."""
    H, W, seed, kinds = history
    rng = np.random.default_rng(seed)
    img = np.clip(rng.random((H, W)) * 0.2
                  + (np.arange(W) >= W // 2)[None, :] * 0.5, 0, 1)
    s = np.zeros((H, W), dtype=np.int32)
    s[2:4, 2:W // 3] = 1
    s[H - 4:H - 2, W // 2 + 1:W - 2] = 2
    s[H // 2, W // 3:W // 2] = 3
    sess = segapp.Session(img, stable_refinement=False)
    history_ = [s.copy()]
    sess.update(s)
    for kind in kinds:
        s = history_[-1].copy()
        if kind == "add":
            y, x = rng.integers(0, H - 3), rng.integers(0, W - 6)
            s[y:y + 2, x:x + 6] = rng.integers(1, 4)
        elif kind == "erase":
            y, x = rng.integers(0, H - 6), rng.integers(0, W - 6)
            s[y:y + 6, x:x + 6] = 0
        elif kind == "clear":
            s[s == rng.integers(1, 4)] = 0
        elif kind == "undo" and len(history_) > 1:
            history_.pop()
            s = history_[-1].copy()
        if len(np.unique(s[s > 0])) < 2:
            continue
        history_.append(s)
        edited = sess.update(s)
        fresh = segapp.Session(img, stable_refinement=False).update(s)
        np.testing.assert_array_equal(edited.labels, fresh.labels)
        np.testing.assert_allclose(edited.eigenvalues, fresh.eigenvalues, rtol=1e-8)


# -- threads of a factorization a person waits for (foreground_threads, busy_core) -----------

@pytest.mark.parametrize("load, own, busy, threads", [
    (0.2, 0.0, 0, 4),     # idle: every core
    (2.1, 0.0, 0, 2),     # two cores' worth of other work
    (2.1, 1.9, 0, 4),     # ... that was this process's own previous edit
    (0.2, 0.0, 1, 3),     # a thread of this process holds a core (the preview)
    (9.0, 0.0, 1, 1),     # never below one
])
def test_a_factorization_takes_the_cores_others_leave(monkeypatch, load, own, busy, threads):
    monkeypatch.setattr(direct.os, "cpu_count", lambda: 4)
    monkeypatch.setattr(direct.os, "getloadavg", lambda: (load, load, load))
    monkeypatch.setattr(direct, "_own_load", lambda: own)
    monkeypatch.setattr(direct, "_busy", [busy])
    assert direct.foreground_threads() == threads


def test_this_process_own_load_is_its_processor_use_over_the_last_minute(monkeypatch):
    clock = {"wall": 1000.0, "cpu": 50.0}
    monkeypatch.setattr(direct.time, "monotonic", lambda: clock["wall"])
    monkeypatch.setattr(direct.time, "process_time", lambda: clock["cpu"])
    monkeypatch.setattr(direct, "_usage", [])
    assert direct._own_load() == 0.0              # no history yet
    clock["wall"] += 10.0
    clock["cpu"] += 15.0                           # 1.5 cores over 10 s
    assert direct._own_load() == pytest.approx(1.5)
    clock["wall"] += 100.0                         # the samples age out of the minute
    assert direct._own_load() == 0.0


def test_a_freed_core_goes_to_the_factorization_running_then(monkeypatch):
    monkeypatch.setattr(direct, "foreground_threads", lambda: 2 - direct._busy[0])
    given: list[int] = []
    monkeypatch.setattr(direct.cholmod, "set_blas_threads", given.append)
    monkeypatch.setattr(direct, "_busy", [0])
    with direct.busy_core():
        assert direct._busy[0] == 1
    assert given == []                             # nothing was factoring: nothing set
    monkeypatch.setattr(direct, "_factoring", [1])
    with direct.busy_core():
        pass
    assert given == [2] and direct._busy[0] == 0


def test_a_batch_worker_factors_on_one_thread_however_idle_the_machine_looks(monkeypatch):
    monkeypatch.setattr(direct.os, "cpu_count", lambda: 4)
    monkeypatch.setattr(direct.os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    monkeypatch.setattr(direct, "_own_load", lambda: 0.0)
    assert direct.foreground_threads() == 4
    with direct.factor_threads_at_most(1):
        assert direct.foreground_threads() == 1
    assert direct.foreground_threads() == 4


def test_the_background_factorization_holds_a_core_while_it_runs(monkeypatch):
    """An edit's own factorization (a refactor past the update's limits) meanwhile takes one
    BLAS thread less, and the core back when the background one ends (busy_core)."""
    if not cholmod.available():
        pytest.skip(cholmod.unavailable_reason())
    seen: list[int] = []
    original = direct.DirichletFactor.factor

    def factor(self, fixed, cancel=NEVER, threads=None):
        if threads is None:                 # the background preparation's
            seen.append(direct._busy[0])
        return original(self, fixed, cancel, threads)

    monkeypatch.setattr(direct.DirichletFactor, "factor", factor)
    rng = np.random.default_rng(0)
    img = rng.random((40, 50))
    s = np.zeros((40, 50), int)
    s[5, 5:20], s[30, 5:20] = 1, 2
    session = segapp.Session(img)
    session.update(s)
    s[20, 30:45] = 1
    session.update(s)
    session.wait_prepared()
    session.close()
    assert seen and all(b >= 1 for b in seen)
    assert direct._busy[0] == 0
