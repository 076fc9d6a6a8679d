"""Bundled sample photographs with ready-made scribbles (see ``segapp/sample_images/LICENSE.md``).

>>> from segapp.samples import list_samples, sample_path, sample_scribbles_path
>>> list_samples()                                    # doctest: +SKIP
['coffee', 'astronaut', 'chelsea', 'camera']
>>> image = segapp.io.read_image(sample_path())       # doctest: +SKIP
"""

from __future__ import annotations

import importlib.resources
from pathlib import Path

from .errors import InvalidInputError

__all__ = ["list_samples", "sample_path", "sample_scribbles_path", "samples_dir"]

#: Presentation order; the first is the default sample. Images found on disk but not listed
#: here come after these, alphabetically.
_ORDER = ("coffee", "astronaut", "chelsea", "camera")
_IMAGE_SUFFIXES = (".jpg", ".png", ".jpeg")
_SCRIBBLE_SUFFIX = "_scribbles.png"


def samples_dir() -> Path:
    """Directory holding the sample images.

    Uses the installed data package ``segapp.sample_images`` (normal and editable installs);
    when segapp runs from a source checkout that is not installed (``PYTHONPATH=repo``) that
    package cannot be imported, so the ``sample_images/`` folder beside this module is used.

    Returns
    -------
    pathlib.Path

    Raises
    ------
    FileNotFoundError
        Neither location exists (a broken install).
    """
    try:
        res = importlib.resources.files("segapp.sample_images")
        # A regular package on disk gives a real path; zip imports are not supported.
        path = Path(str(res))
        if path.is_dir():
            return path
    except (ModuleNotFoundError, TypeError, ValueError):
        pass
    checkout = Path(__file__).resolve().parent / "sample_images"
    if checkout.is_dir():
        return checkout
    raise FileNotFoundError("segapp sample images not found (package segapp.sample_images)")


def _images() -> dict[str, Path]:
    """Map name -> image path for every image that has a scribble file next to it."""
    found: dict[str, Path] = {}
    for path in sorted(samples_dir().iterdir()):
        name = path.stem
        if (path.suffix.lower() in _IMAGE_SUFFIXES and not name.endswith("_scribbles")
                and (path.parent / f"{name}{_SCRIBBLE_SUFFIX}").is_file()):
            found.setdefault(name, path)
    return found


def list_samples() -> list[str]:
    """Names of the bundled samples, default first.

    Returns
    -------
    list of str
    """
    names = set(_images())
    ordered = [n for n in _ORDER if n in names]
    return ordered + sorted(names.difference(ordered))


def _resolve(name: str | None) -> tuple[str, dict[str, Path]]:
    images = _images()
    if name is None:
        names = list_samples()
        if not names:
            raise FileNotFoundError(f"no sample images in {samples_dir()}")
        return names[0], images
    if name not in images:
        raise InvalidInputError(
            f"unknown sample {name!r}; available: {', '.join(list_samples()) or 'none'}")
    return name, images


def sample_path(name: str | None = None) -> Path:
    """Path of a sample image.

    Parameters
    ----------
    name : str, optional
        One of :func:`list_samples`; default the first (``"coffee"``).

    Returns
    -------
    pathlib.Path

    Raises
    ------
    segapp.errors.InvalidInputError
        Unknown name (the message lists the available ones).
    """
    key, images = _resolve(name)
    return images[key]


def sample_scribbles_path(name: str | None = None) -> Path:
    """Path of a sample's scribble PNG (8-bit grey, pixel value = label id).

    Parameters
    ----------
    name : str, optional
        One of :func:`list_samples`; default the first.

    Returns
    -------
    pathlib.Path

    Raises
    ------
    segapp.errors.InvalidInputError
        Unknown name.
    """
    key, images = _resolve(name)
    return images[key].parent / f"{key}{_SCRIBBLE_SUFFIX}"
