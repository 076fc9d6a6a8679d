"""The napari dock widget: scribbles in a Labels layer, segapp's result in another, live.

Pick an image layer and a Labels layer holding the scribbles (0 = none, else label ids;
"New scribbles layer" makes an empty one of the image's size). With "Live" on, every
finished brush stroke, fill, undo or replacement of the scribble data starts
:meth:`segapp.Session.update` in napari's ``thread_worker`` (after a short pause, so a burst
of edits makes one solve; a newer edit cancels the running solve). The result goes into the
Labels layer "segapp result" (same label ids, so the same colours as the scribbles) and, with
"Eigenvector layers", each eigenvector into an image layer "segapp eigenvector j".

The widget holds no state of its own beyond the Qt controls: requests, cancellation and the
cached session live in :class:`segapp.napari.model.LiveSegmenter`, on the live-solve engine
the desktop app uses too (:mod:`segapp.live`). It is the one module of ``segapp.napari``
that imports Qt (through qtpy, the binding napari uses) and napari; the model, the sample
data and the manifest that points at this class do not.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from napari.layers import Image, Labels
from napari.qt.threading import thread_worker
from qtpy.QtCore import Qt, QTimer
from qtpy.QtWidgets import (QCheckBox, QComboBox, QFormLayout, QLabel, QPushButton,
                            QVBoxLayout, QWidget)

from ..errors import Cancelled, SegappError
from ..methods import available_methods
from ..solve.diagnostics import status_note
from ..napari.model import LiveSegmenter, Request, as_unit_image

if TYPE_CHECKING:
    import napari

__all__ = ["SegmentWidget", "RESULT_LAYER", "EIGENVECTOR_LAYER"]

RESULT_LAYER = "segapp result"
EIGENVECTOR_LAYER = "segapp eigenvector {}"
#: Pause after the last edit before solving (a burst of edits makes one solve).
DEBOUNCE_MS = 120


def _layer_id(layer: Any) -> Any:
    """The layer's ``unique_id`` (None for no layer): the same for every proxy of one layer."""
    return None if layer is None else layer.unique_id


def _solve_or_error(model: LiveSegmenter, req: Request) -> tuple[Any, Exception | None]:
    """Worker-thread body: ``(Segmentation, None)`` or ``(None, the exception)``."""
    try:
        return model.solve(req), None
    except Exception as exc:  # shown in the status line; the widget stays usable
        return None, exc


