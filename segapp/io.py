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
import threading
import warnings
from pathlib import Path
from typing import BinaryIO, Callable, Sequence, Union

import numpy as np
from PIL import Image, ImageOps

from .errors import InvalidInputError
from .inputs import integer_scale
from .render import PALETTE

__all__ = [
    "MAX_LABEL",
    "DEFAULT_PIXEL_LIMIT",
    "read_image",
    "read_scribbles",
    "write_png_atomic",
    "write_pngs_atomic",
    "write_bytes_atomic",
    "check_writable",
    "save_labels",
]

PathLike = Union[str, os.PathLike]

#: Largest label id a scribble map may hold (the GUI offers keys 1..9).
MAX_LABEL = 9

#: Default largest image (pixels) read_image / read_scribbles accept: 50 MP. Its float32 RGB
#: copy alone is 600 MB; a PNG declaring 176 MP took 97 s and 7.4 GB before it was refused
#: by anything (issue 12). ``pixel_limit=`` / ``--pixel-limit`` raise it.
DEFAULT_PIXEL_LIMIT = 50_000_000

# A pixel of a colour scribble image is "unlabelled" when it is (nearly) black or mostly
# transparent; the small tolerance absorbs JPEG noise and dark anti-aliasing fringes.
_BLACK_TOLERANCE = 24
_ALPHA_THRESHOLD = 128
# A stroke pixel belongs to the nearest stroke colour's shades (its ray to black) if it lies
# within this distance (Euclidean RGB), and a palette entry this close names a colour.
_COLOR_TOLERANCE = 48.0
# A pixel within 0.1 × its brightness + 8 levels of a known colour's shades is that colour's
# anti-aliased edge / JPEG noise, not a new label. The palette's colours are ≥ 0.16 × their
# brightness from each other's shades (orange–vermillion the closest).
_MERGE_RELATIVE = 0.1
_MERGE_ABSOLUTE = 8.0
# A colour needs at least this share of the (interior) stroke pixels to count as a label.
_MIN_COLOR_SHARE = 0.005
# ... and, for strokes without an interior (1–2 px wide), this share of all stroke pixels.
_MIN_THIN_SHARE = 0.02
# Stroke pixels this bright (largest channel) tell stroke colours apart.
_BRIGHT = 96
# Largest desaturation of a stroke colour still read as that colour (see _shade_distance).
_DESATURATION = 0.2
# Colour bins tried as candidates in each round of _add_colors.
_CANDIDATES = 32
# A candidate colour whose pixels border known colours' pixels for more than this share is
# an artefact of those strokes' edges.
_BORDER_SHARE = 0.5
# ... counting pixels within this many pixels (JPEG's 2×2 chroma subsampling smears ~2 px).
_BORDER_REACH = 2
# Largest channel difference between a stroke's interior pixel and each of its 8 neighbours.
_INTERIOR_TOLERANCE = 24

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


def _open_image(path: PathLike, what: str = "image",
                pixel_limit: int | None = DEFAULT_PIXEL_LIMIT) -> Image.Image:
    """Open, fully decode and EXIF-orient an image file; any failure -> InvalidInputError.

    Files declaring more than ``pixel_limit`` pixels are refused before they are decoded
    (Pillow's own decompression-bomb check, set to ``pixel_limit``, raises on every path
    that reads a size).
    """
    p = _as_path(path, f"the {what}")
    limit = check_pixel_limit(pixel_limit)
    if not p.exists():
        raise InvalidInputError(f"{p}: no such file")
    if p.is_dir():
        raise InvalidInputError(f"{p}: is a directory, not an {what} file")
    try:
        with _PIL_LIMIT_LOCK, warnings.catch_warnings():
            # Pillow warns about odd but readable files (e.g. bad EXIF); those are not errors.
            # Its bomb warning (above the limit) is one: it stops the file here, undecoded.
            warnings.simplefilter("ignore")
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            saved = Image.MAX_IMAGE_PIXELS
            Image.MAX_IMAGE_PIXELS = limit
            try:
                with Image.open(p) as img:
                    _check_size(p, what, img.size, limit)
                    img.load()  # decode now so truncated data fails here, not later
                    oriented = _exif_transpose(img)
                    oriented.load()
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


