"""The label list: pick the label to paint with, rename (double-click) and recolour it.

The selection is bound to :attr:`AppState.label`; names and colours live in the strokes'
:class:`~segapp.strokes.annotation.AnnotationModel`. The list never keeps the keyboard focus, so the
label keys 1–9 always reach the window's shortcuts.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor, QIcon, QPixmap
from PySide6.QtWidgets import (
    QColorDialog,
    QHBoxLayout,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from ..strokes.annotation import AnnotationModel
from .qtcompat import emit
from .state import AppState


def color_icon(rgb: tuple[int, int, int], size: int = 16) -> QIcon:
    pix = QPixmap(size, size)
    pix.fill(QColor(*rgb))
    return QIcon(pix)


class LabelPanel(QWidget):
    """Lists labels 1..9 of the image's :class:`AnnotationModel`.

    Signals
    -------
    clearLabelRequested(int)
        "Clear" was pressed for the current label.
    """

    clearLabelRequested = Signal(int)

    def __init__(self, state: AppState, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.state = state
        self.model: AnnotationModel | None = None
        self.list = QListWidget(self)
        self.list.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.list.setToolTip("Label to paint with (keys 1–9). Double-click a name to rename it.")
        self.list.currentRowChanged.connect(self._on_row)
        self.list.itemChanged.connect(self._on_item_changed)
        self.list.itemActivated.connect(lambda item: self.list.editItem(item))
        self.color_button = QPushButton("Colour…", self)
        self.color_button.setToolTip("Choose the colour of the current label")
        self.color_button.clicked.connect(self.choose_color)
        self.clear_button = QPushButton("Clear", self)
        self.clear_button.setToolTip("Erase every stroke of the current label (undoable)")
        self.clear_button.clicked.connect(
            lambda: emit(self.clearLabelRequested, self.state.label))
        for b in (self.color_button, self.clear_button):
            b.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        buttons = QHBoxLayout()
        buttons.addWidget(self.color_button)
        buttons.addWidget(self.clear_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.list)
        layout.addLayout(buttons)
        self._updating = False
        state.events.image_changed.connect(self.set_model)
        state.events.label.connect(self._follow)

    def set_model(self, model: AnnotationModel) -> None:
        if self.model is not None:
            self.model.labels_changed.disconnect(self._refresh)
        self.model = model
        model.labels_changed.connect(self._refresh)
        self._refresh(0)

    def _follow(self, label: int) -> None:
        self._updating = True
        try:
            self.list.setCurrentRow(label - 1)
        finally:
            self._updating = False

    def _refresh(self, _label_id: int) -> None:
        if self.model is None:
            return
        self._updating = True
        try:
            self.list.clear()
            for i in sorted(self.model.labels):
                lab = self.model.labels[i]
                item = QListWidgetItem(color_icon(lab.color), lab.name)
                item.setFlags(item.flags() | Qt.ItemFlag.ItemIsEditable)
                item.setData(Qt.ItemDataRole.UserRole, i)
                item.setToolTip(f"Label {i} (key {i})")
                self.list.addItem(item)
            self.list.setCurrentRow(self.state.label - 1)
        finally:
            self._updating = False

    def _on_row(self, row: int) -> None:
        if row >= 0 and not self._updating:
            self.state.label = row + 1
            if self.state.tool == "eraser":
                self.state.tool = "brush"

    def _on_item_changed(self, item: QListWidgetItem) -> None:
        if self._updating or self.model is None:
            return
        i = int(item.data(Qt.ItemDataRole.UserRole))
        name = item.text().strip() or f"Label {i}"
        if name != self.model.labels[i].name:
            self.model.rename_label(i, name)

    def choose_color(self) -> None:
        if self.model is None:
            return
        i = self.state.label
        old = QColor(*self.model.labels[i].color)
        color = QColorDialog.getColor(old, self, f"Colour of {self.model.labels[i].name}")
        if color.isValid():
            self.model.set_label_color(i, (color.red(), color.green(), color.blue()))
