"""Eigenvector heat maps: one thumbnail (with colour bar) per generalized eigenvector."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtGui import QIcon, QPixmap
from PySide6.QtWidgets import QLabel, QListView, QListWidget, QListWidgetItem, QVBoxLayout, QWidget

from .. import render
from .qimage import rgb_to_qimage
from .qtcompat import emit

THUMB = 150  # thumbnail size (longest side, pixels)


def vector_vmax(vector: np.ndarray) -> float:
    """Symmetric colour range of a heat map: the 99th percentile of |v| (robust to spikes)."""
    v = np.abs(vector[np.isfinite(vector)])
    if v.size == 0:
        return 1.0
    step = max(1, v.size // 200_000)  # a sample is plenty for a percentile
    vmax = float(np.percentile(v[::step], 99.0))
    return vmax if vmax > 0 else float(v.max()) or 1.0


def thumbnail(vector: np.ndarray, vmax: float, size: int = THUMB) -> np.ndarray:
    """Strided thumbnail of a vector image as a heat map with a colour bar, uint8 RGB."""
    h, w = vector.shape
    step = max(1, int(np.ceil(max(h, w) / size)))
    small = np.ascontiguousarray(vector[::step, ::step])
    return render.heatmap_with_colorbar(small, vmax=vmax, bar_width=10, gap=4)


class HeatmapPanel(QWidget):
    """Thumbnails of ``Segmentation.eigenvectors``; clicking one asks to show it full size.

    Signals
    -------
    vectorToggled(int)
        Index of the clicked vector, or -1 when the selected one was clicked again (hide).
    """

    vectorToggled = Signal(int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.list = QListWidget(self)
        self.list.setViewMode(QListView.ViewMode.IconMode)
        self.list.setIconSize(QSize(THUMB + 14, THUMB))
        self.list.setResizeMode(QListView.ResizeMode.Adjust)
        self.list.setMovement(QListView.Movement.Static)
        self.list.setToolTip("Generalized eigenvectors (blue < 0 < red). Click one to show it "
                             "full size over the image; click again to hide it.")
        self.list.itemClicked.connect(self._on_clicked)
        self.info = QLabel("No segmentation yet.", self)
        self.info.setWordWrap(True)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.info)
        layout.addWidget(self.list)
        self.vectors: np.ndarray | None = None
        self.vmax: list[float] = []
        self.shown = -1

    def set_result(self, eigenvectors: np.ndarray | None,
                   eigenvalues: np.ndarray | None = None) -> None:
        """Show the eigenvectors ``(H, W, m)`` of a result (None clears the panel)."""
        self.list.clear()
        self.vectors, self.vmax = eigenvectors, []
        if eigenvectors is None or eigenvectors.ndim != 3 or eigenvectors.shape[2] == 0:
            self.info.setText("No segmentation yet.")
            return
        lam = np.asarray(eigenvalues if eigenvalues is not None else [], dtype=float)
        for j in range(eigenvectors.shape[2]):
            v = eigenvectors[:, :, j]
            vmax = vector_vmax(v)
            self.vmax.append(vmax)
            pix = QPixmap.fromImage(rgb_to_qimage(thumbnail(v, vmax)))
            text = f"v{j + 1}" + (f"  λ={lam[j]:.2g}" if j < lam.size else "")
            item = QListWidgetItem(QIcon(pix), text)
            item.setData(Qt.ItemDataRole.UserRole, j)
            item.setToolTip(f"eigenvector {j + 1}: colour range ±{vmax:.3g}")
            self.list.addItem(item)
        self.info.setText(f"{eigenvectors.shape[2]} eigenvector(s); click to view full size.")

    def full_size(self, index: int) -> np.ndarray:
        """Full-resolution heat map (uint8 RGB) of vector ``index``, same colour range."""
        assert self.vectors is not None
        return render.heatmap(self.vectors[:, :, index], vmax=self.vmax[index])

    def _on_clicked(self, item: QListWidgetItem) -> None:
        j = int(item.data(Qt.ItemDataRole.UserRole))
        self.shown = -1 if j == self.shown else j
        emit(self.vectorToggled, self.shown)
