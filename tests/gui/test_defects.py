"""The GUI defects of issue 32, as a person meets them: a heat map unreadable over the
segmentation's colours, a window resize that left the image small or squeezed the canvas,
Advanced settings clipped, an old error bar over the next image, the "image too large"
message that pointed at a command-line flag, the eraser's invisible slivers."""

from __future__ import annotations

import numpy as np
from PIL import Image
from PySide6.QtCore import QPoint, Qt
from PySide6.QtWidgets import QLabel

from segapp.gui.document import opening

from .conftest import SOLVE_TIMEOUT, drag, open_and_wait, segment


def test_the_full_size_eigenvector_is_drawn_opaque_without_the_colours_under_it(qtbot,
                                                                                   window):
    win = window
    segment(qtbot, win)
    canvas = win.canvas
    assert canvas._overlay_item.isVisible()
    item = win.heatmap_panel.list.item(0)
    qtbot.mouseClick(win.heatmap_panel.list.viewport(), Qt.MouseButton.LeftButton,
                     pos=win.heatmap_panel.list.visualItemRect(item).center())
    qtbot.waitUntil(lambda: canvas.heatmap_shown, timeout=SOLVE_TIMEOUT)
    assert canvas._heat_item.opacity() == 1.0 and not canvas._overlay_item.isVisible()
    qtbot.keyClick(canvas, Qt.Key.Key_Escape)
    qtbot.waitUntil(lambda: not canvas.heatmap_shown, timeout=SOLVE_TIMEOUT)
    assert canvas._overlay_item.isVisible()


def fitted(canvas) -> bool:
    vp = canvas.viewport()
    h, w = canvas.model.shape
    return abs(canvas.zoom - min(vp.width() / w, vp.height() / h)) < 0.02 * canvas.zoom


def test_a_resized_window_refits_the_image_and_the_panels_give_way(qtbot, window):
    win = window
    win.resize(1200, 800)
    qtbot.waitUntil(lambda: fitted(win.canvas))
    win.resize(700, 500)  # narrow: the side panels shrink before the image does
    qtbot.waitUntil(lambda: win.canvas.width() >= 0.45 * win.width() or all(
        d.width() <= d.minimumSizeHint().width() + 2 for d in win.findChildren(
            type(win.folder_dock)) if d.isVisible()))
    assert win.canvas.width() > 250
    qtbot.waitUntil(lambda: fitted(win.canvas))
    win.resize(1400, 900)  # wide again: the panels get their width back, the image refits
    qtbot.waitUntil(lambda: fitted(win.canvas))
    left = win.label_panel.parentWidget()
    qtbot.waitUntil(lambda: left.width() >= 240)
    # zoomed out below fitting (wheel), then a bigger window: the image fills it again
    qtbot.keyClick(win.canvas, Qt.Key.Key_Minus, Qt.KeyboardModifier.ControlModifier)
    assert win.canvas.zoom < 0.9 * min(win.canvas.viewport().width() / 120,
                                       win.canvas.viewport().height() / 90)
    win.resize(1500, 1000)
    qtbot.waitUntil(lambda: fitted(win.canvas))


def test_advanced_settings_at_the_default_size_show_whole_names(qtbot, window):
    panel = window.settings_panel
    qtbot.mouseClick(panel.advanced_button, Qt.MouseButton.LeftButton)
    qtbot.wait(50)
    view = panel.findChild(type(panel.parentWidget().parentWidget()), "") or panel
    for name, row in panel.rows.items():
        form = panel.basic if panel.basic.labelForField(row.widget) else panel.advanced
        label = form.labelForField(row.widget)
        assert isinstance(label, QLabel)
        assert label.width() >= label.sizeHint().width(), (name, label.text())
        # the field lies inside the panel, not cut off at its right edge
        right = row.widget.mapTo(panel, QPoint(row.widget.width(), 0)).x()
        assert right <= panel.width(), (name, right, panel.width())
    del view


def test_the_red_bar_of_the_last_image_goes_when_the_next_one_loads(qtbot, window, tmp_path):
    win = window
    win.show_error("Cannot open image: broken.png is not an image")
    assert win.message_bar.isVisible()
    other = tmp_path / "other.png"
    Image.fromarray(np.zeros((30, 40, 3), np.uint8)).save(other)
    win.open_path(other)
    assert not win.message_bar.isVisible()  # at once, while it is being read
    win.document.wait_loaded()


def test_an_image_above_the_limit_is_offered_not_refused_with_a_cli_flag(qtbot, window,
                                                                        tmp_path, monkeypatch):
    win = window
    monkeypatch.setattr(opening, "PIXEL_LIMIT", 5000)
    big = tmp_path / "big.png"
    Image.fromarray(np.full((90, 120, 3), 90, np.uint8)).save(big)
    questions = []

    def ask(title, text):
        questions.append(text)
        return False
    win.ask = ask
    win.open_path(big)
    win.document.wait_loaded()
    assert win.state.image_path.name == "disc.png" and "not opened" in \
        win.statusBar().currentMessage()
    assert "megapixels" in questions[0] and "--pixel-limit" not in questions[0]
    assert "GB" in questions[0] and "Open it anyway?" in questions[0]
    win.ask = lambda title, text: True
    assert open_and_wait(win, big) and win.model.shape == (90, 120)


def test_the_eraser_along_a_stroke_leaves_nothing_that_acts_as_a_stroke(qtbot, window):
    win = window
    qtbot.keyClick(win.canvas, Qt.Key.Key_1)
    drag(qtbot, win.canvas, [(10, 30), (60, 31), (110, 32)])
    assert (win.model.scribbles == 1).sum() > 100
    qtbot.keyClick(win.canvas, Qt.Key.Key_BracketLeft)  # a slightly smaller brush, by hand
    qtbot.keyClick(win.canvas, Qt.Key.Key_E)
    drag(qtbot, win.canvas, [(10, 30.7), (60, 31.4), (110, 32.6)])
    assert not win.model.scribbles.any()
    assert win.state.history.label_ids_present() == []
