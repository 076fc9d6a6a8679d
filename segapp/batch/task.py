"""One unit of batch work: segment one (image, scribbles) pair and write its outputs.

:func:`segment_pair` is what runs in a worker (in-process, in a process pool, or on a Dask
worker), so it is a plain top-level function of a picklable :class:`Task` and returns a plain
``dict`` (one report row). It never raises for a problem with its image: every exception
becomes a row with ``status="failed"`` and a one-line ``error``, so one bad image never stops
the batch.

Resources per task are bounded the same way as ``segapp segment``: images above
``max_pixels`` (default 500 000) are solved on an area-averaged working copy
(:mod:`segapp.inputs.resolution`), and BLAS runs on one thread (threadpoolctl), so a worker with one
task slot uses one core and the memory of one working-resolution solve.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..io.opening import DEFAULT_PIXEL_LIMIT
from .dataset import DatasetOptions

__all__ = ["Task", "ROW_FIELDS", "segment_pair", "failed_row", "short_error",
           "worker_peak_mb"]

#: Report columns, in order (CSV header; JSON rows carry the same keys).
ROW_FIELDS: tuple[str, ...] = (
    "image", "scribbles", "output", "overlay", "status", "labels", "width", "height",
    "working_width", "working_height", "seconds", "iterations", "converged", "worker",
    "worker_peak_mb", "error")


@dataclass(frozen=True)
class Task:
    """Everything a worker needs for one pair (paths must be visible to the worker).

    Attributes
    ----------
    image, scribbles : str
        Input files.
    output : str
        Label map PNG to write (pixel value = label id).
    overlay : str or None
        Colour overlay PNG to write as well.
    method : str
        Segmentation method name.
    options : dict
        Method options plus ``max_pixels`` (as for :func:`segapp.segment`).
    pixel_limit : int or None
        Files declaring more pixels are refused before decoding (as ``segment --pixel-limit``).
    dataset : DatasetOptions
        The label schema and the dataset exports (``--labels``, ``--indexed``, ``--soft``).
    page : int or None
        Page of a multi-page image (and scribble file), as ``segment --page``.
    """

    image: str
    scribbles: str
    output: str
    overlay: str | None = None
    method: str = "fastge"
    options: dict[str, Any] = field(default_factory=dict)
    pixel_limit: int | None = DEFAULT_PIXEL_LIMIT
    dataset: DatasetOptions = field(default_factory=DatasetOptions)
    page: int | None = None


def _row(task: Task) -> dict[str, Any]:
    row: dict[str, Any] = dict.fromkeys(ROW_FIELDS, "")
    row.update(image=task.image, scribbles=task.scribbles, output=task.output,
               overlay=task.overlay or "", worker=f"{socket.gethostname()}:{os.getpid()}")
    return row


#: Set by :class:`~segapp.batch.executors.SerialExecutor`'s Ctrl+C handler: the running
#: solve stops at its next cancellation check and the task raises KeyboardInterrupt.
INTERRUPTED = threading.Event()


def short_error(row: dict[str, Any]) -> str:
    """A failed row's error without the leading image path (lines that name the image
    already would repeat it)."""
    error, image = str(row.get("error", "")), str(row.get("image", ""))
    return error[len(image) + 2:] if image and error.startswith(f"{image}: ") else error


def failed_row(task: Task, message: str) -> dict[str, Any]:
    """The report row of a task that could not run (or whose worker died)."""
    row = _row(task)
    row.update(status="failed", error=" ".join(str(message).split()) or "failed", worker="")
    return row


def worker_peak_mb() -> float:
    """Peak resident memory of this process so far, in MiB (0 where not measurable).

    Linux: ``VmHWM`` of ``/proc/self/status``. Not ``ru_maxrss``: a process started by fork +
    exec (a spawned pool or Dask worker) inherits in it its parent's resident size at the
    fork (see ``benchmarks/large.py``). Elsewhere ``ru_maxrss`` is the fallback.
    """
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return round(int(line.split()[1]) / 1024, 1)
    except (OSError, ValueError, IndexError):
        pass
    try:
        import resource
    except ImportError:  # Windows
        return 0.0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(peak / (1024 * 1024 if sys.platform == "darwin" else 1024), 1)


def segment_pair(task: Task) -> dict[str, Any]:
    """Segment one pair and write its outputs atomically; return its report row.

    Parameters
    ----------
    task : Task

    Returns
    -------
    dict
        Keys :data:`ROW_FIELDS`; ``status`` is ``"ok"`` or ``"failed"`` (then ``error`` says
        why in one line: unreadable file, size mismatch, solver failure, unwritable output...).
    """
    from threadpoolctl import threadpool_limits

    from ..solve.direct import factor_threads_at_most

    t0 = time.perf_counter()
    row = _row(task)
    try:
        # one thread per worker: the pool's processes hold the cores
        with threadpool_limits(limits=1), factor_threads_at_most(1), \
                _malloc_for_large_arrays():
            _run(task, row)
        row["status"] = "ok"
    except MemoryError:
        row.update(status="failed", error="out of memory (try a smaller --max-pixels)")
    except Exception as exc:  # one bad image must never stop the batch
        if INTERRUPTED.is_set():      # Ctrl+C cancelled the solve: stop the batch instead
            raise KeyboardInterrupt from None
        from ..errors import SegappError
        text = " ".join(str(exc).split())
        if not isinstance(exc, (SegappError, OSError)):  # a bug: say what kind
            text = f"{type(exc).__name__}: {text}"
        row.update(status="failed", error=text or type(exc).__name__)
    row["seconds"] = round(time.perf_counter() - t0, 3)
    row["worker_peak_mb"] = worker_peak_mb()
    return row


# glibc mallopt parameters (malloc.h)
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3


@contextlib.contextmanager
def _malloc_for_large_arrays() -> Iterator[None]:
    """Undo, for one task, the aggressive memory trimming that Dask gives its workers.

    Dask's nanny starts workers with ``MALLOC_TRIM_THRESHOLD_=65536`` so that freed memory
    goes back to the OS. Setting that parameter also turns off glibc's dynamic mmap
    threshold, so every array above 128 KiB is mmapped and page-faulted afresh on each
    allocation. Measured on the bundled samples with the variable set: 20× the minor page
    faults of a segmentation (chelsea: 398 425 instead of 19 605) and 1.4× its time (coffee,
    means of three interleaved runs on the loaded 2-core machine: 11.7 s, against 8.2 s without
    the variable and 7.7 s with it and this context). During the task the mmap
    threshold is 32 MiB (the dynamic threshold's ceiling) and the heap is not trimmed below
    64 MiB; afterwards the environment's trim threshold is restored and the heap trimmed once,
    so the worker still returns the memory between tasks. Only where the variable is set and
    the C library is glibc.
    """
    trim = os.environ.get("MALLOC_TRIM_THRESHOLD_")
    libc = _glibc() if trim is not None else None
    if libc is None:
        yield
        return
    libc.mallopt(_M_MMAP_THRESHOLD, 32 << 20)
    libc.mallopt(_M_TRIM_THRESHOLD, 64 << 20)
    try:
        yield
    finally:
        try:
            libc.mallopt(_M_TRIM_THRESHOLD, int(trim))
        except ValueError:
            pass
        libc.malloc_trim(0)


def _glibc() -> Any:
    import ctypes
    import platform
    if platform.libc_ver()[0] != "glibc":
        return None
    try:
        libc = ctypes.CDLL("libc.so.6")
        return libc if hasattr(libc, "mallopt") and hasattr(libc, "malloc_trim") else None
    except OSError:
        return None


def _run(task: Task, row: dict[str, Any]) -> None:
    import numpy as np

    from .. import io
    from ..io import render
    from ..session import Session

    outputs = [task.output] + ([task.overlay] if task.overlay else [])
    io.check_distinct(outputs, [task.image, task.scribbles])
    for out in outputs:     # a device, FIFO or folder in the way fails now, not after the solve
        if Path(out).exists():
            io.check_writable(out)
    from ..cli.exports import check_painted, scribble_options
    from .dataset import task_outputs

    schema = task.dataset.parsed_schema()
    image = io.read_image(task.image, pixel_limit=task.pixel_limit, page=task.page)
    scribbles = io.scribbles_for_page(task.scribbles, image.shape[:2], task.page,
                                      pixel_limit=task.pixel_limit, **scribble_options(schema))
    check_painted(schema, np.unique(scribbles[scribbles > 0]), task.scribbles)
    row["height"], row["width"] = image.shape[:2]
    options = dict(task.options)
    session = Session(image, method=task.method, **options)
    row["working_height"], row["working_width"] = session.working_shape
    result = session.update(scribbles, cancel=INTERRUPTED)
    diag = result.diagnostics
    row["iterations"] = getattr(diag, "iterations", "")
    row["converged"] = getattr(diag, "converged", "")
    row["labels"] = " ".join(str(i) for i in result.label_ids)
    if Path(task.output).parent != Path(""):
        Path(task.output).parent.mkdir(parents=True, exist_ok=True)
    # One set: on a full disk the label map does not stay without its overlay (a rerun would
    # take the image as done).
    items = task_outputs(task.dataset, Path(task.output), result, schema)
    if task.overlay:
        colors = None if schema is None else schema.colors()
        items.append((task.overlay, render.to_rgb8(render.overlay(image, result.labels,
                                                                  colors=colors))))
    io.write_pngs_atomic(items)
