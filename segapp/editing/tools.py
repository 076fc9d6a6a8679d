"""What the painting tools do with a press, a drag and a release, in image coordinates (no Qt).

The canvas turns mouse events into image points and hands them to the tool of the app's
current tool name, looked up in :data:`TOOLS`; a tool acts on the strokes
(:class:`~.strokes.AnnotationModel`) and speaks back through its :class:`ToolContext`. A
*one-shot* tool (fill, picker) acts once per click and the brush is the tool again afterwards,
as GIMP's bucket is used (a fill tool that stayed on made the next drag a fill of a whole
segment).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from .strokes import AnnotationModel, LockedLabelError

__all__ = ["Tool", "ToolContext", "StrokeTool", "FillTool", "PickTool", "TOOLS"]


@dataclass
class ToolContext:
    """What a tool may use, made by the canvas for one press.

    Attributes
    ----------
    model : AnnotationModel
    label : int
        The label a stroke paints (0: the eraser).
    radius : float
        The brush radius in image pixels.
    unlabelled_only : bool
        Strokes leave painted pixels alone.
    result : ndarray (H, W) or None
        The segmentation on display (the picker reads it where nothing is painted).
    fill : callable(x, y)
        Ask for a fill of the segment under image pixel (x, y).
    choose : callable(label)
        Make ``label`` the label painted with.
    say : callable(text)
        A message for the status bar.
    """

    model: AnnotationModel
    label: int
    radius: float
    unlabelled_only: bool
    result: np.ndarray | None
    fill: Callable[[int, int], None]
    choose: Callable[[int], None]
    say: Callable[[str], None]

    def pixel(self, x: float, y: float) -> tuple[int, int] | None:
        """The image pixel ``(column, row)`` under (x, y), or None outside the image."""
        j, i = int(np.floor(x)), int(np.floor(y))
        h, w = self.model.shape
        return (j, i) if 0 <= j < w and 0 <= i < h else None


class Tool:
    """A tool's answer to a press, a drag and a release (image coordinates)."""

    #: The tool acts once per click; the brush is the tool again after it.
    one_shot = False
    #: How the canvas draws the cursor: "brush" (the brush's ring) or "point" (a small ring).
    cursor = "brush"

    def press(self, ctx: ToolContext, x: float, y: float) -> bool:
        """A press at (x, y); True if the following moves and release belong to the tool."""
        return False

    def move(self, ctx: ToolContext, x: float, y: float) -> None:
        """The mouse moved to (x, y) with the button down."""

    def release(self, ctx: ToolContext, x: float, y: float) -> None:
        """The button was released at (x, y)."""


class StrokeTool(Tool):
    """Brush (the current label) and eraser (label 0): a stroke from press to release."""

    def press(self, ctx: ToolContext, x: float, y: float) -> bool:
        try:
            ctx.model.begin_stroke(ctx.label, ctx.radius, ctx.unlabelled_only)
        except LockedLabelError as exc:
            ctx.say(str(exc))
            return False
        ctx.model.extend_stroke([(x, y)])
        return True

    def move(self, ctx: ToolContext, x: float, y: float) -> None:
        if ctx.model.stroking:
            ctx.model.extend_stroke([(x, y)])

    def release(self, ctx: ToolContext, x: float, y: float) -> None:
        if ctx.model.stroking:
            ctx.model.extend_stroke([(x, y)])
            ctx.model.end_stroke()  # recorded in the history; stroke_finished announces it


class FillTool(Tool):
    """Paint bucket on the segmentation: the unpainted pixels of the segment clicked."""

    one_shot = True
    cursor = "point"

    def press(self, ctx: ToolContext, x: float, y: float) -> bool:
        at = ctx.pixel(x, y)
        if at is not None:
            if ctx.model.is_locked(ctx.label):
                ctx.say(f"{ctx.model.schema.name(ctx.label)} is locked: unlock it to fill")
            else:
                ctx.fill(*at)
        return False


class PickTool(Tool):
    """Eyedropper: the label under the cursor becomes the label painted with (the stroke
    there, else the segmentation's label there)."""

    one_shot = True
    cursor = "point"

    def press(self, ctx: ToolContext, x: float, y: float) -> bool:
        at = ctx.pixel(x, y)
        if at is None:
            return False
        label = ctx.model.label_at(x, y)
        where = "painted"
        if label == 0 and ctx.result is not None:
            label, where = int(ctx.result[at[1], at[0]]), "segmented"
        if label in ctx.model.schema:
            ctx.choose(label)
            ctx.say(f"Painting {ctx.model.schema.name(label)} (picked where it is {where})")
        else:
            ctx.say("Nothing to pick here: no stroke and no segmentation under the cursor")
        return False


#: The app's tools by name (``AppState.tool``); the canvas dispatches mouse events to these.
TOOLS: dict[str, Tool] = {"brush": StrokeTool(), "eraser": StrokeTool(), "fill": FillTool(),
                          "picker": PickTool()}
