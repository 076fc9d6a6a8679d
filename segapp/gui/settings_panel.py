"""The method and its options, generated from the method's declarations (:mod:`segapp.options`).

Choosing a method shows that method's own options, one row per :class:`~segapp.options.Option`
(a check box for a bool, a list for choices and for a bool that may be None, a spin box for
a bounded integer, a text field for any other number, parsed and checked by
:meth:`Option.parse`), with the option's help,
range and default as tooltip. Each row is bound to one entry of :attr:`AppState.options`
(the method combo to :attr:`AppState.method`) and keeps no value of its own. Values are
remembered per method with QSettings. Set-up options are marked: changing one rebuilds the
graph; solve options re-solve at once.
"""

from __future__ import annotations

from typing import Any, Callable

from PySide6.QtCore import QSettings, QSignalBlocker, Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QScrollArea,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from .. import methods
from ..errors import InvalidInputError
from ..options import Option
from .bind import bind
from .qtcompat import emit
from .state import AppState

#: A bounded integer gets a spin box up to this range; wider ones a text field.
SPIN_LIMIT = 10**6


def option_text(opt: Option, value: Any) -> str:
    if value is None:
        return opt.none_means or "auto"
    return f"{value:g}" if isinstance(value, float) else str(value)


class OptionRow:
    """One option's widget, bound to ``state.options[opt.name]``."""

    def __init__(self, opt: Option, state: AppState, parent: QWidget,
                 report: Callable[[str], None], done: Callable[[], None]) -> None:
        self.opt, self.state, self.report, self.done = opt, state, report, done
        self.widget = self._make(parent)
        self.widget.setFocusPolicy(Qt.FocusPolicy.ClickFocus)  # never reached by Tab from the canvas
        tip = opt.describe() + ("\n(set-up option: changing it rebuilds the image graph)"
                                if opt.stage == "setup" else "")
        self.widget.setToolTip(tip)
        self.follow()

    def _make(self, parent: QWidget) -> QWidget:
        opt = self.opt
        if opt.type is bool and not opt.none_ok:
            w = QCheckBox(parent)
            w.toggled.connect(lambda on: self.write(bool(on)))
        elif opt.choices is not None or opt.type is bool:
            # A bool that may be None (a per-solver default) has three states: a list.
            choices = opt.choices if opt.choices is not None else (True, False)
            w = QComboBox(parent)
            for c in ((None,) if opt.none_ok else ()) + tuple(choices):
                w.addItem(option_text(opt, c), c)
            w.activated.connect(lambda i: self.write(w.itemData(i)))
        elif (opt.type is int and opt.low is not None and opt.high is not None
              and opt.high - opt.low <= SPIN_LIMIT):
            w = QSpinBox(parent)
            low = int(opt.low) - (1 if opt.none_ok else 0)  # one below the range: None
            w.setRange(low, int(opt.high))
            if opt.none_ok:
                w.setSpecialValueText(option_text(opt, None))
            w.setKeyboardTracking(False)
            w.valueChanged.connect(
                lambda v: self.write(None if opt.none_ok and v == low else int(v)))
        else:
            w = QLineEdit(parent)
            w.editingFinished.connect(lambda: self.write_text(w.text()))
        return w

    def value(self) -> Any:
        return self.state.option_dict().get(self.opt.name, self.opt.default)

    def write(self, value: Any) -> None:
        try:
            self.state.set_option(self.opt.name, self.opt.check(value))
        except InvalidInputError as exc:
            self.report(str(exc))
            self.follow()
        self.done()

    def write_text(self, text: str) -> None:
        try:
            none = self.opt.none_ok and text.strip() in ("", option_text(self.opt, None))
            self.state.set_option(self.opt.name, None if none else self.opt.parse(text))
        except InvalidInputError as exc:
            self.report(str(exc))
            self.follow()
        self.done()

    def follow(self) -> None:
        w, value = self.widget, self.value()
        with QSignalBlocker(w):
            if isinstance(w, QCheckBox):
                w.setChecked(bool(value))
            elif isinstance(w, QComboBox):
                w.setCurrentIndex(max(w.findData(value), 0))
            elif isinstance(w, QSpinBox):
                w.setValue(w.minimum() if value is None else int(value))
            else:
                w.setText(option_text(self.opt, value))


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
            self.method.addItem(name, name)
            self.method.setItemData(self.method.count() - 1, description,
                                    Qt.ItemDataRole.ToolTipRole)
        self.method.setToolTip("Segmentation method (hover an entry for a description)")
        self.method.setFocusPolicy(Qt.FocusPolicy.ClickFocus)
        self.method.activated.connect(lambda _i: emit(self.done_editing))
        self.form_host = QWidget(self)
        self.form = QFormLayout(self.form_host)
        scroll = QScrollArea(self)
        scroll.setWidgetResizable(True)
        scroll.setWidget(self.form_host)
        self.reset_button = QPushButton("Restore defaults", self)
        self.reset_button.clicked.connect(self.reset)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        top = QFormLayout()
        top.addRow("Method", self.method)
        layout.addLayout(top)
        layout.addWidget(scroll, 1)
        layout.addWidget(self.reset_button)
        self.rows: dict[str, OptionRow] = {}
        state.events.method.connect(self._on_method)
        state.events.options.connect(self._on_options)
        bind(self.method, state, "method")
        self._on_method(state.method)

    # -- the method's rows -----------------------------------------------------------------
    def _on_method(self, name: str) -> None:
        while self.form.rowCount():
            self.form.removeRow(0)
        self.rows = {}
        for opt in methods.options_of(name):
            row = OptionRow(opt, self.state, self.form_host, self.report,
                            lambda: emit(self.done_editing))
            self.rows[opt.name] = row
            label = QLabel(opt.name.replace("_", " ") + (" ⚙" if opt.stage == "setup" else ""))
            label.setToolTip(row.widget.toolTip())
            self.form.addRow(label, row.widget)
        self.state.options = tuple(sorted(self.load(name).items()))

    def _on_options(self, _options: tuple) -> None:
        for row in self.rows.values():
            row.follow()
        self.save()

    def reset(self) -> None:
        self.state.options = ()
        for row in self.rows.values():
            row.follow()

    def apply(self, settings: dict[str, Any]) -> None:
        """Settings from a session or a recovered journal: method and its known options."""
        name = str(settings.get("method", self.state.method))
        if name in dict(methods.available_methods()):
            self.state.method = name
        known = {o.name: o for o in methods.options_of(self.state.method)}
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
        for opt in methods.options_of(name):
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
