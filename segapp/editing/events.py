"""Plain observer lists (no Qt): what the editing model and the app's state announce.

Callbacks run synchronously in the emitting thread, in connection order, as napari's
``EventEmitter`` does for its Qt-free models.
"""

from __future__ import annotations

from typing import Any, Callable

__all__ = ["Emitter"]


class Emitter:
    """A minimal observer list: ``connect(callback)``, ``emit(*args)``."""

    def __init__(self) -> None:
        self._callbacks: list[Callable[..., Any]] = []

    def connect(self, callback: Callable[..., Any]) -> None:
        if callback not in self._callbacks:
            self._callbacks.append(callback)

    def disconnect(self, callback: Callable[..., Any]) -> None:
        if callback in self._callbacks:
            self._callbacks.remove(callback)

    def emit(self, *args: Any) -> None:
        for cb in list(self._callbacks):
            cb(*args)
