"""Run the real main window in this process and obey commands on stdin (fault-injection tests).

    python drive_app.py RECOVERY_DIR [IMAGE]

Commands, one per line; each answer is one JSON line on stdout:

    stroke LABEL X0 Y0 X1 Y1   paint a stroke with real mouse events on the canvas
    fill LABEL X Y             keys LABEL and G, a click on image point (X, Y); answers once
                               the fill is applied (a solve must have shown a result first)
    undo / redo                Ctrl+Z / Ctrl+Y; answers once applied
    label N                    key N (paint with label N)
    solve                      answer once a solve is running (busy)
    shown                      answer once the segmentation of the strokes is on screen
    export BASE                start Export All to BASE (answers at once)
    recover CHOICE [PATH]      offer_recovery() answering CHOICE (Restore/Discard/Later) and
                               PATH to "where is the image now?"
    status                     strokes, image, messages, label, undo and redo steps

The test kills the process with SIGKILL whenever it likes; nothing here cleans up.
"""

from __future__ import annotations

import hashlib
import json
import sys
import threading

import numpy as np
from PySide6.QtCore import QObject, Qt, QTimer, Signal
from PySide6.QtTest import QTest

from segapp.gui.app import make_application
from segapp.gui.main_window import MainWindow
from segapp.gui.qtcompat import emit


def digest(a: np.ndarray) -> str:
    return hashlib.sha1(np.ascontiguousarray(a, dtype=np.int32).tobytes()).hexdigest()


class Stdin(QObject):
    line = Signal(str)


def main() -> None:
    app = make_application()
    win = MainWindow(recovery_dir=sys.argv[1], debounce_ms=10)
    win.resize(900, 700)
    win.show()
    if len(sys.argv) > 2 and not (win.open_path(sys.argv[2]) and win.document.wait_loaded()):
        raise SystemExit(win.message_bar.text())

    def say(**kw) -> None:
        print(json.dumps(kw), flush=True)

    def status() -> dict:
        m = win.model
        return {"image": str(win.state.image_path) if win.state.image_path else None,
                "strokes": None if m is None else digest(m.scribbles),
                "painted": 0 if m is None else int(np.count_nonzero(m.scribbles)),
                "message": win.message_bar.text(), "busy": win.worker.is_busy,
                "label": win.state.label, "tool": win.state.tool,
                "undo": 0 if m is None else win.state.history._index,
                "redo": 0 if m is None else len(win.state.history._steps)
                - win.state.history._index,
                "info": win.statusBar().currentMessage()}

    def wait_busy() -> None:
        if win.worker.is_busy and win.worker.is_running:
            say(ok="solve", **status())
        else:
            QTimer.singleShot(5, wait_busy)

    def wait_shown() -> None:
        if win.state.shown is not None and win.state.shown.tag == win.display.tag \
                and not win.worker.is_busy:
            say(ok="shown", **status())
        else:
            QTimer.singleShot(20, wait_shown)

    def key(k: Qt.Key, modifier=Qt.KeyboardModifier.NoModifier) -> None:
        QTest.keyClick(win.canvas, k, modifier)

    def run(text: str) -> None:
        cmd, *args = text.split()
        ctrl = Qt.KeyboardModifier.ControlModifier
        if cmd == "stroke":
            label, x0, y0, x1, y1 = (float(a) for a in args)
            win.select_label(int(label))
            vp = win.canvas.viewport()
            a, b = win.canvas.mapFromScene(x0, y0), win.canvas.mapFromScene(x1, y1)
            QTest.mousePress(vp, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, a)
            for t in np.linspace(0.1, 1.0, 10):
                QTest.mouseMove(vp, a + (b - a) * float(t))
            QTest.mouseRelease(vp, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, b)
            say(ok="stroke", **status())
        elif cmd == "fill":
            label, x, y = int(args[0]), float(args[1]), float(args[2])
            key(Qt.Key(Qt.Key.Key_0 + label))
            key(Qt.Key.Key_G)
            QTest.mouseClick(win.canvas.viewport(), Qt.MouseButton.LeftButton,
                             Qt.KeyboardModifier.NoModifier, win.canvas.mapFromScene(x, y))
            win.document.wait_edits()
            say(ok="fill", **status())
        elif cmd in ("undo", "redo"):
            key(Qt.Key.Key_Z if cmd == "undo" else Qt.Key.Key_Y, ctrl)
            win.document.wait_edits()
            say(ok=cmd, **status())
        elif cmd == "label":
            key(Qt.Key(Qt.Key.Key_0 + int(args[0])))
            say(ok="label", **status())
        elif cmd == "solve":
            wait_busy()
        elif cmd == "shown":
            wait_shown()
        elif cmd == "export":
            say(ok="export", started=win.document.export_to(args[0], ("labels", "masks",
                                                                      "overlay", "heatmaps")))
        elif cmd == "recover":
            answers = [args[0]]
            win.choose = lambda *a: answers.pop(0) if answers else "Later"
            win.get_path = lambda *a, **k: args[1] if len(args) > 1 else None
            started = win.offer_recovery()
            win.document.wait_loaded()
            say(ok="recover", restored=started and win.model is not None, **status())
        elif cmd == "status":
            say(ok="status", **status())
        else:
            say(error=f"unknown command {cmd}")

    stdin = Stdin()
    stdin.line.connect(run)  # queued to the GUI thread

    def read() -> None:
        for text in sys.stdin:
            if text.strip():
                emit(stdin.line, text.strip())

    threading.Thread(target=read, daemon=True).start()
    say(ok="ready", **status())
    app.exec()


if __name__ == "__main__":
    main()
