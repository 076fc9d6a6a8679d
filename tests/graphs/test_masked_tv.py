"""Total-variation filtering on a set of pixels (segapp.graphs.masked_tv) against
scikit-image's denoise_tv_chambolle on rectangles, and the domain's independence of what lies
outside it."""

from __future__ import annotations

import numpy as np
import pytest
from skimage.restoration import denoise_tv_chambolle

from segapp.cancel import CancelToken
from segapp.errors import Cancelled
from segapp.graphs.masked_tv import masked_tv


def _noisy(H: int, W: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[:H, :W]
    clean = np.stack([xx / W, (yy > H // 2) * 0.6, 0.3 + 0.2 * (xx > W // 3)], axis=-1)
    return (clean + rng.normal(0, 0.05, (H, W, 3))).astype(np.float32)


@pytest.mark.parametrize("iterations", [1, 2, 7, 40])
def test_a_rectangle_is_skimages_result_iteration_for_iteration(iterations):
    f = _noisy(23, 31)
    ref = denoise_tv_chambolle(f, weight=0.08, eps=0, max_num_iter=iterations, channel_axis=-1)
    got = masked_tv(f, np.arange(23 * 31), 0.08, eps=0, max_iter=iterations)
    np.testing.assert_allclose(got.reshape(23, 31, 3), ref, atol=2e-6)


def test_a_rectangle_with_the_stopping_rule_is_skimages_result():
    """Same rule and tolerance; the energy summed in float64 here, in float32 by skimage,
    which may move the stop by an iteration: the results then differ by less than one
    iteration's change (here < 1e-3, against a filter effect of ~0.03)."""
    f = _noisy(40, 50, seed=1)
    ref = denoise_tv_chambolle(f, weight=0.05, channel_axis=-1)
    got = masked_tv(f, np.arange(40 * 50), 0.05).reshape(40, 50, 3)
    assert np.abs(ref - f).mean() > 0.01                  # the filter does something
    np.testing.assert_allclose(got, ref, atol=1e-3)


def test_disjoint_rectangles_are_filtered_each_on_its_own():
    """Two rectangles (one touching the image's right edge: no wrap into the next row) in
    one domain = skimage on each crop; pixels outside the domain are never read."""
    H, W = 40, 60
    f = _noisy(H, W, seed=2)
    mask = np.zeros((H, W), bool)
    mask[3:17, 5:30] = True
    mask[20:38, 41:60] = True
    got = masked_tv(f, np.flatnonzero(mask), 0.06, eps=0, max_iter=25)
    expected = np.zeros_like(f)
    for ys, xs in ((slice(3, 17), slice(5, 30)), (slice(20, 38), slice(41, 60))):
        expected[ys, xs] = denoise_tv_chambolle(f[ys, xs], weight=0.06, eps=0,
                                                max_num_iter=25, channel_axis=-1)
    np.testing.assert_allclose(got, expected[mask], atol=2e-6)
    g = f.copy()
    g[~mask] = 5.0
    np.testing.assert_array_equal(masked_tv(g, np.flatnonzero(mask), 0.06, eps=0, max_iter=25),
                                  got)


def test_an_irregular_domain_against_a_dense_reference():
    """An L-shaped domain with holes: the same iteration written out per pixel with loops."""
    H, W = 12, 14
    f = _noisy(H, W, seed=3)[..., :1]
    mask = np.zeros((H, W), bool)
    mask[2:10, 1:6] = True
    mask[7:12, 1:14] = True
    mask[4, 3] = mask[9, 9] = False
    lam, tau, steps = 0.07, 0.25, 9
    inside = lambda y, x: 0 <= y < H and 0 <= x < W and mask[y, x]   # noqa: E731
    px, py = np.zeros((H, W)), np.zeros((H, W))
    u = f[..., 0].astype(np.float64)
    for i in range(steps):
        if i > 0:
            u = f[..., 0].astype(np.float64).copy()
            for y, x in zip(*np.nonzero(mask)):
                u[y, x] += -(px[y, x] + py[y, x]) + (px[y, x - 1] if inside(y, x - 1) else 0) \
                    + (py[y - 1, x] if inside(y - 1, x) else 0)
        gx = np.zeros((H, W))
        gy = np.zeros((H, W))
        for y, x in zip(*np.nonzero(mask)):
            gx[y, x] = u[y, x + 1] - u[y, x] if inside(y, x + 1) else 0.0
            gy[y, x] = u[y + 1, x] - u[y, x] if inside(y + 1, x) else 0.0
        norm = 1 + tau / lam * np.sqrt(gx ** 2 + gy ** 2)
        px, py = (px - tau * gx) / norm, (py - tau * gy) / norm
    got = masked_tv(f, np.flatnonzero(mask), lam, eps=0, max_iter=steps)
    np.testing.assert_allclose(got[:, 0], u[mask], atol=1e-5)


def test_empty_domain_and_cancel():
    f = _noisy(8, 9)
    assert masked_tv(f, np.zeros(0, np.int64), 0.1).shape == (0, 3)
    with pytest.raises(Cancelled):
        masked_tv(f, np.arange(20), 0.1, cancel=CancelToken.of(lambda: True))
