"""A folder of images as a project: one label schema, each image's strokes and answer saved
beside it as the work goes, and the state of every image (untouched, in progress, done).

Layout (everything segapp writes sits in one sub-folder, which the image list skips)::

    FOLDER/photo1.jpg, photo2.jpg, ...      the images (not modified)
    FOLDER/segapp/labels.json               the label schema (segapp-labels JSON: the file
                                            ``segapp segment --labels`` and ``segapp batch
                                            --labels`` read)
    FOLDER/segapp/project.json              which images are done, the image open last, the
                                            method and options, hidden / locked labels
    FOLDER/segapp/strokes/photo1.png        the strokes (8-bit label ids, 0 = unpainted):
                                            ``segapp batch FOLDER -s FOLDER/segapp/strokes``
                                            pairs them (pattern ``{stem}.png``)
    FOLDER/segapp/masks/photo1.png          the answer: an indexed PNG in the schema's colours
    FOLDER/segapp/appearance.json           what the finished images taught: each label's
                                            colour models (:mod:`segapp.appearance.carry`),
                                            which suggest the next image's answer and seed
                                            FAST-GE's (``segapp segment --carry``)

An image is *untouched* without a strokes file, *in progress* with one, and *done* once the
person said so (and it has an answer: painted, or a suggestion accepted, :meth:`accept`). Every file is written atomically. One app at a time
works on a folder (:meth:`FolderProject.lock`).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import InvalidInputError
from .schema import LabelSchema, read_schema

if TYPE_CHECKING:
    from ..appearance.carry import LearntAppearance

__all__ = ["FolderProject", "ProjectFiles", "UNTOUCHED", "IN_PROGRESS", "DONE", "DATA_FOLDER",
           "list_images", "is_project_folder"]

UNTOUCHED, IN_PROGRESS, DONE = "untouched", "in progress", "done"
DATA_FOLDER = "segapp"
SCHEMA_FILE, STATE_FILE, LOCK_FILE = "labels.json", "project.json", "lock"
APPEARANCE_FILE = "appearance.json"  # segapp.appearance.carry.APPEARANCE_FILE
STATE_FORMAT, STATE_VERSION = "segapp-project", 1


def _natural(path: Path) -> list[Any]:
    """Sort key: ``img2`` before ``img10``, case-insensitive."""
    return [int(t) if t.isdigit() else t.lower() for t in re.split(r"(\d+)", path.name)]


def list_images(folder: Path) -> list[Path]:
    """The images directly in ``folder`` (the suffixes ``segapp batch`` takes), in natural
    order; ``{stem}_scribbles.png`` files of another image are its strokes, not images."""
    from ..batch.pairing import find_pairs

    pairing = find_pairs(folder, patterns=("{stem}_scribbles.png",))
    found = [p.image for p in pairing.pairs + pairing.clashes] + list(pairing.unpaired)
    return sorted(found, key=_natural)


def is_project_folder(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a folder (the app opens it as a project)."""
    return Path(path).is_dir()


@dataclass(frozen=True)
class ProjectFiles:
    """Where one image's strokes and answer are kept."""

    image: Path
    strokes: Path
    mask: Path


