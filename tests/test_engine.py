"""FAST-GE engine against independent references: hand-computed graphs, explicit cliques,
a dense generalized eigensolver, and synthetic images with known regions."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg as sla
import scipy.sparse as sp

import segapp
from segapp.constraints import build_constraints, robust_dmin, sparsify
from segapp.errors import Cancelled, InvalidInputError, SolverError
from segapp.graph import graph_from_adjacency, image_graph, laplacian
from segapp.pencil import Pencil


# -- graph ---------------------------------------------------------------------------------
def test_laplacian_identities():
    rng = np.random.default_rng(0)
    img = rng.random((7, 9, 3)).astype(np.float32)
    for conn in (4, 8):
        L = image_graph(img, connectivity=conn).laplacian
        assert abs(L - L.T).max() < 1e-12
        assert np.abs(L @ np.ones(L.shape[0])).max() < 1e-10
        x = rng.standard_normal(L.shape[0])
        W = -(L - sp.diags(L.diagonal()))
        Wc = sp.triu(W, 1).tocoo()
        explicit = sum(w * (x[i] - x[j]) ** 2 for i, j, w in zip(Wc.row, Wc.col, Wc.data))
        assert x @ L @ x == pytest.approx(explicit, rel=1e-10)


def test_image_graph_weights_by_hand():
    # 2×3 grey image; sigma given, so every weight is exp(-(f_i - f_j)^2 / 2σ²).
    img = np.array([[0.0, 0.1, 0.5], [0.2, 0.2, 1.0]], np.float32)
    sigma = 0.3
    g = image_graph(img, sigma=sigma, connectivity=4)
    W = -(g.laplacian - sp.diags(g.laplacian.diagonal())).toarray()
    f = img.ravel().astype(float)
    expected = np.zeros((6, 6))
    for a, b in [(0, 1), (1, 2), (3, 4), (4, 5), (0, 3), (1, 4), (2, 5)]:
        expected[a, b] = expected[b, a] = max(np.exp(-(f[a] - f[b]) ** 2 / (2 * sigma**2)), 1e-4)
    np.testing.assert_allclose(W, expected, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(g.degrees, expected.sum(1), rtol=1e-5)
    # 8-connectivity adds the four diagonals; radius 2 gives 12 neighbours in the interior.
    assert image_graph(img, sigma=sigma, connectivity=8).laplacian.nnz == 6 + 2 * (7 + 4)
    big = image_graph(np.zeros((9, 9), np.float32), radius=2)
    assert (big.laplacian[40].nnz - 1) == 12


def test_sigma_rule_is_scaled_mean_neighbour_distance():
    img = np.array([[0.0, 0.4], [0.1, 0.1]], np.float32)
    # 4-neighbour edges: |0-.4|, |.1-.1|, |0-.1|, |.4-.1| -> mean 0.2
    assert image_graph(img, connectivity=4).sigma == pytest.approx(0.4 * 0.2, rel=1e-6)
    assert image_graph(img, connectivity=4, sigma_scale=1.0).sigma == pytest.approx(0.2, rel=1e-6)
    # 8-neighbour diagonals: |0-.1| and |.4-.1| -> mean over 6 edges = (0.8 + 0.4) / 6
    assert image_graph(img).sigma == pytest.approx(0.4 * 1.2 / 6, rel=1e-6)
    assert image_graph(np.zeros((3, 3), np.float32)).sigma == 1.0   # flat image


@pytest.mark.parametrize("W, message", [
    (np.ones((2, 3)), "square"),
    (np.array([[0, 1.0], [2.0, 0]]), "symmetric"),
    (np.array([[0, -1.0], [-1.0, 0]]), "non-negative"),
    (np.array([[0, 1.0, 0], [1.0, 0, 0], [0, 0, 0]]), "no edges"),
])
def test_graph_from_adjacency_rejects_bad_input(W, message):
    with pytest.raises(InvalidInputError, match=message):
        graph_from_adjacency(W)


# -- constraints -------------------------------------------------------------------------
def _explicit_cliques(scribbles, degrees, weight=1.0, q=None):
    flat = scribbles.ravel()
    n = flat.size
    dmin, dmax = robust_dmin(degrees), degrees.max()
    q = np.ones(n) if q is None else q.ravel()
    ML, CL = np.zeros((n, n)), np.zeros((n, n))
    idx = np.flatnonzero(flat)
    for i in idx:
        for j in idx:
            if i >= j:
                continue
            w = weight * degrees[i] * degrees[j] / (dmin * dmax) * np.sqrt(q[i] * q[j])
            M = ML if flat[i] == flat[j] else CL
            M[i, j] = M[j, i] = -w
    for M in (ML, CL):
        np.fill_diagonal(M, -M.sum(1))
    return ML, CL


def test_constraint_cliques_match_explicit_double_loop():
    rng = np.random.default_rng(1)
    s = np.zeros((6, 7), int)
    s[0, :3], s[5, 4:], s[2:4, 6] = 2, 5, 9
    degrees = rng.uniform(0.5, 3.0, s.size)
    q = rng.uniform(0.2, 1.0, s.shape)
    for conf in (None, q):
        cons = build_constraints(s, degrees, constraint_weight=2.5, confidence=conf)
        ML, CL = _explicit_cliques(s, degrees, 2.5, conf)
        np.testing.assert_allclose(cons.ml.toarray(), ML, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(cons.cl.toarray(), CL, rtol=1e-10, atol=1e-12)
        X = rng.standard_normal((s.size, 3))
        np.testing.assert_allclose(cons.ml.matmat(X), ML @ X, rtol=1e-9, atol=1e-10)
        assert cons.label_ids == (2, 5, 9)


def test_sparsified_must_link_matches_clique_on_average_and_is_linear_in_size():
    rng = np.random.default_rng(2)
    n = 2000
    s = np.zeros(n, int)
    s[:300], s[1000:1400] = 1, 2
    degrees = rng.uniform(1.0, 2.0, n)
    cons = build_constraints(s, degrees)
    exact = cons.ml.toarray()
    sparse_ml = sparsify(cons, n)
    assert sparse_ml.nnz <= 10 * 700 + n            # O(t): a few edges per stroke pixel
    # The quadratic forms agree on smooth vectors within the randomness of the construction,
    # and exactly in expectation: Laplacian of every test vector has the same mean direction.
    for _ in range(5):
        x = np.cumsum(rng.standard_normal(n)) / 30    # random walk: a "smooth" signal
        e, a = x @ exact @ x, x @ sparse_ml @ x
        assert a == pytest.approx(e, rel=0.35)
    assert np.abs(sparse_ml @ np.ones(n)).max() < 1e-8 * abs(sparse_ml).max()


def test_stroke_validation():
    d = np.ones(12)
    for s, message in [(np.zeros(12), "no strokes"), (np.r_[np.ones(3), np.zeros(9)], "only label 1"),
                       (np.r_[-1, 1, 2, np.zeros(9)], "negative"), (np.r_[1.5, 2, np.zeros(10)], "integer"),
                       (np.r_[1, 2, np.zeros(5)], "pixels")]:
        with pytest.raises(InvalidInputError, match=message):
            build_constraints(s, d)


# -- the generalized eigenproblem against a dense solver ----------------------------------
def _blocks_image(shape=(30, 30), noise=0.05, seed=0):
    rng = np.random.default_rng(seed)
    H, W = shape
    truth = np.zeros(shape, int)
    truth[:, W // 2:] = 1
    truth[H // 2:, :W // 2] = 2
    yy, xx = np.mgrid[:H, :W]
    truth[(yy - 0.7 * H) ** 2 + (xx - 0.75 * W) ** 2 < (0.18 * H) ** 2] = 3
    colours = np.array([[0.8, 0.2, 0.2], [0.2, 0.7, 0.3], [0.2, 0.3, 0.8], [0.9, 0.9, 0.2]])
    img = np.clip(colours[truth] + rng.normal(0, noise, shape + (3,)), 0, 1)
    return img.astype(np.float32), truth


def _strokes(truth, ids=(1, 2, 3, 4)):
    s = np.zeros(truth.shape, int)
    H, W = truth.shape
    for r, lab in enumerate(ids):
        ys, xs = np.nonzero(truth == r)
        cy, cx = int(np.median(ys)), int(np.median(xs))
        # a short horizontal stroke through the region's median point, kept inside it
        for x in range(max(0, cx - 3), min(W, cx + 4)):
            if truth[cy, x] == r:
                s[cy, x] = lab
    return s


def test_eigenpairs_match_dense_generalized_eigh():
    img, truth = _blocks_image()
    s = _strokes(truth)
    res = segapp.segment(img, s, eig_tol=1e-12, res_tol=1e-10, maxiter=500)
    g = image_graph(img)
    cons = build_constraints(s, g.degrees)
    # Independent dense pencil: L_G = L_D + ML, L_H = K/n + CL with K_ij = d_i d_j / vol.
    d = g.degrees
    n = d.size
    K = np.outer(d, d) / d.sum()
    np.fill_diagonal(K, 0)
    LK = np.diag(K.sum(1)) - K
    ML, CL = _explicit_cliques(s, d)
    LG = g.laplacian.toarray() + ML
    LH = LK / n + CL
    # Restrict to dᵀx = 0 (both matrices annihilate the constant vector).
    Q = sla.null_space(d[None, :])
    lam = sla.eigh(Q.T @ LG @ Q, Q.T @ LH @ Q, eigvals_only=True, subset_by_index=[0, 2])
    np.testing.assert_allclose(res.eigenvalues, lam, rtol=1e-6)
    # Pencil.dense() builds the same pair.
    A, B = Pencil.from_constraints(g.laplacian, d, cons).dense()
    np.testing.assert_allclose(A, LG, atol=1e-9 * np.abs(LG).max())
    np.testing.assert_allclose(B, LH, atol=1e-9 * np.abs(LH).max())


def test_B_is_LH_on_degree_orthogonal_vectors():
    img, truth = _blocks_image((12, 14))
    s = _strokes(truth)
    g = image_graph(img)
    pencil = Pencil.from_constraints(g.laplacian, g.degrees, build_constraints(s, g.degrees))
    _, LH = pencil.dense()
    rng = np.random.default_rng(3)
    X = pencil.project(rng.standard_normal((g.n, 4)))
    np.testing.assert_allclose(g.degrees @ X, 0, atol=1e-9)
    np.testing.assert_allclose(pencil.B(X), LH @ X, rtol=1e-8, atol=1e-12)


def test_scipy_eigensolver_gives_the_same_eigenvalues():
    img, truth = _blocks_image()
    s = _strokes(truth)
    ours = segapp.segment(img, s, eig_tol=1e-10, res_tol=1e-9, maxiter=500)
    theirs = segapp.segment(img, s, eigensolver="scipy", res_tol=1e-9, maxiter=500)
    np.testing.assert_allclose(ours.eigenvalues, theirs.eigenvalues, rtol=1e-5)


# -- segmentations ---------------------------------------------------------------------------
@pytest.mark.parametrize("noise", [0.1, 0.15])
def test_noisy_synthetic_image_four_regions(noise):
    img, truth = _blocks_image((80, 100), noise=noise, seed=4)
    ids = (2, 5, 7, 9)            # the user's label ids, not 1..k
    s = _strokes(truth, ids)
    res = segapp.segment(img, s)
    assert res.label_ids == ids
    expected = np.asarray(ids)[truth]
    assert np.mean(res.labels == expected) >= 0.98
    painted = s > 0
    assert np.all(res.labels[painted] == s[painted])
    assert res.labels.shape == truth.shape and res.eigenvectors.shape == truth.shape + (3,)
    assert res.eigenvectors.dtype == np.float32
    assert set(res.timings) >= {"graph", "constraints", "amg_setup", "eigensolver",
                                "partition", "total"}
    assert res.diagnostics.converged


def test_two_labels_with_the_cheeger_sweep():
    rng = np.random.default_rng(5)
    truth = np.zeros((60, 80), int)
    yy, xx = np.mgrid[:60, :80]
    truth[(yy - 30) ** 2 + (xx - 40) ** 2 < 18 ** 2] = 1
    img = np.clip(np.where(truth[..., None], 0.75, 0.3) + rng.normal(0, 0.12, (60, 80, 1)), 0, 1)
    s = np.zeros_like(truth)
    s[28:31, 35:45] = 2
    s[3:5, 5:70] = 1
    for part in ("sweep", "kmeans"):
        res = segapp.segment(img[..., 0], s, k2_partition=part)
        assert np.mean(res.labels == np.where(truth, 2, 1)) >= 0.98, part


def test_warm_resolve_matches_cold_solve():
    img, truth = _blocks_image((60, 70), noise=0.1, seed=6)
    s = _strokes(truth)
    sess = segapp.Session(img)
    first = sess.update(s)
    assert not first.diagnostics.warm_start
    s2 = s.copy()
    ys, xs = np.nonzero(truth == 3)
    s2[ys[:5], xs[:5]] = 4                              # one more stroke for label 4
    warm = sess.update(s2)
    cold = segapp.segment(img, s2)
    assert warm.diagnostics.warm_start
    assert np.mean(warm.labels == cold.labels) >= 0.995
    np.testing.assert_allclose(warm.eigenvalues, cold.eigenvalues, rtol=1e-2)


def test_inputs_of_every_dtype_and_grey():
    img, truth = _blocks_image((40, 40), noise=0.05)
    s = _strokes(truth)
    expected = segapp.segment(img, s).labels
    for variant in ((img * 255).astype(np.uint8), (img * 65535).astype(np.uint16)):
        assert np.mean(segapp.segment(variant, s).labels == expected) > 0.99
    grey = segapp.segment(img.mean(axis=2), s)
    assert grey.labels.shape == truth.shape


def test_nonconvergence_raises_or_warns():
    img, truth = _blocks_image()
    s = _strokes(truth)
    with pytest.raises(SolverError, match="did not converge") as exc:
        segapp.segment(img, s, maxiter=1, eig_tol=1e-14, res_tol=1e-14)
    assert exc.value.diagnostics.iterations == 1
    with pytest.warns(RuntimeWarning, match="did not converge"):
        segapp.segment(img, s, maxiter=1, eig_tol=1e-14, res_tol=1e-14,
                       on_nonconvergence="warn")


def test_cancel_and_bad_options():
    img, truth = _blocks_image()
    s = _strokes(truth)
    with pytest.raises(Cancelled):
        segapp.Session(img).update(s, cancel=lambda: True)
    with pytest.raises(InvalidInputError, match="unknown option"):
        segapp.segment(img, s, bogus=1)
    with pytest.raises(InvalidInputError, match="image"):
        segapp.segment(np.full((5, 5), np.nan), s[:5, :5])
    with pytest.raises(InvalidInputError):
        segapp.Session(img).update(s[:10])


def test_cluster_on_a_knn_graph_of_blobs():
    from scipy.spatial import cKDTree
    rng = np.random.default_rng(7)
    centres = np.array([[0, 0], [5, 0], [0, 5]])
    X = np.concatenate([c + rng.normal(0, 0.8, (150, 2)) for c in centres])
    truth = np.repeat([1, 2, 3], 150)
    dist, idx = cKDTree(X).query(X, 11)
    rows = np.repeat(np.arange(len(X)), 10)
    W = sp.coo_matrix((np.exp(-dist[:, 1:].ravel() ** 2), (rows, idx[:, 1:].ravel())),
                      shape=(len(X),) * 2).tocsr()
    W = W.maximum(W.T)
    labels = np.zeros(len(X), int)
    for c in (1, 2, 3):
        labels[rng.choice(np.flatnonzero(truth == c), 4, replace=False)] = c
    res = segapp.cluster(labels, graph=W)
    assert res.labels.shape == (450,)
    assert np.mean(res.labels == truth) >= 0.97
    # ncut names clusters by stroke overlap but is not shaped by the strokes
    res = segapp.cluster(labels, graph=W, method="ncut")
    assert np.mean(res.labels == truth) >= 0.9


def test_laplacian_of_explicit_adjacency():
    W = np.array([[0, 2.0, 0], [2.0, 0, 1.0], [0, 1.0, 0]])
    np.testing.assert_allclose(laplacian(W).toarray(),
                               [[2, -2, 0], [-2, 3, -1], [0, -1, 1]])


@pytest.mark.parametrize("shape", [(2, 2), (5, 2), (2, 5), (1, 6), (7, 4)])
@pytest.mark.parametrize("reach", [{"connectivity": 4}, {"connectivity": 8}, {"radius": 2},
                                   {"radius": 3}])
def test_image_graph_matches_brute_force_on_small_and_narrow_images(shape, reach):
    rng = np.random.default_rng(8)
    img = rng.random(shape).astype(np.float32)
    g = image_graph(img, sigma=0.3, **reach)
    r = reach.get("radius", np.sqrt(2) if reach.get("connectivity") == 8 else 1.0)
    H, W = shape
    coords = [(i // W, i % W) for i in range(H * W)]
    Wm = np.zeros((H * W, H * W))
    for i, (yi, xi) in enumerate(coords):
        for j, (yj, xj) in enumerate(coords):
            if i != j and (yi - yj) ** 2 + (xi - xj) ** 2 <= r * r + 1e-9:
                Wm[i, j] = max(np.exp(-(img[yi, xi] - img[yj, xj]) ** 2 / (2 * 0.09)), 1e-4)
    np.testing.assert_allclose(g.laplacian.toarray(), np.diag(Wm.sum(1)) - Wm, atol=1e-6)


def test_large_images_are_solved_at_working_resolution_and_answered_in_full():
    img, truth = _blocks_image((90, 120), noise=0.08, seed=9)
    s = _strokes(truth)
    s[5, 5:60] = 1                                      # a 1-pixel-thin stroke must survive
    sess = segapp.Session(img, max_pixels=3000)
    assert sess.working_shape[0] * sess.working_shape[1] <= 3000
    res = sess.update(s)
    assert res.labels.shape == truth.shape
    assert res.eigenvectors.shape == truth.shape + (3,)
    painted = s > 0
    assert np.all(res.labels[painted] == s[painted])
    assert np.mean(res.labels == truth + 1) >= 0.95
    full = segapp.Session(img, max_pixels=None)
    assert full.working_shape == truth.shape
    with pytest.raises(InvalidInputError, match="max_pixels"):
        segapp.Session(img, max_pixels=0)
