"""Issue 28 item 3: the status bar names the linear solver of each answer, and why not the
direct one when it did not run."""

from __future__ import annotations

from segapp.solve import direct

from .conftest import segment


def test_the_status_bar_names_the_linear_solver(qtbot, window):
    segment(qtbot, window)
    qtbot.waitUntil(lambda: " solve" in window.time_label.text(), timeout=10_000)
    text = window.time_label.text()
    if direct.available():
        assert "direct solve (CHOLMOD " in text, text
    else:
        assert "iterative solve" in text and "not direct: no usable CHOLMOD" in text, text


def test_without_cholmod_the_status_bar_says_why_the_solve_is_iterative(qtbot, window,
                                                                       monkeypatch):
    monkeypatch.setattr(direct, "available", lambda: False)
    monkeypatch.setattr(direct, "warn_unavailable", lambda reason: None)
    segment(qtbot, window)
    qtbot.waitUntil(lambda: " solve" in window.time_label.text(), timeout=10_000)
    text = window.time_label.text()
    assert "iterative solve" in text and "CG steps" in text, text
    assert "not direct: no usable CHOLMOD" in text, text


def test_the_option_is_the_reason_when_it_asks_for_the_iterative_solver(qtbot, window):
    window.state.set_option("linear_solver", "iterative")
    segment(qtbot, window)
    qtbot.waitUntil(lambda: " solve" in window.time_label.text(), timeout=10_000)
    assert "linear_solver='iterative' was asked" in window.time_label.text()
