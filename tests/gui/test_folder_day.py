"""An annotator's day (issue 32), as a person does it in the window: a folder of 20 photos,
one set of named labels, strokes painted with the mouse, Ctrl+Return to mark each image done
and go on, Page Up / Page Down, the window closed half-way and the folder opened again the next
morning, then the folder exported as a training set and read back by independent readers
(Pillow for the indexed PNGs, a COCO RLE decoder written from the specification)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLineEdit

from coco_reader import decode_mask  # tests/ is on sys.path

from .conftest import SOLVE_TIMEOUT, drag

H, W, N = 60, 80, 20
CTRL = Qt.KeyboardModifier.ControlModifier


def photo(i: int) -> tuple[np.ndarray, np.ndarray]:
    """A photo of sky over ground (the horizon's height varies) and its true labels."""
    rng = np.random.default_rng(i)
    horizon = 20 + (i * 7) % 25
    truth = np.where(np.arange(H)[:, None] < horizon, 1, 2) * np.ones((1, W), int)
    sky = np.array([90, 150, 230]) + rng.integers(-20, 20, 3)
    ground = np.array([110, 80, 40]) + rng.integers(-20, 20, 3)
    img = np.where(truth[..., None] == 1, sky, ground) + rng.normal(0, 5, (H, W, 3))
    return np.clip(img, 0, 255).astype(np.uint8), truth


@pytest.fixture
def folder(tmp_path) -> Path:
    photos = tmp_path / "photos"
    photos.mkdir()
    for i in range(N):
        Image.fromarray(photo(i)[0]).save(photos / f"img{i + 1}.png")
    return photos


def rename(qtbot, win, row: int, name: str) -> None:
    """Double-click a label's name in the Labels panel, type the new one, Enter."""
    table = win.label_panel.table
    at = table.visualItemRect(table.item(row, 0)).center()
    # a double click as the system delivers it: a click, then the second press as DblClick
    qtbot.mouseClick(table.viewport(), Qt.MouseButton.LeftButton, pos=at)
    qtbot.mouseDClick(table.viewport(), Qt.MouseButton.LeftButton, pos=at)
    editor = next(e for e in table.findChildren(QLineEdit) if e.isVisible())  # the name box
    qtbot.waitUntil(editor.hasFocus)  # the keyboard is the box's while it is open
    editor.selectAll()
    qtbot.keyClicks(editor, name)
    qtbot.keyClick(editor, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: win.model.schema[win.label_panel.label_of(row)].name == name)

def current(win) -> int:
    """The number of the image on screen (img7.png → 7)."""
    return int(win.state.image_path.stem[3:])


def annotate(qtbot, win) -> None:
    """Sky and ground strokes on the image on screen; wait for its segmentation."""
    horizon = 20 + ((current(win) - 1) * 7) % 25
    with qtbot.waitSignal(win.segmentationShown, timeout=SOLVE_TIMEOUT,
                          check_params_cb=lambda tag: tag == win.display.tag):
        qtbot.keyClick(win.canvas, Qt.Key.Key_1)
        drag(qtbot, win.canvas, [(5, horizon / 2), (40, horizon / 2 - 2), (75, horizon / 2)])
        qtbot.keyClick(win.canvas, Qt.Key.Key_2)
        drag(qtbot, win.canvas, [(5, 57), (40, 55), (75, 57)])


def done_and_next(qtbot, win) -> None:
    qtbot.keyClick(win.canvas, Qt.Key.Key_Return, CTRL)
    win.document.wait_loaded()


def test_a_folder_of_20_photos_annotated_over_two_sessions_and_exported(qtbot, make_window,
                                                                        folder, tmp_path):
    # -- day 1 ----------------------------------------------------------------------------
    win = make_window()
    win.get_folder = lambda *a: str(folder)  # File ▸ Open Folder, the folder chosen
    win.actions_by_name["open_folder"].trigger()
    assert win.document.wait_loaded() and current(win) == 1
    assert win.folder_dock.isVisible() and win.folder_panel.list.count() == N
    rename(qtbot, win, 0, "sky")
    rename(qtbot, win, 1, "ground")
    assert [lab.name for lab in win.model.schema][:2] == ["sky", "ground"]
    for n in range(1, 9):
        assert current(win) == n
        annotate(qtbot, win)
        done_and_next(qtbot, win)
    assert current(win) == 9 and win.folder_panel.status_of("img8.png") == "done"
    # Page Down / Page Up: to the next image and back, the strokes kept as they were
    annotate(qtbot, win)
    strokes_9 = win.model.scribbles.copy()
    qtbot.keyClick(win.canvas, Qt.Key.Key_PageDown)
    win.document.wait_loaded()
    assert current(win) == 10 and not win.model.scribbles.any()
    qtbot.keyClick(win.canvas, Qt.Key.Key_PageUp)
    win.document.wait_loaded()
    assert current(win) == 9
    np.testing.assert_array_equal(win.model.scribbles, strokes_9)
    assert win.folder_panel.status_of("img9.png") == "in progress"
    # half-way, a stroke more on image 9, and the window is closed: no question is asked
    qtbot.keyClick(win.canvas, Qt.Key.Key_2)
    drag(qtbot, win.canvas, [(30, 50), (50, 50)])
    strokes_9 = win.model.scribbles.copy()
    win.ask = win.choose = None  # any question would fail the test
    assert win.close()

    # -- day 2: `segapp photos/` again ------------------------------------------------------
    again = make_window()
    assert again.open_path(folder) and again.document.wait_loaded()
    assert current(again) == 9  # where the work stopped, with its strokes
    np.testing.assert_array_equal(again.model.scribbles, strokes_9)
    assert [lab.name for lab in again.model.schema][:2] == ["sky", "ground"]
    counts = again.document.project.counts()
    assert counts == {"done": 8, "in progress": 1, "untouched": 11}
    with qtbot.waitSignal(again.segmentationShown, timeout=SOLVE_TIMEOUT):
        pass  # its answer, solved again
    done_and_next(qtbot, again)
    while current(again) != 9 and again.document.project.counts()["done"] < N:
        annotate(qtbot, again)
        done_and_next(qtbot, again)
    assert again.document.project.counts()["done"] == N
    assert "All 20 images are done" in again.statusBar().currentMessage()

    # -- the training set: File ▸ Export ▸ Dataset of the Folder ---------------------------
    out = tmp_path / "dataset"
    again.get_folder = lambda *a: str(out)
    with qtbot.waitSignal(again.document.exporter.finished, timeout=SOLVE_TIMEOUT) as report:
        qtbot.keyClick(again.canvas, Qt.Key.Key_E,
                       CTRL | Qt.KeyboardModifier.ShiftModifier)
    assert not report.args[0].missing
    coco = json.loads((out / "annotations.json").read_text())
    assert [c["name"] for c in coco["categories"]][:2] == ["sky", "ground"]
    assert sorted(i["file_name"] for i in coco["images"]) == sorted(
        f"img{i + 1}.png" for i in range(N))
    labels_json = json.loads((out / "labels.json").read_text())
    assert labels_json["labels"][0] == {"id": 1, "name": "sky",
                                        "color": list(again.model.schema[1].color)}
    for entry in coco["images"]:
        i = int(entry["file_name"][3:-4]) - 1
        mask = Image.open(out / entry["segapp_mask"])
        assert mask.mode == "P" and mask.getpalette()[3:6] == list(again.model.schema[1].color)
        labels = np.asarray(mask)
        truth = photo(i)[1]
        assert (labels == truth).mean() > 0.97, entry["file_name"]
        anns = [a for a in coco["annotations"] if a["image_id"] == entry["id"]]
        assert {a["category_id"] for a in anns} == {1, 2}
        for ann in anns:
            np.testing.assert_array_equal(decode_mask(ann["segmentation"]),
                                          labels == ann["category_id"])


def test_work_on_a_folders_image_restored_after_a_crash_goes_back_into_the_folder(
        qtbot, make_window, folder, tmp_path):
    from .conftest import recover_and_wait, simulate_crash

    win = make_window(recovery_dir=tmp_path / "rec")
    assert win.open_path(folder) and win.document.wait_loaded()
    qtbot.keyClick(win.canvas, Qt.Key.Key_PageDown)
    win.document.wait_loaded()
    qtbot.keyClick(win.canvas, Qt.Key.Key_3)
    drag(qtbot, win.canvas, [(10, 10), (70, 12)])  # killed before it is written
    strokes = win.model.scribbles.copy()
    assert not (folder / "segapp" / "strokes" / "img2.png").exists()
    win.document.project.unlock()  # the kernel drops a killed process's lock
    simulate_crash(win)
    again = make_window(recovery_dir=tmp_path / "rec")
    asked = []
    again.choose = lambda title, text, buttons: asked.append(text) or "Restore"
    assert recover_and_wait(again)
    assert "of the folder photos" in asked[0]
    assert again.document.project is not None and again.document.project.folder == folder
    assert again.state.image_path.name == "img2.png" and again.folder_dock.isVisible()
    np.testing.assert_array_equal(again.model.scribbles, strokes)
    saved = folder / "segapp" / "strokes" / "img2.png"
    qtbot.waitUntil(saved.exists, timeout=SOLVE_TIMEOUT)  # written into the folder as it goes
    np.testing.assert_array_equal(np.asarray(Image.open(saved)), strokes)
