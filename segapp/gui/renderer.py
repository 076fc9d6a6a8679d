"""Draw display layers off the GUI thread (newest request wins).

A 12-megapixel label layer or heat map takes 0.1–0.5 s of numpy work; doing it on the GUI
thread would freeze painting. :class:`Renderer` runs the drawing function (one of
:mod:`segapp.render`'s, through :class:`~segapp.gui.state.AppState`) on a one-thread pool,
converts the array to a ``QImage`` there, in the format the canvas's pixmaps use (QImage,
unlike QPixmap, may be made off the GUI thread), and hands it back with the request's name;
a request superseded meanwhile is dropped.
"""

from __future__ import annotations

import logging
import traceback
from typing import Any, Callable

import numpy as np
from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal

from .qimage import display_qimage
from .qtcompat import emit

log = logging.getLogger(__name__)


class _Signals(QObject):
    done = Signal(str, int, object)  # layer, ticket, QImage or None


class _Job(QRunnable):
    def __init__(self, layer: str, ticket: int, draw: Callable[[], np.ndarray | None],
                 signals: _Signals) -> None:
        super().__init__()
        self.layer, self.ticket, self.draw, self.signals = layer, ticket, draw, signals

    def run(self) -> None:
        try:
            a = self.draw()
            image = None if a is None else display_qimage(a)
        except Exception:  # a bug: log it; the layer stays as it was
            log.error("drawing %s failed:\n%s", self.layer, traceback.format_exc())
            return
        emit(self.signals.done, self.layer, self.ticket, image)


class Renderer(QObject):
    """``draw(layer, function)``; ``ready(layer, QImage | None)`` for the newest request.

    Signals
    -------
    ready(str layer, object image)
    """

    ready = Signal(str, object)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._pool = QThreadPool(self)
        self._pool.setMaxThreadCount(1)
        self._signals = _Signals(self)
        self._signals.done.connect(self._on_done)
        self._tickets: dict[str, int] = {}

    def draw(self, layer: str, function: Callable[[], np.ndarray | None]) -> None:
        """Run ``function`` (returns (H, W, 3|4) uint8 or None) for ``layer`` off the GUI thread."""
        ticket = self._tickets.get(layer, 0) + 1
        self._tickets[layer] = ticket
        self._pool.start(_Job(layer, ticket, function, self._signals))

    def clear(self, layer: str) -> None:
        """Drop pending drawings of ``layer`` and show nothing for it."""
        self._tickets[layer] = self._tickets.get(layer, 0) + 1
        emit(self.ready, layer, None)

    def wait_idle(self, msecs: int = 5000) -> bool:
        return self._pool.waitForDone(msecs)

    def _on_done(self, layer: str, ticket: int, image: Any) -> None:
        if ticket == self._tickets.get(layer):
            emit(self.ready, layer, image)
