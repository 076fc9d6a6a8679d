"""Tests of segapp.io.render: palette, overlays, heat maps and colour bars."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from segapp.io import render
from segapp.errors import InvalidInputError
from segapp.io.render import PALETTE

WHITE = np.array([247, 247, 247])
RED = np.array([178, 24, 43])
BLUE = np.array([33, 102, 172])


def test_palette_distinct_and_not_black():
    assert PALETTE.shape == (9, 3) and PALETTE.dtype == np.uint8
    p = PALETTE.astype(float)
    dist = np.linalg.norm(p[:, None] - p[None], axis=2) + np.eye(9) * 1e9
    assert dist.min() > 60  # clearly different colours
    assert (PALETTE.max(axis=1) > 60).all()  # black means "unlabelled" in scribble files
    with pytest.raises(ValueError):
        PALETTE[0, 0] = 1  # shared constant is read-only


def test_label_color_default_and_cycle():
    np.testing.assert_array_equal(render.label_color(1), PALETTE[0])
    np.testing.assert_array_equal(render.label_color(10), render.MORE_COLORS[0])


def test_the_default_colours_of_255_labels_are_distinct_and_never_black():
    """A schema of up to 255 labels: every id has its own colour; the first 32 lie at least
    67 apart (beyond the 48 within which colour strokes are read as one label)."""
    table = render.default_colors().astype(float)
    assert table.shape == (256, 3) and (table[1:].max(axis=1) >= 100).all()
    assert len({tuple(c) for c in table[1:]}) == 255
    first = table[1:33]
    d = np.linalg.norm(first[:, None] - first[None], axis=2) + np.eye(32) * 1e9
    assert d.min() >= 67
    np.testing.assert_array_equal(table[1:10], PALETTE)
    assert render.default_color(33) == tuple(int(v) for v in table[33])
    with pytest.raises(ValueError):
        render.default_color(256)
    np.testing.assert_array_equal(render.label_color(2, [(1, 2, 3), (0.0, 1.0, 0.0)]),
                                  [0, 255, 0])


def test_to_rgb8_dtypes():
    np.testing.assert_array_equal(render.to_rgb8(np.array([[0.0, 1.0, 2.0]])),
                                  [[[0] * 3, [255] * 3, [255] * 3]])
    np.testing.assert_array_equal(render.to_rgb8(np.array([[65535]], np.uint16)), [[[255] * 3]])
    rgba = np.zeros((1, 1, 4), np.uint8)
    rgba[0, 0] = (1, 2, 3, 4)
    np.testing.assert_array_equal(render.to_rgb8(rgba), [[[1, 2, 3]]])
    with pytest.raises(InvalidInputError):
        render.to_rgb8(np.zeros((2, 2, 2)))


def test_overlay_grey_image_and_alpha():
    img = np.full((2, 3), 100, np.uint8)
    lab = np.array([[0, 1, 2], [0, 0, 1]])
    out = render.overlay(img, lab, alpha=0.5)
    assert out.shape == (2, 3, 3) and out.dtype == np.uint8
    np.testing.assert_array_equal(out[0, 0], [100, 100, 100])  # unlabelled stays grey
    expected = np.floor(0.5 * 100 + 0.5 * PALETTE[0].astype(float) + 0.5)
    np.testing.assert_array_equal(out[0, 1], expected)
    np.testing.assert_array_equal(render.overlay(img, lab, alpha=1.0)[0, 2], PALETTE[1])
    np.testing.assert_array_equal(render.overlay(img, lab, alpha=0.0), render.to_rgb8(img))
    assert img[0, 0] == 100  # input untouched


def test_overlay_custom_colours():
    img = np.zeros((1, 2, 3), np.float32)
    lab = np.array([[1, 2]])
    out = render.overlay(img, lab, alpha=1.0, colors={2: (10, 20, 30)})
    np.testing.assert_array_equal(out[0, 1], [10, 20, 30])
    np.testing.assert_array_equal(out[0, 0], PALETTE[0])  # missing key -> palette


def test_overlay_boundaries_only():
    img = np.zeros((6, 6), np.uint8)
    lab = np.ones((6, 6), int)
    lab[:, 3:] = 2
    lab[0, 0] = 0
    out = render.overlay(img, lab, boundaries=True)
    np.testing.assert_array_equal(out[2, 2], PALETTE[0])  # left side of the 1|2 boundary
    np.testing.assert_array_equal(out[2, 3], PALETTE[1])  # right side
    np.testing.assert_array_equal(out[3, 5], [0, 0, 0])  # region interior untouched
    np.testing.assert_array_equal(out[0, 0], [0, 0, 0])  # label 0 never painted
    np.testing.assert_array_equal(out[4, 0], [0, 0, 0])  # image border is not a boundary


def test_overlay_errors():
    with pytest.raises(InvalidInputError):
        render.overlay(np.zeros((2, 2)), np.zeros((3, 2), int))
    with pytest.raises(InvalidInputError):
        render.overlay(np.zeros((2, 2)), np.zeros((2, 2), int), alpha=1.5)
    with pytest.raises(InvalidInputError):
        render.overlay(np.zeros((2, 2)), -np.ones((2, 2), int))


def test_scribble_overlay_opaque():
    img = np.linspace(0, 1, 12, dtype=np.float32).reshape(3, 4)
    scr = np.zeros((3, 4), np.int32)
    scr[1, 2], scr[2, 0] = 3, 9
    out = render.scribble_overlay(img, scr)
    np.testing.assert_array_equal(out[1, 2], PALETTE[2])
    np.testing.assert_array_equal(out[2, 0], PALETTE[8])
    mask = scr == 0
    np.testing.assert_array_equal(out[mask], render.to_rgb8(img)[mask])


def test_heatmap_colours():
    v = np.array([[-2.0, -1.0, 0.0, 1.0, 5.0, np.nan]])
    out = render.heatmap(v, vmax=1.0)
    assert out.shape == (1, 6, 3) and out.dtype == np.uint8
    np.testing.assert_array_equal(out[0, 0], BLUE)  # saturates below -vmax
    np.testing.assert_array_equal(out[0, 1], BLUE)
    np.testing.assert_array_equal(out[0, 2], WHITE)
    np.testing.assert_array_equal(out[0, 3], RED)
    np.testing.assert_array_equal(out[0, 4], RED)
    np.testing.assert_array_equal(out[0, 5], [128, 128, 128])  # non-finite


def test_heatmap_symmetric_and_robust_default():
    rng = np.random.default_rng(0)
    v = rng.normal(size=(50, 50))
    out = render.heatmap(v)
    neg = render.heatmap(-v)
    # Mirror symmetry: -v shows red and blue swapped, so red channel of one ~ blue of other.
    assert abs(int(out[..., 0].mean()) - int(neg[..., 2].mean())) < 40
    v[0, 0] = 1e6  # one outlier must not wash the rest out to white
    spread = render.heatmap(v)
    assert (np.abs(spread.astype(int) - WHITE).sum(axis=2) > 60).mean() > 0.3


def test_heatmap_errors():
    with pytest.raises(InvalidInputError):
        render.heatmap(np.zeros((2, 2, 2)))
    with pytest.raises(InvalidInputError):
        render.heatmap(np.zeros((2, 2)), vmax=0)
    flat = render.heatmap(np.zeros((2, 2)))  # all-zero input: default vmax must not divide by 0
    np.testing.assert_array_equal(flat, np.broadcast_to(WHITE, (2, 2, 3)))


def test_colorbar():
    bar = render.colorbar(101, 12, vmax=1.0, ticks=False)
    assert bar.shape == (101, 12, 3)
    np.testing.assert_array_equal(bar[0, 0], RED)
    np.testing.assert_array_equal(bar[-1, 0], BLUE)
    np.testing.assert_array_equal(bar[50, 0], WHITE)
    ticked = render.colorbar(101, 12, vmax=1.0)
    assert (ticked != bar).any()
    np.testing.assert_array_equal(ticked[50, 0], [40, 40, 40])  # tick at 0
    np.testing.assert_array_equal(ticked[50, 6], WHITE)  # ticks only at the edges
    with pytest.raises(InvalidInputError):
        render.colorbar(1, 5)


def test_heatmap_with_colorbar():
    out = render.heatmap_with_colorbar(np.ones((20, 30)), vmax=1.0, bar_width=10, gap=4)
    assert out.shape == (20, 44, 3)
    np.testing.assert_array_equal(out[5, 5], RED)
    np.testing.assert_array_equal(out[5, 32], [255, 255, 255])


def test_no_qt_or_matplotlib_import():
    code = ("import sys, segapp.io, segapp.io.render, segapp.samples; "
            "bad = [m for m in ('PySide6', 'matplotlib') if m in sys.modules]; "
            "sys.exit(1 if bad else 0)")
    root = str(Path(render.__file__).resolve().parents[2])  # works uninstalled too
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
    assert subprocess.run([sys.executable, "-c", code], env=env, timeout=120).returncode == 0


def test_banded_drawing_equals_whole_image_drawing(monkeypatch):
    """Large images are drawn in row bands (the GIL is released between them): same pixels."""
    rng = np.random.default_rng(3)
    img = rng.random((37, 23, 3)).astype(np.float32)
    lab = rng.integers(0, 4, (37, 23))
    vec = rng.normal(size=(37, 23))
    whole = [render.overlay(img, lab, 0.4), render.overlay(img, lab, boundaries=True),
             render.heatmap(vec, 1.5), render.to_rgb8(img), render.label_layer(lab, None, True)]
    monkeypatch.setattr(render, "BAND_PIXELS", 23 * 5)  # bands of 5 rows
    banded = [render.overlay(img, lab, 0.4), render.overlay(img, lab, boundaries=True),
              render.heatmap(vec, 1.5), render.to_rgb8(img), render.label_layer(lab, None, True)]
    for a, b in zip(whole, banded):
        np.testing.assert_array_equal(a, b)


def test_mark_unsure_stripes_exactly_the_pixels_below_the_threshold():
    labels = np.ones((20, 30), int)
    labels[:, 15:] = 2
    conf = np.ones((20, 30), np.float32)
    conf[5:9, 10:20] = 0.2
    conf[12, 3] = 0.5                                     # not below: unmarked
    layer = render.label_layer(labels)
    before = layer.copy()
    render.mark_unsure(layer, conf)
    changed = np.any(layer != before, axis=-1)
    marked = np.all(layer[..., :3] == (255, 0, 255), -1) | np.all(layer[..., :3] == 0, -1)
    assert np.array_equal(marked, conf < render.UNSURE_BELOW)
    assert changed[conf < 0.5].mean() > 0.4 and not changed[conf >= 0.5].any()
    assert render.mark_unsure(before.copy(), None).tobytes() == before.tobytes()


def test_mark_preview_clears_every_other_diagonal_band_and_keeps_the_colours():
    layer = render.label_layer(np.arange(1, 5).repeat(50).reshape(10, 20), None, False)
    before = layer.copy()
    out = render.mark_preview(layer, width=3)
    yy, xx = np.mgrid[0:10, 0:20]
    gap = ((xx + yy) // 3) % 2 == 1
    assert out is layer
    assert (out[gap, 3] == 0).all() and (out[~gap] == before[~gap]).all()
    assert 0.4 < gap.mean() < 0.6
