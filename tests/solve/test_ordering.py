"""The grid's nested-dissection ordering (``segapp/solve/ordering.py``) against independent
references: a permutation of the pixels; its last band is a separator (scipy's connected
components of the graph without it: the two halves, each ordered before it); and the fill of
the Cholesky factor it gives, counted by SuperLU's LU without pivoting (``L``'s pattern is the
Cholesky factor's for a symmetric positive-definite matrix), is below the natural order's."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from scipy.sparse.csgraph import connected_components

from segapp.graphs.image import image_graph
from segapp.solve.ordering import LEAF_PIXELS, grid_nested_dissection, offsets_reach

GRAPHS = [(4, None), (8, None), (8, 2.0)]          # connectivity, radius: reach 1, 1, 2


def noisy(shape=(60, 80), seed=0) -> np.ndarray:
    return np.random.default_rng(seed).random(shape)


@pytest.mark.parametrize("shape, reach, leaf", [
    ((1, 1), 1, 64), ((1, 97), 1, 64), ((97, 1), 1, 8), ((2, 2), 1, 1), ((40, 60), 1, 64),
    ((33, 17), 2, 16), ((50, 50), 3, 64), ((7, 300), 1, 4)])
def test_nested_dissection_is_a_permutation(shape, reach, leaf):
    order = grid_nested_dissection(shape, reach, leaf)
    assert order.dtype == np.int64
    assert np.array_equal(np.sort(order), np.arange(shape[0] * shape[1]))


@pytest.mark.parametrize("offsets, reach", [
    ([(0, 1), (1, 0)], 1), ([(0, 1), (1, -1), (1, 0), (1, 1)], 1),
    ([(0, 2), (1, 1), (2, 0), (2, -1)], 2), ([(-3, 1)], 3), ([], 1)])
def test_the_reach_is_the_widest_offset(offsets, reach):
    assert offsets_reach(offsets) == reach


@pytest.mark.parametrize("connectivity, radius", GRAPHS)
def test_the_last_band_separates_the_two_halves_ordered_before_it(connectivity, radius):
    g = image_graph(noisy(), connectivity=connectivity, radius=radius)
    H, W = g.shape
    r = offsets_reach(g.offsets)
    order = grid_nested_dissection(g.shape, r)
    band = order[-r * H:]                           # W ≥ H: the first cut is r whole columns
    cols = np.unique(band % W)
    assert cols.size == r and np.all(np.diff(cols) == 1)
    assert np.array_equal(np.sort(band // W), np.repeat(np.arange(H), r))
    keep = np.setdiff1d(np.arange(g.n), band)
    adjacency = (g.laplacian != 0).astype(np.int8)
    count, comp = connected_components(adjacency[keep][:, keep], directed=False)
    assert count == 2
    halves = order[:-r * H]
    rank = np.empty(g.n, np.int64)
    rank[keep] = comp
    first = rank[halves]                            # each half's pixels come together
    assert np.count_nonzero(np.diff(first)) == 1


def cholesky_fill(A: sp.spmatrix, order: np.ndarray) -> int:
    """Entries of the Cholesky factor of ``A[order][:, order]``: SuperLU without pivoting."""
    P = sp.csc_matrix(A)[order][:, order].tocsc()
    lu = spla.splu(P, permc_spec="NATURAL", diag_pivot_thresh=0.0,
                   options={"SymmetricMode": True})
    assert np.array_equal(lu.perm_r, np.arange(P.shape[0]))   # no row exchange happened
    return lu.L.nnz


def test_the_fill_count_is_exact_on_a_path():
    """The reference itself: a path graph in order has no fill (L: diagonal + one below);
    eliminating the middle vertex first joins its two neighbours (one entry more)."""
    n = 7
    A = sp.diags([-np.ones(n - 1), 3 * np.ones(n), -np.ones(n - 1)], [-1, 0, 1])
    assert cholesky_fill(A, np.arange(n)) == 2 * n - 1
    middle_first = np.r_[3, np.arange(3), np.arange(4, n)]
    assert cholesky_fill(A, middle_first) == 2 * n - 1 + 1


@pytest.mark.parametrize("connectivity, radius", GRAPHS)
def test_nested_dissection_fills_less_than_the_natural_order(connectivity, radius):
    g = image_graph(noisy(), connectivity=connectivity, radius=radius)
    A = g.laplacian + sp.eye(g.n)                   # positive definite, the graph's pattern
    nd = cholesky_fill(A, grid_nested_dissection(g.shape, offsets_reach(g.offsets)))
    natural = cholesky_fill(A, np.arange(g.n))
    assert nd < 0.5 * natural, (nd, natural)        # measured 0.37, 0.41, 0.45


def test_the_fill_grows_like_n_log_n_not_like_the_band():
    """Doubling both sides (32² → 64² px): the natural (band) order's fill grows as n^1.5, 8×
    (measured 8.0); nested dissection's as n log n, 4 × log 4096 / log 1024 = 4.8 (measured
    5.2: the leaves of 64 px are ordered row by row)."""
    fills = {}
    for side in (32, 64):
        g = image_graph(noisy((side, side)), connectivity=4)
        A = g.laplacian + sp.eye(g.n)
        fills[side] = (cholesky_fill(A, grid_nested_dissection(g.shape, 1)),
                       cholesky_fill(A, np.arange(g.n)))
    nd_growth = fills[64][0] / fills[32][0]
    natural_growth = fills[64][1] / fills[32][1]
    assert natural_growth > 7 and nd_growth < 5.5, fills


def test_small_regions_are_left_in_row_order():
    shape = (8, 8)                                  # 64 px: one leaf
    assert np.array_equal(grid_nested_dissection(shape, 1, LEAF_PIXELS), np.arange(64))
