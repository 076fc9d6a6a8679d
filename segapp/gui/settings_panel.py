"""The method and its options, generated from the method's declarations (:mod:`segapp.options`).

Choosing a method shows that method's own options, one row per :class:`~segapp.options.Option`
(a check box for a bool, a list for choices and for a bool that may be None, a spin box for
a bounded integer, a text field for any other number, parsed and checked by
:meth:`Option.parse`), with the option's help, range and default as tooltip. What a person
tunes (:attr:`Option.basic`, with the working resolution :data:`segapp.options.MAX_PIXELS` for
the methods that use it) is shown at once; the rest sits in a collapsed "Advanced" section.
Each row is bound to one entry of :attr:`AppState.options` (the method combo to
:attr:`AppState.method`) by :func:`segapp.gui.bind.bind`, as every widget of the window, and
keeps no value of its own; an option at its default is not
stored, so writing the default changes nothing and starts no solve. Values are remembered per
method with QSettings. Set-up options are marked: changing one rebuilds the graph; solve
options re-solve at once.

A refused value never reaches the state (no solve starts): the field goes back to the value
in use, turns red, and the reason is shown in the panel's own message line, whose space is
reserved so nothing moves; it clears when a valid value is entered there, on "Restore
defaults" and when the method changes.
"""

from __future__ import annotations

from typing import Any, Callable

from PySide6.QtCore import QSettings, Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QScrollArea,
    QSpinBox,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from .. import methods
from ..errors import InvalidInputError
from ..options import MAX_PIXELS, Option
from . import words
from .bind import bind
from .qtcompat import emit
from .state import AppState

#: A bounded integer gets a spin box up to this range; wider ones a text field.
SPIN_LIMIT = 10**6


def option_text(opt: Option, value: Any) -> str:
    if value is None:
        return opt.none_means or "auto"
    return f"{value:g}" if isinstance(value, float) else str(value)


def choice_text(opt: Option, value: Any) -> str:
    """A list entry: pixel counts as ``500,000`` (easier to read than 500000)."""
    return f"{value:,}" if opt.name == "max_pixels" and value is not None \
        else option_text(opt, value)


def panel_options(method: str) -> tuple[Option, ...]:
    """The rows of ``method``: its declared options, and the working resolution if it
    segments large images on a reduced copy (not the landmark methods)."""
    cls = methods.get(method)
    extra = () if getattr(cls, "full_resolution", False) else (MAX_PIXELS,)
    return tuple(methods.options_of(method)) + extra


def with_value(options: dict[str, Any], opt: Option, value: Any) -> tuple:
    """``options`` with ``opt`` set to ``value`` as the state keeps them: sorted pairs, an
    option at its default left out (so a default typed in is no change and no solve)."""
    values = {k: v for k, v in options.items() if k != opt.name}
    if not (value == opt.default and type(value) is type(opt.default)):
        values[opt.name] = value
    return tuple(sorted(values.items()))


#: A refused field's frame (the Okabe–Ito vermilion of the window's error bar).
INVALID_STYLE = "border: 2px solid #d55e00; border-radius: 2px;"


