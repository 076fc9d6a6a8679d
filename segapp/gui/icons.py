"""Icons from the ``segapp/resources/`` folder (the data package ``segapp.resources``)."""

from __future__ import annotations

import functools
import importlib.resources
from pathlib import Path

from PySide6.QtGui import QIcon


@functools.lru_cache(maxsize=1)
def resources_dir() -> Path:
    """The resources folder: the installed data package, else the checkout's ``resources/``."""
    try:
        path = Path(str(importlib.resources.files("segapp.resources")))
        if path.is_dir():
            return path
    except (ModuleNotFoundError, TypeError, ValueError):
        pass
    return Path(__file__).resolve().parents[1] / "resources"


def icon(name: str) -> QIcon:
    """``QIcon`` of ``resources/icons/<name>.svg`` (an empty icon if it is missing)."""
    path = resources_dir() / "icons" / f"{name}.svg"
    return QIcon(str(path)) if path.is_file() else QIcon()


def app_icon() -> QIcon:
    return icon("segapp")
