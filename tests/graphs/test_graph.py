"""segapp.graphs (image and weighted graphs) against hand-computed graphs and brute-force references.

Every expected value here is computed independently of segapp: weights from the RBF formula
of the module docstring, neighbourhoods by enumerating pixel pairs by their Euclidean
distance, quadratic forms by explicit loops over edges.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp

from segapp.errors import InvalidInputError
from segapp.graphs import graph_from_adjacency, laplacian
from segapp.graphs.image import (MIN_WEIGHT, graph_offsets, grid_offsets, grid_pattern,
                                 image_graph)

# Reach of each neighbourhood option, as a Euclidean radius in pixels.
REACH = {"c4": ({"connectivity": 4}, 1.0),
         "c8": ({"connectivity": 8}, math.sqrt(2.0)),
         "r2": ({"radius": 2}, 2.0)}


pytestmark = pytest.mark.usefixtures("one_blas_thread")


def raw_graph(img, **options):
    """The RBF graph of the features exactly as given (TV pre-filter off): the formula these
    tests check by hand; the pre-filter has its own tests below."""
    return image_graph(img, denoise=0, **options)


def adjacency_of(L: sp.spmatrix) -> np.ndarray:
    """Dense W from L = D − W."""
    L = L.toarray()
    return np.diag(np.diag(L)) - L


def brute_force_adjacency(img: np.ndarray, sigma: float, reach: float) -> np.ndarray:
    """W_ij = max(exp(−‖f_i − f_j‖² / 2σ²), w_min) for every pixel pair within ``reach``."""
    f = img if img.ndim == 3 else img[:, :, None]
    f = f.astype(np.float64)
    H, W = f.shape[:2]
    n = H * W
    A = np.zeros((n, n))
    for i in range(n):
        yi, xi = divmod(i, W)
        for j in range(n):
            yj, xj = divmod(j, W)
            if i != j and (yi - yj) ** 2 + (xi - xj) ** 2 <= reach * reach + 1e-9:
                dist2 = float(np.sum((f[yi, xi] - f[yj, xj]) ** 2))
                A[i, j] = max(math.exp(-dist2 / (2 * sigma * sigma)), MIN_WEIGHT)
    return A


# -- the Laplacian ---------------------------------------------------------------------------
def test_laplacian_of_a_small_weighted_graph_by_hand():
    W = np.array([[0, 2.0, 0, 0.5],
                  [2.0, 0, 1.0, 0],
                  [0, 1.0, 0, 3.0],
                  [0.5, 0, 3.0, 0]])
    expected = np.array([[2.5, -2.0, 0, -0.5],
                         [-2.0, 3.0, -1.0, 0],
                         [0, -1.0, 4.0, -3.0],
                         [-0.5, 0, -3.0, 3.5]])
    np.testing.assert_allclose(laplacian(W).toarray(), expected)
    np.testing.assert_allclose(laplacian(sp.csr_matrix(W)).toarray(), expected)
    assert sp.issparse(laplacian(W))


@pytest.mark.parametrize("reach", sorted(REACH))
def test_image_laplacian_identities_against_an_explicit_edge_loop(reach):
    rng = np.random.default_rng(10)
    img = rng.random((4, 5, 3)).astype(np.float32)
    options, r = REACH[reach]
    sigma = 0.35
    g = raw_graph(img, sigma=sigma, **options)
    L = g.laplacian
    n = img.shape[0] * img.shape[1]
    assert L.shape == (n, n) and g.n == n and g.shape == (4, 5)
    assert abs(L - L.T).max() == 0                                 # symmetric
    np.testing.assert_allclose(L @ np.ones(n), 0, atol=1e-12)       # row sums 0
    np.testing.assert_allclose(L.diagonal(), g.degrees, rtol=1e-12)  # diag = degrees
    # xᵀLx = Σ over undirected edges of w (x_i − x_j)², edges and weights built from scratch.
    H, W = img.shape[:2]
    f = img.astype(np.float64)
    for _ in range(3):
        x = rng.standard_normal(n)
        total, edges = 0.0, 0
        for i in range(n):
            for j in range(i + 1, n):
                (yi, xi), (yj, xj) = divmod(i, W), divmod(j, W)
                if (yi - yj) ** 2 + (xi - xj) ** 2 <= r * r + 1e-9:
                    w = max(math.exp(-np.sum((f[yi, xi] - f[yj, xj]) ** 2) / (2 * sigma**2)),
                            MIN_WEIGHT)
                    total += w * (x[i] - x[j]) ** 2
                    edges += 1
        assert float(x @ (L @ x)) == pytest.approx(total, rel=1e-6)
    # Off-diagonal entries of L are exactly the edges enumerated above.
    assert (L.nnz - n) // 2 == edges
    # And L is positive semi-definite with the constant vector as its only null vector here.
    ev = np.linalg.eigvalsh(L.toarray())
    assert ev[0] > -1e-10 and ev[1] > 1e-6


def test_grey_3x3_weights_by_hand_4_and_8_connectivity():
    img = np.array([[0.0, 0.1, 0.5],
                    [0.2, 0.2, 1.0],
                    [0.9, 0.0, 0.3]], np.float32)
    sigma = 0.25                                  # 2σ² = 0.125
    g4 = raw_graph(img, sigma=sigma, connectivity=4)
    W4 = adjacency_of(g4.laplacian)
    # A few weights worked out by hand: exp(−Δ²/0.125).
    assert W4[0, 1] == pytest.approx(0.9231163463866358, rel=1e-6)   # Δ = 0.1
    assert W4[1, 2] == pytest.approx(0.27803730045319414, rel=1e-6)  # Δ = 0.4
    assert W4[4, 5] == pytest.approx(0.005976022895005943, rel=1e-5)  # Δ = 0.8
    assert W4[3, 4] == pytest.approx(1.0)                             # Δ = 0
    assert W4[0, 4] == 0 and W4[0, 2] == 0                            # not 4-neighbours
    # The whole matrix: 12 edges of the 3×3 4-grid.
    expected4 = brute_force_adjacency(img, sigma, 1.0)
    assert np.count_nonzero(expected4) == 2 * 12
    np.testing.assert_allclose(W4, expected4, rtol=1e-5, atol=1e-9)
    np.testing.assert_allclose(g4.degrees, expected4.sum(1), rtol=1e-5)
    assert g4.sigma == sigma

    g8 = raw_graph(img, sigma=sigma, connectivity=8)
    W8 = adjacency_of(g8.laplacian)
    # 4 more edges per 2×2 block: 12 + 8 = 20 edges; diagonal neighbours (0,0)–(1,1): Δ = 0.2.
    expected8 = brute_force_adjacency(img, sigma, math.sqrt(2))
    assert np.count_nonzero(expected8) == 2 * 20
    assert W8[0, 4] == pytest.approx(math.exp(-0.04 / 0.125), rel=1e-6)
    assert W8[2, 4] == pytest.approx(math.exp(-0.09 / 0.125), rel=1e-6)  # (0,2)–(1,1): Δ = 0.3
    np.testing.assert_allclose(W8, expected8, rtol=1e-5, atol=1e-9)


def test_weight_floor_keeps_contrasting_neighbours_connected():
    img = np.array([[0.0, 0.5], [0.5, 1.0]], np.float32)
    g = raw_graph(img, sigma=0.1, connectivity=4)     # exp(−0.25/0.02) = 3.7e-6 < w_min
    W = adjacency_of(g.laplacian)
    np.testing.assert_allclose(W[0, 1], MIN_WEIGHT, rtol=1e-6)
    np.testing.assert_allclose(W[2, 3], MIN_WEIGHT, rtol=1e-6)
    assert np.all(g.degrees > 0)


def test_colour_2x3_weights_by_hand():
    # Colour distances are Euclidean in RGB: (0,0,0)–(0.3,0.4,0) is 0.5 apart.
    img = np.zeros((2, 3, 3), np.float32)
    img[0, 1] = (0.3, 0.4, 0.0)
    img[0, 2] = (0.3, 0.4, 0.0)
    img[1, 0] = (0.0, 0.0, 0.2)
    img[1, 1] = (0.3, 0.4, 0.2)
    img[1, 2] = (0.6, 0.8, 0.2)
    sigma = 0.5                                   # 2σ² = 0.5
    W = adjacency_of(raw_graph(img, sigma=sigma, connectivity=4).laplacian)
    assert W[0, 1] == pytest.approx(math.exp(-0.25 / 0.5), rel=1e-6)   # distance 0.5
    assert W[1, 2] == pytest.approx(1.0)                                # identical colours
    assert W[0, 3] == pytest.approx(math.exp(-0.04 / 0.5), rel=1e-6)   # distance 0.2
    assert W[4, 5] == pytest.approx(math.exp(-0.25 / 0.5), rel=1e-6)   # distance 0.5
    assert W[2, 5] == pytest.approx(math.exp(-(0.09 + 0.16 + 0.04) / 0.5), rel=1e-6)
    np.testing.assert_allclose(W, brute_force_adjacency(img, sigma, 1.0), rtol=1e-5)


def test_radius_2_has_12_neighbours_and_matches_brute_force():
    offs = grid_offsets(radius=2)
    full = set(offs) | {(-dy, -dx) for dy, dx in offs}
    expected = {(dy, dx) for dy in range(-2, 3) for dx in range(-2, 3)
                if 0 < dy * dy + dx * dx <= 4}
    assert full == expected and len(full) == 12 and len(offs) == 6
    assert len(grid_offsets(4)) * 2 == 4 and len(grid_offsets(8)) * 2 == 8
    rng = np.random.default_rng(11)
    img = rng.random((6, 7)).astype(np.float32)
    for reach in REACH:
        options, r = REACH[reach]
        g = raw_graph(img, sigma=0.4, **options)
        # interior pixel (3, 3): 4, 8 or 12 neighbours
        row = g.laplacian[3 * 7 + 3].toarray().ravel()
        assert np.count_nonzero(row) - 1 == {"c4": 4, "c8": 8, "r2": 12}[reach]
        np.testing.assert_allclose(adjacency_of(g.laplacian),
                                   brute_force_adjacency(img, 0.4, r), rtol=1e-5, atol=1e-9)
    # 3×3 image, radius 2: the 20 edges of 8-connectivity + 3 + 3 straight two-pixel jumps
    g = raw_graph(rng.random((3, 3)).astype(np.float32), sigma=0.4, radius=2)
    assert (g.laplacian.nnz - 9) // 2 == 26


@pytest.mark.parametrize("shape", [(1, 5), (2, 2), (2, 6), (5, 2), (3, 3)])
def test_tiny_and_narrow_images_match_brute_force(shape):
    rng = np.random.default_rng(12)
    img = rng.random(shape).astype(np.float32)
    for reach in REACH:
        options, r = REACH[reach]
        g = raw_graph(img, sigma=0.3, **options)
        np.testing.assert_allclose(adjacency_of(g.laplacian),
                                   brute_force_adjacency(img, 0.3, r), rtol=1e-5, atol=1e-9)


@pytest.mark.parametrize("shape", [(1, 5), (2, 2), (2, 6), (5, 2), (3, 3), (9, 13), (14, 4)])
@pytest.mark.parametrize("reach", sorted(REACH))
def test_the_grid_pattern_is_the_graphs_pattern_by_brute_force(shape, reach):
    """What the direct solver analyses before the weights exist: the pixel pairs within the
    neighbourhood plus the diagonal (brute force), stored as the graph's Laplacian is."""
    options, r = REACH[reach]
    img = np.random.default_rng(3).random(shape + (3,)).astype(np.float32)
    g = image_graph(img, **options)
    P = grid_pattern(shape, graph_offsets(shape, **options))
    np.testing.assert_array_equal(P.indptr, g.laplacian.indptr)
    np.testing.assert_array_equal(P.indices, g.laplacian.indices)
    expect = (brute_force_adjacency(img, 0.3, r) > 0) | np.eye(img.shape[0] * img.shape[1],
                                                                  dtype=bool)
    np.testing.assert_array_equal(P.toarray() != 0, expect)


