"""The Qt side of the document controller: the :class:`~segapp.gui.document.Host` a window lends.

:mod:`segapp.gui.document` imports no Qt; this module gives it Qt's pieces: the window's
message boxes (looked up when asked, so tests can script them), the background runners
(:class:`~segapp.gui.loader.Loader`, :class:`~segapp.gui.exporter.Exporter`), QSettings,
``QTimer.singleShot`` and the locked recovery folders (:mod:`segapp.gui.recovery`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from PySide6.QtCore import QSettings, QStandardPaths, QTimer

from . import recovery
from .document import Dialogs, Host, Recovery
from .exporter import Exporter
from .loader import Loader, load_image, load_session


def default_recovery_dir() -> Path:
    """Per-user folder of the recovery journals."""
    base = QStandardPaths.writableLocation(QStandardPaths.StandardLocation.AppDataLocation)
    return Path(base or Path.home() / ".segapp") / "recovery"


def documents_dir() -> Path:
    base = QStandardPaths.writableLocation(QStandardPaths.StandardLocation.DocumentsLocation)
    return Path(base) if base and Path(base).is_dir() else Path.home()


def qt_host(window: Any, recovery_dir: str | os.PathLike | None | bool = None) -> Host:
    """The host of ``window``'s document.

    ``recovery_dir``: root of the recovery folders; None: the per-user default; False: no
    journal.
    """
    root = (None if recovery_dir is False else
            Path(recovery_dir) if recovery_dir else default_recovery_dir())
    return Host(
        dialogs=Dialogs(ask=lambda *a: window.ask(*a),
                        choose=lambda *a: window.choose(*a),
                        get_path=lambda *a, **k: window.get_path(*a, **k),
                        get_folder=lambda *a: window.get_folder(*a)),
        layers=window.canvas,
        loader=Loader(window),
        saver=Loader(window, supersede=False),
        editor=Loader(window, supersede=False),
        exporter=Exporter(window),
        read_image=load_image, read_session=load_session,
        prefs=QSettings,
        later=QTimer.singleShot,
        documents_dir=documents_dir(),
        recovery=None if root is None else Recovery(root, recovery.Instance, recovery.orphans))
