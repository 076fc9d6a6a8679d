"""The band's one-shot direct solve (segapp.solve.band) against dense solves."""

from __future__ import annotations

import numpy as np

from segapp.graphs.band import band_system, symmetric
from segapp.graphs.image import image_graph
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
