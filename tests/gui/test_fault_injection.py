"""Kill -9 the app at bad moments; the next start offers back every completed stroke.

Each app runs in its own process (``drive_app.py``, the real main window driven with real
mouse events) and is killed with SIGKILL: after a stroke, during a solve, during an export;
and a second instance starts while the first one runs.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from segapp.gui.recovery import orphans

from .conftest import make_test_image

REPO = Path(__file__).resolve().parents[2]
DRIVER = Path(__file__).with_name("drive_app.py")

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs SIGKILL")


class App:
    """One app process obeying ``drive_app.py`` commands."""

    def __init__(self, tmp_path: Path, recovery: Path, image: Path | None = None) -> None:
        env = {**os.environ, "QT_QPA_PLATFORM": "offscreen",
               "XDG_CONFIG_HOME": str(tmp_path / "config"),
               "XDG_DATA_HOME": str(tmp_path / "data"),
               "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
        args = [sys.executable, str(DRIVER), str(recovery)] + ([str(image)] if image else [])
        self.proc = subprocess.Popen(args, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, bufsize=1)
        self.ready = self.read()

    def read(self, timeout: float = 120.0) -> dict:
        import selectors

        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if sel.select(timeout=0.5):
                line = self.proc.stdout.readline()
                if line.startswith("{"):
                    return json.loads(line)
                if not line and self.proc.poll() is not None:
                    break
        self.proc.kill()
        raise AssertionError(f"no answer from the app: {self.proc.stderr.read()[-2000:]}")

    def do(self, command: str, timeout: float = 120.0) -> dict:
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        return self.read(timeout)

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(30)
        assert self.proc.returncode == -signal.SIGKILL

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(30)


@pytest.fixture
def apps(tmp_path):
    started: list[App] = []

    def start(image: Path | None = None) -> App:
        app = App(tmp_path, tmp_path / "recovery", image)
        started.append(app)
        return app

    yield start
    for app in started:
        app.close()


@pytest.fixture
def image(tmp_path) -> Path:
    p = tmp_path / "disc.png"
    Image.fromarray(make_test_image()).save(p)
    return p


def test_killed_right_after_a_stroke(apps, image):
    app = apps(image)
    after = app.do("stroke 1 50 45 70 45")
    app.kill()  # at once: no timer had a chance to save anything
    again = apps()
    got = again.do("recover Restore")
    assert got["restored"] and got["strokes"] == after["strokes"] and got["painted"] > 0
    assert got["image"] == str(image)


def test_killed_during_a_solve_and_a_second_instance_never_takes_the_work(apps, image,
                                                                          tmp_path):
    big = tmp_path / "big.png"  # large enough for a solve to take a while
    rng = np.random.default_rng(1)
    Image.fromarray(rng.integers(0, 255, (900, 1200, 3), dtype=np.uint8)).save(big)
    first = apps(big)
    first.do("stroke 1 100 100 600 400")
    first.do("stroke 2 700 100 1100 800")
    assert first.do("solve")["busy"]
    second = apps()  # the first one is alive: its work is not offered, nor deleted
    got = second.do("recover Discard")
    assert not got["restored"] and got["image"] is None
    expected = first.do("stroke 3 100 700 500 850")  # still working, still journalled
    first.kill()
    third = apps()
    got = third.do("recover Restore")
    assert got["restored"] and got["strokes"] == expected["strokes"]


def test_killed_during_export_leaves_no_temporary_file_and_reports_what_is_missing(
        apps, tmp_path):
    big = tmp_path / "photo.png"  # 12 MP: its export takes seconds
    yy, xx = np.mgrid[0:3000, 0:4000]
    Image.fromarray(np.stack([xx % 256, yy % 256, (xx + yy) % 256], 2).astype(np.uint8)).save(big)
    app = apps(big)
    app.do("stroke 1 500 500 1500 600", timeout=300)
    done = app.do("stroke 2 2500 2000 3500 2100", timeout=300)
    out = tmp_path / "out"
    out.mkdir()
    deadline = time.monotonic() + 300
    while app.do("status")["busy"] and time.monotonic() < deadline:  # wait for the result
        time.sleep(0.2)
    assert app.do(f"export {out / 'photo.png'}")["started"]
    while not list(out.glob(".*.tmp")) and time.monotonic() < deadline:
        time.sleep(0.005)
    assert list(out.glob(".*.tmp")), "no export was in progress to kill"
    app.kill()
    assert list(out.glob(".*.tmp"))  # the kill left a half-written file behind
    again = apps()
    got = again.do("recover Restore")
    assert got["restored"] and got["strokes"] == done["strokes"]
    assert not list(out.glob(".*.tmp"))
    assert "not written: " in got["message"]
    named = got["message"].split("not written: ")[1].split(" and ")[0].split(", ")
    assert named and not any((out / name).exists() for name in named)
    assert orphans(tmp_path / "recovery") == []  # restored: the new instance's journal has it


def test_killed_after_a_fill_and_its_undo_the_restore_has_the_history_and_the_label(apps,
                                                                                    image):
    """Issue 23: after a restore undo and redo were empty, the label was 1 again, and the
    offer counted a fill that had been undone."""
    app = apps(image)
    app.do("stroke 1 50 45 70 45")
    painted = app.do("stroke 2 5 5 115 8")
    app.do("shown")
    filled = app.do("fill 3 60.5 45.5")
    assert filled["tool"] == "brush" and filled["painted"] > painted["painted"]
    undone = app.do("undo")
    assert undone["strokes"] == painted["strokes"] and (undone["undo"], undone["redo"]) == (2, 1)
    app.do("label 4")
    app.kill()
    again = apps()
    got = again.do("recover Restore")
    assert got["restored"] and got["strokes"] == painted["strokes"]
    assert (got["undo"], got["redo"], got["label"]) == (2, 1, 4)
    assert f"{painted['painted']} painted pixels, labels 1, 2" in got["info"]
    assert again.do("redo")["strokes"] == filled["strokes"]  # the undone fill comes back
