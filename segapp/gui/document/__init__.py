"""The work on the current image, Qt-free: opening, editing, saving, exporting, crash recovery.

Never lose work:

- every completed change goes to this instance's journal as it happens (:mod:`.work`), so it
  survives a kill;
- opening another image, closing and quitting ask Save / Discard / Cancel when strokes are
  unsaved (:mod:`.saving`); the journal is removed only after a save or an explicit discard;
- at start, work left by instances that are gone is offered back, never that of a running
  instance (:mod:`.recovering`);
- exports run in the background and say which files were not written (:mod:`.exporting`);
- a folder of images is a project: each image's strokes and answer are written into it as
  the work goes, images are marked done, the folder exports as a training set (:mod:`.folder`);
- files are opened (:mod:`.opening`, :mod:`.importing`) and saved, and fills and clears
  computed (:mod:`.editing`), in the background too; a file read while strokes were painted
  asks again before they go.

The controller never touches the window (napari-style: a Qt-free model, a thin view). What
it needs from outside comes in through one :class:`~.ports.Host` (dialogs, background job
runners, the canvas's stroke layer, settings store, timer, recovery store); what it has to
say goes out through plain events the window subscribes to: ``dirtyChanged``, ``info``,
``error``, ``settingsLoaded`` (:class:`~.work.Work`).
"""

from __future__ import annotations

from ..state import AppState
from .exporting import Exporting
from .folder import FolderWork
from .importing import Importing
from .opening import Loaded
from .ports import Dialogs, Host, Recovery
from .recovering import Recovering

__all__ = ["Document", "Dialogs", "Host", "Loaded", "Recovery"]


class Document(FolderWork, Recovering, Importing, Exporting):
    """Files, edits and recovery for one window; see the module docstring.

    Parameters
    ----------
    host : Host
        What the window lends: dialogs, job runners, stroke layer, settings, recovery store.
    state : AppState

    Call :meth:`start_journal` once the window listens to the events.
    """

    def __init__(self, host: Host, state: AppState) -> None:
        super().__init__(host, state)
        self.exporter.finished.connect(self._on_export_finished)
        state.events.image_changed.connect(
            lambda model: model.history.changed.connect(self._folder_edited))
        state.events.shown.connect(self._folder_result)

    def close(self) -> bool:
        """The window closes: ask about unsaved work; remove the journal only when no work is
        left unsaved (saved, discarded or none). Returns False to keep the window open."""
        if self.exporter.running:
            if not self.dialog.ask("Export running", "An export is still being written. "
                                   "Stop it and quit? (Files not written yet are not made.)"):
                return False
            self.exporter.cancel()
            self.exporter.wait_idle()
        if not self.confirm_discard("quitting"):
            return False
        self.loader.cancel()
        self.saver.wait_loaded()  # the folder's state and labels, written in turn
        self._close_project()
        if self.instance is not None:
            self.instance.remove()
            self.instance = None
        return True
