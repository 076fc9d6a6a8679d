"""The exports a training pipeline reads, each read back by an independent reader: Pillow for
the PNGs, json for the sidecar, and a COCO RLE decoder written from the specification
(``tests/coco_reader.py``)."""

from __future__ import annotations

import io as pyio
import json

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from segapp.editing import Label, LabelSchema
from segapp.exports import coco_for_masks, indexed_png, sidecar_json, soft_masks, unit_png
from segapp.exports import CocoImage
from segapp.io import write_pngs_atomic

from coco_reader import decode_mask  # tests/ is on sys.path


def schema_of(n: int) -> LabelSchema:
    from segapp.io import render
    return LabelSchema(Label(i, f"class {i}", render.default_color(i)) for i in range(1, n + 1))


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 12), st.integers(1, 12), st.integers(2, 40), st.integers(0, 2**31 - 1))
def test_coco_rle_decodes_back_to_every_label_mask(h, w, k, seed):
    rng = np.random.default_rng(seed)
    labels = rng.integers(1, k + 1, (h, w))
    labels[rng.random((h, w)) < 0.3] = labels.flat[0]  # long runs as well as short ones
    schema = schema_of(k)
    doc = json.loads(coco_for_masks([CocoImage("a.jpg", labels)], schema))
    assert [c["id"] for c in doc["categories"]] == list(range(1, k + 1))
    seen = np.zeros((h, w), int)
    for ann in doc["annotations"]:
        mask = decode_mask(ann["segmentation"])
        np.testing.assert_array_equal(mask, labels == ann["category_id"])
        assert ann["area"] == mask.sum() and ann["image_id"] == 1 and ann["iscrowd"] == 0
        x, y, bw, bh = ann["bbox"]
        rows, cols = np.nonzero(mask)
        assert (x, y, bw, bh) == (cols.min(), rows.min(), np.ptp(cols) + 1, np.ptp(rows) + 1)
        seen[mask] += 1
    assert (seen == 1).all()  # every pixel in exactly one annotation


def test_a_coco_file_of_a_folder_names_images_masks_and_categories():
    a = np.array([[1, 1], [2, 2]])
    b = np.array([[3, 3, 3]])
    schema = LabelSchema([Label(1, "sky", (1, 2, 3)), Label(2, "sea", (4, 5, 6)),
                          Label(3, "sand", (7, 8, 9))])
    doc = json.loads(coco_for_masks([CocoImage("a.jpg", a, "masks/a.png"),
                                     CocoImage("b.jpg", lambda: b, "masks/b.png")], schema))
    assert [(i["id"], i["file_name"], i["width"], i["height"], i["segapp_mask"])
            for i in doc["images"]] == [(1, "a.jpg", 2, 2, "masks/a.png"),
                                        (2, "b.jpg", 3, 1, "masks/b.png")]
    assert [(n["id"], n["image_id"], n["category_id"]) for n in doc["annotations"]] == [
        (1, 1, 1), (2, 1, 2), (3, 2, 3)]
    assert doc["categories"][1] == {"id": 2, "name": "sea", "supercategory": "",
                                    "color": [4, 5, 6]}


def test_an_indexed_png_of_40_labels_reads_back_its_ids_and_colours(tmp_path):
    schema = schema_of(40)
    labels = np.arange(48).reshape(6, 8) % 41
    write_pngs_atomic([(tmp_path / "m.png", indexed_png(labels, schema)),
                       (tmp_path / "m.json", sidecar_json(schema, mask="m.png",
                                                          labels=labels))])
    img = Image.open(tmp_path / "m.png")
    assert img.mode == "P"
    np.testing.assert_array_equal(np.asarray(img), labels)
    pal = img.getpalette()
    for i in (1, 9, 10, 40):
        assert tuple(pal[3 * i:3 * i + 3]) == schema[i].color
    side = json.loads((tmp_path / "m.json").read_text())
    assert [lab["id"] for lab in side["labels"]] == list(range(1, 41))
    assert side["mask"] == "m.png" and side["size"] == [6, 8]
    assert side["pixels"]["40"] == int((labels == 40).sum())


def test_confidence_and_soft_masks_are_16_bit_and_sum_to_one(tmp_path):
    labels = np.array([[1, 1, 2], [2, 3, 3]])
    conf = np.array([[1.0, 0.5, 0.0], [0.25, 1.0, 0.75]], np.float32)
    soft = soft_masks(labels, conf, [1, 2, 3])
    np.testing.assert_allclose(sum(soft.values()), 1.0, atol=1e-6)
    np.testing.assert_allclose(soft[1][0, 1], 0.75)  # (1 + c) / 2 on its own label
    np.testing.assert_allclose(soft[1][0, 2], 0.25)  # (1 - c) / (2 (k - 1)) elsewhere
    assert all((np.argmax(np.stack([soft[i] for i in (1, 2, 3)]), 0) + 1 == labels)
               .ravel()[conf.ravel() > 0])
    buf = pyio.BytesIO()
    unit_png(np.zeros((2, 3))).save(buf, format="PNG")  # all zero: still 16 bits
    assert Image.open(buf).mode in ("I;16", "I")
    write_pngs_atomic([(tmp_path / "c.png", unit_png(conf))])
    back = np.asarray(Image.open(tmp_path / "c.png")).astype(float) / 65535
    np.testing.assert_allclose(back, conf, atol=1 / 65535)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 30), st.integers(1, 30), st.integers(1, 120), st.integers(0, 2**31 - 1))
def test_run_lengths_read_in_bands_of_columns_are_those_of_the_whole_mask(h, w, band, seed):
    """The encoder reads a large mask a band of columns at a time (the export thread must not
    hold the GIL for long): its runs must be the runs of the mask read column by column."""
    from segapp.exports import coco

    m = np.random.default_rng(seed).random((h, w)) < 0.4
    flat = m.ravel(order="F")
    runs, value, n = [], False, 0
    for x in flat:
        if bool(x) != value:
            runs.append(n)
            value, n = not value, 0
        n += 1
    runs.append(n)
    saved, coco.BAND_PIXELS = coco.BAND_PIXELS, band
    try:
        assert coco.rle_counts(m) == runs
    finally:
        coco.BAND_PIXELS = saved
