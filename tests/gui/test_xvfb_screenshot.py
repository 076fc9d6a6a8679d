"""The real app under a real X server (Xvfb, platform xcb): paint the "chelsea" sample's
strokes with the mouse, screenshot, and check the segmentation on display is the one a person
expects (tests/showcase.py, the same check as the library's in tests/test_samples.py).

This is also how ``docs/screenshot.png`` is made (``segapp.gui.screenshot``); set
``SEGAPP_UPDATE_SCREENSHOT=1`` to write it there instead of a temporary folder.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import showcase  # tests/showcase.py
from PIL import Image

from segapp import samples

REPO = Path(__file__).resolve().parents[2]


def test_app_under_xvfb_paints_segments_and_screenshots(xvfb_display, tmp_path):
    out = (REPO / "docs" / "screenshot.png" if os.environ.get("SEGAPP_UPDATE_SCREENSHOT")
           else tmp_path / "screenshot.png")
    env = {**os.environ, "QT_QPA_PLATFORM": "xcb", "DISPLAY": xvfb_display,
           "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
           "XDG_CONFIG_HOME": str(tmp_path / "config"),  # never touch the user's settings
           "XDG_DATA_HOME": str(tmp_path / "data")}
    labels = tmp_path / "labels.png"
    proc = subprocess.run([sys.executable, "-m", "segapp.gui.screenshot", str(out),
                           "--timeout", "90", "--labels", str(labels)], env=env,
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["platform"] == "xcb" and report["ok"] and report["message"] == ""
    assert report["overlay_fraction"] > 0.5  # the overlay covers the image
    shot = np.asarray(Image.open(out).convert("RGB"))
    assert shot.shape[1::-1] == tuple(report["size"]) and shot.std() > 20
    # All the strokes of chelsea_strokes.txt were painted and gave the showcase's answer.
    strokes, names = showcase.read_stroke_file(samples.samples_dir() / "chelsea_strokes.txt")
    assert report["strokes"] == len(strokes)
    assert set(report["fractions"]) == {str(k) for k in names}
    assert showcase.faults(np.asarray(Image.open(labels))) == []
