"""The overlay the canvas shows is drawn straight into a QImage (segapp.gui.qimage.label_qimage):
byte for byte the image the RGBA route gives (render.label_layer, hidden labels cleared,
render.mark_preview or render.mark_unsure, converted by display_qimage), for every
combination of the display's options, on random label maps."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from segapp.gui.qimage import display_qimage, label_qimage
from segapp.io import render


def rgba_route(labels, colors, boundaries, hidden, preview, confidence):
    out = render.label_layer(labels, colors, boundaries)
    if hidden:
        out[..., 3][np.isin(labels, hidden)] = 0
    if preview:
        return display_qimage(render.mark_preview(out))
    return display_qimage(render.mark_unsure(out, confidence))


def pixels(image) -> np.ndarray:
    return np.frombuffer(image.constBits(), np.uint8, count=image.sizeInBytes()).reshape(
        image.height(), image.bytesPerLine())[:, : 4 * image.width()]


@settings(max_examples=40, deadline=None)
@given(h=st.integers(1, 40), w=st.integers(1, 40), k=st.integers(1, 6),
       boundaries=st.booleans(), preview=st.booleans(), unsure=st.booleans(),
       hidden=st.sets(st.integers(1, 6), max_size=2), seed=st.integers(0, 2**16))
def test_straight_into_the_qimage_equals_the_rgba_route(qapp, h, w, k, boundaries, preview,
                                                          unsure, hidden, seed):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, k + 1, (h, w)).astype(np.int32)
    colors = {i: tuple(int(c) for c in rng.integers(0, 256, 3)) for i in range(1, k + 1)}
    confidence = rng.random((h, w)).astype(np.float32) if unsure else None
    hidden = tuple(sorted(hidden))
    want = rgba_route(labels, colors, boundaries, hidden, preview, confidence)
    got = label_qimage(labels, colors, boundaries=boundaries, hidden=hidden,
                       hatch=render.PREVIEW_HATCH if preview else 0,
                       confidence=None if preview else confidence)
    assert got.format() == want.format()
    np.testing.assert_array_equal(pixels(got), pixels(want))


@pytest.mark.parametrize("width", [1, 3, 6])
def test_the_hatching_band_is_every_other_diagonal_of_its_width(width):
    h, w = 23, 31
    y, x = np.mgrid[:h, :w]
    want = ((x + y) // width) % 2 == 1
    got = np.vstack([render._hatch_band(r0, min(h, r0 + 5), w, width) for r0 in range(0, h, 5)])
    np.testing.assert_array_equal(got, want)


def test_the_canvas_keeps_an_opaque_overlay_as_drawn(qapp):
    """Every pixel labelled (all opaque): the pixmap shares the QImage as it is instead of Qt
    scanning it for alpha and converting it to RGB32 on the GUI thread (45 ms at 12 MP), and
    shows the same pixels."""
    from PySide6.QtGui import QImage

    from segapp.gui.canvas import _pixmap

    labels = np.arange(1, 7, dtype=np.int32).repeat(5).reshape(6, 5)
    image = label_qimage(labels, {i: (40 * i, 255 - 30 * i, 7 * i) for i in range(1, 7)})
    assert not image.hasAlphaChannel() or image.pixelColor(0, 0).alpha() == 255
    pm = _pixmap(image)
    assert pm.hasAlphaChannel()              # not converted: no scan, no copy
    back = pm.toImage().convertToFormat(QImage.Format.Format_ARGB32_Premultiplied)
    np.testing.assert_array_equal(pixels(back), pixels(image))
    assert _pixmap(None).isNull()
