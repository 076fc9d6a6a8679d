"""Application entry point: ``segapp`` / ``segapp PATH`` call :func:`run`.

Qt is imported only after :func:`segapp.gui.preflight.problem` found nothing wrong, so a
machine without a display or without Qt's system libraries gets one line on stderr and exit
status :data:`EXIT_NO_GUI`, not Qt's abort.
"""

from __future__ import annotations

import logging
import os
import sys
import traceback
from typing import Any

log = logging.getLogger(__name__)

#: Exit status when the desktop app cannot start here (no display, missing system libraries).
EXIT_NO_GUI = 4


def make_application(argv: list[str] | None = None) -> Any:
    """The QApplication (created once), with organisation/app names for QSettings."""
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance()
    if app is None:
        app = QApplication(argv if argv is not None else sys.argv[:1])
    app.setOrganizationName("segapp")
    app.setApplicationName("segapp")
    from .icons import app_icon

    app.setWindowIcon(app_icon())
    return app


def run(path: str | None = None, recovery_dir: str | os.PathLike | None = None) -> int:
    """Open the main window on ``path`` (an image, a ``*.segapp.json`` session or a folder of
    images) or the bundled sample.

    Work left by an instance that did not exit cleanly is offered back first.

    Returns
    -------
    int
        The Qt event loop's exit code, or :data:`EXIT_NO_GUI` if Qt cannot start here.
    """
    from .preflight import problem

    why = problem()
    if why:
        print(f"segapp: error: {why}", file=sys.stderr)
        return EXIT_NO_GUI
    from PySide6.QtCore import QTimer

    app = make_application()
    from .main_window import MainWindow

    window = MainWindow(recovery_dir=recovery_dir)
    run.window = window  # type: ignore[attr-defined]  # reachable while the loop runs (tests)

    def excepthook(exc_type, exc, tb) -> None:  # a bug in a slot: report it, keep running
        log.error("unexpected error:\n%s", "".join(traceback.format_exception(exc_type, exc, tb)))
        window.show_error(f"Internal error: {exc_type.__name__}: {exc}")

    previous_hook, sys.excepthook = sys.excepthook, excepthook
    window.show()

    def start() -> None:
        if window.offer_recovery():
            return
        if path:
            window.open_path(path)
        else:
            from ..samples import sample_path

            window.open_path(sample_path())

    QTimer.singleShot(0, start)  # after the window is up, so dialogs have a parent on screen
    try:
        return app.exec()
    finally:
        sys.excepthook = previous_hook
        run.window = None  # type: ignore[attr-defined]


if __name__ == "__main__":
    sys.exit(run(sys.argv[1] if len(sys.argv) > 1 else None))
