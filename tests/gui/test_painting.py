"""Painting as napari / ilastik users expect: focus, screen-pixel brush, fill, protect labels,
hint, and undo/redo that show the earlier result at once."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import Qt

from segapp.gui import edits

from .conftest import SOLVE_TIMEOUT, drag, segment


def test_label_keys_reach_the_canvas_after_typing_a_brush_size(qtbot, window):
    """Issue 11: typing a size then pressing 3 changed the brush size, not the label."""
    win = window
    spin = win.brush_spin
    qtbot.mouseClick(spin, Qt.MouseButton.LeftButton)
    spin.selectAll()
    qtbot.keyClicks(spin, "30")
    qtbot.keyClick(spin, Qt.Key.Key_Return)
    assert win.state.brush_size == 30
    qtbot.keyClick(win.focusWidget() or win, Qt.Key.Key_3)
    assert win.state.label == 3 and win.state.brush_size == 30
    # the label list never takes the keyboard either
    table = win.label_panel.table
    qtbot.mouseClick(table.viewport(), Qt.MouseButton.LeftButton,
                     pos=table.visualItemRect(table.item(1, 0)).center())
    assert win.state.label == 2
    qtbot.keyClick(win.focusWidget() or win, Qt.Key.Key_4)
    assert win.state.label == 4


def stroke_width(scribbles: np.ndarray, x: int) -> int:
    return int((scribbles[:, x] > 0).sum())


def test_brush_size_is_in_screen_pixels_by_default_and_follows_zoom(qtbot, window):
    """Issue 11: an image-pixel brush was a dotted line on a 12 MP photo at 14 % zoom."""
    win = window
    c, s = win.canvas, win.state
    s.brush_size = 20
    c.set_zoom(2.0)
    c.centerOn(60, 45)
    drag(qtbot, c, [(40, 20), (80, 20)])
    assert stroke_width(win.model.scribbles, 60) == pytest.approx(10, abs=1)  # 20 px / 2
    c.set_zoom(4.0)
    c.centerOn(60, 45)
    drag(qtbot, c, [(40, 60), (80, 60)])
    assert (win.model.scribbles[50:70, 60] > 0).sum() == pytest.approx(5, abs=1)  # 20 / 4
    s.brush_screen = False  # the option: image pixels, whatever the zoom
    drag(qtbot, c, [(40, 40), (80, 40)])
    assert (win.model.scribbles[28:52, 60] > 0).sum() == pytest.approx(20, abs=1)


def test_fill_paints_the_unpainted_pixels_of_a_segment_once_and_gives_the_brush_back(
        qtbot, window):
    """Issue 23: after 4 labels, 3, G, click on the disc flooded the whole segment, deleting
    another label's stroke inside it (k went 4 -> 3), and the tool stayed the fill, so the
    next "stroke" filled a whole segment again."""
    win = window
    segment(qtbot, win)  # label 1 in the disc, 2 around it
    qtbot.keyClick(win.canvas, Qt.Key.Key_4)
    with qtbot.waitSignal(win.segmentationShown, timeout=SOLVE_TIMEOUT,
                          check_params_cb=lambda tag: tag == win.display.tag):
        drag(qtbot, win.canvas, [(66, 52), (70, 54)])  # a label-4 stroke inside the disc
    before = win.model.scribbles.copy()
    assert win.model.label_ids_present() == [1, 2, 4]
    shown = np.asarray(win.result.labels)
    x, y = 55, 50
    clicked = edits.region_at(shown, y, x)  # the segment under the click
    assert (clicked & (before == 4)).any() or (clicked & (before == 1)).any()
    qtbot.keyClick(win.canvas, Qt.Key.Key_3)
    qtbot.keyClick(win.canvas, Qt.Key.Key_G)
    assert win.state.tool == "fill" and win.actions_by_name["fill"].isChecked()
    qtbot.mouseClick(win.canvas.viewport(), Qt.MouseButton.LeftButton,
                     pos=win.canvas.mapFromScene(x + 0.5, y + 0.5))
    # the click was the fill: the brush is back, in the toolbar too
    assert win.state.tool == "brush" and win.actions_by_name["brush"].isChecked()
    assert win.document.wait_edits()
    s = win.model.scribbles
    painted = before > 0
    np.testing.assert_array_equal(s[painted], before[painted])  # no stroke touched
    assert (s[clicked & ~painted] == 3).all()  # the segment's unpainted pixels: label 3
    np.testing.assert_array_equal(s[~clicked], before[~clicked])
    assert win.model.label_ids_present() == [1, 2, 3, 4]  # k went up, never down
    filled = s.copy()
    # the next drag is a stroke again (a few pixels), not another fill of a segment
    qtbot.keyClick(win.canvas, Qt.Key.Key_2)
    drag(qtbot, win.canvas, [(5, 85), (20, 85)])
    changed = win.model.scribbles != filled
    assert 0 < changed.sum() < 200 and (win.model.scribbles[changed] == 2).all()
    # one undo each: the stroke, then the fill
    qtbot.keyClick(win.canvas, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    qtbot.keyClick(win.canvas, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert win.document.wait_edits()
    np.testing.assert_array_equal(win.model.scribbles, before)


def test_paint_unlabelled_pixels_only_keeps_existing_labels(qtbot, window):
    win = window
    drag(qtbot, win.canvas, [(10, 20), (110, 20)])
    before = win.model.scribbles.copy()
    qtbot.keyClick(win.canvas, Qt.Key.Key_U)
    qtbot.keyClick(win.canvas, Qt.Key.Key_2)
    assert win.state.unlabelled_only
    drag(qtbot, win.canvas, [(60, 5), (60, 40)])
    s = win.model.scribbles
    assert (s[before == 1] == 1).all()  # label 1 untouched
    assert s[35, 60] == 2  # the unlabelled part of the new stroke is painted


def test_the_hint_says_what_to_do_next_until_two_labels_are_painted(qtbot, window):
    """Issue 23: after the first stroke the hint went and nothing said a second label was
    needed."""
    win, hint = window, window.canvas.hint
    assert hint.isVisible() and "drag" in hint.text()
    drag(qtbot, win.canvas, [(10, 20), (110, 20)])  # label 1
    assert hint.isVisible() and "second label (key 2)" in hint.text()
    qtbot.keyClick(win.canvas, Qt.Key.Key_2)
    drag(qtbot, win.canvas, [(10, 60), (110, 60)])
    assert not hint.isVisible()
    win.document.undo()
    assert hint.isVisible() and "second label" in hint.text()
    win.document.undo()
    assert hint.isVisible() and "drag" in hint.text()


def test_undo_and_redo_show_the_earlier_segmentation_at_once(qtbot, window):
    """Issue 11: undo/redo re-solved from scratch (7 s each under load)."""
    win = window
    segment(qtbot, win)
    first = win.state.shown
    with qtbot.waitSignal(win.segmentationShown, timeout=SOLVE_TIMEOUT,
                          check_params_cb=lambda tag: tag == win.display.tag):
        drag(qtbot, win.canvas, [(10, 70), (40, 70)])
    second = win.state.shown
    solves = []
    win.worker.busy.connect(lambda b: b and solves.append(b))
    qtbot.keyClick(win.canvas, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    # no event loop turn: the cached result is on display as the key press returns
    assert win.state.shown.tag == win.display.tag == first.tag
    assert win.state.shown.segmentation is first.segmentation and win.state.shown.cached
    qtbot.keyClick(win.canvas, Qt.Key.Key_Y, Qt.KeyboardModifier.ControlModifier)
    assert win.state.shown.segmentation is second.segmentation
    assert solves == [] and not win.worker.is_busy
    assert "(from memory)" in win.time_label.text()


def test_a_fill_where_everything_is_painted_changes_nothing_and_says_so(qtbot, window):
    win = window
    segment(qtbot, win)
    qtbot.keyClick(win.canvas, Qt.Key.Key_2)
    win.state.brush_size = 400  # paint the whole image, label 1 in the disc ...
    with qtbot.waitSignal(win.segmentationShown, timeout=SOLVE_TIMEOUT,
                          check_params_cb=lambda tag: tag == win.display.tag):
        drag(qtbot, win.canvas, [(0, 0), (120, 90), (0, 90), (120, 0)])
        win.state.brush_size = 10
        qtbot.keyClick(win.canvas, Qt.Key.Key_1)
        drag(qtbot, win.canvas, [(55, 45), (65, 45)])
    assert win.model.scribbles.all() and win.model.label_ids_present() == [1, 2]
    before, steps = win.model.scribbles.copy(), win.state.history._index
    qtbot.keyClick(win.canvas, Qt.Key.Key_3)
    qtbot.keyClick(win.canvas, Qt.Key.Key_G)
    qtbot.mouseClick(win.canvas.viewport(), Qt.MouseButton.LeftButton,
                     pos=win.canvas.mapFromScene(60.5, 45.5))
    assert win.document.wait_edits()
    np.testing.assert_array_equal(win.model.scribbles, before)  # ... a fill adds nothing
    assert win.state.history._index == steps and win.state.tool == "brush"
    assert "nothing to change" in win.statusBar().currentMessage()
