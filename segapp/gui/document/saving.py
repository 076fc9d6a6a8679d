"""Saving a session in the background, and the Save / Discard / Cancel question before work
would be lost."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from .. import files
from .folders import SESSION_FILTER, Folders


class Saving(Folders):
    """Sessions written off the GUI thread; the strokes count as saved when they are."""

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
            self.error.emit("Open an image first.")
            return False
        if path is None and (ask_path or self.session_path is None):
            image = Path(self.state.image_path)
            default = self.folder("session") / (image.stem + files.SESSION_SUFFIX)
            path = self.dialog.get_path("Save session", str(default), SESSION_FILTER, save=True)
            if not path:
                return False
            self.remember_folder("session", path)
            p = Path(path)
            if not p.name.endswith(files.SESSION_SUFFIX):
                p = p.with_name(p.name.removesuffix(".json") + files.SESSION_SUFFIX)
            if p.exists() and not self.dialog.ask("Overwrite session?",
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
            self.dirtyChanged.emit()
            if not self.dirty:  # edits made while writing are not in the files
                self._journal("saved")
            self._add_recent(p)
            self.info.emit(f"Saved session {p.name}")

        def failed(message: str) -> None:
            outcome.append(False)
            self.error.emit(f"Cannot save session: {message}")

        self.saver.start(f"Saving {p.name}", lambda step: files.save_session(p, data), done,
                         failed)
        if wait:
            self.saver.wait_loaded()
            return bool(outcome and outcome[0])
        return True

    def confirm_discard(self, doing: str) -> bool:
        """Ask Save / Discard / Cancel if there is unsaved work; True if we may go on."""
        self.editor.wait_loaded()  # a fill or clear asked for is part of the work
        self.saver.wait_loaded()  # a save being written may be all there is to wait for
        if not self.dirty:
            return True
        name = self.state.image_path.name if self.state.image_path else "the image"
        answer = self.dialog.choose(
            "Unsaved strokes",
            f"The strokes on {name} are not saved. Save them before {doing}?",
            ("Save", "Discard", "Cancel"))
        if answer == "Save":
            return self.save_session(wait=True)
        return answer == "Discard"
