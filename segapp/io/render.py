# Over 400 lines on purpose: the app's view and the exports draw with these same functions.
"""Turn arrays into pictures: label overlays, scribble overlays and diverging heat maps.

Everything here is plain numpy (plus ``skimage.segmentation.find_boundaries``) and returns
``uint8`` RGB arrays of shape ``(H, W, 3)``, so the GUI, the CLI and the benchmarks can show or
save them without matplotlib or Qt.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Union

import numpy as np

from ..errors import InvalidInputError
from ..inputs.checks import check_label_map

__all__ = [
    "PALETTE",
    "MORE_COLORS",
    "MAX_LABEL_ID",
    "default_color",
    "default_colors",
    "BACKGROUND_COLOR",
    "label_color",
    "to_rgb8",
    "overlay",
    "label_layer",
    "label_rgba",
    "paint_layer",
    "overlay_opacity",
    "composite",
    "scribble_overlay",
    "robust_vmax",
    "heatmap",
    "colorbar",
    "heatmap_with_colorbar",
]

#: Label colours, label id ``i`` -> ``PALETTE[i - 1]`` (uint8 RGB, shape ``(9, 3)``).
#: The first seven are the Okabe-Ito colour-blind-safe set without black (black is the
#: "unlabelled" colour of scribble files); 8 and 9 come from Paul Tol's colour-blind-safe sets.
#: The order puts the most distinct hues first, since most sessions use 2-4 labels.
PALETTE: np.ndarray = np.array(
    [
        (230, 159, 0),  # 1 orange
        (86, 180, 233),  # 2 sky blue
        (0, 158, 115),  # 3 bluish green
        (204, 121, 167),  # 4 reddish purple
        (0, 114, 178),  # 5 blue
        (213, 94, 0),  # 6 vermillion
        (240, 228, 66),  # 7 yellow
        (51, 34, 136),  # 8 indigo (Tol)
        (187, 187, 187),  # 9 light grey (Tol)
    ],
    dtype=np.uint8,
)
PALETTE.setflags(write=False)

#: Colours of label ids 10..32, after :data:`PALETTE`: picked one at a time from a 6-level RGB
#: grid (no near-black colour: black is "unlabelled" in scribble files), each the farthest
#: from those before it. Any two of the 32 lie at least 67 apart (Euclidean RGB), beyond the
#: 48 within which :func:`segapp.io.read_scribbles` takes a stroke colour for a label's.
MORE_COLORS: np.ndarray = np.array(
    [(51, 255, 0), (153, 0, 255), (102, 0, 0), (255, 0, 102), (0, 0, 255), (0, 102, 0),
     (102, 153, 51), (255, 255, 255), (0, 255, 204), (102, 255, 102), (255, 51, 255),
     (153, 51, 102), (153, 102, 255), (153, 255, 0), (153, 255, 255), (255, 0, 0),
     (255, 153, 255), (0, 255, 102), (255, 255, 153), (51, 102, 255), (102, 51, 204),
     (102, 153, 153), (255, 102, 102)],
    dtype=np.uint8,
)
MORE_COLORS.setflags(write=False)

#: The largest label id an 8-bit label map (and an indexed PNG) holds.
MAX_LABEL_ID = 255
_DEFAULT_COLORS: np.ndarray | None = None


def default_colors() -> np.ndarray:
    """The default colour of every label id: ``(MAX_LABEL_ID + 1, 3)`` uint8, row ``i`` for
    label ``i`` (row 0, unlabelled, black). Ids 1..9 take :data:`PALETTE`, 10..32
    :data:`MORE_COLORS`; later ids continue the farthest-colour picking on an 8-level grid."""
    global _DEFAULT_COLORS
    if _DEFAULT_COLORS is None:
        chosen = np.concatenate([PALETTE, MORE_COLORS]).astype(np.float64)
        levels = np.linspace(0, 255, 8).round()
        grid = np.stack(np.meshgrid(levels, levels, levels, indexing="ij"), -1).reshape(-1, 3)
        grid = grid[grid.max(axis=1) >= 100]
        nearest = np.linalg.norm(grid[:, None] - chosen[None], axis=2).min(axis=1)
        picks = [chosen]
        for _ in range(MAX_LABEL_ID - len(chosen)):
            k = int(nearest.argmax())
            picks.append(grid[k][None])
            nearest = np.minimum(nearest, np.linalg.norm(grid - grid[k], axis=1))
        table = np.zeros((MAX_LABEL_ID + 1, 3), np.uint8)
        table[1:] = np.concatenate(picks).astype(np.uint8)
        table.setflags(write=False)
        _DEFAULT_COLORS = table
    return _DEFAULT_COLORS


def default_color(label: int) -> tuple[int, int, int]:
    """The default colour of label id ``label`` (1..:data:`MAX_LABEL_ID`), see
    :func:`default_colors`."""
    if not 1 <= int(label) <= MAX_LABEL_ID:
        raise InvalidInputError(f"label ids are 1..{MAX_LABEL_ID}, got {label}")
    return tuple(int(c) for c in default_colors()[int(label)])  # type: ignore[return-value]

#: Colour of unlabelled pixels in scribble files (see :func:`segapp.io.read_scribbles`).
BACKGROUND_COLOR: tuple[int, int, int] = (0, 0, 0)

ColorSpec = Union[Sequence, Mapping, np.ndarray, None]

# Diverging blue-white-red map: ColorBrewer RdBu (9 classes), reversed so negative = blue.
_DIVERGING = np.array(
    [
        (33, 102, 172),
        (67, 147, 195),
        (146, 197, 222),
        (209, 229, 240),
        (247, 247, 247),
        (253, 219, 199),
        (244, 165, 130),
        (214, 96, 77),
        (178, 24, 43),
    ],
    dtype=np.float64,
)
_NONFINITE_COLOR = np.array((128, 128, 128), dtype=np.uint8)

#: Pixels per band of the whole-image functions below. One numpy call over a 12 MP image
#: holds the GIL for 50-100 ms, which freezes the desktop app's GUI thread while an export
#: draws in a background thread; band by band, no single call holds it for more than a few ms.
BAND_PIXELS = 1 << 20


def _row_bands(height: int, width: int) -> list[tuple[int, int]]:
    step = max(1, BAND_PIXELS // max(int(width), 1))
    return [(r, min(int(height), r + step)) for r in range(0, int(height), step)]
_TICK_COLOR = np.array((40, 40, 40), dtype=np.uint8)


# --------------------------------------------------------------------------------------------
# colours and images
# --------------------------------------------------------------------------------------------
def label_color(label: int, colors: ColorSpec = None) -> np.ndarray:
    """Return the uint8 RGB colour of label id ``label`` (``>= 1``).

    Parameters
    ----------
    label : int
        Label id, 1-based.
    colors : sequence of RGB, (n, 3) array, mapping {label id: RGB} or None
        Colour table; ``None`` means each label's :func:`default_color`. Sequences are indexed
        by ``label - 1`` and cycle when there are more labels than colours.

    Returns
    -------
    numpy.ndarray
        ``(3,)`` uint8.
    """
    return _color_table(colors, int(label))[int(label)]


def _as_rgb_triplet(color: object) -> np.ndarray:
    """One colour -> (3,) uint8; floats all in [0, 1] are taken as fractions of 255."""
    arr = np.asarray(color)
    if arr.shape != (3,) or not np.issubdtype(arr.dtype, np.number):
        raise InvalidInputError(f"a colour must be an RGB triplet, got {color!r}")
    if np.issubdtype(arr.dtype, np.floating) and arr.min() >= 0 and arr.max() <= 1:
        arr = arr * 255.0
    return np.clip(np.rint(arr), 0, 255).astype(np.uint8)


def _color_table(colors: ColorSpec, max_label: int) -> np.ndarray:
    """Lookup table ``(max_label + 1, 3)`` uint8 with row ``i`` = colour of label ``i``.

    Row 0 (unlabelled) is unused and left black.
    """
    table = np.zeros((max(max_label, 0) + 1, 3), dtype=np.uint8)
    if colors is None or isinstance(colors, Mapping):
        defaults = default_colors()
        for lab in range(1, max_label + 1):
            # Labels missing from the mapping take their default colour: nothing is invisible.
            fallback = defaults[(lab - 1) % MAX_LABEL_ID + 1]
            table[lab] = (_as_rgb_triplet(colors[lab]) if colors is not None and lab in colors
                          else fallback)
        return table
    seq = [_as_rgb_triplet(c) for c in colors]
    if not seq:
        raise InvalidInputError("the colour table is empty")
    for lab in range(1, max_label + 1):
        table[lab] = seq[(lab - 1) % len(seq)]
    return table


def to_rgb8(image: np.ndarray) -> np.ndarray:
    """Convert an image to a displayable uint8 RGB array.

    Parameters
    ----------
    image : numpy.ndarray
        ``(H, W)`` grey or ``(H, W, 3|4)`` colour; uint8, uint16, bool or float in [0, 1]
        (floats are clipped; alpha is dropped).

    Returns
    -------
    numpy.ndarray
        ``(H, W, 3)`` uint8 (a new array).
    """
    img = np.asarray(image)
    if img.ndim == 3 and img.shape[2] == 4:
        img = img[..., :3]
    if not (img.ndim == 2 or (img.ndim == 3 and img.shape[2] == 3)):
        raise InvalidInputError(f"image must be (H, W) or (H, W, 3), got shape {img.shape}")
    if not (img.dtype == np.bool_ or np.issubdtype(img.dtype, np.integer)
            or np.issubdtype(img.dtype, np.floating)):
        raise InvalidInputError(f"unsupported image dtype {img.dtype}")
    out = np.empty(img.shape[:2] + (3,), dtype=np.uint8)
    for r0, r1 in _row_bands(*img.shape[:2]):
        out[r0:r1] = _rgb8_band(img[r0:r1])
    return out


def _rgb8_band(img: np.ndarray) -> np.ndarray:
    if img.dtype == np.uint8:
        out = img
    elif img.dtype == np.bool_:
        out = img.astype(np.uint8) * 255
    elif img.dtype == np.uint16:
        out = (img.astype(np.float32) * (255.0 / 65535.0) + 0.5).astype(np.uint8)
    elif np.issubdtype(img.dtype, np.floating):
        f = np.nan_to_num(img.astype(np.float32), nan=0.0, posinf=1.0, neginf=0.0)
        out = (np.clip(f, 0.0, 1.0) * 255.0 + 0.5).astype(np.uint8)
    else:  # other integers
        out = np.clip(img, 0, 255).astype(np.uint8)
    return out[:, :, None] if out.ndim == 2 else out


# --------------------------------------------------------------------------------------------
# overlays
# --------------------------------------------------------------------------------------------
def overlay_opacity(alpha: float, boundaries: bool) -> float:
    """Opacity with which :func:`label_layer` is laid over the image.

    Filled regions use ``alpha``; boundaries are drawn opaque (thin lines at 50 % are hard to
    see). The app's canvas and :func:`overlay` both take the opacity from here, so what is
    shown and what is exported cannot differ.
    """
    a = float(alpha)
    if not 0.0 <= a <= 1.0:
        raise InvalidInputError(f"alpha must be in [0, 1], got {alpha}")
    return 1.0 if boundaries else a


#: Pixels whose confidence is below this are marked by :func:`mark_unsure` (the area the
#: "where to paint next" robot of benchmarks/quality.py strokes).
UNSURE_BELOW = 0.5
#: The mark: magenta and black diagonal stripes, 4 px each, visible over every palette colour.
UNSURE_COLORS = np.array([[255, 0, 255, 255], [0, 0, 0, 255]], dtype=np.uint8)


def label_layer(labels: np.ndarray, colors: ColorSpec = None,
                boundaries: bool = False) -> np.ndarray:
    """The colour layer of a label map: RGBA, opaque where coloured, transparent elsewhere.

    Parameters
    ----------
    labels : numpy.ndarray
        ``(H, W)`` integer label map; 0 is left transparent.
    colors : optional
        Colour table, see :func:`label_color`; default :data:`PALETTE`.
    boundaries : bool, optional
        Colour only the region boundaries: ``find_boundaries(mode="inner")`` marks the pixels
        of each region next to a different label, so a boundary between two regions shows
        both colours and label 0 is never painted.

    Returns
    -------
    numpy.ndarray
        ``(H, W, 4)`` uint8; :func:`composite` lays it over an image with
        :func:`overlay_opacity` (the app's canvas does the same with Qt).
    """
    lab = check_label_map(labels, None, "label map", keep_dtype=True)
    # One 4-byte word per label: one gather per pixel instead of four (0.12 -> 0.03 s at 12 MP).
    words = label_rgba(colors, int(lab.max()) if lab.size else 0).view(np.uint32).ravel()
    h, w = lab.shape
    out = np.empty((h, w, 4), dtype=np.uint8)
    paint_layer(out.view(np.uint32).reshape(h, w), lab, words, boundaries)
    return out


def label_rgba(colors: ColorSpec, max_label: int) -> np.ndarray:
    """``(max_label + 1, 4)`` uint8: each label's colour, opaque; label 0 transparent."""
    table = _color_table(colors, max_label)
    rgba = np.zeros((len(table), 4), dtype=np.uint8)
    rgba[:, :3] = table
    rgba[1:, 3] = 255
    return rgba


def paint_layer(out: np.ndarray, labels: np.ndarray, words: np.ndarray,
                boundaries: bool = False, *, hatch: int = 0,
                confidence: np.ndarray | None = None, unsure_words: np.ndarray | None = None,
                below: float = UNSURE_BELOW) -> None:
    """Fill ``out`` (``(H, W)`` uint32) with ``words[labels]`` band by band: the one drawing
    of a label layer, in whatever byte order ``words`` are (:func:`label_layer`'s RGBA, the
    app's premultiplied ARGB32, drawn straight into its ``QImage``).

    Then, as :func:`label_layer` with ``boundaries``, then :func:`mark_preview` (``hatch``
    > 0: every other diagonal band of that width set to 0, a transparent word in both byte
    orders) or :func:`mark_unsure` (``confidence`` given: the pixels below ``below`` set to
    the two ``unsure_words`` in stripes). Labels beyond ``words`` take its last word.
    """
    h, w = labels.shape
    for r0, r1 in _row_bands(h, w):
        band = out[r0:r1]
        np.take(words, labels[r0:r1], out=band, mode="clip")
        if boundaries:
            band[~_boundary_band(labels, r0, r1)] = 0
        if hatch:
            np.copyto(band, 0, where=_hatch_band(r0, r1, w, hatch))
        elif confidence is not None and unsure_words is not None:
            ys, xs, stripe = _unsure_band(confidence, r0, r1, below)
            band[ys, xs] = unsure_words[stripe]


def _boundary_band(labels: np.ndarray, r0: int, r1: int) -> np.ndarray:
    """Rows ``r0:r1`` of ``find_boundaries(labels, mode="inner") & (labels > 0)``."""
    from skimage.segmentation import find_boundaries

    a0, a1 = max(0, r0 - 1), min(labels.shape[0], r1 + 1)  # the 3×3 test: a row either side
    halo = labels[a0:a1]
    edge = find_boundaries(halo, mode="inner", background=0) & (halo > 0)
    return edge[r0 - a0:r1 - a0]


def _hatch_band(r0: int, r1: int, width: int, hatch: int) -> np.ndarray:
    """Rows ``r0:r1`` (of an image ``width`` wide) of the hatching's gaps,
    ``((x + y) // hatch) % 2 == 1``: a read-only view of one diagonal (each row is the one
    above shifted by a pixel), no per-pixel arithmetic (0.15 → 0.01 s at 12 MP)."""
    base = ((np.arange(r0, r1 + width) // hatch) % 2 == 1)
    step = base.strides[0]
    return np.lib.stride_tricks.as_strided(base, (r1 - r0, width), (step, step),
                                           writeable=False)


def _unsure_band(confidence: np.ndarray, r0: int, r1: int,
                 below: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows ``r0:r1``: the pixels below ``below`` (their rows within the band, columns) and
    which of the two stripes each is in (4 px diagonal stripes)."""
    ys, xs = np.nonzero(np.asarray(confidence[r0:r1]) < below)
    return ys, xs, ((xs + ys + r0) // 4) % 2


def mark_unsure(layer: np.ndarray, confidence: np.ndarray | None,
                below: float = UNSURE_BELOW) -> np.ndarray:
    """``layer`` (RGBA, in place) striped where ``confidence < below``: where to paint next.

    ``confidence`` is :attr:`segapp.Segmentation.confidence` (None: nothing is marked).
    """
    if confidence is None:
        return layer
    h, w = layer.shape[:2]
    for r0, r1 in _row_bands(h, w):
        ys, xs, stripe = _unsure_band(confidence, r0, r1, below)
        layer[r0:r1][ys, xs] = UNSURE_COLORS[stripe]
    return layer


#: A coarse preview (``Session.update``'s ``preview``) is drawn hatched: diagonal bands of this
#: many pixels alternate between the labels' colours and nothing, so that it cannot be taken
#: for the answer that replaces it (issue 22 item 5: on 12 MP photos 93–99% of the pixels of
#: the first preview agree with the answer, ``python benchmarks/preview.py``).
PREVIEW_HATCH = 6


def mark_preview(layer: np.ndarray, width: int = PREVIEW_HATCH) -> np.ndarray:
    """``layer`` (RGBA, in place) hatched: every other diagonal band of ``width`` px cleared.

    The colours of the kept bands are unchanged, so the preview still shows its labels.
    """
    h, w = layer.shape[:2]
    for r0, r1 in _row_bands(h, w):
        layer[r0:r1, :, 3][_hatch_band(r0, r1, w, width)] = 0
    return layer


def composite(rgb: np.ndarray, layer: np.ndarray, opacity: float) -> np.ndarray:
    """Source-over blend of an RGBA layer (straight alpha) at ``opacity`` over uint8 RGB.

    ``out = (1 − a) · rgb + a · colour`` with ``a = opacity × layer alpha / 255``, rounded:
    what a painter draws for an RGBA image at that opacity.
    """
    out = np.array(rgb, dtype=np.uint8, copy=True)
    for r0, r1 in _row_bands(*out.shape[:2]):
        o, lay = out[r0:r1], layer[r0:r1]
        mask = lay[..., 3] > 0
        a = (float(opacity) / 255.0) * lay[..., 3][mask].astype(np.float64)[:, None]
        blended = (1.0 - a) * o[mask] + a * lay[..., :3][mask]
        o[mask] = (blended + 0.5).astype(np.uint8)
    return out


def overlay(
    image: np.ndarray,
    labels: np.ndarray,
    alpha: float = 0.5,
    colors: ColorSpec = None,
    boundaries: bool = False,
) -> np.ndarray:
    """Colour a label map over an image: :func:`label_layer` composited at
    :func:`overlay_opacity`.

    Parameters
    ----------
    image : numpy.ndarray
        ``(H, W)`` grey (shown as grey RGB) or ``(H, W, 3)`` colour image, see :func:`to_rgb8`.
    labels : numpy.ndarray
        ``(H, W)`` integer label map; 0 is left uncoloured.
    alpha : float, optional
        Opacity of the label colours in ``[0, 1]`` when filling regions.
    colors : optional
        Colour table, see :func:`label_color`; default :data:`PALETTE`.
    boundaries : bool, optional
        If True, only the region boundaries are drawn, opaque, each boundary pixel in the
        colour of the region it belongs to.

    Returns
    -------
    numpy.ndarray
        ``(H, W, 3)`` uint8.
    """
    opacity = overlay_opacity(alpha, boundaries)
    rgb = to_rgb8(image)
    check_label_map(labels, rgb.shape[:2], "label map", keep_dtype=True)
    return composite(rgb, label_layer(labels, colors, boundaries), opacity)


def scribble_overlay(image: np.ndarray, scribbles: np.ndarray,
                     colors: ColorSpec = None) -> np.ndarray:
    """Draw scribble strokes opaque over an image.

    Parameters
    ----------
    image : numpy.ndarray
        ``(H, W)`` or ``(H, W, 3)`` image, see :func:`to_rgb8`.
    scribbles : numpy.ndarray
        ``(H, W)`` integer map, 0 = unlabelled, 1..9 = label ids.
    colors : optional
        Colour table, see :func:`label_color`; default :data:`PALETTE`.

    Returns
    -------
    numpy.ndarray
        ``(H, W, 3)`` uint8.
    """
    return overlay(image, scribbles, alpha=1.0, colors=colors, boundaries=False)


# --------------------------------------------------------------------------------------------
# heat maps
# --------------------------------------------------------------------------------------------
def robust_vmax(values: np.ndarray) -> float:
    """Symmetric colour range of a heat map: the 99th percentile of ``|v|`` over the finite
    values (robust to a few spikes); the maximum if that is 0; 1 if there is nothing finite."""
    values = np.asarray(values, dtype=np.float64)
    finite = np.abs(values[np.isfinite(values)])
    if finite.size == 0:
        return 1.0
    vmax = float(np.percentile(finite, 99.0))
    if vmax <= 0.0:  # e.g. a vector that is zero except for a few spikes
        vmax = float(finite.max())
    return vmax if vmax > 0.0 else 1.0


def _check_vmax(vmax: float) -> float:
    v = float(vmax)
    if not np.isfinite(v) or v <= 0.0:
        raise InvalidInputError(f"vmax must be a positive finite number, got {vmax}")
    return v


def _diverging(t: np.ndarray) -> np.ndarray:
    """Map ``t`` in [-1, 1] (clipped) to uint8 RGB by interpolating the control points."""
    pos = np.linspace(-1.0, 1.0, len(_DIVERGING))
    tc = np.clip(t, -1.0, 1.0)
    out = np.empty(t.shape + (3,), dtype=np.uint8)
    for c in range(3):
        out[..., c] = (np.interp(tc, pos, _DIVERGING[:, c]) + 0.5).astype(np.uint8)
    return out


def heatmap(vector2d: np.ndarray, vmax: float | None = None) -> np.ndarray:
    """Show a signed 2-D field (e.g. an eigenvector) with a blue-white-red colour map.

    Parameters
    ----------
    vector2d : numpy.ndarray
        ``(H, W)`` real values.
    vmax : float, optional
        Value shown fully red (``-vmax`` fully blue, 0 white); larger magnitudes saturate.
        Default: the 99th percentile of ``|v|``, robust to a few extreme pixels.

    Returns
    -------
    numpy.ndarray
        ``(H, W, 3)`` uint8; non-finite values are mid grey.
    """
    v = np.asarray(vector2d)
    if v.ndim != 2 or not (np.issubdtype(v.dtype, np.number) or v.dtype == np.bool_):
        raise InvalidInputError(f"heatmap needs a real (H, W) array, got shape {v.shape}")
    if np.iscomplexobj(v):
        raise InvalidInputError("heatmap needs real values, got a complex array")
    vmax = robust_vmax(v) if vmax is None else _check_vmax(vmax)
    out = np.empty(v.shape + (3,), dtype=np.uint8)
    for r0, r1 in _row_bands(*v.shape):
        band = v[r0:r1].astype(np.float64)
        finite = np.isfinite(band)
        rgb = _diverging(np.where(finite, band, 0.0) / vmax)
        rgb[~finite] = _NONFINITE_COLOR
        out[r0:r1] = rgb
    return out


def _nice_step(vmax: float) -> float:
    """A 1/2/5 x 10^k tick step giving two to five ticks between 0 and ``vmax``."""
    raw = vmax / 3.0
    exp = np.floor(np.log10(raw))
    for m in (1.0, 2.0, 5.0, 10.0):
        if m * 10.0 ** exp >= raw:
            return float(m * 10.0 ** exp)
    return float(10.0 ** (exp + 1))  # pragma: no cover - unreachable


def colorbar(height: int, width: int, vmax: float = 1.0, ticks: bool = True) -> np.ndarray:
    """Vertical colour bar for :func:`heatmap`: ``+vmax`` (red) at the top, ``-vmax`` at the bottom.

    Parameters
    ----------
    height, width : int
        Size in pixels (``height >= 2``, ``width >= 1``).
    vmax : float, optional
        The value at the top end (the scale is symmetric about 0).
    ticks : bool, optional
        Draw short dark tick marks at the edges at "nice" values (multiples of 1, 2 or 5 x 10^k,
        including 0) so the strip can be read without text.

    Returns
    -------
    numpy.ndarray
        ``(height, width, 3)`` uint8.
    """
    height, width = int(height), int(width)
    if height < 2 or width < 1:
        raise InvalidInputError(f"colour bar must be at least 2x1 pixels, got {height}x{width}")
    vmax = _check_vmax(vmax)
    t = np.linspace(1.0, -1.0, height)  # row 0 = +vmax
    bar = np.repeat(_diverging(t)[:, None, :], width, axis=1)
    if ticks and width >= 4:
        step = _nice_step(vmax)
        n = int(np.floor(vmax / step + 1e-9))
        tick_len = max(1, width // 4)
        for k in range(-n, n + 1):
            row = int(round((1.0 - k * step / vmax) * (height - 1) / 2.0))
            bar[row, :tick_len] = _TICK_COLOR
            bar[row, width - tick_len:] = _TICK_COLOR
    return bar


def heatmap_with_colorbar(vector2d: np.ndarray, vmax: float | None = None,
                          bar_width: int = 16, gap: int = 6) -> np.ndarray:
    """:func:`heatmap` with a :func:`colorbar` of the same height to its right (white gap).

    Returns
    -------
    numpy.ndarray
        ``(H, W + gap + bar_width, 3)`` uint8.
    """
    v = np.asarray(vector2d)
    if vmax is None and v.ndim == 2 and np.issubdtype(v.dtype, np.number):
        vmax = robust_vmax(v.astype(np.float64))
    img = heatmap(v, vmax)
    h, w = img.shape[:2]
    out = np.full((h, w + gap + bar_width, 3), 255, dtype=np.uint8)
    out[:, :w] = img
    if h >= 2:
        out[:, w + gap:] = colorbar(h, bar_width, vmax)
    return out
