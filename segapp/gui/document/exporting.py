"""Exporting the segmentation on screen: planned here, written off the GUI thread.

The files an export will write are journalled before it starts and as each lands, so an
export cut short by a crash is reported (and its partial files removed) at the next start.
"""

from __future__ import annotations

import itertools
import os
from pathlib import Path
from typing import TYPE_CHECKING

from ...errors import SegappError
from .. import files
from .folders import Folders

if TYPE_CHECKING:
    from ..exporter import ExportReport


class Exporting(Folders):
    """Exports asked for by a dialog or a script, one at a time."""

    _export_ids = itertools.count(1)
    _export_id = 0

    def export_dialog(self, kinds: tuple[str, ...] | list[str]) -> None:
        if self.state.shown is None or self.state.image is None:
            self.error.emit("Nothing to export yet: paint strokes with at least two "
                                   "labels and wait for the segmentation.")
            return
        stem = Path(self.state.image_path).stem if self.state.image_path else "segmentation"
        default = self.folder("export") / f"{stem}.png"
        base = self.dialog.get_path("Export (base name)", str(default), "PNG images (*.png)",
                                    save=True)
        if base:
            self.remember_folder("export", base)
            self.export_to(base, kinds)

    def export_to(self, base: str | os.PathLike, kinds: tuple[str, ...] | list[str]) -> bool:
        """Start writing the export files for ``base`` in the background (asks before
        overwriting); ``exporter.finished`` reports. False if nothing was started."""
        shown = self.state.shown
        if shown is None or self.state.strokes is None:
            return False
        if shown.preview:
            # a coarse answer (a preview, or a working answer whose edges are being solved
            # again at full resolution): exports carry the final answer only
            self.error.emit("Not exported: the answer is still being computed (the hatched "
                            "overlay is a coarse preview). Export when it is done.")
            return False
        seg = shown.segmentation
        confidence = _confidence_of(seg)
        if confidence is None and len(kinds) > 1:  # Export All of a method without one
            kinds = [k for k in kinds if k != "soft"]
        try:
            plan = files.plan_export(
                base, kinds, image=self.state.image, labels=shown.labels,
                schema=self.state.strokes.schema.copy(),
                eigenvectors=lambda: seg.eigenvectors, n_vectors=shown.n_vectors,
                vmax=shown.vmax, alpha=self.state.opacity,
                boundaries=self.state.boundaries, label_ids=seg.label_ids,
                confidence=confidence,
                image_name=Path(self.state.image_path).name if self.state.image_path else None)
        except SegappError as exc:
            self.error.emit(f"Export failed: {exc}")
            return False
        return self._start_export(plan)

    def _start_export(self, plan: list[files.ExportItem]) -> bool:
        """Write a planned export in the background (asks before overwriting), journalled so
        that an export cut short by a crash is reported at the next start."""
        if self.exporter.running:
            self.error.emit("An export is already running.")
            return False
        existing = [it.path for it in plan if it.path.exists()]
        if existing:
            names = "\n".join(p.name for p in existing[:8])
            more = f"\n… and {len(existing) - 8} more" if len(existing) > 8 else ""
            if not self.dialog.ask("Overwrite files?",
                                   f"These files exist already:\n{names}{more}\n\nOverwrite them?"):
                return False
        self._export_id = next(self._export_ids)
        self._journal("export_begin", self._export_id, [str(it.path) for it in plan])
        ident, journal = self._export_id, (self.instance.journal if self.instance else None)

        def written(path: Path) -> None:  # export thread: one write() call, as the file lands
            if journal is not None:
                try:
                    journal.export_file(ident, str(path))
                except OSError:
                    pass
        self.exporter.start(plan, written)
        return True

    def _on_export_finished(self, report: ExportReport) -> None:
        self._journal("export_end", self._export_id)
        if report.missing:
            self.error.emit(report.message())
        else:
            self.info.emit(report.message())



def _confidence_of(seg: object):
    """A function reading the result's confidence in the export's worker (it is computed when
    first read), or None when the method gives none."""
    if "_confidence" in vars(seg) and vars(seg)["_confidence"] is None:
        return None
    return lambda: seg.confidence
