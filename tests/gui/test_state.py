"""The Qt-free GUI state: evented fields, the undo history's stroke-set keys, the journal."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from segapp.editing import AnnotationModel, default_labels
from segapp.gui.journal import CURRENT, Journal, history_frames
from segapp.editing import History
from segapp.gui.state import AppState


def test_fields_emit_once_per_change_and_check_their_values():
    s = AppState()
    seen = []
    s.events.brush_size.connect(seen.append)
    s.brush_size = 30
    s.brush_size = 30
    s.brush_size = 10_000  # clipped to the largest brush
    assert seen == [30.0, 400.0]
    with pytest.raises(ValueError):
        s.label = 0  # 0 is the eraser *tool*, not a label
    with pytest.raises(ValueError):
        s.tool = "lasso"
    assert s.paint_label() == 1
    s.tool = "eraser"
    assert s.paint_label() == 0


def test_brush_in_screen_pixels_follows_the_zoom():
    s = AppState()
    s.brush_size = 20
    assert s.brush_radius(zoom=0.14) == pytest.approx(20 / 0.14 / 2)  # 12 MP at 14 %: wide
    assert s.brush_radius(zoom=4.0) == pytest.approx(2.5)
    s.brush_screen = False
    assert s.brush_radius(zoom=0.14) == s.brush_radius(zoom=4.0) == 10


edits = st.lists(st.one_of(
    st.tuples(st.just("stroke"), st.integers(0, 29), st.integers(0, 19), st.integers(0, 9)),
    st.tuples(st.just("undo")), st.tuples(st.just("redo")),
    st.tuples(st.just("clear"), st.integers(1, 9))), max_size=25)


def play(model: AnnotationModel, history: History, steps, journal: Journal | None = None):
    """Apply edits like the Document does; yield (key, scribbles) after each."""
    for step in steps:
        if step[0] == "stroke":
            _, x, y, label = step
            rec = model.apply_stroke([(x, y), (x + 5, y + 2)], label, 1.5)
            history.push(rec)
        elif step[0] == "clear":
            rec = model.clear_label(step[1])
            history.push(rec)
        else:
            rec = history.undo() if step[0] == "undo" else history.redo()
        if journal is not None and rec is not None:  # as the Document journals them
            write = getattr(journal, step[0] if step[0] in ("undo", "redo") else "edit")
            write(rec.bbox, model.scribbles[rec.bbox.slices])
        yield history.key(), model.scribbles.copy()


@settings(max_examples=60, deadline=None)
@given(edits)
def test_a_history_key_always_names_the_same_strokes(steps):
    """The result cache is keyed on History.key(): equal keys must mean equal stroke sets."""
    model = AnnotationModel((20, 30))
    history = History(model)
    seen = {history.key(): model.scribbles.copy()}
    for key, scribbles in play(model, history, steps):
        if key in seen:
            np.testing.assert_array_equal(seen[key], scribbles)
        seen[key] = scribbles
        # the labels painted, kept from the records' boxes, are those of a full count
        assert history.label_ids_present() == model.label_ids_present()


@settings(max_examples=40, deadline=None)
@given(edits, st.floats(0, 1))
def test_journal_replays_to_the_last_complete_edit_even_when_cut_anywhere(tmp_path_factory,
                                                                         steps, cut):
    folder = tmp_path_factory.mktemp("j")
    model = AnnotationModel((20, 30))
    history = History(model)
    journal = Journal(folder / "journal.sgj")
    journal.start("img.png", model.scribbles, default_labels(), {"method": "fastge"})
    sizes, states = [journal.size], [model.scribbles.copy()]
    for _key, scribbles in play(model, history, steps, journal):
        if journal.size != sizes[-1]:
            sizes.append(journal.size)
            states.append(scribbles)
    journal.close()
    rec = Journal.read(folder / "journal.sgj")
    np.testing.assert_array_equal(rec.scribbles, model.scribbles)
    assert rec.image_path.name == "img.png" and rec.settings == {"method": "fastge"}
    # a kill in the middle of a write leaves a torn tail: replay stops at the last whole frame
    data = (folder / "journal.sgj").read_bytes()
    n = int(cut * len(data))
    (folder / "torn.sgj").write_bytes(data[:n])
    torn = Journal.read(folder / "torn.sgj")
    whole = [i for i, size in enumerate(sizes) if size <= n]
    if not whole:
        assert torn is None
    else:
        np.testing.assert_array_equal(torn.scribbles, states[whole[-1]])


def test_history_is_bounded_in_bytes(tmp_path):
    model = AnnotationModel((100, 100))
    history = History(model, max_bytes=30_000)
    for i in range(50):
        history.push(model.apply_stroke([(0, i * 2), (99, i * 2)], 1 + i % 9, 5.0))
    assert sum(r.nbytes for _, r in history._steps) <= 30_000
    while history.can_undo():
        history.undo()
    assert model.scribbles.any()  # the oldest steps were dropped, not the newest


def walk(history: History) -> list[np.ndarray]:
    """The strokes after undoing every step, then after each redo (leaves it all redone)."""
    while history.can_undo():
        history.undo()
    seen = [history.model.scribbles.copy()]
    while history.can_redo():
        history.redo()
        seen.append(history.model.scribbles.copy())
    return seen


@settings(max_examples=40, deadline=None)
@given(edits, st.integers(1, 9))
def test_the_journal_rebuilds_the_undo_history_and_the_current_label(tmp_path_factory, steps,
                                                                     label):
    """Issue 23: after a crash, undo and redo were empty and the label was back at 1."""
    folder = tmp_path_factory.mktemp("j")
    model, journal = AnnotationModel((20, 30)), Journal(folder / "journal.sgj")
    history = History(model)
    journal.start("img.png", model.scribbles, default_labels(), {}, label=2)
    for _ in play(model, history, steps, journal):
        pass
    assert Journal.read(folder / "journal.sgj").label == 2  # from the base
    journal.current(label)
    journal.close()
    rec = Journal.read(folder / "journal.sgj", history=True)
    ids = ", ".join(str(i) for i in np.unique(model.scribbles) if i)
    assert rec.label == label
    assert rec.summary() == f"{np.count_nonzero(model.scribbles)} painted pixels, labels {ids}"
    assert (rec.applied, len(rec.steps)) == (history._index, len(history._steps))
    np.testing.assert_array_equal(rec.scribbles, model.scribbles)
    # the rebuilt history undoes and redoes through the same strokes as the original
    twin = AnnotationModel((20, 30))
    twin.scribbles[:] = rec.scribbles
    adopted = History(twin)
    adopted.adopt(rec.steps, rec.applied)
    origin = rec.origin()
    expected = walk(history)
    got = walk(adopted)
    assert len(got) == len(expected)
    for a, b in zip(got, expected):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(origin, expected[0])
    assert adopted.label_ids_present() == twin.label_ids_present()
    # a new journal made from it (a restore) holds the same history again
    again = Journal(folder / "again.sgj")
    again.start("img.png", origin, default_labels(), {}, label=label,
                history=history_frames(rec.steps, rec.applied))
    again.close()
    back = Journal.read(folder / "again.sgj", history=True)
    np.testing.assert_array_equal(back.scribbles, rec.scribbles)
    assert (back.applied, len(back.steps), back.label) == (rec.applied, len(rec.steps), label)
    for a, b in zip(back.steps, rec.steps):
        assert a.bbox == b.bbox
        np.testing.assert_array_equal(a.old, b.old)
        np.testing.assert_array_equal(a.new, b.new)


def test_an_undo_the_journal_cannot_match_starts_the_history_there(tmp_path):
    """A journal compacted (or cut) before the step an undo frame undid: the strokes are
    still exact, the history starts after that frame."""
    model = AnnotationModel((10, 10))
    journal = Journal(tmp_path / "j.sgj")
    rec1 = model.apply_stroke([(2, 2), (8, 2)], 1, 1.0)
    journal.start("img.png", model.scribbles, default_labels(), {})  # rec1 is in the base
    rec2 = model.apply_stroke([(2, 6), (8, 6)], 2, 1.0)
    journal.edit(rec2.bbox, rec2.new)
    rec2.undo(model)
    journal.undo(rec2.bbox, rec2.old)
    rec1.undo(model)
    journal.undo(rec1.bbox, rec1.old)  # a step from before the base
    rec3 = model.apply_stroke([(5, 1), (5, 9)], 3, 1.0)
    journal.edit(rec3.bbox, rec3.new)
    journal.current(5)
    journal._append(CURRENT, b'{"label": 300}')  # not a label: the one before stays
    journal.close()
    back = Journal.read(tmp_path / "j.sgj", history=True)
    np.testing.assert_array_equal(back.scribbles, model.scribbles)
    assert back.applied == 1 and len(back.steps) == 1 and back.steps[0].bbox == rec3.bbox
    assert back.label == 5


def test_the_rebuilt_history_is_bounded_in_bytes_newest_steps_kept(tmp_path,
                                                                            monkeypatch):
    from segapp.gui import journal as journal_module

    monkeypatch.setattr(journal_module, "HISTORY_BYTES", 30_000)
    model = AnnotationModel((100, 100))
    journal = Journal(tmp_path / "j.sgj")
    journal.start("img.png", model.scribbles, default_labels(), {})
    records = []
    for i in range(3000):
        rec = model.apply_stroke([(i % 97, (i * 7) % 97), (i % 97 + 2, (i * 7) % 97)],
                                 1 + i % 9, 1.0)
        records.append(rec)
        journal.edit(rec.bbox, rec.new)
    journal.close()
    back = Journal.read(tmp_path / "j.sgj", history=True)
    np.testing.assert_array_equal(back.scribbles, model.scribbles)
    assert sum(r.nbytes for r in back.steps) <= 30_000 < sum(r.nbytes for r in records)
    assert back._bytes == sum(r.nbytes for r in back.steps)
    assert back.steps[-1].bbox == records[-1].bbox  # the newest steps are kept
    assert back.applied == len(back.steps)
