"""Tests of segapp.samples and the bundled sample images."""

from __future__ import annotations

import importlib.resources
import importlib.util
import os

import numpy as np
import pytest
import showcase  # tests/showcase.py
from PIL import Image

import segapp
from segapp import io, samples
from segapp.errors import InvalidInputError


def test_list_samples_order_and_default():
    names = samples.list_samples()
    assert len(names) >= 3
    assert names[0] == "coffee"
    assert samples.sample_path() == samples.sample_path(names[0])
    assert samples.sample_scribbles_path() == samples.sample_scribbles_path(names[0])


@pytest.mark.parametrize("name", samples.list_samples())
def test_sample_files_and_scribbles(name):
    img_path = samples.sample_path(name)
    scr_path = samples.sample_scribbles_path(name)
    assert img_path.is_file() and scr_path.is_file()
    assert img_path.stem == name and scr_path.name == f"{name}_scribbles.png"
    image = io.read_image(img_path)
    labels = io.read_scribbles(scr_path, shape=image.shape)
    with Image.open(scr_path) as scr:
        assert scr.mode == "L"
    ids = np.unique(labels[labels > 0])
    assert 3 <= len(ids) <= 5
    np.testing.assert_array_equal(ids, np.arange(1, len(ids) + 1))  # consecutive 1..k
    assert all((labels == k).sum() >= 50 for k in ids)  # real strokes, not specks
    # Strokes stay away from the image border.
    assert not labels[:3].any() and not labels[-3:].any()
    assert not labels[:, :3].any() and not labels[:, -3:].any()


def test_unknown_sample():
    with pytest.raises(InvalidInputError, match="available"):
        samples.sample_path("no-such-sample")
    with pytest.raises(InvalidInputError):
        samples.sample_scribbles_path("no-such-sample")


def test_licence_and_size():
    folder = samples.samples_dir()
    licence = (folder / "LICENSE.md").read_text(encoding="utf-8")
    for name in samples.list_samples():
        assert f"{name}." in licence
    assert (folder / "__init__.py").is_file()
    total = sum(p.stat().st_size for p in folder.iterdir() if p.is_file())
    assert total < 1.5e6


@pytest.mark.skipif(importlib.util.find_spec("segapp.sample_images") is None,
                    reason="segapp not installed (running from a source checkout)")
def test_installed_package_resources():
    res = importlib.resources.files("segapp.sample_images")
    assert res.joinpath(f"{samples.list_samples()[0]}.jpg").is_file()
    assert samples.samples_dir() == samples.sample_path().parent


# -- the chelsea showcase (README's screenshot): strokes a person paints, a result a person takes
def test_chelsea_scribbles_are_its_strokes():
    """chelsea_scribbles.png is chelsea_strokes.txt drawn; SEGAPP_UPDATE_SAMPLES=1 redraws it."""
    folder = samples.samples_dir()
    path = samples.sample_scribbles_path("chelsea")
    shape = io.read_image(samples.sample_path("chelsea")).shape[:2]
    drawn = showcase.scribbles_from(folder / "chelsea_strokes.txt", shape)
    if os.environ.get("SEGAPP_UPDATE_SAMPLES"):
        Image.fromarray(drawn, mode="L").save(path, optimize=True)
    with Image.open(path) as scr:
        assert scr.mode == "L"
        np.testing.assert_array_equal(np.asarray(scr), drawn)
    strokes, names = showcase.read_stroke_file(folder / "chelsea_strokes.txt")
    assert names == {showcase.BACKGROUND: "background", showcase.FUR: "fur",
                     showcase.EYES: "eyes", showcase.NOSE: "nose"}
    assert len(strokes) <= 15  # a few strokes per label, as a person paints
    licence = (folder / "LICENSE.md").read_text(encoding="utf-8")
    assert "| chelsea | 1 background, 2 fur, 3 eyes, 4 nose |" in licence


def test_chelsea_showcase_is_segmented_as_a_person_expects():
    """The bundled strokes with the default options (the app's Session, the CLI and batch's
    segment): the whole face is cat (fur, eyes, nose; none background), the eyes, the nose
    and the room are theirs. The old scribbles gave half of the face to the background."""
    image = io.read_image(samples.sample_path("chelsea"))
    scribbles = io.read_scribbles(samples.sample_scribbles_path("chelsea"), image.shape)
    result = segapp.Session(image).update(scribbles)
    assert showcase.faults(result.labels) == []
    np.testing.assert_array_equal(result.labels[scribbles > 0], scribbles[scribbles > 0])