# --------------------------------------------------------------------------------------------
# images
# --------------------------------------------------------------------------------------------
def read_image(path: PathLike, *, pixel_limit: int | None = DEFAULT_PIXEL_LIMIT) -> np.ndarray:
    """Read an image file as float32 in [0, 1].

    Parameters
    ----------
    path : str or os.PathLike
        Any format Pillow reads (first frame of animations / multi-page files).
    pixel_limit : int or None
        Refuse files declaring more pixels (checked before decoding;
        :data:`DEFAULT_PIXEL_LIMIT`); None = no limit.

    Returns
    -------
    numpy.ndarray
        float32, ``(H, W)`` for greyscale modes (``1``, ``L``, ``LA``, ``I;16*``, ``I``, ``F``)
        and ``(H, W, 3)`` for everything else (``RGB``, ``RGBA``, ``P``, ``CMYK``, ...).
        EXIF orientation is applied and alpha is dropped (not composited).

    Notes
    -----
    Scaling: 8-bit / 1-bit by 255; 16-bit by 65535; 32-bit integer (``I``) by its evident
    range (:func:`segapp.inputs.integer_scale`: 255 if its values fit in 0..255, 65535 if
    they fit in 16 bits — 16-bit PNGs open as ``I`` in some Pillow versions — otherwise its
    maximum), negative values clipped to 0; float (``F``) is kept if it already lies in [0, 1], otherwise min-max
    normalised; non-finite floats become 0.

    Raises
    ------
    segapp.errors.InvalidInputError
        Missing file, directory, not an image, truncated/corrupt data, zero size,
        decompression bomb, unsupported mode.
    """
    img = _open_image(path, pixel_limit=pixel_limit)
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


# --------------------------------------------------------------------------------------------
# scribbles
# --------------------------------------------------------------------------------------------
def read_scribbles(path: PathLike, shape: tuple[int, ...] | None = None, *,
                   pixel_limit: int | None = DEFAULT_PIXEL_LIMIT) -> np.ndarray:
    """Read a scribble file as an int32 label map (0 = unlabelled, 1..9 = label ids).

    Parameters
    ----------
    path : str or os.PathLike
        A label-id image or a colour-stroke image (EXIF orientation is applied).
    shape : tuple of int, optional
        Expected image shape ``(H, W)`` or ``(H, W, C)``; only ``H, W`` are compared.
    pixel_limit : int or None
        As for :func:`read_image`.

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
      3. otherwise the painted colours are found: first in the strokes' interiors (pixels
         whose 8 neighbours have nearly the same colour), which anti-aliasing and JPEG leave
         intact, then among the bright pixels of strokes too thin to have one. A colour's
         *shades* — itself blended with the black background (anti-aliased edges) and up to
         20% desaturated (JPEG) — belong to it; a new colour needs 0.5% of the interior
         pixels (2% of the bright ones for thin strokes), and a candidate lying mostly within
         2 px of a similar known colour is that stroke's JPEG-distorted edge. Colours that
         differ only in brightness (dark red, red) are therefore one label;
      4. every stroke pixel takes the nearest painted colour whose shades lie within 48
         (Euclidean RGB), else stays unlabelled (blends where two strokes meet, JPEG noise);
      5. if every painted colour lies within 48 of a distinct entry of
         :data:`segapp.render.PALETTE`, that entry's label id is used, so segapp's own colour
         exports read back with the same ids; otherwise the colours are numbered 1..n in
         order of first appearance in raster order (row by row, left to right).

      Anti-aliased PNG strokes of any width and JPEG strokes at least ~5 px wide read back
      with their number of labels (``tests/test_bad_inputs.py``); thinner JPEG strokes of
      similar colours may not. Check the label count the command line reports.

    Raises
    ------
    segapp.errors.InvalidInputError
        Unreadable file, size different from ``shape`` (the message gives both sizes),
        values outside 0..9, or more than 9 stroke colours.
    """
    want = None if shape is None else _check_shape(shape)
    p = _as_path(path, "the scribble file")
    img = _open_image(p, what="scribble", pixel_limit=pixel_limit)
    try:
        labels = _scribble_labels(img)
    except InvalidInputError as exc:
        raise InvalidInputError(f"{p}: {exc}") from None
    except Exception as exc:
        raise InvalidInputError(f"{p}: cannot convert {img.mode} scribbles: "
                                f"{_describe(exc)}") from exc
    if want is not None:
        if labels.shape != want:
            raise InvalidInputError(
                f"{p}: scribble map is {labels.shape[0]}x{labels.shape[1]} (HxW) but the image "
                f"is {want[0]}x{want[1]}")
    return labels


