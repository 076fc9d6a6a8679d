"""Validation of the arrays a caller hands to the library: images and label (scribble) maps.

Every problem is an :class:`~segapp.errors.InvalidInputError` with a one-line message; nothing
is coerced silently. Integer images are scaled by their *evident* range
(:func:`integer_scale`), not blindly by their dtype's: an int32 or int64 array holding 0..255
is an 8-bit image, not a nearly black one.
"""

from __future__ import annotations

import numpy as np

from ..errors import InvalidInputError

#: Largest label id of a label map handed to the library (:func:`segapp.segment`,
#: :class:`segapp.Session`): results carry label ids in int32. The app's own maps are 8-bit
#: (:data:`segapp.io.render.MAX_LABEL_ID`, 255); a scribble *file* is read with ids up to
#: :data:`segapp.io.scribbles.DEFAULT_MAX_LABEL` (9) unless a label schema says more.
MAX_LIBRARY_LABEL = np.iinfo(np.int32).max


def integer_scale(dtype: np.dtype, top: float) -> float:
    """The divisor that maps an integer image with maximum ``top`` to [0, 1].

    uint8 by 255 and uint16 by 65535 (their dtype's range, as
    :func:`skimage.util.img_as_float`); any other integer type (int8…int64, uint32, uint64,
    32-bit image files) by the evident range of its values: 255 when they fit in 0..255,
    65535 when they fit in 0..65535, else their maximum.
    """
    dtype = np.dtype(dtype)
    if dtype == np.uint8:
        return 255.0
    if dtype == np.uint16:
        return 65535.0
    if top <= 255:
        return 255.0
    if top <= 65535:
        return 65535.0
    return float(top)


def as_numeric_array(value: object, what: str) -> np.ndarray:
    """``value`` as a real numeric (or bool) numpy array, or :class:`InvalidInputError`.

    Refused: what numpy cannot make one array of (ragged nested lists), objects, strings,
    complex numbers, and dates or durations (``datetime64`` / ``timedelta64``, which numpy
    counts as numbers).
    """
    if value is None or isinstance(value, (str, bytes)):
        raise InvalidInputError(f"{what} must be a numeric array, got {type(value).__name__}")
    try:
        a = np.asarray(value)
    except (ValueError, TypeError):     # ragged lists: "inhomogeneous shape"
        raise InvalidInputError(f"{what} must be a rectangular numeric array (rows of "
                                "different lengths?)") from None
    if a.dtype.kind in "mM":
        raise InvalidInputError(f"{what} must be a numeric array, got dates or durations "
                                f"(dtype {a.dtype})")
    if a.dtype == object or not (np.issubdtype(a.dtype, np.number) or a.dtype == bool):
        raise InvalidInputError(f"{what} must be a numeric array, got dtype {a.dtype}")
    if np.issubdtype(a.dtype, np.complexfloating):
        raise InvalidInputError(f"{what} must be real-valued, got a complex array")
    return a


def check_callback(value: object, what: str) -> None:
    """``value`` must be None or callable (``preview=``, ``on_result=``)."""
    if value is not None and not callable(value):
        raise InvalidInputError(f"{what} must be a callable or None, got "
                                f"{type(value).__name__} {value!r:.40}")


def as_float_image(image: object) -> np.ndarray:
    """Validate an image array and return it as float32 in [0, 1], (H, W) or (H, W, 3).

    bool images map to 0/1; integer images are scaled by :func:`integer_scale`; float images
    must be finite and in [0, 1]; RGBA loses its alpha channel; a single-channel third axis is
    squeezed. A constant image (every pixel the same, e.g. all black) is refused: it holds no
    information to segment by.

    Raises
    ------
    InvalidInputError
        Not a numeric array of a supported shape, NaN/inf, out-of-range or negative values, a
        constant image.
    """
    if image is None or isinstance(image, (str, bytes)):
        raise InvalidInputError(f"image must be a numpy array (H, W) or (H, W, 3), got "
                                f"{type(image).__name__} (read files with segapp.io.read_image)")
    img = as_numeric_array(image, "image")
    if img.ndim == 3 and img.shape[2] == 1:
        img = img[:, :, 0]
    if img.ndim == 3 and img.shape[2] == 4:
        img = img[:, :, :3]
    if img.ndim not in (2, 3) or (img.ndim == 3 and img.shape[2] != 3):
        raise InvalidInputError(
            f"image must be (H, W) grey or (H, W, 3) colour; got shape {img.shape}")
    if min(img.shape[:2]) < 2:
        raise InvalidInputError(f"image of shape {img.shape[:2]} is too small to segment")
    if img.dtype == bool:
        out = img.astype(np.float32)
    elif np.issubdtype(img.dtype, np.integer):
        lo, hi = int(img.min()), int(img.max())
        if lo < 0:
            raise InvalidInputError(f"integer image with negative values (minimum {lo})")
        out = (img.astype(np.float64) / integer_scale(img.dtype, hi)).astype(np.float32)
    else:
        if not np.all(np.isfinite(img)):
            raise InvalidInputError("image contains NaN or infinite values")
        lo, hi = float(img.min()), float(img.max())
        if lo < 0 or hi > 1:
            raise InvalidInputError(
                f"float image values must lie in [0, 1]; got [{lo:.3g}, {hi:.3g}]")
        out = img.astype(np.float32)
    if float(out.max()) == float(out.min()):
        raise InvalidInputError(
            f"the image is constant (every pixel {float(out.flat[0]):.3g}): it holds no "
            "information to segment by")
    return out


