"""Set-up: README's apt line is CI's list, and ``segapp`` without a usable Qt says why in one line."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from segapp.gui import preflight

REPO = Path(__file__).resolve().parents[2]


def apt_list() -> list[str]:
    return (REPO / ".ci" / "apt-packages.txt").read_text().split()


def test_readme_apt_line_is_the_list_ci_installs():
    readme = (REPO / "README.md").read_text()
    lines = re.findall(r"^sudo apt-get install (.+)$", readme, re.MULTILINE)
    assert len(lines) == 1, "README must have exactly one apt line"
    assert shlex.split(lines[0]) == apt_list()   # README quotes the apt pattern for the shell
    # every library the preflight check can name is installed by that line
    assert set(preflight.LIB_PACKAGES.values()) <= set(apt_list())


def test_ci_runs_readme_commands_in_a_fresh_virtual_environment():
    run = (REPO / ".ci" / "run").read_text()
    assert "python3 -m venv" in run and "--system-site-packages" not in run
    assert ".ci/apt-packages.txt" in run and "pip install -q -e ." in run
    assert "README.md" in run  # the test command is read from README, not copied


def run_segapp(env_changes: dict, tmp_path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY",
                                                              "QT_QPA_PLATFORM")}
    env.update({"XDG_CONFIG_HOME": str(tmp_path / "c"), "XDG_DATA_HOME": str(tmp_path / "d"),
                "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])})
    env.update(env_changes)
    return subprocess.run([sys.executable, "-c", "import sys; from segapp.cli import main; "
                           "sys.exit(main([]))"], env=env, capture_output=True, text=True,
                          timeout=120)


def check_one_line(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 4, (proc.returncode, proc.stderr)  # not Qt's abort (-6 / 134)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("segapp: error: "), proc.stderr
    assert "Traceback" not in proc.stderr
    return lines[0]


def test_no_display_is_one_line_and_exit_4_not_an_abort(tmp_path):
    line = check_one_line(run_segapp({}, tmp_path))
    assert "no display" in line or "missing system libraries" in line


def test_a_platform_qt_cannot_load_is_one_line_not_an_abort(tmp_path):
    line = check_one_line(run_segapp({"QT_QPA_PLATFORM": "nosuchplatform"}, tmp_path))
    assert "nosuchplatform" in line


LDD = """\
/x/QtGui.abi3.so:
\tlibEGL.so.1 => /lib/x86_64-linux-gnu/libEGL.so.1 (0x00007f)
\tlibxcb-cursor.so.0 => not found
/x/libqxcb.so:
\tlibxcb-cursor.so.0 => not found
\tlibxkbcommon-x11.so.0 => not found
\tlibweird.so.9 => not found
"""


def test_missing_libraries_are_named_with_the_packages_to_install(monkeypatch):
    assert preflight.missing_libraries(LDD) == ["libweird.so.9", "libxcb-cursor.so.0",
                                                "libxkbcommon-x11.so.0"]

    class Done:
        stdout = LDD

    monkeypatch.setenv("QT_QPA_PLATFORM", "xcb")
    monkeypatch.setattr(preflight.subprocess, "run", lambda *a, **k: Done())
    why = preflight.problem()
    assert why.startswith("Qt cannot start: missing system libraries libweird.so.9, "
                          "libxcb-cursor.so.0, libxkbcommon-x11.so.0")
    assert why.endswith("sudo apt-get install libweird.so.9 libxcb-cursor0 libxkbcommon-x11-0")


@pytest.mark.parametrize("platform", ["offscreen", "minimal"])
def test_headless_platforms_need_no_check(monkeypatch, platform):
    monkeypatch.setenv("QT_QPA_PLATFORM", platform)
    monkeypatch.setattr(preflight.subprocess, "run", None)  # would fail if called
    assert preflight.problem() is None
