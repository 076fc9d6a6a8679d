"""Every benchmark script imports and parses its command line (a script that no test runs
broke unnoticed once: benchmarks/gui.py after a result type changed).

The benchmarks with a fuller smoke test of their own run a small case elsewhere
(tests/test_speed_benchmark.py, tests/test_quality_smoke.py, ...); this one catches a renamed
import or a broken argument parser in all of them, in-process and in about a second each.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

SCRIPTS = sorted(p.stem for p in (Path(__file__).resolve().parents[1] / "benchmarks").glob("*.py")
                 if "def main(" in p.read_text(encoding="utf-8"))


def test_every_benchmark_with_a_command_line_is_listed():
    assert {"speed", "quality", "edges", "gui", "carry"} <= set(SCRIPTS)


@pytest.mark.parametrize("name", SCRIPTS)
def test_benchmark_imports_and_prints_its_help(name, monkeypatch, capsys):
    module = importlib.import_module(f"benchmarks.{name}")
    monkeypatch.setattr(sys, "argv", [f"{name}.py", "--help"])
    with pytest.raises(SystemExit) as stop:
        module.main()
    assert stop.value.code in (0, None)
    out = capsys.readouterr().out
    assert out.startswith("usage:"), out[:200]
