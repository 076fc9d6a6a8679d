"""The label schema: ids, names, colours of up to 255 labels; its JSON file; bad files."""

from __future__ import annotations

import json

import pytest

from segapp.editing import Label, LabelSchema, read_schema
from segapp.errors import InvalidInputError
from segapp.io import render


def test_a_schema_of_40_labels_round_trips_through_its_file(tmp_path):
    schema = LabelSchema([Label(i, f"class {i}", render.default_color(i)) for i in range(1, 41)])
    schema.rename(7, "sky")
    schema.recolor(40, (1, 2, 3))
    path = schema.write(tmp_path / "labels.json")
    back = read_schema(path)
    assert back == schema and len(back) == 40
    assert back[7].name == "sky" and back[40].color == (1, 2, 3)
    doc = json.loads(path.read_text())
    assert doc["format"] == "segapp-labels" and doc["labels"][0] == {
        "id": 1, "name": "class 1", "color": list(render.default_color(1))}


def test_ids_names_and_colours_are_checked():
    schema = LabelSchema()
    assert schema.ids() == list(range(1, 10))
    with pytest.raises(ValueError, match="named"):
        schema.rename(2, "Label 1")  # names must differ
    lab = schema.add("tree")
    assert lab.id == 10 and lab.color == render.default_color(10)
    with pytest.raises(ValueError):
        schema.recolor(1, (0, 0, 256))
    full = LabelSchema([Label(255, "last", (1, 1, 1))])
    assert full.add().id == 1  # the free ids below the largest
    assert full.name(17) == "label 17"  # an id the schema does not hold


@pytest.mark.parametrize("text, reason", [
    ("not json", "bad JSON"),
    ("[]", "non-empty list"),
    ('{"format": "other", "labels": []}', "not a label schema"),
    ('{"labels": [{"id": 0, "name": "x"}]}', "1..255"),
    ('{"labels": [{"id": 256, "name": "x"}]}', "1..255"),
    ('{"labels": [{"id": true, "name": "x"}]}', "1..255"),
    ('{"labels": [{"id": 1, "name": ""}]}', "needs a name"),
    ('{"labels": [{"id": 1, "name": "a"}, {"id": 1, "name": "b"}]}', "used twice"),
    ('{"labels": [{"id": 1, "name": "a"}, {"id": 2, "name": "a"}]}', "named"),
    ('{"labels": [{"id": 1, "name": "a", "color": [1, 2]}]}', "three values"),
    ('{"labels": [{"id": 1, "name": "a", "color": "#12345"}]}', "#rrggbb"),
    ('{"version": 99, "labels": [{"id": 1, "name": "a"}]}', "newer"),
])
def test_a_bad_schema_file_is_one_line_naming_it(tmp_path, text, reason):
    path = tmp_path / "labels.json"
    path.write_text(text)
    with pytest.raises(InvalidInputError, match=reason) as info:
        read_schema(path)
    assert str(path) in str(info.value) and "\n" not in str(info.value)


def test_a_list_of_labels_with_hex_colours_is_a_schema_too(tmp_path):
    path = tmp_path / "labels.json"
    path.write_text('[{"id": 3, "name": "road", "color": "#FF8000"}, {"id": 30, "name": "car"}]')
    schema = read_schema(path)
    assert schema.ids() == [3, 30] and schema[3].color == (255, 128, 0)
    assert schema[30].color == render.default_color(30)
    assert schema.palette()[3 * 3:3 * 3 + 3] == [255, 128, 0]
