"""A folder of images as the document: open it, go from image to image, keep each image's
strokes and answer in the folder as the work goes, mark images done, export the folder as a
training set.

The folder itself (:class:`~segapp.editing.FolderProject`) is Qt-free and knows the files; this
part decides when they are written, always in the background (the ``saver`` runs one job after
the other): a moment after each edit (:data:`SAVE_DELAY_MS`), when the answer for the strokes
on screen arrives, and before another image is opened or the window closes. There is no
Save / Discard question for an image of the folder: its work is written, not dropped. The
crash journal keeps every edit meanwhile, as for a single image, and names the folder, so a
restore opens the folder again.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import numpy as np

from ... import exports
from ...editing import FolderProject, read_schema
from ...errors import SegappError
from .. import files
from .folders import SCHEMA_FILTER
from ...appearance.carry import Suggestion
from ...live import make_result
from .opening import Loaded, Opening

#: Strokes are written this long after the last edit (the journal holds them meanwhile).
SAVE_DELAY_MS = 1500
#: The names of the background jobs that write the folder as the work goes (the window does
#: not announce them).
AUTOSAVE = "Keeping"
#: The background job that computes a suggestion (announced in the status bar).
SUGGESTING = "Suggesting an answer from the finished images"
#: What the status bar says when a suggestion is shown.
SUGGESTED = ("Suggested from {n} finished image{s} (hatched) — paint to correct it, "
             "Ctrl+Shift+Return to accept it")


def suggestion_segmentation(s: Any) -> Any:
    """A :class:`segapp.Segmentation` that shows a suggestion: labels and confidence, no
    eigenvectors, marked as a preview (drawn hatched; Mark Done refuses it)."""
    from ...result import Segmentation

    h, w = s.labels.shape
    return Segmentation(s.labels, tuple(s.label_ids), np.zeros((h, w, 0), np.float32),
                        np.zeros(0), method="suggestion", preview=True,
                        confidence=s.confidence.astype(np.float32))


class FolderWork(Opening):
    """Opening a folder, moving through its images, saving their work as it goes."""

    project: FolderProject | None = None
    _dismissed: set[str] = set()  # images whose suggestion the person dismissed (per folder)
    _suggesting = False    # a suggestion is being computed
    _suggest_again = False  # the strokes or the image changed meanwhile
    _suggest_stop: threading.Event | None = None  # set: the running one is out of date
    _save_generation = 0
    _answer_saved: Any = None  # the stroke key whose answer is in the folder

    # -- opening ---------------------------------------------------------------------------
    def open_path(self, path: str | os.PathLike) -> bool:
        """An image, a session or a folder (a folder's own image opens in the folder)."""
        p = Path(path)
        if p.is_dir():
            return self.open_folder(p)
        if self.project is not None and self.project.contains(p):
            return self.open_in_folder(p)
        return super().open_path(p)

    def open_folder_dialog(self) -> None:
        chosen = self.dialog.get_folder("Open a folder of images", str(self.folder("folder")))
        if chosen:
            self.remember_folder("folder", Path(chosen) / "x")
            self.open_folder(chosen)

    def open_folder(self, folder: str | os.PathLike, image: Path | None = None) -> bool:
        """Open ``folder`` as a project and the image to work on (the one open last there, else
        the first not done). False if nothing was started (the folder cannot be used, or the
        user kept the work on screen)."""
        folder = Path(folder).absolute()
        if self.project is not None and self.project.folder == folder:
            return self.open_in_folder(image or self.project.first_to_do())
        if not self.confirm_discard(f"opening {folder.name}"):
            return False
        try:
            project = FolderProject.open(folder)
            project.lock()
        except SegappError as exc:
            self.error.emit(f"Cannot open the folder: {exc}")
            return False
        self._close_project()
        self.project = project
        self._dismissed = set()
        self._add_recent(folder)
        if project.settings:
            self.settingsLoaded.emit(project.settings)
        self.projectChanged.emit()
        return self.open_in_folder(image or project.first_to_do(), ask=False)

    def open_in_folder(self, image: str | os.PathLike, *, ask: bool = True) -> bool:
        """Open an image of the folder with its saved strokes (the work on screen is saved
        first)."""
        project, image = self.project, Path(image)
        if project is None:
            return False
        if ask and not self.confirm_discard(f"opening {image.name}"):
            return False
        mark = self._work_mark()

        def done(loaded: Loaded) -> None:
            if self.project is not project or not self._may_replace(mark, image.name):
                return
            self.session_path = None
            self._install(loaded)
            project.current = image.name
            self._save_state()
            n, total = project.index(image) + 1, len(project.images)
            self.info.emit(f"{image.name}: image {n} of {total} of {project.folder.name} "
                           f"({project.status(image)})")
            self.projectChanged.emit()
            self._suggest()

        self._load_image(image, done, labels=project.schema,
                         strokes_of=lambda shape: project.read_strokes(image, shape))
        return True

    def go(self, step: int) -> bool:
        """Open the next (``step`` = 1) or previous (-1) image of the folder."""
        if not self._in_folder():
            self.info.emit("Page Up / Page Down go through the images of a folder: open one "
                           "with File ▸ Open Folder")
            return False
        nxt = self.project.neighbour(Path(self.state.image_path), step)
        if nxt is None:
            self.info.emit("This is the " + ("last" if step > 0 else "first") + " image of "
                           "the folder")
            return False
        return self.open_in_folder(nxt)

    def _in_folder(self) -> bool:
        return self.project is not None and self.project.contains(self.state.image_path)

    def _leave_project(self) -> None:
        self._close_project()

    def _adopt_project(self, folder: Path | None) -> Any:
        """A restore of work done in a folder: the folder is opened again (if it is still
        there and free), so that the restored strokes are saved into it."""
        if folder is None or not folder.is_dir():
            return None
        if self.project is not None and self.project.folder == folder:
            return self.project.schema
        try:
            project = FolderProject.open(folder)
            project.lock()
        except SegappError as exc:
            self.error.emit(f"The folder {folder} cannot be opened again ({exc}); the strokes "
                            "are restored on the image alone")
            return None
        self._close_project()
        self.project = project
        self.projectChanged.emit()
        return project.schema

    def _install(self, loaded: Loaded, settings: dict[str, Any] | None = None,
                 saved: bool = True, restored: Any = None) -> None:
        super()._install(loaded, settings, saved, restored)
        self._answer_saved = None
        if self._in_folder() and not saved:  # restored work: into the folder soon
            self._folder_edited()

    def _close_project(self) -> None:
        if self.project is not None:
            self.project.unlock()
            self.project = None
            self.projectChanged.emit()

    # -- done ------------------------------------------------------------------------------
    def mark_done(self, go_on: bool = True) -> bool:
        """The image on screen is finished: its answer is saved and it is marked done; with
        ``go_on`` the next image not done opens. False if it cannot be marked yet."""
        if not self._in_folder():
            self.error.emit("Mark done is for the images of a folder: open one with File ▸ "
                            "Open Folder.")
            return False
        shown = self.state.shown
        if shown is None or shown.preview or shown.tag[1] != self.state.stroke_key():
            self.error.emit("Not segmented yet: paint at least two labels and wait for the "
                            "segmentation, then mark the image done.")
            return False
        if not self.save_project_work(wait=True):
            return False
        project, image = self.project, Path(self.state.image_path)
        project.done.add(image.name)
        self._save_state()
        self._learn(image, shown.labels, self.state.strokes.scribbles.copy())
        self.projectChanged.emit()
        return self._go_on(image) if go_on else True

    def _go_on(self, image: Path) -> bool:
        """``image`` is done: open the next image not done (or say that all are)."""
        project = self.project
        order = project.images[project.index(image) + 1:] + project.images
        nxt = next((p for p in order if p.name not in project.done), None)
        if nxt is None:
            self.info.emit(f"All {len(project.images)} images are done: File ▸ Export ▸ "
                           "Dataset of the Folder writes the training set")
            return True
        self.info.emit(f"{image.name} done ({project.counts()['done']} of "
                       f"{len(project.images)})")
        return self.open_in_folder(nxt, ask=False)

    def set_done(self, image: Path, done: bool) -> None:
        """Mark an image of the folder done or not (from the folder list); the image on screen
        is marked as by :meth:`mark_done`, another one only if it has an answer."""
        if self.project is None:
            return
        name = Path(image).name
        if done and name == Path(self.state.image_path or "").name:
            self.mark_done(go_on=False)
        elif done and not self.project.has_answer(image):
            self.error.emit(f"{name} has no answer yet: open it and segment it")
        else:
            (self.project.done.add if done else self.project.done.discard)(name)
            self._save_state()
            if not done:
                project = self.project
                self.saver.start(f"{AUTOSAVE} what {name} taught",
                                 lambda step: project.unlearn(Path(image)), lambda _r: None,
                                 lambda _msg: None)
        self.projectChanged.emit()  # the list shows the state as it is, marked or not

    # -- carrying what was learnt to the next image (segapp.appearance.carry) -------------
    def _learn(self, image: Path, answer: np.ndarray, scribbles: np.ndarray | None) -> None:
        """A finished image teaches the folder its labels' colours (in the background, in
        turn with the folder's other writes, so a suggestion queued after it sees it)."""
        project, pixels = self.project, self.state.image
        if project is None or pixels is None:
            return
        answer = np.asarray(answer).copy()
        self.saver.start(f"{AUTOSAVE} what {image.name} taught",
                         lambda step: project.learn(image, pixels, answer, scribbles),
                         lambda _count: None,
                         lambda msg: self.error.emit(f"Cannot keep what {image.name} taught "
                                                     f"in {project.data}: {msg}"))

    def _suggest(self) -> None:
        """Show the answer the folder's finished images suggest for the image on screen,
        while fewer than two labels are painted on it (computed in the background, with the
        strokes painted so far fixed); never as strokes.

        From two labels on, the method answers as on any image: FAST-GE's ``carry`` option
        (the folder's models seeding its colour models) is not passed, because on the
        frames of ``benchmarks/carry.py`` it cost strokes to 90% (10.78 against 9.78 without;
        the suggestion alone saved one stroke to 85%, CHANGELOG.md).

        Newest wins: a request while one is computed stops it (its strokes or image are out
        of date; at 12 MP it takes seconds) and, if a suggestion is still wanted, one more
        follows for what is on screen then."""
        if self._suggesting and self._suggest_stop is not None:
            self._suggest_stop.set()
        if not self._in_folder():
            return
        project, image = self.project, Path(self.state.image_path)
        model, key = self.state.strokes, self.state.stroke_key()
        if image.name in project.done and key == self._saved_key \
                and not model.scribbles.any() and project.has_answer(image):
            self._show_kept(project, image, model)
            return
        if (image.name in project.done or image.name in self._dismissed
                or len(self.state.history.label_ids_present()) >= 2):
            return
        if self._suggesting:  # one at a time: a burst of strokes makes one more, not many
            self._suggest_again = True
            return
        self._suggesting, self._suggest_again = True, False
        pixels, scribbles = self.state.image, model.scribbles.copy()
        stop = self._suggest_stop = threading.Event()

        def work(step: Any) -> Any:
            from ...appearance import carry

            # read here, in turn after what a finished image taught (the same runner)
            learnt = project.read_appearance()
            return carry.suggest(pixels, learnt, scribbles,
                                 cancel=stop.is_set) if learnt.images else None

        def finished() -> None:
            self._suggesting = False
            if self._suggest_again:
                self._suggest()  # for the strokes (or the image) on screen now

        def done(s: Any) -> None:
            if not (s is None or self.project is not project or self.state.strokes is not model
                    or self.state.stroke_key() != key or image.name in self._dismissed):
                self.state.shown = make_result(suggestion_segmentation(s), 0.0, True).shown(
                    ("suggestion", image.name, key))
                self.info.emit(SUGGESTED.format(n=s.images, s="s" if s.images > 1 else ""))
            finished()

        def failed(msg: str) -> None:
            self.error.emit(f"No suggestion for {image.name}: {msg}")
            finished()

        self.saver.start(SUGGESTING, work, done, failed,
                         lambda: finished() if stop.is_set() else
                         setattr(self, "_suggesting", False))

    def _show_kept(self, project: FolderProject, image: Path, model: Any) -> None:
        """A done image whose answer is an accepted suggestion (no strokes): that answer,
        read in the background and shown as it was (painting starts over)."""
        def done(labels: Any) -> None:
            if self.state.strokes is model and not model.scribbles.any() and labels is not None:
                ids = tuple(int(i) for i in np.unique(labels) if i > 0)
                s = Suggestion(labels.astype(np.int32), np.ones(labels.shape, np.float32),
                               np.zeros((0, 0, 0)), ids, 0)
                self.state.shown = make_result(suggestion_segmentation(s), 0.0, True).shown(
                    ("suggestion", image.name, self.state.stroke_key()))
                self.info.emit(f"{image.name}: the suggested answer you accepted (paint to "
                               "start again from strokes)")

        self.saver.start(f"{AUTOSAVE} {image.name}", lambda step: project.read_answer(image),
                         done, lambda msg: self.error.emit(f"Cannot read the answer of "
                                                           f"{image.name}: {msg}"))

    def showing_suggestion(self) -> bool:
        shown = self.state.shown
        return shown is not None and isinstance(shown.tag, tuple) and \
            shown.tag[:1] == ("suggestion",)

    def accept_suggestion(self, go_on: bool = True) -> bool:
        """Keep the suggestion on screen as the image's answer (no strokes), mark the image
        done, learn from it, and with ``go_on`` open the next image not done."""
        if not self._in_folder() or not self.showing_suggestion():
            self.error.emit("No suggestion to accept: the images of a folder get one once "
                            "an image of it is done.")
            return False
        project, image = self.project, Path(self.state.image_path)
        labels = np.asarray(self.state.shown.labels).copy()
        scribbles = self.state.strokes.scribbles.astype(np.uint8)
        key = self.state.stroke_key()
        outcome: list[bool] = []

        def failed(msg: str) -> None:
            outcome.append(False)
            self.error.emit(f"Cannot keep the answer of {image.name} in {project.data}: {msg}")

        self.saver.start(f"{AUTOSAVE} {image.name}",
                         lambda step: project.accept(image, labels, scribbles),
                         lambda _r: outcome.append(True), failed)
        self.saver.wait_loaded()
        if not (outcome and outcome[0]):
            return False
        self._saved_key = key
        self.dirtyChanged.emit()
        self._save_state()
        self._learn(image, labels, scribbles)
        self.projectChanged.emit()
        return self._go_on(image) if go_on else True

    def dismiss_suggestion(self) -> None:
        """Hide the suggestion of the image on screen (until the folder is opened again)."""
        if not self._in_folder():
            return
        self._dismissed.add(Path(self.state.image_path).name)
        if self.showing_suggestion():
            self.state.shown = None
        self.info.emit("Suggestion dismissed: paint at least two labels to segment")

    # -- saving as the work goes -----------------------------------------------------------
    def _folder_edited(self) -> None:
        """The strokes changed: write them a moment later (a burst of edits, one write);
        while fewer than two labels are painted, the suggestion follows the strokes."""
        if not self._in_folder():
            return
        self._suggest()
        self._save_generation += 1
        generation = self._save_generation
        self.host.later(SAVE_DELAY_MS, lambda: generation == self._save_generation
                        and self._in_folder() and self.save_project_work())

    def _folder_result(self, shown: Any) -> None:
        """An answer arrived: if it is the strokes' on screen and not in the folder yet, save."""
        if shown is None or not self._in_folder() or shown.preview:
            return
        if shown.tag[1] == self.state.stroke_key() and self._answer_saved != shown.tag[1]:
            self.save_project_work()

    def save_project_work(self, wait: bool = False) -> bool:
        """Write the strokes on screen (and their answer, if it is on screen) into the folder,
        in the background; with ``wait`` the event loop runs until they are written and the
        return value says whether they were."""
        if not self._in_folder():
            return False
        project, model = self.project, self.state.strokes
        image, key = Path(self.state.image_path), self.state.stroke_key()
        shown = self.state.shown
        answer = None
        if shown is not None and not shown.preview and shown.tag[1] == key:
            answer = shown.labels
        if key == self._saved_key and (answer is None or self._answer_saved == key):
            return True  # nothing new
        scribbles = model.scribbles.astype(np.uint8)  # the strokes as they are now
        outcome: list[bool] = []

        def done(status: str) -> None:
            outcome.append(True)
            if self.state.strokes is not model:
                return
            self._saved_key = key
            self._answer_saved = key if answer is not None else self._answer_saved
            self.dirtyChanged.emit()
            if not self.dirty:
                self._journal("saved")
            self.projectChanged.emit()

        def failed(message: str) -> None:
            outcome.append(False)
            self.error.emit(f"Cannot save the work on {image.name} in {project.data}: "
                            f"{message}")

        self.saver.start(f"{AUTOSAVE} {image.name}",
                         lambda step: project.save_work(image, scribbles, answer), done, failed)
        if wait:
            self.saver.wait_loaded()
            return bool(outcome and outcome[0])
        return True

    def _save_state(self) -> None:
        """project.json (done images, the image open, settings, label states), in turn."""
        if self.project is None:
            return
        project = self.project
        project.settings = self._settings()
        text = project.state_json()
        self.saver.start(f"{AUTOSAVE} the folder's state", lambda step: project.save_state(text),
                         lambda _r: None,
                         lambda msg: self.error.emit(f"Cannot save the folder's state: {msg}"))

    def _save_schema(self) -> None:
        if self.project is None:
            return
        project, text = self.project, self.project.schema.to_json()
        self.saver.start(f"{AUTOSAVE} the labels", lambda step: project.save_schema(text),
                         lambda _r: self._save_state(),
                         lambda msg: self.error.emit(f"Cannot save the labels: {msg}"))

    # -- hooks into the single-image parts -------------------------------------------------
    def confirm_discard(self, doing: str) -> bool:
        """An image of the folder is saved, not asked about (asked only if that fails)."""
        if not self._in_folder():
            return super().confirm_discard(doing)
        self.editor.wait_loaded()
        if not self.dirty or self.save_project_work(wait=True):
            return True
        return self.dialog.choose(
            "Strokes not saved",
            f"The strokes on {Path(self.state.image_path).name} could not be saved in the "
            f"folder. Discard them before {doing}?", ("Discard", "Cancel")) == "Discard"

    def save_session(self, path: str | os.PathLike | None = None, ask_path: bool = False, *,
                     wait: bool = False) -> bool:
        """In a folder, Save writes the image's work into the folder (Save As: a session)."""
        if self._in_folder() and path is None and not ask_path:
            return self.save_project_work(wait=wait)
        return super().save_session(path, ask_path, wait=wait)

    def _on_labels_changed(self, label_id: int) -> None:
        super()._on_labels_changed(label_id)
        if self.project is not None and self.state.strokes is not None \
                and self.state.strokes.schema is self.project.schema:
            self._labels_dirty = False  # the folder's labels file holds them
            self.dirtyChanged.emit()
            self._save_schema()

    def settings_changed(self) -> None:
        super().settings_changed()
        if self.project is not None:
            self._save_state()

    def _journal_project(self) -> str | None:
        return str(self.project.folder) if self._in_folder() else None

    # -- the labels as a file --------------------------------------------------------------
    def load_schema_dialog(self) -> None:
        path = self.dialog.get_path("Load labels", str(self.folder("schema")), SCHEMA_FILTER,
                                    save=False)
        if path:
            self.remember_folder("schema", path)
            self.load_schema(path)

    def load_schema(self, path: str | os.PathLike) -> bool:
        """Take the names, colours and ids of a labels file (a schema, or an export's JSON)."""
        model = self.state.strokes
        if model is None:
            self.error.emit("Open an image or a folder first.")
            return False
        try:
            schema = read_schema(path)
        except SegappError as exc:
            self.error.emit(f"Cannot load the labels: {exc}")
            return False
        used = [i for i in model.label_ids_present() if i not in schema]
        if used:
            self.error.emit(f"{Path(path).name} has no label {', '.join(map(str, used))}, which "
                            "the strokes use: not loaded")
            return False
        model.set_labels(list(schema))
        self.info.emit(f"Labels from {Path(path).name}: {len(schema)} labels")
        return True

    def save_schema_dialog(self) -> None:
        model = self.state.strokes
        if model is None:
            self.error.emit("Open an image or a folder first.")
            return
        default = self.folder("schema") / "labels.json"
        path = self.dialog.get_path("Save labels", str(default), SCHEMA_FILTER, save=True)
        if path:
            self.remember_folder("schema", path)
            schema = model.schema.copy()
            self.saver.start(f"Saving {Path(path).name}", lambda step: schema.write(path),
                             lambda _r: self.info.emit(f"Labels saved as {Path(path).name}"),
                             lambda msg: self.error.emit(f"Cannot save the labels: {msg}"))

    # -- the folder as a training set ------------------------------------------------------
    def export_dataset_dialog(self) -> None:
        if self.project is None:
            self.error.emit("Export ▸ Dataset is for a folder of images: open one with File ▸ "
                            "Open Folder.")
            return
        if not any(p.name in self.project.done for p in self.project.images):
            self.error.emit("No image of the folder is done yet: segment an image and mark it "
                            "done (Ctrl+Return) first.")
            return
        default = self.project.data / "dataset"
        try:
            default.mkdir(parents=True, exist_ok=True)  # a folder the dialog can offer
        except OSError:
            default = self.project.folder
        chosen = self.dialog.get_folder("Export the folder's dataset into", str(default))
        if chosen:
            self.export_dataset(chosen)

    def export_dataset(self, out: str | os.PathLike) -> bool:
        """Write the folder's finished images as a training set into ``out``: ``masks/`` (an
        indexed PNG per image), ``labels.json`` (the labels) and ``annotations.json`` (COCO
        with RLE masks), in the background. False if nothing was started."""
        project = self.project
        if project is None:
            return False
        if self._in_folder() and self.dirty:
            self.save_project_work(wait=True)
        done = [p for p in project.images if p.name in project.done]
        ready = [p for p in done if project.has_answer(p)]
        if not ready:
            self.error.emit("No image of the folder is done yet: segment an image and mark it "
                            "done (Ctrl+Return) first.")
            return False
        out = Path(out)
        try:
            (out / "masks").mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            self.error.emit(f"Cannot export into {out}: {exc.strerror or exc}")
            return False
        schema = project.schema.copy()
        mask_of = {p: f"masks/{project.files(p).mask.name}" for p in ready}
        plan = [files.ExportItem(out / mask_of[p],
                                 lambda p=p: exports.indexed_png(project.read_answer(p), schema),
                                 f"mask of {p.name}") for p in ready]
        plan.append(files.ExportItem(
            out / "labels.json",
            lambda: exports.sidecar_json(schema, extra={"masks": "masks/",
                                                        "images": str(project.folder)}),
            "labels JSON"))
        items = [exports.CocoImage(p.name, lambda p=p: project.read_answer(p), mask_of[p])
                 for p in ready]
        plan.append(files.ExportItem(
            out / "annotations.json",
            lambda: exports.coco_for_masks(items, schema,
                                           f"segapp export of {project.folder.name}"),
            "COCO annotations"))
        left = len(project.images) - len(ready)
        if left:
            self.info.emit(f"Exporting the {len(ready)} images done; {left} not done are left "
                           "out")
        return self._start_export(plan)
