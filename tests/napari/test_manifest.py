"""The plugin's names resolve, with or without napari installed: every ``python_name`` of the
npe2 manifest names a top-level definition of its module (read from the source, so napari need
not be importable), and every package or module of segapp gives each name its ``__all__``
lists (``segapp.napari.SegmentWidget`` was listed and raised ``ModuleNotFoundError``)."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import re
from pathlib import Path

import pytest

import segapp

PACKAGE = Path(segapp.__file__).parent
MANIFEST = PACKAGE / "napari" / "napari.yaml"


def python_names() -> list[str]:
    return re.findall(r"^\s*python_name:\s*(\S+)\s*$", MANIFEST.read_text(), flags=re.M)


def test_the_manifest_names_the_widget_and_the_sample():
    assert python_names() == ["segapp.gui.napari_dock:SegmentWidget",
                              "segapp.napari.sample:coffee"]


@pytest.mark.parametrize("name", python_names())
def test_every_manifest_name_is_defined_where_it_points(name):
    module, _, attr = name.partition(":")
    path = PACKAGE.parent.joinpath(*module.split(".")).with_suffix(".py")
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    defined = {n.name for n in tree.body
               if isinstance(n, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))}
    assert attr in defined, f"{path.relative_to(PACKAGE.parent)} defines no {attr}"


def _modules() -> list[str]:
    names = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


NEEDS_NAPARI = {"segapp.gui.napari_dock"}


@pytest.mark.parametrize("module", _modules())
def test_every_name_in_all_is_there(module):
    if module in NEEDS_NAPARI and importlib.util.find_spec("napari") is None:
        pytest.skip("napari is not installed (pip install 'segapp[napari]')")
    if module.endswith("__main__"):
        pytest.skip("running it starts the program")
    mod = importlib.import_module(module)
    missing = [n for n in getattr(mod, "__all__", ()) if not hasattr(mod, n)]
    assert not missing, f"{module}.__all__ lists {missing}, which it does not give"


def test_the_napari_package_loads_neither_napari_nor_qt():
    import subprocess
    import sys
    code = ("import sys, segapp.napari, segapp.napari.model, segapp.napari.sample; "
            "print(sorted(m for m in ('napari', 'qtpy', 'PySide6') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, cwd=PACKAGE.parent)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]"
