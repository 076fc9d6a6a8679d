"""Background jobs of the window: the one mechanism behind solving, drawing, loading and
exporting, and its one "newest request wins" rule.

A :class:`JobRunner` owns one worker thread. Jobs given to it run there one at a time, in
the order they were submitted (:meth:`JobRunner.submit` with ``first`` puts one at the head);
the next waiting starts only once the one before has reported back *and* its callback has run
on the GUI thread, so a job may be prepared from what the one before left (a submit from
inside that callback may start the next at once: it is the callback's own choice).

A job's work gets the :class:`Job` itself: :attr:`Job.token` is a
:class:`segapp.cancel.CancelToken` (what the core already polls), whose ``progress(what,
done, total)`` reports reach the GUI thread (a repeat of the same stage within
:data:`PROGRESS_INTERVAL` is dropped); :meth:`Job.post` hands an intermediate value (a
preview) to the GUI thread. Its outcome reaches the GUI thread through a queued signal:
``done(value)``, ``failed(message)`` (one line for the user: :func:`failure_message`) or
``cancelled()``.

Newest wins — the rule. Every job has a *key* (what it is for: ``"solve"``, a layer's name,
``"open"``). A job is *live* from :meth:`~JobRunner.submit` until its outcome is delivered,
or until it is cancelled: by :meth:`~JobRunner.cancel`, or by a newer job of its key
(``supersede=True``, the default), or by :meth:`~JobRunner.supersede` (a newer request is on
its way, e.g. after a debounce). Cancelling sets the job's token (the running work stops at
its next check; the GUI thread never waits for it), calls its ``cancelled`` callback at once,
and from then on nothing of the job reaches its callbacks: no progress, no preview, no
result, except ``keep(value)``, which is given every finished value, live or not (undo
caches: a superseded answer may still be come back to). :meth:`Job.stop` only asks the work
to stop; the job stays live and reports what it did (an export's partial report).
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
import traceback
from collections import deque
from typing import Any, Callable, Hashable

from PySide6.QtCore import QCoreApplication, QEventLoop, QObject, QRunnable, QThreadPool, QTimer, Signal

from ..cancel import CancelToken
from ..errors import Cancelled, SegappError
from .qtcompat import emit

__all__ = ["Job", "JobRunner", "PROGRESS_INTERVAL", "failure_message"]

log = logging.getLogger(__name__)

#: Seconds between two progress reports of one stage of a job (a new stage is told at once).
PROGRESS_INTERVAL = 0.25

#: Errors whose own text is the message for the user (bad input, a file that cannot be read).
EXPECTED = (SegappError, OSError)


def failure_message(exc: BaseException, expected: tuple[type[BaseException], ...] = EXPECTED,
                    memory: str = "not enough memory") -> str:
    """One line for the user about ``exc``: its own text for an ``expected`` error,
    ``memory`` for a MemoryError, else "internal error (…)" with the traceback logged."""
    if isinstance(exc, expected):
        return str(exc) or type(exc).__name__
    if isinstance(exc, MemoryError):
        return memory
    log.error("background job failed:\n%s",
              "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)))
    return f"internal error ({type(exc).__name__}: {exc})"


def _never(*_args: Any) -> None:
    return None


class Job:
    """One piece of background work and where its outcome goes (see the module docstring).

    Attributes
    ----------
    key : hashable
        What the job is for; a newer job of the same key supersedes it.
    ticket : int
        Its number in its runner (increasing).
    what : str
        What it does, for the user ("Opening photo.jpg").
    token : CancelToken
        Polled by the work; set when the job is stopped or cancelled.
    event : threading.Event
        The token's flag (for code that takes an Event, as :class:`segapp.live.SolveRequest`).
    """

    def __init__(self, runner: "JobRunner", key: Hashable, ticket: int, what: str,
                 work: Callable[["Job"], Any], done: Callable[[Any], None],
                 failed: Callable[[str], None], cancelled: Callable[[], None],
                 progress: Callable[[str, float | None, float | None, float], None],
                 post: Callable[[Any], None], keep: Callable[[Any], None],
                 expected: tuple[type[BaseException], ...], memory: str) -> None:
        self.key, self.ticket, self.what, self.work = key, ticket, what, work
        self.on_done, self.on_failed, self.on_cancelled = done, failed, cancelled
        self.on_progress, self.on_post, self.on_keep = progress, post, keep
        self.expected, self.memory = expected, memory
        self._runner = runner
        self.event = threading.Event()
        self.token = CancelToken(self.event.is_set, self.report)
        self.started = 0.0  # perf_counter when the work began (worker thread)
        self._last = (0.0, "")

    def stop(self) -> None:
        """Ask the work to stop (its token is set); the job stays live and reports back."""
        self.event.set()

    def post(self, value: Any) -> None:
        """Worker thread: hand ``value`` to the ``post`` callback (if the job is still live)."""
        emit(self._runner._signals.posted, self, value)

    def report(self, what: str, done: float | None = None, total: float | None = None) -> None:
        """Worker thread: tell the ``progress`` callback the stage the work is in (what
        ``token.progress`` calls, without its check)."""
        now = time.perf_counter()
        if what == self._last[1] and now - self._last[0] < PROGRESS_INTERVAL:
            return
        self._last = (now, what)
        emit(self._runner._signals.progress, self, (what, done, total, now - self.started))

    def run(self) -> tuple[str, Any]:
        """Worker thread: the outcome, ``("done", value)``, ``("failed", message)`` or
        ``("cancelled", None)``."""
        self.started = time.perf_counter()
        if self.event.is_set():  # cancelled while it waited: never started
            return "cancelled", None
        try:
            return "done", self.work(self)
        except Cancelled:
            return "cancelled", None
        except Exception as exc:  # noqa: BLE001 - every failure becomes a message
            return "failed", failure_message(exc, self.expected, self.memory)

    def __repr__(self) -> str:
        return f"Job({self.key!r}, #{self.ticket}, {self.what!r})"


class _Signals(QObject):
    # emitted from the worker thread; Qt queues them to the runner's (GUI) thread
    finished = Signal(object, str, object)  # job, outcome, value
    progress = Signal(object, object)  # job, (what, done, total, seconds)
    posted = Signal(object, object)  # job, value


class _Runnable(QRunnable):
    def __init__(self, job: Job, signals: _Signals) -> None:
        super().__init__()
        self.job, self.signals = job, signals
        self.setAutoDelete(True)

    def run(self) -> None:
        outcome, value = self.job.run()
        emit(self.signals.finished, self.job, outcome, value)


class JobRunner(QObject):
    """Jobs run one at a time on one worker thread; newest wins per key (module docstring).

    Signals
    -------
    idle()
        The last live job has ended (done, failed or cancelled) and its callback has run.
    """

    idle = Signal()

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._pool = QThreadPool(self)
        self._pool.setMaxThreadCount(1)
        self._signals = _Signals(self)
        self._signals.finished.connect(self._on_finished)
        self._signals.progress.connect(self._on_progress)
        self._signals.posted.connect(self._on_posted)
        self._tickets = itertools.count(1)
        self._live: dict[int, Job] = {}  # by ticket, in the order they will run
        self._waiting: deque[Job] = deque()  # submitted, not started yet
        self._active: Job | None = None  # on the worker thread (perhaps cancelled)

    # -- asking --------------------------------------------------------------------------
    def submit(self, key: Hashable, work: Callable[[Job], Any], *,
               done: Callable[[Any], None] = _never, failed: Callable[[str], None] = _never,
               cancelled: Callable[[], None] = _never,
               progress: Callable[[str, float | None, float | None, float], None] = _never,
               post: Callable[[Any], None] = _never, keep: Callable[[Any], None] = _never,
               what: str = "", supersede: bool = True, first: bool = False,
               expected: tuple[type[BaseException], ...] = EXPECTED,
               memory: str = "not enough memory") -> Job:
        """Run ``work(job)`` on the worker thread; its outcome goes to ``done(value)``,
        ``failed(message)`` or ``cancelled()`` on the GUI thread while the job is live.

        ``supersede``: the live jobs of ``key`` are cancelled first (newest wins); else the
        job waits its turn behind them. ``first``: it runs before the jobs waiting (a job
        started again from its own callback). ``expected`` / ``memory``: how a failure is
        put to the user (:func:`failure_message`)."""
        if supersede:
            self.supersede(key)
        job = Job(self, key, next(self._tickets), what, work, done, failed, cancelled,
                  progress, post, keep, expected, memory)
        if first:
            self._live = {job.ticket: job, **self._live}
            self._waiting.appendleft(job)
        else:
            self._live[job.ticket] = job
            self._waiting.append(job)
        self._start_next()
        return job

    def supersede(self, key: Hashable) -> None:
        """A newer request for ``key`` is on its way: its live jobs are cancelled."""
        self._cancel([j for j in self._live.values() if j.key == key])

    def cancel(self) -> None:
        """Cancel every live job (their ``cancelled`` callbacks run now)."""
        self._cancel(list(self._live.values()))

    def _cancel(self, jobs: list[Job]) -> None:
        if not jobs:
            return
        for job in jobs:
            del self._live[job.ticket]
            job.stop()
        self._waiting = deque(j for j in self._waiting if self.is_live(j))  # never started
        for job in jobs:
            job.on_cancelled()
        if not self._live:
            emit(self.idle)

    # -- state -----------------------------------------------------------------------------
    def is_live(self, job: Job) -> bool:
        return self._live.get(job.ticket) is job

    def live(self, key: Hashable = None) -> list[Job]:
        """The live jobs (of ``key``, if given), in the order they run."""
        return [j for j in self._live.values() if key is None or j.key == key]

    @property
    def running(self) -> bool:
        """A live job is waiting or running."""
        return bool(self._live)

    @property
    def working(self) -> bool:
        """The worker thread holds a job, a cancelled one included (shutdown, tests)."""
        return self._active is not None

    def wait_idle(self, msecs: int = 30_000) -> bool:
        """Block until the worker thread has run every job submitted (shutdown, tests); the
        callbacks of those that finish meanwhile run here, as the next is started only after
        them. False on timeout."""
        end = time.perf_counter() + msecs / 1000
        while True:
            if not self._pool.waitForDone(max(0, int((end - time.perf_counter()) * 1000))):
                return False
            QCoreApplication.sendPostedEvents(self)  # the finished reports (queued to self)
            if self._active is None and not self._waiting:
                return True
            if time.perf_counter() > end:
                return False

    def wait_done(self, msecs: int = 120_000) -> bool:
        """Run the event loop until no live job is left (scripts, tests, a save the user
        waits for); False on timeout."""
        if not self._live:
            return True
        loop = QEventLoop()
        self.idle.connect(loop.quit)
        QTimer.singleShot(msecs, loop.quit)
        loop.exec()
        self.idle.disconnect(loop.quit)
        return not self._live

    # -- the worker thread's reports (GUI thread) ------------------------------------------
    def _start_next(self) -> None:
        if self._active is None and self._waiting:
            self._active = self._waiting.popleft()
            self._pool.start(_Runnable(self._active, self._signals))

    def _on_progress(self, job: Job, report: tuple) -> None:
        if self.is_live(job):
            job.on_progress(*report)

    def _on_posted(self, job: Job, value: Any) -> None:
        if self.is_live(job):
            job.on_post(value)

    def _on_finished(self, job: Job, outcome: str, value: Any) -> None:
        self._active = None
        live = self.is_live(job)
        if live:
            del self._live[job.ticket]
        try:
            if outcome == "done":
                job.on_keep(value)  # live or not: a superseded answer may be come back to
            if live:
                if outcome == "done":
                    job.on_done(value)
                elif outcome == "failed":
                    job.on_failed(value)
                else:
                    job.on_cancelled()
        finally:
            self._start_next()
            if live and not self._live:
                emit(self.idle)
