"""Cancellation of long computations: one token that every loop of a solve polls.

Callers ask for cancellation the way they already can: a callable returning True
(``Session.update(..., cancel=event.is_set)``), an object with ``is_set()`` (a
:class:`threading.Event`), a :class:`CancelToken`, or None. :meth:`CancelToken.of` turns any
of them into a token; :meth:`CancelToken.check` raises :class:`~segapp.errors.Cancelled`
when cancellation was requested. A token is itself such a callable, so code written for the
callable form accepts it unchanged.

The public entries (:meth:`segapp.Session.update`, :meth:`segapp.Session.prepare`,
:meth:`segapp.Session.wait_prepared`, each method's ``update``, and the public k-means
functions of :mod:`segapp.partition.kmeans`, which :func:`segapp.cluster` and scripts call)
make the token once; everything below them takes and polls a :class:`CancelToken`.

Progress rides on the same token: a caller that wants to show it makes the token itself,
``CancelToken(event.is_set, progress=show)``, and the long stages of a method call
:meth:`CancelToken.progress` with what they do and, where known, how far they are
(``show("base partitions", 3, 8)``); a token without a ``progress`` ignores them.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable, Union

from .errors import Cancelled, InvalidInputError

#: What ``cancel=`` accepts throughout segapp.
CancelLike = Union["CancelToken", Callable[[], bool], Any, None]


class CancelToken:
    """Polled cancellation request.

    Parameters
    ----------
    requested : callable, optional
        Returns True once the computation should stop; None never cancels.
    progress : callable, optional
        ``progress(what, done, total)``: told where a long computation is (module notes).
    """

    __slots__ = ("_requested", "_progress")

    def __init__(self, requested: Callable[[], bool] | None = None,
                 progress: Callable[[str, float | None, float | None], None] | None = None
                 ) -> None:
        self._requested = requested
        self._progress = progress

    def progress(self, what: str, done: float | None = None,
                 total: float | None = None) -> None:
        """Report the stage a computation is in (and how far, where known), then
        :meth:`check`: every report is also a point where it can stop."""
        if self._progress is not None:
            self._progress(what, done, total)
        self.check()

    @classmethod
    def of(cls, cancel: CancelLike) -> "CancelToken":
        """The token for what a caller passed as ``cancel`` (see the module docstring)."""
        if isinstance(cancel, CancelToken):
            return cancel
        if cancel is None:
            return NEVER
        is_set = getattr(cancel, "is_set", None)
        if callable(is_set):          # threading.Event and alike
            return cls(is_set)
        if callable(cancel):
            return cls(cancel)
        raise InvalidInputError(f"cancel must be a callable returning bool, an Event or None; "
                                f"got {type(cancel).__name__}")

    def requested(self) -> bool:
        """True if the caller asked to stop."""
        return self._requested is not None and bool(self._requested())

    __call__ = requested

    def check(self) -> None:
        """Raise :class:`~segapp.errors.Cancelled` if cancellation was requested."""
        if self._requested is not None and self._requested():
            raise Cancelled("solve cancelled")

    def __repr__(self) -> str:
        return "CancelToken(never)" if self._requested is None else \
            f"CancelToken({self._requested!r})"


#: The token that never cancels.
NEVER = CancelToken()


def wait_for(event: threading.Event, seconds: float, stop: Callable[[], bool],
             poll: float = 0.01) -> bool:
    """Wait until ``event`` is set, ``stop()`` is true or ``seconds`` have passed, looking
    every ``poll`` s (Python's events wait for one thing at a time). Returns whether the
    event was set."""
    end = time.perf_counter() + seconds
    while not event.wait(poll):
        if stop() or time.perf_counter() >= end:
            return False
    return True
