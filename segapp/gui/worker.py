"""Background segmentation: debounced, cancellable solves on a one-thread pool, results cached.

Every request gets a generation number (ndv-style); submitting a new one sets the cancel flag
of the running solve, and results of an older generation are dropped on arrival. Each result
carries the *tag* it was asked for (image, stroke set, method, options), so the window shows
it only if that is still what is on screen.

Results are kept in a small LRU cache (:class:`ResultCache`, bounded in bytes) keyed by that
tag: undo and redo come back to a stroke set that was segmented before, and its result is
shown at once instead of being solved again.

The engine's :class:`segapp.Session` is only used from the worker thread (the pool has one
thread, so solves never overlap). It is rebuilt only when the image, the method or a *setup*
option changes; *solve* options go to :meth:`Session.update`, which re-solves without
rebuilding the graph or the multigrid hierarchy. When the library's ``update`` accepts a
``preview`` callback (a coarse result of a large image before the full one), previews are
forwarded to the window as ``previewReady``. A preview is asked for only where it is cheap
next to the full solve (:func:`wants_preview`): otherwise the app would solve each edit twice
and be slower than the command line (ensemble on the 0.24 MP coffee photo: 19–40 s of
preview before 30 s of full solve).
"""

from __future__ import annotations

import inspect
import logging
import threading
import time
import traceback
from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import Any, Callable, Hashable

import numpy as np
from PySide6.QtCore import QObject, QRunnable, QThreadPool, QTimer, Signal

from ..io import render
from ..errors import Cancelled, SegappError
from .qtcompat import emit

log = logging.getLogger(__name__)

#: Wait this long after the last edit before solving (a burst of edits makes one solve).
#: 40 ms since edits are answered from a factor (issue 21): 120 ms was a fifth of the wait
#: from a stroke's release to its answer at 0.25 MP (benchmarks/gui.py --parts strokes).
DEBOUNCE_MS = 40
#: Results kept for undo/redo: at most this many bytes (labels + eigenvectors), newest kept.
CACHE_BYTES = 768 * 2**20
#: A preview only for a working copy of at least this many pixels (5 × the preview's 60K):
#: below, the full solve comes soon enough and a preview would only delay it.
PREVIEW_MIN_PIXELS = 300_000
#: A session whose preview took more than this share of its full solve gets no more previews
#: (landmark methods: their cost hardly depends on the pixel count).
PREVIEW_MAX_SHARE = 0.35


