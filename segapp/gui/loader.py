"""Background jobs of the window: opening files (and saving sessions, whole-map edits), one
at a time, with progress and cancellation.

Opening a 12-megapixel photo is about 2 s of work (decoding, conversion to float, the 8-bit
display copy): on the GUI thread that froze the window. :class:`Loader` runs a *work*
function as a job of its own :class:`~segapp.gui.jobs.JobRunner`; the work reports its steps through ``step(i, n, text)``,
which also raises :class:`~segapp.errors.Cancelled` once the load was cancelled, so a
cancelled load stops at its next step. Its result reaches the GUI thread through a queued
signal and is handed to the ``done`` callback of the load that asked for it; a load that was
cancelled or superseded by a newer one never calls ``done``.

What is prepared in the worker is everything the GUI thread would otherwise spend more than
a few milliseconds on: the float image, the :class:`~segapp.editing.AnnotationModel` with
its strokes, and the display picture (:func:`display_picture`, a QImage in the format the
canvas draws without conversion). QImage, unlike QPixmap, may be made outside the GUI thread.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QImage

from .. import io
from ..io import render
from ..editing import AnnotationModel, Label, LabelSchema
from ..errors import InvalidInputError, SegappError
from .document.opening import Loaded, TooLarge
from .files import SessionData
from .files import load_session as read_session
from .jobs import Job, JobRunner
from .qimage import RGBABuffer, label_lut
from .qtcompat import emit

#: ``step(i, n, text)``: the work is at step ``i`` of ``n``; raises Cancelled once cancelled.
Step = Callable[[int, int, str], None]


def display_picture(image: np.ndarray) -> QImage:
    """The image as the canvas shows it: 8-bit (:func:`segapp.io.render.to_rgb8`, as exported),
    in QImage's 32-bit RGB format, which QPixmap and the painter use without converting."""
    rgb = render.to_rgb8(image)
    h, w = rgb.shape[:2]
    bgrx = np.empty((h, w, 4), np.uint8)  # Format_RGB32 is 0xffRRGGBB: B, G, R, X in memory
    bgrx[..., 0], bgrx[..., 1], bgrx[..., 2], bgrx[..., 3] = rgb[..., 2], rgb[..., 1], \
        rgb[..., 0], 255
    return QImage(bgrx.data, w, h, 4 * w, QImage.Format.Format_RGB32).copy()


@dataclass
class View:
    """An image and its strokes as the canvas draws them."""

    picture: QImage  # :func:`display_picture`
    strokes: RGBABuffer  # the stroke layer, coloured by the label colours


def make_view(image: np.ndarray, model: AnnotationModel) -> View:
    """The :class:`View` of ``image`` with the strokes of ``model`` (0.3 s at 12 MP)."""
    strokes = RGBABuffer(*model.shape)
    strokes.paint_labels(model.scribbles, label_lut(model.colors()))
    return View(display_picture(image), strokes)


def load_image(path: Path, step: Step, *, scribbles: np.ndarray | None = None,
               labels: LabelSchema | list[Label] | None = None,
               pixel_limit: int | None = io.DEFAULT_PIXEL_LIMIT,
               strokes_of: Callable[[tuple[int, int]], np.ndarray | None] | None = None
               ) -> Loaded:
    """Read ``path`` and prepare its display picture and stroke model (worker thread).

    ``scribbles`` / ``labels`` are strokes that come with it (recovered work); they must
    have the image's size (else InvalidInputError). ``strokes_of(shape)``: where they come
    from when they are read with the image (a folder project's saved strokes).
    ``pixel_limit``: larger files are refused before decoding (:exc:`TooLarge`).
    """
    step(0, 3, f"Reading {path.name}")
    if pixel_limit is not None:
        pixels = declared_pixels(path)
        if pixels is not None and pixels > pixel_limit:
            raise TooLarge(path, pixels, pixel_limit)
    try:
        image = io.read_image(path, pixel_limit=None)
    except io.MultiPageError as exc:   # the app's words: it has no --page
        raise InvalidInputError(f"{path.name} holds {exc.pages} pages or frames (a multi-page "
                                "TIFF or an animation); the app opens single images: save the "
                                "page you want as its own file") from None
    if scribbles is None and strokes_of is not None:
        scribbles = strokes_of(image.shape[:2])
    return _prepare(path, image, step, scribbles, labels)


