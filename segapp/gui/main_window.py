"""The main window: wires the annotation model, the canvas, the panels and the worker together.

The window owns no segmentation logic: strokes live in :class:`segapp.annotation.AnnotationModel`,
solves run in :class:`segapp.gui.worker.SegmentationWorker`, file formats are in
:mod:`segapp.gui.files`. Dialogs go through :meth:`MainWindow.ask` and
:meth:`MainWindow.get_path` so tests can answer them.
"""

from __future__ import annotations

import html
import logging
import os
from pathlib import Path
from typing import Any, Callable

import numpy as np
from PySide6.QtCore import QSettings, QStandardPaths, Qt, QThreadPool, QTimer, Signal
from PySide6.QtGui import QAction, QActionGroup, QKeySequence, QUndoStack
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QDockWidget,
    QFileDialog,
    QFrame,
    QHBoxLayout,
    QLabel,
    QMainWindow,
    QMessageBox,
    QProgressBar,
    QSlider,
    QSpinBox,
    QTableWidget,
    QTableWidgetItem,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from .. import io, render
from ..annotation import MAX_LABELS, AnnotationModel, EditRecord, Label
from ..errors import SegappError
from . import files
from .canvas import Canvas
from .commands import EditCommand
from .heatmap_panel import HeatmapPanel
from .icons import app_icon, icon
from .label_panel import LabelPanel
from .qimage import rgb_to_qimage, rgba_to_qimage
from .settings_panel import SettingsPanel
from .worker import DEBOUNCE_MS, SegmentationWorker
from .qtcompat import emit

log = logging.getLogger(__name__)

IMAGE_FILTER = ("Images (*.png *.jpg *.jpeg *.tif *.tiff *.bmp *.gif *.webp *.ppm *.pgm);;"
                "segapp sessions (*.segapp.json);;All files (*)")
MAX_RECENT = 8
AUTOSAVE_MS = 300

ABOUT_HTML = """<h3>segapp</h3>
<p>Interactive image segmentation by constrained spectral clustering.</p>
<p>Paint a few strokes in k label colours; the image is split into k regions by
<b>FAST-GE</b>, a generalized eigenproblem <i>L<sub>G</sub>x = λL<sub>H</sub>x</i> between the
image graph and a graph of must-link / cannot-link constraints from the strokes, solved by
AMG-preconditioned LOBPCG.</p>
<ul>
<li>M. Cucuringu, I. Koutis, S. Chawla, G. Miller, R. Peng. <i>Simple and Scalable Constrained
Clustering: A Generalized Spectral Method.</i> AISTATS 2016.</li>
<li>J. Shi, J. Malik. <i>Normalized Cuts and Image Segmentation.</i> IEEE TPAMI 22(8), 2000
(the unconstrained baseline, method "ncut").</li>
<li>A. V. Knyazev. <i>Toward the Optimal Preconditioned Eigensolver: LOBPCG.</i>
SIAM J. Sci. Comput. 23(2), 2001.</li>
</ul>"""


def default_recovery_dir() -> Path:
    """Per-user folder of the crash-recovery file."""
    base = QStandardPaths.writableLocation(QStandardPaths.StandardLocation.AppDataLocation)
    return Path(base or Path.home() / ".segapp") / "recovery"


