"""Exports never freeze the window, can be cancelled, say what was not written, and write the
overlay that is on screen."""

from __future__ import annotations

import time

import numpy as np
import pytest
from PIL import Image
from PySide6.QtCore import Qt, QTimer

from segapp import Segmentation
from segapp.io import render
from segapp.gui import files
from segapp.gui.qimage import qimage_to_rgb
from segapp.gui.state import Shown
from segapp.live import make_result

from .conftest import SOLVE_TIMEOUT, export, segment


H12, W12 = 3000, 4000  # 12 MP


def show_big_result(qtbot, win, tmp_path):
    """A 12 MP image with a 3-label result and two eigenvectors on display (no 12 MP solve:
    what is measured here is the export)."""
    yy, xx = np.mgrid[0:H12, 0:W12]
    image = np.stack([xx / W12, yy / H12, np.full((H12, W12), 0.5)], axis=2).astype(np.float32)
    win.document.install(image, tmp_path / "big.png")
    labels = (1 + (xx > W12 // 3) + (yy > H12 // 2)).astype(np.int32)
    vectors = np.stack([np.sin(xx / 300.0), np.cos(yy / 200.0)], axis=2).astype(np.float32)
    confidence = (np.abs(np.sin(xx / 500.0)) * np.abs(np.cos(yy / 400.0))).astype(np.float32)
    seg = Segmentation(labels, (1, 2, 3), vectors, np.array([1e-3, 2e-3]),
                       confidence=confidence)
    with qtbot.waitSignal(win.segmentationShown, timeout=SOLVE_TIMEOUT):
        win.state.shown = Shown(("test",), make_result(seg, 1.0))
    qtbot.wait(100)  # the 12 MP image and overlay are on screen
    return seg


def tick_gaps(qtbot, until, interval_ms=10, timeout=120_000):
    """Run the event loop until ``until()``; return the gaps (s) between QTimer ticks."""
    stamps = []
    timer = QTimer()
    timer.setInterval(interval_ms)
    timer.timeout.connect(lambda: stamps.append(time.perf_counter()))
    timer.start()
    try:
        qtbot.waitUntil(until, timeout=timeout)
    finally:
        timer.stop()
    return np.diff(stamps)


def test_export_all_of_a_12_megapixel_image_never_blocks_the_event_loop(
        qtbot, window, tmp_path, monkeypatch):
    """Issue 11: Export All on a 12 MP photo froze the window for ~24 s.

    A 10 ms QTimer must keep ticking while all files are written in the background. The
    machine is shared (load averages of 10+ on 2 cores while the suite runs), so gaps are also
    caused by the scheduler, not by our code. The same timer is measured idle for 1.5 s right
    before and right after the export; the worst idle gap is that noise. The criterion: no gap
    during the export exceeds the noise by more than 100 ms, and 99 % of the gaps are under
    100 ms. Exporting on the GUI thread (the defect) gives one gap of seconds; a numpy call
    holding the GIL for long in the export thread gives many gaps of that length.
    """
    win = window
    seg = show_big_result(qtbot, win, tmp_path)
    out = tmp_path / "out"
    out.mkdir()

    def idle_gaps():
        t_end = time.perf_counter() + 1.5
        return tick_gaps(qtbot, lambda: time.perf_counter() > t_end)

    before = idle_gaps()
    monkeypatch.setattr(win, "get_path", lambda *a, **k: str(out / "big.png"))
    reports = []
    win.document.exporter.finished.connect(reports.append)
    t0 = time.perf_counter()
    qtbot.keyClick(win.canvas, Qt.Key.Key_E, Qt.KeyboardModifier.ControlModifier)
    pressed = time.perf_counter() - t0
    gaps = tick_gaps(qtbot, lambda: bool(reports))
    elapsed = time.perf_counter() - t0
    noise = max(before.max(), idle_gaps().max())
    report = reports[0]
    print(f"export {elapsed:.1f} s, key press returned after {pressed * 1000:.0f} ms; gaps: "
          f"idle max {noise * 1000:.0f} ms, export max {gaps.max() * 1000:.0f} ms, "
          f"p99 {np.percentile(gaps, 99) * 1000:.0f} ms, {len(gaps)} ticks")
    # label map + its JSON, 3 masks, overlay, 2 heat maps, confidence + 3 soft masks, COCO
    assert not report.missing and len(report.written) == 2 + 3 + 1 + 2 + 4 + 1
    assert pressed < 0.1 + noise
    assert gaps.max() < 0.1 + noise, f"{gaps.max() * 1000:.0f} ms without an event"
    assert np.percentile(gaps, 99) < 0.1
    assert elapsed > 0.5  # the work was real (it takes seconds), not skipped
    labels = np.asarray(Image.open(out / "big_labels.png"))
    np.testing.assert_array_equal(labels, seg.labels)


def test_export_can_be_cancelled_and_lists_the_files_not_written(qtbot, window, tmp_path):
    win = window
    show_big_result(qtbot, win, tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    reports = []
    win.document.exporter.finished.connect(reports.append)
    assert win.document.export_to(out / "big.png", files.EXPORT_KINDS)
    qtbot.waitUntil(lambda: win.cancel_export_button.isVisible(), timeout=10_000)
    qtbot.mouseClick(win.cancel_export_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: bool(reports), timeout=60_000)
    report = reports[0]
    assert report.cancelled and report.missing
    assert {p.name for p in report.written} == {p.name for p in out.iterdir()}  # no temp file
    assert "not written" in win.message_bar.text() and "cancelled" in win.message_bar.text()


def test_a_file_that_cannot_be_written_is_reported_with_the_ones_after_it(qtbot, window,
                                                                            tmp_path):
    win = window
    segment(qtbot, win)
    out = tmp_path / "out"
    out.mkdir()
    (out / "shot_overlay.png").mkdir()  # in the way: cannot be replaced by a file
    win.ask.replies = [True]  # "overwrite?" (it exists)
    report = export(qtbot, win, out / "shot.png")
    assert "shot_overlay.png" in [p.name for p in report.missing]
    after = ("shot_overlay.png", "shot_eigenvector", "shot_confidence", "shot_soft", "shot_coco")
    assert all(p.name.startswith(after) for p in report.missing)  # it and the ones after it
    assert "not written: shot_overlay.png" in win.message_bar.text()
    assert not list(out.glob(".*.tmp"))


@pytest.mark.parametrize("boundaries", [False, True])
def test_the_overlay_on_screen_is_the_exported_overlay(qtbot, window, tmp_path, boundaries):
    """Issue 13: the window drew its own overlay; now both come from segapp.io.render."""
    win = window
    segment(qtbot, win)
    win.state.opacity = 0.35
    if boundaries:
        with qtbot.waitSignal(win.segmentationShown, timeout=SOLVE_TIMEOUT):
            win.state.boundaries = True
    win.state.show_strokes = False  # strokes are drawn over the overlay, not exported in it
    report = export(qtbot, win, tmp_path / "shot.png", ("overlay",))
    exported = np.asarray(Image.open(report.written[0]).convert("RGB")).astype(int)
    c = win.canvas
    c.actual_size()
    c.centerOn(60, 45)
    c._cursor_item.setVisible(False)  # the brush outline is not part of the picture
    qtbot.wait(50)
    shot = qimage_to_rgb(c.viewport().grab().toImage()).astype(int)
    top_left = c.mapFromScene(0, 0)
    on_screen = shot[top_left.y():top_left.y() + 90, top_left.x():top_left.x() + 120]
    assert on_screen.shape == exported.shape
    assert np.abs(on_screen - exported).max() <= 2  # rounding of Qt's blend
    plain = render.to_rgb8(win.state.image).astype(int)
    assert np.abs(exported - plain).max() > 20  # and there is an overlay to compare
