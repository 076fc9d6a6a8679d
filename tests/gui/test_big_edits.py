"""Big edits — a fill, a clear, their undo and redo — never freeze the window, and leave the
stroke layer showing exactly the strokes.

On a 12 MP photo applying such an edit on the GUI thread took 100–330 ms (recolouring the
stroke layer over the edit's box, counting its labels, packing it for the journal). The
person-driven test below fills, undoes, redoes, clears and undoes, and checks that each step
is prepared in the background (the key press returns before it is applied) and that none of
that per-pixel work over a big box runs on the GUI thread; after every step the stroke layer
is compared with a numpy colouring of the label map. The window's pauses meanwhile are
measured by benchmarks/gui.py.
"""

from __future__ import annotations

import threading
import time
import zlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image
from PySide6.QtCore import Qt
from skimage.segmentation import flood

from segapp.editing import BBox, EditRecord, Label
from segapp.editing import history
from segapp.gui import edits, journal, state  # noqa: F401
from segapp.gui.qimage import RGBABuffer

from .conftest import DISC_CENTER, drag, open_and_wait, segment

H12, W12 = 3000, 4000  # 12 MP
BIG = 1000 * 1000  # pixels: per-pixel work on a box this big takes 5-60 ms at least
CTRL, SHIFT = Qt.KeyboardModifier.ControlModifier, Qt.KeyboardModifier.ShiftModifier


def layer_reference(scribbles: np.ndarray, labels: dict[int, Label]) -> np.ndarray:
    """The stroke layer a label map should show, coloured with numpy alone: each label's
    colour, opaque; unlabelled pixels transparent black."""
    table = np.zeros((256, 4), np.uint8)
    for i, lab in labels.items():
        table[i] = (*lab.color, 255)
    return table[scribbles]


def assert_layer_shows(win, expected: np.ndarray) -> None:
    model = win.model
    np.testing.assert_array_equal(model.scribbles, expected)
    layer = win.canvas.stroke_layer()
    reference = layer_reference(model.scribbles, model.labels)
    wrong = np.count_nonzero((layer != reference).any(axis=-1))
    assert wrong == 0, f"{wrong} stroke-layer pixels do not show their label"
    counts = np.bincount(model.scribbles.ravel(), minlength=256)
    np.testing.assert_array_equal(win.state.history.counts, counts)


@pytest.fixture(scope="module")
def rectangle_12mp(tmp_path_factory):
    """4000×3000 JPEG: a bright rectangle over 56% of the picture on a dark background."""
    rng = np.random.default_rng(1)
    img = np.empty((H12, W12, 3), np.uint8)
    img[:] = (30, 60, 110)
    img[300:2700, 200:3800] = (220, 160, 60)
    img = np.clip(img + rng.normal(0, 4, (H12, W12, 1)), 0, 255).astype(np.uint8)
    path = tmp_path_factory.mktemp("big") / "rectangle_12mp.jpg"
    Image.fromarray(img).save(path, quality=92)
    return path


@pytest.fixture
def gui_thread_work(monkeypatch):
    """Records ``(what, pixels)`` of the per-pixel work that ran on the GUI thread: colouring
    the stroke layer, counting an edit's labels, packing it for the journal."""
    seen: list[tuple[str, int]] = []

    def spy(name, function, size):
        def wrapped(*args, **kwargs):
            if threading.current_thread() is threading.main_thread():
                seen.append((name, size(*args)))
            return function(*args, **kwargs)
        return wrapped

    def box_size(_buffer, labels, _lut, box=None):
        return (box or BBox.full(labels.shape)).height * (box or BBox.full(labels.shape)).width

    monkeypatch.setattr(RGBABuffer, "paint_labels",
                        spy("colour", RGBABuffer.paint_labels, box_size))
    for module in (edits, history):
        monkeypatch.setattr(module, "count_change",
                            spy("count", edits.count_change, lambda r: r.old.size))
    for module in (edits, journal):
        monkeypatch.setattr(module, "pack_map", spy("pack", journal.pack_map, np.size))
    return seen


