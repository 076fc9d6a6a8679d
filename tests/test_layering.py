"""The package layers, read from the source: only ``segapp/gui`` imports Qt, and napari is
imported only by the plugin's dock widget (``segapp/gui/napari_dock.py``)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "segapp"
QT = {"PySide6", "PySide2", "PyQt5", "PyQt6", "qtpy", "shiboken6"}


def imported_roots(path: Path) -> set[str]:
    """Top-level names of every module ``path`` imports (absolute imports; anywhere in it)."""
    roots = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            roots |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
    return roots


SOURCES = sorted(PACKAGE.rglob("*.py"))


def test_the_walk_sees_the_imports():  # the check below cannot pass by finding nothing
    assert "PySide6" in imported_roots(PACKAGE / "gui" / "canvas.py")
    assert {"napari", "qtpy"} <= imported_roots(PACKAGE / "gui" / "napari_dock.py")


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_qt_only_in_gui_and_napari_only_in_its_widget(path):
    rel = path.relative_to(PACKAGE)
    roots = imported_roots(path)
    if rel.parts[0] != "gui":
        assert not roots & QT, f"{rel} imports Qt ({sorted(roots & QT)}): only segapp/gui may"
    if rel != Path("gui", "napari_dock.py"):
        assert "napari" not in roots, f"{rel} imports napari: only gui/napari_dock.py may"
