"""QUndoCommands wrapping the annotation model's edit records (one command per stroke)."""

from __future__ import annotations

from PySide6.QtGui import QUndoCommand

from ..annotation import AnnotationModel, EditRecord


class EditCommand(QUndoCommand):
    """An already-applied model edit; undo/redo replay its box of old/new values.

    QUndoStack.push() calls redo() immediately, but the edit has already happened (the user
    painted it), so the first redo is skipped.
    """

    def __init__(self, model: AnnotationModel, record: EditRecord) -> None:
        super().__init__(record.text)
        self.model = model
        self.record = record
        self._applied = True

    def redo(self) -> None:
        if self._applied:
            self._applied = False
            return
        self.record.redo(self.model)

    def undo(self) -> None:
        self.record.undo(self.model)
