"""segapp.partition.sweep: the Cheeger sweep against every prefix's cut ratio from the dense
pencil (with and without a previous answer), and FAST-GE's ratio cut against its definition."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from segapp.graphs import graph_from_adjacency
from segapp.graphs.weighted import laplacian
from segapp.partition.colour_model import (ImageColours, partition_colour_cost,
                                           strokes_differ_in_colour)
from segapp.partition.sweep import (SWEEP_MIN_WINDOW, SWEEP_TOLERANCE, ratio_cut, ratio_cuts,
                                    region_cuts, sweep_cut)
from segapp.solve.pencil import Pencil
from segapp.strokes.constraints import build_constraints

pytestmark = pytest.mark.usefixtures("one_blas_thread")


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


def every_prefix(order, score):
    """``score`` of the indicator vector of every prefix of ``order`` (lengths 1 … n − 1)."""
    out = []
    for p in range(1, len(order)):
        ind = np.zeros(len(order))
        ind[order[:p]] = 1
        out.append(score(ind))
    return out


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
    ratios = every_prefix(order, lambda ind: (ind @ LG @ ind) / (ind @ LH @ ind))
    mask = sweep_cut(x, pencil, cons)
    expected = np.zeros(n, bool)
    expected[order[:int(np.argmin(ratios)) + 1]] = True
    got = mask.astype(float)
    assert (got @ LG @ got) / (got @ LH @ got) == pytest.approx(min(ratios), rel=1e-9)
    if np.sort(ratios)[1] > min(ratios) * (1 + 1e-9):      # a unique best prefix
        np.testing.assert_array_equal(mask, expected)


def two_stroke_problem(seed: int, n: int):
    """A random tiny graph with one stroke pixel of each of two labels, its pencil and the
    pencil's dense pair."""
    rng = np.random.default_rng(seed)
    g = tiny_graph(rng, n)
    lab = np.zeros(n, int)
    lab[rng.choice(n, 2, replace=False)] = [1, 2]
    cons = build_constraints(lab, g.degrees)
    pencil = Pencil.from_constraints(g.laplacian, g.degrees, cons)
    return rng, g, cons, pencil, pencil.dense()


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(5, 70),
       tolerance=st.sampled_from([1.0, 1.5, 3.0]), gate=st.sampled_from([np.inf, 30.0, 3.0]))
def test_sweep_cut_with_a_previous_answer_is_the_closest_near_best_prefix(seed, n, tolerance,
                                                                          gate):
    """Refinement stability (issue 10): among the prefixes whose dense-pencil ratio is within
    ``tolerance`` of the best and a local minimum (the smallest window), the one agreeing with the
    previous answer on the most vertices (brute force over every prefix); tolerance 1 is the
    plain sweep. If the previous answer's own ratio is over ``gate`` × the best, the best
    prefix (the plain sweep)."""
    rng, g, cons, pencil, (LG, LH) = two_stroke_problem(seed, n)
    x = rng.standard_normal(n)
    previous = rng.random(n) < 0.5
    order = np.argsort(x, kind="stable")
    prefixes = every_prefix(order, lambda ind: ((ind @ LG @ ind) / (ind @ LH @ ind),
                                                int(np.sum((ind > 0) == previous))))
    best = min(r for r, _ in prefixes)
    ratios = [r for r, _ in prefixes]
    w = max(1, min(SWEEP_MIN_WINDOW, n // 10))              # window=0: the smallest window
    local = [r <= min(ratios[max(p - w, 0):p + w + 1]) for p, r in enumerate(ratios)]
    near = [(r, agree) for (r, agree), lm in zip(prefixes, local)
            if lm and r <= tolerance * best * (1 + 1e-9)]
    mask = sweep_cut(x, pencil, cons, previous=previous, tolerance=tolerance, window=0.0,
                     gate=gate)
    got = mask.astype(float)
    assert np.all(mask[order[:mask.sum()]])                  # a prefix
    old = previous.astype(float)
    if (old @ LG @ old) / max(old @ LH @ old, 1e-300) > gate * best * (1 + 1e-9):
        np.testing.assert_array_equal(mask, sweep_cut(x, pencil, cons))
        return
    assert (got @ LG @ got) / (got @ LH @ got) <= tolerance * best * (1 + 1e-9)
    assert np.sum(mask == previous) == max(agree for _, agree in near)
    if tolerance == 1.0 and sorted(r for r, _ in prefixes)[1] > best * (1 + 1e-9):
        np.testing.assert_array_equal(mask, sweep_cut(x, pencil, cons))


def test_sweep_cut_keeps_the_previous_side_of_a_near_equal_cut():
    """A path a–b–c–d–e with strokes at the ends and two weak links of nearly equal weight:
    alone the sweep cuts the cheaper link; after an answer that cut the other one, it keeps
    that answer (within the default tolerance) instead of jumping, unless that cut costs more
    than the tolerance allows."""
    lab = np.array([1, 0, 0, 0, 2])
    x = np.arange(5.0)
    previous = np.array([1, 1, 1, 1, 0], bool)   # the last answer cut d–e

    def path(d_e: float):
        w = np.array([1.0, 0.010, 1.0, d_e])     # links a-b, b-c, c-d, d-e
        g = graph_from_adjacency(sp.diags([w, w], [1, -1], shape=(5, 5)).tocsr())
        cons = build_constraints(lab, g.degrees)
        return Pencil.from_constraints(g.laplacian, g.degrees, cons), cons

    pencil, cons = path(0.011)
    np.testing.assert_array_equal(sweep_cut(x, pencil, cons), [1, 1, 0, 0, 0])
    np.testing.assert_array_equal(sweep_cut(x, pencil, cons, previous=previous),
                                  [1, 1, 1, 1, 0])
    pencil, cons = path(0.010 * 2 * SWEEP_TOLERANCE)                  # d–e far dearer
    np.testing.assert_array_equal(sweep_cut(x, pencil, cons, previous=previous),
                                  [1, 1, 0, 0, 0])


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


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), k=st.integers(2, 5), q=st.integers(1, 3))
def test_ratio_cuts_of_several_partitions_are_each_ones_dense_quotients(seed, k, q):
    """ratio_cuts([c_1 … c_q]) = [Σ_a x_aᵀL_G x_a / x_aᵀL_H x_a for each c_p] (dense pencil),
    whatever the partitions (labels left empty, partitions equal or far apart)."""
    pencil, cons, rng = small_problem(seed, k=k)
    LG, LH = pencil.dense()
    partitions = [rng.integers(0, k, pencil.n) for _ in range(q)]
    if q > 1 and rng.random() < 0.3:
        partitions[1] = partitions[0].copy()
    expected = []
    for codes in partitions:
        total = 0.0
        for a in range(k):
            x = (codes == a).astype(float)
            total += (x @ LG @ x) / max(x @ LH @ x, np.finfo(float).tiny)
        expected.append(total)
    got = ratio_cuts(partitions, pencil, cons)
    np.testing.assert_allclose(got, expected, rtol=1e-9)
    for codes, value in zip(partitions, got):
        assert ratio_cut(codes, pencil, cons) == pytest.approx(value, rel=1e-12)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), k=st.integers(1, 6), q=st.integers(1, 3))