def test_fill_clear_undo_redo_of_12_megapixels_never_block_the_window(
        qtbot, window, rectangle_12mp, gui_thread_work):
    win = window
    assert open_and_wait(win, rectangle_12mp)
    assert win.model.shape == (H12, W12)
    # a person: label 1 on the rectangle, label 2 on the background, wait for the result
    qtbot.keyClick(win.canvas, Qt.Key.Key_1)
    drag(qtbot, win.canvas, [(1000, 1500), (2000, 1400), (3000, 1500)])
    qtbot.keyClick(win.canvas, Qt.Key.Key_2)
    drag(qtbot, win.canvas, [(100, 100), (2000, 120), (3900, 150)])
    qtbot.waitUntil(lambda: win.state.shown is not None and not win.result.preview
                    and win.state.shown.tag == win.display.tag, timeout=240_000)
    # Keep solves out of the measurement: a running solve's own pauses are what
    # benchmarks/gui.py measures; this test is about applying the edits.
    win.worker.debounce_ms = 3_600_000
    shown = np.asarray(win.result.labels)
    region = flood(shown, (1500, 2000), connectivity=1)  # the region under the click
    assert region.mean() > 0.4  # the fill is big: most of the rectangle
    before = win.model.scribbles.copy()
    filled = np.where(region & (before == 0), 3, before)  # strokes stay
    gui_thread_work.clear()

    applied: list[str] = []

    def step(name, act, expected):
        key = win.state.stroke_key()
        act()  # returns before the edit is applied: it is prepared in the background
        assert win.state.stroke_key() == key and win.document.editor.running, name
        qtbot.waitUntil(lambda: win.state.stroke_key() != key
                        and not win.document.editor.running, timeout=60_000)
        applied.append(name)
        assert_layer_shows(win, expected)

    def fill():
        qtbot.keyClick(win.canvas, Qt.Key.Key_G)
        qtbot.keyClick(win.canvas, Qt.Key.Key_3)
        qtbot.mouseClick(win.canvas.viewport(), Qt.MouseButton.LeftButton,
                         pos=win.canvas.mapFromScene(2000.5, 1500.5))

    step("fill", fill, filled)
    step("undo", lambda: qtbot.keyClick(win.canvas, Qt.Key.Key_Z, CTRL), before)
    step("redo", lambda: qtbot.keyClick(win.canvas, Qt.Key.Key_Z, CTRL | SHIFT), filled)
    step("clear all", lambda: qtbot.keyClick(win.canvas, Qt.Key.Key_Delete, CTRL),
         np.zeros_like(before))
    step("undo the clear", lambda: qtbot.keyClick(win.canvas, Qt.Key.Key_Z, CTRL), filled)
    assert len(applied) == 5
    big = [(what, n) for what, n in gui_thread_work if n >= BIG]
    assert not big, f"per-pixel work over a big box ran on the GUI thread: {big}"
    assert {what for what, _n in gui_thread_work} <= {"colour", "count", "pack"}


@pytest.fixture
def slow_preparation(monkeypatch):
    """Big edits take 0.4 s to prepare (as at 12 MP); the event is set when one starts."""
    prepare, started = edits.prepare, threading.Event()

    def slow_prepare(*args, **kwargs):
        started.set()
        time.sleep(0.4)
        return prepare(*args, **kwargs)

    monkeypatch.setattr(edits, "prepare", slow_prepare)
    return started


def test_a_stroke_painted_while_a_fill_is_prepared_stays_under_it(qtbot, window,
                                                                  slow_preparation):
    """The fill is prepared from a copy of the strokes; a stroke painted meanwhile makes it
    prepare again from the strokes with that stroke, in the background."""
    win = window
    segment(qtbot, win)
    disc = np.asarray(win.result.labels) == np.asarray(win.result.labels)[45, 60]
    before = win.model.scribbles.copy()
    qtbot.keyClick(win.canvas, Qt.Key.Key_G)
    qtbot.keyClick(win.canvas, Qt.Key.Key_3)
    qtbot.mouseClick(win.canvas.viewport(), Qt.MouseButton.LeftButton,
                     pos=win.canvas.mapFromScene(*DISC_CENTER))
    qtbot.waitUntil(slow_preparation.is_set)
    assert win.state.tool == "brush"  # the click was the fill: the brush is back
    qtbot.keyClick(win.canvas, Qt.Key.Key_4)
    # across the fill's box, in and out of the disc: a fill prepared without the stroke
    # would put back what was under the stroke beside the disc
    drag(qtbot, win.canvas, [(5, 24), (115, 24)])
    stroke = win.model.scribbles == 4
    assert stroke.any() and not (win.model.scribbles == 3).any()  # the fill: not yet
    assert win.document.wait_edits()
    s = win.model.scribbles
    assert (s[disc & ~stroke & (before == 0)] == 3).all() and (s[stroke & ~disc] == 4).all()
    assert (s[(before > 0) & ~stroke] == before[(before > 0) & ~stroke]).all()
    assert_layer_shows(win, s.copy())
    # both are undoable, the fill first (it came last)
    qtbot.keyClick(win.canvas, Qt.Key.Key_Z, CTRL)
    assert win.document.wait_edits()
    assert not (win.model.scribbles == 3).any() and (win.model.scribbles == 4).any()
    assert_layer_shows(win, win.model.scribbles.copy())


