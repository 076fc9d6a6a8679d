"""benchmarks/speed.py runs (its --quick form): one row per CHOLMOD library and path, the
second-edit column, and how each edit was solved."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from segapp.solve import cholmod

REPO = Path(__file__).resolve().parents[1]


def test_speed_quick_prints_a_row_per_library_and_the_second_edit():
    proc = subprocess.run([sys.executable, str(REPO / "benchmarks" / "speed.py"), "--quick",
                           "--no-memory", "--no-peer", "--cholmod", "system", "system"],
                          capture_output=True, text=True, timeout=600, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = proc.stdout
    assert " 2nd " in out and "load average at start" in out
    rows = [ln for ln in out.splitlines() if ln.lstrip().startswith("44K") and " | " in ln]
    lib = cholmod.library()
    want = (["CHOLMOD " + ".".join(map(str, lib.version))] if lib else []) + ["iterative"]
    assert [r.split("|")[0].split(None, 3)[3].strip() for r in rows] == want   # once each
    assert "2nd: potentials" in out
