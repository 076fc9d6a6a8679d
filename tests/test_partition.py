"""segapp.partition on tiny cases against brute force: k-means and anchored k-means against
every assignment, the Cheeger sweep against every prefix's cut ratio from the dense pencil,
label matching against every permutation; stroke agreement and clamping by hand."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from segapp.constraints import build_constraints
from segapp.errors import Cancelled
from segapp.graphs import graph_from_adjacency
from segapp.partition import (anchored_kmeans, clamp_strokes, kmeans, match_labels, ratio_cut,
                              stroke_agreement, sweep_cut)
from segapp.pencil import Pencil

pytestmark = pytest.mark.usefixtures("one_blas_thread")


def sse(U, codes):
    return sum(((U[codes == c] - U[codes == c].mean(0)) ** 2).sum() for c in np.unique(codes))


def separated_points(rng, k, per=3, gap=10.0):
    """k tight groups of ``per`` points in 2-D, ``gap`` apart: the optimum is the grouping."""
    centres = gap * rng.standard_normal((k, 2))
    while min(np.linalg.norm(a - b) for a, b in itertools.combinations(centres, 2)) < gap / 2:
        centres = gap * rng.standard_normal((k, 2))
    U = np.repeat(centres, per, axis=0) + 0.3 * rng.standard_normal((k * per, 2))
    return U, np.repeat(np.arange(k), per)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), k=st.integers(2, 3))
def test_kmeans_finds_the_brute_force_optimum(seed, k):
    rng = np.random.default_rng(seed)
    U, _ = separated_points(rng, k, per=3 if k == 2 else 2)   # 3^6 assignments at most
    best = min(sse(U, np.array(a)) for a in itertools.product(range(k), repeat=len(U))
               if len(set(a)) == k)
    codes = kmeans(U, k, rng=np.random.default_rng(seed))
    assert codes.shape == (len(U),) and set(codes) <= set(range(k))
    assert sse(U, codes) <= best * (1 + 1e-9)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), k=st.integers(2, 3))
def test_anchored_kmeans_is_the_constrained_optimum(seed, k):
    """One prototype per label; each label's stroke rows fixed to it; the free rows go where
    the constrained objective is smallest: brute force over the free rows' assignments."""
    rng = np.random.default_rng(seed)
    U, groups = separated_points(rng, k, per=3)
    order = rng.permutation(k)                   # label a's stroke: one row of group order[a]
    sets = [np.array([np.flatnonzero(groups == g)[0]]) for g in order]
    stroke = np.concatenate(sets)
    free = np.setdiff1d(np.arange(len(U)), stroke)
    best, best_codes = np.inf, None
    for a in itertools.product(range(k), repeat=len(free)):
        codes = np.empty(len(U), int)
        for lab, S in enumerate(sets):
            codes[S] = lab
        codes[free] = a
        cost = sse(U, codes)
        if cost < best:
            best, best_codes = cost, codes
    codes, centres, owner = anchored_kmeans(U, sets, max_prototypes=1)
    np.testing.assert_array_equal(owner, np.arange(k))
    np.testing.assert_array_equal(codes, best_codes)
    for lab in range(k):
        np.testing.assert_allclose(centres[lab], U[codes == lab].mean(0), atol=1e-9)
    assert np.all(stroke_agreement(codes, sets) == 1.0)


def tiny_graph(rng, n):
    """A random connected weighted graph (a path plus random chords)."""
    W = np.zeros((n, n))
    for i in range(n - 1):
        W[i, i + 1] = rng.uniform(0.1, 1.0)
    for _ in range(n):
        i, j = rng.choice(n, 2, replace=False)
        W[i, j] = rng.uniform(0.0, 1.0)
    W = np.maximum(W, W.T)
    return graph_from_adjacency(sp.csr_matrix(W))


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(5, 12), strokes=st.booleans())
def test_sweep_cut_is_the_best_prefix_of_the_dense_pencil(seed, n, strokes):
    """Every prefix of the sorted order, its ratio ``1ᵀL_G 1 / 1ᵀL_H 1`` from the dense
    ``(L_G, L_H)`` (cut_G / cut_H, with the constraint cliques when there are strokes)."""
    rng = np.random.default_rng(seed)
    g = tiny_graph(rng, n)
    lab = np.zeros(n, int)
    cons = None
    if strokes:
        lab[rng.choice(n, 2, replace=False)] = [1, 2]
        cons = build_constraints(lab, g.degrees)
    pencil = Pencil.from_constraints(g.laplacian, g.degrees, cons)
    LG, LH = pencil.dense()
    x = rng.standard_normal(n)
    order = np.argsort(x, kind="stable")
    ratios = []
    for p in range(1, n):
        ind = np.zeros(n)
        ind[order[:p]] = 1
        ratios.append((ind @ LG @ ind) / (ind @ LH @ ind))
    mask = sweep_cut(x, pencil, cons)
    expected = np.zeros(n, bool)
    expected[order[:int(np.argmin(ratios)) + 1]] = True
    got = mask.astype(float)
    assert (got @ LG @ got) / (got @ LH @ got) == pytest.approx(min(ratios), rel=1e-9)
    if np.sort(ratios)[1] > min(ratios) * (1 + 1e-9):      # a unique best prefix
        np.testing.assert_array_equal(mask, expected)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), k=st.integers(2, 4), labels=st.integers(2, 4))
