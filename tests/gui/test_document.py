"""Never lose work: journal per stroke, per-instance recovery, unsaved-changes prompts, folders."""

from __future__ import annotations

import shutil

import numpy as np
from PIL import Image
from PySide6.QtCore import QSettings, Qt

from segapp.gui.journal import Journal
from segapp.gui.recovery import orphans

from .conftest import (drag, open_and_wait, paint_two_labels, recover_and_wait, segment,
                       simulate_crash)


def journal_of(win):
    return Journal.read(win.document.instance.journal.path)


def test_every_completed_stroke_is_in_the_journal_when_the_mouse_is_released(qtbot, window):
    win = window
    drag(qtbot, win.canvas, [(20, 30), (60, 30)])
    # no event processing in between: a kill right now must not lose the stroke
    np.testing.assert_array_equal(journal_of(win).scribbles, win.model.scribbles)
    win.select_label(2)
    drag(qtbot, win.canvas, [(5, 80), (100, 80)])
    win.document.undo()
    np.testing.assert_array_equal(journal_of(win).scribbles, win.model.scribbles)
    win.model.rename_label(1, "disc")
    assert journal_of(win).labels[0].name == "disc"


def test_a_second_instance_never_offers_or_deletes_the_first_ones_work(
        qtbot, make_window, image_path, tmp_path):
    root = tmp_path / "rec"
    first = make_window(image_path, recovery_dir=root)
    paint_two_labels(qtbot, first)
    second = make_window(recovery_dir=root)
    assert not recover_and_wait(second)  # the first instance is alive: nothing offered
    assert second.ask.asked == []
    assert first.document.instance.folder.is_dir()
    np.testing.assert_array_equal(journal_of(first).scribbles, first.model.scribbles)
    strokes = first.model.scribbles.copy()
    simulate_crash(first)
    third = make_window(recovery_dir=root)
    third.ask.choices = ["Restore"]
    assert recover_and_wait(third)
    np.testing.assert_array_equal(third.model.scribbles, strokes)
    assert third.document.dirty  # restored work is unsaved work
    assert [o.folder for o in orphans(root)] == []  # the crashed one's folder is gone now


def test_quit_with_unsaved_strokes_asks_and_only_save_or_discard_remove_the_journal(
        qtbot, make_window, image_path, tmp_path):
    win = make_window(image_path)
    folder = win.document.instance.folder
    assert win.close()  # nothing painted: closes without asking, removes its folder
    assert not folder.exists()

    win = make_window(image_path)
    folder = win.document.instance.folder
    paint_two_labels(qtbot, win)
    assert "*" in win.windowTitle()
    win.ask.choices = ["Cancel"]
    assert not win.close()
    assert win.isVisible() and (folder / "journal.sgj").is_file()
    win.ask.choices = ["Save"]
    win.get_path = lambda *a, **k: str(tmp_path / "work.segapp.json")
    assert win.close()
    assert (tmp_path / "work.segapp.json").is_file() and not folder.exists()

    win = make_window(image_path)
    folder = win.document.instance.folder
    paint_two_labels(qtbot, win)
    win.ask.choices = ["Discard"]
    assert win.close() and not folder.exists()


def test_opening_another_image_asks_before_dropping_strokes(qtbot, window, tmp_path):
    win = window
    paint_two_labels(qtbot, win)
    strokes = win.model.scribbles.copy()
    other = tmp_path / "other.png"
    Image.fromarray(np.zeros((30, 40, 3), np.uint8)).save(other)
    win.ask.choices = ["Cancel"]
    assert not open_and_wait(win, other)
    np.testing.assert_array_equal(win.model.scribbles, strokes)
    assert win.state.history.can_undo()
    win.ask.choices = ["Discard"]
    assert open_and_wait(win, other) and win.model.shape == (30, 40)
    assert not win.document.dirty


def test_a_recovered_session_whose_image_moved_asks_for_its_new_place(
        qtbot, make_window, image_path, tmp_path):
    root = tmp_path / "rec"
    crashed = make_window(image_path, recovery_dir=root)
    paint_two_labels(qtbot, crashed)
    strokes = crashed.model.scribbles.copy()
    simulate_crash(crashed)
    moved = tmp_path / "elsewhere" / "disc.png"
    moved.parent.mkdir()
    shutil.move(image_path, moved)

    fresh = make_window(recovery_dir=root)
    fresh.ask.choices = ["Restore"]
    fresh.get_path = lambda *a, **k: None  # the user does not know either
    assert not recover_and_wait(fresh)
    assert "kept" in fresh.message_bar.text()
    assert len(orphans(root)) == 1  # the work is still there ...
    for o in orphans(root):
        o.release()

    again = make_window(recovery_dir=root)
    again.ask.choices = ["Restore"]
    asked = []
    again.get_path = lambda title, *a, **k: asked.append(title) or str(moved)
    assert recover_and_wait(again)  # ... and restored once the image is found
    assert "disc.png" in asked[0]
    np.testing.assert_array_equal(again.model.scribbles, strokes)
    assert again.state.image_path == moved and orphans(root) == []


