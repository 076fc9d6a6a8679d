"""The Qt-free strokes model: brush, eraser, undo records, revision, observers."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from segapp.editing import AnnotationModel, BBox, Label, default_labels, stroke_mask


def test_the_editing_model_and_the_exports_load_no_qt():
    import subprocess

    code = ("import sys, segapp.editing, segapp.exports; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('PySide6', 'PyQt5', 'PyQt6', 'qtpy', 'napari')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_round_brush_covers_a_disc_and_a_capsule():
    box, mask = stroke_mask((10.5, 10.5), (10.5, 10.5), 3, (40, 40))
    assert mask.sum() == 29  # pixel centres within 3 of a pixel centre: the classic 29-disc
    assert box == BBox(7, 7, 14, 14)
    box, mask = stroke_mask((5.5, 20.5), (30.5, 20.5), 2, (40, 40))
    assert mask.shape == (box.height, box.width)
    assert mask[:, 2:-2].sum(axis=0).tolist() == [5] * (mask.shape[1] - 4)  # 5-pixel wide band


def test_tiny_brush_still_marks_the_clicked_pixel_and_clips_at_edges():
    m = AnnotationModel((20, 30))
    m.apply_stroke([(0.0, 0.0)], label=2, radius=0.1)
    assert m.scribbles[0, 0] == 2
    rec = m.apply_stroke([(29.9, 19.9), (40, 30)], label=3, radius=5)
    assert rec is not None and rec.bbox.y1 == 20 and rec.bbox.x1 == 30


def test_stroke_paints_polyline_and_bumps_revision_and_notifies():
    m = AnnotationModel((50, 60))
    seen = []
    m.changed.connect(seen.append)
    finished = []
    m.stroke_finished.connect(finished.append)
    m.begin_stroke(1, 2)
    b1 = m.extend_stroke([(5, 5), (30, 5)])
    b2 = m.extend_stroke([(30, 40)])
    rec = m.end_stroke()
    assert m.scribbles[5, 20] == 1 and m.scribbles[25, 30] == 1 and m.scribbles[40, 10] == 0
    assert m.revision == 2 and seen == [b1, b2] and finished == [rec]
    assert rec.bbox.union(b1) == rec.bbox and rec.text.startswith("stroke")


def test_undo_record_stores_only_the_box_and_restores_exactly():
    m = AnnotationModel((400, 500))
    m.apply_stroke([(50, 50), (450, 60)], label=1, radius=4)
    before = m.scribbles.copy()
    rec = m.apply_stroke([(100, 20), (120, 300)], label=2, radius=3)
    after = m.scribbles.copy()
    assert rec.nbytes < 0.1 * m.scribbles.nbytes  # a box, not a copy of the map
    rec.undo(m)
    np.testing.assert_array_equal(m.scribbles, before)
    rec.redo(m)
    np.testing.assert_array_equal(m.scribbles, after)


def test_self_overlapping_stroke_undoes_to_the_original():
    rng = np.random.default_rng(0)
    m = AnnotationModel((60, 70))
    m.set_scribbles(rng.integers(0, 4, size=(60, 70)))
    before = m.scribbles.copy()
    pts = [(10, 10), (50, 40), (12, 40), (48, 12), (10, 10)]  # crosses itself
    m.begin_stroke(5, 4)
    for p in pts:
        m.extend_stroke([p])
    rec = m.end_stroke()
    rec.undo(m)
    np.testing.assert_array_equal(m.scribbles, before)


def test_eraser_and_clears():
    m = AnnotationModel((30, 40))
    m.apply_stroke([(5, 5), (35, 5)], 1, 2)
    m.apply_stroke([(5, 20), (35, 20)], 2, 2)
    assert m.label_ids_present() == [1, 2] and m.can_segment()
    m.apply_stroke([(20, 0), (20, 30)], 0, 3)  # eraser cuts both strokes
    assert m.scribbles[5, 20] == 0 and m.scribbles[5, 8] == 1
    rec = m.clear_label(1)
    assert m.label_ids_present() == [2] and not m.can_segment()
    rec.undo(m)
    assert m.label_ids_present() == [1, 2]
    m.clear_all()
    assert not m.scribbles.any()
    assert m.clear_all() is None  # nothing to clear, nothing to undo


def test_stroke_that_changes_nothing_has_no_record():
    m = AnnotationModel((30, 40))
    m.apply_stroke([(5, 5)], 1, 3)
    rev = m.revision
    assert m.apply_stroke([(5, 5)], 1, 3) is None
    assert m.apply_stroke([(25, 25)], 0, 3) is None  # erasing nothing
    assert m.revision == rev


def test_label_table_rename_recolour_and_roundtrip():
    m = AnnotationModel((10, 10))
    assert len(m.labels) == 9 and m.labels[1].name == "Label 1"
    seen = []
    m.labels_changed.connect(seen.append)
    m.rename_label(2, "sky")
    m.set_label_color(2, (1, 2, 3))
    assert seen == [2, 2] and m.colors()[2] == (1, 2, 3)
    d = m.labels[2].to_dict()
    assert Label.from_dict(d) == m.labels[2]
    with pytest.raises(ValueError):
        m.set_label_color(2, (0, 0, 300))
    assert [lab.color for lab in default_labels()][0] == (230, 159, 0)


def test_set_scribbles_validates():
    m = AnnotationModel((10, 12))
    with pytest.raises(ValueError):
        m.set_scribbles(np.zeros((12, 10)))
    with pytest.raises(ValueError):
        m.set_scribbles(np.full((10, 12), 256))  # label ids are 0..255
    rec = m.set_scribbles(np.eye(10, 12, dtype=int) * 3)
    assert rec.bbox == BBox(0, 0, 10, 10)


def test_a_fill_paints_only_unpainted_pixels_and_never_removes_a_label():
    """Issue 23: a fill over a region holding label 2's stroke deleted it (k went 4 -> 3)."""
    m = AnnotationModel((20, 30))
    m.apply_stroke([(3, 3), (25, 3)], label=1, radius=1)
    m.apply_stroke([(10, 10), (12, 10)], label=2, radius=1.5)  # inside the region filled below
    before = m.scribbles.copy()
    region = np.zeros((20, 30), bool)
    region[5:, :] = True
    for only in (False, True):  # the "unlabelled only" option changes nothing for a fill
        m2 = AnnotationModel((20, 30))
        m2.scribbles[:] = before
        rec = m2.fill(region, 3, only)
        s = m2.scribbles
        assert (s[before > 0] == before[before > 0]).all()  # every painted pixel kept
        assert (s[region & (before == 0)] == 3).all() and (s[~region] == before[~region]).all()
        assert m2.label_ids_present() == [1, 2, 3]
        rec.undo(m2)
        np.testing.assert_array_equal(m2.scribbles, before)
    m.scribbles[:] = np.where(region, 2, m.scribbles)
    assert m.fill(region, 3) is None  # nothing unpainted there: no step
    with pytest.raises(ValueError):
        m.fill(region, 0)  # the eraser does not fill


