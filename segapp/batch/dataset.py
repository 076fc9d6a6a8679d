"""The dataset exports of ``segapp batch`` (``--labels``, ``--indexed``, ``--soft``, ``--coco``,
``--sidecar``): per image in the task's worker (:func:`task_outputs`), per batch in the
parent once every image is done (:func:`write_batch_files`: one COCO file and one labels JSON
for the whole output folder)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["DatasetOptions", "task_outputs", "write_batch_files"]


@dataclass(frozen=True)
class DatasetOptions:
    """What a task writes beside its label map (picklable: the schema travels as its JSON)."""

    schema: str | None = None  # the --labels schema's JSON text
    indexed: bool = False
    soft: bool = False

    def parsed_schema(self) -> Any:
        from ..editing.schema import LabelSchema
        return None if self.schema is None else LabelSchema.from_json(self.schema)


def task_outputs(options: DatasetOptions, output: Path, result: Any,
                 schema: Any) -> list[tuple[Path, Any]]:
    """The label map (indexed or grey) and, with ``soft``, the 16-bit confidence and soft
    masks ``STEM_confidence.png``, ``STEM_soft<id>_<name>.png`` beside it."""
    from .. import exports
    from ..cli.exports import _schema, label_map_payload

    items: list[tuple[Path, Any]] = [(output, label_map_payload(
        result.labels, options.indexed, schema, result.label_ids))]
    if options.soft:
        if result.confidence is None:
            from ..errors import InvalidInputError
            raise InvalidInputError(f"--soft: method {result.method} gives no confidence")
        items += exports.soft_outputs(output.parent, f"{output.stem}_", result.labels,
                                      result.confidence, result.label_ids,
                                      _schema(schema, result.label_ids))
    return items


def write_batch_files(out: Path, rows: list[dict[str, Any]], schema: Any, coco: bool,
                      sidecar: bool) -> list[Path]:
    """``OUT/labels.json`` (the labels) and, with ``coco``, ``OUT/annotations.json`` of every
    image segmented now or before (status ok or skipped), read back from its label map."""
    from .. import exports
    from ..cli.exports import _schema
    from ..io import write_pngs_atomic
    from PIL import Image

    done = [r for r in rows if r.get("status") in ("ok", "skipped") and r.get("output")
            and Path(str(r["output"])).is_file()]

    def read(path: str) -> np.ndarray:
        with Image.open(path) as img:
            return np.asarray(img).copy()

    if schema is None:  # the ids found in the label maps, default names
        found: set[int] = set()
        for r in done:
            found |= {int(i) for i in np.unique(read(str(r["output"]))) if i > 0}
        schema = _schema(None, found or {1})
    items: list[tuple[Path, Any]] = [(out / "labels.json", exports.sidecar_json(
        schema, extra={"masks": "*.png", "images": sorted({str(Path(str(r["image"])).parent)
                                                          for r in done})}))]
    if coco:
        images = [exports.CocoImage(Path(str(r["image"])).name,
                                    lambda p=str(r["output"]): read(p),
                                    Path(str(r["output"])).name) for r in done]
        items.append((out / "annotations.json",
                      exports.coco_for_masks(images, schema, f"segapp batch into {out.name}")))
    if not (coco or sidecar):
        return []
    return write_pngs_atomic(items, overwrite=True)
