# Over 400 lines on purpose: the stroke model and its undo records edit one label map together.
"""The annotation model: scribble label map, label table, brush strokes and their undo records.

Qt-free on purpose (napari's model / ``_qt`` split): the GUI observes an
:class:`AnnotationModel` through :class:`Emitter` callbacks and wraps its
:class:`EditRecord` objects in ``QUndoCommand``\\ s, while tests and scripts use it directly.

>>> model = AnnotationModel((90, 120))
>>> record = model.apply_stroke([(10, 10), (60, 12)], label=1, radius=3)
>>> int(model.scribbles[10, 30]), model.revision
(1, 1)
>>> record.undo(model); int(model.scribbles[10, 30])
0

Coordinates are image coordinates ``(x, y)`` in pixels, pixel ``(row i, column j)`` covering
``[j, j + 1) × [i, i + 1)``, so its centre is ``(j + 0.5, i + 0.5)`` (as in a Qt scene whose
image item sits at the origin).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

import numpy as np

__all__ = [
    "MAX_LABELS",
    "BBox",
    "Label",
    "EditRecord",
    "Emitter",
    "AnnotationModel",
    "default_labels",
    "stroke_mask",
]

#: Label ids are 1..MAX_LABELS (0 = unlabelled); the GUI maps them to the keys 1..9.
MAX_LABELS = 9

# Fallback palette, identical to segapp.io.render.PALETTE, so the model imports nothing heavy.
_PALETTE: tuple[tuple[int, int, int], ...] = (
    (230, 159, 0), (86, 180, 233), (0, 158, 115), (204, 121, 167), (0, 114, 178),
    (213, 94, 0), (240, 228, 66), (51, 34, 136), (187, 187, 187),
)


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

    @classmethod
    def full(cls, shape: tuple[int, int]) -> "BBox":
        return cls(0, 0, int(shape[0]), int(shape[1]))


@dataclass
class Label:
    """One entry of the label table."""

    id: int
    name: str
    color: tuple[int, int, int]

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "color": list(self.color)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Label":
        color = tuple(int(c) for c in d["color"])
        if len(color) != 3 or not all(0 <= c <= 255 for c in color):
            raise ValueError(f"label colour must be three values 0..255, got {d['color']!r}")
        return cls(int(d["id"]), str(d["name"]), color)  # type: ignore[arg-type]


def default_labels() -> list[Label]:
    """Labels 1..9 named "Label i" in the colour-blind-safe palette of :mod:`segapp.io.render`."""
    try:  # the render module is the single source of the palette when it is importable
        from ..io.render import PALETTE
        colors = [tuple(int(c) for c in row) for row in PALETTE]
    except ImportError:  # pragma: no cover - render is part of the package
        colors = list(_PALETTE)
    return [Label(i, f"Label {i}", colors[(i - 1) % len(colors)])  # type: ignore[arg-type]
            for i in range(1, MAX_LABELS + 1)]


class Emitter:
    """A minimal observer list: ``connect(callback)``, ``emit(*args)``.

    Callbacks run synchronously in the emitting thread, in connection order.
    """

    def __init__(self) -> None:
        self._callbacks: list[Callable[..., Any]] = []

    def connect(self, callback: Callable[..., Any]) -> None:
        if callback not in self._callbacks:
            self._callbacks.append(callback)

    def disconnect(self, callback: Callable[..., Any]) -> None:
        if callback in self._callbacks:
            self._callbacks.remove(callback)

    def emit(self, *args: Any) -> None:
        for cb in list(self._callbacks):
            cb(*args)


@dataclass
class EditRecord:
    """What one edit changed: its bounding box and the old and new values inside it.

    Only the box is stored (napari-style), never a copy of the whole map; values are uint8
    because label ids are 0..9.
    """

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


def _clip_bbox(y0: float, x0: float, y1: float, x1: float, shape: tuple[int, int]) -> BBox:
    H, W = shape
    return BBox(max(0, int(np.floor(y0))), max(0, int(np.floor(x0))),
                min(H, int(np.ceil(y1))), min(W, int(np.ceil(x1))))


def stroke_mask(p0: tuple[float, float], p1: tuple[float, float], radius: float,
                shape: tuple[int, int]) -> tuple[BBox, np.ndarray]:
    """Pixels whose centres lie within ``radius`` of the segment ``p0``–``p1``.

    Parameters
    ----------
    p0, p1 : (x, y)
        Segment ends in image coordinates (equal for a dot).
    radius : float
        Brush radius in pixels; at least ~0.71 so a click always covers its pixel.
    shape : (H, W)

    Returns
    -------
    bbox : BBox
        The (clipped) box of the swept disc.
    mask : ndarray of bool
        ``(bbox.height, bbox.width)``.
    """
    r = max(float(radius), 0.71)
    (ax, ay), (bx, by) = (float(p0[0]), float(p0[1])), (float(p1[0]), float(p1[1]))
    box = _clip_bbox(min(ay, by) - r, min(ax, bx) - r, max(ay, by) + r, max(ax, bx) + r, shape)
    if box.empty:
        return box, np.zeros((box.height, box.width), bool)
    ys = np.arange(box.y0, box.y1, dtype=np.float64)[:, None] + 0.5
    xs = np.arange(box.x0, box.x1, dtype=np.float64)[None, :] + 0.5
    dx, dy = bx - ax, by - ay
    seg2 = dx * dx + dy * dy
    if seg2 == 0.0:
        t = 0.0
    else:  # projection of each pixel centre onto the segment, clamped to its ends
        t = np.clip(((xs - ax) * dx + (ys - ay) * dy) / seg2, 0.0, 1.0)
    px, py = xs - (ax + t * dx), ys - (ay + t * dy)
    return box, (px * px + py * py) <= r * r


class AnnotationModel:
    """Scribbles (an ``(H, W)`` int32 label map) and the label table of one image.

    Parameters
    ----------
    shape : (H, W)
        Image size.
    labels : sequence of Label, optional
        Default :func:`default_labels`.

    Attributes
    ----------
    scribbles : ndarray (H, W) int32
        0 = unlabelled, else a label id. Change it only through the model's methods.
    revision : int
        Increases by one on every change of :attr:`scribbles` (strokes, undo, redo, clears);
        segmentation results carry the revision they were computed for.
    changed : Emitter
        ``changed(bbox: BBox)`` after every change of the scribbles.
    labels_changed : Emitter
        ``labels_changed(label_id: int)`` after a rename or recolour.
    stroke_finished : Emitter
        ``stroke_finished(record: EditRecord)`` when a stroke ends (for undo stacks).
    """

    def __init__(self, shape: tuple[int, int], labels: Sequence[Label] | None = None) -> None:
        H, W = (int(s) for s in tuple(shape)[:2])
        if H < 1 or W < 1:
            raise ValueError(f"image shape must be positive, got {shape}")
        self.shape: tuple[int, int] = (H, W)
        self.scribbles = np.zeros((H, W), dtype=np.int32)
        self.labels: dict[int, Label] = {lab.id: lab for lab in (labels or default_labels())}
        self.revision = 0
        self.changed = Emitter()
        self.labels_changed = Emitter()
        self.stroke_finished = Emitter()
        self._stroke: _StrokeInProgress | None = None

    # -- queries ---------------------------------------------------------------------------
    def label_ids_present(self) -> list[int]:
        """Label ids that have at least one scribbled pixel, sorted."""
        counts = np.bincount(self.scribbles.ravel(), minlength=MAX_LABELS + 1)
        return [int(i) for i in np.nonzero(counts[1:])[0] + 1]

    def can_segment(self) -> bool:
        """At least two distinct labels are painted (the engine's minimum)."""
        return len(self.label_ids_present()) >= 2

    def colors(self) -> dict[int, tuple[int, int, int]]:
        """``{label id: (r, g, b)}`` for rendering."""
        return {i: lab.color for i, lab in self.labels.items()}

    # -- label table -----------------------------------------------------------------------
    def rename_label(self, label_id: int, name: str) -> None:
        self.labels[label_id].name = str(name)
        self.labels_changed.emit(label_id)

    def set_label_color(self, label_id: int, color: Iterable[int]) -> None:
        rgb = tuple(int(c) for c in color)
        if len(rgb) != 3 or not all(0 <= c <= 255 for c in rgb):
            raise ValueError(f"colour must be three values 0..255, got {rgb}")
        self.labels[label_id].color = rgb  # type: ignore[assignment]
        self.labels_changed.emit(label_id)

    def set_labels(self, labels: Sequence[Label]) -> None:
        """Replace the whole label table (e.g. from a saved session)."""
        for lab in labels:
            self.labels[lab.id] = Label(lab.id, lab.name, tuple(lab.color))  # type: ignore[arg-type]
        self.labels_changed.emit(0)

    # -- strokes ---------------------------------------------------------------------------
    def begin_stroke(self, label: int, radius: float, unlabelled_only: bool = False) -> None:
        """Start a stroke of ``label`` (0 = eraser) with a round brush of ``radius`` pixels.

        With ``unlabelled_only`` the stroke changes only pixels that carry no label yet.
        """
        if not 0 <= int(label) <= MAX_LABELS:
            raise ValueError(f"label must be 0..{MAX_LABELS}, got {label}")
        if self._stroke is not None:
            self.end_stroke()
        self._stroke = _StrokeInProgress(int(label), float(radius), bool(unlabelled_only))

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
            if not change.any():
                continue
            # Keep the values this segment overwrites; replaying them backwards undoes the stroke.
            s.pieces.append((box, view.astype(np.uint8)))
            view[change] = s.label
            dirty = box.union(dirty)
        if dirty is not None:
            s.bbox = dirty.union(s.bbox)
            self.revision += 1
            self.changed.emit(dirty)
        return dirty

    def end_stroke(self) -> EditRecord | None:
        """Finish the stroke; return its undo record (None if it changed nothing)."""
        s, self._stroke = self._stroke, None
        if s is None or s.bbox is None:
            return None
        box = s.bbox
        new = self.scribbles[box.slices].astype(np.uint8)
        old = new.copy()
        for piece_box, values in reversed(s.pieces):
            old[piece_box.y0 - box.y0:piece_box.y1 - box.y0,
                piece_box.x0 - box.x0:piece_box.x1 - box.x0] = values
        text = "erase" if s.label == 0 else f"stroke ({self.labels[s.label].name})"
        record = _trimmed(EditRecord(box, old, new, text))
        self.stroke_finished.emit(record)
        return record

    def apply_stroke(self, points: Sequence[tuple[float, float]], label: int,
                     radius: float, unlabelled_only: bool = False) -> EditRecord | None:
        """Paint a whole stroke at once (``begin``/``extend``/``end``)."""
        self.begin_stroke(label, radius, unlabelled_only)
        self.extend_stroke(points)
        return self.end_stroke()

    # -- whole-map edits -------------------------------------------------------------------
    def clear_label(self, label: int) -> EditRecord | None:
        """Erase every pixel of ``label``; return the undo record (None if there were none)."""
        return self._replace(np.where(self.scribbles == label, 0, self.scribbles),
                             f"clear {self.labels[label].name}" if label in self.labels
                             else "clear label")

    def clear_all(self) -> EditRecord | None:
        """Erase every stroke; return the undo record (None if there were none)."""
        return self._replace(np.zeros_like(self.scribbles), "clear all")

    def fill(self, mask: np.ndarray, label: int, unlabelled_only: bool = True,
             text: str | None = None) -> EditRecord | None:
        """Give the unpainted pixels of ``mask`` (H, W bool) the label ``label``, as a paint
        bucket does; return the record (None if no pixel of ``mask`` was unpainted).

        A fill never changes a pixel that carries a label, whatever its label: it only adds
        (a fill over a region holding another label's stroke used to delete that stroke).
        ``unlabelled_only`` is accepted for the callers that pass the "paint unlabelled pixels
        only" option; a fill behaves so in any case.
        """
        if not 1 <= int(label) <= MAX_LABELS:
            raise ValueError(f"a fill's label must be 1..{MAX_LABELS}, got {label}")
        m = np.asarray(mask, bool) & (self.scribbles == 0)
        return self._replace(np.where(m, np.int32(label), self.scribbles),
                             text or f"fill ({self.labels[label].name})")

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
        """Replace the scribbles (e.g. loaded from a file); return the undo record."""
        return self._replace(self._checked(scribbles), text)

    def _checked(self, scribbles: np.ndarray) -> np.ndarray:
        """``scribbles`` as an int32 map of this size with ids 0..MAX_LABELS (else ValueError)."""
        s = np.asarray(scribbles)
        if s.shape != self.shape:
            raise ValueError(f"scribbles are {s.shape[1]}×{s.shape[0]} but the image is "
                             f"{self.shape[1]}×{self.shape[0]}")
        if s.size and (s.min() < 0 or s.max() > MAX_LABELS):
            raise ValueError(f"scribble values must be 0..{MAX_LABELS}")
        return s.astype(np.int32)

    def _replace(self, new_map: np.ndarray, text: str) -> EditRecord | None:
        diff = new_map != self.scribbles
        if not diff.any():
            return None
        rows, cols = np.nonzero(diff.any(axis=1))[0], np.nonzero(diff.any(axis=0))[0]
        box = BBox(int(rows[0]), int(cols[0]), int(rows[-1]) + 1, int(cols[-1]) + 1)
        record = EditRecord(box, self.scribbles[box.slices].astype(np.uint8),
                            new_map[box.slices].astype(np.uint8), text)
        record.redo(self)
        return record

    def _write(self, box: BBox, values: np.ndarray) -> None:
        """Set the values in ``box`` (used by records); bumps the revision and notifies."""
        self.scribbles[box.slices] = values
        self.revision += 1
        self.changed.emit(box)


@dataclass
class _StrokeInProgress:
    label: int
    radius: float
    unlabelled_only: bool = False
    last: tuple[float, float] | None = None
    bbox: BBox | None = None
    pieces: list[tuple[BBox, np.ndarray]] = field(default_factory=list)


def _trimmed(record: EditRecord) -> EditRecord:
    """Shrink a record's box to the pixels that really changed (segments overlap a lot)."""
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
