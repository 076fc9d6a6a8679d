"""Draw display layers off the GUI thread (newest request wins).

A 12-megapixel label layer or heat map takes 0.1–0.5 s of numpy work; doing it on the GUI
thread would freeze painting. :class:`Renderer` runs the drawing function (one of
:mod:`segapp.io.render`'s, through :class:`~segapp.gui.state.AppState`) as a job of its
:class:`~segapp.gui.jobs.JobRunner` (one per layer name: a newer drawing of a layer
supersedes the one before, which is dropped), converts the array to a ``QImage`` there, in
the format the canvas's pixmaps use (QImage, unlike QPixmap, may be made off the GUI
thread), and hands it back with the layer's name.

Why a second undo cache beside the worker's :class:`segapp.live.ResultCache`: that one keeps
the *answer* of a stroke set (labels, eigenvectors), and undo shows it without a solve; but
the overlay drawn from it is a function of the answer *and* the view (colours, boundaries,
hidden labels, the unsure stripes), and drawing it again took 0.4–2.3 s for a 12 MP overlay
under load, so the undo of a stroke would still wait that long for its picture. A drawing
asked for with a ``key`` is therefore kept (:class:`ImageCache`, the newest few, bounded in
bytes, tied to the very labels array it was drawn from): asked for again, it is handed back
at once, without drawing.
"""
from __future__ import annotations

import logging
import weakref
from collections import OrderedDict
from typing import Any, Callable, Hashable

import numpy as np
from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QImage

from .jobs import JobRunner
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


class Renderer(QObject):
    """``draw(layer, function)``; ``ready(layer, QImage | None)`` for the newest request of
    each layer (:class:`~segapp.gui.jobs.JobRunner`, a layer's name the jobs' key).

    Signals
    -------
    ready(str layer, object image)
    """

    ready = Signal(str, object)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.jobs = JobRunner(self)
        self.cache = ImageCache()

    def draw(self, layer: str, function: Callable[[], np.ndarray | QImage | None],
             key: Hashable = None, source: Any = None) -> None:
        """Run ``function`` (returns (H, W, 3|4) uint8, a QImage drawn already, or None) for
        ``layer`` off the GUI thread; with a ``key`` (and ``source``) drawn before, hand that drawing back at once."""
        kept = None if key is None else self.cache.get((layer, key), source)
        if kept is not None:
            self.jobs.supersede(layer)
            emit(self.ready, layer, kept)
            return
        # weakly: a drawing that fails never reports back, and must not keep its source
        ref = None if source is None else weakref.ref(source)

        def keep(image: Any) -> None:  # a superseded drawing may still be undone to
            drawn_from = None if ref is None else ref()
            if key is not None and image is not None and (ref is None or drawn_from is not None):
                self.cache.put((layer, key), image, drawn_from)

        def work(_job: Any) -> Any:
            a = function()
            return a if a is None or isinstance(a, QImage) else display_qimage(a)

        self.jobs.submit(layer, work, done=lambda image: emit(self.ready, layer, image),
                         keep=keep, what=f"drawing {layer}", failed=self._failed)

    @staticmethod
    def _failed(message: str) -> None:
        log.error("drawing failed: %s", message)  # a bug: the layer stays as it was

    def clear(self, layer: str) -> None:
        """Drop pending drawings of ``layer`` and show nothing for it."""
        self.jobs.supersede(layer)
        emit(self.ready, layer, None)

    def wait_idle(self, msecs: int = 5000) -> bool:
        return self.jobs.wait_idle(msecs)
