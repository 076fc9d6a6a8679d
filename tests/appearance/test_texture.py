"""Texture features (segapp/appearance/texture.py) against a direct windowed computation."""

from __future__ import annotations

import numpy as np
import pytest

from segapp.appearance import ColourPalette
from segapp.appearance.texture import local_std, texture_features


def _direct_std(L: np.ndarray, sigma: float) -> np.ndarray:
    """The Gaussian-windowed standard deviation summed pixel by pixel: weights
    exp(−(dx² + dy²) / 2σ²) on the square of radius ⌊4σ + ½⌋ (the filter's truncation),
    normalised per axis, the image mirrored at its borders (edge pixel repeated)."""
    r = int(4.0 * sigma + 0.5)
    x = np.arange(-r, r + 1)
    g = np.exp(-0.5 * (x / sigma) ** 2)
    g /= g.sum()
    W = np.outer(g, g)
    P = np.pad(L, r, mode="symmetric")
    out = np.empty_like(L)
    for i in range(L.shape[0]):
        for j in range(L.shape[1]):
            win = P[i:i + 2 * r + 1, j:j + 2 * r + 1]
            mu = (W * win).sum()
            out[i, j] = np.sqrt((W * (win - mu) ** 2).sum())
    return out


@pytest.mark.parametrize("sigma", [1.0, 1.5, 3.0])
def test_local_std_is_the_windowed_standard_deviation(sigma):
    rng = np.random.default_rng(1)
    L = rng.uniform(0, 100, (17, 23))
    L[:, 12:] = 50.0 + rng.normal(0, 0.5, (17, 11))     # a smooth half beside a rough one
    assert np.allclose(local_std(L, sigma), _direct_std(L, sigma), atol=1e-7)


def test_texture_features_scale_the_lightness_contrast_and_leave_flat_areas_at_zero():
    rng = np.random.default_rng(2)
    h, w = 20, 30
    lab = np.zeros((h * w, 3))
    L = np.full((h, w), 40.0)
    L[:, :10] = rng.uniform(20, 60, (h, 10))             # a striped / rough left third
    lab[:, 0] = L.ravel()
    F = texture_features(lab, (h, w), 2.0, scales=(1.5, 3.0))
    assert F.shape == (h * w, 2) and F.dtype == np.float32
    assert np.allclose(F[:, 0], 2.0 * local_std(L, 1.5).ravel(), rtol=1e-6, atol=1e-4)
    far = F.reshape(h, w, 2)[:, 22:]                     # beyond 4σ (12 px) of the rough part
    assert np.allclose(far, 0.0, atol=1e-3)
    assert F.reshape(h, w, 2)[:, :5, 0].min() > 5.0


def test_the_palette_bins_texture_columns_by_their_own_width():
    rng = np.random.default_rng(3)
    f = np.c_[rng.uniform(0, 50, (500, 3)), rng.uniform(0, 30, 500)]
    pal = ColourPalette.of(f, (1.0, 2.0, 2.0, 2.0))
    err = np.abs(pal.colours[pal.index] - f)
    assert (err <= np.array([1.0, 2.0, 2.0, 2.0]) + 1e-9).all()
    lab = f[:, :3]
    assert np.array_equal(ColourPalette.of(lab).index, ColourPalette.of(lab, (1.0, 2.0, 2.0)).index)
