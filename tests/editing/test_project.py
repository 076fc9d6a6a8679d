"""A folder as a project: its images and their states, the strokes and answers kept in
FOLDER/segapp, the schema file, one app at a time."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

from segapp.editing import FolderProject, LabelSchema
from segapp.editing.project import DONE, IN_PROGRESS, UNTOUCHED
from segapp.errors import InvalidInputError


def photos(folder, names=("b2.jpg", "a.png", "b10.jpg", "a_scribbles.png", "notes.txt")):
    folder.mkdir(exist_ok=True)
    for n in names:
        if n.endswith(".txt"):
            (folder / n).write_text("x")
        else:
            Image.fromarray(np.full((6, 8, 3), 100, np.uint8)).save(folder / n)
    return folder


def test_the_images_of_a_folder_in_natural_order_without_their_scribbles(tmp_path):
    project = FolderProject.open(photos(tmp_path / "p"))
    assert [p.name for p in project.images] == ["a.png", "b2.jpg", "b10.jpg"]
    assert project.first_to_do().name == "a.png"
    assert project.neighbour(project.images[0], -1) is None
    assert project.neighbour(project.images[0], 2).name == "b10.jpg"
    assert project.counts() == {UNTOUCHED: 3, IN_PROGRESS: 0, DONE: 0}


def test_strokes_and_answers_are_kept_and_the_state_comes_back(tmp_path):
    folder = photos(tmp_path / "p")
    project = FolderProject.open(folder)
    project.schema.rename(1, "sky")
    project.schema.add("tree")
    a = project.images[0]
    strokes = np.zeros((6, 8), np.uint8)
    strokes[1, 1], strokes[4, 6] = 1, 10
    answer = np.where(np.arange(8)[None, :] < 4, 1, 10) * np.ones((6, 1), int)
    assert project.save_work(a, strokes, answer) == IN_PROGRESS
    project.done.add(a.name)
    project.current = "b2.jpg"
    project.schema[10].locked = True
    project.save_state()
    project.save_schema()

    again = FolderProject.open(folder)
    assert again.schema[1].name == "sky" and again.schema[10].locked
    assert again.status(a) == DONE and again.first_to_do().name == "b2.jpg"
    np.testing.assert_array_equal(again.read_strokes(a, (6, 8)), strokes)
    mask = Image.open(again.files(a).mask)
    assert mask.mode == "P" and mask.getpalette()[30:33] == list(again.schema[10].color)
    np.testing.assert_array_equal(np.asarray(mask), answer)
    doc = json.loads((folder / "segapp" / "project.json").read_text())
    assert doc["done"] == ["a.png"] and doc["label_states"] == {"10": {"hidden": False,
                                                                       "locked": True}}
    # strokes all erased: the image is untouched again, its files gone
    assert again.save_work(again.images[1], strokes, None) == IN_PROGRESS
    assert again.save_work(again.images[1], np.zeros_like(strokes), None) == UNTOUCHED
    assert not again.files(again.images[1]).strokes.exists()
    with pytest.raises(InvalidInputError, match="saved strokes"):
        again.read_strokes(a, (7, 8))


def test_two_images_of_one_stem_keep_their_work_apart(tmp_path):
    project = FolderProject.open(photos(tmp_path / "p", ("x.jpg", "x.png")))
    jpg, png = project.images
    assert project.files(jpg).strokes != project.files(png).strokes


def test_a_bad_folder_is_one_line(tmp_path):
    with pytest.raises(InvalidInputError, match="not a folder"):
        FolderProject.open(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(InvalidInputError, match="no images"):
        FolderProject.open(tmp_path / "empty")
    folder = photos(tmp_path / "p")
    (folder / "segapp").mkdir()
    (folder / "segapp" / "labels.json").write_text("{")
    with pytest.raises(InvalidInputError, match="labels.json"):
        FolderProject.open(folder)


def test_one_app_at_a_time_works_on_a_folder(tmp_path):
    folder = photos(tmp_path / "p")
    mine = FolderProject.open(folder)
    mine.lock()
    code = ("import sys; from segapp.editing import FolderProject\n"
            "p = FolderProject.open(sys.argv[1])\n"
            "try:\n    p.lock()\nexcept Exception as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code, str(folder)], capture_output=True,
                         text=True, check=True).stdout
    assert "open in another segapp" in out
    mine.unlock()
    out = subprocess.run([sys.executable, "-c", code, str(folder)], capture_output=True,
                         text=True, check=True).stdout
    assert out == ""


def test_the_schema_file_is_what_the_command_line_reads(tmp_path):
    folder = photos(tmp_path / "p")
    project = FolderProject.open(folder)
    project.schema.rename(2, "water")
    project.save_schema()
    from segapp.editing import read_schema
    assert read_schema(folder / "segapp" / "labels.json") == project.schema
    assert isinstance(project.schema, LabelSchema)
