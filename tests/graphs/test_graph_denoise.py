"""The image graph's noise estimate and total-variation pre-filter (segapp.graphs.image, issue 10).

References are independent of segapp: Immerkær's mask applied by explicit loops, the noise
of synthetic images known by construction, the ROF objective evaluated directly.
"""

from __future__ import annotations

import numpy as np
import pytest

import segapp
from benchmarks.noise import short_strokes, three_regions
from segapp.graphs.image import (DEFAULT_DENOISE, denoise_features, image_features,
                                 image_graph, noise_sigma)


def immerkaer_loops(plane: np.ndarray) -> float:
    """σ̂ = median |N * I| / (0.6745 · 6) over interior pixels, the mask applied by loops."""
    N = [[1, -2, 1], [-2, 4, -2], [1, -2, 1]]
    h, w = plane.shape
    r = [sum(N[a][b] * float(plane[y - 1 + a, x - 1 + b]) for a in range(3) for b in range(3))
         for y in range(1, h - 1) for x in range(1, w - 1)]
    return float(np.median(np.abs(r))) / (0.6745 * 6)


def test_noise_sigma_equals_the_mask_applied_by_loops():
    rng = np.random.default_rng(0)
    img = rng.random((9, 12, 3)).astype(np.float32)
    expected = np.mean([immerkaer_loops(img[:, :, c]) for c in range(3)])
    assert noise_sigma(img) == pytest.approx(expected, rel=1e-5)
    assert noise_sigma(img[:, :, 0]) == pytest.approx(immerkaer_loops(img[:, :, 0]), rel=1e-5)


@pytest.mark.parametrize("sigma_n", [0.01, 0.05, 0.1])
def test_noise_sigma_recovers_known_noise_on_a_piecewise_linear_image(sigma_n):
    rng = np.random.default_rng(1)
    yy, xx = np.mgrid[:200, :300]
    clean = 0.2 + 0.5 * xx / 300 + 0.1 * yy / 200          # a ramp: invisible to the mask
    clean[60:140, 100:200] += 0.2                            # and a step edge: a minority
    img = np.stack([clean] * 3, axis=-1) + rng.normal(0, sigma_n, (200, 300, 3))
    assert noise_sigma(img) == pytest.approx(sigma_n, rel=0.05)
    assert noise_sigma(np.stack([clean] * 3, axis=-1)) == pytest.approx(0.0, abs=1e-6)
    assert noise_sigma(np.zeros((2, 5))) == 0.0              # too small for the 3×3 mask


def rof_energy(u: np.ndarray, f: np.ndarray, lam: float) -> float:
    """Σ |∇u| + Σ (u − f)² / (2 λ), forward differences (the objective TV denoising lowers)."""
    gy = np.diff(u, axis=0, append=u[-1:])
    gx = np.diff(u, axis=1, append=u[:, -1:])
    return float(np.sum(np.hypot(gy, gx)) + np.sum((u - f) ** 2) / (2 * lam))


def test_tv_prefilter_removes_noise_and_keeps_a_step():
    rng = np.random.default_rng(2)
    clean = np.full((80, 80), 0.3, np.float32)
    clean[:, 40:] = 0.7
    f = (clean + rng.normal(0, 0.08, clean.shape)).astype(np.float32)
    u = denoise_features(f[:, :, None], 1.0)[:, :, 0]
    lam = noise_sigma(f)
    assert rof_energy(u, f, lam) < 0.5 * rof_energy(f, f, lam)
    # flat parts: most of the noise gone; the step: its contrast kept
    assert u[:, 5:35].std() < 0.35 * f[:, 5:35].std()
    assert u[:, 42:].mean() - u[:, :38].mean() == pytest.approx(0.4, abs=0.03)
    assert np.abs(u - clean).mean() < 0.4 * np.abs(f - clean).mean()


def test_denoise_zero_and_clean_images_leave_features_unchanged():
    rng = np.random.default_rng(3)
    f = rng.random((20, 30, 3)).astype(np.float32)
    assert denoise_features(f, 0.0) is f
    flat = np.zeros((20, 30, 3), np.float32)
    flat[:, 15:] = 1.0                                       # noise estimate 0: nothing to do
    assert denoise_features(flat, DEFAULT_DENOISE) is flat


def test_default_graph_is_the_raw_graph_of_the_filtered_features():
    rng = np.random.default_rng(4)
    img = np.clip(rng.normal(0.5, 0.1, (24, 32, 3)), 0, 1).astype(np.float32)
    filtered = denoise_features(image_features(img), DEFAULT_DENOISE)
    a = image_graph(img)
    b = image_graph(filtered, denoise=0)
    assert a.sigma == pytest.approx(b.sigma, rel=1e-6)
    assert abs(a.laplacian - b.laplacian).max() < 1e-6
    assert abs(a.laplacian - image_graph(img, denoise=0).laplacian).max() > 1e-3


@pytest.mark.parametrize("level,target", [(25 / 255, 0.97), (35 / 255, 0.93)])
def test_noisy_three_region_image_meets_the_issue_10_targets(level, target):
    """Issue 10: ≥ 97% correct pixels at noise 25/255, ≥ 93% at 35/255 (three trials each);
    without the pre-filter the same images give about half (benchmarks/noise.py)."""
    for seed in range(3):
        image, gt = three_regions(level, seed)
        s = short_strokes(gt, seed)
        labels = segapp.segment(image, s).labels
        assert np.mean(labels == gt + 1) >= target, f"seed {seed}"
    # the graph's own share: without the pre-filter (and without the colour models, which
    # since issue 31 lift the raw graph's answer to 0.92 here) about half
    raw = segapp.segment(image, s, denoise=0, appearance=0).labels
    assert np.mean(raw == gt + 1) < 0.8
