"""A solved Segmentation made ready to show (and, once shown, the request it answers), and
finished results kept for undo and redo.

:class:`ResultCache` is the app's undo cache: a stroke set segmented before is shown again at
once, labels, heat maps and all, without a solve. It sits in front of the method's own
:class:`segapp.methods.answer_memory.AnswerMemory`, which keeps only labels and still solves
the eigenvectors (see that module for why both stay).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import Any, Hashable

import numpy as np

from ..io import render

__all__ = ["CACHE_BYTES", "Result", "ResultCache", "make_result"]

#: Results kept for undo/redo: at most this many bytes (labels + eigenvectors), newest kept.
CACHE_BYTES = 768 * 2**20


@dataclass(frozen=True)
class Result:
    """A segmentation with what a viewer needs to show it without further work; on display
    (:meth:`shown`), also the request it answers and whether it came from the cache.

    The last of the three types from solve to screen: ``Eigenpairs`` (solve → method),
    :class:`segapp.Segmentation` (method → Session, CLI, library), this one (the app's worker
    and its display).
    """

    segmentation: Any  # segapp.Segmentation
    vmax: tuple[float, ...]  # colour range of each eigenvector's heat map (render.robust_vmax)
    seconds: float
    preview: bool = False
    #: labels the method could not place (Segmentation.unplaced_labels: 0.2 s at 12 MP)
    unplaced: tuple[int, ...] = ()
    #: how many eigenvectors (known without bringing a working copy's to full resolution)
    n_vectors: int = 0
    #: on display: the request tag it answers (image, stroke set, method, options), else None
    tag: Any = None
    #: on display: taken from the undo cache, not solved for this request
    cached: bool = False

    def shown(self, tag: Any, cached: bool = False) -> "Result":
        """This result as displayed for request ``tag`` (a copy; the segmentation shared)."""
        return replace(self, tag=tag, cached=cached)

    @property
    def labels(self) -> np.ndarray:
        return self.segmentation.labels

    @property
    def thumbnail_vectors(self) -> np.ndarray:
        """The eigenvectors to draw small: the working copy's where there is one (the same
        picture as the enlarged ones at thumbnail size, and never an enlargement)."""
        return _unenlarged_vectors(self.segmentation)

    @property
    def screen_labels(self) -> np.ndarray:
        """The labels to draw: a working answer shown hatched (:attr:`preview`) while its
        edges are solved again, from its own labels if the full-size ones are not made yet
        (:class:`segapp.result.Deferred`: the same picture at nearest neighbour, the strokes
        drawn over it); else :attr:`labels`."""
        seg = self.segmentation
        small = getattr(seg, "working_labels", None)
        if self.preview and small is not None and not getattr(seg, "labels_made", True):
            return small
        return self.labels

    @property
    def nbytes(self) -> int:
        """Labels plus the float32 eigenvectors at full size, whether made yet or not."""
        seg = self.segmentation
        if hasattr(seg, "labels_nbytes"):   # a Segmentation: nothing made to count it
            nbytes, size = seg.labels_nbytes, int(np.prod(seg.shape))
        else:
            labels = np.asarray(seg.labels)
            nbytes, size = labels.nbytes, labels.size
        return int(nbytes + 4 * size * self.n_vectors)


def make_result(segmentation: Any, seconds: float, preview: bool = False,
                like: Result | None = None) -> Result:
    """Attach the heat maps' colour ranges and the labels that could not be placed: what the
    GUI thread must not compute (worker thread).

    The colour ranges come from the working copy's vectors where there is one: the 99th
    percentile of a 12 MP vector took 0.6 s each (idle machine), of the 0.5 MP one 0.02 s,
    and the bilinear enlargement changes it by little; ``like``, a result of the same vectors
    (the working answer, before its edges were refined), gives its ranges without computing
    them again. A working copy's eigenvectors are *not* brought to full resolution here
    (0.9–1.9 s at 12 MP, which delayed every answer on screen by as much): they are enlarged
    when first read, by whoever needs them at full size (the renderer's thread for a
    full-size heat map, an export's worker), and the GUI thread reads only
    :attr:`Result.n_vectors` and :attr:`Result.thumbnail_vectors`.

    A ``preview`` is not searched for unplaced labels (one pass over the labels per label,
    50 ms at 12 MP before the working answer could be drawn): only the unconstrained baseline
    has any, and the answer that replaces the preview says so.
    """
    r = _unenlarged_vectors(segmentation)
    if like is not None and _unenlarged_vectors(like.segmentation) is r:
        vmax = like.vmax
    else:
        vmax = tuple(render.robust_vmax(r[..., j]) for j in range(r.shape[-1])) \
            if r.ndim == 3 else ()
    unplaced = () if preview else tuple(getattr(segmentation, "unplaced_labels", ()))
    return Result(segmentation, vmax, seconds, preview, unplaced,
                  r.shape[-1] if r.ndim == 3 else 0)


def _unenlarged_vectors(segmentation: Any) -> np.ndarray:
    """A working copy's eigenvectors where there is one, else the result's own (never an
    enlargement to full size)."""
    small = getattr(segmentation, "working_eigenvectors", None)
    return np.asarray(segmentation.eigenvectors if small is None else small)


class ResultCache:
    """Least-recently-used results by tag, at most ``max_bytes`` (the newest is always kept)."""

    def __init__(self, max_bytes: int = CACHE_BYTES) -> None:
        self.max_bytes = max_bytes
        self._items: OrderedDict[Hashable, Result] = OrderedDict()

    def get(self, tag: Hashable) -> Result | None:
        r = self._items.get(tag)
        if r is not None:
            self._items.move_to_end(tag)
        return r

    def put(self, tag: Hashable, result: Result) -> None:
        self._items[tag] = result
        self._items.move_to_end(tag)
        while len(self._items) > 1 and self.nbytes > self.max_bytes:
            self._items.popitem(last=False)

    @property
    def nbytes(self) -> int:
        return sum(r.nbytes for r in self._items.values())

    def __len__(self) -> int:
        return len(self._items)

    def clear(self) -> None:
        self._items.clear()
