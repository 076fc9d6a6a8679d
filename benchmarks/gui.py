"""The desktop app on a 12 MP photo: time to the first (preview) and the full result, and the
window's longest pause, measured the way a person uses it.

Protocol
--------
The ``coffee`` sample and its scribbles are enlarged to ``--megapixels`` (default 12; bicubic
JPEG, nearest-neighbour label PNG) in a temporary folder. A ``MainWindow`` (Qt's offscreen
platform unless ``QT_QPA_PLATFORM`` says otherwise) then

1. opens the photo (File > Open's path: :meth:`Document.open_path`),
2. imports the scribbles (File > Import Scribbles): the first solve, session set-up included,
3. paints one more stroke of label 1 with the mouse (press, 10 moves, release): a re-solve,
4. fills the largest region of the segmentation with label 1 (**G**, click), undoes the fill
   (Ctrl+Z), redoes it (Ctrl+Shift+Z), clears all strokes (Ctrl+Delete) and undoes that.

For each step it prints when the status bar first said "preview", when the preview overlay
was on screen, when the full result's status came and when its overlay was on screen
(seconds from the action), and the longest gap of a 10 ms ``QTimer`` on the GUI thread during
the step (a blocked GUI thread shows as one long gap; other processes on the machine add
their own noise, so compare runs made at the same load). The edits of step 4 are timed until
they are applied and 0.1 s more (drawn, before the debounced re-solve starts), then apart
until their segmentation is on screen; the same timer's longest pause with nothing to do for
a second, before and after them, shows the machine's own noise.

Run: ``python benchmarks/gui.py`` (a few minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np


def make_inputs(folder: Path, megapixels: float) -> tuple[Path, Path]:
    from PIL import Image

    from segapp.samples import sample_path, sample_scribbles_path

    with Image.open(sample_path("coffee")) as im:
        w, h = im.size
        f = (megapixels * 1e6 / (w * h)) ** 0.5
        size = (round(w * f), round(h * f))
        photo = folder / "coffee_big.jpg"
        im.convert("RGB").resize(size, Image.Resampling.BICUBIC).save(photo, quality=90)
    with Image.open(sample_scribbles_path("coffee")) as sc:
        strokes = folder / "coffee_big_scribbles.png"
        sc.resize(size, Image.Resampling.NEAREST).save(strokes)
    return photo, strokes


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--megapixels", type=float, default=12.0)
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per step")
    args = ap.parse_args()
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

    from PySide6.QtCore import Qt, QTimer
    from PySide6.QtTest import QTest

    from segapp.gui.app import make_application
    from segapp.gui.main_window import MainWindow

    app = make_application()
    with tempfile.TemporaryDirectory() as tmp:
        photo, strokes = make_inputs(Path(tmp), args.megapixels)
        win = MainWindow(recovery_dir=Path(tmp) / "recovery")
        win.resize(1200, 800)
        win.show()
        stamps: list[float] = []
        timer = QTimer()
        timer.setInterval(10)
        timer.timeout.connect(lambda: stamps.append(time.perf_counter()))
        timer.start()
        events: list[tuple[float, str]] = []
        t0 = [0.0]
        win.display.status.connect(lambda text: events.append((time.perf_counter(), text)))
        win.segmentationShown.connect(lambda _tag: events.append(
            (time.perf_counter(), "overlay on screen" + (" (preview)" if win.result.preview
                                                         else ""))))

        def step(name: str, act, done) -> None:
            events.clear()
            stamps.clear()
            t0[0] = time.perf_counter()
            act()
            while not done() and time.perf_counter() - t0[0] < args.timeout:
                app.processEvents()
                time.sleep(0.002)
            end = time.perf_counter() + 1.0
            while time.perf_counter() < end:  # the last overlay
                app.processEvents()
            gaps = np.diff([t0[0]] + stamps)
            print(f"{name}: longest GUI-thread pause {gaps.max() * 1000:.0f} ms "
                  f"(99th percentile {np.percentile(gaps, 99) * 1000:.0f} ms)")
            for t, what in events:
                if what:
                    print(f"  {t - t0[0]:7.2f} s  {what}")

        def full_result() -> bool:
            shown = win.state.shown
            return (shown is not None and shown.tag == win.display.tag
                    and not shown.result.preview and not win.worker.is_busy)

        step(f"open {photo.name}", lambda: win.open_path(photo),
             lambda: win.state.image_path == photo)
        h, w = win.model.shape
        print(f"  ({w}×{h})")
        step("import scribbles (first solve)",
             lambda: win.document.import_scribbles(strokes), full_result)

        def stroke() -> None:
            win.select_label(1)
            vp = win.canvas.viewport()
            a = win.canvas.mapFromScene(0.25 * w, 0.87 * h)
            b = win.canvas.mapFromScene(0.40 * w, 0.90 * h)
            QTest.mousePress(vp, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, a)
            for k in np.linspace(0.1, 1.0, 10):
                QTest.mouseMove(vp, a + (b - a) * float(k))
            QTest.mouseRelease(vp, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, b)

        step("one more stroke (re-solve)", stroke, full_result)

        # Whole-map edits, the way a person makes them: each is timed until it is applied
        # (the history has a new stroke set) and 0.1 s more, to see it drawn, before the
        # debounced re-solve starts; then, separately, until the new segmentation is shown.
        shown = np.asarray(win.state.shown.labels)
        biggest = int(np.argmax(np.bincount(shown.ravel())))
        ys, xs = np.nonzero(shown == biggest)
        seed = (int(xs[len(xs) // 2]), int(ys[len(ys) // 2]))

        def edit_step(name: str, act) -> None:
            key = win.state.stroke_key()
            stamps.clear()
            t0[0] = time.perf_counter()
            act()
            while win.state.stroke_key() == key and time.perf_counter() - t0[0] < args.timeout:
                app.processEvents()
                time.sleep(0.002)
            applied = time.perf_counter()
            while time.perf_counter() < applied + 0.1:
                app.processEvents()
                time.sleep(0.002)
            gaps = np.diff([t0[0]] + stamps + [time.perf_counter()])
            print(f"{name}: applied after {applied - t0[0]:.2f} s, longest GUI-thread pause "
                  f"{gaps.max() * 1000:.0f} ms")
            step("  then until its segmentation is shown", lambda: None, settled)

        def settled() -> bool:  # the result of the strokes on screen, or none to segment
            if len(win.state.history.label_ids_present()) < 2:
                return not win.worker.is_busy
            return full_result()

        def keys(key, modifiers=Qt.KeyboardModifier.NoModifier):
            return lambda: QTest.keyClick(win.canvas, key, modifiers)

        def fill() -> None:
            QTest.keyClick(win.canvas, Qt.Key.Key_G)  # the fill tool
            pos = win.canvas.mapFromScene(seed[0] + 0.5, seed[1] + 0.5)
            QTest.mouseClick(win.canvas.viewport(), Qt.MouseButton.LeftButton,
                             Qt.KeyboardModifier.NoModifier, pos)

        def idle() -> None:  # the machine's own noise: the same timer with nothing to do
            stamps.clear()
            t0[0] = time.perf_counter()
            while time.perf_counter() < t0[0] + 1.0:
                app.processEvents()
                time.sleep(0.002)
            gaps = np.diff([t0[0]] + stamps + [time.perf_counter()])
            print(f"idle for 1 s: longest GUI-thread pause {gaps.max() * 1000:.0f} ms")

        ctrl, shift = Qt.KeyboardModifier.ControlModifier, Qt.KeyboardModifier.ShiftModifier
        idle()
        win.select_label(1)
        edit_step(f"fill (G, click on the largest region, {len(ys) / shown.size:.0%} of the "
                  "image)", fill)
        edit_step("undo the fill (Ctrl+Z)", keys(Qt.Key.Key_Z, ctrl))
        edit_step("redo the fill (Ctrl+Shift+Z)", keys(Qt.Key.Key_Z, ctrl | shift))
        edit_step("clear all strokes (Ctrl+Delete)", keys(Qt.Key.Key_Delete, ctrl))
        edit_step("undo the clear (Ctrl+Z)", keys(Qt.Key.Key_Z, ctrl))
        idle()
        win.choose = lambda *a: "Discard"
        win.close()


if __name__ == "__main__":
    main()
