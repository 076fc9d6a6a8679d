# Over 400 lines on purpose: one object owns the unsaved-work mark, the journal and the loader,
# which open, save, export and recovery all consult; split, each would reach into the others.
"""The work on the current image: opening, editing, saving, exporting and crash recovery.

Never lose work:

- every completed change goes to this instance's journal as it happens
  (:mod:`segapp.gui.journal`, :mod:`segapp.gui.recovery`), so it survives a kill;
- opening another image, closing and quitting ask Save / Discard / Cancel when strokes are
  unsaved; the journal is removed only after a save or an explicit discard;
- at start, work left by instances that are gone is offered back (never that of a running
  instance); when its image has moved, the user is asked where it is now, and the work is kept
  until it is restored or discarded;
- exports run in the background (:mod:`segapp.gui.exporter`) and say which files were not
  written;
- files are opened and saved, and fills and clears computed, in the background too
  (:mod:`segapp.gui.loader`); a file read while strokes were painted asks again before they
  go.

Dialogs go through the window's :meth:`ask`, :meth:`choose` and :meth:`get_path`, which tests
replace with scripted answers.

(Over 400 lines on purpose: every path by which work could be lost — open, save, close,
export, recovery — is in this one file, to be read and reviewed together.)
"""

from __future__ import annotations

import itertools
import logging
import os
from pathlib import Path
from typing import Any, Callable

import numpy as np
from PySide6.QtCore import QObject, QSettings, QStandardPaths, QTimer, Signal

from .. import io
from ..strokes.annotation import AnnotationModel, EditRecord, Label
from ..errors import SegappError
from . import edits, files
from .exporter import ExportReport, Exporter
from .journal import Journal, Recovered, history_frames
from .loader import Loaded, Loader, load_image, load_session
from .qtcompat import emit
from .recovery import Instance, Orphan, orphans
from .state import AppState

log = logging.getLogger(__name__)

IMAGE_FILTER = ("Images (*.png *.jpg *.jpeg *.tif *.tiff *.bmp *.gif *.webp *.ppm *.pgm);;"
                "segapp sessions (*.segapp.json);;All files (*)")
SCRIBBLE_FILTER = "Scribble or label PNGs (*.png);;All files (*)"
SESSION_FILTER = "segapp sessions (*.segapp.json)"
MAX_RECENT = 8
FOLDER_KINDS = ("open", "import", "session", "export")
#: An edit prepared off the GUI thread is prepared again (the strokes changed while it was)
#: at most this many times in all; then it is applied on the GUI thread.
MAX_TRIES = 3


def default_recovery_dir() -> Path:
    """Per-user folder of the recovery journals."""
    base = QStandardPaths.writableLocation(QStandardPaths.StandardLocation.AppDataLocation)
    return Path(base or Path.home() / ".segapp") / "recovery"


def documents_dir() -> Path:
    base = QStandardPaths.writableLocation(QStandardPaths.StandardLocation.DocumentsLocation)
    return Path(base) if base and Path(base).is_dir() else Path.home()


def _is_bundled(path: Path) -> bool:
    from ..samples import samples_dir

    try:
        return Path(path).resolve().is_relative_to(samples_dir().resolve())
    except (OSError, ValueError):
        return False


