"""Where batch tasks run: in this process, in a local process pool, or on a Dask cluster.

Every executor has the same small interface — :meth:`Executor.map_unordered` yields
``(task, row)`` pairs as tasks finish, keeping at most ``2 × slots`` tasks submitted at once,
so memory on the client stays flat for any number of images and Ctrl-C has little to cancel.

* :class:`SerialExecutor` — one task after another in this process (``--workers 1``).
* :class:`PoolExecutor` — :class:`concurrent.futures.ProcessPoolExecutor` with the ``spawn``
  start method (no inherited threads or locks; what works on every platform). A worker that
  dies (killed, out of memory) breaks a Python process pool: the pool is rebuilt and the
  tasks that were in flight are run again, one at a time, so that a task whose worker dies
  while it runs alone is known to be the cause; after :data:`MAX_ATTEMPTS` such deaths it is
  reported as failed and the batch goes on.
* :class:`DaskExecutor` — ``dask.distributed``: a ``Client`` on a scheduler address, or on a
  ``LocalCluster`` of ``workers`` single-threaded worker processes it starts itself. Dask's
  scheduler re-runs the tasks of a worker that dies (up to its ``allowed-failures``, 3 by
  default; then :class:`distributed.scheduler.KilledWorker`, which becomes a failed row).
  dask is an optional dependency (``pip install 'segapp[batch]'``).
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import multiprocessing
import os
import secrets
import signal
import sys
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

from ..errors import SegappError
from .task import INTERRUPTED, Task, failed_row

__all__ = ["Executor", "SerialExecutor", "PoolExecutor", "DaskExecutor", "MAX_ATTEMPTS",
           "usable_cpus"]

Row = dict[str, Any]
TaskFn = Callable[[Task], Row]

#: A task whose worker process died this many times (running alone) is reported as failed.
MAX_ATTEMPTS = 3


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity mask where the OS has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _import_segapp() -> int:
    """Warm-up task: one tiny segmentation, so every lazy import happens now, not in the
    first image's time; returns the worker's pid."""
    import numpy as np

    from ..session import segment
    image = np.zeros((8, 8), np.float32)
    image[:, 4:] = 1
    strokes = np.zeros((8, 8), np.int32)
    strokes[:, 0], strokes[:, 7] = 1, 2
    segment(image, strokes)
    return os.getpid()


class Executor(ABC):
    """Runs :class:`Task` s; use as a context manager (``close`` releases workers)."""

    #: Short name for reports and benchmarks.
    name = "executor"
    #: How many tasks can run at the same time.
    slots = 1

    @abstractmethod
    def map_unordered(self, fn: TaskFn, tasks: Iterable[Task]) -> Iterator[tuple[Task, Row]]:
        """Run ``fn(task)`` for every task; yield ``(task, row)`` in completion order."""

    def warm_up(self) -> None:
        """Start every worker and import segapp in it (so timings exclude start-up)."""

    def describe(self) -> str:
        return f"{self.name} ({self.slots} worker{'s' if self.slots != 1 else ''})"

    def close(self) -> None:
        """Stop the workers this executor started."""

    def __enter__(self) -> "Executor":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class SerialExecutor(Executor):
    """Run tasks one by one in this process."""

    name = "serial"

    def map_unordered(self, fn: TaskFn, tasks: Iterable[Task]) -> Iterator[tuple[Task, Row]]:
        with _sigint_cancels():
            for task in tasks:
                row = fn(task)
                if INTERRUPTED.is_set():
                    raise KeyboardInterrupt
                yield task, row
            if INTERRUPTED.is_set():      # pressed after the last task started
                raise KeyboardInterrupt

    def warm_up(self) -> None:
        _import_segapp()


class PoolExecutor(Executor):
    """A local pool of ``workers`` processes (the default of ``segapp batch``).

    Parameters
    ----------
    workers : int
        Number of processes (each runs one task at a time).
    """

    name = "process pool"

    def __init__(self, workers: int) -> None:
        if workers < 1:
            raise SegappError(f"--workers must be at least 1, got {workers}")
        self.slots = workers
        self._pool = self._new_pool()

    def _new_pool(self) -> cf.ProcessPoolExecutor:
        return cf.ProcessPoolExecutor(max_workers=self.slots,
                                      mp_context=multiprocessing.get_context("spawn"),
                                      initializer=_init_worker, initargs=(os.getpid(),))

    def warm_up(self) -> None:
        # One blocking round per worker: a pool starts a process only when none is idle.
        with _sigint_ignored():
            futures = [self._pool.submit(_import_segapp) for _ in range(self.slots)]
        for f in futures:
            f.result()

    def map_unordered(self, fn: TaskFn, tasks: Iterable[Task]) -> Iterator[tuple[Task, Row]]:
        try:
            yield from self._map(fn, tasks)
        except KeyboardInterrupt:
            self._stop_workers()   # they ignore SIGINT: stop them now, not after their task
            raise

    def _stop_workers(self) -> None:
        """Terminate the pool's processes (their half-written temporaries are removed by
        the next run) and drop the queued tasks."""
        for process in list((getattr(self._pool, "_processes", None) or {}).values()):
            with contextlib.suppress(Exception):
                process.terminate()
        self._pool.shutdown(wait=True, cancel_futures=True)

    def _map(self, fn: TaskFn, tasks: Iterable[Task]) -> Iterator[tuple[Task, Row]]:
        pending = iter(tasks)
        deaths: dict[int, int] = {}            # id(task) -> times its worker died under it
        suspects: list[Task] = []              # in flight when a worker died
        running: dict[cf.Future, Task] = {}
        while True:
            # Suspects run alone, so that a death can be blamed on the one task running.
            with _sigint_ignored():          # a submit may start a worker process
                if suspects:
                    if not running:
                        task = suspects.pop(0)
                        running[self._pool.submit(fn, task)] = task
                else:
                    for task in _take(pending, 2 * self.slots - len(running)):
                        running[self._pool.submit(fn, task)] = task
            if not running:
                return
            done, _ = cf.wait(running, return_when=cf.FIRST_COMPLETED)
            if not any(_broken(f) for f in done):
                for future in done:
                    task = running.pop(future)
                    yield task, _row_of(future, task)
                continue
            # A worker died and took the pool with it: start a new pool; tasks that finished
            # keep their rows, the others become suspects (charged only if they ran alone).
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = self._new_pool()
            lost = [t for f, t in running.items()
                    if not (f.done() and not f.cancelled() and not _broken(f))]
            for future, task in running.items():
                if not any(task is t for t in lost):
                    yield task, _row_of(future, task)
            running.clear()
            for task in lost:
                if len(lost) == 1:
                    n = deaths[id(task)] = deaths.get(id(task), 0) + 1
                    if n >= MAX_ATTEMPTS:
                        yield task, failed_row(
                            task, f"worker process died {n} times on this image (killed or "
                                  f"out of memory; try a smaller --max-pixels)")
                        continue
                suspects.append(task)

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


class DaskExecutor(Executor):
    """Tasks on a ``dask.distributed`` cluster.

    Parameters
    ----------
    address : str or None
        Scheduler address (``tcp://host:8786``); None starts a ``LocalCluster`` of
        ``workers`` processes with one thread each.
    workers : int
        Size of the local cluster (ignored with an address).
    timeout : float
        Seconds to wait for the scheduler.

    Raises
    ------
    segapp.errors.SegappError
        dask.distributed is not installed, or the scheduler cannot be reached.
    """

    name = "dask"

    def __init__(self, address: str | None, workers: int = 2, timeout: float = 30.0) -> None:
        try:
            import dask  # noqa: F401
            import distributed  # noqa: F401
        except ImportError:
            raise SegappError("--scheduler needs dask.distributed: pip install 'segapp[batch]' "
                              "(without --scheduler a local process pool is used)") from None
        self._cluster = None
        try:
            with _sigint_ignored():   # the LocalCluster's workers never see Ctrl+C
                self._connect(address, workers, timeout)
        except BaseException:         # e.g. a failed start: stop what did start
            self.close()
            raise
        self.slots = max(1, sum(self.client.nthreads().values()))

    def _connect(self, address: str | None, workers: int, timeout: float) -> None:
        import dask
        from distributed import Client, LocalCluster
        try:
            if address is None:
                if workers < 1:
                    raise SegappError(f"--workers must be at least 1, got {workers}")
                # Dask's statistical profiler samples the task thread every 10 ms: measured
                # 1.15-1.4x the time per task here (8 pairs, two interleaved runs).
                with (dask.config.set({"distributed.worker.profile.enabled": False}),
                      _quiet_workers()):
                    self._cluster = LocalCluster(n_workers=workers, threads_per_worker=1,
                                                 processes=True, dashboard_address=None)
                self.name = "dask LocalCluster"
                self.client = Client(self._cluster, timeout=timeout)
            else:
                self.name = f"dask scheduler {address}"
                self.client = Client(address, timeout=timeout)
        except SegappError:
            raise
        except (OSError, ValueError) as exc:  # unreachable or malformed address
            self.close()
            raise SegappError(f"cannot connect to the Dask scheduler {address}: "
                              f"{' '.join(str(exc).split())}") from None

    @property
    def scheduler_address(self) -> str:
        return self.client.scheduler.address

    def warm_up(self) -> None:
        self.client.run(_import_segapp)
        self.slots = max(1, sum(self.client.nthreads().values()))

    def map_unordered(self, fn: TaskFn, tasks: Iterable[Task]) -> Iterator[tuple[Task, Row]]:
        from distributed import as_completed
        pending = iter(tasks)
        live: dict[str, tuple[Task, Any]] = {}      # future key -> (task, future)
        completed = as_completed()
        try:
            while True:
                # Keep every worker thread busy plus one queued task each; counted afresh
                # each time, so workers that join (or leave) the cluster mid-batch are used.
                window = 2 * max(1, sum(self.client.nthreads().values()))
                for task in _take(pending, window - len(live)):
                    # Keys name the image (dashboard, logs): segment-STEM-<random>.
                    key = f"segment-{Path(task.output).stem}-{secrets.token_hex(4)}"
                    future = self.client.submit(fn, task, key=key)
                    live[future.key] = (task, future)
                    completed.add(future)
                if not live:
                    return
                future = next(completed)
                task, _ = live.pop(future.key)
                try:
                    row = future.result()
                except Exception as exc:  # KilledWorker, a worker without segapp, ...
                    row = failed_row(task, f"{type(exc).__name__}: {exc}")
                future.release()
                yield task, row
        finally:
            if live:  # interrupted: drop what is still queued or running
                self._quiet_shutdown()
                self.client.cancel([f for _, f in live.values()])

    @staticmethod
    def _quiet_shutdown() -> None:
        """Cancelled tasks and workers killed while computing are expected now: Dask's
        warnings about them would bury the one-line message."""
        import logging
        logging.getLogger("distributed").setLevel(logging.ERROR)

    def close(self) -> None:
        client = getattr(self, "client", None)
        if client is not None:
            client.close()
        if self._cluster is not None:
            self._cluster.close()
            self._cluster = None


@contextlib.contextmanager
def _sigint_cancels() -> Iterator[None]:
    """While tasks run in this process, Ctrl+C sets :data:`~segapp.batch.task.INTERRUPTED`
    (the solve polls it and stops) instead of raising KeyboardInterrupt wherever Python
    happens to be — in a ``__del__`` it would be printed and swallowed, and the batch would
    go on. The task then raises KeyboardInterrupt itself."""
    INTERRUPTED.clear()
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.signal(signal.SIGINT, lambda *_: INTERRUPTED.set())
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)
        INTERRUPTED.clear()


#: Dask's logging level of the ``distributed`` loggers, as its config reads it from the
#: environment (``logging.distributed``) when a process imports ``distributed``.
QUIET_WORKERS_ENV = "DASK_LOGGING__DISTRIBUTED"


@contextlib.contextmanager
def _quiet_workers() -> Iterator[None]:
    """Start a LocalCluster's worker processes with Dask's own logging at "critical".

    Their stderr is the terminal's. On Ctrl+C the scheduler closes while workers still send
    heartbeats, and a worker then logs "Failed to communicate with scheduler during
    heartbeat" at ERROR with a traceback, after the one-line message (seen under load on
    2 cores). What a worker does wrong reaches the batch as the task's own failed row;
    Dask's messages about it only repeat that. LocalCluster's ``silence_logs`` sets the
    level of the log handlers for the life of the ``Worker`` object (it is undone at the end
    of its ``close``); the logger's level from the environment holds for the whole worker
    process. A spawned process reads it when it imports ``distributed``, so the variable is
    set while the cluster starts, then removed. A value the user set is kept.
    """
    if QUIET_WORKERS_ENV in os.environ:
        yield
        return
    os.environ[QUIET_WORKERS_ENV] = "critical"
    try:
        yield
    finally:
        os.environ.pop(QUIET_WORKERS_ENV, None)


@contextlib.contextmanager
def _sigint_ignored() -> Iterator[None]:
    """Ignore SIGINT in this process while worker processes are started.

    A Ctrl+C goes to the terminal's whole process group. Processes started meanwhile inherit
    the ignored disposition across fork and exec (a blocked mask or a Python handler would
    not survive the spawn), so the workers never print a KeyboardInterrupt traceback: this
    process handles the interrupt and stops them. For the pool a submit lasts milliseconds;
    a Ctrl+C during a LocalCluster's start (seconds) is lost — press it again. No-op off the
    main thread (only it may set handlers).
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)


