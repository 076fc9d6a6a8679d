"""The image canvas: image, segmentation overlay, heat map and stroke layers; painting, zoom, pan.

The canvas is a view of :class:`~segapp.gui.state.AppState`: it reads the tool, label, brush
and view flags from it and follows their events; it keeps only view things (zoom, pan, the
brush cursor). A press, drag and release go to the current tool of the table
:data:`segapp.editing.TOOLS` (brush, eraser, fill, picker), in image coordinates, which paints
into the :class:`~segapp.editing.AnnotationModel`; the canvas observes
the model's ``changed(bbox)`` events and re-colours only that box of an RGBA stroke layer that
shares memory with a QImage, then asks Qt to repaint only that rectangle. That keeps painting
smooth on 12-megapixel images (no full-image conversions per mouse move). The box of a big
edit (a fill, a clear, their undo) is coloured off the GUI thread instead
(:mod:`segapp.gui.edits`) and only copied in (:meth:`Canvas.prepared_layer`).
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

import numpy as np
from PySide6.QtCore import QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QBrush, QColor, QImage, QPainter, QPen, QPixmap, QTransform
from PySide6.QtWidgets import (
    QGraphicsEllipseItem,
    QGraphicsItem,
    QGraphicsPixmapItem,
    QGraphicsScene,
    QGraphicsView,
    QLabel,
    QStyleOptionGraphicsItem,
    QWidget,
)

from ..editing import TOOLS, AnnotationModel, BBox, ToolContext
from .edits import Prepared
from .loader import View, make_view
from .qimage import RGBABuffer, label_lut
from .qtcompat import emit
from .state import AppState

HINT = "Pick a label (keys 1–9), then drag on the image"
#: After the first label: what is still needed before anything is segmented.
NEXT_HINT = ("Now pick a second label ({key}) and paint another region: the image is "
             "segmented once two labels are painted")
#: The fill and picker tools' ring: this many screen pixels across, at every zoom.
FILL_RING_PX = 14


def hint_text(labels_present: list[int], order: list[int] | None = None) -> str:
    """The canvas's hint for the labels painted so far ("" once two are); ``order``: the
    schema's label ids (key k picks the k-th)."""
    if not labels_present:
        return HINT
    if len(labels_present) == 1:
        order = order or list(range(1, 10))
        k = next(k for k, i in enumerate(order, 1) if i not in labels_present)
        return NEXT_HINT.format(key=f"key {k}" if k <= 9 else "in the Labels panel")
    return ""
ZOOM_STEP = 1.25
MIN_ZOOM, MAX_ZOOM = 0.01, 64.0


class BufferItem(QGraphicsItem):
    """Draws a :class:`RGBABuffer`; repaints only the exposed rectangle."""

    def __init__(self, buffer: RGBABuffer) -> None:
        super().__init__()
        self.buffer = buffer
        # exposedRect is only filled in with this flag; without it each update paints it all.
        self.setFlag(QGraphicsItem.GraphicsItemFlag.ItemUsesExtendedStyleOption, True)

    def boundingRect(self) -> QRectF:
        h, w = self.buffer.shape
        return QRectF(0, 0, w, h)

    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem,
              widget: QWidget | None = None) -> None:
        r = option.exposedRect.intersected(self.boundingRect()).toAlignedRect()
        if not r.isEmpty():
            painter.drawImage(r, self.buffer.image, r)


def _pixmap(image: QImage | None) -> QPixmap:
    """A layer's pixmap sharing ``image``'s pixels. Without ``NoOpaqueDetection`` Qt scans
    every pixel of a premultiplied image for alpha and, all opaque (every pixel labelled: the
    layer's opacity is the item's), converts it to RGB32: 45 ms of the GUI thread per answer
    at 12 MP; with it, the pixmap is made at once."""
    if image is None:
        return QPixmap()
    return QPixmap.fromImage(image, Qt.ImageConversionFlag.NoOpaqueDetection)


