"""segapp.partition.kmeans on tiny cases against brute force: k-means and anchored k-means
against every assignment; the stable variant's choice between two optima; cancellation."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.cluster.vq import vq
from hypothesis import given, settings
from hypothesis import strategies as st

from segapp.errors import Cancelled
from segapp.partition.kmeans import (_argmin_rows, _lloyd_anchored, _moved_sums,
                                     anchored_kmeans, kmeans, nearest_prototypes,
                                     stable_anchored_kmeans)
from segapp.partition.labels import label_sums, stroke_agreement

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


# -- the vectorised steps against plain references -----------------------------------------
@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), p=st.integers(1, 12), N=st.integers(1, 300))
def test_argmin_rows_is_numpy_argmin_ties_to_the_first(seed, p, N):
    """The running minimum over the p rows: np.argmin(D, axis=0), ties (many, with small
    integers) to the first row, infinities included."""
    rng = np.random.default_rng(seed)
    D = rng.integers(0, 3, (p, N)).astype(float)
    D[rng.random((p, N)) < 0.1] = np.inf
    np.testing.assert_array_equal(_argmin_rows(D), np.argmin(D, axis=0))
    D[rng.random((p, N)) < 0.2] = np.nan                # never nearest while a number is
    want = np.argmin(np.where(np.isnan(D), np.inf, D), axis=0)
    np.testing.assert_array_equal(_argmin_rows(D), want)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), p=st.integers(1, 8), m=st.integers(1, 6))
def test_nearest_prototypes_is_the_brute_force_nearest(seed, p, m):
    """Nearest prototype by ‖x − c‖² over all, and over the allowed ones for barred rows."""
    rng = np.random.default_rng(seed)
    X, C = rng.standard_normal((200, m)), rng.standard_normal((p, m))
    dist = ((X[:, None, :] - C[None, :, :]) ** 2).sum(-1)
    np.testing.assert_array_equal(nearest_prototypes(X, C), np.argmin(dist, axis=1))
    rows = np.sort(rng.choice(200, 50, replace=False))
    barred = rng.random((50, p)) < 0.5
    barred[np.arange(50), rng.integers(0, p, 50)] = False        # one allowed at least
    want = np.argmin(dist, axis=1)
    want[rows] = np.argmin(np.where(barred, np.inf, dist[rows]), axis=1)
    np.testing.assert_array_equal(nearest_prototypes(X, C, rows=rows, barred=barred), want)


def reference_lloyd(X, w, fixed_at, centres, owner, iterations):
    """Lloyd's iteration as first written: scipy's vq, then the stroke rows among their own
    label's prototypes, then each prototype the weighted mean of its rows."""
    centres = centres.copy()
    codes = None
    fixed = fixed_at >= 0
    for _ in range(iterations):
        new, _ = vq(X, centres)
        bad = fixed & (owner[new] != fixed_at)
        for a in np.unique(fixed_at[bad]):
            own = np.flatnonzero(owner == a)
            rows = np.flatnonzero(bad & (fixed_at == a))
            new[rows] = own[vq(X[rows], centres[own])[0]]
        if codes is not None and np.array_equal(new, codes):
            break
        codes = new
        for j in range(len(centres)):
            sel = codes == j
            if w[sel].sum() > 0:
                centres[j] = (w[sel, None] * X[sel]).sum(0) / w[sel].sum()
    return centres


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), k=st.integers(2, 5), extra=st.integers(0, 3),
       tail=st.booleans())
def test_lloyd_anchored_matches_the_reference_iteration(seed, k, extra, tail):
    """Same prototypes as the plain iteration (to rounding), with prototypes owned by labels,
    stroke rows anywhere or in a trailing block (the sample's layout), weights, and a
    prototype that empties."""
    rng = np.random.default_rng(seed)
    N, m = 400, 3
    X = rng.standard_normal((N, m)) + rng.integers(0, k, N)[:, None] * 2.0
    w = rng.uniform(0.5, 2.0, N)
    fixed_at = np.full(N, -1)
    t = 40
    where = np.arange(N - t, N) if tail else rng.choice(N, t, replace=False)
    fixed_at[where] = rng.integers(0, k, t)
    owner = np.r_[np.arange(k), rng.integers(0, k, extra)]
    centres = rng.standard_normal((k + extra, m)) * 3.0
    centres[-1] = 1e6                                              # empties at once
    got = _lloyd_anchored(X, w, fixed_at, centres, owner, 50, lambda: None)
    np.testing.assert_allclose(got, reference_lloyd(X, w, fixed_at, centres, owner, 50),
                               rtol=1e-12, atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), k=st.integers(1, 6))
