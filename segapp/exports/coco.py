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

__all__ = ["rle_counts", "rle_string", "encode_mask", "image_annotations", "coco_document",
           "coco_json"]


def rle_counts(mask: np.ndarray) -> list[int]:
    """Run lengths of a binary ``(H, W)`` mask read column by column, starting with 0s."""
    flat = np.asarray(mask, dtype=bool).ravel(order="F")
    if flat.size == 0:
        return []
    edges = np.flatnonzero(flat[1:] != flat[:-1]) + 1
    bounds = np.concatenate([[0], edges, [flat.size]])
    runs = np.diff(bounds).tolist()
    return ([0] + runs) if flat[0] else runs


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
    ids = sorted(int(i) for i in (np.unique(lab) if label_ids is None else label_ids) if i > 0)
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
