"""The labels: pick the label to paint with, rename (double-click), recolour, show or hide,
lock, and add labels.

One row per label of the strokes' schema (:class:`~segapp.editing.LabelSchema`, shared by the
images of a folder): its colour and name, a "shown" box (a hidden label's strokes and segment
are not drawn) and a "locked" box (a locked label's painted pixels stay through every edit,
and it cannot be painted with). The selection is bound to :attr:`AppState.label`. The table
never keeps the keyboard focus, so the label keys 1–9 always reach the window's shortcuts.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor, QIcon, QPixmap
from PySide6.QtWidgets import (
    QAbstractItemView,
    QColorDialog,
    QHBoxLayout,
    QHeaderView,
    QSizePolicy,
    QTableWidget,
    QTableWidgetItem,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from ..editing import AnnotationModel
from .qtcompat import emit
from .state import AppState

NAME, SHOWN, LOCKED = range(3)


def color_icon(rgb: tuple[int, int, int], size: int = 16) -> QIcon:
    pix = QPixmap(size, size)
    pix.fill(QColor(*rgb))
    return QIcon(pix)


class LabelPanel(QWidget):
    """Lists the labels of the image's :class:`AnnotationModel`.

    Signals
    -------
    clearLabelRequested(int)
        "Clear" was pressed for the current label.
    message(str)
        Something for the status bar (a name refused).
    """

    clearLabelRequested = Signal(int)
    message = Signal(str)

    def __init__(self, state: AppState, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.state = state
        self.model: AnnotationModel | None = None
        self.table = QTableWidget(0, 3, self)
        self.table.setHorizontalHeaderLabels(["Label", "Shown", "Locked"])
        self.table.horizontalHeaderItem(SHOWN).setToolTip(
            "Untick to hide the label's strokes and segment on screen (exports keep it)")
        self.table.horizontalHeaderItem(LOCKED).setToolTip(
            "Tick to keep the label's painted pixels through every edit (brush, eraser, fill, "
            "clear, import); a locked label cannot be painted with")
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(NAME, QHeaderView.ResizeMode.Stretch)
        for col in (SHOWN, LOCKED):
            header.setSectionResizeMode(col, QHeaderView.ResizeMode.ResizeToContents)
        self.table.verticalHeader().setVisible(False)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.DoubleClicked)
        self.table.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.table.setToolTip("Label to paint with (keys 1–9 pick the first nine). "
                              "Double-click a name to rename it.")
        self.table.currentCellChanged.connect(lambda row, *_: self._on_row(row))
        self.table.itemChanged.connect(self._on_item_changed)
        self.color_button = QToolButton(self)
        self.color_button.setText("Colour…")
        self.color_button.setToolTip("Choose the colour of the current label")
        self.color_button.clicked.connect(self.choose_color)
        self.add_button = QToolButton(self)
        self.add_button.setText("New")
        self.add_button.setToolTip("Add a label (Ctrl+L); up to 255")
        self.add_button.clicked.connect(self.add_label)
        self.clear_button = QToolButton(self)
        self.clear_button.setText("Clear")
        self.clear_button.setToolTip("Erase every stroke of the current label (undoable)")
        self.clear_button.clicked.connect(
            lambda: emit(self.clearLabelRequested, self.state.label))
        for b in (self.color_button, self.add_button, self.clear_button):
            b.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        buttons = QHBoxLayout()
        for b in (self.color_button, self.add_button, self.clear_button):
            b.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
            buttons.addWidget(b)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.table)
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

    def row_of(self, label: int) -> int:
        return self.model.schema.ids().index(label) if self.model is not None \
            and label in self.model.schema else -1

    def label_of(self, row: int) -> int | None:
        ids = self.model.schema.ids() if self.model is not None else []
        return ids[row] if 0 <= row < len(ids) else None

    def _follow(self, label: int) -> None:
        self._updating = True
        try:
            self.table.setCurrentCell(self.row_of(label), NAME)
        finally:
            self._updating = False

    def _refresh(self, _label_id: int) -> None:
        """Show the schema: rows updated in place (an editor open on a name stays valid),
        made anew only when labels were added."""
        if self.model is None:
            return
        self._updating = True
        try:
            labels = list(self.model.schema)
            if self.table.rowCount() != len(labels):
                self.table.setRowCount(len(labels))
                for row in range(len(labels)):
                    self._make_row(row)
            for row, lab in enumerate(labels):
                name = self.table.item(row, NAME)
                name.setText(lab.name)
                name.setIcon(color_icon(lab.color))
                name.setData(Qt.ItemDataRole.UserRole, lab.id)
                key = f" (key {row + 1})" if row < 9 else ""
                name.setToolTip(f"Label {lab.id}{key}")
                name.setForeground(QColor(150, 150, 150) if lab.hidden
                                   else self.table.palette().text().color())
                for col, on in ((SHOWN, not lab.hidden), (LOCKED, lab.locked)):
                    self.table.item(row, col).setCheckState(
                        Qt.CheckState.Checked if on else Qt.CheckState.Unchecked)
            self.table.setCurrentCell(self.row_of(self.state.label), NAME)
        finally:
            self._updating = False

    def _make_row(self, row: int) -> None:
        name = QTableWidgetItem()
        name.setFlags(Qt.ItemFlag.ItemIsSelectable | Qt.ItemFlag.ItemIsEnabled
                      | Qt.ItemFlag.ItemIsEditable)
        self.table.setItem(row, NAME, name)
        for col in (SHOWN, LOCKED):
            box = QTableWidgetItem()
            box.setFlags(Qt.ItemFlag.ItemIsSelectable | Qt.ItemFlag.ItemIsEnabled
                         | Qt.ItemFlag.ItemIsUserCheckable)
            box.setToolTip(self.table.horizontalHeaderItem(col).toolTip())
            self.table.setItem(row, col, box)

    def _on_row(self, row: int) -> None:
        label = self.label_of(row)
        if label is not None and not self._updating:
            self.state.label = label
            if self.state.tool == "eraser":
                self.state.tool = "brush"

    def _on_item_changed(self, item: QTableWidgetItem) -> None:
        if self._updating or self.model is None:
            return
        label = self.label_of(item.row())
        if label is None:
            return
        lab = self.model.schema[label]
        if item.column() == NAME:
            name = item.text().strip() or lab.name
            if name != lab.name:
                try:
                    self.model.rename_label(label, name)
                except ValueError as exc:
                    emit(self.message, f"Not renamed: {exc}")
                    self._refresh(label)
        else:
            on = item.checkState() == Qt.CheckState.Checked
            if item.column() == SHOWN and on == lab.hidden:
                self.model.set_label_state(label, hidden=not on)
            elif item.column() == LOCKED and on != lab.locked:
                self.model.set_label_state(label, locked=on)

    def add_label(self) -> None:
        if self.model is None:
            return
        try:
            lab = self.model.add_label()
        except ValueError as exc:
            emit(self.message, str(exc))
            return
        self.state.label = lab.id
        emit(self.message, f"New label {lab.id}: double-click its name to rename it")

    def choose_color(self) -> None:
        if self.model is None:
            return
        i = self.state.label
        old = QColor(*self.model.labels[i].color)
        color = QColorDialog.getColor(old, self, f"Colour of {self.model.labels[i].name}")
        if color.isValid():
            self.model.set_label_color(i, (color.red(), color.green(), color.blue()))
