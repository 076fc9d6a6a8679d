"""Labels as a person uses them: more than 32, shown or hidden, locked, picked with the
eyedropper; each survives a session, a crash and an export."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QPoint, Qt

from segapp.gui.label_panel import LOCKED, NAME, SHOWN

from .conftest import SOLVE_TIMEOUT, drag, recover_and_wait, segment, simulate_crash


def click_cell(qtbot, table, row, col):
    """A click on a cell: its name, or the check box at the left of a "shown" or "locked"
    cell."""
    item = table.item(row, col)
    table.scrollToItem(item)
    rect = table.visualItemRect(item)
    pos = rect.center() if col == NAME else QPoint(rect.left() + 10, rect.center().y())
    qtbot.mouseClick(table.viewport(), Qt.MouseButton.LeftButton, pos=pos)


def test_forty_labels_are_added_painted_and_kept(qtbot, window, make_window, tmp_path):
    win = window
    panel = win.label_panel
    for _ in range(31):
        qtbot.mouseClick(panel.add_button, Qt.MouseButton.LeftButton)
    assert panel.table.rowCount() == 40 and win.state.label == 40
    drag(qtbot, win.canvas, [(5, 5), (110, 6)])  # label 40, the new one, is painted with
    assert (win.model.scribbles == 40).sum() > 100
    qtbot.keyClick(win.canvas, Qt.Key.Key_2)
    drag(qtbot, win.canvas, [(50, 45), (70, 45)])
    qtbot.waitUntil(lambda: win.result is not None and win.state.shown.tag == win.display.tag,
                    timeout=SOLVE_TIMEOUT)
    assert set(np.unique(win.result.labels)) == {2, 40}
    session = tmp_path / "s.segapp.json"
    assert win.document.save_session(session, wait=True)
    again = make_window(session)
    np.testing.assert_array_equal(again.model.scribbles, win.model.scribbles)
    assert len(again.model.schema) == 40 and again.label_panel.table.rowCount() == 40


def test_a_hidden_label_is_not_drawn_and_a_locked_one_is_not_painted_over(qtbot, window):
    win = window
    segment(qtbot, win)
    table = win.label_panel.table
    assert win.canvas.stroke_layer()[40, 60, 3] == 255  # label 1's stroke, drawn
    click_cell(qtbot, table, 0, SHOWN)  # untick "shown" of label 1
    assert win.model.labels[1].hidden and win.canvas.stroke_layer()[40, 60, 3] == 0
    with qtbot.waitSignal(win.segmentationShown, timeout=SOLVE_TIMEOUT):
        pass  # the overlay drawn again without label 1's colour
    overlay = win.canvas._overlay_item.pixmap().toImage()
    assert overlay.pixelColor(60, 45).alpha() == 0 and overlay.pixelColor(5, 85).alpha() > 0
    click_cell(qtbot, table, 0, SHOWN)
    assert not win.model.labels[1].hidden and win.canvas.stroke_layer()[40, 60, 3] == 255
    # locked: label 2's brush across label 1's stroke leaves it, the eraser too
    click_cell(qtbot, table, 0, LOCKED)
    assert win.model.labels[1].locked
    before = win.model.scribbles == 1
    qtbot.keyClick(win.canvas, Qt.Key.Key_2)
    drag(qtbot, win.canvas, [(60, 20), (60, 70)])
    qtbot.keyClick(win.canvas, Qt.Key.Key_E)
    drag(qtbot, win.canvas, [(45, 44), (75, 46)])
    assert (win.model.scribbles[before] == 1).all()
    qtbot.keyClick(win.canvas, Qt.Key.Key_1)  # painting with it is refused, with a reason
    n = win.model.scribbles.copy()
    drag(qtbot, win.canvas, [(10, 80), (100, 80)])
    np.testing.assert_array_equal(win.model.scribbles, n)
    assert "locked" in win.statusBar().currentMessage()


def test_the_eyedropper_picks_the_stroke_else_the_segment_under_the_mouse(qtbot, window):
    win = window
    segment(qtbot, win)
    qtbot.keyClick(win.canvas, Qt.Key.Key_5)
    assert win.state.label == 5
    qtbot.keyClick(win.canvas, Qt.Key.Key_K)  # the picker, one click
    assert win.state.tool == "picker"
    vp = win.canvas.viewport()
    qtbot.mouseClick(vp, Qt.MouseButton.LeftButton, pos=win.canvas.mapFromScene(60, 45))
    assert win.state.label == 1 and win.state.tool == "brush"  # label 1's stroke is there
    assert "Painting Label 1" in win.statusBar().currentMessage()
    qtbot.keyClick(win.canvas, Qt.Key.Key_5)
    # Ctrl+click with the brush: label 2's segment, where nothing is painted
    qtbot.mouseClick(vp, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.ControlModifier,
                     win.canvas.mapFromScene(10, 60))
    assert win.state.label == 2 and win.model.scribbles[60, 10] == 0


def test_label_states_and_a_label_beyond_nine_survive_a_crash(qtbot, make_window, image_path,
                                                              tmp_path):
    win = make_window(image_path, recovery_dir=tmp_path / "rec")
    for _ in range(3):
        win.model.add_label()
    win.select_label(12)
    drag(qtbot, win.canvas, [(5, 5), (110, 6)])
    win.model.set_label_state(3, locked=True)
    simulate_crash(win)
    again = make_window(recovery_dir=tmp_path / "rec")
    again.choose = lambda *a: "Restore"
    assert recover_and_wait(again)
    assert (again.model.scribbles == 12).sum() > 100 and again.state.label == 12
    assert again.model.labels[3].locked and len(again.model.schema) == 12