def test_undo_right_after_a_fill_undoes_the_fill(qtbot, window):
    """Ctrl+Z pressed while the fill is still being prepared waits for it, then undoes it
    (it used to undo the stroke before, and the fill landed afterwards)."""
    win = window
    segment(qtbot, win)
    before = win.model.scribbles.copy()
    qtbot.keyClick(win.canvas, Qt.Key.Key_G)
    qtbot.keyClick(win.canvas, Qt.Key.Key_3)
    qtbot.mouseClick(win.canvas.viewport(), Qt.MouseButton.LeftButton,
                     pos=win.canvas.mapFromScene(*DISC_CENTER))
    qtbot.keyClick(win.canvas, Qt.Key.Key_Z, CTRL)
    assert win.document.wait_edits()
    assert_layer_shows(win, before)
    qtbot.keyClick(win.canvas, Qt.Key.Key_Z, CTRL | SHIFT)
    assert win.document.wait_edits()
    assert (win.model.scribbles == 3).any()
    assert_layer_shows(win, win.model.scribbles.copy())


def test_a_label_recoloured_while_a_fill_is_prepared_is_drawn_in_its_new_colour(
        qtbot, window, slow_preparation):
    """The fill's stroke-layer pixels were coloured in the label's old colour: the canvas
    colours them itself."""
    win = window
    segment(qtbot, win)
    qtbot.keyClick(win.canvas, Qt.Key.Key_G)
    qtbot.keyClick(win.canvas, Qt.Key.Key_3)
    qtbot.mouseClick(win.canvas.viewport(), Qt.MouseButton.LeftButton,
                     pos=win.canvas.mapFromScene(*DISC_CENTER))
    qtbot.waitUntil(slow_preparation.is_set)
    win.model.set_label_color(3, (1, 2, 3))  # as the Labels panel's Colour… button does
    assert win.document.wait_edits()
    assert (win.model.scribbles == 3).any()
    assert_layer_shows(win, win.model.scribbles.copy())


# -- the preparation itself, against independent references --------------------------------
@st.composite
def records(draw):
    h, w = draw(st.integers(1, 12)), draw(st.integers(1, 12))
    y0, x0 = draw(st.integers(0, 5)), draw(st.integers(0, 5))
    ids = st.integers(0, 9)
    old = np.array(draw(st.lists(ids, min_size=h * w, max_size=h * w)), np.uint8).reshape(h, w)
    new = np.array(draw(st.lists(ids, min_size=h * w, max_size=h * w)), np.uint8).reshape(h, w)
    return EditRecord(BBox(y0, x0, y0 + h, x0 + w), old, new)


@settings(max_examples=60, deadline=None)
@given(records(), st.booleans(), st.lists(st.tuples(st.integers(0, 255), st.integers(0, 255),
                                                    st.integers(0, 255)), min_size=9, max_size=9))
def test_a_prepared_edit_is_the_colouring_counting_and_packing_of_its_values(record, undo,
                                                                             colours):
    from segapp.gui.qimage import label_lut

    labels = {i + 1: Label(i + 1, f"L{i + 1}", c) for i, c in enumerate(colours)}
    ready = edits.prepare(record, label_lut({i: lab.color for i, lab in labels.items()}), undo)
    values = record.old if undo else record.new
    assert ready.bbox == record.bbox
    np.testing.assert_array_equal(ready.values, values)
    pixels = ready.pixels.view(np.uint8).reshape(*values.shape, 4)
    np.testing.assert_array_equal(pixels, layer_reference(values, labels))
    expected = np.zeros(256, np.int64)
    for a, b in zip(record.old.ravel(), record.new.ravel()):
        expected[a] -= 1
        expected[b] += 1
    np.testing.assert_array_equal(ready.change, expected)
    assert zlib.decompress(ready.packed) == values.tobytes()


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 20), st.integers(1, 20), st.integers(1, 4), st.data())
def test_the_fill_region_is_the_4_connected_component_under_the_click(h, w, k, data):
    labels = np.array(data.draw(st.lists(st.integers(1, k), min_size=h * w, max_size=h * w)),
                      np.int64).reshape(h, w)
    y, x = data.draw(st.integers(0, h - 1)), data.draw(st.integers(0, w - 1))
    np.testing.assert_array_equal(edits.region_at(labels, y, x),
                                  flood(labels, (y, x), connectivity=1))
