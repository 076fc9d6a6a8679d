"""pyproject.toml lists every package of segapp/ (a plain, non-editable install ships only those)."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_package_is_listed():
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
                 ["packages"])
    found = {".".join(p.parent.relative_to(ROOT).parts)
             for p in (ROOT / "segapp").rglob("__init__.py")}
    assert found, "no package found under segapp/"
    assert found - listed == set(), "add these to [tool.setuptools] packages in pyproject.toml"


def test_a_session_started_beside_the_clone_imports_the_package_not_the_clone(tmp_path):
    """Issue 32: napari started (python -m napari, IPython, an empty PYTHONPATH entry) from the
    folder holding the clone "segapp" imported that folder as an empty namespace package: the
    editable install's import hook comes after Python's own finder, which takes a bare folder
    named segapp on sys.path. Installed as a plain path entry (package-dir "" = "."), the real
    package is found wherever the session starts."""
    import subprocess
    import sys

    clone = tmp_path / "segapp"  # what `git clone ... segapp` leaves beside the session
    clone.mkdir()
    (clone / "README.md").write_text("a clone")
    code = ("import segapp, segapp.samples; print(segapp.__file__); "
            "print(segapp.samples.samples_dir().is_dir())")
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    file, samples = out.stdout.split()
    assert file.endswith("__init__.py") and samples == "True"


def test_the_editable_install_is_a_path_entry_not_an_import_hook():
    """What the test above needs of pyproject.toml: one package root, no package mapped
    elsewhere (a mapping makes setuptools install an import hook instead)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert config.get("package-dir") == {"": "."}
    assert (ROOT / "segapp" / "sample_images" / "LICENSE.md").is_file()
