"""The strokes of one image: a label map edited by brush, eraser and whole-map edits, with the
undo history it owns and the label schema it paints with.

>>> model = AnnotationModel((90, 120))
>>> record = model.apply_stroke([(10, 10), (60, 12)], label=1, radius=3)
>>> int(model.scribbles[10, 30]), model.revision
(1, 1)
>>> model.undo() is record, int(model.scribbles[10, 30])
(True, 0)

Every edit is applied, then recorded (:class:`~.records.EditRecord`: its box, old and new
values) in :attr:`AnnotationModel.history`, which undoes and redoes them; observers hear of
each change through plain :class:`~.events.Emitter` s. Locked labels (:attr:`Label.locked`)
keep their painted pixels through every edit but undo and redo, and cannot be painted with.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Sequence

import numpy as np

from ..inputs.checks import check_label_map
from .brush import eraser_remnants, stroke_mask
from .events import Emitter
from .history import History
from .records import BBox, EditRecord, trimmed
from .schema import MAX_LABELS, Label, LabelSchema

__all__ = ["AnnotationModel", "LockedLabelError"]


class LockedLabelError(ValueError):
    """Painting with a locked label (the message names it)."""


class AnnotationModel:
    """Scribbles (an ``(H, W)`` int32 label map) of one image and the schema they use.

    Parameters
    ----------
    shape : (H, W)
        Image size.
    labels : LabelSchema or sequence of Label, optional
        The schema (shared, not copied: a folder's images use one), or labels to make one of;
        default a new schema of :func:`~.schema.default_labels`.
    scribbles : (H, W) integer array, optional
        Strokes to start from (loaded from a file: not an undoable step).
    history : bool
        Keep an undo history (a scratch copy made to prepare an edit off the GUI thread
        needs none).

    Attributes
    ----------
    scribbles : ndarray (H, W) int32
        0 = unlabelled, else a label id. Change it only through the model's methods.
    schema : LabelSchema
    history : History or None
        Undo/redo of every edit; it also counts the pixels of each label.
    revision : int
        Increases by one on every change of :attr:`scribbles` (strokes, undo, redo, clears).
    changed : Emitter
        ``changed(bbox: BBox)`` after every change of the scribbles.
    labels_changed : Emitter
        ``labels_changed(label_id: int)`` after a rename, recolour, lock, hide or a new label
        (0: several).
    stroke_finished : Emitter
        ``stroke_finished(record: EditRecord)`` when a stroke ends (it is in the history).
    """

    def __init__(self, shape: tuple[int, int],
                 labels: LabelSchema | Sequence[Label] | None = None,
                 scribbles: np.ndarray | None = None, *, history: bool = True) -> None:
        H, W = (int(s) for s in tuple(shape)[:2])
        if H < 1 or W < 1:
            raise ValueError(f"image shape must be positive, got {shape}")
        self.shape: tuple[int, int] = (H, W)
        self.schema = labels if isinstance(labels, LabelSchema) else LabelSchema(labels)
        self.scribbles = (np.zeros((H, W), dtype=np.int32) if scribbles is None
                          else self._checked(scribbles))
        self.revision = 0
        self.changed = Emitter()
        self.labels_changed = Emitter()
        self.stroke_finished = Emitter()
        self._stroke: _StrokeInProgress | None = None
        self.history: History | None = History(self) if history else None

    # -- queries ---------------------------------------------------------------------------
    @property
    def labels(self) -> dict[int, Label]:
        """``{id: Label}`` of the schema, in its order."""
        return self.schema.by_id

    def label_ids_present(self) -> list[int]:
        """Label ids that have at least one scribbled pixel, sorted (a scan of the map: the
        app asks :meth:`History.label_ids_present`, kept from the records, instead)."""
        counts = np.bincount(self.scribbles.ravel(), minlength=MAX_LABELS + 1)
        return [int(i) for i in np.nonzero(counts[1:])[0] + 1]

    def can_segment(self) -> bool:
        """At least two distinct labels are painted (the engine's minimum)."""
        return len(self.label_ids_present()) >= 2

    def colors(self) -> dict[int, tuple[int, int, int]]:
        """``{label id: (r, g, b)}`` for rendering."""
        return self.schema.colors()

    def is_locked(self, label: int) -> bool:
        lab = self.schema.get(label)
        return lab is not None and lab.locked

    def label_at(self, x: float, y: float) -> int:
        """The label painted at image point (x, y) (0: none, or outside the image)."""
        i, j = int(np.floor(y)), int(np.floor(x))
        if 0 <= i < self.shape[0] and 0 <= j < self.shape[1]:
            return int(self.scribbles[i, j])
        return 0

    # -- label table -----------------------------------------------------------------------
    def rename_label(self, label_id: int, name: str) -> None:
        self.schema.rename(label_id, name)
        self.labels_changed.emit(label_id)

    def set_label_color(self, label_id: int, color: Iterable[int]) -> None:
        self.schema.recolor(label_id, color)
        self.labels_changed.emit(label_id)

    def set_label_state(self, label_id: int, *, hidden: bool | None = None,
                        locked: bool | None = None) -> None:
        """Hide or show, lock or unlock a label."""
        lab = self.schema[label_id]
        if hidden is not None:
            lab.hidden = bool(hidden)
        if locked is not None:
            lab.locked = bool(locked)
        self.labels_changed.emit(label_id)

    def add_label(self, name: str | None = None) -> Label:
        lab = self.schema.add(name)
        self.labels_changed.emit(lab.id)
        return lab

    def set_labels(self, labels: Sequence[Label]) -> None:
        """Take over names, colours and states (e.g. from a saved session)."""
        self.schema.replace(labels)
        self.labels_changed.emit(0)

    # -- undo ------------------------------------------------------------------------------
    def undo(self) -> EditRecord | None:
        """Undo the newest edit (None: nothing to undo)."""
        return None if self.history is None else self.history.undo()

    def redo(self) -> EditRecord | None:
        """Redo the newest undone edit (None: nothing to redo)."""
        return None if self.history is None else self.history.redo()

    def apply(self, record: EditRecord, change: np.ndarray | None = None) -> EditRecord:
        """Apply an edit prepared elsewhere (on a copy, off the GUI thread) and record it;
        ``change``: its :func:`~.history.count_change` if known."""
        record.redo(self)
        if self.history is not None:
            self.history.push(record, change)
        return record

    def _commit(self, record: EditRecord | None) -> EditRecord | None:
        if record is not None and self.history is not None:
            self.history.push(record)
        return record

    # -- strokes ---------------------------------------------------------------------------
    def begin_stroke(self, label: int, radius: float, unlabelled_only: bool = False) -> None:
        """Start a stroke of ``label`` (0 = eraser) with a round brush of ``radius`` pixels.

        With ``unlabelled_only`` the stroke changes only pixels that carry no label yet.
        Raises LockedLabelError for a locked label.
        """
        if not 0 <= int(label) <= MAX_LABELS:
            raise ValueError(f"label must be 0..{MAX_LABELS}, got {label}")
        if label and self.is_locked(label):
            raise LockedLabelError(f"{self.schema.name(label)} is locked: unlock it to paint")
        if self._stroke is not None:
            self.end_stroke()
        self._stroke = _StrokeInProgress(int(label), float(radius), bool(unlabelled_only),
                                         np.array(self.schema.locked_ids(), dtype=np.int32))

    @property
    def stroking(self) -> bool:
        return self._stroke is not None

    def extend_stroke(self, points: Sequence[tuple[float, float]]) -> BBox | None:
        """Paint the polyline through ``points`` (continuing from the stroke's last point).

        Returns
        -------
        BBox or None
            The box of pixels that changed (None if nothing did).
        """
        s = self._stroke
        if s is None:
            raise RuntimeError("extend_stroke() called outside begin_stroke()/end_stroke()")
        dirty: BBox | None = None
        for pt in points:
            p = (float(pt[0]), float(pt[1]))
            p0 = s.last if s.last is not None else p
            s.last = p
            box, mask = stroke_mask(p0, p, s.radius, self.shape)
            if box.empty:
                continue
            view = self.scribbles[box.slices]
            change = mask & (view != s.label)
            if s.unlabelled_only:
                change &= view == 0
            if s.locked.size:
                change &= ~np.isin(view, s.locked)
            if not change.any():
                continue
            # Keep the values this segment overwrites; replaying them backwards undoes it.
            s.pieces.append((box, view.astype(np.uint8)))
            view[change] = s.label
            dirty = box.union(dirty)
        if dirty is not None:
            s.bbox = dirty.union(s.bbox)
            self.revision += 1
            self.changed.emit(dirty)
        return dirty

    def end_stroke(self) -> EditRecord | None:
        """Finish the stroke; record it and return its record (None if it changed nothing).

        An eraser stroke also takes the thin painted remnants it left next to what it erased
        (:func:`~.brush.eraser_remnants`): invisible on screen, they would still be strokes.
        """
        s, self._stroke = self._stroke, None
        if s is None or s.bbox is None:
            return None
        if s.label == 0:
            self._erase_remnants(s)
        box = s.bbox
        new = self.scribbles[box.slices].astype(np.uint8)
        old = new.copy()
        for piece_box, values in reversed(s.pieces):
            old[piece_box.y0 - box.y0:piece_box.y1 - box.y0,
                piece_box.x0 - box.x0:piece_box.x1 - box.x0] = values
        text = "erase" if s.label == 0 else f"stroke ({self.schema.name(s.label)})"
        record = self._commit(trimmed(EditRecord(box, old, new, text)))
        self.stroke_finished.emit(record)
        return record

    def _erase_remnants(self, s: "_StrokeInProgress") -> None:
        box = s.bbox
        before = self.scribbles[box.slices].astype(np.uint8)
        for piece_box, values in reversed(s.pieces):
            before[piece_box.y0 - box.y0:piece_box.y1 - box.y0,
                   piece_box.x0 - box.x0:piece_box.x1 - box.x0] = values
        erased = (before != 0) & (self.scribbles[box.slices] == 0)
        keep = np.isin(self.scribbles, s.locked) if s.locked.size else None
        found = eraser_remnants(self.scribbles, erased, box, s.radius, keep)
        if found is None:
            return
        outer, remove = found
        view = self.scribbles[outer.slices]
        s.pieces.append((outer, view.astype(np.uint8)))
        view[remove] = 0
        s.bbox = outer.union(s.bbox)
        self.revision += 1
        self.changed.emit(outer)

    def apply_stroke(self, points: Sequence[tuple[float, float]], label: int,
                     radius: float, unlabelled_only: bool = False) -> EditRecord | None:
        """Paint a whole stroke at once (``begin``/``extend``/``end``)."""
        self.begin_stroke(label, radius, unlabelled_only)
        self.extend_stroke(points)
        return self.end_stroke()

    # -- whole-map edits -------------------------------------------------------------------
    def clear_label(self, label: int) -> EditRecord | None:
        """Erase every pixel of ``label``; return the record (None if there were none, or
        the label is locked)."""
        if self.is_locked(label):
            return None
        return self._replace(np.where(self.scribbles == label, 0, self.scribbles),
                             f"clear {self.schema.name(label)}")

    def clear_all(self) -> EditRecord | None:
        """Erase every stroke (locked labels' stay); return the record (None if none)."""
        return self._replace(np.zeros_like(self.scribbles), "clear all")

    def fill(self, mask: np.ndarray, label: int, unlabelled_only: bool = True,
             text: str | None = None) -> EditRecord | None:
        """Give the unpainted pixels of ``mask`` (H, W bool) the label ``label``, as a paint
        bucket does; return the record (None if no pixel of ``mask`` was unpainted).

        A fill never changes a pixel that carries a label, whatever its label: it only adds.
        ``unlabelled_only`` is accepted for the callers that pass the "paint unlabelled pixels
        only" option; a fill behaves so in any case. Raises LockedLabelError for a locked label.
        """
        if not 1 <= int(label) <= MAX_LABELS:
            raise ValueError(f"a fill's label must be 1..{MAX_LABELS}, got {label}")
        if self.is_locked(label):
            raise LockedLabelError(f"{self.schema.name(label)} is locked: unlock it to fill")
        m = np.asarray(mask, bool) & (self.scribbles == 0)
        return self._replace(np.where(m, np.int32(label), self.scribbles),
                             text or f"fill ({self.schema.name(label)})")

    def merge_scribbles(self, scribbles: np.ndarray, unlabelled_only: bool = False,
                        text: str = "merge strokes") -> EditRecord | None:
        """Add the painted pixels of ``scribbles`` to the strokes, as if painted now (they
        win where both are painted; with ``unlabelled_only`` only unpainted pixels take
        them); return the one record of the whole merge."""
        s = self._checked(scribbles)
        take = s > 0
        if unlabelled_only:
            take &= self.scribbles == 0
        return self._replace(np.where(take, s, self.scribbles), text)

    def set_scribbles(self, scribbles: np.ndarray, text: str = "load strokes") -> EditRecord | None:
        """Replace the scribbles (e.g. imported from a file); return the record."""
        return self._replace(self._checked(scribbles), text)

    def _checked(self, scribbles: np.ndarray) -> np.ndarray:
        """``scribbles`` as an int32 map of this size with ids 0..MAX_LABELS (else
        :class:`~segapp.errors.InvalidInputError`)."""
        return check_label_map(scribbles, self.shape, max_label=MAX_LABELS,
                               keep_dtype=True).astype(np.int32)

    def _replace(self, new_map: np.ndarray, text: str) -> EditRecord | None:
        locked = self.schema.locked_ids()
        if locked:  # a locked label's pixels stay, and no pixel becomes one
            held = np.isin(self.scribbles, locked) | np.isin(new_map, locked)
            new_map = np.where(held, self.scribbles, new_map)
        diff = new_map != self.scribbles
        if not diff.any():
            return None
        rows, cols = np.nonzero(diff.any(axis=1))[0], np.nonzero(diff.any(axis=0))[0]
        box = BBox(int(rows[0]), int(cols[0]), int(rows[-1]) + 1, int(cols[-1]) + 1)
        record = EditRecord(box, self.scribbles[box.slices].astype(np.uint8),
                            new_map[box.slices].astype(np.uint8), text)
        record.redo(self)
        return self._commit(record)

    def _write(self, box: BBox, values: np.ndarray) -> None:
        """Set the values in ``box`` (used by records); bumps the revision and notifies."""
        self.scribbles[box.slices] = values
        self.revision += 1
        self.changed.emit(box)

    def scratch(self) -> "AnnotationModel":
        """A copy of the strokes without history (to prepare an edit off the GUI thread)."""
        return AnnotationModel(self.shape, self.schema.copy(), self.scribbles.copy(),
                               history=False)


@dataclass
class _StrokeInProgress:
    label: int
    radius: float
    unlabelled_only: bool = False
    locked: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    last: tuple[float, float] | None = None
    bbox: BBox | None = None
    pieces: list[tuple[BBox, np.ndarray]] = field(default_factory=list)


