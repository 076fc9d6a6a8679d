"""Working resolution: segment large photos on a reduced grid, answer at full resolution.

A pixel-graph eigensolver costs time and memory linear in the pixel count with a large
constant (a cold solve 4.4–4.6 s and 1.5–1.7 KB per pixel at 1.1M px, README's Speed table), so a 12-megapixel
photo cannot be segmented interactively at full resolution. :class:`segapp.Session` therefore
builds the graph of an area-averaged copy with at most ``max_pixels`` pixels
(:data:`DEFAULT_MAX_PIXELS`), transfers the strokes to that grid (:func:`reduce_strokes`:
majority per coarse pixel, and every painted label keeps at least one, so thin strokes
survive), solves there, and brings the result back: labels by nearest neighbour, eigenvectors by bilinear interpolation, and every
painted pixel keeps the label the user painted. Region boundaries are then accurate to one
coarse pixel (``√(H·W / max_pixels)`` full-resolution pixels).
"""

from __future__ import annotations

import mmap
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..errors import InvalidInputError
from ..result import Deferred, Segmentation

#: Largest graph the session builds by default (≈ 2 s per solve on 2 cores; see README).
DEFAULT_MAX_PIXELS = 500_000


def working_shape(shape: tuple[int, int], max_pixels: int | None) -> tuple[int, int]:
    """The reduced ``(h, w)`` keeping the aspect ratio, or ``shape`` itself if small enough."""
    H, W = shape
    if max_pixels is None or H * W <= max_pixels:
        return H, W
    f = np.sqrt(max_pixels / (H * W))
    h, w = max(2, int(H * f)), max(2, int(W * f))
    # a very elongated image: the short side stops at 2, the long one takes what is left
    if h * w > max_pixels:
        if h == 2:
            w = max(2, max_pixels // 2)
        else:
            h = max(2, max_pixels // 2)
    return min(h, H), min(w, W)


def reduce_image(image: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """Anti-aliased copy of a float image at ``shape`` (:func:`antialiased`), float32 in [0, 1]."""
    if image.shape[:2] == tuple(shape):
        return image
    return np.clip(antialiased(image, shape), 0, 1).astype(np.float32, copy=False)


def antialiased(A: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """``A`` (H, W[, c]) reduced to ``shape`` (h ≤ H, w ≤ W) as scikit-image's
    ``resize(anti_aliasing=True)`` reduces it, float32: along each axis a Gaussian of
    σ = (f − 1)/2 (f = the reduction factor; truncated at 4σ, mirrored at the border), then
    linear interpolation at the coarse pixels' centres ``(i + ½)·f − ½`` (those
    :func:`bilinear` interpolates between). The two steps are one sparse weight matrix per
    axis (each coarse pixel a weighted mean of its neighbourhood: an area average with a
    smooth footprint), applied as two products: 0.10 s of CPU at 12 MP where scikit-image's
    filter over every fine pixel took 0.95 s. The result equals scikit-image's to float32
    rounding (its passes round in between; 3.6e-7 at most on the 12 MP benchmark photo).
    """
    A = np.asarray(A, dtype=np.float32)
    H, W = A.shape[:2]
    h, w = shape
    rest = A.shape[2:]
    c = int(np.prod(rest))
    rows = _reduction_weights(H, h) @ A.reshape(H, W * c)                   # (h, W·c)
    cols = _reduction_weights(W, w) @ rows.reshape(h, W, c).transpose(1, 0, 2).reshape(W, h * c)
    return np.ascontiguousarray(cols.reshape(w, h, c).transpose(1, 0, 2)).reshape(
        (h, w) + rest).astype(np.float32, copy=False)


def _linear_taps(n_in: int, n_out: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Linear interpolation of ``n_in`` pixels at the ``n_out`` centres ``(i + ½)·f − ½``
    (f = n_in / n_out, clipped to the line): the two neighbours ``i0``, ``i1`` and the
    weight ``t`` of ``i1`` (float64) — :func:`bilinear`'s and :func:`_reduction_weights`'."""
    x = np.clip((np.arange(n_out) + 0.5) * (n_in / n_out) - 0.5, 0, n_in - 1)
    i0 = np.floor(x).astype(np.intp)
    return i0, np.minimum(i0 + 1, n_in - 1), x - i0


def _reduction_weights(n_in: int, n_out: int) -> sp.csr_matrix:
    """(n_out × n_in) float32, rows summing to 1: linear interpolation at ``(i + ½)·f − ½``
    (f = n_in / n_out ≥ 1) of the Gaussian-filtered line (σ = (f − 1)/2, radius
    ``int(4σ + ½)`` taps, mirror boundary ``d c b | a b c d | c b a``: scipy.ndimage's)."""
    if not 1 <= n_out <= n_in:
        raise ValueError(f"cannot reduce {n_in} pixels to {n_out}")
    f = n_in / n_out
    i0, i1, t = _linear_taps(n_in, n_out)
    interp = sp.csr_matrix((np.concatenate([1 - t, t]),
                            (np.tile(np.arange(n_out), 2), np.concatenate([i0, i1]))),
                           shape=(n_out, n_in))
    sigma = max(0.0, (f - 1) / 2)
    if sigma > 1e-15 and n_in > 1:
        radius = int(4.0 * sigma + 0.5)
        k = np.arange(-radius, radius + 1)
        taps = np.exp(-0.5 / sigma**2 * k.astype(np.float64) ** 2)
        taps /= taps.sum()
        period = 2 * (n_in - 1)
        src = np.abs(np.arange(n_in)[:, None] + k[None, :]) % period
        src = np.where(src > n_in - 1, period - src, src)
        gauss = sp.csr_matrix((np.tile(taps, n_in), (np.repeat(np.arange(n_in), k.size),
                                                     src.ravel())), shape=(n_in, n_in))
        interp = interp @ gauss
    return interp.astype(np.float32)


def reduce_map(labels: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """Transfer a stroke label map (0 = unlabelled) to a coarser grid, keeping every label.

    See :func:`reduce_strokes` for the rule.
    """
    return reduce_strokes(labels, shape)[0]


def painted_pixels(labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.nonzero(labels)`` of a 2-D integer map, searched a 64-bit word at a time (8, 4 or
    2 pixels of 1, 2 or 4 bytes), then only the words that hold paint: 12 MP strokes in
    8-bit 37 → 8 ms (the app's int32 map: two pixels a word)."""
    per = 8 // labels.dtype.itemsize if labels.dtype.itemsize in (1, 2, 4) else 0
    if not per or labels.ndim != 2 or labels.dtype.kind not in "iub":
        return np.nonzero(labels)
    flat = np.ascontiguousarray(labels).reshape(-1)
    whole = flat.size - flat.size % per
    words = np.flatnonzero(flat[:whole].view(np.uint64))
    index = (words[:, None] * per + np.arange(per)).reshape(-1)
    index = np.concatenate([index[flat[index] != 0], whole + np.flatnonzero(flat[whole:])])
    return np.divmod(index, labels.shape[1])


def _ids_and_index(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(values, return_inverse=True)``; for label ids (small non-negative
    integers) by a count per id instead of a sort (12 MP of strokes, 177K painted pixels:
    17 → 0.4 ms)."""
    if values.dtype.kind in "iub" and values.size and 0 <= values.min() \
            and values.max() < 1 << 16:
        v = values.astype(np.intp, copy=False)
        present = np.flatnonzero(np.bincount(v))
        index = np.zeros(present[-1] + 1, np.intp)
        index[present] = np.arange(present.size)
        return present.astype(values.dtype), index[v]
    return np.unique(values, return_inverse=True)


def reduce_strokes(labels: np.ndarray, shape: tuple[int, int],
                   confidence: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray | None]:
    """Stroke labels (and their confidences) on a coarser grid; every painted label survives.

    Each coarse pixel covers a block of fine pixels (fine ``(y, x)`` → coarse
    ``(y·h // H, x·w // W)``). The rule:

    1. a coarse pixel touched by strokes takes the label with the **most** stroke pixels in
       its block (ties: the smaller label id), so a thin stroke still marks every coarse pixel
       it crosses and a block shared by two labels goes to the one painted more there;
    2. a label that won no coarse pixel that way (all its pixels lie in blocks another label
       dominates — e.g. a stroke thinner than the reduction factor running beside a wider
       one) takes the block where it has the most pixels, unless that block is the only one
       of its winner; then the coarse pixel nearest its pixels' centre that is free or whose
       winner has another one. So **every label painted at full resolution is painted at the
       working resolution**, at or next to where it was painted.

    Confidences (soft strokes) go with the labels: a coarse pixel gets the mean confidence of
    its label's fine pixels in its block (of all that label's pixels after a move in step 2).

    Raises
    ------
    InvalidInputError
        More labels than coarse pixels (only on absurdly small working grids).
    """
    H, W = labels.shape
    h, w = shape
    out = np.zeros(shape, labels.dtype)
    small_conf = None if confidence is None else np.zeros(shape, np.float64)
    ys, xs = painted_pixels(labels)
    if ys.size == 0:
        return out, small_conf
    ids, lab = _ids_and_index(labels[ys, xs])
    L = ids.size
    if L > h * w:
        raise InvalidInputError(f"{L} labels do not fit on a {w}×{h} working grid")
    key = cell_index(ys, xs, (H, W), shape) * L + lab
    pairs, counts = np.unique(key, return_counts=True)   # (coarse pixel, label) pairs
    pcell, plab = pairs // L, pairs % L
    # 1. majority per coarse pixel (pairs sorted by cell, then most pixels, then label id)
    order = np.lexsort((plab, -counts, pcell))
    first = order[np.r_[True, pcell[order][1:] != pcell[order][:-1]]]
    owner = np.full(h * w, -1, np.int64)
    owner[pcell[first]] = plab[first]
    n_cells = np.bincount(owner[owner >= 0], minlength=L)
    # 2. labels without a coarse pixel
    for j in np.flatnonzero(n_cells == 0):
        mine = np.flatnonzero(plab == j)
        target = -1
        for q in mine[np.argsort(-counts[mine], kind="stable")]:
            if n_cells[owner[pcell[q]]] >= 2:
                target = int(pcell[q])
                break
        if target < 0:
            free = (owner < 0) | (n_cells[np.maximum(owner, 0)] >= 2)
            cy, cx = np.divmod(np.flatnonzero(free), w)
            sel = lab == j
            my, mx = (ys[sel] * h / H).mean(), (xs[sel] * w / W).mean()
            target = int(np.flatnonzero(free)[np.argmin((cy + 0.5 - my) ** 2
                                                         + (cx + 0.5 - mx) ** 2)])
        if owner[target] >= 0:
            n_cells[owner[target]] -= 1
        owner[target] = j
        n_cells[j] += 1
    taken = owner >= 0
    out.ravel()[taken] = ids[owner[taken]]
    if confidence is not None:
        q = np.asarray(confidence, np.float64)[ys, xs]
        pair_mean = np.bincount(np.searchsorted(pairs, key), weights=q,
                                minlength=pairs.size) / counts
        label_mean = np.bincount(lab, weights=q, minlength=L) / np.bincount(lab, minlength=L)
        cells = np.flatnonzero(taken)
        key = cells * L + owner[cells]
        pos = np.minimum(np.searchsorted(pairs, key), pairs.size - 1)
        found = pairs[pos] == key          # the owner painted in this block itself
        small_conf.ravel()[cells] = np.where(found, pair_mean[pos], label_mean[owner[cells]])
    return out, small_conf


def bilinear(A: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """``A`` (h, w[, c]) resampled to ``shape`` by linear interpolation between pixel centres
    (as ``skimage.transform.resize(order=1)`` without anti-aliasing), float32.

    Separable: rows, then columns, each a gather of two neighbours and a weighted sum —
    NumPy operations that release the GIL (scipy.ndimage's zoom held it 4 s at 12 MP).
    """
    A = np.asarray(A, dtype=np.float32)
    H, W = shape
    y0, y1, wy = _linear_taps(A.shape[0], H)
    x0, x1, wx = _linear_taps(A.shape[1], W)
    wy, wx = wy.astype(np.float32), wx.astype(np.float32)
    extra = (1,) * (A.ndim - 2)
    rows = A[y0] * (1 - wy).reshape(-1, 1, *extra) + A[y1] * wy.reshape(-1, 1, *extra)
    return (rows[:, x0] * (1 - wx).reshape(1, -1, *extra)
            + rows[:, x1] * wx.reshape(1, -1, *extra)).astype(np.float32, copy=False)


def bilinear_at(A: np.ndarray, shape: tuple[int, int], idx: np.ndarray) -> np.ndarray:
    """:func:`bilinear`'s values at the flat (row-major) pixels ``idx`` of ``shape`` only:
    ``A`` (h, w, c) → (len(idx), c) float64. For a few pixels of a large grid (the known
    pixels around :mod:`segapp.inputs.refine`'s band) without the whole enlargement."""
    H, W = shape
    h, w = A.shape[:2]
    A = np.asarray(A).reshape(h, w, -1)
    y, x = np.divmod(np.asarray(idx, dtype=np.int64), W)
    fy = np.clip((y + 0.5) * (h / H) - 0.5, 0, h - 1)
    fx = np.clip((x + 0.5) * (w / W) - 0.5, 0, w - 1)
    y0, x0 = np.floor(fy).astype(np.intp), np.floor(fx).astype(np.intp)
    y1, x1 = np.minimum(y0 + 1, h - 1), np.minimum(x0 + 1, w - 1)
    wy, wx = (fy - y0)[:, None], (fx - x0)[:, None]
    top = A[y0, x0] * (1 - wx) + A[y0, x1] * wx
    bottom = A[y1, x0] * (1 - wx) + A[y1, x1] * wx
    return (top * (1 - wy) + bottom * wy).astype(np.float64, copy=False)


def cell_index(ys: np.ndarray, xs: np.ndarray, shape: tuple[int, int],
               small: tuple[int, int]) -> np.ndarray:
    """The working cell (flat index into ``small``) of each full-resolution pixel ``(ys, xs)``
    of an image of ``shape``: ``(y·h // H, x·w // W)``, the cells of :func:`nearest` and
    :func:`reduce_strokes`."""
    (H, W), (h, w) = shape, small
    return (ys * h // H) * w + xs * w // W


#: Below this many bytes :func:`small_pages` is a plain ``np.empty``.
SMALL_PAGES_BYTES = 1 << 24


def small_pages(shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    """``np.empty(shape, dtype)`` in memory the system gives in pages of 4 KiB as they are
    first written, never in transparent huge pages (2 MiB).

    NumPy asks for huge pages for every array of 4 MiB or more. Where the system has none
    free it assembles them when they are first written, which cost the first sharpening of
    a 12 MP photo (:mod:`segapp.inputs.refine`) 0.1 s on its labels (written whole) and
    0.2–0.3 s on its feature array (written on the band and on every fifth row: each write
    brings in the 2 MiB around it, so the whole 145 MB was zeroed): coffee's took 1.35–1.55 s
    against 1.16–1.24 s with NumPy's huge pages off (fresh processes, interleaved, idle).
    An anonymous map advised ``MADV_NOHUGEPAGE`` holds for any THP setting; where the advice
    is missing (not Linux) or the array is small, ``np.empty``. Unwritten values are unset
    (zeros here), as ``np.empty``'s; the map is released with the array."""
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if (nbytes < SMALL_PAGES_BYTES or not hasattr(mmap, "MADV_NOHUGEPAGE")
            or not hasattr(mmap, "MAP_ANONYMOUS")):
        return np.empty(shape, dtype)
    # private: a forked process gets its own copy on write, as of any NumPy array
    buf = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    buf.madvise(mmap.MADV_NOHUGEPAGE)
    return np.frombuffer(buf, dtype).reshape(shape)


def nearest(small: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """``small`` (h, w) brought to ``shape`` by nearest neighbour (fine ``(y, x)`` takes coarse
    ``(y·h // H, x·w // W)``, the cells of :func:`reduce_strokes`)."""
    H, W = shape
    h, w = small.shape[:2]
    yi = np.minimum((np.arange(H) * h) // H, h - 1)
    xi = np.minimum((np.arange(W) * w) // W, w - 1)
    # Whole-row copies (yi is sorted): 2–3× faster than a 2-D gather at 12 MP; assigned
    # coarse row by coarse row, which releases the GIL (np.repeat held it for the whole
    # copy: 12 MP of int64, 45–135 ms, the refinement's other threads waiting).
    rows = small[:, xi]
    out = small_pages((H, W) + small.shape[2:], small.dtype)
    counts = np.bincount(yi, minlength=h)
    ends = np.cumsum(counts)
    for r, (y0, y1) in enumerate(zip((ends - counts).tolist(), ends.tolist())):
        out[y0:y1] = rows[r]
    return out


def enlarge_result(result: Segmentation, scribbles: np.ndarray, *,
                   vectors: bool = True) -> Segmentation:
    """Bring a result computed on a coarse grid back to the scribbles' full resolution.

    ``vectors=False`` drops the eigenvectors (shape ``(H, W, 0)``) instead of interpolating
    them: a quick preview needs only the labels. The confidence map, if any, is interpolated
    bilinearly (nearest coarse pixel with ``vectors=False``) and is 1 on every painted pixel,
    as at the working resolution. The labels are made when first read too
    (:class:`~segapp.result.Deferred`; ``working_labels`` holds the working answer's).
    """
    H, W = scribbles.shape
    h, w = result.labels.shape
    if (h, w) == (H, W):
        return result
    yi = np.minimum((np.arange(H) * h) // H, h - 1)
    xi = np.minimum((np.arange(W) * w) // W, w - 1)
    small_labels = result.labels
    painted = scribbles > 0
    # the painted pixels' ids, kept apart from the caller's array (which may change before
    # the labels are made): a copy where it is small (the app's uint8), else only the ids
    marks = (scribbles.copy() if scribbles.itemsize == 1 else
             (np.flatnonzero(painted), scribbles[painted]))

    def enlarge_labels() -> np.ndarray:
        labels = nearest(small_labels, (H, W))   # then the painted pixels keep their label
        if isinstance(marks, tuple):
            labels.ravel()[marks[0]] = marks[1]
        else:
            np.copyto(labels, marks, where=painted, casting="unsafe")
        return labels

    small = result.eigenvectors
    if vectors:
        result.working_eigenvectors = small    # heat maps' colour ranges need no more
        V = lambda: bilinear(small, (H, W))    # noqa: E731 — when first read (4 s at 12 MP)
    else:
        V = np.zeros((H, W, 0), np.float32)
    def enlarge_confidence(conf: np.ndarray) -> np.ndarray:
        if vectors:
            conf = bilinear(conf, (H, W))
        else:
            conf = conf[yi[:, None], xi[None, :]]
        conf = np.clip(conf, 0.0, 1.0).astype(np.float32)
        conf[painted] = 1.0
        return conf

    result.map_confidence(enlarge_confidence)   # when first read
    result.working_labels = small_labels      # what segapp.inputs.refine starts from
    # made when first read: the app draws the working answer from working_labels first
    result.labels = Deferred(enlarge_labels, (H, W), small_labels.dtype)
    result.eigenvectors = V
    return result
