"""Incremental segmentation: one image, many scribble edits.

:class:`Session` validates the image once, lets the chosen method build what it can reuse
(image graph, multigrid hierarchy) and then answers :meth:`Session.update` for every edit,
warm-starting from the previous solution. :func:`segment` is the one-shot form.

For FAST-GE a session's answer also depends on its edit history (``stable_refinement``, on by
default): after an edit that only adds strokes, the cut closest to the previous answer among
near-equal ones; strokes seen before (undo, redo) give back the answer given then
(:mod:`segapp.methods.answer_memory`). :func:`segment` has no history.
"""

from __future__ import annotations

import atexit
import logging
import threading
import time
from typing import Any, Callable

import numpy as np

from . import methods
from .blas import one_blas_thread
from .cancel import CancelLike, CancelToken, wait_for
from .errors import Cancelled, InvalidInputError, SolverError
from .inputs.checks import (as_float_image, as_numeric_array, check_callback, check_confidence,
                     check_label_map)
from .options import WORKING_PIXELS, Settings
from .inputs.refine import image_noise, needs_refinement, refine as refine_edges
from .inputs.resolution import (DEFAULT_MAX_PIXELS, enlarge_result, reduce_image,
                         reduce_strokes, working_shape)
from .result import Segmentation
from .solve.direct import busy_core

#: Size of the copy a preview is solved on (:meth:`Session.update`): at 60K px a FAST-GE solve
#: takes a few tenths of a second on 2 cores.
PREVIEW_PIXELS = 60_000
#: At interpreter exit, how long (seconds, in all) the background preparations still running
#: are waited for after they were cancelled: a factorization runs to its end once started
#: (≤ 5 s at the direct solver's 4M px on 2 cores, 1.5 s at the app's 0.5 MP).
EXIT_WAIT_S = 10.0
#: After an answer whose edges the caller sharpens itself (``update(refine=False)``, as the
#: app does), the next edit's preparation waits for :meth:`Session.refine` to end, at most
#: this long (a caller that never refines loses no more).
SHARPEN_WAIT_S = 10.0
#: ... and after an answer the caller shows (``update(shown=...)``), at most this long for it
#: to say so.
SHOWN_WAIT_S = 1.0

log = logging.getLogger("segapp")