def test_match_labels_maximises_the_stroke_overlap(seed, k, labels):
    rng = np.random.default_rng(seed)
    n = 40
    codes = rng.integers(0, k, n)
    pix = rng.permutation(n)
    cuts = np.sort(rng.choice(np.arange(1, 20), labels - 1, replace=False))
    sets = np.split(pix[:20], cuts)
    ids = tuple(sorted(rng.choice(np.arange(1, 10), labels, replace=False).tolist()))
    out = match_labels(codes, sets, ids, k)
    overlap = np.array([[np.sum(codes[S] == c) for S in sets] for c in range(k)])
    # brute force: the best one-to-one assignment of min(k, labels) clusters to labels
    best = max(sum(overlap[c, a] for c, a in zip(cs, ls))
               for cs in itertools.permutations(range(k), min(k, labels))
               for ls in itertools.permutations(range(labels), min(k, labels)))
    lut = {c: out[codes == c][0] for c in np.unique(codes)}
    assert all(np.all(out[codes == c] == v) for c, v in lut.items())     # a cluster, one label
    matched = {c: ids.index(v) for c, v in lut.items()}
    if k <= labels:
        assert len(set(matched.values())) == len(matched)                # one-to-one
        assert sum(overlap[c, a] for c, a in matched.items()) == best
    assert set(out) <= set(ids)


def test_stroke_agreement_and_clamping_by_hand():
    codes = np.array([0, 0, 1, 1, 1, 0])
    sets = [np.array([0, 2]), np.array([3, 4, 5]), np.array([], int)]
    np.testing.assert_allclose(stroke_agreement(codes, sets), [0.5, 2 / 3, 1.0])
    labels = np.array([7, 7, 9, 9, 9, 7])
    np.testing.assert_array_equal(clamp_strokes(labels, sets[:2], (7, 9)), [7, 7, 7, 9, 9, 9])


def test_cancel_between_restarts():
    U, _ = separated_points(np.random.default_rng(0), 3)
    with pytest.raises(Cancelled):
        kmeans(U, 3, cancel=lambda: True)
    with pytest.raises(Cancelled):
        anchored_kmeans(U, [np.array([0]), np.array([3])], cancel=lambda: True)


# -- FAST-GE's objective (benchmarks/drops.py) ---------------------------------------------
def small_problem(seed: int = 0, n_side: int = 6, k: int = 3):
    """A random weighted grid graph with a few labelled vertices of k labels."""
    rng = np.random.default_rng(seed)
    n = n_side * n_side
    W = sp.random(n, n, density=0.2, random_state=seed, data_rvs=lambda m: rng.uniform(0.1, 1, m))
    W = sp.triu(W, 1)
    W = (W + W.T).tocsr()
    idx = np.arange(n - 1)
    W = W + sp.csr_matrix((np.full(n - 1, 0.5), (idx, idx + 1)), shape=(n, n))  # connected
    W = W + sp.csr_matrix((np.full(n - 1, 0.5), (idx + 1, idx)), shape=(n, n))
    d = np.asarray(W.sum(axis=1)).ravel()
    L = (sp.diags(d) - W).tocsr()
    scribbles = np.zeros(n, np.int32)
    picks = rng.choice(n, 3 * k, replace=False)
    scribbles[picks] = np.repeat(np.arange(1, k + 1), 3)
    cons = build_constraints(scribbles.reshape(n_side, n_side), d, constraint_weight=0.7)
    return Pencil.from_constraints(L, d, cons), cons, rng


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_ratio_cut_is_the_sum_of_generalized_rayleigh_quotients(seed):
    """Σ_a x_aᵀL_G x_a / x_aᵀL_H x_a with x_a the indicator of label a's region (dense pencil)."""
    pencil, cons, rng = small_problem(seed)
    LG, LH = pencil.dense()
    codes = rng.integers(0, cons.k, pencil.n)
    for a, S in enumerate(cons.sets):
        codes[S] = a
    expected = 0.0
    for a in range(cons.k):
        x = (codes == a).astype(float)
        expected += (x @ LG @ x) / (x @ LH @ x)
    assert ratio_cut(codes, pencil, cons) == pytest.approx(expected, rel=1e-9)
