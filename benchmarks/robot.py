"""Simulated annotator ("robot") and interactive-segmentation metrics.

The robot draws strokes the way a careful user would, from a ground-truth label map ``gt``
(``0..k-1``; GrabCut masks are mapped to 0 = background, 1 = foreground, with a separate
``valid`` mask for the void band). Stroke maps follow scikit-image's ``random_walker``
convention: 0 = unlabelled, ground-truth region ``r`` gets label id ``r + 1``.

Strokes
-------
Every stroke is a polyline of centre points dilated by a disc of radius ``radius`` (2 px).
A centre point ``p`` is only admitted where the Euclidean distance transform ``DT`` of the
target area (distance to the nearest pixel *outside* the area, the image border counting as
outside) is at least ``radius + margin + 1``; since every disc pixel lies within ``radius`` of
``p``, every stroke pixel is at least ``margin + 1`` from the outside, i.e. ``margin`` (1)
clear pixels separate the stroke from the boundary: it never touches, let alone crosses, it.
In areas too thin for that (``max DT < radius + margin + 1``) the stroke shrinks to the
deepest pixels and to radius ``floor(max DT) - 1`` (0 = one-pixel line), which is still inside.

First round — one stroke per ground-truth region:
    the centre is the maximum of ``DT`` of the region (largest inscribed disc; among exact
    ties the seeded generator picks one); the direction is the principal axis (PCA) of the
    admissible pixels of the region within ``max_length / 2`` of the centre; from the centre
    the robot walks both ways in half-pixel steps until it leaves the admissible set or
    reaches half the stroke length. The length is ``min(max_length, length_factor *
    sqrt(area))`` (50 px for large regions, shorter for small ones).

Later rounds — one corrective stroke:
    error = pixels whose predicted label differs from the ground truth, excluding void
    pixels and pixels that already carry a stroke (a user does not repaint a stroke; this
    also keeps the robot from repeating itself when a method does not honour its strokes).
    The error is split by ground-truth region, and the largest 4-connected component is the
    target; the stroke gets that region's label and is drawn as above inside the component,
    centred at the point farthest from the component's boundary, of length at most
    ``corrective_length``.

Later rounds, the "where to paint next" robot (issue 22) — one stroke where the method is
least sure (:meth:`Robot.where_unsure`): the area is chosen from the method's per-pixel
confidence alone (the unpainted pixels below 1/2, the 4-connected component with the largest
total doubt ``Σ (1 − confidence)``), without looking at the ground truth; the simulated user
then paints there what is there — the label of the largest ground-truth region inside the
area, drawn as above inside that part, at most ``corrective_length`` long. It stops only
when the method is sure everywhere (or at the stroke budget).

Determinism: the only randomness is the tie-break between equally deep centre points and it
comes from ``numpy.random.default_rng(seed)``; the same seed, images and predictions give the
same strokes.

Clicks (the standard protocol of the interactive-segmentation literature)
-----------------------------------------------------------------------
For binary images, :func:`next_click` places one click at a time. The error splits into false
negatives (object pixels not labelled object: a *positive* click) and false positives
(background labelled object: a *negative* click). Two rules of the literature:

``"area"`` (default; Xu et al., CVPR 2016, "Deep Interactive Object Selection")
    the largest 4-connected error component by area is the target and the click goes to its
    centre, the component pixel farthest from the component's boundary (maximum of the
    Euclidean distance transform, the image border counting as boundary; among equal maxima
    the first in raster order); pixels already clicked are not part of the error.
``"depth"`` (the evaluation clicker of f-BRS / RITM and the deep click models after them)
    the distance transforms of the whole false-negative and false-positive masks (border
    counting as boundary) are compared; the click is positive when the false negatives' maximum
    is strictly larger, and goes to the first pixel in raster order with that maximum, clicked
    pixels excluded — i.e. the centre of the error region with the largest inscribed disc.

A click is a disc of radius 5 px around that pixel (the disc encoding of RITM's models,
``norm_radius=5``), kept to the ground-truth side of the clicked label (and to scored pixels),
so that a click next to a boundary never seeds the wrong label. Before the first click the
prediction is "all background", so the first click is a positive one at the object's centre.

Metrics
-------
* binary (GrabCut): IoU of the foreground (label id 2) over valid pixels;
* k-way (BSDS): mean over regions of the per-region IoU (labels are already matched because
  strokes name them);
* NoC@t: number of strokes after which the IoU first reaches ``t``; ``max_strokes`` when it
  never does.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy import ndimage as ndi

#: 4-connectivity for error components (a diagonal touch does not merge two error blobs).
_FOUR = ndi.generate_binary_structure(2, 1)


def _depth(mask: np.ndarray) -> np.ndarray:
    """Distance of each pixel of ``mask`` to the nearest pixel outside it or off the image."""
    padded = np.pad(mask, 1, constant_values=False)
    return ndi.distance_transform_edt(padded)[1:-1, 1:-1]


def _disc(radius: int) -> np.ndarray:
    r = int(radius)
    yy, xx = np.mgrid[-r:r + 1, -r:r + 1]
    return (yy * yy + xx * xx) <= r * r


@dataclass
class Stroke:
    """One robot stroke.

    Attributes
    ----------
    label : int
        Label id (``region + 1``).
    centre : tuple[int, int]
        (row, col) of the stroke's centre point.
    path : ndarray of int, (n, 2)
        Centre-line pixels (row, col) in drawing order.
    radius : int
        Disc radius used to thicken the path.
    mask : ndarray of bool, (H, W)
        Pixels painted by the stroke.
    kind : str
        ``"initial"`` or ``"corrective"``.
    """

    label: int
    centre: tuple[int, int]
    path: np.ndarray
    radius: int
    mask: np.ndarray = field(repr=False)
    kind: str = "initial"

    @property
    def length(self) -> float:
        """Length of the centre line in pixels."""
        if len(self.path) < 2:
            return 0.0
        return float(np.hypot(*(self.path[-1] - self.path[0])))


class Robot:
    """Deterministic simulated annotator.

    Parameters
    ----------
    radius : int
        Stroke radius in pixels (a 5-px wide brush for the default 2).
    margin : float
        Clear pixels kept between the brush disc and the area boundary.
    max_length : float
        Maximal length of a first-round stroke in pixels.
    corrective_length : float
        Maximal length of a corrective stroke in pixels.
    length_factor : float
        Stroke length is at most ``length_factor * sqrt(area)`` (short strokes in small areas).
    seed : int
        Seed of the tie-breaking generator.
    """

    def __init__(self, radius: int = 2, margin: float = 1.0, max_length: float = 50.0,
                 corrective_length: float = 30.0, length_factor: float = 0.6,
                 seed: int = 0) -> None:
        if margin < 0:
            raise ValueError("margin must be >= 0")
        self.radius = int(radius)
        self.margin = float(margin)
        self.max_length = float(max_length)
        self.corrective_length = float(corrective_length)
        self.length_factor = float(length_factor)
        self.rng = np.random.default_rng(seed)

    # -- drawing -------------------------------------------------------------------------
    def stroke_in(self, area: np.ndarray, label: int, max_length: float,
                  kind: str = "initial") -> Stroke | None:
        """Draw one stroke strictly inside ``area`` (bool mask); None if the area is empty."""
        area = np.asarray(area, dtype=bool)
        if not area.any():
            return None
        dt = _depth(area)
        top = float(dt.max())
        need = self.radius + self.margin + 1
        if top >= need:
            radius, admissible = self.radius, dt >= need
        else:  # thin area: deepest pixels only, thinner brush (still strictly inside)
            radius, admissible = max(0, int(np.floor(top)) - 1), dt >= top - 1e-9
        ties = np.argwhere(dt >= top - 1e-9)
        centre = ties[self.rng.integers(len(ties))] if len(ties) > 1 else ties[0]
        length = min(max_length, self.length_factor * np.sqrt(area.sum()))
        # Admissible pixels connected to the centre: the walk must not jump across a gap.
        comp, _ = ndi.label(admissible, structure=np.ones((3, 3), bool))
        reach = comp == comp[tuple(centre)]
        direction = self._direction(reach, centre, length / 2)
        path = self._walk(reach, centre, direction, length / 2)
        mask = np.zeros(area.shape, bool)
        mask[path[:, 0], path[:, 1]] = True
        if radius > 0:
            mask = ndi.binary_dilation(mask, structure=_disc(radius))
        assert not (mask & ~area).any(), "robot stroke left its area"  # guaranteed by the DT
        return Stroke(int(label), (int(centre[0]), int(centre[1])), path, radius, mask, kind)

    @staticmethod
    def _direction(reach: np.ndarray, centre: np.ndarray, half: float) -> np.ndarray:
        """Principal axis of the admissible pixels near the centre (unit (drow, dcol))."""
        pts = np.argwhere(reach).astype(float)
        near = pts[np.hypot(*(pts - centre).T) <= max(half, 1.0)]
        if len(near) < 3:
            return np.array([0.0, 1.0])
        cov = np.cov((near - near.mean(0)).T)
        w, v = np.linalg.eigh(cov)
        d = v[:, np.argmax(w)]
        # Canonical sign so the result does not depend on LAPACK's choice.
        if d[1] < 0 or (d[1] == 0 and d[0] < 0):
            d = -d
        return d

    @staticmethod
    def _walk(reach: np.ndarray, centre: np.ndarray, d: np.ndarray, half: float) -> np.ndarray:
        """Centre-line pixels: from the centre both ways in half-pixel steps while admissible."""
        h, w = reach.shape
        sides = []
        for sign in (-1.0, 1.0):
            pts = []
            t = 0.5
            while t <= half:
                p = np.rint(centre + sign * t * d).astype(int)
                if not (0 <= p[0] < h and 0 <= p[1] < w) or not reach[p[0], p[1]]:
                    break
                pts.append(p)
                t += 0.5
            sides.append(pts)
        seq = sides[0][::-1] + [np.asarray(centre)] + sides[1]
        path = np.array(seq, dtype=int)
        # Rounding repeats pixels at half steps; keep the first of each run.
        keep = np.ones(len(path), bool)
        keep[1:] = np.any(path[1:] != path[:-1], axis=1)
        return path[keep]

    # -- the protocol --------------------------------------------------------------------
    def first_round(self, gt: np.ndarray, valid: np.ndarray | None = None) -> list[Stroke]:
        """One stroke per ground-truth region (label ``r + 1``), in region order.

        Parameters
        ----------
        gt : ndarray of int, (H, W)
            Region map ``0..k-1``.
        valid : ndarray of bool, optional
            Pixels that may be painted (void pixels excluded).
        """
        strokes = []
        for r in np.unique(gt[valid] if valid is not None else gt):
            area = gt == r
            if valid is not None:
                area &= valid
            s = self.stroke_in(area, int(r) + 1, self.max_length, "initial")
            if s is not None:
                strokes.append(s)
        return strokes

    def where_unsure(self, gt: np.ndarray, confidence: np.ndarray, scribbles: np.ndarray,
                     valid: np.ndarray | None = None) -> Stroke | None:
        """One stroke in the least-confident area (:func:`least_confident_area`), chosen from
        the method's confidence alone; the ground truth only names the label painted there.
        None when the method is sure everywhere (confidence ≥ 1/2 on every unpainted pixel)."""
        area = least_confident_area(confidence, gt, scribbles, valid)
        if area is None:
            return None
        region, mask = area
        return self.stroke_in(mask, region + 1, self.corrective_length, "unsure")

    def corrective(self, gt: np.ndarray, pred: np.ndarray, scribbles: np.ndarray,
                   valid: np.ndarray | None = None) -> Stroke | None:
        """One stroke in the largest wrongly-labelled component; None when nothing is wrong.

        Parameters
        ----------
        gt : ndarray of int, (H, W)
            Region map ``0..k-1``.
        pred : ndarray of int, (H, W)
            Current prediction in label ids (``region + 1``).
        scribbles : ndarray of int, (H, W)
            Current strokes (painted pixels are not targeted again).
        valid : ndarray of bool, optional
            Scored pixels.
        """
        comp = largest_error_component(gt, pred, scribbles, valid)
        if comp is None:
            return None
        region, mask = comp
        return self.stroke_in(mask, region + 1, self.corrective_length, "corrective")


def least_confident_area(confidence: np.ndarray, gt: np.ndarray,
                         scribbles: np.ndarray | None = None, valid: np.ndarray | None = None
                         ) -> tuple[int, np.ndarray] | None:
    """Where the method is least sure: the area a "where to paint next" robot strokes.

    The unpainted (and scored) pixels whose confidence is below 1/2 — nearer the method's
    decision boundary than to its strokes (:attr:`segapp.result.Segmentation.confidence`) —
    split into 4-connected components; the component with the largest total doubt
    ``Σ (1 − confidence)`` is chosen **without the ground truth**. Only then does the
    simulated user look at it: the stroke goes where the largest ground-truth region inside
    the component lies, with that region's label (a person paints what they see there).

    Returns
    -------
    (region, mask) or None
        The ground-truth region (label ``region + 1``) and the part of the component in it;
        None when no unpainted pixel is below 1/2.
    """
    doubt = 1.0 - np.asarray(confidence, dtype=np.float64)
    low = doubt > 0.5
    if valid is not None:
        low &= valid
    if scribbles is not None:
        low &= scribbles == 0
    lab, n = ndi.label(low, structure=_FOUR)
    if n == 0:
        return None
    total = np.bincount(lab.ravel(), weights=doubt.ravel())[1:]
    comp = lab == int(np.argmax(total)) + 1        # first of equal totals: deterministic
    regions, counts = np.unique(gt[comp], return_counts=True)
    region = int(regions[np.argmax(counts)])
    return region, comp & (gt == region)


def largest_error_component(gt: np.ndarray, pred: np.ndarray, scribbles: np.ndarray | None = None,
                            valid: np.ndarray | None = None) -> tuple[int, np.ndarray] | None:
    """Largest 4-connected wrongly labelled component, split by ground-truth region.

    Returns
    -------
    (region, mask) or None
        The region ``r`` the component belongs to (it should get label ``r + 1``) and its mask.
    """
    wrong = pred != gt + 1
    if valid is not None:
        wrong &= valid
    if scribbles is not None:
        wrong &= scribbles == 0
    best: tuple[int, int, np.ndarray] | None = None
    for r in np.unique(gt[wrong]):
        lab, n = ndi.label(wrong & (gt == r), structure=_FOUR)
        if n == 0:
            continue
        sizes = np.bincount(lab.ravel())[1:]
        i = int(np.argmax(sizes))  # first of equal sizes: deterministic
        if best is None or sizes[i] > best[0]:
            best = (int(sizes[i]), int(r), lab == i + 1)
    if best is None:
        return None
    return best[1], best[2]


#: Radius of a click disc in the standard protocol (pixels).
CLICK_RADIUS = 5


def next_click(gt: np.ndarray, pred: np.ndarray, clicked: np.ndarray | None = None,
               valid: np.ndarray | None = None, radius: int = CLICK_RADIUS,
               rule: str = "area") -> Stroke | None:
    """The next click of the standard protocol (module docstring); None when nothing is wrong.

    Parameters
    ----------
    gt : ndarray of int, (H, W)
        Binary ground truth: 0 background, 1 object.
    pred : ndarray of int, (H, W)
        Current prediction in label ids (1 background, 2 object).
    clicked : ndarray, optional
        Current seeds (non-zero pixels are not clicked again).
    valid : ndarray of bool, optional
        Scored pixels.
    radius : int
        Click disc radius.
    rule : {"area", "depth"}
        Which error region is clicked (module docstring).

    Returns
    -------
    Stroke or None
        ``kind`` is ``"positive"`` (label 2) or ``"negative"`` (label 1); ``path`` holds the
        click's centre only.
    """
    if rule == "area":
        comp = largest_error_component(gt, pred, clicked, valid)
        if comp is None:
            return None
        region, mask = comp
        dt = _depth(mask)
    elif rule == "depth":
        free = np.ones(gt.shape, bool) if clicked is None else clicked == 0
        best = None
        for region in (0, 1):  # background first: a tie is a negative click
            wrong = (pred != gt + 1) & (gt == region)
            if valid is not None:
                wrong &= valid
            dt_r = _depth(wrong) * free
            if dt_r.max() > 0 and (best is None or dt_r.max() > best[1].max()):
                best = (region, dt_r)
        if best is None:
            return None
        region, dt = best
    else:
        raise ValueError(f"rule must be 'area' or 'depth', got {rule!r}")
    centre = np.unravel_index(int(np.argmax(dt)), dt.shape)  # first maximum in raster order
    disc = np.zeros(gt.shape, bool)
    disc[centre] = True
    disc = ndi.binary_dilation(disc, structure=_disc(radius)) & (gt == region)
    if valid is not None:
        disc &= valid
    kind = "positive" if region == 1 else "negative"
    return Stroke(int(region) + 1, (int(centre[0]), int(centre[1])), np.array([centre]),
                  int(radius), disc, kind)


def paint(scribbles: np.ndarray, stroke: Stroke) -> np.ndarray:
    """Return a copy of ``scribbles`` with ``stroke`` painted over it."""
    out = scribbles.copy()
    out[stroke.mask] = stroke.label
    return out


# -- metrics ---------------------------------------------------------------------------------
def iou(pred: np.ndarray, truth: np.ndarray, valid: np.ndarray | None = None) -> float:
    """IoU of two boolean masks over the valid pixels (1.0 when both are empty)."""
    p, t = np.asarray(pred, bool), np.asarray(truth, bool)
    if valid is not None:
        p, t = p & valid, t & valid
    union = np.count_nonzero(p | t)
    return 1.0 if union == 0 else np.count_nonzero(p & t) / union


def binary_iou(labels: np.ndarray, gt: np.ndarray, valid: np.ndarray | None = None) -> float:
    """Foreground IoU: label id 2 against ground-truth region 1 (GrabCut convention)."""
    return iou(labels == 2, gt == 1, valid)


def mean_iou(labels: np.ndarray, gt: np.ndarray, valid: np.ndarray | None = None) -> float:
    """Mean over ground-truth regions ``r`` of IoU(labels == r + 1, gt == r)."""
    regions = np.unique(gt[valid] if valid is not None else gt)
    return float(np.mean([iou(labels == r + 1, gt == r, valid) for r in regions]))


def noc(curve: np.ndarray | list[float], threshold: float, max_strokes: int = 20,
        first: int = 1) -> tuple[int, bool]:
    """Number of clicks (strokes) to reach ``threshold``.

    Parameters
    ----------
    curve : sequence of float
        IoU after stroke ``first``, ``first + 1``, ... (NaN entries never reach).
    threshold : float
        Target IoU, e.g. 0.85.
    max_strokes : int
        Value returned when the threshold is never reached.
    first : int
        Stroke count of ``curve[0]`` (k for a first round of k strokes).

    Returns
    -------
    (n, reached)
    """
    for i, v in enumerate(curve):
        n = first + i
        if n > max_strokes:
            break
        if v >= threshold:
            return n, True
    return max_strokes, False
