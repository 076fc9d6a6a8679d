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
   (Ctrl+Z), redoes it (Ctrl+Shift+Z), clears all strokes (Ctrl+Delete) and undoes that,
5. saves the session and exports all files (Export All).

For each step it prints when the status bar first said "preview", when the preview overlay
was on screen, when the full result's status came and when its overlay was on screen
(seconds from the action), and the longest gap of a 10 ms ``QTimer`` on the GUI thread during
the step (a blocked GUI thread shows as one long gap; other processes on the machine add
their own noise, so compare runs made at the same load). The edits of step 4 are timed until
they are applied and 0.1 s more (drawn, before the debounced re-solve starts), then apart
until their segmentation is on screen; the same timer's longest pause with nothing to do for
a second, before and after them, shows the machine's own noise.

Feedback after a release (issue 23): for the stroke of step 3 (the window idle before it),
the time from the mouse release to the first paint of the busy indicator in the status bar;
after step 3, the undo of that stroke (Ctrl+Z) until its cached segmentation's overlay is on
screen. ``--load N`` runs N busy-loop processes meanwhile (a person's machine doing something
else; on 2 cores, ``--load 1`` keeps one core busy).

Methods (``--methods``, on the bundled 0.24 MP ``coffee`` photo and its scribbles): for each,
a window with that method opens the photo and imports the scribbles; the time from the import
to the full result on screen, and the solves the app started, next to ``segapp segment`` on
the same files (its own wall time and its segmentation's total), run one after the other.

Strokes (``--parts strokes``, issues 21 and 28): the ``coffee`` photo at 0.25 MP and at
``--megapixels`` (``--sizes``: others); after the imported scribbles' first answer,
``--strokes`` (20) short strokes are painted with the mouse one after the other at places
spread over the photo, labels in turn, each once the previous answer is on screen and 0.3 s
more (a person looking at it). For each, from the release: the busy indicator's first paint;
the canvas's first paint after the *first* answer's overlay was set (on a photo larger than
the working size, the working copy's answer, hatched while its edges are solved again at full
resolution: what the person sees first and responds to); and after the *sharp* answer's (the
full-resolution edges; the same overlay where there is no working copy). The median and the
worst are printed, with how the solver answered.

Run: ``python benchmarks/gui.py`` (a few minutes on 2 cores); ``--parts methods``,
``--parts big`` or ``--parts strokes`` for one part.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Iterator

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


@contextlib.contextmanager
def busy_loops(n: int) -> Iterator[None]:
    """``n`` processes spinning on a core each, for the duration (the load of ``--load``)."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]
    try:
        yield
    finally:
        for p in procs:
            p.kill()
            p.wait()


def event_times(widget: Any, kind: str, clock: Any = None) -> list[float]:
    """A list that fills with the times ``widget`` gets events of ``kind`` (``"Paint"``: it
    is on screen then); ``clock(event)`` instead of now (an X event's own time stamp)."""
    from PySide6.QtCore import QEvent, QObject

    times: list[float] = []
    wanted = getattr(QEvent.Type, kind)

    class Watch(QObject):
        def eventFilter(self, _obj: Any, event: Any) -> bool:  # noqa: N802
            if event.type() == wanted:
                times.append(clock(event) if clock else time.perf_counter())
            return False

    watch = Watch(widget)  # a child of the widget: lives as long as it
    widget.installEventFilter(watch)
    return times


def x_server_time(event: Any) -> float:
    """When the X server saw an input event, on ``time.perf_counter``'s clock: X time stamps
    are CLOCK_MONOTONIC milliseconds (32 bits), as perf_counter is on Linux."""
    now_ms = time.perf_counter() * 1000.0
    age_ms = (int(now_ms) - int(event.timestamp())) % 2**32
    return (now_ms - age_ms) / 1000.0


def xdotool(app: Any, *args: str) -> None:
    """Run xdotool; the window keeps handling events meanwhile."""
    p = subprocess.Popen(["xdotool", *args])
    while p.poll() is None:
        app.processEvents()
        time.sleep(0.001)


def isolated_settings(folder: Path) -> None:
    """The window's remembered options in a temporary folder: the defaults, as the CLI's."""
    from PySide6.QtCore import QSettings

    QSettings.setDefaultFormat(QSettings.Format.IniFormat)
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(folder))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--megapixels", type=float, default=12.0)
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per step")
    ap.add_argument("--load", type=int, default=0, metavar="N",
                    help="busy-loop processes running meanwhile")
    ap.add_argument("--parts", default="big,methods,strokes",
                    help="comma-separated: big (the 12 MP photo), methods (app vs CLI), "
                         "strokes (release → answer on screen, 0.25 MP and --megapixels)")
    ap.add_argument("--strokes", type=int, default=20, help="strokes of the strokes part")
    ap.add_argument("--sizes", default=None, metavar="MP,MP",
                    help="megapixels of the strokes part's photos (default: 0.25 and "
                         "--megapixels)")
    ap.add_argument("--methods", default="fastge,landmark,ensemble,ccskl")
    ap.add_argument("--repeat", type=int, default=1, help="rounds of the methods part")
    ap.add_argument("--xvfb", action="store_true",
                    help="a real X server (Xvfb) and real mouse events (xdotool) for the "
                         "stroke of the big part, as a person's")
    args = ap.parse_args()
    with contextlib.ExitStack() as stack:
        if args.xvfb:
            sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
            from xvfb import running_xvfb

            os.environ["DISPLAY"] = stack.enter_context(running_xvfb(reuse_display=False))
            os.environ["QT_QPA_PLATFORM"] = "xcb"
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
        run(args)


