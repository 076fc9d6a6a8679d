"""Exports and annotation sessions: file formats (no Qt); writes are atomic (segapp.io).

A *session* is a small JSON file plus a label PNG next to it::

    photo.segapp.json   {"format": "segapp-session", "version": 1, "image": "photo.jpg",
                         "scribbles": "photo.segapp.png", "labels": [...], "settings": {...}}
    photo.segapp.png    8-bit grey, pixel value = label id (0 = unlabelled)

Paths inside the JSON are relative to its folder when possible, so a folder can be moved.
Crash recovery is :mod:`segapp.gui.journal`'s business, not a session file.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from .. import exports, io
from ..editing import Label, LabelSchema
from ..errors import InvalidInputError
from ..io import render

SESSION_FORMAT = "segapp-session"
SESSION_VERSION = 1
SESSION_SUFFIX = ".segapp.json"

EXPORT_KINDS = ("labels", "masks", "overlay", "heatmaps", "soft", "coco")


# --------------------------------------------------------------------------------------------
# export
# --------------------------------------------------------------------------------------------
@dataclass
class ExportItem:
    """One file an export will write: its path and a function computing its content (an
    array or Pillow image written as PNG, or bytes written as they are)."""

    path: Path
    make: Callable[[], Any]
    what: str


def plan_export(base: str | os.PathLike, kinds: tuple[str, ...] | list[str], *,
                image: np.ndarray, labels: np.ndarray | None, schema: LabelSchema,
                eigenvectors: np.ndarray | Callable[[], np.ndarray] | None = None,
                vmax: tuple[float, ...] | None = None, alpha: float = 0.5,
                boundaries: bool = False, label_ids: tuple[int, ...] | None = None,
                n_vectors: int | None = None,
                confidence: Callable[[], np.ndarray | None] | None = None,
                image_name: str | None = None) -> list[ExportItem]:
    """List the files an export writes (nothing is written or computed yet).

    Parameters
    ----------
    base : path
        ``folder/stem.png``; files are named ``stem_labels.png`` (indexed, in the schema's
        colours) with ``stem_labels.json`` (its labels: ids, names, colours),
        ``stem_mask<id>_<name>.png``, ``stem_overlay.png``, ``stem_eigenvector_<j>.png`` (as
        ``segapp segment`` names its heat maps), ``stem_confidence.png`` and
        ``stem_soft<id>_<name>.png`` (16-bit), ``stem_coco.json``.
    kinds : subset of :data:`EXPORT_KINDS`
    image, labels, schema, eigenvectors
        What to export; ``labels`` is the segmentation (every pixel a label id, or 0 where
        unlabelled).
    vmax : tuple of float, optional
        Colour range of each heat map (the app passes the range it shows); default
        :func:`segapp.io.render.robust_vmax` of each vector.
    alpha, boundaries
        The overlay as shown: :func:`segapp.io.render.overlay` with these.
    label_ids : tuple of int, optional
        The labels present (``Segmentation.label_ids``); default: found in ``labels`` (0.2 s
        at 12 MP, which the app's GUI thread must not spend).
    confidence : callable, optional
        Gives ``Segmentation.confidence`` (read by the export's worker); "soft" needs it.
    image_name : str, optional
        The image's file name, for the labels JSON and the COCO file.

    Raises
    ------
    InvalidInputError
        Nothing to export (no segmentation yet), or soft masks of a method without confidence.
    """
    base = Path(base)
    stem = base.name[:-4] if base.name.lower().endswith(".png") else base.name
    folder = base.parent
    if labels is None:
        raise InvalidInputError("nothing to export yet: paint at least two labels and wait for "
                                "the segmentation")
    items: list[ExportItem] = []
    lab = np.asarray(labels)
    colors = schema.colors()
    ids = sorted(int(v) for v in (np.unique(lab) if label_ids is None else label_ids) if v > 0)
    mask_name = f"{stem}_labels.png"
    if "labels" in kinds:
        items.append(ExportItem(folder / mask_name, lambda: exports.indexed_png(lab, schema),
                                "label map"))
        items.append(ExportItem(folder / f"{stem}_labels.json",
                                lambda: exports.sidecar_json(schema, mask=mask_name,
                                                             image=image_name, labels=lab),
                                "labels JSON"))
    if "masks" in kinds:
        for i in ids:
            name = schema.name(i)
            items.append(ExportItem(folder / f"{stem}_mask{i}_{exports.slug(name)}.png",
                                    lambda i=i: np.where(lab == i, 255, 0).astype(np.uint8),
                                    f"mask of {name}"))
    if "overlay" in kinds:
        items.append(ExportItem(folder / f"{stem}_overlay.png",
                                lambda: render.overlay(image, lab, alpha=alpha, colors=colors,
                                                       boundaries=boundaries),
                                "colour overlay"))
    if "heatmaps" in kinds and eigenvectors is not None:
        # a function (with n_vectors) is read by the export's worker, not by the caller: a
        # 12 MP result's full-size vectors may still be being enlarged
        vectors = eigenvectors if callable(eigenvectors) else (lambda: eigenvectors)
        count = n_vectors if callable(eigenvectors) else eigenvectors.shape[2]
        for j in range(int(count or 0)):
            v = None if vmax is None else vmax[j]
            items.append(ExportItem(
                folder / f"{stem}_eigenvector_{j + 1}.png",
                lambda j=j, v=v: render.heatmap_with_colorbar(np.asarray(vectors())[:, :, j],
                                                              vmax=v),
                f"eigenvector {j + 1} heat map"))
    if "soft" in kinds:
        if confidence is None:
            raise InvalidInputError("this method gives no confidence: no soft masks to export")

        def conf() -> np.ndarray:
            c = confidence()
            if c is None:
                raise InvalidInputError("this method gives no confidence: no soft masks")
            return np.asarray(c)
        items.append(ExportItem(folder / f"{stem}_confidence.png",
                                lambda: exports.unit_png(conf()), "confidence (16-bit)"))
        for i in ids:
            name = schema.name(i)
            items.append(ExportItem(
                folder / f"{stem}_soft{i}_{exports.slug(name)}.png",
                lambda i=i: exports.unit_png(exports.soft.soft_mask(lab, conf(), i, len(ids))),
                f"soft mask of {name} (16-bit)"))
    if "coco" in kinds:
        entry = exports.CocoImage(image_name or f"{stem}.png", lab,
                                  mask_name if "labels" in kinds else None)
        items.append(ExportItem(folder / f"{stem}_coco.json",
                                lambda: exports.coco_for_masks([entry], schema,
                                                               f"segapp export of {stem}"),
                                "COCO annotations"))
    return items


# --------------------------------------------------------------------------------------------
# sessions
# --------------------------------------------------------------------------------------------
@dataclass
class SessionData:
    """An annotation session as stored on disk."""

    image_path: Path
    scribbles: np.ndarray
    labels: list[Label]
    settings: dict[str, Any] = field(default_factory=dict)


def session_png_path(json_path: Path) -> Path:
    name = json_path.name
    stem = name[: -len(SESSION_SUFFIX)] if name.endswith(SESSION_SUFFIX) else Path(name).stem
    return json_path.with_name(stem + ".segapp.png")


def _relative(path: Path, folder: Path) -> str:
    try:
        return os.path.relpath(path.resolve(), folder.resolve())
    except ValueError:  # another drive on Windows
        return str(path.resolve())


def save_session(json_path: str | os.PathLike, data: SessionData) -> Path:
    """Write the label PNG, then the JSON (both atomically); the JSON names the PNG."""
    json_path = Path(json_path)
    png = session_png_path(json_path)
    io.save_labels(png, data.scribbles.astype(np.uint8), overwrite=True)
    doc = {
        "format": SESSION_FORMAT,
        "version": SESSION_VERSION,
        "image": _relative(Path(data.image_path), json_path.parent),
        "scribbles": png.name,
        "labels": [lab.to_dict() for lab in data.labels],
        "settings": data.settings,
    }
    return io.write_bytes_atomic(json_path, (json.dumps(doc, indent=1) + "\n").encode())


def load_session(json_path: str | os.PathLike) -> tuple[SessionData, np.ndarray]:
    """Read a session and its image.

    Returns
    -------
    (SessionData, image)

    Raises
    ------
    InvalidInputError
        Unreadable or malformed JSON, missing image or scribbles, size mismatch.
    """
    json_path = Path(json_path)
    try:
        doc = json.loads(json_path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InvalidInputError(f"{json_path}: cannot read session: {exc.strerror or exc}") from exc
    except ValueError as exc:
        raise InvalidInputError(f"{json_path}: not a segapp session (bad JSON: {exc})") from exc
    if not isinstance(doc, dict) or doc.get("format") != SESSION_FORMAT:
        raise InvalidInputError(f"{json_path}: not a segapp session file")
    if int(doc.get("version", 0)) > SESSION_VERSION:
        raise InvalidInputError(f"{json_path}: session version {doc['version']} is newer than "
                                "this segapp understands")
    try:
        image_path = (json_path.parent / str(doc["image"])).resolve()
        scribble_path = json_path.parent / str(doc["scribbles"])
        labels = [Label.from_dict(d) for d in doc.get("labels", [])]
        settings = dict(doc.get("settings", {}))
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidInputError(f"{json_path}: malformed session ({exc})") from exc
    image = io.read_image(image_path)
    # the app's own label map: ids up to the session's largest label
    scribbles = io.read_scribbles(scribble_path, shape=image.shape,
                                  max_label=max([lab.id for lab in labels],
                                                default=io.DEFAULT_MAX_LABEL))
    return SessionData(image_path, scribbles, labels, settings), image
