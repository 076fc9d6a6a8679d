"""The JSON that goes beside a mask: the label schema (ids, names, colours) and what the mask is.

It is a label schema file (:mod:`segapp.editing.schema`) with a few more keys, so it can be read
back as the schema (``segapp segment --labels photo_labels.json``)::

    {"format": "segapp-labels", "version": 1,
     "labels": [{"id": 1, "name": "sky", "color": [86, 180, 233]}, ...],
     "unlabelled": 0, "mask": "photo_labels.png", "image": "photo.jpg", "size": [H, W],
     "pixels": {"1": 120345, "2": 5012}}
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from ..editing.schema import SCHEMA_FORMAT, SCHEMA_VERSION, LabelSchema
from ..io.render import _row_bands

__all__ = ["sidecar_json"]


def sidecar_json(schema: LabelSchema, *, mask: str | None = None, image: str | None = None,
                 labels: np.ndarray | None = None, extra: dict[str, Any] | None = None) -> bytes:
    """The sidecar of a mask (or of a folder's masks, without ``mask`` / ``labels``), as UTF-8.

    ``labels``: the mask itself, for its size and the pixel count of each label."""
    doc: dict[str, Any] = {"format": SCHEMA_FORMAT, "version": SCHEMA_VERSION,
                           "labels": [lab.to_dict(states=False) for lab in schema],
                           "unlabelled": 0}
    if mask is not None:
        doc["mask"] = mask
    if image is not None:
        doc["image"] = image
    if labels is not None:
        lab = np.asarray(labels)
        doc["size"] = [int(lab.shape[0]), int(lab.shape[1])]
        counts = np.zeros(256, np.int64)
        for r0, r1 in _row_bands(*lab.shape):  # band by band: 12 MP at once held the GIL
            counts += np.bincount(lab[r0:r1].ravel(), minlength=256)[:256]
        doc["pixels"] = {str(i): int(n) for i, n in enumerate(counts) if i and n}
    doc.update(extra or {})
    return (json.dumps(doc, indent=1) + "\n").encode("utf-8")
