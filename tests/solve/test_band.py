"""The band's one-shot direct solve (segapp.solve.band) against dense solves."""

from __future__ import annotations

import numpy as np
import pytest

from segapp.graphs.band import band_system, symmetric
from segapp.graphs.image import grid_offsets, image_graph
from segapp.solve.band import solve_band
from scenes import disc_image  # noqa: E402  (tests/ is on sys.path)


def test_solve_band_equals_a_dense_solve():
    img, _ = disc_image(16, 18)
    g = image_graph(img, denoise=0)
    n = g.n
    U = np.arange(40, 200)
    y = np.random.default_rng(2).normal(size=(n, 3))
    A, b = band_system(img, g.sigma, g.offsets, U, lambda idx: y[idx])
    x, report = solve_band(A, b)
    dense = np.linalg.solve(symmetric(A).toarray(), b)
    np.testing.assert_allclose(x, dense, rtol=1e-8, atol=1e-10)
    assert report["solver"] in ("CHOLMOD (AMD)", "SuperLU")


def test_solve_band_without_cholmod_uses_superlu(monkeypatch):
    """Where CHOLMOD is missing the same system is solved by SuperLU, exactly."""
    import segapp.solve.band as B
    monkeypatch.setattr(B.cholmod, "available", lambda: False)
    img, _ = disc_image(16, 18)
    g = image_graph(img, denoise=0)
    U = np.arange(30, 220)
    y = np.random.default_rng(4).normal(size=(g.n, 2))
    A, b = band_system(img, g.sigma, g.offsets, U, lambda idx: y[idx])
    x, report = solve_band(A, b)
    assert report["solver"] == "SuperLU"
    np.testing.assert_allclose(x, np.linalg.solve(symmetric(A).toarray(), b), rtol=1e-8,
                               atol=1e-10)


def _rings_band(H: int, W: int) -> np.ndarray:
    """A band like a refinement's: a ring around a disc, a strip across the image, and a
    blob in the upper half that touches neither (its own component, no separator pixel)."""
    yy, xx = np.mgrid[:H, :W]
    r = np.hypot(yy - 0.55 * H, xx - 0.5 * W)
    band = (abs(r - 0.3 * min(H, W)) < 3) | (abs(yy - 0.8 * H) < 2)
    band |= (abs(yy - 0.12 * H) < 3) & (abs(xx - 0.15 * W) < 4)
    return np.flatnonzero(band)


@pytest.mark.parametrize("connectivity, radius", [(4, 1), (8, 1), (8, 2)])
def test_the_band_cut_in_two_halves_equals_a_dense_solve(monkeypatch, connectivity, radius):
    """A band cut at a row separator (two halves factored apart, the Schur complement on the
    separator) gives the whole system's solution, for every neighbourhood's reach."""
    import segapp.solve.band as B
    if not B.cholmod.available():
        pytest.skip("the cut needs CHOLMOD")
    monkeypatch.setattr(B, "SPLIT_MIN", 0)
    H, W = 60, 70
    img, _ = disc_image(H, W)
    offsets = grid_offsets(connectivity, radius)
    g = image_graph(img, denoise=0, connectivity=connectivity, radius=radius)
    U = _rings_band(H, W)
    reach = max(abs(dy) for dy, _ in offsets)
    split = B.row_separator(U, W, reach)
    assert split is not None
    a, c = split
    rows = U // W
    assert np.unique(rows[a:c]).size == reach                 # whole image rows
    assert 0.35 * U.size <= a and U.size - c >= 0.35 * U.size - reach * W
    y = np.random.default_rng(5).normal(size=(H * W, 3))
    A, b = band_system(img, g.sigma, offsets, U, lambda idx: y[idx])
    full = symmetric(A)
    assert full[:a, c:].nnz == 0                               # a separator indeed
    solver = B.BandSolver(A.indptr, A.indices, split)
    x, report = solver.solve(A.data, b)
    assert report["solver"] == "CHOLMOD (AMD, 2 halves)"
    assert report["separator"] == c - a
    np.testing.assert_allclose(x, np.linalg.solve(full.toarray(), b), rtol=1e-8, atol=1e-10)
    # new values on the same pattern: the same halves serve again
    x2, _ = solver.solve(A.data * 2, b)
    np.testing.assert_allclose(x2, x / 2, rtol=1e-8, atol=1e-10)


def test_row_separator_declines_small_bands_and_wide_cuts(monkeypatch):
    import segapp.solve.band as B
    H, W = 60, 70
    U = _rings_band(H, W)
    assert B.row_separator(U, W, 1) is None                   # below SPLIT_MIN
    monkeypatch.setattr(B, "SPLIT_MIN", 0)
    assert B.row_separator(U, W, 1) is not None
    monkeypatch.setattr(B, "SPLIT_MAX_SEPARATOR", 2)          # every cut is wider
    assert B.row_separator(U, W, 1) is None
    everything = np.arange(H * W)                              # a whole grid: rows of W
    monkeypatch.setattr(B, "SPLIT_MAX_SEPARATOR", W - 1)
    assert B.row_separator(everything, W, 1) is None


def test_the_band_is_cut_only_where_two_cores_are_free(monkeypatch):
    """With the other core busy the halves would share one: no cut."""
    import segapp.solve.band as B
    import segapp.solve.direct as D
    monkeypatch.setattr(B, "SPLIT_MIN", 0)
    U = _rings_band(60, 70)
    monkeypatch.setattr(D, "others_load", lambda: 0.0)
    monkeypatch.setattr(D, "foreground_threads", lambda: 1)
    assert B.two_core_cut(U, 70, 1) is None                   # a thread of ours busy
    monkeypatch.setattr(D, "foreground_threads", lambda: 2)
    assert B.two_core_cut(U, 70, 1) == B.row_separator(U, 70, 1) is not None
    monkeypatch.setattr(D, "others_load", lambda: 0.9)        # another process's work
    assert B.two_core_cut(U, 70, 1) is None
    monkeypatch.setattr(D, "others_load", lambda: None)       # no load average
    assert B.two_core_cut(U, 70, 1) is None
