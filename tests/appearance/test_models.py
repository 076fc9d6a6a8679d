"""Per-label colour models (segapp/appearance/models.py): the palette and the posteriors."""

from __future__ import annotations

import numpy as np
import pytest

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


def _sorted_palette(lab, widths=(1.0, 2.0, 2.0)):
    """The palette by sorting (np.unique), as first written: the counting one must equal it."""
    f = np.asarray(lab, np.float64)
    c = f.shape[1]
    q = np.floor((f - f.min(0)) / np.asarray(widths[:c])).astype(np.int64)
    span = q.max(0) + 1
    key = q[:, 0]
    for j in range(1, c):
        key = key * span[j] + q[:, j]
    _, index, counts = np.unique(key, return_inverse=True, return_counts=True)
    index = index.ravel()
    colours = np.stack([np.bincount(index, f[:, j], counts.size) for j in range(c)], 1)
    return colours / counts[:, None], index, counts


@pytest.mark.parametrize("case", ["photo", "grey", "wide", "huge"])
def test_the_palette_is_the_sorted_unique_bins_bit_for_bit(case):
    """Bins ranked by counting (a photo's) or by sorting (a range of more than
    _DENSE_KEYS possible bins) are np.unique's, to the last bit."""
    rng = np.random.default_rng(7)
    lab = {"photo": lambda: lab_colours(_picture()),
           "grey": lambda: lab_colours(_picture())[:, :1],
           "wide": lambda: rng.normal(0, 30, (5000, 3)),
           "huge": lambda: rng.uniform(0, 1e5, (3000, 3))}[case]()
    pal = ColourPalette.of(lab)
    colours, index, counts = _sorted_palette(lab)
    np.testing.assert_array_equal(pal.colours, colours)
    np.testing.assert_array_equal(pal.index, index)
    np.testing.assert_array_equal(pal.counts, counts)
    assert pal.index.dtype == np.int32


def _stroke_weights(pal, shape, strokes):
    """(b, k) weights of label strokes given as lists of (row slice, column slice)."""
    codes = np.full(shape, -1)
    for a, boxes in enumerate(strokes):
        for rows, cols in boxes:
            codes[rows, cols] = a
    return pal.bin_weights(codes.ravel(), len(strokes))


def test_label_models_refit_only_the_label_whose_pixels_changed(monkeypatch):
    """An edit history (strokes added, one undone) through one LabelModels gives, at every
    step, the posteriors of fresh fits bit for bit, and fits only the labels whose weights
    changed; an undo fits nothing."""
    from segapp.appearance import models

    img = _picture()
    pal = ColourPalette.of(lab_colours(img).astype(np.float64))
    noise = np.array([1.0, 0.5, 0.5])
    s = np.s_
    states = [
        [[s[10:14, 5:15]], [s[20:24, 40:50]], [s[30:33, 20:28]]],
        [[s[10:14, 5:15], s[2:4, 2:9]], [s[20:24, 40:50]], [s[30:33, 20:28]]],
        [[s[10:14, 5:15], s[2:4, 2:9]], [s[20:24, 40:50], s[35:38, 50:58]], [s[30:33, 20:28]]],
        [[s[10:14, 5:15], s[2:4, 2:9]], [s[20:24, 40:50]], [s[30:33, 20:28]]],   # undo
    ]
    fitted = []
    real = models.fit_label_models
    monkeypatch.setattr(models, "fit_label_models",
                        lambda *a, **k: fitted.append(a[1].shape[1]) or real(*a, **k))
    kept = models.LabelModels(pal, noise=noise)
    calls = []
    for strokes in states:
        W = _stroke_weights(pal, (40, 60), strokes)
        before = len(fitted)
        got = kept.posteriors(W)
        calls.append(len(fitted) - before)
        want = label_posteriors(pal, real(pal, W, noise=noise))
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(models.LabelModels(pal, noise=noise).posteriors(W), got)
    assert calls == [3, 1, 1, 0]


def test_label_models_keep_a_bounded_number_of_fits():
    from segapp.appearance.models import LabelModels

    pal = ColourPalette.of(lab_colours(_picture()).astype(np.float64))
    kept = LabelModels(pal)
    for r in range(LabelModels.KEPT + 10):
        codes = np.full(pal.n, -1)
        codes[r * 10:r * 10 + 40] = 0
        kept.fit(pal.bin_weights(codes, 1))
    assert len(kept._fits) == LabelModels.KEPT
    assert kept.fit(np.zeros((len(pal.colours), 1))) == [(None, None)]


def test_posteriors_with_label_priors_are_bayes_rule_on_the_equal_prior_ones():
    """``LabelModels.posteriors(weights, log_priors)``: P(a | c) ∝ π_a p_a(c), checked
    against the equal-prior posteriors multiplied by the priors and renormalised (the
    densities cancel between the two), on overlapping colours where it matters."""
    from segapp.appearance import LabelModels

    img = _picture()
    img[:, 25:35] = [0.5, 0.25, 0.5]                     # a band between the two colours
    lab = lab_colours(np.clip(img, 0, 1)).astype(np.float64)
    pal = ColourPalette.of(lab)
    codes = np.full(pal.n, -1)
    codes[np.arange(pal.n).reshape(40, 60)[5:30, 20:28].ravel()] = 0
    codes[np.arange(pal.n).reshape(40, 60)[5:30, 32:40].ravel()] = 1
    W = pal.bin_weights(codes, 2)
    models = LabelModels(pal)
    equal = models.posteriors(W)
    for shares in ([0.9, 0.1], [0.03, 0.97], [0.5, 0.5]):
        got = models.posteriors(W, np.log(shares))
        want = equal * np.asarray(shares)
        want /= want.sum(1, keepdims=True)
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
    assert np.abs(models.posteriors(W, np.log([0.9, 0.1])) - equal).max() > 0.1