class Session:
    """Segment one image again and again as its scribbles change.

    Parameters
    ----------
    image : ndarray
        (H, W) grey or (H, W, 3) colour; uint8/uint16, or float in [0, 1].
    method : str
        One of :func:`segapp.available_methods`.
    max_pixels : int or None
        Images with more pixels are segmented on an area-averaged copy of this size and the
        result is brought back to full resolution (:mod:`segapp.inputs.resolution`); None = always
        full resolution.
    **options
        The method's options (:func:`segapp.methods.options_of`; ``docs/options.md``).
        Set-up options (graph, landmarks, ...) shape what the session builds once and can only
        be given here; solve options given here are the defaults of every :meth:`update`,
        which can override them per call without rebuilding anything.

    Examples
    --------
    >>> sess = Session(image)                      # doctest: +SKIP
    >>> result = sess.update(scribbles)            # doctest: +SKIP
    >>> scribbles[10:12, 5:40] = 3; sess.update(scribbles)   # warm re-solve  # doctest: +SKIP
    >>> sess.update(scribbles, constraint_weight=2.0)  # same graph, new solve  # doctest: +SKIP
    """

    def __init__(self, image: np.ndarray, method: str = "fastge", *,
                 max_pixels: int | None = DEFAULT_MAX_PIXELS, **options: Any) -> None:
        t = time.perf_counter()
        cls = methods.get(method)
        #: The method's option values, every one checked here once (set-up options fixed for
        #: the session's life; solve options the defaults every update starts from).
        self.settings: Settings = cls.resolve(options)    # bad names and values fail here
        self.max_pixels = WORKING_PIXELS.check(max_pixels)
        self.image = as_float_image(image)
        self.shape: tuple[int, int] = self.image.shape[:2]  # type: ignore[assignment]
        self.method_name = method
        # Methods built for very large images (landmark methods) work at full resolution.
        self.working_shape = working_shape(
            self.shape, None if cls.full_resolution else self.max_pixels)
        self._method_image = reduce_image(self.image, self.working_shape)
        self._method = cls.from_settings(self._method_image, self.settings)
        self._preview_method: Any = None
        self._preview_shape = self.working_shape
        self._setup_timings = dict(self._method.timings)
        self._setup_total = time.perf_counter() - t
        self.revision = 0
        #: Whether work for the next edit runs in a background thread after each answer
        #: (:meth:`prepare`); :func:`segment` turns it off (there is no next edit).
        self.background = True
        self._preparing: threading.Thread | None = None
        self._prepare_stop: threading.Event | None = None   # cancels that preparation
        #: What went wrong in the last background preparation (reported with the next
        #: result's diagnostics and logged; None when nothing did).
        self.background_error: str | None = None
        self.closed = False
        self._sharpened: threading.Event | None = None   # set when refine() has ended
        self._image_noise: float | None = None   # the edges' noise estimate (refine)

    @property
    def setup_options(self) -> dict[str, Any]:
        """Set-up options in effect (fixed for the session's life)."""
        return self.settings.stage("setup")

    @property
    def solve_options(self) -> dict[str, Any]:
        """Solve options every update starts from (each call may override them)."""
        return self.settings.stage("solve")

    def update(self, scribbles: np.ndarray, *, cancel: CancelLike = None,
               confidence: np.ndarray | None = None,
               preview: Callable[[Segmentation], None] | None = None,
               refine: bool = True, shown: threading.Event | None = None,
               **solve_options: Any) -> Segmentation:
        """Segment with the current scribbles (0 = unlabelled, else the user's label id).

        ``solve_options`` override the session's solve options for this call only; nothing
        built at set-up (graph, landmarks, hierarchy kept across edits) is rebuilt. A set-up
        option here raises :class:`~segapp.errors.InvalidInputError`. The first call's timings
        include the session's set-up stages (graph, AMG set-up).

        ``preview``, if given, the working image has more than ``2 ×``
        :data:`PREVIEW_PIXELS` pixels and the method cannot answer this edit from a factor
        prepared after the last one (FAST-GE's direct solve), is first called with a coarse
        result: the same method
        on a copy of about :data:`PREVIEW_PIXELS` pixels (built on the first such call and
        kept), its labels brought to full resolution with every painted pixel keeping its
        label, ``preview=True`` and no eigenvectors (shape ``(H, W, 0)``). It runs in the
        caller's thread while the full solve runs in another, so a viewer can show something within a fraction of a second on a
        12-megapixel photo and replace it when the full result comes back.

        ``refine`` (default True): an answer of a working copy smaller than the image has its
        boundary band solved again at full resolution (:meth:`refine`; FAST-GE only) before
        it is returned. A viewer that shows the working answer first passes False and calls
        :meth:`refine` itself, in the background.

        ``shown``: an event the caller sets once it has shown this answer (a viewer: its
        overlay on screen). The background preparation of the next edit starts only then
        (at most :data:`SHOWN_WAIT_S` later): a factorization beside the drawing slowed the
        app's way from the answer to the screen (0.25 MP: 28 → 16 ms). An answer whose edges
        the caller sharpens waits for :meth:`refine` instead, which comes after the drawing.
        """
        settings = self._method.updated(self.settings, solve_options)  # only this call's checked
        check_callback(preview, "preview")
        # Above the working size the strokes are only reduced and pasted back, which needs no
        # int64 copy of them (12 MP: 96 MB, 20–100 ms of every edit); the methods get int64.
        s = check_label_map(scribbles, self.shape, keep_dtype=self.working_shape != self.shape)
        confidence = check_confidence(confidence, self.shape)
        cancel = CancelToken.of(cancel)  # callable, Event or token; every method polls it
        if self.closed:
            raise InvalidInputError("this Session is closed")
        if not self._method.prepares_alongside():
            self._wait_prepared(cancel)  # else the background work goes on beside this solve
        failed, self.background_error = self.background_error, None
        t = time.perf_counter()
        # No preview when the method answers this edit from its factor: the answer itself
        # comes about as fast, and a preview that then moves misleads (issue 22 item 5).
        if (preview is not None and _area(self.working_shape) > 2 * PREVIEW_PIXELS
                and not self._method.prepared()):
            result = self._with_preview(s, cancel, confidence, settings, preview, t)
        else:
            result = self._full(s, cancel, confidence, settings)
        if refine and needs_refinement(result):
            result = self.refine(result, s, cancel)
        elapsed = time.perf_counter() - t
        if self.revision == 0:
            result.timings = {**self._setup_timings, **result.timings}
            elapsed += self._setup_total
        result.timings["total"] = elapsed
        notes = getattr(result.diagnostics, "notes", None)
        if failed and notes is not None:
            notes.append(f"the background work after the previous edit failed: {failed}")
        self.revision += 1
        if self.background:
            # An answer whose edges the caller will sharpen (refine=False): the preparation
            # for the next edit waits for that first (what the person looks at comes first).
            self._sharpened = threading.Event() if needs_refinement(result) else None
            if self._sharpened is not None:
                self._start_preparing(self._sharpened, SHARPEN_WAIT_S)
            else:
                self._start_preparing(shown, SHOWN_WAIT_S)
        return result

    def _full(self, s: np.ndarray, cancel: CancelToken, confidence: np.ndarray | None,
              settings: Settings) -> Segmentation:
        """The full answer: on the working copy, brought back to full resolution."""
        if self.working_shape != self.shape:
            small, conf = _reduced(s, self.working_shape, confidence)
            return enlarge_result(self._method.run(small, cancel, conf, settings), s)
        return self._method.run(s, cancel, confidence, settings)

    def _with_preview(self, s: np.ndarray, cancel: CancelToken, confidence: np.ndarray | None,
                      settings: Settings, preview: Callable[[Segmentation], None],
                      t: float) -> Segmentation:
        """The preview in the caller's thread while the full answer is solved in another
        (the two solves are different method objects; their numeric kernels release the GIL):
        the full answer then comes after max(preview, full) instead of their sum (12 MP:
        the 60K-px preview took 0.3 s of a 2.8 s first answer on an idle 2-core machine).
        Both stay on one BLAS thread each (this context; their own nest inside it)."""
        stop = threading.Event()       # the caller's thread failed: the full solve stops too
        token = CancelToken(lambda: stop.is_set() or cancel.requested())
        box: dict[str, Any] = {}

        def full() -> None:
            try:
                box["result"] = self._full(s, token, confidence, settings)
            except BaseException as exc:   # noqa: BLE001 — raised in the caller's thread
                box["error"] = exc

        with one_blas_thread():
            worker = threading.Thread(target=full, name="segapp-full-solve", daemon=True)
            worker.start()
            try:
                with busy_core():   # the full solve's factorization gets this core after it
                    coarse = self._preview(s, cancel, settings)
                if coarse is not None:
                    coarse.timings["total"] = time.perf_counter() - t
                    preview(coarse)
            except BaseException:
                stop.set()
                raise
            finally:
                while worker.is_alive():
                    worker.join(0.05)
        if "error" in box:
            raise box["error"]
        return box["result"]

    def needs_refinement(self, result: Segmentation) -> bool:
        """Whether :meth:`refine` would solve ``result``'s edges again at full resolution (a
        working-copy answer of FAST-GE not refined yet)."""
        return needs_refinement(result)

    def refine(self, result: Segmentation, scribbles: np.ndarray,
               cancel: CancelLike = None) -> Segmentation:
        """``result`` (an answer of this session, not refined) with its region boundaries
        solved again at full resolution around the working answer's edges
        (:mod:`segapp.inputs.refine`): a new Segmentation whose ``refinement`` says what was
        done; ``result`` itself is left as it was. Any other result comes back unchanged.

        Thread-safe beside the next :meth:`update` (it reads only the image and the
        result). Raises :class:`~segapp.errors.Cancelled` when ``cancel`` is set.
        """
        if not needs_refinement(result):
            return result
        # the edges read the strokes only by comparison and lookup: the caller's dtype serves
        # (a 12 MP int64 copy cost 16 ms of every refinement)
        s = check_label_map(scribbles, self.shape, keep_dtype=True)
        try:
            with one_blas_thread():
                if self._image_noise is None:       # the image's own: once per session
                    self._image_noise = image_noise(self.image, self.settings["color"])
                return refine_edges(result, self.image, s, self.settings,
                                    CancelToken.of(cancel), noise=self._image_noise)
        finally:
            sharpened = self._sharpened
            if sharpened is not None:
                sharpened.set()       # done or given up: the next edit's preparation goes on

    # -- work for the next edit ------------------------------------------------------------
    def prepare(self, cancel: CancelLike = None) -> None:
        """Do now what the next edit can reuse (FAST-GE: factor the Dirichlet matrix of the
        strokes just solved, :meth:`segapp.solve.GraphSolver.prepare`).

        :meth:`update` starts this in a background thread after each answer (unless
        :attr:`background` is False), cancelling the one before. The next :meth:`update`
        does not wait for it where the method can solve alongside (FAST-GE, CCSKL: every
        solve takes its own snapshot of the factor, and before the first factor is ready it
        answers iteratively — both exact or converged, so the answer does not depend on
        timing). Methods with nothing to prepare do nothing.
        """
        self._method.prepare_next(CancelToken.of(cancel))

    def _start_preparing(self, after: threading.Event | None = None,
                         wait: float = 0.0) -> None:
        """Prepare the next edit in a thread (:meth:`prepare`), once ``after`` is set (the
        answer shown, or a working answer's edges sharpened by :meth:`refine`) or ``wait``
        seconds have passed: on two cores, the refinement, the window drawing its answer
        and a factorization beside them took turns, and the sharp answer came last."""
        if not self._method.prepares:
            return
        previous, stop_previous = self._preparing, self._prepare_stop
        if stop_previous is not None:
            stop_previous.set()      # only the newest strokes are worth preparing
        stop = threading.Event()

        def cancelled() -> bool:
            return stop.is_set() or _EXITING.is_set()

        def run() -> None:
            try:
                if previous is not None:   # one preparation at a time, in order
                    previous.join()
                if after is not None:
                    wait_for(after, wait, cancelled)
                if not cancelled():
                    self.prepare(cancelled)
            except Cancelled:
                pass
            except BaseException as exc:   # noqa: BLE001 — said with the next result
                self.background_error = f"{type(exc).__name__}: {exc}"
                log.warning("segapp: the background preparation of the next edit failed",
                            exc_info=True)
            finally:
                with _PREPARING_LOCK:
                    _PREPARING.pop(threading.current_thread(), None)

        self._prepare_stop = stop
        self._preparing = threading.Thread(target=run, name="segapp-prepare", daemon=True)
        with _PREPARING_LOCK:
            _PREPARING[self._preparing] = stop
        self._preparing.start()

    def wait_prepared(self, cancel: CancelLike = None) -> None:
        """Wait for the background work started by the last :meth:`update` (if any).

        Polls ``cancel`` every 20 ms (raising :class:`~segapp.errors.Cancelled`); the work
        itself (one factorization) runs on. An error of that work is not raised: it is
        logged and named in the next result's diagnostics (``notes``); the direct solver is
        then off and the next update solves iteratively, saying why.
        """
        self._wait_prepared(CancelToken.of(cancel))

    def _wait_prepared(self, cancel: CancelToken) -> None:
        th = self._preparing
        if th is None:
            return
        while th.is_alive():
            cancel.check()
            th.join(0.02)
        self._preparing = None

    def stop_background(self) -> None:
        """Cancel the background work now running (the next :meth:`update` starts its own):
        the live engine does this to a Session it sets aside when the method changes."""
        if self._prepare_stop is not None:
            self._prepare_stop.set()

    def close(self, timeout: float | None = 0.0) -> None:
        """Stop the background work (cancelled between its steps; a factorization already
        inside CHOLMOD runs to its end) and refuse further updates. ``timeout``: seconds to
        wait for it (None: until it ends). The live engine closes a Session it replaces."""
        self.closed = True
        self.background = False
        if self._prepare_stop is not None:
            self._prepare_stop.set()
        th = self._preparing
        if th is not None and timeout != 0.0:
            th.join(timeout)

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _preview(self, s: np.ndarray, cancel: CancelToken,
                 settings: Settings) -> Segmentation | None:
        """The coarse result of :meth:`update`'s ``preview`` (None if that solve fails)."""
        if self._preview_method is None:
            shape = working_shape(self.shape, PREVIEW_PIXELS)
            self._preview_shape = shape
            # From the working copy (already area-averaged): cheap, and as smooth.
            small_image = reduce_image(self._method_image, shape)
            self._preview_method = type(self._method).from_settings(small_image, self.settings)
        try:
            small, _ = _reduced(s, self._preview_shape)
            result = self._preview_method.run(small, cancel, None, settings)
        except SolverError:
            return None   # the full solve will say what went wrong
        result = enlarge_result(result, s, vectors=False)
        result.preview = True
        return result


