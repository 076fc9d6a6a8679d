"""The locality prior's weights against brute-force distances (segapp.appearance.locality)."""

import numpy as np
import pytest

from segapp.appearance import locality
from segapp.appearance.locality import locality_weights


def _distances(shape, sets):
    """(n, k): every pixel's distance to each set's nearest pixel, by brute force."""
    h, w = shape
    yy, xx = np.divmod(np.arange(h * w), w)
    D = []
    for S in sets:
        sy, sx = np.divmod(np.asarray(S), w)
        D.append(np.sqrt((yy[:, None] - sy[None]) ** 2 + (xx[:, None] - sx[None]) ** 2).min(1))
    return np.stack(D, 1)


def _brute(shape, sets, radius):
    K = np.exp(-(_distances(shape, sets) / (radius * max(shape))) ** 2)
    return K ** 2 / K.sum(1, keepdims=True)


@pytest.mark.parametrize("shape", [(17, 23), (40, 9)])
def test_weights_equal_brute_force_on_a_full_grid(shape):
    rng = np.random.default_rng(1)
    n = shape[0] * shape[1]
    sets = [rng.choice(n, 3, replace=False), rng.choice(n, 5, replace=False)]
    np.testing.assert_allclose(locality_weights(shape, sets, 0.25), _brute(shape, sets, 0.25),
                               rtol=1e-5, atol=1e-7)


def test_on_a_coarse_grid_distances_stay_within_one_cell(monkeypatch):
    monkeypatch.setattr(locality, "GRID_CELLS", 64)   # 60 × 50 image → cells of 7 px
    shape, rng = (60, 50), np.random.default_rng(2)
    S = rng.choice(3000, 4, replace=False)
    yy, xx = np.divmod(np.arange(3000), 50)
    sy, sx = np.divmod(S, 50)
    want = np.sqrt((yy[:, None] - sy) ** 2 + (xx[:, None] - sx) ** 2).min(1).reshape(shape)
    got = locality.stroke_distance(shape, S)
    assert np.abs(got - want).max() <= 7 * np.sqrt(2) + 1e-6
    assert np.all(got[np.unravel_index(S, shape)] == 0)


def test_a_pixel_counts_most_for_its_nearest_label_and_little_far_from_all():
    shape = (1, 200)
    w = locality_weights(shape, [np.array([0]), np.array([10])], 0.05)   # R = 10 px
    assert w[0, 0] > 0.49 and w[0, 1] < w[0, 0]
    assert w[10, 1] > w[10, 0]
    assert w[199].sum() < 1e-6          # 190 px = 19 R from every stroke
    assert np.all(w.sum(1) <= 1.0 + 1e-6)


# -- reach: the solve's prior weighted by the distance to each label's strokes ---------------
def _brute_reach(P, shape, sets, reach):
    Q = P * np.exp(-_distances(shape, sets) / (reach * max(shape)))
    return Q / Q.sum(1, keepdims=True)


@pytest.mark.parametrize("shape,k", [((17, 23), 2), ((40, 9), 3)])
def test_reach_equals_bayes_rule_with_brute_force_distances(shape, k):
    rng = np.random.default_rng(3)
    n = shape[0] * shape[1]
    sets = [rng.choice(n, rng.integers(1, 6), replace=False) for _ in range(k)]
    P = rng.dirichlet(np.ones(k), n)
    got = locality.reach_posteriors(P, shape, sets, 0.1)
    np.testing.assert_allclose(got, _brute_reach(P, shape, sets, 0.1), rtol=1e-5, atol=1e-9)
    np.testing.assert_allclose(got.sum(1), 1.0)


def test_reach_leaves_a_pixel_equally_far_from_every_label_as_its_colours_say():
    shape = (1, 21)
    P = np.tile([0.9, 0.1], (21, 1))
    got = locality.reach_posteriors(P, shape, [np.array([0]), np.array([20])], 0.1)
    np.testing.assert_allclose(got[10], [0.9, 0.1])     # the middle: 10 px from both
    assert got[1, 0] > 0.9 and got[19, 0] < 0.1     # near a label its colours weigh more


def test_reach_never_underflows_far_from_every_stroke():
    # a 1 × 4000 strip, strokes at the left end: 4000 px = 10⁴ R from them
    shape = (1, 4000)
    P = np.tile([0.3, 0.7], (4000, 1))
    got = locality.reach_posteriors(P, shape, [np.array([0]), np.array([1])], 1e-4)
    assert np.all(np.isfinite(got)) and np.allclose(got.sum(1), 1.0)
