"""What an edit of the strokes changed: a box and the old and new label ids inside it.

Only the box is stored (napari's ``Labels`` keeps undo atoms the same way), never a copy of the
whole map; values are uint8 (label ids 0..:data:`~segapp.editing.schema.MAX_LABELS`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from .strokes import AnnotationModel

__all__ = ["BBox", "EditRecord", "trimmed", "clip_box"]


@dataclass(frozen=True)
class BBox:
    """Half-open pixel rectangle ``[y0, y1) × [x0, x1)``."""

    y0: int
    x0: int
    y1: int
    x1: int

    @property
    def slices(self) -> tuple[slice, slice]:
        """``(rows, cols)`` slices for indexing an ``(H, W)`` array."""
        return slice(self.y0, self.y1), slice(self.x0, self.x1)

    @property
    def empty(self) -> bool:
        return self.y1 <= self.y0 or self.x1 <= self.x0

    @property
    def width(self) -> int:
        return max(0, self.x1 - self.x0)

    @property
    def height(self) -> int:
        return max(0, self.y1 - self.y0)

    def union(self, other: "BBox | None") -> "BBox":
        if other is None or other.empty:
            return self
        if self.empty:
            return other
        return BBox(min(self.y0, other.y0), min(self.x0, other.x0),
                    max(self.y1, other.y1), max(self.x1, other.x1))

    def grown(self, margin: int, shape: tuple[int, int]) -> "BBox":
        """This box widened by ``margin`` pixels on every side, clipped to ``shape``."""
        return clip_box(self.y0 - margin, self.x0 - margin, self.y1 + margin, self.x1 + margin,
                        shape)

    @classmethod
    def full(cls, shape: tuple[int, int]) -> "BBox":
        return cls(0, 0, int(shape[0]), int(shape[1]))


def clip_box(y0: float, x0: float, y1: float, x1: float, shape: tuple[int, int]) -> BBox:
    """The pixels of ``[y0, y1) × [x0, x1)`` (rounded outwards) inside an ``(H, W)`` image."""
    H, W = shape
    return BBox(max(0, int(np.floor(y0))), max(0, int(np.floor(x0))),
                min(H, int(np.ceil(y1))), min(W, int(np.ceil(x1))))


@dataclass
class EditRecord:
    """One edit: its bounding box and the old and new values inside it (uint8)."""

    bbox: BBox
    old: np.ndarray
    new: np.ndarray
    text: str = "stroke"

    @property
    def nbytes(self) -> int:
        return int(self.old.nbytes + self.new.nbytes)

    def undo(self, model: "AnnotationModel") -> None:
        """Put the old values back."""
        model._write(self.bbox, self.old)

    def redo(self, model: "AnnotationModel") -> None:
        """Apply the edit again."""
        model._write(self.bbox, self.new)


def trimmed(record: EditRecord) -> EditRecord:
    """Shrink a record's box to the pixels that really changed (a stroke's segments overlap)."""
    diff = record.old != record.new
    if diff.all():
        return record
    rows, cols = np.nonzero(diff.any(axis=1))[0], np.nonzero(diff.any(axis=0))[0]
    if rows.size == 0:  # painted over itself only: keep a 1-pixel no-op box
        rows, cols = np.array([0]), np.array([0])
    r0, r1, c0, c1 = int(rows[0]), int(rows[-1]) + 1, int(cols[0]), int(cols[-1]) + 1
    b = record.bbox
    box = BBox(b.y0 + r0, b.x0 + c0, b.y0 + r1, b.x0 + c1)
    return EditRecord(box, record.old[r0:r1, c0:c1].copy(), record.new[r0:r1, c0:c1].copy(),
                      record.text)
