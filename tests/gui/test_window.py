"""The main window driven as a person would: paint, segment, undo, export, shortcuts, recovery."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest
from PIL import Image
from PySide6.QtCore import QMimeData, QPoint, QPointF, Qt, QUrl
from PySide6.QtGui import QDropEvent, QWheelEvent
from PySide6.QtWidgets import QApplication, QTableWidget

from segapp.gui import files

from .conftest import disc_mask, drag, paint_two_labels

SOLVE_TIMEOUT = 20_000  # ms; a 120×90 solve takes well under a second, CI machines are slow


def wait_segmentation(qtbot, win):
    with qtbot.waitSignal(win.segmentationShown, timeout=SOLVE_TIMEOUT) as blocker:
        pass
    return blocker.args[0]


def segment(qtbot, win):
    """Paint two labels and wait until their segmentation is displayed."""
    with qtbot.waitSignal(win.segmentationShown, timeout=SOLVE_TIMEOUT,
                          check_params_cb=lambda rev: rev == win.model.revision):
        paint_two_labels(qtbot, win)
    return win.result


def test_press_move_release_paints_a_stroke_into_the_model(qtbot, window):
    win = window
    drag(qtbot, win.canvas, [(20, 30), (60, 30), (100, 30)])
    s = win.model.scribbles
    assert s[30, 20:100].min() == 1 and s[30, 20:100].max() == 1
    assert s[60, 60] == 0
    assert win.undo_stack.count() == 1
    layer = win.canvas.stroke_layer()  # the stroke layer follows the model
    assert tuple(layer[30, 60]) == (*win.model.labels[1].color, 255)
    assert layer[60, 60, 3] == 0
    # one label only: no solve, a hint instead
    assert "two labels" in win.statusBar().currentMessage()
    assert win.result is None


def test_segmentation_arrives_and_is_shown(qtbot, window):
    win = window
    result = segment(qtbot, win)
    truth = np.where(disc_mask(), 1, 2)
    assert (result.labels == truth).mean() > 0.95
    assert win.result_revision == win.model.revision
    assert not win.canvas._overlay_item.pixmap().isNull()
    assert win.heatmap_panel.list.count() == result.eigenvectors.shape[2] >= 1
    assert "s" in win.time_label.text() and not win.progress.isVisible()
    # clicking a heat map shows it full size over the image; clicking again hides it
    item = win.heatmap_panel.list.item(0)
    rect = win.heatmap_panel.list.visualItemRect(item)
    qtbot.mouseClick(win.heatmap_panel.list.viewport(), Qt.MouseButton.LeftButton,
                     pos=rect.center())
    assert win.canvas.heatmap_shown
    assert win.canvas._heat_item.pixmap().width() == 120
    qtbot.mouseClick(win.heatmap_panel.list.viewport(), Qt.MouseButton.LeftButton,
                     pos=rect.center())
    assert not win.canvas.heatmap_shown


def test_undo_removes_the_stroke_and_the_overlay_follows(qtbot, window):
    win = window
    segment(qtbot, win)
    before = win.model.scribbles.copy()
    qtbot.keyClick(win.canvas, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert not (win.model.scribbles == 2).any()  # the label-2 stroke is gone
    assert win.result is None and win.canvas._overlay_item.pixmap().isNull()
    with qtbot.waitSignal(win.segmentationShown, timeout=SOLVE_TIMEOUT):
        qtbot.keyClick(win.canvas, Qt.Key.Key_Z,
                       Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier)
    np.testing.assert_array_equal(win.model.scribbles, before)
    assert win.result_revision == win.model.revision


def test_a_newer_edit_supersedes_the_running_solve(qtbot, window):
    win = window
    segment(qtbot, win)
    shown = []
    win.segmentationShown.connect(shown.append)
    with qtbot.waitSignal(win.segmentationShown, timeout=SOLVE_TIMEOUT,
                          check_params_cb=lambda rev: rev == win.model.revision):
        for y in (70, 75, 80):  # three quick strokes: only the last state is displayed
            drag(qtbot, win.canvas, [(10, y), (40, y)])
    assert shown[-1] == win.model.revision
    assert all(r == win.model.revision for r in shown)  # stale results were dropped


def test_export_writes_files_matching_the_model_and_asks_before_overwriting(
        qtbot, window, tmp_path, monkeypatch):
    win = window
    result = segment(qtbot, win)
    win.model.rename_label(1, "Disc!")
    out = tmp_path / "out"
    out.mkdir()
    monkeypatch.setattr(win, "get_path", lambda *a, **k: str(out / "shot.png"))
    qtbot.keyClick(win.canvas, Qt.Key.Key_E, Qt.KeyboardModifier.ControlModifier)  # Export All
    names = sorted(p.name for p in out.iterdir())
    m = result.eigenvectors.shape[2]
    assert names == sorted(["shot_labels.png", "shot_mask1_disc.png", "shot_mask2_label-2.png",
                            "shot_overlay.png"] + [f"shot_eigvec{j + 1}.png" for j in range(m)])
    np.testing.assert_array_equal(np.asarray(Image.open(out / "shot_labels.png")), result.labels)
    mask1 = np.asarray(Image.open(out / "shot_mask1_disc.png"))
    np.testing.assert_array_equal(mask1 == 255, result.labels == 1)
    ov = np.asarray(Image.open(out / "shot_overlay.png"))
    assert ov.shape == (90, 120, 3)
    assert not list(out.glob("*.tmp")) and not list(out.glob(".*"))  # no temporary leftovers

    # exporting again asks first; "No" leaves the files untouched
    stamp = (out / "shot_labels.png").stat().st_mtime_ns
    win.ask.replies = [False]
    assert win.export_to(out / "shot.png", files.EXPORT_KINDS) == []
    assert win.ask.asked == ["Overwrite files?"]
    assert (out / "shot_labels.png").stat().st_mtime_ns == stamp
    win.ask.replies = [True]
    assert len(win.export_to(out / "shot.png", ("labels",))) == 1


def test_export_before_segmentation_is_a_message_not_a_crash(qtbot, window):
    window.export_dialog(("labels",))
    assert "Nothing to export" in window.message_bar.text()


def test_keyboard_shortcuts(qtbot, window):
    win = window
    c = win.canvas
    qtbot.keyClick(c, Qt.Key.Key_3)
    assert c.label == 3 and win.label_panel.current() == 3
    qtbot.keyClick(c, Qt.Key.Key_E)
    assert c.label == 0
    qtbot.keyClick(c, Qt.Key.Key_B)
    assert c.label == 3
    size = c.brush_size
    qtbot.keyClick(c, Qt.Key.Key_BracketRight)
    assert c.brush_size > size and win.brush_spin.value() == c.brush_size
    qtbot.keyClick(c, Qt.Key.Key_BracketLeft)
    qtbot.keyClick(c, Qt.Key.Key_BracketLeft)
    assert c.brush_size < size
    qtbot.keyClick(c, Qt.Key.Key_O)
    assert not c._overlay_item.isVisible()
    qtbot.keyClick(c, Qt.Key.Key_O)
    assert c._overlay_item.isVisible()
    qtbot.keyClick(c, Qt.Key.Key_S)
    assert not c._stroke_item.isVisible()
    qtbot.keyClick(c, Qt.Key.Key_I)
    assert not c._image_item.isVisible()
    qtbot.keyClick(c, Qt.Key.Key_1, Qt.KeyboardModifier.ControlModifier)
    assert c.zoom == pytest.approx(1.0)
    qtbot.keyClick(c, Qt.Key.Key_F)
    assert c.zoom > 1.5  # a 120×90 image fits a 1200×800 window several times over
    qtbot.keyClick(c, Qt.Key.Key_F1)
    table = win.shortcuts_dialog.findChild(QTableWidget)
    rows = dict(win.shortcut_table())
    assert table.rowCount() == len(win.shortcut_table())
    assert rows["Undo"] == "Ctrl+Z" and "Ctrl+Shift+Z" in rows["Redo"] and rows["Eraser"] == "E"
    assert win.shortcuts_dialog.isVisible()
    win.shortcuts_dialog.close()


def test_wheel_zooms_ctrl_wheel_sizes_brush_middle_drag_pans(qtbot, window):
    c = window.canvas
    vp = c.viewport()

    def wheel(steps, mods=Qt.KeyboardModifier.NoModifier):
        pos = QPointF(vp.width() / 2, vp.height() / 2)
        ev = QWheelEvent(pos, c.mapToGlobal(pos.toPoint()).toPointF(), QPoint(0, 0),
                         QPoint(0, 120 * steps), Qt.MouseButton.NoButton, mods,
                         Qt.ScrollPhase.NoScrollPhase, False)
        QApplication.sendEvent(vp, ev)

    z = c.zoom
    wheel(3)
    assert c.zoom == pytest.approx(z * 1.25 ** 3, rel=1e-3)
    size = c.brush_size
    wheel(1, Qt.KeyboardModifier.ControlModifier)
    assert c.brush_size > size and c.zoom == pytest.approx(z * 1.25 ** 3, rel=1e-3)
    h0 = c.horizontalScrollBar().value()
    mid = QPoint(vp.width() // 2, vp.height() // 2)
    qtbot.mousePress(vp, Qt.MouseButton.MiddleButton, pos=mid)
    qtbot.mouseMove(vp, mid + QPoint(-60, 0))
    qtbot.mouseRelease(vp, Qt.MouseButton.MiddleButton, pos=mid + QPoint(-60, 0))
    assert c.horizontalScrollBar().value() == h0 + 60
    assert not window.model.scribbles.any()  # panning never paints
    # Space + left drag pans too
    qtbot.keyPress(c, Qt.Key.Key_Space)
    qtbot.mousePress(vp, Qt.MouseButton.LeftButton, pos=mid)
    qtbot.mouseMove(vp, mid + QPoint(40, 0))
    qtbot.mouseRelease(vp, Qt.MouseButton.LeftButton, pos=mid + QPoint(40, 0))
    qtbot.keyRelease(c, Qt.Key.Key_Space)
    assert c.horizontalScrollBar().value() == h0 + 20
    assert not window.model.scribbles.any()


def test_eraser_clear_label_and_clear_all_are_undoable(qtbot, window):
    win = window
    drag(qtbot, win.canvas, [(10, 20), (110, 20)])
    qtbot.keyClick(win.canvas, Qt.Key.Key_E)
    drag(qtbot, win.canvas, [(60, 5), (60, 40)])
    assert win.model.scribbles[20, 60] == 0 and win.model.scribbles[20, 20] == 1
    qtbot.keyClick(win.canvas, Qt.Key.Key_1)
    qtbot.keyClick(win.canvas, Qt.Key.Key_Delete)  # clear current label
    assert not win.model.scribbles.any()
    qtbot.keyClick(win.canvas, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert win.model.scribbles[20, 20] == 1
    qtbot.keyClick(win.canvas, Qt.Key.Key_Delete, Qt.KeyboardModifier.ControlModifier)
    # stroke, erase, clear-all (the undone "clear label" was dropped from the redo end)
    assert not win.model.scribbles.any() and win.undo_stack.count() == 3


def test_recolour_updates_stroke_layer_and_rename_updates_panel(qtbot, window):
    win = window
    drag(qtbot, win.canvas, [(10, 20), (110, 20)])
    win.model.set_label_color(1, (10, 20, 30))
    assert tuple(win.canvas.stroke_layer()[20, 60]) == (10, 20, 30, 255)
    win.model.rename_label(1, "sky")
    assert win.label_panel.list.item(0).text() == "sky"
    item = win.label_panel.list.item(1)  # editing the name in the list renames the label
    item.setText("ground")
    assert win.model.labels[2].name == "ground"


def test_unreadable_image_and_solver_failure_show_messages(qtbot, window, tmp_path, monkeypatch):
    win = window
    bad = tmp_path / "broken.png"
    bad.write_bytes(b"not an image")
    assert not win.open_path(bad)
    assert "Cannot open image" in win.message_bar.text() and "broken.png" in win.message_bar.text()
    assert not win.open_path(tmp_path / "missing.jpg")
    assert win.model is not None and win.image_path.name == "disc.png"  # old image kept

    import segapp
    from segapp.errors import SolverError

    class FailingSession:
        def __init__(self, *a, **k):
            pass

        def update(self, scribbles, cancel=None):
            raise SolverError("the eigensolver did not converge (test)")

    monkeypatch.setattr(segapp, "Session", FailingSession)
    with qtbot.waitSignal(win.worker.failed, timeout=SOLVE_TIMEOUT):
        paint_two_labels(qtbot, win)
    qtbot.waitUntil(lambda: "did not converge" in win.message_bar.text(), timeout=2000)
    assert "Segmentation failed" in win.message_bar.text()


def test_settings_panel_is_remembered_and_triggers_a_new_solve(qtbot, window, make_window):
    win = window
    segment(qtbot, win)
    with qtbot.waitSignal(win.segmentationShown, timeout=SOLVE_TIMEOUT):
        win.settings_panel.connectivity.setCurrentIndex(0)  # 4 neighbours (default 8)
    assert win.worker._cache.key[2] == tuple(sorted(win.settings_panel.options().items()))
    win.settings_panel.kmeans_restarts.setValue(3)
    other = make_window()
    assert other.settings_panel.values()["connectivity"] == 4
    assert other.settings_panel.values()["kmeans_restarts"] == 3
    other.settings_panel.connectivity.setCurrentIndex(2)
    assert other.settings_panel.options()["radius"] == 3.0
    assert "connectivity" not in other.settings_panel.options()
    other.settings_panel.reset()
    assert other.settings_panel.values()["connectivity"] == 8
    assert other.settings_panel.sigma.toolTip()


def test_session_save_and_open_roundtrip(qtbot, window, make_window, tmp_path):
    win = window
    paint_two_labels(qtbot, win)
    win.model.rename_label(2, "background")
    win.model.set_label_color(1, (200, 10, 10))
    path = tmp_path / "work.segapp.json"
    assert win.save_session(path)
    doc = json.loads(path.read_text())
    assert doc["image"] == "disc.png" and doc["scribbles"] == "work.segapp.png"
    other = make_window()
    with qtbot.waitSignal(other.segmentationShown, timeout=SOLVE_TIMEOUT):
        assert other.open_path(path)
    np.testing.assert_array_equal(other.model.scribbles, win.model.scribbles)
    assert other.model.labels[2].name == "background"
    assert other.model.labels[1].color == (200, 10, 10)
    win.ask.replies = [False]  # saving over it asks first
    assert not win.save_session(path)


def test_crash_recovery_file_restores_strokes(qtbot, make_window, image_path, tmp_path):
    rec = tmp_path / "rec"
    crashed = make_window(image_path, recovery_dir=rec)
    paint_two_labels(qtbot, crashed)
    crashed.model.rename_label(1, "disc")
    qtbot.waitUntil(lambda: files.find_recovery(rec) is not None, timeout=3000)
    qtbot.waitUntil(lambda: "disc" in files.find_recovery(rec).read_text(), timeout=3000)
    strokes = crashed.model.scribbles.copy()
    # A new app starts while the old one "crashed" (never closed cleanly): it offers to restore.
    fresh = make_window(recovery_dir=rec)
    fresh.ask.replies = [True]
    assert fresh.offer_recovery()
    assert fresh.ask.asked == ["Restore previous work?"]
    np.testing.assert_array_equal(fresh.model.scribbles, strokes)
    assert fresh.model.labels[1].name == "disc"
    assert fresh.image_path.name == "disc.png"
    # A clean exit removes the recovery file; declining also removes it.
    fresh.close()
    assert files.find_recovery(rec) is None


def test_drop_an_image_file_opens_it(qtbot, window, tmp_path):
    p = tmp_path / "grey.png"
    Image.fromarray((np.arange(40 * 50).reshape(40, 50) % 255).astype(np.uint8)).save(p)
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(p))])
    ev = QDropEvent(QPointF(10, 10), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton,
                    Qt.KeyboardModifier.NoModifier)
    window.dropEvent(ev)
    assert window.image_path == p and window.model.shape == (40, 50)
    assert str(p.resolve()) == window.recent_files()[0]


def test_painting_a_12_megapixel_image_updates_only_dirty_rectangles(qtbot, make_window):
    from segapp.annotation import BBox

    win = make_window()
    big = np.zeros((3000, 4000, 3), np.float32)
    big[..., 1] = np.linspace(0, 1, 4000, dtype=np.float32)
    win._install(big, win.recovery_dir / "big.png")
    boxes = []
    win.model.changed.connect(boxes.append)
    c = win.canvas
    c.actual_size()
    c.centerOn(2000, 1500)
    pts = [(1900 + 4 * i, 1500 + (i % 7)) for i in range(60)]
    t = time.perf_counter()
    drag(qtbot, c, pts)
    elapsed = time.perf_counter() - t
    assert win.model.scribbles[1500, 1950] == 1
    assert all(isinstance(b, BBox) and b.width * b.height < 40 * 40 for b in boxes)
    assert elapsed / len(pts) < 0.05, f"{elapsed / len(pts) * 1000:.1f} ms per mouse move"


def test_run_opens_the_given_image_and_exits_cleanly(image_path, tmp_path):
    # In a subprocess: QApplication.exec() returning marks the application as closing, which
    # would break every later test of this process.
    import os
    import subprocess
    import sys
    from pathlib import Path

    script = f"""
