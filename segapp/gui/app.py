"""Application entry point: ``segapp`` / ``segapp PATH`` call :func:`run`."""

from __future__ import annotations

import logging
import sys
import traceback

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication

log = logging.getLogger(__name__)


def make_application(argv: list[str] | None = None) -> QApplication:
    """The QApplication (created once), with organisation/app names for QSettings."""
    app = QApplication.instance()
    if app is None:
        app = QApplication(argv if argv is not None else sys.argv[:1])
    app.setOrganizationName("segapp")
    app.setApplicationName("segapp")
    from .icons import app_icon

    app.setWindowIcon(app_icon())
    return app  # type: ignore[return-value]


def run(path: str | None = None) -> int:
    """Open the main window on ``path`` (image or ``*.segapp.json``) or the bundled sample.

    Returns
    -------
    int
        The Qt event loop's exit code.
    """
    app = make_application()
    from .main_window import MainWindow

    window = MainWindow()
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
            try:
                from ..samples import sample_path

                window.open_path(sample_path())
            except Exception as exc:
                window.show_error(f"No sample image found ({exc}); use File ▸ Open.")

    QTimer.singleShot(0, start)  # after the window is up, so dialogs have a parent on screen
    try:
        return app.exec()
    finally:
        sys.excepthook = previous_hook
        run.window = None  # type: ignore[attr-defined]


if __name__ == "__main__":
    sys.exit(run(sys.argv[1] if len(sys.argv) > 1 else None))
