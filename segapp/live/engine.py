"""Solving each edit as it comes: generations, cancellation of the stale solve, one Session.

Every request gets a generation number (ndv-style). Asking for a new one sets the cancel flag
of the one before, which a running solve polls; a result whose generation is no longer
:meth:`LiveEngine.is_current` is not shown. Solves run one at a time, off the viewer's thread
(a :class:`segapp.Session` is never used by two threads at once). The app's window does not
rely on the generations: its solve jobs have the window's one newest-wins rule
(:mod:`segapp.gui.jobs`, a request made from the job's ticket and cancel flag). They stay here
for the napari widget, which has no Qt jobs: it keeps one solve running and one pending and
shows a result only while its generation is current.

The Session is rebuilt only when the image, the method or a *set-up* option changes
(:class:`SessionCache`); *solve* options go to :meth:`segapp.Session.update`, which re-solves
without rebuilding the graph or the multigrid hierarchy, and after each answer prepares the
next edit in its own background thread (:meth:`segapp.Session.prepare`). A preview (a coarse answer of a large
image before the full one) is asked for only where it is cheap next to the full solve
(:func:`wants_preview`): otherwise each edit would be solved twice and the app be slower than
the command line (ensemble on the 0.24 MP coffee photo: 19–40 s of preview before 30 s of
full solve).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Hashable

import numpy as np

from .. import options
from ..cancel import CancelToken
from ..errors import Cancelled, InvalidInputError
from ..inputs.resolution import DEFAULT_MAX_PIXELS, working_shape
from ..methods import get, option_names, options_of

__all__ = ["LiveEngine", "SessionCache", "SolveRequest", "split_options", "wants_preview",
           "PREVIEW_MIN_PIXELS", "PREVIEW_MAX_SHARE"]

#: A preview only for a working copy of at least this many pixels (5 × the preview's 60K):
#: below, the full solve comes soon enough and a preview would only delay it.
PREVIEW_MIN_PIXELS = 300_000
#: A session whose preview took more than this share of its full solve gets no more previews
#: (landmark methods: their cost hardly depends on the pixel count).
PREVIEW_MAX_SHARE = 0.35
#: The session before the current one is kept only while its working copy has at most this
#: many pixels: a FAST-GE session holds about 2.5 KB per working pixel (6.3 GB at 2.5 MP,
#: 9.8 GB at 4 MP, factor and hierarchy), too much to keep for a switch back.
KEEP_PIXELS = 1_000_000
#: ... and a working copy larger than that is built only where the memory it needs is free:
#: about this many bytes per working pixel (the peaks above), against ``MemAvailable``
#: (Linux; elsewhere not checked). Without the check a 4 MP working size on a machine with
#: less free memory was killed by the system, the window with it.
SESSION_BYTES_PER_PIXEL = 2_500
#: Seconds a closed session of such a copy is waited for before the next is built: its
#: factorization for the next edit runs to its end (9–14 s at 4 MP) and holds its memory
#: until then (in the solve's worker thread, never the viewer's).
CLOSE_WAIT_S = 30.0


@dataclass(frozen=True)
class SolveRequest:
    """Everything one solve needs (immutable copies, safe to hand to another thread)."""

    generation: int
    tag: Hashable  # what the viewer asked for: shown only if still what is on screen
    image_key: Hashable  # which image: a new key builds a new Session
    image: np.ndarray
    scribbles: np.ndarray
    method: str
    options: tuple[tuple[str, Any], ...] = ()
    cancel: threading.Event = field(default_factory=threading.Event, compare=False)


def split_options(method: str, values: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(setup, solve)`` values of ``method`` (:func:`segapp.options.split`); names that are
    not the method's options (``max_pixels``) are :class:`segapp.Session` arguments: set-up."""
    own = option_names(method)
    setup, solve = options.split(options_of(method),
                                 {k: v for k, v in values.items() if k in own}, method)
    setup.update({k: v for k, v in values.items() if k not in own})
    return setup, solve


def wants_preview(session: Any, slow: bool) -> bool:
    """Whether to ask ``session`` for a preview: a large working copy, and a preview that was
    not ``slow`` (:data:`PREVIEW_MAX_SHARE`) before."""
    return not slow and _working_pixels(session) >= PREVIEW_MIN_PIXELS


