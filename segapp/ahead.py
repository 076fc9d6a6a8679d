"""Work begun now in a thread of its own, its result taken later (:class:`Ahead`).

A session's per-image work that needs no stroke — the direct solver's analysis of the pixel
grid, the image's colours — is started while the graph is built, so the first answer finds
it done (build once per image; the first answer waits only for what depends on the strokes).
"""

from __future__ import annotations

import threading
from typing import Any, Callable


class Ahead:
    """``fn(*args)`` computed in a thread started now; :meth:`result` waits for it and gives
    its value or raises what it raised.

    The thread is not a daemon: an interpreter exiting meanwhile lets it end (bounded: one
    piece of per-image work) instead of unloading the libraries under it — CHOLMOD's analysis
    among them.
    """

    def __init__(self, fn: Callable[..., Any], *args: Any, name: str = "segapp-ahead") -> None:
        self._value: Any = None
        self._error: BaseException | None = None

        def run() -> None:
            try:
                self._value = fn(*args)
            except BaseException as exc:   # noqa: BLE001 — raised by result()
                self._error = exc

        self._thread = threading.Thread(target=run, name=name)
        self._thread.start()

    def done(self) -> bool:
        """Whether the work has ended (its result is then at hand)."""
        return not self._thread.is_alive()

    def result(self) -> Any:
        """The value (waited for); what the work raised is raised here."""
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._value