def test_region_cuts_are_the_weights_of_the_edges_leaving_each_region(seed, k, q):
    """region_cuts(L, …)[p, a] = Σ_{i ∈ S_a, j ∉ S_a} w_ij by brute force over the edges, and
    = x_aᵀ L x_a, for random graph Laplacians (isolated vertices included)."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 40))
    W = sp.random(n, n, density=0.3, random_state=seed, data_rvs=lambda m: rng.uniform(0, 1, m))
    W = sp.triu(W, 1)
    W = (W + W.T).tocsr()
    L = laplacian(W)
    partitions = [rng.integers(0, k, n) for _ in range(q)]
    got = region_cuts(L, partitions, k)
    dense = L.toarray()
    for p, codes in enumerate(partitions):
        for a in range(k):
            inside = codes == a
            leaving = -dense[np.ix_(inside, ~inside)].sum()
            assert got[p, a] == pytest.approx(leaving, rel=1e-12, abs=1e-12)
            x = inside.astype(float)
            assert got[p, a] == pytest.approx(x @ dense @ x, rel=1e-9, abs=1e-9)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(5, 40), local=st.booleans())
def test_sweep_cut_keeps_a_better_previous_answer_or_local_move(seed, n, local):
    """``keep_better`` / ``contradicting`` (issue 31), from the dense pencil: the plain
    stable prefix, replaced by the local move (segapp.partition.local) where its ratio is at
    most the best prefix's, then by the previous answer where its ratio is lower than both."""
    from segapp.partition.local import local_move

    rng, g, cons, pencil, (LG, LH) = two_stroke_problem(seed, n)

    def ratio(side):
        ind = side.astype(float)
        return (ind @ LG @ ind) / max(ind @ LH @ ind, 1e-300)

    x = rng.standard_normal(n)
    raw = rng.random(n) < 0.5
    low = cons.sets[0] if rng.random() < 0.5 else cons.sets[1]   # the side's strokes
    contradicting = np.zeros(n, bool)
    contradicting[low[~raw[low]]] = True
    previous = raw.copy()
    previous[low] = True
    previous[np.setdiff1d(np.concatenate(cons.sets), low)] = False
    order = np.argsort(x, kind="stable")
    best = min(ratio(np.isin(np.arange(n), order[:p])) for p in range(1, n))
    plain = sweep_cut(x, pencil, cons, previous=previous, gate=np.inf)
    got = sweep_cut(x, pencil, cons, previous=previous, gate=np.inf, keep_better=True,
                    contradicting=contradicting if local else None)
    want = plain
    if local:
        moved = local_move(previous, plain, contradicting, g.laplacian)
        if ratio(moved) <= best * (1 + 1e-12) and not np.array_equal(moved, plain):
            want = moved
    if ratio(previous) < min(best, ratio(want)) * (1 - 1e-12):
        want = previous
    elif ratio(previous) < min(best, ratio(want)) * (1 + 1e-12):
        return                                                     # a tie to rounding
    np.testing.assert_array_equal(got, want)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(6, 14), weight=st.sampled_from([0.5, 3.0]))
