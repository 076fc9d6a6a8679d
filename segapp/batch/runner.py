"""Run a batch: build the tasks, skip finished ones, collect rows, keep the report current."""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import SegappError
from ..io import DEFAULT_PIXEL_LIMIT, write_bytes_atomic
from ..io.atomic import _reason, remove_stale_temporaries, resolve_output
from .dataset import DatasetOptions
from .executors import Executor, SerialExecutor
from .pairing import Pair, Pairing
from .progress import Progress
from .report import REPORT_NAMES, read_previous, write_report
from .task import Task, failed_row, segment_pair

__all__ = ["BatchResult", "run_batch", "output_paths", "MAX_EXIT_STATUS"]

#: Exit statuses of ``segapp batch`` count failed images up to this value.
MAX_EXIT_STATUS = 100

Row = dict[str, Any]

# A file written and removed in the output folder before the batch starts: a read-only,
# permission-less or full folder fails here, once. 64 KiB: a label map's order of size.
_PROBE = ".segapp-write-test"
_PROBE_BYTES = 64 * 1024


@dataclass
class BatchResult:
    """What a batch did.

    Attributes
    ----------
    rows : list of dict
        One report row per image (see :mod:`segapp.batch.report`).
    seconds : float
        Wall time of the run, start-up of the workers included.
    executor : str
        Where the tasks ran.
    """

    rows: list[Row] = field(default_factory=list)
    seconds: float = 0.0
    executor: str = ""

    def count(self, status: str) -> int:
        return sum(r["status"] == status for r in self.rows)

    @property
    def failed(self) -> int:
        return self.count("failed")

    @property
    def exit_status(self) -> int:
        """Number of failed images, capped at :data:`MAX_EXIT_STATUS` (0 = all good)."""
        return min(self.failed, MAX_EXIT_STATUS)

    def summary(self) -> dict[str, Any]:
        done = self.count("ok") + self.failed
        return {"images": len(self.rows), **{s: self.count(s) for s in
                                             ("ok", "failed", "skipped", "no_scribbles")},
                "wall_seconds": round(self.seconds, 2), "executor": self.executor,
                "images_per_minute": round(60 * done / self.seconds, 2) if self.seconds else 0}


def output_paths(out_dir: Path, stem: str, overlay: bool) -> tuple[Path, Path | None]:
    """Label map ``OUT/stem.png`` and, with ``overlay``, ``OUT/stem_overlay.png``."""
    return out_dir / f"{stem}.png", (out_dir / f"{stem}_overlay.png" if overlay else None)


def run_batch(pairing: Pairing, out_dir: Path | str, *, method: str = "fastge",
              options: dict[str, Any] | None = None, overlay: bool = False,
              overwrite: bool = False, executor: Executor | None = None,
              progress: bool = True, on_result: Callable[[Row], None] | None = None,
              report_every: float = 30.0,
              pixel_limit: int | None = DEFAULT_PIXEL_LIMIT,
              dataset: DatasetOptions | None = None,
              page: int | None = None) -> BatchResult:
    """Segment every pair of ``pairing`` into ``out_dir``; write ``report.csv``/``.json``.

    Parameters
    ----------
    pairing : Pairing
        From :func:`segapp.batch.find_pairs`.
    out_dir : path
        Created if missing; must not be a folder of images or scribbles (outputs are
        ``stem.png`` and would overwrite them).
    method, options
        As for :func:`segapp.segment` (``options`` may hold ``max_pixels``).
    overlay : bool
        Also write ``stem_overlay.png``.
    overwrite : bool
        Recompute pairs whose outputs exist (default: skip them, which makes a batch
        resumable).
    executor : Executor, optional
        Default :class:`SerialExecutor`. Not closed here.
    progress : bool
        Show a progress bar on stderr.
    on_result : callable, optional
        Called with each finished row (in completion order).
    report_every : float
        Seconds between rewrites of the report while running.
    pixel_limit : int or None
        Image and scribble files declaring more pixels fail (checked before decoding, so a
        huge file cannot exhaust a worker's memory); None = no limit.
    dataset : DatasetOptions, optional
        The label schema and the per-image dataset exports (:mod:`segapp.batch.dataset`).
    page : int or None
        Page of multi-page images (and scribble files) to segment; without it such an image
        fails (:class:`segapp.io.MultiPageError`).

    Returns
    -------
    BatchResult

    Raises
    ------
    segapp.errors.SegappError
        ``out_dir`` cannot be created, does not take files (read-only, no permission, full)
        or is an input folder.
    OSError
        The final report cannot be written (the disk filled up during the batch).
    KeyboardInterrupt
        After writing the report of what finished.
    """
    t0 = time.perf_counter()
    # Tasks carry absolute paths: a cluster worker's working folder is not ours.
    out = Path(out_dir).absolute()
    _prepare_out_dir(out, pairing)
    remove_stale_temporaries(out)       # of earlier runs that were killed
    executor = executor or SerialExecutor()
    previous = read_previous(out)
    result = BatchResult(executor=executor.describe())
    tasks: list[Task] = []
    clashes = _output_clashes(pairing, out, overlay)
    for pair in pairing.pairs + pairing.clashes:
        labels_path, overlay_path = output_paths(out, pair.stem, overlay)
        task = Task(image=str(pair.image.absolute()),
                    scribbles=str(pair.scribbles.absolute()), output=str(labels_path),
                    overlay=str(overlay_path) if overlay_path else None, method=method,
                    options=dict(options or {}), pixel_limit=pixel_limit,
                    dataset=dataset or DatasetOptions(), page=page)
        if pair.image in clashes:   # refused before the batch starts: neither is written
            result.rows.append(failed_row(task, clashes[pair.image]))
        elif not overwrite and all(p.is_file() for p in (labels_path, overlay_path) if p):
            result.rows.append(_skipped_row(task, previous.get(task.image)))
        else:
            tasks.append(task)
    for image in pairing.unpaired:
        result.rows.append({"image": str(image.absolute()), "status": "no_scribbles",
                            "error": "no scribble file found"})

    bar = Progress(len(tasks), enabled=progress)
    last_write = time.perf_counter()
    try:
        for _, row in executor.map_unordered(segment_pair, tasks):
            result.rows.append(row)
            bar.update(row)
            if on_result is not None:
                on_result(row)
            if time.perf_counter() - last_write > report_every:
                result.seconds = time.perf_counter() - t0
                with contextlib.suppress(OSError):   # the final write reports the problem
                    write_report(out, result.rows, result.summary())
                last_write = time.perf_counter()
    finally:  # also on Ctrl-C: the report holds what finished, a rerun resumes the rest
        bar.close()
        result.seconds = time.perf_counter() - t0
        write_report(out, result.rows, {**result.summary(), "method": method,
                                        "options": _jsonable(options or {})})
    remove_stale_temporaries(out)
    return result