def _init_worker(parent: int) -> None:
    """A pool worker ignores Ctrl+C (the terminal sends it to the whole process group: the
    main process handles it and stops the workers, instead of each printing a traceback)
    and ends with its parent (:func:`end_with_parent`)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    end_with_parent(parent)


#: Seconds between the watchdog's looks at the parent process.
WATCHDOG_SECONDS = 1.0


def end_with_parent(parent: int) -> None:
    """End this process when the process ``parent`` ends, however it ends (kill -9 too).

    A pool worker outlived a killed ``segapp batch`` (158–183 MB each, once still running
    after 14 minutes) and kept multiprocessing's resource tracker alive. On Linux the kernel
    sends SIGKILL at the parent's death (``prctl(PR_SET_PDEATHSIG)``, through ctypes; it
    follows the thread that started the worker, which is the batch's main thread). Everywhere,
    also a daemon thread that looks every :data:`WATCHDOG_SECONDS` whether the worker has been
    re-parented (its parent process id changed) and then ends it with ``os._exit``.
    """
    if sys.platform.startswith("linux"):
        with contextlib.suppress(Exception):
            import ctypes
            libc = ctypes.CDLL(None, use_errno=True)
            PR_SET_PDEATHSIG = 1
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:     # the parent died before the signal was asked for
        os._exit(1)

    def watch() -> None:
        while True:
            time.sleep(WATCHDOG_SECONDS)
            if os.getppid() != parent:
                os._exit(1)

    threading.Thread(target=watch, name="segapp-end-with-parent", daemon=True).start()


def _broken(future: cf.Future) -> bool:
    return (future.done() and not future.cancelled()
            and isinstance(future.exception(), BrokenProcessPool))


def _row_of(future: cf.Future, task: Task) -> Row:
    """The task's row, or a failed row if the worker could not even return one."""
    try:
        return future.result()
    except Exception as exc:  # e.g. a result that cannot be pickled
        return failed_row(task, f"{type(exc).__name__}: {exc}")


def _take(it: Iterator[Task], n: int) -> list[Task]:
    out = []
    for _ in range(max(0, n)):
        task = next(it, None)
        if task is None:
            break
        out.append(task)
    return out