#: Background preparations still running, each with its cancel flag. A script that ends while
#: one is inside CHOLMOD crashed (exit code 139, 2 of 8 runs of a three-edit script) or hung in
#: the system OpenBLAS's exit handler: the factorization's OpenMP / OpenBLAS threads ran on
#: while the process tore its libraries down. At exit they are cancelled (between steps) and
#: waited for, at most :data:`EXIT_WAIT_S` in all (then the exit goes on, with a warning).
_PREPARING: dict[threading.Thread, threading.Event] = {}
_PREPARING_LOCK = threading.Lock()
_EXITING = threading.Event()


@atexit.register
def _finish_preparations() -> None:
    _EXITING.set()
    with _PREPARING_LOCK:
        running = list(_PREPARING)
    deadline = time.monotonic() + EXIT_WAIT_S
    for thread in running:
        thread.join(max(0.0, deadline - time.monotonic()))
    left = [t for t in running if t.is_alive()]
    if left:
        log.warning("segapp: %d background preparation(s) still running after %.0f s at exit",
                    len(left), EXIT_WAIT_S)


def _reduced(s: np.ndarray, shape: tuple[int, int], confidence: np.ndarray | None = None
             ) -> tuple[np.ndarray, np.ndarray | None]:
    """The strokes (and confidences) on a smaller grid (:func:`reduce_strokes`), as the
    methods take them (int64): the caller's map above the working size keeps its own dtype
    (12 MP: no 96 MB int64 copy), only the reduced one is converted."""
    small, conf = reduce_strokes(s, shape, confidence)
    return small.astype(np.int64, copy=False), conf


