"""Reading images: any Pillow mode to float32 in [0, 1], EXIF-oriented, within the pixel limit."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image

from ..errors import InvalidInputError
from ..inputs.checks import integer_scale
from .opening import (_GREY_16BIT_MODES, DEFAULT_PIXEL_LIMIT, PathLike, _describe,
                      _open_image)


def read_image(path: PathLike, *, pixel_limit: int | None = DEFAULT_PIXEL_LIMIT,
               page: int | None = None) -> np.ndarray:
    """Read an image file as float32 in [0, 1].

    Parameters
    ----------
    path : str or os.PathLike
        Any format Pillow reads.
    pixel_limit : int or None
        Refuse files declaring more pixels (checked before decoding;
        :data:`DEFAULT_PIXEL_LIMIT`); None = no limit.
    page : int or None
        Which page (1 = the first) of a file that holds several: a multi-page TIFF (its
        reduced-resolution thumbnails are not pages), the frames of an animated GIF, PNG or
        WebP. Without it such a file is refused (:class:`~segapp.io.opening.MultiPageError`,
        which says how many there are), never read as its first page. A camera JPEG's later
        frames (MPO: previews, depth maps) are not pages: its photo is read.

    Returns
    -------
    numpy.ndarray
        float32, ``(H, W)`` for greyscale modes (``1``, ``L``, ``LA``, ``I;16*``, ``I``, ``F``)
        and ``(H, W, 3)`` for everything else (``RGB``, ``RGBA``, ``P``, ``CMYK``, ...).
        EXIF orientation is applied and alpha is dropped (not composited).

    Notes
    -----
    Scaling: 8-bit / 1-bit by 255; 16-bit by 65535; 32-bit integer (``I``) by its evident
    range (:func:`segapp.inputs.checks.integer_scale`: 255 if its values fit in 0..255, 65535 if
    they fit in 16 bits — 16-bit PNGs open as ``I`` in some Pillow versions — otherwise its
    maximum), negative values clipped to 0; float (``F``) is kept if it already lies in [0, 1], otherwise min-max
    normalised; non-finite floats become 0.

    Raises
    ------
    segapp.errors.InvalidInputError
        Missing file, directory, not an image, truncated/corrupt data, zero size,
        decompression bomb, unsupported mode, several pages and no ``page`` (its subclass
        :class:`~segapp.io.opening.MultiPageError`), a ``page`` the file does not have.
    """
    img = _open_image(path, pixel_limit=pixel_limit, page=page)
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
    return (a / integer_scale(np.int32, top)).astype(np.float32)


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