# -- σ rule ----------------------------------------------------------------------------------
def test_sigma_rule_is_sigma_scale_times_mean_neighbour_distance_grey():
    # Edges of the 2×2 4-grid: |0 − 0.4| = 0.4, |0.1 − 0.1| = 0, |0 − 0.1| = 0.1,
    # |0.4 − 0.1| = 0.3: mean 0.2 (the RMS, √0.065 = 0.255, is *not* the documented rule).
    img = np.array([[0.0, 0.4], [0.1, 0.1]], np.float32)
    assert raw_graph(img, connectivity=4, sigma_scale=1.0).sigma == pytest.approx(0.2, rel=1e-6)
    assert raw_graph(img, connectivity=4).sigma == pytest.approx(0.4 * 0.2, rel=1e-6)
    assert raw_graph(img, connectivity=4, sigma_scale=2.5).sigma == pytest.approx(0.5, rel=1e-6)
    # 8-connectivity adds the diagonals |0 − 0.1| = 0.1 and |0.4 − 0.1| = 0.3: mean 1.2 / 6.
    assert raw_graph(img, connectivity=8, sigma_scale=1.0).sigma == pytest.approx(0.2, rel=1e-6)
    img2 = np.array([[0.0, 0.4], [0.1, 0.5]], np.float32)
    # 4-grid: 0.4, 0.4, 0.1, 0.1 → 0.25; diagonals 0.5, 0.3 → 8-grid mean 1.8 / 6 = 0.3
    assert raw_graph(img2, connectivity=4, sigma_scale=1.0).sigma == pytest.approx(0.25, rel=1e-6)
    assert raw_graph(img2, connectivity=8, sigma_scale=1.0).sigma == pytest.approx(0.3, rel=1e-6)
    # The data-driven σ is the one the weights use: |0 − 0.4| with σ = 0.4 · 0.25 = 0.1
    W = adjacency_of(raw_graph(img2, connectivity=4).laplacian)
    assert W[0, 1] == pytest.approx(max(math.exp(-0.16 / (2 * 0.1**2)), MIN_WEIGHT), rel=1e-6)
    assert W[0, 2] == pytest.approx(math.exp(-0.01 / (2 * 0.1**2)), rel=1e-5)


