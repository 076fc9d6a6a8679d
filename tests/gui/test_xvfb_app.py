"""The real app under a real X server (Xvfb), driven from outside with xdotool like a person.

``segapp IMAGE`` is started as its own process; xdotool moves the real mouse pointer and
presses real keys: two strokes are painted, the segmentation must appear in the label colours
over the regions painted, undo removes it, redo brings it back, Ctrl+E exports through
the real file dialog, and the exported label map must match the picture. Screenshots come from
the X server, not from the app.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from segapp.io import render


REPO = Path(__file__).resolve().parents[2]
H, W = 200, 300
LEFT, RIGHT = (200, 60, 40), (40, 70, 190)  # two plain halves, easy to find on screen


@pytest.fixture
def xdotool():
    exe = shutil.which("xdotool")
    if exe is None:
        pytest.skip("xdotool is not installed (apt-get install $(cat .ci/apt-packages.txt))")
    return exe


def grab(env, path: Path) -> np.ndarray:
    """Screenshot of the whole X screen, taken by another process (Qt on xcb)."""
    code = ("import sys; from PySide6.QtGui import QGuiApplication; "
            "app = QGuiApplication(sys.argv[:1]); "
            "app.primaryScreen().grabWindow(0).save(sys.argv[1])")
    subprocess.run([sys.executable, "-c", code, str(path)], env=env, check=True, timeout=60,
                   capture_output=True)
    return np.asarray(Image.open(path).convert("RGB")).astype(int)


def find(shot: np.ndarray, color, tol=25) -> np.ndarray:
    return (np.abs(shot - np.array(color)).max(axis=2) <= tol)


def test_segapp_under_xvfb_with_real_mouse_and_keys(xvfb_display, xdotool, tmp_path):
    rng = np.random.default_rng(0)
    img = np.empty((H, W, 3), float)
    img[:, : W // 2] = LEFT
    img[:, W // 2:] = RIGHT
    img = np.clip(img + rng.normal(0, 3, img.shape), 0, 255).astype(np.uint8)
    photo = tmp_path / "halves.png"
    Image.fromarray(img).save(photo)
    env = {**os.environ, "QT_QPA_PLATFORM": "xcb", "DISPLAY": xvfb_display,
           "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
           "XDG_CONFIG_HOME": str(tmp_path / "config"), "XDG_DATA_HOME": str(tmp_path / "data")}
    app = subprocess.Popen([sys.executable, "-c", "import sys; from segapp.cli import main; "
                            "sys.exit(main(sys.argv[1:]))", str(photo)], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def xdo(*args: str) -> str:
        return subprocess.run([xdotool, *args], env=env, check=True, capture_output=True,
                              text=True, timeout=60).stdout

    try:
        wid = xdo("search", "--sync", "--name", "halves.png").split()[0]
        xdo("windowsize", wid, "1000", "700")
        shots = iter(tmp_path / f"shot{i}.png" for i in range(1000))

        def image_box(deadline=60.0):
            end = time.monotonic() + deadline
            while time.monotonic() < end:
                shot = grab(env, next(shots))
                both = find(shot, LEFT) | find(shot, RIGHT)
                if both.sum() > 5000:
                    ys, xs = np.nonzero(both)
                    return shot, (xs.min(), ys.min(), xs.max() + 1, ys.max() + 1)
                time.sleep(0.3)
            raise AssertionError("the image never appeared on screen")

        shot, (x0, y0, x1, y1) = image_box()
        sx, sy = (x1 - x0) / W, (y1 - y0) / H  # screen pixels per image pixel

        def at(x, y):  # screen position of image point (x, y)
            return str(int(x0 + x * sx)), str(int(y0 + y * sy))

        def stroke(key, points):
            xdo("mousemove", *at(*points[0]))
            xdo("key", key)
            xdo("mousedown", "1")
            for p in points[1:]:
                xdo("mousemove", *at(*p))
                time.sleep(0.02)
            xdo("mouseup", "1")

        stroke("1", [(40, 100), (80, 80), (110, 120)])
        stroke("2", [(190, 100), (230, 80), (260, 120)])

        # the segmentation appears: each half blended with its label colour, as render does
        colors = [tuple(int(c) for c in render.PALETTE[i]) for i in (0, 1)]
        want = [tuple((np.array(side) + np.array(c)) / 2) for side, c in zip((LEFT, RIGHT), colors)]
        probe = [(int(x0 + 75 * sx), int(y0 + 25 * sy)), (int(x0 + 225 * sx), int(y0 + 25 * sy))]

        def looks(expected, deadline=90.0):
            end = time.monotonic() + deadline
            while time.monotonic() < end:
                shot = grab(env, next(shots))
                got = [shot[y - 3:y + 4, x - 3:x + 4].reshape(-1, 3).mean(axis=0)
                       for x, y in probe]
                if all(np.abs(g - e).max() < 20 for g, e in zip(got, expected)):
                    return shot
                time.sleep(0.3)
            raise AssertionError(f"screen shows {got}, expected {expected}")

        segmented = looks(want)
        Image.fromarray(segmented.astype(np.uint8)).save(tmp_path / "segmented.png")
        xdo("key", "ctrl+z")  # the label-2 stroke goes: one label, no segmentation
        looks([LEFT, RIGHT], deadline=30)
        xdo("key", "ctrl+y")  # back (from the cache, no solve: tests/gui/test_painting.py)
        looks(want, deadline=30)

        out = tmp_path / "out"
        out.mkdir()
        xdo("key", "ctrl+e")
        time.sleep(1.5)  # the file dialog opens with the file name selected
        xdo("key", "ctrl+a")
        xdo("type", str(out / "result.png"))
        xdo("key", "Return")
        end = time.monotonic() + 60
        while not (out / "result_overlay.png").exists() and time.monotonic() < end:
            time.sleep(0.3)
        labels = np.asarray(Image.open(out / "result_labels.png"))
        assert (labels[:, : W // 2 - 5] == 1).mean() > 0.98
        assert (labels[:, W // 2 + 5:] == 2).mean() > 0.98
        assert {p.name for p in out.iterdir()} >= {"result_labels.png", "result_overlay.png",
                                                     "result_mask1_label-1.png"}
    finally:
        app.kill()
        _, err = app.communicate(timeout=30)
    assert "Traceback" not in err, err