def _check_shape(shape: object) -> tuple[int, int]:
    """``(H, W)`` of an expected shape ``(H, W)`` or ``(H, W, C)``."""
    try:
        dims = tuple(shape)  # type: ignore[arg-type]
    except TypeError:
        dims = ()
    if not (2 <= len(dims) <= 3 and all(isinstance(d, (int, np.integer))
                                        and not isinstance(d, (bool, np.bool_)) and d > 0
                                        for d in dims)):
        raise InvalidInputError(f"shape must be (H, W) or (H, W, C) of positive integers, "
                                f"got {shape!r}")
    return int(dims[0]), int(dims[1])


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
    colors = _stroke_colors(rgb, stroke)
    P = rgb[stroke].astype(np.float64)                       # stroke pixels in raster order
    dist = np.stack([_shade_distance(P, c) for c in colors], axis=1)   # (m, n_colours)
    nearest = dist.argmin(axis=1)
    ok = dist[np.arange(len(P)), nearest] <= _COLOR_TOLERANCE
    ids = _color_ids(colors, nearest, ok)
    labels[stroke] = np.where(ok, ids[nearest], 0)
    return labels


def _stroke_colors(rgb: np.ndarray, stroke: np.ndarray) -> list[np.ndarray]:
    """The painted colours of a colour-stroke image (rules 3–4 of :func:`read_scribbles`).

    First from the strokes' interiors (:func:`_interior`), where neither anti-aliasing nor
    JPEG changes the painted colour; then, for strokes too thin to have one, from the bright
    pixels no colour explains yet — a candidate that mostly touches pixels of a known colour
    is that colour's JPEG-distorted edge, not a stroke of its own.
    """
    core = _interior(rgb, stroke)
    colors: list[np.ndarray] = []
    _add_colors(colors, rgb[core].astype(np.float64), _MIN_COLOR_SHARE * core.sum())
    bright = np.zeros_like(stroke)
    bright[stroke] = rgb[stroke].max(axis=1) >= _BRIGHT
    _add_colors(colors, rgb[bright].astype(np.float64), _MIN_THIN_SHARE * bright.sum(),
                rgb=rgb, stroke=stroke, where=bright)
    return colors


