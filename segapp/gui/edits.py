"""Big stroke edits made ready off the GUI thread, so that applying one is a few copies (no Qt).

A fill, a clear or the undo of either can change most of a 12-megapixel label map. Applying
such an edit on the GUI thread used to recolour the stroke layer over its whole box (30–65 ms
at 12 MP), count the labels it changed for the history (30–55 ms) and compress its values
for the crash journal (15–20 ms): 100–330 ms in one piece, the window frozen meanwhile.
:func:`prepare` does all three in a worker thread; the GUI thread is left with writing the
values into the model and the coloured pixels into the layer (2–12 ms each at 12 MP).

The stroke layer's pixels are coloured through a label lookup table
(:func:`segapp.gui.qimage.label_lut`); a prepared edit keeps the table it used, and the canvas
recolours the box itself if the label colours changed in the meantime.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import ndimage

from ..editing import BBox, EditRecord, count_change, label_counts
from .journal import pack_map

__all__ = ["BIG_EDIT_PIXELS", "Prepared", "count_change", "is_big", "label_counts", "prepare",
           "region_at"]

#: Edits whose box holds at least this many pixels are prepared off the GUI thread (undo and
#: redo too); smaller ones (brush strokes) are applied at once. At 2**20 px the work left
#: on the GUI thread in one piece would be ~10 ms on an idle machine.
BIG_EDIT_PIXELS = 1 << 20


def region_at(labels: np.ndarray, y: int, x: int) -> np.ndarray:
    """The pixels of ``labels`` connected to ``(y, x)`` through 4-neighbours of its value
    (what the fill tool paints; bool, the shape of ``labels``).

    ``scipy.ndimage.label`` of the value's mask, already imported by the app: 87 ms on a 12 MP
    label map where scikit-image's ``flood`` took 144 ms, and its first import (50 ms, plus
    the full garbage collection the new objects may set off, 45-70 ms with the GIL held).
    """
    same = labels == labels[y, x]
    components, _ = ndimage.label(same)
    return components == components[y, x]


def is_big(record: EditRecord | None) -> bool:
    """Whether applying ``record`` is too much work for the GUI thread (see
    :data:`BIG_EDIT_PIXELS`)."""
    return record is not None and record.bbox.height * record.bbox.width >= BIG_EDIT_PIXELS


@dataclass(frozen=True)
class Prepared:
    """An edit with everything the GUI thread needs to apply it by copying.

    Attributes
    ----------
    record : EditRecord
    undo : bool
        The edit is the undo of ``record`` (the box gets ``record.old``), else its redo.
    pixels : ndarray (h, w) uint32
        The stroke layer's pixels in ``record.bbox`` after the edit (RGBA bytes, as
        :class:`segapp.gui.qimage.RGBABuffer` stores them), coloured through ``lut``.
    lut : ndarray (MAX_LABELS + 1, 4) uint8
    change : ndarray (MAX_LABELS + 1,) int64
        :func:`count_change` of ``record``.
    packed : bytes
        The box's values after the edit, packed for the journal (:func:`pack_map`).
    """

    record: EditRecord
    undo: bool
    pixels: np.ndarray
    lut: np.ndarray
    change: np.ndarray
    packed: bytes

    @property
    def bbox(self) -> BBox:
        return self.record.bbox

    @property
    def values(self) -> np.ndarray:
        """The box's label ids after the edit."""
        return self.record.old if self.undo else self.record.new


def prepare(record: EditRecord, lut: np.ndarray, undo: bool = False,
            change: np.ndarray | None = None) -> Prepared:
    """Colour, count and pack ``record`` (its redo, or its undo with ``undo``) for the GUI
    thread to apply (worker thread; ~55 ms for a 10 MP box on an idle machine). ``change`` is
    :func:`count_change` of ``record`` if it is known already."""
    values = record.old if undo else record.new
    # fancy indexing by the uint8 ids: np.take with uint8 indices is ~15x slower
    pixels = np.ascontiguousarray(lut).view(np.uint32)[:, 0][values]
    return Prepared(record, undo, pixels, lut, count_change(record) if change is None else change,
                    pack_map(values))
