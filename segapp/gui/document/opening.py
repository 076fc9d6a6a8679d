"""Opening an image or a saved session: read off the GUI thread, shown when ready.

A file read while strokes were painted asks again before they go (:meth:`Opening._may_replace`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ...strokes.annotation import AnnotationModel
from .. import files
from .folders import IMAGE_FILTER
from .saving import Saving


@dataclass
class Loaded:
    """An image ready to be installed: everything made off the GUI thread."""

    path: Path
    image: np.ndarray
    model: AnnotationModel
    view: Any  # segapp.gui.loader.View; None: the canvas makes it (images installed by scripts)
    counts: np.ndarray | None = None  # pixels per label id (segapp.gui.state.label_counts)


class Opening(Saving):
    """Opening files (asking first about unsaved work) and installing what was read."""

    def open_dialog(self) -> None:
        path = self.dialog.get_path("Open image or session", str(self.folder("open")),
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

        read = self.host.read_image

        def done(loaded: Loaded) -> None:
            if not self._may_replace(mark, p.name):
                return
            self.session_path = None
            self._install(loaded)
            self._add_recent(p)
            h, w = loaded.image.shape[:2]
            self.info.emit(f"Opened {p.name} ({w}×{h})")

        self.loader.start(f"Opening {p.name}", lambda step: read(p, step), done,
                          lambda msg: self.error.emit(f"Cannot open image: {msg}"),
                          lambda: self.info.emit(f"Opening {p.name} cancelled"))
        return True

    def open_session(self, path: str | os.PathLike) -> bool:
        """Start opening a saved session (see :meth:`open_path`)."""
        return self.open_path(path, ask=False)

    def _open_session(self, p: Path, mark: tuple) -> bool:
        read = self.host.read_session

        def done(result: tuple[files.SessionData, Loaded]) -> None:
            data, loaded = result
            if not self._may_replace(mark, p.name):
                return
            self.session_path = p
            self._install(loaded, data.settings)
            self._add_recent(p)
            self.info.emit(f"Opened session {p.name}")

        self.loader.start(f"Opening {p.name}", lambda step: read(p, step), done,
                          lambda msg: self.error.emit(f"Cannot open session: {msg}"),
                          lambda: self.info.emit(f"Opening {p.name} cancelled"))
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
            self.settingsLoaded.emit(settings)
        model = loaded.model
        self.state.set_image(loaded.image, loaded.path, model, loaded.view, loaded.counts)
        model.labels_changed.connect(self._on_labels_changed)
        if saved:
            self._mark_saved()
        else:
            self._saved_key, self._labels_dirty = None, True
            self.dirtyChanged.emit()
        self._journal_start(restored)
