"""The editing model, Qt-free: strokes, their undo history, the label schema, the tools and a
folder of images as a project.

napari's split, applied to segapp's painting: these models hold everything that is edited and
know nothing of widgets; :mod:`segapp.gui` is a thin view that draws them and turns mouse and
keys into their calls (``tests/test_layering.py`` keeps Qt out of here).

- :mod:`.strokes`: :class:`AnnotationModel`, one image's label map of strokes, edited by brush,
  eraser, fill, clear and import, owning its undo :class:`~.history.History`;
- :mod:`.history`: undo/redo of :class:`~.records.EditRecord` s, bounded in bytes, and the
  label counts kept from them;
- :mod:`.schema`: :class:`LabelSchema`, the names, colours and ids (up to 255) of the labels,
  its JSON file;
- :mod:`.tools`: what brush, eraser, fill and eyedropper do with a press, drag and release;
- :mod:`.brush`: the round brush and the eraser's remnants;
- :mod:`.project`: :class:`FolderProject`, a folder of images annotated with one schema;
- :mod:`.events`: the plain observer lists the models announce changes through.
"""

from .brush import stroke_mask
from .events import Emitter
from .history import History, count_change, label_counts
from .project import FolderProject
from .records import BBox, EditRecord
from .schema import MAX_LABELS, Label, LabelSchema, default_labels, read_schema
from .strokes import AnnotationModel, LockedLabelError
from .tools import TOOLS, Tool, ToolContext

__all__ = ["AnnotationModel", "BBox", "EditRecord", "Emitter", "FolderProject", "History",
           "Label", "LabelSchema", "LockedLabelError", "MAX_LABELS", "TOOLS", "Tool",
           "ToolContext", "count_change", "default_labels", "label_counts", "read_schema",
           "stroke_mask"]
