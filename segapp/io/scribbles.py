"""Reading scribble files: label-id maps, or colour strokes on black / transparency.

Colour strokes are read by their painted colours: anti-aliased edges and JPEG noise belong
to the stroke they border, so a stroke saved as JPEG keeps one label per colour.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from PIL import Image

from ..errors import InvalidInputError
from ..inputs.checks import check_label_map
from .render import MAX_LABEL_ID, PALETTE
from .opening import (_GREY_16BIT_MODES, DEFAULT_PIXEL_LIMIT, PathLike, _as_path, _describe,
                      _open_image)

#: Largest label id read from a scribble file unless a label schema says more
#: (``max_label``): the palette's colours, the app's keys 1..9. Greyscale values above it are
#: not label ids (a photo, or strokes saved as grey).
DEFAULT_MAX_LABEL = len(PALETTE)

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
# Largest share of stroke (not black, not transparent) pixels in a scribble image; more is a
# photo (the bundled samples have 83–100%, stroke files under 25%).
_MAX_STROKE_SHARE = 0.6
# Largest share of stroke pixels no stroke colour explains (blends where strokes meet, JPEG
# noise); more is a photo's many colours.
_MAX_UNEXPLAINED = 0.3
# Formats whose colours are blurred across ~2 px (chroma subsampling): thin strokes unreliable.
_LOSSY_FORMATS = frozenset({"JPEG", "MPO"})


def scribbles_for_page(path: PathLike, shape: tuple[int, ...] | None, page: int | None, *,
                       pixel_limit: int | None = DEFAULT_PIXEL_LIMIT,
                       **options: Any) -> np.ndarray:
    """The scribbles for page ``page`` of an image: that page of a scribble file with pages,
    a single-page file as it is (``segment --page``, ``batch --page``). ``options``: as for
    :func:`read_scribbles` (a label schema's ``max_label`` and ``colors``)."""
    from .opening import MultiPageError
    try:
        return read_scribbles(path, shape, pixel_limit=pixel_limit, **options)
    except MultiPageError:
        if page is None:
            raise
        return read_scribbles(path, shape, pixel_limit=pixel_limit, page=page, **options)


def read_scribbles(path: PathLike, shape: tuple[int, ...] | None = None, *,
                   pixel_limit: int | None = DEFAULT_PIXEL_LIMIT,
                   max_label: int = DEFAULT_MAX_LABEL,
                   colors: dict[int, tuple[int, int, int]] | None = None,
                   page: int | None = None) -> np.ndarray:
    """Read a scribble file as an int32 label map (0 = unlabelled, 1..9 = label ids).

    Parameters
    ----------
    path : str or os.PathLike
        A label-id image or a colour-stroke image (EXIF orientation is applied).
    shape : tuple of int, optional
        Expected image shape ``(H, W)`` or ``(H, W, C)``; only ``H, W`` are compared.
    pixel_limit : int or None
        As for :func:`read_image`.
    max_label : int
        Largest label id (default 9; a label schema's largest id, up to 255, when one is used).
    colors : dict, optional
        ``{label id: (r, g, b)}`` of a label schema: colour strokes take the id of the schema
        colour they match (instead of :data:`segapp.io.render.PALETTE`'s).
    page : int or None
        As for :func:`read_image`: a file of several pages or frames needs it.

    Returns
    -------
    numpy.ndarray
        ``(H, W)`` int32.

    Notes
    -----
    * Greyscale (``1``, ``L``, ``LA``, ``I;16``, ``I``) images: the pixel values are the label
      ids. ``LA``: fully transparent pixels are unlabelled. Palette (``P``) images whose
      indices form a label map (all ≤ 9, index 0 black or transparent, no index the
      anti-aliased edge of another's strokes) likewise use the indices; any other palette
      image is read by its colours, as below (editors order palettes as they like).
    * A photo is refused: more than 60% of its pixels are neither black nor transparent (or,
      greyscale, above 9), or more than 30% of its non-black pixels fit no stroke colour.
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
         :data:`segapp.io.render.PALETTE`, that entry's label id is used, so segapp's own colour
         exports read back with the same ids; otherwise the colours are numbered 1..n in
         order of first appearance in raster order (row by row, left to right).

      Anti-aliased PNG strokes of any width and JPEG strokes at least ~5 px wide read back
      with their number of labels (``tests/test_bad_inputs.py``). In a JPEG, a colour found
      only in strokes thinner than that (no interior) is refused with the reason: JPEG's
      chroma subsampling blurs their colours into each other's and the background's, which
      merged two painted colours into one label or made a blend a label of its own.

    Raises
    ------
    segapp.errors.InvalidInputError
        Unreadable file or not a regular file, size different from ``shape`` (the message
        gives both sizes), values outside 0..9, more than 9 stroke colours, a photo, or JPEG
        colours found only in thin strokes.
    """
    want = None if shape is None else _check_shape(shape)
    p = _as_path(path, "the scribble file")
    img = _open_image(p, what="scribble", pixel_limit=pixel_limit, page=page)
    try:
        limit = _check_max_label(max_label)
        labels = _scribble_labels(img, limit, colors)
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


def _check_max_label(max_label: object) -> int:
    if isinstance(max_label, bool) or not isinstance(max_label, (int, np.integer)) \
            or not 1 <= max_label <= MAX_LABEL_ID:
        raise InvalidInputError(f"max_label must be an integer 1..{MAX_LABEL_ID}, "
                                f"got {max_label!r}")
    return int(max_label)


def _scribble_labels(img: Image.Image, max_label: int = DEFAULT_MAX_LABEL,
                     colors: dict[int, tuple[int, int, int]] | None = None) -> np.ndarray:
    mode = img.mode
    lossy = (img.format or "").upper() in _LOSSY_FORMATS
    if mode in ("P", "PA") and not _palette_is_label_map(img, max_label):
        return _labels_from_colors(np.asarray(img.convert("RGBA")), lossy, max_label,
                                   colors)   # read by colour
    if mode in ("1", "L", "P", "I", "F") or mode in _GREY_16BIT_MODES or mode.startswith("I;"):
        values = np.asarray(img)
    elif mode in ("LA", "PA"):
        values = np.where(np.asarray(img.getchannel("A")) == 0, 0, np.asarray(img.getchannel(0)))
    else:
        rgba = np.asarray(img.convert("RGBA"))
        return _labels_from_colors(rgba, lossy, max_label, colors)
    return _check_label_values(values, max_label)


def _palette_is_label_map(img: Image.Image, max_label: int = DEFAULT_MAX_LABEL) -> bool:
    """Whether a palette image's indices are label ids (a label map with a display palette,
    as PASCAL VOC's) rather than colour strokes saved with a palette (which an editor
    orders as it likes: black need not be index 0, red may be index 190).

    Label map: every index used is at most ``max_label``, index 0, if used, is black or
    transparent (the unlabelled background), and no index is the anti-aliased edge of
    another's strokes (:func:`_edge_shade`: colour strokes quantised to a few palette entries,
    whose edge shades would otherwise be labels of their own).
    """
    idx = np.asarray(img if img.mode == "P" else img.getchannel(0))
    used = np.unique(idx)
    if used.size == 0 or int(used.max()) > max_label:
        return False
    if used[0] == 0:
        rgba = np.asarray(img.convert("RGBA"))[idx == 0]
        if not np.all((rgba[:, :3].max(axis=1) <= _BLACK_TOLERANCE) | (rgba[:, 3] == 0)):
            return False
    if img.mode != "P":      # PA: the alpha channel's mode; its colours are not checked
        return True
    palette = np.resize(np.asarray(img.getpalette() or [0, 0, 0], np.float64), (256, 3))
    inner = _uniform_interior(idx)
    labels = [int(i) for i in used if i != 0]
    return not any(_edge_shade(idx, inner, palette, i, labels) for i in labels)


def _edge_shade(idx: np.ndarray, inner: np.ndarray, palette: np.ndarray, i: int,
                labels: list[int]) -> bool:
    """Whether index ``i`` looks like the anti-aliased edge of another index's strokes: no
    interior pixel, a visible colour within the merge tolerance of a brighter used colour's
    shades, and most of its pixels next to that colour's pixels."""
    mine = idx == i
    c = palette[i]
    if inner[mine].any() or c.max() <= _BLACK_TOLERANCE:
        return False
    for j in labels:
        d = palette[j]
        if j == i or np.linalg.norm(d) <= np.linalg.norm(c):
            continue
        if _shade_distance(c[None], d)[0] <= _merge_tolerance(c[None])[0] \
                and np.mean(_grow(idx == j)[mine]) > 0.5:
            return True
    return False


def _grow(mask: np.ndarray, reach: int = 1) -> np.ndarray:
    """``mask`` dilated by ``reach`` pixels (8-adjacency: a (2·reach + 1)² square)."""
    out = mask
    for _ in range(reach):
        g = out.copy()
        g[1:] |= out[:-1]
        g[:-1] |= out[1:]
        out = g.copy()
        out[:, 1:] |= g[:, :-1]
        out[:, :-1] |= g[:, 1:]
    return out.copy() if out is mask else out


def _uniform_interior(values: np.ndarray) -> np.ndarray:
    """Pixels whose 8 neighbours all hold the same value as they do."""
    inner = np.zeros(values.shape, bool)
    if min(values.shape) < 3:
        return inner
    c = values[1:-1, 1:-1]
    same = np.ones(c.shape, bool)
    H, W = values.shape
    for dy in (-1, 0, 1):
        for dx in (-1, 0, 1):
            if dy or dx:
                same &= values[1 + dy:H - 1 + dy, 1 + dx:W - 1 + dx] == c
    inner[1:-1, 1:-1] = same
    return inner


def _check_label_values(values: np.ndarray, max_label: int = DEFAULT_MAX_LABEL) -> np.ndarray:
    """A label-id image's values as an int32 label map (:func:`check_label_map`; ids above
    ``max_label`` are refused here, saying whether the file looks like a photo)."""
    v = check_label_map(values, None, "scribble values", keep_dtype=True)
    hi = int(v.max()) if v.size else 0
    if hi > max_label:
        share = float(np.mean(v > max_label))
        if share > _MAX_STROKE_SHARE:
            raise InvalidInputError(
                f"{share:.0%} of the pixels are above {max_label}: this looks like a photo, "
                f"not scribbles (label ids 0..{max_label}, or colour strokes on black or "
                "transparency)")
        more = (f"; ids up to {MAX_LABEL_ID} need a label schema that names them (--labels "
                "SCHEMA.json on the command line, max_label= here)"
                if max_label == DEFAULT_MAX_LABEL and hi <= MAX_LABEL_ID else "")
        raise InvalidInputError(
            f"scribble values must be label ids 0..{max_label}, found {hi} (is this a colour "
            f"stroke image saved as greyscale? draw labels with values 1..{max_label}{more})")
    return v.astype(np.int32)


def _labels_from_colors(rgba: np.ndarray, lossy: bool = False,
                        max_label: int = DEFAULT_MAX_LABEL,
                        palette: dict[int, tuple[int, int, int]] | None = None) -> np.ndarray:
    """Label map from an ``(H, W, 4)`` uint8 colour-stroke image (rules in read_scribbles);
    ``lossy``: the file was a JPEG (colours blurred across ~2 px)."""
    rgb = rgba[..., :3]
    opaque = rgba[..., 3] >= _ALPHA_THRESHOLD
    if np.all(rgb[..., 0] == rgb[..., 1]) and np.all(rgb[..., 1] == rgb[..., 2]) \
            and int(rgb.max(initial=0)) <= max_label:
        return np.where(opaque, rgb[..., 0], 0).astype(np.int32)
    stroke = opaque & (rgb.max(axis=2) > _BLACK_TOLERANCE)
    labels = np.zeros(rgb.shape[:2], dtype=np.int32)
    if not stroke.any():
        return labels
    _refuse_a_photo(stroke)
    colors, n_interior = _stroke_colors(rgb, stroke, max_label)
    if lossy and len(colors) > n_interior:
        raise InvalidInputError(
            f"{len(colors) - n_interior} of the {len(colors)} stroke colours appear only in "
            "strokes thinner than ~5 px, whose colours JPEG blurs into their neighbours' and "
            "the background's (two colours could read as one, or a blend as a new one); save "
            "the scribbles as PNG, or paint strokes at least 5 px wide")
    P = rgb[stroke].astype(np.float64)                       # stroke pixels in raster order
    dist = np.stack([_shade_distance(P, c) for c in colors], axis=1)   # (m, n_colours)
    nearest = dist.argmin(axis=1)
    ok = dist[np.arange(len(P)), nearest] <= _COLOR_TOLERANCE
    if np.mean(~ok) > _MAX_UNEXPLAINED:      # a dark photo: most "strokes" fit no colour
        raise InvalidInputError(
            f"{np.mean(~ok):.0%} of the non-black pixels match none of the {len(colors)} "
            "stroke colours found: this looks like a photo, not colour strokes on black or "
            "transparency")
    ids = _color_ids(colors, nearest, ok, palette)
    labels[stroke] = np.where(ok, ids[nearest], 0)
    return labels


def _refuse_a_photo(stroke: np.ndarray) -> None:
    """Strokes are painted on black or transparency: an image whose pixels are mostly
    neither is a photo (bundled samples: 83–100%; stroke files: under 25%)."""
    share = float(stroke.mean())
    if share > _MAX_STROKE_SHARE:
        raise InvalidInputError(
            f"{share:.0%} of the pixels are neither black nor transparent: this looks like a "
            "photo, not scribbles (label ids 0..9, or colour strokes on black or "
            "transparency)")


def _stroke_colors(rgb: np.ndarray, stroke: np.ndarray,
                   max_label: int = DEFAULT_MAX_LABEL) -> tuple[list[np.ndarray], int]:
    """The painted colours of a colour-stroke image (rules 3–4 of :func:`read_scribbles`).

    First from the strokes' interiors (:func:`_interior`), where neither anti-aliasing nor
    JPEG changes the painted colour; then, for strokes too thin to have one, from the bright
    pixels no colour explains yet — a candidate that mostly touches pixels of a known colour
    is that colour's JPEG-distorted edge, not a stroke of its own.
    """
    core = _interior(rgb, stroke)
    colors: list[np.ndarray] = []
    _add_colors(colors, rgb[core].astype(np.float64), _MIN_COLOR_SHARE * core.sum(),
                max_label=max_label)
    n_interior = len(colors)
    bright = np.zeros_like(stroke)
    bright[stroke] = rgb[stroke].max(axis=1) >= _BRIGHT
    _add_colors(colors, rgb[bright].astype(np.float64), _MIN_THIN_SHARE * bright.sum(),
                rgb=rgb, stroke=stroke, where=bright, max_label=max_label)
    return colors, n_interior


def _add_colors(colors: list[np.ndarray], P: np.ndarray, min_count: float, *,
                rgb: np.ndarray | None = None, stroke: np.ndarray | None = None,
                where: np.ndarray | None = None, max_label: int = DEFAULT_MAX_LABEL) -> None:
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
        if len(colors) > max_label:
            raise InvalidInputError(
                f"more than {max_label} distinct stroke colours (a photo, or not strokes on "
                f"black?); use at most {max_label} solid colours on black or transparency")
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
    grown = _grow(known, _BORDER_REACH)
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


def _color_ids(colors: list[np.ndarray], nearest: np.ndarray, ok: np.ndarray,
               palette: dict[int, tuple[int, int, int]] | None = None) -> np.ndarray:
    """Label id per dominant colour: its palette entry (``palette``: a schema's colours by id,
    default :data:`PALETTE`) if every colour has a distinct one within tolerance, else 1..n
    by first appearance (``nearest`` is in raster order)."""
    C = np.array(colors)
    table = ({i: c for i, c in enumerate(PALETTE.tolist(), start=1)} if palette is None
             else palette)
    known_ids = np.array(list(table), dtype=np.int32)
    known = np.array(list(table.values()), dtype=float).reshape(-1, 3)
    dist = np.linalg.norm(C[:, None, :] - known[None, :, :], axis=2)
    entry = dist.argmin(axis=1)
    if np.all(dist[np.arange(len(C)), entry] <= _COLOR_TOLERANCE) \
            and len(set(entry.tolist())) == len(C):
        return known_ids[entry]
    first = np.array([np.flatnonzero(ok & (nearest == j))[:1].tolist() or [len(nearest)]
                      for j in range(len(C))]).ravel()
    ids = np.empty(len(C), np.int32)
    ids[np.argsort(first, kind="stable")] = np.arange(1, len(C) + 1)
    return ids
