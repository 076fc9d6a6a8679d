"""Opening an image or a saved session: read off the GUI thread, shown when ready.

A file read while strokes were painted asks again before they go (:meth:`Opening._may_replace`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ...editing import AnnotationModel
from ...errors import InvalidInputError
from ...io import DEFAULT_PIXEL_LIMIT
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


#: Images of more pixels are opened only when the person says so (the limit the command line
#: has as ``--pixel-limit``): reading one holds :attr:`TooLarge.BYTES_PER_PIXEL` per pixel.
PIXEL_LIMIT = DEFAULT_PIXEL_LIMIT


class TooLarge(InvalidInputError):
    """An image of more pixels than the app opens without asking (raised by the reader before
    anything is decoded; the app asks whether to open it anyway)."""

    #: Bytes per pixel the app holds for an open image: the float image (12), the display
    #: picture (4), the strokes (4) and their layer (4).
    BYTES_PER_PIXEL = 24

    def __init__(self, path: Path, pixels: int, limit: int) -> None:
        self.path, self.pixels, self.limit = Path(path), int(pixels), int(limit)
        super().__init__(f"{self.path.name} has {pixels / 1e6:.0f} megapixels, more than the "
                         f"{limit / 1e6:.0f} megapixels segapp opens without asking")

    def question(self) -> str:
        gb = self.pixels * self.BYTES_PER_PIXEL / 2**30
        return (f"{self}. It is segmented on a reduced copy, but the app holds it in memory at "
                f"full size: about {gb:.1f} GB. Open it anyway?")


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

    def open_path(self, path: str | os.PathLike) -> bool:
        """Start opening an image or a ``*.segapp.json`` session in the background.

        Returns False if the user kept the current work at the unsaved-strokes question;
        otherwise the file is read off the GUI thread (:attr:`loader`: progress, cancel) and
        shown when ready; errors go to the message bar.
        """
        p = Path(path)
        if not self.confirm_discard(f"opening {p.name}"):
            return False
        mark = self._work_mark()
        if p.name.endswith(files.SESSION_SUFFIX):
            return self._open_session(p, mark)

        def done(loaded: Loaded) -> None:
            if not self._may_replace(mark, p.name):
                return
            self._leave_project()
            self.session_path = None
            self._install(loaded)
            self._add_recent(p)
            h, w = loaded.image.shape[:2]
            self.info.emit(f"Opened {p.name} ({w}×{h})")

        self._load_image(p, done)
        return True

    def _leave_project(self) -> None:
        """A single image replaces a folder's (the folder part overrides this)."""

    def _adopt_project(self, folder: Path | None) -> Any:
        """Open ``folder`` as the project for a restored image; its schema, or None (the
        folder part overrides this)."""
        return None

    def _load_image(self, p: Path, done: Callable[[Loaded], None], *,
                    pixel_limit: Any = "default", **read: Any) -> None:
        """Read image ``p`` in the loader (``read``: more arguments of ``host.read_image``);
        one above ``pixel_limit`` pixels (default :data:`PIXEL_LIMIT`) is opened only if the
        user says so."""
        reader = self.host.read_image
        if pixel_limit == "default":
            pixel_limit = PIXEL_LIMIT

        def work(step: Any) -> Loaded | TooLarge:
            try:
                return reader(p, step, pixel_limit=pixel_limit, **read)
            except TooLarge as exc:  # a question for the user, not a failure
                return exc

        def arrived(result: Loaded | TooLarge) -> None:
            if not isinstance(result, TooLarge):
                done(result)
            elif self.dialog.ask("Open a very large image?", result.question()):
                self._load_image(p, done, pixel_limit=None, **read)
            else:
                self.info.emit(f"{p.name} was not opened")

        self.loader.start(f"Opening {p.name}", work, arrived,
                          lambda msg: self.error.emit(f"Cannot open image: {msg}"),
                          lambda: self.info.emit(f"Opening {p.name} cancelled"))

    def _open_session(self, p: Path, mark: tuple) -> bool:
        read = self.host.read_session

        def done(result: tuple[files.SessionData, Loaded]) -> None:
            data, loaded = result
            if not self._may_replace(mark, p.name):
                return
            self._leave_project()
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
        model = AnnotationModel(image.shape[:2], scribbles=scribbles)  # not an undoable step
        if labels:
            model.set_labels(labels)
        self._install(Loaded(Path(path), image, model, None), settings, saved)

    def _install(self, loaded: Loaded, settings: dict[str, Any] | None = None,
                 saved: bool = True, restored: tuple[np.ndarray, bytes] | None = None) -> None:
        """Show a loaded image with its strokes; start a new journal (``restored``: see
        :meth:`_journal_start`)."""
        if settings:
            self.settingsLoaded.emit(settings)
        model = loaded.model
        self.state.set_image(loaded.image, loaded.path, model, loaded.view)
        model.labels_changed.connect(self._on_labels_changed)
        if saved:
            self._mark_saved()
        else:
            self._saved_key, self._labels_dirty = None, True
            self.dirtyChanged.emit()
        self._journal_start(restored)
