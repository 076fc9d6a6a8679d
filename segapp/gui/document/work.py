"""The work on the current image: what counts as saved, and its crash-recovery journal.

Every completed change goes to this instance's journal as it happens
(:mod:`segapp.gui.journal`, :mod:`segapp.gui.recovery`), so it survives a kill; the journal
is removed only after a save or an explicit discard. The other parts of the document
(:mod:`.editing`, :mod:`.opening`, :mod:`.saving`, :mod:`.exporting`, :mod:`.recovering`)
stand on this one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ...editing import Emitter, Label
from ..state import AppState
from .ports import Host


class Work:
    """The unsaved-work mark and the journal of one window's document.

    Events (plain :class:`~segapp.editing.Emitter`, emitted on the GUI thread):
    ``dirtyChanged()`` the saved / unsaved state may have changed; ``info(text)`` and
    ``error(text)`` messages for the user; ``settingsLoaded(dict)`` a session or recovered
    journal brings the method and options to use; ``projectChanged()`` the folder open, its
    images or their states changed (:mod:`.folder`).
    """

    def __init__(self, host: Host, state: AppState) -> None:
        self.host, self.state = host, state
        self.dialog = host.dialogs  # the questions it may ask the user
        self.loader, self.saver, self.editor = host.loader, host.saver, host.editor
        self.exporter = host.exporter
        self.dirtyChanged, self.info, self.error = Emitter(), Emitter(), Emitter()
        self.settingsLoaded, self.projectChanged = Emitter(), Emitter()
        self.root: Path | None = None if host.recovery is None else host.recovery.root
        self.instance: Any = None  # segapp.gui.recovery.Instance, once start_journal ran
        self.session_path: Path | None = None
        self._saved_key: int | None = None
        self._labels_dirty = False
        # the label painted with is restored after a crash too
        state.events.label.connect(lambda label: self._journal("current", label))

    def start_journal(self) -> None:
        """Take this instance's recovery folder (after the window listens to ``error``)."""
        if self.host.recovery is None:
            return
        try:
            self.instance = self.host.recovery.instance(self.root)
        except OSError as exc:  # still usable, without crash protection: say so
            self.error.emit(f"Crash recovery is off: {exc}")

    @property
    def dirty(self) -> bool:
        """Strokes or label names/colours changed since the image was opened or saved."""
        return self.state.history is not None and (
            self.state.stroke_key() != self._saved_key or self._labels_dirty)

    def _mark_saved(self) -> None:
        self._saved_key = self.state.stroke_key()
        self._labels_dirty = False
        self.dirtyChanged.emit()

    def _labels(self) -> list[Label]:
        model = self.state.strokes
        return [] if model is None else [Label(lab.id, lab.name, tuple(lab.color), lab.hidden,
                                               lab.locked) for lab in model.labels.values()]

    def _settings(self) -> dict[str, Any]:
        return {"method": self.state.method, **self.state.option_dict()}

    def _on_labels_changed(self, _label_id: int) -> None:
        self._labels_dirty = True
        self.dirtyChanged.emit()
        self._journal("labels", self._labels())

    def settings_changed(self) -> None:
        self._journal("settings", self._settings())

    def _journal_project(self) -> str | None:
        """The folder the image is worked on in, for the journal (:mod:`.folder`)."""
        return None

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
                                        label=self.state.label, history=history,
                                        project=self._journal_project())
        except OSError as exc:
            self.error.emit(f"Crash recovery is off: cannot write its journal: {exc}")
            self.instance = None

    def _journal(self, method: str, *args: Any, **kwargs: Any) -> None:
        if self.instance is None:
            return
        try:
            getattr(self.instance.journal, method)(*args, **kwargs)
            if self.instance.journal.needs_compaction():
                self._journal_start()
        except OSError as exc:
            self.error.emit(f"Crash recovery is off: cannot write its journal: {exc}")
            self.instance = None