@pytest.mark.parametrize("connectivity, radius, step", [(4, 1, 1), (8, 1, 3), (8, 2, 5)])
def test_statistic_rows_are_all_the_rows_the_statistic_reads(connectivity, radius, step):
    """mean_neighbour_distance reads statistic_rows' rows only: on an array unset (NaN)
    everywhere else it gives the whole array's value."""
    from segapp.graphs.image import grid_offsets, mean_neighbour_distance, statistic_rows
    feats = np.random.default_rng(1).random((41, 23, 3)).astype(np.float32)
    offsets = grid_offsets(connectivity, radius)
    rows = statistic_rows(feats.shape[:2], offsets, step)
    holey = np.full_like(feats, np.nan)
    holey[rows] = feats[rows]
    assert mean_neighbour_distance(holey, offsets, step) == \
        mean_neighbour_distance(feats, offsets, step)
    assert rows.size < feats.shape[0] or step == 1


def test_sigma_rule_colour_distances_by_hand():
    img = np.zeros((2, 2, 3), np.float32)
    img[0, 1] = (0.3, 0.4, 0.0)           # 0.5 from (0, 0, 0)
    img[1, 0] = (0.0, 0.0, 0.2)           # 0.2 from (0, 0, 0)
    img[1, 1] = (0.3, 0.4, 0.2)           # 0.2 from [0, 1], 0.5 from [1, 0]
    # 4-grid: (0.5 + 0.2 + 0.2 + 0.5) / 4 = 0.35
    g = raw_graph(img, connectivity=4)
    assert g.sigma == pytest.approx(0.4 * 0.35, rel=1e-6)
    W = adjacency_of(g.laplacian)
    assert W[0, 1] == pytest.approx(math.exp(-0.25 / (2 * 0.14**2)), rel=1e-5)
    # 8-grid adds two diagonals of length √0.29
    mean8 = (1.4 + 2 * math.sqrt(0.29)) / 6
    assert raw_graph(img, connectivity=8).sigma == pytest.approx(0.4 * mean8, rel=1e-6)
    # An explicit sigma overrides the rule (and sigma_scale is ignored then).
    assert raw_graph(img, sigma=0.7, sigma_scale=3.0).sigma == 0.7


