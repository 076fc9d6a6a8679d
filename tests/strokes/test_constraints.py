"""segapp.strokes.constraints against explicitly built must-link / cannot-link cliques (FAST-GE §4.7).

The references are dense Laplacians assembled pair by pair: every two stroke pixels i ≠ j are
joined with weight ``constraint_weight · √q_i √q_j · d_i d_j / (d_min d_max)``, in the ML graph
when their labels agree and in the CL graph otherwise. ``d_min`` is the documented robust
choice, the 1st percentile of the degrees (computed here with numpy directly).
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg as sla
import scipy.sparse as sp

from segapp.strokes.constraints import build_constraints, robust_dmin, sparsify
from segapp.strokes.reading import fingerprint, read_strokes
from segapp.errors import InvalidInputError
from segapp.graphs.image import image_graph


pytestmark = pytest.mark.usefixtures("one_blas_thread")


def reference_dmin(degrees: np.ndarray) -> float:
    return float(np.percentile(degrees, 1.0))


def explicit_cliques(scribbles, degrees, weight=1.0, confidence=None):
    """Dense (ML, CL) Laplacians by an explicit double loop over the stroke pixels."""
    lab = np.asarray(scribbles).ravel()
    n = lab.size
    q = np.ones(n) if confidence is None else np.asarray(confidence, float).ravel()
    c = weight / (reference_dmin(degrees) * degrees.max())
    ML, CL = np.zeros((n, n)), np.zeros((n, n))
    for i in range(n):
        if lab[i] == 0:
            continue
        for j in range(n):
            if j == i or lab[j] == 0:
                continue
            w = c * np.sqrt(q[i]) * np.sqrt(q[j]) * degrees[i] * degrees[j]
            M = ML if lab[i] == lab[j] else CL
            M[i, j] -= w
            M[i, i] += w
    return ML, CL


def small_example():
    """A 5×6 image graph (uneven degrees) with three non-contiguous label ids."""
    rng = np.random.default_rng(20)
    img = rng.random((5, 6)).astype(np.float32)
    degrees = image_graph(img, connectivity=8).degrees
    s = np.zeros((5, 6), int)
    s[0, 0:3] = 2
    s[4, 3:6] = 5
    s[1:4, 5] = 7
    s[2, 1] = 7                 # a second, separate stroke of label 7
    return s, degrees


def test_hand_made_example_with_literal_weights():
    # degrees 1..6: d_min = 1st percentile = 1 + 0.01·5 = 1.05, d_max = 6, c = 1 / 6.3.
    d = np.arange(1.0, 7.0)
    s = np.array([1, 1, 0, 2, 0, 2])
    assert robust_dmin(d) == pytest.approx(1.05)
    cons = build_constraints(s, d)
    assert cons.scale == pytest.approx(1 / 6.3)
    assert cons.label_ids == (1, 2)
    ML = np.zeros((6, 6))
    CL = np.zeros((6, 6))
    for i, j, w in [(0, 1, 1 * 2), (3, 5, 4 * 6)]:                        # same label
        ML[i, j] = ML[j, i] = -w
    for i, j, w in [(0, 3, 1 * 4), (0, 5, 1 * 6), (1, 3, 2 * 4), (1, 5, 2 * 6)]:  # different
        CL[i, j] = CL[j, i] = -w
    for M in (ML, CL):
        M[np.diag_indices(6)] = -M.sum(1)
    np.testing.assert_allclose(cons.ml.toarray() * 6.3, ML, atol=1e-12)
    np.testing.assert_allclose(cons.cl.toarray() * 6.3, CL, atol=1e-12)


@pytest.mark.parametrize("weight", [1.0, 2.5])
def test_ml_and_cl_cliques_match_explicit_double_loops(weight):
    s, d = small_example()
    cons = build_constraints(s, d, constraint_weight=weight)
    ML, CL = explicit_cliques(s, d, weight)
    assert cons.label_ids == (2, 5, 7)
    assert cons.scale == pytest.approx(weight / (reference_dmin(d) * d.max()), rel=1e-12)
    np.testing.assert_allclose(cons.ml.toarray(), ML, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(cons.cl.toarray(), CL, rtol=1e-10, atol=1e-13)
    rng = np.random.default_rng(21)
    X = rng.standard_normal((d.size, 3))
    np.testing.assert_allclose(cons.ml.matmat(X), ML @ X, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(cons.cl.matmat(X), CL @ X, rtol=1e-9, atol=1e-12)
    x = X[:, 0]                                         # a single vector works too
    np.testing.assert_allclose(cons.ml.matmat(x), ML @ x, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(cons.cl.matmat(x), CL @ x, rtol=1e-9, atol=1e-12)
    # add_to accumulates in place
    out = np.ones_like(X)
    res = cons.cl.add_to(out, X)
    assert res is out
    np.testing.assert_allclose(out, 1 + CL @ X, rtol=1e-9, atol=1e-12)


def test_cliques_are_laplacians_of_complementary_graphs():
    s, d = small_example()
    cons = build_constraints(s, d)
    ML, CL = cons.ml.toarray(), cons.cl.toarray()
    lab = s.ravel()
    for M in (ML, CL):
        np.testing.assert_allclose(M, M.T, atol=1e-14)
        np.testing.assert_allclose(M.sum(1), 0, atol=1e-12 * np.abs(M).max())
        assert np.linalg.eigvalsh(M).min() > -1e-10 * np.abs(M).max()       # PSD
    same = lab[:, None] == lab[None, :]
    off = ~np.eye(lab.size, dtype=bool)
    assert np.all(ML[off & ~same] == 0)              # ML only inside a label
    assert np.all(CL[off & same] == 0)               # CL only across labels
    free = lab == 0
    assert np.all(ML[free] == 0) and np.all(CL[free] == 0)
    # Together: the complete graph on the stroke pixels, edge (i, j) weighing c d_i d_j.
    stroked = ~free
    c = cons.scale
    W = -(ML + CL)
    i, j = np.nonzero(np.outer(stroked, stroked) & off)
    np.testing.assert_allclose(W[i, j], c * d[i] * d[j], rtol=1e-10)
    np.testing.assert_allclose(cons.weights, np.where(stroked, d, 0.0))


def test_robust_dmin_ignores_a_few_isolated_pixels():
    d = np.r_[np.full(999, 4.0), 1e-4]          # one pixel cut off by the weight floor
    assert robust_dmin(d) == pytest.approx(np.percentile(d, 1.0))
    assert robust_dmin(d) > 1.0 and d.min() == 1e-4
    s = np.zeros(1000, int)
    s[:3], s[500:503] = 1, 2
    cons = build_constraints(s, d)
    assert cons.scale == pytest.approx(1 / (robust_dmin(d) * 4.0))


def test_soft_constraints_scale_weights_by_root_confidences():
    s, d = small_example()
    rng = np.random.default_rng(22)
    q = rng.uniform(0.1, 1.0, s.shape)
    cons = build_constraints(s, d, confidence=q)
    ML, CL = explicit_cliques(s, d, 1.0, q)
    np.testing.assert_allclose(cons.ml.toarray(), ML, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(cons.cl.toarray(), CL, rtol=1e-10, atol=1e-13)
    X = rng.standard_normal((d.size, 2))
    np.testing.assert_allclose(cons.ml.matmat(X), ML @ X, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(cons.cl.matmat(X), CL @ X, rtol=1e-9, atol=1e-12)
    # Confidence 1 is the hard case; a uniform q inside one stroke multiplies its ML weights
    # by q and its CL weights to q = 1 strokes by √q.
    hard = build_constraints(s, d)
    np.testing.assert_allclose(build_constraints(s, d, confidence=np.ones(s.shape)).ml.toarray(),
                               hard.ml.toarray())
    q = np.ones(s.shape)
    q[s == 2] = 0.25
    soft = build_constraints(s, d, confidence=q)
    i2, i5 = np.flatnonzero(s.ravel() == 2), np.flatnonzero(s.ravel() == 5)
    Ms, Mh = soft.ml.toarray(), hard.ml.toarray()
    np.testing.assert_allclose(Ms[i2[0], i2[1]], 0.25 * Mh[i2[0], i2[1]], rtol=1e-12)
    np.testing.assert_allclose(Ms[i5[0], i5[1]], Mh[i5[0], i5[1]], rtol=1e-12)
    Cs, Ch = soft.cl.toarray(), hard.cl.toarray()
    np.testing.assert_allclose(Cs[i2[0], i5[0]], 0.5 * Ch[i2[0], i5[0]], rtol=1e-12)


@pytest.mark.parametrize("confidence", [np.full(7, 0.5), np.full((5, 6), 1.5),
                                        np.full((5, 6), -0.1), np.full((5, 6), np.nan)])
def test_bad_confidence_raises(confidence):
    s, d = small_example()
    with pytest.raises(InvalidInputError):
        build_constraints(s, d, confidence=confidence)


@pytest.mark.parametrize("weight", [0.0, -1.0, np.nan, np.inf])
def test_bad_constraint_weight_raises(weight):
    s, d = small_example()
    with pytest.raises(InvalidInputError):
        build_constraints(s, d, constraint_weight=weight)


# -- sparsify --------------------------------------------------------------------------------
def test_sparsify_is_exact_for_strokes_of_two_and_three_pixels():
    d = np.random.default_rng(23).uniform(1, 3, 40)
    s = np.zeros(40, int)
    s[[3, 17]] = 4                 # an edge
    s[[5, 6, 30]] = 9              # a triangle
    s[11] = 6                      # a single pixel: no ML edge at all
    cons = build_constraints(s, d)
    ML, _ = explicit_cliques(s, d)
    np.testing.assert_allclose(sparsify(cons, 40).toarray(), ML, rtol=1e-12, atol=1e-15)


def test_sparsify_is_a_laplacian_within_each_stroke_set():
    rng = np.random.default_rng(24)
    n = 500
    d = rng.uniform(1, 3, n)
    s = np.zeros(n, int)
    s[rng.choice(n, 120, replace=False)] = rng.integers(1, 4, 120)
    cons = build_constraints(s, d)
    Ls = sparsify(cons, n)
    assert sp.issparse(Ls) and Ls.shape == (n, n)
    assert abs(Ls - Ls.T).max() == 0
    np.testing.assert_allclose(Ls @ np.ones(n), 0, atol=1e-12 * abs(Ls).max())
    off = sp.triu(Ls, 1).tocoo()
    assert np.all(off.data < 0)
    assert np.all(s[off.row] == s[off.col]) and np.all(s[off.row] > 0)   # within one label
    # deterministic: the same strokes give the same edges
    assert abs(sparsify(cons, n) - Ls).max() == 0


def test_sparsify_matches_the_clique_in_expectation():
    # The same 8-pixel stroke pattern at 400 positions: each position seeds its own random
    # cycles, and the degrees repeat with the pattern, so the clique is the same each time.
    t, period, reps = 8, 10, 400
    base = np.array([0, 1, 2, 4, 5, 7, 8, 9])
    pattern_d = np.linspace(1.0, 3.0, period)
    n = period * (reps + 1)
    d = np.tile(pattern_d, reps + 1)
    other = np.array([n - 1])             # a second label far away (cons need two labels)
    dS = pattern_d[base]
    c = 1.0 / (reference_dmin(d) * d.max())
    ref = -c * np.outer(dS, dS)                      # the clique's off-diagonal entries
    total = np.zeros((t, t))
    for r in range(reps):
        s = np.zeros(n, int)
        S = r * period + base
        s[S] = 1
        s[other] = 2
        cons = build_constraints(s, d)
        if r == 0:   # the reference is the exact clique of build_constraints
            E = np.zeros((n, t))
            E[S, np.arange(t)] = 1.0
            exact = cons.ml.matmat(E)[S]
            off = ~np.eye(t, dtype=bool)
            np.testing.assert_allclose(exact[off], ref[off], rtol=1e-10)
        total += sparsify(cons, n)[S][:, S].toarray()
    mean = total / reps
    # each off-diagonal entry: mean w·(7/8)·Bin(4, 2/7) over 400 draws, relative sd ≈ 0.04
    off = ~np.eye(t, dtype=bool)
    np.testing.assert_allclose(mean[off], ref[off], rtol=0.2)
    rel = np.abs(mean[off] - ref[off]) / np.abs(ref[off])
    assert rel.mean() < 0.06


def test_sparsify_quadratic_form_close_on_smooth_vectors_and_spectrally_close():
    rng = np.random.default_rng(25)
    H, W = 40, 50
    n = H * W
    d = rng.uniform(1.0, 3.0, n)
    s = np.zeros((H, W), int)
    s[5:9, 5:45] = 1            # 160 pixels
    s[30:34, 10:40] = 2         # 120 pixels
    cons = build_constraints(s, d)
    ML = cons.ml.toarray()
    Ls = sparsify(cons, n).toarray()
    yy, xx = np.mgrid[:H, :W] / 50.0
    for x in (xx.ravel(), yy.ravel(), np.sin(3 * xx + 2 * yy).ravel(), (xx * yy).ravel()):
        e, a = x @ ML @ x, x @ Ls @ x
        assert a == pytest.approx(e, rel=0.2)
    # As a preconditioner graph it must be spectrally close to the clique on each stroke
    # set (modulo the constants): a union of 4 random cycles is an expander.
    for lab in (1, 2):
        idx = np.flatnonzero(s.ravel() == lab)
        Q = sla.null_space(np.ones((1, idx.size)))
        A = Q.T @ Ls[np.ix_(idx, idx)] @ Q
        B = Q.T @ ML[np.ix_(idx, idx)] @ Q
        ev = sla.eigh(A, B, eigvals_only=True)
        assert 0.15 < ev.min() and ev.max() < 2.5


def test_sparsify_memory_is_linear_in_stroke_pixels():
    nnz = {}
    for t in (50, 200, 800):
        for n in (2000, 20000):
            d = np.ones(n)
            s = np.zeros(n, int)
            s[:t] = 1
            s[1000:1000 + t // 2] = 2
            Ls = sparsify(build_constraints(s, d), n)
            nnz[t, n] = Ls.nnz
            t_all = t + t // 2
            assert 3 * t_all <= Ls.nnz <= 9 * t_all     # ≤ 8 cycle neighbours + diagonal
        assert nnz[t, 2000] == nnz[t, 20000]             # independent of the image size
    assert nnz[800, 2000] / nnz[50, 2000] == pytest.approx(16, rel=0.1)


def test_sparsify_keeps_the_edges_of_unchanged_strokes():
    d = np.random.default_rng(26).uniform(1, 3, 300)
    s = np.zeros(300, int)
    s[10:60], s[100:150] = 1, 2
    before = sparsify(build_constraints(s, d), 300).toarray()
    s2 = s.copy()
    s2[200:220] = 2                                      # only label 2 changes
    after = sparsify(build_constraints(s2, d), 300).toarray()
    idx1 = np.arange(10, 60)
    np.testing.assert_array_equal(after[np.ix_(idx1, idx1)], before[np.ix_(idx1, idx1)])


# -- stroke validation -----------------------------------------------------------------------
def test_read_strokes_returns_sorted_ids_and_flat_indices():
    s = np.array([[0, 7, 7], [2, 0, 5], [5, 0, 2]])
    strokes = read_strokes(s, 9)
    ids, sets = strokes.label_ids, strokes.sets
    assert ids == (2, 5, 7) and strokes.k == 3 and strokes.count == 6 and not strokes.soft
    assert all(np.array_equal(w, np.ones(2)) for w in strokes.weights)
    np.testing.assert_array_equal(sets[0], [3, 8])
    np.testing.assert_array_equal(sets[1], [5, 6])
    np.testing.assert_array_equal(sets[2], [1, 2])
    # integer-valued floats are label maps once checked where they enter (the one validator)
    from segapp.errors import InvalidInputError
    from segapp.inputs.checks import check_label_map
    floats = read_strokes(check_label_map(s.astype(np.float32), s.shape), 9)
    assert floats.label_ids == ids and all(np.array_equal(a, b)
                                           for a, b in zip(floats.sets, sets))
    with pytest.raises(InvalidInputError, match="check_label_map"):
        read_strokes(s.astype(np.float32), 9)              # unchecked: refused, not guessed


def test_read_strokes_weights_are_the_root_of_the_confidence():
    s = np.array([0, 1, 1, 2])
    strokes = read_strokes(s, 4, np.array([1.0, 0.25, 1.0, 0.64]))
    assert strokes.soft
    np.testing.assert_allclose(strokes.weights[0], [0.5, 1.0])
    np.testing.assert_allclose(strokes.weights[1], [0.8])
    # build_constraints takes the strokes read or reads a map itself, with the same result
    d = np.arange(1.0, 5.0)
    a = build_constraints(strokes, d)
    b = build_constraints(s, d, confidence=np.array([1.0, 0.25, 1.0, 0.64]))
    np.testing.assert_array_equal(a.ml.toarray(), b.ml.toarray())
    assert a.strokes is strokes and a.label_ids == (1, 2)


def test_fingerprint_tells_stroke_sets_apart():
    a, b = np.array([1, 2, 3]), np.array([1, 2, 4])
    assert fingerprint(a) == fingerprint(a.copy()) != fingerprint(b)
    assert len(fingerprint(a)) == 16 and len(fingerprint(a, digest_size=8)) == 8


@pytest.mark.parametrize("scribbles, n, message", [
    pytest.param(np.zeros((3, 4), int), 12, "no strokes", id="no-strokes"),
    pytest.param(np.r_[0, 3, 3, 0], 4, "only label 3", id="one-label"),
    pytest.param(np.r_[0, 1, 2, 1.0], 4, "integer label map", id="unchecked-float"),
    pytest.param(np.r_[0, 1, 2], 4, "pixels", id="wrong-size"),
    pytest.param(np.zeros((2, 3), int) + 1, 5, "pixels", id="wrong-size-2d"),
])
def test_read_strokes_errors(scribbles, n, message):
    with pytest.raises(InvalidInputError, match=message):
        read_strokes(scribbles, n)
    with pytest.raises(InvalidInputError):
        build_constraints(scribbles, np.ones(n))


@pytest.mark.parametrize("scribbles, message", [
    pytest.param(np.r_[0, 1, 2, -1], "negative", id="negative"),
    pytest.param(np.r_[0, 1, 2, 1.5], "integer", id="non-integer-float"),
    pytest.param(np.r_[0, 1, 2, np.nan], "integer", id="nan"),
])
def test_a_methods_update_refuses_bad_label_values(scribbles, message):
    """Values are checked where a map enters (check_label_map): Method.update."""
    from segapp.methods.ncut import NCut
    g = np.ones((4, 4)) - np.eye(4)
    m = NCut.from_data(graph=g)
    with pytest.raises(InvalidInputError, match=message):
        m.update(scribbles)
