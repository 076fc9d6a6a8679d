"""Bind one widget to one :class:`~segapp.gui.state.AppState` field, both ways (napari-style).

The widget writes the field when the user acts; a change of the field (from any source:
a shortcut, a loaded session, a test) updates the widget with its signals blocked, so no
echo comes back. The widget keeps no value of its own.
"""

from __future__ import annotations

from typing import Any, Callable

from PySide6.QtCore import QSignalBlocker
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QAbstractSlider, QAbstractSpinBox, QCheckBox, QComboBox

from .state import AppState


def bind(widget: Any, state: AppState, field: str, *,
         to_widget: Callable[[Any], Any] = lambda v: v,
         to_state: Callable[[Any], Any] = lambda v: v) -> None:
    """Keep ``widget``'s value and ``state.<field>`` equal.

    Supported: checkable ``QAction`` / ``QCheckBox`` (checked), ``QAbstractSlider`` and spin
    boxes (value), ``QComboBox`` (current item data). ``to_widget`` / ``to_state`` convert
    (e.g. opacity 0..1 ↔ slider 0..100).
    """
    if isinstance(widget, (QAction, QCheckBox)):
        get, put, signal = widget.isChecked, widget.setChecked, widget.toggled
    elif isinstance(widget, (QAbstractSlider, QAbstractSpinBox)):
        get, put, signal = widget.value, widget.setValue, widget.valueChanged
    elif isinstance(widget, QComboBox):
        def put(v: Any) -> None:
            widget.setCurrentIndex(max(widget.findData(v), 0))
        get, signal = widget.currentData, widget.currentIndexChanged
    else:  # pragma: no cover - a programming error
        raise TypeError(f"cannot bind {type(widget).__name__}")

    def follow(value: Any) -> None:
        with QSignalBlocker(widget):
            put(to_widget(value))

    def write(*_args: Any) -> None:
        setattr(state, field, to_state(get()))
        follow(getattr(state, field))  # the field may have clipped or coerced the value

    signal.connect(write)
    getattr(state.events, field).connect(follow)
    follow(getattr(state, field))