def check_label_map(labels: object, shape: tuple[int, ...] | None = None,
                    what: str = "scribbles", *, max_label: int = MAX_LIBRARY_LABEL,
                    keep_dtype: bool = False) -> np.ndarray:
    """A label map (0 = unlabelled, positive ids) as an int64 array: the one validator of
    label maps (the library's scribbles and results, the app's strokes, rendered and
    exported maps, scribble files' values).

    Accepts integer and bool arrays, and float arrays holding whole numbers.

    Parameters
    ----------
    labels : array_like
        The map.
    shape : tuple of int, optional
        The shape it must have (the image's); None: any ``(H, W)`` map.
    what : str
        What the map is, for the messages ("scribbles", "label map", ...).
    max_label : int
        Largest id allowed (:data:`MAX_LIBRARY_LABEL`; 255 for the app's 8-bit maps).
    keep_dtype : bool
        Return an integer map as given, not as an int64 copy (rendering and exports: a 12 MP
        copy holds the GIL on the export thread for ~0.1 s).

    Raises
    ------
    InvalidInputError
        Not an array of numbers (None, strings, objects), a different shape (or not 2-D),
        negative or fractional values, NaN, or ids above ``max_label``.
    """
    wanted = "an (H, W) integer array" if shape is None else \
        f"an integer array of shape {tuple(shape)}"
    if labels is None or isinstance(labels, (str, bytes)):
        raise InvalidInputError(f"{what} must be {wanted}, got {type(labels).__name__}")
    try:
        s = as_numeric_array(labels, what)
    except InvalidInputError as exc:
        raise InvalidInputError(f"{exc} ({wanted})") from None
    if shape is None:
        if s.ndim != 2:
            raise InvalidInputError(f"{what} must be {wanted}, got shape {s.shape}")
    elif s.shape != tuple(shape):
        if len(shape) == 2 and s.ndim == 2:
            raise InvalidInputError(f"{what} are {s.shape[1]}×{s.shape[0]} but the image is "
                                    f"{shape[1]}×{shape[0]}")
        raise InvalidInputError(f"{what} have shape {s.shape}, expected {tuple(shape)}")
    if s.dtype == bool:
        return s.astype(np.int64)
    integer = np.issubdtype(s.dtype, np.integer)
    if not integer:
        if not np.all(np.isfinite(s)) or np.any(s != np.round(s)):
            raise InvalidInputError(f"{what} must hold integer label ids (0 = unlabelled)")
    if s.size and s.min() < 0:
        raise InvalidInputError(f"{what} must not hold negative values (found {s.min()}; "
                                "0 = unlabelled)")
    if s.size and s.max() > max_label:
        raise InvalidInputError(f"{what}: label id {int(s.max())} is too large (at most "
                                f"{max_label})")
    return s if integer and keep_dtype else s.astype(np.int64)


def check_confidence(confidence: object, shape: tuple[int, ...]) -> np.ndarray | None:
    """Per-pixel stroke confidence: None, or finite values in [0, 1] of the given shape."""
    if confidence is None:
        return None
    q = as_numeric_array(confidence, "confidence")
    if q.shape != tuple(shape):
        raise InvalidInputError(f"confidence has shape {q.shape}, expected {tuple(shape)}")
    q = q.astype(np.float64)
    if not np.all(np.isfinite(q)) or (q.size and (q.min() < 0 or q.max() > 1)):
        raise InvalidInputError("confidence values must lie in [0, 1]")
    return q
