"""Bind one widget to one :class:`~segapp.gui.state.AppState` field, both ways (napari-style):
the one way every widget of the window follows and writes the state.

The widget writes the field when the user acts; a change of the field (from any source:
a shortcut, a loaded session, a test) updates the widget with its signals blocked, so no
echo comes back. The widget keeps no value of its own.

A value the field (or ``to_state``) refuses with :class:`~segapp.errors.InvalidInputError`
never reaches the state: the widget shows the value in use again and ``report`` is told why
(and told ``""`` once a value is accepted). A settings row binds this way to its entry of
:attr:`AppState.options` (:mod:`segapp.gui.settings_panel`).
"""

from __future__ import annotations

from typing import Any, Callable

from PySide6.QtCore import QSignalBlocker
from PySide6.QtGui import QAction
from PySide6.QtWidgets import (
    QAbstractSlider,
    QAbstractSpinBox,
    QCheckBox,
    QComboBox,
    QLineEdit,
)

from ..errors import InvalidInputError
from .state import AppState


def _same(v: Any) -> Any:
    return v


def _silent(_message: str) -> None:
    return None


def bind(widget: Any, state: AppState, field: str, *,
         to_widget: Callable[[Any], Any] = _same,
         to_state: Callable[[Any], Any] = _same,
         report: Callable[[str], None] = _silent,
         done: Callable[[], None] = lambda: None) -> Callable[[], None]:
    """Keep ``widget``'s value and ``state.<field>`` equal; returns the function that puts
    the field's value in the widget.

    Supported: checkable ``QAction`` / ``QCheckBox`` (checked), ``QAbstractSlider`` and spin
    boxes (value), ``QComboBox`` (current item data), ``QLineEdit`` (text, written when
    editing finishes). ``to_widget`` / ``to_state`` convert (e.g. opacity 0..1 ↔ slider
    0..100; ``to_state`` may refuse a value, see the module docstring). ``done()`` is called
    after each write by the user, accepted or not.
    """
    if isinstance(widget, (QAction, QCheckBox)):
        get, put, signal = widget.isChecked, widget.setChecked, widget.toggled
    elif isinstance(widget, (QAbstractSlider, QAbstractSpinBox)):
        get, put, signal = widget.value, widget.setValue, widget.valueChanged
    elif isinstance(widget, QComboBox):
        def put(v: Any) -> None:
            widget.setCurrentIndex(max(widget.findData(v), 0))
        get, signal = widget.currentData, widget.currentIndexChanged
    elif isinstance(widget, QLineEdit):
        def get() -> str:
            return widget.text().strip()
        put, signal = widget.setText, widget.editingFinished
    else:  # pragma: no cover - a programming error
        raise TypeError(f"cannot bind {type(widget).__name__}")

    def follow(*_value: Any) -> None:
        with QSignalBlocker(widget):
            put(to_widget(getattr(state, field)))

    def write(*_args: Any) -> None:
        value = get()
        # the widget shows the value in use (a field's own text again, on leaving it): no edit
        if value != to_widget(getattr(state, field)):
            try:
                setattr(state, field, to_state(value))
            except InvalidInputError as exc:
                report(str(exc))
            else:
                report("")
            follow()  # the field may have refused, clipped or coerced the value
        done()

    signal.connect(write)
    getattr(state.events, field).connect(follow)
    follow()
    return follow
