"""Importing a scribble or label PNG into the strokes: merged or replacing, one undo step."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ... import io
from ...editing import AnnotationModel, EditRecord
from .editing import Editing
from .folders import SCRIBBLE_FILTER, Folders


class Importing(Editing, Folders):
    """The import dialog and the import, read as the command line reads the file."""

    def import_dialog(self) -> None:
        if self.state.strokes is None:
            self.error.emit("Open an image first.")
            return
        path = self.dialog.get_path("Import scribbles or labels", str(self.folder("import")),
                                    SCRIBBLE_FILTER, save=False)
        if path:
            self.remember_folder("import", path)
            self.import_scribbles(path)

    def import_scribbles(self, path: str | os.PathLike, how: str | None = None) -> bool:
        """Start importing a scribble / label PNG, read as the CLI reads it, in the background;
        the import is one undoable step. False if nothing was started.

        ``how``: "Merge" (its painted pixels are laid over the current strokes, as strokes
        painted now: with *Paint Unlabelled Pixels Only* they go only where nothing is painted)
        or "Replace" (it becomes the strokes); None asks when there are strokes to keep.
        """
        model = self.state.strokes
        if model is None:
            self.error.emit("Open an image first.")
            return False
        if self.loader.running:
            self.error.emit(f"{self.loader.what} is not finished yet; import the "
                                   "strokes when it is.")
            return False
        if how not in (None, "Merge", "Replace"):
            raise ValueError(f"how must be 'Merge', 'Replace' or None, got {how!r}")
        p = Path(path)
        how = how or self._merge_or_replace(p)
        if how == "Cancel":
            return False
        only = self.state.unlabelled_only

        def change(m: AnnotationModel, new: np.ndarray) -> EditRecord | None:
            if how == "Merge":
                return m.merge_scribbles(new, only, text=f"import {p.name} (merged)")
            return m.set_scribbles(new, text=f"import {p.name}")

        def then() -> None:
            ids = self.state.history.label_ids_present()  # kept per edit: no 12 MP count
            merged = " (merged)" if how == "Merge" else ""
            self.info.emit(f"Imported {p.name}{merged}: labels {', '.join(map(str, ids))}")

        self._edit_off_thread(
            f"Importing {p.name}", change,
            lambda: io.read_scribbles(p, model.shape, max_label=max(model.schema.ids()),
                                      colors=model.schema.colors()),
            self.loader, lambda msg: self.error.emit(f"Cannot import scribbles: {msg}"),
            then, lambda: self.info.emit(f"Import of {p.name} cancelled"))
        return True

    def _merge_or_replace(self, p: Path) -> str:
        """Ask whether an import joins the strokes or replaces them (it used to replace them
        without a word); with nothing painted the two are the same and nothing is asked."""
        if not self.state.history.label_ids_present():
            return "Replace"
        overlap = ("pixels you painted keep their label" if self.state.unlabelled_only
                   else "where both are painted, the imported label wins")
        return self.dialog.choose(
            "Import strokes",
            f"Merge the strokes of {p.name} into your strokes ({overlap}), or replace your "
            "strokes by them? Either is one undo step.", ("Merge", "Replace", "Cancel"))
