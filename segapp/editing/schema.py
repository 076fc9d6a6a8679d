"""The label schema: the names, colours and ids of the labels (one schema per folder).

A schema is a small JSON file that the app, ``segapp segment --labels`` and ``segapp batch
--labels`` read, and that every export carries beside its masks (the *sidecar*)::

    {"format": "segapp-labels", "version": 1,
     "labels": [{"id": 1, "name": "sky", "color": [86, 180, 233]},
                {"id": 2, "name": "building", "color": "#e69f00"}, ...]}

Ids are 1..:data:`MAX_LABELS` (0 is "unlabelled"), names are unique and not empty, colours are
``[r, g, b]`` (0..255) or ``"#rrggbb"``; a plain list of label objects is read too. Up to 255
labels (an 8-bit label map, an indexed PNG); colours left out take the default palette's
(:func:`segapp.io.render.default_color`).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

from ..errors import InvalidInputError
from ..io.render import MAX_LABEL_ID, default_color

__all__ = ["MAX_LABELS", "Label", "LabelSchema", "SCHEMA_FORMAT", "default_labels",
           "read_schema"]

#: Label ids are 1..MAX_LABELS (0 = unlabelled): label maps and undo records are 8-bit.
MAX_LABELS = MAX_LABEL_ID
SCHEMA_FORMAT = "segapp-labels"
SCHEMA_VERSION = 1
#: Labels of a new schema (the keys 1..9 pick them); more are added in the app or the file.
DEFAULT_COUNT = 9


@dataclass
class Label:
    """One label: id, name, colour; ``hidden`` and ``locked`` are how the app treats it (a
    hidden label is not drawn, a locked one's painted pixels are not changed by any edit)."""

    id: int
    name: str
    color: tuple[int, int, int]
    hidden: bool = field(default=False, compare=False)
    locked: bool = field(default=False, compare=False)

    def to_dict(self, states: bool = True) -> dict[str, Any]:
        """As stored (``states``: with ``hidden`` / ``locked`` when set, as the app's own
        files keep them; a schema file holds ids, names and colours only)."""
        d: dict[str, Any] = {"id": self.id, "name": self.name, "color": list(self.color)}
        if states:
            d.update({k: True for k in ("hidden", "locked") if getattr(self, k)})
        return d

    @classmethod
    def from_dict(cls, d: Any) -> "Label":
        if not isinstance(d, dict):
            raise ValueError(f"a label must be an object with id, name and color, got {d!r}")
        ident = d.get("id")
        if isinstance(ident, bool) or not isinstance(ident, int) or not 1 <= ident <= MAX_LABELS:
            raise ValueError(f"label ids must be integers 1..{MAX_LABELS}, got {ident!r}")
        name = d.get("name", f"Label {ident}")
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"label {ident} needs a name (a non-empty string), got {name!r}")
        color = _color(d["color"]) if "color" in d else default_color(ident)
        return cls(ident, name.strip(), color, bool(d.get("hidden", False)),
                   bool(d.get("locked", False)))


def _color(value: Any) -> tuple[int, int, int]:
    if isinstance(value, str):
        text = value.strip().lstrip("#")
        if len(text) == 6:
            try:
                return tuple(int(text[i:i + 2], 16) for i in (0, 2, 4))  # type: ignore[return-value]
            except ValueError:
                pass
        raise ValueError(f"label colour must be [r, g, b] or \"#rrggbb\", got {value!r}")
    try:
        rgb = tuple(value)
    except TypeError:
        rgb = ()
    if len(rgb) != 3 or not all(isinstance(c, int) and not isinstance(c, bool)
                                and 0 <= c <= 255 for c in rgb):
        raise ValueError(f"label colour must be three values 0..255, got {value!r}")
    return rgb  # type: ignore[return-value]


def default_labels(n: int = DEFAULT_COUNT) -> list[Label]:
    """Labels 1..n named "Label i" in the default palette (:func:`segapp.io.render.default_color`)."""
    return [Label(i, f"Label {i}", default_color(i)) for i in range(1, n + 1)]


