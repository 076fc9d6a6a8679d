"""The folder's images and their state: untouched (○), in progress (◐), done (●).

A view of the document's :class:`~segapp.editing.FolderProject`: it lists the images, marks the
one on screen, opens the one double-clicked (or chosen with Enter), and its check box marks
the image on screen done or not. It keeps no state of its own: it is refilled whenever the
document says the folder changed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (QCheckBox, QHBoxLayout, QLabel, QListWidget, QListWidgetItem,
                               QToolButton, QVBoxLayout, QWidget)

from ..editing.project import DONE, IN_PROGRESS, UNTOUCHED
from .qtcompat import emit

#: How each state is drawn in the list.
MARKS = {UNTOUCHED: "○", IN_PROGRESS: "◐", DONE: "●"}


class FolderPanel(QWidget):
    """The images of the open folder.

    Signals
    -------
    openRequested(str path)
        An image was double-clicked (or chosen with Enter).
    doneToggled(str path, bool done)
        The "done" box of the image on screen was clicked.
    step(int)
        The previous (-1) or next (+1) button was pressed.
    """

    openRequested = Signal(str)
    doneToggled = Signal(str, bool)
    step = Signal(int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.summary = QLabel("No folder open: File ▸ Open Folder", self)
        self.summary.setWordWrap(True)
        self.list = QListWidget(self)
        self.list.setFocusPolicy(Qt.FocusPolicy.NoFocus)  # the keys stay the canvas's
        self.list.setToolTip("○ untouched  ◐ in progress  ● done; double-click to open "
                             "(Page Up / Page Down: previous / next)")
        self.list.itemActivated.connect(
            lambda item: emit(self.openRequested, str(item.data(Qt.ItemDataRole.UserRole))))
        self.done_box = QCheckBox("Done", self)
        self.done_box.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.done_box.setToolTip("This image is finished (Ctrl+Return marks it done and opens "
                                 "the next one)")
        self.done_box.clicked.connect(self._on_done_clicked)
        self.previous = QToolButton(self)
        self.previous.setText("◀")
        self.next = QToolButton(self)
        self.next.setText("▶")
        for b, d in ((self.previous, -1), (self.next, 1)):
            b.setFocusPolicy(Qt.FocusPolicy.NoFocus)
            b.clicked.connect(lambda _c=False, d=d: emit(self.step, d))
        self.previous.setToolTip("The image before (Page Up)")
        self.next.setToolTip("The image after (Page Down)")
        row = QHBoxLayout()
        row.addWidget(self.previous)
        row.addStretch(1)
        row.addWidget(self.done_box)
        row.addStretch(1)
        row.addWidget(self.next)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.summary)
        layout.addWidget(self.list, 1)
        layout.addLayout(row)
        self._current: Path | None = None
        self.show_project(None, None)

    def show_project(self, project: Any, current: Path | None) -> None:
        """List ``project``'s images (None: no folder), ``current`` the one on screen."""
        self._current = Path(current) if current is not None else None
        self.list.clear()
        on = project is not None
        for w in (self.done_box, self.previous, self.next):
            w.setEnabled(on)
        if not on:
            self.summary.setText("No folder open: File ▸ Open Folder (Ctrl+Shift+O)")
            self.done_box.setChecked(False)
            return
        counts = project.counts()
        self.summary.setText(f"{project.folder.name}: {counts[DONE]} of {len(project.images)} "
                             f"done, {counts[IN_PROGRESS]} in progress")
        self.summary.setToolTip(str(project.folder))
        for image in project.images:
            status = project.status(image)
            item = QListWidgetItem(f"{MARKS[status]}  {image.name}")
            item.setData(Qt.ItemDataRole.UserRole, str(image))
            item.setToolTip(f"{image.name}: {status}")
            if self._current is not None and image.name == self._current.name:
                font = item.font()
                font.setBold(True)
                item.setFont(font)
            self.list.addItem(item)
        if self._current is not None and project.contains(self._current):
            row = project.index(self._current)
            self.list.setCurrentRow(row)
            self.list.scrollToItem(self.list.item(row))
            self.done_box.setChecked(project.status(self._current) == DONE)
            self.previous.setEnabled(row > 0)
            self.next.setEnabled(row < len(project.images) - 1)

    def status_of(self, name: str) -> str:
        """The state shown for image ``name`` (tests)."""
        for i in range(self.list.count()):
            item = self.list.item(i)
            if Path(str(item.data(Qt.ItemDataRole.UserRole))).name == name:
                return next(s for s, m in MARKS.items() if item.text().startswith(m))
        raise KeyError(name)

    def _on_done_clicked(self, checked: bool) -> None:
        if self._current is not None:
            emit(self.doneToggled, str(self._current), bool(checked))
