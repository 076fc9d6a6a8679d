"""FAST-GE's harmonic solve (segapp/solve/harmonic.py) against dense references.

* the Dirichlet matrix and the block CG against a hand-built matrix and a sparse direct solve;
* the potentials are the random walker's probabilities (a dense solve of ``L_FF φ = −L_FS 1``);
* the Ritz values are upper bounds of the dense pencil's eigenvalues and approach them as the
  must-link weight grows (the stiff-constraint limit the method rests on);
* the method falls back to LOBPCG where the harmonic limit does not apply.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

import segapp
from segapp.solve.amg import AMGPreconditioner
from segapp.strokes.constraints import build_constraints
from segapp.graphs.image import image_graph
from segapp.solve.harmonic import (JACOBI_SHIFT, HarmonicSolver, block_pcg, dirichlet_matrix,
                                   stroke_rhs)
from segapp.methods.fastge import FastGE
from segapp.solve.pencil import Pencil

from scenes import from_scratch, noisy_blocks, restricted_eigh, strokes

pytestmark = pytest.mark.usefixtures("one_blas_thread")


@pytest.fixture(scope="module")
def blocks():
    img, truth = noisy_blocks()
    s = strokes(truth)
    g = image_graph(img, denoise=0)
    return g, s


def test_dirichlet_matrix_drops_every_edge_of_a_painted_pixel():
    rng = np.random.default_rng(0)
    W = sp.random(12, 12, density=0.4, random_state=1)
    W = W + W.T
    W.setdiag(0)
    L = sp.csr_matrix(sp.diags(np.asarray(W.sum(1)).ravel()) - W)
    fixed = rng.random(12) < 0.3
    expected = L.toarray()
    for i in np.flatnonzero(fixed):
        d = expected[i, i]
        expected[i, :] = 0
        expected[:, i] = 0
        expected[i, i] = d
    np.testing.assert_array_equal(dirichlet_matrix(L, fixed).toarray(), expected)


def test_block_cg_solves_the_dirichlet_system(blocks):
    g, s = blocks
    fixed = s.ravel() > 0
    A = dirichlet_matrix(g.laplacian, fixed)
    b = np.random.default_rng(1).standard_normal((g.n, 3))
    b[fixed] = 0
    M = AMGPreconditioner(A, theta=0.03)
    x, steps, rel = block_pcg(A, M, b, tol=1e-10)
    assert 0 < steps < 100 and rel.max() <= 1e-10
    np.testing.assert_allclose(x, spla.spsolve(A.tocsc(), b), rtol=1e-7, atol=1e-9)


def test_potentials_are_the_random_walker_probabilities(blocks):
    g, s = blocks
    lab = s.ravel()
    ids = np.unique(lab[lab > 0])
    sets = [np.flatnonzero(lab == i) for i in ids]
    fixed = lab > 0
    Ld = g.laplacian.toarray()
    F, S = np.flatnonzero(~fixed), np.flatnonzero(fixed)
    # Grady 2006: L_U x = −B E, one column per label, computed densely
    E = (lab[S, None] == ids[None, :]).astype(float)
    ref = np.linalg.solve(Ld[np.ix_(F, F)], -Ld[np.ix_(F, S)] @ E)
    np.testing.assert_allclose(ref.sum(1), 1.0, atol=1e-10)
    A = dirichlet_matrix(g.laplacian, fixed)
    b = stroke_rhs(g.laplacian, fixed, sets)
    x, _, _ = block_pcg(A, AMGPreconditioner(A), b, tol=1e-12)
    np.testing.assert_allclose(x[F], ref, atol=1e-8)
    np.testing.assert_array_equal(x[S], 0.0)


def test_ritz_values_bound_the_dense_eigenvalues_and_approach_them(blocks):
    g, s = blocks
    errors = []
    for weight in (1.0, 10.0):
        cons = build_constraints(s, g.degrees, constraint_weight=weight)
        pencil = Pencil.from_constraints(g.laplacian, g.degrees, cons)
        LG, LH = pencil.dense()
        lam, _ = restricted_eigh(LG, LH, g.degrees, cons.k - 1)
        theta, X, diag = HarmonicSolver(g.laplacian, g.degrees).potential_ritz_pairs(
            pencil, cons.sets, list(cons.label_ids), nev=cons.k - 1, tol=1e-12)
        assert diag.converged
        rel = (theta - lam) / lam
        # Rayleigh–Ritz gives upper bounds (up to the dense solver's own ~1e-7 here)
        assert np.all(rel >= -1e-6)
        errors.append(rel.max())
        # X is B-orthonormal on dᵀx = 0
        np.testing.assert_allclose(X.T @ pencil.B(X), np.eye(cons.k - 1), atol=1e-8)
        assert np.abs(g.degrees @ X).max() <= 1e-8 * np.abs(X).max() * g.degrees.sum()
    # O(1/c): ten times stiffer must-links, about a tenth of the error (measured 7.7e-6, 8.7e-7;
    # at weight 100 the dense reference itself is only good to ~1e-5)
    assert errors[0] <= 2e-5 and errors[1] <= errors[0] / 5


def test_weight_one_matches_the_from_scratch_pencil_and_lobpcg_labels(blocks):
    g, s = blocks
    LG, LH, _, d = from_scratch(g.laplacian, s)
    lam, _ = restricted_eigh(LG, LH, d, 3)
    harmonic = FastGE(g).update(s)
    tight = FastGE(g, eigensolver="lobpcg", eig_tol=1e-9, res_tol=1e-10, maxiter=500).update(s)
    np.testing.assert_allclose(harmonic.eigenvalues, lam, rtol=2e-3)
    assert "potentials" in harmonic.diagnostics.reason
    assert np.mean(harmonic.labels == tight.labels) >= 0.999


def test_reused_hierarchy_gives_the_cold_result(blocks):
    g, s = blocks
    s2 = s.copy()
    s2[20:22, 3:9] = s[s > 0].min()                   # one more stroke of the first label
    # the iterative path's hierarchy reuse (the direct path is exact either way: test_direct)
    warm_method = FastGE(g, warm_start=True, linear_solver="iterative")
    warm_method.update(s)
    warm = warm_method.update(s2)
    # the same edits without reusing the hierarchy: the answer after an added stroke
    # depends on the one before (stable_refinement), which is not what is compared here
    cold_method = FastGE(g, warm_start=False, linear_solver="iterative")
    cold_method.update(s)
    cold = cold_method.update(s2)
    assert warm.diagnostics.warm_start and not cold.diagnostics.warm_start
    np.testing.assert_allclose(warm.eigenvalues, cold.eigenvalues, rtol=1e-5)
    assert np.mean(warm.labels == cold.labels) >= 0.999
    # and back (a stroke removed): a new hierarchy (the old one misleads CG after an
    # unpainting), and the answer of a fresh solve
    back = warm_method.update(s)
    assert not back.diagnostics.warm_start
    np.testing.assert_allclose(back.eigenvalues, FastGE(g).update(s).eigenvalues, rtol=1e-5)


def test_lobpcg_where_the_harmonic_limit_does_not_apply(blocks):
    g, s = blocks
    soft = FastGE(g).update(s, confidence=np.full(s.shape, 0.5))
    assert "potentials" not in soft.diagnostics.reason
    kth = FastGE(g, n_vectors=4).update(s)            # k vectors: one more than the potentials
    assert "potentials" not in kth.diagnostics.reason and kth.eigenvalues.shape == (4,)
    # a graph with a component that no stroke reaches
    W = sp.block_diag([sp.eye(6, k=1) + sp.eye(6, k=-1)] * 2).tocsr()
    labels = np.zeros(12, int)
    labels[0], labels[5] = 1, 2
    res = segapp.cluster(labels, graph=W)
    assert "potentials" not in res.diagnostics.reason
    theirs = segapp.cluster(labels[:6], graph=W[:6, :6])
    assert "potentials" in theirs.diagnostics.reason


# -- appearance: label anchors joined to the data graph (issue 31) -------------------------
def _anchored_reference(L, d, sets, prior, gamma):
    """Dense harmonic extension on the data graph plus one anchor node per label (joined to
    every unpainted pixel i with weight γ d_i P_a(i), fixed at its label's indicator)."""
    n, k = L.shape[0], len(sets)
    W = np.diag(np.diag(L.toarray())) - L.toarray()
    fixed = np.zeros(n, bool)
    for S in sets:
        fixed[S] = True
    Wa = np.zeros((n + k, n + k))
    Wa[:n, :n] = W
    link = gamma * d[:, None] * prior * ~fixed[:, None]
    Wa[:n, n:], Wa[n:, :n] = link, link.T
    La = np.diag(Wa.sum(1)) - Wa
    values = np.zeros((n + k, k))
    for a, S in enumerate(sets):
        values[S, a] = 1.0
    values[n:] = np.eye(k)
    known = np.r_[fixed, np.ones(k, bool)]
    free = ~known
    X = values.copy()
    X[free] = np.linalg.solve(La[np.ix_(free, free)], -La[np.ix_(free, known)] @ values[known])
    return X[:n], La, values, known


@pytest.mark.parametrize("linear_solver", ["direct", "iterative", "auto"])
@pytest.mark.parametrize("gamma", [1e-3, 0.1])
def test_a_prior_gives_the_potentials_of_the_graph_with_label_anchors(linear_solver, gamma):
    # γ from JACOBI_SHIFT on (the folder suggestion's 0.1): Jacobi-preconditioned CG, unless
    # the factor is asked for; below it (FAST-GE's appearance / n) the factor or AMG
    if linear_solver != "iterative" and not segapp.solve.direct.available():
        pytest.skip("no usable CHOLMOD here")
    img, truth = noisy_blocks()
    g = image_graph(img, denoise=0)
    s = strokes(truth).ravel()
    ids = np.unique(s[s > 0])
    sets = [np.flatnonzero(s == i) for i in ids]
    rng = np.random.default_rng(5)
    prior = rng.random((g.n, len(ids)))
    prior /= prior.sum(1, keepdims=True)
    h = HarmonicSolver(g.laplacian, g.degrees, grid=(g.shape, 1), shift=gamma)
    Y = h.potentials(sets, list(ids), tol=1e-13, maxiter=1000, linear_solver=linear_solver,
                     prior=prior)
    ref, *_ = _anchored_reference(g.laplacian, g.degrees, sets, prior, gamma)
    np.testing.assert_allclose(Y, ref, atol=1e-8)
    np.testing.assert_allclose(Y.sum(1), 1.0, atol=1e-8)   # Σ P_a = 1 keeps Σ φ_a = 1
    jacobi = gamma >= JACOBI_SHIFT and linear_solver != "direct"
    assert h.last_linear_solver.startswith(
        "iterative, Jacobi" if jacobi else "iterative, AMG" if linear_solver == "iterative"
        else "direct")


def test_the_anchor_gram_is_the_anchored_graphs_energy():
    from segapp.solve.harmonic import anchor_gram
    img, truth = noisy_blocks()
    g = image_graph(img, denoise=0)
    s = strokes(truth).ravel()
    ids = np.unique(s[s > 0])
    sets = [np.flatnonzero(s == i) for i in ids]
    k = len(ids)
    rng = np.random.default_rng(2)
    prior = rng.random((g.n, k))
    prior /= prior.sum(1, keepdims=True)
    gamma = 0.05
    Y, La, values, known = _anchored_reference(g.laplacian, g.degrees, sets, prior, gamma)
    fixed = np.zeros(g.n, bool)
    for S in sets:
        fixed[S] = True
    w = gamma * g.degrees * ~fixed
    G = anchor_gram(Y, w, prior)
    L = g.laplacian.toarray()
    for t in rng.standard_normal((5, k)):
        shift = rng.standard_normal()                     # a constant shift changes nothing
        x = np.r_[Y @ t + shift, t + shift]               # anchors carry the strokes' values
        data = (Y @ t) @ L @ (Y @ t)
        np.testing.assert_allclose(x @ La @ x, data + t @ G @ t, rtol=1e-10)


@pytest.mark.parametrize("base", [False, True])
def test_a_snapshot_made_ahead_gives_the_same_potentials(base):
    """factor_ahead makes, beside the caller, the snapshot the solve would make itself (a
    cold factor, or the update of a base): the potentials are the same to the last bit, and
    a solve of other strokes does not take it."""
    if not segapp.solve.direct.available():
        pytest.skip("no usable CHOLMOD here")
    img, truth = noisy_blocks()
    g = image_graph(img, denoise=0)
    s = strokes(truth).ravel()
    ids = [int(i) for i in np.unique(s[s > 0])]
    sets = [np.flatnonzero(s == i) for i in ids]
    free = np.flatnonzero(s == 0)
    more = [np.union1d(sets[0], free[free.size // 2:free.size // 2 + 6])] + sets[1:]

    def solver() -> HarmonicSolver:
        h = HarmonicSolver(g.laplacian, g.degrees, grid=(g.shape, 1), shift=0.01)
        if base:
            h.potentials(sets, ids, linear_solver="direct")
        return h

    plain = solver().potentials(more, ids, linear_solver="direct")
    h = solver()
    assert h.factor_ahead(more, linear_solver="direct")
    ahead = h._ahead
    np.testing.assert_array_equal(h.potentials(more, ids, linear_solver="direct"), plain)
    assert ahead is not None and ahead.snap is not None and h._snap[1] is ahead.snap
    assert ahead.snap.how == ("update" if base else "refactor")
    # an update's forward solve was made here while the thread made the rest: the same bits
    assert ahead.base is (ahead.snap._cur if base else None)
    assert h.factor_ahead(sets, linear_solver="direct")        # not the strokes solved next
    other = h._ahead
    h.potentials(more, ids, linear_solver="direct")
    assert h._snap[1] is not other.snap
