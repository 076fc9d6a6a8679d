"""The napari plugin: manifest, the Qt-free model, and the widget in a real viewer.

Skipped with the reason when napari is not installed (``pip install 'segapp[napari]'``).
The viewer tests (``tests/napari/napari_viewer_cases.py``, napari's ``make_napari_viewer`` fixture)
need OpenGL, which Qt's offscreen platform only has through an X server known when the
QApplication starts — and this process's QApplication was made for the other Qt tests without
one — so they run in their own pytest process on a private Xvfb (or the existing DISPLAY).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

napari = pytest.importorskip("napari", reason="napari is not installed "
                             "(pip install 'segapp[napari]')")

import segapp  # noqa: E402
from segapp.napari.model import LiveSegmenter, as_unit_image  # noqa: E402
from napari_viewer_cases import two_region_scene  # noqa: E402  (tests/ is on sys.path)
from xvfb import running_xvfb  # noqa: E402

CASES = Path(__file__).with_name("napari_viewer_cases.py")


def test_viewer_cases_in_their_own_process(tmp_path):
    """Every test of napari_viewer_cases.py passes in a fresh process with an X display.

    The child's whole output is kept in ``tmp_path/viewer-cases.log`` and printed, so a failure
    shows every traceback of the child (pytest prints a failing test's captured stdout)."""
    expected = len(re.findall(r"^def test_", CASES.read_text(), flags=re.M))
    with running_xvfb(noreset=True) as display:   # see running_xvfb: the reset dropped Qt
        env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "DISPLAY": display}
        out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                              str(CASES)], env=env, capture_output=True, text=True,
                             cwd=CASES.parents[2], timeout=900)
    full = (f"$ DISPLAY={display} pytest {CASES.name}: exit {out.returncode}\n"
            f"--- stdout ---\n{out.stdout}\n--- stderr ---\n{out.stderr}")
    (tmp_path / "viewer-cases.log").write_text(full)
    print(full)
    log = f"(whole output: {tmp_path / 'viewer-cases.log'})\n" + out.stdout[-6000:] \
        + out.stderr[-2000:]
    assert out.returncode == 0, log
    assert re.search(rf"\b{expected} passed\b", out.stdout), log


def test_manifest_is_found_through_the_entry_point():
    from importlib.metadata import entry_points

    import npe2
    eps = [ep for ep in entry_points(group="napari.manifest") if ep.name == "segapp"]
    assert eps and eps[0].value == "segapp.napari:napari.yaml"
    manifest = npe2.PluginManifest.from_distribution("segapp")
    assert [w.display_name for w in manifest.contributions.widgets] == ["Scribble segmentation"]


# -- the Qt-free model ---------------------------------------------------------------------
@pytest.mark.parametrize("data, limits, rgb, expected", [
    (np.array([[0, 255]], np.uint8), (0, 255), False, np.array([[0, 255]], np.uint8)),
    (np.array([[0.0, 0.5]]), (0, 1), False, np.array([[0.0, 0.5]])),
    (np.array([[100.0, 300.0]]), (100, 300), False, np.array([[0.0, 1.0]])),
    (np.array([[100.0, 300.0]]), (150, 250), False, np.array([[0.0, 1.0]])),
    (np.ones((2, 2, 4), np.uint8), (0, 255), True, np.ones((2, 2, 3), np.uint8)),
])
def test_layer_data_conversion(data, limits, rgb, expected):
    np.testing.assert_allclose(as_unit_image(data, limits, rgb), expected)


def test_model_runs_one_solve_at_a_time_and_keeps_only_the_latest():
    model = LiveSegmenter()
    img, strokes = two_region_scene()
    first = model.request(img, ("a",), strokes)
    assert first is not None and model.request(img, ("a",), strokes) is None  # unchanged
    s2, s3 = strokes.copy(), strokes.copy()
    s2[0, 0] = 1
    s3[0, 0] = 2
    assert model.request(img, ("a",), s2) is None and first.cancel.is_set()
    assert model.request(img, ("a",), s3) is None
    nxt = model.finished(first)
    assert nxt is not None and np.array_equal(nxt.scribbles, s3) and model.is_current(nxt)
    assert not model.is_current(first)
    result = model.solve(nxt)
    np.testing.assert_array_equal(result.labels, segapp.segment(img, s3).labels)
    assert model.finished(nxt) is None and model.running is None


def test_model_drops_everything_once_closed():
    """The widget was deleted (its viewer closed): the running solve is cancelled, the pending
    one dropped, and nothing that still arrives is current."""
    img, strokes = two_region_scene()
    s2 = strokes.copy()
    s2[0, 0] = 1
    model = LiveSegmenter()
    first = model.request(img, ("a",), strokes)
    model.close()
    assert first.cancel.is_set() and not model.is_current(first)
    assert model.finished(first) is None and model.running is None
    assert model.request(img, ("a",), s2, force=True) is None
    model = LiveSegmenter()
    first = model.request(img, ("a",), strokes)
    assert model.request(img, ("a",), s2) is None and model.pending is not None
    model.close()
    assert model.pending is None and model.finished(first) is None and model.running is None
