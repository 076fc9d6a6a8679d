"""Opening a large photo never freezes the window; a load can be cancelled; strokes painted
while a file is read are not dropped without asking."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image
from PySide6.QtCore import Qt

from segapp import io
from segapp.gui import files, loader
from segapp.samples import sample_path

from .conftest import SOLVE_TIMEOUT, drag

H12, W12 = 3000, 4000  # 12 MP


@pytest.fixture(scope="module")
def photo_12mp(tmp_path_factory):
    """The coffee sample enlarged to 4000×3000, as a JPEG (a camera photo's size and format)."""
    path = tmp_path_factory.mktemp("big") / "coffee_12mp.jpg"
    with Image.open(sample_path("coffee")) as im:
        im.convert("RGB").resize((W12, H12), Image.Resampling.BICUBIC).save(path, quality=90)
    return path


def test_opening_a_12_megapixel_photo_reads_and_prepares_it_off_the_gui_thread(
        qtbot, window, photo_12mp, monkeypatch, threads):
    """Opening a 12 MP photo blocked the GUI thread for ~2 s (decoding, colour conversion, the
    display pixmap, the stroke layer). Now it is read in the background: Ctrl+O returns with
    the load started, the decoding and the display picture are made on the loader's thread,
    and the photo arrives on screen. (The window's pauses meanwhile: benchmarks/gui.py.)"""
    win = window
    threads.watch(io, "read_image")
    threads.watch(loader, "display_picture")
    monkeypatch.setattr(win, "get_path", lambda *a, **k: str(photo_12mp))
    qtbot.keyClick(win.canvas, Qt.Key.Key_O, Qt.KeyboardModifier.ControlModifier)
    assert win.document.loader.running and win.state.image_path != photo_12mp
    qtbot.waitUntil(lambda: win.state.image_path == photo_12mp, timeout=120_000)
    assert win.model.shape == (H12, W12) and win.state.image.shape == (H12, W12, 3)
    assert win.canvas._image_item.pixmap().width() == W12  # on screen
    assert threads.ran("read_image") == 1 and threads.ran("display_picture") == 1
    assert threads.on_gui_thread() == []


def test_a_load_shows_progress_and_cancel_keeps_the_current_image(qtbot, window, photo_12mp):
    win = window
    before = win.state.image_path
    assert win.open_path(photo_12mp)
    assert win.cancel_load_button.isVisible() and win.status.load_bar.isVisible()
    qtbot.mouseClick(win.cancel_load_button, Qt.MouseButton.LeftButton)
    assert not win.cancel_load_button.isVisible()
    assert "cancelled" in win.statusBar().currentMessage()
    win.document.loader.wait_idle()  # the worker stops at its next step ...
    qtbot.wait(100)
    assert win.state.image_path == before  # ... and its result is never shown
    assert win.model.shape != (H12, W12)


def test_strokes_painted_while_a_file_is_read_are_asked_about(qtbot, window, photo_12mp):
    win = window
    assert win.open_path(photo_12mp)  # nothing painted: no question
    drag(qtbot, win.canvas, [(20, 30), (60, 30)])  # the window answers meanwhile
    strokes = win.model.scribbles.copy()
    assert strokes.any()
    win.ask.choices = ["Cancel"]  # keep them
    win.document.wait_loaded()
    assert win.ask.asked == ["Unsaved strokes"]
    np.testing.assert_array_equal(win.model.scribbles, strokes)
    assert win.model.shape != (H12, W12)


def test_import_while_an_image_is_read_is_refused_with_a_reason(qtbot, window, photo_12mp,
                                                               tmp_path):
    win = window
    ids = np.zeros(win.model.shape, np.uint8)
    ids[5:10] = 1
    Image.fromarray(ids).save(tmp_path / "ids.png")
    assert win.open_path(photo_12mp)
    assert not win.document.import_scribbles(tmp_path / "ids.png")
    assert "not finished" in win.message_bar.text()
    with qtbot.waitSignal(win.state.events.image_changed, timeout=SOLVE_TIMEOUT):
        pass


def test_saving_the_strokes_of_a_12_megapixel_photo_writes_them_off_the_gui_thread(
        qtbot, window, photo_12mp, tmp_path, monkeypatch, threads):
    """Writing the 12 MP label PNG of a session took ~0.45 s on the GUI thread (Ctrl+S)."""
    win = window
    assert win.open_path(photo_12mp) and win.document.wait_loaded()
    drag(qtbot, win.canvas, [(500, 500), (2500, 1500)])
    assert win.document.dirty
    target = tmp_path / "work.segapp.json"
    monkeypatch.setattr(win, "get_path", lambda *a, **k: str(target))
    threads.watch(files, "save_session")
    qtbot.keyClick(win.canvas, Qt.Key.Key_S, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: not win.document.dirty, timeout=120_000)
    assert threads.calls == [("save_session", False)]  # once, on the saver's thread
    saved = np.asarray(Image.open(tmp_path / "work.segapp.png"))
    np.testing.assert_array_equal(saved, win.model.scribbles)


def test_a_multi_page_image_is_refused_in_one_line_not_cut_to_its_first_page(
        qtbot, window, tmp_path):
    """Issue 32 item 5: a multi-page TIFF opened as its first page, with no word."""
    from PIL import Image

    from .conftest import make_test_image, open_and_wait
    first = Image.fromarray(make_test_image())
    path = tmp_path / "scan.tif"
    first.save(path, save_all=True, append_images=[first.rotate(90), first.rotate(180)])
    before = window.state.image_path
    assert not open_and_wait(window, path)
    text = window.message_bar.text()
    assert "scan.tif holds 3 pages" in text and "\n" not in text and "--page" not in text
    assert window.state.image_path == before           # the image on screen stays