def test_merge_lays_imported_strokes_over_the_current_ones_as_one_record():
    m = AnnotationModel((10, 12))
    m.apply_stroke([(2, 2), (9, 2)], label=1, radius=1)
    before = m.scribbles.copy()
    imported = np.zeros((10, 12), np.uint8)
    imported[1:4, 5:7] = 3  # over label 1's stroke and beside it
    imported[8, :] = 2
    rec = m.merge_scribbles(imported, text="import x.png")
    s = m.scribbles
    assert (s[imported > 0] == imported[imported > 0]).all()
    assert (s[(imported == 0)] == before[imported == 0]).all()
    assert rec.text == "import x.png"
    rec.undo(m)  # one step undoes the whole merge
    np.testing.assert_array_equal(m.scribbles, before)
    m.merge_scribbles(imported, unlabelled_only=True)
    kept = before > 0
    assert (m.scribbles[kept] == before[kept]).all()  # painted pixels keep their label
    assert (m.scribbles[(imported > 0) & ~kept] == imported[(imported > 0) & ~kept]).all()
    with pytest.raises(ValueError):
        m.merge_scribbles(np.zeros((3, 3), np.uint8))


def test_the_strokes_own_their_undo_history():
    m = AnnotationModel((30, 40))
    a = m.apply_stroke([(5, 5), (35, 5)], 1, 2)
    b = m.clear_label(1)
    assert m.history.key() != 0 and m.history.next_undo() is b
    assert m.undo() is b and m.scribbles[5, 20] == 1
    assert m.undo() is a and not m.scribbles.any()
    assert m.undo() is None
    assert m.redo() is a and m.history.label_ids_present() == [1]
    scratch = m.scratch()  # a copy to prepare an edit on: no history of its own
    assert scratch.history is None and scratch.clear_all() is not None
    assert m.scribbles.any()


