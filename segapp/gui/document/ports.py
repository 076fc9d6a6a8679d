"""What the document controller is given by its window: dialogs, background runners, settings.

The controller (:mod:`segapp.gui.document`) imports no Qt. Everything that needs Qt or a
widget comes in through :class:`Host`, which the window builds
(:func:`segapp.gui.host.qt_host`) and tests may build from plain objects: the questions
it may ask (:class:`Dialogs`), the job runners that keep file and edit work off the GUI thread
(:class:`Jobs`, :class:`Exports`), the canvas's stroke layer (:class:`Layers`), the settings
store, a timer and the recovery store.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Protocol

import numpy as np

__all__ = ["Dialogs", "Jobs", "Exports", "Layers", "Prefs", "Recovery", "Host"]

#: ``step(i, n, text)``: background work is at step ``i`` of ``n``; raises Cancelled once
#: cancelled (:class:`segapp.gui.loader.Loader`).
Step = Callable[[int, int, str], None]


@dataclass(frozen=True)
class Dialogs:
    """The questions the controller may ask (the window's message boxes; scripted in tests)."""

    ask: Callable[[str, str], bool]  # (title, text) → Yes?
    choose: Callable[[str, str, tuple[str, ...]], str]  # → the button chosen (last: Esc)
    get_path: Callable[..., str | None]  # (title, default, filters, save=...) → path or None
    get_folder: Callable[[str, str], str | None] = lambda _t, _d: None  # (title, default)


class Emitting(Protocol):
    def connect(self, callback: Callable[..., Any]) -> None: ...
    def disconnect(self, callback: Callable[..., Any]) -> None: ...


class Jobs(Protocol):
    """Background work run in order off the GUI thread, its callbacks on it
    (:class:`segapp.gui.loader.Loader`)."""

    running: bool
    what: str
    idle: Emitting

    def start(self, what: str, work: Callable[[Step], Any], done: Callable[[Any], None],
              failed: Callable[[str], None], cancelled: Callable[[], None] = ...,
              *, first: bool = False) -> None: ...
    def cancel(self) -> None: ...
    def wait_loaded(self, msecs: int = ...) -> bool: ...


class Exports(Protocol):
    """One export at a time off the GUI thread (:class:`segapp.gui.exporter.Exporter`)."""

    running: bool
    finished: Emitting

    def start(self, items: list, on_written: Callable[[Path], None] = ...) -> None: ...
    def cancel(self) -> None: ...
    def wait_idle(self, msecs: int = ...) -> bool: ...


class Layers(Protocol):
    """The canvas's stroke layer, for edits prepared off the GUI thread
    (:class:`segapp.gui.canvas.Canvas`)."""

    def layer_lut(self) -> np.ndarray: ...
    def prepared_layer(self, ready: Any) -> AbstractContextManager: ...


class Prefs(Protocol):
    """A settings store (QSettings)."""

    def value(self, key: str, default: Any = ...) -> Any: ...
    def setValue(self, key: str, value: Any) -> None: ...  # noqa: N802


@dataclass(frozen=True)
class Recovery:
    """The crash-recovery store (:mod:`segapp.gui.recovery`): this instance's locked folder
    under a root, and the folders of instances that are gone."""

    root: Path
    instance: Callable[[Path], Any]  # root → Instance (OSError: recovery is off)
    orphans: Callable[[Path], list]  # root → [Orphan], oldest first


@dataclass(frozen=True)
class Host:
    """Everything the document controller uses that it does not own."""

    dialogs: Dialogs
    layers: Layers
    loader: Jobs  # opening files (a newer one supersedes)
    saver: Jobs  # saving sessions (never cancelled by a load)
    editor: Jobs  # whole-map edits, in order
    exporter: Exports
    read_image: Callable[..., Any]  # (path, step, scribbles=, labels=, pixel_limit=,
    #                                  strokes_of=) → Loaded (worker; TooLarge above the limit)
    read_session: Callable[[Path, Step], Any]  # → (SessionData, Loaded) (worker)
    prefs: Callable[[], Prefs]  # a settings store, fetched when used
    later: Callable[[int, Callable[[], None]], None]  # run after ms, on the GUI thread
    documents_dir: Path  # where dialogs start with nothing better to go on
    recovery: Recovery | None  # None: no journal
