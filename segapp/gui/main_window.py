# Over 400 lines on purpose: the menu and toolbar table of every action lives here, in one place.
"""The main window: widgets, menus, toolbar and the wiring between them. No logic of its own.

- what is shown and edited: :class:`~segapp.gui.state.AppState` (widgets bind to its fields,
  :mod:`segapp.gui.bind`);
- segmenting and drawing the result: :class:`~segapp.gui.display.Display`;
- files, undo, export, crash recovery: :class:`~segapp.gui.document.Document` (Qt-free; it
  gets the window's dialogs and job runners through :func:`segapp.gui.host.qt_host` and
  speaks back through events);
- the actions and their shortcuts: :mod:`segapp.gui.actions`.

Dialogs go through :meth:`MainWindow.ask`, :meth:`MainWindow.choose` and
:meth:`MainWindow.get_path` (looked up when asked) so tests can answer them.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any, Callable

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QAction, QActionGroup, QKeySequence
from PySide6.QtWidgets import (
    QDockWidget,
    QFileDialog,
    QLabel,
    QMainWindow,
    QMessageBox,
    QSlider,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from . import actions, files, help
from .bind import bind
from .canvas import Canvas
from .display import SOLVE_FAILED, Display
from .document import Document
from .document.folder import AUTOSAVE
from .folder_panel import FolderPanel
from .host import qt_host
from .heatmap_panel import HeatmapPanel
from .icons import app_icon, icon
from .label_panel import LabelPanel
from .message_bar import MessageBar, StatusWidgets
from .settings_panel import SettingsPanel
from .state import MAX_BRUSH, MIN_BRUSH, TOOLS, AppState
from .worker import DEBOUNCE_MS, SegmentationWorker

log = logging.getLogger(__name__)

#: As the window narrows, the side panels give way until the image has this share of its width.
CANVAS_SHARE = 0.5

class MainWindow(QMainWindow):
    """The segapp main window.

    Parameters
    ----------
    recovery_dir : path, optional
        Root of the per-instance recovery journals; default a per-user data folder.
        ``False`` turns crash recovery off.
    debounce_ms : int
        Delay between the last edit and the solve.

    Signals
    -------
    segmentationShown(object tag)
        The segmentation of this request (see :meth:`SegmentationWorker.tag`) is on screen.
    """

    segmentationShown = Signal(object)

    def __init__(self, recovery_dir: str | os.PathLike | None | bool = None,
                 debounce_ms: int = DEBOUNCE_MS) -> None:
        super().__init__()
        self.setWindowIcon(app_icon())
        self.setAcceptDrops(True)
        self.resize(1200, 800)
        self.state = state = AppState()

        self.canvas = Canvas(state, self)
        central = QWidget(self)
        self.message_bar = MessageBar(central)  # floats over the canvas: never moves it
        v = QVBoxLayout(central)
        v.setContentsMargins(0, 0, 0, 0)
        v.setSpacing(2)
        v.addWidget(self.canvas, 1)
        self.setCentralWidget(central)

        self.label_panel = LabelPanel(state, self)
        self.settings_panel = SettingsPanel(state, self, report=self.show_error)
        self.heatmap_panel = HeatmapPanel(state, self)
        self.folder_panel = FolderPanel(self)
        self._dock("Labels", self.label_panel, Qt.DockWidgetArea.LeftDockWidgetArea)
        self._dock("Settings", self.settings_panel, Qt.DockWidgetArea.LeftDockWidgetArea)
        self.folder_dock = self._dock("Folder", self.folder_panel,
                                      Qt.DockWidgetArea.RightDockWidgetArea)
        self._dock("Eigenvectors", self.heatmap_panel, Qt.DockWidgetArea.RightDockWidgetArea)
        self.folder_dock.hide()  # shown when a folder is open
        self._folder_shown = False

        self.worker = SegmentationWorker(self, debounce_ms=debounce_ms)
        self.document = Document(qt_host(self, recovery_dir), state)
        self.document.info.connect(self.show_info)
        self.document.error.connect(self.show_error)
        self.document.settingsLoaded.connect(self.apply_settings)
        self.document.start_journal()
        self.display = Display(state, self.canvas, self.worker, self.document.edit_later, self)
        self.display.shownChanged.connect(self.segmentationShown)
        self.display.shownChanged.connect(self._clear_solve_failure)
        self.display.message.connect(self._on_display_message)
        self.status = StatusWidgets(self)
        # the status bar's parts, by name (tests and scripts read them)
        self.progress, self.time_label = self.status.progress, self.status.time_label
        self.cancel_export_button = self.status.cancel_export_button
        self.cancel_load_button = self.status.cancel_load_button
        self.display.status.connect(self.time_label.setText)
        self.display.details.connect(self.time_label.setToolTip)
        self.worker.busy.connect(self.status.busy)
        self.display.progress.connect(self.status.solve_progress)
        self.cancel_solve_button = self.status.cancel_solve_button
        self.cancel_solve_button.clicked.connect(self.display.cancel_solve)

        self._dock_widths: dict[QDockWidget, int] = {}  # widths the panels gave up
        self.actions_by_name: dict[str, QAction] = {}
        self._build_actions()
        self._build_menus_and_toolbar()
        self._bind()
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

    def _slots(self) -> dict[str, Callable[..., Any]]:
        doc, s = self.document, self.state
        slots: dict[str, Callable[..., Any]] = {
            "open": doc.open_dialog, "import_scribbles": doc.import_dialog,
            "open_folder": doc.open_folder_dialog,
            "previous_image": lambda: doc.go(-1), "next_image": lambda: doc.go(1),
            "mark_done": lambda: doc.mark_done(),
            "accept_suggestion": lambda: doc.accept_suggestion(),
            "dismiss_suggestion": doc.dismiss_suggestion,
            "export_soft": lambda: doc.export_dialog(("soft",)),
            "export_coco": lambda: doc.export_dialog(("labels", "coco")),
            "export_dataset": doc.export_dataset_dialog,
            "load_schema": doc.load_schema_dialog, "save_schema": doc.save_schema_dialog,
            "add_label": self.label_panel.add_label,
            "save_session": lambda: doc.save_session(),
            "save_session_as": lambda: doc.save_session(ask_path=True),
            "export_all": lambda: doc.export_dialog(files.EXPORT_KINDS),
            "export_labels": lambda: doc.export_dialog(("labels",)),
            "export_masks": lambda: doc.export_dialog(("masks",)),
            "export_overlay": lambda: doc.export_dialog(("overlay",)),
            "export_heatmaps": lambda: doc.export_dialog(("heatmaps",)),
            "quit": self.close, "undo": doc.undo, "redo": doc.redo,
            "clear_label": lambda: doc.clear_label(s.label), "clear_all": doc.clear_all,
            "bigger": lambda: s.grow_brush(1), "smaller": lambda: s.grow_brush(-1),
            "fit": self.canvas.fit_to_window, "actual": self.canvas.actual_size,
            "zoom_in": lambda: self.canvas.zoom_by(1.25),
            "zoom_out": lambda: self.canvas.zoom_by(0.8),
            "hide_heatmap": lambda: setattr(s, "heatmap", -1),
            "shortcuts": self.show_shortcuts, "about": self.show_about,
        }
        for tool in TOOLS:
            slots[tool] = lambda _on=False, t=tool: setattr(s, "tool", t)
        for k in range(1, actions.LABEL_KEYS + 1):
            slots[f"label{k}"] = lambda _=False, k=k: self.select_key(k)
        return slots

    def _build_actions(self) -> None:
        slots = self._slots()
        for spec in actions.SPECS:
            a = QAction(spec.text, self)
            if spec.icon:
                a.setIcon(icon(spec.icon))
            if spec.keys:
                a.setShortcuts([QKeySequence(k) for k in spec.keys])
            if spec.tip:
                a.setToolTip(spec.tip)
                a.setStatusTip(spec.tip)
            a.setCheckable(spec.checkable)
            if spec.name in slots:
                a.triggered.connect(slots[spec.name])
            self.addAction(a)  # shortcuts work even when a menu is hidden
            self.actions_by_name[spec.name] = a
        group = QActionGroup(self)  # the tools are exclusive
        for tool in TOOLS:
            group.addAction(self.actions_by_name[tool])

    def _build_menus_and_toolbar(self) -> None:
        a = self.actions_by_name
        specials: dict[str, Callable[[Any], None]] = {
            "@recent": self._add_recent_menu, "@samples": self._add_samples_menu,
            "@export": self._add_export_menu,
            "@docks": lambda m: [m.addAction(d.toggleViewAction())
                                 for d in self.findChildren(QDockWidget)],
        }
        for title, names in actions.MENUS:
            m = self.menuBar().addMenu(title)
            for n in names:
                if n is None:
                    m.addSeparator()
                elif n.startswith("@"):
                    specials[n](m)
                else:
                    m.addAction(a[n])
        tb = self.addToolBar("Tools")
        tb.setObjectName("toolbar")
        self.brush_spin = QSpinBox(self)
        self.brush_spin.setRange(MIN_BRUSH, MAX_BRUSH)
        self.brush_spin.setSuffix(" px")
        self.opacity_slider = QSlider(Qt.Orientation.Horizontal, self)
        self.opacity_slider.setRange(0, 100)
        self.opacity_slider.setMaximumWidth(140)
        self.opacity_slider.setToolTip("Opacity of the segmentation overlay")
        widgets = {"@brush_size": (" Size ", self.brush_spin),
                   "@opacity": (" Opacity ", self.opacity_slider)}
        for n in actions.TOOLBAR:
            if n is None:
                tb.addSeparator()
            elif n in widgets:
                tb.addWidget(QLabel(widgets[n][0], self))
                tb.addWidget(widgets[n][1])
            else:
                tb.addAction(a[n])

    def _add_recent_menu(self, menu: Any) -> None:
        self.recent_menu = menu.addMenu("Open &Recent")
        self.recent_menu.aboutToShow.connect(self._fill_recent_menu)

    def _add_samples_menu(self, menu: Any) -> None:
        from .. import samples

        m = menu.addMenu("Open Sa&mple")
        for name in samples.list_samples():
            m.addAction(name, lambda n=name: self.open_path(samples.sample_path(n)))

    def _add_export_menu(self, menu: Any) -> None:
        ex = menu.addMenu(icon("export"), "&Export")
        for n in actions.EXPORT_MENU:
            ex.addSeparator() if n is None else ex.addAction(self.actions_by_name[n])

    def _fill_recent_menu(self) -> None:
        self.recent_menu.clear()
        recent = self.document.recent_files()
        for r in recent:
            self.recent_menu.addAction(r, lambda r=r: self.open_path(r))
        if not recent:
            self.recent_menu.addAction("(none)").setEnabled(False)

    def _bind(self) -> None:
        """Each widget to one state field; everything else follows the state's events."""
        s, a = self.state, self.actions_by_name
        for name in ("show_overlay", "show_strokes", "show_image", "boundaries", "unsure",
                     "unlabelled_only", "brush_screen"):
            bind(a[name], s, name)
        s.events.tool.connect(lambda t: a[t].setChecked(True))
        a[s.tool].setChecked(True)
        bind(self.brush_spin, s, "brush_size", to_widget=round, to_state=float)
        bind(self.opacity_slider, s, "opacity", to_widget=lambda v: round(v * 100),
             to_state=lambda v: v / 100.0)
        s.events.brush_screen.connect(self._brush_tip)
        self._brush_tip(s.brush_screen)
        # Typing in a box must not keep the keyboard: label keys 1-9 belong to the canvas.
        self.opacity_slider.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.brush_spin.setFocusPolicy(Qt.FocusPolicy.ClickFocus)
        self.brush_spin.setKeyboardTracking(False)
        self.brush_spin.editingFinished.connect(self.canvas.setFocus)
        self.settings_panel.done_editing.connect(self.canvas.setFocus)
        self.canvas.setFocus()

        self.label_panel.clearLabelRequested.connect(self.document.clear_label)
        self.label_panel.message.connect(self.show_info)
        self.canvas.labelPicked.connect(self.select_label)
        self.canvas.message.connect(self.show_info)
        self.folder_panel.openRequested.connect(self.document.open_in_folder)
        self.folder_panel.doneToggled.connect(
            lambda path, done: self.document.set_done(Path(path), done))
        self.folder_panel.step.connect(self.document.go)
        self.document.projectChanged.connect(self._on_project)
        s.events.method.connect(lambda _m: self.document.settings_changed())
        s.events.options.connect(lambda _o: self.document.settings_changed())
        self.settings_panel.load_method()
        self.canvas.zoomChanged.connect(lambda z: self.status.zoom_label.setText(f"{z:.0%}"))
        s.events.image_changed.connect(self._on_image)
        s.events.image_path.connect(lambda _p: self._update_title())
        doc = self.document
        doc.dirtyChanged.connect(self._update_title)
        doc.exporter.progress.connect(self.status.export_progress)
        doc.exporter.progress.connect(
            lambda _d, _t, what: what and self.show_info(f"Exporting {what}…"))
        doc.exporter.finished.connect(lambda _r: self.status.export_done())
        self.cancel_export_button.clicked.connect(doc.exporter.cancel)
        doc.loader.progress.connect(self.status.load_progress)
        # an old message is about the image being replaced: it goes when the next one loads
        doc.loader.progress.connect(lambda _i, n, _t: n and self.message_bar.hide())
        doc.editor.progress.connect(self.status.edit_progress)
        # sessions saved by the person are said; a folder's work written as it goes is not
        # (the title's * goes when it is written)
        doc.saver.progress.connect(lambda _i, n, text: n and not text.startswith(AUTOSAVE)
                                   and self.show_info(f"{text}…"))
        self.cancel_load_button.clicked.connect(doc.loader.cancel)

    def _brush_tip(self, screen: bool) -> None:
        unit = "screen pixels (the same on screen at every zoom)" if screen else "image pixels"
        self.brush_spin.setToolTip(f"Brush diameter in {unit}; [ and ], or Ctrl+wheel")

    def _on_image(self, model: Any) -> None:
        model.stroke_finished.connect(self.document.edit)
        model.labels_changed.connect(self._on_labels_changed)
        self._on_labels_changed(0)
        self.state.history.changed.connect(self._update_undo)
        self._update_undo()
        self.message_bar.hide()
        self.time_label.setText("")
        self._on_project()
        self.canvas.setFocus()

    def _on_labels_changed(self, label_id: int) -> None:
        """Renamed labels everywhere: the Paint menu (keys 1–9 pick the first nine), and the
        status line if it is the current."""
        schema = self.state.strokes.schema
        ids = schema.ids()
        for k in range(1, actions.LABEL_KEYS + 1):
            act = self.actions_by_name[f"label{k}"]
            act.setVisible(k <= len(ids))
            if k <= len(ids):
                act.setText(f"{k}: {schema[ids[k - 1]].name}")
        if label_id == self.state.label and label_id in schema:
            self.show_info(f"Painting {schema.name(label_id)}")

    def _update_undo(self) -> None:
        h = self.state.history
        for name, can, text in (("undo", h.can_undo(), h.undo_text()),
                                ("redo", h.can_redo(), h.redo_text())):
            act = self.actions_by_name[name]
            act.setEnabled(can)
            act.setToolTip(f"{name.capitalize()} {text}".strip())
        self._update_title()

    def _update_title(self) -> None:
        path = self.state.image_path
        name = Path(path).name if path else "no image"
        project = self.document.project
        where = ""
        if project is not None and project.contains(path):
            where = f" ({project.index(Path(path)) + 1}/{len(project.images)} of " \
                    f"{project.folder.name})"
        self.setWindowTitle(f"{name}{where}{' *' if self.document.dirty else ''} — segapp")

    def _on_project(self) -> None:
        """The folder, its images or their states changed."""
        project = self.document.project
        self.folder_panel.show_project(project, self.state.image_path)
        if (project is not None) != self._folder_shown:  # shown with a folder, hidden without
            self._folder_shown = project is not None
            self.folder_dock.setVisible(self._folder_shown)
        self._update_title()

    def apply_settings(self, settings: dict[str, Any]) -> None:
        """Settings from a session or a recovered journal."""
        self.settings_panel.apply(settings)

    def resizeEvent(self, event) -> None:  # noqa: N802 - Qt override
        super().resizeEvent(event)
        self._share_width()

    def _share_width(self) -> None:
        """The image keeps at least :data:`CANVAS_SHARE` of the window's width: as the window
        narrows, the side panels give way (down to their own minimum) before the canvas does
        (it shrank to ~150 px while the panels kept their width, issue 32); as it widens
        again, they get back the width they had."""
        docks = [d for d in self.findChildren(QDockWidget)
                 if d.isVisible() and not d.isFloating()
                 and self.dockWidgetArea(d) in (Qt.DockWidgetArea.LeftDockWidgetArea,
                                                Qt.DockWidgetArea.RightDockWidgetArea)]
        if not docks:
            return
        sides: dict[Any, int] = {}
        for d in docks:  # one width per side (stacked docks share it)
            sides[self.dockWidgetArea(d)] = max(sides.get(self.dockWidgetArea(d), 0), d.width())
        room = self.width() - int(self.width() * CANVAS_SHARE)  # what the panels may have
        wanted = {d: self._dock_widths.get(d, d.width()) for d in docks}
        total = sum(max(wanted[d] for d in docks if self.dockWidgetArea(d) == side)
                    for side in sides)
        scale = min(1.0, room / max(total, 1))
        widths = [max(d.minimumSizeHint().width(), int(wanted[d] * scale)) for d in docks]
        if all(abs(w - d.width()) <= 2 for w, d in zip(widths, docks)):
            return
        for d in docks:
            self._dock_widths.setdefault(d, d.width())  # the width to give back later
        self.resizeDocks(docks, widths, Qt.Orientation.Horizontal)
        if scale >= 1.0:
            for d in docks:  # back at their own width: a later drag of theirs is theirs
                self._dock_widths.pop(d, None)

    # ==========================================================================================
    # dialogs (overridable in tests)
    # ==========================================================================================
    def ask(self, title: str, text: str) -> bool:
        """Yes/No question."""
        answer = QMessageBox.question(self, title, text,
                                      QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No)
        return answer == QMessageBox.StandardButton.Yes

    def choose(self, title: str, text: str, buttons: tuple[str, ...]) -> str:
        """A question with named answers; the last one is what Esc / closing the box means."""
        box = QMessageBox(QMessageBox.Icon.Question, title, text, parent=self)
        roles = [QMessageBox.ButtonRole.AcceptRole, QMessageBox.ButtonRole.DestructiveRole,
                 QMessageBox.ButtonRole.RejectRole]
        made = [box.addButton(b, roles[min(i, 2)]) for i, b in enumerate(buttons)]
        box.setDefaultButton(made[0])
        box.setEscapeButton(made[-1])
        box.exec()
        clicked = box.clickedButton()
        return next((b for b, w in zip(buttons, made) if w is clicked), buttons[-1])

    def get_folder(self, title: str, default: str) -> str | None:
        """Folder dialog."""
        return QFileDialog.getExistingDirectory(self, title, default) or None

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

    def _clear_solve_failure(self, _tag: Any) -> None:
        """An answer is on screen again: a failed solve's line no longer says what is."""
        if self.message_bar.text().startswith(SOLVE_FAILED):
            self.message_bar.hide()

    def _on_display_message(self, text: str) -> None:
        if text.startswith("error: "):
            self.show_error(text[len("error: "):])
        else:
            self.show_info(text)

    # ==========================================================================================
    # opening, editing (thin delegations kept for scripts and tests)
    # ==========================================================================================
    def open_path(self, path: str | os.PathLike) -> bool:
        """Start opening ``path`` in the background (see :meth:`Document.open_path`)."""
        return self.document.open_path(path)

    def offer_recovery(self) -> bool:
        """Offer crashed work back; True if a restore was started."""
        return self.document.offer_recovery()

    def select_label(self, label: int) -> None:
        """Paint with label id ``label`` (the eraser gives way to the brush)."""
        model = self.state.strokes
        if model is not None and label not in model.schema:
            return
        self.state.label = label
        if self.state.tool == "eraser":
            self.state.tool = "brush"
        self.show_info(f"Painting {model.schema.name(label)}" if model else f"Label {label}")

    def select_key(self, k: int) -> None:
        """Key ``k`` (1–9): the k-th label of the schema."""
        model = self.state.strokes
        ids = model.schema.ids() if model is not None else list(range(1, 10))
        if k <= len(ids):
            self.select_label(ids[k - 1])

    @property
    def model(self) -> Any:
        """The strokes of the current image (:class:`~segapp.editing.AnnotationModel`)."""
        return self.state.strokes

    @property
    def result(self) -> Any:
        """The segmentation on screen, or None."""
        return None if self.state.shown is None else self.state.shown.segmentation

    def dragEnterEvent(self, event) -> None:  # noqa: N802
        if any(u.isLocalFile() for u in event.mimeData().urls()):
            event.acceptProposedAction()

    def dropEvent(self, event) -> None:  # noqa: N802
        for u in event.mimeData().urls():
            if u.isLocalFile():
                self.open_path(u.toLocalFile())
                event.acceptProposedAction()
                return

    def closeEvent(self, event) -> None:  # noqa: N802
        if not self.document.close():
            event.ignore()
            return
        self.worker.cancel()
        self.worker.wait_idle(2000)
        self.worker.engine.close()   # the session's background factorization stops too
        self.document.loader.wait_idle(2000)
        self.document.saver.wait_idle(10000)
        self.display.wait_idle(2000)
        super().closeEvent(event)

    # ==========================================================================================
    # help
    # ==========================================================================================
    def shortcut_table(self) -> list[tuple[str, str]]:
        """(action, shortcuts) for every action that has a shortcut, then mouse gestures."""
        rows = []
        for a in self.actions_by_name.values():
            keys = ", ".join(k.toString(QKeySequence.SequenceFormat.PortableText)
                             for k in a.shortcuts())
            if keys:
                rows.append((a.text().replace("&", ""), keys))
        return rows + list(actions.GESTURES)

    def show_shortcuts(self) -> None:
        self.shortcuts_dialog = help.shortcuts_dialog(self, self.shortcut_table())
        self.shortcuts_dialog.open()

    def show_about(self) -> None:
        help.about(self)