def _output_clashes(pairing: Pairing, out: Path, overlay: bool) -> dict[Path, str]:
    """Images whose outputs another image writes too, with the reason (one line each).

    Two images of one stem (``a.jpg``, ``a.tif``) write the same label map; with ``overlay``
    the overlay of ``x.png`` is the label map of an image ``x_overlay.png``.
    """
    writers: dict[str, list[Pair]] = {}
    for pair in pairing.pairs + pairing.clashes:
        for path in output_paths(out, pair.stem, overlay):
            if path is not None:
                writers.setdefault(path.name, []).append(pair)
    reasons: dict[Path, str] = {}
    for name, pairs in writers.items():
        if len(pairs) > 1:
            others = ", ".join(p.image.name for p in pairs)
            for pair in pairs:
                reasons.setdefault(pair.image, f"output {name} would be written by {others}: "
                                               "rename one of them (neither was segmented)")
    return reasons


def _prepare_out_dir(out: Path, pairing: Pairing) -> None:
    """Create ``out`` and prove it takes files, before any task runs (one clear error instead
    of one failed row per image and a report that cannot be written)."""
    try:
        out.mkdir(parents=True, exist_ok=True)
        if not out.is_dir():
            raise NotADirectoryError(errno.ENOTDIR, "not a folder")
    except OSError as exc:
        raise SegappError(f"cannot create output folder {out}: "
                          f"{(exc.strerror or str(exc)).lower()}") from None
    probe = out / f"{_PROBE}.{os.getpid()}.{secrets.token_hex(4)}"   # two batches, one folder
    try:
        write_bytes_atomic(probe, bytes(_PROBE_BYTES))   # permission, read-only, disk full
    except OSError as exc:
        raise SegappError(f"cannot write into output folder {out}: "
                          f"{_reason(exc)}") from None
    finally:
        with contextlib.suppress(OSError):
            probe.unlink()
    for name in REPORT_NAMES:    # a FIFO or device there would take the report: fail now
        try:
            resolve_output(out / name)
        except OSError as exc:
            raise SegappError(f"cannot write the report: {exc}") from None
    inputs = {p.image.parent.resolve() for p in pairing.pairs + pairing.clashes}
    inputs |= {p.scribbles.parent.resolve() for p in pairing.pairs + pairing.clashes}
    if out.resolve() in inputs:
        raise SegappError(f"output folder {out} holds the inputs: choose another (outputs "
                          f"are STEM.png and could overwrite images or scribbles)")


def _skipped_row(task: Task, before: Row | None) -> Row:
    row = failed_row(task, "")
    if before is not None and before.get("status") in ("ok", "skipped"):
        row.update({k: v for k, v in before.items() if k in row})
    row.update(status="skipped", error="")
    return row


def _jsonable(options: dict[str, Any]) -> dict[str, Any]:
    return {k: v if isinstance(v, (int, float, str, bool, type(None))) else repr(v)
            for k, v in options.items()}
