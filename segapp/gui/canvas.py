"""The image canvas: image, segmentation overlay, heat map and stroke layers; painting, zoom, pan.

Strokes are painted into the :class:`~segapp.annotation.AnnotationModel`; the canvas observes
the model's ``changed(bbox)`` events and re-colours only that box of an RGBA stroke layer that
shares memory with a QImage, then asks Qt to repaint only that rectangle. That keeps painting
smooth on 12-megapixel images (no full-image conversions per mouse move).
"""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QBrush, QColor, QImage, QPainter, QPen, QPixmap
from PySide6.QtWidgets import (
    QGraphicsEllipseItem,
    QGraphicsItem,
    QGraphicsPixmapItem,
    QGraphicsScene,
    QGraphicsView,
    QStyleOptionGraphicsItem,
    QWidget,
)

from ..annotation import MAX_LABELS, AnnotationModel, BBox
from .qimage import RGBABuffer
from .qtcompat import emit

#: Brush diameters (image pixels) offered by ``[`` / ``]`` and Ctrl+wheel.
MIN_BRUSH, MAX_BRUSH = 1, 400
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


class Canvas(QGraphicsView):
    """Shows an image with its layers and turns mouse drags into model strokes.

    Signals
    -------
    brushSizeChanged(int)
        New brush diameter in image pixels.
    zoomChanged(float)
        New scale (screen pixels per image pixel).
    strokeStarted()
        The user pressed the button to paint.
    """

    brushSizeChanged = Signal(int)
    zoomChanged = Signal(float)
    strokeStarted = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
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
        self.label = 1  # 0 = eraser
        self.brush_size = 12
        self._lut = np.zeros((MAX_LABELS + 1, 4), dtype=np.uint8)
        self._strokes: RGBABuffer | None = None
        self._painting = False
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
        self._cursor_item.setVisible(False)
        for z, item in enumerate((self._image_item, self._overlay_item, self._heat_item)):
            item.setZValue(z)
            item.setTransformationMode(Qt.TransformationMode.FastTransformation)
            self.scene().addItem(item)
        self._heat_item.setVisible(False)
        self._cursor_item.setZValue(10)
        self.scene().addItem(self._cursor_item)

    # -- content ---------------------------------------------------------------------------
    def set_image(self, rgb: QImage, model: AnnotationModel) -> None:
        """Show a new image (QImage) and observe its annotation model."""
        if self.model is not None:
            self.model.changed.disconnect(self._on_model_changed)
            self.model.labels_changed.disconnect(self._on_labels_changed)
        self.model = model
        model.changed.connect(self._on_model_changed)
        model.labels_changed.connect(self._on_labels_changed)
        self._image_item.setPixmap(QPixmap.fromImage(rgb))
        self.set_overlay(None)
        self.set_heatmap(None)
        h, w = model.shape
        if self._stroke_item is not None:
            self.scene().removeItem(self._stroke_item)
        self._strokes = RGBABuffer(h, w)
        self._stroke_item = BufferItem(self._strokes)
        self._stroke_item.setZValue(5)
        self.scene().addItem(self._stroke_item)
        self.scene().setSceneRect(QRectF(0, 0, w, h))
        self._on_labels_changed(0)
        self._auto_fit = True
        self.fit_to_window()

    def set_overlay(self, image: QImage | None) -> None:
        """Segmentation overlay (RGBA QImage the size of the image) or None to remove it."""
        self._overlay_item.setPixmap(QPixmap() if image is None else QPixmap.fromImage(image))

    def set_heatmap(self, image: QImage | None) -> None:
        """Full-size eigenvector heat map over the image, or None to hide it."""
        self._heat_item.setPixmap(QPixmap() if image is None else QPixmap.fromImage(image))
        self._heat_item.setVisible(image is not None)

    @property
    def heatmap_shown(self) -> bool:
        return self._heat_item.isVisible()

    def set_layer_visible(self, layer: str, visible: bool) -> None:
        """Show or hide ``"image"``, ``"overlay"`` or ``"strokes"``."""
        item = {"image": self._image_item, "overlay": self._overlay_item,
                "strokes": self._stroke_item}[layer]
        if item is not None:
            item.setVisible(visible)

    def set_overlay_opacity(self, opacity: float) -> None:
        self._overlay_item.setOpacity(opacity)
        self._heat_item.setOpacity(max(opacity, 0.5))

    def stroke_layer(self) -> np.ndarray | None:
        """The RGBA stroke layer as displayed (for tests)."""
        return None if self._strokes is None else self._strokes.array

    # -- model observation -----------------------------------------------------------------
    def _on_labels_changed(self, _label_id: int) -> None:
        if self.model is None:
            return
        for i, lab in self.model.labels.items():
            self._lut[i] = (*lab.color, 255)
        self._lut[0] = 0
        self._on_model_changed(BBox.full(self.model.shape))
        self._update_cursor_color()

    def _on_model_changed(self, box: BBox) -> None:
        if self.model is None or self._strokes is None or box.empty:
            return
        ys, xs = box.slices
        self._strokes.array[ys, xs] = self._lut[self.model.scribbles[ys, xs]]
        self._stroke_item.update(QRectF(box.x0, box.y0, box.width, box.height))

    # -- tools -----------------------------------------------------------------------------
    def set_label(self, label: int) -> None:
        """Paint with ``label`` (1..9) or erase (0)."""
        self.label = int(label)
        self._update_cursor_color()

    def set_brush_size(self, size: int) -> None:
        size = int(min(MAX_BRUSH, max(MIN_BRUSH, size)))
        if size != self.brush_size:
            self.brush_size = size
            self._place_cursor(self._cursor_item.rect().center())
            emit(self.brushSizeChanged, size)

    def grow_brush(self, steps: int = 1) -> None:
        """Bigger (steps > 0) or smaller brush, by ~15 % per step (at least one pixel)."""
        size = self.brush_size
        for _ in range(abs(steps)):
            delta = max(1, round(size * 0.15))
            size += delta if steps > 0 else -delta
        self.set_brush_size(size)

    def _update_cursor_color(self) -> None:
        pen = self._cursor_item.pen()
        if self.label == 0 or self.model is None:
            pen.setColor(QColor(255, 255, 255))
            pen.setStyle(Qt.PenStyle.DashLine)
        else:
            pen.setColor(QColor(*self.model.labels[self.label].color))
            pen.setStyle(Qt.PenStyle.SolidLine)
        self._cursor_item.setPen(pen)

    def _place_cursor(self, center: QPointF) -> None:
        r = self.brush_size / 2.0
        self._cursor_item.setRect(QRectF(center.x() - r, center.y() - r, 2 * r, 2 * r))

    # -- zoom ------------------------------------------------------------------------------
    @property
    def zoom(self) -> float:
        return float(self.transform().m11())

    def set_zoom(self, scale: float) -> None:
        scale = min(MAX_ZOOM, max(MIN_ZOOM, scale))
        f = scale / self.zoom
        self.scale(f, f)
        emit(self.zoomChanged, self.zoom)

    def zoom_by(self, factor: float) -> None:
        self._auto_fit = False
        self.set_zoom(self.zoom * factor)

    def fit_to_window(self) -> None:
        if self.model is None:
            return
        self.fitInView(self.sceneRect(), Qt.AspectRatioMode.KeepAspectRatio)
        emit(self.zoomChanged, self.zoom)

    def actual_size(self) -> None:
        self._auto_fit = False
        self.set_zoom(1.0)

    def resizeEvent(self, event) -> None:  # noqa: N802 - Qt override
        super().resizeEvent(event)
        if self._auto_fit:  # keep fitting until the user zooms
            self.fit_to_window()

    # -- input -----------------------------------------------------------------------------
    def _image_pos(self, event) -> QPointF:
        return self.mapToScene(event.position().toPoint())

    def wheelEvent(self, event) -> None:  # noqa: N802
        steps = event.angleDelta().y() / 120.0
        if steps == 0:
            return
        if event.modifiers() & Qt.KeyboardModifier.ControlModifier:
            self.grow_brush(1 if steps > 0 else -1)
        else:
            self.zoom_by(ZOOM_STEP ** steps)
        event.accept()

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
            self._painting = True
            emit(self.strokeStarted)
            self.model.begin_stroke(self.label, self.brush_size / 2.0)
            p = self._image_pos(event)
            self.model.extend_stroke([(p.x(), p.y())])
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
        if self._painting and self.model is not None and self.model.stroking:
            self.model.extend_stroke([(p.x(), p.y())])
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
        if self._painting and event.button() == Qt.MouseButton.LeftButton:
            self._painting = False
            if self.model is not None and self.model.stroking:
                p = self._image_pos(event)
                self.model.extend_stroke([(p.x(), p.y())])
                self.model.end_stroke()  # the model announces the record (stroke_finished)
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