def test_flat_image_gives_the_unweighted_grid_laplacian():
    H, W = 4, 6
    for img in (np.full((H, W), 0.3, np.float32), np.full((H, W, 3), 0.8, np.float32)):
        g = raw_graph(img, connectivity=4)
        assert g.sigma == 1.0                          # documented fallback: mean distance 0
        assert np.isfinite(g.laplacian.data).all()

        def path(m):
            return sp.diags([np.r_[1, 2 * np.ones(m - 2), 1], -np.ones(m - 1), -np.ones(m - 1)],
                            [0, 1, -1]).toarray()
        grid = np.kron(path(H), np.eye(W)) + np.kron(np.eye(H), path(W))
        np.testing.assert_allclose(g.laplacian.toarray(), grid, atol=1e-12)
        g8 = raw_graph(img, connectivity=8)
        expected8 = (brute_force_adjacency(np.zeros((H, W)), 1.0, math.sqrt(2)) > 0).astype(float)
        np.testing.assert_allclose(adjacency_of(g8.laplacian), expected8, atol=1e-12)
        # corner pixel: 3 neighbours, interior: 8
        assert g8.degrees[0] == pytest.approx(3) and g8.degrees[W + 1] == pytest.approx(8)


# -- grey vs colour --------------------------------------------------------------------------
def test_grey_image_equals_colour_image_with_equal_channels():
    rng = np.random.default_rng(13)
    grey = rng.random((5, 6)).astype(np.float32)
    rgb = np.repeat(grey[:, :, None], 3, axis=2)
    # With the data-driven σ the rule is scale-free: RGB distances are √3× the grey ones,
    # and so is σ, hence the weights are the same.
    g_grey, g_rgb = raw_graph(grey), raw_graph(rgb)
    assert g_rgb.sigma == pytest.approx(math.sqrt(3) * g_grey.sigma, rel=1e-5)
    np.testing.assert_allclose(g_rgb.laplacian.toarray(), g_grey.laplacian.toarray(),
                               rtol=1e-4, atol=1e-7)
    # With a fixed σ they differ by the √3: w_rgb = exp(−3Δ²/2σ²).
    A_grey = adjacency_of(raw_graph(grey, sigma=0.3).laplacian)
    A_rgb = adjacency_of(raw_graph(rgb, sigma=0.3).laplacian)
    np.testing.assert_allclose(A_rgb, brute_force_adjacency(rgb, 0.3, math.sqrt(2)), rtol=1e-5)
    assert not np.allclose(A_rgb, A_grey)
    # color=False converts equal channels back to the same grey value (luma weights sum to 1).
    np.testing.assert_allclose(raw_graph(rgb, sigma=0.3, color=False).laplacian.toarray(),
                               raw_graph(grey, sigma=0.3).laplacian.toarray(), rtol=1e-5)