def test_label_sums_and_moved_sums_are_the_per_label_sums(seed, k):
    rng = np.random.default_rng(seed)
    U = rng.standard_normal((300, 4))
    before, after = rng.integers(0, k, 300), rng.integers(0, k, 300)
    same = rng.random(300) < 0.7
    after[same] = before[same]
    for codes in (before, after):
        mass, sums = label_sums(U, codes, k)
        np.testing.assert_array_equal(mass, [np.count_nonzero(codes == a) for a in range(k)])
        np.testing.assert_allclose(sums, [U[codes == a].sum(0) for a in range(k)], atol=1e-12)
        # to the bit what np.bincount (and np.add.at) add: the rounding rule relies on it
        np.testing.assert_array_equal(sums, np.stack(
            [np.bincount(codes, weights=U[:, j], minlength=k) for j in range(4)], 1))
    mass, sums = _moved_sums(U, before, after, *label_sums(U, before, k))
    np.testing.assert_array_equal(mass, [np.count_nonzero(after == a) for a in range(k)])
    np.testing.assert_allclose(sums, [U[after == a].sum(0) for a in range(k)], atol=1e-12)


def reference_stable(U, sets, previous, objective, gate, seed):
    """stable_anchored_kmeans's rule in its first order: the gate first, then the previous
    answer's run, the smaller within-label sum of squares (computed directly) winning."""
    rng = np.random.default_rng(seed)
    k = len(sets)
    codes, _, _ = anchored_kmeans(U, sets, rng=rng)
    if objective(previous) > gate * objective(codes):
        return codes
    seeds = np.array([U[previous == a].mean(axis=0) for a in range(k)])
    other, _, _ = anchored_kmeans(U, sets, seeds=seeds, rng=rng)

    def within(c):
        return sum(((U[c == a] - U[c == a].mean(0)) ** 2).sum() for a in range(k)
                   if np.any(c == a))
    if (within(other) < within(codes)
            and stroke_agreement(other, sets).min() >= stroke_agreement(codes, sets).min()):
        return other
    return codes


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), k=st.integers(2, 4))
def test_stable_anchored_kmeans_follows_its_rule(seed, k):
    """The same answer as the rule evaluated in its first order (gate, run, full sums of
    squares), on overlapping clusters where the two runs often differ, with a previous
    answer near or far, and an objective that sometimes shuts the gate."""
    rng = np.random.default_rng(seed)
    n = 600
    truth = rng.integers(0, k, n)
    U = rng.standard_normal((n, 2)) * 1.2 + 2.0 * np.c_[np.cos(truth), np.sin(truth)]
    sets = [rng.choice(np.flatnonzero(truth == a), 3, replace=False) for a in range(k)]
    previous = truth.copy() if rng.random() < 0.7 else rng.integers(0, k, n)
    for a, S in enumerate(sets):
        previous[S] = a
    costs = {}

    def objective(c):
        key = c.tobytes()
        return costs.setdefault(key, float(rng.uniform(0.5, 60.0)))
    want = reference_stable(U, sets, previous, objective, 30.0, seed)
    got = stable_anchored_kmeans(U, sets, previous, gate=30.0,
                                 objective=lambda cs: [objective(c) for c in cs],
                                 rng=np.random.default_rng(seed))
    np.testing.assert_array_equal(got, want)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), k=st.integers(2, 4), local=st.booleans())
def test_stable_anchored_kmeans_keeps_a_better_previous_answer_or_local_move(seed, k, local):
    """``keep_better`` / ``contradicting`` (issue 31): the plain stable answer, replaced by the
    local move (segapp.partition.local) where its objective is at most the answer's, then
    by the previous answer where its objective is lower still (random objectives)."""
    import scipy.sparse as sp

    from segapp.partition.local import local_move

    rng = np.random.default_rng(seed)
    n = 300
    truth = rng.integers(0, k, n)
    U = rng.standard_normal((n, 2)) * 1.2 + 2.0 * np.c_[np.cos(truth), np.sin(truth)]
    sets = [rng.choice(np.flatnonzero(truth == a), 3, replace=False) for a in range(k)]
    raw = rng.integers(0, k, n)
    contradicting = np.zeros(n, bool)
    for a, S in enumerate(sets):
        contradicting[S[raw[S] != a]] = True
    previous = raw.copy()
    for a, S in enumerate(sets):
        previous[S] = a
    idx = np.arange(n - 1)
    W = sp.csr_matrix((np.ones(n - 1), (idx, idx + 1)), shape=(n, n))
    L = (sp.diags(np.asarray((W + W.T).sum(1)).ravel()) - W - W.T).tocsr()
    costs = {}

    def objective(cs):
        return [costs.setdefault(c.tobytes(), float(rng.uniform(0.5, 60.0))) for c in cs]

    plain = stable_anchored_kmeans(U, sets, previous, objective=objective,
                                   rng=np.random.default_rng(seed))
    got = stable_anchored_kmeans(U, sets, previous, objective=objective,
                                 rng=np.random.default_rng(seed), keep_better=True,
                                 contradicting=contradicting if local else None, laplacian=L)
    want = plain
    if local:
        moved = local_move(previous, plain, contradicting, L)
        if objective([moved])[0] <= objective([plain])[0]:
            want = moved
    if objective([previous])[0] < objective([want])[0]:
        want = previous
    np.testing.assert_array_equal(got, want)