class Canvas(QGraphicsView):
    """Shows an image with its layers and turns mouse drags into model strokes.

    Signals
    -------
    zoomChanged(float)
        New scale (screen pixels per image pixel).
    fillRequested(int x, int y)
        The fill tool was clicked on image pixel (x, y); the tool is the brush again after.
    labelPicked(int label)
        The picker (or Ctrl+click) chose the label under the mouse.
    message(str)
        Something for the status bar (a locked label, what was picked).
    """

    zoomChanged = Signal(float)
    fillRequested = Signal(int, int)
    labelPicked = Signal(int)
    message = Signal(str)

    def __init__(self, state: AppState, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.state = state
        self.setScene(QGraphicsScene(self))
        self.setBackgroundBrush(QColor(48, 48, 48))
        self.setTransformationAnchor(QGraphicsView.ViewportAnchor.AnchorUnderMouse)
        self.setResizeAnchor(QGraphicsView.ViewportAnchor.AnchorViewCenter)
        self.setViewportUpdateMode(QGraphicsView.ViewportUpdateMode.MinimalViewportUpdate)
        self.setMouseTracking(True)
        self.viewport().setMouseTracking(True)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.viewport().setCursor(Qt.CursorShape.CrossCursor)

        self.model: AnnotationModel | None = None
        self._lut = label_lut({})
        self._strokes: RGBABuffer | None = None
        self._prepared: Prepared | None = None  # see prepared_layer
        self._tool = None  # the tool that took the press, while the button is down
        self._context: ToolContext | None = None
        self._panning = False
        self._space_down = False
        self._pan_anchor = QPointF()
        self._auto_fit = True

        self._image_item = QGraphicsPixmapItem()
        self._overlay_item = QGraphicsPixmapItem()
        self._heat_item = QGraphicsPixmapItem()
        self._stroke_item: BufferItem | None = None
        self._cursor_item = QGraphicsEllipseItem()
        pen = QPen(QColor(255, 255, 255))
        pen.setCosmetic(True)  # one screen pixel wide at every zoom
        self._cursor_item.setPen(pen)
        self._cursor_item.setBrush(QBrush(Qt.BrushStyle.NoBrush))
        # a dark ring under the coloured one: the brush shows on light and dark photos alike
        self._cursor_outline = QGraphicsEllipseItem(self._cursor_item)
        outline = QPen(QColor(0, 0, 0, 220), 3)
        outline.setCosmetic(True)
        self._cursor_outline.setPen(outline)
        self._cursor_outline.setFlag(
            QGraphicsEllipseItem.GraphicsItemFlag.ItemStacksBehindParent)
        self._cursor_item.setVisible(False)
        for z, item in enumerate((self._image_item, self._overlay_item, self._heat_item)):
            item.setZValue(z)
            item.setTransformationMode(Qt.TransformationMode.FastTransformation)
            self.scene().addItem(item)
        self._heat_item.setVisible(False)
        self._cursor_item.setZValue(10)
        self.scene().addItem(self._cursor_item)
        self.hint = QLabel(HINT, self.viewport())
        self.hint.setStyleSheet("background: rgba(0, 0, 0, 150); color: white; padding: 6px; "
                                "border-radius: 4px;")
        self.hint.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents)
        self.hint.setWordWrap(True)
        self.hint.hide()

        ev = state.events
        ev.image_changed.connect(self._on_image)
        state.watch(self._update_cursor, "label", "tool", "brush_size", "brush_screen")
        state.watch(self._apply_opacity, "opacity", "boundaries")
        ev.show_image.connect(self._image_item.setVisible)
        ev.show_overlay.connect(
            lambda on: self._overlay_item.setVisible(on and not self.heatmap_shown))
        ev.show_strokes.connect(lambda on: self._stroke_item and self._stroke_item.setVisible(on))

    # -- content ---------------------------------------------------------------------------
    def _on_image(self, model: AnnotationModel) -> None:
        view = self.state.view  # made by the loader, off the GUI thread
        if view is None:  # an image installed directly (scripts): ~0.4 s at 12 MP
            view = make_view(self.state.image, model)
        self.set_image(view, model)

    def set_image(self, view: View, model: AnnotationModel) -> None:
        """Show a new image and its strokes (:class:`~segapp.gui.loader.View`) and observe
        its annotation model."""
        if self.model is not None:
            self.model.changed.disconnect(self._on_model_changed)
            self.model.labels_changed.disconnect(self._on_labels_changed)
        self.model = model
        model.changed.connect(self._on_model_changed)
        model.labels_changed.connect(self._on_labels_changed)
        self._image_item.setPixmap(QPixmap.fromImage(view.picture))  # RGB32: no conversion
        self.set_overlay(None)
        self.set_heatmap(None)
        h, w = model.shape
        if self._stroke_item is not None:
            self.scene().removeItem(self._stroke_item)
        self._strokes = view.strokes
        self._stroke_item = BufferItem(self._strokes)
        self._stroke_item.setZValue(5)
        self._stroke_item.setVisible(self.state.show_strokes)
        self.scene().addItem(self._stroke_item)
        self.scene().setSceneRect(QRectF(0, 0, w, h))
        self._lut = self._layer_lut()  # the view's strokes are coloured with these
        if self.state.hidden_labels():  # the loader coloured every label
            self._strokes.paint_labels(model.scribbles, self._lut)
        self._update_cursor()
        self._auto_fit = True
        self.fit_to_window()
        # the labels painted come from the history's counts (no scan of the stroke map)
        self.state.history.changed.connect(self._update_hint)
        self._update_hint()

    def set_overlay(self, image: QImage | None) -> None:
        """Segmentation colour layer (RGBA QImage) or None to remove it.

        The layer is the size of the image, or of a working copy's answer (smaller: drawn
        stretched over the image, nearest neighbour, as its labels are brought to full
        size). It is drawn at :meth:`AppState.overlay_opacity`, the opacity the exported
        overlay uses.
        """
        pixmap = _pixmap(image)
        self._overlay_item.setPixmap(pixmap)
        shape = None if self.model is None else self.model.shape
        if pixmap.isNull() or shape is None or (pixmap.height(), pixmap.width()) == shape:
            self._overlay_item.setTransform(QTransform())
        else:
            self._overlay_item.setTransform(QTransform.fromScale(
                shape[1] / pixmap.width(), shape[0] / pixmap.height()))
        self._apply_opacity()

    @property
    def overlay_shown(self) -> bool:
        return not self._overlay_item.pixmap().isNull()

    def set_heatmap(self, image: QImage | None) -> None:
        """Full-size eigenvector heat map over the image, or None to hide it.

        It is drawn opaque and the segmentation colours are hidden under it: blended with them
        (and the photo) its blue-white-red scale could not be read. The strokes stay on top."""
        self._heat_item.setPixmap(_pixmap(image))
        self._heat_item.setVisible(image is not None)
        self._overlay_item.setVisible(image is None and self.state.show_overlay)

    @property
    def heatmap_shown(self) -> bool:
        return self._heat_item.isVisible()

    def _apply_opacity(self) -> None:
        self._overlay_item.setOpacity(self.state.overlay_opacity())
        self._heat_item.setOpacity(1.0)

    def stroke_layer(self) -> np.ndarray | None:
        """The RGBA stroke layer as displayed (for tests)."""
        return None if self._strokes is None else self._strokes.array

    def layer_lut(self) -> np.ndarray:
        """The label colours of the stroke layer (:func:`~segapp.gui.qimage.label_lut`)."""
        return self._lut.copy()

    # -- model observation -----------------------------------------------------------------
    def _layer_lut(self) -> np.ndarray:
        """The stroke layer's colours: hidden labels transparent."""
        lut = label_lut({} if self.model is None else self.model.colors())
        lut[list(self.state.hidden_labels())] = 0
        return lut

    def _on_labels_changed(self, _label_id: int) -> None:
        if self.model is None:
            return
        lut = self._layer_lut()
        if not np.array_equal(lut, self._lut):
            self._lut = lut
            self._on_model_changed(BBox.full(self.model.shape))
        self._update_cursor()

    @contextmanager
    def prepared_layer(self, edit: Prepared) -> Iterator[None]:
        """While the model applies ``edit``, copy its stroke-layer pixels in instead of
        colouring its box here (unless the label colours changed since it was coloured)."""
        self._prepared = edit
        try:
            yield
        finally:
            self._prepared = None

    def _on_model_changed(self, box: BBox) -> None:
        if self.model is None or self._strokes is None or box.empty:
            return
        ready = self._prepared
        if ready is not None and ready.bbox == box and np.array_equal(ready.lut, self._lut):
            self._strokes.pixels[box.slices] = ready.pixels
        else:
            self._strokes.paint_labels(self.model.scribbles, self._lut, box)
        self._stroke_item.update(QRectF(box.x0, box.y0, box.width, box.height))
        if self.hint.isVisible() or not self.model.stroking:
            self._update_hint()

    def _update_hint(self) -> None:
        """The one-line hint shows what to do next while fewer than two labels are painted
        (hidden during a stroke)."""
        text = "" if self.model is None or self.state.history is None \
            else hint_text(self.state.history.label_ids_present(), self.model.schema.ids())
        show = bool(text) and not self.model.stroking
        self.hint.setVisible(show)
        if show:
            self.hint.setText(text)
            self.hint.setMaximumWidth(max(80, self.viewport().width() - 24))
            self.hint.adjustSize()
            self.hint.move((self.viewport().width() - self.hint.width()) // 2, 12)

    # -- brush cursor ------------------------------------------------------------------------
    def brush_radius(self) -> float:
        """Brush radius in image pixels now (screen-pixel brushes follow the zoom)."""
        return self.state.brush_radius(self.zoom)

    def _update_cursor(self) -> None:
        pen = self._cursor_item.pen()
        label = self.state.paint_label()
        if label == 0 or self.model is None or label not in self.model.schema:
            pen.setColor(QColor(255, 255, 255))
            pen.setStyle(Qt.PenStyle.DashLine)
        else:
            pen.setColor(QColor(*self.model.labels[label].color))
            pen.setStyle(Qt.PenStyle.SolidLine)
        self._cursor_item.setPen(pen)
        self._place_cursor(self._cursor_item.rect().center())

    def _place_cursor(self, center: QPointF) -> None:
        point = TOOLS[self.state.tool].cursor == "point"
        r = FILL_RING_PX / 2 / self.zoom if point else self.brush_radius()
        rect = QRectF(center.x() - r, center.y() - r, 2 * r, 2 * r)
        self._cursor_item.setRect(rect)
        self._cursor_outline.setRect(rect)

    # -- zoom ------------------------------------------------------------------------------
    @property
    def zoom(self) -> float:
        return float(self.transform().m11())

    def set_zoom(self, scale: float) -> None:
        scale = min(MAX_ZOOM, max(MIN_ZOOM, scale))
        f = scale / self.zoom
        self.scale(f, f)
        self._zoomed()

    def _zoomed(self) -> None:
        self._place_cursor(self._cursor_item.rect().center())
        emit(self.zoomChanged, self.zoom)

    def zoom_by(self, factor: float) -> None:
        self._auto_fit = False
        self.set_zoom(self.zoom * factor)

    def fit_to_window(self) -> None:
        """The whole image in the window; it stays fitted as the window is resized, until
        the person zooms."""
        if self.model is None:
            return
        self._auto_fit = True
        self.fitInView(self.sceneRect(), Qt.AspectRatioMode.KeepAspectRatio)
        self._zoomed()

    def _fit_scale(self, width: int, height: int) -> float:
        """The zoom at which the whole image fits a viewport of this size."""
        h, w = self.model.shape
        return min(width / w, height / h)

    def actual_size(self) -> None:
        self._auto_fit = False
        self.set_zoom(1.0)

    def resizeEvent(self, event) -> None:  # noqa: N802 - Qt override
        super().resizeEvent(event)
        old = event.oldSize()
        # Refit while the person has not zoomed, and whenever the whole image was in view
        # (zoomed out further than fitting): a window made larger must not leave the image
        # small in an empty canvas (issue 32).
        whole = self.model is not None and old.width() > 0 and old.height() > 0 and \
            self.zoom <= self._fit_scale(old.width(), old.height()) * 1.001
        if self._auto_fit or whole:
            self.fit_to_window()
        if self.hint.isVisible():
            self._update_hint()

    # -- input -----------------------------------------------------------------------------
    def _image_pos(self, event) -> QPointF:
        return self.mapToScene(event.position().toPoint())

    def wheelEvent(self, event) -> None:  # noqa: N802
        steps = event.angleDelta().y() / 120.0
        if steps == 0:
            return
        if event.modifiers() & Qt.KeyboardModifier.ControlModifier:
            self.state.grow_brush(1 if steps > 0 else -1)
        else:
            self.zoom_by(ZOOM_STEP ** steps)
        event.accept()

    def _tool_context(self) -> ToolContext:
        shown = self.state.shown
        return ToolContext(
            model=self.model, label=self.state.paint_label(), radius=self.brush_radius(),
            unlabelled_only=self.state.unlabelled_only,
            result=None if shown is None or shown.preview else shown.labels,
            fill=lambda x, y: emit(self.fillRequested, x, y),
            choose=lambda label: emit(self.labelPicked, label),
            say=lambda text: emit(self.message, text))

    def mousePressEvent(self, event) -> None:  # noqa: N802
        button = event.button()
        if button == Qt.MouseButton.MiddleButton or (
                button == Qt.MouseButton.LeftButton and self._space_down):
            self._panning = True
            self._pan_anchor = event.position()
            self.viewport().setCursor(Qt.CursorShape.ClosedHandCursor)
            event.accept()
            return
        if button == Qt.MouseButton.LeftButton and self.model is not None:
            p = self._image_pos(event)
            # Ctrl+click picks the label under the mouse, whatever the tool (as in GIMP)
            ctrl = bool(event.modifiers() & Qt.KeyboardModifier.ControlModifier)
            name = "picker" if ctrl else self.state.tool
            tool = TOOLS[name]
            self._context = self._tool_context()
            self._tool = tool if tool.press(self._context, p.x(), p.y()) else None
            if tool.one_shot and self.state.tool == name:
                self.state.tool = "brush"  # one click, one fill (or pick): issue 23
            event.accept()
            return
        super().mousePressEvent(event)

    def mouseMoveEvent(self, event) -> None:  # noqa: N802
        p = self._image_pos(event)
        self._place_cursor(p)
        self._cursor_item.setVisible(not self._panning and not self._space_down)
        if self._panning:
            d = event.position() - self._pan_anchor
            self._pan_anchor = event.position()
            self.horizontalScrollBar().setValue(self.horizontalScrollBar().value() - int(d.x()))
            self.verticalScrollBar().setValue(self.verticalScrollBar().value() - int(d.y()))
            event.accept()
            return
        if self._tool is not None:
            self._tool.move(self._context, p.x(), p.y())
            event.accept()
            return
        super().mouseMoveEvent(event)

    def mouseReleaseEvent(self, event) -> None:  # noqa: N802
        if self._panning and event.button() in (Qt.MouseButton.MiddleButton,
                                                Qt.MouseButton.LeftButton):
            self._panning = False
            self.viewport().setCursor(Qt.CursorShape.OpenHandCursor if self._space_down
                                      else Qt.CursorShape.CrossCursor)
            event.accept()
            return
        if self._tool is not None and event.button() == Qt.MouseButton.LeftButton:
            tool, self._tool = self._tool, None
            p = self._image_pos(event)
            tool.release(self._context, p.x(), p.y())
            event.accept()
            return
        super().mouseReleaseEvent(event)

    def leaveEvent(self, event) -> None:  # noqa: N802
        self._cursor_item.setVisible(False)
        super().leaveEvent(event)

    def keyPressEvent(self, event) -> None:  # noqa: N802
        if event.key() == Qt.Key.Key_Space and not event.isAutoRepeat():
            self._space_down = True
            self._cursor_item.setVisible(False)
            self.viewport().setCursor(Qt.CursorShape.OpenHandCursor)
            event.accept()
            return
        super().keyPressEvent(event)

    def keyReleaseEvent(self, event) -> None:  # noqa: N802
        if event.key() == Qt.Key.Key_Space and not event.isAutoRepeat():
            self._space_down = False
            self._panning = False
            self.viewport().setCursor(Qt.CursorShape.CrossCursor)
            event.accept()
            return
        super().keyReleaseEvent(event)