def split_options(method: str, options: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(setup, solve)`` options of ``method`` by their declared stage (:mod:`segapp.options`)."""
    from ..methods import options_of

    solve = {o.name for o in options_of(method) if o.stage == "solve"}
    return ({k: v for k, v in options.items() if k not in solve},
            {k: v for k, v in options.items() if k in solve})


@dataclass(frozen=True)
class SolveRequest:
    """Everything one solve needs (immutable copies, safe to hand to another thread)."""

    generation: int
    tag: Hashable
    image_token: int
    image: np.ndarray
    scribbles: np.ndarray
    method: str
    options: tuple[tuple[str, Any], ...]


@dataclass(frozen=True)
class Result:
    """A segmentation with what the window needs to show it without further work."""

    segmentation: Any  # segapp.Segmentation
    vmax: tuple[float, ...]  # colour range of each eigenvector's heat map (render.robust_vmax)
    seconds: float
    preview: bool = False
    #: labels the method could not place (Segmentation.unplaced_labels: 0.2 s at 12 MP)
    unplaced: tuple[int, ...] = ()

    @property
    def nbytes(self) -> int:
        s = self.segmentation
        return int(np.asarray(s.labels).nbytes + np.asarray(s.eigenvectors).nbytes)


def make_result(segmentation: Any, seconds: float, preview: bool = False) -> Result:
    """Attach the heat maps' colour ranges and the labels that could not be placed, and bring
    the eigenvectors to full resolution: what the GUI thread must not compute (worker thread).

    The colour ranges come from the working copy's vectors where there is one: the 99th
    percentile of a 12 MP vector took 0.6 s each (idle machine), of the 0.5 MP one 0.02 s,
    and the bilinear enlargement changes it by little."""
    v = np.asarray(segmentation.eigenvectors)  # a working copy's are interpolated here
    small = getattr(segmentation, "working_eigenvectors", None)
    r = v if small is None else np.asarray(small)
    vmax = tuple(render.robust_vmax(r[..., j]) for j in range(r.shape[-1])) if r.ndim == 3 \
        else ()
    return Result(segmentation, vmax, seconds, preview,
                  tuple(getattr(segmentation, "unplaced_labels", ())))


class ResultCache:
    """Least-recently-used results by tag, at most ``max_bytes`` (the newest is always kept)."""

    def __init__(self, max_bytes: int = CACHE_BYTES) -> None:
        self.max_bytes = max_bytes
        self._items: OrderedDict[Hashable, Result] = OrderedDict()

    def get(self, tag: Hashable) -> Result | None:
        r = self._items.get(tag)
        if r is not None:
            self._items.move_to_end(tag)
        return r

    def put(self, tag: Hashable, result: Result) -> None:
        self._items[tag] = result
        self._items.move_to_end(tag)
        while len(self._items) > 1 and self.nbytes > self.max_bytes:
            self._items.popitem(last=False)

    @property
    def nbytes(self) -> int:
        return sum(r.nbytes for r in self._items.values())

    def __len__(self) -> int:
        return len(self._items)

    def clear(self) -> None:
        self._items.clear()


class _Signals(QObject):
    # Emitted from the worker thread; Qt queues them to the receiver's (GUI) thread.
    finished = Signal(int, object, object)  # generation, tag, Result
    preview = Signal(int, object, object)  # generation, tag, Result
    failed = Signal(int, object, str)  # generation, tag, message
    cancelled = Signal(int, object)  # generation, tag


def wants_preview(session: Any, slow: bool) -> bool:
    """Whether to ask ``session`` for a preview: a large working copy, and a preview that was
    not ``slow`` (:data:`PREVIEW_MAX_SHARE`) before."""
    shape = getattr(session, "working_shape", None)
    return not slow and shape is not None and int(np.prod(shape)) >= PREVIEW_MIN_PIXELS


class _SessionCache:
    """The live Session, rebuilt when the image, method or a setup option changes."""

    def __init__(self) -> None:
        self.key: tuple | None = None
        self.session: Any = None
        self.takes_preview = False
        self.preview_slow = False  # its last preview cost too much of the full solve

    def get(self, req: SolveRequest, setup: dict[str, Any]) -> Any:
        key = (req.image_token, req.method, tuple(sorted(setup.items())))
        if key != self.key:
            import segapp

            self.session = None  # free the old graph before building the new one
            self.session = segapp.Session(req.image, method=req.method, **setup)
            self.key = key
            self.takes_preview = "preview" in inspect.signature(self.session.update).parameters
            self.preview_slow = False
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
            emit(self.signals.cancelled, req.generation, req.tag)
            return
        t = time.perf_counter()
        try:
            setup, solve = split_options(req.method, dict(req.options))
            session = self.cache.get(req, setup)
            if self.cancel.is_set():
                raise Cancelled("superseded")
            previewed: list[float] = []
            if self.cache.takes_preview and wants_preview(session, self.cache.preview_slow):
                solve["preview"] = self._preview(t, previewed)
            seg = session.update(req.scribbles, cancel=self.cancel.is_set, **solve)
            seconds = time.perf_counter() - t
            if previewed and previewed[0] > PREVIEW_MAX_SHARE * seconds:
                self.cache.preview_slow = True
            result = make_result(seg, seconds)
            # what the person waited for: the solve and the result made ready to show
            result = replace(result, seconds=time.perf_counter() - t)
        except Cancelled:
            emit(self.signals.cancelled, req.generation, req.tag)
        except SegappError as exc:  # includes InvalidInputError, SolverError
            self.cache.key = None  # a failed session may hold half-updated state
            emit(self.signals.failed, req.generation, req.tag, str(exc))
        except MemoryError:
            self.cache.key, self.cache.session = None, None
            emit(self.signals.failed, req.generation, req.tag,
                 "not enough memory to segment this image")
        except Exception as exc:  # a bug: report it in the window, log the traceback
            log.error("segmentation failed:\n%s", traceback.format_exc())
            self.cache.key = None
            emit(self.signals.failed, req.generation, req.tag,
                 f"internal error ({type(exc).__name__}: {exc})")
        else:
            emit(self.signals.finished, req.generation, req.tag, result)

    def _preview(self, t0: float, took: list[float]) -> Callable[[Any], None]:
        def forward(seg: Any) -> None:
            took.append(time.perf_counter() - t0)
            if not self.cancel.is_set():
                emit(self.signals.preview, self.req.generation, self.req.tag,
                     make_result(seg, time.perf_counter() - t0, preview=True))
        return forward


class SegmentationWorker(QObject):
    """Runs segmentations off the GUI thread; newest request wins; results cached.

    Signals
    -------
    busy(bool)
        A solve is queued or running (True) / nothing is pending (False).
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
        self._sessions = _SessionCache()
        self.results = ResultCache(cache_bytes)
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
        return self._generation

    @property
    def is_busy(self) -> bool:
        return self._running > 0 or self._timer.isActive()

    def tag(self, strokes_key: Hashable, method: str, options: dict[str, Any]) -> tuple:
        """What identifies a result: image, stroke set, method and options."""
        return (self._image_token, strokes_key, method, tuple(sorted(options.items())))

    # -- requests --------------------------------------------------------------------------
    def request(self, scribbles: np.ndarray, strokes_key: Hashable, method: str,
                options: dict[str, Any], debounce: bool = True) -> tuple:
        """Ask for a segmentation of ``scribbles`` (copied now); returns the request's tag.

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
        self._cancel.set()  # a newer edit cancels the running solve at once
        self._pending = {"scribbles": np.array(scribbles, dtype=np.int32, copy=True),
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
        req = SolveRequest(self._generation, p["tag"], self._image_token, self._image,
                           p["scribbles"], p["method"], p["options"])
        self._running += 1
        self._pool.start(_SolveJob(req, self._cancel, self._sessions, self._signals))

    # -- results (GUI thread) --------------------------------------------------------------
    def _job_done(self) -> None:
        self._running -= 1
        if not self.is_busy:
            emit(self.busy, False)

    def _on_finished(self, generation: int, tag: Hashable, result: Result) -> None:
        self._job_done()
        if tag[0] == self._image_token:
            self.results.put(tag, result)  # a superseded result may still be undone to
        if generation == self._generation:  # stale generations are not shown
            emit(self.resultReady, tag, result, False)

    def _on_preview(self, generation: int, tag: Hashable, result: Result) -> None:
        if generation == self._generation:
            emit(self.previewReady, tag, result)

    def _on_failed(self, generation: int, tag: Hashable, message: str) -> None:
        self._job_done()
        if generation == self._generation:
            emit(self.failed, tag, message)

    def _on_cancelled(self, generation: int, tag: Hashable) -> None:
        self._job_done()
        emit(self.cancelled, tag)
