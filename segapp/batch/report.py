"""The batch report: one row per image, as CSV (spreadsheets) and JSON (scripts).

``report.csv`` has the columns :data:`segapp.batch.task.ROW_FIELDS`; ``report.json`` holds
``{"summary": {...}, "images": [rows]}``. Both are rewritten atomically
(:func:`segapp.io.write_text_atomic`: temporary file in the same folder, fsync, rename)
while the batch runs and at its end, so an interrupted batch leaves a complete report of
what it finished, and a resumed batch reads the previous JSON to keep the figures of the
images it skips.

Row ``status``: ``ok``; ``failed`` (``error`` says why: unreadable file, size mismatch,
solver failure, unwritable output, a worker that died repeatedly, another image with the same
stem); ``skipped`` (its outputs existed — the previous run's figures are kept when known);
``no_scribbles`` (an image without a scribble file: reported, not counted as failed).
"""

from __future__ import annotations

import csv
import io as _io
import json
from pathlib import Path
from typing import Any

from ..errors import InvalidInputError
from ..io import write_text_atomic
from ..io.opening import read_input_bytes
from .task import ROW_FIELDS

__all__ = ["STATUSES", "REPORT_NAMES", "write_report", "read_previous"]

STATUSES = ("ok", "failed", "skipped", "no_scribbles")

#: The report's files in the output folder.
REPORT_NAMES = ("report.csv", "report.json")


def write_report(out_dir: Path, rows: list[dict[str, Any]], summary: dict[str, Any]) -> None:
    """Write ``report.csv`` and ``report.json`` into ``out_dir`` (rows sorted by image)."""
    rows = sorted(rows, key=lambda r: str(r.get("image", "")))
    buf = _io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=ROW_FIELDS, extrasaction="ignore")
    writer.writeheader()
    writer.writerows(rows)
    doc = {"summary": summary, "images": [{k: r.get(k, "") for k in ROW_FIELDS} for r in rows]}
    csv_path, json_path = (Path(out_dir) / name for name in REPORT_NAMES)
    write_text_atomic(csv_path, buf.getvalue())
    write_text_atomic(json_path, json.dumps(doc, indent=1) + "\n")


#: Largest ``report.json`` a resumed batch reads (a row is ~0.5 KB: 256 MiB is ~500,000 images);
#: a larger one is not read (the skipped images' figures are then not kept) and is replaced.
MAX_REPORT_BYTES = 256 << 20


def read_previous(out_dir: Path) -> dict[str, dict[str, Any]]:
    """Rows of an earlier ``report.json`` in ``out_dir`` by image path ({} if none/unreadable).

    Read as any input is (:func:`segapp.io.opening.read_input_bytes`): a regular file only (a
    FIFO would block, ``/dev/zero`` never ends) of at most :data:`MAX_REPORT_BYTES`.
    """
    path = Path(out_dir) / "report.json"
    try:
        doc = json.loads(read_input_bytes(path, MAX_REPORT_BYTES, "report").decode("utf-8"))
        return {str(r["image"]): r for r in doc["images"] if isinstance(r, dict)}
    except (InvalidInputError, ValueError, KeyError, TypeError):
        return {}
