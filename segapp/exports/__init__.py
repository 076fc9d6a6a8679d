"""Exports a training pipeline reads (no Qt): indexed PNGs with the schema's palette, a JSON
sidecar of the labels, COCO annotations with RLE masks, confidence and soft masks as 16-bit
PNGs. The app, ``segapp segment`` and ``segapp batch`` write them with these functions.

- :mod:`.indexed`: :func:`indexed_png`;
- :mod:`.sidecar`: :func:`sidecar_json`;
- :mod:`.coco`: :func:`~.coco.encode_mask`, :func:`~.coco.image_annotations`,
  :func:`~.coco.coco_document`;
- :mod:`.soft`: :func:`~.soft.unit_png`, :func:`~.soft.soft_masks`;
- :func:`soft_outputs` and :func:`coco_for_masks`: what the three front ends share.

Everything is returned as payloads for :func:`segapp.io.write_pngs_atomic` (Pillow images and
bytes), so each front end writes its set of files atomically.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

from ..editing.schema import LabelSchema
from .coco import coco_document, coco_json, image_annotations
from .indexed import indexed_png, palette_of
from .sidecar import sidecar_json
from .soft import soft_masks, unit_png

__all__ = ["indexed_png", "palette_of", "sidecar_json", "soft_masks", "unit_png",
           "soft_outputs", "coco_for_masks", "slug", "CocoImage"]


def slug(name: str) -> str:
    """A label name as part of a file name: ``Sky / clouds`` → ``sky-clouds``."""
    s = re.sub(r"[^A-Za-z0-9_-]+", "-", name.strip()).strip("-").lower()
    return s or "label"


def soft_outputs(folder: Path, prefix: str, labels: np.ndarray, confidence: np.ndarray,
                 label_ids: Sequence[int], schema: LabelSchema) -> list[tuple[Path, Any]]:
    """``{prefix}confidence.png`` and ``{prefix}soft<id>_<name>.png`` per label (16-bit)."""
    items: list[tuple[Path, Any]] = [(folder / f"{prefix}confidence.png", unit_png(confidence))]
    for i, soft in soft_masks(labels, confidence, label_ids).items():
        items.append((folder / f"{prefix}soft{i}_{slug(schema.name(i))}.png", unit_png(soft)))
    return items


class CocoImage:
    """One image of a COCO file: its name, the label map (or a function reading it) and the
    mask file beside the COCO file."""

    def __init__(self, file_name: str, labels: Any, mask: str | None = None) -> None:
        self.file_name, self._labels, self.mask = file_name, labels, mask

    def labels(self) -> np.ndarray:
        return np.asarray(self._labels() if callable(self._labels) else self._labels)


def coco_for_masks(images: Iterable[CocoImage], schema: LabelSchema,
                   description: str = "") -> bytes:
    """A COCO file (bytes) with one image entry per :class:`CocoImage` and one RLE
    annotation per label present in it (see :mod:`.coco`)."""
    entries, anns = [], []
    for n, item in enumerate(images, start=1):
        lab = item.labels()
        entry = {"id": n, "file_name": item.file_name, "width": int(lab.shape[1]),
                 "height": int(lab.shape[0])}
        if item.mask:
            entry["segapp_mask"] = item.mask
        entries.append(entry)
        anns += image_annotations(lab, n, len(anns) + 1)
    return coco_json(coco_document(schema, entries, anns, description))
