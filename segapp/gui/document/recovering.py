"""Crash recovery at start: the work of instances that are gone is offered back.

Never that of a running instance (its folder is locked: :mod:`segapp.gui.recovery`); when
the image has moved, the user is asked where it is now, and the work is kept until it is
restored or discarded. Exports cut short by the crash are reported.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from .. import edits
from ..journal import Journal, Recovered, history_frames
from .folders import IMAGE_FILTER
from .opening import Loaded, Opening

if TYPE_CHECKING:
    from ..recovery import Orphan


class Recovering(Opening):
    """Offering, restoring or discarding the work left by instances that are gone."""

    def offer_recovery(self) -> bool:
        """Offer the work of instances that are gone; True if a restore was started here
        (the image is read in the background, see :meth:`wait_loaded`)."""
        if self.root is None:
            return False
        restored = False
        missing: list[str] = []
        for orphan in reversed(self.host.recovery.orphans(self.root)):  # newest first
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
                    self.error.emit(text)
                self.loader.idle.connect(later)
            else:
                self.error.emit(text)
        return restored

    def _offer(self, orphan: Orphan, rec: Recovered) -> bool:
        answer = self.dialog.choose(
            "Restore previous work?",
            f"segapp did not shut down cleanly while you worked on {rec.image_path.name}"
            + (f" of the folder {rec.project.name}" if rec.project is not None else "") + " "
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
            found = self.dialog.get_path(
                f"Where is {image_path.name} now? (it was in {image_path.parent})",
                str(self.folder("open")), IMAGE_FILTER, save=False)
            if not found:
                orphan.release()
                self.error.emit(f"{image_path.name} was not found; your strokes are "
                                       "kept and offered again at the next start.")
                return False
            image_path = Path(found)
        mark, read = self._work_mark(), self.host.read_image
        kept = "your strokes are kept and offered again at the next start"
        schema = self._adopt_project(rec.project)  # work done in a folder goes back there
        labels: Any = rec.labels
        if schema is not None:
            schema.replace(rec.labels)
            labels = schema

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
            self.info.emit(f"Restored your strokes on {image_path.name}: {summary}; "
                                  f"{undo} undo and {redo} redo steps; painting {label}")

        def failed(message: str) -> None:
            orphan.release()
            if schema is not None:
                self._leave_project()
            self.error.emit(f"Cannot restore your strokes on {image_path.name}: "
                                   f"{message}; {kept}.")

        def cancelled() -> None:
            orphan.release()
            if schema is not None:
                self._leave_project()
            self.info.emit(f"Restore cancelled; {kept}.")

        self.loader.start(f"Restoring your strokes on {image_path.name}",
                          lambda step: _restore(read, orphan, rec, image_path, step, labels),
                          done, failed, cancelled)
        return True


def _restore(read_image: Callable[..., Loaded], orphan: Orphan, offered: Recovered,
             image_path: Path, step: Any, labels: Any = None
             ) -> tuple[Loaded, Recovered, list[np.ndarray], np.ndarray, bytes, str]:
    """Everything a restore needs, made in the loader's thread: the journal read again with
    its undo history, the image and strokes, each step's count change, the new journal's
    base (the strokes before the history) and history frames, and what was restored."""
    full = Journal.read(orphan.journal_path, history=True)
    if full is None or not np.array_equal(full.scribbles, offered.scribbles):
        full = offered  # cannot happen while we hold its lock; then restore what was offered
    loaded = read_image(image_path, step, scribbles=full.scribbles,
                        labels=full.labels if labels is None else labels,
                        pixel_limit=None)  # it was open before the crash
    changes = [edits.count_change(r) for r in full.steps]
    return (loaded, full, changes, full.origin(), history_frames(full.steps, full.applied),
            full.summary())