def test_an_interrupted_export_leaves_no_temporary_file_and_is_reported(
        qtbot, make_window, image_path, tmp_path):
    root = tmp_path / "rec"
    crashed = make_window(image_path, recovery_dir=root)
    out = tmp_path / "out"
    out.mkdir()
    planned = [out / "shot_labels.png", out / "shot_overlay.png"]
    journal = crashed.document.instance.journal
    journal.export_begin(1, [str(p) for p in planned])
    planned[0].write_bytes(b"done")
    journal.export_file(1, str(planned[0]))
    (out / ".segapp-000000000badc0de.tmp").write_bytes(b"half a PNG")  # killed mid-write
    simulate_crash(crashed)
    fresh = make_window(recovery_dir=root)
    assert not recover_and_wait(fresh)  # no strokes to offer, but ...
    assert sorted(p.name for p in out.iterdir()) == ["shot_labels.png"]  # ... no stray temp
    assert "not written: shot_overlay.png" in fresh.message_bar.text()
    assert orphans(root) == []


def test_file_dialogs_start_next_to_the_image_or_in_documents_and_remember(
        qtbot, make_window, image_path, tmp_path):
    from segapp.samples import sample_path
    from segapp.gui.host import documents_dir

    win = make_window(image_path)
    assert win.document.folder("export") == image_path.parent
    sample = make_window(sample_path())
    assert sample.document.folder("export") == documents_dir()  # never inside the package
    elsewhere = tmp_path / "exports"
    elsewhere.mkdir()
    sample.document.remember_folder("export", elsewhere / "x.png")
    assert QSettings().value("folders/export") == str(elsewhere)
    assert sample.document.folder("export") == elsewhere


def test_import_scribbles_from_a_label_png_or_colour_strokes_is_undoable(qtbot, window, tmp_path):
    win = window
    ids = np.zeros((90, 120), np.uint8)
    ids[40:50, 50:70] = 1
    ids[5:10, :] = 2
    Image.fromarray(ids).save(tmp_path / "ids.png")
    colour = np.zeros((90, 120, 3), np.uint8)
    colour[40:50, 50:70] = (255, 0, 0)
    colour[5:10, :] = (0, 0, 255)
    colour[80:85, :] = (0, 255, 0)
    Image.fromarray(colour).save(tmp_path / "colour.png")
    with qtbot.waitSignal(win.segmentationShown, timeout=20000):
        assert win.document.import_scribbles(tmp_path / "ids.png")
        win.document.wait_loaded()
    np.testing.assert_array_equal(win.model.scribbles, ids)
    assert win.document.import_scribbles(tmp_path / "colour.png", "Replace")
    win.document.wait_loaded()
    assert win.model.label_ids_present() == [1, 2, 3]
    win.document.undo()
    np.testing.assert_array_equal(win.model.scribbles, ids)
    bad = np.zeros((10, 10), np.uint8)
    Image.fromarray(bad).save(tmp_path / "small.png")
    win.document.import_scribbles(tmp_path / "small.png", "Merge")
    win.document.wait_loaded()
    np.testing.assert_array_equal(win.model.scribbles, ids)  # unchanged
    assert "Cannot import" in win.message_bar.text()


