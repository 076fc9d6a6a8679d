"""Opening image files safely: file names, the pixel limit, decoding, EXIF orientation.

Every problem is an :class:`~segapp.errors.InvalidInputError` whose one-line message names
the file and the reason; Pillow's own exception types never escape. Shared by
:mod:`.images` and :mod:`.scribbles`.
"""

from __future__ import annotations

import os
import stat
import threading
import warnings
from pathlib import Path
from typing import BinaryIO, Union

import numpy as np
from PIL import Image, ImageOps

from ..errors import InvalidInputError

PathLike = Union[str, os.PathLike]

#: Default largest image (pixels) read_image / read_scribbles accept: 50 MP. Its float32 RGB
#: copy alone is 600 MB; a PNG declaring 176 MP took 97 s and 7.4 GB before it was refused
#: by anything (issue 12). ``pixel_limit=`` / ``--pixel-limit`` raise it.
DEFAULT_PIXEL_LIMIT = 50_000_000

_GREY_16BIT_MODES = {"I;16", "I;16B", "I;16L", "I;16N"}


def _describe(exc: BaseException) -> str:
    """Short human reason for a Pillow/OS failure (no exception class names)."""
    if isinstance(exc, Image.DecompressionBombError):
        return "image is too large (possible decompression bomb)"
    if isinstance(exc, Image.UnidentifiedImageError):
        return "not a recognised image file"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror.lower()
    text = " ".join(str(exc).split())  # one line
    if "truncated" in text.lower():
        return "file is truncated or corrupt"
    return text or "file is corrupt or unreadable"


def _as_path(path: object, what: str) -> Path:
    """``path`` as a Path, or InvalidInputError when it is not a file name at all."""
    if isinstance(path, (bytes, bytearray, memoryview)):
        raise InvalidInputError(f"{what} must be a file name (str or os.PathLike), got "
                                f"{type(path).__name__} (file contents? write them to a file "
                                "or decode the image yourself)")
    if not isinstance(path, (str, os.PathLike)):
        raise InvalidInputError(f"{what} must be a file name (str or os.PathLike), got "
                                f"{type(path).__name__}")
    p = Path(path)
    if str(p) in ("", "."):
        raise InvalidInputError(f"{what} file name is empty")
    if "\0" in str(p):       # the OS cannot take it (a ValueError, not an OSError)
        raise InvalidInputError(f"{what} file name {str(p)!r} contains a NUL character")
    return p


def check_pixel_limit(pixel_limit: object) -> int | None:
    """``pixel_limit`` validated: a positive integer, or None for no limit."""
    if pixel_limit is None:
        return None
    if isinstance(pixel_limit, (bool, np.bool_)) or not isinstance(pixel_limit, (int, np.integer)) \
            or pixel_limit < 1:
        raise InvalidInputError(f"pixel_limit must be a positive integer or None, got "
                                f"{pixel_limit!r}")
    return int(pixel_limit)


# Pillow's decompression-bomb limit is a module global; it is swapped for ours while a file
# is opened, under a lock so that two threads opening files do not see each other's.
_PIL_LIMIT_LOCK = threading.Lock()


def open_input(path: PathLike, what: str = "image") -> BinaryIO:
    """``path`` opened for reading as a regular file; every failure an InvalidInputError.

    The one place an input path meets the operating system: any :class:`OSError` (missing,
    a directory, no permission, a name too long, a loop of links, ...) becomes an
    :class:`~segapp.errors.InvalidInputError` naming the file and the reason. The file is
    opened without blocking and checked through its descriptor: a FIFO would block until a
    writer came and a device never ends, and checking the name first would leave a moment in
    which the name could be replaced.
    """
    p = _as_path(path, f"the {what}")
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(p, flags)
    except IsADirectoryError:
        raise InvalidInputError(f"{p}: is a directory, not an {what} file") from None
    except FileNotFoundError:
        raise InvalidInputError(f"{p}: no such file") from None
    except OSError as exc:
        if _special(p):       # a socket cannot be opened at all (ENXIO)
            raise InvalidInputError(f"{p}: {what} is not a regular file (a FIFO, device or "
                                    "socket would block or never end)") from None
        raise InvalidInputError(f"{p}: cannot open {what}: {_describe(exc)}") from None
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise InvalidInputError(f"{p}: is a directory, not an {what} file")
        if not stat.S_ISREG(mode):
            raise InvalidInputError(f"{p}: {what} is not a regular file (a FIFO, device or "
                                    "socket would block or never end)")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException as exc:
        os.close(fd)
        if isinstance(exc, OSError):
            raise InvalidInputError(f"{p}: cannot read {what}: {_describe(exc)}") from None
        raise


