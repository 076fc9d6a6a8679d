"""The fill, import and crash-recovery paths of issue 23, by a person at a real X server.

``segapp IMAGE`` runs as its own process under Xvfb; xdotool moves the real pointer, presses
real keys and answers the real dialogs (file dialogs, "Import strokes", "Restore previous
work?"). What the person did is checked in the session files the app saves (Ctrl+S), which
hold its strokes exactly, and the app is killed with SIGKILL before the restore.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from PIL import Image

from .test_xvfb_app import LEFT, RIGHT, find, grab, xdotool  # noqa: F401  (fixture)

REPO = Path(__file__).resolve().parents[2]
H, W = 200, 300


def halves(path: Path) -> Path:
    rng = np.random.default_rng(0)
    img = np.empty((H, W, 3), float)
    img[:, : W // 2] = LEFT
    img[:, W // 2:] = RIGHT
    Image.fromarray(np.clip(img + rng.normal(0, 3, img.shape), 0, 255).astype(np.uint8)).save(path)
    return path


class Person:
    """One segapp process on the Xvfb display and the xdotool hands that use it."""

    def __init__(self, exe: str, env: dict, photo: Path, shots: Path) -> None:
        self.exe, self.env, self.shots = exe, env, iter(shots / f"s{i}.png" for i in range(10**4))
        self.app = subprocess.Popen(
            [sys.executable, "-c", "import sys; from segapp.cli import main; "
             "sys.exit(main(sys.argv[1:]))", str(photo)],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.box = None

    def xdo(self, *args: str) -> str:
        return subprocess.run([self.exe, *args], env=self.env, check=True, capture_output=True,
                              text=True, timeout=90).stdout

    def window(self, name: str) -> str:
        """Wait for a window whose title contains ``name``; give it the keyboard."""
        wid = self.xdo("search", "--sync", "--onlyvisible", "--name", name).split()[0]
        self.xdo("windowfocus", "--sync", wid)
        return wid

    def find_image(self, deadline: float = 90.0, like: tuple | None = None) -> None:
        """Where the photo is on screen (screen pixels of its corners). ``like``: where it
        was in an earlier window of the same size; there it may already lie under a
        segmentation's colours (a restored session is solved at once, and its answer can be
        on screen before the first screenshot)."""
        from segapp.io import render

        under = [(np.array(side) + np.array(colour)) / 2
                 for side in (LEFT, RIGHT) for colour in render.PALETTE[:5]]
        end = time.monotonic() + deadline
        while time.monotonic() < end:
            shot = grab(self.env, next(self.shots))
            if like is not None:
                x0, y0, x1, y1 = like
                there = shot[y0:y1, x0:x1]
                if np.logical_or.reduce([find(there, c) for c in [LEFT, RIGHT] + under]
                                        ).mean() > 0.8:
                    self.box = like
                    return
            both = find(shot, LEFT) | find(shot, RIGHT)
            if both.sum() > 5000:
                ys, xs = np.nonzero(both)
                self.box = (xs.min(), ys.min(), xs.max() + 1, ys.max() + 1)
                return
            time.sleep(0.3)
        raise AssertionError("the image never appeared on screen")

    def at(self, x: float, y: float) -> tuple[str, str]:
        x0, y0, x1, y1 = self.box
        return str(int(x0 + x * (x1 - x0) / W)), str(int(y0 + y * (y1 - y0) / H))

    def keys(self, *keys: str) -> None:
        for k in keys:
            self.xdo("key", k)

    def stroke(self, points) -> None:
        self.xdo("mousemove", *self.at(*points[0]))
        self.xdo("mousedown", "1")
        for p in points[1:]:
            self.xdo("mousemove", *self.at(*p))
            time.sleep(0.02)
        self.xdo("mouseup", "1")

    def click(self, x: float, y: float) -> None:
        self.xdo("mousemove", *self.at(x, y))
        self.xdo("click", "1")

    def answer(self, dialog: str, *keys: str, path: Path | None = None) -> None:
        """Answer a dialog with ``keys`` (a file dialog: type ``path`` in its file name box,
        which has the keyboard), then give the keyboard back to the main window (without a
        window manager nobody else does)."""
        self.window(dialog)
        time.sleep(0.5)
        if path is not None:
            self.keys("ctrl+a")
            self.xdo("type", str(path))
        self.keys(*keys)
        time.sleep(0.5)
        self.window("halves.png")
        self.xdo("mousemove", *self.at(150, 100))

    def segmented(self, deadline: float = 120.0) -> None:
        """Wait until both halves show the segmentation's colours (label 1 and 2 blends)."""
        from segapp.io import render

        x0, y0, x1, y1 = self.box
        probes = [(int(x0 + (x1 - x0) * 0.25), int(y0 + (y1 - y0) * 0.12)),
                  (int(x0 + (x1 - x0) * 0.75), int(y0 + (y1 - y0) * 0.12))]
        want = [(np.array(side) + np.array(render.PALETTE[i])) / 2
                for side, i in ((LEFT, 0), (RIGHT, 1))]
        end = time.monotonic() + deadline
        while time.monotonic() < end:
            shot = grab(self.env, next(self.shots))
            got = [shot[y - 3:y + 4, x - 3:x + 4].reshape(-1, 3).mean(axis=0) for x, y in probes]
            if all(np.abs(g - e).max() < 20 for g, e in zip(got, want)):
                return
            time.sleep(0.3)
        raise AssertionError(f"no segmentation on screen: {got}, expected {want}")

    def kill(self) -> str:
        self.app.send_signal(signal.SIGKILL)
        _, err = self.app.communicate(timeout=30)
        return err


