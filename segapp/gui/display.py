"""Segmentation on screen: asks the worker for a result when the strokes or options change,
shows the result of the strokes on screen, and draws its layers off the GUI thread.

Wiring only: what to draw comes from :class:`~segapp.gui.state.AppState` (which calls
:mod:`segapp.io.render`), solving from :class:`~segapp.gui.worker.SegmentationWorker`, drawing
from :class:`~segapp.gui.renderer.Renderer`.
"""

from __future__ import annotations

import time
from typing import Any, Callable

import numpy as np
from PySide6.QtCore import QObject, QTimer, Signal

from ..io import render
from ..editing import AnnotationModel
from .canvas import Canvas
from .edits import region_at
from .qtcompat import emit
from .qimage import label_qimage
from .renderer import Renderer
from .state import AppState
from ..live import Result
from .worker import SegmentationWorker
from . import words

#: The words of a failed solve, in the status bar and at the head of the message bar's line
#: (which the window takes down once an answer is shown again).
SOLVE_FAILED = "Segmentation failed"


class Display(QObject):
    """Keeps :attr:`AppState.shown` the segmentation of the strokes on screen.

    Signals
    -------
    shownChanged(object tag)
        A result for this request tag is now on display (its overlay drawn).
    message(str)
        Something for the status bar.
    status(str)
        What the solving is doing, always true: the running solve's method, stage and
        seconds; else the shown result's line in plain words ("Segmented in 0.42 s, fast
        solver"); else why there is none.
    details(str)
        The shown result's method and solver details (the tooltip of that line).
    progress(object fraction, float seconds)
        The running solve's share done (None: unknown) and its seconds; (None, -1) when no
        solve runs.
    """

    shownChanged = Signal(object)
    message = Signal(str)
    status = Signal(str)
    details = Signal(str)
    progress = Signal(object, float)

    def __init__(self, state: AppState, canvas: Canvas, worker: SegmentationWorker,
                 edit_later: Callable[..., None], parent: QObject | None = None):
        super().__init__(parent)
        self.state, self.canvas, self.worker = state, canvas, worker
        self.edit_later = edit_later  # Document.edit_later: a whole-map edit off the GUI thread
        self.renderer = Renderer(self)
        self.renderer.ready.connect(self._on_drawn)
        self.tag: Any = None  # the request for the strokes on screen
        worker.resultReady.connect(self._on_result)
        worker.previewReady.connect(self._on_preview)
        worker.failed.connect(self._on_failed)
        worker.progress.connect(self._on_progress)
        worker.busy.connect(self._on_busy)
        self._status = ""  # the shown result's status line (what the bar says when idle)
        self._said = ""    # the last line said
        self.status.connect(self._remember)
        self._progress: tuple[Any, float] | None = None  # the last report, and when it came
        self._ticker = QTimer(self)
        self._ticker.setInterval(500)
        self._ticker.timeout.connect(self._tick)
        state.events.image_changed.connect(self._on_image)
        state.watch(self.request, "method", "options")
        state.watch(self.draw_overlay, "shown", "boundaries", "unsure")
        state.watch(self.draw_heatmap, "heatmap")
        canvas.fillRequested.connect(self.fill)
        self._model: AnnotationModel | None = None

    # -- requests --------------------------------------------------------------------------
    def _on_image(self, model: AnnotationModel) -> None:
        if self._model is not None:
            self._model.labels_changed.disconnect(self._on_labels)
            self._model.stroke_finished.disconnect(self._on_stroke)
        self._model = model
        model.labels_changed.connect(self._on_labels)
        model.stroke_finished.connect(self._on_stroke)
        self.worker.set_image(self.state.image)
        # Solve when the stroke set changes (its history key): never on raw model changes,
        # which precede the new key for edits that are pushed after they are applied.
        self.state.history.changed.connect(self.request)
        self.renderer.clear("overlay")
        self.renderer.clear("heatmap")
        self.renderer.cache.clear()  # another image's drawings
        self.request()

    def _on_labels(self, _label_id: int) -> None:
        self.draw_overlay()

    def _on_stroke(self, _record: Any) -> None:
        """A stroke ended (its history step asked for a solve): one act, not a burst of
        edits, so its solve starts now rather than after the debounce."""
        self.worker.flush()

    def request(self, debounce: bool = True) -> None:
        """Segment the strokes on screen (a cached result is shown at once)."""
        model = self.state.strokes
        if model is None:
            return
        n = len(self.state.history.label_ids_present())  # kept by the history: no full scan
        if n < 2:
            self.worker.cancel()
            self.tag = None
            self.state.shown = None
            self.state.heatmap = -1
            emit(self.status, "")
            emit(self.details, "")
            emit(self.message, "Paint strokes with at least two labels to segment"
                 + (" (one label so far)" if n == 1 else ""))
            return
        self.tag = self.worker.tag(self.state.stroke_key(), self.state.method,
                                   self.state.option_dict())
        if self.state.shown is not None and self.state.shown.tag == self.tag:
            # back to what is on screen (scpc, then fastge again): nothing else is wanted
            # now, so the solve that was started for the other request stops
            self.worker.cancel()
            return
        self.worker.request(model.scribbles, self.state.stroke_key(), self.state.method,
                            self.state.option_dict(), debounce=debounce)

    # -- results ---------------------------------------------------------------------------
    # The worker reports only its newest request (segapp.gui.jobs: newest wins), and that is
    # always the strokes on screen: request() asks for self.tag or cancels. So what arrives
    # here is for self.tag, and no second check is needed.
    def _on_result(self, tag: Any, result: Result, cached: bool) -> None:
        self.state.shown = result.shown(tag, cached)
        heat = self.state.heatmap
        if heat >= result.n_vectors:
            self.state.heatmap = -1
        elif heat >= 0:
            self.draw_heatmap()
        seg = result.segmentation
        lost = result.unplaced  # found in the worker thread
        if lost:  # only the unconstrained baseline: its strokes name clusters, not shape them
            emit(self.message, f"{seg.method} could not place label"
                 f"{'s' if len(lost) > 1 else ''} {', '.join(map(str, lost))}: it ignores the "
                 "strokes when clustering (choose a constrained method to keep every label)")
        emit(self.details, words.result_details(seg))
        self._status = words.result_status(result.seconds, cached, seg.diagnostics)
        emit(self.status, self._status)
        emit(self.progress, None, -1.0)

    def _on_preview(self, tag: Any, result: Result) -> None:
        if self.state.shown is None or self.state.shown.tag != tag:
            self.state.shown = result.shown(tag)
            emit(self.details, words.result_details(result.segmentation))
            emit(self.status, f"Coarse preview (hatched) after {result.seconds:.2f} s, the "
                              "answer follows…")

    def _on_failed(self, _tag: Any, message: str) -> None:
        self._status = SOLVE_FAILED
        emit(self.status, self._status)
        emit(self.message, f"error: {SOLVE_FAILED}: {message}")

    def _on_progress(self, _tag: Any, progress: Any) -> None:
        self._progress = (progress, time.perf_counter())
        self._tick()
        self._ticker.start()

    def _tick(self) -> None:
        """The running solve's line, its seconds counted on between the solve's reports."""
        if self._progress is None or not self.worker.is_busy:
            self._ticker.stop()
            return
        progress, at = self._progress
        seconds = progress.seconds + time.perf_counter() - at
        share = f" {progress.fraction:.0%}" if progress.fraction is not None else ""
        shown = self.state.shown
        preview = ("coarse preview (hatched) shown, the answer follows: " if shown is not None
                   and shown.tag == self.tag and shown.preview else "")
        emit(self.status, f"{progress.method}: {preview}{progress.stage}…{share} "
                          f"{seconds:.0f} s")
        emit(self.progress, progress.fraction, seconds)

    def _on_busy(self, busy: bool) -> None:
        """No solve runs for the strokes on screen: the bar says what is shown, not that a
        solve runs (it stayed "segmenting…" after a method switch, issue 32)."""
        if busy:
            return
        self._progress = None
        self._ticker.stop()
        shown = self.state.shown
        if shown is not None and shown.tag == self.tag and shown.preview:
            text = (f"stopped; showing the coarse preview (hatched) of "
                    f"{shown.segmentation.method}")
        elif self.tag is None or (shown is not None and shown.tag == self.tag):
            text = self._status
        elif shown is None:
            text = "stopped: no answer yet (paint a stroke to segment again)"
        else:
            text = (f"stopped; showing the earlier answer "
                    f"({shown.segmentation.method})")
        if text != self._said:
            emit(self.status, text)
        emit(self.progress, None, -1.0)

    def _remember(self, text: str) -> None:
        self._said = text

    def cancel_solve(self) -> None:
        """Stop the running solve (the Cancel button): the strokes and the shown answer stay."""
        self.worker.cancel()

    # -- drawing ---------------------------------------------------------------------------
    def draw_overlay(self) -> None:
        shown = self.state.shown
        if shown is None:
            self.renderer.clear("overlay")
            return
        # a working answer from its own labels: its full-size ones are made after it is on
        # screen (the canvas stretches the layer; 50 ms less to its overlay at 12 MP)
        labels, colors, boundaries = shown.screen_labels, self.state.colors(), \
            self.state.boundaries
        unsure, seg = self.state.unsure, shown.segmentation
        # the hatching as wide on screen as on a full-size layer
        full_width = getattr(seg, "shape", labels.shape)[1]
        hatch = max(1, round(render.PREVIEW_HATCH * labels.shape[1] / full_width))
        preview, hidden = shown.preview, self.state.hidden_labels()
        # kept by what it shows: the undo or redo of a stroke gets its overlay back at once
        key = (shown.tag, shown.preview, tuple(sorted(colors.items())), boundaries,
               unsure, hidden)

        def layer() -> Any:
            # the colours of the exported overlay (render.label_layer), drawn straight into
            # the QImage; the confidence map is computed here, in the renderer's thread
            return label_qimage(
                labels, colors, boundaries=boundaries, hidden=hidden,
                # hatched: the answer that replaces it may differ (issue 22 item 5)
                hatch=hatch if preview else 0,
                confidence=getattr(seg, "confidence", None) if unsure and not preview else None)

        self.renderer.draw("overlay", layer, key=key, source=labels)

    def draw_heatmap(self) -> None:
        index = self.state.heatmap
        if index < 0 or self.state.shown is None:
            self.renderer.clear("heatmap")
            return
        shown = self.state.shown
        self.renderer.draw("heatmap", lambda: self.state.heatmap_rgb(index, shown))

    def _on_drawn(self, layer: str, image: Any) -> None:
        if layer == "overlay":
            self.canvas.set_overlay(image)
            if image is not None and self.state.shown is not None:
                tag = self.state.shown.tag
                emit(self.shownChanged, tag)
                # its refinement and the next edit's factorization may start once it is
                # painted: the timer fires after the paint this overlay asked for
                QTimer.singleShot(0, lambda: self.worker.shown(tag))
        else:
            self.canvas.set_heatmap(image)

    def wait_idle(self, msecs: int = 10000) -> bool:
        return self.renderer.wait_idle(msecs)

    # -- fill bucket -----------------------------------------------------------------------
    def fill(self, x: int, y: int) -> None:
        """Paint the connected region of the segmentation under (x, y) with the current label."""
        model, shown = self.state.strokes, self.state.shown
        if model is None or shown is None:
            emit(self.message, "Fill paints a region of the segmentation: paint two labels "
                               "first and wait for it")
            return
        label, only = self.state.label, self.state.unlabelled_only
        # 0.3 s at 12 MP (the region, then the new stroke map): off the GUI thread, and so is
        # the first read of a working answer's full-size labels (made when first read)
        self.edit_later("Filling a region", lambda m, mask: m.fill(mask, label, only),
                        lambda: region_at(np.asarray(shown.labels), y, x))

