"""Reading images and scribble maps, writing PNGs safely (numpy + Pillow only, no Qt).

Every problem with an input file is reported as :class:`segapp.errors.InvalidInputError`
whose one-line message names the file and the reason; Pillow's own exception types never
escape. Problems with an output location (missing directory, no permission, disk full) are
reported as the matching :class:`OSError` subclass, again with a one-line message.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import warnings
from pathlib import Path
from typing import BinaryIO, Callable, Union

import numpy as np
from PIL import Image, ImageOps

from .errors import InvalidInputError
from .render import PALETTE

__all__ = [
    "MAX_LABEL",
    "read_image",
    "read_scribbles",
    "write_png_atomic",
    "write_bytes_atomic",
    "save_labels",
]

PathLike = Union[str, os.PathLike]

#: Largest label id a scribble map may hold (the GUI offers keys 1..9).
MAX_LABEL = 9

# A pixel of a colour scribble image is "unlabelled" when it is (nearly) black or mostly
# transparent; the small tolerance absorbs JPEG noise and dark anti-aliasing fringes.
_BLACK_TOLERANCE = 24
_ALPHA_THRESHOLD = 128
# Two stroke colours closer than this (Euclidean RGB distance) are the same label.
_COLOR_TOLERANCE = 48.0

_GREY_16BIT_MODES = {"I;16", "I;16B", "I;16L", "I;16N"}


# --------------------------------------------------------------------------------------------
# opening files
# --------------------------------------------------------------------------------------------
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


def _open_image(path: PathLike, what: str = "image") -> Image.Image:
    """Open, fully decode and EXIF-orient an image file; any failure -> InvalidInputError."""
    p = Path(path)
    if not p.exists():
        raise InvalidInputError(f"{p}: no such file")
    if p.is_dir():
        raise InvalidInputError(f"{p}: is a directory, not an {what} file")
    try:
        with warnings.catch_warnings():
            # Pillow warns about odd but readable files (e.g. bad EXIF); those are not errors.
            warnings.simplefilter("ignore")
            with Image.open(p) as img:
                img.load()  # decode now so truncated data fails here, not later
                oriented = _exif_transpose(img)
                oriented.load()
    except Exception as exc:  # PIL raises many types (OSError, SyntaxError, ...)
        raise InvalidInputError(f"{p}: cannot read {what}: {_describe(exc)}") from exc
    if oriented.width == 0 or oriented.height == 0:
        raise InvalidInputError(f"{p}: {what} has zero size ({oriented.width}x{oriented.height})")
    return oriented


def _exif_transpose(img: Image.Image) -> Image.Image:
    """Apply the EXIF orientation; an unreadable EXIF block is ignored rather than fatal."""
    try:
        out = ImageOps.exif_transpose(img)
    except Exception:  # malformed EXIF must not make a good image unreadable
        return img.copy()
    # exif_transpose returns a new image, or a plain copy when there is nothing to do.
    return img.copy() if out is None else out


# --------------------------------------------------------------------------------------------
# images
# --------------------------------------------------------------------------------------------
def read_image(path: PathLike) -> np.ndarray:
    """Read an image file as float32 in [0, 1].

    Parameters
    ----------
    path : str or os.PathLike
        Any format Pillow reads (first frame of animations / multi-page files).

    Returns
    -------
    numpy.ndarray
        float32, ``(H, W)`` for greyscale modes (``1``, ``L``, ``LA``, ``I;16*``, ``I``, ``F``)
        and ``(H, W, 3)`` for everything else (``RGB``, ``RGBA``, ``P``, ``CMYK``, ...).
        EXIF orientation is applied and alpha is dropped (not composited).

    Notes
    -----
    Scaling: 8-bit / 1-bit by 255; 16-bit by 65535; 32-bit integer (``I``) by 65535 if its
    maximum fits in 16 bits (16-bit PNGs open as ``I`` in some Pillow versions), otherwise
    by its maximum; float (``F``) is kept if it already lies in [0, 1], otherwise min-max
    normalised; non-finite floats become 0.

    Raises
    ------
    segapp.errors.InvalidInputError
        Missing file, directory, not an image, truncated/corrupt data, zero size,
        decompression bomb, unsupported mode.
    """
    img = _open_image(path)
    try:
        arr = _to_float(img)
    except InvalidInputError as exc:
        raise InvalidInputError(f"{Path(path)}: {exc}") from None
    except Exception as exc:  # e.g. a mode Pillow cannot convert to RGB
        raise InvalidInputError(f"{Path(path)}: cannot convert {img.mode} image: "
                                f"{_describe(exc)}") from exc
    return np.ascontiguousarray(arr, dtype=np.float32)


def _to_float(img: Image.Image) -> np.ndarray:
    if img.mode == "1":
        img = img.convert("L")  # bool -> 0/255, so the common /255 below applies
    mode = img.mode
    if mode in ("L", "LA", "La"):
        return np.asarray(img.getchannel(0), dtype=np.float32) / 255.0
    if mode in _GREY_16BIT_MODES:
        return np.asarray(img).astype(np.float32) / 65535.0
    if mode == "I" or mode.startswith("I;"):
        return _scale_int32(np.asarray(img).astype(np.float64))
    if mode == "F" or mode.startswith("F;"):
        return _normalise_float(np.asarray(img, dtype=np.float64))
    # Colour (and palette, with or without transparency): alpha, if any, is simply dropped.
    rgb = img.convert("RGBA").convert("RGB") if mode in ("P", "PA") else img.convert("RGB")
    return np.asarray(rgb, dtype=np.float32) / 255.0


def _scale_int32(a: np.ndarray) -> np.ndarray:
    a = np.clip(a, 0.0, None)  # negative intensities carry no meaning for display/segmentation
    top = a.max() if a.size else 0.0
    return (a / (65535.0 if top <= 65535.0 else top)).astype(np.float32)


def _normalise_float(a: np.ndarray) -> np.ndarray:
    finite = np.isfinite(a)
    a = np.where(finite, a, 0.0)
    if not finite.any():
        return np.zeros(a.shape, np.float32)
    lo, hi = a[finite].min(), a[finite].max()
    if lo >= 0.0 and hi <= 1.0:
        return a.astype(np.float32)
    if hi > lo:
        out = (a - lo) / (hi - lo)
        out[~finite] = 0.0
        return out.astype(np.float32)
    return np.clip(a, 0.0, 1.0).astype(np.float32)  # constant image outside [0, 1]


# --------------------------------------------------------------------------------------------
# scribbles
# --------------------------------------------------------------------------------------------
def read_scribbles(path: PathLike, shape: tuple[int, ...] | None = None) -> np.ndarray:
    """Read a scribble file as an int32 label map (0 = unlabelled, 1..9 = label ids).

    Parameters
    ----------
    path : str or os.PathLike
        A label-id image or a colour-stroke image (EXIF orientation is applied).
    shape : tuple of int, optional
        Expected image shape ``(H, W)`` or ``(H, W, C)``; only ``H, W`` are compared.

    Returns
    -------
    numpy.ndarray
        ``(H, W)`` int32.

    Notes
    -----
    * Greyscale (``1``, ``L``, ``LA``, ``I;16``, ``I``) and palette (``P``) images: the pixel
      values (palette *indices* for ``P``) are the label ids. ``LA``: fully transparent pixels
      are unlabelled.
    * Colour images (``RGB``, ``RGBA``, ...), e.g. strokes painted in an editor over black or a
      transparent layer:

      1. a pixel is unlabelled if its alpha is below 128 or every channel is <= 24 (black,
         with a margin for JPEG noise and dark anti-aliased fringes);
      2. if the image is grey (R = G = B) with values <= 9 it is a label-id map saved as RGB;
      3. otherwise, if every stroke colour lies within distance 48 (RGB, Euclidean) of an entry
         of :data:`segapp.render.PALETTE`, that entry's label id is used, so segapp's own
         colour exports read back with the same ids;
      4. otherwise distinct colours (closer than 48 counts as the same colour) are numbered
         1..n in order of first appearance in raster order (row by row, left to right).

    Raises
    ------
    segapp.errors.InvalidInputError
        Unreadable file, size different from ``shape`` (the message gives both sizes),
        values outside 0..9, or more than 9 stroke colours.
    """
    p = Path(path)
    img = _open_image(p, what="scribble")
    try:
        labels = _scribble_labels(img)
    except InvalidInputError as exc:
        raise InvalidInputError(f"{p}: {exc}") from None
    except Exception as exc:
        raise InvalidInputError(f"{p}: cannot convert {img.mode} scribbles: "
                                f"{_describe(exc)}") from exc
    if shape is not None:
        want = tuple(int(s) for s in tuple(shape)[:2])
        if labels.shape != want:
            raise InvalidInputError(
                f"{p}: scribble map is {labels.shape[0]}x{labels.shape[1]} (HxW) but the image "
                f"is {want[0]}x{want[1]}")
    return labels


def _scribble_labels(img: Image.Image) -> np.ndarray:
    mode = img.mode
    if mode in ("1", "L", "P", "I", "F") or mode in _GREY_16BIT_MODES or mode.startswith("I;"):
        values = np.asarray(img)
    elif mode in ("LA", "PA"):
        values = np.where(np.asarray(img.getchannel("A")) == 0, 0, np.asarray(img.getchannel(0)))
    else:
        rgba = np.asarray(img.convert("RGBA"))
        return _labels_from_colors(rgba)
    return _check_label_values(values)


def _check_label_values(values: np.ndarray) -> np.ndarray:
    v = np.asarray(values)
    if v.dtype == np.bool_:
        return v.astype(np.int32)
    if np.issubdtype(v.dtype, np.floating):
        if not np.all(np.isfinite(v)) or not np.array_equal(v, np.round(v)):
            raise InvalidInputError("scribble values must be integer label ids 0..9")
    lo = int(v.min()) if v.size else 0
    hi = int(v.max()) if v.size else 0
    if lo < 0:
        raise InvalidInputError(f"scribble values must be label ids 0..{MAX_LABEL}, found {lo}")
    if hi > MAX_LABEL:
        raise InvalidInputError(
            f"scribble values must be label ids 0..{MAX_LABEL}, found {hi} (is this a colour "
            f"stroke image saved as greyscale? draw labels with values 1..{MAX_LABEL})")
    return v.astype(np.int32)


def _labels_from_colors(rgba: np.ndarray) -> np.ndarray:
    """Label map from an ``(H, W, 4)`` uint8 colour-stroke image (rules in read_scribbles)."""
    rgb = rgba[..., :3]
    opaque = rgba[..., 3] >= _ALPHA_THRESHOLD
    if np.all(rgb[..., 0] == rgb[..., 1]) and np.all(rgb[..., 1] == rgb[..., 2]) \
            and int(rgb.max(initial=0)) <= MAX_LABEL:
        return np.where(opaque, rgb[..., 0], 0).astype(np.int32)
    stroke = opaque & (rgb.max(axis=2) > _BLACK_TOLERANCE)
    labels = np.zeros(rgb.shape[:2], dtype=np.int32)
    if not stroke.any():
        return labels
    # Distinct colours in order of first appearance (raster order) and each pixel's colour index.
    packed = (rgb[..., 0].astype(np.int64) << 16) | (rgb[..., 1].astype(np.int64) << 8) \
        | rgb[..., 2].astype(np.int64)
    uniq, first, inverse = np.unique(packed[stroke], return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    colors = np.stack([(uniq >> 16) & 255, (uniq >> 8) & 255, uniq & 255], axis=1).astype(float)
    color_label = _assign_color_labels(colors[order])
    ids = np.empty(len(uniq), dtype=np.int32)
    ids[order] = color_label
    labels[stroke] = ids[inverse.reshape(-1)]
    return labels


def _assign_color_labels(colors: np.ndarray) -> np.ndarray:
    """Label id per colour (``colors`` in order of first appearance)."""
    dist = np.linalg.norm(colors[:, None, :] - PALETTE[None, :, :].astype(float), axis=2)
    nearest = dist.argmin(axis=1)
    if np.all(dist[np.arange(len(colors)), nearest] <= _COLOR_TOLERANCE):
        return (nearest + 1).astype(np.int32)
    reps: list[np.ndarray] = []
    out = np.empty(len(colors), dtype=np.int32)
    for i, c in enumerate(colors):
        for k, r in enumerate(reps):
            if np.linalg.norm(c - r) <= _COLOR_TOLERANCE:
                out[i] = k + 1
                break
        else:
            reps.append(c)
            if len(reps) > MAX_LABEL:
                raise InvalidInputError(
                    f"more than {MAX_LABEL} distinct stroke colours (anti-aliased brush or a "
                    f"photo?); use at most {MAX_LABEL} solid colours on black")
            out[i] = len(reps)
    return out


# --------------------------------------------------------------------------------------------
# writing
# --------------------------------------------------------------------------------------------
def _to_pil(array: np.ndarray) -> Image.Image:
    """Validate an array for PNG output and wrap it as a Pillow image."""
    a = np.asarray(array)
    if a.dtype == np.bool_:
        a = a.astype(np.uint8)
    if not np.issubdtype(a.dtype, np.integer):
        raise InvalidInputError(
            f"PNG data must be an integer array (uint8 image or label map), got {a.dtype}")
    if a.ndim == 3 and a.shape[2] in (3, 4):
        if a.dtype != np.uint8:
            if a.size and (a.min() < 0 or a.max() > 255):
                raise InvalidInputError("colour PNG data must be in 0..255")
            a = a.astype(np.uint8)
        return Image.fromarray(np.ascontiguousarray(a))  # mode RGB / RGBA from the shape
    if a.ndim != 2:
        raise InvalidInputError(f"PNG data must be (H, W), (H, W, 3) or (H, W, 4), got {a.shape}")
    if 0 in a.shape:
        raise InvalidInputError(f"cannot write an empty image of shape {a.shape}")
    lo, hi = int(a.min()), int(a.max())
    if lo < 0 or hi > 65535:
        raise InvalidInputError(f"grey PNG values must be in 0..65535, found {lo}..{hi}")
    if hi <= 255:
        return Image.fromarray(np.ascontiguousarray(a, dtype=np.uint8))  # mode L
    return Image.fromarray(np.ascontiguousarray(a, dtype=np.uint16))  # mode I;16


def _os_error(exc: OSError, message: str) -> OSError:
    """Same OSError subclass and errno as ``exc`` but with a clean one-line message."""
    # Built-in subclasses (PermissionError, ...) take a plain message; foreign ones may not.
    cls = type(exc) if type(exc).__module__ == "builtins" else OSError
    new = cls(message)
    new.errno = exc.errno  # keeps errno checks working; str() stays just `message`
    return new


def _reason(exc: OSError) -> str:
    if exc.errno == errno.ENOSPC:
        return "disk full"
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return "permission denied (directory not writable)"
    return (exc.strerror or str(exc)).lower()


def _create_temp(directory: Path, name: str) -> tuple[int, Path]:
    """Create a new hidden temp file next to the target (same filesystem -> atomic rename)."""
    for _ in range(16):
        tmp = directory / f".{name}.{secrets.token_hex(4)}.tmp"
        try:
            # 0o666 & ~umask, like a normal file (mkstemp's 0o600 would leak into the result).
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0),
                         0o666)
            return fd, tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"cannot create a temporary file in {directory}")  # pragma: no cover


def _fsync_directory(directory: Path) -> None:
    """Persist the rename itself (POSIX); not possible/needed on Windows."""
    with contextlib.suppress(OSError, AttributeError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def write_png_atomic(path: PathLike, array: np.ndarray, overwrite: bool = True) -> Path:
    """Write a PNG so that ``path`` is either the old file or the complete new one.

    The data goes to a temporary file in the same directory, is flushed and fsync'ed, then
    renamed over ``path`` with :func:`os.replace`; on any error the temporary file is removed
    and an existing ``path`` is left untouched.

    Parameters
    ----------
    path : str or os.PathLike
        Destination file.
    array : numpy.ndarray
        uint8 ``(H, W)``, ``(H, W, 3)`` or ``(H, W, 4)``; or an integer ``(H, W)`` label map,
        written as 8-bit grey if its values are <= 255 and as 16-bit grey otherwise.
    overwrite : bool, optional
        If False and ``path`` exists, raise :class:`FileExistsError`.

    Returns
    -------
    pathlib.Path
        The written path.

    Raises
    ------
    segapp.errors.InvalidInputError
        The array cannot be written as PNG (dtype, shape, value range).
    FileNotFoundError, PermissionError, FileExistsError, IsADirectoryError, OSError
        The destination cannot be written (missing directory, not writable, exists with
        ``overwrite=False``, disk full); the message is one line naming ``path``.
    """
    img = _to_pil(array)  # validate before touching the disk
    return _write_atomic(path, lambda fh: img.save(fh, format="PNG"), overwrite)


def write_bytes_atomic(path: PathLike, data: bytes, overwrite: bool = True) -> Path:
    """Write ``data`` so that ``path`` is either the old file or the complete new one.

    Same guarantees and errors as :func:`write_png_atomic` (sessions use it for their JSON).
    """
    return _write_atomic(path, lambda fh: fh.write(data), overwrite)


def _write_atomic(path: PathLike, write: Callable[[BinaryIO], object],
                  overwrite: bool) -> Path:
    """Temporary file in the same folder, ``write(fh)``, fsync, rename over ``path``."""
    p = Path(path)
    directory = p.parent
    if not directory.is_dir():
        raise FileNotFoundError(f"cannot write {p}: directory {directory} does not exist")
    if p.is_dir():
        raise IsADirectoryError(f"cannot write {p}: it is a directory")
    if not overwrite and p.exists():
        raise FileExistsError(f"cannot write {p}: file exists (overwrite not allowed)")
    tmp: Path | None = None
    try:
        fd, tmp = _create_temp(directory, p.name)
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        _publish(tmp, p, overwrite)
        tmp = None
    except OSError as exc:
        if isinstance(exc, FileExistsError) and not overwrite:
            raise FileExistsError(f"cannot write {p}: file exists (overwrite not allowed)") from exc
        raise _os_error(exc, f"cannot write {p}: {_reason(exc)}") from exc
    except Exception as exc:  # an encoder failure is about the data, not the disk
        raise InvalidInputError(f"cannot write {p}: {_describe(exc)}") from exc
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
    _fsync_directory(directory)
    return p


def _publish(tmp: Path, dest: Path, overwrite: bool) -> None:
    """Move the finished temp file to ``dest`` atomically."""
    if overwrite:
        os.replace(tmp, dest)
        return
    # A hard link fails if dest appeared meanwhile, closing the exists()-check race.
    try:
        os.link(tmp, dest)
    except FileExistsError:
        raise
    except OSError:  # filesystem without hard links: best effort
        if dest.exists():
            raise FileExistsError(errno.EEXIST, "file exists") from None
        os.replace(tmp, dest)
        return
    with contextlib.suppress(OSError):  # dest is complete; a stray temp link is harmless
        os.unlink(tmp)


def save_labels(path: PathLike, labels: np.ndarray, overwrite: bool = True) -> Path:
    """Save a label map as an 8-bit greyscale PNG (pixel value = label id), atomically.

    Parameters
    ----------
    path : str or os.PathLike
        Destination file.
    labels : numpy.ndarray
        ``(H, W)`` integer label ids in 0..255.
    overwrite : bool, optional
        See :func:`write_png_atomic`.

    Returns
    -------
    pathlib.Path
        The written path.

    Raises
    ------
    segapp.errors.InvalidInputError
        Not a 2-D integer array or values outside 0..255.
    """
    lab = np.asarray(labels)
    if lab.ndim != 2:
        raise InvalidInputError(f"labels must be a 2-D (H, W) array, got shape {lab.shape}")
    if lab.dtype == np.bool_:
        lab = lab.astype(np.uint8)
    if not np.issubdtype(lab.dtype, np.integer):
        raise InvalidInputError(f"labels must be integers, got {lab.dtype}")
    if lab.size and (int(lab.min()) < 0 or int(lab.max()) > 255):
        lo, hi = int(lab.min()), int(lab.max())
        raise InvalidInputError(f"label ids must be in 0..255 for an 8-bit PNG, found {lo}..{hi}")
    return write_png_atomic(path, lab.astype(np.uint8), overwrite=overwrite)