class MessageBar(QFrame):
    """A dismissable in-window message line (errors never become dialogs or tracebacks)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("messageBar")
        self.setStyleSheet("#messageBar { background: #fde2e1; border: 1px solid #d55e00; "
                           "border-radius: 3px; } QLabel { color: #5a1a00; }")
        self.label = QLabel(self)
        self.label.setWordWrap(True)
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        close = QToolButton(self)
        close.setText("✕")
        close.setAutoRaise(True)
        close.setToolTip("Dismiss")
        close.clicked.connect(self.hide)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(8, 4, 4, 4)
        layout.addWidget(self.label, 1)
        layout.addWidget(close)
        self.hide()

    def show_message(self, text: str) -> None:
        self.label.setText(text)
        self.show()

    def text(self) -> str:
        return self.label.text() if self.isVisible() else ""


class MainWindow(QMainWindow):
    """The segapp main window.

    Parameters
    ----------
    recovery_dir : path, optional
        Where the crash-recovery session is autosaved; default a per-user data folder.
        ``False`` turns autosave off.
    debounce_ms : int
        Delay between the last edit and the solve.

    Signals
    -------
    segmentationShown(int)
        A segmentation for this annotation revision is now displayed.
    """

    segmentationShown = Signal(int)

    def __init__(self, recovery_dir: str | os.PathLike | None | bool = None,
                 debounce_ms: int = DEBOUNCE_MS) -> None:
        super().__init__()
        self.setWindowIcon(app_icon())
        self.setAcceptDrops(True)
        self.resize(1200, 800)
        self.recovery_dir: Path | None = (
            None if recovery_dir is False else
            Path(recovery_dir) if recovery_dir else default_recovery_dir())  # type: ignore[arg-type]

        self.image: np.ndarray | None = None
        self.image_path: Path | None = None
        self.model: AnnotationModel | None = None
        self.result: Any = None  # the displayed Segmentation
        self.result_revision = -1
        self.undo_stack = QUndoStack(self)

        self.canvas = Canvas(self)
        self.message_bar = MessageBar(self)
        central = QWidget(self)
        v = QVBoxLayout(central)
        v.setContentsMargins(0, 0, 0, 0)
        v.setSpacing(2)
        v.addWidget(self.message_bar)
        v.addWidget(self.canvas, 1)
        self.setCentralWidget(central)

        self.label_panel = LabelPanel(self)
        self.settings_panel = SettingsPanel(self)
        self.heatmap_panel = HeatmapPanel(self)
        self._dock("Labels", self.label_panel, Qt.DockWidgetArea.LeftDockWidgetArea)
        self._dock("Settings", self.settings_panel, Qt.DockWidgetArea.LeftDockWidgetArea)
        self._dock("Eigenvectors", self.heatmap_panel, Qt.DockWidgetArea.RightDockWidgetArea)

        self.worker = SegmentationWorker(self, debounce_ms=debounce_ms)
        self.worker.busy.connect(self._on_busy)
        self.worker.resultReady.connect(self._on_result)
        self.worker.failed.connect(self._on_failed)

        self._autosave_timer = QTimer(self)
        self._autosave_timer.setSingleShot(True)
        self._autosave_timer.setInterval(AUTOSAVE_MS)
        self._autosave_timer.timeout.connect(self.autosave)
        self._autosave_pool = QThreadPool(self)
        self._autosave_pool.setMaxThreadCount(1)  # writes happen in order

        self.actions_by_name: dict[str, QAction] = {}
        self._build_status_bar()
        self._build_actions()
        self._build_menus_and_toolbar()

        self.label_panel.labelSelected.connect(self.select_label)
        self.label_panel.clearLabelRequested.connect(self.clear_label)
        self.settings_panel.settingsChanged.connect(self._on_settings_changed)
        self.heatmap_panel.vectorToggled.connect(self._show_vector)
        self.canvas.brushSizeChanged.connect(self.brush_spin.setValue)
        self.canvas.zoomChanged.connect(lambda z: self.zoom_label.setText(f"{z:.0%}"))
        self.brush_spin.setValue(self.canvas.brush_size)
        self._update_title()

    # ==========================================================================================
    # construction
    # ==========================================================================================
    def _dock(self, title: str, widget: QWidget, area: Qt.DockWidgetArea) -> QDockWidget:
        dock = QDockWidget(title, self)
        dock.setObjectName(f"dock-{title}")
        dock.setWidget(widget)
        self.addDockWidget(area, dock)
        return dock

    def _build_status_bar(self) -> None:
        sb = self.statusBar()
        self.progress = QProgressBar(self)
        self.progress.setRange(0, 0)  # busy indicator
        self.progress.setMaximumWidth(120)
        self.progress.setTextVisible(False)
        self.progress.hide()
        self.time_label = QLabel("", self)
        self.zoom_label = QLabel("", self)
        sb.addPermanentWidget(self.progress)
        sb.addPermanentWidget(self.time_label)
        sb.addPermanentWidget(self.zoom_label)

    def _action(self, name: str, text: str, slot: Callable | None = None,
                shortcut: str | QKeySequence | list | None = None, icon_name: str | None = None,
                checkable: bool = False, checked: bool = False, tip: str = "") -> QAction:
        a = QAction(text, self)
        if icon_name:
            a.setIcon(icon(icon_name))
        if shortcut is not None:
            keys = shortcut if isinstance(shortcut, list) else [shortcut]
            a.setShortcuts([QKeySequence(k) for k in keys])
        if checkable:
            a.setCheckable(True)
            a.setChecked(checked)
        if tip:
            a.setToolTip(tip)
            a.setStatusTip(tip)
        if slot is not None:
            (a.toggled if checkable else a.triggered).connect(slot)
        self.addAction(a)  # shortcuts work even when a menu is hidden
        self.actions_by_name[name] = a
        return a

    def _build_actions(self) -> None:
        A = self._action
        A("open", "&Open…", self.open_dialog, QKeySequence.StandardKey.Open, "open",
          tip="Open an image or a saved session")
        A("save_session", "&Save Session…", self.save_session_dialog,
          QKeySequence.StandardKey.Save, "save", tip="Save image path, strokes and labels")
        A("export_all", "Export &All…", lambda: self.export_dialog(files.EXPORT_KINDS),
          "Ctrl+E", "export", tip="Export label map, masks, overlay and heat maps")
        A("export_labels", "&Label Map…", lambda: self.export_dialog(("labels",)))
        A("export_masks", "Binary &Masks (one per label)…", lambda: self.export_dialog(("masks",)))
        A("export_overlay", "Colour &Overlay…", lambda: self.export_dialog(("overlay",)))
        A("export_heatmaps", "Eigenvector &Heat Maps…", lambda: self.export_dialog(("heatmaps",)))
        A("quit", "&Quit", self.close, QKeySequence.StandardKey.Quit)

        undo = A("undo", "&Undo", self.undo_stack.undo, QKeySequence.StandardKey.Undo, "undo",
                 tip="Undo the last stroke")
        redo = A("redo", "&Redo", self.undo_stack.redo, ["Ctrl+Shift+Z", "Ctrl+Y"], "redo",
                 tip="Redo")
        undo.setEnabled(False)
        redo.setEnabled(False)
        self.undo_stack.canUndoChanged.connect(undo.setEnabled)
        self.undo_stack.canRedoChanged.connect(redo.setEnabled)
        A("clear_label", "Clear Current &Label", lambda: self.clear_label(self.canvas.label or
                                                                            self.label_panel.current()),
          "Delete", "clear", tip="Erase every stroke of the current label")
        A("clear_all", "Clear &All Strokes", self.clear_all, "Ctrl+Delete")

        A("brush", "&Brush", lambda: self.select_label(self.label_panel.current()), "B", "brush",
          checkable=False, tip="Paint with the current label")
        A("eraser", "&Eraser", lambda: self.select_label(0), "E", "eraser",
          tip="Erase strokes")
        A("bigger", "Bigger Brush", lambda: self.canvas.grow_brush(1), "]")
        A("smaller", "Smaller Brush", lambda: self.canvas.grow_brush(-1), "[")
        for i in range(1, MAX_LABELS + 1):
            A(f"label{i}", f"Label {i}", lambda _=False, i=i: self.select_label(i), str(i))

        A("fit", "&Fit to Window", self.canvas.fit_to_window, ["F", "Ctrl+0"], "zoom-fit")
        A("actual", "Actual Size (&1:1)", self.canvas.actual_size, "Ctrl+1", "zoom-original")
        A("zoom_in", "Zoom &In", lambda: self.canvas.zoom_by(1.25), QKeySequence.StandardKey.ZoomIn)
        A("zoom_out", "Zoom &Out", lambda: self.canvas.zoom_by(0.8),
          QKeySequence.StandardKey.ZoomOut)
        A("show_overlay", "Show &Segmentation", lambda on: self.canvas.set_layer_visible(
            "overlay", on), "O", checkable=True, checked=True)
        A("show_strokes", "Show S&trokes", lambda on: self.canvas.set_layer_visible(
            "strokes", on), "S", checkable=True, checked=True)
        A("show_image", "Show &Image", lambda on: self.canvas.set_layer_visible("image", on),
          "I", checkable=True, checked=True)
        A("boundaries", "&Boundaries Only", lambda _on: self._render_overlay(), "D",
          checkable=True, tip="Draw only the region boundaries")
        A("hide_heatmap", "Hide Eigenvector View", lambda: self._show_vector(-1), "Esc")

        A("shortcuts", "&Keyboard Shortcuts", self.show_shortcuts, QKeySequence.StandardKey.HelpContents)
        A("about", "&About segapp", self.show_about)

    def _build_menus_and_toolbar(self) -> None:
        a = self.actions_by_name
        mb = self.menuBar()
        m = mb.addMenu("&File")
        m.addAction(a["open"])
        self.recent_menu = m.addMenu("Open &Recent")
        self.recent_menu.aboutToShow.connect(self._fill_recent_menu)
        samples = m.addMenu("Open Sa&mple")
        try:
            from .. import samples as sample_mod

            for name in sample_mod.list_samples():
                samples.addAction(name, lambda n=name: self.open_path(sample_mod.sample_path(n)))
        except Exception as exc:  # a broken install: the menu just stays empty
            log.warning("no samples: %s", exc)
        m.addAction(a["save_session"])
        m.addSeparator()
        ex = m.addMenu(icon("export"), "&Export")
        for k in ("export_labels", "export_masks", "export_overlay", "export_heatmaps"):
            ex.addAction(a[k])
        ex.addSeparator()
        ex.addAction(a["export_all"])
        m.addSeparator()
        m.addAction(a["quit"])

        m = mb.addMenu("&Edit")
        for k in ("undo", "redo", None, "clear_label", "clear_all"):
            m.addSeparator() if k is None else m.addAction(a[k])

        m = mb.addMenu("&Label")
        for k in ("brush", "eraser", "bigger", "smaller", None):
            m.addSeparator() if k is None else m.addAction(a[k])
        group = QActionGroup(self)
        for i in range(1, MAX_LABELS + 1):
            m.addAction(a[f"label{i}"])
            group.addAction(a[f"label{i}"])
        m.addSeparator()
        m.addAction("Rename / Recolour: use the Labels panel").setEnabled(False)

        m = mb.addMenu("&View")
        for k in ("fit", "actual", "zoom_in", "zoom_out", None, "show_overlay", "show_strokes",
                  "show_image", "boundaries", "hide_heatmap"):
            m.addSeparator() if k is None else m.addAction(a[k])
        m.addSeparator()
        for dock in self.findChildren(QDockWidget):
            m.addAction(dock.toggleViewAction())

        m = mb.addMenu("&Help")
        m.addAction(a["shortcuts"])
        m.addAction(a["about"])

        tb = self.addToolBar("Tools")
        tb.setObjectName("toolbar")
        for k in ("open", "save_session", "export_all", None, "undo", "redo", None, "brush",
                  "eraser"):
            tb.addSeparator() if k is None else tb.addAction(a[k])
        self.brush_spin = QSpinBox(self)
        self.brush_spin.setRange(1, 400)
        self.brush_spin.setSuffix(" px")
        self.brush_spin.setToolTip("Brush diameter in image pixels ([ and ], or Ctrl+wheel)")
        self.brush_spin.valueChanged.connect(self.canvas.set_brush_size)
        tb.addWidget(QLabel(" Size ", self))
        tb.addWidget(self.brush_spin)
        tb.addSeparator()
        self.opacity_slider = QSlider(Qt.Orientation.Horizontal, self)
        self.opacity_slider.setRange(0, 100)
        self.opacity_slider.setValue(50)
        self.opacity_slider.setMaximumWidth(140)
        self.opacity_slider.setToolTip("Opacity of the segmentation overlay")
        self.opacity_slider.valueChanged.connect(
            lambda v: self.canvas.set_overlay_opacity(v / 100.0))
        self.canvas.set_overlay_opacity(0.5)
        tb.addWidget(QLabel(" Opacity ", self))
        tb.addWidget(self.opacity_slider)
        tb.addSeparator()
        for k in ("show_overlay", "show_strokes", "show_image", "boundaries", None, "fit",
                  "actual"):
            tb.addSeparator() if k is None else tb.addAction(a[k])

    # ==========================================================================================
    # dialogs (overridable in tests)
    # ==========================================================================================
    def ask(self, title: str, text: str) -> bool:
        """Yes/No question."""
        answer = QMessageBox.question(self, title, text,
                                      QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No)
        return answer == QMessageBox.StandardButton.Yes

    def get_path(self, title: str, default: str, filters: str, save: bool) -> str | None:
        """File dialog; the app asks about overwriting itself (for multi-file exports too)."""
        if save:
            path, _ = QFileDialog.getSaveFileName(
                self, title, default, filters,
                options=QFileDialog.Option.DontConfirmOverwrite)
        else:
            path, _ = QFileDialog.getOpenFileName(self, title, default, filters)
        return path or None

    def show_error(self, text: str) -> None:
        """Show an error in the window's message bar."""
        log.info("error shown: %s", text)
        self.message_bar.show_message(text)
        self.statusBar().showMessage(text.splitlines()[0] if text else "", 8000)

    def show_info(self, text: str) -> None:
        self.statusBar().showMessage(text, 8000)

    # ==========================================================================================
    # opening images and sessions
    # ==========================================================================================
    def open_dialog(self) -> None:
        start = str(self.image_path.parent) if self.image_path else ""
        path = self.get_path("Open image or session", start, IMAGE_FILTER, save=False)
        if path:
            self.open_path(path)

    def open_path(self, path: str | os.PathLike) -> bool:
        """Open an image or a ``*.segapp.json`` session; errors go to the message bar."""
        p = Path(path)
        if p.name.endswith(files.SESSION_SUFFIX):
            return self.open_session(p)
        try:
            image = io.read_image(p)
        except (SegappError, OSError) as exc:
            self.show_error(f"Cannot open image: {exc}")
            return False
        except MemoryError:
            self.show_error(f"Cannot open image {p}: not enough memory")
            return False
        self._install(image, p)
        self._add_recent(p)
        self.show_info(f"Opened {p.name} ({image.shape[1]}×{image.shape[0]})")
        return True

    def open_session(self, path: str | os.PathLike, record_recent: bool = True) -> bool:
        try:
            data, image = files.load_session(path)
        except (SegappError, OSError) as exc:
            self.show_error(f"Cannot open session: {exc}")
            return False
        if data.settings:
            self.settings_panel.set_values(data.settings)
        self._install(image, data.image_path, data.scribbles, data.labels)
        if record_recent:
            self._add_recent(Path(path))
        self.show_info(f"Opened session {Path(path).name}")
        return True

    def _install(self, image: np.ndarray, path: Path, scribbles: np.ndarray | None = None,
                 labels: list | None = None) -> None:
        """Make ``image`` the current image with a fresh model (and optional strokes)."""
        self.worker.set_image(image)
        self.image, self.image_path = image, Path(path)
        self.model = AnnotationModel(image.shape[:2])
        if labels:
            self.model.set_labels(labels)
        if scribbles is not None:
            self.model.set_scribbles(scribbles)  # loaded strokes are not an undoable step
        self.model.changed.connect(self._on_scribbles_changed)
        self.model.stroke_finished.connect(self._on_stroke_finished)
        self.model.labels_changed.connect(self._on_labels_changed)
        self.undo_stack.clear()
        self.result, self.result_revision = None, -1
        self.canvas.set_image(rgb_to_qimage(render.to_rgb8(image)), self.model)
        self.label_panel.set_model(self.model)
        self.heatmap_panel.set_result(None)
        self.heatmap_panel.shown = -1
        self.message_bar.hide()
        self.time_label.setText("")
        self._update_title()
        self.request_segmentation()

    def _update_title(self) -> None:
        name = self.image_path.name if self.image_path else "no image"
        self.setWindowTitle(f"{name} — segapp")

    # -- recent files ---------------------------------------------------------------------
    def recent_files(self) -> list[str]:
        value = QSettings().value("recentFiles", [])
        if isinstance(value, str):
            value = [value]
        return [str(v) for v in (value or [])]

    def _add_recent(self, path: Path) -> None:
        p = str(Path(path).resolve())
        items = [p] + [r for r in self.recent_files() if r != p]
        QSettings().setValue("recentFiles", items[:MAX_RECENT])

    def _fill_recent_menu(self) -> None:
        self.recent_menu.clear()
        recent = self.recent_files()
        for r in recent:
            self.recent_menu.addAction(r, lambda r=r: self.open_path(r))
        if not recent:
            self.recent_menu.addAction("(none)").setEnabled(False)

    # -- drag and drop ----------------------------------------------------------------------
    def dragEnterEvent(self, event) -> None:  # noqa: N802
        if any(u.isLocalFile() for u in event.mimeData().urls()):
            event.acceptProposedAction()

    def dropEvent(self, event) -> None:  # noqa: N802
        for u in event.mimeData().urls():
            if u.isLocalFile():
                self.open_path(u.toLocalFile())
                event.acceptProposedAction()
                return

    # ==========================================================================================
    # editing
    # ==========================================================================================
    def select_label(self, label: int) -> None:
        """Paint with label 1..9, or 0 for the eraser."""
        self.canvas.set_label(label)
        if label > 0 and self.label_panel.current() != label:
            self.label_panel.select(label)
        mode = "Eraser" if label == 0 else (
            f"Painting {self.model.labels[label].name}" if self.model else f"Label {label}")
        self.show_info(mode)

    def _push(self, record: EditRecord | None) -> None:
        if record is not None and self.model is not None:
            self.undo_stack.push(EditCommand(self.model, record))

    def clear_label(self, label: int) -> None:
        if self.model is not None and label > 0:
            self._push(self.model.clear_label(label))

    def clear_all(self) -> None:
        if self.model is not None:
            self._push(self.model.clear_all())

    def _on_stroke_finished(self, record: EditRecord) -> None:
        self._push(record)
        self.request_segmentation()
        self._autosave_timer.start()

    def _on_scribbles_changed(self, _box: Any) -> None:
        if self.model is not None and not self.model.stroking:  # undo, redo, clear, load
            self.request_segmentation()
            self._autosave_timer.start()

    def _on_labels_changed(self, _label_id: int) -> None:
        self._render_overlay()
        self._autosave_timer.start()

    def _on_settings_changed(self) -> None:
        self.request_segmentation()
        self._autosave_timer.start()

    # ==========================================================================================
    # segmentation
    # ==========================================================================================
    def request_segmentation(self, debounce: bool = True) -> None:
        """Re-segment in the background (a newer request cancels the running one)."""
        if self.model is None:
            return
        if not self.model.can_segment():
            self.worker.cancel()
            self.result, self.result_revision = None, -1
            self.canvas.set_overlay(None)
            self.heatmap_panel.set_result(None)
            self._show_vector(-1)
            self.time_label.setText("")
            n = len(self.model.label_ids_present())
            self.show_info("Paint strokes with at least two labels to segment"
                           + (" (one label so far)" if n == 1 else ""))
            return
        self.worker.request(self.model.scribbles, self.model.revision,
                            self.settings_panel.method_name(), self.settings_panel.options(),
                            debounce=debounce)

    def _on_busy(self, busy: bool) -> None:
        self.progress.setVisible(busy)
        if busy:
            self.time_label.setText("segmenting…")

    def _on_result(self, revision: int, result: Any, seconds: float) -> None:
        if self.model is None or revision != self.model.revision:
            return  # computed for strokes that have changed since: a newer solve is coming
        self.result, self.result_revision = result, revision
        self.message_bar.hide()
        self.statusBar().clearMessage()
        self._render_overlay()
        self.heatmap_panel.set_result(result.eigenvectors, result.eigenvalues)
        shown = self.heatmap_panel.shown
        self._show_vector(shown if 0 <= shown < result.eigenvectors.shape[2] else -1)
        diag = result.diagnostics
        iters = getattr(diag, "iterations", None)
        self.time_label.setText(f"{result.method}: {seconds:.2f} s"
                                + (f", {iters} iterations" if iters is not None else ""))
        emit(self.segmentationShown, revision)

    def _on_failed(self, revision: int, message: str) -> None:
        if self.model is not None and revision == self.model.revision:
            self.time_label.setText("failed")
            self.show_error(f"Segmentation failed: {message}")

    def _render_overlay(self) -> None:
        """Colour the current result into the overlay layer (fill or boundaries)."""
        if self.result is None or self.model is None:
            self.canvas.set_overlay(None)
            return
        labels = np.asarray(self.result.labels)
        lut = np.zeros((MAX_LABELS + 1, 4), dtype=np.uint8)
        for i, lab in self.model.labels.items():
            lut[i] = (*lab.color, 255)
        if self.actions_by_name["boundaries"].isChecked():
            from skimage.segmentation import find_boundaries

            edge = find_boundaries(labels, mode="inner")
            rgba = np.zeros(labels.shape + (4,), dtype=np.uint8)
            rgba[edge] = lut[labels[edge]]
        else:
            rgba = lut[np.clip(labels, 0, MAX_LABELS)]
        self.canvas.set_overlay(rgba_to_qimage(rgba))

    def _show_vector(self, index: int) -> None:
        if index < 0 or self.heatmap_panel.vectors is None:
            self.heatmap_panel.shown = -1
            self.heatmap_panel.list.clearSelection()
            self.canvas.set_heatmap(None)
            return
        self.heatmap_panel.shown = index
        self.canvas.set_heatmap(rgb_to_qimage(self.heatmap_panel.full_size(index)))

    # ==========================================================================================
    # export, sessions, recovery
    # ==========================================================================================
    def export_dialog(self, kinds: tuple[str, ...] | list[str]) -> list[Path]:
        if self.result is None or self.image is None or self.model is None:
            self.show_error("Nothing to export yet: paint strokes with at least two labels "
                            "and wait for the segmentation.")
            return []
        stem = self.image_path.stem if self.image_path else "segmentation"
        default = str((self.image_path.parent if self.image_path else Path.cwd()) / f"{stem}.png")
        base = self.get_path("Export (base name)", default, "PNG images (*.png)", save=True)
        if not base:
            return []
        return self.export_to(base, kinds)

    def export_to(self, base: str | os.PathLike, kinds: tuple[str, ...] | list[str]) -> list[Path]:
        """Write the export files for ``base``; asks before overwriting any existing file."""
        try:
            plan = files.plan_export(
                base, kinds, image=self.image, labels=self.result.labels,
                label_table=self.model.labels, eigenvectors=self.result.eigenvectors,
                alpha=self.opacity_slider.value() / 100.0,
                boundaries=self.actions_by_name["boundaries"].isChecked())
            existing = [it.path for it in plan if it.path.exists()]
            if existing:
                names = "\n".join(p.name for p in existing[:8])
                more = f"\n… and {len(existing) - 8} more" if len(existing) > 8 else ""
                if not self.ask("Overwrite files?",
                                f"These files exist already:\n{names}{more}\n\nOverwrite them?"):
                    return []
            written = files.write_export(plan, overwrite=True)
        except (SegappError, OSError) as exc:
            self.show_error(f"Export failed: {exc}")
            return []
        self.show_info(f"Exported {len(written)} file(s) to {Path(base).parent}")
        return written

    def session_data(self) -> files.SessionData | None:
        if self.model is None or self.image_path is None:
            return None
        labels = [Label(lab.id, lab.name, lab.color) for lab in self.model.labels.values()]
        return files.SessionData(self.image_path, self.model.scribbles.copy(), labels,
                                 self.settings_panel.values())

    def save_session_dialog(self) -> None:
        if self.model is None or self.image_path is None:
            self.show_error("Open an image first.")
            return
        default = str(self.image_path.with_name(self.image_path.stem + files.SESSION_SUFFIX))
        path = self.get_path("Save session", default, "segapp sessions (*.segapp.json)", True)
        if path:
            self.save_session(path)

    def save_session(self, path: str | os.PathLike) -> bool:
        p = Path(path)
        if not p.name.endswith(files.SESSION_SUFFIX):
            p = p.with_name(p.name.removesuffix(".json") + files.SESSION_SUFFIX)
        if p.exists() and not self.ask("Overwrite session?", f"{p.name} exists. Overwrite it?"):
            return False
        try:
            files.save_session(p, self.session_data())
        except (SegappError, OSError) as exc:
            self.show_error(f"Cannot save session: {exc}")
            return False
        self._add_recent(p)
        self.show_info(f"Saved session {p.name}")
        return True

    def autosave(self) -> None:
        """Write the crash-recovery session (called shortly after every change).

        The write (a PNG of the whole label map: ~0.3 s at 12 MP) runs on a one-thread pool so
        painting never stalls; a snapshot of the strokes is taken here, on the GUI thread.
        """
        data = self.session_data()
        if self.recovery_dir is None or data is None:
            return
        folder = self.recovery_dir

        def write() -> None:
            try:
                files.write_recovery(folder, data)
            except (SegappError, OSError) as exc:  # never interrupt painting for this
                log.warning("autosave failed: %s", exc)

        self._autosave_pool.start(write)

    def wait_autosave(self, msecs: int = 5000) -> bool:
        """Block until pending recovery writes are done (shutdown and tests)."""
        return self._autosave_pool.waitForDone(msecs)

    def offer_recovery(self) -> bool:
        """If a recovery file exists (the app did not exit cleanly), offer to restore it."""
        if self.recovery_dir is None:
            return False
        path = files.find_recovery(self.recovery_dir)
        if path is None:
            return False
        if self.ask("Restore previous work?",
                    "segapp did not shut down cleanly last time. Restore the strokes you were "
                    "working on?"):
            if self.open_session(path, record_recent=False):
                return True
        self.wait_autosave()
        files.remove_recovery(self.recovery_dir)
        return False

    def closeEvent(self, event) -> None:  # noqa: N802
        self.worker.cancel()
        self.worker.wait_idle(2000)
        self._autosave_timer.stop()
        self.wait_autosave()  # or a late write would recreate the file removed below
        if self.recovery_dir is not None:
            files.remove_recovery(self.recovery_dir)  # clean exit: nothing to recover
        super().closeEvent(event)

    # ==========================================================================================
    # help
    # ==========================================================================================
    def shortcut_table(self) -> list[tuple[str, str]]:
        """(action, shortcuts) for every action that has a shortcut."""
        rows = []
        for a in self.actions_by_name.values():
            keys = ", ".join(k.toString(QKeySequence.SequenceFormat.NativeText)
                             for k in a.shortcuts())
            if keys:
                rows.append((a.text().replace("&", ""), keys))
        rows += [("Change brush size", "Ctrl+wheel"), ("Zoom", "Wheel"),
                 ("Pan", "Middle-drag or Space+drag"), ("Rename label", "Double-click in Labels")]
        return rows

    def show_shortcuts(self) -> None:
        dlg = QDialog(self)
        dlg.setWindowTitle("Keyboard shortcuts")
        rows = self.shortcut_table()
        table = QTableWidget(len(rows), 2, dlg)
        table.setHorizontalHeaderLabels(["Action", "Shortcut"])
        for r, (name, keys) in enumerate(rows):
            table.setItem(r, 0, QTableWidgetItem(name))
            table.setItem(r, 1, QTableWidgetItem(keys))
        table.resizeColumnsToContents()
        table.horizontalHeader().setStretchLastSection(True)
        table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        box = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, dlg)
        box.rejected.connect(dlg.reject)
        lay = QVBoxLayout(dlg)
        lay.addWidget(table)
        lay.addWidget(box)
        dlg.resize(460, 560)
        self.shortcuts_dialog = dlg
        dlg.open()

    def show_about(self) -> None:
        import segapp

        QMessageBox.about(self, "About segapp",
                          ABOUT_HTML.replace("<h3>segapp</h3>",
                                             f"<h3>segapp {html.escape(segapp.__version__)}</h3>"))