def _area(shape: tuple[int, ...]) -> int:
    return int(np.prod(shape))


def segment(image: np.ndarray, scribbles: np.ndarray, *, method: str = "fastge",
            **options: Any) -> Segmentation:
    """Segment an image from scribbles in one call (a one-edit :class:`Session`).

    Parameters
    ----------
    image : ndarray
        (H, W) or (H, W, 3); uint8/uint16, or float in [0, 1].
    scribbles : ndarray of int, (H, W)
        0 = unlabelled, 1..9 = label ids, as in :func:`skimage.segmentation.random_walker`;
        at least two labels.
    method : str
        ``"fastge"`` (default) or another of :func:`segapp.available_methods`.
    **options
        See :class:`Session`.

    Returns
    -------
    Segmentation
        ``labels`` carry the user's label ids.
    """
    session = Session(image, method=method, **options)
    session.background = False   # no next edit
    return session.update(scribbles)


def cluster(labels: np.ndarray, *, graph: Any = None, features: np.ndarray | None = None,
            method: str = "fastge", **options: Any) -> Segmentation:
    """Constrained clustering of any graph or point set (not only images).

    Parameters
    ----------
    labels : ndarray of int, (n,)
        0 = unlabelled, 1..k = the known label of a vertex; same label → must-link,
        different labels → cannot-link.
    graph : sparse matrix (n, n), optional
        Symmetric non-negative adjacency (for graph methods such as FAST-GE).
    features : ndarray (n, f), optional
        Feature vectors (for landmark methods).
    method : str
        One of :func:`segapp.available_methods`.

    Returns
    -------
    Segmentation
        ``labels`` of shape (n,) carrying the given label ids.
    """
    lab = (as_numeric_array(labels, "labels") if isinstance(labels, (list, tuple, np.ndarray))
           else labels)
    if not isinstance(lab, np.ndarray) or lab.ndim != 1:
        raise InvalidInputError(f"labels must be a 1-D array (n,), got "
                                f"{getattr(lab, 'shape', type(lab).__name__)}")
    lab = check_label_map(lab, lab.shape, "labels")
    t = time.perf_counter()
    m = methods.create_from_data(method, graph=graph, features=features, **options)
    result = m.update(lab)
    result.timings = {**getattr(m, "timings", {}), **result.timings}
    result.timings["total"] = time.perf_counter() - t
    return result