def run(args: argparse.Namespace) -> None:

    from segapp.gui.app import make_application

    app = make_application()
    parts = args.parts.split(",")
    with tempfile.TemporaryDirectory() as tmp, busy_loops(args.load):
        isolated_settings(Path(tmp) / "settings")
        print(f"load: {args.load} busy-loop process(es); os.getloadavg() "
              f"{os.getloadavg()[0]:.1f}")
        if "big" in parts:
            big_photo(app, Path(tmp), args)
        if "methods" in parts:
            methods_vs_cli(app, Path(tmp), args.methods.split(","), args.timeout, args.repeat)
        if "strokes" in parts:
            sizes = args.sizes.split(",") if args.sizes else (0.25, args.megapixels)
            for mp in map(float, sizes):
                strokes_to_answer(app, Path(tmp) / f"strokes{mp:g}", mp, args)


def wait(app: Any, done: Any, timeout: float) -> float:
    """Run the event loop until ``done()``; the seconds it took."""
    t0 = time.perf_counter()
    while not done() and time.perf_counter() - t0 < timeout:
        app.processEvents()
        time.sleep(0.002)
    return time.perf_counter() - t0


def shows_full_result(win: Any) -> bool:
    shown = win.state.shown
    return (shown is not None and shown.tag == win.display.tag
            and not shown.preview and not win.worker.is_busy)


def methods_vs_cli(app: Any, tmp: Path, names: list[str], timeout: float,
                   repeat: int = 1) -> None:
    """Each method in the window and on the command line, same photo, same scribbles, in
    turn (``repeat`` rounds: the machine's load changes between them)."""
    from segapp.samples import sample_path, sample_scribbles_path

    photo, strokes = Path(sample_path("coffee")), Path(sample_scribbles_path("coffee"))
    print(f"\nmethods on {photo.name} (0.24 MP): app (import → full result on screen) "
          "vs `segapp segment`")
    for round_ in range(repeat):
        for name in names:
            method_in_app_and_cli(app, tmp / f"round{round_}", name, photo, strokes, timeout)


