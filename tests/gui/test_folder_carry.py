"""Carry what was learnt to the next photo (issue 32 item 6), as a person meets it in the
window: image 1 of a folder annotated and marked done; image 2 opens with a suggested answer
(hatched, no strokes), one stroke refines it, a second label's stroke gets FAST-GE's answer;
image 3's suggestion is accepted with Ctrl+Shift+Return."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from PySide6.QtCore import Qt

from segapp.appearance import carry
from segapp.errors import Cancelled

from .conftest import SOLVE_TIMEOUT, drag
from .test_folder_day import CTRL, annotate, photo

SHIFT = Qt.KeyboardModifier.ShiftModifier


@pytest.fixture
def folder(tmp_path) -> Path:
    photos = tmp_path / "photos"
    photos.mkdir()
    for i in range(4):
        Image.fromarray(photo(i)[0]).save(photos / f"img{i + 1}.png")
    return photos


def suggestion_shown(win, key=None) -> bool:
    doc = win.document
    return doc.showing_suggestion() and (key is None or win.state.shown.tag[2] == key)


def test_the_next_image_opens_with_a_suggestion_that_strokes_refine(qtbot, make_window,
                                                                    folder, monkeypatch):
    win = make_window()
    assert win.open_path(folder) and win.document.wait_loaded()
    assert not win.document.showing_suggestion()  # nothing finished yet: no suggestion
    annotate(qtbot, win)  # image 1: sky and ground, segmented; then Ctrl+Return
    qtbot.keyClick(win.canvas, Qt.Key.Key_Return, CTRL)
    assert win.document.wait_loaded() and win.state.image_path.name == "img2.png"
    appearance = folder / "segapp" / "appearance.json"

    # image 2 opens with the suggestion: drawn hatched, not strokes, said in the status bar
    qtbot.waitUntil(lambda: suggestion_shown(win), timeout=SOLVE_TIMEOUT)
    assert appearance.is_file()
    assert not win.model.scribbles.any()
    shown = win.state.shown
    assert shown.preview and shown.segmentation.method == "suggestion"
    truth = photo(1)[1]
    assert (shown.labels == truth).mean() > 0.97
    assert "Suggested from 1 finished image" in win.statusBar().currentMessage()
    # Mark Done refuses a suggestion (accepting is its own action)
    errors = []
    win.document.error.connect(errors.append)
    qtbot.keyClick(win.canvas, Qt.Key.Key_Return, CTRL)
    assert errors and "Not segmented yet" in errors[-1]
    assert win.state.image_path.name == "img2.png"

    # strokes of the ground (one label): the suggestion follows them, the strokes kept
    qtbot.keyClick(win.canvas, Qt.Key.Key_2)
    for y in (50, 53):
        drag(qtbot, win.canvas, [(10, y), (30, y)])
    key = win.state.stroke_key()
    qtbot.waitUntil(lambda: suggestion_shown(win, key), timeout=SOLVE_TIMEOUT)
    # asked five times in a burst, one suggestion runs and one more follows it, not five;
    # the first is stopped as soon as the second is asked for (newest wins)
    win.document.saver.wait_loaded()
    outcomes = []

    def recording(*args, **kwargs):
        try:
            s = real_suggest(*args, **kwargs)
        except Cancelled:
            outcomes.append("cancelled")
            raise
        outcomes.append("done")
        return s

    real_suggest = carry.suggest
    monkeypatch.setattr(carry, "suggest", recording)
    runs = []
    win.document.saver.progress.connect(
        lambda _i, n, text: n and text.startswith("Suggesting") and runs.append(text))
    for _ in range(5):
        win.document._suggest()
    win.document.saver.wait_loaded()
    qtbot.waitUntil(lambda: not win.document._suggesting, timeout=SOLVE_TIMEOUT)
    win.document.saver.wait_loaded()
    assert len(runs) == 2 and outcomes == ["cancelled", "done"]
    painted = win.model.scribbles > 0
    assert painted.any() and (win.state.shown.labels[painted] == 2).all()

    # a stroke of the sky: FAST-GE answers
    with qtbot.waitSignal(win.segmentationShown, timeout=SOLVE_TIMEOUT,
                          check_params_cb=lambda tag: tag == win.display.tag):
        qtbot.keyClick(win.canvas, Qt.Key.Key_1)
        drag(qtbot, win.canvas, [(10, 5), (60, 5)])
    assert not win.document.showing_suggestion()
    assert win.state.shown.segmentation.method == "fastge"
    assert (win.state.shown.labels == truth).mean() > 0.97

    # done: image 3 opens with a suggestion from two finished images; accept it
    qtbot.keyClick(win.canvas, Qt.Key.Key_Return, CTRL)
    assert win.document.wait_loaded() and win.state.image_path.name == "img3.png"
    qtbot.waitUntil(lambda: suggestion_shown(win), timeout=SOLVE_TIMEOUT)
    assert win.state.shown.segmentation.label_ids == (1, 2)
    assert "Suggested from 2 finished images" in win.statusBar().currentMessage()
    suggested = win.state.shown.labels.copy()
    qtbot.keyClick(win.canvas, Qt.Key.Key_Return, CTRL | SHIFT)
    assert win.document.wait_loaded() and win.state.image_path.name == "img4.png"
    project = win.document.project
    assert project.status(folder / "img3.png") == "done"
    saved = np.asarray(Image.open(folder / "segapp" / "masks" / "img3.png"))
    np.testing.assert_array_equal(saved, suggested)
    assert (saved == photo(2)[1]).mean() > 0.97
    assert not (folder / "segapp" / "strokes" / "img3.png").exists()  # never as strokes
    win.document.saver.wait_loaded()
    assert set(project.read_appearance().images) == {"img1.png", "img2.png", "img3.png"}

    # image 4: dismissed, the suggestion goes and painting starts from nothing
    qtbot.waitUntil(lambda: suggestion_shown(win), timeout=SOLVE_TIMEOUT)
    win.actions_by_name["dismiss_suggestion"].trigger()
    assert win.state.shown is None
    qtbot.keyClick(win.canvas, Qt.Key.Key_1)
    drag(qtbot, win.canvas, [(10, 5), (60, 5)])
    win.document.saver.wait_loaded()
    assert not win.document.showing_suggestion()
    # image 3 again: the accepted answer is shown as it was kept
    assert win.document.open_in_folder(folder / "img3.png") and win.document.wait_loaded()
    qtbot.waitUntil(lambda: suggestion_shown(win), timeout=SOLVE_TIMEOUT)
    np.testing.assert_array_equal(win.state.shown.labels, suggested)
    assert not win.model.scribbles.any()
    # un-marking an image done forgets what it taught
    win.document.set_done(folder / "img3.png", False)
    win.document.saver.wait_loaded()
    assert "img3.png" not in project.read_appearance().images