@dataclass
class FolderProject:
    """A folder of images annotated with one schema (see the module docstring).

    Use :meth:`open`. The methods that write are called from a worker thread by the app
    (:mod:`segapp.gui.document.folder`); they write atomically.
    """

    folder: Path
    images: list[Path]
    schema: LabelSchema
    done: set[str] = field(default_factory=set)
    current: str | None = None
    settings: dict[str, Any] = field(default_factory=dict)
    _lock_fd: int | None = field(default=None, repr=False)

    # -- opening ---------------------------------------------------------------------------
    @classmethod
    def open(cls, folder: str | os.PathLike) -> "FolderProject":
        """Read a folder's images, schema and state (a new folder gets the default schema).

        Raises
        ------
        InvalidInputError
            Not a folder, no image in it, or a schema / state file that cannot be read.
        """
        root = Path(folder).absolute()
        if not root.is_dir():
            raise InvalidInputError(f"{root}: not a folder")
        images = list_images(root)
        if not images:
            raise InvalidInputError(f"{root}: no images in this folder (png, jpg, tif, bmp, "
                                    "webp, gif, ppm, pgm, jp2)")
        data = root / DATA_FOLDER
        schema = read_schema(data / SCHEMA_FILE) if (data / SCHEMA_FILE).is_file() \
            else LabelSchema()
        project = cls(root, images, schema)
        project._read_state()
        return project

    def _read_state(self) -> None:
        path = self.data / STATE_FILE
        if not path.is_file():
            return
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(doc, dict) or doc.get("format") != STATE_FORMAT:
                raise ValueError("not a segapp project file")
            names = {p.name for p in self.images}
            self.done = {str(n) for n in doc.get("done", []) if str(n) in names}
            current = doc.get("current")
            self.current = current if current in names else None
            self.settings = dict(doc.get("settings", {}))
            for ident, states in dict(doc.get("label_states", {})).items():
                lab = self.schema.get(int(ident))
                if lab is not None:
                    lab.hidden = bool(states.get("hidden", False))
                    lab.locked = bool(states.get("locked", False))
        except (OSError, ValueError, TypeError, AttributeError) as exc:
            raise InvalidInputError(f"{path}: cannot read the project state: {exc}") from None

    # -- where things are ------------------------------------------------------------------
    @property
    def data(self) -> Path:
        return self.folder / DATA_FOLDER

    @property
    def schema_path(self) -> Path:
        return self.data / SCHEMA_FILE

    def files(self, image: Path) -> ProjectFiles:
        """The strokes and answer files of ``image`` (named by its stem, or by its full name
        when another image of the folder has the same stem)."""
        image = Path(image)
        same_stem = sum(p.stem == image.stem for p in self.images)
        key = image.stem if same_stem <= 1 else image.name
        return ProjectFiles(image, self.data / "strokes" / f"{key}.png",
                            self.data / "masks" / f"{key}.png")

    def index(self, image: Path) -> int:
        """Position of ``image`` in the list (ValueError if it is not one of them)."""
        name = Path(image).name
        for i, p in enumerate(self.images):
            if p.name == name:
                return i
        raise ValueError(f"{name} is not an image of {self.folder}")

    def contains(self, image: str | os.PathLike | None) -> bool:
        return image is not None and Path(image).absolute().parent == self.folder and any(
            p.name == Path(image).name for p in self.images)

    def neighbour(self, image: Path, step: int) -> Path | None:
        """The image ``step`` places after (before, if negative) ``image``; None past the ends."""
        i = self.index(image) + step
        return self.images[i] if 0 <= i < len(self.images) else None

    def first_to_do(self) -> Path:
        """The image to open: the one open last, else the first not done, else the first."""
        if self.current is not None:
            return self.folder / self.current
        return next((p for p in self.images if p.name not in self.done), self.images[0])

    def status(self, image: Path) -> str:
        if Path(image).name in self.done:
            return DONE
        return IN_PROGRESS if self.files(image).strokes.is_file() else UNTOUCHED

    def counts(self) -> dict[str, int]:
        out = {UNTOUCHED: 0, IN_PROGRESS: 0, DONE: 0}
        for p in self.images:
            out[self.status(p)] += 1
        return out

    # -- reading and writing an image's work -------------------------------------------------
    def read_strokes(self, image: Path, shape: tuple[int, int]) -> np.ndarray | None:
        """The saved strokes of ``image`` (None if there are none); InvalidInputError if the
        file is not a label map of the image's size."""
        from PIL import Image

        path = self.files(image).strokes
        if not path.is_file():
            return None
        try:
            with Image.open(path) as img:
                img.load()
                values = np.asarray(img)
        except OSError as exc:
            raise InvalidInputError(f"{path}: cannot read the saved strokes: {exc}") from None
        if values.ndim != 2 or values.shape != tuple(shape[:2]):
            raise InvalidInputError(f"{path}: the saved strokes are {values.shape} but "
                                    f"{Path(image).name} is {tuple(shape[:2])}")
        return values.astype(np.int32)

    def save_work(self, image: Path, scribbles: np.ndarray,
                  answer: np.ndarray | None) -> str:
        """Keep the strokes of ``image`` (and the answer, if given) in the project; strokes
        with no painted pixel remove both files (the image is untouched again). Returns the
        image's status afterwards."""
        from ..exports.indexed import indexed_png
        from ..io import write_pngs_atomic

        files = self.files(image)
        if not np.any(scribbles):
            for p in (files.strokes, files.mask):
                with contextlib.suppress(FileNotFoundError):
                    p.unlink()
            return self.status(image)
        files.strokes.parent.mkdir(parents=True, exist_ok=True)
        items: list[tuple[Path, Any]] = [(files.strokes, np.asarray(scribbles, np.uint8))]
        if answer is not None:
            files.mask.parent.mkdir(parents=True, exist_ok=True)
            items.append((files.mask, indexed_png(answer, self.schema)))
        write_pngs_atomic(items, overwrite=True)
        return self.status(image)

    def read_answer(self, image: Path) -> np.ndarray | None:
        """The saved answer of ``image`` (label ids), or None."""
        from PIL import Image

        path = self.files(image).mask
        if not path.is_file():
            return None
        with Image.open(path) as img:
            return np.asarray(img).copy()

    def has_answer(self, image: Path) -> bool:
        return self.files(image).mask.is_file()

    # -- what the finished images taught (segapp.appearance.carry) --------------------------
    @property
    def appearance_path(self) -> Path:
        return self.data / APPEARANCE_FILE

    def read_appearance(self) -> "LearntAppearance":
        """The folder's learnt appearance (empty before the first image is learnt).

        Raises
        ------
        InvalidInputError
            The file is there but cannot be read.
        """
        from ..appearance.carry import LearntAppearance

        path = self.appearance_path
        return LearntAppearance.read(path) if path.is_file() else LearntAppearance()

    def learn(self, image: Path, pixels: np.ndarray, answer: np.ndarray,
              scribbles: np.ndarray | None = None) -> int:
        """Learn each label's colours from a finished image (its pixels in [0, 1], answer
        and strokes) and write the folder's appearance file; returns the number of images
        learnt. A file that cannot be read is started again (it only holds what the
        images' answers hold)."""
        from ..appearance.carry import LearntAppearance

        try:
            learnt = self.read_appearance()
        except InvalidInputError:
            learnt = LearntAppearance()
        learnt.learn(Path(image).name, pixels, answer, scribbles)
        self.data.mkdir(parents=True, exist_ok=True)
        learnt.save(self.appearance_path)
        return len(learnt.images)

    def unlearn(self, image: Path) -> None:
        """Forget what ``image`` taught (it is no longer done)."""
        path = self.appearance_path
        if not path.is_file():
            return
        learnt = self.read_appearance()
        if Path(image).name in learnt.images:
            learnt.forget(Path(image).name)
            learnt.save(path)

    def accept(self, image: Path, answer: np.ndarray,
               scribbles: np.ndarray | None = None) -> str:
        """Keep ``answer`` (label ids, e.g. a suggestion of :mod:`segapp.appearance.carry`)
        as the answer of ``image`` with the strokes painted on it (none: no strokes file),
        and mark the image done; returns its status."""
        from ..exports.indexed import indexed_png
        from ..io import write_pngs_atomic

        if scribbles is not None and np.any(scribbles):
            self.save_work(image, scribbles, answer)
        else:
            files = self.files(image)
            files.mask.parent.mkdir(parents=True, exist_ok=True)
            write_pngs_atomic([(files.mask, indexed_png(answer, self.schema))], overwrite=True)
            with contextlib.suppress(FileNotFoundError):
                files.strokes.unlink()  # the answer is the suggestion's, not older strokes'
        self.done.add(Path(image).name)
        return self.status(image)

    # -- the project's own files -----------------------------------------------------------
    def state_json(self) -> str:
        doc = {"format": STATE_FORMAT, "version": STATE_VERSION,
               "done": sorted(self.done, key=lambda n: _natural(Path(n))),
               "current": self.current, "settings": self.settings,
               "label_states": {str(lab.id): {"hidden": lab.hidden, "locked": lab.locked}
                                for lab in self.schema if lab.hidden or lab.locked}}
        return json.dumps(doc, indent=1) + "\n"

    def save_state(self, state: str | None = None) -> None:
        """Write project.json (``state``: :meth:`state_json` taken earlier, e.g. on the GUI
        thread before the write runs in a worker)."""
        from ..io import write_text_atomic

        self.data.mkdir(parents=True, exist_ok=True)
        write_text_atomic(self.data / STATE_FILE, state or self.state_json())

    def save_schema(self, text: str | None = None) -> None:
        from ..io import write_text_atomic

        self.data.mkdir(parents=True, exist_ok=True)
        write_text_atomic(self.schema_path, text or self.schema.to_json())

    # -- one app per folder ----------------------------------------------------------------
    def lock(self) -> None:
        """Make this process the one app working on the folder (until :meth:`unlock`, or the
        process ends: the kernel releases the lock).

        Raises
        ------
        InvalidInputError
            Another segapp holds the folder, or segapp cannot write in it.
        """
        try:
            self.data.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.data / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o666)
        except OSError as exc:
            raise InvalidInputError(f"cannot keep work in {self.data}: "
                                    f"{(exc.strerror or str(exc)).lower()}") from None
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows: no advisory lock, one app assumed
            self._lock_fd = fd
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise InvalidInputError(f"{self.folder} is open in another segapp; close it "
                                    "there first") from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._lock_fd = fd

    def unlock(self) -> None:
        if self._lock_fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._lock_fd)  # closing drops the flock
            self._lock_fd = None