def method_in_app_and_cli(app: Any, tmp: Path, name: str, photo: Path, strokes: Path,
                          timeout: float) -> None:
    from segapp.gui.main_window import MainWindow

    tmp.mkdir(exist_ok=True)
    win = MainWindow(recovery_dir=tmp / f"recovery-{name}")
    win.show()
    win.state.method = name
    win.open_path(photo)
    win.document.wait_loaded()
    solves = []
    win.worker.resultReady.connect(lambda *_a: solves.append("done"))
    win.worker.cancelled.connect(lambda *_a: solves.append("cancelled"))
    win.document.import_scribbles(strokes)
    seconds = wait(app, lambda: shows_full_result(win), timeout)
    solve = win.state.shown.seconds if win.state.shown is not None else float("nan")
    win.choose = lambda *a: "Discard"
    win.close()
    out = tmp / f"cli-{name}.png"
    t0 = time.perf_counter()
    run = subprocess.run([sys.executable, "-c", "import sys; from segapp.cli import main; "
                          "sys.exit(main())", "segment", str(photo),
                          "--scribbles", str(strokes), "-o", str(out), "--method", name],
                         capture_output=True, text=True)
    wall = time.perf_counter() - t0
    found = re.search(r"total ([0-9.]+)s", run.stdout)
    total = float(found[1]) if found else float("nan")
    print(f"  {name:9s} app {seconds:6.2f} s (its solve {solve:6.2f} s, "
          f"{solves.count('done')} solve(s), {solves.count('cancelled')} cancelled) | "
          f"CLI {wall:6.2f} s (segmentation {total:.2f} s) | app / CLI segmentation "
          f"{solve / total:.2f}"
          + ("" if run.returncode == 0 else f" exit {run.returncode}: {run.stderr[-200:]}"))


def feedback(what: str, released: float, paints: list[float], widget: Any) -> None:
    """When ``widget`` (the busy indicator) was first drawn after the release."""
    after = [t for t in paints if t >= released]
    print(f"  feedback: busy indicator drawn {(after[0] - released) * 1000:.0f} ms after "
          f"{what}" if after else f"  feedback: busy indicator never drawn after {what} "
          f"(visible: {widget.isVisible()})")


def strokes_to_answer(app: Any, tmp: Path, megapixels: float,
                      args: argparse.Namespace) -> None:
    """``args.strokes`` strokes, each from its release to its answers on screen (module doc)."""
    from PySide6.QtCore import Qt
    from PySide6.QtTest import QTest

    from segapp.gui.main_window import MainWindow

    tmp.mkdir(parents=True, exist_ok=True)
    photo, strokes = make_inputs(tmp, megapixels)
    win = MainWindow(recovery_dir=tmp / "recovery")
    win.resize(1200, 800)
    win.show()
    win.open_path(photo)
    win.document.wait_loaded()
    win.document.import_scribbles(strokes)
    wait(app, lambda: shows_full_result(win), args.timeout)
    h, w = win.model.shape
    k = len(win.state.shown.segmentation.label_ids)
    busy = event_times(win.progress, "Paint")
    paints = event_times(win.canvas.viewport(), "Paint")
    shown: list[tuple[float, Any, bool, Any]] = []  # (when, tag, hatched, its result)
    win.segmentationShown.connect(lambda tag: shown.append(
        (time.perf_counter(), tag, win.state.shown is not None and win.state.shown.preview,
         win.state.shown)))
    vp = win.canvas.viewport()
    rng = np.random.default_rng(0)
    to_busy, to_first, to_sharp, how, hatched = [], [], [], [], 0
    solve_first, solve_sharp = [], []  # the solver's own seconds of each

    def on_screen(t: float) -> float:  # the canvas's first paint once the overlay is set
        return next((p for p in paints if p >= t), float("nan"))

    def sharp_shown() -> bool:
        return any(tag == win.display.tag and not pre for _t, tag, pre, _r in shown) \
            and not win.worker.is_busy

    for i in range(args.strokes):
        win.select_label(1 + i % k)
        y, x = rng.uniform(0.1, 0.9), rng.uniform(0.1, 0.8)
        a = win.canvas.mapFromScene(x * w, y * h)
        b = win.canvas.mapFromScene((x + 0.05) * w, (y + 0.01) * h)
        QTest.mousePress(vp, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, a)
        for f in np.linspace(0.1, 1.0, 8):
            QTest.mouseMove(vp, a + (b - a) * float(f))
        shown.clear()
        released = time.perf_counter()
        QTest.mouseRelease(vp, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, b)
        wait(app, sharp_shown, args.timeout)
        wait(app, lambda: not np.isnan(on_screen(shown[-1][0])), 1.0)  # and painted
        mine = [(t, pre, r) for t, tag, pre, r in shown if tag == win.display.tag]
        after = [t for t in busy if t >= released]
        to_busy.append(after[0] - released if after else float("nan"))
        to_first.append(on_screen(mine[0][0]) - released if mine else float("nan"))
        to_sharp.append(on_screen(mine[-1][0]) - released if mine else float("nan"))
        hatched += bool(mine) and mine[0][1]
        timings = [r.segmentation.timings if mine else {} for _t, _p, r in mine[:1] + mine[-1:]]
        solve_first.append(timings[0].get("total", float("nan")) if mine else float("nan"))
        solve_sharp.append(timings[-1].get("total", float("nan"))
                           + timings[-1].get("refine", 0.0) if mine else float("nan"))
        how.append(getattr(win.state.shown.segmentation.diagnostics, "reason", ""))
        wait(app, lambda: False, 0.3)                     # the person looks at it
    direct = sum("direct" in r for r in how)
    print(f"\n{args.strokes} strokes on {photo.name} ({w}×{h}, {w * h / 1e6:.2f} MP), "
          f"release → busy indicator median {np.nanmedian(to_busy) * 1000:.0f} ms, worst "
          f"{np.nanmax(to_busy) * 1000:.0f} ms")
    print(f"  release → first answer on screen median {np.nanmedian(to_first):.2f} s, worst "
          f"{np.nanmax(to_first):.2f} s ({hatched} of {args.strokes} hatched: a working "
          f"answer whose edges are still being solved at full resolution)")
    print(f"  release → sharp answer on screen median {np.nanmedian(to_sharp):.2f} s, worst "
          f"{np.nanmax(to_sharp):.2f} s; {direct} of {len(how)} answered by the direct solver")
    print(f"  of which the solve (Session.update{', then refine' if hatched else ''}): "
          f"first {np.nanmedian(solve_first):.2f} s, sharp {np.nanmedian(solve_sharp):.2f} s; "
          f"the rest, the app's own route: median "
          f"{np.nanmedian(np.subtract(to_first, solve_first)) * 1000:.0f} ms (first), "
          f"{np.nanmedian(np.subtract(to_sharp, solve_sharp)) * 1000:.0f} ms (sharp)")
    win.choose = lambda *a: "Discard"
    win.close()


