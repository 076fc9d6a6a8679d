"""The round brush, and what the eraser leaves behind.

Coordinates are image coordinates ``(x, y)`` in pixels, pixel ``(row i, column j)`` covering
``[j, j + 1) × [i, i + 1)``, so its centre is ``(j + 0.5, i + 0.5)`` (as in a Qt scene whose
image item sits at the origin).
"""

from __future__ import annotations

import numpy as np
from scipy import ndimage

from .records import BBox, clip_box

__all__ = ["stroke_mask", "eraser_remnants", "REMNANT_SHARE"]

#: An eraser of radius r also takes the painted remnants it leaves within
#: ``max(1, r × REMNANT_SHARE)`` px of what it erased (see :func:`eraser_remnants`).
REMNANT_SHARE = 1 / 8


def stroke_mask(p0: tuple[float, float], p1: tuple[float, float], radius: float,
                shape: tuple[int, int]) -> tuple[BBox, np.ndarray]:
    """Pixels whose centres lie within ``radius`` of the segment ``p0``–``p1``.

    Parameters
    ----------
    p0, p1 : (x, y)
        Segment ends in image coordinates (equal for a dot).
    radius : float
        Brush radius in pixels; at least ~0.71 so a click always covers its pixel.
    shape : (H, W)

    Returns
    -------
    bbox : BBox
        The (clipped) box of the swept disc.
    mask : ndarray of bool
        ``(bbox.height, bbox.width)``.
    """
    r = max(float(radius), 0.71)
    (ax, ay), (bx, by) = (float(p0[0]), float(p0[1])), (float(p1[0]), float(p1[1]))
    box = clip_box(min(ay, by) - r, min(ax, bx) - r, max(ay, by) + r, max(ax, bx) + r, shape)
    if box.empty:
        return box, np.zeros((box.height, box.width), bool)
    ys = np.arange(box.y0, box.y1, dtype=np.float64)[:, None] + 0.5
    xs = np.arange(box.x0, box.x1, dtype=np.float64)[None, :] + 0.5
    dx, dy = bx - ax, by - ay
    seg2 = dx * dx + dy * dy
    if seg2 == 0.0:
        t = 0.0
    else:  # projection of each pixel centre onto the segment, clamped to its ends
        t = np.clip(((xs - ax) * dx + (ys - ay) * dy) / seg2, 0.0, 1.0)
    px, py = xs - (ax + t * dx), ys - (ay + t * dy)
    return box, (px * px + py * py) <= r * r


def eraser_remnants(scribbles: np.ndarray, erased: np.ndarray, box: BBox, radius: float,
                    keep: np.ndarray | None = None) -> tuple[BBox, np.ndarray] | None:
    """The painted pixels an eraser stroke left as thin remnants next to what it erased.

    Erasing along a stroke with the same brush rarely follows it to the pixel: slivers of 1–2
    pixels stay on its edges, invisible at the zoom a large photo is painted at, yet each is a
    stroke to the solver. A *remnant* is a connected piece of one label (8-neighbours) that
    touches the erased pixels and lies wholly within ``h = max(1, radius × REMNANT_SHARE)``
    pixels of them (for the default brush of 16 screen pixels, one screen pixel): a stroke the
    eraser only nicked keeps its part beyond that band.

    Parameters
    ----------
    scribbles : (H, W) int array
        The strokes after the eraser stroke.
    erased : (box.height, box.width) bool
        The pixels the stroke erased, in ``box``.
    radius : float
        The eraser's radius in image pixels.
    keep : (H, W) bool, optional
        Pixels never taken (locked labels).

    Returns
    -------
    (BBox, mask) or None
        The remnants as a boolean mask in a box, or None if there are none.
    """
    if not erased.any():
        return None
    h = max(1.0, float(radius) * REMNANT_SHARE)
    margin = int(np.ceil(h)) + 1
    outer = box.grown(margin, scribbles.shape)
    near_erased = np.zeros((outer.height, outer.width), bool)
    near_erased[box.y0 - outer.y0:box.y1 - outer.y0, box.x0 - outer.x0:box.x1 - outer.x0] = erased
    # within h of an erased pixel (Euclidean, centre to centre)
    near = ndimage.distance_transform_edt(~near_erased) <= h
    view = scribbles[outer.slices]
    painted = view != 0
    if keep is not None:
        painted &= ~keep[outer.slices]
    candidates = painted & near
    if not candidates.any():
        return None
    remove = np.zeros_like(painted)
    eight = np.ones((3, 3), bool)
    for value in np.unique(view[candidates]):
        pieces, n = ndimage.label(view == value, structure=eight)
        if n == 0:
            continue
        # a piece with a pixel outside the band is kept whole
        outside = np.bincount(pieces[~near].ravel(), minlength=n + 1)
        inside = np.bincount(pieces[candidates].ravel(), minlength=n + 1)
        thin = (outside == 0) & (inside > 0)
        thin[0] = False
        remove |= thin[pieces]
    if keep is not None:
        remove &= ~keep[outer.slices]
    return (outer, remove) if remove.any() else None