def test_label_ids_up_to_255_are_painted_and_undone():
    m = AnnotationModel((20, 20))
    for i in range(10, 42):
        m.add_label(f"class {i}")
    rec = m.apply_stroke([(10, 10)], 41, 3)
    assert m.scribbles[10, 10] == 41 and rec.new.dtype == np.uint8
    assert m.history.label_ids_present() == [41]
    with pytest.raises(ValueError):
        m.begin_stroke(256, 2)


def test_a_locked_labels_pixels_survive_every_edit_but_undo():
    m = AnnotationModel((30, 40))
    m.apply_stroke([(5, 10), (35, 10)], 1, 3)
    m.set_label_state(1, locked=True)
    locked = m.scribbles == 1
    m.apply_stroke([(20, 0), (20, 29)], 2, 4)  # across the locked stroke
    m.apply_stroke([(10, 0), (10, 29)], 0, 4)  # the eraser across it
    assert (m.scribbles[locked] == 1).all() and (m.scribbles == 2).any()
    assert m.clear_label(1) is None
    m.clear_all()
    assert (m.scribbles == 1).sum() == locked.sum() and not (m.scribbles == 2).any()
    with pytest.raises(ValueError, match="locked"):
        m.begin_stroke(1, 2)
    with pytest.raises(ValueError, match="locked"):
        m.fill(np.ones((30, 40), bool), 1)
    imported = np.full((30, 40), 3)
    imported[0, 0] = 1  # a new pixel of the locked label is refused too
    m.set_scribbles(imported)
    assert (m.scribbles[locked] == 1).all() and m.scribbles[0, 0] == 0 and m.scribbles[1, 1] == 3
    m.undo()  # undo is exact, locks or not
    m.undo()
    assert (m.scribbles == 2).any()


def test_erasing_along_a_stroke_leaves_no_thin_remnants():
    """Issue 32: the eraser along a stroke left 1-px slivers, invisible, still strokes."""
    m = AnnotationModel((60, 200))
    m.apply_stroke([(10, 30), (190, 31)], 1, 6)
    # the same path by hand: slightly off and narrower, as a person retraces it
    rec = m.apply_stroke([(10, 30.6), (100, 30.9), (190, 31.6)], 0, 5.4)
    assert not m.scribbles.any()
    assert m.undo() is rec and (m.scribbles == 1).sum() > 0  # one undo brings it all back


def test_the_eraser_keeps_what_it_only_nicked():
    m = AnnotationModel((60, 200))
    m.apply_stroke([(10, 30), (190, 30)], 1, 6)
    m.apply_stroke([(100, 0), (100, 59)], 0, 4)  # across: both halves stay whole
    left, right = m.scribbles[:, :95], m.scribbles[:, 106:]
    assert (left == 1).sum() > 400 and (right == 1).sum() > 400
    # a thin stroke beside the eraser's path but wider than its reach stays too
    m.apply_stroke([(20, 50), (180, 50)], 2, 3)
    m.apply_stroke([(20, 43), (180, 43)], 0, 2)
    assert (m.scribbles == 2).sum() > 300