def _special(p: Path) -> bool:
    """Whether ``p`` exists and is neither a regular file nor a directory."""
    try:
        mode = os.stat(p).st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def read_input_bytes(path: PathLike, limit: int, what: str = "file") -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes (:func:`open_input`'s checks);
    a larger file is an InvalidInputError before it is read."""
    with open_input(path, what) as fh:
        try:
            size = os.fstat(fh.fileno()).st_size
            if size > limit:
                raise InvalidInputError(f"{Path(path)}: {what} is too large ({size} bytes, "
                                        f"more than {limit})")
            data = fh.read(limit + 1)
        except OSError as exc:
            raise InvalidInputError(f"{Path(path)}: cannot read {what}: "
                                    f"{_describe(exc)}") from None
    if len(data) > limit:        # grew while read
        raise InvalidInputError(f"{Path(path)}: {what} is too large (more than {limit} bytes)")
    return data


class MultiPageError(InvalidInputError):
    """An image file holds several pages (a multi-page TIFF) or frames (an animated GIF, PNG
    or WebP) and no page was chosen: segapp segments one image, never silently the first.

    ``pages`` is how many there are (``page=1..pages`` chooses one).
    """

    def __init__(self, message: str, pages: int) -> None:
        super().__init__(message)
        self.pages = pages


def check_page(page: object) -> int | None:
    """``page`` validated: a positive integer (1 = the first), or None."""
    if page is None:
        return None
    if isinstance(page, (bool, np.bool_)) or not isinstance(page, (int, np.integer)) or page < 1:
        raise InvalidInputError(f"page must be a positive integer (1 = the first) or None, got "
                                f"{page!r}")
    return int(page)


def _pages(img: Image.Image) -> list[int]:
    """The frame indices of ``img``'s pages.

    Not pages: an MPO's (a camera JPEG's) later frames, which are its previews and depth maps
    (the first is the photo, by the format's definition), and a TIFF's reduced-resolution
    subfiles (thumbnails: NewSubfileType bit 0).
    """
    n = int(getattr(img, "n_frames", 1) or 1)
    if n == 1 or img.format == "MPO":
        return [0]
    if img.format != "TIFF":
        return list(range(n))
    full = []
    for i in range(n):
        img.seek(i)
        if not int(img.tag_v2.get(254, 0)) & 1:
            full.append(i)
    img.seek(0)
    return full or [0]


def _choose_page(p: Path, what: str, img: Image.Image, page: int | None) -> None:
    """Seek ``img`` to the chosen page, or refuse (MultiPageError / a page out of range)."""
    pages = _pages(img)
    if page is None and len(pages) > 1:
        kind = "frames (an animation)" if img.format in ("GIF", "PNG", "WEBP") else "pages"
        raise MultiPageError(f"{p}: {what} holds {len(pages)} {kind}; segapp segments one: "
                             f"choose it with page=N (1..{len(pages)}), --page N on the "
                             "command line", len(pages))
    if page is not None and page > len(pages):
        raise InvalidInputError(f"{p}: page {page} asked, but the {what} has "
                                f"{len(pages)} page{'s' if len(pages) > 1 else ''}")
    if page is not None and pages[page - 1] != 0:
        img.seek(pages[page - 1])


def _open_image(path: PathLike, what: str = "image",
                pixel_limit: int | None = DEFAULT_PIXEL_LIMIT,
                page: int | None = None) -> Image.Image:
    """Open, fully decode and EXIF-orient an image file (its ``page``, 1-based, if it has
    several); any failure -> InvalidInputError.

    Files declaring more than ``pixel_limit`` pixels are refused before they are decoded
    (Pillow's own decompression-bomb check, set to ``pixel_limit``, raises on every path
    that reads a size). A file of several pages or frames without ``page`` is a
    :class:`MultiPageError`.
    """
    p = _as_path(path, f"the {what}")
    limit = check_pixel_limit(pixel_limit)
    page = check_page(page)
    fh = open_input(p, what)
    try:
        with fh, _PIL_LIMIT_LOCK, warnings.catch_warnings():
            # Pillow warns about odd but readable files (e.g. bad EXIF); those are not errors.
            # Its bomb warning (above the limit) is one: it stops the file here, undecoded.
            warnings.simplefilter("ignore")
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            saved = Image.MAX_IMAGE_PIXELS
            Image.MAX_IMAGE_PIXELS = limit
            try:
                with Image.open(fh) as img:
                    _check_size(p, what, img.size, limit)
                    _choose_page(p, what, img, page)
                    _check_size(p, what, img.size, limit)
                    img.load()  # decode now so truncated data fails here, not later
                    oriented = _exif_transpose(img)
                    oriented.load()
                    oriented.format = img.format   # lost by the copy; scribbles need it (JPEG)
            finally:
                Image.MAX_IMAGE_PIXELS = saved
    except InvalidInputError:
        raise
    except (Image.DecompressionBombWarning, Image.DecompressionBombError) as exc:
        raise InvalidInputError(f"{p}: {what} is too large: {_bomb_size(exc)} pixels, above "
                                f"the limit of {limit} ({_RAISE_LIMIT})") from None
    except Exception as exc:  # PIL raises many types (OSError, SyntaxError, ...)
        raise InvalidInputError(f"{p}: cannot read {what}: {_describe(exc)}") from exc
    if oriented.width == 0 or oriented.height == 0:
        raise InvalidInputError(f"{p}: {what} has zero size ({oriented.width}x{oriented.height})")
    return oriented


_RAISE_LIMIT = "raise it with --pixel-limit N, or pixel_limit= in segapp.io"


def _check_size(p: Path, what: str, size: tuple[int, int], limit: int | None) -> None:
    w, h = size
    if limit is not None and w * h > limit:
        raise InvalidInputError(f"{p}: {what} is too large: {w}x{h} = {w * h} pixels, above "
                                f"the limit of {limit} ({_RAISE_LIMIT})")


def _bomb_size(exc: BaseException) -> str:
    import re
    m = re.search(r"\((\d+) pixels\)", str(exc))
    return m.group(1) if m else "too many"


def _exif_transpose(img: Image.Image) -> Image.Image:
    """Apply the EXIF orientation; an unreadable EXIF block is ignored rather than fatal."""
    try:
        out = ImageOps.exif_transpose(img)
    except Exception:  # malformed EXIF must not make a good image unreadable
        return img.copy()
    # exif_transpose returns a new image, or a plain copy when there is nothing to do.
    return img.copy() if out is None else out
