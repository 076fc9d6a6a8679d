"""Edits of the strokes, each journalled as it completes, and undo / redo of them.

A stroke is applied by the canvas and only recorded here; a whole-map edit (fill, clear,
import) is computed off the GUI thread on a copy of the strokes and applied as one undoable
step; the undo or redo of a big edit is prepared off the GUI thread too
(:mod:`segapp.gui.edits`). Edits and the undo / redo steps asked for meanwhile are applied in
the order they were asked for, each prepared from the strokes the one before left.
"""

from __future__ import annotations

import itertools
from typing import Any, Callable

from ...editing import AnnotationModel, EditRecord
from .. import edits
from .ports import Jobs
from .work import Work

#: An edit prepared off the GUI thread is prepared again (the strokes changed while it was)
#: at most this many times in all; then it is applied on the GUI thread.
MAX_TRIES = 3


class Editing(Work):
    """Recording edits and stepping back and forth through them."""

    def edit(self, record: EditRecord | None, ready: edits.Prepared | None = None) -> None:
        """An edit the strokes have applied and recorded (a stroke, fill, clear or import):
        journal it; ``ready``: its journal frame, prepared off the GUI thread."""
        if record is None or self.state.history is None:
            return
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
            lut, change = self.host.layers.layer_lut(), history.change_of(record)
            self.editor.start(what, lambda _step: edits.prepare(record, lut, undo, change), done,
                              lambda msg: self.error.emit(f"{what} failed: {msg}"),
                              first=first)

        def done(ready: edits.Prepared) -> None:
            if self.state.strokes is not model:
                return  # another image is open now
            if model.stroking:  # never in the middle of a stroke: right after it
                self.host.later(20, lambda: done(ready))
                return
            if ready.record is not (history.next_undo() if undo else history.next_redo()) \
                    and next(tries) < MAX_TRIES:  # a stroke came first: prepare the new step
                start(first=True)
                return
            with self.host.layers.prepared_layer(ready):
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
                              lambda msg: self.error.emit(f"{what} failed: {msg}"))

    def _edit_off_thread(self, what: str,
                         change: Callable[[AnnotationModel, Any], EditRecord | None],
                         prepare: Callable[[], Any], runner: Jobs,
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
            record = change(model.scratch(), data)
            return revision, data, None if record is None else edits.prepare(record, lut)

        def done(result: tuple[int, Any, edits.Prepared | None]) -> None:
            revision, data, ready = result
            if self.state.strokes is not model:
                return  # another image is open now
            if model.stroking:  # never in the middle of a stroke: right after it
                self.host.later(20, lambda: done(result))
                return
            if model.revision == revision:
                if ready is not None:
                    with self.host.layers.prepared_layer(ready):
                        model.apply(ready.record, ready.change)
                else:  # e.g. a fill of a segment whose pixels are all painted: say so
                    self.info.emit(f"{what}: nothing to change")
                self.edit(None if ready is None else ready.record, ready)
            elif next(tries) < MAX_TRIES:  # the strokes changed meanwhile: prepare it again
                runner.start(what, work, done, failed, cancelled, first=True)
                return
            else:  # they keep changing: change them here (the strokes record it)
                self.edit(change(model, data))
            then()

        lut = self.host.layers.layer_lut()
        runner.start(what, work, done, failed, cancelled)

    def wait_edits(self, msecs: int = 120_000) -> bool:
        """Run the event loop until the whole-map edits and undo / redo steps asked for are
        applied (scripts, tests); False on timeout."""
        return self.editor.wait_loaded(msecs)