class OptionRow:
    """One option's widget, bound (:func:`segapp.gui.bind.bind`) to ``state.options[opt.name]``.

    :attr:`error` says why the last value entered was refused ("" when it was not);
    ``changed()`` is called when it changes, ``done()`` when a value was committed.
    """

    def __init__(self, opt: Option, state: AppState, parent: QWidget,
                 changed: Callable[[], None], done: Callable[[], None]) -> None:
        self.opt, self.state, self.changed = opt, state, changed
        self.error = ""
        self.widget = self._make(parent)
        self.widget.setFocusPolicy(Qt.FocusPolicy.ClickFocus)  # never reached by Tab from the canvas
        tip = words.option_tip(opt.name, opt.describe()) + (
            "\n⚙ set-up option: changing it rebuilds the image graph" if opt.stage == "setup"
            else "")
        self.widget.setToolTip(tip)
        self.follow = bind(self.widget, state, "options", to_widget=self._shown,
                           to_state=self._options, report=self._report, done=done)

    def _make(self, parent: QWidget) -> QWidget:
        opt = self.opt
        if opt.type is bool and not opt.none_ok:
            return QCheckBox(parent)
        if opt.choices is not None or opt.type is bool:
            # A bool that may be None (a per-solver default) has three states: a list.
            choices = opt.choices if opt.choices is not None else (True, False)
            w = QComboBox(parent)
            for c in ((None,) if opt.none_ok else ()) + tuple(choices):
                w.addItem(choice_text(opt, c), c)
            # as narrow as the panel: a long choice is cut in the box, whole in its list
            w.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
            w.setMinimumContentsLength(6)
            return w
        if (opt.type is int and opt.low is not None and opt.high is not None
                and opt.high - opt.low <= SPIN_LIMIT):
            w = QSpinBox(parent)
            w.setRange(int(opt.low) - (1 if opt.none_ok else 0), int(opt.high))  # below: None
            if opt.none_ok:
                w.setSpecialValueText(option_text(opt, None))
            w.setKeyboardTracking(False)
            return w
        return QLineEdit(parent)

    def value(self) -> Any:
        return self.state.option_dict().get(self.opt.name, self.opt.default)

    def _shown(self, options: tuple) -> Any:
        """What the widget shows for the option's value in ``options``."""
        w, value = self.widget, dict(options).get(self.opt.name, self.opt.default)
        if isinstance(w, QCheckBox):
            return bool(value)
        if isinstance(w, QSpinBox):
            return w.minimum() if value is None else int(value)
        if isinstance(w, QLineEdit):
            return option_text(self.opt, value)
        return value

    def _options(self, shown: Any) -> tuple:
        """The state's options with what the widget shows, parsed and checked
        (InvalidInputError: refused, with the option's own message)."""
        opt, w = self.opt, self.widget
        if isinstance(w, QLineEdit):
            value = None if opt.none_ok and shown in ("", option_text(opt, None)) \
                else opt.parse(shown)
        elif isinstance(w, QSpinBox) and opt.none_ok and shown == w.minimum():
            value = None
        else:
            value = opt.check(shown)
        return with_value(self.state.option_dict(), opt, value)

    def _report(self, message: str) -> None:
        """Refused (the state keeps its value, nothing is solved): the field shows it again,
        in red; accepted: the red and the reason go."""
        self.error = f"{message} (still {option_text(self.opt, self.value())})" if message \
            else ""
        self.widget.setStyleSheet(INVALID_STYLE if message else "")
        self.changed()

    def clear_error(self) -> None:
        if self.error:
            self._report("")


