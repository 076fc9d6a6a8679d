"""segapp.partition.kmeans on tiny cases against brute force: k-means and anchored k-means
against every assignment; the stable variant's choice between two optima; cancellation."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from segapp.errors import Cancelled
from segapp.partition.kmeans import anchored_kmeans, kmeans, stable_anchored_kmeans
from segapp.partition.labels import stroke_agreement

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


def test_stable_anchored_kmeans_keeps_the_previous_optimum_when_it_is_better():
    """Two local optima of anchored k-means: a middle group joins the big left label (where
    the stroke-seeded iteration goes: it is nearer the left stroke) or the small right one
    (smaller within-label sum of squares). Without a previous answer the stroke-seeded one;
    with a previous answer that had it on the right, the better right one; with a previous
    answer on the left, still the left one (worse optima are not kept)."""
    U = np.zeros((16, 2))
    U[10:15, 0] = 2.8                             # the middle group
    U[15, 0] = 6.0                                # the right label: one point
    sets = [np.array([0]), np.array([15])]
    free, _, _ = anchored_kmeans(U, sets)
    assert np.all(free[10:15] == 0)
    right = np.r_[np.zeros(10, int), np.ones(6, int)]
    left = np.r_[np.zeros(15, int), 1]
    np.testing.assert_array_equal(stable_anchored_kmeans(U, sets, None), free)
    np.testing.assert_array_equal(stable_anchored_kmeans(U, sets, right), right)
    np.testing.assert_array_equal(stable_anchored_kmeans(U, sets, left), free)
    # the gate: a previous answer far worse in the method's objective than the fresh one is
    # not a tie to break (an objective by hand: the right optimum 40× dearer, then 20×)
    def dearer(factor):
        return lambda cs: [factor if np.array_equal(c, right) else 1.0 for c in cs]
    np.testing.assert_array_equal(
        stable_anchored_kmeans(U, sets, right, objective=dearer(40.0), gate=30.0), free)
    np.testing.assert_array_equal(
        stable_anchored_kmeans(U, sets, right, objective=dearer(20.0), gate=30.0), right)


def test_cancel_between_restarts():
    U, _ = separated_points(np.random.default_rng(0), 3)
    with pytest.raises(Cancelled):
        kmeans(U, 3, cancel=lambda: True)
    with pytest.raises(Cancelled):
        anchored_kmeans(U, [np.array([0]), np.array([3])], cancel=lambda: True)
