"""What the app shows and edits, in one Qt-free model (napari's layer-model / ``_qt`` split).

:class:`AppState` holds the image, the strokes (:class:`~segapp.strokes.annotation.AnnotationModel`
plus its undo :class:`History`), the painting tool, the view flags and the result on display.
Every field is *evented*: assigning ``state.opacity = 0.3`` emits ``state.events.opacity(0.3)``
when the value changed. Widgets bind to exactly one field each (:mod:`segapp.gui.bind`):
they write the field when the user acts and follow it when it changes, and own no state of
their own; the canvas and the exporter read the same fields and draw with the same
:mod:`segapp.io.render` functions, so what is shown is what is exported.

>>> s = AppState()
>>> seen = []
>>> s.events.opacity.connect(seen.append)
>>> s.opacity = 0.25; s.opacity = 0.25
>>> seen
[0.25]
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import count
from typing import Any, Callable, Generic, TypeVar

import numpy as np

from ..io import render
from ..strokes.annotation import MAX_LABELS, AnnotationModel, EditRecord, Emitter
from .edits import count_change, label_counts

T = TypeVar("T")

TOOLS = ("brush", "eraser", "fill")
MIN_BRUSH, MAX_BRUSH = 1, 400


class Field(Generic[T]):
    """An evented attribute: ``check`` coerces/validates, a change emits ``events.<name>``."""

    def __init__(self, default: T, check: Callable[[Any], T] | None = None, doc: str = ""):
        self.default, self.check, self.__doc__ = default, check, doc

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, objtype: type | None = None) -> T:
        if obj is None:
            return self  # type: ignore[return-value]
        return obj.__dict__.get(self.name, self.default)

    def __set__(self, obj: Any, value: Any) -> None:
        if self.check is not None:
            value = self.check(value)
        old = obj.__dict__.get(self.name, self.default)
        if old is value or (_plain(old) and _plain(value) and old == value):
            return
        obj.__dict__[self.name] = value
        getattr(obj.events, self.name).emit(value)


def _plain(v: Any) -> bool:
    return v is None or isinstance(v, (bool, int, float, str, tuple))


class Events:
    """One :class:`~segapp.strokes.annotation.Emitter` per field of an evented class."""

    def __init__(self, names: list[str]) -> None:
        for n in names:
            setattr(self, n, Emitter())


def _fields(cls: type) -> list[str]:
    return [n for k in reversed(cls.__mro__) for n, v in vars(k).items()
            if isinstance(v, Field)]


def _clip(lo: float, hi: float) -> Callable[[Any], float]:
    return lambda v: float(min(hi, max(lo, float(v))))


def _one_of(choices: tuple) -> Callable[[Any], Any]:
    def check(v: Any) -> Any:
        if v not in choices:
            raise ValueError(f"expected one of {choices}, got {v!r}")
        return v
    return check


def _label(v: Any) -> int:
    v = int(v)
    if not 1 <= v <= MAX_LABELS:
        raise ValueError(f"label must be 1..{MAX_LABELS}, got {v}")
    return v


# --------------------------------------------------------------------------------------------
# undo history
# --------------------------------------------------------------------------------------------
class History:
    """Undo/redo of :class:`EditRecord` s, bounded in bytes (oldest steps dropped first).

    Every record gets a serial number when pushed; :meth:`key` is the serial of the newest
    applied record, which identifies the whole stroke set (a record can only sit on the prefix
    it was pushed on: pushing after an undo drops the redo steps). Results are cached on it.

    It also keeps the number of pixels of each label, updated from each record's box, so that
    "which labels are painted" costs nothing per edit (a full count is 30–130 ms at 12 MP);
    each record's change of the counts is computed once, when it is pushed (or given by the
    caller, who computed it off the GUI thread: :mod:`segapp.gui.edits`), and reused by its
    undo and redo.

    Events: ``changed()`` after push / undo / redo / clear.
    """

    _serials = count(1)

    def __init__(self, model: AnnotationModel, max_bytes: int = 512 * 2**20,
                 counts: np.ndarray | None = None) -> None:
        self.model = model
        self.max_bytes = max_bytes
        #: pixels per label id 0..MAX_LABELS (``counts``: given by a caller that has them)
        self.counts = label_counts(model.scribbles) if counts is None else np.array(counts)
        self._steps: list[tuple[int, EditRecord]] = []
        self._changes: dict[int, np.ndarray] = {}  # by serial: edits.count_change(record)
        self._index = 0
        self._base = next(self._serials)  # the strokes the history started from
        self.changed = Emitter()

    def key(self) -> int:
        return self._steps[self._index - 1][0] if self._index else self._base

    def label_ids_present(self) -> list[int]:
        """Label ids with at least one painted pixel, sorted (as the model's, from counts)."""
        return [int(i) for i in np.nonzero(self.counts[1:])[0] + 1]

    def can_undo(self) -> bool:
        return self._index > 0

    def can_redo(self) -> bool:
        return self._index < len(self._steps)

    def push(self, record: EditRecord | None, change: np.ndarray | None = None) -> None:
        """Add an edit that has already been applied to the model; ``change``: its
        :func:`~segapp.gui.edits.count_change` if the caller has it."""
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
        be redone; ``changes``: their :func:`~segapp.gui.edits.count_change` if known. The
        counts stay those of the model, which already holds the applied steps."""
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


# --------------------------------------------------------------------------------------------
# the app state
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Shown:
    """A result on display and the request tag (image, stroke set, method, options) it is for."""

    tag: Any
    result: Any  # segapp.live.Result: the Segmentation and its heat-map colour ranges
    cached: bool = False

    @property
    def segmentation(self) -> Any:
        return self.result.segmentation

    @property
    def labels(self) -> np.ndarray:
        return self.result.segmentation.labels


class AppState:
    """Everything the window shows; evented fields (see the module docstring).

    The image, its strokes and its history change together through :meth:`set_image`.
    """

    image = Field(None, doc="(H, W, 3) float image on display, or None")
    image_path = Field(None, doc="where the image came from (Path) or None")
    label = Field(1, _label, "label painted with (1..9)")
    tool = Field("brush", _one_of(TOOLS), "brush, eraser or fill (bucket on the segmentation)")
    brush_size = Field(16.0, _clip(MIN_BRUSH, MAX_BRUSH), "brush diameter, see brush_screen")
    brush_screen = Field(True, bool, "brush_size in screen pixels (follows zoom), else image px")
    unlabelled_only = Field(False, bool, "strokes only paint pixels that carry no label yet")
    opacity = Field(0.5, _clip(0.0, 1.0), "opacity of the segmentation colours")
    show_image = Field(True, bool)
    show_overlay = Field(True, bool)
    show_strokes = Field(True, bool)
    boundaries = Field(False, bool, "draw only the region boundaries")
    unsure = Field(False, bool, "stripe where the answer is least sure: where to paint next")
    heatmap = Field(-1, int, "eigenvector shown full size over the image, -1 for none")
    shown = Field(None, doc="the Shown segmentation, or None")
    method = Field("fastge", str, "segmentation method")
    options = Field((), tuple, "(name, value) pairs of the method's options, sorted")

    def __init__(self) -> None:
        self.events = Events(_fields(type(self)))
        self.events.image_changed = Emitter()  # (model) a new image with its strokes
        self.strokes: AnnotationModel | None = None
        self.history: History | None = None
        #: The image and strokes as the canvas draws them, made off the GUI thread by the
        #: loader (opaque here: a :class:`segapp.gui.loader.View`), or None (the canvas then
        #: makes them from :attr:`image` and :attr:`strokes`).
        self.view: Any = None

    def watch(self, callback: Callable[[], Any], *fields: str) -> None:
        """Call ``callback()`` (no argument) whenever one of ``fields`` changes."""
        for name in fields:
            getattr(self.events, name).connect(lambda _value: callback())

    # -- image and strokes -----------------------------------------------------------------
    def set_image(self, image: np.ndarray, path: Any, strokes: AnnotationModel,
                  view: Any = None, counts: np.ndarray | None = None) -> None:
        """Show ``image`` with ``strokes`` (a fresh history; nothing segmented yet);
        ``view`` is their display form and ``counts`` their :func:`label_counts` if they
        were made already (see :attr:`view`)."""
        self.shown = None
        self.heatmap = -1
        self.strokes, self.history = strokes, History(strokes, counts=counts)
        self.view = view
        self.image_path = path
        self.image = image
        self.events.image_changed.emit(strokes)

    def stroke_key(self) -> int | None:
        return None if self.history is None else self.history.key()

    def option_dict(self) -> dict[str, Any]:
        return dict(self.options)

    def set_option(self, name: str, value: Any) -> None:
        self.options = tuple(sorted({**dict(self.options), name: value}.items()))

    # -- painting --------------------------------------------------------------------------
    def paint_label(self) -> int:
        """The label a stroke writes: 0 for the eraser."""
        return 0 if self.tool == "eraser" else self.label

    def grow_brush(self, steps: int = 1) -> None:
        """Bigger (steps > 0) or smaller brush, by ~15 % per step (at least one pixel)."""
        size = round(self.brush_size)
        for _ in range(abs(steps)):
            delta = max(1, round(size * 0.15))
            size += delta if steps > 0 else -delta
        self.brush_size = size

    def brush_radius(self, zoom: float) -> float:
        """Brush radius in image pixels at ``zoom`` screen pixels per image pixel."""
        d = self.brush_size / zoom if self.brush_screen and zoom > 0 else self.brush_size
        return max(d / 2.0, 0.5)

    # -- what is drawn (the canvas, the display and the exporter call these) -------------
    def colors(self) -> dict[int, tuple[int, int, int]]:
        return {} if self.strokes is None else self.strokes.colors()

    def overlay_opacity(self) -> float:
        return render.overlay_opacity(self.opacity, self.boundaries)

    def heatmap_rgb(self, index: int, shown: Shown | None = None) -> np.ndarray:
        """Full-size heat map of eigenvector ``index`` in the colour range the panel shows."""
        shown = shown or self.shown
        assert shown is not None
        v = np.asarray(shown.segmentation.eigenvectors)[..., index]
        return render.heatmap(v, vmax=shown.result.vmax[index])
