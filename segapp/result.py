"""The result of one segmentation: labels, eigenvectors, timings and solver diagnostics."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Callable

import numpy as np


@dataclass
class Segmentation:
    """One k-way segmentation and how it was obtained: what every method and session returns.

    A method's solve makes it flat — labels ``(n,)`` as its own partition gave them,
    eigenvectors ``(n, m)`` — and :meth:`segapp.methods.base.Method.update` finishes it in
    place before anyone sees it (painted pixels clamped to their label, the data's shape,
    timings, method name).

    Attributes
    ----------
    labels : ndarray (H, W) int32, or (n,) for a graph / point set
        Every pixel (vertex) carries one of the user's label ids. A result brought back from
        a working copy enlarges them when first read (:class:`Deferred`; 20–60 ms of a 12 MP
        edit, which the app spends after the working answer is on screen, drawn from
        ``working_labels``); :attr:`shape` and :attr:`labels_nbytes` never wait for that.
    label_ids : tuple of int
        The label ids present in the scribbles, sorted.
    eigenvectors : ndarray (H, W, m) float32, or (n, m)
        The method's embedding as images (for FAST-GE the generalized eigenvectors with the
        d-weighted mean removed, L_H-normalised), for heatmaps. A result brought back from a
        working copy interpolates them when first read (4 s of a 12 MP edit otherwise);
        ``working_eigenvectors`` then holds them at the working resolution.
    eigenvalues : ndarray (m,)
    timings : dict
        Seconds per stage; ``total`` is their sum.
    diagnostics : object
        The eigensolver's report (:class:`segapp.solve.diagnostics.SolverDiagnostics`) or None.
    method : str
    stroke_agreement : dict or None
        For each label id, the share of its painted pixels that the method's partition itself
        gave to that label, before the painted pixels were set to their label (constrained
        methods: ≥ 0.999 unless a label is genuinely ambiguous; the unconstrained baseline
        leaves them as they fall). None when the method does not report it.
    preview : bool
        True for the coarse result a :class:`~segapp.Session` hands to its ``preview``
        callback before the full one (labels only: no eigenvectors).
    confidence : ndarray (H, W) float32 in [0, 1], or (n,), or None
        How sure the method's own rounding is of each pixel's label ("where to paint next",
        issue 22): its distance to the rounding's decision boundary in the embedding,
        relative to the painted pixels' (:func:`segapp.partition.rounding_confidence`);
        painted pixels are 1, the boundary 0. At the result's resolution (a working copy's
        is brought back to full resolution). None for methods that do not provide it.
        Computed when first read (a method may hand a zero-argument function instead of the
        array), so an edit's answer never waits for it.
    refinement : segapp.inputs.refine.Refinement or None
        For an answer of a working copy smaller than the image: whether its boundary band
        was solved again at full resolution, and how (``docs/edges.md``); None when no
        refinement was tried (full-resolution answers, previews, other methods).
    absorbed : ndarray (n,) bool or None
        The pixels (flat, at the resolution the method solved: a working copy's for an
        answer brought back) whose label came from the region around them, not from the
        rounding of their own embedding row (FAST-GE's ``islands``); None when there are
        none or the method does not absorb islands.
    """

    labels: np.ndarray
    label_ids: tuple[int, ...]
    eigenvectors: np.ndarray
    eigenvalues: np.ndarray
    timings: dict[str, float] = field(default_factory=dict)
    diagnostics: object = None
    method: str = "fastge"
    stroke_agreement: dict[int, float] | None = None
    preview: bool = False
    confidence: np.ndarray | Callable[[], np.ndarray] | None = None
    refinement: object = None
    absorbed: np.ndarray | None = None

    def map_confidence(self, fn: Callable[[np.ndarray], np.ndarray]) -> None:
        """Replace the confidence map by ``fn(map)``, still computed only when first read."""
        c = self.__dict__.get("_confidence")
        if c is not None:
            self.__dict__["_confidence"] = lambda: fn(c() if callable(c) else c)

    def __getstate__(self) -> dict:
        """Pickled (process pools, Dask) with the lazy fields computed: no function inside."""
        state = {k: v for k, v in self.__dict__.items() if not k.endswith("_lock")}
        state["_labels"] = self.labels
        state["_confidence"] = self.confidence
        state["_eigenvectors"] = self.eigenvectors
        return state

    @property
    def unplaced_labels(self) -> tuple[int, ...]:
        """Label ids the method could not place: absent from ``labels``, or most of whose
        painted pixels it gave to other labels (only the unconstrained baseline does this)."""
        agree = self.stroke_agreement or {}
        # A label the method gave some of its painted pixels is in ``labels`` (painted pixels
        # keep their label): only the others are searched for, one comparison per label id,
        # not np.unique (a sort: 0.2–0.8 s at 12 MP; the search, 10–17 ms a label there).
        return tuple(i for i in self.label_ids
                     if agree.get(i, 1.0) < 0.5
                     or (agree.get(i, 0.0) <= 0.0 and not np.any(self.labels == i)))

    @property
    def shape(self) -> tuple[int, ...]:
        """The labels' shape, known before deferred labels are made."""
        return tuple(self.__dict__["_labels"].shape)

    @property
    def labels_nbytes(self) -> int:
        """The labels' bytes, known before deferred labels are made."""
        return int(self.__dict__["_labels"].nbytes)

    def labels_copy(self) -> np.ndarray:
        """A copy of the labels to change: deferred ones are made afresh for it (and stay
        deferred here), instead of made and then copied (one full-size copy less)."""
        v = self.__dict__["_labels"]
        return v() if callable(v) else np.array(v, copy=True)

    @property
    def labels_made(self) -> bool:
        """Whether :attr:`labels` is an array already (not deferred: reading it costs nothing)."""
        return not callable(self.__dict__["_labels"])

    def fractions(self) -> dict[int, float]:
        """Share of the pixels carrying each label id."""
        counts = np.bincount(self.labels.ravel(), minlength=max(self.label_ids) + 1)
        return {i: counts[i] / self.labels.size for i in self.label_ids}

    def __repr__(self) -> str:
        size = ("×".join(map(str, self.labels.shape[::-1])) + " px" if self.labels.ndim == 2
                else f"{self.labels.size} vertices")
        stages = ", ".join(f"{k} {v:.3f}s" for k, v in self.timings.items())
        fr = ", ".join(f"{i}: {f:.1%}" for i, f in self.fractions().items())
        return (f"Segmentation(method={self.method!r}, {size}, labels {{{fr}}}, "
                f"eigenvalues {np.array2string(np.asarray(self.eigenvalues), precision=3)}, "
                f"timings [{stages}], {self.diagnostics!r})")



class Deferred:
    """An array made when first asked for: ``make()`` gives it; its ``shape`` and ``dtype``
    are known before (what :class:`Segmentation` reports without making it)."""

    def __init__(self, make: Callable[[], np.ndarray], shape: tuple[int, ...],
                 dtype: np.dtype | type) -> None:
        self.make, self.shape, self.dtype = make, tuple(shape), np.dtype(dtype)

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape)) * self.dtype.itemsize

    def __call__(self) -> np.ndarray:
        return self.make()


def _lazy(name: str, doc: str) -> property:
    """A dataclass field read through a property: the stored value may be a zero-argument
    function, called once on first read (so an edit's answer never waits for it)."""
    key = "_" + name

    def get(self: Segmentation):
        v = self.__dict__.get(key)
        if callable(v):
            # one computation when several threads read it at once (in the app, a 12 MP
            # result's eigenvectors are enlarged when first read: a full-size heat map in the
            # renderer's thread and an export's worker may ask together)
            with self.__dict__.setdefault(key + "_lock", threading.Lock()):
                v = self.__dict__.get(key)
                if callable(v):
                    v = v()
                    self.__dict__[key] = v
        return v

    def put(self: Segmentation, value) -> None:
        self.__dict__[key] = value

    return property(get, put, doc=doc)


# Properties over the dataclass fields: the constructor's ``labels=`` / ``confidence=`` /
# ``eigenvectors=`` (an array or a function giving it) go through the setter.
Segmentation.labels = _lazy("labels", "See the class docstring.")  # type: ignore
Segmentation.confidence = _lazy("confidence", "See the class docstring.")  # type: ignore
Segmentation.eigenvectors = _lazy("eigenvectors", "See the class docstring.")  # type: ignore
