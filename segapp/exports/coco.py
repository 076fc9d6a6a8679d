"""COCO annotations with RLE masks for a folder of label maps (one file for a training set).

One *stuff*-style annotation per label present in each image (as COCO-Stuff stores semantic
labels): ``category_id`` is the label id, ``segmentation`` the label's pixels as COCO's
compressed run-length encoding (``{"size": [H, W], "counts": "..."}``, what ``pycocotools.mask``
encodes and decodes), ``area`` its pixel count, ``bbox`` ``[x, y, width, height]``,
``iscrowd`` 0. The categories are the schema's labels (with their colour). ``file_name`` is the
image's name in its folder (the image root of a training script); ``segapp_mask`` names its
indexed PNG beside the COCO file.

The RLE (Microsoft COCO API, ``maskApi.c``): the mask is read column by column (Fortran
order), as alternating run lengths starting with a run of 0s; in the string each length after
the second is stored as its difference from the length two before, in little-endian groups of
5 bits, each a character ``48 + bits`` with 32 added while more groups follow (the last group's
bit 16 is the sign).
"""

from __future__ import annotations

import datetime
import json
from typing import Any, Iterable, Sequence

import numpy as np

from ..editing.schema import LabelSchema
from ..io.render import BAND_PIXELS, _row_bands

__all__ = ["rle_counts", "rle_string", "present_ids", "encode_mask", "image_annotations", "coco_document",
           "coco_json"]


def rle_counts(mask: np.ndarray) -> list[int]:
    """Run lengths of a binary ``(H, W)`` mask read column by column, starting with 0s.

    A band of columns at a time (:data:`segapp.io.render.BAND_PIXELS`): reading a 12 MP mask in
    column order in one call is a strided copy that held the GIL for 160 ms in the app's export
    thread."""
    m = np.asarray(mask, dtype=bool)
    if m.size == 0:
        return []
    h, w = m.shape
    step = max(1, BAND_PIXELS // max(h, 1))
    counts: list[int] = []
    value, length = False, 0  # the run being counted: the first is of 0s
    for c0 in range(0, w, step):
        flat = m[:, c0:c0 + step].ravel(order="F")
        edges = np.flatnonzero(flat[1:] != flat[:-1]) + 1
        runs = np.diff(np.concatenate(([0], edges, [flat.size])))
        if bool(flat[0]) != value:  # the band starts a new run
            counts.append(length)
            value, length = not value, 0
        length += int(runs[0])
        if len(runs) > 1:
            counts.append(length)
            counts.extend(int(r) for r in runs[1:-1])
            value, length = bool(flat[-1]), int(runs[-1])
    counts.append(length)
    return counts


def present_ids(labels: np.ndarray) -> list[int]:
    """The label ids (> 0) of a label map, band by band (``np.unique`` sorts 12 MP at once)."""
    lab = np.asarray(labels)
    seen = np.zeros(0, np.int64)
    for r0, r1 in _row_bands(*lab.shape):
        counts = np.bincount(lab[r0:r1].ravel())
        seen = np.pad(seen, (0, max(0, len(counts) - len(seen)))) + np.pad(
            counts, (0, max(0, len(seen) - len(counts))))
    return [int(i) for i in np.flatnonzero(seen) if i > 0]


def rle_string(counts: Sequence[int]) -> str:
    """COCO's compressed string of run lengths (see the module docstring)."""
    out: list[str] = []
    for i, x in enumerate(counts):
        x = int(x) - (int(counts[i - 2]) if i > 2 else 0)
        more = True
        while more:
            c = x & 0x1F
            x >>= 5  # arithmetic shift: a negative difference ends in -1
            more = (x != -1) if (c & 0x10) else (x != 0)
            if more:
                c |= 0x20
            out.append(chr(c + 48))
    return "".join(out)


def encode_mask(mask: np.ndarray) -> dict[str, Any]:
    """A binary mask as COCO's compressed RLE: ``{"size": [H, W], "counts": str}``."""
    m = np.asarray(mask, dtype=bool)
    return {"size": [int(m.shape[0]), int(m.shape[1])], "counts": rle_string(rle_counts(m))}


def image_annotations(labels: np.ndarray, image_id: int, first_id: int,
                      label_ids: Iterable[int] | None = None) -> list[dict[str, Any]]:
    """One annotation per label id present in ``labels`` (ids from ``first_id`` on)."""
    lab = np.asarray(labels)
    ids = sorted(int(i) for i in (present_ids(lab) if label_ids is None else label_ids) if i > 0)
    anns = []
    for i in ids:
        mask = lab == i
        area = int(mask.sum())
        if area == 0:
            continue
        rows, cols = np.flatnonzero(mask.any(axis=1)), np.flatnonzero(mask.any(axis=0))
        bbox = [int(cols[0]), int(rows[0]), int(cols[-1] - cols[0] + 1),
                int(rows[-1] - rows[0] + 1)]
        anns.append({"id": first_id + len(anns), "image_id": int(image_id), "category_id": i,
                     "segmentation": encode_mask(mask), "area": area, "bbox": bbox,
                     "iscrowd": 0})
    return anns


def coco_document(schema: LabelSchema, images: list[dict[str, Any]],
                  annotations: list[dict[str, Any]], description: str = "") -> dict[str, Any]:
    """The COCO dictionary: ``images`` are ``{"id", "file_name", "width", "height", ...}``."""
    return {
        "info": {"description": description or "segapp export",
                 "version": "1.0", "year": datetime.date.today().year,
                 "contributor": "segapp",
                 "date_created": datetime.datetime.now().isoformat(timespec="seconds")},
        "licenses": [],
        "images": images,
        "annotations": annotations,
        "categories": [{"id": lab.id, "name": lab.name, "supercategory": "",
                        "color": list(lab.color)} for lab in schema],
    }


def coco_json(document: dict[str, Any]) -> bytes:
    return (json.dumps(document) + "\n").encode("utf-8")