class SettingsPanel(QWidget):
    """Method selector and the chosen method's options (see the module docstring).

    Signals
    -------
    done_editing()
        A value was committed (Enter, a choice, a click): the window gives the keyboard back
        to the canvas, so the label keys 1–9 work again.
    """

    done_editing = Signal()

    def __init__(self, state: AppState, parent: QWidget | None = None,
                 report: Callable[[str], None] = lambda _m: None) -> None:
        super().__init__(parent)
        self.state, self.report = state, report
        self.method = QComboBox(self)
        for name, description in methods.available_methods():
            self.method.addItem(words.method_label(name), name)
            self.method.setItemData(self.method.count() - 1, f"{name}: {description}",
                                    Qt.ItemDataRole.ToolTipRole)
        self.method.setToolTip("How the image is segmented (hover an entry for what it does; "
                               "docs/gui.md compares them)")
        self.method.setSizeAdjustPolicy(
            QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.method.setMinimumContentsLength(10)
        self.method.setFocusPolicy(Qt.FocusPolicy.ClickFocus)
        self.method.activated.connect(lambda _i: emit(self.done_editing))
        host = QWidget(self)
        self.basic = QFormLayout()
        self.advanced_host = QWidget(host)
        self.advanced = QFormLayout(self.advanced_host)
        self.advanced.setContentsMargins(0, 0, 0, 0)
        for form in (self.basic, self.advanced):
            # a narrow panel puts a field under its name instead of clipping either
            form.setRowWrapPolicy(QFormLayout.RowWrapPolicy.WrapLongRows)
            form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        self.advanced_button = QToolButton(host)
        self.advanced_button.setCheckable(True)
        self.advanced_button.setAutoRaise(True)
        self.advanced_button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.advanced_button.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.advanced_button.toggled.connect(self._show_advanced)
        self._show_advanced(False)
        inner = QVBoxLayout(host)
        inner.addLayout(self.basic)
        inner.addWidget(self.advanced_button)
        inner.addWidget(self.advanced_host)
        inner.addStretch(1)
        scroll = QScrollArea(self)
        scroll.setWidgetResizable(True)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        scroll.setWidget(host)
        self.error = QLabel("", self)
        self.error.setWordWrap(True)
        self.error.setStyleSheet("color: #a33c00;")
        # reserved: a message appearing or going never moves the rows or anything else
        self.error.setFixedHeight(3 * self.error.fontMetrics().lineSpacing() + 4)
        self.error.setAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
        self.reset_button = QPushButton("Restore defaults", self)
        self.reset_button.clicked.connect(self.reset)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(QLabel("Method", self))  # above the list: a narrow panel keeps it
        layout.addWidget(self.method)
        layout.addWidget(scroll, 1)
        layout.addWidget(self.error)
        layout.addWidget(self.reset_button)
        self.rows: dict[str, OptionRow] = {}
        state.events.method.connect(self._on_method)
        state.events.options.connect(lambda _options: self.save())
        bind(self.method, state, "method")
        self._on_method(state.method)

    def _show_advanced(self, on: bool) -> None:
        self.advanced_host.setVisible(on)
        self.advanced_button.setArrowType(Qt.ArrowType.DownArrow if on
                                          else Qt.ArrowType.RightArrow)

    # -- the method's rows -----------------------------------------------------------------
    def _on_method(self, name: str) -> None:
        for row in self.rows.values():  # their widgets go with the form rows below
            self.state.events.options.disconnect(row.follow)
        for form in (self.basic, self.advanced):
            while form.rowCount():
                form.removeRow(0)
        self.rows = {}
        self._show_errors()
        options = panel_options(name)
        for opt in options:
            form = self.basic if opt.basic else self.advanced
            row = OptionRow(opt, self.state, self, self._show_errors,
                            lambda: emit(self.done_editing))
            self.rows[opt.name] = row
            label = QLabel(words.option_label(opt.name)
                           + (" ⚙" if opt.stage == "setup" else ""))
            label.setToolTip(row.widget.toolTip())
            form.addRow(label, row.widget)
        advanced = sum(not o.basic for o in options)
        self.advanced_button.setText(f"Advanced ({advanced})")
        self.advanced_button.setVisible(advanced > 0)
        self.state.options = tuple(sorted(self.load(name).items()))

    def _show_errors(self) -> None:
        text = "\n".join(row.error for row in self.rows.values() if row.error)
        self.error.setText(text)
        self.error.setToolTip(text)

    def error_text(self) -> str:
        """The panel's message line: why values were refused ("" when none is)."""
        return self.error.text()

    def reset(self) -> None:
        self.state.options = ()
        for row in self.rows.values():
            row.clear_error()

    def apply(self, settings: dict[str, Any]) -> None:
        """Settings from a session or a recovered journal: method and its known options."""
        name = str(settings.get("method", self.state.method))
        if name in dict(methods.available_methods()):
            self.state.method = name
        known = {o.name: o for o in panel_options(self.state.method)}
        values = {}
        for k, v in settings.items():
            if k in known:
                try:
                    values[k] = known[k].check(v)
                except InvalidInputError as exc:
                    self.report(f"setting ignored: {exc}")
        self.state.options = tuple(sorted(values.items()))

    # -- persistence: one QSettings group per method ---------------------------------------
    def load(self, name: str) -> dict[str, Any]:
        s = QSettings()
        s.beginGroup(f"method-{name}")
        values = {}
        for opt in panel_options(name):
            text = s.value(opt.name)
            if text is None:
                continue
            try:
                values[opt.name] = opt.parse(str(text))
            except InvalidInputError:
                pass  # a value from an older version: the default instead
        s.endGroup()
        return values

    def save(self) -> None:
        s = QSettings()
        s.setValue("method", self.state.method)
        s.beginGroup(f"method-{self.state.method}")
        s.remove("")
        for k, v in self.state.options:
            s.setValue(k, "none" if v is None else str(v))
        s.endGroup()

    def load_method(self) -> None:
        """The method used last (QSettings), with its remembered options."""
        name = str(QSettings().value("method", self.state.method))
        if name in dict(methods.available_methods()):
            self.state.method = name
        self._on_method(self.state.method)
