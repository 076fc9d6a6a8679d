"""Where file dialogs start, and the recent files (kept in the host's settings store)."""

from __future__ import annotations

import os
from pathlib import Path

from .work import Work

MAX_RECENT = 8
FOLDER_KINDS = ("open", "import", "session", "export", "folder", "schema")
IMAGE_FILTER = ("Images (*.png *.jpg *.jpeg *.tif *.tiff *.bmp *.gif *.webp *.ppm *.pgm);;"
                "segapp sessions (*.segapp.json);;All files (*)")
SCRIBBLE_FILTER = "Scribble or label PNGs (*.png);;All files (*)"
SESSION_FILTER = "segapp sessions (*.segapp.json)"
SCHEMA_FILTER = "Labels (*.json);;All files (*)"


def _is_bundled(path: Path) -> bool:
    from ...samples import samples_dir

    try:
        return Path(path).resolve().is_relative_to(samples_dir().resolve())
    except (OSError, ValueError):
        return False


class Folders(Work):
    """The folder each kind of dialog (:data:`FOLDER_KINDS`) starts in, and recent files."""

    def folder(self, kind: str) -> Path:
        """Start folder of a file dialog: the last one used for ``kind``, else the image's
        folder, else (bundled samples, no image) the user's documents folder."""
        remembered = self.host.prefs().value(f"folders/{kind}", "")
        if remembered and Path(str(remembered)).is_dir():
            return Path(str(remembered))
        path = self.state.image_path
        if path is not None and not _is_bundled(path) and Path(path).parent.is_dir():
            return Path(path).parent
        return self.host.documents_dir

    def remember_folder(self, kind: str, path: str | os.PathLike) -> None:
        self.host.prefs().setValue(f"folders/{kind}", str(Path(path).resolve().parent))

    def recent_files(self) -> list[str]:
        value = self.host.prefs().value("recentFiles", [])
        if isinstance(value, str):
            value = [value]
        return [str(v) for v in (value or [])]

    def _add_recent(self, path: Path) -> None:
        p = str(Path(path).resolve())
        items = [p] + [r for r in self.recent_files() if r != p]
        self.host.prefs().setValue("recentFiles", items[:MAX_RECENT])
