"""Smoke test of ``benchmarks/gui.py --parts strokes`` on small photos, offscreen.

The script drives the real window (mouse press, drag, release) and reads what the app
shows; it stopped working once unnoticed when the displayed result's type changed. Here it
runs on a 0.05 MP photo (no working copy) and a 0.6 MP one (a working copy: its answer is
shown hatched first, then the sharp one), two strokes each, and every figure it prints must
be a number.
"""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_strokes_part_prints_first_and_sharp_answers_for_each_photo():
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    proc = subprocess.run([sys.executable, str(REPO / "benchmarks" / "gui.py"), "--parts",
                           "strokes", "--strokes", "2", "--sizes", "0.05,0.6", "--timeout",
                           "120"], capture_output=True, text=True, timeout=600, cwd=REPO,
                          env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    first = re.findall(r"release → first answer on screen median ([\w.]+) s, worst ([\w.]+) s "
                       r"\((\d) of 2 hatched", out)
    sharp = re.findall(r"release → sharp answer on screen median ([\w.]+) s, worst ([\w.]+) s;"
                       r" (\d) of 2 answered", out)
    assert len(first) == len(sharp) == 2, out
    for row in first + sharp:
        assert all(math.isfinite(float(v)) and float(v) > 0 for v in row[:2]), out
    # the small photo has no working copy; the larger one is answered hatched first
    assert [int(h) for *_t, h in first] == [0, 2], out
    for (f_med, _f, _h), (s_med, _s, _d) in zip(first, sharp):
        assert float(f_med) <= float(s_med), out
