"""Make a screenshot of the app segmenting an image, as a person would (also a smoke test).

Opens the main window, paints two strokes with real mouse events on the canvas, waits for
the segmentation, grabs the window to a PNG and measures how much of the canvas the overlay
changes. ``docs/screenshot.png`` is made this way, under Xvfb::

    xvfb-run -a python -m segapp.gui.screenshot docs/screenshot.png

It prints a JSON report and exits with status 0 when the segmentation was shown.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

#: Two strokes per sample, as fractions of the image (x, y): label 1, then label 2.
STROKES: dict[str, list[list[tuple[float, float]]]] = {
    "chelsea": [[(0.20, 0.55), (0.33, 0.15), (0.60, 0.10), (0.68, 0.50), (0.50, 0.85)],  # cat
                [(0.94, 0.12), (0.93, 0.50), (0.95, 0.95)]],  # background on the right
}
DEFAULT_STROKES = [[(0.35, 0.50), (0.50, 0.55), (0.65, 0.50)],
                   [(0.03, 0.05), (0.50, 0.03), (0.97, 0.05)]]


def _paint(window: Any, label: int, points: list[tuple[float, float]]) -> None:
    from PySide6.QtCore import Qt
    from PySide6.QtTest import QTest

    window.select_label(label)
    canvas = window.canvas
    h, w = window.model.shape
    vp = canvas.viewport()
    pts = [canvas.mapFromScene(fx * w, fy * h) for fx, fy in points]
    QTest.mousePress(vp, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, pts[0])
    for a, b in zip(pts[:-1], pts[1:]):  # several moves per segment, like a real drag
        for t in np.linspace(0.2, 1.0, 5):
            QTest.mouseMove(vp, a + (b - a) * float(t))
    QTest.mouseRelease(vp, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, pts[-1])


def _canvas_rgb(window: Any) -> np.ndarray:
    from .qimage import qimage_to_rgb

    return qimage_to_rgb(window.canvas.viewport().grab().toImage())


def make_screenshot(out: str | Path, image: str | Path | None = None, *,
                    size: tuple[int, int] = (1200, 760), timeout: float = 60.0) -> dict[str, Any]:
    """Open ``image`` (default: the "chelsea" sample), paint two strokes, screenshot.

    Parameters
    ----------
    out : path
        PNG file to write (atomically).
    image : path, optional
    size : (width, height)
        Window size.
    timeout : float
        Seconds to wait for the segmentation.

    Returns
    -------
    dict
        ``ok`` (segmentation shown), ``path``, ``seconds``, ``overlay_fraction`` (share of the
        image's on-screen pixels the overlay changes), ``platform``, ``size``.
    """
    from PySide6.QtCore import QEventLoop, QTimer
    from PySide6.QtGui import QGuiApplication

    from .. import io
    from .app import make_application
    from .main_window import MainWindow
    from .qimage import qimage_to_rgb

    app = make_application()
    window = MainWindow(recovery_dir=False, debounce_ms=10)
    window.resize(*size)
    window.show()
    app.processEvents()
    if image is None:
        from ..samples import list_samples, sample_path

        name = "chelsea" if "chelsea" in list_samples() else None
        image = sample_path(name)
    image = Path(image)
    if not (window.open_path(image) and window.document.wait_loaded()):
        raise RuntimeError(window.message_bar.text())
    window.state.brush_size = 20  # screen pixels
    app.processEvents()
    strokes = STROKES.get(image.stem, DEFAULT_STROKES)

    shown: list[int] = []
    loop = QEventLoop()
    window.segmentationShown.connect(lambda rev: (shown.append(rev), loop.quit()))
    t0 = time.perf_counter()
    _paint(window, 1, strokes[0])
    _paint(window, 2, strokes[1])
    deadline = time.perf_counter() + timeout

    def current() -> bool:
        shown = window.state.shown
        return shown is not None and shown.tag == window.display.tag and window.canvas.overlay_shown

    while not current() and time.perf_counter() < deadline:
        QTimer.singleShot(int(max(1, (deadline - time.perf_counter()) * 1000)), loop.quit)
        loop.exec()
    seconds = time.perf_counter() - t0
    ok = current()
    app.processEvents()

    with_overlay = _canvas_rgb(window)
    window.state.show_overlay = False
    app.processEvents()
    without = _canvas_rgb(window)
    window.state.show_overlay = True
    app.processEvents()
    # Share of the image's on-screen area that the overlay visibly changes.
    view_rect = window.canvas.mapFromScene(window.canvas.sceneRect()).boundingRect()
    r = view_rect.intersected(window.canvas.viewport().rect())
    diff = np.abs(with_overlay.astype(int) - without.astype(int)).sum(axis=2) > 12
    region = diff[r.top():r.bottom() + 1, r.left():r.right() + 1]
    fraction = float(region.mean()) if region.size else 0.0

    shot = qimage_to_rgb(window.grab().toImage())
    path = io.write_png_atomic(out, shot, overwrite=True)
    report = {"ok": bool(ok), "path": str(path), "seconds": round(seconds, 3),
              "overlay_fraction": round(fraction, 4),
              "platform": QGuiApplication.platformName(), "size": [shot.shape[1], shot.shape[0]],
              "status": window.time_label.text(), "message": window.message_bar.text()}
    window.document._mark_saved()  # nothing to keep: close without asking
    window.close()
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", help="PNG file to write")
    parser.add_argument("--image", help="image to segment (default: the chelsea sample)")
    parser.add_argument("--timeout", type=float, default=60.0)
    args = parser.parse_args(argv)
    report = make_screenshot(args.out, args.image, timeout=args.timeout)
    print(json.dumps(report))
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
