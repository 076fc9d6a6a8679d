"""The batch report: one row per image, as CSV (spreadsheets) and JSON (scripts).

``report.csv`` has the columns :data:`segapp.batch.task.ROW_FIELDS`; ``report.json`` holds
``{"summary": {...}, "images": [rows]}``. Both are rewritten atomically (temporary file in the
same folder, fsync, rename) while the batch runs and at its end, so an interrupted batch
leaves a complete report of what it finished, and a resumed batch reads the previous JSON to
keep the figures of the images it skips.

Row ``status``: ``ok``; ``failed`` (``error`` says why: unreadable file, size mismatch,
solver failure, unwritable output, a worker that died repeatedly, another image with the same
stem); ``skipped`` (its outputs existed — the previous run's figures are kept when known);
``no_scribbles`` (an image without a scribble file: reported, not counted as failed).
"""

from __future__ import annotations

import contextlib
import csv
import io as _io
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from .task import ROW_FIELDS

__all__ = ["STATUSES", "write_report", "read_previous", "write_text_atomic"]

STATUSES = ("ok", "failed", "skipped", "no_scribbles")


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` so that ``path`` is always either the old or the complete new file."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)  # mkstemp's 0o600 would make the report private
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_report(out_dir: Path, rows: list[dict[str, Any]], summary: dict[str, Any]) -> None:
    """Write ``report.csv`` and ``report.json`` into ``out_dir`` (rows sorted by image)."""
    rows = sorted(rows, key=lambda r: str(r.get("image", "")))
    buf = _io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=ROW_FIELDS, extrasaction="ignore")
    writer.writeheader()
    writer.writerows(rows)
    write_text_atomic(Path(out_dir) / "report.csv", buf.getvalue())
    doc = {"summary": summary, "images": [{k: r.get(k, "") for k in ROW_FIELDS} for r in rows]}
    write_text_atomic(Path(out_dir) / "report.json", json.dumps(doc, indent=1) + "\n")


def read_previous(out_dir: Path) -> dict[str, dict[str, Any]]:
    """Rows of an earlier ``report.json`` in ``out_dir`` by image path ({} if none/unreadable)."""
    path = Path(out_dir) / "report.json"
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        return {str(r["image"]): r for r in doc["images"] if isinstance(r, dict)}
    except (OSError, ValueError, KeyError, TypeError):
        return {}
