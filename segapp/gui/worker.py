"""The app's live solves: :class:`segapp.live.LiveEngine` behind Qt signals, debounced.

The engine (Qt-free, shared with the napari widget) numbers the requests, cancels the stale
solve and keeps the Session; this adapter adds what is Qt's: a one-thread pool to run the
solves on (so they never overlap), a timer that makes one solve of a burst of edits, and
signals queued to the GUI thread. Each result carries the *tag* it was asked for (image,
stroke set, method, options), so the window shows it only if that is still what is on screen.

Finished results are kept in a :class:`segapp.live.ResultCache` (bounded in bytes) by that
tag: undo and redo come back to a stroke set that was segmented before, and its result is
shown at once instead of being solved again.
"""

from __future__ import annotations

import logging
import time
import traceback
from dataclasses import dataclass, replace
from typing import Any, Callable, Hashable

import numpy as np
from PySide6.QtCore import QObject, QRunnable, QThreadPool, QTimer, Signal

from ..errors import Cancelled, SegappError
from ..live import LiveEngine, Result, ResultCache, SolveRequest, make_result
from ..live.results import CACHE_BYTES
from .qtcompat import emit

log = logging.getLogger(__name__)

#: Wait this long after the last edit before solving (a burst of edits makes one solve).
#: 40 ms since edits are answered from a factor (issue 21): 120 ms was a fifth of the wait
#: from a stroke's release to its answer at 0.25 MP (benchmarks/gui.py --parts strokes).
DEBOUNCE_MS = 40


#: Seconds between two progress reports of one solve (a stage change is reported at once).
PROGRESS_INTERVAL = 0.25


class _Signals(QObject):
    # Emitted from the worker thread; Qt queues them to the receiver's (GUI) thread.
    finished = Signal(int, object, object)  # generation, tag, Result
    preview = Signal(int, object, object)  # generation, tag, Result
    failed = Signal(int, object, str)  # generation, tag, message
    cancelled = Signal(int, object)  # generation, tag
    progress = Signal(int, object, object)  # generation, tag, Progress


@dataclass(frozen=True)
class Progress:
    """Where a running solve is: its method, stage, how far (0..1, None if unknown) and
    seconds since it started."""

    method: str
    stage: str
    fraction: float | None
    seconds: float


class _SolveJob(QRunnable):
    def __init__(self, req: SolveRequest, engine: LiveEngine, signals: _Signals) -> None:
        super().__init__()
        self.req, self.engine, self.signals = req, engine, signals
        self.setAutoDelete(True)
        self._last = (0.0, "")

    def _progress(self, t0: float) -> Callable[[str, float | None, float | None], None]:
        def report(stage: str, done: float | None, total: float | None) -> None:
            now = time.perf_counter()
            if stage == self._last[1] and now - self._last[0] < PROGRESS_INTERVAL:
                return
            self._last = (now, stage)
            fraction = None if done is None or not total else min(1.0, done / total)
            emit(self.signals.progress, self.req.generation, self.req.tag,
                 Progress(self.req.method, stage, fraction, now - t0))
        return report

    def run(self) -> None:
        req, t = self.req, time.perf_counter()
        try:
            report = self._progress(t)
            report("starting", None, None)
            seg = self.engine.solve(req, preview=self._preview(t), progress=report,
                                    refine=False)
            if self.engine.refines(seg):
                # the working answer at once (hatched, as a preview), then its edges solved
                # again at full resolution; a new edit cancels that like any solve
                self._preview(t)(seg)
                report("sharpening the edges at full resolution", None, None)
                seg = self.engine.refine(req, seg, report)
            # what the person waited for: the solve and the result made ready to show
            result = make_result(seg, 0.0)
            result = replace(result, seconds=time.perf_counter() - t)
        except Cancelled:
            emit(self.signals.cancelled, req.generation, req.tag)
        except SegappError as exc:  # includes InvalidInputError, SolverError
            emit(self.signals.failed, req.generation, req.tag, str(exc))
        except MemoryError:
            emit(self.signals.failed, req.generation, req.tag,
                 "not enough memory to segment this image")
        except Exception as exc:  # a bug: report it in the window, log the traceback
            log.error("segmentation failed:\n%s", traceback.format_exc())
            emit(self.signals.failed, req.generation, req.tag,
                 f"internal error ({type(exc).__name__}: {exc})")
        else:
            emit(self.signals.finished, req.generation, req.tag, result)

    def _preview(self, t0: float) -> Callable[[Any], None]:
        def forward(seg: Any) -> None:
            emit(self.signals.preview, self.req.generation, self.req.tag,
                 make_result(seg, time.perf_counter() - t0, preview=True))
        return forward


