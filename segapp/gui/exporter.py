"""Write exports off the GUI thread, with progress, cancellation and a list of what failed.

An export of a 12-megapixel image (overlay, masks, heat maps) takes tens of seconds of numpy
and PNG work. :class:`Exporter` runs a planned export (:func:`segapp.gui.files.plan_export`)
on its own one-thread pool: each file is computed and written atomically
(:func:`segapp.io.write_png_atomic`), ``progress`` is reported per file and cancellation is
checked between the drawing and the writing of each one (a cancelled or failed file leaves no
temporary file: the atomic write removes it). ``finished`` names the files written and the
ones that were not.
"""

from __future__ import annotations

import logging
import threading
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal

from .. import io
from ..errors import SegappError
from .files import ExportItem
from .qtcompat import emit

log = logging.getLogger(__name__)


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


class _Signals(QObject):
    progress = Signal(int, int, str)  # files done, files planned, what is being written
    finished = Signal(object)  # ExportReport


class _ExportJob(QRunnable):
    def __init__(self, items: list[ExportItem], cancel: threading.Event, signals: _Signals,
                 on_written: Callable[[Path], None]) -> None:
        super().__init__()
        self.items, self.cancel, self.signals, self.on_written = items, cancel, signals, on_written

    def run(self) -> None:
        report = ExportReport()
        n = len(self.items)
        for i, item in enumerate(self.items):
            if self.cancel.is_set():
                report.cancelled = True
                break
            emit(self.signals.progress, i, n, item.what)
            try:
                pixels = item.make()
                if self.cancel.is_set():
                    report.cancelled = True
                    break
                io.write_png_atomic(item.path, pixels, overwrite=True)
            except (SegappError, OSError) as exc:
                report.error = str(exc)
                break
            except MemoryError:
                report.error = f"not enough memory for {item.what}"
                break
            except Exception as exc:  # a bug: say so, log the traceback
                log.error("export failed:\n%s", traceback.format_exc())
                report.error = f"internal error ({type(exc).__name__}: {exc})"
                break
            report.written.append(item.path)
            self.on_written(item.path)
        report.missing = [it.path for it in self.items if it.path not in report.written]
        emit(self.signals.progress, len(report.written), n, "")
        emit(self.signals.finished, report)


class Exporter(QObject):
    """Runs one export at a time in the background.

    Signals
    -------
    progress(int done, int total, str what)
    finished(object ExportReport)
    """

    progress = Signal(int, int, str)
    finished = Signal(object)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._pool = QThreadPool(self)
        self._pool.setMaxThreadCount(1)
        self._signals = _Signals(self)
        self._signals.progress.connect(self.progress)
        self._signals.finished.connect(self._on_finished)
        self._cancel = threading.Event()
        self.running = False

    def start(self, items: list[ExportItem],
              on_written: Callable[[Path], None] = lambda _p: None) -> None:
        """Write ``items``; ``on_written(path)`` is called from the export thread per file."""
        if self.running:
            raise RuntimeError("an export is running")
        self.running = True
        self._cancel = threading.Event()
        self._pool.start(_ExportJob(list(items), self._cancel, self._signals, on_written))

    def cancel(self) -> None:
        self._cancel.set()

    def wait_idle(self, msecs: int = 30000) -> bool:
        return self._pool.waitForDone(msecs)

    def _on_finished(self, report: ExportReport) -> None:
        self.running = False
        emit(self.finished, report)