def declared_pixels(path: Path) -> int | None:
    """The pixel count an image file declares in its header (nothing is decoded); None if it
    cannot be read (reading the image then says why)."""
    import re
    import warnings

    from PIL import Image

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # Pillow's bomb warning: the size is what we want
            with Image.open(path) as img:
                w, h = img.size
                return int(w) * int(h)
    except Image.DecompressionBombError as exc:  # far above Pillow's own limit
        found = re.search(r"\((\d+) pixels\)", str(exc))
        return int(found.group(1)) if found else None
    except Exception:
        return None


def load_session(path: Path, step: Step) -> tuple[SessionData, Loaded]:
    """Read a ``*.segapp.json`` session, its image and strokes (worker thread)."""
    step(0, 3, f"Reading {path.name}")
    data, image = read_session(path)
    return data, _prepare(data.image_path, image, step, data.scribbles, data.labels)


def _prepare(path: Path, image: np.ndarray, step: Step, scribbles: np.ndarray | None,
             labels: LabelSchema | list[Label] | None) -> Loaded:
    if scribbles is not None and np.shape(scribbles) != image.shape[:2]:
        h, w = np.shape(scribbles)
        raise InvalidInputError(f"{Path(path).name} is {image.shape[1]}×{image.shape[0]} but the "
                                f"strokes are {w}×{h}")
    step(1, 3, "Preparing the strokes")
    if labels is not None and not isinstance(labels, LabelSchema):
        schema = LabelSchema()
        schema.replace(labels)  # the labels of a session or a journal over the defaults
        labels = schema
    # loaded strokes are where the history starts, not an undoable step
    model = AnnotationModel(image.shape[:2], labels, scribbles)
    step(2, 3, "Preparing the display")
    return Loaded(Path(path), image, model, make_view(image, model))


class Loader(QObject):
    """Runs jobs one at a time in the background, in the order they were started (a
    :class:`~segapp.gui.jobs.JobRunner` whose work reports its steps through ``step``).

    With ``supersede`` (opening files) a new job cancels the ones not finished; without it
    (saving, edits) jobs queue up: each starts once the one before has finished *and* its
    callback has run, so an edit is prepared from the strokes the edit before it left.

    Signals
    -------
    progress(int step, int steps, str text)
        The newest job is at ``step`` of ``steps``; ``steps == 0``: no job is left.
    idle()
        The last job has finished (done, failed or cancelled) and its callback has run.
    """

    progress = Signal(int, int, str)

    def __init__(self, parent: QObject | None = None, supersede: bool = True) -> None:
        super().__init__(parent)
        self.supersede = supersede
        self.jobs = JobRunner(self)
        self.idle = self.jobs.idle

    @property
    def running(self) -> bool:
        return self.jobs.running

    @property
    def what(self) -> str:
        live = self.jobs.live()
        return live[-1].what if live else ""

    def start(self, what: str, work: Callable[[Step], Any], done: Callable[[Any], None],
              failed: Callable[[str], None], cancelled: Callable[[], None] = lambda: None,
              *, first: bool = False) -> None:
        """Run ``work(step)`` off the GUI thread; then ``done(result)`` or ``failed(message)``
        on the GUI thread, or ``cancelled()`` (at once) if :meth:`cancel` or, with
        ``supersede``, a newer job comes first. ``what`` names the job for the user (e.g.
        "Opening photo.jpg"). With ``first`` (a job started again from its own callback)
        it runs before the jobs waiting."""
        def ended(callback: Callable[..., None]) -> Callable[..., None]:
            def call(*args: Any) -> None:
                if not self.jobs.running:
                    emit(self.progress, 0, 0, "")
                callback(*args)
            return call

        def steps(job: Job) -> Any:
            return work(lambda i, n, text: job.token.progress(text, i, n))

        self.jobs.submit("load", steps, done=ended(done), failed=ended(failed),
                         cancelled=ended(cancelled), what=what, supersede=self.supersede,
                         first=first, expected=(SegappError, OSError, ValueError),
                         progress=lambda text, i, n, _s: emit(self.progress, int(i), int(n),
                                                              text))
        emit(self.progress, 0, 1, what)

    def cancel(self) -> None:
        """Cancel the jobs not finished (their ``cancelled`` callbacks run now)."""
        self.jobs.cancel()

    def wait_loaded(self, msecs: int = 120_000) -> bool:
        """Run the event loop until no job is left (scripts, tests, a save the user waits
        for); False on timeout."""
        return self.jobs.wait_done(msecs)

    def wait_idle(self, msecs: int = 30_000) -> bool:
        """Block until the worker thread is idle (shutdown)."""
        return self.jobs.wait_idle(msecs)
