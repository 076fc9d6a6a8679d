"""The document controller alone, without Qt: a host of plain objects, jobs run at once."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from segapp.gui.document import Dialogs, Document, Host, Loaded
from segapp.gui.state import AppState
from segapp.editing import AnnotationModel, Emitter


def test_the_document_controller_imports_no_qt():
    code = ("import sys, segapp.gui.document; "
            "print([m for m in sys.modules if m.split('.')[0] in "
            "('PySide6', 'PySide2', 'PyQt5', 'PyQt6', 'qtpy', 'shiboken6')])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"


class AtOnce:
    """A job runner that runs the work at once, on this thread."""

    running, what = False, ""

    def __init__(self) -> None:
        self.idle, self.finished = Emitter(), Emitter()

    def start(self, what, work, done, failed, cancelled=lambda: None, *, first=False):
        done(work(lambda i, n, text: None))

    def cancel(self) -> None:
        pass

    def wait_loaded(self, msecs: int = 0) -> bool:
        return True


class Prefs(dict):
    def value(self, key, default=None):
        return self.get(key, default)

    def setValue(self, key, value):  # noqa: N802
        self[key] = value


def read_image(path, step, scribbles=None, labels=None, pixel_limit=None, strokes_of=None):
    image = np.zeros((8, 10), np.float32)
    if scribbles is None and strokes_of is not None:
        scribbles = strokes_of(image.shape)
    return Loaded(Path(path), image, AnnotationModel(image.shape, labels, scribbles), None)


def make_document(tmp_path, answers):
    prefs = Prefs()
    asked = []

    def choose(title, text, buttons):
        asked.append(title)
        return answers.pop(0)

    host = Host(dialogs=Dialogs(ask=lambda *a: True, choose=choose, get_path=lambda *a, **k: None),
                layers=None, loader=AtOnce(), saver=AtOnce(), editor=AtOnce(),
                exporter=AtOnce(), read_image=read_image, read_session=None,
                prefs=lambda: prefs, later=lambda ms, fn: fn(), documents_dir=tmp_path,
                recovery=None)
    return Document(host, AppState()), prefs, asked


def test_opening_reports_through_events_and_asks_through_the_host(tmp_path):
    doc, prefs, asked = make_document(tmp_path, answers=["Cancel"])
    info, dirty = [], []
    doc.info.connect(info.append)
    doc.dirtyChanged.connect(lambda: dirty.append(doc.dirty))
    assert doc.open_path(tmp_path / "a.png")
    assert info == ["Opened a.png (10×8)"] and dirty == [False] and asked == []
    assert doc.recent_files() == [str((tmp_path / "a.png").resolve())]
    doc.state.strokes.rename_label(1, "disc")  # unsaved work now
    assert doc.dirty
    assert not doc.open_path(tmp_path / "b.png")  # the user kept it
    assert asked == ["Unsaved strokes"] and doc.state.image_path == tmp_path / "a.png"
    assert doc.folder("open") == tmp_path  # the image's folder, nothing remembered
    doc.remember_folder("open", tmp_path / "sub" / "x.png")
    assert prefs["folders/open"] == str((tmp_path / "sub").resolve())


def test_a_folder_keeps_each_images_work_and_goes_from_image_to_image(tmp_path):
    """The folder part of the controller alone: no question is asked, the work is written."""
    from PIL import Image

    folder = tmp_path / "photos"
    folder.mkdir()
    for name in ("a.png", "b.png", "c.png"):
        Image.fromarray(np.zeros((8, 10, 3), np.uint8)).save(folder / name)
    doc, prefs, asked = make_document(tmp_path, answers=[])
    changes = []
    doc.projectChanged.connect(lambda: changes.append(doc.project.counts()["done"]
                                                      if doc.project else None))
    assert doc.open_path(folder)  # a folder opens as a project, on its first image
    assert doc.state.image_path.name == "a.png" and doc.project.folder == folder
    model = doc.state.strokes
    model.apply_stroke([(2, 2)], 1, 1.5)
    doc._folder_edited()  # the history's event; the host's timer runs it at once here
    assert (folder / "segapp" / "strokes" / "a.png").is_file() and not doc.dirty
    assert not doc.mark_done()  # not segmented yet: refused, said why
    model.apply_stroke([(7, 6)], 2, 1.5)

    from segapp.live.results import Result
    answer = np.where(np.arange(10)[None, :] < 5, 1, 2) * np.ones((8, 1), int)
    seg = type("Seg", (), {"labels": answer})()
    doc.state.shown = Result(seg, (), 0.0).shown((0, doc.state.stroke_key(), "fastge", ()))
    assert doc.mark_done()  # saved with its answer, marked, and the next image opens
    assert doc.state.image_path.name == "b.png" and asked == []
    np.testing.assert_array_equal(
        np.asarray(Image.open(folder / "segapp" / "masks" / "a.png")), answer)
    assert doc.go(-1) and doc.state.image_path.name == "a.png"
    assert (doc.state.strokes.scribbles > 0).sum() == (model.scribbles > 0).sum()
    assert doc.project.status(folder / "a.png") == "done" and changes[-1] == 1
    assert not doc.go(-1)  # the first image: nothing before it
    assert doc.close()
    assert json.loads((folder / "segapp" / "project.json").read_text())["done"] == ["a.png"]


def test_the_done_box_marks_only_what_can_be_marked(tmp_path):
    from PIL import Image

    folder = tmp_path / "photos"
    folder.mkdir()
    for name in ("a.png", "b.png"):
        Image.fromarray(np.zeros((8, 10, 3), np.uint8)).save(folder / name)
    doc, _prefs, _asked = make_document(tmp_path, answers=[])
    errors, shown = [], []
    doc.error.connect(errors.append)
    doc.projectChanged.connect(lambda: shown.append(sorted(doc.project.done)))
    assert doc.open_path(folder)
    doc.set_done(folder / "a.png", True)  # on screen, not segmented: refused, said why
    doc.set_done(folder / "b.png", True)  # no answer: refused
    assert doc.project.done == set() and len(errors) == 2 and shown[-1] == []
    doc.project.done.add("b.png")
    doc.set_done(folder / "b.png", False)
    assert doc.project.done == set() and shown[-1] == []