def test_color_false_uses_luma_and_cannot_see_isoluminant_edges():
    from skimage.color import rgb2gray   # independent reference for the luma weights
    # Red on the left, a green of the same luma on the right.
    img = np.zeros((4, 6, 3), np.float32)
    img[:, :3] = (1.0, 0.0, 0.0)
    img[:, 3:] = (0.0, 0.2125 / 0.7154, 0.0)
    # (A fixed σ: the two lumas agree only up to float32 rounding, ~1e-8, and the data-driven
    # σ would scale that rounding noise up to a full-contrast edge.)
    grey = raw_graph(img, color=False, sigma=0.2)
    np.testing.assert_allclose(adjacency_of(grey.laplacian), adjacency_of(
        raw_graph(np.zeros((4, 6), np.float32), sigma=0.2).laplacian), rtol=1e-6)
    colour = raw_graph(img, color=True, sigma=0.2)
    assert adjacency_of(colour.laplacian)[2, 3] == pytest.approx(MIN_WEIGHT)
    # On a random image the colour=False graph is the graph of skimage's rgb2gray.
    rng = np.random.default_rng(14)
    img = rng.random((5, 5, 3)).astype(np.float32)
    expected = brute_force_adjacency(rgb2gray(img.astype(np.float64)), 0.2, math.sqrt(2))
    np.testing.assert_allclose(adjacency_of(raw_graph(img, sigma=0.2, color=False).laplacian),
                               expected, rtol=1e-4, atol=1e-8)


