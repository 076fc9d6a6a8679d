"""The napari plugin in a real napari viewer (``make_napari_viewer``), as a person uses it.

Not collected by the main test run: napari's canvas needs OpenGL, which Qt only gets from an X
server it connects to when the QApplication starts, so ``tests/napari/test_napari_plugin.py`` runs this
file in its own pytest process on an Xvfb display. Run it alone with a display:
``QT_QPA_PLATFORM=offscreen DISPLAY=:N python -m pytest tests/napari/napari_viewer_cases.py``.
The reference for every result is :func:`segapp.segment` on the same arrays.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
from qtpy.QtCore import Qt

import segapp
from segapp.napari.sample import coffee
from segapp.gui.napari_dock import DEBOUNCE_MS, EIGENVECTOR_LAYER, RESULT_LAYER, SegmentWidget

TIMEOUT_MS = 60_000  # a solve on a loaded 2-core machine; the tests take seconds when idle


def two_region_scene() -> tuple[np.ndarray, np.ndarray]:
    """A 60×90 RGB image: three vertical bands; strokes in the left and right bands."""
    rng = np.random.default_rng(0)
    img = np.zeros((60, 90, 3))
    img[:, :30] = (0.8, 0.2, 0.1)
    img[:, 30:60] = (0.1, 0.7, 0.2)
    img[:, 60:] = (0.2, 0.3, 0.9)
    img = np.clip(img + rng.normal(0, 0.03, img.shape), 0, 1).astype(np.float32)
    strokes = np.zeros((60, 90), np.int32)
    strokes[20:40, 10:13] = 1
    strokes[20:40, 75:78] = 2
    return img, strokes


@pytest.fixture
def dock(make_napari_viewer, qtbot):
    """A viewer with the widget docked, as Plugins > segapp > Scribble segmentation does."""
    viewer = make_napari_viewer()
    _, widget = viewer.window.add_plugin_dock_widget("segapp", "Scribble segmentation")
    assert isinstance(widget, SegmentWidget)
    return viewer, widget


def result_of(viewer) -> np.ndarray:
    return np.asarray(viewer.layers[RESULT_LAYER].data)


def wait_for_result(qtbot, viewer, widget, expected: np.ndarray) -> None:
    def done():
        assert RESULT_LAYER in viewer.layers and widget.model.running is None
        assert np.array_equal(result_of(viewer), expected)
    qtbot.waitUntil(done, timeout=TIMEOUT_MS)


def test_widget_segments_the_bundled_sample(dock, qtbot):
    viewer, widget = dock
    for data, kwargs, kind in coffee():   # File > Open Sample > segapp > coffee
        getattr(viewer, f"add_{kind}")(data, **kwargs)
    assert widget.image_box.currentText() == "coffee"
    assert widget.scribbles_box.currentText() == "scribbles"
    image = viewer.layers["coffee"].data
    scribbles = np.asarray(viewer.layers["scribbles"].data)
    expected = segapp.segment(image, scribbles).labels
    qtbot.mouseClick(widget.run_button, Qt.LeftButton)
    wait_for_result(qtbot, viewer, widget, expected)
    assert set(np.unique(result_of(viewer))) == set(np.unique(scribbles[scribbles > 0]))
    assert "5 labels" in widget.status.text()


def test_each_scribble_edit_resolves_live(dock, qtbot):
    viewer, widget = dock
    img, strokes = two_region_scene()
    viewer.add_image(img, name="bands", rgb=True)
    layer = viewer.add_labels(strokes.copy(), name="strokes")
    wait_for_result(qtbot, viewer, widget, segapp.segment(img, strokes).labels)
    assert set(np.unique(result_of(viewer))) == {1, 2}
    # a person paints a third label in the middle band: one brush stroke (the dabs of a
    # drag are one undo step, committed when the mouse is released)
    layer.selected_label = 3
    layer.brush_size = 3
    layer.mode = "paint"
    with layer.block_history():
        for y in range(20, 40, 2):
            layer.paint((y, 45), 3)
    edited = np.asarray(layer.data).copy()
    assert (edited == 3).sum() > 20
    wait_for_result(qtbot, viewer, widget, segapp.segment(img, edited).labels)
    assert (result_of(viewer)[:, 35:55] == 3).mean() > 0.9
    # Ctrl+Z: the stroke goes away and the two-label answer comes back
    layer.undo()
    assert np.array_equal(layer.data, strokes)
    wait_for_result(qtbot, viewer, widget, segapp.segment(img, strokes).labels)
    # replacing the data (a script, a loaded file) is an edit too
    layer.data = edited
    wait_for_result(qtbot, viewer, widget, segapp.segment(img, edited).labels)


def test_a_burst_of_edits_shows_only_the_last_answer(dock, qtbot):
    viewer, widget = dock
    img, strokes = two_region_scene()
    viewer.add_image(img, name="bands", rgb=True)
    layer = viewer.add_labels(strokes.copy(), name="strokes")
    final = strokes.copy()
    for i in range(5):   # faster than a solve: each edit cancels or supersedes the previous
        final[5 + i, 40:50] = 3 if i % 2 else 1
        layer.data = final.copy()
        qtbot.wait(30)
    wait_for_result(qtbot, viewer, widget, segapp.segment(img, final).labels)
    assert widget.model.pending is None


def test_eigenvector_layers(dock, qtbot):
    viewer, widget = dock
    img, strokes = two_region_scene()
    strokes[5:10, 40:50] = 3
    viewer.add_image(img, name="bands", rgb=True)
    widget.eigen_box.setChecked(True)
    viewer.add_labels(strokes, name="strokes")
    ref = segapp.segment(img, strokes)
    wait_for_result(qtbot, viewer, widget, ref.labels)
    names = [EIGENVECTOR_LAYER.format(j + 1) for j in range(ref.eigenvectors.shape[-1])]
    qtbot.waitUntil(lambda: all(n in viewer.layers for n in names), timeout=TIMEOUT_MS)
    for j, n in enumerate(names):
        np.testing.assert_allclose(viewer.layers[n].data, ref.eigenvectors[..., j], atol=1e-5)
    assert widget.image_box.count() == 1   # eigenvector layers are not offered as inputs


def test_errors_are_shown_not_raised(dock, qtbot):
    viewer, widget = dock
    img, strokes = two_region_scene()
    viewer.add_image(img, name="bands", rgb=True)
    one_label = np.where(strokes > 0, 1, 0)
    viewer.add_labels(one_label, name="strokes")
    qtbot.wait(300)
    assert RESULT_LAYER not in viewer.layers
    assert "at least two labels" in widget.status.text()
    viewer.add_labels(np.zeros((10, 10), np.int32), name="wrong size")
    widget.scribbles_box.setCurrentText("wrong size")
    qtbot.mouseClick(widget.run_button, Qt.LeftButton)
    assert "New scribbles layer" in widget.status.text()
    viewer.add_image(np.zeros((3, 20, 20)), name="stack")
    widget.image_box.setCurrentText("stack")
    qtbot.mouseClick(widget.run_button, Qt.LeftButton)
    assert "2-D grey or RGB" in widget.status.text()


def test_new_scribbles_layer_matches_the_image(dock):
    viewer, widget = dock
    viewer.add_image(np.zeros((40, 70)), name="grey")
    layer = widget.new_scribbles_layer()
    assert layer.data.shape == (40, 70) and widget.scribbles_box.currentText() == layer.name
    assert layer.mode == "paint" and layer.selected_label == 1


def test_the_scribbles_stay_selected_after_the_first_answer(dock, qtbot):
    """Issue 32: the first answer's layer became the selected one, so the next brush stroke
    went into the result instead of the scribbles."""
    viewer, widget = dock
    img, strokes = two_region_scene()
    viewer.add_image(img, name="bands", rgb=True)
    widget.eigen_box.setChecked(True)  # more layers added with the answer
    layer = viewer.add_labels(strokes.copy(), name="strokes")
    layer.mode = "paint"
    assert viewer.layers.selection.active is layer
    wait_for_result(qtbot, viewer, widget, segapp.segment(img, strokes).labels)
    qtbot.waitUntil(lambda: EIGENVECTOR_LAYER.format(1) in viewer.layers, timeout=TIMEOUT_MS)
    assert viewer.layers.selection.active is layer and layer.mode == "paint"
    # the next stroke, painted as the viewer's brush does on the selected layer
    active = viewer.layers.selection.active
    active.selected_label = 3
    active.paint((30, 45), 3)
    assert (np.asarray(layer.data) == 3).any()
    assert not (result_of(viewer) == 3).any() or (strokes == 3).any()


def test_a_layer_event_that_changes_nothing_starts_no_solve(dock, qtbot):
    """napari gives a plugin a proxy of the viewer, a new proxy object per look-up: the image
    was told apart by the proxy's id(), so each layer added (or any other event that only
    refreshed the same scribbles) started another solve with a new Session of the same image."""
    viewer, widget = dock
    img, strokes = two_region_scene()
    viewer.add_image(img, name="bands", rgb=True)
    layer = viewer.add_labels(strokes.copy(), name="strokes")
    wait_for_result(qtbot, viewer, widget, segapp.segment(img, strokes).labels)
    generation = widget.model.generation
    viewer.add_points(np.zeros((0, 2)), name="marks")   # the layer boxes are refilled
    layer.refresh()                                      # set_data: the same scribbles
    layer.data = np.asarray(layer.data).copy()           # data: the same scribbles
    qtbot.wait(5 * DEBOUNCE_MS)
    assert widget.model.generation == generation and widget.model.running is None


def test_a_result_after_the_widget_is_gone_is_dropped(dock, qtbot, monkeypatch):
    """A solve that ends after its widget was deleted (a viewer closed mid-solve) must not touch
    the deleted controls: it raised "Internal C++ object (QComboBox) already deleted" in Qt's
    event loop."""
    viewer, widget = dock
    model = widget.model
    gate = threading.Event()
    solve = model.solve

    def held(req):   # the answer is ready (past every cancellation point) but not yet back
        result = solve(req)
        gate.wait(TIMEOUT_MS / 1000)
        return result

    monkeypatch.setattr(model, "solve", held)
    img, strokes = two_region_scene()
    viewer.add_image(img, name="bands", rgb=True)
    viewer.add_labels(strokes, name="strokes")
    qtbot.waitUntil(lambda: model.running is not None, timeout=TIMEOUT_MS)
    # as viewer.close() does: the layers go, then the window with its docked widgets
    viewer.layers.clear()
    viewer.window.remove_dock_widget(widget)
    gone = threading.Event()
    widget.destroyed.connect(lambda *_: gone.set())
    widget.deleteLater()
    qtbot.waitUntil(gone.is_set, timeout=TIMEOUT_MS)
    gate.set()
    qtbot.waitUntil(lambda: model.running is None, timeout=TIMEOUT_MS)
    qtbot.wait(100)   # the worker's queued signals are delivered; none may raise
    assert RESULT_LAYER not in viewer.layers
