"""The label schema and dataset exports of ``segapp segment`` and ``segapp batch``.

``--labels LABELS.json`` reads a label schema (:mod:`segapp.editing.schema`; the app keeps a
folder's in ``FOLDER/segapp/labels.json``): scribbles are read with its ids (up to 255) and
colours, a painted id it does not hold is refused, and every export carries its names and
colours. The export flags add files beside the label map:

=================  ===============================================================================
``--indexed``      the label map as an indexed PNG in the labels' colours (the same pixel values)
``--sidecar``      ``OUT.json`` (segment) / ``OUT_DIR/labels.json`` (batch): ids, names, colours
``--soft``         16-bit confidence and one soft mask per label (segment: into DIR)
``--coco``         COCO annotations with RLE masks (segment: FILE; batch: OUT_DIR/annotations.json)
=================  ===============================================================================
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from ..editing.schema import LabelSchema, read_schema
from ..errors import InvalidInputError
from ..io.scribbles import DEFAULT_MAX_LABEL

__all__ = ["add_export_arguments", "schema_of", "scribble_options", "check_painted",
           "segment_outputs", "segment_items", "label_map_payload"]


def add_export_arguments(parser: argparse.ArgumentParser, batch: bool = False) -> None:
    group = parser.add_argument_group(
        "labels and dataset exports",
        "a label schema (ids, names, colours) and the files a training pipeline reads")
    group.add_argument("--labels", metavar="LABELS.json", default=None,
                       help="label schema (segapp-labels JSON, as the app's "
                            "FOLDER/segapp/labels.json): scribble ids up to 255 and colours "
                            "read by it, its names and colours in every export")
    group.add_argument("--indexed", action="store_true",
                       help="write label maps as indexed PNGs in the labels' colours (pixel "
                            "value = label id, as without it)")
    group.add_argument("--sidecar", action="store_true",
                       help=("also write OUT_DIR/labels.json" if batch else
                             "also write the labels' JSON beside the label map (LABELS.png → "
                             "LABELS.json)") + ": ids, names, colours")
    if batch:
        group.add_argument("--soft", action="store_true",
                           help="also write OUT_DIR/STEM_confidence.png and "
                                "STEM_soft<id>_<name>.png per label (16-bit: 65535 = 1)")
        group.add_argument("--coco", action="store_true",
                           help="also write OUT_DIR/annotations.json: COCO with an RLE mask "
                                "per label of every segmented image (with OUT_DIR/labels.json)")
    else:
        group.add_argument("--soft", metavar="DIR", default=None,
                           help="also write DIR/confidence.png and DIR/soft<id>_<name>.png per "
                                "label (16-bit: 65535 = 1)")
        group.add_argument("--coco", metavar="COCO.json", default=None,
                           help="also write COCO annotations with an RLE mask per label")


def schema_of(args: argparse.Namespace) -> LabelSchema | None:
    """The ``--labels`` schema, or None (InvalidInputError for a bad file: exit 2)."""
    return None if args.labels is None else read_schema(args.labels)


def scribble_options(schema: LabelSchema | None) -> dict[str, Any]:
    """What :func:`segapp.io.read_scribbles` takes from a schema: its largest id, its colours."""
    if schema is None:
        return {}
    return {"max_label": max(max(schema.ids()), DEFAULT_MAX_LABEL), "colors": schema.colors()}


def check_painted(schema: LabelSchema | None, painted: Iterable[int], source: str) -> None:
    """Every painted id must be a label of the schema."""
    if schema is None:
        return
    extra = sorted(int(i) for i in painted if int(i) not in schema)
    if extra:
        raise InvalidInputError(f"{source}: label{'s' if len(extra) > 1 else ''} "
                                f"{', '.join(map(str, extra))} painted but not in the --labels "
                                "schema")


def _schema(schema: LabelSchema | None, label_ids: Iterable[int]) -> LabelSchema:
    """The schema, or one of default names and colours for the ids found."""
    if schema is not None:
        return schema
    from ..editing.schema import Label
    from ..io.render import default_color
    return LabelSchema(Label(i, f"label {i}", default_color(i)) for i in sorted(label_ids))


def label_map_payload(labels: np.ndarray, indexed: bool, schema: LabelSchema | None,
                      label_ids: Iterable[int]) -> Any:
    """The label map to write: an indexed PNG image (``--indexed``) or the 8-bit array."""
    if indexed:
        from ..exports import indexed_png
        return indexed_png(labels, _schema(schema, label_ids))
    return np.asarray(labels).astype(np.uint8)


def _sidecar_path(output: Path) -> Path:
    return output.with_suffix(".json") if output.suffix.lower() == ".png" \
        else output.with_name(output.name + ".json")


def segment_outputs(args: argparse.Namespace) -> tuple[list[Path], Path | None]:
    """The files ``segment``'s export flags add (checked before any work) and the ``--soft``
    folder (its files depend on the labels found)."""
    out = [_sidecar_path(Path(args.output))] if args.sidecar else []
    if args.coco:
        out.append(Path(args.coco))
    return out, (Path(args.soft) if args.soft else None)


def segment_items(args: argparse.Namespace, image_path: str, result: Any,
                  schema: LabelSchema | None) -> list[tuple[Path, Any]]:
    """The export flags' files for one ``segment`` result, as payloads for
    :func:`segapp.io.write_pngs_atomic` (all written as one set with the label map)."""
    from .. import exports

    items: list[tuple[Path, Any]] = []
    names = _schema(schema, result.label_ids)
    output = Path(args.output)
    if args.sidecar:
        items.append((_sidecar_path(output),
                      exports.sidecar_json(names, mask=output.name,
                                           image=Path(image_path).name, labels=result.labels)))
    if args.coco:
        items.append((Path(args.coco), exports.coco_for_masks(
            [exports.CocoImage(Path(image_path).name, result.labels, output.name)], names,
            f"segapp segment {Path(image_path).name}")))
    if args.soft:
        if result.confidence is None:
            raise InvalidInputError(f"--soft: method {result.method} gives no confidence")
        items += exports.soft_outputs(Path(args.soft), "", result.labels, result.confidence,
                                      result.label_ids, names)
    return items
