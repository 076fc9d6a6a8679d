"""Make a screenshot of the app segmenting an image, as a person would (also a smoke test).

Opens the main window, paints the image's strokes with real mouse events on the canvas, waits
for the segmentation, grabs the window to a PNG and measures how much of the canvas the
overlay changes. A bundled sample is painted with the strokes of its ``NAME_strokes.txt`` (the
strokes its ``NAME_scribbles.png`` is made of, see :func:`read_stroke_file`), 5 image pixels
wide, and its labels get the names given there; another image gets two strokes.
``docs/screenshot.png`` is made this way, under Xvfb, from the "chelsea" sample::

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

#: Width of the strokes of a ``NAME_strokes.txt`` file, in image pixels.
STROKE_WIDTH = 5
#: Two strokes for an image without a strokes file, as fractions of the image (x, y):
#: label 1 across the middle, label 2 along the top.
DEFAULT_STROKES = [[(0.35, 0.50), (0.50, 0.55), (0.65, 0.50)],
                   [(0.03, 0.05), (0.50, 0.03), (0.97, 0.05)]]

Stroke = tuple[int, list[tuple[float, float]]]


def read_stroke_file(path: str | Path) -> tuple[list[Stroke], dict[int, str]]:
    """Read a strokes file: the strokes a person paints, as polylines.

    One item a line; ``#`` starts a comment::

        label 1 background          # the name of label 1
        1 418,15 412,90 420,170     # a stroke of label 1 through these points (x, y)

    Points are in image pixels (x to the right, y down).

    Returns
    -------
    strokes : list of (label id, [(x, y), ...])
        In file order.
    names : dict
        ``{label id: name}`` of the ``label`` lines.

    Raises
    ------
    ValueError
        A line that is neither (its number says which).
    """
    strokes: list[Stroke] = []
    names: dict[int, str] = {}
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        words = line.split("#", 1)[0].split()
        try:
            if not words:
                continue
            if words[0] == "label":
                names[int(words[1])] = " ".join(words[2:])
                continue
            points = [(float(x), float(y)) for x, y in (w.split(",") for w in words[1:])]
            if not 1 <= int(words[0]) <= 9 or not points:
                raise ValueError("label id 1..9 and at least one point")
            strokes.append((int(words[0]), points))
        except (ValueError, IndexError) as exc:
            raise ValueError(f"{path}, line {number}: {line.strip()!r}: {exc}") from None
    return strokes, names


def strokes_file(image: str | Path) -> Path:
    """Where the strokes of ``image`` are: ``NAME_strokes.txt`` next to ``NAME.jpg``."""
    image = Path(image)
    return image.with_name(f"{image.stem}_strokes.txt")


def _paint(window: Any, label: int, points: list[tuple[float, float]]) -> None:
    """Drag the mouse through ``points`` (image pixels) with ``label`` selected."""
    from PySide6.QtCore import Qt
    from PySide6.QtTest import QTest

    window.select_label(label)
    canvas = window.canvas
    vp = canvas.viewport()
    pts = [canvas.mapFromScene(x, y) for x, y in points]
    QTest.mousePress(vp, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, pts[0])
    for a, b in zip(pts[:-1], pts[1:]):  # several moves per segment, like a real drag
        for t in np.linspace(0.2, 1.0, 5):
            QTest.mouseMove(vp, a + (b - a) * float(t))
    QTest.mouseRelease(vp, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, pts[-1])


def _canvas_rgb(window: Any) -> np.ndarray:
    from .qimage import qimage_to_rgb

    return qimage_to_rgb(window.canvas.viewport().grab().toImage())


def make_screenshot(out: str | Path, image: str | Path | None = None, *,
                    size: tuple[int, int] = (1200, 760), timeout: float = 60.0,
                    labels_out: str | Path | None = None) -> dict[str, Any]:
    """Open ``image`` (default: the "chelsea" sample), paint its strokes, screenshot.

    Parameters
    ----------
    out : path
        PNG file to write (atomically).
    image : path, optional
    size : (width, height)
        Window size.
    timeout : float
        Seconds to wait for the segmentation.
    labels_out : path, optional
        Also write the label map on display there (PNG, pixel value = label id).

    Returns
    -------
    dict
        ``ok`` (segmentation shown), ``path``, ``seconds``, ``overlay_fraction`` (share of the
        image's on-screen pixels the overlay changes), ``platform``, ``size``, ``strokes``
        (how many were painted), ``fractions`` (``{label id: share of the image}`` on display).
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
    app.processEvents()  # the canvas fits the image: its zoom is known
    h, w = window.model.shape
    if strokes_file(image).is_file():
        strokes, names = read_stroke_file(strokes_file(image))
        for label_id, name in names.items():
            window.model.rename_label(label_id, name)
        window.state.brush_screen = True
        window.state.brush_size = STROKE_WIDTH * window.canvas.zoom  # screen pixels
    else:
        strokes = [(i, [(fx * w, fy * h) for fx, fy in pts])
                   for i, pts in enumerate(DEFAULT_STROKES, 1)]
        window.state.brush_size = 20  # screen pixels
    app.processEvents()

    shown: list[int] = []
    loop = QEventLoop()
    window.segmentationShown.connect(lambda rev: (shown.append(rev), loop.quit()))
    t0 = time.perf_counter()
    for label_id, points in strokes:
        _paint(window, label_id, points)
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
    fractions: dict[str, float] = {}
    if ok:
        labels = np.asarray(window.state.shown.labels)
        ids, counts = np.unique(labels, return_counts=True)
        fractions = {str(i): round(float(c) / labels.size, 4) for i, c in zip(ids, counts)}
        if labels_out is not None:
            io.write_png_atomic(labels_out, labels.astype(np.uint8), overwrite=True)
    report = {"ok": bool(ok), "path": str(path), "seconds": round(seconds, 3),
              "overlay_fraction": round(fraction, 4), "strokes": len(strokes),
              "fractions": fractions,
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
    parser.add_argument("--labels", help="also write the label map on display (PNG) here")
    args = parser.parse_args(argv)
    report = make_screenshot(args.out, args.image, timeout=args.timeout,
                             labels_out=args.labels)
    print(json.dumps(report))
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