class SessionCache:
    """The live Session, rebuilt when the image, method or a set-up option changes; the one
    before it is kept while the image stays, so that going back to it costs nothing.

    Switching fastge → ensemble → fastge rebuilt fastge's Session (graph, multigrid, factor):
    the next fastge stroke took 6.5 s instead of ~0.8 s on the loaded machine (1.96 s
    against 0.94 s and then 0.31 s, measured with LiveEngine on the coffee photo, load 4.7).
    Two sessions of a 0.5 MP working copy hold ~1 GB at most (benchmarks/painted.py's peaks);
    one of a larger working copy than :data:`KEEP_PIXELS` is closed when another replaces it.
    """

    def __init__(self) -> None:
        self.key: tuple | None = None
        self.session: Any = None
        self.preview_slow = False  # its last preview cost too much of the full solve
        self._previous: tuple[tuple, Any, bool] | None = None   # (key, session, preview_slow)

    @staticmethod
    def _key(req: SolveRequest, setup: dict[str, Any]) -> tuple:
        return (req.image_key, req.method, tuple(sorted(setup.items())))

    def holds(self, req: SolveRequest, setup: dict[str, Any]) -> bool:
        """Whether :meth:`get` has the session already (else it builds one)."""
        key = self._key(req, setup)
        return (self.session is not None and self.key == key) or \
            (self._previous is not None and self._previous[0] == key)

    def get(self, req: SolveRequest, setup: dict[str, Any]) -> Any:
        key = self._key(req, setup)
        if key == self.key and self.session is not None:
            return self.session
        current = (self.key, self.session, self.preview_slow) \
            if self.key is not None and self.session is not None else None
        if current is not None:
            _pause(current[1])      # its preparation is of no use while another answers
        if self._previous is not None and self._previous[0] == key:
            (self.key, self.session, self.preview_slow), self._previous = self._previous, current
            return self.session
        # another image's sessions are of no more use, nor a large one: free them first
        keep = current if (current is not None and current[0][0] == key[0]
                           and _working_pixels(current[1]) <= KEEP_PIXELS) else None
        freed = 0  # pixels of the sessions closed here: their memory is this process's to reuse
        for old in (self._previous, current):
            if old is not None and old is not keep:
                pixels = _working_pixels(old[1])
                _close(old[1], CLOSE_WAIT_S if pixels > KEEP_PIXELS else 0.0)
                freed += pixels
        self._previous = keep
        self.session = None
        old = current = None  # what was closed is freed before the new one is built
        _check_memory(req, setup, freed)
        import segapp  # looked up here: tests stand a scripted Session in

        self.session = segapp.Session(req.image, method=req.method, **setup)
        self.key = key
        self.preview_slow = False
        return self.session

    def drop(self) -> None:
        """Forget the sessions: their background work is cancelled (:meth:`Session.close`)
        and their graphs freed."""
        _close(self.session)
        if self._previous is not None:
            _close(self._previous[1])
        self.key, self.session, self._previous = None, None, None


def _close(session: Any, wait: float = 0.0) -> None:
    """Stop a Session's background work for good (it will not be asked again), waiting at
    most ``wait`` seconds for it to end."""
    close = getattr(session, "close", None)
    if close is not None:
        close(wait) if wait else close()


def _check_memory(req: SolveRequest, setup: dict[str, Any], freed: int = 0) -> None:
    """Refuse a Session whose working copy is above :data:`KEEP_PIXELS` and needs more
    memory than is free (:data:`SESSION_BYTES_PER_PIXEL`), with a line saying what to do.

    ``freed``: the working pixels of the sessions just closed. The memory they held is
    counted as free: the process keeps much of it (freed, not given back to the system:
    2.5 MP, a 2 MP session closed, 1.7 of its 2.0 GB still resident) and reuses it."""
    if getattr(get(req.method), "full_resolution", False):
        return      # the landmark methods' memory is bounded by their landmarks
    h, w = working_shape(req.image.shape[:2], setup.get("max_pixels", DEFAULT_MAX_PIXELS))
    free = available_memory() if h * w > KEEP_PIXELS else None
    if free is None:
        return
    need, free = h * w * SESSION_BYTES_PER_PIXEL, free + freed * SESSION_BYTES_PER_PIXEL
    if need > free:
        raise InvalidInputError(
            f"a working size of {h * w:,} pixels needs about {need / 2**30:.1f} GB of memory "
            f"and {free / 2**30:.1f} GB is free: choose a smaller working size")


def available_memory() -> int | None:
    """Bytes of memory the system can give without swapping (``MemAvailable`` of
    ``/proc/meminfo``), or None where that is not known."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _working_pixels(session: Any) -> int:
    """The pixels of a Session's working copy (0 for a stand-in without one)."""
    shape = getattr(session, "working_shape", None)
    return 0 if shape is None else int(np.prod(shape))


def _pause(session: Any) -> None:
    """Stop a Session's background work; it can still be asked again (method switched back)."""
    stop = getattr(session, "stop_background", None)
    if stop is not None:
        stop()