class SegmentWidget(QWidget):
    """Dock widget: image layer + scribbles Labels layer → "segapp result" Labels layer.

    Parameters
    ----------
    napari_viewer : napari.Viewer
        Injected by napari when the widget is opened from the Plugins menu.
    """

    def __init__(self, napari_viewer: "napari.viewer.Viewer") -> None:
        super().__init__()
        self.viewer = napari_viewer
        self.model = LiveSegmenter()
        self._watched: Labels | None = None
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(DEBOUNCE_MS)
        self._timer.timeout.connect(self._request)

        self.image_box = QComboBox()
        self.scribbles_box = QComboBox()
        self.method_box = QComboBox()
        for name, text in available_methods():
            self.method_box.addItem(name)
            self.method_box.setItemData(self.method_box.count() - 1, text, Qt.ToolTipRole)
        self.live_box = QCheckBox("Live (solve on every scribble edit)")
        self.live_box.setChecked(True)
        self.eigen_box = QCheckBox("Eigenvector layers")
        self.new_button = QPushButton("New scribbles layer")
        self.run_button = QPushButton("Segment")
        self.status = QLabel("Paint at least two labels in the scribbles layer.")
        self.status.setWordWrap(True)

        form = QFormLayout()
        form.addRow("image", self.image_box)
        form.addRow("scribbles", self.scribbles_box)
        form.addRow("method", self.method_box)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        for w in (self.live_box, self.eigen_box, self.new_button, self.run_button, self.status):
            layout.addWidget(w)
        layout.addStretch(1)

        self.method_box.currentTextChanged.connect(self._set_method)
        self.scribbles_box.currentIndexChanged.connect(self._watch_scribbles)
        self.image_box.currentIndexChanged.connect(self._edited)
        self.live_box.toggled.connect(self._edited)
        self.new_button.clicked.connect(self.new_scribbles_layer)
        self.run_button.clicked.connect(lambda: self._request(force=True))
        for event in (self.viewer.layers.events.inserted, self.viewer.layers.events.removed,
                      self.viewer.layers.events.moved):
            event.connect(self.reset_choices)
        self.reset_choices()
        model = self.model  # not self: the Python wrapper may be gone when this fires
        self.destroyed.connect(lambda *_: model.close())

    # -- layers ----------------------------------------------------------------------------
    def _layers(self, kind: type) -> list[Any]:
        return [layer for layer in self.viewer.layers if isinstance(layer, kind)
                and layer.name != RESULT_LAYER]

    def reset_choices(self, *_: object) -> None:
        """Refill the layer boxes from the viewer, keeping the current choices if present."""
        for box, kind in ((self.image_box, Image), (self.scribbles_box, Labels)):
            current = box.currentText()
            names = [layer.name for layer in self._layers(kind)
                     if not layer.name.startswith(EIGENVECTOR_LAYER.format(""))]
            box.blockSignals(True)
            box.clear()
            box.addItems(names)
            if current in names:
                box.setCurrentText(current)
            box.blockSignals(False)
        self._watch_scribbles()

    def image_layer(self) -> Image | None:
        name = self.image_box.currentText()
        return self.viewer.layers[name] if name in self.viewer.layers else None

    def scribbles_layer(self) -> Labels | None:
        name = self.scribbles_box.currentText()
        return self.viewer.layers[name] if name in self.viewer.layers else None

    def new_scribbles_layer(self) -> Labels | None:
        """Add an empty Labels layer the size of the chosen image and select it."""
        image = self.image_layer()
        if image is None:
            self.status.setText("Open an image first.")
            return None
        shape = image.data.shape[:2]
        layer = self.viewer.add_labels(np.zeros(shape, np.int32), name="scribbles",
                                       scale=image.scale[:2], translate=image.translate[:2])
        layer.brush_size = max(3, min(shape) // 60)
        layer.mode = "paint"
        layer.selected_label = 1
        self.scribbles_box.setCurrentText(layer.name)
        return layer

    def _watch_scribbles(self, *_: object) -> None:
        layer = self.scribbles_layer()
        # napari hands a plugin a proxy of the viewer: each look-up is a new proxy object of
        # the same layer, so layers are told apart by their unique_id, never by identity.
        if _layer_id(layer) == _layer_id(self._watched):
            return
        if self._watched is not None:
            for event in (self._watched.events.paint, self._watched.events.data,
                          self._watched.events.set_data):
                event.disconnect(self._edited)
        self._watched = layer
        if layer is not None:
            # paint: a finished stroke or fill; data: replaced; set_data: undo/redo refresh.
            for event in (layer.events.paint, layer.events.data, layer.events.set_data):
                event.connect(self._edited)
        self._edited()

    # -- solving ---------------------------------------------------------------------------
    def _set_method(self, name: str) -> None:
        self.model.method = name
        self._edited()

    def _edited(self, *_: object) -> None:
        if self.live_box.isChecked():
            self._timer.start()

    def _request(self, force: bool = False) -> None:
        image, scribbles = self.image_layer(), self.scribbles_layer()
        if image is None or scribbles is None:
            return
        try:
            data = image.data[0] if image.multiscale else image.data
            pixels = as_unit_image(data, tuple(image.contrast_limits), image.rgb)
        except SegappError as exc:
            self.status.setText(str(exc))
            return
        strokes = np.asarray(scribbles.data)
        if strokes.shape != pixels.shape[:2]:
            self.status.setText(f"The scribbles layer is {strokes.shape} but the image is "
                                f"{pixels.shape[:2]}: use 'New scribbles layer'.")
            return
        if len(np.unique(strokes[strokes > 0])) < 2 and not force:
            self.status.setText("Paint at least two labels in the scribbles layer.")
            return
        req = self.model.request(pixels, (image.unique_id, id(data)), strokes, force=force)
        if req is not None:
            self._start(req)

    def _start(self, req: Request) -> None:
        self.status.setText(f"Segmenting with {req.method}…")
        # The worker returns (result, error) instead of raising: napari 0.9.2's task-status
        # hook on ``errored`` is itself broken (a lambda with the wrong arity raises in Qt's
        # event loop), and a failed or cancelled solve is an ordinary outcome here. (A bare
        # exception as return value would be re-raised by superqt's worker.)
        worker = thread_worker(_solve_or_error, start_thread=False)(self.model, req)
        worker.returned.connect(lambda out: self._failed(req, out[1])
                                if out[1] is not None else self._show(req, out[0]))
        worker.finished.connect(lambda: self._finished(req))
        worker.start()

    def _finished(self, req: Request) -> None:
        nxt = self.model.finished(req)
        if nxt is not None:
            self._start(nxt)

    def _failed(self, req: Request, exc: BaseException) -> None:
        if isinstance(exc, Cancelled) or not self.model.is_current(req):
            return
        text = str(exc) if isinstance(exc, SegappError) else f"{type(exc).__name__}: {exc}"
        self.status.setText(f"Not segmented: {text}")

    def _show(self, req: Request, result: Any) -> None:
        if not self.model.is_current(req):
            return
        image = self.image_layer()
        geometry = ({"scale": image.scale[:2], "translate": image.translate[:2]}
                    if image is not None else {})
        labels = result.labels.astype(np.int32)
        # napari selects a layer it adds: the next brush stroke would go into the result
        # (issue 32). The layer being painted stays the selected one, in paint mode if it was.
        painting = self.scribbles_layer()
        mode = getattr(painting, "mode", None)
        if RESULT_LAYER in self.viewer.layers:
            self.viewer.layers[RESULT_LAYER].data = labels
        else:
            self.viewer.add_labels(labels, name=RESULT_LAYER, opacity=0.45, **geometry)
        if self.eigen_box.isChecked():
            self._show_eigenvectors(result.eigenvectors, geometry)
        if painting is not None and painting in self.viewer.layers:
            self.viewer.layers.selection.active = painting
            if mode is not None and painting.mode != mode:
                painting.mode = mode
        self.status.setText(f"{len(result.label_ids)} labels, "
                            f"{result.timings.get('total', 0):.2f} s"
                            f"{status_note(result.diagnostics)} ({result.method})")

    def _show_eigenvectors(self, vectors: np.ndarray, geometry: dict) -> None:
        for j in range(vectors.shape[-1]):
            v = vectors[..., j]
            vmax = float(np.percentile(np.abs(v), 99)) or 1.0
            name = EIGENVECTOR_LAYER.format(j + 1)
            if name in self.viewer.layers:
                layer = self.viewer.layers[name]
                layer.data, layer.contrast_limits = v, (-vmax, vmax)
            else:
                self.viewer.add_image(v, name=name, colormap="PiYG",
                                      contrast_limits=(-vmax, vmax), visible=False, **geometry)