def test_bad_graph_options_raise():
    img = np.random.default_rng(15).random((4, 4)).astype(np.float32)
    for kwargs in ({"connectivity": 6}, {"radius": 0.5}, {"radius": float("nan")},
                   {"sigma": 0.0}, {"sigma": -1.0}, {"sigma": float("inf")},
                   {"denoise": -0.5}, {"denoise": float("nan")}, {"denoise": "tv"},
                   {"denoise": True}):
        with pytest.raises(InvalidInputError):
            image_graph(img, **kwargs)
    with pytest.raises(InvalidInputError):
        image_graph(np.zeros((1, 1), np.float32))


# -- graphs given as adjacency matrices ------------------------------------------------------
def test_graph_from_adjacency_wraps_a_valid_graph():
    W = np.array([[0, 1.0, 0.5, 0],
                  [1.0, 0, 0, 2.0],
                  [0.5, 0, 0, 0.25],
                  [0, 2.0, 0.25, 0]])
    for given in (W, sp.csr_matrix(W), sp.coo_matrix(W)):
        g = graph_from_adjacency(given)
        np.testing.assert_allclose(g.degrees, [1.5, 3.0, 0.75, 2.25])
        np.testing.assert_allclose(g.laplacian.toarray(), np.diag(W.sum(1)) - W)
        assert g.shape == (4,) and g.n == 4 and math.isnan(g.sigma)
    # Self-loops are not edges: the solver sees a zero-diagonal adjacency.
    g = graph_from_adjacency(W + np.diag([5.0, 0, 1.0, 0]))
    np.testing.assert_allclose(g.degrees, [1.5, 3.0, 0.75, 2.25])


@pytest.mark.parametrize("W", [
    pytest.param(np.ones((2, 3)) - np.eye(2, 3), id="non-square"),
    pytest.param(sp.csr_matrix(np.ones((3, 4))), id="non-square-sparse"),
    pytest.param(np.zeros((1, 1)), id="single-vertex"),
    pytest.param(np.array([[0, 1.0, 0], [2.0, 0, 1.0], [0, 1.0, 0]]), id="asymmetric"),
    pytest.param(sp.csr_matrix(np.array([[0, 1.0, 0], [0, 0, 1.0], [0, 1.0, 0]])),
                 id="asymmetric-sparse"),
    pytest.param(np.array([[0, -1.0, 1.0], [-1.0, 0, 1.0], [1.0, 1.0, 0]]), id="negative"),
    pytest.param(np.array([[0, np.nan], [np.nan, 0]]), id="nan"),
    pytest.param(np.array([[0, np.inf], [np.inf, 0]]), id="inf"),
    pytest.param(np.array([[0, 1.0, 0], [1.0, 0, 0], [0, 0, 0]]), id="isolated-vertex"),
    pytest.param(np.array([[0, 1.0, 0], [1.0, 0, 0], [0, 0, 3.0]]), id="only-a-self-loop"),
])
def test_graph_from_adjacency_rejects_bad_input(W):
    with pytest.raises(InvalidInputError):
        graph_from_adjacency(W)
    with pytest.raises(ValueError):                   # InvalidInputError is a ValueError
        graph_from_adjacency(W)
