"""Background segmentation: debounced, cancellable solves on a one-thread pool.

Every request gets a generation number (ndv-style); submitting a new one sets the cancel flag
of the running solve, and results of an older generation are dropped on arrival. Each result
also carries the annotation revision it was computed for, so the window can ignore results
for strokes that have since changed. The engine's :class:`segapp.Session` is only ever used
from the worker thread (the pool has one thread, so solves never overlap).
"""

from __future__ import annotations

import logging
import threading
import time
import traceback
from dataclasses import dataclass
from typing import Any

import numpy as np
from PySide6.QtCore import QObject, QRunnable, QThreadPool, QTimer, Signal

from ..errors import Cancelled, SegappError
from .qtcompat import emit

log = logging.getLogger(__name__)

#: Wait this long after the last edit before solving (a burst of edits makes one solve).
DEBOUNCE_MS = 120


@dataclass(frozen=True)
class SolveRequest:
    """Everything one solve needs (immutable copies, safe to hand to another thread)."""

    generation: int
    revision: int
    image_token: int
    image: np.ndarray
    scribbles: np.ndarray
    method: str
    options: tuple[tuple[str, Any], ...]


class _Signals(QObject):
    # Emitted from the worker thread; Qt queues them to the receiver's (GUI) thread.
    started = Signal(int, int)  # generation, revision
    finished = Signal(int, int, object, float)  # generation, revision, Segmentation, seconds
    failed = Signal(int, int, str)  # generation, revision, message
    cancelled = Signal(int, int)  # generation, revision


class _SessionCache:
    """The live Session, rebuilt when the image, method or an option changes (worker thread)."""

    def __init__(self) -> None:
        self.key: tuple | None = None
        self.session: Any = None

    def get(self, req: SolveRequest) -> Any:
        key = (req.image_token, req.method, req.options)
        if key != self.key:
            import segapp  # the engine; imported lazily so the window opens fast

            self.session = None  # free the old graph before building the new one
            self.session = segapp.Session(req.image, method=req.method, **dict(req.options))
            self.key = key
        return self.session


class _SolveJob(QRunnable):
    def __init__(self, req: SolveRequest, cancel: threading.Event, cache: _SessionCache,
                 signals: _Signals) -> None:
        super().__init__()
        self.req, self.cancel, self.cache, self.signals = req, cancel, cache, signals
        self.setAutoDelete(True)

    def run(self) -> None:
        req = self.req
        if self.cancel.is_set():  # superseded while queued
            emit(self.signals.cancelled, req.generation, req.revision)
            return
        emit(self.signals.started, req.generation, req.revision)
        t = time.perf_counter()
        try:
            session = self.cache.get(req)
            if self.cancel.is_set():
                raise Cancelled("superseded")
            result = session.update(req.scribbles, cancel=self.cancel.is_set)
        except Cancelled:
            emit(self.signals.cancelled, req.generation, req.revision)
        except SegappError as exc:  # includes InvalidInputError, SolverError
            self.cache.key = None  # a failed session may hold half-updated state
            emit(self.signals.failed, req.generation, req.revision, str(exc))
        except MemoryError:
            self.cache.key, self.cache.session = None, None
            emit(self.signals.failed, req.generation, req.revision,
                                     "not enough memory to segment this image")
        except Exception as exc:  # a bug: report it in the window, log the traceback
            log.error("segmentation failed:\n%s", traceback.format_exc())
            self.cache.key = None
            emit(self.signals.failed, req.generation, req.revision,
                                     f"internal error ({type(exc).__name__}: {exc})")
        else:
            emit(self.signals.finished, req.generation, req.revision, result,
                                       time.perf_counter() - t)


class SegmentationWorker(QObject):
    """Runs segmentations off the GUI thread; newest request wins.

    Signals
    -------
    busy(bool)
        A solve is queued or running (True) / nothing is pending (False).
    resultReady(int revision, object segmentation, float seconds)
        A result of the newest request.
    failed(int revision, str message)
        The newest request failed (message fit for the user).
    cancelled(int revision)
        A request was cancelled (superseded or :meth:`cancel`).
    """

    busy = Signal(bool)
    resultReady = Signal(int, object, float)
    failed = Signal(int, str)
    cancelled = Signal(int)

    def __init__(self, parent: QObject | None = None, debounce_ms: int = DEBOUNCE_MS) -> None:
        super().__init__(parent)
        self._pool = QThreadPool(self)
        self._pool.setMaxThreadCount(1)  # one Session, never used by two solves at once
        self._signals = _Signals(self)
        self._signals.finished.connect(self._on_finished)
        self._signals.failed.connect(self._on_failed)
        self._signals.cancelled.connect(self._on_cancelled)
        self._cache = _SessionCache()
        self._generation = 0
        self._cancel = threading.Event()
        self._pending: dict[str, Any] | None = None
        self._running = 0  # submitted jobs that have not reported back
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

    @property
    def generation(self) -> int:
        return self._generation

    @property
    def is_busy(self) -> bool:
        return self._running > 0 or self._timer.isActive()

    # -- requests --------------------------------------------------------------------------
    def request(self, scribbles: np.ndarray, revision: int, method: str,
                options: dict[str, Any], debounce: bool = True) -> None:
        """Ask for a segmentation of ``scribbles`` (copied now) at annotation ``revision``."""
        if self._image is None:
            raise RuntimeError("set_image() first")
        self._cancel.set()  # a newer edit cancels the running solve at once
        self._pending = {"scribbles": np.array(scribbles, dtype=np.int32, copy=True),
                         "revision": int(revision), "method": method,
                         "options": tuple(sorted(options.items()))}
        emit(self.busy, True)
        if debounce:
            self._timer.start()
        else:
            self._timer.stop()
            self._submit_pending()

    def cancel(self) -> None:
        """Cancel the running solve and drop any pending request."""
        self._timer.stop()
        self._pending = None
        self._cancel.set()
        self._generation += 1  # whatever is in flight is stale now
        if self._running == 0:
            emit(self.busy, False)

    def wait_idle(self, msecs: int = 5000) -> bool:
        """Block until the pool is idle (for shutdown and tests)."""
        return self._pool.waitForDone(msecs)

    def _submit_pending(self) -> None:
        p, self._pending = self._pending, None
        if p is None or self._image is None:
            return
        self._generation += 1
        self._cancel = threading.Event()
        req = SolveRequest(self._generation, p["revision"], self._image_token, self._image,
                           p["scribbles"], p["method"], p["options"])
        self._running += 1
        self._pool.start(_SolveJob(req, self._cancel, self._cache, self._signals))

    # -- results (GUI thread) --------------------------------------------------------------
    def _job_done(self) -> None:
        self._running -= 1
        if not self.is_busy:
            emit(self.busy, False)

    def _on_finished(self, generation: int, revision: int, result: object,
                     seconds: float) -> None:
        self._job_done()
        if generation == self._generation:  # stale generations are dropped
            emit(self.resultReady, revision, result, seconds)

    def _on_failed(self, generation: int, revision: int, message: str) -> None:
        self._job_done()
        if generation == self._generation:
            emit(self.failed, revision, message)

    def _on_cancelled(self, generation: int, revision: int) -> None:
        self._job_done()
        emit(self.cancelled, revision)