def _add_colors(colors: list[np.ndarray], P: np.ndarray, min_count: float, *,
                rgb: np.ndarray | None = None, stroke: np.ndarray | None = None,
                where: np.ndarray | None = None) -> None:
    """Append the stroke colours among the pixels ``P`` (m, 3) to ``colors``, greedily.

    Candidates are the means of the most populated colour bins (16 levels per channel, which
    absorbs JPEG noise) in order of population; a candidate becomes a colour if at least
    ``min_count`` pixels not yet explained lie within the merge tolerance of its shades. With
    ``rgb``/``stroke``/``where`` (``P = rgb[where]``), a candidate whose pixels mostly border
    pixels of the known colours is skipped (spatial test above).
    """
    rest = np.flatnonzero(~_explained(P, colors))
    tried = np.zeros(len(P), bool)
    while len(rest):
        Q = P[rest]
        keys = (Q[:, 0] // 16) * 256 + (Q[:, 1] // 16) * 16 + Q[:, 2] // 16
        uniq, inverse, counts = np.unique(keys, return_inverse=True, return_counts=True)
        chosen = None
        for i in np.argsort(-counts, kind="stable")[:_CANDIDATES]:
            if counts[i] < 1:
                break
            mean = Q[inverse == i].mean(axis=0)
            near = _shade_distance(Q, mean) <= _merge_tolerance(Q)
            if near.sum() < max(min_count, 1.0):
                continue
            if rgb is not None and _mostly_borders(rest[near], mean, colors, rgb, stroke,
                                                   where, tried):
                tried[rest[near]] = True       # a known colour's distorted edge
                continue
            chosen = (mean, near)
            break
        if chosen is None:
            return
        mean, near = chosen
        # Full-strength colour: the mean of its brightest pixels (a thin anti-aliased stroke
        # may have more edge than core pixels, so its commonest bin can be a shade).
        mine = Q[near]
        t = mine @ (mean / np.linalg.norm(mean))
        colors.append(mine[t >= 0.9 * np.percentile(t, 99)].mean(axis=0))
        if len(colors) > MAX_LABEL:
            raise InvalidInputError(
                f"more than {MAX_LABEL} distinct stroke colours (a photo, or not strokes on "
                f"black?); use at most {MAX_LABEL} solid colours on black or transparency")
        rest = np.flatnonzero(~_explained(P, colors) & ~tried)


def _mostly_borders(members: np.ndarray, mean: np.ndarray, colors: list[np.ndarray],
                    rgb: np.ndarray, stroke: np.ndarray, where: np.ndarray,
                    absorbed: np.ndarray) -> bool:
    """Whether most of the pixels ``members`` (indices into ``rgb[where]``, colour ``mean``)
    lie within two pixels of stroke pixels of a known colour not far from ``mean`` (within twice the
    merge tolerance: JPEG shifts a colour, it does not replace it) or of an edge already
    ``absorbed`` (the halo of a stroke is found one colour bin at a time)."""
    similar = [c for c in colors
               if _shade_distance(mean[None], c)[0] <= 2 * _merge_tolerance(mean[None])[0]]
    if not similar and not absorbed.any():
        return False
    known = np.zeros(stroke.shape, bool)   # bright pixels only: dim ones are near every colour
    known[where] = _explained(rgb[where].astype(np.float64), similar) | absorbed
    grown = known.copy()
    for _ in range(_BORDER_REACH):      # square neighbourhoods: 8-adjacency, repeated
        g = grown.copy()
        g[1:] |= grown[:-1]
        g[:-1] |= grown[1:]
        grown = g.copy()
        grown[:, 1:] |= g[:, :-1]
        grown[:, :-1] |= g[:, 1:]
    ys, xs = np.nonzero(where)
    return float(np.mean(grown[ys[members], xs[members]])) > _BORDER_SHARE


def _merge_tolerance(P: np.ndarray) -> np.ndarray:
    """How far a pixel may lie from a colour's shades and still be that colour: relative to
    its brightness (a stroke's dim edge is as far from a similar colour's shades as its
    brightness is) plus a few levels of rounding."""
    return _MERGE_RELATIVE * np.linalg.norm(P, axis=1) + _MERGE_ABSOLUTE


def _explained(P: np.ndarray, colors: list[np.ndarray]) -> np.ndarray:
    """Colours within the merge tolerance of a known colour's shades."""
    out = np.zeros(len(P), bool)
    for c in colors:
        out |= _shade_distance(P, c) <= _merge_tolerance(P)
    return out


def _interior(rgb: np.ndarray, stroke: np.ndarray) -> np.ndarray:
    """Stroke pixels whose 8 neighbours are stroke pixels of nearly the same colour.

    Anti-aliasing and JPEG's chroma subsampling and ringing change the colours of a stroke's
    edge, its interior keeps the painted colour: the stroke colours are read there.
    """
    H, W = stroke.shape
    inner = stroke.copy()
    inner[0, :] = inner[-1, :] = False
    inner[:, 0] = inner[:, -1] = False
    idx = np.flatnonzero(inner)              # only stroke pixels: O(strokes), not O(image)
    flat = rgb.reshape(-1, 3).astype(np.int16)
    flat_stroke = stroke.ravel()
    keep = np.ones(idx.size, bool)
    c = flat[idx]
    for off in (-W - 1, -W, -W + 1, -1, 1, W - 1, W, W + 1):
        nb = idx + off
        keep &= flat_stroke[nb] & (np.abs(flat[nb] - c).max(axis=1) <= _INTERIOR_TOLERANCE)
    out = np.zeros(H * W, bool)
    out[idx[keep]] = True
    return out.reshape(H, W)


def _shade_distance(P: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Distance of colours ``P`` (m, 3) from the *shades* of colour ``c``.

    The shades are the cone ``{t·((1 − u)·c + u·ḡ) : t ≥ 0, 0 ≤ u ≤ 0.3}`` with ``ḡ`` the grey
    of c's mean: c blended with a black background (anti-aliased edges, ``u = 0``) and up to
    30% desaturated (JPEG's chroma subsampling and quantisation). 0.3 keeps the palette's
    colours out of each other's cones (closest: orange to yellow's, 41 > the 32 tolerance).
    """
    a = np.asarray(c, np.float64)
    b = (1.0 - _DESATURATION) * a + _DESATURATION * a.mean()
    pp = np.einsum("ij,ij->i", P, P)
    pa, pb = P @ a, P @ b
    aa, ab, bb = a @ a, a @ b, b @ b
    # nearest point on either edge ray: |p|² − max(p·v, 0)² / |v|²
    d2 = pp - np.maximum(pa, 0.0) ** 2 / max(aa, 1e-12)
    det = aa * bb - ab * ab
    if det > 1e-9 * aa * bb:            # a proper cone (not grey): its inside is the plane's
        ca = (bb * pa - ab * pb) / det
        cb = (aa * pb - ab * pa) / det
        inside = (ca >= 0) & (cb >= 0)
        d2 = np.minimum(d2, pp - np.maximum(pb, 0.0) ** 2 / bb)
        d2 = np.where(inside, pp - (ca * pa + cb * pb), d2)
    return np.sqrt(np.maximum(d2, 0.0))


def _color_ids(colors: list[np.ndarray], nearest: np.ndarray, ok: np.ndarray) -> np.ndarray:
    """Label id per dominant colour: its palette entry if every colour has a distinct one
    within tolerance, else 1..n by first appearance (``nearest`` is in raster order)."""
    C = np.array(colors)
    dist = np.linalg.norm(C[:, None, :] - PALETTE[None, :, :].astype(float), axis=2)
    entry = dist.argmin(axis=1)
    if np.all(dist[np.arange(len(C)), entry] <= _COLOR_TOLERANCE) \
            and len(set(entry.tolist())) == len(C):
        return (entry + 1).astype(np.int32)
    first = np.array([np.flatnonzero(ok & (nearest == j))[:1].tolist() or [len(nearest)]
                      for j in range(len(C))]).ravel()
    ids = np.empty(len(C), np.int32)
    ids[np.argsort(first, kind="stable")] = np.arange(1, len(C) + 1)
    return ids


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
    return write_pngs_atomic([(path, array)], overwrite)[0]


def write_pngs_atomic(items: Sequence[tuple[PathLike, np.ndarray]],
                      overwrite: bool = True) -> list[Path]:
    """Write several PNGs as one set: all of them, or (as far as the OS allows) none.

    Every array is validated and encoded into a temporary file next to its destination first;
    only when all of them are complete are they renamed into place (renames within a
    directory do not fail for lack of space). Any failure before that removes every temporary
    file and leaves all destinations untouched. Should a rename fail, the error says which
    files were written and which were not.

    Parameters
    ----------
    items : sequence of (path, array)
        Destinations (distinct) and their data, as for :func:`write_png_atomic`.
    overwrite : bool, optional
        If False and a destination exists, nothing is written (FileExistsError).

    Returns
    -------
    list of pathlib.Path
        The written paths, in order.
    """
    dests = [Path(p) for p, _ in items]
    if len({os.path.abspath(d) for d in dests}) != len(dests):
        raise InvalidInputError("the same output file is given twice: "
                                + ", ".join(str(d) for d in dests))
    images = [_to_pil(a) for _, a in items]  # validate everything before touching the disk
    for p in dests:
        check_writable(p, overwrite)
    staged: list[Path] = []
    try:
        for p, img in zip(dests, images):
            staged.append(_stage(p, lambda fh, img=img: img.save(fh, format="PNG")))
    except BaseException:
        _discard(staged)
        raise
    written: list[Path] = []
    for i, (p, tmp) in enumerate(zip(dests, staged)):
        try:
            _publish(tmp, p, overwrite)
        except OSError as exc:
            _discard(staged[i:])
            done = f"wrote {', '.join(map(str, written))}; " if written else ""
            rest = [str(d) for d in dests[i + 1:]]
            missing = f"; not written: {', '.join(rest)}" if rest else ""
            if isinstance(exc, FileExistsError) and not overwrite:
                raise FileExistsError(f"{done}cannot write {p}: file exists (overwrite not "
                                      f"allowed){missing}") from exc
            raise _os_error(exc, f"{done}cannot write {p}: {_reason(exc)}{missing}") from exc
        written.append(p)
        _fsync_directory(p.parent)
    return written


def check_writable(path: PathLike, overwrite: bool = True) -> None:
    """Raise the OSError writing ``path`` would raise, without writing it.

    The directory must exist and accept a new file (a temporary file is created and removed:
    permission bits alone miss read-only mounts and ACLs); ``path`` must not be a directory,
    nor exist when ``overwrite`` is False.
    """
    p = Path(path)
    directory = p.parent
    if not directory.is_dir():
        raise FileNotFoundError(f"cannot write {p}: directory {directory} does not exist")
    if p.is_dir():
        raise IsADirectoryError(f"cannot write {p}: it is a directory")
    if not overwrite and p.exists():
        raise FileExistsError(f"cannot write {p}: file exists (overwrite not allowed)")
    try:
        fd, tmp = _create_temp(directory, p.name)
    except OSError as exc:
        raise _os_error(exc, f"cannot write {p}: {_reason(exc)}") from exc
    os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(tmp)


def write_bytes_atomic(path: PathLike, data: bytes, overwrite: bool = True) -> Path:
    """Write ``data`` so that ``path`` is either the old file or the complete new one.

    Same guarantees and errors as :func:`write_png_atomic` (the app uses it for its session
    and recovery files).
    """
    p = Path(path)
    check_writable(p, overwrite)
    tmp = _stage(p, lambda fh: fh.write(data))
    try:
        _publish(tmp, p, overwrite)
    except OSError as exc:
        _discard([tmp])
        if isinstance(exc, FileExistsError) and not overwrite:
            raise FileExistsError(f"cannot write {p}: file exists (overwrite not allowed)") from exc
        raise _os_error(exc, f"cannot write {p}: {_reason(exc)}") from exc
    _fsync_directory(p.parent)
    return p


def _stage(p: Path, write: Callable[[BinaryIO], object]) -> Path:
    """``write(fh)`` into a new temporary file next to ``p``, fsync'ed; returns its path."""
    tmp: Path | None = None
    try:
        fd, tmp = _create_temp(p.parent, p.name)
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        return tmp
    except OSError as exc:
        _discard([tmp] if tmp is not None else [])
        raise _os_error(exc, f"cannot write {p}: {_reason(exc)}") from exc
    except Exception as exc:  # an encoder failure is about the data, not the disk
        _discard([tmp] if tmp is not None else [])
        raise InvalidInputError(f"cannot write {p}: {_describe(exc)}") from exc


def _discard(paths: Sequence[Path]) -> None:
    for t in paths:
        with contextlib.suppress(OSError):
            os.unlink(t)


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
