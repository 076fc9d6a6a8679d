"""Write exports off the GUI thread, with progress, cancellation and a list of what failed.

An export of a 12-megapixel image (overlay, masks, heat maps) takes tens of seconds of numpy
and PNG work. :class:`Exporter` runs a planned export (:func:`segapp.gui.files.plan_export`)
as a job of its own :class:`~segapp.gui.jobs.JobRunner`: each file is computed and written atomically
(:func:`segapp.io.write_png_atomic`), ``progress`` is reported per file and cancellation is
checked between the drawing and the writing of each one (a cancelled or failed file leaves no
temporary file: the atomic write removes it). ``finished`` names the files written and the
ones that were not.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from PySide6.QtCore import QObject, Signal

from .. import io
from ..errors import Cancelled
from .files import ExportItem
from .jobs import Job, JobRunner, failure_message
from .qtcompat import emit


@dataclass
class ExportReport:
    """What an export did: written files, files not written, and why it stopped early."""

    written: list[Path] = field(default_factory=list)
    missing: list[Path] = field(default_factory=list)
    cancelled: bool = False
    error: str = ""

    def message(self) -> str:
        """One line for the user."""
        folder = (self.written or self.missing or [Path(".")])[0].parent
        text = f"Exported {len(self.written)} file(s) to {folder}"
        if self.cancelled:
            text = f"Export cancelled after {len(self.written)} file(s)"
        elif self.error:
            text = f"Export failed: {self.error}"
        if self.missing:
            names = ", ".join(p.name for p in self.missing[:6])
            more = f" and {len(self.missing) - 6} more" if len(self.missing) > 6 else ""
            text += f"; not written: {names}{more}"
        return text


def write_export(items: list[ExportItem], job: Job,
                 on_written: Callable[[Path], None]) -> ExportReport:
    """Worker thread: compute and write each of ``items`` atomically, in turn, until one fails
    or the job is stopped (checked before each file is drawn and before it is written)."""
    report = ExportReport()
    for i, item in enumerate(items):
        try:
            job.token.progress(item.what, i, len(items))  # raises Cancelled once stopped
            pixels = item.make()
            job.token.check()
            io.write_png_atomic(item.path, pixels, overwrite=True)
        except Cancelled:
            report.cancelled = True
            break
        except Exception as exc:  # noqa: BLE001 - the report says which file and why
            report.error = failure_message(exc, memory=f"not enough memory for {item.what}")
            break
        report.written.append(item.path)
        on_written(item.path)
    report.missing = [it.path for it in items if it.path not in report.written]
    return report


class Exporter(QObject):
    """Runs one export at a time in the background (a :class:`~segapp.gui.jobs.JobRunner`
    job that is stopped, never cancelled: its report always comes).

    Signals
    -------
    progress(int done, int total, str what)
    finished(object ExportReport)
    """

    progress = Signal(int, int, str)
    finished = Signal(object)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.jobs = JobRunner(self)
        self._job: Job | None = None

    @property
    def running(self) -> bool:
        return self.jobs.running

    def start(self, items: list[ExportItem],
              on_written: Callable[[Path], None] = lambda _p: None) -> None:
        """Write ``items``; ``on_written(path)`` is called from the export thread per file."""
        if self.running:
            raise RuntimeError("an export is running")
        items, n = list(items), len(items)

        def finished(report: ExportReport) -> None:
            emit(self.progress, len(report.written), n, "")
            emit(self.finished, report)

        self._job = self.jobs.submit(
            "export", lambda job: write_export(items, job, on_written), done=finished,
            progress=lambda what, i, _n, _s: emit(self.progress, int(i), n, what),
            what="exporting")

    def cancel(self) -> None:
        """Stop after the file being written; the report lists the files not written."""
        if self._job is not None:
            self._job.stop()

    def wait_idle(self, msecs: int = 30000) -> bool:
        return self.jobs.wait_idle(msecs)