def test_balanced_sweep_is_the_best_prefix_by_normalized_cut_times_split_share(seed, n,
                                                                                 weight):
    """``balance=True`` without a previous answer, the strokes' colours differing: every
    prefix's ratio from the dense pencil read as ``cut_G / (cut_K · σ)``: ``cut_K = vol(S)
    vol(S̄) / vol(V)`` from the degrees, and ``σ`` the cannot-link part of ``1ᵀL_H 1`` (its
    ``K/n`` part taken off) over that part's value for a cut that separates the strokes; its
    log plus the weighted colour cost. On one colour, FAST-GE's sweep."""
    rng = np.random.default_rng(seed)
    g = tiny_graph(rng, n)
    lab = np.zeros(n, int)
    picked = rng.choice(n, int(rng.integers(2, 5)), replace=False)
    lab[picked[0]], lab[picked[1]] = 1, 2
    lab[picked[2:]] = rng.integers(1, 3, picked.size - 2)
    cons = build_constraints(lab, g.degrees)
    pencil = Pencil.from_constraints(g.laplacian, g.degrees, cons)
    LG, LH = pencil.dense()
    d = np.asarray(g.degrees, float)
    vol = d.sum()
    colours = rng.normal(0, 10, (n, 3))
    colours[lab == 2] += 200.0                   # the strokes of two colours
    image = ImageColours(colours, np.full(3, 10.0))   # the noise as drawn
    assert strokes_differ_in_colour(image, cons.sets)

    def parts(ind):
        cut_k = (d @ ind) * (vol - d @ ind) / vol
        return ind @ LG @ ind, cut_k, ind @ LH @ ind - cut_k / n

    _, _, separated = parts((lab == 1).astype(float))
    x = rng.standard_normal(n)
    order = np.argsort(x, kind="stable")

    def balanced(ind):
        cut_g, cut_k, cl = parts(ind)
        return (np.log(cut_g / (cut_k * max(cl / separated, 1e-12)))
                + weight * partition_colour_cost(colours, ind > 0))

    scores = every_prefix(order, balanced)
    kw = {"colours": image, "colour_weight": weight}
    mask = sweep_cut(x, pencil, cons, balance=True, **kw)
    got = int(mask.sum())
    assert np.all(mask[order[:got]])
    assert scores[got - 1] == pytest.approx(min(scores), abs=1e-9)
    # a previous answer kept: FAST-GE's ratio; set aside by the gate: as a first answer
    previous = rng.random(n) < 0.5
    np.testing.assert_array_equal(
        sweep_cut(x, pencil, cons, previous=previous, balance=True, gate=np.inf, **kw),
        sweep_cut(x, pencil, cons, previous=previous, gate=np.inf, **kw))
    np.testing.assert_array_equal(
        sweep_cut(x, pencil, cons, previous=previous, balance=True, gate=0.0, **kw), mask)
    # without the colour term the balance does not act
    np.testing.assert_array_equal(sweep_cut(x, pencil, cons, balance=True),
                                  sweep_cut(x, pencil, cons))


def test_balanced_sweep_does_not_shrink_to_the_weakest_edge_next_to_a_stroke():
    """A path of 100 vertices, strokes at both ends, a weak edge (0.05) three vertices from
    one stroke and a less weak one (0.1) in the middle, its halves of two colours. FAST-GE's ratio, its cut_H the same
    for every cut between the strokes, picks the least cut (the three vertices); the balanced
    ratio the middle: 0.05 / (3·97/100) against 0.1 / (50·50/100), by hand, unit degrees
    aside."""
    n = 100
    w = np.ones(n - 1)
    w[2], w[49] = 0.05, 0.1
    g = graph_from_adjacency(sp.csr_matrix(sp.diags([w, w], [1, -1], shape=(n, n))))
    lab = np.zeros(n, int)
    lab[:2], lab[-2:] = 1, 2
    cons = build_constraints(lab, g.degrees)
    pencil = Pencil.from_constraints(g.laplacian, g.degrees, cons)
    x = np.arange(n, dtype=float)
    # the two halves of two colours, weighed too little to move the cut: the balance acts
    # only where the colour term is used
    colours = np.where(np.arange(n)[:, None] < 50, 0.0, 100.0) + np.random.default_rng(
        0).normal(0, 1, (n, 3))
    kw = {"colours": ImageColours.of(colours), "colour_weight": 1e-9}
    assert sweep_cut(x, pencil, cons, **kw).sum() == 3
    assert sweep_cut(x, pencil, cons, balance=True, **kw).sum() == 50