import sys
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication
from segapp.gui import app

def check():
    win = app.run.window
    if win is None or win.model is None:
        QTimer.singleShot(20, check)
        return
    print(win.windowTitle(), win.model.shape)
    win.close()
    QApplication.quit()

app.make_application()
QTimer.singleShot(20, check)
sys.exit(app.run({str(image_path)!r}))
"""
    repo = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "XDG_DATA_HOME": str(tmp_path / "d"),
           "XDG_CONFIG_HOME": str(tmp_path / "c"),
           "PYTHONPATH": os.pathsep.join([repo, os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "disc.png — segapp (90, 120)"


def test_boundaries_view_opacity_slider_and_about_text(qtbot, window):
    from segapp.gui.main_window import ABOUT_HTML
    from segapp.gui.qimage import qimage_to_rgb

    win = window
    segment(qtbot, win)
    filled = win.canvas._overlay_item.pixmap().toImage()
    qtbot.keyClick(win.canvas, Qt.Key.Key_D)  # boundaries only
    edges = win.canvas._overlay_item.pixmap().toImage()
    assert filled.pixelColor(60, 45).alpha() == 255  # disc centre: filled ...
    assert edges.pixelColor(60, 45).alpha() == 0  # ... but not a boundary
    column = [edges.pixelColor(60, y).alpha() for y in range(90)]
    assert 0 < sum(a == 255 for a in column) < 10  # the disc's edge crosses this column
    win.opacity_slider.setValue(20)
    assert win.canvas._overlay_item.opacity() == pytest.approx(0.2)
    assert qimage_to_rgb(edges).shape == (90, 120, 3)
    assert "FAST-GE" in ABOUT_HTML and "Cucuringu" in ABOUT_HTML
