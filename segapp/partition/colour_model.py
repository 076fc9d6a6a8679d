"""The colour term of the two-label sweep: how well two Gaussian colour models explain a cut.

FAST-GE's Cheeger sweep (§4.6) orders the pixels by the eigenvector and keeps the prefix S of
least ``cut_G(S) / cut_H(S)``. On object/background photos that ratio prefers a cut far from
the object: along ``benchmarks/first_cut.py``'s GrabCut photos the prefix closest to the ground
truth has up to 450× the least ratio, so the order holds the object (best prefix IoU 0.64 on
average) where the ratio picks a poorer one (0.36). Interactive segmentation has long scored
an object/background cut by its colour models as well as its boundary (GrabCut: Rother,
Kolmogorov & Blake 2004; Boykov & Jolly 2001). Here each side gets one Gaussian in CIE Lab and
the cut's colour cost is the mean negative log-likelihood of the pixels' colours, up to a
constant,

    c(S) = ( |S| log det Σ_S + |S̄| log det Σ_S̄ ) / (2 n),

(Σ the maximum-likelihood covariance of a side's colours plus ``floor``·I). ``c`` is in nats
per pixel and does not change when colours are rescaled, as ``log ratio`` does not when the
graph's weights are: :func:`segapp.partition.sweep.sweep_cut` minimises
``log ratio + COLOUR_WEIGHT · c`` — where the two labels' strokes differ in mean colour
beyond noise (:func:`strokes_differ_in_colour`); otherwise the colour models could not
tell the sides apart and the sweep is FAST-GE's own. All n − 1 prefixes cost
O(n + s log s) with prefix sums over a grid sample of s ≤ :data:`COLOUR_SAMPLES` pixels
(15-30 ms at 0.25 MP).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: Weight of the colour cost (nats per pixel) against log(ratio) in the two-label sweep.
#: GrabCut-dev's first round at full size (``benchmarks/first_cut.py --colour-weights``,
#: mean object IoU; FAST-GE's own sweep 0.356): 1 → 0.400; 2 and 3 → 0.447, 0.448 with no
#: photo more than 0.1 worse than FAST-GE's sweep; 4-7 → 0.446-0.453 and 10 → 0.492, each with
#: one photo (person3) 0.12 worse. 3 is the largest weight that made no photo worse: a weight
#: fitted on 25 photos, so the one that held across a range, not the best mean.
COLOUR_WEIGHT = 3.0

#: The strokes' mean colours must differ by this many standard errors for the colour term
#: to be used (:func:`strokes_differ_in_colour`): the usual 3σ of a significance test.
STROKE_COLOUR_Z = 3.0

#: Pixels whose colours :func:`prefix_colour_costs` reads at most (a fixed grid of them).
COLOUR_SAMPLES = 1 << 16

#: Variance (Lab units², per channel) added to every side's covariance: a side of a few pixels
#: of one colour would otherwise have log det Σ = −∞. About the variance of the rounding to
#: 8 bits (a grey level is ~0.4 L* units).
COLOUR_FLOOR = 0.01


def _logdet(s1: np.ndarray, s2: np.ndarray, count: np.ndarray, floor: float) -> np.ndarray:
    """log det of the covariances of sides with colour sums ``s1`` (m, c), sums of the
    products ``s2`` (m, p) of the channel pairs :func:`_pairs` lists, and sizes ``count``
    (m,). Closed form for c ≤ 3: ``np.linalg.slogdet`` of n 3×3 matrices took 0.1 s at
    0.25 MP."""
    c = s1.shape[1]
    mean = s1 / count[:, None]
    cov = {}
    for col, (i, j) in enumerate(_pairs(c)):
        cov[i, j] = cov[j, i] = s2[:, col] / count - mean[:, i] * mean[:, j] + floor * (i == j)
    if c == 1:
        det = cov[0, 0]
    elif c == 2:
        det = cov[0, 0] * cov[1, 1] - cov[0, 1] ** 2
    else:
        det = (cov[0, 0] * (cov[1, 1] * cov[2, 2] - cov[1, 2] ** 2)
               - cov[0, 1] * (cov[0, 1] * cov[2, 2] - cov[1, 2] * cov[0, 2])
               + cov[0, 2] * (cov[0, 1] * cov[1, 2] - cov[1, 1] * cov[0, 2]))
    # rounding can leave a near-singular covariance with a determinant at or below 0
    return np.log(np.maximum(det, floor ** c))


def _pairs(c: int) -> list[tuple[int, int]]:
    """The channel pairs (i ≤ j) whose products the running sums keep."""
    return [(i, j) for i in range(c) for j in range(i, c)]


def prefix_colour_costs(colours: np.ndarray, order: np.ndarray,
                        floor: float = COLOUR_FLOOR) -> np.ndarray:
    """The colour cost ``c(S)`` of every prefix S of ``order`` (lengths 1 … n − 1).

    ``colours`` (n, c), c ≤ 3, are the pixels' colours (CIE Lab for a colour image, L* for
    grey). On graphs of over :data:`COLOUR_SAMPLES` vertices the two sides' Gaussians are
    estimated from every s-th vertex (s = ⌈n / COLOUR_SAMPLES⌉, a fixed grid of the image):
    exact costs at every prefix took 65-150 ms of an edit at 0.25 MP, and means and
    covariances of tens of thousands of pixels are estimated to a few parts in a thousand.
    """
    n = order.shape[0]
    if n < 2:
        return np.zeros(0)
    stride = -(-n // COLOUR_SAMPLES)
    pos = np.empty(n, np.int64)
    pos[order] = np.arange(n)
    sample = np.arange(0, n, stride)
    rank = np.argsort(pos[sample], kind="stable")
    f = np.take(np.asarray(colours), sample[rank], axis=0).astype(np.float64)
    c = f.shape[1]
    if c > 3:
        raise ValueError(f"colours of at most 3 channels, got {c}")
    f -= f.mean(0)  # centred: the running sums then lose no digits
    products = np.stack([f[:, i] * f[:, j] for i, j in _pairs(c)], axis=1)
    ns = f.shape[0]
    # the sampled prefix of 0 … ns vertices, then each full prefix's count of sampled vertices
    s1 = np.concatenate((np.zeros((1, c)), np.cumsum(f, axis=0)))
    s2 = np.concatenate((np.zeros((1, products.shape[1])), np.cumsum(products, axis=0)))
    m = np.arange(ns + 1, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):   # the empty sides: weight 0 below
        inside = _logdet(s1, s2, np.maximum(m, 1), floor)
        outside = _logdet(s1[-1] - s1, s2[-1] - s2, np.maximum(ns - m, 1), floor)
    cost = (m * inside + (ns - m) * outside) / (2 * ns)
    if stride == 1:
        return cost[1:n]
    marks = np.zeros(n, np.int64)
    marks[pos[sample]] = 1
    return cost[np.cumsum(marks)[: n - 1]]


def partition_colour_cost(colours: np.ndarray, mask: np.ndarray,
                          floor: float = COLOUR_FLOOR) -> float:
    """The colour cost ``c(S)`` of one two-sided partition (``mask``: S)."""
    f = np.asarray(colours, np.float64)
    n, total = f.shape[0], 0.0
    for side in (mask, ~mask):
        g = f[side]
        if g.shape[0] == 0:
            continue
        g = g - g.mean(0)
        cov = g.T @ g / g.shape[0] + floor * np.eye(f.shape[1])
        total += g.shape[0] * np.linalg.slogdet(cov)[1]
    return total / (2 * n)


def lab_colours(image: np.ndarray) -> np.ndarray:
    """The pixels' colours for the colour term: CIE Lab (n, 3) of an RGB image in [0, 1], or
    L* (n, 1) of a grey one (float32)."""
    from skimage.color import rgb2lab  # scikit-image's colour module: imported when used

    img = np.asarray(image, np.float32)
    if img.ndim == 3 and img.shape[2] == 3:
        return rgb2lab(img).reshape(-1, 3).astype(np.float32)
    grey = img if img.ndim == 2 else img.mean(axis=2)
    return (100.0 * grey).reshape(-1, 1).astype(np.float32)


def colour_noise(colours: np.ndarray) -> np.ndarray:
    """Per-channel noise of the colours (n, c) in raster order: the median absolute difference
    of horizontally neighbouring pixels, as a Gaussian's σ (1.4826 · MAD / √2), from at most
    :data:`COLOUR_SAMPLES` pairs. Edges between regions are rare among neighbours, so the
    median sees the noise, not the contrast."""
    f = np.asarray(colours)
    n = f.shape[0]
    first = np.arange(0, n - 1, max(1, -(-(n - 1) // COLOUR_SAMPLES)))
    diff = np.abs(f[first + 1].astype(np.float64) - f[first])
    return 1.4826 * np.median(diff, axis=0) / np.sqrt(2)


@dataclass(frozen=True)
class ImageColours:
    """What the colour term reads of a photo, once per image (not per edit).

    Attributes
    ----------
    lab : ndarray (n, c)
        The pixels' colours (:func:`lab_colours`).
    noise : ndarray (c,)
        Their noise per channel (:func:`colour_noise`; 4 ms at 0.25 MP).
    """

    lab: np.ndarray
    noise: np.ndarray

    @classmethod
    def of(cls, lab: np.ndarray) -> "ImageColours":
        """From colours (n, c) already in the units of the colour term."""
        lab = np.asarray(lab)
        return cls(lab, colour_noise(lab))

    @classmethod
    def of_image(cls, image: np.ndarray) -> "ImageColours":
        """From an image in [0, 1] (RGB or grey)."""
        return cls.of(lab_colours(image))


def strokes_differ_in_colour(colours: ImageColours, sets: list[np.ndarray],
                             floor: float = COLOUR_FLOOR) -> bool:
    """Whether the two labels' painted pixels ``sets`` differ in mean colour beyond chance:
    ``z² = Δμᵀ Σ⁻¹ Δμ / (1/n₁ + 1/n₂) > STROKE_COLOUR_Z²``, Σ the strokes' pooled colour
    covariance plus the image's noise (:attr:`ImageColours.noise`; it stands in for the spread a
    click of one pixel cannot show).

    If they do not, the colour models cannot tell the sides apart and the colour term only
    adds noise: a ring drawn on one noisy grey, whose inside and outside are painted with the
    same grey (there it moved a click's answer by 2.3% of the pixels from a 5×5 seed's).
    """
    means, covs, sizes = [], [], []
    for S in sets[:2]:
        g = np.asarray(colours.lab[S], np.float64)   # the strokes' rows only, not all n
        sizes.append(max(g.shape[0], 1))
        means.append(g.mean(0))
        d = g - means[-1]
        covs.append(d.T @ d / sizes[-1])
    dm = means[0] - means[1]
    cov = (covs[0] + covs[1]) / 2 + np.diag(colours.noise ** 2 + floor)
    z2 = dm @ np.linalg.solve(cov, dm) / (1 / sizes[0] + 1 / sizes[1])
    return bool(z2 > STROKE_COLOUR_Z ** 2)