def big_photo(app: Any, tmp: Path, args: argparse.Namespace) -> None:
    from PySide6.QtCore import Qt, QTimer
    from PySide6.QtTest import QTest

    from segapp.gui.main_window import MainWindow

    photo, strokes = make_inputs(tmp, args.megapixels)
    win = MainWindow(recovery_dir=tmp / "recovery")
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
        return shows_full_result(win)

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
        points = [a + (b - a) * float(k) for k in np.linspace(0.1, 1.0, 10)]
        if args.xvfb:  # the X server's pointer: events queue up as a person's do
            win.activateWindow()
            xdotool(app, "mousemove", *map(str, vp.mapToGlobal(a).toTuple()))
            xdotool(app, "mousedown", "1")
            for p in points:
                xdotool(app, "mousemove", *map(str, vp.mapToGlobal(p).toTuple()))
            seen = len(releases)
            xdotool(app, "mouseup", "1")
            wait(app, lambda: len(releases) > seen, 10.0)  # the release handled
            return
        QTest.mousePress(vp, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, a)
        for p in points:
            QTest.mouseMove(vp, p)
        releases.append(time.perf_counter())
        QTest.mouseRelease(vp, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, b)

    # the release: when the X server saw it (--xvfb), or when QTest sends it
    releases = event_times(win.canvas.viewport(), "MouseButtonRelease", x_server_time) \
        if args.xvfb else []
    busy_paints = event_times(win.progress, "Paint")
    step("one more stroke (re-solve)", stroke, full_result)
    feedback("the stroke's release", releases[-1] if releases else time.perf_counter(),
             busy_paints, win.progress)

    # Undo and redo of that stroke: their results are cached; how soon is each overlay shown?
    ctrl, shift = Qt.KeyboardModifier.ControlModifier, Qt.KeyboardModifier.ShiftModifier
    step("undo the stroke (Ctrl+Z, cached)",
         lambda: QTest.keyClick(win.canvas, Qt.Key.Key_Z, ctrl), full_result)
    step("redo the stroke (Ctrl+Shift+Z, cached)",
         lambda: QTest.keyClick(win.canvas, Qt.Key.Key_Z, ctrl | shift), full_result)

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
        clicks.append(time.perf_counter())
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

    idle()
    win.select_label(1)
    clicks: list[float] = []
    edit_step(f"fill (G, click on the largest region, {len(ys) / shown.size:.0%} of the "
              "image)", fill)
    feedback("the fill's click", clicks[-1], busy_paints, win.progress)
    edit_step("undo the fill (Ctrl+Z)", keys(Qt.Key.Key_Z, ctrl))
    edit_step("redo the fill (Ctrl+Shift+Z)", keys(Qt.Key.Key_Z, ctrl | shift))
    edit_step("clear all strokes (Ctrl+Delete)", keys(Qt.Key.Key_Delete, ctrl))
    edit_step("undo the clear (Ctrl+Z)", keys(Qt.Key.Key_Z, ctrl))
    idle()

    # Writing files, in the background: the window's pauses while a session is saved and
    # while Export All writes every file (the GUI tests check where that work runs)
    from segapp.gui.files import EXPORT_KINDS

    reports: list[Any] = []
    win.document.exporter.finished.connect(reports.append)
    step("save the session (Ctrl+S)",
         lambda: win.document.save_session(tmp / "saved.segapp.json"),
         lambda: not win.document.dirty)
    (tmp / "export").mkdir(exist_ok=True)
    step("export all (Ctrl+E)",
         lambda: win.document.export_to(tmp / "export" / "big.png", EXPORT_KINDS),
         lambda: bool(reports))
    if reports:
        print(f"  {reports[0].message()}")
    idle()
    reopen(app, win, tmp, args.timeout)
    win.choose = lambda *a: "Discard"
    win.close()


