"""Per-label colour models (segapp/appearance/models.py): the palette and the posteriors."""

from __future__ import annotations

import numpy as np

from segapp.appearance import ColourPalette, fit_label_models, label_posteriors
from segapp.appearance.mixture import fit_mixture
from segapp.partition.colour_model import lab_colours


def _picture(seed=0):
    rng = np.random.default_rng(seed)
    img = np.zeros((40, 60, 3))
    img[:, :30] = [0.8, 0.2, 0.2]
    img[:, 30:] = [0.2, 0.3, 0.8]
    img += rng.normal(0, 0.03, img.shape)
    return np.clip(img, 0, 1)


def test_the_palette_bins_every_pixel_near_its_colour():
    lab = lab_colours(_picture()).astype(np.float64)
    pal = ColourPalette.of(lab)
    assert pal.index.shape == (lab.shape[0],) and pal.counts.sum() == lab.shape[0]
    assert len(pal.colours) < lab.shape[0]
    err = np.abs(pal.colours[pal.index] - lab)
    assert (err <= np.array([1.0, 2.0, 2.0]) + 1e-9).all()    # within one bin


def test_bin_weights_count_each_labels_pixels_per_bin():
    lab = lab_colours(_picture()).astype(np.float64)
    pal = ColourPalette.of(lab)
    codes = np.full(pal.n, -1)
    codes[:100], codes[-50:] = 0, 1
    W = pal.bin_weights(codes, 2)
    assert W.shape == (len(pal.colours), 2)
    np.testing.assert_array_equal(W.sum(0), [100, 50])
    ref = np.zeros_like(W)
    np.add.at(ref, (pal.index[codes >= 0], codes[codes >= 0]), 1)
    np.testing.assert_array_equal(W, ref)


def test_a_model_fitted_on_bins_explains_the_pixels_as_one_fitted_on_them():
    lab = lab_colours(_picture()).astype(np.float64)
    pal = ColourPalette.of(lab)
    codes = np.zeros(pal.n, np.int64)
    [by_bins] = fit_label_models(pal, pal.bin_weights(codes, 1))
    by_pixels = fit_mixture(lab, np.ones(pal.n))
    # mean log-likelihood of the pixels, nats: the bins cost less than a tenth of a nat
    assert by_bins.log_density(lab).mean() > by_pixels.log_density(lab).mean() - 0.1


def test_posteriors_sum_to_one_and_name_the_colour_a_label_learnt():
    img = _picture()
    lab = lab_colours(img).astype(np.float64)
    pal = ColourPalette.of(lab)
    codes = np.full(pal.n, -1)
    left = np.zeros((40, 60), bool)
    left[10:14, 5:15] = True                      # a stroke on the red half
    right = np.zeros((40, 60), bool)
    right[20:24, 40:50] = True                    # a stroke on the blue half
    codes[left.ravel()], codes[right.ravel()] = 0, 1
    P = label_posteriors(pal, fit_label_models(pal, pal.bin_weights(codes, 2)))
    np.testing.assert_allclose(P.sum(1), 1.0)
    P = P.reshape(40, 60, 2)
    assert (P[:, :30, 0] > 0.99).mean() > 0.99 and (P[:, 30:, 1] > 0.99).mean() > 0.99


def test_a_label_without_a_model_explains_nothing():
    lab = lab_colours(_picture()).astype(np.float64)
    pal = ColourPalette.of(lab)
    codes = np.zeros(pal.n, np.int64)
    models = fit_label_models(pal, pal.bin_weights(codes, 2))
    assert models[1] is None
    P = label_posteriors(pal, models)
    np.testing.assert_array_equal(P[:, 1], 0.0)
    assert (label_posteriors(pal, [None, None]) == 0.5).all()


def test_bin_sums_add_each_labels_soft_weights_per_bin():
    rng = np.random.default_rng(3)
    pal = ColourPalette.of(rng.integers(0, 4, (200, 3)).astype(float) * 3)
    w = rng.random((200, 2))
    got = pal.bin_sums(w)
    want = np.zeros((pal.counts.size, 2))
    for i in range(200):
        want[pal.index[i]] += w[i]
    np.testing.assert_allclose(got, want)
