"""``--labels`` and the dataset exports of ``segapp segment`` and ``segapp batch``, read back by
independent readers (Pillow, json, the COCO decoder of tests/exports), and their bad inputs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from segapp.cli import EXIT_INPUT, main
from segapp.cli.batch import EXIT_BATCH_ERROR
from segapp.editing import Label, LabelSchema
from segapp.io import render

from coco_reader import decode_mask  # tests/ is on sys.path


def photo_and_strokes(folder: Path, stem: str, ids: tuple[int, int], colours=None) -> None:
    """A two-region photo and its strokes (label ids, or colour strokes in ``colours``)."""
    rng = np.random.default_rng(len(stem))
    img = np.zeros((40, 60, 3))
    img[:, :30] = (0.7, 0.2, 0.1)
    img[:, 30:] = (0.2, 0.5, 0.9)
    Image.fromarray((np.clip(img + rng.normal(0, 0.04, img.shape), 0, 1) * 255)
                    .astype(np.uint8)).save(folder / f"{stem}.png")
    ids_map = np.zeros((40, 60), np.uint8)
    ids_map[10:30, 8:12], ids_map[10:30, 45:49] = ids
    if colours is None:
        Image.fromarray(ids_map).save(folder / f"{stem}_scribbles.png")
    else:
        rgb = np.zeros((40, 60, 3), np.uint8)
        for i in ids:
            rgb[ids_map == i] = colours[i]
        Image.fromarray(rgb).save(folder / f"{stem}_scribbles.png")


def schema_40() -> LabelSchema:
    return LabelSchema(Label(i, f"class {i}", render.default_color(i)) for i in range(1, 41))


def test_segment_with_a_40_label_schema_writes_every_dataset_file(tmp_path):
    schema = schema_40()
    schema.rename(33, "road")
    schema.write(tmp_path / "labels.json")
    # colour strokes in the schema's colours of labels 33 and 12: read as those ids
    photo_and_strokes(tmp_path, "p", (33, 12), {33: schema[33].color, 12: schema[12].color})
    out = tmp_path / "out.png"
    code = main(["segment", str(tmp_path / "p.png"), "-s", str(tmp_path / "p_scribbles.png"),
                 "-o", str(out), "--labels", str(tmp_path / "labels.json"), "--indexed",
                 "--sidecar", "--coco", str(tmp_path / "coco.json"), "--soft",
                 str(tmp_path / "soft"), "-q"])
    assert code == 0
    mask = Image.open(out)
    labels = np.asarray(mask)
    assert mask.mode == "P" and set(np.unique(labels)) == {12, 33}
    assert (labels[:, :25] == 33).mean() > 0.95 and (labels[:, 35:] == 12).mean() > 0.95
    assert tuple(mask.getpalette()[99:102]) == schema[33].color
    side = json.loads((tmp_path / "out.json").read_text())
    assert len(side["labels"]) == 40 and side["labels"][32]["name"] == "road"
    doc = json.loads((tmp_path / "coco.json").read_text())
    assert {c["name"] for c in doc["categories"]} >= {"road", "class 12"}
    for ann in doc["annotations"]:
        np.testing.assert_array_equal(decode_mask(ann["segmentation"]),
                                      labels == ann["category_id"])
    conf = np.asarray(Image.open(tmp_path / "soft" / "confidence.png")).astype(float) / 65535
    s33 = np.asarray(Image.open(tmp_path / "soft" / "soft33_road.png")).astype(float) / 65535
    s12 = np.asarray(Image.open(tmp_path / "soft" / "soft12_class-12.png")).astype(float) / 65535
    np.testing.assert_allclose(s33 + s12, 1.0, atol=2 / 65535)
    np.testing.assert_allclose(np.where(labels == 33, s33, s12), (1 + conf) / 2, atol=2 / 65535)


def test_segment_refuses_a_painted_id_the_schema_does_not_hold(tmp_path, capsys):
    LabelSchema([Label(1, "a", (1, 2, 3)), Label(2, "b", (4, 5, 6))]).write(tmp_path / "l.json")
    photo_and_strokes(tmp_path, "p", (1, 7))
    code = main(["segment", str(tmp_path / "p.png"), "-s", str(tmp_path / "p_scribbles.png"),
                 "-o", str(tmp_path / "o.png"), "--labels", str(tmp_path / "l.json")])
    err = capsys.readouterr().err
    assert code == EXIT_INPUT and "label 7 painted but not in the --labels schema" in err
    assert not (tmp_path / "o.png").exists()


@pytest.mark.parametrize("text", ["{", '{"labels": [{"id": 300, "name": "x"}]}'])
def test_a_bad_labels_file_fails_segment_and_batch_in_one_line(tmp_path, capsys, text):
    (tmp_path / "l.json").write_text(text)
    photo_and_strokes(tmp_path, "p", (1, 2))
    code = main(["segment", str(tmp_path / "p.png"), "-s", str(tmp_path / "p_scribbles.png"),
                 "-o", str(tmp_path / "o.png"), "--labels", str(tmp_path / "l.json")])
    err = capsys.readouterr().err
    assert code == EXIT_INPUT and err.count("\n") == 1 and "l.json" in err
    code = main(["batch", str(tmp_path), "-o", str(tmp_path / "out"), "--labels",
                 str(tmp_path / "l.json"), "-j", "1", "-q"])
    err = capsys.readouterr().err
    assert code == EXIT_BATCH_ERROR and "l.json" in err


def test_batch_writes_indexed_masks_soft_masks_one_coco_file_and_the_labels(tmp_path):
    images = tmp_path / "in"
    images.mkdir()
    photo_and_strokes(images, "a", (1, 2))
    photo_and_strokes(images, "b", (2, 31))
    schema = schema_40()
    schema.write(tmp_path / "labels.json")
    out = tmp_path / "out"
    code = main(["batch", str(images), "-o", str(out), "--labels", str(tmp_path / "labels.json"),
                 "--indexed", "--soft", "--coco", "-j", "1", "-q"])
    assert code == 0
    doc = json.loads((out / "annotations.json").read_text())
    assert [i["file_name"] for i in doc["images"]] == ["a.png", "b.png"]
    for entry in doc["images"]:
        labels = np.asarray(Image.open(out / entry["segapp_mask"]))
        anns = [a for a in doc["annotations"] if a["image_id"] == entry["id"]]
        assert {a["category_id"] for a in anns} == set(np.unique(labels)) - {0}
        for ann in anns:
            np.testing.assert_array_equal(decode_mask(ann["segmentation"]),
                                          labels == ann["category_id"])
    assert Image.open(out / "b.png").mode == "P"
    assert set(np.unique(np.asarray(Image.open(out / "b.png")))) == {2, 31}
    assert (out / "b_soft31_class-31.png").is_file() and (out / "a_confidence.png").is_file()
    side = json.loads((out / "labels.json").read_text())
    assert len(side["labels"]) == 40