class LabelSchema:
    """An ordered set of :class:`Label` s with unique ids and names.

    The app's strokes of every image of a folder share one schema object, so a rename or a new
    label is seen by all of them. Iterating gives the labels in order; ``schema[i]`` is the
    label of id ``i``.
    """

    def __init__(self, labels: Iterable[Label] | None = None) -> None:
        self._labels: dict[int, Label] = {}
        for lab in (default_labels() if labels is None else labels):
            self._check_new(lab.id, lab.name)
            self._labels[lab.id] = Label(lab.id, lab.name, _color(lab.color), lab.hidden,
                                         lab.locked)

    # -- reading ---------------------------------------------------------------------------
    def __iter__(self) -> Iterator[Label]:
        return iter(self._labels.values())

    def __len__(self) -> int:
        return len(self._labels)

    def __contains__(self, label_id: object) -> bool:
        return label_id in self._labels

    def __getitem__(self, label_id: int) -> Label:
        return self._labels[label_id]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LabelSchema) and list(self) == list(other)

    def get(self, label_id: int, default: Any = None) -> Any:
        return self._labels.get(label_id, default)

    @property
    def by_id(self) -> dict[int, Label]:
        """``{id: Label}`` in schema order (the live mapping: do not modify)."""
        return self._labels

    def ids(self) -> list[int]:
        return list(self._labels)

    def colors(self) -> dict[int, tuple[int, int, int]]:
        return {i: lab.color for i, lab in self._labels.items()}

    def names(self) -> dict[int, str]:
        return {i: lab.name for i, lab in self._labels.items()}

    def name(self, label_id: int) -> str:
        """The name of a label id, also of one the schema does not hold ("label 12")."""
        lab = self._labels.get(label_id)
        return lab.name if lab is not None else f"label {label_id}"

    def locked_ids(self) -> list[int]:
        return [i for i, lab in self._labels.items() if lab.locked]

    def hidden_ids(self) -> list[int]:
        return [i for i, lab in self._labels.items() if lab.hidden]

    def copy(self) -> "LabelSchema":
        return LabelSchema(list(self))

    # -- changing --------------------------------------------------------------------------
    def _check_new(self, label_id: int, name: str, replacing: int | None = None) -> None:
        if not 1 <= int(label_id) <= MAX_LABELS:
            raise ValueError(f"label ids must be 1..{MAX_LABELS}, got {label_id}")
        if label_id in self._labels and label_id != replacing:
            raise ValueError(f"label id {label_id} is used twice")
        if not str(name).strip():
            raise ValueError(f"label {label_id} needs a name")
        for other in self._labels.values():
            if other.id not in (label_id, replacing) and other.name == str(name).strip():
                raise ValueError(f"two labels are named {other.name!r} (ids {other.id} and "
                                 f"{label_id}): names must differ")

    def add(self, name: str | None = None,
            color: Sequence[int] | None = None) -> Label:
        """A new label with the next free id (after the largest), named ``name`` or "Label i"."""
        free = [i for i in range(max(self._labels, default=0) + 1, MAX_LABELS + 1)] or \
            [i for i in range(1, MAX_LABELS + 1) if i not in self._labels]
        if not free:
            raise ValueError(f"a schema holds at most {MAX_LABELS} labels")
        ident = free[0]
        name = name if name is not None else f"Label {ident}"
        self._check_new(ident, name)
        lab = Label(ident, name.strip(),
                    _color(list(color)) if color is not None else default_color(ident))
        self._labels[ident] = lab
        return lab

    def rename(self, label_id: int, name: str) -> None:
        self._check_new(label_id, name, replacing=label_id)
        self._labels[label_id].name = str(name).strip()

    def recolor(self, label_id: int, color: Iterable[int]) -> None:
        self._labels[label_id].color = _color(list(color))

    def replace(self, labels: Iterable[Label]) -> None:
        """Take over the names, colours and states of ``labels`` (a saved session, a journal);
        labels of other ids are kept."""
        merged = dict(self._labels)
        for lab in labels:
            merged[lab.id] = Label(lab.id, lab.name, _color(lab.color), lab.hidden, lab.locked)
        fresh = LabelSchema(merged.values())  # checks ids and names
        self._labels = fresh._labels

    # -- files -----------------------------------------------------------------------------
    def to_json(self) -> str:
        doc = {"format": SCHEMA_FORMAT, "version": SCHEMA_VERSION,
               "labels": [lab.to_dict(states=False) for lab in self]}
        return json.dumps(doc, indent=1) + "\n"

    @classmethod
    def from_json(cls, text: str, source: str = "label schema") -> "LabelSchema":
        """Parse a schema (see the module docstring); InvalidInputError names what is wrong."""
        try:
            doc = json.loads(text)
        except ValueError as exc:
            raise InvalidInputError(f"{source}: not a label schema (bad JSON: {exc})") from None
        if isinstance(doc, dict):
            if doc.get("format", SCHEMA_FORMAT) != SCHEMA_FORMAT or "labels" not in doc:
                raise InvalidInputError(f"{source}: not a label schema (expected "
                                        f"{{\"format\": \"{SCHEMA_FORMAT}\", \"labels\": [...]}})")
            version = doc.get("version", SCHEMA_VERSION)
            if not isinstance(version, int) or version > SCHEMA_VERSION:
                raise InvalidInputError(f"{source}: label schema version {version!r} is newer "
                                        "than this segapp reads")
            items = doc["labels"]
        else:
            items = doc
        if not isinstance(items, list) or not items:
            raise InvalidInputError(f"{source}: a label schema needs a non-empty list of labels")
        if len(items) > MAX_LABELS:
            raise InvalidInputError(f"{source}: {len(items)} labels; at most {MAX_LABELS}")
        try:
            return cls(Label.from_dict(d) for d in items)
        except (ValueError, KeyError, TypeError) as exc:
            raise InvalidInputError(f"{source}: {exc}") from None

    def write(self, path: str | os.PathLike) -> Path:
        """Write the schema file atomically (:func:`segapp.io.write_text_atomic`)."""
        from ..io import write_text_atomic

        return write_text_atomic(path, self.to_json())

    def palette(self) -> list[int]:
        """A 768-entry PIL palette: index ``i`` the colour of label ``i`` (0 black; ids the
        schema does not hold keep their default colour)."""
        from ..io.render import default_colors

        table = default_colors().astype(int).copy()
        for i, lab in self._labels.items():
            table[i] = lab.color
        return [int(v) for v in table.ravel()]


def read_schema(path: str | os.PathLike) -> LabelSchema:
    """Read a label schema file; InvalidInputError (one line naming the file) if it cannot be."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise InvalidInputError(f"{p}: cannot read the label schema: "
                                f"{(exc.strerror or str(exc)).lower()}") from None
    except UnicodeDecodeError:
        raise InvalidInputError(f"{p}: not a label schema (not UTF-8 text)") from None
    return LabelSchema.from_json(text, str(p))
