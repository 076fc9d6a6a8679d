"""Refinement stability (issue 10, item 4): FAST-GE's objective and the keep-better rule."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg as sla
import scipy.sparse as sp

import segapp
from segapp.constraints import build_constraints
from segapp.partition import keep_better, ratio_cut
from segapp.pencil import Pencil


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


def test_keep_better_keeps_the_cheaper_cut_with_the_strokes_painted_in():
    pencil, cons, rng = small_problem(3, k=2)
    good = np.zeros(pencil.n, np.int64)
    for a, S in enumerate(cons.sets):
        good[S] = a
    # a better partition by the objective: the sweep of FAST-GE's own second vector
    LG, LH = pencil.dense()
    d = pencil.degrees
    P = np.eye(pencil.n) - np.outer(np.ones(pencil.n), d) / d.sum()
    w, V = sla.eigh(P.T @ LG @ P, P.T @ LH @ P + 1e-12 * np.eye(pencil.n))
    best = (V[:, 0] > np.median(V[:, 0])).astype(np.int64)
    for a, S in enumerate(cons.sets):
        best[S] = a
    worse = rng.integers(0, 2, pencil.n)
    r_best, r_worse = ratio_cut(best, pencil, cons), ratio_cut(worse, pencil, cons)
    if r_best > r_worse:
        best, worse, r_best, r_worse = worse, best, r_worse, r_best
    assert r_best < r_worse
    # the previous answer is better: it is kept, strokes painted in
    codes, kept = keep_better(worse, best, pencil, cons)
    assert kept and np.array_equal(codes, best)
    # the new cut is better: it stands
    codes, kept = keep_better(best, worse, pencil, cons)
    assert not kept and np.array_equal(codes, best)
    # no previous answer
    assert keep_better(worse, None, pencil, cons) == (worse, False)


def test_keep_better_is_off_for_new_options_and_removed_strokes():
    """The rule only applies after strokes were added: the same strokes with new options, or
    strokes taken away (undo), give exactly what a fresh solve gives."""
    rng = np.random.default_rng(0)
    img = np.zeros((30, 40, 3), np.float32)
    img[:, 20:] = 0.8
    img += rng.normal(0, 0.05, img.shape).astype(np.float32)
    img = np.clip(img, 0, 1)
    s = np.zeros((30, 40), np.int32)
    s[5:25, 5] = 1
    s[5:25, 35] = 2
    more = s.copy()
    more[10, 10:15] = 1
    sess = segapp.Session(img)
    sess.update(s)
    sess.update(more)
    again = sess.update(s)                                   # strokes removed
    fresh = segapp.segment(img, s)
    assert np.array_equal(again.labels, fresh.labels)
    changed = sess.update(s, constraint_weight=2.0)          # same strokes, new option
    assert np.array_equal(changed.labels, segapp.segment(img, s, constraint_weight=2.0).labels)
