r"""The pixel-grid affinity graph of an image: neighbourhood, σ rule, total-variation pre-filter.

Image graph
-----------
Pixels ``i`` and ``j`` whose grid offset lies within the chosen neighbourhood are joined by

.. math:: w_{ij} = \max\bigl(\exp(-\lVert f_i - f_j \rVert^2 / 2\sigma^2),\ w_{\min}\bigr)

where ``f`` is the pixel's colour (RGB in [0, 1]) or grey value — the RBF affinity of
FAST-GE §7.3 (which uses grey values). The floor ``w_min`` keeps the graph connected, so the
degrees stay positive and the merge weights of §4.7 (which divide by ``d_min``) stay bounded.

σ rule (data-driven, scale-free): ``σ = sigma_scale · mean ‖f_i − f_j‖`` over all the graph's
edges, ``sigma_scale = 0.4`` by default. An edge's affinity thus depends on how its contrast
compares with the image's typical neighbour contrast, so the same rule suits a flat and a busy
photo; the mean (rather than the root mean square) is less dominated by the few strong edges
and textured areas. Measured with ``benchmarks/quality.py``'s robot on the 49 dev images
(first-round / after-8-strokes mean IoU, BSDS k-way | GrabCut binary):

===================  =============  =============
rule                 BSDS           GrabCut
===================  =============  =============
1.0 × RMS (before)   0.461 / –      0.291 / –
0.35 × RMS           0.550 / 0.764  0.451 / 0.836
0.25 × RMS           0.541 / 0.774  0.392 / 0.851
1.0 × median         0.555 / 0.758  0.422 / 0.795
**0.4 × mean**       0.553 / 0.768  0.417 / 0.875
===================  =============  =============

and it gives the paper's five clean regions on the Patras example (§7.3), which 0.35 × RMS
does not (the sky leaks into the sea and the city there). A smaller σ costs LOBPCG iterations
(stiffer graph): 19 vs 11 at 240K px for 0.2 vs 0.35 × RMS.

Noise: total-variation pre-filter (``denoise``)
-----------------------------------------------
Sensor noise of standard deviation ``s`` per channel adds ``2 c s²`` (``c`` channels) to every
squared neighbour distance. Inside a flat region the affinities then scatter over orders of
magnitude, many down to the floor, and the eigenvectors become bumps around the strokes that
cut along noise instead of steps at the edges: on a three-colour test image with noise of
25/255 FAST-GE labelled ~52% of the pixels correctly (``benchmarks/noise.py``; a nearest-
stroke-mean "oracle" partition of the same eigenvectors did no better, so the graph, not the
clustering, was at fault). Widening σ does not help (the edges weaken with it), nor do
affinities averaged over 3 × 3 patches (the noise term is a bias, not only a variance).

So the features ``f`` are denoised before the affinities: each channel becomes the
Rudin–Osher–Fatemi / total-variation minimiser

.. math:: u = \arg\min_u \sum_p \lVert \nabla u(p) \rVert
          + \frac{1}{2\lambda} \sum_p (u(p) - f(p))^2,
          \qquad \lambda = \texttt{denoise} \cdot \hat s

(Chambolle's projection algorithm, scikit-image ``denoise_tv_chambolle``), whose solutions are
piecewise flat: noise inside regions goes, steps between them stay sharp. The weight scales
with the image's own noise, ``ŝ`` from :func:`noise_sigma` (Immerkær's Laplacian-difference
mask, median absolute response: robust to edges and texture), so a clean photo (ŝ ≈ 0.002–0.03
on the dev sets at half size) is barely touched while a noisy one is smoothed as much as it
needs; the σ rule then runs on the filtered features. Correct pixels on the three-region image
(mean of 3 trials; ``python benchmarks/noise.py``):

=====================  =====  ======  ======  ======  ======
σ_n (per channel)      0      0.05    25/255  35/255  0.15
=====================  =====  ======  ======  ======  ======
none (before)          1.000  1.000   0.523   0.462   0.456
Gaussian 0.7 px        0.986  0.991   0.878   0.621   0.591
Gaussian 1 px          0.984  0.986   0.989   0.993   0.941
bilateral              1.000  0.988   0.976   0.616   0.595
non-local means        1.000  0.988   0.988   0.986   0.986
3×3 patch distances    0.986  0.987   0.488   0.458   0.454
… minus noise bias     0.986  0.985   0.987   0.499   0.474
σ widened by noise     1.000  0.528   0.446   0.443   0.443
TV, weight 0.5 ŝ       1.000  0.998   0.998   0.998   0.998
**TV, weight 1 ŝ**     1.000  0.997   0.997   0.996   0.997
TV, weight 2 ŝ         1.000  0.995   0.992   0.989   0.989
=====================  =====  ======  ======  ======  ======

(random_walker with its best β per level: 0.530 at 25/255; on the TV-filtered image 1.000.)
Gaussian smoothing blurs every edge (1.6% of the pixels lost on the clean image, and the city
eats into the harbour of Patras); non-local means costs ~2× TV's time for less. On the dev
photos (half size, little noise) the pre-filter changes little: ``benchmarks/quality.py``
NoC@90 BSDS 14.21 with and without it, GrabCut 9.04 (9.28 before issue 10); the paper's Patras
example keeps its five clean regions (``tests/test_paper_patras.py``). Cost: 0.4–3.3% of a
``segment`` at 250K and 1.1M px (``benchmarks/noise.py --cost``). Set ``denoise=0`` for the
graph of the raw colours.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy import ndimage as ndi

from ..errors import InvalidInputError
from .weighted import Graph

#: Default multiplier of the mean neighbour feature distance (see the σ rule above).
DEFAULT_SIGMA_SCALE = 0.4

#: Smallest data-driven σ (a quarter of an 8-bit grey level; see image_graph).
SIGMA_FLOOR = 1e-3

#: Default TV weight of the feature pre-filter, in units of the estimated noise σ̂
#: (see the module docstring); 0 turns the pre-filter off.
DEFAULT_DENOISE = 1.0

#: TV weights λ below this leave the features as they are (a 40th of an 8-bit grey level).
TV_MIN_WEIGHT = 1e-4

#: Iteration cap of Chambolle's algorithm (see denoise_features).
TV_ITERATIONS = 200

#: Affinity floor relative to the largest possible affinity (1): keeps the graph connected.
MIN_WEIGHT = 1e-4


def grid_offsets(connectivity: int = 4, radius: float | None = None) -> list[tuple[int, int]]:
    """Half of the neighbourhood: offsets ``(dy, dx)`` with ``dy > 0`` or ``dy == 0, dx > 0``.

    ``connectivity`` 4 or 8 gives the usual grids; ``radius`` (in pixels, ≥ 1) overrides it and
    joins every pair of pixels within that Euclidean distance (radius √2 equals 8-connectivity,
    radius 2 gives 12 neighbours, radius 3 gives 28).
    """
    if radius is None:
        if connectivity not in (4, 8):
            raise InvalidInputError(f"connectivity must be 4 or 8, got {connectivity!r}")
        radius = 1.0 if connectivity == 4 else float(np.sqrt(2.0))
    if not np.isfinite(radius) or radius < 1:
        raise InvalidInputError(f"radius must be a number ≥ 1, got {radius!r}")
    r = int(np.floor(radius + 1e-9))
    offs = []
    for dy in range(0, r + 1):
        for dx in range(-r, r + 1):
            if (dy == 0 and dx <= 0) or dy * dy + dx * dx > radius * radius + 1e-9:
                continue
            offs.append((dy, dx))
    return offs


def image_features(image: np.ndarray, color: bool = True) -> np.ndarray:
    """Per-pixel feature vectors ``(H, W, c)`` in [0, 1]: RGB, or luminance when ``color=False``."""
    img = np.asarray(image, dtype=np.float32)
    if img.ndim == 2:
        return img[:, :, None]
    if not color:
        # ITU-R BT.601 luma, as skimage.color.rgb2gray
        return (img[..., :3] @ np.array([0.2125, 0.7154, 0.0721], np.float32))[:, :, None]
    return img[..., :3]


#: Immerkær's noise mask: the difference of two discrete Laplacians, blind to linear ramps;
#: on white noise of std s its response has std 6·s (the mask's Euclidean norm).
_NOISE_MASK = np.array([[1, -2, 1], [-2, 4, -2], [1, -2, 1]], np.float32)


def noise_sigma(image: np.ndarray) -> float:
    """Robust estimate of the std of additive white noise, averaged over the channels.

    Immerkær's mask ``N`` (Immerkær 1996, "Fast noise variance estimation") cancels every
    locally linear signal; on i.i.d. Gaussian noise of std ``s`` its response is Gaussian with
    std ``6 s``. The median absolute response, divided by ``0.6745 · 6`` (the MAD of a unit
    Gaussian, Donoho & Johnstone 1994), is the estimate: edges and texture only touch a
    minority of pixels and barely move the median. It agrees with scikit-image's wavelet
    estimator ``estimate_sigma`` (correlation 0.998 on the 49 dev photos, within 2% on
    synthetic noise of 5–35/255) without needing PyWavelets.
    """
    x = np.asarray(image, np.float32)
    x = x if x.ndim == 3 else x[:, :, None]
    if min(x.shape[:2]) < 3:
        return 0.0
    out = []
    for c in range(x.shape[2]):
        r = ndi.correlate(x[:, :, c], _NOISE_MASK, mode="reflect")[1:-1, 1:-1]
        out.append(float(np.median(np.abs(r))) / (0.6745 * 6.0))
    return float(np.mean(out))


def denoise_features(feats: np.ndarray, weight: float = DEFAULT_DENOISE) -> np.ndarray:
    """Total-variation denoising of the feature planes ``(H, W, c)`` (module docstring).

    Each plane is replaced by the minimiser ``u`` of ``TV(u) + ‖u − f‖² / (2 λ)`` with
    ``λ = weight · σ̂`` (:func:`noise_sigma`), computed by Chambolle's projection algorithm
    (scikit-image ``denoise_tv_chambolle``). ``weight = 0`` returns the features unchanged, as
    does a ``λ`` below :data:`TV_MIN_WEIGHT` (an effect far below one grey level, not worth
    its iterations: e.g. an upscaled image, whose noise estimate is ~0).
    """
    if isinstance(weight, bool) or not (isinstance(weight, (int, float, np.integer, np.floating))
                                        and np.isfinite(weight) and weight >= 0):
        raise InvalidInputError(f"denoise must be a number ≥ 0, got {weight!r}")
    if weight == 0:
        return feats
    lam = float(weight) * noise_sigma(feats)
    if lam < TV_MIN_WEIGHT:
        return feats
    return tv_filter(feats, lam)


def tv_filter(feats: np.ndarray, lam: float) -> np.ndarray:
    """The total-variation minimiser of weight ``lam`` of each feature plane (Chambolle's
    algorithm, :data:`TV_ITERATIONS` at most), float32."""
    from skimage.restoration import denoise_tv_chambolle
    out = denoise_tv_chambolle(feats, weight=lam, max_num_iter=TV_ITERATIONS, channel_axis=-1)
    return np.asarray(out, np.float32)


def sigma_rule(mean_distance: float, sigma_scale: float = DEFAULT_SIGMA_SCALE) -> float:
    """The data-driven σ of the module docstring from the mean neighbour feature distance.

    A perfectly flat image has mean 0: any σ gives uniform weights then (1.0). Otherwise σ is
    kept above :data:`SIGMA_FLOOR`: differences far below one 8-bit grey level (1/255) are
    rounding, and a σ of that size would turn them into full-contrast edges.
    """
    return max(float(sigma_scale * mean_distance), SIGMA_FLOOR) if mean_distance > 0 else 1.0


def mean_neighbour_distance(feats: np.ndarray, offsets: list[tuple[int, int]],
                            row_step: int = 1) -> float:
    """Mean ``‖f_i − f_j‖`` over the grid's edges (the σ rule's statistic) of ``(H, W, c)``
    features; ``row_step`` > 1 averages over the edges leaving every ``row_step``-th row only
    (an estimate for very large images: :mod:`segapp.inputs.refine` at 12 MP)."""
    H, W = feats.shape[:2]
    total, count = 0.0, 0
    for dy, dx in offsets:
        ys, xs, ys2, xs2 = _offset_slices((H, W), dy, dx)
        rows = _statistic_rows(ys, row_step)
        if rows.size == 0 or xs.stop - xs.start <= 0:
            continue
        diff = feats[rows, xs] - feats[rows + dy, xs2]
        total += float(np.sqrt(np.einsum("ijc,ijc->ij", diff, diff)).sum(dtype=np.float64))
        count += diff.shape[0] * diff.shape[1]
    return total / max(count, 1)


def statistic_rows(shape: tuple[int, int], offsets: list[tuple[int, int]],
                   row_step: int = 1) -> np.ndarray:
    """The image rows :func:`mean_neighbour_distance` reads with these arguments (sorted):
    a caller that builds only part of a large feature array fills these."""
    rows = [np.zeros(0, np.intp)]
    for dy, dx in offsets:
        ys = _offset_slices(shape, dy, dx)[0]
        r = _statistic_rows(ys, row_step)
        rows += [r, r + dy]
    return np.unique(np.concatenate(rows))


def _statistic_rows(ys: slice, row_step: int) -> np.ndarray:
    return np.arange(ys.start, ys.stop, max(1, int(row_step)))


def affinity(sq: np.ndarray, sigma: float) -> np.ndarray:
    """The edge weights ``max(exp(−sq / 2σ²), MIN_WEIGHT)`` of squared feature distances
    (float32 in, float32 out; NaN stays NaN)."""
    w = np.exp(sq * np.float32(-0.5 / sigma**2))
    np.maximum(w, np.float32(MIN_WEIGHT), out=w)
    return w


def _offset_slices(shape: tuple[int, int], dy: int, dx: int):
    """Slices selecting pixel pairs (p, p + (dy, dx)) that both lie inside the image."""
    H, W = shape
    ys = slice(0, H - dy)
    ys2 = slice(dy, H)
    if dx >= 0:
        xs, xs2 = slice(0, W - dx), slice(dx, W)
    else:
        xs, xs2 = slice(-dx, W), slice(0, W + dx)
    return ys, xs, ys2, xs2


def image_graph(
    image: np.ndarray,
    *,
    connectivity: int = 8,
    radius: float | None = None,
    sigma: float | None = None,
    sigma_scale: float = DEFAULT_SIGMA_SCALE,
    color: bool = True,
    denoise: float = DEFAULT_DENOISE,
) -> Graph:
    """Build the RBF pixel-grid graph G_D of an image (FAST-GE §7.3), fully vectorised.

    Parameters
    ----------
    image : ndarray, (H, W) or (H, W, 3)
        Values in [0, 1].
    connectivity : {4, 8}
        Grid neighbourhood, unless ``radius`` is given. 8 by default: on the dev sets of
        ``benchmarks/quality.py`` it needs fewer strokes than 4 (NoC@90 BSDS 14.21 vs 14.71,
        GrabCut 9.28 vs 10.56) and fewer LOBPCG iterations (11 vs 18 at 250K px, 4 labels).
        ``radius=3`` scored best (13.79 / 7.44) at about 1.3× the memory and, at 1.1M px,
        1.2× the time, but eats into the harbour of the paper's Patras example.
    radius : float, optional
        Join all pixels within this distance (see :func:`grid_offsets`).
    sigma : float, optional
        RBF width in feature units. Default: the data-driven rule of the module docstring.
    sigma_scale : float
        Multiplier of the data-driven σ (ignored when ``sigma`` is given).
    color : bool
        Use RGB differences (True) or grey-value differences (False, as in the paper).
    denoise : float
        Weight of the total-variation pre-filter of the features in units of the image's
        estimated noise (module docstring); 0 = off.

    Returns
    -------
    Graph
    """
    feats = denoise_features(image_features(image, color), denoise)
    H, W = feats.shape[:2]
    if H * W < 2:
        raise InvalidInputError(f"image of {W}×{H} pixels is too small to segment")
    offsets = graph_offsets((H, W), connectivity, radius)
    # Squared feature differences for every offset, kept as full (H, W) planes (NaN where
    # the neighbour falls outside) so the Laplacian can be assembled as diagonals.
    sq = []
    for dy, dx in offsets:
        ys, xs, ys2, xs2 = _offset_slices((H, W), dy, dx)
        diff = feats[ys, xs] - feats[ys2, xs2]
        plane = np.full((H, W), np.nan, np.float32)
        plane[ys, xs] = np.einsum("ijc,ijc->ij", diff, diff)
        sq.append(plane)
    if sigma is None:
        total = sum(float(np.nansum(np.sqrt(p), dtype=np.float64)) for p in sq)
        count = sum(int(np.count_nonzero(~np.isnan(p))) for p in sq)
        sigma = sigma_rule(total / max(count, 1), sigma_scale)
    if not np.isfinite(sigma) or sigma <= 0:
        raise InvalidInputError(f"sigma must be a positive number, got {sigma!r}")

    def weights(plane: np.ndarray) -> np.ndarray:
        w = affinity(plane, sigma)
        w[np.isnan(plane)] = 0.0
        return w

    L, degrees = _assemble((H, W), offsets, (weights(p) for p in sq))
    return Graph(L, degrees, (H, W), float(sigma), offsets)


def graph_offsets(shape: tuple[int, int], connectivity: int = 8,
                  radius: float | None = None) -> list[tuple[int, int]]:
    """The offsets :func:`image_graph` joins pixels by on an image of ``shape``
    (:func:`grid_offsets` without those reaching beyond it, which join no pixel pairs)."""
    H, W = shape
    return [(dy, dx) for dy, dx in grid_offsets(connectivity, radius) if dy < H and abs(dx) < W]


def grid_pattern(shape: tuple[int, int], offsets: list[tuple[int, int]]) -> sp.csr_matrix:
    """The sparsity pattern of the Laplacian :func:`image_graph` builds on ``shape`` with
    ``offsets`` (every weight is positive, so it depends on the grid only), stored alike
    (CSR, sorted indices; unit weights): what the direct solver's analysis needs before the
    weights exist (:meth:`segapp.solve.GraphSolver.analyse_ahead`)."""
    H, W = shape

    def ones(dy: int, dx: int) -> np.ndarray:
        ys, xs, _, _ = _offset_slices((H, W), dy, dx)
        w = np.zeros((H, W), np.float32)
        w[ys, xs] = 1.0
        return w

    return _assemble((H, W), offsets, (ones(dy, dx) for dy, dx in offsets))[0]


def _assemble(shape: tuple[int, int], offsets: list[tuple[int, int]],
              planes) -> tuple[sp.csr_matrix, np.ndarray]:
    """The Laplacian ``D − W`` (CSR, sorted indices, no stored zeros) and the degrees from one
    (H, W) weight plane per offset: the weight of the edge from each pixel to its neighbour
    at that offset (0 where the neighbour falls outside)."""
    H, W = shape
    n = H * W
    degrees = np.zeros(n, np.float64)
    # Upper diagonals by flat offset k = dy·W + dx. On very narrow images two grid offsets can
    # share a flat offset (W = 2: (0, 1) and (1, −1) both give k = 1); their pixel pairs are
    # disjoint, so their weights simply add on the same diagonal.
    upper: dict[int, np.ndarray] = {}
    for (dy, dx), w in zip(offsets, planes):
        wf = w.ravel().astype(np.float64)
        k = dy * W + dx  # flat offset of the neighbour
        degrees += wf
        degrees[k:] += wf[: n - k]
        if k in upper:
            upper[k] += wf
        else:
            upper[k] = wf
    diags, diag_offsets = [], []
    for k, wf in upper.items():
        # scipy's dia layout indexes data by column: the upper diagonal at +k holds
        # w(p, p+k) in column p+k, so shift the weights right by k.
        up = np.zeros(n)
        up[k:] = -wf[: n - k]
        lo = np.zeros(n)
        lo[: n - k] = -wf[: n - k]
        diags += [up, lo]
        diag_offsets += [k, -k]
    diags.append(degrees)
    diag_offsets.append(0)
    L = sp.dia_matrix((np.array(diags), np.array(diag_offsets)), shape=(n, n)).tocsr()
    L.eliminate_zeros()
    L.sort_indices()
    return L, degrees