def reopen(app: Any, win: Any, tmp: Path, timeout: float) -> None:
    """Save the session, open it in a second window of the same size: what differs on screen
    (and why: the zoom, the scroll, the segmentation)?"""
    from segapp.gui.main_window import MainWindow

    win.document.save_session(tmp / "big.segapp.json", wait=True)
    other = MainWindow(recovery_dir=tmp / "recovery-reopened")
    other.resize(win.size())
    other.show()
    other.open_path(tmp / "big.segapp.json")
    other.document.wait_loaded()
    wait(app, lambda: shows_full_result(other), timeout)
    wait(app, lambda: False, 1.0)  # the overlay drawn
    views = [w.canvas.viewport().grab().toImage() for w in (win, other)]
    a, b = (np.frombuffer(v.constBits(), np.uint8).reshape(v.height(), v.bytesPerLine())
            for v in views)
    mask = (a.reshape(a.shape[0], -1, 4) != b.reshape(b.shape[0], -1, 4)).any(-1) \
        if a.shape == b.shape else np.ones((1, 1), bool)
    differ = int(mask.sum())
    if differ:
        ys, xs = np.nonzero(mask)
        print(f"  differing screen pixels in x {xs.min()}–{xs.max()}, y {ys.min()}–{ys.max()}; "
              f"brush ring shown in the first window: {win.canvas._cursor_item.isVisible()}")
        if os.environ.get("SEGAPP_BENCH_DUMP"):  # both views, to look at
            for v, name in zip(views, ("saved", "reopened")):
                v.save(str(Path(os.environ["SEGAPP_BENCH_DUMP"]) / f"{name}.png"))
    labels = [np.asarray(w.state.shown.labels) for w in (win, other)]
    print(f"re-opened session: {differ} screen pixels differ; zoom {win.canvas.zoom:.4f} vs "
          f"{other.canvas.zoom:.4f}, scroll "
          f"{(win.canvas.horizontalScrollBar().value(), win.canvas.verticalScrollBar().value())}"
          f" vs {(other.canvas.horizontalScrollBar().value(), other.canvas.verticalScrollBar().value())}"
          f"; segmentation differs in {int((labels[0] != labels[1]).sum())} image pixels; "
          f"strokes equal: {np.array_equal(win.model.scribbles, other.model.scribbles)}")
    other.choose = lambda *a: "Discard"
    other.close()


if __name__ == "__main__":
    main()
