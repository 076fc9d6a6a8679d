"""What the app shows and edits, in one Qt-free model (napari's layer-model / ``_qt`` split).

:class:`AppState` holds the image, the strokes (:class:`~segapp.editing.AnnotationModel`,
which owns its undo :class:`~segapp.editing.History`), the painting tool, the view flags and the result on display.
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

from typing import Any, Callable, Generic, TypeVar

import numpy as np

from ..editing import MAX_LABELS, TOOLS as TOOL_TABLE, AnnotationModel, Emitter, History
from ..io import render
from ..live.results import Result

T = TypeVar("T")

#: The painting tools (:data:`segapp.editing.TOOLS`): brush, eraser, fill, picker.
TOOLS = tuple(TOOL_TABLE)
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
    """One :class:`~segapp.editing.Emitter` per field of an evented class."""

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
# the app state
# --------------------------------------------------------------------------------------------


class AppState:
    """Everything the window shows; evented fields (see the module docstring).

    The image, its strokes and its history change together through :meth:`set_image`.
    """

    image = Field(None, doc="(H, W, 3) float image on display, or None")
    image_path = Field(None, doc="where the image came from (Path) or None")
    label = Field(1, _label, f"label painted with (an id of the schema, 1..{MAX_LABELS})")
    tool = Field("brush", _one_of(TOOLS), "brush, eraser, fill (bucket on the segmentation) "
                 "or picker (eyedropper)")
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
    shown = Field(None, doc="the result on display (segapp.live.Result, with its request "
                  "tag), or None")
    method = Field("fastge", str, "segmentation method")
    options = Field((), tuple, "(name, value) pairs of the method's options, sorted")

    def __init__(self) -> None:
        self.events = Events(_fields(type(self)))
        self.events.image_changed = Emitter()  # (model) a new image with its strokes
        self.strokes: AnnotationModel | None = None
        #: The image and strokes as the canvas draws them, made off the GUI thread by the
        #: loader (opaque here: a :class:`segapp.gui.loader.View`), or None (the canvas then
        #: makes them from :attr:`image` and :attr:`strokes`).
        self.view: Any = None

    def watch(self, callback: Callable[[], Any], *fields: str) -> None:
        """Call ``callback()`` (no argument) whenever one of ``fields`` changes."""
        for name in fields:
            getattr(self.events, name).connect(lambda _value: callback())

    # -- image and strokes -----------------------------------------------------------------
    @property
    def history(self) -> History | None:
        """The undo history of the strokes on screen (the strokes own it)."""
        return None if self.strokes is None else self.strokes.history

    def set_image(self, image: np.ndarray, path: Any, strokes: AnnotationModel,
                  view: Any = None) -> None:
        """Show ``image`` with ``strokes`` (nothing segmented yet); ``view`` is their display
        form if it was made already (see :attr:`view`)."""
        self.shown = None
        self.heatmap = -1
        self.strokes = strokes
        if self.label not in strokes.schema:  # the schema of another folder
            self.label = strokes.schema.ids()[0]
        self.view = view
        self.image_path = path
        self.image = image
        self.events.image_changed.emit(strokes)

    def stroke_key(self) -> int | None:
        return None if self.history is None else self.history.key()

    def option_dict(self) -> dict[str, Any]:
        return dict(self.options)

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

    def hidden_labels(self) -> tuple[int, ...]:
        """Labels not drawn (strokes and segmentation): :attr:`Label.hidden`."""
        return () if self.strokes is None else tuple(self.strokes.schema.hidden_ids())

    def overlay_opacity(self) -> float:
        return render.overlay_opacity(self.opacity, self.boundaries)

    def heatmap_rgb(self, index: int, shown: Result | None = None) -> np.ndarray:
        """Full-size heat map of eigenvector ``index`` in the colour range the panel shows."""
        shown = shown or self.shown
        assert shown is not None
        v = np.asarray(shown.segmentation.eigenvectors)[..., index]
        return render.heatmap(v, vmax=shown.vmax[index])
