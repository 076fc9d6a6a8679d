"""Smoke test of ``benchmarks/painted.py``: the issue's scene (coffee, five labels, one fill of
~120K pixels) and one method measured in its own process — SC-PC, which held 6.8 GB there."""

from __future__ import annotations

import numpy as np

from benchmarks import painted


def test_the_scene_is_the_issues_and_scpc_stays_within_the_image_s_memory():
    img, s = painted.scene("fill")
    assert img.shape == (400, 600, 3)
    assert set(np.unique(s)) == {0, 1, 2, 3, 4, 5}
    assert 110_000 < (s > 0).sum() < 135_000
    got = painted.measure("scpc", "fill", timeout=300)
    assert not isinstance(got, str), got
    wall, cpu, peak_mb, count, _ = got
    assert count == (s > 0).sum()
    assert peak_mb < 1500, peak_mb          # 6,790 MB before (issue 32)
