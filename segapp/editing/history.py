"""Undo and redo of the strokes' edits, owned by the strokes (as napari's ``Labels`` owns its
undo history), bounded in bytes, and the pixel count of every label kept from the records.
"""

from __future__ import annotations

from itertools import count
from typing import TYPE_CHECKING

import numpy as np

from .events import Emitter
from .records import EditRecord
from .schema import MAX_LABELS

if TYPE_CHECKING:
    from .strokes import AnnotationModel

__all__ = ["History", "label_counts", "count_change", "HISTORY_BYTES"]

#: Undo records kept per image (the oldest steps go first); the crash journal rebuilds at most
#: as much (:data:`segapp.gui.journal.HISTORY_BYTES`).
HISTORY_BYTES = 512 * 2**20


def label_counts(labels: np.ndarray) -> np.ndarray:
    """Pixels per label id 0..MAX_LABELS of a label map (int64)."""
    return np.bincount(np.ravel(labels), minlength=MAX_LABELS + 1)[:MAX_LABELS + 1]


def count_change(record: EditRecord) -> np.ndarray:
    """How many pixels of each label id 0..MAX_LABELS ``record`` adds (negative: removes)
    when it is applied (redo); its undo changes the counts by the negative of this."""
    # only the pixels that changed: bincount converts its input to int64, 0.1-0.2 s for the
    # box of a 12 MP fill or clear, where comparing and selecting takes ~20 ms
    changed = record.old != record.new
    return label_counts(record.new[changed]) - label_counts(record.old[changed])


class History:
    """Undo/redo of :class:`EditRecord` s, bounded in bytes (oldest steps dropped first).

    Every record gets a serial number when pushed; :meth:`key` is the serial of the newest
    applied record, which identifies the whole stroke set (a record can only sit on the prefix
    it was pushed on: pushing after an undo drops the redo steps). Results are cached on it.

    It also keeps the number of pixels of each label, updated from each record's box, so that
    "which labels are painted" costs nothing per edit (a full count is 30–130 ms at 12 MP);
    each record's change of the counts is computed once, when it is pushed (or given by the
    caller, who computed it off the GUI thread), and reused by its undo and redo.

    Events: ``changed()`` after push / undo / redo / adopt.
    """

    _serials = count(1)

    def __init__(self, model: "AnnotationModel", max_bytes: int = HISTORY_BYTES,
                 counts: np.ndarray | None = None) -> None:
        self.model = model
        self.max_bytes = max_bytes
        #: pixels per label id 0..MAX_LABELS (``counts``: given by a caller that has them)
        self.counts = label_counts(model.scribbles) if counts is None else np.array(counts)
        self._steps: list[tuple[int, EditRecord]] = []
        self._changes: dict[int, np.ndarray] = {}  # by serial: count_change(record)
        self._index = 0
        self._base = next(self._serials)  # the strokes the history started from
        self.changed = Emitter()

    def key(self) -> int:
        return self._steps[self._index - 1][0] if self._index else self._base

    def label_ids_present(self) -> list[int]:
        """Label ids with at least one painted pixel, sorted (from the counts)."""
        return [int(i) for i in np.nonzero(self.counts[1:])[0] + 1]

    def can_undo(self) -> bool:
        return self._index > 0

    def can_redo(self) -> bool:
        return self._index < len(self._steps)

    def push(self, record: EditRecord | None, change: np.ndarray | None = None) -> None:
        """Add an edit that has already been applied to the model; ``change``: its
        :func:`count_change` if the caller has it."""
        if record is None:
            return
        for serial, _ in self._steps[self._index:]:
            self._changes.pop(serial, None)
        del self._steps[self._index:]
        serial = next(self._serials)
        self._steps.append((serial, record))
        self._changes[serial] = count_change(record) if change is None else np.asarray(change)
        self._index += 1
        self.counts += self._changes[serial]
        while sum(r.nbytes for _, r in self._steps) > self.max_bytes and self._index > 1:
            self._base = self._steps.pop(0)[0]
            self._changes.pop(self._base, None)
            self._index -= 1
        self.changed.emit()

    def adopt(self, steps: list[EditRecord], applied: int,
              changes: list[np.ndarray] | None = None) -> None:
        """Take over an undo history rebuilt elsewhere (crash recovery): ``steps``, oldest
        first, of which the first ``applied`` are in the model's strokes now and the rest can
        be redone; ``changes``: their :func:`count_change` if known. The counts stay those of
        the model, which already holds the applied steps."""
        if not 0 <= applied <= len(steps):
            raise ValueError(f"applied must be 0..{len(steps)}, got {applied}")
        # new serials, the base's too: the strokes before the first step are not those the
        # history started from (results are cached on keys)
        self._base = next(self._serials)
        self._steps = [(next(self._serials), r) for r in steps]
        self._changes = {serial: count_change(r) if changes is None else np.asarray(changes[i])
                         for i, (serial, r) in enumerate(self._steps)}
        self._index = applied
        self.changed.emit()

    def next_undo(self) -> EditRecord | None:
        """The record :meth:`undo` would undo (None if there is none)."""
        return self._steps[self._index - 1][1] if self.can_undo() else None

    def next_redo(self) -> EditRecord | None:
        """The record :meth:`redo` would apply (None if there is none)."""
        return self._steps[self._index][1] if self.can_redo() else None

    def change_of(self, record: EditRecord) -> np.ndarray | None:
        """The count change of a record in the history (None if it is not in it)."""
        for serial, r in self._steps:
            if r is record:
                return self._changes[serial]
        return None

    def undo(self) -> EditRecord | None:
        """Undo the newest applied edit; return it (None if there was none)."""
        if not self.can_undo():
            return None
        self._index -= 1
        serial, record = self._steps[self._index]
        record.undo(self.model)
        self.counts -= self._changes[serial]
        self.changed.emit()
        return record

    def redo(self) -> EditRecord | None:
        """Apply the next undone edit again; return it (None if there was none)."""
        if not self.can_redo():
            return None
        serial, record = self._steps[self._index]
        self._index += 1  # first, so that observers of the model see the new key
        record.redo(self.model)
        self.counts += self._changes[serial]
        self.changed.emit()
        return record

    def undo_text(self) -> str:
        return self._steps[self._index - 1][1].text if self.can_undo() else ""

    def redo_text(self) -> str:
        return self._steps[self._index][1].text if self.can_redo() else ""
