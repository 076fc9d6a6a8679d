"""The settings panel: each method's own options, from its declarations; solve options re-solve
without rebuilding the session; values remembered per method."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QCheckBox, QComboBox, QLineEdit, QSpinBox

from segapp import methods

from .conftest import SOLVE_TIMEOUT, segment



@pytest.mark.parametrize("name", [n for n, _ in methods.available_methods()])
def test_the_panel_shows_exactly_the_methods_declared_options(qtbot, window, name):
    """Issue 11: the panel showed FAST-GE's options for every method."""
    panel = window.settings_panel
    window.state.method = name
    declared = methods.options_of(name)
    assert list(panel.rows) == [o.name for o in declared]
    assert panel.form.rowCount() == len(declared)
    for opt in declared:
        w = panel.rows[opt.name].widget
        assert opt.help in w.toolTip()
        expected = (QCheckBox if opt.type is bool and not opt.none_ok
                    else QComboBox if opt.choices or opt.type is bool
                    else (QSpinBox, QLineEdit))
        assert isinstance(w, expected)


def test_a_bool_that_may_be_none_is_a_three_state_list(qtbot, window):
    """warm_start's default (None) means "per solver": a check box would show it as off."""
    w = window.settings_panel.rows["warm_start"].widget
    assert [w.itemData(i) for i in range(w.count())] == [None, True, False]
    assert w.currentIndex() == 0 and "harmonic" in w.currentText()
    w.setCurrentIndex(2)
    w.activated.emit(2)
    assert window.state.option_dict()["warm_start"] is False


def test_a_solve_option_re_solves_without_rebuilding_the_session(qtbot, window):
    win = window
    segment(qtbot, win)
    session = win.worker._sessions.session
    w = win.settings_panel.rows["constraint_weight"].widget  # a solve option of fastge
    with qtbot.waitSignal(win.segmentationShown, timeout=SOLVE_TIMEOUT):
        w.setText("2.5")
        w.editingFinished.emit()
    assert win.state.option_dict()["constraint_weight"] == 2.5
    assert win.worker._sessions.session is session  # same graph, same hierarchy
    c = win.settings_panel.rows["connectivity"].widget  # a set-up option: new session
    with qtbot.waitSignal(win.segmentationShown, timeout=SOLVE_TIMEOUT):
        c.setCurrentIndex(c.findData(4))
        c.activated.emit(c.currentIndex())
    assert win.worker._sessions.session is not session


def test_bad_text_is_refused_with_the_options_own_message(qtbot, window):
    win = window
    w = win.settings_panel.rows["sigma"].widget
    w.setText("-3")
    w.editingFinished.emit()
    assert "sigma must be" in win.message_bar.text()
    assert w.text() == "data-driven" and "sigma" not in win.state.option_dict()
    win.message_bar.hide()
    w.editingFinished.emit()  # leaving the field untouched is not an error
    assert win.message_bar.text() == "" and win.state.option_dict()["sigma"] is None


def test_values_are_remembered_per_method(qtbot, window, make_window):
    win = window
    win.settings_panel.rows["constraint_weight"].write(3.0)
    win.state.method = "landmark"
    win.settings_panel.rows["n_landmarks"].widget.setValue(500)
    win.state.method = "fastge"
    assert win.state.option_dict() == {"constraint_weight": 3.0}
    other = make_window()
    assert other.state.method == "fastge" and other.state.option_dict() == {"constraint_weight": 3.0}
    other.state.method = "landmark"
    assert other.state.option_dict() == {"n_landmarks": 500}
    other.settings_panel.reset()
    assert other.state.option_dict() == {}
    assert other.settings_panel.rows["n_landmarks"].widget.value() == 1000


def test_typing_in_an_option_then_a_label_key_paints_with_that_label(qtbot, window):
    win = window
    w = win.settings_panel.rows["constraint_weight"].widget
    qtbot.mouseClick(w, Qt.MouseButton.LeftButton)
    w.selectAll()
    qtbot.keyClicks(w, "0.5")
    qtbot.keyClick(w, Qt.Key.Key_Return)
    qtbot.keyClick(win.focusWidget() or win, Qt.Key.Key_3)
    assert win.state.label == 3 and win.state.option_dict()["constraint_weight"] == 0.5
