"""Live segmentation: one solve engine behind the desktop app and the napari widget.

Qt-free (like napari's layer models): :mod:`segapp.live.engine` numbers requests, cancels the
stale solve and keeps one :class:`segapp.Session` per image, method and set-up options;
:mod:`segapp.live.results` makes a solved Segmentation ready to show and keeps finished
results for undo. The Qt adapters are :class:`segapp.gui.worker.SegmentationWorker` (signals,
a one-thread pool, debouncing) and :class:`segapp.napari.model.LiveSegmenter` (napari's
``thread_worker``).
"""

from .engine import LiveEngine, SessionCache, SolveRequest
from .results import Result, ResultCache, make_result

__all__ = ["LiveEngine", "SessionCache", "SolveRequest", "Result", "ResultCache", "make_result"]
