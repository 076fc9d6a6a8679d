"""The settings panel: each method's own options, from its declarations; solve options re-solve
without rebuilding the session; values remembered per method."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QCheckBox, QComboBox, QLineEdit, QSpinBox

from segapp import methods
from segapp.gui.settings_panel import panel_options

from .conftest import SOLVE_TIMEOUT, segment



@pytest.mark.parametrize("name", [n for n, _ in methods.available_methods()])
def test_the_panel_shows_exactly_the_methods_declared_options(qtbot, window, name):
    """Issue 11: the panel showed FAST-GE's options for every method."""
    panel = window.settings_panel
    window.state.method = name
    declared = panel_options(name)
    assert list(panel.rows) == [o.name for o in declared]
    assert panel.basic.rowCount() + panel.advanced.rowCount() == len(declared)
    assert ("max_pixels" in panel.rows) == (not getattr(methods.get(name), "full_resolution",
                                                        False))
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
    session = win.worker.engine.sessions.session
    w = win.settings_panel.rows["constraint_weight"].widget  # a solve option of fastge
    with qtbot.waitSignal(win.segmentationShown, timeout=SOLVE_TIMEOUT):
        w.setText("2.5")
        w.editingFinished.emit()
    assert win.state.option_dict()["constraint_weight"] == 2.5
    assert win.worker.engine.sessions.session is session  # same graph, same hierarchy
    c = win.settings_panel.rows["connectivity"].widget  # a set-up option: new session
    with qtbot.waitSignal(win.segmentationShown, timeout=SOLVE_TIMEOUT):
        c.setCurrentIndex(c.findData(4))
        c.activated.emit(c.currentIndex())
    assert win.worker.engine.sessions.session is not session


def test_bad_text_is_refused_with_the_options_own_message(qtbot, window):
    win = window
    w = win.settings_panel.rows["sigma"].widget
    w.setText("-3")
    w.editingFinished.emit()
    assert "sigma must be" in win.settings_panel.error_text()
    assert w.text() == "data-driven" and "sigma" not in win.state.option_dict()
    w.editingFinished.emit()  # leaving the field untouched is no edit: the reason stays
    assert "sigma must be" in win.settings_panel.error_text()
    assert win.state.option_dict() == {}  # the default is not stored: no change, no solve
    w.setText("0.5")
    w.editingFinished.emit()
    assert win.settings_panel.error_text() == "" and win.state.option_dict()["sigma"] == 0.5


def test_values_are_remembered_per_method(qtbot, window, make_window):
    win = window
    w = win.settings_panel.rows["constraint_weight"].widget
    w.setText("3")
    w.editingFinished.emit()
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


def test_basic_shows_what_a_person_tunes_and_advanced_is_collapsed(qtbot, window):
    """Issue 23: ~20 solver internals were shown next to the two settings people use."""
    panel = window.settings_panel
    basic = {panel.basic.itemAt(i, panel.basic.ItemRole.FieldRole).widget()
             for i in range(panel.basic.rowCount())}
    shown = {n for n, r in panel.rows.items() if r.widget in basic}
    assert shown == {"sigma_scale", "denoise", "constraint_weight", "max_pixels"}
    assert not panel.advanced_host.isVisible() and panel.advanced_button.isVisible()
    assert not panel.rows["cg_tol"].widget.isVisible()
    qtbot.mouseClick(panel.advanced_button, Qt.MouseButton.LeftButton)
    assert panel.rows["cg_tol"].widget.isVisible()


def test_the_working_resolution_reaches_the_session(qtbot, window):
    win = window
    segment(qtbot, win)
    c = win.settings_panel.rows["max_pixels"].widget
    assert c.currentData() == 500_000 and c.currentText() == "500,000"
    with qtbot.waitSignal(win.segmentationShown, timeout=SOLVE_TIMEOUT):
        c.setCurrentIndex(c.findData(125_000))
        c.activated.emit(c.currentIndex())
    assert win.state.option_dict() == {"max_pixels": 125_000}
    assert win.worker.engine.sessions.key[2] == (("max_pixels", 125_000),)


def type_into(qtbot, widget, text):
    """As a person does: click the field, select what is there (Ctrl+A), type, press Enter."""
    qtbot.mouseClick(widget, Qt.MouseButton.LeftButton)
    qtbot.keyClick(widget, Qt.Key.Key_A, Qt.KeyboardModifier.ControlModifier)
    qtbot.keyClicks(widget, text)
    qtbot.keyClick(widget, Qt.Key.Key_Return)


def test_a_refused_value_starts_no_solve_and_its_message_goes_without_moving_anything(
        qtbot, window):
    """Issue 23: `abc` + Enter in "constraint weight" was refused, yet a solve ran (Enter's
    commit, then the focus leaving, wrote the default back as a new value); the red bar stayed
    after a valid value and pushed the canvas down."""
    win = window
    segment(qtbot, win)
    panel, w = win.settings_panel, win.settings_panel.rows["constraint_weight"].widget
    busy, tag = [], win.display.tag
    win.worker.busy.connect(busy.append)

    def where():  # the canvas and the option rows, in window coordinates
        return (win.canvas.mapTo(win, win.canvas.rect().topLeft()),
                w.mapTo(win, w.rect().topLeft()))

    before = where()
    type_into(qtbot, w, "abc")
    qtbot.wait(300)  # longer than the window's debounce: a solve would have started
    assert busy == [] and win.display.tag == tag and win.state.option_dict() == {}
    assert "constraint_weight must be" in panel.error_text() and "got 'abc'" in panel.error_text()
    assert w.text() == "1" and win.message_bar.text() == ""
    assert where() == before
    type_into(qtbot, w, "2")
    assert panel.error_text() == "" and win.state.option_dict() == {"constraint_weight": 2.0}
    assert where() == before
    type_into(qtbot, w, "-5")
    assert "got -5.0" in panel.error_text() and w.text() == "2"
    qtbot.mouseClick(panel.reset_button, Qt.MouseButton.LeftButton)
    assert panel.error_text() == "" and win.state.option_dict() == {} and w.text() == "1"
    assert where() == before


def test_the_message_bar_floats_over_the_canvas(qtbot, window):
    """Issue 23: the red bar pushed the canvas down ~17 px while it was shown."""
    win = window
    top = win.canvas.mapTo(win, win.canvas.rect().topLeft())
    win.show_error("a message long enough to need more than one line of text " * 6)
    qtbot.wait(50)
    bar = win.message_bar
    assert bar.isVisible() and win.canvas.mapTo(win, win.canvas.rect().topLeft()) == top
    assert bar.geometry().top() >= 0 and bar.height() >= bar.label.heightForWidth(
        bar.label.width())
    win.resize(win.width() - 200, win.height())
    qtbot.wait(50)
    assert bar.width() == bar.parentWidget().width() - 16