def saved(png: Path, after: float, deadline: float = 60.0) -> np.ndarray:
    """The strokes of a session file written after ``after`` (time.time())."""
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        if png.exists() and png.stat().st_mtime > after:
            time.sleep(0.3)  # written atomically: complete once it has its name
            return np.asarray(Image.open(png))
        time.sleep(0.2)
    raise AssertionError(f"{png.name} was not saved")


def test_fill_import_and_restore_by_a_person_at_an_x_server(xvfb_display, xdotool, tmp_path):
    photo = halves(tmp_path / "halves.png")
    env = {**os.environ, "QT_QPA_PLATFORM": "xcb", "DISPLAY": xvfb_display,
           "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
           "XDG_CONFIG_HOME": str(tmp_path / "config"), "XDG_DATA_HOME": str(tmp_path / "data")}
    (tmp_path / "shots").mkdir()
    me = Person(xdotool, env, photo, tmp_path / "shots")
    errors = []
    try:
        wid = me.window("halves.png")
        me.xdo("windowsize", wid, "1000", "700")
        me.find_image()
        me.xdo("mousemove", *me.at(150, 100))
        me.keys("1")
        me.stroke([(40, 100), (80, 80), (110, 120)])
        me.keys("2")
        me.stroke([(190, 100), (230, 80), (260, 120)])
        me.segmented()

        # the fill: 3, G, one click in the left half; then a drag is a stroke again
        me.keys("3", "g")
        me.click(20, 30)
        time.sleep(1.0)
        me.stroke([(200, 170), (260, 170)])  # still label 3: a fill would flood the right half
        t = time.time()
        me.keys("ctrl+s")
        session = tmp_path / "work.segapp.json"
        me.answer("Save session", "Return", path=session)
        s = saved(tmp_path / "work.segapp.png", t)
        left, right = s[:, : W // 2 - 5], s[:, W // 2 + 5:]
        assert (s == 1).sum() > 200 and (s == 2).sum() > 200  # the strokes stayed
        assert (left == 3).mean() > 0.9 and ((left == 3) | (left == 1)).all()
        assert 0 < (right == 3).mean() < 0.1  # the drag after the fill was a brush stroke

        # the import: a label-id PNG merged into the strokes, one undo step
        ids = np.zeros((H, W), np.uint8)
        ids[140:190, 160:290] = 5
        Image.fromarray(ids).save(tmp_path / "more.png")
        me.keys("ctrl+i")
        me.answer("Import scribbles", "Return", path=tmp_path / "more.png")
        me.answer("Import strokes", "Return")  # the default answer: Merge
        time.sleep(0.5)
        t = time.time()
        me.keys("ctrl+s")
        merged = saved(tmp_path / "work.segapp.png", t)
        np.testing.assert_array_equal(merged, np.where(ids > 0, ids, s))

        me.keys("ctrl+z", "4")  # the merge undone, painting with label 4 ...
        time.sleep(1.0)
    finally:
        errors.append(me.kill())  # ... when the app is killed

    again = Person(xdotool, env, photo, tmp_path / "shots")
    try:
        again.box = me.box  # where to park the pointer until find_image() below
        again.answer("Restore previous work", "Return")  # the default answer: Restore
        again.xdo("windowsize", again.window("halves.png"), "1000", "700")
        again.find_image(like=me.box)
        again.keys("ctrl+y")  # the undone merge can be redone after the restore
        time.sleep(0.5)
        again.stroke([(20, 195), (120, 195)])  # no label key: the label from before
        t = time.time()
        again.keys("ctrl+s")
        again.answer("Save session", "Return", path=tmp_path / "again.segapp.json")
        back = saved(tmp_path / "again.segapp.png", t)
        new = back != merged
        assert new.any() and (back[new] == 4).all() and not new[:180].any()  # the stroke
        np.testing.assert_array_equal(back[~new], merged[~new])
    finally:
        errors.append(again.kill())
    for err in errors:
        assert "Traceback" not in err, err
