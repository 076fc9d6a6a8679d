"""Draw display layers off the GUI thread (newest request wins).

A 12-megapixel label layer or heat map takes 0.1–0.5 s of numpy work; doing it on the GUI
thread would freeze painting. :class:`Renderer` runs the drawing function (one of
:mod:`segapp.io.render`'s, through :class:`~segapp.gui.state.AppState`) on a one-thread pool,
converts the array to a ``QImage`` there, in the format the canvas's pixmaps use (QImage,
unlike QPixmap, may be made off the GUI thread), and hands it back with the request's name;
a request superseded meanwhile is dropped.

A drawing asked for with a ``key`` is kept (:class:`ImageCache`, the newest few, bounded in
bytes): asked for again — the undo or redo of a stroke whose segmentation is cached — it is
handed back at once, without drawing (a 12 MP overlay took 0.4–2.3 s under load).
"""

from __future__ import annotations

import logging
import traceback
import weakref
from collections import OrderedDict
from typing import Any, Callable, Hashable

import numpy as np
from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal

from .qimage import display_qimage
from .qtcompat import emit

log = logging.getLogger(__name__)


#: Drawings kept for undo/redo: at most this many bytes (four 12 MP overlays), newest kept.
IMAGE_CACHE_BYTES = 200 * 2**20


class ImageCache:
    """Least-recently-used drawings by key, at most ``max_bytes`` (the newest is always kept).

    A drawing may name the object it was drawn from (``source``, weakly held): it is found
    again only for that very object, so a result solved anew for the same request is drawn
    anew, never shown with another result's colours.
    """

    def __init__(self, max_bytes: int = IMAGE_CACHE_BYTES) -> None:
        self.max_bytes = max_bytes
        self._items: OrderedDict[Hashable, Any] = OrderedDict()

    def get(self, key: Hashable, source: Any = None) -> Any:
        item = self._items.get(key)
        if item is None:
            return None
        drawn_from = None if item[1] is None else item[1]()
        if item[1] is not None and (drawn_from is None or drawn_from is not source):
            return None
        self._items.move_to_end(key)
        return item[0]

    def put(self, key: Hashable, image: Any, source: Any = None) -> None:
        self._items[key] = (image, None if source is None else weakref.ref(source))
        self._items.move_to_end(key)
        while len(self._items) > 1 and self.nbytes > self.max_bytes:
            self._items.popitem(last=False)

    @property
    def nbytes(self) -> int:
        return sum(int(im.sizeInBytes()) for im, _source in self._items.values())

    def clear(self) -> None:
        self._items.clear()


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
        self._keys: dict[tuple[str, int], tuple] = {}  # (layer, ticket) → (key, source)
        self.cache = ImageCache()

    def draw(self, layer: str, function: Callable[[], np.ndarray | None],
             key: Hashable = None, source: Any = None) -> None:
        """Run ``function`` (returns (H, W, 3|4) uint8 or None) for ``layer`` off the GUI
        thread; with a ``key`` (and ``source``) drawn before, hand that drawing back at once."""
        ticket = self._tickets.get(layer, 0) + 1
        self._tickets[layer] = ticket
        kept = None if key is None else self.cache.get((layer, key), source)
        if kept is not None:
            emit(self.ready, layer, kept)
            return
        if key is not None:
            # weakly: a drawing that fails never reports back, and must not keep its source
            self._keys[(layer, ticket)] = (key, None if source is None else weakref.ref(source))
        self._pool.start(_Job(layer, ticket, function, self._signals))

    def clear(self, layer: str) -> None:
        """Drop pending drawings of ``layer`` and show nothing for it."""
        self._tickets[layer] = self._tickets.get(layer, 0) + 1
        emit(self.ready, layer, None)

    def wait_idle(self, msecs: int = 5000) -> bool:
        return self._pool.waitForDone(msecs)

    def _on_done(self, layer: str, ticket: int, image: Any) -> None:
        kept = self._keys.pop((layer, ticket), None)
        source = None if kept is None or kept[1] is None else kept[1]()
        if kept is not None and image is not None and (kept[1] is None or source is not None):
            self.cache.put((layer, kept[0]), image, source)  # a superseded one may be undone to
        if ticket == self._tickets.get(layer):
            emit(self.ready, layer, image)
