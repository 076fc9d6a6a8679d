"""The tool table: what brush, eraser, fill and picker do with a press, drag and release."""

from __future__ import annotations

import numpy as np

from segapp.editing import TOOLS, AnnotationModel, ToolContext


def context(model, label=1, result=None):
    said, fills, chosen = [], [], []
    ctx = ToolContext(model=model, label=label, radius=2.0, unlabelled_only=False,
                      result=result, fill=lambda x, y: fills.append((x, y)),
                      choose=chosen.append, say=said.append)
    return ctx, said, fills, chosen


def drag(tool, ctx, points):
    if tool.press(ctx, *points[0]):
        for p in points[1:-1]:
            tool.move(ctx, *p)
        tool.release(ctx, *points[-1])


def test_brush_and_eraser_paint_a_stroke_from_press_to_release():
    m = AnnotationModel((20, 30))
    ctx, *_ = context(m, label=2)
    drag(TOOLS["brush"], ctx, [(2, 5), (15, 5), (28, 5)])
    assert (m.scribbles[5, 2:28] == 2).all() and m.history.can_undo()
    ctx, *_ = context(m, label=0)
    drag(TOOLS["eraser"], ctx, [(15, 0), (15, 19)])
    assert m.scribbles[5, 15] == 0 and not m.stroking


def test_a_locked_label_is_not_painted_with_and_the_tool_says_so():
    m = AnnotationModel((20, 30))
    m.set_label_state(3, locked=True)
    ctx, said, fills, _ = context(m, label=3)
    drag(TOOLS["brush"], ctx, [(2, 5), (28, 5)])
    assert not m.scribbles.any() and "locked" in said[0]
    TOOLS["fill"].press(ctx, 4, 4)
    assert not fills and "locked" in said[1]


def test_fill_asks_for_the_pixel_clicked_once_and_is_one_shot():
    m = AnnotationModel((20, 30))
    ctx, said, fills, _ = context(m)
    assert TOOLS["fill"].one_shot and not TOOLS["brush"].one_shot
    assert TOOLS["fill"].press(ctx, 7.6, 3.2) is False
    TOOLS["fill"].press(ctx, -1, 3)  # outside the image: nothing
    assert fills == [(7, 3)]


def test_the_picker_takes_the_stroke_else_the_segment_under_the_mouse():
    m = AnnotationModel((20, 30))
    m.apply_stroke([(5, 5)], 4, 2)
    result = np.full((20, 30), 2)
    ctx, said, _, chosen = context(m, result=result)
    TOOLS["picker"].press(ctx, 5, 5)
    TOOLS["picker"].press(ctx, 25, 15)
    assert chosen == [4, 2] and "painted" in said[0] and "segmented" in said[1]
    ctx, said, _, chosen = context(m, result=None)
    TOOLS["picker"].press(ctx, 25, 15)  # nothing painted, no segmentation: nothing picked
    assert chosen == [] and "Nothing to pick" in said[0]
