"""What the napari widget does, without napari or Qt: image conversion, one solve at a time.

:class:`LiveSegmenter` is the widget's model, on the live-solve engine the desktop app uses
too (:mod:`segapp.live`). Each scribble edit becomes a :class:`Request` with a generation
number; only one solve runs at a time (a :class:`segapp.Session` is not shared between
threads), a newer request sets the running one's cancel flag and waits as the single pending
request, and results of an older generation are not shown. The widget runs
:meth:`LiveSegmenter.solve` in napari's ``thread_worker`` and calls
:meth:`LiveSegmenter.finished` when the worker ends.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InvalidInputError
from ..live import LiveEngine, SolveRequest as Request
from ..result import Segmentation

__all__ = ["Request", "LiveSegmenter", "as_unit_image"]


def as_unit_image(data: Any, contrast_limits: tuple[float, float] | None = None,
                  rgb: bool = False) -> np.ndarray:
    """An image layer's data as segapp takes it: (H, W) or (H, W, 3), values in [0, 1].

    Integer data and float data already in [0, 1] are given to segapp as they are (as
    ``segapp segment`` would read the file); other float data (microscopy intensities) is
    scaled by the layer's contrast limits, i.e. as the user sees it. RGBA loses its alpha.

    Raises
    ------
    segapp.errors.InvalidInputError
        Not a 2-D grey or RGB(A) image (a 3-D stack, say).
    """
    a = np.asarray(data)
    if rgb and a.ndim == 3 and a.shape[2] in (3, 4):
        a = a[..., :3]
    elif a.ndim != 2:
        raise InvalidInputError(f"segapp segments 2-D grey or RGB images; this layer has "
                                f"shape {a.shape}")
    if np.issubdtype(a.dtype, np.integer) or a.dtype == bool:
        return a
    a = a.astype(np.float32)
    finite = np.isfinite(a)
    if finite.all() and a.size and a.min() >= 0 and a.max() <= 1:
        return a
    lo, hi = contrast_limits if contrast_limits is not None else (
        float(a[finite].min()), float(a[finite].max()))
    scaled = (np.where(finite, a, lo) - lo) / (hi - lo if hi > lo else 1.0)
    return np.clip(scaled, 0, 1).astype(np.float32)


class LiveSegmenter:
    """The napari widget's requests: one solve running, the newest edit pending.

    Generations, cancellation and the Session are :class:`segapp.live.LiveEngine`'s (as in the
    desktop app); what is napari's is the queue (``thread_worker`` starts a thread per solve,
    so the next waits here until the running one ends) and skipping a layer event that did not
    change the scribbles.
    """

    def __init__(self, method: str = "fastge") -> None:
        self.method = method
        self.engine = LiveEngine()
        self.running: Request | None = None
        self.pending: Request | None = None
        self._last: tuple[tuple, str, np.ndarray] | None = None
        self.closed = False

    @property
    def generation(self) -> int:
        return self.engine.generation

    def request(self, image: np.ndarray, image_key: tuple,
                scribbles: np.ndarray, force: bool = False) -> Request | None:
        """A new edit. Returns the request to start now, or None (nothing changed, or a solve
        is running: it is cancelled and this request waits as the pending one)."""
        if self.closed:
            return None
        scribbles = np.array(scribbles, dtype=np.int32, copy=True)
        last = self._last
        if (not force and last is not None and last[0] == image_key and last[1] == self.method
                and np.array_equal(last[2], scribbles)):
            return None
        self._last = (image_key, self.method, scribbles)
        req = self.engine.request(image_key, image_key, image, scribbles, self.method)
        if self.running is not None:
            self.pending = req
            return None
        self.running = req
        return req

    def finished(self, req: Request) -> Request | None:
        """The worker of ``req`` ended (any way). Returns the pending request to start next."""
        if self.running is req:
            self.running = None
        nxt, self.pending = self.pending, None
        if self.closed:
            return None
        if nxt is not None:
            self.running = nxt
        return nxt

    def is_current(self, req: Request) -> bool:
        """Whether ``req`` is the latest edit (an older result must not be shown); never after
        :meth:`close`."""
        return not self.closed and self.engine.is_current(req)

    def close(self) -> None:
        """The widget is gone: cancel the running solve, drop the pending one; a result that
        still arrives is not current (the widget's controls no longer exist to show it)."""
        self.closed = True
        if self.running is not None:
            self.running.cancel.set()
        self.pending = None

    def solve(self, req: Request) -> Segmentation:
        """Run in the worker thread: (re)build the session if needed, then update it.

        A working copy's labels and eigenvectors are brought to full size here, where the
        widget's GUI thread (which shows them as layers) does not wait for them."""
        seg = self.engine.solve(req)
        np.asarray(seg.labels)
        np.asarray(seg.eigenvectors)
        return seg
