"""Issue 28 item 3: the status bar names the linear solver of each answer in plain words
(fast / standard solver), and its tooltip the solver and why not the direct one when it did
not run (issue 32 item 7: solver details in a tooltip)."""

from __future__ import annotations

from segapp.solve import direct

from .conftest import segment


def test_the_status_bar_names_the_linear_solver(qtbot, window):
    segment(qtbot, window)
    qtbot.waitUntil(lambda: " solver" in window.time_label.text(), timeout=10_000)
    text, tip = window.time_label.text(), window.time_label.toolTip()
    if direct.available():
        assert text.endswith(", fast solver"), text
        assert "linear solver: direct, CHOLMOD " in tip, tip
    else:
        assert "standard solver (the fast one is not available" in text, text
        assert "not direct: no usable CHOLMOD" in tip, tip


def test_without_cholmod_the_status_bar_says_why_the_solve_is_iterative(qtbot, window,
                                                                       monkeypatch):
    monkeypatch.setattr(direct, "available", lambda: False)
    monkeypatch.setattr(direct, "warn_unavailable", lambda reason: None)
    segment(qtbot, window)
    qtbot.waitUntil(lambda: " solver" in window.time_label.text(), timeout=10_000)
    text, tip = window.time_label.text(), window.time_label.toolTip()
    assert "standard solver (the fast one is not available" in text, text
    assert "linear solver: iterative" in tip and "not direct: no usable CHOLMOD" in tip, tip


def test_the_option_is_the_reason_when_it_asks_for_the_iterative_solver(qtbot, window):
    window.state.options = (("linear_solver", "iterative"),)
    segment(qtbot, window)
    qtbot.waitUntil(lambda: " solver" in window.time_label.text(), timeout=10_000)
    assert "standard solver" in window.time_label.text()
    assert "linear_solver='iterative' was asked" in window.time_label.toolTip()