def test_ctrl_i_asks_merge_or_replace_and_either_is_one_undo_step(qtbot, window, tmp_path):
    """Issue 23: Ctrl+I silently replaced every stroke."""
    win = window
    paint_two_labels(qtbot, win)
    before = win.model.scribbles.copy()
    ids = np.zeros((90, 120), np.uint8)
    ids[60:70, 10:40] = 3  # beside the strokes
    ids[3:9, 40:80] = 1  # over label 2's stroke
    Image.fromarray(ids).save(tmp_path / "more.png")
    win.get_path = lambda *a, **k: str(tmp_path / "more.png")
    ctrl = Qt.KeyboardModifier.ControlModifier

    def import_with(answer):
        win.ask.choices = [answer]
        steps = win.state.history._index  # undo steps
        qtbot.keyClick(win.canvas, Qt.Key.Key_I, ctrl)
        assert win.ask.asked[-1] == "Import strokes" and win.ask.choices == []
        win.document.wait_loaded()
        return win.state.history._index - steps

    assert import_with("Merge") == 1
    s = win.model.scribbles
    np.testing.assert_array_equal(s[ids > 0], ids[ids > 0])
    np.testing.assert_array_equal(s[ids == 0], before[ids == 0])
    assert win.model.label_ids_present() == [1, 2, 3]
    assert "merged" in win.statusBar().currentMessage()
    qtbot.keyClick(win.canvas, Qt.Key.Key_Z, ctrl)  # one step undoes the whole merge
    np.testing.assert_array_equal(win.model.scribbles, before)

    assert import_with("Replace") == 1
    np.testing.assert_array_equal(win.model.scribbles, ids)
    qtbot.keyClick(win.canvas, Qt.Key.Key_Z, ctrl)
    np.testing.assert_array_equal(win.model.scribbles, before)

    assert import_with("Cancel") == 0
    np.testing.assert_array_equal(win.model.scribbles, before)

    qtbot.keyClick(win.canvas, Qt.Key.Key_U)  # paint unlabelled pixels only: merge keeps them
    assert import_with("Merge") == 1
    s = win.model.scribbles
    np.testing.assert_array_equal(s[before > 0], before[before > 0])
    assert (s[(ids > 0) & (before == 0)] == ids[(ids > 0) & (before == 0)]).all()
    # with nothing painted there is nothing to keep: no question
    qtbot.keyClick(win.canvas, Qt.Key.Key_Delete, ctrl)
    assert win.document.wait_edits()
    asked = len(win.ask.asked)
    qtbot.keyClick(win.canvas, Qt.Key.Key_I, ctrl)
    win.document.wait_loaded()
    assert len(win.ask.asked) == asked
    np.testing.assert_array_equal(win.model.scribbles, ids)


def test_a_restore_gives_back_the_undo_history_the_label_and_exactly_what_it_offered(
        qtbot, make_window, image_path, tmp_path):
    """Issue 23: after crash recovery undo and redo were empty, the label was back at 1, and
    the offer's count was not what the restore gave back."""
    root = tmp_path / "rec"
    win = make_window(image_path, recovery_dir=root)
    ctrl = Qt.KeyboardModifier.ControlModifier
    segment(qtbot, win)  # two strokes: labels 1 and 2
    qtbot.keyClick(win.canvas, Qt.Key.Key_4)
    drag(qtbot, win.canvas, [(100, 60), (110, 75)])
    qtbot.keyClick(win.canvas, Qt.Key.Key_3)
    qtbot.keyClick(win.canvas, Qt.Key.Key_G)
    qtbot.mouseClick(win.canvas.viewport(), Qt.MouseButton.LeftButton,
                     pos=win.canvas.mapFromScene(60.5, 45.5))
    assert win.document.wait_edits()
    filled = win.model.scribbles.copy()
    assert (filled == 3).any()
    qtbot.keyClick(win.canvas, Qt.Key.Key_Z, ctrl)  # the fill is undone before the crash
    assert win.document.wait_edits()
    qtbot.keyClick(win.canvas, Qt.Key.Key_4)
    strokes = win.model.scribbles.copy()
    assert not (strokes == 3).any()
    simulate_crash(win)

    def restore(crashed_strokes):
        fresh = make_window(recovery_dir=root)
        offers = []
        fresh.choose = lambda title, text, buttons: offers.append(text) or "Restore"
        assert recover_and_wait(fresh)
        # the offer counts what comes back: the strokes without the undone fill
        assert f"{np.count_nonzero(crashed_strokes)} painted pixels, labels 1, 2, 4" in offers[0]
        np.testing.assert_array_equal(fresh.model.scribbles, crashed_strokes)
        assert fresh.state.label == 4
        assert "3 undo and 1 redo steps" in fresh.statusBar().currentMessage()
        assert fresh.actions_by_name["undo"].isEnabled()
        assert fresh.actions_by_name["redo"].isEnabled()
        return fresh

    fresh = restore(strokes)
    qtbot.keyClick(fresh.canvas, Qt.Key.Key_Y, ctrl)  # the undone fill can be redone
    assert fresh.document.wait_edits()
    np.testing.assert_array_equal(fresh.model.scribbles, filled)
    qtbot.keyClick(fresh.canvas, Qt.Key.Key_Z, ctrl)
    assert fresh.document.wait_edits()
    np.testing.assert_array_equal(fresh.model.scribbles, strokes)
    # the restored history is in the new instance's journal: a second crash keeps it
    simulate_crash(fresh)
    again = restore(strokes)
    for _ in range(3):
        qtbot.keyClick(again.canvas, Qt.Key.Key_Z, ctrl)
    assert again.document.wait_edits()
    assert not again.model.scribbles.any() and not again.actions_by_name["undo"].isEnabled()
