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
