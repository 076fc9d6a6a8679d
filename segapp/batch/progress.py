"""Progress of a batch on stderr: a tqdm bar with rate and ETA, or plain lines without tqdm.

tqdm is an optional dependency (``segapp[batch]``); without it every finished image prints
one line ``[done/total] name status seconds, ETA h:mm:ss`` so the command still shows where
it is (and logs cleanly when stderr is a file).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any, TextIO

from .task import short_error

__all__ = ["Progress"]


def _eta(seconds: float) -> str:
    s = int(round(seconds))
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


class Progress:
    """Count finished images and show the rate and the time left.

    Parameters
    ----------
    total : int
        Images to process.
    enabled : bool
        False prints nothing (``--quiet``).
    stream : file, optional
        Default ``sys.stderr``.
    """

    def __init__(self, total: int, enabled: bool = True, stream: TextIO | None = None) -> None:
        self.total, self.done, self.failed = total, 0, 0
        self.enabled = enabled and total > 0
        self.stream = sys.stderr if stream is None else stream
        self._t0 = time.perf_counter()
        self._bar: Any = None
        if self.enabled:
            try:
                from tqdm import tqdm
            except ImportError:
                return
            self._bar = tqdm(total=total, unit="img", file=self.stream, dynamic_ncols=True,
                             smoothing=0.1, desc="segapp batch")

    def update(self, row: dict[str, Any]) -> None:
        """One image finished with report row ``row``."""
        self.done += 1
        self.failed += row.get("status") == "failed"
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.set_postfix(failed=self.failed, refresh=False)
            self._bar.update(1)
            return
        elapsed = time.perf_counter() - self._t0
        left = elapsed / self.done * (self.total - self.done)
        name = Path(str(row.get("image", ""))).name
        extra = f" ({short_error(row)})" if row.get("status") == "failed" else ""
        print(f"[{self.done}/{self.total}] {name} {row.get('status')}{extra} "
              f"{float(row.get('seconds') or 0):.1f}s, ETA {_eta(left)}", file=self.stream,
              flush=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
