"""Exports never freeze the window, can be cancelled, say what was not written, and write the
overlay that is on screen."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from PIL import Image
from PySide6.QtCore import Qt

from segapp import Segmentation, io
from segapp.io import render
from segapp.gui import files
from segapp.gui.qimage import qimage_to_rgb
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
        win.state.shown = make_result(seg, 1.0).shown(("test",))
    qtbot.wait(100)  # the 12 MP image and overlay are on screen
    return seg


def test_export_all_of_a_12_megapixel_image_runs_off_the_gui_thread(
        qtbot, window, tmp_path, monkeypatch, threads):
    """Issue 11: Export All on a 12 MP photo froze the window for ~24 s.

    Behaviour, not a clock (the machine is shared): the key press returns with the export
    started and nothing written yet; every file is computed and written on the export's
    thread, none on the GUI thread; the window handles events meanwhile (progress reaches
    its bar file by file, before the report); every file lands. The window's pauses during
    an export are measured by benchmarks/gui.py.
    """
    win = window
    seg = show_big_result(qtbot, win, tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    plan = files.plan_export

    def watched_plan(*args, **kwargs):  # each file's content is computed by its make()
        return [dataclasses.replace(it, make=threads.wrap("make", it.make))
                for it in plan(*args, **kwargs)]

    monkeypatch.setattr(files, "plan_export", watched_plan)
    threads.watch(io, "write_png_atomic")
    monkeypatch.setattr(win, "get_path", lambda *a, **k: str(out / "big.png"))
    reports, progress = [], []
    win.document.exporter.finished.connect(reports.append)
    win.document.exporter.progress.connect(lambda i, n, what: progress.append((i, bool(reports))))
    qtbot.keyClick(win.canvas, Qt.Key.Key_E, Qt.KeyboardModifier.ControlModifier)
    assert win.document.exporter.running and not reports  # started, not waited for
    qtbot.waitUntil(lambda: bool(reports), timeout=120_000)
    report = reports[0]
    # label map + its JSON, 3 masks, overlay, 2 heat maps, confidence + 3 soft masks, COCO
    assert not report.missing and len(report.written) == 2 + 3 + 1 + 2 + 4 + 1
    assert threads.ran("write_png_atomic") == len(report.written) == threads.ran("make")
    assert threads.on_gui_thread() == []
    before = [i for i, reported in progress if not reported]
    assert len(set(before)) >= len(report.written) // 2  # the bar moved file by file
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
