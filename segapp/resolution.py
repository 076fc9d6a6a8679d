"""Working resolution: segment large photos on a reduced grid, answer at full resolution.

A pixel-graph eigensolver costs time and memory linear in the pixel count with a large
constant (measured 11–14 s and 1.2–1.3 KB per pixel at 1.1M px, see README), so a 12-megapixel
photo cannot be segmented interactively at full resolution. :class:`segapp.Session` therefore
builds the graph of an area-averaged copy with at most ``max_pixels`` pixels
(:data:`DEFAULT_MAX_PIXELS`), transfers the strokes to that grid (a coarse pixel takes the
label of any stroke pixel inside it, so thin strokes survive), solves there, and brings the
result back: labels by nearest neighbour, eigenvectors by bilinear interpolation, and every
painted pixel keeps the label the user painted. Region boundaries are then accurate to one
coarse pixel (``√(H·W / max_pixels)`` full-resolution pixels).
"""

from __future__ import annotations

import numpy as np

from .result import Segmentation

#: Largest graph the session builds by default (≈ 2 s per solve on 2 cores; see README).
DEFAULT_MAX_PIXELS = 500_000


def working_shape(shape: tuple[int, int], max_pixels: int | None) -> tuple[int, int]:
    """The reduced ``(h, w)`` keeping the aspect ratio, or ``shape`` itself if small enough."""
    H, W = shape
    if max_pixels is None or H * W <= max_pixels:
        return H, W
    f = np.sqrt(max_pixels / (H * W))
    return max(2, int(H * f)), max(2, int(W * f))


def reduce_image(image: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """Area-averaged (anti-aliased) copy of a float image at ``shape``."""
    if image.shape[:2] == tuple(shape):
        return image
    from skimage.transform import resize
    out = resize(image, tuple(shape) + image.shape[2:], anti_aliasing=True, preserve_range=True)
    return np.clip(out, 0, 1).astype(np.float32)


def reduce_map(values: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """Transfer a sparse map (strokes, confidences: 0 = none) to a coarser grid.

    A coarse pixel takes the value of a non-zero fine pixel inside it (the last in raster
    order when several disagree), so a 1-pixel stroke still marks the coarse pixels it crosses.
    """
    H, W = values.shape
    h, w = shape
    out = np.zeros(shape, values.dtype)
    ys, xs = np.nonzero(values)
    out[ys * h // H, xs * w // W] = values[ys, xs]
    return out


def enlarge_result(result: Segmentation, scribbles: np.ndarray, *,
                   vectors: bool = True) -> Segmentation:
    """Bring a result computed on a coarse grid back to the scribbles' full resolution.

    ``vectors=False`` drops the eigenvectors (shape ``(H, W, 0)``) instead of interpolating
    them: a quick preview needs only the labels.
    """
    H, W = scribbles.shape
    h, w = result.labels.shape
    if (h, w) == (H, W):
        return result
    yi = np.minimum((np.arange(H) * h) // H, h - 1)
    xi = np.minimum((np.arange(W) * w) // W, w - 1)
    labels = result.labels[yi[:, None], xi[None, :]]
    painted = scribbles > 0
    labels[painted] = scribbles[painted]
    V = result.eigenvectors
    if vectors:
        from skimage.transform import resize
        V = resize(V, (H, W, V.shape[2]), order=1, anti_aliasing=False,
                   preserve_range=True).astype(np.float32)
    else:
        V = np.zeros((H, W, 0), np.float32)
    result.labels = labels
    result.eigenvectors = V
    return result
