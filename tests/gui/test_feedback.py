"""Feedback after every action (issue 23): the busy indicator at the release, the cached
overlay at once on undo and redo, readable eigenvalues, a brush ring that shows on any photo."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QImage

from segapp.gui.heatmap_panel import readable
from segapp.gui.renderer import ImageCache

from .conftest import SOLVE_TIMEOUT, drag, paint_two_labels, segment


def test_the_busy_indicator_is_on_when_the_release_has_been_handled(qtbot, window):
    """The indicator is set by the release itself, not when the debounced solve starts."""
    win = window
    segment(qtbot, win)
    assert not win.progress.isVisible()
    qtbot.keyClick(win.canvas, Qt.Key.Key_1)
    vp, canvas = win.canvas.viewport(), win.canvas
    qtbot.mousePress(vp, Qt.MouseButton.LeftButton, pos=canvas.mapFromScene(40, 70))
    qtbot.mouseMove(vp, canvas.mapFromScene(50, 72))
    assert not win.progress.isVisible()
    qtbot.mouseRelease(vp, Qt.MouseButton.LeftButton, pos=canvas.mapFromScene(50, 72))
    assert win.progress.isVisible() and win.time_label.text() == "segmenting…"
    with qtbot.waitSignal(win.segmentationShown, timeout=SOLVE_TIMEOUT):
        pass


def test_undo_and_redo_of_a_stroke_show_the_cached_overlay_at_once(qtbot, window):
    """Issue 23: at 12 MP the stroke went at once, its overlay 0.4–2.3 s later (drawn anew)."""
    win = window
    segment(qtbot, win)
    first = win.canvas._overlay_item.pixmap().toImage()
    with qtbot.waitSignal(win.segmentationShown, timeout=SOLVE_TIMEOUT,
                          check_params_cb=lambda tag: tag == win.display.tag):
        qtbot.keyClick(win.canvas, Qt.Key.Key_2)
        drag(qtbot, win.canvas, [(40, 45), (80, 45)])  # label 2 across the disc
    second = win.canvas._overlay_item.pixmap().toImage()
    assert first != second
    shown = []
    win.segmentationShown.connect(shown.append)
    ctrl = Qt.KeyboardModifier.ControlModifier
    qtbot.keyClick(win.canvas, Qt.Key.Key_Z, ctrl)
    # no event loop has run since: the overlay was not drawn again, it was kept
    assert shown == [win.display.tag] and win.canvas._overlay_item.pixmap().toImage() == first
    qtbot.keyClick(win.canvas, Qt.Key.Key_Z, ctrl | Qt.KeyboardModifier.ShiftModifier)
    assert len(shown) == 2 and win.canvas._overlay_item.pixmap().toImage() == second
    assert "(from memory)" in win.time_label.text()


def test_a_kept_drawing_is_only_for_the_result_it_was_drawn_from():
    cache = ImageCache(max_bytes=3 * 100 * 100 * 4)
    a, b = np.zeros(3), np.zeros(3)
    image = QImage(100, 100, QImage.Format.Format_ARGB32)
    cache.put("tag", image, a)
    assert cache.get("tag", a) is image and cache.get("tag", b) is None
    del a  # the result is gone: a new result for the same request is drawn anew
    assert cache.get("tag", None) is None
    for k in range(4):
        cache.put(k, image.copy())
    assert cache.nbytes <= cache.max_bytes and cache.get(3) is not None and cache.get(0) is None


def test_the_window_speaks_plainly_and_keeps_the_details_in_tooltips(qtbot, window):
    """Issue 23: eigenvalues showed as ~1e-11; issue 32: "0 iterations" after every direct
    solve, "λ = 2.1×10⁻¹³", "sigma scale", "constraint weight", methods without a word of
    their cost. The technical words are in the tooltips."""
    assert readable(1.234e-11) == "1.2×10⁻¹¹" and readable(0.25) == "0.25"
    assert readable(-3.3e-7, 3) == "-3.30×10⁻⁷" and readable(1234.0) == "1234"
    win = window
    with qtbot.waitSignal(win.segmentationShown, timeout=SOLVE_TIMEOUT,
                          check_params_cb=lambda tag: tag == win.display.tag):
        qtbot.keyClick(win.canvas, Qt.Key.Key_1)
        drag(qtbot, win.canvas, [(50, 45), (70, 45)])
        qtbot.keyClick(win.canvas, Qt.Key.Key_2)
        drag(qtbot, win.canvas, [(5, 5), (115, 8)])
        qtbot.keyClick(win.canvas, Qt.Key.Key_3)
        drag(qtbot, win.canvas, [(5, 85), (115, 85)])
    status = win.time_label.text()
    assert status.startswith("Segmented in ") and "iteration" not in status
    assert "Solver:" in win.time_label.toolTip() and "fastge" in win.time_label.toolTip()
    first, second = win.heatmap_panel.list.item(0), win.heatmap_panel.list.item(1)
    lam = np.asarray(win.result.eigenvalues, float)
    assert first.text() == "Vector 1" and "λ" not in first.text() + second.text()
    assert second.text() == f"Vector 2 (cost ×{abs(lam[1] / lam[0]):.2g})"
    assert "eigenvalue λ1" in first.toolTip() and "e-" not in first.toolTip().split("λ1")[1][:12]
    panel = win.settings_panel
    names = {panel.basic.labelForField(r.widget).text() for r in panel.rows.values()
             if panel.basic.labelForField(r.widget) is not None}
    assert names == {"Colour tolerance ⚙", "Noise smoothing ⚙", "Stroke strength",
                     "Working size ⚙"}
    assert "sigma_scale" in panel.rows["sigma_scale"].widget.toolTip()
    texts = [panel.method.itemText(i) for i in range(panel.method.count())]
    assert texts[0] == "FAST-GE: best on photos, fast (default)"
    assert all(any(w in t for w in ("fast", "slow", "medium", "quick")) for t in texts)


def test_the_brush_ring_shows_on_light_and_dark_photos_and_the_fill_tool_has_one(
        qtbot, window):
    """Issue 23: a one-pixel ring in the label's colour was lost on light photos; the fill
    tool showed no ring."""
    win, canvas = window, window.canvas
    qtbot.mouseMove(canvas.viewport(), canvas.mapFromScene(60, 45))
    ring, outline = canvas._cursor_item, canvas._cursor_outline
    assert ring.isVisible() and outline.isVisible() and outline.rect() == ring.rect()
    assert outline.pen().color().lightness() < 40 and outline.pen().widthF() >= 3
    # drawn on white and on black: both show a dark and a light-or-coloured pixel
    win.state.show_image = False
    for background in (Qt.GlobalColor.white, Qt.GlobalColor.black):
        canvas.setBackgroundBrush(QColor(background))
        shot = canvas.viewport().grab().toImage()
        pos = canvas.mapFromScene(ring.rect().center())
        r = int(ring.rect().width() / 2 * canvas.zoom)
        row = [QColor(shot.pixel(pos.x() + dx, pos.y())).lightness()
               for dx in range(r - 4, r + 5)]
        assert min(row) < 60 and max(row) > 100, (background, row)
    qtbot.keyClick(canvas, Qt.Key.Key_G)
    qtbot.mouseMove(canvas.viewport(), canvas.mapFromScene(62, 45))
    width_on_screen = ring.rect().width() * canvas.zoom
    assert ring.isVisible() and 10 <= width_on_screen <= 20


def test_a_fill_click_shows_the_busy_indicator_before_the_fill_is_applied(qtbot, window):
    """Issue 23: after a fill's click nothing moved until the fill, prepared in the
    background (0.2–1.5 s at 12 MP), was applied and its solve queued."""
    win = window
    segment(qtbot, win)
    win.worker.wait_idle()
    qtbot.waitUntil(lambda: not win.progress.isVisible())
    key = win.state.stroke_key()
    qtbot.keyClick(win.canvas, Qt.Key.Key_G)
    qtbot.mouseClick(win.canvas.viewport(), Qt.MouseButton.LeftButton,
                     pos=win.canvas.mapFromScene(20, 80))
    assert win.state.stroke_key() == key  # not applied yet: prepared off the GUI thread
    assert win.progress.isVisible() and "Filling" in win.statusBar().currentMessage()
    with qtbot.waitSignal(win.segmentationShown, timeout=SOLVE_TIMEOUT,
                          check_params_cb=lambda tag: tag == win.display.tag):
        pass
    qtbot.waitUntil(lambda: not win.progress.isVisible())


def test_a_released_stroke_is_solved_at_once_other_edits_wait_for_the_debounce(qtbot, window):
    """Issue 28: a stroke is one act, so its solve starts at the release (the debounce was
    40 ms of every stroke's wait for its answer); edits that come in bursts still wait for
    it. The debounce is an hour here: anything that waited for it would never start."""
    win = window
    segment(qtbot, win)
    win.worker.debounce_ms = 3_600_000
    qtbot.keyClick(win.canvas, Qt.Key.Key_2)
    vp, canvas = win.canvas.viewport(), win.canvas
    qtbot.mousePress(vp, Qt.MouseButton.LeftButton, pos=canvas.mapFromScene(40, 45))
    qtbot.mouseMove(vp, canvas.mapFromScene(60, 45))
    assert not win.worker.jobs.running  # nothing is solved while the stroke is painted
    qtbot.mouseRelease(vp, Qt.MouseButton.LeftButton, pos=canvas.mapFromScene(80, 45))
    assert win.worker.jobs.running and not win.worker._timer.isActive()  # submitted already
    with qtbot.waitSignal(win.segmentationShown, timeout=SOLVE_TIMEOUT,
                          check_params_cb=lambda tag: tag == win.display.tag):
        pass
    tag = win.display.tag
    win.state.options = (("sigma", 0.3),)    # an option: a new request, debounced
    assert win.display.tag != tag and win.worker.is_busy and not win.worker.jobs.running
    assert win.worker._timer.isActive()


def test_a_working_answer_is_on_screen_before_its_edges_are_refined(qtbot, window,
                                                                     monkeypatch):
    """Issue 28: on a photo above the working size the working answer is drawn first (what
    the person sees and responds to); the refinement of its edges starts once its overlay
    is set, not beside its drawing (0.3 s instead of 0.05 s for a 12 MP overlay)."""
    import segapp

    win = window
    win.state.options = (("max_pixels", 2000),)   # 120×90 px: a working copy of ~2K px
    order = []
    real = segapp.Session.refine

    def refine(self, result, scribbles, cancel=None):
        order.append("refine starts")
        return real(self, result, scribbles, cancel)

    monkeypatch.setattr(segapp.Session, "refine", refine)
    win.segmentationShown.connect(lambda tag: order.append(
        "hatched on screen" if win.state.shown.preview else "sharp on screen"))
    with qtbot.waitSignal(win.segmentationShown, timeout=SOLVE_TIMEOUT,
                          check_params_cb=lambda tag: not win.state.shown.preview):
        paint_two_labels(qtbot, win)
    assert order[-3:] == ["hatched on screen", "refine starts", "sharp on screen"], order


def test_with_nothing_drawing_the_refinement_starts_anyway(qtbot, monkeypatch):
    """A worker whose working answer nobody draws refines it after DRAWN_WAIT."""
    from segapp.gui import worker as worker_module

    monkeypatch.setattr(worker_module, "DRAWN_WAIT", 0.05)
    w = worker_module.SegmentationWorker(debounce_ms=10)
    yy, xx = np.mgrid[:90, :120]
    img = np.where(((yy - 45) ** 2 + (xx - 60) ** 2 < 900)[..., None], [0.8, 0.6, 0.3],
                   [0.2, 0.3, 0.5]).astype(np.float32)
    w.set_image(img)
    s = np.zeros((90, 120), np.uint8)
    s[44:46, 50:70], s[2:4, 5:110] = 2, 1
    kinds = []
    w.previewReady.connect(lambda tag, res: kinds.append("working"))
    with qtbot.waitSignal(w.resultReady, timeout=SOLVE_TIMEOUT):
        w.request(s, "k", "fastge", {"max_pixels": 2000}, debounce=False)
    assert kinds == ["working"]
    assert w.wait_idle(10000)


def test_the_worker_hears_an_answer_is_shown_after_its_overlay_is_painted(qtbot, window):
    """The refinement and the next edit's factorization wait for the answer on screen
    (SegmentationWorker.shown): the worker is told after the canvas painted the overlay, not
    when it was set (a factorization started in between delayed that paint)."""
    from PySide6.QtCore import QEvent, QObject

    win = window
    log: list[str] = []

    class Paints(QObject):
        def eventFilter(self, _obj, event):  # noqa: N802
            if event.type() == QEvent.Type.Paint:
                log.append("paint")
            return False

    paints = Paints()
    win.canvas.viewport().installEventFilter(paints)
    set_overlay, shown = win.canvas.set_overlay, win.worker.shown
    win.canvas.set_overlay = lambda image: (log.append("set"), set_overlay(image))[1]
    win.worker.shown = lambda tag: (log.append("shown"), shown(tag))[1]
    segment(qtbot, win)
    qtbot.waitUntil(lambda: "shown" in log, timeout=SOLVE_TIMEOUT)
    after = log[log.index("set"):]
    assert after.index("paint") < after.index("shown"), log
