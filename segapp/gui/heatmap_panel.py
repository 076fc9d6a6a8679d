"""Eigenvector heat maps: one thumbnail (with colour bar) per generalized eigenvector.

The panel shows the eigenvectors of :attr:`AppState.shown` with the colour ranges the worker
computed by :func:`segapp.io.render.robust_vmax` (the same range the exported heat maps use) and
binds its selection to :attr:`AppState.heatmap`.
"""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QIcon, QPixmap
from PySide6.QtWidgets import QLabel, QListView, QListWidget, QListWidgetItem, QVBoxLayout, QWidget

from ..io import render
from .qimage import rgb_to_qimage
from . import words
from .state import AppState

THUMB = 150  # thumbnail size (longest side, pixels)


_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def readable(x: float, digits: int = 2) -> str:
    """A number as a person reads it: ``0.25``, ``1.2×10⁻¹¹`` (``digits`` significant)."""
    if not np.isfinite(x):
        return str(x)
    if x == 0 or 1e-3 <= abs(x) < 1e4:
        text = f"{x:.{digits}g}"
        return f"{x:.0f}" if "e" in text else text  # 1234, not 1.2e+03
    mantissa, exponent = f"{x:.{digits - 1}e}".split("e")
    return f"{mantissa}×10{str(int(exponent)).translate(_SUPERSCRIPT)}"


def eigenvalue_text(lam: np.ndarray, j: int) -> str:
    """The tooltip line of eigenvalue ``j``: its value, and its size next to the smallest
    (the values are tiny, ~1e-11, and mean something only relative to each other)."""
    smallest = float(np.min(np.abs(lam))) if lam.size else 0.0
    rel = f" = {abs(lam[j]) / smallest:.3g} × the smallest" if smallest > 0 and j > 0 else ""
    return f"eigenvalue λ{j + 1} = {readable(float(lam[j]), 3)}{rel} (smaller: a cleaner cut)"


def thumbnail(vector: np.ndarray, vmax: float, size: int = THUMB) -> np.ndarray:
    """Strided thumbnail of a vector image as a heat map with a colour bar, uint8 RGB."""
    h, w = vector.shape
    step = max(1, int(np.ceil(max(h, w) / size)))
    small = np.ascontiguousarray(vector[::step, ::step])
    return render.heatmap_with_colorbar(small, vmax=vmax, bar_width=10, gap=4)


class HeatmapPanel(QWidget):
    """Thumbnails of the shown result's eigenvectors; clicking one sets :attr:`AppState.heatmap`
    (clicking the selected one again sets -1: hide)."""

    def __init__(self, state: AppState, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.state = state
        self.list = QListWidget(self)
        self.list.setViewMode(QListView.ViewMode.IconMode)
        self.list.setIconSize(QSize(THUMB + 14, THUMB))
        self.list.setResizeMode(QListView.ResizeMode.Adjust)
        self.list.setMovement(QListView.Movement.Static)
        self.list.setToolTip("The patterns the method split the labels by (its generalized "
                             "eigenvectors; blue below zero, red above). Click one to see it "
                             "full size over the image; click again (or Esc) to hide it.")
        self.list.itemClicked.connect(self._on_clicked)
        self.info = QLabel("No segmentation yet.", self)
        self.info.setWordWrap(True)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.info)
        layout.addWidget(self.list)
        self._shown: object = None  # the Segmentation whose thumbnails are shown
        state.events.shown.connect(self._on_shown)
        state.events.heatmap.connect(self._on_heatmap)

    def _on_shown(self, shown: object) -> None:
        if shown is None or getattr(shown, "segmentation", None) is not self._shown:
            self.set_result(shown)

    def _on_heatmap(self, index: int) -> None:
        if index < 0:
            self.list.clearSelection()
        elif index < self.list.count():
            self.list.setCurrentRow(index)

    def set_result(self, result: object) -> None:
        """Show the eigenvectors of a worker :class:`~segapp.live.Result` (None: clear)."""
        self.list.clear()
        seg = getattr(result, "segmentation", None)
        # the working copy's vectors: a 12 MP result's full-size ones are enlarged only when
        # first read, off the GUI thread, which must not wait for them
        eigenvectors = None if seg is None else result.thumbnail_vectors
        self._shown = seg
        if eigenvectors is None or eigenvectors.ndim != 3 or eigenvectors.shape[2] == 0:
            self.info.setText("Preview: the eigenvectors come with the full result."
                              if getattr(result, "preview", False) else "No segmentation yet.")
            return
        lam = np.asarray(seg.eigenvalues, dtype=float)
        for j in range(eigenvectors.shape[2]):
            v = eigenvectors[:, :, j]
            vmax = result.vmax[j]
            pix = QPixmap.fromImage(rgb_to_qimage(thumbnail(v, vmax)))
            ratio = float(abs(lam[j]) / abs(lam[0])) if j < lam.size and lam[0] else None
            item = QListWidgetItem(QIcon(pix), words.vector_caption(j, ratio))
            item.setData(Qt.ItemDataRole.UserRole, j)
            item.setToolTip(f"A pattern the method found in the photo: the labels are split "
                            f"where its colour changes (blue below zero, red above).\n"
                            f"eigenvector {j + 1}: colour range ±{readable(vmax, 3)}"
                            + (f"\n{eigenvalue_text(lam, j)}" if j < lam.size else ""))
            self.list.addItem(item)
        self.info.setText(f"{eigenvectors.shape[2]} pattern(s) the labels were split by; click "
                          "one to see it full size.")

    def _on_clicked(self, item: QListWidgetItem) -> None:
        j = int(item.data(Qt.ItemDataRole.UserRole))
        self.state.heatmap = -1 if j == self.state.heatmap else j