class Document(QObject):
    """Files and recovery for one window; see the module docstring.

    Parameters
    ----------
    window : MainWindow
        For dialogs (``ask``, ``choose``, ``get_path``) and messages (``show_error``,
        ``show_info``).
    state : AppState
    recovery_dir : path, None or False
        Root of the recovery folders; None: the per-user default; False: no journal.
    """

    #: The saved / unsaved state may have changed (title bar).
    dirtyChanged = Signal()

    _export_ids = itertools.count(1)

    def __init__(self, window: Any, state: AppState,
                 recovery_dir: str | os.PathLike | None | bool = None) -> None:
        super().__init__(window)
        self.window, self.state = window, state
        self.root: Path | None = (None if recovery_dir is False else
                                  Path(recovery_dir) if recovery_dir else default_recovery_dir())
        self.instance: Instance | None = None
        if self.root is not None:
            try:
                self.instance = Instance(self.root)
            except OSError as exc:  # still usable, without crash protection: say so
                window.show_error(f"Crash recovery is off: {exc}")
        self.session_path: Path | None = None
        self._saved_key: int | None = None
        self._labels_dirty = False
        self.loader = Loader(self)  # opening files
        self.saver = Loader(self, supersede=False)  # saving sessions (never cancelled by a load)
        self.editor = Loader(self, supersede=False)  # whole-map edits, in order
        self.exporter = Exporter(self)
        self.exporter.finished.connect(self._on_export_finished)
        self._export_id = 0
        # the label painted with is restored after a crash too
        state.events.label.connect(lambda label: self._journal("current", label))

    # ==========================================================================================
    # state of the work
    # ==========================================================================================
    @property
    def dirty(self) -> bool:
        """Strokes or label names/colours changed since the image was opened or saved."""
        return self.state.history is not None and (
            self.state.stroke_key() != self._saved_key or self._labels_dirty)

    def _mark_saved(self) -> None:
        self._saved_key = self.state.stroke_key()
        self._labels_dirty = False
        emit(self.dirtyChanged)

    def _labels(self) -> list[Label]:
        model = self.state.strokes
        return [] if model is None else [Label(lab.id, lab.name, tuple(lab.color))
                                         for lab in model.labels.values()]

    def _settings(self) -> dict[str, Any]:
        return {"method": self.state.method, **self.state.option_dict()}

    # -- journal ---------------------------------------------------------------------------
    def _journal_start(self, restored: tuple[np.ndarray, bytes] | None = None) -> None:
        """A new journal: its base is the strokes now, or for a restore ``(origin, history)``:
        the strokes before the restored undo history and its frames
        (:func:`~segapp.gui.journal.history_frames`), so that a second crash keeps it too."""
        if self.instance is None or self.state.strokes is None:
            return
        base, history = restored or (self.state.strokes.scribbles, b"")
        try:
            self.instance.journal.start(self.state.image_path, base, self._labels(),
                                        self._settings(), saved=not self.dirty,
                                        label=self.state.label, history=history)
        except OSError as exc:
            self.window.show_error(f"Crash recovery is off: cannot write its journal: {exc}")
            self.instance = None

    def _journal(self, method: str, *args: Any, **kwargs: Any) -> None:
        if self.instance is None:
            return
        try:
            getattr(self.instance.journal, method)(*args, **kwargs)
            if self.instance.journal.needs_compaction():
                self._journal_start()
        except OSError as exc:
            self.window.show_error(f"Crash recovery is off: cannot write its journal: {exc}")
            self.instance = None

    # ==========================================================================================
    # edits (every one journalled as it completes)
    # ==========================================================================================
    def edit(self, record: EditRecord | None, ready: edits.Prepared | None = None) -> None:
        """An edit already applied to the strokes (a stroke, fill, clear or import);
        ``ready``: its counts and journal frame, prepared off the GUI thread."""
        if record is None or self.state.history is None:
            return
        self.state.history.push(record, None if ready is None else ready.change)
        self._journal("edit", record.bbox, record.new,
                      packed=None if ready is None else ready.packed)

    def undo(self) -> None:
        self._step_back_or_forth(undo=True)

    def redo(self) -> None:
        self._step_back_or_forth(undo=False)

    def _step_back_or_forth(self, undo: bool) -> None:
        """Undo or redo: at once if it is small and no edit is waiting; else in turn after the
        edits asked for before it, its stroke layer coloured off the GUI thread."""
        history = self.state.history
        if history is None:
            return
        record = history.next_undo() if undo else history.next_redo()
        if not self.editor.running and not edits.is_big(record):
            self._replay(history.undo() if undo else history.redo(), undo)
            return
        model, what = self.state.strokes, "Undoing" if undo else "Redoing"
        tries = itertools.count(1)

        def start(first: bool = False) -> None:
            record = history.next_undo() if undo else history.next_redo()
            if self.state.strokes is not model or not edits.is_big(record):  # e.g. a stroke now
                if self.state.strokes is model:
                    self._replay(history.undo() if undo else history.redo(), undo)
                return
            lut, change = self._canvas.layer_lut(), history.change_of(record)
            self.editor.start(what, lambda _step: edits.prepare(record, lut, undo, change), done,
                              lambda msg: self.window.show_error(f"{what} failed: {msg}"),
                              first=first)

        def done(ready: edits.Prepared) -> None:
            if self.state.strokes is not model:
                return  # another image is open now
            if model.stroking:  # never in the middle of a stroke: right after it
                QTimer.singleShot(20, lambda: done(ready))
                return
            if ready.record is not (history.next_undo() if undo else history.next_redo()) \
                    and next(tries) < MAX_TRIES:  # a stroke came first: prepare the new step
                start(first=True)
                return
            with self._canvas.prepared_layer(ready):
                record = history.undo() if undo else history.redo()
            if record is ready.record:
                self._journal("undo" if undo else "redo", record.bbox, packed=ready.packed)
            else:
                self._replay(record, undo)

        if self.editor.running:
            self.editor.start(what, lambda _step: None, lambda _none: start(first=True),
                              lambda _msg: None)  # its turn comes after the edits before it
        else:
            start()

    def _replay(self, record: EditRecord | None, undo: bool) -> None:
        """Journal an undo (or redo) of ``record`` just made (the journal rebuilds the undo
        history from these, for a restore)."""
        if record is not None:
            self._journal("undo" if undo else "redo", record.bbox,
                          self.state.strokes.scribbles[record.bbox.slices])

    @property
    def _canvas(self) -> Any:
        return self.window.canvas

    def clear_label(self, label: int) -> None:
        self.edit_later("Clearing a label", lambda model, _: model.clear_label(label))

    def clear_all(self) -> None:
        self.edit_later("Clearing all strokes", lambda model, _: model.clear_all())

    def edit_later(self, what: str, change: Callable[[AnnotationModel, Any], EditRecord | None],
                   prepare: Callable[[], Any] = lambda: None) -> None:
        """A whole-map edit (clear, fill): made off the GUI thread, applied as one step.

        ``data = prepare()`` and ``change(model, data)`` run in the background on a copy of the
        strokes (a 12 MP fill or clear takes 0.1-0.5 s), and so does the colouring of the
        stroke layer in the edit's box (:mod:`segapp.gui.edits`); the GUI thread then applies
        the record by copying. Edits (and undo / redo steps asked for meanwhile) are applied
        in the order they were asked for, each prepared from the strokes the one before left.
        """
        self._edit_off_thread(what, change, prepare, self.editor,
                              lambda msg: self.window.show_error(f"{what} failed: {msg}"))

    def _edit_off_thread(self, what: str,
                         change: Callable[[AnnotationModel, Any], EditRecord | None],
                         prepare: Callable[[], Any], runner: Loader,
                         failed: Callable[[str], None], then: Callable[[], None] = lambda: None,
                         cancelled: Callable[[], None] = lambda: None) -> None:
        model = self.state.strokes
        if model is None:
            return
        tries = itertools.count(1)

        def work(step: Any) -> tuple[int, Any, edits.Prepared | None]:
            step(0, 2, what)
            data = prepare()
            step(1, 2, what)
            # Read before the copy: a stroke painted while it is copied shows as a newer
            # revision when the result is applied, and the edit is then prepared again.
            revision = model.revision
            scratch = AnnotationModel(model.shape, list(model.labels.values()))
            scratch.scribbles = model.scribbles.copy()
            record = change(scratch, data)
            return revision, data, None if record is None else edits.prepare(record, lut)

        def done(result: tuple[int, Any, edits.Prepared | None]) -> None:
            revision, data, ready = result
            if self.state.strokes is not model:
                return  # another image is open now
            if model.stroking:  # never in the middle of a stroke: right after it
                QTimer.singleShot(20, lambda: done(result))
                return
            if model.revision == revision:
                if ready is not None:
                    with self._canvas.prepared_layer(ready):
                        ready.record.redo(model)
                else:  # e.g. a fill of a segment whose pixels are all painted: say so
                    self.window.show_info(f"{what}: nothing to change")
                self.edit(None if ready is None else ready.record, ready)
            elif next(tries) < MAX_TRIES:  # the strokes changed meanwhile: prepare it again
                runner.start(what, work, done, failed, cancelled, first=True)
                return
            else:  # they keep changing: change them here
                self.edit(change(model, data))
            then()

        lut = self._canvas.layer_lut()
        runner.start(what, work, done, failed, cancelled)

    def wait_edits(self, msecs: int = 120_000) -> bool:
        """Run the event loop until the whole-map edits and undo / redo steps asked for are
        applied (scripts, tests); False on timeout."""
        return self.editor.wait_loaded(msecs)

    def _on_labels_changed(self, _label_id: int) -> None:
        self._labels_dirty = True
        emit(self.dirtyChanged)
        self._journal("labels", self._labels())

    def settings_changed(self) -> None:
        self._journal("settings", self._settings())

    # ==========================================================================================
    # folders
    # ==========================================================================================
    def folder(self, kind: str) -> Path:
        """Start folder of a file dialog: the last one used for ``kind``, else the image's
        folder, else (bundled samples, no image) the user's documents folder."""
        remembered = QSettings().value(f"folders/{kind}", "")
        if remembered and Path(str(remembered)).is_dir():
            return Path(str(remembered))
        path = self.state.image_path
        if path is not None and not _is_bundled(path) and Path(path).parent.is_dir():
            return Path(path).parent
        return documents_dir()

    def remember_folder(self, kind: str, path: str | os.PathLike) -> None:
        QSettings().setValue(f"folders/{kind}", str(Path(path).resolve().parent))

    def recent_files(self) -> list[str]:
        value = QSettings().value("recentFiles", [])
        if isinstance(value, str):
            value = [value]
        return [str(v) for v in (value or [])]

    def _add_recent(self, path: Path) -> None:
        p = str(Path(path).resolve())
        items = [p] + [r for r in self.recent_files() if r != p]
        QSettings().setValue("recentFiles", items[:MAX_RECENT])

    # ==========================================================================================
    # unsaved work
    # ==========================================================================================
    def confirm_discard(self, doing: str) -> bool:
        """Ask Save / Discard / Cancel if there is unsaved work; True if we may go on."""
        self.editor.wait_loaded()  # a fill or clear asked for is part of the work
        self.saver.wait_loaded()  # a save being written may be all there is to wait for
        if not self.dirty:
            return True
        name = self.state.image_path.name if self.state.image_path else "the image"
        answer = self.window.choose(
            "Unsaved strokes",
            f"The strokes on {name} are not saved. Save them before {doing}?",
            ("Save", "Discard", "Cancel"))
        if answer == "Save":
            return self.save_session(wait=True)
        return answer == "Discard"

    def close(self) -> bool:
        """The window closes: ask about unsaved work; remove the journal only when no work is
        left unsaved (saved, discarded or none). Returns False to keep the window open."""
        if self.exporter.running:
            if not self.window.ask("Export running", "An export is still being written. "
                                   "Stop it and quit? (Files not written yet are not made.)"):
                return False
            self.exporter.cancel()
            self.exporter.wait_idle()
        if not self.confirm_discard("quitting"):
            return False
        self.loader.cancel()
        if self.instance is not None:
            self.instance.remove()
            self.instance = None
        return True

    # ==========================================================================================
    # opening
    # ==========================================================================================
    def open_dialog(self) -> None:
        path = self.window.get_path("Open image or session", str(self.folder("open")),
                                    IMAGE_FILTER, save=False)
        if path:
            self.remember_folder("open", path)
            self.open_path(path)

    def _work_mark(self) -> tuple:
        """What the unsaved-work question was answered for."""
        return id(self.state.strokes), self.state.stroke_key(), self._labels_dirty

    def _may_replace(self, mark: tuple, name: str) -> bool:
        """A load has finished: the current work may go if it is what the user agreed to drop
        (asked again when strokes were painted while the file was read)."""
        return self._work_mark() == mark or self.confirm_discard(f"opening {name}")

    def open_path(self, path: str | os.PathLike, *, ask: bool = True) -> bool:
        """Start opening an image or a ``*.segapp.json`` session in the background.

        Returns False if the user kept the current work at the unsaved-strokes question;
        otherwise the file is read off the GUI thread (:attr:`loader`: progress, cancel) and
        shown when ready; errors go to the message bar.
        """
        p = Path(path)
        if ask and not self.confirm_discard(f"opening {p.name}"):
            return False
        mark = self._work_mark()
        if p.name.endswith(files.SESSION_SUFFIX):
            return self._open_session(p, mark)

        def done(loaded: Loaded) -> None:
            if not self._may_replace(mark, p.name):
                return
            self.session_path = None
            self._install(loaded)
            self._add_recent(p)
            h, w = loaded.image.shape[:2]
            self.window.show_info(f"Opened {p.name} ({w}×{h})")

        self.loader.start(f"Opening {p.name}", lambda step: load_image(p, step), done,
                          lambda msg: self.window.show_error(f"Cannot open image: {msg}"),
                          lambda: self.window.show_info(f"Opening {p.name} cancelled"))
        return True

    def open_session(self, path: str | os.PathLike) -> bool:
        """Start opening a saved session (see :meth:`open_path`)."""
        return self.open_path(path, ask=False)

    def _open_session(self, p: Path, mark: tuple) -> bool:
        def done(result: tuple[files.SessionData, Loaded]) -> None:
            data, loaded = result
            if not self._may_replace(mark, p.name):
                return
            self.session_path = p
            self._install(loaded, data.settings)
            self._add_recent(p)
            self.window.show_info(f"Opened session {p.name}")

        self.loader.start(f"Opening {p.name}", lambda step: load_session(p, step), done,
                          lambda msg: self.window.show_error(f"Cannot open session: {msg}"),
                          lambda: self.window.show_info(f"Opening {p.name} cancelled"))
        return True

    def wait_loaded(self, msecs: int = 120_000) -> bool:
        """Run the event loop until the file being opened is shown or has failed (scripts and
        tests); True if an image is shown and no load is running."""
        return self.loader.wait_loaded(msecs) and self.state.strokes is not None

    def install(self, image: np.ndarray, path: Path, scribbles: np.ndarray | None = None,
                labels: list | None = None, settings: dict[str, Any] | None = None,
                saved: bool = True) -> None:
        """Make ``image`` the current image with its strokes, here on the GUI thread (scripts;
        the app opens files with :meth:`open_path`, which prepares all this off it)."""
        model = AnnotationModel(image.shape[:2])
        if labels:
            model.set_labels(labels)
        if scribbles is not None:
            model.set_scribbles(scribbles)  # loaded strokes are not an undoable step
        self._install(Loaded(Path(path), image, model, None), settings, saved)

    def _install(self, loaded: Loaded, settings: dict[str, Any] | None = None,
                 saved: bool = True, restored: tuple[np.ndarray, bytes] | None = None) -> None:
        """Show a loaded image with its strokes; start a new journal (``restored``: see
        :meth:`_journal_start`)."""
        if settings:
            self.window.apply_settings(settings)
        model = loaded.model
        self.state.set_image(loaded.image, loaded.path, model, loaded.view, loaded.counts)
        model.labels_changed.connect(self._on_labels_changed)
        if saved:
            self._mark_saved()
        else:
            self._saved_key, self._labels_dirty = None, True
            emit(self.dirtyChanged)
        self._journal_start(restored)

    def import_dialog(self) -> None:
        if self.state.strokes is None:
            self.window.show_error("Open an image first.")
            return
        path = self.window.get_path("Import scribbles or labels", str(self.folder("import")),
                                    SCRIBBLE_FILTER, save=False)
        if path:
            self.remember_folder("import", path)
            self.import_scribbles(path)

    def import_scribbles(self, path: str | os.PathLike, how: str | None = None) -> bool:
        """Start importing a scribble / label PNG, read as the CLI reads it, in the background;
        the import is one undoable step. False if nothing was started.

        ``how``: "Merge" (its painted pixels are laid over the current strokes, as strokes
        painted now: with *Paint Unlabelled Pixels Only* they go only where nothing is painted)
        or "Replace" (it becomes the strokes); None asks when there are strokes to keep.
        """
        model = self.state.strokes
        if model is None:
            self.window.show_error("Open an image first.")
            return False
        if self.loader.running:
            self.window.show_error(f"{self.loader.what} is not finished yet; import the "
                                   "strokes when it is.")
            return False
        if how not in (None, "Merge", "Replace"):
            raise ValueError(f"how must be 'Merge', 'Replace' or None, got {how!r}")
        p = Path(path)
        how = how or self._merge_or_replace(p)
        if how == "Cancel":
            return False
        only = self.state.unlabelled_only

        def change(m: AnnotationModel, new: np.ndarray) -> EditRecord | None:
            if how == "Merge":
                return m.merge_scribbles(new, only, text=f"import {p.name} (merged)")
            return m.set_scribbles(new, text=f"import {p.name}")

        def then() -> None:
            ids = self.state.history.label_ids_present()  # kept per edit: no 12 MP count
            merged = " (merged)" if how == "Merge" else ""
            self.window.show_info(f"Imported {p.name}{merged}: labels {', '.join(map(str, ids))}")

        self._edit_off_thread(
            f"Importing {p.name}", change, lambda: io.read_scribbles(p, model.shape),
            self.loader, lambda msg: self.window.show_error(f"Cannot import scribbles: {msg}"),
            then, lambda: self.window.show_info(f"Import of {p.name} cancelled"))
        return True

    def _merge_or_replace(self, p: Path) -> str:
        """Ask whether an import joins the strokes or replaces them (it used to replace them
        without a word); with nothing painted the two are the same and nothing is asked."""
        if not self.state.history.label_ids_present():
            return "Replace"
        overlap = ("pixels you painted keep their label" if self.state.unlabelled_only
                   else "where both are painted, the imported label wins")
        return self.window.choose(
            "Import strokes",
            f"Merge the strokes of {p.name} into your strokes ({overlap}), or replace your "
            "strokes by them? Either is one undo step.", ("Merge", "Replace", "Cancel"))

    # ==========================================================================================
    # saving
    # ==========================================================================================
    def save_session(self, path: str | os.PathLike | None = None, ask_path: bool = False, *,
                     wait: bool = False) -> bool:
        """Save to ``path``, the session's file, or (first time / Save As) a chosen file.

        The files are written in the background (a 12 MP label PNG takes ~0.45 s); the strokes
        as they are now count as saved when it is done. Returns False if nothing was started
        (no image, the dialog was cancelled); with ``wait`` the event loop runs until the
        files are written (the unsaved-work question) and the return value says whether they
        were.
        """
        if self.state.strokes is None or self.state.image_path is None:
            self.window.show_error("Open an image first.")
            return False
        if path is None and (ask_path or self.session_path is None):
            image = Path(self.state.image_path)
            default = self.folder("session") / (image.stem + files.SESSION_SUFFIX)
            path = self.window.get_path("Save session", str(default), SESSION_FILTER, save=True)
            if not path:
                return False
            self.remember_folder("session", path)
            p = Path(path)
            if not p.name.endswith(files.SESSION_SUFFIX):
                p = p.with_name(p.name.removesuffix(".json") + files.SESSION_SUFFIX)
            if p.exists() and not self.window.ask("Overwrite session?",
                                                  f"{p.name} exists. Overwrite it?"):
                return False
        else:
            p = Path(path or self.session_path)
        labels, key, model = self._labels(), self.state.stroke_key(), self.state.strokes
        data = files.SessionData(Path(self.state.image_path), model.scribbles.astype(np.uint8),
                                 labels, self._settings())
        outcome: list[bool] = []

        def done(_written: Path) -> None:
            outcome.append(True)
            if self.state.strokes is not model:
                return  # another image is open now
            self.session_path = p
            self._saved_key, self._labels_dirty = key, self._labels() != labels
            emit(self.dirtyChanged)
            if not self.dirty:  # edits made while writing are not in the files
                self._journal("saved")
            self._add_recent(p)
            self.window.show_info(f"Saved session {p.name}")

        def failed(message: str) -> None:
            outcome.append(False)
            self.window.show_error(f"Cannot save session: {message}")

        self.saver.start(f"Saving {p.name}", lambda step: files.save_session(p, data), done,
                         failed)
        if wait:
            self.saver.wait_loaded()
            return bool(outcome and outcome[0])
        return True

    # ==========================================================================================
    # export
    # ==========================================================================================
    def export_dialog(self, kinds: tuple[str, ...] | list[str]) -> None:
        if self.state.shown is None or self.state.image is None:
            self.window.show_error("Nothing to export yet: paint strokes with at least two "
                                   "labels and wait for the segmentation.")
            return
        stem = Path(self.state.image_path).stem if self.state.image_path else "segmentation"
        default = self.folder("export") / f"{stem}.png"
        base = self.window.get_path("Export (base name)", str(default), "PNG images (*.png)",
                                    save=True)
        if base:
            self.remember_folder("export", base)
            self.export_to(base, kinds)

    def export_to(self, base: str | os.PathLike, kinds: tuple[str, ...] | list[str]) -> bool:
        """Start writing the export files for ``base`` in the background (asks before
        overwriting); ``exporter.finished`` reports. False if nothing was started."""
        shown = self.state.shown
        if shown is None or self.state.strokes is None:
            return False
        if self.exporter.running:
            self.window.show_error("An export is already running.")
            return False
        try:
            plan = files.plan_export(
                base, kinds, image=self.state.image, labels=shown.labels,
                label_table={i: Label(lab.id, lab.name, tuple(lab.color))
                             for i, lab in self.state.strokes.labels.items()},
                eigenvectors=shown.segmentation.eigenvectors, vmax=shown.result.vmax,
                alpha=self.state.opacity, boundaries=self.state.boundaries,
                label_ids=shown.segmentation.label_ids)
        except SegappError as exc:
            self.window.show_error(f"Export failed: {exc}")
            return False
        existing = [it.path for it in plan if it.path.exists()]
        if existing:
            names = "\n".join(p.name for p in existing[:8])
            more = f"\n… and {len(existing) - 8} more" if len(existing) > 8 else ""
            if not self.window.ask("Overwrite files?",
                                   f"These files exist already:\n{names}{more}\n\nOverwrite them?"):
                return False
        self._export_id = next(self._export_ids)
        self._journal("export_begin", self._export_id, [str(it.path) for it in plan])
        ident, journal = self._export_id, (self.instance.journal if self.instance else None)

        def written(path: Path) -> None:  # export thread: one write() call, as the file lands
            if journal is not None:
                try:
                    journal.export_file(ident, str(path))
                except OSError:
                    pass
        self.exporter.start(plan, written)
        return True

    def _on_export_finished(self, report: ExportReport) -> None:
        self._journal("export_end", self._export_id)
        if report.missing:
            self.window.show_error(report.message())
        else:
            self.window.show_info(report.message())

    # ==========================================================================================
    # recovery
    # ==========================================================================================
    def offer_recovery(self) -> bool:
        """Offer the work of instances that are gone; True if a restore was started here
        (the image is read in the background, see :meth:`wait_loaded`)."""
        if self.root is None:
            return False
        restored = False
        missing: list[str] = []
        for orphan in reversed(orphans(self.root)):  # newest first
            missing += orphan.clean_exports()
            rec = orphan.recovered
            if rec is None or not rec.has_work():
                orphan.remove()
                continue
            if restored:
                orphan.release()  # one at a time: offered again at the next start
                continue
            restored = self._offer(orphan, rec)
        if missing:
            text = ("An export was interrupted when segapp stopped; not written: "
                    + ", ".join(Path(m).name for m in missing[:8])
                    + (f" and {len(missing) - 8} more" if len(missing) > 8 else ""))
            if self.loader.running:  # after the restore, which clears the message bar

                def later() -> None:
                    self.loader.idle.disconnect(later)
                    self.window.show_error(text)
                self.loader.idle.connect(later)
            else:
                self.window.show_error(text)
        return restored

    def _offer(self, orphan: Orphan, rec: Recovered) -> bool:
        answer = self.window.choose(
            "Restore previous work?",
            f"segapp did not shut down cleanly while you worked on {rec.image_path.name} "
            f"(last change {orphan.last_change():%Y-%m-%d %H:%M}); its strokes were not saved: "
            f"{rec.summary()}. Restore them with their undo history?",
            ("Restore", "Discard", "Later"))
        if answer == "Discard":
            orphan.remove()
            return False
        if answer != "Restore":
            orphan.release()
            return False
        image_path = rec.image_path
        while not image_path.is_file():
            found = self.window.get_path(
                f"Where is {image_path.name} now? (it was in {image_path.parent})",
                str(self.folder("open")), IMAGE_FILTER, save=False)
            if not found:
                orphan.release()
                self.window.show_error(f"{image_path.name} was not found; your strokes are "
                                       "kept and offered again at the next start.")
                return False
            image_path = Path(found)
        mark = self._work_mark()
        kept = "your strokes are kept and offered again at the next start"

        def done(result: tuple[Loaded, Recovered, list[np.ndarray], np.ndarray, bytes,
                               str]) -> None:
            loaded, full, changes, origin, frames, summary = result
            if not self._may_replace(mark, image_path.name):
                orphan.release()
                return
            self._install(loaded, full.settings, saved=False, restored=(origin, frames))
            self.state.history.adopt(full.steps, full.applied, changes)
            if full.label is not None:
                self.state.label = full.label
            if self.instance is not None:  # our journal holds the work now: the old one may go
                orphan.remove()
            else:
                orphan.release()
            undo, redo = full.applied, len(full.steps) - full.applied
            label = self.state.strokes.labels[self.state.label].name
            self.window.show_info(f"Restored your strokes on {image_path.name}: {summary}; "
                                  f"{undo} undo and {redo} redo steps; painting {label}")

        def failed(message: str) -> None:
            orphan.release()
            self.window.show_error(f"Cannot restore your strokes on {image_path.name}: "
                                   f"{message}; {kept}.")

        def cancelled() -> None:
            orphan.release()
            self.window.show_info(f"Restore cancelled; {kept}.")

        self.loader.start(f"Restoring your strokes on {image_path.name}",
                          lambda step: _restore(orphan, rec, image_path, step),
                          done, failed, cancelled)
        return True


def _restore(orphan: Orphan, offered: Recovered, image_path: Path, step: Any
             ) -> tuple[Loaded, Recovered, list[np.ndarray], np.ndarray, bytes, str]:
    """Everything a restore needs, made in the loader's thread: the journal read again with
    its undo history, the image and strokes, each step's count change, the new journal's
    base (the strokes before the history) and history frames, and what was restored."""
    full = Journal.read(orphan.journal_path, history=True)
    if full is None or not np.array_equal(full.scribbles, offered.scribbles):
        full = offered  # cannot happen while we hold its lock; then restore what was offered
    loaded = load_image(image_path, step, scribbles=full.scribbles, labels=full.labels)
    changes = [edits.count_change(r) for r in full.steps]
    return (loaded, full, changes, full.origin(), history_frames(full.steps, full.applied),
            full.summary())
