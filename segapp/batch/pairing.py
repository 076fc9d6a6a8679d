"""Pair each image of a folder with its scribble file by file stem.

The rule (also in ``segapp batch --help`` and the README):

* an *image* is any file directly in ``images_dir`` whose suffix is in :data:`IMAGE_SUFFIXES`
  (case-insensitive; sub-folders are not searched);
* its scribbles are the first of the ``patterns`` (default :data:`DEFAULT_PATTERNS`,
  ``{stem}_scribbles.png`` then ``{stem}.png``) that names an existing file in
  ``scribbles_dir``, never the image file itself;
* a file that is some image's scribbles is not an image too — so images and scribbles may
  share one folder (``photo.jpg`` + ``photo_scribbles.png``, as in ``sample_images/``);
* two images with the same stem (``a.jpg`` and ``a.tif``) would write the same output file:
  both are reported as failed, neither is segmented.
"""

from __future__ import annotations

import os
import stat

import string
from dataclasses import dataclass
from pathlib import Path

from ..errors import InvalidInputError

__all__ = ["DEFAULT_PATTERNS", "IMAGE_SUFFIXES", "Pair", "Pairing", "find_pairs"]

#: Scribble file names tried in order; ``{stem}`` is the image's file name without suffix.
DEFAULT_PATTERNS: tuple[str, ...] = ("{stem}_scribbles.png", "{stem}.png")

#: Longest file name (bytes) of common file systems (ext4, XFS, APFS, NTFS in UTF-16 units).
NAME_MAX = 255

#: File suffixes taken as images (formats Pillow reads).
IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".tif", ".tiff", ".bmp", ".webp",
                            ".gif", ".ppm", ".pgm", ".jp2"})


@dataclass(frozen=True)
class Pair:
    """One image and its scribble file; ``stem`` names the outputs."""

    stem: str
    image: Path
    scribbles: Path


@dataclass(frozen=True)
class Pairing:
    """What :func:`find_pairs` found.

    Attributes
    ----------
    pairs : list of Pair
        Sorted by image path.
    unpaired : list of Path
        Images without a scribble file.
    clashes : list of Pair
        Pairs whose stem another image shares (they would overwrite each other's output).
    """

    pairs: list[Pair]
    unpaired: list[Path]
    clashes: list[Pair]


def check_pattern(pattern: str) -> str:
    """Return ``pattern`` if it is a file name with exactly the field ``{stem}``.

    Raises
    ------
    segapp.errors.InvalidInputError
        Other fields, no ``{stem}``, or a path separator (scribbles are looked up in one folder).
    """
    shown = pattern if len(pattern) <= 60 else f"{pattern[:57]}..."
    try:
        parsed = [(f, spec, conv) for _, f, spec, conv in string.Formatter().parse(pattern)
                  if f is not None]
    except ValueError as exc:
        raise InvalidInputError(f"--pattern {shown!r}: {exc}") from None
    if {f for f, _, _ in parsed} != {"stem"}:
        raise InvalidInputError(f"--pattern {shown!r} must contain {{stem}} and no other field")
    if any(spec or conv for _, spec, conv in parsed):
        # {stem:999999999} would build a gigabyte-long name; a width is never a file name
        raise InvalidInputError(f"--pattern {shown!r}: write {{stem}} without a format "
                                "spec or conversion")
    if "/" in pattern or "\\" in pattern:
        raise InvalidInputError(f"--pattern {shown!r} must be a file name, not a path")
    fixed = len(pattern.replace("{stem}", "").replace("{{", "{").replace("}}", "}").encode())
    if fixed + 1 > NAME_MAX:
        raise InvalidInputError(f"--pattern {shown!r} is too long: {fixed} bytes besides "
                                f"{{stem}}, file names have at most {NAME_MAX}")
    return pattern


def find_pairs(images_dir: Path | str, scribbles_dir: Path | str | None = None,
               patterns: tuple[str, ...] | list[str] = DEFAULT_PATTERNS) -> Pairing:
    """Pair the images of ``images_dir`` with scribble files (rules in the module docstring).

    Parameters
    ----------
    images_dir : path
        Folder of images.
    scribbles_dir : path, optional
        Folder of scribble files; default ``images_dir``.
    patterns : sequence of str
        Scribble file names to try, in order, each with the field ``{stem}``.

    Returns
    -------
    Pairing

    Raises
    ------
    segapp.errors.InvalidInputError
        A folder that does not exist or a bad pattern.
    """
    images_dir = Path(images_dir)
    scribbles_dir = images_dir if scribbles_dir is None else Path(scribbles_dir)
    for what, d in (("images", images_dir), ("scribbles", scribbles_dir)):
        try:
            if not stat.S_ISDIR(os.stat(d).st_mode):
                raise InvalidInputError(f"{d}: {what} folder is not a folder")
        except FileNotFoundError:
            raise InvalidInputError(f"{d}: {what} folder does not exist") from None
        except OSError as exc:       # a name too long, a loop of links, no permission
            raise InvalidInputError(f"{d}: cannot read the {what} folder: "
                                    f"{(exc.strerror or str(exc)).lower()}") from None
    patterns = tuple(check_pattern(p) for p in patterns)
    if not patterns:
        raise InvalidInputError("at least one --pattern is needed")
    try:
        candidates = sorted(p for p in images_dir.iterdir()
                            if _is_file(p) and p.suffix.lower() in IMAGE_SUFFIXES)
    except OSError as exc:
        raise InvalidInputError(f"{images_dir}: cannot read the images folder: "
                                f"{(exc.strerror or str(exc)).lower()}") from None
    scribbles_of: dict[Path, Path | None] = {}
    for image in candidates:
        scribbles_of[image] = next(
            (s for s in (scribbles_dir / pat.format(stem=image.stem) for pat in patterns)
             if _is_file(s) and not _same_file(s, image)), None)
    used = {s.resolve() for s in scribbles_of.values() if s is not None}
    images = [p for p in candidates if p.resolve() not in used]
    pairs = [Pair(p.stem, p, scribbles_of[p]) for p in images  # type: ignore[arg-type]
             if scribbles_of[p] is not None]
    counts: dict[str, int] = {}
    for pair in pairs:
        counts[pair.stem] = counts.get(pair.stem, 0) + 1
    return Pairing(pairs=[p for p in pairs if counts[p.stem] == 1],
                   unpaired=[p for p in images if scribbles_of[p] is None],
                   clashes=[p for p in pairs if counts[p.stem] > 1])


def _is_file(p: Path) -> bool:
    """``p.is_file()``, False for names the OS refuses (too long for its file system)."""
    try:
        return p.is_file()
    except OSError:
        return False


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.samefile(b)
    except OSError:
        return False