class SegmentationWorker(QObject):
    """Runs segmentations off the GUI thread; newest request wins; results cached.

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
        A request was cancelled (superseded or :meth:`cancel`).
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
        self._pool = QThreadPool(self)
        self._pool.setMaxThreadCount(1)  # one Session, never used by two solves at once
        self._signals = _Signals(self)
        self._signals.finished.connect(self._on_finished)
        self._signals.preview.connect(self._on_preview)
        self._signals.failed.connect(self._on_failed)
        self._signals.cancelled.connect(self._on_cancelled)
        self._signals.progress.connect(self._on_progress)
        self.engine = LiveEngine()
        self.results = ResultCache(cache_bytes)
        self._pending: dict[str, Any] | None = None
        self._running: list[int] = []  # generations of submitted jobs not reported back
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(debounce_ms)
        self._timer.timeout.connect(self._submit_pending)
        self._image_token = 0
        self._image: np.ndarray | None = None

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
    def generation(self) -> int:
        return self.engine.generation

    @property
    def is_busy(self) -> bool:
        """A request is waiting, or the newest one is being solved (not a cancelled one)."""
        return (self._timer.isActive() or self._pending is not None
                or any(self.engine.is_current(g) for g in self._running))

    @property
    def is_running(self) -> bool:
        """Any solve still on the worker thread, cancelled ones included (shutdown, tests)."""
        return bool(self._running)

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
        self.engine.interrupt()  # a newer edit cancels the running solve at once
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

    def cancel(self) -> None:
        """Cancel the running solve and drop any pending request."""
        self._timer.stop()
        self._pending = None
        self.engine.cancel()  # whatever is in flight is stale now: nobody waits for it
        emit(self.busy, False)

    def wait_idle(self, msecs: int = 5000) -> bool:
        """Block until the pool is idle (for shutdown and tests)."""
        return self._pool.waitForDone(msecs)

    def _submit_pending(self) -> None:
        p, self._pending = self._pending, None
        if p is None or self._image is None:
            return
        req = self.engine.request(p["tag"], self._image_token, self._image, p["scribbles"],
                                  p["method"], p["options"])
        self._running.append(req.generation)
        self._pool.start(_SolveJob(req, self.engine, self._signals))

    # -- results (GUI thread) --------------------------------------------------------------
    def _job_done(self, generation: int) -> None:
        self._running.remove(generation)
        if not self.is_busy:
            emit(self.busy, False)

    def _on_progress(self, generation: int, tag: Hashable, progress: Progress) -> None:
        if self.engine.is_current(generation):
            emit(self.progress, tag, progress)

    def _on_finished(self, generation: int, tag: Hashable, result: Result) -> None:
        if tag[0] == self._image_token:
            self.results.put(tag, result)  # a superseded result may still be undone to
        self._running.remove(generation)
        if self.engine.is_current(generation):  # stale generations are not shown
            emit(self.resultReady, tag, result, False)
        if not self.is_busy:   # after the result: what is shown is then the answer
            emit(self.busy, False)

    def _on_preview(self, generation: int, tag: Hashable, result: Result) -> None:
        if self.engine.is_current(generation):
            emit(self.previewReady, tag, result)

    def _on_failed(self, generation: int, tag: Hashable, message: str) -> None:
        self._job_done(generation)
        if self.engine.is_current(generation):
            emit(self.failed, tag, message)

    def _on_cancelled(self, generation: int, tag: Hashable) -> None:
        self._job_done(generation)
        emit(self.cancelled, tag)
