"""An annotator's day at a real X server: ``segapp FOLDER`` as its own process under Xvfb,
xdotool's real pointer and keys, the real folder dialog. Six photos with one label schema
(the folder's ``segapp/labels.json``): three are annotated and marked done (Ctrl+Return), a
stroke is painted on the fourth and the app is quit at once (Ctrl+Q: no question, the stroke
kept), ``segapp FOLDER`` again goes on where the work stopped, the rest are finished, and
Ctrl+Shift+E exports the training set, read back by Pillow and the COCO decoder of
``tests/coco_reader.py``. What the app did is read in the files it writes."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import numpy as np
from PIL import Image

from coco_reader import decode_mask  # tests/ is on sys.path
from segapp.editing import Label, LabelSchema

from .test_xvfb_app import LEFT, RIGHT, xdotool  # noqa: F401  (fixture)
from .test_xvfb_tools import H, W, Person

REPO = Path(__file__).resolve().parents[2]
N = 6  # photos of H × W, the size test_xvfb_tools's person paints on


def split(n: int) -> int:
    """Where photo n's left region ends."""
    return 100 + 20 * (n - 1)


def make_folder(folder: Path) -> None:
    folder.mkdir()
    rng = np.random.default_rng(0)
    for n in range(1, N + 1):
        img = np.empty((H, W, 3), float)
        img[:, :split(n)] = LEFT
        img[:, split(n):] = RIGHT
        Image.fromarray(np.clip(img + rng.normal(0, 3, img.shape), 0, 255)
                        .astype(np.uint8)).save(folder / f"img{n}.png")
    (folder / "segapp").mkdir()
    LabelSchema([Label(1, "left half", (230, 159, 0)),
                 Label(2, "right half", (86, 180, 233))]).write(folder / "segapp" / "labels.json")


class App(Person):
    """``segapp FOLDER`` on the Xvfb display, and the xdotool hands that use it (the person of
    ``test_xvfb_tools``, on photos of the same size)."""

    def __init__(self, exe: str, env: dict, folder: Path, shots: Path) -> None:
        super().__init__(exe, env, folder, shots)
        self.folder = folder
        self.shots = iter(shots / f"{time.monotonic_ns()}_{i}.png" for i in range(10**4))

    def paint(self, key: str, points) -> None:
        self.xdo("mousemove", *self.at(*points[0]))
        self.keys(key)
        self.stroke(points)

    def annotate(self, n: int) -> None:
        """A stroke in each half of photo n; then wait for its answer to be written into the
        folder (the app writes it as soon as it is on screen)."""
        mask = self.folder / "segapp" / "masks" / f"img{n}.png"
        self.paint("1", [(20, 60), (split(n) / 2, 100), (split(n) - 25, 140)])
        self.paint("2", [(split(n) + 25, 60), ((split(n) + W) / 2, 100), (W - 20, 140)])
        wait_for(mask.is_file, f"the answer of img{n}.png in the folder")

    def wait_exit(self, timeout: float = 60) -> str:
        _, err = self.app.communicate(timeout=timeout)
        return err

    def kill(self) -> str:
        if self.app.poll() is None:
            self.app.kill()
        return self.wait_exit()


def wait_for(condition, what: str, deadline: float = 120.0) -> None:
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        if condition():
            return
        time.sleep(0.2)
    raise AssertionError(f"never happened: {what}")


def test_a_folder_annotated_quit_and_resumed_then_exported_at_an_x_server(
        xvfb_display, xdotool, tmp_path):
    folder, out, shots = tmp_path / "photos", tmp_path / "dataset", tmp_path / "shots"
    make_folder(folder)
    out.mkdir()
    shots.mkdir()
    env = {**os.environ, "QT_QPA_PLATFORM": "xcb", "DISPLAY": xvfb_display,
           "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
           "XDG_CONFIG_HOME": str(tmp_path / "config"), "XDG_DATA_HOME": str(tmp_path / "data")}
    errors = []
    first = App(xdotool, env, folder, shots)
    try:
        wid = first.window("img1.png")
        first.xdo("windowsize", wid, "1000", "700")
        first.find_image()
        for n in (1, 2, 3):
            first.annotate(n)
            first.xdo("key", "ctrl+Return")  # done, and on to the next image
            first.window(f"img{n + 1}.png")
        first.paint("1", [(20, 60), (60, 100)])  # a stroke on img4, and at once:
        first.xdo("key", "ctrl+q")  # quit; nothing is asked, the stroke is written
        errors.append(first.wait_exit())
        assert first.app.returncode == 0
    finally:
        errors.append(first.kill())
    kept = np.asarray(Image.open(folder / "segapp" / "strokes" / "img4.png"))
    assert (kept == 1).sum() > 50 and not (kept == 2).any()
    state = json.loads((folder / "segapp" / "project.json").read_text())
    assert state["done"] == ["img1.png", "img2.png", "img3.png"]

    again = App(xdotool, env, folder, shots)
    try:
        again.window("img4.png")  # where the work stopped
        again.box = first.box  # the same window size, the same photo size
        again.find_image()
        for n in (4, 5, 6):
            again.annotate(n)
            again.xdo("key", "ctrl+Return")
            if n < N:
                again.window(f"img{n + 1}.png")
        wait_for(lambda: len(json.loads((folder / "segapp" / "project.json").read_text())
                             ["done"]) == N, "all images done")
        again.window("img6.png")
        again.xdo("key", "ctrl+shift+e")  # File ▸ Export ▸ Dataset of the Folder
        again.window("Export the folder")
        time.sleep(0.5)
        again.xdo("key", "ctrl+a")
        again.xdo("type", str(out))
        again.xdo("key", "Return")
        wait_for((out / "annotations.json").is_file, "the COCO file")
        time.sleep(0.5)
    finally:
        errors.append(again.kill())
    for err in errors:
        assert "Traceback" not in err, err

    coco = json.loads((out / "annotations.json").read_text())
    assert [c["name"] for c in coco["categories"]] == ["left half", "right half"]
    assert sorted(i["file_name"] for i in coco["images"]) == [f"img{n}.png"
                                                             for n in range(1, N + 1)]
    for entry in coco["images"]:
        n = int(entry["file_name"][3:-4])
        labels = np.asarray(Image.open(out / entry["segapp_mask"]))
        truth = np.where(np.arange(W)[None, :] < split(n), 1, 2) * np.ones((H, 1), int)
        assert (labels == truth).mean() > 0.98, entry["file_name"]
        for ann in (a for a in coco["annotations"] if a["image_id"] == entry["id"]):
            np.testing.assert_array_equal(decode_mask(ann["segmentation"]),
                                          labels == ann["category_id"])
