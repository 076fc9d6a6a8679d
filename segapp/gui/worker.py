"""The app's live solves: :class:`segapp.live.LiveEngine` run as background jobs, debounced.

The engine (Qt-free, shared with the napari widget) keeps the Session and solves a
:class:`~segapp.live.SolveRequest`; this adapter runs each solve as a job of the window's
one job mechanism (:mod:`segapp.gui.jobs`: one worker thread, so solves never overlap; a new
request cancels the stale solve and only the newest reports), adds a timer that makes one
solve of a burst of edits, and tags each result with what it was asked for (image, stroke
set, method, options).

Finished results are kept in a :class:`segapp.live.ResultCache` (bounded in bytes) by that
tag: undo and redo come back to a stroke set that was segmented before, and its result is
shown at once instead of being solved again.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, replace
from typing import Any, Hashable

import numpy as np
from PySide6.QtCore import QObject, QTimer, Signal

from ..cancel import wait_for
from ..live import LiveEngine, Result, ResultCache, SolveRequest, make_result
from ..live.results import CACHE_BYTES
from .jobs import Job, JobRunner
from .qtcompat import emit

#: Wait this long after the last edit before solving (a burst of edits makes one solve).
#: 40 ms since edits are answered from a factor (issue 21): 120 ms was a fifth of the wait
#: from a stroke's release to its answer at 0.25 MP (benchmarks/gui.py --parts strokes).
#: A stroke's release does not wait at all (:meth:`SegmentationWorker.flush`).
DEBOUNCE_MS = 40

#: Seconds the refinement of a working answer waits for that answer to be on screen (it is
#: drawn first: what the person sees and responds to) before it starts anyway.
DRAWN_WAIT = 1.0


@dataclass(frozen=True)
class Progress:
    """Where a running solve is: its method, stage, how far (0..1, None if unknown) and
    seconds since it started."""

    method: str
    stage: str
    fraction: float | None
    seconds: float


def solve(engine: LiveEngine, req: SolveRequest, job: Job,
          drawn: threading.Event | None = None) -> Result:
    """Worker thread: the Result of ``req`` (a preview first where the engine offers one, and
    the working answer before its edges are solved again at full resolution, each posted to
    the GUI thread); what the person waited for: the solve and the result made ready.

    ``drawn``: set once the (working) answer is on screen; the edges are refined only then
    (at most :data:`DRAWN_WAIT` s later), and the next edit's factorization starts only then
    (:meth:`segapp.Session.update`'s ``shown``): drawn beside the refinement and the
    factorization, on two cores, its 12 MP overlay took 0.3 s instead of 0.05 s."""
    t = time.perf_counter()

    def preview(seg: Any) -> Result:
        result = make_result(seg, time.perf_counter() - t, preview=True)
        job.post(result)
        return result

    job.report("starting")
    seg = engine.solve(req, preview=preview, progress=job.report, refine=False, shown=drawn)
    working = None
    if engine.refines(seg):
        # the working answer at once (hatched, as a preview), then its edges solved again at
        # full resolution; a new edit cancels that like any solve
        working = preview(seg)
        if drawn is not None:
            wait_for(drawn, DRAWN_WAIT, job.event.is_set)
        job.report("sharpening the edges at full resolution")
        seg = engine.refine(req, seg, job.report)
    return replace(make_result(seg, 0.0, like=working), seconds=time.perf_counter() - t)


class SegmentationWorker(QObject):
    """Runs segmentations off the GUI thread; newest request wins; results cached.

    Solves are jobs of one :class:`~segapp.gui.jobs.JobRunner` (key ``"solve"``), so they
    never overlap (one Session, never used by two threads at once) and a new request cancels
    the one before it (:mod:`segapp.gui.jobs`: only the newest request reports).

    Signals
    -------
    busy(bool)
        A solve of the newest request is queued or running (True) / none is (False). A
        cancelled solve that has not stopped yet (it stops at its next check) is not counted:
        nobody waits for it.
    progress(object tag, Progress)
        Where the newest request's solve is (stage, fraction, seconds).
    resultReady(object tag, object Result, bool cached)
        A result of the newest request (from the cache: at once, inside :meth:`request`).
    previewReady(object tag, object Result)
        A coarse result of the newest request, before its full result.
    failed(object tag, str message)
        The newest request failed (message fit for the user).
    cancelled(object tag)
        A request was cancelled (superseded or :meth:`cancel`), at once: its solve stops at
        its next check, and nobody waits for it.
    """

    busy = Signal(bool)
    resultReady = Signal(object, object, bool)
    previewReady = Signal(object, object)
    failed = Signal(object, str)
    cancelled = Signal(object)
    progress = Signal(object, object)

    def __init__(self, parent: QObject | None = None, debounce_ms: int = DEBOUNCE_MS,
                 cache_bytes: int = CACHE_BYTES) -> None:
        super().__init__(parent)
        self.jobs = JobRunner(self)
        self.engine = LiveEngine()
        self.results = ResultCache(cache_bytes)
        self._pending: dict[str, Any] | None = None
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(debounce_ms)
        self._timer.timeout.connect(self._submit_pending)
        self._image_token = 0
        self._image: np.ndarray | None = None
        self._drawn: tuple[Any, threading.Event] | None = None  # the newest solve's, and when

    # -- configuration ---------------------------------------------------------------------
    def set_image(self, image: np.ndarray) -> None:
        """Segment this image from now on (cancels work on the previous one)."""
        self.cancel()
        self._image = image
        self._image_token += 1
        self.results.clear()

    @property
    def debounce_ms(self) -> int:
        """Delay between the last request and the solve."""
        return self._timer.interval()

    @debounce_ms.setter
    def debounce_ms(self, ms: int) -> None:
        self._timer.setInterval(int(ms))

    @property
    def is_busy(self) -> bool:
        """A request is waiting, or the newest one is being solved (not a cancelled one)."""
        return self._timer.isActive() or self._pending is not None or self.jobs.running

    @property
    def is_running(self) -> bool:
        """Any solve still on the worker thread, cancelled ones included (shutdown, tests)."""
        return self.jobs.working

    def tag(self, strokes_key: Hashable, method: str, options: dict[str, Any]) -> tuple:
        """What identifies a result: image, stroke set, method and options."""
        return (self._image_token, strokes_key, method, tuple(sorted(options.items())))

    # -- requests --------------------------------------------------------------------------
    def request(self, scribbles: np.ndarray, strokes_key: Hashable, method: str,
                options: dict[str, Any], debounce: bool = True) -> tuple:
        """Ask for a segmentation of ``scribbles`` (label ids 0..MAX_LABELS, as an AnnotationModel
        holds them; copied now); returns the request's tag.

        A cached result is announced at once (``resultReady`` before this returns).
        """
        if self._image is None:
            raise RuntimeError("set_image() first")
        tag = self.tag(strokes_key, method, options)
        cached = self.results.get(tag)
        if cached is not None:
            self.cancel()  # whatever was pending is for another stroke set
            emit(self.resultReady, tag, cached, True)
            return tag
        self.jobs.supersede("solve")  # a newer edit cancels the running solve at once
        # The copy is made on the GUI thread: as uint8 (label ids are 0..MAX_LABELS), a
        # quarter of the int32 map's bytes. At 12 MP an int32 copy is a fresh 48 MB mapping
        # whose page faults took 70-190 ms with solves and drawing running beside it.
        self._pending = {"scribbles": np.array(scribbles, dtype=np.uint8, copy=True),
                         "tag": tag, "method": method,
                         "options": tuple(sorted(options.items()))}
        emit(self.busy, True)
        if debounce:
            self._timer.start()
        else:
            self._timer.stop()
            self._submit_pending()
        return tag

    def shown(self, tag: Any) -> None:
        """The answer of request ``tag`` is on screen (its overlay painted): a working answer's
        refinement, and the next edit's preparation, may start (:func:`solve`)."""
        if self._drawn is not None and self._drawn[0] == tag:
            self._drawn[1].set()

    def flush(self) -> None:
        """Start the request waiting out its debounce now (a stroke's release is one act, not
        a burst: 40 ms of the wait from the release to its answer)."""
        if self._timer.isActive():
            self._timer.stop()
            self._submit_pending()

    def cancel(self) -> None:
        """Cancel the running solve and drop any pending request."""
        self._timer.stop()
        self._pending = None
        self.jobs.supersede("solve")  # whatever is in flight is stale now: nobody waits for it
        emit(self.busy, False)

    def wait_idle(self, msecs: int = 5000) -> bool:
        """Block until the solves asked for have run (for shutdown and tests)."""
        return self.jobs.wait_idle(msecs)

    def _submit_pending(self) -> None:
        p, self._pending = self._pending, None
        if p is None or self._image is None:
            return
        tag, image_key, image = p["tag"], self._image_token, self._image
        drawn = threading.Event()
        self._drawn = (tag, drawn)

        def work(job: Job) -> Result:
            req = SolveRequest(job.ticket, tag, image_key, image, p["scribbles"], p["method"],
                               p["options"], job.event)
            return solve(self.engine, req, job, drawn)

        def keep(result: Result) -> None:  # a superseded result may still be undone to
            if image_key == self._image_token:
                self.results.put(tag, result)

        def done(result: Result) -> None:
            emit(self.resultReady, tag, result, False)
            self._idle()  # after the result: what is shown is then the answer

        def failed(message: str) -> None:
            self._idle()
            emit(self.failed, tag, message)

        def progress(stage: str, done: float | None, total: float | None,
                     seconds: float) -> None:
            fraction = None if done is None or not total else min(1.0, done / total)
            emit(self.progress, tag, Progress(p["method"], stage, fraction, seconds))

        self.jobs.submit("solve", work, done=done, failed=failed, keep=keep,
                         cancelled=lambda: emit(self.cancelled, tag), progress=progress,
                         post=lambda result: emit(self.previewReady, tag, result),
                         what=f"segmenting ({p['method']})",
                         memory="not enough memory to segment this image")

    def _idle(self) -> None:
        if not self.is_busy:
            emit(self.busy, False)
