"""benchmarks/noise.py: the synthetic generator, the oracle partition, the harness."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks import noise
from segapp.result import Segmentation


def test_three_regions_geometry_colours_and_noise():
    img, gt = noise.three_regions(0.0, seed=0)
    assert img.shape == (160, 240, 3) and gt.shape == (160, 240)
    assert (gt == 2).sum() == 80 * 75                       # the rectangle
    assert abs((gt == 1).sum() - np.pi * 45 ** 2) < 0.01 * np.pi * 45 ** 2   # the disc
    for r, colour in enumerate(noise.COLOURS):
        np.testing.assert_allclose(img[gt == r], np.broadcast_to(colour, img[gt == r].shape))
    noisy, _ = noise.three_regions(0.1, seed=1)
    assert np.std(noisy[gt == 0] - np.asarray(noise.COLOURS[0])) == pytest.approx(0.1, rel=0.03)
    again, _ = noise.three_regions(0.1, seed=1)
    np.testing.assert_array_equal(noisy, again)             # seeded


def test_short_strokes_one_per_region_inside_it():
    _, gt = noise.three_regions(0.0)
    s = noise.short_strokes(gt, seed=0)
    assert set(np.unique(s)) == {0, 1, 2, 3}
    for r in range(3):
        assert np.all(gt[s == r + 1] == r)


def test_oracle_partition_by_hand():
    # 4 pixels in a row, 2-D embedding; strokes: pixel 0 = label 1, pixel 3 = label 2.
    V = np.array([[1.0, 0.1], [0.9, 0.5], [0.2, 1.0], [0.1, 1.0]], np.float32)
    res = Segmentation(np.zeros((1, 4), np.int32), (1, 2), V.reshape(1, 4, 2), np.zeros(2))
    s = np.array([[1, 0, 0, 2]])
    # rows normalised: pixel 1 = (0.87, 0.49) is nearer (1, 0.1)/|.| than (0.1, 1)/|.|
    np.testing.assert_array_equal(noise.oracle_labels(res, s), [[1, 1, 2, 2]])


def test_quick_sweep_runs_and_tabulates(tmp_path, capsys):
    assert noise.main(["--quick", "--candidates", "none", "tv1", "--no-peers",
                       "--out", str(tmp_path)]) == 0
    table = (tmp_path / "noise.md").read_text()
    assert "| none |" in table and "| tv1 |" in table
    # quick: levels 0 and 25/255, one trial: header + 2 candidates × 2 levels
    assert (tmp_path / "noise.csv").read_text().count("\n") == 5
