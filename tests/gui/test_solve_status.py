"""The status bar tells the truth about solving (issue 32, item 4): a long solve shows its
method, stage and seconds, offers Stop after 2 s, and switching the method mid-solve stops the
old solve and says what is on screen — "Segmenting…" stayed for minutes after scpc → fastge.

The long solve is scpc's stood in by a loop (monkeypatched ``_solve``): a solve that reports
its stages and polls its cancel flag every 0.1 s, as the methods do, but that runs as long as
the test needs on the 120 × 90 test image (where every real method answers in under a second).
"""

from __future__ import annotations

import time

from PySide6.QtCore import Qt

from segapp.methods import scpc

from .conftest import segment


def _slow_solve(self, strokes, cancel, timings):
    t = time.perf_counter()
    while True:                                      # a long solve, in stages
        seconds = time.perf_counter() - t
        cancel.progress("injecting the constraints", min(seconds, 30), 30)
        time.sleep(0.1)


def _choose(win, name):
    """Pick a method in the settings panel's list, as a person does."""
    combo = win.settings_panel.method
    combo.setCurrentIndex(combo.findData(name))
    combo.activated.emit(combo.currentIndex())


def test_switching_method_mid_solve_stops_it_and_the_bar_says_what_is_shown(
        qtbot, window, monkeypatch):
    win = window
    segment(qtbot, win)
    fastge_line = win.time_label.text()
    assert fastge_line.startswith("Segmented in ")
    monkeypatch.setattr(scpc.SCPC, "_solve", _slow_solve)
    _choose(win, "scpc")
    qtbot.waitUntil(lambda: "injecting the constraints" in win.time_label.text(), timeout=10_000)
    assert win.progress.isVisible() and win.time_label.text().startswith("scpc: ")
    qtbot.wait(2500)                                 # a long solve offers Stop
    assert win.cancel_solve_button.isVisible()
    assert int(win.time_label.text().rsplit(" ", 2)[-2]) >= 2          # seconds count on
    _choose(win, "fastge")                           # back to the answer on screen
    qtbot.waitUntil(lambda: not win.worker.is_running, timeout=5_000)   # the scpc solve ended
    for _ in range(3):                               # and the bar stays true
        assert win.time_label.text() == fastge_line
        assert not win.progress.isVisible() and not win.cancel_solve_button.isVisible()
        qtbot.wait(300)
    assert win.state.shown.segmentation.method == "fastge"


def test_stop_ends_a_long_solve_and_keeps_the_strokes(qtbot, window, monkeypatch):
    win = window
    segment(qtbot, win)
    strokes = win.state.strokes.scribbles.copy()
    monkeypatch.setattr(scpc.SCPC, "_solve", _slow_solve)
    _choose(win, "scpc")
    qtbot.waitUntil(win.cancel_solve_button.isVisible, timeout=10_000)
    qtbot.mouseClick(win.cancel_solve_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not win.worker.is_running, timeout=5_000)
    assert not win.progress.isVisible() and not win.cancel_solve_button.isVisible()
    assert win.time_label.text() == "stopped; showing the earlier answer (fastge)"
    assert (win.state.strokes.scribbles == strokes).all()
    assert win.state.method == "scpc"


def test_a_new_stroke_during_a_long_solve_supersedes_it(qtbot, window, monkeypatch):
    """Switching to a method that is not cached starts its solve at once: the old one is
    cancelled at its next check, the new one reports."""
    win = window
    segment(qtbot, win)
    monkeypatch.setattr(scpc.SCPC, "_solve", _slow_solve)
    _choose(win, "scpc")
    qtbot.waitUntil(lambda: "injecting" in win.time_label.text(), timeout=10_000)
    _choose(win, "ncut")
    qtbot.waitUntil(lambda: win.state.shown is not None
                    and win.state.shown.segmentation.method == "ncut", timeout=20_000)
    qtbot.waitUntil(lambda: not win.worker.is_running, timeout=5_000)
    assert win.time_label.text().startswith("Segmented in ")