class LiveEngine:
    """Requests numbered by generation, the stale one cancelled, one cached Session.

    :meth:`request` and :meth:`cancel` are called from the viewer's thread, :meth:`solve`
    from one worker thread at a time.
    """

    def __init__(self) -> None:
        self.generation = 0
        self._cancel = threading.Event()  # the newest request's flag
        self.sessions = SessionCache()

    def request(self, tag: Hashable, image_key: Hashable, image: np.ndarray,
                scribbles: np.ndarray, method: str,
                options: tuple[tuple[str, Any], ...] = ()) -> SolveRequest:
        """A new request: the one before is cancelled and no longer current."""
        self._cancel.set()
        self.generation += 1
        self._cancel = threading.Event()
        return SolveRequest(self.generation, tag, image_key, image, scribbles, method, options,
                            self._cancel)

    def interrupt(self) -> None:
        """Stop the running solve (a newer edit is on its way); its result may still show."""
        self._cancel.set()

    def cancel(self) -> None:
        """Stop the running solve; nothing asked before now is current any more."""
        self._cancel.set()
        self.generation += 1

    def close(self) -> None:
        """Stop the running solve and the session's background work (the viewer closes)."""
        self.cancel()
        self.sessions.drop()

    def refines(self, seg: Any) -> bool:
        """Whether ``seg`` (a result of :meth:`solve` with ``refine=False``) still has its
        edges to solve at full resolution (:meth:`segapp.Session.refine`)."""
        needs = getattr(self.sessions.session, "needs_refinement", None)
        return needs is not None and needs(seg)

    def refine(self, req: SolveRequest, seg: Any,
               progress: Callable[[str, float | None, float | None], None] | None = None
               ) -> Any:
        """Worker thread, after :meth:`solve`: ``seg`` with its edges solved again at full
        resolution. A newer request cancels it (:class:`~segapp.errors.Cancelled`)."""
        session = self.sessions.session
        if req.cancel.is_set():
            raise Cancelled("superseded")
        if session is None:
            return seg
        return session.refine(seg, req.scribbles, CancelToken(req.cancel.is_set, progress))

    def is_current(self, req: SolveRequest | int) -> bool:
        """Whether ``req`` (or a generation) is the newest request (older results are not
        shown)."""
        return (req if isinstance(req, int) else req.generation) == self.generation

    def solve(self, req: SolveRequest,
              preview: Callable[[Any], None] | None = None,
              progress: Callable[[str, float | None, float | None], None] | None = None,
              refine: bool = True, shown: threading.Event | None = None) -> Any:
        """Worker thread: the Segmentation of ``req`` from the cached (or a new) Session.

        ``preview`` gets a coarse Segmentation first where :func:`wants_preview`; ``progress``
        is told the stages of a long solve (:meth:`segapp.cancel.CancelToken.progress`).
        ``refine=False`` returns a working copy's answer before its edges are solved again
        at full resolution: :meth:`refines` says whether :meth:`refine` is still to do.
        ``shown``: set by the viewer once the answer is on screen (:meth:`segapp.Session.update`:
        the next edit's preparation waits for it).

        Raises
        ------
        segapp.errors.Cancelled
            ``req`` was superseded before or while it was solved.
        Exception
            What the Session raised; the session is then rebuilt for the next request (a
            failed one may hold half-updated state; after a MemoryError, at once, to free it).
        """
        if req.cancel.is_set():  # superseded while queued
            raise Cancelled("superseded")
        t = time.perf_counter()
        cache = self.sessions
        try:
            setup, solve = split_options(req.method, dict(req.options))
            if progress is not None and not cache.holds(req, setup):
                progress("preparing the image for this method", None, None)
            session = cache.get(req, setup)
            if req.cancel.is_set():
                raise Cancelled("superseded")
            if progress is not None:
                progress("solving", None, None)
            took: list[float] = []
            if preview is not None and wants_preview(session, cache.preview_slow):

                def forward(seg: Any) -> None:
                    took.append(time.perf_counter() - t)
                    if not req.cancel.is_set():
                        preview(seg)
                solve["preview"] = forward
            if shown is not None:
                solve["shown"] = shown
            seg = session.update(req.scribbles, cancel=CancelToken(req.cancel.is_set, progress),
                                 refine=refine, **solve)
            if took and took[0] > PREVIEW_MAX_SHARE * (time.perf_counter() - t):
                cache.preview_slow = True
            return seg
        except Cancelled:
            raise
        except MemoryError:
            cache.drop()
            raise
        except Exception:
            cache.drop()
            raise
